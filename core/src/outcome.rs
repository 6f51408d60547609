//! The call contract: one [`Outcome`] for a finished call, and one table of what each
//! outcome does to each guard.
//!
//! Every binding (C, Python, Node) and the simulator classify a finished call into an
//! [`Outcome`] and hand it to the guards through their `report` methods
//! ([`CircuitBreaker::report`](crate::CircuitBreaker::report),
//! [`Limiter::report`](crate::Limiter::report), [`RetryBudget::report`](crate::RetryBudget::report),
//! ...). What a guard then does is decided here, by the `const fn`s of `Outcome` that
//! return a small verdict per guard, and nowhere else: a binding never chooses between
//! `on_success` and `on_failure` itself, so no two bindings can disagree about it. (The
//! `on_*` verbs stay as the primitives the table maps onto.) The same table, in words, is
//! `docs/outcomes.md`; a test parses that file and checks every cell against these
//! functions.
//!
//! # The outcomes
//!
//! | outcome | meaning |
//! |---|---|
//! | `Success` | answered, and the answer is fine |
//! | `Timeout` | no answer within the attempt's budget |
//! | `ConnectionError` | the connection could not be made or broke: may go away |
//! | `OtherTransient` | another failure that may go away (a 500, 502, 504) |
//! | `Throttled` | the callee said "slow down" (429, or a 503 with Retry-After) |
//! | `Overloaded` | the callee refused and said "don't retry" |
//! | `Permanent` | answered with an error no retry can fix (a 4xx): the dependency is healthy, the request is wrong |
//! | `Rejected` | a guard of *this* process refused: the call never left (breaker open, bulkhead full, budget...) |
//! | `Ignored` | says nothing about the dependency (the caller's own bug) |
//! | `Cancelled` | the caller abandoned the call (its client went away, an outer deadline, a cancelled task) |
//!
//! A server-side Retry-After travels beside the outcome as `Option<Nanos>` (see
//! [`crate::http`] for reading one from an HTTP answer).
//!
//! **"Slow" is not an outcome.** A call's duration is measured by core itself, from the
//! permit's start to the `now` of the report: the breaker's slow-call rate and the limiter's
//! RTT samples come from it, so no binding can disagree about what was slow. A slow success
//! is a `Success` that the breaker also counts as slow.
//!
//! # Why these verdicts
//!
//! - **Breaker.** Failures of the dependency (timeouts, transport errors, 5xx, throttling,
//!   "overloaded") count against it; a `Permanent` error is an answer from a healthy
//!   dependency and counts as a success. `Rejected` and `Ignored` are not about the
//!   dependency: an ordinary call is handed back without a verdict, a probe gives its slot
//!   back. A `Cancelled` ordinary call says nothing either, but a cancelled or abandoned
//!   *probe* is a failure: a probe that never answers within its own timeout is exactly what
//!   a half-open breaker must not close on, and a probe that is never judged would hold its
//!   slot.
//! - **Bulkhead.** A slot is given back however the call ended.
//! - **Limiter and admission** (Netflix's convention): a success is an RTT sample;
//!   timeouts and "slow down"/"overloaded" answers are drops (the overload signal that
//!   shrinks an adaptive limit); every other error is ignored (no sample), since its
//!   latency says nothing about capacity.
//! - **Retry budgets.** gRPC retry throttling adds `token_ratio` on a success and takes a
//!   token on every failure a retry could be for (including throttling and "overloaded"
//!   pushback); the AWS retry quota refunds the receipt of a retry that succeeded, or adds
//!   its success increment to a first attempt that succeeded; a permanent error, a local
//!   refusal, an ignored or cancelled call changes neither. The token bucket and the
//!   windowed budget do not look at outcomes at all (they are paid by first attempts).
//! - **Adaptive throttle.** An answer the backend accepted (any answer but an overload
//!   refusal: success, a 4xx, a 500) is an accept; a timeout, a refused connection and an
//!   overload answer are not; a call that never reached the backend, or says nothing about
//!   it, changes nothing.
//! - **Latency tracker and hedging.** Answers record their latency (`Success`,
//!   `Permanent`); so do `Timeout` and `Cancelled`, whose time so far is a lower bound of
//!   the real latency (dropping them would keep only the fast calls and drag the tracked
//!   percentiles down exactly when the dependency is slow). Fast failures (a refused
//!   connection, a 5xx, a 429) measure the error path, not the work, and are not recorded;
//!   neither are calls that never reached the dependency.
//! - **Retry policy.** Timeouts, transport errors, other transient errors and throttling
//!   are retried (subject to the policy's switches, attempt cap, idempotency, deadline and
//!   budget); "overloaded" and permanent errors are not; a local refusal is not retried
//!   either (retry in one layer only: the refusal travels up as "overloaded"); a caller's
//!   own error is passed up as it is; a cancelled call gives up.
//! - **Brownout.** Timeouts, failures and overload answers may be served a fallback; a
//!   local refusal is a local kind (use the refusing guard's own `refusal_kind()`; without
//!   it, [`RefusalKind::Throttled`]); a permanent error (the caller's own 4xx), an
//!   ignored (programming) error and a cancellation never get a fallback.
//!
//! # Examples
//! ```
//! use guards_core::outcome::{BreakerVerdict, LimiterVerdict, Outcome, RetryVerdict};
//! use guards_core::retry_policy::{GiveUpReason, RetryCause};
//!
//! assert_eq!(Outcome::Cancelled.breaker(false), BreakerVerdict::Ignore);
//! assert_eq!(Outcome::Cancelled.breaker(true), BreakerVerdict::Failure);
//! assert_eq!(Outcome::Throttled.limiter(), LimiterVerdict::Dropped);
//! assert_eq!(Outcome::Timeout.retry(), RetryVerdict::Retry(RetryCause::Timeout));
//! assert_eq!(Outcome::Rejected.retry(), RetryVerdict::GiveUp(GiveUpReason::Rejected));
//! assert_eq!(Outcome::try_from(4), Ok(Outcome::Throttled));
//! assert_eq!(Outcome::from_name("connection_error"), Some(Outcome::ConnectionError));
//! ```
//!
//! # References
//!
//! - Netflix `concurrency-limits`: the limiter listener's `onSuccess` / `onDropped` /
//!   `onIgnore`, with timeouts and overload answers as drops.
//! - gRPC proposal A6 (retry throttling): which failures take a token.
//! - AWS SDKs, standard retry mode: the retry quota's refund and success increment.
//! - Google SRE book, "Handling Overload": client-side throttling counts requests and
//!   backend accepts; retry in one layer only.
//! - Basketly settings C2, C4, C6 and C8, and the model's reading that an abandoned probe
//!   is a failure and an abandoned ordinary call is not counted (docs/basketly.md).

