//! The life of a call: arrival at an instance (shedding, admission, idempotency check),
//! the wait for a server, the steps of its operation, the attempts of each call step
//! (breaker, deadline budget, bulkhead, timeout, hedge), retries and backoff, fallbacks,
//! the answer to the caller, and cancellation.
//!
//! The network adds no delay: answers and cancels are delivered at once, by direct calls.
//! Recursion is bounded by the depth of the topology; a server freed while an instance is
//! already handing out servers is picked up by the loop in progress.

use guards_core::Nanos;

use super::call::{Attempt, CallRef, Held, NewCall, Outcome, Phase, NO_EDGE};
use super::{Kind, Sim};
use crate::guards::circuit_breaker::BreakerTicket;
use crate::guards::deadline::{attempt_budget, AttemptBudget};
use crate::guards::hedging::HedgeDecision;
use crate::guards::queue_discipline::Drop;
use crate::guards::retry_policy::{Class, Decision, GiveUp};
use guards_core::backoff::Jitter;
use guards_core::retry_policy::Idempotency;

use crate::guards::limiter::LimiterTicket;
use crate::topology::{DeadlineMode, Dist, Step};
use crate::trace::{Ended, TraceWhat};

use super::tracer::trace;

/// How a call ended, as a trace says it.
fn ended(outcome: Outcome, degraded: bool) -> Ended {
    match outcome {
        Outcome::Ok if degraded => Ended::Degraded,
        Outcome::Ok => Ended::Ok,
        Outcome::Overloaded => Ended::Overloaded,
        Outcome::Deadline => Ended::Deadline,
        _ => Ended::Error,
    }
}

/// What to tell a breaker about an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Report {
    /// It was never sent (another guard refused it).
    NotSent,
    /// The caller stopped waiting for a reason that says nothing about the callee.
    Abandoned,
    /// It ended so.
    Outcome(Outcome),
}

impl Sim {
    /// A new action of entry `e` starts at its client.
    pub(super) fn spawn_root(&mut self, e: usize) {
        let (svc, op, priority) = {
            let spec = &self.topo.entries[e];
            (spec.service, spec.op, spec.priority)
        };
        self.metrics.entry[e].offered += 1;
        let root = self.next_root;
        self.next_root += 1;
        let r = self.calls.insert(NewCall {
            parent: None,
            svc: svc as u32,
            inst: 0,
            op: op as u32,
            edge: u32::from(NO_EDGE),
            entry: e as u32,
            root,
            priority,
            expires_at: Nanos::MAX,
            now: self.now,
        });
        if let Some(c) = self.calls.get_mut(r) {
            c.phase = Phase::Running;
        }
        if self.tracer.is_some() {
            self.trace_root(r, e);
        }
        self.run_step(r);
    }

    /// A call reaches the door of its instance.
    fn arrive(&mut self, r: CallRef) {
        let now = self.now;
        let Some(c) = self.calls.get(r) else { return };
        let (svc, inst, priority, edge, root, expires) = (
            c.svc as usize,
            c.inst as usize,
            c.priority,
            c.edge,
            c.root,
            c.expires_at,
        );
        self.metrics.svc[svc].arrivals += 1;
        if self.topo.services[svc]
            .outages
            .iter()
            .any(|o| now >= o.start && now < o.end)
        {
            trace!(self, r, TraceWhat::Refused { why: "outage" });
            self.finish(r, Outcome::Error);
            return;
        }
        let ins = &mut self.svcs[svc].instances[inst];
        if let Some(max) = ins.shed {
            if ins.busy >= ins.servers && ins.queued >= max {
                self.metrics.svc[svc].shed += 1;
                trace!(self, r, TraceWhat::Refused { why: "shed" });
                self.finish(r, Outcome::Overloaded);
                return;
            }
        }
        let door_epoch = ins.door_epoch;
        let ticket = match &ins.door {
            Some(door) => match door.try_admit(now, priority) {
                Some(t) => Some(Held {
                    epoch: door_epoch,
                    ticket: t,
                }),
                None => {
                    self.metrics.svc[svc].refused += 1;
                    trace!(
                        self,
                        r,
                        TraceWhat::Refused {
                            why: "admission limit"
                        }
                    );
                    self.finish(r, Outcome::Overloaded);
                    return;
                }
            },
            None => None,
        };
        ins.inside += 1;
        let has_room = ins.busy < ins.servers && ins.queued == 0;
        if let Some(c) = self.calls.get_mut(r) {
            c.inside = true;
        }
        self.calls.set_ticket(r, ticket);
        self.inside_change(svc, true);
        // A repeat of a keyed side effect that already committed gets the first result.
        if edge != NO_EDGE
            && self.topo.edges[edge as usize].policy.idempotency == Idempotency::KeyedSideEffect
            && self.commits.contains_key(&root)
        {
            self.finish(r, Outcome::Ok);
            return;
        }
        if has_room {
            self.take_server(r, svc, inst);
            self.run_step(r);
        } else {
            let qdeadline = if self.topo.services[svc].queue.deadline_check {
                expires
            } else {
                Nanos::MAX
            };
            let ins = &mut self.svcs[svc].instances[inst];
            let ahead = ins.queued;
            if ins.queue.push(now, r.to_u64(), priority, qdeadline) {
                ins.queued += 1;
                trace!(self, r, TraceWhat::Queued { ahead });
            } else {
                self.metrics.svc[svc].refused += 1;
                trace!(self, r, TraceWhat::Refused { why: "queue full" });
                self.finish(r, Outcome::Overloaded);
            }
        }
    }

