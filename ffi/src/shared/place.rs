//! A guard in memory the caller provides (`_size`, `_align`, `_init_in`, `_attach` in C):
//! for programs that already share memory (an anonymous `MAP_SHARED` mapping made before
//! `fork`, a segment of their own) and want a guard in it without a region file.
//!
//! The memory holds a 128-byte header, then the guard:
//!
//! ```text
//! 0     magic "GUARDSPL", ready flag, kind, capacity, type hash, config hash, size
//! 128   the guard (core's type, built in place: zeroed, then `reset`)
//! ```
//!
//! [`init_in`] builds the guard and sets the ready flag last (release); [`attach`] checks
//! the header (magic, ready, kind, capacity, type hash: the same build of guards) and
//! refuses anything else with a typed error. Build it once (before `fork`, or in one
//! process before the others attach): [`attach`] does not wait.
//!
//! Such a guard has no permit table of the region kind: its permits are kept per process
//! (like a private guard's), so a process killed while holding one leaks it. Use a
//! [`super::Region`] when holders may die.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Detail, Failure, GuardsResult};
use crate::shared::guard::Shared;
use crate::shared::kind::{GuardKind, SharedGuard};
use crate::shared::layout::{config_hash, type_hash, LINE};

/// The first eight bytes of a placed guard.
pub const PLACE_MAGIC: [u8; 8] = *b"GUARDSPL";

/// The header before a placed guard.
#[repr(C, align(128))]
#[derive(Debug)]
struct PlaceHeader {
    magic: AtomicU64,
    ready: AtomicU64,
    kind: AtomicU64,
    capacity: AtomicU64,
    type_hash: AtomicU64,
    config_hash: AtomicU64,
    size: AtomicU64,
}

const HEADER: usize = std::mem::size_of::<PlaceHeader>();
const _: () = assert!(HEADER == LINE as usize);

/// The bytes a placed `K` needs: the header and the guard, padded to whole lines.
pub fn size_of<K: SharedGuard>() -> usize {
    HEADER + std::mem::size_of::<K>().div_ceil(LINE as usize) * LINE as usize
}

/// The alignment a placed `K` needs (at least 128).
pub fn align_of<K: SharedGuard>() -> usize {
    std::mem::align_of::<K>().max(LINE as usize)
}

fn place_failure(code: GuardsResult, what: &'static str) -> Failure {
    Failure {
        code,
        detail: Detail::Region { what, errno: 0 },
    }
}

fn check_memory<K: SharedGuard>(mem: *mut u8, len: usize) -> Result<NonNull<u8>, Failure> {
    check_bytes(mem, len, align_of::<K>(), size_of::<K>())
}

fn check_bytes(
    mem: *mut u8,
    len: usize,
    align: usize,
    size: usize,
) -> Result<NonNull<u8>, Failure> {
    let mem = NonNull::new(mem).ok_or(Failure::argument(
        GuardsResult::NullArgument,
        "mem",
        "a non-NULL pointer",
    ))?;
    if (mem.as_ptr() as usize) % align != 0 {
        return Err(Failure::argument(
            GuardsResult::InvalidArgument,
            "mem",
            "memory aligned to the guard's _align() (128 bytes)",
        ));
    }
    if len < size {
        return Err(Failure::argument(
            GuardsResult::InvalidArgument,
            "len",
            "at least the guard's _size() bytes",
        ));
    }
    Ok(mem)
}

/// Build a `K` from `config` in `len` bytes at `mem` and mark it ready.
///
/// # Safety
/// `mem` must be valid for reads and writes of `len` bytes, and nothing else may use
/// those bytes during the call (no process may have attached yet).
pub unsafe fn init_in<K: SharedGuard>(
    mem: *mut u8,
    len: usize,
    config: K::Config,
) -> Result<(), Failure> {
    let mem = check_memory::<K>(mem, len)?;
    K::check(&config)?;
    let size = size_of::<K>();
    // SAFETY: `mem` is valid for `len >= size` bytes and ours during the call (the
    // caller's contract); zero is a valid inert `PlaceHeader` (atomics) and `K` ("Building
    // in place" in core); the guard starts `HEADER` bytes in, aligned for `K` (`mem` is
    // aligned to `align_of::<K>()` and `HEADER` is a multiple of it, both being 128).
    unsafe {
        std::ptr::write_bytes(mem.as_ptr(), 0, size);
        let guard = &mut *mem.as_ptr().add(HEADER).cast::<K>();
        guard.reset_in_place(config).map_err(Failure::from)?;
        let h = &*mem.as_ptr().cast::<PlaceHeader>();
        h.magic
            .store(u64::from_le_bytes(PLACE_MAGIC), Ordering::Relaxed);
        h.kind.store(K::KIND as u64, Ordering::Relaxed);
        h.capacity.store(K::CAPACITY, Ordering::Relaxed);
        h.type_hash.store(type_hash_of::<K>(), Ordering::Relaxed);
        h.config_hash.store(config_hash(&config), Ordering::Relaxed);
        h.size.store(size as u64, Ordering::Relaxed);
        h.ready.store(1, Ordering::Release);
    }
    Ok(())
}

