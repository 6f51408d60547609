//! `LatencyTracker`: streaming latency percentiles over rotating windows, and a timeout
//! proposal from them.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::AnyLatencyTracker;
use guards::names::LatencyTrackerConfig;
use guards::schema;
use guards::with_latency_tracker;

use crate::args;
use crate::convert::{ms, num, numbers, Options};
use crate::errors::range_error;
use crate::shared::{self, Keep};

const CLASS: &str = "LatencyTracker";

pub(crate) fn read_config(
    env: &Env,
    options: Option<Unknown<'_>>,
) -> Result<(LatencyTrackerConfig, u64)> {
    let c = Options::read(env, CLASS, options)?.build(env, &schema::LATENCY_TRACKER, "")?;
    Ok((c, 0))
}

/// A quantile argument: a number in `0..=1`.
pub(crate) fn quantile_arg(env: &Env, v: &Unknown<'_>) -> Result<f64> {
    let q = args::number(env, "q", v)?;
    if !(0.0..=1.0).contains(&q) {
        return Err(range_error(
            env,
            "q",
            &format!("`q` must be a number in 0..=1, not {q}"),
        ));
    }
    Ok(q)
}

/// Streaming P50/P95/P99/P99.9 (within 1/64) of recent latencies; lock-free; shareable
/// by worker threads (`LatencyTracker.shared`).
#[napi]
pub struct LatencyTracker {
    t: AnyLatencyTracker,
    _keep: Keep,
}

#[napi]
impl LatencyTracker {
    /// A tracker with `options` (`window`, `timeoutQuantile`, `timeoutFactor`,
    /// `minSamples`). With `shared`: built in or attached to a `SharedArrayBuffer` (see
    /// `CircuitBreaker`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: LatencyTrackerOptions, shared?: Uint8Array"
    )]
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        shared: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let (t, _keep) = crate::region::place_or_attach::<
            guards_core::latency_tracker::LatencyTracker,
        >(&env, CLASS, options, shared, |o| read_config(&env, o))?;
        Ok(LatencyTracker { t, _keep })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a tracker.
    #[napi(catch_unwind, ts_args_type = "options?: LatencyTrackerOptions")]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        shared::size_for::<AnyLatencyTracker>(&env, CLASS, || read_config(&env, options))
    }

    /// Record a latency (ms, or exact ns as a bigint) at `now`.
    #[napi(catch_unwind, ts_args_type = "latency: number | bigint, now?: bigint")]
    pub fn record(&self, env: Env, latency: Unknown<'_>, now: Option<Unknown<'_>>) -> Result<()> {
        let l = args::duration(&env, "latency", &latency)?;
        let now = args::now(&env, now)?;
        with_latency_tracker!(&self.t, t => t.record(now, l));
        Ok(())
    }

    /// A call started at `startedAt` ended at `now` with `outcome`: recorded or skipped by
    /// the call contract (`'record'` / `'skip'`).
    #[napi(
        catch_unwind,
        ts_args_type = "startedAt: bigint, outcome: Outcome, now?: bigint",
        ts_return_type = "'record' | 'skip'"
    )]
    pub fn report(
        &self,
        env: Env,
        started_at: Unknown<'_>,
        outcome: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<&'static str> {
        let s = args::instant(&env, "startedAt", &started_at)?;
        let o = args::outcome(&env, "outcome", &outcome)?;
        let now = args::now(&env, now)?;
        Ok(with_latency_tracker!(&self.t, t => t.report(now, s, o)).name())
    }

    /// The `q` quantile (0..=1) in ms at `now` (`null`: no samples).
    #[napi(catch_unwind, ts_args_type = "q: number, now?: bigint")]
    pub fn quantile_ms(
        &self,
        env: Env,
        q: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<Option<f64>> {
        let q = quantile_arg(&env, &q)?;
        let now = args::now(&env, now)?;
        Ok(with_latency_tracker!(&self.t, t => t.quantile(now, q)).map(ms))
    }

    /// Samples in the window at `now`.
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn count(&self, env: Env, now: Option<Unknown<'_>>) -> Result<f64> {
        let now = args::now(&env, now)?;
        Ok(num(with_latency_tracker!(&self.t, t => t.count(now))))
    }

    /// `{ count, p50Ms, p95Ms, p99Ms, p999Ms, maxMs }` at `now`.
    #[napi(
        catch_unwind,
        ts_args_type = "now?: bigint",
        ts_return_type = "LatencySummary"
    )]
    pub fn summary<'e>(&self, env: &'e Env, now: Option<Unknown<'_>>) -> Result<Object<'e>> {
        let now = args::now(env, now)?;
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
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn propose_timeout_ms(&self, env: Env, now: Option<Unknown<'_>>) -> Result<Option<f64>> {
        let now = args::now(&env, now)?;
        Ok(with_latency_tracker!(&self.t, t => t.propose_timeout(now)).map(ms))
    }

    /// The share of the window's calls a timeout of `timeout` (ms, or exact ns as a
    /// bigint) would have cut off, at `now` (`null`: no samples).
    #[napi(catch_unwind, ts_args_type = "timeout: number | bigint, now?: bigint")]
    pub fn false_timeout_rate(
        &self,
        env: Env,
        timeout: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<Option<f64>> {
        let t = args::duration(&env, "timeout", &timeout)?;
        let now = args::now(&env, now)?;
        Ok(with_latency_tracker!(&self.t, tr => tr.false_timeout_rate(now, t)))
    }

    /// `{ recorded, saturated, stale }`.
    #[napi(catch_unwind, ts_return_type = "LatencyTrackerStats")]
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
