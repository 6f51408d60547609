//! Guarded calls run natively: `CircuitBreaker.call`, `KeyedBreakers.call`, `Bulkhead.call`
//! and `GuardedFunction`, the function `guards.guarded(one_guard)` decorates with.
//!
//! A guarded call takes the guard, calls the function and reports how the call ended, by
//! the rules of the Python layer's `guards.guarded`:
//!
//! - it returned: a success (a breaker times it with a second clock read, since a slow
//!   success counts as slow); a bulkhead slot is given back whatever happened;
//! - it raised an `Exception`: a failure, except another guard's refusal (a `GuardError`
//!   other than `DeadlineExceeded` and an inner retry's give-up after attempts), which is
//!   ignored;
//! - it raised another `BaseException` (`CancelledError`, `KeyboardInterrupt`,
//!   `GeneratorExit`): ignored, except that a half-open probe abandoned so counts as failed.
//!
//! `GuardedFunction` can also be given `classify` (the Python layer's `failure=` /
//! `ignore=` rules: a callable from the exception to an outcome code) and `deadline` (a
//! callable returning the deadline the call inherits: once it has passed, the call does not
//! start and no guard is taken).
//!
//! Nothing is allocated for the permit, the clock is read once before the call (for the
//! deadline and the breaker together) and once after it (breakers only), and no Python frame
//! runs between the caller and the function.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use guards_core::bulkhead::BulkheadPermit;
use guards_core::circuit_breaker::CircuitBreakerPermit;
use guards_core::Nanos;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyInt, PyString, PyTuple, PyType};
use pyo3::{intern, PyTraverseError, PyVisit};

use crate::bulkhead::{self, PyBulkhead};
use crate::circuit_breaker::{self, key_arg, Outcome, PyCircuitBreaker, PyKeyedBreakers};
use crate::clock;
use crate::deadline::PyDeadline;
use crate::errors::{self, GuardError, RetriesExhausted};
use crate::guarded_coro::PyGuardedCoroutine;

/// `fn(*args, **kwargs)` awaited under `guard` (what `acall` returns).
pub(crate) fn acall<'py>(
    py: Python<'py>,
    guard: Guard,
    f: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<PyGuardedCoroutine> {
    let owner = Py::new(py, PyGuardedFunction::plain(guard, f)?)?;
    Ok(PyGuardedCoroutine::new(owner, args, kwargs))
}
use crate::util::{self, given};

/// How a call ended, as the guards are told: the codes of the Python layer
/// (`guards._guarded.SUCCESS` ... `CANCELLED`), which a `classify` callable returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Returned.
    Success = 0,
    /// The dependency failed.
    Failure = 1,
    /// Timed out or overloaded: a failure that is also an overload signal.
    Dropped = 2,
    /// Says nothing about the dependency.
    Ignore = 3,
    /// Abandoned (a `BaseException` that is not an `Exception`).
    Cancelled = 4,
}

impl Verdict {
    fn from_code(code: i64) -> Option<Self> {
        Some(match code {
            0 => Verdict::Success,
            1 => Verdict::Failure,
            2 => Verdict::Dropped,
            3 => Verdict::Ignore,
            4 => Verdict::Cancelled,
            _ => return None,
        })
    }
}

