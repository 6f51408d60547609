//! [`LatencyTracker`]: lock-free streaming latency percentiles over a sliding time window,
//! and timeouts proposed from them.
//!
//! Record every call's latency with [`LatencyTracker::record`]; read any quantile (P50, P95,
//! P99, P99.9, ...) of the recent past with [`LatencyTracker::quantile`] or
//! [`LatencyTracker::summary`]; ask for a timeout set the way operators are told to set
//! one — a padded high percentile of healthy latency — with
//! [`LatencyTracker::propose_timeout`], and check a candidate with
//! [`LatencyTracker::false_timeout_rate`].
//!
//! # Why
//!
//! A timeout or a hedge delay guessed once goes stale with every deploy. Both should come
//! from the dependency's measured latency: a timeout near twice the P99.9 of healthy calls
//! (at most about 0.1% false timeouts, padded so a small slowdown doesn't turn into a
//! wave of timeouts), a hedge after the P95. That needs percentiles that are cheap to
//! update on every call, from many threads, without a lock or an allocation, with a known
//! error.
//!
//! # How it works
//!
//! - **Log-linear buckets** (the layout HdrHistogram made popular). Values below 32 ns
//!   have a bucket each; above that, every power-of-two range `[2^e, 2^(e+1))` is split
//!   into 32 equal sub-buckets. A bucket's width is at most 1/32 of its lower bound, and a
//!   read reports the bucket's midpoint, so a reported quantile is within
//!   [`RELATIVE_ERROR`] = 1/64 (1.5625%) of the exact sample quantile. `B` buckets cover
//!   latencies up to [`max_trackable`]`(B)`; the default 1,152 buckets reach 2^40 ns
//!   (about 18 minutes). Larger values are clamped into the last bucket and counted in
//!   [`LatencyTrackerStats::saturated`].
//! - **A ring of `W` windows** of [`LatencyTrackerConfig::window`] each. Time slot
//!   `s = now / window` lives in ring position `s mod W`; reads merge the `W` most recent
//!   slots (the current, partial one included), so the default 6 × 10 s covers the last
//!   50–60 s. Nothing is cleared eagerly: a ring position is reset when it is reused.
//! - **Quantile definition** (nearest rank): with `n` samples in the merged windows, the
//!   `q`-quantile is the sample of rank `max(1, ceil(q·n))` in sorted order; the tracker
//!   returns the midpoint of that sample's bucket.
//!
//! # Concurrency
//!
//! Each bucket of each window is one `AtomicU64` holding a 32-bit *lap tag* (which turn of
//! the ring, `s / W`, the count belongs to) and a 32-bit count. [`record`] is one
//! compare-and-swap loop on one word (plus a relaxed stats counter): if the tag is the
//! current lap it adds one; if the word holds an older lap, or is empty, it replaces it
//! with `(current lap, 1)` — that is the reset of a reused window, done per word in the
//! same atomic step as the increment, so no count can slip between a reset and an add; if
//! the word already holds a *newer* lap (this caller's `now` lags a whole ring behind
//! another thread's), the record is dropped and counted in
//! [`LatencyTrackerStats::stale`] rather than added to the wrong window. Hence, under any
//! interleaving:
//!
//! - a record whose window is the newest its ring position has seen is never lost;
//! - a record is never counted in a window other than its own;
//! - counts saturate at 2^32 − 1 per bucket per window instead of overflowing into the tag.
//!
//! Reads load every word of the ring with relaxed ordering and never block writers: a read
//! concurrent with records sees each of them or not, bucket by bucket. Tags compare with
//! wrapping 32-bit arithmetic; a ring position left untouched for 2^31 turns of the ring
//! (at least 68 years, since a window is at least 1 s) could be mistaken for a newer one.
//!
//! [`record`]: LatencyTracker::record
//!
//! # Examples
//! ```
//! use guards_core::latency_tracker::{LatencyTracker, LatencyTrackerConfig};
//! use guards_core::Nanos;
//!
//! let tracker: LatencyTracker = LatencyTracker::new(LatencyTrackerConfig::default())?;
//! let now = Nanos::from_secs(100);
//! // 1,000 healthy calls: 1 ms, 2 ms, ..., 1000 ms.
//! for i in 1..=1_000 {
//!     tracker.record(now, Nanos::from_millis(i));
//! }
//! let p99 = tracker.quantile(now, 0.99).unwrap();
//! let exact = 990_000_000.0; // the 990th smallest sample
//! assert!((p99.as_u64() as f64 - exact).abs() <= exact / 64.0);
//! // Timeout = 2 × P99.9 (the defaults), once at least 1,000 samples are in.
//! let timeout = tracker.propose_timeout(now).unwrap();
//! assert!(timeout >= Nanos::from_millis(1_960) && timeout <= Nanos::from_millis(2_030));
//! // Nothing recorded is slower than that timeout.
//! assert_eq!(tracker.false_timeout_rate(now, timeout), Some(0.0));
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//! - G. Tene, HdrHistogram: a histogram whose buckets are powers of two split into linear
//!   sub-buckets, giving a fixed relative precision over a wide range.
//! - C. Masson, J. Rim, H. K. Lee, "DDSketch: a fast and fully-mergeable quantile sketch
//!   with relative-error guarantees", VLDB 2019: why relative error is the right accuracy
//!   measure for latency quantiles.
//! - AWS Builders' Library, "Timeouts, retries, and backoff with jitter": choose the
//!   false-timeout rate you accept (e.g. 0.1%), read that percentile of healthy latency
//!   (P99.9) and pad it.
//! - J. Dean, L. A. Barroso, "The Tail at Scale", CACM 2013: hedge after a high percentile
//!   of expected latency (see `hedging`).

