//! `CircuitBreaker` (count or time window, failure and slow-call rates, half-open probes,
//! growing open durations) and `KeyedBreakers` (one breaker per key, fixed slots).
//!
//! `acquire()` returns a `BreakerPermit` (a call, or a probe while half-open) or raises
//! `BreakerOpen` with `reason` (`"open"` or `"half_open_full"`), `retry_after` (seconds
//! from `now`), `retry_after_ns` and `retry_at` (the instant, integer nanoseconds). The
//! permit reports one outcome: `on_success(now)` / `on_failure(now)` return the effect
//! (`"counted"`, `"opened"`, `"probe_passed"`, `"closed"`, `"reopened"`, `"discarded"`),
//! `on_ignore()` records nothing. A second outcome is a no-op returning `None` (`False`
//! for `on_ignore`). `with permit:` reports success, failure for an `Exception` (a
//! `GuardError` from an inner guard is ignored instead: it is not the callee failing) and
//! ignore for other `BaseException`s (cancellation, interrupts). A permit collected without
//! an outcome is ignored.
//!
//! Core's breaker has a fixed number of cells (`capacity`, 128 by default): a count window
//! holds at most `capacity` outcomes, a time window at most `capacity / 3` buckets. The
//! class accepts `capacity` of 128, 1024, 8192 or 65536.

use guards_core::circuit_breaker::{
    key_of as core_key_of, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerPermit,
    CircuitBreakerRejected, KeyedBreakers, OutcomeEffect, PermitKind, WindowKind,
};
use guards_core::{ConfigErrorKind, Nanos};
use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyString, PyTuple, PyType};

use crate::errors::{self, BreakerOpen, GuardError};
use crate::guarded::{self, Guard, GuardRef};
use crate::guarded_coro::PyGuardedCoroutine;
use crate::permit::{self, Granted};
use crate::util::{self, given, Ctx};

/// Keyword settings of a breaker (shared by `CircuitBreaker` and `KeyedBreakers`).
pub(crate) struct BreakerArgs<'a, 'py> {
    pub window_kind: Option<&'a Bound<'py, PyAny>>,
    pub window_size: Option<&'a Bound<'py, PyAny>>,
    pub window_duration: Option<&'a Bound<'py, PyAny>>,
    pub window_buckets: Option<&'a Bound<'py, PyAny>>,
    pub failure_rate_threshold: Option<&'a Bound<'py, PyAny>>,
    pub slow_call_duration: Option<&'a Bound<'py, PyAny>>,
    pub slow_call_rate_threshold: Option<&'a Bound<'py, PyAny>>,
    pub minimum_calls: Option<&'a Bound<'py, PyAny>>,
    pub open_duration: Option<&'a Bound<'py, PyAny>>,
    pub open_duration_multiplier: Option<&'a Bound<'py, PyAny>>,
    pub max_open_duration: Option<&'a Bound<'py, PyAny>>,
    pub half_open_probes: Option<&'a Bound<'py, PyAny>>,
    pub probe_timeout: Option<&'a Bound<'py, PyAny>>,
}

impl BreakerArgs<'_, '_> {
    fn config(&self, py: Python<'_>) -> PyResult<CircuitBreakerConfig> {
        let mut c = CircuitBreakerConfig::default();
        if let Some(v) = given(self.window_kind) {
            c.window_kind = match util::get_str("window_kind", v)?.as_str() {
                "count" => WindowKind::Count,
                "time" => WindowKind::Time,
                _ => {
                    return Err(util::bad_value(
                        py,
                        Ctx::Config,
                        "window_kind",
                        ConfigErrorKind::OutOfRange,
                        "\"count\" or \"time\"",
                    ))
                }
            };
        }
        let u = |f: &'static str, v: Option<&Bound<'_, PyAny>>, d: u64| -> PyResult<u64> {
            given(v).map_or(Ok(d), |v| util::get_u64(f, v, Ctx::Config))
        };
        let fl = |f: &'static str, v: Option<&Bound<'_, PyAny>>, d: f64| -> PyResult<f64> {
            given(v).map_or(Ok(d), |v| util::get_f64(f, v, Ctx::Config))
        };
        let du = |f: &'static str, v: Option<&Bound<'_, PyAny>>, d: Nanos| -> PyResult<Nanos> {
            given(v).map_or(Ok(d), |v| util::get_duration(f, v, Ctx::Config))
        };
        c.window_size = u("window_size", self.window_size, c.window_size)?;
        c.window_duration = du("window_duration", self.window_duration, c.window_duration)?;
        c.window_buckets = u("window_buckets", self.window_buckets, c.window_buckets)?;
        c.failure_rate_threshold = fl(
            "failure_rate_threshold",
            self.failure_rate_threshold,
            c.failure_rate_threshold,
        )?;
        c.slow_call_duration = du(
            "slow_call_duration",
            self.slow_call_duration,
            c.slow_call_duration,
        )?;
        c.slow_call_rate_threshold = fl(
            "slow_call_rate_threshold",
            self.slow_call_rate_threshold,
            c.slow_call_rate_threshold,
        )?;
        c.minimum_calls = u("minimum_calls", self.minimum_calls, c.minimum_calls)?;
        c.open_duration = du("open_duration", self.open_duration, c.open_duration)?;
        c.open_duration_multiplier = fl(
            "open_duration_multiplier",
            self.open_duration_multiplier,
            c.open_duration_multiplier,
        )?;
        c.max_open_duration = du(
            "max_open_duration",
            self.max_open_duration,
            c.max_open_duration,
        )?;
        c.half_open_probes = u(
            "half_open_probes",
            self.half_open_probes,
            c.half_open_probes,
        )?;
        c.probe_timeout = du("probe_timeout", self.probe_timeout, c.probe_timeout)?;
        Ok(c)
    }
}

