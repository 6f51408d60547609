#![cfg(not(loom))]
//! Integration tests for admission at the door: Basketly's C5 thresholds (64/80), a proptest
//! against a sequential reference model, an adaptive door, and a two-thread stress test.

use std::sync::{Arc, Barrier};

use guards_core::admission::{
    Admission, AdmissionConfig, AdmissionPermit, AdmissionRejectReason, DEFAULT_MAX_RETRY_AFTER,
    DEFAULT_MIN_RETRY_AFTER,
};
use guards_core::limit::{AimdConfig, LimitConfig};
use guards_core::priority::MAX_PRIORITIES;
use guards_core::{Nanos, Priority, Rng};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

const VIEW: Priority = Priority::SHEDDABLE;
const RESERVE: Priority = Priority::CRITICAL_PLUS;

fn p(level: u8) -> Priority {
    Priority::new(level).unwrap()
}

#[test]
fn a_view_is_refused_at_64_inside_a_reserve_at_80() {
    let door = Admission::new(AdmissionConfig::default()).unwrap();
    let now = Nanos::from_secs(1);
    let mut inside = Vec::new();
    // 63 views in: the 64th still fits (63 < 64).
    for _ in 0..63 {
        inside.push(door.try_acquire(now, VIEW).unwrap());
    }
    inside.push(door.try_acquire(now, VIEW).unwrap());
    assert_eq!(door.in_flight(), 64);
    let refused = door.try_acquire(now, VIEW).unwrap_err();
    assert_eq!(refused.reason, AdmissionRejectReason::LimitReached);
    assert_eq!((refused.in_flight, refused.threshold), (64, 64));
    assert_eq!(refused.retry_after(now), DEFAULT_MIN_RETRY_AFTER);
    // Reserves still get in, up to 80 inside in total.
    for _ in 64..80 {
        inside.push(door.try_acquire(now, RESERVE).unwrap());
    }
    let refused = door.try_acquire(now, RESERVE).unwrap_err();
    assert_eq!(
        (refused.reason, refused.in_flight, refused.threshold),
        (AdmissionRejectReason::LimitReached, 80, 80)
    );
    for t in inside {
        door.on_success(t, now);
    }
    assert_eq!(door.in_flight(), 0);
}

#[test]
fn reserves_and_views_count_toward_one_total() {
    let door = Admission::new(AdmissionConfig::default()).unwrap();
    let now = Nanos::ZERO;
    let mut inside = Vec::new();
    for _ in 0..40 {
        inside.push(door.try_acquire(now, RESERVE).unwrap());
    }
    for _ in 0..24 {
        inside.push(door.try_acquire(now, VIEW).unwrap());
    }
    // 64 inside, 40 of them reserves: views are refused, a reserve is not.
    assert!(door.try_acquire(now, VIEW).is_err());
    assert!(door.try_acquire(now, Priority::CRITICAL).is_err());
    let r = door.try_acquire(now, RESERVE).unwrap();
    assert_eq!(r.in_flight(), 65);
    inside.push(r);
    let s = door.stats();
    assert_eq!(s.admitted, 65);
    assert_eq!(s.refused_by_priority[3], 1);
    assert_eq!(s.refused_by_priority[1], 1);
    for t in inside {
        door.on_ignore(t);
    }
}

#[test]
fn adaptive_door_refuses_views_first_and_reports_overload() {
    // Basketly's C5 limits plus an AIMD limit on the total, views (levels ≥ 1) allowed 80 % of it.
    let mut shares = [0.8; MAX_PRIORITIES];
    shares[0] = 1.0;
    let door = Admission::new(AdmissionConfig {
        limit: LimitConfig::Aimd(AimdConfig {
            initial_limit: 20,
            ..AimdConfig::default()
        }),
        shares,
        min_window_samples: 1,
        ..AdmissionConfig::default()
    })
    .unwrap();
    assert_eq!((door.threshold(VIEW), door.threshold(RESERVE)), (16, 20));
    let t = Nanos::from_secs(1);
    let mut inside: Vec<AdmissionPermit> = (0..16)
        .map(|_| door.try_acquire(t, VIEW).unwrap())
        .collect();
    let v = door.try_acquire(t, VIEW).unwrap_err();
    assert_eq!(v.reason, AdmissionRejectReason::Overloaded);
    inside.push(door.try_acquire(t, RESERVE).unwrap());
    // A dropped call (its deadline passed inside) halves the limit: 20 → 10, views 8.
    let first = inside.remove(0);
    door.on_dropped(first, t.saturating_add(Nanos::from_millis(70)));
    assert_eq!(door.limit(), 10);
    assert_eq!((door.threshold(VIEW), door.threshold(RESERVE)), (8, 10));
    let r = door.try_acquire(t, RESERVE).unwrap_err();
    assert_eq!(r.reason, AdmissionRejectReason::Overloaded);
    // The hint is the window's mean time inside (70 ms), raised to the 1 s floor.
    assert_eq!(r.retry_after(t), DEFAULT_MIN_RETRY_AFTER);
    assert!(r.retry_after(t) <= DEFAULT_MAX_RETRY_AFTER);
    let s = door.stats();
    assert_eq!(
        (s.refused_overloaded, s.refused_limit_reached, s.dropped),
        (2, 0, 1)
    );
    for ticket in inside {
        door.on_success(ticket, t.saturating_add(Nanos::from_millis(80)));
    }
    assert_eq!(door.in_flight(), 0);
}

