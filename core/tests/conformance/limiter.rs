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

use guards_core::limiter::{Limiter, LimiterConfig, LimiterPermit, LimiterStats, PartitionConfig};
use guards_core::priority::MAX_PRIORITIES;
use serde_json::json;

use super::common::{self, check_keys, priority, subset, Held, Value};

fn limiter_config(v: &Value) -> LimiterConfig {
    check_keys(
        "config",
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
            check_keys("config", p, &["share", "max_in_flight"]);
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

fn run_step(
    limiter: &Limiter,
    permits: &mut Held<LimiterPermit>,
    case: &Value,
    step: &Value,
) -> Value {
    match common::str_of(step, "op") {
        "try_acquire" => match limiter.try_acquire(common::now(step), priority(step)) {
            Ok(p) => {
                let v = json!({"admitted": true, "in_flight": p.in_flight(), "threshold": p.threshold()});
                permits.keep(step, p, |p| limiter.on_ignore(p));
                v
            }
            Err(r) => json!({
                "admitted": false,
                "reason": r.reason.name(),
                "retry_after": r.retry_after(common::now(step)).0,
                "threshold": r.threshold,
                "in_flight": r.in_flight,
            }),
        },
        "on_success" => {
            limiter.on_success(permits.take(step), common::now(step));
            Value::Null
        }
        "on_dropped" => {
            limiter.on_dropped(permits.take(step), common::now(step));
            Value::Null
        }
        "on_ignore" => {
            limiter.on_ignore(permits.take(step));
            Value::Null
        }
        "limit" => Value::from(limiter.limit()),
        "in_flight" => Value::from(limiter.in_flight()),
        "threshold" => Value::from(limiter.threshold(priority(step))),
        "retry_after" => Value::from(limiter.retry_after().0),
        "stats" => subset(step, stats_json(&limiter.stats())),
        op => panic!("case `{}`: unknown op `{op}`", common::name(case)),
    }
}

#[test]
fn limiter_vectors() {
    common::replay(
        "limiter",
        |case| {
            let limiter = Limiter::new(limiter_config(&case["config"]))?;
            Ok((limiter, Held::new("permit")))
        },
        |(limiter, permits), case, step| run_step(limiter, permits, case, step),
    );
}
