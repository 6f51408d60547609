//! Circuit breaker per caller instance and edge.
//! PENDING(core circuit_breaker).

use guards_core::Nanos;

use crate::error::SimError;
use crate::topology::BreakerSpec;

/// Breaker state as the output reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Closed,
    Open,
    HalfOpen,
}

/// A breaker.
#[derive(Debug)]
pub(crate) struct Breaker;

/// Permission to make one call (maybe a probe).
#[derive(Debug)]
pub(crate) struct BreakerTicket {
    pub probe_timeout: Option<Nanos>,
}

impl Breaker {
    pub(crate) fn new(_spec: &BreakerSpec, place: &str) -> Result<Self, SimError> {
        Err(SimError::topology(format!(
            "{place}: circuit_breaker has not landed yet"
        )))
    }
    pub(crate) fn try_acquire(&self, _now: Nanos) -> Option<BreakerTicket> {
        None
    }
    pub(crate) fn success(&self, _t: BreakerTicket, _now: Nanos) {}
    pub(crate) fn failure(&self, _t: BreakerTicket, _now: Nanos) {}
    pub(crate) fn ignore(&self, _t: BreakerTicket) {}
    pub(crate) fn state(&self, _now: Nanos) -> State {
        State::Closed
    }
}
