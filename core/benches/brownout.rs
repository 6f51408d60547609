//! Benchmarks for `brownout` beside the atomic baseline: the decision for one operation
//! and through a 16-operation table, on one and two threads.
mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use guards_core::brownout::{Brownout, BrownoutConfig, BrownoutTable, RefusalKind};

fn baseline(c: &mut Criterion) {
    common::baseline(c, "brownout");
}

fn optional() -> BrownoutConfig {
    BrownoutConfig {
        optional: true,
        ..BrownoutConfig::default()
    }
}

fn table() -> Arc<BrownoutTable> {
    let mut t = BrownoutTable::new();
    for key in 0..16 {
        t.register(key, optional()).expect("capacity 16");
    }
    Arc::new(t)
}

fn kind(i: u64) -> RefusalKind {
    RefusalKind::ALL[(i % 7) as usize]
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("brownout");
    let op = Arc::new(Brownout::new(optional()).expect("valid"));
    let mut i = 0u64;
    g.bench_function("on_refusal/1t", |b| {
        b.iter(|| {
            i += 1;
            black_box(op.on_refusal(black_box(kind(i))))
        })
    });
    g.bench_function("on_refusal/2t", |b| {
        b.iter_custom(|iters| {
            let op = Arc::new(Brownout::new(optional()).expect("valid"));
            common::two_threads(iters, move |i| {
                let _ = black_box(op.on_refusal(black_box(kind(i))));
            })
        })
    });
    let t = table();
    g.bench_function("table_on_refusal/1t", |b| {
        b.iter(|| {
            i += 1;
            black_box(t.on_refusal(black_box(i % 16), kind(i)))
        })
    });
    g.bench_function("table_on_refusal/2t", |b| {
        b.iter_custom(|iters| {
            let t = table();
            common::two_threads(iters, move |i| {
                let _ = black_box(t.on_refusal(black_box(i % 16), kind(i)));
            })
        })
    });
    g.finish();
}

criterion::criterion_group!(group, baseline, benches);
criterion::criterion_main!(group);
