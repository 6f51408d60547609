//! guards-core's own configs inside a topology, read and written through guards-ffi's
//! schemas: the same field names, units, defaults and ranges as the Python API.
//!
//! A config is a JSON object whose keys are the schema's field names (those of core's
//! config struct and of the Python keyword arguments). Nested fields are nested objects
//! (`"backoff": {"base": "25ms"}` for `backoff.base`, `"tracker": {...}` for
//! `tracker.window`), per-priority arrays are lists (`"limits": [80, 64]`, `null` or a
//! missing entry keeps the default). A field left out keeps the schema's default, so
//! `{}` is the Python API's defaults. Values:
//!
//! | unit | JSON |
//! |---|---|
//! | duration | `"40ms"`, `"2s"`, `"1.5s"`, or a number of seconds (as in Python) |
//! | count | an integer |
//! | ratio | a number |
//! | bool | `true` / `false` |
//! | enum | its name (`"count"`, `"full"`, ...) |
//!
//! The adaptive `limit` of an admission door or a limiter is an integer (a fixed limit) or
//! an object with its `algorithm` (`"fixed"` with `limit`, `"aimd"`, `"vegas"`,
//! `"gradient"`) and that algorithm's fields, as in Python's `limit={"algorithm": ...}`. A
//! retry budget has a `mode` (`"token_bucket"`, the default, `"grpc"`, `"aws"`,
//! `"windowed"`) and that mode's fields, as in Python's `RetryBudget(mode=...)`.
//!
//! Every value is checked by the schema (type and range) and the whole config by core's
//! `validate`; an error names the field's place inside the config (`backoff.base`,
//! `limits[2]`, `limit.backoff_ratio`), which the topology reader appends to the path of
//! the config (`edges[3].policy.breaker.window_size`).

use guards::schema::{self, DurationUnit, Input, Schema, Unit, Value as Stored};
use guards_core::admission::AdmissionConfig;
use guards_core::bulkhead::BulkheadConfig;
use guards_core::circuit_breaker::CircuitBreakerConfig;
use guards_core::hedging::HedgingConfig;
use guards_core::limit::LimitConfig;
use guards_core::limiter::LimiterConfig;
use guards_core::queue_discipline::QueueDisciplineConfig;
use guards_core::retry_budget::RetryBudgetConfig;
use guards_core::retry_policy::RetryPolicyConfig;
use guards_core::{ConfigError, ConfigErrorKind, Nanos};
use serde_json::{Map, Value};

use super::units::{format_duration, parse_duration, DURATION_EXPECTED};

/// A refused config value: where inside the config (empty: the config itself) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CfgError {
    /// The field's place inside the config (`window_size`, `backoff.base`, `limits[2]`).
    pub field: String,
    /// What would be accepted (and why the value was not).
    pub message: String,
    /// The config has no such field.
    pub unknown: bool,
}

/// What a refusal of core's means, in words.
pub fn kind_text(kind: ConfigErrorKind) -> &'static str {
    match kind {
        ConfigErrorKind::NotFinite => "not a finite number",
        ConfigErrorKind::Negative => "negative",
        ConfigErrorKind::Zero => "zero",
        ConfigErrorKind::OutOfRange => "out of range",
        ConfigErrorKind::Inconsistent => "contradicts another field",
        _ => "refused",
    }
}

/// `expected (why)` for a refusal of core's.
pub fn describe(e: ConfigError) -> String {
    format!("{} ({})", e.expected(), kind_text(e.kind()))
}

