//! The adaptive concurrency limit algorithms: `AimdLimit`, `VegasLimit`, `GradientLimit`
//! (Gradient2; also exported as `Gradient2Limit`) and `FixedLimit`, all subclasses of
//! `Limit`.
//!
//! A limit object computes a number from samples (`update(rtt, in_flight, dropped)`); the
//! `Limiter` and `Admission` enforce it. Passing a limit object to them uses its settings
//! (the limiter keeps its own lock-free copy of the algorithm's state). Core's algorithms
//! take `&mut self`, so a standalone limit object serialises `update` on a mutex.

use std::sync::Mutex;

use guards_core::limit::{
    AimdConfig, GradientConfig, Limit, LimitConfig, LimitSample, VegasConfig,
};
use guards_core::Nanos;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyMapping};

use crate::errors;
use crate::util::{self, given, Ctx};

const AIMD_KEYS: &[&str] = &[
    "initial_limit",
    "min_limit",
    "max_limit",
    "backoff_ratio",
    "interval",
    "latency_target",
];
const VEGAS_KEYS: &[&str] = &[
    "initial_limit",
    "min_limit",
    "max_limit",
    "smoothing",
    "alpha",
    "beta",
    "threshold",
    "probe_multiplier",
    "probe_jitter",
    "probe_seed",
];
const GRADIENT_KEYS: &[&str] = &[
    "initial_limit",
    "min_limit",
    "max_limit",
    "smoothing",
    "queue_size",
    "long_window",
    "warmup_samples",
];
const FIXED_KEYS: &[&str] = &["limit"];

/// Every setting name of every algorithm (static, for error messages).
const ALL_KEYS: &[&str] = &[
    "limit",
    "initial_limit",
    "min_limit",
    "max_limit",
    "backoff_ratio",
    "interval",
    "latency_target",
    "smoothing",
    "alpha",
    "beta",
    "threshold",
    "probe_multiplier",
    "probe_jitter",
    "probe_seed",
    "queue_size",
    "long_window",
    "warmup_samples",
];

/// Settings given by keyword or in a mapping.
pub(crate) struct Settings<'py> {
    given: Vec<(&'static str, Bound<'py, PyAny>)>,
}

impl<'py> Settings<'py> {
    pub(crate) fn from_kwargs(pairs: &[(&'static str, Option<&Bound<'py, PyAny>>)]) -> Self {
        Settings {
            given: pairs
                .iter()
                .filter_map(|(k, v)| given(*v).map(|v| (*k, v.clone())))
                .collect(),
        }
    }

