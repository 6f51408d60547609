//! [`CircuitBreakerConfig`]: every setting of a breaker, its default and its valid range.

use crate::error::{check_f64, check_f64_above, check_nanos, check_u64, inconsistent, ConfigError};
use crate::time::Nanos;

/// Which recent calls the breaker judges.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WindowKind {
    /// The last [`CircuitBreakerConfig::window_size`] recorded outcomes.
    Count = 0,
    /// The outcomes of the last [`CircuitBreakerConfig::window_duration`], kept in
    /// [`CircuitBreakerConfig::window_buckets`] buckets of equal width.
    Time = 1,
}

named_enum!(WindowKind {
    Count => "count",
    Time => "time",
});

/// Default capacity (the const generic of [`super::CircuitBreaker`]): 128 cells, enough for
/// a count window of up to 128 calls or a time window of up to 42 buckets (3 cells each).
pub const DEFAULT_CAPACITY: usize = 128;

/// Default for [`CircuitBreakerConfig::window_kind`]: a count window.
pub const DEFAULT_WINDOW_KIND: WindowKind = WindowKind::Count;
/// Default for [`CircuitBreakerConfig::window_size`]: the last 100 calls.
/// Valid range: `1..=MAX_WINDOW_SIZE`, and at most the breaker's capacity.
pub const DEFAULT_WINDOW_SIZE: u64 = 100;
/// Largest accepted [`CircuitBreakerConfig::window_size`].
pub const MAX_WINDOW_SIZE: u64 = 65_536;
/// Default for [`CircuitBreakerConfig::window_duration`]: 10 s.
/// Valid range: `1 µs × window_buckets ..= 366 days`, a whole multiple of `window_buckets`.
pub const DEFAULT_WINDOW_DURATION: Nanos = Nanos::from_secs(10);
/// Largest accepted [`CircuitBreakerConfig::window_duration`] (366 days).
pub const MAX_WINDOW_DURATION: Nanos = Nanos::from_secs(366 * 86_400);
/// Default for [`CircuitBreakerConfig::window_buckets`]: 10 (1 s buckets by default).
/// Valid range: `1..=MAX_WINDOW_BUCKETS`, and `3 × window_buckets` at most the capacity.
pub const DEFAULT_WINDOW_BUCKETS: u64 = 10;
/// Largest accepted [`CircuitBreakerConfig::window_buckets`].
pub const MAX_WINDOW_BUCKETS: u64 = 21_845;
/// Default for [`CircuitBreakerConfig::failure_rate_threshold`]: 0.5 (50 %).
/// Valid range: `0.0 < x <= 1.0`.
pub const DEFAULT_FAILURE_RATE_THRESHOLD: f64 = 0.5;
/// Default for [`CircuitBreakerConfig::slow_call_duration`]: 60 s.
/// Valid range: `1 ns..=Nanos::MAX`; [`Nanos::MAX`] turns slow-call detection off.
pub const DEFAULT_SLOW_CALL_DURATION: Nanos = Nanos::from_secs(60);
/// Default for [`CircuitBreakerConfig::slow_call_rate_threshold`]: 1.0 (all calls slow).
/// Valid range: `0.0 < x <= 1.0`.
pub const DEFAULT_SLOW_CALL_RATE_THRESHOLD: f64 = 1.0;
/// Default for [`CircuitBreakerConfig::minimum_calls`]: 0, meaning "automatic":
/// [`AUTO_MINIMUM_CALLS`] calls, or the whole window for a count window smaller than that.
/// Valid range: `0..=MAX_MINIMUM_CALLS`; for a count window at most `window_size`.
pub const DEFAULT_MINIMUM_CALLS: u64 = 0;
/// What `minimum_calls = 0` ("automatic") stands for: 10 calls (fewer only for a count
/// window of fewer calls). Ten calls, not a full window: a breaker that starts cold in front
/// of a dead dependency opens after 10 failures, not 100; and a time window does not open on
/// its first failure (a single failed call is a 100 % failure rate of one).
pub const AUTO_MINIMUM_CALLS: u64 = 10;
/// Largest accepted [`CircuitBreakerConfig::minimum_calls`].
pub const MAX_MINIMUM_CALLS: u64 = 1_000_000_000;
/// Default for [`CircuitBreakerConfig::open_duration`]: 5 s.
/// Valid range: `1 µs..=MAX_OPEN_DURATION`, at most `max_open_duration`.
pub const DEFAULT_OPEN_DURATION: Nanos = Nanos::from_secs(5);
/// Largest accepted [`CircuitBreakerConfig::open_duration`] and
/// [`CircuitBreakerConfig::max_open_duration`] (366 days).
pub const MAX_OPEN_DURATION: Nanos = Nanos::from_secs(366 * 86_400);
/// Default for [`CircuitBreakerConfig::open_duration_multiplier`]: 1.0 (no growth).
/// Valid range: `1.0..=100.0`.
pub const DEFAULT_OPEN_DURATION_MULTIPLIER: f64 = 1.0;
/// Largest accepted [`CircuitBreakerConfig::open_duration_multiplier`].
pub const MAX_OPEN_DURATION_MULTIPLIER: f64 = 100.0;
/// Default for [`CircuitBreakerConfig::max_open_duration`]: 300 s.
/// Valid range: `open_duration..=MAX_OPEN_DURATION`.
pub const DEFAULT_MAX_OPEN_DURATION: Nanos = Nanos::from_secs(300);
/// Default for [`CircuitBreakerConfig::half_open_probes`]: 3.
/// Valid range: `1..=MAX_HALF_OPEN_PROBES`.
pub const DEFAULT_HALF_OPEN_PROBES: u64 = 3;
/// Largest accepted [`CircuitBreakerConfig::half_open_probes`].
pub const MAX_HALF_OPEN_PROBES: u64 = 1_000;
/// Default for [`CircuitBreakerConfig::probe_timeout`]: 1 s.
/// Valid range: `1 ns..=Nanos::MAX` (set it above the dependency's healthy P99).
pub const DEFAULT_PROBE_TIMEOUT: Nanos = Nanos::from_secs(1);

