//! Conformance runner for `adaptive_throttle` (`tests/vectors/adaptive_throttle.json`).
//!
//! The throttle under test has the default 12 buckets (`AdaptiveThrottle<12>`) and uses
//! its own generator seeded with the config's `seed` (`should_reject`, not
//! `should_reject_with`). All times are integer nanoseconds.
//!
//! Config keys (omitted ones take the documented defaults): `window` (ns), `k`,
//! `aggression`, `max_reject_probability` (floats; `"nan"`, `"inf"`, `"-inf"` allowed),
//! `min_requests` (integer), `count_rejected` (bool), `seed` (integer, 0..2^64).
//!
//! Steps (`op`: arguments → `expect`):
//! - `should_reject`: `now` → bool (`true` = rejected locally).
//! - `on_accepted`: `now` → no result.
//! - `on_rejected_by_backend`: `now` → no result.
//! - `reject_probability`: `now` → float, compared bit for bit: the JSON number is the
//!   shortest decimal that reads back as the expected binary64, so compare the result's
//!   shortest decimal form with it (or parse both with a correctly rounding parser).
//! - `window`: `now` → `{"requests", "accepts"}` (integers).
//! - `stats` → `{"admitted", "throttled", "accepted", "rejected_by_backend", "stale"}`.

use guards_core::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
use serde_json::json;

use crate::common::*;

fn config_of(c: &Value) -> AdaptiveThrottleConfig {
    let d = AdaptiveThrottleConfig::default();
    AdaptiveThrottleConfig {
        window: opt_nanos(c, "window").unwrap_or(d.window),
        k: opt_f64(c, "k").unwrap_or(d.k),
        aggression: opt_f64(c, "aggression").unwrap_or(d.aggression),
        max_reject_probability: opt_f64(c, "max_reject_probability")
            .unwrap_or(d.max_reject_probability),
        min_requests: opt_u64(c, "min_requests").unwrap_or(d.min_requests),
        count_rejected: opt_bool(c, "count_rejected").unwrap_or(d.count_rejected),
        seed: opt_u64(c, "seed").unwrap_or(d.seed),
    }
}

/// A float result as the JSON parser reads its shortest decimal form. serde_json's default
/// parser is not correctly rounded, so the expected value in the file may differ from the
/// binary64 it spells by an ulp; reading the result's shortest form (what the vector file
/// holds, written by a shortest-round-trip printer) through the same parser makes equal
/// doubles compare equal, and only them.
pub fn float(x: f64) -> Value {
    serde_json::from_str(&json!(x).to_string()).expect("a float prints as JSON")
}

#[test]
fn adaptive_throttle_vectors() {
    replay(
        "adaptive_throttle",
        |case| AdaptiveThrottle::<12>::new(config_of(&case["config"])),
        |t, case, step| match str_of(step, "op") {
            "should_reject" => json!(t.should_reject(now(step))),
            "on_accepted" => {
                t.on_accepted(now(step));
                Value::Null
            }
            "on_rejected_by_backend" => {
                t.on_rejected_by_backend(now(step));
                Value::Null
            }
            "reject_probability" => float(t.reject_probability(now(step))),
            "window" => {
                let w = t.window(now(step));
                json!({"requests": w.requests, "accepts": w.accepts})
            }
            "stats" => {
                let s = t.stats();
                json!({"admitted": s.admitted, "throttled": s.throttled,
                       "accepted": s.accepted,
                       "rejected_by_backend": s.rejected_by_backend, "stale": s.stale})
            }
            other => panic!("case `{}`: unknown op `{other}`", name(case)),
        },
    );
}
