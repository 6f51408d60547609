//! `with guards.guarded(guard):` run natively for one breaker, keyed breaker or bulkhead.
//!
//! `GuardedBase` is the base class of the Python layer's `Guarded`. Configured for one
//! breaker or bulkhead without a timeout of its own (`_configure_blocks`), its `__enter__`
//! and `__exit__` are native: entering checks the inherited deadline, takes the guard and
//! pushes a `GuardedBlockCall` on the context's stack of open blocks; exiting closes this
//! object's innermost open block and tells the guard how the block ended:
//! the exception leaving it classified (`guards.classify_exception`, or the `classify` of
//! the `failure=` / `ignore=` rules), else the outcome marked with `call.failure()` & co.
//! Otherwise they call the Python layer's `_enter_slow` / `_exit_slow`.
//!
//! The stack is a tuple in a `ContextVar` (per thread and per asyncio task; a copied
//! context keeps its own view). Entering sets a new tuple: the open entries of the current
//! one and the new block. Leaving finds this object's innermost open block in the tuple
//! (the last entry, unless blocks are left out of order, as a `with` in a generator closed
//! after a block entered later leaves them) and closes it, without setting the variable
//! again: a closed entry stays in the tuple until the next block entered in that context
//! leaves it out. So a block costs one `ContextVar.set`, no guard leaks whatever the order
//! of exits, and a context that copied the tuple sees the block closed too.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use guards::permit::TakeOnce;
use guards_core::{Nanos, Outcome};
use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{IntoPyDict, PyDict, PyTuple};
use pyo3::{intern, PyTraverseError, PyVisit};

use crate::events::Op;
use crate::guarded::{self, Guard, Held};
use crate::outcome;
use crate::util::{self, given};

/// How blocks are run natively.
struct Blocks {
    guard: Guard,
    classify: Option<Py<PyAny>>,
    deadline: Option<Py<PyAny>>,
    deadline_gated: bool,
    /// The name events carry (the decorated function's, once known), or `None`.
    operation: OnceLock<Py<PyAny>>,
}

/// The context's stack of native blocks: `ContextVar.get` and `ContextVar.set` of one
/// `ContextVar` holding a tuple of `GuardedBlockCall` (outermost first; closed ones are
/// skipped and left out by the next `set`).
struct Stack {
    get: Py<PyAny>,
    set: Py<PyAny>,
}

impl Stack {
    /// The current tuple.
    fn current<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        // SAFETY: `get` is a valid callable kept alive by `self`; PyObject_CallObject with
        // NULL arguments calls it without any, returning a new reference or NULL with an
        // error set.
        let got = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyObject_CallObject(self.get.as_ptr(), std::ptr::null_mut()),
            )?
        };
        Ok(got.cast_into::<PyTuple>()?)
    }

    /// Make `stack` the current tuple.
    fn replace(&self, stack: &Bound<'_, PyTuple>) -> PyResult<()> {
        let end: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: `set` and `stack` are valid objects kept alive for the call; the argument
        // list ends with NULL as PyObject_CallFunctionObjArgs requires; the result (the
        // ContextVar's token) is a new reference or NULL with an error set.
        unsafe {
            Bound::from_owned_ptr_or_err(
                stack.py(),
                ffi::PyObject_CallFunctionObjArgs(self.set.as_ptr(), stack.as_ptr(), end),
            )
            .map(drop)
        }
    }
}

