//! Benchmarks for `limiter` beside the atomic baseline: one `try_acquire` plus one
//! `on_success`, on one thread and on two threads sharing one limiter.
//!
//! The limiter runs its default configuration (Vegas, 100 ms windows of at least 10
//! samples) with virtual time advancing 1 µs per operation and 5 µs per call, so a window
//! is folded every 100,000 operations: the measured cost includes the amortized fold.
mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use guards_core::limiter::{Limiter, LimiterConfig};
use guards_core::{Nanos, Priority};

fn baseline(c: &mut Criterion) {
    common::baseline(c, "limiter");
}

fn acquire_release(limiter: &Limiter, i: u64) {
    let now = Nanos(i.wrapping_mul(1_000));
    if let Ok(permit) = limiter.try_acquire(now, Priority::CRITICAL) {
        limiter.on_success(black_box(permit), now.saturating_add(Nanos(5_000)));
    }
}

fn limiter(c: &mut Criterion) {
    let mut g = c.benchmark_group("limiter");
    let shared = Limiter::new(LimiterConfig::default()).expect("valid config");
    let mut i = 0u64;
    g.bench_function("acquire_release/1t", |b| {
        b.iter(|| {
            i += 1;
            acquire_release(&shared, i);
        })
    });
    g.bench_function("acquire_release/2t", |b| {
        b.iter_custom(|iters| {
            let limiter = Arc::new(Limiter::new(LimiterConfig::default()).expect("valid config"));
            common::two_threads(iters, move |i| acquire_release(&limiter, i))
        })
    });
    g.finish();
}

criterion::criterion_group!(benches, baseline, limiter);
criterion::criterion_main!(benches);
