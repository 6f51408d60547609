#![cfg(not(loom))]
//! Integration tests for `queue_discipline`: Basketly's C5 behaviour, a proptest against a
//! plain `Vec` reference model, and long random runs checking that no waiter is lost or
//! duplicated.
//!
//! Stress: the queue takes `&mut self` (one consumer owns it), so there is no lock-free
//! protocol to race; the two-thread test below only checks that it can be shared behind a
//! mutex (as the simulator and the bindings do) without losing a waiter.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use guards_core::priority::MAX_PRIORITIES;
use guards_core::queue_discipline::{
    DropReason, QueueDiscipline, QueueDisciplineConfig, QueueDisciplineStats, ServeOrder,
};
use guards_core::{Nanos, Priority, Rng};
use proptest::prelude::*;

const VIEW: Priority = Priority::SHEDDABLE;
const RESERVE: Priority = Priority::CRITICAL;

fn ms(v: u64) -> Nanos {
    Nanos::from_millis(v)
}

fn c5() -> QueueDiscipline {
    QueueDiscipline::new(QueueDisciplineConfig::default()).unwrap()
}

fn drops<const N: usize>(q: &QueueDiscipline<N>) -> Vec<(u64, DropReason)> {
    q.dropped()
        .iter()
        .map(|d| (d.waiter.id, d.reason))
        .collect()
}

fn conserved<const N: usize>(q: &QueueDiscipline<N>) -> bool {
    let s = q.stats();
    s.enqueued
        == s.served_fifo
            + s.served_lifo
            + s.dropped_age_limit
            + s.dropped_deadline
            + s.cancelled
            + u64::from(q.len())
}

// ---------------------------------------------------------------------------------------
// Basketly setting C5 (docs/basketly.md)
// ---------------------------------------------------------------------------------------

#[test]
fn after_standing_100ms_a_freeing_connection_drops_every_waiter_older_than_5ms() {
    let mut q = c5();
    // One waiter per millisecond from 0 to 99 ms, reserves on even ids: the queue is never
    // empty, so it stands from 100 ms.
    for t in 0..100u64 {
        let p = if t % 2 == 0 { RESERVE } else { VIEW };
        q.push(ms(t), t, p, None).unwrap();
    }
    assert!(!q.is_standing(ms(99)));
    assert!(q.is_standing(ms(100)));
    // At 100 ms waiters pushed at 0..=94 ms have waited more than 5 ms (95 waited exactly 5).
    let d = q.pop(ms(100)).unwrap();
    let dropped = drops(&q);
    assert_eq!(dropped.len(), 95);
    assert!(dropped
        .iter()
        .all(|&(id, r)| id < 95 && r == DropReason::AgeLimit));
    // Reserves too: the age limit applies to every class. Reserves are reported first.
    assert_eq!(dropped[0], (0, DropReason::AgeLimit));
    assert!(dropped[..48].iter().all(|&(id, _)| id % 2 == 0));
    // The newest reserve (98) is served, LIFO.
    assert_eq!((d.waiter.id, d.order), (98, ServeOrder::Lifo));
    assert_eq!(q.len(), 4); // 95, 96, 97, 99
    assert_eq!(q.stats().dropped_age_limit, 95);
}

#[test]
fn a_waiting_reserve_is_served_before_any_view() {
    let mut q = c5();
    for id in 0..10 {
        q.push(ms(0), id, VIEW, None).unwrap();
    }
    q.push(ms(3), 100, RESERVE, None).unwrap();
    assert_eq!(q.pop(ms(4)).unwrap().waiter.id, 100);
    // Standing (LIFO) too: a reserve older than every view still goes first.
    let mut q = c5();
    q.push(ms(0), 1, VIEW, None).unwrap();
    q.push(ms(97), 2, RESERVE, None).unwrap();
    q.push(ms(99), 3, VIEW, None).unwrap();
    let d = q.pop(ms(100)).unwrap();
    assert_eq!((d.waiter.id, d.order), (2, ServeOrder::Lifo));
    assert_eq!(drops(&q), [(1, DropReason::AgeLimit)]);
}

