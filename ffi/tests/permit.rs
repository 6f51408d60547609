//! Permit slots: a multi-thread stress test with invariants, the same through the C ABI's
//! breaker and bulkhead, and a proptest against a sequential model.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use guards::c::bulkhead::{guards_bulkhead, guards_bulkhead_config};
use guards::c::circuit_breaker::{guards_circuit_breaker, guards_circuit_breaker_config};
use guards::c::guards_outcome;
use guards::error::GuardsResult;
use guards::permit::{PermitSlots, PermitToken, WAYS};
use proptest::prelude::*;

const THREADS: u64 = 4;
const ROUNDS: u64 = 20_000;

/// Threads issue permits, report their own, try to report them again, and race each other
/// for permits dropped in a shared pool. Every value comes back exactly once; every second
/// report is refused; the table ends empty and never holds more slots than were ever in
/// flight at once.
#[test]
fn stress_every_permit_is_taken_at_most_once() {
    let slots = Arc::new(PermitSlots::<u64>::new());
    let pool = Arc::new(Mutex::new(Vec::<PermitToken>::new()));
    let start = Arc::new(Barrier::new(THREADS as usize));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (slots, pool, start) = (Arc::clone(&slots), Arc::clone(&pool), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                let mut taken = Vec::new();
                let mut double_ok = 0u64;
                let mut held = Vec::new();
                for i in 0..ROUNDS {
                    let v = (t << 32) | i;
                    let tok = slots.insert(v).unwrap();
                    if i % 5 == 0 {
                        pool.lock().unwrap().push(tok);
                    } else {
                        held.push(tok);
                    }
                    if held.len() == 4 {
                        for tok in held.drain(..) {
                            taken.push(slots.take(tok).unwrap());
                            if slots.take(tok).is_ok() {
                                double_ok += 1;
                            }
                        }
                    }
                    if i % 3 == 0 {
                        // Race the other threads for a pooled permit (it may be gone).
                        let tok = pool.lock().unwrap().last().copied();
                        if let Some(tok) = tok {
                            if let Ok(v) = slots.take(tok) {
                                taken.push(v);
                            }
                            let mut p = pool.lock().unwrap();
                            if let Some(pos) = p.iter().position(|x| *x == tok) {
                                p.swap_remove(pos);
                            }
                        }
                    }
                }
                for tok in held {
                    taken.push(slots.take(tok).unwrap());
                }
                (taken, double_ok)
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        let (taken, double_ok) = h.join().unwrap();
        assert_eq!(double_ok, 0, "a permit was taken twice");
        all.extend(taken);
    }
    for tok in pool.lock().unwrap().drain(..) {
        if let Ok(v) = slots.take(tok) {
            all.push(v);
        }
    }
    let unique: HashSet<_> = all.iter().copied().collect();
    assert_eq!(unique.len(), all.len(), "a value came back twice");
    assert_eq!(all.len() as u64, THREADS * ROUNDS, "a value was lost");
    assert_eq!(slots.outstanding(), 0);
}

fn breaker(window: u64) -> guards_circuit_breaker {
    let mut c = guards_circuit_breaker_config::of_defaults();
    c.window_size = window;
    guards_circuit_breaker::new(&c).unwrap()
}

