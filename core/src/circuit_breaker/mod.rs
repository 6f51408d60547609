//! Circuit breaker: stop calling a dependency that is plainly failing, answer at once
//! instead, and test it with a few probes before trusting it again.
//!
//! A [`CircuitBreaker`] is closed, open or half-open:
//!
//! - **closed**: every call goes through and its outcome (success, failure, slow) is recorded
//!   in a window of recent calls: a **count window** (the last N outcomes) or a **time
//!   window** (the last T, in buckets). Once the window holds at least the minimum number of
//!   calls, and the failure rate or the slow-call rate reaches its threshold, it **opens**;
//! - **open**: calls are refused with the instant at which it will let a probe through. The
//!   open duration can grow on consecutive re-openings (multiplier, capped);
//! - **half-open**: at most K probes go through, each told its probe timeout. K successes
//!   close the breaker with a cleared window; one failure (or a slow probe) re-opens it. A
//!   probe that is never reported cannot hold the breaker half-open for ever: once all K
//!   probe slots are held by probes past their probe timeout, the next call counts that as
//!   a failed probe and re-opens the breaker from the instant they fell due.
//!
//! [`CircuitBreaker::try_acquire`] returns a [`CircuitBreakerPermit`] (or a
//! [`CircuitBreakerRejected`] saying why and until when), and the caller hands it back with
//! how the call ended: [`CircuitBreaker::report`] with an [`Outcome`], whose meaning for the
//! breaker is the call contract's ([`crate::outcome`]: a 4xx is a success of the
//! dependency, a local refusal or the caller's own error is not judged, a cancelled probe
//! is a failure), or one of the primitives [`CircuitBreaker::on_success`],
//! [`CircuitBreaker::on_failure`], [`CircuitBreaker::on_ignore`]. A call is slow when
//! `now - acquired_at` reaches [`CircuitBreakerConfig::slow_call_duration`], whatever its
//! result, so a slow failure counts both as a failure and as a slow call.
//!
//! Outcomes of ordinary calls that arrive while the breaker is open or half-open, or that
//! were issued in an earlier generation (before the last transition), are **discarded**,
//! not counted: the window only ever judges calls made in the current closed period. The
//! breaker's own refusals are not outcomes either. A probe whose caller abandons it must be
//! reported as a failure ([`Outcome::Cancelled`] does that); [`CircuitBreakerScope`] does it
//! on drop.
//!
//! A [`KeyedBreakers`] set keeps one breaker per `u64` key (dependency × operation, tenant,
//! country...) in a fixed number of slots, inserted without locks; [`key_of`] derives a key
//! from a name with FNV-1a so every language finds the same breaker.
//!
//! # Why
//!
//! A timeout bounds one call; a breaker bounds the calls you keep making to a dependency that
//! is failing. While it is open the dependency gets room to recover and callers get an
//! immediate answer (a fallback for an optional call, a fast error for a required one)
//! instead of holding a thread for a full timeout. Keyed by operation, one failing operation
//! does not close the others.
//!
//! A count window reacts within a handful of calls; a time window full of healthy history
//! is slow to trip on a sudden total failure (about window × threshold), which the
//! integration tests reproduce with the Basketly figures (docs/basketly.md).
//!
//! # Examples
//!
//! ```
//! use guards_core::circuit_breaker::{
//!     CircuitBreaker, CircuitBreakerConfig, OutcomeEffect, CircuitBreakerRejectReason,
//! };
//! use guards_core::Nanos;
//!
//! // Basketly's C6 breaker: last 20 calls, 50 %, open 5 s, 3 probes with a 100 ms timeout.
//! let breaker: CircuitBreaker = CircuitBreaker::new(CircuitBreakerConfig::fast_trip()).unwrap();
//! let ms = Nanos::from_millis;
//!
//! // 20 failures fill the window: the 20th opens the breaker.
//! for i in 0..20 {
//!     let permit = breaker.try_acquire(ms(i)).unwrap();
//!     let effect = breaker.on_failure(permit, ms(i));
//!     assert_eq!(effect == OutcomeEffect::Opened, i == 19);
//! }
//! let refused = breaker.try_acquire(ms(100)).unwrap_err();
//! assert_eq!(refused.reason, CircuitBreakerRejectReason::Open);
//! assert_eq!(refused.retry_at, ms(19 + 5_000));
//!
//! // 5 s later, three probes; a fourth concurrent caller is refused.
//! let t = ms(19 + 5_000);
//! let probes = [(); 3].map(|_| breaker.try_acquire(t).unwrap());
//! assert_eq!(probes[0].probe_timeout(), Some(ms(100)));
//! assert!(breaker.try_acquire(t).is_err());
//! let effects = probes.map(|p| breaker.on_success(p, t.saturating_add(ms(10))));
//! assert_eq!(effects[2], OutcomeEffect::Closed);
//! assert_eq!(breaker.window_counts(t).calls, 0);
//! ```
//!
//! # Concurrency
//!
//! Every operation is lock-free: a few atomic loads and compare-and-swaps, retried only when
//! another thread made progress; nothing waits for another thread. Only 64-bit atomics are
//! used. The closed hot path (`try_acquire` then `on_success` of a fast call) is one load
//! for `try_acquire`, and for `on_success` one load of the state word, a compare-and-swap on
//! the window head, a load and a compare-and-swap on one slot, and one relaxed counter
//! increment. What holds under any interleaving:
//!
//! - **Legal transitions only, each exactly once per generation.** The state word packs the
//!   state, a 32-bit generation, the probes issued and passed and the consecutive-openings
//!   count. Every transition is a compare-and-swap from an observed word to one with the
//!   next generation, so from a given generation only one transition can succeed, and only
//!   closed→open, open→half-open, half-open→closed and half-open→open are ever written.
//! - **At most K probes per half-open generation**: issuing a probe is a compare-and-swap
//!   that increments `issued` only while it is below K; `on_ignore` of a probe decrements it.
//! - **Overdue probes are judged, and only overdue ones.** A third word holds the instant
//!   at which every probe issued in the current half-open generation is past its timeout
//!   (the latest `acquired_at + probe_timeout`, tagged like the open-until word). An issuer
//!   raises it *before* its issuing compare-and-swap, so a caller that finds all K slots
//!   held (acquire) sees the due instant of each of those probes or a later one; only if
//!   `now` is at or past it does it re-open the breaker (one transition, as any probe
//!   failure). A caller that raised it and then lost the race to issue leaves it up to its
//!   own probe timeout later than needed: the judgement can come that much late, never
//!   early. A delayed writer never puts an older generation's tag over a newer one.
//! - **The open-until instant is never stale.** It lives in a second word tagged with the
//!   low 10 bits of the open generation it belongs to, rounded up to a whole microsecond. An
//!   opener loads that word *before* the state word, writes the instant for the generation
//!   it is about to publish with a compare-and-swap from the value it loaded (skipped if a
//!   racing opener already wrote this generation's), and only then publishes the open state
//!   with its compare-and-swap. A reader that sees the open state (acquire) therefore sees
//!   that generation's instant or a later generation's (then the state has moved on and it
//!   reloads). A delayed opener cannot overwrite a newer instant: any newer write changes the
//!   word it loaded, so its compare-and-swap fails. The first of several racing openers sets
//!   the instant from its own `now`.
//! - **The count window is exact:** at quiescence it holds exactly the last N outcomes
//!   recorded in the current closed generation, and its counts agree with them (see
//!   `count_window.rs`): positions are claimed only under the current epoch's tag, slots are
//!   only ever replaced by newer positions, and clearing is the switch to a new tag.
//! - **No missed trip.** A writer evaluates the window when its outcome is a failure or
//!   slow, or when it could raise the number of calls judged (filling a count window, a new
//!   or nearly empty time bucket). Before scanning, an evaluating writer performs an
//!   acquire-release increment of a shared word; those increments are totally ordered, so the
//!   last evaluator sees every write of every earlier evaluator, and the writes it may miss
//!   are fast successes that only lower the rates. Hence at quiescence a closed breaker's
//!   count window never meets its trip condition, and a trip is decided by the report that
//!   completes it or by a concurrent one. (For the time window this holds when callers' `now`
//!   values are consistent, see `time_window.rs`.)
//! - **Discarded means discarded.** An ordinary outcome is only counted while the state word
//!   is closed in the permit's generation. A writer that passed that check just before a
//!   transition either claims its count-window position before the next closed generation
//!   switches the head (so its slot is older than the new window) or is refused a position;
//!   in the time window it writes under its own epoch tag, which the next closed generation
//!   neither counts nor lets overwrite its buckets.
//!
//! # Memory orderings
//!
//! Each atomic access in this module and its submodules carries a comment naming the rule
//! below that makes its ordering enough:
//!
//! - **(S) The state word.** Every load is `Acquire` and every transition is a
//!   compare-and-swap with `AcqRel` on success and `Acquire` on failure. A transition's
//!   release publishes what its thread wrote before it: the open-until mark (an opening)
//!   and the emptied time window (a close). Every load, and every failed compare-and-swap
//!   that hands back a newer word, acquires, so whoever acts on a word sees that word's mark
//!   or empty buckets. Words that publish nothing (a probe issued or given back, open →
//!   half-open) keep the same orderings so the rule has no exceptions; their correctness
//!   (at most K probes, one transition per generation) rests on the compare-and-swap alone,
//!   since all of them modify one word in one total order.
//! - **(M) The mark word.** An opener and a probe judge load the mark *before* the state
//!   word, with `Acquire`, which keeps their state load after it. An opener writes it with
//!   a compare-and-swap, `AcqRel`, after loading the state word, so a reader that loads that
//!   mark (acquire) also sees the state word the opener had seen: a reader that finds a
//!   mark of another generation and reloads the state word therefore sees that the state has
//!   moved on.
//! - **(E) The evaluation counter.** `fetch_add` with `AcqRel`. These increments are one
//!   total order; each releases the evaluator's own window write (sequenced before it) and
//!   acquires every earlier evaluator's, so the last evaluator's scan sees every write of
//!   every earlier one (the "no missed trip" argument above).
//! - **(W) Count-window head and slots.** Positions are unique and slots only move forward
//!   because each is one compare-and-swap on one word (one modification order), whatever
//!   the ordering; what a scan must see reaches it through (E) and (S). `Acquire` loads and
//!   `AcqRel` compare-and-swaps are stronger than that needs; they also order each slot
//!   write after the head move that allotted it, at no cost on x86-64 (where every
//!   read-modify-write is a full barrier and every load an acquire).
//! - **(T) Time-window cells.** A writer bumps calls, then failures, then slow calls, each
//!   with a compare-and-swap that releases; a scan loads slow calls, then failures (both
//!   acquire), then calls. Seeing a failure or slow bump therefore means seeing its call
//!   bump: the clamp `failures <= calls` never hides a real call. The clear on closing is a
//!   swap (see `time_window.rs`), published by the closing transition (S).
//! - **(P) The probe-due word.** Written and read `Relaxed`: an issuer's write is
//!   sequenced before its issuing compare-and-swap (S), which releases it; a judge reads it
//!   after its acquire load of a word that counts the issue. Writes are compare-and-swaps of
//!   one word, so the maximum is kept.
//! - **(K) Keyed sets.** A key word goes from empty to its key once, by compare-and-swap.
//!   The breakers are built with the set, not at insertion, so a key publishes no data: the
//!   `Acquire` loads and `AcqRel` claim are stronger than needed; two inserters of one key
//!   agree because the compare-and-swap has one winner.
//! - **(C) Counters** are `Relaxed` (see [`crate::Counter`]): they are read for
//!   observation only and never decide anything.
//!
//! The tags are finite, so each guarantee above assumes a thread is not stalled between two
//! of its own atomic steps for longer than it takes the breaker to wrap the tag: 2^32
//! transitions for the generation in a permit, 1,024 generations (and the same microsecond)
//! for the open-until tag, 512 for the probe-due tag, 16,384 generations for the count window's epoch tag, 127
//! generations for the time window's, and 2^32 bucket widths for a time bucket left untouched
//! (its stale count would be read as current only at an exact multiple of that gap).
//!
//! Every loom model in `tests/loom_circuit_breaker.rs` runs each actor on a spawned thread:
//! loom then explores every interleaving of the two, and each protocol rule above has a
//! model that fails when the rule is broken.
//!
//! Breaker state is `#[repr(C)]`, atomics and plain data, no pointers: it can live in memory
//! shared between processes.
//!
//! # References
//!
//! - M. Nygard, *Release It!* (2007; 2nd ed. 2018): the circuit breaker pattern, with
//!   closed, open and half-open states.
//! - resilience4j `CircuitBreaker` documentation: count-based and time-based sliding
//!   windows (time windows kept as per-second buckets), a failure-rate threshold of 50 %, a
//!   slow-call threshold of 100 % of calls at or above 60 s, a minimum of 100 calls and a
//!   window of 100 calls by default, a fixed number of calls permitted in half-open, outcomes
//!   the caller may choose to ignore, and an optionally growing wait in the open state.
//! - Polly v8 circuit breaker: a default break duration of 5 s, and a generator to grow it.
//! - Shopify Semian: the half-open probe gets its own, shorter resource timeout; breaker
//!   state is per process, not shared between workers.
//! - Basketly setting C6 (docs/basketly.md, "C6: circuit breakers": last 20 calls, ≥ 50 %,
//!   5 s, 3 probes, 100 ms), and the model's reading there that outcomes arriving while open
//!   or half-open are ignored and an abandoned probe is a failure.
//! - G. Fowler, L. C. Noll, K.-P. Vo, the FNV hash (FNV-1a, 64-bit offset basis
//!   0xcbf29ce484222325, prime 0x100000001b3).