fn config_dict<'py>(py: Python<'py>, c: &CircuitBreakerConfig) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("window_kind", c.window_kind.name())?;
    d.set_item("window_size", c.window_size)?;
    d.set_item("window_duration", util::secs(c.window_duration))?;
    d.set_item("window_buckets", c.window_buckets)?;
    d.set_item("failure_rate_threshold", c.failure_rate_threshold)?;
    d.set_item("slow_call_duration", util::secs(c.slow_call_duration))?;
    d.set_item("slow_call_rate_threshold", c.slow_call_rate_threshold)?;
    d.set_item("minimum_calls", c.minimum_calls)?;
    d.set_item("open_duration", util::secs(c.open_duration))?;
    d.set_item("open_duration_multiplier", c.open_duration_multiplier)?;
    d.set_item("max_open_duration", util::secs(c.max_open_duration))?;
    d.set_item("half_open_probes", c.half_open_probes)?;
    d.set_item("probe_timeout", util::secs(c.probe_timeout))?;
    Ok(d)
}

/// Build a boxed value on a helper thread with a large stack (core builds cell arrays by
/// value); `too_big` if the thread could not run.
fn build_on_big_stack<T: Send + 'static>(
    bytes: usize,
    f: impl FnOnce() -> Result<T, guards_core::ConfigError> + Send + 'static,
) -> Result<T, guards_core::ConfigError> {
    std::thread::Builder::new()
        .name("guards-breaker-init".to_owned())
        .stack_size(bytes.saturating_mul(4).saturating_add(4 << 20))
        .spawn(f)
        .ok()
        .and_then(|h| h.join().ok())
        .ok_or_else(too_big)?
}

enum Inner {
    C128(Box<CircuitBreaker<128>>),
    C1024(Box<CircuitBreaker<1024>>),
    C8192(Box<CircuitBreaker<8192>>),
    C65536(Box<CircuitBreaker<65536>>),
}

macro_rules! with_b {
    ($inner:expr, $b:ident => $body:expr) => {
        match $inner {
            Inner::C128($b) => $body,
            Inner::C1024($b) => $body,
            Inner::C8192($b) => $body,
            Inner::C65536($b) => $body,
        }
    };
}

fn too_big() -> guards_core::ConfigError {
    guards_core::ConfigError::new(
        "capacity",
        ConfigErrorKind::OutOfRange,
        "a capacity this process can allocate",
    )
}

impl Inner {
    fn new(c: CircuitBreakerConfig, capacity: u64) -> Result<Self, guards_core::ConfigError> {
        Ok(match capacity {
            128 => Inner::C128(Box::new(CircuitBreaker::new(c)?)),
            1024 => Inner::C1024(Box::new(CircuitBreaker::new(c)?)),
            8192 => Inner::C8192(build_on_big_stack(8192 * 8, move || {
                CircuitBreaker::new(c).map(Box::new)
            })?),
            _ => Inner::C65536(build_on_big_stack(65536 * 8, move || {
                CircuitBreaker::new(c).map(Box::new)
            })?),
        })
    }
}

pub(crate) fn rejected_error(py: Python<'_>, r: CircuitBreakerRejected, now: Nanos) -> PyErr {
    let err = errors::refusal(
        &py.get_type::<BreakerOpen>(),
        r.to_string(),
        Some(r.reason.name()),
        Some(r.retry_after(now)),
    );
    if let Err(e) = err.value(py).setattr("retry_at", r.retry_at.as_u64()) {
        return e;
    }
    err
}

