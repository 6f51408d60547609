//! `CircuitBreaker`: core's breaker behind ffi's `AnyBreaker` (capacity chosen at run
//! time), permits as take-once objects or, for the JavaScript layer's fast path, tokens.

use std::cell::Cell;
use std::ffi::c_void;
use std::ptr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::AnyBreaker;
use guards::names::{
    BreakerState, BreakerStatus, CircuitBreakerConfig, CircuitBreakerPermit as BreakerPermit,
    CircuitBreakerRejected as BreakerRejected, CircuitBreakerStats, Nanos,
};
use guards::permit::{Granted, Owner};
use guards::schema;
use guards::with_breaker;
use guards_core::circuit_breaker::CircuitBreakerPermitParts;

use crate::args;
use crate::convert::{big, config_object, ms, num, Options};
use crate::errors::{self, Details};
use crate::fast::{self, fast_fn};
use crate::outcome;
use crate::shared::{self, Placed};
use crate::token::{Tokens, CHANGED};

pub(crate) struct BreakerCore {
    pub(crate) g: AnyBreaker,
    /// The `SharedArrayBuffer` view the guard lives in (kept alive), if shared.
    _mem: Option<Uint8Array>,
    /// Whether ordinary calls are not timed (the largest slow-call duration): a closed
    /// permit is then the generation alone (see `Mirror`).
    untimed: bool,
    /// The closed generation the JavaScript layer may admit calls in without asking.
    mirror: Mirror,
}

/// The first generation the mirror does not show: below it, a generation times 256 plus
/// an outcome number (what `reportIn` takes, one argument) is a small integer in
/// JavaScript. A breaker past 2^22 transitions asks on every call.
const MIRROR_LIMIT: u32 = 1 << 22;

/// What lets `execute` on an untimed breaker make one native call instead of two.
///
/// A closed breaker's `try_acquire` changes nothing and, when calls are not timed, hands
/// out a permit that is nothing but the closed generation (`acquired_at` zero, no probe):
/// taking one needs no native call if the layer knows, exactly, that the breaker is
/// closed and in which generation. The mirror is that knowledge, one `i32` the layer
/// reads through an `Int32Array` over it: the closed generation, or -1 (ask the
/// breaker). The call is then reported once, with the generation, through `reportIn`,
/// which rebuilds the permit from its parts: core judges it exactly as the permit
/// `try_acquire` would have given (a report from an older generation is discarded).
///
/// It stays exact only while every change of the breaker's state is made by a native
/// call of this thread that keeps the mirror up to date. So it is never on for a breaker
/// another thread may change (one in a `SharedArrayBuffer`, one attached to a `Fleet`,
/// whose agent may open it), nor for a timed breaker (its permit carries the instant of
/// acquisition); only `observe` (after the fast path's calls, which then emit the
/// change as a `stateChange` event) writes a generation; every other call that may
/// change the state (`tryAcquire` and its permits) writes -1, so the next `execute` asks
/// the breaker and observes what changed.
pub(crate) struct Mirror {
    /// The closed generation, or -1.
    cell: AtomicI32,
    /// Whether the mirror may show a generation.
    on: AtomicBool,
}

impl BreakerCore {
    /// Ask the breaker again on the next `execute`.
    #[inline]
    pub(crate) fn clear_mirror(&self) {
        self.mirror.cell.store(-1, Ordering::Relaxed);
    }

    /// Never show a generation again (another thread may change the state from now on).
    pub(crate) fn stop_mirror(&self) {
        self.mirror.on.store(false, Ordering::Relaxed);
        self.clear_mirror();
    }
}

/// What one JavaScript object holds: the guard, and what this thread last saw of it.
pub(crate) struct BreakerLocal {
    pub(crate) core: Arc<BreakerCore>,
    /// The fast path's parked permits.
    tokens: Tokens<BreakerPermit>,
    /// The stored state this object last saw (for `stateChange` events).
    seen: Cell<u8>,
    /// The fast path's last refusal.
    last: Cell<Option<BreakerRejected>>,
    /// The fast path's arguments, passed through memory.
    io: fast::Io,
}

impl fast::WithIo for BreakerLocal {
    fn io(&self) -> &fast::Io {
        &self.io
    }
}

