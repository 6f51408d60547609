//! [`QueueDiscipline`]: who gets the next free server out of a bounded wait queue — a CoDel
//! age limit, adaptive LIFO, strict priority and deadline drop at dequeue.
//!
//! A server (a database connection, a worker) frees up; several requests are waiting for
//! one. A plain FIFO hands it to the request that has waited longest, which in an overload
//! is exactly the one whose caller has most likely given up already: the server then does
//! work nobody wants, and the backlog lasts long after its cause. This queue decides
//! differently:
//!
//! - **Standing queue and age limit** (a CoDel variant). The queue is *standing* once it has
//!   not been empty for `interval` (default 100 ms): it is measured from the moment the
//!   queue last went from empty to non-empty, and that clock restarts whenever the queue
//!   empties. While the queue stands, every waiter that has waited longer than `target`
//!   (default 5 ms) is dropped, so that its caller can be answered with a fast refusal
//!   (503 + Retry-After) instead of a slow success. Bursts that clear within `interval`
//!   keep every waiter; a queue that stays backed up cannot accumulate old waiters.
//! - **Adaptive LIFO.** While the queue stands, the next waiter is taken from the
//!   *newest* end (that waiter's caller has had the least time to give up); otherwise from
//!   the oldest end, first in, first out.
//! - **Priority.** A waiting request of a more important class ([`Priority`], 0 first) is
//!   always picked before any less important one; within a class the FIFO/LIFO rule above
//!   applies. The age limit applies to every class alike.
//! - **Deadline drop at dequeue.** A picked waiter whose deadline has passed is dropped
//!   (reported) and the pick continues with the next one.
//!
//! # When the checks run
//! The age check runs when a server frees, that is inside [`QueueDiscipline::pop`]: first
//! the standing test, then (if standing) every waiter older than `target` is dropped, then
//! the pick. No timer is needed. A caller that wants one anyway (to answer waiting callers
//! without waiting for a server to free) calls [`QueueDiscipline::expire`], which runs the
//! same age check and also drops every waiter whose deadline has passed.
//!
//! Drops are not lost and need no allocation: each `pop` and `expire` writes the waiters it
//! dropped, with the reason, into a fixed buffer inside the queue that
//! [`QueueDiscipline::dropped`] returns as a slice. It holds the drops of the most recent
//! `pop` or `expire` call and is cleared when the next one starts (`push` and `remove` leave
//! it alone). One call can drop at most every waiter, so the buffer never overflows.
//!
//! # Exact definitions
//! Times are the caller's `now` in nanoseconds. The queue's clock never runs backwards: a
//! `now` earlier than the latest one seen is treated as that latest one.
//! - standing at `now` ⇔ the queue is non-empty and `now − nonempty_since ≥ interval`, where
//!   `nonempty_since` is the `now` of the `push` that found the queue empty;
//! - a waiter is older than the age limit ⇔ `now − enqueued_at > target`;
//! - a waiter's deadline has passed ⇔ it has one and `now ≥ deadline` (no time left).
//!
//! Drops are reported age-limit drops first, in class order (most important class first)
//! and oldest first within a class; then deadline drops in the order they happened: in
//! `pop` the order of picking (newest first while LIFO), in `expire` class order, oldest
//! first. With
//! `priority` off every waiter shares one class (its priority is still recorded and
//! counted by [`QueueDiscipline::len_by_priority`]).
//!
//! # Concurrency
//! This guard is **not lock-free**: a wait queue is owned by the one consumer that hands out
//! servers, so every mutating method takes `&mut self`. Share it between threads behind a
//! mutex (the simulator and the bindings do that); its state is `#[repr(C)]` plain data and
//! relaxed [`Counter`]s with no pointers, so it may also live in shared memory under a lock.
//!
//! # Cost
//! Waiters live in a fixed array of `N` slots (the const generic, default
//! [`DEFAULT_CAPACITY`]) threaded into one index-linked deque per priority class, with a
//! bit mask of the non-empty classes. `push` is O(1); `pop` is O(1), plus (when standing)
//! one look at the old end of each non-empty class, plus O(1) per waiter it drops (a
//! class's waiters are in arrival order, so the ones past the age limit are exactly those at
//! its old end); `oldest_age` is O(classes); `remove` and the deadline part of `expire`
//! walk the queue, O(len). The struct holds `2 × N` entries of about 40 bytes each, so very
//! large `N` belongs in a `static` or on the heap of the caller, not on a small stack.
//!
//! # Examples
//! ```
//! use guards_core::queue_discipline::{DropReason, QueueDiscipline, QueueDisciplineConfig, ServeOrder};
//! use guards_core::{Nanos, Priority};
//!
//! let view = Priority::SHEDDABLE;
//! let reserve = Priority::CRITICAL;
//! let ms = Nanos::from_millis;
//! // Basketly C5: 100 ms standing interval, 5 ms age limit, adaptive LIFO, priority.
//! let mut q: QueueDiscipline = QueueDiscipline::new(QueueDisciplineConfig::default()).unwrap();
//!
//! // A short burst: FIFO, and a waiting reserve goes before any view.
//! q.push(ms(0), 1, view, None).unwrap();
//! q.push(ms(1), 2, view, None).unwrap();
//! q.push(ms(2), 3, reserve, Some(ms(60))).unwrap();
//! let d = q.pop(ms(3)).unwrap();
//! assert_eq!((d.waiter.id, d.order), (3, ServeOrder::Fifo));
//! assert_eq!(q.pop(ms(4)).unwrap().waiter.id, 1);
//!
//! // The queue has not been empty since 0 ms. At 120 ms it stands: waiter 2 (waited
//! // 119 ms > 5 ms) is dropped, and the newest remaining waiter is served first.
//! q.push(ms(118), 4, view, None).unwrap();
//! q.push(ms(119), 5, view, None).unwrap();
//! assert!(q.is_standing(ms(120)));
//! let d = q.pop(ms(120)).unwrap();
//! assert_eq!((d.waiter.id, d.order), (5, ServeOrder::Lifo));
//! assert_eq!(q.dropped().len(), 1);
//! assert_eq!(q.dropped()[0].waiter.id, 2);
//! assert_eq!(q.dropped()[0].reason, DropReason::AgeLimit);
//! assert_eq!(q.len(), 1);
//! assert_eq!(q.stats().dropped_age_limit, 1);
//! ```
//!
//! # References
//! - B. Maurer, "Fail at Scale", ACM Queue 13(8), 2015: Facebook's servers bound the time a
//!   request may spend in a queue that has not been empty for the last N ms (100 ms) to
//!   M ms (5 ms), a variant of CoDel, and switch the queue to last-in-first-out while it is
//!   congested ("adaptive LIFO").
//! - K. Nichols, V. Jacobson, "Controlling Queue Delay", ACM Queue 10(5), 2012: CoDel tells a
//!   good queue (a burst that drains) from a bad, standing one by its minimum sojourn time
//!   over an interval (100 ms), with a 5 ms target.
//! - B. Beyer et al., "Site Reliability Engineering", O'Reilly 2016, ch. 21: requests carry
//!   one of four criticalities end to end so that overloaded backends serve the important
//!   ones first.
//! - Basketly setting C5 (docs/basketly.md, "C5: stock protects itself"): age limit, adaptive
//!   LIFO and reserve priority in the database-connection queue of `stock`, and deadline drop
//!   at dequeue.

