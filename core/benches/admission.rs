//! Benchmarks for `admission` beside the atomic baseline: one `try_acquire` plus one
//! `on_success` at the door (Basketly's C5 limits of 64/80, no adaptive limit), on one thread
//! and on two threads sharing one door.
mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use guards_core::admission::{Admission, AdmissionConfig};
use guards_core::{Nanos, Priority};

fn baseline(c: &mut Criterion) {
    common::baseline(c, "admission");
}

fn admit_release(door: &Admission, i: u64) {
    let now = Nanos(i.wrapping_mul(1_000));
    let priority = if i % 8 == 0 {
        Priority::CRITICAL_PLUS
    } else {
        Priority::SHEDDABLE
    };
    if let Ok(ticket) = door.try_acquire(now, priority) {
        door.on_success(black_box(ticket), now.saturating_add(Nanos(5_000)));
    }
}

fn admission(c: &mut Criterion) {
    let mut g = c.benchmark_group("admission");
    let shared = Admission::new(AdmissionConfig::default()).expect("valid config");
    let mut i = 0u64;
    g.bench_function("admit_release/1t", |b| {
        b.iter(|| {
            i += 1;
            admit_release(&shared, i);
        })
    });
    g.bench_function("admit_release/2t", |b| {
        b.iter_custom(|iters| {
            let door = Arc::new(Admission::new(AdmissionConfig::default()).expect("valid config"));
            common::two_threads(iters, move |i| admit_release(&door, i))
        })
    });
    g.finish();
}

criterion::criterion_group!(benches, baseline, admission);
criterion::criterion_main!(benches);
