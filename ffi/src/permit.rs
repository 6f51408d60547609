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
//!   counted. No allocation per permit: slots are recycled, and the table only grows (in
//!   segments of doubling size) when more permits are in flight at once than ever before.
//! - [`TakeOnce`] for Python and Node, whose permit objects own their permit: a cell whose
//!   value can be taken once, by any thread, without a lock; [`Granted`] pairs one with the
//!   guard it goes back to and gives it back (as an ignore) when dropped unreported.
//!
//! # The slot protocol
//!
//! Each slot has a state word `generation << 32 | status`, status one of `FREE`,
//! `CLAIMED` (being filled), `FULL` (holding a permit), `TAKING` (being emptied) and
//! `RESERVED` (empty, and kept for one thread's next insert).
//!
//! - `take`: one compare-and-swap from `gen << 32 | FULL` to `gen << 32 | TAKING`. Only one
//!   caller can win it, so a permit comes out at most once; the acquire half makes the
//!   insert's write visible. The winner reads the permit, then empties the slot for the
//!   next generation with a release store: `(gen + 1) << 32 | RESERVED` when this thread
//!   keeps the slot for its next insert (see below), else `(gen + 1) << 32 | FREE`.
//! - `insert`, fast path: this thread holds a reservation in this table (its cache has a
//!   way for the table's id): it writes the permit and publishes `gen << 32 | FULL` with a
//!   release store. No read-modify-write: a permit costs one (the take's).
//! - `insert`, slow path: find a `FREE` slot and claim it with one compare-and-swap to
//!   `CLAIMED` (acquire: the previous owner's read of its value happened before). The
//!   search starts at a thread-local hint (the slot this thread last emptied, or the one
//!   after the slot it last claimed) and probes at most [`PROBES`] slots; if all are busy
//!   it claims a never-used slot (new slots start `CLAIMED`, so only their claimer can fill
//!   them), growing the table by a segment of doubling size when needed, after first
//!   recovering abandoned reservations (below); a table at its limit is scanned whole
//!   before an insert gives up. Then it writes the permit and publishes `gen << 32 | FULL`.
//! - A token whose generation the slot has passed (or that is being taken right now) was
//!   reported already; a token of a generation not yet issued, or of a slot never
//!   allocated, was never issued.
//!
//! # Reservations: one read-modify-write per permit
//!
//! Each thread keeps a small cache of [`WAYS`] reservations (table id, slot, generation,
//! token) in thread-local storage, and publishes the token of each in a `Holder`, a
//! record that lives as long as the process (records are reused by later threads, never
//! freed). A take on a thread with a free way reserves the slot it emptied: it writes the
//! way's token to its holder, the holder and token to the slot, then releases the slot as
//! `RESERVED`. The thread's next insert into that table fills the slot with plain stores.
//!
//! A reservation is *abandoned* once its holder no longer lists its token: when the
//! thread evicts the way (an insert into a table it has no way for, with every way taken)
//! or exits (its holder's tokens are cleared). The thread never touches the slot again
//! after that. A table recovers abandoned reservations before it grows and when it is at
//! its limit: for a `RESERVED` slot whose holder does not list the slot's token, one
//! compare-and-swap from `gen << 32 | RESERVED` to `gen << 32 | CLAIMED` takes it over.
//! A live reservation is never taken over: its token is in its holder from before the
//! slot was published as reserved (release/acquire on the state word) until its thread
//! has stopped using it. So a table holds at most the permits in flight, plus
//! [`WAYS`] reservations per live thread, plus abandoned ones it has not needed yet.
//!
//! Generations are 32 bits: a token is mistaken for a newer permit in the same slot only if
//! that slot is reused 2^32 times while the stale token is kept. `tests/loom_permit.rs`
//! model-checks insert/take/double-take races, reuse, growth, reservations, their eviction
//! and recovery; `tests/permit.rs` runs multi-thread stress tests and a proptest against a
//! sequential model.
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

use std::cell::Cell;
#[cfg(not(loom))]
use std::mem::ManuallyDrop;
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

/// How many reservations a thread keeps (in as many tables, or several in one).
pub const WAYS: usize = 4;

