//! Time as a plain number: [`Nanos`], and where it comes from: [`Clock`].
//!
//! Core never reads a clock of its own. A call that depends on time takes a [`Clock`]: a
//! source of readings of some monotonic clock in nanoseconds (the epoch does not matter,
//! only differences do). A [`Nanos`] is itself a clock that always reads the same instant,
//! so tests and the simulator pass virtual times exactly as before; bindings pass a
//! function that reads the process's monotonic clock, and core calls it only on the
//! branches whose decision depends on time, at most once per call ([`OnceClock`]). A guard
//! whose common path needs no time (a closed count-window breaker that does not time its
//! calls, say) then costs no clock read at all. Durations use the same type as instants.
//!
//! Arithmetic is explicit and saturating: there are no `+`/`-` operators that could
//! overflow or underflow on user input.
//!
//! # Examples
//! ```
//! use guards_core::Nanos;
//! let start = Nanos::from_millis(5);
//! let later = start.saturating_add(Nanos::from_micros(250));
//! assert_eq!(later.saturating_sub(start), Nanos::new(250_000));
//! assert_eq!(Nanos::ZERO.saturating_sub(start), Nanos::ZERO);
//! assert_eq!(Nanos::from_secs_f64(0.06), Some(Nanos::from_millis(60)));
//! assert_eq!(Nanos::from_secs_f64(f64::NAN), None);
//! ```

use core::cell::Cell;
use core::fmt;

/// A source of the current instant, read by a guard only when a decision needs it.
///
/// Implemented by [`Nanos`] (a fixed instant: virtual time, tests, a caller that already
/// holds a reading) and by every `Fn() -> Nanos` (a real clock, read on demand). A guard
/// method reads a clock at most once per call: everything decided in one call is decided
/// at one instant.
///
/// ```
/// use core::cell::Cell;
/// use guards_core::{Clock, Nanos};
/// let reads = Cell::new(0);
/// let clock = || {
///     reads.set(reads.get() + 1);
///     Nanos::from_millis(7)
/// };
/// assert_eq!(clock.now(), Nanos::from_millis(7));
/// assert_eq!(Nanos::from_millis(3).now(), Nanos::from_millis(3));
/// assert_eq!(reads.get(), 1);
/// ```
pub trait Clock {
    /// The current instant.
    fn now(&self) -> Nanos;
}

impl Clock for Nanos {
    #[inline]
    fn now(&self) -> Nanos {
        *self
    }
}

impl<F: Fn() -> Nanos> Clock for F {
    #[inline]
    fn now(&self) -> Nanos {
        self()
    }
}

/// A [`Clock`] read at most once: the first [`OnceClock::get`] reads the inner clock, later
/// calls return that same instant. Guards use it inside one call so that every branch
/// agrees on `now` and the clock is read only if some branch asks; a binding can share one
/// across two guards it consults for the same call.
///
/// ```
/// use core::cell::Cell;
/// use guards_core::time::OnceClock;
/// use guards_core::Nanos;
/// let reads = Cell::new(0u32);
/// let once = OnceClock::new(|| {
///     reads.set(reads.get() + 1);
///     Nanos::new(42)
/// });
/// assert_eq!(once.read(), None);
/// assert_eq!(once.get(), Nanos::new(42));
/// assert_eq!(once.get(), Nanos::new(42));
/// assert_eq!(once.read(), Some(Nanos::new(42)));
/// assert_eq!(reads.get(), 1);
/// ```
#[derive(Debug)]
pub struct OnceClock<C> {
    clock: C,
    at: Cell<Option<Nanos>>,
}

impl<C: Clock> OnceClock<C> {
    /// Wrap `clock`; nothing is read yet.
    #[inline]
    pub const fn new(clock: C) -> Self {
        OnceClock {
            clock,
            at: Cell::new(None),
        }
    }

    /// The instant: read from the inner clock on the first call, remembered after.
    #[inline]
    pub fn get(&self) -> Nanos {
        match self.at.get() {
            Some(t) => t,
            None => {
                let t = self.clock.now();
                self.at.set(Some(t));
                t
            }
        }
    }

    /// The instant if it has been read, without reading it.
    #[inline]
    pub fn read(&self) -> Option<Nanos> {
        self.at.get()
    }
}

impl<C: Clock> Clock for OnceClock<C> {
    #[inline]
    fn now(&self) -> Nanos {
        self.get()
    }
}

