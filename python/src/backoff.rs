//! `Backoff`: capped exponential backoff with full, equal or decorrelated jitter, and the
//! stable schedule offsets that spread periodic jobs (`fnv1a64`, `stable_offset`,
//! `next_stable_run`).
//!
//! Durations come back as seconds from `x()` and as exact integer nanoseconds from
//! `x_ns()`. Random draws come from the backoff's own `Rng` (seeded with `seed`, random
//! when `None`) unless a `guards.Rng` is passed as `rng=`.

use guards::schema::BACKOFF;
use guards_core::backoff::{
    fnv1a64 as core_fnv1a64, next_stable_run as core_next_stable_run,
    stable_offset as core_stable_offset, Backoff, BackoffConfig,
};
use guards_core::{Nanos, Rng};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyTuple};

use crate::config::{self, Args};
use crate::errors;
use crate::rng::PyRng;
use crate::util::{self, given, Ctx};

/// What a retry policy's `backoff=` adds to its settings: a `Backoff` (its config), or a
/// mapping with the keys `base`, `cap`, `multiplier`, `jitter`, whose values become the
/// policy's `backoff.base`, ... settings (and errors name them so).
pub(crate) enum BackoffArg<'py> {
    Ready(BackoffConfig),
    Settings(Vec<(String, Bound<'py, PyAny>)>),
}

pub(crate) fn backoff_arg<'py>(v: &Bound<'py, PyAny>) -> PyResult<BackoffArg<'py>> {
    if let Ok(b) = v.cast::<PyBackoff>() {
        return Ok(BackoffArg::Ready(b.get().b.config()));
    }
    let Ok(m) = v.cast::<PyMapping>() else {
        return Err(config::wrong_type(
            "backoff",
            "a guards.Backoff or a mapping of its settings",
            v,
        ));
    };
    util::check_mapping_keys("backoff", m, &["base", "cap", "multiplier", "jitter"])?;
    let mut out = Vec::new();
    for item in m.items()?.iter() {
        let (k, val): (String, Bound<'py, PyAny>) = item.extract()?;
        out.push((format!("backoff.{k}"), val));
    }
    Ok(BackoffArg::Settings(out))
}

/// The generator passed as `rng=`, if any.
pub(crate) fn rng_arg<'a, 'py>(
    rng: Option<&'a Bound<'py, PyAny>>,
) -> PyResult<Option<&'a Bound<'py, PyRng>>> {
    match given(rng) {
        None => Ok(None),
        Some(r) => r
            .cast::<PyRng>()
            .map(Some)
            .map_err(|_| util::type_error("rng", "a guards.Rng or None", r)),
    }
}

/// Capped exponential backoff with jitter.
#[pyclass(module = "guards", name = "Backoff", frozen)]
#[derive(Debug)]
pub struct PyBackoff {
    pub(crate) b: Backoff,
    rng: Rng,
}

fn retry_arg(v: &Bound<'_, PyAny>) -> PyResult<u32> {
    util::get_u32("retry", v, Ctx::Arg, "an int in 0..=2**32-1")
}

fn prev_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<Nanos> {
    Ok(util::opt_duration("prev", v, Ctx::Arg)?.unwrap_or(Nanos::ZERO))
}

impl PyBackoff {
    /// A backoff with `config` (already valid) and a randomly seeded generator.
    pub(crate) fn from_config(config: BackoffConfig) -> PyResult<Self> {
        Ok(PyBackoff {
            b: Backoff::new(config)
                .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?,
            rng: Rng::new(crate::rng::random_seed()),
        })
    }

    fn draw(
        &self,
        retry: &Bound<'_, PyAny>,
        prev: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Nanos> {
        let retry = retry_arg(retry)?;
        let prev = prev_arg(prev)?;
        Ok(match rng_arg(rng)? {
            Some(r) => self.b.delay(retry, prev, &r.get().rng),
            None => self.b.delay(retry, prev, &self.rng),
        })
    }

    fn bits_delay(
        &self,
        retry: &Bound<'_, PyAny>,
        bits: &Bound<'_, PyAny>,
        prev: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Nanos> {
        let retry = retry_arg(retry)?;
        let bits = util::get_u64("bits", bits, Ctx::Arg)?;
        Ok(self.b.delay_from_bits(retry, prev_arg(prev)?, bits))
    }
}

#[pymethods]
impl PyBackoff {
    /// `Backoff(base=0.025, cap=20.0, multiplier=2.0, jitter="full", seed=None)`:
    /// durations in seconds; `jitter` is `"none"`, `"full"`, `"equal"` or
    /// `"decorrelated"`; `seed` seeds the backoff's own generator (`None`: a random seed).
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(base=0.025, *, cap=20.0, multiplier=2.0, jitter='full', seed=None)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = args.py();
        let mut a = Args::collect("Backoff", &["base"], args, kwargs)?;
        let seed = a.take("seed");
        let c = a.build(&BACKOFF)?;
        let b = Backoff::new(c).map_err(|e| errors::config_error(py, e))?;
        Ok(PyBackoff {
            b,
            rng: Rng::new(crate::rng::seed_arg(seed.as_ref())?),
        })
    }

    /// The settings (durations in seconds).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config::to_dict(py, &BACKOFF, &self.b.config())
    }

