//! Benchmarks for `adaptive_throttle` beside the atomic baseline: the decision on one and
//! two threads, on a healthy backend (p = 0, no draw) and while throttling (p > 0).
mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use guards_core::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
use guards_core::Nanos;

fn baseline(c: &mut Criterion) {
    common::baseline(c, "adaptive_throttle");
}

fn throttle() -> Arc<AdaptiveThrottle> {
    Arc::new(AdaptiveThrottle::new(AdaptiveThrottleConfig::default()).expect("default config"))
}

/// Decide at 1 µs steps; report an accept for every admitted request when `healthy`,
/// for every fourth one otherwise (p settles near 0.5).
fn step(t: &AdaptiveThrottle, i: u64, healthy: bool) {
    let now = Nanos(i.wrapping_mul(1_000));
    if !t.should_reject(black_box(now)) && (healthy || i % 4 == 0) {
        t.on_accepted(now);
    }
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("adaptive_throttle");
    for (name, healthy) in [("should_reject", true), ("should_reject_throttling", false)] {
        let t = throttle();
        let mut i = 0u64;
        g.bench_function(format!("{name}/1t"), |b| {
            b.iter(|| {
                i += 1;
                step(&t, i, healthy);
            })
        });
        g.bench_function(format!("{name}/2t"), |b| {
            b.iter_custom(|iters| {
                let t = throttle();
                common::two_threads(iters, move |i| step(&t, i, healthy))
            })
        });
    }
    g.finish();
}

criterion::criterion_group!(group, baseline, benches);
criterion::criterion_main!(group);
