#![cfg(loom)]
//! loom models of the bulkhead's acquire (CAS loop) and release protocols.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3
//! cargo test -p guards-core --release --test loom_bulkhead`

use guards_core::bulkhead::{Bulkhead, BulkheadConfig};
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

fn bulkhead(max_concurrent: u64) -> Bulkhead {
    Bulkhead::new(BulkheadConfig { max_concurrent }).unwrap()
}

/// Two threads each acquire, hold and release against a cap of 1: holders (tracked
/// outside the bulkhead) never exceed the cap, every permit is released exactly once, and
/// the bulkhead ends empty.
#[test]
fn holders_never_exceed_cap_of_one() {
    loom::model(|| {
        let b = Arc::new(bulkhead(1));
        let holders = Arc::new(AtomicU64::new(0));
        let run = |b: Arc<Bulkhead>, holders: Arc<AtomicU64>| {
            move || match b.try_acquire() {
                Ok(p) => {
                    let h = holders.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(h <= 1, "{h} holders");
                    holders.fetch_sub(1, Ordering::SeqCst);
                    b.release(p);
                    true
                }
                Err(full) => {
                    assert_eq!(full.in_flight, 1);
                    false
                }
            }
        };
        let t = thread::spawn(run(Arc::clone(&b), Arc::clone(&holders)));
        let mine = run(Arc::clone(&b), Arc::clone(&holders))();
        let theirs = t.join().unwrap();
        assert!(mine || theirs, "a free slot was refused to both");
        let s = b.stats();
        assert_eq!(s.in_flight, 0);
        assert_eq!(s.acquired, s.released);
        assert_eq!(s.acquired + s.rejected, 2);
        assert_eq!(holders.load(Ordering::SeqCst), 0);
    });
}

/// Cap 2, one permit already held: two threads race for the last slot while the held
/// permit is released concurrently. Never more than 2 in flight; no release is lost.
#[test]
fn race_for_last_slot_with_concurrent_release() {
    loom::model(|| {
        let b = Arc::new(bulkhead(2));
        let held = b.try_acquire().unwrap();
        let b1 = Arc::clone(&b);
        let t1 = thread::spawn(move || {
            let r = b1.try_acquire();
            assert!(b1.in_flight() <= 2);
            r
        });
        let b2 = Arc::clone(&b);
        let t2 = thread::spawn(move || b2.release(held));
        let mine = b.try_acquire();
        assert!(b.in_flight() <= 2);
        let theirs = t1.join().unwrap();
        t2.join().unwrap();
        let granted = [mine, theirs]
            .into_iter()
            .filter_map(Result::ok)
            .collect::<Vec<_>>();
        // At least one of the two gets the free slot; both only if the release came first.
        assert!(!granted.is_empty());
        assert_eq!(b.in_flight(), granted.len() as u64);
        for p in granted {
            b.release(p);
        }
        let s = b.stats();
        assert_eq!(s.in_flight, 0);
        assert_eq!(s.acquired, s.released);
        assert_eq!(s.acquired + s.rejected, 3);
    });
}
