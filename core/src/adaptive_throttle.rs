//! [`AdaptiveThrottle`]: client-side adaptive throttling — reject locally, with a
//! probability that grows as the backend accepts a smaller share of what it is sent.
//!
//! Each client counts, over a sliding time window, the `requests` it attempted and the
//! `accepts` the backend took. Before a call it rejects locally with probability
//!
//! ```text
//! p = min(max_reject_probability, max(0, (requests − k·accepts) / (requests + 1)) ^ (1 / aggression))
//! ```
//!
//! With the defaults (`k = 2`, `aggression = 1`, `max_reject_probability = 1`) that is the
//! throttle of the Google SRE book: nothing is rejected while the backend accepts at least
//! half of the requests; past that, the client sheds the excess itself, at almost no cost,
//! and the backend spends its capacity on work it can do. Because locally rejected
//! requests still count as requests (`count_rejected`), the probability keeps tracking the
//! backend, and it falls back to zero as accepts return.
//!
//! # Why
//!
//! A backend refusing work still pays for every refusal: the connection, the parsing, the
//! answer. When its callers send it several times what it can serve (Basketly's C0,
//! docs/basketly.md: 6,180 attempts a second against 3,270 that can be finished), refusing
//! becomes the overload. This throttle moves the refusal into the caller before the request
//! leaves, using only what the caller has observed — no coordination, no configured limit.
//!
//! # Envoy's generalisation
//!
//! Envoy's admission-control filter uses the same formula with three knobs, all available
//! here: a *success-rate threshold* `t` below which rejection starts (the multiplier is
//! `k = 1 / t`; [`AdaptiveThrottleConfig::with_success_rate_threshold`] sets it), an
//! *aggression* exponent (the probability is raised to `1 / aggression`; 1 is linear,
//! larger values reject harder at the same success rate), and a *maximum rejection
//! probability*. Its "requests per second below which nothing is rejected" becomes
//! [`AdaptiveThrottleConfig::min_requests`], counted in the window. Envoy does not count
//! the requests it rejects (`count_rejected = false`).
//! [`AdaptiveThrottleConfig::strict_success_rate`] gives its defaults.
//!
//! The difference matters after a total outage. Counting rejected requests with no cap,
//! the probability climbs to `n / (n + 1)`: almost nothing is sent, and once the backend
//! is back each accept lets only about `k` more requests through, so accepts grow by
//! roughly a factor `e` per window and recovery takes about `window × ln(n / k)` (in a
//! test, 100 requests a second with the default 2-minute window: 13 minutes). A cap on
//! the probability keeps a share of requests flowing as probes (cap 0.8: under 3
//! minutes), and not counting rejected requests as well recovers within about one window
//! (Envoy's defaults: 25 s).
//!
//! # Concurrency and determinism
//!
//! The window is `B` buckets of `window / B` each (rounded down to the nanosecond). Every
//! bucket keeps two tagged words, requests and accepts, with the same lock-free protocol
//! as the latency tracker (see `latency_tracker`): each word holds a 32-bit lap tag and a
//! 32-bit count, and one compare-and-swap either adds one for the current lap or resets a
//! reused bucket and counts one, so no count is lost to a concurrent reset and none lands
//! in another bucket's time. A read sums the `B` newest buckets (the current, partial one
//! included), so the effective window is between `window − window / B` and `window`.
//!
//! Randomness comes from the throttle's own SplitMix64 [`Rng`], seeded by
//! [`AdaptiveThrottleConfig::seed`], or from a caller's [`Rng`] through
//! [`AdaptiveThrottle::should_reject_with`]. A draw is consumed only when `p > 0`, and the
//! request is rejected when the draw `u` (uniform in `[0, 1)`) is below `p`. A
//! single-threaded caller therefore gets the same decisions in every language for a seed.
//!
//! # Examples
//! ```
//! use guards_core::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
//! use guards_core::Nanos;
//!
//! let throttle: AdaptiveThrottle = AdaptiveThrottle::new(AdaptiveThrottleConfig::default())?;
//! let now = Nanos::from_secs(1);
//! // A healthy backend: every request accepted, nothing is rejected locally.
//! for _ in 0..100 {
//!     assert!(!throttle.should_reject(now));
//!     throttle.on_accepted(now);
//! }
//! assert_eq!(throttle.reject_probability(now), 0.0);
//! // The backend starts refusing everything: after 300 more requests,
//! // p = (400 − 2·100) / 401 ≈ 0.5.
//! for _ in 0..300 {
//!     if !throttle.should_reject(now) {
//!         throttle.on_rejected_by_backend(now);
//!     }
//! }
//! assert_eq!(throttle.reject_probability(now), 200.0 / 401.0);
//! assert!(throttle.stats().throttled > 0);
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//! - B. Beyer et al. (eds.), *Site Reliability Engineering*, O'Reilly 2016, ch. 21
//!   "Handling Overload", client-side throttling: the formula, `K = 2` as the usual
//!   multiplier, and about two minutes of history per client.
//! - Envoy proxy, admission-control HTTP filter documentation and API: the success-rate
//!   threshold (default 95%), the aggression exponent (default 1, values below 1 treated
//!   as 1), the maximum rejection probability (default 80%), the RPS threshold (default 0)
//!   and a 30 s sampling window; rejected requests are not sampled.

