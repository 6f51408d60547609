//! [`Limiter`]: enforce a concurrency limit — fixed or adaptive — without locks.
//!
//! A limiter counts the calls in flight and refuses a new one when the count has reached
//! the current limit. With an adaptive [`LimitConfig`] (AIMD, Vegas, Gradient2; see
//! [`crate::limit`]) every finished call reports a sample — its RTT and the in-flight
//! count when it started — and the limiter folds the samples of each window into the
//! algorithm, which publishes a new limit.
//!
//! # Why
//! A fixed cap goes stale as deploys, scaling and the dependency's own health change what
//! it can take; an adaptive limit follows them. The enforcement is the hot path of every
//! call, so it is one compare-and-swap loop on one counter; the algorithm's arithmetic
//! runs once per window, on one thread at a time, and no thread ever waits for it.
//!
//! # Acquire and release
//! [`Limiter::try_acquire`] admits a call when the total in flight is below the threshold
//! of the call's [`Priority`] (see *Partitions*), incrementing the count with one CAS.
//! The returned [`LimiterPermit`] is an owned, move-only value (no borrow of the limiter):
//! give it back exactly once with [`Limiter::report`] and the call's
//! [`Outcome`] (the call contract chooses the verdict, see
//! [`crate::outcome`]), or with one of the primitives it maps onto: [`Limiter::on_success`],
//! [`Limiter::on_dropped`] (the call timed out or was refused downstream: an overload
//! signal) or [`Limiter::on_ignore`] (the call says nothing about capacity, e.g. a client
//! error; no sample). In Rust,
//! [`Limiter::try_acquire_scoped`] gives a guard that reports `on_ignore` if it is dropped
//! unreported. A permit dropped without being given back leaks its slot; a permit given
//! back to a limiter that did not issue it is a bug, which the count survives (it never
//! wraps below zero) but cannot detect while other calls are in flight.
//!
//! # Partitions by priority
//! Each [`Priority`] level `p` has a [`PartitionConfig`] `{ share, max_in_flight }`. A
//! call of priority `p` is admitted while the *shared* in-flight count (all priorities
//! together) is below
//!
//! ```text
//! threshold(p) = min(max_in_flight[p], share[p] == 1 ? L : max(1, ⌊L × share[p]⌋))
//! ```
//!
//! where `L` is the current limit. `max_in_flight` gives fixed per-priority caps (e.g. 64
//! for views, 80 for reserves, with a fixed limit of 80); `share` reserves part of an
//! adaptive limit for more important traffic (e.g. `share = 0.9` for every priority but 0
//! keeps the last 10 % for priority 0). Shares and caps must not increase from more to
//! less important levels. A refused call gets a reason: [`LimitReached`] when the total
//! has reached `L`, [`PartitionCap`] when it has reached the level's `max_in_flight`
//! (checked first), [`ReservedForHigherPriority`] when only the level's share is used up.
//!
//! [`LimitReached`]: LimiterRejectReason::LimitReached
//! [`PartitionCap`]: LimiterRejectReason::PartitionCap
//! [`ReservedForHigherPriority`]: LimiterRejectReason::ReservedForHigherPriority
//!
//! # Retry-after hint
//! A rejection carries `retry_at`, an instant: `now` plus the hint [`Limiter::retry_after`],
//! a duration: the mean RTT of the last folded window, clamped to
//! `[min_retry_after, max_retry_after]` (and `min_retry_after` before any window has been
//! folded, or with a fixed limit). By then the calls that are in flight now have, on
//! average, finished, so a slot is likely to be free; retrying sooner mostly meets the same
//! full limit. [`LimiterRejected::retry_after`] gives the duration again from any `now`.
//!
//! # The window fold (how the limit adapts without a lock)
//! Finished calls add their sample to running totals that are never reset — RTT sum,
//! drop count and, last, with `Release`, the sample count — and raise a window maximum of
//! the in-flight count. The samples of the current window are the totals minus the
//! totals the previous fold read. A window is *due* when `now ≥ window_start + window`
//! and it holds at least `min_window_samples` samples. A control word holds
//! `sequence << 1 | busy`. The thread whose sample finds the window due loads the control
//! word; if the busy bit is clear it compare-and-swaps the *same* word to set the busy
//! bit. Exactly one thread can win that CAS for a given sequence number; a loser, or anyone
//! who finds the bit set, skips: it never waits, and its sample simply belongs to the next
//! window. The winner reads the totals (the count first, with `Acquire`), subtracts the
//! previous fold's, swaps the window maximum to zero, turns them into one
//! [`LimitSample`] (`rtt` = mean, `in_flight` = maximum, `dropped` = any drop), updates
//! the algorithm, whose state lives in a few atomic words only the busy-bit holder
//! touches, publishes the new limit and per-priority thresholds, starts the next window at
//! `now`, and finally stores `(sequence + 1) << 1` with `Release`, clearing the bit. The
//! next owner's `Acquire` CAS reads that store, so it sees every word the previous owner
//! wrote.
//!
//! On the hot path an acquire is one CAS loop on the in-flight count; a success is a
//! decrement, two adds (RTT, count), a load or two and, rarely, the fold. `acquired`,
//! `succeeded` and `dropped` in [`LimiterStats`] are derived from those totals rather
//! than counted separately, so two threads share as few written words as possible.
//!
//! Guarantees under concurrency: the in-flight count never goes above the threshold a
//! caller read during its `try_acquire` (the limit may be lowered while calls are in
//! flight; no call is admitted until the count is below the new one); each window is
//! folded at most once and the algorithm's updates never overlap; no sample is lost — a
//! sample that lands while a window is being folded may have its RTT or drop read by this
//! fold and its count by the next (so a window's mean can be off by that one sample); with
//! one thread the aggregation is exact and the limit sequence is fully determined by the
//! calls. The loom models in `core/tests/loom_limiter.rs` check each of these.
//!
//! # A ceiling from outside
//! [`Limiter::set_max_limit`] caps the limit at run time, whatever the algorithm says: the
//! fleet agent keeps a member's limiter at its share of a fleet-wide maximum this way. The
//! ceiling's per-priority thresholds live in their own words, written only by the setter;
//! an acquire takes the lower of the two thresholds of its priority (one more load), so
//! the fold and the setter never write the same word and neither waits for the other.
//!
//! # Examples
//! ```
//! use guards_core::limit::{AimdConfig, LimitConfig};
//! use guards_core::limiter::{Limiter, LimiterConfig, LimiterRejectReason};
//! use guards_core::{Nanos, Priority};
//!
//! let limiter = Limiter::new(LimiterConfig {
//!     limit: LimitConfig::Aimd(AimdConfig { initial_limit: 2, ..AimdConfig::default() }),
//!     min_window_samples: 1,
//!     ..LimiterConfig::default()
//! })?;
//! let t0 = Nanos::from_millis(1_000);
//! let a = limiter.try_acquire(t0, Priority::CRITICAL).expect("room for 2");
//! let b = limiter.try_acquire(t0, Priority::CRITICAL).expect("room for 2");
//! let refused = limiter.try_acquire(t0, Priority::CRITICAL).unwrap_err();
//! assert_eq!(refused.reason, LimiterRejectReason::LimitReached);
//!
//! // `a` timed out: the window is due and holds one sample, so AIMD halves the limit.
//! limiter.on_dropped(a, t0.saturating_add(Nanos::from_millis(60)));
//! assert_eq!(limiter.limit(), 1);
//! limiter.on_success(b, t0.saturating_add(Nanos::from_millis(70)));
//! assert_eq!(limiter.in_flight(), 0);
//! assert_eq!(limiter.stats().dropped, 1);
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//! - Netflix `concurrency-limits`: `SimpleLimiter` (a counter against the limit),
//!   `AbstractPartitionedLimiter` (percentage partitions, rounded up, at least 1),
//!   `WindowedLimit` (samples aggregated per window of 1 s with at least 10 samples,
//!   averaging RTT, keeping the maximum in-flight and whether anything dropped), and the
//!   `Listener` with `onSuccess` / `onDropped` / `onIgnore`. There a partition's share
//!   binds only once the whole limit is used; ours are strict thresholds on one shared
//!   count, rounded down, and a window without enough samples is extended rather than
//!   discarded.
//! - Basketly settings C5 (stock refuses views at 64 calls inside and reserves at 80) and
//!   C7 (adaptive limits), docs/basketly.md.
//! - Google SRE book, "Handling Overload": criticality levels, shedding the least
//!   critical first.

