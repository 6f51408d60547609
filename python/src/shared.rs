//! `guards.shared`: host-wide guards from Python, over ffi's region layer
//! (`guards::shared`, see `docs/shared.md`).
//!
//! A `Region` is a file (under `/dev/shm`, or any path) mapped by every process that opens
//! it: the workers of gunicorn, uvicorn `--workers`, `multiprocessing` (fork or spawn).
//! `region.circuit_breaker(name, ...)`, `.bulkhead(...)`, `.limiter(...)`, `.admission(...)`
//! return host-wide guards with the method names of the package's own classes; their
//! permits are recorded in the region with this process as owner, so a process killed while
//! holding one gives it back on the next reclaim (`docs/shared.md`, "Dead holders").
//! `region.retry_budget(...)` returns a real `guards.RetryBudget` whose state lives in the
//! region (a budget hands out no permits: nothing to reclaim).
//!
//! Settings are parsed by the package's own constructors (a private guard is built from the
//! arguments and its config taken), so every setting, default and error is the same as for
//! `guards.CircuitBreaker(...)` and the others. Outcomes go through the call contract:
//! `permit.report(outcome)`, or `with permit:` classifying the exception leaving the block
//! with `guards.classify_exception`.
//!
//! `keyed_breakers`, `adaptive_throttle`, `latency_tracker`, `hedging` and `brownout` too
//! (the last four, like the retry budget, as the package's own classes).
//!
//! The read-only methods (`state`, `status`, `stats`, `config`, `in_flight`, ...) are the
//! package's own: each shared guard keeps a private view of its state (a guard of the
//! package's class over the region's memory) and hands them over to it. A region that
//! handed out a guard stays mapped until the process exits (`PyRegion::pin`).

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

use guards::error::{Detail, Failure, GuardsResult};
use guards::handle::{AnyBreaker, InPlace};
use guards::permit::{Granted, PermitToken};
use guards::schema::CIRCUIT_BREAKER;
use guards::shared::{AnyShared, GuardKind, PermitView, Refusal, Region, RegionOptions, Shared};
use guards_core::adaptive_throttle::AdaptiveThrottle;
use guards_core::admission::Admission;
use guards_core::brownout::Brownout;
use guards_core::bulkhead::Bulkhead;
use guards_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerRejectReason, CircuitBreakerRejected, KeyedBreakers,
    KeyedBreakersRejectReason, KeyedBreakersRejected,
};
use guards_core::hedging::Hedging;
use guards_core::latency_tracker::LatencyTracker;
use guards_core::limiter::Limiter;
use guards_core::retry_budget::RetryBudget;
use guards_core::{Nanos, Outcome, Priority};
use pyo3::exceptions::{PyAttributeError, PyOSError, PyRuntimeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::adaptive_throttle::PyAdaptiveThrottle;
use crate::admission::PyAdmission;
use crate::brownout::PyBrownout;
use crate::bulkhead::PyBulkhead;
use crate::circuit_breaker::PyCircuitBreaker;
use crate::clock;
use crate::config::Args;
use crate::errors;
use crate::events::{self, Announced, AnnouncedByKey, Op};
use crate::hedging::PyHedging;
use crate::latency_tracker::PyLatencyTracker;
use crate::limiter::{priority_arg, PyLimiter};
use crate::outcome;
use crate::permit;
use crate::retry_budget::PyRetryBudget;
use crate::util::{self, given, Ctx};

pyo3::create_exception!(
    guards.shared,
    RegionError,
    PyRuntimeError,
    "A shared region could not do what was asked (not a guard's refusal)."
);
pyo3::create_exception!(
    guards.shared,
    RegionInvalid,
    RegionError,
    "The file is not a region, or it is damaged or truncated."
);
pyo3::create_exception!(
    guards.shared,
    RegionIncompatible,
    RegionError,
    "The region was made by another build of guards, another boot, or another pid namespace."
);
pyo3::create_exception!(
    guards.shared,
    RegionFull,
    RegionError,
    "The region has no directory entry or no data bytes left for a new guard."
);
pyo3::create_exception!(
    guards.shared,
    RegionTimeout,
    RegionError,
    "Another live process creating the same guard did not finish within `wait_timeout`."
);
pyo3::create_exception!(
    guards.shared,
    GuardMismatch,
    RegionError,
    "A guard of this name exists with another kind, capacity or config. `name` is the \
     guard's name, `field` what differs (`kind`, `capacity`, `layout`, `config`), `existing` \
     and `requested` the two values (kind names, capacities, or config hashes)."
);
pyo3::create_exception!(
    guards.shared,
    GuardNotFound,
    RegionError,
    "No region at this path (with `create=False`), or no guard of this name."
);
pyo3::create_exception!(
    guards.shared,
    PermitSlotsExhausted,
    RegionError,
    "The region's permit table is full (`permit_slots` permits in flight, all guards and \
     processes together); the guard was left as if it had not been asked."
);

fn kind_name(n: u64) -> String {
    u32::try_from(n)
        .ok()
        .and_then(GuardKind::from_u32)
        .map_or_else(|| format!("kind {n}"), |k| k.name().to_owned())
}

/// The Python exception for a failure of the region layer: the typed region errors, an
/// `OSError` (with its errno) for a failed system call, and the package's own mapping for
/// settings and arguments (`ConfigError`, `TypeError`, `ValueError`).
pub(crate) fn region_error(py: Python<'_>, f: Failure, name: Option<&str>) -> PyErr {
    let message = f.to_string();
    match (f.code, f.detail) {
        (
            GuardsResult::GuardMismatch,
            Detail::GuardMismatch {
                field,
                existing,
                requested,
            },
        ) => {
            let who = name.map_or_else(|| "the guard".to_owned(), |n| format!("guard '{n}'"));
            let (msg, existing, requested): (String, Py<PyAny>, Py<PyAny>) = match field {
                "kind" => {
                    let (e, r) = (kind_name(existing), kind_name(requested));
                    (
                        format!("{who} exists as a {e}, not a {r}"),
                        PyString::new(py, &e).into_any().unbind(),
                        PyString::new(py, &r).into_any().unbind(),
                    )
                }
                "capacity" => (
                    format!(
                        "{who} exists with capacity {existing}, not {requested} (a breaker's \
                         window cells, a keyed set's slots)"
                    ),
                    existing
                        .into_pyobject(py)
                        .map_or_else(|_| py.None(), |v| v.into_any().unbind()),
                    requested
                        .into_pyobject(py)
                        .map_or_else(|_| py.None(), |v| v.into_any().unbind()),
                ),
                "config" => (
                    format!(
                        "{who} exists with other settings (config hash {existing:#018x}, these \
                         settings {requested:#018x}): pass the same settings in every \
                         process, or use another name"
                    ),
                    existing
                        .into_pyobject(py)
                        .map_or_else(|_| py.None(), |v| v.into_any().unbind()),
                    requested
                        .into_pyobject(py)
                        .map_or_else(|_| py.None(), |v| v.into_any().unbind()),
                ),
                other => (
                    format!("{who} differs in its {other} ({message})"),
                    existing
                        .into_pyobject(py)
                        .map_or_else(|_| py.None(), |v| v.into_any().unbind()),
                    requested
                        .into_pyobject(py)
                        .map_or_else(|_| py.None(), |v| v.into_any().unbind()),
                ),
            };
            let build = || -> PyResult<PyErr> {
                let inst = py.get_type::<GuardMismatch>().call1((msg,))?;
                inst.setattr("name", name)?;
                inst.setattr("field", field)?;
                inst.setattr("existing", existing)?;
                inst.setattr("requested", requested)?;
                Ok(PyErr::from_value(inst))
            };
            build().unwrap_or_else(|e| e)
        }
        (GuardsResult::RegionIo, Detail::Region { errno, .. }) if errno != 0 => {
            PyOSError::new_err((errno, message))
        }
        (GuardsResult::RegionIo, _) => PyOSError::new_err(message),
        (GuardsResult::RegionInvalid, _) => RegionInvalid::new_err(message),
        (GuardsResult::RegionIncompatible, _) => RegionIncompatible::new_err(message),
        (GuardsResult::RegionFull, _) => RegionFull::new_err(message),
        (GuardsResult::RegionTimeout, _) => RegionTimeout::new_err(message),
        (GuardsResult::GuardNotFound, _) => GuardNotFound::new_err(message),
        (GuardsResult::PermitSlotsExhausted, _) => PermitSlotsExhausted::new_err(message),
        _ => errors::failure(py, f),
    }
}

/// `region_error` for a failed get-or-create of `name`; a config mismatch also says which
/// settings differ (`differences`: setting -> (existing, requested)), read from the
/// existing guard and from `requested` (the private guard built from this call's settings).
fn get_error(
    py: Python<'_>,
    region: &Region,
    name: &str,
    f: Failure,
    requested: &Bound<'_, PyAny>,
) -> PyErr {
    let is_config = matches!(
        f.detail,
        Detail::GuardMismatch {
            field: "config",
            ..
        }
    );
    let err = region_error(py, f, Some(name));
    if !is_config {
        return err;
    }
    match config_differences(py, region, name, requested, &err) {
        Ok(Some(better)) => better,
        _ => err,
    }
}

fn config_differences(
    py: Python<'_>,
    region: &Region,
    name: &str,
    requested: &Bound<'_, PyAny>,
    err: &PyErr,
) -> PyResult<Option<PyErr>> {
    // The views below live only in this function, while `any` holds the mapping.
    let Ok(any) = AnyShared::attach(region, name) else {
        return Ok(None);
    };
    let view = match &any {
        AnyShared::Bulkhead(s) => Py::new(py, PyBulkhead { b: attach(s) })?.into_any(),
        AnyShared::Limiter(s) => Py::new(py, PyLimiter { l: attach(s) })?.into_any(),
        AnyShared::Admission(s) => Py::new(py, PyAdmission { a: attach(s) })?.into_any(),
        AnyShared::RetryBudget(s) => Py::new(py, PyRetryBudget { b: attach(s) })?.into_any(),
        AnyShared::AdaptiveThrottle(s) => {
            Py::new(py, PyAdaptiveThrottle { t: attach(s) })?.into_any()
        }
        AnyShared::LatencyTracker(s) => Py::new(py, PyLatencyTracker { t: attach(s) })?.into_any(),
        AnyShared::Hedging(s) => Py::new(py, PyHedging { h: attach(s) })?.into_any(),
        AnyShared::Brownout(s) => Py::new(py, PyBrownout { b: attach(s) })?.into_any(),
        AnyShared::Breaker128(s) => breaker_view(py, AnyBreaker::C128(attach(s)))?,
        AnyShared::Breaker1024(s) => breaker_view(py, AnyBreaker::C1024(attach(s)))?,
        AnyShared::Breaker8192(s) => breaker_view(py, AnyBreaker::C8192(attach(s)))?,
        AnyShared::Breaker65536(s) => breaker_view(py, AnyBreaker::C65536(attach(s)))?,
        _ => return Ok(None),
    };
    // `view` is dropped below, while `any` (the mapping) is alive.
    let existing = view
        .bind(py)
        .call_method0("config")?
        .cast_into::<PyDict>()?;
    drop(view);
    drop(any);
    let wanted = requested.call_method0("config")?.cast_into::<PyDict>()?;
    let differences = PyDict::new(py);
    let mut words = Vec::new();
    for (k, v) in wanted.iter() {
        let old = existing.get_item(&k)?;
        let same = match &old {
            Some(o) => o.eq(&v)?,
            None => false,
        };
        if !same {
            let old = old.unwrap_or_else(|| py.None().into_bound(py));
            words.push(format!(
                "{} is {} there, {} here",
                k.str()?,
                old.repr()?,
                v.repr()?
            ));
            differences.set_item(&k, (old, v))?;
        }
    }
    if words.is_empty() {
        return Ok(None);
    }
    let msg = format!(
        "guard '{name}' exists with other settings ({}): pass the same settings in every \
         process, or use another name",
        words.join("; ")
    );
    let old = err.value(py);
    let inst = py.get_type::<GuardMismatch>().call1((msg,))?;
    for a in ["name", "field", "existing", "requested"] {
        inst.setattr(a, old.getattr(a)?)?;
    }
    inst.setattr("differences", differences)?;
    Ok(Some(PyErr::from_value(inst)))
}

fn breaker_view(py: Python<'_>, b: AnyBreaker) -> PyResult<Py<PyAny>> {
    Ok(Py::new(
        py,
        PyCircuitBreaker {
            b,
            announced: Default::default(),
        },
    )?
    .into_any())
}

/// A path argument: a `str` or an `os.PathLike` giving one.
fn path_arg(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    if let Ok(p) = v.call_method0(intern!(v.py(), "__fspath__")) {
        if let Ok(s) = p.cast::<PyString>() {
            return Ok(s.to_cow()?.into_owned());
        }
    }
    Err(util::type_error(
        "path",
        "a str (a path, or a bare name for /dev/shm/<name>) or an os.PathLike",
        v,
    ))
}

fn name_arg(v: &Bound<'_, PyAny>) -> PyResult<String> {
    match v.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) => Err(util::type_error(
            "name",
            "a str (1 to 64 bytes of UTF-8)",
            v,
        )),
    }
}