use core::fmt;

use crate::counter::Counter;
use crate::error::{check_f64, check_nanos, check_u64, ConfigError};
use crate::latency_tracker::{tagged_count, tagged_increment};
use crate::math;
use crate::outcome::{Outcome, ThrottleVerdict};
use crate::rng::Rng;
use crate::sync::{set_mut, AtomicU64};
use crate::time::Nanos;

/// Default bucket count (`B`) of the sliding window. Valid range: `1..=MAX_BUCKETS`.
pub const DEFAULT_BUCKETS: usize = 12;
/// Largest bucket count.
pub const MAX_BUCKETS: usize = 1_024;
/// Default for [`AdaptiveThrottleConfig::window`]: the SRE book's two minutes.
/// Valid range: `1 s..=1 h`.
pub const DEFAULT_WINDOW: Nanos = Nanos::from_secs(120);
/// Default for [`AdaptiveThrottleConfig::k`]: 2 (reject once the backend accepts less
/// than half). Valid range: `1.0..=1000.0`.
pub const DEFAULT_K: f64 = 2.0;
/// Default for [`AdaptiveThrottleConfig::aggression`]: 1 (linear). Valid range:
/// `1.0..=100.0`.
pub const DEFAULT_AGGRESSION: f64 = 1.0;
/// Default for [`AdaptiveThrottleConfig::max_reject_probability`]: 1 (no cap beyond the
/// formula's own `n / (n + 1)`). Valid range: `0.0..=1.0`.
pub const DEFAULT_MAX_REJECT_PROBABILITY: f64 = 1.0;
/// Default for [`AdaptiveThrottleConfig::min_requests`]: 0 (no floor).
/// Valid range: `0..=10^12`.
pub const DEFAULT_MIN_REQUESTS: u64 = 0;
/// Default for [`AdaptiveThrottleConfig::count_rejected`]: `true`, as in the SRE book.
pub const DEFAULT_COUNT_REJECTED: bool = true;
/// Default for [`AdaptiveThrottleConfig::seed`]. Any `u64` is valid.
pub const DEFAULT_SEED: u64 = 0;

/// Configuration of an [`AdaptiveThrottle`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveThrottleConfig {
    /// Length of the sliding window over which requests and accepts are counted.
    /// Default [`DEFAULT_WINDOW`]; valid `1 s..=1 h`.
    pub window: Nanos,
    /// Multiplier on accepts: rejection starts when `requests > k·accepts`, i.e. when the
    /// backend's accept rate falls below `1 / k`. Default [`DEFAULT_K`]; valid
    /// `1.0..=1000.0`.
    pub k: f64,
    /// The probability is raised to `1 / aggression`. Default [`DEFAULT_AGGRESSION`];
    /// valid `1.0..=100.0`.
    pub aggression: f64,
    /// Upper bound on the rejection probability. Default
    /// [`DEFAULT_MAX_REJECT_PROBABILITY`]; valid `0.0..=1.0`.
    pub max_reject_probability: f64,
    /// With fewer requests than this in the window, nothing is rejected.
    /// Default [`DEFAULT_MIN_REQUESTS`]; valid `0..=10^12`.
    pub min_requests: u64,
    /// Whether locally rejected requests count as requests (SRE: yes; Envoy: no).
    /// Default [`DEFAULT_COUNT_REJECTED`].
    pub count_rejected: bool,
    /// Seed of the throttle's own random generator. Default [`DEFAULT_SEED`].
    pub seed: u64,
}

