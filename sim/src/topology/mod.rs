//! A system described as data: services, their pools and queues, the operations they
//! run, the call edges between them with their per-edge policies, the open-loop callers
//! that drive them, and timed operator actions.
//!
//! Nothing here runs anything. [`crate::Sim::new`] checks a [`Topology`] and turns it into
//! a running model. The Basketly presets ([`crate::basketly`]) are one such description;
//! the Python layer can build any other.
//!
//! The guards are guards-core's own configs, not a second vocabulary: an edge's retry
//! policy is a `RetryPolicyConfig`, its breaker a `CircuitBreakerConfig`, a service's
//! admission door an `AdmissionConfig` (with an optional adaptive limit), and so on. As
//! JSON ([`json`]) they have the field names, units, defaults and validation of the Python
//! API, read and written through guards-ffi's schemas ([`configs`]), with durations as
//! `"40ms"` or seconds ([`units`]).
//!
//! Conventions: every duration and instant is a [`Nanos`]. Instants are times of day in
//! virtual time (nanoseconds since midnight), so `20:00:00` is `Nanos::from_secs(72_000)`
//! and clock labels in the output need no separate epoch. Identifiers are indices into the
//! topology's vectors.

use guards_core::admission::AdmissionConfig;
use guards_core::bulkhead::BulkheadConfig;
use guards_core::circuit_breaker::CircuitBreakerConfig;
use guards_core::hedging::HedgingConfig;
use guards_core::limiter::LimiterConfig;
use guards_core::queue_discipline::QueueDisciplineConfig;
use guards_core::retry_budget::RetryBudgetConfig;
use guards_core::retry_policy::{Idempotency, RetryPolicyConfig};
use guards_core::{Nanos, Priority};
use serde::{Deserialize, Serialize};

pub mod configs;
pub mod json;
pub mod units;

/// Index of a service in [`Topology::services`].
pub type ServiceId = usize;
/// Index of an operation in [`ServiceSpec::ops`].
pub type OpId = usize;
/// Index of an edge in [`Topology::edges`].
pub type EdgeId = usize;

/// The whole system to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    /// Virtual time at which the run starts (and the first interval begins).
    pub start: Nanos,
    /// Length of one output interval (the Basketly tables use 1 s).
    pub interval: Nanos,
    /// Services, including the caller pseudo-services ([`ServiceSpec::client`]).
    pub services: Vec<ServiceSpec>,
    /// Call edges with their policies.
    pub edges: Vec<EdgeSpec>,
    /// Open-loop request types (one arrival stream each).
    pub entries: Vec<EntrySpec>,
    /// Timed operator actions (scale, shed, flush).
    pub events: Vec<TimedEvent>,
}

/// One tier: `instances` copies, each with `servers` threads (or workers, or connections)
/// and one wait queue in front of them.
///
/// The guards of a service are guards-core's own configs: `admission` is an
/// [`AdmissionConfig`], the queue's `discipline` a [`QueueDisciplineConfig`], each retry
/// budget a [`RetryBudgetConfig`], each bulkhead a [`BulkheadConfig`] and each limiter a
/// [`LimiterConfig`] (as JSON: the Python API's field names, see [`configs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceSpec {
    /// Name used in output columns (`svc.<name>.<metric>`).
    pub name: String,
    /// Number of instances at the start of the run.
    pub instances: u32,
    /// Servers per instance: a call holds one for its whole operation, downstream waits,
    /// retries and backoff included.
    pub servers: u32,
    /// An open-loop caller: unlimited servers, no queue, never overloaded.
    pub client: bool,
    /// The wait queue in front of the servers.
    pub queue: QueueSpec,
    /// Refuse calls at the door by priority (admission control, fixed per-priority limits
    /// and optionally an adaptive limit), if set.
    pub admission: Option<AdmissionConfig>,
    /// Work steps stop at the call's deadline (a statement timeout) and fail.
    pub enforce_deadline: bool,
    /// Periods during which every work duration drawn is multiplied.
    pub slowdowns: Vec<Slowdown>,
    /// Periods during which the service is down: every call arriving is answered with an
    /// ordinary error at once.
    pub outages: Vec<Outage>,
    /// Retry budgets, one per instance each, shared by the edges that name them.
    pub budgets: Vec<RetryBudgetConfig>,
    /// Bulkheads (fixed concurrency caps), one per instance each, shared by the edges that
    /// name them.
    pub bulkheads: Vec<BulkheadConfig>,
    /// Limiters (a fixed or adaptive concurrency limit: AIMD, Vegas, Gradient2), one per
    /// instance each, shared by the edges that name them: where a bulkhead caps calls at a
    /// fixed number, a limiter can adapt it.
    pub limiters: Vec<LimiterConfig>,
    /// How callers spread calls over this service's instances.
    pub balance: Balance,
    /// Fleet guards: the instances share fleet-wide allowances of their bulkheads or
    /// token budgets, sized by guards-core's fleet arithmetic ([`FleetSpec`]), or only
    /// measured fleet-wide.
    pub fleet: Option<FleetSpec>,
    /// The operations this service runs.
    pub ops: Vec<OpSpec>,
}

