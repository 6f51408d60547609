//! The discrete-event engine: a virtual nanosecond clock, an event heap ordered by time
//! and then by insertion sequence (so equal times resolve the same way every run), the
//! run's random streams, and the state of every service instance.
//!
//! [`Sim`] is built from a [`Topology`] and a seed, advanced to any instant, and read out
//! as a [`SimResult`]. The call lifecycle (admission, queues, steps, attempts, retries,
//! cancellation) is in `flow.rs`; the counters in `metrics.rs`.

pub(crate) mod call;
mod fleet;
mod flow;
pub(crate) mod metrics;
mod queue;
mod reconfigure;
mod tracer;

use std::collections::HashMap;

use guards_core::{Nanos, Rng};

use crate::error::SimError;
use crate::guards::{
    admission::Door, brownout::Fallback, bulkhead::Gate, circuit_breaker::Breaker, hedging::Hedger,
    limiter::LimiterGate, queue_discipline::WaitQueue, retry_budget::Budget, retry_policy::Retry,
};
use crate::limits::{Limits, Stop, StopReason, MIN_INTERVAL};
use crate::result::{Column, LatencySamples, RunStats, SimResult};
use crate::rng::SimRng;
use crate::topology::{Action, Arrivals, Balance, Offsets, Step, Topology};

use call::{CallRef, Slab};
use metrics::{EdgeGauges, Metrics, ServiceGauges, LATENCY_QUANTILES};
use queue::EventQueue;

/// What happens at an event.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Next Poisson arrival of an entry.
    Arrive(u32),
    /// A burst of arrivals of an entry.
    Burst(u32),
    /// A periodic agent of an entry starts its batch.
    Periodic(u32, u32),
    /// A work step finished.
    Work(CallRef, u32),
    /// A work step reached the call's deadline (statement timeout).
    Cut(CallRef, u32),
    /// An attempt's timeout (token identifies the attempt).
    Timeout(CallRef, u32),
    /// A backoff wait ended.
    Backoff(CallRef, u32),
    /// Time to consider a hedge (token identifies the first attempt).
    Hedge(CallRef, u32),
    /// A timed operator action.
    Action(u32),
    /// A fleet member (service, instance) syncs.
    FleetSync(u32, u32),
    /// The load balancer starts sending calls to the first `n` instances of a service.
    LbJoin(u32, u32),
}

/// One service instance.
#[derive(Debug)]
struct Instance {
    active: bool,
    servers: u32,
    busy: u32,
    queue: WaitQueue,
    /// Live waiters (the FIFO queue may also hold stale ids).
    queued: u32,
    /// Calls inside: queued or running.
    inside: u32,
    shed: Option<u32>,
    door: Option<Door>,
    budgets: Vec<Budget>,
    gates: Vec<Gate>,
    limiters: Vec<LimiterGate>,
    /// Breakers by edge id (for the edges leaving this service).
    breakers: Vec<Option<Breaker>>,
    /// Hedgers by edge id.
    hedgers: Vec<Option<Hedger>>,
    /// Epochs of the door, the gates and each edge's breaker: bumped when a timeline
    /// change replaces them (see `call::Held`).
    door_epoch: u32,
    gates_epoch: u32,
    limiters_epoch: u32,
    breaker_epochs: Vec<u32>,
    dispatching: bool,
}

/// One service: its instances and shared counters.
#[derive(Debug)]
struct SvcState {
    instances: Vec<Instance>,
    active: Vec<u32>,
    rr: u64,
    work_rng: SimRng,
    /// Busy servers over all instances.
    busy: Gauge,
    /// Calls inside over all instances.
    inside: Gauge,
    shed: Option<u32>,
    /// Queue waits of the calls that got a server this interval: sum and maximum (ns).
    wait_sum: u64,
    wait_max: u64,
}

/// A count that goes up and down, and its time integral over the current interval (for
/// the interval's average).
#[derive(Debug)]
struct Gauge {
    total: u64,
    last: Nanos,
    area: f64,
}

impl Gauge {
    fn new(start: Nanos) -> Self {
        Gauge {
            total: 0,
            last: start,
            area: 0.0,
        }
    }

    /// Integrate up to `now`.
    fn advance(&mut self, now: Nanos) {
        self.area += self.total as f64 * now.saturating_sub(self.last).as_u64() as f64;
        self.last = now;
    }

    /// One more (`up`) or one fewer at `now`.
    fn change(&mut self, now: Nanos, up: bool) {
        self.advance(now);
        if up {
            self.total += 1;
        } else {
            self.total = self.total.saturating_sub(1);
        }
    }

    /// The average over the interval of `iv` ns ending at `end`; the next interval starts.
    fn close(&mut self, end: Nanos, iv: f64) -> f64 {
        self.advance(end);
        let avg = self.area / iv;
        self.area = 0.0;
        avg
    }
}

