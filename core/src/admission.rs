//! [`Admission`]: the server refuses work at the door, by priority, before doing any of it.
//!
//! A service counts the calls inside it and refuses a new one — with a reason and a
//! Retry-After — when the count has reached the limit for the call's [`Priority`]. All
//! priorities count toward the same total, so a less important call is refused while a
//! more important one still gets in: with the default limits a view (any priority below
//! [`Priority::CRITICAL_PLUS`]) is refused once 64 calls are inside, a reserve
//! (`CRITICAL_PLUS`) only at 80.
//!
//! Optionally the total also follows an adaptive limit ([`AdmissionConfig::limit`]: AIMD,
//! Vegas, Gradient2 from [`crate::limit`]), fed by the outcomes the server reports when
//! it releases a permit; each priority may fill only its [`share`](AdmissionConfig::shares)
//! of it.
//!
//! Admission is a thin policy over [`crate::limiter::Limiter`]: the in-flight count, the
//! per-priority thresholds, the window fold and the counters are the limiter's; this
//! module maps its configuration and names the refusals the way a server's door does.
//!
//! # Refusals
//! - [`AdmissionRejectReason::LimitReached`]: the calls inside reached this priority's fixed
//!   limit ([`AdmissionConfig::limits`]).
//! - [`AdmissionRejectReason::Overloaded`]: the calls inside reached the adaptive limit, or
//!   this priority's share of it.
//!
//! A refusal carries `retry_at`, an instant: the refusal's `now` plus the limiter's hint (a
//! duration: the mean RTT of the last sampling window, clamped to
//! `[min_retry_after, max_retry_after]`; `min_retry_after` when nothing has been measured),
//! with door-friendly defaults of 1 s to 60 s. [`AdmissionRejected::retry_after`] gives the
//! duration from a `now`, and [`AdmissionRejected::retry_after_secs`] the whole seconds for
//! an HTTP `Retry-After` header.
//!
//! # Why
//! A refusal must cost far less than the work, or refusing becomes the new overload; so the
//! check is one compare-and-swap on one counter, done before authentication, parsing or any
//! query. Per-priority limits on one shared count keep room for the calls that matter most
//! (checkouts) when the cheap ones (views) pile up.
//!
//! # Examples
//! ```
//! use guards_core::admission::{Admission, AdmissionConfig, AdmissionRejectReason};
//! use guards_core::{Nanos, Priority};
//!
//! let door = Admission::new(AdmissionConfig::default())?; // views 64, reserves 80
//! let now = Nanos::from_secs(10);
//! let mut inside = Vec::new();
//! for _ in 0..64 {
//!     inside.push(door.try_acquire(now, Priority::SHEDDABLE).expect("below 64"));
//! }
//! let refused = door.try_acquire(now, Priority::SHEDDABLE).unwrap_err();
//! assert_eq!(refused.reason, AdmissionRejectReason::LimitReached);
//! assert_eq!(refused.retry_after_secs(now), 1);
//! // A reserve still gets in: its limit is 80.
//! let reserve = door.try_acquire(now, Priority::CRITICAL_PLUS).expect("below 80");
//! door.on_success(reserve, now.saturating_add(Nanos::from_millis(40)));
//! for permit in inside {
//!     door.on_success(permit, now.saturating_add(Nanos::from_millis(5)));
//! }
//! assert_eq!(door.in_flight(), 0);
//! assert_eq!(door.stats().refused_by_priority[3], 1);
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//! - Basketly setting C5 (docs/basketly.md, "C5: stock protects itself"): stock counts
//!   the requests inside and answers 503
//!   with Retry-After before any real work, at 64 for views and 80 for reserves; refusing
//!   must be early and cheap.
//! - AWS Builders' Library, "Using load shedding to avoid overload": shed before doing the
//!   expensive part of the work, and prefer failing fast to queueing.
//! - Google SRE book, "Handling Overload": criticality travels with the request, and the
//!   least critical traffic is shed first.
//! - RFC 9110 §10.2.3: `Retry-After` as a number of seconds.

