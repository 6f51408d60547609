//! Hedged requests driven by a latency tracker.
//! PENDING(core latency_tracker, hedging).

use guards_core::retry_policy::RetryGate;
use guards_core::Nanos;

use crate::error::SimError;
use crate::topology::HedgeSpec;

/// What to do about a slow attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HedgeDecision {
    Now,
    At(Nanos),
    Never,
}

/// Latency tracker + hedging policy of one caller instance on one edge.
#[derive(Debug)]
pub(crate) struct Hedger;

impl Hedger {
    pub(crate) fn new(_spec: &HedgeSpec, place: &str) -> Result<Self, SimError> {
        Err(SimError::topology(format!(
            "{place}: hedging has not landed yet"
        )))
    }
    pub(crate) fn record(&self, _now: Nanos, _latency: Nanos) {}
    pub(crate) fn decide(
        &self,
        _now: Nanos,
        _started: Nanos,
        _hedges_sent: u32,
        _idempotent: bool,
        _gate: Option<&dyn RetryGate>,
    ) -> HedgeDecision {
        HedgeDecision::Never
    }
}
