//! Fleet guards: the instances of a service share fleet-wide allowances of their
//! bulkheads or token budgets, as the fleet agent shares them through Redis
//! (see [`crate::topology::FleetSpec`]).
//!
//! The store is modelled as the record each member last wrote, with the time of the
//! write: a record older than the TTL is not in the view. Each member syncs at its own
//! events (every `sync_interval`, at its own phase): it reads the live records, decides
//! each allowance with guards-core's [`decide`] (shrink at once, grow only into the room
//! the view leaves free), resizes its guard with core's run-time resize and writes
//! `held = max(cap, in_flight)`. A sync is one event, so the read, the decision and the
//! write are atomic and a claim never loses a race.
//!
//! The bound this gives: the records' `held` sum to at most the allowance, and between
//! two of its syncs a member's calls in flight stay at most its `held` (its cap only
//! changes at its syncs, and calls are admitted only under the cap). The TTL is at least
//! twice the interval and members are never cut off, so no record of a live member
//! expires: the calls in flight across the fleet never exceed the allowance.
//!
//! Measured for every allowance (enforced or not), sampled at every change: the calls in
//! flight across the fleet (a bulkhead) or the tokens in the buckets (a token budget), and
//! the sum of the caps.

use guards_core::fleet::{decide, fair_share, MemberRecord};
use guards_core::Nanos;

use super::{Kind, Sim};
use crate::result::{Column, SummaryValue};
use crate::topology::{FleetGuard, FleetSpec};

/// Micro-tokens per token.
const MICROS: u64 = 1_000_000;

/// One member's record in the modelled store.
#[derive(Debug, Clone)]
struct Record {
    /// When it was written.
    at: Nanos,
    /// `held` per allowance.
    held: Vec<u64>,
}

/// What is measured of one allowance.
#[derive(Debug, Default, Clone)]
struct Measure {
    /// Largest fleet-wide in flight (tokens, in micro-tokens, for a budget) over the run.
    max: u64,
    /// The same over the current interval.
    iv_max: u64,
    /// Largest sum of the members' caps (micro-tokens for a budget) over the run.
    cap_sum_max: u64,
    /// Per closed interval: `iv_max`, and the sum of the caps at its end.
    hist_max: Vec<f64>,
    hist_cap_sum: Vec<f64>,
}

/// The fleet of one service.
#[derive(Debug)]
pub(super) struct FleetState {
    spec: FleetSpec,
    /// Per instance: the record it last wrote.
    records: Vec<Option<Record>>,
    /// Per instance: a member now (started, not yet left).
    alive: Vec<bool>,
    /// Per instance, per allowance: the share it enforces.
    caps: Vec<Vec<u64>>,
    /// Per allowance.
    measures: Vec<Measure>,
    members_max: u64,
    hist_members: Vec<f64>,
}

impl FleetState {
    fn members(&self) -> u64 {
        self.alive.iter().filter(|a| **a).count() as u64
    }
}

impl Sim {
    /// Build the fleets of the services that have one, with the instances that run from
    /// the start as members at their fair shares (a fleet in its steady state).
    pub(super) fn fleet_init(&mut self) {
        for svc in 0..self.topo.services.len() {
            let Some(spec) = self.topo.services[svc].fleet.clone() else {
                self.fleets.push(None);
                continue;
            };
            let n = self.svcs[svc].instances.len();
            let k = spec.allowances.len();
            let view: Vec<MemberRecord> =
                (0..n).map(|i| MemberRecord::new(i as u64, 1, 0)).collect();
            let mut caps = vec![vec![0; k]; n];
            for (inst, c) in caps.iter_mut().enumerate() {
                for (a, al) in spec.allowances.iter().enumerate() {
                    if let Some(allowance) = al.allowance {
                        c[a] = fair_share(allowance, &view, inst);
                    }
                }
            }
            let enforces = spec.enforces();
            let records = caps
                .iter()
                .map(|c| {
                    enforces.then(|| Record {
                        at: self.now,
                        held: c.clone(),
                    })
                })
                .collect();
            self.fleets.push(Some(FleetState {
                records,
                alive: vec![true; n],
                caps,
                measures: vec![Measure::default(); k],
                members_max: 0,
                hist_members: Vec::new(),
                spec,
            }));
            if enforces {
                for inst in 0..n {
                    self.fleet_apply(svc, inst);
                    let at = self.now.saturating_add(self.fleet_phase(svc, inst));
                    self.schedule(at, Kind::FleetSync(svc as u32, inst as u32), false);
                }
            }
            self.fleet_note(svc);
        }
    }