    /// From a mapping; `field` names the argument in errors; `skip` keys are left out.
    fn from_mapping(field: &str, m: &Bound<'py, PyMapping>, skip: &[&str]) -> PyResult<Self> {
        let mut given_pairs = Vec::new();
        for item in m.items()?.iter() {
            let (k, v): (String, Bound<'py, PyAny>) = item.extract().map_err(|_| {
                PyTypeError::new_err(format!("`{field}` must be a mapping with str keys"))
            })?;
            if skip.contains(&k.as_str()) {
                continue;
            }
            let Some(name) = ALL_KEYS.iter().find(|n| **n == k) else {
                return Err(PyTypeError::new_err(format!(
                    "`{field}` has an unknown setting {k:?}"
                )));
            };
            if !v.is_none() {
                given_pairs.push((*name, v));
            }
        }
        Ok(Settings { given: given_pairs })
    }

    fn get(&self, key: &str) -> Option<&Bound<'py, PyAny>> {
        self.given.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    fn only(&self, algorithm: &str, allowed: &[&str]) -> PyResult<()> {
        for (k, _) in &self.given {
            if !allowed.contains(k) {
                return Err(PyTypeError::new_err(format!(
                    "`{k}` is not a setting of the {algorithm:?} limit (its settings: {})",
                    allowed.join(", ")
                )));
            }
        }
        Ok(())
    }

    fn u64(&self, key: &'static str, default: u64) -> PyResult<u64> {
        self.get(key)
            .map_or(Ok(default), |v| util::get_u64(key, v, Ctx::Config))
    }

    fn f64(&self, key: &'static str, default: f64) -> PyResult<f64> {
        self.get(key)
            .map_or(Ok(default), |v| util::get_f64(key, v, Ctx::Config))
    }

    fn nanos(&self, key: &'static str, default: Nanos) -> PyResult<Nanos> {
        self.get(key)
            .map_or(Ok(default), |v| util::get_duration(key, v, Ctx::Config))
    }

    /// The config of `algorithm` from these settings (unvalidated: core validates).
    pub(crate) fn config(&self, py: Python<'_>, algorithm: &str) -> PyResult<LimitConfig> {
        Ok(match algorithm {
            "fixed" => {
                self.only(algorithm, FIXED_KEYS)?;
                match self.get("limit") {
                    Some(v) => LimitConfig::Fixed(util::get_u64("limit", v, Ctx::Config)?),
                    None => {
                        return Err(PyTypeError::new_err(
                            "a fixed limit needs its `limit` (an int)",
                        ))
                    }
                }
            }
            "aimd" => {
                self.only(algorithm, AIMD_KEYS)?;
                let d = AimdConfig::default();
                // `latency_target=None` means "no target" (core's Nanos::MAX).
                LimitConfig::Aimd(AimdConfig {
                    initial_limit: self.u64("initial_limit", d.initial_limit)?,
                    min_limit: self.u64("min_limit", d.min_limit)?,
                    max_limit: self.u64("max_limit", d.max_limit)?,
                    backoff_ratio: self.f64("backoff_ratio", d.backoff_ratio)?,
                    interval: self.nanos("interval", d.interval)?,
                    latency_target: self.nanos("latency_target", d.latency_target)?,
                })
            }
            "vegas" => {
                self.only(algorithm, VEGAS_KEYS)?;
                let d = VegasConfig::default();
                LimitConfig::Vegas(VegasConfig {
                    initial_limit: self.u64("initial_limit", d.initial_limit)?,
                    min_limit: self.u64("min_limit", d.min_limit)?,
                    max_limit: self.u64("max_limit", d.max_limit)?,
                    smoothing: self.f64("smoothing", d.smoothing)?,
                    alpha: self.f64("alpha", d.alpha)?,
                    beta: self.f64("beta", d.beta)?,
                    threshold: self.f64("threshold", d.threshold)?,
                    probe_multiplier: self.u64("probe_multiplier", d.probe_multiplier)?,
                    probe_jitter: self.f64("probe_jitter", d.probe_jitter)?,
                    probe_seed: self.u64("probe_seed", d.probe_seed)?,
                })
            }
            "gradient" | "gradient2" => {
                self.only("gradient", GRADIENT_KEYS)?;
                let d = GradientConfig::default();
                LimitConfig::Gradient(GradientConfig {
                    initial_limit: self.u64("initial_limit", d.initial_limit)?,
                    min_limit: self.u64("min_limit", d.min_limit)?,
                    max_limit: self.u64("max_limit", d.max_limit)?,
                    smoothing: self.f64("smoothing", d.smoothing)?,
                    queue_size: self.f64("queue_size", d.queue_size)?,
                    long_window: self.u64("long_window", d.long_window)?,
                    warmup_samples: self.u64("warmup_samples", d.warmup_samples)?,
                })
            }
            _ => {
                return Err(util::bad_value(
                    py,
                    Ctx::Config,
                    "algorithm",
                    guards_core::ConfigErrorKind::OutOfRange,
                    "one of \"fixed\", \"aimd\", \"vegas\", \"gradient\"",
                ))
            }
        })
    }
}

/// A `limit=` argument of `Limiter`/`Admission`: `None` (the default), an int (a fixed
/// limit), a `Limit` object (its settings) or a mapping with `algorithm` and settings.
pub(crate) fn limit_config_arg(
    v: Option<&Bound<'_, PyAny>>,
    default: LimitConfig,
) -> PyResult<LimitConfig> {
    let Some(v) = given(v) else {
        return Ok(default);
    };
    if let Ok(l) = v.cast::<PyLimit>() {
        return Ok(l.get().lock().config());
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(LimitConfig::Fixed(util::get_u64("limit", v, Ctx::Config)?));
    }
    let Ok(m) = v.cast::<PyMapping>() else {
        return Err(util::type_error(
            "limit",
            "a guards.Limit, an int (a fixed limit) or a mapping with `algorithm` and settings",
            v,
        ));
    };
    let algorithm = match util::mapping_get(m, "algorithm")? {
        Some(a) => util::get_str("algorithm", &a)?,
        None => {
            return Err(PyTypeError::new_err(
                "a `limit` mapping needs its `algorithm` (\"fixed\", \"aimd\", \"vegas\", \"gradient\")",
            ))
        }
    };
    Settings::from_mapping("limit", m, &["algorithm"])?.config(v.py(), &algorithm)
}

