//! What [`super::CircuitBreaker::try_acquire`] hands out and what reporting an outcome
//! returns: [`CircuitBreakerPermit`], [`CircuitBreakerRejected`], [`OutcomeEffect`], and the scoped
//! [`CircuitBreakerScope`] for Rust callers.

use core::fmt;

use super::CircuitBreaker;
use crate::brownout::RefusalKind;
use crate::outcome::Outcome;
use crate::time::{Clock, Nanos};

/// Whether a permit is for an ordinary call or a half-open probe.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PermitKind {
    /// An ordinary call while the breaker is closed; its outcome goes into the window.
    Call = 0,
    /// A half-open probe; its outcome decides whether the breaker closes or re-opens.
    Probe = 1,
}

named_enum!(PermitKind {
    Call => "call",
    Probe => "probe",
});

/// Permission to make one call, to be handed back exactly once with
/// [`CircuitBreaker::on_success`], [`CircuitBreaker::on_failure`] or
/// [`CircuitBreaker::on_ignore`].
///
/// It is a plain owned value (no borrow of the breaker, not `Clone`, not `Copy`), so it can be
/// kept across events, moved between threads or held by a binding, and returned once. It
/// carries everything the breaker needs to judge the outcome: when it was acquired (the
/// call's duration, for slow-call detection, is `now - acquired_at`), whether it is a probe
/// and the probe's timeout, and the generation of the breaker it was issued in. An outcome
/// reported after the breaker has moved to another generation is discarded.
///
/// A probe whose caller gives up on it (timeout, cancellation, crash of the request) must be
/// reported with `on_failure`: a probe that is never reported keeps its half-open slot
/// forever. `on_ignore` gives the slot back without judging the dependency (use it when the
/// call never reached the dependency).
#[repr(C)]
#[must_use = "a permit must be handed back with on_success, on_failure or on_ignore"]
#[derive(Debug, PartialEq, Eq)]
pub struct CircuitBreakerPermit {
    acquired_at: Nanos,
    probe_timeout: Nanos,
    generation: u32,
    kind: PermitKind,
}

impl CircuitBreakerPermit {
    pub(crate) const fn call(acquired_at: Nanos, generation: u32) -> Self {
        CircuitBreakerPermit {
            acquired_at,
            probe_timeout: Nanos::ZERO,
            generation,
            kind: PermitKind::Call,
        }
    }

    pub(crate) const fn probe(acquired_at: Nanos, generation: u32, timeout: Nanos) -> Self {
        CircuitBreakerPermit {
            acquired_at,
            probe_timeout: timeout,
            generation,
            kind: PermitKind::Probe,
        }
    }

    /// The instant of acquisition, when the breaker read it: for a probe, for an ordinary
    /// call of a breaker that times its calls (a slow-call duration is set), and for the
    /// permit of a [`CircuitBreakerScope`]. An ordinary call of a breaker that does not time
    /// its calls carries [`Nanos::ZERO`]: nothing judges its duration, so no clock was read.
    pub const fn acquired_at(&self) -> Nanos {
        self.acquired_at
    }

    /// The breaker generation the permit was issued in (wraps at 2^32 transitions).
    pub const fn generation(&self) -> u32 {
        self.generation
    }

    /// Ordinary call or probe.
    pub const fn kind(&self) -> PermitKind {
        self.kind
    }

    /// Whether this is a half-open probe.
    pub const fn is_probe(&self) -> bool {
        matches!(self.kind, PermitKind::Probe)
    }

    /// The timeout a probe must use (`None` for an ordinary call: use your own timeout).
    pub const fn probe_timeout(&self) -> Option<Nanos> {
        match self.kind {
            PermitKind::Probe => Some(self.probe_timeout),
            PermitKind::Call => None,
        }
    }

    /// The instant by which a probe must have been reported: `acquired_at + probe_timeout`
    /// (saturating). `None` for an ordinary call.
    pub const fn probe_deadline(&self) -> Option<Nanos> {
        match self.kind {
            PermitKind::Probe => Some(self.acquired_at.saturating_add(self.probe_timeout)),
            PermitKind::Call => None,
        }
    }
}

