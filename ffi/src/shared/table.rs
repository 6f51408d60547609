//! The permit table of a region: a fixed number of records, each holding one permit and
//! its owner, claimed and emptied with compare-and-swaps. Lock-free, no allocation, no
//! pointers: it lives in the region beside the guards.
//!
//! # A record
//!
//! One 64-byte line: a state word, the owner's start time, the guard (its directory
//! index), four words of core's permit (see `kind.rs`, `encode` / `decode`) and a spare.
//! The state word is
//!
//! ```text
//!  63                        32 31                            2 1  0
//! +----------------------------+-------------------------------+----+
//! |   generation (32 bits)     |     owner pid (30 bits)       | st |
//! +----------------------------+-------------------------------+----+
//! st: 0 FREE, 1 CLAIMED (being filled), 2 FULL (holds a permit), 3 TAKING (being emptied)
//! ```
//!
//! The owner's pid is in the state word so that the compare-and-swap that claims a record
//! also names its owner: a record is never claimed without one. (Linux pids are below
//! 2^22; 30 bits hold any of them.)
//!
//! # The protocol
//!
//! - [`PermitTable::claim`]: find a `FREE` record (from a starting index, around the
//!   table once) and compare-and-swap it to `gen | pid | CLAIMED` (acquire), then store
//!   the owner's start time and the guard. The caller asks its guard for a permit only now,
//!   so a process killed at any point either holds a claimed record or none.
//! - [`PermitTable::publish`]: store the permit's words, then `gen | pid | FULL` with a
//!   release store. The caller's token carries `gen`.
//! - [`PermitTable::abandon`]: the guard refused; the record goes back to `gen | FREE` (no
//!   token of this generation was issued).
//! - [`PermitTable::take`]: compare-and-swap `gen | pid | FULL` to `gen | pid | TAKING`;
//!   only one caller wins it, so a permit comes out at most once. The winner reads the
//!   words, clears the owner and stores `(gen + 1) | FREE` (release).
//! - [`PermitTable::reclaim`]: a record that is `FULL` or `CLAIMED` by an owner found dead
//!   is taken with the same compare-and-swap from the state word it was judged by, so a
//!   reclaim and the owner's own report (or a second reclaimer) cannot both get a permit,
//!   and a record reused since it was judged (its generation moved on) is left alone.
//!   The owner's start time is cleared before every `FREE` store, so a reclaimer that sees
//!   a `CLAIMED` record reads either 0 (not yet stored: it judges by the pid alone) or the
//!   claimer's start time, never the previous owner's.
//!
//! A `CLAIMED` record of a dead owner says the owner died while asking its guard: either
//! before the guard granted (nothing to give back) or in the few stores between the grant
//! and the publication (the grant is lost). The table cannot tell which; reclaim frees the
//! record and counts it apart (`reclaimed_claims` in the region's stats).
//!
//! Generations are 32 bits: a stale token is mistaken for a newer permit only after its
//! record was reused 2^32 times. `tests/loom_shared.rs` model-checks take, double take,
//! reuse and reclaim races.

use std::sync::atomic::Ordering;

use crate::error::GuardsResult;
use crate::shared::owner::Owner;

/// An atomic 64-bit word: the standard one in a region, loom's in the models.
pub trait Word: Sync + Send {
    /// A word holding 0.
    fn zero() -> Self;
    /// Atomic load.
    fn load(&self, order: Ordering) -> u64;
    /// Atomic store.
    fn store(&self, v: u64, order: Ordering);
    /// Atomic compare-and-swap.
    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64>;
}

impl Word for std::sync::atomic::AtomicU64 {
    fn zero() -> Self {
        std::sync::atomic::AtomicU64::new(0)
    }
    #[inline]
    fn load(&self, order: Ordering) -> u64 {
        std::sync::atomic::AtomicU64::load(self, order)
    }
    #[inline]
    fn store(&self, v: u64, order: Ordering) {
        std::sync::atomic::AtomicU64::store(self, v, order)
    }
    #[inline]
    fn compare_exchange(&self, c: u64, n: u64, s: Ordering, f: Ordering) -> Result<u64, u64> {
        std::sync::atomic::AtomicU64::compare_exchange(self, c, n, s, f)
    }
}

#[cfg(loom)]
impl Word for loom::sync::atomic::AtomicU64 {
    fn zero() -> Self {
        loom::sync::atomic::AtomicU64::new(0)
    }
    fn load(&self, order: Ordering) -> u64 {
        loom::sync::atomic::AtomicU64::load(self, order)
    }
    fn store(&self, v: u64, order: Ordering) {
        loom::sync::atomic::AtomicU64::store(self, v, order)
    }
    fn compare_exchange(&self, c: u64, n: u64, s: Ordering, f: Ordering) -> Result<u64, u64> {
        loom::sync::atomic::AtomicU64::compare_exchange(self, c, n, s, f)
    }
}