use core::fmt;

use crate::brownout::RefusalKind;
use crate::retry_policy::{GiveUpReason, RetryCause};

/// How a finished call ended, as every guard is told. See the [module docs](self).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Answered, and the answer is fine (`"success"`).
    Success = 0,
    /// No answer within the attempt's budget (`"timeout"`).
    Timeout = 1,
    /// The connection could not be made or broke; may go away (`"connection_error"`).
    ConnectionError = 2,
    /// Another failure that may go away: a 500, 502, 504 (`"other_transient"`).
    OtherTransient = 3,
    /// The callee said "slow down": a 429, or a 503 with Retry-After (`"throttled"`).
    Throttled = 4,
    /// The callee refused and said "don't retry" (`"overloaded"`).
    Overloaded = 5,
    /// Answered with an error no retry can fix (a 4xx): the dependency is healthy, the
    /// request is wrong (`"permanent"`).
    Permanent = 6,
    /// A guard of this process refused: the call never left (`"rejected"`).
    Rejected = 7,
    /// Says nothing about the dependency: the caller's own bug (`"ignored"`).
    Ignored = 8,
    /// The caller abandoned the call: its client went away, an outer deadline passed, its
    /// task was cancelled (`"cancelled"`).
    Cancelled = 9,
}

named_enum!(Outcome {
    Success => "success",
    Timeout => "timeout",
    ConnectionError => "connection_error",
    OtherTransient => "other_transient",
    Throttled => "throttled",
    Overloaded => "overloaded",
    Permanent => "permanent",
    Rejected => "rejected",
    Ignored => "ignored",
    Cancelled => "cancelled",
});

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What an outcome does to a circuit breaker's permit ([`Outcome::breaker`]).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerVerdict {
    /// `on_success`: a success (counted as slow too if it took `slow_call_duration`).
    Success = 0,
    /// `on_failure`.
    Failure = 1,
    /// `on_ignore`: handed back without a verdict (a probe's slot is given back).
    Ignore = 2,
}

named_enum!(BreakerVerdict {
    Success => "success",
    Failure => "failure",
    Ignore => "ignore",
});

/// What an outcome does to a bulkhead's permit ([`Outcome::bulkhead`]): always release.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BulkheadVerdict {
    /// `release`: the slot is free again.
    Release = 0,
}

named_enum!(BulkheadVerdict {
    Release => "release",
});

