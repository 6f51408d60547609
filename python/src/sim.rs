//! The simulator (guards-sim) from Python: the Basketly presets, any topology given as
//! JSON, runs in one call or in steps, and their results.
//!
//! These are the native pieces of the pure-Python package `guards.sim`, which gives them
//! their public names and documentation. They are set on the module without entering its
//! `__all__`, so `from guards._guards import *` (what `guards` does) leaves them out:
//!
//! - `SimError(ValueError)`: every refusal of guards-sim, with `kind` (`unknown_preset`,
//!   `unknown_key`, `bad_value`, `bad_override`, `topology`, `guard`, `internal`), `key`,
//!   `value`, `expected` and `known` (the preset names, for `unknown_preset`);
//! - `_sim_basketly`, `_sim_topology`: one run, start to end, with the GIL released (a
//!   simulated second at a time, so Ctrl-C stops a long run);
//! - `_SimRun`: the same runs advanced in steps (progress bars), GIL released per step;
//! - `_SimResult`: columns, clock labels, summary, JSON, CSV and a printable table;
//! - `_sim_presets`, `_sim_keys`, `_sim_series`, `_sim_basketly_topology`,
//!   `_sim_check_topology`, `_sim_parse_clock`, `_sim_format_clock`;
//! - `_sim_basketly_metrics` and `_SimResult.windows` / `_SimResult.basketly_metric`: the
//!   rows, windows and values of a comparison (`guards.sim.compare`), computed by the crate.
//!
//! Every run sits inside a panic boundary: a bug in the engine comes back as a `SimError`
//! of kind `internal`, and a stepped run that hit one refuses to go on.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, PoisonError};

use guards_core::Nanos;
use guards_sim::basketly::{keys, Config, Run, GUARDS, PRESETS, PRESET_INFO, SERIES};
use guards_sim::compare::{self, Windows, BASKETLY_METRICS};
use guards_sim::topology::clock;
use guards_sim::{Limits, Sim, SimError as CoreSimError, SimResult, Stop, SummaryValue, Topology};
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::util::{self, given, Ctx};

pyo3::create_exception!(
    guards.sim,
    SimError,
    PyValueError,
    "The simulator refused a preset, an override, a topology or a guard setting. \
     `kind` says which (`unknown_preset`, `unknown_key`, `bad_value`, `bad_override`, \
     `topology`, `guard`, `internal`); `key` names the preset, key or path at fault, \
     `value` is the value given and `expected` what would be accepted (each `None` when \
     it does not apply); `known` lists the preset names for `unknown_preset`."
);

/// A Python `SimError` from its parts.
fn sim_error_parts(
    py: Python<'_>,
    kind: &str,
    message: &str,
    key: Option<&str>,
    value: Option<&str>,
    expected: Option<&str>,
    known: Option<&[&str]>,
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let inst = py.get_type::<SimError>().call1((message,))?;
        inst.setattr("kind", kind)?;
        inst.setattr("key", key)?;
        inst.setattr("value", value)?;
        inst.setattr("expected", expected)?;
        inst.setattr("known", known.map(|k| k.to_vec()))?;
        Ok(PyErr::from_value(inst))
    };
    build().unwrap_or_else(|e| e)
}

/// A Python `SimError` from guards-sim's.
fn sim_error(py: Python<'_>, e: &CoreSimError) -> PyErr {
    let msg = e.to_string();
    match e {
        CoreSimError::UnknownPreset { name, known } => {
            sim_error_parts(py, e.kind(), &msg, Some(name), None, None, Some(known))
        }
        CoreSimError::UnknownKey { key } => {
            sim_error_parts(py, e.kind(), &msg, Some(key), None, None, None)
        }
        CoreSimError::BadValue {
            key,
            value,
            expected,
        } => sim_error_parts(
            py,
            e.kind(),
            &msg,
            Some(key),
            Some(value),
            Some(expected),
            None,
        ),
        CoreSimError::BadOverride { text } => sim_error_parts(
            py,
            e.kind(),
            &msg,
            None,
            Some(text),
            Some("key=value"),
            None,
        ),
        CoreSimError::Guard { error, .. } => sim_error_parts(
            py,
            e.kind(),
            &msg,
            Some(error.field()),
            None,
            Some(error.expected()),
            None,
        ),
        _ => sim_error_parts(py, e.kind(), &msg, None, None, None, None),
    }
}

/// The error for a panic caught inside the engine.
fn internal_error(py: Python<'_>, what: &str) -> PyErr {
    sim_error_parts(
        py,
        "internal",
        &format!("internal error in the simulator ({what}); please report it with the arguments that caused it"),
        None,
        None,
        None,
        None,
    )
}

/// Run `f` inside a panic boundary; a panic comes back as its message.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        if let Some(s) = p.downcast_ref::<&str>() {
            (*s).to_owned()
        } else if let Some(s) = p.downcast_ref::<String>() {
            s.clone()
        } else {
            "panic".to_owned()
        }
    })
}

