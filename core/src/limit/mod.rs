//! Adaptive concurrency limit algorithms: they compute a number, they do not enforce it.
//!
//! A limit algorithm watches samples of finished calls — `(now, rtt, in_flight, dropped)`
//! — and answers with the number of calls that should be allowed in flight at once. Three
//! are provided, each a plain `Copy` state machine that is **deterministic for a given
//! sample sequence** (no clock, no hidden randomness, all float math through
//! [`crate::math`]):
//!
//! - [`AimdLimit`] (additive increase, multiplicative decrease): +1 after each healthy
//!   interval, × `backoff_ratio` on a drop (timeout, 429/503, latency above a target), at
//!   most once per interval;
//! - [`VegasLimit`]: estimates the queue as `limit × (1 − min_rtt / rtt)` and grows while it
//!   is short, shrinks when it is long, with thresholds that scale with `log10(limit)`;
//! - [`GradientLimit`]: scales the limit by the ratio of a long-term RTT average to the
//!   current RTT, plus a fixed queue allowance, smoothed and clamped.
//!
//! [`Limit`] and [`LimitConfig`] wrap the three (and a fixed number) in one `#[repr(C, u8)]`
//! enum, so a limiter, a binding or the simulator can pick the algorithm from
//! configuration without generics or trait objects.
//!
//! # Why separate computing from enforcing
//! Enforcement ([`crate::limiter::Limiter`]) is a hot path shared by many threads: it must
//! be a couple of atomic operations. The algorithms are sequential arithmetic on a handful
//! of numbers. Keeping them apart lets the algorithms be tested one sample at a time, and
//! lets the limiter fold a whole window of samples into one algorithm update done by one
//! thread at a time without any other thread ever waiting. On their own the algorithms take
//! `&mut self`: they are single-owner state machines, not shared guards.
//!
//! # Examples
//! ```
//! use guards_core::limit::{AimdConfig, Limit, LimitConfig, LimitSample};
//! use guards_core::Nanos;
//!
//! let mut limit = Limit::new(LimitConfig::Aimd(AimdConfig {
//!     initial_limit: 10,
//!     ..AimdConfig::default()
//! }))?;
//! // A healthy sample starts the first interval; one interval (100 ms) later, +1.
//! let ok = |ms: u64| LimitSample {
//!     now: Nanos::from_millis(ms),
//!     rtt: Nanos::from_millis(5),
//!     in_flight: 10,
//!     dropped: false,
//! };
//! assert_eq!(limit.update(ok(0)), 10);
//! assert_eq!(limit.update(ok(100)), 11);
//! // A drop halves it.
//! assert_eq!(limit.update(LimitSample { dropped: true, ..ok(150) }), 5);
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//! - Netflix `concurrency-limits` (2018–): the split between `limit/` (AIMD, Vegas,
//!   Gradient2 compute a number) and `limiter/` (enforce it), and the reference defaults
//!   each submodule cites.
//! - Envoy adaptive concurrency filter: a gradient controller that compares a periodically
//!   re-measured minimum RTT with the sampled RTT of each window and adds headroom.
//! - V. Jacobson, "Congestion Avoidance and Control" (SIGCOMM 1988), and TCP Vegas
//!   (Brakmo and Peterson, 1995), where AIMD and queue estimation from RTT come from.

pub mod aimd;
pub mod gradient;
pub mod vegas;

pub use aimd::{AimdConfig, AimdLimit};
pub use gradient::{GradientConfig, GradientLimit};
pub use vegas::{VegasConfig, VegasLimit};

use crate::error::{check_f64_above, check_u64, inconsistent, ConfigError};
use crate::time::Nanos;

/// Largest `initial_limit`, `min_limit` and `max_limit` an adaptive algorithm accepts.
/// (A [`LimitConfig::Fixed`] limit may be anything in `1..=u64::MAX`.)
pub const MAX_LIMIT: u64 = 1_000_000;

/// How many `u64` words an algorithm's mutable state takes when the limiter keeps it in
/// atomics (crate-internal; see [`crate::limiter`]).
pub(crate) const STATE_WORDS: usize = 6;

/// The state words of an algorithm (crate-internal).
pub(crate) type StateWords = [u64; STATE_WORDS];

/// One observation of a finished call (or, through a limiter, of a window of calls).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LimitSample {
    /// When the call finished.
    pub now: Nanos,
    /// How long it took (round-trip time). A limiter passes the mean of a window.
    pub rtt: Nanos,
    /// How many calls were in flight when it started (a limiter passes the window's
    /// maximum). Algorithms use it to avoid growing a limit that is not being used.
    pub in_flight: u64,
    /// Whether it was dropped: timed out, refused with 429/503, or otherwise a sign of
    /// overload. A limiter passes `true` if any call in the window was dropped.
    pub dropped: bool,
}

/// Which algorithm a [`LimitConfig`] or [`Limit`] is. Stable names for bindings.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitAlgorithm {
    /// A fixed number that never changes.
    Fixed = 0,
    /// [`AimdLimit`].
    Aimd = 1,
    /// [`VegasLimit`].
    Vegas = 2,
    /// [`GradientLimit`].
    Gradient = 3,
}