use core::fmt;

use crate::brownout::RefusalKind;
use crate::counter::Counter;
use crate::error::{check_nanos, check_u64, inconsistent, ConfigError, ConfigErrorKind};
use crate::priority::{Priority, MAX_PRIORITIES};
use crate::time::Nanos;

/// Default for [`QueueDisciplineConfig::capacity`] and for the slot count `N` of
/// [`QueueDiscipline`]. Valid range: `1..=`[`MAX_CAPACITY`].
pub const DEFAULT_CAPACITY: u32 = 128;

/// The largest accepted capacity (and slot count `N`).
pub const MAX_CAPACITY: u32 = 65_536;

/// Default for [`QueueDisciplineConfig::interval`]: 100 ms. Valid range: `0..=`[`MAX_DURATION`]
/// (0 means standing as soon as the queue is non-empty).
pub const DEFAULT_INTERVAL: Nanos = Nanos::from_millis(100);

/// Default for [`QueueDisciplineConfig::target`]: 5 ms. Valid range: `0..=interval`.
pub const DEFAULT_TARGET: Nanos = Nanos::from_millis(5);

/// The longest accepted `interval` or `target`: one hour.
pub const MAX_DURATION: Nanos = Nanos::from_secs(3_600);

/// Default for [`QueueDisciplineConfig::lifo`]: adaptive LIFO on.
pub const DEFAULT_LIFO: bool = true;

/// Default for [`QueueDisciplineConfig::codel`]: age limit on.
pub const DEFAULT_CODEL: bool = true;

/// Default for [`QueueDisciplineConfig::priority`]: strict priority on.
pub const DEFAULT_PRIORITY: bool = true;

/// "No slot": the end of a list.
const NIL: u32 = u32::MAX;

/// Settings of a [`QueueDiscipline`]. Plain data; [`QueueDisciplineConfig::validate`]
/// checks it and [`QueueDiscipline::new`] refuses an invalid one.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueDisciplineConfig {
    /// How many waiters may wait at once; a `push` beyond it is refused with
    /// [`QueueDisciplineRejected`]. Range `1..=`[`MAX_CAPACITY`], and at most the queue type's slot count `N`.
    /// Default [`DEFAULT_CAPACITY`].
    pub capacity: u32,
    /// How long the queue must have been non-empty before it counts as standing.
    /// Range `0..=`[`MAX_DURATION`]; default [`DEFAULT_INTERVAL`] (100 ms).
    pub interval: Nanos,
    /// The age limit while standing: waiters that have waited longer are dropped.
    /// Range `0..=interval` (a target above the interval is refused as `inconsistent`:
    /// CoDel's target is a small fraction of its interval, and `target == interval` already
    /// gives an age limit that is always on). Default [`DEFAULT_TARGET`] (5 ms).
    pub target: Nanos,
    /// Adaptive LIFO: serve the newest waiter while the queue stands (else always FIFO).
    /// Default [`DEFAULT_LIFO`].
    pub lifo: bool,
    /// The CoDel age limit: drop waiters older than `target` while the queue stands.
    /// Default [`DEFAULT_CODEL`].
    pub codel: bool,
    /// Strict priority: a more important class is always served first (else one shared
    /// line in arrival order). Default [`DEFAULT_PRIORITY`].
    pub priority: bool,
}

impl Default for QueueDisciplineConfig {
    /// Basketly setting C5: 128 waiters, 100 ms interval, 5 ms target, everything on.
    fn default() -> Self {
        QueueDisciplineConfig {
            capacity: DEFAULT_CAPACITY,
            interval: DEFAULT_INTERVAL,
            target: DEFAULT_TARGET,
            lifo: DEFAULT_LIFO,
            codel: DEFAULT_CODEL,
            priority: DEFAULT_PRIORITY,
        }
    }
}

impl QueueDisciplineConfig {
    /// Check every field; the error names the first bad one (in declaration order, then
    /// the `target <= interval` relation).
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_u64(
            "capacity",
            u64::from(self.capacity),
            1,
            u64::from(MAX_CAPACITY),
            "1..=65536",
        )?;
        check_nanos(
            "interval",
            self.interval,
            Nanos::ZERO,
            MAX_DURATION,
            "0..=3600 s (in ns)",
        )?;
        check_nanos(
            "target",
            self.target,
            Nanos::ZERO,
            MAX_DURATION,
            "0..=3600 s (in ns)",
        )?;
        if self.target > self.interval {
            return Err(inconsistent("target", "target <= interval"));
        }
        Ok(())
    }
}

