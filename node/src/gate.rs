//! What `Limiter` and `Admission` share: a priority gate over core's guard, its permits
//! parked as fast-path tokens, its last refusal, and the permit handles' owner.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::*;

pub(crate) use guards::gate::Gate;
use guards::handle::InPlace;
use guards::names::Outcome;
use guards::permit::Owner;
use guards_core::Priority;

use crate::token::Tokens;

/// The guard, in its own memory or in a `SharedArrayBuffer` kept alive here.
pub(crate) struct GateCore<G> {
    pub(crate) g: InPlace<G>,
    _mem: Option<Uint8Array>,
}

/// What one JavaScript object holds.
pub(crate) struct GateLocal<G: Gate> {
    pub(crate) core: Arc<GateCore<G>>,
    /// The fast path's parked permits.
    pub(crate) tokens: Tokens<G::Permit>,
    pub(crate) last: Cell<Option<G::Rejected>>,
    /// The fast path's arguments, passed through memory.
    pub(crate) io: crate::fast::Io,
}

impl<G: Gate> crate::fast::WithIo for GateLocal<G> {
    fn io(&self) -> &crate::fast::Io {
        &self.io
    }
}

impl<G: Gate> GateLocal<G> {
    pub(crate) fn new(g: InPlace<G>, mem: Option<Uint8Array>) -> Rc<Self> {
        Rc::new(GateLocal {
            core: Arc::new(GateCore { g, _mem: mem }),
            tokens: Tokens::new(),
            last: Cell::new(None),
            io: crate::fast::Io::new(),
        })
    }

    /// The fast path's acquire: a token, or -1 when refused (the refusal kept for
    /// `_lastRejection`), or -3 when no permit slot is free.
    pub(crate) fn acquire_token(&self, p: Priority) -> f64 {
        match self.core.g.try_acquire(guards::clock::now(), p) {
            Ok(permit) => match self.tokens.insert(permit) {
                Ok(t) => t,
                Err(permit) => {
                    self.core.g.on_ignore(permit);
                    -3.0
                }
            },
            Err(r) => {
                self.last.set(Some(r));
                -1.0
            }
        }
    }

    /// The fast path's report: whether `token` was still parked (reported now).
    pub(crate) fn report_token(&self, token: f64, outcome: Outcome) -> bool {
        match self.tokens.take(token) {
            Some(p) => {
                self.core.g.report(p, outcome, guards::clock::now());
                true
            }
            None => false,
        }
    }

    /// The owner of a permit handle taken through this object.
    pub(crate) fn owner(&self) -> GateRef<G> {
        GateRef(Arc::clone(&self.core))
    }
}

impl<G: Gate> Drop for GateLocal<G> {
    /// Permits still parked (their calls never ended) go back to the guard.
    fn drop(&mut self) {
        for p in self.tokens.drain() {
            self.core.g.on_ignore(p);
        }
    }
}

/// A permit handle's way back to its guard.
pub(crate) struct GateRef<G>(pub(crate) Arc<GateCore<G>>);

impl<G: Gate> Owner for GateRef<G> {
    type Permit = G::Permit;
    fn give_back(&self, p: G::Permit) {
        self.0.g.on_ignore(p);
    }
}
