#![cfg(not(loom))]
//! Integration tests for `bulkhead`: Basketly's C7 gate, proptest against a sequential
//! reference model, and a two-thread stress test tracking holders separately.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use guards_core::bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadPermit, BulkheadRejected, BulkheadStats,
};
use guards_core::Nanos;
use proptest::prelude::*;

#[test]
fn c7_gate_is_shared_by_two_operations() {
    // One gate of 12 per shop-api instance in front of stock, used by cart views and by
    // reserves alike: views holding 9 slots leave only 3 for reserves.
    let stock = Bulkhead::new(
        BulkheadConfig::from_littles_law(315.0, Nanos::from_micros(18_700), 2.0).unwrap(),
    )
    .unwrap();
    let views: Vec<BulkheadPermit> = (0..9).map(|_| stock.try_acquire().unwrap()).collect();
    let reserves: Vec<BulkheadPermit> = (0..3).map(|_| stock.try_acquire().unwrap()).collect();
    assert_eq!(
        stock.try_acquire().unwrap_err(),
        BulkheadRejected {
            in_flight: 12,
            max_concurrent: 12
        }
    );
    // Calls that do not go to stock (prices) never touch the gate; product pages keep the
    // other 88 of 100 threads however slow stock gets.
    assert_eq!(100 - stock.in_flight(), 88);
    for p in views.into_iter().chain(reserves) {
        stock.release(p);
    }
    assert_eq!(
        stock.stats(),
        BulkheadStats {
            acquired: 12,
            rejected: 1,
            released: 12,
            in_flight: 0
        }
    );
}

#[test]
fn littles_law_examples_from_basketly() {
    // 315/s x 60 ms: even if every call waited the full C1 timeout, 19 in flight.
    let c = BulkheadConfig::from_littles_law(315.0, Nanos::from_millis(60), 1.0).unwrap();
    assert_eq!(c.max_concurrent, 19);
    // The database example of Basketly's C5 (docs/basketly.md): 200 queries/s x 60 ms = 12
    // useful waits.
    let c = BulkheadConfig::from_littles_law(200.0, Nanos::from_millis(60), 1.0).unwrap();
    assert_eq!(c.max_concurrent, 12);
}

#[derive(Debug, Clone)]
enum Op {
    Acquire,
    Release(usize),
    Scoped,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn matches_model(
        max in 1u64..8,
        ops in prop::collection::vec(
            prop_oneof![
                Just(Op::Acquire),
                any::<usize>().prop_map(Op::Release),
                Just(Op::Scoped),
            ],
            0..200,
        ),
    ) {
        let b = Bulkhead::new(BulkheadConfig { max_concurrent: max }).unwrap();
        let mut held: Vec<BulkheadPermit> = Vec::new();
        let (mut acquired, mut rejected, mut released) = (0u64, 0u64, 0u64);
        for op in ops {
            let in_flight = held.len() as u64;
            match op {
                Op::Acquire => match b.try_acquire() {
                    Ok(p) => {
                        prop_assert!(in_flight < max);
                        acquired += 1;
                        held.push(p);
                    }
                    Err(full) => {
                        prop_assert_eq!(in_flight, max);
                        prop_assert_eq!(
                            full,
                            BulkheadRejected { in_flight: max, max_concurrent: max }
                        );
                        rejected += 1;
                    }
                },
                Op::Release(i) => {
                    if !held.is_empty() {
                        let p = held.swap_remove(i % held.len());
                        b.release(p);
                        released += 1;
                    }
                }
                Op::Scoped => {
                    match b.try_acquire_scoped() {
                        Ok(g) => {
                            prop_assert!(in_flight < max);
                            prop_assert_eq!(b.in_flight(), in_flight + 1);
                            drop(g);
                            acquired += 1;
                            released += 1;
                        }
                        Err(_) => {
                            prop_assert_eq!(in_flight, max);
                            rejected += 1;
                        }
                    }
                }
            }
            prop_assert_eq!(b.in_flight(), held.len() as u64);
            prop_assert_eq!(b.available(), max - held.len() as u64);
        }
        prop_assert_eq!(
            b.stats(),
            BulkheadStats { acquired, rejected, released, in_flight: held.len() as u64 }
        );
    }
}

#[test]
fn stress_two_threads_never_exceed_the_cap() {
    const ITERS: u64 = 20_000;
    const CAP: u64 = 3;
    let b = Arc::new(
        Bulkhead::new(BulkheadConfig {
            max_concurrent: CAP,
        })
        .unwrap(),
    );
    // Holders counted outside the bulkhead: incremented after a grant, decremented before
    // the release, so it never runs ahead of the bulkhead's own count.
    let holders = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|t| {
            let b = Arc::clone(&b);
            let holders = Arc::clone(&holders);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let mut mine: Vec<BulkheadPermit> = Vec::new();
                let (mut ok, mut full) = (0u64, 0u64);
                for i in 0..ITERS {
                    // Each thread holds up to 2 permits at a time, so together they press
                    // against the cap of 3.
                    if mine.len() < 2 {
                        match b.try_acquire() {
                            Ok(p) => {
                                let h = holders.fetch_add(1, Ordering::SeqCst) + 1;
                                assert!(h <= CAP, "{h} holders with a cap of {CAP}");
                                mine.push(p);
                                ok += 1;
                            }
                            Err(e) => {
                                assert_eq!(e.max_concurrent, CAP);
                                assert!(e.in_flight <= CAP);
                                full += 1;
                            }
                        }
                    }
                    if (i + t) % 3 == 0 {
                        if let Some(p) = mine.pop() {
                            holders.fetch_sub(1, Ordering::SeqCst);
                            b.release(p);
                        }
                    }
                    assert!(b.in_flight() <= CAP);
                }
                for p in mine {
                    holders.fetch_sub(1, Ordering::SeqCst);
                    b.release(p);
                }
                (ok, full)
            })
        })
        .collect();
    let (mut ok, mut full) = (0, 0);
    for h in handles {
        let (o, f) = h.join().unwrap();
        ok += o;
        full += f;
    }
    assert_eq!(holders.load(Ordering::SeqCst), 0);
    let s = b.stats();
    assert_eq!(s.in_flight, 0);
    assert_eq!(s.acquired, ok);
    assert_eq!(s.released, ok);
    assert_eq!(s.rejected, full);
}

#[test]
fn stress_scoped_guards() {
    const ITERS: u64 = 20_000;
    let b = Arc::new(Bulkhead::new(BulkheadConfig { max_concurrent: 1 }).unwrap());
    let holders = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let b = Arc::clone(&b);
            let holders = Arc::clone(&holders);
            std::thread::spawn(move || {
                let mut ok = 0u64;
                for _ in 0..ITERS {
                    if let Ok(g) = b.try_acquire_scoped() {
                        assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0);
                        holders.fetch_sub(1, Ordering::SeqCst);
                        drop(g);
                        ok += 1;
                    }
                }
                ok
            })
        })
        .collect();
    let ok: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let s = b.stats();
    assert_eq!((s.acquired, s.released, s.in_flight), (ok, ok, 0));
    assert_eq!(s.acquired + s.rejected, 2 * ITERS);
}
