//! Which core guards a region holds, and how each one's permits are kept in a permit
//! record.
//!
//! [`SharedGuard`] is what a region needs of a guard type: its [`GuardKind`], the capacity
//! its type was built with, its config, and core's in-place `reset`. [`SharedPermits`] adds
//! the permit verbs (core's `try_acquire` and `report`) and the codec that turns core's
//! permit into the four words of a permit record and back, which is what lets a process
//! hand a dead process's permit back to its guard.
//!
//! # Kept in a region
//!
//! | kind | core type(s) | permits (owner-recorded) |
//! |---|---|---|
//! | `circuit_breaker` | `CircuitBreaker<128 / 1024 / 8192 / 65536>` | every call; a dead owner's probe is reported `cancelled` (a failure) |
//! | `keyed_breakers` | `KeyedBreakers<4 / 16 / 64 / 256, 128>` | as the breaker, per key |
//! | `bulkhead` | `Bulkhead` | every call, released as `cancelled` |
//! | `retry_budget` | `RetryBudget` (token bucket, gRPC, AWS, windowed) | none: a retry holds nothing |
//! | `limiter` | `Limiter` | every call, `cancelled` (no sample) |
//! | `admission` | `Admission` | every call, `cancelled` (no sample) |
//! | `adaptive_throttle` | `AdaptiveThrottle` | none |
//! | `latency_tracker` | `LatencyTracker` | none |
//! | `hedging` | `Hedging` | none |
//! | `brownout` | `Brownout` (one operation; one named guard per operation) | none |
//!
//! Not kept: the queue discipline (its `&mut self` wait queue has one owner by design, so
//! it cannot be shared by processes); the brownout *table* (`register` takes `&mut self`:
//! share one named `Brownout` per operation instead); deadlines, backoff, the retry policy
//! and the retry driver (per-request values and pure decisions: there is no host-wide
//! state to share).
//!
//! # The permit codec
//!
//! Core's permits are move-only values with private fields, so that Rust code cannot
//! report one twice. A region keeps a permit in a record as four plain words: core takes a
//! permit apart into plain parts (`into_parts`, e.g. [`CircuitBreakerPermitParts`]) that
//! [`SharedPermits::encode`] packs, and [`SharedPermits::decode`] checks every word (an
//! enum number, a priority level) and rebuilds the permit with core's `from_parts`. No
//! layout of core's is assumed. Rebuilding a permit is the duty core's parts docs spell
//! out (rebuild each permit once, to the guard that issued it): the permit table's
//! take-once records (owner, guard index, generation) are what keeps it.

use std::fmt;
use std::mem::{align_of, size_of};

use guards_core::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
use guards_core::admission::{Admission, AdmissionConfig, AdmissionPermit, AdmissionRejected};
use guards_core::brownout::{Brownout, BrownoutConfig};
use guards_core::bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadPermit, BulkheadPermitParts, BulkheadRejected,
};
use guards_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerPermit, CircuitBreakerPermitParts,
    CircuitBreakerRejectReason, CircuitBreakerRejected, KeyedBreakers, KeyedBreakersPermit,
    KeyedBreakersRejectReason, KeyedBreakersRejected, OutcomeEffect, PermitKind, WindowKind,
};
use guards_core::hedging::{Hedging, HedgingConfig};
use guards_core::latency_tracker::{LatencyTracker, LatencyTrackerConfig};
use guards_core::limiter::{
    Limiter, LimiterConfig, LimiterPermit, LimiterPermitParts, LimiterRejected,
};
use guards_core::outcome::{BulkheadVerdict, LimiterVerdict};
use guards_core::retry_budget::{RetryBudget, RetryBudgetConfig};
use guards_core::{ConfigError, ConfigErrorKind, Nanos, Outcome, Priority};

use crate::shared::table::PermitWords;

/// The kinds of guard a region holds, with fixed numbers (stored in region files; C's
/// `guards_kind` spells the same numbers); 0 is no kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GuardKind {
    /// `CircuitBreaker<CAP>`.
    CircuitBreaker = 1,
    /// `KeyedBreakers<SLOTS, 128>`.
    KeyedBreakers = 2,
    /// `Bulkhead`.
    Bulkhead = 3,
    /// `RetryBudget` (every mode).
    RetryBudget = 4,
    /// `Limiter`.
    Limiter = 5,
    /// `Admission`.
    Admission = 6,
    /// `AdaptiveThrottle`.
    AdaptiveThrottle = 7,
    /// `LatencyTracker`.
    LatencyTracker = 8,
    /// `Hedging`.
    Hedging = 9,
    /// `Brownout` (one operation).
    Brownout = 10,
}