const FREE: u64 = 0;
const CLAIMED: u64 = 1;
const FULL: u64 = 2;
const TAKING: u64 = 3;
const RESERVED: u64 = 4;
const STATUS: u64 = 7;

/// A thread's published reservations: the token of each of its ways (0: none). Lives as
/// long as the process; reused by a later thread once its thread has exited. Alone on its
/// cache lines (128 bytes: the adjacent-line pair of x86), so that threads writing their
/// own holders never write to a line another thread uses.
#[repr(align(128))]
pub struct Holder {
    held: [AtomicU64; WAYS],
    /// Tokens handed out so far (only the owning thread writes it).
    tokens: AtomicU64,
    /// 1 while a live thread owns the record.
    busy: AtomicU32,
    /// The next record of the process's list (unused under loom, where none is kept).
    #[cfg_attr(loom, allow(dead_code))]
    next: AtomicPtr<Holder>,
}

impl std::fmt::Debug for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holder").finish_non_exhaustive()
    }
}

impl Holder {
    fn new() -> Self {
        Holder {
            held: std::array::from_fn(|_| AtomicU64::new(0)),
            tokens: AtomicU64::new(0),
            busy: AtomicU32::new(1),
            next: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Whether reservation `token` is still live.
    fn holds(&self, token: u64) -> bool {
        token != 0
            && self
                .held
                .iter()
                // Ordering: acquire, pairs with the owner's release store of an eviction
                // (it stopped using the slot before).
                .any(|h| h.load(Ordering::Acquire) == token)
    }

    /// Abandon every reservation (the thread is exiting) and free the record for reuse.
    fn release(&self) {
        for h in &self.held {
            h.store(0, Ordering::Release);
        }
        self.busy.store(0, Ordering::Release);
    }
}

/// One way of a thread's reservation cache.
#[derive(Clone, Copy)]
struct Way {
    /// The table's id; 0: the way is empty.
    guard: u64,
    /// The reserved slot (a `Slot<P>` of that table).
    slot: *const (),
    index: u32,
    generation: u32,
}

impl Way {
    const EMPTY: Way = Way {
        guard: 0,
        slot: ptr::null(),
        index: 0,
        generation: 0,
    };
}

/// A thread's reservation cache. The production code keeps one per thread (thread-local);
/// tests under loom drive several explicitly ([`PermitSlots::insert_with`]).
pub struct Local {
    holder: Cell<*const Holder>,
    ways: [Cell<Way>; WAYS],
    /// The next way to evict when an insert finds every way taken by other tables.
    victim: Cell<u32>,
    /// The slot this thread last emptied or claimed next to: where a slow insert looks
    /// first. Only a hint: any value is safe.
    hint: Cell<u32>,
}

impl std::fmt::Debug for Local {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Local").finish_non_exhaustive()
    }
}

impl Default for Local {
    fn default() -> Self {
        Local::new()
    }
}

impl Local {
    /// An empty cache (no holder yet).
    pub const fn new() -> Self {
        Local {
            holder: Cell::new(ptr::null()),
            ways: [const { Cell::new(Way::EMPTY) }; WAYS],
            victim: Cell::new(0),
            hint: Cell::new(0),
        }
    }

    /// This thread's holder, registering one on first use (`None` only if memory for it
    /// could not be had).
    fn holder(&self) -> Option<&'static Holder> {
        let h = self.holder.get();
        if !h.is_null() {
            // SAFETY: holders are leaked (never freed) once registered.
            return Some(unsafe { &*h });
        }
        // A thread registers a holder only once its exit hook is armed, so that every
        // reservation it makes is abandoned when it exits; past that hook (the thread is
        // being torn down) it makes none.
        if !arm_exit() {
            return None;
        }
        let h = register_holder()?;
        self.holder.set(h);
        Some(h)
    }

    /// Abandon every reservation this cache holds (the thread is done with them).
    pub fn abandon_all(&self) {
        for w in &self.ways {
            w.set(Way::EMPTY);
        }
        let h = self.holder.get();
        if !h.is_null() {
            // SAFETY: holders are never freed.
            unsafe { &*h }.release();
            self.holder.set(ptr::null());
        }
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        self.abandon_all();
    }
}

