//! `guards_queue_discipline`: core's `QueueDiscipline`, who gets the next free server out
//! of a bounded wait queue (CoDel age limit, adaptive LIFO, priority, deadline drop).
//!
//! **Single owner: not thread-safe.** A wait queue belongs to the one consumer that hands
//! out servers, so core makes every change take exclusive access. Every call on a handle,
//! the read-only ones (`_get_stats`, `_get_state`, `_dropped`) included, must be
//! serialised by the caller: one thread, or every call under the same mutex.
//!
//! ```c
//! guards_queue_discipline_config cfg;
//! guards_queue_discipline_config_default(&cfg);     /* Basketly C5: 100 ms standing, 5 ms age */
//! guards_queue_discipline *q;
//! guards_queue_discipline_new(&cfg, &q);
//! pthread_mutex_lock(&m);
//! guards_queue_discipline_push(q, now, request_id, priority, deadline_ns);
//! ...
//! guards_dequeued d;
//! if (guards_queue_discipline_pop(q, guards_now_ns(), &d) == GUARDS_RESULT_OK) {
//!     /* serve d.waiter.id; waiters dropped on the way: guards_queue_discipline_dropped */
//! }
//! pthread_mutex_unlock(&m);
//! ```

use super::{
    arg, arg_mut, boundary, call_mut_out, config_default, free_handle, new_handle, read, Out,
    GUARDS_NO_DEADLINE,
};
use crate::error::{Failure, GuardsResult};
use crate::handle::AnyQueue;
use crate::names::{Dropped, Nanos, QueueDisciplineConfig, QueueDisciplineStats, Waiter};

/// A wait queue's settings. Start from `guards_queue_discipline_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct guards_queue_discipline_config {
    /// Waiters that may wait at once (default 128; 1..=65536).
    pub capacity: u32,
    /// Always 0 (room for later use).
    pub reserved: u32,
    /// Non-empty this long = standing (default 100 ms; 0..=3600 s).
    pub interval_ns: u64,
    /// The age limit while standing (default 5 ms; 0..=interval).
    pub target_ns: u64,
    /// Serve the newest waiter while standing (default true).
    pub lifo: bool,
    /// Drop waiters older than the age limit while standing (default true).
    pub codel: bool,
    /// Serve more important classes first (default true).
    pub priority: bool,
}

impl guards_queue_discipline_config {
    /// The schema defaults.
    pub fn of_defaults() -> Self {
        Self::of_core(&crate::schema::QUEUE_DISCIPLINE.defaults())
    }

    /// Core's config (validated by core when the queue is built).
    pub fn to_core(&self) -> QueueDisciplineConfig {
        QueueDisciplineConfig {
            capacity: self.capacity,
            interval: Nanos(self.interval_ns),
            target: Nanos(self.target_ns),
            lifo: self.lifo,
            codel: self.codel,
            priority: self.priority,
        }
    }

    /// The C form of core's config.
    pub fn of_core(c: &QueueDisciplineConfig) -> Self {
        guards_queue_discipline_config {
            capacity: c.capacity,
            reserved: 0,
            interval_ns: c.interval.0,
            target_ns: c.target.0,
            lifo: c.lifo,
            codel: c.codel,
            priority: c.priority,
        }
    }
}

/// One waiting request, as pushed (and as returned when served, dropped or removed).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_waiter {
    /// The caller's handle for the request.
    pub id: u64,
    /// When it was queued (the queue's clock at push).
    pub enqueued_at_ns: u64,
    /// When its caller gives up (`GUARDS_NO_DEADLINE`: never).
    pub deadline_ns: u64,
    /// Its priority class (0..=7).
    pub priority: u32,
    /// Always 0 (room for later use).
    pub reserved: u32,
}

impl guards_waiter {
    fn of_core(w: &Waiter) -> Self {
        guards_waiter {
            id: w.id,
            enqueued_at_ns: w.enqueued_at.0,
            deadline_ns: w.deadline.0,
            priority: u32::from(w.priority.level()),
            reserved: 0,
        }
    }
}

/// From which end of its class a waiter was served (`order`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_serve_order {
    /// Oldest first (the queue was not standing, or LIFO is off).
    Fifo = 0,
    /// Newest first (standing, LIFO on).
    Lifo = 1,
}

/// The waiter that gets the freed server.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_dequeued {
    /// Who is served.
    pub waiter: guards_waiter,
    /// A `guards_serve_order`.
    pub order: u32,
    /// Always 0 (room for later use).
    pub reserved: u32,
}

/// Why a waiter was dropped (`reason`): its caller should get a fast refusal.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_drop_reason {
    /// It waited longer than `target` while the queue was standing.
    AgeLimit = 0,
    /// Its deadline had passed.
    Deadline = 1,
}

/// A waiter the queue dropped, and why.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_dropped {
    /// The dropped waiter.
    pub waiter: guards_waiter,
    /// A `guards_drop_reason`.
    pub reason: u32,
    /// Always 0 (room for later use).
    pub reserved: u32,
}

