//! The Basketly settings as one flat, overridable [`Config`], and the named presets.
//!
//! Every number of the model (docs/basketly.md) is a field here; every field can be
//! changed with a `key=value` override ([`Config::set`], [`Config::keys`]). The presets
//! build the seed's settings cumulatively: C1 is C0 plus timeouts and deadlines, C2 adds
//! one retry layer, and so on up to C8; side rows and replays are copies with the changes
//! the seed lists.

use guards_core::Nanos;

use crate::error::SimError;
use crate::limits::{Limits, MIN_INTERVAL};
use crate::topology::{
    clock, Balance, BreakerSpec, BreakerWindow, BudgetSpec, DeadlineMode, DisciplineSpec,
    HedgeSpec, JitterKind, Offsets,
};
use crate::trace::{TraceSpec, MAX_TRACES};

/// One hop's calling policy (app → shop-api, shop-api → stock, stock → database).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hop {
    /// Attempts including the first.
    pub attempts: u32,
    /// Per-attempt timeout (`None`: wait as long as it takes).
    pub timeout: Option<Nanos>,
    /// Backoff jitter shape.
    pub jitter: JitterKind,
    /// Backoff base (0: retry at once).
    pub backoff_base: Nanos,
    /// Backoff cap.
    pub backoff_cap: Nanos,
    /// Retry after a timeout.
    pub retry_timeout: bool,
    /// Retry after an ordinary error.
    pub retry_error: bool,
    /// Retry after "overloaded, don't retry" (as shipped: yes, everything is retried).
    pub retry_overloaded: bool,
    /// Which deadline is sent.
    pub deadline: DeadlineMode,
    /// Margin subtracted from the deadline sent.
    pub margin: Nanos,
    /// Cancel abandoned attempts.
    pub cancel: bool,
}

impl Hop {
    /// The as-shipped hop: `attempts` attempts with `timeout`, retried at once on anything.
    pub const fn as_shipped(attempts: u32, timeout: Nanos) -> Hop {
        Hop {
            attempts,
            timeout: Some(timeout),
            jitter: JitterKind::Full,
            backoff_base: Nanos::ZERO,
            backoff_cap: Nanos::ZERO,
            retry_timeout: true,
            retry_error: true,
            retry_overloaded: true,
            deadline: DeadlineMode::None,
            margin: Nanos::ZERO,
            cancel: false,
        }
    }
}

/// An operator action at a fixed time (Part 10).
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
    /// `budget`: on | off; `budget.capacity`, `budget.deposit`.
    pub budget_on: bool,
    /// The retry budget per shop-api instance.
    pub budget: BudgetSpec,
    /// `admission`: on | off; `admission.view`, `admission.reserve`.
    pub admission_on: bool,
    /// Admission limit for views (calls inside stock).
    pub admission_view: u32,
    /// Admission limit for reserves.
    pub admission_reserve: u32,
    /// `codel`: on | off; `codel.interval_ms`, `codel.target_ms`, `codel.lifo`,
    /// `codel.priority`, `codel.age_limit`.
    pub codel_on: bool,
    /// The connection queue's discipline.
    pub codel: DisciplineSpec,
    /// `breaker`: on | off; `breaker.window` (count), `breaker.time_window_s`,
    /// `breaker.failure_rate`, `breaker.min_calls`, `breaker.open_s`, `breaker.probes`,
    /// `breaker.probe_timeout_ms`, `breaker.count_503`.
    pub breaker_on: bool,
    /// The breaker per shop-api instance and stock operation.
    pub breaker: BreakerSpec,
    /// `bulkhead`: on | off; `bulkhead.max`.
    pub bulkhead_on: bool,
    /// The gate per shop-api instance, shared by both stock operations.
    pub bulkhead_max: u32,
    /// `brownout`: on | off (cart views without stock badges when stock.view fails).
    pub brownout: bool,
    /// `hedge`: on | off; `hedge.percentile`, `hedge.min_delay_ms`, `hedge.max`.
    pub hedge_on: bool,
    /// Hedging of stock views.
    pub hedge: HedgeSpec,
    /// `scale.at`, `scale.instances`: scale shop-api at a time (Replay A). `scale=off` removes it.
    pub scale: Option<(Nanos, u32)>,
    /// `ops.action` (`none` | `shed` | `flush`), `ops.at`: an operator action on shop-api.
    pub ops: Option<(Nanos, OpsAction)>,
    /// `agents`, `agents.reads`, `agents.period_s`, `agents.offsets` (`aligned` | `stable`),
    /// `agents.capacity`: Replay P's periodic readers against spare read capacity.
    pub agents: Option<Agents>,
    /// `burst.*`: Part 4's burst of failing cart views.
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
];

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

