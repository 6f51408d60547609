//! Reading a vector file: its cases and steps, checked against the guard's op table and
//! normalised (defaults filled in, numbers and words decoded, configs flattened) so that
//! every backend receives the same arguments.
//!
//! A file that does not follow the format (unknown op, unknown key, missing argument,
//! wrong type, a permit that is not held) is an error of the file, reported as such: it is
//! never skipped, and never blamed on a backend.

use std::collections::HashSet;

use serde_json::Value;

use super::spec::{self, By, Compare, Guard, Kind, Need, Op, Permits};
use super::value::{leaf, number, Args, Scalar};

/// A read vector file.
#[derive(Debug)]
pub(crate) struct VectorFile {
    /// The file name (`circuit_breaker.json`).
    pub name: String,
    /// Its guard, or why the file cannot be replayed at all.
    pub content: Result<Content, String>,
}

/// A file's guard and cases.
#[derive(Debug)]
pub(crate) struct Content {
    pub guard: &'static Guard,
    pub cases: Vec<Case>,
}

/// One case, or the error that keeps it from running.
#[derive(Debug)]
pub(crate) struct Case {
    pub name: String,
    /// The line of its `"name"` in the file, when found.
    pub line: Option<usize>,
    pub body: Result<CaseBody, String>,
}

/// A runnable case.
#[derive(Debug)]
pub(crate) struct CaseBody {
    /// The arguments of `new`: the config flattened under `config.`, `seed`, and the
    /// guard's own.
    pub new_args: Args,
    /// `(field, kind)` when building must fail.
    pub expect_error: Option<(String, String)>,
    pub steps: Vec<Prepared>,
}

/// Where a step finds its permit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PermitRef {
    None,
    Name(String),
    Index(usize),
}

/// One step, normalised.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub index: usize,
    pub op: &'static Op,
    pub args: Args,
    pub permit: PermitRef,
    pub expect: Option<Value>,
    pub repeat: u64,
}

impl VectorFile {
    /// Read `text` as the vector file `name` (`<guard>.json`).
    pub(crate) fn parse(name: &str, text: &str) -> VectorFile {
        VectorFile {
            name: name.to_owned(),
            content: parse_content(name, text),
        }
    }

    /// A file that could not be read.
    pub(crate) fn unreadable(name: &str, why: String) -> VectorFile {
        VectorFile {
            name: name.to_owned(),
            content: Err(why),
        }
    }
}

fn parse_content(name: &str, text: &str) -> Result<Content, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let obj = v.as_object().ok_or("the file is not a JSON object")?;
    for k in obj.keys() {
        if !["guard", "description", "cases"].contains(&k.as_str()) {
            return Err(format!("unknown top-level key `{k}`"));
        }
    }
    let guard_name = v
        .get("guard")
        .and_then(Value::as_str)
        .ok_or("no \"guard\" string")?;
    let stem = name.strip_suffix(".json").unwrap_or(name);
    if stem != guard_name {
        return Err(format!(
            "\"guard\" is `{guard_name}` but the file is named `{name}`"
        ));
    }
    let guard = spec::guard_named(guard_name).ok_or_else(|| {
        format!("no interpreter for guard `{guard_name}` (add it to ffi/src/vectors/spec.rs)")
    })?;
    let cases = v
        .get("cases")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or("no \"cases\" (a non-empty list)")?;
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(cases.len());
    for (i, c) in cases.iter().enumerate() {
        let case_name = c
            .get("name")
            .and_then(Value::as_str)
            .map_or_else(|| format!("#{i}"), str::to_owned);
        let line = line_of(text, &case_name);
        let body = if seen.insert(case_name.clone()) {
            parse_case(guard, c)
        } else {
            Err(format!("a second case named `{case_name}`"))
        };
        out.push(Case {
            name: case_name,
            line,
            body,
        });
    }
    Ok(Content { guard, cases: out })
}

/// The 1-based line of the case named `name` (where `"name": "<name>"` is written).
fn line_of(text: &str, name: &str) -> Option<usize> {
    let quoted = serde_json::to_string(name).ok()?;
    let mut from = 0;
    while let Some(i) = text.get(from..)?.find(&quoted) {
        let at = from + i;
        let before = text.get(..at)?.trim_end();
        if before.ends_with(':')
            && before
                .trim_end_matches(':')
                .trim_end()
                .ends_with("\"name\"")
        {
            return Some(text.get(..at)?.matches('\n').count() + 1);
        }
        from = at + quoted.len();
    }
    None
}