/// The process's holders, a lock-free list that only grows.
#[cfg(not(loom))]
static HOLDERS: AtomicPtr<Holder> = AtomicPtr::new(ptr::null_mut());

/// A holder for this thread: a free one of the list, or a new one pushed onto it.
#[cfg(not(loom))]
fn register_holder() -> Option<&'static Holder> {
    let mut h = HOLDERS.load(Ordering::Acquire);
    while !h.is_null() {
        // SAFETY: records on the list are leaked and never freed.
        let r = unsafe { &*h };
        if r.busy.load(Ordering::Relaxed) == 0
            && r.busy
                .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return Some(r);
        }
        h = r.next.load(Ordering::Acquire);
    }
    let fresh: &'static Holder = Box::leak(Box::new(Holder::new()));
    let mut head = HOLDERS.load(Ordering::Relaxed);
    loop {
        fresh.next.store(head, Ordering::Relaxed);
        match HOLDERS.compare_exchange_weak(
            head,
            ptr::from_ref(fresh).cast_mut(),
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => return Some(fresh),
            Err(now) => head = now,
        }
    }
}

/// Under loom every cache gets a holder of its own (leaked: models are small).
#[cfg(loom)]
fn register_holder() -> Option<&'static Holder> {
    Some(Box::leak(Box::new(Holder::new())))
}

#[cfg(not(loom))]
thread_local! {
    /// This thread's reservation cache. `ManuallyDrop` so that it has no destructor: a
    /// thread-local without one is a plain thread-local variable, read on the hot paths
    /// with no lazy-initialisation or destructor-registration check. Its reservations are
    /// abandoned at thread exit by [`EXIT`] instead, which is armed (once, off the hot path)
    /// before the thread can hold any.
    static LOCAL: ManuallyDrop<Local> = const { ManuallyDrop::new(Local::new()) };
    /// Abandons [`LOCAL`]'s reservations when the thread exits.
    static EXIT: Exit = const { Exit };
}

/// The exit hook of a thread's reservation cache.
#[cfg(not(loom))]
struct Exit;

#[cfg(not(loom))]
impl Drop for Exit {
    fn drop(&mut self) {
        // `LOCAL` has no destructor, so it is still readable here.
        let _ = LOCAL.try_with(|l| l.abandon_all());
    }
}

/// Arm this thread's exit hook; `false` once it has run (the thread is exiting).
#[cfg(not(loom))]
#[cold]
fn arm_exit() -> bool {
    EXIT.try_with(|_| ()).is_ok()
}

/// Under loom no cache is thread-local (the models drop theirs explicitly).
#[cfg(loom)]
fn arm_exit() -> bool {
    true
}

/// Run `f` with this thread's cache (always there: it has no destructor).
#[cfg(not(loom))]
#[inline(always)]
fn with_local<R>(f: impl FnOnce(&Local) -> R) -> Option<R> {
    LOCAL.try_with(|l| f(l)).ok()
}

/// Under loom the public `insert`/`take` use no cache (the models drive caches
/// explicitly with `insert_with` / `take_with`).
#[cfg(loom)]
#[inline(always)]
fn with_local<R>(_f: impl FnOnce(&Local) -> R) -> Option<R> {
    None
}

/// One slot, alone on its cache lines (128 bytes, as [`Holder`]): threads that each reuse
/// their own slot never write to a line another thread uses.
#[repr(align(128))]
struct Slot<P> {
    state: AtomicU64,
    /// The holder of the slot's reservation (meaningful while `RESERVED`).
    owner: AtomicPtr<Holder>,
    /// The reservation's token (meaningful while `RESERVED`).
    token: AtomicU64,
    value: UnsafeCell<MaybeUninit<P>>,
}

