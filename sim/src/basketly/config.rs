//! The Basketly settings as one flat, overridable [`Config`], and the named presets.
//!
//! Every number of the model (docs/basketly.md) is a field here; every field can be
//! changed with a `key=value` override ([`Config::set`], [`keys`]). The guards are
//! guards-core's own configs (a hop's `retry` is a `RetryPolicyConfig`, `breaker` a
//! `CircuitBreakerConfig`, ...), and their override keys are generated from guards-ffi's
//! schemas: `breaker.<field>` for every field of the breaker's schema, with the Python
//! API's names, units (durations: `"60ms"`, `"5s"`, or seconds), ranges and messages. The
//! presets build the Basketly settings cumulatively (docs/basketly.md): C1 is C0 plus timeouts
//! and deadlines, C2 adds one retry layer, and so on up to C8; side rows and replays are
//! copies with the changes docs/basketly.md lists.

use std::sync::LazyLock;

use guards::schema::{self, DurationUnit, Input, Schema, Unit};
use guards_core::admission::AdmissionConfig;
use guards_core::backoff::{BackoffConfig, Jitter};
use guards_core::bulkhead::BulkheadConfig;
use guards_core::circuit_breaker::{CircuitBreakerConfig, WindowKind};
use guards_core::hedging::HedgingConfig;
use guards_core::limit::LimitConfig;
use guards_core::queue_discipline::QueueDisciplineConfig;
use guards_core::retry_budget::TokenBudgetConfig;
use guards_core::retry_policy::RetryPolicyConfig;
use guards_core::Nanos;

use crate::error::SimError;
use crate::limits::{Limits, MIN_INTERVAL};
use crate::topology::configs::{describe, kind_text, limit_from_value, output};
use crate::topology::units::{duration_from_secs, parse_duration};
use crate::topology::{clock, Balance, DeadlineMode, Offsets};
use crate::trace::{TraceSpec, MAX_TRACES};

/// A backoff that retries at once: a fixed wait of 1 ns, the shortest core's backoff
/// accepts (the as-shipped services retried immediately).
pub const AT_ONCE: BackoffConfig = BackoffConfig {
    base: Nanos(1),
    cap: Nanos(1),
    multiplier: 1.0,
    jitter: Jitter::None,
};

/// One hop's calling policy (app → shop-api, shop-api → stock, stock → database).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hop {
    /// `HOP.retry.<field>`: the hop's retry policy, guards-core's own (attempts, which
    /// failures, backoff with jitter).
    pub retry: RetryPolicyConfig,
    /// `HOP.overloaded_is_transient`: the caller does not know the "overloaded, don't
    /// retry" answer and retries a 503 like any transient error (as shipped).
    pub overloaded_is_transient: bool,
    /// `HOP.attempt_timeout`: per-attempt timeout (`none`: wait as long as it takes).
    pub attempt_timeout: Option<Nanos>,
    /// `HOP.deadline`: which deadline is sent.
    pub deadline: DeadlineMode,
    /// `HOP.margin`: subtracted from the deadline sent.
    pub margin: Nanos,
    /// `HOP.cancel`: cancel abandoned attempts.
    pub cancel: bool,
}

impl Hop {
    /// The as-shipped hop: `attempts` attempts with `timeout`, retried at once on anything.
    pub fn as_shipped(attempts: u32, timeout: Nanos) -> Hop {
        Hop {
            retry: RetryPolicyConfig {
                max_attempts: attempts,
                retry_timeouts: true,
                retry_connection_errors: true,
                retry_other_transient: true,
                retry_throttled: true,
                backoff: AT_ONCE,
                ..RetryPolicyConfig::default()
            },
            overloaded_is_transient: true,
            attempt_timeout: Some(timeout),
            deadline: DeadlineMode::None,
            margin: Nanos::ZERO,
            cancel: false,
        }
    }

    /// Retry ordinary errors (connection errors, other transient errors, throttling) or not.
    pub fn retry_errors(&mut self, on: bool) {
        self.retry.retry_connection_errors = on;
        self.retry.retry_other_transient = on;
        self.retry.retry_throttled = on;
    }
}

/// An operator action at a fixed time (docs/basketly.md, "Operators and zones").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpsAction {
    /// Refuse new arrivals at shop-api that would have to wait behind a queue.
    Shed,
    /// Drop everything queued in shop-api at once.
    Flush,
}

/// The whole Basketly setup. Field docs give the override key.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The preset this started from (not overridable).
    pub name: String,
    /// `start`: first instant simulated (default 19:59:45).
    pub start: Nanos,
    /// `until`: end of the run.
    pub until: Nanos,
    /// `lb`: how apps spread attempts over shop-api instances (`random` | `round_robin`).
    pub balance: Balance,
    /// `rate.product`: product pages per second.
    pub rate_product: f64,
    /// `rate.cart`: cart views per second.
    pub rate_cart: f64,
    /// `rate.checkout`: checkouts per second.
    pub rate_checkout: f64,
    /// `shopapi.instances`.
    pub shopapi_instances: u32,
    /// `shopapi.threads`: threads per instance.
    pub shopapi_threads: u32,
    /// `shopapi.work_ms`: thread time of every request before its stock call.
    pub shopapi_work: Nanos,
    /// `shopapi.work_dist`: `const` | `exp`.
    pub shopapi_work_exp: bool,
    /// `shopapi.deadline_check`: drop requests whose deadline passed when they reach a thread.
    pub shopapi_deadline_check: bool,
    /// `stock.workers`.
    pub stock_workers: u32,
    /// `stock.deadline_check`: drop calls whose deadline passed when they reach a worker.
    pub stock_deadline_check: bool,
    /// `stock.stall_p`: probability a stock call stalls (Replay H).
    pub stock_stall_p: f64,
    /// `stock.stall_ms`: how long a stall holds the worker.
    pub stock_stall: Nanos,
    /// `db.connections`.
    pub db_connections: u32,
    /// `db.query_ms`: mean query time (exponential) when healthy.
    pub db_query: Nanos,
    /// `db.deadline`: drop expired queries at dequeue and cut running ones at their deadline
    /// (a statement timeout).
    pub db_deadline: bool,
    /// `hiccup`: on | off.
    pub hiccup: bool,
    /// `hiccup.start`.
    pub hiccup_start: Nanos,
    /// `hiccup.end`.
    pub hiccup_end: Nanos,
    /// `hiccup.factor`: query times are multiplied by this during the hiccup.
    pub hiccup_factor: f64,
    /// `app.*`: the app's calls to shop-api.
    pub app: Hop,
    /// `stock_call.*`: shop-api's calls to stock.
    pub stock_call: Hop,
    /// `db_call.*`: stock's calls to its database.
    pub db_call: Hop,
    /// `stock_call.idempotency_key`: reserves carry an idempotency key.
    pub idempotency_key: bool,
    /// `stock_call.reply_503`: when shop-api gives up on stock it answers the app
    /// "overloaded, don't retry" (one retry layer).
    pub reply_overloaded: bool,
    /// `stock_call.breaker_ignores_overloaded`: stock's 503s are not breaker failures.
    pub breaker_ignores_overloaded: bool,
    /// `budget`: on | off.
    pub budget_on: bool,
    /// `budget.<field>`: the retry budget per shop-api instance (a token bucket).
    pub budget: TokenBudgetConfig,
    /// `admission`: on | off.
    pub admission_on: bool,
    /// `admission.<field>`: stock's door (`limits[0]` reserves, `limits[1]` and below
    /// views; `admission.limit` an adaptive limit on top).
    pub admission: AdmissionConfig,
    /// `codel`: on | off.
    pub codel_on: bool,
    /// `codel.<field>`: the database connection queue's discipline.
    pub codel: QueueDisciplineConfig,
    /// `breaker`: on | off.
    pub breaker_on: bool,
    /// `breaker.<field>`: the breaker per shop-api instance and stock operation.
    pub breaker: CircuitBreakerConfig,
    /// `bulkhead`: on | off.
    pub bulkhead_on: bool,
    /// `bulkhead.<field>`: the gate per shop-api instance, shared by both stock operations.
    pub bulkhead: BulkheadConfig,
    /// `bulkhead.limit`: the gate is a limiter with this (adaptive) limit instead of the
    /// bulkhead's fixed cap (`none`: the bulkhead).
    pub bulkhead_limit: Option<LimitConfig>,
    /// `brownout`: on | off (cart views without stock badges when stock.view fails).
    pub brownout: bool,
    /// `hedge`: on | off.
    pub hedge_on: bool,
    /// `hedge.<field>`: hedging of stock views.
    pub hedge: HedgingConfig,
    /// `scale.at`, `scale.instances`: scale shop-api at a time (Replay A). `scale=off` removes it.
    pub scale: Option<(Nanos, u32)>,
    /// `scale.lb_delay_ms`: the instances the scale adds start (and join the fleet) at
    /// `scale.at` but get calls from the load balancer only this long after (default 0).
    pub scale_lb_delay: Nanos,
    /// `fleet`, `fleet.*`: fleet guards on shop-api ([`Fleet`]).
    pub fleet: Fleet,
    /// `ops.action` (`none` | `shed` | `flush`), `ops.at`: an operator action on shop-api.
    pub ops: Option<(Nanos, OpsAction)>,
    /// `agents`, `agents.reads`, `agents.period_s`, `agents.offsets` (`aligned` | `stable`),
    /// `agents.capacity`: Replay P's periodic readers against spare read capacity.
    pub agents: Option<Agents>,
    /// `burst.*`: C3's burst of failing cart views (docs/basketly.md, "C3: jitter").
    pub burst: Option<Burst>,
    /// `interval_ms`: output interval (at least [`MIN_INTERVAL`], 1 ms).
    pub interval: Nanos,
    /// `max_memory_mb`, `max_events`: where the run stops early (see [`Limits`]).
    pub limits: Limits,
    /// Changes of settings during the run, in time order ([`Config::at`]).
    pub timeline: Vec<Change>,
    /// `trace.at`, `trace.entry`, `trace.count`: single actions to trace (see
    /// [`crate::trace`]); `trace=off` removes it.
    pub trace: Option<TraceSpec>,
}

