//! Events from native code, through the one registry of `guards.events`.
//!
//! A breaker's state change, a refusal and a limit change are emitted where they happen,
//! in native code too: `breaker.call`, native guarded calls and blocks, and permits used by
//! hand. Emitting means calling `guards.events.emit_new`, which hands the event to the
//! listeners and the `guards` logger, or does nothing when neither would see it. Only the
//! rare paths call it (a transition, a refusal, a limit that moved): a call that succeeds
//! in a closed breaker never reaches this module.
//!
//! Breaker transitions are found by [`Announced`]: each breaker remembers the last state
//! (generation and state) an event was emitted for; after a probe, a refusal or an outcome
//! that may have moved the breaker, the current state is compared with it and the change
//! emitted once, by whichever thread swaps in the new state first.

use std::sync::atomic::{AtomicU64, Ordering};

use guards::names::BreakerStatus;
use guards_core::circuit_breaker::BreakerState;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyString};

/// `guards.events.emit_new`, imported on first use (the package imports this module).
fn emit_new(py: Python<'_>) -> Option<&Bound<'_, PyAny>> {
    static EMIT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    EMIT.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("guards.events")?.getattr("emit_new")?.unbind())
    })
    .ok()
    .map(|f| f.bind(py))
}

/// What decides whether an event is seen without calling into Python: `guards.events`'s
/// listener table, the `guards` logger's level cache and each kind's highest log level.
struct Audience {
    listeners: Py<PyDict>,
    level_cache: Py<PyDict>,
    max_level: Py<PyDict>,
}

fn audience(py: Python<'_>) -> Option<&Audience> {
    static AUDIENCE: PyOnceLock<Audience> = PyOnceLock::new();
    AUDIENCE
        .get_or_try_init(py, || -> PyResult<Audience> {
            let m = py.import("guards.events")?;
            let listeners = m.getattr("_LISTENERS")?;
            let level_cache = m.getattr("logger")?.getattr("_cache")?;
            let max_level = m.getattr("_MAX_LEVEL")?;
            Ok(Audience {
                listeners: listeners.cast_into::<PyDict>()?.unbind(),
                level_cache: level_cache.cast_into::<PyDict>()?.unbind(),
                max_level: max_level.cast_into::<PyDict>()?.unbind(),
            })
        })
        .ok()
}

/// Whether an event of `kind` is certainly unseen: no listener for it, and the `guards`
/// logger's cached answer for the kind's highest level is "not enabled" (a level the
/// logger has not been asked about yet, or anything unexpected, is left to `emit_new`).
/// Dictionary reads only, so that a refusal nobody listens to costs no Python call.
fn unheard(py: Python<'_>, kind: &Bound<'_, PyString>) -> bool {
    let Some(a) = audience(py) else {
        return false;
    };
    let listened = match a.listeners.bind(py).get_item(kind) {
        Ok(Some(v)) => v.is_truthy().unwrap_or(true),
        Ok(None) => false,
        Err(_) => true,
    };
    if listened {
        return false;
    }
    let Ok(Some(level)) = a.max_level.bind(py).get_item(kind) else {
        return false;
    };
    matches!(a.level_cache.bind(py).get_item(level), Ok(Some(v)) if v.is(PyBool::new(py, false)))
}

/// Emit an event of `kind` from `source` with `fields` (made only when someone may see
/// the event). Never raises: a failure (which `emit_new` itself never has) is reported as
/// unraisable.
fn emit<'py>(
    py: Python<'py>,
    kind: &Bound<'py, PyString>,
    source: &Bound<'py, PyAny>,
    fields: impl FnOnce() -> Vec<(&'static str, Bound<'py, PyAny>)>,
) {
    if unheard(py, kind) {
        return;
    }
    let Some(f) = emit_new(py) else { return };
    let run = || -> PyResult<()> {
        let kw = PyDict::new(py);
        for (k, v) in fields() {
            kw.set_item(k, v)?;
        }
        f.call((kind, source), Some(&kw))?;
        Ok(())
    };
    if let Err(e) = run() {
        e.write_unraisable(py, Some(source));
    }
}

/// The name an event gives its call (`Event.operation`), found only when an event is
/// emitted.
#[derive(Clone, Copy)]
pub(crate) enum Op<'a, 'py> {
    /// No name.
    None,
    /// This name (a `str`, or an object whose `str()` is the name).
    Given(&'a Bound<'py, PyAny>),
    /// The `__qualname__` of this object (a guarded function), if it has one.
    QualnameOf(&'a Bound<'py, PyAny>),
}

impl<'a, 'py> Op<'a, 'py> {
    /// `Given(v)` if `v` is given, else `None`.
    pub(crate) fn given(v: Option<&'a Bound<'py, PyAny>>) -> Self {
        v.map_or(Op::None, Op::Given)
    }