/// The default region: `/dev/shm/guards`.
const DEFAULT_PATH: &str = "guards";

/// A region: named host-wide guards in a file every process maps.
#[pyclass(module = "guards.shared", name = "Region", frozen)]
#[derive(Debug)]
pub struct PyRegion {
    r: Region,
    path: String,
    /// Whether the mapping has been kept for the rest of the process (see [`PyRegion::pin`]).
    pinned: AtomicBool,
}

fn stats_of_region<'py>(py: Python<'py>, r: &Region) -> PyResult<Bound<'py, PyDict>> {
    let s = r.stats();
    util::stats_dict(
        py,
        &[
            ("guards", s.guards),
            ("max_guards", s.max_guards),
            ("data_used", s.data_used),
            ("data_bytes", s.data_bytes),
            ("permit_slots", s.permit_slots),
            ("permits_held", s.permits_held),
            ("reclaimed_permits", s.reclaimed_permits),
            ("reclaimed_claims", s.reclaimed_claims),
            ("scans", s.scans),
            ("takeovers", s.takeovers),
        ],
    )
}

impl PyRegion {
    /// Keep the mapping for the rest of the process, once a guard of it has been handed
    /// out: the package's own guard objects over its memory (the plain kinds, and the
    /// views behind the host-wide classes, whose bound methods a caller may keep) have no
    /// room for the mapping's owner. One reference count; the file may still be removed.
    fn pin(&self) {
        if !self.pinned.swap(true, Ordering::Relaxed) {
            std::mem::forget(self.r.clone());
        }
    }

    fn get<K: guards::shared::SharedGuard>(
        &self,
        py: Python<'_>,
        name: &str,
        config: K::Config,
        requested: &Bound<'_, PyAny>,
    ) -> PyResult<Shared<K>> {
        let r = &self.r;
        let g = py
            .detach(|| r.get_or_create::<K>(name, config))
            .map_err(|f| get_error(py, r, name, f, requested))?;
        self.pin();
        Ok(g)
    }
}

/// The region's guard `name` of kind `$core`, found or created with the config that the
/// package's own class `$py_ty` builds from the same arguments (so both check them
/// alike): `(name, guard)`.
macro_rules! region_guard {
    ($slf:expr, $name:expr, $args:expr, $kwargs:expr, $py_ty:ident, $core:ty, $field:ident) => {{
        let py = $slf.py();
        let name = name_arg($name)?;
        let private = py.get_type::<$py_ty>().call($args, $kwargs)?;
        // `config()` gives a reference or a copy, by guard: either way, an owned config.
        let config = private.cast::<$py_ty>()?.get().$field.config().to_owned();
        let g = $slf.get().get::<$core>(py, &name, config, &private)?;
        (name, g)
    }};
}

/// A guard without permits (nothing to reclaim), returned as the package's own class over
/// the region's memory; the mapping is kept for the rest of the process (the package's
/// object has no room for its owner).
macro_rules! plain_guard {
    ($slf:expr, $name:expr, $args:expr, $kwargs:expr, $py_ty:ident, $core:ty, $field:ident) => {{
        let slf = $slf;
        let (_, g) = region_guard!(slf, $name, $args, $kwargs, $py_ty, $core, $field);
        // The region is pinned (`get`): the mapping outlives the package's object.
        let $field = attach(&g);
        Ok($py_ty { $field })
    }};
}

