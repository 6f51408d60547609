//! `GuardedCoroutine`: the awaitable a guarded `async` call returns (`CircuitBreaker.acall`,
//! `Bulkhead.acall`, `KeyedBreakers.acall`, and a `GuardedFunction` made with `is_async`).
//!
//! It behaves as the coroutine of
//!
//! ```python
//! async def guarded_call(*args, **kwargs):
//!     check the inherited deadline; take the guard
//!     try:
//!         result = await fn(*args, **kwargs)
//!     except BaseException as exc:
//!         give the guard back as `exc` says; raise
//!     give the guard back (success); return result
//! ```
//!
//! without a Python frame: nothing happens until it is first awaited (or sent `None`, as a
//! task does), it is then driven step by step (`send`, `throw`, `close`, or `__next__` from
//! an `await`), and a coroutine collected while suspended is closed (an abandoned call:
//! ignored, or a failure for a half-open probe). One that is never awaited takes nothing and
//! warns as a forgotten coroutine does. It is a `collections.abc.Coroutine`, so
//! `asyncio.create_task` and friends accept it.
//!
//! A native coroutine (or generator-based one) is driven with `send`; any other awaitable
//! through the iterator its `__await__` returns. A step's result comes back from the callee
//! and goes out to the awaiting frame as a `StopIteration` left unnormalized where the
//! interpreter allows it, so a guarded `await` costs no exception object.

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::exceptions::{
    PyRuntimeError, PyRuntimeWarning, PyStopIteration, PyTypeError, PyValueError,
};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};
use pyo3::{intern, Borrowed, PyTraverseError, PyTypeInfo, PyVisit};

use guards_core::Outcome;

use crate::events::Op;
use crate::guarded::{self, Held, PyGuardedFunction};

/// How the awaited object is stepped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Drive {
    /// A native coroutine: `CoroutineType.send(target, value)`, without looking the method up.
    Coroutine,
    /// `target.send(value)` (generator-based coroutines, iterators that have `send`).
    Send,
    /// `target.__next__()` (an iterator without `send`).
    Next,
}

enum State {
    /// Created, not awaited yet: nothing taken, `fn` not called.
    Fresh,
    /// Awaiting `target` while holding the guard.
    Running {
        target: Py<PyAny>,
        drive: Drive,
        held: Held,
    },
    /// Returned, raised or closed.
    Done,
}

/// What is sent in.
enum Input<'py> {
    /// `send(value)`, `__next__()` (`None`).
    Send(Option<Bound<'py, PyAny>>),
    /// `throw(typ, val, tb)`.
    Throw(Bound<'py, PyTuple>),
    /// `close()`.
    Close,
}

/// What a step gave.
enum Step<'py> {
    /// The awaited object suspended with this value (for the event loop).
    Yield(Bound<'py, PyAny>),
    /// The call returned this value.
    Return(Bound<'py, PyAny>),
    /// Closed.
    Closed,
}

/// An awaitable guarded call (see the module docs).
#[pyclass(module = "guards", name = "GuardedCoroutine", frozen, weakref)]
pub struct PyGuardedCoroutine {
    owner: Py<PyGuardedFunction>,
    args: Py<PyTuple>,
    kwargs: Option<Py<PyDict>>,
    /// Set while a step runs (or `__traverse__` reads `state`): the right to use `state`.
    executing: AtomicBool,
    state: UnsafeCell<State>,
}

// SAFETY: `state` is only read or written by the holder of `executing` (taken with an
// atomic swap, or under the GIL with a load and a store, see `Executing::take`; released
// with a store) or through `&mut self`; the rest is immutable.
unsafe impl Sync for PyGuardedCoroutine {}

/// Whether the interpreter runs one thread at a time (a GIL): set at import when it has one.
/// A free-threaded interpreter whose GIL was enabled by then never disables it again.
static ONE_THREAD_AT_A_TIME: AtomicBool = AtomicBool::new(false);

/// Note whether the interpreter has a GIL (see `ONE_THREAD_AT_A_TIME`).
pub(crate) fn note_gil(py: Python<'_>) -> PyResult<()> {
    let sys = py.import("sys")?;
    let gil = match sys.getattr(intern!(py, "_is_gil_enabled")) {
        Ok(enabled) => enabled.call0()?.is_truthy()?,
        Err(_) => true, // before 3.13: always
    };
    ONE_THREAD_AT_A_TIME.store(gil, Ordering::Relaxed);
    Ok(())
}

/// The `executing` flag, held until dropped.
struct Executing<'a>(&'a AtomicBool);

impl<'a> Executing<'a> {
    /// Take the flag (the caller is attached to the interpreter); `None` if it is held.
    fn take(flag: &'a AtomicBool) -> Option<Self> {
        if ONE_THREAD_AT_A_TIME.load(Ordering::Relaxed) {
            // Under the GIL no other thread runs between the load and the store (nothing
            // here can release it), so they take the flag as the swap would, without the
            // cost of a locked instruction.
            if flag.load(Ordering::Relaxed) {
                return None;
            }
            flag.store(true, Ordering::Relaxed);
            return Some(Executing(flag));
        }
        (!flag.swap(true, Ordering::Acquire)).then_some(Executing(flag))
    }
}

impl Drop for Executing<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl std::fmt::Debug for PyGuardedCoroutine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedCoroutine").finish_non_exhaustive()
    }
}

