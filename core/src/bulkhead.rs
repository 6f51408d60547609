//! Bulkhead: a fixed cap on how many calls to one dependency may be in flight at once.
//!
//! A slow dependency holds every caller that waits for it: by Little's law the calls in
//! flight are the arrival rate times the time each one takes, so a call that gets a
//! hundred times slower needs a hundred times the threads, and in a shared pool it takes
//! them from requests that never call it. A bulkhead caps the calls to one dependency, so
//! however slow it gets it can hold at most `max_concurrent` of the caller's threads (or
//! connections, or buffers), and everything else keeps the rest. It does not end a call
//! that is already stuck: the timeout beside it does that. It bounds how many are stuck.
//!
//! Size the cap from the dependency's healthy behaviour with
//! [`BulkheadConfig::from_littles_law`]: calls a second × P99 latency × headroom, rounded
//! up. Basketly setting C7: 315 calls a second × 18.7 ms × 2 = 11.8, so 12 per instance. A cap
//! is per instance: the fleet's total is the cap times the instances.
//!
//! # Lock-free, never a false refusal
//!
//! The in-flight count is one `AtomicU64`. [`Bulkhead::try_acquire`] is a compare-and-swap
//! loop: read the count, refuse if it is at the cap, otherwise swap in count + 1; a CAS
//! that lost a race re-reads and decides again. The count therefore never exceeds the cap,
//! and a refusal always reports a count that really was at the cap at that instant.
//!
//! The alternative, `fetch_add` then roll back with `fetch_sub` when over the cap, is one
//! instruction cheaper on the happy path but briefly publishes a count above the cap: a
//! concurrent caller that reads it is refused although a slot is (or is about to be) free,
//! and a release can be mis-accounted while the overshoot is visible. Bulkheads are used
//! near their cap exactly when it matters, so that spurious refusal is what we avoid.
//!
//! Acquisition uses `Acquire` and release `Release` ordering, as a semaphore does: whatever
//! a holder did before releasing happens-before the next holder's acquisition of that slot.
//!
//! # Permits
//!
//! A [`BulkheadPermit`] is an owned, move-only value (not `Clone`, not `Copy`, no borrow of
//! the bulkhead) that goes back through [`Bulkhead::release`] (or [`Bulkhead::report`],
//! the same for every outcome), which consumes it: a permit is released at most once by
//! construction. The simulator and the bindings hold permits
//! across events this way. In Rust, [`Bulkhead::try_acquire_scoped`] returns a
//! [`BulkheadScope`] that releases on drop. A permit must go back to the bulkhead that
//! issued it; dropping a permit without releasing it keeps its slot taken.
//!
//! # Examples
//! ```
//! use guards_core::bulkhead::{Bulkhead, BulkheadConfig};
//! use guards_core::Nanos;
//!
//! // Basketly C7: 315 calls/s × 18.7 ms × 2 = 11.8 -> 12 per instance.
//! let config = BulkheadConfig::from_littles_law(315.0, Nanos::from_micros(18_700), 2.0)
//!     .unwrap();
//! assert_eq!(config.max_concurrent, 12);
//! let stock = Bulkhead::new(config).unwrap();
//!
//! let permits: Vec<_> = (0..12).map(|_| stock.try_acquire().unwrap()).collect();
//! let full = stock.try_acquire().unwrap_err(); // the 13th call to stock is refused
//! assert_eq!(full.in_flight, 12);
//! for p in permits {
//!     stock.release(p);
//! }
//! {
//!     let _guard = stock.try_acquire_scoped().unwrap(); // released at the end of scope
//!     assert_eq!(stock.in_flight(), 1);
//! }
//! assert_eq!(stock.in_flight(), 0);
//! ```
//!
//! # References
//!
//! - J. D. C. Little, "A Proof for the Queuing Formula L = λW", Operations Research, 1961.
//! - M. Nygard, *Release It!*: the bulkhead pattern, named after a ship's watertight
//!   compartments.
//! - resilience4j's semaphore bulkhead (`maxConcurrentCalls`, 25 by default) and Polly's
//!   bulkhead isolation: the same cap, there with optional waiting; here the caller's
//!   runtime decides whether to wait.
//! - Basketly setting C7 (docs/basketly.md, "C7: a bulkhead"): the stock gate of 12 per
//!   shop-api instance, shared by its two operations,
//!   sized as calls a second × P99 × headroom.

use core::fmt;

