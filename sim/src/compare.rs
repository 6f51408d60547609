//! The windows and metrics a comparison reads a run over, computed here so that every
//! binding gets the same numbers (Python's `guards.sim.compare` and `sweep` read them
//! from here).
//!
//! [`Windows::of`] gives the clock-time windows of any run from its summary's
//! `disturbance` (see [`crate::summary`]): the mean "during" the disturbance after its
//! first 2 s, the gauges at its end, and the mean "after" it, from 1 s after its end to
//! the end of the run. [`BASKETLY_METRICS`] are the rows of a Basketly comparison (the
//! named series of the Basketly presets, see [`crate::basketly`]) and
//! [`basketly_metric`] reads one of them from a run over given windows.
//!
//! # Examples
//! ```
//! use guards_sim::basketly::basketly;
//! use guards_sim::compare::{basketly_metric, Windows};
//! let r = basketly("C0", 1, Some("20:00:05"), &[] as &[&str]).unwrap();
//! let w = Windows::of(&r);
//! assert_eq!(w.during_start, guards_sim::topology::clock::hms(20, 0, 2));
//! assert_eq!(basketly_metric(&r, "recovered_at", &w).unwrap().as_str(), Some("never"));
//! ```

use guards_core::Nanos;

use crate::result::{SimResult, SummaryValue};
use crate::topology::clock;

/// Which window a metric is read over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Mean per interval over `[during_start, during_end)`.
    During,
    /// A gauge read at `gauge_at` (the end of the interval before it).
    Gauge,
    /// Mean per interval over `[after_start, end)`.
    After,
    /// The whole run (a summary value).
    Run,
}

impl Section {
    /// The section's name: `during`, `gauge`, `after` or `run`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Section::During => "during",
            Section::Gauge => "gauge",
            Section::After => "after",
            Section::Run => "run",
        }
    }
}

/// The unit of a metric's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Per second.
    Rate,
    /// A count.
    Count,
    /// A ratio (×).
    Ratio,
    /// A percentage.
    Pct,
    /// Milliseconds.
    Ms,
    /// A clock time (text), or `never`.
    Clock,
}

impl Unit {
    /// The unit's name: `rate`, `count`, `ratio`, `pct`, `ms` or `clock`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Unit::Rate => "rate",
            Unit::Count => "count",
            Unit::Ratio => "ratio",
            Unit::Pct => "pct",
            Unit::Ms => "ms",
            Unit::Clock => "clock",
        }
    }
}

