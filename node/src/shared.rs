//! Guards placed in a `SharedArrayBuffer`, so that several worker threads use one guard.
//!
//! A guard's state is plain atomics with no pointers (core's "Building in place"), so it
//! can live in memory that several threads map: the thread that creates it builds it in
//! a `SharedArrayBuffer` (zeroed, then `reset` with the config), posts the buffer to the
//! workers, and each worker attaches a view to the same bytes. No copy, no lock, no
//! message per call: the workers' calls race on the same atomics exactly as threads of one
//! Rust process do.
//!
//! Layout of the buffer: a 32-byte header of 32-bit words (`magic`, the guard `kind`, its
//! `capacity`, `ready`, `events`, three reserved), then the guard at the first address
//! aligned to its alignment (128 bytes), so the buffer is `32 + align + size` bytes. Every
//! thread sees the buffer at the same address, so the offset is the same for all. `magic`
//! is claimed with a compare-and-swap (one builder), `ready` is published with a release
//! store after the build and read with an acquire load by `attach`. `events` is the
//! JavaScript layer's: a thread that sees the guard change state bumps it and wakes the
//! threads waiting on it (`Atomics.notify`), which then compare the state with what they
//! saw last and emit their own event (`lib/guards.js`).
//!
//! Every guard whose state is atomics can be shared: `CircuitBreaker`, `KeyedBreakers`,
//! `Bulkhead`, `Limiter`, `Admission`, `RetryBudget`, `RetryPolicy` (its counters and its
//! jitter generator), `Hedging`, `LatencyTracker`, `AdaptiveThrottle`, `Brownout`, and
//! `Backoff` (its jitter generator). Not `QueueDiscipline` (one consumer owns it: `&mut`),
//! not a `RetryDriver` (one request's loop), and not a `Deadline` (an immutable instant:
//! post its `expiresAt`).

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use napi::bindgen_prelude::*;

use guards::error::Failure;
use guards::handle::{
    AnyAdaptiveThrottle, AnyBreaker, AnyHedging, AnyKeyedBreakers, AnyLatencyTracker, InPlace,
};
use guards::names::{
    AdaptiveThrottleConfig, Admission, AdmissionConfig, Bulkhead, BulkheadConfig,
    CircuitBreakerConfig, ConfigError, ConfigErrorKind, HedgingConfig, LatencyTrackerConfig,
    Limiter, LimiterConfig, RetryBudget, RetryBudgetConfig,
};

use crate::errors::{config_failure, internal, type_error};

const MAGIC: u32 = 0x6775_6172;
/// Bytes before the guard's aligned start.
const HEADER: usize = 32;
/// The header word (index of a 32-bit word) the JavaScript layer uses for events.
#[napi_derive::napi]
pub const SHARED_EVENTS_WORD: u32 = 4;

/// Which guard a buffer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Kind {
    CircuitBreaker = 1,
    Bulkhead = 2,
    Limiter = 3,
    Admission = 4,
    RetryBudget = 5,
    KeyedBreakers = 6,
    Hedging = 7,
    LatencyTracker = 8,
    AdaptiveThrottle = 9,
    Brownout = 10,
    RetryPolicy = 11,
    Backoff = 12,
}

/// Bytes a buffer needs for a guard of `layout`.
pub(crate) fn bytes_for(layout: Layout) -> usize {
    HEADER + layout.align() + layout.size()
}

struct Header<'a> {
    magic: &'a AtomicU32,
    kind: &'a AtomicU32,
    capacity: &'a AtomicU32,
    ready: &'a AtomicU32,
}

fn header(mem: &Uint8Array) -> Option<Header<'_>> {
    if mem.len() < HEADER {
        return None;
    }
    let base = mem.as_ptr();
    if (base as usize) % 4 != 0 {
        return None;
    }
    // SAFETY: the buffer has at least HEADER bytes at a 4-aligned address; the words are
    // only ever accessed atomically (by every thread that maps the buffer), and the
    // `Uint8Array` keeps the memory alive for the borrow.
    let word = |i: usize| unsafe { &*(base.add(4 * i) as *const AtomicU32) };
    Some(Header {
        magic: word(0),
        kind: word(1),
        capacity: word(2),
        ready: word(3),
    })
}

/// Where the guard of `layout` lives in `mem`, if it fits.
fn guard_ptr(mem: &Uint8Array, layout: Layout) -> Option<NonNull<u8>> {
    let base = mem.as_ptr() as usize;
    let start = (base + HEADER).checked_next_multiple_of(layout.align())?;
    let end = start.checked_add(layout.size())?;
    if end > base.checked_add(mem.len())? {
        return None;
    }
    NonNull::new(start as *mut u8)
}