/// The guard a call runs under, borrowed for the call.
#[derive(Clone, Copy)]
pub(crate) enum GuardRef<'a> {
    Breaker(&'a PyCircuitBreaker),
    Keyed(&'a PyKeyedBreakers, u64),
    Bulkhead(&'a PyBulkhead),
}

/// What a call holds while it runs.
pub(crate) enum Held {
    Breaker(CircuitBreakerPermit),
    Slot(BulkheadPermit),
}

impl Held {
    /// For a half-open probe: how long it may take.
    pub(crate) fn probe_timeout(&self) -> Option<Nanos> {
        match self {
            Held::Breaker(p) if p.is_probe() => p.probe_timeout(),
            _ => None,
        }
    }
}

/// The clock, read at most once before the call.
fn now_once(py: Python<'_>, now: &mut Option<Nanos>) -> PyResult<Nanos> {
    match *now {
        Some(t) => Ok(t),
        None => {
            let t = clock::now(py)?;
            *now = Some(t);
            Ok(t)
        }
    }
}

impl GuardRef<'_> {
    /// Take the guard (or raise its refusal).
    pub(crate) fn acquire(self, py: Python<'_>, now: &mut Option<Nanos>) -> PyResult<Held> {
        match self {
            GuardRef::Breaker(b) => {
                let t = now_once(py, now)?;
                match b.try_acquire_at(t) {
                    Ok(p) => Ok(Held::Breaker(p)),
                    Err(r) => Err(circuit_breaker::rejected_error(py, r, t)),
                }
            }
            GuardRef::Keyed(k, key) => {
                let t = now_once(py, now)?;
                match k.try_acquire_at(key, t)? {
                    Ok(p) => Ok(Held::Breaker(p)),
                    Err(r) => Err(circuit_breaker::rejected_error(py, r, t)),
                }
            }
            GuardRef::Bulkhead(b) => match b.core().try_acquire() {
                Ok(p) => Ok(Held::Slot(p)),
                Err(full) => Err(bulkhead::full_error(py, full)),
            },
        }
    }

    fn report(self, py: Python<'_>, p: CircuitBreakerPermit, outcome: Outcome) {
        match self {
            GuardRef::Breaker(b) => {
                b.report(py, p, outcome);
            }
            GuardRef::Keyed(k, key) => {
                k.report(key, p, outcome);
            }
            // A breaker permit comes from a breaker.
            GuardRef::Bulkhead(_) => {}
        }
    }

    /// Give back what the call held, telling the guard how it ended (as the Python layer's
    /// adapters do). The permit is always given back, even when the clock cannot be read.
    pub(crate) fn finish(self, py: Python<'_>, held: Held, verdict: Verdict) -> PyResult<()> {
        match held {
            Held::Slot(p) => {
                if let GuardRef::Bulkhead(b) = self {
                    b.core().release(p);
                }
                Ok(())
            }
            Held::Breaker(p) => {
                let failed = match verdict {
                    Verdict::Success => false,
                    Verdict::Failure | Verdict::Dropped => true,
                    // An abandoned probe must not hold the half-open state.
                    Verdict::Cancelled if p.is_probe() => true,
                    Verdict::Cancelled | Verdict::Ignore => {
                        self.report(py, p, Outcome::Ignore);
                        return Ok(());
                    }
                };
                match clock::now(py) {
                    Ok(t) if failed => self.report(py, p, Outcome::Failure(t)),
                    Ok(t) => self.report(py, p, Outcome::Success(t)),
                    Err(e) => {
                        self.report(py, p, Outcome::Ignore);
                        return Err(e);
                    }
                }
                Ok(())
            }
        }
    }
}

/// Whether a guard error means the guarded work itself failed (the same rule as
/// `_guarded._dependency_failed`): a deadline passed, or an inner retry gave up after making
/// attempts (`RetriesExhausted`, or a `BudgetExhausted` with `attempts > 0`). Any other guard
/// error is a local refusal.
fn dependency_failed(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    if v.is_instance_of::<RetriesExhausted>() || v.is_instance(errors::deadline_exceeded(py)?)? {
        return Ok(true);
    }
    Ok(match v.getattr(pyo3::intern!(py, "attempts")) {
        Ok(a) => {
            !a.is_instance_of::<pyo3::types::PyBool>() && a.extract::<u64>().is_ok_and(|n| n > 0)
        }
        Err(_) => false,
    })
}

/// `guards.guarded`'s rule without `failure=` / `ignore=`. Breakers and bulkheads treat a
/// dropped call (a timeout, an HTTP 503/429) as a failure, so it is not told apart here.
fn default_verdict(py: Python<'_>, e: &PyErr) -> PyResult<Verdict> {
    let v = e.value(py);
    if !v.is_instance_of::<PyException>() {
        return Ok(Verdict::Cancelled);
    }
    if v.is_instance_of::<GuardError>() && !dependency_failed(py, v)? {
        return Ok(Verdict::Ignore); // a nested guard refused: not the dependency failing
    }
    Ok(Verdict::Failure)
}

/// How the call that raised `e` ended: by `classify(exc)` when given, else by default.
pub(crate) fn verdict_of(
    py: Python<'_>,
    e: &PyErr,
    classify: Option<&Bound<'_, PyAny>>,
) -> PyResult<Verdict> {
    let Some(classify) = classify else {
        return default_verdict(py, e);
    };
    let code = classify.call1((e.value(py),))?;
    let code = code
        .cast::<PyInt>()
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "classify must return an outcome code (int 0..4), not {}",
                type_name(&code)
            ))
        })?
        .extract::<i64>()
        .ok()
        .and_then(Verdict::from_code);
    code.ok_or_else(|| PyValueError::new_err("classify must return an outcome code (int 0..4)"))
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .qualname()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// Whether a deadline has been published in the process (by the Python layer, whose every
/// write of its deadline `ContextVar` goes through `guards._deadline.publish`). Until then a
/// gated deadline callable (the read of that `ContextVar`) is not called: nothing can be
/// inherited yet.
static DEADLINE_PUBLISHED: AtomicBool = AtomicBool::new(false);

