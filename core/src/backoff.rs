//! Backoff with jitter: how long to wait before retry *n*, and a stable offset for
//! periodic work.
//!
//! [`Backoff`] turns a retry index into a wait. The un-jittered curve is capped
//! exponential growth, `min(cap, base · multiplierⁿ)`; a [`Jitter`] mode then spreads the
//! waits of clients that failed together so that they do not retry together.
//! [`stable_offset`] does the same job for periodic work without any randomness: each
//! worker starts at `hash(id) mod period`, the same moment every period.
//!
//! # Why
//!
//! Backoff makes each retry wait longer than the last, so a failing dependency gets fewer
//! retries per second. But clients that failed at the same instant and back off by the same
//! rule still arrive at the same instant: 1,200 clients with a fixed 1 s wait all come back
//! in the same 10 ms. Full jitter draws each wait uniformly over `0..=ceiling`, so the same
//! 1,200 clients arrive about 12 per 10 ms slot. Jitter does not change *how many* retries
//! are sent (the attempt cap and the retry budget do that); it changes *when*.
//!
//! For a job that runs every period (a cache refresh, a stock re-read), a fresh random
//! wait each time would move it around; a stable offset keeps each worker on its own
//! second and keeps the fleet's load flat.
//!
//! # Definitions (exact, so every language gets the same integers)
//!
//! All durations are integer nanoseconds ([`Nanos`]); `n` is the retry index, **0 for the
//! first retry** (so with base 25 ms and full jitter the first retry waits 0–25 ms).
//!
//! *Ceiling* (the un-jittered curve, [`Backoff::ceiling`]):
//! `f = (base as f64) × pow(multiplier, n as f64)`, with `pow` the libm port in
//! [`crate::math`]. If `f` is not below `cap as f64` (this includes +∞), the ceiling is
//! `cap`; otherwise it is `floor(f)` as an integer. `base` and `cap` are at most
//! [`MAX_DELAY`] < 2⁵³, so they convert to `f64` exactly; with the default multiplier 2.0
//! the product is exact too, so the ceiling is exactly `min(cap, base · 2ⁿ)`. Any `n` up
//! to `u32::MAX` is fine: the power overflows to +∞ and the ceiling is `cap`.
//!
//! *Draws*: every jittered mode takes **exactly one** 64-bit random word `r` (one
//! [`Rng::next_u64`]) per call, even when its range holds a single value;
//! [`Jitter::None`] takes none. An integer uniform in `0..k` is
//! `below(r, k) = (r × k) >> 64` computed in 128 bits ([`crate::rng::below_from_bits`]).
//! With `t` the ceiling for retry `n`:
//!
//! | jitter | wait |
//! |---|---|
//! | `None` | `t` |
//! | `Full` | `below(r, t + 1)`: uniform in `0..=t` |
//! | `Equal` | `h + below(r, t − h + 1)` with `h = t / 2` (integer division): uniform in `h..=t` |
//! | `Decorrelated` | `min(cap, base + below(r, hi − base + 1))` with `hi = 3 · max(prev, base)` (saturating): uniform in `base..=hi`, then capped |
//!
//! `prev` is the wait returned for the previous retry of the same request; pass
//! `Nanos::ZERO` for the first retry. Any `prev` below `base` counts as `base`, so the first
//! decorrelated wait is uniform in `base..=3·base`. Only `Decorrelated` uses `prev`, and it
//! ignores `n` and `multiplier` (its growth factor is the fixed [`DECORRELATED_GROWTH`]).
//!
//! *Stable offset*: `fnv1a64(id) mod period`, where FNV-1a 64 starts from the offset
//! basis `0xcbf29ce484222325` and, for each byte `b` in order, does
//! `h = (h XOR b) × 0x100000001b3 mod 2⁶⁴`. A period of zero gives offset zero.
//!
//! # Concurrency and counters
//!
//! [`Backoff`] is a validated copy of its config and has no mutable state: every method is
//! a pure function of the config, the retry index, `prev` and the random word. Many
//! threads may share one [`Rng`]; each draw is one atomic `fetch_add` in the generator, so
//! no two concurrent draws get the same word. It keeps no counters: the retry policy that
//! calls it counts the retries it decides.
//!
//! # Examples
//!
//! ```
//! use guards_core::backoff::{stable_offset, Backoff, BackoffConfig, Jitter};
//! use guards_core::{Nanos, Rng};
//!
//! // Basketly's C3 shop-api: base 25 ms, full jitter.
//! let backoff = Backoff::new(BackoffConfig {
//!     base: Nanos::from_millis(25),
//!     cap: Nanos::from_secs(1),
//!     ..BackoffConfig::default()
//! })?;
//! assert_eq!(backoff.ceiling(0), Nanos::from_millis(25));
//! assert_eq!(backoff.ceiling(3), Nanos::from_millis(200));
//! assert_eq!(backoff.ceiling(u32::MAX), Nanos::from_secs(1)); // capped, never overflows
//!
//! let rng = Rng::new(7);
//! let first = backoff.delay(0, Nanos::ZERO, &rng);
//! assert!(first <= Nanos::from_millis(25));
//!
//! // Without jitter every client waits the same.
//! let fixed = Backoff::new(BackoffConfig { jitter: Jitter::None, ..backoff.config() })?;
//! assert_eq!(fixed.delay(1, Nanos::ZERO, &rng), Nanos::from_millis(50));
//!
//! // Periodic work: the same offset every minute, for every language.
//! let minute = Nanos::from_secs(60);
//! assert_eq!(stable_offset(b"agent-17", minute), stable_offset(b"agent-17", minute));
//! assert!(stable_offset(b"agent-17", minute) < minute);
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//!
//! - M. Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog, 2015: the
//!   none / full / equal / decorrelated definitions, and a simulation of contending
//!   clients in which jitter more than halved the number of calls.
//! - AWS Builders' Library, "Timeouts, retries, and backoff with jitter": capped
//!   exponential backoff with jitter as the default for retries, and a fixed per-host
//!   offset for periodic work instead of a fresh random wait.
//! - AWS SDKs and Tools reference guide, "Retry behavior": standard mode uses exponential
//!   backoff with full jitter, capped at 20 s (the default [`DEFAULT_CAP`]).
//! - G. Fowler, L. C. Noll, K.-P. Vo, D. Eastlake, "The FNV Non-Cryptographic Hash
//!   Algorithm" (IETF draft): the FNV-1a parameters and its published test values.

