//! Host-wide guards in one process: every kind in a region, found again through a second
//! mapping; the permit codec of every kind; mismatches, damaged and foreign files, full
//! regions, a second independent region, guards in caller memory, and threads racing to
//! create and use one guard. (Several processes: `tests/shared_procs.rs`.)

mod shared_util;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use guards::error::GuardsResult;
use guards::permit::PermitToken;
use guards::shared::{
    place, AnyShared, GuardKind, Refusal, Region, RegionOptions, SharedGuard, SharedPermits,
};
use guards_core::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
use guards_core::admission::{Admission, AdmissionConfig};
use guards_core::brownout::{Brownout, BrownoutConfig};
use guards_core::circuit_breaker::{
    BreakerState, CircuitBreaker, CircuitBreakerConfig, KeyedBreakers, PermitKind,
};
use guards_core::hedging::{Hedging, HedgingConfig};
use guards_core::latency_tracker::{LatencyTracker, LatencyTrackerConfig};
use guards_core::limit::LimitConfig;
use guards_core::limiter::{Limiter, LimiterConfig};
use guards_core::retry_budget::{RetryBudget, RetryBudgetConfig};
use guards_core::{Bulkhead, BulkheadConfig, Nanos, Outcome, Priority};
use shared_util::Scratch;

fn ms(n: u64) -> Nanos {
    Nanos::from_millis(n)
}

/// A breaker that opens after 2 failures of 2 calls and lets 2 probes through after 1 ms.
fn quick_breaker() -> CircuitBreakerConfig {
    CircuitBreakerConfig {
        window_size: 2,
        minimum_calls: 2,
        failure_rate_threshold: 0.5,
        open_duration: ms(1),
        max_open_duration: ms(1),
        half_open_probes: 2,
        probe_timeout: Nanos(777),
        ..CircuitBreakerConfig::default()
    }
}

fn fixed_limiter(limit: u64) -> LimiterConfig {
    LimiterConfig {
        limit: LimitConfig::Fixed(limit),
        ..LimiterConfig::default()
    }
}

