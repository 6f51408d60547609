//! Guards on the heap, built in place, behind a runtime capacity.
//!
//! Core's guards are fixed-size values: a breaker's window cells, a keyed set's slots, a
//! queue's slots are const generics, and the structs are aligned to 128 bytes (more than
//! `malloc` promises). Bindings need a guard of a capacity chosen at run time, at a stable
//! address, built without ever holding it on a (possibly small) thread stack. Two pieces,
//! and no other copy of them in the workspace:
//!
//! - [`InPlace<T>`]: memory from `alloc_zeroed` with `T`'s layout (aligned and padded to
//!   whole 128-byte lines, so a guard shares no cache line with other objects), turned
//!   into a guard by core's own `reset(&mut self, config)` and freed with the same layout.
//!   All-zero bytes are a valid inert value of every guard (core's "Building in place"),
//!   and `reset` writes the state `new(config)` gives field by field, without a
//!   temporary of the guard's size, so a 512 KiB breaker is built on any thread. The same
//!   two steps (zero, reset) work in memory shared between processes.
//! - The `Any*` enums: one variant per supported capacity, chosen from a runtime number by
//!   `new`, with methods that dispatch to the guard inside. Bindings see a capacity, never
//!   a const generic. [`with_breaker!`](crate::with_breaker) and friends reach the guard
//!   for calls not wrapped here.
//!
//! # Examples
//! ```
//! use guards::handle::AnyBreaker;
//! use guards_core::CircuitBreakerConfig;
//!
//! // A window of 500 calls needs more than 128 cells: 1024 are allocated.
//! let config = CircuitBreakerConfig { window_size: 500, ..CircuitBreakerConfig::default() };
//! let b = AnyBreaker::new(config, 0).unwrap();
//! assert_eq!(b.capacity(), 1024);
//! assert!(b.try_acquire(guards_core::Nanos(1)).is_ok());
//! ```

use std::alloc::{self, Layout};
use std::ptr::NonNull;

use crate::error::{Failure, GuardsResult};
use crate::names::{
    AdaptiveThrottle, AdaptiveThrottleConfig, Admission, AdmissionConfig, BreakerState,
    BreakerStatus, Brownout, BrownoutConfig, BrownoutTable, Bulkhead, BulkheadConfig,
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerPermit, CircuitBreakerRejected,
    CircuitBreakerStats, Clock, ConfigError, ConfigErrorKind, Hedging, HedgingConfig,
    KeyedBreakers, LatencyTracker, LatencyTrackerConfig, Limiter, LimiterConfig, Outcome,
    OutcomeEffect, QueueDiscipline, QueueDisciplineConfig, RetryBudget, RetryBudgetConfig,
    RetryPolicy, RetryPolicyConfig, WindowCounts, WindowKind, WindowedBudget, WindowedBudgetConfig,
};

/// A core guard that [`InPlace`] can build: its config and core's
/// `reset(&mut self, config)`, which turns the all-zero value into the guard `new(config)`
/// gives (validating `config` first; on error nothing changes).
///
/// Implemented here for every guard of core, each as a one-line call of core's own
/// `reset`; nothing is rebuilt by value.
pub trait BuildInPlace {
    /// The guard's config.
    type Config: Copy;

    /// Core's `reset`.
    fn reset_in_place(&mut self, config: Self::Config) -> Result<(), ConfigError>;
}

macro_rules! build_in_place {
    ($($t:ty => $c:ty),* $(,)?) => {$(
        impl BuildInPlace for $t {
            type Config = $c;
            #[inline]
            fn reset_in_place(&mut self, config: $c) -> Result<(), ConfigError> {
                <$t>::reset(self, config)
            }
        }
    )*};
}

build_in_place!(
    Bulkhead => BulkheadConfig,
    AdaptiveThrottle => AdaptiveThrottleConfig,
    LatencyTracker => LatencyTrackerConfig,
    Hedging => HedgingConfig,
    WindowedBudget => WindowedBudgetConfig,
    RetryBudget => RetryBudgetConfig,
    RetryPolicy => RetryPolicyConfig,
    Limiter => LimiterConfig,
    Admission => AdmissionConfig,
    Brownout => BrownoutConfig,
);