/// A type's `am_send` slot: send a value in; `0` returned (`*result` the value), `1`
/// suspended (`*result` the value yielded) or `-1` raised.
type SendFunc =
    unsafe extern "C" fn(*mut ffi::PyObject, *mut ffi::PyObject, *mut *mut ffi::PyObject) -> c_int;

/// What stepping awaited objects needs, looked up once.
struct Types {
    coroutine: Py<PyType>,
    generator: Py<PyType>,
    /// `types.CoroutineType.send`.
    coroutine_send: Py<PyAny>,
    /// The coroutine type's `am_send` (read with `PyType_GetSlot`): a coroutine's return
    /// value comes back without a `StopIteration`.
    coroutine_am_send: Option<SendFunc>,
}

fn types(py: Python<'_>) -> PyResult<&Types> {
    static TYPES: PyOnceLock<Types> = PyOnceLock::new();
    TYPES.get_or_try_init(py, || {
        let m = py.import("types")?;
        let coroutine = m.getattr("CoroutineType")?.cast_into::<PyType>()?;
        // SAFETY: `coroutine` is a type object; from 3.10 (the oldest Python this module
        // builds for) PyType_GetSlot accepts static types, and returns the slot (or NULL)
        // without raising for a known slot id.
        let slot = unsafe { ffi::PyType_GetSlot(coroutine.as_type_ptr(), ffi::Py_am_send) };
        // SAFETY: the `am_send` slot holds a `sendfunc`, whose C signature `SendFunc` spells
        // (the result enum is an int).
        let coroutine_am_send = (!slot.is_null())
            .then(|| unsafe { std::mem::transmute::<*mut c_void, SendFunc>(slot) });
        Ok(Types {
            coroutine_send: coroutine.getattr("send")?.unbind(),
            coroutine: coroutine.unbind(),
            generator: m.getattr("GeneratorType")?.cast_into::<PyType>()?.unbind(),
            coroutine_am_send,
        })
    })
}

/// `CO_ITERABLE_COROUTINE`: a generator made awaitable by `types.coroutine`.
const CO_ITERABLE_COROUTINE: u64 = 0x100;