#[test]
fn every_kind_lives_in_a_region_and_a_second_mapping_sees_its_state() {
    let s = Scratch::new("kinds");
    let a = s.open();
    let b = s.open(); // a second mapping of the same file, as another process would have
    let now = ms(5);

    let bh = a
        .get_or_create::<Bulkhead>("bulkhead", BulkheadConfig { max_concurrent: 3 })
        .unwrap();
    let (t, _) = bh.try_acquire((), now).unwrap();
    assert_eq!(b.attach::<Bulkhead>("bulkhead").unwrap().in_flight(), 1);
    bh.report(t, Outcome::Success, now).unwrap();

    let cb = a
        .get_or_create::<CircuitBreaker<128>>("breaker", quick_breaker())
        .unwrap();
    for _ in 0..2 {
        let (t, _) = cb.try_acquire((), now).unwrap();
        cb.report(t, Outcome::Timeout, now).unwrap();
    }
    let seen = b
        .get_or_create::<CircuitBreaker<128>>("breaker", quick_breaker())
        .unwrap();
    assert_eq!(seen.state(now), BreakerState::Open);
    assert_eq!(seen.stats().closed_to_open, 1);
    for (name, cap) in [("b1024", 1024u64), ("b8192", 8192), ("b65536", 65536)] {
        let g = AnyShared::breaker(&a, name, quick_breaker(), cap).unwrap();
        assert_eq!((g.kind(), g.capacity()), (GuardKind::CircuitBreaker, cap));
    }

    let keyed = a
        .get_or_create::<KeyedBreakers<16, 128>>("keyed", quick_breaker())
        .unwrap();
    let (t, _) = keyed.try_acquire(42, now).unwrap();
    keyed.report(t, Outcome::Success, now).unwrap();
    assert_eq!(
        b.attach::<KeyedBreakers<16, 128>>("keyed").unwrap().len(),
        1
    );
    for (name, slots, cap) in [("k4", 3u64, 4u64), ("k64", 50, 64), ("k256", 256, 256)] {
        let g = AnyShared::keyed_breakers(&a, name, quick_breaker(), slots).unwrap();
        assert_eq!((g.kind(), g.capacity()), (GuardKind::KeyedBreakers, cap));
    }

    let budget = a
        .get_or_create::<RetryBudget>("budget", RetryBudgetConfig::default())
        .unwrap();
    let before = budget.tokens(now);
    assert!(budget
        .withdraw(now, guards_core::RetryCause::Timeout)
        .is_some());
    assert_eq!(
        b.attach::<RetryBudget>("budget").unwrap().tokens(now),
        before - 1.0
    );

    let lim = a
        .get_or_create::<Limiter>("limiter", fixed_limiter(2))
        .unwrap();
    let (t, _) = lim.try_acquire(Priority::CRITICAL, now).unwrap();
    assert_eq!(b.attach::<Limiter>("limiter").unwrap().in_flight(), 1);
    lim.report(t, Outcome::Success, now).unwrap();

    let adm = a
        .get_or_create::<Admission>("admission", AdmissionConfig::default())
        .unwrap();
    let (t, _) = adm.try_acquire(Priority::CRITICAL, now).unwrap();
    assert_eq!(b.attach::<Admission>("admission").unwrap().in_flight(), 1);
    adm.report(t, Outcome::Success, now).unwrap();

    let thr = a
        .get_or_create::<AdaptiveThrottle>("throttle", AdaptiveThrottleConfig::default())
        .unwrap();
    thr.report(now, Outcome::Overloaded);
    assert_eq!(
        b.attach::<AdaptiveThrottle>("throttle")
            .unwrap()
            .stats()
            .rejected_by_backend,
        1
    );

    let lat = a
        .get_or_create::<LatencyTracker>("latency", LatencyTrackerConfig::default())
        .unwrap();
    lat.record(now, ms(3));
    assert_eq!(b.attach::<LatencyTracker>("latency").unwrap().count(now), 1);

    let hedge = a
        .get_or_create::<Hedging>("hedging", HedgingConfig::default())
        .unwrap();
    hedge.record_latency(now, ms(2));
    assert_eq!(
        b.attach::<Hedging>("hedging").unwrap().tracker().count(now),
        1
    );

    let brown = a
        .get_or_create::<Brownout>("brownout", BrownoutConfig::default())
        .unwrap();
    brown.on_full();
    assert_eq!(b.attach::<Brownout>("brownout").unwrap().stats().full, 1);

    let listed: Vec<(String, GuardKind, u64)> = b
        .guards()
        .into_iter()
        .map(|g| (g.name, g.kind, g.capacity))
        .collect();
    assert_eq!(listed.len(), 16);
    assert_eq!(b.stats().guards, 16);
    for (name, kind, cap) in &listed {
        let g = AnyShared::attach(&b, name).unwrap();
        assert_eq!((g.kind(), g.capacity()), (*kind, *cap), "{name}");
        assert_eq!(g.name().as_deref(), Some(name.as_str()));
    }
    assert_eq!(b.stats().permits_held, 0);
}

/// Round-trip one permit through the record words and back: the rebuilt permit equals the
/// original (so core's private field order matches the mirrors), and garbage words are
/// refused.
fn round_trip<K: SharedPermits>(p: K::Permit) -> K::Permit
where
    K::Permit: PartialEq + std::fmt::Debug,
{
    let words = K::encode(&p);
    let back = K::decode(words).expect("decodes");
    assert_eq!(back, p);
    assert_eq!(K::view(&back), K::view(&p));
    back
}

