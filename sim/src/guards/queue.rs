//! Wait queues: plain FIFO, or guards-core's queue discipline.
//! PENDING(core queue_discipline) for the discipline.

use std::collections::VecDeque;

use guards_core::{Nanos, Priority};

use crate::error::SimError;
use crate::topology::DisciplineSpec;

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
}

impl WaitQueue {
    pub(crate) fn new(discipline: Option<&DisciplineSpec>, place: &str) -> Result<Self, SimError> {
        match discipline {
            None => Ok(WaitQueue::Fifo(VecDeque::new())),
            Some(_) => Err(SimError::topology(format!(
                "{place}: queue_discipline has not landed yet"
            ))),
        }
    }

    /// Add a waiter; `false` if the queue is full.
    pub(crate) fn push(&mut self, _now: Nanos, id: u64, _p: Priority, _deadline: Nanos) -> bool {
        match self {
            WaitQueue::Fifo(q) => {
                q.push_back(id);
                true
            }
        }
    }

    /// The next waiter to serve; waiters the discipline drops on the way are appended to
    /// `drops`. FIFO ids may be stale (removed lazily): the caller checks them.
    pub(crate) fn pop(&mut self, _now: Nanos, _drops: &mut Vec<(u64, Drop)>) -> Option<u64> {
        match self {
            WaitQueue::Fifo(q) => q.pop_front(),
        }
    }

    /// Remove a waiter whose caller gave up. `true` if the queue removed it eagerly;
    /// `false` for a FIFO queue, which skips it later.
    pub(crate) fn remove(&mut self, _id: u64) -> bool {
        match self {
            WaitQueue::Fifo(_) => false,
        }
    }

    /// Take every waiter out (a flush).
    pub(crate) fn drain(&mut self) -> Vec<u64> {
        match self {
            WaitQueue::Fifo(q) => q.drain(..).collect(),
        }
    }
}
