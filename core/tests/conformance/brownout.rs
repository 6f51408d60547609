//! Conformance runner for `brownout` (`tests/vectors/brownout.json`).
//!
//! Config keys of one operation (omitted ones take the documented defaults): `optional`,
//! `exempt` (bools) and `fallback_on`: either a list of kind names or an integer bit mask
//! (bit `n` = the kind with discriminant `n`). Kind names, in discriminant order:
//! `breaker_open`, `bulkhead_full`, `budget_exhausted`, `throttled`, `timeout`,
//! `overloaded`, `failed`. Decisions: `serve_fallback`, `fail_fast`, `proceed`.
//!
//! A case whose config has `operations` tests a `BrownoutTable` of capacity 16: each
//! element is `{"key": <integer>, ...one operation's keys}`, registered in order. Other
//! cases test one `Brownout`.
//!
//! Steps on one operation (`op`: arguments → `expect`):
//! - `on_refusal`: `kind` → decision name (counted).
//! - `decide`: `kind` → decision name (pure, not counted).
//! - `on_full` → no result.
//! - `stats` → `{"full", "degraded", "errors", "proceeded"}`.
//! - `operation_key`: `name` (string) → the 64-bit FNV-1a key as `"0x"` + 16 lowercase
//!   hex digits (a string, so that every language reads it exactly).
//!
//! Steps on a table:
//! - `on_refusal`: `key`, `kind` → decision name (unknown key: `fail_fast`, counted).
//! - `on_full`: `key` → bool (`false` for an unknown key, counted).
//! - `stats`: `key` → the object above, or `null` for an unknown key.
//! - `totals` → the object above, summed over registered operations.
//! - `unknown` → integer.
//! - `register`: `key`, `config` (one operation's keys) → the new index, or
//!   `{"error": "duplicate"}`, `{"error": "full"}`, or
//!   `{"error": "config", "field": <field>, "kind": <kind>}`.

use guards_core::brownout::{
    operation_key, Brownout, BrownoutConfig, BrownoutStats, BrownoutTable, RefusalKind,
    RefusalKinds, RegisterError,
};
use serde_json::json;

use crate::common::*;

fn config_of(c: &Value) -> BrownoutConfig {
    let d = BrownoutConfig::default();
    let fallback_on = match c.get("fallback_on") {
        None => d.fallback_on,
        Some(Value::Array(names)) => names.iter().fold(RefusalKinds::NONE, |set, n| {
            let n = n.as_str().expect("kind name");
            set.with(RefusalKind::from_name(n).unwrap_or_else(|| panic!("unknown kind `{n}`")))
        }),
        Some(v) => RefusalKinds(
            v.as_u64()
                .map_or(u8::MAX, |b| u8::try_from(b).unwrap_or(u8::MAX)),
        ),
    };
    BrownoutConfig {
        optional: opt_bool(c, "optional").unwrap_or(d.optional),
        exempt: opt_bool(c, "exempt").unwrap_or(d.exempt),
        fallback_on,
    }
}

fn kind(step: &Value) -> RefusalKind {
    let n = str_of(step, "kind");
    RefusalKind::from_name(n).unwrap_or_else(|| panic!("unknown kind `{n}`"))
}

fn stats(s: BrownoutStats) -> Value {
    json!({"full": s.full, "degraded": s.degraded, "errors": s.errors, "proceeded": s.proceeded})
}

fn run_single(case: &Value, b: &Brownout) {
    run_steps(case, |_, step| match str_of(step, "op") {
        "on_refusal" => json!(b.on_refusal(kind(step)).name()),
        "decide" => json!(b.config().decide(kind(step)).name()),
        "on_full" => {
            b.on_full();
            Value::Null
        }
        "stats" => stats(b.stats()),
        "operation_key" => json!(format!("0x{:016x}", operation_key(str_of(step, "name")))),
        other => panic!("case `{}`: unknown op `{other}`", name(case)),
    });
}

fn run_table(case: &Value, ops: &[Value]) {
    let mut t: BrownoutTable<16> = BrownoutTable::new();
    for op in ops {
        t.register(u64_of(op, "key"), config_of(op))
            .unwrap_or_else(|e| panic!("case `{}`: {e}", name(case)));
    }
    run_steps(case, |_, step| match str_of(step, "op") {
        "on_refusal" => json!(t.on_refusal(u64_of(step, "key"), kind(step)).name()),
        "on_full" => json!(t.on_full(u64_of(step, "key"))),
        "stats" => t
            .get(u64_of(step, "key"))
            .map_or(Value::Null, |b| stats(b.stats())),
        "totals" => stats(t.totals()),
        "unknown" => json!(t.unknown()),
        "register" => match t.register(u64_of(step, "key"), config_of(&step["config"])) {
            Ok(index) => json!(index),
            Err(RegisterError::Duplicate) => json!({"error": "duplicate"}),
            Err(RegisterError::Full) => json!({"error": "full"}),
            Err(RegisterError::Config(e)) => json!({"error": "config",
                "field": e.field(), "kind": e.kind().name()}),
            Err(other) => panic!("case `{}`: unexpected {other}", name(case)),
        },
        other => panic!("case `{}`: unknown op `{other}`", name(case)),
    });
}

#[test]
fn brownout_vectors() {
    let file = load("brownout");
    for case in cases(&file) {
        let config = &case["config"];
        if let Some(ops) = config.get("operations").and_then(Value::as_array) {
            run_table(case, ops);
            continue;
        }
        if is_error_case(case) {
            check_config_error(case, Brownout::new(config_of(config)).map(|_| ()));
            continue;
        }
        let b = Brownout::new(config_of(config))
            .unwrap_or_else(|e| panic!("case `{}`: {e}", name(case)));
        run_single(case, &b);
    }
}