impl Default for AdaptiveThrottleConfig {
    fn default() -> Self {
        AdaptiveThrottleConfig {
            window: DEFAULT_WINDOW,
            k: DEFAULT_K,
            aggression: DEFAULT_AGGRESSION,
            max_reject_probability: DEFAULT_MAX_REJECT_PROBABILITY,
            min_requests: DEFAULT_MIN_REQUESTS,
            count_rejected: DEFAULT_COUNT_REJECTED,
            seed: DEFAULT_SEED,
        }
    }
}

impl AdaptiveThrottleConfig {
    /// A throttle that expects a high success rate: it starts rejecting as soon as fewer
    /// than 95 % of the requests of the last 30 s were accepted (`k = 1 / 0.95`), linearly
    /// (aggression 1), never rejects more than 80 %, has no request floor and does not
    /// count its own rejections. (These are the defaults of Envoy's admission-control
    /// filter.)
    pub fn strict_success_rate() -> Self {
        AdaptiveThrottleConfig {
            window: Nanos::from_secs(30),
            k: 1.0 / 0.95,
            aggression: 1.0,
            max_reject_probability: 0.8,
            min_requests: 0,
            count_rejected: false,
            seed: DEFAULT_SEED,
        }
    }

    /// Set `k` from Envoy's success-rate threshold `threshold` (`0.001..=1.0`): rejection
    /// starts when fewer than that share of requests are accepted; `k = 1 / threshold`.
    pub fn with_success_rate_threshold(self, threshold: f64) -> Result<Self, ConfigError> {
        let t = check_f64(
            "success_rate_threshold",
            threshold,
            0.001,
            1.0,
            "0.001..=1.0",
        )?;
        Ok(AdaptiveThrottleConfig { k: 1.0 / t, ..self })
    }

    /// The success-rate threshold this `k` stands for: `1 / k`.
    pub fn success_rate_threshold(&self) -> f64 {
        1.0 / self.k
    }

    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_nanos(
            "window",
            self.window,
            Nanos::from_secs(1),
            Nanos::from_secs(3_600),
            "1 s..=1 h",
        )?;
        check_f64("k", self.k, 1.0, 1_000.0, "1.0..=1000.0")?;
        check_f64("aggression", self.aggression, 1.0, 100.0, "1.0..=100.0")?;
        check_f64(
            "max_reject_probability",
            self.max_reject_probability,
            0.0,
            1.0,
            "0.0..=1.0",
        )?;
        check_u64(
            "min_requests",
            self.min_requests,
            0,
            1_000_000_000_000,
            "0..=10^12",
        )?;
        Ok(())
    }

    /// The rejection probability for `requests` and `accepts` counted in the window — the
    /// formula in the [module docs](self), as a pure function.
    pub fn reject_probability(&self, requests: u64, accepts: u64) -> f64 {
        if requests == 0 || requests < self.min_requests {
            return 0.0;
        }
        let n = requests as f64;
        let raw = (n - self.k * accepts as f64) / (n + 1.0);
        if raw.is_nan() || raw <= 0.0 {
            return 0.0;
        }
        let shaped = if self.aggression == 1.0 {
            raw
        } else {
            math::pow(raw, 1.0 / self.aggression)
        };
        shaped.min(self.max_reject_probability)
    }
}

/// Requests and accepts counted in the window at some instant.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThrottleWindow {
    /// Requests attempted (admitted, plus rejected ones if `count_rejected`).
    pub requests: u64,
    /// Requests the backend accepted.
    pub accepts: u64,
}