fn status_dict<'py>(
    py: Python<'py>,
    s: guards_core::circuit_breaker::BreakerStatus,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("state", s.state.name())?;
    d.set_item("generation", s.generation)?;
    d.set_item("probes_issued", s.probes_issued)?;
    d.set_item("probes_passed", s.probes_passed)?;
    d.set_item("consecutive_opens", s.consecutive_opens)?;
    d.set_item("half_open_at", s.half_open_at.as_u64())?;
    Ok(d)
}

fn counts_dict<'py>(
    py: Python<'py>,
    w: guards_core::circuit_breaker::WindowCounts,
) -> PyResult<Bound<'py, PyDict>> {
    util::stats_dict(
        py,
        &[
            ("calls", w.calls),
            ("failures", w.failures),
            ("slow", w.slow),
        ],
    )
}

fn stats_of<'py>(
    py: Python<'py>,
    s: guards_core::circuit_breaker::CircuitBreakerStats,
) -> PyResult<Bound<'py, PyDict>> {
    util::stats_dict(
        py,
        &[
            ("successes", s.successes),
            ("failures", s.failures),
            ("slow_calls", s.slow_calls),
            ("probes_admitted", s.probes_admitted),
            ("probe_successes", s.probe_successes),
            ("probe_failures", s.probe_failures),
            ("ignored", s.ignored),
            ("discarded", s.discarded),
            ("rejected_open", s.rejected_open),
            ("rejected_half_open", s.rejected_half_open),
            ("closed_to_open", s.closed_to_open),
            ("open_to_half_open", s.open_to_half_open),
            ("half_open_to_closed", s.half_open_to_closed),
            ("half_open_to_open", s.half_open_to_open),
        ],
    )
}

/// A circuit breaker.
#[pyclass(module = "guards", name = "CircuitBreaker", frozen)]
pub struct PyCircuitBreaker {
    b: Inner,
    capacity: u64,
}

impl std::fmt::Debug for PyCircuitBreaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl PyCircuitBreaker {
    /// Core's `try_acquire` at `now`.
    pub(crate) fn try_acquire_at(
        &self,
        now: Nanos,
    ) -> Result<CircuitBreakerPermit, CircuitBreakerRejected> {
        with_b!(&self.b, b => b.try_acquire(now))
    }

    /// Report `outcome` for `p`. A failure (or any outcome while the window fills) scans
    /// the whole count window: thousands of cells for the large capacities, worth
    /// releasing the GIL for.
    pub(crate) fn report(
        &self,
        py: Python<'_>,
        p: CircuitBreakerPermit,
        outcome: Outcome,
    ) -> Option<OutcomeEffect> {
        self.scanning(py, |inner| with_b!(inner, b => report_to(b, p, outcome)))
    }

    /// `f` on core's breaker, with the GIL released for the large capacities (8192 and
    /// 65536), whose count window is thousands of cells to scan.
    fn scanning<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&Inner) -> R + Send) -> R {
        let inner = &self.b;
        if self.capacity >= 8192 {
            py.detach(|| f(inner))
        } else {
            f(inner)
        }
    }
}

