//! [`GradientLimit`]: scale the limit by how much the current RTT exceeds its long-term
//! average, plus a small queue allowance.
//!
//! The "gradient" is `long_rtt / rtt`: 1 when the current RTT is at its usual level, below
//! 1 when calls are getting slower (a queue is forming). Multiplying the limit by it
//! shrinks the limit in proportion to the slow-down; adding a fixed `queue_size` lets the
//! limit creep up while latency stays flat, so it keeps probing for room.
//!
//! # Definition
//! Let `E` be the (float) estimate, `N` the [`long_window`](GradientConfig::long_window),
//! `W` the [`warmup_samples`](GradientConfig::warmup_samples), `s` the
//! [`smoothing`](GradientConfig::smoothing) and `q` the
//! [`queue_size`](GradientConfig::queue_size). For each sample
//! `(now, rtt, in_flight, dropped)` (an `rtt` of 0 counts as 1 ns):
//!
//! 1. **Long-term RTT.** For the first `W` samples `long` is their plain mean; after that
//!    it is an exponential moving average, `long ← long·(1 − k) + rtt·k` with
//!    `k = 2 / (N + 1)`.
//! 2. **Recovery.** If `long / rtt > 2` (latency is back to normal after a long overload
//!    and the average lags far behind), `long ← 0.9 × long` *after* this sample's gradient
//!    is taken, so the average catches up faster than the EMA alone would.
//! 3. If `in_flight < E / 2` (the limit is not being used): no change.
//! 4. `g = clamp(long / rtt, 0.5, 1.0)` with `long` as computed in step 1;
//!    `E ← clamp((1 − s)·E + s·(g·E + q), min_limit, max_limit)`.
//!
//! The limit is `⌊E⌋`. Drops matter only through their RTT: a timed-out call reports a
//! long RTT, which lowers the gradient.
//!
//! The gradient is clamped below at [`MIN_GRADIENT`] so one outlier cannot cut the limit by
//! more than half, and above at [`MAX_GRADIENT`] so a fast sample never multiplies it up:
//! growth comes only from the queue allowance.
//!
//! # Why
//! Using an average rather than a minimum as the baseline suits RPC services whose calls
//! vary in cost: a minimum drifts down to an unrepresentatively fast call and then sees
//! "queueing" everywhere. The long average follows slow, lasting changes in latency (a
//! deploy, a bigger data set) while the gradient reacts to fast ones.
//!
//! # Examples
//! ```
//! use guards_core::limit::{GradientConfig, GradientLimit, LimitSample};
//! use guards_core::Nanos;
//!
//! let mut g = GradientLimit::new(GradientConfig::default())?; // starts at 20
//! let at = |rtt_ms: u64| LimitSample {
//!     now: Nanos::ZERO,
//!     rtt: Nanos::from_millis(rtt_ms),
//!     in_flight: 20,
//!     dropped: false,
//! };
//! // Steady RTT: gradient 1, so E ← 0.8·20 + 0.2·(20 + 4) = 20.8.
//! assert_eq!(g.update(at(10)), 20);
//! assert_eq!(g.estimate(), 20.8);
//! // RTT doubles: long = (10 + 20)/2 = 15, g = 0.75, E ← 0.8·20.8 + 0.2·(15.6 + 4) = 20.56.
//! g.update(at(20));
//! assert!((g.estimate() - 20.56).abs() < 1e-12);
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//! - Netflix `concurrency-limits`, `Gradient2Limit`: the gradient of a long-term RTT
//!   average (an exponential average over 600 samples after a 10-sample warm-up) over the
//!   current RTT, clamped to [0.5, 1.0]; a queue allowance of 4; smoothing 0.2; a 0.9
//!   decay of the long average when it exceeds twice the current RTT; no change while
//!   fewer than half the limit are in flight; initial limit 20, maximum 200 (its minimum
//!   is 20; ours defaults to 1 so that a small service can be protected).
//! - Envoy adaptive concurrency filter: the same shape with a periodically re-measured
//!   minimum RTT as the baseline and `sqrt(limit)` as headroom.

use super::{check_bounds, check_smoothing, clamp_f64, whole, LimitSample, StateWords};
use crate::error::{check_f64, check_u64, ConfigError};

/// Default for [`GradientConfig::initial_limit`]. Valid range: `min_limit..=max_limit`.
pub const DEFAULT_INITIAL_LIMIT: u64 = 20;
/// Default for [`GradientConfig::min_limit`]. Valid range: `1..=1_000_000`.
pub const DEFAULT_MIN_LIMIT: u64 = 1;
/// Default for [`GradientConfig::max_limit`]. Valid range: `min_limit..=1_000_000`.
pub const DEFAULT_MAX_LIMIT: u64 = 200;
/// Default for [`GradientConfig::smoothing`]. Valid range: `0.0 < s <= 1.0`.
pub const DEFAULT_SMOOTHING: f64 = 0.2;
/// Default for [`GradientConfig::queue_size`]. Valid range: `0.0..=1_000_000.0`.
pub const DEFAULT_QUEUE_SIZE: f64 = 4.0;
/// Default for [`GradientConfig::long_window`] (samples). Valid range: `1..=1_000_000_000`.
pub const DEFAULT_LONG_WINDOW: u64 = 600;
/// Default for [`GradientConfig::warmup_samples`]. Valid range: `1..=1_000_000_000`.
pub const DEFAULT_WARMUP_SAMPLES: u64 = 10;

