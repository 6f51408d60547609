//! The call contract in Python: how a finished call becomes core's `Outcome`.
//!
//! Every path that reports a call to a guard (a permit's `with` block, a native guarded
//! call or block, `guards.guarded`, `@guards.retry`, the middlewares) classifies it here,
//! in one function, and hands the `Outcome` to core's `report`; what the outcome means to
//! each guard is core's table (`docs/outcomes.md`), never decided in the binding.
//!
//! The default classification of an exception ([`classify`], `guards.classify_exception`):
//!
//! | the call raised | outcome |
//! |---|---|
//! | a `BaseException` that is not an `Exception` (`CancelledError`, `KeyboardInterrupt`, `GeneratorExit`) | `cancelled` |
//! | `DeadlineExceeded` | `timeout` |
//! | `RetriesExhausted`, or another guard error with `attempts > 0` (an inner retry gave up) | `overloaded` |
//! | any other `GuardError` (a guard of this process refused) | `rejected` |
//! | a programming error (`PROGRAMMING_ERRORS`: `TypeError`, `KeyError`, ...) | `ignored` |
//! | an exception carrying an HTTP status (`status_code`, `status`, `response.status_code`) | core's `http::classify`, with the response's `Retry-After` |
//! | `TimeoutError` and HTTP clients' timeout errors | `timeout` |
//! | `ConnectionError`, a DNS failure, HTTP clients' connection errors | `connection_error` |
//! | an exception with a numeric `retry_after` attribute | `throttled` |
//! | anything else | `other_transient` |
//!
//! HTTP answers (`guards.http_outcome`) and `Retry-After` values are read by core's
//! `http` module: a garbage value is no Retry-After, a huge one saturates (and a retry
//! policy then gives up with `retry_after_too_long`); nothing a server sends can raise.

use std::time::{SystemTime, UNIX_EPOCH};

use guards_core::http;
use guards_core::outcome::RetryVerdict;
use guards_core::{ConfigErrorKind, Nanos, Outcome};
use pyo3::exceptions::{PyException, PyTimeoutError, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyString, PyTuple, PyType};

use crate::errors::{self, GuardError, RetriesExhausted};
use crate::util::{self, Ctx};

/// An outcome argument: its name (`"timeout"`, ...).
pub(crate) fn outcome_arg(v: &Bound<'_, PyAny>) -> PyResult<Outcome> {
    let Ok(s) = v.cast::<PyString>() else {
        return Err(util::type_error("outcome", "an outcome name (str)", v));
    };
    let name = s.to_cow()?;
    Outcome::from_name(&name).ok_or_else(|| {
        util::bad_value(
            v.py(),
            Ctx::Arg,
            "outcome",
            ConfigErrorKind::OutOfRange,
            "one of 'success', 'timeout', 'connection_error', 'other_transient', 'throttled', \
             'overloaded', 'permanent', 'rejected', 'ignored', 'cancelled'",
        )
    })
}

/// The outcome's name as an interned Python string.
pub(crate) fn name_of(py: Python<'_>, o: Outcome) -> Bound<'_, PyString> {
    PyString::intern(py, o.name())
}

/// Names of the exception classes (anywhere in the MRO) of HTTP clients' timeouts, so
/// they are recognised without importing the libraries.
const TIMEOUT_NAMES: [&str; 5] = [
    "TimeoutException",
    "Timeout",
    "ReadTimeout",
    "ConnectTimeout",
    "ServerTimeoutError",
];
/// ... and of their connection and transport errors.
const CONNECTION_NAMES: [&str; 5] = [
    "ConnectError",
    "NetworkError",
    "RemoteProtocolError",
    "ClientConnectionError",
    "ConnectionError",
];

/// What classification needs from Python, looked up once.
struct Types {
    programming: Py<PyTuple>,
    asyncio_timeout: Py<PyType>,
    gaierror: Py<PyType>,
}

fn types(py: Python<'_>) -> PyResult<&Types> {
    static TYPES: PyOnceLock<Types> = PyOnceLock::new();
    TYPES.get_or_try_init(py, || {
        let builtins = py.import("builtins")?;
        let names = [
            "TypeError",
            "AttributeError",
            "NameError",
            "KeyError",
            "IndexError",
            "AssertionError",
            "ZeroDivisionError",
            "ImportError",
            "NotImplementedError",
            "RecursionError",
            "SyntaxError",
        ];
        let items = names
            .iter()
            .map(|n| builtins.getattr(*n))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Types {
            programming: PyTuple::new(py, items)?.unbind(),
            asyncio_timeout: py
                .import("asyncio")?
                .getattr("TimeoutError")?
                .cast_into::<PyType>()?
                .unbind(),
            gaierror: py
                .import("socket")?
                .getattr("gaierror")?
                .cast_into::<PyType>()?
                .unbind(),
        })
    })
}