/// A change of settings at an instant during a run: "at 20:00:10 switch the breakers on".
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// When (virtual time of day).
    pub at: Nanos,
    /// `key=value` overrides applied, in order, on top of the settings then in force.
    pub set: Vec<(String, String)>,
}

/// Keys a change during the run may not use: they fix the run itself or the shape of
/// the system (set them from the start instead).
const FIXED_KEYS: &[&str] = &[
    "start",
    "until",
    "interval_ms",
    "max_memory_mb",
    "max_events",
    "scale",
    "ops",
    "agents",
    "burst",
    "trace",
    "fleet",
];

/// Fleet guards on shop-api (docs/basketly.md, "Fleet guards"): its instances share a
/// fleet-wide allowance of the stock bulkhead and of the retry budget's burst, sized by
/// guards-core's fleet arithmetic at each instance's own syncs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fleet {
    /// `fleet`: `on` measures the fleet-wide stock calls in flight and retry tokens
    /// without resizing anything; `off` removes the fleet (and its allowances).
    pub on: bool,
    /// `fleet.stock`: fleet-wide allowance of the per-instance stock bulkhead (`off`: none).
    pub stock: Option<u64>,
    /// `fleet.retry_burst`: fleet-wide burst of the per-instance token bucket, in whole
    /// tokens (`off`: none).
    pub retry_burst: Option<u64>,
    /// `fleet.sync_interval_ms`: how often each instance syncs (default 250 ms).
    pub sync_interval: Nanos,
    /// `fleet.ttl_ms`: how long a record lives after its write (`None`, the default: 3 ×
    /// the interval; at least 2 × the interval).
    pub ttl: Option<Nanos>,
}

impl Default for Fleet {
    fn default() -> Self {
        Fleet {
            on: false,
            stock: None,
            retry_burst: None,
            sync_interval: crate::topology::FleetSpec::DEFAULT_SYNC_INTERVAL,
            ttl: None,
        }
    }
}

/// Replay P's periodic agents.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Agents {
    /// Number of agents.
    pub agents: u32,
    /// Reads per agent per period.
    pub reads: u32,
    /// The period.
    pub period: Nanos,
    /// Where each agent starts within the period.
    pub offsets: Offsets,
    /// Reads per second the database has to spare.
    pub capacity: f64,
}

/// C3's burst (docs/basketly.md): `count` cart views fail at the same instant and retry once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burst {
    /// When they fail.
    pub at: Nanos,
    /// How many.
    pub count: u32,
}

/// Every preset name, in the order docs/basketly.md lists them.
pub const PRESETS: &[&str] = &[
    "healthy",
    "C0",
    "C1",
    "C2",
    "C3",
    "C4",
    "C5",
    "C6",
    "C7",
    "C8",
    "10z",
    "10z-cancel",
    "13a",
    "15t",
    "17x",
    "17y",
    "A-C0",
    "A-C7",
    "A-C7-fleet",
    "A-C7-fleet-lb",
    "13a-fleet",
    "H-none",
    "H-retry",
    "H-hedge",
    "P-sync",
    "P-offset",
    "cap40",
    "cap60",
    "C5-cap12",
    "bvb-budget",
    "bvb-breaker",
    "bvb-breaker-no503",
    "bvb-bulkhead",
    "AZ",
    "AZ-halved",
    "ops-shed",
    "ops-flush",
    "jitter-fixed",
    "jitter-full",
    "live-C0",
    "live-C1",
    "live-C2",
    "live-C3",
    "live-C4",
    "live-C5",
    "live-C6",
    "live-C7",
    "live-C8",
];

/// Every preset with a one-line description (docs/basketly.md tells the story).
pub const PRESET_INFO: &[(&str, &str)] = &[
    ("healthy", "C0 without the hiccup, 20:00:00-20:01:00: the healthy latencies and load"),
    ("C0", "as shipped: 3 attempts at every layer retried at once, 2 s / 1 s / 5 s timeouts, no deadlines or cancels, FIFO queues"),
    ("C1", "C0 + 60 ms attempts to stock, each attempt's deadline sent and checked at every queue, cancels, statement timeout"),
    ("C2", "C1 + one retry layer: shop-api retries stock once, a 503 is not retried, the app retries only a missing answer, reserves keyed"),
    ("C3", "C2 + full-jitter backoff: base 25 ms in shop-api, 1 s in the app"),
    ("C4", "C3 + a retry budget per shop-api instance: 10 tokens, +0.1 per first attempt, 1 per retry"),
    ("C5", "C4 + stock protects itself: admission 64 views / 80 reserves, CoDel (100 ms standing, 5 ms), adaptive LIFO, reserves first"),
    ("C6", "C5 + a breaker per shop-api instance and stock operation: last 20, >= 50 % failed, open 5 s, 3 probes of 100 ms"),
    ("C7", "C6 + a bulkhead of 12 stock calls per shop-api instance, after the breakers"),
    ("C8", "C7 + brownout: a cart view whose stock call fails is served without stock badges"),
    ("10z", "C1 but each hop sends the whole time left and the cancel to stock is lost"),
    ("10z-cancel", "10z with the cancel working (only the whole time left is sent)"),
    ("13a", "C4 with 8 shop-api instances instead of 4"),
    ("15t", "C6 with a 10 s time window in the breakers instead of the last 20 calls"),
    ("17x", "C5's stock guards behind C0's callers, who retry everything at once, 503s included"),
    ("17y", "C0 with no retries anywhere (one attempt at every layer), to 20:01:30"),
    ("A-C0", "C0, and shop-api scales from 4 to 8 instances at 20:00:10"),
    ("A-C7", "C7, and shop-api scales from 4 to 8 instances at 20:00:10"),
    ("A-C7-fleet", "A-C7 with fleet guards: the stock bulkhead is a fleet-wide allowance of 48 calls shared by the live instances (fleet.stock=48)"),
    ("A-C7-fleet-lb", "A-C7-fleet with the new instances in the load balancer 2 s after they start (scale.lb_delay_ms=2000)"),
    ("13a-fleet", "13a with fleet guards: the retry budget's burst is a fleet-wide 40 tokens shared by the 8 instances (fleet.retry_burst=40)"),
    ("H-none", "a healthy database, 1 % of stock calls stall 250 ms, no timeout (60 s)"),
    ("H-retry", "H-none with a 60 ms timeout and one retry, deadlines and cancels"),
    ("H-hedge", "H-none with a hedge after the tracked P95, paid from the retry budget, loser cancelled"),
    ("P-sync", "200 agents re-read 50 stock counts every 60 s, all at :00, against 740 spare reads a second"),
    ("P-offset", "the same agents, each at its stable hashed offset in the minute"),
    ("cap40", "C0 with a bulkhead of 40 stock calls per shop-api instance"),
    ("cap60", "C0 with a bulkhead of 60 stock calls per shop-api instance"),
    ("C5-cap12", "C5 with one cap of 12 stock calls per instance shared by views and reserves, no breakers"),
    ("bvb-budget", "breaker vs budget (a): C5 + brownout, no breaker, no bulkhead"),
    ("bvb-breaker", "breaker vs budget (b): C6 + brownout, no bulkhead"),
    ("bvb-breaker-no503", "breaker vs budget (b'): as (b), stock's 503s are not breaker failures"),
    ("bvb-bulkhead", "breaker vs budget (d): C5 + brownout + bulkhead, no breakers"),
    ("AZ", "C8 after losing an Availability Zone: 64 stock workers instead of 128"),
    ("AZ-halved", "AZ with the admission limits halved too: 32 views / 40 reserves"),
    ("ops-shed", "C0 to 20:04:00; at 20:02:00 shop-api refuses every new arrival that would wait"),
    ("ops-flush", "C0 to 20:04:00; at 20:02:00 shop-api drops its whole queue"),
    ("jitter-fixed", "1,200 cart views fail at 20:00:20.000 and retry after a fixed 1 s (10 ms intervals)"),
    ("jitter-full", "the same 1,200 retry after full jitter over 0-1 s"),
    ("live-C0", "C0 scaled for the live testbed (docs/live.md): rates and pools / 4 (1 shop-api of 100 threads, 32 stock workers, 2 connections, admission 16/20), from 19:59:55"),
    ("live-C1", "C1 scaled for the live testbed (docs/live.md): rates and pools / 4 (1 shop-api of 100 threads, 32 stock workers, 2 connections, admission 16/20), from 19:59:55"),
    ("live-C2", "C2 scaled for the live testbed (docs/live.md): rates and pools / 4 (1 shop-api of 100 threads, 32 stock workers, 2 connections, admission 16/20), from 19:59:55"),
    ("live-C3", "C3 scaled for the live testbed (docs/live.md): rates and pools / 4 (1 shop-api of 100 threads, 32 stock workers, 2 connections, admission 16/20), from 19:59:55"),
    ("live-C4", "C4 scaled for the live testbed (docs/live.md): rates and pools / 4 (1 shop-api of 100 threads, 32 stock workers, 2 connections, admission 16/20), from 19:59:55"),
    ("live-C5", "C5 scaled for the live testbed (docs/live.md): rates and pools / 4 (1 shop-api of 100 threads, 32 stock workers, 2 connections, admission 16/20), from 19:59:55"),
    ("live-C6", "C6 scaled for the live testbed (docs/live.md): rates and pools / 4 (1 shop-api of 100 threads, 32 stock workers, 2 connections, admission 16/20), from 19:59:55"),
    ("live-C7", "C7 scaled for the live testbed (docs/live.md): rates and pools / 4 (1 shop-api of 100 threads, 32 stock workers, 2 connections, admission 16/20), from 19:59:55"),
    ("live-C8", "C8 scaled for the live testbed (docs/live.md): rates and pools / 4 (1 shop-api of 100 threads, 32 stock workers, 2 connections, admission 16/20), from 19:59:55"),
];