use core::fmt;

use crate::brownout::RefusalKind;
use crate::error::{check_f64_above, check_u64, inconsistent, ConfigError};
use crate::limit::LimitConfig;
use crate::limiter::{
    Limiter, LimiterConfig, LimiterPermit, LimiterPermitParts, LimiterRejectReason,
    LimiterRejected, PartitionConfig,
};
use crate::outcome::{LimiterVerdict, Outcome};
use crate::priority::{Priority, MAX_PRIORITIES};
use crate::time::Nanos;

/// Default for [`AdmissionConfig::limits`]: 80 for `CRITICAL_PLUS` (reserves), 64 for every
/// other level (views), as in Basketly setting C5 (docs/basketly.md). Valid range of each:
/// `1..=u64::MAX`, not increasing from more to less important levels.
pub const DEFAULT_LIMITS: [u64; MAX_PRIORITIES] = [80, 64, 64, 64, 64, 64, 64, 64];
/// Default for [`AdmissionConfig::limit`]: no adaptive limit (a fixed `u64::MAX`).
pub const DEFAULT_LIMIT: LimitConfig = LimitConfig::Fixed(u64::MAX);
/// Default for [`AdmissionConfig::shares`]: every level may fill the whole adaptive limit.
/// Valid range of each: `0.0 < s <= 1.0`, not increasing from more to less important levels.
pub const DEFAULT_SHARES: [f64; MAX_PRIORITIES] = [1.0; MAX_PRIORITIES];
/// Default for [`AdmissionConfig::window`] (the limiter's). Valid range: `1 ns..=1 day`.
pub const DEFAULT_WINDOW: Nanos = crate::limiter::DEFAULT_WINDOW;
/// Default for [`AdmissionConfig::min_window_samples`] (the limiter's). Valid range:
/// `1..=1_000_000`.
pub const DEFAULT_MIN_WINDOW_SAMPLES: u64 = crate::limiter::DEFAULT_MIN_WINDOW_SAMPLES;
/// Default for [`AdmissionConfig::min_retry_after`]: 1 s. Valid range: `0..=1 day`.
pub const DEFAULT_MIN_RETRY_AFTER: Nanos = Nanos::from_secs(1);
/// Default for [`AdmissionConfig::max_retry_after`]: 60 s. Valid range:
/// `min_retry_after..=1 day`.
pub const DEFAULT_MAX_RETRY_AFTER: Nanos = Nanos::from_secs(60);

/// The field name of each class's cap, `limits[i]` at index `i`: what a [`ConfigError`]
/// about [`AdmissionConfig::limits`] names (bindings name their per-class arguments alike).
pub const LIMIT_FIELDS: [&str; MAX_PRIORITIES] = [
    "limits[0]",
    "limits[1]",
    "limits[2]",
    "limits[3]",
    "limits[4]",
    "limits[5]",
    "limits[6]",
    "limits[7]",
];
/// The field name of each class's share, `shares[i]` at index `i`: what a [`ConfigError`]
/// about [`AdmissionConfig::shares`] names.
pub const SHARE_FIELDS: [&str; MAX_PRIORITIES] = [
    "shares[0]",
    "shares[1]",
    "shares[2]",
    "shares[3]",
    "shares[4]",
    "shares[5]",
    "shares[6]",
    "shares[7]",
];