/// `PROGRAMMING_ERRORS`: the exceptions that are bugs in the caller's code, not failures of
/// a dependency (classified `ignored`).
pub(crate) fn programming_errors(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
    Ok(types(py)?.programming.bind(py).clone())
}

/// The wall clock in unix seconds (for HTTP dates).
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A `Retry-After` value as given to Python: a header (`str` or `bytes`, read by core), or
/// seconds (`int`/`float`; negative, NaN or infinite ones are garbage). `None` for no value
/// or garbage; never raises for a value a server could send.
fn retry_after_of(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Nanos>> {
    retry_after_at(v, None)
}

/// [`retry_after_of`] with an HTTP date read against `now_unix` (unix seconds; `None`: the
/// system's wall clock).
fn retry_after_at(v: Option<&Bound<'_, PyAny>>, now_unix: Option<u64>) -> PyResult<Option<Nanos>> {
    let unix_now = || now_unix.unwrap_or_else(unix_now);
    let Some(v) = v.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if v.is_instance_of::<PyBool>() {
        return Err(util::type_error(
            "retry_after",
            "a header value (str or bytes), seconds, or None",
            v,
        ));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(match s.to_cow() {
            Ok(text) => http::parse_retry_after(text.as_bytes(), unix_now()),
            Err(_) => None, // not valid text: garbage
        });
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(http::parse_retry_after(b.as_bytes(), unix_now()));
    }
    if v.is_instance_of::<PyFloat>() {
        let secs: f64 = v.extract()?;
        if secs.is_nan() || secs < 0.0 || secs.is_infinite() {
            return Ok(None);
        }
        return Ok(Some(Nanos::from_secs_f64(secs).unwrap_or(Nanos::MAX)));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(match v.extract::<i128>() {
            Ok(i) if i < 0 => None,
            Ok(i) => Some(
                u64::try_from(i)
                    .ok()
                    .and_then(|s| s.checked_mul(1_000_000_000))
                    .map_or(Nanos::MAX, Nanos),
            ),
            Err(_) => {
                if v.lt(0)? {
                    None
                } else {
                    Some(Nanos::MAX)
                }
            }
        });
    }
    Err(util::type_error(
        "retry_after",
        "a header value (str or bytes), seconds, or None",
        v,
    ))
}

/// An HTTP status carried by an exception (httpx, requests, aiohttp, or your own): its
/// `status_code` or `status`, or its `response`'s; and the object carrying it (whose
/// `headers` may hold a Retry-After).
fn http_status<'py>(exc: &Bound<'py, PyAny>) -> Option<(u16, Bound<'py, PyAny>)> {
    let py = exc.py();
    let response = exc.getattr(intern!(py, "response")).ok();
    for holder in std::iter::once(exc.clone()).chain(response) {
        if holder.is_none() {
            continue;
        }
        for attr in [intern!(py, "status_code"), intern!(py, "status")] {
            if let Ok(v) = holder.getattr(attr) {
                if v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>() {
                    if let Ok(code) = v.extract::<u16>() {
                        if (100..=599).contains(&code) {
                            return Some((code, holder));
                        }
                    }
                }
            }
        }
    }
    None
}

/// The `Retry-After` header of `holder.headers`, if it has one (any odd headers object:
/// none).
fn retry_after_header<'py>(holder: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    let py = holder.py();
    let headers = holder.getattr(intern!(py, "headers")).ok()?;
    let get = headers.getattr(intern!(py, "get")).ok()?;
    for name in ["Retry-After", "retry-after"] {
        if let Ok(v) = get.call1((name,)) {
            if !v.is_none() {
                return Some(v);
            }
        }
    }
    None
}