impl ServiceSpec {
    /// A service with `instances` × `servers`, FIFO queue, no guards, and `ops`.
    pub fn new(name: &str, instances: u32, servers: u32, ops: Vec<OpSpec>) -> ServiceSpec {
        ServiceSpec {
            name: name.into(),
            instances,
            servers,
            client: false,
            queue: QueueSpec::default(),
            admission: None,
            enforce_deadline: false,
            slowdowns: Vec::new(),
            outages: Vec::new(),
            budgets: Vec::new(),
            bulkheads: Vec::new(),
            limiters: Vec::new(),
            balance: Balance::Random,
            fleet: None,
            ops,
        }
    }
}

/// Fleet guards on one service, modelled on the fleet agent: every instance is a member
/// that, at its own sync events (every `sync_interval`, each at its own phase), reads the
/// records the members last wrote (a record lives `ttl` after its write), decides each
/// allowance's share with `guards_core::fleet::decide` (shrink at once, grow only into
/// the room the view leaves free) and writes its record (`held = max(cap, in_flight)`).
/// The store is atomic and has no latency, so a claim never loses a race. Instances that
/// run from the start begin at their fair share; an instance added later joins with a
/// share of 0 and grows. A removed instance shrinks to 0 and leaves once drained.
///
/// As JSON: `{"sync_interval": "250ms", "ttl": "750ms", "allowances": [{"name":
/// "stock", "guard": {"bulkhead": 0}, "allowance": 48}]}` (`ttl` defaults to 3 × the
/// interval; an allowance `null` only measures).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetSpec {
    /// How often each member syncs (10 ms..=60 s, like the agent's).
    #[serde(default = "default_sync_interval", with = "units::duration")]
    pub sync_interval: Nanos,
    /// How long a record lives after its write (`None`: 3 × the interval); at least 2 ×
    /// the interval, like the agent's.
    #[serde(default, with = "units::opt_duration")]
    pub ttl: Option<Nanos>,
    /// The shared allowances.
    #[serde(default)]
    pub allowances: Vec<FleetAllowance>,
}

fn default_sync_interval() -> Nanos {
    FleetSpec::DEFAULT_SYNC_INTERVAL
}

impl FleetSpec {
    /// The agent's default sync interval, 250 ms.
    pub const DEFAULT_SYNC_INTERVAL: Nanos = Nanos::from_millis(250);
    /// The shortest and longest sync interval accepted.
    pub const SYNC_INTERVAL_RANGE: (Nanos, Nanos) = (Nanos::from_millis(10), Nanos::from_secs(60));

    /// The TTL in force: `ttl`, or 3 × the interval.
    pub fn ttl(&self) -> Nanos {
        self.ttl
            .unwrap_or(Nanos::new(self.sync_interval.as_u64().saturating_mul(3)))
    }

    /// Whether any allowance is enforced (not only measured).
    pub fn enforces(&self) -> bool {
        self.allowances.iter().any(|a| a.allowance.is_some())
    }
}

/// One fleet-wide allowance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetAllowance {
    /// Name used in output columns (`fleet.<service>.<name>.*`) and the summary.
    pub name: String,
    /// The per-instance guard whose cap is the member's share.
    pub guard: FleetGuard,
    /// The fleet-wide allowance: a bulkhead's calls in flight, a token bucket's burst in
    /// whole tokens (`None`: the guards keep their own caps and are only measured).
    #[serde(default)]
    pub allowance: Option<u64>,
}

