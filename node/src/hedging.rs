//! `Hedging`: when to send a hedge (a second copy of a slow idempotent request).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::AnyHedging;
use guards::schema;
use guards::with_hedging;
use guards_core::hedging::HedgeDecision;
use guards_core::retry_policy::{RetryCause, RetryGate};

use crate::convert::{big, duration_ms, instant, ms, now_of, num, numbers, Options};
use crate::errors::config_failure;
use crate::retry_budget::RetryBudget;

const CLASS: &str = "Hedging";

struct Gate<'a>(&'a RetryBudget);

impl RetryGate for Gate<'_> {
    fn allow_retry(&self, now: guards::names::Nanos, cause: RetryCause) -> bool {
        self.0.core.g.withdraw(now, cause).is_some()
    }
}

/// Hedging: after the tracked `delayQuantile` latency, send a hedge, at most `maxHedges`
/// per request, idempotent requests only, paid from a retry budget.
#[napi]
pub struct Hedging {
    h: AnyHedging,
}

#[napi]
impl Hedging {
    /// A hedging policy with `options` (`delayQuantile`, `minDelay`, `maxDelay`,
    /// `maxHedges`, `minSamples`, `refreshInterval`, `tracker: { window, ... }`).
    #[napi(constructor, catch_unwind, ts_args_type = "options?: HedgingOptions")]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> Result<Self> {
        let c = Options::read(&env, CLASS, options)?.build(&env, &schema::HEDGING, "")?;
        let h = AnyHedging::new(c).map_err(|f| config_failure(&env, CLASS, "", &f))?;
        Ok(Hedging { h })
    }

    /// Record a latency of `latencyMs` at `now`.
    #[napi(catch_unwind)]
    pub fn record_latency(&self, env: Env, latency_ms: f64, now: Option<BigInt>) -> Result<()> {
        let l = duration_ms(&env, "latencyMs", latency_ms)?;
        let now = now_of(&env, now)?;
        with_hedging!(&self.h, h => h.record_latency(now, l));
        Ok(())
    }

    /// A call started at `startedAt` ended with `outcome` at `now` (recorded by the call
    /// contract).
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
        Ok(with_hedging!(&self.h, h => h.report(now, s, o)).name())
    }

    /// The hedge delay in ms at `now` (`null`: not enough samples).
    #[napi(catch_unwind)]
    pub fn hedge_delay_ms(&self, env: Env, now: Option<BigInt>) -> Result<Option<f64>> {
        let now = now_of(&env, now)?;
        Ok(with_hedging!(&self.h, h => h.hedge_delay(now)).map(ms))
    }

    /// Should a request started at `requestStarted`, with `hedgesSent` hedges out, send
    /// one at `now`? `{ decision: 'hedge_now' }`, `{ decision: 'wait_until', at }` or
    /// `{ decision: 'never', reason }`; `budget` pays for the hedge.
    #[napi(
        catch_unwind,
        ts_return_type = "{ decision: 'hedge_now' | 'wait_until' | 'never'; at?: bigint; reason?: string }"
    )]
    pub fn should_hedge<'e>(
        &self,
        env: &'e Env,
        request_started: BigInt,
        hedges_sent: u32,
        idempotent: bool,
        budget: Option<&RetryBudget>,
        now: Option<BigInt>,
    ) -> Result<Object<'e>> {
        let s = instant(env, "requestStarted", &request_started)?;
        let now = now_of(env, now)?;
        let gate = budget.map(Gate);
        let d = with_hedging!(&self.h, h => h.should_hedge(now, s, hedges_sent, idempotent, gate.as_ref().map(|g| g as &dyn RetryGate)));
        let mut o = Object::new(env)?;
        o.set("decision", d.name())?;
        match d {
            HedgeDecision::WaitUntil(t) => o.set("at", big(t))?,
            HedgeDecision::Never(r) => o.set("reason", r.name())?,
            HedgeDecision::HedgeNow => {}
        }
        Ok(o)
    }

    /// Counters.
    #[napi(catch_unwind, ts_return_type = "Record<string, number>")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = with_hedging!(&self.h, h => h.stats());
        numbers(
            env,
            &[
                ("hedges", num(s.hedges)),
                ("deferred", num(s.deferred)),
                ("notIdempotent", num(s.not_idempotent)),
                ("limitReached", num(s.limit_reached)),
                ("noLatencyData", num(s.no_latency_data)),
                ("budgetExhausted", num(s.budget_exhausted)),
            ],
        )
    }
}