/// Each guard of the C line as overrides that switch it on alone, on top of C0: the
/// "each guard alone" comparison switches each one on from the start (does it prevent
/// the outage?) or during the run with [`Config::at`] (does it end it?).
pub const GUARDS: &[(&str, &str, &[&str])] = &[
    (
        "timeouts",
        "C1: 60 ms attempts to stock, each attempt's deadline sent and checked at every queue, cancels",
        &[
            "app.deadline=attempt",
            "app.cancel=on",
            "stock_call.attempt_timeout=60ms",
            "stock_call.deadline=attempt",
            "stock_call.cancel=on",
            "db_call.deadline=attempt",
            "db_call.cancel=on",
            "shopapi.deadline_check=on",
            "stock.deadline_check=on",
            "db.deadline=on",
        ],
    ),
    (
        "one-retry-layer",
        "C2: only shop-api retries stock (once), no retry of a 503, the app retries only a missing answer",
        &[
            "app.retry.max_attempts=2",
            "app.retry.retry_connection_errors=off",
            "app.retry.retry_other_transient=off",
            "app.retry.retry_throttled=off",
            "app.overloaded_is_transient=off",
            "stock_call.retry.max_attempts=2",
            "stock_call.overloaded_is_transient=off",
            "db_call.retry.max_attempts=1",
            "stock_call.idempotency_key=on",
            "stock_call.reply_503=on",
        ],
    ),
    (
        "jitter",
        "C3: full-jitter backoff, base 25 ms in shop-api and 1 s in the app",
        &[
            "stock_call.retry.backoff.jitter=full",
            "stock_call.retry.backoff.base=25ms",
            "stock_call.retry.backoff.cap=1s",
            "stock_call.retry.backoff.multiplier=2",
            "app.retry.backoff.jitter=full",
            "app.retry.backoff.base=1s",
            "app.retry.backoff.cap=20s",
            "app.retry.backoff.multiplier=2",
        ],
    ),
    (
        "budget",
        "C4: a retry budget per shop-api instance",
        &["budget=on"],
    ),
    (
        "stock-protects-itself",
        "C5: admission limits, CoDel age limit, adaptive LIFO and priority at stock",
        &["admission=on", "codel=on"],
    ),
    (
        "breakers",
        "C6: a breaker per shop-api instance and stock operation",
        &["breaker=on"],
    ),
    (
        "bulkhead",
        "C7: 12 stock calls per shop-api instance",
        &["bulkhead=on"],
    ),
    (
        "brownout",
        "C8: cart views without stock badges when stock fails",
        &["brownout=on"],
    ),
];

/// The override keys that are not fields of a guard's config, with a description.
const MODEL_KEYS: &[(&str, &str)] = &[
    ("start", "first instant simulated, HH:MM:SS[.fff]"),
    ("until", "end of the run, HH:MM:SS[.fff]"),
    ("interval_ms", "output interval in ms (at least 1)"),
    (
        "max_memory_mb",
        "stop the run, keeping what it computed, once it holds this many MB (default 1024)",
    ),
    (
        "max_events",
        "stop the run, keeping what it computed, after this many events (or none, the default)",
    ),
    (
        "lb",
        "random | round_robin: how apps pick a shop-api instance",
    ),
    ("rate.product", "product pages per second"),
    ("rate.cart", "cart views per second"),
    ("rate.checkout", "checkouts per second"),
    ("shopapi.instances", "shop-api instances"),
    ("shopapi.threads", "threads per shop-api instance"),
    ("shopapi.work_ms", "shop-api thread time per request, ms"),
    ("shopapi.work_dist", "const | exp"),
    (
        "shopapi.deadline_check",
        "drop expired requests at dequeue (bool)",
    ),
    ("stock.workers", "stock workers"),
    (
        "stock.deadline_check",
        "drop expired calls at dequeue (bool)",
    ),
    ("stock.stall_p", "probability a stock call stalls"),
    ("stock.stall_ms", "stall length, ms"),
    ("db.connections", "database connections"),
    ("db.query_ms", "mean healthy query time, ms (exponential)"),
    (
        "db.deadline",
        "drop expired queries and cut them at the deadline (bool)",
    ),
    ("hiccup", "on | off"),
    ("hiccup.start", "HH:MM:SS[.fff]"),
    ("hiccup.end", "HH:MM:SS[.fff]"),
    ("hiccup.factor", "query time multiplier during the hiccup"),
];

/// The keys of each hop (`HOP.` is `app.`, `stock_call.` or `db_call.`) that are not
/// fields of its retry policy.
const HOP_KEYS: &[(&str, &str)] = &[
    (
        "HOP.attempt_timeout",
        "HOP is app, stock_call or db_call: per-attempt timeout (duration: \"60ms\", seconds, or none)",
    ),
    ("HOP.deadline", "none | attempt | whole: the deadline sent"),
    ("HOP.margin", "margin subtracted from the deadline sent (duration: \"1ms\" or seconds)"),
    ("HOP.cancel", "cancel abandoned attempts (bool)"),
    (
        "HOP.overloaded_is_transient",
        "the caller retries a 503 like any transient error (bool; as shipped: on)",
    ),
    ("stock_call.idempotency_key", "reserves carry an idempotency key (bool)"),
    (
        "stock_call.reply_503",
        "shop-api answers 503 don't-retry when it gives up (bool)",
    ),
    (
        "stock_call.breaker_ignores_overloaded",
        "stock's 503s are not breaker failures (bool)",
    ),
];