/// What a guarded engine call gives back: its result, or the Rust error, or a panic.
enum Outcome<T> {
    Ok(T),
    Sim(CoreSimError),
    Panic(String),
    /// A stepped run that has finished (or stopped after a panic).
    Finished,
}

impl<T> Outcome<T> {
    fn from(r: Result<Result<T, CoreSimError>, String>) -> Self {
        match r {
            Ok(Ok(v)) => Outcome::Ok(v),
            Ok(Err(e)) => Outcome::Sim(e),
            Err(p) => Outcome::Panic(p),
        }
    }

    fn into_py(self, py: Python<'_>) -> PyResult<T> {
        match self {
            Outcome::Ok(v) => Ok(v),
            Outcome::Sim(e) => Err(sim_error(py, &e)),
            Outcome::Panic(p) => Err(internal_error(py, &p)),
            Outcome::Finished => Err(finished_error()),
        }
    }
}

// ------------------------------------------------------------------ arguments

fn setting_arg(v: &Bound<'_, PyAny>) -> PyResult<String> {
    util::get_str("setting", v)
}

fn seed_arg(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    util::get_u64("seed", v, Ctx::Arg)
}

fn until_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    given(v).map(|v| util::get_str("until", v)).transpose()
}

/// `key=value` strings from a list or tuple of `str` (a lone `str` is refused: it would
/// be read as one override per character).
fn overrides_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(v) = given(v) else {
        return Ok(Vec::new());
    };
    if v.is_instance_of::<PyString>() {
        return Err(util::type_error(
            "overrides",
            "a list of \"key=value\" strings",
            v,
        ));
    }
    let iter = v
        .try_iter()
        .map_err(|_| util::type_error("overrides", "a list of \"key=value\" strings", v))?;
    let mut out = Vec::new();
    for item in iter {
        let item = item?;
        if !item.is_instance_of::<PyString>() {
            return Err(util::type_error(
                "overrides",
                "a list of \"key=value\" strings",
                &item,
            ));
        }
        out.push(item.extract::<String>()?);
    }
    Ok(out)
}

fn topology_arg(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<Topology> {
    let text = util::get_str("topology", v)?;
    Outcome::from(guarded(|| Topology::from_json(&text))).into_py(py)
}

fn instant_arg(field: &'static str, v: &Bound<'_, PyAny>) -> PyResult<Nanos> {
    Ok(Nanos(util::get_u64(field, v, Ctx::Arg)?))
}

/// The run's limits from `max_memory_mb` (a positive number) and `max_events` (a
/// positive integer); either may be `None` (the default: 1024 MB, no event limit).
fn limits_arg(
    max_memory_mb: Option<&Bound<'_, PyAny>>,
    max_events: Option<&Bound<'_, PyAny>>,
) -> PyResult<Limits> {
    let mut limits = Limits::default();
    if let Some(v) = given(max_memory_mb) {
        let mb = util::get_f64("max_memory_mb", v, Ctx::Arg)?;
        if !(mb.is_finite() && (1.0..=1e9).contains(&mb)) {
            return Err(PyValueError::new_err(format!(
                "`max_memory_mb` must be a number of MB in 1..=1e9, not {mb}"
            )));
        }
        limits.max_memory = (mb * (1u64 << 20) as f64) as u64;
    }
    if let Some(v) = given(max_events) {
        let n = util::get_u64("max_events", v, Ctx::Arg)?;
        if n == 0 {
            return Err(PyValueError::new_err("`max_events` must be at least 1"));
        }
        limits.max_events = Some(n);
    }
    Ok(limits)
}

// ------------------------------------------------------------------ conversions

/// A column value as Python sees it in the JSON: integral values as `int`, others as
/// `float`, non-finite values as `None`.
fn number(py: Python<'_>, x: f64) -> PyResult<Bound<'_, PyAny>> {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.0e15 {
        Ok((x as i64).into_pyobject(py)?.into_any())
    } else if x.is_finite() {
        Ok(x.into_pyobject(py)?.into_any())
    } else {
        Ok(py.None().into_bound(py))
    }
}

fn column_list<'py>(py: Python<'py>, values: &[f64]) -> PyResult<Bound<'py, PyList>> {
    let items = values
        .iter()
        .map(|x| number(py, *x))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

fn summary_value<'py>(py: Python<'py>, v: &SummaryValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        SummaryValue::Number(x) => number(py, *x)?,
        SummaryValue::Text(s) => PyString::new(py, s).into_any(),
        SummaryValue::Map(m) => {
            let d = PyDict::new(py);
            for (k, v) in m {
                d.set_item(k, summary_value(py, v)?)?;
            }
            d.into_any()
        }
        _ => py.None().into_bound(py),
    })
}

