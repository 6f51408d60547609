//! A guarded no-op through the C ABI beside the same through core directly, in one run.
//!
//! Group `c_abi`:
//! - `breaker_core/{1t,2t}`: core's `try_acquire` + `on_success` on a closed breaker whose
//!   100-call window is full (core's own hot-path bench);
//! - `breaker_c/{1t,2t}`: `guards_circuit_breaker_try_acquire` +
//!   `guards_circuit_breaker_report(.., GUARDS_OUTCOME_SUCCESS, ..)` on the same breaker
//!   configuration: the extern "C" functions themselves (panic boundary, pointer checks,
//!   permit slots);
//! - `bulkhead_core/{1t,2t}` and `bulkhead_c/{1t,2t}`: acquire + release;
//! - `breaker_call/1t`, `bulkhead_call/1t`: `guards_circuit_breaker_call` /
//!   `guards_bulkhead_call` running a C no-op (returns `GUARDS_OUTCOME_SUCCESS`): the same
//!   guarded no-op with the permit kept inside the library.
//!
//! `/2t` is two threads on one shared guard. The ratio c / core is the ABI's overhead.
mod common;

use std::ffi::c_void;
use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use guards::c::bulkhead::*;
use guards::c::call::guards_call;
use guards::c::circuit_breaker::*;
use guards::c::{guards_outcome, guards_permit};
use guards::error::GuardsResult;
use guards_core::bulkhead::{Bulkhead, BulkheadConfig};
use guards_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use guards_core::Nanos;

const NOW: u64 = 1_000_000_000;

fn core_breaker() -> CircuitBreaker {
    let b = CircuitBreaker::new(CircuitBreakerConfig::default()).unwrap();
    for _ in 0..100 {
        let p = b.try_acquire(Nanos(NOW)).unwrap();
        b.on_success(p, Nanos(NOW));
    }
    b
}

/// The C handle, shared between bench threads as an address (it is thread-safe).
struct Handle<T>(*mut T);
// SAFETY: the handles are thread-safe by design (lock-free guards and permit slots).
unsafe impl<T> Send for Handle<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Handle<T> {}

fn c_breaker() -> Handle<guards_circuit_breaker> {
    let cfg = guards_circuit_breaker_config::of_defaults();
    let mut b = std::ptr::null_mut();
    // SAFETY: valid pointers.
    let rc = unsafe { guards_circuit_breaker_new(&cfg, &mut b) };
    assert_eq!(rc, GuardsResult::Ok);
    let h = Handle(b);
    for _ in 0..100 {
        c_breaker_noop(&h);
    }
    h
}

#[inline]
fn c_breaker_noop(h: &Handle<guards_circuit_breaker>) {
    let mut p = guards_permit::default();
    // SAFETY: a live handle and valid out pointer.
    unsafe {
        let rc = guards_circuit_breaker_try_acquire(h.0, NOW, &mut p);
        debug_assert_eq!(rc, GuardsResult::Ok);
        let rc = guards_circuit_breaker_report(h.0, p, guards_outcome::Success as u32, NOW);
        black_box(rc);
    }
}

fn c_bulkhead() -> Handle<guards_bulkhead> {
    let cfg = guards_bulkhead_config { max_concurrent: 64 };
    let mut h = std::ptr::null_mut();
    // SAFETY: valid pointers.
    let rc = unsafe { guards_bulkhead_new(&cfg, &mut h) };
    assert_eq!(rc, GuardsResult::Ok);
    Handle(h)
}

#[inline]
fn c_bulkhead_noop(h: &Handle<guards_bulkhead>) {
    let mut p = guards_permit::default();
    // SAFETY: a live handle and valid out pointer.
    unsafe {
        let rc = guards_bulkhead_try_acquire(h.0, &mut p);
        debug_assert_eq!(rc, GuardsResult::Ok);
        black_box(guards_bulkhead_release(h.0, p));
    }
}

/// The no-op the `*_call` rows run.
unsafe extern "C" fn noop(_ctx: *mut c_void, _call: *mut guards_call) -> u32 {
    guards_outcome::Success as u32
}

fn benches(c: &mut Criterion) {
    common::baseline(c, "c_abi");
    let mut g = c.benchmark_group("c_abi");

    let b = core_breaker();
    g.bench_function("breaker_core/1t", |bn| {
        bn.iter(|| {
            let p = b.try_acquire(black_box(Nanos(NOW))).unwrap();
            black_box(b.on_success(p, Nanos(NOW)));
        })
    });
    let h = c_breaker();
    g.bench_function("breaker_c/1t", |bn| bn.iter(|| c_breaker_noop(&h)));
    g.bench_function("breaker_call/1t", |bn| {
        bn.iter(|| {
            // SAFETY: a live handle; `noop` is safe with any context.
            black_box(unsafe {
                guards_circuit_breaker_call(h.0, black_box(NOW), Some(noop), std::ptr::null_mut())
            })
        })
    });
    let shared = Arc::new(core_breaker());
    g.bench_function("breaker_core/2t", |bn| {
        bn.iter_custom(|iters| {
            let b = Arc::clone(&shared);
            common::two_threads(iters, move |_| {
                let p = b.try_acquire(Nanos(NOW)).unwrap();
                black_box(b.on_success(p, Nanos(NOW)));
            })
        })
    });
    let hs = Arc::new(c_breaker());
    g.bench_function("breaker_c/2t", |bn| {
        bn.iter_custom(|iters| {
            let h = Arc::clone(&hs);
            common::two_threads(iters, move |_| c_breaker_noop(&h))
        })
    });

    let k = Bulkhead::new(BulkheadConfig { max_concurrent: 64 }).unwrap();
    g.bench_function("bulkhead_core/1t", |bn| {
        bn.iter(|| {
            let p = k.try_acquire().unwrap();
            k.release(black_box(p));
        })
    });
    let kh = c_bulkhead();
    g.bench_function("bulkhead_c/1t", |bn| bn.iter(|| c_bulkhead_noop(&kh)));
    g.bench_function("bulkhead_call/1t", |bn| {
        bn.iter(|| {
            // SAFETY: a live handle; `noop` is safe with any context.
            black_box(unsafe { guards_bulkhead_call(kh.0, Some(noop), std::ptr::null_mut()) })
        })
    });
    let ks = Arc::new(Bulkhead::new(BulkheadConfig { max_concurrent: 64 }).unwrap());
    g.bench_function("bulkhead_core/2t", |bn| {
        bn.iter_custom(|iters| {
            let k = Arc::clone(&ks);
            common::two_threads(iters, move |_| {
                let p = k.try_acquire().unwrap();
                k.release(black_box(p));
            })
        })
    });
    let khs = Arc::new(c_bulkhead());
    g.bench_function("bulkhead_c/2t", |bn| {
        bn.iter_custom(|iters| {
            let h = Arc::clone(&khs);
            common::two_threads(iters, move |_| c_bulkhead_noop(&h))
        })
    });
    g.finish();

    // SAFETY: handles from `_new`, freed once, no other user left.
    unsafe {
        guards_circuit_breaker_free(h.0);
        guards_bulkhead_free(kh.0);
    }
}

criterion::criterion_group!(c_abi, benches);
criterion::criterion_main!(c_abi);