/// A [`CircuitBreakerPermit`] taken apart into plain data ([`CircuitBreakerPermit::into_parts`]),
/// to be kept somewhere a permit cannot go (a record in shared memory, a file, another
/// process) and rebuilt with [`CircuitBreakerPermit::from_parts`].
///
/// # Rebuilding is not minting
///
/// A permit is move-only so that Rust code cannot report one call twice. Parts are `Copy`:
/// whoever rebuilds permits from parts takes over that duty, and must rebuild each permit
/// once, from the parts of a permit that this breaker issued and that was not reported
/// (a permit table with take-once records, as `guards-ffi`'s shared regions keep, does
/// exactly that). Memory safety never depends on it: a permit is plain data, and every
/// value of these fields is a permit the breaker can judge. What a wrong rebuild does is
/// bounded by the breaker itself: parts of another generation (the breaker has moved on
/// since, or they came from another breaker) are [`OutcomeEffect::Discarded`]; parts of
/// the current generation count as one more outcome (skewing the window or the half-open
/// vote by one call, as a caller reporting the wrong outcome would), and never panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CircuitBreakerPermitParts {
    /// The `now` passed to `try_acquire` ([`CircuitBreakerPermit::acquired_at`]).
    pub acquired_at: Nanos,
    /// The breaker generation it was issued in ([`CircuitBreakerPermit::generation`]).
    pub generation: u32,
    /// Ordinary call or probe.
    pub kind: PermitKind,
    /// The probe's timeout (ignored, and rebuilt as zero, for [`PermitKind::Call`]).
    pub probe_timeout: Nanos,
}

impl CircuitBreakerPermit {
    /// Take the permit apart into plain data (see [`CircuitBreakerPermitParts`] for what
    /// that hands over to the caller).
    pub const fn into_parts(self) -> CircuitBreakerPermitParts {
        CircuitBreakerPermitParts {
            acquired_at: self.acquired_at,
            generation: self.generation,
            kind: self.kind,
            probe_timeout: self.probe_timeout,
        }
    }

    /// Rebuild a permit from the parts [`CircuitBreakerPermit::into_parts`] gave (once per
    /// permit taken apart: see [`CircuitBreakerPermitParts`]).
    pub const fn from_parts(parts: CircuitBreakerPermitParts) -> CircuitBreakerPermit {
        match parts.kind {
            PermitKind::Call => CircuitBreakerPermit::call(parts.acquired_at, parts.generation),
            PermitKind::Probe => CircuitBreakerPermit::probe(
                parts.acquired_at,
                parts.generation,
                parts.probe_timeout,
            ),
        }
    }
}

/// Why a call was refused.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CircuitBreakerRejectReason {
    /// The breaker is open.
    Open = 0,
    /// The breaker is half-open and every probe slot is taken.
    HalfOpenFull = 1,
}

named_enum!(CircuitBreakerRejectReason {
    Open => "open",
    HalfOpenFull => "half_open_full",
});

/// A refused call: why, and the earliest instant at which trying again could help.
///
/// - [`CircuitBreakerRejectReason::Open`]: `retry_at` is the open-until instant, when the
///   next call will be let through as a probe.
/// - [`CircuitBreakerRejectReason::HalfOpenFull`]: `retry_at` is `now + probe_timeout`: by
///   then every probe already out has either been reported or is overdue (its caller must
///   report it as failed).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CircuitBreakerRejected {
    /// Why the call was refused.
    pub reason: CircuitBreakerRejectReason,
    /// When a retry could be useful (an instant, on the same clock as `now`).
    pub retry_at: Nanos,
}

impl CircuitBreakerRejected {
    /// The brownout refusal kind of this refusal: [`RefusalKind::BreakerOpen`] (the call was
    /// not sent; see [`crate::outcome`]).
    pub const fn refusal_kind(&self) -> RefusalKind {
        RefusalKind::BreakerOpen
    }

    /// How long from `now` until [`CircuitBreakerRejected::retry_at`] (zero if already past), e.g.
    /// for a `Retry-After` header.
    pub const fn retry_after(&self, now: Nanos) -> Nanos {
        self.retry_at.saturating_sub(now)
    }
}

impl fmt::Display for CircuitBreakerRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            CircuitBreakerRejectReason::Open => {
                write!(f, "circuit breaker open until {}", self.retry_at)
            }
            CircuitBreakerRejectReason::HalfOpenFull => write!(
                f,
                "circuit breaker half-open and all probes taken; retry at {}",
                self.retry_at
            ),
        }
    }
}

