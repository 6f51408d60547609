//! `Limiter`: permits against a (possibly adaptive) concurrency limit, by priority.

use std::cell::Cell;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::InPlace;
use guards::names::{Limiter as CoreLimiter, LimiterConfig};
use guards::permit::{Granted, Owner, PermitSlots};
use guards::schema;
use guards_core::limiter::{LimiterPermit, LimiterRejected};

use crate::convert::{big, config_object, ms, now_of, num, Options};
use crate::errors::{self, config_failure, Details};
use crate::outcome;
use crate::shared::{self, Kind};
use crate::token;

pub(crate) struct LimiterCore {
    g: InPlace<CoreLimiter>,
    slots: PermitSlots<LimiterPermit>,
    _mem: Option<Uint8Array>,
}

pub(crate) struct LimiterRef(Arc<LimiterCore>);

impl Owner for LimiterRef {
    type Permit = LimiterPermit;
    fn give_back(&self, p: LimiterPermit) {
        self.0.g.on_ignore(p);
    }
}

const CLASS: &str = "Limiter";

fn read_config(env: &Env, options: Option<Unknown<'_>>) -> Result<LimiterConfig> {
    let mut o = Options::read(env, CLASS, options)?;
    let limit = crate::limit::take(env, &mut o)?;
    let mut c = o.build(env, &schema::LIMITER, "")?;
    if let Some(l) = limit {
        c.limit = l;
    }
    c.validate()
        .map_err(|e| config_failure(env, CLASS, "", &e.into()))?;
    Ok(c)
}

pub(crate) fn rejection_error(env: &Env, r: &LimiterRejected, now: guards::names::Nanos) -> Error {
    let after = ms(r.retry_after(now));
    errors::throw(
        env,
        "LIMIT_EXCEEDED",
        &format!(
            "the limiter refused the call ({}: {} in flight, threshold {} for priority {}); retry in {after} ms",
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
                ("priority", f64::from(r.priority.level())),
                ("inFlight", num(r.in_flight)),
                ("threshold", num(r.threshold)),
            ],
            ..Details::default()
        },
    )
}

/// A concurrency limiter: calls in flight stay under a limit that is fixed or moved by an
/// algorithm (AIMD, Vegas, Gradient2) from the calls' latencies and drops; priority
/// classes may be held to a share of it. Lock-free; shareable by worker threads.
#[napi]
pub struct Limiter {
    core: Arc<LimiterCore>,
    last: Cell<Option<LimiterRejected>>,
}

