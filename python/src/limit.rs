//! The adaptive concurrency limit algorithms: `AimdLimit`, `VegasLimit`, `GradientLimit`
//! (Gradient2; also exported as `Gradient2Limit`) and `FixedLimit`, all subclasses of
//! `Limit`, configured through ffi's schemas (`aimd`, `vegas`, `gradient`).
//!
//! A limit object computes a number from samples (`update(rtt, in_flight, dropped)`); the
//! `Limiter` and `Admission` enforce it. Passing a limit object to them uses its settings
//! (the limiter keeps its own lock-free copy of the algorithm's state). Core's algorithms
//! take `&mut self`, so a standalone limit object serialises `update` on a mutex.

use std::sync::Mutex;

use guards::schema::{self, Schema};
use guards_core::limit::{Limit, LimitConfig, LimitSample};
use guards_core::{ConfigError, ConfigErrorKind};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyMapping, PyTuple};

use crate::config::{self, Args};
use crate::errors;
use crate::util::{self, Ctx};

/// The algorithm names accepted.
const ALGORITHMS: &str = "'fixed', 'aimd', 'vegas', 'gradient'";

/// The config of `algorithm` from `args` (settings named as in its schema; an AIMD
/// `latency_target=None` means no target).
pub(crate) fn build(py: Python<'_>, algorithm: &str, mut args: Args<'_>) -> PyResult<LimitConfig> {
    fn with<C: Copy>(args: &Args<'_>, s: &'static Schema<C>) -> PyResult<C> {
        args.build(s)
    }
    Ok(match algorithm {
        "fixed" => {
            let Some(v) = args.take("limit") else {
                return Err(PyTypeError::new_err("a fixed limit needs `limit` (an int)"));
            };
            if !args.is_empty() {
                return Err(PyTypeError::new_err(format!(
                    "a fixed limit takes only `limit`, not {}",
                    args.names().join(", ")
                )));
            }
            let n = util::get_u64("limit", &v, Ctx::Config)?;
            let c = LimitConfig::Fixed(n);
            c.validate().map_err(|e| errors::config_error(py, e))?;
            c
        }
        "aimd" => {
            // `latency_target=None` is "no target", the default: left out.
            if let Some(v) = args.take("latency_target") {
                if !v.is_none() {
                    args.push("latency_target".to_owned(), v);
                }
            }
            LimitConfig::Aimd(with(&args, &schema::AIMD)?)
        }
        "vegas" => LimitConfig::Vegas(with(&args, &schema::VEGAS)?),
        "gradient" | "gradient2" => LimitConfig::Gradient(with(&args, &schema::GRADIENT)?),
        _ => {
            return Err(errors::config_error(
                py,
                ConfigError::new("algorithm", ConfigErrorKind::OutOfRange, ALGORITHMS),
            ))
        }
    })
}

/// A `limit=` argument of `Limiter`/`Admission`: an int (a fixed limit), a `Limit` object
/// (its settings) or a mapping with `algorithm` and that algorithm's settings.
pub(crate) fn limit_config_arg(v: &Bound<'_, PyAny>) -> PyResult<LimitConfig> {
    let py = v.py();
    if let Ok(l) = v.cast::<PyLimit>() {
        return Ok(l.get().lock().config());
    }
    if v.is_instance_of::<PyInt>() {
        let c = LimitConfig::Fixed(util::get_u64("limit", v, Ctx::Config)?);
        c.validate().map_err(|e| errors::config_error(py, e))?;
        return Ok(c);
    }
    let Ok(m) = v.cast::<PyMapping>() else {
        return Err(util::type_error(
            "limit",
            "a guards.Limit, an int (a fixed limit) or a mapping with `algorithm` and settings",
            v,
        ));
    };
    let algorithm =
        match util::mapping_get(m, "algorithm")? {
            Some(a) => util::get_str("algorithm", &a)?,
            None => return Err(PyTypeError::new_err(
                "a `limit` mapping needs its `algorithm` ('fixed', 'aimd', 'vegas', 'gradient')",
            )),
        };
    let mut args = Args::empty(py, "limit");
    for item in m.items()?.iter() {
        let (k, val): (String, Bound<'_, PyAny>) = item
            .extract()
            .map_err(|_| PyTypeError::new_err("`limit` must be a mapping with str keys"))?;
        if k != "algorithm" {
            args.push(k, val);
        }
    }
    build(py, &algorithm, args)
}

/// A limit's settings as a dict (durations in seconds; no AIMD latency target is `None`).
pub(crate) fn config_dict<'py>(py: Python<'py>, c: &LimitConfig) -> PyResult<Bound<'py, PyDict>> {
    let d = match c {
        LimitConfig::Fixed(n) => {
            let d = PyDict::new(py);
            d.set_item("limit", n)?;
            d
        }
        LimitConfig::Aimd(a) => config::to_dict(py, &schema::AIMD, a)?,
        LimitConfig::Vegas(v) => config::to_dict(py, &schema::VEGAS, v)?,
        LimitConfig::Gradient(g) => config::to_dict(py, &schema::GRADIENT, g)?,
    };
    d.set_item("algorithm", c.algorithm().name())?;
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

    /// The initializer of `sub`, a subclass running `algorithm` with the settings given.
    fn init<T: pyo3::PyClass<BaseType = PyLimit>>(
        owner: &'static str,
        algorithm: &str,
        positional: &[&str],
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
        sub: T,
    ) -> PyResult<PyClassInitializer<T>> {
        let py = args.py();
        let a = Args::collect(owner, positional, args, kwargs)?;
        let base = Self::build(py, build(py, algorithm, a)?)?;
        Ok(PyClassInitializer::from(base).add_subclass(sub))
    }
}