/// A guard type that can be built in a caller's buffer or attached to one: ffi's
/// `InPlace<T>` and `Any*` handles.
pub(crate) trait Placeable: Sized {
    /// Its config.
    type Config: Copy;
    /// The header's kind.
    const KIND: Kind;
    /// The capacity `config` needs (`requested`: the caller's capacity option, 0 to fit).
    fn capacity(config: &Self::Config, requested: u64) -> std::result::Result<usize, Failure>;
    /// The layout of capacity `cap`.
    fn layout_for(cap: usize) -> Option<Layout>;
    /// Built in its own memory.
    fn build(config: Self::Config, cap: usize) -> std::result::Result<Self, Failure>;
    /// Built in the caller's memory.
    ///
    /// # Safety
    /// As ffi's `InPlace::build_at`, for `layout_for(cap)`.
    unsafe fn build_at(
        cap: usize,
        config: Self::Config,
        ptr: NonNull<u8>,
    ) -> Option<std::result::Result<Self, Failure>>;
    /// A view of one built at `ptr`.
    ///
    /// # Safety
    /// As ffi's `InPlace::attach`.
    unsafe fn attach(cap: usize, ptr: NonNull<u8>) -> Option<Self>;
}

/// `Placeable` for `InPlace<T>` of a fixed layout.
macro_rules! placeable_in_place {
    ($($t:ty => $cfg:ty, $kind:ident;)*) => {$(
        impl Placeable for InPlace<$t> {
            type Config = $cfg;
            const KIND: Kind = Kind::$kind;
            fn capacity(_: &$cfg, _: u64) -> std::result::Result<usize, Failure> {
                Ok(1)
            }
            fn layout_for(_: usize) -> Option<Layout> {
                Some(InPlace::<$t>::layout())
            }
            fn build(config: $cfg, _: usize) -> std::result::Result<Self, Failure> {
                InPlace::new(config)
            }
            unsafe fn build_at(
                _: usize,
                config: $cfg,
                ptr: NonNull<u8>,
            ) -> Option<std::result::Result<Self, Failure>> {
                // SAFETY: forwarded from the caller.
                Some(unsafe { InPlace::build_at(ptr.cast(), config) })
            }
            unsafe fn attach(_: usize, ptr: NonNull<u8>) -> Option<Self> {
                // SAFETY: forwarded from the caller.
                Some(unsafe { InPlace::attach(ptr.cast()) })
            }
        }
    )*};
}

placeable_in_place!(
    Bulkhead => BulkheadConfig, Bulkhead;
    Limiter => LimiterConfig, Limiter;
    Admission => AdmissionConfig, Admission;
    RetryBudget => RetryBudgetConfig, RetryBudget;
    crate::brownout::BrownoutState => guards::names::BrownoutConfig, Brownout;
    crate::retry_policy::PolicyState => crate::retry_policy::PolicySeed, RetryPolicy;
    crate::backoff::BackoffState => crate::backoff::BackoffSeed, Backoff;
);

/// `Placeable` for an `Any*` handle over capacities.
macro_rules! placeable_any {
    ($($t:ty => $cfg:ty, $kind:ident, $cap:expr;)*) => {$(
        impl Placeable for $t {
            type Config = $cfg;
            const KIND: Kind = Kind::$kind;
            fn capacity(config: &$cfg, requested: u64) -> std::result::Result<usize, Failure> {
                let f: fn(&$cfg, u64) -> std::result::Result<usize, Failure> = $cap;
                f(config, requested)
            }
            fn layout_for(cap: usize) -> Option<Layout> {
                <$t>::layout_for(cap)
            }
            fn build(config: $cfg, cap: usize) -> std::result::Result<Self, Failure> {
                <$t as OwnNew>::own_new(config, cap)
            }
            unsafe fn build_at(
                cap: usize,
                config: $cfg,
                ptr: NonNull<u8>,
            ) -> Option<std::result::Result<Self, Failure>> {
                // SAFETY: forwarded from the caller.
                unsafe { <$t>::build_at(cap, config, ptr) }
            }
            unsafe fn attach(cap: usize, ptr: NonNull<u8>) -> Option<Self> {
                // SAFETY: forwarded from the caller.
                unsafe { <$t>::attach(cap, ptr) }
            }
        }
    )*};
}

