//! [`ConfigError`]: what is wrong with a configuration, naming the field.
//!
//! Every `<Guard>Config` is validated when a guard is built. Invalid values (NaN, ±∞,
//! negatives, zero where zero makes no sense, values out of the documented range, fields
//! that contradict each other) return a `ConfigError`; nothing panics. Bindings turn it into
//! `ValueError` (Python), an `Error` with a `code` (Node) or an error code plus message (C).
//!
//! # Examples
//! ```
//! use guards_core::{ConfigError, ConfigErrorKind};
//! let e = ConfigError::new("ratio", ConfigErrorKind::NotFinite, "a finite number in 0.0..=1000.0");
//! assert_eq!(e.field(), "ratio");
//! assert_eq!(e.kind().name(), "not_finite");
//! assert!(e.to_string().contains("ratio"));
//! ```

use core::fmt;

use crate::time::Nanos;

/// Why a config value was rejected.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// NaN or ±∞ (`"not_finite"`).
    NotFinite = 0,
    /// Below zero where only non-negative values make sense (`"negative"`).
    Negative = 1,
    /// Zero where it must be positive (`"zero"`).
    Zero = 2,
    /// Outside the documented range (`"out_of_range"`).
    OutOfRange = 3,
    /// Valid on its own but contradicts another field, e.g. `base > cap`
    /// (`"inconsistent"`).
    Inconsistent = 4,
}

named_enum!(ConfigErrorKind {
    NotFinite => "not_finite",
    Negative => "negative",
    Zero => "zero",
    OutOfRange => "out_of_range",
    Inconsistent => "inconsistent",
});

impl ConfigErrorKind {
    const fn describe(self) -> &'static str {
        match self {
            ConfigErrorKind::NotFinite => "must be a finite number",
            ConfigErrorKind::Negative => "must not be negative",
            ConfigErrorKind::Zero => "must not be zero",
            ConfigErrorKind::OutOfRange => "is out of range",
            ConfigErrorKind::Inconsistent => "contradicts another setting",
        }
    }
}

/// A rejected configuration value: which field, why, and what would be accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ConfigError {
    field: &'static str,
    kind: ConfigErrorKind,
    expected: &'static str,
}

impl ConfigError {
    /// A new error for `field`. `expected` describes the valid values, e.g. `"1..=1024"`.
    pub const fn new(field: &'static str, kind: ConfigErrorKind, expected: &'static str) -> Self {
        ConfigError {
            field,
            kind,
            expected,
        }
    }

    /// The config field's name, as spelled in the Rust config struct (snake_case).
    pub const fn field(&self) -> &'static str {
        self.field
    }

    /// Why it was rejected.
    pub const fn kind(&self) -> ConfigErrorKind {
        self.kind
    }

    /// What would have been accepted.
    pub const fn expected(&self) -> &'static str {
        self.expected
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid `{}`: {} (expected {})",
            self.field,
            self.kind.describe(),
            self.expected
        )
    }
}

impl core::error::Error for ConfigError {}

/// A number that is not the discriminant of any variant of an enum: what
/// `TryFrom<u8>` returns for every fieldless public enum in core (bindings receive enums as
/// integers and must refuse an unknown one, never reinterpret it).
///
/// ```
/// use guards_core::{Jitter, UnknownDiscriminant};
/// assert_eq!(Jitter::try_from(1), Ok(Jitter::Full));
/// let e: UnknownDiscriminant = Jitter::try_from(9).unwrap_err();
/// assert_eq!((e.type_name(), e.value()), ("Jitter", 9));
/// assert_eq!(e.to_string(), "9 is not a valid Jitter");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct UnknownDiscriminant {
    type_name: &'static str,
    value: u8,
}

impl UnknownDiscriminant {
    /// `value` is not a discriminant of the enum `type_name`.
    pub const fn new(type_name: &'static str, value: u8) -> Self {
        UnknownDiscriminant { type_name, value }
    }

    /// The enum's Rust name (e.g. `"Outcome"`).
    pub const fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// The number that was given.
    pub const fn value(&self) -> u8 {
        self.value
    }
}

impl fmt::Display for UnknownDiscriminant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not a valid {}", self.value, self.type_name)
    }
}

impl core::error::Error for UnknownDiscriminant {}