mod config;
mod count_window;
mod keyed;
mod permit;
mod state;
mod time_window;

pub use config::{
    CircuitBreakerConfig, WindowKind, AUTO_MINIMUM_CALLS, DEFAULT_CAPACITY,
    DEFAULT_FAILURE_RATE_THRESHOLD, DEFAULT_HALF_OPEN_PROBES, DEFAULT_MAX_OPEN_DURATION,
    DEFAULT_MINIMUM_CALLS, DEFAULT_OPEN_DURATION, DEFAULT_OPEN_DURATION_MULTIPLIER,
    DEFAULT_PROBE_TIMEOUT, DEFAULT_SLOW_CALL_DURATION, DEFAULT_SLOW_CALL_RATE_THRESHOLD,
    DEFAULT_WINDOW_BUCKETS, DEFAULT_WINDOW_DURATION, DEFAULT_WINDOW_KIND, DEFAULT_WINDOW_SIZE,
    MAX_HALF_OPEN_PROBES, MAX_MINIMUM_CALLS, MAX_OPEN_DURATION, MAX_OPEN_DURATION_MULTIPLIER,
    MAX_WINDOW_BUCKETS, MAX_WINDOW_DURATION, MAX_WINDOW_SIZE,
};
pub use keyed::{
    key_of, KeyedBreakers, KeyedBreakersPermit, KeyedBreakersRejectReason, KeyedBreakersRejected,
    KeyedStats, DEFAULT_KEYED_SLOTS,
};
pub use permit::{
    CircuitBreakerPermit, CircuitBreakerPermitParts, CircuitBreakerRejectReason,
    CircuitBreakerRejected, CircuitBreakerScope, OutcomeEffect, PermitKind,
};

use crate::cache::CachePadded;
use crate::counter::Counter;
use crate::error::ConfigError;
use crate::outcome::{BreakerVerdict, Outcome};
use crate::sync::{set_mut, AtomicU64, Ordering};
use crate::time::{Clock, Nanos, OnceClock};
use state::{Word, CLOSED, HALF_OPEN, MAX_OPENS, OPEN};