/// A guard with owner-recorded permits, as its `Shared*` class: the region's guard and a
/// view of it as the package's own class (for its read-only methods).
macro_rules! permit_guard {
    ($slf:expr, $name:expr, $args:expr, $kwargs:expr, $py_ty:ident, $core:ty, $field:ident, $shared:ident) => {{
        let slf = $slf;
        let (name, g) = region_guard!(slf, $name, $args, $kwargs, $py_ty, $core, $field);
        let view = Py::new(slf.py(), $py_ty { $field: attach(&g) })?;
        Ok($shared {
            g,
            view: view.into_any(),
            name,
            region: slf.clone().unbind(),
        })
    }};
}

#[pymethods]
impl PyRegion {
    /// `Region(path="guards", *, max_guards=64, permit_slots=4096, data_bytes=16 MiB,
    /// wait_timeout=5.0, reclaim_interval=0.01, mode=0o600, create=True)`: open the region
    /// at `path` (a bare name is `/dev/shm/<name>`), creating it if there is none. The
    /// capacities apply when this call creates it. Opening reclaims the permits of dead
    /// processes.
    #[new]
    #[pyo3(signature = (path = None, *, max_guards = None, permit_slots = None, data_bytes = None, wait_timeout = None, reclaim_interval = None, mode = None, create = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: Option<&Bound<'_, PyAny>>,
        max_guards: Option<&Bound<'_, PyAny>>,
        permit_slots: Option<&Bound<'_, PyAny>>,
        data_bytes: Option<&Bound<'_, PyAny>>,
        wait_timeout: Option<&Bound<'_, PyAny>>,
        reclaim_interval: Option<&Bound<'_, PyAny>>,
        mode: Option<&Bound<'_, PyAny>>,
        create: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let path = match given(path) {
            Some(p) => path_arg(p)?,
            None => DEFAULT_PATH.to_owned(),
        };
        let mut o = RegionOptions::default();
        if let Some(v) = given(max_guards) {
            o.max_guards = util::get_u64("max_guards", v, Ctx::Config)?;
        }
        if let Some(v) = given(permit_slots) {
            o.permit_slots = util::get_u64("permit_slots", v, Ctx::Config)?;
        }
        if let Some(v) = given(data_bytes) {
            o.data_bytes = util::get_u64("data_bytes", v, Ctx::Config)?;
        }
        if let Some(v) = given(wait_timeout) {
            o.wait_timeout = util::get_duration("wait_timeout", v, Ctx::Config)?;
        }
        if let Some(v) = given(reclaim_interval) {
            o.reclaim_interval = util::get_duration("reclaim_interval", v, Ctx::Config)?;
        }
        if let Some(v) = given(mode) {
            o.mode = util::get_u32("mode", v, Ctx::Config, "permission bits, 0 to 0o777")?;
        }
        if let Some(v) = given(create) {
            o.create = util::get_bool("create", v)?;
        }
        o.validate().map_err(|f| region_error(py, f, None))?;
        let resolved = guards::shared::file::resolve(&path)
            .map_err(|f| region_error(py, f, None))?
            .to_string_lossy()
            .into_owned();
        let r = py
            .detach(|| Region::open(&path, &o))
            .map_err(|f| region_error(py, f, None))?;
        Ok(PyRegion {
            r,
            path: resolved,
            pinned: AtomicBool::new(false),
        })
    }

    /// Remove the region file at `path` (processes that have it open keep their mapping;
    /// the next `Region(path)` creates a new one). `GuardNotFound` if there is none.
    #[staticmethod]
    fn remove(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<()> {
        let p = path_arg(path)?;
        Region::remove(&p).map_err(|f| region_error(py, f, None))
    }

    /// The region file's path.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// `region.circuit_breaker(name, **settings)`: the host-wide breaker `name`, created
    /// with `guards.CircuitBreaker(**settings)`'s settings if there is none.
    #[pyo3(signature = (name, /, *args, **kwargs))]
    fn circuit_breaker(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PySharedBreaker> {
        let py = slf.py();
        let name = name_arg(name)?;
        let private = py.get_type::<PyCircuitBreaker>().call(args, kwargs)?;
        let pb = private.cast::<PyCircuitBreaker>()?.get();
        let (config, capacity) = (pb.b.config(), pb.b.capacity() as u64);
        let r = &slf.get().r;
        let g = py
            .detach(|| AnyShared::breaker(r, &name, config, capacity))
            .map_err(|f| get_error(py, r, &name, f, &private))?;
        slf.get().pin();
        let (g, view) = match g {
            AnyShared::Breaker128(s) => {
                let v = AnyBreaker::C128(attach(&s));
                (AnyBreakerShared::C128(s), v)
            }
            AnyShared::Breaker1024(s) => {
                let v = AnyBreaker::C1024(attach(&s));
                (AnyBreakerShared::C1024(s), v)
            }
            AnyShared::Breaker8192(s) => {
                let v = AnyBreaker::C8192(attach(&s));
                (AnyBreakerShared::C8192(s), v)
            }
            AnyShared::Breaker65536(s) => {
                let v = AnyBreaker::C65536(attach(&s));
                (AnyBreakerShared::C65536(s), v)
            }
            _ => return Err(PyRuntimeError::new_err("the region returned another kind")),
        };
        let view = Py::new(
            py,
            PyCircuitBreaker {
                b: view,
                announced: Default::default(),
            },
        )?;
        Ok(PySharedBreaker {
            g,
            view: view.into_any(),
            name,
            region: slf.clone().unbind(),
            announced: Announced::default(),
        })
    }

    /// `region.keyed_breakers(name, slots=16, **settings)`: the host-wide set of breakers
    /// `name`, one per key (`guards.KeyedBreakers`'s settings).
    #[pyo3(signature = (name, /, *args, **kwargs))]
    fn keyed_breakers(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PySharedKeyedBreakers> {
        let py = slf.py();
        let name = name_arg(name)?;
        let mut a = Args::collect("KeyedBreakers", &[], args, kwargs)?;
        let slots = match a.take("slots") {
            None => 16,
            Some(v) => util::get_u64("slots", &v, Ctx::Config)?,
        };
        let config = a.build(&CIRCUIT_BREAKER)?;
        let r = &slf.get().r;
        let g = py
            .detach(|| AnyShared::keyed_breakers(r, &name, config, slots))
            .map_err(|f| region_error(py, f, Some(&name)))?;
        let g = match g {
            AnyShared::Keyed4(s) => AnyKeyedShared::K4(s),
            AnyShared::Keyed16(s) => AnyKeyedShared::K16(s),
            AnyShared::Keyed64(s) => AnyKeyedShared::K64(s),
            AnyShared::Keyed256(s) => AnyKeyedShared::K256(s),
            _ => return Err(PyRuntimeError::new_err("the region returned another kind")),
        };
        Ok(PySharedKeyedBreakers {
            g,
            name,
            region: slf.clone().unbind(),
            announced: AnnouncedByKey::default(),
        })
    }

    /// `region.bulkhead(name, max_concurrent=12)`: the host-wide bulkhead `name`.
    #[pyo3(signature = (name, /, *args, **kwargs))]
    fn bulkhead(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PySharedBulkhead> {
        permit_guard!(
            slf,
            name,
            args,
            kwargs,
            PyBulkhead,
            Bulkhead,
            b,
            PySharedBulkhead
        )
    }

    /// `region.limiter(name, limit=None, **settings)`: the host-wide limiter `name`
    /// (`guards.Limiter`'s settings).
    #[pyo3(signature = (name, /, *args, **kwargs))]
    fn limiter(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PySharedLimiter> {
        permit_guard!(
            slf,
            name,
            args,
            kwargs,
            PyLimiter,
            Limiter,
            l,
            PySharedLimiter
        )
    }

    /// `region.admission(name, limits=None, **settings)`: the host-wide admission door
    /// `name` (`guards.Admission`'s settings).
    #[pyo3(signature = (name, /, *args, **kwargs))]
    fn admission(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PySharedAdmission> {
        permit_guard!(
            slf,
            name,
            args,
            kwargs,
            PyAdmission,
            Admission,
            a,
            PySharedAdmission
        )
    }

    /// `region.retry_budget(name, mode="token_bucket", **settings)`: a `guards.RetryBudget`
    /// (usable wherever one is: `@guards.retry(budget=...)`, `gate=`) whose balance is the
    /// host's.
    #[pyo3(signature = (name, /, *args, **kwargs))]
    fn retry_budget(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyRetryBudget> {
        plain_guard!(slf, name, args, kwargs, PyRetryBudget, RetryBudget, b)
    }

    /// `region.adaptive_throttle(name, **settings)`: a `guards.AdaptiveThrottle` whose
    /// accept and request counts are the host's (usable with `guards.guarded`).
    #[pyo3(signature = (name, /, *args, **kwargs))]
    fn adaptive_throttle(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyAdaptiveThrottle> {
        plain_guard!(
            slf,
            name,
            args,
            kwargs,
            PyAdaptiveThrottle,
            AdaptiveThrottle,
            t
        )
    }

    /// `region.latency_tracker(name, **settings)`: a `guards.LatencyTracker` fed by every
    /// process (the same percentiles for all).
    #[pyo3(signature = (name, /, *args, **kwargs))]
    fn latency_tracker(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyLatencyTracker> {
        plain_guard!(slf, name, args, kwargs, PyLatencyTracker, LatencyTracker, t)
    }

    /// `region.hedging(name, **settings)`: a `guards.Hedging` policy whose latency samples
    /// and hedge budget are the host's.
    #[pyo3(signature = (name, /, *args, **kwargs))]
    fn hedging(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyHedging> {
        plain_guard!(slf, name, args, kwargs, PyHedging, Hedging, h)
    }

    /// `region.brownout(name, **settings)`: a `guards.Brownout` (one operation) whose
    /// level and counters are the host's.
    #[pyo3(signature = (name, /, *args, **kwargs))]
    fn brownout(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyBrownout> {
        plain_guard!(slf, name, args, kwargs, PyBrownout, Brownout, b)
    }

    /// Give every permit of a dead process back to its guard (reported `cancelled` at
    /// `now`): `{"permits", "claims"}` this scan freed. Safe from any number of processes.
    #[pyo3(signature = (now = None))]
    fn reclaim<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let now = util::get_now(now)?;
        let r = &self.r;
        let done = py.detach(|| r.reclaim(now));
        util::stats_dict(py, &[("permits", done.permits), ("claims", done.claims)])
    }

    /// Counters and sizes: `guards`, `max_guards`, `data_used`, `data_bytes`,
    /// `permit_slots`, `permits_held` (all guards and processes, now), `reclaimed_permits`,
    /// `reclaimed_claims`, `scans`, `takeovers`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_of_region(py, &self.r)
    }

    /// The guards created so far, in directory order: dicts with `name`, `kind`,
    /// `capacity`, `size` (bytes) and `config_hash`.
    fn guards<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for g in self.r.guards() {
            let d = PyDict::new(py);
            d.set_item("name", g.name)?;
            d.set_item("kind", g.kind.name())?;
            d.set_item("capacity", g.capacity)?;
            d.set_item("size", g.size)?;
            d.set_item("config_hash", g.config_hash)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Pickled as its path: a process that unpickles it (a `multiprocessing` "spawn"
    /// child) opens the same region file.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, pyo3::types::PyType>, (String,))> {
        Ok((slf.get_type(), (slf.get().path.clone(),)))
    }

    fn __repr__(&self) -> String {
        format!("Region('{}', guards={})", self.path, self.r.stats().guards)
    }
}

/// A non-owning view of a shared guard as the package's own class sees it.
fn attach<K>(s: &Shared<K>) -> InPlace<K> {
    // SAFETY: the guard is an initialised `K` in the region's mapping. The mapping lives as
    // long as `s` (its `Region`), and a region that handed out a guard is pinned for the
    // rest of the process (`PyRegion::pin`), so views handed to Python, and bound methods
    // taken from them, never outlive it; `config_differences` keeps its `AnyShared` alive
    // while its views are used. Views only reach the guard through `&K`.
    unsafe { InPlace::attach(NonNull::from(&**s)) }
}

/// Attribute names a view must not answer for a shared guard (they would hand out
/// permits no region records).
fn delegate<'py>(
    view: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyAny>> {
    let n = name.to_cow()?;
    if n.starts_with('_') || matches!(n.as_ref(), "acquire" | "try_acquire" | "call" | "acall") {
        return Err(PyAttributeError::new_err(format!(
            "host-wide guard has no attribute '{n}'"
        )));
    }
    view.getattr(name)
}

/// The capacity of a shared guard's type.
fn cap_of<K: guards::shared::SharedGuard>(_: &Shared<K>) -> u64 {
    K::CAPACITY
}

/// `view.name(*args)`: a method of the package's own class, on the shared state.
fn on_view<'py>(
    view: &Py<PyAny>,
    py: Python<'py>,
    name: &str,
    args: impl pyo3::call::PyCallArgs<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    view.bind(py).call_method1(name, args)
}

/// Run `fn(*args, **kwargs)` under `permit`, reporting how it ended (the call contract).
fn run_under<'py>(
    py: Python<'py>,
    permit: PySharedPermit,
    f: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    match f.call(args, kwargs) {
        Ok(v) => {
            permit.finish_py(py, Outcome::Success, clock::now());
            Ok(v)
        }
        Err(e) => {
            // The call's exception is what the caller sees, even if classifying it failed.
            let o = outcome::classify(e.value(py)).map_or(Outcome::OtherTransient, |c| c.0);
            permit.finish_py(py, o, clock::now());
            Err(e)
        }
    }
}

/// `await guard.acall(fn, ...)`: the Python helper `guards.shared._acall`.
fn acall_of<'py>(
    guard: &Bound<'py, PyAny>,
    f: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = guard.py();
    let helper = py
        .import(intern!(py, "guards.shared"))?
        .getattr(intern!(py, "_acall"))?;
    let kw = match kwargs {
        Some(k) => k.clone(),
        None => PyDict::new(py),
    };
    helper.call1((guard, f, args, kw))
}

fn op_arg<'py>(v: Option<&Bound<'py, PyAny>>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match given(v) {
        None => Ok(None),
        Some(v) if v.is_instance_of::<PyString>() => Ok(Some(v.clone())),
        Some(v) => Err(util::type_error("operation", "a str or None", v)),
    }
}

/// A shared breaker of any of the four window capacities.
#[derive(Debug)]
enum AnyBreakerShared {
    C128(Shared<CircuitBreaker<128>>),
    C1024(Shared<CircuitBreaker<1024>>),
    C8192(Shared<CircuitBreaker<8192>>),
    C65536(Shared<CircuitBreaker<65536>>),
}

macro_rules! breaker_do {
    ($any:expr, $g:ident => $e:expr) => {
        match $any {
            AnyBreakerShared::C128($g) => $e,
            AnyBreakerShared::C1024($g) => $e,
            AnyBreakerShared::C8192($g) => $e,
            AnyBreakerShared::C65536($g) => $e,
        }
    };
}

/// A host-wide circuit breaker: `guards.CircuitBreaker`'s methods, its state in a region.
#[pyclass(module = "guards.shared", name = "CircuitBreaker", frozen)]
#[derive(Debug)]
pub struct PySharedBreaker {
    g: AnyBreakerShared,
    view: Py<PyAny>,
    name: String,
    region: Py<PyRegion>,
    /// The last state this process announced (`state_change` events: each process emits
    /// the transitions it sees, whichever process caused them).
    announced: Announced,
}

impl PySharedBreaker {
    /// Emit the state change this process sees, if any (`state_change` events).
    fn announce<'py>(&self, slf: &Bound<'py, Self>, op: Op<'_, 'py>) {
        let status = breaker_do!(&self.g, g => g.status());
        self.announced.observe(slf.py(), status, slf.as_any(), op);
    }

    fn take(
        slf: &Bound<'_, Self>,
        now: Nanos,
        op: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PySharedPermit> {
        let py = slf.py();
        let got: Result<(PermitToken, PermitView), Refusal<_>> =
            breaker_do!(&slf.get().g, g => g.try_acquire((), now));
        match got {
            Ok((t, v)) => {
                if v.probe_timeout.is_some() {
                    slf.get().announce(slf, Op::given(op));
                }
                Ok(PySharedPermit::new(
                    SharedOwner::Breaker(slf.clone().unbind()),
                    t,
                    v,
                    op,
                ))
            }
            Err(Refusal::Rejected(r)) => {
                slf.get().announce(slf, Op::given(op));
                let err = crate::circuit_breaker::rejected_error(py, r, now);
                events::refusal(py, slf.as_any(), Op::given(op), &err);
                Err(err)
            }
            Err(Refusal::Failed(f)) => Err(region_error(py, f, Some(&slf.get().name))),
        }
    }
}

#[pymethods]
impl PySharedBreaker {
    /// For `guards.guarded`: what kind of host-wide guard this is.
    #[classattr]
    fn _guards_shared_kind() -> &'static str {
        "circuit_breaker"
    }

    /// Its name in the region.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The region it lives in.
    #[getter]
    fn region(&self, py: Python<'_>) -> Py<PyRegion> {
        self.region.clone_ref(py)
    }

    /// Ask to make a call at `now`: a permit, or `BreakerOpen`.
    #[pyo3(signature = (now = None, *, operation = None))]
    fn acquire(
        slf: &Bound<'_, Self>,
        now: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PySharedPermit> {
        let now = util::get_now(now)?;
        let op = op_arg(operation)?;
        Self::take(slf, now, op.as_ref())
    }

    /// Like `acquire`, but `None` instead of raising `BreakerOpen`.
    #[pyo3(signature = (now = None, *, operation = None))]
    fn try_acquire(
        slf: &Bound<'_, Self>,
        now: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PySharedPermit>> {
        let now = util::get_now(now)?;
        let op = op_arg(operation)?;
        let got: Result<(PermitToken, PermitView), Refusal<_>> =
            breaker_do!(&slf.get().g, g => g.try_acquire((), now));
        match got {
            Ok((t, v)) => {
                if v.probe_timeout.is_some() {
                    slf.get().announce(slf, Op::given(op.as_ref()));
                }
                Ok(Some(PySharedPermit::new(
                    SharedOwner::Breaker(slf.clone().unbind()),
                    t,
                    v,
                    op.as_ref(),
                )))
            }
            Err(Refusal::Rejected(_)) => {
                slf.get().announce(slf, Op::given(op.as_ref()));
                Ok(None)
            }
            Err(Refusal::Failed(f)) => Err(region_error(slf.py(), f, Some(&slf.get().name))),
        }
    }

    /// `fn(*args, **kwargs)` under the breaker, judged by `guards.classify_exception`.
    #[pyo3(signature = (r#fn, /, *args, **kwargs))]
    fn call<'py>(
        slf: &Bound<'py, Self>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = Self::take(slf, clock::now(), None)?;
        run_under(slf.py(), p, r#fn, args, kwargs)
    }

    /// `await breaker.acall(fn, *args, **kwargs)`.
    #[pyo3(signature = (r#fn, /, *args, **kwargs))]
    fn acall<'py>(
        slf: &Bound<'py, Self>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        acall_of(slf.as_any(), r#fn, args, kwargs)
    }

    /// `"closed"`, `"open"` or `"half_open"` now.
    #[getter]
    fn state(&self) -> &'static str {
        breaker_do!(&self.g, g => g.state(clock::now()).name())
    }

    /// The state at the instant `now` (integer nanoseconds).
    fn state_at(&self, now: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        let now = util::get_instant("now", now)?;
        Ok(breaker_do!(&self.g, g => g.state(now).name()))
    }

    /// The window cells the breaker was built with.
    #[getter]
    fn capacity(&self) -> u64 {
        breaker_do!(&self.g, g => cap_of(g))
    }

    /// As `guards.CircuitBreaker.status`.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        on_view(&self.view, py, "status", ())
    }

    /// As `guards.CircuitBreaker.window_counts`.
    #[pyo3(signature = (now = None))]
    fn window_counts<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        on_view(&self.view, py, "window_counts", (now,))
    }

    /// The settings (as `guards.CircuitBreaker.config`).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        on_view(&self.view, py, "config", ())
    }

    /// The counters, all processes (as `guards.CircuitBreaker.stats`).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        on_view(&self.view, py, "stats", ())
    }

    /// Permits of this breaker held now, by every process.
    fn outstanding(&self) -> u64 {
        breaker_do!(&self.g, g => g.outstanding())
    }

    fn __getattr__<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        delegate(self.view.bind(py), name)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let state = self
            .view
            .bind(py)
            .getattr("state")
            .and_then(|s| s.str().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("shared.CircuitBreaker('{}', state='{state}')", self.name)
    }
}

