//! Conversions between Python values and core's types, with errors that name the field.
//!
//! - Wrong Python types raise `TypeError` naming the argument.
//! - Values of the right type but out of range raise `ConfigError` (a `ValueError`) when
//!   they configure a guard ([`Ctx::Config`]), or `ValueError` when they are a call's
//!   argument ([`Ctx::Arg`]); both name the field and say what is accepted.
//! - Durations are seconds (`float`/`int`), `datetime.timedelta` or `guards.Nanos`
//!   (exact nanoseconds); instants (`now`, deadlines) are integer nanoseconds.

use guards_core::{ConfigError as CoreConfigError, ConfigErrorKind, Nanos, Priority};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyMapping, PyString};

use crate::config;
use crate::errors;
use crate::time::PyNanos;

/// Where a value comes from, which decides the exception class of a bad value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ctx {
    /// A guard's configuration: `ConfigError`.
    Config,
    /// A method argument: `ValueError`.
    Arg,
}

/// An argument that was given and is not `None`.
#[inline]
pub(crate) fn given<'a, 'py>(v: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    v.filter(|v| !v.is_none())
}

/// The error for a value of the right type but not accepted.
pub(crate) fn bad_value(
    py: Python<'_>,
    ctx: Ctx,
    field: &'static str,
    kind: ConfigErrorKind,
    expected: &'static str,
) -> PyErr {
    let e = CoreConfigError::new(field, kind, expected);
    match ctx {
        Ctx::Config => errors::config_error(py, e),
        Ctx::Arg => PyValueError::new_err(e.to_string()),
    }
}

/// The error for a value of the wrong type.
pub(crate) fn type_error(field: &str, what: &str, v: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "`{field}` must be {what}, not {}",
        config::type_name(v)
    ))
}

/// An integer as i128, `None` when it does not fit (caller reports out of range);
/// `Err(TypeError)` for non-integers, floats and bools.
fn int_of(field: &str, what: &str, v: &Bound<'_, PyAny>) -> PyResult<Option<i128>> {
    if v.is_instance_of::<PyInt>() {
        if v.is_instance_of::<PyBool>() {
            return Err(type_error(field, what, v));
        }
        return Ok(wide_int(v));
    }
    if v.is_instance_of::<PyFloat>() || !v.hasattr("__index__")? {
        return Err(type_error(field, what, v));
    }
    let idx = v.call_method0("__index__")?;
    Ok(wide_int(&idx))
}

/// A Python int as i128 (`None` beyond ±2**127). The common case, a non-negative int
/// below 2**64, is one C call.
#[inline]
fn wide_int(v: &Bound<'_, PyAny>) -> Option<i128> {
    if let Ok(u) = v.extract::<u64>() {
        return Some(i128::from(u));
    }
    if let Ok(i) = v.extract::<i64>() {
        return Some(i128::from(i));
    }
    v.extract::<i128>().ok()
}

/// A float (a Python `float` or `int`, not `bool`). NaN and infinities pass through:
/// core's validation names them.
pub(crate) fn get_f64(field: &'static str, v: &Bound<'_, PyAny>, ctx: Ctx) -> PyResult<f64> {
    const WHAT: &str = "a number (float or int)";
    if v.is_instance_of::<PyBool>() {
        return Err(type_error(field, WHAT, v));
    }
    if v.is_instance_of::<PyFloat>() {
        return v.extract::<f64>();
    }
    match int_of(field, WHAT, v)? {
        Some(i) => Ok(i as f64),
        None => Err(bad_value(
            v.py(),
            ctx,
            field,
            ConfigErrorKind::OutOfRange,
            "a finite number",
        )),
    }
}

/// A non-negative integer that fits in 64 bits.
pub(crate) fn get_u64(field: &'static str, v: &Bound<'_, PyAny>, ctx: Ctx) -> PyResult<u64> {
    get_uint(field, v, ctx, u64::MAX, "an integer in 0..=2**64-1")
}

/// A non-negative integer no larger than `max` (`expected` describes the range).
pub(crate) fn get_uint(
    field: &'static str,
    v: &Bound<'_, PyAny>,
    ctx: Ctx,
    max: u64,
    expected: &'static str,
) -> PyResult<u64> {
    match int_of(field, "an int", v)? {
        Some(i) if i < 0 => Err(bad_value(
            v.py(),
            ctx,
            field,
            ConfigErrorKind::Negative,
            expected,
        )),
        Some(i) => match u64::try_from(i) {
            Ok(u) if u <= max => Ok(u),
            _ => Err(bad_value(
                v.py(),
                ctx,
                field,
                ConfigErrorKind::OutOfRange,
                expected,
            )),
        },
        None => Err(bad_value(
            v.py(),
            ctx,
            field,
            ConfigErrorKind::OutOfRange,
            expected,
        )),
    }
}