/// The guard an allowance resizes: an index into the service's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FleetGuard {
    /// [`ServiceSpec::bulkheads`]`[i]`, resized with `Bulkhead::set_max_concurrent`.
    Bulkhead(usize),
    /// [`ServiceSpec::budgets`]`[i]`, a token bucket resized with
    /// `TokenBudget::set_capacity`.
    Budget(usize),
}

/// How a caller picks one instance of the callee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Balance {
    /// Uniformly at random among the active instances.
    #[default]
    Random,
    /// In turn over the active instances.
    RoundRobin,
}

/// The wait queue in front of a service's servers.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueSpec {
    /// Drop a call whose deadline has passed when it reaches the front, without running it.
    pub deadline_check: bool,
    /// Use guards-core's queue discipline (CoDel age limit, adaptive LIFO, priority, a
    /// capacity beyond which arrivals are refused) instead of a plain unbounded FIFO.
    #[serde(with = "configs::opt")]
    pub discipline: Option<QueueDisciplineConfig>,
}

/// Multiply work durations that start inside `[start, end)` by `factor`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slowdown {
    /// First instant of the slow period.
    #[serde(with = "units::instant")]
    pub start: Nanos,
    /// First instant after it.
    #[serde(with = "units::instant")]
    pub end: Nanos,
    /// Factor applied to every duration drawn in the period.
    pub factor: f64,
}

/// A period `[start, end)` during which a service is down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    /// First instant of the outage.
    #[serde(with = "units::instant")]
    pub start: Nanos,
    /// First instant after it.
    #[serde(with = "units::instant")]
    pub end: Nanos,
}

/// An operation: steps run in order while the call holds one server.
#[derive(Debug, Clone, PartialEq)]
pub struct OpSpec {
    /// Name used in output columns.
    pub name: String,
    /// The steps.
    pub steps: Vec<Step>,
}

/// One step of an operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Hold the server for a drawn duration.
    Work(WorkSpec),
    /// Call another service over an edge (with its retries, timeouts and guards).
    Call(EdgeId),
}

/// Work done while holding a server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkSpec {
    /// How long it takes (before any slowdown).
    pub time: Dist,
    /// The work commits a side effect when it completes (a write); completions are
    /// counted per root action to find duplicate commits.
    pub commit: bool,
}

/// A distribution of durations. As JSON: `{"const": "4ms"}`, `{"exp": "4ms"}`,
/// `{"uniform": ["1ms", "3ms"]}`, `{"bernoulli": {"p": 0.01, "value": "250ms"}}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Dist {
    /// Always this long.
    Const(#[serde(with = "units::duration")] Nanos),
    /// Exponential with this mean.
    Exp(#[serde(with = "units::duration")] Nanos),
    /// Uniform on `[lo, hi)`.
    Uniform(
        #[serde(with = "units::duration")] Nanos,
        #[serde(with = "units::duration")] Nanos,
    ),
    /// `value` with probability `p`, otherwise zero (e.g. a 1 % stall of 250 ms).
    Bernoulli {
        /// Probability of the non-zero value.
        p: f64,
        /// The value.
        #[serde(with = "units::duration")]
        value: Nanos,
    },
}

/// A call edge: service `from` calls operation `op` of service `to` with `policy`.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeSpec {
    /// Name used in output columns (`edge.<name>.<metric>`).
    pub name: String,
    /// Calling service.
    pub from: ServiceId,
    /// Called service.
    pub to: ServiceId,
    /// Called operation of `to`.
    pub op: OpId,
    /// Priority of the calls made (`None`: inherit the caller's).
    pub priority: Option<Priority>,
    /// The call's result is optional: when the call fails for good, the brownout serves the
    /// caller's operation without it (a degraded answer) instead of failing it (guards-core's
    /// `BrownoutConfig::optional`).
    pub optional: bool,
    /// Keep every successful call's latency for the summary percentiles.
    pub record_latency: bool,
    /// Timeouts, retries, deadlines, cancellation and guards.
    pub policy: CallPolicy,
}

/// Which deadline a caller sends with each attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadlineMode {
    /// None: the callee does not know when the caller gives up.
    #[default]
    None,
    /// This attempt's own: `min(attempt timeout, time left) − margin`.
    Attempt,
    /// The whole time left on the caller's request, ignoring the attempt timeout.
    #[serde(rename = "whole")]
    WholeLeft,
}