/// Validation helper (used by every config; public so wrappers apply the same rules).
///
/// Check a float: finite, and within `min..=max`. A negative value when `min >= 0` is
/// reported as [`ConfigErrorKind::Negative`], a zero when `min > 0` as
/// [`ConfigErrorKind::Zero`], anything else outside the range as `OutOfRange`.
pub fn check_f64(
    field: &'static str,
    v: f64,
    min: f64,
    max: f64,
    expected: &'static str,
) -> Result<f64, ConfigError> {
    if !v.is_finite() {
        return Err(ConfigError::new(
            field,
            ConfigErrorKind::NotFinite,
            expected,
        ));
    }
    if v < 0.0 && min >= 0.0 {
        return Err(ConfigError::new(field, ConfigErrorKind::Negative, expected));
    }
    if v == 0.0 && min > 0.0 {
        return Err(ConfigError::new(field, ConfigErrorKind::Zero, expected));
    }
    if v < min || v > max {
        return Err(ConfigError::new(
            field,
            ConfigErrorKind::OutOfRange,
            expected,
        ));
    }
    Ok(v)
}

/// Check a float in an open-below range `min < v <= max` (e.g. a ratio that must be
/// strictly positive).
pub fn check_f64_above(
    field: &'static str,
    v: f64,
    min_exclusive: f64,
    max: f64,
    expected: &'static str,
) -> Result<f64, ConfigError> {
    let v = check_f64(field, v, f64::MIN, max, expected)?;
    if v < 0.0 && min_exclusive >= 0.0 {
        return Err(ConfigError::new(field, ConfigErrorKind::Negative, expected));
    }
    if v == 0.0 && min_exclusive >= 0.0 {
        return Err(ConfigError::new(field, ConfigErrorKind::Zero, expected));
    }
    if v <= min_exclusive {
        return Err(ConfigError::new(
            field,
            ConfigErrorKind::OutOfRange,
            expected,
        ));
    }
    Ok(v)
}

/// Check an integer within `min..=max`; `0` when `min > 0` is reported as `Zero`.
pub fn check_u64(
    field: &'static str,
    v: u64,
    min: u64,
    max: u64,
    expected: &'static str,
) -> Result<u64, ConfigError> {
    if v == 0 && min > 0 {
        return Err(ConfigError::new(field, ConfigErrorKind::Zero, expected));
    }
    if v < min || v > max {
        return Err(ConfigError::new(
            field,
            ConfigErrorKind::OutOfRange,
            expected,
        ));
    }
    Ok(v)
}

/// Check a duration within `min..=max`; zero when `min > 0` is reported as `Zero`.
pub fn check_nanos(
    field: &'static str,
    v: Nanos,
    min: Nanos,
    max: Nanos,
    expected: &'static str,
) -> Result<Nanos, ConfigError> {
    check_u64(field, v.0, min.0, max.0, expected).map(Nanos)
}

/// An `Inconsistent` error for `field`.
pub const fn inconsistent(field: &'static str, expected: &'static str) -> ConfigError {
    ConfigError::new(field, ConfigErrorKind::Inconsistent, expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_checks_name_the_reason() {
        let k = |r: Result<f64, ConfigError>| r.err().map(|e| e.kind());
        assert_eq!(
            k(check_f64("x", f64::NAN, 0.0, 1.0, "")),
            Some(ConfigErrorKind::NotFinite)
        );
        assert_eq!(
            k(check_f64("x", f64::INFINITY, 0.0, 1.0, "")),
            Some(ConfigErrorKind::NotFinite)
        );
        assert_eq!(
            k(check_f64("x", -1.0, 0.0, 1.0, "")),
            Some(ConfigErrorKind::Negative)
        );
        assert_eq!(
            k(check_f64("x", 0.0, 0.5, 1.0, "")),
            Some(ConfigErrorKind::Zero)
        );
        assert_eq!(
            k(check_f64("x", 2.0, 0.0, 1.0, "")),
            Some(ConfigErrorKind::OutOfRange)
        );
        assert_eq!(k(check_f64("x", 0.0, 0.0, 1.0, "")), None);
        assert_eq!(
            k(check_f64_above("x", 0.0, 0.0, 1.0, "")),
            Some(ConfigErrorKind::Zero)
        );
        assert_eq!(k(check_f64_above("x", 1e-9, 0.0, 1.0, "")), None);
        assert_eq!(
            k(check_f64_above("x", -3.0, 0.0, 1.0, "")),
            Some(ConfigErrorKind::Negative)
        );
    }

    #[test]
    fn integer_checks() {
        assert_eq!(
            check_u64("n", 0, 1, 10, "1..=10").unwrap_err().kind(),
            ConfigErrorKind::Zero
        );
        assert_eq!(
            check_u64("n", 11, 1, 10, "1..=10").unwrap_err().kind(),
            ConfigErrorKind::OutOfRange
        );
        assert_eq!(check_u64("n", 10, 1, 10, "1..=10"), Ok(10));
        let e = check_nanos("open_duration", Nanos::ZERO, Nanos(1), Nanos::MAX, "> 0").unwrap_err();
        assert_eq!(e.field(), "open_duration");
    }
}
