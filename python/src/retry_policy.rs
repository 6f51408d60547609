//! `RetryPolicy`: whether to retry after an attempt's outcome, and after how long.
//!
//! `decide` answers with a `RetryDecision`: retry after `delay` (seconds; `delay_ns`
//! exact), or give up with a `reason`. The policy never sleeps: the caller waits (the
//! `@guards.retry` decorator does it with `time.sleep` or `asyncio.sleep`).
//!
//! A retry may also need a gate's permission (a retry budget, a throttle): `gate=` takes a
//! native guard that gates retries, any object with `allow_retry(now: int, cause: str) ->
//! bool`, or a callable `(now, cause) -> bool`. The gate is asked last, only when every
//! other check allows the retry, and pays for the retry when it answers yes.

use std::cell::RefCell;

use guards::handle::InPlace;
use guards::schema::RETRY_POLICY;
use guards_core::retry_policy::{
    GiveUpReason, Idempotency, RetryCause, RetryContext, RetryDecision, RetryGate, RetryPolicy,
};
use guards_core::{ConfigErrorKind, Nanos, Outcome};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::backoff::{self, PyBackoff};
use crate::config::{self, Args};
use crate::deadline::PyDeadline;
use crate::errors;
use crate::retry_budget::PyRetryBudget;
use crate::rng::PyRng;
use crate::util::{self, given, Ctx};

/// A gate implemented in Python: an object with `allow_retry(now, cause)` or a callable.
/// An exception raised by it is kept and re-raised after the decision.
pub(crate) struct PyGate<'a, 'py> {
    obj: &'a Bound<'py, PyAny>,
    method: bool,
    err: RefCell<Option<PyErr>>,
}

impl RetryGate for PyGate<'_, '_> {
    fn allow_retry(&self, now: Nanos, cause: RetryCause) -> bool {
        if self.err.borrow().is_some() {
            return false;
        }
        let args = (now.as_u64(), cause.name());
        let r = if self.method {
            self.obj.call_method1("allow_retry", args)
        } else {
            self.obj.call1(args)
        };
        match r.and_then(|v| v.is_truthy()) {
            Ok(b) => b,
            Err(e) => {
                *self.err.borrow_mut() = Some(e);
                false
            }
        }
    }
}

/// A native guard that can gate retries.
pub(crate) fn native_gate<'a>(v: &'a Bound<'_, PyAny>) -> Option<NativeGate<'a>> {
    if let Ok(b) = v.cast::<PyRetryBudget>() {
        return Some(NativeGate::RetryBudget(&b.get().b));
    }
    None
}

/// A reference to a native retry gate.
pub(crate) enum NativeGate<'a> {
    RetryBudget(&'a guards_core::RetryBudget),
}

impl RetryGate for NativeGate<'_> {
    fn allow_retry(&self, now: Nanos, cause: RetryCause) -> bool {
        match self {
            NativeGate::RetryBudget(b) => b.allow_retry(now, cause),
        }
    }
}

/// A retry cause: `"timeout"`, `"transient"` (the default), `"throttled"` or `"hedge"`.
pub(crate) fn cause_of(v: Option<&Bound<'_, PyAny>>) -> PyResult<RetryCause> {
    let Some(v) = given(v) else {
        return Ok(RetryCause::Transient);
    };
    let name = util::get_str("cause", v)?;
    [
        RetryCause::Timeout,
        RetryCause::Transient,
        RetryCause::Throttled,
        RetryCause::Hedge,
    ]
    .into_iter()
    .find(|c| c.name() == name)
    .ok_or_else(|| {
        util::bad_value(
            v.py(),
            Ctx::Arg,
            "cause",
            ConfigErrorKind::OutOfRange,
            "one of \"timeout\", \"transient\", \"throttled\", \"hedge\"",
        )
    })
}