impl GuardKind {
    /// Every kind, in numeric order.
    pub const ALL: [GuardKind; 10] = [
        GuardKind::CircuitBreaker,
        GuardKind::KeyedBreakers,
        GuardKind::Bulkhead,
        GuardKind::RetryBudget,
        GuardKind::Limiter,
        GuardKind::Admission,
        GuardKind::AdaptiveThrottle,
        GuardKind::LatencyTracker,
        GuardKind::Hedging,
        GuardKind::Brownout,
    ];

    /// The stable name (core's module name).
    pub const fn name(self) -> &'static str {
        match self {
            GuardKind::CircuitBreaker => "circuit_breaker",
            GuardKind::KeyedBreakers => "keyed_breakers",
            GuardKind::Bulkhead => "bulkhead",
            GuardKind::RetryBudget => "retry_budget",
            GuardKind::Limiter => "limiter",
            GuardKind::Admission => "admission",
            GuardKind::AdaptiveThrottle => "adaptive_throttle",
            GuardKind::LatencyTracker => "latency_tracker",
            GuardKind::Hedging => "hedging",
            GuardKind::Brownout => "brownout",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<GuardKind> {
        GuardKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The kind numbered `n`.
    pub fn from_u32(n: u32) -> Option<GuardKind> {
        GuardKind::ALL.into_iter().find(|k| *k as u32 == n)
    }
}

impl fmt::Display for GuardKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A core guard type a region can hold.
pub trait SharedGuard: Sync + Send + Sized + 'static {
    /// Its kind.
    const KIND: GuardKind;
    /// The capacity of this type (window cells of a breaker, slots of a keyed set); 0 for
    /// kinds of one size.
    const CAPACITY: u64;
    /// Its config.
    type Config: Copy + fmt::Debug + Send + Sync + 'static;

    /// Check `config` for this type exactly as core's `reset` will (so a guard is never
    /// half-built in a region).
    fn check(config: &Self::Config) -> Result<(), ConfigError>;

    /// Core's `reset`.
    fn reset_in_place(&mut self, config: Self::Config) -> Result<(), ConfigError>;

    /// The config it was built with.
    fn config_of(&self) -> Self::Config;

    /// Give back a dead owner's permit, encoded as `words`, reported `cancelled`; `false`
    /// when the words are not a permit of this type (or it has no permits).
    fn reclaim(&self, words: PermitWords, now: Nanos) -> bool {
        let _ = (words, now);
        false
    }
}

/// What a permit says to its holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PermitView {
    /// When it was granted (the `now` of the acquire; 0 for a bulkhead).
    pub acquired_at: Nanos,
    /// For a half-open breaker probe: the timeout the call must use.
    pub probe_timeout: Option<Nanos>,
}

/// A guard that hands out permits, kept in a region's permit table with their owner.
pub trait SharedPermits: SharedGuard {
    /// What `try_acquire` takes besides `now` (a priority, a key, nothing).
    type Arg: Copy + fmt::Debug;
    /// Core's permit.
    type Permit;
    /// Core's refusal.
    type Rejected: Copy + fmt::Debug;
    /// What `report` returns.
    type Verdict: fmt::Debug;

    /// Core's `try_acquire`.
    fn acquire(&self, arg: Self::Arg, now: Nanos) -> Result<Self::Permit, Self::Rejected>;

    /// Core's `report`.
    fn report(&self, permit: Self::Permit, outcome: Outcome, now: Nanos) -> Self::Verdict;

    /// Whether the refusal says the guard is full: every place (slot, probe, unit of the
    /// limit) is held, so reclaiming a dead owner's permit could make room.
    fn is_full(rejected: &Self::Rejected) -> bool;

    /// The permit as record words.
    fn encode(permit: &Self::Permit) -> PermitWords;

    /// The permit of `words`, or `None` when they are not one (checked field by field).
    fn decode(words: PermitWords) -> Option<Self::Permit>;

