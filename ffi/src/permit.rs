//! Take-once permits for bindings.
//!
//! Core's permits are owned, move-only values: Rust's type system makes reporting one twice
//! impossible. A foreign caller copies bytes instead, so a binding must keep core's permit
//! itself and hand out something that can be refused when it comes back twice or to the
//! wrong guard. Two forms:
//!
//! - [`PermitSlots`] for C: core's permit is parked in a slot of the guard's table and the
//!   caller gets a plain [`PermitToken`] (guard id, slot, generation). [`PermitSlots::take`]
//!   gives core's permit back exactly once; a second report of the same token, a token of
//!   another guard or a made-up token is refused with a [`GuardsResult`] code and nothing is
//!   counted. No allocation per permit: slots are recycled through a lock-free free list
//!   and the table only grows (in segments of doubling size) when more permits are in
//!   flight at once than ever before.
//! - [`TakeOnce`] for Python and Node, whose permit objects own their permit: a cell whose
//!   value can be taken once, by any thread, without a lock; [`Granted`] pairs one with the
//!   guard it goes back to and gives it back (as an ignore) when dropped unreported.
//!
//! # The slot protocol
//!
//! Each slot has a state word `generation << 32 | status`, status one of `FREE`,
//! `CLAIMED` (being filled), `FULL` (holding a permit) and `TAKING` (being emptied).
//!
//! - `insert`: find a `FREE` slot and claim it with one compare-and-swap to `CLAIMED`
//!   (acquire: the previous owner's read of its value happened before). The search starts
//!   at a thread-local hint, the slot this thread last emptied or the one after the slot it
//!   last filled (a thread that acquires and reports in turn reuses one slot, whose cache
//!   line it already holds; one that acquires many in a row walks the table) and probes at most
//!   [`PROBES`] slots; if all are busy it claims a never-used slot (new slots start
//!   `CLAIMED`, so only their claimer can fill them), growing the table by a segment of
//!   doubling size when needed; a table at its limit is scanned whole before an insert
//!   gives up. Then it writes the permit and publishes `gen << 32 | FULL`
//!   with a release store. The token carries `gen`.
//! - `take`: one compare-and-swap from `gen << 32 | FULL` to `gen << 32 | TAKING`. Only one
//!   caller can win it, so a permit comes out at most once; the acquire half makes the
//!   insert's write visible. The winner reads the permit, then frees the slot for the next
//!   generation with a release store of `(gen + 1) << 32 | FREE`.
//! - A token whose generation the slot has passed (or that is being taken right now) was
//!   reported already; a token of a generation not yet issued, or of a slot never
//!   allocated, was never issued.
//!
//! A permit costs two atomic read-modify-writes (the claim and the take), against the
//! three of a free list. The table never holds more than about twice the peak number of
//! permits in flight (it grows only when [`PROBES`] slots in a row are busy) and never
//! shrinks; it is freed with its guard.
//!
//! Generations are 32 bits: a token is mistaken for a newer permit in the same slot only if
//! that slot is reused 2^32 times while the stale token is kept. `tests/loom_permit.rs`
//! model-checks insert/take/double-take races, slot reuse and growth; `tests/permit.rs`
//! runs multi-thread stress tests and a proptest against a sequential model.
//!
//! # Examples
//! ```
//! use guards::permit::PermitSlots;
//! use guards::error::GuardsResult;
//!
//! let slots: PermitSlots<&str> = PermitSlots::new();
//! let t = slots.insert("core's permit").unwrap();
//! assert_eq!(slots.take(t), Ok("core's permit"));
//! assert_eq!(slots.take(t), Err(GuardsResult::PermitAlreadyReported));
//! let other: PermitSlots<&str> = PermitSlots::new();
//! assert_eq!(other.take(t), Err(GuardsResult::PermitWrongGuard));
//! ```

use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::AtomicU64 as StdAtomicU64;

use crate::error::GuardsResult;
use crate::sync::{AtomicPtr, AtomicU32, AtomicU64, Ordering, UnsafeCell};

/// What a foreign caller holds for a permit: which guard issued it, in which slot, in
/// which generation of that slot. Plain data, freely copied.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PermitToken {
    /// The issuing guard's id (unique in the process, never reused; 0 is never issued).
    pub guard: u64,
    /// The slot in the guard's table.
    pub slot: u32,
    /// The slot's generation when the permit was issued.
    pub generation: u32,
}

