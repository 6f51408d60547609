//! A system described as data: services, their pools and queues, the operations they
//! run, the call edges between them with their per-edge policies, the open-loop callers
//! that drive them, and timed operator actions.
//!
//! Nothing here runs anything. [`crate::Sim::new`] checks a [`Topology`] and turns it into
//! a running model. The Basketly presets ([`crate::basketly`]) are one such description;
//! the Python layer can build any other.
//!
//! Conventions: every duration and instant is a [`Nanos`]. Instants are times of day in
//! virtual time (nanoseconds since midnight), so `20:00:00` is `Nanos::from_secs(72_000)`
//! and clock labels in the output need no separate epoch. Identifiers are indices into the
//! topology's vectors.

use guards_core::{Nanos, Priority};

pub mod json;

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
    /// Length of one output interval (the seed's tables use 1 s).
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
    /// Refuse calls at the door by priority (admission control), if set.
    pub admission: Option<AdmissionSpec>,
    /// Work steps stop at the call's deadline (a statement timeout) and fail.
    pub enforce_deadline: bool,
    /// Periods during which every work duration drawn is multiplied.
    pub slowdowns: Vec<Slowdown>,
    /// Periods during which the service is down: every call arriving is answered with an
    /// ordinary error at once.
    pub outages: Vec<Outage>,
    /// Retry budgets, one per instance each, shared by the edges that name them.
    pub budgets: Vec<BudgetSpec>,
    /// Bulkheads (concurrency gates), one per instance each, shared by the edges that name them.
    pub bulkheads: Vec<BulkheadSpec>,
    /// How callers spread calls over this service's instances.
    pub balance: Balance,
    /// The operations this service runs.
    pub ops: Vec<OpSpec>,
}

/// How a caller picks one instance of the callee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balance {
    /// Uniformly at random among the active instances.
    Random,
    /// In turn over the active instances.
    RoundRobin,
}

/// The wait queue in front of a service's servers.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct QueueSpec {
    /// Drop a call whose deadline has passed when it reaches the front, without running it.
    pub deadline_check: bool,
    /// Use the guards-core queue discipline (CoDel age limit, adaptive LIFO, priority)
    /// instead of a plain first-in-first-out queue.
    pub discipline: Option<DisciplineSpec>,
}

/// Settings of the guards-core queue discipline (docs/basketly.md, C5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DisciplineSpec {
    /// The queue is standing once it has been non-empty this long (seed: 100 ms).
    pub interval: Nanos,
    /// While standing, waiters older than this are dropped with an overloaded reply (seed: 5 ms).
    pub target: Nanos,
    /// Apply the age limit.
    pub codel: bool,
    /// Serve newest first while standing.
    pub lifo: bool,
    /// Serve a more important waiter before any less important one.
    pub priority: bool,
}

/// Admission control at the door of every instance: a call of priority `p` is refused with
/// an overloaded reply when the calls inside the instance are at `limits[p]` or more.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionSpec {
    /// Limit per priority level (index = [`Priority::level`]); missing levels use the last one.
    pub limits: Vec<u32>,
}

/// Multiply work durations that start inside `[start, end)` by `factor`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slowdown {
    /// First instant of the slow period.
    pub start: Nanos,
    /// First instant after it.
    pub end: Nanos,
    /// Factor applied to every duration drawn in the period.
    pub factor: f64,
}

/// A period `[start, end)` during which a service is down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    /// First instant of the outage.
    pub start: Nanos,
    /// First instant after it.
    pub end: Nanos,
}

/// A retry budget (token bucket) kept per caller instance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetSpec {
    /// Bucket size and starting tokens (seed C4: 10).
    pub capacity: f64,
    /// Tokens earned per first attempt (seed C4: 0.1). A retry (or a hedge) costs one token.
    pub deposit: f64,
}

/// A concurrency cap per caller instance (seed C7: 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkheadSpec {
    /// Calls allowed in flight at once through this gate.
    pub max_concurrent: u32,
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

/// A distribution of durations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dist {
    /// Always this long.
    Const(Nanos),
    /// Exponential with this mean.
    Exp(Nanos),
    /// Uniform on `[lo, hi)`.
    Uniform(Nanos, Nanos),
    /// `value` with probability `p`, otherwise zero (e.g. a 1 % stall of 250 ms).
    Bernoulli {
        /// Probability of the non-zero value.
        p: f64,
        /// The value.
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
    /// caller's operation without it (a degraded answer) instead of failing it.
    pub optional: bool,
    /// Keep every successful call's latency for the summary percentiles.
    pub record_latency: bool,
    /// Timeouts, retries, deadlines, cancellation and guards.
    pub policy: CallPolicy,
}

/// Which deadline a caller sends with each attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineMode {
    /// None: the callee does not know when the caller gives up.
    None,
    /// This attempt's own: `min(attempt timeout, time left) − margin`.
    Attempt,
    /// The whole time left on the caller's request, ignoring the attempt timeout.
    WholeLeft,
}

