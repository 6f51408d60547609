//! The values of the step protocol: a step's arguments ([`Args`], name -> [`Scalar`]) and
//! a backend's result ([`Record`], path -> [`Entry`]).
//!
//! A structured result is written as flat paths, so that a C program can build it one
//! scalar at a time: object keys are joined with `.`, list elements are `[i]`, and a
//! top-level scalar has the empty path. `{"served": {"id": 3}, "dropped": []}` is the
//! record `served.id = 3`, `dropped = <empty list>`; the JSON `[1, 2]` is `[0] = 1`,
//! `[1] = 2`.

use std::fmt;

use serde_json::{Map, Number, Value};

/// One value: an argument, or a leaf of a result.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// JSON `null`: "none" (no deadline, no result, ...).
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer (any JSON integer: unsigned 64-bit values and negative ones).
    Int(i128),
    /// A float, compared bit for bit (any NaN equals any NaN).
    Float(f64),
    /// A string.
    Str(String),
    /// Bytes (a header value that need not be UTF-8).
    Bytes(Vec<u8>),
}

impl Scalar {
    /// The JSON spelling of the value (bytes as a list of numbers; non-finite floats as
    /// the strings `"nan"`, `"inf"`, `"-inf"`, as the vector files spell them).
    pub fn to_json(&self) -> Value {
        match self {
            Scalar::Null => Value::Null,
            Scalar::Bool(b) => Value::Bool(*b),
            Scalar::Int(i) => int_json(*i),
            Scalar::Float(f) => float_json(*f),
            Scalar::Str(s) => Value::String(s.clone()),
            Scalar::Bytes(b) => Value::Array(b.iter().map(|x| Value::from(*x)).collect()),
        }
    }

    /// Exact equality: an integer never equals a float, floats compare bit for bit (so
    /// `0.0` is not `-0.0`) except that every NaN equals every NaN.
    pub fn same(&self, other: &Scalar) -> bool {
        match (self, other) {
            (Scalar::Float(a), Scalar::Float(b)) => {
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
            }
            (a, b) => a == b,
        }
    }

    /// What kind of value this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Scalar::Null => "null",
            Scalar::Bool(_) => "a bool",
            Scalar::Int(_) => "an integer",
            Scalar::Float(_) => "a float",
            Scalar::Str(_) => "a string",
            Scalar::Bytes(_) => "bytes",
        }
    }
}

fn int_json(i: i128) -> Value {
    if let Ok(u) = u64::try_from(i) {
        Value::from(u)
    } else if let Ok(s) = i64::try_from(i) {
        Value::from(s)
    } else {
        Value::String(i.to_string())
    }
}

fn float_json(f: f64) -> Value {
    if f.is_nan() {
        Value::String("nan".into())
    } else if f == f64::INFINITY {
        Value::String("inf".into())
    } else if f == f64::NEG_INFINITY {
        Value::String("-inf".into())
    } else {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

macro_rules! scalar_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Scalar {
            fn from(v: $t) -> Self {
                Scalar::Int(i128::from(v))
            }
        }
    )*};
}

scalar_from_int!(u8, u16, u32, u64, i8, i16, i32, i64);

impl From<usize> for Scalar {
    fn from(v: usize) -> Self {
        Scalar::Int(v as i128)
    }
}

impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}

impl From<&str> for Scalar {
    fn from(v: &str) -> Self {
        Scalar::Str(v.to_owned())
    }
}

impl From<String> for Scalar {
    fn from(v: String) -> Self {
        Scalar::Str(v)
    }
}

impl<T: Into<Scalar>> From<Option<T>> for Scalar {
    fn from(v: Option<T>) -> Self {
        v.map_or(Scalar::Null, Into::into)
    }
}

/// A number as the vector files write it: a JSON number, or `"nan"`, `"inf"`, `"-inf"`.
pub(crate) fn number(v: &Value) -> Option<Scalar> {
    match v {
        Value::Number(n) => Some(number_of(n)),
        Value::String(s) => non_finite(s).map(Scalar::Float),
        _ => None,
    }
}

