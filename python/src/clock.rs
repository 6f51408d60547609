//! Time for the bindings: the process's monotonic clock, and `FakeClock` for tests.
//!
//! Core never reads a clock: every call takes `now`. The Python classes take
//! `now: int | None = None` (integer nanoseconds) and read [`now`] when it is `None`:
//! the innermost installed `FakeClock` if any (installed with `with FakeClock() as c:`),
//! else ffi's default clock (`guards::clock`: CLOCK_MONOTONIC, which is what
//! `time.monotonic_ns()` reads).
//!
//! Installed fake clocks form one process-wide stack (not per thread or per task): a
//! test that installs one controls the time every guard sees, in every thread.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use guards_core::Nanos;
use pyo3::prelude::*;

use crate::util::{self, Ctx};

/// How many fake clocks are installed (a fast check before taking the stack's lock).
static INSTALLED: AtomicUsize = AtomicUsize::new(0);
/// The installed fake clocks, innermost last.
static STACK: Mutex<Vec<Py<FakeClock>>> = Mutex::new(Vec::new());

fn stack() -> std::sync::MutexGuard<'static, Vec<Py<FakeClock>>> {
    STACK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The time guards read when `now` is not given: the innermost installed fake clock,
/// else ffi's default clock (CLOCK_MONOTONIC, the timeline of `time.monotonic_ns()`).
#[inline]
pub(crate) fn now() -> Nanos {
    if INSTALLED.load(Ordering::Acquire) != 0 {
        if let Some(c) = stack().last() {
            return Nanos(c.get().ns.load(Ordering::SeqCst));
        }
    }
    guards::clock::now()
}

/// The clock of one guarded call, read at most once and only if a guard's decision needs
/// it (core's lazy-clock contract): a closed breaker that does not time its calls never
/// reads it.
pub(crate) type Once = guards_core::time::OnceClock<fn() -> Nanos>;

/// A `now` argument of a Python method: the instant given, or [`now`] read on demand.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arg {
    /// The caller's instant.
    At(Nanos),
    /// Read [`now`] if a decision needs it.
    Read,
}

impl guards_core::Clock for Arg {
    #[inline]
    fn now(&self) -> Nanos {
        match self {
            Arg::At(t) => *t,
            Arg::Read => now(),
        }
    }
}

/// A fresh [`Once`] over [`now`].
#[inline]
pub(crate) fn once() -> Once {
    Once::new(now)
}

/// Whether a `FakeClock` is installed (then [`now`] reads it).
#[inline]
pub(crate) fn fake_installed() -> bool {
    INSTALLED.load(Ordering::Acquire) != 0
}

/// `monotonic_ns()`: the monotonic clock (`CLOCK_MONOTONIC`) in integer nanoseconds,
/// ignoring any installed `FakeClock`.
#[pyfunction]
pub(crate) fn monotonic_ns() -> u64 {
    guards::clock::now_ns()
}

/// `now_ns()`: what every guard's default `now` reads: the installed `FakeClock`'s time
/// if one is installed, else `monotonic_ns()`.
#[pyfunction]
pub(crate) fn now_ns() -> u64 {
    now().as_u64()
}

/// `current_clock()`: the innermost installed `FakeClock`, or `None`.
#[pyfunction]
pub(crate) fn current_clock(py: Python<'_>) -> Option<Py<FakeClock>> {
    stack().last().map(|c| c.clone_ref(py))
}

/// A manual clock for tests. Read with `now()`, move with `set()`/`advance()`; install it
/// with `with clock:` so that every guard's default `now` reads it.
#[pyclass(module = "guards", frozen)]
#[derive(Debug)]
pub struct FakeClock {
    ns: AtomicU64,
}

impl FakeClock {
    fn add(&self, d: Nanos) -> u64 {
        let mut cur = self.ns.load(Ordering::SeqCst);
        loop {
            let next = cur.saturating_add(d.as_u64());
            match self
                .ns
                .compare_exchange_weak(cur, next, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return next,
                Err(actual) => cur = actual,
            }
        }
    }
}

