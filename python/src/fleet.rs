//! `guards.fleet`: this process as one member of a fleet that shares allowances through
//! Redis (or Valkey), over ffi's fleet agent (`guards::fleet`, see `docs/fleet.md`).
//!
//! `Fleet(url, service, member)` joins (one connection, the first heartbeat, then a
//! background agent thread); `attach(name, allowance, guard)` hands a `Bulkhead`, a
//! `Limiter` or a token-bucket `RetryBudget` to the agent, which keeps its cap at this
//! member's share of the fleet-wide `allowance`; `attach_breaker(name, breaker)` publishes a
//! `CircuitBreaker`'s window and lets the agent open it on the fleet's evidence. The guard stays an ordinary guard: its hot
//! path never waits for Redis, and the agent only resizes it between syncs.
//!
//! The agent thread never takes the GIL: each attached guard is held as a `Py<...>` of a
//! frozen class (read with `Py::get`) and resized through its lock-free atomics. Every call
//! that may wait (joining, leaving, the agent's lock) runs with the GIL released.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use guards::fleet::{
    AllowanceStats, BreakerStats, EventField, Fleet, FleetConfig, FleetError, FleetEvent,
    FleetStats, Resizable, Through, Trippable,
};
use guards_core::retry_budget::{RetryBudget, MICROS_PER_TOKEN};
use guards_core::Nanos;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::bulkhead::PyBulkhead;
use crate::circuit_breaker::PyCircuitBreaker;
use crate::errors::{self, FleetAuthError, FleetError as PyFleetError, FleetUnavailable};
use crate::limiter::PyLimiter;
use crate::retry_budget::PyRetryBudget;
use crate::util::{self, given, Ctx};

/// The largest allowance a token budget accepts: its capacity is at most 1e9 tokens.
const MAX_BUDGET_ALLOWANCE: u64 = 1_000_000_000;

/// A bulkhead's cap is its `max_concurrent`.
struct BulkheadShare(Py<PyBulkhead>);

impl Resizable for BulkheadShare {
    fn in_flight(&self) -> u64 {
        self.0.get().b.in_flight()
    }
    fn cap(&self) -> u64 {
        self.0.get().b.max_concurrent()
    }
    fn set_cap(&self, cap: u64) {
        // Shares never exceed the allowance (at most 2^32 − 1, checked at attach).
        let _ = self.0.get().b.set_max_concurrent(cap);
    }
}

/// A limiter's cap is its ceiling (`u32::MAX` when it has none); its calls in flight
/// count as held.
struct LimiterShare(Py<PyLimiter>);

impl Resizable for LimiterShare {
    fn in_flight(&self) -> u64 {
        self.0.get().l.in_flight()
    }
    fn cap(&self) -> u64 {
        self.0.get().l.max_limit().unwrap_or(u64::from(u32::MAX))
    }
    fn set_cap(&self, cap: u64) {
        let _ = self.0.get().l.set_max_limit(cap);
    }
}

/// A token budget's cap is its capacity in whole tokens (rounded down); its balance
/// (rounded up) counts as held, since those tokens may still be spent.
struct BudgetShare(Py<PyRetryBudget>);

impl Resizable for BudgetShare {
    fn in_flight(&self) -> u64 {
        match &*self.0.get().b {
            RetryBudget::TokenBucket(t) => t.tokens_micros().div_ceil(MICROS_PER_TOKEN),
            _ => 0,
        }
    }
    fn cap(&self) -> u64 {
        match &*self.0.get().b {
            RetryBudget::TokenBucket(t) => t.capacity_micros() / MICROS_PER_TOKEN,
            _ => 0,
        }
    }
    fn set_cap(&self, cap: u64) {
        if let RetryBudget::TokenBucket(t) = &*self.0.get().b {
            // Shares never exceed the allowance (at most 1e9 for a budget, checked at
            // attach).
            let _ = t.set_capacity(cap as f64);
        }
    }
}

/// The Python exception for a failure of ffi's fleet agent. `ctx` decides whether a bad
/// value is a `ConfigError` (the constructor's settings) or a `ValueError` (a call's
/// argument).
fn fleet_error(py: Python<'_>, e: FleetError, ctx: Ctx) -> PyErr {
    match e {
        FleetError::Config(field, why) => {
            let field = if field == "allowance name" {
                "name"
            } else {
                field
            };
            let expected = errors::pythonic(why);
            let message = format!("invalid `{field}` (expected {expected})");
            match ctx {
                Ctx::Config => {
                    let kind = if matches!(field, "ttl" | "stale_after") {
                        "inconsistent"
                    } else {
                        "out_of_range"
                    };
                    errors::config_error_parts(py, field, kind, &expected, &message)
                }
                Ctx::Arg => PyValueError::new_err(message),
            }
        }
        FleetError::BadUrl(why) => errors::config_error_parts(
            py,
            "url",
            "out_of_range",
            "redis://[user:password@]host:port[/db] or valkey://...",
            &format!("invalid `url`: {why}"),
        ),
        FleetError::Auth(why) => {
            FleetAuthError::new_err(format!("redis refused the credentials: {why}"))
        }
        FleetError::Unavailable(why) => {
            FleetUnavailable::new_err(format!("redis unavailable: {why}"))
        }
        FleetError::Duplicate(name) => {
            PyValueError::new_err(format!("allowance `{name}` is already attached"))
        }
    }
}