    /// Member `inst`'s phase within the interval: a stable hash of its name.
    fn fleet_phase(&self, svc: usize, inst: usize) -> Nanos {
        let period = self.fleets[svc]
            .as_ref()
            .map_or(Nanos::new(1), |f| f.spec.sync_interval);
        let name = format!("{}-{inst}", self.topo.services[svc].name);
        guards_core::backoff::stable_offset(name.as_bytes(), period)
    }

    /// Set every enforced allowance's guard of `inst` to the share recorded for it.
    fn fleet_apply(&mut self, svc: usize, inst: usize) {
        let Some(f) = self.fleets[svc].as_ref() else {
            return;
        };
        let ins = &self.svcs[svc].instances[inst];
        for (a, al) in f.spec.allowances.iter().enumerate() {
            if al.allowance.is_none() {
                continue;
            }
            let cap = f
                .caps
                .get(inst)
                .and_then(|c| c.get(a))
                .copied()
                .unwrap_or(0);
            match al.guard {
                FleetGuard::Bulkhead(g) => {
                    if let Some(g) = ins.gates.get(g) {
                        g.set_cap(cap);
                    }
                }
                FleetGuard::Budget(b) => {
                    if let Some(b) = ins.budgets.get(b) {
                        b.set_capacity(cap);
                    }
                }
            }
        }
    }

    /// The guards of a service were rebuilt (a change during the run): give them back
    /// the shares in force.
    pub(super) fn fleet_reapply(&mut self, svc: usize) {
        let n = self.fleets[svc].as_ref().map_or(0, |f| f.caps.len());
        for inst in 0..n.min(self.svcs[svc].instances.len()) {
            self.fleet_apply(svc, inst);
        }
        self.fleet_note(svc);
    }

    /// Instance `inst` of `svc` started (a scale action): it joins as a newcomer, with a
    /// share of 0, and syncs now.
    pub(super) fn fleet_join(&mut self, svc: usize, inst: usize) {
        let now = self.now;
        let Some(f) = self.fleets[svc].as_mut() else {
            return;
        };
        let k = f.spec.allowances.len();
        while f.alive.len() <= inst {
            f.alive.push(false);
            f.records.push(None);
            f.caps.push(vec![0; k]);
        }
        if f.alive[inst] {
            return;
        }
        f.alive[inst] = true;
        if f.spec.enforces() {
            f.caps[inst] = vec![0; k];
            // A record left from an earlier life is not this member's.
            f.records[inst] = None;
            self.fleet_apply(svc, inst);
            self.fleet_sync_at(svc, inst, now);
        }
        self.fleet_note(svc);
    }

    /// Instance `inst` was removed by a scale action. A fleet that only measures loses
    /// the member at once; one that enforces lets it shrink to 0 and leave once drained
    /// (at its syncs).
    pub(super) fn fleet_removed(&mut self, svc: usize, inst: usize) {
        let Some(f) = self.fleets[svc].as_mut() else {
            return;
        };
        if !f.spec.enforces() {
            if let Some(a) = f.alive.get_mut(inst) {
                *a = false;
            }
        }
    }

    /// A sync event of member `inst`.
    pub(super) fn fleet_sync(&mut self, svc: usize, inst: usize) {
        let now = self.now;
        self.fleet_sync_at(svc, inst, now);
    }