/// What `await obj` iterates, and how: as the interpreter's `await` finds it.
fn awaited<'py>(obj: Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, Drive)> {
    let py = obj.py();
    let types = types(py)?;
    // SAFETY: reading a valid object's type pointer (only compared).
    let ty_ptr = unsafe { ffi::Py_TYPE(obj.as_ptr()) }.cast::<ffi::PyObject>();
    if ty_ptr == types.coroutine.as_ptr() {
        return Ok((obj, Drive::Coroutine));
    }
    let ty = obj.get_type();
    if ty.is(&types.generator) {
        let flags: u64 = obj
            .getattr(intern!(py, "gi_code"))?
            .getattr(intern!(py, "co_flags"))?
            .extract()?;
        if flags & CO_ITERABLE_COROUTINE != 0 {
            return Ok((obj, Drive::Send));
        }
    }
    let Ok(await_method) = ty.getattr(intern!(py, "__await__")) else {
        return Err(PyTypeError::new_err(format!(
            "object {} can't be used in 'await' expression",
            type_name(&obj)
        )));
    };
    let it = await_method.call1((&obj,))?;
    if it.get_type().is(&types.coroutine) {
        return Err(PyTypeError::new_err("__await__() returned a coroutine"));
    }
    // SAFETY: `it` is a valid object; PyIter_Check only reads its type.
    if unsafe { ffi::PyIter_Check(it.as_ptr()) } == 0 {
        return Err(PyTypeError::new_err(format!(
            "__await__() returned non-iterator of type '{}'",
            type_name(&it)
        )));
    }
    let drive = if it.hasattr(intern!(py, "send"))? {
        Drive::Send
    } else {
        Drive::Next
    };
    Ok((it, drive))
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .qualname()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// The result of calling into the awaited object: a value it yielded, or the value it
/// returned when it raised `StopIteration` (fetched without making the exception object
/// when the interpreter left it unmade), or its error.
fn outcome(py: Python<'_>, result: *mut ffi::PyObject) -> PyResult<Step<'_>> {
    // SAFETY: `result` is the new reference (or NULL) a call just returned.
    if let Some(v) = unsafe { Bound::from_owned_ptr_or_opt(py, result) } {
        return Ok(Step::Yield(v));
    }
    // SAFETY: reading this thread's error indicator (the thread is attached); the
    // pointers are only compared.
    let stopped = unsafe {
        let raised = ffi::PyErr_Occurred();
        !raised.is_null()
            && (raised == ffi::PyExc_StopIteration
                || ffi::PyErr_ExceptionMatches(ffi::PyExc_StopIteration) != 0)
    };
    if !stopped {
        return Err(PyErr::fetch(py));
    }
    let (mut ptype, mut pvalue, mut ptb) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: a StopIteration is set; PyErr_Fetch moves its three parts (new references or
    // NULL) into our pointers and clears the indicator.
    unsafe { ffi::PyErr_Fetch(&mut ptype, &mut pvalue, &mut ptb) };
    // SAFETY: the parts are owned references (or NULL), released when these drop.
    let (ptype, value, _tb) = unsafe {
        (
            Bound::from_owned_ptr_or_opt(py, ptype),
            Bound::from_owned_ptr_or_opt(py, pvalue),
            Bound::from_owned_ptr_or_opt(py, ptb),
        )
    };
    let Some(value) = value else {
        return Ok(Step::Return(py.None().into_bound(py)));
    };
    // SAFETY: flag checks on a valid object's type.
    let (instance, tuple) = unsafe {
        (
            ffi::PyExceptionInstance_Check(value.as_ptr()) != 0,
            ffi::PyTuple_Check(value.as_ptr()) != 0,
        )
    };
    let exact = ptype
        .as_ref()
        .is_some_and(|t| t.as_ptr() == unsafe_stop_iteration());
    if !instance && !tuple && exact {
        return Ok(Step::Return(value)); // unnormalized: the value itself
    }
    if instance && value.is_instance_of::<PyStopIteration>() {
        return Ok(Step::Return(value.getattr(intern!(py, "value"))?));
    }
    // Unnormalized arguments of a StopIteration (subclass): make it to read its value.
    let ty = ptype.unwrap_or_else(|| PyStopIteration::type_object(py).into_any());
    let stop = match value.cast::<PyTuple>() {
        Ok(args) => ty.call1(args.clone())?,
        Err(_) => ty.call1((value,))?,
    };
    Ok(Step::Return(stop.getattr(intern!(py, "value"))?))
}

/// `PyExc_StopIteration`.
fn unsafe_stop_iteration() -> *mut ffi::PyObject {
    // SAFETY: reading the address the interpreter set at start-up (never changed).
    unsafe { ffi::PyExc_StopIteration }
}

/// Call `target.<name>(arg)` (or `target.<name>()` without `arg`), keeping a
/// `StopIteration` unmade (see `outcome`).
fn call_method<'py>(
    target: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
    arg: Option<&Bound<'py, PyAny>>,
) -> PyResult<Step<'py>> {
    let end: *mut ffi::PyObject = ptr::null_mut();
    // SAFETY: `target`, `name` and `arg` are valid objects kept alive for the call; the
    // argument list ends with NULL as PyObject_CallMethodObjArgs requires.
    let result = unsafe {
        match arg {
            Some(a) => {
                ffi::PyObject_CallMethodObjArgs(target.as_ptr(), name.as_ptr(), a.as_ptr(), end)
            }
            None => ffi::PyObject_CallMethodObjArgs(target.as_ptr(), name.as_ptr(), end),
        }
    };
    outcome(target.py(), result)
}