fn type_hash_of<K: SharedGuard>() -> u64 {
    type_hash(
        K::KIND as u32,
        K::CAPACITY,
        std::mem::size_of::<K>(),
        std::mem::align_of::<K>(),
    )
}

/// A handle on the `K` that [`init_in`] built at `mem` (in this process or another).
/// Errors: `NullArgument`/`InvalidArgument` for the memory; `GuardNotFound` when nothing
/// was built there (or not yet); `GuardMismatch` when another kind, capacity or build
/// built it.
///
/// # Safety
/// `mem` must be valid for reads of `len` bytes, and, if the call succeeds, stay valid and
/// shared (not unmapped, not reused) for as long as the handle lives.
pub unsafe fn attach<K: SharedGuard>(mem: *mut u8, len: usize) -> Result<Shared<K>, Failure> {
    let mem = check_memory::<K>(mem, len)?;
    // SAFETY: at least `HEADER` bytes (checked), aligned; atomics read any bit pattern.
    let h = unsafe { &*mem.as_ptr().cast::<PlaceHeader>() };
    if h.magic.load(Ordering::Relaxed) != u64::from_le_bytes(PLACE_MAGIC)
        || h.ready.load(Ordering::Acquire) != 1
    {
        return Err(place_failure(
            GuardsResult::GuardNotFound,
            "no guard was built in this memory (call _init_in first)",
        ));
    }
    let mismatch = |field, existing, requested| Failure {
        code: GuardsResult::GuardMismatch,
        detail: Detail::GuardMismatch {
            field,
            existing,
            requested,
        },
    };
    let kind = h.kind.load(Ordering::Relaxed);
    if kind != K::KIND as u64 {
        return Err(mismatch("kind", kind, K::KIND as u64));
    }
    let capacity = h.capacity.load(Ordering::Relaxed);
    if capacity != K::CAPACITY {
        return Err(mismatch("capacity", capacity, K::CAPACITY));
    }
    let th = h.type_hash.load(Ordering::Relaxed);
    if th != type_hash_of::<K>() {
        return Err(mismatch("layout", th, type_hash_of::<K>()));
    }
    // SAFETY: the header says a `K` of this build was initialised `HEADER` bytes in, within
    // `len` (checked against `size_of::<K>()`); the caller keeps the memory valid.
    let guard = unsafe { NonNull::new_unchecked(mem.as_ptr().add(HEADER).cast::<K>()) };
    // SAFETY: as above, for the handle's life.
    Ok(unsafe { Shared::in_caller_memory(guard) })
}

/// The kind and capacity of the guard built at `mem` (to pick its type).
///
/// # Safety
/// `mem` must be valid for reads of `len` bytes.
pub unsafe fn peek(mem: *mut u8, len: usize) -> Result<(GuardKind, u64), Failure> {
    let mem = check_bytes(mem, len, LINE as usize, HEADER)?;
    // SAFETY: at least `HEADER` bytes (checked), aligned; atomics read any bit pattern.
    let h = unsafe { &*mem.as_ptr().cast::<PlaceHeader>() };
    if h.magic.load(Ordering::Relaxed) != u64::from_le_bytes(PLACE_MAGIC)
        || h.ready.load(Ordering::Acquire) != 1
    {
        return Err(place_failure(
            GuardsResult::GuardNotFound,
            "no guard was built in this memory (call _init_in first)",
        ));
    }
    let kind = u32::try_from(h.kind.load(Ordering::Relaxed))
        .ok()
        .and_then(GuardKind::from_u32)
        .ok_or_else(|| place_failure(GuardsResult::RegionInvalid, "the header names no kind"))?;
    Ok((kind, h.capacity.load(Ordering::Relaxed)))
}