/// The Basketly settings a caller needs to read a result (windows, rates), as a dict.
fn config_dict<'py>(py: Python<'py>, c: &Config) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("setting", &c.name)?;
    d.set_item("start", clock::format_millis(c.start))?;
    d.set_item("until", clock::format_millis(c.until))?;
    d.set_item("interval_s", c.interval.as_secs_f64())?;
    d.set_item("hiccup", c.hiccup)?;
    d.set_item("hiccup_start", clock::format_millis(c.hiccup_start))?;
    d.set_item("hiccup_end", clock::format_millis(c.hiccup_end))?;
    d.set_item("hiccup_factor", c.hiccup_factor)?;
    d.set_item("rate_product", c.rate_product)?;
    d.set_item("rate_cart", c.rate_cart)?;
    d.set_item("rate_checkout", c.rate_checkout)?;
    d.set_item("shopapi_instances", c.shopapi_instances)?;
    d.set_item("stock_workers", c.stock_workers)?;
    d.set_item("db_connections", c.db_connections)?;
    Ok(d)
}

/// `[(clock time, ["key=value", ...]), ...]`: the changes of a Basketly run's timeline.
fn timeline_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(String, Vec<String>)>> {
    let Some(v) = given(v) else {
        return Ok(Vec::new());
    };
    const WHAT: &str = "a list of (clock time, [\"key=value\", ...]) pairs";
    let iter = v
        .try_iter()
        .map_err(|_| util::type_error("timeline", WHAT, v))?;
    let mut out = Vec::new();
    for item in iter {
        let item = item?;
        let (at, sets): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item
            .extract()
            .map_err(|_| util::type_error("timeline", WHAT, &item))?;
        let at = util::get_str("timeline", &at)?;
        out.push((at, overrides_arg(Some(&sets))?));
    }
    Ok(out)
}

/// Basketly preset `setting` after the `until` and `overrides` arguments.
fn basketly_config(
    py: Python<'_>,
    setting: &str,
    until: Option<&Bound<'_, PyAny>>,
    overrides: Option<&Bound<'_, PyAny>>,
) -> PyResult<Config> {
    basketly_config_at(py, setting, until, overrides, None)
}

/// Basketly preset `setting` after `until`, `overrides` and the `timeline`'s changes.
fn basketly_config_at(
    py: Python<'_>,
    setting: &str,
    until: Option<&Bound<'_, PyAny>>,
    overrides: Option<&Bound<'_, PyAny>>,
    timeline: Option<&Bound<'_, PyAny>>,
) -> PyResult<Config> {
    let until = until_arg(until)?;
    let overrides = overrides_arg(overrides)?;
    let timeline = timeline_arg(timeline)?;
    Outcome::from(guarded(|| {
        let mut c = Config::with_overrides(setting, &overrides)?;
        if let Some(u) = until.as_deref() {
            c.set("until", u)?;
        }
        for (at, sets) in &timeline {
            c.at(at, sets)?;
        }
        Ok(c)
    }))
    .into_py(py)
}

// ------------------------------------------------------------------ functions

/// The preset names, in the order docs/basketly.md lists them.
#[pyfunction]
pub(crate) fn _sim_presets() -> Vec<&'static str> {
    PRESETS.to_vec()
}

/// Every override key with a one-line description (`HOP.` stands for `app.`,
/// `stock_call.` and `db_call.`): the model's keys, and one per field of each guard's
/// config, generated from guards-ffi's schemas.
#[pyfunction]
pub(crate) fn _sim_keys() -> Vec<(String, String)> {
    keys().to_vec()
}

/// Every Basketly preset with a one-line description.
#[pyfunction]
pub(crate) fn _sim_preset_info() -> Vec<(&'static str, &'static str)> {
    PRESET_INFO.to_vec()
}

/// Each C-line guard as overrides that switch it on alone: (name, description, overrides).
#[pyfunction]
pub(crate) fn _sim_guards() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    GUARDS
        .iter()
        .map(|(n, d, s)| (*n, *d, s.to_vec()))
        .collect()
}

/// The named Basketly series and the generic columns each one sums.
#[pyfunction]
pub(crate) fn _sim_series() -> Vec<(&'static str, Vec<&'static str>)> {
    SERIES
        .iter()
        .map(|(n, parts)| (*n, parts.to_vec()))
        .collect()
}

/// The rows of a Basketly comparison, in order: (key, label, section, unit).
#[pyfunction]
pub(crate) fn _sim_basketly_metrics(
) -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    BASKETLY_METRICS
        .iter()
        .map(|m| (m.key, m.label, m.section.as_str(), m.unit.as_str()))
        .collect()
}

/// Run Basketly preset `setting` with `seed` to `until` (`"HH:MM:SS[.fff]"`, or the
/// preset's end) after the `key=value` `overrides`, with the GIL released; Ctrl-C stops it
/// (`KeyboardInterrupt`).
#[pyfunction]
#[pyo3(signature = (setting, seed, until = None, overrides = None, timeline = None))]
pub(crate) fn _sim_basketly(
    py: Python<'_>,
    setting: &Bound<'_, PyAny>,
    seed: &Bound<'_, PyAny>,
    until: Option<&Bound<'_, PyAny>>,
    overrides: Option<&Bound<'_, PyAny>>,
    timeline: Option<&Bound<'_, PyAny>>,
) -> PyResult<PySimResult> {
    PySimRun::basketly(py, setting, seed, until, overrides, timeline)?.run_to_end(py)
}