#[napi]
impl Limiter {
    /// A limiter with `options`: `limit` (a number, or `{ algorithm: 'aimd' | 'vegas' |
    /// 'gradient', ... }`), `window`, `minWindowSamples`, `partitions: [{ share,
    /// maxInFlight }, ...]` (priority 0 first), `minRetryAfter`, `maxRetryAfter`.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: LimiterOptions, shared?: Uint8Array"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>, shared: Option<Uint8Array>) -> Result<Self> {
        let layout = InPlace::<CoreLimiter>::layout();
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
                        shared::attach(&env, CLASS, &mem, Kind::Limiter, |_| Some(layout))?;
                    // SAFETY: `attach` checked the buffer holds a built limiter at `ptr`.
                    (unsafe { InPlace::attach(ptr.cast()) }, Some(mem))
                } else {
                    let c = read_config(&env, options)?;
                    let ptr = shared::claim(&env, CLASS, &mem, layout)?;
                    // SAFETY: `claim` gave exclusive use of the aligned bytes at `ptr`.
                    let g = unsafe { InPlace::build_at(ptr.cast(), c) }
                        .map_err(|f| config_failure(&env, CLASS, "", &f))?;
                    shared::publish(&mem, Kind::Limiter, 1);
                    (g, Some(mem))
                }
            }
        };
        Ok(Limiter {
            core: Arc::new(LimiterCore {
                g,
                slots: token::slots(),
                _mem: mem,
            }),
            last: Cell::new(None),
        })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a limiter.
    #[napi(catch_unwind)]
    pub fn shared_size() -> u32 {
        u32::try_from(shared::bytes_for(InPlace::<CoreLimiter>::layout())).unwrap_or(u32::MAX)
    }

    /// A permit for a call of `priority` (0, the most important, ..7; default 0) at `now`,
    /// or a thrown `LimitExceededError`.
    #[napi(catch_unwind)]
    pub fn try_acquire(
        &self,
        env: Env,
        priority: Option<u32>,
        now: Option<BigInt>,
    ) -> Result<LimiterPermitHandle> {
        let p = crate::convert::priority(&env, priority, 0)?;
        let now = now_of(&env, now)?;
        match self.core.g.try_acquire(now, p) {
            Ok(permit) => Ok(LimiterPermitHandle {
                start: permit.start(),
                granted: Granted::new(LimiterRef(Arc::clone(&self.core)), permit),
            }),
            Err(r) => Err(rejection_error(&env, &r, now)),
        }
    }

    /// Fast path: a token, or -1 when refused (`_lastRejection()` tells more).
    #[napi(js_name = "_acquire")]
    pub fn fast_acquire(&self, env: Env, priority: u32) -> Result<f64> {
        let p = crate::convert::priority(&env, Some(priority), 0)?;
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

    /// Fast path: report `token` with outcome number `outcome`; returns the limit after it
    /// (-1 if the token was reported before).
    #[napi(js_name = "_report")]
    pub fn fast_report(&self, env: Env, token: f64, outcome: u32) -> Result<f64> {
        let outcome = outcome::of_number(&env, outcome)?;
        let Some(t) = token::unpack(self.core.slots.guard_id(), token) else {
            return Ok(-1.0);
        };
        let Ok(p) = self.core.slots.take(t) else {
            return Ok(-1.0);
        };
        self.core.g.report(p, outcome, guards::clock::now());
        Ok(num(self.core.g.limit()))
    }

    /// The last refusal of this thread's fast path, as the error to throw.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env) -> Result<()> {
        match self.last.get() {
            Some(r) => Err(rejection_error(&env, &r, guards::clock::now())),
            None => Ok(()),
        }
    }

    /// The current limit.
    #[napi(getter)]
    pub fn limit(&self) -> f64 {
        num(self.core.g.limit())
    }

    /// Calls in flight.
    #[napi(getter)]
    pub fn in_flight(&self) -> f64 {
        num(self.core.g.in_flight())
    }

    /// The in-flight count at which `priority` is refused.
    #[napi(catch_unwind)]
    pub fn threshold(&self, env: Env, priority: Option<u32>) -> Result<f64> {
        let p = crate::convert::priority(&env, priority, 0)?;
        Ok(num(self.core.g.threshold(p)))
    }

    /// The retry-after hint a refusal now would carry, in ms.
    #[napi(getter)]
    pub fn retry_after_ms(&self) -> f64 {
        ms(self.core.g.retry_after())
    }

    /// Counters and gauges (`rejectedByPriority` is per priority).
    #[napi(catch_unwind, ts_return_type = "LimiterStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.core.g.stats();
        let mut o = crate::convert::numbers(
            env,
            &[
                ("acquired", num(s.acquired)),
                ("rejected", num(s.rejected())),
                ("rejectedLimitReached", num(s.rejected_limit_reached)),
                ("rejectedPartitionCap", num(s.rejected_partition_cap)),
                ("rejectedReserved", num(s.rejected_reserved)),
                ("succeeded", num(s.succeeded)),
                ("dropped", num(s.dropped)),
                ("ignored", num(s.ignored)),
                ("windows", num(s.windows)),
                ("limitChanges", num(s.limit_changes)),
                ("foldsSkipped", num(s.folds_skipped)),
                ("limit", num(s.limit)),
                ("inFlight", num(s.in_flight)),
            ],
        )?;
        o.set(
            "rejectedByPriority",
            s.rejected_by_priority
                .iter()
                .map(|n| num(*n))
                .collect::<Vec<f64>>(),
        )?;
        Ok(o)
    }

    /// The config (camelCase, durations in ms; `limit` as an object).
    #[napi(getter, catch_unwind, ts_return_type = "Record<string, unknown>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let c = self.core.g.config();
        let mut o = config_object(env, &schema::LIMITER, c)?;
        o.set("limit", crate::limit::object(env, &c.limit)?)?;
        Ok(o)
    }
}

/// A permit of a `Limiter`: `report` how the call ended exactly once.
#[napi(js_name = "LimiterPermit")]
pub struct LimiterPermitHandle {
    start: guards::names::Nanos,
    granted: Granted<LimiterRef>,
}

#[napi]
impl LimiterPermitHandle {
    /// Report how the call ended at `now`: a success is an RTT sample, a timeout or an
    /// overload answer a drop, anything else frees the slot without a sample.
    #[napi(catch_unwind, ts_args_type = "outcome: Outcome, now?: bigint")]
    pub fn report(&self, env: Env, outcome: String, now: Option<BigInt>) -> Result<&'static str> {
        let outcome = outcome::parse(&env, "outcome", &outcome)?;
        let now = now_of(&env, now)?;
        let p = self.granted.take().ok_or_else(|| {
            errors::permit(&env, guards::error::GuardsResult::PermitAlreadyReported)
        })?;
        Ok(self.granted.owner().0.g.report(p, outcome, now).name())
    }

    /// When it was granted.
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
