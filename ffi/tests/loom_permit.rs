#![cfg(loom)]
//! loom models of the permit slots' protocol (`guards::permit`): take-once under races,
//! slot reuse, segment installation, per-thread reservations (kept on take, filled with
//! plain stores on insert, abandoned by eviction or exit, recovered by the table), and the
//! take-once cell. Each loom thread drives its own reservation cache (`Local`) explicitly.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3
//! cargo test -p guards-ffi --release --test loom_permit`
//!
//! Under loom the first segment holds one slot, so two permits in flight already make the
//! table grow, and the growth races are explored too.

use guards::error::GuardsResult;
use guards::permit::{Local, PermitSlots, TakeOnce};
use loom::sync::Arc;
use loom::thread;

/// Two threads report the same permit at once: exactly one gets core's permit back, the
/// other is told it was already reported, and the table ends empty.
#[test]
fn a_permit_is_taken_once() {
    loom::model(|| {
        let s = Arc::new(PermitSlots::<u32>::new());
        let t = s.insert(7).unwrap();
        let s2 = Arc::clone(&s);
        let other = thread::spawn(move || s2.take(t));
        let mine = s.take(t);
        let theirs = other.join().unwrap();
        let got: Vec<_> = [mine, theirs].into_iter().filter_map(Result::ok).collect();
        assert_eq!(got, vec![7]);
        assert!(
            [mine, theirs].contains(&Err(GuardsResult::PermitAlreadyReported)),
            "{mine:?} {theirs:?}"
        );
        assert_eq!(s.outstanding(), 0);
    });
}

/// One thread reports a permit while another issues a new one (which may reuse the freed
/// slot): the new permit is intact and reported once, the old token stays refused, and
/// no value is lost or duplicated.
#[test]
fn reuse_after_take_keeps_tokens_apart() {
    loom::model(|| {
        let s = Arc::new(PermitSlots::<u32>::new());
        let old = s.insert(1).unwrap();
        let s2 = Arc::clone(&s);
        let issuer = thread::spawn(move || {
            let t = s2.insert(2).unwrap();
            (t, s2.take(t))
        });
        let first = s.take(old);
        let (new, new_taken) = issuer.join().unwrap();
        assert_eq!(first, Ok(1));
        assert_eq!(new_taken, Ok(2));
        assert_ne!(new, old);
        assert_eq!(s.take(old), Err(GuardsResult::PermitAlreadyReported));
        assert_eq!(s.take(new), Err(GuardsResult::PermitAlreadyReported));
        assert_eq!(s.outstanding(), 0);
    });
}

/// Two threads each issue and report permits on a table with one free slot: the free
/// list's pops and pushes race, and fresh slots are claimed (with a segment installed)
/// when the list is empty. Every value comes back exactly once.
#[test]
fn free_list_and_growth_races() {
    loom::model(|| {
        let s = Arc::new(PermitSlots::<u32>::new());
        let seed = s.insert(0).unwrap();
        assert_eq!(s.take(seed), Ok(0));
        let s2 = Arc::clone(&s);
        let other = thread::spawn(move || {
            let a = s2.insert(10).unwrap();
            let b = s2.insert(11).unwrap();
            (s2.take(a), s2.take(b))
        });
        let c = s.insert(20).unwrap();
        let mine = s.take(c);
        let (a, b) = other.join().unwrap();
        assert_eq!((a, b, mine), (Ok(10), Ok(11), Ok(20)));
        assert_eq!(s.outstanding(), 0);
        assert!(s.allocated() <= 3);
    });
}

/// A thread keeps the slot it emptied and fills it again with plain stores, while another
/// thread races to take the old token twice and scans the table for abandoned
/// reservations: the live reservation is never taken over, each value comes out once.
#[test]
fn a_live_reservation_is_never_taken_over() {
    loom::model(|| {
        let s = Arc::new(PermitSlots::<u32>::new());
        let first = s.insert_with(&Local::new(), 1).unwrap();
        let s2 = Arc::clone(&s);
        let owner = thread::spawn(move || {
            let mine = Local::new();
            let a = s2.take_with(&mine, first);
            // The next insert fills the reserved slot (no compare-and-swap).
            let t = s2.insert_with(&mine, 2).unwrap();
            let b = s2.take_with(&mine, t);
            (a, t, b)
        });
        // Meanwhile: a double report of the old token, and an insert from a thread with
        // no reservation, which may scan for abandoned ones (the table has one slot per
        // segment under loom, so it grows and scans at once).
        let other = Local::new();
        let twice = s.take_with(&other, first);
        let x = s.insert_with(&other, 3).unwrap();
        let (a, t, b) = owner.join().unwrap();
        let firsts: Vec<_> = [a, twice].into_iter().filter_map(Result::ok).collect();
        assert_eq!(firsts, vec![1]);
        assert_eq!(b, Ok(2));
        assert_ne!(x, t);
        assert_eq!(s.take_with(&other, x), Ok(3));
        assert_eq!(s.outstanding(), 0);
    });
}

/// A thread abandons its reservation (it exits: its cache is dropped) while another
/// inserts and recovers it: the slot is handed to exactly one new permit.
#[test]
fn an_abandoned_reservation_is_recovered_once() {
    loom::model(|| {
        let s = Arc::new(PermitSlots::<u32>::with_limit(1));
        let t = s.insert_with(&Local::new(), 1).unwrap();
        let s2 = Arc::clone(&s);
        let owner = thread::spawn(move || {
            let mine = Local::new();
            let v = s2.take_with(&mine, t);
            drop(mine); // the thread is done: its reservation is abandoned
            v
        });
        let other = Local::new();
        // Until the owner has abandoned it, the one slot is reserved: the insert may be
        // refused, never granted twice.
        let x = s.insert_with(&other, 2);
        assert_eq!(owner.join().unwrap(), Ok(1));
        let x = match x {
            Ok(x) => x,
            Err((2, code)) => {
                assert_eq!(code, GuardsResult::PermitSlotsExhausted);
                s.insert_with(&other, 2).unwrap()
            }
            Err(e) => panic!("{e:?}"),
        };
        assert_eq!(x.slot, t.slot);
        assert_eq!(s.take_with(&other, x), Ok(2));
        assert_eq!(
            s.take_with(&other, t),
            Err(GuardsResult::PermitAlreadyReported)
        );
    });
}

/// Two threads take from one cell: exactly one gets the value.
#[test]
fn take_once_cell_races() {
    loom::model(|| {
        let c = Arc::new(TakeOnce::new(5u8));
        let c2 = Arc::clone(&c);
        let other = thread::spawn(move || c2.take());
        let mine = c.take();
        let theirs = other.join().unwrap();
        assert_eq!(mine.or(theirs), Some(5));
        assert!(mine.is_none() || theirs.is_none());
        assert!(c.is_taken());
    });
}