/// Run a topology (JSON text) with `seed` from its start to `until_ns` (nanoseconds since
/// midnight), with the GIL released; Ctrl-C stops it. `label` names the result's setting.
#[pyfunction]
#[pyo3(signature = (topology, seed, until_ns, label = None, max_memory_mb = None, max_events = None, timeline = None, trace = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn _sim_topology(
    py: Python<'_>,
    topology: &Bound<'_, PyAny>,
    seed: &Bound<'_, PyAny>,
    until_ns: &Bound<'_, PyAny>,
    label: Option<&Bound<'_, PyAny>>,
    max_memory_mb: Option<&Bound<'_, PyAny>>,
    max_events: Option<&Bound<'_, PyAny>>,
    timeline: Option<&Bound<'_, PyAny>>,
    trace: Option<&Bound<'_, PyAny>>,
) -> PyResult<PySimResult> {
    PySimRun::topology(
        py,
        topology,
        seed,
        until_ns,
        label,
        max_memory_mb,
        max_events,
        timeline,
        trace,
    )?
    .run_to_end(py)
}

/// The topology of Basketly preset `setting` (after `until` and `overrides`) as JSON text,
/// a starting point for variations run with `_sim_topology`.
#[pyfunction]
#[pyo3(signature = (setting, until = None, overrides = None))]
pub(crate) fn _sim_basketly_topology(
    py: Python<'_>,
    setting: &Bound<'_, PyAny>,
    until: Option<&Bound<'_, PyAny>>,
    overrides: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let setting = setting_arg(setting)?;
    let c = basketly_config(py, &setting, until, overrides)?;
    Outcome::from(guarded(|| c.topology().map(|t| t.to_json()))).into_py(py)
}

/// The Basketly settings of preset `setting` after `until` and `overrides`, as a dict.
#[pyfunction]
#[pyo3(signature = (setting, until = None, overrides = None))]
pub(crate) fn _sim_basketly_config<'py>(
    py: Python<'py>,
    setting: &Bound<'py, PyAny>,
    until: Option<&Bound<'py, PyAny>>,
    overrides: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let setting = setting_arg(setting)?;
    let c = basketly_config(py, &setting, until, overrides)?;
    config_dict(py, &c)
}

/// Check a topology (JSON text): parse it and build the engine from it. Returns the
/// topology written out in full (every default filled in) and its start in nanoseconds.
#[pyfunction]
pub(crate) fn _sim_check_topology(
    py: Python<'_>,
    topology: &Bound<'_, PyAny>,
) -> PyResult<(String, u64)> {
    let t = topology_arg(py, topology)?;
    let start = t.start.as_u64();
    let text = t.to_json();
    Outcome::from(guarded(|| Sim::new(t, 0).map(|_| ()))).into_py(py)?;
    Ok((text, start))
}

/// `"HH:MM:SS[.fff]"` as nanoseconds since midnight, or `None` if it does not parse.
#[pyfunction]
pub(crate) fn _sim_parse_clock(text: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
    let s = util::get_str("text", text)?;
    Ok(clock::parse(&s).map(Nanos::as_u64))
}

/// Nanoseconds since midnight as `"HH:MM:SS"` (or `"HH:MM:SS.mmm"` with `millis`).
#[pyfunction]
#[pyo3(signature = (ns, millis = false))]
pub(crate) fn _sim_format_clock(ns: &Bound<'_, PyAny>, millis: bool) -> PyResult<String> {
    let t = instant_arg("ns", ns)?;
    Ok(if millis {
        clock::format_millis(t)
    } else {
        clock::format(t)
    })
}

// ------------------------------------------------------------------ stepped runs

enum Runner {
    Basketly(Box<Run>),
    Topology {
        sim: Box<Sim>,
        /// The timeline: from each instant on, this topology.
        changes: Vec<(Nanos, Topology)>,
        next: usize,
    },
}

impl Runner {
    fn now(&self) -> Nanos {
        match self {
            Runner::Basketly(r) => r.now(),
            Runner::Topology { sim, .. } => sim.now(),
        }
    }

    fn stopped(&self) -> Option<Stop> {
        match self {
            Runner::Basketly(r) => r.stopped(),
            Runner::Topology { sim, .. } => sim.stopped(),
        }
    }
}

/// A run's early stop as a dict: `at` (clock time), `reason` (`memory` or `events`),
/// `limit` (bytes or events) and `message`.
fn stop_dict<'py>(py: Python<'py>, stop: &Stop) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("at", clock::format_millis(stop.at))?;
    d.set_item("reason", stop.reason.kind())?;
    d.set_item("limit", stop.reason.limit())?;
    d.set_item("message", stop.to_string())?;
    Ok(d)
}

/// One run advanced in steps. Made by `_SimRun.basketly(...)` or `_SimRun.topology(...)`.
#[pyclass(module = "guards.sim", name = "_SimRun", frozen)]
pub struct PySimRun {
    /// `None` once finished, or after a panic.
    runner: Mutex<Option<Runner>>,
    start: Nanos,
    until: Nanos,
    interval: Nanos,
    label: String,
    /// The Basketly settings, for `config()`.
    config: Option<Box<Config>>,
}

