//! [`VegasLimit`]: grow while the estimated queue is short, shrink when it is long.
//!
//! The idea comes from TCP Vegas. If the fastest RTT ever seen (`min_rtt`, the "no load"
//! RTT) is what a call costs without waiting, then a call that took `rtt` spent the
//! fraction `1 − min_rtt / rtt` of its time queued, and a limit of `L` calls holds about
//! `queue = L × (1 − min_rtt / rtt)` calls that are waiting rather than being served.
//! Vegas keeps that queue between two small numbers, `alpha` and `beta`.
//!
//! # Definition
//! Let `E` be the (float) estimate, `L10 = max(1, ⌊log10 ⌊E⌋⌋)`, and `a`, `b`, `t` the
//! configured [`alpha`](VegasConfig::alpha), [`beta`](VegasConfig::beta) and
//! [`threshold`](VegasConfig::threshold) multipliers. For each sample
//! `(now, rtt, in_flight, dropped)` (an `rtt` of 0 counts as 1 ns):
//!
//! 1. **Re-probe.** `probe_count += 1`. If `probe_count ≥ f × probe_multiplier × E`, where
//!    `f` is the current jitter factor, then `min_rtt ← rtt`, `probe_count ← 0`, a new `f`
//!    is drawn, and the sample does nothing else. (A minimum only ever falls; re-probing
//!    lets it rise again after the dependency got slower for good.)
//! 2. **New minimum.** If no `min_rtt` is known yet or `rtt < min_rtt`: `min_rtt ← rtt`,
//!    and nothing else.
//! 3. `queue = ⌈E × (1 − min_rtt / rtt)⌉`, then the target `T`:
//!    - `dropped`: `T = E − L10`;
//!    - else if `2 × in_flight < E` (the limit is not being used): no change;
//!    - else if `queue ≤ t·L10`: `T = E + b·L10` (no queue at all: grow fast);
//!    - else if `queue < a·L10`: `T = E + L10`;
//!    - else if `queue > b·L10`: `T = E − L10`;
//!    - else (between alpha and beta): no change.
//! 4. `T ← clamp(T, min_limit, max_limit)`,
//!    `E ← clamp((1 − smoothing)·E + smoothing·T, min_limit, max_limit)` (the second clamp
//!    only absorbs float rounding).
//!
//! The limit is `⌊E⌋`. The jitter factor is `f = 1 − probe_jitter × u` with `u` the next
//! SplitMix64 draw (as [`crate::Rng`] seeded with [`probe_seed`](VegasConfig::probe_seed)
//! would give it) mapped to `[0, 1)`; the first `f` is drawn when the limit is built. So
//! the whole sequence is fixed by the config and the samples.
//!
//! # Why
//! Vegas reacts to queueing before anything times out: a dependency that is getting slower
//! shows a longer estimated queue while every call still succeeds. Scaling `alpha`, `beta`
//! and the step with `log10(limit)` lets a large limit move in larger steps while a small
//! one stays precise.
//!
//! # Examples
//! ```
//! use guards_core::limit::{LimitSample, VegasConfig, VegasLimit};
//! use guards_core::Nanos;
//!
//! let mut vegas = VegasLimit::new(VegasConfig { initial_limit: 20, ..VegasConfig::default() })?;
//! let at = |rtt_ms: u64| LimitSample {
//!     now: Nanos::ZERO,
//!     rtt: Nanos::from_millis(rtt_ms),
//!     in_flight: 20,
//!     dropped: false,
//! };
//! vegas.update(at(10)); // the first sample sets min_rtt = 10 ms
//! // 20 × (1 − 10/11) = 1.8 → queue 2 ≤ threshold 1·L10 = 1? No; < alpha 3·1 = 3: +1.
//! assert_eq!(vegas.update(at(11)), 21);
//! // 21 × (1 − 10/20) = 10.5 → queue 11 > beta 6·1: −1.
//! assert_eq!(vegas.update(at(20)), 20);
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//! - L. Brakmo and L. Peterson, "TCP Vegas: End to End Congestion Avoidance on a Global
//!   Internet" (IEEE JSAC, 1995): the queue estimate from base and actual RTT, and the
//!   alpha/beta band (classically 2–3 and 4–6 packets).
//! - Netflix `concurrency-limits`, `VegasLimit`: defaults we follow — initial limit 20,
//!   maximum 1000, smoothing 1.0, alpha = 3·log10, beta = 6·log10, threshold = log10 and
//!   steps of ±log10 (log10 of the integer limit, at least 1), fast growth by beta when
//!   the queue is at most the threshold, no growth while fewer than half the limit are in
//!   flight, any drop decreases, and a new no-load RTT probe every
//!   `jitter × 30 × limit` samples with the jitter drawn from [0.5, 1).