/// `CoroutineType.send(coro, value)`, keeping a `StopIteration` unmade.
fn send_to_coroutine<'py>(
    coro: &Bound<'py, PyAny>,
    value: &Bound<'py, PyAny>,
) -> PyResult<Step<'py>> {
    let py = coro.py();
    let types = types(py)?;
    if let Some(am_send) = types.coroutine_am_send {
        let mut result: *mut ffi::PyObject = ptr::null_mut();
        // SAFETY: `coro` is a coroutine (its type's own slot) and `value` a valid object,
        // both kept alive for the call; `result` receives a new reference or NULL.
        let status = unsafe { am_send(coro.as_ptr(), value.as_ptr(), &mut result) };
        // SAFETY: on return and on suspension `result` is a new reference; on error NULL.
        let result = unsafe { Bound::from_owned_ptr_or_opt(py, result) };
        return match (status, result) {
            (0, Some(v)) => Ok(Step::Return(v)),
            (1, Some(v)) => Ok(Step::Yield(v)),
            _ => Err(PyErr::fetch(py)),
        };
    }
    let send = &types.coroutine_send;
    let end: *mut ffi::PyObject = ptr::null_mut();
    // SAFETY: `send` (the method descriptor), `coro` (a coroutine) and `value` are valid
    // objects kept alive for the call; the argument list ends with NULL.
    let result = unsafe {
        ffi::PyObject_CallFunctionObjArgs(send.as_ptr(), coro.as_ptr(), value.as_ptr(), end)
    };
    outcome(py, result)
}

/// The exception `throw(typ, val, tb)` stands for, as a generator builds it.
fn thrown(py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let typ = args.get_item(0)?;
        let val = if args.len() > 1 {
            Some(args.get_item(1)?)
        } else {
            None
        };
        let val = val.filter(|v| !v.is_none());
        let exc = if typ.is_instance_of::<pyo3::exceptions::PyBaseException>() {
            if val.is_some() {
                return Ok(PyTypeError::new_err(
                    "instance exception may not have a separate value",
                ));
            }
            typ
        } else if let Ok(t) = typ.cast::<PyType>() {
            if !t.is_subclass_of::<pyo3::exceptions::PyBaseException>()? {
                return Ok(PyTypeError::new_err(format!(
                    "exceptions must be classes or instances deriving from BaseException, not {}",
                    type_name(t.as_any())
                )));
            }
            match val {
                None => t.call0()?,
                Some(v) if v.is_instance(t)? => v,
                Some(v) => match v.cast::<PyTuple>() {
                    Ok(tuple) => t.call1(tuple.clone())?,
                    Err(_) => t.call1((v,))?,
                },
            }
        } else {
            return Ok(PyTypeError::new_err(format!(
                "exceptions must be classes or instances deriving from BaseException, not {}",
                type_name(&typ)
            )));
        };
        if args.len() > 2 {
            let tb = args.get_item(2)?;
            if !tb.is_none() {
                exc.setattr(intern!(py, "__traceback__"), tb)?;
            }
        }
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|e| e)
}

