//! `LatencyTracker`: streaming latency percentiles over rotating windows, and a timeout
//! proposal from them.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::AnyLatencyTracker;
use guards::schema;
use guards::with_latency_tracker;

use crate::convert::{duration_ms, instant, ms, now_of, num, numbers, Options};
use crate::errors::{config_failure, range_error};

const CLASS: &str = "LatencyTracker";

/// Streaming P50/P95/P99/P99.9 (within 1/64) of recent latencies; lock-free.
#[napi]
pub struct LatencyTracker {
    t: AnyLatencyTracker,
}

pub(crate) fn quantile_arg(env: &Env, q: f64) -> Result<f64> {
    if !(q > 0.0 && q <= 1.0) {
        return Err(range_error(
            env,
            "q",
            &format!("`q` must be in 0 < q <= 1, not {q}"),
        ));
    }
    Ok(q)
}

#[napi]
impl LatencyTracker {
    /// A tracker with `options` (`window`, `timeoutQuantile`, `timeoutFactor`,
    /// `minSamples`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: LatencyTrackerOptions"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> Result<Self> {
        let c = Options::read(&env, CLASS, options)?.build(&env, &schema::LATENCY_TRACKER, "")?;
        let t = AnyLatencyTracker::new(c).map_err(|f| config_failure(&env, CLASS, "", &f))?;
        Ok(LatencyTracker { t })
    }

    /// Record a latency of `latencyMs` at `now`.
    #[napi(catch_unwind)]
    pub fn record(&self, env: Env, latency_ms: f64, now: Option<BigInt>) -> Result<()> {
        let l = duration_ms(&env, "latencyMs", latency_ms)?;
        let now = now_of(&env, now)?;
        with_latency_tracker!(&self.t, t => t.record(now, l));
        Ok(())
    }

    /// A call started at `startedAt` ended at `now` with `outcome`: recorded or skipped by
    /// the call contract (`'record'` / `'skip'`).
    #[napi(
        catch_unwind,
        ts_args_type = "startedAt: bigint, outcome: Outcome, now?: bigint"
    )]
    pub fn report(
        &self,
        env: Env,
        started_at: BigInt,
        outcome: String,
        now: Option<BigInt>,
    ) -> Result<&'static str> {
        let s = instant(&env, "startedAt", &started_at)?;
        let o = crate::outcome::parse(&env, "outcome", &outcome)?;
        let now = now_of(&env, now)?;
        Ok(with_latency_tracker!(&self.t, t => t.report(now, s, o)).name())
    }

    /// The `q` quantile in ms at `now` (`null`: no samples).
    #[napi(catch_unwind)]
    pub fn quantile_ms(&self, env: Env, q: f64, now: Option<BigInt>) -> Result<Option<f64>> {
        let q = quantile_arg(&env, q)?;
        let now = now_of(&env, now)?;
        Ok(with_latency_tracker!(&self.t, t => t.quantile(now, q)).map(ms))
    }

    /// Samples in the window at `now`.
    #[napi(catch_unwind)]
    pub fn count(&self, env: Env, now: Option<BigInt>) -> Result<f64> {
        let now = now_of(&env, now)?;
        Ok(num(with_latency_tracker!(&self.t, t => t.count(now))))
    }

    /// `{ count, p50Ms, p95Ms, p99Ms, p999Ms, maxMs }` at `now`.
    #[napi(
        catch_unwind,
        ts_return_type = "{ count: number; p50Ms: number; p95Ms: number; p99Ms: number; p999Ms: number; maxMs: number }"
    )]
    pub fn summary<'e>(&self, env: &'e Env, now: Option<BigInt>) -> Result<Object<'e>> {
        let now = now_of(env, now)?;
        let s = with_latency_tracker!(&self.t, t => t.summary(now));
        numbers(
            env,
            &[
                ("count", num(s.count)),
                ("p50Ms", ms(s.p50)),
                ("p95Ms", ms(s.p95)),
                ("p99Ms", ms(s.p99)),
                ("p999Ms", ms(s.p999)),
                ("maxMs", ms(s.max)),
            ],
        )
    }

    /// A timeout (ms) from the tracked latencies (`timeoutFactor` × the
    /// `timeoutQuantile`), `null` before `minSamples`.
    #[napi(catch_unwind)]
    pub fn propose_timeout_ms(&self, env: Env, now: Option<BigInt>) -> Result<Option<f64>> {
        let now = now_of(&env, now)?;
        Ok(with_latency_tracker!(&self.t, t => t.propose_timeout(now)).map(ms))
    }

    /// `{ recorded, saturated, stale }`.
    #[napi(
        catch_unwind,
        ts_return_type = "{ recorded: number; saturated: number; stale: number }"
    )]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = with_latency_tracker!(&self.t, t => t.stats());
        numbers(
            env,
            &[
                ("recorded", num(s.recorded)),
                ("saturated", num(s.saturated)),
                ("stale", num(s.stale)),
            ],
        )
    }
}