/// A host-wide bulkhead: `guards.Bulkhead`'s methods, its slots counted in a region.
#[pyclass(module = "guards.shared", name = "Bulkhead", frozen)]
#[derive(Debug)]
pub struct PySharedBulkhead {
    g: Shared<Bulkhead>,
    view: Py<PyAny>,
    name: String,
    region: Py<PyRegion>,
}

/// The `now` of a bulkhead's acquire. The bulkhead itself does not read it: it only stamps
/// the permits that a reclaim caused by this acquire (the bulkhead full) gives back, e.g. a
/// dead holder's breaker probe failing at that instant. The coarse monotonic clock (the
/// same timeline as `CLOCK_MONOTONIC`, at most one kernel tick, a few ms, behind) costs a
/// fraction of a precise read; an installed `FakeClock` is read as everywhere else.
#[inline]
fn bulkhead_stamp() -> Nanos {
    if clock::fake_installed() {
        return clock::now();
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    if rc != 0 {
        return clock::now();
    }
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    Nanos(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

impl PySharedBulkhead {
    fn take(slf: &Bound<'_, Self>, op: Option<&Bound<'_, PyAny>>) -> PyResult<PySharedPermit> {
        let py = slf.py();
        match slf.get().g.try_acquire((), bulkhead_stamp()) {
            Ok((t, v)) => Ok(PySharedPermit::new(
                SharedOwner::Bulkhead(slf.clone().unbind()),
                t,
                v,
                op,
            )),
            Err(Refusal::Rejected(r)) => {
                let err = crate::bulkhead::full_error(py, r);
                events::refusal(py, slf.as_any(), Op::given(op), &err);
                Err(err)
            }
            Err(Refusal::Failed(f)) => Err(region_error(py, f, Some(&slf.get().name))),
        }
    }
}

#[pymethods]
impl PySharedBulkhead {
    /// For `guards.guarded`: what kind of host-wide guard this is.
    #[classattr]
    fn _guards_shared_kind() -> &'static str {
        "bulkhead"
    }

    /// Its name in the region.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The region it lives in.
    #[getter]
    fn region(&self, py: Python<'_>) -> Py<PyRegion> {
        self.region.clone_ref(py)
    }

    /// Take a slot: a permit, or `BulkheadFull`.
    #[pyo3(signature = (*, operation = None))]
    fn acquire(
        slf: &Bound<'_, Self>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PySharedPermit> {
        let op = op_arg(operation)?;
        Self::take(slf, op.as_ref())
    }

    /// Take a slot if one is free: a permit, or `None`.
    #[pyo3(signature = (*, operation = None))]
    fn try_acquire(
        slf: &Bound<'_, Self>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PySharedPermit>> {
        let op = op_arg(operation)?;
        match slf.get().g.try_acquire((), bulkhead_stamp()) {
            Ok((t, v)) => Ok(Some(PySharedPermit::new(
                SharedOwner::Bulkhead(slf.clone().unbind()),
                t,
                v,
                op.as_ref(),
            ))),
            Err(Refusal::Rejected(_)) => Ok(None),
            Err(Refusal::Failed(f)) => Err(region_error(slf.py(), f, Some(&slf.get().name))),
        }
    }

    /// `fn(*args, **kwargs)` in a slot.
    #[pyo3(signature = (r#fn, /, *args, **kwargs))]
    fn call<'py>(
        slf: &Bound<'py, Self>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = Self::take(slf, None)?;
        run_under(slf.py(), p, r#fn, args, kwargs)
    }

    /// `await bulkhead.acall(fn, *args, **kwargs)`.
    #[pyo3(signature = (r#fn, /, *args, **kwargs))]
    fn acall<'py>(
        slf: &Bound<'py, Self>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        acall_of(slf.as_any(), r#fn, args, kwargs)
    }

    /// Calls in flight now, all processes (core's counter).
    #[getter]
    fn in_flight(&self) -> u64 {
        self.g.in_flight()
    }

    /// Free slots now, all processes.
    #[getter]
    fn available(&self) -> u64 {
        self.g.available()
    }

    /// Most calls in flight at once, all processes together.
    #[getter]
    fn max_concurrent(&self) -> u64 {
        self.g.config().max_concurrent
    }

    /// The settings.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        on_view(&self.view, py, "config", ())
    }

    /// Counters, all processes: `acquired`, `rejected`, `released`, `in_flight`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        on_view(&self.view, py, "stats", ())
    }

    /// Permits of this bulkhead recorded in the region now (a scan of the permit table).
    fn outstanding(&self) -> u64 {
        self.g.outstanding()
    }

    fn __getattr__<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        delegate(self.view.bind(py), name)
    }

    fn __repr__(&self) -> String {
        format!(
            "shared.Bulkhead('{}', max_concurrent={}, in_flight={})",
            self.name,
            self.g.config().max_concurrent,
            self.g.in_flight()
        )
    }
}

