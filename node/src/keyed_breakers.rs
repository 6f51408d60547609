//! `KeyedBreakers`: one circuit breaker per key (an operation, a host), in a fixed-size
//! lock-free set.

use std::cell::Cell;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::AnyKeyedBreakers;
use guards::permit::{Granted, Owner, PermitSlots};
use guards::schema;
use guards::with_keyed_breakers;
use guards_core::circuit_breaker::{key_of, KeyedBreakersPermit, KeyedBreakersRejected};

use crate::convert::{config_object, ms, now_of, num, numbers, Options};
use crate::errors::{self, config_failure, Details};
use crate::outcome;
use crate::token::{self, CHANGED};

pub(crate) struct KeyedCore {
    g: AnyKeyedBreakers,
    slots: PermitSlots<KeyedBreakersPermit>,
}

pub(crate) struct KeyedRef(Arc<KeyedCore>);

impl Owner for KeyedRef {
    type Permit = KeyedBreakersPermit;
    fn give_back(&self, p: KeyedBreakersPermit) {
        with_keyed_breakers!(&self.0.g, k => k.on_ignore(p));
    }
}

const CLASS: &str = "KeyedBreakers";

fn rejection_error(
    env: &Env,
    key: &str,
    r: &KeyedBreakersRejected,
    now: guards::names::Nanos,
) -> Error {
    let reason = r.reason.name();
    let (kind, what) = match reason {
        "open" => (
            "BREAKER_OPEN",
            format!("the circuit breaker for {key:?} is open"),
        ),
        "half_open_full" => (
            "BREAKER_HALF_OPEN_FULL",
            format!("the circuit breaker for {key:?} is half-open and every probe is out"),
        ),
        _ => (
            "BREAKERS_FULL",
            format!("no room for a breaker for {key:?}: every slot is taken"),
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

/// A set of circuit breakers, one per key (string), each built from the same options;
/// `slots` keys at most (rounded up to 4, 16, 64 or 256). A key that finds the set full is
/// refused (`GUARDS_BREAKERS_FULL`).
#[napi]
pub struct KeyedBreakers {
    core: Arc<KeyedCore>,
    last: Cell<Option<KeyedBreakersRejected>>,
}

#[napi]
impl KeyedBreakers {
    /// A set with `options`: the breaker options, and `slots` (default 64).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: CircuitBreakerOptions & { slots?: number }"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> Result<Self> {
        let mut o = Options::read(&env, CLASS, options)?;
        let slots = o.count(&env, "slots", 64, 256)?;
        let c = o.build(&env, &schema::CIRCUIT_BREAKER, "")?;
        let g = AnyKeyedBreakers::new(c, slots).map_err(|f| config_failure(&env, CLASS, "", &f))?;
        Ok(KeyedBreakers {
            core: Arc::new(KeyedCore {
                g,
                slots: token::slots(),
            }),
            last: Cell::new(None),
        })
    }

    /// A permit for a call on `key` at `now`, or a thrown `BreakerOpenError`.
    #[napi(catch_unwind)]
    pub fn try_acquire(
        &self,
        env: Env,
        key: String,
        now: Option<BigInt>,
    ) -> Result<KeyedBreakersPermitHandle> {
        let now = now_of(&env, now)?;
        let r = with_keyed_breakers!(&self.core.g, k => k.try_acquire(key_of(key.as_bytes()), now));
        match r {
            Ok(p) => Ok(KeyedBreakersPermitHandle {
                granted: Granted::new(KeyedRef(Arc::clone(&self.core)), p),
            }),
            Err(r) => Err(rejection_error(&env, &key, &r, now)),
        }
    }

    /// Fast path: a token (plus 2^52 if a breaker of the set changed state), or -1
    /// (open), -2 (half-open full), -4 (set full).
    #[napi(js_name = "_acquire")]
    pub fn fast_acquire(&self, key: String) -> f64 {
        let now = guards::clock::now();
        let k = key_of(key.as_bytes());
        let before = self.state_word(k);
        let r = with_keyed_breakers!(&self.core.g, ks => ks.try_acquire(k, now));
        match r {
            Ok(p) => match self.core.slots.insert(p) {
                Ok(t) => {
                    token::pack(t)
                        + if self.state_word(k) != before {
                            CHANGED
                        } else {
                            0.0
                        }
                }
                Err((p, _)) => {
                    with_keyed_breakers!(&self.core.g, k => k.on_ignore(p));
                    -3.0
                }
            },
            Err(r) => {
                self.last.set(Some(r));
                match r.reason.name() {
                    "open" => -1.0,
                    "half_open_full" => -2.0,
                    _ => -4.0,
                }
            }
        }
    }

    /// Fast path: report `token` with outcome number `outcome`: 1 (plus 2^52 if a breaker
    /// changed state), or -1 if reported before.
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
        let k = p.key();
        let before = self.state_word(k);
        with_keyed_breakers!(&self.core.g, ks => ks.report(p, outcome, now));
        Ok(1.0
            + if self.state_word(k) != before {
                CHANGED
            } else {
                0.0
            })
    }

    /// The last refusal of this thread's fast path for `key`, thrown as its error.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env, key: String) -> Result<()> {
        match self.last.get() {
            Some(r) => Err(rejection_error(&env, &key, &r, guards::clock::now())),
            None => Ok(()),
        }
    }

    /// The state of `key`'s breaker at `now` (`'closed'` for a key not seen yet).
    #[napi(catch_unwind, ts_return_type = "'closed' | 'open' | 'half_open'")]
    pub fn state(&self, env: Env, key: String, now: Option<BigInt>) -> Result<&'static str> {
        let now = now_of(&env, now)?;
        let k = key_of(key.as_bytes());
        Ok(
            with_keyed_breakers!(&self.core.g, ks => ks.get(k).map_or("closed", |b| b.state(now).name())),
        )
    }

    /// `{ entries, full, open }`: keys held, refusals for lack of a slot, breakers open.
    #[napi(
        catch_unwind,
        ts_return_type = "{ entries: number; full: number; open: number }"
    )]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = with_keyed_breakers!(&self.core.g, k => k.stats());
        let open = self.count_open();
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
        let c = with_keyed_breakers!(&self.core.g, k => *k.config());
        let mut o = config_object(env, &schema::CIRCUIT_BREAKER, &c)?;
        o.set("slots", num(self.core.g.capacity() as u64))?;
        Ok(o)
    }
}

