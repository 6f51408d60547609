//! The event queue: events ordered by time and then by the sequence number given when
//! they were scheduled, so equal times always resolve the same way.
//!
//! Most events of a service model come back after a *fixed* delay: an attempt's timeout
//! (1 s, 2 s, 60 ms), a constant work step (10 ms), "retry at once" (1 ns). Events
//! scheduled `d` after a clock that never goes back are scheduled in order of time, so all
//! events of one fixed delay form an already sorted first-in-first-out lane: pushing and
//! popping them costs O(1) instead of a heap's O(log n), and the heap keeps only the
//! events with drawn delays (exponential work, jittered backoff, arrivals). The next event
//! is the least of the heap's top and the lanes' fronts by (time, sequence), exactly the
//! order one heap would give: the lanes change the cost, never the order.
//!
//! A timeout that is no longer wanted stays where it is and is skipped when it comes up
//! (the engine checks a token); a lane makes that skip cheap as well.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use guards_core::Nanos;

/// Most fixed-delay lanes; events of further fixed delays go to the heap.
const MAX_LANES: usize = 32;

/// One scheduled event.
#[derive(Debug, Clone, Copy)]
struct Entry<K> {
    at: Nanos,
    seq: u64,
    kind: K,
}

impl<K> Entry<K> {
    #[inline]
    fn key(&self) -> (Nanos, u64) {
        (self.at, self.seq)
    }
}

impl<K> PartialEq for Entry<K> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl<K> Eq for Entry<K> {}
impl<K> PartialOrd for Entry<K> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<K> Ord for Entry<K> {
    /// Reversed, so the max-heap pops the earliest time, then the lowest sequence.
    fn cmp(&self, o: &Self) -> Ordering {
        o.key().cmp(&self.key())
    }
}

/// Events of one fixed delay, in the order they were scheduled (which is time order).
#[derive(Debug)]
struct Lane<K> {
    delay: Nanos,
    events: VecDeque<Entry<K>>,
}

/// Where the next event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Heap,
    Lane(usize),
}

/// The queue of future events.
#[derive(Debug)]
pub(crate) struct EventQueue<K> {
    heap: BinaryHeap<Entry<K>>,
    lanes: Vec<Lane<K>>,
    seq: u64,
    len: usize,
    peak: usize,
}

impl<K: Copy> Default for EventQueue<K> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            lanes: Vec::new(),
            seq: 0,
            len: 0,
            peak: 0,
        }
    }
}

impl<K: Copy> EventQueue<K> {
    /// Schedule `kind` at `at`. With `fixed`, the caller says the delay `at − now` is one
    /// that recurs (a configured timeout, a constant duration): the event joins that
    /// delay's lane. `now` must never go back between calls.
    #[inline]
    pub fn push(&mut self, now: Nanos, at: Nanos, kind: K, fixed: bool) {
        self.seq += 1;
        let e = Entry {
            at,
            seq: self.seq,
            kind,
        };
        self.len += 1;
        self.peak = self.peak.max(self.len);
        if fixed && at >= now {
            let delay = at.saturating_sub(now);
            if let Some(lane) = self.lanes.iter_mut().find(|l| l.delay == delay) {
                lane.events.push_back(e);
                return;
            }
            if self.lanes.len() < MAX_LANES {
                let mut events = VecDeque::new();
                events.push_back(e);
                self.lanes.push(Lane { delay, events });
                return;
            }
        }
        self.heap.push(e);
    }

    /// Where the earliest event is, and its key.
    #[inline]
    fn first(&self) -> Option<((Nanos, u64), Source)> {
        let mut best = self.heap.peek().map(|e| (e.key(), Source::Heap));
        for (i, lane) in self.lanes.iter().enumerate() {
            if let Some(e) = lane.events.front() {
                let k = e.key();
                if best.is_none_or(|(b, _)| k < b) {
                    best = Some((k, Source::Lane(i)));
                }
            }
        }
        best
    }

    /// Remove and return the earliest event if it is due before `until`.
    #[inline]
    pub fn pop_before(&mut self, until: Nanos) -> Option<(Nanos, K)> {
        let ((at, _), src) = self.first()?;
        if at >= until {
            return None;
        }
        let e = match src {
            Source::Heap => self.heap.pop(),
            Source::Lane(i) => self.lanes[i].events.pop_front(),
        }?;
        self.len -= 1;
        Some((e.at, e.kind))
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Most events waiting at once.
    pub fn peak(&self) -> usize {
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;

    /// The lanes give exactly the order of one heap ordered by (time, sequence), for any
    /// mix of fixed and drawn delays, pops and pushes.
    #[test]
    fn same_order_as_one_heap() {
        for seed in 0..200u64 {
            let mut rng = SimRng::new(seed, 9);
            let mut q: EventQueue<u32> = EventQueue::default();
            let mut reference: BinaryHeap<Entry<u32>> = BinaryHeap::new();
            let mut seq = 0u64;
            let mut now = Nanos::ZERO;
            let fixed_delays = [0u64, 1, 5, 10, 1000, 1000, 7];
            let mut id = 0u32;
            for _ in 0..400 {
                if rng.below(3) > 0 {
                    let (d, fixed) = if rng.below(2) == 0 {
                        (fixed_delays[rng.below(7) as usize], true)
                    } else {
                        (rng.below(2000), rng.below(4) == 0)
                    };
                    let at = now.saturating_add(Nanos::new(d));
                    id += 1;
                    seq += 1;
                    q.push(now, at, id, fixed);
                    reference.push(Entry { at, seq, kind: id });
                } else {
                    let until = now.saturating_add(Nanos::new(rng.below(50)));
                    loop {
                        let want = match reference.peek() {
                            Some(e) if e.at < until => reference.pop().map(|e| (e.at, e.kind)),
                            _ => None,
                        };
                        let got = q.pop_before(until);
                        assert_eq!(got, want, "seed {seed}");
                        match got {
                            Some((at, _)) => now = at,
                            None => break,
                        }
                    }
                    now = now.max(until);
                }
                assert_eq!(q.len(), reference.len());
            }
            while let Some(e) = reference.pop() {
                assert_eq!(q.pop_before(Nanos::MAX), Some((e.at, e.kind)));
            }
            assert_eq!(q.pop_before(Nanos::MAX), None);
        }
    }

    #[test]
    fn lanes_are_bounded() {
        let mut q: EventQueue<u32> = EventQueue::default();
        for d in 0..100u32 {
            q.push(Nanos::ZERO, Nanos::new(u64::from(d) + 1), d, true);
        }
        assert_eq!(q.lanes.len(), MAX_LANES);
        assert_eq!(q.heap.len(), 100 - MAX_LANES);
        for d in 0..100u32 {
            assert_eq!(
                q.pop_before(Nanos::MAX),
                Some((Nanos::new(u64::from(d) + 1), d))
            );
        }
    }
}