macro_rules! priority_guard {
    ($ty:ident, $pyname:literal, $kind:literal, $core:ty, $owner:ident, $reject:path, $doc:literal) => {
        #[doc = $doc]
        #[pyclass(module = "guards.shared", name = $pyname, frozen)]
        #[derive(Debug)]
        pub struct $ty {
            g: Shared<$core>,
            view: Py<PyAny>,
            name: String,
            region: Py<PyRegion>,
        }

        impl $ty {
            fn take(
                slf: &Bound<'_, Self>,
                p: Priority,
                now: Nanos,
                op: Option<&Bound<'_, PyAny>>,
                raise: bool,
            ) -> PyResult<Option<PySharedPermit>> {
                let py = slf.py();
                match slf.get().g.try_acquire(p, now) {
                    Ok((t, v)) => Ok(Some(PySharedPermit::new(
                        SharedOwner::$owner(slf.clone().unbind()),
                        t,
                        v,
                        op,
                    ))),
                    Err(Refusal::Rejected(_)) if !raise => Ok(None),
                    Err(Refusal::Rejected(r)) => {
                        let err = $reject(py, r, now);
                        events::refusal(py, slf.as_any(), Op::given(op), &err);
                        Err(err)
                    }
                    Err(Refusal::Failed(f)) => Err(region_error(py, f, Some(&slf.get().name))),
                }
            }
        }

        #[pymethods]
        impl $ty {
            /// For `guards.guarded`: what kind of host-wide guard this is.
            #[classattr]
            fn _guards_shared_kind() -> &'static str {
                $kind
            }

            /// Its name in the region.
            #[getter]
            fn name(&self) -> &str {
                &self.name
            }

            /// The region it lives in.
            #[getter]
            fn region(&self, py: Python<'_>) -> Py<PyRegion> {
                self.region.clone_ref(py)
            }

            /// A permit for a call of `priority` at `now`, or the refusal.
            #[pyo3(signature = (priority = None, now = None, *, operation = None))]
            fn acquire(
                slf: &Bound<'_, Self>,
                priority: Option<&Bound<'_, PyAny>>,
                now: Option<&Bound<'_, PyAny>>,
                operation: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<PySharedPermit> {
                let p = priority_arg(priority)?;
                let now = util::get_now(now)?;
                let op = op_arg(operation)?;
                Self::take(slf, p, now, op.as_ref(), true)?
                    .ok_or_else(|| PyRuntimeError::new_err("refused"))
            }

            /// Like `acquire`, but `None` instead of raising.
            #[pyo3(signature = (priority = None, now = None, *, operation = None))]
            fn try_acquire(
                slf: &Bound<'_, Self>,
                priority: Option<&Bound<'_, PyAny>>,
                now: Option<&Bound<'_, PyAny>>,
                operation: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Option<PySharedPermit>> {
                let p = priority_arg(priority)?;
                let now = util::get_now(now)?;
                let op = op_arg(operation)?;
                Self::take(slf, p, now, op.as_ref(), false)
            }

            /// `fn(*args, **kwargs)` under the guard (default priority).
            #[pyo3(signature = (r#fn, /, *args, **kwargs))]
            fn call<'py>(
                slf: &Bound<'py, Self>,
                r#fn: &Bound<'py, PyAny>,
                args: &Bound<'py, PyTuple>,
                kwargs: Option<&Bound<'py, PyDict>>,
            ) -> PyResult<Bound<'py, PyAny>> {
                let p = Self::take(slf, Priority::default(), clock::now(), None, true)?
                    .ok_or_else(|| PyRuntimeError::new_err("refused"))?;
                run_under(slf.py(), p, r#fn, args, kwargs)
            }

            /// `await guard.acall(fn, *args, **kwargs)`.
            #[pyo3(signature = (r#fn, /, *args, **kwargs))]
            fn acall<'py>(
                slf: &Bound<'py, Self>,
                r#fn: &Bound<'py, PyAny>,
                args: &Bound<'py, PyTuple>,
                kwargs: Option<&Bound<'py, PyDict>>,
            ) -> PyResult<Bound<'py, PyAny>> {
                acall_of(slf.as_any(), r#fn, args, kwargs)
            }

            /// The current limit, all processes.
            #[getter]
            fn limit(&self) -> u64 {
                self.g.limit()
            }

            /// Calls inside now, all processes.
            #[getter]
            fn in_flight(&self) -> u64 {
                self.g.in_flight()
            }

            /// The settings.
            fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                on_view(&self.view, py, "config", ())
            }

            /// The counters, all processes.
            fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                on_view(&self.view, py, "stats", ())
            }

            /// Permits of this guard recorded in the region now, all processes.
            fn outstanding(&self) -> u64 {
                self.g.outstanding()
            }

            fn __getattr__<'py>(
                &self,
                py: Python<'py>,
                name: &Bound<'py, PyString>,
            ) -> PyResult<Bound<'py, PyAny>> {
                delegate(self.view.bind(py), name)
            }

            fn __repr__(&self) -> String {
                format!(
                    "shared.{}('{}', in_flight={})",
                    $pyname,
                    self.name,
                    self.g.in_flight()
                )
            }
        }
    };
}