impl<P> Slot<P> {
    /// A never-used slot: `CLAIMED`, reserved for whoever claims its index fresh.
    fn new() -> Self {
        Slot {
            state: AtomicU64::new(CLAIMED),
            owner: AtomicPtr::new(ptr::null_mut()),
            token: AtomicU64::new(0),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }
}

/// Which segment holds slot `index`, and where in it.
#[inline]
fn locate(index: u32) -> (usize, usize) {
    if index < FIRST {
        return (0, index as usize);
    }
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

    /// An empty table holding at most `limit` slots (capped at [`MAX_SLOTS`]): permits in
    /// flight plus the reservations live threads keep in it, so leave room for those.
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
    /// the caller can hand it back to its guard. Uses this thread's reservation cache.
    #[inline]
    pub fn insert(&self, permit: P) -> Result<PermitToken, (P, GuardsResult)> {
        match self.claim_for_insert() {
            Some((index, slot, generation)) => Ok(self.fill(index, slot, generation, permit)),
            None => Err((permit, GuardsResult::PermitSlotsExhausted)),
        }
    }

    /// The slot an insert on this thread fills: its reservation here, or one claimed.
    #[inline(always)]
    fn claim_for_insert(&self) -> Option<(u32, &Slot<P>, u32)> {
        match with_local(|l| self.cached(l)) {
            Some(Some(found)) => Some(found),
            _ => self.claim_slow(),
        }
    }

    /// [`insert`](Self::insert), handing the permit to `give_back` when no slot can be
    /// had (then the code is returned): the permit never travels inside a return value, so
    /// the hot path keeps it in registers.
    #[inline(always)]
    pub fn insert_or(
        &self,
        permit: P,
        give_back: impl FnOnce(P),
    ) -> Result<PermitToken, GuardsResult> {
        match self.claim_for_insert() {
            Some((index, slot, generation)) => Ok(self.fill(index, slot, generation, permit)),
            None => {
                give_back(permit);
                Err(GuardsResult::PermitSlotsExhausted)
            }
        }
    }

    /// Take back the permit of `token`, once. Refused with `PermitWrongGuard` (another
    /// guard's token), `PermitAlreadyReported` (taken before) or `PermitUnknown` (never
    /// issued here); a refusal changes nothing. The emptied slot may be kept in this
    /// thread's reservation cache for its next insert into this table.
    #[inline(always)]
    pub fn take(&self, token: PermitToken) -> Result<P, GuardsResult> {
        let (slot, permit) = self.take_out(token)?;
        let kept = with_local(|l| self.reserve(l, slot, token)).unwrap_or(false);
        if !kept {
            self.release_slot(slot, token);
        }
        Ok(permit)
    }

    /// [`insert`](Self::insert) with the reservation cache `local` instead of this thread's
    /// own (for tests that play several threads' caches, e.g. under loom).
    pub fn insert_with(&self, local: &Local, permit: P) -> Result<PermitToken, (P, GuardsResult)> {
        match self.cached(local) {
            Some((index, slot, generation)) => Ok(self.fill(index, slot, generation, permit)),
            None => self.insert_slow_with(local, permit),
        }
    }

    /// [`take`](Self::take) with the reservation cache `local`.
    pub fn take_with(&self, local: &Local, token: PermitToken) -> Result<P, GuardsResult> {
        let (slot, permit) = self.take_out(token)?;
        if !self.reserve(local, slot, token) {
            self.release_slot(slot, token);
            local.hint.set(token.slot);
        }
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
        self.count(FULL)
    }

    /// How many slots are reserved for a thread's next insert now (a scan; diagnostics).
    pub fn reserved(&self) -> u64 {
        self.count(RESERVED)
    }

    fn count(&self, status: u64) -> u64 {
        let claimed = self.fresh.load(Ordering::Acquire);
        (0..claimed)
            .filter_map(|i| self.slot(i))
            .filter(|s| s.state.load(Ordering::Acquire) & STATUS == status)
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

    /// Write `permit` into a slot this thread owns (claimed, or reserved for it) and
    /// publish it.
    #[inline(always)]
    fn fill(&self, index: u32, slot: &Slot<P>, generation: u32, permit: P) -> PermitToken {
        // SAFETY: the slot is `CLAIMED` by us (our compare-and-swap, or a fresh index only
        // we were given) or `RESERVED` for this thread's cache, whose holder lists the
        // reservation (so nobody takes it over); either way no other thread reads or
        // writes its value until the store below publishes it, and it holds no value.
        slot.value.with_mut(|v| unsafe { (*v).write(permit) });
        slot.state
            .store((u64::from(generation) << 32) | FULL, Ordering::Release);
        PermitToken {
            guard: self.guard,
            slot: index,
            generation,
        }
    }

    /// The reservation `local` holds in this table, if any (and the way freed). With none,
    /// and every way taken by other tables, evict one so that a later take here can keep a
    /// slot.
    #[inline(always)]
    fn cached(&self, local: &Local) -> Option<(u32, &Slot<P>, u32)> {
        for way in &local.ways {
            let w = way.get();
            if w.guard == self.guard {
                way.set(Way::EMPTY);
                // SAFETY: the way was filled by `reserve` on this table (ids are unique
                // and never reused) with a slot of one of its segments, which live as
                // long as the table, and the table is alive (we are called on it).
                let slot = unsafe { &*w.slot.cast::<Slot<P>>() };
                return Some((w.index, slot, w.generation));
            }
        }
        if local.ways.iter().all(|w| w.get().guard != 0) {
            self.evict(local);
        }
        None
    }

    /// Abandon the reservation of the next victim way.
    #[cold]
    fn evict(&self, local: &Local) {
        let v = local.victim.get() as usize % WAYS;
        local.victim.set((v as u32 + 1) % WAYS as u32);
        if let Some(way) = local.ways.get(v) {
            way.set(Way::EMPTY);
        }
        let h = local.holder.get();
        if !h.is_null() {
            // SAFETY: holders are never freed.
            let h = unsafe { &*h };
            if let Some(held) = h.held.get(v) {
                // Ordering: release: this thread's use of the slot happened before a
                // table that sees the token gone takes the slot over.
                held.store(0, Ordering::Release);
            }
        }
    }

    /// Keep the slot just emptied for `local`'s next insert into this table, if a way is
    /// free: publish the reservation in the holder, then the slot as `RESERVED` of the next
    /// generation.
    #[inline(always)]
    fn reserve(&self, local: &Local, slot: &Slot<P>, token: PermitToken) -> bool {
        let Some(k) = local.ways.iter().position(|w| w.get().guard == 0) else {
            return false;
        };
        let Some(holder) = local.holder() else {
            return false;
        };
        let (Some(way), Some(held)) = (local.ways.get(k), holder.held.get(k)) else {
            return false;
        };
        let t = holder.tokens.load(Ordering::Relaxed).wrapping_add(1).max(1);
        holder.tokens.store(t, Ordering::Relaxed);
        held.store(t, Ordering::Relaxed);
        slot.owner
            .store(ptr::from_ref(holder).cast_mut(), Ordering::Relaxed);
        slot.token.store(t, Ordering::Relaxed);
        let generation = token.generation.wrapping_add(1);
        // Ordering: release: the holder's token, the slot's owner and token, and our read of
        // the value all happen before anyone who sees the reservation.
        slot.state
            .store((u64::from(generation) << 32) | RESERVED, Ordering::Release);
        way.set(Way {
            guard: self.guard,
            slot: ptr::from_ref(slot).cast(),
            index: token.slot,
            generation,
        });
        true
    }

    /// The take itself: the slot's compare-and-swap, and the value read out.
    #[inline(always)]
    fn take_out(&self, token: PermitToken) -> Result<(&Slot<P>, P), GuardsResult> {
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
        // value until we release the slot, so we have exclusive access to an initialised
        // value (its write happened before the release store we synchronised with).
        let permit = slot.value.with(|v| unsafe { (*v).assume_init_read() });
        Ok((slot, permit))
    }

    /// Free the slot just emptied for the next generation.
    #[inline(always)]
    fn release_slot(&self, slot: &Slot<P>, token: PermitToken) {
        let next = u64::from(token.generation.wrapping_add(1)) << 32;
        slot.state.store(next | FREE, Ordering::Release);
        let _ = with_local(|l| l.hint.set(token.slot));
    }

    /// A slot for a thread without a reservation here: a `FREE` one near its hint, a
    /// never-used one, or any at all.
    #[inline(never)]
    fn claim_slow(&self) -> Option<(u32, &Slot<P>, u32)> {
        let hint = with_local(|l| l.hint.get()).unwrap_or(0);
        let claimed = self
            .claim_free(hint)
            .or_else(|| self.claim_fresh())
            .or_else(|| self.claim_any());
        if let Some((index, _, _)) = claimed {
            let _ = with_local(|l| l.hint.set(index.wrapping_add(1)));
        }
        claimed
    }

    fn insert_slow_with(&self, local: &Local, permit: P) -> Result<PermitToken, (P, GuardsResult)> {
        let claimed = self
            .claim_free(local.hint.get())
            .or_else(|| self.claim_fresh())
            .or_else(|| self.claim_any());
        let Some((index, slot, generation)) = claimed else {
            return Err((permit, GuardsResult::PermitSlotsExhausted));
        };
        local.hint.set(index.wrapping_add(1));
        Ok(self.fill(index, slot, generation, permit))
    }

    /// Claim `slot` if it is `FREE`, or an abandoned reservation when `reclaim` is set.
    #[inline]
    fn claim(slot: &Slot<P>, reclaim: bool) -> Option<u32> {
        let s = slot.state.load(Ordering::Acquire);
        let free = match s & STATUS {
            FREE => true,
            RESERVED if reclaim => {
                let owner = slot.owner.load(Ordering::Relaxed);
                let token = slot.token.load(Ordering::Relaxed);
                // SAFETY: holders are never freed (a null owner is never published).
                owner.is_null() || !unsafe { &*owner }.holds(token)
            }
            _ => false,
        };
        let claimed = (s & !STATUS) | CLAIMED;
        (free
            && slot
                .state
                .compare_exchange(s, claimed, Ordering::Acquire, Ordering::Relaxed)
                .is_ok())
        .then_some((s >> 32) as u32)
    }

    /// Claim a `FREE` slot among the [`PROBES`] from `hint` on.
    #[inline]
    fn claim_free(&self, hint: u32) -> Option<(u32, &Slot<P>, u32)> {
        let n = self.fresh.load(Ordering::Acquire);
        if n == 0 {
            return None;
        }
        let mut i = hint;
        if i >= n {
            i %= n;
        }
        for _ in 0..PROBES.min(n) {
            if let Some(slot) = self.slot(i) {
                if let Some(g) = Self::claim(slot, false) {
                    return Some((i, slot, g));
                }
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
        None
    }

    /// A slot of the whole table: `FREE`, or an abandoned reservation (taken over).
    #[cold]
    fn claim_scan(&self) -> Option<(u32, &Slot<P>, u32)> {
        let n = self.fresh.load(Ordering::Acquire);
        (0..n).find_map(|i| {
            let slot = self.slot(i)?;
            Self::claim(slot, true).map(|g| (i, slot, g))
        })
    }

    /// The table is at its limit: look at every allocated slot (a few rounds, as slots are
    /// freed and claimed while we look) before giving up, recovering abandoned reservations.
    /// A table as large as the most permits ever out at once plus the live threads'
    /// reservations always finds a slot here.
    #[cold]
    fn claim_any(&self) -> Option<(u32, &Slot<P>, u32)> {
        (0..4).find_map(|_| self.claim_scan())
    }

    /// Claim a never-used slot (it starts `CLAIMED`, generation 0), allocating its segment
    /// if needed; before allocating one, recover an abandoned reservation instead.
    #[cold]
    fn claim_fresh(&self) -> Option<(u32, &Slot<P>, u32)> {
        let mut n = self.fresh.load(Ordering::Relaxed);
        loop {
            if n >= self.limit {
                return None;
            }
            let (k, offset) = locate(n);
            if offset == 0 && k > 0 {
                // The next fresh slot needs a new segment: an abandoned reservation first.
                if let Some(found) = self.claim_scan() {
                    return Some(found);
                }
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
    fn a_full_table_recovers_abandoned_reservations() {
        let s: PermitSlots<u32> = PermitSlots::with_limit(64);
        let a = Local::new();
        let tokens: Vec<_> = (0..64).map(|i| s.insert_with(&a, i).unwrap()).collect();
        assert_eq!(
            s.insert_with(&a, 99),
            Err((99, GuardsResult::PermitSlotsExhausted))
        );
        // Another thread takes two permits back and keeps both slots for itself.
        let b = Local::new();
        assert_eq!(s.take_with(&b, tokens[3]), Ok(3));
        assert_eq!(s.take_with(&b, tokens[40]), Ok(40));
        assert_eq!((s.reserved(), s.outstanding()), (2, 62));
        // Nobody else gets them while their thread is alive.
        assert_eq!(
            s.insert_with(&a, 98),
            Err((98, GuardsResult::PermitSlotsExhausted))
        );
        // Its next insert fills one with plain stores.
        let mine = s.insert_with(&b, 100).unwrap();
        assert!(mine.slot == 3 || mine.slot == 40, "{mine:?}");
        // It exits: the other reservation is abandoned and the full table recovers it.
        drop(b);
        let far = s.insert_with(&a, 101).unwrap();
        assert_eq!(far.slot, if mine.slot == 3 { 40 } else { 3 });
        assert_eq!((s.allocated(), s.outstanding(), s.reserved()), (64, 64, 0));
        assert_eq!(s.take_with(&a, far), Ok(101));
        assert_eq!(
            s.take_with(&a, far),
            Err(GuardsResult::PermitAlreadyReported)
        );
    }

    #[test]
    fn an_evicted_reservation_is_recovered_before_growth() {
        // A thread with every way taken by other tables evicts one on a miss; the table of
        // the evicted way takes the slot back before it grows a segment.
        let tables: Vec<PermitSlots<u32>> = (0..WAYS + 1).map(|_| PermitSlots::new()).collect();
        let local = Local::new();
        let first: Vec<_> = tables
            .iter()
            .map(|t| t.insert_with(&local, 1).unwrap())
            .collect();
        for (t, tok) in tables.iter().zip(&first).take(WAYS) {
            assert_eq!(t.take_with(&local, *tok), Ok(1));
            assert_eq!(t.reserved(), 1);
        }
        // A miss on the last table evicts way 0 (the first table's reservation).
        let last = tables.last().unwrap();
        assert_eq!(last.take_with(&local, first[WAYS]), Ok(1));
        let again = last.insert_with(&local, 2).unwrap();
        assert_eq!(last.take_with(&local, again), Ok(2));
        let t0 = &tables[0];
        assert_eq!(t0.reserved(), 1);
        // Fill the first segment of table 0 from another thread: the 17th insert would grow
        // the table, and recovers the abandoned slot instead.
        let other = Local::new();
        let held: Vec<_> = (0..FIRST - 1)
            .map(|i| t0.insert_with(&other, i).unwrap())
            .collect();
        assert_eq!(t0.allocated(), FIRST);
        let recovered = t0.insert_with(&other, 99).unwrap();
        assert_eq!(recovered.slot, first[0].slot);
        assert_eq!((t0.allocated(), t0.reserved()), (FIRST, 0));
        for t in held.into_iter().chain([recovered]) {
            assert!(t0.take_with(&other, t).is_ok());
        }
    }

    #[test]
    fn a_thread_that_exits_leaves_its_reservations_to_the_table() {
        let s = std::sync::Arc::new(PermitSlots::<u32>::with_limit(2));
        let a = s.insert(1).unwrap();
        let b = s.insert(2).unwrap();
        let s2 = std::sync::Arc::clone(&s);
        std::thread::spawn(move || {
            // This thread's take keeps the slot reserved in its thread-local cache...
            assert_eq!(s2.take(a), Ok(1));
            assert_eq!(s2.reserved(), 1);
        })
        .join()
        .unwrap();
        // ...which it abandons when it exits: the full table recovers the slot.
        let c = s.insert(3).unwrap();
        assert_eq!(c.slot, a.slot);
        assert_eq!(s.take(c), Ok(3));
        assert_eq!(s.take(b), Ok(2));
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
