//! Wait queues: a plain first-in-first-out queue, or guards-core's
//! [`QueueDiscipline`](guards_core::queue_discipline::QueueDiscipline) (CoDel age limit,
//! adaptive LIFO, strict priority, deadline drop at dequeue).
//!
//! The discipline decides who gets a freed server and whom to drop; the engine only
//! answers the dropped callers (an age-limit drop is a fast "overloaded", a deadline drop a
//! deadline answer). A push beyond the config's `capacity` is refused. The queue is built
//! in place by guards-ffi's capacity dispatch ([`AnyQueue`]), the smallest slot count that
//! holds the capacity.

use std::collections::VecDeque;

use guards::handle::AnyQueue;
use guards_core::queue_discipline::{DropReason, QueueDisciplineConfig};
use guards_core::{Nanos, Priority};

use crate::error::SimError;

/// Why the queue dropped a waiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drop {
    /// Waited longer than the age limit while the queue was standing.
    Age,
    /// Its deadline passed while it waited.
    Deadline,
}

/// A wait queue of call ids.
#[derive(Debug)]
pub(crate) enum WaitQueue {
    /// First in, first out. Removal is lazy: the engine skips ids that are no longer waiting.
    Fifo(VecDeque<u64>),
    /// guards-core's queue discipline.
    Discipline(AnyQueue),
}

impl WaitQueue {
    pub(crate) fn new(
        discipline: Option<&QueueDisciplineConfig>,
        place: &str,
    ) -> Result<Self, SimError> {
        match discipline {
            None => Ok(WaitQueue::Fifo(VecDeque::new())),
            Some(config) => {
                let q = AnyQueue::new(*config)
                    .map_err(|f| SimError::failure(format!("{place}: queue_discipline"), &f))?;
                Ok(WaitQueue::Discipline(q))
            }
        }
    }

    /// Add a waiter (`deadline`: `Nanos::MAX` for none); `false` if the queue is full.
    pub(crate) fn push(&mut self, now: Nanos, id: u64, p: Priority, deadline: Nanos) -> bool {
        match self {
            WaitQueue::Fifo(q) => {
                q.push_back(id);
                true
            }
            WaitQueue::Discipline(q) => {
                let d = (deadline != Nanos::MAX).then_some(deadline);
                guards::with_queue!(q, g => g.push(now, id, p, d).is_ok())
            }
        }
    }

    /// The next waiter to serve; waiters the discipline drops on the way are appended to
    /// `drops`. FIFO ids may be stale (removed lazily): the caller checks them.
    pub(crate) fn pop(&mut self, now: Nanos, drops: &mut Vec<(u64, Drop)>) -> Option<u64> {
        match self {
            WaitQueue::Fifo(q) => q.pop_front(),
            WaitQueue::Discipline(q) => guards::with_queue!(q, g => {
                let next = g.pop(now);
                for d in g.dropped() {
                    let why = match d.reason {
                        DropReason::AgeLimit => Drop::Age,
                        DropReason::Deadline => Drop::Deadline,
                    };
                    drops.push((d.waiter.id, why));
                }
                next.map(|d| d.waiter.id)
            }),
        }
    }

    /// Remove a waiter whose caller gave up. A FIFO queue skips it later instead.
    pub(crate) fn remove(&mut self, id: u64) {
        match self {
            WaitQueue::Fifo(_) => {}
            WaitQueue::Discipline(q) => {
                let _ = guards::with_queue!(q, g => g.remove(id));
            }
        }
    }

    /// Take every waiter out at `now` (a flush).
    pub(crate) fn drain(&mut self, now: Nanos) -> Vec<u64> {
        match self {
            WaitQueue::Fifo(q) => q.drain(..).collect(),
            WaitQueue::Discipline(q) => guards::with_queue!(q, g => {
                let mut out = Vec::new();
                while !g.is_empty() {
                    match g.pop(now) {
                        Some(d) => out.push(d.waiter.id),
                        None => {
                            out.extend(g.dropped().iter().map(|d| d.waiter.id));
                            break;
                        }
                    }
                    out.extend(g.dropped().iter().map(|d| d.waiter.id));
                }
                out
            }),
        }
    }
}
