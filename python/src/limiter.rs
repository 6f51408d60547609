//! `Limiter`: a lock-free adaptive concurrency limit with priority partitions (core's
//! `Limiter`, built in place by ffi, configured through ffi's schema). A call takes a
//! `LimiterPermit` (or is refused with `LimitExceeded`) and gives it back with its outcome:
//! `report(outcome)` (the call contract decides: a success is an RTT sample, a timeout or
//! an overload answer a drop, anything else no sample), or the primitives `on_success`,
//! `on_dropped`, `on_ignore`. Samples are folded into the limit algorithm once per
//! `window`; a move of the limit is emitted as a `limit_change` event.
//!
//! Permits give their slot back exactly once; a second outcome is a no-op returning
//! `False`. As a context manager a permit reports how the block ended (the exception
//! classified by `guards.classify_exception`). A permit garbage-collected without an
//! outcome is ignored (its slot comes back, no sample).

use guards::handle::InPlace;
use guards::names::Limiter;
use guards::schema::LIMITER;
use guards_core::limiter::{LimiterPermit, LimiterRejected};
use guards_core::priority::MAX_PRIORITIES;
use guards_core::{Nanos, Outcome, Priority};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyTuple, PyType};

use crate::clock;
use crate::config::{self, Args};
use crate::errors::{self, LimitExceeded};
use crate::events::{self, Op};
use crate::limit;
use crate::outcome;
use crate::permit::{self, Granted, Issuer};
use crate::util::{self, given, Ctx};

