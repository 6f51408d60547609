//! [`KeyedBreakers`]: a fixed-capacity, lock-free set of breakers keyed by `u64`, and
//! [`key_of`], the key every language derives from a name.
//!
//! Keys are whatever the caller chooses to keep apart: dependency × operation, tenant,
//! country, route. A slot is claimed by one compare-and-swap of its key word from empty to
//! the key, so an insert never waits and two threads inserting the same key end up with the
//! same breaker. Lookup starts at a slot chosen from the key's mixed bits and probes
//! linearly; entries are never removed.

use core::fmt;

use super::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerPermit, CircuitBreakerRejectReason,
    CircuitBreakerRejected, OutcomeEffect, DEFAULT_CAPACITY,
};
use crate::brownout::RefusalKind;
use crate::counter::Counter;
use crate::error::ConfigError;
use crate::outcome::Outcome;
use crate::rng::{below_from_bits, mix64};
use crate::sync::{set_mut, AtomicU64, Ordering};
use crate::time::{Clock, Nanos};

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

/// Why a [`KeyedBreakers`] set refused a call.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyedBreakersRejectReason {
    /// The key's breaker is open.
    Open = 0,
    /// The key's breaker is half-open and every probe slot is taken.
    HalfOpenFull = 1,
    /// The key has no breaker and every slot holds another key (entries are never
    /// removed: size the set for every key it will see).
    SetFull = 2,
}

named_enum!(KeyedBreakersRejectReason {
    Open => "open",
    HalfOpenFull => "half_open_full",
    SetFull => "set_full",
});

/// A call refused by a [`KeyedBreakers`] set: which key, why, and the earliest instant at
/// which trying again could help.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyedBreakersRejected {
    /// The key asked for.
    pub key: u64,
    /// Why.
    pub reason: KeyedBreakersRejectReason,
    /// An instant (same clock as `now`): the key's breaker's
    /// [`CircuitBreakerRejected::retry_at`], or [`Nanos::MAX`] (never) when the set is
    /// full.
    pub retry_at: Nanos,
}

impl KeyedBreakersRejected {
    /// The brownout refusal kind of this refusal: [`RefusalKind::BreakerOpen`] (the call was
    /// not sent; a full set is a refusal of the breaker set too).
    pub const fn refusal_kind(&self) -> RefusalKind {
        RefusalKind::BreakerOpen
    }

    /// A duration: how long from `now` until [`KeyedBreakersRejected::retry_at`] (zero if it
    /// has passed; [`Nanos::MAX`] minus `now` when the set is full).
    pub const fn retry_after(&self, now: Nanos) -> Nanos {
        self.retry_at.saturating_sub(now)
    }

    const fn set_full(key: u64) -> Self {
        KeyedBreakersRejected {
            key,
            reason: KeyedBreakersRejectReason::SetFull,
            retry_at: Nanos::MAX,
        }
    }

    const fn of(key: u64, r: CircuitBreakerRejected) -> Self {
        KeyedBreakersRejected {
            key,
            reason: match r.reason {
                CircuitBreakerRejectReason::Open => KeyedBreakersRejectReason::Open,
                CircuitBreakerRejectReason::HalfOpenFull => KeyedBreakersRejectReason::HalfOpenFull,
            },
            retry_at: r.retry_at,
        }
    }
}

impl fmt::Display for KeyedBreakersRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            KeyedBreakersRejectReason::SetFull => write!(
                f,
                "keyed breaker set full: no slot for key {:#018x}",
                self.key
            ),
            reason => write!(
                f,
                "circuit breaker of key {:#018x} refused the call ({}); retry at {}",
                self.key,
                reason.name(),
                self.retry_at
            ),
        }
    }
}

impl core::error::Error for KeyedBreakersRejected {}

/// Permission to make one call through the breaker of [`KeyedBreakersPermit::key`]: the
/// key's [`CircuitBreakerPermit`] with its key, handed back exactly once to the set.
#[repr(C)]
#[must_use = "a permit must be handed back with on_success, on_failure or on_ignore"]
#[derive(Debug, PartialEq, Eq)]
pub struct KeyedBreakersPermit {
    key: u64,
    permit: CircuitBreakerPermit,
}

impl KeyedBreakersPermit {
    /// The key whose breaker issued it.
    pub const fn key(&self) -> u64 {
        self.key
    }

    /// The breaker's permit (kind, probe timeout, acquisition time).
    pub const fn permit(&self) -> &CircuitBreakerPermit {
        &self.permit
    }

    /// Split into the key and the breaker's permit (to report to the breaker itself).
    pub fn into_parts(self) -> (u64, CircuitBreakerPermit) {
        (self.key, self.permit)
    }

