//! Guards placed in a `SharedArrayBuffer`, so that several worker threads use one guard.
//!
//! A guard's state is plain atomics with no pointers (core's "Building in place"), so it
//! can live in memory that several threads map: the thread that creates it builds it in
//! a `SharedArrayBuffer` (zeroed, then `reset` with the config), posts the buffer to the
//! workers, and each worker attaches a view to the same bytes. No copy, no lock, no
//! message per call: the workers' calls race on the same atomics exactly as threads of one
//! Rust process do.
//!
//! Layout of the buffer: a 16-byte header (`magic`, the guard `kind`, its `capacity`,
//! `ready`), then the guard at the first address aligned to its alignment (128 bytes),
//! so the buffer is `16 + align + size` bytes. Every thread sees the buffer at the same
//! address, so the offset is the same for all. `magic` is claimed with a
//! compare-and-swap (one builder), `ready` is published with a release store after the
//! build and read with an acquire load by `attach`.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use napi::bindgen_prelude::*;

use crate::errors::type_error;

const MAGIC: u32 = 0x6775_6172;
const HEADER: usize = 16;

/// Which guard a buffer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Kind {
    CircuitBreaker = 1,
    Bulkhead = 2,
    Limiter = 3,
    Admission = 4,
    RetryBudget = 5,
}

/// Bytes a buffer needs for a guard of `layout`.
pub(crate) fn bytes_for(layout: Layout) -> usize {
    HEADER + layout.align() + layout.size()
}

struct Header<'a> {
    magic: &'a AtomicU32,
    kind: &'a AtomicU32,
    capacity: &'a AtomicU32,
    ready: &'a AtomicU32,
}

fn header(mem: &Uint8Array) -> Option<Header<'_>> {
    if mem.len() < HEADER {
        return None;
    }
    let base = mem.as_ptr();
    if (base as usize) % 4 != 0 {
        return None;
    }
    // SAFETY: the buffer has at least HEADER bytes at a 4-aligned address; the words are
    // only ever accessed atomically (by every thread that maps the buffer), and the
    // `Uint8Array` keeps the memory alive for the borrow.
    let word = |i: usize| unsafe { &*(base.add(4 * i) as *const AtomicU32) };
    Some(Header {
        magic: word(0),
        kind: word(1),
        capacity: word(2),
        ready: word(3),
    })
}

/// Where the guard of `layout` lives in `mem`, if it fits.
fn guard_ptr(mem: &Uint8Array, layout: Layout) -> Option<NonNull<u8>> {
    let base = mem.as_ptr() as usize;
    let start = (base + HEADER).checked_next_multiple_of(layout.align())?;
    let end = start.checked_add(layout.size())?;
    if end > base.checked_add(mem.len())? {
        return None;
    }
    NonNull::new(start as *mut u8)
}

/// Claim a fresh (all-zero) buffer for a guard of `kind`: the pointer to build it at.
pub(crate) fn claim(
    env: &Env,
    class: &str,
    mem: &Uint8Array,
    layout: Layout,
) -> Result<NonNull<u8>> {
    let bad = |why: &str| type_error(env, "shared", &format!("{class}: {why}"));
    let h = header(mem).ok_or_else(|| bad("the shared buffer is too small"))?;
    let ptr = guard_ptr(mem, layout).ok_or_else(|| {
        bad(&format!(
            "the shared buffer is too small (it needs {} bytes)",
            bytes_for(layout)
        ))
    })?;
    h.magic
        .compare_exchange(0, MAGIC, Ordering::AcqRel, Ordering::Acquire)
        .map_err(|_| bad("the shared buffer already holds a guard (use fromShared to attach)"))?;
    Ok(ptr)
}

/// The guard is built: publish it.
pub(crate) fn publish(mem: &Uint8Array, kind: Kind, capacity: usize) {
    if let Some(h) = header(mem) {
        h.kind.store(kind as u32, Ordering::Relaxed);
        h.capacity.store(
            u32::try_from(capacity).unwrap_or(u32::MAX),
            Ordering::Relaxed,
        );
        h.ready.store(1, Ordering::Release);
    }
}

/// Attach to a buffer holding a built guard of `kind`: its pointer and capacity.
pub(crate) fn attach(
    env: &Env,
    class: &str,
    mem: &Uint8Array,
    kind: Kind,
    layout_for: impl Fn(usize) -> Option<Layout>,
) -> Result<(NonNull<u8>, usize)> {
    let bad = |why: &str| type_error(env, "shared", &format!("{class}: {why}"));
    let h = header(mem).ok_or_else(|| bad("not a shared guard buffer"))?;
    if h.magic.load(Ordering::Acquire) != MAGIC || h.ready.load(Ordering::Acquire) != 1 {
        return Err(bad("the buffer holds no guard (build one with shared())"));
    }
    if h.kind.load(Ordering::Relaxed) != kind as u32 {
        return Err(bad("the buffer holds another kind of guard"));
    }
    let cap = h.capacity.load(Ordering::Relaxed) as usize;
    let layout = layout_for(cap).ok_or_else(|| bad("the buffer's capacity is not supported"))?;
    let ptr = guard_ptr(mem, layout).ok_or_else(|| bad("the buffer is too small"))?;
    Ok((ptr, cap))
}
