//! A small seedable random number generator that many threads can share without locks.
//!
//! [`Rng`] is SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
//! generators", OOPSLA 2014) with its state in one atomic: a draw is one `fetch_add` of the
//! golden-ratio increment followed by a pure mixing function. So:
//!
//! - it never blocks and never retries, whatever the contention;
//! - for a given seed, the *n*-th draw is always the same number, so a single-threaded
//!   caller (a test, the simulator, a conformance vector) gets the same sequence in every
//!   language;
//! - with several threads the *set* of numbers drawn is still the same; only which thread
//!   gets which one depends on timing.
//!
//! It is not a cryptographic generator: it spreads retries, it does not make secrets.
//!
//! # Examples
//! ```
//! use guards_core::Rng;
//! let a = Rng::new(42);
//! let b = Rng::new(42);
//! assert_eq!(a.next_u64(), b.next_u64());
//! let x = a.next_f64();
//! assert!((0.0..1.0).contains(&x));
//! assert!(a.below(10) < 10);
//! ```
//!
//! # References
//! - G. Steele, D. Lea, C. Flood, "Fast splittable pseudorandom number generators", 2014.
//! - S. Vigna, `splitmix64.c`, the reference C implementation the test vectors come from.

use crate::sync::{AtomicU64, Ordering};

/// The SplitMix64 state increment (2^64 / φ, odd).
pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 output function: a bijective mix of a 64-bit state.
#[inline]
pub const fn mix64(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Map 64 random bits to a float uniform in `[0, 1)` (53 bits of precision).
#[inline]
pub fn unit_f64(bits: u64) -> f64 {
    (bits >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
}

/// Map 64 random bits to an integer uniform in `[0, n)` by a 128-bit multiply
/// (Lemire's method without the rejection step: bias below 2^-64 × n). `n = 0` gives 0.
#[inline]
pub const fn below_from_bits(bits: u64, n: u64) -> u64 {
    ((bits as u128 * n as u128) >> 64) as u64
}

/// A lock-free SplitMix64 generator. `#[repr(C)]`, one atomic, no pointers.
#[repr(C)]
#[derive(Debug)]
pub struct Rng {
    state: AtomicU64,
}

impl Rng {
    /// A generator whose first draw is `mix64(seed + GOLDEN_GAMMA)`, as in the reference C code.
    pub fn new(seed: u64) -> Self {
        Rng {
            state: AtomicU64::new(seed),
        }
    }

    /// Restart the sequence from `seed`.
    pub fn reseed(&self, seed: u64) {
        self.state.store(seed, Ordering::Relaxed);
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&self) -> u64 {
        let s = self
            .state
            .fetch_add(GOLDEN_GAMMA, Ordering::Relaxed)
            .wrapping_add(GOLDEN_GAMMA);
        mix64(s)
    }

    /// A float uniform in `[0, 1)`.
    #[inline]
    pub fn next_f64(&self) -> f64 {
        unit_f64(self.next_u64())
    }

    /// An integer uniform in `[0, n)`; `below(0)` is 0.
    #[inline]
    pub fn below(&self, n: u64) -> u64 {
        below_from_bits(self.next_u64(), n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// First outputs of Vigna's reference `splitmix64.c` seeded with 1234567.
    #[test]
    fn matches_reference_sequence() {
        let r = Rng::new(1_234_567);
        let expected: [u64; 5] = [
            6_457_827_717_110_365_317,
            3_203_168_211_198_807_973,
            9_817_491_932_198_370_423,
            4_593_380_528_125_082_431,
            16_408_922_859_458_223_821,
        ];
        for e in expected {
            assert_eq!(r.next_u64(), e);
        }
    }

    #[test]
    fn ranges() {
        let r = Rng::new(7);
        for _ in 0..10_000 {
            let f = r.next_f64();
            assert!((0.0..1.0).contains(&f));
            assert!(r.below(3) < 3);
        }
        assert_eq!(r.below(0), 0);
        assert_eq!(below_from_bits(u64::MAX, 10), 9);
        assert!(unit_f64(u64::MAX) < 1.0);
    }

    #[test]
    fn reseed_restarts() {
        let r = Rng::new(9);
        let a = r.next_u64();
        r.reseed(9);
        assert_eq!(r.next_u64(), a);
    }
}
