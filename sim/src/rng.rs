//! Seeded random streams for the simulator's own random variates (arrivals, service
//! times, load balancing).
//!
//! Distributions are simulator logic, not guard logic, so they use a plain, non-atomic
//! SplitMix64 ([`SimRng`]) built on guards-core's mixing function. Each purpose gets its
//! own stream derived from the run's seed, so adding a draw in one place does not shift
//! every other draw. Float math goes through `guards_core::math` (libm), so a seed gives
//! the same numbers on every platform.

use guards_core::math;
use guards_core::rng::{mix64, unit_f64, GOLDEN_GAMMA};
use guards_core::Nanos;

use crate::topology::Dist;

/// A non-atomic SplitMix64 stream.
#[derive(Debug, Clone)]
pub struct SimRng {
    state: u64,
}

impl SimRng {
    /// Stream number `stream` of the run seeded with `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let s = mix64(seed ^ mix64(stream.wrapping_add(1).wrapping_mul(GOLDEN_GAMMA)));
        SimRng { state: s }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix64(self.state)
    }

    /// Uniform in `[0, 1)`.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        unit_f64(self.next_u64())
    }

    /// Uniform integer in `[0, n)` (0 when `n == 0`).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        guards_core::rng::below_from_bits(self.next_u64(), n)
    }

    /// An exponential variate with mean `mean` (in any unit), as `-mean·ln(1 − u)`.
    #[inline]
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * math::ln(1.0 - self.next_f64())
    }

    /// A duration drawn from `dist`, scaled by `factor`.
    pub fn draw(&mut self, dist: &Dist, factor: f64) -> Nanos {
        let ns = match *dist {
            Dist::Const(d) => d.as_u64() as f64,
            Dist::Exp(mean) => self.exp(mean.as_u64() as f64),
            Dist::Uniform(lo, hi) => {
                let lo = lo.as_u64() as f64;
                let hi = hi.as_u64() as f64;
                lo + (hi - lo).max(0.0) * self.next_f64()
            }
            Dist::Bernoulli { p, value } => {
                if self.next_f64() < p {
                    value.as_u64() as f64
                } else {
                    0.0
                }
            }
        };
        Nanos::new(math::to_u64_saturating(math::round(ns * factor)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_and_repeat() {
        let mut a = SimRng::new(1, 0);
        let mut b = SimRng::new(1, 1);
        let mut c = SimRng::new(1, 0);
        let x = a.next_u64();
        assert_ne!(x, b.next_u64());
        assert_eq!(x, c.next_u64());
    }

    #[test]
    fn exponential_mean() {
        let mut r = SimRng::new(7, 3);
        let n = 200_000;
        let mean: f64 = (0..n).map(|_| r.exp(4.0)).sum::<f64>() / n as f64;
        assert!((mean - 4.0).abs() < 0.05, "{mean}");
    }
}
