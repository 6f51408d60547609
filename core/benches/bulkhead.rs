//! Benchmarks for `bulkhead` beside the atomic baseline: acquire + release (the CAS loop
//! and the release CAS) and the refusal path, on one thread and on two threads sharing one
//! bulkhead.
mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use guards_core::bulkhead::{Bulkhead, BulkheadConfig};

fn baseline(c: &mut Criterion) {
    common::baseline(c, "bulkhead");
}

fn bulkhead(max_concurrent: u64) -> Bulkhead {
    Bulkhead::new(BulkheadConfig { max_concurrent }).unwrap()
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("bulkhead");
    g.bench_function("acquire_release/1t", |b| {
        let bh = bulkhead(12);
        b.iter(|| {
            if let Ok(p) = bh.try_acquire() {
                bh.release(p);
            }
        })
    });
    g.bench_function("acquire_release/2t", |b| {
        b.iter_custom(|iters| {
            let bh = Arc::new(bulkhead(12));
            common::two_threads(iters, move |_| {
                if let Ok(p) = bh.try_acquire() {
                    bh.release(p);
                }
            })
        })
    });
    g.bench_function("try_acquire_scoped/1t", |b| {
        let bh = bulkhead(12);
        b.iter(|| {
            black_box(bh.try_acquire_scoped().is_ok());
        })
    });
    g.bench_function("reject_full/1t", |b| {
        let bh = bulkhead(1);
        let held = bh.try_acquire().unwrap();
        b.iter(|| black_box(bh.try_acquire().is_err()));
        bh.release(held);
    });
    g.bench_function("reject_full/2t", |b| {
        b.iter_custom(|iters| {
            let bh = Arc::new(bulkhead(1));
            let held = bh.try_acquire().unwrap();
            let shared = Arc::clone(&bh);
            let t = common::two_threads(iters, move |_| {
                black_box(shared.try_acquire().is_err());
            });
            bh.release(held);
            t
        })
    });
    g.finish();
}

criterion::criterion_group!(all, baseline, benches);
criterion::criterion_main!(all);
