#![cfg(loom)]
//! loom models of [`Bulkhead::set_max_concurrent`] racing acquisitions and releases.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3
//! cargo test -p guards-core --release --test loom_bulkhead_resize`

use guards_core::bulkhead::{Bulkhead, BulkheadConfig};
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

fn bulkhead(max_concurrent: u64) -> Bulkhead {
    Bulkhead::new(BulkheadConfig { max_concurrent }).unwrap()
}

/// Take a permit, count the holder (outside the bulkhead), check the bound, give it back.
fn hold_once(b: &Bulkhead, holders: &AtomicU64, bound: u64) -> bool {
    match b.try_acquire() {
        Ok(p) => {
            let h = holders.fetch_add(1, Ordering::SeqCst) + 1;
            assert!(h <= bound, "{h} holders, bound {bound}");
            assert!(b.in_flight() <= bound);
            holders.fetch_sub(1, Ordering::SeqCst);
            b.release(p);
            true
        }
        Err(full) => {
            assert!(full.in_flight <= bound);
            false
        }
    }
}

/// Cap 2 lowered to 1 while two threads acquire and release: never more than 2 holders
/// during the race; afterwards the bulkhead admits exactly 1 and no permit is lost.
#[test]
fn lowering_races_acquire_and_release() {
    loom::model(|| {
        let b = Arc::new(bulkhead(2));
        let holders = Arc::new(AtomicU64::new(0));
        let (b1, h1) = (Arc::clone(&b), Arc::clone(&holders));
        let t1 = thread::spawn(move || hold_once(&b1, &h1, 2));
        let (b2, h2) = (Arc::clone(&b), Arc::clone(&holders));
        let t2 = thread::spawn(move || hold_once(&b2, &h2, 2));
        assert_eq!(b.set_max_concurrent(1).unwrap(), 2);
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(b.in_flight(), 0);
        let s = b.stats();
        assert_eq!(s.acquired, s.released);
        let p = b.try_acquire().unwrap();
        assert!(b.try_acquire().is_err());
        b.release(p);
    });
}

/// A cap lowered below the permits in flight admits nothing until they drain below it,
/// while a release races the acquisitions: with cap 3 lowered to 1 and two permits out,
/// one of them released concurrently, every acquisition that starts after the resize is
/// refused (one permit is still out), and once both are back exactly one is admitted.
#[test]
fn lowered_below_in_flight_admits_nothing_until_drained() {
    loom::model(|| {
        let b = Arc::new(bulkhead(3));
        let p1 = b.try_acquire().unwrap();
        let p2 = b.try_acquire().unwrap();
        let b1 = Arc::clone(&b);
        let t1 = thread::spawn(move || b1.release(p1));
        b.set_max_concurrent(1).unwrap();
        let b2 = Arc::clone(&b);
        let t2 = thread::spawn(move || b2.try_acquire().map(|p| b2.release(p)).is_ok());
        let mine = b.try_acquire().map(|p| b.release(p)).is_ok();
        t1.join().unwrap();
        let theirs = t2.join().unwrap();
        assert!(!mine && !theirs, "admitted above the new cap");
        assert_eq!(b.in_flight(), 1);
        b.release(p2);
        let p = b.try_acquire().unwrap();
        assert!(b.try_acquire().is_err());
        b.release(p);
        assert_eq!(b.in_flight(), 0);
    });
}

/// Cap 1 raised to 2 while a holder holds its permit: a thread racing the raise either
/// gets the new slot or is refused at a count of 1; after the raise returns, the raising
/// thread's acquisition succeeds at once.
#[test]
fn raising_admits_at_once() {
    loom::model(|| {
        let b = Arc::new(bulkhead(1));
        let held = b.try_acquire().unwrap();
        let holders = Arc::new(AtomicU64::new(1));
        let (b1, h1) = (Arc::clone(&b), Arc::clone(&holders));
        let t = thread::spawn(move || hold_once(&b1, &h1, 2));
        b.set_max_concurrent(2).unwrap();
        let mine = hold_once(&b, &holders, 2);
        let theirs = t.join().unwrap();
        assert!(mine || theirs);
        b.release(held);
        assert_eq!(b.in_flight(), 0);
        assert_eq!(b.max_concurrent(), 2);
    });
}