#[pymethods]
impl PyCircuitBreaker {
    /// `CircuitBreaker(window_kind="count", window_size=100, window_duration=10.0,
    /// window_buckets=10, failure_rate_threshold=0.5, slow_call_duration=60.0,
    /// slow_call_rate_threshold=1.0, minimum_calls=0, open_duration=5.0,
    /// open_duration_multiplier=1.0, max_open_duration=300.0, half_open_probes=3,
    /// probe_timeout=1.0, capacity=128)`; durations in seconds; `minimum_calls=0` means the
    /// window size (count) or 1 (time).
    #[new]
    #[pyo3(
        signature = (
            *,
            window_kind = None,
            window_size = None,
            window_duration = None,
            window_buckets = None,
            failure_rate_threshold = None,
            slow_call_duration = None,
            slow_call_rate_threshold = None,
            minimum_calls = None,
            open_duration = None,
            open_duration_multiplier = None,
            max_open_duration = None,
            half_open_probes = None,
            probe_timeout = None,
            capacity = None
        ),
        text_signature = "(*, window_kind='count', window_size=100, window_duration=10.0, window_buckets=10, failure_rate_threshold=0.5, slow_call_duration=60.0, slow_call_rate_threshold=1.0, minimum_calls=0, open_duration=5.0, open_duration_multiplier=1.0, max_open_duration=300.0, half_open_probes=3, probe_timeout=1.0, capacity=128)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        window_kind: Option<&Bound<'_, PyAny>>,
        window_size: Option<&Bound<'_, PyAny>>,
        window_duration: Option<&Bound<'_, PyAny>>,
        window_buckets: Option<&Bound<'_, PyAny>>,
        failure_rate_threshold: Option<&Bound<'_, PyAny>>,
        slow_call_duration: Option<&Bound<'_, PyAny>>,
        slow_call_rate_threshold: Option<&Bound<'_, PyAny>>,
        minimum_calls: Option<&Bound<'_, PyAny>>,
        open_duration: Option<&Bound<'_, PyAny>>,
        open_duration_multiplier: Option<&Bound<'_, PyAny>>,
        max_open_duration: Option<&Bound<'_, PyAny>>,
        half_open_probes: Option<&Bound<'_, PyAny>>,
        probe_timeout: Option<&Bound<'_, PyAny>>,
        capacity: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let c = BreakerArgs {
            window_kind,
            window_size,
            window_duration,
            window_buckets,
            failure_rate_threshold,
            slow_call_duration,
            slow_call_rate_threshold,
            minimum_calls,
            open_duration,
            open_duration_multiplier,
            max_open_duration,
            half_open_probes,
            probe_timeout,
        }
        .config(py)?;
        let cap = match given(capacity) {
            Some(v) => util::get_u64("capacity", v, Ctx::Config)?,
            None => 128,
        };
        if !matches!(cap, 128 | 1024 | 8192 | 65536) {
            return Err(util::bad_value(
                py,
                Ctx::Config,
                "capacity",
                ConfigErrorKind::OutOfRange,
                "one of 128, 1024, 8192, 65536",
            ));
        }
        let b = Inner::new(c, cap).map_err(|e| errors::config_error(py, e))?;
        Ok(PyCircuitBreaker { b, capacity: cap })
    }

    /// The configuration (durations in seconds) and `capacity`.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = config_dict(py, with_b!(&self.b, b => b.config()))?;
        d.set_item("capacity", self.capacity)?;
        Ok(d)
    }

    /// Ask to make a call at `now`: a permit, or `BreakerOpen`.
    #[pyo3(signature = (now = None))]
    fn acquire(slf: &Bound<'_, Self>, now: Option<&Bound<'_, PyAny>>) -> PyResult<PyBreakerPermit> {
        let py = slf.py();
        let now = util::get_now(py, now)?;
        match slf.get().try_acquire_at(now) {
            Ok(p) => Ok(PyBreakerPermit::new(Owner::One(slf.clone().unbind()), p)),
            Err(r) => Err(rejected_error(py, r, now)),
        }
    }

    /// `fn(*args, **kwargs)` under the breaker: take a permit (or raise `BreakerOpen`),
    /// call, and report how the call ended as `guards.guarded` does: returned -> success;
    /// an `Exception` -> failure, except another guard's refusal (a `GuardError` other than
    /// `DeadlineExceeded` and an inner retry's give-up after attempts), which is ignored; any other
    /// `BaseException` (cancellation, interrupts) -> ignored, or a failure for a half-open
    /// probe. Returns what `fn` returned, or raises what it raised. No permit object.
    #[pyo3(signature = (r#fn, /, *args, **kwargs))]
    fn call<'py>(
        slf: &Bound<'py, Self>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded::run(
            slf.py(),
            GuardRef::Breaker(slf.get()),
            r#fn,
            args,
            kwargs,
            None,
            None,
        )
    }

    /// `await breaker.acall(fn, *args, **kwargs)`: `fn(*args, **kwargs)` awaited under the
    /// breaker, judged as `call` judges it; the permit is taken when the awaitable is first
    /// awaited and reported when the call ends (a cancelled call: ignored, or a failure for
    /// a half-open probe).
    #[pyo3(signature = (r#fn, /, *args, **kwargs))]
    fn acall<'py>(
        slf: &Bound<'py, Self>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<PyGuardedCoroutine> {
        guarded::acall(
            slf.py(),
            Guard::Breaker(slf.clone().unbind()),
            r#fn,
            args,
            kwargs,
        )
    }

    /// Like `acquire`, but `None` instead of raising.
    #[pyo3(signature = (now = None))]
    fn try_acquire(
        slf: &Bound<'_, Self>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyBreakerPermit>> {
        let now = util::get_now(slf.py(), now)?;
        Ok(slf
            .get()
            .try_acquire_at(now)
            .ok()
            .map(|p| PyBreakerPermit::new(Owner::One(slf.clone().unbind()), p)))
    }

    /// `"closed"`, `"open"` or `"half_open"` at `now` (an open breaker whose open time
    /// has passed is `"half_open"`).
    #[pyo3(signature = (now = None))]
    fn state(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<&'static str> {
        let now = util::get_now(py, now)?;
        Ok(with_b!(&self.b, b => b.state(now)).name())
    }

    /// `{"state", "generation", "probes_issued", "probes_passed", "consecutive_opens",
    /// "half_open_at"}` as stored (`half_open_at` is an instant, 0 unless open).
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        status_dict(py, with_b!(&self.b, b => b.status()))
    }

    /// `{"calls", "failures", "slow"}` in the window at `now` (all 0 unless closed).
    #[pyo3(signature = (now = None))]
    fn window_counts<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let now = util::get_now(py, now)?;
        let counts = self.scanning(py, |inner| with_b!(inner, b => b.window_counts(now)));
        counts_dict(py, counts)
    }

    /// Counters: outcomes, probes, refusals and transitions.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_of(py, with_b!(&self.b, b => b.stats()))
    }

    fn __repr__(&self) -> String {
        format!(
            "CircuitBreaker(state='{}')",
            with_b!(&self.b, b => b.status()).state.name()
        )
    }
}

