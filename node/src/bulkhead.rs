//! `Bulkhead`: a fixed cap on calls in flight.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::InPlace;
use guards::names::{Bulkhead as CoreBulkhead, BulkheadPermit, BulkheadRejected};
use guards::permit::{Granted, Owner, PermitSlots};
use guards::schema;

use crate::convert::{config_object, num, numbers, Options};
use crate::errors::{self, config_failure, Details};
use crate::shared::{self, Kind};
use crate::token;

pub(crate) struct BulkheadCore {
    g: InPlace<CoreBulkhead>,
    slots: PermitSlots<BulkheadPermit>,
    _mem: Option<Uint8Array>,
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

/// A bulkhead: at most `maxConcurrent` calls in flight at once; the next one is refused at
/// once (`BulkheadFullError`), never queued. Lock-free (one atomic word); shareable by
/// worker threads (`Bulkhead.shared`).
#[napi]
pub struct Bulkhead {
    core: Arc<BulkheadCore>,
    last: std::cell::Cell<Option<BulkheadRejected>>,
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
    pub fn new(env: Env, options: Option<Unknown<'_>>, shared: Option<Uint8Array>) -> Result<Self> {
        let layout = InPlace::<CoreBulkhead>::layout();
        let (g, mem) = match shared {
            None => {
                let c = Options::read(&env, CLASS, options)?.build(&env, &schema::BULKHEAD, "")?;
                let g = InPlace::new(c).map_err(|f| config_failure(&env, CLASS, "", &f))?;
                (g, None)
            }
            Some(mem) => {
                if options.is_none() {
                    let (ptr, _) =
                        shared::attach(&env, CLASS, &mem, Kind::Bulkhead, |_| Some(layout))?;
                    // SAFETY: `attach` checked the buffer holds a built bulkhead at `ptr`;
                    // `_mem` keeps the buffer alive as long as the view.
                    (unsafe { InPlace::attach(ptr.cast()) }, Some(mem))
                } else {
                    let c =
                        Options::read(&env, CLASS, options)?.build(&env, &schema::BULKHEAD, "")?;
                    let ptr = shared::claim(&env, CLASS, &mem, layout)?;
                    // SAFETY: `claim` gave exclusive use of the aligned bytes at `ptr`.
                    let g = unsafe { InPlace::build_at(ptr.cast(), c) }
                        .map_err(|f| config_failure(&env, CLASS, "", &f))?;
                    shared::publish(&mem, Kind::Bulkhead, 1);
                    (g, Some(mem))
                }
            }
        };
        Ok(Bulkhead {
            core: Arc::new(BulkheadCore {
                g,
                slots: token::slots(),
                _mem: mem,
            }),
            last: std::cell::Cell::new(None),
        })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a bulkhead.
    #[napi(catch_unwind)]
    pub fn shared_size() -> u32 {
        u32::try_from(shared::bytes_for(InPlace::<CoreBulkhead>::layout())).unwrap_or(u32::MAX)
    }

    /// Take a slot: a permit to release exactly once, or a thrown `BulkheadFullError`.
    #[napi(catch_unwind)]
    pub fn try_acquire(&self, env: Env) -> Result<BulkheadPermitHandle> {
        match self.core.g.try_acquire() {
            Ok(p) => Ok(BulkheadPermitHandle {
                granted: Granted::new(BulkheadRef(Arc::clone(&self.core)), p),
            }),
            Err(r) => Err(rejection_error(&env, &r)),
        }
    }

    /// Fast path: a permit token, or -1 when full.
    #[napi(js_name = "_acquire")]
    pub fn fast_acquire(&self) -> f64 {
        match self.core.g.try_acquire() {
            Ok(p) => match self.core.slots.insert(p) {
                Ok(t) => token::pack(t),
                Err((p, _)) => {
                    self.core.g.release(p);
                    -3.0
                }
            },
            Err(r) => {
                self.last.set(Some(r));
                -1.0
            }
        }
    }

    /// The last refusal of this thread's fast path, thrown as its error.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env) -> Result<()> {
        match self.last.get() {
            Some(r) => Err(rejection_error(&env, &r)),
            None => Ok(()),
        }
    }

    /// Fast path: release permit `token`; false if it was released before (nothing done).
    #[napi(js_name = "_release")]
    pub fn fast_release(&self, token: f64) -> bool {
        let Some(t) = token::unpack(self.core.slots.guard_id(), token) else {
            return false;
        };
        match self.core.slots.take(t) {
            Ok(p) => {
                self.core.g.release(p);
                true
            }
            Err(_) => false,
        }
    }

    /// Calls in flight.
    #[napi(getter)]
    pub fn in_flight(&self) -> f64 {
        num(self.core.g.in_flight())
    }

    /// Free slots.
    #[napi(getter)]
    pub fn available(&self) -> f64 {
        num(self.core.g.available())
    }

    /// The cap.
    #[napi(getter)]
    pub fn max_concurrent(&self) -> f64 {
        num(self.core.g.config().max_concurrent)
    }

    /// `{ acquired, rejected, released, inFlight, maxConcurrent }`.
    #[napi(catch_unwind, ts_return_type = "BulkheadStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.core.g.stats();
        numbers(
            env,
            &[
                ("acquired", num(s.acquired)),
                ("rejected", num(s.rejected)),
                ("released", num(s.released)),
                ("inFlight", num(s.in_flight)),
                ("maxConcurrent", num(self.core.g.config().max_concurrent)),
            ],
        )
    }

    /// The config (camelCase).
    #[napi(getter, catch_unwind, ts_return_type = "Required<BulkheadOptions>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        config_object(env, &schema::BULKHEAD, self.core.g.config())
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
    #[napi]
    pub fn release(&self) -> bool {
        self.granted.give_back()
    }

    /// Whether it has been released.
    #[napi(getter)]
    pub fn done(&self) -> bool {
        self.granted.done()
    }
}
