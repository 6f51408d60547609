//! `Limiter`: permits against a (possibly adaptive) concurrency limit, by priority.

use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::InPlace;
use guards::names::{Limiter as CoreLimiter, LimiterConfig, Nanos};
use guards::permit::Granted;
use guards::schema;
use guards_core::limiter::LimiterRejected;
use guards_core::Priority;

use crate::args;
use crate::convert::{big, config_object, ms, num, Options};
use crate::errors::{self, config_failure, Details};
use crate::fast::{self, fast_fn};
use crate::gate::{GateLocal, GateRef};
use crate::outcome;
use crate::shared::{self, Placed};

type LimiterLocal = GateLocal<CoreLimiter>;

const CLASS: &str = "Limiter";

pub(crate) fn read_config(env: &Env, options: Option<Unknown<'_>>) -> Result<(LimiterConfig, u64)> {
    let mut o = Options::read(env, CLASS, options)?;
    let limit = crate::limit::take(env, &mut o)?;
    let mut c = o.build(env, &schema::LIMITER, "")?;
    if let Some(l) = limit {
        c.limit = l;
    }
    c.validate()
        .map_err(|e| config_failure(env, CLASS, "", &e.into()))?;
    Ok((c, 0))
}

/// `setMaxLimit(maxLimit)` on `g`: the ceiling it replaced.
pub(crate) fn set_max_limit(env: &Env, g: &CoreLimiter, v: &Unknown<'_>) -> Result<Option<f64>> {
    let c = args::whole(env, "maxLimit", v, u64::from(u32::MAX))?;
    g.set_max_limit(c).map(|o| o.map(num)).map_err(|_| {
        errors::range_error(
            env,
            "maxLimit",
            "`maxLimit` must be a whole number in 0..=4294967295",
        )
    })
}

pub(crate) fn rejection_error(env: &Env, r: &LimiterRejected, now: Nanos) -> Error {
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

// The fast path (see `fast`): `acquire(priority)` a token, or -1 when refused (-3: no
// permit slot; `_lastRejection()` tells more); `report(token, outcome)` the limit after
// it, or -1 if the token was reported before.
fast_fn!(
    fast_acquire,
    LimiterLocal,
    1,
    "Limiter acquire",
    |env, l, a| {
        let level = a.whole_io(env, 0, "priority", 7, &l.io)?;
        let p = Priority::new(level as u8).unwrap_or(Priority::CRITICAL_PLUS);
        Ok(l.acquire_token(p))
    }
);

fast_fn!(
    fast_report,
    LimiterLocal,
    2,
    "Limiter report",
    |env, l, a| {
        let token = a.f64_io(env, 0, "token", &l.io)?;
        let outcome = outcome::of_number(env, a.whole_io(env, 1, "outcome", 255, &l.io)?)?;
        if !l.report_token(token, outcome) {
            return Ok(-1.0);
        }
        Ok(num(l.core.g.limit()))
    }
);

/// A limiter's counters and gauges as an object (`rejectedByPriority` per priority).
pub(crate) fn stats_object<'e>(
    env: &'e Env,
    s: &guards_core::limiter::LimiterStats,
) -> Result<Object<'e>> {
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