impl std::fmt::Debug for PySimRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("_SimRun")
            .field("label", &self.label)
            .field("start", &self.start)
            .field("until", &self.until)
            .finish()
    }
}

impl PySimRun {
    fn lock(&self) -> MutexGuard<'_, Option<Runner>> {
        self.runner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_stopped(&self) -> bool {
        self.lock().as_ref().is_some_and(|r| r.stopped().is_some())
    }

    /// Run every event before `to` (at most the end) with the GIL released.
    fn advance_to(&self, py: Python<'_>, to: Nanos) -> PyResult<()> {
        let to = to.min(self.until);
        let out = py.detach(|| {
            let mut g = self.lock();
            let Some(runner) = g.as_mut() else {
                return Outcome::Finished;
            };
            let r = guarded(|| match runner {
                Runner::Basketly(r) => r.advance(to),
                Runner::Topology { sim, changes, next } => {
                    while let Some((at, topo)) = changes.get(*next) {
                        if *at > to || sim.stopped().is_some() {
                            break;
                        }
                        sim.advance(*at);
                        // Checked when the run was made: the same shape, valid guards.
                        let _ = sim.reconfigure(topo.clone());
                        *next += 1;
                    }
                    sim.advance(to)
                }
            });
            match r {
                Ok(()) => Outcome::Ok(()),
                Err(p) => {
                    *g = None;
                    Outcome::Panic(p)
                }
            }
        });
        out.into_py(py)
    }

    /// Run to the end a simulated second at a time (or an interval, if longer), checking
    /// for Ctrl-C between steps, then finish (a limit may stop it sooner).
    fn run_to_end(&self, py: Python<'_>) -> PyResult<PySimResult> {
        let step = Nanos::from_secs(1).max(self.interval);
        loop {
            let now = Nanos(self.now_ns());
            if now >= self.until || self.is_stopped() {
                break;
            }
            self.advance_to(py, now.saturating_add(step))?;
            py.check_signals()?;
        }
        self.finish(py)
    }
}

fn finished_error() -> PyErr {
    PyRuntimeError::new_err("this run has finished (or stopped after an internal error)")
}

#[pymethods]
impl PySimRun {
    /// A Basketly run: preset `setting`, `seed`, optional `until` and `overrides`.
    #[staticmethod]
    #[pyo3(signature = (setting, seed, until = None, overrides = None, timeline = None))]
    fn basketly(
        py: Python<'_>,
        setting: &Bound<'_, PyAny>,
        seed: &Bound<'_, PyAny>,
        until: Option<&Bound<'_, PyAny>>,
        overrides: Option<&Bound<'_, PyAny>>,
        timeline: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let setting = setting_arg(setting)?;
        let seed = seed_arg(seed)?;
        let c = basketly_config_at(py, &setting, until, overrides, timeline)?;
        let run = py.detach(|| Outcome::from(guarded(|| Run::from_config(&c, seed))));
        let run = run.into_py(py)?;
        Ok(PySimRun {
            runner: Mutex::new(Some(Runner::Basketly(Box::new(run)))),
            start: c.start,
            until: c.until.max(c.start),
            interval: c.interval,
            label: c.name.clone(),
            config: Some(Box::new(c)),
        })
    }

    /// A run of `topology` (JSON text) with `seed` until `until_ns` (nanoseconds since
    /// midnight, after the topology's start); `label` names the result's setting;
    /// `max_memory_mb` and `max_events` stop it early, keeping what it computed.
    #[staticmethod]
    #[pyo3(signature = (topology, seed, until_ns, label = None, max_memory_mb = None, max_events = None, timeline = None, trace = None))]
    #[allow(clippy::too_many_arguments)]
    fn topology(
        py: Python<'_>,
        topology: &Bound<'_, PyAny>,
        seed: &Bound<'_, PyAny>,
        until_ns: &Bound<'_, PyAny>,
        label: Option<&Bound<'_, PyAny>>,
        max_memory_mb: Option<&Bound<'_, PyAny>>,
        max_events: Option<&Bound<'_, PyAny>>,
        timeline: Option<&Bound<'_, PyAny>>,
        trace: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let limits = limits_arg(max_memory_mb, max_events)?;
        let mut changes: Vec<(Nanos, Topology)> = Vec::new();
        if let Some(v) = given(timeline) {
            const WHAT: &str = "a list of (instant in ns, topology JSON) pairs";
            let iter = v
                .try_iter()
                .map_err(|_| util::type_error("timeline", WHAT, v))?;
            for item in iter {
                let item = item?;
                let (at, text): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item
                    .extract()
                    .map_err(|_| util::type_error("timeline", WHAT, &item))?;
                changes.push((instant_arg("timeline", &at)?, topology_arg(py, &text)?));
            }
        }
        changes.sort_by_key(|(at, _)| *at);
        let trace = match given(trace) {
            None => None,
            Some(v) => {
                let (from, entry, count): (u64, Option<String>, u32) =
                    v.extract().map_err(|_| {
                        util::type_error("trace", "a (from_ns, entry or None, count) tuple", v)
                    })?;
                Some(guards_sim::trace::TraceSpec {
                    from: Nanos(from),
                    entry,
                    count,
                })
            }
        };
        let t = topology_arg(py, topology)?;
        let seed = seed_arg(seed)?;
        let until = instant_arg("until_ns", until_ns)?;
        let label = given(label)
            .map(|l| util::get_str("label", l))
            .transpose()?
            .unwrap_or_else(|| "custom".to_owned());
        if until <= t.start {
            return Err(sim_error_parts(
                py,
                "bad_value",
                &format!(
                    "bad value {:?} for until: expected a time after the topology's start {}",
                    clock::format_millis(until),
                    clock::format_millis(t.start)
                ),
                Some("until"),
                Some(&clock::format_millis(until)),
                Some("a time after the topology's start"),
                None,
            ));
        }
        let (start, interval) = (t.start, t.interval);
        let sim = py.detach(|| {
            Outcome::from(guarded(|| {
                let mut s = Sim::new(t, seed)?;
                s.set_label(&label);
                s.set_limits(limits);
                if let Some(spec) = &trace {
                    s.set_trace(spec)?;
                }
                for (at, topo) in &changes {
                    s.check_reconfigure(topo).map_err(|e| match e {
                        CoreSimError::Topology { what } => CoreSimError::Topology {
                            what: format!("the change at {}: {what}", clock::format_millis(*at)),
                        },
                        other => other,
                    })?;
                }
                Ok(s)
            }))
        });
        let sim = sim.into_py(py)?;
        Ok(PySimRun {
            runner: Mutex::new(Some(Runner::Topology {
                sim: Box::new(sim),
                changes,
                next: 0,
            })),
            start,
            until,
            interval,
            label,
            config: None,
        })
    }

