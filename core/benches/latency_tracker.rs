//! Benchmarks for `latency_tracker` beside the atomic baseline (placeholder until the guard lands).
mod common;

fn baseline(c: &mut criterion::Criterion) {
    common::baseline(c, "latency_tracker");
}

criterion::criterion_group!(benches, baseline);
criterion::criterion_main!(benches);