impl<const CAP: usize> BuildInPlace for CircuitBreaker<CAP> {
    type Config = CircuitBreakerConfig;
    #[inline]
    fn reset_in_place(&mut self, config: CircuitBreakerConfig) -> Result<(), ConfigError> {
        self.reset(config)
    }
}

impl<const SLOTS: usize, const CAP: usize> BuildInPlace for KeyedBreakers<SLOTS, CAP> {
    type Config = CircuitBreakerConfig;
    #[inline]
    fn reset_in_place(&mut self, config: CircuitBreakerConfig) -> Result<(), ConfigError> {
        self.reset(config)
    }
}

impl<const N: usize> BuildInPlace for QueueDiscipline<N> {
    type Config = QueueDisciplineConfig;
    #[inline]
    fn reset_in_place(&mut self, config: QueueDisciplineConfig) -> Result<(), ConfigError> {
        self.reset(config)
    }
}

impl<const N: usize> BuildInPlace for BrownoutTable<N> {
    type Config = ();
    #[inline]
    fn reset_in_place(&mut self, _config: ()) -> Result<(), ConfigError> {
        self.reset();
        Ok(())
    }
}

/// A guard on the heap, built in place with its own alignment. Like a `Box<T>` that is
/// never moved through the stack.
pub struct InPlace<T> {
    ptr: NonNull<T>,
    /// Whether the memory is ours (freed on drop) or the caller's (see
    /// [`InPlace::build_at`]).
    owned: bool,
}

// SAFETY: `InPlace<T>` owns its `T` like a `Box<T>` does.
unsafe impl<T: Send> Send for InPlace<T> {}
// SAFETY: `&InPlace<T>` only gives out `&T`.
unsafe impl<T: Sync> Sync for InPlace<T> {}

impl<T: std::fmt::Debug> std::fmt::Debug for InPlace<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// Guards are laid out on whole cache lines of their own (128 bytes, the adjacent-line
/// prefetch pair of x86): a guard's hot atomics never share a line with an unrelated heap
/// object that other threads read.
const LINE: usize = 128;

/// `T`'s layout, aligned and padded to whole [`LINE`]s.
fn layout_of<T>() -> Layout {
    let t = Layout::new::<T>();
    t.align_to(LINE.max(t.align()))
        .map_or(t, |l| l.pad_to_align())
}

impl<T: BuildInPlace> InPlace<T> {
    /// Zeroed memory for a `T`, reset in place with `config` by core. Errors: `config`'s
    /// first invalid field, or `OutOfMemory`.
    pub fn new(config: T::Config) -> Result<Self, Failure> {
        let layout = layout_of::<T>();
        let ptr = if layout.size() == 0 {
            NonNull::<T>::dangling()
        } else {
            // SAFETY: the layout has a non-zero size.
            let raw = unsafe { alloc::alloc_zeroed(layout) }.cast::<T>();
            NonNull::new(raw).ok_or(Failure::code(GuardsResult::OutOfMemory))?
        };
        let mut this = InPlace { ptr, owned: true };
        // On error `this` is dropped: the inert zeroed value is dropped and the memory
        // freed.
        this.reset_in_place(config).map_err(Failure::from)?;
        Ok(this)
    }

    /// Build a `T` for `config` in memory the caller owns (a region shared between
    /// threads or processes: a `SharedArrayBuffer`, a shared mapping): the memory is zeroed
    /// and reset in place. Dropping the result leaves the memory alone.
    ///
    /// # Safety
    /// `ptr` must be valid for writes of [`InPlace::<T>::layout()`](Self::layout)`.size()`
    /// bytes, aligned to its alignment, not used by anything else during the call, and
    /// outlive the returned value and every [`attach`](Self::attach) to it.
    pub unsafe fn build_at(ptr: NonNull<T>, config: T::Config) -> Result<Self, Failure> {
        // SAFETY: the caller vouches for the memory; zero bytes are a valid inert `T`.
        unsafe { std::ptr::write_bytes(ptr.as_ptr().cast::<u8>(), 0, layout_of::<T>().size()) };
        let mut this = InPlace { ptr, owned: false };
        this.reset_in_place(config).map_err(Failure::from)?;
        Ok(this)
    }
}