    /// Run every event before `to_ns` (nanoseconds since midnight; never past the end),
    /// with the GIL released.
    fn advance(&self, py: Python<'_>, to_ns: &Bound<'_, PyAny>) -> PyResult<()> {
        let to = instant_arg("to_ns", to_ns)?;
        self.advance_to(py, to)
    }

    /// Current virtual time, nanoseconds since midnight (the end once finished).
    #[getter]
    fn now_ns(&self) -> u64 {
        self.lock()
            .as_ref()
            .map_or(self.until, Runner::now)
            .as_u64()
    }

    /// First instant simulated, nanoseconds since midnight.
    #[getter]
    fn start_ns(&self) -> u64 {
        self.start.as_u64()
    }

    /// End of the run, nanoseconds since midnight.
    #[getter]
    fn until_ns(&self) -> u64 {
        self.until.as_u64()
    }

    /// Output interval in nanoseconds.
    #[getter]
    fn interval_ns(&self) -> u64 {
        self.interval.as_u64()
    }

    /// Fraction of the run done, 0.0 to 1.0 (1.0 once a limit has stopped it).
    #[getter]
    fn progress(&self) -> f64 {
        if self.is_stopped() {
            return 1.0;
        }
        let total = self.until.saturating_sub(self.start).as_u64();
        if total == 0 {
            return 1.0;
        }
        let now = Nanos(self.now_ns());
        (now.saturating_sub(self.start).as_u64() as f64 / total as f64).min(1.0)
    }

    /// Whether `finish()` was called (or the run stopped after an internal error).
    #[getter]
    fn finished(&self) -> bool {
        self.lock().is_none()
    }

    /// Where and why a limit stopped the run early (a dict), or `None`.
    #[getter]
    fn stopped<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let stop = self.lock().as_ref().and_then(Runner::stopped);
        stop.map(|s| stop_dict(py, &s)).transpose()
    }

    /// For a Basketly run, its settings (windows, rates) as a dict; else `None`.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.config
            .as_deref()
            .map(|c| config_dict(py, c))
            .transpose()
    }

    /// Run to the end and return the result, with the GIL released. A run finishes once.
    fn finish(&self, py: Python<'_>) -> PyResult<PySimResult> {
        let out = py.detach(|| {
            let runner = self.lock().take()?;
            let until = self.until;
            Some(guarded(move || match runner {
                Runner::Basketly(r) => r.finish(),
                Runner::Topology {
                    mut sim,
                    changes,
                    next,
                } => {
                    for (at, topo) in changes.into_iter().skip(next) {
                        if at > until || sim.stopped().is_some() {
                            break;
                        }
                        sim.advance(at);
                        let _ = sim.reconfigure(topo);
                    }
                    sim.advance(until);
                    sim.result()
                }
            }))
        });
        match out {
            None => Err(finished_error()),
            Some(Ok(r)) => Ok(PySimResult { r }),
            Some(Err(p)) => Err(internal_error(py, &p)),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "_SimRun({:?}, {} to {}, progress={:.3})",
            self.label,
            clock::format_millis(self.start),
            clock::format_millis(self.until),
            self.progress()
        )
    }
}

// ------------------------------------------------------------------ results

/// The output of one run: per-interval columns, clock labels and a summary.
#[pyclass(module = "guards.sim", name = "_SimResult", frozen)]
#[derive(Debug)]
pub struct PySimResult {
    r: SimResult,
}