use core::fmt;

use crate::brownout::RefusalKind;
use crate::cache::CachePadded;
use crate::counter::Counter;
use crate::error::{check_f64_above, check_nanos, check_u64, inconsistent, ConfigError};
use crate::limit::{Limit, LimitAlgorithm, LimitConfig, LimitSample, StateWords, STATE_WORDS};
use crate::math;
use crate::outcome::{LimiterVerdict, Outcome};
use crate::priority::{Priority, MAX_PRIORITIES};
use crate::sync::{set_mut, AtomicU64, Ordering};
use crate::time::Nanos;

/// Default for [`LimiterConfig::window`]: 100 ms. Valid range: `1 ns..=1 day`.
pub const DEFAULT_WINDOW: Nanos = Nanos::from_millis(100);
/// Default for [`LimiterConfig::min_window_samples`]. Valid range: `1..=1_000_000`.
pub const DEFAULT_MIN_WINDOW_SAMPLES: u64 = 10;
/// Default for [`LimiterConfig::min_retry_after`]: 1 ms. Valid range: `0..=1 day`.
pub const DEFAULT_MIN_RETRY_AFTER: Nanos = Nanos::from_millis(1);
/// Default for [`LimiterConfig::max_retry_after`]: 1 s. Valid range:
/// `min_retry_after..=1 day`.
pub const DEFAULT_MAX_RETRY_AFTER: Nanos = Nanos::from_secs(1);
/// Default for [`PartitionConfig::share`]: the whole limit. Valid range: `0.0 < s <= 1.0`.
pub const DEFAULT_SHARE: f64 = 1.0;
/// Default for [`PartitionConfig::max_in_flight`]: no cap. Valid range: `1..=u64::MAX`.
pub const DEFAULT_MAX_IN_FLIGHT: u64 = u64::MAX;
/// The largest RTT one sample contributes to a window's mean (about 18 minutes), so that a
/// window's RTT sum stays exact (below 2^64) for any window of fewer than 2^24 samples.
pub const MAX_SAMPLE_RTT: Nanos = Nanos(1 << 40);

const ONE_DAY: Nanos = Nanos::from_secs(86_400);
const BUSY: u64 = 1;
/// In-flight counts at or above this can only come from a wrapped decrement.
const WRAPPED: u64 = 1 << 63;
/// The ceiling word when no ceiling is set.
const NO_CEILING: u64 = u64::MAX;
/// The largest ceiling [`Limiter::set_max_limit`] accepts.
const MAX_CEILING: u64 = u32::MAX as u64;

/// The field name of each class's [`PartitionConfig::share`], `partitions[i].share` at
/// index `i`: what a [`ConfigError`] about it names (bindings name their per-class
/// arguments alike).
pub const SHARE_FIELDS: [&str; MAX_PRIORITIES] = [
    "partitions[0].share",
    "partitions[1].share",
    "partitions[2].share",
    "partitions[3].share",
    "partitions[4].share",
    "partitions[5].share",
    "partitions[6].share",
    "partitions[7].share",
];
/// The field name of each class's [`PartitionConfig::max_in_flight`],
/// `partitions[i].max_in_flight` at index `i`: what a [`ConfigError`] about it names.
pub const CAP_FIELDS: [&str; MAX_PRIORITIES] = [
    "partitions[0].max_in_flight",
    "partitions[1].max_in_flight",
    "partitions[2].max_in_flight",
    "partitions[3].max_in_flight",
    "partitions[4].max_in_flight",
    "partitions[5].max_in_flight",
    "partitions[6].max_in_flight",
    "partitions[7].max_in_flight",
];

/// How one priority level shares the limit.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartitionConfig {
    /// Fraction of the current limit this level may fill (the rest is reserved for more
    /// important levels). Default [`DEFAULT_SHARE`].
    pub share: f64,
    /// A fixed cap on the shared in-flight count for this level. Default
    /// [`DEFAULT_MAX_IN_FLIGHT`] (none).
    pub max_in_flight: u64,
}

impl PartitionConfig {
    /// The whole limit, no cap.
    pub const DEFAULT: PartitionConfig = PartitionConfig {
        share: DEFAULT_SHARE,
        max_in_flight: DEFAULT_MAX_IN_FLIGHT,
    };

    /// A share of the limit, no cap.
    pub const fn share(share: f64) -> Self {
        PartitionConfig {
            share,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        }
    }

    /// A fixed cap, the whole limit otherwise.
    pub const fn cap(max_in_flight: u64) -> Self {
        PartitionConfig {
            share: DEFAULT_SHARE,
            max_in_flight,
        }
    }

    /// This level's threshold on the shared in-flight count when the limit is `limit`.
    pub fn threshold(&self, limit: u64) -> u64 {
        let shared = if self.share >= 1.0 {
            limit
        } else {
            math::to_u64_saturating(math::floor(limit as f64 * self.share)).max(1)
        };
        shared.min(self.max_in_flight)
    }
}

impl Default for PartitionConfig {
    fn default() -> Self {
        PartitionConfig::DEFAULT
    }
}

/// Default for [`LimiterConfig::partitions`]: every level may use the whole limit.
pub const DEFAULT_PARTITIONS: [PartitionConfig; MAX_PRIORITIES] =
    [PartitionConfig::DEFAULT; MAX_PRIORITIES];

