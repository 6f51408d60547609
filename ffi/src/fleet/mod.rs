//! The fleet agent: a background thread that makes this process one member of a fleet
//! sharing allowances through Redis (or Valkey), and resizes the guards attached to them.
//!
//! The hot path never touches the network: an attached bulkhead is an ordinary
//! [`Bulkhead`] whose cap the agent changes with [`Bulkhead::set_max_concurrent`].
//!
//! Every `sync_interval` (default [`DEFAULT_SYNC_INTERVAL`], 250 ms) the agent reads the
//! fleet view in one atomic script (live members and their published `held` per
//! allowance), decides each attached guard's share with [`guards_core::fleet::decide`]
//! (shrink at once, grow only into what the view leaves free, by a compare-and-set
//! claim), and writes its heartbeat: its record expires after `ttl` (default 3 × the
//! interval) unless renewed, so a member that dies or is cut off gives its share back
//! after the TTL. The arithmetic and its bound are documented in `guards_core::fleet`
//! and docs/fleet.md.
//!
//! # Redis unreachable or slow
//!
//! Every Redis call has a timeout of `io_timeout` (default: the sync interval). When a
//! sync fails, the agent keeps the last shares for `stale_after` (default 2 × the
//! interval, shorter than the TTL on purpose: a cut-off member shrinks before the others
//! may take its share), then shrinks each guard to its fallback share
//! ([`guards_core::fleet::fallback_share`]: the configured `fallback_floor`, or the
//! allowance ÷ the last known number of members, never above the last share).
//! It reconnects with the project's backoff (full jitter, base = the interval, cap 5 s),
//! and reports `RedisLost` / `RedisRegained` / `FellBack` events and counters.
//! When it comes back and finds its record expired, it rejoins as a newcomer (share 0,
//! growing as the others leave room).
//!
//! # Breaker evidence
//!
//! A breaker attached with [`Fleet::attach_breaker`] is never resized: each sync the agent
//! publishes its window counts (calls, failures) under the breaker's name, sums the other
//! members' ([`FleetEvidence::from_records`], every record sanitized) with its own, and
//! opens the local breaker ([`CircuitBreaker::open_on_evidence`]) when
//! [`open_on_fleet_evidence`] holds for the breaker's own `minimum_calls` and failure-rate
//! threshold: too few calls of its own, enough in the fleet, from at least
//! [`MIN_EVIDENCE_MEMBERS`] *other* members (this member's own counts add to the calls and
//! the rate, never to the members, so no single other member can open it). While a breaker
//! that opened on its own is open or half-open it keeps publishing the counts that opened
//! it (its window at the last sync while closed, plus the outcomes recorded after it);
//! one opened on the fleet's evidence publishes nothing until it closes, so evidence is
//! never echoed back.

pub mod c_api;
mod store;

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use guards_core::backoff::{Backoff, BackoffConfig, Jitter};
use guards_core::circuit_breaker::{BreakerState, CircuitBreaker};
use guards_core::fleet::{
    decide, fallback_share, open_on_fleet_evidence, FleetEvidence, MemberRecord, MAX_WEIGHT,
    MAX_WINDOW_CALLS, MIN_EVIDENCE_MEMBERS,
};
use guards_core::retry_budget::TokenBudget;
use guards_core::{Bulkhead, Limiter, Nanos, Rng};

use crate::handle::AnyBreaker;

pub use store::{name_id, Keys};

/// Default sync interval: 250 ms (4 reads and 4 heartbeats a second per member).
pub const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_millis(250);

/// The longest accepted sync interval (1 minute) and the shortest (10 ms).
pub const SYNC_INTERVAL_RANGE: (Duration, Duration) =
    (Duration::from_millis(10), Duration::from_secs(60));

/// The most events kept for [`Fleet::events`]; older ones are dropped (and counted).
pub const MAX_EVENTS: usize = 1024;

/// Settings of a fleet member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetConfig {
    /// `redis://[user:password@]host:port[/db]` (or `valkey://`).
    pub url: String,
    /// The fleet's name (the service): members of one service share its allowances.
    /// 1..=128 bytes of `[A-Za-z0-9._-]`.
    pub service: String,
    /// This member's name, unique in the fleet (host name, pod name). Same rules.
    pub member: String,
    /// This member's relative size, `1..=1000`. Default 1.
    pub weight: u32,
    /// How often the agent syncs. Default [`DEFAULT_SYNC_INTERVAL`]; `10 ms..=60 s`.
    pub sync_interval: Duration,
    /// How long a member's record lives without a heartbeat. Default 3 × the interval;
    /// at least 2 × the interval.
    pub ttl: Duration,
    /// How long the last shares are kept while Redis is unreachable. Default 2 × the
    /// interval; less than the TTL.
    pub stale_after: Duration,
    /// The share to fall back to after `stale_after` (capped by the last share). `None`
    /// (the default): the allowance ÷ the last known members.
    pub fallback_floor: Option<u64>,
    /// The timeout of each Redis call. Default: the sync interval.
    pub io_timeout: Duration,
}

