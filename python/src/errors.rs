//! The exceptions of `guards`: one base for every refusal, one per kind of refusal, and
//! `ConfigError` for configuration that core rejects.
//!
//! Every refusal exception carries `reason` (a snake_case string, or `None`) and
//! `retry_after` (seconds as a float, or `None`) with its exact twin `retry_after_ns`.
//! They are class attributes defaulting to `None`, so an exception raised from Python
//! (`raise guards.BreakerOpen("...")`) has them too.

use guards::error::{Detail, Failure, GuardsResult};
use guards_core::{ConfigError as CoreConfigError, Nanos};
use pyo3::exceptions::{
    PyException, PyMemoryError, PyRuntimeError, PyTimeoutError, PyTypeError, PyValueError,
};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

pyo3::create_exception!(
    guards,
    GuardError,
    PyException,
    "Base of every refusal by a guard. Attributes: `reason` (str or None), `retry_after` \
     (seconds or None) and `retry_after_ns` (int or None)."
);
pyo3::create_exception!(
    guards,
    BreakerOpen,
    GuardError,
    "The circuit breaker refused the call."
);
pyo3::create_exception!(
    guards,
    BulkheadFull,
    GuardError,
    "Every bulkhead slot is taken."
);
pyo3::create_exception!(
    guards,
    BudgetExhausted,
    GuardError,
    "The retry budget has no token for this retry."
);
pyo3::create_exception!(
    guards,
    LimitExceeded,
    GuardError,
    "The concurrency limit is reached."
);
pyo3::create_exception!(
    guards,
    AdmissionRejected,
    GuardError,
    "Admission control shed the request."
);
pyo3::create_exception!(guards, QueueFull, GuardError, "The wait queue is full.");
pyo3::create_exception!(
    guards,
    Throttled,
    GuardError,
    "The adaptive throttle rejected the request locally."
);
pyo3::create_exception!(
    guards,
    RetriesExhausted,
    GuardError,
    "Every attempt failed (or no further attempt was allowed). `attempts` is how many were \
     made; the last attempt's exception is `__cause__`."
);
pyo3::create_exception!(
    guards,
    ConfigError,
    PyValueError,
    "A configuration value was rejected. `field` names it (as spelled in the keyword \
     argument), `kind` says why (`not_finite`, `negative`, `zero`, `out_of_range`, \
     `inconsistent`) and `expected` describes the valid values."
);

pyo3::create_exception!(
    guards,
    HeaderError,
    PyValueError,
    "A deadline header (`grpc-timeout` or milliseconds) could not be parsed. `kind` names \
     why (`empty`, `missing_unit`, `unknown_unit`, `no_digits`, `invalid_character`, \
     `too_many_digits`, `overflow`)."
);

pyo3::create_exception!(
    guards,
    FleetError,
    PyRuntimeError,
    "A fleet member could not do what was asked (not a guard's refusal): Redis could not \
     be used, or the member has left."
);
pyo3::create_exception!(
    guards,
    FleetUnavailable,
    FleetError,
    "Redis could not be reached (or answered an error) when joining the fleet."
);
pyo3::create_exception!(
    guards,
    FleetAuthError,
    FleetError,
    "Redis refused the credentials of the fleet's URL (or requires some)."
);

/// `DeadlineExceeded(GuardError, TimeoutError)`: two bases, so it is built by calling
/// `type` at module initialisation (`create_exception!` takes a single base).
static DEADLINE_EXCEEDED: PyOnceLock<Py<PyType>> = PyOnceLock::new();

const DEADLINE_DOC: &str = "The deadline has passed (or too little of it is left for the \
    work). Also a `TimeoutError`, so code catching timeouts catches it.";

/// The `DeadlineExceeded` type.
pub(crate) fn deadline_exceeded(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    let ty = DEADLINE_EXCEEDED.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        let bases = PyTuple::new(
            py,
            [
                py.get_type::<GuardError>().into_any(),
                py.get_type::<PyTimeoutError>().into_any(),
            ],
        )?;
        let ns = PyDict::new(py);
        ns.set_item("__module__", "guards")?;
        ns.set_item("__doc__", DEADLINE_DOC)?;
        let t = py
            .get_type::<PyType>()
            .call1(("DeadlineExceeded", bases, ns))?
            .cast_into::<PyType>()?;
        Ok(t.unbind())
    })?;
    Ok(ty.bind(py))
}

/// A Python `ConfigError` from core's error (field, kind and expected values kept; the
/// message in words a Python user reads: ranges as `1 to 65536`, not Rust's `1..=65536`).
pub(crate) fn config_error(py: Python<'_>, e: CoreConfigError) -> PyErr {
    let expected = pythonic(e.expected());
    let message = format!(
        "invalid `{}`: {} (expected {expected})",
        e.field(),
        describe(e.kind())
    );
    config_error_parts(py, e.field(), e.kind().name(), &expected, &message)
}

/// What a kind of refused value means, in words.
fn describe(kind: guards_core::ConfigErrorKind) -> &'static str {
    use guards_core::ConfigErrorKind as K;
    match kind {
        K::NotFinite => "must be a finite number",
        K::Negative => "must not be negative",
        K::Zero => "must not be zero",
        K::OutOfRange => "is out of range",
        K::Inconsistent => "contradicts another setting",
        _ => "is not accepted",
    }
}