/// `partitions=`: a list of at most 8 mappings (entry `i` for priority `i`) with `share`
/// and `max_in_flight`; a class (or a key) not given repeats the class before.
fn apply_partitions(
    py: Python<'_>,
    c: &mut guards_core::LimiterConfig,
    v: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let items = util::short_list("partitions", v, MAX_PRIORITIES)?;
    let mut shares = Vec::with_capacity(items.len());
    let mut caps = Vec::with_capacity(items.len());
    for item in &items {
        if item.is_none() {
            shares.push(None);
            caps.push(None);
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
        shares.push(util::mapping_get(m, "share")?);
        caps.push(util::mapping_get(m, "max_in_flight")?);
    }
    config::apply_per_priority(py, &LIMITER, c, "partitions", Some("share"), &shares)?;
    config::apply_per_priority(py, &LIMITER, c, "partitions", Some("max_in_flight"), &caps)
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

pub(crate) fn rejected_error(py: Python<'_>, r: LimiterRejected, now: Nanos) -> PyErr {
    let wait = r.retry_after(now);
    refusal_with(
        py,
        &py.get_type::<LimitExceeded>(),
        format!(
            "concurrency limit reached ({}: {} in flight, threshold {}); try again in {}",
            r.reason.name(),
            r.in_flight,
            r.threshold,
            errors::human(wait)
        ),
        r.reason.name(),
        wait,
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
    pub(crate) l: InPlace<Limiter>,
}

impl PyLimiter {
    fn permit(
        slf: &Bound<'_, Self>,
        p: LimiterPermit,
        operation: Option<Bound<'_, PyAny>>,
    ) -> PyLimiterPermit {
        PyLimiterPermit {
            start: p.start().as_u64(),
            in_flight: p.in_flight(),
            threshold: p.threshold(),
            priority: p.priority().level(),
            permit: Granted::new(Issuer(slf.clone().unbind()), p),
            operation: operation.map(Bound::unbind),
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

/// Report `outcome` for `p` to `l` at `now`, emitting a `limit_change` if the limit moved.
pub(crate) fn settle_limiter<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    l: &Limiter,
    p: LimiterPermit,
    outcome: Outcome,
    now: Nanos,
    operation: Op<'_, 'py>,
) {
    let before = l.limit();
    l.report(p, outcome, now);
    let after = l.limit();
    if after != before {
        events::limit_change(py, source, operation, before, after);
    }
}

#[pymethods]
impl PyLimiter {
    /// `Limiter(limit=VegasLimit(), **settings)`. `limit`: a `Limit` object, an int (a
    /// fixed limit) or a mapping with `algorithm`. `partitions`: up to 8 mappings (index =
    /// priority) with `share` (of the limit a class may fill, 0 < share <= 1) and
    /// `max_in_flight` (a cap), each no larger than the more important class's; a class
    /// left out repeats the one before.
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(limit=None, *, window=0.1, min_window_samples=10, partitions=None, min_retry_after=0.001, max_retry_after=1.0)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = args.py();
        let mut a = Args::collect("Limiter", &["limit"], args, kwargs)?;
        let limit = a.take("limit");
        let partitions = a.take("partitions");
        let mut c = LIMITER.defaults();
        if let Some(v) = limit {
            if v.is_none() {
                return Err(config::wrong_type(
                    "limit",
                    "a guards.Limit, an int or a mapping with `algorithm`",
                    &v,
                ));
            }
            c.limit = limit::limit_config_arg(&v)?;
        }
        a.apply(&LIMITER, &mut c)?;
        if let Some(v) = partitions {
            apply_partitions(py, &mut c, &v)?;
        }
        LIMITER.validate(&c).map_err(|f| errors::failure(py, f))?;
        let l = InPlace::<Limiter>::new(c).map_err(|f| errors::failure(py, f))?;
        Ok(PyLimiter { l })
    }

    /// The settings (durations in seconds; `limit` and `partitions` as dicts).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.l.config();
        let d = config::to_dict(py, &LIMITER, c)?;
        d.set_item("limit", limit::config_dict(py, &c.limit)?)?;
        Ok(d)
    }

    /// Take a slot for a call of class `priority` (0..=7, default 1) starting at `now`:
    /// a permit, or `LimitExceeded` (with `reason`, `retry_after`, `threshold`,
    /// `in_flight`, `priority`; emitted as a `refusal` named `operation`).
    #[pyo3(signature = (priority = None, now = None, *, operation = None))]
    fn acquire(
        slf: &Bound<'_, Self>,
        priority: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyLimiterPermit> {
        let py = slf.py();
        let p = priority_arg(priority)?;
        let now = util::get_now(now)?;
        let op = given(operation).cloned();
        match slf.get().l.try_acquire(now, p) {
            Ok(permit) => Ok(Self::permit(slf, permit, op)),
            Err(r) => {
                let err = rejected_error(py, r, now);
                events::refusal(py, slf.as_any(), Op::given(op.as_ref()), &err);
                Err(err)
            }
        }
    }

    /// Like `acquire`, but `None` instead of raising.
    #[pyo3(signature = (priority = None, now = None, *, operation = None))]
    fn try_acquire(
        slf: &Bound<'_, Self>,
        priority: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyLimiterPermit>> {
        let p = priority_arg(priority)?;
        let now = util::get_now(now)?;
        let op = given(operation).cloned();
        Ok(slf
            .get()
            .l
            .try_acquire(now, p)
            .ok()
            .map(|permit| Self::permit(slf, permit, op)))
    }

    /// The current limit.
    #[getter]
    fn limit(&self) -> u64 {
        self.l.limit()
    }

    /// Calls in flight now.
    #[getter]
    fn in_flight(&self) -> u64 {
        self.l.in_flight()
    }

    /// The ceiling set by `set_max_limit` (or by a fleet the limiter is attached to), or
    /// `None`.
    #[getter]
    fn max_limit(&self) -> Option<u64> {
        self.l.max_limit()
    }

    /// Cap the limit at `max_limit` (`0..=2**32-1`; 0 refuses every call) whatever the
    /// algorithm says; the algorithm keeps adapting beneath it and the permits in flight
    /// are kept. Returns the previous ceiling (`None`: there was none).
    fn set_max_limit(&self, py: Python<'_>, max_limit: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
        let c = util::get_u64("max_limit", max_limit, Ctx::Arg)?;
        self.l
            .set_max_limit(c)
            .map_err(|e| errors::config_error(py, e))
    }

    /// Remove the ceiling: the algorithm's limit rules again. Returns the previous
    /// ceiling.
    fn clear_max_limit(&self) -> Option<u64> {
        self.l.clear_max_limit()
    }

    /// How many calls of class `priority` may be in flight now.
    #[pyo3(signature = (priority = None))]
    fn threshold(&self, priority: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        Ok(self.l.threshold(priority_arg(priority)?))
    }

    /// The retry-after hint a refusal would carry now, in seconds.
    #[getter]
    fn retry_after(&self) -> f64 {
        util::secs(self.l.retry_after())
    }

    /// `retry_after` in integer nanoseconds.
    #[getter]
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

/// A limiter slot. Report its outcome once: `report(outcome)`, or the primitives
/// `on_success`, `on_dropped`, `on_ignore`.
#[pyclass(module = "guards", name = "LimiterPermit", frozen)]
#[derive(Debug)]
pub struct PyLimiterPermit {
    permit: Granted<Issuer<PyLimiter>>,
    start: u64,
    in_flight: u64,
    threshold: u64,
    priority: u8,
    operation: Option<Py<PyAny>>,
}

impl guards::permit::Owner for Issuer<PyLimiter> {
    type Permit = LimiterPermit;

    fn give_back(&self, p: LimiterPermit) {
        self.0.get().l.on_ignore(p);
    }
}

impl PyLimiterPermit {
    /// Report `outcome` at `now`: `false` if already reported.
    fn finish(&self, py: Python<'_>, outcome: Outcome, now: Nanos) -> bool {
        let Some(p) = self.permit.take() else {
            return false;
        };
        let owner = self.permit.owner().0.bind(py);
        let op = Op::given(self.operation.as_ref().map(|o| o.bind(py)));
        settle_limiter(py, owner.as_any(), &owner.get().l, p, outcome, now, op);
        true
    }
}

#[pymethods]
impl PyLimiterPermit {
    /// Hand the slot back with how the call ended (the call contract's outcome) at `now`.
    /// `False` if already reported.
    #[pyo3(signature = (outcome, now = None))]
    fn report(
        &self,
        py: Python<'_>,
        outcome: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let o = outcome::outcome_arg(outcome)?;
        Ok(self.finish(py, o, util::get_now(now)?))
    }

    /// The primitive `on_success`: the call succeeded at `now` (its RTT is a sample).
    /// `False` if already reported.
    #[pyo3(signature = (now = None))]
    fn on_success(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        Ok(self.finish(py, Outcome::Success, util::get_now(now)?))
    }

    /// The primitive `on_dropped`: the call was dropped at `now` (timed out, or refused
    /// downstream; reported as `"overloaded"`). `False` if already reported.
    #[pyo3(signature = (now = None))]
    fn on_dropped(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        Ok(self.finish(py, Outcome::Overloaded, util::get_now(now)?))
    }

    /// The primitive `on_ignore`: give the slot back without a sample. `False` if already
    /// reported.
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

    /// Report how the block ended (the exception leaving it classified by
    /// `guards.classify_exception`); the exception is never suppressed.
    #[pyo3(signature = (_exc_type = None, exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let o = permit::exit_outcome(exc)?;
        self.finish(py, o, clock::now());
        Ok(false)
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
