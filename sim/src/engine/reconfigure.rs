//! Changing a running model: from a given instant, run another topology of the same
//! shape (a timeline step such as "at 20:00:10 switch the breakers on").
//!
//! The shape (services, operations and their steps, edges, entries, timed actions, the
//! start and the interval) stays; any setting may change: pool sizes, instances, queues
//! and their discipline, admission limits, budgets, bulkheads, limiters, breakers, hedging, edge
//! policies (attempts, timeouts, backoff, deadlines, cancellation, fallbacks), work
//! durations, slowdowns, outages and arrival rates.
//!
//! What happens to the work in flight:
//! - Calls keep going; what they do next follows the new settings (a retry decision, the
//!   next attempt's timeout). An attempt already sent keeps the timeout it was sent with.
//! - A guard whose settings changed is replaced by a fresh one (a breaker starts closed
//!   with an empty window, a budget full, a hedger with no latency history). Permits of
//!   the old guard are dropped, not given to the new one: a new bulkhead or admission
//!   limit counts the calls it lets in itself.
//! - A queue whose discipline changed hands its waiters to the new one, oldest first, as
//!   if they arrived at the change (a discipline with fewer slots refuses the rest).
//! - More servers start waiting calls at once; fewer let the busy ones finish.
//! - A changed number of instances is a scale action (new instances take new calls).
//! - A Poisson entry's next arrival keeps its time; later ones use the new rate.

use guards_core::Nanos;

use super::call::{CallRef, Outcome, Phase};
use super::{validate, Kind, Sim};
use crate::error::SimError;
use crate::guards::{
    admission::Door, brownout::Fallback, bulkhead::Gate, circuit_breaker::Breaker, hedging::Hedger,
    limiter::LimiterGate, queue_discipline::WaitQueue, retry_budget::Budget, retry_policy::Retry,
};
use crate::topology::{Arrivals, Step, Topology};

/// The guards a change replaces, built before anything is touched.
#[derive(Default)]
struct Plan {
    /// Per service, per instance.
    doors: Vec<Option<Vec<Option<Door>>>>,
    budgets: Vec<Option<Vec<Vec<Budget>>>>,
    gates: Vec<Option<Vec<Vec<Gate>>>>,
    limiters: Vec<Option<Vec<Vec<LimiterGate>>>>,
    queues: Vec<Option<Vec<WaitQueue>>>,
    /// Per edge.
    retries: Vec<Option<Retry>>,
    fallbacks: Vec<Option<Option<Fallback>>>,
    /// Per edge, per instance of the calling service.
    breakers: Vec<Option<Vec<Option<Breaker>>>>,
    hedgers: Vec<Option<Vec<Option<Hedger>>>>,
}

impl Sim {
    /// From now on run `new`, a topology of the same shape as the running one; see the
    /// module docs for what happens to the work in flight. Errors (a different shape, a
    /// setting guards-core refuses) leave the run as it was.
    ///
    /// # Examples
    /// ```
    /// use guards_sim::basketly::Config;
    /// use guards_sim::topology::clock;
    /// use guards_sim::Sim;
    /// let before = Config::preset("C4").unwrap();
    /// let mut after = before.clone();
    /// after.set("breaker", "on").unwrap();
    /// let mut sim = Sim::new(before.topology().unwrap(), 1).unwrap();
    /// sim.advance(clock::hms(20, 0, 10));
    /// sim.reconfigure(after.topology().unwrap()).unwrap();
    /// let r = sim.run(clock::hms(20, 0, 12));
    /// let opened = r.column("edge.shop-api->stock.view.breaker_rejections").unwrap();
    /// assert!(opened.iter().sum::<f64>() > 0.0);
    /// ```
    pub fn reconfigure(&mut self, new: Topology) -> Result<(), SimError> {
        let plan = self.plan(&new)?;
        self.apply(new, plan);
        Ok(())
    }

    /// Check that `new` could replace the running topology now, without changing anything.
    pub fn check_reconfigure(&self, new: &Topology) -> Result<(), SimError> {
        self.plan(new).map(|_| ())
    }

