//! [`Shared`]: one guard in a region (or in memory the caller placed it in), used through
//! core's own code, with owner-recorded permits.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use guards_core::{Nanos, Outcome};

use crate::error::{Failure, GuardsResult};
use crate::permit::{PermitSlots, PermitToken};
use crate::shared::kind::{PermitView, SharedGuard, SharedPermits};
use crate::shared::owner::Owner;
use crate::shared::region::{name_of, region_failure, Region, REGION_TOKEN};
use crate::shared::table::PermitWords;

thread_local! {
    /// Where this thread's next permit claim starts: the record it last emptied (whose
    /// line it holds), or a spot spread by process and thread.
    static HINT: Cell<u32> = const { Cell::new(u32::MAX) };
}

#[inline]
fn hint() -> usize {
    HINT.try_with(|h| {
        let v = h.get();
        if v != u32::MAX {
            return v as usize;
        }
        static THREADS: AtomicU32 = AtomicU32::new(0);
        let spread = std::process::id()
            .wrapping_mul(2_654_435_761)
            .wrapping_add(THREADS.fetch_add(1, Ordering::Relaxed).wrapping_mul(97));
        let v = spread >> 1;
        h.set(v);
        v as usize
    })
    .unwrap_or(0)
}

#[inline]
fn set_hint(slot: u32) {
    let _ = HINT.try_with(|h| h.set(slot));
}

/// Where a [`Shared`] guard lives and where its permits are kept.
#[derive(Debug)]
enum Home {
    /// In a region, permits in its table with their owners.
    Region { region: Region, index: u32 },
    /// In memory the caller placed it in ([`super::place`]); permits in a table of this
    /// process (no owner record: nothing to reclaim across processes).
    Caller {
        slots: Box<PermitSlots<PermitWords>>,
    },
}

/// A refused acquire: the guard's own refusal, or a failure of the permit table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Refusal<R> {
    /// The guard refused (core's rejection).
    Rejected(R),
    /// No permit record could be had (`PermitSlotsExhausted`); the guard was left as if
    /// the call had not been made.
    Failed(Failure),
}

/// One guard of type `K` in shared memory: derefs to core's guard (every `&self` method
/// of core works unchanged, on the shared state), and hands out owner-recorded permits
/// ([`Shared::try_acquire`], [`Shared::report`]) for the kinds that have them.
pub struct Shared<K> {
    guard: NonNull<K>,
    home: Home,
    id: u64,
    _kind: PhantomData<K>,
}

// SAFETY: `Shared<K>` gives out `&K` only; `K: Sync` (every shared kind is atomics). The
// memory lives as long as the `Region` (an `Arc` of the mapping) held in `home`, or as the
// caller's placement contract says.
unsafe impl<K: Sync> Send for Shared<K> {}
// SAFETY: as above.
unsafe impl<K: Sync> Sync for Shared<K> {}

impl<K> std::fmt::Debug for Shared<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("id", &self.id)
            .field("home", &self.home)
            .finish()
    }
}

impl<K> std::ops::Deref for Shared<K> {
    type Target = K;
    fn deref(&self) -> &K {
        // SAFETY: `guard` points to an initialised `K` (a `READY` entry, or a placement the
        // caller vouched for) that lives as long as `self` (see the `Send` impl).
        unsafe { self.guard.as_ref() }
    }
}

impl<K: SharedGuard> Shared<K> {
    pub(super) fn in_region(region: Region, index: u32) -> Result<Shared<K>, Failure> {
        let e = region.entry(index)?;
        let p = region.place_of(e, std::mem::size_of::<K>(), std::mem::align_of::<K>())?;
        let guard = NonNull::new(p.cast::<K>())
            .ok_or_else(|| region_failure(GuardsResult::RegionInvalid, "a guard at address 0"))?;
        let id = REGION_TOKEN | (u64::from(region.id()) << 32) | u64::from(index);
        Ok(Shared {
            guard,
            home: Home::Region { region, index },
            id,
            _kind: PhantomData,
        })
    }

    /// A guard the caller placed (see [`super::place`]).
    ///
    /// # Safety
    /// `guard` must point to an initialised `K` that stays valid, and is only reached
    /// through `&K`, for as long as the result lives.
    pub(crate) unsafe fn in_caller_memory(guard: NonNull<K>) -> Shared<K> {
        let slots = Box::new(PermitSlots::new());
        let id = slots.guard_id();
        Shared {
            guard,
            home: Home::Caller { slots },
            id,
            _kind: PhantomData,
        }
    }