impl FleetConfig {
    /// Settings with the defaults for `url`, `service` and `member`.
    pub fn new(url: &str, service: &str, member: &str) -> Self {
        let i = DEFAULT_SYNC_INTERVAL;
        FleetConfig {
            url: url.to_owned(),
            service: service.to_owned(),
            member: member.to_owned(),
            weight: 1,
            sync_interval: i,
            ttl: i * 3,
            stale_after: i * 2,
            fallback_floor: None,
            io_timeout: i,
        }
    }

    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), FleetError> {
        let bad = |field: &'static str, why: &'static str| Err(FleetError::Config(field, why));
        check_name("service", &self.service)?;
        check_name("member", &self.member)?;
        if !(1..=MAX_WEIGHT).contains(&self.weight) {
            return bad("weight", "1..=1000");
        }
        let (lo, hi) = SYNC_INTERVAL_RANGE;
        if self.sync_interval < lo || self.sync_interval > hi {
            return bad("sync_interval", "10 ms..=60 s");
        }
        if self.ttl < self.sync_interval * 2 || self.ttl > hi * 10 {
            return bad("ttl", "2 x sync_interval..=600 s");
        }
        if self.stale_after.is_zero() || self.stale_after >= self.ttl {
            return bad("stale_after", "> 0 and < ttl");
        }
        if self.io_timeout < Duration::from_millis(1) || self.io_timeout > hi {
            return bad("io_timeout", "1 ms..=60 s");
        }
        Ok(())
    }
}

/// Whether `s` can name a service, a member, an allowance or a breaker: 1..=128 bytes of
/// `[A-Za-z0-9._-]` (so it can stand in a Redis key as is).
pub fn is_valid_name(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

fn check_name(field: &'static str, s: &str) -> Result<(), FleetError> {
    if is_valid_name(s) {
        Ok(())
    } else {
        Err(FleetError::Config(field, "1..=128 bytes of [A-Za-z0-9._-]"))
    }
}

/// Why joining or attaching failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetError {
    /// A setting is invalid: the field and what is accepted.
    Config(&'static str, &'static str),
    /// The URL does not parse as a Redis URL.
    BadUrl(String),
    /// Redis refused the credentials (or requires some).
    Auth(String),
    /// Redis could not be reached (or answered an error) when joining.
    Unavailable(String),
    /// An allowance (or a breaker) of this name is already attached.
    Duplicate(String),
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetError::Config(field, why) => write!(f, "invalid fleet setting {field}: {why}"),
            FleetError::BadUrl(e) => write!(f, "bad redis url: {e}"),
            FleetError::Auth(e) => write!(f, "redis authentication failed: {e}"),
            FleetError::Unavailable(e) => write!(f, "redis unavailable: {e}"),
            FleetError::Duplicate(a) => write!(f, "allowance {a} is already attached"),
        }
    }
}

impl std::error::Error for FleetError {}

/// Something the agent saw or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetEvent {
    /// An attached guard's share changed.
    ShareChanged {
        /// The allowance.
        allowance: String,
        /// The share before.
        from: u64,
        /// The share now.
        to: u64,
    },
    /// A member appeared in the view.
    MemberJoined(String),
    /// A member left the view (it left, or its record expired).
    MemberLeft(String),
    /// A sync failed after the last one succeeded.
    RedisLost(String),
    /// A sync succeeded after failures.
    RedisRegained,
    /// Redis was unreachable for `stale_after`: the guard fell back to this share.
    FellBack {
        /// The allowance.
        allowance: String,
        /// The fallback share.
        share: u64,
    },
    /// An attached breaker with too few calls of its own opened on the fleet's evidence
    /// (see [`Fleet::attach_breaker`]).
    BreakerOpenedOnFleetEvidence {
        /// The breaker's name.
        name: String,
        /// Calls in the fleet's windows (this member's included).
        fleet_calls: u64,
        /// Failures among them.
        fleet_failures: u64,
        /// Other members that contributed calls.
        members: u32,
    },
}

/// A field of a [`FleetEvent`], as the bindings hand it on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventField<'a> {
    /// A name or a message.
    Text(&'a str),
    /// A count or a share.
    Count(u64),
}

impl FleetEvent {
    /// The event's kind in snake_case (`share_changed`, `member_joined`, `member_left`,
    /// `redis_lost`, `redis_regained`, `fell_back`, `breaker_opened_on_fleet_evidence`).
    pub fn kind(&self) -> &'static str {
        match self {
            FleetEvent::ShareChanged { .. } => "share_changed",
            FleetEvent::MemberJoined(_) => "member_joined",
            FleetEvent::MemberLeft(_) => "member_left",
            FleetEvent::RedisLost(_) => "redis_lost",
            FleetEvent::RedisRegained => "redis_regained",
            FleetEvent::FellBack { .. } => "fell_back",
            FleetEvent::BreakerOpenedOnFleetEvidence { .. } => "breaker_opened_on_fleet_evidence",
        }
    }

    /// The event's fields as (snake_case name, value), in a fixed order: what a binding
    /// puts beside `kind` in the event it hands out.
    pub fn fields(&self) -> Vec<(&'static str, EventField<'_>)> {
        use EventField::{Count, Text};
        match self {
            FleetEvent::ShareChanged {
                allowance,
                from,
                to,
            } => vec![
                ("allowance", Text(allowance)),
                ("from", Count(*from)),
                ("to", Count(*to)),
            ],
            FleetEvent::MemberJoined(m) | FleetEvent::MemberLeft(m) => vec![("member", Text(m))],
            FleetEvent::RedisLost(error) => vec![("error", Text(error))],
            FleetEvent::RedisRegained => Vec::new(),
            FleetEvent::FellBack { allowance, share } => {
                vec![("allowance", Text(allowance)), ("share", Count(*share))]
            }
            FleetEvent::BreakerOpenedOnFleetEvidence {
                name,
                fleet_calls,
                fleet_failures,
                members,
            } => vec![
                ("name", Text(name)),
                ("fleet_calls", Count(*fleet_calls)),
                ("fleet_failures", Count(*fleet_failures)),
                ("members", Count(u64::from(*members))),
            ],
        }
    }
}