// ---------------------------------------------------------------- model

/// Per-priority limits on one shared count, as the module docs define them.
fn non_increasing_limits() -> impl Strategy<Value = [u64; MAX_PRIORITIES]> {
    prop::collection::vec(1u64..12, MAX_PRIORITIES).prop_map(|mut v| {
        v.sort_by(|a, b| b.cmp(a));
        std::array::from_fn(|i| v[i])
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/admission.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn matches_sequential_model(
        limits in non_increasing_limits(),
        ops in prop::collection::vec((0u8..8, any::<bool>(), any::<usize>()), 1..200),
    ) {
        let door = Admission::new(AdmissionConfig { limits, ..AdmissionConfig::default() }).unwrap();
        let mut inside: Vec<AdmissionPermit> = Vec::new();
        let mut model_inside = 0u64;
        let mut refused = [0u64; MAX_PRIORITIES];
        for (level, admit, pick) in ops {
            if admit || inside.is_empty() {
                let limit = limits[level as usize];
                match door.try_acquire(Nanos::ZERO, p(level)) {
                    Ok(t) => {
                        prop_assert!(model_inside < limit);
                        model_inside += 1;
                        prop_assert_eq!(t.in_flight(), model_inside);
                        prop_assert_eq!(t.priority(), p(level));
                        inside.push(t);
                    }
                    Err(r) => {
                        prop_assert!(model_inside >= limit);
                        prop_assert_eq!(r.reason, AdmissionRejectReason::LimitReached);
                        prop_assert_eq!((r.in_flight, r.threshold), (model_inside, limit));
                        refused[level as usize] += 1;
                    }
                }
            } else {
                let t = inside.swap_remove(pick % inside.len());
                door.on_success(t, Nanos::ZERO);
                model_inside -= 1;
            }
            prop_assert_eq!(door.in_flight(), model_inside);
        }
        let s = door.stats();
        prop_assert_eq!(s.refused_by_priority, refused);
        prop_assert_eq!(s.refused_limit_reached, refused.iter().sum::<u64>());
        prop_assert_eq!(s.refused_overloaded, 0);
    }
}

// ---------------------------------------------------------------- stress

/// One thread sends views, the other reserves and views, against Basketly's 64/80 door (C5):
/// no view ever gets in with 64 already inside, nothing with 80, the count never exceeds
/// 80, and it returns to zero. Each thread tries to hold up to 90, so even alone it
/// presses against both limits (the assertions do not depend on the threads overlapping).
#[test]
fn stress_two_threads_at_the_door() {
    let door = Arc::new(Admission::new(AdmissionConfig::default()).unwrap());
    let start = Arc::new(Barrier::new(2));
    let workers: Vec<_> = (0..2u64)
        .map(|t| {
            let door = Arc::clone(&door);
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                let rng = Rng::new(7 + t);
                let mut inside = Vec::new();
                let mut tries = 0u64;
                start.wait();
                for i in 0..30_000u64 {
                    if inside.len() < 90 && rng.below(3) != 0 {
                        let priority = if t == 1 && rng.below(2) == 0 {
                            RESERVE
                        } else {
                            VIEW
                        };
                        tries += 1;
                        match door.try_acquire(Nanos(i), priority) {
                            Ok(ticket) => {
                                let cap = if priority == RESERVE { 80 } else { 64 };
                                assert!(ticket.in_flight() <= cap);
                                inside.push(ticket);
                            }
                            Err(r) => {
                                assert_eq!(r.reason, AdmissionRejectReason::LimitReached);
                                assert!(r.in_flight >= r.threshold);
                            }
                        }
                    } else if !inside.is_empty() {
                        let ticket = inside.swap_remove(rng.below(inside.len() as u64) as usize);
                        door.on_success(ticket, Nanos(i));
                    }
                    assert!(door.in_flight() <= 80);
                }
                for ticket in inside {
                    door.on_ignore(ticket);
                }
                tries
            })
        })
        .collect();
    let tries: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let s = door.stats();
    assert_eq!(s.in_flight, 0);
    assert_eq!(s.admitted + s.refused_limit_reached, tries);
    assert_eq!(s.admitted, s.succeeded + s.ignored);
    assert!(
        s.refused_by_priority[3] > 0,
        "views should have hit 64: {s:?}"
    );
}
