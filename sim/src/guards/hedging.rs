//! Hedged requests: guards-core's [`Hedging`](guards_core::hedging::Hedging), which tracks
//! recent latency itself (its latency tracker) and says when a slow attempt should get a
//! second copy, paid from the retry budget through its gate.

use guards_core::hedging::{self, Hedging, HedgingConfig};
use guards_core::retry_policy::RetryGate;
use guards_core::{Nanos, Outcome};

use crate::error::SimError;

/// What to do about a slow attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HedgeDecision {
    /// Send a hedge now (the gate has been charged).
    Now,
    /// Ask again at this time.
    At(Nanos),
    /// Don't hedge this call.
    Never,
}

/// Latency tracker + hedging policy of one caller instance on one edge.
#[derive(Debug)]
pub(crate) struct Hedger {
    hedging: Box<Hedging>,
}

impl Hedger {
    pub(crate) fn new(config: &HedgingConfig, place: &str) -> Result<Self, SimError> {
        let hedging =
            Hedging::new(*config).map_err(|e| SimError::guard(format!("{place}: hedging"), e))?;
        Ok(Hedger {
            hedging: Box::new(hedging),
        })
    }

    /// An attempt that started at `started` ended at `now` with `outcome`; the call
    /// contract decides whether its latency is recorded (answers, and the lower bounds of
    /// timeouts and abandoned copies).
    pub(crate) fn report(&self, now: Nanos, started: Nanos, outcome: Outcome) {
        let _ = self.hedging.report(now, started, outcome);
    }

    pub(crate) fn decide(
        &self,
        now: Nanos,
        started: Nanos,
        hedges_sent: u32,
        idempotent: bool,
        gate: Option<&dyn RetryGate>,
    ) -> HedgeDecision {
        match self
            .hedging
            .should_hedge(now, started, hedges_sent, idempotent, gate)
        {
            hedging::HedgeDecision::HedgeNow => HedgeDecision::Now,
            hedging::HedgeDecision::WaitUntil(t) => HedgeDecision::At(t),
            hedging::HedgeDecision::Never(_) => HedgeDecision::Never,
        }
    }
}
