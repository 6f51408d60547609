#![cfg(loom)]
//! loom models of the adaptive throttle's sliding-window counters: tagged words that a
//! request or an accept increments, or resets when the window slides onto a reused
//! bucket, in one CAS.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3
//! cargo test -p guards-core --release --test loom_adaptive_throttle`

use guards_core::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig, ThrottleWindow};
use guards_core::Nanos;
use loom::sync::Arc;
use loom::thread;

/// Two buckets of 1 s.
type Tiny = AdaptiveThrottle<2>;

fn tiny() -> Tiny {
    AdaptiveThrottle::new(AdaptiveThrottleConfig {
        window: Nanos::from_secs(2),
        ..AdaptiveThrottleConfig::default()
    })
    .unwrap()
}

const fn at(slot: u64) -> Nanos {
    Nanos::from_secs(slot)
}

/// Two decisions racing on a bucket that still holds an older lap: one resets it, the
/// other adds; both requests are counted, and the accept reported beside them too.
#[test]
fn concurrent_requests_on_reused_bucket() {
    loom::model(|| {
        let t = Arc::new(tiny());
        assert!(!t.should_reject(at(0))); // bucket 0, lap 0
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let t = Arc::clone(&t);
                thread::spawn(move || {
                    // Slot 2: bucket 0 again, lap 1. The window is empty there: p = 0.
                    assert!(!t.should_reject(at(2)));
                    if i == 0 {
                        t.on_accepted(at(2));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(
            t.window(at(2)),
            ThrottleWindow {
                requests: 2,
                accepts: 1
            }
        );
        let s = t.stats();
        assert_eq!((s.admitted, s.throttled, s.accepted, s.stale), (3, 0, 1, 0));
    });
}

/// A request for slot 0 races one for slot 2 on the same bucket word: slot 2's window
/// ends with exactly its own request; the old one is reset away or refused as stale.
#[test]
fn rotation_race_keeps_newer_bucket_exact() {
    loom::model(|| {
        let t = Arc::new(tiny());
        let old = {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                let _ = t.should_reject(at(0));
                t.on_accepted(at(0));
            })
        };
        let new = {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                let _ = t.should_reject(at(2));
            })
        };
        old.join().unwrap();
        new.join().unwrap();
        let w = t.window(at(2));
        assert_eq!(w.requests, 1);
        // The accepts word of bucket 0 was never touched at slot 2: the slot-0 accept
        // stays in its own (expired) lap.
        assert_eq!(w.accepts, 0);
        assert_eq!(t.window(at(0)).accepts, 1);
        let s = t.stats();
        assert_eq!(s.admitted, 2);
    });
}

/// A reader sees a probability in [0, 1] while two threads report.
#[test]
fn probability_read_during_updates() {
    loom::model(|| {
        let t = Arc::new(tiny());
        let _ = t.should_reject(at(0));
        let a = {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                let _ = t.should_reject(at(1));
            })
        };
        let b = {
            let t = Arc::clone(&t);
            thread::spawn(move || t.on_accepted(at(1)))
        };
        let p = t.reject_probability(at(1));
        assert!((0.0..=1.0).contains(&p));
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(
            t.window(at(1)),
            ThrottleWindow {
                requests: 2,
                accepts: 1
            }
        );
    });
}