impl CfgError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        CfgError {
            field: field.into(),
            message: message.into(),
            unknown: false,
        }
    }

    fn unknown(field: impl Into<String>, message: impl Into<String>) -> Self {
        CfgError {
            unknown: true,
            ..CfgError::new(field, message)
        }
    }

    fn from_core(prefix: &str, e: ConfigError) -> Self {
        CfgError::new(format!("{prefix}{}", e.field()), describe(e))
    }

    fn from_failure(field: &str, f: &guards::error::Failure) -> Self {
        match f.detail {
            guards::error::Detail::Config(e) => CfgError::new(e.field(), describe(e)),
            guards::error::Detail::Argument { expected, .. } => CfgError::new(field, expected),
            _ => CfgError::new(field, f.to_string()),
        }
    }
}

/// A core config with a guards-ffi schema.
pub trait Schematic: Copy + PartialEq + 'static {
    /// Its schema.
    fn schema() -> &'static Schema<Self>;

    /// Read key `key` that the schema does not cover (`Some`), or `None` for an
    /// ordinary field.
    fn read_extra(_c: &mut Self, _key: &str, _v: &Value) -> Option<Result<(), CfgError>> {
        None
    }

    /// Write the keys the schema does not cover.
    fn write_extra(_c: &Self, _out: &mut Map<String, Value>) {}

    /// Core's validation of the whole config (its error names the field).
    fn validate(c: &Self) -> Result<(), CfgError>;
}

macro_rules! schematic {
    ($($t:ty => $s:ident),+ $(,)?) => {$(
        impl Schematic for $t {
            fn schema() -> &'static Schema<Self> {
                &schema::$s
            }
            fn validate(c: &Self) -> Result<(), CfgError> {
                c.validate().map_err(|e| CfgError::from_core("", e))
            }
        }
    )+};
}

schematic!(
    CircuitBreakerConfig => CIRCUIT_BREAKER,
    BulkheadConfig => BULKHEAD,
    RetryPolicyConfig => RETRY_POLICY,
    HedgingConfig => HEDGING,
    QueueDisciplineConfig => QUEUE_DISCIPLINE,
);

impl Schematic for AdmissionConfig {
    fn schema() -> &'static Schema<Self> {
        &schema::ADMISSION
    }
    fn read_extra(c: &mut Self, key: &str, v: &Value) -> Option<Result<(), CfgError>> {
        (key == "limit").then(|| limit_from_value(v).map(|l| c.limit = l))
    }
    fn write_extra(c: &Self, out: &mut Map<String, Value>) {
        out.insert("limit".into(), limit_to_value(&c.limit));
    }
    fn validate(c: &Self) -> Result<(), CfgError> {
        c.limit
            .validate()
            .map_err(|e| CfgError::from_core("limit.", e))?;
        c.validate().map_err(|e| CfgError::from_core("", e))
    }
}

impl Schematic for LimiterConfig {
    fn schema() -> &'static Schema<Self> {
        &schema::LIMITER
    }
    fn read_extra(c: &mut Self, key: &str, v: &Value) -> Option<Result<(), CfgError>> {
        (key == "limit").then(|| limit_from_value(v).map(|l| c.limit = l))
    }
    fn write_extra(c: &Self, out: &mut Map<String, Value>) {
        out.insert("limit".into(), limit_to_value(&c.limit));
    }
    fn validate(c: &Self) -> Result<(), CfgError> {
        c.limit
            .validate()
            .map_err(|e| CfgError::from_core("limit.", e))?;
        c.validate().map_err(|e| CfgError::from_core("", e))
    }
}

/// A schema value from JSON, for a field of `unit` (durations: strings with a unit, or
/// seconds).
pub fn input(unit: Unit, v: &Value) -> Result<Input<'_>, String> {
    Ok(match v {
        Value::Bool(b) => Input::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Input::Int(i128::from(i))
            } else if let Some(u) = n.as_u64() {
                Input::Int(i128::from(u))
            } else {
                Input::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => match unit {
            Unit::Duration => Input::Nanos(
                parse_duration(s)
                    .ok_or_else(|| DURATION_EXPECTED.to_string())?
                    .as_u64(),
            ),
            _ => Input::Str(s),
        },
        _ => return Err(unit.describe().to_string()),
    })
}