    /// The id its permit tokens carry (unique in this process).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Its region, if it lives in one.
    pub fn region(&self) -> Option<&Region> {
        match &self.home {
            Home::Region { region, .. } => Some(region),
            Home::Caller { .. } => None,
        }
    }

    /// Its name (in a region), from the directory.
    pub fn name(&self) -> Option<String> {
        match &self.home {
            Home::Region { region, index } => region.entries().get(*index as usize).map(name_of),
            Home::Caller { .. } => None,
        }
    }

    /// Core's guard (also reachable through `Deref`).
    pub fn guard(&self) -> &K {
        self
    }
}

impl<K: SharedPermits> Shared<K> {
    /// Ask the guard for a permit (core's `try_acquire` with `arg` and `now`). In a region
    /// the permit is recorded with this process as its owner before the guard is asked;
    /// when the guard refuses because it is full, the region's dead holders are reclaimed
    /// (at most once per `reclaim_interval`) and the guard is asked once more.
    #[inline]
    pub fn try_acquire(
        &self,
        arg: K::Arg,
        now: Nanos,
    ) -> Result<(PermitToken, PermitView), Refusal<K::Rejected>> {
        match &self.home {
            Home::Region { region, index } => {
                let table = region.table();
                let me = Owner::me();
                let claim = match table.claim(me, u64::from(*index), hint()) {
                    Some(c) => c,
                    None => {
                        region.reclaim_on_full(now);
                        table
                            .claim(me, u64::from(*index), hint())
                            .ok_or(Refusal::Failed(Failure::code(
                                GuardsResult::PermitSlotsExhausted,
                            )))?
                    }
                };
                let permit = match self.acquire(arg, now) {
                    Ok(p) => p,
                    Err(r) if K::is_full(&r) && region.reclaim_on_full(now) > 0 => {
                        match self.acquire(arg, now) {
                            Ok(p) => p,
                            Err(r) => {
                                table.abandon(claim);
                                return Err(Refusal::Rejected(r));
                            }
                        }
                    }
                    Err(r) => {
                        table.abandon(claim);
                        return Err(Refusal::Rejected(r));
                    }
                };
                let view = K::view(&permit);
                let (slot, generation) = (claim.slot, claim.generation);
                table.publish(claim, K::encode(&permit));
                set_hint(slot);
                Ok((
                    PermitToken {
                        guard: self.id,
                        slot,
                        generation,
                    },
                    view,
                ))
            }
            Home::Caller { slots } => {
                let permit = self.acquire(arg, now).map_err(Refusal::Rejected)?;
                let view = K::view(&permit);
                match slots.insert(K::encode(&permit)) {
                    Ok(t) => Ok((t, view)),
                    Err((_, code)) => {
                        self.guard().report(permit, Outcome::Ignored, now);
                        Err(Refusal::Failed(Failure::code(code)))
                    }
                }
            }
        }
    }

    /// Hand the permit of `token` back with how the call ended (core's `report`), once. A
    /// second report, a token of another guard, a made-up one or one reclaimed from a dead
    /// owner is refused (`PermitAlreadyReported`, `PermitWrongGuard`, `PermitUnknown`) and
    /// changes nothing.
    #[inline]
    pub fn report(
        &self,
        token: PermitToken,
        outcome: Outcome,
        now: Nanos,
    ) -> Result<K::Verdict, GuardsResult> {
        if token.guard != self.id {
            return Err(GuardsResult::PermitWrongGuard);
        }
        let words = match &self.home {
            Home::Region { region, index } => {
                let w = region
                    .table()
                    .take(token.slot, token.generation, u64::from(*index))?;
                set_hint(token.slot);
                w
            }
            Home::Caller { slots } => slots.take(token)?,
        };
        let permit = K::decode(words).ok_or(GuardsResult::PermitUnknown)?;
        Ok(self.guard().report(permit, outcome, now))
    }

    /// Permits of this guard held now, all processes (a scan of the region's table; this
    /// process's table for a guard in caller memory).
    pub fn outstanding(&self) -> u64 {
        match &self.home {
            Home::Region { region, index } => region.held_by(*index),
            Home::Caller { slots } => slots.outstanding(),
        }
    }

    #[inline]
    fn acquire(&self, arg: K::Arg, now: Nanos) -> Result<K::Permit, K::Rejected> {
        self.guard().acquire(arg, now)
    }
}