    fn plan(&self, new: &Topology) -> Result<Plan, SimError> {
        validate(new)?;
        same_shape(&self.topo, new)?;
        let old = &self.topo;
        let mut p = Plan::default();
        for (si, (o, n)) in old.services.iter().zip(&new.services).enumerate() {
            let count = self.svcs[si].instances.len();
            let place = format!("service {}", n.name);
            p.doors.push(if o.admission != n.admission {
                let mut v = Vec::with_capacity(count);
                for _ in 0..count {
                    v.push(match &n.admission {
                        Some(a) => Some(Door::new(a, &place)?),
                        None => None,
                    });
                }
                Some(v)
            } else {
                None
            });
            p.budgets.push(if o.budgets != n.budgets {
                let mut v = Vec::with_capacity(count);
                for _ in 0..count {
                    v.push(
                        n.budgets
                            .iter()
                            .map(|b| Budget::new(b, &place))
                            .collect::<Result<Vec<_>, _>>()?,
                    );
                }
                Some(v)
            } else {
                None
            });
            p.gates.push(if o.bulkheads != n.bulkheads {
                let mut v = Vec::with_capacity(count);
                for _ in 0..count {
                    v.push(
                        n.bulkheads
                            .iter()
                            .map(|b| Gate::new(b, &place))
                            .collect::<Result<Vec<_>, _>>()?,
                    );
                }
                Some(v)
            } else {
                None
            });
            p.limiters.push(if o.limiters != n.limiters {
                let mut v = Vec::with_capacity(count);
                for _ in 0..count {
                    v.push(
                        n.limiters
                            .iter()
                            .map(|l| LimiterGate::new(l, &place))
                            .collect::<Result<Vec<_>, _>>()?,
                    );
                }
                Some(v)
            } else {
                None
            });
            p.queues.push(if o.queue.discipline != n.queue.discipline {
                let mut v = Vec::with_capacity(count);
                for _ in 0..count {
                    v.push(WaitQueue::new(n.queue.discipline.as_ref(), &place)?);
                }
                Some(v)
            } else {
                None
            });
        }
        for (o, n) in old.edges.iter().zip(&new.edges) {
            let place = format!("edge {}", n.name);
            p.retries.push(if o.policy != n.policy {
                Some(Retry::new(&n.policy, &place)?)
            } else {
                None
            });
            p.fallbacks.push(if o.optional != n.optional {
                Some(if n.optional {
                    Some(Fallback::new(true, &place)?)
                } else {
                    None
                })
            } else {
                None
            });
            let count = self.svcs[n.from].instances.len();
            p.breakers.push(if o.policy.breaker != n.policy.breaker {
                let mut v = Vec::with_capacity(count);
                for _ in 0..count {
                    v.push(match &n.policy.breaker {
                        Some(b) => Some(Breaker::new(b, &place)?),
                        None => None,
                    });
                }
                Some(v)
            } else {
                None
            });
            p.hedgers.push(if o.policy.hedge != n.policy.hedge {
                let mut v = Vec::with_capacity(count);
                for _ in 0..count {
                    v.push(match &n.policy.hedge {
                        Some(h) => Some(Hedger::new(h, &place)?),
                        None => None,
                    });
                }
                Some(v)
            } else {
                None
            });
        }
        Ok(p)
    }

    fn apply(&mut self, new: Topology, plan: Plan) {
        let old = std::mem::replace(&mut self.topo, new);
        let Plan {
            doors,
            budgets,
            gates,
            limiters,
            queues,
            retries,
            fallbacks,
            breakers,
            hedgers,
        } = plan;
        // Per-edge guards.
        for (e, r) in retries.into_iter().enumerate() {
            if let Some(r) = r {
                self.edges[e].retry = r;
            }
        }
        for (e, f) in fallbacks.into_iter().enumerate() {
            if let Some(f) = f {
                self.edges[e].fallback = f;
            }
        }
        for (e, v) in breakers.into_iter().enumerate() {
            let from = self.topo.edges[e].from;
            for (inst, b) in v.into_iter().flatten().enumerate() {
                let ins = &mut self.svcs[from].instances[inst];
                ins.breakers[e] = b;
                ins.breaker_epochs[e] = ins.breaker_epochs[e].wrapping_add(1);
            }
        }
        for (e, v) in hedgers.into_iter().enumerate() {
            let from = self.topo.edges[e].from;
            for (inst, h) in v.into_iter().flatten().enumerate() {
                self.svcs[from].instances[inst].hedgers[e] = h;
            }
        }
        // Per-service guards, pools and queues.
        let mut moved: Vec<(usize, usize, Vec<u64>)> = Vec::new();
        for (si, (((((d, b), g), l), q), (o, n))) in doors
            .into_iter()
            .zip(budgets)
            .zip(gates)
            .zip(limiters)
            .zip(queues)
            .zip(old.services.iter().zip(self.topo.services.clone()))
            .enumerate()
        {
            let now = self.now;
            let s = &mut self.svcs[si];
            for (inst, door) in d.into_iter().flatten().enumerate() {
                let ins = &mut s.instances[inst];
                ins.door = door;
                ins.door_epoch = ins.door_epoch.wrapping_add(1);
            }
            for (inst, bs) in b.into_iter().flatten().enumerate() {
                s.instances[inst].budgets = bs;
            }
            for (inst, gs) in g.into_iter().flatten().enumerate() {
                let ins = &mut s.instances[inst];
                ins.gates = gs;
                ins.gates_epoch = ins.gates_epoch.wrapping_add(1);
            }
            for (inst, ls) in l.into_iter().flatten().enumerate() {
                let ins = &mut s.instances[inst];
                ins.limiters = ls;
                ins.limiters_epoch = ins.limiters_epoch.wrapping_add(1);
            }
            for (inst, queue) in q.into_iter().flatten().enumerate() {
                let ins = &mut s.instances[inst];
                let mut old_queue = std::mem::replace(&mut ins.queue, queue);
                ins.queued = 0;
                moved.push((si, inst, old_queue.drain(now)));
            }
            if !n.client && o.servers != n.servers {
                for ins in &mut s.instances {
                    ins.servers = n.servers;
                }
            }
        }
        // Waiters of a replaced queue join the new one in the order the old one let them go.
        for (svc, inst, ids) in moved {
            for id in ids {
                self.requeue(svc, inst, CallRef::from_u64(id));
            }
        }
        for (si, (o, n)) in old
            .services
            .iter()
            .zip(self.topo.services.clone())
            .enumerate()
        {
            if o.instances != n.instances {
                self.scale(si, n.instances, Nanos::ZERO);
            }
            if n.fleet.is_some() {
                self.fleet_reapply(si);
            }
            for inst in 0..self.svcs[si].instances.len() {
                self.dispatch(si, inst);
            }
        }
        // A Poisson entry that had no arrivals coming gets them from now.
        for (i, o) in old.entries.iter().enumerate() {
            if let (Arrivals::Poisson { rate: was }, Arrivals::Poisson { rate }) =
                (o.arrivals, self.topo.entries[i].arrivals)
            {
                if was <= 0.0 && rate > 0.0 {
                    let gap = self.entry_rngs[i].exp(1e9 / rate);
                    let at = self.now.saturating_add(Nanos::new(gap as u64));
                    self.schedule(at, Kind::Arrive(i as u32), false);
                }
            }
        }
    }