impl Drop for BreakerLocal {
    /// Permits still parked (their calls never ended) go back to the guard.
    fn drop(&mut self) {
        for p in self.tokens.drain() {
            self.core.g.on_ignore(p);
        }
    }
}

impl BreakerLocal {
    /// The stored state, and whether it differs from what this object saw last (which
    /// it then sees, and the mirror shows).
    #[inline]
    fn observe(&self) -> (u8, bool) {
        let st = self.core.g.status();
        let s = st.state as u8;
        let changed = s != self.seen.get();
        if changed {
            self.seen.set(s);
        }
        let m = &self.core.mirror;
        let shown = if st.state == BreakerState::Closed
            && st.generation < MIRROR_LIMIT
            && m.on.load(Ordering::Relaxed)
        {
            st.generation as i32
        } else {
            -1
        };
        m.cell.store(shown, Ordering::Relaxed);
        (s, changed)
    }
}

/// The breaker a permit object goes back to.
pub(crate) struct BreakerRef(Arc<BreakerCore>);

impl Owner for BreakerRef {
    type Permit = BreakerPermit;
    fn give_back(&self, p: BreakerPermit) {
        self.0.g.on_ignore(p);
        self.0.clear_mirror();
    }
}

const CLASS: &str = "CircuitBreaker";

pub(crate) fn read_config(
    env: &Env,
    options: Option<Unknown<'_>>,
) -> Result<(CircuitBreakerConfig, u64)> {
    let mut o = Options::read(env, CLASS, options)?;
    let capacity = o.count(env, "capacity", 0, u64::MAX)?;
    let config = o.build(env, &schema::CIRCUIT_BREAKER, "")?;
    Ok((config, capacity))
}

pub(crate) fn state_name(s: BreakerState) -> &'static str {
    s.name()
}

pub(crate) fn rejection_error(env: &Env, r: &BreakerRejected, now: Nanos) -> Error {
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

/// A breaker's state word as an object.
pub(crate) fn status_object<'e>(env: &'e Env, s: &BreakerStatus) -> Result<Object<'e>> {
    let mut o = Object::new(env)?;
    o.set("state", s.state.name())?;
    o.set("generation", s.generation)?;
    o.set("probesIssued", s.probes_issued)?;
    o.set("probesPassed", s.probes_passed)?;
    o.set("consecutiveOpens", s.consecutive_opens)?;
    o.set("halfOpenAt", big(s.half_open_at))?;
    Ok(o)
}

/// A breaker's counters as an object, with its `state` now.
pub(crate) fn stats_object<'e>(
    env: &'e Env,
    s: &CircuitBreakerStats,
    state: BreakerState,
) -> Result<Object<'e>> {
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
    o.set("state", state_name(state))?;
    Ok(o)
}

// The fast path of the JavaScript layer (see `fast`).
//
// `acquire()`: a permit token (plus 2^52 if this object saw the state change), or -1
// (open) / -2 (half-open, probes out) / -3 (no permit slot); `_lastRejection()` tells
// more. `report(token, outcome)`: the stored state's number (closed 0, open 1, half-open
// 2) plus 2^52 if it changed; -1 if the token was reported before or never issued
// (nothing counted).
fast_fn!(
    fast_acquire,
    BreakerLocal,
    0,
    "CircuitBreaker acquire",
    |_env, l, _a| {
        // The clock is read only if the breaker's answer depends on time.
        Ok(match l.core.g.try_acquire(guards::clock::now) {
            Ok(p) => match l.tokens.insert(p) {
                Ok(t) => {
                    let (_, changed) = l.observe();
                    t + if changed { CHANGED } else { 0.0 }
                }
                Err(p) => {
                    l.core.g.on_ignore(p);
                    -3.0
                }
            },
            Err(r) => {
                l.last.set(Some(r));
                l.core.clear_mirror();
                if r.reason.name() == "open" {
                    -1.0
                } else {
                    -2.0
                }
            }
        })
    }
);

fast_fn!(
    fast_report,
    BreakerLocal,
    2,
    "CircuitBreaker report",
    |env, l, a| {
        let token = a.f64_io(env, 0, "token", &l.io)?;
        let outcome = outcome::of_number(env, a.whole_io(env, 1, "outcome", 255, &l.io)?)?;
        let Some(p) = l.tokens.take(token) else {
            return Ok(-1.0);
        };
        with_breaker!(&l.core.g, b => b.report(p, outcome, guards::clock::now));
        let (s, changed) = l.observe();
        Ok(f64::from(s) + if changed { CHANGED } else { 0.0 })
    }
);

