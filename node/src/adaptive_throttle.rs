//! `AdaptiveThrottle`: client-side rejection with the probability of the Google SRE book's
//! adaptive throttling.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::AnyAdaptiveThrottle;
use guards::schema;
use guards::with_adaptive_throttle;

use crate::convert::{now_of, num, numbers, Options};
use crate::errors::config_failure;

const CLASS: &str = "AdaptiveThrottle";

/// Client-side throttling: rejects locally with probability
/// `max(0, (requests − k·accepts) / (requests + 1))` once the backend stops accepting.
#[napi]
pub struct AdaptiveThrottle {
    t: AnyAdaptiveThrottle,
}

#[napi]
impl AdaptiveThrottle {
    /// A throttle with `options` (`window`, `k`, `aggression`, `maxRejectProbability`,
    /// `minRequests`, `countRejected`, `seed`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: AdaptiveThrottleOptions"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> Result<Self> {
        let c = Options::read(&env, CLASS, options)?.build(&env, &schema::ADAPTIVE_THROTTLE, "")?;
        let t = AnyAdaptiveThrottle::new(c).map_err(|f| config_failure(&env, CLASS, "", &f))?;
        Ok(AdaptiveThrottle { t })
    }

    /// Whether to refuse a request locally at `now` (a draw; counted as a request unless
    /// `countRejected` is off).
    #[napi(catch_unwind)]
    pub fn should_reject(&self, env: Env, now: Option<BigInt>) -> Result<bool> {
        let now = now_of(&env, now)?;
        Ok(with_adaptive_throttle!(&self.t, t => t.should_reject(now)))
    }

    /// A request that went out ended with `outcome` at `now` (accepted by the backend or
    /// not, by the call contract).
    #[napi(catch_unwind, ts_args_type = "outcome: Outcome, now?: bigint")]
    pub fn report(&self, env: Env, outcome: String, now: Option<BigInt>) -> Result<&'static str> {
        let o = crate::outcome::parse(&env, "outcome", &outcome)?;
        let now = now_of(&env, now)?;
        Ok(with_adaptive_throttle!(&self.t, t => t.report(now, o)).name())
    }

    /// The rejection probability at `now`.
    #[napi(catch_unwind)]
    pub fn reject_probability(&self, env: Env, now: Option<BigInt>) -> Result<f64> {
        let now = now_of(&env, now)?;
        Ok(with_adaptive_throttle!(&self.t, t => t.reject_probability(now)))
    }

    /// `{ requests, accepts }` in the window at `now`.
    #[napi(catch_unwind, ts_return_type = "{ requests: number; accepts: number }")]
    pub fn window<'e>(&self, env: &'e Env, now: Option<BigInt>) -> Result<Object<'e>> {
        let now = now_of(env, now)?;
        let w = with_adaptive_throttle!(&self.t, t => t.window(now));
        numbers(
            env,
            &[("requests", num(w.requests)), ("accepts", num(w.accepts))],
        )
    }

    /// Counters, and the rejection probability now.
    #[napi(catch_unwind, ts_return_type = "Record<string, number>")]
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