/// Building an `Any*` handle in its own memory with a given capacity.
trait OwnNew: Sized {
    type Config;
    fn own_new(config: Self::Config, cap: usize) -> std::result::Result<Self, Failure>;
}

impl OwnNew for AnyBreaker {
    type Config = CircuitBreakerConfig;
    fn own_new(config: CircuitBreakerConfig, cap: usize) -> std::result::Result<Self, Failure> {
        AnyBreaker::new(config, cap as u64)
    }
}

impl OwnNew for AnyKeyedBreakers {
    type Config = CircuitBreakerConfig;
    fn own_new(config: CircuitBreakerConfig, cap: usize) -> std::result::Result<Self, Failure> {
        AnyKeyedBreakers::new(config, cap as u64)
    }
}

macro_rules! own_new_single {
    ($($t:ty => $cfg:ty),*) => {$(
        impl OwnNew for $t {
            type Config = $cfg;
            fn own_new(config: $cfg, _: usize) -> std::result::Result<Self, Failure> {
                <$t>::new(config)
            }
        }
    )*};
}

own_new_single!(
    AnyHedging => HedgingConfig,
    AnyLatencyTracker => LatencyTrackerConfig,
    AnyAdaptiveThrottle => AdaptiveThrottleConfig
);

fn single(caps: &'static [usize]) -> std::result::Result<usize, Failure> {
    caps.first()
        .copied()
        .ok_or_else(|| Failure::code(guards::error::GuardsResult::Panic))
}

/// The keyed set's slot count: the smallest supported capacity holding `slots` keys.
pub(crate) fn keyed_capacity(slots: u64) -> std::result::Result<usize, Failure> {
    if slots == 0 {
        return Err(Failure::from(ConfigError::new(
            "slots",
            ConfigErrorKind::Zero,
            "1..=256 keys",
        )));
    }
    AnyKeyedBreakers::CAPACITIES
        .iter()
        .copied()
        .find(|&c| c as u64 >= slots)
        .ok_or_else(|| {
            Failure::from(ConfigError::new(
                "slots",
                ConfigErrorKind::OutOfRange,
                "1..=256 keys",
            ))
        })
}

placeable_any!(
    AnyBreaker => CircuitBreakerConfig, CircuitBreaker, |c, r| AnyBreaker::capacity_for(c, r);
    AnyKeyedBreakers => CircuitBreakerConfig, KeyedBreakers, |_, r| keyed_capacity(r);
    AnyHedging => HedgingConfig, Hedging, |_, _| single(AnyHedging::CAPACITIES);
    AnyLatencyTracker => LatencyTrackerConfig, LatencyTracker, |_, _| single(AnyLatencyTracker::CAPACITIES);
    AnyAdaptiveThrottle => AdaptiveThrottleConfig, AdaptiveThrottle, |_, _| single(AnyAdaptiveThrottle::CAPACITIES);
);

/// What keeps a guard's memory alive when the guard does not own it: the
/// `SharedArrayBuffer` it was built in, or the region it lives in (an `Arc` of the
/// mapping). Held by the guard objects that can live in either.
#[derive(Default)]
pub(crate) struct Keep {
    _mem: Option<Uint8Array>,
    _region: Option<guards::shared::Region>,
}

impl Keep {
    /// The buffer of a guard placed by [`place`] (none: the guard owns its memory).
    pub(crate) fn buffer(mem: Option<Uint8Array>) -> Self {
        Keep {
            _mem: mem,
            _region: None,
        }
    }

    /// The region a guard lives in.
    pub(crate) fn region(region: guards::shared::Region) -> Self {
        Keep {
            _mem: None,
            _region: Some(region),
        }
    }
}

/// A guard and, when it lives in one, the shared buffer (kept alive with it).
pub(crate) struct Placed<G> {
    pub(crate) g: G,
    pub(crate) mem: Option<Uint8Array>,
}