// `reportIn(generation × 256 + outcome)`: report with outcome number `outcome` a call
// admitted without a permit while the mirror showed `generation` (see `Mirror`), as
// `report` does (one argument: one Node-API read); -1 for a timed breaker (nothing
// counted). Each such call must be reported once: the layer does.
fast_fn!(
    fast_report_in,
    BreakerLocal,
    1,
    "CircuitBreaker reportIn",
    |env, l, a| {
        let call = a.whole_io(env, 0, "call", MIRROR_LIMIT * 256 - 1, &l.io)?;
        let (generation, outcome) = (call >> 8, outcome::of_number(env, call & 0xff)?);
        if !l.core.untimed {
            return Ok(-1.0);
        }
        // The permit a closed, untimed breaker hands out in `generation`.
        let p = BreakerPermit::from_parts(CircuitBreakerPermitParts {
            acquired_at: Nanos::ZERO,
            generation,
            kind: guards::names::PermitKind::Call,
            probe_timeout: Nanos::ZERO,
        });
        with_breaker!(&l.core.g, b => b.report(p, outcome, guards::clock::now));
        let (s, changed) = l.observe();
        Ok(f64::from(s) + if changed { CHANGED } else { 0.0 })
    }
);

unsafe extern "C" fn release_core(
    _env: napi::sys::napi_env,
    _data: *mut c_void,
    hint: *mut c_void,
) {
    // SAFETY: `hint` is the `Arc` clone `mirror_array` leaked for this buffer, and this
    // finalizer runs once, when the buffer is collected.
    drop(unsafe { Arc::from_raw(hint as *const BreakerCore) });
}

/// An `Int32Array` over the mirror's cell (keeping the breaker alive), or `undefined`
/// where Node-API allows no buffer over outside memory (the layer then always asks).
fn mirror_array<'e>(env: &'e Env, core: &Arc<BreakerCore>) -> Result<Unknown<'e>> {
    let raw = env.raw();
    let hint = Arc::into_raw(Arc::clone(core)) as *mut c_void;
    let data = core.mirror.cell.as_ptr().cast::<c_void>();
    let mut buf = ptr::null_mut();
    // SAFETY: `data` points at 4 bytes inside the `BreakerCore` that `hint` keeps alive
    // until `release_core` runs, when the buffer is collected.
    let st = unsafe {
        napi::sys::napi_create_external_arraybuffer(
            raw,
            data,
            4,
            Some(release_core),
            hint,
            &mut buf,
        )
    };
    let mut out = ptr::null_mut();
    if st == napi::sys::Status::napi_ok {
        // SAFETY: `buf` is the live 4-byte buffer just created.
        let st = unsafe {
            napi::sys::napi_create_typedarray(
                raw,
                napi::sys::TypedarrayType::int32_array,
                1,
                buf,
                0,
                &mut out,
            )
        };
        if st != napi::sys::Status::napi_ok {
            return Err(Error::from_status(Status::GenericFailure));
        }
    } else {
        // SAFETY: no buffer owns `hint`: this clone is ours to drop.
        drop(unsafe { Arc::from_raw(hint as *const BreakerCore) });
        // SAFETY: valid env and out-pointer.
        unsafe { napi::sys::napi_get_undefined(raw, &mut out) };
    }
    // SAFETY: `out` is a live value of this env.
    Ok(unsafe { Unknown::from_raw_unchecked(raw, out) })
}