use super::{check_bounds, check_smoothing, clamp_f64, whole, LimitSample, StateWords};
use crate::error::{check_f64, check_u64, inconsistent, ConfigError, ConfigErrorKind};
use crate::math;
use crate::rng::{mix64, unit_f64, GOLDEN_GAMMA};

/// Default for [`VegasConfig::initial_limit`]. Valid range: `min_limit..=max_limit`.
pub const DEFAULT_INITIAL_LIMIT: u64 = 20;
/// Default for [`VegasConfig::min_limit`]. Valid range: `1..=1_000_000`.
pub const DEFAULT_MIN_LIMIT: u64 = 1;
/// Default for [`VegasConfig::max_limit`]. Valid range: `min_limit..=1_000_000`.
pub const DEFAULT_MAX_LIMIT: u64 = 1_000;
/// Default for [`VegasConfig::smoothing`]: no smoothing. Valid range: `0.0 < s <= 1.0`.
pub const DEFAULT_SMOOTHING: f64 = 1.0;
/// Default for [`VegasConfig::alpha`]. Valid range: `threshold..=beta`, within `0.0..=1000.0`.
pub const DEFAULT_ALPHA: f64 = 3.0;
/// Default for [`VegasConfig::beta`]. Valid range: `alpha..=1000.0`.
pub const DEFAULT_BETA: f64 = 6.0;
/// Default for [`VegasConfig::threshold`]. Valid range: `0.0..=alpha`.
pub const DEFAULT_THRESHOLD: f64 = 1.0;
/// Default for [`VegasConfig::probe_multiplier`]. Valid range: `1..=1_000_000`.
pub const DEFAULT_PROBE_MULTIPLIER: u64 = 30;
/// Default for [`VegasConfig::probe_jitter`]. Valid range: `0.0 <= j < 1.0`.
pub const DEFAULT_PROBE_JITTER: f64 = 0.5;
/// Default for [`VegasConfig::probe_seed`]. Any `u64`.
pub const DEFAULT_PROBE_SEED: u64 = 0;