fn mro_has(exc: &Bound<'_, PyAny>, names: &[&str]) -> bool {
    exc.get_type().mro().iter().any(|t| {
        t.cast::<PyType>()
            .ok()
            .and_then(|t| t.name().ok())
            .and_then(|n| n.to_cow().ok().map(|n| names.contains(&n.as_ref())))
            .unwrap_or(false)
    })
}

/// Whether a guard error means the guarded work itself failed: an inner retry gave up after
/// making attempts (`RetriesExhausted`, or a guard error with `attempts > 0`).
fn retry_gave_up(py: Python<'_>, exc: &Bound<'_, PyAny>) -> bool {
    if exc.is_instance_of::<RetriesExhausted>() {
        return true;
    }
    match exc.getattr(intern!(py, "attempts")) {
        Ok(a) => !a.is_instance_of::<PyBool>() && a.extract::<u64>().is_ok_and(|n| n > 0),
        Err(_) => false,
    }
}

/// The default classification of an exception raised by a call (see the module docs), with
/// the server's Retry-After when the exception carries one.
pub(crate) fn classify(exc: &Bound<'_, PyAny>) -> PyResult<(Outcome, Option<Nanos>)> {
    let py = exc.py();
    if !exc.is_instance_of::<PyException>() {
        return Ok((Outcome::Cancelled, None));
    }
    if exc.is_instance_of::<GuardError>() {
        if exc.is_instance(errors::deadline_exceeded(py)?)? {
            return Ok((Outcome::Timeout, None));
        }
        if retry_gave_up(py, exc) {
            return Ok((Outcome::Overloaded, None));
        }
        return Ok((Outcome::Rejected, None));
    }
    let t = types(py)?;
    if exc.is_instance(t.programming.bind(py))? {
        return Ok((Outcome::Ignored, None));
    }
    if let Some((status, holder)) = http_status(exc) {
        let after = retry_after_of(retry_after_header(&holder).as_ref()).unwrap_or(None);
        let outcome = http::outcome_of_status(status, after.is_some());
        let after = after.filter(|_| outcome == Outcome::Throttled);
        return Ok((outcome, after));
    }
    if exc.is_instance_of::<PyTimeoutError>()
        || exc.is_instance(t.asyncio_timeout.bind(py))?
        || mro_has(exc, &TIMEOUT_NAMES)
    {
        return Ok((Outcome::Timeout, None));
    }
    if exc.is_instance_of::<pyo3::exceptions::PyConnectionError>()
        || exc.is_instance(t.gaierror.bind(py))?
        || mro_has(exc, &CONNECTION_NAMES)
    {
        return Ok((Outcome::ConnectionError, None));
    }
    if let Ok(ra) = exc.getattr(intern!(py, "retry_after")) {
        let numeric = (ra.is_instance_of::<PyInt>() && !ra.is_instance_of::<PyBool>())
            || ra.is_instance_of::<PyFloat>();
        if numeric {
            if let Ok(Some(after)) = retry_after_of(Some(&ra)) {
                return Ok((Outcome::Throttled, Some(after)));
            }
        }
    }
    Ok((Outcome::OtherTransient, None))
}

/// `classify_exception(exc)`: the default classification of an exception a call raised,
/// `(outcome, retry_after)` with `retry_after` in seconds or `None` (see `guards` docs:
/// the outcome table). The one rule every guarded path, retry and middleware uses.
#[pyfunction]
pub(crate) fn classify_exception<'py>(
    exc: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyString>, Option<f64>)> {
    if !exc.is_instance_of::<pyo3::exceptions::PyBaseException>() {
        return Err(util::type_error("exc", "an exception", exc));
    }
    let (o, after) = classify(exc)?;
    Ok((name_of(exc.py(), o), after.map(util::secs)))
}

