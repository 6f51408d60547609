//! `RetryDriver`: core's retry loop of one request, step by step. The JavaScript layer's
//! `retry()` runs on it: it only sleeps, calls and classifies; every decision (the attempt's
//! budget from the deadline, whether and when to retry, the budget's deposits, charges and
//! refunds) is the driver's.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards_core::deadline::{Deadline, DeadlineConfig};
use guards_core::retry_budget::Budget;
use guards_core::retry_driver::{RetryDriver as CoreDriver, RetryStep};
use guards_core::retry_policy::Idempotency;

use crate::convert::{big, duration_ms, instant, ms, now_of};
use crate::errors::{config_failure, internal, range_error};
use crate::retry_budget::{BudgetCore, RetryBudget};
use crate::retry_policy::{PolicyCore, RetryPolicy};

const CLASS: &str = "RetryDriver";

/// The retry loop of one request (see core's `retry_driver`). Built per request from a
/// shared `RetryPolicy` and an optional shared `RetryBudget`.
#[napi]
pub struct RetryDriver {
    d: CoreDriver,
    policy: Arc<PolicyCore>,
    budget: Option<Arc<BudgetCore>>,
    wait: guards::names::Nanos,
}

fn step_object<'e>(env: &'e Env, d: &CoreDriver, s: RetryStep) -> Result<Object<'e>> {
    let mut o = Object::new(env)?;
    o.set("kind", s.name())?;
    match s {
        RetryStep::Attempt(a) => {
            o.set("number", a.number)?;
            o.set("budgetMs", ms(a.budget))?;
            o.set("expiresAt", big(a.expires_at))?;
        }
        RetryStep::Wait(w) => {
            o.set("retryAfterMs", ms(w.retry_after))?;
            o.set("retryAt", big(w.retry_at))?;
        }
        RetryStep::Succeeded => {}
        RetryStep::GiveUp(r) => {
            o.set("reason", r.name())?;
            o.set("overloaded", r.should_propagate_as_overloaded())?;
        }
    }
    o.set("attempts", d.attempts())?;
    Ok(o)
}

impl RetryDriver {
    fn fast(&mut self, s: RetryStep) -> f64 {
        match s {
            RetryStep::Attempt(a) => ms(a.budget),
            RetryStep::Wait(w) => {
                self.wait = w.retry_after;
                -3.0
            }
            RetryStep::Succeeded => -2.0,
            RetryStep::GiveUp(_) => -1.0,
        }
    }
}

