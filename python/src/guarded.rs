//! Guarded calls run natively: `CircuitBreaker.call`, `KeyedBreakers.call`, `Bulkhead.call`
//! and `GuardedFunction`, the function `guards.guarded(one_guard)` decorates with.
//!
//! A guarded call takes the guard, calls the function and hands the guard back with how
//! the call ended, as the call contract says: it returned (`success`), or the exception it
//! raised classified into an outcome by `guards.classify_exception` (or by the `classify`
//! callable of the Python layer's `failure=` / `ignore=` rules), reported through core's
//! `report`. A breaker measures the call's duration itself (a second clock read: a slow
//! success counts as slow); a bulkhead slot is given back whatever happened.
//!
//! `GuardedFunction` can also be given `deadline` (a callable returning the deadline the
//! call inherits: once it has passed, the call does not start and no guard is taken).
//! Refusals, and the breaker state changes a call causes, are emitted as events named after
//! the function.
//!
//! Nothing is allocated for the permit, the clock is read once before the call (for the
//! deadline and the breaker together) and once after it (breakers only), and no Python frame
//! runs between the caller and the function.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use guards::names::{BulkheadPermit, CircuitBreakerPermit as BreakerPermit};
use guards_core::{Nanos, Outcome};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};
use pyo3::{intern, PyTraverseError, PyVisit};

use crate::bulkhead::PyBulkhead;
use crate::circuit_breaker::{key_arg, key_operation, PyCircuitBreaker, PyKeyedBreakers};
use crate::clock;
use crate::deadline::PyDeadline;
use crate::errors;
use crate::events::Op;
use crate::guarded_coro::PyGuardedCoroutine;
use crate::outcome;
use crate::util::{self, given};

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

/// A guard owned by a guarded function, block or call.
#[derive(Debug)]
pub(crate) enum Guard {
    Breaker(Py<PyCircuitBreaker>),
    Keyed {
        set: Py<PyKeyedBreakers>,
        key: u64,
        /// The key as given: the name events carry.
        name: Py<PyAny>,
    },
    Bulkhead(Py<PyBulkhead>),
}

/// What a call holds while it runs.
#[derive(Debug)]
pub(crate) enum Held {
    Breaker(BreakerPermit),
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

impl Guard {
    /// The guard of `key` in `set`.
    pub(crate) fn keyed(
        set: &Bound<'_, PyKeyedBreakers>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        Ok(Guard::Keyed {
            set: set.clone().unbind(),
            key: key_arg(key)?,
            name: key_operation(key)?.unbind(),
        })
    }

    /// A `guard` argument: a `CircuitBreaker`, a `KeyedBreakers` (then `key` picks the
    /// breaker) or a `Bulkhead`.
    pub(crate) fn arg(guard: &Bound<'_, PyAny>, key: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        if let Ok(k) = guard.cast::<PyKeyedBreakers>() {
            let Some(key) = given(key) else {
                return Err(PyTypeError::new_err(
                    "a guards.KeyedBreakers needs `key` (the operation's name or number)",
                ));
            };
            Guard::keyed(k, key)
        } else if given(key).is_some() {
            Err(PyTypeError::new_err(
                "`key` is only for a guards.KeyedBreakers",
            ))
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

    pub(crate) fn clone_ref(&self, py: Python<'_>) -> Guard {
        match self {
            Guard::Breaker(b) => Guard::Breaker(b.clone_ref(py)),
            Guard::Keyed { set, key, name } => Guard::Keyed {
                set: set.clone_ref(py),
                key: *key,
                name: name.clone_ref(py),
            },
            Guard::Bulkhead(b) => Guard::Bulkhead(b.clone_ref(py)),
        }
    }

    /// The guard object.
    pub(crate) fn object(&self) -> &Py<PyAny> {
        match self {
            Guard::Breaker(b) => b.as_any(),
            Guard::Keyed { set, .. } => set.as_any(),
            Guard::Bulkhead(b) => b.as_any(),
        }
    }

    /// Whether outcomes matter to it (a bulkhead gives its slot back whatever happened).
    pub(crate) fn hears_outcomes(&self) -> bool {
        !matches!(self, Guard::Bulkhead(_))
    }

    /// Take the guard (or raise its refusal, emitted as an event named by `op`; a keyed
    /// breaker names its events by its key when `op` has no name).
    #[inline]
    pub(crate) fn take<'py>(
        &self,
        py: Python<'py>,
        now: &clock::Once,
        op: Op<'_, 'py>,
    ) -> PyResult<Held> {
        match self {
            Guard::Breaker(b) => PyCircuitBreaker::take(b.bind(py), now, op).map(Held::Breaker),
            Guard::Keyed { set, key, name } => {
                let op = keyed_op(op, name.bind(py));
                PyKeyedBreakers::take(set.bind(py), *key, now, op).map(Held::Breaker)
            }
            Guard::Bulkhead(b) => PyBulkhead::take(b.bind(py), op).map(Held::Slot),
        }
    }

    /// Give back what the call held, reporting `outcome` at the clock's `now` (read only
    /// for a breaker).
    #[inline]
    pub(crate) fn settle<'py>(
        &self,
        py: Python<'py>,
        held: Held,
        outcome: Outcome,
        op: Op<'_, 'py>,
    ) {
        match (self, held) {
            (Guard::Bulkhead(b), Held::Slot(p)) => {
                b.get().b.report(p, outcome);
            }
            (Guard::Breaker(b), Held::Breaker(p)) => {
                PyCircuitBreaker::settle(b.bind(py), p, outcome, clock::now, op);
            }
            (Guard::Keyed { set, key, name }, Held::Breaker(p)) => {
                let op = keyed_op(op, name.bind(py));
                PyKeyedBreakers::settle(set.bind(py), *key, p, outcome, clock::now, op);
            }
            // A permit always comes back to the guard that granted it.
            _ => {}
        }
    }
}