impl guards_dropped {
    fn of_core(d: &Dropped) -> Self {
        guards_dropped {
            waiter: guards_waiter::of_core(&d.waiter),
            reason: d.reason as u32,
            reserved: 0,
        }
    }
}

/// A wait queue's counters. Every accepted waiter ends in exactly one of served, dropped,
/// cancelled, or still queued: `enqueued == served_fifo + served_lifo + dropped_age_limit +
/// dropped_deadline + cancelled + len`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_queue_discipline_stats {
    /// Waiters accepted by push.
    pub enqueued: u64,
    /// Waiters served from the oldest end.
    pub served_fifo: u64,
    /// Waiters served from the newest end.
    pub served_lifo: u64,
    /// Waiters dropped by the age limit.
    pub dropped_age_limit: u64,
    /// Waiters dropped because their deadline had passed.
    pub dropped_deadline: u64,
    /// Waiters taken out by `_remove`.
    pub cancelled: u64,
    /// Pushes refused because the queue was full.
    pub rejected_full: u64,
}

impl From<QueueDisciplineStats> for guards_queue_discipline_stats {
    fn from(s: QueueDisciplineStats) -> Self {
        guards_queue_discipline_stats {
            enqueued: s.enqueued,
            served_fifo: s.served_fifo,
            served_lifo: s.served_lifo,
            dropped_age_limit: s.dropped_age_limit,
            dropped_deadline: s.dropped_deadline,
            cancelled: s.cancelled,
            rejected_full: s.rejected_full,
        }
    }
}

/// A wait queue's state at an instant.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_queue_discipline_state {
    /// Waiters now.
    pub len: u32,
    /// 1 when the queue is standing (non-empty for at least `interval`), else 0.
    pub standing: u32,
    /// Waiters now by priority class.
    pub len_by_priority: [u32; 8],
    /// How long the oldest waiter has waited (0 when empty): alarm on this.
    pub oldest_age_ns: u64,
}

/// A wait queue (opaque). Single owner: every call must be serialised by the caller.
#[derive(Debug)]
pub struct guards_queue_discipline {
    queue: AnyQueue,
}

/// Write the default config to `out` (Basketly's C5: 128 waiters, 100 ms interval, 5 ms target,
/// LIFO, CoDel and priority on).
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_queue_discipline_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_queue_discipline_config_default(
    out: *mut guards_queue_discipline_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_queue_discipline_config::of_defaults) }
}

/// Build a wait queue from `config` into `*out`. Errors: `NULL_ARGUMENT`, `CONFIG_*`
/// naming the field, `OUT_OF_MEMORY`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_queue_discipline_new(
    config: *const guards_queue_discipline_config,
    out: *mut *mut guards_queue_discipline,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        new_handle(config, out, |c| {
            Ok(guards_queue_discipline {
                queue: AnyQueue::new(c.to_core())?,
            })
        })
    }
}

/// Free a wait queue (NULL is a no-op).
///
/// # Safety
/// `q` must be NULL or a handle from `guards_queue_discipline_new` not freed before.
#[no_mangle]
pub unsafe extern "C" fn guards_queue_discipline_free(q: *mut guards_queue_discipline) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(q) }
}

/// Queue request `id` of `priority` (0..=7) that arrived at `now_ns`, whose caller gives up
/// at `deadline_ns` (`GUARDS_NO_DEADLINE`: never; a deadline already passed is accepted and
/// dropped when picked). `GUARDS_RESULT_QUEUE_FULL` when `capacity` are waiting. Errors:
/// `INVALID_ARGUMENT` (priority).
///
/// # Safety
/// `q` must be NULL or a live handle nothing else uses during the call.
#[no_mangle]
pub unsafe extern "C" fn guards_queue_discipline_push(
    q: *mut guards_queue_discipline,
    now_ns: u64,
    id: u64,
    priority: u32,
    deadline_ns: u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let q = unsafe { arg_mut(q, "queue") }?;
        let p = super::priority(priority)?;
        let deadline = (deadline_ns != GUARDS_NO_DEADLINE).then_some(Nanos(deadline_ns));
        with_queue!(&mut q.queue, q => q.push(Nanos(now_ns), id, p, deadline))?;
        Ok(())
    })
}

/// A server freed at `now_ns`: apply the age limit if the queue is standing, then pick the
/// waiter to serve into `*out` (most important class first; newest first while standing
/// with LIFO on), dropping picked waiters whose deadline has passed.
/// `GUARDS_RESULT_EMPTY` when nobody is left to serve. The waiters dropped on the way are
/// read with `guards_queue_discipline_dropped` until the next pop or expire.
///
/// # Safety
/// `q` must be NULL or a live handle nothing else uses during the call; `out` NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_queue_discipline_pop(
    q: *mut guards_queue_discipline,
    now_ns: u64,
    out: *mut guards_dequeued,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_mut_out(q, "queue", out, |q| {
            let d = with_queue!(&mut q.queue, q => q.pop(Nanos(now_ns)))
                .ok_or(Failure::code(GuardsResult::Empty))?;
            Ok(guards_dequeued {
                waiter: guards_waiter::of_core(&d.waiter),
                order: d.order as u32,
                reserved: 0,
            })
        })
    }
}

