#![cfg(loom)]
//! loom models of admission at the door: per-priority limits on one shared count hold
//! under racing admissions and releases.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3
//! cargo test -p guards-core --release --test loom_admission`

use guards_core::admission::{Admission, AdmissionConfig, AdmissionRejectReason};
use guards_core::priority::MAX_PRIORITIES;
use guards_core::{Nanos, Priority};
use loom::sync::Arc;
use loom::thread;

/// Reserves may fill 2, views 1 (Basketly's 80/64 shrunk to fit a model).
fn small_door() -> Admission {
    let mut limits = [1; MAX_PRIORITIES];
    limits[0] = 2;
    Admission::new(AdmissionConfig {
        limits,
        ..AdmissionConfig::default()
    })
    .unwrap()
}

/// A view and a reserve arrive together at an empty door: the reserve always gets in;
/// the view only if it came first (it needs fewer than 1 inside).
#[test]
fn view_and_reserve_race_at_the_door() {
    loom::model(|| {
        let door = Arc::new(small_door());
        let d2 = Arc::clone(&door);
        let t = thread::spawn(move || d2.try_acquire(Nanos(0), Priority::SHEDDABLE));
        let reserve = door.try_acquire(Nanos(0), Priority::CRITICAL_PLUS).unwrap();
        match t.join().unwrap() {
            Ok(view) => {
                assert_eq!(view.in_flight(), 1);
                assert_eq!(reserve.in_flight(), 2);
                door.on_ignore(view);
            }
            Err(r) => {
                assert_eq!(r.reason, AdmissionRejectReason::LimitReached);
                assert_eq!(reserve.in_flight(), 1);
            }
        }
        door.on_ignore(reserve);
        assert_eq!(door.in_flight(), 0);
    });
}

/// Two views race for one place while a reserve leaves: at most one view is inside with
/// the other place free, and counts add up.
#[test]
fn views_race_while_a_reserve_leaves() {
    loom::model(|| {
        let door = Arc::new(small_door());
        let reserve = door.try_acquire(Nanos(0), Priority::CRITICAL_PLUS).unwrap();
        let d2 = Arc::clone(&door);
        let leaver = thread::spawn(move || d2.on_success(reserve, Nanos(1)));
        let d3 = Arc::clone(&door);
        let other = thread::spawn(move || d3.try_acquire(Nanos(1), Priority::CRITICAL).ok());
        let mine = door.try_acquire(Nanos(1), Priority::CRITICAL).ok();
        leaver.join().unwrap();
        let theirs = other.join().unwrap();
        let admitted: Vec<_> = [mine, theirs].into_iter().flatten().collect();
        assert!(admitted.len() <= 1);
        for v in &admitted {
            assert_eq!(v.in_flight(), 1);
        }
        assert_eq!(door.in_flight(), admitted.len() as u64);
        let s = door.stats();
        assert_eq!(s.admitted, 1 + admitted.len() as u64);
        assert_eq!(s.refused_limit_reached, 2 - admitted.len() as u64);
        for v in admitted {
            door.on_ignore(v);
        }
        assert_eq!(door.in_flight(), 0);
    });
}
