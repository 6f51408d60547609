//! Permit tokens for the JavaScript layer's fast paths.
//!
//! `execute` and the middlewares take a permit and hand it back in the same JavaScript
//! frame, so they need no permit object: the permit is parked in the guard's
//! `PermitSlots` table (ffi's take-once slots) and JavaScript holds a plain number,
//! `slot × 2^32 + generation`. Tables are limited to 2^20 permits in flight, so a token is
//! below 2^52 and exact as a double; [`CHANGED`] (2^52) is added when the call changed the
//! guard's state as this thread sees it (the layer then emits an event). A token handed
//! back twice, or made up, is refused by the table and counts nothing.

use guards::permit::{PermitSlots, PermitToken};

/// Permits a table holds at once (slot numbers stay below 2^20).
pub(crate) const SLOT_LIMIT: u32 = 1 << 20;

/// Added to a returned token or state when this call changed the guard's state.
pub(crate) const CHANGED: f64 = 4_503_599_627_370_496.0; // 2^52

/// A new table for tokens.
pub(crate) fn slots<P>() -> PermitSlots<P> {
    PermitSlots::with_limit(SLOT_LIMIT)
}

/// The number JavaScript holds for `t`.
#[inline]
pub(crate) fn pack(t: PermitToken) -> f64 {
    ((u64::from(t.slot) << 32) | u64::from(t.generation)) as f64
}

/// The token of `x` for the table of guard `guard`, if `x` can be one.
#[inline]
pub(crate) fn unpack(guard: u64, x: f64) -> Option<PermitToken> {
    if !(0.0..CHANGED).contains(&x) || x.fract() != 0.0 {
        return None;
    }
    let n = x as u64;
    Some(PermitToken {
        guard,
        slot: (n >> 32) as u32,
        generation: n as u32,
    })
}
