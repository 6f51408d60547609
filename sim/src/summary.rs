//! The summary of a run of any topology, computed here so that every binding (and every
//! topology, not only the Basketly presets) gets the same numbers.
//!
//! [`summary`] gives, in order:
//! - `disturbance`: `{"start", "end"}` of the topology's slowdowns (the earliest start to
//!   the latest end, clock times), or `null` when it has none: the window a comparison
//!   reads "during" from;
//! - `recovered_at`: the first interval, from the disturbance's start (the run's start
//!   without one), from which the full answers of all entries stay at or above 95 % of the
//!   actions offered to the end of the run, or `null`;
//! - `recovery_s`: seconds from the disturbance's end (the run's start without one) to
//!   `recovered_at` (negative: recovered before it ended), or `null` (never);
//! - `entries`: per entry, the whole run's `offered`, `full`, `degraded` (served without an
//!   optional call, by a brownout fallback) and `failed` actions, and `goodput` (full ÷
//!   offered) and `goodput_incl_degraded`;
//! - `latency_ms`: per edge that records latencies, `p50`, `p95`, `p99`, `p999`, `mean`
//!   and `count` of its whole successful calls (retries and hedges included) in ms;
//! - `edges`: per edge that was called, `calls` (attempts, retries, probes and hedges),
//!   `first` attempts, `calls_per_first_attempt` and `extra_load` (hedges ÷ first
//!   attempts);
//! - `events` and `peak_calls` (most calls in flight at once).
//!
//! The Basketly presets put their own named values first (`recovered_at` over the three
//! request types, the stock-call latency, ...; see [`crate::basketly`]) and keep these
//! after them.

use guards_core::Nanos;

use crate::result::{quantile_sorted, SimResult, SummaryValue};
use crate::topology::{clock, Topology};

/// Share of offered actions that full answers must reach for a run to count as recovered.
pub const RECOVERED_SHARE: f64 = 0.95;

/// The first interval at or after `from` from which `good[i] >= RECOVERED_SHARE ×
/// offered[i]` holds to the end, as the interval's start.
pub fn recovered_at(r: &SimResult, good: &[f64], offered: &[f64], from: Nanos) -> Option<Nanos> {
    let first = r.index_of(from).unwrap_or(0);
    let mut candidate = None;
    for i in (first..r.len().min(good.len()).min(offered.len())).rev() {
        if good[i] >= RECOVERED_SHARE * offered[i] {
            candidate = Some(i);
        } else {
            break;
        }
    }
    candidate.map(|i| r.time_of(i))
}

/// Seconds from `end` to `recovered` (`null`: never recovered).
pub fn recovery_s(recovered: Option<Nanos>, end: Nanos) -> SummaryValue {
    recovered.map_or(SummaryValue::Null, |t| {
        SummaryValue::Number((t.as_u64() as f64 - end.as_u64() as f64) / 1e9)
    })
}

/// The earliest start and latest end of the topology's slowdowns.
pub fn disturbance(topo: &Topology) -> Option<(Nanos, Nanos)> {
    let mut out: Option<(Nanos, Nanos)> = None;
    for s in topo.services.iter().flat_map(|s| &s.slowdowns) {
        out = Some(match out {
            None => (s.start, s.end),
            Some((a, b)) => (a.min(s.start), b.max(s.end)),
        });
    }
    out
}

/// Percentiles, mean and count of `lat` (sorted here) in milliseconds.
pub fn latency_map(mut lat: Vec<Nanos>) -> SummaryValue {
    lat.sort_unstable();
    let ms = |q: f64| {
        quantile_sorted(&lat, q).map_or(SummaryValue::Null, |d| {
            SummaryValue::Number(d.as_u64() as f64 / 1e6)
        })
    };
    let mean = if lat.is_empty() {
        SummaryValue::Null
    } else {
        SummaryValue::Number(
            lat.iter().map(|d| d.as_u64() as f64).sum::<f64>() / lat.len() as f64 / 1e6,
        )
    };
    SummaryValue::Map(vec![
        ("p50".into(), ms(0.5)),
        ("p95".into(), ms(0.95)),
        ("p99".into(), ms(0.99)),
        ("p999".into(), ms(0.999)),
        ("mean".into(), mean),
        ("count".into(), SummaryValue::Number(lat.len() as f64)),
    ])
}

