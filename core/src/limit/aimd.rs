//! [`AimdLimit`]: additive increase, multiplicative decrease.
//!
//! The limit grows by one after each *healthy interval* — an interval of at least
//! [`AimdConfig::interval`] in which no sample was a drop — and is multiplied by
//! [`AimdConfig::backoff_ratio`] on a drop, at most once per interval. A drop is a sample
//! with `dropped` set (a timeout, a 429/503, any overload signal) or an RTT above
//! [`AimdConfig::latency_target`].
//!
//! # Definition
//! Let `L` be the limit, `I` the interval, `r` the backoff ratio. For each sample
//! `(now, rtt, in_flight, dropped)`:
//!
//! 1. The first sample ever opens the first healthy interval at `now`.
//! 2. If `dropped` or `rtt > latency_target`: if no decrease has happened yet, or
//!    `now − last_decrease ≥ I`, then `L ← max(min_limit, min(L − 1, ⌊L·r⌋))` and
//!    `last_decrease ← now`. Either way the current healthy interval restarts at `now`.
//! 3. Otherwise, if `now − interval_start ≥ I`: the interval was healthy; if the limit is
//!    being used (`2·in_flight ≥ L`), `L ← min(max_limit, L + 1)`; the next interval starts
//!    at `now`.
//!
//! The "being used" test keeps an idle service from growing its limit without evidence.
//! The `min(L − 1, …)` term guarantees that every decrease removes at least one, whatever
//! the float rounding of `L·r`.
//!
//! # Why
//! AIMD needs no latency model: it reacts only to the loss signal, so it suits clients of
//! a dependency whose latency says little (batch jobs, mixed request sizes). Halving on a
//! drop backs off fast; +1 per interval probes slowly for room. "At most once per interval"
//! stops one burst of timeouts — all caused by the same overload — from halving the limit
//! again and again.
//!
//! # Examples
//! ```
//! use guards_core::limit::{AimdConfig, AimdLimit, LimitSample};
//! use guards_core::Nanos;
//!
//! let mut aimd = AimdLimit::new(AimdConfig { initial_limit: 8, ..AimdConfig::default() })?;
//! let at = |ms: u64, dropped: bool| LimitSample {
//!     now: Nanos::from_millis(ms),
//!     rtt: Nanos::from_millis(3),
//!     in_flight: 8,
//!     dropped,
//! };
//! assert_eq!(aimd.update(at(0, true)), 4); // halved
//! assert_eq!(aimd.update(at(50, true)), 4); // second drop in the same interval: ignored
//! assert_eq!(aimd.update(at(100, false)), 4); // interval restarted at 50 ms
//! assert_eq!(aimd.update(at(150, false)), 5); // 100 ms without a drop: +1
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//! - Netflix `concurrency-limits`, `AIMDLimit`: +1 when at least half the limit is in use,
//!   × a backoff ratio (0.9 there, accepted range [0.5, 1)) on a drop or an RTT above a
//!   timeout (5 s there), never below 1 and always at least one less. Our version adds
//!   the once-per-interval rule and defaults the ratio to 0.5, as docs/basketly.md ("C7: a
//!   bulkhead") describes.
//! - docs/basketly.md, "C7: a bulkhead": add 1 after each healthy interval; halve on timeouts,
//!   429/503 or latency above a target, at most once per interval.
//! - D. Chiu and R. Jain, "Analysis of the Increase and Decrease Algorithms for Congestion
//!   Avoidance in Computer Networks" (1989): why additive increase with multiplicative
//!   decrease converges to a fair, efficient share.

use super::{check_bounds, StateWords};
use crate::error::{check_f64_above, check_nanos, ConfigError, ConfigErrorKind};
use crate::time::Nanos;

use super::LimitSample;

/// Default for [`AimdConfig::initial_limit`]. Valid range: `min_limit..=max_limit`.
pub const DEFAULT_INITIAL_LIMIT: u64 = 10;
/// Default for [`AimdConfig::min_limit`]. Valid range: `1..=1_000_000`.
pub const DEFAULT_MIN_LIMIT: u64 = 1;
/// Default for [`AimdConfig::max_limit`]. Valid range: `min_limit..=1_000_000`.
pub const DEFAULT_MAX_LIMIT: u64 = 1_000;
/// Default for [`AimdConfig::backoff_ratio`]: halve. Valid range: `0.0 < r < 1.0`.
pub const DEFAULT_BACKOFF_RATIO: f64 = 0.5;
/// Default for [`AimdConfig::interval`]: 100 ms. Valid range: `1 ns..=1 day`.
pub const DEFAULT_INTERVAL: Nanos = Nanos::from_millis(100);
/// Default for [`AimdConfig::latency_target`]: none ([`Nanos::MAX`]). Valid range:
/// `1 ns..=Nanos::MAX`.
pub const DEFAULT_LATENCY_TARGET: Nanos = Nanos::MAX;