/// A monotonic instant or a duration, in nanoseconds.
///
/// `u64` nanoseconds cover about 584 years, so a monotonic clock never overflows it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Zero: the epoch, or an empty duration.
    pub const ZERO: Nanos = Nanos(0);
    /// The largest representable value; used as "never" / "no deadline".
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// From a count of nanoseconds.
    #[inline]
    pub const fn new(nanos: u64) -> Self {
        Nanos(nanos)
    }

    /// From microseconds (saturating at [`Nanos::MAX`]).
    #[inline]
    pub const fn from_micros(micros: u64) -> Self {
        Nanos(micros.saturating_mul(1_000))
    }

    /// From milliseconds (saturating at [`Nanos::MAX`]).
    #[inline]
    pub const fn from_millis(millis: u64) -> Self {
        Nanos(millis.saturating_mul(1_000_000))
    }

    /// From seconds (saturating at [`Nanos::MAX`]).
    #[inline]
    pub const fn from_secs(secs: u64) -> Self {
        Nanos(secs.saturating_mul(1_000_000_000))
    }

    /// From fractional seconds, rounded to the nearest nanosecond.
    ///
    /// Returns `None` for NaN, ±∞, negative values and values above [`Nanos::MAX`].
    pub fn from_secs_f64(secs: f64) -> Option<Self> {
        if !secs.is_finite() || secs < 0.0 {
            return None;
        }
        let ns = crate::math::round(secs * 1e9);
        // 2^64 as f64 is exact; anything at or above it does not fit.
        if ns >= 18_446_744_073_709_551_616.0 {
            return None;
        }
        Some(Nanos(ns as u64))
    }

    /// The raw nanosecond count.
    #[inline]
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// As fractional seconds.
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// As whole milliseconds, rounded down.
    #[inline]
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }

    /// `self + rhs`, saturating at [`Nanos::MAX`].
    #[inline]
    #[must_use]
    pub const fn saturating_add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(rhs.0))
    }

    /// `self - rhs`, saturating at [`Nanos::ZERO`].
    #[inline]
    #[must_use]
    pub const fn saturating_sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(rhs.0))
    }

    /// `self + rhs`, or `None` on overflow.
    #[inline]
    pub const fn checked_add(self, rhs: Nanos) -> Option<Nanos> {
        match self.0.checked_add(rhs.0) {
            Some(v) => Some(Nanos(v)),
            None => None,
        }
    }

    /// `self - rhs`, or `None` if `rhs > self`.
    #[inline]
    pub const fn checked_sub(self, rhs: Nanos) -> Option<Nanos> {
        match self.0.checked_sub(rhs.0) {
            Some(v) => Some(Nanos(v)),
            None => None,
        }
    }

    /// `self × k`, saturating at [`Nanos::MAX`].
    #[inline]
    #[must_use]
    pub const fn saturating_mul(self, k: u64) -> Nanos {
        Nanos(self.0.saturating_mul(k))
    }

    /// The smaller of two values (usable in `const` context).
    #[inline]
    #[must_use]
    pub const fn min_of(self, other: Nanos) -> Nanos {
        if self.0 <= other.0 {
            self
        } else {
            other
        }
    }

    /// Whether this is zero.
    #[inline]
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl From<u64> for Nanos {
    #[inline]
    fn from(n: u64) -> Self {
        Nanos(n)
    }
}

impl From<Nanos> for u64 {
    #[inline]
    fn from(n: Nanos) -> Self {
        n.0
    }
}

impl fmt::Display for Nanos {
    /// Human form with the largest unit that keeps it exact-ish: `250ns`, `1.5µs`, `60ms`, `2.5s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n < 1_000 {
            write!(f, "{n}ns")
        } else if n < 1_000_000 {
            write!(f, "{}µs", n as f64 / 1e3)
        } else if n < 1_000_000_000 {
            write!(f, "{}ms", n as f64 / 1e6)
        } else {
            write!(f, "{}s", n as f64 / 1e9)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_saturate() {
        assert_eq!(Nanos::from_secs(u64::MAX), Nanos::MAX);
        assert_eq!(Nanos::from_millis(3), Nanos(3_000_000));
        assert_eq!(Nanos::from_micros(7), Nanos(7_000));
    }

    #[test]
    fn float_conversion_rejects_bad_input() {
        assert_eq!(Nanos::from_secs_f64(-0.5), None);
        assert_eq!(Nanos::from_secs_f64(f64::INFINITY), None);
        assert_eq!(Nanos::from_secs_f64(1e30), None);
        assert_eq!(Nanos::from_secs_f64(0.0), Some(Nanos::ZERO));
        assert_eq!(Nanos::from_secs_f64(1.5e-9), Some(Nanos(2)));
    }

    #[test]
    fn arithmetic_is_saturating_or_checked() {
        assert_eq!(Nanos::MAX.saturating_add(Nanos(1)), Nanos::MAX);
        assert_eq!(Nanos(1).checked_sub(Nanos(2)), None);
        assert_eq!(Nanos(5).min_of(Nanos(3)), Nanos(3));
        assert_eq!(Nanos(5).saturating_mul(u64::MAX), Nanos::MAX);
    }
}
