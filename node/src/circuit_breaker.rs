//! `CircuitBreaker`: core's breaker behind ffi's `AnyBreaker` (capacity chosen at run
//! time), permits as take-once objects or, for the JavaScript layer's fast path, tokens.

use std::cell::Cell;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::AnyBreaker;
use guards::names::{
    BreakerState, CircuitBreakerConfig, CircuitBreakerPermit as BreakerPermit,
    CircuitBreakerRejected as BreakerRejected,
};
use guards::permit::{Granted, Owner, PermitSlots};
use guards::schema;
use guards::with_breaker;

use crate::convert::{big, config_object, ms, now_of, num, Options};
use crate::errors::{self, config_failure, Details};
use crate::outcome;
use crate::shared::{self, Kind};
use crate::token::{self, CHANGED};

pub(crate) struct BreakerCore {
    pub(crate) g: AnyBreaker,
    slots: PermitSlots<BreakerPermit>,
    /// The `SharedArrayBuffer` view the guard lives in (kept alive), if shared.
    _mem: Option<Uint8Array>,
}

/// The breaker a permit object goes back to.
pub(crate) struct BreakerRef(Arc<BreakerCore>);

impl Owner for BreakerRef {
    type Permit = BreakerPermit;
    fn give_back(&self, p: BreakerPermit) {
        self.0.g.on_ignore(p);
    }
}

const CLASS: &str = "CircuitBreaker";

fn read_config(env: &Env, options: Option<Unknown<'_>>) -> Result<(CircuitBreakerConfig, u64)> {
    let mut o = Options::read(env, CLASS, options)?;
    let capacity = o.count(env, "capacity", 0, u64::MAX)?;
    let config = o.build(env, &schema::CIRCUIT_BREAKER, "")?;
    Ok((config, capacity))
}

pub(crate) fn state_name(s: BreakerState) -> &'static str {
    s.name()
}

pub(crate) fn rejection_error(env: &Env, r: &BreakerRejected, now: guards::names::Nanos) -> Error {
    let (kind, what) = match r.reason.name() {
        "open" => ("BREAKER_OPEN", "the circuit breaker is open"),
        _ => (
            "BREAKER_HALF_OPEN_FULL",
            "the circuit breaker is half-open and every probe is out",
        ),
    };
    let after = ms(r.retry_after(now));
    errors::throw(
        env,
        kind,
        &format!("{what}; retry in {after} ms"),
        Details {
            retry_at: Some(r.retry_at.0),
            reason: Some(r.reason.name()),
            numbers: vec![("retryAfterMs", after)],
            ..Details::default()
        },
    )
}

/// A circuit breaker: closed, open or half-open, judged on a count or time window of
/// outcomes (failure rate and slow-call rate), opening for a growing duration, then
/// letting a few probes through. Lock-free; one breaker may be shared by every caller of
/// a dependency, and by worker threads (`CircuitBreaker.shared`).
#[napi]
pub struct CircuitBreaker {
    core: Arc<BreakerCore>,
    seen: Cell<u8>,
    last: Cell<Option<BreakerRejected>>,
}

impl CircuitBreaker {
    fn from_core(core: BreakerCore) -> Self {
        let s = core.g.status().state as u8;
        CircuitBreaker {
            core: Arc::new(core),
            seen: Cell::new(s),
            last: Cell::new(None),
        }
    }

    /// The stored state, and whether it differs from what this thread saw last.
    #[inline]
    fn observe(&self) -> (u8, bool) {
        let s = self.core.g.status().state as u8;
        let changed = s != self.seen.get();
        if changed {
            self.seen.set(s);
        }
        (s, changed)
    }
}