/// Part 4's burst: `count` cart views fail at the same instant and retry once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burst {
    /// When they fail.
    pub at: Nanos,
    /// How many.
    pub count: u32,
}

/// Every preset name, in the order the issue lists them.
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
            "stock_call.timeout_ms=60",
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
            "app.attempts=2",
            "app.retry=timeout",
            "stock_call.attempts=2",
            "stock_call.retry=no503",
            "db_call.attempts=1",
            "stock_call.idempotency_key=on",
            "stock_call.reply_503=on",
        ],
    ),
    (
        "jitter",
        "C3: full-jitter backoff, base 25 ms in shop-api and 1 s in the app",
        &[
            "stock_call.backoff=full",
            "stock_call.backoff_base_ms=25",
            "stock_call.backoff_cap_ms=1000",
            "app.backoff=full",
            "app.backoff_base_ms=1000",
            "app.backoff_cap_ms=20000",
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

/// Every override key with a one-line description.
pub const KEYS: &[(&str, &str)] = &[
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
    (
        "HOP.attempts",
        "HOP is app, stock_call or db_call: attempts including the first",
    ),
    ("HOP.timeout_ms", "per-attempt timeout in ms, or none"),
    (
        "HOP.backoff",
        "none | full | equal | decorrelated (jitter shape)",
    ),
    ("HOP.backoff_base_ms", "backoff base, ms (0: retry at once)"),
    ("HOP.backoff_cap_ms", "backoff cap, ms"),
    (
        "HOP.retry",
        "all | no503 | timeout: which failures are retried",
    ),
    ("HOP.deadline", "none | attempt | whole: the deadline sent"),
    (
        "HOP.margin_ms",
        "margin subtracted from the deadline sent, ms",
    ),
    ("HOP.cancel", "cancel abandoned attempts (bool)"),
    (
        "stock_call.idempotency_key",
        "reserves carry an idempotency key (bool)",
    ),
    (
        "stock_call.reply_503",
        "shop-api answers 503 don't-retry when it gives up (bool)",
    ),
    ("budget", "on | off: retry budget per shop-api instance"),
    ("budget.capacity", "tokens"),
    ("budget.deposit", "tokens per first attempt"),
    ("admission", "on | off: stock admission limits"),
    (
        "admission.view",
        "calls inside stock at which views are refused",
    ),
    (
        "admission.reserve",
        "calls inside stock at which reserves are refused",
    ),
    (
        "codel",
        "on | off: queue discipline at the connection queue",
    ),
    (
        "codel.interval_ms",
        "standing after this long non-empty, ms",
    ),
    ("codel.target_ms", "age limit while standing, ms"),
    ("codel.age_limit", "apply the age limit (bool)"),
    ("codel.lifo", "newest first while standing (bool)"),
    ("codel.priority", "reserves before views (bool)"),
    (
        "breaker",
        "on | off: breaker per shop-api instance and stock operation",
    ),
    ("breaker.window", "count window size"),
    (
        "breaker.time_window_s",
        "time window in s (replaces the count window)",
    ),
    ("breaker.failure_rate", "open at this failure rate (0..1]"),
    (
        "breaker.min_calls",
        "outcomes needed before the rate counts (0: default)",
    ),
    ("breaker.open_s", "open duration, s"),
    ("breaker.probes", "probes while half-open"),
    ("breaker.probe_timeout_ms", "probe timeout, ms"),
    ("breaker.count_503", "stock's 503s count as failures (bool)"),
    (
        "bulkhead",
        "on | off: gate per shop-api instance for stock calls",
    ),
    ("bulkhead.max", "gate size"),
    (
        "brownout",
        "on | off: cart views without badges when stock.view fails",
    ),
    ("hedge", "on | off: hedge stock views"),
    (
        "hedge.percentile",
        "hedge after this latency percentile (0..1)",
    ),
    ("hedge.min_delay_ms", "never hedge sooner, ms"),
    ("hedge.max", "hedges per call"),
    ("scale", "off: no scaling event"),
    ("scale.at", "when shop-api scales, HH:MM:SS"),
    ("scale.instances", "shop-api instances after scaling"),
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
    ("burst", "on | off: Part 4's burst of failing cart views"),
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
    ("burst.at", "HH:MM:SS[.fff]"),
    ("burst.count", "number of cart views"),
];

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
            db_call: Hop {
                retry_error: false,
                retry_overloaded: false,
                ..Hop::as_shipped(3, Nanos::from_secs(5))
            },
            idempotency_key: false,
            reply_overloaded: false,
            budget_on: false,
            budget: BudgetSpec {
                capacity: 10.0,
                deposit: 0.1,
            },
            admission_on: false,
            admission_view: 64,
            admission_reserve: 80,
            codel_on: false,
            codel: DisciplineSpec {
                interval: ms(100),
                target: ms(5),
                codel: true,
                lifo: true,
                priority: true,
            },
            breaker_on: false,
            breaker: BreakerSpec {
                window: BreakerWindow::Count(20),
                failure_rate: 0.5,
                min_calls: 0,
                open_for: Nanos::from_secs(5),
                probes: 3,
                probe_timeout: ms(100),
                count_overloaded: true,
            },
            bulkhead_on: false,
            bulkhead_max: 12,
            brownout: false,
            hedge_on: false,
            hedge: HedgeSpec {
                percentile: 0.95,
                min_delay: ms(1),
                max_hedges: 1,
            },
            scale: None,
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
                c.breaker.window = BreakerWindow::Time(Nanos::from_secs(10));
                c.breaker.min_calls = 1;
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
                c.app.attempts = 1;
                c.stock_call.attempts = 1;
                c.db_call.attempts = 1;
                c.until = clock::hms(20, 1, 30);
                c
            }
            "A-C0" => {
                let mut c = Config::c0();
                c.scale = Some((clock::hms(20, 0, 10), 8));
                c
            }
            "A-C7" => {
                let mut c = Self::c_line(7);
                c.scale = Some((clock::hms(20, 0, 10), 8));
                c
            }
            "H-none" | "H-retry" | "H-hedge" => {
                let mut c = Config::c0();
                c.hiccup = false;
                c.start = clock::hms(20, 0, 0);
                c.until = clock::hms(20, 1, 0);
                c.stock_stall_p = 0.01;
                c.stock_call = Hop {
                    attempts: 1,
                    timeout: None,
                    ..c.stock_call
                };
                if name == "H-retry" {
                    c.stock_call.attempts = 2;
                    c.stock_call.timeout = Some(ms(60));
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
                c.bulkhead_max = if name == "cap40" { 40 } else { 60 };
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
                c.breaker.count_overloaded = false;
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
                    c.admission_view = 32;
                    c.admission_reserve = 40;
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
                c.app.jitter = if name == "jitter-fixed" {
                    JitterKind::None
                } else {
                    JitterKind::Full
                };
                c.app.backoff_cap = Nanos::from_secs(1);
                c.app.retry_error = true;
                c.burst = Some(Burst {
                    at: clock::hms(20, 0, 20),
                    count: 1200,
                });
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

    /// C`n`: C0 plus the guards of Parts 2 to 9, cumulatively.
    fn c_line(n: u32) -> Config {
        let mut c = Config::c0();
        if n >= 1 {
            // Part 2: timeouts from percentiles, each attempt's own deadline, cancel,
            // deadline checks at every queue, statement timeout at the database.
            c.app.deadline = DeadlineMode::Attempt;
            c.app.cancel = true;
            c.stock_call.timeout = Some(ms(60));
            c.stock_call.deadline = DeadlineMode::Attempt;
            c.stock_call.cancel = true;
            c.db_call.deadline = DeadlineMode::Attempt;
            c.db_call.cancel = true;
            c.shopapi_deadline_check = true;
            c.stock_deadline_check = true;
            c.db_deadline = true;
        }
        if n >= 2 {
            // Part 3: one retry layer (shop-api → stock), 503 means don't retry, the app
            // retries only when it got no answer, idempotency key on reserves.
            c.app.attempts = 2;
            c.app.retry_error = false;
            c.app.retry_overloaded = false;
            c.stock_call.attempts = 2;
            c.stock_call.retry_overloaded = false;
            c.db_call.attempts = 1;
            c.idempotency_key = true;
            c.reply_overloaded = true;
        }
        if n >= 3 {
            // Part 4: full jitter, base 25 ms in shop-api and 1 s in the app.
            c.stock_call.backoff_base = ms(25);
            c.stock_call.backoff_cap = ms(1000);
            c.app.backoff_base = Nanos::from_secs(1);
            c.app.backoff_cap = Nanos::from_secs(20);
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
    /// c.at("20:00:25", &["stock_call.timeout_ms=60", "shopapi.deadline_check=on"]).unwrap();
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

    /// Every override key with a description.
    pub fn keys() -> &'static [(&'static str, &'static str)] {
        KEYS
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
                match field {
                    "attempts" => h.attempts = v.count(1, 100)?,
                    "timeout_ms" => {
                        h.timeout = if value == "none" {
                            None
                        } else {
                            Some(v.millis_positive()?)
                        }
                    }
                    "backoff" => h.jitter = v.jitter()?,
                    "backoff_base_ms" => h.backoff_base = v.millis()?,
                    "backoff_cap_ms" => h.backoff_cap = v.millis()?,
                    "retry" => {
                        let (t, e, o) = match value {
                            "all" => (true, true, true),
                            "no503" => (true, true, false),
                            "timeout" => (true, false, false),
                            "none" => (false, false, false),
                            _ => return Err(v.bad("all | no503 | timeout | none")),
                        };
                        h.retry_timeout = t;
                        h.retry_error = e;
                        h.retry_overloaded = o;
                    }
                    "deadline" => {
                        h.deadline = match value {
                            "none" => DeadlineMode::None,
                            "attempt" => DeadlineMode::Attempt,
                            "whole" => DeadlineMode::WholeLeft,
                            _ => return Err(v.bad("none | attempt | whole")),
                        }
                    }
                    "margin_ms" => h.margin = v.millis()?,
                    "cancel" => h.cancel = v.flag()?,
                    "idempotency_key" if hop == "stock_call" => self.idempotency_key = v.flag()?,
                    "reply_503" if hop == "stock_call" => self.reply_overloaded = v.flag()?,
                    _ => return Err(unknown(key)),
                }
                return Ok(());
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
            "budget.capacity" => self.budget.capacity = v.float(0.0, 1e9)?,
            "budget.deposit" => self.budget.deposit = v.float(0.0, 1e9)?,
            "admission" => self.admission_on = v.flag()?,
            "admission.view" => self.admission_view = v.count(0, 1_000_000)?,
            "admission.reserve" => self.admission_reserve = v.count(0, 1_000_000)?,
            "codel" => self.codel_on = v.flag()?,
            "codel.interval_ms" => self.codel.interval = v.millis()?,
            "codel.target_ms" => self.codel.target = v.millis()?,
            "codel.age_limit" => self.codel.codel = v.flag()?,
            "codel.lifo" => self.codel.lifo = v.flag()?,
            "codel.priority" => self.codel.priority = v.flag()?,
            "breaker" => self.breaker_on = v.flag()?,
            "breaker.window" => self.breaker.window = BreakerWindow::Count(v.count(1, 1_000_000)?),
            "breaker.time_window_s" => {
                self.breaker.window = BreakerWindow::Time(v.seconds_positive()?)
            }
            "breaker.failure_rate" => self.breaker.failure_rate = v.fraction()?,
            "breaker.min_calls" => self.breaker.min_calls = v.count(0, 1_000_000)?,
            "breaker.open_s" => self.breaker.open_for = v.seconds_positive()?,
            "breaker.probes" => self.breaker.probes = v.count(1, 1_000)?,
            "breaker.probe_timeout_ms" => self.breaker.probe_timeout = v.millis_positive()?,
            "breaker.count_503" => self.breaker.count_overloaded = v.flag()?,
            "bulkhead" => self.bulkhead_on = v.flag()?,
            "bulkhead.max" => self.bulkhead_max = v.count(1, 1_000_000)?,
            "brownout" => self.brownout = v.flag()?,
            "hedge" => self.hedge_on = v.flag()?,
            "hedge.percentile" => self.hedge.percentile = v.fraction()?,
            "hedge.min_delay_ms" => self.hedge.min_delay = v.millis()?,
            "hedge.max" => self.hedge.max_hedges = v.count(1, 10)?,
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

    fn millis(&self) -> Result<Nanos, SimError> {
        let x = self.float(0.0, 1e9)?;
        Nanos::from_secs_f64(x / 1e3).ok_or_else(|| self.bad("milliseconds"))
    }

    fn millis_positive(&self) -> Result<Nanos, SimError> {
        let d = self.millis()?;
        if d.is_zero() {
            return Err(self.bad("a positive number of milliseconds"));
        }
        Ok(d)
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

    fn jitter(&self) -> Result<JitterKind, SimError> {
        match self.value {
            "none" | "fixed" => Ok(JitterKind::None),
            "full" => Ok(JitterKind::Full),
            "equal" => Ok(JitterKind::Equal),
            "decorrelated" => Ok(JitterKind::Decorrelated),
            _ => Err(self.bad("none | full | equal | decorrelated")),
        }
    }
}