const ONE_DAY: Nanos = Nanos::from_secs(86_400);

/// Configuration of an [`AimdLimit`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AimdConfig {
    /// The limit before any sample. Default [`DEFAULT_INITIAL_LIMIT`].
    pub initial_limit: u64,
    /// The limit never goes below this. Default [`DEFAULT_MIN_LIMIT`].
    pub min_limit: u64,
    /// The limit never goes above this. Default [`DEFAULT_MAX_LIMIT`].
    pub max_limit: u64,
    /// Factor applied on a drop. Default [`DEFAULT_BACKOFF_RATIO`].
    pub backoff_ratio: f64,
    /// Length of a healthy interval, and the minimum time between two decreases.
    /// Default [`DEFAULT_INTERVAL`].
    pub interval: Nanos,
    /// An RTT above this counts as a drop. Default [`DEFAULT_LATENCY_TARGET`] (none).
    pub latency_target: Nanos,
}

impl Default for AimdConfig {
    fn default() -> Self {
        AimdConfig {
            initial_limit: DEFAULT_INITIAL_LIMIT,
            min_limit: DEFAULT_MIN_LIMIT,
            max_limit: DEFAULT_MAX_LIMIT,
            backoff_ratio: DEFAULT_BACKOFF_RATIO,
            interval: DEFAULT_INTERVAL,
            latency_target: DEFAULT_LATENCY_TARGET,
        }
    }
}

impl AimdConfig {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_bounds(self.initial_limit, self.min_limit, self.max_limit)?;
        const RATIO: &str = "0.0 < backoff_ratio < 1.0";
        let r = check_f64_above("backoff_ratio", self.backoff_ratio, 0.0, 1.0, RATIO)?;
        if r >= 1.0 {
            return Err(ConfigError::new(
                "backoff_ratio",
                ConfigErrorKind::OutOfRange,
                RATIO,
            ));
        }
        check_nanos("interval", self.interval, Nanos(1), ONE_DAY, "1 ns..=1 day")?;
        check_nanos(
            "latency_target",
            self.latency_target,
            Nanos(1),
            Nanos::MAX,
            "1 ns..=Nanos::MAX (MAX = no target)",
        )?;
        Ok(())
    }
}

const STARTED: u64 = 1;
const DECREASED: u64 = 2;

/// The AIMD limit: see the [module documentation](self) for the definition.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AimdLimit {
    config: AimdConfig,
    limit: u64,
    interval_start: Nanos,
    last_decrease: Nanos,
    flags: u64,
}

