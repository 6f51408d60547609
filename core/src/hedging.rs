//! [`Hedging`]: hedged requests — when a call is already slower than almost every call,
//! send a second copy of it to another replica and take whichever answers first.
//!
//! The hedge delay is a tracked percentile of recent latency (default P95) from the
//! policy's own [`LatencyTracker`], clamped to `[min_delay, max_delay]`. A request gets at
//! most [`HedgingConfig::max_hedges`] hedges, hedge `k` becoming due `k × delay` after the
//! request started. Each hedge is paid for by the retry budget, through a
//! [`RetryGate`] asked with [`RetryCause::Hedge`], and only idempotent calls are hedged.
//!
//! [`Hedging::should_hedge`] answers one of:
//!
//! - [`HedgeDecision::HedgeNow`]: send a hedge now (the gate has already been charged);
//! - [`HedgeDecision::WaitUntil`]: not yet; ask again at that time if no answer has come;
//! - [`HedgeDecision::Never`]: don't hedge this request (any more), with the reason:
//!   not idempotent, the per-request limit is reached, too few latency samples to know
//!   what "slow" is, or the retry budget refused.
//!
//! # Why
//!
//! One slow replica among healthy ones makes the tail: a call that is already past the
//! P95 is likely stuck behind something local to its server, and a copy sent elsewhere
//! will usually finish first. Hedging after the P95 costs at most about 5% more calls per
//! hedge allowed. But the copies are real calls: when the slowness is shared (an
//! overloaded database behind every replica), a hedge only adds load. Paying hedges from
//! the same budget as retries means that when the budget is empty no hedges go out.
//!
//! Only idempotent calls: a hedge duplicates the request, and both copies may run to
//! completion; a call with a side effect (a reservation, a payment) would happen twice.
//!
//! Cancel the losing copy when the first answer arrives, and record the latency of every
//! attempt that completes with [`Hedging::record_latency`].
//!
//! # Concurrency
//!
//! Recording is the tracker's lock-free CAS on one word. Reading a percentile scans the
//! whole ring, so the delay is cached: at most once per
//! [`HedgingConfig::refresh_interval`] one caller (the one whose compare-and-swap on the
//! refresh time wins) recomputes it, and every other caller uses the cached value —
//! possibly the previous one while the recomputation runs. Decisions are lock-free; with
//! `refresh_interval = 0` every decision recomputes (exact, slower).
//!
//! # Examples
//! ```
//! use guards_core::hedging::{HedgeDecision, HedgeRefusal, Hedging, HedgingConfig};
//! use guards_core::Nanos;
//!
//! let hedging: Hedging = Hedging::new(HedgingConfig::default())?;
//! let now = Nanos::from_secs(10);
//! // 100 calls of 1..=100 ms: P95 is 95 ms.
//! for i in 1..=100 {
//!     hedging.record_latency(now, Nanos::from_millis(i));
//! }
//! let started = now;
//! let delay = hedging.hedge_delay(now).unwrap();
//! assert!(delay.as_millis() >= 94 && delay.as_millis() <= 96);
//! assert_eq!(
//!     hedging.should_hedge(now, started, 0, true, None),
//!     HedgeDecision::WaitUntil(started.saturating_add(delay))
//! );
//! let later = started.saturating_add(delay);
//! assert_eq!(hedging.should_hedge(later, started, 0, true, None), HedgeDecision::HedgeNow);
//! // One hedge per request by default; and never for a write.
//! assert_eq!(
//!     hedging.should_hedge(later, started, 1, true, None),
//!     HedgeDecision::Never(HedgeRefusal::LimitReached)
//! );
//! assert_eq!(
//!     hedging.should_hedge(later, started, 0, false, None),
//!     HedgeDecision::Never(HedgeRefusal::NotIdempotent)
//! );
//! assert_eq!(hedging.stats().hedges, 1);
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//! - J. Dean, L. A. Barroso, "The Tail at Scale", CACM 56(2), 2013: hedged requests sent
//!   after a delay of the 95th-percentile expected latency limit the extra load to about
//!   5%; in their Google benchmark (reading 1,000 keys spread over 100 servers) hedging
//!   after 10 ms cut the 99.9th-percentile latency from 1,800 ms to 74 ms for 2% more
//!   requests. Tied requests go further by letting each copy cancel the other.
//! - Basketly's Replay H (docs/basketly.md, "C4: a retry budget (and hedging)"): hedge
//!   idempotent reads only, after the P95, inside the retry budget,
//!   and cancel the loser; with the budget empty no hedges go out.

