//! Benchmarks for `deadline` beside the atomic baseline: the per-attempt budget, and the
//! `grpc-timeout` encode and parse. All are pure value computations, so the two-thread
//! numbers show the absence of shared state.
mod common;

use std::hint::black_box;

use criterion::Criterion;
use guards_core::deadline::{encode_grpc_timeout, parse_grpc_timeout, Deadline, DeadlineConfig};
use guards_core::Nanos;

fn baseline(c: &mut Criterion) {
    common::baseline(c, "deadline");
}

fn deadline(c: &mut Criterion) {
    let mut g = c.benchmark_group("deadline");
    let cfg = DeadlineConfig::default();
    let request = Deadline::after(Nanos::from_secs(100), Nanos::from_secs(2));
    let now = |i: u64| Nanos::from_secs(100).saturating_add(Nanos((i & 0xffff) * 40_000));
    g.bench_function("attempt_budget/1t", |b| {
        let mut i = 0u64;
        b.iter(|| {
            i += 1;
            black_box(cfg.attempt_budget(black_box(request), now(i)))
        })
    });
    g.bench_function("attempt_budget/2t", |b| {
        b.iter_custom(|iters| {
            common::two_threads(iters, move |i| {
                black_box(cfg.attempt_budget(black_box(request), now(i)));
            })
        })
    });
    let timeout = |i: u64| Nanos(59_000_000 + (i & 0xff) * 1_000_003);
    g.bench_function("grpc_encode/1t", |b| {
        let mut i = 0u64;
        b.iter(|| {
            i += 1;
            black_box(encode_grpc_timeout(black_box(timeout(i))))
        })
    });
    g.bench_function("grpc_encode/2t", |b| {
        b.iter_custom(|iters| {
            common::two_threads(iters, move |i| {
                black_box(encode_grpc_timeout(black_box(timeout(i))));
            })
        })
    });
    let values = ["59000000n", "100000u", "1500m", "30S", "2M", "1H"];
    g.bench_function("grpc_parse/1t", |b| {
        let mut i = 0usize;
        b.iter(|| {
            i = (i + 1) % values.len();
            black_box(parse_grpc_timeout(black_box(values[i])))
        })
    });
    g.bench_function("grpc_parse/2t", |b| {
        b.iter_custom(|iters| {
            common::two_threads(iters, move |i| {
                let _ = black_box(parse_grpc_timeout(black_box(values[(i % 6) as usize])));
            })
        })
    });
    g.finish();
}

criterion::criterion_group!(benches, baseline, deadline);
criterion::criterion_main!(benches);