/// What a caller does on one edge.
///
/// The guards are guards-core's own configs, with the Python API's field names in JSON
/// (see [`configs`]): `retry` a [`RetryPolicyConfig`] (with its `backoff`), `breaker` a
/// [`CircuitBreakerConfig`], `hedge` a [`HedgingConfig`]; `attempt_timeout` and `margin`
/// are those of a `DeadlineConfig`. `budget`, `bulkhead` and `limiter` are indices into
/// the calling service's lists.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CallPolicy {
    /// When and how often to retry (`None`: one attempt, never retried).
    #[serde(with = "configs::opt")]
    pub retry: Option<RetryPolicyConfig>,
    /// The caller does not know the "overloaded, don't retry" answer: it treats a 503 (or
    /// a local refusal) as one more transient error, retried if `retry_other_transient`
    /// (as the Basketly services shipped).
    pub overloaded_is_transient: bool,
    /// Per-attempt timeout (`None`: wait for the answer, bounded only by the caller's
    /// deadline).
    #[serde(with = "units::opt_duration")]
    pub attempt_timeout: Option<Nanos>,
    /// The deadline sent with each attempt.
    pub deadline: DeadlineMode,
    /// Subtracted from the attempt budget before it is sent.
    #[serde(with = "units::duration")]
    pub margin: Nanos,
    /// Cancel an abandoned attempt, so the callee stops working on it.
    pub cancel: bool,
    /// How the call is treated as a side effect (`"idempotent"`, `"keyed_side_effect"`:
    /// the callee returns the first result to a repeat, `"unkeyed_side_effect"`).
    #[serde(with = "idempotency")]
    pub idempotency: Idempotency,
    /// When this step fails for good, the caller's operation answers "overloaded, don't
    /// retry" (the one-retry-layer rule) instead of an ordinary error.
    pub give_up_as_overloaded: bool,
    /// Index into the caller's [`ServiceSpec::budgets`].
    pub budget: Option<usize>,
    /// A breaker per caller instance on this edge.
    #[serde(with = "configs::opt")]
    pub breaker: Option<CircuitBreakerConfig>,
    /// The callee's overloaded answers (503) are not breaker failures (the breaker
    /// ignores them).
    pub breaker_ignores_overloaded: bool,
    /// Index into the caller's [`ServiceSpec::bulkheads`].
    pub bulkhead: Option<usize>,
    /// Index into the caller's [`ServiceSpec::limiters`] (after the bulkhead, if both).
    pub limiter: Option<usize>,
    /// Hedge slow attempts.
    #[serde(with = "configs::opt")]
    pub hedge: Option<HedgingConfig>,
}

impl Default for CallPolicy {
    /// One attempt, no timeout, nothing else.
    fn default() -> Self {
        CallPolicy {
            retry: None,
            overloaded_is_transient: false,
            attempt_timeout: None,
            deadline: DeadlineMode::None,
            margin: Nanos::ZERO,
            cancel: false,
            idempotency: Idempotency::Idempotent,
            give_up_as_overloaded: false,
            budget: None,
            breaker: None,
            breaker_ignores_overloaded: false,
            bulkhead: None,
            limiter: None,
            hedge: None,
        }
    }
}

impl CallPolicy {
    /// Attempts including the first (1 without a retry policy).
    pub fn max_attempts(&self) -> u32 {
        self.retry.map_or(1, |r| r.max_attempts)
    }
}

/// Core's [`Idempotency`] by its name.
mod idempotency {
    use guards_core::retry_policy::Idempotency;
    use serde::{de, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(i: &Idempotency, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(i.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Idempotency, D::Error> {
        let s = String::deserialize(d)?;
        Idempotency::from_name(&s).ok_or_else(|| {
            de::Error::custom(format!(
                "{s:?} is not an idempotency; expected \"idempotent\", \"keyed_side_effect\" or \"unkeyed_side_effect\""
            ))
        })
    }
}

/// One request type: an open-loop stream of new actions, each a call of `op` on the
/// client service `service`.
#[derive(Debug, Clone, PartialEq)]
pub struct EntrySpec {
    /// Name used in output columns (`entry.<name>.<metric>`).
    pub name: String,
    /// The client service whose operation each action runs.
    pub service: ServiceId,
    /// The operation run.
    pub op: OpId,
    /// Priority of the actions.
    pub priority: Priority,
    /// When actions arrive.
    pub arrivals: Arrivals,
}

/// An arrival process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrivals {
    /// Poisson arrivals at `rate` per second from the start of the run.
    Poisson {
        /// Actions per second.
        rate: f64,
    },
    /// `count` actions at the same instant.
    Burst {
        /// When.
        at: Nanos,
        /// How many.
        count: u32,
    },
    /// `agents` periodic agents, each starting `batch` actions at once every `period`.
    Periodic {
        /// Number of agents.
        agents: u32,
        /// Actions each agent starts per period.
        batch: u32,
        /// The period.
        period: Nanos,
        /// Where in the period each agent starts.
        offsets: Offsets,
    },
}

/// Where periodic agents start within their period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Offsets {
    /// All at the start of every period.
    Aligned,
    /// Each at a stable offset: a hash of its id modulo the period.
    #[default]
    Stable,
}

/// An operator action at a fixed time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimedEvent {
    /// When.
    pub at: Nanos,
    /// What.
    pub action: Action,
}

