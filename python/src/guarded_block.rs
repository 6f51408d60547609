//! `with guards.guarded(guard):` run natively for one breaker, keyed breaker or bulkhead.
//!
//! `GuardedBase` is the base class of the Python layer's `Guarded`. Its `__enter__` and
//! `__exit__` are native: configured for one breaker or bulkhead without a timeout of its
//! own (`_configure_blocks`), entering checks the inherited deadline, takes the guard and
//! pushes a `GuardedBlockCall` on the context's stack of open blocks (a `ContextVar`, so one
//! guarded object serves many threads and tasks); exiting pops it and tells the guard how
//! the block ended: by the exception leaving it (`guards.guarded`'s rules, or `classify`),
//! else by the mark set with `call.failure()` / `call.dropped()` / `call.ignore()`.
//! Otherwise they call the Python layer's `_enter_slow` / `_exit_slow`.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use guards_core::Nanos;
use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use pyo3::{intern, PyTraverseError, PyVisit};

use crate::guarded::{self, Guard, Held, Verdict};
use crate::permit::Once;
use crate::util::{self, given};

/// How blocks are run natively.
struct Blocks {
    guard: Guard,
    classify: Option<Py<PyAny>>,
    deadline: Option<Py<PyAny>>,
    deadline_gated: bool,
    /// The stack of open blocks: `ContextVar.get` and `ContextVar.set`.
    entries_get: Py<PyAny>,
    entries_set: Py<PyAny>,
}

/// The base of `guards.Guarded`: native `with` blocks (see the module docs).
#[pyclass(module = "guards", name = "GuardedBase", subclass, frozen)]
pub struct PyGuardedBase {
    blocks: OnceLock<Blocks>,
}

impl std::fmt::Debug for PyGuardedBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedBase").finish_non_exhaustive()
    }
}

/// `f(arg)` without building an argument tuple.
fn call_one<'py>(f: &Bound<'py, PyAny>, arg: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let end: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: `f` and `arg` are valid objects kept alive for the call; the argument list
    // ends with NULL as PyObject_CallFunctionObjArgs requires; the result is a new
    // reference or NULL with an error set.
    unsafe {
        Bound::from_owned_ptr_or_err(
            f.py(),
            ffi::PyObject_CallFunctionObjArgs(f.as_ptr(), arg.as_ptr(), end),
        )
    }
}

fn out_of_order() -> PyErr {
    PyRuntimeError::new_err("guarded blocks must be exited in the reverse order of entry")
}

#[pymethods]
impl PyGuardedBase {
    /// Accepts (and leaves to the subclass) any arguments.
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        PyGuardedBase {
            blocks: OnceLock::new(),
        }
    }

    /// Run `with` blocks natively under `guard` (a `CircuitBreaker`, `KeyedBreakers` with
    /// `key`, or `Bulkhead`), with `classify(exc)` (an outcome code) instead of the default
    /// rules when given, `deadline()` returning the inherited deadline, and `entries` the
    /// `ContextVar` holding the innermost open block. Once per object.
    #[pyo3(signature = (
        guard, *, key = None, classify = None, deadline = None, deadline_gated = false, entries
    ))]
    fn _configure_blocks(
        &self,
        guard: &Bound<'_, PyAny>,
        key: Option<&Bound<'_, PyAny>>,
        classify: Option<&Bound<'_, PyAny>>,
        deadline: Option<&Bound<'_, PyAny>>,
        deadline_gated: bool,
        entries: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let guard = Guard::arg(guard, key)?;
        let py = entries.py();
        let blocks = Blocks {
            guard,
            classify: guarded::optional_callable("classify", classify)?,
            deadline: guarded::optional_callable("deadline", deadline)?,
            deadline_gated,
            entries_get: entries.getattr(intern!(py, "get"))?.unbind(),
            entries_set: entries.getattr(intern!(py, "set"))?.unbind(),
        };
        self.blocks
            .set(blocks)
            .map_err(|_| PyRuntimeError::new_err("blocks are already configured"))
    }

    /// Enter a guarded block: the `GuardedCall` to mark the outcome with.
    fn __enter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let Some(blocks) = slf.get().blocks.get() else {
            return slf.call_method0(intern!(py, "_enter_slow"));
        };
        let parent = blocks.entries_get.bind(py).call0()?;
        let mut now = None;
        if let Some(d) = guarded::deadline_source(py, &blocks.deadline, blocks.deadline_gated) {
            guarded::check_inherited(py, d, &mut now)?;
        }
        let held = blocks.guard.as_ref().acquire(py, &mut now)?;
        let call = PyBlockCall {
            owner: slf.clone().into_any().unbind(),
            parent: parent.unbind(),
            guard: blocks.guard.clone_ref(py),
            probe_timeout: held.probe_timeout(),
            held: Once::new(held),
            mark: AtomicU8::new(Verdict::Success as u8),
        };
        // From here an error drops `call`, which gives the guard back.
        let call = Bound::new(py, call)?;
        call_one(blocks.entries_set.bind(py), call.as_any())?;
        Ok(call.into_any())
    }

    /// Leave the innermost block, telling the guard how it ended.
    #[pyo3(signature = (et = None, e = None, tb = None))]
    fn __exit__(
        slf: &Bound<'_, Self>,
        et: Option<&Bound<'_, PyAny>>,
        e: Option<&Bound<'_, PyAny>>,
        tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let py = slf.py();
        let Some(blocks) = slf.get().blocks.get() else {
            slf.call_method1(intern!(py, "_exit_slow"), (et, e, tb))?;
            return Ok(());
        };
        let top = blocks.entries_get.bind(py).call0()?;
        let Ok(call) = top.cast::<PyBlockCall>() else {
            return Err(out_of_order());
        };
        let call = call.get();
        if !call.owner.bind(py).is(slf) {
            return Err(out_of_order());
        }
        call_one(blocks.entries_set.bind(py), call.parent.bind(py))?;
        let Some(held) = call.take() else {
            return Ok(()); // already settled (cannot happen: a call is exited once)
        };
        let guard = blocks.guard.as_ref();
        match given(e) {
            None => guard.finish(py, held, call.mark()),
            Some(e) => {
                let classify = blocks.classify.as_ref().map(|c| c.bind(py));
                let err = PyErr::from_value(e.clone());
                let raised = guarded::fail(py, guard, held, err, classify);
                // `e` itself keeps propagating (the `with` statement re-raises it); only
                // a failure of `classify` replaces it.
                if raised.value(py).is(e) {
                    Ok(())
                } else {
                    Err(raised)
                }
            }
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(b) = self.blocks.get() {
            visit.call(b.guard.object())?;
            if let Some(c) = &b.classify {
                visit.call(c)?;
            }
            if let Some(d) = &b.deadline {
                visit.call(d)?;
            }
            visit.call(&b.entries_get)?;
            visit.call(&b.entries_set)?;
        }
        Ok(())
    }
}