use core::fmt;

use crate::counter::Counter;
use crate::error::{check_f64_above, check_nanos, check_u64, inconsistent, ConfigError};
use crate::latency_tracker::{
    LatencyTracker, LatencyTrackerConfig, DEFAULT_BUCKETS, DEFAULT_WINDOWS,
};
use crate::outcome::{LatencyVerdict, Outcome};
use crate::retry_policy::{RetryCause, RetryGate};
use crate::sync::{set_mut, AtomicU64, Ordering};
use crate::time::Nanos;

/// Default for [`HedgingConfig::delay_quantile`]: P95. Valid range: `0.0 < q <= 1.0`.
pub const DEFAULT_DELAY_QUANTILE: f64 = 0.95;
/// Default for [`HedgingConfig::min_delay`]: 1 ms. Valid range: `0..=1 h`.
pub const DEFAULT_MIN_DELAY: Nanos = Nanos::from_millis(1);
/// Default for [`HedgingConfig::max_delay`]: 10 s. Valid range: `min_delay..=1 h`.
pub const DEFAULT_MAX_DELAY: Nanos = Nanos::from_secs(10);
/// Default for [`HedgingConfig::max_hedges`]: one hedge per request. Valid range: `0..=16`
/// (0 disables hedging).
pub const DEFAULT_MAX_HEDGES: u32 = 1;
/// Default for [`HedgingConfig::min_samples`]: 100 samples before the P95 is trusted.
/// Valid range: `1..=10^9`.
pub const DEFAULT_MIN_SAMPLES: u64 = 100;
/// Default for [`HedgingConfig::refresh_interval`]: the cached delay is recomputed at most
/// every 100 ms. Valid range: `0..=1 min` (0: every decision).
pub const DEFAULT_REFRESH_INTERVAL: Nanos = Nanos::from_millis(100);

const ONE_HOUR: Nanos = Nanos::from_secs(3_600);
/// Cached-delay sentinel: not enough samples.
const NO_DELAY: u64 = u64::MAX;

/// Configuration of a [`Hedging`] policy.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HedgingConfig {
    /// Which latency quantile a call must exceed before it is hedged.
    /// Default [`DEFAULT_DELAY_QUANTILE`]; valid `0.0 < q <= 1.0`.
    pub delay_quantile: f64,
    /// Floor on the hedge delay. Default [`DEFAULT_MIN_DELAY`]; valid `0..=1 h`.
    pub min_delay: Nanos,
    /// Ceiling on the hedge delay. Default [`DEFAULT_MAX_DELAY`]; valid `min_delay..=1 h`.
    pub max_delay: Nanos,
    /// Most hedges per request. Default [`DEFAULT_MAX_HEDGES`]; valid `0..=16`.
    pub max_hedges: u32,
    /// Fewest samples in the tracker before any hedge is sent.
    /// Default [`DEFAULT_MIN_SAMPLES`]; valid `1..=10^9`.
    pub min_samples: u64,
    /// How often the cached delay is recomputed from the tracker.
    /// Default [`DEFAULT_REFRESH_INTERVAL`]; valid `0..=1 min`.
    pub refresh_interval: Nanos,
    /// The latency tracker's configuration (its window sets how recent the percentile
    /// is). Errors in it are reported as `tracker.<field>`.
    pub tracker: LatencyTrackerConfig,
}

impl Default for HedgingConfig {
    fn default() -> Self {
        HedgingConfig {
            delay_quantile: DEFAULT_DELAY_QUANTILE,
            min_delay: DEFAULT_MIN_DELAY,
            max_delay: DEFAULT_MAX_DELAY,
            max_hedges: DEFAULT_MAX_HEDGES,
            min_samples: DEFAULT_MIN_SAMPLES,
            refresh_interval: DEFAULT_REFRESH_INTERVAL,
            tracker: LatencyTrackerConfig::default(),
        }
    }
}

