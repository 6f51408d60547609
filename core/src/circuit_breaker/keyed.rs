//! [`KeyedBreakers`]: a fixed-capacity, lock-free set of breakers keyed by `u64`, and
//! [`key_of`], the key every language derives from a name.
//!
//! Keys are whatever the caller chooses to keep apart: dependency × operation, tenant,
//! country, route. A slot is claimed by one compare-and-swap of its key word from empty to
//! the key, so an insert never waits and two threads inserting the same key end up with the
//! same breaker. Lookup starts at a slot chosen from the key's mixed bits and probes
//! linearly; entries are never removed.

use core::fmt;

use super::{CircuitBreaker, CircuitBreakerConfig, DEFAULT_CAPACITY};
use crate::counter::Counter;
use crate::error::ConfigError;
use crate::rng::{below_from_bits, mix64};
use crate::sync::{AtomicU64, Ordering};

/// Default number of slots of a [`KeyedBreakers`] set: 16.
pub const DEFAULT_KEYED_SLOTS: usize = 16;

/// The key of a name, the same in every language: FNV-1a, 64 bits.
///
/// Start from the offset basis `0xcbf29ce484222325`; for each byte, XOR it into the low byte
/// of the hash, then multiply by the prime `0x100000001b3` modulo 2^64. Hash the UTF-8 bytes
/// of a name such as `"stock.view"` (join parts with a separator of your choice, e.g.
/// `"stock.reserve/FR"`).
///
/// ```
/// use guards_core::circuit_breaker::key_of;
/// assert_eq!(key_of(b""), 0xcbf29ce484222325);
/// assert_eq!(key_of(b"a"), 0xaf63dc4c8601ec8c);
/// ```
pub const fn key_of(bytes: &[u8]) -> u64 {
    crate::hash::fnv1a64(bytes)
}

/// An empty slot's key word.
const EMPTY: u64 = 0;

/// Key 0 marks an empty slot, so it is stored as `u64::MAX`: keys 0 and `u64::MAX` share a
/// breaker.
const fn stored_key(key: u64) -> u64 {
    if key == EMPTY {
        u64::MAX
    } else {
        key
    }
}

/// Every slot of a [`KeyedBreakers`] set holds another key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyedFull {
    /// The key that found no slot.
    pub key: u64,
}

impl fmt::Display for KeyedFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "keyed breaker set full: no slot for key {:#018x}",
            self.key
        )
    }
}

impl core::error::Error for KeyedFull {}

/// Counters of a [`KeyedBreakers`] set.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct KeyedStats {
    /// Keys inserted.
    pub entries: u64,
    /// `get_or_insert` calls that found the set full.
    pub full: u64,
}

/// A fixed set of up to `SLOTS` breakers, one per key, all built from one config.
///
/// No allocation: the breakers live inline (`SLOTS × CircuitBreaker<CAP>`; about 1.5 KiB each
/// with the default capacity), so a large set belongs in a `static` or on the heap of the
/// caller's choice.
///
/// ```
/// use guards_core::circuit_breaker::{key_of, CircuitBreakerConfig, KeyedBreakers};
/// use guards_core::Nanos;
///
/// let set: KeyedBreakers<4> = KeyedBreakers::new(CircuitBreakerConfig::seed_c6()).unwrap();
/// let view = set.get_or_insert(key_of(b"stock.view")).unwrap();
/// let reserve = set.get_or_insert(key_of(b"stock.reserve")).unwrap();
/// assert!(!core::ptr::eq(view, reserve));
/// assert!(core::ptr::eq(view, set.get_or_insert(key_of(b"stock.view")).unwrap()));
/// let permit = view.try_acquire(Nanos::ZERO).unwrap();
/// view.on_success(permit, Nanos::from_millis(3));
/// assert_eq!(set.len(), 2);
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct KeyedBreakers<
    const SLOTS: usize = DEFAULT_KEYED_SLOTS,
    const CAP: usize = DEFAULT_CAPACITY,
> {
    config: CircuitBreakerConfig,
    entries: Counter,
    full: Counter,
    keys: [AtomicU64; SLOTS],
    breakers: [CircuitBreaker<CAP>; SLOTS],
}

impl<const SLOTS: usize, const CAP: usize> KeyedBreakers<SLOTS, CAP> {
    /// An empty set whose breakers will all use `config` (validated once, here).
    pub fn new(config: CircuitBreakerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        config.validate_capacity(CAP)?;
        Ok(KeyedBreakers {
            config,
            entries: Counter::new(),
            full: Counter::new(),
            keys: core::array::from_fn(|_| AtomicU64::new(EMPTY)),
            breakers: core::array::from_fn(|_| CircuitBreaker::build(config)),
        })
    }