/// One attached allowance, as [`Fleet::stats`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowanceStats {
    /// Its name.
    pub name: String,
    /// The fleet-wide allowance.
    pub allowance: u64,
    /// This member's share now (the attached guard's cap).
    pub share: u64,
    /// Its fair share in the last view.
    pub fair: u64,
    /// Claims written / lost to another member's claim.
    pub claims_won: u64,
    /// Claims lost.
    pub claims_lost: u64,
}

/// One attached breaker, as [`Fleet::stats`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerStats {
    /// Its name.
    pub name: String,
    /// Calls this member published at the last sync.
    pub calls: u64,
    /// Failures this member published at the last sync.
    pub failures: u64,
    /// The fleet's evidence at the last sync: calls (this member's included).
    pub fleet_calls: u64,
    /// Failures among them.
    pub fleet_failures: u64,
    /// Other members that contributed calls.
    pub fleet_members: u32,
    /// Times the agent opened the breaker on the fleet's evidence.
    pub opened_on_evidence: u64,
}

/// Counters of the agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetStats {
    /// Live members in the last view (0 before the first).
    pub members: u64,
    /// Successful syncs.
    pub syncs: u64,
    /// Failed syncs (Redis errors and timeouts).
    pub sync_errors: u64,
    /// Whether the last sync succeeded.
    pub connected: bool,
    /// Whether the shares are fallbacks (Redis unreachable for `stale_after`).
    pub fallen_back: bool,
    /// Events dropped because nobody read them.
    pub events_dropped: u64,
    /// Each attached allowance.
    pub allowances: Vec<AllowanceStats>,
    /// Each attached breaker.
    pub breakers: Vec<BreakerStats>,
}

/// A guard the agent can resize: a bulkhead (its cap), a limiter (its ceiling,
/// [`Limiter::set_max_limit`]) or a token budget (its burst, [`TokenBudget::set_capacity`]).
pub trait Resizable: Send + Sync {
    /// What it holds of the allowance now: calls in flight (a bulkhead, a limiter) or whole
    /// tokens in the bucket, rounded up (a token budget).
    fn in_flight(&self) -> u64;
    /// The cap in force (this member's share).
    fn cap(&self) -> u64;
    /// Change the cap (see [`Bulkhead::set_max_concurrent`]); the agent never passes more
    /// than [`Resizable::max_cap`].
    fn set_cap(&self, cap: u64);
    /// The largest cap this guard can take; [`Fleet::attach`] refuses a larger allowance.
    fn max_cap(&self) -> u64 {
        u64::from(u32::MAX)
    }
}

impl Resizable for Bulkhead {
    fn in_flight(&self) -> u64 {
        Bulkhead::in_flight(self)
    }
    fn cap(&self) -> u64 {
        self.max_concurrent()
    }
    fn set_cap(&self, cap: u64) {
        // The agent's shares never exceed the allowance, which is checked at attach.
        let _ = self.set_max_concurrent(cap);
    }
}

/// A limiter's share is its ceiling: the algorithm adapts beneath it, and a limiter with
/// no ceiling reports the largest one.
impl Resizable for Limiter {
    fn in_flight(&self) -> u64 {
        Limiter::in_flight(self)
    }
    fn cap(&self) -> u64 {
        self.max_limit().unwrap_or(u64::from(u32::MAX))
    }
    fn set_cap(&self, cap: u64) {
        // In range: the allowance is checked at attach.
        let _ = self.set_max_limit(cap);
    }
}

/// Micro-tokens per token.
const MICROS: u64 = 1_000_000;

/// A token budget's share is its burst (whole tokens); what it holds is its balance,
/// rounded up, which a shrink clamps at once. Its earn ratio is left alone: it is earned
/// per first attempt, so the fleet's total already follows the traffic, not the number
/// of members.
impl Resizable for TokenBudget {
    fn in_flight(&self) -> u64 {
        self.tokens_micros().div_ceil(MICROS)
    }
    fn cap(&self) -> u64 {
        self.capacity_micros() / MICROS
    }
    fn set_cap(&self, cap: u64) {
        // At most `max_cap`: checked at attach.
        let _ = self.set_capacity(cap as f64);
    }
    fn max_cap(&self) -> u64 {
        MAX_BUDGET_TOKENS
    }
}

/// The largest burst, in tokens, a token budget takes (its capacity's range).
const MAX_BUDGET_TOKENS: u64 = 1_000_000_000;

