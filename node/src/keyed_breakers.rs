//! `KeyedBreakers`: one circuit breaker per key (an operation, a host), in a fixed-size
//! lock-free set.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::ValueType;
use napi_derive::napi;

use guards::handle::AnyKeyedBreakers;
use guards::names::{CircuitBreakerConfig, Nanos};
use guards::permit::{Granted, Owner};
use guards::schema;
use guards::with_keyed_breakers;
use guards_core::circuit_breaker::{key_of, KeyedBreakersPermit, KeyedBreakersRejected};

use crate::args;
use crate::convert::{config_object, ms, num, numbers, Options};
use crate::errors::{self, range_error, type_error, Details};
use crate::fast::{self, fast_fn};
use crate::outcome;
use crate::shared::{self, Placed};
use crate::token::{Tokens, CHANGED};

pub(crate) struct KeyedCore {
    g: AnyKeyedBreakers,
    _mem: Option<Uint8Array>,
}

/// What one JavaScript object holds: the set, and the state of each key as this object
/// last saw it (for `stateChange` events).
pub(crate) struct KeyedLocal {
    core: Arc<KeyedCore>,
    /// The fast path's parked permits.
    tokens: Tokens<KeyedBreakersPermit>,
    seen: RefCell<HashMap<u64, u8>>,
    last: Cell<Option<KeyedBreakersRejected>>,
}

impl Drop for KeyedLocal {
    /// Permits still parked (their calls never ended) go back to the guard.
    fn drop(&mut self) {
        for p in self.tokens.drain() {
            with_keyed_breakers!(&self.core.g, k => k.on_ignore(p));
        }
    }
}

impl KeyedLocal {
    /// The stored state of `key`'s breaker (255: none yet), and whether it differs from
    /// what this object saw last.
    fn observe(&self, key: u64) -> bool {
        let s = with_keyed_breakers!(&self.core.g, ks => ks.get(key).map_or(255, |b| b.status().state as u8));
        let mut seen = self.seen.borrow_mut();
        let before = seen.insert(key, s).unwrap_or(0);
        // A key seen for the first time starts closed, like every breaker.
        before != s && !(before == 0 && s == 255)
    }
}

pub(crate) struct KeyedRef(Arc<KeyedCore>);

impl Owner for KeyedRef {
    type Permit = KeyedBreakersPermit;
    fn give_back(&self, p: KeyedBreakersPermit) {
        with_keyed_breakers!(&self.0.g, k => k.on_ignore(p));
    }
}

const CLASS: &str = "KeyedBreakers";

pub(crate) fn read_config(
    env: &Env,
    options: Option<Unknown<'_>>,
) -> Result<(CircuitBreakerConfig, u64)> {
    let mut o = Options::read(env, CLASS, options)?;
    let slots = o.count(env, "slots", 64, 256)?;
    if slots == 0 {
        return Err(range_error(
            env,
            "slots",
            "KeyedBreakers: invalid option `slots`: must not be zero (expected 1..=256 keys)",
        ));
    }
    let c = o.build(env, &schema::CIRCUIT_BREAKER, "")?;
    Ok((c, slots))
}

pub(crate) fn rejection_error(
    env: &Env,
    key: &str,
    r: &KeyedBreakersRejected,
    now: Nanos,
) -> Error {
    let reason = r.reason.name();
    let (kind, what) = match reason {
        "open" => (
            "BREAKER_OPEN",
            format!("the circuit breaker for {key} is open"),
        ),
        "half_open_full" => (
            "BREAKER_HALF_OPEN_FULL",
            format!("the circuit breaker for {key} is half-open and every probe is out"),
        ),
        _ => (
            "BREAKERS_FULL",
            format!("no room for a breaker for {key}: every slot is taken"),
        ),
    };
    let after = ms(r.retry_after(now));
    errors::throw(
        env,
        kind,
        &format!("{what}; retry in {after} ms"),
        Details {
            retry_at: Some(r.retry_at.0),
            reason: Some(reason),
            numbers: vec![("retryAfterMs", after)],
            ..Details::default()
        },
    )
}