enum Keyed {
    K4(Box<KeyedBreakers<4, 128>>),
    K16(Box<KeyedBreakers<16, 128>>),
    K64(Box<KeyedBreakers<64, 128>>),
    K256(Box<KeyedBreakers<256, 128>>),
}

macro_rules! with_k {
    ($inner:expr, $k:ident => $body:expr) => {
        match $inner {
            Keyed::K4($k) => $body,
            Keyed::K16($k) => $body,
            Keyed::K64($k) => $body,
            Keyed::K256($k) => $body,
        }
    };
}

/// A key argument: an int (0..2**64), or a `str`/`bytes` hashed with `key_of`.
pub(crate) fn key_arg(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.is_instance_of::<PyInt>() {
        return util::get_u64("key", v, Ctx::Arg);
    }
    Ok(core_key_of(&util::str_or_bytes("key", v)?))
}

/// One circuit breaker per key (a downstream host, a tenant), in a fixed set of `slots`.
#[pyclass(module = "guards", name = "KeyedBreakers", frozen)]
pub struct PyKeyedBreakers {
    k: Keyed,
    slots: u64,
}

impl std::fmt::Debug for PyKeyedBreakers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedBreakers")
            .field("slots", &self.slots)
            .finish()
    }
}

impl PyKeyedBreakers {
    /// Core's `try_acquire` at `now` on `key`'s breaker (inserted on first use);
    /// `RuntimeError` when the set is full.
    pub(crate) fn try_acquire_at(
        &self,
        key: u64,
        now: Nanos,
    ) -> PyResult<Result<CircuitBreakerPermit, CircuitBreakerRejected>> {
        with_k!(&self.k, k => k.get_or_insert(key).map(|b| b.try_acquire(now)))
            .map_err(|_| self.full_error(key))
    }

    /// Report `outcome` for `p` to `key`'s breaker; `None` when the breaker is gone (cannot
    /// happen: keys are never removed).
    pub(crate) fn report(
        &self,
        key: u64,
        p: CircuitBreakerPermit,
        outcome: Outcome,
    ) -> Option<OutcomeEffect> {
        with_k!(&self.k, k => k.get(key).and_then(|b| report_to(b, p, outcome)))
    }

    fn full_error(&self, key: u64) -> PyErr {
        PyRuntimeError::new_err(format!(
            "keyed breaker set is full ({} keys): no breaker for key {key:#018x}",
            self.slots
        ))
    }
}