/// Configuration of a [`Limiter`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimiterConfig {
    /// The limit: fixed, or an adaptive algorithm. Default [`LimitConfig::default`]
    /// (Vegas).
    pub limit: LimitConfig,
    /// Minimum length of a sampling window. Default [`DEFAULT_WINDOW`].
    pub window: Nanos,
    /// A window is folded only once it holds at least this many samples (it is extended
    /// until then). Default [`DEFAULT_MIN_WINDOW_SAMPLES`].
    pub min_window_samples: u64,
    /// Per-priority thresholds, indexed by [`Priority::index`]. Default
    /// [`DEFAULT_PARTITIONS`].
    pub partitions: [PartitionConfig; MAX_PRIORITIES],
    /// Lower bound of the retry-after hint. Default [`DEFAULT_MIN_RETRY_AFTER`].
    pub min_retry_after: Nanos,
    /// Upper bound of the retry-after hint. Default [`DEFAULT_MAX_RETRY_AFTER`].
    pub max_retry_after: Nanos,
}

impl Default for LimiterConfig {
    fn default() -> Self {
        LimiterConfig {
            limit: LimitConfig::default(),
            window: DEFAULT_WINDOW,
            min_window_samples: DEFAULT_MIN_WINDOW_SAMPLES,
            partitions: DEFAULT_PARTITIONS,
            min_retry_after: DEFAULT_MIN_RETRY_AFTER,
            max_retry_after: DEFAULT_MAX_RETRY_AFTER,
        }
    }
}

impl LimiterConfig {
    /// Check every field; the error names the first bad one. Errors inside `limit` name
    /// the algorithm's field (e.g. `backoff_ratio`); partition errors name
    /// `partitions[i].share` or `partitions[i].max_in_flight`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.limit.validate()?;
        check_nanos("window", self.window, Nanos(1), ONE_DAY, "1 ns..=1 day")?;
        check_u64(
            "min_window_samples",
            self.min_window_samples,
            1,
            1_000_000,
            "1..=1000000",
        )?;
        let mut prev = PartitionConfig::DEFAULT;
        for (i, p) in self.partitions.iter().enumerate() {
            let share_field = SHARE_FIELDS.get(i).copied().unwrap_or("partitions.share");
            let cap_field = CAP_FIELDS
                .get(i)
                .copied()
                .unwrap_or("partitions.max_in_flight");
            check_f64_above(share_field, p.share, 0.0, 1.0, "0.0 < share <= 1.0")?;
            check_u64(cap_field, p.max_in_flight, 1, u64::MAX, "1..=u64::MAX")?;
            if p.share > prev.share {
                return Err(inconsistent(
                    share_field,
                    "no more than the share of a more important priority",
                ));
            }
            if p.max_in_flight > prev.max_in_flight {
                return Err(inconsistent(
                    cap_field,
                    "no more than the cap of a more important priority",
                ));
            }
            prev = *p;
        }
        check_nanos(
            "min_retry_after",
            self.min_retry_after,
            Nanos::ZERO,
            ONE_DAY,
            "0..=1 day",
        )?;
        check_nanos(
            "max_retry_after",
            self.max_retry_after,
            Nanos::ZERO,
            ONE_DAY,
            "0..=1 day",
        )?;
        if self.max_retry_after < self.min_retry_after {
            return Err(inconsistent(
                "max_retry_after",
                "max_retry_after >= min_retry_after",
            ));
        }
        Ok(())
    }
}

/// Why [`Limiter::try_acquire`] refused a call.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimiterRejectReason {
    /// The calls in flight (all priorities) reached the current limit.
    LimitReached = 0,
    /// The calls in flight reached this priority's fixed `max_in_flight`.
    PartitionCap = 1,
    /// Below the limit, but the rest is reserved for more important priorities.
    ReservedForHigherPriority = 2,
}

named_enum!(LimiterRejectReason {
    LimitReached => "limit_reached",
    PartitionCap => "partition_cap",
    ReservedForHigherPriority => "reserved_for_higher_priority",
});

/// A refused call: why, and when trying again is worthwhile.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimiterRejected {
    /// Why.
    pub reason: LimiterRejectReason,
    /// The priority that asked.
    pub priority: Priority,
    /// An instant (same clock as `now`): retry no sooner than this. It is the refusal's
    /// `now` plus the limiter's hint (see the module docs for how it is derived).
    pub retry_at: Nanos,
    /// The threshold this priority was held to.
    pub threshold: u64,
    /// The calls in flight when it was refused.
    pub in_flight: u64,
}

impl LimiterRejected {
    /// The brownout refusal kind of this refusal: [`RefusalKind::BulkheadFull`] (a local
    /// concurrency limit is full; the call was not sent).
    pub const fn refusal_kind(&self) -> RefusalKind {
        RefusalKind::BulkheadFull
    }

    /// A duration: how long from `now` until [`LimiterRejected::retry_at`] (zero if it has
    /// passed).
    pub const fn retry_after(&self, now: Nanos) -> Nanos {
        self.retry_at.saturating_sub(now)
    }
}

impl fmt::Display for LimiterRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "concurrency limit: {} ({} in flight, threshold {}), retry at {}",
            self.reason.name(),
            self.in_flight,
            self.threshold,
            self.retry_at
        )
    }
}

impl core::error::Error for LimiterRejected {}

/// One admitted call. Owned and move-only: give it back exactly once with
/// [`Limiter::on_success`], [`Limiter::on_dropped`] or [`Limiter::on_ignore`].
/// Dropping it without doing so leaks one slot of the limit.
#[repr(C)]
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a permit holds a slot until it is given back with on_success / on_dropped / on_ignore"]
pub struct LimiterPermit {
    start: Nanos,
    in_flight: u64,
    threshold: u64,
    priority: Priority,
}

impl LimiterPermit {
    /// When the call was admitted.
    pub fn start(&self) -> Nanos {
        self.start
    }

    /// Calls in flight right after this one was admitted (including itself).
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// The threshold it was admitted under (`in_flight() <= threshold()` always).
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    /// Its priority.
    pub fn priority(&self) -> Priority {
        self.priority
    }
}

/// A [`LimiterPermit`] (or an [`crate::admission::AdmissionPermit`]) taken apart into
/// plain data ([`LimiterPermit::into_parts`]), to be kept where a permit cannot go (a
/// record in shared memory, another process) and rebuilt with [`LimiterPermit::from_parts`].
///
/// # Rebuilding is not minting
///
/// Parts are `Copy`; a permit is move-only so that a call is given back once. Whoever
/// rebuilds permits takes over that duty: rebuild each permit once, from the parts of a
/// permit this limiter issued and that was not given back (a take-once permit table, as
/// `guards-ffi`'s shared regions keep, does exactly that). Memory safety never depends on
/// it (a permit is plain data), and a wrong rebuild is bounded by the limiter: giving back
/// a permit it did not issue finds the in-flight count at zero and leaves it there (see
/// `release_slot`: the count never wraps, so nobody is ever over-admitted), and the parts'
/// `start` only feeds one latency sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LimiterPermitParts {
    /// When the call was admitted ([`LimiterPermit::start`]).
    pub start: Nanos,
    /// Calls in flight right after it was admitted ([`LimiterPermit::in_flight`]).
    pub in_flight: u64,
    /// The threshold it was admitted under ([`LimiterPermit::threshold`]).
    pub threshold: u64,
    /// Its priority.
    pub priority: Priority,
}

