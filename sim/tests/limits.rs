//! Runs are bounded: an output interval under 1 ms is refused with a typed error, and a
//! run that would hold too much memory (or process too many events) stops where it is,
//! keeps every interval it completed (the same numbers as a run without the limit) and
//! says where and why it stopped.

use guards_core::Nanos;
use guards_sim::basketly::{basketly, Config, Run};
use guards_sim::topology::clock;
use guards_sim::{Limits, Sim, SimError, StopReason};

#[test]
fn an_interval_under_one_millisecond_is_refused() {
    for bad in ["interval_ms=0.0001", "interval_ms=0.999", "interval_ms=0"] {
        let e = Config::with_overrides("C0", &[bad]).unwrap_err();
        match &e {
            SimError::BadValue { key, expected, .. } => {
                assert_eq!(key, "interval_ms");
                assert!(expected.contains("at least 1 ms"), "{expected}");
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert!(Config::with_overrides("C0", &["interval_ms=1"]).is_ok());
    // A topology built by hand is checked by the engine.
    let mut topo = Config::preset("C0").unwrap().topology().unwrap();
    topo.interval = Nanos::new(100);
    match Sim::new(topo, 1) {
        Err(SimError::Topology { what }) => assert!(what.contains("at least 1 ms"), "{what}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_limit_values_are_typed_errors() {
    for bad in [
        "max_memory_mb=0",
        "max_memory_mb=-5",
        "max_memory_mb=NaN",
        "max_events=0",
        "max_events=-1",
        "max_events=lots",
    ] {
        let e = Config::with_overrides("C0", &[bad]).unwrap_err();
        assert!(matches!(e, SimError::BadValue { .. }), "{bad}: {e:?}");
    }
    let c = Config::with_overrides("C0", &["max_memory_mb=64", "max_events=1000"]).unwrap();
    assert_eq!(
        c.limits,
        Limits {
            max_memory: 64 << 20,
            max_events: Some(1000)
        }
    );
}

#[test]
fn a_run_that_never_drains_stops_at_its_memory_limit_and_keeps_what_it_computed() {
    // C0's shop-api queue grows by about 2,900 requests a second for ever.
    let r = basketly("C0", 1, Some("23:59:59"), &["max_memory_mb=16"]).unwrap();
    let stop = r.stopped.expect("stopped by the memory limit");
    match stop.reason {
        StopReason::Memory { limit, used } => {
            assert_eq!(limit, 16 << 20);
            assert!(used > limit);
        }
        other => panic!("{other:?}"),
    }
    assert!(stop.at > clock::hms(20, 0, 5) && stop.at < clock::hms(20, 5, 0));
    // Every interval kept is complete: it ends by the time the run stopped ...
    assert!(!r.is_empty());
    let last_end = r.time_of(r.len() - 1).saturating_add(r.interval);
    assert!(last_end <= stop.at, "{last_end:?} {stop:?}");
    // ... and equal, column by column, to the same run without the limit.
    let full = basketly("C0", 1, Some(&clock::format(last_end)), &[] as &[&str]).unwrap();
    assert_eq!(full.len(), r.len());
    assert!(full.stopped.is_none());
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for c in &r.columns {
        let other = full
            .column(&c.name)
            .unwrap_or_else(|| panic!("no {}", c.name));
        assert_eq!(bits(&c.values), bits(other), "{}", c.name);
    }
    // The JSON says so, with a message a person can read.
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["stopped"]["reason"], "memory");
    assert_eq!(json["stopped"]["limit"], 16u64 << 20);
    assert!(json["stopped"]["message"]
        .as_str()
        .unwrap()
        .contains("memory estimate"));
    assert!(
        serde_json::from_str::<serde_json::Value>(&full.to_json()).unwrap()["stopped"].is_null()
    );
}

#[test]
fn a_run_stops_after_its_event_limit() {
    let r = basketly("C0", 1, None, &["max_events=50000"]).unwrap();
    let stop = r.stopped.expect("stopped by the event limit");
    assert_eq!(stop.reason, StopReason::Events { limit: 50_000 });
    assert_eq!(r.stats.events, 50_000);
    assert!(stop.to_string().contains("50000 events"), "{stop}");
}

#[test]
fn a_stopped_run_reports_it_is_done_and_advances_no_further() {
    let mut run = Run::new("C0", 1, Some("21:00:00"), &["max_events=20000"]).unwrap();
    let mut steps = 0;
    while run.progress() < 1.0 {
        let next = run.now().saturating_add(Nanos::from_secs(1));
        run.advance(next);
        steps += 1;
        assert!(steps < 4000, "the stepped run never ends");
    }
    let stopped = run.stopped().expect("stopped");
    let now = run.now();
    run.advance(clock::hms(21, 0, 0));
    assert_eq!(run.now(), now);
    let r = run.finish();
    assert_eq!(r.stopped, Some(stopped));
}

#[test]
fn the_memory_estimate_grows_with_the_backlog() {
    let topo = Config::preset("C0").unwrap().topology().unwrap();
    let mut sim = Sim::new(topo, 1).unwrap();
    sim.advance(clock::hms(20, 0, 0));
    let healthy = sim.memory_estimate();
    sim.advance(clock::hms(20, 0, 30));
    let backlog = sim.memory_estimate();
    // About 140,000 requests are queued by 20:00:30: at least 64 bytes each.
    assert!(backlog > healthy + 140_000 * 64, "{healthy} {backlog}");
}