    fn fleet_sync_at(&mut self, svc: usize, inst: usize, now: Nanos) {
        let Some(f) = self.fleets[svc].as_ref() else {
            return;
        };
        if !f.alive.get(inst).copied().unwrap_or(false) {
            return;
        }
        let ttl = f.spec.ttl();
        let live = |r: &Option<Record>| r.as_ref().is_some_and(|r| now < r.at.saturating_add(ttl));
        let me_listed = live(&f.records[inst]);
        let ins = &self.svcs[svc].instances[inst];
        let active = ins.active;
        let mut caps = f.caps[inst].clone();
        let mut held = vec![0u64; caps.len()];
        let mut drained = true;
        for (a, al) in f.spec.allowances.iter().enumerate() {
            let Some(allowance) = al.allowance else {
                continue;
            };
            let (cap, in_flight) = match al.guard {
                FleetGuard::Bulkhead(g) => ins
                    .gates
                    .get(g)
                    .map_or((0, 0), |g| (g.cap(), g.in_flight())),
                FleetGuard::Budget(b) => ins.budgets.get(b).map_or((0, 0), |b| {
                    (
                        b.capacity_micros() / MICROS,
                        b.tokens_micros().div_ceil(MICROS),
                    )
                }),
            };
            // Calls still out hold a leaving member; tokens left in a bucket do not.
            if matches!(al.guard, FleetGuard::Bulkhead(_)) && in_flight > 0 {
                drained = false;
            }
            let new_cap = if !active || !me_listed {
                // Leaving, or not in the view (first sync): a share of 0.
                0
            } else {
                let mut view = Vec::with_capacity(f.records.len());
                let mut me = 0;
                for (j, r) in f.records.iter().enumerate() {
                    if j == inst {
                        me = view.len();
                        view.push(MemberRecord::new(j as u64, 1, cap.max(in_flight)));
                    } else if live(r) {
                        if let Some(r) = r {
                            view.push(MemberRecord::new(j as u64, 1, r.held[a]));
                        }
                    }
                }
                decide(allowance, &view, me, cap, in_flight).cap
            };
            caps[a] = new_cap;
            held[a] = new_cap.max(in_flight);
        }
        let interval = f.spec.sync_interval;
        let Some(f) = self.fleets[svc].as_mut() else {
            return;
        };
        f.caps[inst] = caps;
        if !active && drained {
            // Left: the record is deleted and the syncs stop.
            f.records[inst] = None;
            f.alive[inst] = false;
        } else {
            f.records[inst] = Some(Record { at: now, held });
            let at = now.saturating_add(interval);
            self.schedule(at, Kind::FleetSync(svc as u32, inst as u32), true);
        }
        self.fleet_apply(svc, inst);
        self.fleet_note(svc);
    }

    /// Something measured may have changed in `svc`'s fleet (a permit taken, a deposit, a
    /// resize, a member joined or left).
    pub(super) fn fleet_note(&mut self, svc: usize) {
        let Some(f) = self.fleets.get_mut(svc).and_then(Option::as_mut) else {
            return;
        };
        let instances = &self.svcs[svc].instances;
        for (al, m) in f.spec.allowances.iter().zip(&mut f.measures) {
            let (used, caps) = sums(instances.iter().zip(&f.alive), al.guard);
            m.max = m.max.max(used);
            m.iv_max = m.iv_max.max(used);
            m.cap_sum_max = m.cap_sum_max.max(caps);
        }
        f.members_max = f.members_max.max(f.members());
    }

    /// Close an interval of every fleet's measures.
    pub(super) fn fleet_close(&mut self) {
        for svc in 0..self.fleets.len() {
            let Some(f) = self.fleets[svc].as_mut() else {
                continue;
            };
            let instances = &self.svcs[svc].instances;
            for (al, m) in f.spec.allowances.iter().zip(&mut f.measures) {
                let (used, caps) = sums(instances.iter().zip(&f.alive), al.guard);
                let scale = unit(al.guard);
                m.hist_max.push(m.iv_max as f64 / scale);
                m.hist_cap_sum.push(caps as f64 / scale);
                m.iv_max = used;
            }
            let members = f.members() as f64;
            f.hist_members.push(members);
        }
    }