/// A timer sweep at `now_ns`: drop every waiter past the age limit (if standing) and every
/// waiter whose deadline has passed, serving nobody; how many into `*out` (they are read
/// with `guards_queue_discipline_dropped`).
///
/// # Safety
/// As `guards_queue_discipline_pop`.
#[no_mangle]
pub unsafe extern "C" fn guards_queue_discipline_expire(
    q: *mut guards_queue_discipline,
    now_ns: u64,
    out: *mut u32,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_mut_out(q, "queue", out, |q| {
            Ok(with_queue!(&mut q.queue, q => q.expire(Nanos(now_ns))))
        })
    }
}

/// Copy the waiters dropped by the latest pop or expire (in the order they were dropped)
/// into `buf` (room for `cap` entries); how many into `*n`. `BUFFER_TOO_SMALL` (nothing
/// copied, `*n` = how many there are) when `cap` is too small; `buf` may be NULL when
/// `cap` is 0.
///
/// # Safety
/// `q` must be NULL or a live handle not being changed during the call; `buf` NULL or
/// valid for writes of `cap` entries; `n` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn guards_queue_discipline_dropped(
    q: *const guards_queue_discipline,
    buf: *mut guards_dropped,
    cap: usize,
    n: *mut usize,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let q = unsafe { arg(q, "queue") }?;
        let n = Out::new(n, "n")?;
        let dropped = with_queue!(&q.queue, q => q.dropped());
        if dropped.len() > cap {
            // SAFETY: valid for a write (caller's contract).
            unsafe { n.set(dropped.len()) };
            return Err(Failure::argument(
                GuardsResult::BufferTooSmall,
                "buf",
                "room for every dropped waiter (the count is in *n)",
            ));
        }
        if !dropped.is_empty() {
            let out = Out::new(buf, "buf")?;
            for (i, d) in dropped.iter().enumerate() {
                // SAFETY: `buf` holds `cap >= dropped.len()` entries (caller's contract);
                // `out` checked it non-null and aligned.
                unsafe { out.0.add(i).write(guards_dropped::of_core(d)) };
            }
        }
        // SAFETY: valid for a write (caller's contract).
        unsafe { n.set(dropped.len()) };
        Ok(())
    })
}

/// Take out waiter `id` because its caller gave up (cancel), into `*out`;
/// `GUARDS_RESULT_NOT_FOUND` when no such waiter is queued.
///
/// # Safety
/// As `guards_queue_discipline_pop`.
#[no_mangle]
pub unsafe extern "C" fn guards_queue_discipline_remove(
    q: *mut guards_queue_discipline,
    id: u64,
    out: *mut guards_waiter,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_mut_out(q, "queue", out, |q| {
            with_queue!(&mut q.queue, q => q.remove(id))
                .map(|w| guards_waiter::of_core(&w))
                .ok_or(Failure::argument(
                    GuardsResult::NotFound,
                    "id",
                    "the id of a queued waiter",
                ))
        })
    }
}

/// The queue's state at `now_ns` (length, by priority, standing, oldest age) into `*out`.
///
/// # Safety
/// `q` must be NULL or a live handle not being changed during the call; `out` NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_queue_discipline_get_state(
    q: *const guards_queue_discipline,
    now_ns: u64,
    out: *mut guards_queue_discipline_state,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(q, "queue", out, |q| {
            with_queue!(&q.queue, q => guards_queue_discipline_state {
                len: q.len(),
                standing: u32::from(q.is_standing(Nanos(now_ns))),
                len_by_priority: q.len_by_priority(),
                oldest_age_ns: q.oldest_age(Nanos(now_ns)).0,
            })
        })
    }
}

/// The counters into `*out`.
///
/// # Safety
/// `q` must be NULL or a live handle not being changed during the call; `out` NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_queue_discipline_get_stats(
    q: *const guards_queue_discipline,
    out: *mut guards_queue_discipline_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(q, "queue", out, |q| {
            with_queue!(&q.queue, q => q.stats()).into()
        })
    }
}

/// The config the queue was built with.
///
/// # Safety
/// As `guards_queue_discipline_get_stats`.
#[no_mangle]
pub unsafe extern "C" fn guards_queue_discipline_get_config(
    q: *const guards_queue_discipline,
    out: *mut guards_queue_discipline_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(q, "queue", out, |q| {
            guards_queue_discipline_config::of_core(with_queue!(&q.queue, q => q.config()))
        })
    }
}