/// The smallest time-window bucket: 1 µs.
const MIN_BUCKET_WIDTH: Nanos = Nanos::from_micros(1);

/// A breaker's settings. Plain `Copy` data; [`CircuitBreakerConfig::validate`] checks it and
/// [`super::CircuitBreaker::new`] refuses an invalid one.
///
/// Rates are compared as `count as f64 / calls as f64 >= threshold`; the division is IEEE-754
/// double precision, correctly rounded, so `10 / 20 >= 0.5` and `3 / 10 >= 0.3` both hold.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CircuitBreakerConfig {
    /// Count window or time window. Default [`DEFAULT_WINDOW_KIND`].
    pub window_kind: WindowKind,
    /// Count window: how many of the most recent outcomes are judged.
    /// Default [`DEFAULT_WINDOW_SIZE`]; `1..=MAX_WINDOW_SIZE` and at most the capacity.
    pub window_size: u64,
    /// Time window: how far back outcomes count. Default [`DEFAULT_WINDOW_DURATION`]; a whole
    /// multiple of `window_buckets`, with buckets at least 1 µs wide, at most
    /// [`MAX_WINDOW_DURATION`].
    pub window_duration: Nanos,
    /// Time window: how many buckets the duration is split into. Default
    /// [`DEFAULT_WINDOW_BUCKETS`]; `1..=MAX_WINDOW_BUCKETS`, and `3 × buckets` at most the
    /// capacity. The window covers the current bucket and the `buckets - 1` before it.
    pub window_buckets: u64,
    /// Open when at least this fraction of the judged calls failed.
    /// Default [`DEFAULT_FAILURE_RATE_THRESHOLD`]; `0.0 < x <= 1.0`.
    pub failure_rate_threshold: f64,
    /// A call is slow when `now - acquired_at >= slow_call_duration`, whatever its result.
    /// Default [`DEFAULT_SLOW_CALL_DURATION`]; `1 ns..`; [`Nanos::MAX`] means never slow.
    pub slow_call_duration: Nanos,
    /// Open when at least this fraction of the judged calls were slow.
    /// Default [`DEFAULT_SLOW_CALL_RATE_THRESHOLD`]; `0.0 < x <= 1.0`.
    pub slow_call_rate_threshold: f64,
    /// Rates are only judged once the window holds at least this many calls. `0` means
    /// automatic: [`AUTO_MINIMUM_CALLS`] (10), or the whole window for a smaller count window.
    /// Default [`DEFAULT_MINIMUM_CALLS`]; `0..=MAX_MINIMUM_CALLS`, and at most `window_size`
    /// for a count window.
    pub minimum_calls: u64,
    /// How long the breaker stays open the first time it opens.
    /// Default [`DEFAULT_OPEN_DURATION`]; `1 µs..=max_open_duration`.
    pub open_duration: Nanos,
    /// Each consecutive re-opening (from half-open, without a close in between) multiplies
    /// the open duration by this factor: the k-th opening in a row stays open
    /// `min(max_open_duration, open_duration × multiplier^(k-1))`.
    /// Default [`DEFAULT_OPEN_DURATION_MULTIPLIER`]; `1.0..=100.0`.
    pub open_duration_multiplier: f64,
    /// Cap on the grown open duration. Default [`DEFAULT_MAX_OPEN_DURATION`];
    /// `open_duration..=MAX_OPEN_DURATION`.
    pub max_open_duration: Nanos,
    /// How many probes half-open admits; all of them must succeed to close.
    /// Default [`DEFAULT_HALF_OPEN_PROBES`]; `1..=MAX_HALF_OPEN_PROBES`.
    pub half_open_probes: u64,
    /// The timeout each probe is told to use. Default [`DEFAULT_PROBE_TIMEOUT`]; `1 ns..`.
    pub probe_timeout: Nanos,
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        CircuitBreakerConfig {
            window_kind: DEFAULT_WINDOW_KIND,
            window_size: DEFAULT_WINDOW_SIZE,
            window_duration: DEFAULT_WINDOW_DURATION,
            window_buckets: DEFAULT_WINDOW_BUCKETS,
            failure_rate_threshold: DEFAULT_FAILURE_RATE_THRESHOLD,
            slow_call_duration: DEFAULT_SLOW_CALL_DURATION,
            slow_call_rate_threshold: DEFAULT_SLOW_CALL_RATE_THRESHOLD,
            minimum_calls: DEFAULT_MINIMUM_CALLS,
            open_duration: DEFAULT_OPEN_DURATION,
            open_duration_multiplier: DEFAULT_OPEN_DURATION_MULTIPLIER,
            max_open_duration: DEFAULT_MAX_OPEN_DURATION,
            half_open_probes: DEFAULT_HALF_OPEN_PROBES,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
        }
    }
}