impl<T: Resizable + ?Sized> Resizable for Arc<T> {
    fn in_flight(&self) -> u64 {
        (**self).in_flight()
    }
    fn cap(&self) -> u64 {
        (**self).cap()
    }
    fn set_cap(&self, cap: u64) {
        (**self).set_cap(cap)
    }
    fn max_cap(&self) -> u64 {
        (**self).max_cap()
    }
}

/// A circuit breaker the agent feeds the fleet's evidence to ([`Fleet::attach_breaker`]).
/// `now` is on the timeline of [`crate::clock::now_ns`] (every binding's default clock).
pub trait Trippable: Send + Sync {
    /// Calls and failures in its window at `now` (zeros unless closed).
    fn window(&self, now: Nanos) -> (u64, u64);
    /// Ordinary outcomes recorded since it was built: calls (successes and failures) and
    /// failures.
    fn recorded(&self) -> (u64, u64);
    /// Whether it is closed at `now`.
    fn is_closed(&self, now: Nanos) -> bool;
    /// The calls its window needs before its rates are judged.
    fn minimum_calls(&self) -> u64;
    /// The failure rate at which it opens.
    fn failure_rate_threshold(&self) -> f64;
    /// Open it at `now` if it is closed ([`CircuitBreaker::open_on_evidence`]); whether
    /// this call opened it.
    fn open_on_evidence(&self, now: Nanos) -> bool;
}

impl<const CAP: usize> Trippable for CircuitBreaker<CAP> {
    fn window(&self, now: Nanos) -> (u64, u64) {
        let w = self.window_counts(now);
        (w.calls, w.failures)
    }
    fn recorded(&self) -> (u64, u64) {
        let s = self.stats();
        (s.successes.saturating_add(s.failures), s.failures)
    }
    fn is_closed(&self, now: Nanos) -> bool {
        self.state(now) == BreakerState::Closed
    }
    fn minimum_calls(&self) -> u64 {
        CircuitBreaker::minimum_calls(self)
    }
    fn failure_rate_threshold(&self) -> f64 {
        self.config().failure_rate_threshold
    }
    fn open_on_evidence(&self, now: Nanos) -> bool {
        CircuitBreaker::open_on_evidence(self, now)
    }
}

impl AnyBreaker {
    /// The breaker inside, whatever its capacity, as a [`Trippable`].
    fn trippable(&self) -> &dyn Trippable {
        match self {
            AnyBreaker::C128(b) => &**b,
            AnyBreaker::C1024(b) => &**b,
            AnyBreaker::C8192(b) => &**b,
            AnyBreaker::C65536(b) => &**b,
        }
    }
}

impl Trippable for AnyBreaker {
    fn window(&self, now: Nanos) -> (u64, u64) {
        self.trippable().window(now)
    }
    fn recorded(&self) -> (u64, u64) {
        self.trippable().recorded()
    }
    fn is_closed(&self, now: Nanos) -> bool {
        self.trippable().is_closed(now)
    }
    fn minimum_calls(&self) -> u64 {
        self.trippable().minimum_calls()
    }
    fn failure_rate_threshold(&self) -> f64 {
        self.trippable().failure_rate_threshold()
    }
    fn open_on_evidence(&self, now: Nanos) -> bool {
        self.trippable().open_on_evidence(now)
    }
}

impl<T: Trippable + ?Sized> Trippable for Arc<T> {
    fn window(&self, now: Nanos) -> (u64, u64) {
        (**self).window(now)
    }
    fn recorded(&self) -> (u64, u64) {
        (**self).recorded()
    }
    fn is_closed(&self, now: Nanos) -> bool {
        (**self).is_closed(now)
    }
    fn minimum_calls(&self) -> u64 {
        (**self).minimum_calls()
    }
    fn failure_rate_threshold(&self) -> f64 {
        (**self).failure_rate_threshold()
    }
    fn open_on_evidence(&self, now: Nanos) -> bool {
        (**self).open_on_evidence(now)
    }
}

/// A breaker reached through a value that holds it (a binding's object, say): `.1` finds
/// the breaker inside `.0`. Each binding attaches its breakers this way instead of writing
/// the delegation out again.
pub struct Through<T>(pub T, pub fn(&T) -> &dyn Trippable);

impl<T> std::fmt::Debug for Through<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Through").finish_non_exhaustive()
    }
}

impl<T: Send + Sync> Trippable for Through<T> {
    fn window(&self, now: Nanos) -> (u64, u64) {
        (self.1)(&self.0).window(now)
    }
    fn recorded(&self) -> (u64, u64) {
        (self.1)(&self.0).recorded()
    }
    fn is_closed(&self, now: Nanos) -> bool {
        (self.1)(&self.0).is_closed(now)
    }
    fn minimum_calls(&self) -> u64 {
        (self.1)(&self.0).minimum_calls()
    }
    fn failure_rate_threshold(&self) -> f64 {
        (self.1)(&self.0).failure_rate_threshold()
    }
    fn open_on_evidence(&self, now: Nanos) -> bool {
        (self.1)(&self.0).open_on_evidence(now)
    }
}