use crate::error::{check_f64, check_nanos, inconsistent, ConfigError};
use crate::math;
use crate::rng::{below_from_bits, Rng};
use crate::time::Nanos;

/// The largest `base` or `cap` accepted: one day. Keeps every duration below 2⁵³ ns, so
/// it converts to `f64` exactly.
pub const MAX_DELAY: Nanos = Nanos::from_secs(86_400);

/// Default for [`BackoffConfig::base`]: 25 ms (Basketly's shop-api, setting C3 in
/// docs/basketly.md). Valid range: `1 ns..=MAX_DELAY`, and at most `cap`.
pub const DEFAULT_BASE: Nanos = Nanos::from_millis(25);

/// Default for [`BackoffConfig::cap`]: 20 s (the AWS SDKs' standard-mode maximum backoff).
/// Valid range: `1 ns..=MAX_DELAY`, and at least `base`.
pub const DEFAULT_CAP: Nanos = Nanos::from_secs(20);

/// Default for [`BackoffConfig::multiplier`]: 2.0 (the ceiling doubles per retry).
/// Valid range: `1.0..=MAX_MULTIPLIER` (1.0 gives a constant ceiling).
pub const DEFAULT_MULTIPLIER: f64 = 2.0;

/// The largest [`BackoffConfig::multiplier`] accepted.
pub const MAX_MULTIPLIER: f64 = 100.0;

/// Default for [`BackoffConfig::jitter`]: [`Jitter::Full`].
pub const DEFAULT_JITTER: Jitter = Jitter::Full;

/// The growth factor of decorrelated jitter: each wait is drawn up to 3 × the previous.
pub const DECORRELATED_GROWTH: u64 = 3;

pub use crate::hash::{fnv1a64, FNV_OFFSET_BASIS, FNV_PRIME};

/// How the wait is randomised around the capped exponential curve.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Jitter {
    /// No randomness: wait exactly the ceiling. Clients that failed together retry together.
    None = 0,
    /// Uniform over `0..=ceiling` (the AWS SDKs' choice; the default).
    #[default]
    Full = 1,
    /// Half the ceiling, plus uniform over the other half: `ceiling/2..=ceiling`.
    Equal = 2,
    /// Uniform over `base..=3·prev`, capped; grows from the previous wait, not from `n`.
    Decorrelated = 3,
}

