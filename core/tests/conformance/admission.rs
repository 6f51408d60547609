//! Conformance runner for `admission` (`tests/vectors/admission.json`).
//!
//! # Config
//! Keys are `AdmissionConfig`'s fields; each may be left out for its default:
//! - `limits`: a list of at most 8 integers, entry `i` for priority level `i` (default
//!   `[80, 64, 64, 64, 64, 64, 64, 64]`); levels past the end of the list keep their
//!   default;
//! - `shares`: a list of at most 8 floats, the same way (default 1.0 each);
//! - `limit`: a limit config object exactly as in `limit.json` (see `limit.rs`); default
//!   `{"algorithm": "fixed", "limit": 18446744073709551615}` (no adaptive limit);
//! - `window`, `min_retry_after`, `max_retry_after`: integer nanoseconds;
//! - `min_window_samples`: integer.
//!
//! # Tickets
//! A `try_acquire` step may name its ticket with `"ticket": "<name>"`. Each name holds a
//! first-in-first-out list: an admitted ticket is appended (a refused call appends
//! nothing); `on_success`, `on_dropped` and `on_ignore` release the oldest ticket under the
//! name. A `try_acquire` without `ticket` releases an admitted ticket straight away with
//! `on_ignore`. `repeat` repeats the whole step.
//!
//! # Ops
//! - `try_acquire` — `now` (ns), `priority` (level 0..=7), optional `ticket`. Result:
//!   `{"admitted": true, "in_flight": n}` (the ticket's `in_flight()`), or
//!   `{"admitted": false, "reason": r, "retry_after": ns, "retry_after_secs": n,
//!   "in_flight": n, "threshold": n}` with `r` one of `limit_reached`, `overloaded`, and
//!   `retry_after_secs` = `AdmissionRejected::retry_after_secs()` (rounded up).
//! - `on_success`, `on_dropped` — `now` (ns), `ticket`. No result.
//! - `on_ignore` — `ticket`. No result.
//! - `limit`, `in_flight` — integer.
//! - `threshold` — `priority`; integer.
//! - `stats` — an object with every `AdmissionStats` field (`admitted`,
//!   `refused_limit_reached`, `refused_overloaded`, `refused_by_priority` as a list of 8
//!   integers, `succeeded`, `dropped`, `ignored`,
//!   `in_flight`, `limit`); only the keys present in `expect` are compared.

use guards_core::admission::{Admission, AdmissionConfig, AdmissionPermit, AdmissionStats};
use guards_core::priority::MAX_PRIORITIES;
use serde_json::json;

use super::common::{self, check_keys, priority, subset, Held, Value};

fn list<'a>(v: &'a Value, key: &str) -> Option<&'a Vec<Value>> {
    v.get(key).map(|l| {
        let l = l
            .as_array()
            .unwrap_or_else(|| panic!("`{key}` must be a list"));
        assert!(l.len() <= MAX_PRIORITIES, "`{key}`: at most 8 entries");
        l
    })
}

fn admission_config(v: &Value) -> AdmissionConfig {
    check_keys(
        "config",
        v,
        &[
            "limits",
            "shares",
            "limit",
            "window",
            "min_window_samples",
            "min_retry_after",
            "max_retry_after",
        ],
    );
    let mut c = AdmissionConfig::default();
    if let Some(l) = list(v, "limits") {
        for (slot, x) in c.limits.iter_mut().zip(l) {
            *slot = x.as_u64().unwrap_or_else(|| panic!("bad limit {x}"));
        }
    }
    if let Some(l) = list(v, "shares") {
        for (slot, x) in c.shares.iter_mut().zip(l) {
            *slot =
                common::opt_f64(&json!({ "x": x }), "x").unwrap_or_else(|| panic!("bad share {x}"));
        }
    }
    if let Some(l) = v.get("limit") {
        c.limit = super::limit::limit_config(l);
    }
    if let Some(w) = common::opt_nanos(v, "window") {
        c.window = w;
    }
    if let Some(n) = common::opt_u64(v, "min_window_samples") {
        c.min_window_samples = n;
    }
    if let Some(n) = common::opt_nanos(v, "min_retry_after") {
        c.min_retry_after = n;
    }
    if let Some(n) = common::opt_nanos(v, "max_retry_after") {
        c.max_retry_after = n;
    }
    c
}

fn stats_json(s: &AdmissionStats) -> Value {
    json!({
        "admitted": s.admitted,
        "refused_limit_reached": s.refused_limit_reached,
        "refused_overloaded": s.refused_overloaded,
        "refused_by_priority": s.refused_by_priority.to_vec(),
        "succeeded": s.succeeded,
        "dropped": s.dropped,
        "ignored": s.ignored,
        "in_flight": s.in_flight,
        "limit": s.limit,
    })
}

fn run_step(
    door: &Admission,
    tickets: &mut Held<AdmissionPermit>,
    case: &Value,
    step: &Value,
) -> Value {
    match common::str_of(step, "op") {
        "try_acquire" => match door.try_acquire(common::now(step), priority(step)) {
            Ok(t) => {
                let v = json!({"admitted": true, "in_flight": t.in_flight()});
                tickets.keep(step, t, |t| door.on_ignore(t));
                v
            }
            Err(r) => json!({
                "admitted": false,
                "reason": r.reason.name(),
                "retry_after": r.retry_after(common::now(step)).0,
                "retry_after_secs": r.retry_after_secs(common::now(step)),
                "in_flight": r.in_flight,
                "threshold": r.threshold,
            }),
        },
        "on_success" => {
            door.on_success(tickets.take(step), common::now(step));
            Value::Null
        }
        "on_dropped" => {
            door.on_dropped(tickets.take(step), common::now(step));
            Value::Null
        }
        "on_ignore" => {
            door.on_ignore(tickets.take(step));
            Value::Null
        }
        "limit" => Value::from(door.limit()),
        "in_flight" => Value::from(door.in_flight()),
        "threshold" => Value::from(door.threshold(priority(step))),
        "stats" => subset(step, stats_json(&door.stats())),
        op => panic!("case `{}`: unknown op `{op}`", common::name(case)),
    }
}

#[test]
fn admission_vectors() {
    common::replay(
        "admission",
        |case| {
            let door = Admission::new(admission_config(&case["config"]))?;
            Ok((door, Held::new("ticket")))
        },
        |(door, tickets), case, step| run_step(door, tickets, case, step),
    );
}
