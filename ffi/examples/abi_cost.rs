//! Instruction counts of a guarded no-op, for a measurement that machine noise does not
//! move: run one variant `N` times under `valgrind --tool=callgrind` (or cachegrind) and
//! divide the counted instructions by `N` (set-up is the same for every variant and small).
//!
//! `cargo build --release -p guards-ffi --example abi_cost`, then for each variant
//! `valgrind --tool=cachegrind --cache-sim=no target/release/examples/abi_cost VARIANT N`
//! with VARIANT one of `none`, `breaker_core`, `breaker_c`, `bulkhead_core`, `bulkhead_c`.
//! The figures are in docs/benchmarks.md ("C ABI").

use std::hint::black_box;

use guards::c::bulkhead::*;
use guards::c::circuit_breaker::*;
use guards::c::{guards_outcome, guards_permit};
use guards_core::bulkhead::{Bulkhead, BulkheadConfig};
use guards_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use guards_core::Nanos;

const NOW: u64 = 1_000_000_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let variant = args.get(1).map(String::as_str).unwrap_or("none");
    let n: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let core_b = CircuitBreaker::<128>::new(CircuitBreakerConfig::default()).unwrap();
    let core_k = Bulkhead::new(BulkheadConfig { max_concurrent: 64 }).unwrap();
    let cfg = guards_circuit_breaker_config::of_defaults();
    let mut b = std::ptr::null_mut();
    let mut h = std::ptr::null_mut();
    // SAFETY: valid pointers; the handles are freed once at the end.
    unsafe {
        guards_circuit_breaker_new(&cfg, &mut b);
        guards_bulkhead_new(&guards_bulkhead_config { max_concurrent: 64 }, &mut h);
    }
    for _ in 0..n {
        match variant {
            "breaker_core" => {
                let p = core_b.try_acquire(black_box(Nanos(NOW))).unwrap();
                black_box(core_b.on_success(p, Nanos(NOW)));
            }
            "breaker_c" => {
                let mut p = guards_permit::default();
                // SAFETY: live handle, valid out pointer.
                unsafe {
                    black_box(guards_circuit_breaker_try_acquire(
                        b,
                        black_box(NOW),
                        &mut p,
                    ));
                    black_box(guards_circuit_breaker_report(
                        b,
                        p,
                        guards_outcome::Success as u32,
                        NOW,
                    ));
                }
            }
            "bulkhead_core" => {
                let p = core_k.try_acquire().unwrap();
                core_k.release(black_box(p));
            }
            "bulkhead_c" => {
                let mut p = guards_permit::default();
                // SAFETY: live handle, valid out pointer.
                unsafe {
                    black_box(guards_bulkhead_try_acquire(h, &mut p));
                    black_box(guards_bulkhead_release(h, p));
                }
            }
            _ => {
                black_box(());
            }
        }
    }
    // SAFETY: from `_new`, freed once.
    unsafe {
        guards_circuit_breaker_free(b);
        guards_bulkhead_free(h);
    }
}
