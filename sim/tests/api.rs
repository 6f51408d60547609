//! The public API: typed errors for bad input, every preset builds, the JSON shape the
//! Python layer relies on, and a generic (non-Basketly) topology.

use guards::schema::{self, Schema};
use guards_core::retry_policy::RetryPolicyConfig;
use guards_core::Nanos;
use guards_sim::basketly::{basketly, keys, Config, PRESETS, SERIES};
use guards_sim::topology::configs::output;
use guards_sim::topology::{
    clock, Arrivals, CallPolicy, Dist, EdgeSpec, EntrySpec, OpSpec, ServiceSpec, Step, Topology,
    WorkSpec,
};
use guards_sim::{Sim, SimError};

#[test]
fn unknown_preset_is_a_typed_error() {
    match basketly("C9", 1, None, &[] as &[&str]) {
        Err(SimError::UnknownPreset { name, known }) => {
            assert_eq!(name, "C9");
            assert_eq!(known.len(), PRESETS.len());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_key_bad_value_and_bad_override_are_typed_errors() {
    let e = Config::with_overrides("C0", &["nope=1"]).unwrap_err();
    assert_eq!(e, SimError::UnknownKey { key: "nope".into() });
    assert_eq!(e.kind(), "unknown_key");
    let e = Config::with_overrides("C0", &["app.nope=1"]).unwrap_err();
    assert!(matches!(e, SimError::UnknownKey { .. }), "{e:?}");
    for bad in [
        "shopapi.threads=-1",
        "shopapi.threads=abc",
        "shopapi.threads=0",
        "rate.cart=NaN",
        "rate.cart=inf",
        "hiccup.start=20:61:00",
        "app.deadline=sometimes",
        "breaker.failure_rate_threshold=1.5",
        "stock_call.attempt_timeout=0",
        "stock_call.attempt_timeout=soon",
        "app.retry.max_attempts=0",
        "app.retry.backoff.jitter=sometimes",
        "lb=closest",
        "until=soon",
    ] {
        let e = Config::with_overrides("C8", &[bad]).unwrap_err();
        assert!(matches!(e, SimError::BadValue { .. }), "{bad}: {e:?}");
        assert!(!e.to_string().is_empty());
    }
    let e = Config::with_overrides("C0", &["hiccup"]).unwrap_err();
    assert!(matches!(e, SimError::BadOverride { .. }), "{e:?}");
    // until before start
    let e = basketly("C0", 1, Some("19:00:00"), &[] as &[&str]).unwrap_err();
    assert!(matches!(e, SimError::BadValue { .. }), "{e:?}");
}

/// The default of field `field` of `schema` as override text.
fn default_text<C: Copy>(schema: &Schema<C>, field: &str) -> Option<String> {
    let f = schema.field(field)?;
    Some(match output(f.unit, f.default) {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    })
}

#[test]
fn every_documented_key_is_accepted() {
    // Model keys get a plausible value; a guard config's keys (generated from the
    // schemas) get their field's default, which the schema accepts by definition.
    let value = |k: &str| -> String {
        let guard = |prefix: &str| k.strip_prefix(prefix);
        if let Some(f) = ["app.retry.", "stock_call.retry.", "db_call.retry."]
            .iter()
            .find_map(|p| guard(p))
        {
            return default_text(&schema::RETRY_POLICY, f).unwrap();
        }
        for (prefix, found) in [
            (
                "budget.",
                guard("budget.").and_then(|f| default_text(&schema::TOKEN_BUDGET, f)),
            ),
            (
                "codel.",
                guard("codel.").and_then(|f| default_text(&schema::QUEUE_DISCIPLINE, f)),
            ),
            (
                "breaker.",
                guard("breaker.").and_then(|f| default_text(&schema::CIRCUIT_BREAKER, f)),
            ),
            (
                "hedge.",
                guard("hedge.").and_then(|f| default_text(&schema::HEDGING, f)),
            ),
            (
                "bulkhead.",
                guard("bulkhead.").and_then(|f| default_text(&schema::BULKHEAD, f)),
            ),
            (
                "admission.",
                guard("admission.").and_then(|f| default_text(&schema::ADMISSION, f)),
            ),
        ] {
            if let Some(v) = found {
                assert!(k.starts_with(prefix));
                return v;
            }
        }
        if k.ends_with(".limit") {
            return "aimd".into();
        }
        if let Some(f) = k.split(".limit.").nth(1) {
            return default_text(&schema::AIMD, f)
                .or_else(|| default_text(&schema::VEGAS, f))
                .or_else(|| default_text(&schema::GRADIENT, f))
                .unwrap();
        }
        match k {
            "start" => "19:59:50",
            "until" | "hiccup.start" | "hiccup.end" | "scale.at" | "ops.at" | "burst.at"
            | "trace.at" => "20:00:10",
            "trace.entry" => "checkout",
            "lb" => "round_robin",
            "shopapi.work_dist" => "exp",
            "ops.action" => "flush",
            "agents.offsets" => "stable",
            k if k.ends_with(".attempt_timeout") => "60ms",
            k if k.ends_with(".margin") => "1ms",
            k if k.ends_with(".deadline") && k != "db.deadline" => "attempt",
            k if k.ends_with("_p") => "0.5",
            "hiccup" | "budget" | "admission" | "codel" | "breaker" | "bulkhead" | "brownout"
            | "hedge" | "scale" | "agents" | "burst" | "trace" | "fleet" => "on",
            "fleet.sync_interval_ms" => "100",
            k if k.ends_with("deadline_check")
                || k.ends_with(".cancel")
                || k.ends_with("idempotency_key")
                || k.ends_with("reply_503")
                || k.ends_with("overloaded_is_transient")
                || k.ends_with("breaker_ignores_overloaded")
                || k == "db.deadline" =>
            {
                "on"
            }
            _ => "3",
        }
        .to_string()
    };
    for (key, _) in keys() {
        let ks: Vec<String> = if let Some(rest) = key.strip_prefix("HOP.") {
            ["app", "stock_call", "db_call"]
                .iter()
                .map(|h| format!("{h}.{rest}"))
                .filter(|k| {
                    !(k.starts_with("app.") || k.starts_with("db_call."))
                        || !["idempotency_key", "reply_503", "breaker_ignores_overloaded"]
                            .iter()
                            .any(|x| k.ends_with(x))
                })
                .collect()
        } else {
            vec![key.to_string()]
        };
        for k in ks {
            let mut c = Config::preset("C8").unwrap();
            if let Some((head, _)) = k.split_once(".limit.") {
                // A field of an adaptive limit needs that algorithm first.
                let algo = if schema::AIMD.field(k.rsplit('.').next().unwrap()).is_some() {
                    "aimd"
                } else if schema::VEGAS.field(k.rsplit('.').next().unwrap()).is_some() {
                    "vegas"
                } else {
                    "gradient"
                };
                c.set(&format!("{head}.limit"), algo).unwrap();
            }
            c.set(&k, &value(&k))
                .unwrap_or_else(|e| panic!("{k}={}: {e}", value(&k)));
        }
    }
    // Every field of every guard's schema has its key.
    let names: Vec<&str> = keys().iter().map(|(k, _)| k.as_str()).collect();
    for f in schema::CIRCUIT_BREAKER.fields {
        assert!(
            names.contains(&format!("breaker.{}", f.name).as_str()),
            "{}",
            f.name
        );
    }
    for f in schema::RETRY_POLICY.fields {
        assert!(
            names.contains(&format!("HOP.retry.{}", f.name).as_str()),
            "{}",
            f.name
        );
    }
}

#[test]
fn guard_keys_take_the_schemas_units_and_ranges() {
    let mut c = Config::preset("C8").unwrap();
    c.set("breaker.open_duration", "2.5").unwrap(); // seconds, as in Python
    assert_eq!(c.breaker.open_duration, Nanos::from_millis(2500));
    c.set("breaker.open_duration", "750ms").unwrap();
    assert_eq!(c.breaker.open_duration, Nanos::from_millis(750));
    c.set("stock_call.retry.backoff.jitter", "equal").unwrap();
    let e = c.set("breaker.failure_rate_threshold", "1.5").unwrap_err();
    assert!(
        matches!(&e, SimError::BadValue { key, .. } if key == "breaker.failure_rate_threshold"),
        "{e:?}"
    );
    let e = c.set("breaker.window_sise", "20").unwrap_err();
    assert!(matches!(e, SimError::UnknownKey { .. }), "{e:?}");
    let e = c.set("breaker.window_size", "twenty").unwrap_err();
    assert!(e.to_string().contains("1..=65536"), "{e}");
    // Core's whole-config check names the key at fault when the topology is built.
    c.set("breaker.window_kind", "time").unwrap();
    c.set("breaker.window_buckets", "7").unwrap();
    let e = c.topology().unwrap_err();
    assert!(
        matches!(&e, SimError::BadValue { key, .. } if key == "breaker.window_duration"),
        "{e:?}"
    );
    // An adaptive limit where a fixed one was: the bulkhead becomes a limiter.
    let mut c = Config::preset("C8").unwrap();
    c.set("bulkhead.limit", "aimd").unwrap();
    c.set("bulkhead.limit.max_limit", "40").unwrap();
    let t = c.topology().unwrap();
    assert_eq!(t.services[1].limiters.len(), 1);
    assert!(t.services[1].bulkheads.is_empty());
    assert_eq!(t.edges[3].policy.limiter, Some(0));
    let e = Config::with_overrides("C8", &["bulkhead.limit=12", "bulkhead.limit.max_limit=3"])
        .unwrap_err();
    assert!(matches!(e, SimError::BadValue { .. }), "{e:?}");
}

#[test]
fn every_preset_builds_and_starts() {
    for name in PRESETS {
        let c = Config::preset(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(c.name, *name);
        let topo = c.topology().unwrap_or_else(|e| panic!("{name}: {e}"));
        let start = topo.start;
        let sim = Sim::new(topo, 1).unwrap_or_else(|e| panic!("{name}: {e}"));
        let r = sim.run(start.saturating_add(Nanos::from_millis(200)));
        assert_eq!(r.setting, "custom");
        assert_eq!(
            r.len(),
            if *name == "jitter-fixed" || *name == "jitter-full" {
                20
            } else {
                0
            }
        );
    }
}

#[test]
fn json_has_the_documented_shape() {
    let r = basketly("C0", 1, Some("19:59:48"), &["hiccup=off"]).unwrap();
    let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(v["setting"], "C0");
    assert_eq!(v["seed"], 1);
    assert_eq!(v["interval_s"], 1.0);
    let t = v["series"]["t"].as_array().unwrap();
    assert_eq!(t.len(), 3);
    assert_eq!(t[0], "19:59:45");
    for (name, _) in SERIES {
        if *name == "reads_served" {
            continue;
        }
        let s = v["series"][*name]
            .as_array()
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(s.len(), 3, "{name}");
    }
    assert!(v["series"]["goodput"][1].is_u64());
    assert!(v["summary"].get("recovered_at").is_some());
    assert!(v["summary"]["stock_latency_ms"]["p999"].is_number());
    assert!(v["summary"].get("extra_load").is_some());
    let csv = r.to_csv();
    assert!(csv.starts_with("t,offered,app_attempts,goodput,"));
    assert_eq!(csv.lines().count(), 4);
}

#[test]
fn replay_p_adds_reads_served() {
    let r = basketly("P-sync", 1, Some("20:00:03"), &[] as &[&str]).unwrap();
    let reads = r.column("reads_served").unwrap();
    // 10,000 reads queued at 20:00:00, served at 740 a second.
    assert!((reads[0] - 740.0).abs() <= 1.0, "{reads:?}");
    let r = basketly("C0", 1, Some("19:59:47"), &[] as &[&str]).unwrap();
    assert!(r.column("reads_served").is_none());
}

fn mm2() -> Topology {
    // A client calling a two-server service with exponential 5 ms work at 200/s: an M/M/2
    // queue at 50 % utilisation.
    let mut client = ServiceSpec::new(
        "client",
        1,
        1,
        vec![OpSpec {
            name: "go".into(),
            steps: vec![Step::Call(0)],
        }],
    );
    client.client = true;
    let server = ServiceSpec {
        name: "server".into(),
        client: false,
        servers: 2,
        ops: vec![OpSpec {
            name: "work".into(),
            steps: vec![Step::Work(WorkSpec {
                time: Dist::Exp(Nanos::from_millis(5)),
                commit: false,
            })],
        }],
        ..client.clone()
    };
    Topology {
        start: clock::hms(12, 0, 0),
        interval: Nanos::from_secs(1),
        services: vec![client, server],
        edges: vec![EdgeSpec {
            name: "client->server".into(),
            from: 0,
            to: 1,
            op: 0,
            priority: None,
            optional: false,
            record_latency: true,
            policy: CallPolicy::default(),
        }],
        entries: vec![EntrySpec {
            name: "go".into(),
            service: 0,
            op: 0,
            priority: guards_core::Priority::CRITICAL,
            arrivals: Arrivals::Poisson { rate: 200.0 },
        }],
        events: vec![],
    }
}

#[test]
fn a_generic_topology_runs() {
    let t = mm2();
    let until = t.start.saturating_add(Nanos::from_secs(100));
    let r = Sim::new(t, 5).unwrap().run(until);
    assert_eq!(r.len(), 100);
    let offered: f64 = r.column("entry.go.offered").unwrap().iter().sum();
    let done: f64 = r.column("entry.go.full").unwrap().iter().sum();
    assert!((offered - 20_000.0).abs() < 600.0, "{offered}");
    assert!((offered - done).abs() <= 5.0);
    let busy = r.mean("svc.server.busy", "12:00:00", "12:01:40").unwrap();
    assert!((busy - 1.0).abs() < 0.05, "{busy}");
    // M/M/2 at ρ = 0.5: mean sojourn = 1/μ + C/(cμ − λ) with C = 1/3 → 5 + 3.33 ms.
    let lat = &r.latency("client->server").unwrap().calls;
    let mean = lat.iter().map(|(_, d)| d.as_u64() as f64).sum::<f64>() / lat.len() as f64 / 1e6;
    assert!((mean - 6.67).abs() < 0.3, "{mean}");
}

#[test]
fn inconsistent_topologies_are_refused() {
    let mut t = mm2();
    t.edges[0].to = 7;
    assert!(matches!(Sim::new(t, 1), Err(SimError::Topology { .. })));
    let mut t = mm2();
    t.edges[0].op = 3;
    assert!(matches!(Sim::new(t, 1), Err(SimError::Topology { .. })));
    let mut t = mm2();
    t.services[1].servers = 0;
    assert!(matches!(Sim::new(t, 1), Err(SimError::Topology { .. })));
    let mut t = mm2();
    t.entries[0].arrivals = Arrivals::Poisson { rate: f64::NAN };
    assert!(matches!(Sim::new(t, 1), Err(SimError::Topology { .. })));
    let mut t = mm2();
    t.edges[0].policy.retry = Some(RetryPolicyConfig {
        max_attempts: 0,
        ..RetryPolicyConfig::default()
    });
    assert!(matches!(Sim::new(t, 1), Err(SimError::Guard { .. })));
    let mut t = mm2();
    t.edges[0].policy.limiter = Some(0);
    assert!(matches!(Sim::new(t, 1), Err(SimError::Topology { .. })));
    let mut t = mm2();
    t.edges[0].policy.budget = Some(0);
    assert!(matches!(Sim::new(t, 1), Err(SimError::Topology { .. })));
    let mut t = mm2();
    t.interval = Nanos::ZERO;
    assert!(matches!(Sim::new(t, 1), Err(SimError::Topology { .. })));
    // A service that calls itself.
    let mut t = mm2();
    let mut back = t.edges[0].clone();
    back.name = "server->server".into();
    back.from = 1;
    t.edges.push(back);
    t.services[1].ops[0].steps.push(Step::Call(1));
    let e = Sim::new(t, 1).unwrap_err();
    assert!(e.to_string().contains("cycle"), "{e}");
    // An operation calling over an edge that leaves another service.
    let mut t = mm2();
    t.services[1].ops[0].steps.push(Step::Call(0));
    assert!(matches!(Sim::new(t, 1), Err(SimError::Topology { .. })));
    // A guard setting guards-core refuses comes back as a typed guard error.
    let mut t = mm2();
    t.edges[0].policy.retry = Some(RetryPolicyConfig {
        max_attempts: 1000,
        ..RetryPolicyConfig::default()
    });
    assert!(
        matches!(Sim::new(t, 1), Err(SimError::Guard { .. })),
        "attempts 1000"
    );
}

#[test]
fn basketly_topology_round_trips_through_json() {
    for name in [
        "C0",
        "C8",
        "A-C7",
        "P-offset",
        "15t",
        "H-hedge",
        "jitter-full",
        "ops-flush",
    ] {
        let t = Config::preset(name).unwrap().topology().unwrap();
        let text = t.to_json();
        let back = Topology::from_json(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        assert_eq!(back, t, "{name}");
    }
}

#[test]
fn json_topology_errors_name_the_path() {
    let e =
        Topology::from_json("{\"services\": [{\"name\": \"a\", \"servers\": -1}]}").unwrap_err();
    assert!(e.to_string().contains("services[0].servers"), "{e}");
    let e = Topology::from_json("{\"bogus\": 1}").unwrap_err();
    assert_eq!(
        e,
        SimError::UnknownKey {
            key: "bogus".into()
        }
    );
    let e = Topology::from_json("{\"services\": [{\"name\": \"a\", \"bogus\": 1}]}").unwrap_err();
    assert_eq!(
        e,
        SimError::UnknownKey {
            key: "services[0].bogus".into()
        }
    );
    let e = Topology::from_json(
        "{\"services\": [{\"name\": \"a\"}], \"edges\": [{\"name\": \"x\", \"from\": \"nope\", \"to\": 0}]}",
    )
    .unwrap_err();
    assert!(e.to_string().contains("edges[0].from"), "{e}");
    // Down to a field of a guard's config, and its value.
    let mut v = Config::preset("C8").unwrap().topology().unwrap().to_value();
    v["edges"][3]["policy"]["breaker"]["window_size"] = serde_json::json!(0);
    let e = Topology::from_value(&v).unwrap_err();
    match &e {
        SimError::BadValue { key, value, .. } => {
            assert_eq!(key, "edges[3].policy.breaker.window_size");
            assert_eq!(value, "0");
        }
        other => panic!("{other:?}"),
    }
    let mut v = Config::preset("C8").unwrap().topology().unwrap().to_value();
    v["edges"][3]["policy"]["retry"]["backoff"]["cap"] = serde_json::json!("1ms");
    let e = Topology::from_value(&v).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("edges[3].policy.retry.backoff.cap: "),
        "{e}"
    );
    let mut v = Config::preset("C8").unwrap().topology().unwrap().to_value();
    v["services"][2]["admission"]["limits"][3] = serde_json::json!(100);
    let e = Topology::from_value(&v).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("services[2].admission.limits[3]: "),
        "{e}"
    );
    let mut v = Config::preset("C8").unwrap().topology().unwrap().to_value();
    v["edges"][3]["policy"]["attempt_timeout"] = serde_json::json!("soon");
    let e = Topology::from_value(&v).unwrap_err();
    assert!(
        matches!(&e, SimError::BadValue { key, .. } if key == "edges[3].policy.attempt_timeout"),
        "{e:?}"
    );
    let mut v = Config::preset("C8").unwrap().topology().unwrap().to_value();
    v["edges"][3]["policy"]["breaker"]["window_sise"] = serde_json::json!(20);
    let e = Topology::from_value(&v).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("edges[3].policy.breaker.window_sise: "),
        "{e}"
    );
    let e = Topology::from_json("not json").unwrap_err();
    assert!(matches!(e, SimError::BadValue { .. }), "{e:?}");
}

#[test]
fn every_preset_has_one_line_and_every_guard_applies_to_c0() {
    use guards_sim::basketly::{GUARDS, PRESET_INFO};
    let described: Vec<&str> = PRESET_INFO.iter().map(|(n, _)| *n).collect();
    assert_eq!(described, PRESETS);
    assert!(PRESET_INFO
        .iter()
        .all(|(_, d)| !d.is_empty() && !d.contains('\n')));
    for (name, _, sets) in GUARDS {
        // From the start, and switched on during the run.
        Config::with_overrides("C0", sets).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut c = Config::preset("C0").unwrap();
        c.at("20:00:25", sets)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        guards_sim::basketly::Run::from_config(&c, 1).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Switched on one by one, the guards make up C8.
    let mut all = Config::preset("C0").unwrap();
    for (_, _, sets) in GUARDS {
        for s in *sets {
            let (k, v) = s.split_once('=').unwrap();
            all.set(k, v).unwrap();
        }
    }
    let c8 = Config::preset("C8").unwrap();
    all.name = c8.name.clone();
    assert_eq!(all, c8);
}