/// Ids for guards: unique for the life of the process, never reused, never 0.
static NEXT_GUARD_ID: StdAtomicU64 = StdAtomicU64::new(1);

/// A fresh guard id.
pub fn next_guard_id() -> u64 {
    NEXT_GUARD_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Slots in the first segment; segment `k` holds `FIRST << k`.
#[cfg(not(loom))]
const FIRST: u32 = 16;
#[cfg(loom)]
const FIRST: u32 = 1;

/// Segments: enough for 2^31 slots (fewer under loom, whose models stay small).
#[cfg(not(loom))]
const SEGMENTS: usize = 27;
#[cfg(loom)]
const SEGMENTS: usize = 4;

/// The most slots a table can hold: `FIRST × (2^SEGMENTS − 1)`.
pub const MAX_SLOTS: u32 = FIRST * ((1 << SEGMENTS) - 1);

/// How many slots an insert probes before it claims a never-used one.
pub const PROBES: u32 = 8;

const FREE: u64 = 0;
const CLAIMED: u64 = 1;
const FULL: u64 = 2;
const TAKING: u64 = 3;
const STATUS: u64 = 3;

thread_local! {
    /// The slot this thread last emptied (in whichever table): where its next insert
    /// looks first. Only a hint: any value is safe.
    static HINT: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

#[inline]
fn hint() -> u32 {
    HINT.try_with(std::cell::Cell::get).unwrap_or(0)
}

#[inline]
fn set_hint(i: u32) {
    let _ = HINT.try_with(|h| h.set(i));
}

/// One slot, alone on its cache line: threads that each reuse their own slot (see the
/// hint) never write to a line another thread uses.
#[repr(align(64))]
struct Slot<P> {
    state: AtomicU64,
    value: UnsafeCell<MaybeUninit<P>>,
}

impl<P> Slot<P> {
    /// A never-used slot: `CLAIMED`, reserved for whoever claims its index fresh.
    fn new() -> Self {
        Slot {
            state: AtomicU64::new(CLAIMED),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }
}

/// Which segment holds slot `index`, and where in it.
#[inline]
fn locate(index: u32) -> (usize, usize) {
    let q = u64::from(index) / u64::from(FIRST) + 1;
    let k = 63 - q.leading_zeros() as usize;
    let start = u64::from(FIRST) * ((1u64 << k) - 1);
    (k, (u64::from(index) - start) as usize)
}

#[inline]
const fn segment_len(k: usize) -> usize {
    (FIRST as usize) << k
}

/// A table of parked core permits, handed out as [`PermitToken`]s and taken back once.
/// Lock-free; see the module docs for the protocol. Its read-mostly header (read by every
/// insert and take) sits on cache lines of its own.
#[repr(align(128))]
pub struct PermitSlots<P> {
    guard: u64,
    limit: u32,
    /// Slots ever claimed from the unused tail.
    fresh: AtomicU32,
    segments: [AtomicPtr<Slot<P>>; SEGMENTS],
}

// SAFETY: a `PermitSlots` hands each parked `P` to exactly one thread (the winner of the
// slot's compare-and-swap), so sharing the table moves `P`s between threads: `P: Send` is
// all that is needed. The atomics and segment pointers are themselves thread-safe.
unsafe impl<P: Send> Send for PermitSlots<P> {}
// SAFETY: as above; `&PermitSlots` only moves `P` values in and out through the protocol.
unsafe impl<P: Send> Sync for PermitSlots<P> {}

impl<P> std::fmt::Debug for PermitSlots<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitSlots")
            .field("guard", &self.guard)
            .field("allocated", &self.fresh.load(Ordering::Relaxed))
            .finish()
    }
}

impl<P> Default for PermitSlots<P> {
    fn default() -> Self {
        PermitSlots::new()
    }
}

impl<P> PermitSlots<P> {
    /// An empty table with a fresh guard id.
    pub fn new() -> Self {
        PermitSlots::with_limit(MAX_SLOTS)
    }

    /// An empty table holding at most `limit` permits at once (capped at [`MAX_SLOTS`]).
    pub fn with_limit(limit: u32) -> Self {
        PermitSlots {
            guard: next_guard_id(),
            limit: limit.min(MAX_SLOTS),
            fresh: AtomicU32::new(0),
            segments: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
        }
    }

    /// The id its tokens carry.
    pub fn guard_id(&self) -> u64 {
        self.guard
    }

    /// Park `permit` and return its token; on failure (the table is at its limit, or
    /// memory for a new segment could not be had) the permit comes back with the code, so
    /// the caller can hand it back to its guard.
    #[inline]
    pub fn insert(&self, permit: P) -> Result<PermitToken, (P, GuardsResult)> {
        let claimed = self
            .claim_free()
            .or_else(|| self.claim_fresh())
            .or_else(|| self.claim_any());
        let Some((index, slot, generation)) = claimed else {
            return Err((permit, GuardsResult::PermitSlotsExhausted));
        };
        // SAFETY: the slot is `CLAIMED` by us (our compare-and-swap from `FREE`, or a fresh
        // index only we were given), so no other thread reads or writes its value until
        // the store below publishes it, and it holds no value.
        slot.value.with_mut(|v| unsafe { (*v).write(permit) });
        slot.state
            .store((u64::from(generation) << 32) | FULL, Ordering::Release);
        Ok(PermitToken {
            guard: self.guard,
            slot: index,
            generation,
        })
    }

    /// Take back the permit of `token`, once. Refused with `PermitWrongGuard` (another
    /// guard's token), `PermitAlreadyReported` (taken before) or `PermitUnknown` (never
    /// issued here); a refusal changes nothing.
    #[inline]
    pub fn take(&self, token: PermitToken) -> Result<P, GuardsResult> {
        if token.guard != self.guard {
            return Err(GuardsResult::PermitWrongGuard);
        }
        let slot = self.slot(token.slot).ok_or(GuardsResult::PermitUnknown)?;
        let generation = u64::from(token.generation) << 32;
        if let Err(now) = slot.state.compare_exchange(
            generation | FULL,
            generation | TAKING,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            return Err(refusal(now, token.generation));
        }
        // SAFETY: the compare-and-swap above moved the slot from `FULL` of this
        // generation to `TAKING`; only one caller can do that, and no one else touches the
        // value until we free the slot below, so we have exclusive access to an
        // initialised value (its write happened before the release store we synchronised
        // with).
        let permit = slot.value.with(|v| unsafe { (*v).assume_init_read() });
        let next = u64::from(token.generation.wrapping_add(1)) << 32;
        slot.state.store(next | FREE, Ordering::Release);
        set_hint(token.slot);
        Ok(permit)
    }

    /// Whether `token` names a permit parked here now (for diagnostics; racy by nature).
    pub fn holds(&self, token: PermitToken) -> bool {
        token.guard == self.guard
            && self.slot(token.slot).is_some_and(|s| {
                s.state.load(Ordering::Acquire) == (u64::from(token.generation) << 32) | FULL
            })
    }

    /// How many permits are parked now: a scan of the allocated slots (exact at rest; a
    /// snapshot while permits come and go). Not for hot paths.
    pub fn outstanding(&self) -> u64 {
        let claimed = self.fresh.load(Ordering::Acquire);
        (0..claimed)
            .filter_map(|i| self.slot(i))
            .filter(|s| s.state.load(Ordering::Acquire) & STATUS == FULL)
            .count() as u64
    }

    /// Slots allocated so far (the table's high-water mark).
    pub fn allocated(&self) -> u32 {
        self.fresh.load(Ordering::Relaxed)
    }

    #[inline]
    fn slot(&self, index: u32) -> Option<&Slot<P>> {
        let (k, offset) = locate(index);
        let seg = self.segments.get(k)?.load(Ordering::Acquire);
        if seg.is_null() {
            return None;
        }
        // SAFETY: a non-null segment pointer was published (release) by `install` and
        // points to `segment_len(k)` initialised slots that live until `self` is dropped;
        // `offset < segment_len(k)` by construction of `locate`.
        Some(unsafe { &*seg.add(offset) })
    }

    /// Claim a `FREE` slot among the [`PROBES`] from this thread's hint on.
    #[inline]
    fn claim_free(&self) -> Option<(u32, &Slot<P>, u32)> {
        let n = self.fresh.load(Ordering::Acquire);
        if n == 0 {
            return None;
        }
        let mut i = hint();
        if i >= n {
            i %= n;
        }
        for _ in 0..PROBES.min(n) {
            if let Some(slot) = self.slot(i) {
                let s = slot.state.load(Ordering::Relaxed);
                if s & STATUS == FREE
                    && slot
                        .state
                        .compare_exchange(s, s | CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                {
                    // The next insert on this thread looks at the slot after this one.
                    set_hint(i.wrapping_add(1));
                    return Some((i, slot, (s >> 32) as u32));
                }
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
        None
    }

    /// The table is at its limit: look at every allocated slot (a few rounds, as slots are
    /// freed and claimed while we look) before giving up. A bulkhead's table is as large as
    /// its cap, so a caller holding a fresh permit always finds a free slot here.
    #[cold]
    fn claim_any(&self) -> Option<(u32, &Slot<P>, u32)> {
        let n = self.fresh.load(Ordering::Acquire);
        for _ in 0..4 {
            for i in 0..n {
                let Some(slot) = self.slot(i) else { continue };
                let s = slot.state.load(Ordering::Relaxed);
                if s & STATUS == FREE
                    && slot
                        .state
                        .compare_exchange(s, s | CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                {
                    set_hint(i.wrapping_add(1));
                    return Some((i, slot, (s >> 32) as u32));
                }
            }
        }
        None
    }

    /// Claim a never-used slot (it starts `CLAIMED`, generation 0), allocating its segment
    /// if needed.
    #[cold]
    fn claim_fresh(&self) -> Option<(u32, &Slot<P>, u32)> {
        let mut n = self.fresh.load(Ordering::Relaxed);
        loop {
            if n >= self.limit {
                return None;
            }
            match self
                .fresh
                .compare_exchange_weak(n, n + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(m) => n = m,
            }
        }
        let (k, _) = locate(n);
        // Out of memory for the segment: the index stays unused (`CLAIMED` forever is not
        // reachable: its segment does not exist), and the next fresh claim in this segment
        // retries the allocation.
        if !self.install(k) {
            return None;
        }
        self.slot(n).map(|slot| (n, slot, 0))
    }

    /// Make sure segment `k` exists.
    fn install(&self, k: usize) -> bool {
        let Some(cell) = self.segments.get(k) else {
            return false;
        };
        if !cell.load(Ordering::Acquire).is_null() {
            return true;
        }
        let len = segment_len(k);
        let mut v: Vec<Slot<P>> = Vec::new();
        if v.try_reserve_exact(len).is_err() {
            return false;
        }
        v.extend((0..len).map(|_| Slot::new()));
        let fresh = Box::into_raw(v.into_boxed_slice()) as *mut Slot<P>;
        match cell.compare_exchange(ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(_) => {
                // SAFETY: `fresh` came from `Box::into_raw` of a boxed slice of `len`
                // slots just above and was never published.
                drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(fresh, len)) });
                true
            }
        }
    }
}

/// Why a take of a token of `generation` failed, given the slot's state word `now`.
#[cold]
fn refusal(now: u64, generation: u32) -> GuardsResult {
    let current = (now >> 32) as u32;
    let behind = current.wrapping_sub(generation);
    if (behind != 0 && behind < (1 << 31)) || (behind == 0 && now & STATUS == TAKING) {
        GuardsResult::PermitAlreadyReported
    } else {
        GuardsResult::PermitUnknown
    }
}

impl<P> Drop for PermitSlots<P> {
    fn drop(&mut self) {
        for (k, cell) in self.segments.iter().enumerate() {
            let seg = cell.load(Ordering::Acquire);
            if seg.is_null() {
                continue;
            }
            let len = segment_len(k);
            // SAFETY: `seg` was published by `install` from a boxed slice of `len` slots
            // and is freed only here, with exclusive access (`&mut self`).
            let slots = unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(seg, len)) };
            for s in slots.iter() {
                if s.state.load(Ordering::Acquire) & STATUS == FULL {
                    // SAFETY: a `FULL` slot holds an initialised value nobody took.
                    s.value.with_mut(|v| unsafe { (*v).assume_init_drop() });
                }
            }
        }
    }
}

