//! A limiter per caller instance: guards-core's [`Limiter`](guards_core::limiter::Limiter),
//! where a bulkhead's fixed cap becomes a limit that adapts (AIMD, Vegas, Gradient2) to the
//! round-trip times and drops it sees, or stays fixed. A permit is taken when an attempt
//! is sent and reported when the caller stops waiting for it: an answer is a sample of
//! its round trip, a timeout or an overloaded answer a drop (the call contract decides).

use guards_core::limiter::{Limiter, LimiterConfig, LimiterPermit};
use guards_core::{Nanos, Outcome, Priority};

use crate::error::SimError;

/// A limiter gate.
#[derive(Debug)]
pub(crate) struct LimiterGate {
    limiter: Box<Limiter>,
}

/// A slot held in a limiter.
pub(crate) type LimiterTicket = LimiterPermit;

impl LimiterGate {
    pub(crate) fn new(config: &LimiterConfig, place: &str) -> Result<Self, SimError> {
        let limiter =
            Limiter::new(*config).map_err(|e| SimError::guard(format!("{place}: limiter"), e))?;
        Ok(LimiterGate {
            limiter: Box::new(limiter),
        })
    }

    pub(crate) fn try_acquire(&self, now: Nanos, p: Priority) -> Option<LimiterTicket> {
        self.limiter.try_acquire(now, p).ok()
    }

    /// Hand the slot back with how the attempt ended.
    pub(crate) fn report(&self, t: LimiterTicket, outcome: Outcome, now: Nanos) {
        let _ = self.limiter.report(t, outcome, now);
    }

    /// The limit in force now.
    pub(crate) fn limit(&self) -> u64 {
        self.limiter.limit()
    }
}
