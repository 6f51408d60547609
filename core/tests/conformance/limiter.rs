//! Conformance runner for `limiter` (`tests/vectors/limiter.json`).
//!
//! # Config
//! Keys are `LimiterConfig`'s fields; each may be left out for its default:
//! - `limit`: a limit config object exactly as in `limit.json` (see `limit.rs`), e.g.
//!   `{"algorithm": "aimd", "initial_limit": 4}` or `{"algorithm": "fixed", "limit": 80}`;
//!   default: Vegas with its defaults;
//! - `window`, `min_retry_after`, `max_retry_after`: integer nanoseconds;
//! - `min_window_samples`: integer;
//! - `partitions`: a list of at most 8 objects, entry `i` for priority level `i`, each with
//!   optional `share` (float) and `max_in_flight` (integer); levels past the end of the
//!   list, and keys left out, keep the defaults (share 1.0, no cap).
//!
//! # Permits
//! A `try_acquire` step may name its permit with `"permit": "<name>"`. Each name holds a
//! first-in-first-out list: an admitted permit is appended to it (a refused call appends
//! nothing); `on_success`, `on_dropped` and `on_ignore` take the oldest permit under the
//! name. A `try_acquire` without `permit` gives an admitted permit straight back with
//! `on_ignore` (no sample). `repeat` repeats the whole step, so `try_acquire` with `repeat: 9` appends up to
//! nine permits and `on_success` with `repeat: 9` gives nine back.
//!
//! # Ops
//! - `try_acquire` — `now` (ns), `priority` (level 0..=7), optional `permit`. Result:
//!   `{"admitted": true, "in_flight": n, "threshold": n}` (the permit's `in_flight()` and
//!   `threshold()`), or `{"admitted": false, "reason": r, "retry_after": ns,
//!   "threshold": n, "in_flight": n}` with `r` one of `limit_reached`, `partition_cap`,
//!   `reserved_for_higher_priority`.
//! - `on_success`, `on_dropped` — `now` (ns), `permit`. No result.
//! - `on_ignore` — `permit`. No result.
//! - `limit`, `in_flight` — integer.
//! - `threshold` — `priority`; integer.
//! - `retry_after` — integer ns (the hint a refusal would carry now).
//! - `stats` — an object with every `LimiterStats` field (`acquired`,
//!   `rejected_limit_reached`, `rejected_partition_cap`, `rejected_reserved`,
//!   `rejected_by_priority` as a list of 8 integers, `succeeded`,
//!   `dropped`, `ignored`, `windows`, `limit_changes`, `folds_skipped`, `limit`,
//!   `in_flight`); only the keys present in `expect` are compared.

use std::collections::{HashMap, VecDeque};

use guards_core::limiter::{Limiter, LimiterConfig, LimiterPermit, LimiterStats, PartitionConfig};
use guards_core::priority::MAX_PRIORITIES;
use guards_core::Priority;
use serde_json::json;

use super::common::{self, Value};

/// Reject keys the struct does not have (typos in a vector file).
pub fn check_keys(v: &Value, allowed: &[&str]) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("config must be an object: {v}"));
    for k in obj.keys() {
        assert!(
            allowed.contains(&k.as_str()),
            "unknown config key `{k}` in {v}"
        );
    }
}

fn limiter_config(v: &Value) -> LimiterConfig {
    check_keys(
        v,
        &[
            "limit",
            "window",
            "min_window_samples",
            "partitions",
            "min_retry_after",
            "max_retry_after",
        ],
    );
    let mut c = LimiterConfig::default();
    if let Some(l) = v.get("limit") {
        c.limit = super::limit::limit_config(l);
    }
    if let Some(w) = common::opt_nanos(v, "window") {
        c.window = w;
    }
    if let Some(n) = common::opt_u64(v, "min_window_samples") {
        c.min_window_samples = n;
    }
    if let Some(parts) = v.get("partitions") {
        let parts = parts.as_array().expect("`partitions` must be a list");
        assert!(parts.len() <= MAX_PRIORITIES, "at most 8 partitions");
        for (slot, p) in c.partitions.iter_mut().zip(parts) {
            check_keys(p, &["share", "max_in_flight"]);
            *slot = PartitionConfig {
                share: common::opt_f64(p, "share").unwrap_or(slot.share),
                max_in_flight: common::opt_u64(p, "max_in_flight").unwrap_or(slot.max_in_flight),
            };
        }
    }
    if let Some(n) = common::opt_nanos(v, "min_retry_after") {
        c.min_retry_after = n;
    }
    if let Some(n) = common::opt_nanos(v, "max_retry_after") {
        c.max_retry_after = n;
    }
    c
}

