//! `CircuitBreaker` (count or time window, failure and slow-call rates, half-open probes,
//! growing open durations), `KeyedBreakers` (one breaker per key) and `BreakerPermit`.
//!
//! The breakers are ffi's handles (`AnyBreaker`, `AnyKeyedBreakers`: core's breaker built in
//! place behind a runtime capacity), configured through ffi's schema; outcomes go to core's
//! `report` with an `Outcome` (the call contract decides what each means to the breaker).
//!
//! `acquire()` returns a `BreakerPermit` (a call, or a probe while half-open) or raises
//! `BreakerOpen` with `reason` (`"open"` or `"half_open_full"`), `retry_after` (seconds from
//! `now`), `retry_after_ns` and `retry_at` (the instant). A permit reports one outcome:
//! `report(outcome)` (or the primitives `on_success`, `on_failure`, `on_ignore`); a second
//! is a no-op returning `None`. `with permit:` classifies the exception leaving the block
//! (`guards.classify_exception`) and reports it. A permit collected without an outcome is
//! handed back unjudged (a probe gives its slot back).
//!
//! State changes seen by these methods (a probe, a refusal, an outcome that moved the
//! breaker) are emitted as `state_change` events; refusals by `acquire` as `refusal`.

use guards::handle::{AnyBreaker, AnyKeyedBreakers};
use guards::names::{
    BreakerStatus, CircuitBreakerPermit as BreakerPermit,
    CircuitBreakerRejected as BreakerRejected, OutcomeEffect,
};
use guards::schema::CIRCUIT_BREAKER;
use guards_core::circuit_breaker::{
    key_of as core_key_of, CircuitBreaker, CircuitBreakerRejectReason, PermitKind,
};
use guards_core::time::OnceClock;
use guards_core::{Clock, Nanos, Outcome};
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyString, PyTuple};

use crate::clock;
use crate::config::{self, Args};
use crate::errors::{self, BreakerOpen};
use crate::events::{self, Announced, AnnouncedByKey, Op};
use crate::guarded::{self, Guard};
use crate::guarded_coro::PyGuardedCoroutine;
use crate::outcome;
use crate::permit::{self, Granted};
use crate::util::{self, given, Ctx};

/// `BreakerOpen` for a refusal at `now`: the message says for how long, relative to now.
pub(crate) fn rejected_error(py: Python<'_>, r: BreakerRejected, now: Nanos) -> PyErr {
    let wait = r.retry_after(now);
    let message = match r.reason {
        CircuitBreakerRejectReason::Open => {
            format!(
                "circuit breaker open: calls are refused for another {}",
                errors::human(wait)
            )
        }
        CircuitBreakerRejectReason::HalfOpenFull => format!(
            "circuit breaker half-open: every probe is out; try again in {}",
            errors::human(wait)
        ),
    };
    let err = errors::refusal(
        &py.get_type::<BreakerOpen>(),
        message,
        Some(r.reason.name()),
        Some(wait),
    );
    if let Err(e) = err
        .value(py)
        .setattr(intern!(py, "retry_at"), r.retry_at.as_u64())
    {
        return e;
    }
    err
}

fn status_dict(py: Python<'_>, s: BreakerStatus) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("state", s.state.name())?;
    d.set_item("generation", s.generation)?;
    d.set_item("probes_issued", s.probes_issued)?;
    d.set_item("probes_passed", s.probes_passed)?;
    d.set_item("consecutive_opens", s.consecutive_opens)?;
    d.set_item("half_open_at", s.half_open_at.as_u64())?;
    Ok(d)
}

fn counts_dict(
    py: Python<'_>,
    w: guards_core::circuit_breaker::WindowCounts,
) -> PyResult<Bound<'_, PyDict>> {
    util::stats_dict(
        py,
        &[
            ("calls", w.calls),
            ("failures", w.failures),
            ("slow", w.slow),
        ],
    )
}

fn stats_of(
    py: Python<'_>,
    s: guards_core::circuit_breaker::CircuitBreakerStats,
) -> PyResult<Bound<'_, PyDict>> {
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

/// Whether an outcome's effect may have moved the breaker (then its state is looked at for
/// events).
#[inline]
fn moved(e: OutcomeEffect) -> bool {
    matches!(
        e,
        OutcomeEffect::Opened | OutcomeEffect::Reopened | OutcomeEffect::Closed
    )
}

