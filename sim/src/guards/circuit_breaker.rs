//! The circuit breaker per caller instance and edge: guards-core's
//! [`CircuitBreaker`](guards_core::circuit_breaker::CircuitBreaker).
//!
//! Every attempt sent is an outcome (retries included); the breaker's own refusals and the
//! bulkhead's are not. A probe's attempt uses the probe timeout the permit carries. The
//! engine reports each attempt with its [`guards_core::Outcome`] (an attempt never sent is
//! `Rejected`, one its caller stopped waiting for `Cancelled`) and the call contract decides:
//! an abandoned probe is a failure, an abandoned ordinary call is not counted. Outcomes of
//! ordinary calls that come back while the breaker is open or half-open (or from an older
//! generation) are ignored by the breaker itself.

use guards_core::circuit_breaker::{
    BreakerState, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerPermit,
};
use guards_core::{Nanos, Outcome};

use crate::error::SimError;

/// Breaker state as the output reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Closed,
    Open,
    HalfOpen,
}

/// A breaker.
#[derive(Debug)]
pub(crate) struct Breaker {
    breaker: CircuitBreaker,
}

/// Permission to make one call (maybe a probe).
#[derive(Debug)]
pub(crate) struct BreakerTicket {
    permit: CircuitBreakerPermit,
    /// The probe's timeout, for a probe.
    pub probe_timeout: Option<Nanos>,
}

impl Breaker {
    pub(crate) fn new(config: &CircuitBreakerConfig, place: &str) -> Result<Self, SimError> {
        let breaker = CircuitBreaker::new(*config)
            .map_err(|e| SimError::guard(format!("{place}: circuit_breaker"), e))?;
        Ok(Breaker { breaker })
    }

    pub(crate) fn try_acquire(&self, now: Nanos) -> Option<BreakerTicket> {
        let permit = self.breaker.try_acquire(now).ok()?;
        let probe_timeout = permit.probe_timeout();
        Some(BreakerTicket {
            permit,
            probe_timeout,
        })
    }

    /// Hand the ticket back with how the attempt ended.
    pub(crate) fn report(&self, t: BreakerTicket, outcome: Outcome, now: Nanos) {
        let _ = self.breaker.report(t.permit, outcome, now);
    }

    pub(crate) fn state(&self, now: Nanos) -> State {
        match self.breaker.state(now) {
            BreakerState::Closed => State::Closed,
            BreakerState::Open => State::Open,
            BreakerState::HalfOpen => State::HalfOpen,
        }
    }
}