/// Configuration of a [`VegasLimit`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VegasConfig {
    /// The limit before any sample. Default [`DEFAULT_INITIAL_LIMIT`].
    pub initial_limit: u64,
    /// The limit never goes below this. Default [`DEFAULT_MIN_LIMIT`].
    pub min_limit: u64,
    /// The limit never goes above this. Default [`DEFAULT_MAX_LIMIT`].
    pub max_limit: u64,
    /// Weight of a new target in the estimate (1.0 = jump to it). Default
    /// [`DEFAULT_SMOOTHING`].
    pub smoothing: f64,
    /// Grow by one step while the queue is below `alpha × L10`. Default [`DEFAULT_ALPHA`].
    pub alpha: f64,
    /// Shrink by one step while the queue is above `beta × L10`; grow by `beta × L10` when
    /// the queue is at most `threshold × L10`. Default [`DEFAULT_BETA`].
    pub beta: f64,
    /// A queue at most `threshold × L10` counts as no queue. Default [`DEFAULT_THRESHOLD`].
    pub threshold: f64,
    /// Re-probe the no-load RTT every `f × probe_multiplier × limit` samples.
    /// Default [`DEFAULT_PROBE_MULTIPLIER`].
    pub probe_multiplier: u64,
    /// How much the re-probe period is randomly shortened: `f = 1 − probe_jitter × u`,
    /// `u` uniform in `[0, 1)`; 0 disables jitter. Default [`DEFAULT_PROBE_JITTER`].
    pub probe_jitter: f64,
    /// Seed of the jitter draws. Default [`DEFAULT_PROBE_SEED`].
    pub probe_seed: u64,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig {
            initial_limit: DEFAULT_INITIAL_LIMIT,
            min_limit: DEFAULT_MIN_LIMIT,
            max_limit: DEFAULT_MAX_LIMIT,
            smoothing: DEFAULT_SMOOTHING,
            alpha: DEFAULT_ALPHA,
            beta: DEFAULT_BETA,
            threshold: DEFAULT_THRESHOLD,
            probe_multiplier: DEFAULT_PROBE_MULTIPLIER,
            probe_jitter: DEFAULT_PROBE_JITTER,
            probe_seed: DEFAULT_PROBE_SEED,
        }
    }
}

impl VegasConfig {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_bounds(self.initial_limit, self.min_limit, self.max_limit)?;
        check_smoothing(self.smoothing)?;
        check_f64("alpha", self.alpha, 0.0, 1000.0, "0.0..=1000.0")?;
        check_f64("beta", self.beta, 0.0, 1000.0, "0.0..=1000.0")?;
        check_f64("threshold", self.threshold, 0.0, 1000.0, "0.0..=1000.0")?;
        if self.threshold > self.alpha {
            return Err(inconsistent("threshold", "threshold <= alpha"));
        }
        if self.alpha > self.beta {
            return Err(inconsistent("beta", "beta >= alpha"));
        }
        check_u64(
            "probe_multiplier",
            self.probe_multiplier,
            1,
            1_000_000,
            "1..=1000000",
        )?;
        const JITTER: &str = "0.0 <= probe_jitter < 1.0";
        let j = check_f64("probe_jitter", self.probe_jitter, 0.0, 1.0, JITTER)?;
        if j >= 1.0 {
            return Err(ConfigError::new(
                "probe_jitter",
                ConfigErrorKind::OutOfRange,
                JITTER,
            ));
        }
        Ok(())
    }
}

/// `max(1, ⌊log10 ⌊x⌋⌋)`.
fn log10_step(x: f64) -> f64 {
    let n = math::floor(x);
    if n < 10.0 {
        1.0
    } else {
        math::floor(math::log10(n)).max(1.0)
    }
}

/// The Vegas limit: see the [module documentation](self) for the definition.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VegasLimit {
    config: VegasConfig,
    estimate: f64,
    /// The no-load RTT in nanoseconds; 0 until the first sample.
    min_rtt: u64,
    probe_count: u64,
    probe_factor: f64,
    rng_state: u64,
}

impl VegasLimit {
    /// A validated Vegas limit at `initial_limit`.
    pub fn new(config: VegasConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut v = VegasLimit {
            config,
            estimate: config.initial_limit as f64,
            min_rtt: 0,
            probe_count: 0,
            probe_factor: 1.0,
            rng_state: config.probe_seed,
        };
        v.probe_factor = v.draw_factor();
        Ok(v)
    }