/// The non-finite float a string spells, if it spells one.
pub(crate) fn non_finite(s: &str) -> Option<f64> {
    match s {
        "nan" => Some(f64::NAN),
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

fn number_of(n: &Number) -> Scalar {
    if let Some(u) = n.as_u64() {
        Scalar::Int(i128::from(u))
    } else if let Some(i) = n.as_i64() {
        Scalar::Int(i128::from(i))
    } else {
        Scalar::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// A JSON leaf as a scalar (`None` for objects and lists).
pub(crate) fn leaf(v: &Value) -> Option<Scalar> {
    match v {
        Value::Null => Some(Scalar::Null),
        Value::Bool(b) => Some(Scalar::Bool(*b)),
        Value::Number(n) => Some(number_of(n)),
        Value::String(s) => Some(Scalar::Str(s.clone())),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// Why an argument could not be read as the type asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    /// The argument's name.
    pub name: String,
    /// What was wrong: `"missing"`, `"negative"`, `"out_of_range"` or `"wrong_type"`.
    pub kind: &'static str,
    /// In words.
    pub message: String,
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "argument `{}`: {}", self.name, self.message)
    }
}

impl std::error::Error for ArgError {}

/// A step's arguments, in the order the step gives them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Args {
    items: Vec<(String, Scalar)>,
}

impl Args {
    /// No arguments.
    pub fn new() -> Self {
        Args::default()
    }

    /// Set `name` to `v` (replacing an earlier value).
    pub fn set(&mut self, name: impl Into<String>, v: impl Into<Scalar>) {
        let name = name.into();
        let v = v.into();
        match self.items.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = v,
            None => self.items.push((name, v)),
        }
    }

    /// Remove `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<Scalar> {
        let i = self.items.iter().position(|(n, _)| n == name)?;
        Some(self.items.remove(i).1)
    }

    /// Every (name, value), in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Scalar)> {
        self.items.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// How many arguments there are.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The `i`-th (name, value).
    pub fn at(&self, i: usize) -> Option<(&str, &Scalar)> {
        self.items.get(i).map(|(n, v)| (n.as_str(), v))
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&Scalar> {
        self.items.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Whether `name` is given (as anything, `null` included).
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    fn need(&self, name: &str) -> Result<&Scalar, ArgError> {
        self.get(name).ok_or_else(|| ArgError {
            name: name.to_owned(),
            kind: "missing",
            message: "missing".to_owned(),
        })
    }

    fn wrong(name: &str, want: &str, got: &Scalar) -> ArgError {
        ArgError {
            name: name.to_owned(),
            kind: "wrong_type",
            message: format!("expected {want}, got {} ({got})", got.kind()),
        }
    }

    /// `name` as an unsigned 64-bit integer.
    pub fn u64(&self, name: &str) -> Result<u64, ArgError> {
        match self.need(name)? {
            Scalar::Int(i) if *i < 0 => Err(ArgError {
                name: name.to_owned(),
                kind: "negative",
                message: format!("{i} is negative"),
            }),
            Scalar::Int(i) => u64::try_from(*i).map_err(|_| ArgError {
                name: name.to_owned(),
                kind: "out_of_range",
                message: format!("{i} does not fit 64 bits"),
            }),
            other => Err(Self::wrong(name, "an integer", other)),
        }
    }

    /// `name` as an unsigned 64-bit integer, or `None` when absent or `null`.
    pub fn opt_u64(&self, name: &str) -> Result<Option<u64>, ArgError> {
        match self.get(name) {
            None | Some(Scalar::Null) => Ok(None),
            Some(_) => self.u64(name).map(Some),
        }
    }

    /// `name` as a signed 64-bit integer.
    pub fn i64(&self, name: &str) -> Result<i64, ArgError> {
        match self.need(name)? {
            Scalar::Int(i) => i64::try_from(*i).map_err(|_| ArgError {
                name: name.to_owned(),
                kind: "out_of_range",
                message: format!("{i} does not fit a signed 64-bit integer"),
            }),
            other => Err(Self::wrong(name, "an integer", other)),
        }
    }

    /// `name` as a float (an integer argument is converted).
    pub fn f64(&self, name: &str) -> Result<f64, ArgError> {
        match self.need(name)? {
            Scalar::Float(f) => Ok(*f),
            Scalar::Int(i) => Ok(*i as f64),
            other => Err(Self::wrong(name, "a number", other)),
        }
    }

    /// `name` as a bool.
    pub fn bool(&self, name: &str) -> Result<bool, ArgError> {
        match self.need(name)? {
            Scalar::Bool(b) => Ok(*b),
            other => Err(Self::wrong(name, "a bool", other)),
        }
    }

    /// `name` as a string.
    pub fn str(&self, name: &str) -> Result<&str, ArgError> {
        match self.need(name)? {
            Scalar::Str(s) => Ok(s),
            other => Err(Self::wrong(name, "a string", other)),
        }
    }

    /// `name` as a string, or `None` when absent or `null`.
    pub fn opt_str(&self, name: &str) -> Result<Option<&str>, ArgError> {
        match self.get(name) {
            None | Some(Scalar::Null) => Ok(None),
            Some(_) => self.str(name).map(Some),
        }
    }

    /// `name` as bytes (a string argument gives its UTF-8 bytes).
    pub fn bytes(&self, name: &str) -> Result<&[u8], ArgError> {
        match self.need(name)? {
            Scalar::Bytes(b) => Ok(b),
            Scalar::Str(s) => Ok(s.as_bytes()),
            other => Err(Self::wrong(name, "bytes or a string", other)),
        }
    }

    /// The arguments under `prefix.` (e.g. a config's fields under `config.`), with the
    /// prefix taken off, in order.
    pub fn under<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a Scalar)> {
        self.items.iter().filter_map(move |(n, v)| {
            n.strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('.'))
                .map(|rest| (rest, v))
        })
    }

    /// The arguments as one JSON object, for messages.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        for (n, v) in &self.items {
            m.insert(n.clone(), v.to_json());
        }
        Value::Object(m)
    }
}

