//! The Basketly incident as presets: the model of docs/basketly.md built from the
//! generic [`crate::topology`], with the named settings and the output columns of
//! docs/basketly.md.
//!
//! [`basketly`] is the one call the Python layer needs: a preset name, a seed, an optional
//! end time and `key=value` overrides in, a [`SimResult`] out, whose columns include
//! `offered`, `goodput`, `stock_calls`, `db_stale`, `shopapi_queue`, ... (see [`SERIES`])
//! next to every generic `entry.*`, `edge.*` and `svc.*` column, and whose summary has
//! `recovered_at`, the stock-call latency percentiles as shop-api sees them and
//! `extra_load`.
//!
//! # Examples
//! ```
//! use guards_sim::basketly::basketly;
//! let r = basketly("C0", 1, Some("20:00:02"), &["hiccup=off"]).unwrap();
//! assert_eq!(r.clock_labels()[0], "19:59:45");
//! let offered = r.column("offered").unwrap();
//! assert!(offered[0] > 1_800.0 && offered[0] < 2_300.0);
//! assert!(basketly("C9", 1, None, &[] as &[&str]).is_err());
//! ```

mod build;
mod config;

pub use config::{
    keys, Agents, Burst, Change, Config, Fleet, Hop, OpsAction, AT_ONCE, GUARDS, PRESETS,
    PRESET_INFO,
};

use guards_core::Nanos;

use crate::engine::Sim;
use crate::error::SimError;
use crate::result::{Column, SimResult, SummaryValue};
use crate::topology::clock;

/// The Basketly per-interval series, each a sum of generic columns.
pub const SERIES: &[(&str, &[&str])] = &[
    (
        "offered",
        &[
            "entry.product.offered",
            "entry.cart.offered",
            "entry.checkout.offered",
        ],
    ),
    (
        "app_attempts",
        &[
            "edge.app->shop-api.product.calls",
            "edge.app->shop-api.cart.calls",
            "edge.app->shop-api.checkout.calls",
        ],
    ),
    (
        "goodput",
        &[
            "entry.product.full",
            "entry.cart.full",
            "entry.checkout.full",
        ],
    ),
    (
        "goodput_incl_degraded",
        &[
            "entry.product.full",
            "entry.cart.full",
            "entry.checkout.full",
            "entry.product.degraded",
            "entry.cart.degraded",
            "entry.checkout.degraded",
        ],
    ),
    ("goodput_product", &["entry.product.full"]),
    ("goodput_cart", &["entry.cart.full"]),
    ("goodput_checkout", &["entry.checkout.full"]),
    ("degraded_cart", &["entry.cart.degraded"]),
    (
        "stock_calls",
        &[
            "edge.shop-api->stock.view.calls",
            "edge.shop-api->stock.reserve.calls",
        ],
    ),
    (
        "stock_refused",
        &[
            "edge.shop-api->stock.view.overloaded",
            "edge.shop-api->stock.reserve.overloaded",
        ],
    ),
    (
        "budget_refusals",
        &[
            "edge.shop-api->stock.view.budget_refusals",
            "edge.shop-api->stock.reserve.budget_refusals",
        ],
    ),
    (
        "breaker_rejections",
        &[
            "edge.shop-api->stock.view.breaker_rejections",
            "edge.shop-api->stock.reserve.breaker_rejections",
        ],
    ),
    (
        "bulkhead_rejections",
        &[
            "edge.shop-api->stock.view.bulkhead_rejections",
            "edge.shop-api->stock.reserve.bulkhead_rejections",
        ],
    ),
    ("db_done", &["svc.db.done"]),
    ("db_stale", &["svc.db.stale"]),
    ("duplicate_commits", &["svc.db.duplicate_commits"]),
    ("duplicate_checkouts", &["svc.db.duplicate_actions"]),
    ("reserve_attempts", &["edge.shop-api->stock.reserve.calls"]),
    (
        "reserve_timeouts",
        &["edge.shop-api->stock.reserve.timeouts"],
    ),
    ("shopapi_queue", &["svc.shop-api.queue"]),
    ("inside_stock", &["svc.stock.inside"]),
    ("conn_wait", &["svc.db.queue"]),
    ("shopapi_busy", &["svc.shop-api.busy"]),
    (
        "breakers_open",
        &[
            "edge.shop-api->stock.view.breakers_open",
            "edge.shop-api->stock.reserve.breakers_open",
        ],
    ),
    (
        "breakers_half_open",
        &[
            "edge.shop-api->stock.view.breakers_half_open",
            "edge.shop-api->stock.reserve.breakers_half_open",
        ],
    ),
    ("reads_served", &["entry.agents.full"]),
    (
        "retries",
        &[
            "edge.app->shop-api.cart.retries",
            "edge.app->shop-api.product.retries",
            "edge.app->shop-api.checkout.retries",
        ],
    ),
];