    fn take_server(&mut self, r: CallRef, svc: usize, inst: usize) {
        self.svcs[svc].instances[inst].busy += 1;
        self.busy_change(svc, true);
        let now = self.now;
        if let Some(c) = self.calls.get_mut(r) {
            c.has_server = true;
            c.phase = Phase::Running;
            let waited = now.saturating_sub(c.arrived).as_u64();
            let s = &mut self.svcs[svc];
            s.wait_sum = s.wait_sum.saturating_add(waited);
            s.wait_max = s.wait_max.max(waited);
            self.metrics.svc[svc].started += 1;
            trace!(
                self,
                r,
                TraceWhat::Started {
                    waited: Nanos::new(waited)
                }
            );
        }
    }

    fn release_server(&mut self, svc: usize, inst: usize) {
        let ins = &mut self.svcs[svc].instances[inst];
        ins.busy = ins.busy.saturating_sub(1);
        self.busy_change(svc, false);
        self.dispatch(svc, inst);
    }

    /// Hand free servers to waiting calls.
    pub(super) fn dispatch(&mut self, svc: usize, inst: usize) {
        if self.svcs[svc].instances[inst].dispatching {
            return;
        }
        self.svcs[svc].instances[inst].dispatching = true;
        let deadline_check = self.topo.services[svc].queue.deadline_check;
        loop {
            let now = self.now;
            let ins = &mut self.svcs[svc].instances[inst];
            if ins.busy >= ins.servers || ins.queued == 0 {
                break;
            }
            let mut drops = std::mem::take(&mut self.drops);
            let next = ins.queue.pop(now, &mut drops);
            for (id, why) in drops.drain(..) {
                let d = CallRef::from_u64(id);
                if self.calls.get(d).is_some_and(|c| c.phase == Phase::Queued) {
                    self.svcs[svc].instances[inst].queued -= 1;
                    match why {
                        Drop::Age => {
                            self.metrics.svc[svc].dropped_age += 1;
                            trace!(self, d, TraceWhat::Dropped { why: "age limit" });
                            self.finish(d, Outcome::Overloaded);
                        }
                        Drop::Deadline => {
                            self.metrics.svc[svc].dropped_deadline += 1;
                            trace!(
                                self,
                                d,
                                TraceWhat::Dropped {
                                    why: "deadline passed"
                                }
                            );
                            self.finish(d, Outcome::Deadline);
                        }
                    }
                }
            }
            self.drops = drops;
            let Some(id) = next else {
                if self.svcs[svc].instances[inst].queued == 0 {
                    break;
                }
                continue;
            };
            let r = CallRef::from_u64(id);
            let Some(c) = self.calls.get(r) else { continue };
            if c.phase != Phase::Queued || c.svc as usize != svc || c.inst as usize != inst {
                continue;
            }
            let expired = c.expires_at <= now;
            self.svcs[svc].instances[inst].queued -= 1;
            if deadline_check && expired {
                self.metrics.svc[svc].dropped_deadline += 1;
                trace!(
                    self,
                    r,
                    TraceWhat::Dropped {
                        why: "deadline passed"
                    }
                );
                self.finish(r, Outcome::Deadline);
                continue;
            }
            self.take_server(r, svc, inst);
            self.run_step(r);
        }
        self.svcs[svc].instances[inst].dispatching = false;
    }