/// A non-negative integer that fits in 32 bits.
pub(crate) fn get_u32(
    field: &'static str,
    v: &Bound<'_, PyAny>,
    ctx: Ctx,
    expected: &'static str,
) -> PyResult<u32> {
    let u = get_uint(field, v, ctx, u64::from(u32::MAX), expected)?;
    Ok(u32::try_from(u).unwrap_or(u32::MAX))
}

/// A `bool` (exactly: ints are not accepted, to catch swapped arguments).
pub(crate) fn get_bool(field: &'static str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    if v.is_instance_of::<PyBool>() {
        v.extract::<bool>()
    } else {
        Err(type_error(field, "a bool", v))
    }
}

/// A string (for enum-valued settings).
pub(crate) fn get_str(field: &'static str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    if v.is_instance_of::<PyString>() {
        v.extract::<String>()
    } else {
        Err(type_error(field, "a str", v))
    }
}

/// The bytes of a `str` (UTF-8) or `bytes` value.
pub(crate) fn str_or_bytes(field: &'static str, v: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = v.cast::<PyString>() {
        Ok(s.to_cow()?.as_bytes().to_vec())
    } else if let Ok(b) = v.cast::<PyBytes>() {
        Ok(b.as_bytes().to_vec())
    } else {
        Err(type_error(field, "a str or bytes", v))
    }
}

const DURATION_WHAT: &str =
    "a duration: seconds (float or int), datetime.timedelta or guards.Nanos";
const DURATION_EXPECTED: &str = "a duration of 0 s up to about 584 years";

/// A duration: seconds (`float`/`int`), `datetime.timedelta` or `guards.Nanos`.
pub(crate) fn get_duration(field: &'static str, v: &Bound<'_, PyAny>, ctx: Ctx) -> PyResult<Nanos> {
    let py = v.py();
    let bad = |kind| bad_value(py, ctx, field, kind, DURATION_EXPECTED);
    if let Ok(n) = v.cast::<PyNanos>() {
        return Ok(Nanos(n.get().ns));
    }
    if v.is_instance_of::<PyBool>() {
        return Err(type_error(field, DURATION_WHAT, v));
    }
    if v.is_instance_of::<PyFloat>() {
        let s: f64 = v.extract()?;
        if !s.is_finite() {
            return Err(bad(ConfigErrorKind::NotFinite));
        }
        if s < 0.0 {
            return Err(bad(ConfigErrorKind::Negative));
        }
        return Nanos::from_secs_f64(s).ok_or_else(|| bad(ConfigErrorKind::OutOfRange));
    }
    if config::is_timedelta(v)? {
        let days: i128 = v.getattr("days")?.extract()?;
        let secs: i128 = v.getattr("seconds")?.extract()?;
        let micros: i128 = v.getattr("microseconds")?.extract()?;
        let ns = (days * 86_400 + secs) * 1_000_000_000 + micros * 1_000;
        if ns < 0 {
            return Err(bad(ConfigErrorKind::Negative));
        }
        return u64::try_from(ns)
            .map(Nanos)
            .map_err(|_| bad(ConfigErrorKind::OutOfRange));
    }
    match int_of(field, DURATION_WHAT, v)? {
        Some(s) if s < 0 => Err(bad(ConfigErrorKind::Negative)),
        Some(s) => s
            .checked_mul(1_000_000_000)
            .and_then(|ns| u64::try_from(ns).ok())
            .map(Nanos)
            .ok_or_else(|| bad(ConfigErrorKind::OutOfRange)),
        None => Err(bad(ConfigErrorKind::OutOfRange)),
    }
}

/// An optional duration argument (`None` when absent or `None`).
pub(crate) fn opt_duration(
    field: &'static str,
    v: Option<&Bound<'_, PyAny>>,
    ctx: Ctx,
) -> PyResult<Option<Nanos>> {
    given(v).map(|v| get_duration(field, v, ctx)).transpose()
}