fn duration_of(n: Nanos) -> Duration {
    Duration::from_nanos(n.as_u64())
}

/// A member of a fleet. See the module docs of `guards.fleet`.
#[pyclass(module = "guards.fleet", name = "Fleet", frozen)]
#[derive(Debug)]
pub struct PyFleet {
    fleet: Mutex<Fleet>,
    left: AtomicBool,
    service: String,
    member: String,
    /// The attached breakers (their objects' addresses, and names), to refuse one breaker
    /// attached twice.
    breakers: Mutex<Vec<(usize, String)>>,
}

impl PyFleet {
    fn lock(&self) -> MutexGuard<'_, Fleet> {
        self.fleet.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stats_now(&self, py: Python<'_>) -> FleetStats {
        py.detach(|| self.lock().stats())
    }

    fn check_joined(&self) -> PyResult<()> {
        if self.left.load(Ordering::SeqCst) {
            Err(PyFleetError::new_err(format!(
                "member `{}` has left fleet `{}`",
                self.member, self.service
            )))
        } else {
            Ok(())
        }
    }
}

fn allowance_dict<'py>(py: Python<'py>, a: &AllowanceStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &a.name)?;
    d.set_item("allowance", a.allowance)?;
    d.set_item("share", a.share)?;
    d.set_item("fair", a.fair)?;
    d.set_item("claims_won", a.claims_won)?;
    d.set_item("claims_lost", a.claims_lost)?;
    Ok(d)
}

fn breaker_dict<'py>(py: Python<'py>, b: &BreakerStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &b.name)?;
    d.set_item("calls", b.calls)?;
    d.set_item("failures", b.failures)?;
    d.set_item("fleet_calls", b.fleet_calls)?;
    d.set_item("fleet_failures", b.fleet_failures)?;
    d.set_item("fleet_members", b.fleet_members)?;
    d.set_item("opened_on_evidence", b.opened_on_evidence)?;
    Ok(d)
}

fn event_dict<'py>(py: Python<'py>, e: &FleetEvent) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", e.kind())?;
    for (name, v) in e.fields() {
        match v {
            EventField::Text(t) => d.set_item(name, t)?,
            EventField::Count(n) => d.set_item(name, n)?,
        }
    }
    Ok(d)
}