/// Keys for the parts of the run beside the model: operator actions, replays, traces.
const RUN_KEYS: &[(&str, &str)] = &[
    ("scale", "off: no scaling event"),
    ("scale.at", "when shop-api scales, HH:MM:SS"),
    ("scale.instances", "shop-api instances after scaling"),
    (
        "scale.lb_delay_ms",
        "ms from scale.at until the load balancer sends calls to the new instances (they start and join the fleet at scale.at; default 0)",
    ),
    (
        "fleet",
        "on | off: on measures fleet-wide stock calls in flight and retry tokens (summary fleet, fleet.* columns) without resizing; off removes the fleet",
    ),
    (
        "fleet.stock",
        "fleet-wide allowance of shop-api's stock bulkhead, shared by the live instances (integer >= 1, or off)",
    ),
    (
        "fleet.retry_burst",
        "fleet-wide burst of shop-api's retry token buckets in tokens, shared by the live instances (integer >= 1, or off)",
    ),
    (
        "fleet.sync_interval_ms",
        "how often each shop-api instance syncs its fleet record, ms (10..=60000, default 250)",
    ),
    (
        "fleet.ttl_ms",
        "how long a fleet record lives without a sync, ms (at least 2 x the interval, at most 600000; default 3 x the interval)",
    ),
    (
        "ops.action",
        "none | shed | flush: operator action on shop-api",
    ),
    ("ops.at", "when, HH:MM:SS"),
    ("agents", "on | off: Replay P's periodic readers"),
    ("agents.count", "number of agents"),
    ("agents.reads", "reads per agent per period"),
    ("agents.period_s", "period, s"),
    ("agents.offsets", "aligned | stable"),
    ("agents.capacity", "spare reads per second"),
    (
        "burst",
        "on | off: the jitter rows' burst of failing cart views",
    ),
    ("burst.at", "HH:MM:SS[.fff]"),
    ("burst.count", "number of cart views"),
    (
        "trace.at",
        "trace the actions that start at or after HH:MM:SS[.fff] (every event of each)",
    ),
    (
        "trace.entry",
        "product | cart | checkout | any: which actions to trace",
    ),
    ("trace.count", "how many actions to trace (default 1)"),
    ("trace", "off: trace nothing"),
];

/// The guards whose config is a schema's, with their key prefix and on/off switch.
const GUARD_SWITCHES: &[(&str, &str)] = &[
    ("budget", "on | off: retry budget per shop-api instance"),
    ("admission", "on | off: stock's admission limits"),
    (
        "codel",
        "on | off: queue discipline at the database connection queue",
    ),
    (
        "breaker",
        "on | off: breaker per shop-api instance and stock operation",
    ),
    (
        "bulkhead",
        "on | off: gate per shop-api instance for stock calls",
    ),
    (
        "brownout",
        "on | off: cart views without badges when stock.view fails",
    ),
    ("hedge", "on | off: hedge stock views"),
];

/// How a unit's values are written in an override.
fn unit_text(unit: Unit) -> String {
    match unit {
        Unit::Duration => "duration: \"60ms\", \"5s\" or seconds".into(),
        Unit::Count => "integer".into(),
        Unit::Ratio => "number".into(),
        Unit::Bool => "on | off".into(),
        Unit::Enum(names) => names.join(" | "),
        Unit::Flags(names) => format!("bits of {}", names.join(", ")),
    }
}

fn schema_keys<C: Copy>(out: &mut Vec<(String, String)>, prefix: &str, schema: &Schema<C>) {
    for f in schema.fields {
        out.push((
            format!("{prefix}.{}", f.name),
            format!("{} ({}; {})", f.doc, unit_text(f.unit), f.expected),
        ));
    }
}

type FieldInfo = (&'static str, &'static str, Unit, &'static str);

fn fields_of<C>(s: &'static Schema<C>) -> Vec<FieldInfo> {
    s.fields
        .iter()
        .map(|f| (f.name, f.doc, f.unit, f.expected))
        .collect()
}

/// The fields of the adaptive limits, each with the algorithms that have it.
fn limit_keys(out: &mut Vec<(String, String)>, prefix: &str, what: &str) {
    out.push((
        prefix.to_string(),
        format!(
            "{what}: an integer (fixed), aimd | vegas | gradient (that algorithm's defaults), or none"
        ),
    ));
    let mut seen: Vec<(&str, String, Vec<&str>)> = Vec::new();
    let mut add = |algo: &'static str, fields: &[FieldInfo]| {
        for (name, doc, unit, expected) in fields {
            match seen.iter_mut().find(|(n, _, _)| n == name) {
                Some((_, _, algos)) => algos.push(algo),
                None => seen.push((
                    name,
                    format!("{doc} ({}; {expected})", unit_text(*unit)),
                    vec![algo],
                )),
            }
        }
    };
    add("aimd", &fields_of(&schema::AIMD));
    add("vegas", &fields_of(&schema::VEGAS));
    add("gradient", &fields_of(&schema::GRADIENT));
    for (name, doc, algos) in seen {
        out.push((
            format!("{prefix}.{name}"),
            format!("{} [{}]", doc, algos.join(", ")),
        ));
    }
}

static KEYS: LazyLock<Vec<(String, String)>> = LazyLock::new(|| {
    let mut out: Vec<(String, String)> = MODEL_KEYS
        .iter()
        .map(|(k, d)| ((*k).to_string(), (*d).to_string()))
        .collect();
    schema_keys(&mut out, "HOP.retry", &schema::RETRY_POLICY);
    if let Some(first) = out.iter_mut().find(|(k, _)| k.starts_with("HOP.retry.")) {
        first.1 = format!("HOP is app, stock_call or db_call: {}", first.1);
    }
    out.extend(
        HOP_KEYS
            .iter()
            .map(|(k, d)| ((*k).to_string(), (*d).to_string())),
    );
    for (name, doc) in GUARD_SWITCHES {
        out.push(((*name).to_string(), (*doc).to_string()));
        match *name {
            "budget" => schema_keys(&mut out, name, &schema::TOKEN_BUDGET),
            "admission" => {
                schema_keys(&mut out, name, &schema::ADMISSION);
                limit_keys(
                    &mut out,
                    "admission.limit",
                    "an adaptive limit on the calls inside stock",
                );
            }
            "codel" => schema_keys(&mut out, name, &schema::QUEUE_DISCIPLINE),
            "breaker" => schema_keys(&mut out, name, &schema::CIRCUIT_BREAKER),
            "bulkhead" => {
                schema_keys(&mut out, name, &schema::BULKHEAD);
                limit_keys(
                    &mut out,
                    "bulkhead.limit",
                    "make the gate a limiter with this limit instead of the fixed cap",
                );
            }
            "hedge" => schema_keys(&mut out, name, &schema::HEDGING),
            _ => {}
        }
    }
    out.extend(
        RUN_KEYS
            .iter()
            .map(|(k, d)| ((*k).to_string(), (*d).to_string())),
    );
    out
});

/// Every override key with a one-line description: the model's own keys, and one key per
/// field of each guard's config, generated from guards-ffi's schema (`breaker.window_size`,
/// `HOP.retry.backoff.base`, ...). `HOP.` stands for `app.`, `stock_call.` and `db_call.`.
pub fn keys() -> &'static [(String, String)] {
    &KEYS
}

const fn ms(x: u64) -> Nanos {
    Nanos::from_millis(x)
}