struct AttachedBreaker {
    name: String,
    breaker: Box<dyn Trippable>,
    /// The window at the last sync that found it closed, and `recorded()` then.
    sample: (u64, u64),
    recorded_at_sample: (u64, u64),
    /// While it is open on its own: the counts that opened it (published until it closes).
    opened_on: Option<(u64, u64)>,
    /// Whether the agent opened it (it then publishes nothing until it closes).
    opened_by_fleet: bool,
    published: (u64, u64),
    fleet: FleetEvidence,
    opened_on_evidence: u64,
}

impl AttachedBreaker {
    /// What to publish at `now` (see "Breaker evidence" in the module docs).
    fn counts(&mut self, now: Nanos) -> (u64, u64) {
        if self.breaker.is_closed(now) {
            let w = self.breaker.window(now);
            self.sample = w;
            self.recorded_at_sample = self.breaker.recorded();
            self.opened_on = None;
            self.opened_by_fleet = false;
            return clamp_counts(w);
        }
        if self.opened_by_fleet {
            return (0, 0);
        }
        let (sample, at) = (self.sample, self.recorded_at_sample);
        let recorded = self.breaker.recorded();
        *self.opened_on.get_or_insert_with(|| {
            clamp_counts((
                sample.0.saturating_add(recorded.0.saturating_sub(at.0)),
                sample.1.saturating_add(recorded.1.saturating_sub(at.1)),
            ))
        })
    }
}

/// `calls <= MAX_WINDOW_CALLS`, `failures <= calls`.
fn clamp_counts((calls, failures): (u64, u64)) -> (u64, u64) {
    let calls = calls.min(MAX_WINDOW_CALLS);
    (calls, failures.min(calls))
}

struct Attached {
    name: String,
    allowance: u64,
    guard: Box<dyn Resizable>,
    fair: u64,
    claims_won: u64,
    claims_lost: u64,
}

struct State {
    attached: Vec<Attached>,
    breakers: Vec<AttachedBreaker>,
    events: VecDeque<FleetEvent>,
    stats: FleetStats,
    last_members: Vec<String>,
    stop: bool,
}

impl State {
    fn emit(&mut self, e: FleetEvent) {
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
            self.stats.events_dropped += 1;
        }
        self.events.push_back(e);
    }
}

struct Shared {
    config: FleetConfig,
    keys: Keys,
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A member of a fleet: the agent thread, stopped by [`Fleet::leave`] or on drop.
pub struct Fleet {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    left: AtomicBool,
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("service", &self.shared.config.service)
            .field("member", &self.shared.config.member)
            .finish()
    }
}

fn classify(e: &redis::RedisError) -> FleetError {
    let msg = e.to_string();
    let auth = matches!(e.kind(), redis::ErrorKind::AuthenticationFailed)
        || msg.contains("NOAUTH")
        || msg.contains("WRONGPASS")
        || msg.contains("invalid password");
    if auth {
        FleetError::Auth(msg)
    } else {
        FleetError::Unavailable(msg)
    }
}

fn connect(client: &redis::Client, timeout: Duration) -> Result<redis::Connection, FleetError> {
    let mut con = client
        .get_connection_with_timeout(timeout)
        .map_err(|e| classify(&e))?;
    con.set_read_timeout(Some(timeout))
        .and_then(|()| con.set_write_timeout(Some(timeout)))
        .map_err(|e| classify(&e))?;
    let _: String = redis::cmd("PING")
        .query(&mut con)
        .map_err(|e| classify(&e))?;
    Ok(con)
}

impl Fleet {
    /// Join the fleet: validate the settings, connect to Redis once (a bad URL, bad
    /// credentials or an unreachable server are errors here), write the first heartbeat
    /// and start the agent thread.
    pub fn join(config: FleetConfig) -> Result<Fleet, FleetError> {
        config.validate()?;
        let client = redis::Client::open(config.url.as_str())
            .map_err(|e| FleetError::BadUrl(e.to_string()))?;
        let mut con = connect(&client, config.io_timeout)?;
        let keys = Keys::new(&config.service);
        keys.beat(
            &mut con,
            &config.member,
            config.ttl,
            &[("w".to_owned(), config.weight.to_string())],
        )
        .map_err(|e| classify(&e))?;
        let shared = Arc::new(Shared {
            keys,
            state: Mutex::new(State {
                attached: Vec::new(),
                breakers: Vec::new(),
                events: VecDeque::new(),
                stats: FleetStats {
                    connected: true,
                    ..FleetStats::default()
                },
                last_members: Vec::new(),
                stop: false,
            }),
            wake: Condvar::new(),
            config,
        });
        let agent = Agent::new(Arc::clone(&shared), client, con)?;
        let thread = std::thread::Builder::new()
            .name("guards-fleet".to_owned())
            .spawn(move || agent.run())
            .map_err(|e| FleetError::Unavailable(e.to_string()))?;
        Ok(Fleet {
            shared,
            thread: Some(thread),
            left: AtomicBool::new(false),
        })
    }

    /// The settings this member joined with.
    pub fn config(&self) -> &FleetConfig {
        &self.shared.config
    }