/// A concurrency limiter: calls in flight stay under a limit that is fixed or moved by an
/// algorithm (AIMD, Vegas, Gradient2) from the calls' latencies and drops; priority
/// classes may be held to a share of it. Lock-free; shareable by worker threads.
#[napi]
pub struct Limiter {
    pub(crate) l: Rc<LimiterLocal>,
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
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        shared: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let mem = crate::convert::shared_arg(&env, shared)?;
        let given = !args::absent(&options);
        let Placed { g, mem } =
            shared::place::<InPlace<CoreLimiter>>(&env, CLASS, mem, given, || {
                read_config(&env, options)
            })?;
        Ok(Limiter {
            l: GateLocal::new(g, mem),
        })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a limiter.
    #[napi(catch_unwind, ts_args_type = "options?: LimiterOptions")]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        shared::size_for::<InPlace<CoreLimiter>>(&env, CLASS, || read_config(&env, options))
    }

    /// The fast path's functions (`{ acquire, report }`): for the JavaScript layer.
    #[napi(js_name = "_fast", catch_unwind, ts_return_type = "unknown")]
    pub fn fast<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        fast::functions_with_io(
            env,
            &self.l,
            &[("acquire", fast_acquire), ("report", fast_report)],
        )
    }

    /// A permit for a call of `priority` (0, the most important, ..7; default 0) at `now`,
    /// or a thrown `LimitExceededError`.
    #[napi(catch_unwind, ts_args_type = "priority?: number, now?: bigint")]
    pub fn try_acquire(
        &self,
        env: Env,
        priority: Option<Unknown<'_>>,
        now: Option<Unknown<'_>>,
    ) -> Result<LimiterPermitHandle> {
        let p = args::priority(&env, priority, 0)?;
        let now = args::now(&env, now)?;
        match self.l.core.g.try_acquire(now, p) {
            Ok(permit) => Ok(LimiterPermitHandle {
                start: permit.start(),
                in_flight: permit.in_flight(),
                threshold: permit.threshold(),
                granted: Granted::new(self.l.owner(), permit),
            }),
            Err(r) => Err(rejection_error(&env, &r, now)),
        }
    }

    /// The last refusal of this object's fast path, as the error to throw.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env) -> Result<()> {
        match self.l.last.get() {
            Some(r) => Err(rejection_error(&env, &r, guards::clock::now())),
            None => Ok(()),
        }
    }

    /// The current limit: the algorithm's, held under `maxLimit` when one is set.
    #[napi(getter, catch_unwind)]
    pub fn limit(&self) -> f64 {
        num(self.l.core.g.limit())
    }

    /// The ceiling set on the limit by `setMaxLimit` (or a `Fleet`), or `null` (none).
    #[napi(getter, catch_unwind)]
    pub fn max_limit(&self) -> Option<f64> {
        self.l.core.g.max_limit().map(num)
    }

    /// Cap the limit at `maxLimit` (`0..=2^32 − 1`; 0 refuses every call) at run time,
    /// whatever the algorithm says (it keeps adapting beneath); each priority's threshold
    /// is held under it by the same partition rule. Calls in flight are kept. Returns the
    /// ceiling it replaced, or `null`. A limiter attached to a `Fleet` has its ceiling set
    /// by the fleet.
    #[napi(catch_unwind, ts_args_type = "maxLimit: number")]
    pub fn set_max_limit(&self, env: Env, max_limit: Unknown<'_>) -> Result<Option<f64>> {
        set_max_limit(&env, &self.l.core.g, &max_limit)
    }

    /// Remove the ceiling: the algorithm's limit rules again. Returns the ceiling it
    /// removed, or `null`.
    #[napi(catch_unwind)]
    pub fn clear_max_limit(&self) -> Option<f64> {
        self.l.core.g.clear_max_limit().map(num)
    }

    /// Calls in flight.
    #[napi(getter, catch_unwind)]
    pub fn in_flight(&self) -> f64 {
        num(self.l.core.g.in_flight())
    }

    /// The in-flight count at which `priority` is refused.
    #[napi(catch_unwind, ts_args_type = "priority?: number")]
    pub fn threshold(&self, env: Env, priority: Option<Unknown<'_>>) -> Result<f64> {
        let p = args::priority(&env, priority, 0)?;
        Ok(num(self.l.core.g.threshold(p)))
    }

    /// The retry-after hint a refusal now would carry, in ms.
    #[napi(getter, catch_unwind)]
    pub fn retry_after_ms(&self) -> f64 {
        ms(self.l.core.g.retry_after())
    }

    /// The same hint, in exact nanoseconds.
    #[napi(getter, catch_unwind)]
    pub fn retry_after_ns(&self) -> BigInt {
        big(self.l.core.g.retry_after())
    }

    /// Counters and gauges (`rejectedByPriority` is per priority).
    #[napi(catch_unwind, ts_return_type = "LimiterStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        stats_object(env, &self.l.core.g.stats())
    }

    /// The config (camelCase, durations in ms; `limit` as an object).
    #[napi(getter, catch_unwind, ts_return_type = "Record<string, unknown>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let c = self.l.core.g.config();
        let mut o = config_object(env, &schema::LIMITER, c)?;
        o.set("limit", crate::limit::object(env, &c.limit)?)?;
        Ok(o)
    }
}

/// A permit of a `Limiter`: `report` how the call ended exactly once.
#[napi(js_name = "LimiterPermit")]
pub struct LimiterPermitHandle {
    start: Nanos,
    in_flight: u64,
    threshold: u64,
    granted: Granted<GateRef<CoreLimiter>>,
}

#[napi]
impl LimiterPermitHandle {
    /// Report how the call ended at `now`: a success is an RTT sample, a timeout or an
    /// overload answer a drop, anything else frees the slot without a sample. Returns
    /// the verdict (`'success'`, `'dropped'`, `'ignore'`).
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

    /// When it was granted.
    #[napi(getter, catch_unwind)]
    pub fn start(&self) -> BigInt {
        big(self.start)
    }

    /// Calls in flight once it was granted (itself included).
    #[napi(getter, catch_unwind)]
    pub fn in_flight(&self) -> f64 {
        num(self.in_flight)
    }

    /// The threshold its priority was admitted under.
    #[napi(getter, catch_unwind)]
    pub fn threshold(&self) -> f64 {
        num(self.threshold)
    }

    /// Whether it has been reported.
    #[napi(getter, catch_unwind)]
    pub fn done(&self) -> bool {
        self.granted.done()
    }
}
