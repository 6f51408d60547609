//! `Brownout`: what to do when a call to an optional dependency is refused — serve the
//! fallback, fail fast, or proceed (for exempt operations refused locally) — and
//! `BrownoutTable`, the same decision for up to `capacity` named operations.
//!
//! Refusal kinds: `"breaker_open"`, `"bulkhead_full"`, `"budget_exhausted"`,
//! `"throttled"` (local refusals), `"timeout"`, `"overloaded"`, `"failed"`. Decisions:
//! `"serve_fallback"`, `"fail_fast"`, `"proceed"`.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use guards_core::brownout::{
    operation_key as core_operation_key, Brownout, BrownoutConfig, BrownoutStats, BrownoutTable,
    RefusalKind, RefusalKinds, RegisterError,
};
use guards_core::ConfigErrorKind;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyString};

use crate::errors;
use crate::util::{self, given, Ctx};

const KINDS_EXPECTED: &str = "one of \"breaker_open\", \"bulkhead_full\", \"budget_exhausted\", \
     \"throttled\", \"timeout\", \"overloaded\", \"failed\"";

/// A refusal kind by name.
fn kind_of(v: &Bound<'_, PyAny>) -> PyResult<RefusalKind> {
    let name = util::get_str("kind", v)?;
    RefusalKind::from_name(&name).ok_or_else(|| {
        util::bad_value(
            v.py(),
            Ctx::Arg,
            "kind",
            ConfigErrorKind::OutOfRange,
            KINDS_EXPECTED,
        )
    })
}

/// `fallback_on`: an iterable of kind names, or an int bit mask (bit n = kind n).
fn kinds_of(v: &Bound<'_, PyAny>) -> PyResult<RefusalKinds> {
    let py = v.py();
    if v.is_instance_of::<PyInt>() {
        let mask = util::get_uint("fallback_on", v, Ctx::Config, 255, "a bit mask in 0..=127")?;
        return Ok(RefusalKinds(u8::try_from(mask).unwrap_or(u8::MAX)));
    }
    if v.is_instance_of::<PyString>() {
        return Err(util::type_error(
            "fallback_on",
            "an iterable of refusal kind names (not a single str) or an int bit mask",
            v,
        ));
    }
    let iter = v.try_iter().map_err(|_| {
        util::type_error(
            "fallback_on",
            "an iterable of refusal kind names or an int bit mask",
            v,
        )
    })?;
    let mut set = RefusalKinds::NONE;
    for item in iter {
        let item = item?;
        let name = util::get_str("fallback_on", &item)?;
        let kind = RefusalKind::from_name(&name).ok_or_else(|| {
            util::bad_value(
                py,
                Ctx::Config,
                "fallback_on",
                ConfigErrorKind::OutOfRange,
                KINDS_EXPECTED,
            )
        })?;
        set = set.with(kind);
    }
    Ok(set)
}

fn kinds_list<'py>(py: Python<'py>, k: RefusalKinds) -> PyResult<Bound<'py, PyList>> {
    let names: Vec<&str> = RefusalKind::ALL
        .into_iter()
        .filter(|x| k.contains(*x))
        .map(RefusalKind::name)
        .collect();
    PyList::new(py, names)
}

fn config_of(
    optional: Option<&Bound<'_, PyAny>>,
    exempt: Option<&Bound<'_, PyAny>>,
    fallback_on: Option<&Bound<'_, PyAny>>,
) -> PyResult<BrownoutConfig> {
    let mut c = BrownoutConfig::default();
    if let Some(v) = given(optional) {
        c.optional = util::get_bool("optional", v)?;
    }
    if let Some(v) = given(exempt) {
        c.exempt = util::get_bool("exempt", v)?;
    }
    if let Some(v) = given(fallback_on) {
        c.fallback_on = kinds_of(v)?;
    }
    Ok(c)
}

fn config_dict<'py>(py: Python<'py>, c: &BrownoutConfig) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("optional", c.optional)?;
    d.set_item("exempt", c.exempt)?;
    d.set_item("fallback_on", kinds_list(py, c.fallback_on)?)?;
    Ok(d)
}

fn stats_of<'py>(py: Python<'py>, s: BrownoutStats) -> PyResult<Bound<'py, PyDict>> {
    util::stats_dict(
        py,
        &[
            ("full", s.full),
            ("degraded", s.degraded),
            ("errors", s.errors),
            ("proceeded", s.proceeded),
        ],
    )
}