#[pymethods]
impl PyLimit {
    /// `Limit(algorithm, **settings)`: the algorithm by name (`"fixed"`, `"aimd"`,
    /// `"vegas"`, `"gradient"`) with its settings.
    #[new]
    #[pyo3(signature = (algorithm, **settings))]
    fn new(algorithm: &Bound<'_, PyAny>, settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = algorithm.py();
        let name = util::get_str("algorithm", algorithm)?;
        let a = Args::collect("Limit", &[], &PyTuple::empty(py), settings)?;
        Self::build(py, build(py, &name, a)?)
    }

    /// `"fixed"`, `"aimd"`, `"vegas"` or `"gradient"`.
    #[getter]
    fn algorithm(&self) -> &'static str {
        self.lock().algorithm().name()
    }

    /// The settings (durations in seconds).
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
        rtt: &Bound<'_, PyAny>,
        in_flight: &Bound<'_, PyAny>,
        dropped: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        let sample = LimitSample {
            rtt: util::get_duration("rtt", rtt, Ctx::Arg)?,
            in_flight: util::get_u64("in_flight", in_flight, Ctx::Arg)?,
            dropped: match util::given(dropped) {
                Some(d) => util::get_bool("dropped", d)?,
                None => false,
            },
            now: util::get_now(now)?,
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
    #[pyo3(signature = (*args, **kwargs), text_signature = "(limit)")]
    fn new(
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        PyLimit::init(
            "FixedLimit",
            "fixed",
            &["limit"],
            args,
            kwargs,
            PyFixedLimit,
        )
    }
}

/// Additive increase, multiplicative decrease: +1 per healthy `interval`, times
/// `backoff_ratio` on a drop (or an RTT above `latency_target`).
#[pyclass(module = "guards", name = "AimdLimit", frozen, extends = PyLimit)]
#[derive(Debug)]
pub struct PyAimdLimit;

#[pymethods]
impl PyAimdLimit {
    /// `AimdLimit(**settings)`: durations in seconds; `latency_target=None` (the default):
    /// no latency target.
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, initial_limit=10, min_limit=1, max_limit=1000, backoff_ratio=0.5, interval=0.1, latency_target=None)"
    )]
    fn new(
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        PyLimit::init("AimdLimit", "aimd", &[], args, kwargs, PyAimdLimit)
    }
}

/// TCP Vegas applied to concurrency: the queue estimate `limit * (1 - min_rtt / rtt)`
/// keeps between `alpha` and `beta`.
#[pyclass(module = "guards", name = "VegasLimit", frozen, extends = PyLimit)]
#[derive(Debug)]
pub struct PyVegasLimit;

#[pymethods]
impl PyVegasLimit {
    /// `VegasLimit(**settings)`.
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, initial_limit=20, min_limit=1, max_limit=1000, smoothing=1.0, alpha=3.0, beta=6.0, threshold=1.0, probe_multiplier=30, probe_jitter=0.5, probe_seed=0)"
    )]
    fn new(
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        PyLimit::init("VegasLimit", "vegas", &[], args, kwargs, PyVegasLimit)
    }
}

/// Gradient2: the limit follows the ratio of a long-term RTT average to the short-term
/// one, plus a `queue_size` allowance.
#[pyclass(module = "guards", name = "GradientLimit", frozen, extends = PyLimit)]
#[derive(Debug)]
pub struct PyGradientLimit;

#[pymethods]
impl PyGradientLimit {
    /// `GradientLimit(**settings)`.
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, initial_limit=20, min_limit=1, max_limit=200, smoothing=0.2, queue_size=4.0, long_window=600, warmup_samples=10)"
    )]
    fn new(
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        PyLimit::init(
            "GradientLimit",
            "gradient",
            &[],
            args,
            kwargs,
            PyGradientLimit,
        )
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