impl LimiterPermit {
    /// Take the permit apart into plain data (see [`LimiterPermitParts`] for what that
    /// hands over to the caller).
    pub const fn into_parts(self) -> LimiterPermitParts {
        LimiterPermitParts {
            start: self.start,
            in_flight: self.in_flight,
            threshold: self.threshold,
            priority: self.priority,
        }
    }

    /// Rebuild a permit from the parts [`LimiterPermit::into_parts`] gave (once per permit
    /// taken apart: see [`LimiterPermitParts`]).
    pub const fn from_parts(parts: LimiterPermitParts) -> LimiterPermit {
        LimiterPermit {
            start: parts.start,
            in_flight: parts.in_flight,
            threshold: parts.threshold,
            priority: parts.priority,
        }
    }
}

/// Counters and gauges of a [`Limiter`], read without stopping traffic.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LimiterStats {
    /// Calls admitted (derived: in flight + given back).
    pub acquired: u64,
    /// Refusals because the limit was reached.
    pub rejected_limit_reached: u64,
    /// Refusals because a priority's fixed cap was reached.
    pub rejected_partition_cap: u64,
    /// Refusals because the rest of the limit is reserved for more important priorities.
    pub rejected_reserved: u64,
    /// Calls refused (any reason), by priority level.
    pub rejected_by_priority: [u64; MAX_PRIORITIES],
    /// Permits given back with `on_success`.
    pub succeeded: u64,
    /// Permits given back with `on_dropped`.
    pub dropped: u64,
    /// Permits given back with `on_ignore`.
    pub ignored: u64,
    /// Windows folded into the algorithm.
    pub windows: u64,
    /// Folds that changed the (integer) limit.
    pub limit_changes: u64,
    /// Times a due window was left to a thread already folding it.
    pub folds_skipped: u64,
    /// The current limit.
    pub limit: u64,
    /// Calls in flight now.
    pub in_flight: u64,
}

impl LimiterStats {
    /// All refusals.
    pub fn rejected(&self) -> u64 {
        self.rejected_limit_reached
            .wrapping_add(self.rejected_partition_cap)
            .wrapping_add(self.rejected_reserved)
    }
}

/// The words every admitted call writes.
#[repr(C)]
#[derive(Debug)]
struct Hot {
    in_flight: AtomicU64,
    /// Samples (successes and drops) ever recorded; never reset.
    samples: AtomicU64,
    /// Drops ever recorded; never reset.
    drops: AtomicU64,
    /// Sum of sample RTTs ever recorded (adaptive limits only), wrapping.
    rtt_sum: AtomicU64,
    /// The largest in-flight count of the current window; swapped to 0 by the fold.
    window_max_in_flight: AtomicU64,
}

/// A lock-free concurrency limiter; see the [module documentation](self).
///
/// All bytes zero is a valid, unconfigured `Limiter` (a fixed limit of 0 and thresholds of 0:
/// it refuses every call): safe to call, meant to be [`reset`](Limiter::reset) before use;
/// see "Building in place" in the crate docs.
#[repr(C)]
#[derive(Debug)]
pub struct Limiter {
    config: LimiterConfig,
    // Read on every call, written once per fold at most.
    limit: AtomicU64,
    thresholds: [AtomicU64; MAX_PRIORITIES],
    /// The ceiling set from outside ([`Limiter::set_max_limit`]); `u64::MAX`: none.
    ceiling: AtomicU64,
    /// Each priority's threshold under the ceiling; only the setter writes them.
    ceiling_thresholds: [AtomicU64; MAX_PRIORITIES],
    /// `sequence << 1 | BUSY`.
    ctl: AtomicU64,
    window_start: AtomicU64,
    /// `samples`, `drops` and `rtt_sum` as the last fold read them (owner-written).
    folded_samples: AtomicU64,
    folded_drops: AtomicU64,
    folded_rtt_sum: AtomicU64,
    last_rtt: AtomicU64,
    state: [AtomicU64; STATE_WORDS],
    /// Written on every call, on cache lines of their own (the words above are read on
    /// every call and the counters below are written on refusals).
    hot: CachePadded<Hot>,
    // Written on refusals and rare events.
    rejected_limit_reached: Counter,
    rejected_partition_cap: Counter,
    rejected_reserved: Counter,
    rejected_by_priority: [Counter; MAX_PRIORITIES],
    ignored: Counter,
    windows: Counter,
    limit_changes: Counter,
    folds_skipped: Counter,
}

impl Limiter {
    /// A limiter at the algorithm's initial limit, with nothing in flight.
    pub fn new(config: LimiterConfig) -> Result<Self, ConfigError> {
        let mut l = Limiter {
            config: LimiterConfig::default(),
            limit: AtomicU64::new(0),
            thresholds: core::array::from_fn(|_| AtomicU64::new(0)),
            ceiling: AtomicU64::new(0),
            ceiling_thresholds: core::array::from_fn(|_| AtomicU64::new(0)),
            ctl: AtomicU64::new(0),
            window_start: AtomicU64::new(0),
            folded_samples: AtomicU64::new(0),
            folded_drops: AtomicU64::new(0),
            folded_rtt_sum: AtomicU64::new(0),
            last_rtt: AtomicU64::new(0),
            state: core::array::from_fn(|_| AtomicU64::new(0)),
            hot: CachePadded::new(Hot {
                in_flight: AtomicU64::new(0),
                samples: AtomicU64::new(0),
                drops: AtomicU64::new(0),
                rtt_sum: AtomicU64::new(0),
                window_max_in_flight: AtomicU64::new(0),
            }),
            rejected_limit_reached: Counter::new(),
            rejected_partition_cap: Counter::new(),
            rejected_reserved: Counter::new(),
            rejected_by_priority: core::array::from_fn(|_| Counter::new()),
            ignored: Counter::new(),
            windows: Counter::new(),
            limit_changes: Counter::new(),
            folds_skipped: Counter::new(),
        };
        l.reset(config)?;
        Ok(l)
    }