#[test]
fn lifo_while_standing_fifo_otherwise() {
    let mut q = c5();
    q.push(ms(0), 1, VIEW, None).unwrap();
    q.push(ms(1), 2, VIEW, None).unwrap();
    q.push(ms(2), 3, VIEW, None).unwrap();
    // Not standing: oldest first.
    let d = q.pop(ms(3)).unwrap();
    assert_eq!((d.waiter.id, d.order), (1, ServeOrder::Fifo));
    // Keep it non-empty until it stands, with young waiters.
    q.push(ms(98), 4, VIEW, None).unwrap();
    q.push(ms(99), 5, VIEW, None).unwrap();
    let d = q.pop(ms(100)).unwrap();
    assert_eq!((d.waiter.id, d.order), (5, ServeOrder::Lifo));
    assert_eq!(
        drops(&q),
        [(2, DropReason::AgeLimit), (3, DropReason::AgeLimit)]
    );
    let d = q.pop(ms(100)).unwrap();
    assert_eq!((d.waiter.id, d.order), (4, ServeOrder::Lifo));
    // Empty: the standing clock restarts, FIFO again.
    q.push(ms(101), 6, VIEW, None).unwrap();
    q.push(ms(101), 7, VIEW, None).unwrap();
    assert_eq!(q.pop(ms(102)).unwrap().order, ServeOrder::Fifo);
    let s = q.stats();
    assert_eq!((s.served_fifo, s.served_lifo), (2, 2));
}

#[test]
fn a_short_burst_that_drains_within_100ms_is_not_dropped() {
    let mut q = c5();
    // 30 waiters arrive in the first 3 ms; a connection frees every 3 ms. The last one
    // waits about 87 ms, far beyond 5 ms, but the queue empties at 90 ms < 100 ms.
    for id in 0..30u64 {
        q.push(Nanos::from_micros(id * 100), id, VIEW, None)
            .unwrap();
    }
    let mut served = Vec::new();
    let mut t = 3;
    while let Some(d) = q.pop(ms(t)) {
        assert!(q.dropped().is_empty());
        assert_eq!(d.order, ServeOrder::Fifo);
        served.push(d.waiter.id);
        t += 3;
    }
    assert_eq!(served, (0..30).collect::<Vec<_>>());
    assert_eq!(q.stats().dropped_age_limit, 0);
    // A second burst after the queue emptied gets the same treatment: the clock restarted.
    for id in 100..130u64 {
        q.push(ms(95), id, VIEW, None).unwrap();
    }
    assert!(!q.is_standing(ms(194)));
    assert_eq!(q.pop(ms(194)).unwrap().waiter.id, 100);
    assert!(q.dropped().is_empty());
}

#[test]
fn the_standing_clock_restarts_on_empty_rather_than_aging_always() {
    // A queue that empties every 50 ms never stands, so it never drops, although each
    // waiter waits 40 ms (an always-on age limit would drop them all).
    let mut q = c5();
    for round in 0..20u64 {
        let t0 = round * 50;
        q.push(ms(t0), round * 2, VIEW, None).unwrap();
        q.push(ms(t0), round * 2 + 1, RESERVE, None).unwrap();
        assert_eq!(q.pop(ms(t0 + 40)).unwrap().waiter.priority, RESERVE);
        assert_eq!(q.pop(ms(t0 + 40)).unwrap().waiter.priority, VIEW);
        assert!(q.is_empty());
    }
    assert_eq!(q.stats().dropped_age_limit, 0);
    assert_eq!(q.stats().served_fifo, 40);
    // With interval 0 (standing whenever non-empty) the same traffic is all dropped.
    let mut q: QueueDiscipline = QueueDiscipline::new(QueueDisciplineConfig {
        interval: Nanos::ZERO,
        target: Nanos::ZERO,
        ..QueueDisciplineConfig::default()
    })
    .unwrap();
    q.push(ms(0), 1, VIEW, None).unwrap();
    assert_eq!(q.pop(ms(40)), None);
    assert_eq!(drops(&q), [(1, DropReason::AgeLimit)]);
}

#[test]
fn expired_deadline_is_dropped_at_dequeue_and_picking_continues() {
    let mut q = c5();
    q.push(ms(0), 1, RESERVE, Some(ms(10))).unwrap();
    q.push(ms(0), 2, RESERVE, Some(ms(60))).unwrap();
    q.push(ms(0), 3, VIEW, Some(ms(5))).unwrap();
    let d = q.pop(ms(20)).unwrap();
    assert_eq!(d.waiter.id, 2);
    assert_eq!(d.waiter.time_left(ms(20)), Some(ms(40)));
    assert_eq!(drops(&q), [(1, DropReason::Deadline)]);
    // The view's deadline has passed too but it is only dropped when picked.
    assert_eq!(q.len(), 1);
    assert_eq!(q.pop(ms(20)), None);
    assert_eq!(drops(&q), [(3, DropReason::Deadline)]);
    // Deadline exactly now: no time left, dropped.
    q.push(ms(30), 4, VIEW, Some(ms(30))).unwrap();
    assert_eq!(q.pop(ms(30)), None);
    assert_eq!(q.stats().dropped_deadline, 3);
}