/// Per-edge state shared by all caller instances.
#[derive(Debug)]
struct EdgeState {
    retry: Retry,
    fallback: Option<Fallback>,
    latencies: Vec<(Nanos, Nanos)>,
    attempt_latencies: Vec<(Nanos, Nanos)>,
}

/// A running simulation.
///
/// # Examples
/// ```
/// use guards_sim::{basketly, Sim};
/// let topo = basketly::Config::preset("healthy").unwrap().topology().unwrap();
/// let until = topo.start.saturating_add(guards_core::Nanos::from_secs(2));
/// let result = Sim::new(topo, 1).unwrap().run(until);
/// assert_eq!(result.len(), 2);
/// ```
#[derive(Debug)]
pub struct Sim {
    topo: Topology,
    seed: u64,
    now: Nanos,
    queue: EventQueue<Kind>,
    calls: Slab,
    svcs: Vec<SvcState>,
    edges: Vec<EdgeState>,
    entry_rngs: Vec<SimRng>,
    lb_rng: SimRng,
    jitter: Rng,
    commits: HashMap<u64, u32>,
    next_root: u64,
    next_token: u32,
    metrics: Metrics,
    drops: Vec<(u64, crate::guards::queue_discipline::Drop)>,
    events: u64,
    label: String,
    limits: Limits,
    stopped: Option<Stop>,
    /// Traces of single actions, when asked for (`set_trace`).
    tracer: Option<Box<tracer::Tracer>>,
    /// Bytes of one closed interval in the history (and again in the result).
    row_bytes: u64,
    /// Per service: its fleet, if it has one.
    fleets: Vec<Option<fleet::FleetState>>,
}

/// Events between two checks of the memory estimate.
const MEMORY_CHECK_EVERY: u64 = 1 << 14;

/// Intervals closed between two checks of the memory estimate.
const ROWS_CHECK_EVERY: usize = 1 << 10;

/// Streams of the run's random numbers (kept apart so one use does not shift another).
mod stream {
    pub const ENTRY: u64 = 1_000;
    pub const WORK: u64 = 2_000;
    pub const BALANCE: u64 = 3;
    pub const JITTER: u64 = 4;
}

impl Sim {
    /// Check `topology` and build a simulation seeded with `seed`, at the topology's start.
    pub fn new(topology: Topology, seed: u64) -> Result<Sim, SimError> {
        validate(&topology)?;
        let t = &topology;
        let mut svcs = Vec::with_capacity(t.services.len());
        for (i, s) in t.services.iter().enumerate() {
            let mut instances = Vec::new();
            for _ in 0..s.instances {
                instances.push(build_instance(t, i)?);
            }
            svcs.push(SvcState {
                active: (0..s.instances).collect(),
                instances,
                rr: 0,
                work_rng: SimRng::new(seed, stream::WORK + i as u64),
                busy: Gauge::new(t.start),
                inside: Gauge::new(t.start),
                shed: None,
                wait_sum: 0,
                wait_max: 0,
            });
        }
        let mut edges = Vec::with_capacity(t.edges.len());
        for e in &t.edges {
            let place = format!("edge {}", e.name);
            let fallback = if e.optional {
                Some(Fallback::new(true, &place)?)
            } else {
                None
            };
            edges.push(EdgeState {
                retry: Retry::new(&e.policy, &place)?,
                fallback,
                latencies: Vec::new(),
                attempt_latencies: Vec::new(),
            });
        }
        let metrics = Metrics::new(
            t.start,
            t.interval,
            t.entries.len(),
            t.edges.len(),
            t.services.len(),
        );
        let mut sim = Sim {
            seed,
            now: t.start,
            queue: EventQueue::default(),
            calls: Slab::default(),
            svcs,
            edges,
            entry_rngs: (0..t.entries.len())
                .map(|i| SimRng::new(seed, stream::ENTRY + i as u64))
                .collect(),
            lb_rng: SimRng::new(seed, stream::BALANCE),
            jitter: Rng::new(SimRng::new(seed, stream::JITTER).next_u64()),
            commits: HashMap::new(),
            next_root: 1,
            next_token: 1,
            metrics,
            drops: Vec::new(),
            events: 0,
            label: String::from("custom"),
            limits: Limits::default(),
            stopped: None,
            tracer: None,
            row_bytes: Metrics::row_bytes(t.entries.len(), t.edges.len(), t.services.len()),
            fleets: Vec::new(),
            topo: topology,
        };
        sim.schedule_arrivals();
        for (i, ev) in sim.topo.events.clone().iter().enumerate() {
            sim.schedule(ev.at, Kind::Action(i as u32), false);
        }
        sim.fleet_init();
        Ok(sim)
    }

