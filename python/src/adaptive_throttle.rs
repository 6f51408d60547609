//! `AdaptiveThrottle`: client-side adaptive throttling. Over a sliding window the client
//! counts its requests and the ones the backend accepted, and rejects new requests locally
//! with probability `max(0, (requests - k * accepts) / (requests + 1))` (shaped by
//! `aggression`, capped at `max_reject_probability`), so that a struggling backend is
//! not sent work it will refuse anyway.

use guards_core::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::backoff;
use crate::errors::{self, Throttled};
use crate::util::{self, given, Ctx};

/// Client-side adaptive throttling.
#[pyclass(module = "guards", name = "AdaptiveThrottle", frozen)]
#[derive(Debug)]
pub struct PyAdaptiveThrottle {
    /// Boxed: core's state may be cache-line aligned (see `check_pyclass_alignment`).
    t: Box<AdaptiveThrottle>,
}

impl PyAdaptiveThrottle {
    fn reject(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let now = util::get_now(py, now)?;
        Ok(match backoff::rng_arg(rng)? {
            Some(r) => self.t.should_reject_with(now, &r.get().rng),
            None => self.t.should_reject(now),
        })
    }
}

#[pymethods]
impl PyAdaptiveThrottle {
    /// `AdaptiveThrottle(window=120.0, k=2.0, aggression=1.0, max_reject_probability=1.0,
    /// min_requests=0, count_rejected=True, seed=0, success_rate_threshold=None)`.
    /// `success_rate_threshold` (0.001..=1.0) is another way to give `k` (= 1 /
    /// threshold, as Envoy spells it); give one or the other.
    #[new]
    #[pyo3(
        signature = (
            *,
            window = None,
            k = None,
            aggression = None,
            max_reject_probability = None,
            min_requests = None,
            count_rejected = None,
            seed = None,
            success_rate_threshold = None
        ),
        text_signature = "(*, window=120.0, k=2.0, aggression=1.0, max_reject_probability=1.0, min_requests=0, count_rejected=True, seed=0, success_rate_threshold=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        window: Option<&Bound<'_, PyAny>>,
        k: Option<&Bound<'_, PyAny>>,
        aggression: Option<&Bound<'_, PyAny>>,
        max_reject_probability: Option<&Bound<'_, PyAny>>,
        min_requests: Option<&Bound<'_, PyAny>>,
        count_rejected: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
        success_rate_threshold: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        Self::build(
            py,
            AdaptiveThrottleConfig::default(),
            window,
            k,
            aggression,
            max_reject_probability,
            min_requests,
            count_rejected,
            seed,
            success_rate_threshold,
        )
    }

    /// Envoy's admission-control defaults: a 30 s window, success rate threshold 0.95,
    /// aggression 1, rejection capped at 0.8, rejected requests not counted. Any setting
    /// may be overridden.
    #[staticmethod]
    #[pyo3(
        signature = (
            *,
            window = None,
            k = None,
            aggression = None,
            max_reject_probability = None,
            min_requests = None,
            count_rejected = None,
            seed = None,
            success_rate_threshold = None
        ),
        text_signature = "(*, window=30.0, k=None, aggression=1.0, max_reject_probability=0.8, min_requests=0, count_rejected=False, seed=0, success_rate_threshold=0.95)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn envoy(
        py: Python<'_>,
        window: Option<&Bound<'_, PyAny>>,
        k: Option<&Bound<'_, PyAny>>,
        aggression: Option<&Bound<'_, PyAny>>,
        max_reject_probability: Option<&Bound<'_, PyAny>>,
        min_requests: Option<&Bound<'_, PyAny>>,
        count_rejected: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
        success_rate_threshold: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        Self::build(
            py,
            AdaptiveThrottleConfig::strict_success_rate(),
            window,
            k,
            aggression,
            max_reject_probability,
            min_requests,
            count_rejected,
            seed,
            success_rate_threshold,
        )
    }

    /// The configuration (`window` in seconds).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.t.config();
        let d = PyDict::new(py);
        d.set_item("window", util::secs(c.window))?;
        d.set_item("k", c.k)?;
        d.set_item("aggression", c.aggression)?;
        d.set_item("max_reject_probability", c.max_reject_probability)?;
        d.set_item("min_requests", c.min_requests)?;
        d.set_item("count_rejected", c.count_rejected)?;
        d.set_item("seed", c.seed)?;
        Ok(d)
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
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.reject(py, now, rng)
    }

    /// Like `should_reject`, but raises `Throttled` (reason `"throttled"`) instead of
    /// returning `True`.
    #[pyo3(signature = (now = None, *, rng = None))]
    fn admit(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if self.reject(py, now, rng)? {
            return Err(errors::refusal(
                &py.get_type::<Throttled>(),
                "request throttled locally: the backend has been refusing requests".to_owned(),
                Some("throttled"),
                None,
            ));
        }
        Ok(())
    }

    /// Record that the backend accepted a request at `now`.
    #[pyo3(signature = (now = None))]
    fn on_accepted(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.t.on_accepted(util::get_now(py, now)?);
        Ok(())
    }

    /// Record that the backend refused a request at `now` (counted in the stats only).
    #[pyo3(signature = (now = None))]
    fn on_rejected_by_backend(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.t.on_rejected_by_backend(util::get_now(py, now)?);
        Ok(())
    }

    /// The probability that a request at `now` is rejected locally.
    #[pyo3(signature = (now = None))]
    fn reject_probability(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
        Ok(self.t.reject_probability(util::get_now(py, now)?))
    }

    /// `{"requests", "accepts"}` counted in the window at `now`.
    #[pyo3(signature = (now = None))]
    fn window<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let w = self.t.window(util::get_now(py, now)?);
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
    /// A throttle from `c` with the settings given as arguments applied to it.
    #[allow(clippy::too_many_arguments)]
    fn build(
        py: Python<'_>,
        mut c: AdaptiveThrottleConfig,
        window: Option<&Bound<'_, PyAny>>,
        k: Option<&Bound<'_, PyAny>>,
        aggression: Option<&Bound<'_, PyAny>>,
        max_reject_probability: Option<&Bound<'_, PyAny>>,
        min_requests: Option<&Bound<'_, PyAny>>,
        count_rejected: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
        success_rate_threshold: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        if let Some(v) = given(window) {
            c.window = util::get_duration("window", v, Ctx::Config)?;
        }
        if let Some(v) = given(k) {
            c.k = util::get_f64("k", v, Ctx::Config)?;
        }
        if let Some(v) = given(aggression) {
            c.aggression = util::get_f64("aggression", v, Ctx::Config)?;
        }
        if let Some(v) = given(max_reject_probability) {
            c.max_reject_probability = util::get_f64("max_reject_probability", v, Ctx::Config)?;
        }
        if let Some(v) = given(min_requests) {
            c.min_requests = util::get_u64("min_requests", v, Ctx::Config)?;
        }
        if let Some(v) = given(count_rejected) {
            c.count_rejected = util::get_bool("count_rejected", v)?;
        }
        if let Some(v) = given(seed) {
            c.seed = util::get_u64("seed", v, Ctx::Config)?;
        }
        if let Some(v) = given(success_rate_threshold) {
            if given(k).is_some() {
                return Err(PyTypeError::new_err(
                    "give `k` or `success_rate_threshold`, not both",
                ));
            }
            let t = util::get_f64("success_rate_threshold", v, Ctx::Config)?;
            c = c
                .with_success_rate_threshold(t)
                .map_err(|e| errors::config_error(py, e))?;
        }
        let t = AdaptiveThrottle::new(c).map_err(|e| errors::config_error(py, e))?;
        Ok(PyAdaptiveThrottle { t: Box::new(t) })
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAdaptiveThrottle>()?;
    Ok(())
}