#[pymethods]
impl PyFleet {
    /// Join fleet `service` as `member` through the Redis at `url`: check every setting,
    /// connect once (an unreachable server raises `FleetUnavailable`, refused credentials
    /// `FleetAuthError`), write the first heartbeat and start the agent thread.
    ///
    /// Durations are seconds (float or int), `datetime.timedelta` or `guards.Nanos`.
    /// `None` takes the default derived from `sync_interval`: `ttl` 3 ×, `stale_after`
    /// 2 ×, `io_timeout` 1 × the interval. `fallback_floor=None` falls back to the
    /// allowance ÷ the last known members; 0 is strict.
    #[new]
    #[pyo3(
        signature = (url, service, member, *, sync_interval = None, ttl = None, stale_after = None, fallback_floor = None, io_timeout = None, weight = None),
        text_signature = "(url, service, member, *, sync_interval=0.25, ttl=None, stale_after=None, fallback_floor=None, io_timeout=None, weight=1)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        url: &Bound<'_, PyAny>,
        service: &Bound<'_, PyAny>,
        member: &Bound<'_, PyAny>,
        sync_interval: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        stale_after: Option<&Bound<'_, PyAny>>,
        fallback_floor: Option<&Bound<'_, PyAny>>,
        io_timeout: Option<&Bound<'_, PyAny>>,
        weight: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let url = util::get_str("url", url)?;
        let service = util::get_str("service", service)?;
        let member = util::get_str("member", member)?;
        let mut c = FleetConfig::new(&url, &service, &member);
        if let Some(i) = util::opt_duration("sync_interval", sync_interval, Ctx::Config)? {
            let i = duration_of(i);
            c.sync_interval = i;
            c.ttl = i.saturating_mul(3);
            c.stale_after = i.saturating_mul(2);
            c.io_timeout = i;
        }
        if let Some(t) = util::opt_duration("ttl", ttl, Ctx::Config)? {
            c.ttl = duration_of(t);
        }
        if let Some(s) = util::opt_duration("stale_after", stale_after, Ctx::Config)? {
            c.stale_after = duration_of(s);
        }
        if let Some(t) = util::opt_duration("io_timeout", io_timeout, Ctx::Config)? {
            c.io_timeout = duration_of(t);
        }
        if let Some(f) = given(fallback_floor) {
            c.fallback_floor = Some(util::get_uint(
                "fallback_floor",
                f,
                Ctx::Config,
                u64::from(u32::MAX),
                "None or an int in 0..=4294967295",
            )?);
        }
        if let Some(w) = given(weight) {
            c.weight = util::get_u32("weight", w, Ctx::Config, "an int in 1..=1000")?;
        }
        c.validate().map_err(|e| fleet_error(py, e, Ctx::Config))?;
        let fleet = py
            .detach(move || Fleet::join(c))
            .map_err(|e| fleet_error(py, e, Ctx::Config))?;
        Ok(PyFleet {
            fleet: Mutex::new(fleet),
            left: AtomicBool::new(false),
            service,
            member,
            breakers: Mutex::new(Vec::new()),
        })
    }

    /// The fleet's name.
    #[getter]
    fn service(&self) -> &str {
        &self.service
    }

    /// This member's name.
    #[getter]
    fn member(&self) -> &str {
        &self.member
    }

    /// Whether `leave()` has been called.
    #[getter]
    fn left(&self) -> bool {
        self.left.load(Ordering::SeqCst)
    }

    /// Attach `guard` to the fleet-wide allowance `name` (1 to 128 characters of
    /// `[A-Za-z0-9._-]`) of `allowance` units (`1..=2**32-1`; at most 1e9 for a retry
    /// budget). Accepted guards: a `guards.Bulkhead` (its `max_concurrent` follows the
    /// share), a `guards.Limiter` (its `max_limit`) or a `"token_bucket"`
    /// `guards.RetryBudget` (its `capacity`, in tokens). The cap drops to 0 at once and
    /// grows to this member's share as the fleet leaves room: attach before serving.
    fn attach(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        allowance: &Bound<'_, PyAny>,
        guard: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.check_joined()?;
        let name = util::get_str("name", name)?;
        let allowance = util::get_uint(
            "allowance",
            allowance,
            Ctx::Arg,
            u64::MAX,
            "an int in 1..=4294967295",
        )?;
        let share: Box<dyn Resizable> = if let Ok(b) = guard.cast::<PyBulkhead>() {
            Box::new(BulkheadShare(b.clone().unbind()))
        } else if let Ok(l) = guard.cast::<PyLimiter>() {
            Box::new(LimiterShare(l.clone().unbind()))
        } else if let Ok(b) = guard.cast::<PyRetryBudget>() {
            if !matches!(&*b.get().b, RetryBudget::TokenBucket(_)) {
                return Err(PyValueError::new_err(format!(
                    "only a token_bucket retry budget can be attached, not a {} one",
                    b.get().b.mode().name()
                )));
            }
            if allowance > MAX_BUDGET_ALLOWANCE {
                return Err(PyValueError::new_err(
                    "invalid `allowance` for a retry budget (expected an int in 1..=1000000000 tokens)",
                ));
            }
            Box::new(BudgetShare(b.clone().unbind()))
        } else {
            return Err(util::type_error(
                "guard",
                "a guards.Bulkhead, a guards.Limiter or a token_bucket guards.RetryBudget",
                guard,
            ));
        };
        py.detach(|| self.lock().attach(&name, allowance, share))
            .map_err(|e| fleet_error(py, e, Ctx::Arg))
    }

    /// Attach `breaker` (a `guards.CircuitBreaker`) under `name` (1 to 128 characters of
    /// `[A-Za-z0-9._-]`; breaker names are a namespace of their own, apart from the
    /// allowances'). Each sync the agent publishes the calls and failures of its window
    /// and, while it is closed with fewer calls of its own than its `minimum_calls`, opens
    /// it when the other members' windows (calls from at least two of them) hold
    /// `minimum_calls` calls failing at its `failure_rate_threshold` or more, with a
    /// `breaker_opened_on_fleet_evidence` event. It opens as on a threshold trip of its
    /// own: the same open duration, the same half-open probes. The breaker is otherwise
    /// untouched; use it with the default clock (no `now=` arguments, no `FakeClock`),
    /// whose timeline the agent reads. The fleet holds it until `leave()`.
    fn attach_breaker(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        breaker: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.check_joined()?;
        let name = util::get_str("name", name)?;
        let Ok(b) = breaker.cast::<PyCircuitBreaker>() else {
            return Err(util::type_error(
                "breaker",
                "a guards.CircuitBreaker",
                breaker,
            ));
        };
        let address = b.as_ptr() as usize;
        let mut attached = self.breakers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, other)) = attached.iter().find(|(a, n)| *a == address || *n == name) {
            return Err(PyValueError::new_err(if *other == name {
                format!("a breaker named `{name}` is already attached")
            } else {
                format!("this breaker is already attached as `{other}`")
            }));
        }
        // The agent publishes its window and opens it on the fleet's evidence
        // (`docs/fleet.md`, "Breaker evidence").
        let share = Box::new(Through(b.clone().unbind(), |p: &Py<PyCircuitBreaker>| {
            &p.get().b as &dyn Trippable
        }));
        py.detach(|| self.lock().attach_trippable(&name, share))
            .map_err(|e| match e {
                FleetError::Duplicate(n) => {
                    PyValueError::new_err(format!("a breaker named `{n}` is already attached"))
                }
                e => fleet_error(py, e, Ctx::Arg),
            })?;
        attached.push((address, name));
        Ok(())
    }

    /// This member's share of allowance `name` now (the attached guard's cap); `KeyError`
    /// when no allowance of that name is attached.
    fn share(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<u64> {
        let n = util::get_str("name", name)?;
        self.stats_now(py)
            .allowances
            .iter()
            .find(|a| a.name == n)
            .map(|a| a.share)
            .ok_or_else(|| PyKeyError::new_err(n))
    }

    /// The agent's counters: `members` (live members in the last view), `syncs`,
    /// `sync_errors`, `connected`, `fallen_back`, `events_dropped`, and `allowances`, one
    /// dict per attached allowance (`name`, `allowance`, `share`, `fair`, `claims_won`,
    /// `claims_lost`), and `breakers`, one dict per attached breaker (`name`, `calls` and
    /// `failures` published at the last sync, `fleet_calls`, `fleet_failures` and
    /// `fleet_members` of the fleet's evidence then, `opened_on_evidence`).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.stats_now(py);
        let d = PyDict::new(py);
        d.set_item("members", s.members)?;
        d.set_item("syncs", s.syncs)?;
        d.set_item("sync_errors", s.sync_errors)?;
        d.set_item("connected", s.connected)?;
        d.set_item("fallen_back", s.fallen_back)?;
        d.set_item("events_dropped", s.events_dropped)?;
        let list = PyList::empty(py);
        for a in &s.allowances {
            list.append(allowance_dict(py, a)?)?;
        }
        d.set_item("allowances", list)?;
        let list = PyList::empty(py);
        for b in &s.breakers {
            list.append(breaker_dict(py, b)?)?;
        }
        d.set_item("breakers", list)?;
        Ok(d)
    }

    /// The events since the last call, oldest first, each a dict with `kind`:
    /// `share_changed` (`allowance`, `from`, `to`), `member_joined` / `member_left`
    /// (`member`), `redis_lost` (`error`), `redis_regained`, `fell_back` (`allowance`,
    /// `share`), `breaker_opened_on_fleet_evidence` (`name`, `fleet_calls`,
    /// `fleet_failures`, `members`). At most 1024 are kept (`stats()["events_dropped"]` counts the rest).
    fn events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let events = py.detach(|| self.lock().events());
        let list = PyList::empty(py);
        for e in &events {
            list.append(event_dict(py, e)?)?;
        }
        Ok(list)
    }

    /// Stop the agent, remove this member's record (best effort; the others take its
    /// share at their next sync) and detach the guards, which keep their last caps.
    /// Idempotent; also done on garbage collection and at the end of a `with` block.
    fn leave(&self, py: Python<'_>) {
        if self.left.swap(true, Ordering::SeqCst) {
            return;
        }
        py.detach(|| self.lock().leave());
        self.breakers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.leave(py);
        false
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        if self.left() {
            return format!(
                "Fleet(service='{}', member='{}', left=True)",
                self.service, self.member
            );
        }
        let s = self.stats_now(py);
        format!(
            "Fleet(service='{}', member='{}', members={}, connected={}, allowances={})",
            self.service,
            self.member,
            s.members,
            util::py_bool(s.connected),
            s.allowances.len()
        )
    }
}

/// Register `guards._guards._fleet` (re-exported by `guards.fleet`); its exceptions are
/// the package's (`guards.FleetError` and subclasses), added by `errors::register`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let f = PyModule::new(py, "guards._guards._fleet")?;
    f.add_class::<PyFleet>()?;
    f.add("FleetError", py.get_type::<PyFleetError>())?;
    f.add("FleetUnavailable", py.get_type::<FleetUnavailable>())?;
    f.add("FleetAuthError", py.get_type::<FleetAuthError>())?;
    m.setattr("_fleet", f)?;
    Ok(())
}