    /// Label the result (the setting name).
    pub fn set_label(&mut self, label: &str) {
        self.label = label.to_string();
    }

    /// The current virtual time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Bound the run's memory and events (see [`Limits`]); the default is 1 GiB and no
    /// event limit.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Where and why the run stopped early, if it did: it then advances no further.
    pub fn stopped(&self) -> Option<Stop> {
        self.stopped
    }

    /// An estimate of the bytes the run holds: calls and their states, pending events,
    /// queued calls, the closed intervals (twice: the history and the result made from
    /// it) and the latency samples.
    pub fn memory_estimate(&self) -> u64 {
        let queued: u64 = self
            .svcs
            .iter()
            .flat_map(|s| &s.instances)
            .map(|i| u64::from(i.queued))
            .sum();
        let samples: usize = self
            .edges
            .iter()
            .map(|e| e.latencies.capacity() + e.attempt_latencies.capacity())
            .sum();
        (self.calls.bytes() + self.queue.bytes()) as u64
            + queued * 8
            + self.metrics.rows as u64 * self.row_bytes * 2
            + samples as u64 * 16
            + self
                .metrics
                .edge_latency
                .iter()
                .map(|v| v.capacity() as u64 * 8)
                .sum::<u64>()
            + self.commits.capacity() as u64 * 24
    }

    /// Stop if the memory estimate has passed the limit.
    fn check_memory(&mut self) -> bool {
        let used = self.memory_estimate();
        if used > self.limits.max_memory {
            self.stop(StopReason::Memory {
                limit: self.limits.max_memory,
                used,
            });
            return true;
        }
        false
    }

    fn stop(&mut self, reason: StopReason) {
        self.stopped = Some(Stop {
            at: self.now,
            reason,
        });
    }

    /// Run every event before `until`, closing each interval that ends at or before it.
    /// A run that reaches one of its [`Limits`] stops where it is (see [`Sim::stopped`]).
    pub fn advance(&mut self, until: Nanos) {
        if self.stopped.is_some() {
            return;
        }
        let max_events = self.limits.max_events.unwrap_or(u64::MAX);
        while let Some((at, kind)) = self.queue.pop_before(until) {
            if at >= self.metrics.next_boundary {
                self.close_intervals(at);
                if self.stopped.is_some() {
                    return;
                }
            }
            self.now = at;
            if self.events >= max_events {
                self.stop(StopReason::Events { limit: max_events });
                return;
            }
            self.events += 1;
            self.handle(kind);
            if self.events % MEMORY_CHECK_EVERY == 0 && self.check_memory() {
                return;
            }
        }
        self.close_intervals(until);
        if self.stopped.is_some() {
            return;
        }
        if until > self.now {
            self.now = until;
        }
    }

    /// Run to `until` and return the result.
    pub fn run(mut self, until: Nanos) -> SimResult {
        self.advance(until);
        self.result()
    }

    /// Schedule an event at `at`. `fixed`: its delay from now is one that recurs (a
    /// configured timeout or constant duration), which lets the queue keep it in a lane.
    fn schedule(&mut self, at: Nanos, kind: Kind, fixed: bool) {
        self.queue.push(self.now, at, kind, fixed);
    }

    fn token(&mut self) -> u32 {
        self.next_token = self.next_token.wrapping_add(1);
        self.next_token
    }

    fn schedule_arrivals(&mut self) {
        let start = self.topo.start;
        for i in 0..self.topo.entries.len() {
            match self.topo.entries[i].arrivals {
                Arrivals::Poisson { rate } => {
                    if rate > 0.0 {
                        let gap = self.entry_rngs[i].exp(1e9 / rate);
                        let at = start.saturating_add(Nanos::new(gap as u64));
                        self.schedule(at, Kind::Arrive(i as u32), false);
                    }
                }
                Arrivals::Burst { at, count } => {
                    if count > 0 && at >= start {
                        self.schedule(at, Kind::Burst(i as u32), false);
                    }
                }
                Arrivals::Periodic {
                    agents,
                    period,
                    offsets,
                    ..
                } => {
                    let p = period.as_u64().max(1);
                    for a in 0..agents {
                        let off = match offsets {
                            Offsets::Aligned => 0,
                            Offsets::Stable => crate::guards::stable_offset(a, period).as_u64(),
                        };
                        // First time >= start that is `off` past a multiple of the period.
                        let base = (start.as_u64() / p * p).saturating_add(off);
                        let first = if base < start.as_u64() {
                            base.saturating_add(p)
                        } else {
                            base
                        };
                        self.schedule(Nanos::new(first), Kind::Periodic(i as u32, a), false);
                    }
                }
            }
        }
    }