    /// The config every breaker in the set uses.
    pub fn config(&self) -> &CircuitBreakerConfig {
        &self.config
    }

    /// The number of slots (`SLOTS`).
    pub const fn capacity() -> usize {
        SLOTS
    }

    fn start(key: u64) -> usize {
        below_from_bits(mix64(key), SLOTS as u64) as usize
    }

    /// The breaker of `key`, inserting it if absent. Lock-free: each slot is claimed by one
    /// compare-and-swap of its key word. Fails only when every slot holds another key.
    pub fn get_or_insert(&self, key: u64) -> Result<&CircuitBreaker<CAP>, KeyedFull> {
        let want = stored_key(key);
        let start = Self::start(want);
        for i in 0..SLOTS {
            let index = (start + i) % SLOTS;
            let (Some(slot), Some(breaker)) = (self.keys.get(index), self.breakers.get(index))
            else {
                break;
            };
            let mut current = slot.load(Ordering::Acquire);
            if current == EMPTY {
                match slot.compare_exchange(EMPTY, want, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => {
                        self.entries.incr();
                        return Ok(breaker);
                    }
                    Err(actual) => current = actual,
                }
            }
            if current == want {
                return Ok(breaker);
            }
        }
        self.full.incr();
        Err(KeyedFull { key })
    }

    /// The breaker of `key`, if it was inserted.
    pub fn get(&self, key: u64) -> Option<&CircuitBreaker<CAP>> {
        let want = stored_key(key);
        let start = Self::start(want);
        for i in 0..SLOTS {
            let index = (start + i) % SLOTS;
            let current = self.keys.get(index)?.load(Ordering::Acquire);
            if current == want {
                return self.breakers.get(index);
            }
            if current == EMPTY {
                return None;
            }
        }
        None
    }

    /// How many keys the set holds.
    pub fn len(&self) -> usize {
        self.keys
            .iter()
            .filter(|k| k.load(Ordering::Acquire) != EMPTY)
            .count()
    }

    /// Whether no key was inserted yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The inserted keys and their breakers, in slot order (key 0 appears as `u64::MAX`).
    pub fn iter(&self) -> impl Iterator<Item = (u64, &CircuitBreaker<CAP>)> + '_ {
        self.keys
            .iter()
            .zip(self.breakers.iter())
            .filter_map(|(k, b)| match k.load(Ordering::Acquire) {
                EMPTY => None,
                key => Some((key, b)),
            })
    }

    /// A snapshot of the set's counters.
    pub fn stats(&self) -> KeyedStats {
        KeyedStats {
            entries: self.entries.get(),
            full: self.full.get(),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_reference_values() {
        assert_eq!(key_of(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(key_of(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(key_of(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn fills_up_then_reports_full() {
        let set: KeyedBreakers<3, 8> = KeyedBreakers::new(CircuitBreakerConfig {
            window_size: 8,
            ..CircuitBreakerConfig::default()
        })
        .unwrap();
        assert!(set.is_empty());
        for k in [10, 20, 30] {
            set.get_or_insert(k).unwrap();
        }
        assert_eq!(set.get_or_insert(40).err(), Some(KeyedFull { key: 40 }));
        assert!(set.get_or_insert(20).is_ok());
        assert!(set.get(40).is_none());
        assert!(set.get(30).is_some());
        assert_eq!(set.len(), 3);
        assert_eq!(
            set.stats(),
            KeyedStats {
                entries: 3,
                full: 1
            }
        );
        let mut keys: [u64; 3] = [0; 3];
        for (slot, (k, _)) in keys.iter_mut().zip(set.iter()) {
            *slot = k;
        }
        keys.sort_unstable();
        assert_eq!(keys, [10, 20, 30]);
    }

    #[test]
    fn key_zero_shares_with_max() {
        let set: KeyedBreakers<2, 8> = KeyedBreakers::new(CircuitBreakerConfig {
            window_size: 8,
            ..CircuitBreakerConfig::default()
        })
        .unwrap();
        let a = set.get_or_insert(0).unwrap();
        let b = set.get_or_insert(u64::MAX).unwrap();
        assert!(core::ptr::eq(a, b));
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn rejects_a_window_too_big_for_the_capacity() {
        let e = KeyedBreakers::<2, 8>::new(CircuitBreakerConfig::default()).unwrap_err();
        assert_eq!(e.field(), "window_size");
    }
}
