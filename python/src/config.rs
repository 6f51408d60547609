//! Settings from Python, checked by ffi's schemas.
//!
//! Every constructor takes its settings as arguments named like the core config's fields
//! (`guards::schema`, one schema per config: name, unit, default, range). This module turns
//! the Python values into the schema's inputs and hands them to it, so a setting is
//! spelled, defaulted, bounded and refused the same way in Python, C and Node:
//!
//! - a setting left out takes the schema's default;
//! - `None` is refused with `TypeError` like any value of the wrong type: it never means
//!   "the default" (settings whose *value* can be "nothing", like a `seed` or an AIMD
//!   `latency_target`, document what `None` means and are handled by their class);
//! - a value of the wrong type is a `TypeError` naming the argument; an unknown name a
//!   `TypeError` listing the valid ones; a value out of range a `ConfigError` (a
//!   `ValueError`) with `field`, `kind` and `expected`;
//! - durations are seconds (`float`/`int`), `datetime.timedelta` or `guards.Nanos`.

use guards::error::Failure;
use guards::schema::{DurationUnit, Field, Input, Schema, Unit};
use guards_core::{ConfigError, ConfigErrorKind};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple, PyType};

use crate::errors;
use crate::time::PyNanos;

/// A Python value converted for the schema (owned: a `str` is copied out).
#[derive(Debug, Clone)]
pub(crate) enum Given {
    Int(i128),
    Float(f64),
    Bool(bool),
    Str(String),
    Nanos(u64),
}

impl Given {
    /// The schema's view of the value.
    pub(crate) fn input(&self) -> Input<'_> {
        match self {
            Given::Int(i) => Input::Int(*i),
            Given::Float(f) => Input::Float(*f),
            Given::Bool(b) => Input::Bool(*b),
            Given::Str(s) => Input::Str(s),
            Given::Nanos(n) => Input::Nanos(*n),
        }
    }
}

/// What a value of `unit` is, for `TypeError` messages.
pub(crate) fn what(unit: Unit) -> String {
    match unit {
        Unit::Duration => {
            "a duration: seconds (float or int), datetime.timedelta or guards.Nanos".to_owned()
        }
        Unit::Count => "an int".to_owned(),
        Unit::Ratio => "a number (float or int)".to_owned(),
        Unit::Bool => "a bool".to_owned(),
        Unit::Enum(names) => {
            let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
            format!("one of {}", quoted.join(", "))
        }
        Unit::Flags(_) => "an int (bits)".to_owned(),
    }
}

pub(crate) fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// `TypeError`: `field` must be `what`, not (the type of) `v`.
pub(crate) fn wrong_type(field: &str, what: &str, v: &Bound<'_, PyAny>) -> PyErr {
    if v.is_none() {
        return PyTypeError::new_err(format!(
            "`{field}` must be {what}, not None (leave it out to get its default)"
        ));
    }
    PyTypeError::new_err(format!("`{field}` must be {what}, not {}", type_name(v)))
}

static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();

pub(crate) fn is_timedelta(v: &Bound<'_, PyAny>) -> PyResult<bool> {
    let t = TIMEDELTA.import(v.py(), "datetime", "timedelta")?;
    v.is_instance(t)
}

/// An int (or an object with `__index__`, not a bool or a float) as an `i128`, saturating
/// beyond its range (the schema then names the field as out of range or negative).
fn int_of(v: &Bound<'_, PyAny>) -> PyResult<Option<i128>> {
    if v.is_instance_of::<PyBool>() || v.is_instance_of::<PyFloat>() {
        return Ok(None);
    }
    let owned;
    let int = if v.is_instance_of::<PyInt>() {
        v
    } else if v.hasattr("__index__")? {
        owned = v.call_method0("__index__")?;
        &owned
    } else {
        return Ok(None);
    };
    if let Ok(i) = int.extract::<i128>() {
        return Ok(Some(i));
    }
    // Beyond ±2**127: saturate, keeping the sign.
    let negative = int.lt(0)?;
    Ok(Some(if negative { i128::MIN } else { i128::MAX }))
}

