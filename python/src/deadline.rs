//! `Deadline`, `DeadlineConfig` and `AttemptBudget`, and the two header forms that carry a
//! deadline to the next hop (`grpc-timeout` and integer milliseconds).
//!
//! A deadline is a value (an instant or "none"), so these classes are immutable and
//! hashable. Instants are integer nanoseconds of the monotonic clock; `time_left()` is
//! seconds (`math.inf` for no deadline) with `time_left_ns()` its exact twin (`None` for no
//! deadline).

use guards::schema::DEADLINE;
use guards_core::deadline::{
    encode_grpc_timeout as core_encode_grpc, encode_millis as core_encode_millis,
    parse_grpc_timeout as core_parse_grpc, parse_millis as core_parse_millis, AttemptBudget,
    Deadline, DeadlineConfig, GrpcTimeoutError, MillisError,
};
use guards_core::Nanos;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};

use crate::config::Args;

use crate::errors;
use crate::time::PyNanos;
use crate::util::{self, given, Ctx};

/// The bytes of a header value given as `str` or `bytes`.
fn header_bytes(field: &'static str, v: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    util::str_or_bytes(field, v)
}

fn grpc_error(py: Python<'_>, e: GrpcTimeoutError) -> PyErr {
    errors::header_error(py, e.name(), e.to_string())
}

fn millis_error(py: Python<'_>, e: MillisError) -> PyErr {
    errors::header_error(py, e.name(), e.to_string())
}

/// The instant after which nobody wants the answer, or none (never expires).
#[pyclass(module = "guards", name = "Deadline", frozen, eq, ord, hash)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyDeadline {
    pub(crate) d: Deadline,
}

impl PyDeadline {
    /// A deadline argument: a `Deadline`, or `None` for no deadline.
    pub(crate) fn arg(field: &'static str, v: Option<&Bound<'_, PyAny>>) -> PyResult<Deadline> {
        match given(v) {
            None => Ok(Deadline::NONE),
            Some(v) => match v.cast::<PyDeadline>() {
                Ok(d) => Ok(d.get().d),
                Err(_) => Err(util::type_error(field, "a guards.Deadline or None", v)),
            },
        }
    }
}

#[pymethods]
impl PyDeadline {
    /// `Deadline(expires_at=None)`: expiring at the instant `expires_at` (integer
    /// nanoseconds), or never when `None`.
    #[new]
    #[pyo3(signature = (expires_at = None))]
    fn new(expires_at: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(PyDeadline {
            d: match given(expires_at) {
                None => Deadline::NONE,
                Some(v) => Deadline::at(util::get_instant("expires_at", v)?),
            },
        })
    }

    /// `timeout` from `now` (a duration: seconds, timedelta or Nanos); saturates at "none".
    #[staticmethod]
    #[pyo3(signature = (timeout, now = None))]
    fn after(timeout: &Bound<'_, PyAny>, now: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let t = util::get_duration("timeout", timeout, Ctx::Arg)?;
        let now = util::get_now(now)?;
        Ok(PyDeadline {
            d: Deadline::after(now, t),
        })
    }