/// Counters of an [`AdaptiveThrottle`] (plain snapshot).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdaptiveThrottleStats {
    /// Requests let through to the backend.
    pub admitted: u64,
    /// Requests rejected locally by the throttle.
    pub throttled: u64,
    /// Backend accepts reported with [`AdaptiveThrottle::on_accepted`].
    pub accepted: u64,
    /// Backend refusals reported with [`AdaptiveThrottle::on_rejected_by_backend`].
    pub rejected_by_backend: u64,
    /// Counts dropped because their bucket had already been reused by a later time
    /// (the caller's `now` lagged a whole window behind another thread's).
    pub stale: u64,
}

/// Client-side adaptive throttle over a sliding window of `B` buckets. Lock-free; see the
/// [module docs](self).
///
/// All bytes zero is a valid, unconfigured `AdaptiveThrottle` (a rejection cap of 0: it
/// never rejects): safe to call, meant to be
/// [`reset`](AdaptiveThrottle::reset) before use; see "Building in place" in the crate
/// docs.
#[repr(C)]
pub struct AdaptiveThrottle<const B: usize = DEFAULT_BUCKETS> {
    config: AdaptiveThrottleConfig,
    /// Bucket width in nanoseconds: `window / B`, at least 1.
    width: u64,
    requests: [AtomicU64; B],
    accepts: [AtomicU64; B],
    rng: Rng,
    admitted: Counter,
    throttled: Counter,
    accepted: Counter,
    rejected_by_backend: Counter,
    stale: Counter,
}