fn ratio(a: f64, b: f64) -> SummaryValue {
    if b > 0.0 {
        SummaryValue::Number(a / b)
    } else {
        SummaryValue::Null
    }
}

/// The summary of `r`, a run of `topo` (see the module docs).
pub fn summary(r: &SimResult, topo: &Topology) -> Vec<(String, SummaryValue)> {
    let total = |name: &str| r.column(name).map_or(0.0, |v| v.iter().sum::<f64>());
    let mut out = Vec::new();
    let dist = disturbance(topo);
    out.push((
        "disturbance".to_string(),
        dist.map_or(SummaryValue::Null, |(a, b)| {
            SummaryValue::Map(vec![
                ("start".into(), SummaryValue::Text(clock::format_millis(a))),
                ("end".into(), SummaryValue::Text(clock::format_millis(b))),
            ])
        }),
    ));
    let n = r.len();
    let mut good = vec![0.0; n];
    let mut offered = vec![0.0; n];
    for e in &topo.entries {
        for (acc, name) in [(&mut good, "full"), (&mut offered, "offered")] {
            if let Some(col) = r.column(&format!("entry.{}.{name}", e.name)) {
                for (a, x) in acc.iter_mut().zip(col) {
                    *a += x;
                }
            }
        }
    }
    let from = dist.map_or(r.start, |(a, _)| a);
    let rec = recovered_at(r, &good, &offered, from);
    out.push((
        "recovered_at".to_string(),
        rec.map_or(SummaryValue::Null, |t| SummaryValue::Text(clock::format(t))),
    ));
    out.push((
        "recovery_s".to_string(),
        recovery_s(rec, dist.map_or(r.start, |(_, b)| b)),
    ));
    let mut entries = Vec::new();
    for e in &topo.entries {
        let p = format!("entry.{}", e.name);
        let get = |k: &str| total(&format!("{p}.{k}"));
        let (o, f, d, x) = (get("offered"), get("full"), get("degraded"), get("failed"));
        entries.push((
            e.name.clone(),
            SummaryValue::Map(vec![
                ("offered".into(), SummaryValue::Number(o)),
                ("full".into(), SummaryValue::Number(f)),
                ("degraded".into(), SummaryValue::Number(d)),
                ("failed".into(), SummaryValue::Number(x)),
                ("goodput".into(), ratio(f, o)),
                ("goodput_incl_degraded".into(), ratio(f + d, o)),
            ]),
        ));
    }
    out.push(("entries".to_string(), SummaryValue::Map(entries)));
    out.push((
        "latency_ms".to_string(),
        SummaryValue::Map(
            r.latencies
                .iter()
                .map(|l| {
                    (
                        l.edge.clone(),
                        latency_map(l.calls.iter().map(|(_, d)| *d).collect()),
                    )
                })
                .collect(),
        ),
    ));
    let mut edges = Vec::new();
    for e in &topo.edges {
        let p = format!("edge.{}", e.name);
        let calls = total(&format!("{p}.calls"));
        if calls == 0.0 {
            continue;
        }
        let first = total(&format!("{p}.first"));
        let hedges = total(&format!("{p}.hedges"));
        edges.push((
            e.name.clone(),
            SummaryValue::Map(vec![
                ("calls".into(), SummaryValue::Number(calls)),
                ("first".into(), SummaryValue::Number(first)),
                ("calls_per_first_attempt".into(), ratio(calls, first)),
                ("extra_load".into(), ratio(hedges, first)),
            ]),
        ));
    }
    out.push(("edges".to_string(), SummaryValue::Map(edges)));
    out.push((
        "events".to_string(),
        SummaryValue::Number(r.stats.events as f64),
    ));
    out.push((
        "peak_calls".to_string(),
        SummaryValue::Number(r.stats.peak_calls as f64),
    ));
    out
}