/// A circuit breaker: closed, open or half-open, judged on a count or time window of
/// outcomes (failure rate and slow-call rate), opening for a growing duration, then
/// letting a few probes through. Lock-free; one breaker may be shared by every caller of
/// a dependency, and by worker threads (`CircuitBreaker.shared`).
#[napi]
pub struct CircuitBreaker {
    pub(crate) l: Rc<BreakerLocal>,
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
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        shared: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let mem = crate::convert::shared_arg(&env, shared)?;
        let given = !args::absent(&options);
        let Placed { g, mem } =
            shared::place::<AnyBreaker>(&env, CLASS, mem, given, || read_config(&env, options))?;
        let s = g.status().state as u8;
        let untimed = g.config().slow_call_duration == Nanos::MAX;
        let mirror = Mirror {
            cell: AtomicI32::new(-1),
            on: AtomicBool::new(untimed && mem.is_none()),
        };
        Ok(CircuitBreaker {
            l: Rc::new(BreakerLocal {
                core: Arc::new(BreakerCore {
                    g,
                    _mem: mem,
                    untimed,
                    mirror,
                }),
                tokens: Tokens::new(),
                seen: Cell::new(s),
                last: Cell::new(None),
                io: fast::Io::new(),
            }),
        })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a breaker with `options`.
    #[napi(catch_unwind, ts_args_type = "options?: CircuitBreakerOptions")]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        shared::size_for::<AnyBreaker>(&env, CLASS, || read_config(&env, options))
    }

    /// The fast path's functions (`{ acquire, report, reportIn }`, bound to this breaker;
    /// `report` and `reportIn` called with no arguments read them from `io`) and `mirror` (an `Int32Array`: the closed generation `execute` may admit calls in
    /// without asking, or -1; see `Mirror`): for the JavaScript layer.
    #[napi(js_name = "_fast", catch_unwind, ts_return_type = "unknown")]
    pub fn fast<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let mut o = fast::functions_with_io(
            env,
            &self.l,
            &[
                ("acquire", fast_acquire),
                ("report", fast_report),
                ("reportIn", fast_report_in),
            ],
        )?;
        o.set_named_property("mirror", mirror_array(env, &self.l.core)?)?;
        Ok(o)
    }

    /// The stored state's number (closed 0, open 1, half-open 2) plus 2^52 if it differs
    /// from what this object saw last (which it then sees): for the layer's events.
    #[napi(js_name = "_sync", catch_unwind)]
    pub fn sync(&self) -> f64 {
        let (s, changed) = self.l.observe();
        f64::from(s) + if changed { CHANGED } else { 0.0 }
    }

    /// Ask to make a call at `now`: a permit to report exactly once, or a thrown
    /// `BreakerOpenError` (`code` `GUARDS_BREAKER_OPEN` or `GUARDS_BREAKER_HALF_OPEN_FULL`,
    /// with `retryAt` and `retryAfterMs`).
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn try_acquire(&self, env: Env, now: Option<Unknown<'_>>) -> Result<CircuitBreakerPermit> {
        let now = args::now(&env, now)?;
        let r = self.l.core.g.try_acquire(now);
        if r.is_ok() {
            self.l.observe();
        }
        // The permit object is reported apart from the fast path: ask the breaker again.
        self.l.core.clear_mirror();
        match r {
            Ok(p) => Ok(CircuitBreakerPermit {
                is_probe: p.is_probe(),
                probe_timeout: p.probe_timeout(),
                acquired_at: p.acquired_at(),
                generation: p.generation(),
                granted: Granted::new(BreakerRef(Arc::clone(&self.l.core)), p),
            }),
            Err(r) => Err(rejection_error(&env, &r, now)),
        }
    }

    /// The last refusal of this object's fast path, thrown as its error.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env) -> Result<()> {
        match self.l.last.get() {
            Some(r) => Err(rejection_error(&env, &r, guards::clock::now())),
            None => Ok(()),
        }
    }

    /// The state at `now`: `'closed'`, `'open'` or `'half_open'` (an open breaker whose
    /// open period has ended reports `'half_open'`).
    #[napi(
        catch_unwind,
        ts_args_type = "now?: bigint",
        ts_return_type = "'closed' | 'open' | 'half_open'"
    )]
    pub fn state(&self, env: Env, now: Option<Unknown<'_>>) -> Result<&'static str> {
        let now = args::now(&env, now)?;
        Ok(state_name(self.l.core.g.state(now)))
    }

    /// The state word: `{ state, generation, probesIssued, probesPassed,
    /// consecutiveOpens, halfOpenAt }` (`halfOpenAt` a bigint instant, 0n unless open).
    #[napi(catch_unwind, ts_return_type = "BreakerStatus")]
    pub fn status<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        status_object(env, &self.l.core.g.status())
    }

    /// What the window holds at `now`: `{ calls, failures, slow }`.
    #[napi(
        catch_unwind,
        ts_args_type = "now?: bigint",
        ts_return_type = "WindowCounts"
    )]
    pub fn window_counts<'e>(&self, env: &'e Env, now: Option<Unknown<'_>>) -> Result<Object<'e>> {
        let now = args::now(env, now)?;
        let w = self.l.core.g.window_counts(now);
        let mut o = Object::new(env)?;
        o.set("calls", num(w.calls))?;
        o.set("failures", num(w.failures))?;
        o.set("slow", num(w.slow))?;
        Ok(o)
    }

    /// Counters since it was built (relaxed snapshots, read without stopping traffic).
    #[napi(catch_unwind, ts_return_type = "CircuitBreakerStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let g = &self.l.core.g;
        stats_object(env, &g.stats(), g.state(guards::clock::now()))
    }

    /// The config it runs with (camelCase, durations in ms).
    #[napi(
        getter,
        catch_unwind,
        ts_return_type = "Required<CircuitBreakerOptions>"
    )]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let g = &self.l.core.g;
        let c = g.config();
        let mut o = config_object(env, &schema::CIRCUIT_BREAKER, &c)?;
        o.set("capacity", num(g.capacity() as u64))?;
        Ok(o)
    }

    /// Window cells allocated (a supported capacity at least the window's).
    #[napi(getter, catch_unwind)]
    pub fn capacity(&self) -> u32 {
        u32::try_from(self.l.core.g.capacity()).unwrap_or(u32::MAX)
    }

    /// Permits handed out by the fast path (`execute`) and not reported yet.
    #[napi(getter, catch_unwind)]
    pub fn outstanding(&self) -> f64 {
        num(self.l.tokens.outstanding())
    }
}