/// A schema value as JSON: durations in their canonical text, enums by name.
pub fn output(unit: Unit, v: Stored) -> Value {
    match (unit, v) {
        (Unit::Duration, Stored::Uint(ns)) => Value::String(format_duration(Nanos(ns))),
        (Unit::Enum(names), Stored::Uint(i)) => usize::try_from(i)
            .ok()
            .and_then(|i| names.get(i))
            .map_or(Value::from(i), |n| Value::String((*n).to_string())),
        (_, Stored::Uint(u)) => Value::from(u),
        (_, Stored::Float(f)) => Value::from(f),
        (_, Stored::Bool(b)) => Value::Bool(b),
    }
}

/// `(field name, value)` for every leaf of `obj`: nested objects join with `.`, lists
/// index with `[i]`; `null` is left out (the field keeps its default).
fn flatten<'a>(prefix: &str, v: &'a Value, out: &mut Vec<(String, &'a Value)>) {
    match v {
        Value::Null => {}
        Value::Object(m) => {
            for (k, x) in m {
                let name = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&name, x, out);
            }
        }
        Value::Array(a) if !prefix.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), x, out);
            }
        }
        _ => out.push((prefix.to_string(), v)),
    }
}

/// Reads a key the schema does not cover (`None`: an ordinary field).
type Extra<'a, C> = dyn FnMut(&mut C, &str, &Value) -> Option<Result<(), CfgError>> + 'a;

/// Apply the fields of JSON object `v` to `c` with `schema` (no whole-config check).
fn apply<C: Copy>(
    schema: &'static Schema<C>,
    c: &mut C,
    v: &Value,
    extra: &mut Extra<'_, C>,
) -> Result<(), CfgError> {
    let Value::Object(m) = v else {
        return Err(CfgError::new(
            "",
            format!(
                "expected an object with the fields of {} ({})",
                schema.name,
                schema.field_names()
            ),
        ));
    };
    for (key, x) in m {
        if let Some(r) = extra(c, key, x) {
            r?;
            continue;
        }
        let mut leaves = Vec::new();
        flatten(key, x, &mut leaves);
        for (name, x) in leaves {
            let Some(field) = schema.field(&name) else {
                return Err(CfgError::unknown(
                    name.clone(),
                    format!(
                        "{} has no field `{name}` (its fields: {})",
                        schema.name,
                        schema.field_names()
                    ),
                ));
            };
            let i = input(field.unit, x).map_err(|m| CfgError::new(name.clone(), m))?;
            field
                .set(c, i, DurationUnit::Secs)
                .map_err(|f| CfgError::from_failure(&name, &f))?;
        }
    }
    Ok(())
}

/// Read a config from JSON (see the module docs).
pub fn from_value<C: Schematic>(v: &Value) -> Result<C, CfgError> {
    let s = C::schema();
    let mut c = s.defaults();
    apply(s, &mut c, v, &mut |c, k, x| C::read_extra(c, k, x))?;
    C::validate(&c)?;
    Ok(c)
}