impl KeyedBreakers {
    fn count_open(&self) -> u64 {
        with_keyed_breakers!(&self.core.g, k => k
            .iter()
            .filter(|(_, b)| b.status().state != guards::names::BreakerState::Closed)
            .count() as u64)
    }

    /// The stored state of `key`'s breaker (255: no breaker for it yet).
    fn state_word(&self, key: u64) -> u8 {
        with_keyed_breakers!(&self.core.g, ks => ks.get(key).map_or(255, |b| b.status().state as u8))
    }
}

/// A permit of a `KeyedBreakers` set: `report` how the call ended exactly once.
#[napi(js_name = "KeyedBreakersPermit")]
pub struct KeyedBreakersPermitHandle {
    granted: Granted<KeyedRef>,
}

#[napi]
impl KeyedBreakersPermitHandle {
    /// Report how the call ended at `now`; returns the effect on the key's breaker.
    #[napi(catch_unwind, ts_args_type = "outcome: Outcome, now?: bigint")]
    pub fn report(&self, env: Env, outcome: String, now: Option<BigInt>) -> Result<&'static str> {
        let outcome = outcome::parse(&env, "outcome", &outcome)?;
        let now = now_of(&env, now)?;
        let p = self.granted.take().ok_or_else(|| {
            errors::permit(&env, guards::error::GuardsResult::PermitAlreadyReported)
        })?;
        Ok(with_keyed_breakers!(&self.granted.owner().0.g, k => k.report(p, outcome, now)).name())
    }

    /// Whether it has been reported.
    #[napi(getter)]
    pub fn done(&self) -> bool {
        self.granted.done()
    }
}
