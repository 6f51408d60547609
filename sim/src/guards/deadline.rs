//! Deadlines: how long a caller waits for one attempt and which deadline it sends.
//! PENDING(core deadline): replaced by guards-core's `deadline` when it lands.

use guards_core::Nanos;

/// The time an attempt may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttemptBudget {
    /// Nothing useful is left: don't start.
    Expired,
    /// Wait up to `wait`; tell the callee `send`.
    Go { wait: Nanos, send: Nanos },
}

/// The budget of an attempt started at `now` for a request expiring at `expires_at`
/// (`Nanos::MAX`: never) with per-attempt `timeout` (`None`: unbounded) and `margin`.
pub(crate) fn attempt_budget(
    now: Nanos,
    expires_at: Nanos,
    timeout: Option<Nanos>,
    margin: Nanos,
) -> AttemptBudget {
    let left = if expires_at == Nanos::MAX {
        Nanos::MAX
    } else {
        expires_at.saturating_sub(now)
    };
    if left.is_zero() {
        return AttemptBudget::Expired;
    }
    let wait = left.min_of(timeout.unwrap_or(Nanos::MAX));
    let send = wait.saturating_sub(margin);
    if send.is_zero() {
        return AttemptBudget::Expired;
    }
    AttemptBudget::Go { wait, send }
}