#[test]
fn the_permit_codec_rebuilds_every_kind_of_permit_exactly() {
    // A half-open breaker of a later generation hands out a probe with a timeout.
    let b = CircuitBreaker::<128>::new(quick_breaker()).unwrap();
    for _ in 0..2 {
        let p = b.try_acquire(ms(1)).unwrap();
        b.report(p, Outcome::Timeout, ms(1));
    }
    let probe = b.try_acquire(ms(3)).unwrap();
    assert!(probe.is_probe() && probe.generation() > 0);
    let probe = round_trip::<CircuitBreaker<128>>(probe);
    assert_eq!(
        <CircuitBreaker<128> as SharedPermits>::view(&probe).probe_timeout,
        Some(Nanos(777))
    );
    b.report(probe, Outcome::Success, ms(3));
    let call = CircuitBreaker::<128>::new(quick_breaker())
        .unwrap()
        .try_acquire(ms(9))
        .unwrap();
    assert_eq!(call.kind(), PermitKind::Call);
    let _ = round_trip::<CircuitBreaker<128>>(call);

    let k = KeyedBreakers::<4, 128>::new(quick_breaker()).unwrap();
    let kp = round_trip::<KeyedBreakers<4, 128>>(k.try_acquire(0xabcd_ef01, ms(7)).unwrap());
    assert_eq!(kp.key(), 0xabcd_ef01);
    k.report(kp, Outcome::Success, ms(8));

    let lim = Limiter::new(fixed_limiter(9)).unwrap();
    let _first = lim.try_acquire(ms(1), Priority::CRITICAL).unwrap();
    let lp = round_trip::<Limiter>(lim.try_acquire(ms(11), Priority::SHEDDABLE).unwrap());
    assert_eq!(
        (lp.start(), lp.in_flight(), lp.priority()),
        (ms(11), 2, Priority::SHEDDABLE)
    );
    assert_ne!(
        lp.threshold(),
        lp.in_flight(),
        "distinct values catch a field swap"
    );
    lim.report(lp, Outcome::Success, ms(12));

    let adm = Admission::new(AdmissionConfig::default()).unwrap();
    let ap = round_trip::<Admission>(adm.try_acquire(ms(13), Priority::SHEDDABLE_PLUS).unwrap());
    assert_eq!(ap.priority(), Priority::SHEDDABLE_PLUS);
    adm.report(ap, Outcome::Success, ms(14));

    let bh = Bulkhead::new(BulkheadConfig { max_concurrent: 1 }).unwrap();
    let bp = round_trip::<Bulkhead>(bh.try_acquire().unwrap());
    bh.release(bp);

    // Words that are no permit are refused, never turned into one.
    assert!(<CircuitBreaker<128> as SharedPermits>::decode([1, 2, 3, 7]).is_none());
    assert!(<CircuitBreaker<128> as SharedPermits>::decode([1, 2, 1 << 40, 0]).is_none());
    assert!(<Limiter as SharedPermits>::decode([1, 1, 1, 8]).is_none());
    assert!(<Admission as SharedPermits>::decode([1, 1, 1, 300]).is_none());
    assert!(<Bulkhead as SharedPermits>::decode([0, 0, 0, 1]).is_none());
    assert!(<KeyedBreakers<4, 128> as SharedPermits>::decode([5, 1, 0, (3 << 8) | 9]).is_none());
}

#[test]
fn a_name_taken_by_another_kind_capacity_or_config_is_refused() {
    let s = Scratch::new("mismatch");
    let r = s.open();
    r.get_or_create::<Bulkhead>("x", BulkheadConfig { max_concurrent: 4 })
        .unwrap();
    let e = r
        .get_or_create::<Bulkhead>("x", BulkheadConfig { max_concurrent: 5 })
        .unwrap_err();
    assert_eq!(e.code, GuardsResult::GuardMismatch);
    assert!(e.to_string().contains("config"), "{e}");
    let e = r
        .get_or_create::<CircuitBreaker<128>>("x", CircuitBreakerConfig::default())
        .unwrap_err();
    assert_eq!(e.code, GuardsResult::GuardMismatch);
    assert!(
        e.to_string()
            .contains("it is a bulkhead, not a circuit_breaker"),
        "{e}"
    );
    assert_eq!(
        r.attach::<Limiter>("x").unwrap_err().code,
        GuardsResult::GuardMismatch
    );
    // `attach` takes the guard whatever its config.
    assert_eq!(
        r.attach::<Bulkhead>("x").unwrap().config().max_concurrent,
        4
    );

    r.get_or_create::<CircuitBreaker<128>>("y", CircuitBreakerConfig::default())
        .unwrap();
    let e = r
        .get_or_create::<CircuitBreaker<1024>>("y", CircuitBreakerConfig::default())
        .unwrap_err();
    assert_eq!(e.code, GuardsResult::GuardMismatch);
    assert!(e.to_string().contains("capacity is 0x80, not 0x400"), "{e}");
    // A float that differs in its last bit is another config.
    let almost = CircuitBreakerConfig {
        failure_rate_threshold: f64::from_bits(0.5f64.to_bits() + 1),
        ..CircuitBreakerConfig::default()
    };
    assert_eq!(
        r.get_or_create::<CircuitBreaker<128>>("y", almost)
            .unwrap_err()
            .code,
        GuardsResult::GuardMismatch
    );
    assert_eq!(
        r.attach::<Bulkhead>("nobody").unwrap_err().code,
        GuardsResult::GuardNotFound
    );
    // A bad config is refused before anything is created, naming its field.
    let e = r
        .get_or_create::<Bulkhead>("z", BulkheadConfig { max_concurrent: 0 })
        .unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigZero);
    assert!(e.to_string().contains("max_concurrent"));
    let e = r
        .get_or_create::<CircuitBreaker<128>>(
            "z",
            CircuitBreakerConfig {
                window_size: 129,
                ..CircuitBreakerConfig::default()
            },
        )
        .unwrap_err();
    assert!(e.to_string().contains("window_size"), "{e}");
    assert_eq!(r.stats().guards, 2);
}

