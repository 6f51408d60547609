#![cfg(loom)]
//! loom models of a region's permit table (`guards::shared::table`): a permit comes out
//! once whether its owner reports it or a reclaimer takes it from a dead owner, records
//! are reused without mixing generations, and a claimed record shows its own owner's start
//! time or none, never the previous owner's.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3
//! cargo test -p guards-ffi --release --test loom_shared`
//!
//! In a region the table is shared by processes; loom explores the same protocol between
//! threads, over records of loom's atomics.

use guards::error::GuardsResult;
use guards::shared::owner::Owner;
use guards::shared::table::{PermitTable, Reclaimed, Record};
use loom::sync::atomic::AtomicU64;
use loom::sync::Arc;
use loom::thread;

type Records = Arc<Vec<Record<AtomicU64>>>;

fn records(n: usize) -> Records {
    Arc::new((0..n).map(|_| Record::new()).collect())
}

const ALIVE: Owner = Owner {
    pid: 10,
    start: 100,
};
const DEAD: Owner = Owner {
    pid: 20,
    start: 200,
};

/// Publish a permit of `owner` for guard 7 with `words`; its (slot, generation).
fn publish(t: &PermitTable<'_, AtomicU64>, owner: Owner, words: [u64; 4]) -> (u32, u32) {
    let c = t.claim(owner, 7, 0).expect("a free record");
    let at = (c.slot, c.generation);
    t.publish(c, words);
    at
}

/// The owner reports its permit while a reclaimer (wrongly or rightly judging it dead)
/// takes it: exactly one of them gets it, and the record ends free.
#[test]
fn a_report_and_a_reclaim_get_a_permit_once() {
    loom::model(|| {
        let recs = records(1);
        let (slot, generation) = publish(&PermitTable::new(&recs), DEAD, [1, 2, 3, 4]);
        let r2 = Arc::clone(&recs);
        let reaper = thread::spawn(move || PermitTable::new(&r2).reclaim(slot, |_| true));
        let t = PermitTable::new(&recs);
        let taken = t.take(slot, generation, 7);
        let reclaimed = reaper.join().unwrap();
        match (taken, reclaimed) {
            (Ok(w), None) => assert_eq!(w, [1, 2, 3, 4]),
            (
                Err(GuardsResult::PermitAlreadyReported),
                Some(Reclaimed::Permit {
                    words,
                    guard,
                    owner,
                }),
            ) => {
                assert_eq!((words, guard, owner), ([1, 2, 3, 4], 7, DEAD));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(t.outstanding(), 0);
        assert_eq!(
            t.take(slot, generation, 7),
            Err(GuardsResult::PermitAlreadyReported)
        );
    });
}

/// Two processes reclaim the same dead owner's permit: one gets it.
#[test]
fn two_reclaimers_get_a_permit_once() {
    loom::model(|| {
        let recs = records(1);
        let (slot, _) = publish(&PermitTable::new(&recs), DEAD, [9, 0, 0, 0]);
        let r2 = Arc::clone(&recs);
        let other = thread::spawn(move || PermitTable::new(&r2).reclaim(slot, |o| o == DEAD));
        let mine = PermitTable::new(&recs).reclaim(slot, |o| o == DEAD);
        let theirs = other.join().unwrap();
        let got = [mine, theirs].into_iter().flatten().count();
        assert_eq!(got, 1, "{mine:?} {theirs:?}");
        assert_eq!(PermitTable::new(&recs).outstanding(), 0);
    });
}

/// A dead owner's claim (it died while asking its guard) is freed while a live process
/// claims, publishes and reports a permit of its own: the live permit is intact, the dead
/// claim is reported as a claim, and nothing is left held.
#[test]
fn reclaiming_a_dead_claim_does_not_disturb_live_permits() {
    loom::model(|| {
        let recs = records(2);
        let dead_claim = PermitTable::new(&recs).claim(DEAD, 3, 0).unwrap();
        let dead_slot = dead_claim.slot;
        drop(dead_claim); // its owner died before publishing
        let r2 = Arc::clone(&recs);
        let live = thread::spawn(move || {
            let t = PermitTable::new(&r2);
            // Only record 1 is free until the reclaim frees record 0.
            let (slot, generation) = publish(&t, ALIVE, [5, 6, 7, 8]);
            t.take(slot, generation, 7)
        });
        let reclaimed = PermitTable::new(&recs).reclaim(dead_slot, |o| o.pid == DEAD.pid);
        assert_eq!(
            reclaimed,
            Some(Reclaimed::Claim {
                owner: Owner {
                    pid: DEAD.pid,
                    start: DEAD.start
                }
            })
        );
        assert_eq!(live.join().unwrap(), Ok([5, 6, 7, 8]));
        assert_eq!(PermitTable::new(&recs).outstanding(), 0);
    });
}

/// A record is reused while a stale token of its last generation is reported: the stale
/// token is refused, the new permit comes out intact once.
#[test]
fn reuse_keeps_generations_apart() {
    loom::model(|| {
        let recs = records(1);
        let t = PermitTable::new(&recs);
        let (slot, old) = publish(&t, ALIVE, [1, 1, 1, 1]);
        assert_eq!(t.take(slot, old, 7), Ok([1, 1, 1, 1]));
        let r2 = Arc::clone(&recs);
        let issuer = thread::spawn(move || {
            let t = PermitTable::new(&r2);
            let (slot, generation) = publish(&t, ALIVE, [2, 2, 2, 2]);
            (generation, t.take(slot, generation, 7))
        });
        let stale = t.take(slot, old, 7);
        let (new, taken) = issuer.join().unwrap();
        assert_eq!(stale, Err(GuardsResult::PermitAlreadyReported));
        assert_eq!(taken, Ok([2, 2, 2, 2]));
        assert_ne!(new, old);
    });
}

/// A reclaimer looking at a record being claimed sees the new owner's start time or 0,
/// never the start time of the owner before (which would make a live owner look like a
/// reused pid).
#[test]
fn a_claim_shows_its_own_start_time_or_none() {
    loom::model(|| {
        let recs = records(1);
        let t = PermitTable::new(&recs);
        let before = Owner {
            pid: ALIVE.pid,
            start: 44,
        };
        let (slot, generation) = publish(&t, before, [0; 4]);
        t.take(slot, generation, 7).unwrap();
        let r2 = Arc::clone(&recs);
        let claimer = thread::spawn(move || {
            let t = PermitTable::new(&r2);
            let c = t.claim(ALIVE, 7, 0).unwrap();
            t.abandon(c);
        });
        let mut seen = None;
        let got = t.reclaim(slot, |o| {
            seen = Some(o);
            false
        });
        claimer.join().unwrap();
        assert_eq!(got, None);
        if let Some(o) = seen {
            assert_eq!(o.pid, ALIVE.pid);
            assert!(o.start == 0 || o.start == ALIVE.start, "{o:?}");
        }
    });
}
