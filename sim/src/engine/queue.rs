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

/// An event's place in the order: its time in the high 64 bits, its sequence number in
/// the low 64, so one integer comparison orders two events.
type Key = u128;

/// The key of an empty lane: after every event.
const EMPTY: Key = Key::MAX;

#[inline]
fn key(at: Nanos, seq: u64) -> Key {
    (Key::from(at.as_u64()) << 64) | Key::from(seq)
}

#[inline]
fn at_of(k: Key) -> Nanos {
    Nanos::new((k >> 64) as u64)
}

/// One scheduled event.
#[derive(Debug, Clone, Copy)]
struct Entry<K> {
    key: Key,
    kind: K,
}

impl<K> PartialEq for Entry<K> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
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
        o.key.cmp(&self.key)
    }
}

/// The queue of future events.
///
/// `fronts[0]` is the heap's first key and `fronts[i + 1]` lane `i`'s, so the next event
/// is found by one scan of a short array of integers.
#[derive(Debug)]
pub(crate) struct EventQueue<K> {
    heap: BinaryHeap<Entry<K>>,
    /// The fixed delay of each lane.
    delays: Vec<Nanos>,
    /// Events of one fixed delay each, in the order they were scheduled (time order).
    lanes: Vec<VecDeque<Entry<K>>>,
    fronts: Vec<Key>,
    seq: u64,
}

impl<K: Copy> Default for EventQueue<K> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            delays: Vec::new(),
            lanes: Vec::new(),
            fronts: vec![EMPTY],
            seq: 0,
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
            key: key(at, self.seq),
            kind,
        };
        if fixed && at >= now {
            if let Some(i) = self.lane_of(at.saturating_sub(now)) {
                let lane = &mut self.lanes[i];
                if lane.is_empty() {
                    self.fronts[i + 1] = e.key;
                }
                lane.push_back(e);
                return;
            }
        }
        if e.key < self.fronts[0] {
            self.fronts[0] = e.key;
        }
        self.heap.push(e);
    }

    /// The lane of `delay`, made if there is room.
    #[inline]
    fn lane_of(&mut self, delay: Nanos) -> Option<usize> {
        if let Some(i) = self.delays.iter().position(|d| *d == delay) {
            return Some(i);
        }
        if self.lanes.len() >= MAX_LANES {
            return None;
        }
        self.delays.push(delay);
        self.lanes.push(VecDeque::new());
        self.fronts.push(EMPTY);
        Some(self.lanes.len() - 1)
    }

    /// An estimate of the bytes the queue holds.
    pub fn bytes(&self) -> usize {
        let lanes: usize = self.lanes.iter().map(VecDeque::capacity).sum();
        (self.heap.capacity() + lanes) * core::mem::size_of::<Entry<K>>()
    }

    /// Remove and return the earliest event if it is due before `until`.
    #[inline]
    pub fn pop_before(&mut self, until: Nanos) -> Option<(Nanos, K)> {
        let mut best = 0;
        let mut min = EMPTY;
        for (i, k) in self.fronts.iter().enumerate() {
            if *k < min {
                min = *k;
                best = i;
            }
        }
        if min == EMPTY || at_of(min) >= until {
            return None;
        }
        let e = if best == 0 {
            let e = self.heap.pop()?;
            self.fronts[0] = self.heap.peek().map_or(EMPTY, |n| n.key);
            e
        } else {
            let lane = &mut self.lanes[best - 1];
            let e = lane.pop_front()?;
            self.fronts[best] = lane.front().map_or(EMPTY, |n| n.key);
            e
        };
        Some((at_of(e.key), e.kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;

    /// The lanes give exactly the order of sorting every event by (time, sequence), for
    /// any mix of fixed and drawn delays, pops and pushes.
    #[test]
    fn same_order_as_sorting_by_time_then_sequence() {
        for seed in 0..200u64 {
            let mut rng = SimRng::new(seed, 9);
            let mut q: EventQueue<u32> = EventQueue::default();
            // The reference: every pending (time, sequence, id), searched for its least.
            let mut reference: Vec<(Nanos, u64, u32)> = Vec::new();
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
                    reference.push((at, seq, id));
                } else {
                    let until = now.saturating_add(Nanos::new(rng.below(50)));
                    loop {
                        let least = reference
                            .iter()
                            .enumerate()
                            .min_by_key(|(_, (at, s, _))| (*at, *s))
                            .map(|(i, x)| (i, *x));
                        let want = match least {
                            Some((i, (at, _, id))) if at < until => {
                                reference.swap_remove(i);
                                Some((at, id))
                            }
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
            }
            reference.sort_by_key(|(at, s, _)| (*at, *s));
            for (at, _, id) in reference {
                assert_eq!(q.pop_before(Nanos::MAX), Some((at, id)));
            }
            assert_eq!(q.pop_before(Nanos::MAX), None);
        }
    }

    #[test]
    fn lanes_are_bounded_and_the_rest_goes_to_the_heap() {
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