    /// Run the call's steps from its current one until one has to wait.
    fn run_step(&mut self, r: CallRef) {
        loop {
            let now = self.now;
            let Some(c) = self.calls.get(r) else { return };
            let (svc, op, step, expires) =
                (c.svc as usize, c.op as usize, c.step as usize, c.expires_at);
            let spec = &self.topo.services[svc];
            let Some(st) = spec.ops[op].steps.get(step) else {
                self.finish(r, Outcome::Ok);
                return;
            };
            match st {
                Step::Work(w) => {
                    let w = *w;
                    let enforce = spec.enforce_deadline && expires != Nanos::MAX;
                    let factor = spec
                        .slowdowns
                        .iter()
                        .filter(|s| now >= s.start && now < s.end)
                        .fold(1.0, |f, s| f * s.factor);
                    let d = self.svcs[svc].work_rng.draw(&w.time, factor);
                    let end = now.saturating_add(d);
                    if enforce && end > expires {
                        if expires <= now {
                            self.metrics.svc[svc].dropped_deadline += 1;
                            self.finish(r, Outcome::Deadline);
                            return;
                        }
                        trace!(
                            self,
                            r,
                            TraceWhat::Work {
                                took: d,
                                cut: Some(expires)
                            }
                        );
                        let tok = self.bump(r);
                        self.schedule(expires, Kind::Cut(r, tok), false);
                        return;
                    }
                    if d.is_zero() {
                        if w.commit {
                            self.commit(r);
                        }
                        if let Some(c) = self.calls.get_mut(r) {
                            c.step += 1;
                        }
                        continue;
                    }
                    trace!(self, r, TraceWhat::Work { took: d, cut: None });
                    let tok = self.bump(r);
                    let fixed = matches!(w.time, Dist::Const(_));
                    self.schedule(end, Kind::Work(r, tok), fixed);
                    return;
                }
                Step::Call(e) => {
                    let e = *e;
                    self.begin_call(r, e);
                    return;
                }
            }
        }
    }

    fn bump(&mut self, r: CallRef) -> u32 {
        let tok = self.token();
        if let Some(c) = self.calls.get_mut(r) {
            c.token = tok;
        }
        tok
    }

    /// A work step finished.
    pub(super) fn work_done(&mut self, r: CallRef) {
        let Some(c) = self.calls.get(r) else { return };
        let (svc, op, step) = (c.svc as usize, c.op as usize, c.step as usize);
        if let Some(Step::Work(w)) = self.topo.services[svc].ops[op].steps.get(step) {
            if w.commit {
                self.commit(r);
            }
        }
        if let Some(c) = self.calls.get_mut(r) {
            c.step += 1;
        }
        self.run_step(r);
    }

    /// A work step ran into the call's deadline.
    pub(super) fn work_cut(&mut self, r: CallRef) {
        let Some(c) = self.calls.get(r) else { return };
        self.metrics.svc[c.svc as usize].dropped_deadline += 1;
        self.finish(r, Outcome::Deadline);
    }

    fn commit(&mut self, r: CallRef) {
        let Some(c) = self.calls.get(r) else { return };
        let (svc, root) = (c.svc as usize, c.root);
        let m = &mut self.metrics.svc[svc];
        m.commits += 1;
        let n = self.commits.entry(root).or_insert(0);
        let duplicate = *n >= 1;
        if duplicate {
            m.dup_commits += 1;
            if *n == 1 {
                m.dup_actions += 1;
            }
        }
        *n += 1;
        trace!(self, r, TraceWhat::Commit { duplicate });
    }

    fn current_edge(&self, r: CallRef) -> Option<usize> {
        let c = self.calls.get(r)?;
        match self.topo.services[c.svc as usize].ops[c.op as usize]
            .steps
            .get(c.step as usize)?
        {
            Step::Call(e) => Some(*e),
            Step::Work(_) => None,
        }
    }

    fn begin_call(&mut self, r: CallRef, e: usize) {
        let now = self.now;
        let Some((c, _)) = self.calls.begin_caller(r, now) else {
            return;
        };
        let (svc, inst) = (c.svc as usize, c.inst as usize);
        if let Some(b) = self.topo.edges[e].policy.budget {
            self.svcs[svc].instances[inst].budgets[b].deposit(now);
            self.fleet_note(svc);
        }
        self.attempt(r, false);
    }