/// `_note_deadline_published()`: a deadline is about to be published (see
/// `DEADLINE_PUBLISHED`); from now on gated deadline callables are read.
#[pyfunction]
pub(crate) fn _note_deadline_published() {
    DEADLINE_PUBLISHED.store(true, Ordering::Release);
}

/// `_deadline_published()`: whether `_note_deadline_published()` has been called.
#[pyfunction]
pub(crate) fn _deadline_published() -> bool {
    DEADLINE_PUBLISHED.load(Ordering::Acquire)
}

/// The deadline callable to consult: none when it is gated and nothing was published yet.
pub(crate) fn deadline_source<'a, 'py>(
    py: Python<'py>,
    deadline: &'a Option<Py<PyAny>>,
    gated: bool,
) -> Option<&'a Bound<'py, PyAny>> {
    match deadline {
        Some(d) if !gated || DEADLINE_PUBLISHED.load(Ordering::Acquire) => Some(d.bind(py)),
        _ => None,
    }
}

/// Refuse to start once the inherited deadline (what `deadline()` returns) has passed.
pub(crate) fn check_inherited(
    py: Python<'_>,
    deadline: &Bound<'_, PyAny>,
    now: &mut Option<Nanos>,
) -> PyResult<()> {
    let d = deadline.call0()?;
    if d.is_none() {
        return Ok(());
    }
    let expired = match d.cast::<PyDeadline>() {
        Ok(d) => d.get().d.is_expired(now_once(py, now)?),
        Err(_) => d.call_method0(intern!(py, "is_expired"))?.is_truthy()?,
    };
    if expired {
        return Err(errors::refusal(
            errors::deadline_exceeded(py)?,
            "the deadline had passed before the call started".to_owned(),
            Some("deadline_exceeded"),
            None,
        ));
    }
    Ok(())
}

/// `fn(*args, **kwargs)` under `guard` (see the module docs).
pub(crate) fn run<'py>(
    py: Python<'py>,
    guard: GuardRef<'_>,
    f: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
    classify: Option<&Bound<'py, PyAny>>,
    deadline: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    if !f.is_callable() {
        return Err(util::type_error("fn", "a callable", f));
    }
    run_checked(py, guard, f, args, kwargs, classify, deadline)
}

/// `run` for a function known to be callable.
#[inline]
fn run_checked<'py>(
    py: Python<'py>,
    guard: GuardRef<'_>,
    f: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
    classify: Option<&Bound<'py, PyAny>>,
    deadline: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut now = None;
    if let Some(deadline) = deadline {
        check_inherited(py, deadline, &mut now)?;
    }
    let held = guard.acquire(py, &mut now)?;
    match f.call(args, kwargs) {
        Ok(v) => {
            guard.finish(py, held, Verdict::Success)?;
            Ok(v)
        }
        Err(e) => Err(fail(py, guard, held, e, classify)),
    }
}

/// The call raised `e`: give the guard back as `e` says (by `classify` when given) and
/// return the error to raise: `e`, or the error `classify` itself raised (after giving the
/// guard back as ignored), chained to `e` as raising in an `except` block does.
pub(crate) fn fail(
    py: Python<'_>,
    guard: GuardRef<'_>,
    held: Held,
    e: PyErr,
    classify: Option<&Bound<'_, PyAny>>,
) -> PyErr {
    match verdict_of(py, &e, classify) {
        Ok(verdict) => match guard.finish(py, held, verdict) {
            Ok(()) => e,
            Err(clock) => clock,
        },
        Err(bug) => {
            if let Err(clock) = guard.finish(py, held, Verdict::Ignore) {
                return clock;
            }
            let bug_value = bug.value(py);
            let unchained = bug_value
                .getattr(intern!(py, "__context__"))
                .is_ok_and(|c| c.is_none());
            if unchained {
                if let Err(e2) = bug_value.setattr(intern!(py, "__context__"), e.value(py)) {
                    return e2;
                }
            }
            bug
        }
    }
}

/// A guard owned by a `GuardedFunction`.
pub(crate) enum Guard {
    Breaker(Py<PyCircuitBreaker>),
    Keyed(Py<PyKeyedBreakers>, u64),
    Bulkhead(Py<PyBulkhead>),
}

