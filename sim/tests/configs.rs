//! Topologies embed guards-core's own configs: a pasted config reads with the Python API's
//! names and defaults, an adaptive limit works wherever a fixed one does (an admission
//! door, a limiter in place of a bulkhead), and every topology gets the crate's summary.

use guards_core::limit::LimitConfig;
use guards_sim::topology::clock;
use guards_sim::{Sim, SimResult, SummaryValue, Topology};
use serde_json::{json, Value};

/// A client calling `api` (`servers` servers, 10 ms of work) at `rate` per second, with
/// `policy` on the edge and `api_extra` merged into the api service.
fn topo(rate: f64, servers: u32, policy: Value, api_extra: Value, web_extra: Value) -> Value {
    let mut api = json!({"name": "api", "servers": servers,
                         "ops": [{"name": "get", "steps": [{"work": {"const": "10ms"}}]}]});
    let mut web = json!({"name": "web", "client": true,
                         "ops": [{"name": "page", "steps": [{"call": "web->api"}]}]});
    for (target, extra) in [(&mut api, api_extra), (&mut web, web_extra)] {
        if let (Value::Object(t), Value::Object(e)) = (target, extra) {
            t.extend(e);
        }
    }
    json!({
        "start": "12:00:00",
        "services": [web, api],
        "edges": [{"name": "web->api", "from": "web", "to": "api", "op": "get",
                   "record_latency": true, "policy": policy}],
        "entries": [{"name": "page", "service": "web", "op": "page",
                     "arrivals": {"poisson": rate}}]
    })
}

fn run(v: &Value, secs: u64) -> SimResult {
    let t = Topology::from_value(v).unwrap();
    let until = t.start.saturating_add(guards_core::Nanos::from_secs(secs));
    Sim::new(t, 3).unwrap().run(until)
}

fn sum(r: &SimResult, c: &str) -> f64 {
    r.column(c).unwrap_or_else(|| panic!("{c}")).iter().sum()
}

#[test]
fn a_pasted_breaker_config_is_the_python_apis() {
    // guards.CircuitBreaker(window_size=20, failure_rate_threshold=0.5, minimum_calls=20,
    // open_duration=5.0, half_open_probes=3, probe_timeout=0.1) as its keyword arguments.
    let pasted = json!({"window_size": 20, "failure_rate_threshold": 0.5, "minimum_calls": 20,
                        "open_duration": 5.0, "half_open_probes": 3, "probe_timeout": 0.1});
    let v = topo(10.0, 1, json!({"breaker": pasted}), json!({}), json!({}));
    let t = Topology::from_value(&v).unwrap();
    let b = t.edges[0].policy.breaker.unwrap();
    // Exactly Basketly's C6 breaker, built in Rust from core's config.
    let c6 = guards_sim::basketly::Config::preset("C6").unwrap().breaker;
    assert_eq!(b, c6);
    // Written back in full and read again: the same config.
    let back = Topology::from_json(&t.to_json()).unwrap();
    assert_eq!(back.edges[0].policy.breaker, Some(b));
    assert_eq!(
        t.to_value()["edges"][0]["policy"]["breaker"]["open_duration"],
        "5s"
    );
}

#[test]
fn an_adaptive_admission_limit_keeps_the_calls_inside_below_its_maximum() {
    // 100 servers, 2,000 calls a second of 10 ms: 20 inside on average. A door with an
    // AIMD limit capped at 8 refuses what is beyond it.
    let door = json!({"admission": {"limit": {"algorithm": "aimd", "initial_limit": 4,
                                              "min_limit": 2, "max_limit": 8}}});
    let r = run(&topo(2000.0, 100, json!({}), door, json!({})), 5);
    assert!(
        sum(&r, "svc.api.refused") > 1000.0,
        "{}",
        sum(&r, "svc.api.refused")
    );
    assert!(r
        .column("svc.api.inside")
        .unwrap()
        .iter()
        .all(|x| *x <= 8.0));
    // The same door with a fixed limit far above the load refuses nothing.
    let open = json!({"admission": {"limit": 1000}});
    let r = run(&topo(2000.0, 100, json!({}), open, json!({})), 5);
    assert_eq!(sum(&r, "svc.api.refused"), 0.0);
}

