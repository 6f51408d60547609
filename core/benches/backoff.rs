//! Benchmarks for `backoff` beside the atomic baseline: a full-jitter draw from one shared
//! `Rng` (one `fetch_add` plus integer math) and a stable offset (FNV-1a over a short id).
mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use guards_core::backoff::{stable_offset, Backoff, BackoffConfig, Jitter};
use guards_core::{Nanos, Rng};

fn baseline(c: &mut Criterion) {
    common::baseline(c, "backoff");
}

fn full_jitter() -> Backoff {
    Backoff::new(BackoffConfig {
        base: Nanos::from_millis(25),
        cap: Nanos::from_secs(20),
        multiplier: 2.0,
        jitter: Jitter::Full,
    })
    .expect("valid config")
}

fn backoff(c: &mut Criterion) {
    let mut g = c.benchmark_group("backoff");
    let b = full_jitter();
    let rng = Rng::new(1);
    g.bench_function("delay_full/1t", |bench| {
        let mut n = 0u32;
        bench.iter(|| {
            n = (n + 1) & 7;
            black_box(b.delay(black_box(n), Nanos::ZERO, &rng))
        })
    });
    g.bench_function("delay_full/2t", |bench| {
        bench.iter_custom(|iters| {
            let rng = Arc::new(Rng::new(1));
            common::two_threads(iters, move |i| {
                black_box(b.delay(black_box((i & 7) as u32), Nanos::ZERO, &rng));
            })
        })
    });
    let period = Nanos::from_secs(60);
    g.bench_function("stable_offset/1t", |bench| {
        bench.iter(|| black_box(stable_offset(black_box(b"warehouse-agent-0017"), period)))
    });
    g.bench_function("stable_offset/2t", |bench| {
        bench.iter_custom(|iters| {
            common::two_threads(iters, move |_| {
                black_box(stable_offset(black_box(b"warehouse-agent-0017"), period));
            })
        })
    });
    g.finish();
}

criterion::criterion_group!(benches, baseline, backoff);
criterion::criterion_main!(benches);
