//! `Bulkhead`: a fixed cap on calls in flight.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::InPlace;
use guards::names::{Bulkhead as CoreBulkhead, BulkheadPermit, BulkheadRejected};
use guards::permit::{Granted, Owner};
use guards::schema;
use guards_core::bulkhead::BulkheadPermitParts;

use crate::args;
use crate::convert::{config_object, num, numbers, Options};
use crate::errors::{self, Details};
use crate::fast::{self, fast_fn};
use crate::shared::{self, Placed};
use crate::token::Tokens;

pub(crate) struct BulkheadCore {
    pub(crate) g: InPlace<CoreBulkhead>,
    _mem: Option<Uint8Array>,
}

/// What one JavaScript object holds.
pub(crate) struct BulkheadLocal {
    pub(crate) core: Arc<BulkheadCore>,
    /// The fast path's parked permits.
    tokens: Tokens<BulkheadPermit>,
    /// Permits held by `execute` by count (see `fast_acquire_counted`).
    counted: Cell<u64>,
    last: Cell<Option<BulkheadRejected>>,
}

impl Drop for BulkheadLocal {
    /// Permits still parked (their calls never ended) go back to the guard.
    fn drop(&mut self) {
        for p in self.tokens.drain() {
            self.core.g.release(p);
        }
        for _ in 0..self.counted.get() {
            self.core.g.release(counted_permit());
        }
    }
}

/// A permit `execute` holds by count: a bulkhead's permit is no data at all (its parts are
/// empty), so the one given back is rebuilt, not looked up.
fn counted_permit() -> BulkheadPermit {
    BulkheadPermit::from_parts(BulkheadPermitParts)
}

pub(crate) struct BulkheadRef(Arc<BulkheadCore>);

impl Owner for BulkheadRef {
    type Permit = BulkheadPermit;
    fn give_back(&self, p: BulkheadPermit) {
        self.0.g.release(p);
    }
}

const CLASS: &str = "Bulkhead";

pub(crate) fn rejection_error(env: &Env, r: &BulkheadRejected) -> Error {
    errors::throw(
        env,
        "BULKHEAD_FULL",
        &format!(
            "the bulkhead is full ({} of {} calls in flight)",
            r.in_flight, r.max_concurrent
        ),
        Details {
            reason: Some("bulkhead_full"),
            numbers: vec![
                ("inFlight", num(r.in_flight)),
                ("maxConcurrent", num(r.max_concurrent)),
            ],
            ..Details::default()
        },
    )
}

pub(crate) fn read_config(
    env: &Env,
    options: Option<Unknown<'_>>,
) -> Result<(guards::names::BulkheadConfig, u64)> {
    let c = Options::read(env, CLASS, options)?.build(env, &schema::BULKHEAD, "")?;
    Ok((c, 0))
}

/// `setMaxConcurrent(maxConcurrent)` on `g`: the cap it replaced.
pub(crate) fn set_max_concurrent(env: &Env, g: &CoreBulkhead, v: &Unknown<'_>) -> Result<f64> {
    let cap = args::whole(env, "maxConcurrent", v, u64::from(u32::MAX))?;
    g.set_max_concurrent(cap).map(num).map_err(|_| {
        errors::range_error(
            env,
            "maxConcurrent",
            "`maxConcurrent` must be a whole number in 0..=4294967295",
        )
    })
}

// The fast path (see `fast`): `acquire()` a token, or -1 when full (-3: no permit slot);
// `release(token)` true, or false if it was released before (nothing done).
fast_fn!(
    fast_acquire,
    BulkheadLocal,
    0,
    "Bulkhead acquire",
    |_env, l, _a| {
        Ok(match l.core.g.try_acquire() {
            Ok(p) => match l.tokens.insert(p) {
                Ok(t) => t,
                Err(p) => {
                    l.core.g.release(p);
                    -3.0
                }
            },
            Err(r) => {
                l.last.set(Some(r));
                -1.0
            }
        })
    }
);

fast_fn!(
    fast_release,
    BulkheadLocal,
    1,
    "Bulkhead release",
    |env, l, a| {
        let token = a.f64(env, 0, "token")?;
        Ok(match l.tokens.take(token) {
            Some(p) => {
                l.core.g.release(p);
                true
            }
            None => false,
        })
    }
);

