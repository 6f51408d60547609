//! `Hedging`: when to send a hedge (a second copy of a slow idempotent request).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::AnyHedging;
use guards::names::HedgingConfig;
use guards::schema;
use guards::with_hedging;
use guards_core::hedging::HedgeDecision;
use guards_core::retry_policy::RetryGate;

use crate::args;
use crate::convert::{big, ms, num, numbers, Options};
use crate::retry_budget::Gate;
use crate::shared::{self, Keep};

const CLASS: &str = "Hedging";

pub(crate) fn read_config(env: &Env, options: Option<Unknown<'_>>) -> Result<(HedgingConfig, u64)> {
    let c = Options::read(env, CLASS, options)?.build(env, &schema::HEDGING, "")?;
    Ok((c, 0))
}

/// Hedging: after the tracked `delayQuantile` latency, send a hedge, at most `maxHedges`
/// per request, idempotent requests only, paid from a retry budget. Lock-free; shareable
/// by worker threads (`Hedging.shared`).
#[napi]
pub struct Hedging {
    h: AnyHedging,
    _keep: Keep,
}

#[napi]
impl Hedging {
    /// A hedging policy with `options` (`delayQuantile`, `minDelay`, `maxDelay`,
    /// `maxHedges`, `minSamples`, `refreshInterval`, `tracker: { window, ... }`). With
    /// `shared`: built in or attached to a `SharedArrayBuffer` (see `CircuitBreaker`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: HedgingOptions, shared?: Uint8Array"
    )]
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        shared: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let (h, _keep) = crate::region::place_or_attach::<guards_core::hedging::Hedging>(
            &env,
            CLASS,
            options,
            shared,
            |o| read_config(&env, o),
        )?;
        Ok(Hedging { h, _keep })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a hedging policy.
    #[napi(catch_unwind, ts_args_type = "options?: HedgingOptions")]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        shared::size_for::<AnyHedging>(&env, CLASS, || read_config(&env, options))
    }

    /// Record a latency (ms, or exact ns as a bigint) at `now`.
    #[napi(catch_unwind, ts_args_type = "latency: number | bigint, now?: bigint")]
    pub fn record_latency(
        &self,
        env: Env,
        latency: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<()> {
        let l = args::duration(&env, "latency", &latency)?;
        let now = args::now(&env, now)?;
        with_hedging!(&self.h, h => h.record_latency(now, l));
        Ok(())
    }

    /// A call started at `startedAt` ended with `outcome` at `now`: its latency recorded
    /// or skipped by the call contract (`'record'` / `'skip'`).
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
        Ok(with_hedging!(&self.h, h => h.report(now, s, o)).name())
    }

    /// The hedge delay in ms at `now` (`null`: not enough samples).
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn hedge_delay_ms(&self, env: Env, now: Option<Unknown<'_>>) -> Result<Option<f64>> {
        let now = args::now(&env, now)?;
        Ok(with_hedging!(&self.h, h => h.hedge_delay(now)).map(ms))
    }

    /// Should a request started at `requestStarted`, with `hedgesSent` hedges out, send
    /// one at `now`? `{ decision: 'hedge_now' }`, `{ decision: 'wait_until', at }` or
    /// `{ decision: 'never', reason }`. `budget` pays for the hedge: a `RetryBudget`, or a
    /// function `(now, cause) => boolean` (asked last).
    #[napi(
        catch_unwind,
        ts_args_type = "requestStarted: bigint, hedgesSent: number, idempotent: boolean, budget?: RetryBudget | RetryGateFunction | null, now?: bigint",
        ts_return_type = "HedgeDecision"
    )]
    pub fn should_hedge<'e>(
        &self,
        env: &'e Env,
        request_started: Unknown<'_>,
        hedges_sent: Unknown<'_>,
        idempotent: Unknown<'_>,
        budget: Option<Unknown<'e>>,
        now: Option<Unknown<'_>>,
    ) -> Result<Object<'e>> {
        let s = args::instant(env, "requestStarted", &request_started)?;
        let sent = args::whole_u32(env, "hedgesSent", &hedges_sent)?;
        let idem = args::boolean(env, "idempotent", &idempotent)?;
        let gate = Gate::read(env, "budget", budget)?;
        let now = args::now(env, now)?;
        let d = with_hedging!(&self.h, h => h.should_hedge(now, s, sent, idem, gate.as_ref().map(|g| g as &dyn RetryGate)));
        if let Some(e) = gate.and_then(Gate::error) {
            return Err(e);
        }
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
    #[napi(catch_unwind, ts_return_type = "HedgingStats")]
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