    /// Attach `guard` to the fleet-wide allowance `name` (1..=128 bytes of
    /// `[A-Za-z0-9._-]`) of `allowance` slots (`1..=2^32 − 1`). The guard's cap drops to 0
    /// at once and grows to this member's share as the fleet leaves room (see the module
    /// docs): attach before serving traffic. The agent keeps the guard until
    /// [`Fleet::leave`].
    pub fn attach(
        &self,
        name: &str,
        allowance: u64,
        guard: Box<dyn Resizable>,
    ) -> Result<(), FleetError> {
        check_name("allowance name", name)?;
        if allowance == 0 || allowance > u64::from(u32::MAX) {
            return Err(FleetError::Config("allowance", "1..=4294967295"));
        }
        if allowance > guard.max_cap() {
            return Err(FleetError::Config(
                "allowance",
                "at most the guard's largest cap (1e9 tokens for a token budget)",
            ));
        }
        let mut st = self.shared.lock();
        if st.attached.iter().any(|a| a.name == name) {
            return Err(FleetError::Duplicate(name.to_owned()));
        }
        guard.set_cap(0);
        st.attached.push(Attached {
            name: name.to_owned(),
            allowance,
            guard,
            fair: 0,
            claims_won: 0,
            claims_lost: 0,
        });
        drop(st);
        self.shared.wake.notify_all();
        Ok(())
    }

    /// Attach a bulkhead (see [`Fleet::attach`]).
    pub fn attach_bulkhead(
        &self,
        name: &str,
        allowance: u64,
        bulkhead: Arc<Bulkhead>,
    ) -> Result<(), FleetError> {
        self.attach(name, allowance, Box::new(bulkhead))
    }

    /// Attach a limiter: its ceiling ([`Limiter::set_max_limit`]) follows this member's
    /// share of a fleet-wide maximum (see [`Fleet::attach`]).
    pub fn attach_limiter(
        &self,
        name: &str,
        allowance: u64,
        limiter: Arc<Limiter>,
    ) -> Result<(), FleetError> {
        self.attach(name, allowance, Box::new(limiter))
    }

    /// Attach a token budget: its burst ([`TokenBudget::set_capacity`]) follows this
    /// member's share of a fleet-wide burst of `allowance` tokens (`1..=1e9`; see
    /// [`Fleet::attach`]).
    pub fn attach_token_budget(
        &self,
        name: &str,
        allowance: u64,
        budget: Arc<TokenBudget>,
    ) -> Result<(), FleetError> {
        self.attach(name, allowance, Box::new(budget))
    }

    /// Attach `breaker` under `name` (1..=128 bytes of `[A-Za-z0-9._-]`; the breakers'
    /// names are their own namespace, apart from the allowances'): each sync the agent
    /// publishes its window counts and, while it is closed with fewer calls than its
    /// `minimum_calls`, opens it when the fleet's evidence meets its failure-rate
    /// threshold (see "Breaker evidence" in the module docs), with a
    /// [`FleetEvent::BreakerOpenedOnFleetEvidence`]. The breaker is otherwise untouched
    /// and its clock must be [`crate::clock::now_ns`]'s timeline. Kept until
    /// [`Fleet::leave`].
    pub fn attach_breaker(
        &self,
        name: &str,
        breaker: Arc<CircuitBreaker>,
    ) -> Result<(), FleetError> {
        self.attach_trippable(name, Box::new(breaker))
    }

    /// Attach any [`Trippable`] breaker (see [`Fleet::attach_breaker`]).
    pub fn attach_trippable(
        &self,
        name: &str,
        breaker: Box<dyn Trippable>,
    ) -> Result<(), FleetError> {
        check_name("breaker name", name)?;
        let mut st = self.shared.lock();
        if st.breakers.iter().any(|b| b.name == name) {
            return Err(FleetError::Duplicate(name.to_owned()));
        }
        // Outcomes recorded before the attach count only through the window.
        let sample = breaker.window(Nanos(crate::clock::now_ns()));
        let recorded_at_sample = breaker.recorded();
        st.breakers.push(AttachedBreaker {
            name: name.to_owned(),
            breaker,
            sample,
            recorded_at_sample,
            opened_on: None,
            opened_by_fleet: false,
            published: (0, 0),
            fleet: FleetEvidence::default(),
            opened_on_evidence: 0,
        });
        drop(st);
        self.shared.wake.notify_all();
        Ok(())
    }

    /// The agent's counters and each allowance's share.
    pub fn stats(&self) -> FleetStats {
        let st = self.shared.lock();
        let mut s = st.stats.clone();
        s.allowances = st
            .attached
            .iter()
            .map(|a| AllowanceStats {
                name: a.name.clone(),
                allowance: a.allowance,
                share: a.guard.cap(),
                fair: a.fair,
                claims_won: a.claims_won,
                claims_lost: a.claims_lost,
            })
            .collect();
        s.breakers = st
            .breakers
            .iter()
            .map(|b| BreakerStats {
                name: b.name.clone(),
                calls: b.published.0,
                failures: b.published.1,
                fleet_calls: b.fleet.calls,
                fleet_failures: b.fleet.failures,
                fleet_members: b.fleet.members,
                opened_on_evidence: b.opened_on_evidence,
            })
            .collect();
        s
    }