    /// A call taken out of a replaced queue waits in the new one (or is refused if the
    /// new one is full).
    fn requeue(&mut self, svc: usize, inst: usize, r: CallRef) {
        let now = self.now;
        let Some(c) = self.calls.get(r) else { return };
        if c.phase != Phase::Queued || c.svc as usize != svc || c.inst as usize != inst {
            return;
        }
        let (priority, expires) = (c.priority, c.expires_at);
        let deadline = if self.topo.services[svc].queue.deadline_check {
            expires
        } else {
            Nanos::MAX
        };
        let ins = &mut self.svcs[svc].instances[inst];
        if ins.queue.push(now, r.to_u64(), priority, deadline) {
            ins.queued += 1;
        } else {
            self.metrics.svc[svc].refused += 1;
            self.finish(r, Outcome::Overloaded);
        }
    }
}

/// Whether `new` has the shape of `old`: only settings may change.
fn same_shape(old: &Topology, new: &Topology) -> Result<(), SimError> {
    let fixed = |what: &str| {
        SimError::topology(format!(
            "a change during the run may alter settings, not the shape of the system: \
             {what} must stay as it is"
        ))
    };
    if old.start != new.start || old.interval != new.interval {
        return Err(fixed("the start and the interval"));
    }
    if old.events != new.events {
        return Err(fixed("the timed actions (events)"));
    }
    if old.services.len() != new.services.len() {
        return Err(fixed("the list of services"));
    }
    for (o, n) in old.services.iter().zip(&new.services) {
        if o.name != n.name || o.client != n.client || o.ops.len() != n.ops.len() {
            return Err(fixed(&format!("service {}", o.name)));
        }
        if o.fleet != n.fleet {
            return Err(fixed(&format!("the fleet of service {}", o.name)));
        }
        for (oo, no) in o.ops.iter().zip(&n.ops) {
            let same_steps = oo.name == no.name
                && oo.steps.len() == no.steps.len()
                && oo.steps.iter().zip(&no.steps).all(|(a, b)| match (a, b) {
                    (Step::Work(_), Step::Work(_)) => true,
                    (Step::Call(x), Step::Call(y)) => x == y,
                    _ => false,
                });
            if !same_steps {
                return Err(fixed(&format!(
                    "the steps of {}.{} (a work step's duration may change)",
                    o.name, oo.name
                )));
            }
        }
    }
    if old.edges.len() != new.edges.len() {
        return Err(fixed("the list of edges"));
    }
    for (o, n) in old.edges.iter().zip(&new.edges) {
        if o.name != n.name || o.from != n.from || o.to != n.to || o.op != n.op {
            return Err(fixed(&format!("edge {}", o.name)));
        }
    }
    if old.entries.len() != new.entries.len() {
        return Err(fixed("the list of entries"));
    }
    for (o, n) in old.entries.iter().zip(&new.entries) {
        let same_kind = match (o.arrivals, n.arrivals) {
            (Arrivals::Poisson { .. }, Arrivals::Poisson { .. }) => true,
            (a, b) => a == b,
        };
        if o.name != n.name || o.service != n.service || o.op != n.op || !same_kind {
            return Err(fixed(&format!(
                "entry {} (a Poisson rate may change)",
                o.name
            )));
        }
    }
    Ok(())
}
