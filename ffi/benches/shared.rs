//! One operation on a guard in a shared region beside the same on a private guard, in one
//! run (goal: shared / private <= 1.5).
//!
//! Group `shared`:
//! - `bulkhead_core_private/{1t,2t}` vs `bulkhead_core_shared/{1t,2t}`: core's
//!   `try_acquire` + `release` on a bulkhead on the heap vs the same core code on a bulkhead
//!   in a region mapped from /dev/shm: the same atomics, other memory;
//! - `breaker_core_private` vs `breaker_core_shared`: core's `try_acquire` + `on_success` on
//!   a closed breaker whose 100-call window is full;
//! - `bulkhead_c_private` vs `bulkhead_c_region`: the C API a program calls:
//!   `guards_bulkhead_try_acquire` + `guards_bulkhead_release` (a private handle, permits
//!   in a per-process slot table) vs `guards_region_try_acquire` + `guards_region_report`
//!   (the region's permit table, each permit recorded with its owner);
//! - `breaker_c_private` vs `breaker_c_region`: the same for the breaker.
//!
//! - `reclaim_scan/4096`: one `Region::reclaim` of the default 4096-record permit table with
//!   1000 permits held by this (live) process: the scan a full guard or an open costs.
//!
//! `/2t` is two threads on one guard (two processes on one region guard behave like two
//! threads: same atomics, same cache-line traffic). The ratios are printed by
//! `scripts/bench_report.py` (each against the atomic baseline) and, shared / private, in
//! `docs/shared.md`.
mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use guards::c::bulkhead::*;
use guards::c::circuit_breaker::*;
use guards::c::shared::*;
use guards::c::{guards_outcome, guards_permit};
use guards::error::GuardsResult;
use guards::shared::{Region, RegionOptions, Shared};
use guards_core::bulkhead::{Bulkhead, BulkheadConfig};
use guards_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use guards_core::Nanos;

const NOW: u64 = 1_000_000_000;

/// A C handle shared between bench threads as an address (the handles are thread-safe).
struct Handle<T>(*mut T);
// SAFETY: the handles are thread-safe by design (lock-free guards and permit tables).
unsafe impl<T> Send for Handle<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Handle<T> {}

fn fill(b: &CircuitBreaker) {
    for _ in 0..100 {
        let p = b.try_acquire(Nanos(NOW)).unwrap();
        b.on_success(p, Nanos(NOW));
    }
}

#[inline]
fn bulkhead_core(k: &Bulkhead) {
    let p = k.try_acquire().unwrap();
    k.release(black_box(p));
}

#[inline]
fn breaker_core(b: &CircuitBreaker) {
    let p = b.try_acquire(black_box(Nanos(NOW))).unwrap();
    black_box(b.on_success(p, Nanos(NOW)));
}

#[inline]
fn bulkhead_c_private(h: &Handle<guards_bulkhead>) {
    let mut p = guards_permit::default();
    // SAFETY: a live handle and a valid out pointer.
    unsafe {
        let rc = guards_bulkhead_try_acquire(h.0, &mut p);
        debug_assert_eq!(rc, GuardsResult::Ok);
        black_box(guards_bulkhead_release(h.0, p));
    }
}

#[inline]
fn breaker_c_private(h: &Handle<guards_circuit_breaker>) {
    let mut p = guards_permit::default();
    // SAFETY: a live handle and a valid out pointer.
    unsafe {
        let rc = guards_circuit_breaker_try_acquire(h.0, NOW, &mut p);
        debug_assert_eq!(rc, GuardsResult::Ok);
        black_box(guards_circuit_breaker_report(
            h.0,
            p,
            guards_outcome::Success as u32,
            NOW,
        ));
    }
}

#[inline]
fn region_op(h: &Handle<guards_region_guard>) {
    let mut p = guards_permit::default();
    // SAFETY: a live handle and a valid out pointer.
    unsafe {
        let rc = guards_region_try_acquire(h.0, 0, NOW, &mut p);
        debug_assert_eq!(rc, GuardsResult::Ok);
        black_box(guards_region_report(
            h.0,
            p,
            guards_outcome::Success as u32,
            NOW,
        ));
    }
}

fn one_and_two<T: Send + Sync + 'static>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    target: Arc<T>,
    op: fn(&T),
) {
    let t = Arc::clone(&target);
    g.bench_function(format!("{name}/1t"), move |bn| bn.iter(|| op(&t)));
    g.bench_function(format!("{name}/2t"), move |bn| {
        bn.iter_custom(|iters| {
            let t = Arc::clone(&target);
            common::two_threads(iters, move |_| op(&t))
        })
    });
}

struct Sh<K>(Shared<K>);

