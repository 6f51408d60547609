//! Traces of single actions: which actions are traced, that every hop and decision is
//! there in order with consistent times, and that tracing changes nothing in the run.

use guards_core::Nanos;
use guards_sim::basketly::{basketly, Config};
use guards_sim::topology::clock;
use guards_sim::trace::{Ended, Trace, TraceSpec, TraceWhat};
use guards_sim::{Sim, SimError};

fn traced(setting: &str, seed: u64, until: &str, sets: &[&str]) -> Vec<Trace> {
    basketly(setting, seed, Some(until), sets).unwrap().traces
}

#[test]
fn tracing_changes_nothing_in_the_run() {
    let plain = basketly("C8", 4, Some("20:00:09"), &[] as &[&str]).unwrap();
    let mut traced = basketly(
        "C8",
        4,
        Some("20:00:09"),
        &["trace.at=20:00:05", "trace.count=20"],
    )
    .unwrap();
    assert_eq!(traced.traces.len(), 20);
    traced.traces.clear();
    assert_eq!(plain.to_json(), traced.to_json());
}

#[test]
fn the_first_actions_from_the_instant_of_the_entry_asked_for() {
    let ts = traced(
        "C5",
        1,
        "20:00:06",
        &["trace.at=20:00:05.5", "trace.entry=cart", "trace.count=5"],
    );
    assert_eq!(ts.len(), 5);
    let from = clock::parse("20:00:05.5").unwrap();
    for w in ts.windows(2) {
        assert!(w[0].start <= w[1].start && w[0].root < w[1].root);
    }
    for t in &ts {
        assert_eq!(t.entry, "cart");
        assert!(t.start >= from);
        assert_eq!(t.events[0].what, TraceWhat::Start);
        assert_eq!(t.events[0].depth, 0);
    }
}

#[test]
fn every_hop_is_there_in_order_with_consistent_times() {
    for (setting, seed) in [("C8", 1), ("C1", 2), ("C5", 3), ("H-hedge", 1)] {
        let until = if setting == "H-hedge" {
            "20:00:10"
        } else {
            "20:00:12"
        };
        for t in traced(
            setting,
            seed,
            until,
            &["trace.at=20:00:07", "trace.count=30"],
        ) {
            let ev = &t.events;
            // Times never go back, and the action ends at its client, once.
            assert!(
                ev.windows(2).all(|w| w[0].at <= w[1].at),
                "{}",
                t.timeline()
            );
            let done: Vec<_> = ev
                .iter()
                .filter(|e| e.depth == 0 && matches!(e.what, TraceWhat::Done { .. }))
                .collect();
            assert!(done.len() <= 1, "{}", t.timeline());
            // Each attempt sent arrives one hop deeper at the same instant.
            for (i, e) in ev.iter().enumerate() {
                if let TraceWhat::Send { .. } = e.what {
                    let next = ev[i + 1..]
                        .iter()
                        .find(|x| x.depth == e.depth + 1)
                        .unwrap_or_else(|| panic!("{setting}: nothing arrives\n{}", t.timeline()));
                    assert_eq!(next.at, e.at, "{}", t.timeline());
                    assert!(
                        matches!(
                            next.what,
                            TraceWhat::Queued { .. }
                                | TraceWhat::Started { .. }
                                | TraceWhat::Refused { .. }
                                | TraceWhat::Done { .. }
                        ),
                        "{}",
                        t.timeline()
                    );
                }
                // An answer's latency is the time since its attempt was sent.
                if let TraceWhat::Answer { latency, .. } = e.what {
                    let sent = ev[..i]
                        .iter()
                        .rev()
                        .find(|x| x.depth == e.depth && matches!(x.what, TraceWhat::Send { .. }))
                        .expect("an answer follows a send");
                    assert!(e.at.saturating_sub(latency) >= sent.at, "{}", t.timeline());
                }
            }
        }
    }
}

