//! `Hedging`: when to send a second copy of a slow idempotent request. The hedge delay is
//! a tracked latency quantile (`delay_quantile`, clamped to `min_delay..=max_delay`),
//! refreshed every `refresh_interval`; hedges are paid through a retry gate (e.g. a
//! `RetryBudget`) with the cause `"hedge"`.

use guards::handle::InPlace;
use guards::schema::HEDGING;
use guards_core::hedging::{HedgeDecision, Hedging};
use guards_core::Nanos;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::config::{self, Args};
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
    /// Built in place by ffi: it holds a 55 KB latency tracker.
    pub(crate) h: InPlace<Hedging>,
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
    /// min_samples=100, refresh_interval=0.1, tracker=...)`; durations in seconds;
    /// `tracker` is a `LatencyTracker` (its settings) or a mapping of its settings (errors
    /// name them `tracker.window`, ...); left out, the default tracker.
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, delay_quantile=0.95, min_delay=0.001, max_delay=10.0, max_hedges=1, min_samples=100, refresh_interval=0.1, tracker=None)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = args.py();
        let mut a = Args::collect("Hedging", &[], args, kwargs)?;
        let mut ready = None;
        if let Some(t) = a.take("tracker") {
            match latency_tracker::tracker_arg(&t)? {
                latency_tracker::TrackerArg::Ready(c) => ready = Some(c),
                latency_tracker::TrackerArg::Settings(pairs) => {
                    for (k, v) in pairs {
                        a.push(k, v);
                    }
                }
            }
        }
        let mut c = HEDGING.defaults();
        a.apply(&HEDGING, &mut c)?;
        if let Some(t) = ready {
            c.tracker = t;
        }
        HEDGING.validate(&c).map_err(|f| errors::failure(py, f))?;
        let h = InPlace::<Hedging>::new(c).map_err(|f| errors::failure(py, f))?;
        Ok(PyHedging { h })
    }

    /// The settings (durations in seconds; `tracker` as a dict).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config::to_dict(py, &HEDGING, self.h.config())
    }

    /// Record a finished call's latency (a duration) at `now`.
    #[pyo3(signature = (latency, now = None))]
    fn record_latency(
        &self,
        latency: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let l = util::get_duration("latency", latency, Ctx::Arg)?;
        self.h.record_latency(util::get_now(now)?, l);
        Ok(())
    }

    /// Record a finished call's latency in integer nanoseconds at `now`.
    #[pyo3(signature = (latency_ns, now = None))]
    fn record_latency_ns(
        &self,
        latency_ns: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let l = Nanos(util::get_u64("latency_ns", latency_ns, Ctx::Arg)?);
        self.h.record_latency(util::get_now(now)?, l);
        Ok(())
    }

    /// The current hedge delay in seconds, or `None` with too few samples.
    #[pyo3(signature = (now = None))]
    fn hedge_delay(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<Option<f64>> {
        Ok(self.h.hedge_delay(util::get_now(now)?).map(util::secs))
    }

    /// `hedge_delay` in integer nanoseconds.
    #[pyo3(signature = (now = None))]
    fn hedge_delay_ns(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
        Ok(self.h.hedge_delay(util::get_now(now)?).map(Nanos::as_u64))
    }

    /// Should the request started at `request_started` (integer nanoseconds), which has
    /// sent `hedges_sent` hedges so far, send another at `now`? A hedge is asked of
    /// `gate` (cause `"hedge"`) last, and only for idempotent requests.
    #[pyo3(signature = (request_started, hedges_sent = None, *, idempotent = None, gate = None, now = None))]
    fn should_hedge(
        &self,
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
        let now = util::get_now(now)?;
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
        q: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<f64>> {
        let q = latency_tracker::q_arg(q)?;
        Ok(self
            .h
            .tracker()
            .quantile(util::get_now(now)?, q)
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
