//! `LatencyTracker`: a lock-free log-linear histogram of latencies over a ring of time
//! windows; quantiles, a summary, a proposed timeout and the share of calls a timeout
//! would cut.
//!
//! Latencies are durations: `record(latency)` takes seconds (`float`/`int`), a timedelta or
//! `guards.Nanos`; `record_ns(latency_ns)` takes integer nanoseconds (what subtracting two
//! `time.monotonic_ns()` readings gives). Quantiles come back as seconds (`quantile`) and
//! as integer nanoseconds (`quantile_ns`): the value of the bucket holding the rank
//! (buckets are within 1/64 of the value).
//!
//! Reading a quantile merges 6 × 1,152 counters (a few microseconds), so the reads release
//! the GIL while they merge; recording is one atomic update and keeps it.

use guards_core::latency_tracker::{LatencySummary, LatencyTracker, LatencyTrackerConfig};
use guards_core::Nanos;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping};

use crate::errors;
use crate::util::{self, given, Ctx};

/// Settings of a latency tracker given as keyword values; `prefix` is prepended to field
/// names in errors (`"tracker."` when embedded in hedging).
pub(crate) struct TrackerArgs<'a, 'py> {
    pub window: Option<&'a Bound<'py, PyAny>>,
    pub timeout_quantile: Option<&'a Bound<'py, PyAny>>,
    pub timeout_factor: Option<&'a Bound<'py, PyAny>>,
    pub min_samples: Option<&'a Bound<'py, PyAny>>,
}

impl TrackerArgs<'_, '_> {
    pub(crate) fn config(&self, embedded: bool) -> PyResult<LatencyTrackerConfig> {
        let name = |plain: &'static str, nested: &'static str| {
            if embedded {
                nested
            } else {
                plain
            }
        };
        let mut c = LatencyTrackerConfig::default();
        if let Some(v) = given(self.window) {
            c.window = util::get_duration(name("window", "tracker.window"), v, Ctx::Config)?;
        }
        if let Some(v) = given(self.timeout_quantile) {
            c.timeout_quantile = util::get_f64(
                name("timeout_quantile", "tracker.timeout_quantile"),
                v,
                Ctx::Config,
            )?;
        }
        if let Some(v) = given(self.timeout_factor) {
            c.timeout_factor = util::get_f64(
                name("timeout_factor", "tracker.timeout_factor"),
                v,
                Ctx::Config,
            )?;
        }
        if let Some(v) = given(self.min_samples) {
            c.min_samples =
                util::get_u64(name("min_samples", "tracker.min_samples"), v, Ctx::Config)?;
        }
        Ok(c)
    }
}

/// A tracker config from what hedging's `tracker=` was given: a `LatencyTracker` (its
/// settings) or a mapping with the keys `window`, `timeout_quantile`, `timeout_factor`,
/// `min_samples`.
pub(crate) fn tracker_config_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<LatencyTrackerConfig> {
    let Some(v) = given(v) else {
        return Ok(LatencyTrackerConfig::default());
    };
    if let Ok(t) = v.cast::<PyLatencyTracker>() {
        return Ok(*t.get().t.config());
    }
    let Ok(m) = v.cast::<PyMapping>() else {
        return Err(util::type_error(
            "tracker",
            "a guards.LatencyTracker or a mapping of its settings",
            v,
        ));
    };
    util::check_mapping_keys(
        "tracker",
        m,
        &[
            "window",
            "timeout_quantile",
            "timeout_factor",
            "min_samples",
        ],
    )?;
    let window = util::mapping_get(m, "window")?;
    let timeout_quantile = util::mapping_get(m, "timeout_quantile")?;
    let timeout_factor = util::mapping_get(m, "timeout_factor")?;
    let min_samples = util::mapping_get(m, "min_samples")?;
    TrackerArgs {
        window: window.as_ref(),
        timeout_quantile: timeout_quantile.as_ref(),
        timeout_factor: timeout_factor.as_ref(),
        min_samples: min_samples.as_ref(),
    }
    .config(true)
}

/// A tracker's settings as a dict (durations in seconds).
pub(crate) fn config_dict<'py>(
    py: Python<'py>,
    c: &LatencyTrackerConfig,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("window", util::secs(c.window))?;
    d.set_item("timeout_quantile", c.timeout_quantile)?;
    d.set_item("timeout_factor", c.timeout_factor)?;
    d.set_item("min_samples", c.min_samples)?;
    Ok(d)
}

/// A quantile argument: a float (NaN or outside `[0, 1]` gives `None`, as in core).
pub(crate) fn q_arg(q: &Bound<'_, PyAny>) -> PyResult<f64> {
    util::get_f64("q", q, Ctx::Arg)
}

/// A summary as a dict: seconds (`ns = false`) or integer nanoseconds.
pub(crate) fn summary_dict<'py>(
    py: Python<'py>,
    s: &LatencySummary,
    ns: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("count", s.count)?;
    for (k, v) in [
        ("p50", s.p50),
        ("p95", s.p95),
        ("p99", s.p99),
        ("p999", s.p999),
        ("max", s.max),
    ] {
        if ns {
            d.set_item(k, v.as_u64())?;
        } else {
            d.set_item(k, util::secs(v))?;
        }
    }
    Ok(d)
}

/// Latency histogram over a sliding ring of 6 windows (the last `6 * window` seconds).
#[pyclass(module = "guards", name = "LatencyTracker", frozen)]
pub struct PyLatencyTracker {
    /// Boxed: 55 KB of counters, and core's state may be cache-line aligned.
    pub(crate) t: Box<LatencyTracker>,
}