impl fmt::Display for Args {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

/// A leaf of a result.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A value.
    Value(Scalar),
    /// An empty list (`[]`: it has no elements to give paths to).
    EmptyList,
    /// An empty object (`{}`).
    EmptyObject,
    /// The backend cannot observe this part of the result through its API (e.g. the C API
    /// does not expose a breaker's generation). Never equal to anything: the interpreter
    /// counts it as unobserved, and reports the count.
    Unobservable,
}

/// A backend's result for one step: paths (see the module docs) to leaves, in the order
/// they were set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    entries: Vec<(String, Entry)>,
}

impl Record {
    /// An empty record (what an op with no result gives).
    pub fn new() -> Self {
        Record::default()
    }

    /// A top-level scalar result.
    pub fn scalar(v: impl Into<Scalar>) -> Self {
        let mut r = Record::new();
        r.put(String::new(), Entry::Value(v.into()));
        r
    }

    /// `null`: the result of an op that returns nothing.
    pub fn null() -> Self {
        Record::scalar(Scalar::Null)
    }

    /// A whole result that cannot be observed.
    pub fn unobservable() -> Self {
        let mut r = Record::new();
        r.put(String::new(), Entry::Unobservable);
        r
    }

    /// Set `path` to the leaf `e`, replacing an earlier value.
    pub fn put(&mut self, path: impl Into<String>, e: Entry) -> &mut Self {
        let path = path.into();
        match self.entries.iter_mut().find(|(p, _)| *p == path) {
            Some(slot) => slot.1 = e,
            None => self.entries.push((path, e)),
        }
        self
    }

    /// Set `path` to `v`.
    pub fn set(&mut self, path: impl Into<String>, v: impl Into<Scalar>) -> &mut Self {
        self.put(path, Entry::Value(v.into()))
    }

    /// `self` with `path` set to `v` (builder form).
    pub fn with(mut self, path: impl Into<String>, v: impl Into<Scalar>) -> Self {
        self.set(path, v);
        self
    }

    /// `self` with `path` marked unobservable (builder form).
    pub fn with_unobservable(mut self, path: impl Into<String>) -> Self {
        self.put(path, Entry::Unobservable);
        self
    }

    /// A JSON value as a record (its flattened paths).
    pub fn from_json(v: &Value) -> Self {
        let mut r = Record::new();
        flatten(v, String::new(), &mut |p, e| {
            r.put(p, e);
        });
        r
    }

    /// Every (path, leaf), in order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.entries.iter().map(|(p, e)| (p.as_str(), e))
    }

    /// The leaf at `path`.
    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.entries.iter().find(|(p, _)| p == path).map(|(_, e)| e)
    }

    /// Whether nothing was set.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The record as JSON, for messages (an unobservable leaf reads `"<unobservable>"`; a
    /// path that does not fit the shape of the others is kept as a key of its own).
    pub fn to_json(&self) -> Value {
        let mut root = Value::Null;
        let mut first = true;
        for (path, e) in &self.entries {
            let leaf = match e {
                Entry::Value(s) => s.to_json(),
                Entry::EmptyList => Value::Array(Vec::new()),
                Entry::EmptyObject => Value::Object(Map::new()),
                Entry::Unobservable => Value::String("<unobservable>".into()),
            };
            if first && path.is_empty() {
                root = leaf;
                first = false;
                continue;
            }
            first = false;
            if !insert(&mut root, &segments(path), leaf.clone()) {
                if !root.is_object() {
                    root = Value::Object(Map::new());
                }
                if let Value::Object(m) = &mut root {
                    m.insert(path.clone(), leaf);
                }
            }
        }
        root
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

/// Call `out(path, leaf)` for every leaf of `v` under `path`.
pub(crate) fn flatten(v: &Value, path: String, out: &mut dyn FnMut(String, Entry)) {
    match v {
        Value::Object(m) if m.is_empty() => out(path, Entry::EmptyObject),
        Value::Object(m) => {
            for (k, x) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                flatten(x, p, out);
            }
        }
        Value::Array(a) if a.is_empty() => out(path, Entry::EmptyList),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(x, format!("{path}[{i}]"), out);
            }
        }
        other => out(path, Entry::Value(leaf(other).unwrap_or(Scalar::Null))),
    }
}