#[napi]
impl RetryDriver {
    /// A driver for one request: `policy`, and `options`: `budget` (a `RetryBudget`),
    /// `deadline` (a bigint instant) or `timeoutMs` (from now), `attemptTimeoutMs` (each
    /// attempt's longest wait, default: no limit beyond the deadline), `marginMs` (kept back
    /// from the time left; default 0), `idempotency` (default `'idempotent'`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "policy: RetryPolicy, options?: RetryDriverOptions"
    )]
    pub fn new(env: Env, policy: &RetryPolicy, options: Option<Object<'_>>) -> Result<Self> {
        let mut deadline = Deadline::NONE;
        let mut attempt_timeout = guards_core::deadline::MAX_ATTEMPT_TIMEOUT;
        let mut margin = guards::names::Nanos(0);
        let mut idem = Idempotency::Idempotent;
        let mut budget = None;
        if let Some(o) = options {
            let now = guards::clock::now();
            if let Some(b) = o.get::<BigInt>("deadline")? {
                deadline = Deadline::at(instant(&env, "deadline", &b)?);
            }
            if let Some(t) = o.get::<f64>("timeoutMs")? {
                deadline = deadline.min(Deadline::after(now, duration_ms(&env, "timeoutMs", t)?));
            }
            if let Some(t) = o.get::<f64>("attemptTimeoutMs")? {
                attempt_timeout = duration_ms(&env, "attemptTimeoutMs", t)?;
            }
            if let Some(t) = o.get::<f64>("marginMs")? {
                margin = duration_ms(&env, "marginMs", t)?;
            }
            if let Some(s) = o.get::<String>("idempotency")? {
                idem = crate::retry_policy::idempotency(&env, &s)?;
            }
            if let Some(b) = o.get::<ClassInstance<'_, RetryBudget>>("budget")? {
                budget = Some(Arc::clone(&b.core));
            }
        }
        let cfg = DeadlineConfig::new(attempt_timeout, margin).map_err(|e| {
            let f: guards::error::Failure = e.into();
            config_failure(&env, CLASS, "", &f)
        })?;
        if attempt_timeout.0 == 0 {
            return Err(range_error(
                &env,
                "attemptTimeoutMs",
                "RetryDriver: `attemptTimeoutMs` must be positive",
            ));
        }
        let d = CoreDriver::new(deadline, idem, cfg)
            .map_err(|e| config_failure(&env, CLASS, "", &e.into()))?;
        Ok(RetryDriver {
            d,
            policy: Arc::clone(&policy.core),
            budget,
            wait: guards::names::Nanos(0),
        })
    }

    /// Start the request at `now`: the first attempt, or a give-up (no time left).
    #[napi(catch_unwind, ts_return_type = "RetryStep")]
    pub fn start<'e>(&mut self, env: &'e Env, now: Option<BigInt>) -> Result<Object<'e>> {
        let now = now_of(env, now)?;
        let budget = self.budget.clone();
        let s = self
            .d
            .start(now, budget.as_ref().map(|b| &*b.g as &dyn Budget))
            .map_err(|e| internal(env, &e.to_string()))?;
        step_object(env, &self.d, s)
    }

    /// The attempt out ended with `outcome` (and the server's `retryAfterMs`) at `now`:
    /// wait and retry, succeeded, or give up.
    #[napi(
        catch_unwind,
        ts_args_type = "outcome: Outcome, retryAfterMs?: number | null, now?: bigint",
        ts_return_type = "RetryStep"
    )]
    pub fn report<'e>(
        &mut self,
        env: &'e Env,
        outcome: String,
        retry_after_ms: Option<f64>,
        now: Option<BigInt>,
    ) -> Result<Object<'e>> {
        let outcome = crate::outcome::parse(env, "outcome", &outcome)?;
        let ra = match retry_after_ms {
            Some(v) => Some(duration_ms(env, "retryAfterMs", v)?),
            None => None,
        };
        let now = now_of(env, now)?;
        let budget = self.budget.clone();
        let s = self
            .d
            .report(
                now,
                outcome,
                ra,
                &self.policy.policy,
                &self.policy.rng,
                budget.as_ref().map(|b| &*b.g as &dyn Budget),
            )
            .map_err(|e| internal(env, &e.to_string()))?;
        step_object(env, &self.d, s)
    }

    /// The wait is over at `now`: the next attempt, a give-up, or (woken early) more wait.
    #[napi(catch_unwind, ts_return_type = "RetryStep")]
    pub fn resume<'e>(&mut self, env: &'e Env, now: Option<BigInt>) -> Result<Object<'e>> {
        let now = now_of(env, now)?;
        let s = self
            .d
            .resume(now)
            .map_err(|e| internal(env, &e.to_string()))?;
        step_object(env, &self.d, s)
    }

    /// The caller abandoned the request: give up with `'cancelled'` (from any phase that
    /// is not final; a final one is left as it is and `null` is returned).
    #[napi(catch_unwind, ts_return_type = "RetryStep | null")]
    pub fn cancel<'e>(&mut self, env: &'e Env) -> Result<Option<Object<'e>>> {
        match self.d.cancel() {
            Ok(s) => Ok(Some(step_object(env, &self.d, s)?)),
            Err(_) => Ok(None),
        }
    }

    /// Fast path of `start`: the attempt's budget in ms (>= 0), or -1 (gave up).
    #[napi(js_name = "_start")]
    pub fn fast_start(&mut self) -> f64 {
        let budget = self.budget.clone();
        match self.d.start(
            guards::clock::now(),
            budget.as_ref().map(|b| &*b.g as &dyn Budget),
        ) {
            Ok(s) => self.fast(s),
            Err(_) => -1.0,
        }
    }

    /// Fast path of `report` (outcome by number; `retryAfterMs` < 0 for none): the wait in
    /// ms is then `waitMs` (returns -3), -2 succeeded, -1 gave up.
    #[napi(js_name = "_report")]
    pub fn fast_report(&mut self, env: Env, outcome: u32, retry_after_ms: f64) -> Result<f64> {
        let outcome = crate::outcome::of_number(&env, outcome)?;
        let ra = if retry_after_ms >= 0.0 {
            Some(duration_ms(&env, "retryAfterMs", retry_after_ms)?)
        } else {
            None
        };
        let budget = self.budget.clone();
        let s = self.d.report(
            guards::clock::now(),
            outcome,
            ra,
            &self.policy.policy,
            &self.policy.rng,
            budget.as_ref().map(|b| &*b.g as &dyn Budget),
        );
        Ok(match s {
            Ok(s) => self.fast(s),
            Err(_) => -1.0,
        })
    }

    /// Fast path of `resume`: the attempt's budget in ms, -1 gave up, -3 wait `waitMs`
    /// more.
    #[napi(js_name = "_resume")]
    pub fn fast_resume(&mut self) -> f64 {
        match self.d.resume(guards::clock::now()) {
            Ok(s) => self.fast(s),
            Err(_) => -1.0,
        }
    }

    /// The wait the last step asked for, in ms.
    #[napi(getter)]
    pub fn wait_ms(&self) -> f64 {
        ms(self.wait)
    }

    /// The phase: `'idle'`, `'attempting'`, `'waiting'`, `'succeeded'`, `'gave_up'`.
    #[napi(getter)]
    pub fn phase(&self) -> &'static str {
        self.d.phase().name()
    }

    /// Why it gave up (`null` unless it has).
    #[napi(getter)]
    pub fn give_up_reason(&self) -> Option<&'static str> {
        self.d.give_up_reason().map(|r| r.name())
    }

    /// Whether the give-up should travel up as "overloaded" (don't retry above).
    #[napi(getter)]
    pub fn overloaded(&self) -> bool {
        self.d
            .give_up_reason()
            .is_some_and(|r| r.should_propagate_as_overloaded())
    }

    /// Attempts started.
    #[napi(getter)]
    pub fn attempts(&self) -> u32 {
        self.d.attempts()
    }

    /// Retries decided.
    #[napi(getter)]
    pub fn retries(&self) -> u32 {
        self.d.retries()
    }

    /// The outcome of the last attempt reported, if any.
    #[napi(getter)]
    pub fn last_outcome(&self) -> Option<&'static str> {
        self.d.last_outcome().map(|o| o.name())
    }

    /// The deadline's instant (`null`: none).
    #[napi(getter)]
    pub fn deadline(&self) -> Option<BigInt> {
        self.d.deadline().expires_at().map(big)
    }
}