/// Put `v` at `name` (`a.b`, `a[2]`, `a[2].b`) inside `root`.
fn insert(root: &mut Map<String, Value>, name: &str, v: Value) {
    let (head, rest) = match name.find(['.', '[']) {
        Some(i) => (&name[..i], &name[i..]),
        None => {
            root.insert(name.to_string(), v);
            return;
        }
    };
    if let Some(rest) = rest.strip_prefix('.') {
        let child = root
            .entry(head.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = child {
            insert(m, rest, v);
        }
        return;
    }
    // `head[i]...`
    let close = rest.find(']').unwrap_or(rest.len());
    let index: usize = rest.get(1..close).and_then(|s| s.parse().ok()).unwrap_or(0);
    let after = rest.get(close + 1..).unwrap_or("");
    let list = root
        .entry(head.to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(a) = list {
        while a.len() <= index {
            a.push(Value::Null);
        }
        match after.strip_prefix('.') {
            Some(field) => {
                if a[index].is_null() {
                    a[index] = Value::Object(Map::new());
                }
                if let Value::Object(m) = &mut a[index] {
                    insert(m, field, v);
                }
            }
            None => a[index] = v,
        }
    }
}

fn write_schema<C: Copy>(schema: &'static Schema<C>, c: &C, out: &mut Map<String, Value>) {
    for f in schema.fields {
        insert(out, f.name, output(f.unit, f.get(c)));
    }
}

/// A config as JSON: every field of its schema, in its canonical form.
pub fn to_value<C: Schematic>(c: &C) -> Value {
    let mut out = Map::new();
    write_schema(C::schema(), c, &mut out);
    C::write_extra(c, &mut out);
    Value::Object(out)
}

/// An adaptive (or fixed) limit from JSON: an integer, an algorithm name (its defaults),
/// or an object with `algorithm` and the algorithm's fields.
pub fn limit_from_value(v: &Value) -> Result<LimitConfig, CfgError> {
    const EXPECTED: &str = "an integer (a fixed limit), or an object with \"algorithm\" \
                            (\"fixed\" with \"limit\", \"aimd\", \"vegas\" or \"gradient\") and its fields";
    let bad = |m: String| CfgError::new("limit", m);
    match v {
        Value::Number(n) => n
            .as_u64()
            .filter(|n| *n >= 1)
            .map(LimitConfig::Fixed)
            .ok_or_else(|| bad(format!("{n} is not a limit; expected {EXPECTED}"))),
        Value::String(name) => limit_from_parts(name, &Map::new()),
        Value::Object(m) => {
            let Some(Value::String(name)) = m.get("algorithm") else {
                return Err(bad(format!(
                    "the limit has no \"algorithm\"; expected {EXPECTED}"
                )));
            };
            let mut rest = m.clone();
            rest.remove("algorithm");
            limit_from_parts(name, &rest)
        }
        other => Err(bad(format!("{other} is not a limit; expected {EXPECTED}"))),
    }
}

fn limit_from_parts(algorithm: &str, fields: &Map<String, Value>) -> Result<LimitConfig, CfgError> {
    let prefixed = |e: CfgError| CfgError::new(format!("limit.{}", e.field), e.message);
    let obj = Value::Object(fields.clone());
    let config = match algorithm {
        "fixed" => {
            let n = fields.get("limit").and_then(Value::as_u64).ok_or_else(|| {
                CfgError::new("limit.limit", "a fixed limit needs \"limit\": an integer 1..=2^64-1")
            })?;
            if let Some(k) = fields.keys().find(|k| *k != "limit") {
                return Err(CfgError::new(
                    format!("limit.{k}"),
                    "a fixed limit has only \"limit\"",
                ));
            }
            LimitConfig::Fixed(n)
        }
        "aimd" => {
            let mut c = schema::AIMD.defaults();
            apply(&schema::AIMD, &mut c, &obj, &mut |_, _, _| None).map_err(prefixed)?;
            LimitConfig::Aimd(c)
        }
        "vegas" => {
            let mut c = schema::VEGAS.defaults();
            apply(&schema::VEGAS, &mut c, &obj, &mut |_, _, _| None).map_err(prefixed)?;
            LimitConfig::Vegas(c)
        }
        "gradient" => {
            let mut c = schema::GRADIENT.defaults();
            apply(&schema::GRADIENT, &mut c, &obj, &mut |_, _, _| None).map_err(prefixed)?;
            LimitConfig::Gradient(c)
        }
        other => {
            return Err(CfgError::new(
                "limit.algorithm",
                format!("{other:?} is not an algorithm; expected \"fixed\", \"aimd\", \"vegas\" or \"gradient\""),
            ))
        }
    };
    config
        .validate()
        .map_err(|e| CfgError::from_core("limit.", e))?;
    Ok(config)
}

/// A limit as JSON: an integer for a fixed one, else `{"algorithm", fields...}`.
pub fn limit_to_value(l: &LimitConfig) -> Value {
    let mut out = Map::new();
    match l {
        LimitConfig::Fixed(n) => return Value::from(*n),
        LimitConfig::Aimd(c) => {
            out.insert("algorithm".into(), "aimd".into());
            write_schema(&schema::AIMD, c, &mut out);
        }
        LimitConfig::Vegas(c) => {
            out.insert("algorithm".into(), "vegas".into());
            write_schema(&schema::VEGAS, c, &mut out);
        }
        LimitConfig::Gradient(c) => {
            out.insert("algorithm".into(), "gradient".into());
            write_schema(&schema::GRADIENT, c, &mut out);
        }
    }
    Value::Object(out)
}

/// The retry budget modes, as Python's `RetryBudget(mode=...)` names them.
pub const BUDGET_MODES: &[&str] = &["token_bucket", "grpc", "aws", "windowed"];

/// A retry budget from JSON: `mode` (default `"token_bucket"`) and that mode's fields.
pub fn budget_from_value(v: &Value) -> Result<RetryBudgetConfig, CfgError> {
    let Value::Object(m) = v else {
        return Err(CfgError::new(
            "",
            "expected an object: \"mode\" (token_bucket, grpc, aws, windowed) and its fields",
        ));
    };
    let mode = match m.get("mode") {
        None | Some(Value::Null) => "token_bucket",
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(CfgError::new(
                "mode",
                format!("{other} is not a mode; expected one of {BUDGET_MODES:?}"),
            ))
        }
    };
    let mut rest = m.clone();
    rest.remove("mode");
    let obj = Value::Object(rest);
    let none = &mut |_: &mut _, _: &str, _: &Value| None;
    let config = match mode {
        "token_bucket" => {
            let mut c = schema::TOKEN_BUDGET.defaults();
            apply(&schema::TOKEN_BUDGET, &mut c, &obj, none)?;
            RetryBudgetConfig::TokenBucket(c)
        }
        "grpc" => {
            let mut c = schema::GRPC_THROTTLE.defaults();
            apply(&schema::GRPC_THROTTLE, &mut c, &obj, &mut |_, _, _| None)?;
            RetryBudgetConfig::Grpc(c)
        }
        "aws" => {
            let mut c = schema::AWS_RETRY_QUOTA.defaults();
            apply(&schema::AWS_RETRY_QUOTA, &mut c, &obj, &mut |_, _, _| None)?;
            RetryBudgetConfig::Aws(c)
        }
        "windowed" => {
            let mut c = schema::WINDOWED_BUDGET.defaults();
            apply(&schema::WINDOWED_BUDGET, &mut c, &obj, &mut |_, _, _| None)?;
            RetryBudgetConfig::Windowed(c)
        }
        other => {
            return Err(CfgError::new(
                "mode",
                format!("{other:?} is not a mode; expected one of {BUDGET_MODES:?}"),
            ))
        }
    };
    config.validate().map_err(|e| CfgError::from_core("", e))?;
    Ok(config)
}

/// A retry budget as JSON: `mode` and every field of that mode.
pub fn budget_to_value(b: &RetryBudgetConfig) -> Value {
    let mut out = Map::new();
    match b {
        RetryBudgetConfig::TokenBucket(c) => {
            out.insert("mode".into(), "token_bucket".into());
            write_schema(&schema::TOKEN_BUDGET, c, &mut out);
        }
        RetryBudgetConfig::Grpc(c) => {
            out.insert("mode".into(), "grpc".into());
            write_schema(&schema::GRPC_THROTTLE, c, &mut out);
        }
        RetryBudgetConfig::Aws(c) => {
            out.insert("mode".into(), "aws".into());
            write_schema(&schema::AWS_RETRY_QUOTA, c, &mut out);
        }
        RetryBudgetConfig::Windowed(c) => {
            out.insert("mode".into(), "windowed".into());
            write_schema(&schema::WINDOWED_BUDGET, c, &mut out);
        }
    }
    Value::Object(out)
}

/// Marks a config error inside a serde message so the reader can add the field to the
/// path (see [`crate::Topology::from_json`]).
pub(crate) const FIELD_MARK: char = '\u{1}';

fn serde_error<E: serde::de::Error>(e: CfgError) -> E {
    let tag = if e.unknown { 'U' } else { 'B' };
    E::custom(format!(
        "{FIELD_MARK}{tag}{}{FIELD_MARK}{}",
        e.field, e.message
    ))
}

/// `#[serde(with = "configs::one")]` for a [`Schematic`] config.
pub mod one {
    use super::*;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Every field in its canonical form.
    pub fn serialize<C: Schematic, S: Serializer>(c: &C, s: S) -> Result<S::Ok, S::Error> {
        to_value(c).serialize(s)
    }

    /// Read and check through the schema and core's `validate`.
    pub fn deserialize<'de, C: Schematic, D: Deserializer<'de>>(d: D) -> Result<C, D::Error> {
        let v = Value::deserialize(d)?;
        from_value(&v).map_err(serde_error)
    }
}

/// `#[serde(with = "configs::opt")]` for an optional [`Schematic`] config (`null`: none).
pub mod opt {
    use super::*;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// `null` or every field.
    pub fn serialize<C: Schematic, S: Serializer>(c: &Option<C>, s: S) -> Result<S::Ok, S::Error> {
        c.as_ref().map(to_value).serialize(s)
    }

    /// `null` (none) or a config.
    pub fn deserialize<'de, C: Schematic, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<C>, D::Error> {
        match Value::deserialize(d)? {
            Value::Null => Ok(None),
            v => from_value(&v).map(Some).map_err(serde_error),
        }
    }
}

