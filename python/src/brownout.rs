//! `Brownout`: what to do when a call to an optional dependency is refused — serve the
//! fallback, fail fast, or proceed (for exempt operations refused locally) — and
//! `BrownoutTable`, the same decision for up to `capacity` named operations.
//!
//! Refusal kinds: `"breaker_open"`, `"bulkhead_full"`, `"budget_exhausted"`,
//! `"throttled"` (local refusals), `"timeout"`, `"overloaded"`, `"failed"`. Decisions:
//! `"serve_fallback"`, `"fail_fast"`, `"proceed"`.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use guards::handle::{AnyBrownoutTable, InPlace};
use guards::schema::BROWNOUT;
use guards_core::brownout::{
    operation_key as core_operation_key, Brownout, BrownoutConfig, BrownoutStats, RefusalKind,
    RefusalKinds, RegisterError,
};
use guards_core::ConfigErrorKind;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyString, PyTuple};

use crate::config::{self, Args};
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

/// A brownout config from its settings: `optional`, `exempt` (bools) and `fallback_on`
/// (an iterable of kind names, or an int bit mask), checked by ffi's schema.
fn config_of(mut a: Args<'_>) -> PyResult<BrownoutConfig> {
    let py_kinds = a.take("fallback_on");
    let mut c = BROWNOUT.defaults();
    a.apply(&BROWNOUT, &mut c)?;
    if let Some(v) = py_kinds {
        if v.is_none() {
            return Err(config::wrong_type(
                "fallback_on",
                "an iterable of refusal kind names or an int bit mask",
                &v,
            ));
        }
        c.fallback_on = kinds_of(&v)?;
    }
    Ok(c)
}

fn config_dict<'py>(py: Python<'py>, c: &BrownoutConfig) -> PyResult<Bound<'py, PyDict>> {
    let d = config::to_dict(py, &BROWNOUT, c)?;
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
    /// Built in place by ffi: core's state may be cache-line aligned.
    pub(crate) b: InPlace<Brownout>,
}

#[pymethods]
impl PyBrownout {
    /// `Brownout(optional=False, exempt=False, fallback_on=[every kind])`: an `optional`
    /// operation serves its fallback when refused for a kind in `fallback_on` (a list of
    /// names or a bit mask); an `exempt` one proceeds past local refusals.
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, optional=False, exempt=False, fallback_on=None)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = args.py();
        let c = config_of(Args::collect("Brownout", &[], args, kwargs)?)?;
        BROWNOUT.validate(&c).map_err(|f| errors::failure(py, f))?;
        let b = InPlace::<Brownout>::new(c).map_err(|f| errors::failure(py, f))?;
        Ok(PyBrownout { b })
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

/// Brownout policies for up to `capacity` operations, found by key (an int, or a name
/// hashed with `operation_key`). Registering takes a write lock; everything else a read
/// lock, so decisions on different operations do not wait for each other.
#[pyclass(module = "guards", name = "BrownoutTable", frozen)]
pub struct PyBrownoutTable {
    t: RwLock<AnyBrownoutTable>,
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
    fn read(&self) -> RwLockReadGuard<'_, AnyBrownoutTable> {
        self.t.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, AnyBrownoutTable> {
        self.t.write().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl PyBrownoutTable {
    /// `BrownoutTable(capacity=16)`: room for `capacity` operations (16, 64, 256 or 1024
    /// slots are allocated; any capacity in 1..=1024 is accepted).
    #[new]
    #[pyo3(signature = (*args, **kwargs), text_signature = "(capacity=16)")]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = args.py();
        let mut a = Args::collect("BrownoutTable", &["capacity"], args, kwargs)?;
        let cap = match a.take("capacity") {
            Some(v) => util::get_uint("capacity", &v, Ctx::Config, 1024, "1 to 1024")?,
            None => 16,
        };
        if !a.is_empty() {
            return Err(PyTypeError::new_err(format!(
                "BrownoutTable() got an unexpected keyword argument '{}'",
                a.names().join("', '")
            )));
        }
        let t = AnyBrownoutTable::new(cap).map_err(|f| errors::failure(py, f))?;
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
    #[pyo3(signature = (key, **settings), text_signature = "($self, key, *, optional=False, exempt=False, fallback_on=None)")]
    fn register(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<usize> {
        let k = key_of(key)?;
        let c = config_of(Args::collect(
            "BrownoutTable.register",
            &[],
            &PyTuple::empty(py),
            settings,
        )?)?;
        let mut guard = self.write();
        if guards::with_brownout_table!(&*guard, t => t.len()) >= self.capacity
            && c.validate().is_ok()
        {
            let dup = guards::with_brownout_table!(&*guard, t => t.get(k).is_some());
            if !dup {
                return Err(PyRuntimeError::new_err(format!(
                    "brownout table is full ({} operations)",
                    self.capacity
                )));
            }
        }
        let r = guards::with_brownout_table!(&mut *guard, t => t.register(k, c));
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
        Ok(guards::with_brownout_table!(&*self.read(), t => t.on_refusal(k, kind)).name())
    }

    /// Count a call served in full on operation `key`; `False` for an unknown key.
    fn on_full(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = key_of(key)?;
        Ok(guards::with_brownout_table!(&*self.read(), t => t.on_full(k)))
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
                let (totals, unknown) =
                    guards::with_brownout_table!(&*self.read(), t => (t.totals(), t.unknown()));
                let d = stats_of(py, totals)?;
                d.set_item("unknown", unknown)?;
                Ok(Some(d))
            }
            Some(key) => {
                let k = key_of(key)?;
                let s =
                    guards::with_brownout_table!(&*self.read(), t => t.get(k).map(Brownout::stats));
                s.map(|s| stats_of(py, s)).transpose()
            }
        }
    }

    /// The counters summed over every registered operation.
    fn totals<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_of(
            py,
            guards::with_brownout_table!(&*self.read(), t => t.totals()),
        )
    }

    /// Refusals and full calls reported for keys that are not registered.
    fn unknown(&self) -> u64 {
        guards::with_brownout_table!(&*self.read(), t => t.unknown())
    }

    /// The configuration of operation `key`, or `None` if it is not registered.
    fn config<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let k = key_of(key)?;
        let c = guards::with_brownout_table!(&*self.read(), t => t.get(k).map(|b| *b.config()));
        c.map(|c| config_dict(py, &c)).transpose()
    }

    fn __len__(&self) -> usize {
        guards::with_brownout_table!(&*self.read(), t => t.len())
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = key_of(key)?;
        Ok(guards::with_brownout_table!(&*self.read(), t => t.get(k).is_some()))
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