impl AimdLimit {
    /// A validated AIMD limit at `initial_limit`.
    pub fn new(config: AimdConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(AimdLimit {
            config,
            limit: config.initial_limit,
            interval_start: Nanos::ZERO,
            last_decrease: Nanos::ZERO,
            flags: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AimdConfig {
        &self.config
    }

    /// The current limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Feed one sample; returns the (possibly new) limit.
    pub fn update(&mut self, s: LimitSample) -> u64 {
        let c = &self.config;
        if self.flags & STARTED == 0 {
            self.flags |= STARTED;
            self.interval_start = s.now;
        }
        if s.dropped || s.rtt > c.latency_target {
            let may_decrease = self.flags & DECREASED == 0
                || s.now.saturating_sub(self.last_decrease) >= c.interval;
            if may_decrease {
                let scaled = crate::math::to_u64_saturating(crate::math::floor(
                    self.limit as f64 * c.backoff_ratio,
                ));
                self.limit = scaled.min(self.limit.saturating_sub(1)).max(c.min_limit);
                self.last_decrease = s.now;
                self.flags |= DECREASED;
            }
            self.interval_start = s.now;
        } else if s.now.saturating_sub(self.interval_start) >= c.interval {
            if s.in_flight.saturating_mul(2) >= self.limit {
                self.limit = self.limit.saturating_add(1).min(c.max_limit);
            }
            self.interval_start = s.now;
        }
        self.limit
    }

    pub(crate) fn to_words(self) -> StateWords {
        [
            self.limit,
            self.interval_start.0,
            self.last_decrease.0,
            self.flags,
            0,
            0,
        ]
    }

    pub(crate) fn from_words(config: AimdConfig, w: &StateWords) -> Self {
        let [limit, interval_start, last_decrease, flags, _, _] = *w;
        AimdLimit {
            config,
            limit,
            interval_start: Nanos(interval_start),
            last_decrease: Nanos(last_decrease),
            flags,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(ms: u64, dropped: bool, in_flight: u64) -> LimitSample {
        LimitSample {
            now: Nanos::from_millis(ms),
            rtt: Nanos::from_millis(1),
            in_flight,
            dropped,
        }
    }

    #[test]
    fn grows_once_per_healthy_interval_when_used() {
        let mut a = AimdLimit::new(AimdConfig::default()).unwrap();
        assert_eq!(a.update(s(0, false, 10)), 10);
        assert_eq!(a.update(s(99, false, 10)), 10);
        assert_eq!(a.update(s(100, false, 10)), 11);
        assert_eq!(a.update(s(150, false, 10)), 11);
        // Unused (in_flight * 2 < limit): the interval passes but the limit stays.
        assert_eq!(a.update(s(200, false, 5)), 11);
        assert_eq!(a.update(s(300, false, 6)), 12);
    }

    #[test]
    fn decreases_at_most_once_per_interval() {
        let mut a = AimdLimit::new(AimdConfig {
            initial_limit: 100,
            ..AimdConfig::default()
        })
        .unwrap();
        assert_eq!(a.update(s(0, true, 0)), 50);
        assert_eq!(a.update(s(99, true, 0)), 50);
        assert_eq!(a.update(s(100, true, 0)), 25);
        assert_eq!(a.update(s(150, false, 100)), 25);
        assert_eq!(a.update(s(200, false, 100)), 26);
    }

    #[test]
    fn floors_at_min_and_always_removes_one() {
        let mut a = AimdLimit::new(AimdConfig {
            initial_limit: 3,
            min_limit: 2,
            backoff_ratio: 0.99,
            ..AimdConfig::default()
        })
        .unwrap();
        assert_eq!(a.update(s(0, true, 0)), 2);
        assert_eq!(a.update(s(1_000, true, 0)), 2);
    }

    #[test]
    fn latency_target_counts_as_drop_and_max_caps() {
        let mut a = AimdLimit::new(AimdConfig {
            initial_limit: 4,
            max_limit: 5,
            latency_target: Nanos::from_millis(10),
            ..AimdConfig::default()
        })
        .unwrap();
        let slow = LimitSample {
            rtt: Nanos::from_millis(11),
            ..s(0, false, 4)
        };
        assert_eq!(a.update(slow), 2);
        assert_eq!(a.update(s(100, false, 4)), 3);
        assert_eq!(a.update(s(200, false, 4)), 4);
        assert_eq!(a.update(s(300, false, 4)), 5);
        assert_eq!(a.update(s(400, false, 4)), 5);
    }

    #[test]
    fn time_going_backwards_is_harmless() {
        let mut a = AimdLimit::new(AimdConfig::default()).unwrap();
        assert_eq!(a.update(s(1_000, true, 0)), 5);
        assert_eq!(a.update(s(10, true, 0)), 5);
        assert_eq!(a.update(s(20, false, 10)), 5);
    }

    #[test]
    fn rejects_bad_config() {
        let bad = |c: AimdConfig| c.validate().unwrap_err();
        let d = AimdConfig::default();
        assert_eq!(
            bad(AimdConfig {
                backoff_ratio: 1.0,
                ..d
            })
            .kind(),
            ConfigErrorKind::OutOfRange
        );
        assert_eq!(
            bad(AimdConfig {
                backoff_ratio: f64::NAN,
                ..d
            })
            .kind(),
            ConfigErrorKind::NotFinite
        );
        assert_eq!(
            bad(AimdConfig {
                backoff_ratio: 0.0,
                ..d
            })
            .kind(),
            ConfigErrorKind::Zero
        );
        assert_eq!(
            bad(AimdConfig {
                interval: Nanos::ZERO,
                ..d
            })
            .field(),
            "interval"
        );
        assert_eq!(
            bad(AimdConfig {
                latency_target: Nanos::ZERO,
                ..d
            })
            .field(),
            "latency_target"
        );
    }
}