/// The words of core's permit kept in a record.
pub type PermitWords = [u64; 4];

/// One permit record: a cache line of atomic words (see the module docs).
#[repr(C, align(64))]
#[derive(Debug)]
pub struct Record<W = std::sync::atomic::AtomicU64> {
    state: W,
    start: W,
    guard: W,
    words: [W; 4],
    _spare: W,
}

impl<W: Word> Record<W> {
    /// A free record of generation 0 (what zeroed memory holds).
    pub fn new() -> Self {
        Record {
            state: W::zero(),
            start: W::zero(),
            guard: W::zero(),
            words: [W::zero(), W::zero(), W::zero(), W::zero()],
            _spare: W::zero(),
        }
    }
}

impl<W: Word> Default for Record<W> {
    fn default() -> Self {
        Record::new()
    }
}

const FREE: u64 = 0;
const CLAIMED: u64 = 1;
const FULL: u64 = 2;
const TAKING: u64 = 3;
const STATUS: u64 = 3;
const PID_SHIFT: u32 = 2;
const PID_MASK: u64 = (1 << 30) - 1;

#[inline]
const fn generation_of(s: u64) -> u32 {
    (s >> 32) as u32
}

#[inline]
const fn pid_of(s: u64) -> u32 {
    ((s >> PID_SHIFT) & PID_MASK) as u32
}

#[inline]
const fn pack(generation: u32, pid: u32, status: u64) -> u64 {
    ((generation as u64) << 32) | (((pid as u64) & PID_MASK) << PID_SHIFT) | status
}

/// A record claimed by [`PermitTable::claim`], to be published or abandoned.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a claim must be published or abandoned"]
pub struct Claim {
    /// The record's index.
    pub slot: u32,
    /// Its generation: the token's.
    pub generation: u32,
    state: u64,
}

/// What a reclaim took from a dead owner's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reclaimed {
    /// A published permit of guard `guard`: give it back to the guard as cancelled.
    Permit {
        /// The guard (directory index) it belongs to.
        guard: u64,
        /// Core's permit, encoded.
        words: PermitWords,
        /// Its owner.
        owner: Owner,
    },
    /// A record claimed but never published: its owner died while asking the guard.
    Claim {
        /// Its owner.
        owner: Owner,
    },
}

/// A permit table over `records` (a region's, or a model's).
#[derive(Debug)]
pub struct PermitTable<'a, W = std::sync::atomic::AtomicU64> {
    records: &'a [Record<W>],
}

impl<'a, W: Word> PermitTable<'a, W> {
    /// The table over `records`.
    pub fn new(records: &'a [Record<W>]) -> Self {
        PermitTable { records }
    }

