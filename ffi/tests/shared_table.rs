//! The permit table of a region (`guards::shared::table`): a proptest against a sequential
//! model (claims, publications, abandons, reports, forged and stale tokens, owners dying,
//! reclaims), and threads issuing and reporting permits while a reaper reclaims a dead
//! owner's. (Interleavings are model-checked by `tests/loom_shared.rs`.)

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use guards::error::GuardsResult;
use guards::shared::owner::Owner;
use guards::shared::table::{PermitTable, Reclaimed, Record};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Acquire { owner: u32, from: usize },
    Refused { owner: u32, from: usize },
    Report { pick: usize },
    ReportElsewhere { pick: usize },
    Forge { pick: usize },
    Die { owner: u32 },
    Reclaim { slot: u32 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u32..4, 0usize..8).prop_map(|(owner, from)| Op::Acquire { owner, from }),
        1 => (1u32..4, 0usize..8).prop_map(|(owner, from)| Op::Refused { owner, from }),
        4 => (0usize..64).prop_map(|pick| Op::Report { pick }),
        1 => (0usize..64).prop_map(|pick| Op::ReportElsewhere { pick }),
        1 => (0usize..64).prop_map(|pick| Op::Forge { pick }),
        1 => (1u32..4).prop_map(|owner| Op::Die { owner }),
        2 => (0u32..6).prop_map(|slot| Op::Reclaim { slot }),
    ]
}

/// A token the model issued: where, which generation, whose, what, and whether it is still
/// held.
#[derive(Debug, Clone, Copy)]
struct Issued {
    slot: u32,
    generation: u32,
    owner: u32,
    words: [u64; 4],
    held: bool,
}

