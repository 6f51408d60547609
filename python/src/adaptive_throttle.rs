//! `AdaptiveThrottle`: client-side adaptive throttling. Over a sliding window the client
//! counts its requests and the ones the backend accepted, and rejects new requests locally
//! with probability `max(0, (requests - k * accepts) / (requests + 1))` (shaped by
//! `aggression`, capped at `max_reject_probability`), so that a struggling backend is
//! not sent work it will refuse anyway.

use guards::handle::InPlace;
use guards::schema::ADAPTIVE_THROTTLE;
use guards_core::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::backoff;
use crate::config::{self, Args};
use crate::errors::{self, Throttled};
use crate::events::{self, Op};
use crate::outcome;
use crate::util::{self, given, Ctx};

/// Client-side adaptive throttling.
#[pyclass(module = "guards", name = "AdaptiveThrottle", frozen)]
#[derive(Debug)]
pub struct PyAdaptiveThrottle {
    /// Built in place by ffi: core's state is cache-line aligned.
    pub(crate) t: InPlace<AdaptiveThrottle>,
}

impl PyAdaptiveThrottle {
    fn reject(
        &self,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let now = util::get_now(now)?;
        Ok(match backoff::rng_arg(rng)? {
            Some(r) => self.t.should_reject_with(now, &r.get().rng),
            None => self.t.should_reject(now),
        })
    }
}

#[pymethods]
impl PyAdaptiveThrottle {
    /// `AdaptiveThrottle(window=120.0, k=2.0, aggression=1.0, max_reject_probability=1.0,
    /// min_requests=0, count_rejected=True, seed=0, success_rate_threshold=...)`.
    /// `success_rate_threshold` (0.001..=1.0) is another way to give `k` (= 1 /
    /// threshold, as Envoy spells it); give one or the other.
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, window=120.0, k=2.0, aggression=1.0, max_reject_probability=1.0, min_requests=0, count_rejected=True, seed=0, success_rate_threshold=None)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let a = Args::collect("AdaptiveThrottle", &[], args, kwargs)?;
        Self::build(args.py(), AdaptiveThrottleConfig::default(), a)
    }

    /// Envoy's admission-control defaults: a 30 s window, success rate threshold 0.95,
    /// aggression 1, rejection capped at 0.8, rejected requests not counted. Any setting
    /// may be overridden.
    #[staticmethod]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, window=30.0, k=None, aggression=1.0, max_reject_probability=0.8, min_requests=0, count_rejected=False, seed=0, success_rate_threshold=0.95)"
    )]
    fn envoy(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let a = Args::collect("AdaptiveThrottle.envoy", &[], args, kwargs)?;
        Self::build(args.py(), AdaptiveThrottleConfig::strict_success_rate(), a)
    }

    /// The settings (`window` in seconds).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config::to_dict(py, &ADAPTIVE_THROTTLE, self.t.config())
    }

    /// `1 / k`: the success rate below which requests start to be rejected.
    #[getter]
    fn success_rate_threshold(&self) -> f64 {
        self.t.config().success_rate_threshold()
    }

    /// Decide a request at `now`: `True` to reject it locally (counted), `False` to send
    /// it (counted as a request). `rng` overrides the throttle's own generator.
    #[pyo3(signature = (now = None, *, rng = None))]
    fn should_reject(
        &self,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.reject(now, rng)
    }

    /// Like `should_reject`, but raises `Throttled` (reason `"throttled"`; emitted as a
    /// `refusal` named `operation`) instead of returning `True`.
    #[pyo3(signature = (now = None, *, rng = None, operation = None))]
    fn admit(
        slf: &Bound<'_, Self>,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let py = slf.py();
        if slf.get().reject(now, rng)? {
            let err = errors::refusal(
                &py.get_type::<Throttled>(),
                "request throttled locally: the backend has been refusing requests".to_owned(),
                Some("throttled"),
                None,
            );
            events::refusal(py, slf.as_any(), Op::given(given(operation)), &err);
            return Err(err);
        }
        Ok(())
    }

    /// Tell the throttle how a request it let through ended (the call contract's outcome)
    /// at `now`: an answer the backend accepted, one it refused or did not give in time, or
    /// nothing (a call that never reached it). Returns the verdict: `"accepted"`,
    /// `"rejected_by_backend"` or `"nothing"`.
    #[pyo3(signature = (outcome, now = None))]
    fn report(
        &self,
        outcome: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<&'static str> {
        let o = outcome::outcome_arg(outcome)?;
        Ok(self.t.report(util::get_now(now)?, o).name())
    }

    /// Record that the backend accepted a request at `now`.
    #[pyo3(signature = (now = None))]
    fn on_accepted(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.t.on_accepted(util::get_now(now)?);
        Ok(())
    }

    /// Record that the backend refused a request at `now` (counted in the stats only).
    #[pyo3(signature = (now = None))]
    fn on_rejected_by_backend(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.t.on_rejected_by_backend(util::get_now(now)?);
        Ok(())
    }

    /// The probability that a request at `now` is rejected locally.
    #[pyo3(signature = (now = None))]
    fn reject_probability(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
        Ok(self.t.reject_probability(util::get_now(now)?))
    }

    /// `{"requests", "accepts"}` counted in the window at `now`.
    #[pyo3(signature = (now = None))]
    fn window<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let w = self.t.window(util::get_now(now)?);
        util::stats_dict(py, &[("requests", w.requests), ("accepts", w.accepts)])
    }

    /// Counters: `admitted`, `throttled`, `accepted`, `rejected_by_backend`, `stale`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.t.stats();
        util::stats_dict(
            py,
            &[
                ("admitted", s.admitted),
                ("throttled", s.throttled),
                ("accepted", s.accepted),
                ("rejected_by_backend", s.rejected_by_backend),
                ("stale", s.stale),
            ],
        )
    }

    fn __repr__(&self) -> String {
        let c = self.t.config();
        format!(
            "AdaptiveThrottle(window={:?}, k={:?})",
            util::secs(c.window),
            c.k
        )
    }
}

impl PyAdaptiveThrottle {
    /// A throttle from `base` with the settings given applied to it.
    fn build(py: Python<'_>, mut base: AdaptiveThrottleConfig, mut a: Args<'_>) -> PyResult<Self> {
        let threshold = a.take("success_rate_threshold").filter(|v| !v.is_none());
        if threshold.is_some() && a.names().contains(&"k") {
            return Err(PyTypeError::new_err(
                "give `k` or `success_rate_threshold`, not both",
            ));
        }
        a.apply(&ADAPTIVE_THROTTLE, &mut base)?;
        if let Some(v) = threshold {
            let t = util::get_f64("success_rate_threshold", &v, Ctx::Config)?;
            base = base
                .with_success_rate_threshold(t)
                .map_err(|e| errors::config_error(py, e))?;
        }
        ADAPTIVE_THROTTLE
            .validate(&base)
            .map_err(|f| errors::failure(py, f))?;
        let t = InPlace::<AdaptiveThrottle>::new(base).map_err(|f| errors::failure(py, f))?;
        Ok(PyAdaptiveThrottle { t })
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAdaptiveThrottle>()?;
    Ok(())
}