#[test]
fn an_as_shipped_cart_view_shows_the_timeouts_and_retries() {
    // C0: the cart view times out at the app every 2 s and is retried at once, three
    // attempts in all, while its abandoned attempts keep waiting in shop-api's queue.
    let ts = traced(
        "C0",
        1,
        "20:00:20",
        &["trace.at=20:00:05", "trace.entry=cart"],
    );
    let t = &ts[0];
    let app: Vec<&TraceWhat> = t
        .events
        .iter()
        .filter(|e| e.depth == 0)
        .map(|e| &e.what)
        .collect();
    let sends = app
        .iter()
        .filter(|w| matches!(w, TraceWhat::Send { .. }))
        .count();
    let timeouts: Vec<Nanos> = app
        .iter()
        .filter_map(|w| match w {
            TraceWhat::Timeout { after, .. } => Some(*after),
            _ => None,
        })
        .collect();
    assert_eq!(sends, 3, "{}", t.timeline());
    assert_eq!(timeouts, vec![Nanos::from_secs(2); 3], "{}", t.timeline());
    assert!(matches!(
        app.last(),
        Some(TraceWhat::Done {
            ended: Ended::Error,
            ..
        })
    ));
    assert!(t
        .events
        .iter()
        .any(|e| e.depth == 1 && matches!(e.what, TraceWhat::Queued { ahead } if ahead > 100)));
    assert!(t
        .timeline()
        .contains("stops waiting after 2000.000 ms (timeout)"));
}

#[test]
fn a_reserve_refused_by_its_breaker_shows_why() {
    // Over a few seeds of C8, some traced checkouts meet an open reserve breaker: the
    // trace names the guard that refused them.
    let found = (1..=4).any(|seed| {
        traced(
            "C8",
            seed,
            "20:00:19",
            &["trace.at=20:00:03", "trace.entry=checkout", "trace.count=400"],
        )
        .iter()
        .any(|t| {
            t.events.iter().any(|e| {
                matches!(&e.what, TraceWhat::NotSent { why, edge } if *why == "breaker open" && edge == "shop-api->stock.reserve")
            })
        })
    });
    assert!(found);
}

#[test]
fn bad_trace_settings_are_typed_errors() {
    for bad in [
        "trace.entry=basket",
        "trace.count=0",
        "trace.count=5000",
        "trace.at=later",
    ] {
        let e = Config::with_overrides("C8", &[bad]).unwrap_err();
        assert!(matches!(e, SimError::BadValue { .. }), "{bad}: {e:?}");
    }
    let topo = Config::preset("C8").unwrap().topology().unwrap();
    let mut sim = Sim::new(topo, 1).unwrap();
    let e = sim
        .set_trace(&TraceSpec {
            from: Nanos::ZERO,
            entry: Some("basket".into()),
            count: 1,
        })
        .unwrap_err();
    assert!(e.to_string().contains("product, cart, checkout"), "{e}");
}

#[test]
fn the_trace_json_names_each_event() {
    let r = basketly(
        "C8",
        1,
        Some("20:00:08"),
        &["trace.at=20:00:07", "trace.entry=checkout"],
    )
    .unwrap();
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    let events = json["traces"][0]["events"].as_array().unwrap();
    assert_eq!(events[0]["event"], "start");
    assert_eq!(events[1]["event"], "send");
    assert_eq!(events[1]["edge"], "app->shop-api.checkout");
    assert_eq!(events[1]["attempt"], 1);
    assert_eq!(events[1]["wait_ms"], 2000.0);
    assert!(events
        .iter()
        .all(|e| e["text"].is_string() && e["t"].is_string()));
    assert!(serde_json::from_str::<serde_json::Value>(
        &basketly("C8", 1, Some("20:00:01"), &[] as &[&str])
            .unwrap()
            .to_json()
    )
    .unwrap()["traces"]
        .is_null());
}