/// The `operation=` argument of `acquire`: a str, or `None`.
fn operation_arg<'py>(v: Option<&Bound<'py, PyAny>>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match given(v) {
        None => Ok(None),
        Some(v) if v.is_instance_of::<PyString>() => Ok(Some(v.clone())),
        Some(v) => Err(util::type_error("operation", "a str or None", v)),
    }
}

/// A circuit breaker.
#[pyclass(module = "guards", name = "CircuitBreaker", frozen)]
#[derive(Debug)]
pub struct PyCircuitBreaker {
    pub(crate) b: AnyBreaker,
    pub(crate) announced: Announced,
}

impl PyCircuitBreaker {
    /// Take a permit at `now` (a refusal raises `BreakerOpen`, emitted as a `refusal`;
    /// a probe and a refusal look for a state change).
    pub(crate) fn take<'py, C: Clock>(
        slf: &Bound<'py, Self>,
        now: &OnceClock<C>,
        op: Op<'_, 'py>,
    ) -> PyResult<BreakerPermit> {
        let me = slf.get();
        match me.b.try_acquire(|| now.get()) {
            Ok(p) => {
                if p.is_probe() {
                    me.announce(slf, op);
                }
                Ok(p)
            }
            Err(r) => {
                let py = slf.py();
                me.announce(slf, op);
                let err = rejected_error(py, r, now.get());
                events::refusal(py, slf.as_any(), op, &err);
                Err(err)
            }
        }
    }

    /// Report `outcome` for `p` at `now`, emitting a state change it caused.
    #[inline]
    pub(crate) fn settle<'py>(
        slf: &Bound<'py, Self>,
        p: BreakerPermit,
        outcome: Outcome,
        now: impl Clock + Send,
        op: Op<'_, 'py>,
    ) -> OutcomeEffect {
        let me = slf.get();
        let effect = if me.b.capacity() >= 8192 {
            // A large count window is thousands of cells to scan: without the GIL.
            let b = &me.b;
            slf.py().detach(|| b.report(p, outcome, now))
        } else {
            me.b.report(p, outcome, now)
        };
        if moved(effect) {
            me.announce(slf, op);
        }
        effect
    }

    fn announce<'py>(&self, slf: &Bound<'py, Self>, op: Op<'_, 'py>) {
        self.announced
            .observe(slf.py(), self.b.status(), slf.as_any(), op);
    }

    fn permit(
        slf: &Bound<'_, Self>,
        p: BreakerPermit,
        operation: Option<Bound<'_, PyAny>>,
    ) -> PyBreakerPermit {
        PyBreakerPermit::new(
            BreakerOwner::One(slf.clone().unbind()),
            p,
            operation.map(Bound::unbind),
        )
    }
}