    /// Validate `config`, then put this limiter in exactly the state
    /// [`Limiter::new`]`(config)` gives (the algorithm's initial limit, nothing in flight,
    /// zeroed counters), in place. Permits still out are forgotten: giving one back later
    /// is a foreign release, which the count survives. On error nothing changes.
    pub fn reset(&mut self, config: LimiterConfig) -> Result<(), ConfigError> {
        config.validate()?;
        let algorithm = Limit::new(config.limit)?;
        let words = algorithm.to_words();
        let limit = algorithm.limit();
        self.config = config;
        set_mut(&mut self.limit, limit);
        for (t, p) in self.thresholds.iter_mut().zip(config.partitions.iter()) {
            set_mut(t, p.threshold(limit));
        }
        set_mut(&mut self.ceiling, NO_CEILING);
        for t in &mut self.ceiling_thresholds {
            set_mut(t, u64::MAX);
        }
        for a in [
            &mut self.ctl,
            &mut self.window_start,
            &mut self.folded_samples,
            &mut self.folded_drops,
            &mut self.folded_rtt_sum,
            &mut self.last_rtt,
        ] {
            set_mut(a, 0);
        }
        for (a, w) in self.state.iter_mut().zip(words) {
            set_mut(a, w);
        }
        let hot = &mut *self.hot;
        for a in [
            &mut hot.in_flight,
            &mut hot.samples,
            &mut hot.drops,
            &mut hot.rtt_sum,
            &mut hot.window_max_in_flight,
        ] {
            set_mut(a, 0);
        }
        for c in [
            &mut self.rejected_limit_reached,
            &mut self.rejected_partition_cap,
            &mut self.rejected_reserved,
            &mut self.ignored,
            &mut self.windows,
            &mut self.limit_changes,
            &mut self.folds_skipped,
        ] {
            c.reset();
        }
        for c in &mut self.rejected_by_priority {
            c.reset();
        }
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &LimiterConfig {
        &self.config
    }

    /// The current limit: the algorithm's, or the ceiling set by
    /// [`Limiter::set_max_limit`] when that is lower.
    pub fn limit(&self) -> u64 {
        self.limit
            .load(Ordering::Relaxed)
            .min(self.ceiling.load(Ordering::Relaxed))
    }

    /// The algorithm's own limit, whatever the ceiling.
    pub fn algorithm_limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }

    /// The ceiling set by [`Limiter::set_max_limit`], or `None` (the default, and after
    /// [`Limiter::clear_max_limit`]).
    pub fn max_limit(&self) -> Option<u64> {
        match self.ceiling.load(Ordering::Relaxed) {
            NO_CEILING => None,
            c => Some(c),
        }
    }

    /// Cap the limit at `max_limit` (`0..=2^32 − 1`; 0 refuses every call) from outside,
    /// at run time, whatever the algorithm says: the fleet agent sets this member's share
    /// of a fleet-wide maximum here. Each priority's threshold becomes the lower of its
    /// threshold under the algorithm's limit and under `max_limit` (the same partition
    /// rule). Permits in flight are kept: a ceiling lowered below the calls in flight
    /// admits nothing until they drain below it. The algorithm keeps adapting beneath the
    /// ceiling (its samples never show more in flight than the ceiling allows). Returns
    /// the previous ceiling (`None`: there was none).
    ///
    /// Lock-free; calls racing each other end with the thresholds of the ceiling stored
    /// last (each call rewrites them until the ceiling it read is still the one in force).
    /// An acquire racing the call may still be admitted under the old thresholds; one
    /// that starts after the call returned (and is ordered after it) sees the new ones.
    pub fn set_max_limit(&self, max_limit: u64) -> Result<Option<u64>, ConfigError> {
        check_u64(
            "max_limit",
            max_limit,
            0,
            MAX_CEILING,
            "0..=4294967295 calls",
        )?;
        Ok(self.store_ceiling(max_limit))
    }

    /// Remove the ceiling of [`Limiter::set_max_limit`]: the algorithm's limit rules
    /// again. Returns the previous ceiling.
    pub fn clear_max_limit(&self) -> Option<u64> {
        self.store_ceiling(NO_CEILING)
    }

    fn store_ceiling(&self, ceiling: u64) -> Option<u64> {
        // AcqRel swap and AcqRel re-read (a read-modify-write reads the latest ceiling):
        // a setter whose re-read sees its own ceiling is synchronised with the next setter's
        // swap, so its threshold stores come before that setter's in every word's order.
        let old = self.ceiling.swap(ceiling, Ordering::AcqRel);
        let mut c = ceiling;
        loop {
            for (t, p) in self
                .ceiling_thresholds
                .iter()
                .zip(self.config.partitions.iter())
            {
                let v = if c == NO_CEILING {
                    u64::MAX
                } else {
                    p.threshold(c).min(c)
                };
                t.store(v, Ordering::Relaxed);
            }
            let now = self.ceiling.fetch_add(0, Ordering::AcqRel);
            if now == c {
                break;
            }
            c = now;
        }
        (old != NO_CEILING).then_some(old)
    }

    /// Calls in flight now.
    pub fn in_flight(&self) -> u64 {
        self.hot.in_flight.load(Ordering::Relaxed)
    }

    /// The current threshold of `priority` on the shared in-flight count.
    pub fn threshold(&self, priority: Priority) -> u64 {
        let i = priority.index();
        let own = self
            .thresholds
            .get(i)
            .map_or(0, |t| t.load(Ordering::Relaxed));
        let ceiling = self
            .ceiling_thresholds
            .get(i)
            .map_or(0, |t| t.load(Ordering::Relaxed));
        own.min(ceiling)
    }

    /// A duration: the retry-after hint a rejection would carry now (its `retry_at` is the
    /// refusal's `now` plus this).
    pub fn retry_after(&self) -> Nanos {
        let c = &self.config;
        let rtt = Nanos(self.last_rtt.load(Ordering::Relaxed));
        if rtt.is_zero() {
            c.min_retry_after
        } else {
            rtt.min_of(c.max_retry_after).max(c.min_retry_after)
        }
    }

    /// Admit a call of `priority` at `now`, or refuse it. Lock-free: one CAS loop on the
    /// in-flight count, retried only when another thread changed the count meanwhile.
    pub fn try_acquire(
        &self,
        now: Nanos,
        priority: Priority,
    ) -> Result<LimiterPermit, LimiterRejected> {
        let threshold = self.threshold(priority);
        let mut current = self.hot.in_flight.load(Ordering::Relaxed);
        loop {
            if current >= threshold {
                return Err(self.reject(now, priority, threshold, current));
            }
            // `current < threshold <= u64::MAX`, so `current + 1` cannot overflow.
            match self.hot.in_flight.compare_exchange_weak(
                current,
                current + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(actual) => current = actual,
            }
        }
        Ok(LimiterPermit {
            start: now,
            in_flight: current + 1,
            threshold,
            priority,
        })
    }