    /// Make one attempt (or a hedge) of the current call step.
    pub(super) fn attempt(&mut self, r: CallRef, hedge: bool) {
        let now = self.now;
        let Some(e) = self.current_edge(r) else {
            return;
        };
        let Some(c) = self.calls.get(r) else { return };
        let (svc, inst, expires, entry, root, cprio) = (
            c.svc as usize,
            c.inst as usize,
            c.expires_at,
            c.entry,
            c.root,
            c.priority,
        );
        let edge = &self.topo.edges[e];
        let policy = edge.policy;
        let (to, op, eprio) = (edge.to, edge.op, edge.priority);
        // An attempt refused by a local guard still counts toward the attempt cap (it
        // failed fast), so "retry at once" after a refusal cannot loop forever.
        let attempts = match self.calls.caller_mut(r) {
            Some((_, k)) if !hedge => {
                k.attempts += 1;
                k.attempts
            }
            Some((_, k)) => k.attempts,
            None => return,
        };

        let mut bticket: Option<Held<BreakerTicket>> = None;
        let ins = &self.svcs[svc].instances[inst];
        if let Some(Some(b)) = ins.breakers.get(e) {
            match b.try_acquire(now) {
                Some(t) => {
                    bticket = Some(Held {
                        epoch: ins.breaker_epochs[e],
                        ticket: t,
                    })
                }
                None => {
                    self.metrics.edge[e].breaker_rejections += 1;
                    trace!(self, r, self.not_sent(e, "breaker open"));
                    self.attempt_failed(r, Outcome::BreakerOpen);
                    return;
                }
            }
        }
        let probe_timeout = bticket.as_ref().and_then(|t| t.ticket.probe_timeout);
        let timeout = probe_timeout.or(policy.attempt_timeout);
        let (wait, send) = match attempt_budget(now, expires, timeout, policy.margin) {
            AttemptBudget::Expired => {
                self.return_breaker(svc, inst, e, bticket, Report::NotSent);
                self.metrics.edge[e].no_time += 1;
                trace!(self, r, self.not_sent(e, "no time left"));
                self.attempt_failed(r, Outcome::NoTime);
                return;
            }
            AttemptBudget::Go { wait, send } => (wait, send),
        };
        let mut gticket = None;
        if let Some(g) = policy.bulkhead {
            let ins = &self.svcs[svc].instances[inst];
            match ins.gates[g].try_acquire() {
                Some(t) => {
                    gticket = Some(Held {
                        epoch: ins.gates_epoch,
                        ticket: t,
                    });
                    self.fleet_note(svc);
                }
                None => {
                    self.return_breaker(svc, inst, e, bticket, Report::NotSent);
                    self.metrics.edge[e].gate_rejections += 1;
                    trace!(self, r, self.not_sent(e, "bulkhead full"));
                    self.attempt_failed(r, Outcome::GateFull);
                    return;
                }
            }
        }
        let mut lticket: Option<Held<LimiterTicket>> = None;
        if let Some(l) = policy.limiter {
            let ins = &self.svcs[svc].instances[inst];
            match ins.limiters[l].try_acquire(now, eprio.unwrap_or(cprio)) {
                Some(t) => {
                    lticket = Some(Held {
                        epoch: ins.limiters_epoch,
                        ticket: t,
                    })
                }
                None => {
                    self.return_gate(svc, inst, e, gticket);
                    self.return_breaker(svc, inst, e, bticket, Report::NotSent);
                    self.metrics.edge[e].limiter_rejections += 1;
                    trace!(self, r, self.not_sent(e, "limiter full"));
                    self.attempt_failed(r, Outcome::GateFull);
                    return;
                }
            }
        }
        let to_inst = self.pick_instance(to);
        let child_expires = match policy.deadline {
            DeadlineMode::None => Nanos::MAX,
            DeadlineMode::Attempt => now.saturating_add(send),
            DeadlineMode::WholeLeft => expires,
        };
        let child = self.calls.insert(NewCall {
            parent: Some(r),
            svc: to as u32,
            inst: to_inst,
            op: op as u32,
            edge: e as u32,
            entry: entry.into(),
            root,
            priority: eprio.unwrap_or(cprio),
            expires_at: child_expires,
            now,
        });
        let token = self.token();
        let probe = probe_timeout.is_some();
        let Some((_, c)) = self.calls.caller_mut(r) else {
            return;
        };
        let slot = usize::from(c.slots[0].is_some());
        if hedge {
            c.hedges += 1;
        }
        c.slots[slot] = Some(Attempt {
            child,
            started: now,
            token,
            breaker: bticket,
            gate: gticket,
            limiter: lticket,
        });
        let m = &mut self.metrics.edge[e];
        m.calls += 1;
        if hedge {
            m.hedges += 1;
        } else if attempts == 1 {
            m.first += 1;
        } else {
            m.retries += 1;
        }
        if probe {
            m.probes += 1;
        }
        trace!(
            self,
            r,
            TraceWhat::Send {
                edge: self.topo.edges[e].name.clone(),
                attempt: attempts,
                hedge,
                probe,
                to: format!("{}[{to_inst}]", self.topo.services[to].name),
                wait: (wait != Nanos::MAX).then_some(wait),
                deadline: (child_expires != Nanos::MAX).then(|| child_expires.saturating_sub(now)),
            }
        );
        if wait != Nanos::MAX {
            self.schedule(
                now.saturating_add(wait),
                Kind::Timeout(r, token),
                timeout == Some(wait),
            );
        }
        if !hedge && attempts == 1 {
            if let Some(Some(h)) = self.svcs[svc].instances[inst].hedgers.get(e) {
                let idem = policy.idempotency == Idempotency::Idempotent;
                if let HedgeDecision::At(t) = h.decide(now, now, 0, idem, None) {
                    self.schedule(t, Kind::Hedge(r, token), false);
                }
            }
        }
        self.arrive(child);
    }