    fn handle(&mut self, kind: Kind) {
        match kind {
            Kind::Arrive(e) => {
                let e = e as usize;
                self.spawn_root(e);
                if let Arrivals::Poisson { rate } = self.topo.entries[e].arrivals {
                    let gap = self.entry_rngs[e].exp(1e9 / rate);
                    let at = self.now.saturating_add(Nanos::new(gap as u64));
                    self.schedule(at, Kind::Arrive(e as u32), false);
                }
            }
            Kind::Burst(e) => {
                if let Arrivals::Burst { count, .. } = self.topo.entries[e as usize].arrivals {
                    for _ in 0..count {
                        self.spawn_root(e as usize);
                    }
                }
            }
            Kind::Periodic(e, a) => {
                if let Arrivals::Periodic { batch, period, .. } =
                    self.topo.entries[e as usize].arrivals
                {
                    for _ in 0..batch {
                        self.spawn_root(e as usize);
                    }
                    let at = self.now.saturating_add(period);
                    self.schedule(at, Kind::Periodic(e, a), true);
                }
            }
            Kind::Work(r, tok) => {
                if self.calls.get(r).is_some_and(|c| c.token == tok) {
                    self.work_done(r);
                }
            }
            Kind::Cut(r, tok) => {
                if self.calls.get(r).is_some_and(|c| c.token == tok) {
                    self.work_cut(r);
                }
            }
            Kind::Timeout(r, tok) => self.on_timeout(r, tok),
            Kind::Backoff(r, tok) => {
                if self.calls.get(r).is_some_and(|c| c.token == tok) {
                    self.attempt(r, false);
                }
            }
            Kind::Hedge(r, tok) => self.on_hedge_timer(r, tok),
            Kind::Action(i) => {
                if let Some(ev) = self.topo.events.get(i as usize).copied() {
                    self.apply_action(ev.action);
                }
            }
            Kind::FleetSync(svc, inst) => self.fleet_sync(svc as usize, inst as usize),
            Kind::LbJoin(svc, n) => self.lb_join(svc as usize, n),
        }
    }

    fn apply_action(&mut self, action: Action) {
        match action {
            Action::Scale {
                service,
                instances,
                lb_delay,
            } => self.scale(service, instances, lb_delay),
            Action::Shed { service, max_queue } => {
                let s = &mut self.svcs[service];
                s.shed = Some(max_queue);
                for i in &mut s.instances {
                    i.shed = Some(max_queue);
                }
            }
            Action::Flush { service } => self.flush(service),
        }
    }

    /// Scale `svc` to `n` instances. Started instances run (and join the fleet) at once;
    /// the load balancer sends them calls after `lb_delay` (removed ones get none from now).
    fn scale(&mut self, svc: usize, n: u32, lb_delay: Nanos) {
        let have = self.svcs[svc].instances.len() as u32;
        for _ in have..n {
            // Validated at construction: building the same instance again cannot fail.
            if let Ok(mut inst) = build_instance(&self.topo, svc) {
                inst.shed = self.svcs[svc].shed;
                self.svcs[svc].instances.push(inst);
            }
        }
        let s = &mut self.svcs[svc];
        let was: Vec<u32> = std::mem::take(&mut s.active);
        for (i, inst) in s.instances.iter_mut().enumerate() {
            inst.active = (i as u32) < n;
            let routed = lb_delay.is_zero() || was.contains(&(i as u32));
            if inst.active && routed {
                s.active.push(i as u32);
            }
        }
        if !lb_delay.is_zero() {
            let at = self.now.saturating_add(lb_delay);
            self.schedule(at, Kind::LbJoin(svc as u32, n), false);
        }
        if self.fleets.get(svc).is_some_and(Option::is_some) {
            for i in 0..self.svcs[svc].instances.len() {
                if self.svcs[svc].instances[i].active {
                    self.fleet_join(svc, i);
                } else {
                    self.fleet_removed(svc, i);
                }
            }
        }
    }

    /// The load balancer sends calls to the instances of `svc` below `n` that run.
    fn lb_join(&mut self, svc: usize, n: u32) {
        let s = &mut self.svcs[svc];
        s.active = s
            .instances
            .iter()
            .enumerate()
            .filter(|(i, inst)| inst.active && (*i as u32) < n)
            .map(|(i, _)| i as u32)
            .collect();
    }

    /// Pick an active instance of `svc` for a new call.
    fn pick_instance(&mut self, svc: usize) -> u32 {
        let balance = self.topo.services[svc].balance;
        let s = &mut self.svcs[svc];
        let n = s.active.len() as u64;
        if n <= 1 {
            return s.active.first().copied().unwrap_or(0);
        }
        let k = match balance {
            Balance::Random => self.lb_rng.below(n),
            Balance::RoundRobin => {
                s.rr = s.rr.wrapping_add(1);
                s.rr % n
            }
        };
        s.active.get(k as usize).copied().unwrap_or(0)
    }

