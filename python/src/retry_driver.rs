//! `RetryRun`: the retry loop of one request, on core's `RetryDriver` (the call contract's
//! sans-IO retry loop). `@guards.retry` only sleeps and calls: it asks the run what to do
//! (`start`), makes the attempt, reports how it ended (`report`), waits when told and asks
//! again (`resume`); the run tells the budget, asks the policy (backoff, Retry-After,
//! deadline, budget last) and keeps the count of attempts and retries.
//!
//! Every step answers a tuple `(kind, a, b, c)`:
//!
//! | kind | a | b | c |
//! |---|---|---|---|
//! | `"attempt"` | its number (1 for the first) | its budget in ns (`None`: unbounded) | the instant its budget runs out (`None`: unbounded) |
//! | `"wait"` | the wait in ns | the instant to resume | `None` |
//! | `"succeeded"` | `None` | `None` | `None` |
//! | `"give_up"` | the reason (`attempts_exhausted`, `deadline_exceeded`, ...) | `None` | `None` |

use std::sync::{Mutex, MutexGuard};

use guards_core::deadline::{DeadlineConfig, MAX_ATTEMPT_TIMEOUT};
use guards_core::retry_budget::Budget;
use guards_core::retry_driver::{RetryDriver, RetryDriverError, RetryStep};
use guards_core::retry_policy::Idempotency;
use guards_core::{ConfigErrorKind, Nanos};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString, PyTuple};
use pyo3::{intern, PyTraverseError, PyVisit};

use crate::deadline::PyDeadline;
use crate::errors;
use crate::outcome;
use crate::retry_budget::PyRetryBudget;
use crate::retry_policy::PyRetryPolicy;
use crate::time::PyNanos;
use crate::util::{self, given, Ctx};

/// The retry loop of one request (see the module docs).
#[pyclass(module = "guards", name = "RetryRun", frozen)]
pub struct PyRetryRun {
    d: Mutex<RetryDriver>,
    policy: Py<PyRetryPolicy>,
    budget: Option<Py<PyRetryBudget>>,
    /// No deadline and no attempt timeout: attempts are not bounded (their budget is
    /// reported as `None`).
    unbounded: bool,
}

impl std::fmt::Debug for PyRetryRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryRun").finish_non_exhaustive()
    }
}

fn driver_error(e: RetryDriverError) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// A server's Retry-After as the loop got it: seconds (`float`/`int`) or `guards.Nanos`;
/// `None` (or a negative or NaN value: garbage) for none; a value too large to hold
/// saturates (the policy then gives up with `retry_after_too_long`). Never raises for a
/// value a server could have sent.
fn retry_after_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Nanos>> {
    let Some(v) = given(v) else { return Ok(None) };
    if let Ok(n) = v.cast::<PyNanos>() {
        return Ok(Some(Nanos(n.get().ns)));
    }
    if v.is_instance_of::<PyBool>() {
        return Err(util::type_error("retry_after", "seconds or None", v));
    }
    if v.is_instance_of::<PyFloat>() {
        let secs: f64 = v.extract()?;
        if secs.is_nan() || secs < 0.0 {
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
            Err(_) => (!v.lt(0)?).then_some(Nanos::MAX),
        });
    }
    Err(util::type_error("retry_after", "seconds or None", v))
}

impl PyRetryRun {
    fn lock(&self) -> MutexGuard<'_, RetryDriver> {
        self.d.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A step as the tuple the loop reads.
    fn step<'py>(&self, py: Python<'py>, s: RetryStep) -> PyResult<Bound<'py, PyTuple>> {
        let none = || py.None().into_bound(py);
        let items: [Bound<'py, PyAny>; 4] = match s {
            RetryStep::Attempt(a) => [
                intern!(py, "attempt").clone().into_any(),
                a.number.into_pyobject(py)?.into_any(),
                if self.unbounded {
                    none()
                } else {
                    a.budget.as_u64().into_pyobject(py)?.into_any()
                },
                if self.unbounded {
                    none()
                } else {
                    a.expires_at.as_u64().into_pyobject(py)?.into_any()
                },
            ],
            RetryStep::Wait(w) => [
                intern!(py, "wait").clone().into_any(),
                w.retry_after.as_u64().into_pyobject(py)?.into_any(),
                w.retry_at.as_u64().into_pyobject(py)?.into_any(),
                none(),
            ],
            RetryStep::Succeeded => [
                intern!(py, "succeeded").clone().into_any(),
                none(),
                none(),
                none(),
            ],
            RetryStep::GiveUp(r) => [
                intern!(py, "give_up").clone().into_any(),
                PyString::intern(py, r.name()).into_any(),
                none(),
                none(),
            ],
        };
        PyTuple::new(py, items)
    }

    fn budget<'a>(&'a self, py: Python<'_>) -> Option<&'a dyn Budget> {
        let _ = py;
        self.budget.as_ref().map(|b| &*b.get().b as &dyn Budget)
    }
}