impl core::error::Error for CircuitBreakerRejected {}

/// What reporting an outcome did.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutcomeEffect {
    /// An ordinary outcome went into the window; the breaker stays closed.
    Counted = 0,
    /// An ordinary outcome went into the window and this report opened the breaker.
    Opened = 1,
    /// A probe succeeded; the breaker stays half-open, waiting for the other probes.
    ProbePassed = 2,
    /// The last probe succeeded and this report closed the breaker (with a cleared window).
    Closed = 3,
    /// A probe failed (or was slow) and this report re-opened the breaker.
    Reopened = 4,
    /// Not counted: the breaker is no longer in the state and generation the permit was
    /// issued in (it opened, closed or re-opened since).
    Discarded = 5,
    /// Handed back without a verdict ([`CircuitBreaker::on_ignore`]; a probe's slot is given
    /// back): what [`CircuitBreaker::report`] returns for an outcome the call contract
    /// ignores.
    Ignored = 6,
}

named_enum!(OutcomeEffect {
    Counted => "counted",
    Opened => "opened",
    ProbePassed => "probe_passed",
    Closed => "closed",
    Reopened => "reopened",
    Discarded => "discarded",
    Ignored => "ignored",
});

impl OutcomeEffect {
    /// Whether this report made the breaker change state.
    pub const fn is_transition(self) -> bool {
        matches!(
            self,
            OutcomeEffect::Opened | OutcomeEffect::Closed | OutcomeEffect::Reopened
        )
    }
}

/// A permit tied to its breaker, for Rust code that runs the call in one scope.
///
/// Report the outcome with [`CircuitBreakerScope::report`] (or the primitives
/// [`CircuitBreakerScope::success`], [`CircuitBreakerScope::failure`],
/// [`CircuitBreakerScope::ignore`]). Dropping it without a report (an early return, a `?`,
/// a panic unwinding, a cancelled future) reports a **failure** with a duration of zero (so
/// it is never also counted as slow): Rust cannot tell an error returned with `?` from a
/// cancelled future, and an abandoned probe must not keep its slot, so the unknown is
/// counted on the safe side. Report [`Outcome::Cancelled`] explicitly when the call was
/// abandoned (an ordinary call is then not counted, a probe is still a failure).
#[derive(Debug)]
#[must_use = "dropping a CircuitBreakerScope reports a failure"]
pub struct CircuitBreakerScope<'a, const CAP: usize> {
    breaker: &'a CircuitBreaker<CAP>,
    permit: Option<CircuitBreakerPermit>,
}

impl<'a, const CAP: usize> CircuitBreakerScope<'a, CAP> {
    pub(crate) fn new(breaker: &'a CircuitBreaker<CAP>, permit: CircuitBreakerPermit) -> Self {
        CircuitBreakerScope {
            breaker,
            permit: Some(permit),
        }
    }

    /// The permit (kind, probe timeout, acquisition time).
    pub fn permit(&self) -> Option<&CircuitBreakerPermit> {
        self.permit.as_ref()
    }

    /// Report how the call ended at `now`, by the call contract
    /// ([`CircuitBreaker::report`]).
    pub fn report(mut self, outcome: Outcome, now: impl Clock) -> OutcomeEffect {
        match self.permit.take() {
            Some(p) => self.breaker.report(p, outcome, now),
            None => OutcomeEffect::Discarded,
        }
    }

    /// Report success at `now`.
    pub fn success(mut self, now: impl Clock) -> OutcomeEffect {
        match self.permit.take() {
            Some(p) => self.breaker.on_success(p, now),
            None => OutcomeEffect::Discarded,
        }
    }

    /// Report failure at `now`.
    pub fn failure(mut self, now: impl Clock) -> OutcomeEffect {
        match self.permit.take() {
            Some(p) => self.breaker.on_failure(p, now),
            None => OutcomeEffect::Discarded,
        }
    }

    /// Hand the permit back without an outcome.
    pub fn ignore(mut self) {
        if let Some(p) = self.permit.take() {
            self.breaker.on_ignore(p);
        }
    }
}

impl<const CAP: usize> Drop for CircuitBreakerScope<'_, CAP> {
    fn drop(&mut self) {
        if let Some(p) = self.permit.take() {
            let at = p.acquired_at();
            self.breaker.on_failure(p, at);
        }
    }
}
