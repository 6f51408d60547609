//! Conformance runner for `bulkhead` (`tests/vectors/bulkhead.json`).
//!
//! Every case builds one `Bulkhead` and replays its steps in order on one thread.
//!
//! # Config
//!
//! `max_concurrent` (integer); `DEFAULT_MAX_CONCURRENT` (12) when absent. No other key.
//!
//! # Steps
//!
//! The runner keeps a list of the permits granted by `try_acquire`, numbered 0, 1, 2, ...
//! in the order they were granted within the case.
//!
//! | `op` | arguments | result (`expect`) |
//! |---|---|---|
//! | `try_acquire` | – | `{"acquired": true}` (the permit is appended to the list), or `{"acquired": false, "in_flight": n, "max_concurrent": m}` from the `BulkheadRejected` rejection |
//! | `release` | `permit` (index into the list; each index at most once) | none (`null`) |
//! | `in_flight` | – | integer |
//! | `available` | – | integer: `max_concurrent - in_flight` |
//! | `stats` | – | object `{"acquired", "rejected", "released", "in_flight"}` of integers |
//! | `from_littles_law` | `rate_per_sec` (number), `p99` (integer ns), `headroom` (number) | `{"max_concurrent": n}`, or `{"error": {"field": f, "kind": k}}` with the `ConfigError`'s field and kind name |
//!
//! `from_littles_law` is a static sizing helper; it does not touch the case's bulkhead.
//! Numbers may be the strings `"nan"`, `"inf"`, `"-inf"`. A step without `expect` is run
//! and its result ignored.

use super::common::*;

use guards_core::bulkhead::{Bulkhead, BulkheadConfig, DEFAULT_MAX_CONCURRENT};
use guards_core::Nanos;
use serde_json::json;

fn config_of(v: &Value) -> BulkheadConfig {
    if let Some(obj) = v.as_object() {
        for k in obj.keys() {
            assert_eq!(k, "max_concurrent", "unknown config key `{k}` in {v}");
        }
    }
    BulkheadConfig {
        max_concurrent: opt_u64(v, "max_concurrent").unwrap_or(DEFAULT_MAX_CONCURRENT),
    }
}

#[test]
fn bulkhead_vectors() {
    replay(
        "bulkhead",
        |case| Ok((Bulkhead::new(config_of(&case["config"]))?, Vec::new())),
        |(b, permits), case, step| match str_of(step, "op") {
            "try_acquire" => match b.try_acquire() {
                Ok(p) => {
                    permits.push(Some(p));
                    json!({"acquired": true})
                }
                Err(full) => json!({
                    "acquired": false,
                    "in_flight": full.in_flight,
                    "max_concurrent": full.max_concurrent,
                }),
            },
            "release" => {
                let k = u64_of(step, "permit") as usize;
                let p = permits
                    .get_mut(k)
                    .and_then(Option::take)
                    .unwrap_or_else(|| panic!("case `{}`: permit {k} not held", name(case)));
                b.release(p);
                Value::Null
            }
            "in_flight" => json!(b.in_flight()),
            "available" => json!(b.available()),
            "stats" => {
                let s = b.stats();
                json!({
                    "acquired": s.acquired,
                    "rejected": s.rejected,
                    "released": s.released,
                    "in_flight": s.in_flight,
                })
            }
            "from_littles_law" => match BulkheadConfig::from_littles_law(
                f64_of(step, "rate_per_sec"),
                Nanos(u64_of(step, "p99")),
                f64_of(step, "headroom"),
            ) {
                Ok(c) => json!({"max_concurrent": c.max_concurrent}),
                Err(e) => json!({"error": {"field": e.field(), "kind": e.kind().name()}}),
            },
            other => panic!("case `{}`: unknown op `{other}`", name(case)),
        },
    );
}