impl Config {
    /// The as-shipped setting C0 (the base of every preset).
    pub fn c0() -> Config {
        Config {
            name: "C0".into(),
            start: clock::hms(19, 59, 45),
            until: clock::hms(20, 0, 30),
            balance: Balance::Random,
            rate_product: 800.0,
            rate_cart: 1200.0,
            rate_checkout: 60.0,
            shopapi_instances: 4,
            shopapi_threads: 100,
            shopapi_work: ms(10),
            shopapi_work_exp: false,
            shopapi_deadline_check: false,
            stock_workers: 128,
            stock_deadline_check: false,
            stock_stall_p: 0.0,
            stock_stall: ms(250),
            db_connections: 8,
            db_query: ms(4),
            db_deadline: false,
            hiccup: true,
            hiccup_start: clock::hms(20, 0, 0),
            hiccup_end: clock::hms(20, 0, 20),
            hiccup_factor: 10.0,
            app: Hop::as_shipped(3, Nanos::from_secs(2)),
            stock_call: Hop::as_shipped(3, Nanos::from_secs(1)),
            db_call: {
                let mut h = Hop::as_shipped(3, Nanos::from_secs(5));
                h.retry_errors(false);
                h.overloaded_is_transient = false;
                h
            },
            idempotency_key: false,
            reply_overloaded: false,
            breaker_ignores_overloaded: false,
            budget_on: false,
            // C4: 10 tokens, +0.1 per first attempt (the schema's defaults).
            budget: schema::TOKEN_BUDGET.defaults(),
            admission_on: false,
            // C5: reserves (level 0) refused at 80 calls inside, views at 64.
            admission: AdmissionConfig {
                limits: [80, 64, 64, 64, 64, 64, 64, 64],
                ..schema::ADMISSION.defaults()
            },
            codel_on: false,
            // C5: standing after 100 ms, drop waits over 5 ms, newest first while
            // standing, reserves first; room for 1,024 waiters.
            codel: QueueDisciplineConfig {
                capacity: 1024,
                interval: ms(100),
                target: ms(5),
                codel: true,
                lifo: true,
                priority: true,
            },
            breaker_on: false,
            // C6: the last 20 calls, open at 50 % failed for 5 s, 3 probes of 100 ms.
            breaker: CircuitBreakerConfig {
                window_kind: WindowKind::Count,
                window_size: 20,
                failure_rate_threshold: 0.5,
                minimum_calls: 20,
                open_duration: Nanos::from_secs(5),
                half_open_probes: 3,
                probe_timeout: ms(100),
                ..schema::CIRCUIT_BREAKER.defaults()
            },
            bulkhead_on: false,
            // C7: 12 stock calls per shop-api instance.
            bulkhead: BulkheadConfig { max_concurrent: 12 },
            bulkhead_limit: None,
            brownout: false,
            hedge_on: false,
            // Replay H: hedge after the tracked P95, at most one hedge, never before 1 ms.
            hedge: HedgingConfig {
                delay_quantile: 0.95,
                min_delay: ms(1),
                max_hedges: 1,
                ..schema::HEDGING.defaults()
            },
            scale: None,
            scale_lb_delay: Nanos::ZERO,
            fleet: Fleet::default(),
            ops: None,
            agents: None,
            burst: None,
            interval: Nanos::from_secs(1),
            limits: Limits::default(),
            timeline: Vec::new(),
            trace: None,
        }
    }

    /// The preset `name` (one of [`PRESETS`]).
    pub fn preset(name: &str) -> Result<Config, SimError> {
        let mut c = match name {
            "C0" => Config::c0(),
            "C1" => Self::c_line(1),
            "C2" => Self::c_line(2),
            "C3" => Self::c_line(3),
            "C4" => Self::c_line(4),
            "C5" => Self::c_line(5),
            "C6" => Self::c_line(6),
            "C7" => Self::c_line(7),
            "C8" => Self::c_line(8),
            "healthy" => {
                let mut c = Config::c0();
                c.hiccup = false;
                c.start = clock::hms(20, 0, 0);
                c.until = clock::hms(20, 1, 0);
                c
            }
            "10z" => {
                let mut c = Self::c_line(1);
                c.stock_call.deadline = DeadlineMode::WholeLeft;
                c.db_call.deadline = DeadlineMode::WholeLeft;
                c.stock_call.cancel = false;
                c
            }
            "10z-cancel" => {
                let mut c = Self::c_line(1);
                c.stock_call.deadline = DeadlineMode::WholeLeft;
                c.db_call.deadline = DeadlineMode::WholeLeft;
                c
            }
            "13a" => {
                let mut c = Self::c_line(4);
                c.shopapi_instances = 8;
                c
            }
            "15t" => {
                let mut c = Self::c_line(6);
                c.breaker.window_kind = WindowKind::Time;
                c.breaker.window_duration = Nanos::from_secs(10);
                c.breaker.window_buckets = 10;
                c.breaker.minimum_calls = 1;
                c
            }
            "17x" => {
                let mut c = Config::c0();
                c.admission_on = true;
                c.codel_on = true;
                c
            }
            "17y" => {
                let mut c = Config::c0();
                c.app.retry.max_attempts = 1;
                c.stock_call.retry.max_attempts = 1;
                c.db_call.retry.max_attempts = 1;
                c.until = clock::hms(20, 1, 30);
                c
            }
            "A-C0" => {
                let mut c = Config::c0();
                c.scale = Some((clock::hms(20, 0, 10), 8));
                c
            }
            "A-C7" | "A-C7-fleet" | "A-C7-fleet-lb" => {
                let mut c = Self::c_line(7);
                c.scale = Some((clock::hms(20, 0, 10), 8));
                if name != "A-C7" {
                    c.fleet.stock = Some(48);
                }
                if name == "A-C7-fleet-lb" {
                    c.scale_lb_delay = Nanos::from_secs(2);
                }
                c
            }
            "13a-fleet" => {
                let mut c = Self::c_line(4);
                c.shopapi_instances = 8;
                c.fleet.retry_burst = Some(40);
                c
            }
            "H-none" | "H-retry" | "H-hedge" => {
                let mut c = Config::c0();
                c.hiccup = false;
                c.start = clock::hms(20, 0, 0);
                c.until = clock::hms(20, 1, 0);
                c.stock_stall_p = 0.01;
                c.stock_call.retry.max_attempts = 1;
                c.stock_call.attempt_timeout = None;
                if name == "H-retry" {
                    c.stock_call.retry.max_attempts = 2;
                    c.stock_call.attempt_timeout = Some(ms(60));
                    c.stock_call.deadline = DeadlineMode::Attempt;
                    c.stock_call.cancel = true;
                    c.db_call.deadline = DeadlineMode::Attempt;
                    c.db_call.cancel = true;
                    c.stock_deadline_check = true;
                    c.db_deadline = true;
                }
                if name == "H-hedge" {
                    c.stock_call.cancel = true;
                    c.db_call.cancel = true;
                    c.hedge_on = true;
                    c.budget_on = true;
                }
                c
            }
            "P-sync" | "P-offset" => {
                let mut c = Config::c0();
                c.hiccup = false;
                c.start = clock::hms(20, 0, 0);
                c.until = clock::hms(20, 3, 0);
                c.agents = Some(Agents {
                    agents: 200,
                    reads: 50,
                    period: Nanos::from_secs(60),
                    offsets: if name == "P-sync" {
                        Offsets::Aligned
                    } else {
                        Offsets::Stable
                    },
                    capacity: 740.0,
                });
                c
            }
            "cap40" | "cap60" => {
                let mut c = Config::c0();
                c.bulkhead_on = true;
                c.bulkhead.max_concurrent = if name == "cap40" { 40 } else { 60 };
                c
            }
            "C5-cap12" => {
                let mut c = Self::c_line(5);
                c.bulkhead_on = true;
                c
            }
            "bvb-budget" => {
                let mut c = Self::c_line(5);
                c.brownout = true;
                c
            }
            "bvb-breaker" => {
                let mut c = Self::c_line(6);
                c.brownout = true;
                c
            }
            "bvb-breaker-no503" => {
                let mut c = Self::c_line(6);
                c.brownout = true;
                c.breaker_ignores_overloaded = true;
                c
            }
            "bvb-bulkhead" => {
                let mut c = Self::c_line(5);
                c.brownout = true;
                c.bulkhead_on = true;
                c
            }
            "AZ" | "AZ-halved" => {
                let mut c = Self::c_line(8);
                c.stock_workers = 64;
                if name == "AZ-halved" {
                    c.admission.limits = [40, 32, 32, 32, 32, 32, 32, 32];
                }
                c
            }
            "ops-shed" | "ops-flush" => {
                let mut c = Config::c0();
                c.until = clock::hms(20, 4, 0);
                let a = if name == "ops-shed" {
                    OpsAction::Shed
                } else {
                    OpsAction::Flush
                };
                c.ops = Some((clock::hms(20, 2, 0), a));
                c
            }
            "jitter-fixed" | "jitter-full" => {
                let mut c = Self::c_line(3);
                c.rate_product = 0.0;
                c.rate_cart = 0.0;
                c.rate_checkout = 0.0;
                c.hiccup = false;
                c.start = clock::hms(20, 0, 19);
                c.until = clock::hms(20, 0, 22);
                c.interval = ms(10);
                c.app.retry.backoff.jitter = if name == "jitter-fixed" {
                    Jitter::None
                } else {
                    Jitter::Full
                };
                c.app.retry.backoff.cap = Nanos::from_secs(1);
                c.app.retry_errors(true);
                c.burst = Some(Burst {
                    at: clock::hms(20, 0, 20),
                    count: 1200,
                });
                c
            }
            live if live.starts_with("live-C") && live.len() == 7 => {
                // The live testbed's cast (docs/live.md): the C-line setting with every
                // rate and every pool divided by 4, service times unchanged. One shop-api
                // instance of 100 threads is a quarter of the fleet with each per-instance
                // guard (budget, breakers, bulkhead) exactly as in the full preset.
                let n = match live.as_bytes()[6] {
                    d @ b'0'..=b'8' => u32::from(d - b'0'),
                    _ => {
                        return Err(SimError::UnknownPreset {
                            name: name.to_string(),
                            known: PRESETS.to_vec(),
                        })
                    }
                };
                let mut c = if n == 0 {
                    Config::c0()
                } else {
                    Self::c_line(n)
                };
                c.start = clock::hms(19, 59, 55);
                c.rate_product /= 4.0;
                c.rate_cart /= 4.0;
                c.rate_checkout /= 4.0;
                c.shopapi_instances = 1;
                c.stock_workers = 32;
                c.db_connections = 2;
                c.admission.limits = [20, 16, 16, 16, 16, 16, 16, 16];
                c
            }
            _ => {
                return Err(SimError::UnknownPreset {
                    name: name.to_string(),
                    known: PRESETS.to_vec(),
                })
            }
        };
        c.name = name.to_string();
        Ok(c)
    }

