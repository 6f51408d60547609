//! Retry policy (being built). The gate interface below is shared with the budgets and
//! hedging so that a policy can ask any of them whether a retry may go.

use crate::time::Nanos;

/// Why a retry is wanted. Gates that price retries by cause (the AWS retry quota charges
/// more for a timeout than for other transient errors) use it; others ignore it.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryCause {
    /// The attempt timed out (no answer).
    Timeout = 0,
    /// A transient error other than a timeout (connection reset, 5xx that may be retried).
    Transient = 1,
    /// The callee throttled the caller (429, or a throttling error code).
    Throttled = 2,
    /// A hedge: a second copy sent because the first is slow, not because it failed.
    Hedge = 3,
}

/// Something that can allow or refuse a retry (or hedge) right now, and pays for it if it
/// allows it: a retry budget, a retry quota, a throttle.
///
/// `allow_retry` must be lock-free and must only charge when it returns `true`.
pub trait RetryGate {
    /// May one retry caused by `cause` go at `now`? Returns `true` and charges its cost,
    /// or returns `false` and charges nothing.
    fn allow_retry(&self, now: Nanos, cause: RetryCause) -> bool;
}