/// How the caller treats a side effect when deciding on a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotency {
    /// A read, or a write the caller (rightly or not) treats as safe to repeat.
    Idempotent,
    /// A write carrying an idempotency key: the callee returns the first result to a repeat.
    Keyed,
    /// A write without a key: the caller does not retry it.
    Unkeyed,
}

/// The shape of the wait between attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JitterKind {
    /// `min(cap, base × 2ⁿ)` exactly (a fixed wait when n = 0).
    None,
    /// Uniform on `[0, min(cap, base × 2ⁿ))`.
    Full,
    /// Half fixed, half uniform.
    Equal,
    /// Decorrelated: uniform between base and three times the previous wait.
    Decorrelated,
}

/// Backoff between attempts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffSpec {
    /// Jitter shape; with `base == 0` there is no wait at all.
    pub jitter: JitterKind,
    /// Base wait (the first retry uses n = 0).
    pub base: Nanos,
    /// Largest wait.
    pub cap: Nanos,
}

impl BackoffSpec {
    /// Retry at once.
    pub const IMMEDIATE: BackoffSpec = BackoffSpec {
        jitter: JitterKind::None,
        base: Nanos::ZERO,
        cap: Nanos::ZERO,
    };
}

/// A circuit breaker per caller instance and edge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerSpec {
    /// The window of outcomes the failure rate is computed over.
    pub window: BreakerWindow,
    /// Open when the failure rate is at least this (0..1].
    pub failure_rate: f64,
    /// Minimum outcomes in the window before the rate is evaluated (0: the window size
    /// for a count window, one call for a time window).
    pub min_calls: u32,
    /// How long it stays open before letting probes through.
    pub open_for: Nanos,
    /// Probes allowed while half-open; all must pass to close.
    pub probes: u32,
    /// Attempt timeout of a probe.
    pub probe_timeout: Nanos,
    /// The callee's overloaded replies (503) count as failures.
    pub count_overloaded: bool,
}

/// The breaker's window of recent outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerWindow {
    /// The last N outcomes.
    Count(u32),
    /// The outcomes of the last span of time.
    Time(Nanos),
}

/// Hedging: a second copy sent when the first is slower than a tracked percentile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HedgeSpec {
    /// The percentile of recent latency after which to hedge (seed: 0.95).
    pub percentile: f64,
    /// Never hedge earlier than this.
    pub min_delay: Nanos,
    /// Most hedges per call.
    pub max_hedges: u32,
}

/// What a caller does on one edge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallPolicy {
    /// Attempts including the first (1 = no retry).
    pub attempts: u32,
    /// Per-attempt timeout (`None`: wait for the answer, bounded only by the caller's deadline).
    pub timeout: Option<Nanos>,
    /// Wait between attempts.
    pub backoff: BackoffSpec,
    /// Retry when the attempt timed out.
    pub retry_on_timeout: bool,
    /// Retry when the callee answered with an ordinary error.
    pub retry_on_error: bool,
    /// Retry when the callee (or a local guard) answered "overloaded, don't retry".
    pub retry_on_overloaded: bool,
    /// The deadline sent with each attempt.
    pub deadline: DeadlineMode,
    /// Subtracted from the attempt budget before it is sent.
    pub margin: Nanos,
    /// Cancel an abandoned attempt, so the callee stops working on it.
    pub cancel: bool,
    /// How the call is treated as a side effect.
    pub idempotency: Idempotency,
    /// When this step fails for good, the caller's operation answers "overloaded, don't
    /// retry" (the one-retry-layer rule) instead of an ordinary error.
    pub give_up_as_overloaded: bool,
    /// Index into the caller's [`ServiceSpec::budgets`].
    pub budget: Option<usize>,
    /// A breaker per caller instance on this edge.
    pub breaker: Option<BreakerSpec>,
    /// Index into the caller's [`ServiceSpec::bulkheads`].
    pub bulkhead: Option<usize>,
    /// Hedge slow attempts.
    pub hedge: Option<HedgeSpec>,
}

impl Default for CallPolicy {
    /// One attempt, no timeout, nothing else.
    fn default() -> Self {
        CallPolicy {
            attempts: 1,
            timeout: None,
            backoff: BackoffSpec::IMMEDIATE,
            retry_on_timeout: true,
            retry_on_error: true,
            retry_on_overloaded: false,
            deadline: DeadlineMode::None,
            margin: Nanos::ZERO,
            cancel: false,
            idempotency: Idempotency::Idempotent,
            give_up_as_overloaded: false,
            budget: None,
            breaker: None,
            bulkhead: None,
            hedge: None,
        }
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offsets {
    /// All at the start of every period.
    Aligned,
    /// Each at a stable offset: a hash of its id modulo the period.
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