use core::fmt;

use crate::counter::Counter;
use crate::error::{check_f64, check_f64_above, check_nanos, check_u64, ConfigError};
use crate::math;
use crate::outcome::{LatencyVerdict, Outcome};
use crate::sync::{set_mut, AtomicU64, Ordering};
use crate::time::Nanos;

/// log2 of the number of linear sub-buckets per power of two.
pub const SUB_BUCKET_BITS: u32 = 5;
/// Linear sub-buckets per power of two (32).
pub const SUB_BUCKETS: usize = 1 << SUB_BUCKET_BITS;
/// Bound on the relative error of every quantile the tracker reports, against the exact
/// nearest-rank sample quantile: half a bucket width over the bucket's lower bound, 1/64.
pub const RELATIVE_ERROR: f64 = 1.0 / 64.0;
/// Buckets needed to cover every `u64` value; a tracker may have at most this many.
pub const MAX_BUCKETS: usize = (65 - SUB_BUCKET_BITS as usize) * SUB_BUCKETS;
/// Default bucket count (`B`): latencies up to 2^40 ns (about 18.3 minutes) are tracked
/// within [`RELATIVE_ERROR`]. Valid range: `1..=MAX_BUCKETS` (1,920).
pub const DEFAULT_BUCKETS: usize = 1_152;
/// Default number of windows in the ring (`W`). Valid range: `1..=64`.
pub const DEFAULT_WINDOWS: usize = 6;
/// Largest ring a tracker may have.
pub const MAX_WINDOWS: usize = 64;

/// Default for [`LatencyTrackerConfig::window`]: 10 s, so the default ring of 6 covers
/// the last 50–60 s. Valid range: `1 s..=1 day`.
pub const DEFAULT_WINDOW: Nanos = Nanos::from_secs(10);
/// Smallest [`LatencyTrackerConfig::window`]: 1 s.
pub const MIN_WINDOW: Nanos = Nanos::from_secs(1);
/// Largest [`LatencyTrackerConfig::window`]: 1 day.
pub const MAX_WINDOW: Nanos = Nanos::from_secs(86_400);
/// Default for [`LatencyTrackerConfig::timeout_quantile`]: P99.9, i.e. accept 0.1% false
/// timeouts. Valid range: `0.0 < q <= 1.0`.
pub const DEFAULT_TIMEOUT_QUANTILE: f64 = 0.999;
/// Default for [`LatencyTrackerConfig::timeout_factor`]: 2 × the quantile.
/// Valid range: `1.0..=100.0`.
pub const DEFAULT_TIMEOUT_FACTOR: f64 = 2.0;
/// Default for [`LatencyTrackerConfig::min_samples`]: a P99.9 needs at least 1,000
/// samples to mean anything. Valid range: `1..=10^12`.
pub const DEFAULT_MIN_SAMPLES: u64 = 1_000;

