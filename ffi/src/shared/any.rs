//! [`AnyShared`]: a shared guard of any kind and capacity, chosen at run time (what a
//! binding holds when it only knows a guard by its name or by a runtime capacity).

use guards_core::adaptive_throttle::AdaptiveThrottle;
use guards_core::admission::Admission;
use guards_core::brownout::Brownout;
use guards_core::bulkhead::Bulkhead;
use guards_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, KeyedBreakers};
use guards_core::hedging::Hedging;
use guards_core::latency_tracker::LatencyTracker;
use guards_core::limiter::Limiter;
use guards_core::retry_budget::RetryBudget;
use guards_core::{ConfigError, ConfigErrorKind};

use crate::error::Failure;
use crate::handle::AnyBreaker;
use crate::shared::guard::Shared;
use crate::shared::kind::{GuardKind, SharedGuard};
use crate::shared::place;
use crate::shared::region::Region;

fn unsupported_capacity() -> Failure {
    Failure::from(ConfigError::new(
        "capacity",
        ConfigErrorKind::OutOfRange,
        "a capacity this build supports",
    ))
}

macro_rules! any_shared {
    ($($variant:ident => $ty:ty),+ $(,)?) => {
        /// A shared guard of any kind and capacity.
        #[derive(Debug)]
        pub enum AnyShared {
            $(
                #[doc = concat!("`", stringify!($ty), "`.")]
                $variant(Shared<$ty>),
            )+
        }

        impl AnyShared {
            /// Its kind.
            pub fn kind(&self) -> GuardKind {
                match self {
                    $(AnyShared::$variant(_) => <$ty as SharedGuard>::KIND,)+
                }
            }

            /// Its type's capacity.
            pub fn capacity(&self) -> u64 {
                match self {
                    $(AnyShared::$variant(_) => <$ty as SharedGuard>::CAPACITY,)+
                }
            }

            /// The id its permit tokens carry.
            pub fn id(&self) -> u64 {
                match self {
                    $(AnyShared::$variant(g) => g.id(),)+
                }
            }

            /// Its name, if it lives in a region.
            pub fn name(&self) -> Option<String> {
                match self {
                    $(AnyShared::$variant(g) => g.name(),)+
                }
            }

            /// The existing guard named `name` in `region`, whatever its kind, capacity and
            /// config. Errors: `GuardNotFound`.
            pub fn attach(region: &Region, name: &str) -> Result<AnyShared, Failure> {
                let (kind, capacity) = region.lookup(name)?;
                $(
                    if (kind, capacity)
                        == (<$ty as SharedGuard>::KIND, <$ty as SharedGuard>::CAPACITY)
                    {
                        return region.attach::<$ty>(name).map(AnyShared::$variant);
                    }
                )+
                Err(unsupported_capacity())
            }

            /// The guard built in caller memory at `mem` ([`place::init_in`]), whatever
            /// its kind and capacity.
            ///
            /// # Safety
            /// As [`place::attach`].
            pub unsafe fn attach_placed(mem: *mut u8, len: usize) -> Result<AnyShared, Failure> {
                // SAFETY: the caller's contract.
                let (kind, capacity) = unsafe { place::peek(mem, len) }?;
                $(
                    if (kind, capacity)
                        == (<$ty as SharedGuard>::KIND, <$ty as SharedGuard>::CAPACITY)
                    {
                        // SAFETY: the caller's contract.
                        return unsafe { place::attach::<$ty>(mem, len) }.map(AnyShared::$variant);
                    }
                )+
                Err(unsupported_capacity())
            }
        }
    };
}

any_shared!(
    Breaker128 => CircuitBreaker<128>,
    Breaker1024 => CircuitBreaker<1024>,
    Breaker8192 => CircuitBreaker<8192>,
    Breaker65536 => CircuitBreaker<65536>,
    Keyed4 => KeyedBreakers<4, 128>,
    Keyed16 => KeyedBreakers<16, 128>,
    Keyed64 => KeyedBreakers<64, 128>,
    Keyed256 => KeyedBreakers<256, 128>,
    Bulkhead => Bulkhead,
    RetryBudget => RetryBudget,
    Limiter => Limiter,
    Admission => Admission,
    AdaptiveThrottle => AdaptiveThrottle,
    LatencyTracker => LatencyTracker,
    Hedging => Hedging,
    Brownout => Brownout,
);

/// The breaker capacity for `config` and a requested `capacity` (0: just fit the window):
/// the smallest supported one that holds both, as for a private breaker
/// ([`AnyBreaker::new`]).
pub fn breaker_capacity(config: &CircuitBreakerConfig, capacity: u64) -> Result<u64, Failure> {
    let want = capacity.max(AnyBreaker::cells_needed(config));
    AnyBreaker::CAPACITIES
        .iter()
        .map(|&c| c as u64)
        .find(|&c| c >= want)
        .ok_or_else(|| {
            Failure::from(ConfigError::new(
                "capacity",
                ConfigErrorKind::OutOfRange,
                "0 (fit the window) or at most 65536 cells, at least the window's",
            ))
        })
}

impl AnyShared {
    /// The breaker named `name` in `region`, created from `config` with `capacity` cells
    /// (rounded up as [`breaker_capacity`] says) if there is none.
    pub fn breaker(
        region: &Region,
        name: &str,
        config: CircuitBreakerConfig,
        capacity: u64,
    ) -> Result<AnyShared, Failure> {
        config.validate()?;
        Ok(match breaker_capacity(&config, capacity)? {
            128 => AnyShared::Breaker128(region.get_or_create(name, config)?),
            1024 => AnyShared::Breaker1024(region.get_or_create(name, config)?),
            8192 => AnyShared::Breaker8192(region.get_or_create(name, config)?),
            _ => AnyShared::Breaker65536(region.get_or_create(name, config)?),
        })
    }

    /// The keyed breaker set named `name` in `region`, created from `config` with at least
    /// `slots` keys (4, 16, 64 or 256) if there is none.
    pub fn keyed_breakers(
        region: &Region,
        name: &str,
        config: CircuitBreakerConfig,
        slots: u64,
    ) -> Result<AnyShared, Failure> {
        config.validate()?;
        Ok(match slots {
            0 => {
                return Err(Failure::from(ConfigError::new(
                    "slots",
                    ConfigErrorKind::Zero,
                    "1..=256 keys",
                )))
            }
            1..=4 => AnyShared::Keyed4(region.get_or_create(name, config)?),
            5..=16 => AnyShared::Keyed16(region.get_or_create(name, config)?),
            17..=64 => AnyShared::Keyed64(region.get_or_create(name, config)?),
            65..=256 => AnyShared::Keyed256(region.get_or_create(name, config)?),
            _ => {
                return Err(Failure::from(ConfigError::new(
                    "slots",
                    ConfigErrorKind::OutOfRange,
                    "1..=256 keys",
                )))
            }
        })
    }
}
