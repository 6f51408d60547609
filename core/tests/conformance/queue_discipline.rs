//! Conformance runner for `queue_discipline` (`tests/vectors/queue_discipline.json`).
//!
//! Every binding's runner follows this encoding exactly.
//!
//! **Queue type.** Build the queue with at least 128 slots (the Rust runner uses
//! `QueueDiscipline<128>`); the largest capacity in the file is the default, 128.
//!
//! **Config** keys (any left out take the documented default):
//! `capacity` (integer), `interval` and `target` (integer nanoseconds), `lifo`, `codel`,
//! `priority` (booleans). A negative `interval`/`target`/`capacity` cannot be represented
//! by the native types; the binding reports it as a config error on that field with kind
//! `negative` (as Python/Node wrappers must do for user input).
//!
//! **Steps** (`now` is always integer nanoseconds):
//! - `{"op": "push", "now", "id", "priority", "deadline"?}`: `priority` is the class number
//!   0..=7; `deadline` is absolute nanoseconds, absent or `null` for none. Result: `true`
//!   when queued, `false` when refused because the queue is full.
//! - `{"op": "pop", "now"}`: result
//!   `{"served": null | {"id": <u64>, "order": "fifo" | "lifo"}, "dropped": [<drop>...]}`,
//!   where `dropped` is the contents of `dropped()` right after the call, in order, and a
//!   `<drop>` is `{"id": <u64>, "reason": "age_limit" | "deadline"}`.
//! - `{"op": "expire", "now"}`: result `{"dropped": [<drop>...]}` (its length is the
//!   count `expire` returns).
//! - `{"op": "remove", "id"}`: result `true` if a waiter was removed, else `false`.
//! - `{"op": "len"}`: integer. `{"op": "len_by_priority"}`: array of 8 integers, index =
//!   class number.
//! - `{"op": "oldest_age", "now"}`: integer nanoseconds (0 when empty).
//! - `{"op": "is_standing", "now"}`: boolean.
//! - `{"op": "stats"}`: `{"enqueued", "served_fifo", "served_lifo", "dropped_age_limit",
//!   "dropped_deadline", "cancelled", "rejected_full"}`, all integers.

use guards_core::queue_discipline::{QueueDiscipline, QueueDisciplineConfig};
use guards_core::{ConfigError, ConfigErrorKind, Nanos};
use serde_json::json;

use crate::common::{self, Value};

type Queue = QueueDiscipline<128>;

/// An integer config field that must not be negative; `None` when absent.
fn non_negative(cfg: &Value, key: &'static str) -> Result<Option<u64>, ConfigError> {
    match cfg.get(key) {
        None => Ok(None),
        Some(v) => match (v.as_u64(), v.as_i64()) {
            (Some(u), _) => Ok(Some(u)),
            (None, Some(i)) if i < 0 => Err(ConfigError::new(
                key,
                ConfigErrorKind::Negative,
                "a non-negative integer",
            )),
            _ => panic!("config `{key}` is not an integer: {v}"),
        },
    }
}

fn config_of(case: &Value) -> Result<QueueDisciplineConfig, ConfigError> {
    let c = &case["config"];
    let mut cfg = QueueDisciplineConfig::default();
    if let Some(v) = non_negative(c, "capacity")? {
        cfg.capacity = u32::try_from(v)
            .map_err(|_| ConfigError::new("capacity", ConfigErrorKind::OutOfRange, "1..=65536"))?;
    }
    if let Some(v) = non_negative(c, "interval")? {
        cfg.interval = Nanos(v);
    }
    if let Some(v) = non_negative(c, "target")? {
        cfg.target = Nanos(v);
    }
    if let Some(b) = common::opt_bool(c, "lifo") {
        cfg.lifo = b;
    }
    if let Some(b) = common::opt_bool(c, "codel") {
        cfg.codel = b;
    }
    if let Some(b) = common::opt_bool(c, "priority") {
        cfg.priority = b;
    }
    Ok(cfg)
}

fn build(case: &Value) -> Result<Queue, ConfigError> {
    Queue::new(config_of(case)?)
}

fn drops(q: &Queue) -> Value {
    Value::Array(
        q.dropped()
            .iter()
            .map(|d| json!({"id": d.waiter.id, "reason": d.reason.name()}))
            .collect(),
    )
}

fn run_step(q: &mut Queue, step: &Value) -> Value {
    match common::str_of(step, "op") {
        "push" => {
            let deadline = common::opt_nanos(step, "deadline");
            Value::Bool(
                q.push(
                    common::now(step),
                    common::u64_of(step, "id"),
                    common::priority(step),
                    deadline,
                )
                .is_ok(),
            )
        }
        "pop" => {
            let served = match q.pop(common::now(step)) {
                Some(d) => json!({"id": d.waiter.id, "order": d.order.name()}),
                None => Value::Null,
            };
            json!({"served": served, "dropped": drops(q)})
        }
        "expire" => {
            let n = q.expire(common::now(step));
            assert_eq!(n as usize, q.dropped().len());
            json!({ "dropped": drops(q) })
        }
        "remove" => Value::Bool(q.remove(common::u64_of(step, "id")).is_some()),
        "len" => json!(q.len()),
        "len_by_priority" => json!(q.len_by_priority()),
        "oldest_age" => json!(q.oldest_age(common::now(step)).as_u64()),
        "is_standing" => Value::Bool(q.is_standing(common::now(step))),
        "stats" => {
            let s = q.stats();
            json!({
                "enqueued": s.enqueued,
                "served_fifo": s.served_fifo,
                "served_lifo": s.served_lifo,
                "dropped_age_limit": s.dropped_age_limit,
                "dropped_deadline": s.dropped_deadline,
                "cancelled": s.cancelled,
                "rejected_full": s.rejected_full,
            })
        }
        other => panic!("unknown op `{other}` in {step}"),
    }
}

#[test]
fn queue_discipline_vectors() {
    common::replay("queue_discipline", build, |q, _, step| run_step(q, step));
}