    /// C`n`: C0 plus the guards of C1 to C`n` (docs/basketly.md), cumulatively.
    fn c_line(n: u32) -> Config {
        let mut c = Config::c0();
        if n >= 1 {
            // C1: timeouts from percentiles, each attempt's own deadline, cancel,
            // deadline checks at every queue, statement timeout at the database.
            c.app.deadline = DeadlineMode::Attempt;
            c.app.cancel = true;
            c.stock_call.attempt_timeout = Some(ms(60));
            c.stock_call.deadline = DeadlineMode::Attempt;
            c.stock_call.cancel = true;
            c.db_call.deadline = DeadlineMode::Attempt;
            c.db_call.cancel = true;
            c.shopapi_deadline_check = true;
            c.stock_deadline_check = true;
            c.db_deadline = true;
        }
        if n >= 2 {
            // C2: one retry layer (shop-api → stock), 503 means don't retry, the app
            // retries only when it got no answer, idempotency key on reserves.
            c.app.retry.max_attempts = 2;
            c.app.retry_errors(false);
            c.app.overloaded_is_transient = false;
            c.stock_call.retry.max_attempts = 2;
            c.stock_call.overloaded_is_transient = false;
            c.db_call.retry.max_attempts = 1;
            c.idempotency_key = true;
            c.reply_overloaded = true;
        }
        if n >= 3 {
            // C3: full jitter, base 25 ms in shop-api and 1 s in the app.
            c.stock_call.retry.backoff = BackoffConfig {
                base: ms(25),
                cap: ms(1000),
                multiplier: 2.0,
                jitter: Jitter::Full,
            };
            c.app.retry.backoff = BackoffConfig {
                base: Nanos::from_secs(1),
                cap: Nanos::from_secs(20),
                multiplier: 2.0,
                jitter: Jitter::Full,
            };
        }
        if n >= 4 {
            c.budget_on = true;
        }
        if n >= 5 {
            c.admission_on = true;
            c.codel_on = true;
        }
        if n >= 6 {
            c.breaker_on = true;
        }
        if n >= 7 {
            c.bulkhead_on = true;
        }
        if n >= 8 {
            c.brownout = true;
        }
        c
    }

    /// Add a change during the run: at `at` (`HH:MM:SS[.fff]`, after the start) apply
    /// `overrides` (`key=value`) on top of the settings then in force. Every key and value
    /// is checked now; keys that fix the run or the system's shape (`start`, `until`,
    /// `interval_ms`, `max_*`, `scale*`, `ops*`, `agents*`, `burst*`) are refused.
    /// Changes at the same instant apply in the order they were added.
    ///
    /// # Examples
    /// ```
    /// use guards_sim::basketly::{run, Config};
    /// let mut c = Config::preset("C0").unwrap();
    /// c.set("until", "20:01:00").unwrap();
    /// // The outage has begun; at 20:00:25, after the hiccup, the operator turns on
    /// // C1's timeouts and deadlines.
    /// c.at("20:00:25", &["stock_call.attempt_timeout=60ms", "shopapi.deadline_check=on"]).unwrap();
    /// assert!(c.at("20:00:30", &["until=20:02:00"]).is_err());
    /// let r = run(&c, 1).unwrap();
    /// assert_eq!(r.column("goodput").unwrap().len(), 75);
    /// ```
    pub fn at<S: AsRef<str>>(&mut self, at: &str, overrides: &[S]) -> Result<(), SimError> {
        let t = clock::parse(at)
            .ok_or_else(|| SimError::bad_value("at", at, "a clock time HH:MM:SS[.fff]"))?;
        if t < self.start {
            return Err(SimError::bad_value(
                "at",
                at,
                &format!(
                    "a time at or after the start {}",
                    clock::format_millis(self.start)
                ),
            ));
        }
        let mut set = Vec::new();
        let mut probe = self.settings_at(t);
        for o in overrides {
            let o = o.as_ref();
            let (k, v) = o.split_once('=').ok_or_else(|| SimError::BadOverride {
                text: o.to_string(),
            })?;
            let (k, v) = (k.trim(), v.trim());
            let head = k.split('.').next().unwrap_or(k);
            if FIXED_KEYS.contains(&k) || FIXED_KEYS.contains(&head) {
                return Err(SimError::bad_value(
                    k,
                    v,
                    "a setting that may change during the run (start, until, interval_ms, \
                     max_*, scale*, ops*, agents* and burst* are set from the start)",
                ));
            }
            probe.set(k, v)?;
            set.push((k.to_string(), v.to_string()));
        }
        let i = self.timeline.partition_point(|c| c.at <= t);
        self.timeline.insert(i, Change { at: t, set });
        Ok(())
    }

    /// The settings in force at `t`: these settings with every change at or before `t`
    /// applied (the timeline itself left out).
    pub fn settings_at(&self, t: Nanos) -> Config {
        let mut c = self.clone();
        c.timeline.clear();
        for ch in self.timeline.iter().take_while(|ch| ch.at <= t) {
            for (k, v) in &ch.set {
                // Checked when the change was added.
                let _ = c.set(k, v);
            }
        }
        c
    }

    /// The preset with `overrides` (`key=value` strings) applied in order.
    pub fn with_overrides<S: AsRef<str>>(name: &str, overrides: &[S]) -> Result<Config, SimError> {
        let mut c = Config::preset(name)?;
        for o in overrides {
            let o = o.as_ref();
            let (k, v) = o.split_once('=').ok_or_else(|| SimError::BadOverride {
                text: o.to_string(),
            })?;
            c.set(k.trim(), v.trim())?;
        }
        Ok(c)
    }