/// The three states.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Calls flow; outcomes are recorded.
    Closed = 0,
    /// Calls are refused until the open-until instant.
    Open = 1,
    /// A limited number of probes are let through.
    HalfOpen = 2,
}

named_enum!(BreakerState {
    Closed => "closed",
    Open => "open",
    HalfOpen => "half_open",
});

impl BreakerState {
    const fn from_code(code: u8) -> Self {
        match code {
            OPEN => BreakerState::Open,
            HALF_OPEN => BreakerState::HalfOpen,
            _ => BreakerState::Closed,
        }
    }
}

/// What the window holds: calls judged, and how many of them failed and were slow.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct WindowCounts {
    /// Calls in the window.
    pub calls: u64,
    /// Of which failed.
    pub failures: u64,
    /// Of which were slow (a slow failure counts in both).
    pub slow: u64,
}

/// A snapshot of the state word (see [`CircuitBreaker::status`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BreakerStatus {
    /// The stored state (an open breaker whose open period has ended stays `Open` here until
    /// a call arrives; [`CircuitBreaker::state`] reports it as half-open).
    pub state: BreakerState,
    /// Generation: +1 on every transition (wraps at 2^32).
    pub generation: u32,
    /// Probes issued in this half-open generation (0 otherwise).
    pub probes_issued: u32,
    /// Probes passed in this half-open generation (0 otherwise).
    pub probes_passed: u32,
    /// Openings in a row without a close (1 after the first opening; saturates at 1023).
    pub consecutive_opens: u32,
    /// When open: an instant, the end of the open period (the first call at or after it is
    /// let through as a probe). [`Nanos::ZERO`] in any other state.
    pub half_open_at: Nanos,
}

/// Counters since the breaker was built (relaxed snapshots; see [`crate::Counter`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CircuitBreakerStats {
    /// Ordinary outcomes recorded as successes (slow ones included).
    pub successes: u64,
    /// Ordinary outcomes recorded as failures (slow ones included).
    pub failures: u64,
    /// Ordinary outcomes recorded as slow (success or failure).
    pub slow_calls: u64,
    /// Probes admitted.
    pub probes_admitted: u64,
    /// Probe successes counted.
    pub probe_successes: u64,
    /// Probe failures counted (slow probe successes included).
    pub probe_failures: u64,
    /// Permits handed back with `on_ignore`.
    pub ignored: u64,
    /// Outcomes discarded because the breaker had moved to another state or generation.
    pub discarded: u64,
    /// Calls refused because the breaker was open.
    pub rejected_open: u64,
    /// Calls refused because every half-open probe slot was taken.
    pub rejected_half_open: u64,
    /// Transitions closed → open.
    pub closed_to_open: u64,
    /// Transitions open → half-open.
    pub open_to_half_open: u64,
    /// Transitions half-open → closed.
    pub half_open_to_closed: u64,
    /// Transitions half-open → open.
    pub half_open_to_open: u64,
}

#[repr(C)]
#[derive(Debug, Default)]
struct Counters {
    successes: Counter,
    failures: Counter,
    slow_calls: Counter,
    probes_admitted: Counter,
    probe_successes: Counter,
    probe_failures: Counter,
    ignored: Counter,
    discarded: Counter,
    rejected_open: Counter,
    rejected_half_open: Counter,
    closed_to_open: Counter,
    open_to_half_open: Counter,
    half_open_to_closed: Counter,
    half_open_to_open: Counter,
}

impl Counters {
    fn reset(&mut self) {
        for c in [
            &mut self.successes,
            &mut self.failures,
            &mut self.slow_calls,
            &mut self.probes_admitted,
            &mut self.probe_successes,
            &mut self.probe_failures,
            &mut self.ignored,
            &mut self.discarded,
            &mut self.rejected_open,
            &mut self.rejected_half_open,
            &mut self.closed_to_open,
            &mut self.open_to_half_open,
            &mut self.half_open_to_closed,
            &mut self.half_open_to_open,
        ] {
            c.reset();
        }
    }
}

/// Words written on every recorded outcome, kept off the cache line of the state word that
/// every `try_acquire` reads (the breaker holds it in a [`CachePadded`]).
#[repr(C)]
#[derive(Debug)]
struct Hot {
    /// Count window head (epoch tag, next position).
    head: AtomicU64,
    /// Incremented (acquire-release) by every evaluating writer before it scans.
    eval: AtomicU64,
    counters: Counters,
}

/// A circuit breaker over a count window or a time window (see the module docs).
///
/// `CAP` is the number of window cells: a count window of up to `CAP` calls, or a time
/// window of up to `CAP / 3` buckets. The default, [`DEFAULT_CAPACITY`] (128), is the one
/// type the bindings use.
///
/// All bytes zero is a valid, unconfigured `CircuitBreaker`: closed, generation 0, a count
/// window of size 0 that never trips. It is safe to call and meant to be
/// [`reset`](CircuitBreaker::reset) before use; see "Building in place" in the crate docs.
#[repr(C)]
#[derive(Debug)]
pub struct CircuitBreaker<const CAP: usize = DEFAULT_CAPACITY> {
    state: AtomicU64,
    mark: AtomicU64,
    /// When the probes of a half-open generation are all due: the latest `acquired_at +
    /// probe_timeout` of its probes, tagged with the generation (the open-until encoding).
    probe_due: AtomicU64,
    config: CircuitBreakerConfig,
    min_calls: u64,
    modulus: u64,
    bucket_width: u64,
    probes: u32,
    hot: CachePadded<Hot>,
    /// The window cells, starting on a cache line of their own.
    cells: CachePadded<[AtomicU64; CAP]>,
}

impl<const CAP: usize> CircuitBreaker<CAP> {
    /// A closed breaker, or the first invalid setting (including a window that does not fit
    /// in `CAP` cells).
    pub fn new(config: CircuitBreakerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        config.validate_capacity(CAP)?;
        Ok(Self::build(config))
    }

    /// Build from a config already validated for `CAP`.
    pub(crate) fn build(config: CircuitBreakerConfig) -> Self {
        let mut b = CircuitBreaker {
            state: AtomicU64::new(0),
            mark: AtomicU64::new(0),
            probe_due: AtomicU64::new(0),
            config,
            min_calls: 0,
            modulus: 0,
            bucket_width: 0,
            probes: 0,
            hot: CachePadded::new(Hot {
                head: AtomicU64::new(0),
                eval: AtomicU64::new(0),
                counters: Counters::default(),
            }),
            cells: CachePadded::new(core::array::from_fn(|_| AtomicU64::new(0))),
        };
        b.apply(config);
        b
    }

    /// Validate `config` (including the fit of its window in `CAP` cells), then put this
    /// breaker in exactly the state [`CircuitBreaker::new`]`(config)` gives: closed,
    /// generation 0, an empty window, zeroed counters. Everything is written in place, the
    /// `CAP` cells one by one. Permits still out are forgotten (their generation no longer
    /// matches, so reporting one is discarded). On error nothing changes.
    pub fn reset(&mut self, config: CircuitBreakerConfig) -> Result<(), ConfigError> {
        config.validate()?;
        config.validate_capacity(CAP)?;
        self.apply(config);
        Ok(())
    }

