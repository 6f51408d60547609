//! Float math for `no_std`, in one place.
//!
//! `core` has no `exp`, `ln`, `powf`, `sqrt` on `f64` without `std`; these wrap [`libm`], which
//! is a port of musl's libm and gives the same bits on every platform. That matters here:
//! a limit or a backoff computed in Rust, C, Python and Node must agree exactly, and the
//! conformance vectors check that.

/// e^x.
#[inline]
pub fn exp(x: f64) -> f64 {
    libm::exp(x)
}

/// Natural logarithm.
#[inline]
pub fn ln(x: f64) -> f64 {
    libm::log(x)
}

/// Base-10 logarithm.
#[inline]
pub fn log10(x: f64) -> f64 {
    libm::log10(x)
}

/// Base-2 logarithm.
#[inline]
pub fn log2(x: f64) -> f64 {
    libm::log2(x)
}

/// x^y.
#[inline]
pub fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// Square root.
#[inline]
pub fn sqrt(x: f64) -> f64 {
    libm::sqrt(x)
}

/// Largest integer ≤ x.
#[inline]
pub fn floor(x: f64) -> f64 {
    libm::floor(x)
}

/// Smallest integer ≥ x.
#[inline]
pub fn ceil(x: f64) -> f64 {
    libm::ceil(x)
}

/// Round half away from zero.
#[inline]
pub fn round(x: f64) -> f64 {
    libm::round(x)
}

/// Convert a non-negative float to `u64`, saturating: NaN and negatives give 0,
/// values ≥ 2^64 give `u64::MAX`. (Rust's `as` already saturates; this names the intent.)
#[inline]
pub fn to_u64_saturating(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        0
    } else {
        x as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_values() {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(log10(1000.0), 3.0);
        assert_eq!(pow(2.0, 10.0), 1024.0);
        assert_eq!(sqrt(16.0), 4.0);
        assert_eq!(round(2.5), 3.0);
        assert_eq!(to_u64_saturating(f64::NAN), 0);
        assert_eq!(to_u64_saturating(1e30), u64::MAX);
    }
}
