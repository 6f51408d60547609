//! Retry decisions for one edge, by guards-core's
//! [`RetryPolicy`](guards_core::retry_policy::RetryPolicy) (attempt cap, outcome class,
//! idempotency, backoff with jitter from [`guards_core::backoff`], deadline fit, and the
//! retry budget asked last through its [`RetryGate`]).
//!
//! The policy is the edge's own [`RetryPolicyConfig`] (an edge without one makes a
//! single attempt, still through the policy, so every give-up has core's reason).
//!
//! Outcome mapping: no answer in time (the caller's timeout, the callee's deadline, no time
//! left) is a `Timeout`; an ordinary error is `OtherTransient`; "overloaded, don't retry"
//! (the callee's 503, or a local breaker or bulkhead refusal) is `Overloaded`, except on an
//! edge whose caller does not know that answer (`overloaded_is_transient`, as shipped),
//! which sees it as one more transient 5xx. A wait of one nanosecond with no jitter is how
//! a topology says "retry at once" (the shortest wait core's backoff accepts).

use guards_core::retry_policy::{
    GiveUpReason, Idempotency, RetryContext, RetryDecision, RetryGate, RetryPolicy,
    RetryPolicyConfig,
};
use guards_core::{Nanos, Outcome, Rng};

use crate::error::SimError;
use crate::topology::CallPolicy;

/// What kind of failure an attempt ended in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// No answer in time.
    Timeout,
    /// An ordinary error.
    Error,
    /// Overloaded, don't retry (a 503, or a local refusal).
    Overloaded,
}

/// Why a caller gives up (the policy's reason, as far as the engine cares).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GiveUp {
    /// The retry budget refused.
    Budget,
    /// Any other reason (not retryable, attempts exhausted, deadline, not idempotent).
    Other,
}

/// The decision after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Retry(Nanos),
    GiveUp(GiveUp),
}

/// The retry policy of one edge.
#[derive(Debug)]
pub(crate) struct Retry {
    policy: RetryPolicy,
    overloaded_is_transient: bool,
}

impl Retry {
    pub(crate) fn new(p: &CallPolicy, place: &str) -> Result<Self, SimError> {
        let config = p.retry.unwrap_or(RetryPolicyConfig {
            max_attempts: 1,
            ..RetryPolicyConfig::default()
        });
        if p.overloaded_is_transient && !config.retry_other_transient && p.retry.is_some() {
            return Err(SimError::topology(format!(
                "{place}: overloaded_is_transient treats a 503 as an ordinary error and needs \
                 retry.retry_other_transient"
            )));
        }
        let policy = RetryPolicy::new(config)
            .map_err(|e| SimError::guard(format!("{place}: retry_policy"), e))?;
        Ok(Retry {
            policy,
            overloaded_is_transient: p.overloaded_is_transient,
        })
    }

    /// Decide after the attempt number `attempts_made` failed with `class`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn decide(
        &self,
        attempts_made: u32,
        class: Class,
        idempotency: Idempotency,
        now: Nanos,
        left: Option<Nanos>,
        prev: Nanos,
        rng: &Rng,
        gate: Option<&dyn RetryGate>,
    ) -> Decision {
        let outcome = match class {
            Class::Timeout => Outcome::Timeout,
            Class::Error => Outcome::OtherTransient,
            Class::Overloaded if self.overloaded_is_transient => Outcome::OtherTransient,
            Class::Overloaded => Outcome::Overloaded,
        };
        let ctx = RetryContext::new(attempts_made, outcome)
            .with_idempotency(idempotency)
            .with_time_left(left)
            .with_prev_delay(prev);
        match self.policy.decide(now, ctx, rng, gate) {
            RetryDecision::Retry { after } => Decision::Retry(after),
            RetryDecision::GiveUp(GiveUpReason::BudgetExhausted) => {
                Decision::GiveUp(GiveUp::Budget)
            }
            RetryDecision::GiveUp(_) => Decision::GiveUp(GiveUp::Other),
        }
    }
}