    fn busy_change(&mut self, svc: usize, up: bool) {
        let now = self.now;
        self.svcs[svc].busy.change(now, up);
    }

    /// A call entered (`up`) or left an instance of `svc`.
    fn inside_change(&mut self, svc: usize, up: bool) {
        let now = self.now;
        self.svcs[svc].inside.change(now, up);
    }

    /// Close every interval that ends at or before `t` (checking the memory limit as the
    /// history grows).
    fn close_intervals(&mut self, t: Nanos) {
        while self.metrics.next_boundary <= t {
            if self.metrics.rows % ROWS_CHECK_EVERY == 0 && self.check_memory() {
                return;
            }
            let b = self.metrics.next_boundary;
            self.now = self.now.max(b);
            let iv = self.metrics.interval.as_u64().max(1) as f64;
            let mut sg = Vec::with_capacity(self.svcs.len());
            for s in &mut self.svcs {
                let busy = s.busy.close(b, iv);
                let inside_avg = s.inside.close(b, iv);
                sg.push(ServiceGauges {
                    inside_avg,
                    queue: s.instances.iter().map(|i| u64::from(i.queued)).sum(),
                    busy_now: s.busy.total,
                    wait_sum: std::mem::take(&mut s.wait_sum),
                    wait_max: std::mem::take(&mut s.wait_max),
                    inside: s.instances.iter().map(|i| u64::from(i.inside)).sum(),
                    busy,
                    instances: s.active.len() as u64,
                });
            }
            let mut eg = vec![EdgeGauges::default(); self.topo.edges.len()];
            for (e, g) in eg.iter_mut().enumerate() {
                let from = self.topo.edges[e].from;
                if let Some(l) = self.topo.edges[e].policy.limiter {
                    let limits: Vec<f64> = self.svcs[from]
                        .instances
                        .iter()
                        .filter(|i| i.active)
                        .filter_map(|i| i.limiters.get(l).map(|g| g.limit() as f64))
                        .collect();
                    if !limits.is_empty() {
                        g.limit = limits.iter().sum::<f64>() / limits.len() as f64;
                    }
                }
                for inst in &self.svcs[from].instances {
                    if let Some(Some(b)) = inst.breakers.get(e) {
                        match b.state(t) {
                            crate::guards::circuit_breaker::State::Open => g.open += 1,
                            crate::guards::circuit_breaker::State::HalfOpen => g.half_open += 1,
                            crate::guards::circuit_breaker::State::Closed => {}
                        }
                    }
                }
            }
            self.metrics.close(&sg, &eg);
            self.fleet_close();
        }
    }