/// Configuration of an [`Admission`] door.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdmissionConfig {
    /// Per priority level ([`Priority::index`]): refuse once this many calls (of any
    /// priority) are inside. Default [`DEFAULT_LIMITS`].
    pub limits: [u64; MAX_PRIORITIES],
    /// An adaptive limit on the calls inside, or a fixed total. Default [`DEFAULT_LIMIT`].
    pub limit: LimitConfig,
    /// Per priority level: the fraction of the adaptive limit it may fill. Default
    /// [`DEFAULT_SHARES`].
    pub shares: [f64; MAX_PRIORITIES],
    /// Sampling window of the adaptive limit. Default [`DEFAULT_WINDOW`].
    pub window: Nanos,
    /// Minimum samples per window. Default [`DEFAULT_MIN_WINDOW_SAMPLES`].
    pub min_window_samples: u64,
    /// Lower bound of the Retry-After hint. Default [`DEFAULT_MIN_RETRY_AFTER`].
    pub min_retry_after: Nanos,
    /// Upper bound of the Retry-After hint. Default [`DEFAULT_MAX_RETRY_AFTER`].
    pub max_retry_after: Nanos,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        AdmissionConfig {
            limits: DEFAULT_LIMITS,
            limit: DEFAULT_LIMIT,
            shares: DEFAULT_SHARES,
            window: DEFAULT_WINDOW,
            min_window_samples: DEFAULT_MIN_WINDOW_SAMPLES,
            min_retry_after: DEFAULT_MIN_RETRY_AFTER,
            max_retry_after: DEFAULT_MAX_RETRY_AFTER,
        }
    }
}

impl AdmissionConfig {
    /// Check every field; the error names the first bad one (`limits[i]`, `shares[i]`, or
    /// a field of the adaptive limit, `window`, `min_window_samples`, `min_retry_after`,
    /// `max_retry_after`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut prev_limit = u64::MAX;
        let mut prev_share = 1.0;
        for (i, (&limit, &share)) in self.limits.iter().zip(self.shares.iter()).enumerate() {
            let lf = LIMIT_FIELDS.get(i).copied().unwrap_or("limits");
            let sf = SHARE_FIELDS.get(i).copied().unwrap_or("shares");
            check_u64(lf, limit, 1, u64::MAX, "1..=u64::MAX")?;
            if limit > prev_limit {
                return Err(inconsistent(
                    lf,
                    "no more than the limit of a more important priority",
                ));
            }
            check_f64_above(sf, share, 0.0, 1.0, "0.0 < share <= 1.0")?;
            if share > prev_share {
                return Err(inconsistent(
                    sf,
                    "no more than the share of a more important priority",
                ));
            }
            prev_limit = limit;
            prev_share = share;
        }
        self.limiter_config().validate()
    }

    /// The limiter configuration this door runs on.
    pub fn limiter_config(&self) -> LimiterConfig {
        LimiterConfig {
            limit: self.limit,
            window: self.window,
            min_window_samples: self.min_window_samples,
            partitions: core::array::from_fn(|i| PartitionConfig {
                share: self.shares.get(i).copied().unwrap_or(1.0),
                max_in_flight: self.limits.get(i).copied().unwrap_or(u64::MAX),
            }),
            min_retry_after: self.min_retry_after,
            max_retry_after: self.max_retry_after,
        }
    }
}

/// Why a call was refused at the door.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AdmissionRejectReason {
    /// The calls inside reached this priority's fixed limit.
    LimitReached = 0,
    /// The calls inside reached the adaptive limit, or this priority's share of it.
    Overloaded = 1,
}

named_enum!(AdmissionRejectReason {
    LimitReached => "limit_reached",
    Overloaded => "overloaded",
});

/// A refused call: answer 503 (or the protocol's equivalent) with `Retry-After`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionRejected {
    /// Why.
    pub reason: AdmissionRejectReason,
    /// The priority that was refused.
    pub priority: Priority,
    /// An instant (same clock as `now`): when the client should try again.
    pub retry_at: Nanos,
    /// The calls inside when it was refused.
    pub in_flight: u64,
    /// The threshold this priority was held to.
    pub threshold: u64,
}

impl AdmissionRejected {
    /// The brownout refusal kind of this refusal: [`RefusalKind::Throttled`] (an admission
    /// check refused it; see [`crate::outcome`]).
    pub const fn refusal_kind(&self) -> RefusalKind {
        RefusalKind::Throttled
    }