#[napi]
impl CircuitBreaker {
    /// A breaker with `options` (every field of core's `CircuitBreakerConfig` in camelCase,
    /// durations in ms; `capacity`: window cells, 0 to fit the window). With `shared` (a
    /// `Uint8Array` over a `SharedArrayBuffer`): built in it when it is fresh (`options`
    /// apply), attached to the breaker already in it otherwise (`options` must be left
    /// out). Use the layer's `CircuitBreaker.shared()` / `fromShared()`.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: CircuitBreakerOptions, shared?: Uint8Array"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>, shared: Option<Uint8Array>) -> Result<Self> {
        let core = match shared {
            None => {
                let (config, capacity) = read_config(&env, options)?;
                let g = AnyBreaker::new(config, capacity)
                    .map_err(|f| config_failure(&env, CLASS, "", &f))?;
                BreakerCore {
                    g,
                    slots: token::slots(),
                    _mem: None,
                }
            }
            Some(mem) => {
                if options.is_none() {
                    let (ptr, cap) = shared::attach(
                        &env,
                        CLASS,
                        &mem,
                        Kind::CircuitBreaker,
                        AnyBreaker::layout_for,
                    )?;
                    // SAFETY: `attach` checked that the buffer holds a built breaker of this
                    // capacity at `ptr`; `_mem` keeps the buffer alive as long as the view.
                    let g = unsafe { AnyBreaker::attach(cap, ptr) }
                        .ok_or_else(|| errors::internal(&env, "capacity"))?;
                    BreakerCore {
                        g,
                        slots: token::slots(),
                        _mem: Some(mem),
                    }
                } else {
                    let (config, capacity) = read_config(&env, options)?;
                    let cap = AnyBreaker::capacity_for(&config, capacity)
                        .map_err(|f| config_failure(&env, CLASS, "", &f))?;
                    let layout = AnyBreaker::layout_for(cap)
                        .ok_or_else(|| errors::internal(&env, "capacity"))?;
                    let ptr = shared::claim(&env, CLASS, &mem, layout)?;
                    // SAFETY: `claim` gave us exclusive use of `layout.size()` bytes at `ptr`,
                    // aligned for the guard, inside the buffer `_mem` keeps alive.
                    let g = unsafe { AnyBreaker::build_at(cap, config, ptr) }
                        .ok_or_else(|| errors::internal(&env, "capacity"))?
                        .map_err(|f| config_failure(&env, CLASS, "", &f))?;
                    shared::publish(&mem, Kind::CircuitBreaker, cap);
                    BreakerCore {
                        g,
                        slots: token::slots(),
                        _mem: Some(mem),
                    }
                }
            }
        };
        Ok(CircuitBreaker::from_core(core))
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a breaker with `options`.
    #[napi(catch_unwind, ts_args_type = "options?: CircuitBreakerOptions")]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        let (config, capacity) = read_config(&env, options)?;
        let cap = AnyBreaker::capacity_for(&config, capacity)
            .map_err(|f| config_failure(&env, CLASS, "", &f))?;
        let layout =
            AnyBreaker::layout_for(cap).ok_or_else(|| errors::internal(&env, "capacity"))?;
        Ok(u32::try_from(shared::bytes_for(layout)).unwrap_or(u32::MAX))
    }

    /// Ask to make a call at `now`: a permit to report exactly once, or a thrown
    /// `BreakerOpenError` (`code` `GUARDS_BREAKER_OPEN` or `GUARDS_BREAKER_HALF_OPEN_FULL`,
    /// with `retryAt` and `retryAfterMs`).
    #[napi(catch_unwind)]
    pub fn try_acquire(&self, env: Env, now: Option<BigInt>) -> Result<CircuitBreakerPermit> {
        let now = now_of(&env, now)?;
        match self.core.g.try_acquire(now) {
            Ok(p) => {
                self.observe();
                Ok(CircuitBreakerPermit {
                    is_probe: p.is_probe(),
                    probe_timeout: p.probe_timeout(),
                    acquired_at: p.acquired_at(),
                    granted: Granted::new(BreakerRef(Arc::clone(&self.core)), p),
                })
            }
            Err(r) => Err(rejection_error(&env, &r, now)),
        }
    }

    /// Fast path of the JavaScript layer: a permit token (plus 2^52 if the state changed),
    /// or -1 (open) / -2 (half-open, probes out); `lastRejection()` tells more.
    #[napi(js_name = "_acquire")]
    pub fn fast_acquire(&self) -> f64 {
        let now = guards::clock::now();
        match self.core.g.try_acquire(now) {
            Ok(p) => match self.core.slots.insert(p) {
                Ok(t) => {
                    let (_, changed) = self.observe();
                    token::pack(t) + if changed { CHANGED } else { 0.0 }
                }
                Err((p, _)) => {
                    self.core.g.on_ignore(p);
                    -3.0
                }
            },
            Err(r) => {
                self.last.set(Some(r));
                if r.reason.name() == "open" {
                    -1.0
                } else {
                    -2.0
                }
            }
        }
    }

    /// Fast path: hand back permit `token` with outcome number `outcome`. Returns the
    /// state's number (closed 0, open 1, half-open 2) plus 2^52 if it changed; -1 if the
    /// token was already reported or never issued (nothing counted).
    #[napi(js_name = "_report")]
    pub fn fast_report(&self, env: Env, token: f64, outcome: u32) -> Result<f64> {
        let outcome = outcome::of_number(&env, outcome)?;
        let Some(t) = token::unpack(self.core.slots.guard_id(), token) else {
            return Ok(-1.0);
        };
        let Ok(p) = self.core.slots.take(t) else {
            return Ok(-1.0);
        };
        let now = guards::clock::now();
        with_breaker!(&self.core.g, b => b.report(p, outcome, now));
        let (s, changed) = self.observe();
        Ok(f64::from(s) + if changed { CHANGED } else { 0.0 })
    }

    /// The last refusal of this thread's fast path, thrown as its error.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env) -> Result<()> {
        match self.last.get() {
            Some(r) => Err(rejection_error(&env, &r, guards::clock::now())),
            None => Ok(()),
        }
    }

    /// The state at `now`: `'closed'`, `'open'` or `'half_open'` (an open breaker whose
    /// open period has ended reports `'half_open'`).
    #[napi(catch_unwind, ts_return_type = "'closed' | 'open' | 'half_open'")]
    pub fn state(&self, env: Env, now: Option<BigInt>) -> Result<&'static str> {
        let now = now_of(&env, now)?;
        Ok(state_name(self.core.g.state(now)))
    }

    /// The state word: `{ state, generation, probesIssued, probesPassed,
    /// consecutiveOpens, halfOpenAt }` (`halfOpenAt` a bigint instant, 0n unless open).
    #[napi(catch_unwind, ts_return_type = "BreakerStatus")]
    pub fn status<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.core.g.status();
        let mut o = Object::new(env)?;
        o.set("state", s.state.name())?;
        o.set("generation", s.generation)?;
        o.set("probesIssued", s.probes_issued)?;
        o.set("probesPassed", s.probes_passed)?;
        o.set("consecutiveOpens", s.consecutive_opens)?;
        o.set("halfOpenAt", big(s.half_open_at))?;
        Ok(o)
    }

    /// What the window holds at `now`: `{ calls, failures, slow }`.
    #[napi(
        catch_unwind,
        ts_return_type = "{ calls: number; failures: number; slow: number }"
    )]
    pub fn window_counts<'e>(&self, env: &'e Env, now: Option<BigInt>) -> Result<Object<'e>> {
        let now = now_of(env, now)?;
        let w = self.core.g.window_counts(now);
        let mut o = Object::new(env)?;
        o.set("calls", num(w.calls))?;
        o.set("failures", num(w.failures))?;
        o.set("slow", num(w.slow))?;
        Ok(o)
    }

    /// Counters since it was built (relaxed snapshots, read without stopping traffic).
    #[napi(catch_unwind, ts_return_type = "CircuitBreakerStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.core.g.stats();
        let mut o = Object::new(env)?;
        for (k, v) in [
            ("successes", s.successes),
            ("failures", s.failures),
            ("slowCalls", s.slow_calls),
            ("probesAdmitted", s.probes_admitted),
            ("probeSuccesses", s.probe_successes),
            ("probeFailures", s.probe_failures),
            ("ignored", s.ignored),
            ("discarded", s.discarded),
            ("rejectedOpen", s.rejected_open),
            ("rejectedHalfOpen", s.rejected_half_open),
            ("closedToOpen", s.closed_to_open),
            ("openToHalfOpen", s.open_to_half_open),
            ("halfOpenToClosed", s.half_open_to_closed),
            ("halfOpenToOpen", s.half_open_to_open),
        ] {
            o.set(k, num(v))?;
        }
        o.set("state", state_name(self.core.g.state(guards::clock::now())))?;
        Ok(o)
    }

    /// The config it runs with (camelCase, durations in ms).
    #[napi(
        getter,
        catch_unwind,
        ts_return_type = "Required<CircuitBreakerOptions>"
    )]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let c = self.core.g.config();
        let mut o = config_object(env, &schema::CIRCUIT_BREAKER, &c)?;
        o.set("capacity", num(self.core.g.capacity() as u64))?;
        Ok(o)
    }

    /// Window cells allocated (a supported capacity at least the window's).
    #[napi(getter)]
    pub fn capacity(&self) -> u32 {
        u32::try_from(self.core.g.capacity()).unwrap_or(u32::MAX)
    }

    /// Permits handed out by this object and not reported yet (the fast path's tokens).
    #[napi(getter)]
    pub fn outstanding(&self) -> f64 {
        num(self.core.slots.outstanding())
    }
}

