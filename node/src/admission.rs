//! `Admission`: the server refuses at the door, by priority (503 + Retry-After).

use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::InPlace;
use guards::names::{Admission as CoreAdmission, AdmissionConfig, Nanos};
use guards::permit::Granted;
use guards::schema;
use guards_core::admission::AdmissionRejected;
use guards_core::Priority;

use crate::args;
use crate::convert::{big, config_object, ms, num, Options};
use crate::errors::{self, config_failure, Details};
use crate::fast::{self, fast_fn};
use crate::gate::{GateLocal, GateRef};
use crate::outcome;
use crate::shared::{self, Placed};

type AdmissionLocal = GateLocal<CoreAdmission>;

const CLASS: &str = "Admission";

pub(crate) fn read_config(
    env: &Env,
    options: Option<Unknown<'_>>,
) -> Result<(AdmissionConfig, u64)> {
    let mut o = Options::read(env, CLASS, options)?;
    let limit = crate::limit::take(env, &mut o)?;
    let mut c = o.build(env, &schema::ADMISSION, "")?;
    if let Some(l) = limit {
        c.limit = l;
    }
    c.validate()
        .map_err(|e| config_failure(env, CLASS, "", &e.into()))?;
    Ok((c, 0))
}

pub(crate) fn rejection_error(env: &Env, r: &AdmissionRejected, now: Nanos) -> Error {
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

/// The limit as JavaScript sees it: a number, or -1 without an adaptive limit.
pub(crate) fn limit_number(g: &CoreAdmission) -> f64 {
    match g.limit() {
        u64::MAX => -1.0,
        l => num(l),
    }
}

/// A door's counters as an object (`limit` only with an adaptive limit).
pub(crate) fn stats_object<'e>(
    env: &'e Env,
    s: &guards_core::admission::AdmissionStats,
) -> Result<Object<'e>> {
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

// The fast path (see `fast`): `acquire(priority)` a token, or -1 when refused (-3: no
// permit slot); `retryAfterSecs()` the whole seconds for the last refusal's Retry-After;
// `report(token, outcome)` the limit after it (-2 without an adaptive limit), or -1 if the
// token was reported before.
fast_fn!(
    fast_acquire,
    AdmissionLocal,
    1,
    "Admission acquire",
    |env, l, a| {
        let level = a.whole(env, 0, "priority", 7)?;
        let p = Priority::new(level as u8).unwrap_or(Priority::CRITICAL);
        Ok(l.acquire_token(p))
    }
);

fast_fn!(
    fast_retry_after_secs,
    AdmissionLocal,
    0,
    "Admission retryAfterSecs",
    |_env, l, _a| {
        Ok(l.last
            .get()
            .map_or(1.0, |r| r.retry_after_secs(guards::clock::now()) as f64))
    }
);

fast_fn!(
    fast_report,
    AdmissionLocal,
    2,
    "Admission report",
    |env, l, a| {
        let token = a.f64(env, 0, "token")?;
        let outcome = outcome::of_number(env, a.whole(env, 1, "outcome", 255)?)?;
        if !l.report_token(token, outcome) {
            return Ok(-1.0);
        }
        Ok(match limit_number(&l.core.g) {
            x if x < 0.0 => -2.0,
            x => x,
        })
    }
);