#[pymethods]
impl PyRetryRun {
    /// `RetryRun(policy, *, budget=None, deadline=None, idempotency="idempotent",
    /// attempt_timeout=None, margin=0)`: the loop of one request under `policy` (a
    /// `RetryPolicy`), paid from `budget` (a `RetryBudget`), within `deadline` (a
    /// `Deadline`, or `None`), each attempt's budget `min(attempt_timeout, time left) -
    /// margin` (no `attempt_timeout`: only the deadline bounds it).
    #[new]
    #[pyo3(signature = (
        policy, *, budget = None, deadline = None, idempotency = None, attempt_timeout = None,
        margin = None
    ))]
    fn new(
        policy: &Bound<'_, PyAny>,
        budget: Option<&Bound<'_, PyAny>>,
        deadline: Option<&Bound<'_, PyAny>>,
        idempotency: Option<&Bound<'_, PyAny>>,
        attempt_timeout: Option<&Bound<'_, PyAny>>,
        margin: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let py = policy.py();
        let policy = policy
            .cast::<PyRetryPolicy>()
            .map_err(|_| util::type_error("policy", "a guards.RetryPolicy", policy))?
            .clone()
            .unbind();
        let budget = match given(budget) {
            None => None,
            Some(b) => Some(
                b.cast::<PyRetryBudget>()
                    .map_err(|_| util::type_error("budget", "a guards.RetryBudget or None", b))?
                    .clone()
                    .unbind(),
            ),
        };
        let deadline = PyDeadline::arg("deadline", deadline)?;
        let idem = match given(idempotency) {
            None => Idempotency::Idempotent,
            Some(v) => {
                let name = util::get_str("idempotency", v)?;
                Idempotency::from_name(&name).ok_or_else(|| {
                    util::bad_value(
                        py,
                        Ctx::Config,
                        "idempotency",
                        ConfigErrorKind::OutOfRange,
                        "one of 'idempotent', 'keyed_side_effect', 'unkeyed_side_effect'",
                    )
                })?
            }
        };
        let timeout = util::opt_duration("attempt_timeout", attempt_timeout, Ctx::Config)?;
        let margin = util::opt_duration("margin", margin, Ctx::Config)?.unwrap_or(Nanos::ZERO);
        let unbounded = timeout.is_none() && deadline.is_none();
        let config = DeadlineConfig {
            attempt_timeout: timeout.unwrap_or(MAX_ATTEMPT_TIMEOUT),
            margin,
        };
        let d =
            RetryDriver::new(deadline, idem, config).map_err(|e| errors::config_error(py, e))?;
        Ok(PyRetryRun {
            d: Mutex::new(d),
            policy,
            budget,
            unbounded,
        })
    }

    /// Start the request at `now`: the first attempt (a deposit in the budget), or give up
    /// (`deadline_exceeded`) when there is no time for one.
    #[pyo3(signature = (now = None))]
    fn start<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let now = util::get_now(now)?;
        let s = self
            .lock()
            .start(now, self.budget(py))
            .map_err(driver_error)?;
        self.step(py, s)
    }

    /// The attempt out ended at `now` with `outcome` (the call contract's name) and the
    /// server's `retry_after` (seconds, or `None`): wait, succeeded or give up.
    #[pyo3(signature = (outcome, retry_after = None, now = None))]
    fn report<'py>(
        &self,
        py: Python<'py>,
        outcome: &Bound<'py, PyAny>,
        retry_after: Option<&Bound<'py, PyAny>>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let o = outcome::outcome_arg(outcome)?;
        let after = retry_after_arg(retry_after)?;
        let now = util::get_now(now)?;
        let p = self.policy.get();
        let s = self
            .lock()
            .report(now, o, after, &p.p, &p.rng, self.budget(py))
            .map_err(driver_error)?;
        self.step(py, s)
    }

    /// The wait is over at `now`: the next attempt, or give up (`deadline_exceeded`).
    #[pyo3(signature = (now = None))]
    fn resume<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let now = util::get_now(now)?;
        let s = self.lock().resume(now).map_err(driver_error)?;
        self.step(py, s)
    }

    /// The caller abandoned the request: give up (`cancelled`).
    fn cancel<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let s = self.lock().cancel().map_err(driver_error)?;
        self.step(py, s)
    }

    /// Attempts started so far.
    #[getter]
    fn attempts(&self) -> u32 {
        self.lock().attempts()
    }

    /// Retries decided so far.
    #[getter]
    fn retries(&self) -> u32 {
        self.lock().retries()
    }

    /// `"idle"`, `"attempting"`, `"waiting"`, `"succeeded"` or `"gave_up"`.
    #[getter]
    fn phase(&self) -> &'static str {
        self.lock().phase().name()
    }

    /// Why the loop gave up (`"attempts_exhausted"`, `"deadline_exceeded"`, ...), or `None`.
    #[getter]
    fn give_up_reason(&self) -> Option<&'static str> {
        self.lock().give_up_reason().map(|r| r.name())
    }

    /// The outcome of the last attempt reported, or `None`.
    #[getter]
    fn last_outcome(&self) -> Option<&'static str> {
        self.lock().last_outcome().map(|o| o.name())
    }

    fn __repr__(&self) -> String {
        let d = self.lock();
        format!(
            "RetryRun(phase='{}', attempts={}, retries={})",
            d.phase().name(),
            d.attempts(),
            d.retries()
        )
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.policy)?;
        if let Some(b) = &self.budget {
            visit.call(b)?;
        }
        Ok(())
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRetryRun>()?;
    Ok(())
}