#[test]
fn a_limiter_adapts_where_a_bulkhead_is_fixed() {
    let fixed = json!({"bulkheads": [{"max_concurrent": 5}]});
    let r = run(
        &topo(2000.0, 100, json!({"bulkhead": 0}), json!({}), fixed),
        5,
    );
    assert!(sum(&r, "edge.web->api.bulkhead_rejections") > 1000.0);
    assert!(r
        .column("svc.api.inside")
        .unwrap()
        .iter()
        .all(|x| *x <= 5.0));
    assert!(r.column("edge.web->api.limiter_limit").is_none());

    // An AIMD limiter on the same edge: at most max_limit in flight, and the limit falls
    // when the callee slows past the latency target.
    let limiter = json!({"limiters": [{"limit": {"algorithm": "aimd", "initial_limit": 20,
        "min_limit": 2, "max_limit": 40, "latency_target": "30ms", "interval": "100ms"},
        "window": "50ms", "min_window_samples": 5}]});
    let slow = json!({"slowdowns": [{"start": "12:00:05", "end": "12:00:10", "factor": 10}]});
    let r = run(&topo(1000.0, 100, json!({"limiter": 0}), slow, limiter), 10);
    let limit = r.column("edge.web->api.limiter_limit").unwrap().to_vec();
    assert!(limit.iter().all(|l| (2.0..=40.0).contains(l)), "{limit:?}");
    assert!(limit[8] < limit[4], "{limit:?}");
    assert!(sum(&r, "edge.web->api.limiter_rejections") > 0.0);
    assert!(r
        .column("svc.api.inside")
        .unwrap()
        .iter()
        .all(|x| *x <= 40.0));
    // A limiter index the caller does not have is refused.
    let bad = topo(
        10.0,
        1,
        json!({"limiter": 1}),
        json!({}),
        json!({"limiters": [{}]}),
    );
    assert!(Sim::new(Topology::from_value(&bad).unwrap(), 1).is_err());
    // The limit's own fields are checked by core, named by their path.
    let bad = topo(
        10.0,
        1,
        json!({}),
        json!({}),
        json!({"limiters": [{"limit": {"algorithm": "vegas", "smoothing": 0}}]}),
    );
    let e = Topology::from_value(&bad).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("services[0].limiters[0].limit.smoothing: "),
        "{e}"
    );
    let l = Topology::from_value(&topo(
        10.0,
        1,
        json!({}),
        json!({}),
        json!({"limiters": [{"limit": 7}]}),
    ))
    .unwrap();
    assert_eq!(l.services[0].limiters[0].limit, LimitConfig::Fixed(7));
}

#[test]
fn every_topology_gets_the_summary_with_its_disturbance_and_recovery() {
    let slow = json!({"slowdowns": [{"start": "12:00:05", "end": "12:00:08", "factor": 50}]});
    let r = run(
        &topo(
            50.0,
            4,
            json!({"attempt_timeout": "100ms"}),
            slow,
            json!({}),
        ),
        20,
    );
    let get = |k: &str| r.summary_value(k).cloned();
    assert_eq!(
        get("disturbance.start")
            .as_ref()
            .and_then(SummaryValue::as_str),
        Some("12:00:05.000")
    );
    assert_eq!(
        get("disturbance.end")
            .as_ref()
            .and_then(SummaryValue::as_str),
        Some("12:00:08.000")
    );
    // Recovered: from some interval after the slowdown began, full answers stay >= 95 %.
    let rec = get("recovered_at")
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap();
    let t = clock::parse(&rec).unwrap();
    assert!(
        t >= clock::hms(12, 0, 5) && t <= clock::hms(12, 0, 12),
        "{rec}"
    );
    let i = r.index_of(t).unwrap();
    let full = r.column("entry.page.full").unwrap();
    let offered = r.column("entry.page.offered").unwrap();
    assert!((i..r.len()).all(|k| full[k] >= 0.95 * offered[k]));
    assert!(full[i - 1] < 0.95 * offered[i - 1]);
    let secs = (t.as_u64() as f64 - clock::hms(12, 0, 8).as_u64() as f64) / 1e9;
    assert_eq!(
        get("recovery_s").and_then(|v| v.as_f64()),
        Some(secs),
        "seconds from the end of the slowdown"
    );
    // Entry totals are the columns' sums.
    let n = |k: &str| get(k).and_then(|v| v.as_f64()).unwrap();
    assert_eq!(n("entries.page.offered"), sum(&r, "entry.page.offered"));
    assert_eq!(n("entries.page.full"), sum(&r, "entry.page.full"));
    assert_eq!(n("entries.page.failed"), sum(&r, "entry.page.failed"));
    assert_eq!(
        n("entries.page.goodput"),
        n("entries.page.full") / n("entries.page.offered")
    );
    assert_eq!(n("edges.web->api.calls"), sum(&r, "edge.web->api.calls"));
    assert_eq!(
        n("latency_ms.web->api.count"),
        r.latency("web->api").unwrap().calls.len() as f64
    );
    assert_eq!(n("events"), r.stats.events as f64);
    // Without a slowdown there is no disturbance, and a healthy run recovers at its start.
    let r = run(&topo(50.0, 4, json!({}), json!({}), json!({})), 5);
    assert_eq!(r.summary_value("disturbance"), Some(&SummaryValue::Null));
    assert_eq!(
        r.summary_value("recovered_at")
            .and_then(SummaryValue::as_str),
        Some("12:00:00")
    );
}