    /// The result so far.
    pub fn result(&self) -> SimResult {
        let m = &self.metrics;
        let mut columns = Vec::new();
        for (i, e) in self.topo.entries.iter().enumerate() {
            push_counters(
                &mut columns,
                &format!("entry.{}", e.name),
                &m.hist_entry[i],
                |c| c.fields(),
            );
        }
        for (i, e) in self.topo.edges.iter().enumerate() {
            let p = format!("edge.{}", e.name);
            push_counters(&mut columns, &p, &m.hist_edge[i], |c| c.fields());
            for (k, (name, _)) in LATENCY_QUANTILES.iter().enumerate() {
                columns.push(Column {
                    name: format!("{p}.{name}"),
                    values: m.hist_edge_latency[i].iter().map(|q| q[k]).collect(),
                });
            }
            let g = &m.hist_edge_gauges[i];
            if e.policy.limiter.is_some() || g.iter().any(|g| g.limit > 0.0) {
                columns.push(Column {
                    name: format!("{p}.limiter_limit"),
                    values: g.iter().map(|g| g.limit).collect(),
                });
            }
            // A breaker switched on (or off) during the run still shows its states.
            if e.policy.breaker.is_some() || g.iter().any(|g| g.open + g.half_open > 0) {
                columns.push(Column {
                    name: format!("{p}.breakers_open"),
                    values: g.iter().map(|g| g.open as f64).collect(),
                });
                columns.push(Column {
                    name: format!("{p}.breakers_half_open"),
                    values: g.iter().map(|g| g.half_open as f64).collect(),
                });
            }
        }
        for (i, s) in self.topo.services.iter().enumerate() {
            if s.client {
                continue;
            }
            let p = format!("svc.{}", s.name);
            push_counters(&mut columns, &p, &m.hist_svc[i], |c| c.fields());
            let g = &m.hist_svc_gauges[i];
            let gauge = |f: fn(&ServiceGauges) -> f64| g.iter().map(f).collect::<Vec<f64>>();
            columns.push(Column {
                name: format!("{p}.queue"),
                values: gauge(|g| g.queue as f64),
            });
            columns.push(Column {
                name: format!("{p}.inside"),
                values: gauge(|g| g.inside as f64),
            });
            columns.push(Column {
                name: format!("{p}.inside_avg"),
                values: gauge(|g| g.inside_avg),
            });
            columns.push(Column {
                name: format!("{p}.busy"),
                values: gauge(|g| g.busy),
            });
            columns.push(Column {
                name: format!("{p}.busy_now"),
                values: gauge(|g| g.busy_now as f64),
            });
            columns.push(Column {
                name: format!("{p}.instances"),
                values: gauge(|g| g.instances as f64),
            });
            let started = &m.hist_svc[i];
            columns.push(Column {
                name: format!("{p}.wait_mean_ms"),
                values: g
                    .iter()
                    .zip(started)
                    .map(|(g, c)| {
                        if c.started == 0 {
                            0.0
                        } else {
                            g.wait_sum as f64 / c.started as f64 / 1e6
                        }
                    })
                    .collect(),
            });
            columns.push(Column {
                name: format!("{p}.wait_max_ms"),
                values: gauge(|g| g.wait_max as f64 / 1e6),
            });
        }
        self.fleet_columns(&mut columns);
        let latencies = self
            .topo
            .edges
            .iter()
            .zip(&self.edges)
            .filter(|(spec, _)| spec.record_latency)
            .map(|(spec, st)| LatencySamples {
                edge: spec.name.clone(),
                calls: st.latencies.clone(),
                attempts: st.attempt_latencies.clone(),
            })
            .collect();
        let mut r = SimResult {
            setting: self.label.clone(),
            seed: self.seed,
            start: self.topo.start,
            interval: self.topo.interval,
            columns,
            latencies,
            summary: Vec::new(),
            stats: RunStats {
                events: self.events,
                peak_calls: self.calls.peak(),
                live_calls: self.calls.live(),
            },
            stopped: self.stopped,
            traces: self
                .tracer
                .as_ref()
                .map(|t| t.traces.clone())
                .unwrap_or_default(),
        };
        r.summary = crate::summary::summary(&r, &self.topo);
        if let Some(f) = self.fleet_summary() {
            r.summary.push(("fleet".into(), f));
        }
        r
    }
}

fn push_counters<T>(
    out: &mut Vec<Column>,
    prefix: &str,
    hist: &[T],
    fields: impl Fn(&T) -> Vec<(&'static str, u64)>,
) {
    let names: Vec<&'static str> = match hist.first() {
        Some(h) => fields(h).into_iter().map(|(n, _)| n).collect(),
        None => return,
    };
    let mut cols: Vec<Vec<f64>> = vec![Vec::with_capacity(hist.len()); names.len()];
    for h in hist {
        for (col, (_, v)) in cols.iter_mut().zip(fields(h)) {
            col.push(v as f64);
        }
    }
    for (n, values) in names.into_iter().zip(cols) {
        out.push(Column {
            name: format!("{prefix}.{n}"),
            values,
        });
    }
}

/// Build one instance of service `svc` with fresh guards.
fn build_instance(t: &Topology, svc: usize) -> Result<Instance, SimError> {
    let s = &t.services[svc];
    let place = format!("service {}", s.name);
    let door = match &s.admission {
        Some(a) => Some(Door::new(a, &place)?),
        None => None,
    };
    let budgets = s
        .budgets
        .iter()
        .map(|b| Budget::new(b, &place))
        .collect::<Result<Vec<_>, _>>()?;
    let gates = s
        .bulkheads
        .iter()
        .map(|b| Gate::new(b, &place))
        .collect::<Result<Vec<_>, _>>()?;
    let limiters = s
        .limiters
        .iter()
        .map(|l| LimiterGate::new(l, &place))
        .collect::<Result<Vec<_>, _>>()?;
    let mut breakers = Vec::with_capacity(t.edges.len());
    let mut hedgers = Vec::with_capacity(t.edges.len());
    for e in &t.edges {
        let place = format!("edge {}", e.name);
        let mine = e.from == svc;
        breakers.push(match (&e.policy.breaker, mine) {
            (Some(b), true) => Some(Breaker::new(b, &place)?),
            _ => None,
        });
        hedgers.push(match (&e.policy.hedge, mine) {
            (Some(h), true) => Some(Hedger::new(h, &place)?),
            _ => None,
        });
    }
    Ok(Instance {
        active: true,
        servers: if s.client { u32::MAX } else { s.servers },
        busy: 0,
        queue: WaitQueue::new(s.queue.discipline.as_ref(), &place)?,
        queued: 0,
        inside: 0,
        shed: None,
        door,
        budgets,
        gates,
        limiters,
        breaker_epochs: vec![0; breakers.len()],
        breakers,
        hedgers,
        door_epoch: 0,
        gates_epoch: 0,
        limiters_epoch: 0,
        dispatching: false,
    })
}