/// One operation's brownout policy and counters.
#[pyclass(module = "guards", name = "Brownout", frozen)]
#[derive(Debug)]
pub struct PyBrownout {
    /// Boxed: core's state may be cache-line aligned (see `check_pyclass_alignment`).
    b: Box<Brownout>,
}

#[pymethods]
impl PyBrownout {
    /// `Brownout(optional=False, exempt=False, fallback_on=None)`: an `optional`
    /// operation serves its fallback when refused for a kind in `fallback_on` (all kinds
    /// when `None`; a list of names or a bit mask); an `exempt` one proceeds past local
    /// refusals.
    #[new]
    #[pyo3(
        signature = (*, optional = None, exempt = None, fallback_on = None),
        text_signature = "(*, optional=False, exempt=False, fallback_on=None)"
    )]
    fn new(
        py: Python<'_>,
        optional: Option<&Bound<'_, PyAny>>,
        exempt: Option<&Bound<'_, PyAny>>,
        fallback_on: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let c = config_of(optional, exempt, fallback_on)?;
        let b = Brownout::new(c).map_err(|e| errors::config_error(py, e))?;
        Ok(PyBrownout { b: Box::new(b) })
    }

    /// The configuration (`fallback_on` as a list of kind names).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config_dict(py, self.b.config())
    }

    /// The decision for a refusal of `kind`, without counting it.
    fn decide(&self, kind: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        Ok(self.b.config().decide(kind_of(kind)?).name())
    }

    /// The decision for a refusal of `kind`, counted in the stats.
    fn on_refusal(&self, kind: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        Ok(self.b.on_refusal(kind_of(kind)?).name())
    }

    /// Count a call served in full.
    fn on_full(&self) {
        self.b.on_full();
    }

    /// Counters: `full`, `degraded` (fallback served), `errors` (failed fast), `proceeded`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_of(py, self.b.stats())
    }

    fn __repr__(&self) -> String {
        let c = self.b.config();
        format!(
            "Brownout(optional={}, exempt={})",
            util::py_bool(c.optional),
            util::py_bool(c.exempt)
        )
    }
}

/// `operation_key(name)`: the 64-bit key of an operation name (FNV-1a of its UTF-8 bytes).
#[pyfunction]
pub(crate) fn operation_key(name: &Bound<'_, PyAny>) -> PyResult<u64> {
    let s = util::get_str("name", name)?;
    Ok(core_operation_key(&s))
}

enum Table {
    T16(Box<BrownoutTable<16>>),
    T64(Box<BrownoutTable<64>>),
    T256(Box<BrownoutTable<256>>),
    T1024(Box<BrownoutTable<1024>>),
}

macro_rules! with_t {
    ($t:expr, $x:ident => $body:expr) => {
        match $t {
            Table::T16($x) => $body,
            Table::T64($x) => $body,
            Table::T256($x) => $body,
            Table::T1024($x) => $body,
        }
    };
}

/// Brownout policies for up to `capacity` operations, found by key (an int, or a name
/// hashed with `operation_key`). Registering takes a write lock; everything else a read
/// lock, so decisions on different operations do not wait for each other.
#[pyclass(module = "guards", name = "BrownoutTable", frozen)]
pub struct PyBrownoutTable {
    t: RwLock<Table>,
    capacity: usize,
}

impl std::fmt::Debug for PyBrownoutTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrownoutTable")
            .field("capacity", &self.capacity)
            .finish()
    }
}

fn key_of(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.is_instance_of::<PyString>() {
        return operation_key(v);
    }
    if v.is_instance_of::<PyInt>() {
        return util::get_u64("key", v, Ctx::Arg);
    }
    Err(util::type_error(
        "key",
        "an operation name (str) or key (int)",
        v,
    ))
}

