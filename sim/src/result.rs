//! [`SimResult`]: the per-interval columns and summary of one run, with JSON, CSV and a
//! printable table.
//!
//! The JSON form is the one the Python layer and the CLI write:
//! `{"setting", "seed", "interval_s", "series": {"t": ["HH:MM:SS", ...], NAME: [...]},
//! "summary": {...}}`, with `"stopped": {"at", "reason", "limit", "message"}` after them
//! when a limit stopped the run early, and `"traces": [...]` when single actions were
//! traced (see [`crate::trace`]). Column values are per interval (counts per interval, gauges at the
//! end of the interval, `*_busy` as a time average); integral values are written as JSON
//! integers.

use guards_core::Nanos;
use serde_json::{json, Map, Value};

use crate::limits::Stop;
use crate::topology::clock;
use crate::trace::Trace;

/// One named per-interval column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Column name, e.g. `goodput` or `edge.shop-api->stock.view.calls`.
    pub name: String,
    /// One value per interval.
    pub values: Vec<f64>,
}

/// Latency samples of one edge: `(completion time, latency)` pairs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LatencySamples {
    /// Edge name.
    pub edge: String,
    /// Whole successful calls as the caller sees them (first attempt to success,
    /// retries and hedges included).
    pub calls: Vec<(Nanos, Nanos)>,
    /// Successful single attempts.
    pub attempts: Vec<(Nanos, Nanos)>,
}

/// A summary value.
#[derive(Debug, Clone, PartialEq)]
pub enum SummaryValue {
    /// No value (e.g. never recovered).
    Null,
    /// A number.
    Number(f64),
    /// A text (e.g. a clock time).
    Text(String),
    /// Nested values, in order.
    Map(Vec<(String, SummaryValue)>),
}

impl SummaryValue {
    /// The number, if it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            SummaryValue::Number(x) => Some(*x),
            _ => None,
        }
    }

    /// The text, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            SummaryValue::Text(s) => Some(s),
            _ => None,
        }
    }

    /// A nested value by key, if this is a map.
    pub fn get(&self, key: &str) -> Option<&SummaryValue> {
        match self {
            SummaryValue::Map(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn to_json(&self) -> Value {
        match self {
            SummaryValue::Null => Value::Null,
            SummaryValue::Number(x) => number(*x),
            SummaryValue::Text(s) => Value::String(s.clone()),
            SummaryValue::Map(m) => {
                let mut o = Map::new();
                for (k, v) in m {
                    o.insert(k.clone(), v.to_json());
                }
                Value::Object(o)
            }
        }
    }
}

/// Counts about the run itself (not part of the model's output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunStats {
    /// Events processed.
    pub events: u64,
    /// Most calls in flight at once.
    pub peak_calls: usize,
    /// Calls still in flight at the end.
    pub live_calls: usize,
}

/// The output of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct SimResult {
    /// The setting or topology label.
    pub setting: String,
    /// The seed.
    pub seed: u64,
    /// Start of the first interval.
    pub start: Nanos,
    /// Interval length.
    pub interval: Nanos,
    /// Columns, in output order.
    pub columns: Vec<Column>,
    /// Latency samples of the edges that record them.
    pub latencies: Vec<LatencySamples>,
    /// Summary values, in output order.
    pub summary: Vec<(String, SummaryValue)>,
    /// Engine counts.
    pub stats: RunStats,
    /// Where and why the run stopped before its end (a [`Limits`](crate::Limits) was
    /// reached), or `None` for a complete run. The intervals kept are complete.
    pub stopped: Option<Stop>,
    /// Traces of single actions, when the run was asked for them (see [`crate::trace`]).
    pub traces: Vec<Trace>,
}

fn number(x: f64) -> Value {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::from(x as i64)
    } else if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

impl SimResult {
    /// Number of intervals.
    pub fn len(&self) -> usize {
        self.columns.first().map_or(0, |c| c.values.len())
    }

