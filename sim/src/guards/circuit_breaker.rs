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
    BreakerState, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerPermit, WindowKind,
};
use guards_core::{Nanos, Outcome};

use crate::error::SimError;
use crate::topology::{BreakerSpec, BreakerWindow};

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

/// Buckets of a time window.
const TIME_BUCKETS: u64 = 10;

impl Breaker {
    pub(crate) fn new(spec: &BreakerSpec, place: &str) -> Result<Self, SimError> {
        // `min_calls: 0` means what `BreakerSpec` documents (the whole count window, or one
        // call for a time window), spelled out rather than left to core's automatic minimum.
        let min_calls = match (spec.min_calls, spec.window) {
            (0, BreakerWindow::Count(n)) => u64::from(n),
            (0, BreakerWindow::Time(_)) => 1,
            (m, _) => u64::from(m),
        };
        let mut config = CircuitBreakerConfig {
            failure_rate_threshold: spec.failure_rate,
            minimum_calls: min_calls,
            open_duration: spec.open_for,
            max_open_duration: spec
                .open_for
                .max(CircuitBreakerConfig::default().max_open_duration),
            half_open_probes: u64::from(spec.probes),
            probe_timeout: spec.probe_timeout,
            ..CircuitBreakerConfig::default()
        };
        match spec.window {
            BreakerWindow::Count(n) => {
                config.window_kind = WindowKind::Count;
                config.window_size = u64::from(n);
            }
            BreakerWindow::Time(d) => {
                config.window_kind = WindowKind::Time;
                config.window_buckets = TIME_BUCKETS;
                // A whole multiple of the bucket count.
                config.window_duration = Nanos::new(d.as_u64() / TIME_BUCKETS * TIME_BUCKETS);
            }
        }
        let breaker = CircuitBreaker::new(config)
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