#[pymethods]
impl PyCircuitBreaker {
    /// `CircuitBreaker(**settings)`: the settings of core's `CircuitBreakerConfig` (durations
    /// in seconds, a `timedelta` or `guards.Nanos`), and `capacity`, the window cells (0:
    /// the fewest that hold the window; up to 65536).
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, window_kind='count', window_size=100, window_duration=10.0, window_buckets=10, failure_rate_threshold=0.5, slow_call_duration=60.0, slow_call_rate_threshold=1.0, minimum_calls=0, open_duration=5.0, open_duration_multiplier=1.0, max_open_duration=300.0, half_open_probes=3, probe_timeout=1.0, capacity=0)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = args.py();
        let mut a = Args::collect("CircuitBreaker", &[], args, kwargs)?;
        let capacity = match a.take("capacity") {
            None => 0,
            Some(v) => util::get_u64("capacity", &v, Ctx::Config)?,
        };
        let c = a.build(&CIRCUIT_BREAKER)?;
        let b = AnyBreaker::new(c, capacity).map_err(|f| errors::failure(py, f))?;
        Ok(PyCircuitBreaker {
            b,
            announced: Announced::default(),
        })
    }

    /// The settings (durations in seconds; `None` for "never") and `capacity`.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = config::to_dict(py, &CIRCUIT_BREAKER, &self.b.config())?;
        d.set_item("capacity", self.b.capacity())?;
        Ok(d)
    }

    /// The window cells the breaker was built with.
    #[getter]
    fn capacity(&self) -> usize {
        self.b.capacity()
    }

    /// Ask to make a call at `now`: a permit, or `BreakerOpen`. `operation` names the call
    /// in the events it causes.
    #[pyo3(signature = (now = None, *, operation = None))]
    fn acquire(
        slf: &Bound<'_, Self>,
        now: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyBreakerPermit> {
        let now = OnceClock::new(util::now_arg(now)?);
        let op = operation_arg(operation)?;
        let p = Self::take(slf, &now, Op::given(op.as_ref()))?;
        Ok(Self::permit(slf, p, op))
    }

    /// Like `acquire`, but `None` instead of raising.
    #[pyo3(signature = (now = None, *, operation = None))]
    fn try_acquire(
        slf: &Bound<'_, Self>,
        now: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyBreakerPermit>> {
        let now = util::now_arg(now)?;
        let op = operation_arg(operation)?;
        let me = slf.get();
        match me.b.try_acquire(now) {
            Ok(p) => {
                if p.is_probe() {
                    me.announce(slf, Op::given(op.as_ref()));
                }
                Ok(Some(Self::permit(slf, p, op)))
            }
            Err(_) => {
                me.announce(slf, Op::given(op.as_ref()));
                Ok(None)
            }
        }
    }

    /// `fn(*args, **kwargs)` under the breaker: take a permit (or raise `BreakerOpen`),
    /// call, and report how the call ended (its exception classified by
    /// `guards.classify_exception`). Returns what `fn` returned, or raises what it raised.
    #[pyo3(signature = (r#fn, /, *args, **kwargs))]
    fn call<'py>(
        slf: &Bound<'py, Self>,
        r#fn: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded::run(&Guard::Breaker(slf.clone().unbind()), r#fn, args, kwargs)
    }

    /// `await breaker.acall(fn, *args, **kwargs)`: `fn(*args, **kwargs)` awaited under the
    /// breaker, judged as `call` judges it; the permit is taken when the awaitable is first
    /// awaited and reported when the call ends (a cancelled call: `cancelled`, which a
    /// half-open probe counts as a failure).
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

    /// `"closed"`, `"open"` or `"half_open"` now (an open breaker whose open time has
    /// passed is `"half_open"`: the next call will be a probe).
    #[getter]
    fn state(&self) -> &'static str {
        self.b.state(clock::now()).name()
    }

    /// The state at the instant `now` (integer nanoseconds).
    fn state_at(&self, now: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        Ok(self.b.state(util::get_instant("now", now)?).name())
    }

    /// `{"state", "generation", "probes_issued", "probes_passed", "consecutive_opens",
    /// "half_open_at"}` as stored (`half_open_at` is an instant, 0 unless open).
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        status_dict(py, self.b.status())
    }

    /// `{"calls", "failures", "slow"}` in the window at `now` (all 0 unless closed).
    #[pyo3(signature = (now = None))]
    fn window_counts<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let now = util::get_now(now)?;
        let b = &self.b;
        let counts = if b.capacity() >= 8192 {
            py.detach(|| b.window_counts(now))
        } else {
            b.window_counts(now)
        };
        counts_dict(py, counts)
    }

    /// Counters: outcomes, probes, refusals and transitions.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_of(py, self.b.stats())
    }

    fn __repr__(&self) -> String {
        format!(
            "CircuitBreaker(state='{}', window_size={})",
            self.b.state(clock::now()).name(),
            self.b.config().window_size
        )
    }
}

/// A key argument: an int (0..2**64), or a `str`/`bytes` hashed with `key_of`.
pub(crate) fn key_arg(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.is_instance_of::<PyInt>() {
        return util::get_u64("key", v, Ctx::Arg);
    }
    Ok(core_key_of(&util::str_or_bytes("key", v)?))
}

/// The name a key gives its events: the `str` itself, `bytes` decoded, an int in decimal.
pub(crate) fn key_operation<'py>(v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if v.is_instance_of::<PyString>() {
        return Ok(v.clone());
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        let text = String::from_utf8_lossy(b.as_bytes()).into_owned();
        return Ok(PyString::new(v.py(), &text).into_any());
    }
    Ok(v.str()?.into_any())
}