    /// Every override key with a description (see [`keys`]).
    pub fn keys() -> &'static [(String, String)] {
        keys()
    }

    /// Apply one override.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SimError> {
        let v = Value { key, value };
        if let Some((hop, field)) = key.split_once('.') {
            let h = match hop {
                "app" => Some(&mut self.app),
                "stock_call" => Some(&mut self.stock_call),
                "db_call" => Some(&mut self.db_call),
                _ => None,
            };
            if let Some(h) = h {
                if let Some(f) = field.strip_prefix("retry.") {
                    return set_field(&schema::RETRY_POLICY, &mut h.retry, key, f, value);
                }
                match field {
                    "attempt_timeout" => {
                        h.attempt_timeout = if value == "none" {
                            None
                        } else {
                            Some(v.duration_positive()?)
                        }
                    }
                    "deadline" => {
                        h.deadline = match value {
                            "none" => DeadlineMode::None,
                            "attempt" => DeadlineMode::Attempt,
                            "whole" => DeadlineMode::WholeLeft,
                            _ => return Err(v.bad("none | attempt | whole")),
                        }
                    }
                    "margin" => h.margin = v.duration()?,
                    "cancel" => h.cancel = v.flag()?,
                    "overloaded_is_transient" => h.overloaded_is_transient = v.flag()?,
                    "idempotency_key" if hop == "stock_call" => self.idempotency_key = v.flag()?,
                    "reply_503" if hop == "stock_call" => self.reply_overloaded = v.flag()?,
                    "breaker_ignores_overloaded" if hop == "stock_call" => {
                        self.breaker_ignores_overloaded = v.flag()?
                    }
                    _ => return Err(unknown(key)),
                }
                return Ok(());
            }
            let limit_field = |k: &str| k.strip_prefix("limit.").map(str::to_string);
            match hop {
                "budget" => {
                    return set_field(&schema::TOKEN_BUDGET, &mut self.budget, key, field, value)
                }
                "codel" => {
                    return set_field(
                        &schema::QUEUE_DISCIPLINE,
                        &mut self.codel,
                        key,
                        field,
                        value,
                    )
                }
                "breaker" => {
                    return set_field(
                        &schema::CIRCUIT_BREAKER,
                        &mut self.breaker,
                        key,
                        field,
                        value,
                    )
                }
                "hedge" => return set_field(&schema::HEDGING, &mut self.hedge, key, field, value),
                "admission" => {
                    if field == "limit" {
                        self.admission.limit =
                            parse_limit(key, value)?.unwrap_or(LimitConfig::Fixed(u64::MAX));
                        return Ok(());
                    }
                    if let Some(f) = limit_field(field) {
                        return set_limit_field(&mut self.admission.limit, key, &f, value);
                    }
                    return set_field(&schema::ADMISSION, &mut self.admission, key, field, value);
                }
                "bulkhead" => {
                    if field == "limit" {
                        self.bulkhead_limit = parse_limit(key, value)?;
                        return Ok(());
                    }
                    if let Some(f) = limit_field(field) {
                        let l = self
                            .bulkhead_limit
                            .get_or_insert(LimitConfig::Fixed(self.bulkhead.max_concurrent));
                        return set_limit_field(l, key, &f, value);
                    }
                    return set_field(&schema::BULKHEAD, &mut self.bulkhead, key, field, value);
                }
                _ => {}
            }
        }
        match key {
            "start" => self.start = v.clock()?,
            "until" => self.until = v.clock()?,
            "interval_ms" => {
                let d = v.millis()?;
                if d < MIN_INTERVAL {
                    return Err(v.bad(
                        "at least 1 ms (shorter intervals would hold more series than model)",
                    ));
                }
                self.interval = d;
            }
            "max_memory_mb" => {
                let mb = v.float(1.0, 1e9)?;
                self.limits.max_memory = (mb * (1u64 << 20) as f64) as u64;
            }
            "max_events" => {
                self.limits.max_events = if value == "none" {
                    None
                } else {
                    match value.parse::<u64>() {
                        Ok(n) if n >= 1 => Some(n),
                        _ => return Err(v.bad("a positive integer, or none")),
                    }
                }
            }
            "lb" => {
                self.balance = match value {
                    "random" => Balance::Random,
                    "round_robin" | "rr" => Balance::RoundRobin,
                    _ => return Err(v.bad("random | round_robin")),
                }
            }
            "rate.product" => self.rate_product = v.rate()?,
            "rate.cart" => self.rate_cart = v.rate()?,
            "rate.checkout" => self.rate_checkout = v.rate()?,
            "shopapi.instances" => self.shopapi_instances = v.count(1, 10_000)?,
            "shopapi.threads" => self.shopapi_threads = v.count(1, 1_000_000)?,
            "shopapi.work_ms" => self.shopapi_work = v.millis()?,
            "shopapi.work_dist" => {
                self.shopapi_work_exp = match value {
                    "const" => false,
                    "exp" => true,
                    _ => return Err(v.bad("const | exp")),
                }
            }
            "shopapi.deadline_check" => self.shopapi_deadline_check = v.flag()?,
            "stock.workers" => self.stock_workers = v.count(1, 1_000_000)?,
            "stock.deadline_check" => self.stock_deadline_check = v.flag()?,
            "stock.stall_p" => self.stock_stall_p = v.fraction()?,
            "stock.stall_ms" => self.stock_stall = v.millis()?,
            "db.connections" => self.db_connections = v.count(1, 1_000_000)?,
            "db.query_ms" => self.db_query = v.millis()?,
            "db.deadline" => self.db_deadline = v.flag()?,
            "hiccup" => self.hiccup = v.flag()?,
            "hiccup.start" => self.hiccup_start = v.clock()?,
            "hiccup.end" => self.hiccup_end = v.clock()?,
            "hiccup.factor" => self.hiccup_factor = v.float(0.0, 1e6)?,
            "budget" => self.budget_on = v.flag()?,
            "admission" => self.admission_on = v.flag()?,
            "codel" => self.codel_on = v.flag()?,
            "breaker" => self.breaker_on = v.flag()?,
            "bulkhead" => self.bulkhead_on = v.flag()?,
            "brownout" => self.brownout = v.flag()?,
            "hedge" => self.hedge_on = v.flag()?,
            "scale" => {
                if v.flag()? {
                    self.scale.get_or_insert((clock::hms(20, 0, 10), 8));
                } else {
                    self.scale = None;
                }
            }
            "scale.at" => {
                let n = self.scale.map_or(8, |s| s.1);
                self.scale = Some((v.clock()?, n));
            }
            "scale.instances" => {
                let at = self.scale.map_or(clock::hms(20, 0, 10), |s| s.0);
                self.scale = Some((at, v.count(1, 10_000)?));
            }
            "scale.lb_delay_ms" => {
                self.scale_lb_delay = v.millis_in(0.0, 3_600_000.0)?;
            }
            "fleet" => {
                if v.flag()? {
                    self.fleet.on = true;
                } else {
                    self.fleet = Fleet::default();
                }
            }
            "fleet.stock" => {
                self.fleet.stock = v.allowance(u64::from(u32::MAX), "calls")?;
            }
            "fleet.retry_burst" => {
                self.fleet.retry_burst = v.allowance(1_000_000_000, "tokens")?;
            }
            "fleet.sync_interval_ms" => {
                self.fleet.sync_interval = v.millis_in(10.0, 60_000.0)?;
            }
            "fleet.ttl_ms" => {
                self.fleet.ttl = if value == "default" {
                    None
                } else {
                    Some(v.millis_in(1.0, 600_000.0)?)
                };
            }
            "ops.action" => {
                let at = self.ops.map_or(clock::hms(20, 2, 0), |o| o.0);
                self.ops = match value {
                    "none" => None,
                    "shed" => Some((at, OpsAction::Shed)),
                    "flush" => Some((at, OpsAction::Flush)),
                    _ => return Err(v.bad("none | shed | flush")),
                };
            }
            "ops.at" => {
                let a = self.ops.map_or(OpsAction::Flush, |o| o.1);
                self.ops = Some((v.clock()?, a));
            }
            "agents" => {
                if v.flag()? {
                    self.agents.get_or_insert(Agents {
                        agents: 200,
                        reads: 50,
                        period: Nanos::from_secs(60),
                        offsets: Offsets::Stable,
                        capacity: 740.0,
                    });
                } else {
                    self.agents = None;
                }
            }
            "agents.count" | "agents.reads" | "agents.period_s" | "agents.offsets"
            | "agents.capacity" => {
                let a = self.agents.get_or_insert(Agents {
                    agents: 200,
                    reads: 50,
                    period: Nanos::from_secs(60),
                    offsets: Offsets::Stable,
                    capacity: 740.0,
                });
                match key {
                    "agents.count" => a.agents = v.count(0, 1_000_000)?,
                    "agents.reads" => a.reads = v.count(0, 1_000_000)?,
                    "agents.period_s" => a.period = v.seconds_positive()?,
                    "agents.offsets" => {
                        a.offsets = match value {
                            "aligned" | "sync" => Offsets::Aligned,
                            "stable" => Offsets::Stable,
                            _ => return Err(v.bad("aligned | stable")),
                        }
                    }
                    _ => a.capacity = v.float(1e-3, 1e9)?,
                }
            }
            "trace" => {
                if v.flag()? {
                    self.trace.get_or_insert(TraceSpec {
                        from: self.start,
                        entry: None,
                        count: 1,
                    });
                } else {
                    self.trace = None;
                }
            }
            "trace.at" | "trace.entry" | "trace.count" => {
                let start = self.start;
                let t = self.trace.get_or_insert(TraceSpec {
                    from: start,
                    entry: None,
                    count: 1,
                });
                match key {
                    "trace.at" => t.from = v.clock()?,
                    "trace.entry" => {
                        t.entry = match value {
                            "any" => None,
                            "product" | "cart" | "checkout" | "burst" | "agents" => {
                                Some(value.to_string())
                            }
                            _ => return Err(v.bad("product | cart | checkout | any")),
                        }
                    }
                    _ => t.count = v.count(1, MAX_TRACES)?,
                }
            }
            "burst" => {
                if v.flag()? {
                    self.burst.get_or_insert(Burst {
                        at: clock::hms(20, 0, 20),
                        count: 1200,
                    });
                } else {
                    self.burst = None;
                }
            }
            "burst.at" | "burst.count" => {
                let b = self.burst.get_or_insert(Burst {
                    at: clock::hms(20, 0, 20),
                    count: 1200,
                });
                if key == "burst.at" {
                    b.at = v.clock()?;
                } else {
                    b.count = v.count(0, 10_000_000)?;
                }
            }
            _ => return Err(unknown(key)),
        }
        Ok(())
    }
}