    /// What the holder needs to know.
    fn view(permit: &Self::Permit) -> PermitView;
}

/// `reclaim` for a permit kind: decode, then report `cancelled` (the call contract decides
/// what that means to the guard: a slot given back, a probe failed).
fn reclaim_permit<K: SharedPermits>(guard: &K, words: PermitWords, now: Nanos) -> bool {
    match K::decode(words) {
        Some(p) => {
            guard.report(p, Outcome::Cancelled, now);
            true
        }
        None => false,
    }
}

/// The cells a breaker window needs (count: `window_size`; time: 3 × `window_buckets`),
/// checked against `cap` as core's `reset` checks it.
fn check_breaker(config: &CircuitBreakerConfig, cap: u64) -> Result<(), ConfigError> {
    config.validate()?;
    match config.window_kind {
        WindowKind::Count if config.window_size > cap => Err(ConfigError::new(
            "window_size",
            ConfigErrorKind::OutOfRange,
            "at most the breaker's capacity in cells",
        )),
        WindowKind::Time if config.window_buckets.saturating_mul(3) > cap => Err(ConfigError::new(
            "window_buckets",
            ConfigErrorKind::OutOfRange,
            "3 × window_buckets at most the breaker's capacity in cells",
        )),
        _ => Ok(()),
    }
}

// ---- The permit codec: core's plain parts, packed into words.

fn encode_breaker(p: &CircuitBreakerPermit) -> [u64; 4] {
    [
        p.acquired_at().0,
        p.probe_timeout().map_or(0, |t| t.0),
        u64::from(p.generation()),
        p.kind() as u64,
    ]
}

fn decode_breaker(w: [u64; 4]) -> Option<CircuitBreakerPermit> {
    let kind = PermitKind::try_from(u8::try_from(w[3]).ok()?).ok()?;
    Some(CircuitBreakerPermit::from_parts(
        CircuitBreakerPermitParts {
            acquired_at: Nanos(w[0]),
            generation: u32::try_from(w[2]).ok()?,
            kind,
            probe_timeout: if kind == PermitKind::Probe {
                Nanos(w[1])
            } else {
                Nanos::ZERO
            },
        },
    ))
}

fn view_breaker(p: &CircuitBreakerPermit) -> PermitView {
    PermitView {
        acquired_at: p.acquired_at(),
        probe_timeout: p.probe_timeout(),
    }
}

fn encode_limiter(p: &LimiterPermit) -> PermitWords {
    [
        p.start().0,
        p.in_flight(),
        p.threshold(),
        u64::from(p.priority().level()),
    ]
}

fn limiter_parts(w: PermitWords) -> Option<LimiterPermitParts> {
    Some(LimiterPermitParts {
        start: Nanos(w[0]),
        in_flight: w[1],
        threshold: w[2],
        priority: Priority::new(u8::try_from(w[3]).ok()?)?,
    })
}

fn decode_limiter(w: PermitWords) -> Option<LimiterPermit> {
    limiter_parts(w).map(LimiterPermit::from_parts)
}

// ---- The kinds.

macro_rules! breaker_kinds {
    ($($cap:literal),+) => {$(
        impl SharedGuard for CircuitBreaker<$cap> {
            const KIND: GuardKind = GuardKind::CircuitBreaker;
            const CAPACITY: u64 = $cap;
            type Config = CircuitBreakerConfig;
            fn check(c: &CircuitBreakerConfig) -> Result<(), ConfigError> {
                check_breaker(c, $cap)
            }
            fn reset_in_place(&mut self, c: CircuitBreakerConfig) -> Result<(), ConfigError> {
                self.reset(c)
            }
            fn config_of(&self) -> CircuitBreakerConfig {
                *self.config()
            }
            fn reclaim(&self, words: PermitWords, now: Nanos) -> bool {
                reclaim_permit(self, words, now)
            }
        }

        impl SharedPermits for CircuitBreaker<$cap> {
            type Arg = ();
            type Permit = CircuitBreakerPermit;
            type Rejected = CircuitBreakerRejected;
            type Verdict = OutcomeEffect;
            #[inline]
            fn acquire(&self, _: (), now: Nanos) -> Result<CircuitBreakerPermit, CircuitBreakerRejected> {
                self.try_acquire(now)
            }
            #[inline]
            fn report(&self, p: CircuitBreakerPermit, outcome: Outcome, now: Nanos) -> OutcomeEffect {
                CircuitBreaker::report(self, p, outcome, now)
            }
            fn is_full(r: &CircuitBreakerRejected) -> bool {
                r.reason == CircuitBreakerRejectReason::HalfOpenFull
            }
            #[inline]
            fn encode(p: &CircuitBreakerPermit) -> PermitWords {
                encode_breaker(p)
            }
            #[inline]
            fn decode(w: PermitWords) -> Option<CircuitBreakerPermit> {
                decode_breaker(w)
            }
            fn view(p: &CircuitBreakerPermit) -> PermitView {
                view_breaker(p)
            }
        }
    )+};
}