#[test]
fn garbage_foreign_and_damaged_files_are_refused() {
    let s = Scratch::new("garbage");
    std::fs::write(&s.path, vec![0x5a; 64 * 1024]).unwrap();
    let open = |p: &str| {
        Region::open(p, &RegionOptions::default())
            .map(|_| ())
            .unwrap_err()
            .code
    };
    assert_eq!(open(&s.path), GuardsResult::RegionInvalid);
    std::fs::write(&s.path, b"").unwrap();
    assert_eq!(open(&s.path), GuardsResult::RegionInvalid);
    std::fs::remove_file(&s.path).unwrap();

    drop(s.open());
    let good = std::fs::read(&s.path).unwrap();
    let patched = |offset: usize, bytes: &[u8]| {
        let mut b = good.clone();
        b[offset..offset + bytes.len()].copy_from_slice(bytes);
        std::fs::write(&s.path, b).unwrap();
        open(&s.path)
    };
    assert_eq!(patched(0, b"GUARDSXX"), GuardsResult::RegionInvalid);
    // A layout version that is not this library's (the next one).
    let ours = u32::from_ne_bytes(good[8..12].try_into().unwrap());
    assert_eq!(
        patched(8, &(ours + 1).to_ne_bytes()),
        GuardsResult::RegionIncompatible
    );
    assert_eq!(
        patched(16, &7u64.to_ne_bytes()),
        GuardsResult::RegionIncompatible
    );
    std::fs::write(&s.path, &good[..good.len() - 4096]).unwrap();
    assert_eq!(open(&s.path), GuardsResult::RegionInvalid);
    std::fs::write(&s.path, &good).unwrap();
    assert!(Region::open(&s.path, &RegionOptions::default()).is_ok());

    let dir = std::env::temp_dir();
    assert_eq!(open(dir.to_str().unwrap()), GuardsResult::RegionIo);
    let missing = Scratch::new("missing");
    let e = Region::open(
        &missing.path,
        &RegionOptions {
            create: false,
            ..RegionOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.code, GuardsResult::GuardNotFound);
    assert!(!std::path::Path::new(&missing.path).exists());
}

#[test]
fn a_second_region_is_independent() {
    let (s1, s2) = (Scratch::new("one"), Scratch::new("two"));
    let (r1, r2) = (s1.open(), s2.open());
    let cfg = BulkheadConfig { max_concurrent: 1 };
    let g1 = r1.get_or_create::<Bulkhead>("stock", cfg).unwrap();
    let g2 = r2.get_or_create::<Bulkhead>("stock", cfg).unwrap();
    let (t1, _) = g1.try_acquire((), ms(1)).unwrap();
    assert!(matches!(
        g1.try_acquire((), ms(1)),
        Err(Refusal::Rejected(_))
    ));
    let (t2, _) = g2
        .try_acquire((), ms(1))
        .expect("the other region's bulkhead is free");
    assert_eq!(
        g2.report(t1, Outcome::Success, ms(2)).unwrap_err(),
        GuardsResult::PermitWrongGuard
    );
    assert_eq!((g1.in_flight(), g2.in_flight()), (1, 1));
    g1.report(t1, Outcome::Success, ms(2)).unwrap();
    g2.report(t2, Outcome::Success, ms(2)).unwrap();
    assert_eq!((r1.stats().guards, r2.stats().guards), (1, 1));
}

#[test]
fn permits_go_back_once_to_their_own_guard() {
    let s = Scratch::new("once");
    let r = s.open();
    let again = s.open();
    let a = r
        .get_or_create::<Bulkhead>("a", BulkheadConfig { max_concurrent: 2 })
        .unwrap();
    let b = r
        .get_or_create::<Bulkhead>("b", BulkheadConfig { max_concurrent: 2 })
        .unwrap();
    let a_elsewhere = again.attach::<Bulkhead>("a").unwrap();
    let (t, _) = a.try_acquire((), ms(1)).unwrap();
    assert_eq!(
        b.report(t, Outcome::Success, ms(1)).unwrap_err(),
        GuardsResult::PermitWrongGuard
    );
    // Same guard through another region object: its tokens are that object's.
    assert_eq!(
        a_elsewhere.report(t, Outcome::Success, ms(1)).unwrap_err(),
        GuardsResult::PermitWrongGuard
    );
    let forged = PermitToken {
        generation: t.generation + 1,
        ..t
    };
    assert_eq!(
        a.report(forged, Outcome::Success, ms(1)).unwrap_err(),
        GuardsResult::PermitUnknown
    );
    let far = PermitToken {
        slot: u32::MAX,
        ..t
    };
    assert_eq!(
        a.report(far, Outcome::Success, ms(1)).unwrap_err(),
        GuardsResult::PermitUnknown
    );
    assert_eq!(a.in_flight(), 1);
    assert_eq!(a.outstanding(), 1);
    a.report(t, Outcome::Success, ms(1)).unwrap();
    assert_eq!(
        a.report(t, Outcome::Success, ms(1)).unwrap_err(),
        GuardsResult::PermitAlreadyReported
    );
    assert_eq!(
        (a.in_flight(), a.outstanding(), a.stats().released),
        (0, 0, 1)
    );
}

#[test]
fn a_full_region_says_so_and_changes_nothing() {
    let s = Scratch::new("full");
    let r = s.open_with(RegionOptions {
        max_guards: 2,
        permit_slots: 2,
        data_bytes: 16 * 1024,
        ..RegionOptions::default()
    });
    // A tracker (tens of KiB) does not fit in 16 KiB: refused, and no entry is used.
    let e = r
        .get_or_create::<LatencyTracker>("big", LatencyTrackerConfig::default())
        .unwrap_err();
    assert_eq!(e.code, GuardsResult::RegionFull);
    let a = r
        .get_or_create::<Bulkhead>("a", BulkheadConfig { max_concurrent: 10 })
        .unwrap();
    r.get_or_create::<Bulkhead>("b", BulkheadConfig::default())
        .unwrap();
    let e = r
        .get_or_create::<Bulkhead>("c", BulkheadConfig::default())
        .unwrap_err();
    assert_eq!(e.code, GuardsResult::RegionFull);
    assert!(e.to_string().contains("directory"), "{e}");
    // Two permit records: the third permit is refused and the bulkhead left untouched.
    let t1 = a.try_acquire((), ms(1)).unwrap().0;
    let t2 = a.try_acquire((), ms(1)).unwrap().0;
    match a.try_acquire((), ms(1)) {
        Err(Refusal::Failed(f)) => assert_eq!(f.code, GuardsResult::PermitSlotsExhausted),
        other => panic!("{other:?}"),
    }
    assert_eq!(a.in_flight(), 2);
    a.report(t1, Outcome::Success, ms(2)).unwrap();
    a.report(t2, Outcome::Success, ms(2)).unwrap();
    assert_eq!(r.stats().guards, 2);
}

#[test]
fn options_names_and_paths_are_checked() {
    let s = Scratch::new("options");
    let bad = |o: RegionOptions| {
        Region::open(&s.path, &o)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let d = RegionOptions::default();
    assert!(bad(RegionOptions { max_guards: 0, ..d }).contains("max_guards"));
    assert!(bad(RegionOptions {
        max_guards: 65_537,
        ..d
    })
    .contains("max_guards"));
    assert!(bad(RegionOptions {
        permit_slots: 0,
        ..d
    })
    .contains("permit_slots"));
    assert!(bad(RegionOptions {
        data_bytes: 100,
        ..d
    })
    .contains("data_bytes"));
    assert!(bad(RegionOptions {
        data_bytes: 1 << 41,
        ..d
    })
    .contains("data_bytes"));
    assert!(bad(RegionOptions { mode: 0o1777, ..d }).contains("mode"));
    assert!(bad(RegionOptions {
        wait_timeout: Nanos::from_secs(3601),
        ..d
    })
    .contains("wait_timeout"));
    assert!(
        !std::path::Path::new(&s.path).exists(),
        "nothing created on bad options"
    );
    for p in ["", "a\0b", ".."] {
        assert_eq!(
            Region::open(p, &d).map(|_| ()).unwrap_err().code,
            GuardsResult::InvalidArgument,
            "{p:?}"
        );
    }
    let r = s.open();
    for name in ["", &"n".repeat(65), "a\0b"] {
        let e = r
            .get_or_create::<Bulkhead>(name, BulkheadConfig::default())
            .unwrap_err();
        assert_eq!(e.code, GuardsResult::InvalidArgument, "{name:?}");
    }
    r.get_or_create::<Bulkhead>(&"n".repeat(64), BulkheadConfig::default())
        .unwrap();
    r.get_or_create::<Bulkhead>("ünïcode ✓", BulkheadConfig::default())
        .unwrap();
    let names: Vec<String> = r.guards().into_iter().map(|g| g.name).collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"ünïcode ✓".to_owned()));
}