/// One circuit breaker per key (a downstream host, a tenant), in a fixed set of slots.
#[pyclass(module = "guards", name = "KeyedBreakers", frozen)]
#[derive(Debug)]
pub struct PyKeyedBreakers {
    k: AnyKeyedBreakers,
    announced: AnnouncedByKey,
}

impl PyKeyedBreakers {
    /// The breaker of `key` (inserted on first use); `RuntimeError` when the set is full.
    pub(crate) fn breaker(&self, key: u64) -> PyResult<&CircuitBreaker<128>> {
        guards::with_keyed_breakers!(&self.k, k => k.get_or_insert(key).map(|b| b as &CircuitBreaker<128>))
            .map_err(|_| {
                PyRuntimeError::new_err(format!(
                    "the keyed breaker set is full ({} keys): no breaker for key {key:#018x}",
                    self.k.capacity()
                ))
            })
    }

    fn get(&self, key: u64) -> Option<&CircuitBreaker<128>> {
        guards::with_keyed_breakers!(&self.k, k => k.get(key))
    }

    /// Take a permit of `key`'s breaker at `now` (see `CircuitBreaker.take`).
    pub(crate) fn take<'py, C: Clock>(
        slf: &Bound<'py, Self>,
        key: u64,
        now: &OnceClock<C>,
        op: Op<'_, 'py>,
    ) -> PyResult<BreakerPermit> {
        let me = slf.get();
        let b = me.breaker(key)?;
        match b.try_acquire(|| now.get()) {
            Ok(p) => {
                if p.is_probe() {
                    me.announce(slf, key, b, op);
                }
                Ok(p)
            }
            Err(r) => {
                let py = slf.py();
                me.announce(slf, key, b, op);
                let err = rejected_error(py, r, now.get());
                events::refusal(py, slf.as_any(), op, &err);
                Err(err)
            }
        }
    }

    /// Report `outcome` for `p` to `key`'s breaker at `now`.
    pub(crate) fn settle<'py>(
        slf: &Bound<'py, Self>,
        key: u64,
        p: BreakerPermit,
        outcome: Outcome,
        now: impl Clock + Send,
        op: Op<'_, 'py>,
    ) -> OutcomeEffect {
        let me = slf.get();
        let Some(b) = me.get(key) else {
            return OutcomeEffect::Discarded; // keys are never removed: cannot happen
        };
        let effect = b.report(p, outcome, now);
        if moved(effect) {
            me.announce(slf, key, b, op);
        }
        effect
    }

    fn announce<'py>(
        &self,
        slf: &Bound<'py, Self>,
        key: u64,
        b: &CircuitBreaker<128>,
        op: Op<'_, 'py>,
    ) {
        self.announced
            .observe(slf.py(), key, b.status(), slf.as_any(), op);
    }
}

