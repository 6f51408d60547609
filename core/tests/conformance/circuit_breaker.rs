//! Conformance runner for `circuit_breaker` (`tests/vectors/circuit_breaker.json`).
//!
//! # Building the guard
//!
//! - `config`: fields of `CircuitBreakerConfig`; a missing key takes its default.
//!   `window_kind` is `"count"` or `"time"`; `window_size`, `window_buckets`,
//!   `minimum_calls`, `half_open_probes` are integers; `window_duration`,
//!   `slow_call_duration`, `open_duration`, `max_open_duration`, `probe_timeout` are integer
//!   nanoseconds; `failure_rate_threshold`, `slow_call_rate_threshold`,
//!   `open_duration_multiplier` are numbers (or `"nan"`, `"inf"`, `"-inf"`). An unknown key
//!   is an error in the vector file.
//! - The breaker has the default capacity (128 cells): `window_size` above 128, or more
//!   than 42 time buckets, is rejected with `out_of_range` on that field.
//! - A case with `"keyed_slots": 4` builds a keyed set of 4 slots (every entry uses
//!   `config`); its breaker steps carry `"key": <integer>` and act on the breaker of that
//!   key (inserted on first use). 4 is the only slot count the vectors use.
//!
//! # Steps
//!
//! Permits are held in named FIFO queues: `"as": "<name>"` on `try_acquire` appends the
//! permit (if admitted) to queue `<name>`; `"permit": "<name>"` on `on_success`,
//! `on_failure` and `on_ignore` takes the oldest permit of that queue. A permit admitted by a
//! step without `"as"` is dropped unreported. `repeat` runs a step n times, each with the
//! same arguments and the same expected result.
//!
//! | op | arguments | result (`expect`) |
//! |---|---|---|
//! | `try_acquire` | `now`, optional `as`, optional `key` | `{"admitted": "call", "generation": g}`, `{"admitted": "probe", "generation": g, "probe_timeout": ns}`, `{"rejected": "open", "retry_at": ns}` or `{"rejected": "half_open_full", "retry_at": ns}` |
//! | `on_success`, `on_failure` | `permit`, `now`, optional `key` | the effect: `"counted"`, `"opened"`, `"probe_passed"`, `"closed"`, `"reopened"` or `"discarded"` |
//! | `on_ignore` | `permit`, optional `key` | none (`expect` absent) |
//! | `state` | `now`, optional `key` | `"closed"`, `"open"` or `"half_open"` (an open breaker whose open-until has passed is `"half_open"`) |
//! | `status` | optional `key` | `{"state", "generation", "probes_issued", "probes_passed", "consecutive_opens", "half_open_at"}` (`half_open_at` is 0 unless open) |
//! | `window_counts` | `now`, optional `key` | `{"calls", "failures", "slow"}` (all 0 unless closed) |
//! | `stats` | optional `key` | an object with some of the counters of `CircuitBreakerStats` (snake_case field names); only the listed counters are compared |
//! | `get_or_insert` | `key` (keyed cases) | `"ok"` or `"full"` |
//! | `len` | (keyed cases) | the number of keys in the set |
//! | `key_of` | `bytes`: a string, hashed as its UTF-8 bytes | the 64-bit FNV-1a key as a string: `"0x"` and 16 lowercase hex digits |

use std::collections::{HashMap, VecDeque};

use guards_core::circuit_breaker::{
    key_of, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerPermit, KeyedBreakers, WindowKind,
};
use guards_core::{ConfigError, Nanos};
use serde_json::json;

use crate::common::{self, Value};

const SLOTS: usize = 4;

fn config_of(case: &Value) -> CircuitBreakerConfig {
    let mut c = CircuitBreakerConfig::default();
    let Some(fields) = case.get("config").and_then(Value::as_object) else {
        return c;
    };
    let cfg = &case["config"];
    for key in fields.keys() {
        match key.as_str() {
            "window_kind" => {
                c.window_kind = match common::str_of(cfg, key) {
                    "count" => WindowKind::Count,
                    "time" => WindowKind::Time,
                    other => panic!("case `{}`: unknown window_kind {other}", common::name(case)),
                }
            }
            "window_size" => c.window_size = common::u64_of(cfg, key),
            "window_duration" => c.window_duration = Nanos(common::u64_of(cfg, key)),
            "window_buckets" => c.window_buckets = common::u64_of(cfg, key),
            "failure_rate_threshold" => c.failure_rate_threshold = common::f64_of(cfg, key),
            "slow_call_duration" => c.slow_call_duration = Nanos(common::u64_of(cfg, key)),
            "slow_call_rate_threshold" => c.slow_call_rate_threshold = common::f64_of(cfg, key),
            "minimum_calls" => c.minimum_calls = common::u64_of(cfg, key),
            "open_duration" => c.open_duration = Nanos(common::u64_of(cfg, key)),
            "open_duration_multiplier" => c.open_duration_multiplier = common::f64_of(cfg, key),
            "max_open_duration" => c.max_open_duration = Nanos(common::u64_of(cfg, key)),
            "half_open_probes" => c.half_open_probes = common::u64_of(cfg, key),
            "probe_timeout" => c.probe_timeout = Nanos(common::u64_of(cfg, key)),
            other => panic!("case `{}`: unknown config key {other}", common::name(case)),
        }
    }
    c
}

/// The guard a case runs against: one breaker, or a keyed set.
enum Target {
    One(Box<CircuitBreaker>),
    Keyed(Box<KeyedBreakers<SLOTS>>),
}

