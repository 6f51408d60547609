//! Per-interval latency percentiles per edge: exact nearest-rank P50, P99 and P99.9 of the
//! whole calls that succeeded in each interval (as the caller sees them), `null` in an
//! interval with none.

use guards_sim::basketly::basketly;
use guards_sim::result::quantile_sorted;
use guards_sim::SimResult;

const EDGE: &str = "shop-api->stock.view";

fn col<'a>(r: &'a SimResult, name: &str) -> &'a [f64] {
    r.column(name).unwrap_or_else(|| panic!("no column {name}"))
}

#[test]
fn every_edge_has_the_three_series() {
    let r = basketly("C8", 1, Some("20:00:02"), &[] as &[&str]).unwrap();
    for e in [
        "app->shop-api.product",
        "app->shop-api.cart",
        "app->shop-api.checkout",
        "shop-api->stock.view",
        "shop-api->stock.reserve",
        "stock->db.read",
        "stock->db.write",
    ] {
        for q in ["p50_ms", "p99_ms", "p999_ms"] {
            assert_eq!(col(&r, &format!("edge.{e}.{q}")).len(), r.len(), "{e} {q}");
        }
    }
}

#[test]
fn the_series_are_the_exact_percentiles_of_each_interval() {
    // The edge also keeps every sample (completion time, latency): group them by interval
    // and compare.
    let r = basketly("C1", 2, Some("20:00:12"), &[] as &[&str]).unwrap();
    let samples = &r.latency(EDGE).unwrap().calls;
    for (k, q) in [("p50_ms", 0.5), ("p99_ms", 0.99), ("p999_ms", 0.999)] {
        let series = col(&r, &format!("edge.{EDGE}.{k}"));
        for (i, got) in series.iter().enumerate() {
            let (a, b) = (r.time_of(i), r.time_of(i + 1));
            let mut lat: Vec<_> = samples
                .iter()
                .filter(|(t, _)| *t >= a && *t < b)
                .map(|(_, d)| *d)
                .collect();
            lat.sort_unstable();
            match quantile_sorted(&lat, q) {
                Some(d) => assert_eq!(*got, d.as_u64() as f64 / 1e6, "{k} interval {i}"),
                None => assert!(got.is_nan(), "{k} interval {i}: {got}"),
            }
        }
    }
}

#[test]
fn the_tail_follows_the_hiccup_and_the_timeouts_bound_it() {
    let r = basketly("C1", 1, None, &[] as &[&str]).unwrap();
    let p50 = col(&r, &format!("edge.{EDGE}.p50_ms"));
    let p999 = col(&r, &format!("edge.{EDGE}.p999_ms"));
    let at = |t: &str| {
        r.index_of(guards_sim::topology::clock::parse(t).unwrap())
            .unwrap()
    };
    // Healthy: a few milliseconds at the median.
    assert!(
        p50[at("19:59:50")] > 1.0 && p50[at("19:59:50")] < 6.0,
        "{p50:?}"
    );
    // In the hiccup, the calls that succeed are slow ones, but C1's 60 ms attempts (three
    // of them at most) bound even the slowest.
    assert!(p50[at("20:00:10")] > 5.0 * p50[at("19:59:50")], "{p50:?}");
    for v in &p999[at("20:00:02")..at("20:00:20")] {
        assert!(v.is_nan() || *v <= 3.0 * 60.0 + 1.0, "{p999:?}");
    }
    // Ordered within each interval.
    let p99 = col(&r, &format!("edge.{EDGE}.p99_ms"));
    for i in 0..r.len() {
        if !p50[i].is_nan() {
            assert!(p50[i] <= p99[i] && p99[i] <= p999[i], "interval {i}");
        }
    }
}

#[test]
fn an_interval_without_a_success_is_null() {
    // C0 answers no app attempt in time once the hiccup has begun.
    let r = basketly("C0", 1, Some("20:00:10"), &[] as &[&str]).unwrap();
    let p50 = col(&r, "edge.app->shop-api.cart.p50_ms");
    assert!(p50[0].is_finite());
    assert!(p50[r.len() - 1].is_nan());
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    let series = &json["series"]["edge.app->shop-api.cart.p50_ms"];
    assert!(series[0].is_number() && series[r.len() - 1].is_null());
}