    /// The jitter-free delay before retry `retry` (0 = the first retry), in seconds:
    /// `min(cap, base * multiplier**retry)`.
    fn ceiling(&self, retry: &Bound<'_, PyAny>) -> PyResult<f64> {
        Ok(util::secs(self.b.ceiling(retry_arg(retry)?)))
    }

    /// `ceiling` in integer nanoseconds.
    fn ceiling_ns(&self, retry: &Bound<'_, PyAny>) -> PyResult<u64> {
        Ok(self.b.ceiling(retry_arg(retry)?).as_u64())
    }

    /// The largest delay `delay` can return for `retry`, in seconds.
    fn max_delay(&self, retry: &Bound<'_, PyAny>) -> PyResult<f64> {
        Ok(util::secs(self.b.max_delay(retry_arg(retry)?)))
    }

    /// `max_delay` in integer nanoseconds.
    fn max_delay_ns(&self, retry: &Bound<'_, PyAny>) -> PyResult<u64> {
        Ok(self.b.max_delay(retry_arg(retry)?).as_u64())
    }

    /// The delay before retry `retry`, in seconds, drawn from the generator. `prev` is the
    /// previous delay (decorrelated jitter grows from it).
    #[pyo3(signature = (retry, prev = None, *, rng = None))]
    fn delay(
        &self,
        retry: &Bound<'_, PyAny>,
        prev: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<f64> {
        Ok(util::secs(self.draw(retry, prev, rng)?))
    }

    /// `delay` in integer nanoseconds.
    #[pyo3(signature = (retry, prev = None, *, rng = None))]
    fn delay_ns(
        &self,
        retry: &Bound<'_, PyAny>,
        prev: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        Ok(self.draw(retry, prev, rng)?.as_u64())
    }

    /// The delay for `retry` given the 64 random bits `bits` (deterministic), in seconds.
    #[pyo3(signature = (retry, bits, prev = None))]
    fn delay_from_bits(
        &self,
        retry: &Bound<'_, PyAny>,
        bits: &Bound<'_, PyAny>,
        prev: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<f64> {
        Ok(util::secs(self.bits_delay(retry, bits, prev)?))
    }

    /// `delay_from_bits` in integer nanoseconds.
    #[pyo3(signature = (retry, bits, prev = None))]
    fn delay_from_bits_ns(
        &self,
        retry: &Bound<'_, PyAny>,
        bits: &Bound<'_, PyAny>,
        prev: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        Ok(self.bits_delay(retry, bits, prev)?.as_u64())
    }

    fn __repr__(&self) -> String {
        let c = self.b.config();
        format!(
            "Backoff(base={:?}, cap={:?}, multiplier={:?}, jitter='{}')",
            util::secs(c.base),
            util::secs(c.cap),
            c.multiplier,
            c.jitter.name()
        )
    }
}

/// The bytes of an id given as `str` (UTF-8) or `bytes`.
fn id_bytes(v: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    util::str_or_bytes("id", v)
}

/// `fnv1a64(data)`: the FNV-1a 64-bit hash of `data` (`str` as UTF-8, or `bytes`).
#[pyfunction]
pub(crate) fn fnv1a64(data: &Bound<'_, PyAny>) -> PyResult<u64> {
    Ok(core_fnv1a64(&util::str_or_bytes("data", data)?))
}

/// `stable_offset_ns(id, period)`: where in every `period` the job `id` runs, as integer
/// nanoseconds in `0..period` (the same on every host and restart).
#[pyfunction]
pub(crate) fn stable_offset_ns(id: &Bound<'_, PyAny>, period: &Bound<'_, PyAny>) -> PyResult<u64> {
    let p = util::get_duration("period", period, Ctx::Arg)?;
    Ok(core_stable_offset(&id_bytes(id)?, p).as_u64())
}

/// `next_stable_run(id, period, now=None)`: the next instant (integer nanoseconds) at or
/// after `now` when the job `id` with this `period` runs.
#[pyfunction]
#[pyo3(signature = (id, period, now = None))]
pub(crate) fn next_stable_run(
    id: &Bound<'_, PyAny>,
    period: &Bound<'_, PyAny>,
    now: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let p = util::get_duration("period", period, Ctx::Arg)?;
    let bytes = id_bytes(id)?;
    let now = util::get_now(now)?;
    Ok(core_next_stable_run(&bytes, p, now).as_u64())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBackoff>()?;
    m.add_function(wrap_pyfunction!(fnv1a64, m)?)?;
    m.add_function(wrap_pyfunction!(stable_offset_ns, m)?)?;
    m.add_function(wrap_pyfunction!(next_stable_run, m)?)?;
    Ok(())
}