/// A `StopIteration` carrying `value` (made, so that a tuple or an exception is carried as
/// itself).
fn stop_iteration(py: Python<'_>, value: Bound<'_, PyAny>) -> PyErr {
    match PyStopIteration::type_object(py).call1((value,)) {
        Ok(stop) => PyErr::from_value(stop),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------- native `await` slots
//
// pyo3 fills the type's `am_await` slot with a trampoline and has no `am_send`, so without
// more an `await` crosses into native code twice (`__await__`, then `__next__`) and the
// call's result goes out as a `StopIteration` the interpreter then fetches. On the
// interpreters whose `await` and tasks step through `PyIter_Send` (all of them for
// `asyncio` tasks; CPython 3.10 and 3.11 for `await` itself), `am_send` hands the result
// out as a return value instead, and `am_await` returns the object without a trampoline.
// Both slots are written once into the type object pyo3 made, after checking that the
// object's layout is the one written here; when it is not, the type keeps pyo3's slots.

/// `PySendResult`: returned, raised, suspended.
const PYGEN_RETURN: c_int = 0;
const PYGEN_ERROR: c_int = -1;
const PYGEN_NEXT: c_int = 1;

/// `PyAsyncMethods` (3.10 onwards).
#[repr(C)]
struct AsyncMethods {
    am_await: Option<ffi::unaryfunc>,
    am_aiter: Option<ffi::unaryfunc>,
    am_anext: Option<ffi::unaryfunc>,
    am_send: Option<SendFunc>,
}

/// The start of `PyTypeObject`, as far as `tp_as_async`.
#[repr(C)]
struct TypeObjectHead {
    ob_base: ffi::PyVarObject,
    tp_name: *const std::ffi::c_char,
    tp_basicsize: ffi::Py_ssize_t,
    tp_itemsize: ffi::Py_ssize_t,
    tp_dealloc: *mut c_void,
    tp_vectorcall_offset: ffi::Py_ssize_t,
    tp_getattr: *mut c_void,
    tp_setattr: *mut c_void,
    tp_as_async: *mut AsyncMethods,
}

/// `am_await`: the object is its own iterator (what `__await__` returns).
unsafe extern "C" fn am_await(slf: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: the interpreter passes a valid object and is attached; the new reference is
    // the slot's result.
    unsafe { ffi::Py_IncRef(slf) };
    slf
}

/// Markers `send_step` returns through pyo3's trampoline (never dereferenced).
static SUSPENDED: u8 = 0;
static RETURNED: u8 = 0;

/// `am_send`: one step with `arg` sent in, as `send` does; the value yielded or returned
/// goes out through `result`.
unsafe extern "C" fn am_send(
    slf: *mut ffi::PyObject,
    arg: *mut ffi::PyObject,
    result: *mut *mut ffi::PyObject,
) -> c_int {
    // pyo3's own trampoline for slots: attached-thread bookkeeping, and a panic raised as
    // `PanicException` rather than unwinding into the interpreter.
    let step = pyo3::impl_::trampoline::get_trampoline_function!(ternaryfunc, send_step);
    // SAFETY: the interpreter calls the slot attached, with `slf` an instance of the type
    // the slot belongs to, `arg` a valid object and `result` writable.
    let marker = unsafe { step(slf, arg, result.cast()) };
    if marker.is_null() {
        // SAFETY: `result` is writable (see above); on error it is NULL.
        unsafe { *result = ptr::null_mut() };
        PYGEN_ERROR
    } else if ptr::eq(marker.cast::<u8>(), &SUSPENDED) {
        PYGEN_NEXT
    } else {
        PYGEN_RETURN
    }
}

/// The body of `am_send` (run inside pyo3's trampoline).
///
/// # Safety
/// `slf` a `GuardedCoroutine`, `arg` a valid object, `out` a writable `*mut PyObject`.
unsafe fn send_step(
    py: Python<'_>,
    slf: *mut ffi::PyObject,
    arg: *mut ffi::PyObject,
    out: *mut ffi::PyObject,
) -> PyResult<*mut ffi::PyObject> {
    // SAFETY: the slot is only installed on `GuardedCoroutine`, so `slf` is one (borrowed
    // for the call); `arg` is a valid borrowed object.
    let (me, arg) = unsafe {
        (
            ffi::PyObject_TypeCheck(slf, PyGuardedCoroutine::type_object_raw(py)) != 0,
            Bound::from_borrowed_ptr(py, arg),
        )
    };
    if !me {
        return Err(PyTypeError::new_err("not a GuardedCoroutine"));
    }
    // SAFETY: checked just above.
    let slf = unsafe { Borrowed::from_ptr(py, slf).cast_unchecked::<PyGuardedCoroutine>() };
    let (value, marker) = match slf.get().step(py, Input::Send(Some(arg)))? {
        Step::Yield(v) => (v, &SUSPENDED),
        Step::Return(v) => (v, &RETURNED),
        Step::Closed => (py.None().into_bound(py), &RETURNED),
    };
    // SAFETY: `out` is the slot's `result` pointer (writable); it receives a new reference.
    unsafe { *out.cast::<*mut ffi::PyObject>() = value.into_ptr() };
    Ok(ptr::from_ref(marker).cast_mut().cast())
}

/// Install `am_await` and `am_send` on the `GuardedCoroutine` type (see above); whether
/// they were.
pub(crate) fn install_slots(py: Python<'_>) -> PyResult<bool> {
    // The layout below is CPython's (PyPy and GraalPy emulate it: left alone).
    let sys = py.import("sys")?;
    let implementation: String = sys
        .getattr(intern!(py, "implementation"))?
        .getattr(intern!(py, "name"))?
        .extract()?;
    // `am_send` is a field of `PyAsyncMethods` from 3.10 on: on 3.9 the word after
    // `am_anext` is the next table's, never to be written.
    let new_enough = sys.getattr(intern!(py, "version_info"))?.ge((3, 10))?;
    if implementation != "cpython" || !new_enough {
        return Ok(false);
    }
    let ty = PyGuardedCoroutine::type_object(py);
    let tp = ty.as_type_ptr();
    let basic: ffi::Py_ssize_t = ty.getattr(intern!(py, "__basicsize__"))?.extract()?;
    let item: ffi::Py_ssize_t = ty.getattr(intern!(py, "__itemsize__"))?.extract()?;
    let heap: usize = py
        .get_type::<PyType>()
        .getattr(intern!(py, "__basicsize__"))?
        .extract()?;
    // SAFETY: `tp` is a live heap type object (pyo3 made it with PyType_FromSpec), at least
    // `heap` bytes long (the size of every type object of metatype `type`), which starts
    // with `TypeObjectHead`'s fields on every CPython from 3.10; the fields read are checked
    // against what the interpreter reports before anything is written.
    unsafe {
        if ffi::Py_TYPE(tp.cast()) != ptr::addr_of_mut!(ffi::PyType_Type)
            || std::mem::size_of::<TypeObjectHead>() > heap
        {
            return Ok(false);
        }
        let head = tp.cast::<TypeObjectHead>();
        let methods = (*head).tp_as_async;
        let start = tp as usize;
        let inside = (methods as usize) >= start + std::mem::size_of::<TypeObjectHead>()
            && (methods as usize) + std::mem::size_of::<AsyncMethods>() <= start + heap;
        if (*head).tp_basicsize != basic || (*head).tp_itemsize != item || !inside {
            return Ok(false);
        }
        let slot = |id| ffi::PyType_GetSlot(tp, id) as usize;
        let m = &mut *methods;
        let same = m.am_await.map_or(0, |f| f as usize) == slot(ffi::Py_am_await)
            && m.am_await.is_some()
            && m.am_aiter.map_or(0, |f| f as usize) == slot(ffi::Py_am_aiter)
            && m.am_anext.map_or(0, |f| f as usize) == slot(ffi::Py_am_anext)
            && m.am_send.is_none()
            && slot(ffi::Py_am_send) == 0;
        if !same {
            return Ok(false);
        }
        m.am_await = Some(am_await);
        m.am_send = Some(am_send);
        ffi::PyType_Modified(tp);
    }
    Ok(true)
}

impl PyGuardedCoroutine {
    pub(crate) fn new(
        owner: Py<PyGuardedFunction>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> Self {
        PyGuardedCoroutine {
            owner,
            args: args.clone().unbind(),
            kwargs: kwargs.map(|k| k.clone().unbind()),
            executing: AtomicBool::new(false),
            state: UnsafeCell::new(State::Fresh),
        }
    }

    /// One step: what `send` / `__next__` / `throw` / `close` do. A step taken while another
    /// runs (from the awaited code itself, or another thread) is refused, as a coroutine
    /// refuses it.
    fn step<'py>(&self, py: Python<'py>, input: Input<'py>) -> PyResult<Step<'py>> {
        let Some(_executing) = Executing::take(&self.executing) else {
            return Err(PyValueError::new_err("coroutine already executing"));
        };
        // SAFETY: `_executing` holds the flag until this function returns, and `state` is
        // only accessed by a holder of the flag (steps, `__traverse__`) or through `&mut
        // self` (drop): this is the only reference to it meanwhile.
        let state = unsafe { &mut *self.state.get() };
        let (next, result) = self.advance(py, std::mem::replace(state, State::Done), input);
        *state = next;
        result
    }

    fn advance<'py>(
        &self,
        py: Python<'py>,
        state: State,
        input: Input<'py>,
    ) -> (State, PyResult<Step<'py>>) {
        match state {
            State::Done => (
                State::Done,
                match input {
                    Input::Send(_) => Err(PyRuntimeError::new_err(
                        "cannot reuse already awaited coroutine",
                    )),
                    Input::Throw(args) => Err(thrown(py, &args)),
                    Input::Close => Ok(Step::Closed),
                },
            ),
            State::Fresh => match input {
                Input::Send(Some(v)) if !v.is_none() => (
                    State::Fresh,
                    Err(PyTypeError::new_err(
                        "can't send non-None value to a just-started coroutine",
                    )),
                ),
                Input::Send(_) => self.start(py),
                // Thrown in or closed before it started: nothing was taken.
                Input::Throw(args) => (State::Done, Err(thrown(py, &args))),
                Input::Close => (State::Done, Ok(Step::Closed)),
            },
            State::Running {
                target,
                drive,
                held,
            } => self.resume(py, target.into_bound(py), drive, held, input),
        }
    }

    /// The first step: deadline, guard, `fn(*args, **kwargs)`, then into what it returned.
    fn start<'py>(&self, py: Python<'py>) -> (State, PyResult<Step<'py>>) {
        let owner_obj = self.owner.bind(py);
        let owner = owner_obj.get();
        let op = Op::QualnameOf(owner_obj.as_any());
        let now = crate::clock::once();
        let taken = match guarded::deadline_source(py, &owner.deadline, owner.deadline_gated) {
            Some(d) => guarded::check_inherited(py, d, &now),
            None => Ok(()),
        }
        .and_then(|()| owner.guard.take(py, &now, op));
        let held = match taken {
            Ok(held) => held,
            Err(e) => return (State::Done, Err(e)),
        };
        let kwargs = self.kwargs.as_ref().map(|k| k.bind(py));
        let target = owner
            .func
            .bind(py)
            .call(self.args.bind(py), kwargs)
            .and_then(awaited);
        match target {
            Ok((target, drive)) => self.resume(py, target, drive, held, Input::Send(None)),
            Err(e) => (State::Done, Err(self.failed(py, held, e))),
        }
    }

    /// Step the awaited object with `input` and settle the guard once the call ends.
    fn resume<'py>(
        &self,
        py: Python<'py>,
        target: Bound<'py, PyAny>,
        drive: Drive,
        held: Held,
        input: Input<'py>,
    ) -> (State, PyResult<Step<'py>>) {
        let owner_obj = self.owner.bind(py);
        let guard = &owner_obj.get().guard;
        let op = Op::QualnameOf(owner_obj.as_any());
        let result = match input {
            Input::Send(v) => {
                let v = v.unwrap_or_else(|| py.None().into_bound(py));
                match drive {
                    Drive::Coroutine => send_to_coroutine(&target, &v),
                    Drive::Next if v.is_none() => {
                        call_method(&target, intern!(py, "__next__"), None)
                    }
                    Drive::Send | Drive::Next => {
                        call_method(&target, intern!(py, "send"), Some(&v))
                    }
                }
            }
            Input::Throw(args) => match target.getattr(intern!(py, "throw")) {
                Ok(throw) => outcome(
                    py,
                    throw.call1(args).map_or_else(
                        |e| {
                            e.restore(py);
                            ptr::null_mut()
                        },
                        Bound::into_ptr,
                    ),
                ),
                // Nothing to throw into: the exception is raised at the `await`.
                Err(_) => Err(thrown(py, &args)),
            },
            Input::Close => {
                let closed = match target.getattr(intern!(py, "close")) {
                    Ok(close) => close.call0().map(drop),
                    Err(_) => Ok(()),
                };
                match closed {
                    // GeneratorExit at the `await`: an abandoned call.
                    Ok(()) => {
                        drop(target);
                        guard.settle(py, held, Outcome::Cancelled, op);
                        return (State::Done, Ok(Step::Closed));
                    }
                    Err(e) => Err(e),
                }
            }
        };
        match result {
            Ok(Step::Yield(v)) => (
                State::Running {
                    target: target.unbind(),
                    drive,
                    held,
                },
                Ok(Step::Yield(v)),
            ),
            Ok(Step::Return(v)) => {
                drop(target);
                guard.settle(py, held, Outcome::Success, op);
                (State::Done, Ok(Step::Return(v)))
            }
            // Not an answer of the awaited object.
            Ok(Step::Closed) => (State::Done, Ok(Step::Closed)),
            Err(e) => {
                drop(target);
                (State::Done, Err(self.failed(py, held, e)))
            }
        }
    }

    /// The call raised `e`: settle the guard as `e` says; the error to raise.
    fn failed(&self, py: Python<'_>, held: Held, e: PyErr) -> PyErr {
        let owner_obj = self.owner.bind(py);
        let owner = owner_obj.get();
        let classify = owner.classify.as_ref().map(|c| c.bind(py));
        let op = Op::QualnameOf(owner_obj.as_any());
        guarded::fail(py, &owner.guard, held, e, classify, op)
    }

    fn name(&self, py: Python<'_>) -> String {
        let owner = self.owner.bind(py);
        guarded::qualname(owner.as_any(), owner.get()).unwrap_or_else(|_| "?".to_owned())
    }
}

