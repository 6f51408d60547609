//! Retry decisions for one edge, by guards-core's
//! [`RetryPolicy`](guards_core::retry_policy::RetryPolicy) (attempt cap, outcome class,
//! idempotency, backoff with jitter from [`guards_core::backoff`], deadline fit, and the
//! retry budget asked last through its [`RetryGate`]).
//!
//! Outcome mapping: no answer in time (the caller's timeout, the callee's deadline, no time
//! left) is a `Timeout`; an ordinary error is `OtherTransient`; "overloaded, don't retry"
//! (the callee's 503, or a local breaker or bulkhead refusal) is `Overloaded`, except on an
//! edge whose caller does not know that answer (`retry_on_overloaded`, as shipped), which
//! sees it as one more transient 5xx.
//!
//! "Retry at once" (backoff base 0) is a fixed wait of 1 ns, the shortest wait the backoff
//! accepts.

use guards_core::backoff::{BackoffConfig, Jitter};
use guards_core::retry_policy::{
    GiveUpReason, Idempotency as CoreIdempotency, RetryContext, RetryDecision, RetryGate,
    RetryPolicy, RetryPolicyConfig,
};
use guards_core::{Nanos, Outcome, Rng};

use crate::error::SimError;
use crate::topology::{CallPolicy, Idempotency, JitterKind};

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
        if p.retry_on_overloaded && !p.retry_on_error {
            return Err(SimError::topology(format!(
                "{place}: retry_on_overloaded treats 503 as an ordinary error and needs retry_on_error"
            )));
        }
        let backoff = if p.backoff.base.is_zero() {
            BackoffConfig {
                base: Nanos::new(1),
                cap: Nanos::new(1),
                multiplier: 1.0,
                jitter: Jitter::None,
            }
        } else {
            BackoffConfig {
                base: p.backoff.base,
                cap: p.backoff.cap.max(p.backoff.base),
                jitter: match p.backoff.jitter {
                    JitterKind::None => Jitter::None,
                    JitterKind::Full => Jitter::Full,
                    JitterKind::Equal => Jitter::Equal,
                    JitterKind::Decorrelated => Jitter::Decorrelated,
                },
                ..BackoffConfig::default()
            }
        };
        let config = RetryPolicyConfig {
            max_attempts: p.attempts,
            retry_timeouts: p.retry_on_timeout,
            retry_connection_errors: p.retry_on_error,
            retry_other_transient: p.retry_on_error,
            retry_throttled: p.retry_on_error,
            backoff,
            ..RetryPolicyConfig::default()
        };
        let policy = RetryPolicy::new(config)
            .map_err(|e| SimError::guard(format!("{place}: retry_policy"), e))?;
        Ok(Retry {
            policy,
            overloaded_is_transient: p.retry_on_overloaded,
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
        let idempotency = match idempotency {
            Idempotency::Idempotent => CoreIdempotency::Idempotent,
            Idempotency::Keyed => CoreIdempotency::KeyedSideEffect,
            Idempotency::Unkeyed => CoreIdempotency::UnkeyedSideEffect,
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
