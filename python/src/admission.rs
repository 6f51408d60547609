//! `Admission`: server-side admission control at the door. Per priority class a hard cap
//! (`limits`) and, when an adaptive `limit` is given, a share of it (`shares`); refused
//! requests get `AdmissionRejected` with `reason` (`"limit_reached"`: the class's cap;
//! `"overloaded"`: the adaptive limit) and a `retry_after` (seconds, and whole seconds in
//! `retry_after_secs` for a Retry-After header).
//!
//! Tickets behave like limiter permits: one outcome (`on_success`, `on_dropped`,
//! `on_ignore`), then no-ops; `with ticket:` reports success, dropped (timeouts and guard
//! refusals) or ignore (other exceptions); a ticket collected without an outcome is
//! ignored.

use guards_core::admission::{
    Admission, AdmissionConfig, AdmissionPermit, AdmissionRejected as CoreRejected, DEFAULT_LIMIT,
    LIMIT_FIELDS, SHARE_FIELDS,
};
use guards_core::priority::MAX_PRIORITIES;
use guards_core::Nanos;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::{self, AdmissionRejected};
use crate::limit;
use crate::limiter::{priority_arg, refusal_with};
use crate::permit::{Granted, Outcomes, Owner};
use crate::util::{self, given, Ctx};

fn refused_error(py: Python<'_>, r: CoreRejected, now: Nanos) -> PyErr {
    refusal_with(
        py,
        &py.get_type::<AdmissionRejected>(),
        r.to_string(),
        r.reason.name(),
        r.retry_after(now),
        &[
            ("retry_after_secs", r.retry_after_secs(now)),
            ("threshold", r.threshold),
            ("in_flight", r.in_flight),
            ("priority", u64::from(r.priority.level())),
        ],
    )
}

/// Admission control at the door of a server.
#[pyclass(module = "guards", name = "Admission", frozen)]
#[derive(Debug)]
pub struct PyAdmission {
    /// Boxed: core's limiter state is cache-line padded.
    a: Box<Admission>,
}

impl PyAdmission {
    fn ticket(slf: &Bound<'_, Self>, t: AdmissionPermit) -> PyAdmissionTicket {
        PyAdmissionTicket {
            start: t.start().as_u64(),
            in_flight: t.in_flight(),
            priority: t.priority().level(),
            ticket: Granted::new(slf.clone().unbind(), t),
        }
    }
}