    /// Write the state `build(config)` describes, in place (config already validated).
    pub(crate) fn apply(&mut self, config: CircuitBreakerConfig) {
        set_mut(&mut self.state, Word::INITIAL.pack());
        set_mut(&mut self.mark, 0);
        set_mut(&mut self.probe_due, 0);
        self.config = config;
        self.min_calls = config.effective_minimum_calls();
        self.modulus = count_window::modulus(config.window_size);
        self.bucket_width = config
            .window_duration
            .0
            .checked_div(config.window_buckets)
            .unwrap_or(1)
            .max(1);
        self.probes = config.half_open_probes.min(MAX_HALF_OPEN_PROBES) as u32;
        let hot = &mut *self.hot;
        set_mut(&mut hot.head, 0);
        set_mut(&mut hot.eval, 0);
        hot.counters.reset();
        for cell in self.cells.iter_mut() {
            set_mut(cell, 0);
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CircuitBreakerConfig {
        &self.config
    }

    /// The number of window cells (`CAP`).
    pub const fn capacity() -> usize {
        CAP
    }

    /// Ask to make a call at `now`.
    ///
    /// - closed: always a permit for an ordinary call;
    /// - open, before the open-until instant: refused
    ///   ([`CircuitBreakerRejectReason::Open`], `retry_at` the open-until instant);
    /// - open, at or after it: this call turns the breaker half-open and is its first probe;
    /// - half-open: a probe permit while fewer than K probes are out, else refused
    ///   ([`CircuitBreakerRejectReason::HalfOpenFull`], `retry_at = now + probe_timeout`);
    /// - half-open with all K probes out and every one of them past its probe timeout
    ///   (`acquired_at + probe_timeout <= now`) without an outcome: the overdue probes are a
    ///   failed probe (an abandoned probe is a failure, [`crate::outcome`]), so the breaker
    ///   re-opens from the instant the last of them fell due; if that opening is already
    ///   over at `now`, this call is the first probe of the next half-open period.
    ///
    /// `clock` is read only where the answer depends on time: never for a closed breaker
    /// that does not time its calls ([`CircuitBreakerConfig::slow_call_duration`] off), once
    /// otherwise (the permit then carries the instant, [`CircuitBreakerPermit::acquired_at`]).
    pub fn try_acquire(
        &self,
        clock: impl Clock,
    ) -> Result<CircuitBreakerPermit, CircuitBreakerRejected> {
        self.acquire(&OnceClock::new(clock), self.times_calls())
    }

    /// Whether ordinary calls are timed (a slow-call duration is set): only then does a
    /// closed breaker need the instant of acquisition.
    #[inline]
    fn times_calls(&self) -> bool {
        self.config.slow_call_duration != Nanos::MAX
    }

    /// [`CircuitBreaker::try_acquire`]; `stamp` asks for the instant in a closed permit even
    /// when the breaker would not need it.
    fn acquire<C: Clock>(
        &self,
        now: &OnceClock<C>,
        stamp: bool,
    ) -> Result<CircuitBreakerPermit, CircuitBreakerRejected> {
        let counters = &self.hot.counters;
        // Ordering (S): acquire, so an open word comes with its generation's mark.
        let mut raw = self.state.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(raw);
            match w.state {
                OPEN => {
                    // Ordering (M): acquire, so a newer generation's mark comes with the
                    // newer state word its opener had seen (the reload below sees it).
                    let mark = self.mark.load(Ordering::Acquire);
                    if !state::mark_is_for(mark, w.generation) {
                        // The instant already belongs to a later generation: the state has
                        // moved on since we loaded it.
                        // Ordering (S): acquire, as every load of the state word.
                        let again = self.state.load(Ordering::Acquire);
                        if again != raw {
                            raw = again;
                            continue;
                        }
                        // Not reachable by the protocol (the instant is written before the
                        // open state is published); refuse for one open duration rather
                        // than spin.
                        counters.rejected_open.incr();
                        let until = now
                            .get()
                            .saturating_add(self.config.open_duration_for(w.opens));
                        return Err(CircuitBreakerRejected {
                            reason: CircuitBreakerRejectReason::Open,
                            retry_at: state::rounded_until(until),
                        });
                    }
                    let until = state::decode_mark(mark);
                    if now.get() < until {
                        counters.rejected_open.incr();
                        return Err(CircuitBreakerRejected {
                            reason: CircuitBreakerRejectReason::Open,
                            retry_at: until,
                        });
                    }
                    let next = Word {
                        issued: 1,
                        ..w.next(HALF_OPEN, w.opens)
                    };
                    // (P): the probe's due instant is written before the probe is issued.
                    self.extend_probe_due(next.generation, now.get());
                    // Ordering (S): a transition; one winner per generation by the
                    // compare-and-swap itself; a failure acquires the newer word (and so
                    // its mark) for the next round.
                    match self.state.compare_exchange(
                        raw,
                        next.pack(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => {
                            counters.open_to_half_open.incr();
                            counters.probes_admitted.incr();
                            return Ok(CircuitBreakerPermit::probe(
                                now.get(),
                                next.generation,
                                self.config.probe_timeout,
                            ));
                        }
                        Err(actual) => raw = actual,
                    }
                }
                HALF_OPEN => {
                    if w.issued >= self.probes {
                        if self.expire_overdue_probes(now.get()) {
                            // Re-opened: judge the call against the new open period.
                            // Ordering (S): acquire, as every load of the state word.
                            raw = self.state.load(Ordering::Acquire);
                            continue;
                        }
                        // Ordering (S): acquire, as every load of the state word.
                        let again = self.state.load(Ordering::Acquire);
                        if again != raw {
                            raw = again;
                            continue;
                        }
                        counters.rejected_half_open.incr();
                        return Err(CircuitBreakerRejected {
                            reason: CircuitBreakerRejectReason::HalfOpenFull,
                            retry_at: now.get().saturating_add(self.config.probe_timeout),
                        });
                    }
                    let next = Word {
                        issued: w.issued + 1,
                        ..w
                    };
                    // (P): the probe's due instant is written before the probe is issued.
                    self.extend_probe_due(w.generation, now.get());
                    // Ordering (S): issuing a probe publishes nothing; at most K issue
                    // because every increment is a compare-and-swap of the one word.
                    match self.state.compare_exchange(
                        raw,
                        next.pack(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => {
                            counters.probes_admitted.incr();
                            return Ok(CircuitBreakerPermit::probe(
                                now.get(),
                                w.generation,
                                self.config.probe_timeout,
                            ));
                        }
                        Err(actual) => raw = actual,
                    }
                }
                _ => {
                    // Closed: the instant matters only to time the call.
                    let at = if stamp { now.get() } else { Nanos::ZERO };
                    return Ok(CircuitBreakerPermit::call(at, w.generation));
                }
            }
        }
    }

    /// [`CircuitBreaker::try_acquire`], returning a [`CircuitBreakerScope`] that reports a
    /// failure if dropped without an outcome.
    /// The scope's permit always carries its instant of acquisition (`clock` is read once),
    /// so that a scope dropped without an outcome can be judged at that instant.
    pub fn try_acquire_scoped(
        &self,
        clock: impl Clock,
    ) -> Result<CircuitBreakerScope<'_, CAP>, CircuitBreakerRejected> {
        self.acquire(&OnceClock::new(clock), true)
            .map(|p| CircuitBreakerScope::new(self, p))
    }

    /// Hand `permit` back with how the call ended, at `now`: the call contract decides
    /// ([`Outcome::breaker`], the table in [`crate::outcome`]) whether this is
    /// [`on_success`](Self::on_success), [`on_failure`](Self::on_failure) or
    /// [`on_ignore`](Self::on_ignore) (then [`OutcomeEffect::Ignored`] is returned). A
    /// cancelled probe is a failure; a cancelled ordinary call, a local refusal and an
    /// ignored error are not judged. Slowness is measured here, from the permit's
    /// acquisition to `now`, never reported.
    ///
    /// `clock` is read at most once, and only when the verdict depends on time: to time the
    /// call (a slow-call duration is set), to place the outcome in a time window, or to
    /// date a transition (the outcome that opens, re-opens or closes the breaker). A plain
    /// success or failure in a count window that does not trip reads no clock.
    pub fn report(
        &self,
        permit: CircuitBreakerPermit,
        outcome: Outcome,
        clock: impl Clock,
    ) -> OutcomeEffect {
        match outcome.breaker(permit.is_probe()) {
            BreakerVerdict::Success => self.on_success(permit, clock),
            BreakerVerdict::Failure => self.on_failure(permit, clock),
            BreakerVerdict::Ignore => {
                self.on_ignore(permit);
                OutcomeEffect::Ignored
            }
        }
    }

    /// The call made with `permit` succeeded; `now` is when it finished. A probe that
    /// succeeded but was slow counts as a failed probe.
    /// `clock` is read as in [`CircuitBreaker::report`].
    pub fn on_success(&self, permit: CircuitBreakerPermit, clock: impl Clock) -> OutcomeEffect {
        self.finish(permit, &OnceClock::new(clock), false)
    }

    /// The call made with `permit` failed (by the caller's definition), or was abandoned;
    /// `now` is when it finished or was given up on.
    /// `clock` is read as in [`CircuitBreaker::report`].
    pub fn on_failure(&self, permit: CircuitBreakerPermit, clock: impl Clock) -> OutcomeEffect {
        self.finish(permit, &OnceClock::new(clock), true)
    }

    /// Hand `permit` back without judging the dependency (the call never reached it, or its
    /// result says nothing about the dependency's health). A probe's slot is given back.
    pub fn on_ignore(&self, permit: CircuitBreakerPermit) {
        self.hot.counters.ignored.incr();
        if !permit.is_probe() {
            return;
        }
        // Ordering (S): acquire, as every load of the state word.
        let mut raw = self.state.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(raw);
            if w.state != HALF_OPEN || w.generation != permit.generation() || w.issued == 0 {
                return;
            }
            let next = Word {
                issued: w.issued - 1,
                ..w
            };
            // Ordering (S): giving a probe slot back publishes nothing; the
            // compare-and-swap keeps it in this generation and never below zero.
            match self
                .state
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(actual) => raw = actual,
            }
        }
    }