/// A duration override: text with a unit, or seconds.
fn duration_text(text: &str) -> Option<Nanos> {
    parse_duration(text).or_else(|| text.trim().parse::<f64>().ok().and_then(duration_from_secs))
}

/// An override's text as a value of a schema field of `unit`.
fn schema_input(unit: Unit, text: &str) -> Option<Input<'_>> {
    let t = text.trim();
    Some(match unit {
        Unit::Bool => Input::Bool(match t {
            "1" | "true" | "on" | "yes" => true,
            "0" | "false" | "off" | "no" => false,
            _ => return None,
        }),
        Unit::Duration => match parse_duration(t) {
            Some(d) => Input::Nanos(d.as_u64()),
            None => Input::Float(t.parse().ok()?),
        },
        Unit::Enum(_) => Input::Str(t),
        Unit::Count | Unit::Flags(_) => match t.parse::<i128>() {
            Ok(i) => Input::Int(i),
            Err(_) => Input::Float(t.parse().ok()?),
        },
        Unit::Ratio => Input::Float(t.parse().ok()?),
    })
}

/// Set field `field` of a guard config `c` from override `key=value`, through the schema
/// (the whole config is checked by core when the topology is built).
fn set_field<C: Copy>(
    schema: &'static Schema<C>,
    c: &mut C,
    key: &str,
    field: &str,
    value: &str,
) -> Result<(), SimError> {
    let f = schema.field(field).ok_or_else(|| unknown(key))?;
    let expected = || format!("{} ({})", f.expected, unit_text(f.unit));
    let input =
        schema_input(f.unit, value).ok_or_else(|| SimError::bad_value(key, value, &expected()))?;
    f.set(c, input, DurationUnit::Secs)
        .map_err(|e| match e.detail {
            guards::error::Detail::Config(e) => SimError::bad_value(
                key,
                value,
                &format!(
                    "{} ({}; {})",
                    f.expected,
                    unit_text(f.unit),
                    kind_text(e.kind())
                ),
            ),
            _ => SimError::bad_value(key, value, &expected()),
        })
}

/// `admission.limit` / `bulkhead.limit`: an integer (a fixed limit), an algorithm name
/// (its defaults) or `none`.
fn parse_limit(key: &str, value: &str) -> Result<Option<LimitConfig>, SimError> {
    let t = value.trim();
    if t == "none" {
        return Ok(None);
    }
    let v = match t.parse::<u64>() {
        Ok(n) => serde_json::Value::from(n),
        Err(_) => serde_json::Value::String(t.to_string()),
    };
    limit_from_value(&v)
        .map(Some)
        .map_err(|e| SimError::bad_value(key, value, &e.message))
}

/// `*.limit.<field>`: a field of the limit's algorithm.
fn set_limit_field(
    l: &mut LimitConfig,
    key: &str,
    field: &str,
    value: &str,
) -> Result<(), SimError> {
    match l {
        LimitConfig::Aimd(c) => set_field(&schema::AIMD, c, key, field, value),
        LimitConfig::Vegas(c) => set_field(&schema::VEGAS, c, key, field, value),
        LimitConfig::Gradient(c) => set_field(&schema::GRADIENT, c, key, field, value),
        LimitConfig::Fixed(_) => Err(SimError::bad_value(
            key,
            value,
            "a field of an adaptive limit: set the limit to aimd, vegas or gradient first",
        )),
    }
}

/// The config's own check by core, reported on the override key of the bad field.
pub(super) fn check<C: Copy>(
    prefix: &str,
    schema: &'static Schema<C>,
    c: &C,
) -> Result<(), SimError> {
    schema.validate(c).map_err(|f| {
        let field = match f.detail {
            guards::error::Detail::Config(e) => e.field(),
            _ => "",
        };
        let value = schema
            .field(field)
            .map(|x| match output(x.unit, x.get(c)) {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            })
            .unwrap_or_default();
        let why = match f.detail {
            guards::error::Detail::Config(e) => describe(e),
            _ => f.to_string(),
        };
        SimError::bad_value(&format!("{prefix}.{field}"), &value, &why)
    })
}

/// The limit's own check, on `prefix.limit.<field>`.
pub(super) fn check_limit(prefix: &str, l: &LimitConfig) -> Result<(), SimError> {
    l.validate().map_err(|e| {
        SimError::bad_value(&format!("{prefix}.limit.{}", e.field()), "", &describe(e))
    })
}

fn unknown(key: &str) -> SimError {
    SimError::UnknownKey {
        key: key.to_string(),
    }
}

/// A value being parsed for a key.
struct Value<'a> {
    key: &'a str,
    value: &'a str,
}

impl Value<'_> {
    fn bad(&self, expected: &str) -> SimError {
        SimError::bad_value(self.key, self.value, expected)
    }

    fn flag(&self) -> Result<bool, SimError> {
        match self.value {
            "1" | "true" | "on" | "yes" => Ok(true),
            "0" | "false" | "off" | "no" => Ok(false),
            _ => Err(self.bad("on | off (or true | false, 1 | 0)")),
        }
    }

    fn float(&self, lo: f64, hi: f64) -> Result<f64, SimError> {
        match self.value.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= lo && x <= hi => Ok(x),
            _ => Err(self.bad(&format!("a number in {lo}..={hi}"))),
        }
    }

    fn fraction(&self) -> Result<f64, SimError> {
        self.float(0.0, 1.0)
    }

    fn rate(&self) -> Result<f64, SimError> {
        self.float(0.0, 1e7)
    }

    fn count(&self, lo: u32, hi: u32) -> Result<u32, SimError> {
        match self.value.parse::<u32>() {
            Ok(x) if x >= lo && x <= hi => Ok(x),
            _ => Err(self.bad(&format!("an integer in {lo}..={hi}"))),
        }
    }

    /// Milliseconds in `lo..=hi`.
    fn millis_in(&self, lo: f64, hi: f64) -> Result<Nanos, SimError> {
        let x = self
            .float(lo, hi)
            .map_err(|_| self.bad(&format!("a number of milliseconds in {lo}..={hi}")))?;
        Nanos::from_secs_f64(x / 1e3).ok_or_else(|| self.bad("milliseconds"))
    }

    /// A fleet-wide allowance: an integer in `1..=hi`, or `off`.
    fn allowance(&self, hi: u64, what: &str) -> Result<Option<u64>, SimError> {
        if self.value == "off" || self.value == "none" {
            return Ok(None);
        }
        match self.value.parse::<u64>() {
            Ok(x) if (1..=hi).contains(&x) => Ok(Some(x)),
            _ => Err(self.bad(&format!("a number of {what} in 1..={hi}, or off"))),
        }
    }

    fn millis(&self) -> Result<Nanos, SimError> {
        let x = self.float(0.0, 1e9)?;
        Nanos::from_secs_f64(x / 1e3).ok_or_else(|| self.bad("milliseconds"))
    }

    /// A duration: `"60ms"`, `"1.5s"`, or a number of seconds.
    fn duration(&self) -> Result<Nanos, SimError> {
        duration_text(self.value)
            .ok_or_else(|| self.bad("a duration: \"60ms\", \"1.5s\" or a number of seconds"))
    }

    fn duration_positive(&self) -> Result<Nanos, SimError> {
        match self.duration()? {
            d if d.is_zero() => Err(self.bad("a positive duration (\"60ms\", seconds), or none")),
            d => Ok(d),
        }
    }

    fn seconds_positive(&self) -> Result<Nanos, SimError> {
        let x = self.float(0.0, 1e6)?;
        match Nanos::from_secs_f64(x) {
            Some(d) if !d.is_zero() => Ok(d),
            _ => Err(self.bad("a positive number of seconds")),
        }
    }

    fn clock(&self) -> Result<Nanos, SimError> {
        clock::parse(self.value).ok_or_else(|| self.bad("a clock time HH:MM:SS[.fff]"))
    }
}