    /// At the instant `instant` (integer nanoseconds).
    #[staticmethod]
    fn at(instant: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyDeadline {
            d: Deadline::at(util::get_instant("instant", instant)?),
        })
    }

    /// No deadline.
    #[staticmethod]
    fn none() -> Self {
        PyDeadline { d: Deadline::NONE }
    }

    /// A deadline from a `grpc-timeout` header value received at `now`.
    #[staticmethod]
    #[pyo3(signature = (value, now = None))]
    fn from_grpc_timeout(
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let bytes = header_bytes("value", value)?;
        let now = util::get_now(now)?;
        Deadline::from_grpc_timeout(now, bytes)
            .map(|d| PyDeadline { d })
            .map_err(|e| grpc_error(py, e))
    }

    /// A deadline from an integer-milliseconds header value received at `now`.
    #[staticmethod]
    #[pyo3(signature = (value, now = None))]
    fn from_millis(
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let bytes = header_bytes("value", value)?;
        let now = util::get_now(now)?;
        Deadline::from_millis(now, bytes)
            .map(|d| PyDeadline { d })
            .map_err(|e| millis_error(py, e))
    }

    /// The expiry instant (integer nanoseconds), or `None` for no deadline.
    #[getter]
    fn expires_at(&self) -> Option<u64> {
        self.d.expires_at().map(Nanos::as_u64)
    }

    /// Whether this is "no deadline".
    fn is_none(&self) -> bool {
        self.d.is_none()
    }

    /// Seconds left at `now` (0.0 once expired, `math.inf` for no deadline).
    #[pyo3(signature = (now = None))]
    fn time_left(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
        let now = util::get_now(now)?;
        Ok(if self.d.is_none() {
            f64::INFINITY
        } else {
            util::secs(self.d.time_left(now))
        })
    }

    /// Nanoseconds left at `now` (0 once expired, `None` for no deadline).
    #[pyo3(signature = (now = None))]
    fn time_left_ns(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
        let now = util::get_now(now)?;
        Ok((!self.d.is_none()).then(|| self.d.time_left(now).as_u64()))
    }

    /// Whether `now` is at or past the deadline (never for no deadline).
    #[pyo3(signature = (now = None))]
    fn is_expired(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        Ok(self.d.is_expired(util::get_now(now)?))
    }

    /// The earlier of two deadlines (what a nested call inherits).
    fn min(&self, other: &Bound<'_, PyAny>) -> PyResult<Self> {
        let o = PyDeadline::arg("other", Some(other))?;
        Ok(PyDeadline { d: self.d.min(o) })
    }

    /// The budget of an attempt started at `now`: `min(attempt_timeout, time left) -
    /// margin`, or a decision not to start.
    #[pyo3(signature = (attempt_timeout, margin, now = None))]
    fn attempt_budget(
        &self,
        attempt_timeout: &Bound<'_, PyAny>,
        margin: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyAttemptBudget> {
        let t = util::get_duration("attempt_timeout", attempt_timeout, Ctx::Arg)?;
        let m = util::get_duration("margin", margin, Ctx::Arg)?;
        let now = util::get_now(now)?;
        Ok(PyAttemptBudget {
            b: self.d.attempt_budget(now, t, m),
        })
    }

    /// The time left at `now` as a `grpc-timeout` header value (rounded down), or `None`
    /// for no deadline.
    #[pyo3(name = "to_grpc_timeout", signature = (now = None))]
    fn grpc_timeout_header(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
        let now = util::get_now(now)?;
        Ok(self.d.to_grpc_timeout(now).map(|h| h.as_str().to_owned()))
    }

    /// The time left at `now` in whole milliseconds (rounded down) as a header value, or
    /// `None` for no deadline.
    #[pyo3(name = "to_millis", signature = (now = None))]
    fn millis_header(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
        let now = util::get_now(now)?;
        Ok(self.d.to_millis(now).map(|h| h.as_str().to_owned()))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, (Option<u64>,))> {
        Ok((slf.get_type(), (slf.get().expires_at(),)))
    }

    fn __repr__(&self) -> String {
        match self.d.expires_at() {
            Some(t) => format!("Deadline(expires_at={})", t.as_u64()),
            None => "Deadline(None)".to_owned(),
        }
    }
}

/// The budget of the next attempt: `decision` is `"start"` (with `budget`), `"expired"`
/// or `"too_little_left"` (with `left`).
#[pyclass(module = "guards", name = "AttemptBudget", frozen, eq)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyAttemptBudget {
    b: AttemptBudget,
}

#[pymethods]
impl PyAttemptBudget {
    /// `"start"`, `"expired"` or `"too_little_left"`.
    #[getter]
    fn decision(&self) -> &'static str {
        self.b.name()
    }

    /// Whether the attempt should be made.
    #[getter]
    fn should_start(&self) -> bool {
        self.b.should_start()
    }

    /// The attempt's budget in seconds when starting, else `None`.
    #[getter]
    fn budget(&self) -> Option<f64> {
        self.b.budget().map(util::secs)
    }

    /// The attempt's budget in nanoseconds when starting, else `None`.
    #[getter]
    fn budget_ns(&self) -> Option<u64> {
        self.b.budget().map(Nanos::as_u64)
    }

    /// For `"too_little_left"`: the seconds that were left (`math.inf` with no deadline);
    /// else `None`.
    #[getter]
    fn left(&self) -> Option<f64> {
        match self.b {
            AttemptBudget::TooLittleLeft { left } if left == Nanos::MAX => Some(f64::INFINITY),
            AttemptBudget::TooLittleLeft { left } => Some(util::secs(left)),
            _ => None,
        }
    }

    /// For `"too_little_left"`: the nanoseconds that were left (`None` with no deadline);
    /// else `None`.
    #[getter]
    fn left_ns(&self) -> Option<u64> {
        match self.b {
            AttemptBudget::TooLittleLeft { left } if left != Nanos::MAX => Some(left.as_u64()),
            _ => None,
        }
    }

    /// The attempt's own deadline when starting at `now`, else `None`.
    #[pyo3(signature = (now = None))]
    fn attempt_deadline(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<Option<PyDeadline>> {
        let now = util::get_now(now)?;
        Ok(self.b.attempt_deadline(now).map(|d| PyDeadline { d }))
    }

    fn __repr__(&self) -> String {
        match self.b {
            AttemptBudget::Start { budget } => {
                format!("AttemptBudget('start', budget_ns={})", budget.as_u64())
            }
            AttemptBudget::Expired => "AttemptBudget('expired')".to_owned(),
            AttemptBudget::TooLittleLeft { left } => {
                format!(
                    "AttemptBudget('too_little_left', left_ns={})",
                    left.as_u64()
                )
            }
        }
    }
}