/// A value taken once, by whichever thread asks first, without a lock: an owning permit
/// cell for bindings whose permit objects hold core's permit (Python, Node).
pub struct TakeOnce<T> {
    full: AtomicU32,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value moves to exactly one taker (the compare-and-swap winner), possibly on
// another thread: `T: Send` suffices for both.
unsafe impl<T: Send> Send for TakeOnce<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for TakeOnce<T> {}

impl<T> std::fmt::Debug for TakeOnce<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TakeOnce")
            .field("taken", &self.is_taken())
            .finish()
    }
}

impl<T> TakeOnce<T> {
    /// A full cell.
    pub fn new(v: T) -> Self {
        TakeOnce {
            full: AtomicU32::new(1),
            value: UnsafeCell::new(MaybeUninit::new(v)),
        }
    }

    /// The value, the first time; `None` after.
    pub fn take(&self) -> Option<T> {
        self.full
            .compare_exchange(1, 0, Ordering::AcqRel, Ordering::Relaxed)
            .ok()?;
        // SAFETY: only the one winner of the compare-and-swap from full reaches this, and
        // the value was initialised by `new`.
        Some(self.value.with(|v| unsafe { (*v).assume_init_read() }))
    }

    /// Whether it has been taken.
    pub fn is_taken(&self) -> bool {
        self.full.load(Ordering::Acquire) == 0
    }
}

