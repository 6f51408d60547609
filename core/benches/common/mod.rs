//! Shared benchmark helpers: the atomic baseline every guard is compared with, and a
//! two-thread contention harness. Every bench binary registers [`baseline`] so that its
//! ratios come from one run on one (noisy) machine.
//!
//! Conventions: a guard's benches live in criterion group `<guard>` with ids
//! `<operation>/1t` (one thread) and `<operation>/2t` (two threads on one shared guard,
//! via [`two_threads`]).
#![allow(dead_code)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::Criterion;

/// Run `op` `iters` times on each of two threads at once, both hammering the same shared
/// state, and return the wall time divided so that criterion reports nanoseconds per
/// operation per thread.
pub fn two_threads<F>(iters: u64, op: F) -> Duration
where
    F: Fn(u64) + Send + Sync + 'static,
{
    let op = Arc::new(op);
    let barrier = Arc::new(Barrier::new(2));
    let other = {
        let op = Arc::clone(&op);
        let barrier = Arc::clone(&barrier);
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
    // Both threads ran concurrently; the main thread's time per op is what a caller sees.
    mine
}

/// The baseline: one `AtomicU64::fetch_add`, on one thread and on two threads sharing it,
/// measured in the same binary (and so the same run) as `guard`'s benches. It is stored as
/// criterion group `<guard>.baseline`; `scripts/bench_report.py` divides by it.
pub fn baseline(c: &mut Criterion, guard: &str) {
    let mut g = c.benchmark_group(format!("{guard}.baseline"));
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