impl Target {
    fn breaker(&self, case: &Value, step: &Value) -> &CircuitBreaker {
        match self {
            Target::One(b) => b,
            Target::Keyed(set) => {
                let key = common::u64_of(step, "key");
                set.get_or_insert(key)
                    .unwrap_or_else(|e| panic!("case `{}`: {e} (step {step})", common::name(case)))
            }
        }
    }
}

fn admitted(p: &CircuitBreakerPermit) -> Value {
    match p.probe_timeout() {
        Some(t) => json!({"admitted": "probe", "generation": p.generation(), "probe_timeout": t.0}),
        None => json!({"admitted": "call", "generation": p.generation()}),
    }
}

fn run_case(case: &Value) {
    let cfg = config_of(case);
    if common::is_error_case(case) {
        let got: Result<(), ConfigError> = CircuitBreaker::<128>::new(cfg).map(|_| ());
        common::check_config_error(case, got);
        return;
    }
    let target = match common::opt_u64(case, "keyed_slots") {
        Some(n) => {
            assert_eq!(
                n as usize,
                SLOTS,
                "case `{}`: keyed_slots",
                common::name(case)
            );
            Target::Keyed(Box::new(KeyedBreakers::new(cfg).expect("valid config")))
        }
        None => Target::One(Box::new(CircuitBreaker::new(cfg).expect("valid config"))),
    };
    let mut queues: HashMap<String, VecDeque<CircuitBreakerPermit>> = HashMap::new();
    common::run_steps(case, |i, step| {
        let op = common::str_of(step, "op");
        let take = |queues: &mut HashMap<String, VecDeque<CircuitBreakerPermit>>| {
            let name = common::str_of(step, "permit");
            queues
                .get_mut(name)
                .and_then(VecDeque::pop_front)
                .unwrap_or_else(|| {
                    panic!(
                        "case `{}`, step {i}: no permit in `{name}`",
                        common::name(case)
                    )
                })
        };
        match op {
            "try_acquire" => {
                let b = target.breaker(case, step);
                match b.try_acquire(common::now(step)) {
                    Ok(p) => {
                        let v = admitted(&p);
                        if let Some(name) = step.get("as").and_then(Value::as_str) {
                            queues.entry(name.to_owned()).or_default().push_back(p);
                        }
                        v
                    }
                    Err(r) => json!({"rejected": r.reason.name(), "retry_at": r.retry_at.0}),
                }
            }
            "on_success" | "on_failure" => {
                let b = target.breaker(case, step);
                let p = take(&mut queues);
                let e = if op == "on_success" {
                    b.on_success(p, common::now(step))
                } else {
                    b.on_failure(p, common::now(step))
                };
                json!(e.name())
            }
            "on_ignore" => {
                let b = target.breaker(case, step);
                b.on_ignore(take(&mut queues));
                Value::Null
            }
            "state" => json!(target.breaker(case, step).state(common::now(step)).name()),
            "status" => {
                let s = target.breaker(case, step).status();
                json!({
                    "state": s.state.name(),
                    "generation": s.generation,
                    "probes_issued": s.probes_issued,
                    "probes_passed": s.probes_passed,
                    "consecutive_opens": s.consecutive_opens,
                    "half_open_at": s.half_open_at.0,
                })
            }
            "window_counts" => {
                let w = target.breaker(case, step).window_counts(common::now(step));
                json!({"calls": w.calls, "failures": w.failures, "slow": w.slow})
            }
            "stats" => {
                let s = target.breaker(case, step).stats();
                let all = json!({
                    "successes": s.successes,
                    "failures": s.failures,
                    "slow_calls": s.slow_calls,
                    "probes_admitted": s.probes_admitted,
                    "probe_successes": s.probe_successes,
                    "probe_failures": s.probe_failures,
                    "ignored": s.ignored,
                    "discarded": s.discarded,
                    "rejected_open": s.rejected_open,
                    "rejected_half_open": s.rejected_half_open,
                    "closed_to_open": s.closed_to_open,
                    "open_to_half_open": s.open_to_half_open,
                    "half_open_to_closed": s.half_open_to_closed,
                    "half_open_to_open": s.half_open_to_open,
                });
                // Only the counters the vector lists are compared.
                let want = step["expect"].as_object().expect("stats expects an object");
                let picked: serde_json::Map<String, Value> = want
                    .keys()
                    .map(|k| {
                        let v = all.get(k).cloned().unwrap_or_else(|| {
                            panic!("case `{}`: unknown counter {k}", common::name(case))
                        });
                        (k.clone(), v)
                    })
                    .collect();
                Value::Object(picked)
            }
            "get_or_insert" => match &target {
                Target::Keyed(set) => match set.get_or_insert(common::u64_of(step, "key")) {
                    Ok(_) => json!("ok"),
                    Err(_) => json!("full"),
                },
                Target::One(_) => panic!("get_or_insert outside a keyed case"),
            },
            "len" => match &target {
                Target::Keyed(set) => json!(set.len()),
                Target::One(_) => panic!("len outside a keyed case"),
            },
            "key_of" => common::to_hex(key_of(common::str_of(step, "bytes").as_bytes())),
            other => panic!("case `{}`: unknown op {other}", common::name(case)),
        }
    });
}

#[test]
fn circuit_breaker_vectors() {
    let file = common::load("circuit_breaker");
    let cases = common::cases(&file);
    let mut names = std::collections::HashSet::new();
    for case in cases {
        assert!(names.insert(common::name(case)), "duplicate case name");
        run_case(case);
    }
}