    /// The configuration.
    pub fn config(&self) -> &VegasConfig {
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

    /// The no-load RTT in use (zero before the first sample).
    pub fn min_rtt(&self) -> crate::Nanos {
        crate::Nanos(self.min_rtt)
    }

    /// Samples since the last no-load re-probe.
    pub fn probe_count(&self) -> u64 {
        self.probe_count
    }

    /// The current jitter factor `f` of the re-probe period.
    pub fn probe_factor(&self) -> f64 {
        self.probe_factor
    }

    fn draw_factor(&mut self) -> f64 {
        self.rng_state = self.rng_state.wrapping_add(GOLDEN_GAMMA);
        1.0 - self.config.probe_jitter * unit_f64(mix64(self.rng_state))
    }

    /// Feed one sample; returns the (possibly new) limit.
    pub fn update(&mut self, s: LimitSample) -> u64 {
        let c = self.config;
        let rtt = s.rtt.0.max(1);

        self.probe_count = self.probe_count.saturating_add(1);
        let probe_at = self.probe_factor * c.probe_multiplier as f64 * self.estimate;
        if self.probe_count as f64 >= probe_at {
            self.probe_count = 0;
            self.min_rtt = rtt;
            self.probe_factor = self.draw_factor();
            return self.limit();
        }
        if self.min_rtt == 0 || rtt < self.min_rtt {
            self.min_rtt = rtt;
            return self.limit();
        }

        let e = self.estimate;
        let step = log10_step(e);
        let queue = math::ceil(e * (1.0 - self.min_rtt as f64 / rtt as f64));
        let target = if s.dropped {
            e - step
        } else if (s.in_flight as f64) * 2.0 < e {
            return self.limit();
        } else if queue <= c.threshold * step {
            e + c.beta * step
        } else if queue < c.alpha * step {
            e + step
        } else if queue > c.beta * step {
            e - step
        } else {
            return self.limit();
        };
        let (lo, hi) = (c.min_limit as f64, c.max_limit as f64);
        let target = clamp_f64(target, lo, hi);
        // The blend of two values inside [lo, hi] is inside too, except for float rounding
        // (0.95 × 7 + 0.05 × 7 = 6.999…): clamp again so the limit never leaves its bounds.
        self.estimate = clamp_f64((1.0 - c.smoothing) * e + c.smoothing * target, lo, hi);
        self.limit()
    }

    pub(crate) fn to_words(self) -> StateWords {
        [
            self.estimate.to_bits(),
            self.min_rtt,
            self.probe_count,
            self.probe_factor.to_bits(),
            self.rng_state,
            0,
        ]
    }

    pub(crate) fn from_words(config: VegasConfig, w: &StateWords) -> Self {
        let [estimate, min_rtt, probe_count, probe_factor, rng_state, _] = *w;
        VegasLimit {
            config,
            estimate: f64::from_bits(estimate),
            min_rtt,
            probe_count,
            probe_factor: f64::from_bits(probe_factor),
            rng_state,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Nanos, Rng};

    fn no_jitter() -> VegasConfig {
        VegasConfig {
            probe_jitter: 0.0,
            ..VegasConfig::default()
        }
    }

    fn s(rtt_ms: u64, in_flight: u64, dropped: bool) -> LimitSample {
        LimitSample {
            now: Nanos::ZERO,
            rtt: Nanos::from_millis(rtt_ms),
            in_flight,
            dropped,
        }
    }

    #[test]
    fn step_is_log10_of_the_integer_limit() {
        assert_eq!(log10_step(1.0), 1.0);
        assert_eq!(log10_step(99.9), 1.0);
        assert_eq!(log10_step(100.0), 2.0);
        assert_eq!(log10_step(999.99), 2.0);
        assert_eq!(log10_step(1000.0), 3.0);
        assert_eq!(log10_step(10_000.0), 4.0);
    }

    #[test]
    fn grows_fast_without_queue_and_shrinks_on_long_queue() {
        let mut v = VegasLimit::new(no_jitter()).unwrap();
        assert_eq!(v.update(s(10, 20, false)), 20); // sets min_rtt
        assert_eq!(v.min_rtt(), Nanos::from_millis(10));
        // Same RTT: queue 0 <= threshold 1 → +beta·1 = +6.
        assert_eq!(v.update(s(10, 20, false)), 26);
        // 26 × (1 − 10/30) = 17.33 → 18 > 6·1 → −1.
        assert_eq!(v.update(s(30, 26, false)), 25);
        // Between alpha and beta: 25 × (1 − 10/12) = 4.17 → 5 ∈ [3, 6]: unchanged.
        assert_eq!(v.update(s(12, 25, false)), 25);
        // A drop: −1 whatever the RTT.
        assert_eq!(v.update(s(10, 0, true)), 24);
        // Unused: 2 × 11 < 24 → unchanged.
        assert_eq!(v.update(s(10, 11, false)), 24);
    }

    #[test]
    fn reprobe_resets_min_rtt() {
        let mut v = VegasLimit::new(VegasConfig {
            initial_limit: 1,
            probe_multiplier: 3,
            ..no_jitter()
        })
        .unwrap();
        // A probe comes when probe_count >= 1 × 3 × E; E moves, so follow it call by call.
        assert_eq!(v.update(s(10, 1, false)), 1); // count 1 < 3: sets min_rtt = 10 ms
        assert_eq!(v.update(s(10, 1, false)), 7); // count 2 < 3: queue 0 → +6
                                                  // count 3 < 21: 7 × (1 − 10/50) = 5.6 → 6, not > beta 6 and not < alpha 3.
        assert_eq!(v.update(s(50, 7, false)), 7);
        // Drops, −1 each: counts 4..=8 against probe_at 21, 18, 15, 12, 9.
        for expected in [6, 5, 4, 3, 2] {
            assert_eq!(v.update(s(50, 7, true)), expected);
        }
        assert_eq!(v.probe_count(), 8);
        assert_eq!(v.min_rtt(), Nanos::from_millis(10));
        // count 9 >= 3 × 2: a probe. min_rtt rises to the sample's 80 ms, nothing else.
        assert_eq!(v.update(s(80, 7, true)), 2);
        assert_eq!(v.min_rtt(), Nanos::from_millis(80));
        assert_eq!(v.probe_count(), 0);
    }

    #[test]
    fn jitter_follows_splitmix() {
        let v = VegasLimit::new(VegasConfig {
            probe_seed: 42,
            ..VegasConfig::default()
        })
        .unwrap();
        let u = Rng::new(42).next_f64();
        assert_eq!(v.probe_factor(), 1.0 - 0.5 * u);
        assert!(v.probe_factor() > 0.5 && v.probe_factor() <= 1.0);
    }

    #[test]
    fn smoothing_and_clamps() {
        let mut v = VegasLimit::new(VegasConfig {
            smoothing: 0.5,
            max_limit: 22,
            ..no_jitter()
        })
        .unwrap();
        v.update(s(10, 20, false));
        // target 26 clamped to 22, E = 0.5·20 + 0.5·22 = 21.
        assert_eq!(v.update(s(10, 20, false)), 21);
        assert_eq!(v.estimate(), 21.0);
    }

    #[test]
    fn zero_rtt_counts_as_one_nanosecond() {
        let mut v = VegasLimit::new(no_jitter()).unwrap();
        v.update(LimitSample::default());
        assert_eq!(v.min_rtt(), Nanos(1));
    }

    #[test]
    fn rejects_bad_config() {
        let d = VegasConfig::default();
        let e = |c: VegasConfig| c.validate().unwrap_err();
        assert_eq!(
            e(VegasConfig {
                smoothing: 0.0,
                ..d
            })
            .field(),
            "smoothing"
        );
        assert_eq!(e(VegasConfig { alpha: 7.0, ..d }).field(), "beta");
        assert_eq!(
            e(VegasConfig {
                threshold: 4.0,
                ..d
            })
            .field(),
            "threshold"
        );
        assert_eq!(
            e(VegasConfig {
                probe_jitter: 1.0,
                ..d
            })
            .kind(),
            ConfigErrorKind::OutOfRange
        );
        assert_eq!(
            e(VegasConfig {
                probe_multiplier: 0,
                ..d
            })
            .kind(),
            ConfigErrorKind::Zero
        );
        assert_eq!(
            e(VegasConfig {
                beta: f64::INFINITY,
                ..d
            })
            .kind(),
            ConfigErrorKind::NotFinite
        );
    }
}