#[pymethods]
impl FakeClock {
    /// `FakeClock(now=0)`: a clock reading `now` nanoseconds.
    #[new]
    #[pyo3(signature = (now = None))]
    fn new(now: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let ns = match util::given(now) {
            Some(v) => util::get_u64("now", v, Ctx::Arg)?,
            None => 0,
        };
        Ok(FakeClock {
            ns: AtomicU64::new(ns),
        })
    }

    /// The current reading, integer nanoseconds.
    fn now(&self) -> u64 {
        self.ns.load(Ordering::SeqCst)
    }

    /// Set the reading to `ns` (it may go backwards: tests of clock skew need it).
    fn set(&self, ns: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = util::get_u64("ns", ns, Ctx::Arg)?;
        self.ns.store(v, Ordering::SeqCst);
        Ok(())
    }

    /// Move forward by `seconds` plus `ns` nanoseconds; returns the new reading.
    #[pyo3(signature = (seconds = None, *, ns = None))]
    fn advance(
        &self,
        seconds: Option<&Bound<'_, PyAny>>,
        ns: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        let mut d = match util::given(seconds) {
            Some(s) => util::get_duration("seconds", s, Ctx::Arg)?,
            None => Nanos::ZERO,
        };
        if let Some(n) = util::given(ns) {
            d = d.saturating_add(Nanos(util::get_u64("ns", n, Ctx::Arg)?));
        }
        Ok(self.add(d))
    }

    /// "Sleep" by advancing the clock by `seconds`; returns at once.
    fn sleep(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        let d = util::get_duration("seconds", seconds, Ctx::Arg)?;
        self.add(d);
        Ok(())
    }

    /// `await clock.asleep(seconds)`: advance the clock by `seconds`, then yield to the
    /// asyncio event loop once (like `asyncio.sleep(0)`), so other tasks run and a
    /// cancellation can land.
    fn asleep(slf: Bound<'_, Self>, seconds: &Bound<'_, PyAny>) -> PyResult<FakeSleep> {
        let d = util::get_duration("seconds", seconds, Ctx::Arg)?;
        Ok(FakeSleep {
            clock: slf.unbind(),
            duration: d,
            step: AtomicU64::new(0),
        })
    }

    /// Install this clock: guards' default `now` reads it until the block ends (nested
    /// installs stack; leaving restores the previous one).
    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        stack().push(slf.clone().unbind());
        INSTALLED.fetch_add(1, Ordering::AcqRel);
        slf
    }

    /// Uninstall this clock (its innermost installation).
    #[pyo3(signature = (*_args))]
    fn __exit__(slf: &Bound<'_, Self>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        let mut st = stack();
        if let Some(pos) = st.iter().rposition(|c| c.as_ptr() == slf.as_ptr()) {
            let removed = st.remove(pos);
            INSTALLED.fetch_sub(1, Ordering::AcqRel);
            drop(st);
            drop(removed);
        }
        false
    }

    fn __repr__(&self) -> String {
        format!("FakeClock(now={})", self.now())
    }

    /// Whether `with` has installed this clock (at any depth).
    #[getter]
    fn installed(slf: &Bound<'_, Self>) -> bool {
        stack().iter().any(|c| c.as_ptr() == slf.as_ptr())
    }
}

/// The awaitable returned by `FakeClock.asleep`.
#[pyclass(module = "guards", frozen)]
#[derive(Debug)]
pub struct FakeSleep {
    clock: Py<FakeClock>,
    duration: Nanos,
    /// 0: not started; 1: clock advanced, yielded once; 2: done.
    step: AtomicU64,
}

#[pymethods]
impl FakeSleep {
    fn __await__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        match self.step.fetch_add(1, Ordering::AcqRel) {
            0 => {
                self.clock.get().add(self.duration);
                Some(py.None())
            }
            _ => None,
        }
    }
}