/// Permission to make one call through a `CircuitBreaker`: `report` how it ended exactly
/// once (a second report throws `GUARDS_PERMIT_ALREADY_REPORTED` and counts nothing). A
/// permit garbage-collected unreported is handed back without a verdict.
#[napi]
pub struct CircuitBreakerPermit {
    is_probe: bool,
    probe_timeout: Option<Nanos>,
    acquired_at: Nanos,
    generation: u32,
    granted: Granted<BreakerRef>,
}

#[napi]
impl CircuitBreakerPermit {
    /// Report how the call ended (`'success'`, `'timeout'`, ... see `Outcome`) at `now`.
    /// Returns the effect on the breaker (`'counted'`, `'opened'`, `'probe_passed'`,
    /// `'closed'`, `'reopened'`, `'discarded'`, `'ignored'`).
    #[napi(
        catch_unwind,
        ts_args_type = "outcome: Outcome, now?: bigint",
        ts_return_type = "'counted' | 'opened' | 'probe_passed' | 'closed' | 'reopened' | 'discarded' | 'ignored'"
    )]
    pub fn report(
        &self,
        env: Env,
        outcome: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<&'static str> {
        let outcome = args::outcome(&env, "outcome", &outcome)?;
        let now = args::now(&env, now)?;
        let p = self.granted.take().ok_or_else(|| {
            errors::permit(&env, guards::error::GuardsResult::PermitAlreadyReported)
        })?;
        let core = &self.granted.owner().0;
        let effect = with_breaker!(&core.g, b => b.report(p, outcome, now));
        core.clear_mirror();
        Ok(effect.name())
    }

    /// Whether this permit is a half-open probe.
    #[napi(getter, catch_unwind)]
    pub fn is_probe(&self) -> bool {
        self.is_probe
    }

    /// A probe's timeout in ms (what the call should wait at most), `null` for a call.
    #[napi(getter, catch_unwind)]
    pub fn probe_timeout_ms(&self) -> Option<f64> {
        self.probe_timeout.map(ms)
    }

    /// When it was granted (the `now` of `tryAcquire`).
    #[napi(getter, catch_unwind)]
    pub fn acquired_at(&self) -> BigInt {
        big(self.acquired_at)
    }

    /// The breaker's generation it was granted in (a report from an older generation is
    /// discarded).
    #[napi(getter, catch_unwind)]
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// Whether it has been reported (or given back).
    #[napi(getter, catch_unwind)]
    pub fn done(&self) -> bool {
        self.granted.done()
    }
}