/// Run preset `setting` with `seed` until `until` (`HH:MM:SS`, or the preset's default)
/// after applying `overrides` (`key=value`).
pub fn basketly<S: AsRef<str>>(
    setting: &str,
    seed: u64,
    until: Option<&str>,
    overrides: &[S],
) -> Result<SimResult, SimError> {
    let mut c = Config::with_overrides(setting, overrides)?;
    if let Some(u) = until {
        c.set("until", u)?;
    }
    run(&c, seed)
}

/// Run a configuration with `seed`.
pub fn run(config: &Config, seed: u64) -> Result<SimResult, SimError> {
    let mut run = Run::from_config(config, seed)?;
    run.advance(config.until);
    Ok(run.finish())
}

/// A Basketly run that can be advanced in steps (for a progress bar) and then finished.
///
/// # Examples
/// ```
/// use guards_sim::basketly::Run;
/// let mut run = Run::new("C8", 1, Some("20:00:02"), &[] as &[&str]).unwrap();
/// while run.progress() < 1.0 {
///     let next = run.now().saturating_add(guards_core::Nanos::from_secs(5));
///     run.advance(next);
/// }
/// let result = run.finish();
/// assert_eq!(result.len(), 17);
/// ```
#[derive(Debug)]
pub struct Run {
    sim: Sim,
    config: Config,
    /// The topology in force after each change of the timeline, and when it starts.
    changes: Vec<(Nanos, crate::topology::Topology)>,
    next_change: usize,
}

impl Run {
    /// Prepare preset `setting` with `seed`, optional end time and overrides.
    pub fn new<S: AsRef<str>>(
        setting: &str,
        seed: u64,
        until: Option<&str>,
        overrides: &[S],
    ) -> Result<Run, SimError> {
        let mut c = Config::with_overrides(setting, overrides)?;
        if let Some(u) = until {
            c.set("until", u)?;
        }
        Run::from_config(&c, seed)
    }

    /// Prepare a configuration with `seed`. Every change of its timeline is checked
    /// now (a change may alter settings, not the system's shape).
    pub fn from_config(config: &Config, seed: u64) -> Result<Run, SimError> {
        let topo = config.topology()?;
        let mut sim = Sim::new(topo, seed)?;
        sim.set_label(&config.name);
        sim.set_limits(config.limits);
        if let Some(spec) = &config.trace {
            sim.set_trace(spec)?;
        }
        let mut changes = Vec::with_capacity(config.timeline.len());
        for ch in &config.timeline {
            let topo = config.settings_at(ch.at).topology()?;
            sim.check_reconfigure(&topo).map_err(|e| match e {
                SimError::Topology { what } => SimError::Topology {
                    what: format!(
                        "the change at {}: {what}",
                        crate::topology::clock::format_millis(ch.at)
                    ),
                },
                other => other,
            })?;
            changes.push((ch.at, topo));
        }
        Ok(Run {
            sim,
            config: config.clone(),
            changes,
            next_change: 0,
        })
    }

    /// The configuration being run.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Current virtual time.
    pub fn now(&self) -> Nanos {
        self.sim.now()
    }

    /// Run every event before `to` (never past the configuration's end), applying the
    /// timeline's changes at their instants.
    pub fn advance(&mut self, to: Nanos) {
        let to = to.min(self.config.until);
        while let Some((at, _)) = self.changes.get(self.next_change) {
            if *at > to || *at >= self.config.until || self.sim.stopped().is_some() {
                break;
            }
            let at = *at;
            self.sim.advance(at);
            if self.sim.stopped().is_some() {
                return;
            }
            let topo = self.changes[self.next_change].1.clone();
            // Checked in `from_config` against the same shape: it cannot fail here.
            let _ = self.sim.reconfigure(topo);
            self.next_change += 1;
        }
        self.sim.advance(to);
    }