/// `#[serde(with = "configs::list")]` for a list of [`Schematic`] configs.
pub mod list {
    use super::*;
    use serde::de::{SeqAccess, Visitor};
    use serde::ser::SerializeSeq;
    use serde::{Deserializer, Serializer};

    /// Every config in full.
    pub fn serialize<C: Schematic, S: Serializer>(c: &[C], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(c.len()))?;
        for x in c {
            seq.serialize_element(&to_value(x))?;
        }
        seq.end()
    }

    struct Seq<C>(std::marker::PhantomData<C>);

    impl<'de, C: Schematic> Visitor<'de> for Seq<C> {
        type Value = Vec<C>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a list of {} configs", C::schema().name)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Vec<C>, A::Error> {
            let mut out = Vec::new();
            while let Some(x) = a.next_element::<Config<C>>()? {
                out.push(x.0);
            }
            Ok(out)
        }
    }

    /// Each element through the schema (errors carry the element's index).
    pub fn deserialize<'de, C: Schematic, D: Deserializer<'de>>(d: D) -> Result<Vec<C>, D::Error> {
        d.deserialize_seq(Seq(std::marker::PhantomData))
    }

    struct Config<C>(C);

    impl<'de, C: Schematic> serde::Deserialize<'de> for Config<C> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            super::one::deserialize(d).map(Config)
        }
    }
}