/// The largest Poisson arrival rate accepted (per second).
const MAX_RATE: f64 = 1e8;

/// Check every index and number in a topology.
fn validate(t: &Topology) -> Result<(), SimError> {
    if t.interval < MIN_INTERVAL {
        return Err(SimError::topology(format!(
            "interval must be at least {} ms (got {} ns)",
            MIN_INTERVAL.as_u64() / 1_000_000,
            t.interval.as_u64()
        )));
    }
    let max = call::MAX_INDEX;
    if t.services.len() > max || t.edges.len() > max || t.entries.len() > max {
        return Err(SimError::topology(format!(
            "too many services, edges or entries (at most {max} each)"
        )));
    }
    for (si, s) in t.services.iter().enumerate() {
        if s.instances == 0 {
            return Err(SimError::topology(format!(
                "service {}: no instances",
                s.name
            )));
        }
        if !s.client && s.servers == 0 {
            return Err(SimError::topology(format!(
                "service {}: no servers",
                s.name
            )));
        }
        if s.ops.len() > max || s.ops.iter().any(|o| o.steps.len() > max) {
            return Err(SimError::topology(format!(
                "service {}: more than {max} operations or steps in one operation",
                s.name
            )));
        }
        if s.ops.is_empty() {
            return Err(SimError::topology(format!(
                "service {}: no operations",
                s.name
            )));
        }
        for sl in &s.slowdowns {
            if !(sl.factor.is_finite() && sl.factor >= 0.0) {
                return Err(SimError::topology(format!(
                    "service {}: slowdown factor must be finite and >= 0",
                    s.name
                )));
            }
        }
        for op in &s.ops {
            for st in &op.steps {
                match st {
                    Step::Call(e) => {
                        let edge = t.edges.get(*e).ok_or_else(|| {
                            SimError::topology(format!("{}.{}: no edge {e}", s.name, op.name))
                        })?;
                        if edge.from != si {
                            return Err(SimError::topology(format!(
                                "{}.{}: edge {} does not leave {}",
                                s.name, op.name, edge.name, s.name
                            )));
                        }
                    }
                    Step::Work(w) => check_dist(&w.time, &format!("{}.{}", s.name, op.name))?,
                }
            }
        }
    }
    for e in &t.edges {
        let to = t
            .services
            .get(e.to)
            .ok_or_else(|| SimError::topology(format!("edge {}: no service {}", e.name, e.to)))?;
        if t.services.get(e.from).is_none() {
            return Err(SimError::topology(format!(
                "edge {}: no service {}",
                e.name, e.from
            )));
        }
        if to.client {
            return Err(SimError::topology(format!(
                "edge {}: calls a client",
                e.name
            )));
        }
        if e.op >= to.ops.len() {
            return Err(SimError::topology(format!(
                "edge {}: no operation {}",
                e.name, e.op
            )));
        }
        let from = &t.services[e.from];
        if let Some(timeout) = e.policy.attempt_timeout {
            guards_core::deadline::DeadlineConfig {
                attempt_timeout: timeout,
                margin: e.policy.margin,
            }
            .validate()
            .map_err(|err| SimError::guard(format!("edge {}: deadline", e.name), err))?;
        }
        if let Some(l) = e.policy.limiter {
            if l >= from.limiters.len() {
                return Err(SimError::topology(format!(
                    "edge {}: no limiter {l}",
                    e.name
                )));
            }
        }
        if let Some(b) = e.policy.budget {
            if b >= from.budgets.len() {
                return Err(SimError::topology(format!(
                    "edge {}: no budget {b}",
                    e.name
                )));
            }
        }
        if let Some(b) = e.policy.bulkhead {
            if b >= from.bulkheads.len() {
                return Err(SimError::topology(format!(
                    "edge {}: no bulkhead {b}",
                    e.name
                )));
            }
        }
    }
    for s in &t.services {
        if let Some(f) = &s.fleet {
            validate_fleet(s, f)?;
        }
    }
    // Calls are delivered at once, by direct calls: a cycle of services calling each
    // other would nest without bound.
    let mut state = vec![0u8; t.services.len()]; // 0 new, 1 on the path, 2 done
    for v in 0..t.services.len() {
        if state[v] == 0 {
            visit(t, v, &mut state)?;
        }
    }
    for en in &t.entries {
        let s = t
            .services
            .get(en.service)
            .ok_or_else(|| SimError::topology(format!("entry {}: no service", en.name)))?;
        if !s.client {
            return Err(SimError::topology(format!(
                "entry {}: service {} is not a client",
                en.name, s.name
            )));
        }
        if en.op >= s.ops.len() {
            return Err(SimError::topology(format!(
                "entry {}: no operation {}",
                en.name, en.op
            )));
        }
        match en.arrivals {
            Arrivals::Poisson { rate } => {
                if !(rate.is_finite() && (0.0..=MAX_RATE).contains(&rate)) {
                    return Err(SimError::topology(format!(
                        "entry {}: rate must be in 0..=1e8 per second",
                        en.name
                    )));
                }
            }
            Arrivals::Periodic { period, .. } => {
                if period.is_zero() {
                    return Err(SimError::topology(format!(
                        "entry {}: period must be positive",
                        en.name
                    )));
                }
            }
            Arrivals::Burst { .. } => {}
        }
    }
    for ev in &t.events {
        let svc = match ev.action {
            Action::Scale {
                service, instances, ..
            } => {
                if instances == 0 {
                    return Err(SimError::topology("scale to zero instances"));
                }
                service
            }
            Action::Shed { service, .. } | Action::Flush { service } => service,
        };
        if svc >= t.services.len() || t.services[svc].client {
            return Err(SimError::topology(format!("timed action on service {svc}")));
        }
    }
    Ok(())
}

