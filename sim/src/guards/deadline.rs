//! Deadlines: how long a caller waits for one attempt and which deadline it sends, from
//! guards-core's [`Deadline::attempt_budget`](guards_core::deadline::Deadline::attempt_budget):
//! `budget = min(attempt timeout, time left) − margin`, or "don't start".
//!
//! The callee is told `budget`; the caller itself waits `budget + margin` (its attempt
//! timeout, or the time left), so with a margin the callee gives up a little before the
//! caller stops waiting. With no timeout and no deadline the wait is unbounded.

use guards_core::deadline::{AttemptBudget as Budget, Deadline};
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
    let deadline = if expires_at == Nanos::MAX {
        Deadline::NONE
    } else {
        Deadline::at(expires_at)
    };
    match deadline.attempt_budget(now, timeout.unwrap_or(Nanos::MAX), margin) {
        Budget::Start { budget } => AttemptBudget::Go {
            wait: budget.saturating_add(margin),
            send: budget,
        },
        Budget::Expired | Budget::TooLittleLeft { .. } => AttemptBudget::Expired,
    }
}