impl Guard {
    /// A `guard` argument: a `CircuitBreaker`, a `KeyedBreakers` (then `key` picks the
    /// breaker) or a `Bulkhead`.
    pub(crate) fn arg(guard: &Bound<'_, PyAny>, key: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        if let Ok(k) = guard.cast::<PyKeyedBreakers>() {
            let Some(key) = given(key) else {
                return Err(PyTypeError::new_err(
                    "a guards.KeyedBreakers needs `key` (the operation's name or number)",
                ));
            };
            Ok(Guard::Keyed(k.clone().unbind(), key_arg(key)?))
        } else if let Ok(b) = guard.cast::<PyCircuitBreaker>() {
            Ok(Guard::Breaker(b.clone().unbind()))
        } else if let Ok(b) = guard.cast::<PyBulkhead>() {
            Ok(Guard::Bulkhead(b.clone().unbind()))
        } else {
            Err(util::type_error(
                "guard",
                "a guards.CircuitBreaker, KeyedBreakers or Bulkhead",
                guard,
            ))
        }
    }

    pub(crate) fn as_ref(&self) -> GuardRef<'_> {
        match self {
            Guard::Breaker(b) => GuardRef::Breaker(b.get()),
            Guard::Keyed(k, key) => GuardRef::Keyed(k.get(), *key),
            Guard::Bulkhead(b) => GuardRef::Bulkhead(b.get()),
        }
    }

    pub(crate) fn clone_ref(&self, py: Python<'_>) -> Guard {
        match self {
            Guard::Breaker(b) => Guard::Breaker(b.clone_ref(py)),
            Guard::Keyed(k, key) => Guard::Keyed(k.clone_ref(py), *key),
            Guard::Bulkhead(b) => Guard::Bulkhead(b.clone_ref(py)),
        }
    }

    pub(crate) fn object(&self) -> &Py<PyAny> {
        match self {
            Guard::Breaker(b) => b.as_any(),
            Guard::Keyed(k, _) => k.as_any(),
            Guard::Bulkhead(b) => b.as_any(),
        }
    }
}

/// A function guarded by one circuit breaker, keyed breaker or bulkhead: calling it calls
/// `fn` as `CircuitBreaker.call` / `Bulkhead.call` do (with `is_async`: returns a
/// `GuardedCoroutine` awaiting `fn(...)` as `acall` does), after checking the inherited
/// deadline when `deadline` is given. What `guards.guarded(guard)` decorates with; it
/// behaves as a function (`__wrapped__`, `__name__`, ... once `functools.update_wrapper`
/// has copied them, and binds as a method).
#[pyclass(module = "guards", name = "GuardedFunction", frozen, dict, weakref)]
pub struct PyGuardedFunction {
    pub(crate) guard: Guard,
    pub(crate) func: Py<PyAny>,
    pub(crate) classify: Option<Py<PyAny>>,
    pub(crate) deadline: Option<Py<PyAny>>,
    /// `deadline` reads the Python layer's deadline `ContextVar` (see `DEADLINE_PUBLISHED`).
    pub(crate) deadline_gated: bool,
    is_async: bool,
}

impl PyGuardedFunction {
    /// `fn` under `guard` with the default rules and no deadline (for `acall`).
    pub(crate) fn plain(guard: Guard, func: &Bound<'_, PyAny>) -> PyResult<Self> {
        if !func.is_callable() {
            return Err(util::type_error("fn", "a callable", func));
        }
        Ok(PyGuardedFunction {
            guard,
            func: func.clone().unbind(),
            classify: None,
            deadline: None,
            deadline_gated: false,
            is_async: true,
        })
    }
}

impl fmt::Debug for PyGuardedFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardedFunction").finish_non_exhaustive()
    }
}

/// A `classify=` / `deadline=` argument: a callable, or `None`.
pub(crate) fn optional_callable(
    field: &str,
    v: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Py<PyAny>>> {
    match given(v) {
        None => Ok(None),
        Some(v) if v.is_callable() => Ok(Some(v.clone().unbind())),
        Some(v) => Err(util::type_error(field, "a callable or None", v)),
    }
}

/// `types.MethodType`, to bind a guarded function to an instance.
fn method_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static METHOD_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    METHOD_TYPE.import(py, "types", "MethodType")
}