/// `v` converted for `field` (whose name is `name` as the user spelled it).
pub(crate) fn given_for<C>(name: &str, field: &Field<C>, v: &Bound<'_, PyAny>) -> PyResult<Given> {
    let bad = || wrong_type(name, &what(field.unit), v);
    match field.unit {
        Unit::Count | Unit::Flags(_) => int_of(v)?.map(Given::Int).ok_or_else(bad),
        Unit::Ratio => {
            if v.is_instance_of::<PyFloat>() {
                return Ok(Given::Float(v.extract()?));
            }
            int_of(v)?.map(Given::Int).ok_or_else(bad)
        }
        Unit::Bool => {
            if v.is_instance_of::<PyBool>() {
                Ok(Given::Bool(v.extract()?))
            } else {
                Err(bad())
            }
        }
        Unit::Enum(_) => {
            if let Ok(s) = v.cast::<PyString>() {
                Ok(Given::Str(s.to_cow()?.into_owned()))
            } else {
                Err(bad())
            }
        }
        Unit::Duration => {
            if let Ok(n) = v.cast::<PyNanos>() {
                return Ok(Given::Nanos(n.get().ns));
            }
            if v.is_instance_of::<PyFloat>() {
                return Ok(Given::Float(v.extract()?));
            }
            if is_timedelta(v)? {
                let days: i128 = v.getattr("days")?.extract()?;
                let secs: i128 = v.getattr("seconds")?.extract()?;
                let micros: i128 = v.getattr("microseconds")?.extract()?;
                let ns = (days * 86_400 + secs) * 1_000_000_000 + micros * 1_000;
                let kind = if ns < 0 {
                    ConfigErrorKind::Negative
                } else {
                    ConfigErrorKind::OutOfRange
                };
                return u64::try_from(ns).map(Given::Nanos).map_err(|_| {
                    errors::config_error(v.py(), ConfigError::new(field.name, kind, field.expected))
                });
            }
            int_of(v)?.map(Given::Int).ok_or_else(bad)
        }
    }
}

/// The keyword arguments of a constructor, in the order given, with the positional ones
/// (at most `positional.len()`) named.
pub(crate) struct Args<'py> {
    py: Python<'py>,
    owner: &'static str,
    pairs: Vec<(String, Bound<'py, PyAny>)>,
}

impl std::fmt::Debug for Args<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Args")
            .field("owner", &self.owner)
            .field("names", &self.names())
            .finish()
    }
}

impl<'py> Args<'py> {
    /// `args` (bound in order to the names in `positional`) and `kwargs` of a call of
    /// `owner(...)`; a second value for one name, or too many positional arguments, is a
    /// `TypeError` as for a Python function.
    pub(crate) fn collect(
        owner: &'static str,
        positional: &[&str],
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Self> {
        if args.len() > positional.len() {
            return Err(PyTypeError::new_err(format!(
                "{owner}() takes at most {} positional argument{} ({} given)",
                positional.len(),
                if positional.len() == 1 { "" } else { "s" },
                args.len()
            )));
        }
        let mut pairs = Vec::with_capacity(args.len() + kwargs.map_or(0, |k| k.len()));
        for (name, v) in positional.iter().zip(args.iter()) {
            pairs.push(((*name).to_owned(), v));
        }
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                let k: String = k.extract()?;
                if pairs.iter().any(|(n, _)| *n == k) {
                    return Err(PyTypeError::new_err(format!(
                        "{owner}() got multiple values for argument '{k}'"
                    )));
                }
                pairs.push((k, v));
            }
        }
        Ok(Args {
            py: args.py(),
            owner,
            pairs,
        })
    }

    /// No settings yet (`push` adds them).
    pub(crate) fn empty(py: Python<'py>, owner: &'static str) -> Self {
        Args {
            py,
            owner,
            pairs: Vec::new(),
        }
    }

    /// Take out the argument `name` (one the class handles itself, not in the schema).
    pub(crate) fn take(&mut self, name: &str) -> Option<Bound<'py, PyAny>> {
        let i = self.pairs.iter().position(|(n, _)| n == name)?;
        Some(self.pairs.remove(i).1)
    }

    /// Add a setting (a nested one spelled with its schema name, `backoff.base`).
    pub(crate) fn push(&mut self, name: String, v: Bound<'py, PyAny>) {
        self.pairs.push((name, v));
    }

    /// Whether no setting is left.
    pub(crate) fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The names left, for messages.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.pairs.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Set every argument on `c` through `schema` (without validating the whole).
    pub(crate) fn apply<C: Copy>(&self, schema: &'static Schema<C>, c: &mut C) -> PyResult<()> {
        let py = self.py();
        for (name, v) in &self.pairs {
            let Some(field) = schema.field(name) else {
                return Err(PyTypeError::new_err(format!(
                    "{}() got an unexpected keyword argument '{name}' (its settings: {})",
                    self.owner,
                    schema.field_names()
                )));
            };
            if v.is_none() {
                return Err(wrong_type(name, &what(field.unit), v));
            }
            let g = given_for(name, field, v)?;
            field
                .set(c, g.input(), DurationUnit::Secs)
                .map_err(|f| failure_of(py, name, f))?;
        }
        Ok(())
    }

    /// The config: the schema's defaults with every argument applied, validated as a whole
    /// by core (contradictions between fields are reported there).
    pub(crate) fn build<C: Copy>(&self, schema: &'static Schema<C>) -> PyResult<C> {
        let mut c = schema.defaults();
        self.apply(schema, &mut c)?;
        schema
            .validate(&c)
            .map_err(|f| errors::failure(self.py(), f))?;
        Ok(c)
    }

    fn py(&self) -> Python<'py> {
        self.py
    }
}

/// A schema failure for the argument spelled `name`: wrong types keep the user's name.
fn failure_of(py: Python<'_>, name: &str, f: Failure) -> PyErr {
    match f.detail {
        guards::error::Detail::Argument { expected, .. }
            if f.code == guards::error::GuardsResult::ConfigWrongType =>
        {
            PyTypeError::new_err(format!("`{name}` must be {expected}"))
        }
        _ => errors::failure(py, f),
    }
}