named_enum!(LimitAlgorithm {
    Fixed => "fixed",
    Aimd => "aimd",
    Vegas => "vegas",
    Gradient => "gradient",
});

/// The configuration of a limit: a fixed number or one of the adaptive algorithms.
#[repr(C, u8)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LimitConfig {
    /// A fixed limit, `1..=u64::MAX` (`u64::MAX` means "no limit").
    Fixed(u64) = 0,
    /// Additive increase, multiplicative decrease.
    Aimd(AimdConfig) = 1,
    /// Queue estimation from the RTT above its minimum.
    Vegas(VegasConfig) = 2,
    /// Gradient of a long-term RTT average over the current RTT.
    Gradient(GradientConfig) = 3,
}

impl Default for LimitConfig {
    /// [`LimitConfig::Vegas`] with its defaults (the reference library's default limit).
    fn default() -> Self {
        LimitConfig::Vegas(VegasConfig::default())
    }
}

impl LimitConfig {
    /// Check every field; the error names the first bad one (field names are those of the
    /// algorithm's config struct, or `limit` for [`LimitConfig::Fixed`]).
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            LimitConfig::Fixed(n) => {
                check_u64("limit", *n, 1, u64::MAX, "1..=u64::MAX").map(|_| ())
            }
            LimitConfig::Aimd(c) => c.validate(),
            LimitConfig::Vegas(c) => c.validate(),
            LimitConfig::Gradient(c) => c.validate(),
        }
    }

    /// Which algorithm this configures.
    pub const fn algorithm(&self) -> LimitAlgorithm {
        match self {
            LimitConfig::Fixed(_) => LimitAlgorithm::Fixed,
            LimitConfig::Aimd(_) => LimitAlgorithm::Aimd,
            LimitConfig::Vegas(_) => LimitAlgorithm::Vegas,
            LimitConfig::Gradient(_) => LimitAlgorithm::Gradient,
        }
    }

    /// The limit before any sample has been seen.
    pub const fn initial_limit(&self) -> u64 {
        match self {
            LimitConfig::Fixed(n) => *n,
            LimitConfig::Aimd(c) => c.initial_limit,
            LimitConfig::Vegas(c) => c.initial_limit,
            LimitConfig::Gradient(c) => c.initial_limit,
        }
    }
}

/// A limit algorithm with its state: one of the adaptive algorithms, or a fixed number.
///
/// Single-owner (`&mut self`); [`crate::limiter::Limiter`] shares one between threads.
#[repr(C, u8)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// A fixed limit; samples are ignored.
    Fixed(u64) = 0,
    /// See [`AimdLimit`].
    Aimd(AimdLimit) = 1,
    /// See [`VegasLimit`].
    Vegas(VegasLimit) = 2,
    /// See [`GradientLimit`].
    Gradient(GradientLimit) = 3,
}

impl Limit {
    /// A validated limit in its initial state.
    pub fn new(config: LimitConfig) -> Result<Self, ConfigError> {
        Ok(match config {
            LimitConfig::Fixed(n) => {
                config.validate()?;
                Limit::Fixed(n)
            }
            LimitConfig::Aimd(c) => Limit::Aimd(AimdLimit::new(c)?),
            LimitConfig::Vegas(c) => Limit::Vegas(VegasLimit::new(c)?),
            LimitConfig::Gradient(c) => Limit::Gradient(GradientLimit::new(c)?),
        })
    }

    /// Feed one sample; returns the (possibly new) limit.
    pub fn update(&mut self, sample: LimitSample) -> u64 {
        match self {
            Limit::Fixed(n) => *n,
            Limit::Aimd(a) => a.update(sample),
            Limit::Vegas(v) => v.update(sample),
            Limit::Gradient(g) => g.update(sample),
        }
    }

    /// The current limit (at least 1).
    pub fn limit(&self) -> u64 {
        match self {
            Limit::Fixed(n) => *n,
            Limit::Aimd(a) => a.limit(),
            Limit::Vegas(v) => v.limit(),
            Limit::Gradient(g) => g.limit(),
        }
    }

    /// The configuration it was built from.
    pub fn config(&self) -> LimitConfig {
        match self {
            Limit::Fixed(n) => LimitConfig::Fixed(*n),
            Limit::Aimd(a) => LimitConfig::Aimd(*a.config()),
            Limit::Vegas(v) => LimitConfig::Vegas(*v.config()),
            Limit::Gradient(g) => LimitConfig::Gradient(*g.config()),
        }
    }

    /// Which algorithm this is.
    pub fn algorithm(&self) -> LimitAlgorithm {
        self.config().algorithm()
    }

    /// The mutable state as plain words (crate-internal: the limiter stores them in atomics).
    pub(crate) fn to_words(self) -> StateWords {
        match self {
            Limit::Fixed(_) => [0; STATE_WORDS],
            Limit::Aimd(a) => a.to_words(),
            Limit::Vegas(v) => v.to_words(),
            Limit::Gradient(g) => g.to_words(),
        }
    }