#[pymethods]
impl PyGuardedFunction {
    /// `GuardedFunction(guard, fn, /, *, key=None, classify=None, deadline=None,
    /// deadline_gated=False, is_async=False)`: `guard` a `CircuitBreaker`, `KeyedBreakers`
    /// (then `key` picks the breaker) or `Bulkhead`; `classify(exc)` returns an outcome code
    /// (1 failure, 2 dropped, 3 ignored, 4 cancelled; 0 success) instead of the default
    /// rules; `deadline()` returns the `guards.Deadline` the call inherits, or `None`
    /// (`deadline_gated`: it reads the Python layer's deadline, so it is not called before
    /// a first deadline is published); `is_async`: `fn` returns an awaitable, which the
    /// guard covers until it completes.
    #[new]
    #[pyo3(signature = (
        guard, r#fn, /, *, key = None, classify = None, deadline = None, deadline_gated = None,
        is_async = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        guard: &Bound<'_, PyAny>,
        r#fn: &Bound<'_, PyAny>,
        key: Option<&Bound<'_, PyAny>>,
        classify: Option<&Bound<'_, PyAny>>,
        deadline: Option<&Bound<'_, PyAny>>,
        deadline_gated: Option<&Bound<'_, PyAny>>,
        is_async: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let key = given(key);
        if key.is_some() && !guard.is_instance_of::<PyKeyedBreakers>() {
            return Err(PyTypeError::new_err(
                "`key` is only for a guards.KeyedBreakers",
            ));
        }
        let guard = Guard::arg(guard, key)?;
        if !r#fn.is_callable() {
            return Err(util::type_error("fn", "a callable", r#fn));
        }
        Ok(PyGuardedFunction {
            guard,
            func: r#fn.clone().unbind(),
            classify: optional_callable("classify", classify)?,
            deadline: optional_callable("deadline", deadline)?,
            deadline_gated: match given(deadline_gated) {
                Some(v) => util::get_bool("deadline_gated", v)?,
                None => false,
            },
            is_async: match given(is_async) {
                Some(v) => util::get_bool("is_async", v)?,
                None => false,
            },
        })
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        slf: &Bound<'py, Self>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let me = slf.get();
        if me.is_async {
            let coro = PyGuardedCoroutine::new(slf.clone().unbind(), args, kwargs);
            return Ok(Bound::new(py, coro)?.into_any());
        }
        run_checked(
            py,
            me.guard.as_ref(),
            me.func.bind(py),
            args,
            kwargs,
            me.classify.as_ref().map(|c| c.bind(py)),
            deadline_source(py, &me.deadline, me.deadline_gated),
        )
    }

    /// Whether calling returns an awaitable (`fn` is a coroutine function).
    #[getter]
    fn is_async(&self) -> bool {
        self.is_async
    }

    /// Bound to an instance, as a function is (a method of a class).
    fn __get__<'py>(
        slf: &Bound<'py, Self>,
        obj: Option<&Bound<'py, PyAny>>,
        _owner: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match given(obj) {
            None => Ok(slf.clone().into_any()),
            Some(obj) => method_type(slf.py())?.call1((slf, obj)),
        }
    }

    /// The guard: a `CircuitBreaker`, `KeyedBreakers` or `Bulkhead`.
    #[getter]
    fn guard(&self, py: Python<'_>) -> Py<PyAny> {
        self.guard.object().clone_ref(py)
    }

    /// Pickled by reference, like a function: its module and qualified name.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.getattr(intern!(slf.py(), "__qualname__"))
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        Ok(format!(
            "<guarded function {}>",
            qualname(slf.as_any(), slf.get())?
        ))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(self.guard.object())?;
        visit.call(&self.func)?;
        if let Some(c) = &self.classify {
            visit.call(c)?;
        }
        if let Some(d) = &self.deadline {
            visit.call(d)?;
        }
        Ok(())
    }
}

/// The name to show for a guarded function: its `__qualname__` (copied from `fn` by
/// `functools.update_wrapper`), else `fn`'s, else `fn`'s repr.
pub(crate) fn qualname(obj: &Bound<'_, PyAny>, f: &PyGuardedFunction) -> PyResult<String> {
    let py = obj.py();
    let name = intern!(py, "__qualname__");
    for holder in [obj, f.func.bind(py)] {
        if let Ok(n) = holder.getattr(name) {
            if n.is_instance_of::<PyString>() {
                return Ok(n.to_string());
            }
        }
    }
    Ok(f.func.bind(py).repr()?.to_string())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Private: set as attributes, not added to `__all__`.
    m.setattr(
        "_note_deadline_published",
        wrap_pyfunction!(_note_deadline_published, m)?,
    )?;
    m.setattr(
        "_deadline_published",
        wrap_pyfunction!(_deadline_published, m)?,
    )?;
    m.add_class::<PyGuardedFunction>()?;
    m.add_class::<PyGuardedCoroutine>()?;
    Ok(())
}
