//! `Bulkhead`: at most `max_concurrent` calls in flight at once (a lock-free counter, built
//! in place by ffi).
//!
//! `acquire()` returns a `BulkheadPermit` or raises `BulkheadFull`; `try_acquire()` returns
//! a permit or `None`. A permit gives its slot back exactly once: `release()` (or
//! `report(outcome)`: a bulkhead releases whatever the outcome), the end of a `with
//! permit:` block, or, if neither happened, when the permit is garbage collected.

use guards::handle::InPlace;
use guards::names::{Bulkhead, BulkheadPermit, BulkheadRejected};
use guards::schema::BULKHEAD;
use guards_core::bulkhead::BulkheadConfig;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::config::{self, Args};
use crate::errors::{self, BulkheadFull};
use crate::events::{self, Op};
use crate::guarded::{self, Guard};
use crate::guarded_coro::PyGuardedCoroutine;
use crate::outcome;
use crate::permit::{Granted, Issuer};
use crate::util::{self, Ctx};

/// A cap on concurrent calls.
#[pyclass(module = "guards", name = "Bulkhead", frozen)]
#[derive(Debug)]
pub struct PyBulkhead {
    pub(crate) b: InPlace<Bulkhead>,
}

/// `BulkheadFull` for a refusal.
pub(crate) fn full_error(py: Python<'_>, full: BulkheadRejected) -> PyErr {
    let err = errors::refusal(
        &py.get_type::<BulkheadFull>(),
        full.to_string(),
        Some("full"),
        None,
    );
    let v = err.value(py);
    let set = || -> PyResult<()> {
        v.setattr(intern!(py, "in_flight"), full.in_flight)?;
        v.setattr(intern!(py, "max_concurrent"), full.max_concurrent)?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

impl PyBulkhead {
    fn build(py: Python<'_>, c: BulkheadConfig) -> PyResult<Self> {
        let b = InPlace::<Bulkhead>::new(c).map_err(|f| errors::failure(py, f))?;
        Ok(PyBulkhead { b })
    }

    /// Take a slot (a refusal raises `BulkheadFull`, emitted as a `refusal`).
    pub(crate) fn take<'py>(slf: &Bound<'py, Self>, op: Op<'_, 'py>) -> PyResult<BulkheadPermit> {
        slf.get().b.try_acquire().map_err(|full| {
            let py = slf.py();
            let err = full_error(py, full);
            events::refusal(py, slf.as_any(), op, &err);
            err
        })
    }

    fn permit(slf: &Bound<'_, Self>, p: BulkheadPermit) -> PyPermit {
        PyPermit {
            permit: Granted::new(Issuer(slf.clone().unbind()), p),
        }
    }
}

#[pymethods]
impl PyBulkhead {
    /// `Bulkhead(max_concurrent=12)`: like `asyncio.Semaphore(12)`, the cap comes first.
    #[new]
    #[pyo3(signature = (*args, **kwargs), text_signature = "(max_concurrent=12)")]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let a = Args::collect("Bulkhead", &["max_concurrent"], args, kwargs)?;
        let c = a.build(&BULKHEAD)?;
        Self::build(args.py(), c)
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
        Self::build(py, c)
    }

    /// The settings.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config::to_dict(py, &BULKHEAD, self.b.config())
    }

    /// Most calls in flight at once: the cap in force (`set_max_concurrent`, or a fleet
    /// the bulkhead is attached to, may have changed it; `config()` keeps the cap it was
    /// built with).
    #[getter]
    fn max_concurrent(&self) -> u64 {
        self.b.max_concurrent()
    }

    /// Change the cap at run time (`0..=2**32-1`; 0 admits nothing) without touching the
    /// permits in flight: a lowered cap admits nothing until enough of them come back.
    /// Returns the cap it replaced.
    fn set_max_concurrent(
        &self,
        py: Python<'_>,
        max_concurrent: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        let cap = util::get_u64("max_concurrent", max_concurrent, Ctx::Arg)?;
        self.b
            .set_max_concurrent(cap)
            .map_err(|e| errors::config_error(py, e))
    }

    /// Take a slot: a permit, or `BulkheadFull` (with `in_flight` and `max_concurrent`).
    /// `operation` names the call in the `refusal` event.
    #[pyo3(signature = (*, operation = None))]
    fn acquire(slf: &Bound<'_, Self>, operation: Option<&Bound<'_, PyAny>>) -> PyResult<PyPermit> {
        let p = Self::take(slf, Op::given(util::given(operation)))?;
        Ok(Self::permit(slf, p))
    }

    /// `fn(*args, **kwargs)` in a slot: take one (or raise `BulkheadFull`), call, give it
    /// back however the call ends. Returns what `fn` returned, or raises what it raised.
    #[pyo3(signature = (r#fn, /, *args, **kwargs))]
    fn call<'py>(
        slf: &Bound<'py, Self>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded::run(&Guard::Bulkhead(slf.clone().unbind()), r#fn, args, kwargs)
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
    #[getter]
    fn in_flight(&self) -> u64 {
        self.b.in_flight()
    }

    /// Free slots now.
    #[getter]
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
            self.b.max_concurrent(),
            self.b.in_flight()
        )
    }
}

/// A bulkhead slot. Give it back once: `release()`, `report(outcome)`, `with permit:`, or
/// garbage collection.
#[pyclass(module = "guards", name = "BulkheadPermit", frozen)]
#[derive(Debug)]
pub struct PyPermit {
    permit: Granted<Issuer<PyBulkhead>>,
}

impl guards::permit::Owner for Issuer<PyBulkhead> {
    type Permit = BulkheadPermit;

    fn give_back(&self, p: BulkheadPermit) {
        self.0.get().b.release(p);
    }
}

#[pymethods]
impl PyPermit {
    /// Give the slot back. `True` the first time, `False` (and nothing happens) after.
    fn release(&self) -> bool {
        self.permit.give_back()
    }

    /// Hand the slot back with how the call ended (the call contract's outcome; a bulkhead
    /// releases it whatever the outcome). `True` the first time, `False` after.
    fn report(&self, outcome: &Bound<'_, PyAny>) -> PyResult<bool> {
        let o = outcome::outcome_arg(outcome)?;
        Ok(match self.permit.take() {
            Some(p) => {
                self.permit.owner().0.get().b.report(p, o);
                true
            }
            None => false,
        })
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
