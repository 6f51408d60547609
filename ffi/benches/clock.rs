//! The default clock beside its candidates, in one run (group `clock`, 1 thread):
//! - `clock_gettime`: `guards::clock::now_ns()`, CLOCK_MONOTONIC (what bindings use);
//! - `std_instant`: `std::time::Instant::now()` (the same clock through std);
//! - `quanta_now`: `quanta::Clock::now()`, the TSC scaled to nanoseconds;
//! - `quanta_raw`: `quanta::Clock::raw()`, the bare TSC read.
//!
//! Ratios to `clock_gettime` are in docs/benchmarks.md ("Clock"), with the TSC's
//! monotonicity across cores and its drift from CLOCK_MONOTONIC
//! (`cargo run --release -p guards-ffi --example clock_probe`).
mod common;

use std::hint::black_box;

use criterion::Criterion;

fn benches(c: &mut Criterion) {
    common::baseline(c, "clock");
    let q = quanta::Clock::new();
    let mut g = c.benchmark_group("clock");
    g.bench_function("clock_gettime/1t", |b| {
        b.iter(|| black_box(guards::clock::now_ns()))
    });
    g.bench_function("std_instant/1t", |b| {
        b.iter(|| black_box(std::time::Instant::now()))
    });
    g.bench_function("quanta_now/1t", |b| b.iter(|| black_box(q.now())));
    g.bench_function("quanta_raw/1t", |b| b.iter(|| black_box(q.raw())));
    g.finish();
}

criterion::criterion_group!(clock, benches);
criterion::criterion_main!(clock);