/// How a `gate=` argument will be asked.
pub(crate) enum Gate<'a, 'py> {
    Native(NativeGate<'a>),
    Python(PyGate<'a, 'py>),
}

impl<'a, 'py> Gate<'a, 'py> {
    pub(crate) fn from_arg(v: Option<&'a Bound<'py, PyAny>>) -> PyResult<Option<Self>> {
        let Some(v) = given(v) else { return Ok(None) };
        if let Some(n) = native_gate(v) {
            return Ok(Some(Gate::Native(n)));
        }
        let method = v.hasattr("allow_retry")?;
        if !method && !v.is_callable() {
            return Err(util::type_error(
                "gate",
                "a retry gate (an object with allow_retry(now, cause), or a callable)",
                v,
            ));
        }
        Ok(Some(Gate::Python(PyGate {
            obj: v,
            method,
            err: RefCell::new(None),
        })))
    }

    pub(crate) fn as_dyn(&self) -> &dyn RetryGate {
        match self {
            Gate::Native(n) => n,
            Gate::Python(p) => p,
        }
    }

    /// The exception a Python gate raised, if any.
    pub(crate) fn take_error(&self) -> Option<PyErr> {
        match self {
            Gate::Native(_) => None,
            Gate::Python(p) => p.err.borrow_mut().take(),
        }
    }
}

fn outcome_of(outcome: &Bound<'_, PyAny>) -> PyResult<Outcome> {
    let name = util::get_str("outcome", outcome)?;
    Outcome::from_name(&name).ok_or_else(|| {
        util::bad_value(
            outcome.py(),
            Ctx::Arg,
            "outcome",
            ConfigErrorKind::OutOfRange,
            "one of \"success\", \"timeout\", \"connection_error\", \"other_transient\", \
             \"throttled\", \"overloaded\", \"permanent\", \"rejected\", \"ignored\", \
             \"cancelled\"",
        )
    })
}

fn idempotency_of(v: Option<&Bound<'_, PyAny>>) -> PyResult<Idempotency> {
    let Some(v) = given(v) else {
        return Ok(Idempotency::Idempotent);
    };
    let name = util::get_str("idempotency", v)?;
    Idempotency::from_name(&name).ok_or_else(|| {
        util::bad_value(
            v.py(),
            Ctx::Arg,
            "idempotency",
            ConfigErrorKind::OutOfRange,
            "one of \"idempotent\", \"keyed_side_effect\", \"unkeyed_side_effect\"",
        )
    })
}

/// Whether to retry, and after how long.
#[pyclass(module = "guards", name = "RetryDecision", frozen, eq)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyRetryDecision {
    d: RetryDecision,
}

#[pymethods]
impl PyRetryDecision {
    /// Whether to retry.
    #[getter]
    fn retry(&self) -> bool {
        self.d.is_retry()
    }

    /// Seconds to wait before the retry, or `None` when giving up.
    #[getter]
    fn delay(&self) -> Option<f64> {
        self.d.after().map(util::secs)
    }

    /// Integer nanoseconds to wait before the retry, or `None` when giving up.
    #[getter]
    fn delay_ns(&self) -> Option<u64> {
        self.d.after().map(Nanos::as_u64)
    }

    /// Why the policy gives up (`succeeded`, `permanent`, `overloaded`, `not_retryable`,
    /// `attempts_exhausted`, `not_idempotent`, `retry_after_too_long`,
    /// `deadline_exceeded`, `budget_exhausted`), or `None` when retrying.
    #[getter]
    fn reason(&self) -> Option<&'static str> {
        self.d.give_up_reason().map(GiveUpReason::name)
    }

    /// When giving up: whether the caller should report "overloaded" upstream rather than
    /// the last error (every reason but `succeeded` and `permanent`). `False` when retrying.
    #[getter]
    fn propagate_as_overloaded(&self) -> bool {
        self.d
            .give_up_reason()
            .is_some_and(GiveUpReason::should_propagate_as_overloaded)
    }

    fn __bool__(&self) -> bool {
        self.d.is_retry()
    }

    fn __repr__(&self) -> String {
        match self.d {
            RetryDecision::Retry { after } => {
                format!("RetryDecision(retry=True, delay_ns={})", after.as_u64())
            }
            RetryDecision::GiveUp(r) => {
                format!("RetryDecision(retry=False, reason='{}')", r.name())
            }
        }
    }
}

