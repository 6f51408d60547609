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

use guards_core::retry_policy::{
    GiveUpReason, Idempotency, RetryCause, RetryContext, RetryDecision, RetryGate, RetryPolicy,
    RetryPolicyConfig, UnkeyedSideEffects,
};
use guards_core::{ConfigErrorKind, Nanos, Outcome};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::backoff::{self, PyBackoff};
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
    /// Boxed: core's counters are cache-line aligned (64 bytes), more than Python's
    /// allocator guarantees for the object that holds a pyclass's fields (16 bytes).
    p: Box<RetryPolicy>,
    rng: guards_core::Rng,
}

#[pymethods]
impl PyRetryPolicy {
    /// `RetryPolicy(max_attempts=3, retry_timeouts=True, retry_connection_errors=True,
    /// retry_other_transient=True, retry_throttled=True, honor_retry_after=True,
    /// max_retry_after=20.0, min_attempt_time=0.001, unkeyed_side_effects="never",
    /// backoff=None, seed=None)`. `backoff` is a `Backoff` or a mapping of its settings
    /// (errors name them `backoff.base`, ...); `seed` seeds the jitter (random if `None`).
    #[new]
    #[pyo3(
        signature = (
            *,
            max_attempts = None,
            retry_timeouts = None,
            retry_connection_errors = None,
            retry_other_transient = None,
            retry_throttled = None,
            honor_retry_after = None,
            max_retry_after = None,
            min_attempt_time = None,
            unkeyed_side_effects = None,
            backoff = None,
            seed = None
        ),
        text_signature = "(*, max_attempts=3, retry_timeouts=True, retry_connection_errors=True, retry_other_transient=True, retry_throttled=True, honor_retry_after=True, max_retry_after=20.0, min_attempt_time=0.001, unkeyed_side_effects='never', backoff=None, seed=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        retry_timeouts: Option<&Bound<'_, PyAny>>,
        retry_connection_errors: Option<&Bound<'_, PyAny>>,
        retry_other_transient: Option<&Bound<'_, PyAny>>,
        retry_throttled: Option<&Bound<'_, PyAny>>,
        honor_retry_after: Option<&Bound<'_, PyAny>>,
        max_retry_after: Option<&Bound<'_, PyAny>>,
        min_attempt_time: Option<&Bound<'_, PyAny>>,
        unkeyed_side_effects: Option<&Bound<'_, PyAny>>,
        backoff: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut c = RetryPolicyConfig::default();
        if let Some(v) = given(max_attempts) {
            c.max_attempts = util::get_u32("max_attempts", v, Ctx::Config, "1..=100")?;
        }
        let flags = [
            ("retry_timeouts", retry_timeouts, &mut c.retry_timeouts),
            (
                "retry_connection_errors",
                retry_connection_errors,
                &mut c.retry_connection_errors,
            ),
            (
                "retry_other_transient",
                retry_other_transient,
                &mut c.retry_other_transient,
            ),
            ("retry_throttled", retry_throttled, &mut c.retry_throttled),
            (
                "honor_retry_after",
                honor_retry_after,
                &mut c.honor_retry_after,
            ),
        ];
        for (name, arg, slot) in flags {
            if let Some(v) = given(arg) {
                *slot = util::get_bool(name, v)?;
            }
        }
        if let Some(v) = given(max_retry_after) {
            c.max_retry_after = util::get_duration("max_retry_after", v, Ctx::Config)?;
        }
        if let Some(v) = given(min_attempt_time) {
            c.min_attempt_time = util::get_duration("min_attempt_time", v, Ctx::Config)?;
        }
        if let Some(v) = given(unkeyed_side_effects) {
            let name = util::get_str("unkeyed_side_effects", v)?;
            c.unkeyed_side_effects = UnkeyedSideEffects::from_name(&name).ok_or_else(|| {
                util::bad_value(
                    py,
                    Ctx::Config,
                    "unkeyed_side_effects",
                    ConfigErrorKind::OutOfRange,
                    "\"never\" or \"retry_throttled\"",
                )
            })?;
        }
        c.backoff = backoff::backoff_config_arg(backoff)?;
        let p = RetryPolicy::new(c).map_err(|e| errors::config_error(py, e))?;
        Ok(PyRetryPolicy {
            p: Box::new(p),
            rng: PyRng::from_seed_arg(seed)?,
        })
    }

    /// The configuration (durations in seconds; `backoff` as a dict).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.p.config();
        let d = PyDict::new(py);
        d.set_item("max_attempts", c.max_attempts)?;
        d.set_item("retry_timeouts", c.retry_timeouts)?;
        d.set_item("retry_connection_errors", c.retry_connection_errors)?;
        d.set_item("retry_other_transient", c.retry_other_transient)?;
        d.set_item("retry_throttled", c.retry_throttled)?;
        d.set_item("honor_retry_after", c.honor_retry_after)?;
        d.set_item("max_retry_after", util::secs(c.max_retry_after))?;
        d.set_item("min_attempt_time", util::secs(c.min_attempt_time))?;
        d.set_item("unkeyed_side_effects", c.unkeyed_side_effects.name())?;
        d.set_item("backoff", backoff::config_dict(py, &c.backoff)?)?;
        Ok(d)
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
        py: Python<'_>,
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
        let now = util::get_now(py, now)?;
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