fn benches(c: &mut Criterion) {
    common::baseline(c, "shared");
    let name = format!("guards-bench-{}", std::process::id());
    let region = Region::open(&name, &RegionOptions::default()).unwrap();
    let cname = std::ffi::CString::new(name.clone()).unwrap();
    let mut g = c.benchmark_group("shared");

    // Core's code on heap memory vs on region memory.
    let cfg = BulkheadConfig { max_concurrent: 64 };
    one_and_two(
        &mut g,
        "bulkhead_core_private",
        Arc::new(Bulkhead::new(cfg).unwrap()),
        bulkhead_core,
    );
    let shared_bulkhead = Arc::new(Sh(region
        .get_or_create::<Bulkhead>("core-bulkhead", cfg)
        .unwrap()));
    one_and_two(
        &mut g,
        "bulkhead_core_shared",
        shared_bulkhead,
        |s: &Sh<Bulkhead>| bulkhead_core(&s.0),
    );
    let private_breaker = CircuitBreaker::new(CircuitBreakerConfig::default()).unwrap();
    fill(&private_breaker);
    one_and_two(
        &mut g,
        "breaker_core_private",
        Arc::new(private_breaker),
        breaker_core,
    );
    let shared_breaker = region
        .get_or_create::<CircuitBreaker>("core-breaker", CircuitBreakerConfig::default())
        .unwrap();
    fill(&shared_breaker);
    one_and_two(
        &mut g,
        "breaker_core_shared",
        Arc::new(Sh(shared_breaker)),
        |s: &Sh<CircuitBreaker>| breaker_core(&s.0),
    );

    // The C API: private handles vs region guards.
    let mut hb = std::ptr::null_mut();
    let mut hc = std::ptr::null_mut();
    let mut r = std::ptr::null_mut();
    let mut rb = std::ptr::null_mut();
    let mut rc = std::ptr::null_mut();
    let bc = guards_bulkhead_config { max_concurrent: 64 };
    let cc = guards_circuit_breaker_config::of_defaults();
    // SAFETY: valid pointers throughout; the handles are freed at the end.
    unsafe {
        assert_eq!(guards_bulkhead_new(&bc, &mut hb), GuardsResult::Ok);
        assert_eq!(guards_circuit_breaker_new(&cc, &mut hc), GuardsResult::Ok);
        assert_eq!(
            guards_region_open(cname.as_ptr(), std::ptr::null(), &mut r),
            GuardsResult::Ok
        );
        assert_eq!(
            guards_region_bulkhead(r, c"c-bulkhead".as_ptr(), &bc, &mut rb),
            GuardsResult::Ok
        );
        assert_eq!(
            guards_region_circuit_breaker(r, c"c-breaker".as_ptr(), &cc, &mut rc),
            GuardsResult::Ok
        );
    }
    let (hb, hc, rb, rc) = (Handle(hb), Handle(hc), Handle(rb), Handle(rc));
    for _ in 0..100 {
        breaker_c_private(&hc);
        region_op(&rc);
    }
    let (hb, hc, rb, rc) = (Arc::new(hb), Arc::new(hc), Arc::new(rb), Arc::new(rc));
    one_and_two(
        &mut g,
        "bulkhead_c_private",
        Arc::clone(&hb),
        bulkhead_c_private,
    );
    one_and_two(&mut g, "bulkhead_c_region", Arc::clone(&rb), region_op);
    one_and_two(
        &mut g,
        "breaker_c_private",
        Arc::clone(&hc),
        breaker_c_private,
    );
    one_and_two(&mut g, "breaker_c_region", Arc::clone(&rc), region_op);
    let held = region
        .get_or_create::<Bulkhead>(
            "held",
            BulkheadConfig {
                max_concurrent: 1000,
            },
        )
        .unwrap();
    let tokens: Vec<_> = (0..1000)
        .map(|_| held.try_acquire((), Nanos(NOW)).unwrap().0)
        .collect();
    g.bench_function("reclaim_scan/4096", |bn| {
        bn.iter(|| black_box(region.reclaim(Nanos(NOW))))
    });
    for t in tokens {
        held.report(t, guards_core::Outcome::Success, Nanos(NOW))
            .unwrap();
    }
    g.finish();

    // SAFETY: handles from their constructors, freed once, the bench threads are done.
    unsafe {
        guards_bulkhead_free(hb.0);
        guards_circuit_breaker_free(hc.0);
        guards_region_guard_free(rb.0);
        guards_region_guard_free(rc.0);
        guards_region_close(r);
    }
    drop(region);
    let _ = Region::remove(&name);
}

criterion::criterion_group!(shared, benches);
criterion::criterion_main!(shared);