    /// Rebuild a limit from an already validated config and words from [`Limit::to_words`].
    pub(crate) fn from_words(config: &LimitConfig, words: &StateWords) -> Limit {
        match config {
            LimitConfig::Fixed(n) => Limit::Fixed(*n),
            LimitConfig::Aimd(c) => Limit::Aimd(AimdLimit::from_words(*c, words)),
            LimitConfig::Vegas(c) => Limit::Vegas(VegasLimit::from_words(*c, words)),
            LimitConfig::Gradient(c) => Limit::Gradient(GradientLimit::from_words(*c, words)),
        }
    }
}

/// Check `initial_limit`, `min_limit`, `max_limit`: each in `1..=MAX_LIMIT`,
/// `min_limit <= max_limit`, `min_limit <= initial_limit <= max_limit`.
pub(crate) fn check_bounds(initial: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    const RANGE: &str = "1..=1000000";
    check_u64("initial_limit", initial, 1, MAX_LIMIT, RANGE)?;
    check_u64("min_limit", min, 1, MAX_LIMIT, RANGE)?;
    check_u64("max_limit", max, 1, MAX_LIMIT, RANGE)?;
    if min > max {
        return Err(inconsistent("max_limit", "max_limit >= min_limit"));
    }
    if initial < min || initial > max {
        return Err(inconsistent(
            "initial_limit",
            "min_limit <= initial_limit <= max_limit",
        ));
    }
    Ok(())
}

/// Check `smoothing` (Vegas and Gradient): `0.0 < smoothing <= 1.0`.
pub(crate) fn check_smoothing(smoothing: f64) -> Result<(), ConfigError> {
    check_f64_above("smoothing", smoothing, 0.0, 1.0, "0.0 < smoothing <= 1.0")?;
    Ok(())
}

/// `x` clamped into `[lo, hi]` (callers guarantee `lo <= hi`); NaN gives `lo`.
#[inline]
pub(crate) fn clamp_f64(x: f64, lo: f64, hi: f64) -> f64 {
    if x.is_nan() || x < lo {
        lo
    } else if x > hi {
        hi
    } else {
        x
    }
}

/// The integer limit of a float estimate: rounded down, at least 1.
#[inline]
pub(crate) fn whole(estimate: f64) -> u64 {
    crate::math::to_u64_saturating(crate::math::floor(estimate)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ConfigErrorKind;

    #[test]
    fn fixed_ignores_samples() {
        let mut l = Limit::new(LimitConfig::Fixed(7)).unwrap();
        let s = LimitSample {
            now: Nanos(1),
            rtt: Nanos(1_000_000_000),
            in_flight: 7,
            dropped: true,
        };
        assert_eq!(l.update(s), 7);
        assert_eq!(l.limit(), 7);
        assert_eq!(l.algorithm(), LimitAlgorithm::Fixed);
        assert_eq!(
            Limit::new(LimitConfig::Fixed(0)).unwrap_err().kind(),
            ConfigErrorKind::Zero
        );
    }

    #[test]
    fn bounds_are_checked() {
        assert!(check_bounds(10, 1, 100).is_ok());
        assert_eq!(check_bounds(10, 20, 15).unwrap_err().field(), "max_limit");
        assert_eq!(
            check_bounds(5, 10, 15).unwrap_err().field(),
            "initial_limit"
        );
        assert_eq!(
            check_bounds(0, 1, 15).unwrap_err().kind(),
            ConfigErrorKind::Zero
        );
        assert_eq!(
            check_bounds(10, 1, MAX_LIMIT + 1).unwrap_err().kind(),
            ConfigErrorKind::OutOfRange
        );
    }

    #[test]
    fn words_round_trip_every_algorithm() {
        for cfg in [
            LimitConfig::Fixed(3),
            LimitConfig::Aimd(AimdConfig::default()),
            LimitConfig::Vegas(VegasConfig::default()),
            LimitConfig::Gradient(GradientConfig::default()),
        ] {
            let mut l = Limit::new(cfg).unwrap();
            for i in 1..50u64 {
                l.update(LimitSample {
                    now: Nanos::from_millis(i * 37),
                    rtt: Nanos::from_millis(10 + i % 7),
                    in_flight: 100,
                    dropped: i % 11 == 0,
                });
            }
            let back = Limit::from_words(&cfg, &l.to_words());
            assert_eq!(back, l);
            assert_eq!(back.config(), cfg);
        }
    }

    #[test]
    fn helpers() {
        assert_eq!(clamp_f64(f64::NAN, 1.0, 2.0), 1.0);
        assert_eq!(clamp_f64(3.0, 1.0, 2.0), 2.0);
        assert_eq!(whole(0.2), 1);
        assert_eq!(whole(12.99), 12);
        assert_eq!(LimitAlgorithm::Gradient.name(), "gradient");
        assert_eq!(LimitConfig::default().algorithm(), LimitAlgorithm::Vegas);
    }
}