fn parse_case(guard: &'static Guard, c: &Value) -> Result<CaseBody, String> {
    let obj = c.as_object().ok_or("a case is not an object")?;
    if !obj.get("name").is_some_and(Value::is_string) {
        return Err("a case without a \"name\" string".into());
    }
    for k in obj.keys() {
        let known = ["name", "note", "config", "steps", "expect_error", "seed"];
        if !known.contains(&k.as_str()) && !guard.case_keys.contains(&k.as_str()) {
            return Err(format!("unknown case key `{k}`"));
        }
    }
    let mut new_args = Args::new();
    let mut flat = Vec::new();
    match c.get("config") {
        None => {}
        Some(cfg @ Value::Object(_)) => spec::flatten_config(guard, cfg, "config", &mut flat)?,
        Some(other) => return Err(format!("\"config\" is not an object: {other}")),
    }
    for (n, v) in flat {
        new_args.set(n, v);
    }
    let seed = match c.get("seed") {
        None => 0,
        Some(s) => s.as_u64().ok_or("\"seed\" is not an unsigned integer")?,
    };
    new_args.set("seed", seed);
    for (n, v) in (guard.new_args)(c) {
        new_args.set(n, v);
    }
    let expect_error = match c.get("expect_error") {
        None => None,
        Some(e) => {
            let field = e.get("field").and_then(Value::as_str);
            let kind = e.get("kind").and_then(Value::as_str);
            match (field, kind) {
                (Some(f), Some(k)) => Some((f.to_owned(), k.to_owned())),
                _ => return Err("\"expect_error\" needs \"field\" and \"kind\" strings".into()),
            }
        }
    };
    let raw_steps = match c.get("steps") {
        None => &[][..],
        Some(Value::Array(s)) => s.as_slice(),
        Some(_) => return Err("\"steps\" is not a list".into()),
    };
    if expect_error.is_some() && !raw_steps.is_empty() {
        return Err("a case with \"expect_error\" has no steps".into());
    }
    if expect_error.is_none() && raw_steps.is_empty() {
        return Err("a case needs \"steps\" or \"expect_error\"".into());
    }
    let steps = raw_steps
        .iter()
        .enumerate()
        .map(|(i, s)| parse_step(guard, i, s).map_err(|e| format!("step {i}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CaseBody {
        new_args,
        expect_error,
        steps,
    })
}

fn parse_step(guard: &'static Guard, index: usize, s: &Value) -> Result<Prepared, String> {
    let obj = s.as_object().ok_or("a step is not an object")?;
    let op_name = s
        .get("op")
        .and_then(Value::as_str)
        .ok_or("no \"op\" string")?;
    let op = guard
        .op(op_name)
        .ok_or_else(|| format!("`{}` has no op `{op_name}`", guard.name))?;
    let permit_key = match op.permits {
        Permits::None => None,
        Permits::Grant { by, .. } | Permits::Take { by, .. } | Permits::Peek { by } => {
            Some(by.key())
        }
    };
    for k in obj.keys() {
        let k = k.as_str();
        let is_arg = op.args.iter().any(|a| {
            a.name == k || (a.kind == Kind::Bytes && k.strip_suffix("_bytes") == Some(a.name))
        });
        if !(is_arg || ["op", "expect", "repeat"].contains(&k) || permit_key == Some(k)) {
            return Err(format!("`{op_name}` takes no argument `{k}`"));
        }
    }
    let mut args = Args::new();
    for a in op.args {
        read_arg(guard, s, a, &mut args).map_err(|e| format!("`{op_name}`: {e}"))?;
    }
    if let Some(adjust) = op.adjust {
        adjust(&mut args);
    }
    let permit = match op.permits {
        Permits::None => PermitRef::None,
        Permits::Grant {
            by: By::Name(k), ..
        } => match s.get(k) {
            None => PermitRef::None,
            Some(Value::String(n)) => PermitRef::Name(n.clone()),
            Some(other) => return Err(format!("`{k}` is not a name: {other}")),
        },
        Permits::Grant {
            by: By::Index(_), ..
        } => PermitRef::None,
        Permits::Take { by, optional } => permit_ref(s, by, optional)?,
        Permits::Peek { by } => permit_ref(s, by, false)?,
    };
    let repeat = match s.get("repeat") {
        None => 1,
        Some(r) => r
            .as_u64()
            .filter(|n| *n >= 1)
            .ok_or("\"repeat\" is not a positive integer")?,
    };
    let expect = match (s.get("expect"), op.compare) {
        (None, _) => None,
        (Some(e), Compare::Hex) => Some(Value::from(hex_word(e)?)),
        (Some(e), Compare::Subset) if !e.is_object() => {
            return Err(format!(
                "`{op_name}` expects an object of counters, not {e}"
            ))
        }
        (Some(e), _) => Some(e.clone()),
    };
    Ok(Prepared {
        index,
        op,
        args,
        permit,
        expect,
        repeat,
    })
}

fn permit_ref(s: &Value, by: By, optional: bool) -> Result<PermitRef, String> {
    let k = by.key();
    match (by, s.get(k)) {
        (_, None) if optional => Ok(PermitRef::None),
        (_, None) => Err(format!("no `{k}`")),
        (By::Name(_), Some(Value::String(n))) => Ok(PermitRef::Name(n.clone())),
        (By::Index(_), Some(v)) => v
            .as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .map(PermitRef::Index)
            .ok_or_else(|| format!("`{k}` is not an index: {v}")),
        (_, Some(v)) => Err(format!("`{k}` is not a name: {v}")),
    }
}

/// A 64-bit word written `"0x"` + hex digits.
fn hex_word(v: &Value) -> Result<u64, String> {
    v.as_str()
        .and_then(|s| s.strip_prefix("0x"))
        .and_then(|d| u64::from_str_radix(d, 16).ok())
        .ok_or_else(|| format!("{v} is not a 64-bit word \"0x…\""))
}

fn read_arg(
    guard: &'static Guard,
    s: &Value,
    a: &spec::Arg,
    args: &mut Args,
) -> Result<(), String> {
    let name = a.name;
    let mut given = s.get(name);
    let mut bytes_list = None;
    if a.kind == Kind::Bytes {
        let alt = format!("{name}_bytes");
        if let Some(list) = s.get(&alt) {
            if given.is_some() {
                return Err(format!("both `{name}` and `{alt}`"));
            }
            bytes_list = Some(list);
        }
    }
    if let Some(list) = bytes_list {
        let bytes = list
            .as_array()
            .and_then(|l| {
                l.iter()
                    .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                    .collect::<Option<Vec<u8>>>()
            })
            .ok_or_else(|| format!("`{name}_bytes` is not a list of byte values"))?;
        args.set(name, Scalar::Bytes(bytes));
        return Ok(());
    }
    if a.need == Need::Optional && given == Some(&Value::Null) && a.kind != Kind::IntOrNull {
        given = None;
    }
    let Some(v) = given else {
        return match a.need {
            Need::Required => Err(format!("no `{name}`")),
            Need::Optional => Ok(()),
            Need::DefaultInt(d) => {
                args.set(name, d);
                Ok(())
            }
            Need::DefaultStr(d) => {
                args.set(name, d);
                Ok(())
            }
        };
    };
    let wrong = |what: &str| format!("`{name}` is not {what}: {v}");
    let scalar = match a.kind {
        Kind::Int => match leaf(v) {
            Some(i @ Scalar::Int(_)) => i,
            _ => return Err(wrong("an integer")),
        },
        Kind::Num => number(v).ok_or_else(|| wrong("a number"))?,
        Kind::Bool => Scalar::Bool(v.as_bool().ok_or_else(|| wrong("a bool"))?),
        Kind::Str => Scalar::Str(v.as_str().ok_or_else(|| wrong("a string"))?.to_owned()),
        Kind::Hex => Scalar::Int(i128::from(hex_word(v)?)),
        Kind::Bytes => Scalar::Bytes(
            v.as_str()
                .ok_or_else(|| wrong("a string"))?
                .as_bytes()
                .to_vec(),
        ),
        Kind::IntOrNull => match leaf(v) {
            Some(x @ (Scalar::Int(_) | Scalar::Null)) => x,
            _ => return Err(wrong("an integer or null")),
        },
        Kind::Config => {
            if !v.is_object() {
                return Err(wrong("an object"));
            }
            let mut flat = Vec::new();
            spec::flatten_config(guard, v, name, &mut flat)?;
            for (n, x) in flat {
                args.set(n, x);
            }
            return Ok(());
        }
    };
    args.set(name, scalar);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Result<CaseBody, String> {
        let f = VectorFile::parse("bulkhead.json", text);
        let mut c = f.content?;
        c.cases.remove(0).body
    }

    #[test]
    fn a_good_case_is_normalised() {
        let b = body(
            r#"{"guard": "bulkhead", "cases": [{"name": "a", "config": {"max_concurrent": 2},
               "steps": [{"op": "try_acquire", "repeat": 2, "expect": {"acquired": true}},
                         {"op": "release", "permit": 1},
                         {"op": "from_littles_law", "rate_per_sec": "nan", "p99": 1, "headroom": 2}]}]}"#,
        )
        .unwrap();
        assert_eq!(
            b.new_args.get("config.max_concurrent"),
            Some(&Scalar::Int(2))
        );
        assert_eq!(b.new_args.get("seed"), Some(&Scalar::Int(0)));
        assert_eq!(b.steps[0].repeat, 2);
        assert_eq!(b.steps[1].permit, PermitRef::Index(1));
        assert!(
            matches!(b.steps[2].args.get("rate_per_sec"), Some(Scalar::Float(f)) if f.is_nan())
        );
        assert_eq!(b.steps[2].args.get("headroom"), Some(&Scalar::Int(2)));
    }

    #[test]
    fn file_mistakes_are_reported_not_skipped() {
        for (text, want) in [
            (
                r#"{"guard": "bulkhead", "cases": [{"name": "a", "steps": [{"op": "fly"}]}]}"#,
                "no op `fly`",
            ),
            (
                r#"{"guard": "bulkhead", "cases": [{"name": "a", "steps": [{"op": "in_flight", "now": 1}]}]}"#,
                "no argument `now`",
            ),
            (
                r#"{"guard": "bulkhead", "cases": [{"name": "a", "steps": [{"op": "release"}]}]}"#,
                "no `permit`",
            ),
            (
                r#"{"guard": "bulkhead", "cases": [{"name": "a", "steps": [{"op": "from_littles_law", "rate_per_sec": "x", "p99": 1, "headroom": 1}]}]}"#,
                "not a number",
            ),
            (
                r#"{"guard": "bulkhead", "cases": [{"name": "a", "steps": [{"op": "in_flight", "repeat": 0}]}]}"#,
                "repeat",
            ),
            (
                r#"{"guard": "bulkhead", "cases": [{"name": "a", "expect_error": {"field": "x"}}]}"#,
                "expect_error",
            ),
            (
                r#"{"guard": "bulkhead", "cases": [{"name": "a"}]}"#,
                "needs",
            ),
            (
                r#"{"guard": "bulkhead", "cases": [{"name": "a", "colour": 1, "steps": [{"op": "in_flight"}]}]}"#,
                "unknown case key",
            ),
        ] {
            let e = body(text).unwrap_err();
            assert!(e.contains(want), "{e} (wanted {want})");
        }
        for (name, text, want) in [
            ("bulkhead.json", "{", "not valid JSON"),
            (
                "bulkhead.json",
                r#"{"guard": "limit", "cases": [{}]}"#,
                "named",
            ),
            (
                "teleport.json",
                r#"{"guard": "teleport", "cases": [{}]}"#,
                "no interpreter",
            ),
            (
                "bulkhead.json",
                r#"{"guard": "bulkhead", "cases": []}"#,
                "no \"cases\"",
            ),
        ] {
            let e = VectorFile::parse(name, text).content.unwrap_err();
            assert!(e.contains(want), "{e} (wanted {want})");
        }
    }

    #[test]
    fn a_case_is_found_by_its_line() {
        let text = "{\n  \"cases\": [\n    {\"note\": \"x\",\n     \"name\": \"b\"}]}";
        assert_eq!(line_of(text, "b"), Some(4));
        assert_eq!(line_of(text, "x"), None);
    }
}
