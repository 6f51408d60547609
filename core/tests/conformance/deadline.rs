//! Conformance runner for `deadline` (`tests/vectors/deadline.json`).
//!
//! # Encoding (for every language's runner)
//!
//! - **Config** (`config`, optional): the `DeadlineConfig` fields `attempt_timeout` and
//!   `margin` (integer ns); a missing key takes its default (60 ms, 1 ms). A case with
//!   `expect_error` must fail `DeadlineConfig::validate` with that field and kind.
//! - **A deadline** (arguments `deadline`, `a`, `b` and results of `after`/`min`) is its
//!   expiry instant as an integer (ns), or `null` for "no deadline".
//! - **Durations** (`now`, `timeout`, `budget`, `left`, parsed values) are integer ns;
//!   `null` for `time_left` means unlimited (no deadline). Every integer in the file is
//!   below 2⁵³.
//! - **Strings** (`value`) are passed to the parsers as their UTF-8 bytes.
//! - **Ops** (`op`, arguments, `expect`):
//!   - `after` `{now, timeout}` → deadline: `Deadline::after(now, timeout)`.
//!   - `time_left` `{deadline, now}` → integer, or `null` for no deadline.
//!   - `is_expired` `{deadline, now}` → boolean.
//!   - `min` `{a, b}` → deadline: the earlier one.
//!   - `attempt_budget` `{deadline, now}` → the case config's
//!     `attempt_budget(deadline, now)` as `{"decision": "start", "budget": n}`,
//!     `{"decision": "expired"}` or `{"decision": "too_little_left", "left": n}` (`left`
//!     is `null` when there is no deadline).
//!   - `encode_grpc_timeout` `{timeout}` / `encode_millis` `{timeout}` → string.
//!   - `to_grpc_timeout` / `to_millis` `{deadline, now}` → string, or `null` for no
//!     deadline.
//!   - `parse_grpc_timeout` / `parse_millis` `{value}` → `{"ok": n}` or
//!     `{"error": name}`, where name is the error's snake_case name (`empty`,
//!     `missing_unit`, `unknown_unit`, `no_digits`, `invalid_character`,
//!     `too_many_digits`, `overflow`).
//!   - `from_grpc_timeout` / `from_millis` `{now, value}` → `{"ok": deadline}` or
//!     `{"error": name}`.

use guards_core::deadline::{
    encode_grpc_timeout, encode_millis, parse_grpc_timeout, parse_millis, AttemptBudget, Deadline,
    DeadlineConfig,
};
use guards_core::Nanos;
use serde_json::json;

use crate::common::{self, Value};

fn config(case: &Value) -> DeadlineConfig {
    let d = DeadlineConfig::default();
    match case.get("config") {
        None => d,
        Some(c) => DeadlineConfig {
            attempt_timeout: common::opt_nanos(c, "attempt_timeout").unwrap_or(d.attempt_timeout),
            margin: common::opt_nanos(c, "margin").unwrap_or(d.margin),
        },
    }
}

/// A deadline argument: an integer instant, or `null` for none.
fn deadline(step: &Value, key: &str) -> Deadline {
    match step.get(key) {
        Some(Value::Null) => Deadline::NONE,
        Some(v) => Deadline::at(Nanos(v.as_u64().expect("deadline is an integer or null"))),
        None => panic!("missing `{key}` in {step}"),
    }
}

fn deadline_value(d: Deadline) -> Value {
    d.expires_at().map_or(Value::Null, |n| n.0.into())
}

fn duration_or_null(n: Nanos) -> Value {
    if n == Nanos::MAX {
        Value::Null
    } else {
        n.0.into()
    }
}

fn budget_value(b: AttemptBudget) -> Value {
    match b {
        AttemptBudget::Start { budget } => json!({ "decision": b.name(), "budget": budget.0 }),
        AttemptBudget::Expired => json!({ "decision": b.name() }),
        AttemptBudget::TooLittleLeft { left } => {
            json!({ "decision": b.name(), "left": duration_or_null(left) })
        }
    }
}

fn result<T, E>(
    r: Result<T, E>,
    ok: impl Fn(T) -> Value,
    err: impl Fn(E) -> &'static str,
) -> Value {
    match r {
        Ok(v) => json!({ "ok": ok(v) }),
        Err(e) => json!({ "error": err(e) }),
    }
}

fn run_step(cfg: &DeadlineConfig, step: &Value) -> Value {
    let op = common::str_of(step, "op");
    let timeout = || Nanos(common::u64_of(step, "timeout"));
    let value = || common::str_of(step, "value").as_bytes();
    match op {
        "after" => deadline_value(Deadline::after(common::now(step), timeout())),
        "time_left" => duration_or_null(deadline(step, "deadline").time_left(common::now(step))),
        "is_expired" => deadline(step, "deadline")
            .is_expired(common::now(step))
            .into(),
        "min" => deadline_value(deadline(step, "a").min(deadline(step, "b"))),
        "attempt_budget" => {
            budget_value(cfg.attempt_budget(deadline(step, "deadline"), common::now(step)))
        }
        "encode_grpc_timeout" => encode_grpc_timeout(timeout()).as_str().into(),
        "encode_millis" => encode_millis(timeout()).as_str().into(),
        "to_grpc_timeout" => deadline(step, "deadline")
            .to_grpc_timeout(common::now(step))
            .map_or(Value::Null, |h| h.as_str().into()),
        "to_millis" => deadline(step, "deadline")
            .to_millis(common::now(step))
            .map_or(Value::Null, |h| h.as_str().into()),
        "parse_grpc_timeout" => result(parse_grpc_timeout(value()), |n| n.0.into(), |e| e.name()),
        "parse_millis" => result(parse_millis(value()), |n| n.0.into(), |e| e.name()),
        "from_grpc_timeout" => result(
            Deadline::from_grpc_timeout(common::now(step), value()),
            deadline_value,
            |e| e.name(),
        ),
        "from_millis" => result(
            Deadline::from_millis(common::now(step), value()),
            deadline_value,
            |e| e.name(),
        ),
        other => panic!("unknown deadline op `{other}`"),
    }
}

#[test]
fn deadline_vectors() {
    common::replay(
        "deadline",
        |case| {
            let cfg = config(case);
            cfg.validate().map(|()| cfg)
        },
        |cfg, _, step| run_step(cfg, step),
    );
}