named_enum!(Jitter {
    None => "none",
    Full => "full",
    Equal => "equal",
    Decorrelated => "decorrelated",
});

/// Configuration of a [`Backoff`]. Plain `Copy` data; check it with
/// [`validate`](BackoffConfig::validate) or let [`Backoff::new`] do it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffConfig {
    /// The ceiling of the first retry (`n = 0`). Default [`DEFAULT_BASE`];
    /// valid `1 ns..=MAX_DELAY`.
    pub base: Nanos,
    /// The largest wait ever returned. Default [`DEFAULT_CAP`]; valid `base..=MAX_DELAY`.
    pub cap: Nanos,
    /// Growth of the ceiling per retry. Default [`DEFAULT_MULTIPLIER`];
    /// valid `1.0..=MAX_MULTIPLIER`. Ignored by [`Jitter::Decorrelated`].
    pub multiplier: f64,
    /// How the wait is randomised. Default [`DEFAULT_JITTER`].
    pub jitter: Jitter,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            base: DEFAULT_BASE,
            cap: DEFAULT_CAP,
            multiplier: DEFAULT_MULTIPLIER,
            jitter: DEFAULT_JITTER,
        }
    }
}

impl BackoffConfig {
    /// Check every field; the error names the first bad one (`base`, `cap`,
    /// `multiplier`), in that order. `cap < base` is reported on `cap` as inconsistent.
    pub fn validate(&self) -> Result<(), ConfigError> {
        const DELAY_RANGE: &str = "1 ns..=86400 s";
        check_nanos("base", self.base, Nanos(1), MAX_DELAY, DELAY_RANGE)?;
        check_nanos("cap", self.cap, Nanos(1), MAX_DELAY, DELAY_RANGE)?;
        check_f64(
            "multiplier",
            self.multiplier,
            1.0,
            MAX_MULTIPLIER,
            "a finite number in 1.0..=100.0",
        )?;
        if self.cap < self.base {
            return Err(inconsistent("cap", "cap >= base"));
        }
        Ok(())
    }
}

/// Capped exponential backoff with jitter: a validated [`BackoffConfig`].
///
/// `Copy`, `#[repr(C)]`, no mutable state; see the [module docs](self) for the exact
/// definitions of every wait.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    config: BackoffConfig,
}

impl Backoff {
    /// A backoff with `config`, or the first invalid field.
    pub fn new(config: BackoffConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Backoff { config })
    }

    /// The configuration (a copy).
    pub const fn config(&self) -> BackoffConfig {
        self.config
    }

    /// The un-jittered wait before retry `retry` (0 = first retry):
    /// `min(cap, base · multiplierⁿ)`, rounded down to whole nanoseconds. Never above
    /// `cap`, never decreasing in `retry`, and `cap` for any `retry` too large to compute.
    pub fn ceiling(&self, retry: u32) -> Nanos {
        let cap = self.config.cap.as_u64();
        let base = self.config.base.as_u64();
        if self.config.multiplier == 2.0 {
            // Fast path, identical to the float rule below: base < 2^53 times a power of two
            // is exact in f64, so `base as f64 * 2^n` is the integer `base << n`, and once
            // that would reach 2^63 it is far above any valid cap.
            return Nanos(match base.checked_shl(retry) {
                Some(v) if retry < base.leading_zeros() => v.min(cap),
                _ => cap,
            });
        }
        let f = base as f64 * math::pow(self.config.multiplier, f64::from(retry));
        // Anything not below the cap (+∞ included) is the cap; NaN cannot arise with a
        // valid config, but a wait must never be derived from it.
        if f.is_nan() || f >= cap as f64 {
            return Nanos(cap);
        }
        Nanos(math::to_u64_saturating(math::floor(f)).min(cap))
    }

    /// The wait before retry `retry`, drawing from `rng` (one draw for a jittered mode,
    /// none for [`Jitter::None`]). `prev` is the previous wait of the same request
    /// (`Nanos::ZERO` before the first retry); only [`Jitter::Decorrelated`] uses it.
    #[inline]
    pub fn delay(&self, retry: u32, prev: Nanos, rng: &Rng) -> Nanos {
        match self.config.jitter {
            Jitter::None => self.ceiling(retry),
            _ => self.delay_from_bits(retry, prev, rng.next_u64()),
        }
    }

    /// The wait before retry `retry` for the random word `bits` (what [`delay`](Self::delay)
    /// does after drawing). Pure: the simulator and the bindings can replay a wait from a
    /// recorded random word. [`Jitter::None`] ignores `bits`.
    pub fn delay_from_bits(&self, retry: u32, prev: Nanos, bits: u64) -> Nanos {
        let cap = self.config.cap.as_u64();
        match self.config.jitter {
            Jitter::None => self.ceiling(retry),
            Jitter::Full => {
                let t = self.ceiling(retry).as_u64();
                Nanos(below_from_bits(bits, t.saturating_add(1)))
            }
            Jitter::Equal => {
                let t = self.ceiling(retry).as_u64();
                let half = t / 2;
                let rest = t.saturating_sub(half);
                Nanos(half.saturating_add(below_from_bits(bits, rest.saturating_add(1))))
            }
            Jitter::Decorrelated => {
                let base = self.config.base.as_u64();
                let hi = prev.as_u64().max(base).saturating_mul(DECORRELATED_GROWTH);
                let width = hi.saturating_sub(base).saturating_add(1);
                Nanos(base.saturating_add(below_from_bits(bits, width)).min(cap))
            }
        }
    }

    /// The largest wait [`delay`](Self::delay) can return for retry `retry` when every
    /// earlier `prev` came from this backoff: the ceiling for `None`, `Full` and `Equal`,
    /// and `min(cap, base · 3ⁿ⁺¹)` for `Decorrelated`. Use it to check that the attempts,
    /// their timeouts and the waits fit inside a deadline.
    pub fn max_delay(&self, retry: u32) -> Nanos {
        match self.config.jitter {
            Jitter::Decorrelated => {
                let growth = DECORRELATED_GROWTH.saturating_pow(retry.saturating_add(1));
                self.config
                    .base
                    .saturating_mul(growth)
                    .min_of(self.config.cap)
            }
            _ => self.ceiling(retry),
        }
    }
}

