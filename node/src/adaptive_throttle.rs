//! `AdaptiveThrottle`: client-side rejection with the probability of the Google SRE book's
//! adaptive throttling.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::AnyAdaptiveThrottle;
use guards::names::AdaptiveThrottleConfig;
use guards::schema;
use guards::with_adaptive_throttle;

use crate::args;
use crate::convert::{num, numbers, Options};
use crate::shared::{self, Keep};

const CLASS: &str = "AdaptiveThrottle";

pub(crate) fn read_config(
    env: &Env,
    options: Option<Unknown<'_>>,
) -> Result<(AdaptiveThrottleConfig, u64)> {
    let c = Options::read(env, CLASS, options)?.build(env, &schema::ADAPTIVE_THROTTLE, "")?;
    Ok((c, 0))
}

/// Client-side throttling: rejects locally with probability
/// `max(0, (requests − k·accepts) / (requests + 1))` once the backend stops accepting.
/// Lock-free; shareable by worker threads (`AdaptiveThrottle.shared`).
#[napi]
pub struct AdaptiveThrottle {
    t: AnyAdaptiveThrottle,
    _keep: Keep,
}

#[napi]
impl AdaptiveThrottle {
    /// A throttle with `options` (`window`, `k`, `aggression`, `maxRejectProbability`,
    /// `minRequests`, `countRejected`, `seed`). With `shared`: built in or attached to a
    /// `SharedArrayBuffer` (see `CircuitBreaker`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: AdaptiveThrottleOptions, shared?: Uint8Array"
    )]
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        shared: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let (t, _keep) = crate::region::place_or_attach::<
            guards_core::adaptive_throttle::AdaptiveThrottle,
        >(&env, CLASS, options, shared, |o| read_config(&env, o))?;
        Ok(AdaptiveThrottle { t, _keep })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a throttle.
    #[napi(catch_unwind, ts_args_type = "options?: AdaptiveThrottleOptions")]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        shared::size_for::<AnyAdaptiveThrottle>(&env, CLASS, || read_config(&env, options))
    }

    /// Whether to refuse a request locally at `now` (a draw; counted as a request unless
    /// `countRejected` is off).
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn should_reject(&self, env: Env, now: Option<Unknown<'_>>) -> Result<bool> {
        let now = args::now(&env, now)?;
        Ok(with_adaptive_throttle!(&self.t, t => t.should_reject(now)))
    }

    /// A request that went out ended with `outcome` at `now` (accepted by the backend or
    /// not, by the call contract).
    #[napi(
        catch_unwind,
        ts_args_type = "outcome: Outcome, now?: bigint",
        ts_return_type = "'accepted' | 'rejected_by_backend' | 'nothing'"
    )]
    pub fn report(
        &self,
        env: Env,
        outcome: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<&'static str> {
        let o = args::outcome(&env, "outcome", &outcome)?;
        let now = args::now(&env, now)?;
        Ok(with_adaptive_throttle!(&self.t, t => t.report(now, o)).name())
    }

    /// The rejection probability at `now`.
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn reject_probability(&self, env: Env, now: Option<Unknown<'_>>) -> Result<f64> {
        let now = args::now(&env, now)?;
        Ok(with_adaptive_throttle!(&self.t, t => t.reject_probability(now)))
    }

    /// `{ requests, accepts }` in the window at `now`.
    #[napi(
        catch_unwind,
        ts_args_type = "now?: bigint",
        ts_return_type = "ThrottleWindow"
    )]
    pub fn window<'e>(&self, env: &'e Env, now: Option<Unknown<'_>>) -> Result<Object<'e>> {
        let now = args::now(env, now)?;
        let w = with_adaptive_throttle!(&self.t, t => t.window(now));
        numbers(
            env,
            &[("requests", num(w.requests)), ("accepts", num(w.accepts))],
        )
    }

    /// Counters, and the rejection probability now.
    #[napi(catch_unwind, ts_return_type = "AdaptiveThrottleStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = with_adaptive_throttle!(&self.t, t => t.stats());
        let p = with_adaptive_throttle!(&self.t, t => t.reject_probability(guards::clock::now()));
        numbers(
            env,
            &[
                ("admitted", num(s.admitted)),
                ("throttled", num(s.throttled)),
                ("accepted", num(s.accepted)),
                ("rejectedByBackend", num(s.rejected_by_backend)),
                ("stale", num(s.stale)),
                ("rejectProbability", p),
            ],
        )
    }
}