priority_guard!(
    PySharedLimiter,
    "Limiter",
    "limiter",
    Limiter,
    Limiter,
    crate::limiter::rejected_error,
    "A host-wide adaptive limiter: `guards.Limiter`'s methods, its state in a region."
);
priority_guard!(
    PySharedAdmission,
    "Admission",
    "admission",
    Admission,
    Admission,
    crate::admission::refused_error,
    "A host-wide admission door: `guards.Admission`'s methods, its state in a region."
);

/// A shared keyed breaker set of any of the four sizes.
#[derive(Debug)]
enum AnyKeyedShared {
    K4(Shared<KeyedBreakers<4, 128>>),
    K16(Shared<KeyedBreakers<16, 128>>),
    K64(Shared<KeyedBreakers<64, 128>>),
    K256(Shared<KeyedBreakers<256, 128>>),
}

macro_rules! keyed_do {
    ($any:expr, $g:ident => $e:expr) => {
        match $any {
            AnyKeyedShared::K4($g) => $e,
            AnyKeyedShared::K16($g) => $e,
            AnyKeyedShared::K64($g) => $e,
            AnyKeyedShared::K256($g) => $e,
        }
    };
}

/// The exception for a keyed set's refusal at `now`: `BreakerOpen` as for one breaker, or
/// `RuntimeError` when the set has no room for the key (as `guards.KeyedBreakers`).
fn keyed_error(py: Python<'_>, r: KeyedBreakersRejected, now: Nanos, slots: u64) -> PyErr {
    let reason = match r.reason {
        KeyedBreakersRejectReason::Open => CircuitBreakerRejectReason::Open,
        KeyedBreakersRejectReason::HalfOpenFull => CircuitBreakerRejectReason::HalfOpenFull,
        _ => {
            return PyRuntimeError::new_err(format!(
                "the keyed breaker set is full ({slots} keys): no breaker for key {:#018x}",
                r.key
            ))
        }
    };
    crate::circuit_breaker::rejected_error(
        py,
        CircuitBreakerRejected {
            reason,
            retry_at: r.retry_at,
        },
        now,
    )
}