/// A key argument: a string (hashed with `keyOf`) or a bigint (a key already).
pub(crate) fn key_arg(env: &Env, v: &Unknown<'_>) -> Result<(u64, String)> {
    match v.get_type()? {
        ValueType::String => {
            let s = args::string(env, "key", v)?;
            Ok((key_of(s.as_bytes()), format!("{s:?}")))
        }
        ValueType::BigInt => {
            let k = args::bigint_u64(v)
                .ok_or_else(|| range_error(env, "key", "`key` as a bigint must be in 0..2^64"))?;
            Ok((k, format!("key {k:#018x}")))
        }
        _ => Err(type_error(
            env,
            "key",
            &format!(
                "`key` must be a string (or a bigint key from keyOf), not {}",
                args::what(v)
            ),
        )),
    }
}

// The fast path (see `fast`): `acquire(key)` a token (plus 2^52 if this object saw the
// key's breaker change state), or -1 (open), -2 (half-open full), -4 (set full), -3 (no
// permit slot); `report(token, outcome)` 1 (plus 2^52 on a change), or -1 if reported
// before.
fast_fn!(
    fast_acquire,
    KeyedLocal,
    1,
    "KeyedBreakers acquire",
    |env, l, a| {
        let mut buf = [0u8; 256];
        let mut heap = Vec::new();
        let k = key_of(a.str_bytes(env, 0, "key", &mut buf, &mut heap)?);
        // The clock is read only if the breaker's answer depends on time.
        let r = with_keyed_breakers!(&l.core.g, ks => ks.try_acquire(k, guards::clock::now));
        Ok(match r {
            Ok(p) => match l.tokens.insert(p) {
                Ok(t) => t + if l.observe(k) { CHANGED } else { 0.0 },
                Err(p) => {
                    with_keyed_breakers!(&l.core.g, ks => ks.on_ignore(p));
                    -3.0
                }
            },
            Err(r) => {
                l.last.set(Some(r));
                match r.reason.name() {
                    "open" => -1.0,
                    "half_open_full" => -2.0,
                    _ => -4.0,
                }
            }
        })
    }
);

fast_fn!(
    fast_report,
    KeyedLocal,
    2,
    "KeyedBreakers report",
    |env, l, a| {
        let token = a.f64(env, 0, "token")?;
        let outcome = outcome::of_number(env, a.whole(env, 1, "outcome", 255)?)?;
        let Some(p) = l.tokens.take(token) else {
            return Ok(-1.0);
        };
        let k = p.key();
        with_keyed_breakers!(&l.core.g, ks => ks.report(p, outcome, guards::clock::now));
        Ok(1.0 + if l.observe(k) { CHANGED } else { 0.0 })
    }
);

/// A set of circuit breakers, one per key (a string, or a bigint key from `keyOf`), each
/// built from the same options; `slots` keys at most (rounded up to 4, 16, 64 or 256). A
/// key that finds the set full is refused (`GUARDS_BREAKERS_FULL`). Lock-free; shareable
/// by worker threads (`KeyedBreakers.shared`).
#[napi]
pub struct KeyedBreakers {
    l: Rc<KeyedLocal>,
}