fn stack(py: Python<'_>) -> PyResult<&Stack> {
    static STACK: PyOnceLock<Stack> = PyOnceLock::new();
    STACK.get_or_try_init(py, || {
        let var = py.import("contextvars")?.getattr("ContextVar")?.call(
            ("guards_native_blocks",),
            Some(&[("default", PyTuple::empty(py))].into_py_dict(py)?),
        )?;
        Ok(Stack {
            get: var.getattr("get")?.unbind(),
            set: var.getattr("set")?.unbind(),
        })
    })
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

/// Whether a stack entry is a block still open.
fn is_open(entry: &Bound<'_, PyAny>) -> bool {
    entry
        .cast::<PyBlockCall>()
        .is_ok_and(|c| !c.get().held.is_taken())
}

fn no_open_block() -> PyErr {
    PyRuntimeError::new_err(
        "this guarded object has no open block in this context (thread or task)",
    )
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
    /// `key`, or `Bulkhead`), with `classify(exc)` (an outcome name) instead of
    /// `guards.classify_exception` when given, and `deadline()` returning the inherited
    /// deadline. Once per object.
    #[pyo3(signature = (guard, *, key = None, classify = None, deadline = None, deadline_gated = false))]
    fn _configure_blocks(
        &self,
        guard: &Bound<'_, PyAny>,
        key: Option<&Bound<'_, PyAny>>,
        classify: Option<&Bound<'_, PyAny>>,
        deadline: Option<&Bound<'_, PyAny>>,
        deadline_gated: bool,
    ) -> PyResult<()> {
        let blocks = Blocks {
            guard: Guard::arg(guard, key)?,
            classify: guarded::optional_callable("classify", classify)?,
            deadline: guarded::optional_callable("deadline", deadline)?,
            deadline_gated,
            operation: OnceLock::new(),
        };
        self.blocks
            .set(blocks)
            .map_err(|_| PyRuntimeError::new_err("blocks are already configured"))
    }

    /// Name the events of native blocks `operation` (a str; once).
    fn _set_operation(&self, operation: &Bound<'_, PyAny>) {
        if let Some(b) = self.blocks.get() {
            let _ = b.operation.set(operation.clone().unbind());
        }
    }

    /// Enter a guarded block: the `GuardedBlockCall` to mark the outcome with.
    fn __enter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let Some(blocks) = slf.get().blocks.get() else {
            return slf.call_method0(intern!(py, "_enter_slow"));
        };
        let op = blocks.operation.get().map(|o| o.bind(py));
        let op = Op::given(op);
        let now = crate::clock::once();
        if let Some(d) = guarded::deadline_source(py, &blocks.deadline, blocks.deadline_gated) {
            guarded::check_inherited(py, d, &now)?;
        }
        let held = blocks.guard.take(py, &now, op)?;
        let call = PyBlockCall {
            owner: slf.clone().into_any().unbind(),
            guard: blocks.guard.clone_ref(py),
            operation: blocks.operation.get().map(|o| o.clone_ref(py)),
            probe_timeout: held.probe_timeout(),
            held: TakeOnce::new(held),
            mark: AtomicU8::new(Outcome::Success as u8),
        };
        // From here an error drops `call`, which gives the guard back.
        let call = Bound::new(py, call)?;
        let st = stack(py)?;
        let current = st.current(py)?;
        let open = current.iter().filter(|c| is_open(c));
        let next = PyTuple::new(
            py,
            open.chain(std::iter::once(call.clone().into_any()))
                .collect::<Vec<_>>(),
        )?;
        st.replace(&next)?;
        Ok(call.into_any())
    }

    /// Leave this object's innermost open block, telling the guard how it ended.
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
        let current = stack(py)?.current(py)?;
        // The innermost open block of this object: the last entry, unless left out of
        // order. Taking its guard closes it.
        let mut found = None;
        for i in (0..current.len()).rev() {
            let item = current.get_item(i)?;
            if let Ok(call) = item.cast::<PyBlockCall>() {
                let c = call.get();
                if c.owner.bind(py).is(slf) {
                    if let Some(held) = c.held.take() {
                        found = Some((call.clone(), held));
                        break;
                    }
                }
            }
        }
        let Some((call, held)) = found else {
            return Err(no_open_block());
        };
        let call = call.get();
        let op = Op::given(call.operation.as_ref().map(|o| o.bind(py)));
        let guard = &blocks.guard;
        match given(e) {
            None => {
                guard.settle(py, held, call.mark(), op);
                Ok(())
            }
            Some(e) => {
                let classify = blocks.classify.as_ref().map(|c| c.bind(py));
                let err = PyErr::from_value(e.clone());
                let raised = guarded::fail(py, guard, held, err, classify, op);
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
        }
        Ok(())
    }
}

/// An open native guarded block: what `with guards.guarded(guard) as call` gives. Mark the
/// outcome when no exception tells it: `call.failure()` (e.g. a 5xx response),
/// `call.dropped()` (an overload signal), `call.ignore()`, or any outcome by name with
/// `call.set_outcome(name)`; the last mark wins. An exception leaving the block still
/// decides first.
#[pyclass(module = "guards", name = "GuardedBlockCall", frozen)]
pub struct PyBlockCall {
    owner: Py<PyAny>,
    guard: Guard,
    operation: Option<Py<PyAny>>,
    held: TakeOnce<Held>,
    mark: AtomicU8,
    probe_timeout: Option<Nanos>,
}

impl std::fmt::Debug for PyBlockCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedBlockCall").finish_non_exhaustive()
    }
}

impl PyBlockCall {
    fn mark(&self) -> Outcome {
        Outcome::try_from(self.mark.load(Ordering::Relaxed)).unwrap_or(Outcome::Success)
    }

    fn set_mark(&self, o: Outcome) {
        self.mark.store(o as u8, Ordering::Relaxed);
    }
}

impl Drop for PyBlockCall {
    fn drop(&mut self) {
        // Never exited (its context was lost): give the guard back, judging nothing.
        if let Some(held) = self.held.take() {
            Python::attach(|py| {
                self.guard.settle(py, held, Outcome::Ignored, Op::None);
            });
        }
    }
}

#[pymethods]
impl PyBlockCall {
    /// Report a failure of the dependency (`other_transient`) unless an exception decides.
    fn failure(&self) {
        self.set_mark(Outcome::OtherTransient);
    }

    /// Report an overload signal (`overloaded`: a timeout, a 503).
    fn dropped(&self) {
        self.set_mark(Outcome::Overloaded);
    }

    /// Report nothing about the dependency (`ignored`).
    fn ignore(&self) {
        self.set_mark(Outcome::Ignored);
    }

    /// Report a success (the default).
    fn success(&self) {
        self.set_mark(Outcome::Success);
    }

    /// Report the outcome named `outcome` (the call contract's names).
    fn set_outcome(&self, outcome: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_mark(outcome::outcome_arg(outcome)?);
        Ok(())
    }

    /// The outcome marked so far.
    #[getter]
    fn outcome(&self) -> &'static str {
        self.mark().name()
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
        visit.call(self.guard.object())?;
        Ok(())
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGuardedBase>()?;
    m.add_class::<PyBlockCall>()?;
    Ok(())
}