impl PySimResult {
    fn name_list(names: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        if names.is_instance_of::<PyString>() {
            return Err(util::type_error("names", "a list of column names", names));
        }
        let iter = names
            .try_iter()
            .map_err(|_| util::type_error("names", "a list of column names", names))?;
        iter.map(|n| util::get_str("names", &n?)).collect()
    }

    fn clock(field: &'static str, v: &Bound<'_, PyAny>) -> PyResult<String> {
        let s = util::get_str(field, v)?;
        if clock::parse(&s).is_none() {
            return Err(PyValueError::new_err(format!(
                "`{field}` must be a clock time \"HH:MM:SS[.fff]\", not {s:?}"
            )));
        }
        Ok(s)
    }

    /// The `name`, `start` and `end` arguments of `mean` and `sum`.
    fn window_args(
        name: &Bound<'_, PyAny>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
    ) -> PyResult<(String, String, String)> {
        let name = util::get_str("name", name)?;
        Ok((name, Self::clock("start", start)?, Self::clock("end", end)?))
    }
}

#[pymethods]
impl PySimResult {
    /// The preset name (or the topology's label).
    #[getter]
    fn setting(&self) -> &str {
        &self.r.setting
    }

    /// The seed.
    #[getter]
    fn seed(&self) -> u64 {
        self.r.seed
    }

    /// Interval length in seconds.
    #[getter]
    fn interval_s(&self) -> f64 {
        self.r.interval.as_secs_f64()
    }

    /// Interval length in nanoseconds.
    #[getter]
    fn interval_ns(&self) -> u64 {
        self.r.interval.as_u64()
    }

    /// Start of the first interval, nanoseconds since midnight.
    #[getter]
    fn start_ns(&self) -> u64 {
        self.r.start.as_u64()
    }

    /// Events the engine processed.
    #[getter]
    fn events(&self) -> u64 {
        self.r.stats.events
    }