/// The gradient never goes below this (one sample cuts the target by at most half).
pub const MIN_GRADIENT: f64 = 0.5;
/// The gradient never goes above this (growth comes from the queue allowance only).
pub const MAX_GRADIENT: f64 = 1.0;
/// When `long / rtt` exceeds this, the long average is decayed by [`DRIFT_DECAY`].
pub const DRIFT_RATIO: f64 = 2.0;
/// Factor applied to the long average when it has drifted far above the current RTT.
pub const DRIFT_DECAY: f64 = 0.9;

/// Configuration of a [`GradientLimit`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradientConfig {
    /// The limit before any sample. Default [`DEFAULT_INITIAL_LIMIT`].
    pub initial_limit: u64,
    /// The limit never goes below this. Default [`DEFAULT_MIN_LIMIT`].
    pub min_limit: u64,
    /// The limit never goes above this. Default [`DEFAULT_MAX_LIMIT`].
    pub max_limit: u64,
    /// Weight of the new target in the estimate. Default [`DEFAULT_SMOOTHING`].
    pub smoothing: f64,
    /// How many calls the limit may add while latency stays flat. Default
    /// [`DEFAULT_QUEUE_SIZE`].
    pub queue_size: f64,
    /// Span, in samples, of the long-term RTT average. Default [`DEFAULT_LONG_WINDOW`].
    pub long_window: u64,
    /// Samples averaged plainly before the moving average starts. Default
    /// [`DEFAULT_WARMUP_SAMPLES`].
    pub warmup_samples: u64,
}

impl Default for GradientConfig {
    fn default() -> Self {
        GradientConfig {
            initial_limit: DEFAULT_INITIAL_LIMIT,
            min_limit: DEFAULT_MIN_LIMIT,
            max_limit: DEFAULT_MAX_LIMIT,
            smoothing: DEFAULT_SMOOTHING,
            queue_size: DEFAULT_QUEUE_SIZE,
            long_window: DEFAULT_LONG_WINDOW,
            warmup_samples: DEFAULT_WARMUP_SAMPLES,
        }
    }
}

impl GradientConfig {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_bounds(self.initial_limit, self.min_limit, self.max_limit)?;
        check_smoothing(self.smoothing)?;
        check_f64("queue_size", self.queue_size, 0.0, 1e6, "0.0..=1000000.0")?;
        check_u64(
            "long_window",
            self.long_window,
            1,
            1_000_000_000,
            "1..=1000000000",
        )?;
        check_u64(
            "warmup_samples",
            self.warmup_samples,
            1,
            1_000_000_000,
            "1..=1000000000",
        )?;
        Ok(())
    }
}

/// The gradient limit: see the [module documentation](self) for the definition.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradientLimit {
    config: GradientConfig,
    estimate: f64,
    long_rtt: f64,
    warmup_sum: f64,
    samples: u64,
}