    /// A duration: how long from `now` until [`AdmissionRejected::retry_at`] (zero if it
    /// has passed).
    pub const fn retry_after(&self, now: Nanos) -> Nanos {
        self.retry_at.saturating_sub(now)
    }

    /// [`AdmissionRejected::retry_after`] in whole seconds, rounded up, for an HTTP
    /// `Retry-After` header.
    pub const fn retry_after_secs(&self, now: Nanos) -> u64 {
        self.retry_after(now).0.div_ceil(1_000_000_000)
    }

    fn from_limiter(r: LimiterRejected) -> Self {
        AdmissionRejected {
            reason: match r.reason {
                LimiterRejectReason::PartitionCap => AdmissionRejectReason::LimitReached,
                LimiterRejectReason::LimitReached
                | LimiterRejectReason::ReservedForHigherPriority => {
                    AdmissionRejectReason::Overloaded
                }
            },
            priority: r.priority,
            retry_at: r.retry_at,
            in_flight: r.in_flight,
            threshold: r.threshold,
        }
    }
}

impl fmt::Display for AdmissionRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "refused at the door: {} ({} inside, threshold {} for priority {}), retry at {}",
            self.reason.name(),
            self.in_flight,
            self.threshold,
            self.priority.level(),
            self.retry_at
        )
    }
}

impl core::error::Error for AdmissionRejected {}

/// One admitted call. Owned and move-only: release it exactly once with
/// [`Admission::on_success`], [`Admission::on_dropped`] or [`Admission::on_ignore`].
/// Dropping it without doing so leaks one place inside.
#[repr(C)]
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a permit holds a place inside until it is released"]
pub struct AdmissionPermit {
    inner: LimiterPermit,
}

impl AdmissionPermit {
    /// When the call was admitted.
    pub fn start(&self) -> Nanos {
        self.inner.start()
    }

    /// Calls inside right after this one was admitted (including itself).
    pub fn in_flight(&self) -> u64 {
        self.inner.in_flight()
    }

    /// Its priority.
    pub fn priority(&self) -> Priority {
        self.inner.priority()
    }

    /// The threshold it was admitted under (`in_flight() <= threshold()` always).
    pub fn threshold(&self) -> u64 {
        self.inner.threshold()
    }
}

impl AdmissionPermit {
    /// Take the permit apart into plain data: the parts of the limiter permit inside (see
    /// [`LimiterPermitParts`] for what that hands over to the caller; a permit the door did
    /// not issue, given back, leaves its count at zero as the limiter's does).
    pub const fn into_parts(self) -> LimiterPermitParts {
        self.inner.into_parts()
    }

    /// Rebuild a permit from the parts [`AdmissionPermit::into_parts`] gave (once per
    /// permit taken apart).
    pub const fn from_parts(parts: LimiterPermitParts) -> AdmissionPermit {
        AdmissionPermit {
            inner: LimiterPermit::from_parts(parts),
        }
    }
}

/// Counters and gauges of an [`Admission`] door.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AdmissionStats {
    /// Calls admitted.
    pub admitted: u64,
    /// Refusals at a priority's fixed limit.
    pub refused_limit_reached: u64,
    /// Refusals at the adaptive limit or a priority's share of it.
    pub refused_overloaded: u64,
    /// Calls refused (either reason), by priority level.
    pub refused_by_priority: [u64; MAX_PRIORITIES],
    /// Permits released with `on_success`.
    pub succeeded: u64,
    /// Permits released with `on_dropped`.
    pub dropped: u64,
    /// Permits released with `on_ignore`.
    pub ignored: u64,
    /// Calls inside now.
    pub in_flight: u64,
    /// The current adaptive (or fixed total) limit.
    pub limit: u64,
}