/// A priority level from a step.
pub fn priority(step: &Value) -> Priority {
    let level = common::u64_of(step, "priority");
    u8::try_from(level)
        .ok()
        .and_then(Priority::new)
        .unwrap_or_else(|| panic!("priority {level} out of range"))
}

fn stats_json(s: &LimiterStats) -> Value {
    json!({
        "acquired": s.acquired,
        "rejected_limit_reached": s.rejected_limit_reached,
        "rejected_partition_cap": s.rejected_partition_cap,
        "rejected_reserved": s.rejected_reserved,
        "rejected_by_priority": s.rejected_by_priority.to_vec(),
        "succeeded": s.succeeded,
        "dropped": s.dropped,
        "ignored": s.ignored,
        "windows": s.windows,
        "limit_changes": s.limit_changes,
        "folds_skipped": s.folds_skipped,
        "limit": s.limit,
        "in_flight": s.in_flight,
    })
}

/// Keep only the keys of `got` that `step`'s `expect` names (for `stats`).
pub fn subset(step: &Value, got: Value) -> Value {
    let want = step.get("expect").and_then(Value::as_object);
    match (want, got) {
        (Some(want), Value::Object(mut all)) => {
            all.retain(|k, _| want.contains_key(k));
            for k in want.keys() {
                assert!(all.contains_key(k), "unknown stats key `{k}`");
            }
            Value::Object(all)
        }
        (_, got) => got,
    }
}

fn take(permits: &mut HashMap<String, VecDeque<LimiterPermit>>, step: &Value) -> LimiterPermit {
    let name = common::str_of(step, "permit");
    permits
        .get_mut(name)
        .and_then(VecDeque::pop_front)
        .unwrap_or_else(|| panic!("no permit held under `{name}` at {step}"))
}

fn run_step(
    case: &Value,
    i: usize,
    step: &Value,
    limiter: &Limiter,
    permits: &mut HashMap<String, VecDeque<LimiterPermit>>,
) {
    let got = match common::str_of(step, "op") {
        "try_acquire" => match limiter.try_acquire(common::now(step), priority(step)) {
            Ok(p) => {
                let v = json!({"admitted": true, "in_flight": p.in_flight(), "threshold": p.threshold()});
                match step.get("permit").and_then(Value::as_str) {
                    Some(name) => permits.entry(name.to_owned()).or_default().push_back(p),
                    None => limiter.on_ignore(p),
                }
                v
            }
            Err(r) => json!({
                "admitted": false,
                "reason": r.reason.as_str(),
                "retry_after": r.retry_after.0,
                "threshold": r.threshold,
                "in_flight": r.in_flight,
            }),
        },
        "on_success" => {
            limiter.on_success(take(permits, step), common::now(step));
            Value::Null
        }
        "on_dropped" => {
            limiter.on_dropped(take(permits, step), common::now(step));
            Value::Null
        }
        "on_ignore" => {
            limiter.on_ignore(take(permits, step));
            Value::Null
        }
        "limit" => Value::from(limiter.limit()),
        "in_flight" => Value::from(limiter.in_flight()),
        "threshold" => Value::from(limiter.threshold(priority(step))),
        "retry_after" => Value::from(limiter.retry_after().0),
        "stats" => subset(step, stats_json(&limiter.stats())),
        op => panic!("case `{}`: unknown op `{op}`", common::name(case)),
    };
    if step.get("expect").is_some() {
        common::expect_eq(case, i, step, got);
    }
}

#[test]
fn limiter_vectors() {
    let file = common::load("limiter");
    for case in common::cases(&file) {
        let cfg = limiter_config(&case["config"]);
        if common::is_error_case(case) {
            common::check_config_error(case, Limiter::new(cfg).map(|_| ()));
            continue;
        }
        let limiter =
            Limiter::new(cfg).unwrap_or_else(|e| panic!("case `{}`: {e}", common::name(case)));
        let mut permits = HashMap::new();
        for (i, step) in common::steps(case).iter().enumerate() {
            for _ in 0..common::repeat(step) {
                run_step(case, i, step, &limiter, &mut permits);
            }
        }
    }
}