/// How a metric is read from a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// Mean of a column during the disturbance.
    During(&'static str),
    /// A gauge column at the end of the disturbance.
    Gauge(&'static str),
    /// Mean of a column after the disturbance.
    After(&'static str),
    /// Calls to stock per cart view and checkout offered, during.
    StockMultiplier,
    /// Reserve timeouts ÷ reserve attempts in %, summed during.
    ReserveTimeouts,
    /// The summary's `recovered_at`, or `never`.
    Recovered,
    /// The summary's stock-call P99 in ms.
    StockP99,
    /// A number of the summary, by its dotted path (`Null` when the run has none).
    Summary(&'static str),
}

/// One row of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// The row's key, e.g. `goodput`.
    pub key: &'static str,
    /// What people read, e.g. `goodput (full answers in time)`.
    pub label: &'static str,
    /// The window it is read over.
    pub section: Section,
    /// The unit of its value.
    pub unit: Unit,
    read: Read,
}

const fn m(
    key: &'static str,
    label: &'static str,
    section: Section,
    unit: Unit,
    read: Read,
) -> Metric {
    Metric {
        key,
        label,
        section,
        unit,
        read,
    }
}

const fn during(key: &'static str, label: &'static str, column: &'static str) -> Metric {
    m(
        key,
        label,
        Section::During,
        Unit::Rate,
        Read::During(column),
    )
}

/// The rows of a Basketly comparison, in order: rates during the hiccup, gauges at its
/// end, rates after it, the recovery and the stock-call P99.
pub const BASKETLY_METRICS: &[Metric] = &[
    during("offered", "actions offered", "offered"),
    during("app_attempts", "app attempts to shop-api", "app_attempts"),
    during("goodput", "goodput (full answers in time)", "goodput"),
    during(
        "goodput_incl_degraded",
        "goodput incl. degraded carts",
        "goodput_incl_degraded",
    ),
    during("goodput_product", "product pages", "goodput_product"),
    during("goodput_cart", "cart views with badges", "goodput_cart"),
    during(
        "degraded_cart",
        "cart views without badges",
        "degraded_cart",
    ),
    during("cart_failed", "cart views failed", "entry.cart.failed"),
    during(
        "goodput_checkout",
        "checkouts confirmed",
        "goodput_checkout",
    ),
    during("stock_calls", "calls to stock", "stock_calls"),
    m(
        "stock_calls_x",
        "calls to stock per cart view + checkout",
        Section::During,
        Unit::Ratio,
        Read::StockMultiplier,
    ),
    during("stock_refused", "refused by stock (503)", "stock_refused"),
    during(
        "budget_refusals",
        "retries refused by the budget",
        "budget_refusals",
    ),
    during(
        "breaker_rejections",
        "refused by open breakers",
        "breaker_rejections",
    ),
    during(
        "bulkhead_rejections",
        "refused by the bulkhead",
        "bulkhead_rejections",
    ),
    during("db_done", "database queries done", "db_done"),
    during("db_stale", "stale DB work (caller gone)", "db_stale"),
    during(
        "duplicate_commits",
        "reserves committed twice",
        "duplicate_commits",
    ),
    m(
        "reserve_timeouts_pct",
        "reserve timeouts ÷ reserve attempts",
        Section::During,
        Unit::Pct,
        Read::ReserveTimeouts,
    ),
    m(
        "shopapi_queue",
        "queued in shop-api",
        Section::Gauge,
        Unit::Count,
        Read::Gauge("shopapi_queue"),
    ),
    m(
        "inside_stock",
        "calls inside stock",
        Section::Gauge,
        Unit::Count,
        Read::Gauge("inside_stock"),
    ),
    m(
        "goodput_after",
        "goodput",
        Section::After,
        Unit::Rate,
        Read::After("goodput"),
    ),
    m(
        "db_stale_after",
        "stale DB work",
        Section::After,
        Unit::Rate,
        Read::After("db_stale"),
    ),
    m(
        "recovered_at",
        "recovered at",
        Section::After,
        Unit::Clock,
        Read::Recovered,
    ),
    m(
        "stock_p99_ms",
        "stock call P99, ms (as shop-api sees it)",
        Section::Run,
        Unit::Ms,
        Read::StockP99,
    ),
    m(
        "fleet_stock_in_flight_max",
        "stock calls in flight, fleet-wide max",
        Section::Run,
        Unit::Count,
        Read::Summary("fleet.shop-api.stock.in_flight_max"),
    ),
    m(
        "fleet_stock_cap_sum_max",
        "stock bulkhead caps summed, max",
        Section::Run,
        Unit::Count,
        Read::Summary("fleet.shop-api.stock.cap_sum_max"),
    ),
];

/// The clock-time windows a comparison reads a run over, each in whole milliseconds (as
/// their clock text `HH:MM:SS.mmm` shows them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    /// Start of the "during" window: the disturbance's start plus 2 s (at most its end,
    /// at least the run's start); the run's start without a disturbance.
    pub during_start: Nanos,
    /// End of the "during" window (exclusive): the disturbance's end (at most the run's
    /// end); the run's end without one.
    pub during_end: Nanos,
    /// Gauges are read at this instant: the end of the disturbance (at most the run's
    /// end); the run's end without one.
    pub gauge_at: Nanos,
    /// Start of the "after" window: 1 s after the disturbance's end, or `None` without a
    /// disturbance or when the run ends first.
    pub after_start: Option<Nanos>,
    /// The run's end (the end of its last interval).
    pub end: Nanos,
}

/// `t` truncated to whole milliseconds.
fn millis(t: Nanos) -> Nanos {
    Nanos::new(t.as_u64() / 1_000_000 * 1_000_000)
}

impl Windows {
    /// The windows of `r`, from its summary's `disturbance` and its first and last
    /// intervals.
    pub fn of(r: &SimResult) -> Windows {
        let start = r.start;
        let end = r.time_of(r.len());
        let dist = r.summary_value("disturbance").and_then(|d| {
            let a = clock::parse(d.get("start")?.as_str()?)?;
            let b = clock::parse(d.get("end")?.as_str()?)?;
            Some((a, b))
        });
        let w = match dist {
            Some((hs, he)) => {
                let d0 = hs.saturating_add(Nanos::from_secs(2)).min(he);
                let after = he.saturating_add(Nanos::from_secs(1));
                Windows {
                    during_start: d0.max(start),
                    during_end: he.min(end),
                    gauge_at: he.min(end),
                    after_start: (after < end).then_some(after),
                    end,
                }
            }
            None => Windows {
                during_start: start,
                during_end: end,
                gauge_at: end,
                after_start: None,
                end,
            },
        };
        Windows {
            during_start: millis(w.during_start),
            during_end: millis(w.during_end),
            gauge_at: millis(w.gauge_at),
            after_start: w.after_start.map(millis),
            end: millis(w.end),
        }
    }
}

fn mean(r: &SimResult, name: &str, from: Nanos, to: Nanos) -> Option<f64> {
    r.mean(name, &clock::format_millis(from), &clock::format_millis(to))
}

fn sum(r: &SimResult, name: &str, from: Nanos, to: Nanos) -> Option<f64> {
    r.sum(name, &clock::format_millis(from), &clock::format_millis(to))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

fn number(x: Option<f64>) -> SummaryValue {
    x.map_or(SummaryValue::Null, SummaryValue::Number)
}

impl Metric {
    /// This metric of `r` over `w`: a number, a text (`recovered_at`) or `Null` when the
    /// run does not have it (no such column, no interval in the window, nothing to divide
    /// by).
    pub fn read(&self, r: &SimResult, w: &Windows) -> SummaryValue {
        let during = |name: &str| mean(r, name, w.during_start, w.during_end);
        match self.read {
            Read::During(name) => number(during(name)),
            Read::Gauge(name) => {
                let at = millis(w.gauge_at.saturating_sub(r.interval));
                number(r.at(name, &clock::format_millis(at)))
            }
            Read::After(name) => number(w.after_start.and_then(|a| mean(r, name, a, w.end))),
            Read::StockMultiplier => {
                // Calls reaching stock per action that needs it (a cart view or a
                // checkout): Basketly's "calls to stock ×".
                let need = match (
                    during("entry.cart.offered"),
                    during("entry.checkout.offered"),
                ) {
                    (Some(a), Some(b)) => Some(a + b),
                    _ => None,
                };
                number(need.and_then(|n| ratio(during("stock_calls"), Some(n))))
            }
            Read::ReserveTimeouts => {
                let s = |name: &str| sum(r, name, w.during_start, w.during_end);
                number(ratio(s("reserve_timeouts"), s("reserve_attempts")).map(|t| 100.0 * t))
            }
            Read::Recovered => match r.summary_value("recovered_at") {
                Some(SummaryValue::Text(t)) => SummaryValue::Text(t.clone()),
                _ => SummaryValue::Text("never".into()),
            },
            Read::StockP99 => number(
                r.summary_value("stock_latency_ms.p99")
                    .and_then(SummaryValue::as_f64),
            ),
            Read::Summary(path) => number(r.summary_value(path).and_then(SummaryValue::as_f64)),
        }
    }
}

/// The Basketly metric `key` (one of [`BASKETLY_METRICS`]).
pub fn metric(key: &str) -> Option<&'static Metric> {
    BASKETLY_METRICS.iter().find(|m| m.key == key)
}

/// The Basketly metric `key` of `r` over `w` (see [`Metric::read`]), or `None` for a key
/// that is not one of [`BASKETLY_METRICS`].
pub fn basketly_metric(r: &SimResult, key: &str, w: &Windows) -> Option<SummaryValue> {
    metric(key).map(|m| m.read(r, w))
}

/// Every Basketly metric of `r` over its own windows ([`Windows::of`]), in order.
pub fn basketly_metrics(r: &SimResult) -> Vec<(&'static str, SummaryValue)> {
    let w = Windows::of(r);
    BASKETLY_METRICS
        .iter()
        .map(|m| (m.key, m.read(r, &w)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Column, RunStats};

    fn ms(t: u64) -> Nanos {
        Nanos::from_millis(t)
    }

    /// Ten 1 s intervals from 20:00:00; a disturbance 20:00:01-20:00:05 unless `dist` is
    /// `None`. Column `x` is 0, 1, 2, ... and the Basketly columns are constants.
    fn result(dist: Option<(&str, &str)>) -> SimResult {
        let col = |name: &str, f: &dyn Fn(usize) -> f64| Column {
            name: name.into(),
            values: (0..10).map(f).collect(),
        };
        let mut summary = vec![(
            "disturbance".to_string(),
            dist.map_or(SummaryValue::Null, |(a, b)| {
                SummaryValue::Map(vec![
                    ("start".into(), SummaryValue::Text(a.into())),
                    ("end".into(), SummaryValue::Text(b.into())),
                ])
            }),
        )];
        summary.push((
            "stock_latency_ms".into(),
            SummaryValue::Map(vec![("p99".into(), SummaryValue::Number(18.5))]),
        ));
        summary.push(("recovered_at".into(), SummaryValue::Text("20:00:06".into())));
        SimResult {
            setting: "test".into(),
            seed: 1,
            start: clock::hms(20, 0, 0),
            interval: Nanos::from_secs(1),
            columns: vec![
                col("x", &|i| i as f64),
                col("stock_calls", &|_| 300.0),
                col("entry.cart.offered", &|_| 100.0),
                col("entry.checkout.offered", &|_| 50.0),
                col("reserve_timeouts", &|i| if i < 3 { 1.0 } else { 3.0 }),
                col("reserve_attempts", &|_| 10.0),
            ],
            latencies: Vec::new(),
            summary,
            stats: RunStats::default(),
            stopped: None,
            traces: Vec::new(),
        }
    }

    fn read(r: &SimResult, read: Read, w: &Windows) -> SummaryValue {
        m("k", "k", Section::During, Unit::Rate, read).read(r, w)
    }

    #[test]
    fn windows_follow_the_disturbance() {
        let r = result(Some(("20:00:01.000", "20:00:05.500")));
        let w = Windows::of(&r);
        let t0 = clock::hms(20, 0, 0);
        assert_eq!(w.during_start, t0.saturating_add(ms(3_000)));
        assert_eq!(w.during_end, t0.saturating_add(ms(5_500)));
        assert_eq!(w.gauge_at, t0.saturating_add(ms(5_500)));
        assert_eq!(w.after_start, Some(t0.saturating_add(ms(6_500))));
        assert_eq!(w.end, t0.saturating_add(ms(10_000)));
        // A disturbance shorter than 2 s: "during" is empty at its end; one running past
        // the run's end: no "after", gauges at the run's end.
        let w = Windows::of(&result(Some(("20:00:01.000", "20:00:02.000"))));
        assert_eq!(w.during_start, w.during_end);
        let w = Windows::of(&result(Some(("20:00:01.000", "20:00:30.000"))));
        assert_eq!(
            (w.during_end, w.gauge_at, w.after_start),
            (w.end, w.end, None)
        );
        // A disturbance before the run: "during" starts with the run.
        let w = Windows::of(&result(Some(("19:00:00.000", "20:00:04.000"))));
        assert_eq!(w.during_start, t0);
    }

    #[test]
    fn windows_without_a_disturbance_are_the_whole_run() {
        let w = Windows::of(&result(None));
        let t0 = clock::hms(20, 0, 0);
        let end = t0.saturating_add(ms(10_000));
        assert_eq!(
            w,
            Windows {
                during_start: t0,
                during_end: end,
                gauge_at: end,
                after_start: None,
                end
            }
        );
    }

    #[test]
    fn reads_means_gauges_ratios_and_summary_values() {
        let r = result(Some(("20:00:01.000", "20:00:06.000")));
        let w = Windows::of(&r);
        // During: intervals 3, 4 and 5; after: 7, 8 and 9; the gauge: interval 5.
        assert_eq!(read(&r, Read::During("x"), &w), SummaryValue::Number(4.0));
        assert_eq!(read(&r, Read::After("x"), &w), SummaryValue::Number(8.0));
        assert_eq!(read(&r, Read::Gauge("x"), &w), SummaryValue::Number(5.0));
        assert_eq!(read(&r, Read::During("nope"), &w), SummaryValue::Null);
        assert_eq!(
            read(&r, Read::StockMultiplier, &w),
            SummaryValue::Number(2.0)
        );
        assert_eq!(
            read(&r, Read::ReserveTimeouts, &w),
            SummaryValue::Number(30.0)
        );
        assert_eq!(read(&r, Read::StockP99, &w), SummaryValue::Number(18.5));
        assert_eq!(
            read(&r, Read::Recovered, &w),
            SummaryValue::Text("20:00:06".into())
        );
        // Without an "after" window, and with nothing to divide by.
        let mut r2 = result(None);
        r2.summary.retain(|(k, _)| k != "recovered_at");
        for c in &mut r2.columns {
            if c.name == "reserve_attempts" {
                c.values.iter_mut().for_each(|v| *v = 0.0);
            }
        }
        let w2 = Windows::of(&r2);
        assert_eq!(read(&r2, Read::After("x"), &w2), SummaryValue::Null);
        assert_eq!(read(&r2, Read::ReserveTimeouts, &w2), SummaryValue::Null);
        assert_eq!(
            read(&r2, Read::Recovered, &w2),
            SummaryValue::Text("never".into())
        );
        // The gauge at the run's end reads the last interval.
        assert_eq!(read(&r2, Read::Gauge("x"), &w2), SummaryValue::Number(9.0));
    }

    #[test]
    fn every_key_is_unique_and_found() {
        for (i, a) in BASKETLY_METRICS.iter().enumerate() {
            assert_eq!(metric(a.key), Some(a));
            assert!(BASKETLY_METRICS[i + 1..].iter().all(|b| b.key != a.key));
        }
        assert_eq!(metric("nope"), None);
        let r = result(None);
        assert_eq!(basketly_metric(&r, "nope", &Windows::of(&r)), None);
        assert_eq!(basketly_metrics(&r).len(), BASKETLY_METRICS.len());
    }
}
