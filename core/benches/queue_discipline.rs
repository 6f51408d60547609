//! Benchmarks for `queue_discipline` beside the atomic baseline.
//!
//! The queue takes `&mut self` (one consumer owns it), so the `2t` variants share one queue
//! between two threads behind a `std::sync::Mutex`, the way the simulator and the bindings
//! share it; they measure the lock as much as the queue.
//!
//! - `push_pop`: one push and one pop on a queue holding 32 waiters of four classes, not
//!   standing (FIFO), no drops: the steady state of a busy but healthy queue.
//! - `push_pop_lifo`: the same with the queue standing (interval 0): the age check runs on
//!   every pop (nobody is old enough to drop) and picks are LIFO.
//! - `pop_drop32`: one pop that drops 32 waiters for age (filling the queue is not timed).
//! - `push32_pop_drop32`: 32 pushes and the pop that drops them all, timed together.
mod common;

use std::hint::black_box;
use std::sync::{Arc, Mutex};

use criterion::{BatchSize, Criterion};
use guards_core::queue_discipline::{QueueDiscipline, QueueDisciplineConfig};
use guards_core::{Nanos, Priority};

const DEPTH: u64 = 32;

fn prio(i: u64) -> Priority {
    Priority::new((i % 4) as u8).unwrap_or_default()
}

fn filled(cfg: QueueDisciplineConfig, now: Nanos) -> QueueDiscipline {
    let mut q = QueueDiscipline::new(cfg).expect("valid config");
    for i in 0..DEPTH {
        q.push(now, i, prio(i), None).expect("room");
    }
    q
}

fn standing_cfg() -> QueueDisciplineConfig {
    QueueDisciplineConfig {
        interval: Nanos::ZERO,
        target: Nanos::ZERO,
        ..QueueDisciplineConfig::default()
    }
}

fn push_pop(q: &mut QueueDiscipline, i: u64) {
    let now = Nanos::ZERO;
    let _ = black_box(q.push(now, i, prio(i), Some(Nanos::MAX)));
    black_box(q.pop(now));
}

fn push32_pop_drop32(q: &mut QueueDiscipline, i: u64) {
    // Each round starts 1 s after the previous one: the queue has emptied, the pushes
    // restart the standing clock, and the pop 200 ms later finds all 32 too old.
    let t0 = Nanos::from_secs(i);
    for k in 0..DEPTH {
        let _ = q.push(t0, k, prio(k), None);
    }
    black_box(q.pop(t0.saturating_add(Nanos::from_millis(200))));
    debug_assert_eq!(q.dropped().len() as u64, DEPTH);
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("queue_discipline");

    for (name, cfg) in [
        ("push_pop", QueueDisciplineConfig::default()),
        ("push_pop_lifo", standing_cfg()),
    ] {
        g.bench_function(format!("{name}/1t"), |b| {
            let mut q = filled(cfg, Nanos::ZERO);
            let mut i = DEPTH;
            b.iter(|| {
                i = i.wrapping_add(1);
                push_pop(&mut q, i);
            })
        });
        g.bench_function(format!("{name}/2t"), |b| {
            b.iter_custom(|iters| {
                let q = Arc::new(Mutex::new(filled(cfg, Nanos::ZERO)));
                common::two_threads(iters, move |i| {
                    let mut q = q.lock().expect("not poisoned");
                    push_pop(&mut q, i);
                })
            })
        });
    }

    g.bench_function("pop_drop32/1t", |b| {
        b.iter_batched_ref(
            || filled(QueueDisciplineConfig::default(), Nanos::ZERO),
            |q| {
                black_box(q.pop(Nanos::from_millis(200)));
                debug_assert_eq!(q.dropped().len() as u64, DEPTH);
            },
            BatchSize::SmallInput,
        )
    });

    g.bench_function("push32_pop_drop32/1t", |b| {
        let mut q: QueueDiscipline =
            QueueDiscipline::new(QueueDisciplineConfig::default()).expect("valid config");
        let mut i = 0u64;
        b.iter(|| {
            i = i.wrapping_add(1);
            push32_pop_drop32(&mut q, i);
        })
    });
    g.bench_function("push32_pop_drop32/2t", |b| {
        b.iter_custom(|iters| {
            let q: Arc<Mutex<QueueDiscipline>> = Arc::new(Mutex::new(
                QueueDiscipline::new(QueueDisciplineConfig::default()).expect("valid config"),
            ));
            // The two threads' rounds interleave on one clock: number them from the
            // queue's own count so that time keeps moving forward for both.
            common::two_threads(iters, move |_| {
                let mut q = q.lock().expect("not poisoned");
                let round = q.stats().enqueued / DEPTH + 1;
                push32_pop_drop32(&mut q, round);
            })
        })
    });
    g.finish();
}

fn baseline(c: &mut Criterion) {
    common::baseline(c, "queue_discipline");
}

criterion::criterion_group!(benches, baseline, bench);
criterion::criterion_main!(benches);