/// Configuration of a [`LatencyTracker`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyTrackerConfig {
    /// Length of one window of the ring. Reads merge the last `W` windows.
    /// Default [`DEFAULT_WINDOW`]; valid `1 s..=1 day`.
    pub window: Nanos,
    /// Which quantile of healthy latency [`LatencyTracker::propose_timeout`] starts from.
    /// Default [`DEFAULT_TIMEOUT_QUANTILE`] (P99.9); valid `0.0 < q <= 1.0`.
    pub timeout_quantile: f64,
    /// Padding factor applied to that quantile. Default [`DEFAULT_TIMEOUT_FACTOR`];
    /// valid `1.0..=100.0`.
    pub timeout_factor: f64,
    /// Fewest samples in the merged windows before a timeout is proposed.
    /// Default [`DEFAULT_MIN_SAMPLES`]; valid `1..=10^12`.
    pub min_samples: u64,
}

impl Default for LatencyTrackerConfig {
    fn default() -> Self {
        LatencyTrackerConfig {
            window: DEFAULT_WINDOW,
            timeout_quantile: DEFAULT_TIMEOUT_QUANTILE,
            timeout_factor: DEFAULT_TIMEOUT_FACTOR,
            min_samples: DEFAULT_MIN_SAMPLES,
        }
    }
}

impl LatencyTrackerConfig {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_nanos("window", self.window, MIN_WINDOW, MAX_WINDOW, "1 s..=1 day")?;
        check_f64_above(
            "timeout_quantile",
            self.timeout_quantile,
            0.0,
            1.0,
            "0.0 < q <= 1.0",
        )?;
        check_f64(
            "timeout_factor",
            self.timeout_factor,
            1.0,
            100.0,
            "1.0..=100.0",
        )?;
        check_u64(
            "min_samples",
            self.min_samples,
            1,
            1_000_000_000_000,
            "1..=10^12",
        )?;
        Ok(())
    }
}

/// Counters of a [`LatencyTracker`] (plain snapshot).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatencyTrackerStats {
    /// Samples added to a window (including saturated ones).
    pub recorded: u64,
    /// Samples above the largest trackable value, clamped into the last bucket.
    pub saturated: u64,
    /// Samples dropped because their window had already been reused by a later one
    /// (the caller's `now` lagged a whole ring behind).
    pub stale: u64,
}

/// Several quantiles read in one pass (see [`LatencyTracker::summary`]). With `count == 0`
/// every value is zero.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatencySummary {
    /// Samples in the merged windows.
    pub count: u64,
    /// Median.
    pub p50: Nanos,
    /// 95th percentile.
    pub p95: Nanos,
    /// 99th percentile.
    pub p99: Nanos,
    /// 99.9th percentile.
    pub p999: Nanos,
    /// Largest sample (its bucket's midpoint).
    pub max: Nanos,
}

/// The bucket a value falls in (not clamped to any tracker's bucket count).
///
/// Values below 32 map to themselves; a value `v` with highest set bit `e >= 5` maps to
/// `(e − 4)·32 + (v >> (e − 5)) − 32`.
#[inline]
pub const fn bucket_index(value: u64) -> usize {
    if value < SUB_BUCKETS as u64 {
        return value as usize;
    }
    let e = 63 - value.leading_zeros();
    let shift = e - SUB_BUCKET_BITS;
    let sub = (value >> shift) as usize - SUB_BUCKETS;
    (shift as usize + 1) * SUB_BUCKETS + sub
}

