//! Shared benchmark helpers (the same conventions as core's benches, so
//! `scripts/bench_report.py` reads these results too): the atomic baseline of the same run
//! and a two-thread harness.
#![allow(dead_code)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::Criterion;

/// Run `op` `iters` times on each of two threads at once and return the main thread's
/// time (criterion divides it by `iters`: ns per operation per thread).
pub fn two_threads<F>(iters: u64, op: F) -> Duration
where
    F: Fn(u64) + Send + Sync + 'static,
{
    let op = Arc::new(op);
    let barrier = Arc::new(Barrier::new(2));
    let other = {
        let (op, barrier) = (Arc::clone(&op), Arc::clone(&barrier));
        std::thread::spawn(move || {
            barrier.wait();
            for i in 0..iters {
                op(i);
            }
        })
    };
    barrier.wait();
    let start = Instant::now();
    for i in 0..iters {
        op(i);
    }
    let mine = start.elapsed();
    other.join().expect("bench thread panicked");
    mine
}

/// One `AtomicU64::fetch_add` on 1 and 2 threads, as group `<group>.baseline`.
pub fn baseline(c: &mut Criterion, group: &str) {
    let mut g = c.benchmark_group(format!("{group}.baseline"));
    let a = AtomicU64::new(0);
    g.bench_function("fetch_add/1t", |b| {
        b.iter(|| black_box(a.fetch_add(1, Ordering::Relaxed)))
    });
    g.bench_function("fetch_add/2t", |b| {
        b.iter_custom(|iters| {
            let shared = Arc::new(AtomicU64::new(0));
            two_threads(iters, move |_| {
                black_box(shared.fetch_add(1, Ordering::Relaxed));
            })
        })
    });
    g.finish();
}