    /// Whether there are no intervals.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A column by name.
    pub fn column(&self, name: &str) -> Option<&[f64]> {
        self.columns
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.values.as_slice())
    }

    /// Column names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.name.as_str()).collect()
    }

    /// Start of interval `i`.
    pub fn time_of(&self, i: usize) -> Nanos {
        self.start
            .saturating_add(self.interval.saturating_mul(i as u64))
    }

    /// Clock labels (`HH:MM:SS`) of the interval starts.
    pub fn clock_labels(&self) -> Vec<String> {
        (0..self.len())
            .map(|i| clock::format(self.time_of(i)))
            .collect()
    }

    /// The interval containing instant `t`.
    pub fn index_of(&self, t: Nanos) -> Option<usize> {
        let off = t.checked_sub(self.start)?;
        let i = (off.as_u64() / self.interval.as_u64().max(1)) as usize;
        (i < self.len()).then_some(i)
    }

    /// The value of `name` in the interval starting at clock time `at` (`HH:MM:SS`).
    pub fn at(&self, name: &str, at: &str) -> Option<f64> {
        let i = self.index_of(clock::parse(at)?)?;
        self.column(name)?.get(i).copied()
    }

    /// Mean of `name` over the intervals starting in `[from, to)` (clock times).
    pub fn mean(&self, name: &str, from: &str, to: &str) -> Option<f64> {
        let a = self.index_of(clock::parse(from)?)?;
        let b = clock::parse(to)?;
        let col = self.column(name)?;
        let mut sum = 0.0;
        let mut n = 0usize;
        for (i, v) in col.iter().enumerate().skip(a) {
            if self.time_of(i) >= b {
                break;
            }
            sum += v;
            n += 1;
        }
        (n > 0).then(|| sum / n as f64)
    }

    /// Sum of `name` over the intervals starting in `[from, to)` (clock times).
    pub fn sum(&self, name: &str, from: &str, to: &str) -> Option<f64> {
        let a = self.index_of(clock::parse(from)?)?;
        let b = clock::parse(to)?;
        let col = self.column(name)?;
        Some(
            col.iter()
                .enumerate()
                .skip(a)
                .take_while(|(i, _)| self.time_of(*i) < b)
                .map(|(_, v)| v)
                .sum(),
        )
    }

    /// A summary value by key (`a.b` reaches into nested maps).
    pub fn summary_value(&self, key: &str) -> Option<&SummaryValue> {
        let mut parts = key.split('.');
        let first = parts.next()?;
        let mut v = self
            .summary
            .iter()
            .find(|(k, _)| k == first)
            .map(|(_, v)| v)?;
        for p in parts {
            v = v.get(p)?;
        }
        Some(v)
    }

    /// Latency samples of an edge by name.
    pub fn latency(&self, edge: &str) -> Option<&LatencySamples> {
        self.latencies.iter().find(|l| l.edge == edge)
    }

    /// The result as a JSON value (see the module docs). With `names`, only those columns.
    pub fn to_json_value(&self, names: Option<&[&str]>) -> Value {
        let mut series = Map::new();
        series.insert(
            "t".into(),
            Value::Array(self.clock_labels().into_iter().map(Value::String).collect()),
        );
        for c in &self.columns {
            if let Some(n) = names {
                if !n.contains(&c.name.as_str()) {
                    continue;
                }
            }
            series.insert(
                c.name.clone(),
                Value::Array(c.values.iter().map(|v| number(*v)).collect()),
            );
        }
        let mut summary = Map::new();
        for (k, v) in &self.summary {
            summary.insert(k.clone(), v.to_json());
        }
        let mut o = Map::new();
        o.insert("setting".into(), Value::String(self.setting.clone()));
        o.insert("seed".into(), Value::from(self.seed));
        o.insert("interval_s".into(), json!(self.interval.as_secs_f64()));
        o.insert("series".into(), Value::Object(series));
        o.insert("summary".into(), Value::Object(summary));
        if !self.traces.is_empty() {
            o.insert(
                "traces".into(),
                Value::Array(self.traces.iter().map(Trace::to_json_value).collect()),
            );
        }
        if let Some(stop) = &self.stopped {
            o.insert(
                "stopped".into(),
                json!({
                    "at": clock::format_millis(stop.at),
                    "reason": stop.reason.kind(),
                    "limit": stop.reason.limit(),
                    "message": stop.to_string(),
                }),
            );
        }
        Value::Object(o)
    }

    /// The result as a JSON string.
    pub fn to_json(&self) -> String {
        self.to_json_value(None).to_string()
    }

    /// The traces of single actions as a JSON list (see [`Trace::to_json_value`]).
    pub fn traces_json(&self) -> String {
        Value::Array(self.traces.iter().map(Trace::to_json_value).collect()).to_string()
    }

    /// The columns as CSV (first column `t`).
    pub fn to_csv(&self) -> String {
        let mut out = String::from("t");
        for c in &self.columns {
            out.push(',');
            out.push_str(&c.name);
        }
        out.push('\n');
        for (i, label) in self.clock_labels().iter().enumerate() {
            out.push_str(label);
            for c in &self.columns {
                out.push(',');
                if let Some(v) = c.values.get(i) {
                    out.push_str(&fmt_value(*v));
                }
            }
            out.push('\n');
        }
        out
    }

    /// A fixed-width table of the given columns, one row per interval.
    pub fn table(&self, names: &[&str]) -> String {
        let cols: Vec<(&str, Option<&[f64]>)> =
            names.iter().map(|n| (*n, self.column(n))).collect();
        let widths: Vec<usize> = cols.iter().map(|(n, _)| n.len().max(7)).collect();
        let mut out = String::from("t       ");
        for ((n, _), w) in cols.iter().zip(&widths) {
            out.push_str(&format!(" {n:>w$}"));
        }
        out.push('\n');
        for (i, label) in self.clock_labels().iter().enumerate() {
            out.push_str(label);
            for ((_, c), w) in cols.iter().zip(&widths) {
                let v = c
                    .and_then(|c| c.get(i))
                    .map_or("-".to_string(), |v| fmt_value(*v));
                out.push_str(&format!(" {v:>w$}"));
            }
            out.push('\n');
        }
        out
    }
}

fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.1}")
    }
}

/// The `q`-quantile (0..=1) of `values` by the nearest-rank method, or `None` if empty.
/// `values` must be sorted ascending.
pub fn quantile_sorted(values: &[Nanos], q: f64) -> Option<Nanos> {
    if values.is_empty() || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let n = values.len();
    let rank = guards_core::math::ceil(q * n as f64) as usize;
    values.get(rank.clamp(1, n) - 1).copied()
}