#[test]
fn full_queue_refuses_and_counts() {
    let mut q: QueueDiscipline<4> = QueueDiscipline::new(QueueDisciplineConfig {
        capacity: 3,
        ..QueueDisciplineConfig::default()
    })
    .unwrap();
    for id in 0..3 {
        q.push(ms(0), id, VIEW, None).unwrap();
    }
    let e = q.push(ms(0), 9, RESERVE, None).unwrap_err();
    assert_eq!((e.id, e.capacity), (9, 3));
    assert_eq!(q.stats().rejected_full, 1);
    assert_eq!(q.stats().enqueued, 3);
    q.pop(ms(1)).unwrap();
    q.push(ms(1), 9, RESERVE, None).unwrap();
    assert_eq!(q.len(), 3);
}

#[test]
fn oldest_age_and_len_by_priority() {
    let mut q = c5();
    assert_eq!(q.oldest_age(ms(7)), Nanos::ZERO);
    q.push(ms(2), 1, VIEW, None).unwrap();
    q.push(ms(1), 2, RESERVE, None).unwrap(); // clock is at 2 ms already
    q.push(ms(3), 3, Priority::SHEDDABLE_PLUS, None).unwrap();
    assert_eq!(q.oldest_age(ms(10)), ms(8));
    let mut want = [0u32; MAX_PRIORITIES];
    want[VIEW.index()] = 1;
    want[RESERVE.index()] = 1;
    want[Priority::SHEDDABLE_PLUS.index()] = 1;
    assert_eq!(q.len_by_priority(), want);
    q.remove(1).unwrap();
    assert_eq!(q.oldest_age(ms(10)), ms(8));
    q.remove(2).unwrap();
    assert_eq!(q.oldest_age(ms(10)), ms(7));
}

// ---------------------------------------------------------------------------------------
// Reference model
// ---------------------------------------------------------------------------------------

/// Dropped ids with their reasons, in report order.
type Drops = Vec<(u64, DropReason)>;

#[derive(Debug, Clone, Copy)]
struct MW {
    seq: u64,
    id: u64,
    prio: Priority,
    enq: Nanos,
    deadline: Option<Nanos>,
}

/// The rules of the module docs, written the slow obvious way on a `Vec`.
#[derive(Debug)]
struct Model {
    cfg: QueueDisciplineConfig,
    items: Vec<MW>,
    seq: u64,
    since: Nanos,
    clock: Nanos,
    stats: QueueDisciplineStats,
}