impl std::fmt::Debug for PyLatencyTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyTracker")
            .field("config", self.t.config())
            .finish()
    }
}

impl PyLatencyTracker {
    /// `f` on the tracker at `now` (the clock's when `None`), with the GIL released while
    /// it merges the windows.
    fn read<R: Send>(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        f: impl FnOnce(&LatencyTracker, Nanos) -> R + Send,
    ) -> PyResult<R> {
        let now = util::get_now(py, now)?;
        let t = &*self.t;
        Ok(py.detach(|| f(t, now)))
    }
}

#[pymethods]
impl PyLatencyTracker {
    /// `LatencyTracker(window=10.0, timeout_quantile=0.999, timeout_factor=2.0,
    /// min_samples=1000)`.
    #[new]
    #[pyo3(
        signature = (*, window = None, timeout_quantile = None, timeout_factor = None, min_samples = None),
        text_signature = "(*, window=10.0, timeout_quantile=0.999, timeout_factor=2.0, min_samples=1000)"
    )]
    fn new(
        py: Python<'_>,
        window: Option<&Bound<'_, PyAny>>,
        timeout_quantile: Option<&Bound<'_, PyAny>>,
        timeout_factor: Option<&Bound<'_, PyAny>>,
        min_samples: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let c = TrackerArgs {
            window,
            timeout_quantile,
            timeout_factor,
            min_samples,
        }
        .config(false)?;
        let t = LatencyTracker::new(c).map_err(|e| errors::config_error(py, e))?;
        Ok(PyLatencyTracker { t: Box::new(t) })
    }

    /// The configuration (durations in seconds).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config_dict(py, self.t.config())
    }

    /// The largest latency told apart (larger ones count in the last bucket), seconds.
    #[getter]
    fn max_trackable(&self) -> f64 {
        util::secs(self.t.max_trackable())
    }

    /// Record a call that took `latency` (a duration) and ended at `now`.
    #[pyo3(signature = (latency, now = None))]
    fn record(
        &self,
        py: Python<'_>,
        latency: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let l = util::get_duration("latency", latency, Ctx::Arg)?;
        self.t.record(util::get_now(py, now)?, l);
        Ok(())
    }

    /// Record a call that took `latency_ns` integer nanoseconds and ended at `now`.
    #[pyo3(signature = (latency_ns, now = None))]
    fn record_ns(
        &self,
        py: Python<'_>,
        latency_ns: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let l = Nanos(util::get_u64("latency_ns", latency_ns, Ctx::Arg)?);
        self.t.record(util::get_now(py, now)?, l);
        Ok(())
    }

    /// Samples in the windows merged at `now`.
    #[pyo3(signature = (now = None))]
    fn count(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        self.read(py, now, |t, now| t.count(now))
    }

    /// The `q` quantile (0..=1) at `now` in seconds, or `None` without samples (or for a
    /// `q` outside `[0, 1]`).
    #[pyo3(signature = (q, now = None))]
    fn quantile(
        &self,
        py: Python<'_>,
        q: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<f64>> {
        let q = q_arg(q)?;
        Ok(self
            .read(py, now, |t, now| t.quantile(now, q))?
            .map(util::secs))
    }

    /// `quantile` in integer nanoseconds.
    #[pyo3(signature = (q, now = None))]
    fn quantile_ns(
        &self,
        py: Python<'_>,
        q: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<u64>> {
        let q = q_arg(q)?;
        Ok(self
            .read(py, now, |t, now| t.quantile(now, q))?
            .map(Nanos::as_u64))
    }

    /// `{"count", "p50", "p95", "p99", "p999", "max"}` at `now`, latencies in seconds (all
    /// 0 when empty).
    #[pyo3(signature = (now = None))]
    fn summary<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        summary_dict(py, &self.read(py, now, |t, now| t.summary(now))?, false)
    }

    /// `summary` with latencies in integer nanoseconds.
    #[pyo3(signature = (now = None))]
    fn summary_ns<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        summary_dict(py, &self.read(py, now, |t, now| t.summary(now))?, true)
    }

    /// A timeout from the data at `now`: the `timeout_quantile` latency times
    /// `timeout_factor`, in seconds; `None` below `min_samples` samples.
    #[pyo3(signature = (now = None))]
    fn propose_timeout(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<f64>> {
        Ok(self
            .read(py, now, |t, now| t.propose_timeout(now))?
            .map(util::secs))
    }

    /// `propose_timeout` in integer nanoseconds.
    #[pyo3(signature = (now = None))]
    fn propose_timeout_ns(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<u64>> {
        Ok(self
            .read(py, now, |t, now| t.propose_timeout(now))?
            .map(Nanos::as_u64))
    }

    /// The share (0..=1) of the recorded calls that `timeout` would have cut, or `None`
    /// without samples.
    #[pyo3(signature = (timeout, now = None))]
    fn false_timeout_rate(
        &self,
        py: Python<'_>,
        timeout: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<f64>> {
        let timeout = util::get_duration("timeout", timeout, Ctx::Arg)?;
        self.read(py, now, |t, now| t.false_timeout_rate(now, timeout))
    }

    /// Counters: `recorded`, `saturated` (beyond the last bucket), `stale` (too late for
    /// their window).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.t.stats();
        util::stats_dict(
            py,
            &[
                ("recorded", s.recorded),
                ("saturated", s.saturated),
                ("stale", s.stale),
            ],
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "LatencyTracker(window={:?})",
            util::secs(self.t.config().window)
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLatencyTracker>()?;
    Ok(())
}