fn owner(pid: u32) -> Owner {
    Owner {
        pid,
        start: u64::from(pid) * 1000,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_table_behaves_like_its_model(ops in proptest::collection::vec(op(), 1..120)) {
        const N: usize = 5;
        let records: Vec<Record> = (0..N).map(|_| Record::new()).collect();
        let t = PermitTable::new(&records);
        let mut issued: Vec<Issued> = Vec::new();
        let mut dead: HashSet<u32> = HashSet::new();
        let mut next = 1u64;
        let held_at = |issued: &[Issued], slot: u32| issued.iter().position(|i| i.held && i.slot == slot);
        for op in ops {
            match op {
                Op::Acquire { owner: o, from } | Op::Refused { owner: o, from } => {
                    let free = (0..N as u32).any(|s| held_at(&issued, s).is_none());
                    let claim = t.claim(owner(o), 1, from);
                    prop_assert_eq!(claim.is_some(), free);
                    let Some(c) = claim else { continue };
                    prop_assert!(held_at(&issued, c.slot).is_none(), "claimed a held record");
                    if matches!(op, Op::Refused { .. }) {
                        t.abandon(c);
                        continue;
                    }
                    let words = [next, next + 1, u64::from(o), 0];
                    next += 2;
                    issued.push(Issued { slot: c.slot, generation: c.generation, owner: o, words, held: true });
                    t.publish(c, words);
                }
                Op::Report { pick } if !issued.is_empty() => {
                    let k = pick % issued.len();
                    let i = issued[k];
                    let got = t.take(i.slot, i.generation, 1);
                    if i.held {
                        prop_assert_eq!(got, Ok(i.words));
                        issued[k].held = false;
                    } else {
                        prop_assert_eq!(got, Err(GuardsResult::PermitAlreadyReported));
                    }
                }
                Op::ReportElsewhere { pick } if !issued.is_empty() => {
                    let i = issued[pick % issued.len()];
                    let got = t.take(i.slot, i.generation, 2);
                    let expected = if i.held { GuardsResult::PermitWrongGuard } else { GuardsResult::PermitAlreadyReported };
                    prop_assert_eq!(got, Err(expected));
                }
                Op::Forge { pick } if !issued.is_empty() => {
                    let i = issued[pick % issued.len()];
                    // A generation the record has not reached yet was never issued.
                    let ahead = issued.iter().filter(|j| j.slot == i.slot).map(|j| j.generation).max().unwrap_or(0) + 1;
                    prop_assert_eq!(t.take(i.slot, ahead, 1), Err(GuardsResult::PermitUnknown));
                    prop_assert_eq!(t.take(N as u32 + 3, 0, 1), Err(GuardsResult::PermitUnknown));
                }
                Op::Die { owner: o } => {
                    dead.insert(o);
                }
                Op::Reclaim { slot } => {
                    let got = t.reclaim(slot, |who| dead.contains(&who.pid));
                    match held_at(&issued, slot) {
                        Some(k) if dead.contains(&issued[k].owner) => {
                            let i = issued[k];
                            prop_assert_eq!(got, Some(Reclaimed::Permit { guard: 1, words: i.words, owner: owner(i.owner) }));
                            issued[k].held = false;
                        }
                        _ => prop_assert_eq!(got, None),
                    }
                }
                _ => {}
            }
            prop_assert_eq!(t.outstanding(), issued.iter().filter(|i| i.held).count() as u64);
        }
    }
}

#[test]
fn threads_report_while_a_reaper_reclaims_the_dead() {
    const RECORDS: usize = 64;
    const DEAD_PERMITS: u64 = 20;
    let records: Arc<Vec<Record>> = Arc::new((0..RECORDS).map(|_| Record::new()).collect());
    // A process published some permits and died.
    let dead = Owner { pid: 99, start: 9 };
    {
        let t = PermitTable::new(&records);
        for k in 0..DEAD_PERMITS {
            let c = t.claim(dead, 5, k as usize * 3).unwrap();
            t.publish(c, [k, 0, 0, 99]);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let reaper = {
        let (records, stop) = (Arc::clone(&records), Arc::clone(&stop));
        std::thread::spawn(move || {
            let t = PermitTable::new(&records);
            let mut got = Vec::new();
            let pass = |got: &mut Vec<Reclaimed>| {
                for s in 0..RECORDS as u32 {
                    if let Some(r) = t.reclaim(s, |o| o == dead) {
                        got.push(r);
                    }
                }
            };
            while !stop.load(Ordering::Relaxed) {
                pass(&mut got);
            }
            pass(&mut got);
            got
        })
    };
    let workers: Vec<_> = (1..=4u32)
        .map(|pid| {
            let records = Arc::clone(&records);
            std::thread::spawn(move || {
                let t = PermitTable::new(&records);
                let me = Owner { pid, start: 1 };
                let mut reported = 0u64;
                for n in 0..20_000u64 {
                    let Some(c) = t.claim(me, u64::from(pid), (n as usize * 7) % RECORDS) else {
                        continue;
                    };
                    let (slot, generation) = (c.slot, c.generation);
                    let words = [n, u64::from(pid), 0, 1];
                    t.publish(c, words);
                    assert_eq!(t.take(slot, generation, u64::from(pid)), Ok(words));
                    assert_eq!(
                        t.take(slot, generation, u64::from(pid)),
                        Err(GuardsResult::PermitAlreadyReported)
                    );
                    reported += 1;
                }
                reported
            })
        })
        .collect();
    let reported: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    let reclaimed = reaper.join().unwrap();
    assert_eq!(
        reported, 80_000,
        "a claim can only fail with 64 records if they are all held"
    );
    assert_eq!(reclaimed.len() as u64, DEAD_PERMITS);
    let mut ks: Vec<u64> = reclaimed
        .iter()
        .map(|r| match r {
            Reclaimed::Permit {
                guard: 5,
                words,
                owner,
            } if *owner == dead => words[0],
            other => panic!("{other:?}"),
        })
        .collect();
    ks.sort_unstable();
    assert_eq!(ks, (0..DEAD_PERMITS).collect::<Vec<_>>());
    assert_eq!(PermitTable::new(&records).outstanding(), 0);
}
