#![cfg(loom)]
//! loom models of the latency tracker's one atomic protocol: the tagged counter word that
//! a record increments, or resets when its ring position is reused, in one CAS.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3
//! cargo test -p guards-core --release --test loom_latency_tracker`

use guards_core::latency_tracker::{LatencyTracker, LatencyTrackerConfig};
use guards_core::Nanos;
use loom::sync::Arc;
use loom::thread;

/// Two windows of 1 s, 4 buckets (values 0..=3 exact, larger ones clamp into bucket 3).
type Tiny = LatencyTracker<2, 4>;

fn tiny() -> Tiny {
    LatencyTracker::new(LatencyTrackerConfig {
        window: Nanos::from_secs(1),
        ..LatencyTrackerConfig::default()
    })
    .unwrap()
}

const fn at(slot: u64) -> Nanos {
    Nanos::from_secs(slot)
}

/// Two concurrent records in the current window on a word that still holds an older lap:
/// one resets it, the other adds; both counts are kept, the other window is untouched.
#[test]
fn concurrent_records_during_reset_lose_nothing() {
    loom::model(|| {
        let t = Arc::new(tiny());
        t.record(at(0), Nanos(1)); // slot 0: position 0, lap 0
        t.record(at(1), Nanos(1)); // slot 1: position 1, lap 0
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let t = Arc::clone(&t);
                // slot 2: position 0 again, lap 1 — the first to arrive resets the word.
                thread::spawn(move || t.record(at(2), Nanos(1)))
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        // Slots 1 and 2 are merged at slot 2: 1 + 2.
        assert_eq!(t.count(at(2)), 3);
        assert_eq!(t.count(at(3)), 2); // slot 3 merges slots 2 and 3
        let s = t.stats();
        assert_eq!((s.recorded, s.stale), (4, 0));
    });
}

/// A record for lap 0 races a record for lap 1 on the same word (the ring turned over):
/// the lap-1 window ends with exactly its own count, whatever the order; the lap-0
/// record is either reset away with its window or refused as stale, never added to lap 1.
#[test]
fn rotation_race_never_corrupts_newer_window() {
    loom::model(|| {
        let t = Arc::new(tiny());
        let old = {
            let t = Arc::clone(&t);
            thread::spawn(move || t.record(at(0), Nanos(2)))
        };
        let new = {
            let t = Arc::clone(&t);
            thread::spawn(move || t.record(at(2), Nanos(2)))
        };
        old.join().unwrap();
        new.join().unwrap();
        assert_eq!(t.count(at(2)), 1);
        assert_eq!(t.count(at(0)), 0);
        let s = t.stats();
        assert_eq!(s.recorded + s.stale, 2);
    });
}

/// The same race on different buckets: the old window keeps its own sample, the new one
/// its own, each counted once.
#[test]
fn rotation_on_other_bucket_keeps_both() {
    loom::model(|| {
        let t = Arc::new(tiny());
        let old = {
            let t = Arc::clone(&t);
            thread::spawn(move || t.record(at(0), Nanos(1)))
        };
        let new = {
            let t = Arc::clone(&t);
            thread::spawn(move || t.record(at(2), Nanos(3)))
        };
        old.join().unwrap();
        new.join().unwrap();
        assert_eq!(t.count(at(0)), 1);
        assert_eq!(t.count(at(2)), 1);
        assert_eq!(t.quantile(at(2), 1.0), Some(Nanos(3)));
        assert_eq!(t.quantile(at(0), 1.0), Some(Nanos(1)));
        assert_eq!(t.stats().recorded, 2);
    });
}

/// A reader concurrent with two writers sees 0, 1 or 2 samples, never more, and a
/// consistent quantile for what it sees.
#[test]
fn read_during_records() {
    loom::model(|| {
        let t = Arc::new(tiny());
        let handles: Vec<_> = [Nanos(1), Nanos(2)]
            .into_iter()
            .map(|v| {
                let t = Arc::clone(&t);
                thread::spawn(move || t.record(at(0), v))
            })
            .collect();
        let seen = t.count(at(0));
        assert!(seen <= 2);
        if let Some(m) = t.quantile(at(0), 1.0) {
            assert!(m == Nanos(1) || m == Nanos(2));
        }
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(t.count(at(0)), 2);
    });
}

/// Three writers on one word: two in the current lap, one a whole ring late. The current
/// lap ends with exactly its two counts, however the three interleave.
#[test]
fn two_current_one_late_writer() {
    loom::model(|| {
        let t = Arc::new(tiny());
        let handles: Vec<_> = [at(2), at(2), at(0)]
            .into_iter()
            .map(|now| {
                let t = Arc::clone(&t);
                thread::spawn(move || t.record(now, Nanos(3)))
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(t.count(at(2)), 2);
        assert_eq!(t.count(at(0)), 0);
        let s = t.stats();
        assert_eq!(s.recorded + s.stale, 3);
        assert!(s.recorded >= 2);
    });
}
