//! Benchmarks for `hedging` beside the atomic baseline: the hedge decision (cached delay,
//! recomputed every 100 ms of virtual time) on one and two threads.
mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use guards_core::hedging::{Hedging, HedgingConfig};
use guards_core::Nanos;

fn baseline(c: &mut Criterion) {
    common::baseline(c, "hedging");
}

fn policy() -> Arc<Hedging> {
    let h = Hedging::new(HedgingConfig::default()).expect("default config");
    for i in 0..10_000u64 {
        h.record_latency(
            Nanos(i * 1_000),
            Nanos(1_000_000 + (i * 7_919) % 20_000_000),
        );
    }
    Arc::new(h)
}

/// Time advances 1 µs per call; requests are 0..20 ms old, so some wait and some hedge.
fn decide(h: &Hedging, i: u64) {
    let now = Nanos(10_000_000 + i.wrapping_mul(1_000));
    let started = now.saturating_sub(Nanos((i * 7_919) % 20_000_000));
    let _ = black_box(h.should_hedge(black_box(now), started, 0, true, None));
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("hedging");
    let h = policy();
    let mut i = 0u64;
    g.bench_function("should_hedge/1t", |b| {
        b.iter(|| {
            i += 1;
            decide(&h, i);
        })
    });
    g.bench_function("should_hedge/2t", |b| {
        b.iter_custom(|iters| {
            let h = policy();
            common::two_threads(iters, move |i| decide(&h, i))
        })
    });
    g.finish();
}

criterion::criterion_group!(group, baseline, benches);
criterion::criterion_main!(group);