    /// Where and why a limit stopped the run early (a dict: `at`, `reason`, `limit`,
    /// `message`), or `None` for a complete run.
    #[getter]
    fn stopped<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.r.stopped.map(|s| stop_dict(py, &s)).transpose()
    }

    /// Most calls in flight at once.
    #[getter]
    fn peak_calls(&self) -> usize {
        self.r.stats.peak_calls
    }

    fn __len__(&self) -> usize {
        self.r.len()
    }

    /// Clock labels (`"HH:MM:SS"`) of the interval starts.
    fn labels(&self) -> Vec<String> {
        self.r.clock_labels()
    }

    /// Column names, in output order.
    fn names(&self) -> Vec<String> {
        self.r.columns.iter().map(|c| c.name.clone()).collect()
    }

    /// One column as a list (integral values as `int`), or `None` if there is no such
    /// column.
    fn column<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let name = util::get_str("name", name)?;
        self.r.column(&name).map(|c| column_list(py, c)).transpose()
    }

    /// Every column, in output order, as a dict of lists.
    fn columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for c in &self.r.columns {
            d.set_item(&c.name, column_list(py, &c.values)?)?;
        }
        Ok(d)
    }

    /// The summary as a dict (nested dicts for grouped values, `None` for no value).
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in &self.r.summary {
            d.set_item(k, summary_value(py, v)?)?;
        }
        Ok(d)
    }

    /// The result as JSON: `{"setting", "seed", "interval_s", "series": {"t": [...],
    /// NAME: [...]}, "summary": {...}}`.
    fn to_json(&self, py: Python<'_>) -> String {
        let r = &self.r;
        py.detach(|| r.to_json())
    }

    /// The columns as CSV, first column `t`.
    fn to_csv(&self, py: Python<'_>) -> String {
        let r = &self.r;
        py.detach(|| r.to_csv())
    }

    /// A fixed-width table of the named columns, one row per interval (`-` for a name
    /// that is not a column).
    fn table(&self, names: &Bound<'_, PyAny>) -> PyResult<String> {
        let names = Self::name_list(names)?;
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        Ok(self.r.table(&refs))
    }

    /// Mean of column `name` over the intervals starting in `[start, end)` (clock times),
    /// or `None` (no such column or no interval in the window).
    fn mean(
        &self,
        name: &Bound<'_, PyAny>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
    ) -> PyResult<Option<f64>> {
        let (name, a, b) = Self::window_args(name, start, end)?;
        Ok(self.r.mean(&name, &a, &b))
    }

    /// Sum of column `name` over the intervals starting in `[start, end)` (clock times),
    /// or `None` (no such column, or `start` outside the run).
    fn sum(
        &self,
        name: &Bound<'_, PyAny>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
    ) -> PyResult<Option<f64>> {
        let (name, a, b) = Self::window_args(name, start, end)?;
        Ok(self.r.sum(&name, &a, &b))
    }

    /// The value of column `name` in the interval containing clock time `at`, or `None`.
    fn at(&self, name: &Bound<'_, PyAny>, at: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
        let name = util::get_str("name", name)?;
        let at = Self::clock("at", at)?;
        Ok(self.r.at(&name, &at))
    }

    /// The windows a comparison reads this run over (see `guards_sim::compare::Windows`),
    /// in nanoseconds since midnight: `(during_start, during_end, gauge_at, after_start or
    /// None, end)`.
    fn windows(&self) -> (u64, u64, u64, Option<u64>, u64) {
        let w = Windows::of(&self.r);
        (
            w.during_start.as_u64(),
            w.during_end.as_u64(),
            w.gauge_at.as_u64(),
            w.after_start.map(Nanos::as_u64),
            w.end.as_u64(),
        )
    }

    /// The Basketly comparison metric `key` over the given windows (clock times, as
    /// `windows` gives them): a `float`, a `str` (`recovered_at`) or `None` when the run
    /// does not have it. `KeyError` for a key that is not a Basketly metric.
    #[pyo3(signature = (key, during_start, during_end, gauge_at, after_start, end))]
    #[allow(clippy::too_many_arguments)]
    fn basketly_metric<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        during_start: &Bound<'py, PyAny>,
        during_end: &Bound<'py, PyAny>,
        gauge_at: &Bound<'py, PyAny>,
        after_start: Option<&Bound<'py, PyAny>>,
        end: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = util::get_str("key", key)?;
        let metric = compare::metric(&key)
            .ok_or_else(|| PyKeyError::new_err(format!("not a Basketly metric: {key:?}")))?;
        let at = |field: &'static str, v: &Bound<'py, PyAny>| -> PyResult<Nanos> {
            let text = Self::clock(field, v)?;
            Ok(clock::parse(&text).unwrap_or(Nanos::ZERO))
        };
        let w = Windows {
            during_start: at("during_start", during_start)?,
            during_end: at("during_end", during_end)?,
            gauge_at: at("gauge_at", gauge_at)?,
            after_start: given(after_start)
                .map(|v| at("after_start", v))
                .transpose()?,
            end: at("end", end)?,
        };
        Ok(match metric.read(&self.r, &w) {
            SummaryValue::Number(x) => x.into_pyobject(py)?.into_any(),
            SummaryValue::Text(t) => PyString::new(py, &t).into_any(),
            _ => py.None().into_bound(py),
        })
    }

    /// The traces of single actions as JSON text (a list; empty when none were asked for).
    fn traces_json(&self, py: Python<'_>) -> String {
        let r = &self.r;
        py.detach(|| r.traces_json())
    }

    /// The traces of single actions as printable timelines.
    fn trace_timelines(&self) -> Vec<String> {
        self.r.traces.iter().map(|t| t.timeline()).collect()
    }

    /// Names of the edges whose call latencies were recorded.
    fn latency_edges(&self) -> Vec<String> {
        self.r.latencies.iter().map(|l| l.edge.clone()).collect()
    }

    /// Latencies of whole successful calls over edge `edge` in nanoseconds, in completion
    /// order (`attempts=True`: single successful attempts), or `None` if the edge did not
    /// record them.
    #[pyo3(signature = (edge, attempts = false))]
    fn latencies_ns(&self, edge: &Bound<'_, PyAny>, attempts: bool) -> PyResult<Option<Vec<u64>>> {
        let edge = util::get_str("edge", edge)?;
        Ok(self.r.latency(&edge).map(|l| {
            let v = if attempts { &l.attempts } else { &l.calls };
            v.iter().map(|(_, d)| d.as_u64()).collect()
        }))
    }

    fn __repr__(&self) -> String {
        format!(
            "_SimResult({:?}, seed={}, {} intervals)",
            self.r.setting,
            self.r.seed,
            self.r.len()
        )
    }
}

/// Register the simulator's native pieces without adding them to `__all__`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let err = py.get_type::<SimError>();
    err.setattr("kind", py.None())?;
    err.setattr("key", py.None())?;
    err.setattr("value", py.None())?;
    err.setattr("expected", py.None())?;
    err.setattr("known", py.None())?;
    m.setattr("SimError", err)?;
    m.setattr("_SimRun", py.get_type::<PySimRun>())?;
    m.setattr("_SimResult", py.get_type::<PySimResult>())?;
    let functions = [
        wrap_pyfunction!(_sim_presets, m)?,
        wrap_pyfunction!(_sim_keys, m)?,
        wrap_pyfunction!(_sim_series, m)?,
        wrap_pyfunction!(_sim_basketly_metrics, m)?,
        wrap_pyfunction!(_sim_preset_info, m)?,
        wrap_pyfunction!(_sim_guards, m)?,
        wrap_pyfunction!(_sim_basketly, m)?,
        wrap_pyfunction!(_sim_topology, m)?,
        wrap_pyfunction!(_sim_basketly_topology, m)?,
        wrap_pyfunction!(_sim_basketly_config, m)?,
        wrap_pyfunction!(_sim_check_topology, m)?,
        wrap_pyfunction!(_sim_parse_clock, m)?,
        wrap_pyfunction!(_sim_format_clock, m)?,
    ];
    for f in functions {
        let name: String = f.getattr("__name__")?.extract()?;
        m.setattr(name.as_str(), f)?;
    }
    Ok(())
}
