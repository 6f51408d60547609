//! Conformance runner for `hedging` (`tests/vectors/hedging.json`).
//!
//! The policy under test owns a tracker of the default shape (6 windows of 1,152 buckets:
//! `Hedging<6, 1152>`). All times and durations are integer nanoseconds.
//!
//! Config keys (omitted ones take the documented defaults): `delay_quantile` (float),
//! `min_delay`, `max_delay` (ns), `max_hedges`, `min_samples` (integers),
//! `refresh_interval` (ns), and `tracker`: an object with the latency tracker's keys
//! (`window`, `timeout_quantile`, `timeout_factor`, `min_samples`; see the
//! `latency_tracker` runner). An error in the tracker's config names `tracker.<field>`.
//!
//! Steps (`op`: arguments → `expect`):
//! - `record_latency`: `now`, `latency` → no result.
//! - `hedge_delay`: `now` → integer ns, or `null` with too few samples.
//! - `should_hedge`: `now`, `request_started`, `hedges_sent` (integer), `idempotent`
//!   (bool), optional `gate`: `"allow"` or `"deny"` — a retry gate that allows or refuses
//!   every hedge; without `gate` no gate is passed. Result: `{"decision": "hedge_now"}`,
//!   `{"decision": "wait_until", "at": <ns>}` or `{"decision": "never", "reason": <r>}`
//!   with `r` one of `not_idempotent`, `limit_reached`, `no_latency_data`,
//!   `budget_exhausted`.
//! - `stats` → `{"hedges", "deferred", "not_idempotent", "limit_reached",
//!   "no_latency_data", "budget_exhausted"}`.

use guards_core::hedging::{HedgeDecision, Hedging, HedgingConfig};
use guards_core::retry_policy::{RetryCause, RetryGate};
use guards_core::Nanos;
use serde_json::json;

use crate::common::*;

fn config_of(c: &Value) -> HedgingConfig {
    let d = HedgingConfig::default();
    HedgingConfig {
        delay_quantile: opt_f64(c, "delay_quantile").unwrap_or(d.delay_quantile),
        min_delay: opt_nanos(c, "min_delay").unwrap_or(d.min_delay),
        max_delay: opt_nanos(c, "max_delay").unwrap_or(d.max_delay),
        max_hedges: opt_u64(c, "max_hedges")
            .map_or(d.max_hedges, |v| u32::try_from(v).unwrap_or(u32::MAX)),
        min_samples: opt_u64(c, "min_samples").unwrap_or(d.min_samples),
        refresh_interval: opt_nanos(c, "refresh_interval").unwrap_or(d.refresh_interval),
        tracker: c
            .get("tracker")
            .map_or(d.tracker, crate::latency_tracker::config_of),
    }
}

struct Fixed(bool);

impl RetryGate for Fixed {
    fn allow_retry(&self, _now: Nanos, cause: RetryCause) -> bool {
        assert_eq!(cause, RetryCause::Hedge);
        self.0
    }
}

fn decision(d: HedgeDecision) -> Value {
    match d {
        HedgeDecision::HedgeNow => json!({"decision": "hedge_now"}),
        HedgeDecision::WaitUntil(at) => json!({"decision": "wait_until", "at": at.as_u64()}),
        HedgeDecision::Never(r) => json!({"decision": "never", "reason": r.name()}),
    }
}

#[test]
fn hedging_vectors() {
    replay(
        "hedging",
        |case| Hedging::<6, 1152>::new(config_of(&case["config"])),
        |h, case, step| match str_of(step, "op") {
            "record_latency" => {
                h.record_latency(now(step), Nanos(u64_of(step, "latency")));
                Value::Null
            }
            "hedge_delay" => h
                .hedge_delay(now(step))
                .map_or(Value::Null, |d| json!(d.as_u64())),
            "should_hedge" => {
                let gate = step.get("gate").and_then(Value::as_str).map(|g| match g {
                    "allow" => Fixed(true),
                    "deny" => Fixed(false),
                    other => panic!("case `{}`: unknown gate `{other}`", name(case)),
                });
                let sent = u32::try_from(u64_of(step, "hedges_sent")).expect("hedges_sent");
                decision(h.should_hedge(
                    now(step),
                    Nanos(u64_of(step, "request_started")),
                    sent,
                    opt_bool(step, "idempotent").expect("idempotent"),
                    gate.as_ref().map(|g| g as &dyn RetryGate),
                ))
            }
            "stats" => {
                let s = h.stats();
                json!({"hedges": s.hedges, "deferred": s.deferred,
                       "not_idempotent": s.not_idempotent,
                       "limit_reached": s.limit_reached,
                       "no_latency_data": s.no_latency_data,
                       "budget_exhausted": s.budget_exhausted})
            }
            other => panic!("case `{}`: unknown op `{other}`", name(case)),
        },
    );
}