/// A door that refuses calls by priority; see the [module documentation](self).
///
/// All bytes zero is a valid, unconfigured `Admission` (every limit 0: it refuses every
/// call): safe to call, meant to be [`reset`](Admission::reset) before use; see "Building in
/// place" in the crate docs.
#[repr(C)]
#[derive(Debug)]
pub struct Admission {
    config: AdmissionConfig,
    limiter: Limiter,
}

impl Admission {
    /// A door with nobody inside.
    pub fn new(config: AdmissionConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Admission {
            config,
            limiter: Limiter::new(config.limiter_config())?,
        })
    }

    /// Validate `config`, then put this door in exactly the state
    /// [`Admission::new`]`(config)` gives (nobody inside, zeroed counters), in place. On
    /// error nothing changes.
    pub fn reset(&mut self, config: AdmissionConfig) -> Result<(), ConfigError> {
        config.validate()?;
        self.limiter.reset(config.limiter_config())?;
        self.config = config;
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &AdmissionConfig {
        &self.config
    }

    /// The limiter underneath (for its own stats and limit).
    pub fn limiter(&self) -> &Limiter {
        &self.limiter
    }

    /// Admit a call of `priority` at `now`, or refuse it. Lock-free (one CAS loop).
    pub fn try_acquire(
        &self,
        now: Nanos,
        priority: Priority,
    ) -> Result<AdmissionPermit, AdmissionRejected> {
        self.limiter
            .try_acquire(now, priority)
            .map(|permit| AdmissionPermit { inner: permit })
            .map_err(AdmissionRejected::from_limiter)
    }

    /// [`Admission::try_acquire`] with a scope that releases with `on_ignore` if dropped
    /// without an outcome.
    pub fn try_acquire_scoped(
        &self,
        now: Nanos,
        priority: Priority,
    ) -> Result<AdmissionScope<'_>, AdmissionRejected> {
        self.try_acquire(now, priority)
            .map(|permit| AdmissionScope {
                door: self,
                permit: Some(permit),
            })
    }

    /// Release `permit` with how the call ended, at `now`: the same verdicts as
    /// [`Limiter::report`] (a success is a sample of the time inside; a timeout or an
    /// overload answer is a drop; anything else releases without a sample). Returns the
    /// verdict applied.
    pub fn report(&self, permit: AdmissionPermit, outcome: Outcome, now: Nanos) -> LimiterVerdict {
        self.limiter.report(permit.inner, outcome, now)
    }

    /// The call was served at `now`: release its place (and sample its time inside).
    pub fn on_success(&self, permit: AdmissionPermit, now: Nanos) {
        self.limiter.on_success(permit.inner, now);
    }

    /// The call was dropped at `now` (its deadline passed, the work was shed): release its
    /// place and record an overload sample.
    pub fn on_dropped(&self, permit: AdmissionPermit, now: Nanos) {
        self.limiter.on_dropped(permit.inner, now);
    }

    /// Release its place without a sample.
    pub fn on_ignore(&self, permit: AdmissionPermit) {
        self.limiter.on_ignore(permit.inner);
    }

    /// Calls inside now.
    pub fn in_flight(&self) -> u64 {
        self.limiter.in_flight()
    }

    /// The current adaptive (or fixed total) limit.
    pub fn limit(&self) -> u64 {
        self.limiter.limit()
    }

    /// The current threshold for `priority` on the calls inside.
    pub fn threshold(&self, priority: Priority) -> u64 {
        self.limiter.threshold(priority)
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> AdmissionStats {
        let s = self.limiter.stats();
        AdmissionStats {
            admitted: s.acquired,
            refused_limit_reached: s.rejected_partition_cap,
            refused_overloaded: s.rejected_limit_reached.wrapping_add(s.rejected_reserved),
            refused_by_priority: s.rejected_by_priority,
            succeeded: s.succeeded,
            dropped: s.dropped,
            ignored: s.ignored,
            in_flight: s.in_flight,
            limit: s.limit,
        }
    }
}

