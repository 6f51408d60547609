//! `Limiter`: a lock-free adaptive concurrency limit with priority partitions. A call takes
//! a `LimiterPermit` (or is refused with `LimitExceeded`) and gives it back with its
//! outcome: `on_success(now)` (an RTT sample), `on_dropped(now)` (a timeout or a refusal
//! downstream: a congestion signal) or `on_ignore()` (no sample). Samples are folded into
//! the limit algorithm once per `window`.
//!
//! Permits give their slot back exactly once; a second outcome is a no-op returning
//! `False`. As a context manager a permit reports `on_success` when the block succeeds,
//! `on_dropped` when it raises a `TimeoutError` or a `GuardError` (overload signals) and
//! `on_ignore` for any other exception. A permit garbage-collected without an outcome is
//! ignored (its slot comes back, no sample).

use guards_core::limiter::{
    Limiter, LimiterConfig, LimiterPermit, LimiterRejected, PartitionConfig, CAP_FIELDS,
    SHARE_FIELDS,
};
use guards_core::priority::MAX_PRIORITIES;
use guards_core::{Nanos, Priority};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyMapping, PyType};

use crate::errors::{self, LimitExceeded};
use crate::limit;
use crate::permit::{Granted, Outcomes, Owner};
use crate::util::{self, given, Ctx};

/// `partitions=`: a sequence of at most 8 mappings (entry `i` for priority `i`) with
/// optional `share` and `max_in_flight`; entries and keys left out keep the defaults.
fn partitions_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<[PartitionConfig; MAX_PRIORITIES]> {
    let mut parts = [PartitionConfig::DEFAULT; MAX_PRIORITIES];
    let Some(v) = given(v) else { return Ok(parts) };
    let items = util::short_list("partitions", v, MAX_PRIORITIES)?;
    for ((slot, item), (share_f, cap_f)) in parts
        .iter_mut()
        .zip(items.iter())
        .zip(SHARE_FIELDS.iter().zip(CAP_FIELDS.iter()))
    {
        if item.is_none() {
            continue;
        }
        let m = item.cast::<PyMapping>().map_err(|_| {
            util::type_error(
                "partitions",
                "a list of mappings with `share` and `max_in_flight`",
                item,
            )
        })?;
        util::check_mapping_keys("partitions", m, &["share", "max_in_flight"])?;
        if let Some(s) = util::mapping_get(m, "share")? {
            slot.share = util::get_f64(share_f, &s, Ctx::Config)?;
        }
        if let Some(c) = util::mapping_get(m, "max_in_flight")? {
            slot.max_in_flight = util::get_u64(cap_f, &c, Ctx::Config)?;
        }
    }
    Ok(parts)
}

/// `priority=`: a class 0..=7, default `Priority.CRITICAL` (1).
pub(crate) fn priority_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<Priority> {
    match given(v) {
        Some(p) => util::get_priority("priority", p, Ctx::Arg),
        None => Ok(Priority::default()),
    }
}

/// Set the refusal attributes shared by `LimitExceeded` and `AdmissionRejected`.
pub(crate) fn refusal_with(
    py: Python<'_>,
    ty: &Bound<'_, PyType>,
    message: String,
    reason: &str,
    retry_after: Nanos,
    extra: &[(&str, u64)],
) -> PyErr {
    let err = errors::refusal(ty, message, Some(reason), Some(retry_after));
    let v = err.value(py);
    for (k, x) in extra {
        if let Err(e) = v.setattr(*k, *x) {
            return e;
        }
    }
    err
}

fn rejected_error(py: Python<'_>, r: LimiterRejected, now: Nanos) -> PyErr {
    refusal_with(
        py,
        &py.get_type::<LimitExceeded>(),
        r.to_string(),
        r.reason.name(),
        r.retry_after(now),
        &[
            ("threshold", r.threshold),
            ("in_flight", r.in_flight),
            ("priority", u64::from(r.priority.level())),
        ],
    )
}

/// An adaptive concurrency limiter with priority partitions.
#[pyclass(module = "guards", name = "Limiter", frozen)]
#[derive(Debug)]
pub struct PyLimiter {
    /// Boxed: core's state is cache-line padded.
    l: Box<Limiter>,
}

impl PyLimiter {
    fn permit(slf: &Bound<'_, Self>, p: LimiterPermit) -> PyLimiterPermit {
        PyLimiterPermit {
            start: p.start().as_u64(),
            in_flight: p.in_flight(),
            threshold: p.threshold(),
            priority: p.priority().level(),
            permit: Granted::new(slf.clone().unbind(), p),
        }
    }
}