use crate::brownout::RefusalKind;
use crate::counter::Counter;
use crate::error::{check_f64, check_f64_above, check_nanos, check_u64, ConfigError};
use crate::math;
use crate::outcome::{BulkheadVerdict, Outcome};
use crate::sync::{set_mut, AtomicU64, Ordering};
use crate::time::Nanos;

/// Default for [`BulkheadConfig::max_concurrent`]: 12, Basketly's C7 gate per instance.
/// Valid range: `1..=MAX_CONCURRENT_LIMIT`.
pub const DEFAULT_MAX_CONCURRENT: u64 = 12;

/// The largest accepted [`BulkheadConfig::max_concurrent`]: 2^32 − 1.
pub const MAX_CONCURRENT_LIMIT: u64 = u32::MAX as u64;

/// Configuration of a [`Bulkhead`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkheadConfig {
    /// How many calls may be in flight at once. Default [`DEFAULT_MAX_CONCURRENT`];
    /// valid `1..=MAX_CONCURRENT_LIMIT`.
    pub max_concurrent: u64,
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        BulkheadConfig {
            max_concurrent: DEFAULT_MAX_CONCURRENT,
        }
    }
}

impl BulkheadConfig {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_u64(
            "max_concurrent",
            self.max_concurrent,
            1,
            MAX_CONCURRENT_LIMIT,
            "1..=4294967295 calls",
        )?;
        Ok(())
    }

    /// Size a cap with Little's law: `ceil(rate_per_sec × p99 × headroom)`.
    ///
    /// `rate_per_sec` is the dependency's healthy call rate from this instance (valid
    /// `> 0` up to `1e9`), `p99` its healthy 99th-percentile latency (1 ns..=1 h) and
    /// `headroom` the safety factor (valid `1.0..=100.0`; 2 in Basketly's C7). The product is
    /// computed in `f64` as `rate_per_sec × p99_ns × headroom / 10^9` and rounded up, so a
    /// product that is exactly whole is not rounded further. Errors name the argument
    /// (`rate_per_sec`, `p99`, `headroom`), or `max_concurrent` when the result exceeds
    /// [`MAX_CONCURRENT_LIMIT`].
    pub fn from_littles_law(
        rate_per_sec: f64,
        p99: Nanos,
        headroom: f64,
    ) -> Result<BulkheadConfig, ConfigError> {
        check_f64_above(
            "rate_per_sec",
            rate_per_sec,
            0.0,
            1e9,
            "calls a second, > 0 and <= 1e9",
        )?;
        check_nanos(
            "p99",
            p99,
            Nanos(1),
            Nanos::from_secs(3_600),
            "a latency in 1 ns..=1 h",
        )?;
        check_f64("headroom", headroom, 1.0, 100.0, "a factor in 1.0..=100.0")?;
        let in_flight = rate_per_sec * p99.as_u64() as f64 * headroom / 1e9;
        let config = BulkheadConfig {
            max_concurrent: math::to_u64_saturating(math::ceil(in_flight)).max(1),
        };
        config.validate()?;
        Ok(config)
    }
}

/// The bulkhead is at its cap: the call must not start (fail fast, or fall back).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BulkheadRejected {
    /// The calls in flight when the request was refused (equal to the cap at that instant).
    pub in_flight: u64,
    /// The cap.
    pub max_concurrent: u64,
}

impl BulkheadRejected {
    /// The brownout refusal kind of this refusal: [`RefusalKind::BulkheadFull`] (the call
    /// was not sent; see [`crate::outcome`]).
    pub const fn refusal_kind(&self) -> RefusalKind {
        RefusalKind::BulkheadFull
    }
}

impl fmt::Display for BulkheadRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bulkhead full: {} of {} calls in flight",
            self.in_flight, self.max_concurrent
        )
    }
}

impl core::error::Error for BulkheadRejected {}

/// Permission for one call to be in flight. Owned and move-only: hand it back exactly once
/// through [`Bulkhead::release`] when the call ends, however it ends.
#[must_use = "a permit holds a slot until it is passed to Bulkhead::release"]
#[derive(Debug, PartialEq, Eq)]
pub struct BulkheadPermit {
    _private: (),
}