#[test]
fn a_bare_name_lives_in_dev_shm_with_the_mode_asked_for() {
    use std::os::unix::fs::PermissionsExt;
    let name = format!("guards-test-shm-{}", std::process::id());
    let _ = Region::remove(&name);
    let r = Region::open(
        &name,
        &RegionOptions {
            mode: 0o640,
            ..RegionOptions::default()
        },
    )
    .unwrap();
    assert_eq!(r.path(), std::path::Path::new("/dev/shm").join(&name));
    let mode = std::fs::metadata(r.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "applied exactly, whatever the umask");
    Region::remove(&name).unwrap();
    assert_eq!(
        Region::remove(&name).unwrap_err().code,
        GuardsResult::GuardNotFound
    );
    // The mapping outlives the name.
    r.get_or_create::<Bulkhead>("still", BulkheadConfig::default())
        .unwrap();
}

#[test]
fn threads_racing_to_create_a_guard_end_with_one() {
    let s = Scratch::new("race");
    let threads = 8;
    let go = Arc::new(Barrier::new(threads));
    let offsets: Vec<u64> = (0..threads)
        .map(|_| {
            let (go, path) = (Arc::clone(&go), s.path.clone());
            std::thread::spawn(move || {
                go.wait();
                let r = Region::open(&path, &RegionOptions::default()).unwrap();
                let g = r.get_or_create::<Limiter>("one", fixed_limiter(3)).unwrap();
                let _ = g.try_acquire(Priority::CRITICAL, ms(1)).map(|(t, _)| {
                    g.report(t, Outcome::Success, ms(2)).unwrap();
                });
                r.guards()[0].offset
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    assert!(offsets.windows(2).all(|w| w[0] == w[1]), "{offsets:?}");
    let r = s.open();
    assert_eq!(r.stats().guards, 1);
    let g = r.attach::<Limiter>("one").unwrap();
    assert_eq!(g.in_flight(), 0);
}

#[test]
fn threads_on_two_mappings_never_exceed_the_cap() {
    let s = Scratch::new("stress");
    let cap = 3;
    let (threads, ops) = (6, 4000);
    let witness = Arc::new(AtomicU64::new(0));
    let worst = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let region = s.open(); // each thread its own mapping
            let (witness, worst) = (Arc::clone(&witness), Arc::clone(&worst));
            std::thread::spawn(move || {
                let g = region
                    .get_or_create::<Bulkhead>(
                        "cap",
                        BulkheadConfig {
                            max_concurrent: cap,
                        },
                    )
                    .unwrap();
                let mut got = 0u64;
                for n in 0..ops {
                    if let Ok((t, _)) = g.try_acquire((), Nanos(n)) {
                        got += 1;
                        let inside = witness.fetch_add(1, Ordering::SeqCst) + 1;
                        worst.fetch_max(inside, Ordering::Relaxed);
                        assert!(g.in_flight() <= cap);
                        if (n + i) % 7 == 0 {
                            std::thread::yield_now();
                        }
                        witness.fetch_sub(1, Ordering::SeqCst);
                        g.report(t, Outcome::Success, Nanos(n)).unwrap();
                    }
                }
                got
            })
        })
        .collect();
    let acquired: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let g = s.open().attach::<Bulkhead>("cap").unwrap();
    let st = g.stats();
    assert!(worst.load(Ordering::Relaxed) <= cap);
    assert_eq!(st.acquired, acquired);
    assert_eq!(st.acquired + st.rejected, threads * ops);
    assert_eq!((st.in_flight, st.released), (0, acquired));
    assert_eq!(g.outstanding(), 0);
}

/// Memory of `len` bytes aligned to `align`, zeroed, freed on drop.
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(len: usize, align: usize) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len, align).unwrap();
        // SAFETY: a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Aligned { ptr, layout }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

#[test]
fn a_guard_in_caller_memory_is_checked_before_it_is_used() {
    type B = CircuitBreaker<1024>;
    let len = place::size_of::<B>();
    assert_eq!(place::align_of::<B>(), 128);
    assert!(len >= std::mem::size_of::<B>() + 128);
    let mem = Aligned::new(len + 128, 128);
    // SAFETY: `mem` is valid for `len + 128` bytes and outlives every handle made below.
    unsafe {
        assert_eq!(
            place::attach::<B>(mem.ptr, len).unwrap_err().code,
            GuardsResult::GuardNotFound
        );
        let e = place::init_in::<B>(
            mem.ptr,
            len,
            CircuitBreakerConfig {
                window_size: 0,
                ..quick_breaker()
            },
        )
        .unwrap_err();
        assert_eq!(e.code, GuardsResult::ConfigZero);
        place::init_in::<B>(mem.ptr, len, quick_breaker()).unwrap();
        let one = place::attach::<B>(mem.ptr, len).unwrap();
        let two = AnyShared::attach_placed(mem.ptr, len).unwrap();
        assert_eq!(
            (two.kind(), two.capacity()),
            (GuardKind::CircuitBreaker, 1024)
        );
        for _ in 0..2 {
            let (t, _) = one.try_acquire((), ms(1)).unwrap();
            one.report(t, Outcome::Timeout, ms(1)).unwrap();
        }
        let AnyShared::Breaker1024(two) = two else {
            panic!("a 1024-cell breaker")
        };
        assert_eq!(two.state(ms(1)), BreakerState::Open);
        assert_eq!(
            place::attach::<CircuitBreaker<128>>(mem.ptr, len)
                .unwrap_err()
                .code,
            GuardsResult::GuardMismatch
        );
        assert_eq!(
            place::attach::<Bulkhead>(mem.ptr, len).unwrap_err().code,
            GuardsResult::GuardMismatch
        );
        assert_eq!(
            place::attach::<B>(mem.ptr.add(64), len).unwrap_err().code,
            GuardsResult::InvalidArgument
        );
        assert_eq!(
            place::attach::<B>(mem.ptr, len - 1).unwrap_err().code,
            GuardsResult::InvalidArgument
        );
        assert_eq!(
            place::init_in::<B>(std::ptr::null_mut(), len, quick_breaker())
                .unwrap_err()
                .code,
            GuardsResult::NullArgument
        );
    }
}

#[test]
fn kinds_and_registry_agree() {
    for k in GuardKind::ALL {
        assert_eq!(GuardKind::from_name(k.name()), Some(k));
        assert_eq!(GuardKind::from_u32(k as u32), Some(k));
        assert!(guards::shared::kind::capacities(k).count() >= 1, "{k}");
    }
    assert_eq!(GuardKind::from_u32(0), None);
    let caps: Vec<u64> = guards::shared::kind::capacities(GuardKind::CircuitBreaker).collect();
    let private: Vec<u64> = guards::handle::AnyBreaker::CAPACITIES
        .iter()
        .map(|&c| c as u64)
        .collect();
    assert_eq!(
        caps, private,
        "a shared breaker comes in the private breaker's sizes"
    );
    assert_eq!(<Bulkhead as SharedGuard>::CAPACITY, 0);
}