impl Model {
    fn new(cfg: QueueDisciplineConfig) -> Self {
        Model {
            cfg,
            items: Vec::new(),
            seq: 0,
            since: Nanos::ZERO,
            clock: Nanos::ZERO,
            stats: QueueDisciplineStats::default(),
        }
    }
    fn key(&self, w: &MW) -> usize {
        if self.cfg.priority {
            w.prio.index()
        } else {
            0
        }
    }
    fn tick(&mut self, now: Nanos) -> Nanos {
        self.clock = self.clock.max(now);
        self.clock
    }
    fn standing(&self, now: Nanos) -> bool {
        !self.items.is_empty() && now.saturating_sub(self.since) >= self.cfg.interval
    }
    fn expired(w: &MW, now: Nanos) -> bool {
        w.deadline.is_some_and(|d| now >= d)
    }
    /// Remove and return the items matching `f`, in (class, arrival) order.
    fn take_where(&mut self, f: impl Fn(&MW) -> bool) -> Vec<MW> {
        let mut out: Vec<MW> = self.items.iter().copied().filter(|w| f(w)).collect();
        out.sort_by_key(|w| (self.key(w), w.seq));
        self.items.retain(|w| !f(w));
        out
    }
    fn push(&mut self, now: Nanos, id: u64, prio: Priority, deadline: Option<Nanos>) -> bool {
        let now = self.tick(now);
        if self.items.len() >= self.cfg.capacity as usize {
            self.stats.rejected_full += 1;
            return false;
        }
        if self.items.is_empty() {
            self.since = now;
        }
        self.seq += 1;
        self.items.push(MW {
            seq: self.seq,
            id,
            prio,
            enq: now,
            deadline: deadline.filter(|d| *d != Nanos::MAX),
        });
        self.stats.enqueued += 1;
        true
    }
    fn age_drops(&mut self, now: Nanos, out: &mut Vec<(u64, DropReason)>) {
        let target = self.cfg.target;
        let aged = self.take_where(|w| now.saturating_sub(w.enq) > target);
        self.stats.dropped_age_limit += aged.len() as u64;
        out.extend(aged.iter().map(|w| (w.id, DropReason::AgeLimit)));
    }
    fn pop(&mut self, now: Nanos) -> (Option<(u64, ServeOrder)>, Drops) {
        let now = self.tick(now);
        let mut out = Vec::new();
        if self.items.is_empty() {
            return (None, out);
        }
        let standing = self.standing(now);
        if standing && self.cfg.codel {
            self.age_drops(now, &mut out);
        }
        let lifo = standing && self.cfg.lifo;
        loop {
            let Some(k) = self.items.iter().map(|w| self.key(w)).min() else {
                return (None, out);
            };
            let cands = self
                .items
                .iter()
                .enumerate()
                .filter(|(_, w)| self.key(w) == k);
            let (pos, _) = if lifo {
                cands.max_by_key(|(_, w)| w.seq).unwrap()
            } else {
                cands.min_by_key(|(_, w)| w.seq).unwrap()
            };
            let w = self.items.remove(pos);
            if Self::expired(&w, now) {
                self.stats.dropped_deadline += 1;
                out.push((w.id, DropReason::Deadline));
                continue;
            }
            let order = if lifo {
                self.stats.served_lifo += 1;
                ServeOrder::Lifo
            } else {
                self.stats.served_fifo += 1;
                ServeOrder::Fifo
            };
            return (Some((w.id, order)), out);
        }
    }
    fn expire(&mut self, now: Nanos) -> Vec<(u64, DropReason)> {
        let now = self.tick(now);
        let mut out = Vec::new();
        if self.cfg.codel && self.standing(now) {
            self.age_drops(now, &mut out);
        }
        let gone = self.take_where(|w| Self::expired(w, now));
        self.stats.dropped_deadline += gone.len() as u64;
        out.extend(gone.iter().map(|w| (w.id, DropReason::Deadline)));
        out
    }
    fn remove(&mut self, id: u64) -> bool {
        let mut hits: Vec<MW> = self.items.iter().copied().filter(|w| w.id == id).collect();
        hits.sort_by_key(|w| (self.key(w), w.seq));
        let Some(first) = hits.first() else {
            return false;
        };
        let seq = first.seq;
        self.items.retain(|w| w.seq != seq);
        self.stats.cancelled += 1;
        true
    }
    fn oldest_age(&self, now: Nanos) -> Nanos {
        let now = self.clock.max(now);
        self.items
            .iter()
            .map(|w| now.saturating_sub(w.enq))
            .max()
            .unwrap_or(Nanos::ZERO)
    }
    fn len_by_priority(&self) -> [u32; MAX_PRIORITIES] {
        let mut a = [0u32; MAX_PRIORITIES];
        for w in &self.items {
            a[w.prio.index()] += 1;
        }
        a
    }
}

#[derive(Debug, Clone)]
enum Op {
    Push {
        dt: i64,
        id: u64,
        prio: u8,
        deadline: Option<u64>,
    },
    Pop {
        dt: i64,
    },
    Expire {
        dt: i64,
    },
    Remove {
        id: u64,
    },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    // Time steps in units of 500 µs (coarse, so that ages equal to the target and
    // deadlines equal to now happen often), mostly forward, sometimes backward (the
    // queue's clock must not follow).
    let dt = prop_oneof![8 => 0i64..60, 1 => -10i64..0];
    prop_oneof![
        4 => (dt.clone(), 0u64..40, 0u8..4, proptest::option::of(0u64..240))
            .prop_map(|(dt, id, prio, deadline)| Op::Push { dt, id, prio, deadline }),
        3 => dt.clone().prop_map(|dt| Op::Pop { dt }),
        1 => dt.prop_map(|dt| Op::Expire { dt }),
        1 => (0u64..40).prop_map(|id| Op::Remove { id }),
    ]
}