impl PyBrownoutTable {
    fn read(&self) -> RwLockReadGuard<'_, Table> {
        self.t.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Table> {
        self.t.write().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl PyBrownoutTable {
    /// `BrownoutTable(capacity=16)`: room for `capacity` operations (16, 64, 256 or 1024
    /// slots are allocated; any capacity in 1..=1024 is accepted).
    #[new]
    #[pyo3(signature = (*, capacity = None), text_signature = "(*, capacity=16)")]
    fn new(py: Python<'_>, capacity: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let cap = match given(capacity) {
            Some(v) => util::get_uint("capacity", v, Ctx::Config, 1024, "1..=1024")?,
            None => 16,
        };
        let t = match cap {
            0 => {
                return Err(util::bad_value(
                    py,
                    Ctx::Config,
                    "capacity",
                    ConfigErrorKind::Zero,
                    "1..=1024",
                ))
            }
            1..=16 => Table::T16(Box::default()),
            17..=64 => Table::T64(Box::default()),
            65..=256 => Table::T256(Box::default()),
            _ => Table::T1024(Box::default()),
        };
        Ok(PyBrownoutTable {
            t: RwLock::new(t),
            capacity: usize::try_from(cap).unwrap_or(1024),
        })
    }

    /// Most operations the table holds.
    #[getter]
    fn capacity(&self) -> usize {
        self.capacity
    }

    /// Register the operation `key` (int or name) with a brownout policy; returns its
    /// index. Raises `ConfigError` for a bad policy, `ValueError` for a key already
    /// registered, `RuntimeError` when the table is full.
    #[pyo3(signature = (key, *, optional = None, exempt = None, fallback_on = None))]
    fn register(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        optional: Option<&Bound<'_, PyAny>>,
        exempt: Option<&Bound<'_, PyAny>>,
        fallback_on: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let k = key_of(key)?;
        let c = config_of(optional, exempt, fallback_on)?;
        let mut guard = self.write();
        if with_t!(&*guard, t => t.len()) >= self.capacity && c.validate().is_ok() {
            let dup = with_t!(&*guard, t => t.get(k).is_some());
            if !dup {
                return Err(PyRuntimeError::new_err(format!(
                    "brownout table is full ({} operations)",
                    self.capacity
                )));
            }
        }
        let r = with_t!(&mut *guard, t => t.register(k, c));
        r.map_err(|e| match e {
            RegisterError::Config(ce) => errors::config_error(py, ce),
            RegisterError::Duplicate => {
                PyValueError::new_err(format!("operation key {k:#018x} is already registered"))
            }
            RegisterError::Full => PyRuntimeError::new_err(format!(
                "brownout table is full ({} operations)",
                self.capacity
            )),
            other => PyRuntimeError::new_err(other.to_string()),
        })
    }

    /// The decision for a refusal of `kind` on operation `key` (counted; an unknown key
    /// fails fast and counts as unknown).
    fn on_refusal(
        &self,
        key: &Bound<'_, PyAny>,
        kind: &Bound<'_, PyAny>,
    ) -> PyResult<&'static str> {
        let k = key_of(key)?;
        let kind = kind_of(kind)?;
        Ok(with_t!(&*self.read(), t => t.on_refusal(k, kind)).name())
    }

    /// Count a call served in full on operation `key`; `False` for an unknown key.
    fn on_full(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = key_of(key)?;
        Ok(with_t!(&*self.read(), t => t.on_full(k)))
    }

    /// Without `key`: the totals over every operation plus `unknown`. With `key`: that
    /// operation's counters, or `None` if it is not registered.
    #[pyo3(signature = (key = None))]
    fn stats<'py>(
        &self,
        py: Python<'py>,
        key: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        match given(key) {
            None => {
                let (totals, unknown) = with_t!(&*self.read(), t => (t.totals(), t.unknown()));
                let d = stats_of(py, totals)?;
                d.set_item("unknown", unknown)?;
                Ok(Some(d))
            }
            Some(key) => {
                let k = key_of(key)?;
                let s = with_t!(&*self.read(), t => t.get(k).map(Brownout::stats));
                s.map(|s| stats_of(py, s)).transpose()
            }
        }
    }

    /// The counters summed over every registered operation.
    fn totals<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_of(py, with_t!(&*self.read(), t => t.totals()))
    }

    /// Refusals and full calls reported for keys that are not registered.
    fn unknown(&self) -> u64 {
        with_t!(&*self.read(), t => t.unknown())
    }

    /// The configuration of operation `key`, or `None` if it is not registered.
    fn config<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let k = key_of(key)?;
        let c = with_t!(&*self.read(), t => t.get(k).map(|b| *b.config()));
        c.map(|c| config_dict(py, &c)).transpose()
    }

    fn __len__(&self) -> usize {
        with_t!(&*self.read(), t => t.len())
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = key_of(key)?;
        Ok(with_t!(&*self.read(), t => t.get(k).is_some()))
    }

    fn __repr__(&self) -> String {
        format!(
            "BrownoutTable(capacity={}, len={})",
            self.capacity,
            self.__len__()
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBrownout>()?;
    m.add_class::<PyBrownoutTable>()?;
    m.add_function(wrap_pyfunction!(operation_key, m)?)?;
    Ok(())
}
