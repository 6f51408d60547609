//! Settings changed during a run (a timeline): nothing before the change moves, the
//! change takes effect at its instant, a change to what is already in force changes
//! nothing at all, and a change of the system's shape is refused.

use guards_sim::basketly::{run, Config};
use guards_sim::topology::clock;
use guards_sim::{SimError, SimResult};

fn config(setting: &str, until: &str) -> Config {
    let mut c = Config::preset(setting).unwrap();
    c.set("until", until).unwrap();
    c
}

fn index(r: &SimResult, at: &str) -> usize {
    r.index_of(clock::parse(at).unwrap()).unwrap()
}

/// Every column equal over the intervals `[0, upto)`.
fn same_prefix(a: &SimResult, b: &SimResult, upto: usize) {
    for c in &a.columns {
        let other = b.column(&c.name).unwrap_or_else(|| panic!("no {}", c.name));
        // Bit for bit (an interval without a latency sample holds NaN).
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&c.values[..upto]), bits(&other[..upto]), "{}", c.name);
    }
}

#[test]
fn nothing_before_the_change_moves_and_the_guard_acts_from_its_instant() {
    let plain = run(&config("C4", "20:00:20"), 1).unwrap();
    let mut c = config("C4", "20:00:20");
    c.at("20:00:10", &["breaker=on"]).unwrap();
    let changed = run(&c, 1).unwrap();
    let at = index(&changed, "20:00:10");
    same_prefix(&plain, &changed, at);
    let refused = changed.column("breaker_rejections").unwrap();
    assert!(refused[..at].iter().all(|v| *v == 0.0));
    assert!(refused[at..].iter().sum::<f64>() > 0.0, "{refused:?}");
    // The breakers cut the load on stock at once, as in C6 from the start.
    let calls = changed.column("stock_calls").unwrap();
    assert!(calls[at + 1] < 0.5 * calls[at - 1], "{calls:?}");
}

#[test]
fn changing_to_what_is_already_in_force_changes_nothing() {
    let plain = run(&config("C8", "20:00:20"), 3).unwrap();
    let mut c = config("C8", "20:00:20");
    c.at(
        "20:00:05",
        &[
            "breaker=on",
            "stock_call.attempt_timeout=60ms",
            "bulkhead.max_concurrent=12",
        ],
    )
    .unwrap();
    let same = run(&c, 3).unwrap();
    assert_eq!(plain.to_json(), same.to_json());
}

#[test]
fn more_instances_mid_run_is_the_scale_action() {
    // Replay A on C0 scales shop-api from 4 to 8 instances at 20:00:10 with a timed
    // action; the same change as a timeline step gives the same run.
    let replay = run(&config("A-C0", "20:00:30"), 2).unwrap();
    let mut c = config("C0", "20:00:30");
    c.at("20:00:10", &["shopapi.instances=8"]).unwrap();
    let timeline = run(&c, 2).unwrap();
    same_prefix(&replay, &timeline, replay.len());
}

#[test]
fn a_queue_discipline_switched_on_mid_run_takes_the_waiters() {
    let mut c = config("C4", "20:00:15");
    c.at("20:00:05", &["codel=on"]).unwrap();
    let r = run(&c, 1).unwrap();
    let at = index(&r, "20:00:05");
    let dropped = r.column("svc.db.dropped_age").unwrap();
    assert!(dropped[..at].iter().all(|v| *v == 0.0));
    assert!(dropped[at..].iter().sum::<f64>() > 0.0);
    // Fewer connections mid-run: never more than 4 busy once the busy ones finish.
    let mut c = config("C4", "20:00:15");
    c.at("20:00:05", &["db.connections=4"]).unwrap();
    let r = run(&c, 1).unwrap();
    let busy = r.column("svc.db.busy_now").unwrap();
    assert!(busy[..index(&r, "20:00:04")].contains(&8.0));
    assert!(
        busy[index(&r, "20:00:06")..].iter().all(|v| *v <= 4.0),
        "{busy:?}"
    );
}

#[test]
fn a_timeline_run_is_deterministic() {
    let mut c = config("C0", "20:00:40");
    c.at(
        "20:00:25",
        &[
            "stock_call.attempt_timeout=60ms",
            "stock_call.deadline=attempt",
        ],
    )
    .unwrap();
    c.at(
        "20:00:25",
        &["shopapi.deadline_check=on", "app.deadline=attempt"],
    )
    .unwrap();
    c.at("20:00:30", &["rate.cart=600"]).unwrap();
    let a = run(&c, 5).unwrap();
    let b = run(&c, 5).unwrap();
    assert_eq!(a.to_json(), b.to_json());
    // Changes at one instant apply in the order given, cumulatively.
    let s = c.settings_at(clock::hms(20, 0, 26));
    assert!(s.shopapi_deadline_check && s.stock_call.attempt_timeout.is_some());
    assert_eq!(s.rate_cart, 1200.0);
    assert_eq!(c.settings_at(clock::hms(20, 0, 31)).rate_cart, 600.0);
}

#[test]
fn a_rate_switched_on_mid_run_brings_arrivals_from_then() {
    let mut c = config("healthy", "20:00:10");
    c.set("rate.checkout", "0").unwrap();
    c.at("20:00:04", &["rate.checkout=60"]).unwrap();
    let r = run(&c, 1).unwrap();
    let offered = r.column("entry.checkout.offered").unwrap();
    assert!(offered[..4].iter().all(|v| *v == 0.0));
    assert!(offered[5..].iter().all(|v| *v > 30.0), "{offered:?}");
}

#[test]
fn the_shape_of_the_system_and_the_run_itself_cannot_change() {
    let mut c = config("C0", "20:00:20");
    for key in [
        "until=20:01:00",
        "start=19:59:50",
        "interval_ms=500",
        "max_events=10",
        "scale.at=20:00:12",
        "ops.action=flush",
        "agents=on",
        "burst=on",
    ] {
        let e = c.at("20:00:10", &[key]).unwrap_err();
        assert!(matches!(e, SimError::BadValue { .. }), "{key}: {e:?}");
    }
    // A stall step appears when its probability leaves zero: a new step, refused when
    // the run is prepared.
    c.at("20:00:10", &["stock.stall_p=0.1"]).unwrap();
    match run(&c, 1) {
        Err(SimError::Topology { what }) => {
            assert!(
                what.contains("20:00:10.000") && what.contains("stock.view"),
                "{what}"
            )
        }
        other => panic!("{other:?}"),
    }
    // Bad keys, values and times are typed errors.
    let mut c = config("C0", "20:00:20");
    assert!(matches!(
        c.at("20:00:10", &["nope=1"]),
        Err(SimError::UnknownKey { .. })
    ));
    assert!(matches!(
        c.at("20:00:10", &["breaker.failure_rate_threshold=2"]),
        Err(SimError::BadValue { .. })
    ));
    assert!(matches!(
        c.at("soon", &["breaker=on"]),
        Err(SimError::BadValue { .. })
    ));
    assert!(matches!(
        c.at("19:00:00", &["breaker=on"]),
        Err(SimError::BadValue { .. })
    ));
    assert!(matches!(
        c.at("20:00:10", &["breaker"]),
        Err(SimError::BadOverride { .. })
    ));
    assert!(c.timeline.is_empty());
}