/// Retry policy: attempts, which outcomes to retry, Retry-After, backoff and deadline.
#[pyclass(module = "guards", name = "RetryPolicy", frozen)]
#[derive(Debug)]
pub struct PyRetryPolicy {
    /// Built in place: core's counters are cache-line aligned, more than Python's allocator
    /// guarantees for the object that holds a pyclass's fields.
    pub(crate) p: InPlace<RetryPolicy>,
    pub(crate) rng: guards_core::Rng,
}

#[pymethods]
impl PyRetryPolicy {
    /// `RetryPolicy(max_attempts=3, **settings)`: the settings of core's
    /// `RetryPolicyConfig` (durations in seconds); `backoff` is a `Backoff` or a mapping of
    /// its settings (errors name them `backoff.base`, ...); `seed` seeds the jitter
    /// (`None`: a random seed).
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(max_attempts=3, *, retry_timeouts=True, retry_connection_errors=True, retry_other_transient=True, retry_throttled=True, honor_retry_after=True, max_retry_after=20.0, min_attempt_time=0.001, unkeyed_side_effects='never', backoff=None, seed=None)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = args.py();
        let mut a = Args::collect("RetryPolicy", &["max_attempts"], args, kwargs)?;
        let seed = a.take("seed");
        let mut ready = None;
        if let Some(b) = a.take("backoff") {
            match backoff::backoff_arg(&b)? {
                backoff::BackoffArg::Ready(c) => ready = Some(c),
                backoff::BackoffArg::Settings(pairs) => {
                    for (k, v) in pairs {
                        a.push(k, v);
                    }
                }
            }
        }
        let mut c = RETRY_POLICY.defaults();
        a.apply(&RETRY_POLICY, &mut c)?;
        if let Some(b) = ready {
            c.backoff = b;
        }
        RETRY_POLICY
            .validate(&c)
            .map_err(|f| errors::failure(py, f))?;
        let p = InPlace::<RetryPolicy>::new(c).map_err(|f| errors::failure(py, f))?;
        Ok(PyRetryPolicy {
            p,
            rng: PyRng::from_seed_arg(seed.as_ref())?,
        })
    }

    /// The settings (durations in seconds; `backoff` as a dict).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config::to_dict(py, &RETRY_POLICY, self.p.config())
    }

    /// Most attempts (the first one included).
    #[getter]
    fn max_attempts(&self) -> u32 {
        self.p.config().max_attempts
    }

    /// Decide after attempt number `attempts_made` ended with `outcome` (`"success"`,
    /// `"timeout"`, `"connection_error"`, `"other_transient"`, `"throttled"`,
    /// `"overloaded"`, `"permanent"`).
    ///
    /// `retry_after`: the callee's Retry-After (read for `"throttled"`); `idempotency`:
    /// `"idempotent"`, `"keyed_side_effect"` or `"unkeyed_side_effect"`; `time_left` (a
    /// duration) or `deadline` (a `Deadline`, read at `now`) bound the wait; `prev_delay`
    /// is the previous wait (for decorrelated jitter); `gate` may refuse the retry; `rng`
    /// overrides the policy's generator.
    #[pyo3(signature = (
        attempts_made,
        outcome,
        *,
        retry_after = None,
        idempotency = None,
        time_left = None,
        deadline = None,
        prev_delay = None,
        gate = None,
        rng = None,
        now = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn decide(
        &self,
        attempts_made: &Bound<'_, PyAny>,
        outcome: &Bound<'_, PyAny>,
        retry_after: Option<&Bound<'_, PyAny>>,
        idempotency: Option<&Bound<'_, PyAny>>,
        time_left: Option<&Bound<'_, PyAny>>,
        deadline: Option<&Bound<'_, PyAny>>,
        prev_delay: Option<&Bound<'_, PyAny>>,
        gate: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyRetryDecision> {
        let made = util::get_u32(
            "attempts_made",
            attempts_made,
            Ctx::Arg,
            "an int in 0..=2**32-1",
        )?;
        let retry_after = util::opt_duration("retry_after", retry_after, Ctx::Arg)?;
        let outcome = outcome_of(outcome)?;
        // A Retry-After is only read with a throttled outcome (as before the call contract).
        let retry_after = retry_after.filter(|_| outcome == Outcome::Throttled);
        let idem = idempotency_of(idempotency)?;
        let now = util::get_now(now)?;
        let mut left = util::opt_duration("time_left", time_left, Ctx::Arg)?;
        if given(deadline).is_some() {
            if left.is_some() {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "give `time_left` or `deadline`, not both",
                ));
            }
            let d = PyDeadline::arg("deadline", deadline)?;
            left = (!d.is_none()).then(|| d.time_left(now));
        }
        let prev = util::opt_duration("prev_delay", prev_delay, Ctx::Arg)?.unwrap_or(Nanos::ZERO);
        let ctx = RetryContext::new(made, outcome)
            .with_retry_after(retry_after)
            .with_idempotency(idem)
            .with_time_left(left)
            .with_prev_delay(prev);
        let gate = Gate::from_arg(gate)?;
        let gate_dyn = gate.as_ref().map(Gate::as_dyn);
        let d = match backoff::rng_arg(rng)? {
            Some(r) => self.p.decide(now, ctx, &r.get().rng, gate_dyn),
            None => self.p.decide(now, ctx, &self.rng, gate_dyn),
        };
        if let Some(e) = gate.as_ref().and_then(Gate::take_error) {
            return Err(e);
        }
        Ok(PyRetryDecision { d })
    }

    /// The longest a call can take: `max_attempts` attempts of `attempt_timeout` plus
    /// every largest backoff between them, in seconds.
    fn worst_case_time(&self, attempt_timeout: &Bound<'_, PyAny>) -> PyResult<f64> {
        Ok(util::secs(self.worst_case(attempt_timeout)?))
    }

    /// `worst_case_time` in integer nanoseconds.
    fn worst_case_time_ns(&self, attempt_timeout: &Bound<'_, PyAny>) -> PyResult<u64> {
        Ok(self.worst_case(attempt_timeout)?.as_u64())
    }

    /// The policy's backoff (same settings; its own generator).
    #[getter]
    fn backoff(&self, py: Python<'_>) -> PyResult<Py<PyBackoff>> {
        let b = PyBackoff::from_config(self.p.backoff().config())?;
        Py::new(py, b)
    }

    /// Counters: `retries` and one per give-up reason.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.p.stats();
        util::stats_dict(
            py,
            &[
                ("retries", s.retries),
                ("succeeded", s.succeeded),
                ("permanent", s.permanent),
                ("overloaded", s.overloaded),
                ("not_retryable", s.not_retryable),
                ("attempts_exhausted", s.attempts_exhausted),
                ("not_idempotent", s.not_idempotent),
                ("retry_after_too_long", s.retry_after_too_long),
                ("deadline_exceeded", s.deadline_exceeded),
                ("budget_exhausted", s.budget_exhausted),
                ("rejected", s.rejected),
                ("ignored", s.ignored),
                ("cancelled", s.cancelled),
            ],
        )
    }

    fn __repr__(&self) -> String {
        format!("RetryPolicy(max_attempts={})", self.p.config().max_attempts)
    }
}

impl PyRetryPolicy {
    fn worst_case(&self, attempt_timeout: &Bound<'_, PyAny>) -> PyResult<Nanos> {
        let t = util::get_duration("attempt_timeout", attempt_timeout, Ctx::Arg)?;
        Ok(self.p.worst_case_time(t))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRetryPolicy>()?;
    m.add_class::<PyRetryDecision>()?;
    Ok(())
}