/// `http_outcome(status, retry_after=None)`: the outcome of an HTTP answer, by core's
/// `http::classify`: 1xx-3xx `success`; 408 `timeout`; 429 `throttled`; 503 `throttled`
/// with a readable Retry-After, else `other_transient`; other 5xx (and a status outside
/// 100..=599) `other_transient`; other 4xx `permanent`. `retry_after` is the header's value
/// (`str`/`bytes`: delay-seconds or an HTTP date) or seconds; a garbage value is no
/// Retry-After, a huge one saturates; it is handed back only with `throttled`. `now_unix`
/// (whole unix seconds) is the wall-clock time an HTTP date is read against; `None`: the
/// system's clock.
#[pyfunction]
#[pyo3(signature = (status, retry_after = None, *, now_unix = None))]
pub(crate) fn http_outcome<'py>(
    status: &Bound<'py, PyAny>,
    retry_after: Option<&Bound<'py, PyAny>>,
    now_unix: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyString>, Option<f64>)> {
    let py = status.py();
    let now_unix = util::given(now_unix)
        .map(|v| util::get_u64("now_unix", v, util::Ctx::Arg))
        .transpose()?;
    if !status.is_instance_of::<PyInt>() || status.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "`status` must be an int, not {}",
            status.get_type().name()?
        )));
    }
    // Any int: a status outside 100..=599 is a malformed answer (`other_transient`).
    let code = status
        .extract::<i64>()
        .ok()
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(0);
    let after = retry_after_at(retry_after, now_unix)?;
    let outcome = http::outcome_of_status(code, after.is_some());
    let after = after.filter(|_| outcome == Outcome::Throttled);
    Ok((name_of(py, outcome), after.map(util::secs)))
}

/// `outcome_verdicts(outcome)`: what every guard does with `outcome`, the call contract's
/// table (`docs/outcomes.md`), as core decides it: `{"number", "breaker_call",
/// "breaker_probe", "bulkhead", "limiter", "retry_budget", "adaptive_throttle", "latency",
/// "retry": {"retry": cause} | {"give_up": reason}, "brownout": refusal kind or None}`.
#[pyfunction]
pub(crate) fn outcome_verdicts<'py>(outcome: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let py = outcome.py();
    let o = outcome_arg(outcome)?;
    let d = PyDict::new(py);
    d.set_item("number", o as u8)?;
    for (column, verdict) in guards::outcome::verdict_names(o) {
        d.set_item(column, verdict)?;
    }
    let retry = PyDict::new(py);
    match o.retry() {
        RetryVerdict::Retry(cause) => retry.set_item("retry", cause.name())?,
        RetryVerdict::GiveUp(reason) => retry.set_item("give_up", reason.name())?,
    }
    d.set_item("retry", retry)?;
    d.set_item("brownout", o.brownout().map(|k| k.name()))?;
    Ok(d)
}

/// `parse_http_date(value, *, now_unix=None)`: an IMF-fixdate (or the two obsolete forms
/// HTTP still allows) as unix seconds (negative before 1970), or `None` when it is not
/// one. `now_unix` is the wall clock a two-digit year is read against (`None`: the system's).
#[pyfunction]
#[pyo3(signature = (value, *, now_unix = None))]
pub(crate) fn parse_http_date(
    value: &Bound<'_, PyAny>,
    now_unix: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<i64>> {
    let bytes = util::str_or_bytes("value", value)?;
    let now = util::given(now_unix)
        .map(|v| util::get_u64("now_unix", v, Ctx::Arg))
        .transpose()?
        .unwrap_or_else(unix_now);
    Ok(http::parse_http_date(&bytes, now))
}

/// `format_http_date(unix)`: unix seconds as an IMF-fixdate (`"Sun, 06 Nov 1994 08:49:37
/// GMT"`, what a `Retry-After` or `Date` header carries), or `None` after the year 9999.
#[pyfunction]
pub(crate) fn format_http_date(unix: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let secs = util::get_u64("unix", unix, Ctx::Arg)?;
    Ok(http::format_http_date(secs).map(|d| d.as_str().to_owned()))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_http_date, m)?)?;
    m.add_function(wrap_pyfunction!(format_http_date, m)?)?;
    m.add_function(wrap_pyfunction!(classify_exception, m)?)?;
    m.add_function(wrap_pyfunction!(http_outcome, m)?)?;
    m.add_function(wrap_pyfunction!(outcome_verdicts, m)?)?;
    let names: Vec<&str> = Outcome::ALL.iter().map(|o| o.name()).collect();
    m.add("OUTCOMES", PyTuple::new(m.py(), names)?)?;
    m.add("PROGRAMMING_ERRORS", programming_errors(m.py())?)?;
    Ok(())
}