/// Threads share one breaker through the C ABI's handle: acquire, report (a failure, then
/// two successes, then an ignore, per thread), report again, and read stats while others
/// run. Second reports are refused and never counted; at the end no permit is
/// outstanding and the breaker's counters add up to the reports accepted.
#[test]
fn stress_breaker_reports_add_up() {
    let b = Arc::new(breaker(40));
    let reported = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (b, stop) = (Arc::clone(&b), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let s = b.breaker().stats();
                assert!(s.successes + s.failures + s.ignored + s.discarded <= THREADS * ROUNDS);
                reads += 1;
            }
            reads
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (b, reported) = (Arc::clone(&b), Arc::clone(&reported));
            std::thread::spawn(move || {
                let outcomes = [
                    guards_outcome::Timeout,
                    guards_outcome::Success,
                    guards_outcome::Success,
                    guards_outcome::Ignored,
                ];
                for i in 0..ROUNDS {
                    let now = guards::clock::now_ns();
                    let Ok(p) = b.try_acquire(now) else { continue };
                    let o = outcomes[(i % 4) as usize] as u32;
                    b.report(&p, o, now).unwrap();
                    reported.fetch_add(1, Ordering::Relaxed);
                    let again = b.report(&p, o, now).unwrap_err();
                    assert_eq!(again.code, GuardsResult::PermitAlreadyReported);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    let s = b.breaker().stats();
    assert_eq!(b.permits().outstanding(), 0);
    assert_eq!(
        s.successes + s.failures + s.ignored + s.discarded + s.probe_successes + s.probe_failures,
        reported.load(Ordering::Relaxed)
    );
    // A failure, then two successes per thread: no 40 consecutive outcomes reach 50 %.
    assert_eq!(s.closed_to_open, 0);
}

/// Threads share one bulkhead through the C ABI's handle: holders never exceed the cap,
/// the bulkhead's in-flight count always equals the permits parked for it at rest, and
/// double releases are refused.
#[test]
fn stress_bulkhead_in_flight_matches_parked_permits() {
    let cap = 3;
    let h = Arc::new(
        guards_bulkhead::new(&guards_bulkhead_config {
            max_concurrent: cap,
        })
        .unwrap(),
    );
    let holders = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (h, holders) = (Arc::clone(&h), Arc::clone(&holders));
            std::thread::spawn(move || {
                let mut granted = 0u64;
                for _ in 0..ROUNDS {
                    let Ok(p) = h.try_acquire() else { continue };
                    let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(now <= cap, "{now} holders for a cap of {cap}");
                    holders.fetch_sub(1, Ordering::SeqCst);
                    h.release(&p).unwrap();
                    assert_eq!(
                        h.release(&p).unwrap_err().code,
                        GuardsResult::PermitAlreadyReported
                    );
                    granted += 1;
                }
                granted
            })
        })
        .collect();
    let granted: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let s = h.bulkhead().stats();
    assert_eq!(s.acquired, granted);
    assert_eq!(s.acquired + s.rejected, THREADS * ROUNDS);
    assert_eq!((s.in_flight, h.permits().outstanding()), (0, 0));
    // At rest with permits held: the gauge equals the parked permits.
    let held: Vec<_> = (0..cap).map(|_| h.try_acquire().unwrap()).collect();
    assert_eq!(h.bulkhead().stats().in_flight, h.permits().outstanding());
    // Besides the permits, at most `WAYS` reservations per thread that used it.
    assert!(h.permits().reserved() <= THREADS * WAYS as u64);
    for p in &held {
        h.release(p).unwrap();
    }
}

/// Two threads acquire permits of a bulkhead and hand them to two others, which release
/// them in random order (and keep the emptied slots reserved for inserts they never make):
/// near the cap the free slots can be anywhere (never where the acquirer looked last), and
/// an acquire the bulkhead grants must always find one (never `PermitSlotsExhausted`).
#[test]
fn stress_bulkhead_near_its_cap_never_runs_out_of_slots() {
    let cap = 32;
    let h = Arc::new(
        guards_bulkhead::new(&guards_bulkhead_config {
            max_concurrent: cap,
        })
        .unwrap(),
    );
    let handed = Arc::new(Mutex::new(Vec::new()));
    let done = Arc::new(AtomicU64::new(0));
    let acquirers: Vec<_> = (0..2)
        .map(|_| {
            let (h, handed, done) = (Arc::clone(&h), Arc::clone(&handed), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut granted = 0u64;
                for _ in 0..ROUNDS {
                    match h.try_acquire() {
                        Ok(p) => {
                            handed.lock().unwrap().push(p);
                            granted += 1;
                        }
                        Err(e) => {
                            assert_eq!(e.code, GuardsResult::BulkheadFull);
                            std::thread::yield_now();
                        }
                    }
                }
                done.fetch_add(1, Ordering::SeqCst);
                granted
            })
        })
        .collect();
    let releasers: Vec<_> = (0..2u64)
        .map(|t| {
            let (h, handed, done) = (Arc::clone(&h), Arc::clone(&handed), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                loop {
                    // Wait until the bulkhead is nearly full, then release a random permit.
                    let p = {
                        let mut v = handed.lock().unwrap();
                        if v.len() < (cap as usize) - 2 && done.load(Ordering::SeqCst) < 2 {
                            None
                        } else if v.is_empty() {
                            break;
                        } else {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            let i = (x % v.len() as u64) as usize;
                            Some(v.swap_remove(i))
                        }
                    };
                    match p {
                        Some(p) => h.release(&p).unwrap(),
                        None => std::thread::yield_now(),
                    }
                }
            })
        })
        .collect();
    let granted: u64 = acquirers.into_iter().map(|a| a.join().unwrap()).sum();
    for r in releasers {
        r.join().unwrap();
    }
    let s = h.bulkhead().stats();
    assert_eq!(s.acquired, granted);
    assert_eq!((s.in_flight, h.permits().outstanding()), (0, 0));
    assert!(h.permits().reserved() <= 4 * WAYS as u64);
}

