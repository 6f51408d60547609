//! Fleet guards: shop-api's instances share a fleet-wide allowance of the stock bulkhead
//! (Replay A's scale from 4 to 8 instances) and of the retry budget's burst (side row 13a),
//! sized by guards-core's fleet arithmetic at each instance's own syncs.
//!
//! The bound the model gives: a sync reads, decides and writes at one instant (no claim
//! ever loses a race), every member shrinks at once and grows only into the room the
//! records leave free, and the TTL (at least 2 × the interval) never lets a live member's
//! record expire. So the calls in flight across the fleet never exceed the allowance: the
//! overshoot bound is exactly 0, across the scale-out too.

use guards_sim::basketly::{basketly, Config};
use guards_sim::{SimResult, SummaryValue, Topology};

fn run(setting: &str, seed: u64, until: &str, overrides: &[&str]) -> SimResult {
    basketly(setting, seed, Some(until), overrides).unwrap_or_else(|e| panic!("{setting}: {e}"))
}

fn fleet<'a>(r: &'a SimResult, allowance: &str) -> &'a SummaryValue {
    r.summary_value("fleet")
        .and_then(|f| f.get("shop-api"))
        .and_then(|f| f.get(allowance))
        .unwrap_or_else(|| panic!("no fleet.shop-api.{allowance} in the summary"))
}

fn num(v: &SummaryValue, key: &str) -> f64 {
    v.get(key)
        .and_then(SummaryValue::as_f64)
        .unwrap_or_else(|| panic!("no number {key}"))
}

fn column<'a>(r: &'a SimResult, name: &str) -> &'a [f64] {
    r.column(name).unwrap_or_else(|| panic!("no column {name}"))
}

/// Values bit for bit (NaN, an interval without samples, equals itself).
fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn a_fleet_allowance_of_48_holds_across_the_scale_out() {
    for (seed, extra) in [
        (1, &[][..]),
        (2, &["breaker=off"][..]),
        (3, &["breaker=off", "fleet.sync_interval_ms=50"][..]),
        (
            4,
            &[
                "breaker=off",
                "fleet.sync_interval_ms=1000",
                "fleet.ttl_ms=2000",
            ][..],
        ),
    ] {
        let r = run("A-C7-fleet", seed, "20:00:16", extra);
        let stock = fleet(&r, "stock");
        assert_eq!(num(stock, "allowance"), 48.0);
        // Exact: sampled after every permit taken, resize and join.
        assert!(num(stock, "in_flight_max") <= 48.0, "{extra:?}: {stock:?}");
        assert_eq!(num(stock, "cap_sum_max"), 48.0, "{extra:?}");
        let per_second = column(&r, "fleet.shop-api.stock.in_flight_max");
        assert!(per_second.iter().all(|x| *x <= 48.0));
        let members = column(&r, "fleet.shop-api.members");
        assert_eq!(members.first(), Some(&4.0));
        assert_eq!(members.last(), Some(&8.0));
    }
    // Without breakers the bulkheads are what holds the calls back: the fleet is at its
    // allowance after the scale-out, not below it.
    let r = run("A-C7-fleet", 1, "20:00:16", &["breaker=off"]);
    let t = r
        .index_of(guards_sim::topology::clock::hms(20, 0, 12))
        .unwrap();
    assert_eq!(column(&r, "fleet.shop-api.stock.in_flight_max")[t], 48.0);
}

#[test]
fn the_new_instances_join_at_zero_and_grow_to_their_share() {
    let r = run("A-C7-fleet", 1, "20:00:14", &["breaker=off"]);
    let caps = column(&r, "fleet.shop-api.stock.cap_sum");
    assert!(caps.iter().all(|c| *c == 48.0));
    // With the load balancer 2 s late the new members hold their shares (6 each) with
    // nothing to send: the fleet's calls in flight fall to the old members' 4 × 6.
    let lb = run("A-C7-fleet-lb", 1, "20:00:14", &["breaker=off"]);
    let t = lb
        .index_of(guards_sim::topology::clock::hms(20, 0, 11))
        .unwrap();
    let in_flight = column(&lb, "fleet.shop-api.stock.in_flight_max");
    assert_eq!(in_flight[t], 24.0);
    let routed = column(&lb, "svc.shop-api.instances");
    assert_eq!(routed[t], 4.0);
    assert_eq!(routed[t + 2], 8.0);
    assert_eq!(column(&lb, "fleet.shop-api.members")[t], 8.0);
}

#[test]
fn without_the_fleet_the_scale_out_doubles_the_ceiling() {
    // As the preset, C7's breakers open during the hiccup and keep the calls in flight
    // under 48, but the ceiling the bulkheads allow is 96 after the scale-out.
    let r = run("A-C7", 1, "20:00:16", &["fleet=on"]);
    let stock = fleet(&r, "stock");
    assert_eq!(stock.get("allowance"), Some(&SummaryValue::Null));
    assert_eq!(num(stock, "cap_sum_max"), 96.0);
    // Without breakers the fleet goes past 48 (stock's own admission of 64 views and 80
    // reserves stops it short of 96).
    let r = run("A-C7", 1, "20:00:16", &["fleet=on", "breaker=off"]);
    let stock = fleet(&r, "stock");
    let max = num(stock, "in_flight_max");
    assert!(max > 48.0 && max <= 96.0, "{max}");
    let t = r
        .index_of(guards_sim::topology::clock::hms(20, 0, 9))
        .unwrap();
    let per_second = column(&r, "fleet.shop-api.stock.in_flight_max");
    assert!(per_second[..=t].iter().all(|x| *x <= 48.0));
    assert!(per_second[t + 1..].iter().any(|x| *x > 48.0));
}