breaker_kinds!(128, 1024, 8192, 65536);

macro_rules! keyed_kinds {
    ($($slots:literal),+) => {$(
        impl SharedGuard for KeyedBreakers<$slots, 128> {
            const KIND: GuardKind = GuardKind::KeyedBreakers;
            const CAPACITY: u64 = $slots;
            type Config = CircuitBreakerConfig;
            fn check(c: &CircuitBreakerConfig) -> Result<(), ConfigError> {
                check_breaker(c, 128)
            }
            fn reset_in_place(&mut self, c: CircuitBreakerConfig) -> Result<(), ConfigError> {
                self.reset(c)
            }
            fn config_of(&self) -> CircuitBreakerConfig {
                *self.config()
            }
            fn reclaim(&self, words: PermitWords, now: Nanos) -> bool {
                reclaim_permit(self, words, now)
            }
        }

        impl SharedPermits for KeyedBreakers<$slots, 128> {
            type Arg = u64;
            type Permit = KeyedBreakersPermit;
            type Rejected = KeyedBreakersRejected;
            type Verdict = OutcomeEffect;
            #[inline]
            fn acquire(&self, key: u64, now: Nanos) -> Result<KeyedBreakersPermit, KeyedBreakersRejected> {
                self.try_acquire(key, now)
            }
            #[inline]
            fn report(&self, p: KeyedBreakersPermit, outcome: Outcome, now: Nanos) -> OutcomeEffect {
                KeyedBreakers::report(self, p, outcome, now)
            }
            fn is_full(r: &KeyedBreakersRejected) -> bool {
                r.reason == KeyedBreakersRejectReason::HalfOpenFull
            }
            fn encode(p: &KeyedBreakersPermit) -> PermitWords {
                let [at, timeout, generation, kind] = encode_breaker(p.permit());
                [p.key(), at, timeout, (generation << 8) | kind]
            }
            fn decode(w: PermitWords) -> Option<KeyedBreakersPermit> {
                let permit = decode_breaker([w[1], w[2], w[3] >> 8, w[3] & 0xff])?;
                Some(KeyedBreakersPermit::from_parts(w[0], permit))
            }
            fn view(p: &KeyedBreakersPermit) -> PermitView {
                view_breaker(p.permit())
            }
        }
    )+};
}

keyed_kinds!(4, 16, 64, 256);

impl SharedGuard for Bulkhead {
    const KIND: GuardKind = GuardKind::Bulkhead;
    const CAPACITY: u64 = 0;
    type Config = BulkheadConfig;
    fn check(c: &BulkheadConfig) -> Result<(), ConfigError> {
        c.validate()
    }
    fn reset_in_place(&mut self, c: BulkheadConfig) -> Result<(), ConfigError> {
        self.reset(c)
    }
    fn config_of(&self) -> BulkheadConfig {
        *self.config()
    }
    fn reclaim(&self, words: PermitWords, now: Nanos) -> bool {
        reclaim_permit(self, words, now)
    }
}

