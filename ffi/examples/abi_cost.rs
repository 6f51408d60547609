//! A guarded no-op through core and through the C ABI, `N` times, for measurements that
//! need a plain loop rather than criterion:
//!
//! - instruction counts, which machine noise does not move: run one variant `N` and `2N`
//!   times under `valgrind --tool=cachegrind --cache-sim=no` and divide the difference of
//!   the counted instructions by `N` (set-up cancels out);
//! - CPU time on a shared, noisy machine: the least user time of a few runs of `N` calls
//!   (`/usr/bin/time -f %U`), divided by `N` (times the threads);
//! - where the time goes: `perf record` of one run.
//!
//! `cargo build --release -p guards-ffi --example abi_cost`, then
//! `target/release/examples/abi_cost VARIANT N [THREADS]` with VARIANT one of `none`,
//! `breaker_core`, `breaker_c`, `breaker_call`, `bulkhead_core`, `bulkhead_c`,
//! `bulkhead_call` (`*_call`: `guards_<guard>_call` running a C no-op); `THREADS` (default 1)
//! threads each make `N` calls on the one shared guard. The figures are in
//! docs/benchmarks.md ("C ABI").

use std::hint::black_box;
use std::sync::Arc;

use std::ffi::c_void;

use guards::c::bulkhead::*;
use guards::c::call::guards_call;
use guards::c::circuit_breaker::*;
use guards::c::{guards_outcome, guards_permit};
use guards_core::bulkhead::{Bulkhead, BulkheadConfig};
use guards_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use guards_core::Nanos;

const NOW: u64 = 1_000_000_000;

/// The guards every variant uses, shared by the threads.
struct Guards {
    core_b: CircuitBreaker<128>,
    core_k: Bulkhead,
    b: *mut guards_circuit_breaker,
    h: *mut guards_bulkhead,
}

// SAFETY: the C handles are thread-safe (lock-free guards and permit tables), and the
// pointers stay valid until `main` frees them after every thread has joined.
unsafe impl Send for Guards {}
// SAFETY: as above.
unsafe impl Sync for Guards {}

/// The no-op call `*_call` runs: a success.
unsafe extern "C" fn noop(_ctx: *mut c_void, _call: *mut guards_call) -> u32 {
    guards_outcome::Success as u32
}

fn run(g: &Guards, variant: &str, n: u64) {
    for _ in 0..n {
        match variant {
            "breaker_core" => {
                let p = g.core_b.try_acquire(black_box(Nanos(NOW))).unwrap();
                black_box(g.core_b.on_success(p, Nanos(NOW)));
            }
            "breaker_c" => {
                let mut p = guards_permit::default();
                // SAFETY: live handle, valid out pointer.
                unsafe {
                    black_box(guards_circuit_breaker_try_acquire(
                        g.b,
                        black_box(NOW),
                        &mut p,
                    ));
                    black_box(guards_circuit_breaker_report(
                        g.b,
                        p,
                        guards_outcome::Success as u32,
                        NOW,
                    ));
                }
            }
            "breaker_call" => {
                // SAFETY: live handle, a function safe with any context.
                black_box(unsafe {
                    guards_circuit_breaker_call(
                        g.b,
                        black_box(NOW),
                        Some(noop),
                        std::ptr::null_mut(),
                    )
                });
            }
            "bulkhead_call" => {
                // SAFETY: live handle, a function safe with any context.
                black_box(unsafe { guards_bulkhead_call(g.h, Some(noop), std::ptr::null_mut()) });
            }
            "bulkhead_core" => {
                let p = g.core_k.try_acquire().unwrap();
                g.core_k.release(black_box(p));
            }
            "bulkhead_c" => {
                let mut p = guards_permit::default();
                // SAFETY: live handle, valid out pointer.
                unsafe {
                    black_box(guards_bulkhead_try_acquire(g.h, &mut p));
                    black_box(guards_bulkhead_release(g.h, p));
                }
            }
            _ => {
                black_box(());
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let variant = args.get(1).cloned().unwrap_or_else(|| "none".to_owned());
    let n: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let threads: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let cfg = guards_circuit_breaker_config::of_defaults();
    let mut g = Guards {
        core_b: CircuitBreaker::<128>::new(CircuitBreakerConfig::default()).unwrap(),
        core_k: Bulkhead::new(BulkheadConfig { max_concurrent: 64 }).unwrap(),
        b: std::ptr::null_mut(),
        h: std::ptr::null_mut(),
    };
    // SAFETY: valid pointers; the handles are freed once at the end.
    unsafe {
        guards_circuit_breaker_new(&cfg, &mut g.b);
        guards_bulkhead_new(&guards_bulkhead_config { max_concurrent: 64 }, &mut g.h);
    }
    let g = Arc::new(g);
    let workers: Vec<_> = (1..threads)
        .map(|_| {
            let (g, v) = (Arc::clone(&g), variant.clone());
            std::thread::spawn(move || run(&g, &v, n))
        })
        .collect();
    run(&g, &variant, n);
    for w in workers {
        w.join().unwrap();
    }
    // SAFETY: from `_new`, freed once, every other user has joined.
    unsafe {
        guards_circuit_breaker_free(g.b);
        guards_bulkhead_free(g.h);
    }
}