    /// Where and why the run stopped early, if a limit stopped it.
    pub fn stopped(&self) -> Option<crate::Stop> {
        self.sim.stopped()
    }

    /// Fraction of the run done, 0.0 to 1.0 (1.0 once a limit has stopped it).
    pub fn progress(&self) -> f64 {
        if self.sim.stopped().is_some() {
            return 1.0;
        }
        let total = self.config.until.saturating_sub(self.config.start).as_u64();
        if total == 0 {
            return 1.0;
        }
        let done = self.sim.now().saturating_sub(self.config.start).as_u64();
        (done as f64 / total as f64).min(1.0)
    }

    /// Run to the end and return the result with the Basketly columns and summary.
    pub fn finish(mut self) -> SimResult {
        self.advance(self.config.until);
        let mut r = self.sim.result();
        add_series(&mut r);
        add_summary(&mut r, &self.config);
        r
    }
}

fn add_series(r: &mut SimResult) {
    let n = r.len();
    let mut extra = Vec::new();
    for (name, parts) in SERIES {
        let mut values = vec![0.0; n];
        let mut any = false;
        for p in *parts {
            if let Some(col) = r.column(p) {
                any = true;
                for (v, x) in values.iter_mut().zip(col) {
                    *v += x;
                }
            }
        }
        if any || !name.starts_with("reads") {
            extra.push(Column {
                name: (*name).to_string(),
                values,
            });
        }
    }
    extra.append(&mut r.columns);
    r.columns = extra;
}

/// The first interval at or after `from` from which full goodput stays at or above 95 %
/// of offered load to the end of the run.
pub fn recovered_at(r: &SimResult, from: Nanos) -> Option<Nanos> {
    crate::summary::recovered_at(r, r.column("goodput")?, r.column("offered")?, from)
}

fn add_summary(r: &mut SimResult, c: &Config) {
    let mut s = Vec::new();
    let rec = if c.hiccup {
        recovered_at(r, c.hiccup_start)
    } else {
        recovered_at(r, c.start)
    };
    s.push((
        "recovered_at".to_string(),
        rec.map_or(SummaryValue::Null, |t| SummaryValue::Text(clock::format(t))),
    ));
    let end = if c.hiccup { c.hiccup_end } else { c.start };
    s.push((
        "recovery_s".to_string(),
        crate::summary::recovery_s(rec, end),
    ));
    // Stock-call latency as shop-api sees it: whole successful calls, retries and
    // hedges included, over the whole run.
    let mut lat: Vec<Nanos> = Vec::new();
    for e in ["shop-api->stock.view", "shop-api->stock.reserve"] {
        if let Some(l) = r.latency(e) {
            lat.extend(l.calls.iter().map(|(_, d)| *d));
        }
    }
    lat.sort_unstable();
    s.push((
        "stock_latency_ms".to_string(),
        crate::summary::latency_map(lat.clone()),
    ));
    let over5 = lat.iter().filter(|d| **d > Nanos::from_millis(5)).count();
    s.push((
        "stock_over_5ms".to_string(),
        if lat.is_empty() {
            SummaryValue::Null
        } else {
            SummaryValue::Number(over5 as f64 / lat.len() as f64)
        },
    ));
    let total = |name: &str| r.column(name).map_or(0.0, |v| v.iter().sum::<f64>());
    let first =
        total("edge.shop-api->stock.view.first") + total("edge.shop-api->stock.reserve.first");
    let hedges =
        total("edge.shop-api->stock.view.hedges") + total("edge.shop-api->stock.reserve.hedges");
    let calls = total("stock_calls");
    s.push((
        "extra_load".to_string(),
        if first > 0.0 {
            SummaryValue::Number(hedges / first)
        } else {
            SummaryValue::Null
        },
    ));
    s.push((
        "stock_calls_per_first_attempt".to_string(),
        if first > 0.0 {
            SummaryValue::Number(calls / first)
        } else {
            SummaryValue::Null
        },
    ));
    // Then the summary every topology has (entries, edges, latencies, events), without
    // the names given above.
    for (k, v) in std::mem::take(&mut r.summary) {
        if !s.iter().any(|(x, _)| *x == k) {
            s.push((k, v));
        }
    }
    r.summary = s;
}