/// Admission control for a server: each priority (0 most important .. 7) may fill the
/// door up to its own limit (`limits`), optionally under an adaptive total (`limit`);
/// a refused request should get `503` with `Retry-After`. Lock-free; shareable by worker
/// threads.
#[napi]
pub struct Admission {
    l: Rc<AdmissionLocal>,
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
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        shared: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let mem = crate::convert::shared_arg(&env, shared)?;
        let given = !args::absent(&options);
        let Placed { g, mem } =
            shared::place::<InPlace<CoreAdmission>>(&env, CLASS, mem, given, || {
                read_config(&env, options)
            })?;
        Ok(Admission {
            l: GateLocal::new(g, mem),
        })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a door.
    #[napi(catch_unwind, ts_args_type = "options?: AdmissionOptions")]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        shared::size_for::<InPlace<CoreAdmission>>(&env, CLASS, || read_config(&env, options))
    }

    /// The fast path's functions (`{ acquire, report, retryAfterSecs }`): for the
    /// JavaScript layer's middleware.
    #[napi(js_name = "_fast", catch_unwind, ts_return_type = "unknown")]
    pub fn fast<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        fast::functions(
            env,
            &self.l,
            &[
                ("acquire", fast_acquire),
                ("report", fast_report),
                ("retryAfterSecs", fast_retry_after_secs),
            ],
        )
    }

    /// A permit for a request of `priority` (default 1) at `now`, or a thrown
    /// `AdmissionRejectedError` (with `retryAfterSecs` for the header).
    #[napi(catch_unwind, ts_args_type = "priority?: number, now?: bigint")]
    pub fn try_acquire(
        &self,
        env: Env,
        priority: Option<Unknown<'_>>,
        now: Option<Unknown<'_>>,
    ) -> Result<AdmissionPermitHandle> {
        let p = args::priority(&env, priority, 1)?;
        let now = args::now(&env, now)?;
        match self.l.core.g.try_acquire(now, p) {
            Ok(permit) => Ok(AdmissionPermitHandle {
                start: permit.start(),
                in_flight: permit.in_flight(),
                granted: Granted::new(self.l.owner(), permit),
            }),
            Err(r) => Err(rejection_error(&env, &r, now)),
        }
    }

    /// The last refusal of this object's fast path, thrown as its error.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env) -> Result<()> {
        match self.l.last.get() {
            Some(r) => Err(rejection_error(&env, &r, guards::clock::now())),
            None => Ok(()),
        }
    }

    /// Requests inside.
    #[napi(getter, catch_unwind)]
    pub fn in_flight(&self) -> f64 {
        num(self.l.core.g.in_flight())
    }

    /// The adaptive limit (`null` without one).
    #[napi(getter, catch_unwind)]
    pub fn limit(&self) -> Option<f64> {
        let l = limit_number(&self.l.core.g);
        (l >= 0.0).then_some(l)
    }

    /// The count inside at which `priority` is refused.
    #[napi(catch_unwind, ts_args_type = "priority?: number")]
    pub fn threshold(&self, env: Env, priority: Option<Unknown<'_>>) -> Result<f64> {
        let p = args::priority(&env, priority, 1)?;
        Ok(num(self.l.core.g.threshold(p)))
    }

    /// Counters and gauges.
    #[napi(catch_unwind, ts_return_type = "AdmissionStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        stats_object(env, &self.l.core.g.stats())
    }

    /// The config (camelCase; `limit` as an object).
    #[napi(getter, catch_unwind, ts_return_type = "Record<string, unknown>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let c = self.l.core.g.config();
        let mut o = config_object(env, &schema::ADMISSION, c)?;
        o.set("limit", crate::limit::object(env, &c.limit)?)?;
        Ok(o)
    }
}

/// A request let in by an `Admission`: `report` how it ended exactly once.
#[napi(js_name = "AdmissionPermit")]
pub struct AdmissionPermitHandle {
    start: Nanos,
    in_flight: u64,
    granted: Granted<GateRef<CoreAdmission>>,
}

#[napi]
impl AdmissionPermitHandle {
    /// Report how the request ended at `now` (a 503/429 the app answered is an overload
    /// signal: `'throttled'`/`'overloaded'`). Returns the verdict (`'success'`,
    /// `'dropped'`, `'ignore'`).
    #[napi(catch_unwind, ts_args_type = "outcome: Outcome, now?: bigint")]
    pub fn report(
        &self,
        env: Env,
        outcome: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<&'static str> {
        let outcome = args::outcome(&env, "outcome", &outcome)?;
        let now = args::now(&env, now)?;
        let p = self.granted.take().ok_or_else(|| {
            errors::permit(&env, guards::error::GuardsResult::PermitAlreadyReported)
        })?;
        Ok(self.granted.owner().0.g.report(p, outcome, now).name())
    }

    /// When it was let in.
    #[napi(getter, catch_unwind)]
    pub fn start(&self) -> BigInt {
        big(self.start)
    }

    /// Requests inside once it was let in (itself included).
    #[napi(getter, catch_unwind)]
    pub fn in_flight(&self) -> f64 {
        num(self.in_flight)
    }

    /// Whether it has been reported.
    #[napi(getter, catch_unwind)]
    pub fn done(&self) -> bool {
        self.granted.done()
    }
}
