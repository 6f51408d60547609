//! Benchmarks for `retry_policy` beside the atomic baseline (placeholder until the guard lands).
mod common;

fn baseline(c: &mut criterion::Criterion) {
    common::baseline(c, "retry_policy");
}

criterion::criterion_group!(benches, baseline);
criterion::criterion_main!(benches);