/// Permission to make one call through a `CircuitBreaker`: `report` how it ended exactly
/// once (a second report throws `GUARDS_PERMIT_ALREADY_REPORTED` and counts nothing). A
/// permit garbage-collected unreported is handed back without a verdict.
#[napi]
pub struct CircuitBreakerPermit {
    is_probe: bool,
    probe_timeout: Option<guards::names::Nanos>,
    acquired_at: guards::names::Nanos,
    granted: Granted<BreakerRef>,
}

#[napi]
impl CircuitBreakerPermit {
    /// Report how the call ended (`'success'`, `'timeout'`, ... see `Outcome`) at `now`.
    /// Returns the effect on the breaker (`'counted'`, `'opened'`, `'probe_passed'`,
    /// `'closed'`, `'reopened'`, `'discarded'`, `'ignored'`).
    #[napi(catch_unwind, ts_args_type = "outcome: Outcome, now?: bigint")]
    pub fn report(&self, env: Env, outcome: String, now: Option<BigInt>) -> Result<&'static str> {
        let outcome = outcome::parse(&env, "outcome", &outcome)?;
        let now = now_of(&env, now)?;
        let p = self.granted.take().ok_or_else(|| {
            errors::permit(&env, guards::error::GuardsResult::PermitAlreadyReported)
        })?;
        let effect = with_breaker!(&self.granted.owner().0.g, b => b.report(p, outcome, now));
        Ok(effect.name())
    }

    /// Whether this permit is a half-open probe.
    #[napi(getter)]
    pub fn is_probe(&self) -> bool {
        self.is_probe
    }

    /// A probe's timeout in ms (what the call should wait at most), `null` for a call.
    #[napi(getter)]
    pub fn probe_timeout_ms(&self) -> Option<f64> {
        self.probe_timeout.map(ms)
    }

    /// When it was granted (the `now` of `tryAcquire`).
    #[napi(getter)]
    pub fn acquired_at(&self) -> BigInt {
        big(self.acquired_at)
    }

    /// Whether it has been reported (or given back).
    #[napi(getter)]
    pub fn done(&self) -> bool {
        self.granted.done()
    }
}