#[pymethods]
impl PyKeyedBreakers {
    /// `KeyedBreakers(slots=16, **breaker settings)`: up to `slots` keys (4, 16, 64 or
    /// 256), each with its own breaker using the same settings (capacity 128).
    #[new]
    #[pyo3(
        signature = (
            *,
            slots = None,
            window_kind = None,
            window_size = None,
            window_duration = None,
            window_buckets = None,
            failure_rate_threshold = None,
            slow_call_duration = None,
            slow_call_rate_threshold = None,
            minimum_calls = None,
            open_duration = None,
            open_duration_multiplier = None,
            max_open_duration = None,
            half_open_probes = None,
            probe_timeout = None
        ),
        text_signature = "(*, slots=16, window_kind='count', window_size=100, window_duration=10.0, window_buckets=10, failure_rate_threshold=0.5, slow_call_duration=60.0, slow_call_rate_threshold=1.0, minimum_calls=0, open_duration=5.0, open_duration_multiplier=1.0, max_open_duration=300.0, half_open_probes=3, probe_timeout=1.0)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        slots: Option<&Bound<'_, PyAny>>,
        window_kind: Option<&Bound<'_, PyAny>>,
        window_size: Option<&Bound<'_, PyAny>>,
        window_duration: Option<&Bound<'_, PyAny>>,
        window_buckets: Option<&Bound<'_, PyAny>>,
        failure_rate_threshold: Option<&Bound<'_, PyAny>>,
        slow_call_duration: Option<&Bound<'_, PyAny>>,
        slow_call_rate_threshold: Option<&Bound<'_, PyAny>>,
        minimum_calls: Option<&Bound<'_, PyAny>>,
        open_duration: Option<&Bound<'_, PyAny>>,
        open_duration_multiplier: Option<&Bound<'_, PyAny>>,
        max_open_duration: Option<&Bound<'_, PyAny>>,
        half_open_probes: Option<&Bound<'_, PyAny>>,
        probe_timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let c = BreakerArgs {
            window_kind,
            window_size,
            window_duration,
            window_buckets,
            failure_rate_threshold,
            slow_call_duration,
            slow_call_rate_threshold,
            minimum_calls,
            open_duration,
            open_duration_multiplier,
            max_open_duration,
            half_open_probes,
            probe_timeout,
        }
        .config(py)?;
        let n = match given(slots) {
            Some(v) => util::get_u64("slots", v, Ctx::Config)?,
            None => 16,
        };
        let cfg_err = |e| errors::config_error(py, e);
        let k = match n {
            4 => Keyed::K4(Box::new(KeyedBreakers::new(c).map_err(cfg_err)?)),
            16 => Keyed::K16(Box::new(KeyedBreakers::new(c).map_err(cfg_err)?)),
            64 => Keyed::K64(
                build_on_big_stack(64 * 2048, move || KeyedBreakers::new(c).map(Box::new))
                    .map_err(cfg_err)?,
            ),
            256 => Keyed::K256(
                build_on_big_stack(256 * 2048, move || KeyedBreakers::new(c).map(Box::new))
                    .map_err(cfg_err)?,
            ),
            _ => {
                return Err(util::bad_value(
                    py,
                    Ctx::Config,
                    "slots",
                    ConfigErrorKind::OutOfRange,
                    "one of 4, 16, 64, 256",
                ))
            }
        };
        Ok(PyKeyedBreakers { k, slots: n })
    }

    /// The 64-bit key of `data` (FNV-1a of a `str`'s UTF-8 bytes, or of `bytes`): what a
    /// `str`/`bytes` key is turned into.
    #[staticmethod]
    fn key_of(data: &Bound<'_, PyAny>) -> PyResult<u64> {
        Ok(core_key_of(&util::str_or_bytes("data", data)?))
    }

    /// The settings every breaker uses (durations in seconds) and `slots`.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = config_dict(py, with_k!(&self.k, k => k.config()))?;
        d.set_item("slots", self.slots)?;
        Ok(d)
    }

    /// Make sure `key` has a breaker: `True` if it has one (now), `False` if the set is
    /// full.
    fn get_or_insert(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = key_arg(key)?;
        Ok(with_k!(&self.k, k => k.get_or_insert(key).is_ok()))
    }

    /// Ask to make a call to `key` at `now` (inserting its breaker on first use): a
    /// permit, `BreakerOpen`, or `RuntimeError` when the set is full.
    #[pyo3(signature = (key, now = None))]
    fn acquire(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyBreakerPermit> {
        let py = slf.py();
        let key = key_arg(key)?;
        let now = util::get_now(py, now)?;
        match slf.get().try_acquire_at(key, now)? {
            Ok(p) => Ok(PyBreakerPermit::new(
                Owner::Keyed(slf.clone().unbind(), key),
                p,
            )),
            Err(r) => Err(rejected_error(py, r, now)),
        }
    }

    /// `fn(*args, **kwargs)` under `key`'s breaker (inserted on first use), reported as
    /// `CircuitBreaker.call` does; `RuntimeError` when the set is full.
    #[pyo3(signature = (key, r#fn, /, *args, **kwargs))]
    fn call<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = key_arg(key)?;
        guarded::run(
            slf.py(),
            GuardRef::Keyed(slf.get(), key),
            r#fn,
            args,
            kwargs,
            None,
            None,
        )
    }

    /// `await breakers.acall(key, fn, *args, **kwargs)`: `fn(*args, **kwargs)` awaited
    /// under `key`'s breaker, as `CircuitBreaker.acall` does.
    #[pyo3(signature = (key, r#fn, /, *args, **kwargs))]
    fn acall<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<PyGuardedCoroutine> {
        let key = key_arg(key)?;
        guarded::acall(
            slf.py(),
            Guard::Keyed(slf.clone().unbind(), key),
            r#fn,
            args,
            kwargs,
        )
    }

    /// Like `acquire`, but `None` instead of raising `BreakerOpen` (a full set still
    /// raises `RuntimeError`).
    #[pyo3(signature = (key, now = None))]
    fn try_acquire(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyBreakerPermit>> {
        let key = key_arg(key)?;
        let now = util::get_now(slf.py(), now)?;
        Ok(slf
            .get()
            .try_acquire_at(key, now)?
            .ok()
            .map(|p| PyBreakerPermit::new(Owner::Keyed(slf.clone().unbind(), key), p)))
    }

    /// The state of `key`'s breaker at `now` (`"closed"` for a key never seen).
    #[pyo3(signature = (key, now = None))]
    fn state(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<&'static str> {
        let key = key_arg(key)?;
        let now = util::get_now(py, now)?;
        Ok(with_k!(&self.k, k => k.get(key).map(|b| b.state(now))).map_or("closed", |s| s.name()))
    }

    /// The status of `key`'s breaker, or `None` for a key never seen.
    fn status<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let key = key_arg(key)?;
        with_k!(&self.k, k => k.get(key).map(|b| b.status()))
            .map(|s| status_dict(py, s))
            .transpose()
    }

    /// The window counts of `key`'s breaker at `now`, or `None` for a key never seen.
    #[pyo3(signature = (key, now = None))]
    fn window_counts<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let key = key_arg(key)?;
        let now = util::get_now(py, now)?;
        with_k!(&self.k, k => k.get(key).map(|b| b.window_counts(now)))
            .map(|w| counts_dict(py, w))
            .transpose()
    }

    /// Without `key`: `{"entries", "full"}` (keys inserted, inserts refused). With `key`:
    /// that breaker's counters, or `None` for a key never seen.
    #[pyo3(signature = (key = None))]
    fn stats<'py>(
        &self,
        py: Python<'py>,
        key: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        match given(key) {
            None => {
                let s = with_k!(&self.k, k => k.stats());
                Ok(Some(util::stats_dict(
                    py,
                    &[("entries", s.entries), ("full", s.full)],
                )?))
            }
            Some(key) => {
                let key = key_arg(key)?;
                with_k!(&self.k, k => k.get(key).map(|b| b.stats()))
                    .map(|s| stats_of(py, s))
                    .transpose()
            }
        }
    }

    fn __len__(&self) -> usize {
        with_k!(&self.k, k => k.len())
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = key_arg(key)?;
        Ok(with_k!(&self.k, k => k.get(key).is_some()))
    }

    fn __repr__(&self) -> String {
        format!(
            "KeyedBreakers(slots={}, len={})",
            self.slots,
            self.__len__()
        )
    }
}