    /// Take the events seen since the last call (oldest first).
    pub fn events(&self) -> Vec<FleetEvent> {
        self.shared.lock().events.drain(..).collect()
    }

    /// Stop the agent, remove this member's record (best effort) and detach the guards,
    /// which keep their last caps. Idempotent.
    pub fn leave(&mut self) {
        if self.left.swap(true, Ordering::SeqCst) {
            return;
        }
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut st = self.shared.lock();
        st.attached.clear();
        st.breakers.clear();
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.leave();
    }
}

/// Join the allowance `a` as a newcomer: cap 0 at once, publishing held = the calls still
/// in flight (first sync, an expired record, or an allowance not published yet).
fn join_as_newcomer(
    a: &Attached,
    in_flight: u64,
    fields: &mut Vec<(String, String)>,
    events: &mut Vec<FleetEvent>,
) {
    let before = a.guard.cap();
    a.guard.set_cap(0);
    fields.push((format!("h:{}", a.name), in_flight.to_string()));
    if before != 0 {
        events.push(FleetEvent::ShareChanged {
            allowance: a.name.clone(),
            from: before,
            to: 0,
        });
    }
}

struct Agent {
    shared: Arc<Shared>,
    client: redis::Client,
    con: Option<redis::Connection>,
    last_ok: Instant,
    failures: u32,
    backoff: Backoff,
    rng: Rng,
    prev_delay: Nanos,
}

impl Agent {
    fn new(
        shared: Arc<Shared>,
        client: redis::Client,
        con: redis::Connection,
    ) -> Result<Self, FleetError> {
        let i = shared.config.sync_interval;
        let base = Nanos(u64::try_from(i.as_nanos()).unwrap_or(u64::MAX));
        let cap = Nanos::from_secs(5).max(base);
        let backoff = Backoff::new(BackoffConfig {
            base,
            cap,
            multiplier: 2.0,
            jitter: Jitter::Full,
        })
        .or_else(|_| Backoff::new(BackoffConfig::default()))
        .map_err(|_| FleetError::Config("sync_interval", "10 ms..=60 s"))?;
        let seed = name_id(&shared.config.member) ^ u64::from(std::process::id());
        Ok(Agent {
            shared,
            client,
            con: Some(con),
            last_ok: Instant::now(),
            failures: 0,
            backoff,
            rng: Rng::new(seed),
            prev_delay: base,
        })
    }

    fn run(mut self) {
        let interval = self.shared.config.sync_interval;
        loop {
            let started = Instant::now();
            let wait = match self.sync() {
                Ok(()) => interval.saturating_sub(started.elapsed()),
                Err(e) => self.failed(e),
            };
            let st = self.shared.lock();
            if st.stop {
                break;
            }
            let (st, _) = self
                .shared
                .wake
                .wait_timeout_while(st, wait, |s| !s.stop)
                .unwrap_or_else(|p| p.into_inner());
            if st.stop {
                break;
            }
        }
        if let Some(con) = self.con.as_mut() {
            let _ = self.shared.keys.leave(con, &self.shared.config.member);
        }
    }

    fn failed(&mut self, e: redis::RedisError) -> Duration {
        self.con = None;
        self.failures = self.failures.saturating_add(1);
        let cfg = &self.shared.config;
        let mut st = self.shared.lock();
        st.stats.sync_errors += 1;
        if st.stats.connected {
            st.stats.connected = false;
            st.emit(FleetEvent::RedisLost(e.to_string()));
        }
        if self.last_ok.elapsed() >= cfg.stale_after && !st.stats.fallen_back {
            st.stats.fallen_back = true;
            let n = st.last_members.len() as u64;
            let mut changes = Vec::new();
            for a in &st.attached {
                let last = a.guard.cap();
                let share = fallback_share(a.allowance, n, cfg.fallback_floor, last);
                a.guard.set_cap(share);
                changes.push((a.name.clone(), last, share));
            }
            for (name, from, to) in changes {
                st.emit(FleetEvent::FellBack {
                    allowance: name.clone(),
                    share: to,
                });
                if from != to {
                    st.emit(FleetEvent::ShareChanged {
                        allowance: name,
                        from,
                        to,
                    });
                }
            }
        }
        drop(st);
        let d = self
            .backoff
            .delay(self.failures.saturating_sub(1), self.prev_delay, &self.rng);
        self.prev_delay = d;
        Duration::from_nanos(d.as_u64()).max(Duration::from_millis(1))
    }