/// The `stats()` dict of a limiter (every scalar counter of core's stats).
fn limiter_stats<'py>(py: Python<'py>, l: &Limiter) -> PyResult<Bound<'py, PyDict>> {
    let s = l.stats();
    util::stats_dict(
        py,
        &[
            ("acquired", s.acquired),
            ("rejected_limit_reached", s.rejected_limit_reached),
            ("rejected_partition_cap", s.rejected_partition_cap),
            ("rejected_reserved", s.rejected_reserved),
            ("succeeded", s.succeeded),
            ("dropped", s.dropped),
            ("ignored", s.ignored),
            ("windows", s.windows),
            ("limit_changes", s.limit_changes),
            ("folds_skipped", s.folds_skipped),
            ("limit", s.limit),
            ("in_flight", s.in_flight),
        ],
    )
}

#[pymethods]
impl PyLimiter {
    /// `Limiter(limit=None, window=0.1, min_window_samples=10, partitions=None,
    /// min_retry_after=0.001, max_retry_after=1.0)`. `limit`: a `Limit` object, an int (a
    /// fixed limit) or a mapping with `algorithm` (default: `VegasLimit()`). `partitions`:
    /// up to 8 mappings (index = priority) with `share` (of the limit a class may fill,
    /// 0 < share <= 1) and `max_in_flight` (a cap), each no larger than the more important
    /// class's.
    #[new]
    #[pyo3(
        signature = (*, limit = None, window = None, min_window_samples = None, partitions = None, min_retry_after = None, max_retry_after = None),
        text_signature = "(*, limit=None, window=0.1, min_window_samples=10, partitions=None, min_retry_after=0.001, max_retry_after=1.0)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        limit: Option<&Bound<'_, PyAny>>,
        window: Option<&Bound<'_, PyAny>>,
        min_window_samples: Option<&Bound<'_, PyAny>>,
        partitions: Option<&Bound<'_, PyAny>>,
        min_retry_after: Option<&Bound<'_, PyAny>>,
        max_retry_after: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut c = LimiterConfig::default();
        c.limit = limit::limit_config_arg(limit, c.limit)?;
        if let Some(v) = given(window) {
            c.window = util::get_duration("window", v, Ctx::Config)?;
        }
        if let Some(v) = given(min_window_samples) {
            c.min_window_samples = util::get_u64("min_window_samples", v, Ctx::Config)?;
        }
        c.partitions = partitions_arg(partitions)?;
        if let Some(v) = given(min_retry_after) {
            c.min_retry_after = util::get_duration("min_retry_after", v, Ctx::Config)?;
        }
        if let Some(v) = given(max_retry_after) {
            c.max_retry_after = util::get_duration("max_retry_after", v, Ctx::Config)?;
        }
        let l = Limiter::new(c).map_err(|e| errors::config_error(py, e))?;
        Ok(PyLimiter { l: Box::new(l) })
    }

    /// The configuration (durations in seconds; `limit` and `partitions` as dicts).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.l.config();
        let d = PyDict::new(py);
        d.set_item("limit", limit::config_dict(py, &c.limit)?)?;
        d.set_item("window", util::secs(c.window))?;
        d.set_item("min_window_samples", c.min_window_samples)?;
        let parts = PyList::empty(py);
        for p in &c.partitions {
            let pd = PyDict::new(py);
            pd.set_item("share", p.share)?;
            pd.set_item("max_in_flight", p.max_in_flight)?;
            parts.append(pd)?;
        }
        d.set_item("partitions", parts)?;
        d.set_item("min_retry_after", util::secs(c.min_retry_after))?;
        d.set_item("max_retry_after", util::secs(c.max_retry_after))?;
        Ok(d)
    }

    /// Take a slot for a call of class `priority` (0..=7, default 1) starting at `now`:
    /// a permit, or `LimitExceeded` (with `reason`, `retry_after`, `threshold`,
    /// `in_flight`, `priority`).
    #[pyo3(signature = (priority = None, now = None))]
    fn acquire(
        slf: &Bound<'_, Self>,
        priority: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyLimiterPermit> {
        let py = slf.py();
        let p = priority_arg(priority)?;
        let now = util::get_now(py, now)?;
        match slf.get().l.try_acquire(now, p) {
            Ok(permit) => Ok(Self::permit(slf, permit)),
            Err(r) => Err(rejected_error(py, r, now)),
        }
    }

    /// Like `acquire`, but `None` instead of raising.
    #[pyo3(signature = (priority = None, now = None))]
    fn try_acquire(
        slf: &Bound<'_, Self>,
        priority: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyLimiterPermit>> {
        let p = priority_arg(priority)?;
        let now = util::get_now(slf.py(), now)?;
        Ok(slf
            .get()
            .l
            .try_acquire(now, p)
            .ok()
            .map(|permit| Self::permit(slf, permit)))
    }

    /// The current limit.
    #[getter]
    fn limit(&self) -> u64 {
        self.l.limit()
    }

    /// Calls in flight now.
    fn in_flight(&self) -> u64 {
        self.l.in_flight()
    }

    /// How many calls of class `priority` may be in flight now.
    #[pyo3(signature = (priority = None))]
    fn threshold(&self, priority: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        Ok(self.l.threshold(priority_arg(priority)?))
    }

    /// The retry-after hint a refusal would carry now, in seconds.
    fn retry_after(&self) -> f64 {
        util::secs(self.l.retry_after())
    }

    /// `retry_after` in integer nanoseconds.
    fn retry_after_ns(&self) -> u64 {
        self.l.retry_after().as_u64()
    }

    /// Counters: `acquired`, `rejected_limit_reached`, `rejected_partition_cap`,
    /// `rejected_reserved`, `succeeded`, `dropped`, `ignored`, `windows`,
    /// `limit_changes`, `folds_skipped`, `limit`, `in_flight` (per-priority refusals:
    /// `rejected_by_priority()`).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        limiter_stats(py, &self.l)
    }

    /// Refusals per priority class (a list of 8 ints, index = class).
    fn rejected_by_priority(&self) -> Vec<u64> {
        self.l.stats().rejected_by_priority.to_vec()
    }

    fn __repr__(&self) -> String {
        format!(
            "Limiter(algorithm='{}', limit={}, in_flight={})",
            self.l.config().limit.algorithm().name(),
            self.l.limit(),
            self.l.in_flight()
        )
    }
}