    /// The state as a caller would meet it at `now`: an open breaker whose open period has
    /// ended reports [`BreakerState::HalfOpen`], since the next call will be a probe. Reading
    /// never changes the state.
    /// `clock` is read only when the breaker is open.
    pub fn state(&self, clock: impl Clock) -> BreakerState {
        match self.snapshot() {
            (w, Some(until)) if w.state == OPEN && clock.now() >= until => BreakerState::HalfOpen,
            (w, _) => BreakerState::from_code(w.state),
        }
    }

    /// A snapshot of the state word and the open-until instant.
    pub fn status(&self) -> BreakerStatus {
        let (w, until) = self.snapshot();
        BreakerStatus {
            state: BreakerState::from_code(w.state),
            generation: w.generation,
            probes_issued: w.issued,
            probes_passed: w.passed,
            consecutive_opens: w.opens,
            half_open_at: until.unwrap_or(Nanos::ZERO),
        }
    }

    /// A consistent pair: the state word and, if it is open, that generation's open-until
    /// instant. The instant is written before the open state is published, so a mismatch
    /// means the state has moved on since it was loaded: load it again.
    fn snapshot(&self) -> (Word, Option<Nanos>) {
        // Ordering (S): acquire, so an open word comes with its generation's mark.
        let mut raw = self.state.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(raw);
            if w.state != OPEN {
                return (w, None);
            }
            // Ordering (M): acquire, so a newer mark comes with the newer state word.
            let mark = self.mark.load(Ordering::Acquire);
            if state::mark_is_for(mark, w.generation) {
                return (w, Some(state::decode_mark(mark)));
            }
            // Ordering (S): acquire, as every load of the state word.
            let again = self.state.load(Ordering::Acquire);
            if again == raw {
                // Not reachable by the protocol; report open without an instant.
                return (w, None);
            }
            raw = again;
        }
    }

    /// What the window holds, judged at `now` (the time window depends on it). Outside the
    /// closed state the window is not in use and this returns all zeros.
    /// `clock` is read only for a time window.
    pub fn window_counts(&self, clock: impl Clock) -> WindowCounts {
        // Ordering (S): acquire, so a closed word comes with its emptied time window.
        let w = Word::unpack(self.state.load(Ordering::Acquire));
        if w.state != CLOSED {
            return WindowCounts::default();
        }
        self.scan(w.generation, &OnceClock::new(clock))
    }

    /// The number of calls the window must hold before its rates are judged: the
    /// configured [`CircuitBreakerConfig::minimum_calls`], or what 0 ("automatic") stands
    /// for.
    pub fn minimum_calls(&self) -> u64 {
        self.min_calls
    }

    /// Open a closed breaker at `now` on evidence from outside its own window (for example
    /// the fleet's window counts, [`crate::fleet::open_on_fleet_evidence`]). It opens exactly
    /// as a local trip does: the same closed → open transition of the generation it finds
    /// closed, the same open duration (grown on consecutive openings), the same half-open
    /// path afterwards, counted in [`CircuitBreakerStats::closed_to_open`]. Permits still
    /// out are of the closed generation, so their outcomes are discarded.
    ///
    /// Returns whether this call opened it: `false` when the breaker is open or half-open
    /// already, or when a concurrent transition (a local trip, another caller) left the
    /// closed generation first. Lock-free: it is the compare-and-swap a tripping report
    /// uses, so it races with one as two reports do (one opening per generation).
    /// `clock` is read once, only when the breaker is closed.
    pub fn open_on_evidence(&self, clock: impl Clock) -> bool {
        // Ordering (S): acquire, as every load of the state word.
        let w = Word::unpack(self.state.load(Ordering::Acquire));
        if w.state != CLOSED {
            return false;
        }
        self.trip(w.generation, clock.now())
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> CircuitBreakerStats {
        let c = &self.hot.counters;
        CircuitBreakerStats {
            successes: c.successes.get(),
            failures: c.failures.get(),
            slow_calls: c.slow_calls.get(),
            probes_admitted: c.probes_admitted.get(),
            probe_successes: c.probe_successes.get(),
            probe_failures: c.probe_failures.get(),
            ignored: c.ignored.get(),
            discarded: c.discarded.get(),
            rejected_open: c.rejected_open.get(),
            rejected_half_open: c.rejected_half_open.get(),
            closed_to_open: c.closed_to_open.get(),
            open_to_half_open: c.open_to_half_open.get(),
            half_open_to_closed: c.half_open_to_closed.get(),
            half_open_to_open: c.half_open_to_open.get(),
        }
    }

    fn is_slow<C: Clock>(&self, acquired_at: Nanos, now: &OnceClock<C>) -> bool {
        self.times_calls()
            && now.get().saturating_sub(acquired_at) >= self.config.slow_call_duration
    }

    fn finish<C: Clock>(
        &self,
        permit: CircuitBreakerPermit,
        now: &OnceClock<C>,
        failed: bool,
    ) -> OutcomeEffect {
        let slow = self.is_slow(permit.acquired_at(), now);
        if permit.is_probe() {
            self.finish_probe(permit.generation(), now, failed || slow)
        } else {
            self.record(permit.generation(), now, failed, slow)
        }
    }

    /// The slots (count window) or bucket cells (time window) in use.
    fn window_cells(&self) -> &[AtomicU64] {
        let used = match self.config.window_kind {
            WindowKind::Count => self.config.window_size,
            WindowKind::Time => self.config.window_buckets.saturating_mul(3),
        };
        let used = usize::try_from(used).unwrap_or(CAP).min(CAP);
        self.cells.get(..used).unwrap_or(&[])
    }

    /// The time-window period of `now` (`bucket_width` is at least 1 once configured).
    fn period_of(&self, now: Nanos) -> u64 {
        now.0.checked_div(self.bucket_width).unwrap_or(0)
    }

    fn is_closed_in(&self, generation: u32) -> bool {
        // Ordering (S): acquire, so a writer that finds its generation closed writes after
        // the clear that started it.
        let w = Word::unpack(self.state.load(Ordering::Acquire));
        w.state == CLOSED && w.generation == generation
    }

    fn scan<C: Clock>(&self, generation: u32, now: &OnceClock<C>) -> WindowCounts {
        match self.config.window_kind {
            WindowKind::Count => {
                count_window::scan(self.window_cells(), count_window::tag_of(generation))
            }
            WindowKind::Time => time_window::scan(
                self.window_cells(),
                self.config.window_buckets,
                self.period_of(now.get()),
                time_window::epoch_of(generation),
            ),
        }
    }

    /// The trip condition: enough calls, and a rate at or above its threshold.
    fn trips(&self, c: WindowCounts) -> bool {
        if c.calls == 0 || c.calls < self.min_calls {
            return false;
        }
        let calls = c.calls as f64;
        c.failures as f64 / calls >= self.config.failure_rate_threshold
            || c.slow as f64 / calls >= self.config.slow_call_rate_threshold
    }

    /// Record an ordinary outcome of `generation`.
    fn record<C: Clock>(
        &self,
        generation: u32,
        now: &OnceClock<C>,
        failed: bool,
        slow: bool,
    ) -> OutcomeEffect {
        let counters = &self.hot.counters;
        if !self.is_closed_in(generation) {
            counters.discarded.incr();
            return OutcomeEffect::Discarded;
        }
        let evaluate = match self.config.window_kind {
            WindowKind::Count => {
                let tag = count_window::tag_of(generation);
                let Some(pos) = count_window::claim(&self.hot.head, self.modulus, tag, || {
                    self.is_closed_in(generation)
                }) else {
                    counters.discarded.incr();
                    return OutcomeEffect::Discarded;
                };
                let n = self.config.window_size.max(1);
                let index = usize::try_from(pos % n).unwrap_or(usize::MAX);
                let bits = (if failed { count_window::FAILED } else { 0 })
                    | (if slow { count_window::SLOW } else { 0 });
                match self.cells.get(index) {
                    Some(slot) => match count_window::write(slot, pos, self.modulus, tag, bits) {
                        count_window::Written::Replaced { was_current } => {
                            failed || slow || !was_current
                        }
                        count_window::Written::Superseded => false,
                    },
                    None => false,
                }
            }
            WindowKind::Time => time_window::record(
                self.window_cells(),
                self.config.window_buckets,
                self.period_of(now.get()),
                time_window::epoch_of(generation),
                failed,
                slow,
                self.min_calls,
            ),
        };
        if failed {
            counters.failures.incr();
        } else {
            counters.successes.incr();
        }
        if slow {
            counters.slow_calls.incr();
        }
        if evaluate {
            // Order this scan after every earlier evaluator's writes.
            // Ordering (E): release our window write, acquire every earlier evaluator's.
            self.hot.eval.fetch_add(1, Ordering::AcqRel);
            if self.trips(self.scan(generation, now)) && self.trip(generation, now.get()) {
                return OutcomeEffect::Opened;
            }
        }
        OutcomeEffect::Counted
    }

    /// Open from closed `generation`; false if the breaker already left it.
    fn trip(&self, generation: u32, now: Nanos) -> bool {
        loop {
            // Ordering (M): the mark first, acquire, which keeps the state load after it.
            let mark = self.mark.load(Ordering::Acquire);
            // Ordering (S): acquire, as every load of the state word.
            let raw = self.state.load(Ordering::Acquire);
            let w = Word::unpack(raw);
            if w.state != CLOSED || w.generation != generation {
                return false;
            }
            if self.open_from(w, raw, mark, now) {
                self.hot.counters.closed_to_open.incr();
                return true;
            }
        }
    }

    /// One attempt to open from the observed word `raw` (= `w`). `mark` must have been loaded
    /// before `raw`. Returns whether this call published the open state.
    fn open_from(&self, w: Word, raw: u64, mark: u64, now: Nanos) -> bool {
        let target = w.generation.wrapping_add(1);
        let opens = w.opens.saturating_add(1).min(MAX_OPENS);
        if !state::mark_is_for(mark, target) {
            let until = now.saturating_add(self.config.open_duration_for(opens));
            // Ordering (M): release, so a reader that loads this mark also sees the state
            // word loaded above; the compare-and-swap from the loaded mark means a delayed
            // opener can never overwrite a newer generation's instant.
            if self
                .mark
                .compare_exchange(
                    mark,
                    state::encode_mark(target, until),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_err()
            {
                return false;
            }
        }
        // Ordering (S): release publishes the mark written above to every thread that
        // acquires this open word.
        self.state
            .compare_exchange(
                raw,
                w.next(OPEN, opens).pack(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// (P) Make the due instant of half-open `generation` at least `now + probe_timeout`,
    /// before a probe of that generation is issued at `now`. Never moves the word back to an
    /// older generation: a delayed writer finding a newer generation's tag leaves it.
    fn extend_probe_due(&self, generation: u32, now: Nanos) {
        let due = state::rounded_until(now.saturating_add(self.config.probe_timeout));
        let want = state::encode_mark(generation, due);
        // Ordering (P): relaxed; the probe's issue (a state-word compare-and-swap sequenced
        // after this write) releases it to every thread that acquires the issued word.
        let mut cur = self.probe_due.load(Ordering::Relaxed);
        loop {
            if state::tag_is_newer(cur, generation)
                || (state::mark_is_for(cur, generation) && state::decode_mark(cur) >= due)
            {
                return;
            }
            // Ordering (P): relaxed, as above; one modification order keeps the maximum.
            match self.probe_due.compare_exchange_weak(
                cur,
                want,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Every probe slot of the half-open generation is held: if every probe issued in it is
    /// past its timeout at `now`, count that as a failed probe and re-open, from the instant
    /// the last one fell due. Whether this call re-opened the breaker.
    fn expire_overdue_probes(&self, now: Nanos) -> bool {
        loop {
            // Ordering (M): the mark first, acquire, which keeps the state load after it.
            let mark = self.mark.load(Ordering::Acquire);
            // Ordering (S): acquire, so the due instants of every probe counted in this word
            // (written before their issue) are visible below.
            let raw = self.state.load(Ordering::Acquire);
            let w = Word::unpack(raw);
            if w.state != HALF_OPEN || w.issued < self.probes {
                return false;
            }
            // Ordering (P): relaxed; the acquire above made every due write of the probes
            // counted in `raw` visible.
            let due_word = self.probe_due.load(Ordering::Relaxed);
            if !state::mark_is_for(due_word, w.generation) {
                return false;
            }
            let due = state::decode_mark(due_word);
            if now < due {
                return false;
            }
            if self.open_from(w, raw, mark, due) {
                let counters = &self.hot.counters;
                counters.probe_failures.incr();
                counters.half_open_to_open.incr();
                return true;
            }
        }
    }

    /// Judge a probe of half-open `generation`.
    fn finish_probe<C: Clock>(
        &self,
        generation: u32,
        now: &OnceClock<C>,
        failed: bool,
    ) -> OutcomeEffect {
        let counters = &self.hot.counters;
        loop {
            // Ordering (M): the mark first, acquire, which keeps the state load after it.
            let mark = self.mark.load(Ordering::Acquire);
            // Ordering (S): acquire, as every load of the state word.
            let raw = self.state.load(Ordering::Acquire);
            let w = Word::unpack(raw);
            if w.state != HALF_OPEN || w.generation != generation {
                counters.discarded.incr();
                return OutcomeEffect::Discarded;
            }
            if failed {
                if self.open_from(w, raw, mark, now.get()) {
                    counters.probe_failures.incr();
                    counters.half_open_to_open.incr();
                    return OutcomeEffect::Reopened;
                }
                continue;
            }
            let passed = w.passed.saturating_add(1);
            let (next, effect) = if passed >= self.probes {
                if self.config.window_kind == WindowKind::Time {
                    // No ordinary outcome is counted while half-open, so emptying the
                    // buckets here, before the close is published, starts the next closed
                    // generation from an empty window.
                    time_window::clear(self.window_cells());
                }
                (w.next(CLOSED, 0), OutcomeEffect::Closed)
            } else {
                (Word { passed, ..w }, OutcomeEffect::ProbePassed)
            };
            // Ordering (S): a close releases the emptied time window to every thread that
            // acquires the closed word; a passed probe publishes nothing.
            if self
                .state
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                counters.probe_successes.incr();
                if effect == OutcomeEffect::Closed {
                    counters.half_open_to_closed.incr();
                }
                return effect;
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ms(v: u64) -> Nanos {
        Nanos::from_millis(v)
    }

    fn c6() -> CircuitBreaker {
        CircuitBreaker::new(CircuitBreakerConfig::fast_trip()).unwrap()
    }

    fn fail(b: &CircuitBreaker, t: Nanos) -> OutcomeEffect {
        let p = b.try_acquire(t).unwrap();
        b.on_failure(p, t)
    }

    fn succeed(b: &CircuitBreaker, t: Nanos) -> OutcomeEffect {
        let p = b.try_acquire(t).unwrap();
        b.on_success(p, t)
    }

    #[test]
    fn opens_on_evidence_as_a_local_trip_does() {
        let b = c6();
        assert_eq!(b.minimum_calls(), 20);
        // Two calls of its own, far below the minimum: it would never trip locally.
        let _ = fail(&b, ms(0));
        let out = b.try_acquire(ms(1)).unwrap();
        assert!(b.open_on_evidence(ms(10)));
        let st = b.status();
        assert_eq!(
            (st.state, st.generation, st.consecutive_opens),
            (BreakerState::Open, 1, 1)
        );
        assert_eq!(st.half_open_at, ms(5_010));
        assert_eq!(b.stats().closed_to_open, 1);
        // Open already: nothing more, and the permit of the closed period is discarded.
        assert!(!b.open_on_evidence(ms(11)));
        assert_eq!(b.on_failure(out, ms(12)), OutcomeEffect::Discarded);
        let r = b.try_acquire(ms(100)).unwrap_err();
        assert_eq!(
            (r.reason, r.retry_at),
            (CircuitBreakerRejectReason::Open, ms(5_010))
        );
        // The same half-open path: half-open is not closed, so evidence cannot re-open it.
        let probes: [CircuitBreakerPermit; 3] =
            core::array::from_fn(|_| b.try_acquire(ms(5_010)).unwrap());
        assert!(!b.open_on_evidence(ms(5_011)));
        for p in probes {
            let _ = b.on_success(p, ms(5_012));
        }
        assert_eq!(b.state(ms(5_012)), BreakerState::Closed);
        assert_eq!(b.stats().half_open_to_closed, 1);
        // Closed again with an empty window: a second opening on evidence.
        assert!(b.open_on_evidence(ms(6_000)));
        assert_eq!(b.stats().closed_to_open, 2);
        assert_eq!(b.status().half_open_at, ms(11_000));
    }

    #[test]
    fn evidence_and_a_local_trip_open_once() {
        // The local trip first: the evidence finds it open.
        let b = c6();
        for i in 0..20 {
            let _ = fail(&b, ms(i));
        }
        assert!(!b.open_on_evidence(ms(20)));
        assert_eq!(b.stats().closed_to_open, 1);
        // The evidence first: the tripping report is discarded.
        let b = c6();
        let permits: [CircuitBreakerPermit; 20] =
            core::array::from_fn(|i| b.try_acquire(ms(i as u64)).unwrap());
        assert!(b.open_on_evidence(ms(20)));
        for p in permits {
            assert_eq!(b.on_failure(p, ms(21)), OutcomeEffect::Discarded);
        }
        let st = b.status();
        assert_eq!((st.generation, b.stats().closed_to_open), (1, 1));
    }

    #[test]
    fn trips_only_when_full() {
        let b = c6();
        for i in 0..19 {
            assert_eq!(fail(&b, ms(i)), OutcomeEffect::Counted);
        }
        assert_eq!(b.state(ms(19)), BreakerState::Closed);
        assert_eq!(fail(&b, ms(19)), OutcomeEffect::Opened);
        let st = b.status();
        assert_eq!(st.state, BreakerState::Open);
        assert_eq!(st.generation, 1);
        assert_eq!(st.half_open_at, ms(5_019));
        assert_eq!(st.consecutive_opens, 1);
    }

    #[test]
    fn half_open_admits_k_and_closes() {
        let b = c6();
        for i in 0..20 {
            let _ = fail(&b, ms(i));
        }
        assert_eq!(b.state(ms(5_018)), BreakerState::Open);
        assert_eq!(b.state(ms(5_019)), BreakerState::HalfOpen);
        let p: [CircuitBreakerPermit; 3] =
            core::array::from_fn(|_| b.try_acquire(ms(5_019)).unwrap());
        let r = b.try_acquire(ms(5_020)).unwrap_err();
        assert_eq!(r.reason, CircuitBreakerRejectReason::HalfOpenFull);
        assert_eq!(r.retry_at, ms(5_120));
        assert_eq!(r.retry_after(ms(5_020)), ms(100));
        let [a, bb, c] = p;
        assert_eq!(b.on_success(a, ms(5_030)), OutcomeEffect::ProbePassed);
        assert_eq!(b.on_success(bb, ms(5_030)), OutcomeEffect::ProbePassed);
        assert_eq!(b.on_success(c, ms(5_030)), OutcomeEffect::Closed);
        assert_eq!(b.window_counts(ms(5_030)), WindowCounts::default());
        assert_eq!(b.status().consecutive_opens, 0);
        let s = b.stats();
        assert_eq!(
            (s.closed_to_open, s.open_to_half_open, s.half_open_to_closed),
            (1, 1, 1)
        );
        assert_eq!(
            (s.probes_admitted, s.probe_successes, s.rejected_half_open),
            (3, 3, 1)
        );
    }

    #[test]
    fn probes_never_reported_fall_due_and_reopen() {
        let b = c6(); // 3 probes, 100 ms probe timeout, open 5 s
        for i in 0..20 {
            let _ = fail(&b, ms(i));
        }
        // Three probes are taken and never reported: the last falls due at 5_040 + 100.
        let lost = [ms(5_019), ms(5_030), ms(5_040)].map(|t| b.try_acquire(t).unwrap());
        assert!(lost.iter().all(CircuitBreakerPermit::is_probe));
        // Before that instant the slots stay held.
        let r = b.try_acquire(ms(5_139)).unwrap_err();
        assert_eq!(r.reason, CircuitBreakerRejectReason::HalfOpenFull);
        // At it, the overdue probes are a failed probe: open again from 5_140 for 5 s.
        let r = b.try_acquire(ms(5_140)).unwrap_err();
        assert_eq!(r.reason, CircuitBreakerRejectReason::Open);
        assert_eq!(r.retry_at, ms(10_140));
        let st = b.status();
        assert_eq!((st.state, st.consecutive_opens), (BreakerState::Open, 2));
        let s = b.stats();
        assert_eq!((s.probe_failures, s.half_open_to_open), (1, 1));
        // The lost probes, reported late, belong to an ended generation.
        for p in lost {
            assert_eq!(b.on_success(p, ms(10_000)), OutcomeEffect::Discarded);
        }
        // A call long after the due instant and the open period is the next probe at once.
        let b = c6();
        for i in 0..20 {
            let _ = fail(&b, ms(i));
        }
        let lost = [(); 3].map(|_| b.try_acquire(ms(5_019)).unwrap());
        let p = b.try_acquire(ms(60_000)).unwrap();
        assert!(p.is_probe());
        assert_eq!(b.stats().open_to_half_open, 2);
        assert_eq!(b.on_success(p, ms(60_010)), OutcomeEffect::ProbePassed);
        drop(lost);
    }

    #[test]
    fn a_probe_given_back_resets_nothing_and_a_later_probe_extends_the_due() {
        let b = c6();
        for i in 0..20 {
            let _ = fail(&b, ms(i));
        }
        let a = b.try_acquire(ms(5_019)).unwrap();
        let c = b.try_acquire(ms(5_019)).unwrap();
        let d = b.try_acquire(ms(5_019)).unwrap();
        b.on_ignore(d);
        // A slot came back; a probe taken later is due later.
        let e = b.try_acquire(ms(5_100)).unwrap();
        assert!(e.is_probe());
        // 5_119 + ... : a and c are overdue at 5_119 but e is not until 5_200.
        let r = b.try_acquire(ms(5_150)).unwrap_err();
        assert_eq!(r.reason, CircuitBreakerRejectReason::HalfOpenFull);
        let r = b.try_acquire(ms(5_200)).unwrap_err();
        assert_eq!(
            (r.reason, r.retry_at),
            (CircuitBreakerRejectReason::Open, ms(10_200))
        );
        drop((a, c, e));
    }

    #[test]
    fn stale_outcomes_are_discarded() {
        let b = c6();
        let old = b.try_acquire(ms(0)).unwrap();
        for i in 0..20 {
            let _ = fail(&b, ms(i));
        }
        assert_eq!(b.on_success(old, ms(30)), OutcomeEffect::Discarded);
        assert_eq!(b.stats().discarded, 1);
    }

    #[test]
    fn ignore_returns_a_probe_slot() {
        let b = CircuitBreaker::<128>::new(CircuitBreakerConfig {
            half_open_probes: 1,
            ..CircuitBreakerConfig::fast_trip()
        })
        .unwrap();
        for i in 0..20 {
            let p = b.try_acquire(ms(i)).unwrap();
            let _ = b.on_failure(p, ms(i));
        }
        let p = b.try_acquire(ms(6_000)).unwrap();
        assert!(b.try_acquire(ms(6_000)).is_err());
        b.on_ignore(p);
        let p = b.try_acquire(ms(6_001)).unwrap();
        assert_eq!(b.on_success(p, ms(6_002)), OutcomeEffect::Closed);
    }

    #[test]
    fn slow_calls_count_whatever_the_result() {
        let b = CircuitBreaker::<128>::new(CircuitBreakerConfig {
            window_size: 4,
            slow_call_duration: ms(100),
            slow_call_rate_threshold: 0.5,
            failure_rate_threshold: 1.0,
            ..CircuitBreakerConfig::default()
        })
        .unwrap();
        let p = b.try_acquire(ms(0)).unwrap();
        assert_eq!(b.on_failure(p, ms(100)), OutcomeEffect::Counted); // slow failure
        let p = b.try_acquire(ms(0)).unwrap();
        assert_eq!(b.on_success(p, ms(99)), OutcomeEffect::Counted); // fast
        let p = b.try_acquire(ms(0)).unwrap();
        assert_eq!(b.on_success(p, ms(99)), OutcomeEffect::Counted);
        let w = b.window_counts(ms(200));
        assert_eq!((w.calls, w.failures, w.slow), (3, 1, 1));
        let p = b.try_acquire(ms(0)).unwrap();
        assert_eq!(b.on_success(p, ms(150)), OutcomeEffect::Opened); // 2 of 4 slow
        assert_eq!(b.stats().slow_calls, 2);
    }

    #[test]
    fn fast_successes_do_not_scan_a_full_window() {
        let b = c6();
        for i in 0..20 {
            let _ = succeed(&b, ms(i));
        }
        let before = b.hot.eval.load(Ordering::Relaxed);
        for i in 0..50 {
            let _ = succeed(&b, ms(20 + i));
        }
        assert_eq!(b.hot.eval.load(Ordering::Relaxed), before);
        let _ = fail(&b, ms(100));
        assert_eq!(b.hot.eval.load(Ordering::Relaxed), before + 1);
    }

    #[test]
    fn scoped_call_reports_failure_on_drop() {
        let b = c6();
        {
            let _call = b.try_acquire_scoped(ms(0)).unwrap();
        }
        assert_eq!(b.window_counts(ms(0)).failures, 1);
        let call = b.try_acquire_scoped(ms(1)).unwrap();
        assert!(!call.permit().unwrap().is_probe());
        assert_eq!(call.success(ms(2)), OutcomeEffect::Counted);
        b.try_acquire_scoped(ms(3)).unwrap().ignore();
        let s = b.stats();
        assert_eq!((s.failures, s.successes, s.ignored), (1, 1, 1));
    }
}

#[cfg(all(test, not(loom)))]
mod parts_tests {
    use super::*;

    fn ms(v: u64) -> Nanos {
        Nanos::from_millis(v)
    }

    #[test]
    fn a_permit_goes_to_parts_and_back() {
        let b: CircuitBreaker = CircuitBreaker::new(CircuitBreakerConfig::fast_trip()).unwrap();
        let p = b.try_acquire(ms(3)).unwrap();
        let parts = p.into_parts();
        assert_eq!(parts.acquired_at, ms(3));
        assert_eq!(parts.kind, PermitKind::Call);
        assert_eq!(parts.generation, 0);
        let again = CircuitBreakerPermit::from_parts(parts);
        assert_eq!(again.into_parts(), parts);
        let rebuilt = CircuitBreakerPermit::from_parts(parts);
        assert_eq!(b.on_failure(rebuilt, ms(4)), OutcomeEffect::Counted);
        assert_eq!(b.stats().failures, 1);
    }

    #[test]
    fn a_probe_keeps_its_timeout_and_a_call_drops_one() {
        let b: CircuitBreaker = CircuitBreaker::new(CircuitBreakerConfig::fast_trip()).unwrap();
        for i in 0..20 {
            let p = b.try_acquire(ms(i)).unwrap();
            b.on_failure(p, ms(i));
        }
        assert_eq!(b.state(ms(20)), BreakerState::Open);
        let t = ms(20).saturating_add(Nanos::from_secs(5));
        let probe = b.try_acquire(t).unwrap();
        let parts = probe.into_parts();
        assert_eq!(parts.kind, PermitKind::Probe);
        assert_eq!(parts.probe_timeout, ms(100));
        let rebuilt = CircuitBreakerPermit::from_parts(parts);
        assert_eq!(rebuilt.probe_timeout(), Some(ms(100)));
        assert_eq!(rebuilt.generation(), b.status().generation);
        let call = CircuitBreakerPermit::from_parts(CircuitBreakerPermitParts {
            kind: PermitKind::Call,
            probe_timeout: ms(7),
            ..parts
        });
        assert_eq!(call.probe_timeout(), None);
        assert_eq!(call.into_parts().probe_timeout, Nanos::ZERO);
        assert_eq!(b.on_success(rebuilt, t), OutcomeEffect::ProbePassed);
    }

    #[test]
    fn parts_of_another_generation_are_discarded() {
        let b: CircuitBreaker = CircuitBreaker::new(CircuitBreakerConfig::fast_trip()).unwrap();
        let stale = b.try_acquire(ms(0)).unwrap().into_parts();
        for i in 0..20 {
            let p = b.try_acquire(ms(i)).unwrap();
            b.on_failure(p, ms(i));
        }
        let before = b.stats();
        let forged = CircuitBreakerPermit::from_parts(stale);
        assert_eq!(b.on_failure(forged, ms(21)), OutcomeEffect::Discarded);
        assert_eq!(b.stats().failures, before.failures);
        assert_eq!(b.state(ms(21)), BreakerState::Open);
    }

    #[test]
    fn a_keyed_permit_goes_to_parts_and_back() {
        let set: KeyedBreakers<4, 32> =
            KeyedBreakers::new(CircuitBreakerConfig::fast_trip()).unwrap();
        let p = set.try_acquire(42, ms(1)).unwrap();
        let (key, inner) = p.into_parts();
        let parts = inner.into_parts();
        let rebuilt = KeyedBreakersPermit::from_parts(key, CircuitBreakerPermit::from_parts(parts));
        assert_eq!(rebuilt.key(), 42);
        assert_eq!(rebuilt.permit().acquired_at(), ms(1));
        assert_eq!(set.on_success(rebuilt, ms(2)), OutcomeEffect::Counted);
        let unknown = KeyedBreakersPermit::from_parts(7, CircuitBreakerPermit::from_parts(parts));
        assert_eq!(set.on_success(unknown, ms(3)), OutcomeEffect::Discarded);
    }
}