/// What an outcome does to a limiter's or an admission door's permit
/// ([`Outcome::limiter`]).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimiterVerdict {
    /// `on_success`: an RTT sample.
    Success = 0,
    /// `on_dropped`: an overload sample.
    Dropped = 1,
    /// `on_ignore`: the slot is freed, no sample.
    Ignore = 2,
}

named_enum!(LimiterVerdict {
    Success => "success",
    Dropped => "dropped",
    Ignore => "ignore",
});

/// What an outcome does to a retry budget ([`Outcome::retry_budget`]). Only the modes
/// that look at outcomes act on it: gRPC throttling (`success`: +`token_ratio`, `failure`:
/// −1 token) and the AWS quota (`success`: refund the receipt, or add the success
/// increment for a first attempt; `failure`: nothing). The token bucket and the windowed
/// budget ignore it.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BudgetVerdict {
    /// The attempt succeeded.
    Success = 0,
    /// The attempt failed in a way a retry could be for.
    Failure = 1,
    /// Nothing to tell the budget.
    Nothing = 2,
}

named_enum!(BudgetVerdict {
    Success => "success",
    Failure => "failure",
    Nothing => "nothing",
});

/// What an outcome does to an adaptive throttle ([`Outcome::adaptive_throttle`]).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThrottleVerdict {
    /// `on_accepted`: the backend accepted the request.
    Accepted = 0,
    /// `on_rejected_by_backend`: the backend refused it or did not answer in time.
    RejectedByBackend = 1,
    /// Nothing: the request never reached the backend, or says nothing about it.
    Nothing = 2,
}

named_enum!(ThrottleVerdict {
    Accepted => "accepted",
    RejectedByBackend => "rejected_by_backend",
    Nothing => "nothing",
});

/// Whether an outcome's latency goes into a latency tracker (and so into hedging's delay)
/// ([`Outcome::latency`]).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LatencyVerdict {
    /// Record `now − start`.
    Record = 0,
    /// Record nothing.
    Skip = 1,
}

named_enum!(LatencyVerdict {
    Record => "record",
    Skip => "skip",
});

/// What a retry policy makes of an outcome's class ([`Outcome::retry`]), before its own
/// switches, attempt cap, idempotency, deadline and budget are applied.
#[repr(C, u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryVerdict {
    /// A retry may be wanted, for this cause.
    Retry(RetryCause) = 0,
    /// Never retried, for this reason.
    GiveUp(GiveUpReason) = 1,
}

impl RetryVerdict {
    /// Stable snake_case name of the variant: `"retry"`, `"give_up"`.
    pub const fn name(self) -> &'static str {
        match self {
            RetryVerdict::Retry(_) => "retry",
            RetryVerdict::GiveUp(_) => "give_up",
        }
    }
}

impl Outcome {
    /// Whether the call succeeded.
    #[inline]
    pub const fn is_success(self) -> bool {
        matches!(self, Outcome::Success)
    }

    /// What this outcome does to a breaker permit; `probe` tells a half-open probe from an
    /// ordinary call (a cancelled probe is a failure, a cancelled call is ignored).
    #[inline]
    pub const fn breaker(self, probe: bool) -> BreakerVerdict {
        match self {
            Outcome::Success | Outcome::Permanent => BreakerVerdict::Success,
            Outcome::Timeout
            | Outcome::ConnectionError
            | Outcome::OtherTransient
            | Outcome::Throttled
            | Outcome::Overloaded => BreakerVerdict::Failure,
            Outcome::Rejected | Outcome::Ignored => BreakerVerdict::Ignore,
            Outcome::Cancelled if probe => BreakerVerdict::Failure,
            Outcome::Cancelled => BreakerVerdict::Ignore,
        }
    }

    /// What this outcome does to a bulkhead permit: always release it.
    #[inline]
    pub const fn bulkhead(self) -> BulkheadVerdict {
        BulkheadVerdict::Release
    }

    /// What this outcome does to a limiter (or admission) permit.
    #[inline]
    pub const fn limiter(self) -> LimiterVerdict {
        match self {
            Outcome::Success => LimiterVerdict::Success,
            Outcome::Timeout | Outcome::Throttled | Outcome::Overloaded => LimiterVerdict::Dropped,
            Outcome::ConnectionError
            | Outcome::OtherTransient
            | Outcome::Permanent
            | Outcome::Rejected
            | Outcome::Ignored
            | Outcome::Cancelled => LimiterVerdict::Ignore,
        }
    }

