//! `Admission`: the server refuses at the door, by priority (503 + Retry-After).

use std::cell::Cell;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::InPlace;
use guards::names::{Admission as CoreAdmission, AdmissionConfig};
use guards::permit::{Granted, Owner, PermitSlots};
use guards::schema;
use guards_core::admission::{AdmissionPermit, AdmissionRejected};

use crate::convert::{big, config_object, ms, now_of, num, Options};
use crate::errors::{self, config_failure, Details};
use crate::outcome;
use crate::shared::{self, Kind};
use crate::token;

pub(crate) struct AdmissionCore {
    g: InPlace<CoreAdmission>,
    slots: PermitSlots<AdmissionPermit>,
    _mem: Option<Uint8Array>,
}

pub(crate) struct AdmissionRef(Arc<AdmissionCore>);

impl Owner for AdmissionRef {
    type Permit = AdmissionPermit;
    fn give_back(&self, p: AdmissionPermit) {
        self.0.g.on_ignore(p);
    }
}

const CLASS: &str = "Admission";

fn read_config(env: &Env, options: Option<Unknown<'_>>) -> Result<AdmissionConfig> {
    let mut o = Options::read(env, CLASS, options)?;
    let limit = crate::limit::take(env, &mut o)?;
    let mut c = o.build(env, &schema::ADMISSION, "")?;
    if let Some(l) = limit {
        c.limit = l;
    }
    c.validate()
        .map_err(|e| config_failure(env, CLASS, "", &e.into()))?;
    Ok(c)
}

pub(crate) fn rejection_error(
    env: &Env,
    r: &AdmissionRejected,
    now: guards::names::Nanos,
) -> Error {
    let after = ms(r.retry_after(now));
    errors::throw(
        env,
        "ADMISSION_REJECTED",
        &format!(
            "admission refused the request ({}: {} inside, threshold {} for priority {}); retry in {after} ms",
            r.reason.name(),
            r.in_flight,
            r.threshold,
            r.priority.level()
        ),
        Details {
            retry_at: Some(r.retry_at.0),
            reason: Some(r.reason.name()),
            numbers: vec![
                ("retryAfterMs", after),
                ("retryAfterSecs", r.retry_after_secs(now) as f64),
                ("priority", f64::from(r.priority.level())),
                ("inFlight", num(r.in_flight)),
                ("threshold", num(r.threshold)),
            ],
            ..Details::default()
        },
    )
}

/// Admission control for a server: each priority (0 most important .. 7) may fill the
/// door up to its own limit (`limits`), optionally under an adaptive total (`limit`);
/// a refused request should get `503` with `Retry-After`. Lock-free; shareable by worker
/// threads.
#[napi]
pub struct Admission {
    core: Arc<AdmissionCore>,
    last: Cell<Option<AdmissionRejected>>,
}

#[napi]
impl Admission {
    /// A door with `options`: `limits: [80, 64, ...]` (per priority, most important
    /// first), `limit` (a number or `{ algorithm, ... }`), `shares`, `window`,
    /// `minWindowSamples`, `minRetryAfter`, `maxRetryAfter`.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: AdmissionOptions, shared?: Uint8Array"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>, shared: Option<Uint8Array>) -> Result<Self> {
        let layout = InPlace::<CoreAdmission>::layout();
        let (g, mem) = match shared {
            None => {
                let c = read_config(&env, options)?;
                (
                    InPlace::new(c).map_err(|f| config_failure(&env, CLASS, "", &f))?,
                    None,
                )
            }
            Some(mem) => {
                if options.is_none() {
                    let (ptr, _) =
                        shared::attach(&env, CLASS, &mem, Kind::Admission, |_| Some(layout))?;
                    // SAFETY: `attach` checked the buffer holds a built door at `ptr`.
                    (unsafe { InPlace::attach(ptr.cast()) }, Some(mem))
                } else {
                    let c = read_config(&env, options)?;
                    let ptr = shared::claim(&env, CLASS, &mem, layout)?;
                    // SAFETY: `claim` gave exclusive use of the aligned bytes at `ptr`.
                    let g = unsafe { InPlace::build_at(ptr.cast(), c) }
                        .map_err(|f| config_failure(&env, CLASS, "", &f))?;
                    shared::publish(&mem, Kind::Admission, 1);
                    (g, Some(mem))
                }
            }
        };
        Ok(Admission {
            core: Arc::new(AdmissionCore {
                g,
                slots: token::slots(),
                _mem: mem,
            }),
            last: Cell::new(None),
        })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a door.
    #[napi(catch_unwind)]
    pub fn shared_size() -> u32 {
        u32::try_from(shared::bytes_for(InPlace::<CoreAdmission>::layout())).unwrap_or(u32::MAX)
    }

    /// A permit for a request of `priority` (default 1) at `now`, or a thrown
    /// `AdmissionRejectedError` (with `retryAfterSecs` for the header).
    #[napi(catch_unwind)]
    pub fn try_acquire(
        &self,
        env: Env,
        priority: Option<u32>,
        now: Option<BigInt>,
    ) -> Result<AdmissionPermitHandle> {
        let p = crate::convert::priority(&env, priority, 1)?;
        let now = now_of(&env, now)?;
        match self.core.g.try_acquire(now, p) {
            Ok(permit) => Ok(AdmissionPermitHandle {
                start: permit.start(),
                granted: Granted::new(AdmissionRef(Arc::clone(&self.core)), permit),
            }),
            Err(r) => Err(rejection_error(&env, &r, now)),
        }
    }

