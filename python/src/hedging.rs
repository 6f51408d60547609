//! `Hedging`: when to send a second copy of a slow idempotent request. The hedge delay is
//! a tracked latency quantile (`delay_quantile`, clamped to `min_delay..=max_delay`),
//! refreshed every `refresh_interval`; hedges are paid through a retry gate (e.g. a
//! `RetryBudget`) with the cause `"hedge"`.

use guards_core::hedging::{HedgeDecision, Hedging, HedgingConfig};
use guards_core::Nanos;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;
use crate::latency_tracker;
use crate::retry_policy::Gate;
use crate::util::{self, given, Ctx};

/// What to do about a hedge now: `decision` is `"hedge_now"`, `"wait_until"` (with `at`,
/// the instant in integer nanoseconds) or `"never"` (with `reason`: `not_idempotent`,
/// `limit_reached`, `no_latency_data`, `budget_exhausted`).
#[pyclass(module = "guards", name = "HedgeDecision", frozen, eq)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyHedgeDecision {
    d: HedgeDecision,
}

#[pymethods]
impl PyHedgeDecision {
    /// `"hedge_now"`, `"wait_until"` or `"never"`.
    #[getter]
    fn decision(&self) -> &'static str {
        match self.d {
            HedgeDecision::HedgeNow => "hedge_now",
            HedgeDecision::WaitUntil(_) => "wait_until",
            HedgeDecision::Never(_) => "never",
        }
    }

    /// Whether to send the hedge now.
    #[getter]
    fn hedge(&self) -> bool {
        matches!(self.d, HedgeDecision::HedgeNow)
    }

    /// For `"wait_until"`: the instant (integer nanoseconds) to ask again; else `None`.
    #[getter]
    fn at(&self) -> Option<u64> {
        match self.d {
            HedgeDecision::WaitUntil(at) => Some(at.as_u64()),
            _ => None,
        }
    }

    /// For `"never"`: why; else `None`.
    #[getter]
    fn reason(&self) -> Option<&'static str> {
        match self.d {
            HedgeDecision::Never(r) => Some(r.name()),
            _ => None,
        }
    }

    fn __bool__(&self) -> bool {
        self.hedge()
    }

    fn __repr__(&self) -> String {
        match self.d {
            HedgeDecision::HedgeNow => "HedgeDecision('hedge_now')".to_owned(),
            HedgeDecision::WaitUntil(at) => {
                format!("HedgeDecision('wait_until', at={})", at.as_u64())
            }
            HedgeDecision::Never(r) => format!("HedgeDecision('never', reason='{}')", r.name()),
        }
    }
}

/// Hedged requests after a tracked latency quantile.
#[pyclass(module = "guards", name = "Hedging", frozen)]
pub struct PyHedging {
    /// Boxed: it holds a 55 KB latency tracker.
    h: Box<Hedging>,
}

impl std::fmt::Debug for PyHedging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hedging")
            .field("config", self.h.config())
            .finish()
    }
}