    fn resolve(self, py: Python<'py>) -> Bound<'py, PyAny> {
        match self {
            Op::None => py.None().into_bound(py),
            Op::Given(v) => v.clone(),
            Op::QualnameOf(f) => {
                if let Ok(g) = f.cast::<crate::guarded::PyGuardedFunction>() {
                    // Its own name if it was given one, else its function's.
                    if let Ok(n) = crate::guarded::qualname(g.as_any(), g.get()) {
                        return PyString::new(py, &n).into_any();
                    }
                }
                f.getattr(pyo3::intern!(py, "__qualname__"))
                    .ok()
                    .filter(|n| n.is_instance_of::<PyString>())
                    .unwrap_or_else(|| py.None().into_bound(py))
            }
        }
    }
}

fn operation_field<'py>(py: Python<'py>, operation: Op<'_, 'py>) -> Bound<'py, PyAny> {
    operation.resolve(py)
}

/// A guard refused a call: `exception` is the refusal.
pub(crate) fn refusal<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    operation: Op<'_, 'py>,
    err: &PyErr,
) {
    emit(py, intern!(py, "refusal"), source, || {
        vec![
            ("operation", operation_field(py, operation)),
            ("exception", err.value(py).clone().into_any()),
        ]
    });
}

/// An adaptive limit moved from `old` to `new`.
pub(crate) fn limit_change<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    operation: Op<'_, 'py>,
    old: u64,
    new: u64,
) {
    emit(py, intern!(py, "limit_change"), source, || {
        let Ok(old) = old.into_pyobject(py);
        let Ok(new) = new.into_pyobject(py);
        vec![
            ("operation", operation_field(py, operation)),
            ("old", old.into_any()),
            ("new", new.into_any()),
        ]
    });
}

fn state_change<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    operation: Op<'_, 'py>,
    old: BreakerState,
    new: BreakerState,
) {
    emit(py, intern!(py, "state_change"), source, || {
        vec![
            ("operation", operation_field(py, operation)),
            ("old", PyString::intern(py, old.name()).into_any()),
            ("new", PyString::intern(py, new.name()).into_any()),
        ]
    });
}

fn pack(s: &BreakerStatus) -> u64 {
    (u64::from(s.generation) << 2) | s.state as u64
}

fn state_of(packed: u64) -> BreakerState {
    BreakerState::try_from((packed & 3) as u8).unwrap_or(BreakerState::Closed)
}

/// Whether `now` (a packed status) is newer than `before`.
fn is_newer(before: u64, now: u64) -> bool {
    let ahead = ((now >> 2) as u32).wrapping_sub((before >> 2) as u32);
    ahead != 0 && ahead < 1 << 31
}

/// Emit the transitions from the packed state `before` to `status`: along the legal path
/// (`closed -> open -> half_open -> open|closed`) when some were not observed, at most four.
fn emit_path<'py>(
    py: Python<'py>,
    before: u64,
    status: BreakerStatus,
    source: &Bound<'py, PyAny>,
    operation: Op<'_, 'py>,
) {
    let steps = status.generation.wrapping_sub((before >> 2) as u32).min(4);
    let mut cur = state_of(before);
    for left in (1..=steps).rev() {
        let next = if left == 1 {
            status.state
        } else {
            match cur {
                BreakerState::Closed => BreakerState::Open,
                BreakerState::Open => BreakerState::HalfOpen,
                BreakerState::HalfOpen => BreakerState::Open,
            }
        };
        if next != cur {
            state_change(py, source, operation, cur, next);
        }
        cur = next;
    }
}

/// The last breaker state announced: `generation << 2 | state` (0: closed, generation 0,
/// as a breaker starts).
#[derive(Debug, Default)]
pub(crate) struct Announced(AtomicU64);

impl Announced {
    /// Compare the breaker's `status` with the last state announced and emit the change
    /// (once, by whichever thread sees it first; a status older than the one announced is
    /// ignored).
    pub(crate) fn observe<'py>(
        &self,
        py: Python<'py>,
        status: BreakerStatus,
        source: &Bound<'py, PyAny>,
        operation: Op<'_, 'py>,
    ) {
        let now = pack(&status);
        let mut before = self.0.load(Ordering::Acquire);
        loop {
            if !is_newer(before, now) {
                return;
            }
            match self
                .0
                .compare_exchange(before, now, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(actual) => before = actual,
            }
        }
        emit_path(py, before, status, source, operation);
    }
}

/// [`Announced`] for every key of a keyed set (a map behind a lock, only touched on the
/// rare paths; the lock is never held while an event is emitted).
#[derive(Debug, Default)]
pub(crate) struct AnnouncedByKey(std::sync::Mutex<std::collections::HashMap<u64, u64>>);

impl AnnouncedByKey {
    /// [`Announced::observe`] for the breaker of `key`.
    pub(crate) fn observe<'py>(
        &self,
        py: Python<'py>,
        key: u64,
        status: BreakerStatus,
        source: &Bound<'py, PyAny>,
        operation: Op<'_, 'py>,
    ) {
        let now = pack(&status);
        let before = {
            let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
            let slot = map.entry(key).or_insert(0);
            if !is_newer(*slot, now) {
                return;
            }
            std::mem::replace(slot, now)
        };
        emit_path(py, before, status, source, operation);
    }
}