/// Which breaker a permit reports to.
enum Owner {
    One(Py<PyCircuitBreaker>),
    Keyed(Py<PyKeyedBreakers>, u64),
}

impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::One(_) => f.write_str("One"),
            Owner::Keyed(_, k) => write!(f, "Keyed({k:#x})"),
        }
    }
}

/// An outcome to report, with the instant it ended.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Outcome {
    Success(Nanos),
    Failure(Nanos),
    Ignore,
}

fn report_to<const CAP: usize>(
    b: &CircuitBreaker<CAP>,
    p: CircuitBreakerPermit,
    o: Outcome,
) -> Option<OutcomeEffect> {
    match o {
        Outcome::Success(now) => Some(b.on_success(p, now)),
        Outcome::Failure(now) => Some(b.on_failure(p, now)),
        Outcome::Ignore => {
            b.on_ignore(p);
            None
        }
    }
}

/// What reporting an outcome did, as a (cached) Python string.
fn effect_name(py: Python<'_>, e: OutcomeEffect) -> Bound<'_, PyString> {
    match e {
        OutcomeEffect::Counted => intern!(py, "counted").clone(),
        OutcomeEffect::Opened => intern!(py, "opened").clone(),
        OutcomeEffect::ProbePassed => intern!(py, "probe_passed").clone(),
        OutcomeEffect::Closed => intern!(py, "closed").clone(),
        OutcomeEffect::Reopened => intern!(py, "reopened").clone(),
        OutcomeEffect::Discarded => intern!(py, "discarded").clone(),
        OutcomeEffect::Ignored => intern!(py, "ignored").clone(),
    }
}

impl Owner {
    /// Report `outcome` for `p` (see `PyCircuitBreaker::report`).
    fn report(
        &self,
        py: Python<'_>,
        p: CircuitBreakerPermit,
        outcome: Outcome,
    ) -> Option<OutcomeEffect> {
        match self {
            Owner::One(b) => b.get().report(py, p, outcome),
            Owner::Keyed(set, key) => set.get().report(*key, p, outcome),
        }
    }
}

impl permit::Owner for Owner {
    type Permit = CircuitBreakerPermit;

    /// Report nothing for `p` (no GIL needed: nothing is scanned).
    fn give_back(&self, p: CircuitBreakerPermit) {
        match self {
            Owner::One(b) => with_b!(&b.get().b, b => b.on_ignore(p)),
            Owner::Keyed(set, key) => {
                with_k!(&set.get().k, k => if let Some(b) = k.get(*key) { b.on_ignore(p) })
            }
        }
    }
}

/// A breaker permit: a call, or a probe while half-open. Report one outcome.
#[pyclass(module = "guards", name = "BreakerPermit", frozen)]
#[derive(Debug)]
pub struct PyBreakerPermit {
    permit: Granted<Owner>,
    kind: PermitKind,
    generation: u32,
    acquired_at: u64,
    probe_timeout: Option<Nanos>,
}

impl PyBreakerPermit {
    fn new(owner: Owner, p: CircuitBreakerPermit) -> Self {
        PyBreakerPermit {
            kind: p.kind(),
            generation: p.generation(),
            acquired_at: p.acquired_at().as_u64(),
            probe_timeout: p.probe_timeout(),
            permit: Granted::new(owner, p),
        }
    }

    fn finish<'py>(&self, py: Python<'py>, outcome: Outcome) -> Option<Bound<'py, PyString>> {
        let p = self.permit.take()?;
        self.permit
            .owner()
            .report(py, p, outcome)
            .map(|e| effect_name(py, e))
    }
}