    fn sync(&mut self) -> redis::RedisResult<()> {
        let cfg = self.shared.config.clone();
        if self.con.is_none() {
            let con = connect(&self.client, cfg.io_timeout).map_err(|e| {
                redis::RedisError::from((redis::ErrorKind::Io, "connect", e.to_string()))
            })?;
            self.con = Some(con);
        }
        let Some(con) = self.con.as_mut() else {
            return Ok(());
        };
        let names: Vec<String> = self
            .shared
            .lock()
            .attached
            .iter()
            .map(|a| a.name.clone())
            .collect();
        let view = self.shared.keys.read(con, &names)?;
        let me_listed = view.members.iter().any(|m| m.name == cfg.member);

        // Decide under the lock (pure arithmetic, no I/O), then write.
        let mut st = self.shared.lock();
        let mut fields = vec![("w".to_owned(), cfg.weight.to_string())];
        let mut claims = Vec::new();
        let mut events = Vec::new();
        for (i, a) in st.attached.iter_mut().enumerate().take(names.len()) {
            let mut records: Vec<MemberRecord> = Vec::new();
            let mut me = None;
            for m in &view.members {
                if m.name == cfg.member {
                    me = Some(records.len());
                    records.push(MemberRecord::new(
                        name_id(&m.name),
                        cfg.weight,
                        a.guard.cap().max(a.guard.in_flight()),
                    ));
                } else if let Some(r) = m.record(&a.name) {
                    records.push(r);
                }
            }
            let cap = a.guard.cap();
            let in_flight = a.guard.in_flight();
            let before = cap;
            // Not in the view (first sync, or our record expired), or not published for
            // this allowance yet: join it as a newcomer.
            let published = view
                .members
                .iter()
                .find(|m| m.name == cfg.member)
                .and_then(|m| m.record(&a.name));
            let (Some(me), Some(_)) = (me.filter(|_| me_listed), published) else {
                join_as_newcomer(a, in_flight, &mut fields, &mut events);
                continue;
            };
            let d = decide(a.allowance, &records, me, cap, in_flight);
            a.fair = d.fair;
            if d.claim {
                let version = view.versions.get(i).cloned().flatten();
                if let Some(v) = version {
                    claims.push((i, v, d.cap));
                }
                fields.push((format!("h:{}", a.name), cap.max(in_flight).to_string()));
            } else {
                a.guard.set_cap(d.cap);
                let held = d.cap.max(a.guard.in_flight());
                fields.push((format!("h:{}", a.name), held.to_string()));
                if d.cap != before {
                    events.push(FleetEvent::ShareChanged {
                        allowance: a.name.clone(),
                        from: before,
                        to: d.cap,
                    });
                }
            }
        }
        // Breakers: publish this member's counts, open on the fleet's evidence.
        let now = Nanos(crate::clock::now_ns());
        let mut opened = Vec::new();
        for b in st.breakers.iter_mut() {
            let own = b.counts(now);
            let others: Vec<MemberRecord> = view
                .members
                .iter()
                .filter(|m| m.name != cfg.member)
                .filter_map(|m| m.breaker(&b.name))
                .collect();
            let o = FleetEvidence::from_records(&others);
            let fleet = FleetEvidence {
                calls: o.calls.saturating_add(own.0),
                failures: o.failures.saturating_add(own.1),
                members: o.members,
            };
            b.fleet = fleet;
            let threshold = b.breaker.failure_rate_threshold();
            let minimum = b.breaker.minimum_calls();
            let mut published = own;
            if fleet.members >= MIN_EVIDENCE_MEMBERS
                && b.breaker.is_closed(now)
                && open_on_fleet_evidence(own.0, minimum, threshold, &fleet)
                && b.breaker.open_on_evidence(now)
            {
                b.opened_by_fleet = true;
                b.opened_on_evidence += 1;
                published = (0, 0);
                opened.push(FleetEvent::BreakerOpenedOnFleetEvidence {
                    name: b.name.clone(),
                    fleet_calls: fleet.calls,
                    fleet_failures: fleet.failures,
                    members: fleet.members,
                });
            }
            b.published = published;
            fields.push((format!("c:{}", b.name), published.0.to_string()));
            fields.push((format!("f:{}", b.name), published.1.to_string()));
        }
        // An opening is done: report it now, whatever the writes below do.
        for e in opened {
            st.emit(e);
        }
        // Members joined / left.
        let now: Vec<String> = view.members.iter().map(|m| m.name.clone()).collect();
        if st.stats.syncs > 0 {
            for n in now.iter().filter(|n| !st.last_members.contains(n)) {
                events.push(FleetEvent::MemberJoined(n.clone()));
            }
            for n in st.last_members.iter().filter(|n| !now.contains(n)) {
                events.push(FleetEvent::MemberLeft(n.clone()));
            }
        }
        st.last_members = now;
        drop(st);

        self.shared.keys.beat(con, &cfg.member, cfg.ttl, &fields)?;
        let mut results = Vec::new();
        for (i, v, cap) in claims {
            let Some(name) = names.get(i) else { continue };
            let won = self.shared.keys.claim(con, &cfg.member, name, &v, cap)?;
            results.push((i, won, cap));
        }

        let mut st = self.shared.lock();
        for (i, won, cap) in results {
            let Some(a) = st.attached.get_mut(i) else {
                continue;
            };
            if won {
                let before = a.guard.cap();
                a.guard.set_cap(cap);
                a.claims_won += 1;
                events.push(FleetEvent::ShareChanged {
                    allowance: a.name.clone(),
                    from: before,
                    to: cap,
                });
            } else {
                a.claims_lost += 1;
            }
        }
        st.stats.syncs += 1;
        st.stats.members = view.members.len() as u64;
        if !st.stats.connected {
            st.stats.connected = true;
            events.push(FleetEvent::RedisRegained);
        }
        st.stats.fallen_back = false;
        for e in events {
            st.emit(e);
        }
        drop(st);
        self.last_ok = Instant::now();
        self.failures = 0;
        Ok(())
    }
}