impl Drop for PyGuardedCoroutine {
    fn drop(&mut self) {
        match std::mem::replace(self.state.get_mut(), State::Done) {
            State::Done => {}
            State::Fresh => Python::attach(|py| {
                let msg = format!("coroutine '{}' was never awaited", self.name(py));
                let warned = PyErr::warn(
                    py,
                    &py.get_type::<PyRuntimeWarning>(),
                    &std::ffi::CString::new(msg).unwrap_or_default(),
                    1,
                );
                if let Err(e) = warned {
                    e.write_unraisable(py, None);
                }
            }),
            // Collected while suspended: the awaited object is closed as it goes, and the
            // call abandoned.
            State::Running { target, held, .. } => Python::attach(|py| {
                drop(target);
                let owner_obj = self.owner.bind(py);
                let op = Op::QualnameOf(owner_obj.as_any());
                owner_obj
                    .get()
                    .guard
                    .settle(py, held, Outcome::Cancelled, op);
            }),
        }
    }
}

#[pymethods]
impl PyGuardedCoroutine {
    fn __await__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// One step from an `await`: the value to pass to the event loop, or the end of the
    /// call (its value in a `StopIteration`, unnormalized where the interpreter allows).
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.step(py, Input::Send(None))? {
            Step::Yield(v) => Ok(Some(v)),
            Step::Closed => Ok(None),
            Step::Return(v) => {
                if v.is_none() {
                    return Ok(None); // exhausted without an error: returned None
                }
                if v.is_instance_of::<PyTuple>()
                    || v.is_instance_of::<pyo3::exceptions::PyBaseException>()
                {
                    return Err(stop_iteration(py, v));
                }
                // SAFETY: sets this thread's error indicator to StopIteration with the
                // value `v` itself, unnormalized (PyErr_Restore steals both references,
                // which are new ones); returning NULL with it set is how an iterator
                // returns a value.
                unsafe {
                    ffi::PyErr_Restore(
                        PyStopIteration::type_object(py).into_ptr(),
                        v.into_ptr(),
                        ptr::null_mut(),
                    )
                };
                Ok(None)
            }
        }
    }

    /// Send `value` in (`None` to start); what the awaited object yields, or
    /// `StopIteration` with the call's result.
    #[pyo3(signature = (value, /))]
    fn send<'py>(&self, py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        match self.step(py, Input::Send(Some(value)))? {
            Step::Yield(v) => Ok(v),
            Step::Return(v) => Err(stop_iteration(py, v)),
            Step::Closed => Err(stop_iteration(py, py.None().into_bound(py))),
        }
    }

    /// Raise an exception at the `await` (`throw(exc)`, or the older `throw(type, value,
    /// traceback)`).
    #[pyo3(signature = (*args))]
    fn throw<'py>(
        &self,
        py: Python<'py>,
        args: Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if args.is_empty() || args.len() > 3 {
            return Err(PyTypeError::new_err(format!(
                "throw expected 1 to 3 arguments, got {}",
                args.len()
            )));
        }
        match self.step(py, Input::Throw(args))? {
            Step::Yield(v) => Ok(v),
            Step::Return(v) => Err(stop_iteration(py, v)),
            Step::Closed => Err(stop_iteration(py, py.None().into_bound(py))),
        }
    }

    /// Close: `GeneratorExit` at the `await` (the call is abandoned).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        match self.step(py, Input::Close)? {
            Step::Yield(_) => Err(PyRuntimeError::new_err("coroutine ignored GeneratorExit")),
            Step::Return(_) | Step::Closed => Ok(()),
        }
    }

    /// The guarded function's name.
    #[getter]
    fn __name__(&self, py: Python<'_>) -> String {
        let full = self.name(py);
        full.rsplit('.').next().unwrap_or_default().to_owned()
    }

    /// The guarded function's qualified name.
    #[getter]
    fn __qualname__(&self, py: Python<'_>) -> String {
        self.name(py)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("<guarded coroutine {}>", self.name(py))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.owner)?;
        visit.call(&self.args)?;
        if let Some(k) = &self.kwargs {
            visit.call(k)?;
        }
        // While a step runs, the state it works on is out of the cell (in its locals).
        let Some(_executing) = Executing::take(&self.executing) else {
            return Ok(());
        };
        // SAFETY: the flag is held (see `step`): nothing else reads or writes `state`.
        if let State::Running { target, .. } = unsafe { &*self.state.get() } {
            visit.call(target)?;
        }
        Ok(())
    }
}