/// An open native guarded block: what `with guards.guarded(guard) as call` gives. Mark the
/// outcome when no exception tells it: `call.failure()` (e.g. a 5xx response),
/// `call.dropped()` (an overload signal), `call.ignore()`; the last mark wins. An exception
/// leaving the block still decides first.
#[pyclass(module = "guards", name = "GuardedBlockCall", frozen)]
pub struct PyBlockCall {
    owner: Py<PyAny>,
    parent: Py<PyAny>,
    guard: Guard,
    held: Once<Held>,
    mark: AtomicU8,
    probe_timeout: Option<Nanos>,
}

impl std::fmt::Debug for PyBlockCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedBlockCall").finish_non_exhaustive()
    }
}

impl PyBlockCall {
    fn take(&self) -> Option<Held> {
        self.held.take()
    }

    fn mark(&self) -> Verdict {
        match self.mark.load(Ordering::Relaxed) {
            1 => Verdict::Failure,
            2 => Verdict::Dropped,
            3 => Verdict::Ignore,
            _ => Verdict::Success,
        }
    }

    fn set_mark(&self, v: Verdict) {
        self.mark.store(v as u8, Ordering::Relaxed);
    }
}

impl Drop for PyBlockCall {
    fn drop(&mut self) {
        // Never exited (its context was lost): give the guard back, judging nothing.
        if let Some(held) = self.held.take_mut() {
            Python::attach(|py| {
                if let Err(e) = self.guard.as_ref().finish(py, held, Verdict::Ignore) {
                    e.write_unraisable(py, None);
                }
            });
        }
    }
}

#[pymethods]
impl PyBlockCall {
    /// Report a failure (unless an exception decides).
    fn failure(&self) {
        self.set_mark(Verdict::Failure);
    }

    /// Report an overload signal (a timeout, a 503).
    fn dropped(&self) {
        self.set_mark(Verdict::Dropped);
    }

    /// Report nothing about the dependency.
    fn ignore(&self) {
        self.set_mark(Verdict::Ignore);
    }

    /// Report a success (the default).
    fn success(&self) {
        self.set_mark(Verdict::Success);
    }

    /// If a breaker let this block through as a half-open probe: the probe's timeout in
    /// seconds (else `None`).
    #[getter]
    fn probe_timeout(&self) -> Option<f64> {
        self.probe_timeout.map(util::secs)
    }

    /// The guarded object the block belongs to.
    #[getter]
    fn _owner(&self, py: Python<'_>) -> Py<PyAny> {
        self.owner.clone_ref(py)
    }

    /// The block this one is nested in (`None` at the outermost).
    #[getter]
    fn _parent(&self, py: Python<'_>) -> Py<PyAny> {
        self.parent.clone_ref(py)
    }

    /// The outcome marked so far (the Python layer's code).
    #[getter]
    fn _mark(&self) -> u8 {
        self.mark() as u8
    }

    /// A native block has no deadline scope of its own.
    #[getter]
    fn _scope(&self, py: Python<'_>) -> Py<PyAny> {
        py.None()
    }

    fn __repr__(&self) -> String {
        let state = if self.held.is_taken() {
            "closed"
        } else {
            "open"
        };
        format!("<guarded block call ({state})>")
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.owner)?;
        visit.call(&self.parent)?;
        visit.call(self.guard.object())?;
        Ok(())
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGuardedBase>()?;
    m.add_class::<PyBlockCall>()?;
    Ok(())
}