/// A limit's settings as a dict (durations in seconds; no latency target is `None`).
pub(crate) fn config_dict<'py>(py: Python<'py>, c: &LimitConfig) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("algorithm", c.algorithm().name())?;
    match c {
        LimitConfig::Fixed(n) => d.set_item("limit", n)?,
        LimitConfig::Aimd(a) => {
            d.set_item("initial_limit", a.initial_limit)?;
            d.set_item("min_limit", a.min_limit)?;
            d.set_item("max_limit", a.max_limit)?;
            d.set_item("backoff_ratio", a.backoff_ratio)?;
            d.set_item("interval", util::secs(a.interval))?;
            if a.latency_target == Nanos::MAX {
                d.set_item("latency_target", py.None())?;
            } else {
                d.set_item("latency_target", util::secs(a.latency_target))?;
            }
        }
        LimitConfig::Vegas(v) => {
            d.set_item("initial_limit", v.initial_limit)?;
            d.set_item("min_limit", v.min_limit)?;
            d.set_item("max_limit", v.max_limit)?;
            d.set_item("smoothing", v.smoothing)?;
            d.set_item("alpha", v.alpha)?;
            d.set_item("beta", v.beta)?;
            d.set_item("threshold", v.threshold)?;
            d.set_item("probe_multiplier", v.probe_multiplier)?;
            d.set_item("probe_jitter", v.probe_jitter)?;
            d.set_item("probe_seed", v.probe_seed)?;
        }
        LimitConfig::Gradient(g) => {
            d.set_item("initial_limit", g.initial_limit)?;
            d.set_item("min_limit", g.min_limit)?;
            d.set_item("max_limit", g.max_limit)?;
            d.set_item("smoothing", g.smoothing)?;
            d.set_item("queue_size", g.queue_size)?;
            d.set_item("long_window", g.long_window)?;
            d.set_item("warmup_samples", g.warmup_samples)?;
        }
    }
    Ok(d)
}

/// A concurrency limit algorithm (base class of `FixedLimit`, `AimdLimit`, `VegasLimit`,
/// `GradientLimit`).
#[pyclass(module = "guards", name = "Limit", frozen, subclass)]
#[derive(Debug)]
pub struct PyLimit {
    l: Mutex<Limit>,
}

impl PyLimit {
    fn lock(&self) -> std::sync::MutexGuard<'_, Limit> {
        self.l.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn build(py: Python<'_>, c: LimitConfig) -> PyResult<Self> {
        let l = Limit::new(c).map_err(|e| errors::config_error(py, e))?;
        Ok(PyLimit { l: Mutex::new(l) })
    }

    /// The initializer of `sub`, a subclass running `algorithm` with the settings `s`.
    fn init<T: pyo3::PyClass<BaseType = PyLimit>>(
        py: Python<'_>,
        s: &Settings<'_>,
        algorithm: &str,
        sub: T,
    ) -> PyResult<PyClassInitializer<T>> {
        let base = Self::build(py, s.config(py, algorithm)?)?;
        Ok(PyClassInitializer::from(base).add_subclass(sub))
    }
}

#[pymethods]
impl PyLimit {
    /// `Limit(algorithm, **settings)`: the algorithm by name (`"fixed"`, `"aimd"`,
    /// `"vegas"`, `"gradient"`) with its settings.
    #[new]
    #[pyo3(signature = (algorithm, **settings))]
    fn new(
        py: Python<'_>,
        algorithm: &Bound<'_, PyAny>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let name = util::get_str("algorithm", algorithm)?;
        let s = match settings {
            Some(d) => Settings::from_mapping("settings", d.as_mapping(), &[])?,
            None => Settings { given: Vec::new() },
        };
        Self::build(py, s.config(py, &name)?)
    }