    /// What this outcome tells a retry budget (see [`BudgetVerdict`] for what each mode does
    /// with it).
    #[inline]
    pub const fn retry_budget(self) -> BudgetVerdict {
        match self {
            Outcome::Success => BudgetVerdict::Success,
            Outcome::Timeout
            | Outcome::ConnectionError
            | Outcome::OtherTransient
            | Outcome::Throttled
            | Outcome::Overloaded => BudgetVerdict::Failure,
            Outcome::Permanent | Outcome::Rejected | Outcome::Ignored | Outcome::Cancelled => {
                BudgetVerdict::Nothing
            }
        }
    }

    /// What this outcome tells an adaptive throttle.
    #[inline]
    pub const fn adaptive_throttle(self) -> ThrottleVerdict {
        match self {
            Outcome::Success | Outcome::OtherTransient | Outcome::Permanent => {
                ThrottleVerdict::Accepted
            }
            Outcome::Timeout
            | Outcome::ConnectionError
            | Outcome::Throttled
            | Outcome::Overloaded => ThrottleVerdict::RejectedByBackend,
            Outcome::Rejected | Outcome::Ignored | Outcome::Cancelled => ThrottleVerdict::Nothing,
        }
    }

    /// Whether this outcome's latency is recorded by a latency tracker (and hedging).
    #[inline]
    pub const fn latency(self) -> LatencyVerdict {
        match self {
            Outcome::Success | Outcome::Permanent | Outcome::Timeout | Outcome::Cancelled => {
                LatencyVerdict::Record
            }
            Outcome::ConnectionError
            | Outcome::OtherTransient
            | Outcome::Throttled
            | Outcome::Overloaded
            | Outcome::Rejected
            | Outcome::Ignored => LatencyVerdict::Skip,
        }
    }

    /// What a retry policy makes of this outcome's class.
    #[inline]
    pub const fn retry(self) -> RetryVerdict {
        match self {
            Outcome::Success => RetryVerdict::GiveUp(GiveUpReason::Succeeded),
            Outcome::Timeout => RetryVerdict::Retry(RetryCause::Timeout),
            Outcome::ConnectionError | Outcome::OtherTransient => {
                RetryVerdict::Retry(RetryCause::Transient)
            }
            Outcome::Throttled => RetryVerdict::Retry(RetryCause::Throttled),
            Outcome::Overloaded => RetryVerdict::GiveUp(GiveUpReason::Overloaded),
            Outcome::Permanent => RetryVerdict::GiveUp(GiveUpReason::Permanent),
            Outcome::Rejected => RetryVerdict::GiveUp(GiveUpReason::Rejected),
            Outcome::Ignored => RetryVerdict::GiveUp(GiveUpReason::Ignored),
            Outcome::Cancelled => RetryVerdict::GiveUp(GiveUpReason::Cancelled),
        }
    }

    /// The [`RetryCause`] a retry after this outcome is charged for, or `None` for outcomes
    /// that are never retried.
    #[inline]
    pub const fn cause(self) -> Option<RetryCause> {
        match self.retry() {
            RetryVerdict::Retry(cause) => Some(cause),
            RetryVerdict::GiveUp(_) => None,
        }
    }

    /// The brownout refusal kind of this outcome, or `None` when it never gets a fallback
    /// (a success, which is a full answer, a permanent error, an ignored error, a
    /// cancellation). A local refusal reads as [`RefusalKind::Throttled`] here; use the
    /// refusing guard's own `refusal_kind()` when it is at hand. Same as
    /// [`RefusalKind::of`].
    #[inline]
    pub const fn brownout(self) -> Option<RefusalKind> {
        match self {
            Outcome::Timeout => Some(RefusalKind::Timeout),
            Outcome::ConnectionError | Outcome::OtherTransient => Some(RefusalKind::Failed),
            Outcome::Throttled | Outcome::Overloaded => Some(RefusalKind::Overloaded),
            Outcome::Rejected => Some(RefusalKind::Throttled),
            Outcome::Success | Outcome::Permanent | Outcome::Ignored | Outcome::Cancelled => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cancelled_depends_on_the_probe() {
        for o in Outcome::ALL {
            let differs = o.breaker(true) != o.breaker(false);
            assert_eq!(differs, o == Outcome::Cancelled, "{o}");
        }
    }

    #[test]
    fn retried_outcomes_are_failures_everywhere() {
        for o in Outcome::ALL {
            if o.cause().is_some() {
                assert_eq!(o.breaker(false), BreakerVerdict::Failure, "{o}");
                assert_eq!(o.retry_budget(), BudgetVerdict::Failure, "{o}");
            }
        }
    }
}
