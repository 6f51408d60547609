//! What the permit classes share (`LimiterPermit`, `AdmissionTicket`, `BulkheadPermit`,
//! `BreakerPermit`): core's permit goes back to the guard that granted it exactly once, with
//! the first outcome reported, or, when none was, as an ignore once the Python object is
//! collected. Each class keeps its own `#[pymethods]` (names, docstrings and return values
//! differ) and calls into [`Granted`].

use std::sync::Mutex;

use guards_core::Nanos;
use pyo3::exceptions::PyTimeoutError;
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::errors::GuardError;
use crate::util::{self, given};

/// A value behind a frozen pyclass that is taken once: `take` gives it the first time and
/// `None` after. A poisoned lock is recovered (the slot holds no invariant a panic could
/// break).
#[derive(Debug)]
pub(crate) struct Once<T>(Mutex<Option<T>>);

impl<T> Once<T> {
    pub(crate) fn new(v: T) -> Self {
        Once(Mutex::new(Some(v)))
    }

    /// The value, the first time.
    pub(crate) fn take(&self) -> Option<T> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// `take` with exclusive access (in `Drop`: no locking).
    pub(crate) fn take_mut(&mut self) -> Option<T> {
        self.0.get_mut().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Whether it has been taken.
    pub(crate) fn is_taken(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).is_none()
    }
}

/// The guard a permit goes back to.
pub(crate) trait Owner {
    /// Core's permit.
    type Permit;

    /// Give `p` back reporting nothing (core's `on_ignore`, or a bulkhead's `release`).
    /// Called from `Drop` too, so it needs no GIL: `Py::get` on a frozen class reads the
    /// Rust value directly.
    fn give_back(&self, p: Self::Permit);
}

/// A permit granted by `O`, given back once.
#[derive(Debug)]
pub(crate) struct Granted<O: Owner> {
    owner: O,
    permit: Once<O::Permit>,
}

impl<O: Owner> Granted<O> {
    pub(crate) fn new(owner: O, p: O::Permit) -> Self {
        Granted {
            owner,
            permit: Once::new(p),
        }
    }

    /// The guard it goes back to.
    pub(crate) fn owner(&self) -> &O {
        &self.owner
    }

    /// Core's permit, if no outcome has been reported yet.
    pub(crate) fn take(&self) -> Option<O::Permit> {
        self.permit.take()
    }

    /// Whether an outcome has been reported.
    pub(crate) fn done(&self) -> bool {
        self.permit.is_taken()
    }

    /// Give the permit back reporting nothing: `true` the first time, `false` (and nothing
    /// happens) after.
    pub(crate) fn give_back(&self) -> bool {
        match self.take() {
            Some(p) => {
                self.owner.give_back(p);
                true
            }
            None => false,
        }
    }
}

impl<O: Owner> Drop for Granted<O> {
    /// A permit collected without an outcome is ignored (its slot comes back, no sample).
    fn drop(&mut self) {
        if let Some(p) = self.permit.take_mut() {
            self.owner.give_back(p);
        }
    }
}

/// An owner whose permits report how the call went at an instant (the limiter's and
/// admission's: an RTT sample, or a congestion signal).
pub(crate) trait Outcomes: Owner {
    /// The call succeeded at `now`.
    fn success(&self, p: Self::Permit, now: Nanos);
    /// The call was dropped at `now` (timed out, or refused downstream).
    fn dropped(&self, p: Self::Permit, now: Nanos);
}

/// Which outcome a `with` block reports: success, dropped (timeouts and guard refusals)
/// or ignored (other exceptions).
enum Exit {
    Success,
    Dropped,
    Ignore,
}

fn exit_kind(exc_type: Option<&Bound<'_, PyAny>>) -> PyResult<Exit> {
    let Some(t) = given(exc_type) else {
        return Ok(Exit::Success);
    };
    let py = t.py();
    let Ok(t) = t.cast::<PyType>() else {
        return Ok(Exit::Ignore);
    };
    if t.is_subclass(&py.get_type::<PyTimeoutError>())?
        || t.is_subclass(&py.get_type::<GuardError>())?
    {
        Ok(Exit::Dropped)
    } else {
        Ok(Exit::Ignore)
    }
}

impl<O: Outcomes> Granted<O> {
    /// Report `outcome` at `now` (the clock's when `None`): `false` if already reported.
    fn report(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        outcome: fn(&O, O::Permit, Nanos),
    ) -> PyResult<bool> {
        let now = util::get_now(py, now)?;
        Ok(match self.take() {
            Some(p) => {
                outcome(&self.owner, p, now);
                true
            }
            None => false,
        })
    }

    /// `on_success(now)`: `false` if already reported.
    pub(crate) fn on_success(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.report(py, now, O::success)
    }

    /// `on_dropped(now)`: `false` if already reported.
    pub(crate) fn on_dropped(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.report(py, now, O::dropped)
    }

    /// `__exit__`: report success, dropped (a `TimeoutError` or a `GuardError`) or ignore
    /// (any other exception); the exception is never suppressed.
    pub(crate) fn exit(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        match exit_kind(exc_type)? {
            Exit::Success => self.on_success(py, None)?,
            Exit::Dropped => self.on_dropped(py, None)?,
            Exit::Ignore => self.give_back(),
        };
        Ok(false)
    }
}