    /// `"fixed"`, `"aimd"`, `"vegas"` or `"gradient"`.
    #[getter]
    fn algorithm(&self) -> &'static str {
        self.lock().algorithm().name()
    }

    /// The configuration (durations in seconds).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.lock().config();
        config_dict(py, &c)
    }

    /// The current limit.
    #[getter]
    fn limit(&self) -> u64 {
        self.lock().limit()
    }

    /// Feed one sample: a call that took `rtt` (a duration) with `in_flight` calls in
    /// flight, `dropped` if it timed out or was refused downstream; returns the new limit.
    #[pyo3(signature = (rtt, in_flight, dropped = None, now = None))]
    fn update(
        &self,
        py: Python<'_>,
        rtt: &Bound<'_, PyAny>,
        in_flight: &Bound<'_, PyAny>,
        dropped: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        let sample = LimitSample {
            rtt: util::get_duration("rtt", rtt, Ctx::Arg)?,
            in_flight: util::get_u64("in_flight", in_flight, Ctx::Arg)?,
            dropped: match given(dropped) {
                Some(d) => util::get_bool("dropped", d)?,
                None => false,
            },
            now: util::get_now(py, now)?,
        };
        Ok(self.lock().update(sample))
    }

    /// The float estimate behind the limit (Vegas and Gradient; `None` for the others).
    #[getter]
    fn estimate(&self) -> Option<f64> {
        match &*self.lock() {
            Limit::Vegas(v) => Some(v.estimate()),
            Limit::Gradient(g) => Some(g.estimate()),
            _ => None,
        }
    }

    /// Vegas: the no-load RTT in use in seconds (0.0 before any sample); `None` for the
    /// others.
    #[getter]
    fn min_rtt(&self) -> Option<f64> {
        match &*self.lock() {
            Limit::Vegas(v) => Some(util::secs(v.min_rtt())),
            _ => None,
        }
    }

    /// `min_rtt` in integer nanoseconds.
    #[getter]
    fn min_rtt_ns(&self) -> Option<u64> {
        match &*self.lock() {
            Limit::Vegas(v) => Some(v.min_rtt().as_u64()),
            _ => None,
        }
    }

    /// Gradient: the long-term RTT average in seconds; `None` for the others.
    #[getter]
    fn long_rtt(&self) -> Option<f64> {
        match &*self.lock() {
            Limit::Gradient(g) => Some(g.long_rtt() / 1e9),
            _ => None,
        }
    }

    /// Gradient: the long-term RTT average in (float) nanoseconds, as core keeps it.
    #[getter]
    fn long_rtt_ns(&self) -> Option<f64> {
        match &*self.lock() {
            Limit::Gradient(g) => Some(g.long_rtt()),
            _ => None,
        }
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let name = slf.get_type().name()?;
        Ok(format!("{name}(limit={})", slf.get().limit()))
    }
}

/// A limit that never moves.
#[pyclass(module = "guards", name = "FixedLimit", frozen, extends = PyLimit)]
#[derive(Debug)]
pub struct PyFixedLimit;

#[pymethods]
impl PyFixedLimit {
    /// `FixedLimit(limit)`.
    #[new]
    fn new(py: Python<'_>, limit: &Bound<'_, PyAny>) -> PyResult<PyClassInitializer<Self>> {
        let s = Settings::from_kwargs(&[("limit", Some(limit))]);
        PyLimit::init(py, &s, "fixed", PyFixedLimit)
    }
}

/// Additive increase, multiplicative decrease: +1 per healthy `interval`, times
/// `backoff_ratio` on a drop (or an RTT above `latency_target`).
#[pyclass(module = "guards", name = "AimdLimit", frozen, extends = PyLimit)]
#[derive(Debug)]
pub struct PyAimdLimit;

#[pymethods]
impl PyAimdLimit {
    /// `AimdLimit(initial_limit=10, min_limit=1, max_limit=1000, backoff_ratio=0.5,
    /// interval=0.1, latency_target=None)`; durations in seconds; no latency target when
    /// `None`.
    #[new]
    #[pyo3(
        signature = (*, initial_limit = None, min_limit = None, max_limit = None, backoff_ratio = None, interval = None, latency_target = None),
        text_signature = "(*, initial_limit=10, min_limit=1, max_limit=1000, backoff_ratio=0.5, interval=0.1, latency_target=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        initial_limit: Option<&Bound<'_, PyAny>>,
        min_limit: Option<&Bound<'_, PyAny>>,
        max_limit: Option<&Bound<'_, PyAny>>,
        backoff_ratio: Option<&Bound<'_, PyAny>>,
        interval: Option<&Bound<'_, PyAny>>,
        latency_target: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let s = Settings::from_kwargs(&[
            ("initial_limit", initial_limit),
            ("min_limit", min_limit),
            ("max_limit", max_limit),
            ("backoff_ratio", backoff_ratio),
            ("interval", interval),
            ("latency_target", latency_target),
        ]);
        PyLimit::init(py, &s, "aimd", PyAimdLimit)
    }
}