    /// Fast path: a token, or -1 when refused; then `_retryAfterSecs()` for the header.
    #[napi(js_name = "_acquire")]
    pub fn fast_acquire(&self, env: Env, priority: u32) -> Result<f64> {
        let p = crate::convert::priority(&env, Some(priority), 1)?;
        let now = guards::clock::now();
        Ok(match self.core.g.try_acquire(now, p) {
            Ok(permit) => match self.core.slots.insert(permit) {
                Ok(t) => token::pack(t),
                Err((permit, _)) => {
                    self.core.g.on_ignore(permit);
                    -3.0
                }
            },
            Err(r) => {
                self.last.set(Some(r));
                -1.0
            }
        })
    }

    /// Fast path: the whole seconds to put in `Retry-After` for the last refusal.
    #[napi(js_name = "_retryAfterSecs")]
    pub fn fast_retry_after_secs(&self) -> f64 {
        self.last
            .get()
            .map_or(1.0, |r| r.retry_after_secs(guards::clock::now()) as f64)
    }

    /// Fast path: report `token` with outcome number `outcome`; false if reported before.
    #[napi(js_name = "_report")]
    pub fn fast_report(&self, env: Env, token: f64, outcome: u32) -> Result<bool> {
        let outcome = outcome::of_number(&env, outcome)?;
        let Some(t) = token::unpack(self.core.slots.guard_id(), token) else {
            return Ok(false);
        };
        let Ok(p) = self.core.slots.take(t) else {
            return Ok(false);
        };
        self.core.g.report(p, outcome, guards::clock::now());
        Ok(true)
    }

    /// The last refusal of this thread's fast path, thrown as its error.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env) -> Result<()> {
        match self.last.get() {
            Some(r) => Err(rejection_error(&env, &r, guards::clock::now())),
            None => Ok(()),
        }
    }

    /// Requests inside.
    #[napi(getter)]
    pub fn in_flight(&self) -> f64 {
        num(self.core.g.in_flight())
    }

    /// The adaptive limit (`null` without one).
    #[napi(getter)]
    pub fn limit(&self) -> Option<f64> {
        let l = self.core.g.limit();
        (l != u64::MAX).then(|| num(l))
    }

    /// The count inside at which `priority` is refused.
    #[napi(catch_unwind)]
    pub fn threshold(&self, env: Env, priority: Option<u32>) -> Result<f64> {
        let p = crate::convert::priority(&env, priority, 1)?;
        Ok(num(self.core.g.threshold(p)))
    }

    /// Counters and gauges.
    #[napi(catch_unwind, ts_return_type = "AdmissionStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.core.g.stats();
        let mut o = crate::convert::numbers(
            env,
            &[
                ("admitted", num(s.admitted)),
                ("refusedLimitReached", num(s.refused_limit_reached)),
                ("refusedOverloaded", num(s.refused_overloaded)),
                ("succeeded", num(s.succeeded)),
                ("dropped", num(s.dropped)),
                ("ignored", num(s.ignored)),
                ("inFlight", num(s.in_flight)),
            ],
        )?;
        if s.limit != u64::MAX {
            o.set("limit", num(s.limit))?;
        }
        o.set(
            "refusedByPriority",
            s.refused_by_priority
                .iter()
                .map(|n| num(*n))
                .collect::<Vec<f64>>(),
        )?;
        Ok(o)
    }

    /// The config (camelCase; `limit` as an object).
    #[napi(getter, catch_unwind, ts_return_type = "Record<string, unknown>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let c = self.core.g.config();
        let mut o = config_object(env, &schema::ADMISSION, c)?;
        o.set("limit", crate::limit::object(env, &c.limit)?)?;
        Ok(o)
    }
}

/// A request let in by an `Admission`: `report` how it ended exactly once.
#[napi(js_name = "AdmissionPermit")]
pub struct AdmissionPermitHandle {
    start: guards::names::Nanos,
    granted: Granted<AdmissionRef>,
}

#[napi]
impl AdmissionPermitHandle {
    /// Report how the request ended at `now` (a 503/429 the app answered is an overload
    /// signal: `'throttled'`/`'overloaded'`).
    #[napi(catch_unwind, ts_args_type = "outcome: Outcome, now?: bigint")]
    pub fn report(&self, env: Env, outcome: String, now: Option<BigInt>) -> Result<&'static str> {
        let outcome = outcome::parse(&env, "outcome", &outcome)?;
        let now = now_of(&env, now)?;
        let p = self.granted.take().ok_or_else(|| {
            errors::permit(&env, guards::error::GuardsResult::PermitAlreadyReported)
        })?;
        Ok(self.granted.owner().0.g.report(p, outcome, now).name())
    }

    /// When it was let in.
    #[napi(getter)]
    pub fn start(&self) -> BigInt {
        big(self.start)
    }

    /// Whether it has been reported.
    #[napi(getter)]
    pub fn done(&self) -> bool {
        self.granted.done()
    }
}
