//! Benchmarks for `admission` beside the atomic baseline (placeholder until the guard lands).
mod common;

fn baseline(c: &mut criterion::Criterion) {
    common::baseline(c, "admission");
}

criterion::criterion_group!(benches, baseline);
criterion::criterion_main!(benches);