impl CircuitBreakerConfig {
    /// A breaker that trips fast: it judges only the last 20 calls (not the default 100),
    /// opens at 50 % failures once those 20 are in, stays open 5 s, then lets 3 probes
    /// through with a 100 ms timeout. (These are the numbers of setting C6 in the Basketly
    /// incident that the simulator replays.)
    pub fn fast_trip() -> Self {
        CircuitBreakerConfig {
            window_size: 20,
            minimum_calls: 20,
            open_duration: Nanos::from_secs(5),
            half_open_probes: 3,
            probe_timeout: Nanos::from_millis(100),
            ..CircuitBreakerConfig::default()
        }
    }

    /// Check every field; the error names the first bad one (in declaration order), then
    /// the contradictions between fields.
    ///
    /// This does not know the breaker's capacity; [`super::CircuitBreaker::new`] also checks
    /// that the window fits in it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_u64(
            "window_size",
            self.window_size,
            1,
            MAX_WINDOW_SIZE,
            "1..=65536 calls, at most the breaker's capacity",
        )?;
        check_nanos(
            "window_duration",
            self.window_duration,
            MIN_BUCKET_WIDTH,
            MAX_WINDOW_DURATION,
            "1 µs..=366 days, a whole multiple of window_buckets",
        )?;
        check_u64(
            "window_buckets",
            self.window_buckets,
            1,
            MAX_WINDOW_BUCKETS,
            "1..=21845 buckets, 3 × buckets at most the breaker's capacity",
        )?;
        check_f64_above(
            "failure_rate_threshold",
            self.failure_rate_threshold,
            0.0,
            1.0,
            "a fraction in 0.0 < x <= 1.0",
        )?;
        check_nanos(
            "slow_call_duration",
            self.slow_call_duration,
            Nanos(1),
            Nanos::MAX,
            "a duration of at least 1 ns (Nanos::MAX: never slow)",
        )?;
        check_f64_above(
            "slow_call_rate_threshold",
            self.slow_call_rate_threshold,
            0.0,
            1.0,
            "a fraction in 0.0 < x <= 1.0",
        )?;
        check_u64(
            "minimum_calls",
            self.minimum_calls,
            0,
            MAX_MINIMUM_CALLS,
            "0 (automatic) ..=1e9 calls",
        )?;
        check_nanos(
            "open_duration",
            self.open_duration,
            Nanos::from_micros(1),
            MAX_OPEN_DURATION,
            "1 µs..=366 days, at most max_open_duration",
        )?;
        check_f64(
            "open_duration_multiplier",
            self.open_duration_multiplier,
            1.0,
            MAX_OPEN_DURATION_MULTIPLIER,
            "1.0..=100.0",
        )?;
        check_nanos(
            "max_open_duration",
            self.max_open_duration,
            Nanos::from_micros(1),
            MAX_OPEN_DURATION,
            "open_duration..=366 days",
        )?;
        check_u64(
            "half_open_probes",
            self.half_open_probes,
            1,
            MAX_HALF_OPEN_PROBES,
            "1..=1000 probes",
        )?;
        check_nanos(
            "probe_timeout",
            self.probe_timeout,
            Nanos(1),
            Nanos::MAX,
            "a duration of at least 1 ns",
        )?;

        // Contradictions between fields.
        if self.window_duration.0 % self.window_buckets != 0
            || self.window_duration.0 / self.window_buckets < MIN_BUCKET_WIDTH.0
        {
            return Err(inconsistent(
                "window_duration",
                "a whole multiple of window_buckets, with buckets at least 1 µs wide",
            ));
        }
        if self.window_kind == WindowKind::Count && self.minimum_calls > self.window_size {
            return Err(inconsistent(
                "minimum_calls",
                "at most window_size for a count window (0: the whole window)",
            ));
        }
        if self.max_open_duration < self.open_duration {
            return Err(inconsistent("max_open_duration", "at least open_duration"));
        }
        Ok(())
    }

    /// Check this config against a breaker capacity of `capacity` cells (after `validate`).
    pub(crate) fn validate_capacity(&self, capacity: usize) -> Result<(), ConfigError> {
        let cap = capacity as u64;
        match self.window_kind {
            WindowKind::Count if self.window_size > cap => Err(ConfigError::new(
                "window_size",
                crate::error::ConfigErrorKind::OutOfRange,
                "at most the breaker's capacity (CircuitBreaker<CAP>, default 128)",
            )),
            WindowKind::Time if self.window_buckets.saturating_mul(3) > cap => {
                Err(ConfigError::new(
                    "window_buckets",
                    crate::error::ConfigErrorKind::OutOfRange,
                    "3 × window_buckets at most the breaker's capacity (default 128: 42 buckets)",
                ))
            }
            _ => Ok(()),
        }
    }

    /// The minimum number of calls actually required before rates are judged.
    pub(crate) fn effective_minimum_calls(&self) -> u64 {
        match (self.window_kind, self.minimum_calls) {
            (WindowKind::Count, 0) => self.window_size.min(AUTO_MINIMUM_CALLS),
            (WindowKind::Time, 0) => AUTO_MINIMUM_CALLS,
            (_, m) => m,
        }
    }

    /// How long the `opens`-th consecutive opening lasts (`opens >= 1`):
    /// `min(max_open_duration, open_duration × multiplier^(opens-1))`, the product computed in
    /// `f64` and rounded down to a whole nanosecond.
    pub fn open_duration_for(&self, opens: u32) -> Nanos {
        let exponent = opens.saturating_sub(1);
        if exponent == 0 || self.open_duration_multiplier == 1.0 {
            return self.open_duration.min_of(self.max_open_duration);
        }
        let grown = self.open_duration.0 as f64
            * crate::math::pow(self.open_duration_multiplier, exponent as f64);
        // NaN cannot occur (finite factors), but it would land here too.
        if grown.is_nan() || grown >= self.max_open_duration.0 as f64 {
            return self.max_open_duration;
        }
        Nanos(crate::math::to_u64_saturating(crate::math::floor(grown)))
            .min_of(self.max_open_duration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ConfigErrorKind;

    fn err(c: CircuitBreakerConfig) -> (&'static str, ConfigErrorKind) {
        let e = c.validate().unwrap_err();
        (e.field(), e.kind())
    }

    #[test]
    fn defaults_and_fast_trip_are_valid() {
        assert_eq!(CircuitBreakerConfig::default().validate(), Ok(()));
        assert_eq!(CircuitBreakerConfig::fast_trip().validate(), Ok(()));
    }

    #[test]
    fn rejects_bad_fields() {
        let d = CircuitBreakerConfig::default();
        assert_eq!(
            err(CircuitBreakerConfig {
                failure_rate_threshold: f64::NAN,
                ..d
            }),
            ("failure_rate_threshold", ConfigErrorKind::NotFinite)
        );
        assert_eq!(
            err(CircuitBreakerConfig {
                failure_rate_threshold: 0.0,
                ..d
            }),
            ("failure_rate_threshold", ConfigErrorKind::Zero)
        );
        assert_eq!(
            err(CircuitBreakerConfig {
                slow_call_rate_threshold: 1.5,
                ..d
            }),
            ("slow_call_rate_threshold", ConfigErrorKind::OutOfRange)
        );
        assert_eq!(
            err(CircuitBreakerConfig {
                open_duration_multiplier: -1.0,
                ..d
            }),
            ("open_duration_multiplier", ConfigErrorKind::Negative)
        );
        assert_eq!(
            err(CircuitBreakerConfig {
                open_duration_multiplier: 0.5,
                ..d
            }),
            ("open_duration_multiplier", ConfigErrorKind::OutOfRange)
        );
        assert_eq!(
            err(CircuitBreakerConfig {
                window_size: 0,
                ..d
            }),
            ("window_size", ConfigErrorKind::Zero)
        );
        assert_eq!(
            err(CircuitBreakerConfig {
                half_open_probes: 1001,
                ..d
            }),
            ("half_open_probes", ConfigErrorKind::OutOfRange)
        );
        assert_eq!(
            err(CircuitBreakerConfig {
                probe_timeout: Nanos::ZERO,
                ..d
            }),
            ("probe_timeout", ConfigErrorKind::Zero)
        );
    }

    #[test]
    fn rejects_contradictions() {
        let d = CircuitBreakerConfig::default();
        assert_eq!(
            err(CircuitBreakerConfig {
                window_duration: Nanos(10_000_001),
                ..d
            }),
            ("window_duration", ConfigErrorKind::Inconsistent)
        );
        assert_eq!(
            err(CircuitBreakerConfig {
                window_size: 20,
                minimum_calls: 21,
                ..d
            }),
            ("minimum_calls", ConfigErrorKind::Inconsistent)
        );
        // The same minimum is fine for a time window.
        assert_eq!(
            CircuitBreakerConfig {
                window_kind: WindowKind::Time,
                window_size: 20,
                minimum_calls: 21,
                ..d
            }
            .validate(),
            Ok(())
        );
        assert_eq!(
            err(CircuitBreakerConfig {
                open_duration: Nanos::from_secs(400),
                ..d
            }),
            ("max_open_duration", ConfigErrorKind::Inconsistent)
        );
    }

    #[test]
    fn capacity_checks() {
        let c = CircuitBreakerConfig {
            window_size: 129,
            ..CircuitBreakerConfig::default()
        };
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.validate_capacity(128).unwrap_err().field(), "window_size");
        let t = CircuitBreakerConfig {
            window_kind: WindowKind::Time,
            window_buckets: 43,
            window_duration: Nanos::from_secs(43),
            ..CircuitBreakerConfig::default()
        };
        assert_eq!(
            t.validate_capacity(128).unwrap_err().field(),
            "window_buckets"
        );
        assert_eq!(t.validate_capacity(129), Ok(()));
    }

    #[test]
    fn open_duration_grows_and_caps() {
        let c = CircuitBreakerConfig {
            open_duration: Nanos::from_secs(5),
            open_duration_multiplier: 2.0,
            max_open_duration: Nanos::from_secs(30),
            ..CircuitBreakerConfig::default()
        };
        let secs = |k| c.open_duration_for(k);
        assert_eq!(secs(0), Nanos::from_secs(5));
        assert_eq!(secs(1), Nanos::from_secs(5));
        assert_eq!(secs(2), Nanos::from_secs(10));
        assert_eq!(secs(3), Nanos::from_secs(20));
        assert_eq!(secs(4), Nanos::from_secs(30));
        assert_eq!(secs(1023), Nanos::from_secs(30));
        let flat = CircuitBreakerConfig::default();
        assert_eq!(flat.open_duration_for(50), DEFAULT_OPEN_DURATION);
    }

    #[test]
    fn effective_minimum() {
        let mut c = CircuitBreakerConfig::fast_trip();
        assert_eq!(c.effective_minimum_calls(), 20);
        c.minimum_calls = 5;
        assert_eq!(c.effective_minimum_calls(), 5);
        c.minimum_calls = 0;
        assert_eq!(c.effective_minimum_calls(), AUTO_MINIMUM_CALLS);
        c.window_size = 4;
        assert_eq!(c.effective_minimum_calls(), 4);
        c.window_kind = WindowKind::Time;
        assert_eq!(c.effective_minimum_calls(), AUTO_MINIMUM_CALLS);
    }
}