/// A permit that releases itself with `on_ignore` when dropped without an outcome. Rust
/// convenience over [`AdmissionPermit`]; it borrows the door.
#[derive(Debug)]
#[must_use = "dropping the scope at once releases the place again"]
pub struct AdmissionScope<'a> {
    door: &'a Admission,
    permit: Option<AdmissionPermit>,
}

impl AdmissionScope<'_> {
    /// The permit held (always `Some` until an outcome is reported).
    pub fn permit(&self) -> Option<&AdmissionPermit> {
        self.permit.as_ref()
    }

    /// Report success at `now`.
    pub fn success(mut self, now: Nanos) {
        if let Some(t) = self.permit.take() {
            self.door.on_success(t, now);
        }
    }

    /// Report a drop at `now`.
    pub fn dropped(mut self, now: Nanos) {
        if let Some(t) = self.permit.take() {
            self.door.on_dropped(t, now);
        }
    }

    /// Report how the call ended at `now` ([`Admission::report`]).
    pub fn report(mut self, outcome: Outcome, now: Nanos) {
        if let Some(t) = self.permit.take() {
            self.door.report(t, outcome, now);
        }
    }

    /// Release without a sample.
    pub fn ignore(self) {
        drop(self);
    }

    /// Take the permit out, to release it later by hand.
    pub fn into_permit(mut self) -> Option<AdmissionPermit> {
        self.permit.take()
    }
}

