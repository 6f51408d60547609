//! Property tests of the fleet arithmetic (`guards_core::fleet`): a model of a store
//! (records + a claim version) and of members that read views, decide, and write back with
//! other members' reads, writes, joins, kills and loads interleaved between their read and
//! their write.

use guards_core::fleet::{
    decide, fair_share, fallback_share, open_on_fleet_evidence, FleetEvidence, MemberRecord,
    MAX_WEIGHT,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Member {
    id: u64,
    cap: u64,
    in_flight: u64,
    /// A decision taken at a read, not yet written: (new cap, claim, version read).
    pending: Option<(u64, bool, u64)>,
}

#[derive(Debug, Default)]
struct Store {
    /// (id, record); hostile records have no member behind them.
    records: Vec<MemberRecord>,
    version: u64,
}

impl Store {
    fn get_mut(&mut self, id: u64) -> Option<&mut MemberRecord> {
        self.records.iter_mut().find(|r| r.id == id)
    }
}

#[derive(Debug, Clone)]
enum Op {
    Join(u32),
    Kill(usize),
    Acquire(usize, u64),
    Release(usize, u64),
    Read(usize),
    Write(usize),
    Hostile(u32, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (1u32..4).prop_map(Op::Join),
        1 => any::<usize>().prop_map(Op::Kill),
        4 => (any::<usize>(), 0u64..20).prop_map(|(i, k)| Op::Acquire(i, k)),
        3 => (any::<usize>(), 0u64..20).prop_map(|(i, k)| Op::Release(i, k)),
        5 => any::<usize>().prop_map(Op::Read),
        5 => any::<usize>().prop_map(Op::Write),
    ]
}

struct Model {
    allowance: u64,
    store: Store,
    members: Vec<Member>,
    next_id: u64,
}

impl Model {
    fn new(allowance: u64) -> Self {
        Model {
            allowance,
            store: Store::default(),
            members: Vec::new(),
            next_id: 1,
        }
    }

    fn join(&mut self, weight: u32) {
        let id = self.next_id.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_003;
        self.next_id += 1;
        self.members.push(Member {
            id,
            cap: 0,
            in_flight: 0,
            pending: None,
        });
        self.store.records.push(MemberRecord::new(id, weight, 0));
    }

    /// Read a view and decide; a shrink or keep is applied to the local cap at once.
    fn read(&mut self, i: usize) {
        let a = self.allowance;
        let view = self.store.records.clone();
        let m = &mut self.members[i];
        let Some(me) = view.iter().position(|r| r.id == m.id) else {
            return;
        };
        let d = decide(a, &view, me, m.cap, m.in_flight);
        assert!(d.cap <= d.fair.max(m.cap), "{d:?}");
        if !d.claim {
            m.cap = d.cap;
        }
        m.pending = Some((d.cap, d.claim, self.store.version));
    }

    fn write(&mut self, i: usize) {
        let m = &mut self.members[i];
        let Some((cap, claim, version)) = m.pending.take() else {
            return;
        };
        if claim && version == self.store.version {
            self.store.version += 1;
            m.cap = cap;
        }
        let held = m.cap.max(m.in_flight);
        let id = m.id;
        if let Some(r) = self.store.get_mut(id) {
            r.held = held;
        }
    }

    fn apply(&mut self, op: &Op) {
        let n = self.members.len();
        match *op {
            Op::Join(w) => self.join(w),
            Op::Hostile(w, held) => {
                let id = 2_000_000 + self.store.records.len() as u64;
                self.store.records.push(MemberRecord {
                    id,
                    weight: w,
                    held,
                    calls: u64::MAX,
                    failures: u64::MAX,
                });
            }
            _ if n == 0 => {}
            Op::Kill(i) => {
                let m = self.members.remove(i % n);
                self.store.records.retain(|r| r.id != m.id);
            }
            Op::Acquire(i, k) => {
                let m = &mut self.members[i % n];
                let free = m.cap.saturating_sub(m.in_flight);
                m.in_flight += k.min(free);
            }
            Op::Release(i, k) => {
                let m = &mut self.members[i % n];
                m.in_flight -= k.min(m.in_flight);
            }
            Op::Read(i) => self.read(i % n),
            Op::Write(i) => self.write(i % n),
        }
    }

    fn check(&self) {
        let a = self.allowance;
        let in_flight: u64 = self.members.iter().map(|m| m.in_flight).sum();
        assert!(in_flight <= a, "in flight {in_flight} > allowance {a}");
        let caps: u64 = self.members.iter().map(|m| m.cap).sum();
        assert!(caps <= a, "caps {caps} > allowance {a}");
        let held = self
            .store
            .records
            .iter()
            .fold(0u64, |s, r| s.saturating_add(r.held.min(a)));
        let honest: u64 = self
            .members
            .iter()
            .filter_map(|m| self.store.records.iter().find(|r| r.id == m.id))
            .map(|r| r.held)
            .sum();
        assert!(honest <= a, "held {honest} (all {held}) > allowance {a}");
        for m in &self.members {
            let r = self.store.records.iter().find(|r| r.id == m.id).unwrap();
            assert!(m.in_flight <= r.held.max(m.cap), "{m:?} {r:?}");
        }
    }

    /// Every member syncs once, one after another, with nothing in between.
    fn round(&mut self) {
        for i in 0..self.members.len() {
            self.read(i);
            self.write(i);
            self.check();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever the order of joins, kills, loads, reads and writes: the calls in flight,
    /// the caps and the published `held` never sum above the allowance; once loads drain,
    /// two rounds of syncs bring every member to its fair share, with the floor of 1.
    #[test]
    fn never_above_the_allowance(
        allowance in 0u64..200,
        start in 0usize..6,
        ops in proptest::collection::vec(op(), 0..300),
    ) {
        let mut m = Model::new(allowance);
        for _ in 0..start {
            m.join(1);
        }
        for op in &ops {
            m.apply(op);
            m.check();
        }
        for mem in &mut m.members {
            mem.in_flight = 0;
        }
        m.round();
        m.round();
        let view = m.store.records.clone();
        let n = view.len() as u64;
        let mut sum = 0;
        for mem in &m.members {
            let me = view.iter().position(|r| r.id == mem.id).unwrap();
            let fair = fair_share(allowance, &view, me);
            prop_assert_eq!(mem.cap, fair, "member {:?} in {:?}", mem, view);
            if allowance >= n {
                prop_assert!(mem.cap >= 1);
            }
            sum += mem.cap;
        }
        prop_assert_eq!(sum, if m.members.is_empty() { 0 } else { allowance });
    }

    /// Records from a hostile member (huge weight, held and counts) never push an honest
    /// member above its fair share or the honest sum above the allowance.
    #[test]
    fn hostile_records_stay_bounded(
        allowance in 0u64..200,
        ops in proptest::collection::vec(
            prop_oneof![
                8 => op(),
                1 => (any::<u32>(), any::<u64>()).prop_map(|(w, h)| Op::Hostile(w, h)),
            ],
            0..200,
        ),
    ) {
        let mut m = Model::new(allowance);
        m.join(1);
        m.join(2);
        for op in &ops {
            m.apply(op);
            m.check();
        }
    }

    /// Over any view, the fair shares sum to exactly the allowance (or 0 for no members),
    /// each is at least 1 when the allowance allows, and weights are respected within 1.
    #[test]
    fn fair_shares(
        allowance in 0u64..u64::MAX,
        weights in proptest::collection::vec(any::<u32>(), 1..40),
        helds in proptest::collection::vec(any::<u64>(), 40),
    ) {
        let view: Vec<MemberRecord> = weights
            .iter()
            .enumerate()
            .map(|(i, &w)| MemberRecord::new((i as u64 * 31) % 17, w, helds[i]))
            .collect();
        let shares: Vec<u64> = (0..view.len()).map(|i| fair_share(allowance, &view, i)).collect();
        let sum = shares.iter().fold(0u64, |s, &x| s.checked_add(x).unwrap());
        prop_assert_eq!(sum, allowance);
        let n = view.len() as u64;
        for (i, &s) in shares.iter().enumerate() {
            if allowance >= n {
                prop_assert!(s >= 1);
                let w = u128::from(weights[i].clamp(1, MAX_WEIGHT));
                let total: u128 = weights.iter().map(|&w| u128::from(w.clamp(1, MAX_WEIGHT))).sum();
                let exact = u128::from(allowance - n) * w / total;
                prop_assert!(u128::from(s) > exact && u128::from(s) <= 2 + exact);
            } else {
                prop_assert!(s <= 1);
            }
            let d = decide(allowance, &view, i, 0, 0);
            prop_assert!(d.cap <= s);
        }
    }

    /// The fallback only shrinks and never exceeds the allowance.
    #[test]
    fn fallback_bounds(a in any::<u64>(), n in any::<u64>(), floor in proptest::option::of(any::<u64>()), last in any::<u64>()) {
        let s = fallback_share(a, n, floor, last);
        prop_assert!(s <= last && s <= a);
    }
}

#[test]
fn fleet_evidence_rule() {
    let rec = |id, calls, failures| MemberRecord {
        id,
        weight: 1,
        held: 0,
        calls,
        failures,
    };
    let v = [rec(1, 12, 8), rec(2, 10, 6), rec(3, 0, 0)];
    let e = FleetEvidence::from_records(&v);
    assert_eq!((e.calls, e.failures, e.members), (22, 14, 2));
    // A member with 3 calls of its own opens on 22 fleet calls at 64% failures.
    assert!(open_on_fleet_evidence(3, 20, 0.5, &e));
    // Not with enough calls of its own, not at a higher threshold, not below the minimum.
    assert!(!open_on_fleet_evidence(20, 20, 0.5, &e));
    assert!(!open_on_fleet_evidence(3, 20, 0.7, &e));
    assert!(!open_on_fleet_evidence(3, 30, 0.5, &e));
    assert!(!open_on_fleet_evidence(3, 20, f64::NAN, &e));
    // One member alone never opens the others.
    let one = FleetEvidence::from_records(&[rec(1, 100, 100)]);
    assert!(!open_on_fleet_evidence(0, 20, 0.5, &one));
}