#[test]
fn defaults_leave_every_figure_as_it_was() {
    for setting in ["C7", "A-C7", "A-C0", "13a"] {
        let plain = run(setting, 1, "20:00:12", &[]);
        let explicit = run(
            setting,
            1,
            "20:00:12",
            &[
                "scale.lb_delay_ms=0",
                "fleet=off",
                "fleet.sync_interval_ms=250",
                "fleet.ttl_ms=default",
            ],
        );
        assert_eq!(plain.to_json(), explicit.to_json(), "{setting}");
        assert!(plain.summary_value("fleet").is_none());
        assert!(plain.names().iter().all(|n| !n.starts_with("fleet.")));
        // Measuring only adds the fleet's row and columns.
        let measured = run(setting, 1, "20:00:12", &["fleet=on"]);
        let without = |r: &SimResult| {
            r.summary
                .iter()
                .filter(|(k, _)| k != "fleet")
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(without(&plain), without(&measured), "{setting}");
        for c in &plain.columns {
            assert_eq!(
                bits(&c.values),
                bits(column(&measured, &c.name)),
                "{}",
                c.name
            );
        }
    }
    // Before the scale-out a fleet at its steady state changes nothing either.
    let a = run("A-C7", 1, "20:00:10", &[]);
    let b = run("A-C7-fleet", 1, "20:00:10", &[]);
    for c in &a.columns {
        assert_eq!(bits(&c.values), bits(column(&b, &c.name)), "{}", c.name);
    }
}

#[test]
fn the_13a_pair_shares_a_burst_of_40() {
    let with = run("13a-fleet", 1, "20:00:08", &[]);
    let burst = fleet(&with, "retry_burst");
    assert_eq!(num(burst, "allowance"), 40.0);
    assert_eq!(num(burst, "cap_sum_max"), 40.0);
    assert!(num(burst, "tokens_max") <= 40.0);
    let without = run("13a", 1, "20:00:08", &["fleet=on"]);
    let burst = fleet(&without, "retry_burst");
    assert_eq!(num(burst, "cap_sum_max"), 80.0);
    assert_eq!(num(burst, "tokens_max"), 80.0);
}

#[test]
fn bad_fleet_settings_are_refused_naming_the_setting() {
    let refused = |overrides: &[&str], key: &str| {
        let e = Config::with_overrides("A-C7", overrides)
            .and_then(|c| c.topology().map(|_| ()))
            .expect_err(&format!("{overrides:?} accepted"));
        let text = e.to_string();
        assert!(text.contains(key), "{overrides:?}: {text}");
    };
    refused(&["fleet.sync_interval_ms=0"], "fleet.sync_interval_ms");
    refused(&["fleet.sync_interval_ms=-250"], "fleet.sync_interval_ms");
    refused(&["fleet.sync_interval_ms=5"], "fleet.sync_interval_ms");
    refused(&["fleet.ttl_ms=0"], "fleet.ttl_ms");
    refused(&["fleet.ttl_ms=-1"], "fleet.ttl_ms");
    // Shorter than the interval, and shorter than the agent's 2 × the interval.
    refused(&["fleet.stock=48", "fleet.ttl_ms=100"], "fleet.ttl_ms");
    refused(&["fleet.stock=48", "fleet.ttl_ms=400"], "fleet.ttl_ms");
    refused(
        &[
            "fleet.sync_interval_ms=1000",
            "fleet.stock=48",
            "fleet.ttl_ms=1500",
        ],
        "fleet.ttl_ms",
    );
    refused(&["fleet.stock=0"], "fleet.stock");
    refused(&["fleet.stock=-48"], "fleet.stock");
    refused(&["fleet.stock=many"], "fleet.stock");
    refused(&["fleet.retry_burst=-1"], "fleet.retry_burst");
    refused(&["scale.lb_delay_ms=-5"], "scale.lb_delay_ms");
    refused(&["bulkhead=off", "fleet.stock=48"], "fleet.stock");
    refused(&["budget=off", "fleet.retry_burst=40"], "fleet.retry_burst");
    // The fleet is set from the start, not during the run.
    let mut c = Config::preset("A-C7").unwrap();
    assert!(c.at("20:00:05", &["fleet.stock=48"]).is_err());
    assert!(c.at("20:00:05", &["scale.lb_delay_ms=100"]).is_err());
    // The accepted ones.
    let c = Config::with_overrides(
        "A-C7",
        &[
            "fleet.stock=48",
            "fleet.sync_interval_ms=100",
            "fleet.ttl_ms=200",
        ],
    )
    .unwrap();
    assert!(c.topology().is_ok());
}

#[test]
fn a_topology_with_a_fleet_round_trips_as_json() {
    let t = Config::preset("A-C7-fleet-lb").unwrap().topology().unwrap();
    let json = t.to_json();
    assert!(
        json.contains("\"fleet\":{\"sync_interval\":\"250ms\""),
        "{json}"
    );
    assert!(json.contains("\"lb_delay\":\"2s\""), "{json}");
    assert_eq!(Topology::from_json(&json).unwrap(), t);
    // Without a fleet or a delay the JSON has neither key.
    let plain = Config::preset("A-C7")
        .unwrap()
        .topology()
        .unwrap()
        .to_json();
    assert!(!plain.contains("\"fleet\"") && !plain.contains("lb_delay"));
    // A budget that is not a token bucket cannot share a burst.
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["services"][1]["fleet"]["allowances"][0]["guard"] = serde_json::json!({"budget": 3});
    let e = Topology::from_value(&v)
        .and_then(|t| guards_sim::Sim::new(t, 1).map(|_| ()))
        .unwrap_err();
    assert!(e.to_string().contains("no budget 3"), "{e}");
}