impl SharedPermits for Bulkhead {
    type Arg = ();
    type Permit = BulkheadPermit;
    type Rejected = BulkheadRejected;
    type Verdict = BulkheadVerdict;
    #[inline]
    fn acquire(&self, _: (), _now: Nanos) -> Result<BulkheadPermit, BulkheadRejected> {
        self.try_acquire()
    }
    #[inline]
    fn report(&self, p: BulkheadPermit, outcome: Outcome, _now: Nanos) -> BulkheadVerdict {
        Bulkhead::report(self, p, outcome)
    }
    fn is_full(_: &BulkheadRejected) -> bool {
        true
    }
    #[inline]
    fn encode(_: &BulkheadPermit) -> PermitWords {
        [0; 4]
    }
    #[inline]
    fn decode(w: PermitWords) -> Option<BulkheadPermit> {
        // Word by word: the words were just stored one by one, and a wide compare would
        // wait for those stores to drain.
        let [a, b, c, d] = w;
        if a | b | c | d != 0 {
            return None;
        }
        Some(BulkheadPermit::from_parts(BulkheadPermitParts))
    }
    fn view(_: &BulkheadPermit) -> PermitView {
        PermitView::default()
    }
}

impl SharedGuard for Limiter {
    const KIND: GuardKind = GuardKind::Limiter;
    const CAPACITY: u64 = 0;
    type Config = LimiterConfig;
    fn check(c: &LimiterConfig) -> Result<(), ConfigError> {
        c.validate()
    }
    fn reset_in_place(&mut self, c: LimiterConfig) -> Result<(), ConfigError> {
        self.reset(c)
    }
    fn config_of(&self) -> LimiterConfig {
        *self.config()
    }
    fn reclaim(&self, words: PermitWords, now: Nanos) -> bool {
        reclaim_permit(self, words, now)
    }
}

impl SharedPermits for Limiter {
    type Arg = Priority;
    type Permit = LimiterPermit;
    type Rejected = LimiterRejected;
    type Verdict = LimiterVerdict;
    #[inline]
    fn acquire(&self, priority: Priority, now: Nanos) -> Result<LimiterPermit, LimiterRejected> {
        self.try_acquire(now, priority)
    }
    #[inline]
    fn report(&self, p: LimiterPermit, outcome: Outcome, now: Nanos) -> LimiterVerdict {
        Limiter::report(self, p, outcome, now)
    }
    fn is_full(_: &LimiterRejected) -> bool {
        // Every reason (the limit, a priority's cap, a reserve) is a count of calls in
        // flight: a dead holder's permit counts in all of them.
        true
    }
    fn encode(p: &LimiterPermit) -> PermitWords {
        encode_limiter(p)
    }
    fn decode(w: PermitWords) -> Option<LimiterPermit> {
        decode_limiter(w)
    }
    fn view(p: &LimiterPermit) -> PermitView {
        PermitView {
            acquired_at: p.start(),
            probe_timeout: None,
        }
    }
}

impl SharedGuard for Admission {
    const KIND: GuardKind = GuardKind::Admission;
    const CAPACITY: u64 = 0;
    type Config = AdmissionConfig;
    fn check(c: &AdmissionConfig) -> Result<(), ConfigError> {
        c.validate()
    }
    fn reset_in_place(&mut self, c: AdmissionConfig) -> Result<(), ConfigError> {
        self.reset(c)
    }
    fn config_of(&self) -> AdmissionConfig {
        *self.config()
    }
    fn reclaim(&self, words: PermitWords, now: Nanos) -> bool {
        reclaim_permit(self, words, now)
    }
}

impl SharedPermits for Admission {
    type Arg = Priority;
    type Permit = AdmissionPermit;
    type Rejected = AdmissionRejected;
    type Verdict = LimiterVerdict;
    #[inline]
    fn acquire(
        &self,
        priority: Priority,
        now: Nanos,
    ) -> Result<AdmissionPermit, AdmissionRejected> {
        self.try_acquire(now, priority)
    }
    #[inline]
    fn report(&self, p: AdmissionPermit, outcome: Outcome, now: Nanos) -> LimiterVerdict {
        Admission::report(self, p, outcome, now)
    }
    fn is_full(_: &AdmissionRejected) -> bool {
        true
    }
    fn encode(p: &AdmissionPermit) -> PermitWords {
        [
            p.start().0,
            p.in_flight(),
            p.threshold(),
            u64::from(p.priority().level()),
        ]
    }
    fn decode(w: PermitWords) -> Option<AdmissionPermit> {
        limiter_parts(w).map(AdmissionPermit::from_parts)
    }
    fn view(p: &AdmissionPermit) -> PermitView {
        PermitView {
            acquired_at: p.start(),
            probe_timeout: None,
        }
    }
}