impl Default for Backoff {
    /// The default configuration (valid by construction).
    fn default() -> Self {
        Backoff {
            config: BackoffConfig::default(),
        }
    }
}

/// The stable start offset of periodic work identified by `id`: `fnv1a64(id) mod period`,
/// in `0..period`. The same `id` gets the same offset in every process and language, so a
/// worker runs at the same moment every period and a fleet's starts spread over the
/// period. `period = 0` gives zero.
pub fn stable_offset(id: &[u8], period: Nanos) -> Nanos {
    match fnv1a64(id).checked_rem(period.as_u64()) {
        Some(offset) => Nanos(offset),
        None => Nanos::ZERO,
    }
}

/// The first instant at or after `now` that is `stable_offset(id, period)` past a multiple
/// of `period` (instants count from the clock's epoch, `Nanos::ZERO`). Saturates at
/// [`Nanos::MAX`]; `period = 0` gives `now`.
pub fn next_stable_run(id: &[u8], period: Nanos, now: Nanos) -> Nanos {
    let p = period.as_u64();
    if p == 0 {
        return now;
    }
    let offset = stable_offset(id, period).as_u64();
    let start_of_period = now.as_u64() - now.as_u64() % p;
    let candidate = start_of_period.saturating_add(offset);
    if candidate >= now.as_u64() {
        Nanos(candidate)
    } else {
        Nanos(candidate.saturating_add(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(base: u64, cap: u64, jitter: Jitter) -> Backoff {
        Backoff::new(BackoffConfig {
            base: Nanos(base),
            cap: Nanos(cap),
            multiplier: 2.0,
            jitter,
        })
        .unwrap()
    }

    #[test]
    fn ceiling_doubles_then_caps() {
        let b = cfg(25, 1_000, Jitter::None);
        let got: [u64; 7] = core::array::from_fn(|n| b.ceiling(n as u32).as_u64());
        assert_eq!(got, [25, 50, 100, 200, 400, 800, 1_000]);
        assert_eq!(b.ceiling(u32::MAX), Nanos(1_000));
        assert_eq!(b.max_delay(u32::MAX), Nanos(1_000));
    }

    #[test]
    fn multiplier_one_is_constant_and_fractional_rounds_down() {
        let flat = Backoff::new(BackoffConfig {
            base: Nanos(7),
            cap: Nanos(100),
            multiplier: 1.0,
            jitter: Jitter::None,
        })
        .unwrap();
        assert_eq!(flat.ceiling(0), Nanos(7));
        assert_eq!(flat.ceiling(u32::MAX), Nanos(7));
        let b = Backoff::new(BackoffConfig {
            base: Nanos(10),
            cap: Nanos(1_000),
            multiplier: 1.5,
            jitter: Jitter::None,
        })
        .unwrap();
        // 10, 15, 22.5 -> 22, 33.75 -> 33
        assert_eq!(b.ceiling(2), Nanos(22));
        assert_eq!(b.ceiling(3), Nanos(33));
    }

    #[test]
    fn draws_hit_both_ends() {
        let full = cfg(100, 100, Jitter::Full);
        assert_eq!(full.delay_from_bits(0, Nanos::ZERO, 0), Nanos(0));
        assert_eq!(full.delay_from_bits(0, Nanos::ZERO, u64::MAX), Nanos(100));
        let equal = cfg(101, 1_000, Jitter::Equal);
        assert_eq!(equal.delay_from_bits(0, Nanos::ZERO, 0), Nanos(50));
        assert_eq!(equal.delay_from_bits(0, Nanos::ZERO, u64::MAX), Nanos(101));
        let dec = cfg(10, 1_000, Jitter::Decorrelated);
        assert_eq!(dec.delay_from_bits(0, Nanos::ZERO, 0), Nanos(10));
        assert_eq!(dec.delay_from_bits(0, Nanos::ZERO, u64::MAX), Nanos(30));
        assert_eq!(dec.delay_from_bits(0, Nanos(5), u64::MAX), Nanos(30));
        assert_eq!(dec.delay_from_bits(9, Nanos(300), u64::MAX), Nanos(900));
        assert_eq!(dec.delay_from_bits(9, Nanos(400), u64::MAX), Nanos(1_000));
        assert_eq!(dec.delay_from_bits(0, Nanos::MAX, u64::MAX), Nanos(1_000));
        assert_eq!(dec.max_delay(0), Nanos(30));
        assert_eq!(dec.max_delay(1), Nanos(90));
        assert_eq!(dec.max_delay(5), Nanos(1_000));
    }

    #[test]
    fn none_draws_nothing_jittered_draws_once() {
        let rng = Rng::new(5);
        let none = cfg(10, 100, Jitter::None);
        let _ = none.delay(3, Nanos::ZERO, &rng);
        assert_eq!(rng.next_u64(), Rng::new(5).next_u64());
        let rng = Rng::new(5);
        let zero_width = cfg(1, 1, Jitter::Full);
        let _ = zero_width.delay(0, Nanos::ZERO, &rng);
        let reference = Rng::new(5);
        let _ = reference.next_u64();
        assert_eq!(rng.next_u64(), reference.next_u64());
    }

    #[test]
    fn validation_names_fields() {
        let field = |c: BackoffConfig| c.validate().unwrap_err().field();
        let d = BackoffConfig::default();
        assert_eq!(
            field(BackoffConfig {
                base: Nanos::ZERO,
                ..d
            }),
            "base"
        );
        assert_eq!(
            field(BackoffConfig {
                cap: Nanos(MAX_DELAY.0 + 1),
                ..d
            }),
            "cap"
        );
        assert_eq!(field(BackoffConfig { cap: Nanos(1), ..d }), "cap");
        assert_eq!(
            field(BackoffConfig {
                multiplier: f64::NAN,
                ..d
            }),
            "multiplier"
        );
        assert_eq!(
            field(BackoffConfig {
                multiplier: 0.5,
                ..d
            }),
            "multiplier"
        );
        assert!(d.validate().is_ok());
        assert_eq!(Backoff::default().config(), d);
        assert_eq!(Jitter::from_name("equal"), Some(Jitter::Equal));
        assert_eq!(Jitter::from_name("Equal"), None);
    }

    #[test]
    fn fnv_reference_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn stable_runs() {
        assert_eq!(stable_offset(b"x", Nanos::ZERO), Nanos::ZERO);
        assert_eq!(next_stable_run(b"x", Nanos::ZERO, Nanos(5)), Nanos(5));
        let p = Nanos(1_000);
        let off = stable_offset(b"agent", p).as_u64();
        assert_eq!(next_stable_run(b"agent", p, Nanos(0)), Nanos(off));
        assert_eq!(next_stable_run(b"agent", p, Nanos(off)), Nanos(off));
        assert_eq!(
            next_stable_run(b"agent", p, Nanos(off + 1)),
            Nanos(off + 1_000)
        );
        assert_eq!(next_stable_run(b"agent", p, Nanos::MAX), Nanos::MAX);
    }
}
