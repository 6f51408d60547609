//! One small adapter per guards-core guard.
//!
//! The engine never decides anything a guard decides: each adapter builds the guards-core
//! guard from the topology's plain settings, passes virtual time in, keeps the owned
//! permits the guard hands out and gives them back exactly once. The adapters only
//! translate between the engine's vocabulary (attempts, outcomes, call ids) and the
//! guard's.

pub(crate) mod admission;
pub(crate) mod brownout;
pub(crate) mod bulkhead;
pub(crate) mod circuit_breaker;
pub(crate) mod deadline;
pub(crate) mod hedging;
pub(crate) mod queue_discipline;
pub(crate) mod retry_budget;
pub(crate) mod retry_policy;

use guards_core::Nanos;

/// The stable start offset of periodic agent `agent` within `period`: guards-core's
/// [`stable_offset`](guards_core::backoff::stable_offset) of the id `agent-<n>`.
pub(crate) fn stable_offset(agent: u32, period: Nanos) -> Nanos {
    guards_core::backoff::stable_offset(format!("agent-{agent}").as_bytes(), period)
}
