//! Loading and reading conformance vector files. See `tests/vectors/README.md`.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;

use guards_core::{ConfigError, Nanos, Priority, Rng};
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
                e.kind().name(),
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

/// Replay `tests/vectors/<guard>.json`. A config-rejection case checks the error `build`
/// gives for it; any other case is built (a failure panics, naming the case) and its steps
/// are run by `run(&mut built, case, step)` as [`run_steps`] runs them.
pub fn replay<G>(
    guard: &str,
    build: impl Fn(&Value) -> Result<G, ConfigError>,
    mut run: impl FnMut(&mut G, &Value, &Value) -> Value,
) {
    let file = load(guard);
    for case in cases(&file) {
        let built = build(case);
        if is_error_case(case) {
            check_config_error(case, built.map(|_| ()));
            continue;
        }
        let mut g = built.unwrap_or_else(|e| panic!("case `{}`: {e}", name(case)));
        run_steps(case, |_, step| run(&mut g, case, step));
    }
}

/// Run each step of `case` `repeat` times through `run(step_index, step)`, comparing each
/// result with the step's `expect` when it has one.
pub fn run_steps(case: &Value, mut run: impl FnMut(usize, &Value) -> Value) {
    for (i, step) in steps(case).iter().enumerate() {
        for _ in 0..repeat(step) {
            let got = run(i, step);
            expect_eq(case, i, step, got);
        }
    }
}

/// Reject keys the struct does not have (typos in a vector file); `what` names the object
/// in messages (`"config"`, `"limit config"`).
pub fn check_keys(what: &str, v: &Value, allowed: &[&str]) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{what} must be an object: {v}"));
    for k in obj.keys() {
        assert!(
            allowed.contains(&k.as_str()),
            "unknown {what} key `{k}` in {v}"
        );
    }
}

/// A step's `priority` level.
pub fn priority(step: &Value) -> Priority {
    let level = u64_of(step, "priority");
    u8::try_from(level)
        .ok()
        .and_then(Priority::new)
        .unwrap_or_else(|| panic!("priority {level} out of range"))
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

/// The case's generator: SplitMix64 seeded with its `seed` (default 0).
pub fn case_rng(case: &Value) -> Rng {
    Rng::new(opt_u64(case, "seed").unwrap_or(0))
}

/// A 64-bit word written as `"0x…"`.
pub fn hex_word(v: &Value, key: &str) -> u64 {
    let s = str_of(v, key);
    let digits = s.strip_prefix("0x").expect("hex words start with 0x");
    u64::from_str_radix(digits, 16).expect("valid hex word")
}

/// Format a 64-bit word as `"0x"` + 16 lowercase hex digits.
pub fn to_hex(w: u64) -> Value {
    Value::String(format!("{w:#018x}"))
}

/// Permits (or tickets) a case holds by name: steps name them with `key` (`"permit"`,
/// `"ticket"`), and each name is a first-in-first-out list.
pub struct Held<T> {
    key: &'static str,
    by_name: HashMap<String, VecDeque<T>>,
}

impl<T> Held<T> {
    pub fn new(key: &'static str) -> Self {
        Held {
            key,
            by_name: HashMap::new(),
        }
    }

    /// Keep `t` under the name `step` gives it; without a name, `release` it now.
    pub fn keep(&mut self, step: &Value, t: T, release: impl FnOnce(T)) {
        match step.get(self.key).and_then(Value::as_str) {
            Some(name) => self
                .by_name
                .entry(name.to_owned())
                .or_default()
                .push_back(t),
            None => release(t),
        }
    }

    /// The oldest held under the name `step` gives.
    pub fn take(&mut self, step: &Value) -> T {
        let name = str_of(step, self.key);
        self.by_name
            .get_mut(name)
            .and_then(VecDeque::pop_front)
            .unwrap_or_else(|| panic!("no {} held under `{name}` at {step}", self.key))
    }
}
