//! Retry decisions for one edge.
//! PENDING(core retry_policy, backoff): replaced by guards-core when they land.

use guards_core::retry_policy::RetryGate;
use guards_core::{Nanos, Rng};

use crate::error::SimError;
use crate::topology::{CallPolicy, Idempotency};

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

/// Why a caller gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GiveUp {
    NotRetryable,
    Exhausted,
    NotIdempotent,
    Deadline,
    Budget,
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
    policy: CallPolicy,
}

impl Retry {
    pub(crate) fn new(policy: &CallPolicy, place: &str) -> Result<Self, SimError> {
        if !policy.backoff.base.is_zero() {
            return Err(SimError::topology(format!(
                "{place}: backoff needs guards-core's backoff (not landed yet)"
            )));
        }
        Ok(Retry { policy: *policy })
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn decide(
        &self,
        attempts_made: u32,
        class: Class,
        idempotency: Idempotency,
        _now: Nanos,
        left: Option<Nanos>,
        _prev: Nanos,
        _rng: &Rng,
        gate: Option<&dyn RetryGate>,
    ) -> Decision {
        let p = &self.policy;
        let retryable = match class {
            Class::Timeout => p.retry_on_timeout,
            Class::Error => p.retry_on_error,
            Class::Overloaded => p.retry_on_overloaded,
        };
        if !retryable {
            return Decision::GiveUp(GiveUp::NotRetryable);
        }
        if attempts_made >= p.attempts {
            return Decision::GiveUp(GiveUp::Exhausted);
        }
        if idempotency == Idempotency::Unkeyed {
            return Decision::GiveUp(GiveUp::NotIdempotent);
        }
        if let Some(l) = left {
            if l.is_zero() {
                return Decision::GiveUp(GiveUp::Deadline);
            }
        }
        if let Some(g) = gate {
            let cause = match class {
                Class::Timeout => guards_core::retry_policy::RetryCause::Timeout,
                _ => guards_core::retry_policy::RetryCause::Transient,
            };
            if !g.allow_retry(_now, cause) {
                return Decision::GiveUp(GiveUp::Budget);
            }
        }
        Decision::Retry(Nanos::ZERO)
    }
}
