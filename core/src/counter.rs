//! [`Counter`]: a relaxed atomic event counter, the building block of every guard's stats.
//!
//! Counters are for observation (dashboards, alarms, tests), never for decisions, so they
//! use relaxed ordering: an increment is one uncontended-cheap `fetch_add`, and a snapshot
//! reads each counter without stopping traffic. They wrap at 2^64, which at a billion
//! events a second takes 584 years.
//!
//! # Examples
//! ```
//! use guards_core::Counter;
//! let c = Counter::new();
//! c.incr();
//! c.add(2);
//! assert_eq!(c.get(), 3);
//! ```

use crate::sync::{AtomicU64, Ordering};

/// A monotonically increasing event count.
#[repr(transparent)]
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// A counter at zero.
    pub fn new() -> Self {
        Counter(AtomicU64::new(0))
    }

    /// Add one.
    #[inline]
    pub fn incr(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Add `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Add `n` through exclusive access: a plain add, no atomic read-modify-write. For
    /// guards that take `&mut self` (e.g. the queue discipline).
    #[inline]
    pub fn add_mut(&mut self, n: u64) {
        #[cfg(not(loom))]
        {
            let v = self.0.get_mut();
            *v = v.wrapping_add(n);
        }
        #[cfg(loom)]
        self.0.with_mut(|v| *v = v.wrapping_add(n));
    }

    /// Back to zero, through exclusive access (a guard's `reset`).
    #[inline]
    pub fn reset(&mut self) {
        #[cfg(not(loom))]
        {
            *self.0.get_mut() = 0;
        }
        #[cfg(loom)]
        self.0.with_mut(|v| *v = 0);
    }

    /// Add one through exclusive access (see [`Counter::add_mut`]).
    #[inline]
    pub fn incr_mut(&mut self) {
        self.add_mut(1);
    }

    /// The current count.
    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}