#[derive(Debug, PartialEq)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// `a.b[2].c` as its segments; `None` if it is not a well-formed path.
fn segments(path: &str) -> Option<Vec<Seg<'_>>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (part.get(..i)?, part.get(i..)?),
            None => (part, ""),
        };
        if !key.is_empty() {
            out.push(Seg::Key(key));
        } else if out.is_empty() && rest.is_empty() {
            return None;
        }
        while let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            out.push(Seg::Index(r.get(..end)?.parse().ok()?));
            rest = r.get(end + 1..)?;
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(out)
}

/// Put `leaf` at `segs` inside `root`, creating objects and lists on the way; false if the
/// path does not fit what is already there.
fn insert(root: &mut Value, segs: &Option<Vec<Seg<'_>>>, leaf: Value) -> bool {
    let Some(segs) = segs else { return false };
    let mut cur = root;
    for seg in segs {
        match seg {
            Seg::Key(k) => {
                if cur.is_null() {
                    *cur = Value::Object(Map::new());
                }
                let Value::Object(m) = cur else { return false };
                cur = m.entry((*k).to_owned()).or_insert(Value::Null);
            }
            Seg::Index(i) => {
                if cur.is_null() {
                    *cur = Value::Array(Vec::new());
                }
                let Value::Array(a) = cur else { return false };
                while a.len() <= *i {
                    a.push(Value::Null);
                }
                let Some(slot) = a.get_mut(*i) else {
                    return false;
                };
                cur = slot;
            }
        }
    }
    *cur = leaf;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_round_trips_through_its_paths() {
        for v in [
            json!({"served": {"id": 3, "order": "fifo"}, "dropped": []}),
            json!({"dropped": [{"id": 1, "reason": "deadline"}, {"id": 2, "reason": "age_limit"}]}),
            json!([0, 1, 2, 3, 4, 5, 6, 7]),
            json!("closed"),
            json!(null),
            json!({"attempt": {"number": 1, "budget": 5, "expires_at": 9}}),
            json!({"x": {}, "y": -3, "z": 0.25}),
        ] {
            let r = Record::from_json(&v);
            assert_eq!(r.to_json(), v, "{r:?}");
        }
    }

    #[test]
    fn paths_are_dotted_keys_and_indices() {
        let r = Record::from_json(&json!({"a": {"b": [{"c": 1}]}}));
        assert_eq!(
            r.get("a.b[0].c"),
            Some(&Entry::Value(Scalar::Int(1))),
            "{r:?}"
        );
        assert_eq!(
            segments("a.b[0].c"),
            Some(vec![
                Seg::Key("a"),
                Seg::Key("b"),
                Seg::Index(0),
                Seg::Key("c")
            ])
        );
        assert_eq!(segments("[3]"), Some(vec![Seg::Index(3)]));
        assert_eq!(segments("a[x]"), None);
        assert_eq!(segments("a[1]b"), None);
    }

    #[test]
    fn scalars_compare_exactly() {
        assert!(!Scalar::Int(1).same(&Scalar::Float(1.0)));
        assert!(!Scalar::Float(0.0).same(&Scalar::Float(-0.0)));
        assert!(Scalar::Float(f64::NAN).same(&Scalar::Float(-f64::NAN)));
        assert!(Scalar::Float(0.1 + 0.2).same(&Scalar::Float(0.30000000000000004)));
        assert!(!Scalar::Float(0.1 + 0.2).same(&Scalar::Float(0.3)));
    }

    #[test]
    fn typed_getters_say_what_is_wrong() {
        let mut a = Args::new();
        a.set("now", 5u64);
        a.set("neg", -1i64);
        a.set("big", Scalar::Int(1 << 70));
        a.set("s", "x");
        assert_eq!(a.u64("now"), Ok(5));
        assert_eq!(a.u64("neg").unwrap_err().kind, "negative");
        assert_eq!(a.u64("big").unwrap_err().kind, "out_of_range");
        assert_eq!(a.u64("s").unwrap_err().kind, "wrong_type");
        assert_eq!(a.u64("nope").unwrap_err().kind, "missing");
        assert_eq!(a.f64("now"), Ok(5.0));
        assert_eq!(a.bytes("s"), Ok(&b"x"[..]));
        assert_eq!(a.opt_u64("nope"), Ok(None));
    }

    #[test]
    fn a_prefix_selects_nested_arguments() {
        let mut a = Args::new();
        a.set("config.window", 1u64);
        a.set("config.tracker.window", 2u64);
        a.set("configx", 3u64);
        a.set("seed", 0u64);
        let under: Vec<_> = a.under("config").map(|(n, _)| n).collect();
        assert_eq!(under, ["window", "tracker.window"]);
    }
}