/// A host-wide set of circuit breakers, one per key: `guards.KeyedBreakers`'s methods.
#[pyclass(module = "guards.shared", name = "KeyedBreakers", frozen)]
#[derive(Debug)]
pub struct PySharedKeyedBreakers {
    g: AnyKeyedShared,
    name: String,
    region: Py<PyRegion>,
    /// The last state this process announced, per key.
    announced: AnnouncedByKey,
}

impl PySharedKeyedBreakers {
    fn take(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        now: Nanos,
        op: Option<&Bound<'_, PyAny>>,
        raise: bool,
    ) -> PyResult<Option<PySharedPermit>> {
        let py = slf.py();
        let k = crate::circuit_breaker::key_arg(key)?;
        let op = match op {
            Some(o) => o.clone(),
            None => crate::circuit_breaker::key_operation(key)?,
        };
        let me = slf.get();
        let got: Result<(PermitToken, PermitView), Refusal<KeyedBreakersRejected>> =
            keyed_do!(&me.g, g => g.try_acquire(k, now));
        match got {
            Ok((t, v)) => {
                if v.probe_timeout.is_some() {
                    me.announce(slf, k, Op::Given(&op));
                }
                Ok(Some(PySharedPermit::new(
                    SharedOwner::Keyed(slf.clone().unbind(), k),
                    t,
                    v,
                    Some(&op),
                )))
            }
            Err(Refusal::Rejected(r))
                if !raise && r.reason != KeyedBreakersRejectReason::SetFull =>
            {
                me.announce(slf, k, Op::Given(&op));
                Ok(None)
            }
            Err(Refusal::Rejected(r)) => {
                if r.reason != KeyedBreakersRejectReason::SetFull {
                    me.announce(slf, k, Op::Given(&op));
                }
                let err = keyed_error(py, r, now, me.slots());
                if r.reason != KeyedBreakersRejectReason::SetFull {
                    events::refusal(py, slf.as_any(), Op::Given(&op), &err);
                }
                Err(err)
            }
            Err(Refusal::Failed(f)) => Err(region_error(py, f, Some(&me.name))),
        }
    }

    /// Emit the state change of `key`'s breaker this process sees, if any.
    fn announce<'py>(&self, slf: &Bound<'py, Self>, key: u64, op: Op<'_, 'py>) {
        if let Some(b) = self.get_breaker(key) {
            self.announced
                .observe(slf.py(), key, b.0.status(), slf.as_any(), op);
        }
    }

    fn get_breaker(&self, key: u64) -> Option<CircuitBreakerRef<'_>> {
        keyed_do!(&self.g, g => g.get(key).map(CircuitBreakerRef))
    }

    fn slots(&self) -> u64 {
        keyed_do!(&self.g, g => cap_of(g))
    }
}

/// One breaker of a shared keyed set.
struct CircuitBreakerRef<'a>(&'a CircuitBreaker<128>);

#[pymethods]
impl PySharedKeyedBreakers {
    /// For `guards.guarded`: what kind of host-wide guard this is.
    #[classattr]
    fn _guards_shared_kind() -> &'static str {
        "keyed_breakers"
    }

    /// Its name in the region.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The region it lives in.
    #[getter]
    fn region(&self, py: Python<'_>) -> Py<PyRegion> {
        self.region.clone_ref(py)
    }

    /// How many keys the set holds at most.
    #[getter(slots)]
    fn slots_py(&self) -> u64 {
        self.slots()
    }

    /// Ask to make a call to `key` at `now`: a permit, `BreakerOpen`, or `RuntimeError`
    /// when the set is full.
    #[pyo3(signature = (key, now = None, *, operation = None))]
    fn acquire(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PySharedPermit> {
        let now = util::get_now(now)?;
        let op = op_arg(operation)?;
        Self::take(slf, key, now, op.as_ref(), true)?
            .ok_or_else(|| PyRuntimeError::new_err("refused"))
    }

    /// Like `acquire`, but `None` instead of raising `BreakerOpen`.
    #[pyo3(signature = (key, now = None, *, operation = None))]
    fn try_acquire(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PySharedPermit>> {
        let now = util::get_now(now)?;
        let op = op_arg(operation)?;
        Self::take(slf, key, now, op.as_ref(), false)
    }

    /// `fn(*args, **kwargs)` under `key`'s breaker.
    #[pyo3(signature = (key, r#fn, /, *args, **kwargs))]
    fn call<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = Self::take(slf, key, clock::now(), None, true)?
            .ok_or_else(|| PyRuntimeError::new_err("refused"))?;
        run_under(slf.py(), p, r#fn, args, kwargs)
    }

    /// `await breakers.acall(key, fn, *args, **kwargs)`.
    #[pyo3(signature = (key, r#fn, /, *args, **kwargs))]
    fn acall<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let helper = py
            .import(intern!(py, "guards.shared"))?
            .getattr(intern!(py, "_acall_keyed"))?;
        let kw = match kwargs {
            Some(k) => k.clone(),
            None => PyDict::new(py),
        };
        helper.call1((slf, key, r#fn, args, kw))
    }

    /// The state of `key`'s breaker at `now` (`"closed"` for a key never seen).
    #[pyo3(signature = (key, now = None))]
    fn state(
        &self,
        key: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<&'static str> {
        let k = crate::circuit_breaker::key_arg(key)?;
        let now = util::get_now(now)?;
        Ok(self
            .get_breaker(k)
            .map_or("closed", |b| b.0.state(now).name()))
    }

    /// The settings every breaker uses (durations in seconds) and `slots`.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = keyed_do!(&self.g, g => *g.config());
        let d = crate::config::to_dict(py, &CIRCUIT_BREAKER, &c)?;
        d.set_item("slots", self.slots())?;
        Ok(d)
    }

    /// Without `key`: `{"entries", "full"}`. With `key`: that breaker's `successes`,
    /// `failures`, `rejected_open`, `closed_to_open` (or `None` for a key never seen).
    #[pyo3(signature = (key = None))]
    fn stats<'py>(
        &self,
        py: Python<'py>,
        key: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        match given(key) {
            None => {
                let s = keyed_do!(&self.g, g => g.stats());
                Ok(Some(util::stats_dict(
                    py,
                    &[("entries", s.entries), ("full", s.full)],
                )?))
            }
            Some(key) => {
                let k = crate::circuit_breaker::key_arg(key)?;
                self.get_breaker(k)
                    .map(|b| {
                        let s = b.0.stats();
                        util::stats_dict(
                            py,
                            &[
                                ("successes", s.successes),
                                ("failures", s.failures),
                                ("ignored", s.ignored),
                                ("rejected_open", s.rejected_open),
                                ("rejected_half_open", s.rejected_half_open),
                                ("closed_to_open", s.closed_to_open),
                                ("half_open_to_closed", s.half_open_to_closed),
                            ],
                        )
                    })
                    .transpose()
            }
        }
    }

    /// Permits of this set held now, by every process.
    fn outstanding(&self) -> u64 {
        keyed_do!(&self.g, g => g.outstanding())
    }

    fn __len__(&self) -> usize {
        keyed_do!(&self.g, g => g.len())
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = crate::circuit_breaker::key_arg(key)?;
        Ok(self.get_breaker(k).is_some())
    }

    fn __repr__(&self) -> String {
        format!(
            "shared.KeyedBreakers('{}', slots={}, len={})",
            self.name,
            self.slots(),
            self.__len__()
        )
    }
}

/// The shared guard a permit goes back to.
#[derive(Debug)]
pub(crate) enum SharedOwner {
    Breaker(Py<PySharedBreaker>),
    Bulkhead(Py<PySharedBulkhead>),
    Limiter(Py<PySharedLimiter>),
    Admission(Py<PySharedAdmission>),
    Keyed(Py<PySharedKeyedBreakers>, u64),
}