impl<T> Drop for TakeOnce<T> {
    fn drop(&mut self) {
        if self.take().is_some() {
            // Dropped here: the value was never taken.
        }
    }
}

/// The guard a [`Granted`] permit goes back to.
pub trait Owner {
    /// Core's permit.
    type Permit;

    /// Give `p` back reporting nothing (core's `on_ignore`, or a bulkhead's `release`).
    /// Called from `Drop` too.
    fn give_back(&self, p: Self::Permit);
}

/// A permit granted by `O`, given back once: with an outcome through [`Granted::take`], or
/// as "nothing to report" through [`Granted::give_back`] or when dropped.
#[derive(Debug)]
pub struct Granted<O: Owner> {
    owner: O,
    permit: TakeOnce<O::Permit>,
}

impl<O: Owner> Granted<O> {
    /// `p`, granted by `owner`.
    pub fn new(owner: O, p: O::Permit) -> Self {
        Granted {
            owner,
            permit: TakeOnce::new(p),
        }
    }

    /// The guard it goes back to.
    pub fn owner(&self) -> &O {
        &self.owner
    }

    /// Core's permit, if no outcome has been reported yet (the caller reports it).
    pub fn take(&self) -> Option<O::Permit> {
        self.permit.take()
    }

    /// Whether it has gone back.
    pub fn done(&self) -> bool {
        self.permit.is_taken()
    }

