//! Loading and reading conformance vector files. See `tests/vectors/README.md`.
#![allow(dead_code)]

use std::path::PathBuf;

use guards_core::{ConfigError, Nanos};
pub use serde_json::Value;

/// Path of the shared vectors directory (`<repo>/tests/vectors`).
pub fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests")
        .join("vectors")
}

/// Load `tests/vectors/<guard>.json` and check its header.
pub fn load(guard: &str) -> Value {
    let path = vectors_dir().join(format!("{guard}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let v: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid JSON: {e}", path.display()));
    assert_eq!(
        v["guard"],
        guard,
        "{}: wrong \"guard\" field",
        path.display()
    );
    assert!(
        v["cases"].as_array().is_some_and(|c| !c.is_empty()),
        "{}: no cases",
        path.display()
    );
    v
}

/// The cases of a vector file.
pub fn cases(file: &Value) -> &Vec<Value> {
    file["cases"].as_array().expect("cases")
}

/// A case's name, for messages.
pub fn name(case: &Value) -> &str {
    case["name"].as_str().expect("case without name")
}

/// The steps of a case (empty for config-rejection cases).
pub fn steps(case: &Value) -> &[Value] {
    case["steps"]
        .as_array()
        .map(|v| v.as_slice())
        .unwrap_or(&[])
}

/// How many times a step repeats (`"repeat"`, default 1).
pub fn repeat(step: &Value) -> u64 {
    step.get("repeat").and_then(Value::as_u64).unwrap_or(1)
}

/// A required unsigned integer field.
pub fn u64_of(v: &Value, key: &str) -> u64 {
    v.get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("missing/invalid integer `{key}` in {v}"))
}

/// An optional unsigned integer field.
pub fn opt_u64(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// A required float field (integers accepted). The strings "nan", "inf" and "-inf"
/// stand for the non-finite values JSON cannot spell.
pub fn f64_of(v: &Value, key: &str) -> f64 {
    opt_f64(v, key).unwrap_or_else(|| panic!("missing/invalid number `{key}` in {v}"))
}

/// An optional float field, with the same spelling of non-finite values.
pub fn opt_f64(v: &Value, key: &str) -> Option<f64> {
    match v.get(key)? {
        Value::String(s) if s == "nan" => Some(f64::NAN),
        Value::String(s) if s == "inf" => Some(f64::INFINITY),
        Value::String(s) if s == "-inf" => Some(f64::NEG_INFINITY),
        other => other.as_f64(),
    }
}

/// A required string field.
pub fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("missing/invalid string `{key}` in {v}"))
}

/// An optional boolean field.
pub fn opt_bool(v: &Value, key: &str) -> Option<bool> {
    v.get(key).and_then(Value::as_bool)
}

/// A step's `now` (nanoseconds).
pub fn now(step: &Value) -> Nanos {
    Nanos(u64_of(step, "now"))
}

/// An optional duration field in nanoseconds.
pub fn opt_nanos(v: &Value, key: &str) -> Option<Nanos> {
    opt_u64(v, key).map(Nanos)
}

/// Check a config-rejection case: `expect_error: {"field": .., "kind": ..}`.
pub fn check_config_error(case: &Value, got: Result<(), ConfigError>) {
    let want = &case["expect_error"];
    match got {
        Ok(()) => panic!(
            "case `{}`: config accepted, expected error {want}",
            name(case)
        ),
        Err(e) => {
            assert_eq!(
                e.field(),
                str_of(want, "field"),
                "case `{}`: wrong field ({e})",
                name(case)
            );
            assert_eq!(
                e.kind().as_str(),
                str_of(want, "kind"),
                "case `{}`: wrong kind ({e})",
                name(case)
            );
        }
    }
}

/// Whether a case is a config-rejection case.
pub fn is_error_case(case: &Value) -> bool {
    case.get("expect_error").is_some()
}

/// Compare a step's result with its `expect`, with a helpful message. A step without
/// `expect` is run for its effect and its result is not compared.
#[track_caller]
pub fn expect_eq(case: &Value, step_index: usize, step: &Value, got: Value) {
    let Some(want) = step.get("expect").cloned() else {
        return;
    };
    assert_eq!(
        got,
        want,
        "case `{}`, step {step_index} ({step}): got {got}, expected {want}",
        name(case)
    );
}