impl<T> InPlace<T> {
    /// The layout a `T` is placed with (aligned and padded to whole 128-byte lines).
    pub fn layout() -> Layout {
        layout_of::<T>()
    }

    /// A view of a `T` already built at `ptr` by [`build_at`](Self::build_at) (possibly by
    /// another thread); dropping it leaves the memory and the guard alone.
    ///
    /// # Safety
    /// `ptr` must point to a `T` built by `build_at` whose memory outlives the result.
    pub unsafe fn attach(ptr: NonNull<T>) -> Self {
        InPlace { ptr, owned: false }
    }
}

impl<T> std::ops::Deref for InPlace<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `ptr` points to a valid `T` owned by `self` until drop.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> std::ops::DerefMut for InPlace<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`, and `&mut self` is exclusive.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T> Drop for InPlace<T> {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let layout = layout_of::<T>();
        // SAFETY: `ptr` holds a valid `T` that is dropped exactly once, here; then the
        // memory is freed with the layout it was allocated with.
        unsafe {
            std::ptr::drop_in_place(self.ptr.as_ptr());
            if layout.size() != 0 {
                alloc::dealloc(self.ptr.as_ptr().cast::<u8>(), layout);
            }
        }
    }
}

/// The smallest of `sizes` (ascending) that is at least `want`.
fn fit(sizes: &[usize], want: u64) -> Option<usize> {
    sizes.iter().copied().find(|&s| s as u64 >= want)
}

fn capacity_error(field: &'static str, expected: &'static str) -> Failure {
    Failure::from(ConfigError::new(
        field,
        ConfigErrorKind::OutOfRange,
        expected,
    ))
}

/// Declares an `Any*` enum over capacities and its dispatch macro (`$d` is a `$`, for the
/// inner macro's own variables).
macro_rules! any_capacity {
    (
        $d:tt
        $(#[$meta:meta])*
        $name:ident, $with:ident, $config:ty, [$($variant:ident => $ty:ty, $cap:literal;)+]
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub enum $name {
            $(
                #[doc = concat!("Capacity ", stringify!($cap), ".")]
                $variant(InPlace<$ty>),
            )+
        }

        impl $name {
            /// The supported capacities, ascending.
            pub const CAPACITIES: &'static [usize] = &[$($cap),+];

            /// Build with exactly capacity `cap` (one of [`Self::CAPACITIES`]).
            fn build(cap: usize, config: $config) -> Option<Result<Self, Failure>> {
                $(
                    if cap == $cap {
                        return Some(InPlace::<$ty>::new(config).map($name::$variant));
                    }
                )+
                None
            }

            /// The layout of the guard of capacity `cap`, if supported.
            pub fn layout_for(cap: usize) -> Option<Layout> {
                $(
                    if cap == $cap {
                        return Some(InPlace::<$ty>::layout());
                    }
                )+
                None
            }

            /// Build with exactly capacity `cap` in the caller's memory (see
            /// [`InPlace::build_at`]); `None` for an unsupported capacity.
            ///
            /// # Safety
            /// As [`InPlace::build_at`], for [`Self::layout_for`]`(cap)`.
            pub unsafe fn build_at(
                cap: usize,
                config: $config,
                ptr: NonNull<u8>,
            ) -> Option<Result<Self, Failure>> {
                $(
                    if cap == $cap {
                        // SAFETY: forwarded from the caller.
                        return Some(unsafe { InPlace::<$ty>::build_at(ptr.cast(), config) }
                            .map($name::$variant));
                    }
                )+
                None
            }

            /// A view of the guard of capacity `cap` built at `ptr` by
            /// [`Self::build_at`]; `None` for an unsupported capacity.
            ///
            /// # Safety
            /// As [`InPlace::attach`].
            pub unsafe fn attach(cap: usize, ptr: NonNull<u8>) -> Option<Self> {
                $(
                    if cap == $cap {
                        // SAFETY: forwarded from the caller.
                        return Some($name::$variant(unsafe { InPlace::<$ty>::attach(ptr.cast()) }));
                    }
                )+
                None
            }

            /// The capacity it was built with.
            pub fn capacity(&self) -> usize {
                match self {
                    $($name::$variant(_) => $cap,)+
                }
            }
        }

        /// Run `$body` with `$g` bound to the guard inside, whatever its capacity.
        #[macro_export]
        macro_rules! $with {
            ($d any:expr, $d g:ident => $d body:expr) => {
                match $d any {
                    $($crate::handle::$name::$variant($d g) => $d body,)+
                }
            };
        }
    };
}

any_capacity!(
    $
    /// A circuit breaker of 128, 1024, 8192 or 65536 window cells.
    AnyBreaker, with_breaker, CircuitBreakerConfig, [
        C128 => CircuitBreaker<128>, 128;
        C1024 => CircuitBreaker<1024>, 1024;
        C8192 => CircuitBreaker<8192>, 8192;
        C65536 => CircuitBreaker<65536>, 65536;
    ]
);

any_capacity!(
    $
    /// A keyed breaker set of 4, 16, 64 or 256 slots (each breaker has 128 cells).
    AnyKeyedBreakers, with_keyed_breakers, CircuitBreakerConfig, [
        K4 => KeyedBreakers<4, 128>, 4;
        K16 => KeyedBreakers<16, 128>, 16;
        K64 => KeyedBreakers<64, 128>, 64;
        K256 => KeyedBreakers<256, 128>, 256;
    ]
);

any_capacity!(
    $
    /// A queue discipline of 128, 1024, 8192 or 65536 slots.
    AnyQueue, with_queue, QueueDisciplineConfig, [
        S128 => QueueDiscipline<128>, 128;
        S1024 => QueueDiscipline<1024>, 1024;
        S8192 => QueueDiscipline<8192>, 8192;
        S65536 => QueueDiscipline<65536>, 65536;
    ]
);

any_capacity!(
    $
    /// A brownout table of 16, 64, 256 or 1024 operations.
    AnyBrownoutTable, with_brownout_table, (), [
        T16 => BrownoutTable<16>, 16;
        T64 => BrownoutTable<64>, 64;
        T256 => BrownoutTable<256>, 256;
        T1024 => BrownoutTable<1024>, 1024;
    ]
);

any_capacity!(
    $
    /// A latency tracker (core's default 6 windows × 1152 buckets: latencies up to about
    /// 2^35 ns are kept within 1/64).
    AnyLatencyTracker, with_latency_tracker, LatencyTrackerConfig, [
        Default => LatencyTracker, 1152;
    ]
);

any_capacity!(
    $
    /// A hedging policy (its tracker has core's default windows and buckets).
    AnyHedging, with_hedging, HedgingConfig, [
        Default => Hedging, 1152;
    ]
);

any_capacity!(
    $
    /// An adaptive throttle (core's default 12 buckets per window).
    AnyAdaptiveThrottle, with_adaptive_throttle, AdaptiveThrottleConfig, [
        Default => AdaptiveThrottle, 12;
    ]
);

any_capacity!(
    $
    /// A windowed retry budget (core's default 10 buckets per window).
    AnyWindowedBudget, with_windowed_budget, WindowedBudgetConfig, [
        Default => WindowedBudget, 10;
    ]
);

impl AnyBreaker {
    /// The cells the window of `config` needs: `window_size` for a count window,
    /// `3 × window_buckets` for a time window.
    pub fn cells_needed(config: &CircuitBreakerConfig) -> u64 {
        match config.window_kind {
            WindowKind::Count => config.window_size,
            WindowKind::Time => config.window_buckets.saturating_mul(3),
        }
    }

    /// A breaker for `config` with at least `capacity` cells, rounded up to a supported
    /// capacity; `0` means just enough for the window. Errors name the field
    /// (`capacity`, or the config's first invalid field).
    pub fn new(config: CircuitBreakerConfig, capacity: u64) -> Result<Self, Failure> {
        let cap = Self::capacity_for(&config, capacity)?;
        Self::build(cap, config).unwrap_or(Err(Failure::code(GuardsResult::Panic)))
    }

    /// The supported capacity [`AnyBreaker::new`] picks for `config` and `capacity` (after
    /// validating `config`).
    pub fn capacity_for(config: &CircuitBreakerConfig, capacity: u64) -> Result<usize, Failure> {
        config.validate()?;
        let want = capacity.max(Self::cells_needed(config));
        fit(Self::CAPACITIES, want).ok_or_else(|| {
            capacity_error(
                "capacity",
                "0 (fit the window) or at most 65536 cells, at least the window's",
            )
        })
    }

    /// Core's `try_acquire`.
    #[inline(always)]
    pub fn try_acquire(
        &self,
        now: impl Clock,
    ) -> Result<CircuitBreakerPermit, CircuitBreakerRejected> {
        with_breaker!(self, b => b.try_acquire(now))
    }

    /// Core's `report`: the call contract decides what `outcome` does to the permit.
    #[inline(always)]
    pub fn report(
        &self,
        p: CircuitBreakerPermit,
        outcome: Outcome,
        now: impl Clock,
    ) -> OutcomeEffect {
        with_breaker!(self, b => b.report(p, outcome, now))
    }

    /// Core's `on_success`.
    #[inline]
    pub fn on_success(&self, p: CircuitBreakerPermit, now: impl Clock) -> OutcomeEffect {
        with_breaker!(self, b => b.on_success(p, now))
    }

    /// Core's `on_failure`.
    #[inline]
    pub fn on_failure(&self, p: CircuitBreakerPermit, now: impl Clock) -> OutcomeEffect {
        with_breaker!(self, b => b.on_failure(p, now))
    }

    /// Core's `on_ignore`.
    #[inline]
    pub fn on_ignore(&self, p: CircuitBreakerPermit) {
        with_breaker!(self, b => b.on_ignore(p))
    }

    /// Core's `state`.
    pub fn state(&self, now: impl Clock) -> BreakerState {
        with_breaker!(self, b => b.state(now))
    }

    /// Core's `status`.
    pub fn status(&self) -> BreakerStatus {
        with_breaker!(self, b => b.status())
    }

    /// Core's `window_counts`.
    pub fn window_counts(&self, now: impl Clock) -> WindowCounts {
        with_breaker!(self, b => b.window_counts(now))
    }

    /// Core's `stats`.
    pub fn stats(&self) -> CircuitBreakerStats {
        with_breaker!(self, b => b.stats())
    }

    /// The config it was built with.
    pub fn config(&self) -> CircuitBreakerConfig {
        with_breaker!(self, b => *b.config())
    }
}

impl AnyKeyedBreakers {
    /// A keyed set with at least `slots` keys (rounded up to 4, 16, 64 or 256), each
    /// breaker built from `config` with 128 cells.
    pub fn new(config: CircuitBreakerConfig, slots: u64) -> Result<Self, Failure> {
        config.validate()?;
        if slots == 0 {
            return Err(Failure::from(ConfigError::new(
                "slots",
                ConfigErrorKind::Zero,
                "1..=256 keys",
            )));
        }
        let cap =
            fit(Self::CAPACITIES, slots).ok_or_else(|| capacity_error("slots", "1..=256 keys"))?;
        Self::build(cap, config).unwrap_or(Err(Failure::code(GuardsResult::Panic)))
    }
}

impl AnyQueue {
    /// A queue with the smallest slot count that holds `config.capacity` waiters.
    pub fn new(config: QueueDisciplineConfig) -> Result<Self, Failure> {
        config.validate()?;
        let cap = fit(Self::CAPACITIES, u64::from(config.capacity))
            .ok_or_else(|| capacity_error("capacity", "1..=65536"))?;
        Self::build(cap, config).unwrap_or(Err(Failure::code(GuardsResult::Panic)))
    }
}

impl AnyBrownoutTable {
    /// A table with room for at least `capacity` operations (rounded up to 16, 64, 256 or
    /// 1024).
    pub fn new(capacity: u64) -> Result<Self, Failure> {
        if capacity == 0 {
            return Err(Failure::from(ConfigError::new(
                "capacity",
                ConfigErrorKind::Zero,
                "1..=1024 operations",
            )));
        }
        let cap = fit(Self::CAPACITIES, capacity)
            .ok_or_else(|| capacity_error("capacity", "1..=1024 operations"))?;
        Self::build(cap, ()).unwrap_or(Err(Failure::code(GuardsResult::Panic)))
    }
}

macro_rules! single_capacity_new {
    ($($name:ident => $cfg:ty),* $(,)?) => {$(
        impl $name {
            /// Build it from `config` (validated; the error names the field).
            pub fn new(config: $cfg) -> Result<Self, Failure> {
                config.validate()?;
                let cap = Self::CAPACITIES.first().copied().unwrap_or(0);
                Self::build(cap, config).unwrap_or(Err(Failure::code(GuardsResult::Panic)))
            }
        }
    )*};
}

single_capacity_new!(
    AnyLatencyTracker => LatencyTrackerConfig,
    AnyHedging => HedgingConfig,
    AnyAdaptiveThrottle => AdaptiveThrottleConfig,
    AnyWindowedBudget => WindowedBudgetConfig,
);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::names::Nanos;

    #[test]
    fn in_place_is_aligned_and_built() {
        let b = InPlace::<CircuitBreaker<128>>::new(CircuitBreakerConfig::default()).unwrap();
        let addr = &*b as *const CircuitBreaker<128> as usize;
        assert_eq!(addr % std::mem::align_of::<CircuitBreaker<128>>(), 0);
        assert!(std::mem::align_of::<CircuitBreaker<128>>() >= 128);
        assert_eq!(b.config().window_size, 100);
        assert!(b.try_acquire(Nanos(1)).is_ok());
    }

    #[test]
    fn in_place_reports_the_field() {
        let bad = CircuitBreakerConfig {
            failure_rate_threshold: f64::NAN,
            ..CircuitBreakerConfig::default()
        };
        let e = InPlace::<CircuitBreaker<128>>::new(bad).unwrap_err();
        assert_eq!(e.code, GuardsResult::ConfigNotFinite);
        assert!(e.to_string().contains("failure_rate_threshold"), "{e}");
    }

    #[test]
    fn every_capacity_builds() {
        for &cap in AnyBreaker::CAPACITIES {
            let b = AnyBreaker::new(CircuitBreakerConfig::default(), cap as u64).unwrap();
            assert_eq!(b.capacity(), cap);
            let p = b.try_acquire(Nanos(1)).unwrap();
            assert_eq!(b.on_success(p, Nanos(2)), OutcomeEffect::Counted);
        }
        for &slots in AnyKeyedBreakers::CAPACITIES {
            let k = AnyKeyedBreakers::new(CircuitBreakerConfig::default(), slots as u64).unwrap();
            assert_eq!(k.capacity(), slots);
            with_keyed_breakers!(&k, k => assert!(k.get_or_insert(7).is_ok()));
        }
        for &n in AnyQueue::CAPACITIES {
            let q = AnyQueue::new(QueueDisciplineConfig {
                capacity: n as u32,
                ..QueueDisciplineConfig::default()
            })
            .unwrap();
            assert_eq!(q.capacity(), n);
        }
        for &n in AnyBrownoutTable::CAPACITIES {
            assert_eq!(AnyBrownoutTable::new(n as u64).unwrap().capacity(), n);
        }
        AnyLatencyTracker::new(LatencyTrackerConfig::default()).unwrap();
        AnyHedging::new(HedgingConfig::default()).unwrap();
        AnyAdaptiveThrottle::new(AdaptiveThrottleConfig::default()).unwrap();
        AnyWindowedBudget::new(WindowedBudgetConfig::default()).unwrap();
    }

    #[test]
    fn capacities_round_up_to_fit() {
        let c = |kind, size, buckets| CircuitBreakerConfig {
            window_kind: kind,
            window_size: size,
            window_buckets: buckets,
            window_duration: Nanos::from_secs(buckets),
            ..CircuitBreakerConfig::default()
        };
        assert_eq!(
            AnyBreaker::new(c(WindowKind::Count, 128, 10), 0)
                .unwrap()
                .capacity(),
            128
        );
        assert_eq!(
            AnyBreaker::new(c(WindowKind::Count, 129, 10), 0)
                .unwrap()
                .capacity(),
            1024
        );
        assert_eq!(
            AnyBreaker::new(c(WindowKind::Time, 20, 43), 0)
                .unwrap()
                .capacity(),
            1024
        );
        assert_eq!(
            AnyBreaker::new(c(WindowKind::Count, 20, 10), 200)
                .unwrap()
                .capacity(),
            1024
        );
        let e = AnyBreaker::new(c(WindowKind::Count, 20, 10), 65537).unwrap_err();
        assert_eq!(e.code, GuardsResult::ConfigOutOfRange);
        assert!(e.to_string().contains("capacity"));
        assert_eq!(
            AnyKeyedBreakers::new(CircuitBreakerConfig::default(), 5)
                .unwrap()
                .capacity(),
            16
        );
        assert_eq!(
            AnyKeyedBreakers::new(CircuitBreakerConfig::default(), 0)
                .unwrap_err()
                .code,
            GuardsResult::ConfigZero
        );
        assert_eq!(
            AnyKeyedBreakers::new(CircuitBreakerConfig::default(), 257)
                .unwrap_err()
                .code,
            GuardsResult::ConfigOutOfRange
        );
        assert_eq!(AnyBrownoutTable::new(17).unwrap().capacity(), 64);
        assert_eq!(
            AnyBrownoutTable::new(0).unwrap_err().code,
            GuardsResult::ConfigZero
        );
    }

    #[test]
    fn big_guards_build_on_a_small_stack() {
        // A 256 KiB thread builds a 512 KiB breaker, a keyed set of 256 breakers and a
        // queue of 65536 slots: core's `reset` writes them in place, never through the
        // stack.
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let b = AnyBreaker::new(CircuitBreakerConfig::default(), 65536).unwrap();
                assert_eq!(b.capacity(), 65536);
                assert!(b.try_acquire(Nanos(1)).is_ok());
                let k = AnyKeyedBreakers::new(CircuitBreakerConfig::default(), 256).unwrap();
                assert_eq!(k.capacity(), 256);
                let q = AnyQueue::new(QueueDisciplineConfig {
                    capacity: 65536,
                    ..QueueDisciplineConfig::default()
                })
                .unwrap();
                assert_eq!(q.capacity(), 65536);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn every_guard_builds_in_place() {
        let _ = InPlace::<Bulkhead>::new(BulkheadConfig::default()).unwrap();
        let _ = InPlace::<RetryBudget>::new(RetryBudgetConfig::Windowed(
            WindowedBudgetConfig::default(),
        ))
        .unwrap();
        let _ = InPlace::<RetryPolicy>::new(RetryPolicyConfig::default()).unwrap();
        let _ = InPlace::<Limiter>::new(LimiterConfig::default()).unwrap();
        let _ = InPlace::<Admission>::new(AdmissionConfig::default()).unwrap();
        let _ = InPlace::<Brownout>::new(BrownoutConfig::default()).unwrap();
        let e = InPlace::<Limiter>::new(LimiterConfig {
            window: Nanos::ZERO,
            ..LimiterConfig::default()
        })
        .unwrap_err();
        assert_eq!(e.code, GuardsResult::ConfigZero);
    }
}