    /// Give it back reporting nothing: `true` the first time, `false` after.
    pub fn give_back(&self) -> bool {
        match self.permit.take() {
            Some(p) => {
                self.owner.give_back(p);
                true
            }
            None => false,
        }
    }
}

impl<O: Owner> Drop for Granted<O> {
    fn drop(&mut self) {
        self.give_back();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn locate_covers_segments_without_gaps() {
        let mut expected = (0usize, 0usize);
        for i in 0..(FIRST * 64) {
            assert_eq!(locate(i), expected, "index {i}");
            expected.1 += 1;
            if expected.1 == segment_len(expected.0) {
                expected = (expected.0 + 1, 0);
            }
        }
        let (k, off) = locate(MAX_SLOTS - 1);
        assert_eq!((k, off), (SEGMENTS - 1, segment_len(SEGMENTS - 1) - 1));
        assert!(locate(MAX_SLOTS).0 >= SEGMENTS);
        assert!(locate(u32::MAX).0 >= SEGMENTS);
    }

    #[test]
    fn slots_are_reused_and_grow_past_the_first_segment() {
        let s: PermitSlots<u64> = PermitSlots::new();
        let n = u64::from(FIRST) * 3 + 1;
        let tokens: Vec<_> = (0..n).map(|i| s.insert(i).unwrap()).collect();
        assert_eq!(s.outstanding(), n);
        assert_eq!(u64::from(s.allocated()), n);
        for (i, t) in tokens.iter().enumerate() {
            assert_eq!(s.take(*t), Ok(i as u64));
        }
        assert_eq!(s.outstanding(), 0);
        // Every slot is back on the free list: no new slot is claimed.
        let again: Vec<_> = (0..n).map(|i| s.insert(i).unwrap()).collect();
        assert_eq!(u64::from(s.allocated()), n);
        for t in &again {
            assert_ne!(tokens.iter().find(|o| o.slot == t.slot).unwrap(), t);
        }
    }

    #[test]
    fn refusals_change_nothing() {
        let s: PermitSlots<u8> = PermitSlots::with_limit(2);
        let a = s.insert(1).unwrap();
        let b = s.insert(2).unwrap();
        assert_eq!(s.insert(3), Err((3, GuardsResult::PermitSlotsExhausted)));
        let forged = PermitToken {
            generation: a.generation + 1,
            ..a
        };
        assert_eq!(s.take(forged), Err(GuardsResult::PermitUnknown));
        let far = PermitToken { slot: 1 << 30, ..a };
        assert_eq!(s.take(far), Err(GuardsResult::PermitUnknown));
        assert_eq!(
            s.take(PermitToken::default()),
            Err(GuardsResult::PermitWrongGuard)
        );
        assert_eq!(s.outstanding(), 2);
        assert_eq!(s.take(a), Ok(1));
        assert_eq!(s.take(a), Err(GuardsResult::PermitAlreadyReported));
        let c = s.insert(4).unwrap();
        assert_eq!(c.slot, a.slot);
        assert_eq!(s.take(a), Err(GuardsResult::PermitAlreadyReported));
        assert_eq!(s.take(c), Ok(4));
        assert_eq!(s.take(b), Ok(2));
    }

    #[test]
    fn a_full_table_finds_a_free_slot_far_from_the_hint() {
        let s: PermitSlots<u32> = PermitSlots::with_limit(64);
        let tokens: Vec<_> = (0..64).map(|i| s.insert(i).unwrap()).collect();
        assert_eq!(s.insert(99), Err((99, GuardsResult::PermitSlotsExhausted)));
        // Free two slots far from each other; then busy up the hint's neighbourhood.
        assert_eq!(s.take(tokens[3]), Ok(3));
        assert_eq!(s.take(tokens[40]), Ok(40));
        let again = s.insert(100).unwrap();
        assert_eq!(again.slot, 40, "the hint (last emptied) is tried first");
        let far = s.insert(101).unwrap();
        assert_eq!(far.slot, 3, "found by the whole-table scan");
        assert_eq!(s.allocated(), 64);
        assert_eq!(s.outstanding(), 64);
    }

    #[test]
    fn drop_drops_parked_values() {
        let counter = std::sync::Arc::new(());
        {
            let s = PermitSlots::new();
            for _ in 0..40 {
                s.insert(std::sync::Arc::clone(&counter)).unwrap();
            }
            let t = s.insert(std::sync::Arc::clone(&counter)).unwrap();
            drop(s.take(t));
            assert_eq!(std::sync::Arc::strong_count(&counter), 41);
        }
        assert_eq!(std::sync::Arc::strong_count(&counter), 1);
    }

    #[test]
    fn take_once_cell() {
        let c = TakeOnce::new(String::from("p"));
        assert!(!c.is_taken());
        assert_eq!(c.take().as_deref(), Some("p"));
        assert!(c.is_taken());
        assert_eq!(c.take(), None);
        let leak_check = std::sync::Arc::new(());
        drop(TakeOnce::new(std::sync::Arc::clone(&leak_check)));
        assert_eq!(std::sync::Arc::strong_count(&leak_check), 1);
    }

    #[derive(Debug, Default)]
    struct Back(std::sync::atomic::AtomicU32);
    impl Owner for &Back {
        type Permit = u32;
        fn give_back(&self, p: u32) {
            self.0.fetch_add(p, std::sync::atomic::Ordering::Relaxed);
        }
    }

    #[test]
    fn granted_gives_back_once() {
        let back = Back::default();
        {
            let g = Granted::new(&back, 5);
            assert!(g.give_back());
            assert!(!g.give_back());
            assert!(g.done());
        }
        {
            let g = Granted::new(&back, 7);
            assert_eq!(g.take(), Some(7));
        }
        drop(Granted::new(&back, 11));
        assert_eq!(back.0.load(std::sync::atomic::Ordering::Relaxed), 16);
    }
}