    /// [`Limiter::try_acquire`] with a scope that gives the permit back with
    /// `on_ignore` if it is dropped without an explicit outcome.
    pub fn try_acquire_scoped(
        &self,
        now: Nanos,
        priority: Priority,
    ) -> Result<LimiterScope<'_>, LimiterRejected> {
        self.try_acquire(now, priority).map(|permit| LimiterScope {
            limiter: self,
            permit: Some(permit),
        })
    }

    /// Give `permit` back with how the call ended, at `now`: the call contract decides
    /// ([`Outcome::limiter`], the table in [`crate::outcome`]) whether it is a sample
    /// ([`on_success`](Self::on_success): the RTT is measured here, from the permit's start
    /// to `now`), a drop ([`on_dropped`](Self::on_dropped): timeouts and "slow
    /// down"/"overloaded" answers) or nothing ([`on_ignore`](Self::on_ignore)). Returns the
    /// verdict applied.
    pub fn report(&self, permit: LimiterPermit, outcome: Outcome, now: Nanos) -> LimiterVerdict {
        let verdict = outcome.limiter();
        match verdict {
            LimiterVerdict::Success => self.on_success(permit, now),
            LimiterVerdict::Dropped => self.on_dropped(permit, now),
            LimiterVerdict::Ignore => self.on_ignore(permit),
        }
        verdict
    }

    /// The call succeeded at `now`: free its slot and record its RTT.
    pub fn on_success(&self, permit: LimiterPermit, now: Nanos) {
        self.finish(&permit, now, false);
    }

    /// The call was dropped at `now` (timeout, 429/503, overload): free its slot and
    /// record an overload sample.
    pub fn on_dropped(&self, permit: LimiterPermit, now: Nanos) {
        self.finish(&permit, now, true);
    }

    /// The call says nothing about capacity (e.g. it failed on bad input): free its slot,
    /// record no sample.
    pub fn on_ignore(&self, permit: LimiterPermit) {
        let LimiterPermit { .. } = permit;
        self.ignored.incr();
        self.release_slot();
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> LimiterStats {
        // Derived rather than counted, to keep the hot path to the fewest shared writes.
        let ignored = self.ignored.get();
        let drops = self.hot.drops.load(Ordering::Relaxed);
        let samples = self.hot.samples.load(Ordering::Relaxed);
        let in_flight = self.in_flight();
        LimiterStats {
            acquired: in_flight.wrapping_add(samples).wrapping_add(ignored),
            rejected_limit_reached: self.rejected_limit_reached.get(),
            rejected_partition_cap: self.rejected_partition_cap.get(),
            rejected_reserved: self.rejected_reserved.get(),
            rejected_by_priority: core::array::from_fn(|i| {
                self.rejected_by_priority.get(i).map_or(0, Counter::get)
            }),
            succeeded: samples.saturating_sub(drops),
            dropped: drops,
            ignored,
            windows: self.windows.get(),
            limit_changes: self.limit_changes.get(),
            folds_skipped: self.folds_skipped.get(),
            limit: self.limit(),
            in_flight,
        }
    }

    fn reject(
        &self,
        now: Nanos,
        priority: Priority,
        threshold: u64,
        in_flight: u64,
    ) -> LimiterRejected {
        let cap = self
            .config
            .partitions
            .get(priority.index())
            .map_or(u64::MAX, |p| p.max_in_flight);
        let reason = if in_flight >= cap {
            self.rejected_partition_cap.incr();
            LimiterRejectReason::PartitionCap
        } else if in_flight >= self.limit() {
            self.rejected_limit_reached.incr();
            LimiterRejectReason::LimitReached
        } else {
            self.rejected_reserved.incr();
            LimiterRejectReason::ReservedForHigherPriority
        };
        if let Some(c) = self.rejected_by_priority.get(priority.index()) {
            c.incr();
        }
        LimiterRejected {
            reason,
            priority,
            retry_at: now.saturating_add(self.retry_after()),
            threshold,
            in_flight,
        }
    }

    /// Decrement the in-flight count with one `fetch_sub`. Giving back a permit this
    /// limiter did not issue is a bug, and must not wrap the count (which would refuse
    /// everything after): a decrement that finds the count at zero, or already wrapped by
    /// another such decrement (at or above 2^63, far beyond any real count), adds its one
    /// back at once. So a foreign release is a no-op; meanwhile the count reads as huge
    /// and callers are refused, never over-admitted.
    fn release_slot(&self) {
        let prev = self.hot.in_flight.fetch_sub(1, Ordering::Relaxed);
        if prev == 0 || prev >= WRAPPED {
            self.hot.in_flight.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn finish(&self, permit: &LimiterPermit, now: Nanos, dropped: bool) {
        self.release_slot();
        if self.config.limit.algorithm() == LimitAlgorithm::Fixed {
            if dropped {
                self.hot.drops.fetch_add(1, Ordering::Relaxed);
            }
            self.hot.samples.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let rtt = now.saturating_sub(permit.start).min_of(MAX_SAMPLE_RTT);
        // RTT, drop and in-flight first; the sample count last with Release, so whoever
        // reads the count with Acquire also sees this sample's other fields.
        self.hot.rtt_sum.fetch_add(rtt.0, Ordering::Relaxed);
        if dropped {
            self.hot.drops.fetch_add(1, Ordering::Relaxed);
        }
        // Most samples do not raise the window's maximum: a load spares the RMW.
        if permit.in_flight > self.hot.window_max_in_flight.load(Ordering::Relaxed) {
            self.hot
                .window_max_in_flight
                .fetch_max(permit.in_flight, Ordering::Relaxed);
        }
        self.hot.samples.fetch_add(1, Ordering::Release);
        self.try_fold(now);
    }

    /// Fold the current window into the algorithm if it is due and nobody else is doing
    /// it. Never waits.
    fn try_fold(&self, now: Nanos) {
        // Cheap early exit for the common case (window not over yet); checked again below
        // in the order that makes the decision consistent.
        let window = self.config.window;
        if now < Nanos(self.window_start.load(Ordering::Relaxed)).saturating_add(window) {
            return;
        }
        let c = self.ctl.load(Ordering::Acquire);
        if c & BUSY != 0 {
            return;
        }
        let start = Nanos(self.window_start.load(Ordering::Relaxed));
        if now < start.saturating_add(window) {
            return;
        }
        let pending = self
            .hot
            .samples
            .load(Ordering::Relaxed)
            .wrapping_sub(self.folded_samples.load(Ordering::Relaxed));
        if pending < self.config.min_window_samples {
            return;
        }
        if self
            .ctl
            .compare_exchange(c, c | BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.folds_skipped.incr();
            return;
        }

        // We own the window and the algorithm state until the Release store below. The
        // count is read first (Acquire): every sample it includes has its RTT and drop
        // in the sums read after it.
        let samples_now = self.hot.samples.load(Ordering::Acquire);
        let rtt_now = self.hot.rtt_sum.load(Ordering::Relaxed);
        let drops_now = self.hot.drops.load(Ordering::Relaxed);
        let max_in_flight = self.hot.window_max_in_flight.swap(0, Ordering::Relaxed);
        let samples = samples_now.wrapping_sub(self.folded_samples.load(Ordering::Relaxed));
        let rtt_sum = rtt_now.wrapping_sub(self.folded_rtt_sum.load(Ordering::Relaxed));
        let drops = drops_now.wrapping_sub(self.folded_drops.load(Ordering::Relaxed));
        self.folded_samples.store(samples_now, Ordering::Relaxed);
        self.folded_rtt_sum.store(rtt_now, Ordering::Relaxed);
        self.folded_drops.store(drops_now, Ordering::Relaxed);
        let mean_rtt = rtt_sum.checked_div(samples).unwrap_or(0);
        let sample = LimitSample {
            now,
            rtt: Nanos(mean_rtt),
            in_flight: max_in_flight,
            dropped: drops > 0,
        };

        let mut words: StateWords = [0; STATE_WORDS];
        for (w, a) in words.iter_mut().zip(self.state.iter()) {
            *w = a.load(Ordering::Relaxed);
        }
        let mut algorithm = Limit::from_words(&self.config.limit, &words);
        let new_limit = algorithm.update(sample);
        for (w, a) in algorithm.to_words().iter().zip(self.state.iter()) {
            a.store(*w, Ordering::Relaxed);
        }

        self.last_rtt.store(mean_rtt, Ordering::Relaxed);
        if new_limit != self.limit.load(Ordering::Relaxed) {
            self.limit.store(new_limit, Ordering::Relaxed);
            for (t, p) in self.thresholds.iter().zip(self.config.partitions.iter()) {
                t.store(p.threshold(new_limit), Ordering::Relaxed);
            }
            self.limit_changes.incr();
        }
        self.window_start.store(now.0, Ordering::Relaxed);
        self.windows.incr();
        // Clear the busy bit and advance the sequence in one store.
        self.ctl.store(c.wrapping_add(2), Ordering::Release);
    }
}

/// A permit that gives itself back with `on_ignore` when dropped without an outcome.
/// Rust convenience over [`LimiterPermit`]; it borrows the limiter.
#[derive(Debug)]
#[must_use = "dropping the scope at once frees the slot again"]
pub struct LimiterScope<'a> {
    limiter: &'a Limiter,
    permit: Option<LimiterPermit>,
}

impl LimiterScope<'_> {
    /// The permit held (always `Some` until an outcome is reported).
    pub fn permit(&self) -> Option<&LimiterPermit> {
        self.permit.as_ref()
    }

    /// Report success at `now`.
    pub fn success(mut self, now: Nanos) {
        if let Some(p) = self.permit.take() {
            self.limiter.on_success(p, now);
        }
    }

    /// Report a drop at `now`.
    pub fn dropped(mut self, now: Nanos) {
        if let Some(p) = self.permit.take() {
            self.limiter.on_dropped(p, now);
        }
    }

    /// Report how the call ended at `now` ([`Limiter::report`]).
    pub fn report(mut self, outcome: Outcome, now: Nanos) {
        if let Some(p) = self.permit.take() {
            self.limiter.report(p, outcome, now);
        }
    }

    /// Report that the call says nothing about capacity.
    pub fn ignore(self) {
        drop(self);
    }

    /// Take the permit out, to give it back later by hand.
    pub fn into_permit(mut self) -> Option<LimiterPermit> {
        self.permit.take()
    }
}

impl Drop for LimiterScope<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.permit.take() {
            self.limiter.on_ignore(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::{AimdConfig, VegasConfig};
    use crate::ConfigErrorKind;
    use heapless::Vec;

    fn fixed(n: u64) -> LimiterConfig {
        LimiterConfig {
            limit: LimitConfig::Fixed(n),
            ..LimiterConfig::default()
        }
    }

    #[test]
    fn fixed_limit_admits_up_to_the_limit() {
        let l = Limiter::new(fixed(2)).unwrap();
        let a = l.try_acquire(Nanos(0), Priority::CRITICAL).unwrap();
        let b = l.try_acquire(Nanos(0), Priority::CRITICAL).unwrap();
        assert_eq!((a.in_flight(), b.in_flight()), (1, 2));
        let r = l.try_acquire(Nanos(0), Priority::CRITICAL).unwrap_err();
        assert_eq!(r.reason, LimiterRejectReason::LimitReached);
        assert_eq!(r.retry_after(Nanos(0)), DEFAULT_MIN_RETRY_AFTER);
        assert_eq!((r.in_flight, r.threshold), (2, 2));
        l.on_success(a, Nanos(5));
        l.on_ignore(b);
        let s = l.stats();
        assert_eq!((s.acquired, s.rejected(), s.in_flight), (2, 1, 0));
        assert_eq!((s.succeeded, s.ignored, s.windows), (1, 1, 0));
        assert_eq!(s.rejected_by_priority[1], 1);
    }

    #[test]
    fn basketly_thresholds_64_and_80() {
        let mut cfg = fixed(80);
        cfg.partitions = [PartitionConfig::cap(64); MAX_PRIORITIES];
        cfg.partitions[0] = PartitionConfig::cap(80);
        let l = Limiter::new(cfg).unwrap();
        let mut permits: Vec<LimiterPermit, 128> = Vec::new();
        for _ in 0..64 {
            permits
                .push(l.try_acquire(Nanos(0), Priority::SHEDDABLE).unwrap())
                .unwrap();
        }
        let v = l.try_acquire(Nanos(0), Priority::SHEDDABLE).unwrap_err();
        assert_eq!(v.reason, LimiterRejectReason::PartitionCap);
        for _ in 0..16 {
            permits
                .push(l.try_acquire(Nanos(0), Priority::CRITICAL_PLUS).unwrap())
                .unwrap();
        }
        let r = l
            .try_acquire(Nanos(0), Priority::CRITICAL_PLUS)
            .unwrap_err();
        assert_eq!(r.reason, LimiterRejectReason::PartitionCap);
        for p in permits {
            l.on_ignore(p);
        }
        assert_eq!(l.in_flight(), 0);
    }

    #[test]
    fn shares_reserve_capacity() {
        let mut cfg = fixed(10);
        cfg.partitions = [PartitionConfig::share(0.9); MAX_PRIORITIES];
        cfg.partitions[0] = PartitionConfig::DEFAULT;
        let l = Limiter::new(cfg).unwrap();
        assert_eq!(l.threshold(Priority::CRITICAL), 9);
        assert_eq!(l.threshold(Priority::CRITICAL_PLUS), 10);
        let mut permits: Vec<LimiterPermit, 128> = Vec::new();
        for _ in 0..9 {
            permits
                .push(l.try_acquire(Nanos(0), Priority::CRITICAL).unwrap())
                .unwrap();
        }
        let r = l.try_acquire(Nanos(0), Priority::CRITICAL).unwrap_err();
        assert_eq!(r.reason, LimiterRejectReason::ReservedForHigherPriority);
        permits
            .push(l.try_acquire(Nanos(0), Priority::CRITICAL_PLUS).unwrap())
            .unwrap();
        let r = l
            .try_acquire(Nanos(0), Priority::CRITICAL_PLUS)
            .unwrap_err();
        assert_eq!(r.reason, LimiterRejectReason::LimitReached);
        assert_eq!(l.stats().rejected_reserved, 1);
        for p in permits {
            l.on_ignore(p);
        }
    }

    #[test]
    fn thresholds_round_down_but_never_below_one() {
        assert_eq!(PartitionConfig::share(0.5).threshold(1), 1);
        assert_eq!(PartitionConfig::share(0.5).threshold(5), 2);
        assert_eq!(PartitionConfig::share(1.0).threshold(u64::MAX), u64::MAX);
        assert_eq!(PartitionConfig::cap(3).threshold(100), 3);
        assert_eq!(
            PartitionConfig {
                share: 0.5,
                max_in_flight: 3
            }
            .threshold(100),
            3
        );
    }

    #[test]
    fn window_folds_after_time_and_samples() {
        let l = Limiter::new(LimiterConfig {
            limit: LimitConfig::Aimd(AimdConfig::default()),
            min_window_samples: 2,
            ..LimiterConfig::default()
        })
        .unwrap();
        let t = Nanos::from_millis(100);
        let a = l.try_acquire(t, Priority::CRITICAL).unwrap();
        let b = l.try_acquire(t, Priority::CRITICAL).unwrap();
        l.on_success(a, t.saturating_add(Nanos::from_millis(4)));
        assert_eq!(l.stats().windows, 0); // one sample < 2
        l.on_dropped(b, t.saturating_add(Nanos::from_millis(6)));
        let s = l.stats();
        assert_eq!((s.windows, s.limit, s.limit_changes), (1, 5, 1));
        // The mean RTT (5 ms) is now the retry-after hint.
        assert_eq!(l.retry_after(), Nanos::from_millis(5));
    }

    #[test]
    fn scope_reports_ignore_on_drop() {
        let l = Limiter::new(fixed(1)).unwrap();
        {
            let s = l.try_acquire_scoped(Nanos(0), Priority::CRITICAL).unwrap();
            assert_eq!(s.permit().map(LimiterPermit::in_flight), Some(1));
            assert!(l.try_acquire_scoped(Nanos(0), Priority::CRITICAL).is_err());
        }
        assert_eq!(l.stats().ignored, 1);
        l.try_acquire_scoped(Nanos(0), Priority::CRITICAL)
            .unwrap()
            .success(Nanos(1));
        l.try_acquire_scoped(Nanos(0), Priority::CRITICAL)
            .unwrap()
            .dropped(Nanos(1));
        let p = l
            .try_acquire_scoped(Nanos(0), Priority::CRITICAL)
            .unwrap()
            .into_permit()
            .unwrap();
        assert_eq!(l.in_flight(), 1);
        l.on_success(p, Nanos(2));
        let s = l.stats();
        assert_eq!(
            (s.succeeded, s.dropped, s.ignored, s.in_flight),
            (2, 1, 1, 0)
        );
    }

    #[test]
    fn double_foreign_release_is_undone() {
        let a = Limiter::new(fixed(2)).unwrap();
        let b = Limiter::new(fixed(2)).unwrap();
        let p = a.try_acquire(Nanos(0), Priority::CRITICAL).unwrap();
        let q = a.try_acquire(Nanos(0), Priority::CRITICAL).unwrap();
        // Simulate the interleaving: two wrapped decrements, then their undos.
        b.hot.in_flight.fetch_sub(1, Ordering::Relaxed);
        b.on_ignore(p);
        b.hot.in_flight.fetch_add(1, Ordering::Relaxed);
        assert_eq!(b.in_flight(), 0);
        b.on_ignore(q);
        assert_eq!(b.in_flight(), 0);
    }

    #[test]
    fn foreign_permit_does_not_wrap_the_count() {
        let a = Limiter::new(fixed(1)).unwrap();
        let b = Limiter::new(fixed(1)).unwrap();
        let p = a.try_acquire(Nanos(0), Priority::CRITICAL).unwrap();
        b.on_ignore(p);
        assert_eq!(b.in_flight(), 0);
        assert!(b.try_acquire(Nanos(0), Priority::CRITICAL).is_ok());
    }

    #[test]
    fn rejects_bad_config() {
        let d = LimiterConfig::default();
        let e = |c: LimiterConfig| c.validate().unwrap_err();
        assert_eq!(
            e(LimiterConfig {
                window: Nanos::ZERO,
                ..d
            })
            .field(),
            "window"
        );
        let mut c = d;
        c.partitions[3].share = 0.0;
        assert_eq!(e(c).field(), "partitions[3].share");
        let mut c = d;
        c.partitions[0].share = 0.5;
        assert_eq!(e(c).field(), "partitions[1].share");
        assert_eq!(e(c).kind(), ConfigErrorKind::Inconsistent);
        let mut c = d;
        c.partitions[2].max_in_flight = 10;
        c.partitions[5].max_in_flight = 11;
        assert_eq!(e(c).field(), "partitions[3].max_in_flight");
        let c = LimiterConfig {
            min_retry_after: Nanos(5),
            max_retry_after: Nanos(4),
            ..d
        };
        assert_eq!(e(c).field(), "max_retry_after");
        let c = LimiterConfig {
            limit: LimitConfig::Vegas(VegasConfig {
                smoothing: f64::NAN,
                ..VegasConfig::default()
            }),
            ..d
        };
        assert_eq!(e(c).field(), "smoothing");
        assert!(Limiter::new(c).is_err());
    }
}

#[cfg(test)]
mod parts_tests {
    use super::*;

    fn fixed(n: u64) -> Limiter {
        Limiter::new(LimiterConfig {
            limit: LimitConfig::Fixed(n),
            ..LimiterConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn a_permit_goes_to_parts_and_back() {
        let l = fixed(4);
        let p = l.try_acquire(Nanos(5), Priority::SHEDDABLE).unwrap();
        let parts = p.into_parts();
        assert_eq!(parts.start, Nanos(5));
        assert_eq!(parts.in_flight, 1);
        assert_eq!(parts.threshold, 4);
        assert_eq!(parts.priority, Priority::SHEDDABLE);
        let rebuilt = LimiterPermit::from_parts(parts);
        assert_eq!(rebuilt.start(), Nanos(5));
        assert_eq!(rebuilt.priority(), Priority::SHEDDABLE);
        assert_eq!(l.in_flight(), 1);
        l.on_success(rebuilt, Nanos(9));
        assert_eq!(l.in_flight(), 0);
    }

    #[test]
    fn a_rebuilt_permit_it_never_issued_cannot_wrap_the_count() {
        let l = fixed(2);
        let p = l.try_acquire(Nanos(0), Priority::CRITICAL).unwrap();
        let parts = p.into_parts();
        l.on_ignore(LimiterPermit::from_parts(parts));
        // A second rebuild of the same parts: the count is already zero and stays there.
        l.on_ignore(LimiterPermit::from_parts(parts));
        assert_eq!(l.in_flight(), 0);
        let a = l.try_acquire(Nanos(1), Priority::CRITICAL).unwrap();
        let b = l.try_acquire(Nanos(1), Priority::CRITICAL).unwrap();
        assert!(l.try_acquire(Nanos(1), Priority::CRITICAL).is_err());
        l.on_ignore(a);
        l.on_ignore(b);
    }
}