impl<const B: usize> fmt::Debug for AdaptiveThrottle<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptiveThrottle")
            .field("buckets", &B)
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl<const B: usize> AdaptiveThrottle<B> {
    /// Compile-time check of the shape: `1 <= B <= MAX_BUCKETS`.
    const SHAPE_OK: () = assert!(B >= 1 && B <= MAX_BUCKETS, "B must be in 1..=1024");

    /// A throttle with an empty window, or the first invalid config field.
    pub fn new(config: AdaptiveThrottleConfig) -> Result<Self, ConfigError> {
        #[allow(clippy::let_unit_value)]
        let () = Self::SHAPE_OK;
        config.validate()?;
        let width = (config.window.0 / B as u64).max(1);
        Ok(AdaptiveThrottle {
            config,
            width,
            requests: core::array::from_fn(|_| AtomicU64::new(0)),
            accepts: core::array::from_fn(|_| AtomicU64::new(0)),
            rng: Rng::new(config.seed),
            admitted: Counter::new(),
            throttled: Counter::new(),
            accepted: Counter::new(),
            rejected_by_backend: Counter::new(),
            stale: Counter::new(),
        })
    }

    /// Validate `config`, then put this throttle in exactly the state
    /// [`AdaptiveThrottle::new`]`(config)` gives (an empty window, its generator at
    /// `seed`, zeroed counters), in place. On error nothing changes.
    pub fn reset(&mut self, config: AdaptiveThrottleConfig) -> Result<(), ConfigError> {
        #[allow(clippy::let_unit_value)]
        let () = Self::SHAPE_OK;
        config.validate()?;
        self.config = config;
        self.width = (config.window.0 / B as u64).max(1);
        for word in self.requests.iter_mut().chain(self.accepts.iter_mut()) {
            set_mut(word, 0);
        }
        self.rng.reseed(config.seed);
        for c in [
            &mut self.admitted,
            &mut self.throttled,
            &mut self.accepted,
            &mut self.rejected_by_backend,
            &mut self.stale,
        ] {
            c.reset();
        }
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &AdaptiveThrottleConfig {
        &self.config
    }

    /// Counter snapshot.
    pub fn stats(&self) -> AdaptiveThrottleStats {
        AdaptiveThrottleStats {
            admitted: self.admitted.get(),
            throttled: self.throttled.get(),
            accepted: self.accepted.get(),
            rejected_by_backend: self.rejected_by_backend.get(),
            stale: self.stale.get(),
        }
    }

    /// (bucket position, lap tag) of the bucket holding `now`, and the slot number.
    #[inline]
    fn locate(&self, now: Nanos) -> (usize, u32, u64) {
        let slot = now.0.checked_div(self.width).unwrap_or(0);
        let b = B as u64;
        ((slot % b) as usize, (slot / b) as u32, slot)
    }

    #[inline]
    fn count_at(&self, words: &[AtomicU64; B], position: usize, tag: u32) {
        if let Some(word) = words.get(position) {
            if !tagged_increment(word, tag) {
                self.stale.incr();
            }
        }
    }

    #[inline]
    fn count_in(&self, words: &[AtomicU64; B], now: Nanos) {
        let (position, tag, _) = self.locate(now);
        self.count_at(words, position, tag);
    }

    /// Requests and accepts in the window at `now`.
    pub fn window(&self, now: Nanos) -> ThrottleWindow {
        let (current, _, slot) = self.locate(now);
        self.window_at(current, slot)
    }

    /// Sum the `B` newest buckets ending at `slot` (whose position is `current`): slot
    /// `lap·B + p` for positions `p <= current`, `(lap − 1)·B + p` for the others (none
    /// in lap 0).
    fn window_at(&self, current: usize, slot: u64) -> ThrottleWindow {
        let lap = slot / B as u64;
        let this_lap = lap as u32;
        let previous_lap = lap.checked_sub(1).map(|l| l as u32);
        let mut out = ThrottleWindow::default();
        for (position, (req, acc)) in self.requests.iter().zip(self.accepts.iter()).enumerate() {
            let tag = if position <= current {
                this_lap
            } else if let Some(previous) = previous_lap {
                previous
            } else {
                break;
            };
            out.requests += tagged_count(req, tag);
            out.accepts += tagged_count(acc, tag);
        }
        out
    }

    /// The probability with which a request at `now` would be rejected.
    pub fn reject_probability(&self, now: Nanos) -> f64 {
        let w = self.window(now);
        self.config.reject_probability(w.requests, w.accepts)
    }

    /// Decide a request at `now` with the throttle's own generator: `true` means reject
    /// it locally (don't send it). The request is counted (if rejected, only when
    /// `count_rejected`).
    #[inline]
    #[must_use]
    pub fn should_reject(&self, now: Nanos) -> bool {
        self.decide(now, &self.rng)
    }

    /// As [`should_reject`](Self::should_reject), drawing from the caller's generator
    /// (e.g. the simulator's).
    #[inline]
    #[must_use]
    pub fn should_reject_with(&self, now: Nanos, rng: &Rng) -> bool {
        self.decide(now, rng)
    }

    fn decide(&self, now: Nanos, rng: &Rng) -> bool {
        let (position, tag, slot) = self.locate(now);
        let w = self.window_at(position, slot);
        let p = self.config.reject_probability(w.requests, w.accepts);
        let reject = p > 0.0 && rng.next_f64() < p;
        if reject {
            self.throttled.incr();
            if self.config.count_rejected {
                self.count_at(&self.requests, position, tag);
            }
        } else {
            self.admitted.incr();
            self.count_at(&self.requests, position, tag);
        }
        reject
    }

    /// Tell the throttle how a request it let through ended, at `now`, by the call contract
    /// ([`Outcome::adaptive_throttle`]): an answer the backend accepted (success, a 4xx, a
    /// 500) is [`on_accepted`](Self::on_accepted); a timeout, a refused connection or an
    /// overload answer is [`on_rejected_by_backend`](Self::on_rejected_by_backend); a call
    /// that never reached the backend (a local refusal after the throttle), an ignored or a
    /// cancelled one changes nothing. Returns the verdict applied.
    #[inline]
    pub fn report(&self, now: Nanos, outcome: Outcome) -> ThrottleVerdict {
        let verdict = outcome.adaptive_throttle();
        match verdict {
            ThrottleVerdict::Accepted => self.on_accepted(now),
            ThrottleVerdict::RejectedByBackend => self.on_rejected_by_backend(now),
            ThrottleVerdict::Nothing => {}
        }
        verdict
    }

    /// The backend accepted a request (any answer other than an overload refusal). Call it
    /// with the time the answer arrived.
    #[inline]
    pub fn on_accepted(&self, now: Nanos) {
        self.accepted.incr();
        self.count_in(&self.accepts, now);
    }

    /// The backend refused a request because it is overloaded (503, `RESOURCE_EXHAUSTED`,
    /// a throttling error) or did not answer in time. The request was already counted when
    /// it was admitted; this only updates the stats.
    #[inline]
    pub fn on_rejected_by_backend(&self, _now: Nanos) {
        self.rejected_by_backend.incr();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probability_formula() {
        let c = AdaptiveThrottleConfig::default();
        assert_eq!(c.reject_probability(0, 0), 0.0);
        assert_eq!(c.reject_probability(10, 5), 0.0);
        assert_eq!(c.reject_probability(10, 6), 0.0);
        assert_eq!(c.reject_probability(10, 4), 2.0 / 11.0);
        assert_eq!(c.reject_probability(100, 0), 100.0 / 101.0);
        let capped = AdaptiveThrottleConfig {
            max_reject_probability: 0.5,
            ..c
        };
        assert_eq!(capped.reject_probability(100, 0), 0.5);
        let floor = AdaptiveThrottleConfig {
            min_requests: 11,
            ..c
        };
        assert_eq!(floor.reject_probability(10, 0), 0.0);
        assert_eq!(floor.reject_probability(11, 0), 11.0 / 12.0);
        let aggressive = AdaptiveThrottleConfig {
            aggression: 2.0,
            ..c
        };
        assert_eq!(
            aggressive.reject_probability(10, 4),
            math::pow(2.0 / 11.0, 0.5)
        );
        let envoy = AdaptiveThrottleConfig::strict_success_rate();
        assert!((envoy.success_rate_threshold() - 0.95).abs() < 1e-15);
        // 100 requests, 94 successes: below the 95% threshold.
        assert!(envoy.reject_probability(100, 94) > 0.0);
        assert_eq!(envoy.reject_probability(100, 96), 0.0);
    }

    #[test]
    fn success_rate_threshold_helper() {
        let c = AdaptiveThrottleConfig::default()
            .with_success_rate_threshold(0.5)
            .unwrap();
        assert_eq!(c.k, 2.0);
        let e = AdaptiveThrottleConfig::default()
            .with_success_rate_threshold(0.0)
            .unwrap_err();
        assert_eq!(e.field(), "success_rate_threshold");
        assert!(AdaptiveThrottleConfig::default()
            .with_success_rate_threshold(f64::NAN)
            .is_err());
    }

    #[test]
    fn window_slides() {
        let t: AdaptiveThrottle = AdaptiveThrottle::new(AdaptiveThrottleConfig::default()).unwrap();
        let s = Nanos::from_secs;
        for _ in 0..10 {
            let _ = t.should_reject(s(0));
        }
        t.on_accepted(s(5));
        assert_eq!(
            t.window(s(5)),
            ThrottleWindow {
                requests: 10,
                accepts: 1
            }
        );
        // Bucket 0 (0..10 s) is still in the window at 119 s, gone at 120 s.
        assert_eq!(t.window(s(119)).requests, 10);
        assert_eq!(t.window(s(120)), ThrottleWindow::default());
        // Times before the first bucket read as empty.
        assert_eq!(t.window(s(0)).requests, 10);
    }

    #[test]
    fn rejects_bad_config() {
        let d = AdaptiveThrottleConfig::default();
        let bad = |c: AdaptiveThrottleConfig| c.validate().unwrap_err().field();
        assert_eq!(
            bad(AdaptiveThrottleConfig {
                window: Nanos(0),
                ..d
            }),
            "window"
        );
        assert_eq!(bad(AdaptiveThrottleConfig { k: 0.5, ..d }), "k");
        assert_eq!(
            bad(AdaptiveThrottleConfig {
                aggression: f64::INFINITY,
                ..d
            }),
            "aggression"
        );
        assert_eq!(
            bad(AdaptiveThrottleConfig {
                max_reject_probability: 1.5,
                ..d
            }),
            "max_reject_probability"
        );
        assert!(AdaptiveThrottleConfig::strict_success_rate()
            .validate()
            .is_ok());
    }
}