#[pymethods]
impl PyAdmission {
    /// `Admission(limits=None, limit=None, shares=None, window=0.1,
    /// min_window_samples=10, min_retry_after=1.0, max_retry_after=60.0)`. `limits`: up to
    /// 8 caps, index = priority (default `[80, 64, 64, 64, 64, 64, 64, 64]`; missing
    /// entries keep the default); `limit`: an adaptive limit (a `Limit`, an int or a
    /// mapping with `algorithm`; default none); `shares`: up to 8 shares of it (default
    /// 1.0). Each class's cap and share are no larger than the more important class's.
    #[new]
    #[pyo3(
        signature = (*, limits = None, limit = None, shares = None, window = None, min_window_samples = None, min_retry_after = None, max_retry_after = None),
        text_signature = "(*, limits=None, limit=None, shares=None, window=0.1, min_window_samples=10, min_retry_after=1.0, max_retry_after=60.0)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        limits: Option<&Bound<'_, PyAny>>,
        limit: Option<&Bound<'_, PyAny>>,
        shares: Option<&Bound<'_, PyAny>>,
        window: Option<&Bound<'_, PyAny>>,
        min_window_samples: Option<&Bound<'_, PyAny>>,
        min_retry_after: Option<&Bound<'_, PyAny>>,
        max_retry_after: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut c = AdmissionConfig::default();
        if let Some(v) = given(limits) {
            let items = util::short_list("limits", v, MAX_PRIORITIES)?;
            for ((slot, item), f) in c.limits.iter_mut().zip(items.iter()).zip(LIMIT_FIELDS) {
                if !item.is_none() {
                    *slot = util::get_u64(f, item, Ctx::Config)?;
                }
            }
        }
        c.limit = limit::limit_config_arg(limit, DEFAULT_LIMIT)?;
        if let Some(v) = given(shares) {
            let items = util::short_list("shares", v, MAX_PRIORITIES)?;
            for ((slot, item), f) in c.shares.iter_mut().zip(items.iter()).zip(SHARE_FIELDS) {
                if !item.is_none() {
                    *slot = util::get_f64(f, item, Ctx::Config)?;
                }
            }
        }
        if let Some(v) = given(window) {
            c.window = util::get_duration("window", v, Ctx::Config)?;
        }
        if let Some(v) = given(min_window_samples) {
            c.min_window_samples = util::get_u64("min_window_samples", v, Ctx::Config)?;
        }
        if let Some(v) = given(min_retry_after) {
            c.min_retry_after = util::get_duration("min_retry_after", v, Ctx::Config)?;
        }
        if let Some(v) = given(max_retry_after) {
            c.max_retry_after = util::get_duration("max_retry_after", v, Ctx::Config)?;
        }
        let a = Admission::new(c).map_err(|e| errors::config_error(py, e))?;
        Ok(PyAdmission { a: Box::new(a) })
    }

    /// The configuration (durations in seconds; `limit` as a dict).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.a.config();
        let d = PyDict::new(py);
        d.set_item("limits", PyList::new(py, c.limits)?)?;
        d.set_item("limit", limit::config_dict(py, &c.limit)?)?;
        d.set_item("shares", PyList::new(py, c.shares)?)?;
        d.set_item("window", util::secs(c.window))?;
        d.set_item("min_window_samples", c.min_window_samples)?;
        d.set_item("min_retry_after", util::secs(c.min_retry_after))?;
        d.set_item("max_retry_after", util::secs(c.max_retry_after))?;
        Ok(d)
    }

    /// Let a request of class `priority` (0..=7, default 1) in at `now`: a ticket, or
    /// `AdmissionRejected` (with `reason`, `retry_after`, `retry_after_secs`, `threshold`,
    /// `in_flight`, `priority`).
    #[pyo3(signature = (priority = None, now = None))]
    fn acquire(
        slf: &Bound<'_, Self>,
        priority: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyAdmissionTicket> {
        let py = slf.py();
        let p = priority_arg(priority)?;
        let now = util::get_now(py, now)?;
        match slf.get().a.try_acquire(now, p) {
            Ok(t) => Ok(Self::ticket(slf, t)),
            Err(r) => Err(refused_error(py, r, now)),
        }
    }

    /// Like `acquire`, but `None` instead of raising.
    #[pyo3(signature = (priority = None, now = None))]
    fn try_acquire(
        slf: &Bound<'_, Self>,
        priority: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyAdmissionTicket>> {
        let p = priority_arg(priority)?;
        let now = util::get_now(slf.py(), now)?;
        Ok(slf
            .get()
            .a
            .try_acquire(now, p)
            .ok()
            .map(|t| Self::ticket(slf, t)))
    }

    /// Requests inside now.
    fn in_flight(&self) -> u64 {
        self.a.in_flight()
    }

    /// The adaptive limit now (2**64-1 without one).
    #[getter]
    fn limit(&self) -> u64 {
        self.a.limit()
    }

    /// How many requests of class `priority` may be inside now.
    #[pyo3(signature = (priority = None))]
    fn threshold(&self, priority: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        Ok(self.a.threshold(priority_arg(priority)?))
    }

    /// Counters: `admitted`, `refused_limit_reached`, `refused_overloaded`, `succeeded`,
    /// `dropped`, `ignored`, `in_flight`, `limit` (per-priority refusals:
    /// `refused_by_priority()`).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.a.stats();
        util::stats_dict(
            py,
            &[
                ("admitted", s.admitted),
                ("refused_limit_reached", s.refused_limit_reached),
                ("refused_overloaded", s.refused_overloaded),
                ("succeeded", s.succeeded),
                ("dropped", s.dropped),
                ("ignored", s.ignored),
                ("in_flight", s.in_flight),
                ("limit", s.limit),
            ],
        )
    }

    /// Refusals per priority class (a list of 8 ints, index = class).
    fn refused_by_priority(&self) -> Vec<u64> {
        self.a.stats().refused_by_priority.to_vec()
    }

    fn __repr__(&self) -> String {
        format!("Admission(in_flight={})", self.a.in_flight())
    }
}

/// A place inside. Report its outcome once: `on_success`, `on_dropped` or `on_ignore`.
#[pyclass(module = "guards", name = "AdmissionTicket", frozen)]
#[derive(Debug)]
pub struct PyAdmissionTicket {
    ticket: Granted<Py<PyAdmission>>,
    start: u64,
    in_flight: u64,
    priority: u8,
}

impl Owner for Py<PyAdmission> {
    type Permit = AdmissionPermit;

    fn give_back(&self, t: AdmissionPermit) {
        self.get().a.on_ignore(t);
    }
}

impl Outcomes for Py<PyAdmission> {
    fn success(&self, t: AdmissionPermit, now: Nanos) {
        self.get().a.on_success(t, now);
    }

    fn dropped(&self, t: AdmissionPermit, now: Nanos) {
        self.get().a.on_dropped(t, now);
    }
}

#[pymethods]
impl PyAdmissionTicket {
    /// The request succeeded at `now`. `False` if already reported.
    #[pyo3(signature = (now = None))]
    fn on_success(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        self.ticket.on_success(py, now)
    }

    /// The request was dropped at `now` (timed out or shed later). `False` if already
    /// reported.
    #[pyo3(signature = (now = None))]
    fn on_dropped(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        self.ticket.on_dropped(py, now)
    }

    /// Release the place without a sample. `False` if already reported.
    fn on_ignore(&self) -> bool {
        self.ticket.give_back()
    }

    /// Whether an outcome has been reported.
    #[getter]
    fn done(&self) -> bool {
        self.ticket.done()
    }

    /// When the request was let in (integer nanoseconds).
    #[getter]
    fn start(&self) -> u64 {
        self.start
    }

    /// Requests inside right after this one came in.
    #[getter]
    fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Its priority class.
    #[getter]
    fn priority(&self) -> u8 {
        self.priority
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.ticket.exit(py, exc_type)
    }

    fn __repr__(&self) -> String {
        format!(
            "AdmissionTicket(priority={}, in_flight={}, done={})",
            self.priority,
            self.in_flight,
            util::py_bool(self.done())
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAdmission>()?;
    m.add_class::<PyAdmissionTicket>()?;
    Ok(())
}
