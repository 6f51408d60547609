//! `Bulkhead`: at most `max_concurrent` calls in flight at once (a lock-free counter).
//!
//! `acquire()` returns a `BulkheadPermit` or raises `BulkheadFull`; `try_acquire()` returns
//! a permit or `None`. A permit releases its slot exactly once: by `release()`, at the end
//! of a `with permit:` block, or, if neither happened, when the permit is garbage
//! collected. Releasing again is a no-op that returns `False`.

use guards_core::bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadPermit, BulkheadRejected as CoreFull,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::errors::{self, BulkheadFull};
use crate::guarded::{self, Guard, GuardRef};
use crate::guarded_coro::PyGuardedCoroutine;
use crate::permit::{Granted, Owner};
use crate::util::{self, given, Ctx};

/// A cap on concurrent calls.
#[pyclass(module = "guards", name = "Bulkhead", frozen)]
#[derive(Debug)]
pub struct PyBulkhead {
    /// Boxed: core's state may be cache-line aligned (see `check_pyclass_alignment`).
    b: Box<Bulkhead>,
}

pub(crate) fn full_error(py: Python<'_>, full: CoreFull) -> PyErr {
    let err = errors::refusal(
        &py.get_type::<BulkheadFull>(),
        full.to_string(),
        Some("full"),
        None,
    );
    let v = err.value(py);
    let set = || -> PyResult<()> {
        v.setattr("in_flight", full.in_flight)?;
        v.setattr("max_concurrent", full.max_concurrent)?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

impl PyBulkhead {
    /// Core's bulkhead.
    pub(crate) fn core(&self) -> &Bulkhead {
        &self.b
    }

    fn permit(slf: &Bound<'_, Self>, p: BulkheadPermit) -> PyPermit {
        PyPermit {
            permit: Granted::new(slf.clone().unbind(), p),
        }
    }
}

#[pymethods]
impl PyBulkhead {
    /// `Bulkhead(max_concurrent=12)`.
    #[new]
    #[pyo3(signature = (*, max_concurrent = None), text_signature = "(*, max_concurrent=12)")]
    fn new(py: Python<'_>, max_concurrent: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut c = BulkheadConfig::default();
        if let Some(v) = given(max_concurrent) {
            c.max_concurrent = util::get_u64("max_concurrent", v, Ctx::Config)?;
        }
        let b = Bulkhead::new(c).map_err(|e| errors::config_error(py, e))?;
        Ok(PyBulkhead { b: Box::new(b) })
    }

    /// A bulkhead sized by Little's law: `ceil(rate_per_sec * p99 * headroom)` slots
    /// (at least 1). `p99` is a duration (seconds, timedelta or Nanos).
    #[staticmethod]
    fn from_littles_law(
        py: Python<'_>,
        rate_per_sec: &Bound<'_, PyAny>,
        p99: &Bound<'_, PyAny>,
        headroom: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let rate = util::get_f64("rate_per_sec", rate_per_sec, Ctx::Config)?;
        let p99 = util::get_duration("p99", p99, Ctx::Config)?;
        let headroom = util::get_f64("headroom", headroom, Ctx::Config)?;
        let c = BulkheadConfig::from_littles_law(rate, p99, headroom)
            .map_err(|e| errors::config_error(py, e))?;
        let b = Bulkhead::new(c).map_err(|e| errors::config_error(py, e))?;
        Ok(PyBulkhead { b: Box::new(b) })
    }

    /// The configuration.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("max_concurrent", self.b.config().max_concurrent)?;
        Ok(d)
    }

    /// Most calls in flight at once.
    #[getter]
    fn max_concurrent(&self) -> u64 {
        self.b.config().max_concurrent
    }

    /// Take a slot: a permit, or `BulkheadFull` (with `in_flight` and `max_concurrent`).
    fn acquire(slf: &Bound<'_, Self>) -> PyResult<PyPermit> {
        match slf.get().b.try_acquire() {
            Ok(p) => Ok(Self::permit(slf, p)),
            Err(full) => Err(full_error(slf.py(), full)),
        }
    }

    /// `fn(*args, **kwargs)` in a slot: take one (or raise `BulkheadFull`), call, give it
    /// back however the call ends. Returns what `fn` returned, or raises what it raised.
    /// No permit object.
    #[pyo3(signature = (r#fn, /, *args, **kwargs))]
    fn call<'py>(
        slf: &Bound<'py, Self>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded::run(
            slf.py(),
            GuardRef::Bulkhead(slf.get()),
            r#fn,
            args,
            kwargs,
            None,
            None,
        )
    }

    /// `await bulkhead.acall(fn, *args, **kwargs)`: `fn(*args, **kwargs)` awaited in a
    /// slot, taken when the awaitable is first awaited and given back when the call ends.
    #[pyo3(signature = (r#fn, /, *args, **kwargs))]
    fn acall<'py>(
        slf: &Bound<'py, Self>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<PyGuardedCoroutine> {
        guarded::acall(
            slf.py(),
            Guard::Bulkhead(slf.clone().unbind()),
            r#fn,
            args,
            kwargs,
        )
    }

    /// Take a slot if one is free: a permit, or `None`.
    fn try_acquire(slf: &Bound<'_, Self>) -> Option<PyPermit> {
        slf.get().b.try_acquire().ok().map(|p| Self::permit(slf, p))
    }

    /// Calls in flight now.
    fn in_flight(&self) -> u64 {
        self.b.in_flight()
    }

    /// Free slots now.
    fn available(&self) -> u64 {
        self.b.available()
    }

    /// Counters: `acquired`, `rejected`, `released`, `in_flight`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.b.stats();
        util::stats_dict(
            py,
            &[
                ("acquired", s.acquired),
                ("rejected", s.rejected),
                ("released", s.released),
                ("in_flight", s.in_flight),
            ],
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "Bulkhead(max_concurrent={}, in_flight={})",
            self.b.config().max_concurrent,
            self.b.in_flight()
        )
    }
}

/// A bulkhead slot. Release it once: `release()`, `with permit:`, or garbage collection.
#[pyclass(module = "guards", name = "BulkheadPermit", frozen)]
#[derive(Debug)]
pub struct PyPermit {
    permit: Granted<Py<PyBulkhead>>,
}

impl Owner for Py<PyBulkhead> {
    type Permit = BulkheadPermit;

    fn give_back(&self, p: BulkheadPermit) {
        self.get().b.release(p);
    }
}

#[pymethods]
impl PyPermit {
    /// Give the slot back. `True` the first time, `False` (and nothing happens) after.
    fn release(&self) -> bool {
        self.permit.give_back()
    }

    /// Whether the slot has been given back.
    #[getter]
    fn released(&self) -> bool {
        self.permit.done()
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.permit.give_back();
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "BulkheadPermit(released={})",
            util::py_bool(self.released())
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBulkhead>()?;
    m.add_class::<PyPermit>()?;
    Ok(())
}
