//! Benchmarks for `adaptive_throttle` beside the atomic baseline (placeholder until the guard lands).
mod common;

fn baseline(c: &mut criterion::Criterion) {
    common::baseline(c, "adaptive_throttle");
}

criterion::criterion_group!(benches, baseline);
criterion::criterion_main!(benches);