/// A limiter slot. Report its outcome once: `on_success`, `on_dropped` or `on_ignore`.
#[pyclass(module = "guards", name = "LimiterPermit", frozen)]
#[derive(Debug)]
pub struct PyLimiterPermit {
    permit: Granted<Py<PyLimiter>>,
    start: u64,
    in_flight: u64,
    threshold: u64,
    priority: u8,
}

impl Owner for Py<PyLimiter> {
    type Permit = LimiterPermit;

    fn give_back(&self, p: LimiterPermit) {
        self.get().l.on_ignore(p);
    }
}

impl Outcomes for Py<PyLimiter> {
    fn success(&self, p: LimiterPermit, now: Nanos) {
        self.get().l.on_success(p, now);
    }

    fn dropped(&self, p: LimiterPermit, now: Nanos) {
        self.get().l.on_dropped(p, now);
    }
}

#[pymethods]
impl PyLimiterPermit {
    /// The call succeeded at `now` (its RTT is a sample). `False` if already reported.
    #[pyo3(signature = (now = None))]
    fn on_success(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        self.permit.on_success(py, now)
    }

    /// The call was dropped at `now` (timed out, or refused downstream). `False` if
    /// already reported.
    #[pyo3(signature = (now = None))]
    fn on_dropped(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        self.permit.on_dropped(py, now)
    }

    /// Give the slot back without a sample. `False` if already reported.
    fn on_ignore(&self) -> bool {
        self.permit.give_back()
    }

    /// Whether an outcome has been reported.
    #[getter]
    fn done(&self) -> bool {
        self.permit.done()
    }

    /// When the call started (integer nanoseconds).
    #[getter]
    fn start(&self) -> u64 {
        self.start
    }

    /// Calls in flight right after this one was admitted.
    #[getter]
    fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// The threshold it was admitted under.
    #[getter]
    fn threshold(&self) -> u64 {
        self.threshold
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
        self.permit.exit(py, exc_type)
    }

    fn __repr__(&self) -> String {
        format!(
            "LimiterPermit(priority={}, in_flight={}, threshold={}, done={})",
            self.priority,
            self.in_flight,
            self.threshold,
            util::py_bool(self.done())
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLimiter>()?;
    m.add_class::<PyLimiterPermit>()?;
    Ok(())
}
