//! Benchmark for `cache::CachePadded`'s alignment: two threads each increment their *own*
//! counter, placed 8, 64 or 128 bytes apart in one 256-byte-aligned block. At 8 bytes they
//! share a cache line (false sharing); at 64 they sit on adjacent lines of one 128-byte pair
//! (what an adjacent-line prefetcher fetches together); at 128 they are in different pairs
//! (what `CachePadded` guarantees on x86_64 and aarch64). The baseline is the usual shared
//! `fetch_add`, measured in the same run.
mod common;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::Criterion;

fn baseline(c: &mut Criterion) {
    common::baseline(c, "cache");
}

#[repr(C, align(256))]
struct Block([AtomicU64; 32]);

/// The main thread increments word 0, another thread word `gap / 8`, `iters` times each;
/// returns the main thread's time.
fn apart(iters: u64, gap: usize) -> Duration {
    let block = Arc::new(Block(std::array::from_fn(|_| AtomicU64::new(0))));
    let barrier = Arc::new(Barrier::new(2));
    let other = {
        let block = Arc::clone(&block);
        let barrier = Arc::clone(&barrier);
        std::thread::spawn(move || {
            let word = &block.0[gap / 8];
            barrier.wait();
            for _ in 0..iters {
                black_box(word.fetch_add(1, Ordering::Relaxed));
            }
        })
    };
    let word = &block.0[0];
    barrier.wait();
    let start = Instant::now();
    for _ in 0..iters {
        black_box(word.fetch_add(1, Ordering::Relaxed));
    }
    let mine = start.elapsed();
    other.join().expect("bench thread panicked");
    mine
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("cache");
    for gap in [8usize, 64, 128] {
        g.bench_function(format!("own_counter_{gap}_bytes_apart/2t"), |b| {
            b.iter_custom(|iters| apart(iters, gap))
        });
    }
    g.finish();
}

criterion::criterion_group!(all, baseline, benches);
criterion::criterion_main!(all);