/// An instant: integer nanoseconds of the monotonic clock.
pub(crate) fn get_instant(field: &'static str, v: &Bound<'_, PyAny>) -> PyResult<Nanos> {
    match int_of(field, "an int (nanoseconds of the monotonic clock)", v)? {
        Some(i) if i < 0 => Err(bad_value(
            v.py(),
            Ctx::Arg,
            field,
            ConfigErrorKind::Negative,
            "integer nanoseconds in 0..=2**64-1",
        )),
        Some(i) => u64::try_from(i).map(Nanos).map_err(|_| {
            bad_value(
                v.py(),
                Ctx::Arg,
                field,
                ConfigErrorKind::OutOfRange,
                "integer nanoseconds in 0..=2**64-1",
            )
        }),
        None => Err(bad_value(
            v.py(),
            Ctx::Arg,
            field,
            ConfigErrorKind::OutOfRange,
            "integer nanoseconds in 0..=2**64-1",
        )),
    }
}

/// `now`: the given integer nanoseconds, or the clock's reading when absent or `None`.
#[inline]
/// A `now: int | None` argument as a clock read only when a decision needs it.
pub(crate) fn now_arg(now: Option<&Bound<'_, PyAny>>) -> PyResult<crate::clock::Arg> {
    match given(now) {
        None => Ok(crate::clock::Arg::Read),
        Some(v) => get_instant("now", v).map(crate::clock::Arg::At),
    }
}

pub(crate) fn get_now(now: Option<&Bound<'_, PyAny>>) -> PyResult<Nanos> {
    match given(now) {
        None => Ok(crate::clock::now()),
        Some(v) => get_instant("now", v),
    }
}

/// A priority class: an int in 0..=7 (0 is the most important).
pub(crate) fn get_priority(
    field: &'static str,
    v: &Bound<'_, PyAny>,
    ctx: Ctx,
) -> PyResult<Priority> {
    let level = get_uint(field, v, ctx, 7, "a priority class in 0..=7")?;
    u8::try_from(level)
        .ok()
        .and_then(Priority::new)
        .ok_or_else(|| {
            bad_value(
                v.py(),
                ctx,
                field,
                ConfigErrorKind::OutOfRange,
                "a priority class in 0..=7",
            )
        })
}

/// A stats dict from (name, counter) pairs.
pub(crate) fn stats_dict<'py>(
    py: Python<'py>,
    pairs: &[(&str, u64)],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in pairs {
        d.set_item(*k, *v)?;
    }
    Ok(d)
}

/// Seconds as a float, for durations handed back to users.
#[inline]
pub(crate) fn secs(n: Nanos) -> f64 {
    n.as_secs_f64()
}

/// Refuse a settings mapping (`field=`) with keys other than `allowed`.
pub(crate) fn check_mapping_keys(
    field: &str,
    m: &Bound<'_, PyMapping>,
    allowed: &[&str],
) -> PyResult<()> {
    for key in m.keys()?.iter() {
        let k: String = key.extract().map_err(|_| {
            PyTypeError::new_err(format!("`{field}` must be a mapping with str keys"))
        })?;
        if !allowed.contains(&k.as_str()) {
            return Err(PyTypeError::new_err(format!(
                "`{field}` has an unknown setting {k:?} (expected {})",
                allowed.join(", ")
            )));
        }
    }
    Ok(())
}

/// `m[key]` if present (and not None).
pub(crate) fn mapping_get<'py>(
    m: &Bound<'py, PyMapping>,
    key: &str,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if m.contains(key)? {
        let v = m.get_item(key)?;
        Ok((!v.is_none()).then_some(v))
    } else {
        Ok(None)
    }
}

/// A list (or tuple) of at most `max` items, for per-priority settings.
pub(crate) fn short_list<'py>(
    field: &'static str,
    v: &Bound<'py, PyAny>,
    max: usize,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if v.is_instance_of::<PyString>() || v.cast::<PyMapping>().is_ok() {
        return Err(type_error(
            field,
            "a list (one entry per priority class)",
            v,
        ));
    }
    let iter = v
        .try_iter()
        .map_err(|_| type_error(field, "a list (one entry per priority class)", v))?;
    let items = iter.collect::<PyResult<Vec<_>>>()?;
    if items.len() > max {
        return Err(bad_value(
            v.py(),
            Ctx::Config,
            field,
            ConfigErrorKind::OutOfRange,
            "at most 8 entries (one per priority class)",
        ));
    }
    Ok(items)
}

/// `True`/`False` as a repr spells them.
pub(crate) fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}