/// TCP Vegas applied to concurrency: the queue estimate `limit * (1 - min_rtt / rtt)`
/// keeps between `alpha` and `beta`.
#[pyclass(module = "guards", name = "VegasLimit", frozen, extends = PyLimit)]
#[derive(Debug)]
pub struct PyVegasLimit;

#[pymethods]
impl PyVegasLimit {
    /// `VegasLimit(initial_limit=20, min_limit=1, max_limit=1000, smoothing=1.0,
    /// alpha=3.0, beta=6.0, threshold=1.0, probe_multiplier=30, probe_jitter=0.5,
    /// probe_seed=0)`.
    #[new]
    #[pyo3(
        signature = (*, initial_limit = None, min_limit = None, max_limit = None, smoothing = None, alpha = None, beta = None, threshold = None, probe_multiplier = None, probe_jitter = None, probe_seed = None),
        text_signature = "(*, initial_limit=20, min_limit=1, max_limit=1000, smoothing=1.0, alpha=3.0, beta=6.0, threshold=1.0, probe_multiplier=30, probe_jitter=0.5, probe_seed=0)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        initial_limit: Option<&Bound<'_, PyAny>>,
        min_limit: Option<&Bound<'_, PyAny>>,
        max_limit: Option<&Bound<'_, PyAny>>,
        smoothing: Option<&Bound<'_, PyAny>>,
        alpha: Option<&Bound<'_, PyAny>>,
        beta: Option<&Bound<'_, PyAny>>,
        threshold: Option<&Bound<'_, PyAny>>,
        probe_multiplier: Option<&Bound<'_, PyAny>>,
        probe_jitter: Option<&Bound<'_, PyAny>>,
        probe_seed: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let s = Settings::from_kwargs(&[
            ("initial_limit", initial_limit),
            ("min_limit", min_limit),
            ("max_limit", max_limit),
            ("smoothing", smoothing),
            ("alpha", alpha),
            ("beta", beta),
            ("threshold", threshold),
            ("probe_multiplier", probe_multiplier),
            ("probe_jitter", probe_jitter),
            ("probe_seed", probe_seed),
        ]);
        PyLimit::init(py, &s, "vegas", PyVegasLimit)
    }
}

/// Gradient2: the limit follows the ratio of a long-term RTT average to the short-term
/// one, plus a `queue_size` allowance.
#[pyclass(module = "guards", name = "GradientLimit", frozen, extends = PyLimit)]
#[derive(Debug)]
pub struct PyGradientLimit;

#[pymethods]
impl PyGradientLimit {
    /// `GradientLimit(initial_limit=20, min_limit=1, max_limit=200, smoothing=0.2,
    /// queue_size=4.0, long_window=600, warmup_samples=10)`.
    #[new]
    #[pyo3(
        signature = (*, initial_limit = None, min_limit = None, max_limit = None, smoothing = None, queue_size = None, long_window = None, warmup_samples = None),
        text_signature = "(*, initial_limit=20, min_limit=1, max_limit=200, smoothing=0.2, queue_size=4.0, long_window=600, warmup_samples=10)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        initial_limit: Option<&Bound<'_, PyAny>>,
        min_limit: Option<&Bound<'_, PyAny>>,
        max_limit: Option<&Bound<'_, PyAny>>,
        smoothing: Option<&Bound<'_, PyAny>>,
        queue_size: Option<&Bound<'_, PyAny>>,
        long_window: Option<&Bound<'_, PyAny>>,
        warmup_samples: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let s = Settings::from_kwargs(&[
            ("initial_limit", initial_limit),
            ("min_limit", min_limit),
            ("max_limit", max_limit),
            ("smoothing", smoothing),
            ("queue_size", queue_size),
            ("long_window", long_window),
            ("warmup_samples", warmup_samples),
        ]);
        PyLimit::init(py, &s, "gradient", PyGradientLimit)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLimit>()?;
    m.add_class::<PyFixedLimit>()?;
    m.add_class::<PyAimdLimit>()?;
    m.add_class::<PyVegasLimit>()?;
    m.add_class::<PyGradientLimit>()?;
    m.add("Gradient2Limit", m.py().get_type::<PyGradientLimit>())?;
    Ok(())
}
