//! Permit tokens for the JavaScript layer's fast paths.
//!
//! `execute` and the middlewares take a permit and hand it back in the same JavaScript
//! code, so they need no permit object: the permit is parked in the JavaScript object's
//! token table and JavaScript holds a small integer, `slot × 2^10 + generation` (below
//! 2^30, so V8 keeps it a small integer: no allocation to return it, keep it in a closure
//! or pass it back). [`CHANGED`] (2^30) is added when the call changed the guard's state
//! as this object sees it (the layer then emits an event).
//!
//! The table belongs to one JavaScript object, so to one thread: a plain slab (a `RefCell`,
//! no atomics; ffi's lock-free `PermitSlots` is for tokens any thread may hand back). A
//! token handed back twice, or made up, is refused and counts nothing; the generation has
//! 10 bits, so a stale token could be taken for a newer permit only after its slot was
//! reused 1024 times while the stale token was kept (the layer never keeps one: each is
//! handed back exactly once). Permits left in the table when the object is collected
//! (a promise that never settled) are given back to the guard by its owner's `Drop`.

use std::cell::RefCell;

/// Slots a table holds at once.
pub(crate) const SLOT_LIMIT: u32 = 1 << 20;
const GEN_BITS: u32 = 10;
const GEN_MASK: u32 = (1 << GEN_BITS) - 1;

/// Added to a returned token or state when this call changed the guard's state.
pub(crate) const CHANGED: f64 = 1_073_741_824.0; // 2^30

struct Entry<P> {
    generation: u32,
    permit: Option<P>,
}

/// One object's parked permits.
pub(crate) struct Tokens<P> {
    inner: RefCell<Inner<P>>,
}

struct Inner<P> {
    slots: Vec<Entry<P>>,
    free: Vec<u32>,
}

impl<P> Tokens<P> {
    /// An empty table.
    pub(crate) fn new() -> Self {
        Tokens {
            inner: RefCell::new(Inner {
                slots: Vec::new(),
                free: Vec::new(),
            }),
        }
    }

    /// Park `p`: its token, or `p` back when the table is full (or in use, which the
    /// single-threaded callers never cause).
    #[inline]
    pub(crate) fn insert(&self, p: P) -> Result<f64, P> {
        let Ok(mut t) = self.inner.try_borrow_mut() else {
            return Err(p);
        };
        let slot = match t.free.pop() {
            Some(s) => s,
            None => {
                let n = t.slots.len() as u32;
                if n >= SLOT_LIMIT {
                    return Err(p);
                }
                t.slots.push(Entry {
                    generation: 0,
                    permit: None,
                });
                n
            }
        };
        let Some(e) = t.slots.get_mut(slot as usize) else {
            return Err(p);
        };
        e.generation = (e.generation + 1) & GEN_MASK;
        e.permit = Some(p);
        Ok(f64::from((slot << GEN_BITS) | e.generation))
    }

    /// The permit of token `x`, taken out; `None` for a token reported before, made up,
    /// or not a token at all.
    #[inline]
    pub(crate) fn take(&self, x: f64) -> Option<P> {
        // `as` saturates (NaN gives 0): a whole number below 2^30 converts back exactly.
        let n = x as u32;
        if f64::from(n) != x || f64::from(n) >= CHANGED {
            return None;
        }
        let (slot, generation) = (n >> GEN_BITS, n & GEN_MASK);
        let mut t = self.inner.try_borrow_mut().ok()?;
        let e = t.slots.get_mut(slot as usize)?;
        if e.generation != generation {
            return None;
        }
        let p = e.permit.take()?;
        t.free.push(slot);
        Some(p)
    }

    /// Permits parked now.
    pub(crate) fn outstanding(&self) -> u64 {
        self.inner.try_borrow().map_or(0, |t| {
            t.slots.iter().filter(|e| e.permit.is_some()).count() as u64
        })
    }

    /// Every permit still parked, taken out (for the owner's `Drop`).
    pub(crate) fn drain(&self) -> Vec<P> {
        match self.inner.try_borrow_mut() {
            Ok(mut t) => t.slots.iter_mut().filter_map(|e| e.permit.take()).collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// [`CHANGED`] for the JavaScript layer.
#[napi_derive::napi]
pub const FAST_CHANGED: u32 = 1 << 30;