impl HedgingConfig {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_f64_above(
            "delay_quantile",
            self.delay_quantile,
            0.0,
            1.0,
            "0.0 < q <= 1.0",
        )?;
        check_nanos(
            "min_delay",
            self.min_delay,
            Nanos::ZERO,
            ONE_HOUR,
            "0..=1 h",
        )?;
        check_nanos(
            "max_delay",
            self.max_delay,
            Nanos::ZERO,
            ONE_HOUR,
            "0..=1 h",
        )?;
        if self.max_delay < self.min_delay {
            return Err(inconsistent("max_delay", ">= min_delay"));
        }
        check_u64("max_hedges", u64::from(self.max_hedges), 0, 16, "0..=16")?;
        check_u64(
            "min_samples",
            self.min_samples,
            1,
            1_000_000_000,
            "1..=10^9",
        )?;
        check_nanos(
            "refresh_interval",
            self.refresh_interval,
            Nanos::ZERO,
            Nanos::from_secs(60),
            "0..=1 min",
        )?;
        self.tracker.validate().map_err(|e| {
            let field = match e.field() {
                "window" => "tracker.window",
                "timeout_quantile" => "tracker.timeout_quantile",
                "timeout_factor" => "tracker.timeout_factor",
                "min_samples" => "tracker.min_samples",
                _ => "tracker",
            };
            ConfigError::new(field, e.kind(), e.expected())
        })
    }
}

/// Why a request must not be hedged (any more).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HedgeRefusal {
    /// The call is not idempotent: both copies could run, and its side effect twice.
    NotIdempotent = 0,
    /// The request already has `max_hedges` hedges.
    LimitReached = 1,
    /// Fewer than `min_samples` latencies are tracked: "slow" is not known yet.
    NoLatencyData = 2,
    /// The retry gate refused the hedge (budget exhausted).
    BudgetExhausted = 3,
}

named_enum!(HedgeRefusal {
    NotIdempotent => "not_idempotent",
    LimitReached => "limit_reached",
    NoLatencyData => "no_latency_data",
    BudgetExhausted => "budget_exhausted",
});

impl fmt::Display for HedgeRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What to do about a request that has not answered yet.
#[repr(C, u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use]
pub enum HedgeDecision {
    /// Send a hedge now; the retry gate has been charged for it.
    HedgeNow = 0,
    /// Not yet: if there is still no answer at this instant (same clock as `now`), ask
    /// again.
    WaitUntil(Nanos) = 1,
    /// Don't hedge this request (any more).
    Never(HedgeRefusal) = 2,
}

impl HedgeDecision {
    /// Stable snake_case name of the variant: `"hedge_now"`, `"wait_until"`, `"never"`.
    pub const fn name(self) -> &'static str {
        match self {
            HedgeDecision::HedgeNow => "hedge_now",
            HedgeDecision::WaitUntil(_) => "wait_until",
            HedgeDecision::Never(_) => "never",
        }
    }
}

/// Counters of a [`Hedging`] policy (plain snapshot).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HedgingStats {
    /// Hedges allowed ([`HedgeDecision::HedgeNow`]).
    pub hedges: u64,
    /// Decisions that said wait ([`HedgeDecision::WaitUntil`]).
    pub deferred: u64,
    /// Refused: not idempotent.
    pub not_idempotent: u64,
    /// Refused: per-request limit reached.
    pub limit_reached: u64,
    /// Refused: too few latency samples.
    pub no_latency_data: u64,
    /// Refused: the retry gate said no.
    pub budget_exhausted: u64,
}

/// A hedging policy with its own latency tracker. Lock-free; see the [module docs](self).
///
/// All bytes zero is a valid, unconfigured `Hedging` (at most 0 hedges: it never hedges):
/// safe to call, meant to be [`reset`](Hedging::reset) before use; see "Building in place"
/// in the crate docs.
#[repr(C)]
pub struct Hedging<const W: usize = DEFAULT_WINDOWS, const B: usize = DEFAULT_BUCKETS> {
    config: HedgingConfig,
    tracker: LatencyTracker<W, B>,
    /// Cached hedge delay in ns, or `NO_DELAY`.
    delay: AtomicU64,
    /// 1 + the `now` of the last refresh; 0 = never refreshed.
    refreshed: AtomicU64,
    hedges: Counter,
    deferred: Counter,
    not_idempotent: Counter,
    limit_reached: Counter,
    no_latency_data: Counter,
    budget_exhausted: Counter,
}

impl<const W: usize, const B: usize> fmt::Debug for Hedging<W, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hedging")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .field("tracker", &self.tracker)
            .finish()
    }
}