/// Build or attach guard `G` of class `class`:
///
/// - no `shared` buffer: built in its own memory from `config()`;
/// - a fresh (all-zero) buffer and options given: built in it;
/// - a buffer holding a built guard and no options: attached to it.
///
/// `config` reads the options: the config and the capacity option (0: fit).
pub(crate) fn place<G: Placeable>(
    env: &Env,
    class: &str,
    shared: Option<Uint8Array>,
    options_given: bool,
    config: impl FnOnce() -> Result<(G::Config, u64)>,
) -> Result<Placed<G>> {
    let Some(mem) = shared else {
        let (c, requested) = config()?;
        let cap = G::capacity(&c, requested).map_err(|f| config_failure(env, class, "", &f))?;
        let g = G::build(c, cap).map_err(|f| config_failure(env, class, "", &f))?;
        return Ok(Placed { g, mem: None });
    };
    if !options_given {
        let (ptr, cap) = attach(env, class, &mem, G::KIND, G::layout_for)?;
        // SAFETY: `attach` checked that the buffer holds a built guard of this kind and
        // capacity at `ptr`; the returned `Placed` keeps the buffer alive with the view.
        let g = unsafe { G::attach(cap, ptr) }.ok_or_else(|| internal(env, "capacity"))?;
        return Ok(Placed { g, mem: Some(mem) });
    }
    let (c, requested) = config()?;
    let cap = G::capacity(&c, requested).map_err(|f| config_failure(env, class, "", &f))?;
    let layout = G::layout_for(cap).ok_or_else(|| internal(env, "capacity"))?;
    let ptr = claim(env, class, &mem, layout)?;
    // SAFETY: `claim` gave us exclusive use of `layout.size()` bytes at `ptr`, aligned for
    // the guard, inside the buffer that `Placed` keeps alive.
    let g = unsafe { G::build_at(cap, c, ptr) }
        .ok_or_else(|| internal(env, "capacity"))?
        .map_err(|f| config_failure(env, class, "", &f))?;
    publish(&mem, G::KIND, cap);
    Ok(Placed { g, mem: Some(mem) })
}

/// Bytes a `SharedArrayBuffer` needs for guard `G` with `config()`.
pub(crate) fn size_for<G: Placeable>(
    env: &Env,
    class: &str,
    config: impl FnOnce() -> Result<(G::Config, u64)>,
) -> Result<u32> {
    let (c, requested) = config()?;
    let cap = G::capacity(&c, requested).map_err(|f| config_failure(env, class, "", &f))?;
    let layout = G::layout_for(cap).ok_or_else(|| internal(env, "capacity"))?;
    Ok(u32::try_from(bytes_for(layout)).unwrap_or(u32::MAX))
}

/// Claim a fresh (all-zero) buffer for a guard of `kind`: the pointer to build it at.
fn claim(env: &Env, class: &str, mem: &Uint8Array, layout: Layout) -> Result<NonNull<u8>> {
    let bad = |why: &str| type_error(env, "shared", &format!("{class}: {why}"));
    let h = header(mem).ok_or_else(|| bad("the shared buffer is too small"))?;
    let ptr = guard_ptr(mem, layout).ok_or_else(|| {
        bad(&format!(
            "the shared buffer is too small (it needs {} bytes)",
            bytes_for(layout)
        ))
    })?;
    h.magic
        .compare_exchange(0, MAGIC, Ordering::AcqRel, Ordering::Acquire)
        .map_err(|_| bad("the shared buffer already holds a guard (use fromShared to attach)"))?;
    Ok(ptr)
}

/// The guard is built: publish it.
fn publish(mem: &Uint8Array, kind: Kind, capacity: usize) {
    if let Some(h) = header(mem) {
        h.kind.store(kind as u32, Ordering::Relaxed);
        h.capacity.store(
            u32::try_from(capacity).unwrap_or(u32::MAX),
            Ordering::Relaxed,
        );
        h.ready.store(1, Ordering::Release);
    }
}

/// Attach to a buffer holding a built guard of `kind`: its pointer and capacity.
fn attach(
    env: &Env,
    class: &str,
    mem: &Uint8Array,
    kind: Kind,
    layout_for: impl Fn(usize) -> Option<Layout>,
) -> Result<(NonNull<u8>, usize)> {
    let bad = |why: &str| type_error(env, "shared", &format!("{class}: {why}"));
    let h = header(mem).ok_or_else(|| bad("not a shared guard buffer"))?;
    if h.magic.load(Ordering::Acquire) != MAGIC || h.ready.load(Ordering::Acquire) != 1 {
        return Err(bad("the buffer holds no guard (build one with shared())"));
    }
    if h.kind.load(Ordering::Relaxed) != kind as u32 {
        return Err(bad("the buffer holds another kind of guard"));
    }
    let cap = h.capacity.load(Ordering::Relaxed) as usize;
    let layout = layout_for(cap).ok_or_else(|| bad("the buffer's capacity is not supported"))?;
    let ptr = guard_ptr(mem, layout).ok_or_else(|| bad("the buffer is too small"))?;
    Ok((ptr, cap))
}
