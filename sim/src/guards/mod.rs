//! One small adapter per guards-core guard.
//!
//! The engine never decides anything a guard decides: each adapter builds the guards-core
//! guard from the topology's plain settings, passes virtual time in, keeps the owned
//! permits the guard hands out and gives them back exactly once. The adapters only
//! translate between the engine's vocabulary (attempts, outcomes, call ids) and the
//! guard's.

pub(crate) mod admission;
pub(crate) mod breaker;
pub(crate) mod brownout;
pub(crate) mod budget;
pub(crate) mod bulkhead;
pub(crate) mod deadline;
pub(crate) mod hedging;
pub(crate) mod queue;
pub(crate) mod retry;

use guards_core::Nanos;

/// The stable start offset of periodic agent `agent` within `period`.
/// PENDING(core backoff::stable_offset).
pub(crate) fn stable_offset(agent: u32, period: Nanos) -> Nanos {
    let id = format!("agent-{agent}");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    Nanos::new(h % period.as_u64().max(1))
}