/// A [`BulkheadPermit`] taken apart ([`BulkheadPermit::into_parts`]): a bulkhead permit
/// carries no data, so its parts are this unit value, kept (as a record in shared memory,
/// say) to stand for one slot held and rebuilt with [`BulkheadPermit::from_parts`].
///
/// Rebuilding is not minting: rebuild each permit once, from a permit this bulkhead
/// issued and that was not released (a take-once permit table does exactly that).
/// Memory safety never depends on it, and a wrong rebuild is bounded by the bulkhead:
/// releasing a slot it did not hand out stops at zero ([`Bulkhead::release`] never goes
/// below zero), so nobody is ever admitted past `max_concurrent` by it, though the one
/// permit still out then releases nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BulkheadPermitParts;

impl BulkheadPermit {
    /// Take the permit apart (see [`BulkheadPermitParts`]).
    pub const fn into_parts(self) -> BulkheadPermitParts {
        let BulkheadPermit { _private: () } = self;
        BulkheadPermitParts
    }

    /// Rebuild a permit from [`BulkheadPermit::into_parts`] (once per permit taken apart).
    pub const fn from_parts(parts: BulkheadPermitParts) -> BulkheadPermit {
        let BulkheadPermitParts = parts;
        BulkheadPermit { _private: () }
    }
}

/// A permit that releases itself when dropped (Rust convenience over [`BulkheadPermit`]).
#[must_use = "dropping the guard releases the slot at once"]
#[derive(Debug)]
pub struct BulkheadScope<'a> {
    bulkhead: &'a Bulkhead,
    permit: Option<BulkheadPermit>,
}

impl BulkheadScope<'_> {
    /// Detach the permit; the caller now releases it with [`Bulkhead::release`].
    pub fn into_permit(mut self) -> BulkheadPermit {
        self.permit
            .take()
            .unwrap_or(BulkheadPermit { _private: () })
    }
}

impl Drop for BulkheadScope<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.permit.take() {
            self.bulkhead.release(p);
        }
    }
}

/// Counters of a [`Bulkhead`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BulkheadStats {
    /// Permits granted.
    pub acquired: u64,
    /// Requests refused at the cap.
    pub rejected: u64,
    /// Permits released. Derived, not counted: every release that returns a slot lowers
    /// the gauge, so this is `acquired − in_flight` and the three always agree.
    pub released: u64,
    /// Calls in flight (the gauge).
    pub in_flight: u64,
}

/// A fixed cap on concurrent calls. Lock-free: one atomic word.
///
/// All bytes zero is a valid, inert `Bulkhead` (a cap of 0: it refuses every call); see
/// "Building in place" in the crate docs and [`Bulkhead::reset`].
#[repr(C)]
#[derive(Debug)]
pub struct Bulkhead {
    config: BulkheadConfig,
    in_flight: AtomicU64,
    acquired: Counter,
    rejected: Counter,
    /// The cap in force: `config.max_concurrent` until [`Bulkhead::set_max_concurrent`].
    cap: AtomicU64,
}

impl Bulkhead {
    /// An empty bulkhead, or the first invalid field of `config`.
    pub fn new(config: BulkheadConfig) -> Result<Self, ConfigError> {
        let mut b = Bulkhead {
            config: BulkheadConfig { max_concurrent: 0 },
            in_flight: AtomicU64::new(0),
            acquired: Counter::new(),
            rejected: Counter::new(),
            cap: AtomicU64::new(0),
        };
        b.reset(config)?;
        Ok(b)
    }

    /// Validate `config`, then put this bulkhead in exactly the state
    /// [`Bulkhead::new`]`(config)` gives, in place (permits still out are forgotten).
    /// On error nothing changes.
    pub fn reset(&mut self, config: BulkheadConfig) -> Result<(), ConfigError> {
        config.validate()?;
        self.config = config;
        set_mut(&mut self.in_flight, 0);
        self.acquired.reset();
        self.rejected.reset();
        set_mut(&mut self.cap, config.max_concurrent);
        Ok(())
    }

    /// The configuration this bulkhead was built with.
    pub fn config(&self) -> &BulkheadConfig {
        &self.config
    }