/// A field's value as Python shows it: durations in seconds (`None` for the largest value,
/// which means "never" or "no limit"), enums by name, counts as ints, ratios as floats.
pub(crate) fn value_of<'py, C>(
    py: Python<'py>,
    field: &Field<C>,
    c: &C,
) -> PyResult<Bound<'py, PyAny>> {
    use guards::schema::Value;
    Ok(match (field.unit, field.get(c)) {
        (Unit::Duration, Value::Uint(u64::MAX)) => py.None().into_bound(py),
        (Unit::Duration, Value::Uint(ns)) => (ns as f64 / 1e9).into_pyobject(py)?.into_any(),
        (Unit::Enum(names), Value::Uint(i)) => usize::try_from(i)
            .ok()
            .and_then(|i| names.get(i))
            .copied()
            .unwrap_or("?")
            .into_pyobject(py)?
            .into_any(),
        (_, Value::Uint(u)) => u.into_pyobject(py)?.into_any(),
        (_, Value::Float(f)) => f.into_pyobject(py)?.into_any(),
        (_, Value::Bool(b)) => PyBool::new(py, b).to_owned().into_any(),
    })
}

/// The config as a dict keyed by the schema's names; nested names become nested values:
/// `backoff.base` a key of the dict `backoff`, `limits[2]` an item of the list `limits`,
/// `partitions[0].share` a key of the first dict of the list `partitions`.
pub(crate) fn to_dict<'py, C>(
    py: Python<'py>,
    schema: &'static Schema<C>,
    c: &C,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for f in schema.fields {
        let v = value_of(py, f, c)?;
        put(&out, f.name, v)?;
    }
    Ok(out)
}

/// Store `v` at `path` (`a`, `a.b`, `a[i]`, `a[i].b`) in `d`.
fn put<'py>(d: &Bound<'py, PyDict>, path: &str, v: Bound<'py, PyAny>) -> PyResult<()> {
    use pyo3::types::PyList;
    let py = d.py();
    let (head, rest) = match path.find(['.', '[']) {
        None => return d.set_item(path, v),
        Some(i) => path.split_at(i),
    };
    if let Some(after) = rest.strip_prefix('.') {
        let inner = match d.get_item(head)? {
            Some(x) => x.cast_into::<PyDict>()?,
            None => {
                let x = PyDict::new(py);
                d.set_item(head, &x)?;
                x
            }
        };
        return put(&inner, after, v);
    }
    // `[i]` then nothing, or `.rest`.
    let close = rest.find(']').unwrap_or(rest.len());
    let index: usize = rest.get(1..close).and_then(|i| i.parse().ok()).unwrap_or(0);
    let tail = rest.get(close + 1..).unwrap_or("");
    let list = match d.get_item(head)? {
        Some(x) => x.cast_into::<PyList>()?,
        None => {
            let x = PyList::empty(py);
            d.set_item(head, &x)?;
            x
        }
    };
    while list.len() <= index {
        if tail.is_empty() {
            list.append(py.None())?;
        } else {
            list.append(PyDict::new(py))?;
        }
    }
    match tail.strip_prefix('.') {
        None => list.set_item(index, v),
        Some(after) => put(&list.get_item(index)?.cast_into::<PyDict>()?, after, v),
    }
}

/// Set the per-priority field `{name}[i]` (or `{name}[i].{sub}`) of `c` from `items`, the
/// values given for classes 0, 1, ... (`None`: not given). Classes not given take the value
/// of the class before (ffi's `per_priority`), so a short list never breaks the ordering
/// core requires, and an error names an index the user wrote.
pub(crate) fn apply_per_priority<C: Copy>(
    py: Python<'_>,
    schema: &'static Schema<C>,
    c: &mut C,
    name: &str,
    sub: Option<&str>,
    items: &[Option<Bound<'_, PyAny>>],
) -> PyResult<()> {
    let field_name = |i: usize| match sub {
        None => format!("{name}[{i}]"),
        Some(s) => format!("{name}[{i}].{s}"),
    };
    let mut given: Vec<Option<Given>> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let fname = field_name(i);
        let Some(field) = schema.field(&fname) else {
            continue; // beyond the classes: refused by the caller's length check
        };
        given.push(match item {
            Some(v) => Some(given_for(&fname, field, v)?),
            None => None,
        });
    }
    let inputs: Vec<Option<Input<'_>>> =
        given.iter().map(|g| g.as_ref().map(Given::input)).collect();
    for (i, input) in guards::schema::per_priority(&inputs)
        .into_iter()
        .enumerate()
    {
        let Some(input) = input else { continue };
        let fname = field_name(i);
        if let Some(field) = schema.field(&fname) {
            field
                .set(c, input, DurationUnit::Secs)
                .map_err(|f| errors::failure(py, f))?;
        }
    }
    Ok(())
}