/// A keyed breaker's events are named by `op`, or by its key.
fn keyed_op<'a, 'py>(op: Op<'a, 'py>, key_name: &'a Bound<'py, PyAny>) -> Op<'a, 'py> {
    match op {
        Op::None => Op::Given(key_name),
        other => other,
    }
}

/// How the call that raised `e` ended: by `classify(exc)` (an outcome name) when given,
/// else by `guards.classify_exception`.
pub(crate) fn outcome_of(
    py: Python<'_>,
    e: &PyErr,
    classify: Option<&Bound<'_, PyAny>>,
) -> PyResult<Outcome> {
    let exc = e.value(py);
    let Some(classify) = classify else {
        return Ok(outcome::classify(exc.as_any())?.0);
    };
    let got = classify.call1((exc,))?;
    outcome::outcome_arg(&got)
}

/// The call raised `e`: give the guard back as `e` says (by `classify` when given) and
/// return the error to raise: `e`, or the error `classify` itself raised (after giving the
/// guard back as `ignored`), chained to `e` as raising in an `except` block does.
pub(crate) fn fail<'py>(
    py: Python<'py>,
    guard: &Guard,
    held: Held,
    e: PyErr,
    classify: Option<&Bound<'py, PyAny>>,
    op: Op<'_, 'py>,
) -> PyErr {
    if !guard.hears_outcomes() && classify.is_none() {
        guard.settle(py, held, Outcome::Ignored, op);
        return e;
    }
    match outcome_of(py, &e, classify) {
        Ok(o) => {
            guard.settle(py, held, o, op);
            e
        }
        Err(bug) => {
            guard.settle(py, held, Outcome::Ignored, op);
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
#[inline]
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
    now: &clock::Once,
) -> PyResult<()> {
    let d = deadline.call0()?;
    if d.is_none() {
        return Ok(());
    }
    let expired = match d.cast::<PyDeadline>() {
        Ok(d) => d.get().d.is_expired(now.get()),
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

/// `fn(*args, **kwargs)` under `guard` (`breaker.call` & co.): events named after `fn`.
pub(crate) fn run<'py>(
    guard: &Guard,
    f: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    if !f.is_callable() {
        return Err(util::type_error("fn", "a callable", f));
    }
    run_checked(guard, f, args, kwargs, None, None, Op::QualnameOf(f))
}

/// `run` for a function known to be callable.
#[inline]
fn run_checked<'py>(
    guard: &Guard,
    f: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
    classify: Option<&Bound<'py, PyAny>>,
    deadline: Option<&Bound<'py, PyAny>>,
    op: Op<'_, 'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = f.py();
    let now = clock::once();
    if let Some(deadline) = deadline {
        check_inherited(py, deadline, &now)?;
    }
    let held = guard.take(py, &now, op)?;
    match f.call(args, kwargs) {
        Ok(v) => {
            guard.settle(py, held, Outcome::Success, op);
            Ok(v)
        }
        Err(e) => Err(fail(py, guard, held, e, classify, op)),
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

/// `types.FunctionType`.
fn function_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static FUNCTION_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    FUNCTION_TYPE.import(py, "types", "FunctionType")
}

/// What a function has and a `GuardedFunction` reads from the function it guards (see
/// `__class__`).
const FUNCTION_ATTRIBUTES: [&str; 10] = [
    "__code__",
    "__defaults__",
    "__kwdefaults__",
    "__globals__",
    "__closure__",
    "__builtins__",
    "__annotations__",
    "__type_params__",
    "__name__",
    "__qualname__",
];

#[pymethods]
impl PyGuardedFunction {
    /// `GuardedFunction(guard, fn, /, *, key=None, classify=None, deadline=None,
    /// deadline_gated=False, is_async=False)`: `guard` a `CircuitBreaker`, `KeyedBreakers`
    /// (then `key` picks the breaker) or `Bulkhead`; `classify(exc)` returns the outcome
    /// name of an exception instead of `guards.classify_exception`; `deadline()` returns
    /// the `guards.Deadline` the call inherits, or `None` (`deadline_gated`: it reads the
    /// Python layer's deadline, so it is not called before a first deadline is published);
    /// `is_async`: `fn` returns an awaitable, which the guard covers until it completes.
    #[new]
    #[pyo3(signature = (
        guard, r#fn, /, *, key = None, classify = None, deadline = None, deadline_gated = false,
        is_async = false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        guard: &Bound<'_, PyAny>,
        r#fn: &Bound<'_, PyAny>,
        key: Option<&Bound<'_, PyAny>>,
        classify: Option<&Bound<'_, PyAny>>,
        deadline: Option<&Bound<'_, PyAny>>,
        deadline_gated: bool,
        is_async: bool,
    ) -> PyResult<Self> {
        let guard = Guard::arg(guard, key)?;
        if !r#fn.is_callable() {
            return Err(util::type_error("fn", "a callable", r#fn));
        }
        Ok(PyGuardedFunction {
            guard,
            func: r#fn.clone().unbind(),
            classify: optional_callable("classify", classify)?,
            deadline: optional_callable("deadline", deadline)?,
            deadline_gated,
            is_async,
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
            &me.guard,
            me.func.bind(py),
            args,
            kwargs,
            me.classify.as_ref().map(|c| c.bind(py)),
            deadline_source(py, &me.deadline, me.deadline_gated),
            Op::QualnameOf(slf.as_any()),
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

    /// `types.FunctionType` when the guarded callable is a Python function, else its own
    /// type: code that asks `inspect.isfunction()` (as Starlette's `Route` does, to call an
    /// endpoint as `endpoint(request)` rather than as an ASGI app) takes it for the function
    /// it guards, as it takes a `wrapt` proxy for what it wraps. `type()` and
    /// `isinstance(x, guards.GuardedFunction)` still tell it apart.
    #[getter]
    fn __class__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let function = function_type(py)?;
        if slf.get().func.bind(py).get_type().is(function) {
            Ok(function.clone().into_any())
        } else {
            Ok(slf.get_type().into_any())
        }
    }

    /// A function's attributes this object does not have itself (`__code__`,
    /// `__defaults__`, `__globals__`, ...): the guarded function's, so that code treating
    /// it as that function (see `__class__`; `inspect.iscoroutinefunction`,
    /// `inspect.signature`) finds them.
    fn __getattr__<'py>(
        slf: &Bound<'py, Self>,
        name: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = name.to_cow()?;
        if FUNCTION_ATTRIBUTES.contains(&&*n) {
            return slf.get().func.bind(slf.py()).getattr(name);
        }
        Err(pyo3::exceptions::PyAttributeError::new_err(format!(
            "'GuardedFunction' object has no attribute '{n}'"
        )))
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
        if let Guard::Keyed { name, .. } = &self.guard {
            visit.call(name)?;
        }
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
    crate::guarded_coro::note_gil(m.py())?;
    // Whether `await` steps a `GuardedCoroutine` through its native slots (the tests check it).
    m.setattr(
        "_native_await_slots",
        crate::guarded_coro::install_slots(m.py())?,
    )?;
    Ok(())
}
