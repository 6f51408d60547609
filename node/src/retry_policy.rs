//! `RetryPolicy`: retry after N ms, or give up and why.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::schema;
use guards_core::retry_policy::{
    Idempotency, RetryCause, RetryContext, RetryDecision, RetryGate, RetryPolicy as CorePolicy,
};
use guards_core::Rng;

use crate::convert::{config_object, duration_ms, ms, now_of, num, numbers, Options};
use crate::errors::{config_failure, type_error};
use crate::retry_budget::RetryBudget;

const CLASS: &str = "RetryPolicy";

pub(crate) struct PolicyCore {
    pub(crate) policy: CorePolicy,
    pub(crate) rng: Rng,
}

/// The idempotency named `name`.
pub(crate) fn idempotency(env: &Env, name: &str) -> Result<Idempotency> {
    Idempotency::from_name(name).ok_or_else(|| {
        type_error(
            env,
            "idempotency",
            &format!("`idempotency` must be 'idempotent', 'keyed_side_effect' or 'unkeyed_side_effect', not {name:?}"),
        )
    })
}

struct BudgetGate<'a>(&'a guards::handle::InPlace<guards::names::RetryBudget>);

impl RetryGate for BudgetGate<'_> {
    fn allow_retry(&self, now: guards::names::Nanos, cause: RetryCause) -> bool {
        self.0.withdraw(now, cause).is_some()
    }
}

/// A retry policy: which failures are retried (by outcome), how often (`maxAttempts`),
/// after how long (backoff with jitter, Retry-After honoured up to `maxRetryAfter`), only
/// with an idempotency that allows it, only while the deadline leaves time, and only if
/// the budget pays (asked last).
#[napi]
pub struct RetryPolicy {
    pub(crate) core: Arc<PolicyCore>,
}

#[napi]
impl RetryPolicy {
    /// A policy with `options` (`maxAttempts`, `retryTimeouts`, `retryConnectionErrors`,
    /// `retryOtherTransient`, `retryThrottled`, `honorRetryAfter`, `maxRetryAfter`,
    /// `minAttemptTime`, `unkeyedSideEffects`, `backoff: { base, cap, multiplier, jitter }`;
    /// `seed` for the jitter, default random).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: RetryPolicyOptions"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> Result<Self> {
        let mut o = Options::read(&env, CLASS, options)?;
        let seed = match o.take("seed") {
            None => {
                guards::clock::now_ns()
                    ^ 0x9E37_79B9_7F4A_7C15
                    ^ (std::process::id() as u64).rotate_left(32)
            }
            Some((camel, v)) => crate::convert::whole(&env, CLASS, &camel, &v, u64::MAX)?,
        };
        let c = o.build(&env, &schema::RETRY_POLICY, "")?;
        let policy = CorePolicy::new(c).map_err(|e| config_failure(&env, CLASS, "", &e.into()))?;
        Ok(RetryPolicy {
            core: Arc::new(PolicyCore {
                policy,
                rng: Rng::new(seed),
            }),
        })
    }

    /// Decide after attempt `attempt` (1 for the first) ended with `outcome`:
    /// `{ retry: true, delayMs }` or `{ retry: false, reason }`. `retryAfterMs` is the
    /// server's Retry-After, `timeLeftMs` the deadline's time left (none: no deadline),
    /// `prevDelayMs` the previous wait; `budget` is asked last.
    #[napi(
        catch_unwind,
        ts_args_type = "attempt: number, outcome: Outcome, options?: { retryAfterMs?: number; idempotency?: Idempotency; timeLeftMs?: number; prevDelayMs?: number; budget?: RetryBudget; now?: bigint }",
        ts_return_type = "{ retry: boolean; delayMs?: number; reason?: GiveUpReason }"
    )]
    pub fn decide<'e>(
        &self,
        env: &'e Env,
        attempt: u32,
        outcome: String,
        options: Option<Object<'_>>,
    ) -> Result<Object<'e>> {
        let outcome = crate::outcome::parse(env, "outcome", &outcome)?;
        let mut ctx = RetryContext::new(attempt, outcome);
        let mut now = guards::clock::now();
        let mut budget: Option<ClassInstance<'_, RetryBudget>> = None;
        if let Some(o) = options {
            if let Some(v) = o.get::<f64>("retryAfterMs")? {
                ctx = ctx.with_retry_after(Some(duration_ms(env, "retryAfterMs", v)?));
            }
            if let Some(v) = o.get::<String>("idempotency")? {
                ctx = ctx.with_idempotency(idempotency(env, &v)?);
            }
            if let Some(v) = o.get::<f64>("timeLeftMs")? {
                ctx = ctx.with_time_left(Some(duration_ms(env, "timeLeftMs", v)?));
            }
            if let Some(v) = o.get::<f64>("prevDelayMs")? {
                ctx = ctx.with_prev_delay(duration_ms(env, "prevDelayMs", v)?);
            }
            if let Some(v) = o.get::<BigInt>("now")? {
                now = now_of(env, Some(v))?;
            }
            budget = o.get::<ClassInstance<'_, RetryBudget>>("budget")?;
        }
        let d = match &budget {
            Some(b) => {
                let gate = BudgetGate(&b.core.g);
                self.core
                    .policy
                    .decide(now, ctx, &self.core.rng, Some(&gate))
            }
            None => self.core.policy.decide(now, ctx, &self.core.rng, None),
        };
        let mut out = Object::new(env)?;
        match d {
            RetryDecision::Retry { after } => {
                out.set("retry", true)?;
                out.set("delayMs", ms(after))?;
            }
            RetryDecision::GiveUp(r) => {
                out.set("retry", false)?;
                out.set("reason", r.name())?;
            }
        }
        Ok(out)
    }

    /// Counters: retries and each give-up reason.
    #[napi(catch_unwind, ts_return_type = "Record<string, number>")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.core.policy.stats();
        numbers(
            env,
            &[
                ("retries", num(s.retries)),
                ("succeeded", num(s.succeeded)),
                ("permanent", num(s.permanent)),
                ("overloaded", num(s.overloaded)),
                ("notRetryable", num(s.not_retryable)),
                ("attemptsExhausted", num(s.attempts_exhausted)),
                ("notIdempotent", num(s.not_idempotent)),
                ("retryAfterTooLong", num(s.retry_after_too_long)),
                ("deadlineExceeded", num(s.deadline_exceeded)),
                ("budgetExhausted", num(s.budget_exhausted)),
                ("rejected", num(s.rejected)),
                ("ignored", num(s.ignored)),
                ("cancelled", num(s.cancelled)),
            ],
        )
    }

    /// The config (camelCase, durations in ms).
    #[napi(getter, catch_unwind, ts_return_type = "Record<string, unknown>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        config_object(env, &schema::RETRY_POLICY, self.core.policy.config())
    }
}