    /// Take a slot if one is free; otherwise refuse, reporting the count at the cap.
    #[inline]
    pub fn try_acquire(&self) -> Result<BulkheadPermit, BulkheadRejected> {
        let max = self.cap.load(Ordering::Relaxed);
        let mut cur = self.in_flight.load(Ordering::Relaxed);
        loop {
            if cur >= max {
                self.rejected.incr();
                return Err(BulkheadRejected {
                    in_flight: cur,
                    max_concurrent: max,
                });
            }
            // cur < max <= u32::MAX, so cur + 1 cannot overflow.
            match self.in_flight.compare_exchange_weak(
                cur,
                cur.saturating_add(1),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.acquired.incr();
                    return Ok(BulkheadPermit { _private: () });
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// [`Bulkhead::try_acquire`], with a guard that releases the permit when dropped.
    #[inline]
    pub fn try_acquire_scoped(&self) -> Result<BulkheadScope<'_>, BulkheadRejected> {
        self.try_acquire().map(|permit| BulkheadScope {
            bulkhead: self,
            permit: Some(permit),
        })
    }

    /// Give a slot back. Consumes the permit, so it cannot be released twice. The count
    /// never goes below zero, even if a permit from another bulkhead is passed by mistake.
    #[inline]
    pub fn release(&self, permit: BulkheadPermit) {
        let BulkheadPermit { _private: () } = permit;
        let mut cur = self.in_flight.load(Ordering::Relaxed);
        loop {
            if cur == 0 {
                return;
            }
            match self.in_flight.compare_exchange_weak(
                cur,
                cur.saturating_sub(1),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Give `permit` back, however the call ended: the call contract's bulkhead verdict is
    /// always [`BulkheadVerdict::Release`] (see [`crate::outcome`]). The same as
    /// [`Bulkhead::release`]; it exists so that every guard is reported to the same way.
    #[inline]
    pub fn report(&self, permit: BulkheadPermit, outcome: Outcome) -> BulkheadVerdict {
        match outcome.bulkhead() {
            BulkheadVerdict::Release => self.release(permit),
        }
        BulkheadVerdict::Release
    }

    /// Calls in flight right now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Free slots right now.
    pub fn available(&self) -> u64 {
        self.max_concurrent().saturating_sub(self.in_flight())
    }

    /// Counters and the in-flight gauge. Read without stopping traffic: the gauge first,
    /// then the counters, so that `released = acquired − in_flight` is never negative.
    pub fn stats(&self) -> BulkheadStats {
        let in_flight = self.in_flight();
        let acquired = self.acquired.get();
        BulkheadStats {
            acquired,
            rejected: self.rejected.get(),
            released: acquired.saturating_sub(in_flight),
            in_flight,
        }
    }

    /// The cap in force now: the config's `max_concurrent` unless
    /// [`Bulkhead::set_max_concurrent`] changed it ([`Bulkhead::config`] keeps the cap the
    /// bulkhead was built with).
    #[inline]
    pub fn max_concurrent(&self) -> u64 {
        self.cap.load(Ordering::Relaxed)
    }

    /// Change the cap at runtime, without touching the permits in flight: a cap raised
    /// admits at once; a cap lowered below the in-flight count admits nothing until enough
    /// permits come back. `0` is accepted (admit nothing: a fleet member with no share);
    /// above [`MAX_CONCURRENT_LIMIT`] is an error naming `max_concurrent`. Returns the cap
    /// it replaced.
    ///
    /// While a resize races acquisitions, the in-flight count stays at most the larger of
    /// the old and new caps; once the resize has returned, an acquisition that starts
    /// afterwards admits only under the new cap (`core/tests/loom_bulkhead_resize.rs`).
    pub fn set_max_concurrent(&self, max_concurrent: u64) -> Result<u64, ConfigError> {
        check_u64(
            "max_concurrent",
            max_concurrent,
            0,
            MAX_CONCURRENT_LIMIT,
            "0..=4294967295 calls",
        )?;
        Ok(self.cap.swap(max_concurrent, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ConfigErrorKind;
    use core::fmt::Write;

    /// A fixed buffer to format into without `alloc`.
    struct Buf {
        bytes: [u8; 64],
        len: usize,
    }

    impl Write for Buf {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let end = self.len + s.len();
            self.bytes
                .get_mut(self.len..end)
                .ok_or(fmt::Error)?
                .copy_from_slice(s.as_bytes());
            self.len = end;
            Ok(())
        }
    }

    fn bulkhead(max: u64) -> Bulkhead {
        Bulkhead::new(BulkheadConfig {
            max_concurrent: max,
        })
        .unwrap()
    }

    #[test]
    fn cap_and_release() {
        let b = bulkhead(2);
        let p1 = b.try_acquire().unwrap();
        let p2 = b.try_acquire().unwrap();
        assert_eq!(
            b.try_acquire(),
            Err(BulkheadRejected {
                in_flight: 2,
                max_concurrent: 2
            })
        );
        assert_eq!(b.available(), 0);
        b.release(p1);
        let p3 = b.try_acquire().unwrap();
        b.release(p2);
        b.release(p3);
        assert_eq!(
            b.stats(),
            BulkheadStats {
                acquired: 3,
                rejected: 1,
                released: 3,
                in_flight: 0
            }
        );
    }

    #[test]
    fn foreign_permit_cannot_underflow() {
        let a = bulkhead(1);
        let b = bulkhead(1);
        let p = a.try_acquire().unwrap();
        b.release(p);
        assert_eq!(b.in_flight(), 0);
        assert_eq!(b.stats().released, 0);
        assert_eq!(a.in_flight(), 1);
    }

    #[test]
    fn guard_releases_on_drop_and_can_detach() {
        let b = bulkhead(1);
        {
            let _g = b.try_acquire_scoped().unwrap();
            assert!(b.try_acquire_scoped().is_err());
        }
        assert_eq!(b.in_flight(), 0);
        let g = b.try_acquire_scoped().unwrap();
        let p = g.into_permit();
        assert_eq!(b.in_flight(), 1);
        b.release(p);
        assert_eq!(b.in_flight(), 0);
        assert_eq!(b.stats().released, 2);
    }

    #[test]
    fn littles_law_sizing() {
        let c = |r, p, h| BulkheadConfig::from_littles_law(r, Nanos(p), h);
        assert_eq!(c(315.0, 18_700_000, 2.0).unwrap().max_concurrent, 12);
        // 100/s × 120 ms × 1 = 12 exactly: not rounded up further.
        assert_eq!(c(100.0, 120_000_000, 1.0).unwrap().max_concurrent, 12);
        // A tiny product still gives one slot.
        assert_eq!(c(1.0, 1, 1.0).unwrap().max_concurrent, 1);
        // 315/s × 60 ms: Basketly's bound with C1's timeout, 18.9 -> 19.
        assert_eq!(c(315.0, 60_000_000, 1.0).unwrap().max_concurrent, 19);
        let err = |r, p, h| c(r, p, h).map(|_| ()).unwrap_err();
        assert_eq!(err(0.0, 1, 1.0).kind(), ConfigErrorKind::Zero);
        assert_eq!(err(f64::NAN, 1, 1.0).field(), "rate_per_sec");
        assert_eq!(err(1.0, 0, 1.0).field(), "p99");
        assert_eq!(err(1.0, 1, 0.5).kind(), ConfigErrorKind::OutOfRange);
        assert_eq!(err(1.0, 1, -2.0).kind(), ConfigErrorKind::Negative);
        let big = err(1e9, 3_600_000_000_000, 100.0);
        assert_eq!(
            (big.field(), big.kind()),
            ("max_concurrent", ConfigErrorKind::OutOfRange)
        );
    }

    #[test]
    fn config_validation() {
        assert_eq!(
            Bulkhead::new(BulkheadConfig { max_concurrent: 0 })
                .unwrap_err()
                .kind(),
            ConfigErrorKind::Zero
        );
        assert_eq!(
            BulkheadConfig {
                max_concurrent: MAX_CONCURRENT_LIMIT + 1
            }
            .validate()
            .unwrap_err()
            .kind(),
            ConfigErrorKind::OutOfRange
        );
        assert_eq!(BulkheadConfig::default().max_concurrent, 12);
        let full = BulkheadRejected {
            in_flight: 12,
            max_concurrent: 12,
        };
        let mut buf = Buf {
            bytes: [0; 64],
            len: 0,
        };
        write!(buf, "{full}").unwrap();
        assert_eq!(
            core::str::from_utf8(&buf.bytes[..buf.len]).unwrap(),
            "bulkhead full: 12 of 12 calls in flight"
        );
    }
}

#[cfg(test)]
mod parts_tests {
    use super::*;

    #[test]
    fn a_permit_goes_to_parts_and_back_and_never_below_zero() {
        let b = Bulkhead::new(BulkheadConfig { max_concurrent: 1 }).unwrap();
        let parts = b.try_acquire().unwrap().into_parts();
        assert_eq!(parts, BulkheadPermitParts);
        assert!(b.try_acquire().is_err());
        b.release(BulkheadPermit::from_parts(parts));
        assert_eq!(b.in_flight(), 0);
        b.release(BulkheadPermit::from_parts(parts));
        assert_eq!(b.in_flight(), 0);
        let again = b.try_acquire().unwrap();
        assert!(b.try_acquire().is_err());
        b.release(again);
    }
}
