//! Benchmarks for `hedging` beside the atomic baseline (placeholder until the guard lands).
mod common;

fn baseline(c: &mut criterion::Criterion) {
    common::baseline(c, "hedging");
}

criterion::criterion_group!(benches, baseline);
criterion::criterion_main!(benches);