/// Per-attempt timing: each attempt gets `min(attempt_timeout, time left) - margin`.
#[pyclass(module = "guards", name = "DeadlineConfig", frozen, eq)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyDeadlineConfig {
    c: DeadlineConfig,
}

#[pymethods]
impl PyDeadlineConfig {
    /// `DeadlineConfig(attempt_timeout=0.06, margin=0.001)`; durations in seconds.
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(attempt_timeout=0.06, *, margin=0.001)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let a = Args::collect("DeadlineConfig", &["attempt_timeout"], args, kwargs)?;
        Ok(PyDeadlineConfig {
            c: a.build(&DEADLINE)?,
        })
    }

    /// The per-attempt timeout in seconds.
    #[getter]
    fn attempt_timeout(&self) -> f64 {
        util::secs(self.c.attempt_timeout)
    }

    /// The margin kept back from each attempt, in seconds.
    #[getter]
    fn margin(&self) -> f64 {
        util::secs(self.c.margin)
    }

    /// The budget of an attempt started at `now` under `deadline` (`None`: no deadline).
    #[pyo3(signature = (deadline, now = None))]
    fn attempt_budget(
        &self,
        deadline: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyAttemptBudget> {
        let d = PyDeadline::arg("deadline", deadline)?;
        let now = util::get_now(now)?;
        Ok(PyAttemptBudget {
            b: self.c.attempt_budget(d, now),
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "DeadlineConfig(attempt_timeout={:?}, margin={:?})",
            self.attempt_timeout(),
            self.margin()
        )
    }
}

/// `encode_grpc_timeout(timeout)`: a duration as a `grpc-timeout` header value (the finest
/// unit whose value fits 8 digits, rounded down).
#[pyfunction]
pub(crate) fn encode_grpc_timeout(timeout: &Bound<'_, PyAny>) -> PyResult<String> {
    let t = util::get_duration("timeout", timeout, Ctx::Arg)?;
    Ok(core_encode_grpc(t).as_str().to_owned())
}

/// `parse_grpc_timeout(value)`: a `grpc-timeout` header value as an exact `Nanos`; raises
/// `HeaderError` (a `ValueError`) with `kind` naming what is wrong.
#[pyfunction]
pub(crate) fn parse_grpc_timeout(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<PyNanos> {
    let bytes = header_bytes("value", value)?;
    core_parse_grpc(bytes)
        .map(|n| PyNanos { ns: n.as_u64() })
        .map_err(|e| grpc_error(py, e))
}

/// `encode_millis(timeout)`: a duration as whole milliseconds (rounded down).
#[pyfunction]
pub(crate) fn encode_millis(timeout: &Bound<'_, PyAny>) -> PyResult<String> {
    let t = util::get_duration("timeout", timeout, Ctx::Arg)?;
    Ok(core_encode_millis(t).as_str().to_owned())
}

/// `parse_millis(value)`: an integer-milliseconds header value as an exact `Nanos`;
/// raises `HeaderError` with `kind` naming what is wrong.
#[pyfunction]
pub(crate) fn parse_millis(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<PyNanos> {
    let bytes = header_bytes("value", value)?;
    core_parse_millis(bytes)
        .map(|n| PyNanos { ns: n.as_u64() })
        .map_err(|e| millis_error(py, e))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDeadline>()?;
    m.add_class::<PyDeadlineConfig>()?;
    m.add_class::<PyAttemptBudget>()?;
    m.add_function(wrap_pyfunction!(encode_grpc_timeout, m)?)?;
    m.add_function(wrap_pyfunction!(parse_grpc_timeout, m)?)?;
    m.add_function(wrap_pyfunction!(encode_millis, m)?)?;
    m.add_function(wrap_pyfunction!(parse_millis, m)?)?;
    Ok(())
}
