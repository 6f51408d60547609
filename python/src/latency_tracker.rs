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

use guards::handle::InPlace;
use guards::schema::LATENCY_TRACKER;
use guards_core::latency_tracker::{LatencySummary, LatencyTracker, LatencyTrackerConfig};
use guards_core::Nanos;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyTuple};

use crate::config::{self, Args};
use crate::errors;
use crate::util::{self, Ctx};

/// What hedging's `tracker=` adds to its settings: a `LatencyTracker` (its config), or a
/// mapping with the keys `window`, `timeout_quantile`, `timeout_factor`, `min_samples`,
/// whose values become hedging's `tracker.window`, ... settings (errors name them so).
pub(crate) enum TrackerArg<'py> {
    Ready(LatencyTrackerConfig),
    Settings(Vec<(String, Bound<'py, PyAny>)>),
}

pub(crate) fn tracker_arg<'py>(v: &Bound<'py, PyAny>) -> PyResult<TrackerArg<'py>> {
    if let Ok(t) = v.cast::<PyLatencyTracker>() {
        return Ok(TrackerArg::Ready(*t.get().t.config()));
    }
    let Ok(m) = v.cast::<PyMapping>() else {
        return Err(config::wrong_type(
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
    let mut out = Vec::new();
    for item in m.items()?.iter() {
        let (k, val): (String, Bound<'py, PyAny>) = item.extract()?;
        out.push((format!("tracker.{k}"), val));
    }
    Ok(TrackerArg::Settings(out))
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
    /// Built in place by ffi: 55 KB of counters, cache-line aligned.
    pub(crate) t: InPlace<LatencyTracker>,
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
        let now = util::get_now(now)?;
        let t = &*self.t;
        Ok(py.detach(|| f(t, now)))
    }
}

#[pymethods]
impl PyLatencyTracker {
    /// `LatencyTracker(window=10.0, timeout_quantile=0.999, timeout_factor=2.0,
    /// min_samples=1000)`; durations in seconds.
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, window=10.0, timeout_quantile=0.999, timeout_factor=2.0, min_samples=1000)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = args.py();
        let c = Args::collect("LatencyTracker", &[], args, kwargs)?.build(&LATENCY_TRACKER)?;
        let t = InPlace::<LatencyTracker>::new(c).map_err(|f| errors::failure(py, f))?;
        Ok(PyLatencyTracker { t })
    }

    /// The settings (durations in seconds).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config::to_dict(py, &LATENCY_TRACKER, self.t.config())
    }

    /// The largest latency told apart (larger ones count in the last bucket), seconds.
    #[getter]
    fn max_trackable(&self) -> f64 {
        util::secs(self.t.max_trackable())
    }

    /// Record a call that took `latency` (a duration) and ended at `now`.
    #[pyo3(signature = (latency, now = None))]
    fn record(&self, latency: &Bound<'_, PyAny>, now: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let l = util::get_duration("latency", latency, Ctx::Arg)?;
        self.t.record(util::get_now(now)?, l);
        Ok(())
    }

    /// Record a call that took `latency_ns` integer nanoseconds and ended at `now`.
    #[pyo3(signature = (latency_ns, now = None))]
    fn record_ns(
        &self,
        latency_ns: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let l = Nanos(util::get_u64("latency_ns", latency_ns, Ctx::Arg)?);
        self.t.record(util::get_now(now)?, l);
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