#[pymethods]
impl PyHedging {
    /// `Hedging(delay_quantile=0.95, min_delay=0.001, max_delay=10.0, max_hedges=1,
    /// min_samples=100, refresh_interval=0.1, tracker=None)`; durations in seconds;
    /// `tracker` is a `LatencyTracker` (its settings) or a mapping of its settings (errors
    /// name them `tracker.window`, ...).
    #[new]
    #[pyo3(
        signature = (
            *,
            delay_quantile = None,
            min_delay = None,
            max_delay = None,
            max_hedges = None,
            min_samples = None,
            refresh_interval = None,
            tracker = None
        ),
        text_signature = "(*, delay_quantile=0.95, min_delay=0.001, max_delay=10.0, max_hedges=1, min_samples=100, refresh_interval=0.1, tracker=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        delay_quantile: Option<&Bound<'_, PyAny>>,
        min_delay: Option<&Bound<'_, PyAny>>,
        max_delay: Option<&Bound<'_, PyAny>>,
        max_hedges: Option<&Bound<'_, PyAny>>,
        min_samples: Option<&Bound<'_, PyAny>>,
        refresh_interval: Option<&Bound<'_, PyAny>>,
        tracker: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut c = HedgingConfig::default();
        if let Some(v) = given(delay_quantile) {
            c.delay_quantile = util::get_f64("delay_quantile", v, Ctx::Config)?;
        }
        if let Some(v) = given(min_delay) {
            c.min_delay = util::get_duration("min_delay", v, Ctx::Config)?;
        }
        if let Some(v) = given(max_delay) {
            c.max_delay = util::get_duration("max_delay", v, Ctx::Config)?;
        }
        if let Some(v) = given(max_hedges) {
            c.max_hedges = util::get_u32("max_hedges", v, Ctx::Config, "0..=16")?;
        }
        if let Some(v) = given(min_samples) {
            c.min_samples = util::get_u64("min_samples", v, Ctx::Config)?;
        }
        if let Some(v) = given(refresh_interval) {
            c.refresh_interval = util::get_duration("refresh_interval", v, Ctx::Config)?;
        }
        c.tracker = latency_tracker::tracker_config_arg(tracker)?;
        let h = Hedging::new(c).map_err(|e| errors::config_error(py, e))?;
        Ok(PyHedging { h: Box::new(h) })
    }

    /// The configuration (durations in seconds; `tracker` as a dict).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.h.config();
        let d = PyDict::new(py);
        d.set_item("delay_quantile", c.delay_quantile)?;
        d.set_item("min_delay", util::secs(c.min_delay))?;
        d.set_item("max_delay", util::secs(c.max_delay))?;
        d.set_item("max_hedges", c.max_hedges)?;
        d.set_item("min_samples", c.min_samples)?;
        d.set_item("refresh_interval", util::secs(c.refresh_interval))?;
        d.set_item("tracker", latency_tracker::config_dict(py, &c.tracker)?)?;
        Ok(d)
    }

    /// Record a finished call's latency (a duration) at `now`.
    #[pyo3(signature = (latency, now = None))]
    fn record_latency(
        &self,
        py: Python<'_>,
        latency: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let l = util::get_duration("latency", latency, Ctx::Arg)?;
        self.h.record_latency(util::get_now(py, now)?, l);
        Ok(())
    }

    /// Record a finished call's latency in integer nanoseconds at `now`.
    #[pyo3(signature = (latency_ns, now = None))]
    fn record_latency_ns(
        &self,
        py: Python<'_>,
        latency_ns: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let l = Nanos(util::get_u64("latency_ns", latency_ns, Ctx::Arg)?);
        self.h.record_latency(util::get_now(py, now)?, l);
        Ok(())
    }

    /// The current hedge delay in seconds, or `None` with too few samples.
    #[pyo3(signature = (now = None))]
    fn hedge_delay(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<Option<f64>> {
        Ok(self.h.hedge_delay(util::get_now(py, now)?).map(util::secs))
    }

    /// `hedge_delay` in integer nanoseconds.
    #[pyo3(signature = (now = None))]
    fn hedge_delay_ns(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<u64>> {
        Ok(self
            .h
            .hedge_delay(util::get_now(py, now)?)
            .map(Nanos::as_u64))
    }

    /// Should the request started at `request_started` (integer nanoseconds), which has
    /// sent `hedges_sent` hedges so far, send another at `now`? A hedge is asked of
    /// `gate` (cause `"hedge"`) last, and only for idempotent requests.
    #[pyo3(signature = (request_started, hedges_sent = None, *, idempotent = None, gate = None, now = None))]
    fn should_hedge(
        &self,
        py: Python<'_>,
        request_started: &Bound<'_, PyAny>,
        hedges_sent: Option<&Bound<'_, PyAny>>,
        idempotent: Option<&Bound<'_, PyAny>>,
        gate: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyHedgeDecision> {
        let started = util::get_instant("request_started", request_started)?;
        let sent = match given(hedges_sent) {
            Some(v) => util::get_u32("hedges_sent", v, Ctx::Arg, "an int in 0..=2**32-1")?,
            None => 0,
        };
        let idempotent = match given(idempotent) {
            Some(v) => util::get_bool("idempotent", v)?,
            None => true,
        };
        let now = util::get_now(py, now)?;
        let gate = Gate::from_arg(gate)?;
        let d = self.h.should_hedge(
            now,
            started,
            sent,
            idempotent,
            gate.as_ref().map(Gate::as_dyn),
        );
        if let Some(e) = gate.as_ref().and_then(Gate::take_error) {
            return Err(e);
        }
        Ok(PyHedgeDecision { d })
    }

    /// The tracked latency quantile `q` at `now` in seconds (the data the delay comes
    /// from), or `None` without samples.
    #[pyo3(signature = (q, now = None))]
    fn latency_quantile(
        &self,
        py: Python<'_>,
        q: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<f64>> {
        let q = latency_tracker::q_arg(q)?;
        Ok(self
            .h
            .tracker()
            .quantile(util::get_now(py, now)?, q)
            .map(util::secs))
    }

    /// Counters: `hedges`, `deferred` and one per refusal reason.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.h.stats();
        util::stats_dict(
            py,
            &[
                ("hedges", s.hedges),
                ("deferred", s.deferred),
                ("not_idempotent", s.not_idempotent),
                ("limit_reached", s.limit_reached),
                ("no_latency_data", s.no_latency_data),
                ("budget_exhausted", s.budget_exhausted),
            ],
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "Hedging(delay_quantile={:?}, max_hedges={})",
            self.h.config().delay_quantile,
            self.h.config().max_hedges
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyHedging>()?;
    m.add_class::<PyHedgeDecision>()?;
    Ok(())
}
