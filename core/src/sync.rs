//! The one place atomics come from.
//!
//! Normal builds use [`portable_atomic`], which gives the same API on every target
//! (including 64-bit atomics on 32-bit targets, with the `fallback` feature). Under `--cfg loom` the
//! same names resolve to [loom](https://docs.rs/loom)'s model-checked atomics, so every
//! atomic protocol in core can be explored exhaustively by the `loom_*` tests.
//!
//! Only 64-bit and narrower atomics are used, so every guard is lock-free on any target
//! with a native 64-bit compare-and-swap.

#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use portable_atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};

#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};

pub(crate) use core::sync::atomic::Ordering;

/// Store `v` through exclusive access: a plain write, no atomic operation (a guard's
/// `reset`, which takes `&mut self`).
#[inline]
pub(crate) fn set_mut(a: &mut AtomicU64, v: u64) {
    #[cfg(not(loom))]
    {
        *a.get_mut() = v;
    }
    #[cfg(loom)]
    a.with_mut(|x| *x = v);
}