    /// How many records it has.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Claim a free record for `owner` and `guard`, looking from index `from` around the
    /// table once. `None`: every record is in use.
    #[inline]
    pub fn claim(&self, owner: Owner, guard: u64, from: usize) -> Option<Claim> {
        let n = self.records.len();
        if n == 0 {
            return None;
        }
        let mut i = if from < n { from } else { from % n };
        for _ in 0..n {
            if let Some(r) = self.records.get(i) {
                let s = r.state.load(Ordering::Relaxed);
                if s & STATUS == FREE {
                    let claimed = pack(generation_of(s), owner.pid, CLAIMED);
                    if r.state
                        .compare_exchange(s, claimed, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        r.start.store(owner.start, Ordering::Relaxed);
                        r.guard.store(guard, Ordering::Relaxed);
                        return Some(Claim {
                            slot: i as u32,
                            generation: generation_of(s),
                            state: claimed,
                        });
                    }
                }
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
        None
    }

    /// Store the permit's `words` in the claimed record and publish it.
    #[inline]
    pub fn publish(&self, claim: Claim, words: PermitWords) {
        if let Some(r) = self.records.get(claim.slot as usize) {
            for (w, v) in r.words.iter().zip(words) {
                w.store(v, Ordering::Relaxed);
            }
            r.state
                .store((claim.state & !STATUS) | FULL, Ordering::Release);
        }
    }

    /// Give a claimed record back unused (the guard refused).
    #[inline]
    pub fn abandon(&self, claim: Claim) {
        if let Some(r) = self.records.get(claim.slot as usize) {
            r.start.store(0, Ordering::Relaxed);
            r.state
                .store(pack(claim.generation, 0, FREE), Ordering::Release);
        }
    }

    /// Take the permit of (`slot`, `generation`), once, for `guard`. Refused with
    /// `PermitUnknown` (never issued), `PermitAlreadyReported` (taken or reclaimed before)
    /// or `PermitWrongGuard` (another guard's record); a refusal changes nothing.
    #[inline]
    pub fn take(
        &self,
        slot: u32,
        generation: u32,
        guard: u64,
    ) -> Result<PermitWords, GuardsResult> {
        let r = self
            .records
            .get(slot as usize)
            .ok_or(GuardsResult::PermitUnknown)?;
        let s = r.state.load(Ordering::Acquire);
        if generation_of(s) != generation || s & STATUS != FULL {
            return Err(refusal(s, generation));
        }
        if r.guard.load(Ordering::Relaxed) != guard {
            // Judged on the published record of this generation: a token of another guard.
            return Err(GuardsResult::PermitWrongGuard);
        }
        r.state
            .compare_exchange(
                s,
                (s & !STATUS) | TAKING,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .map_err(|now| refusal(now, generation))?;
        Ok(self.empty(r, generation))
    }

    /// Read the words of a record we moved to `TAKING`, then free it for the next
    /// generation.
    #[inline]
    fn empty(&self, r: &Record<W>, generation: u32) -> PermitWords {
        let words = [
            r.words[0].load(Ordering::Relaxed),
            r.words[1].load(Ordering::Relaxed),
            r.words[2].load(Ordering::Relaxed),
            r.words[3].load(Ordering::Relaxed),
        ];
        r.start.store(0, Ordering::Relaxed);
        r.state
            .store(pack(generation.wrapping_add(1), 0, FREE), Ordering::Release);
        words
    }

    /// Look at record `slot`: if it is held (published or claimed) by an owner `is_dead`
    /// says is dead, take it and say what it held.
    pub fn reclaim(&self, slot: u32, mut is_dead: impl FnMut(Owner) -> bool) -> Option<Reclaimed> {
        let r = self.records.get(slot as usize)?;
        let s = r.state.load(Ordering::Acquire);
        let status = s & STATUS;
        if status != FULL && status != CLAIMED {
            return None;
        }
        let owner = Owner {
            pid: pid_of(s),
            start: r.start.load(Ordering::Relaxed),
        };
        if !is_dead(owner) {
            return None;
        }
        r.state
            .compare_exchange(
                s,
                (s & !STATUS) | TAKING,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .ok()?;
        let guard = r.guard.load(Ordering::Relaxed);
        let words = self.empty(r, generation_of(s));
        Some(if status == FULL {
            Reclaimed::Permit {
                guard,
                words,
                owner,
            }
        } else {
            Reclaimed::Claim { owner }
        })
    }

    /// The guard of a published record, if it holds one now (for counting; racy by nature).
    pub fn held_by(&self, slot: u32) -> Option<u64> {
        let r = self.records.get(slot as usize)?;
        let s = r.state.load(Ordering::Acquire);
        (s & STATUS == FULL).then(|| r.guard.load(Ordering::Relaxed))
    }

    /// How many records hold a published permit now (a scan; exact at rest).
    pub fn outstanding(&self) -> u64 {
        self.records
            .iter()
            .filter(|r| r.state.load(Ordering::Acquire) & STATUS == FULL)
            .count() as u64
    }
}

/// Why a take of a token of `generation` failed, given the record's state word `now`.
#[cold]
fn refusal(now: u64, generation: u32) -> GuardsResult {
    let behind = generation_of(now).wrapping_sub(generation);
    if (behind != 0 && behind < (1 << 31)) || (behind == 0 && now & STATUS == TAKING) {
        GuardsResult::PermitAlreadyReported
    } else {
        GuardsResult::PermitUnknown
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn owner(pid: u32) -> Owner {
        Owner { pid, start: 77 }
    }

    #[test]
    fn a_record_is_one_line_and_zero_is_free() {
        assert_eq!(std::mem::size_of::<Record>(), 64);
        assert_eq!(std::mem::align_of::<Record>(), 64);
        assert_eq!(pack(0, 0, FREE), 0);
        let s = pack(7, (1 << 22) + 3, FULL);
        assert_eq!(
            (generation_of(s), pid_of(s), s & STATUS),
            (7, (1 << 22) + 3, FULL)
        );
    }

    #[test]
    fn claim_publish_take_once() {
        let records: Vec<Record> = (0..3).map(|_| Record::new()).collect();
        let t = PermitTable::new(&records);
        let c = t.claim(owner(10), 5, 1).unwrap();
        assert_eq!((c.slot, c.generation), (1, 0));
        let (slot, generation) = (c.slot, c.generation);
        t.publish(c, [1, 2, 3, 4]);
        assert_eq!(t.outstanding(), 1);
        assert_eq!(t.held_by(slot), Some(5));
        assert_eq!(
            t.take(slot, generation, 6),
            Err(GuardsResult::PermitWrongGuard)
        );
        assert_eq!(
            t.take(slot, generation + 1, 5),
            Err(GuardsResult::PermitUnknown)
        );
        assert_eq!(t.take(slot, generation, 5), Ok([1, 2, 3, 4]));
        assert_eq!(
            t.take(slot, generation, 5),
            Err(GuardsResult::PermitAlreadyReported)
        );
        assert_eq!(t.take(9, 0, 5), Err(GuardsResult::PermitUnknown));
        assert_eq!(t.outstanding(), 0);
        // The next claim of that record is the next generation.
        let again = t.claim(owner(10), 5, 1).unwrap();
        assert_eq!((again.slot, again.generation), (1, 1));
        t.abandon(again);
        let third = t.claim(owner(11), 5, 1).unwrap();
        assert_eq!(third.generation, 1, "an abandoned claim issued no token");
        t.abandon(third);
    }

    #[test]
    fn a_full_table_claims_nothing_and_wraps_around() {
        let records: Vec<Record> = (0..2).map(|_| Record::new()).collect();
        let t = PermitTable::new(&records);
        let a = t.claim(owner(1), 0, 1).unwrap();
        let b = t.claim(owner(1), 0, 1).unwrap();
        assert_eq!((a.slot, b.slot), (1, 0));
        assert_eq!(t.claim(owner(1), 0, 0), None);
        t.abandon(a);
        t.abandon(b);
        assert!(PermitTable::<std::sync::atomic::AtomicU64>::new(&[])
            .claim(owner(1), 0, 0)
            .is_none());
    }

    #[test]
    fn reclaim_takes_only_dead_owners_records() {
        let records: Vec<Record> = (0..4).map(|_| Record::new()).collect();
        let t = PermitTable::new(&records);
        let alive = t.claim(owner(1), 3, 0).unwrap();
        let (alive_slot, alive_gen) = (alive.slot, alive.generation);
        t.publish(alive, [9, 9, 9, 9]);
        let dead = t.claim(owner(2), 3, 0).unwrap();
        let (dead_slot, dead_gen) = (dead.slot, dead.generation);
        t.publish(dead, [7, 0, 0, 0]);
        let half = t.claim(owner(2), 3, 0).unwrap();
        let half_slot = half.slot;
        drop(half); // the owner "died" before publishing
        let dead_pid = |o: Owner| o.pid == 2;
        assert_eq!(t.reclaim(alive_slot, dead_pid), None);
        assert_eq!(
            t.reclaim(dead_slot, dead_pid),
            Some(Reclaimed::Permit {
                guard: 3,
                words: [7, 0, 0, 0],
                owner: owner(2)
            })
        );
        assert_eq!(t.reclaim(dead_slot, dead_pid), None, "reclaimed once");
        assert_eq!(
            t.reclaim(half_slot, dead_pid),
            Some(Reclaimed::Claim { owner: owner(2) })
        );
        assert_eq!(t.reclaim(3, dead_pid), None, "a free record");
        // The dead owner's token is refused now; the live one still works.
        assert_eq!(
            t.take(dead_slot, dead_gen, 3),
            Err(GuardsResult::PermitAlreadyReported)
        );
        assert_eq!(t.take(alive_slot, alive_gen, 3), Ok([9, 9, 9, 9]));
        assert_eq!(t.outstanding(), 0);
    }

    #[test]
    fn a_claimed_record_shows_its_start_time_or_zero() {
        let records: Vec<Record> = (0..1).map(|_| Record::new()).collect();
        let t = PermitTable::new(&records);
        let c = t.claim(owner(5), 1, 0).unwrap();
        let (slot, generation) = (c.slot, c.generation);
        t.publish(c, [0; 4]);
        t.take(slot, generation, 1).unwrap();
        // Emptied: the start time of the last owner is gone.
        assert_eq!(records[0].start.load(Ordering::Relaxed), 0);
        let mut seen = None;
        let c = t.claim(Owner { pid: 6, start: 0 }, 1, 0).unwrap();
        assert_eq!(
            t.reclaim(0, |o| {
                seen = Some(o);
                false
            }),
            None
        );
        assert_eq!(seen, Some(Owner { pid: 6, start: 0 }));
        t.abandon(c);
    }
}