/// A range or bound as a Python user reads it: `1..=65536` is `1 to 65536`, Rust's
/// `u64::MAX` is `2**64 - 1`.
pub(crate) fn pythonic(text: &str) -> String {
    text.replace("..=", " to ")
        .replace("u64::MAX", "2**64 - 1")
        .replace("u32::MAX", "2**32 - 1")
        .replace("usize::MAX", "2**64 - 1")
}

/// The Python exception for a failure of ffi's shared layer: a refused setting is a
/// `ConfigError` naming the field, a value of the wrong type or an unknown setting a
/// `TypeError`, running out of memory a `MemoryError`.
pub(crate) fn failure(py: Python<'_>, f: Failure) -> PyErr {
    match f.detail {
        Detail::Config(e) => config_error(py, e),
        Detail::Argument { name, expected } if f.code == GuardsResult::ConfigWrongType => {
            PyTypeError::new_err(format!("`{name}` must be {expected}"))
        }
        Detail::Argument { name, expected } => PyValueError::new_err(format!(
            "invalid `{name}` (expected {})",
            pythonic(expected)
        )),
        Detail::UnknownField { given, valid, .. } => PyTypeError::new_err(format!(
            "unexpected setting `{}` (the settings are {valid})",
            given.as_str()
        )),
        _ => match f.code {
            GuardsResult::OutOfMemory => PyMemoryError::new_err(f.code.message()),
            _ => PyValueError::new_err(f.to_string()),
        },
    }
}

/// A duration a person reads in a message: `3.2 s`, `150 ms`, `40 µs`.
pub(crate) fn human(d: Nanos) -> String {
    let ns = d.as_u64();
    if d == Nanos::MAX {
        "ever".to_owned()
    } else if ns >= 10_000_000_000 {
        format!("{:.0} s", ns as f64 / 1e9)
    } else if ns >= 1_000_000_000 {
        format!("{:.1} s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.0} ms", ns as f64 / 1e6)
    } else if ns >= 1_000 {
        format!("{:.0} µs", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// A Python `ConfigError` from its parts.
pub(crate) fn config_error_parts(
    py: Python<'_>,
    field: &str,
    kind: &str,
    expected: &str,
    message: &str,
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let inst = py.get_type::<ConfigError>().call1((message,))?;
        inst.setattr("field", field)?;
        inst.setattr("kind", kind)?;
        inst.setattr("expected", expected)?;
        Ok(PyErr::from_value(inst))
    };
    build().unwrap_or_else(|e| e)
}

/// A Python `HeaderError` with its `kind`.
pub(crate) fn header_error(py: Python<'_>, kind: &str, message: String) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let inst = py.get_type::<HeaderError>().call1((message,))?;
        inst.setattr("kind", kind)?;
        Ok(PyErr::from_value(inst))
    };
    build().unwrap_or_else(|e| e)
}

/// A refusal exception of type `ty` with its attributes set.
pub(crate) fn refusal(
    ty: &Bound<'_, PyType>,
    message: String,
    reason: Option<&str>,
    retry_after: Option<Nanos>,
) -> PyErr {
    let py = ty.py();
    let build = || -> PyResult<PyErr> {
        let inst = ty.call1((message,))?;
        inst.setattr(
            intern!(py, "reason"),
            reason.map(|r| PyString::intern(py, r)),
        )?;
        inst.setattr(
            intern!(py, "retry_after"),
            retry_after.map(Nanos::as_secs_f64),
        )?;
        inst.setattr(
            intern!(py, "retry_after_ns"),
            retry_after.map(Nanos::as_u64),
        )?;
        Ok(PyErr::from_value(inst))
    };
    build().unwrap_or_else(|e| e)
}

/// Register the exceptions on the module and give them their class attributes.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let refusals = [
        py.get_type::<GuardError>(),
        py.get_type::<BreakerOpen>(),
        py.get_type::<BulkheadFull>(),
        py.get_type::<BudgetExhausted>(),
        py.get_type::<LimitExceeded>(),
        py.get_type::<AdmissionRejected>(),
        py.get_type::<QueueFull>(),
        py.get_type::<Throttled>(),
        py.get_type::<RetriesExhausted>(),
        deadline_exceeded(py)?.clone(),
    ];
    // Only the base needs the defaults: subclasses inherit them.
    let base = py.get_type::<GuardError>();
    base.setattr("reason", py.None())?;
    base.setattr("retry_after", py.None())?;
    base.setattr("retry_after_ns", py.None())?;
    py.get_type::<RetriesExhausted>().setattr("attempts", 0)?;
    py.get_type::<BulkheadFull>()
        .setattr("in_flight", py.None())?;
    py.get_type::<BulkheadFull>()
        .setattr("max_concurrent", py.None())?;
    let cfg = py.get_type::<ConfigError>();
    cfg.setattr("field", py.None())?;
    cfg.setattr("kind", py.None())?;
    cfg.setattr("expected", py.None())?;
    for t in refusals {
        m.add(t.name()?, t)?;
    }
    m.add("ConfigError", cfg)?;
    m.add("FleetError", py.get_type::<FleetError>())?;
    m.add("FleetUnavailable", py.get_type::<FleetUnavailable>())?;
    m.add("FleetAuthError", py.get_type::<FleetAuthError>())?;
    let hdr = py.get_type::<HeaderError>();
    hdr.setattr("kind", py.None())?;
    m.add("HeaderError", hdr)?;
    Ok(())
}