#[pymethods]
impl PyKeyedBreakers {
    /// `KeyedBreakers(slots=16, **breaker settings)`: up to `slots` keys (rounded up to 4,
    /// 16, 64 or 256), each with its own breaker using the same settings (128 window cells).
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, slots=16, window_kind='count', window_size=100, window_duration=10.0, window_buckets=10, failure_rate_threshold=0.5, slow_call_duration=60.0, slow_call_rate_threshold=1.0, minimum_calls=0, open_duration=5.0, open_duration_multiplier=1.0, max_open_duration=300.0, half_open_probes=3, probe_timeout=1.0)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = args.py();
        let mut a = Args::collect("KeyedBreakers", &[], args, kwargs)?;
        let slots = match a.take("slots") {
            None => 16,
            Some(v) => util::get_u64("slots", &v, Ctx::Config)?,
        };
        let c = a.build(&CIRCUIT_BREAKER)?;
        let k = AnyKeyedBreakers::new(c, slots).map_err(|f| errors::failure(py, f))?;
        Ok(PyKeyedBreakers {
            k,
            announced: AnnouncedByKey::default(),
        })
    }

    /// The 64-bit key of `data` (FNV-1a of a `str`'s UTF-8 bytes, or of `bytes`): what a
    /// `str`/`bytes` key is turned into.
    #[staticmethod]
    fn key_of(data: &Bound<'_, PyAny>) -> PyResult<u64> {
        Ok(core_key_of(&util::str_or_bytes("data", data)?))
    }

    /// How many keys the set holds at most.
    #[getter]
    fn slots(&self) -> usize {
        self.k.capacity()
    }

    /// The settings every breaker uses (durations in seconds) and `slots`.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = guards::with_keyed_breakers!(&self.k, k => *k.config());
        let d = config::to_dict(py, &CIRCUIT_BREAKER, &c)?;
        d.set_item("slots", self.k.capacity())?;
        Ok(d)
    }

    /// Make sure `key` has a breaker: `True` if it has one (now), `False` if the set is
    /// full.
    fn get_or_insert(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = key_arg(key)?;
        Ok(self.breaker(key).is_ok())
    }

    /// Ask to make a call to `key` at `now` (inserting its breaker on first use): a
    /// permit, `BreakerOpen`, or `RuntimeError` when the set is full. Events name the call
    /// `operation`, or the key.
    #[pyo3(signature = (key, now = None, *, operation = None))]
    fn acquire(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyBreakerPermit> {
        let k = key_arg(key)?;
        let now = OnceClock::new(util::now_arg(now)?);
        let op = match operation_arg(operation)? {
            Some(op) => op,
            None => key_operation(key)?,
        };
        let p = Self::take(slf, k, &now, Op::Given(&op))?;
        Ok(PyBreakerPermit::new(
            BreakerOwner::Keyed(slf.clone().unbind(), k),
            p,
            Some(op.unbind()),
        ))
    }

    /// Like `acquire`, but `None` instead of raising `BreakerOpen` (a full set still
    /// raises `RuntimeError`).
    #[pyo3(signature = (key, now = None, *, operation = None))]
    fn try_acquire(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyBreakerPermit>> {
        let k = key_arg(key)?;
        let now = util::get_now(now)?;
        let op = match operation_arg(operation)? {
            Some(op) => op,
            None => key_operation(key)?,
        };
        let me = slf.get();
        let b = me.breaker(k)?;
        let got = b.try_acquire(now);
        if got.as_ref().map_or(true, BreakerPermit::is_probe) {
            me.announce(slf, k, b, Op::Given(&op));
        }
        Ok(got.ok().map(|p| {
            PyBreakerPermit::new(
                BreakerOwner::Keyed(slf.clone().unbind(), k),
                p,
                Some(op.unbind()),
            )
        }))
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
        let guard = Guard::keyed(slf, key)?;
        guarded::run(&guard, r#fn, args, kwargs)
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
        let guard = Guard::keyed(slf, key)?;
        guarded::acall(slf.py(), guard, r#fn, args, kwargs)
    }

    /// The state of `key`'s breaker at `now` (`"closed"` for a key never seen).
    #[pyo3(signature = (key, now = None))]
    fn state(
        &self,
        key: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<&'static str> {
        let key = key_arg(key)?;
        let now = util::get_now(now)?;
        Ok(self.get(key).map_or("closed", |b| b.state(now).name()))
    }

    /// The status of `key`'s breaker, or `None` for a key never seen.
    fn status<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let key = key_arg(key)?;
        self.get(key)
            .map(|b| status_dict(py, b.status()))
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
        let now = util::get_now(now)?;
        self.get(key)
            .map(|b| counts_dict(py, b.window_counts(now)))
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
                let s = guards::with_keyed_breakers!(&self.k, k => k.stats());
                Ok(Some(util::stats_dict(
                    py,
                    &[("entries", s.entries), ("full", s.full)],
                )?))
            }
            Some(key) => {
                let key = key_arg(key)?;
                self.get(key).map(|b| stats_of(py, b.stats())).transpose()
            }
        }
    }

    fn __len__(&self) -> usize {
        guards::with_keyed_breakers!(&self.k, k => k.len())
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = key_arg(key)?;
        Ok(self.get(key).is_some())
    }

    fn __repr__(&self) -> String {
        format!(
            "KeyedBreakers(slots={}, len={})",
            self.k.capacity(),
            self.__len__()
        )
    }
}

/// Which breaker a permit reports to.
#[derive(Debug)]
pub(crate) enum BreakerOwner {
    One(Py<PyCircuitBreaker>),
    Keyed(Py<PyKeyedBreakers>, u64),
}

impl BreakerOwner {
    fn settle<'py>(
        &self,
        py: Python<'py>,
        p: BreakerPermit,
        outcome: Outcome,
        now: impl Clock + Send,
        op: Op<'_, 'py>,
    ) -> OutcomeEffect {
        match self {
            BreakerOwner::One(b) => PyCircuitBreaker::settle(b.bind(py), p, outcome, now, op),
            BreakerOwner::Keyed(set, key) => {
                PyKeyedBreakers::settle(set.bind(py), *key, p, outcome, now, op)
            }
        }
    }
}