#[pymethods]
impl PyBreakerPermit {
    /// The call succeeded, ending at `now` (a slow success still counts as slow). Returns
    /// the effect, or `None` if an outcome was already reported.
    #[pyo3(signature = (now = None))]
    fn on_success<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyString>>> {
        let now = util::get_now(py, now)?;
        Ok(self.finish(py, Outcome::Success(now)))
    }

    /// The call failed at `now`. Returns the effect, or `None` if already reported.
    #[pyo3(signature = (now = None))]
    fn on_failure<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyString>>> {
        let now = util::get_now(py, now)?;
        Ok(self.finish(py, Outcome::Failure(now)))
    }

    /// Record nothing (the call's result says nothing about the callee); a probe gives its
    /// slot back. `False` if already reported.
    fn on_ignore(&self) -> bool {
        self.permit.give_back()
    }

    /// Whether an outcome has been reported.
    #[getter]
    fn done(&self) -> bool {
        self.permit.done()
    }

    /// `"call"` or `"probe"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind.name()
    }

    /// Whether this is a half-open probe.
    #[getter]
    fn is_probe(&self) -> bool {
        matches!(self.kind, PermitKind::Probe)
    }

    /// The breaker generation it belongs to (outcomes of ended generations are discarded).
    #[getter]
    fn generation(&self) -> u32 {
        self.generation
    }

    /// When it was granted (integer nanoseconds).
    #[getter]
    fn acquired_at(&self) -> u64 {
        self.acquired_at
    }

    /// For a probe: how long it may take, in seconds; else `None`.
    #[getter]
    fn probe_timeout(&self) -> Option<f64> {
        self.probe_timeout.map(util::secs)
    }

    /// `probe_timeout` in integer nanoseconds.
    #[getter]
    fn probe_timeout_ns(&self) -> Option<u64> {
        self.probe_timeout.map(Nanos::as_u64)
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let Some(t) = given(exc_type) else {
            self.on_success(py, None)?;
            return Ok(false);
        };
        let failed = match t.cast::<PyType>() {
            Ok(t) => {
                t.is_subclass(&py.get_type::<PyException>())?
                    && !t.is_subclass(&py.get_type::<GuardError>())?
            }
            Err(_) => false,
        };
        if failed {
            self.on_failure(py, None)?;
        } else {
            self.on_ignore();
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "BreakerPermit(kind='{}', generation={}, done={})",
            self.kind.name(),
            self.generation,
            util::py_bool(self.done())
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCircuitBreaker>()?;
    m.add_class::<PyKeyedBreakers>()?;
    m.add_class::<PyBreakerPermit>()?;
    Ok(())
}