/// One waiting request, as pushed (and as returned when it is served or dropped).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Waiter {
    /// The caller's handle for the request.
    pub id: u64,
    /// When it was queued (the queue's clock at `push`).
    pub enqueued_at: Nanos,
    /// When its caller gives up; [`Nanos::MAX`] means no deadline.
    pub deadline: Nanos,
    /// Its priority class.
    pub priority: Priority,
}

impl Waiter {
    const EMPTY: Waiter = Waiter {
        id: 0,
        enqueued_at: Nanos::ZERO,
        deadline: Nanos::MAX,
        priority: Priority::CRITICAL_PLUS,
    };

    /// Whether it was pushed with a deadline.
    #[inline]
    pub const fn has_deadline(&self) -> bool {
        self.deadline.0 != Nanos::MAX.0
    }

    /// How long it has waited at `now` (zero if `now` is before it was queued).
    #[inline]
    pub const fn age(&self, now: Nanos) -> Nanos {
        now.saturating_sub(self.enqueued_at)
    }

    /// Time left until its deadline at `now` (zero once passed), or `None` without one.
    /// Basketly's C5 runs the query with this as its statement timeout.
    #[inline]
    pub const fn time_left(&self, now: Nanos) -> Option<Nanos> {
        if self.has_deadline() {
            Some(self.deadline.saturating_sub(now))
        } else {
            None
        }
    }

    /// Whether its deadline has passed at `now` (`now >= deadline`).
    #[inline]
    pub const fn is_expired(&self, now: Nanos) -> bool {
        self.has_deadline() && now.0 >= self.deadline.0
    }
}

/// From which end of its class a waiter was served.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServeOrder {
    /// Oldest first: the queue was not standing (or LIFO is off).
    Fifo = 0,
    /// Newest first: the queue was standing and LIFO is on.
    Lifo = 1,
}

named_enum!(ServeOrder {
    Fifo => "fifo",
    Lifo => "lifo",
});

/// The waiter that gets the freed server.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dequeued {
    /// Who is served.
    pub waiter: Waiter,
    /// From which end of its class it was taken.
    pub order: ServeOrder,
}

/// Why a waiter was dropped by the queue (its caller should get a fast refusal).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// It waited longer than `target` while the queue was standing.
    AgeLimit = 0,
    /// Its deadline had passed when it was picked (or at an `expire` sweep).
    Deadline = 1,
}

named_enum!(DropReason {
    AgeLimit => "age_limit",
    Deadline => "deadline",
});

/// A waiter the queue dropped, and why.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dropped {
    /// The dropped waiter.
    pub waiter: Waiter,
    /// Why.
    pub reason: DropReason,
}

impl Dropped {
    const EMPTY: Dropped = Dropped {
        waiter: Waiter::EMPTY,
        reason: DropReason::AgeLimit,
    };
}

/// `push` refused: the queue already holds `capacity` waiters. Refuse the request (503).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct QueueDisciplineRejected {
    /// The refused request's id.
    pub id: u64,
    /// The configured capacity that was reached.
    pub capacity: u32,
}

impl QueueDisciplineRejected {
    /// The brownout refusal kind of this refusal: [`RefusalKind::BulkheadFull`] (the wait
    /// queue is full; the request was not served).
    pub const fn refusal_kind(&self) -> RefusalKind {
        RefusalKind::BulkheadFull
    }
}

impl fmt::Display for QueueDisciplineRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wait queue full ({} waiters): request {} refused",
            self.capacity, self.id
        )
    }
}

impl core::error::Error for QueueDisciplineRejected {}

/// A snapshot of a [`QueueDiscipline`]'s counters.
///
/// Every accepted waiter ends in exactly one of served (FIFO or LIFO), dropped (age limit
/// or deadline), cancelled, or still queued, so
/// `enqueued == served_fifo + served_lifo + dropped_age_limit + dropped_deadline + cancelled + len()`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueDisciplineStats {
    /// Waiters accepted by `push`.
    pub enqueued: u64,
    /// Waiters served from the oldest end.
    pub served_fifo: u64,
    /// Waiters served from the newest end (queue standing, LIFO on).
    pub served_lifo: u64,
    /// Waiters dropped by the age limit.
    pub dropped_age_limit: u64,
    /// Waiters dropped because their deadline had passed.
    pub dropped_deadline: u64,
    /// Waiters taken out by `remove` (their caller gave up).
    pub cancelled: u64,
    /// `push` calls refused because the queue was full (never enqueued).
    pub rejected_full: u64,
}

/// One array slot: a waiter and its links in its class list (or the free list).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct Slot {
    waiter: Waiter,
    prev: u32,
    next: u32,
}

impl Slot {
    const EMPTY: Slot = Slot {
        waiter: Waiter::EMPTY,
        prev: NIL,
        next: NIL,
    };
}

#[repr(C)]
#[derive(Debug, Default)]
struct Counters {
    enqueued: Counter,
    served_fifo: Counter,
    served_lifo: Counter,
    dropped_age_limit: Counter,
    dropped_deadline: Counter,
    cancelled: Counter,
    rejected_full: Counter,
}

/// A bounded wait queue with a CoDel age limit, adaptive LIFO, strict priority and deadline
/// drop at dequeue. See the [module documentation](self) for the rules.
///
/// `N` is the number of slots (default [`DEFAULT_CAPACITY`]); the configured `capacity`
/// may be anything from 1 to `N`. Mutating methods take `&mut self`: one consumer owns the
/// queue (wrap it in a mutex to share it).
///
/// All bytes zero is a valid, unconfigured queue (a capacity of 0: it refuses every
/// `push`): safe to call, meant to be [`reset`](QueueDiscipline::reset) before use; see
/// "Building in place" in the crate docs.
#[repr(C)]
pub struct QueueDiscipline<const N: usize = { DEFAULT_CAPACITY as usize }> {
    config: QueueDisciplineConfig,
    /// Waiter storage; occupied slots are linked into their class list, free ones into
    /// the free list through `next`.
    slots: [Slot; N],
    /// Oldest waiter of each class list (NIL when empty).
    heads: [u32; MAX_PRIORITIES],
    /// Newest waiter of each class list (NIL when empty).
    tails: [u32; MAX_PRIORITIES],
    /// Waiters by their priority (independent of whether `priority` ordering is on).
    by_priority: [u32; MAX_PRIORITIES],
    /// Bit `c` set ⇔ class list `c` is non-empty.
    nonempty: u8,
    free_head: u32,
    len: u32,
    /// The `now` of the push that found the queue empty (meaningful while `len > 0`).
    nonempty_since: Nanos,
    /// The latest `now` seen: the queue's clock never runs backwards.
    clock: Nanos,
    /// The drops of the latest `pop`/`expire`: `drops[..drop_len]`.
    drops: [Dropped; N],
    drop_len: u32,
    counters: Counters,
}