/// `#[serde(with = "configs::budgets")]` for a list of retry budgets.
pub mod budgets {
    use super::*;
    use serde::de::{SeqAccess, Visitor};
    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Every budget with its mode.
    pub fn serialize<S: Serializer>(c: &[RetryBudgetConfig], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(c.len()))?;
        for x in c {
            seq.serialize_element(&budget_to_value(x))?;
        }
        seq.end()
    }

    struct One(RetryBudgetConfig);

    impl<'de> Deserialize<'de> for One {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let v = Value::deserialize(d)?;
            budget_from_value(&v).map(One).map_err(serde_error)
        }
    }

    struct Seq;

    impl<'de> Visitor<'de> for Seq {
        type Value = Vec<RetryBudgetConfig>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of retry budgets")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(x) = a.next_element::<One>()? {
                out.push(x.0);
            }
            Ok(out)
        }
    }

    /// Each budget through its mode's schema.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<RetryBudgetConfig>, D::Error> {
        d.deserialize_seq(Seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pasted_breaker_config_reads_with_the_python_names() {
        let c: CircuitBreakerConfig = from_value(&json!({
            "window_size": 20, "failure_rate_threshold": 0.5, "open_duration": 5,
            "half_open_probes": 3, "probe_timeout": "100ms"
        }))
        .unwrap();
        assert_eq!(c.window_size, 20);
        assert_eq!(c.open_duration, Nanos::from_secs(5));
        assert_eq!(c.probe_timeout, Nanos::from_millis(100));
        // Everything else is the schema's default, which is core's.
        assert_eq!(
            c.max_open_duration,
            CircuitBreakerConfig::default().max_open_duration
        );
        let back: CircuitBreakerConfig = from_value(&to_value(&c)).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn errors_name_the_field_inside_the_config() {
        let e = from_value::<CircuitBreakerConfig>(&json!({"window_size": 0})).unwrap_err();
        assert_eq!(e.field, "window_size");
        let e = from_value::<CircuitBreakerConfig>(&json!({"window_sise": 1})).unwrap_err();
        assert_eq!(e.field, "window_sise");
        assert!(e.message.contains("window_size"), "{}", e.message);
        let e = from_value::<RetryPolicyConfig>(&json!({"backoff": {"base": "soon"}})).unwrap_err();
        assert_eq!(e.field, "backoff.base");
        // Core's whole-config check: a time window must split into whole buckets.
        let e = from_value::<CircuitBreakerConfig>(&json!({
            "window_kind": "time", "window_duration": "10000001ns", "window_buckets": 10
        }))
        .unwrap_err();
        assert_eq!(e.field, "window_duration", "{e:?}");
        let e = from_value::<AdmissionConfig>(&json!({"limits": [80, 64, 90]})).unwrap_err();
        assert_eq!(e.field, "limits[2]", "{e:?}");
        let e = from_value::<AdmissionConfig>(
            &json!({"limit": {"algorithm": "aimd", "backoff_ratio": 2.0}}),
        )
        .unwrap_err();
        assert_eq!(e.field, "limit.backoff_ratio", "{e:?}");
    }

    #[test]
    fn limits_and_budgets_take_their_variant_by_name() {
        let a: AdmissionConfig = from_value(
            &json!({"limits": [80, 64], "limit": {"algorithm": "aimd", "max_limit": 100}}),
        )
        .unwrap();
        assert!(matches!(a.limit, LimitConfig::Aimd(c) if c.max_limit == 100));
        assert_eq!(a.limits[2], AdmissionConfig::default().limits[2]);
        assert_eq!(from_value::<AdmissionConfig>(&to_value(&a)).unwrap(), a);
        let l: LimiterConfig = from_value(&json!({"limit": 12})).unwrap();
        assert_eq!(l.limit, LimitConfig::Fixed(12));
        assert_eq!(from_value::<LimiterConfig>(&to_value(&l)).unwrap(), l);
        let b = budget_from_value(&json!({"capacity": 5})).unwrap();
        assert!(matches!(b, RetryBudgetConfig::TokenBucket(t) if t.capacity == 5.0));
        let g = budget_from_value(&json!({"mode": "grpc", "max_tokens": 4})).unwrap();
        assert_eq!(budget_from_value(&budget_to_value(&g)).unwrap(), g);
        assert!(budget_from_value(&json!({"mode": "grpc", "capacity": 4})).is_err());
    }
}