    fn not_sent(&self, e: usize, why: &'static str) -> TraceWhat {
        TraceWhat::NotSent {
            edge: self.topo.edges[e].name.clone(),
            why,
        }
    }

    fn return_breaker(
        &mut self,
        svc: usize,
        inst: usize,
        e: usize,
        t: Option<Held<BreakerTicket>>,
        report: Report,
    ) {
        let Some(Held { epoch, ticket: t }) = t else {
            return;
        };
        let count_overloaded = !self.topo.edges[e].policy.breaker_ignores_overloaded;
        let now = self.now;
        let ins = &self.svcs[svc].instances[inst];
        // A breaker replaced mid-run (a timeline change) never sees the old one's permits.
        if ins.breaker_epochs.get(e) != Some(&epoch) {
            return;
        }
        if let Some(Some(b)) = ins.breakers.get(e) {
            // The call contract decides what each outcome does to the breaker: a probe
            // nobody waits for any more (cancelled) is a failed probe; another abandoned
            // call (a hedge that lost, the caller itself cancelled) says nothing.
            let outcome = match report {
                Report::NotSent => guards_core::Outcome::Rejected,
                Report::Abandoned => guards_core::Outcome::Cancelled,
                Report::Outcome(Outcome::Overloaded) if !count_overloaded => {
                    guards_core::Outcome::Ignored
                }
                Report::Outcome(o) => crate::guards::outcome(o),
            };
            b.report(t, outcome, now);
        }
    }

    fn return_gate(
        &mut self,
        svc: usize,
        inst: usize,
        e: usize,
        t: Option<Held<crate::guards::bulkhead::GateTicket>>,
    ) {
        let Some(Held { epoch, ticket: t }) = t else {
            return;
        };
        let ins = &mut self.svcs[svc].instances[inst];
        if epoch != ins.gates_epoch {
            return;
        }
        if let Some(g) = self.topo.edges[e].policy.bulkhead {
            if let Some(gate) = ins.gates.get(g) {
                gate.release(t);
            }
        }
    }

    /// Give a limiter slot back with how the attempt ended (a sample of its round trip,
    /// a drop, or nothing: the call contract decides).
    fn return_limiter(
        &mut self,
        svc: usize,
        inst: usize,
        e: usize,
        t: Option<Held<LimiterTicket>>,
        outcome: guards_core::Outcome,
    ) {
        let Some(Held { epoch, ticket: t }) = t else {
            return;
        };
        let now = self.now;
        let ins = &self.svcs[svc].instances[inst];
        if epoch != ins.limiters_epoch {
            return;
        }
        if let Some(l) = self.topo.edges[e].policy.limiter {
            if let Some(gate) = ins.limiters.get(l) {
                gate.report(t, outcome, now);
            }
        }
    }

    /// The hedge timer of a first attempt fired.
    pub(super) fn on_hedge_timer(&mut self, r: CallRef, token: u32) {
        let now = self.now;
        let Some(e) = self.current_edge(r) else {
            return;
        };
        let (Some(c), Some(k)) = (self.calls.get(r), self.calls.caller(r)) else {
            return;
        };
        let first_pending = k.slots[0].as_ref().is_some_and(|a| a.token == token);
        if !first_pending || k.slots[1].is_some() {
            return;
        }
        let (svc, inst, started, hedges) =
            (c.svc as usize, c.inst as usize, k.call_started, k.hedges);
        let policy = self.topo.edges[e].policy;
        let idem = policy.idempotency == Idempotency::Idempotent;
        let ins = &self.svcs[svc].instances[inst];
        let gate = policy
            .budget
            .and_then(|b| ins.budgets.get(b))
            .map(|b| b.gate());
        let decision = match ins.hedgers.get(e) {
            Some(Some(h)) => h.decide(now, started, hedges, idem, gate),
            _ => HedgeDecision::Never,
        };
        match decision {
            HedgeDecision::Now => self.attempt(r, true),
            HedgeDecision::At(t) if t > now => self.schedule(t, Kind::Hedge(r, token), false),
            _ => {}
        }
    }