impl<const N: usize> fmt::Debug for QueueDiscipline<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueDiscipline")
            .field("slots", &N)
            .field("config", &self.config)
            .field("len", &self.len)
            .field("by_priority", &self.by_priority)
            .field("nonempty_since", &self.nonempty_since)
            .field("clock", &self.clock)
            .field("stats", &self.stats())
            .finish()
    }
}

impl<const N: usize> QueueDiscipline<N> {
    /// A new, empty queue, or the config's first invalid field. Also refuses a `capacity`
    /// above the slot count `N` (field `capacity`, `out_of_range`), and a type whose `N` is
    /// 0 or above [`MAX_CAPACITY`].
    pub fn new(config: QueueDisciplineConfig) -> Result<Self, ConfigError> {
        Self::check(&config)?;
        let mut q = QueueDiscipline {
            config,
            slots: [Slot::EMPTY; N],
            heads: [NIL; MAX_PRIORITIES],
            tails: [NIL; MAX_PRIORITIES],
            by_priority: [0; MAX_PRIORITIES],
            nonempty: 0,
            free_head: 0,
            len: 0,
            nonempty_since: Nanos::ZERO,
            clock: Nanos::ZERO,
            drops: [Dropped::EMPTY; N],
            drop_len: 0,
            counters: Counters::default(),
        };
        q.apply(config);
        Ok(q)
    }

    /// Validate `config` (as [`QueueDiscipline::new`] does, including `capacity <= N`),
    /// then put this queue in exactly the state `new(config)` gives: empty, its clock at
    /// zero, zeroed counters. The `N` slots are relinked one by one, in place, so a queue of
    /// any size can be rebuilt without a temporary of its size. Waiters still queued are
    /// forgotten (not counted as served or dropped). On error nothing changes.
    pub fn reset(&mut self, config: QueueDisciplineConfig) -> Result<(), ConfigError> {
        Self::check(&config)?;
        self.apply(config);
        Ok(())
    }

    fn check(config: &QueueDisciplineConfig) -> Result<(), ConfigError> {
        config.validate()?;
        if N == 0 || N > MAX_CAPACITY as usize {
            return Err(ConfigError::new(
                "capacity",
                ConfigErrorKind::OutOfRange,
                "a queue type with 1..=65536 slots",
            ));
        }
        if config.capacity as usize > N {
            return Err(ConfigError::new(
                "capacity",
                ConfigErrorKind::OutOfRange,
                "1..=N, the queue type's slot count",
            ));
        }
        Ok(())
    }

    /// The state `new(config)` describes, written in place (config already checked).
    fn apply(&mut self, config: QueueDisciplineConfig) {
        self.config = config;
        let mut next: u32 = 1;
        for s in self.slots.iter_mut() {
            *s = Slot::EMPTY;
            // `N <= MAX_CAPACITY < u32::MAX`, so `next` never reaches NIL early.
            s.next = if (next as usize) < N { next } else { NIL };
            next = next.saturating_add(1);
        }
        self.heads = [NIL; MAX_PRIORITIES];
        self.tails = [NIL; MAX_PRIORITIES];
        self.by_priority = [0; MAX_PRIORITIES];
        self.nonempty = 0;
        self.free_head = 0;
        self.len = 0;
        self.nonempty_since = Nanos::ZERO;
        self.clock = Nanos::ZERO;
        for d in self.drops.iter_mut() {
            *d = Dropped::EMPTY;
        }
        self.drop_len = 0;
        let c = &mut self.counters;
        for counter in [
            &mut c.enqueued,
            &mut c.served_fifo,
            &mut c.served_lifo,
            &mut c.dropped_age_limit,
            &mut c.dropped_deadline,
            &mut c.cancelled,
            &mut c.rejected_full,
        ] {
            counter.reset();
        }
    }

    /// The configuration.
    pub fn config(&self) -> &QueueDisciplineConfig {
        &self.config
    }

    /// The configured capacity (most waiters at once).
    pub fn capacity(&self) -> u32 {
        self.config.capacity
    }

    /// How many are waiting.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether nobody is waiting.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many are waiting in each priority class (index = [`Priority::index`]).
    pub fn len_by_priority(&self) -> [u32; MAX_PRIORITIES] {
        self.by_priority
    }

    /// Whether the queue is standing at `now`: non-empty, and not empty for at least
    /// `interval` (measured from the push that found it empty).
    pub fn is_standing(&self, now: Nanos) -> bool {
        self.standing_at(self.clock.max(now))
    }

    /// How long the oldest waiter has waited at `now`; zero when the queue is empty.
    /// Alarm on this rather than on `len` alone.
    pub fn oldest_age(&self, now: Nanos) -> Nanos {
        let now = self.clock.max(now);
        let mut oldest = Nanos::MAX;
        let mut m = self.nonempty;
        while m != 0 {
            let list = m.trailing_zeros() as usize;
            m &= m.wrapping_sub(1);
            if let Some(s) = self.slot(self.head(list)) {
                oldest = oldest.min(s.waiter.enqueued_at);
            }
        }
        if self.len == 0 {
            Nanos::ZERO
        } else {
            now.saturating_sub(oldest)
        }
    }