impl GradientLimit {
    /// A validated gradient limit at `initial_limit`.
    pub fn new(config: GradientConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(GradientLimit {
            config,
            estimate: config.initial_limit as f64,
            long_rtt: 0.0,
            warmup_sum: 0.0,
            samples: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &GradientConfig {
        &self.config
    }

    /// The current limit, `⌊estimate⌋` (at least 1).
    pub fn limit(&self) -> u64 {
        whole(self.estimate)
    }

    /// The current float estimate.
    pub fn estimate(&self) -> f64 {
        self.estimate
    }

    /// The long-term RTT average, in nanoseconds (0 before the first sample).
    pub fn long_rtt(&self) -> f64 {
        self.long_rtt
    }

    /// Feed one sample; returns the (possibly new) limit.
    pub fn update(&mut self, s: LimitSample) -> u64 {
        let c = self.config;
        let rtt = s.rtt.0.max(1) as f64;

        let long = if self.samples < c.warmup_samples {
            self.samples = self.samples.saturating_add(1);
            self.warmup_sum += rtt;
            self.warmup_sum / self.samples as f64
        } else {
            let k = 2.0 / (c.long_window as f64 + 1.0);
            self.long_rtt * (1.0 - k) + rtt * k
        };
        self.long_rtt = if long / rtt > DRIFT_RATIO {
            long * DRIFT_DECAY
        } else {
            long
        };

        let e = self.estimate;
        if (s.in_flight as f64) < e / 2.0 {
            return self.limit();
        }
        let g = clamp_f64(long / rtt, MIN_GRADIENT, MAX_GRADIENT);
        let target = g * e + c.queue_size;
        self.estimate = clamp_f64(
            (1.0 - c.smoothing) * e + c.smoothing * target,
            c.min_limit as f64,
            c.max_limit as f64,
        );
        self.limit()
    }

    pub(crate) fn to_words(self) -> StateWords {
        [
            self.estimate.to_bits(),
            self.long_rtt.to_bits(),
            self.warmup_sum.to_bits(),
            self.samples,
            0,
            0,
        ]
    }

    pub(crate) fn from_words(config: GradientConfig, w: &StateWords) -> Self {
        let [estimate, long_rtt, warmup_sum, samples, _, _] = *w;
        GradientLimit {
            config,
            estimate: f64::from_bits(estimate),
            long_rtt: f64::from_bits(long_rtt),
            warmup_sum: f64::from_bits(warmup_sum),
            samples,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ConfigErrorKind, Nanos};

    fn s(rtt: u64, in_flight: u64) -> LimitSample {
        LimitSample {
            now: Nanos::ZERO,
            rtt: Nanos(rtt),
            in_flight,
            dropped: false,
        }
    }

    #[test]
    fn warmup_is_a_plain_mean_then_ema() {
        let mut g = GradientLimit::new(GradientConfig {
            warmup_samples: 2,
            long_window: 3, // k = 0.5
            ..GradientConfig::default()
        })
        .unwrap();
        g.update(s(100, 0));
        assert_eq!(g.long_rtt(), 100.0);
        g.update(s(200, 0));
        assert_eq!(g.long_rtt(), 150.0);
        g.update(s(50, 0));
        assert_eq!(g.long_rtt(), 100.0);
        // Unused limit: estimate untouched throughout.
        assert_eq!(g.estimate(), 20.0);
    }

    #[test]
    fn gradient_is_clamped_to_half() {
        let mut g = GradientLimit::new(GradientConfig {
            smoothing: 1.0,
            queue_size: 0.0,
            ..GradientConfig::default()
        })
        .unwrap();
        g.update(s(10, 20)); // long 10, g 1 → 20
        assert_eq!(g.estimate(), 20.0);
        // long = (10 + 1000)/2 = 505; 505/1000 = 0.505 → 10.1
        g.update(s(1000, 20));
        assert_eq!(g.estimate(), 20.0 * 0.505);
        // long = (10+1000+100000)/3 = 33670; 33670/100000 < 0.5 → clamp 0.5
        g.update(s(100_000, 20));
        assert_eq!(g.estimate(), 20.0 * 0.505 * 0.5);
    }

    #[test]
    fn long_average_decays_when_far_above_current() {
        let mut g = GradientLimit::new(GradientConfig {
            warmup_samples: 1,
            long_window: 1, // k = 1: long = the sample
            ..GradientConfig::default()
        })
        .unwrap();
        g.update(s(1000, 0));
        assert_eq!(g.long_rtt(), 1000.0);
        // long_window 1 → long = 100 exactly; ratio 1, no decay.
        g.update(s(100, 0));
        assert_eq!(g.long_rtt(), 100.0);
        let mut g = GradientLimit::new(GradientConfig {
            warmup_samples: 1,
            long_window: 599, // k = 1/300
            ..GradientConfig::default()
        })
        .unwrap();
        g.update(s(3000, 0));
        g.update(s(1000, 0));
        let long = 3000.0 * (1.0 - 2.0 / 600.0) + 1000.0 * (2.0 / 600.0);
        assert_eq!(g.long_rtt(), long * DRIFT_DECAY);
    }

    #[test]
    fn clamps_to_bounds() {
        let mut g = GradientLimit::new(GradientConfig {
            initial_limit: 199,
            ..GradientConfig::default()
        })
        .unwrap();
        for _ in 0..20 {
            g.update(s(10, 1000));
        }
        assert_eq!(g.limit(), 200);
        assert_eq!(g.estimate(), 200.0);
    }

    #[test]
    fn rejects_bad_config() {
        let d = GradientConfig::default();
        let e = |c: GradientConfig| c.validate().unwrap_err();
        assert_eq!(
            e(GradientConfig {
                queue_size: -1.0,
                ..d
            })
            .kind(),
            ConfigErrorKind::Negative
        );
        assert_eq!(
            e(GradientConfig {
                long_window: 0,
                ..d
            })
            .field(),
            "long_window"
        );
        assert_eq!(
            e(GradientConfig {
                warmup_samples: 0,
                ..d
            })
            .field(),
            "warmup_samples"
        );
        assert_eq!(
            e(GradientConfig {
                smoothing: 1.5,
                ..d
            })
            .kind(),
            ConfigErrorKind::OutOfRange
        );
    }
}