/// Operator actions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Change a service's number of instances. New instances start empty and take only new
    /// calls; removed instances finish what they hold.
    Scale {
        /// The service.
        service: ServiceId,
        /// The new number of instances.
        instances: u32,
        /// New instances start (and join the service's fleet) at once but get calls from
        /// the load balancer only this long after (0: at once).
        lb_delay: Nanos,
    },
    /// From now on, refuse (overloaded) every call that would have to wait when the
    /// instance's queue already holds `max_queue` calls.
    Shed {
        /// The service.
        service: ServiceId,
        /// Queue length at and above which new calls are refused.
        max_queue: u32,
    },
    /// Drop every queued call at once, without an answer.
    Flush {
        /// The service.
        service: ServiceId,
    },
}

/// Times of day as [`Nanos`] since midnight.
pub mod clock {
    use guards_core::Nanos;

    /// `h:m:s` as an instant.
    pub const fn hms(h: u64, m: u64, s: u64) -> Nanos {
        Nanos::from_secs(h * 3600 + m * 60 + s)
    }

    /// Parse `HH:MM:SS` or `HH:MM:SS.fff` (fractions up to nanoseconds).
    pub fn parse(text: &str) -> Option<Nanos> {
        let (main, frac) = match text.split_once('.') {
            Some((m, f)) => (m, Some(f)),
            None => (text, None),
        };
        let mut parts = main.split(':');
        let h: u64 = parts.next()?.trim().parse().ok()?;
        let m: u64 = parts.next()?.trim().parse().ok()?;
        let s: u64 = parts.next()?.trim().parse().ok()?;
        if parts.next().is_some() || h > 47 || m > 59 || s > 59 {
            return None;
        }
        let mut ns = 0u64;
        if let Some(f) = frac {
            if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let digits: u64 = f.parse().ok()?;
            let scale = 10u64.checked_pow(9 - f.len() as u32)?;
            ns = digits.checked_mul(scale)?;
        }
        Some(Nanos::new(hms(h, m, s).as_u64().checked_add(ns)?))
    }

    /// `HH:MM:SS` of an instant (fractions dropped).
    pub fn format(t: Nanos) -> String {
        let s = t.as_u64() / 1_000_000_000;
        format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    }

    /// `HH:MM:SS.mmm` of an instant.
    pub fn format_millis(t: Nanos) -> String {
        let ms = (t.as_u64() / 1_000_000) % 1000;
        format!("{}.{:03}", format(t), ms)
    }

    /// `HH:MM:SS.uuuuuu` of an instant (microseconds).
    pub fn format_micros(t: Nanos) -> String {
        let us = (t.as_u64() / 1_000) % 1_000_000;
        format!("{}.{:06}", format(t), us)
    }
}

#[cfg(test)]
mod tests {
    use super::clock;
    use guards_core::Nanos;

    #[test]
    fn clock_round_trip() {
        let t = clock::parse("20:00:07.032").unwrap();
        assert_eq!(t, Nanos::from_millis(72_007_032));
        assert_eq!(clock::format(t), "20:00:07");
        assert_eq!(clock::format_millis(t), "20:00:07.032");
        assert_eq!(clock::parse("19:59:45"), Some(clock::hms(19, 59, 45)));
        assert_eq!(clock::parse("19:60:00"), None);
        assert_eq!(clock::parse("x"), None);
        assert_eq!(clock::parse("20:00:00."), None);
        assert_eq!(clock::parse("20:00:00.1234567890"), None);
    }
}