impl Drop for AdmissionScope<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.permit.take() {
            self.door.on_ignore(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::AimdConfig;
    use crate::ConfigErrorKind;
    use heapless::Vec;

    #[test]
    fn basketly_thresholds_exactly() {
        let door = Admission::new(AdmissionConfig::default()).unwrap();
        let t = Nanos(0);
        let mut inside: Vec<AdmissionPermit, 128> = Vec::new();
        for i in 0..64 {
            let permit = door.try_acquire(t, Priority::SHEDDABLE).unwrap();
            assert_eq!(permit.in_flight(), i + 1);
            inside.push(permit).unwrap();
        }
        let v = door.try_acquire(t, Priority::CRITICAL).unwrap_err();
        assert_eq!(
            (v.reason, v.in_flight, v.threshold),
            (AdmissionRejectReason::LimitReached, 64, 64)
        );
        for _ in 64..80 {
            inside
                .push(door.try_acquire(t, Priority::CRITICAL_PLUS).unwrap())
                .unwrap();
        }
        let r = door.try_acquire(t, Priority::CRITICAL_PLUS).unwrap_err();
        assert_eq!(
            (r.reason, r.in_flight, r.threshold),
            (AdmissionRejectReason::LimitReached, 80, 80)
        );
        // One leaves: 79 inside, a reserve fits, a view still does not.
        door.on_success(inside.pop().unwrap(), Nanos(1));
        assert!(door.try_acquire(t, Priority::CRITICAL).is_err());
        inside
            .push(door.try_acquire(t, Priority::CRITICAL_PLUS).unwrap())
            .unwrap();
        let s = door.stats();
        assert_eq!(
            (s.admitted, s.refused_limit_reached, s.refused_overloaded),
            (81, 3, 0)
        );
        assert_eq!(s.refused_by_priority[1], 2);
        assert_eq!(s.refused_by_priority[0], 1);
        for permit in inside {
            door.on_ignore(permit);
        }
        assert_eq!(door.in_flight(), 0);
    }

    #[test]
    fn adaptive_limit_refuses_as_overloaded() {
        let door = Admission::new(AdmissionConfig {
            limit: LimitConfig::Aimd(AimdConfig {
                initial_limit: 4,
                ..AimdConfig::default()
            }),
            shares: [1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5],
            min_window_samples: 1,
            ..AdmissionConfig::default()
        })
        .unwrap();
        assert_eq!(door.threshold(Priority::CRITICAL), 2);
        let t = Nanos::from_secs(1);
        let a = door.try_acquire(t, Priority::CRITICAL).unwrap();
        let b = door.try_acquire(t, Priority::CRITICAL).unwrap();
        let r = door.try_acquire(t, Priority::CRITICAL).unwrap_err();
        assert_eq!(r.reason, AdmissionRejectReason::Overloaded);
        assert_eq!(r.retry_after(t), DEFAULT_MIN_RETRY_AFTER);
        // A drop halves the adaptive limit: 4 → 2, and views get max(1, ⌊2 × 0.5⌋) = 1.
        door.on_dropped(a, t.saturating_add(Nanos::from_millis(60)));
        assert_eq!(door.limit(), 2);
        assert_eq!(door.threshold(Priority::CRITICAL), 1);
        door.on_success(b, t.saturating_add(Nanos::from_millis(61)));
        assert_eq!(door.stats().refused_overloaded, 1);
    }

    #[test]
    fn retry_after_in_whole_seconds_rounds_up() {
        let r = AdmissionRejected {
            reason: AdmissionRejectReason::Overloaded,
            priority: Priority::CRITICAL,
            retry_at: Nanos(1_000_000_006),
            in_flight: 1,
            threshold: 1,
        };
        assert_eq!(r.retry_after_secs(Nanos(5)), 2);
        assert_eq!(r.retry_after_secs(Nanos(6)), 1);
        assert_eq!(r.retry_after_secs(Nanos(1_000_000_006)), 0);
        assert_eq!(r.retry_after_secs(Nanos::MAX), 0);
    }

    #[test]
    fn scope_releases_on_drop() {
        let door = Admission::new(AdmissionConfig {
            limits: [1; MAX_PRIORITIES],
            ..AdmissionConfig::default()
        })
        .unwrap();
        {
            let s = door
                .try_acquire_scoped(Nanos(0), Priority::CRITICAL)
                .unwrap();
            assert!(s.permit().is_some());
            assert!(door.try_acquire(Nanos(0), Priority::CRITICAL).is_err());
        }
        door.try_acquire_scoped(Nanos(0), Priority::CRITICAL)
            .unwrap()
            .success(Nanos(1));
        let s = door.stats();
        assert_eq!((s.ignored, s.succeeded, s.in_flight), (1, 1, 0));
    }

    #[test]
    fn rejects_bad_config() {
        let d = AdmissionConfig::default();
        let e = |c: AdmissionConfig| c.validate().unwrap_err();
        let mut c = d;
        c.limits[2] = 0;
        assert_eq!(
            (e(c).field(), e(c).kind()),
            ("limits[2]", ConfigErrorKind::Zero)
        );
        let mut c = d;
        c.limits[0] = 10;
        assert_eq!(
            (e(c).field(), e(c).kind()),
            ("limits[1]", ConfigErrorKind::Inconsistent)
        );
        let mut c = d;
        c.shares[4] = f64::NAN;
        assert_eq!(e(c).field(), "shares[4]");
        let c = AdmissionConfig {
            window: Nanos::ZERO,
            ..d
        };
        assert_eq!(e(c).field(), "window");
        assert!(Admission::new(c).is_err());
    }
}

#[cfg(test)]
mod parts_tests {
    use super::*;

    #[test]
    fn a_permit_goes_to_parts_and_back() {
        let door = Admission::new(AdmissionConfig::default()).unwrap();
        let p = door.try_acquire(Nanos(3), Priority::SHEDDABLE).unwrap();
        let parts = p.into_parts();
        assert_eq!(parts.start, Nanos(3));
        assert_eq!(parts.in_flight, 1);
        assert_eq!(parts.priority, Priority::SHEDDABLE);
        let rebuilt = AdmissionPermit::from_parts(parts);
        assert_eq!(rebuilt.in_flight(), 1);
        assert_eq!(door.in_flight(), 1);
        door.on_success(rebuilt, Nanos(4));
        assert_eq!(door.in_flight(), 0);
        door.on_ignore(AdmissionPermit::from_parts(parts));
        assert_eq!(door.in_flight(), 0);
    }
}
