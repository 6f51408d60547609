//! Benchmarks for `latency_tracker` beside the atomic baseline: record on one and two
//! threads, and a quantile read (a scan of the whole ring).
mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use guards_core::latency_tracker::{LatencyTracker, LatencyTrackerConfig};
use guards_core::Nanos;

fn baseline(c: &mut Criterion) {
    common::baseline(c, "latency_tracker");
}

fn tracker() -> Arc<LatencyTracker> {
    Arc::new(LatencyTracker::new(LatencyTrackerConfig::default()).expect("default config"))
}

/// Time advances 1 µs per call; latencies spread over 0..50 ms.
fn sample(i: u64) -> (Nanos, Nanos) {
    (
        Nanos(i.wrapping_mul(1_000)),
        Nanos(i.wrapping_mul(7_919) % 50_000_000),
    )
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("latency_tracker");
    let t = tracker();
    let mut i = 0u64;
    g.bench_function("record/1t", |b| {
        b.iter(|| {
            i += 1;
            let (now, latency) = sample(i);
            t.record(black_box(now), black_box(latency));
        })
    });
    g.bench_function("record/2t", |b| {
        b.iter_custom(|iters| {
            let t = tracker();
            common::two_threads(iters, move |i| {
                let (now, latency) = sample(i);
                t.record(black_box(now), black_box(latency));
            })
        })
    });
    // A full ring: 6 windows of samples.
    let full = tracker();
    for i in 0..600_000u64 {
        let (now, latency) = sample(i * 100);
        full.record(now, latency);
    }
    let end = Nanos::from_secs(59);
    g.bench_function("quantile/1t", |b| {
        b.iter(|| black_box(full.quantile(black_box(end), black_box(0.99))))
    });
    g.bench_function("quantile/2t", |b| {
        let full = Arc::clone(&full);
        b.iter_custom(move |iters| {
            let full = Arc::clone(&full);
            common::two_threads(iters, move |_| {
                black_box(full.quantile(black_box(end), black_box(0.99)));
            })
        })
    });
    g.finish();
}

criterion::criterion_group!(group, baseline, benches);
criterion::criterion_main!(group);
