//! `Bulkhead::set_max_concurrent` under real threads: workers acquire and release while a
//! resizer moves the cap; holders (counted outside the bulkhead) never exceed the largest
//! cap in force, and once a lowered cap has drained they never exceed it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use guards_core::bulkhead::{Bulkhead, BulkheadConfig, MAX_CONCURRENT_LIMIT};
use guards_core::ConfigErrorKind;

#[test]
fn resize_keeps_permits_and_validates() {
    let b = Bulkhead::new(BulkheadConfig { max_concurrent: 4 }).unwrap();
    let held: Vec<_> = (0..4).map(|_| b.try_acquire().unwrap()).collect();
    assert_eq!(b.set_max_concurrent(2).unwrap(), 4);
    assert_eq!((b.max_concurrent(), b.config().max_concurrent), (2, 4));
    assert_eq!(b.available(), 0);
    let full = b.try_acquire().unwrap_err();
    assert_eq!((full.in_flight, full.max_concurrent), (4, 2));
    let mut held = held.into_iter();
    for p in held.by_ref().take(2) {
        b.release(p);
        assert!(
            b.try_acquire().is_err(),
            "admitted with {} in flight",
            b.in_flight()
        );
    }
    // 2 in flight, cap 2: still full; one more back and one is admitted.
    b.release(held.next().unwrap());
    let p = b.try_acquire().unwrap();
    assert!(b.try_acquire().is_err());
    // Raised: admits at once.
    b.set_max_concurrent(5).unwrap();
    let more: Vec<_> = (0..3).map(|_| b.try_acquire().unwrap()).collect();
    assert!(b.try_acquire().is_err());
    assert_eq!(b.in_flight(), 5);
    for q in more.into_iter().chain([p]).chain(held) {
        b.release(q);
    }
    assert_eq!(b.in_flight(), 0);
    // 0 admits nothing; above the limit is an error and changes nothing.
    b.set_max_concurrent(0).unwrap();
    assert!(b.try_acquire().is_err());
    let e = b.set_max_concurrent(MAX_CONCURRENT_LIMIT + 1).unwrap_err();
    assert_eq!(
        (e.field(), e.kind()),
        ("max_concurrent", ConfigErrorKind::OutOfRange)
    );
    assert_eq!(b.max_concurrent(), 0);
    // reset restores the configured cap.
    let mut b = b;
    b.reset(BulkheadConfig { max_concurrent: 3 }).unwrap();
    assert_eq!(b.max_concurrent(), 3);
}

#[test]
fn resize_under_threads() {
    const WORKERS: usize = 4;
    const TOP: u64 = 8;
    const FINAL: u64 = 2;
    let b = Arc::new(
        Bulkhead::new(BulkheadConfig {
            max_concurrent: TOP,
        })
        .unwrap(),
    );
    let holders = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let drained = Arc::new(AtomicBool::new(false));
    let over = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (b, holders, stop, drained, over) = (
                Arc::clone(&b),
                Arc::clone(&holders),
                Arc::clone(&stop),
                Arc::clone(&drained),
                Arc::clone(&over),
            );
            thread::spawn(move || {
                let mut admitted = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let after_drain = drained.load(Ordering::SeqCst);
                    if let Ok(p) = b.try_acquire() {
                        admitted += 1;
                        let h = holders.fetch_add(1, Ordering::SeqCst) + 1;
                        let bound = if after_drain { FINAL } else { TOP };
                        if h > bound {
                            over.fetch_add(1, Ordering::SeqCst);
                        }
                        thread::yield_now();
                        holders.fetch_sub(1, Ordering::SeqCst);
                        b.release(p);
                    }
                }
                admitted
            })
        })
        .collect();
    for i in 0..20_000u64 {
        b.set_max_concurrent(1 + (i * 7919) % TOP).unwrap();
    }
    b.set_max_concurrent(FINAL).unwrap();
    // Wait (by counting, not timing) until the lowered cap has drained.
    while holders.load(Ordering::SeqCst) > FINAL || b.in_flight() > FINAL {
        thread::yield_now();
    }
    drained.store(true, Ordering::SeqCst);
    for _ in 0..20_000 {
        assert!(b.in_flight() <= FINAL);
        thread::yield_now();
    }
    stop.store(true, Ordering::SeqCst);
    let admitted: u64 = workers.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(over.load(Ordering::SeqCst), 0);
    assert!(admitted > 0);
    let s = b.stats();
    assert_eq!(
        (s.in_flight, s.acquired, s.released),
        (0, admitted, admitted)
    );
}