    /// The fleets' columns: `fleet.<svc>.members` and, per allowance,
    /// `fleet.<svc>.<name>.in_flight_max` (a bulkhead) or `.tokens_max` (a budget), and
    /// `.cap_sum`.
    pub(super) fn fleet_columns(&self, columns: &mut Vec<Column>) {
        for (svc, f) in self.fleets.iter().enumerate() {
            let Some(f) = f else { continue };
            let p = format!("fleet.{}", self.topo.services[svc].name);
            columns.push(Column {
                name: format!("{p}.members"),
                values: f.hist_members.clone(),
            });
            for (al, m) in f.spec.allowances.iter().zip(&f.measures) {
                columns.push(Column {
                    name: format!("{p}.{}.{}", al.name, used_name(al.guard)),
                    values: m.hist_max.clone(),
                });
                columns.push(Column {
                    name: format!("{p}.{}.cap_sum", al.name),
                    values: m.hist_cap_sum.clone(),
                });
            }
        }
    }

    /// The summary's `fleet`: per service with a fleet, `members_max` and per allowance
    /// `allowance` (`null`: only measured), `in_flight_max` or `tokens_max` and
    /// `cap_sum_max` over the run; `None` when no service has a fleet.
    pub(super) fn fleet_summary(&self) -> Option<SummaryValue> {
        let mut out = Vec::new();
        for (svc, f) in self.fleets.iter().enumerate() {
            let Some(f) = f else { continue };
            let mut s = vec![(
                "members_max".to_string(),
                SummaryValue::Number(f.members_max as f64),
            )];
            for (al, m) in f.spec.allowances.iter().zip(&f.measures) {
                let scale = unit(al.guard);
                s.push((
                    al.name.clone(),
                    SummaryValue::Map(vec![
                        (
                            "allowance".into(),
                            al.allowance
                                .map_or(SummaryValue::Null, |a| SummaryValue::Number(a as f64)),
                        ),
                        (
                            used_name(al.guard).into(),
                            SummaryValue::Number(m.max as f64 / scale),
                        ),
                        (
                            "cap_sum_max".into(),
                            SummaryValue::Number(m.cap_sum_max as f64 / scale),
                        ),
                    ]),
                ));
            }
            out.push((self.topo.services[svc].name.clone(), SummaryValue::Map(s)));
        }
        (!out.is_empty()).then_some(SummaryValue::Map(out))
    }
}

/// The name of what is measured of a guard.
fn used_name(g: FleetGuard) -> &'static str {
    match g {
        FleetGuard::Bulkhead(_) => "in_flight_max",
        FleetGuard::Budget(_) => "tokens_max",
    }
}

/// Measured units per output unit: 1 for calls, 10^6 micro-tokens per token.
fn unit(g: FleetGuard) -> f64 {
    match g {
        FleetGuard::Bulkhead(_) => 1.0,
        FleetGuard::Budget(_) => MICROS as f64,
    }
}

/// Over the members: the calls in flight (or micro-tokens held) and the sum of the caps.
fn sums<'a>(
    members: impl Iterator<Item = (&'a super::Instance, &'a bool)>,
    guard: FleetGuard,
) -> (u64, u64) {
    let mut used = 0u64;
    let mut caps = 0u64;
    for (ins, alive) in members {
        let (u, c) = match guard {
            FleetGuard::Bulkhead(g) => ins
                .gates
                .get(g)
                .map_or((0, 0), |g| (g.in_flight(), g.cap())),
            FleetGuard::Budget(b) => ins
                .budgets
                .get(b)
                .map_or((0, 0), |b| (b.tokens_micros(), b.capacity_micros())),
        };
        // A bucket's tokens count only while its instance is a member; calls in flight
        // count until they end.
        if *alive || matches!(guard, FleetGuard::Bulkhead(_)) {
            used = used.saturating_add(u);
        }
        if *alive {
            caps = caps.saturating_add(c);
        }
    }
    (used, caps)
}