/// Check a service's fleet: the agent's ranges for the interval and the TTL, guards that
/// exist (a budget must be a token bucket), allowances core's resizes accept.
fn validate_fleet(
    s: &crate::topology::ServiceSpec,
    f: &crate::topology::FleetSpec,
) -> Result<(), SimError> {
    use crate::topology::{FleetGuard, FleetSpec};
    use guards_core::retry_budget::RetryBudgetConfig;
    let bad = |what: String| {
        Err(SimError::topology(format!(
            "service {}: fleet {what}",
            s.name
        )))
    };
    if s.client {
        return bad("on a client".into());
    }
    let (lo, hi) = FleetSpec::SYNC_INTERVAL_RANGE;
    if f.sync_interval < lo || f.sync_interval > hi {
        return bad("sync_interval must be in 10ms..=60s".into());
    }
    let ttl = f.ttl();
    if ttl.as_u64() < f.sync_interval.as_u64().saturating_mul(2) || ttl > Nanos::from_secs(600) {
        return bad("ttl must be in 2 x sync_interval..=600s".into());
    }
    for (i, a) in f.allowances.iter().enumerate() {
        if f.allowances[..i].iter().any(|b| b.name == a.name) {
            return bad(format!("allowance {} named twice", a.name));
        }
        match a.guard {
            FleetGuard::Bulkhead(g) => {
                if g >= s.bulkheads.len() {
                    return bad(format!("allowance {}: no bulkhead {g}", a.name));
                }
                if a.allowance
                    .is_some_and(|x| x > guards_core::bulkhead::MAX_CONCURRENT_LIMIT)
                {
                    return bad(format!("allowance {}: at most 4294967295 calls", a.name));
                }
            }
            FleetGuard::Budget(b) => {
                match s.budgets.get(b) {
                    Some(RetryBudgetConfig::TokenBucket(_)) => {}
                    Some(_) => {
                        return bad(format!(
                            "allowance {}: budget {b} is not a token bucket",
                            a.name
                        ))
                    }
                    None => return bad(format!("allowance {}: no budget {b}", a.name)),
                }
                if a.allowance.is_some_and(|x| x > 1_000_000_000) {
                    return bad(format!("allowance {}: at most 1e9 tokens", a.name));
                }
            }
        }
    }
    Ok(())
}

/// Depth-first search for a cycle of calls through service `v`.
fn visit(t: &Topology, v: usize, state: &mut [u8]) -> Result<(), SimError> {
    state[v] = 1;
    for e in t.edges.iter().filter(|e| e.from == v) {
        match state[e.to] {
            1 => {
                return Err(SimError::topology(format!(
                    "edge {} closes a cycle of calls back to service {}",
                    e.name, t.services[e.to].name
                )))
            }
            0 => visit(t, e.to, state)?,
            _ => {}
        }
    }
    state[v] = 2;
    Ok(())
}

fn check_dist(d: &crate::topology::Dist, place: &str) -> Result<(), SimError> {
    if let crate::topology::Dist::Bernoulli { p, .. } = d {
        if !(0.0..=1.0).contains(p) {
            return Err(SimError::topology(format!(
                "{place}: probability must be in 0..=1"
            )));
        }
    }
    if let crate::topology::Dist::Uniform(lo, hi) = d {
        if lo > hi {
            return Err(SimError::topology(format!("{place}: uniform lo > hi")));
        }
    }
    Ok(())
}