    /// An attempt's timeout fired: abandon it.
    pub(super) fn on_timeout(&mut self, r: CallRef, token: u32) {
        let Some(e) = self.current_edge(r) else {
            return;
        };
        let Some((c, k)) = self.calls.caller_mut(r) else {
            return;
        };
        let Some(i) = k
            .slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|a| a.token == token))
        else {
            return;
        };
        let Some(a) = k.slots[i].take() else { return };
        let (svc, inst) = (c.svc as usize, c.inst as usize);
        self.metrics.edge[e].timeouts += 1;
        if let Some(Some(h)) = self.svcs[svc].instances[inst].hedgers.get(e) {
            h.report(self.now, a.started, guards_core::Outcome::Timeout);
        }
        trace!(
            self,
            r,
            TraceWhat::Timeout {
                edge: self.topo.edges[e].name.clone(),
                after: self.now.saturating_sub(a.started),
            }
        );
        self.abandon(svc, inst, e, a, Report::Outcome(Outcome::Timeout));
        self.attempt_failed(r, Outcome::Timeout);
    }

    /// Stop waiting for an attempt: free the caller's gate slot, report the breaker
    /// outcome (`None`: ignore), and cancel the callee if the edge cancels.
    fn abandon(&mut self, svc: usize, inst: usize, e: usize, a: Attempt, report: Report) {
        let Attempt {
            child,
            breaker,
            gate,
            limiter,
            ..
        } = a;
        self.return_gate(svc, inst, e, gate);
        let lim = match report {
            Report::Outcome(o) => crate::guards::outcome(o),
            Report::NotSent => guards_core::Outcome::Rejected,
            Report::Abandoned => guards_core::Outcome::Cancelled,
        };
        self.return_limiter(svc, inst, e, limiter, lim);
        self.return_breaker(svc, inst, e, breaker, report);
        if self.topo.edges[e].policy.cancel {
            self.cancel(child);
        }
    }

    /// The callee answered attempt `child` of call `parent`.
    fn on_reply(&mut self, parent: CallRef, child: CallRef, outcome: Outcome, degraded: bool) {
        let now = self.now;
        let Some(e) = self.current_edge(parent) else {
            return;
        };
        let Some((c, k)) = self.calls.caller_mut(parent) else {
            return;
        };
        let Some(i) = k
            .slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|a| a.child == child))
        else {
            return;
        };
        let Some(a) = k.slots[i].take() else { return };
        let (svc, inst, call_started) = (c.svc as usize, c.inst as usize, k.call_started);
        let Attempt {
            started,
            breaker,
            gate,
            limiter,
            ..
        } = a;
        self.return_gate(svc, inst, e, gate);
        self.return_limiter(svc, inst, e, limiter, crate::guards::outcome(outcome));
        self.return_breaker(svc, inst, e, breaker, Report::Outcome(outcome));
        let m = &mut self.metrics.edge[e];
        match outcome {
            Outcome::Ok => m.ok += 1,
            Outcome::Overloaded => m.overloaded += 1,
            Outcome::Deadline => m.timeouts += 1,
            _ => m.errors += 1,
        }
        trace!(
            self,
            parent,
            TraceWhat::Answer {
                edge: self.topo.edges[e].name.clone(),
                ended: ended(outcome, degraded),
                latency: now.saturating_sub(started),
            }
        );
        if outcome != Outcome::Ok {
            self.attempt_failed(parent, outcome);
            return;
        }
        let latency = now.saturating_sub(started);
        if let Some(Some(h)) = self.svcs[svc].instances[inst].hedgers.get(e) {
            h.report(now, started, guards_core::Outcome::Success);
        }
        let whole = now.saturating_sub(call_started);
        self.metrics.edge_latency[e].push(whole);
        if self.topo.edges[e].record_latency {
            let st = &mut self.edges[e];
            st.attempt_latencies.push((now, latency));
            st.latencies.push((now, whole));
        }
        // The first answer wins: a copy still in flight is abandoned.
        let other = self
            .calls
            .caller_mut(parent)
            .and_then(|(_, k)| k.slots[1 - i].take());
        if let Some(o) = other {
            // The loser's latency is at least what it has taken so far: recording that
            // lower bound keeps the slow tail in the tracker (else only the winners of
            // hedged calls are seen and the tracked percentile drifts down).
            if let Some(Some(h)) = self.svcs[svc].instances[inst].hedgers.get(e) {
                h.report(now, o.started, guards_core::Outcome::Cancelled);
            }
            self.abandon(svc, inst, e, o, Report::Abandoned);
        }
        if let Some(f) = &self.edges[e].fallback {
            f.full();
        }
        if let Some(c) = self.calls.get_mut(parent) {
            if degraded {
                c.degraded = true;
            }
            c.step += 1;
        }
        self.run_step(parent);
    }

    /// An attempt failed; decide whether to retry (once no copy is still in flight).
    fn attempt_failed(&mut self, r: CallRef, outcome: Outcome) {
        let now = self.now;
        let Some(e) = self.current_edge(r) else {
            return;
        };
        let Some((c, k)) = self.calls.caller_mut(r) else {
            return;
        };
        if k.outstanding() > 0 {
            return;
        }
        let (svc, inst, attempts, prev, expires) = (
            c.svc as usize,
            c.inst as usize,
            k.attempts,
            k.prev_delay,
            c.expires_at,
        );
        if outcome == Outcome::NoTime {
            trace!(
                self,
                r,
                TraceWhat::GiveUp {
                    why: "no time left"
                }
            );
            self.step_failed(r, outcome);
            return;
        }
        let class = match outcome {
            Outcome::Timeout | Outcome::Deadline | Outcome::NoTime => Class::Timeout,
            Outcome::Error => Class::Error,
            _ => Class::Overloaded,
        };
        let left = (expires != Nanos::MAX).then(|| expires.saturating_sub(now));
        let policy = self.topo.edges[e].policy;
        let ins = &self.svcs[svc].instances[inst];
        let gate = policy
            .budget
            .and_then(|b| ins.budgets.get(b))
            .map(|b| b.gate());
        let decision = self.edges[e].retry.decide(
            attempts,
            class,
            policy.idempotency,
            now,
            left,
            prev,
            &self.jitter,
            gate,
        );
        match decision {
            Decision::Retry(after) => {
                trace!(self, r, TraceWhat::Retry { after });
                if let Some((_, k)) = self.calls.caller_mut(r) {
                    k.prev_delay = after;
                }
                if after.is_zero() {
                    self.attempt(r, false);
                } else {
                    let tok = self.bump(r);
                    let fixed = policy
                        .retry
                        .is_none_or(|p| p.backoff.jitter == Jitter::None);
                    self.schedule(now.saturating_add(after), Kind::Backoff(r, tok), fixed);
                }
            }
            Decision::GiveUp(why) => {
                if why == GiveUp::Budget {
                    self.metrics.edge[e].budget_refusals += 1;
                }
                trace!(
                    self,
                    r,
                    TraceWhat::GiveUp {
                        why: if why == GiveUp::Budget {
                            "the retry budget refused"
                        } else {
                            "the retry policy stops (attempts used, not retryable, or no time)"
                        }
                    }
                );
                self.step_failed(r, outcome);
            }
        }
    }

    /// The current call step failed for good: fall back or fail the operation.
    fn step_failed(&mut self, r: CallRef, outcome: Outcome) {
        let Some(e) = self.current_edge(r) else {
            return;
        };
        let fallback = self.edges[e]
            .fallback
            .as_ref()
            .is_some_and(|f| f.serve_fallback(outcome));
        if fallback {
            self.metrics.edge[e].fallbacks += 1;
            trace!(self, r, TraceWhat::Fallback);
            if let Some(c) = self.calls.get_mut(r) {
                c.degraded = true;
                c.step += 1;
            }
            self.run_step(r);
            return;
        }
        self.metrics.edge[e].failures += 1;
        // The one retry layer answers "overloaded, don't retry" when it gives up; every
        // other layer passes an overloaded answer up as it came.
        let reply = if self.topo.edges[e].policy.give_up_as_overloaded
            || matches!(outcome, Outcome::Overloaded)
        {
            Outcome::Overloaded
        } else if outcome.is_time() && self.calls.get(r).is_some_and(|c| c.expires_at <= self.now) {
            Outcome::Deadline
        } else {
            Outcome::Error
        };
        self.finish(r, reply);
    }

    /// Whether some caller up the chain of `r` (or `r`'s own caller) has given up: a
    /// caller that stopped waiting for an attempt no longer holds it in a slot (so giving
    /// up never has to touch the abandoned call itself).
    fn is_stale(&self, r: CallRef) -> bool {
        let mut x = r;
        loop {
            let Some(c) = self.calls.get(x) else {
                return true;
            };
            let Some(p) = c.parent() else { return false };
            match self.calls.get(p) {
                Some(_) if self.calls.waits_for(p, x) => x = p,
                _ => return true,
            }
        }
    }

    /// The call is over: free what it holds and answer its caller.
    pub(super) fn finish(&mut self, r: CallRef, outcome: Outcome) {
        let now = self.now;
        let stale = outcome == Outcome::Ok && self.is_stale(r);
        trace!(self, r, {
            let degraded = self.calls.get(r).is_some_and(|c| c.degraded);
            TraceWhat::Done {
                ended: ended(outcome, degraded),
                stale,
            }
        });
        let Some(c) = self.calls.get_mut(r) else {
            return;
        };
        let (svc, inst, parent, has_server, inside, entry, degraded) = (
            c.svc as usize,
            c.inst as usize,
            c.parent(),
            c.has_server,
            c.inside,
            c.entry as usize,
            c.degraded,
        );
        c.token = 0;
        let ticket = self.calls.take_ticket(r);
        if self.topo.services[svc].client {
            let m = &mut self.metrics.entry[entry];
            match (outcome, degraded) {
                (Outcome::Ok, false) => m.full += 1,
                (Outcome::Ok, true) => m.degraded += 1,
                _ => m.failed += 1,
            }
            self.calls.remove(r);
            return;
        }
        let m = &mut self.metrics.svc[svc];
        if outcome == Outcome::Ok {
            m.done += 1;
            if stale {
                m.stale += 1;
            }
        } else {
            m.failed += 1;
        }
        let ins = &mut self.svcs[svc].instances[inst];
        if let (Some(t), Some(door)) = (ticket, ins.door.as_ref()) {
            if t.epoch == ins.door_epoch {
                door.release(now, t.ticket, outcome);
            }
        }
        if inside {
            ins.inside = ins.inside.saturating_sub(1);
            self.inside_change(svc, false);
        }
        self.calls.remove(r);
        if has_server {
            self.release_server(svc, inst);
        }
        // A caller that has given up no longer holds the attempt: on_reply ignores it.
        if let Some(p) = parent {
            self.on_reply(p, r, outcome, degraded && outcome == Outcome::Ok);
        }
    }

    /// The caller gave up on `r` and the cancel reaches it: stop all its work at once.
    fn cancel(&mut self, r: CallRef) {
        let edge_now = self.current_edge(r);
        let Some(c) = self.calls.get_mut(r) else {
            return;
        };
        let (svc, inst, phase, has_server, inside) = (
            c.svc as usize,
            c.inst as usize,
            c.phase,
            c.has_server,
            c.inside,
        );
        c.token = 0;
        let ticket = self.calls.take_ticket(r);
        let slots = match self.calls.caller_mut(r) {
            Some((_, k)) => [k.slots[0].take(), k.slots[1].take()],
            None => [None, None],
        };
        self.metrics.svc[svc].cancelled += 1;
        trace!(self, r, TraceWhat::Cancelled);
        if phase == Phase::Queued && inside {
            let ins = &mut self.svcs[svc].instances[inst];
            ins.queue.remove(r.to_u64());
            ins.queued = ins.queued.saturating_sub(1);
        }
        let ins = &mut self.svcs[svc].instances[inst];
        if let (Some(t), Some(door)) = (ticket, ins.door.as_ref()) {
            if t.epoch == ins.door_epoch {
                door.forget(self.now, t.ticket);
            }
        }
        if inside {
            ins.inside = ins.inside.saturating_sub(1);
            self.inside_change(svc, false);
        }
        self.calls.remove(r);
        if let Some(e) = edge_now {
            for a in slots.into_iter().flatten() {
                self.abandon(svc, inst, e, a, Report::Abandoned);
            }
        }
        if has_server {
            self.release_server(svc, inst);
        }
    }

    /// Drop every queued call of `svc` without an answer (an operator's flush).
    pub(super) fn flush(&mut self, svc: usize) {
        let now = self.now;
        for inst in 0..self.svcs[svc].instances.len() {
            let ids = self.svcs[svc].instances[inst].queue.drain(now);
            for id in ids {
                let r = CallRef::from_u64(id);
                let Some(c) = self.calls.get_mut(r) else {
                    continue;
                };
                if c.phase != Phase::Queued {
                    continue;
                }
                let inside = c.inside;
                let ticket = self.calls.take_ticket(r);
                self.metrics.svc[svc].flushed += 1;
                trace!(self, r, TraceWhat::Flushed);
                let ins = &mut self.svcs[svc].instances[inst];
                ins.queued = ins.queued.saturating_sub(1);
                if inside {
                    ins.inside = ins.inside.saturating_sub(1);
                }
                if let (Some(t), Some(door)) = (ticket, ins.door.as_ref()) {
                    if t.epoch == ins.door_epoch {
                        door.forget(now, t.ticket);
                    }
                }
                if inside {
                    self.inside_change(svc, false);
                }
                self.calls.remove(r);
            }
        }
    }
}