/// Smallest value in bucket `index` (`index < MAX_BUCKETS`; larger indexes saturate).
#[inline]
pub const fn bucket_lower(index: usize) -> u64 {
    let index = if index >= MAX_BUCKETS {
        MAX_BUCKETS - 1
    } else {
        index
    };
    if index < SUB_BUCKETS {
        return index as u64;
    }
    let group = index / SUB_BUCKETS;
    let sub = index % SUB_BUCKETS;
    ((SUB_BUCKETS + sub) as u64) << (group - 1)
}

/// Number of values in bucket `index` (1 below 64, then doubling every 32 buckets).
#[inline]
pub const fn bucket_width(index: usize) -> u64 {
    let index = if index >= MAX_BUCKETS {
        MAX_BUCKETS - 1
    } else {
        index
    };
    if index < SUB_BUCKETS {
        1
    } else {
        1 << (index / SUB_BUCKETS - 1)
    }
}

/// Largest value in bucket `index`.
#[inline]
pub const fn bucket_upper(index: usize) -> u64 {
    bucket_lower(index) + (bucket_width(index) - 1)
}

/// The value reported for a bucket: its midpoint, `lower + width / 2`.
#[inline]
pub const fn bucket_value(index: usize) -> u64 {
    bucket_lower(index) + bucket_width(index) / 2
}

/// Largest latency (ns) a tracker with `buckets` buckets records without clamping.
#[inline]
pub const fn max_trackable(buckets: usize) -> u64 {
    if buckets == 0 {
        0
    } else {
        bucket_upper(buckets - 1)
    }
}

// --- tagged counter words: (lap tag: 32 bits | count: 32 bits) --------------------------
// Shared with `adaptive_throttle`, whose sliding-window buckets use the same protocol.

const COUNT_MASK: u64 = 0xFFFF_FFFF;

#[inline]
pub(crate) const fn pack(tag: u32, count: u32) -> u64 {
    ((tag as u64) << 32) | count as u64
}

#[inline]
pub(crate) const fn tag_of(word: u64) -> u32 {
    (word >> 32) as u32
}

#[inline]
pub(crate) const fn count_of(word: u64) -> u32 {
    (word & COUNT_MASK) as u32
}

/// Whether lap tag `a` is later than `b`, comparing with wrap-around.
#[inline]
const fn is_later(a: u32, b: u32) -> bool {
    let d = a.wrapping_sub(b);
    d != 0 && d < (1 << 31)
}

/// Add one to the count of `word` for lap `tag`, resetting the word if it holds an older
/// lap or nothing. Returns `false` (and changes nothing) if the word holds a later lap.
#[inline]
pub(crate) fn tagged_increment(word: &AtomicU64, tag: u32) -> bool {
    let mut current = word.load(Ordering::Relaxed);
    loop {
        let stored_tag = tag_of(current);
        let count = count_of(current);
        let next = if stored_tag == tag {
            pack(tag, count.saturating_add(1))
        } else if count == 0 || is_later(tag, stored_tag) {
            pack(tag, 1)
        } else {
            return false;
        };
        match word.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(seen) => current = seen,
        }
    }
}

/// The count `word` holds for lap `tag` (zero if it holds another lap).
#[inline]
pub(crate) fn tagged_count(word: &AtomicU64, tag: u32) -> u64 {
    let w = word.load(Ordering::Relaxed);
    if tag_of(w) == tag {
        u64::from(count_of(w))
    } else {
        0
    }
}

/// Nearest-rank position of quantile `q` among `total` samples: `max(1, ceil(q·total))`.
/// `None` if `total == 0` or `q` is not in `[0, 1]`.
pub(crate) fn rank_of(q: f64, total: u64) -> Option<u64> {
    if total == 0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let r = math::to_u64_saturating(math::ceil(q * total as f64));
    Some(r.clamp(1, total))
}