impl SharedOwner {
    /// Report `t`: the breaker's effect name, or `"done"` for the others; `None` when the
    /// region refused the token (already handed back, or reclaimed).
    fn report(&self, t: PermitToken, o: Outcome, now: Nanos) -> Option<&'static str> {
        match self {
            SharedOwner::Breaker(b) => {
                breaker_do!(&b.get().g, g => g.report(t, o, now).ok().map(|e| e.name()))
            }
            SharedOwner::Bulkhead(b) => b.get().g.report(t, o, now).ok().map(|_| "done"),
            SharedOwner::Limiter(b) => b.get().g.report(t, o, now).ok().map(|_| "done"),
            SharedOwner::Admission(b) => b.get().g.report(t, o, now).ok().map(|_| "done"),
            SharedOwner::Keyed(b, _) => {
                keyed_do!(&b.get().g, g => g.report(t, o, now).ok().map(|e| e.name()))
            }
        }
    }

    fn is_breaker(&self) -> bool {
        matches!(self, SharedOwner::Breaker(_) | SharedOwner::Keyed(..))
    }
}

impl guards::permit::Owner for SharedOwner {
    type Permit = PermitToken;

    /// Hand the permit back unjudged (`ignored`: a bulkhead slot released, a probe given
    /// back, a limiter place freed without a sample).
    fn give_back(&self, t: PermitToken) {
        // A bulkhead's report does not read the time: no clock for its release.
        let now = match self {
            SharedOwner::Bulkhead(_) => Nanos(0),
            _ => clock::now(),
        };
        let _ = self.report(t, Outcome::Ignored, now);
    }
}

/// A permit of a host-wide guard, recorded in the region with this process as its owner.
/// Report one outcome: `report(outcome)`, the primitives, `release()`, or `with permit:`;
/// collected without one, it is handed back unjudged.
#[pyclass(module = "guards.shared", name = "Permit", frozen)]
#[derive(Debug)]
pub struct PySharedPermit {
    permit: Granted<SharedOwner>,
    view: PermitView,
    operation: Option<Py<PyAny>>,
}

impl PySharedPermit {
    fn new(
        owner: SharedOwner,
        t: PermitToken,
        view: PermitView,
        op: Option<&Bound<'_, PyAny>>,
    ) -> Self {
        PySharedPermit {
            permit: Granted::new(owner, t),
            view,
            operation: op.map(|o| o.clone().unbind()),
        }
    }

    /// Report `o` at `now`: the breaker's effect (or `"done"`), `None` if already reported.
    fn finish(&self, o: Outcome, now: Nanos) -> Option<&'static str> {
        let t = self.permit.take()?;
        self.permit.owner().report(t, o, now)
    }

    /// [`finish`](Self::finish), emitting the breaker's state change if the outcome moved
    /// it.
    fn finish_py(&self, py: Python<'_>, o: Outcome, now: Nanos) -> Option<&'static str> {
        let effect = self.finish(o, now);
        if matches!(effect, Some("opened" | "reopened" | "closed")) {
            let op = Op::given(self.operation.as_ref().map(|o| o.bind(py)));
            match self.permit.owner() {
                SharedOwner::Breaker(b) => b.get().announce(b.bind(py), op),
                SharedOwner::Keyed(b, key) => b.get().announce(b.bind(py), *key, op),
                _ => {}
            }
        }
        effect
    }

    fn answer(&self, py: Python<'_>, effect: Option<&'static str>) -> Py<PyAny> {
        if self.permit.owner().is_breaker() {
            match effect {
                Some(e) => PyString::intern(py, e).into_any().unbind(),
                None => py.None(),
            }
        } else {
            let b = effect.is_some();
            pyo3::types::PyBool::new(py, b)
                .to_owned()
                .into_any()
                .unbind()
        }
    }
}

#[pymethods]
impl PySharedPermit {
    /// Hand the permit back with how the call ended (an outcome of the call contract) at
    /// `now`. A breaker's permit returns the effect (`"counted"`, `"opened"`, ...) or
    /// `None` if already reported; the others `True`, or `False` if already reported.
    #[pyo3(signature = (outcome, now = None))]
    fn report(
        &self,
        py: Python<'_>,
        outcome: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let o = outcome::outcome_arg(outcome)?;
        let now = util::get_now(now)?;
        Ok(self.answer(py, self.finish_py(py, o, now)))
    }

    /// The call succeeded at `now`.
    #[pyo3(signature = (now = None))]
    fn on_success(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let now = util::get_now(now)?;
        Ok(self.answer(py, self.finish_py(py, Outcome::Success, now)))
    }

    /// The call failed at `now` (`other_transient`).
    #[pyo3(signature = (now = None))]
    fn on_failure(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let now = util::get_now(now)?;
        Ok(self.answer(py, self.finish_py(py, Outcome::OtherTransient, now)))
    }

    /// The call was dropped by overload at `now` (`overloaded`).
    #[pyo3(signature = (now = None))]
    fn on_dropped(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let now = util::get_now(now)?;
        Ok(self.answer(py, self.finish_py(py, Outcome::Overloaded, now)))
    }

    /// Hand it back reporting nothing. `True` the first time, `False` after.
    fn on_ignore(&self) -> bool {
        self.permit.give_back()
    }

    /// Hand it back reporting nothing (a bulkhead's `release`). `True` the first time.
    fn release(&self) -> bool {
        self.permit.give_back()
    }

    /// Whether it has been handed back.
    #[getter]
    fn done(&self) -> bool {
        self.permit.done()
    }

    /// Whether it has been handed back (a bulkhead permit's name for `done`).
    #[getter]
    fn released(&self) -> bool {
        self.permit.done()
    }

    /// Whether this is a half-open breaker probe.
    #[getter]
    fn is_probe(&self) -> bool {
        self.view.probe_timeout.is_some()
    }

    /// For a breaker: `"call"` or `"probe"`; `None` for the other guards.
    #[getter]
    fn kind(&self) -> Option<&'static str> {
        if !self.permit.owner().is_breaker() {
            return None;
        }
        Some(if self.is_probe() { "probe" } else { "call" })
    }

    /// When it was granted (integer nanoseconds; 0 for a bulkhead).
    #[getter]
    fn acquired_at(&self) -> u64 {
        self.view.acquired_at.as_u64()
    }

    /// For a probe: how long it may take, in seconds; else `None`.
    #[getter]
    fn probe_timeout(&self) -> Option<f64> {
        self.view.probe_timeout.map(util::secs)
    }

    /// `probe_timeout` in integer nanoseconds.
    #[getter]
    fn probe_timeout_ns(&self) -> Option<u64> {
        self.view.probe_timeout.map(Nanos::as_u64)
    }

    /// The `operation` it was taken for, if any.
    #[getter]
    fn operation(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.operation.as_ref().map(|o| o.clone_ref(py))
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Report how the block ended: success, or the exception leaving it classified by
    /// `guards.classify_exception`. The exception is never suppressed.
    #[pyo3(signature = (_exc_type = None, exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let o = permit::exit_outcome(exc)?;
        self.finish_py(py, o, clock::now());
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("shared.Permit(done={})", util::py_bool(self.permit.done()))
    }
}

/// The native part of `guards.shared`: a module `_guards._shared` (kept out of the
/// package's top-level names; `guards/shared.py` re-exports it).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let s = PyModule::new(py, "guards._guards._shared")?;
    s.add_class::<PyRegion>()?;
    s.add_class::<PySharedBreaker>()?;
    s.add_class::<PySharedBulkhead>()?;
    s.add_class::<PySharedLimiter>()?;
    s.add_class::<PySharedAdmission>()?;
    s.add_class::<PySharedKeyedBreakers>()?;
    s.add_class::<PySharedPermit>()?;
    s.add("RegionError", py.get_type::<RegionError>())?;
    s.add("RegionInvalid", py.get_type::<RegionInvalid>())?;
    s.add("RegionIncompatible", py.get_type::<RegionIncompatible>())?;
    s.add("RegionFull", py.get_type::<RegionFull>())?;
    s.add("RegionTimeout", py.get_type::<RegionTimeout>())?;
    let mismatch = py.get_type::<GuardMismatch>();
    for a in ["name", "field", "existing", "requested", "differences"] {
        mismatch.setattr(a, py.None())?;
    }
    s.add("GuardMismatch", mismatch)?;
    s.add("GuardNotFound", py.get_type::<GuardNotFound>())?;
    s.add(
        "PermitSlotsExhausted",
        py.get_type::<PermitSlotsExhausted>(),
    )?;
    m.setattr("_shared", s)?;
    Ok(())
}
