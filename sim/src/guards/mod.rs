//! One small adapter per guards-core guard.
//!
//! The engine never decides anything a guard decides: each adapter builds the guards-core
//! guard from the config the topology embeds (core's own config type), passes virtual time in, keeps the owned
//! permits the guard hands out and gives them back exactly once. The adapters only
//! translate between the engine's vocabulary (attempts, outcomes, call ids) and the
//! guard's. How a finished call is reported to a guard is guards-core's call contract: the
//! engine's outcome is classified once, by [`outcome`], into a
//! [`guards_core::Outcome`], and every guard is handed that through its `report`.

pub(crate) mod admission;
pub(crate) mod brownout;
pub(crate) mod bulkhead;
pub(crate) mod circuit_breaker;
pub(crate) mod deadline;
pub(crate) mod hedging;
pub(crate) mod limiter;
pub(crate) mod queue_discipline;
pub(crate) mod retry_budget;
pub(crate) mod retry_policy;

use guards_core::Nanos;

use crate::engine::call::Outcome;

/// The call contract's outcome of an engine outcome: an answer is a success, an ordinary
/// error answer a transient failure, a 503 "overloaded"; running out of time (the caller's
/// timeout, the callee's deadline, no time left to start) is a timeout; the caller's own
/// breaker or bulkhead refusing is a local refusal.
pub(crate) fn outcome(o: Outcome) -> guards_core::Outcome {
    match o {
        Outcome::Ok => guards_core::Outcome::Success,
        Outcome::Error => guards_core::Outcome::OtherTransient,
        Outcome::Overloaded => guards_core::Outcome::Overloaded,
        Outcome::Deadline | Outcome::Timeout | Outcome::NoTime => guards_core::Outcome::Timeout,
        Outcome::BreakerOpen | Outcome::GateFull => guards_core::Outcome::Rejected,
    }
}

/// The stable start offset of periodic agent `agent` within `period`: guards-core's
/// [`stable_offset`](guards_core::backoff::stable_offset) of the id `agent-<n>`.
pub(crate) fn stable_offset(agent: u32, period: Nanos) -> Nanos {
    guards_core::backoff::stable_offset(format!("agent-{agent}").as_bytes(), period)
}