    /// Queue a request `id` of class `priority` that arrived at `now`, whose caller gives up
    /// at `deadline` (`None`: never). A deadline already passed is accepted; the waiter is
    /// then dropped when picked. Refused with [`QueueDisciplineRejected`] when `capacity` are
    /// waiting. O(1).
    ///
    /// Ids are the caller's handles and are not checked for uniqueness; keep them unique if
    /// you use [`QueueDiscipline::remove`].
    pub fn push(
        &mut self,
        now: Nanos,
        id: u64,
        priority: Priority,
        deadline: Option<Nanos>,
    ) -> Result<(), QueueDisciplineRejected> {
        let now = self.observe(now);
        let full = QueueDisciplineRejected {
            id,
            capacity: self.config.capacity,
        };
        if self.len >= self.config.capacity {
            self.counters.rejected_full.incr_mut();
            return Err(full);
        }
        let i = self.free_head;
        let Some(slot) = self.slots.get_mut(i as usize) else {
            // Unreachable while `capacity <= N`; refuse rather than corrupt the lists.
            self.counters.rejected_full.incr_mut();
            return Err(full);
        };
        self.free_head = slot.next;
        slot.waiter = Waiter {
            id,
            enqueued_at: now,
            deadline: deadline.unwrap_or(Nanos::MAX),
            priority,
        };
        if self.len == 0 {
            self.nonempty_since = now;
        }
        let list = self.list_of(priority);
        self.link_back(i, list);
        self.len = self.len.saturating_add(1);
        if let Some(c) = self.by_priority.get_mut(priority.index()) {
            *c = c.saturating_add(1);
        }
        self.counters.enqueued.incr_mut();
        Ok(())
    }

    /// A server freed at `now`: apply the age limit if the queue is standing, then pick the
    /// waiter to serve — the most important non-empty class, from its newest end if the
    /// queue is standing and LIFO is on, else from its oldest end — dropping picked waiters
    /// whose deadline has passed. `None` when nobody is left to serve.
    ///
    /// The waiters dropped on the way are in [`QueueDiscipline::dropped`] until the next
    /// `pop` or `expire`. O(1), plus O(non-empty classes) when standing, plus O(1) per drop.
    #[must_use = "the served waiter must be run (or answered); dropped ones are in `dropped()`"]
    pub fn pop(&mut self, now: Nanos) -> Option<Dequeued> {
        let now = self.observe(now);
        self.drop_len = 0;
        if self.len == 0 {
            return None;
        }
        let standing = self.standing_at(now);
        if standing && self.config.codel {
            self.drop_aged(now);
        }
        let lifo = standing && self.config.lifo;
        let mut expired: u64 = 0;
        let served = loop {
            if self.nonempty == 0 {
                break None;
            }
            let list = self.nonempty.trailing_zeros() as usize;
            let i = if lifo {
                self.tail(list)
            } else {
                self.head(list)
            };
            let Some(waiter) = self.take(i, list) else {
                break None;
            };
            if waiter.is_expired(now) {
                self.record(waiter, DropReason::Deadline);
                expired = expired.saturating_add(1);
                continue;
            }
            let order = if lifo {
                self.counters.served_lifo.incr_mut();
                ServeOrder::Lifo
            } else {
                self.counters.served_fifo.incr_mut();
                ServeOrder::Fifo
            };
            break Some(Dequeued { waiter, order });
        };
        if expired > 0 {
            self.counters.dropped_deadline.add_mut(expired);
        }
        served
    }

    /// A timer sweep at `now`, for callers that do not want to wait for a server to free:
    /// if the queue is standing (and `codel` is on), drop every waiter older than `target`;
    /// then drop every waiter whose deadline has passed. Serves nobody. Returns how many
    /// were dropped; they are in [`QueueDiscipline::dropped`] until the next `pop` or
    /// `expire`. O(drops) for the age limit plus O(len) for the deadline walk.
    pub fn expire(&mut self, now: Nanos) -> u32 {
        let now = self.observe(now);
        self.drop_len = 0;
        if self.len == 0 {
            return 0;
        }
        if self.config.codel && self.standing_at(now) {
            self.drop_aged(now);
        }
        let mut expired: u64 = 0;
        let mut m = self.nonempty;
        while m != 0 {
            let list = m.trailing_zeros() as usize;
            m &= m.wrapping_sub(1);
            let mut i = self.head(list);
            while let Some(s) = self.slot(i).copied() {
                if s.waiter.is_expired(now) {
                    if let Some(w) = self.take(i, list) {
                        self.record(w, DropReason::Deadline);
                        expired = expired.saturating_add(1);
                    }
                }
                i = s.next;
            }
        }
        if expired > 0 {
            self.counters.dropped_deadline.add_mut(expired);
        }
        self.drop_len
    }

    /// The waiters dropped by the latest `pop` or `expire`, in the order they were dropped
    /// (see the module docs). Empty after a call that dropped nobody.
    pub fn dropped(&self) -> &[Dropped] {
        self.drops.get(..self.drop_len as usize).unwrap_or(&[])
    }

