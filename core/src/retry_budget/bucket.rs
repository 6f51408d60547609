//! The fixed-point token bucket shared by the token-bucket, gRPC and AWS modes.
//!
//! The whole state is one `AtomicU64` holding the balance in micro-tokens. Every change is
//! a compare-and-swap loop that computes the new value from the value it read, so:
//!
//! - the balance stays within `0..=capacity` at every instant, not just eventually: no
//!   operation ever stores a value outside the range (a `fetch_add` followed by a correction
//!   would expose a transient overshoot to concurrent readers);
//! - a refused take stores nothing;
//! - no update is lost: all read-modify-writes of one location are totally ordered, and a
//!   CAS that lost a race re-reads and recomputes.
//!
//! Ordering: the decision depends on this one word only and publishes no other memory, so
//! `Relaxed` is enough; a single location's modification order already gives the three
//! properties above.

use crate::sync::{AtomicU64, Ordering};

/// A lock-free bucket of micro-tokens bounded by a capacity fixed by the owner.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Bucket {
    micros: AtomicU64,
}

impl Bucket {
    /// A bucket holding `initial` micro-tokens.
    pub(crate) fn new(initial: u64) -> Self {
        Bucket {
            micros: AtomicU64::new(initial),
        }
    }

    /// Set the balance through exclusive access (a budget's `reset`).
    #[inline]
    pub(crate) fn set_mut(&mut self, micros: u64) {
        crate::sync::set_mut(&mut self.micros, micros);
    }

    /// The balance right now, in micro-tokens.
    #[inline]
    pub(crate) fn load(&self) -> u64 {
        self.micros.load(Ordering::Relaxed)
    }

    /// Add `amount`, capped at `cap`. Returns how much was actually added.
    #[inline]
    pub(crate) fn add_capped(&self, amount: u64, cap: u64) -> u64 {
        let mut cur = self.micros.load(Ordering::Relaxed);
        loop {
            let new = cur.saturating_add(amount).min(cap);
            if new <= cur {
                // Already full (or nothing to add): no write at all.
                return 0;
            }
            match self
                .micros
                .compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return new.saturating_sub(cur),
                Err(actual) => cur = actual,
            }
        }
    }

    /// Take `cost` if the balance covers it; otherwise change nothing. A zero cost always
    /// succeeds without a write.
    /// Lower the balance to at most `max`; returns the micro-tokens removed.
    pub(crate) fn clamp(&self, max: u64) -> u64 {
        let prev = self.micros.fetch_min(max, Ordering::Relaxed);
        prev.saturating_sub(max)
    }

    #[inline]
    pub(crate) fn try_take(&self, cost: u64) -> bool {
        if cost == 0 {
            return true;
        }
        let mut cur = self.micros.load(Ordering::Relaxed);
        loop {
            let Some(new) = cur.checked_sub(cost) else {
                return false;
            };
            match self
                .micros
                .compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Subtract `amount`, stopping at zero. Returns how much was actually removed.
    #[inline]
    pub(crate) fn sub_saturating(&self, amount: u64) -> u64 {
        let mut cur = self.micros.load(Ordering::Relaxed);
        loop {
            let new = cur.saturating_sub(amount);
            if new == cur {
                return 0;
            }
            match self
                .micros
                .compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return cur.saturating_sub(new),
                Err(actual) => cur = actual,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_is_capped_and_reports_the_amount() {
        let b = Bucket::new(5);
        assert_eq!(b.add_capped(3, 7), 2);
        assert_eq!(b.load(), 7);
        assert_eq!(b.add_capped(3, 7), 0);
        assert_eq!(b.add_capped(u64::MAX, u64::MAX), u64::MAX - 7);
    }

    #[test]
    fn take_refuses_without_writing() {
        let b = Bucket::new(5);
        assert!(!b.try_take(6));
        assert_eq!(b.load(), 5);
        assert!(b.try_take(5));
        assert_eq!(b.load(), 0);
        assert!(b.try_take(0));
    }

    #[test]
    fn sub_stops_at_zero() {
        let b = Bucket::new(5);
        assert_eq!(b.sub_saturating(3), 3);
        assert_eq!(b.sub_saturating(3), 2);
        assert_eq!(b.sub_saturating(3), 0);
        assert_eq!(b.load(), 0);
    }
}