impl guards::permit::Owner for BreakerOwner {
    type Permit = BreakerPermit;

    /// Hand `p` back unjudged (no GIL needed: nothing is scanned, nothing emitted).
    fn give_back(&self, p: BreakerPermit) {
        match self {
            BreakerOwner::One(b) => b.get().b.on_ignore(p),
            BreakerOwner::Keyed(set, key) => {
                if let Some(b) = set.get().get(*key) {
                    b.on_ignore(p);
                }
            }
        }
    }
}

/// A breaker permit: a call, or a probe while half-open. Report one outcome.
#[pyclass(module = "guards", name = "BreakerPermit", frozen)]
#[derive(Debug)]
pub struct PyBreakerPermit {
    permit: Granted<BreakerOwner>,
    kind: PermitKind,
    generation: u32,
    acquired_at: u64,
    probe_timeout: Option<Nanos>,
    operation: Option<Py<PyAny>>,
}

impl PyBreakerPermit {
    fn new(owner: BreakerOwner, p: BreakerPermit, operation: Option<Py<PyAny>>) -> Self {
        PyBreakerPermit {
            kind: p.kind(),
            generation: p.generation(),
            acquired_at: p.acquired_at().as_u64(),
            probe_timeout: p.probe_timeout(),
            permit: Granted::new(owner, p),
            operation,
        }
    }

    /// Report `outcome` at `now`: its effect's name, or `None` if already reported.
    fn finish<'py>(
        &self,
        py: Python<'py>,
        outcome: Outcome,
        now: impl Clock + Send,
    ) -> Option<Bound<'py, PyString>> {
        let p = self.permit.take()?;
        let op = Op::given(self.operation.as_ref().map(|o| o.bind(py)));
        let effect = self.permit.owner().settle(py, p, outcome, now, op);
        Some(PyString::intern(py, effect.name()))
    }
}

#[pymethods]
impl PyBreakerPermit {
    /// Hand the permit back with how the call ended (`"success"`, `"timeout"`, ...: the
    /// call contract's outcomes), at `now`. Returns the effect (`"counted"`, `"opened"`,
    /// `"probe_passed"`, `"closed"`, `"reopened"`, `"discarded"`, `"ignored"`), or `None` if
    /// an outcome was already reported.
    #[pyo3(signature = (outcome, now = None))]
    fn report<'py>(
        &self,
        py: Python<'py>,
        outcome: &Bound<'py, PyAny>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyString>>> {
        let o = outcome::outcome_arg(outcome)?;
        let now = util::now_arg(now)?;
        Ok(self.finish(py, o, now))
    }

    /// The primitive `on_success`: the call succeeded, ending at `now` (a slow success
    /// still counts as slow). Returns the effect, or `None` if already reported.
    #[pyo3(signature = (now = None))]
    fn on_success<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyString>>> {
        let now = util::now_arg(now)?;
        Ok(self.finish(py, Outcome::Success, now))
    }

    /// The primitive `on_failure`: the call failed at `now` (reported as `"other_transient"`).
    /// Returns the effect, or `None` if already reported.
    #[pyo3(signature = (now = None))]
    fn on_failure<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyString>>> {
        let now = util::now_arg(now)?;
        Ok(self.finish(py, Outcome::OtherTransient, now))
    }

    /// The primitive `on_ignore`: record nothing (the call's result says nothing about the
    /// callee); a probe gives its slot back. `False` if already reported.
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

    /// When it was granted (integer nanoseconds), if the breaker read its clock for it: a
    /// probe, or a call of a breaker that times its calls (`slow_call_duration` set). An
    /// ordinary call of a breaker that does not time its calls reads no clock and says 0.
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

    /// Report how the block ended: success, or the exception leaving it classified by
    /// `guards.classify_exception` (a cancellation is `cancelled`: a failed probe, an
    /// ignored call). The exception is never suppressed.
    #[pyo3(signature = (_exc_type = None, exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let outcome = permit::exit_outcome(exc)?;
        self.finish(py, outcome, clock::now as fn() -> Nanos);
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