    /// Take out the waiter `id` because its caller gave up (cancel). With duplicate ids the
    /// first found in class order, oldest first, is removed. Returns it, or `None` if no such
    /// waiter is queued. O(len).
    pub fn remove(&mut self, id: u64) -> Option<Waiter> {
        let mut m = self.nonempty;
        while m != 0 {
            let list = m.trailing_zeros() as usize;
            m &= m.wrapping_sub(1);
            let mut i = self.head(list);
            while let Some(s) = self.slot(i) {
                if s.waiter.id == id {
                    let w = self.take(i, list);
                    if w.is_some() {
                        self.counters.cancelled.incr_mut();
                    }
                    return w;
                }
                i = s.next;
            }
        }
        None
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> QueueDisciplineStats {
        let c = &self.counters;
        QueueDisciplineStats {
            enqueued: c.enqueued.get(),
            served_fifo: c.served_fifo.get(),
            served_lifo: c.served_lifo.get(),
            dropped_age_limit: c.dropped_age_limit.get(),
            dropped_deadline: c.dropped_deadline.get(),
            cancelled: c.cancelled.get(),
            rejected_full: c.rejected_full.get(),
        }
    }

    // ----- private helpers -----

    /// Advance the queue's clock to `now` (never backwards) and return the clock.
    #[inline]
    fn observe(&mut self, now: Nanos) -> Nanos {
        if now > self.clock {
            self.clock = now;
        }
        self.clock
    }

    #[inline]
    fn standing_at(&self, now: Nanos) -> bool {
        self.len > 0 && now.saturating_sub(self.nonempty_since) >= self.config.interval
    }

    /// The class list a waiter of `priority` joins.
    #[inline]
    fn list_of(&self, priority: Priority) -> usize {
        if self.config.priority {
            priority.index()
        } else {
            0
        }
    }

    #[inline]
    fn slot(&self, i: u32) -> Option<&Slot> {
        self.slots.get(i as usize)
    }

    #[inline]
    fn head(&self, list: usize) -> u32 {
        self.heads.get(list).copied().unwrap_or(NIL)
    }

    #[inline]
    fn tail(&self, list: usize) -> u32 {
        self.tails.get(list).copied().unwrap_or(NIL)
    }

    #[inline]
    fn set_head(&mut self, list: usize, i: u32) {
        if let Some(h) = self.heads.get_mut(list) {
            *h = i;
        }
    }

    #[inline]
    fn set_tail(&mut self, list: usize, i: u32) {
        if let Some(t) = self.tails.get_mut(list) {
            *t = i;
        }
    }

    #[inline]
    fn set_next(&mut self, i: u32, next: u32) {
        if let Some(s) = self.slots.get_mut(i as usize) {
            s.next = next;
        }
    }

    #[inline]
    fn set_prev(&mut self, i: u32, prev: u32) {
        if let Some(s) = self.slots.get_mut(i as usize) {
            s.prev = prev;
        }
    }

    /// Append slot `i` at the newest end of class list `list`.
    #[inline]
    fn link_back(&mut self, i: u32, list: usize) {
        let tail = self.tail(list);
        if let Some(s) = self.slots.get_mut(i as usize) {
            s.prev = tail;
            s.next = NIL;
        }
        if tail == NIL {
            self.set_head(list, i);
        } else {
            self.set_next(tail, i);
        }
        self.set_tail(list, i);
        self.nonempty |= 1u8.wrapping_shl(list as u32);
    }

    /// Unlink slot `i` from class list `list`, return it to the free list and give back
    /// its waiter. `None` only if `i` is not a slot (never, for a linked slot).
    fn take(&mut self, i: u32, list: usize) -> Option<Waiter> {
        let s = *self.slot(i)?;
        if s.prev == NIL {
            self.set_head(list, s.next);
        } else {
            self.set_next(s.prev, s.next);
        }
        if s.next == NIL {
            self.set_tail(list, s.prev);
        } else {
            self.set_prev(s.next, s.prev);
        }
        if self.head(list) == NIL {
            self.nonempty &= !1u8.wrapping_shl(list as u32);
        }
        self.set_next(i, self.free_head);
        self.free_head = i;
        self.len = self.len.saturating_sub(1);
        if let Some(c) = self.by_priority.get_mut(s.waiter.priority.index()) {
            *c = c.saturating_sub(1);
        }
        Some(s.waiter)
    }

    /// Drop, in every class, the waiters at the old end that waited longer than `target`.
    /// Each class is in arrival order (the clock never runs backwards), so the scan of a
    /// class stops at its first young waiter.
    fn drop_aged(&mut self, now: Nanos) {
        let target = self.config.target;
        let mut aged: u64 = 0;
        let mut m = self.nonempty;
        while m != 0 {
            let list = m.trailing_zeros() as usize;
            m &= m.wrapping_sub(1);
            loop {
                let h = self.head(list);
                let Some(s) = self.slot(h) else { break };
                if now.saturating_sub(s.waiter.enqueued_at) <= target {
                    break;
                }
                match self.take(h, list) {
                    Some(w) => self.record(w, DropReason::AgeLimit),
                    None => break,
                }
                aged = aged.saturating_add(1);
            }
        }
        if aged > 0 {
            self.counters.dropped_age_limit.add_mut(aged);
        }
    }

    /// Note a drop in the buffer (the caller counts it: one counter update per call, not
    /// per drop).
    #[inline]
    fn record(&mut self, waiter: Waiter, reason: DropReason) {
        if let Some(d) = self.drops.get_mut(self.drop_len as usize) {
            *d = Dropped { waiter, reason };
            self.drop_len = self.drop_len.saturating_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VIEW: Priority = Priority::SHEDDABLE;
    const RESERVE: Priority = Priority::CRITICAL;

    fn ms(v: u64) -> Nanos {
        Nanos::from_millis(v)
    }

    fn q() -> QueueDiscipline<16> {
        QueueDiscipline::new(QueueDisciplineConfig {
            capacity: 16,
            ..QueueDisciplineConfig::default()
        })
        .unwrap()
    }

    fn served(d: Option<Dequeued>) -> Option<(u64, ServeOrder)> {
        d.map(|d| (d.waiter.id, d.order))
    }

    /// Core has no `std`, even in unit tests: fixed-capacity collections only.
    type Vec<T> = heapless::Vec<T, 16>;

    fn dropped_ids<const N: usize>(q: &QueueDiscipline<N>) -> Vec<(u64, DropReason)> {
        q.dropped()
            .iter()
            .map(|d| (d.waiter.id, d.reason))
            .collect()
    }

    #[test]
    fn default_config_is_valid_and_matches_basketly_c5() {
        let c = QueueDisciplineConfig::default();
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.interval, ms(100));
        assert_eq!(c.target, ms(5));
        assert!(c.lifo && c.codel && c.priority);
        let q: QueueDiscipline = QueueDiscipline::new(c).unwrap();
        assert_eq!(q.capacity(), 128);
    }

    #[test]
    fn config_rejections_name_the_field() {
        let bad = |c: QueueDisciplineConfig| c.validate().unwrap_err();
        let d = QueueDisciplineConfig::default();
        let e = bad(QueueDisciplineConfig { capacity: 0, ..d });
        assert_eq!((e.field(), e.kind()), ("capacity", ConfigErrorKind::Zero));
        let e = bad(QueueDisciplineConfig {
            capacity: MAX_CAPACITY + 1,
            ..d
        });
        assert_eq!(
            (e.field(), e.kind()),
            ("capacity", ConfigErrorKind::OutOfRange)
        );
        let e = bad(QueueDisciplineConfig {
            interval: Nanos::from_secs(3_601),
            ..d
        });
        assert_eq!(
            (e.field(), e.kind()),
            ("interval", ConfigErrorKind::OutOfRange)
        );
        let e = bad(QueueDisciplineConfig {
            target: ms(101),
            ..d
        });
        assert_eq!(
            (e.field(), e.kind()),
            ("target", ConfigErrorKind::Inconsistent)
        );
        // capacity above the slot count is refused by `new`, not by `validate`.
        let e = QueueDiscipline::<4>::new(QueueDisciplineConfig { capacity: 5, ..d }).unwrap_err();
        assert_eq!(
            (e.field(), e.kind()),
            ("capacity", ConfigErrorKind::OutOfRange)
        );
        assert!(QueueDiscipline::<0>::new(QueueDisciplineConfig { capacity: 1, ..d }).is_err());
        // Boundaries are accepted.
        assert!(QueueDisciplineConfig {
            interval: Nanos::ZERO,
            target: Nanos::ZERO,
            ..d
        }
        .validate()
        .is_ok());
        assert!(QueueDisciplineConfig {
            interval: MAX_DURATION,
            target: MAX_DURATION,
            ..d
        }
        .validate()
        .is_ok());
    }

    #[test]
    fn free_list_recycles_every_slot() {
        let mut q = q();
        for round in 0..5u64 {
            for id in 0..16 {
                q.push(ms(round), round * 100 + id, VIEW, None).unwrap();
            }
            assert!(q.push(ms(round), 999, VIEW, None).is_err());
            for id in 0..16 {
                assert_eq!(
                    q.pop(ms(round)).map(|d| d.waiter.id),
                    Some(round * 100 + id)
                );
            }
            assert!(q.is_empty());
            assert_eq!(q.pop(ms(round)), None);
        }
        assert_eq!(q.stats().rejected_full, 5);
        assert_eq!(q.stats().served_fifo, 80);
    }

    #[test]
    fn reserve_before_view_fifo_within_class() {
        let mut q = q();
        q.push(ms(0), 1, VIEW, None).unwrap();
        q.push(ms(0), 2, RESERVE, None).unwrap();
        q.push(ms(1), 3, VIEW, None).unwrap();
        q.push(ms(1), 4, RESERVE, None).unwrap();
        assert_eq!(q.len_by_priority()[RESERVE.index()], 2);
        assert_eq!(q.len_by_priority()[VIEW.index()], 2);
        let ids: Vec<u64> = (0..4).map(|_| q.pop(ms(2)).unwrap().waiter.id).collect();
        assert_eq!(ids, [2, 4, 1, 3]);
    }

    #[test]
    fn priority_off_is_one_line() {
        let mut q: QueueDiscipline<8> = QueueDiscipline::new(QueueDisciplineConfig {
            capacity: 8,
            priority: false,
            ..QueueDisciplineConfig::default()
        })
        .unwrap();
        q.push(ms(0), 1, VIEW, None).unwrap();
        q.push(ms(0), 2, RESERVE, None).unwrap();
        assert_eq!(q.len_by_priority()[VIEW.index()], 1);
        assert_eq!(q.pop(ms(1)).unwrap().waiter.id, 1);
        assert_eq!(q.pop(ms(1)).unwrap().waiter.id, 2);
    }

    #[test]
    fn standing_clock_starts_at_first_push_and_resets_when_empty() {
        let mut q = q();
        assert!(!q.is_standing(ms(1_000)));
        q.push(ms(10), 1, VIEW, None).unwrap();
        assert!(!q.is_standing(ms(109)));
        assert!(q.is_standing(ms(110)));
        // Emptying resets the clock.
        assert_eq!(q.remove(1).map(|w| w.id), Some(1));
        assert!(!q.is_standing(ms(200)));
        q.push(ms(200), 2, VIEW, None).unwrap();
        assert!(!q.is_standing(ms(299)));
        assert!(q.is_standing(ms(300)));
    }

    #[test]
    fn standing_drops_old_and_serves_newest() {
        let mut q = q();
        q.push(ms(0), 1, VIEW, None).unwrap();
        q.push(ms(97), 2, VIEW, None).unwrap();
        q.push(ms(98), 3, RESERVE, None).unwrap();
        q.push(ms(99), 4, VIEW, None).unwrap();
        q.push(ms(99), 5, VIEW, None).unwrap();
        // Non-empty since 0 ms, so standing at 103 ms.
        assert_eq!(served(q.pop(ms(103))), Some((3, ServeOrder::Lifo)));
        // 1 waited 103 ms, 2 waited 6 ms: both dropped; 4 and 5 waited 4 ms: kept.
        assert_eq!(
            dropped_ids(&q),
            [(1, DropReason::AgeLimit), (2, DropReason::AgeLimit)]
        );
        assert_eq!(served(q.pop(ms(103))), Some((5, ServeOrder::Lifo)));
        assert!(q.dropped().is_empty());
        assert_eq!(served(q.pop(ms(103))), Some((4, ServeOrder::Lifo)));
        assert!(q.is_empty());
        // Empty again: the next burst is FIFO.
        q.push(ms(104), 6, VIEW, None).unwrap();
        q.push(ms(104), 7, VIEW, None).unwrap();
        assert_eq!(served(q.pop(ms(105))), Some((6, ServeOrder::Fifo)));
    }

    #[test]
    fn age_limit_exactly_at_target_is_kept() {
        let mut q = q();
        q.push(ms(0), 1, VIEW, None).unwrap();
        q.push(ms(95), 2, VIEW, None).unwrap();
        q.push(ms(96), 3, VIEW, None).unwrap();
        // At 100 ms: 2 waited exactly 5 ms (kept), 3 waited 4 ms.
        assert_eq!(served(q.pop(ms(100))), Some((3, ServeOrder::Lifo)));
        assert_eq!(dropped_ids(&q), [(1, DropReason::AgeLimit)]);
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn deadline_drop_at_pick_continues() {
        let mut q = q();
        q.push(ms(0), 1, VIEW, Some(ms(3))).unwrap();
        q.push(ms(0), 2, VIEW, Some(ms(2))).unwrap();
        q.push(ms(0), 3, VIEW, Some(ms(50))).unwrap();
        q.push(ms(0), 4, VIEW, None).unwrap();
        let d = q.pop(ms(3)).unwrap();
        assert_eq!(d.waiter.id, 3);
        assert_eq!(d.waiter.time_left(ms(3)), Some(ms(47)));
        assert_eq!(
            dropped_ids(&q),
            [(1, DropReason::Deadline), (2, DropReason::Deadline)]
        );
        assert_eq!(q.pop(ms(3)).unwrap().waiter.time_left(ms(3)), None);
        assert_eq!(q.stats().dropped_deadline, 2);
    }

    #[test]
    fn all_dropped_serves_nobody_and_resets() {
        let mut q = q();
        q.push(ms(0), 1, VIEW, None).unwrap();
        q.push(ms(1), 2, RESERVE, None).unwrap();
        assert_eq!(q.pop(ms(200)), None);
        assert_eq!(q.dropped().len(), 2);
        assert!(q.is_empty());
        assert!(!q.is_standing(ms(200)));
        assert_eq!(q.oldest_age(ms(200)), Nanos::ZERO);
    }

    #[test]
    fn expire_sweeps_age_and_deadlines() {
        let mut q = q();
        q.push(ms(0), 1, VIEW, None).unwrap();
        q.push(ms(98), 2, VIEW, Some(ms(101))).unwrap();
        q.push(ms(99), 3, RESERVE, Some(ms(200))).unwrap();
        q.push(ms(99), 4, VIEW, None).unwrap();
        assert_eq!(q.expire(ms(101)), 2);
        assert_eq!(
            dropped_ids(&q),
            [(1, DropReason::AgeLimit), (2, DropReason::Deadline)]
        );
        assert_eq!(q.len(), 2);
        // Not standing (fresh queue): expire drops only deadlines.
        let mut q = self::q();
        q.push(ms(0), 1, VIEW, Some(ms(1))).unwrap();
        q.push(ms(0), 2, VIEW, None).unwrap();
        assert_eq!(q.expire(ms(50)), 1);
        assert_eq!(dropped_ids(&q), [(1, DropReason::Deadline)]);
        assert_eq!(q.expire(ms(50)), 0);
        assert!(q.dropped().is_empty());
    }

    #[test]
    fn clock_never_runs_backwards() {
        let mut q = q();
        q.push(ms(10), 1, VIEW, None).unwrap();
        q.push(ms(5), 2, VIEW, None).unwrap();
        assert_eq!(q.oldest_age(ms(0)), Nanos::ZERO);
        assert_eq!(q.oldest_age(ms(12)), ms(2));
        assert_eq!(q.pop(ms(11)).unwrap().waiter.enqueued_at, ms(10));
        // Waiter 2 was pushed "at 5 ms" after the clock had reached 10 ms.
        let late = q.pop(ms(0)).unwrap().waiter;
        assert_eq!((late.id, late.enqueued_at), (2, ms(10)));
    }

    #[test]
    fn lifo_and_codel_switches() {
        let cfg = QueueDisciplineConfig {
            capacity: 8,
            lifo: false,
            codel: false,
            ..QueueDisciplineConfig::default()
        };
        let mut q: QueueDiscipline<8> = QueueDiscipline::new(cfg).unwrap();
        q.push(ms(0), 1, VIEW, None).unwrap();
        q.push(ms(1), 2, VIEW, None).unwrap();
        assert!(q.is_standing(ms(500)));
        assert_eq!(served(q.pop(ms(500))), Some((1, ServeOrder::Fifo)));
        assert!(q.dropped().is_empty());
        assert_eq!(q.oldest_age(ms(500)), ms(499));
    }

    #[test]
    fn remove_unlinks_middle_and_counts() {
        let mut q = q();
        for id in 1..=4 {
            q.push(ms(0), id, VIEW, None).unwrap();
        }
        assert_eq!(q.remove(3).map(|w| w.id), Some(3));
        assert_eq!(q.remove(3), None);
        assert_eq!(q.remove(1).map(|w| w.id), Some(1));
        assert_eq!(q.remove(4).map(|w| w.id), Some(4));
        assert_eq!(q.pop(ms(1)).unwrap().waiter.id, 2);
        assert_eq!(q.stats().cancelled, 3);
        assert!(q.is_empty());
    }

    #[test]
    fn debug_is_short() {
        let q = q();
        use core::fmt::Write;
        let mut s: heapless::String<600> = heapless::String::new();
        // Fails (returns Err) if the Debug text does not fit in 600 bytes.
        write!(s, "{q:?}").unwrap();
        assert!(s.contains("QueueDiscipline") && s.len() < 600);
        let e = QueueDisciplineRejected { id: 7, capacity: 2 };
        let mut m: heapless::String<100> = heapless::String::new();
        write!(m, "{e}").unwrap();
        assert!(m.contains('7'));
        assert_eq!(DropReason::AgeLimit.name(), "age_limit");
        assert_eq!(ServeOrder::Lifo.name(), "lifo");
    }
}