    /// Put a permit back together from its key and the breaker's permit (the inverse of
    /// [`KeyedBreakersPermit::into_parts`]; with [`CircuitBreakerPermit::into_parts`] a
    /// keyed permit goes to plain data and back). The same duty as
    /// [`super::CircuitBreakerPermitParts`]: rebuild each permit once. A permit rebuilt
    /// with a key the set does not hold is [`OutcomeEffect::Discarded`]; with another
    /// key's breaker, it is judged by that breaker's generation as said there.
    pub const fn from_parts(key: u64, permit: CircuitBreakerPermit) -> KeyedBreakersPermit {
        KeyedBreakersPermit { key, permit }
    }
}

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
/// caller's choice. All bytes zero is a valid, unconfigured set (no key, every breaker
/// unconfigured): safe to call, meant to be [`reset`](KeyedBreakers::reset) before use; see
/// "Building in place" in the crate docs.
///
/// ```
/// use guards_core::circuit_breaker::{key_of, CircuitBreakerConfig, KeyedBreakers};
/// use guards_core::Nanos;
///
/// let set: KeyedBreakers<4> = KeyedBreakers::new(CircuitBreakerConfig::fast_trip()).unwrap();
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

    /// Validate `config`, then put this set in exactly the state
    /// [`KeyedBreakers::new`]`(config)` gives: no key, every breaker closed and empty,
    /// zeroed counters. Every slot and breaker is rewritten in place. On error nothing
    /// changes.
    pub fn reset(&mut self, config: CircuitBreakerConfig) -> Result<(), ConfigError> {
        config.validate()?;
        config.validate_capacity(CAP)?;
        self.config = config;
        self.entries.reset();
        self.full.reset();
        for key in &mut self.keys {
            set_mut(key, EMPTY);
        }
        for breaker in &mut self.breakers {
            breaker.apply(config);
        }
        Ok(())
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
    /// compare-and-swap of its key word. Fails only when every slot holds another key
    /// ([`KeyedBreakersRejectReason::SetFull`]).
    pub fn get_or_insert(&self, key: u64) -> Result<&CircuitBreaker<CAP>, KeyedBreakersRejected> {
        let want = stored_key(key);
        let start = Self::start(want);
        for i in 0..SLOTS {
            let index = (start + i) % SLOTS;
            let (Some(slot), Some(breaker)) = (self.keys.get(index), self.breakers.get(index))
            else {
                break;
            };
            // Ordering (K, see `mod.rs`): a key publishes no data.
            let mut current = slot.load(Ordering::Acquire);
            if current == EMPTY {
                // Ordering (K): one winner per slot by the compare-and-swap itself.
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
        Err(KeyedBreakersRejected::set_full(key))
    }

    /// Ask to make a call through the breaker of `key` at `now`, inserting the key if it
    /// is new: [`CircuitBreaker::try_acquire`] of that breaker, with the key carried in the
    /// permit and the refusal.
    pub fn try_acquire(
        &self,
        key: u64,
        now: impl Clock,
    ) -> Result<KeyedBreakersPermit, KeyedBreakersRejected> {
        let breaker = self.get_or_insert(key)?;
        match breaker.try_acquire(now) {
            Ok(permit) => Ok(KeyedBreakersPermit { key, permit }),
            Err(r) => Err(KeyedBreakersRejected::of(key, r)),
        }
    }

    /// Hand `permit` back with how the call ended, at `now` ([`CircuitBreaker::report`] of
    /// its key's breaker; [`OutcomeEffect::Discarded`] if the key is not in this set).
    pub fn report(
        &self,
        permit: KeyedBreakersPermit,
        outcome: Outcome,
        now: impl Clock,
    ) -> OutcomeEffect {
        match self.get(permit.key) {
            Some(b) => b.report(permit.permit, outcome, now),
            None => OutcomeEffect::Discarded,
        }
    }

    /// The call made with `permit` succeeded at `now` ([`CircuitBreaker::on_success`] of
    /// its key's breaker; [`OutcomeEffect::Discarded`] if the key is not in this set).
    pub fn on_success(&self, permit: KeyedBreakersPermit, now: impl Clock) -> OutcomeEffect {
        match self.get(permit.key) {
            Some(b) => b.on_success(permit.permit, now),
            None => OutcomeEffect::Discarded,
        }
    }

    /// The call made with `permit` failed, or was abandoned, at `now`
    /// ([`CircuitBreaker::on_failure`] of its key's breaker).
    pub fn on_failure(&self, permit: KeyedBreakersPermit, now: impl Clock) -> OutcomeEffect {
        match self.get(permit.key) {
            Some(b) => b.on_failure(permit.permit, now),
            None => OutcomeEffect::Discarded,
        }
    }

    /// Hand `permit` back without judging the dependency ([`CircuitBreaker::on_ignore`] of
    /// its key's breaker).
    pub fn on_ignore(&self, permit: KeyedBreakersPermit) {
        if let Some(b) = self.get(permit.key) {
            b.on_ignore(permit.permit);
        }
    }

    /// The breaker of `key`, if it was inserted.
    pub fn get(&self, key: u64) -> Option<&CircuitBreaker<CAP>> {
        let want = stored_key(key);
        let start = Self::start(want);
        for i in 0..SLOTS {
            let index = (start + i) % SLOTS;
            // Ordering (K): a key publishes no data.
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
            // Ordering (K): a key publishes no data.
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
            // Ordering (K): a key publishes no data.
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
        let full = set.get_or_insert(40).unwrap_err();
        assert_eq!(
            (full.key, full.reason, full.retry_at),
            (40, KeyedBreakersRejectReason::SetFull, Nanos::MAX)
        );
        assert_eq!(set.try_acquire(41, Nanos::ZERO).unwrap_err().key, 41);
        let p = set.try_acquire(20, Nanos::ZERO).unwrap();
        assert_eq!(p.key(), 20);
        assert_eq!(set.on_success(p, Nanos(1)), OutcomeEffect::Counted);
        assert!(set.get_or_insert(20).is_ok());
        assert!(set.get(40).is_none());
        assert!(set.get(30).is_some());
        assert_eq!(set.len(), 3);
        assert_eq!(
            set.stats(),
            KeyedStats {
                entries: 3,
                full: 2
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