/// Kinds without permits: a config, `reset`, nothing to reclaim.
macro_rules! plain_kind {
    ($($t:ty => $kind:ident, $cfg:ty, $config:expr;)+) => {$(
        impl SharedGuard for $t {
            const KIND: GuardKind = GuardKind::$kind;
            const CAPACITY: u64 = 0;
            type Config = $cfg;
            fn check(c: &$cfg) -> Result<(), ConfigError> {
                c.validate()
            }
            fn reset_in_place(&mut self, c: $cfg) -> Result<(), ConfigError> {
                self.reset(c)
            }
            fn config_of(&self) -> $cfg {
                #[allow(clippy::redundant_closure_call)]
                ($config)(self)
            }
        }
    )+};
}

plain_kind!(
    RetryBudget => RetryBudget, RetryBudgetConfig, |g: &RetryBudget| g.config();
    AdaptiveThrottle => AdaptiveThrottle, AdaptiveThrottleConfig, |g: &AdaptiveThrottle| *g.config();
    LatencyTracker => LatencyTracker, LatencyTrackerConfig, |g: &LatencyTracker| *g.config();
    Hedging => Hedging, HedgingConfig, |g: &Hedging| *g.config();
    Brownout => Brownout, BrownoutConfig, |g: &Brownout| *g.config();
);

// ---- The registry: every concrete type, for code that only has a (kind, capacity).

/// What a region needs to know of a concrete guard type it only knows by (kind, capacity).
#[derive(Debug, Clone, Copy)]
pub struct Ops {
    /// The kind.
    pub kind: GuardKind,
    /// The capacity.
    pub capacity: u64,
    /// `size_of` the core type.
    pub size: usize,
    /// `align_of` the core type.
    pub align: usize,
    reclaim: unsafe fn(*const u8, PermitWords, Nanos) -> bool,
}

/// # Safety
/// `p` must point to a live, initialised `K`.
unsafe fn reclaim_at<K: SharedGuard>(p: *const u8, words: PermitWords, now: Nanos) -> bool {
    // SAFETY: the caller's contract.
    let guard = unsafe { &*p.cast::<K>() };
    guard.reclaim(words, now)
}

impl Ops {
    /// The ops of `K`.
    pub const fn of<K: SharedGuard>() -> Ops {
        Ops {
            kind: K::KIND,
            capacity: K::CAPACITY,
            size: size_of::<K>(),
            align: align_of::<K>(),
            reclaim: reclaim_at::<K>,
        }
    }

    /// Give back a dead owner's permit to the guard of this type at `p`.
    ///
    /// # Safety
    /// `p` must point to a live, initialised guard of this type.
    pub unsafe fn reclaim(&self, p: *const u8, words: PermitWords, now: Nanos) -> bool {
        // SAFETY: the caller's contract.
        unsafe { (self.reclaim)(p, words, now) }
    }
}

/// Every guard type a region can hold.
pub static REGISTRY: [Ops; 16] = [
    Ops::of::<CircuitBreaker<128>>(),
    Ops::of::<CircuitBreaker<1024>>(),
    Ops::of::<CircuitBreaker<8192>>(),
    Ops::of::<CircuitBreaker<65536>>(),
    Ops::of::<KeyedBreakers<4, 128>>(),
    Ops::of::<KeyedBreakers<16, 128>>(),
    Ops::of::<KeyedBreakers<64, 128>>(),
    Ops::of::<KeyedBreakers<256, 128>>(),
    Ops::of::<Bulkhead>(),
    Ops::of::<RetryBudget>(),
    Ops::of::<Limiter>(),
    Ops::of::<Admission>(),
    Ops::of::<AdaptiveThrottle>(),
    Ops::of::<LatencyTracker>(),
    Ops::of::<Hedging>(),
    Ops::of::<Brownout>(),
];

/// The ops of the type of `kind` with `capacity`.
pub fn ops_of(kind: GuardKind, capacity: u64) -> Option<&'static Ops> {
    REGISTRY
        .iter()
        .find(|o| o.kind == kind && o.capacity == capacity)
}

/// The capacities `kind` is built with (ascending; `[0]` for kinds of one size).
pub fn capacities(kind: GuardKind) -> impl Iterator<Item = u64> {
    REGISTRY
        .iter()
        .filter(move |o| o.kind == kind)
        .map(|o| o.capacity)
}