// `acquireCounted()` 0, or -1 when full; `releaseCounted()` true, or false when this object
// holds no counted permit (nothing done). For `execute`, which releases each permit it
// took exactly once, in the same JavaScript code: a permit held by count needs no token,
// so `execute`'s handlers need no per-call state and are made once per object. (A token
// says which permit is given back; a bulkhead's permits are all alike, so the count says
// all there is, and a release with none held is refused as a token reported twice is.)
fast_fn!(
    fast_acquire_counted,
    BulkheadLocal,
    0,
    "Bulkhead acquireCounted",
    |_env, l, _a| {
        Ok(match l.core.g.try_acquire() {
            Ok(p) => {
                // The permit is no data: the count stands for it.
                let BulkheadPermitParts = p.into_parts();
                l.counted.set(l.counted.get() + 1);
                0.0
            }
            Err(r) => {
                l.last.set(Some(r));
                -1.0
            }
        })
    }
);

fast_fn!(
    fast_release_counted,
    BulkheadLocal,
    0,
    "Bulkhead releaseCounted",
    |_env, l, _a| {
        let n = l.counted.get();
        if n == 0 {
            return Ok(false);
        }
        l.counted.set(n - 1);
        l.core.g.release(counted_permit());
        Ok(true)
    }
);

/// A bulkhead: at most `maxConcurrent` calls in flight at once; the next one is refused at
/// once (`BulkheadFullError`), never queued. Lock-free (one atomic word); shareable by
/// worker threads (`Bulkhead.shared`).
#[napi]
pub struct Bulkhead {
    pub(crate) l: Rc<BulkheadLocal>,
}