#[napi]
impl KeyedBreakers {
    /// A set with `options`: the breaker options, and `slots` (default 64). With `shared`:
    /// built in or attached to a `SharedArrayBuffer` (see `CircuitBreaker`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: KeyedBreakersOptions, shared?: Uint8Array"
    )]
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        shared: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let mem = crate::convert::shared_arg(&env, shared)?;
        let given = !args::absent(&options);
        let Placed { g, mem } = shared::place::<AnyKeyedBreakers>(&env, CLASS, mem, given, || {
            read_config(&env, options)
        })?;
        Ok(KeyedBreakers {
            l: Rc::new(KeyedLocal {
                core: Arc::new(KeyedCore { g, _mem: mem }),
                tokens: Tokens::new(),
                seen: RefCell::new(HashMap::new()),
                last: Cell::new(None),
            }),
        })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a set with `options`.
    #[napi(catch_unwind, ts_args_type = "options?: KeyedBreakersOptions")]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        shared::size_for::<AnyKeyedBreakers>(&env, CLASS, || read_config(&env, options))
    }

    /// The 64-bit key of `name` (FNV-1a of its UTF-8 bytes), as every binding computes it.
    #[napi(catch_unwind, ts_args_type = "name: string")]
    pub fn key_of(env: Env, name: Unknown<'_>) -> Result<BigInt> {
        let s = args::string(&env, "name", &name)?;
        Ok(BigInt::from(key_of(s.as_bytes())))
    }

    /// The fast path's functions (`{ acquire, report }`): for the JavaScript layer.
    #[napi(js_name = "_fast", catch_unwind, ts_return_type = "unknown")]
    pub fn fast<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        fast::functions(
            env,
            &self.l,
            &[("acquire", fast_acquire), ("report", fast_report)],
        )
    }

    /// The keys whose breaker changed state since this object last looked, each with its
    /// stored state: `[[key, state], ...]` (for the layer's events across threads).
    #[napi(
        js_name = "_changes",
        catch_unwind,
        ts_return_type = "Array<[bigint, 'closed' | 'open' | 'half_open']>"
    )]
    pub fn changes(&self) -> Vec<(BigInt, &'static str)> {
        let now_states: Vec<(u64, u8, &'static str)> = with_keyed_breakers!(&self.l.core.g, ks => ks
            .iter()
            .map(|(k, b)| {
                let s = b.status().state;
                (k, s as u8, s.name())
            })
            .collect());
        let mut seen = self.l.seen.borrow_mut();
        let mut out = Vec::new();
        for (k, s, name) in now_states {
            let before = seen.insert(k, s).unwrap_or(0);
            if before != s {
                out.push((BigInt::from(k), name));
            }
        }
        out
    }

    /// A permit for a call on `key` at `now`, or a thrown `BreakerOpenError`
    /// (`BreakersFullError` when the set has no room for a new key).
    #[napi(catch_unwind, ts_args_type = "key: string | bigint, now?: bigint")]
    pub fn try_acquire(
        &self,
        env: Env,
        key: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<KeyedBreakersPermitHandle> {
        let (k, shown) = key_arg(&env, &key)?;
        let now = args::now(&env, now)?;
        let r = with_keyed_breakers!(&self.l.core.g, ks => ks.try_acquire(k, now));
        match r {
            Ok(p) => {
                let (generation, probe_timeout) =
                    (p.permit().generation(), p.permit().probe_timeout());
                self.l.observe(k);
                Ok(KeyedBreakersPermitHandle {
                    generation,
                    probe_timeout,
                    granted: Granted::new(KeyedRef(Arc::clone(&self.l.core)), p),
                })
            }
            Err(r) => Err(rejection_error(&env, &shown, &r, now)),
        }
    }

    /// The last refusal of this object's fast path, for `key`, thrown as its error.
    #[napi(
        catch_unwind,
        js_name = "_lastRejection",
        ts_args_type = "key: string | bigint"
    )]
    pub fn last_rejection(&self, env: Env, key: Unknown<'_>) -> Result<()> {
        let (_, shown) = key_arg(&env, &key)?;
        match self.l.last.get() {
            Some(r) => Err(rejection_error(&env, &shown, &r, guards::clock::now())),
            None => Ok(()),
        }
    }

    /// Make room for `key`'s breaker (closed) if it has none: whether it has one now
    /// (`false`: the set is full).
    #[napi(catch_unwind, ts_args_type = "key: string | bigint")]
    pub fn insert(&self, env: Env, key: Unknown<'_>) -> Result<bool> {
        let (k, _) = key_arg(&env, &key)?;
        Ok(with_keyed_breakers!(&self.l.core.g, ks => ks.get_or_insert(k).is_ok()))
    }

    /// The state of `key`'s breaker at `now` (`'closed'` for a key not seen yet).
    #[napi(
        catch_unwind,
        ts_args_type = "key: string | bigint, now?: bigint",
        ts_return_type = "'closed' | 'open' | 'half_open'"
    )]
    pub fn state(
        &self,
        env: Env,
        key: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<&'static str> {
        let (k, _) = key_arg(&env, &key)?;
        let now = args::now(&env, now)?;
        Ok(
            with_keyed_breakers!(&self.l.core.g, ks => ks.get(k).map_or("closed", |b| b.state(now).name())),
        )
    }

    /// `key`'s breaker: its `{ state, generation, probesIssued, probesPassed,
    /// consecutiveOpens, halfOpenAt }`, `null` for a key not seen yet.
    #[napi(
        catch_unwind,
        ts_args_type = "key: string | bigint",
        ts_return_type = "BreakerStatus | null"
    )]
    pub fn status<'e>(&self, env: &'e Env, key: Unknown<'_>) -> Result<Option<Object<'e>>> {
        let (k, _) = key_arg(env, &key)?;
        let s = with_keyed_breakers!(&self.l.core.g, ks => ks.get(k).map(|b| b.status()));
        s.map(|s| crate::circuit_breaker::status_object(env, &s))
            .transpose()
    }

    /// `key`'s breaker's window at `now`: `{ calls, failures, slow }` (zeros for a key not
    /// seen yet).
    #[napi(
        catch_unwind,
        ts_args_type = "key: string | bigint, now?: bigint",
        ts_return_type = "WindowCounts"
    )]
    pub fn window_counts<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<Object<'e>> {
        let (k, _) = key_arg(env, &key)?;
        let now = args::now(env, now)?;
        let w = with_keyed_breakers!(&self.l.core.g, ks => ks.get(k).map(|b| b.window_counts(now)));
        let (calls, failures, slow) = w.map_or((0, 0, 0), |w| (w.calls, w.failures, w.slow));
        numbers(
            env,
            &[
                ("calls", num(calls)),
                ("failures", num(failures)),
                ("slow", num(slow)),
            ],
        )
    }

    /// `key`'s breaker's counters (`null` for a key not seen yet).
    #[napi(
        catch_unwind,
        ts_args_type = "key: string | bigint",
        ts_return_type = "CircuitBreakerStats | null"
    )]
    pub fn breaker_stats<'e>(&self, env: &'e Env, key: Unknown<'_>) -> Result<Option<Object<'e>>> {
        let (k, _) = key_arg(env, &key)?;
        let now = guards::clock::now();
        let s = with_keyed_breakers!(&self.l.core.g, ks => ks.get(k).map(|b| (b.stats(), b.state(now))));
        s.map(|(s, st)| crate::circuit_breaker::stats_object(env, &s, st))
            .transpose()
    }

    /// `{ entries, full, open }`: keys held, refusals for lack of a slot, breakers not
    /// closed.
    #[napi(catch_unwind, ts_return_type = "KeyedBreakersStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = with_keyed_breakers!(&self.l.core.g, k => k.stats());
        let open = with_keyed_breakers!(&self.l.core.g, k => k
            .iter()
            .filter(|(_, b)| b.status().state != guards::names::BreakerState::Closed)
            .count() as u64);
        numbers(
            env,
            &[
                ("entries", num(s.entries)),
                ("full", num(s.full)),
                ("open", num(open)),
            ],
        )
    }

    /// The breaker options (camelCase, ms) and `slots`.
    #[napi(getter, catch_unwind, ts_return_type = "Record<string, unknown>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let c = with_keyed_breakers!(&self.l.core.g, k => *k.config());
        let mut o = config_object(env, &schema::CIRCUIT_BREAKER, &c)?;
        o.set("slots", num(self.l.core.g.capacity() as u64))?;
        Ok(o)
    }
}

/// A permit of a `KeyedBreakers` set: `report` how the call ended exactly once.
#[napi(js_name = "KeyedBreakersPermit")]
pub struct KeyedBreakersPermitHandle {
    generation: u32,
    probe_timeout: Option<Nanos>,
    granted: Granted<KeyedRef>,
}

#[napi]
impl KeyedBreakersPermitHandle {
    /// Report how the call ended at `now`; returns the effect on the key's breaker.
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
        Ok(with_keyed_breakers!(&self.granted.owner().0.g, k => k.report(p, outcome, now)).name())
    }

    /// Whether this permit is a half-open probe.
    #[napi(getter, catch_unwind)]
    pub fn is_probe(&self) -> bool {
        self.probe_timeout.is_some()
    }

    /// A probe's timeout in ms, `null` for a call.
    #[napi(getter, catch_unwind)]
    pub fn probe_timeout_ms(&self) -> Option<f64> {
        self.probe_timeout.map(ms)
    }

    /// The key's breaker generation it was granted in.
    #[napi(getter, catch_unwind)]
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// Whether it has been reported.
    #[napi(getter, catch_unwind)]
    pub fn done(&self) -> bool {
        self.granted.done()
    }
}