/// Streaming percentiles over a ring of `W` time windows, `B` log-linear buckets each.
///
/// Lock-free: [`record`](Self::record) is one CAS loop on one word; reads never block. See
/// the [module docs](self) for the layout, the error bound and the concurrency guarantees.
/// Memory is `W × B × 8` bytes (55 KiB with the defaults), fixed, inline, pointer-free.
/// All bytes zero is a valid, unconfigured tracker (a window of 0 that keeps every sample
/// in one window): safe to call, meant to be [`reset`](LatencyTracker::reset) before use;
/// see "Building in place" in the crate docs.
#[repr(C)]
pub struct LatencyTracker<const W: usize = DEFAULT_WINDOWS, const B: usize = DEFAULT_BUCKETS> {
    config: LatencyTrackerConfig,
    windows: [[AtomicU64; B]; W],
    recorded: Counter,
    saturated: Counter,
    stale: Counter,
}

impl<const W: usize, const B: usize> fmt::Debug for LatencyTracker<W, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LatencyTracker")
            .field("windows", &W)
            .field("buckets", &B)
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl<const W: usize, const B: usize> LatencyTracker<W, B> {
    /// Compile-time check of the shape: `1 <= W <= MAX_WINDOWS`, `1 <= B <= MAX_BUCKETS`.
    const SHAPE_OK: () = {
        assert!(W >= 1 && W <= MAX_WINDOWS, "W must be in 1..=64");
        assert!(B >= 1 && B <= MAX_BUCKETS, "B must be in 1..=1920");
    };

    /// A tracker with no samples, or the first invalid config field.
    pub fn new(config: LatencyTrackerConfig) -> Result<Self, ConfigError> {
        #[allow(clippy::let_unit_value)]
        let () = Self::SHAPE_OK;
        config.validate()?;
        Ok(LatencyTracker {
            config,
            windows: core::array::from_fn(|_| core::array::from_fn(|_| AtomicU64::new(0))),
            recorded: Counter::new(),
            saturated: Counter::new(),
            stale: Counter::new(),
        })
    }

    /// Validate `config`, then put this tracker in exactly the state
    /// [`LatencyTracker::new`]`(config)` gives (no samples, zeroed counters): the `W × B`
    /// words are cleared one by one, in place. On error nothing changes.
    pub fn reset(&mut self, config: LatencyTrackerConfig) -> Result<(), ConfigError> {
        #[allow(clippy::let_unit_value)]
        let () = Self::SHAPE_OK;
        config.validate()?;
        self.config = config;
        for word in self.windows.iter_mut().flatten() {
            set_mut(word, 0);
        }
        self.recorded.reset();
        self.saturated.reset();
        self.stale.reset();
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &LatencyTrackerConfig {
        &self.config
    }

    /// Largest latency recorded without clamping ([`max_trackable`]`(B)`).
    pub const fn max_trackable(&self) -> Nanos {
        Nanos(max_trackable(B))
    }

    /// Counter snapshot.
    pub fn stats(&self) -> LatencyTrackerStats {
        LatencyTrackerStats {
            recorded: self.recorded.get(),
            saturated: self.saturated.get(),
            stale: self.stale.get(),
        }
    }

    #[inline]
    fn slot(&self, now: Nanos) -> u64 {
        now.0.checked_div(self.config.window.0).unwrap_or(0)
    }

    /// Record one latency observed at `now`. Lock-free.
    ///
    /// Latencies above [`max_trackable`](Self::max_trackable) are clamped into the last
    /// bucket and counted as `saturated`. A sample whose window has already been reused by
    /// a later one is dropped and counted as `stale`.
    #[inline]
    pub fn record(&self, now: Nanos, latency: Nanos) {
        let slot = self.slot(now);
        let position = (slot % W as u64) as usize;
        let tag = (slot / W as u64) as u32;
        let mut bucket = bucket_index(latency.0);
        if bucket >= B {
            bucket = B - 1;
            self.saturated.incr();
        }
        let Some(word) = self.windows.get(position).and_then(|w| w.get(bucket)) else {
            return;
        };
        if tagged_increment(word, tag) {
            self.recorded.incr();
        } else {
            self.stale.incr();
        }
    }

    /// Record how a call that started at `started_at` ended, at `now`, by the call contract
    /// ([`Outcome::latency`]): answers (`Success`, `Permanent`) record `now − started_at`;
    /// so do `Timeout` and `Cancelled`, whose time so far is a lower bound of the real
    /// latency; fast failures and calls that never reached the dependency record nothing.
    /// Returns the verdict applied.
    #[inline]
    pub fn report(&self, now: Nanos, started_at: Nanos, outcome: Outcome) -> LatencyVerdict {
        let verdict = outcome.latency();
        if verdict == LatencyVerdict::Record {
            self.record(now, now.saturating_sub(started_at));
        }
        verdict
    }

    /// Merge the last `W` windows at `now` into `out` (one count per bucket); returns the
    /// total.
    fn merge(&self, now: Nanos, out: &mut [u64; B]) -> u64 {
        let slot = self.slot(now);
        let w = W as u64;
        let current = slot % w;
        let mut total = 0u64;
        for (position, window) in self.windows.iter().enumerate() {
            // How many windows ago ring position `position` was current.
            let back = (current + w - position as u64) % w;
            let Some(s) = slot.checked_sub(back) else {
                continue;
            };
            let tag = (s / w) as u32;
            for (acc, word) in out.iter_mut().zip(window.iter()) {
                let c = tagged_count(word, tag);
                *acc += c;
                total += c;
            }
        }
        total
    }

    /// Samples in the windows merged at `now` (the last `W`, the current one included).
    pub fn count(&self, now: Nanos) -> u64 {
        let mut counts = [0u64; B];
        self.merge(now, &mut counts)
    }

    /// The `q`-quantile (`0.0..=1.0`) of the samples in the last `W` windows at `now`,
    /// within [`RELATIVE_ERROR`] of the exact nearest-rank sample quantile.
    ///
    /// `None` if there are no samples or `q` is NaN or outside `[0, 1]`.
    pub fn quantile(&self, now: Nanos, q: f64) -> Option<Nanos> {
        let mut counts = [0u64; B];
        let total = self.merge(now, &mut counts);
        quantile_of(&counts, total, q)
    }

    /// The number of samples in the merged windows and their `q`-quantile, in one pass.
    pub fn count_and_quantile(&self, now: Nanos, q: f64) -> (u64, Option<Nanos>) {
        let mut counts = [0u64; B];
        let total = self.merge(now, &mut counts);
        (total, quantile_of(&counts, total, q))
    }

    /// Count, P50, P95, P99, P99.9 and max in one pass over the ring.
    pub fn summary(&self, now: Nanos) -> LatencySummary {
        let mut counts = [0u64; B];
        let total = self.merge(now, &mut counts);
        let at = |q: f64| quantile_of(&counts, total, q).unwrap_or(Nanos::ZERO);
        LatencySummary {
            count: total,
            p50: at(0.5),
            p95: at(0.95),
            p99: at(0.99),
            p999: at(0.999),
            max: at(1.0),
        }
    }

    /// The timeout the configured method proposes at `now`:
    /// `timeout_factor × quantile(timeout_quantile)`, rounded to the nanosecond.
    ///
    /// With the defaults that is 2 × P99.9, the padding the AWS Builders' Library suggests
    /// when P99.9 is close to the median and for network distance. `None` while fewer than
    /// `min_samples` samples are in the merged windows.
    pub fn propose_timeout(&self, now: Nanos) -> Option<Nanos> {
        let mut counts = [0u64; B];
        let total = self.merge(now, &mut counts);
        if total < self.config.min_samples {
            return None;
        }
        let q = quantile_of(&counts, total, self.config.timeout_quantile)?;
        let padded = math::round(q.0 as f64 * self.config.timeout_factor);
        Some(Nanos(math::to_u64_saturating(padded)))
    }

    /// Fraction of the samples in the merged windows that a timeout of `timeout` would
    /// have cut off: samples whose bucket midpoint is above `timeout`.
    ///
    /// Consistent with [`quantile`](Self::quantile): `false_timeout_rate(quantile(q)) <=
    /// 1 − q`. Exact when `timeout + 1` is a bucket boundary; otherwise the samples of the
    /// bucket holding `timeout` are attributed by its midpoint. `None` with no samples.
    pub fn false_timeout_rate(&self, now: Nanos, timeout: Nanos) -> Option<f64> {
        let mut counts = [0u64; B];
        let total = self.merge(now, &mut counts);
        if total == 0 {
            return None;
        }
        let above: u64 = counts
            .iter()
            .enumerate()
            .filter(|(i, _)| bucket_value(*i) > timeout.0)
            .map(|(_, c)| *c)
            .sum();
        Some(above as f64 / total as f64)
    }
}

/// Nearest-rank quantile over merged bucket counts.
fn quantile_of(counts: &[u64], total: u64, q: f64) -> Option<Nanos> {
    let rank = rank_of(q, total)?;
    let mut cumulative = 0u64;
    for (i, c) in counts.iter().enumerate() {
        cumulative += *c;
        if cumulative >= rank {
            return Some(Nanos(bucket_value(i)));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker() -> LatencyTracker {
        LatencyTracker::new(LatencyTrackerConfig::default()).unwrap()
    }

    #[test]
    fn bucket_layout_is_continuous_and_bounded() {
        // Every bucket starts right after the previous one ends.
        for i in 1..MAX_BUCKETS {
            assert_eq!(bucket_lower(i), bucket_upper(i - 1) + 1, "bucket {i}");
        }
        assert_eq!(bucket_upper(MAX_BUCKETS - 1), u64::MAX);
        assert_eq!(max_trackable(DEFAULT_BUCKETS), (1u64 << 40) - 1);
        // bucket_index inverts the bounds.
        for i in 0..MAX_BUCKETS {
            assert_eq!(bucket_index(bucket_lower(i)), i);
            assert_eq!(bucket_index(bucket_upper(i)), i);
            assert_eq!(bucket_index(bucket_value(i)), i);
            // Half a width over the lower bound is the stated error bound.
            let lo = bucket_lower(i);
            if lo > 0 {
                assert!((bucket_width(i) / 2) as f64 / lo as f64 <= RELATIVE_ERROR);
            }
        }
        assert_eq!(bucket_index(0), 0);
        assert_eq!(bucket_index(63), 63);
        assert_eq!(bucket_index(64), 64);
        assert_eq!(bucket_index(65), 64);
        assert_eq!(bucket_index(u64::MAX), MAX_BUCKETS - 1);
    }

    #[test]
    fn tagged_words() {
        let w = AtomicU64::new(0);
        assert!(tagged_increment(&w, 7));
        assert!(tagged_increment(&w, 7));
        assert_eq!(tagged_count(&w, 7), 2);
        assert_eq!(tagged_count(&w, 6), 0);
        // A later lap resets the word.
        assert!(tagged_increment(&w, 8));
        assert_eq!(tagged_count(&w, 8), 1);
        // An earlier lap is refused and changes nothing.
        assert!(!tagged_increment(&w, 7));
        assert_eq!(w.load(Ordering::Relaxed), pack(8, 1));
        // Wrap-around: lap 0 comes after lap u32::MAX.
        let w = AtomicU64::new(pack(u32::MAX, 3));
        assert!(tagged_increment(&w, 0));
        assert_eq!(tagged_count(&w, 0), 1);
        // Counts saturate instead of spilling into the tag.
        let w = AtomicU64::new(pack(1, u32::MAX));
        assert!(tagged_increment(&w, 1));
        assert_eq!(w.load(Ordering::Relaxed), pack(1, u32::MAX));
        // An empty word is claimed by any lap.
        let w = AtomicU64::new(pack(9, 0));
        assert!(tagged_increment(&w, 2));
        assert_eq!(tagged_count(&w, 2), 1);
    }

    #[test]
    fn ranks() {
        assert_eq!(rank_of(0.5, 0), None);
        assert_eq!(rank_of(f64::NAN, 10), None);
        assert_eq!(rank_of(1.5, 10), None);
        assert_eq!(rank_of(-0.1, 10), None);
        assert_eq!(rank_of(0.0, 10), Some(1));
        assert_eq!(rank_of(0.5, 10), Some(5));
        assert_eq!(rank_of(0.51, 10), Some(6));
        assert_eq!(rank_of(1.0, 10), Some(10));
        assert_eq!(rank_of(0.999, 1000), Some(999));
    }

    #[test]
    fn windows_rotate_and_expire() {
        let t = tracker();
        let w = DEFAULT_WINDOW.0;
        t.record(Nanos(0), Nanos(10));
        t.record(Nanos(5 * w + 1), Nanos(20));
        assert_eq!(t.count(Nanos(5 * w + 1)), 2);
        // Slot 6 reuses ring position 0: the sample of slot 0 leaves the merge.
        assert_eq!(t.count(Nanos(6 * w)), 1);
        t.record(Nanos(6 * w), Nanos(30));
        assert_eq!(t.count(Nanos(6 * w)), 2);
        assert_eq!(t.quantile(Nanos(6 * w), 1.0), Some(Nanos(30)));
        // A late sample for slot 0 in a bucket slot 6 has reused is stale now.
        t.record(Nanos(1), Nanos(30));
        assert_eq!(t.stats().stale, 1);
        assert_eq!(t.stats().recorded, 3);
        // In a bucket slot 6 has not touched, it still lands in its own (expired) window.
        t.record(Nanos(2), Nanos(10));
        assert_eq!(t.stats().recorded, 4);
        assert_eq!(t.count(Nanos(6 * w)), 2);
        assert_eq!(t.count(Nanos(0)), 2);
        // Far in the future everything has expired.
        assert_eq!(t.count(Nanos(100 * w)), 0);
        assert_eq!(t.quantile(Nanos(100 * w), 0.5), None);
    }

    #[test]
    fn saturates_above_range() {
        let t: LatencyTracker<1, 40> =
            LatencyTracker::new(LatencyTrackerConfig::default()).unwrap();
        assert_eq!(t.max_trackable(), Nanos(bucket_upper(39)));
        t.record(Nanos(0), Nanos(1_000_000));
        assert_eq!(t.stats().saturated, 1);
        assert_eq!(t.quantile(Nanos(0), 0.5), Some(Nanos(bucket_value(39))));
    }

    #[test]
    fn timeout_needs_min_samples() {
        let t = tracker();
        for _ in 0..999 {
            t.record(Nanos(0), Nanos::from_millis(10));
        }
        assert_eq!(t.propose_timeout(Nanos(0)), None);
        t.record(Nanos(0), Nanos::from_millis(10));
        let v = bucket_value(bucket_index(10_000_000));
        assert_eq!(t.propose_timeout(Nanos(0)), Some(Nanos(2 * v)));
    }

    #[test]
    fn summary_matches_quantiles() {
        let t = tracker();
        for i in 1..=2_000u64 {
            t.record(Nanos(0), Nanos(i * 1_000));
        }
        let s = t.summary(Nanos(0));
        assert_eq!(s.count, 2_000);
        assert_eq!(Some(s.p50), t.quantile(Nanos(0), 0.5));
        assert_eq!(Some(s.p95), t.quantile(Nanos(0), 0.95));
        assert_eq!(Some(s.p99), t.quantile(Nanos(0), 0.99));
        assert_eq!(Some(s.p999), t.quantile(Nanos(0), 0.999));
        assert_eq!(Some(s.max), t.quantile(Nanos(0), 1.0));
        assert_eq!(tracker().summary(Nanos(0)), LatencySummary::default());
    }

    #[test]
    fn config_rejections_name_the_field() {
        let bad = |c: LatencyTrackerConfig| c.validate().unwrap_err().field();
        let d = LatencyTrackerConfig::default();
        assert_eq!(
            bad(LatencyTrackerConfig {
                window: Nanos(999_999_999),
                ..d
            }),
            "window"
        );
        assert_eq!(
            bad(LatencyTrackerConfig {
                timeout_quantile: 0.0,
                ..d
            }),
            "timeout_quantile"
        );
        assert_eq!(
            bad(LatencyTrackerConfig {
                timeout_factor: f64::NAN,
                ..d
            }),
            "timeout_factor"
        );
        assert_eq!(
            bad(LatencyTrackerConfig {
                min_samples: 0,
                ..d
            }),
            "min_samples"
        );
        assert!(d.validate().is_ok());
    }
}