#[napi]
impl Bulkhead {
    /// A bulkhead with `options` (`maxConcurrent`, default core's). With `shared`: built in
    /// or attached to a `SharedArrayBuffer` (see `CircuitBreaker`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: BulkheadOptions, shared?: Uint8Array"
    )]
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        shared: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let mem = crate::convert::shared_arg(&env, shared)?;
        let given = !args::absent(&options);
        let Placed { g, mem } =
            shared::place::<InPlace<CoreBulkhead>>(&env, CLASS, mem, given, || {
                read_config(&env, options)
            })?;
        Ok(Bulkhead {
            l: Rc::new(BulkheadLocal {
                core: Arc::new(BulkheadCore { g, _mem: mem }),
                tokens: Tokens::new(),
                counted: Cell::new(0),
                last: Cell::new(None),
            }),
        })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a bulkhead.
    #[napi(catch_unwind, ts_args_type = "options?: BulkheadOptions")]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        shared::size_for::<InPlace<CoreBulkhead>>(&env, CLASS, || read_config(&env, options))
    }

    /// Size a bulkhead with Little's law: `{ maxConcurrent: ceil(ratePerSec × p99 ×
    /// headroom) }`, for the dependency's healthy call rate from this instance
    /// (`ratePerSec`, > 0 up to 1e9), its healthy P99 latency (`p99`, ms or exact ns as a
    /// bigint, up to an hour) and a safety factor (`headroom`, 1..=100; 2 is usual). A
    /// value out of range throws a `RangeError` naming it.
    #[napi(
        catch_unwind,
        ts_args_type = "ratePerSec: number, p99: number | bigint, headroom: number",
        ts_return_type = "BulkheadSize"
    )]
    pub fn from_littles_law<'e>(
        env: &'e Env,
        rate_per_sec: Unknown<'_>,
        p99: Unknown<'_>,
        headroom: Unknown<'_>,
    ) -> Result<Object<'e>> {
        let rate = args::number(env, "ratePerSec", &rate_per_sec)?;
        let p99 = args::duration(env, "p99", &p99)?;
        let headroom = args::number(env, "headroom", &headroom)?;
        let c =
            guards::names::BulkheadConfig::from_littles_law(rate, p99, headroom).map_err(|e| {
                let name = match e.field() {
                    "rate_per_sec" => "ratePerSec",
                    "max_concurrent" => "maxConcurrent",
                    other => other,
                };
                errors::config_range_error(
                    env,
                    name,
                    e.kind(),
                    &format!(
                        "Bulkhead.fromLittlesLaw: invalid `{name}`: {} (expected {})",
                        errors::describe(e.kind()),
                        e.expected()
                    ),
                )
            })?;
        numbers(env, &[("maxConcurrent", num(c.max_concurrent))])
    }

    /// The fast path's functions (`{ acquire, release, acquireCounted, releaseCounted }`,
    /// bound to this bulkhead): for the JavaScript layer.
    #[napi(js_name = "_fast", catch_unwind, ts_return_type = "unknown")]
    pub fn fast<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        fast::functions(
            env,
            &self.l,
            &[
                ("acquire", fast_acquire),
                ("release", fast_release),
                ("acquireCounted", fast_acquire_counted),
                ("releaseCounted", fast_release_counted),
            ],
        )
    }

    /// Take a slot: a permit to release exactly once, or a thrown `BulkheadFullError`.
    #[napi(catch_unwind)]
    pub fn try_acquire(&self, env: Env) -> Result<BulkheadPermitHandle> {
        match self.l.core.g.try_acquire() {
            Ok(p) => Ok(BulkheadPermitHandle {
                granted: Granted::new(BulkheadRef(Arc::clone(&self.l.core)), p),
            }),
            Err(r) => Err(rejection_error(&env, &r)),
        }
    }

    /// The last refusal of this object's fast path, thrown as its error.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env) -> Result<()> {
        match self.l.last.get() {
            Some(r) => Err(rejection_error(&env, &r)),
            None => Ok(()),
        }
    }

    /// Calls in flight.
    #[napi(getter, catch_unwind)]
    pub fn in_flight(&self) -> f64 {
        num(self.l.core.g.in_flight())
    }

    /// Free slots.
    #[napi(getter, catch_unwind)]
    pub fn available(&self) -> f64 {
        num(self.l.core.g.available())
    }

    /// The cap in force (`config.maxConcurrent` unless `setMaxConcurrent` or a `Fleet`
    /// changed it).
    #[napi(getter, catch_unwind)]
    pub fn max_concurrent(&self) -> f64 {
        num(self.l.core.g.max_concurrent())
    }

    /// Change the cap at run time (`0..=2^32 − 1`; 0 admits nothing), keeping the calls in
    /// flight: a cap lowered below them admits nothing until they drain. Returns the cap it
    /// replaced. A bulkhead attached to a `Fleet` has its cap set by the fleet.
    #[napi(catch_unwind, ts_args_type = "maxConcurrent: number")]
    pub fn set_max_concurrent(&self, env: Env, max_concurrent: Unknown<'_>) -> Result<f64> {
        set_max_concurrent(&env, &self.l.core.g, &max_concurrent)
    }

    /// `{ acquired, rejected, released, inFlight, maxConcurrent }`.
    #[napi(catch_unwind, ts_return_type = "BulkheadStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let g = &self.l.core.g;
        let s = g.stats();
        numbers(
            env,
            &[
                ("acquired", num(s.acquired)),
                ("rejected", num(s.rejected)),
                ("released", num(s.released)),
                ("inFlight", num(s.in_flight)),
                ("maxConcurrent", num(g.max_concurrent())),
            ],
        )
    }

    /// The config (camelCase).
    #[napi(getter, catch_unwind, ts_return_type = "Required<BulkheadOptions>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        config_object(env, &schema::BULKHEAD, self.l.core.g.config())
    }
}

/// A slot of a `Bulkhead`: `release()` it exactly once (a permit garbage-collected
/// unreleased gives its slot back).
#[napi(js_name = "BulkheadPermit")]
pub struct BulkheadPermitHandle {
    granted: Granted<BulkheadRef>,
}

#[napi]
impl BulkheadPermitHandle {
    /// Give the slot back; `false` if it was given back before.
    #[napi(catch_unwind)]
    pub fn release(&self) -> bool {
        self.granted.give_back()
    }

    /// Whether it has been released.
    #[napi(getter, catch_unwind)]
    pub fn done(&self) -> bool {
        self.granted.done()
    }
}