impl<const W: usize, const B: usize> Hedging<W, B> {
    /// A policy with an empty tracker, or the first invalid config field.
    pub fn new(config: HedgingConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Hedging {
            config,
            tracker: LatencyTracker::new(config.tracker)?,
            delay: AtomicU64::new(NO_DELAY),
            refreshed: AtomicU64::new(0),
            hedges: Counter::new(),
            deferred: Counter::new(),
            not_idempotent: Counter::new(),
            limit_reached: Counter::new(),
            no_latency_data: Counter::new(),
            budget_exhausted: Counter::new(),
        })
    }

    /// Validate `config`, then put this policy in exactly the state
    /// [`Hedging::new`]`(config)` gives (an empty tracker, no cached delay, zeroed
    /// counters), in place. On error nothing changes.
    pub fn reset(&mut self, config: HedgingConfig) -> Result<(), ConfigError> {
        config.validate()?;
        self.tracker.reset(config.tracker)?;
        self.config = config;
        set_mut(&mut self.delay, NO_DELAY);
        set_mut(&mut self.refreshed, 0);
        for c in [
            &mut self.hedges,
            &mut self.deferred,
            &mut self.not_idempotent,
            &mut self.limit_reached,
            &mut self.no_latency_data,
            &mut self.budget_exhausted,
        ] {
            c.reset();
        }
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &HedgingConfig {
        &self.config
    }

    /// The latency tracker the delay comes from (e.g. to propose a timeout from it too).
    pub fn tracker(&self) -> &LatencyTracker<W, B> {
        &self.tracker
    }

    /// Counter snapshot.
    pub fn stats(&self) -> HedgingStats {
        HedgingStats {
            hedges: self.hedges.get(),
            deferred: self.deferred.get(),
            not_idempotent: self.not_idempotent.get(),
            limit_reached: self.limit_reached.get(),
            no_latency_data: self.no_latency_data.get(),
            budget_exhausted: self.budget_exhausted.get(),
        }
    }

    /// Record the latency of a completed attempt (original or hedge). Lock-free.
    #[inline]
    pub fn record_latency(&self, now: Nanos, latency: Nanos) {
        self.tracker.record(now, latency);
    }

    /// Record how an attempt (original or hedge) that started at `started_at` ended, at
    /// `now`: [`LatencyTracker::report`] of the policy's tracker (which outcomes record a
    /// latency is the call contract's, [`Outcome::latency`]). Lock-free.
    #[inline]
    pub fn report(&self, now: Nanos, started_at: Nanos, outcome: Outcome) -> LatencyVerdict {
        self.tracker.report(now, started_at, outcome)
    }

    /// The delay computed from the tracker at `now`, ignoring the cache.
    fn compute_delay(&self, now: Nanos) -> Option<Nanos> {
        let (count, q) = self
            .tracker
            .count_and_quantile(now, self.config.delay_quantile);
        if count < self.config.min_samples {
            return None;
        }
        let q = q?;
        Some(q.max(self.config.min_delay).min(self.config.max_delay))
    }

    /// The current hedge delay (refreshed if `refresh_interval` has passed), or `None`
    /// while fewer than `min_samples` latencies are tracked.
    pub fn hedge_delay(&self, now: Nanos) -> Option<Nanos> {
        let last = self.refreshed.load(Ordering::Relaxed);
        let due = last == 0
            || now.0.saturating_sub(last.saturating_sub(1)) >= self.config.refresh_interval.0;
        if due {
            let stamp = now.0.saturating_add(1);
            if self
                .refreshed
                .compare_exchange(last, stamp, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                let d = self.compute_delay(now);
                self.delay
                    .store(d.map_or(NO_DELAY, Nanos::as_u64), Ordering::Relaxed);
                return d;
            }
        }
        match self.delay.load(Ordering::Relaxed) {
            NO_DELAY => None,
            d => Some(Nanos(d)),
        }
    }

    /// Should a request that started at `request_started`, has sent `hedges_sent` hedges
    /// so far and has no answer at `now` be hedged?
    ///
    /// Checks, in order: idempotent; `hedges_sent < max_hedges`; enough samples; hedge
    /// number `hedges_sent + 1` is due (`request_started + delay × (hedges_sent + 1)`);
    /// and finally the gate, if any, which is charged only when it allows the hedge.
    pub fn should_hedge(
        &self,
        now: Nanos,
        request_started: Nanos,
        hedges_sent: u32,
        idempotent: bool,
        gate: Option<&dyn RetryGate>,
    ) -> HedgeDecision {
        if !idempotent {
            self.not_idempotent.incr();
            return HedgeDecision::Never(HedgeRefusal::NotIdempotent);
        }
        if hedges_sent >= self.config.max_hedges {
            self.limit_reached.incr();
            return HedgeDecision::Never(HedgeRefusal::LimitReached);
        }
        let Some(delay) = self.hedge_delay(now) else {
            self.no_latency_data.incr();
            return HedgeDecision::Never(HedgeRefusal::NoLatencyData);
        };
        let due = request_started.saturating_add(delay.saturating_mul(u64::from(hedges_sent) + 1));
        if now < due {
            self.deferred.incr();
            return HedgeDecision::WaitUntil(due);
        }
        if let Some(gate) = gate {
            if !gate.allow_retry(now, RetryCause::Hedge) {
                self.budget_exhausted.incr();
                return HedgeDecision::Never(HedgeRefusal::BudgetExhausted);
            }
        }
        self.hedges.incr();
        HedgeDecision::HedgeNow
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;

    struct Gate {
        allow: bool,
        asked: Cell<u32>,
    }

    impl RetryGate for Gate {
        fn allow_retry(&self, _now: Nanos, cause: RetryCause) -> bool {
            assert_eq!(cause, RetryCause::Hedge);
            self.asked.set(self.asked.get() + 1);
            self.allow
        }
    }

    fn hedging(refresh: Nanos) -> Hedging {
        Hedging::new(HedgingConfig {
            refresh_interval: refresh,
            ..HedgingConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn gate_is_asked_only_when_due() {
        let h = hedging(Nanos::ZERO);
        for _ in 0..100 {
            h.record_latency(Nanos(0), Nanos::from_millis(10));
        }
        let deny = Gate {
            allow: false,
            asked: Cell::new(0),
        };
        let d = h.should_hedge(Nanos(0), Nanos(0), 0, true, Some(&deny));
        assert!(matches!(d, HedgeDecision::WaitUntil(_)));
        assert_eq!(deny.asked.get(), 0);
        let late = Nanos::from_millis(20);
        assert_eq!(
            h.should_hedge(late, Nanos(0), 0, true, Some(&deny)),
            HedgeDecision::Never(HedgeRefusal::BudgetExhausted)
        );
        assert_eq!(deny.asked.get(), 1);
        let allow = Gate {
            allow: true,
            asked: Cell::new(0),
        };
        assert_eq!(
            h.should_hedge(late, Nanos(0), 0, true, Some(&allow)),
            HedgeDecision::HedgeNow
        );
        // Refusals before the gate never charge it.
        let _ = h.should_hedge(late, Nanos(0), 0, false, Some(&allow));
        let _ = h.should_hedge(late, Nanos(0), 1, true, Some(&allow));
        assert_eq!(allow.asked.get(), 1);
    }

    #[test]
    fn delay_is_clamped_and_cached() {
        let h = hedging(Nanos::from_secs(1));
        assert_eq!(h.hedge_delay(Nanos(0)), None);
        for _ in 0..100 {
            h.record_latency(Nanos(0), Nanos(100)); // far below min_delay
        }
        // Cached "no data" until the refresh interval has passed.
        assert_eq!(h.hedge_delay(Nanos(500_000_000)), None);
        assert_eq!(h.hedge_delay(Nanos(1_000_000_000)), Some(DEFAULT_MIN_DELAY));
        for _ in 0..1_000 {
            h.record_latency(Nanos::from_secs(1), Nanos::from_secs(100));
        }
        assert_eq!(h.hedge_delay(Nanos::from_secs(2)), Some(DEFAULT_MAX_DELAY));
    }

    #[test]
    fn later_hedges_wait_longer() {
        let h: Hedging = Hedging::new(HedgingConfig {
            max_hedges: 3,
            refresh_interval: Nanos::ZERO,
            ..HedgingConfig::default()
        })
        .unwrap();
        for _ in 0..100 {
            h.record_latency(Nanos(0), Nanos(5_000_000));
        }
        let d = h.hedge_delay(Nanos(0)).unwrap();
        let start = Nanos(1_000);
        assert_eq!(
            h.should_hedge(start, start, 2, true, None),
            HedgeDecision::WaitUntil(start.saturating_add(d.saturating_mul(3)))
        );
    }

    #[test]
    fn config_errors() {
        let d = HedgingConfig::default();
        let field = |c: HedgingConfig| c.validate().unwrap_err().field();
        assert_eq!(
            field(HedgingConfig {
                delay_quantile: 0.0,
                ..d
            }),
            "delay_quantile"
        );
        assert_eq!(
            field(HedgingConfig {
                min_delay: Nanos::from_secs(2),
                max_delay: Nanos::from_secs(1),
                ..d
            }),
            "max_delay"
        );
        assert_eq!(
            field(HedgingConfig {
                max_hedges: 17,
                ..d
            }),
            "max_hedges"
        );
        assert_eq!(
            field(HedgingConfig {
                tracker: LatencyTrackerConfig {
                    window: Nanos(0),
                    ..LatencyTrackerConfig::default()
                },
                ..d
            }),
            "tracker.window"
        );
    }
}