/// One step of the sequential model.
#[derive(Debug, Clone)]
enum Op {
    Insert,
    /// Take the i-th token ever issued (live or not).
    Take(usize),
    /// Take a token of the i-th issued with the generation moved ahead by `d`.
    Ahead(usize, u32),
    /// Take a token of the i-th issued with another guard's id.
    Elsewhere(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Insert),
        4 => (0usize..64).prop_map(Op::Take),
        1 => (0usize..64, 1u32..4).prop_map(|(i, d)| Op::Ahead(i, d)),
        1 => (0usize..64).prop_map(Op::Elsewhere),
    ]
}

proptest! {
    /// The slot table answers every sequence of operations as a map from issued tokens to
    /// live values does: a live token gives its value once; a taken one is "already
    /// reported"; a token from the future is "unknown"; another guard's is "wrong guard";
    /// `outstanding` is the live count.
    #[test]
    fn slots_agree_with_a_sequential_model(ops in proptest::collection::vec(op(), 1..200)) {
        let slots = PermitSlots::<u32>::new();
        let mut issued: Vec<PermitToken> = Vec::new();
        let mut live: HashMap<PermitToken, u32> = HashMap::new();
        let mut next = 0u32;
        for op in ops {
            match op {
                Op::Insert => {
                    let t = slots.insert(next).unwrap();
                    prop_assert!(!live.contains_key(&t));
                    prop_assert!(!issued.contains(&t), "a token was issued twice");
                    live.insert(t, next);
                    issued.push(t);
                    next += 1;
                }
                Op::Take(i) => {
                    let Some(&t) = issued.get(i % issued.len().max(1)) else { continue };
                    let want = live.remove(&t).ok_or(GuardsResult::PermitAlreadyReported);
                    prop_assert_eq!(slots.take(t), want);
                }
                Op::Ahead(i, d) => {
                    let Some(&t) = issued.get(i % issued.len().max(1)) else { continue };
                    // The newest token of that slot, moved past it, was never issued.
                    let newest = issued.iter().filter(|x| x.slot == t.slot)
                        .map(|x| x.generation).max().unwrap_or(t.generation);
                    let forged = PermitToken { generation: newest + d, ..t };
                    prop_assert_eq!(slots.take(forged), Err(GuardsResult::PermitUnknown));
                }
                Op::Elsewhere(i) => {
                    let Some(&t) = issued.get(i % issued.len().max(1)) else { continue };
                    let forged = PermitToken { guard: t.guard + 1_000_000, ..t };
                    prop_assert_eq!(slots.take(forged), Err(GuardsResult::PermitWrongGuard));
                }
            }
            prop_assert_eq!(slots.outstanding(), live.len() as u64);
        }
    }
}