/// `u` units of 500 µs.
fn unit(u: u64) -> Nanos {
    Nanos::from_micros(u * 500)
}

fn config_strategy() -> impl Strategy<Value = QueueDisciplineConfig> {
    // Interval 0, 1 ms, 10 ms or 100 ms; target anywhere in 0..=interval (500 µs units).
    (
        1u32..=8,
        prop_oneof![Just(0u64), Just(2), Just(20), Just(200)],
    )
        .prop_flat_map(|(capacity, interval_u)| {
            (
                Just(capacity),
                Just(interval_u),
                0..=interval_u,
                any::<bool>(),
                any::<bool>(),
                any::<bool>(),
            )
        })
        .prop_map(
            |(capacity, interval_u, target_u, lifo, codel, priority)| QueueDisciplineConfig {
                capacity,
                interval: unit(interval_u),
                target: unit(target_u),
                lifo,
                codel,
                priority,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn matches_reference_model(cfg in config_strategy(), ops in proptest::collection::vec(op_strategy(), 1..80)) {
        let mut q: QueueDiscipline<8> = QueueDiscipline::new(cfg).unwrap();
        let mut m = Model::new(cfg);
        let mut now: i64 = 100;
        for op in &ops {
            let step = |now: &mut i64, dt: i64| { *now = (*now + dt).max(0); unit(*now as u64) };
            let t;
            match *op {
                Op::Push { dt, id, prio, deadline } => {
                    t = step(&mut now, dt);
                    let p = Priority::new(prio).unwrap();
                    let dl = deadline.map(|d| unit(now as u64 + d).saturating_sub(ms(20)));
                    let got = q.push(t, id, p, dl).is_ok();
                    prop_assert_eq!(got, m.push(t, id, p, dl), "push {:?}", op);
                }
                Op::Pop { dt } => {
                    t = step(&mut now, dt);
                    let got = q.pop(t).map(|d| (d.waiter.id, d.order));
                    let (want, want_drops) = m.pop(t);
                    prop_assert_eq!(got, want, "pop {:?}", op);
                    prop_assert_eq!(drops(&q), want_drops, "pop drops {:?}", op);
                }
                Op::Expire { dt } => {
                    t = step(&mut now, dt);
                    let n = q.expire(t);
                    let want = m.expire(t);
                    prop_assert_eq!(n as usize, want.len());
                    prop_assert_eq!(drops(&q), want, "expire {:?}", op);
                }
                Op::Remove { id } => {
                    t = unit(now as u64);
                    prop_assert_eq!(q.remove(id).is_some(), m.remove(id), "remove {:?}", op);
                }
            }
            prop_assert_eq!(q.len() as usize, m.items.len());
            prop_assert_eq!(q.len_by_priority(), m.len_by_priority());
            prop_assert_eq!(q.is_standing(t), m.standing(m.clock.max(t)));
            prop_assert_eq!(q.oldest_age(t), m.oldest_age(t));
            prop_assert_eq!(q.stats(), m.stats);
            prop_assert!(conserved(&q));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Long random runs: no waiter lost or duplicated
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Queued,
    Served,
    Dropped,
    Removed,
}

fn random_run<const N: usize>(cfg: QueueDisciplineConfig, seed: u64, steps: u64) {
    let rng = Rng::new(seed);
    let mut q: QueueDiscipline<N> = QueueDiscipline::new(cfg).unwrap();
    let mut fate: HashMap<u64, Fate> = HashMap::new();
    let mut next_id = 0u64;
    let mut now = 0u64;
    let settle = |fate: &mut HashMap<u64, Fate>, id: u64, to: Fate| {
        let f = fate.get_mut(&id).expect("unknown id came out of the queue");
        assert_eq!(*f, Fate::Queued, "id {id} came out twice");
        *f = to;
    };
    for _ in 0..steps {
        now += rng.below(2_000_000); // up to 2 ms per step
        let t = Nanos(now);
        match rng.below(10) {
            0..=4 => {
                let p = Priority::new(rng.below(MAX_PRIORITIES as u64) as u8).unwrap();
                let dl = match rng.below(3) {
                    0 => None,
                    _ => Some(Nanos(now + rng.below(50_000_000))),
                };
                if q.push(t, next_id, p, dl).is_ok() {
                    fate.insert(next_id, Fate::Queued);
                }
                next_id += 1;
            }
            5..=7 => {
                let before = q.len();
                let d = q.pop(t);
                let dropped: Vec<u64> = q.dropped().iter().map(|d| d.waiter.id).collect();
                for id in &dropped {
                    settle(&mut fate, *id, Fate::Dropped);
                }
                if let Some(d) = d {
                    settle(&mut fate, d.waiter.id, Fate::Served);
                    assert!(!d.waiter.is_expired(t));
                }
                let out = dropped.len() as u32 + u32::from(d.is_some());
                assert_eq!(q.len() + out, before);
                // After a standing pop with the age limit on, nobody left is too old.
                if cfg.codel && q.is_standing(t) {
                    assert!(q.oldest_age(t) <= cfg.target);
                }
            }
            8 => {
                let n = q.expire(t);
                assert_eq!(n as usize, q.dropped().len());
                for d in q.dropped() {
                    settle(&mut fate, d.waiter.id, Fate::Dropped);
                    assert!(d.reason == DropReason::AgeLimit || d.waiter.is_expired(t));
                }
            }
            _ => {
                // Cancel a recent id (may already be gone).
                let id = next_id.saturating_sub(1 + rng.below(20));
                let queued = fate.get(&id) == Some(&Fate::Queued);
                let got = q.remove(id);
                assert_eq!(got.is_some(), queued);
                if got.is_some() {
                    settle(&mut fate, id, Fate::Removed);
                }
            }
        }
        assert!(q.len() <= cfg.capacity);
        assert_eq!(q.len_by_priority().iter().sum::<u32>(), q.len());
    }
    let count = |f: Fate| fate.values().filter(|&&x| x == f).count() as u64;
    let s = q.stats();
    assert_eq!(count(Fate::Queued), u64::from(q.len()));
    assert_eq!(count(Fate::Served), s.served_fifo + s.served_lifo);
    assert_eq!(
        count(Fate::Dropped),
        s.dropped_age_limit + s.dropped_deadline
    );
    assert_eq!(count(Fate::Removed), s.cancelled);
    assert_eq!(fate.len() as u64, s.enqueued);
    assert_eq!(next_id, s.enqueued + s.rejected_full);
    assert!(conserved(&q));
    // Drain: every queued id comes out exactly once.
    while q.pop(Nanos(now)).is_some() || !q.dropped().is_empty() {}
    assert!(q.is_empty());
}

#[test]
fn long_random_runs_lose_and_duplicate_nobody() {
    random_run::<128>(QueueDisciplineConfig::default(), 1, 60_000);
    random_run::<16>(
        QueueDisciplineConfig {
            capacity: 16,
            ..QueueDisciplineConfig::default()
        },
        2,
        60_000,
    );
    random_run::<64>(
        QueueDisciplineConfig {
            capacity: 40,
            interval: ms(10),
            target: ms(1),
            priority: false,
            ..QueueDisciplineConfig::default()
        },
        3,
        60_000,
    );
    random_run::<32>(
        QueueDisciplineConfig {
            capacity: 32,
            lifo: false,
            codel: false,
            ..QueueDisciplineConfig::default()
        },
        4,
        30_000,
    );
}

#[test]
fn shared_behind_a_mutex_by_two_threads_loses_nobody() {
    let q: Arc<Mutex<QueueDiscipline>> = Arc::new(Mutex::new(c5()));
    let threads: Vec<_> = (0..2u64)
        .map(|th| {
            let q = Arc::clone(&q);
            std::thread::spawn(move || {
                let mut out = Vec::new();
                for i in 0..5_000u64 {
                    let now = Nanos::from_micros(i * 10);
                    let mut g = q.lock().unwrap();
                    let _ = g.push(now, th * 1_000_000 + i, VIEW, None);
                    if i % 2 == 1 {
                        if let Some(d) = g.pop(now) {
                            out.push(d.waiter.id);
                        }
                        out.extend(g.dropped().iter().map(|d| d.waiter.id));
                    }
                }
                out
            })
        })
        .collect();
    let mut seen: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let q = q.lock().unwrap();
    let n_out = seen.len();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), n_out, "an id came out twice");
    let s = q.stats();
    assert_eq!(s.enqueued, n_out as u64 + u64::from(q.len()) + s.cancelled);
    assert!(conserved(&q));
}
