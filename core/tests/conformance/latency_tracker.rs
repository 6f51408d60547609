//! Conformance runner for `latency_tracker` (`tests/vectors/latency_tracker.json`).
//!
//! The tracker under test has the default shape: a ring of 6 windows of 1,152 buckets
//! (`LatencyTracker<6, 1152>`). All times and durations are integer nanoseconds.
//!
//! Config keys (omitted ones take the documented defaults): `window` (ns),
//! `timeout_quantile` (float), `timeout_factor` (float), `min_samples` (integer).
//!
//! Steps (`op`: arguments → `expect`):
//! - `record`: `now`, `latency` → no result.
//! - `count`: `now` → integer, samples in the windows merged at `now`.
//! - `quantile`: `now`, `q` (float; `"nan"` allowed) → integer ns, or `null` when there
//!   are no samples or `q` is outside `[0, 1]`.
//! - `summary`: `now` → `{"count", "p50", "p95", "p99", "p999", "max"}` (integers; all 0
//!   when empty).
//! - `propose_timeout`: `now` → integer ns, or `null` below `min_samples`.
//! - `false_timeout_rate`: `now`, `timeout` → float in `[0, 1]`, or `null` when empty.
//! - `stats` → `{"recorded", "saturated", "stale"}`.

use guards_core::latency_tracker::{LatencyTracker, LatencyTrackerConfig};
use guards_core::Nanos;
use serde_json::json;

use crate::common::*;

pub fn config_of(c: &Value) -> LatencyTrackerConfig {
    let d = LatencyTrackerConfig::default();
    LatencyTrackerConfig {
        window: opt_nanos(c, "window").unwrap_or(d.window),
        timeout_quantile: opt_f64(c, "timeout_quantile").unwrap_or(d.timeout_quantile),
        timeout_factor: opt_f64(c, "timeout_factor").unwrap_or(d.timeout_factor),
        min_samples: opt_u64(c, "min_samples").unwrap_or(d.min_samples),
    }
}

fn opt_ns(v: Option<Nanos>) -> Value {
    v.map_or(Value::Null, |n| json!(n.as_u64()))
}

#[test]
fn latency_tracker_vectors() {
    replay(
        "latency_tracker",
        |case| LatencyTracker::<6, 1152>::new(config_of(&case["config"])),
        |t, case, step| match str_of(step, "op") {
            "record" => {
                t.record(now(step), Nanos(u64_of(step, "latency")));
                Value::Null
            }
            "count" => json!(t.count(now(step))),
            "quantile" => opt_ns(t.quantile(now(step), f64_of(step, "q"))),
            "summary" => {
                let s = t.summary(now(step));
                json!({"count": s.count, "p50": s.p50.as_u64(), "p95": s.p95.as_u64(),
                       "p99": s.p99.as_u64(), "p999": s.p999.as_u64(), "max": s.max.as_u64()})
            }
            "propose_timeout" => opt_ns(t.propose_timeout(now(step))),
            "false_timeout_rate" => t
                .false_timeout_rate(now(step), Nanos(u64_of(step, "timeout")))
                .map_or(Value::Null, crate::adaptive_throttle::float),
            "stats" => {
                let s = t.stats();
                json!({"recorded": s.recorded, "saturated": s.saturated, "stale": s.stale})
            }
            other => panic!("case `{}`: unknown op `{other}`", name(case)),
        },
    );
}
