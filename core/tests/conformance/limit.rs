//! Conformance runner for `limit` (`tests/vectors/limit.json`): the limit algorithms fed
//! one sample at a time.
//!
//! # Config
//! An object with `"algorithm"`: `"fixed"`, `"aimd"`, `"vegas"` or `"gradient"`.
//! - `"fixed"`: `"limit"` (integer, `1..=u64::MAX`).
//! - otherwise: any field of `AimdConfig`, `VegasConfig` or `GradientConfig` under its
//!   Rust name (`initial_limit`, `backoff_ratio`, `interval`, `probe_seed`, ...). Missing
//!   fields take the documented defaults. Integers are JSON integers, durations
//!   (`interval`, `latency_target`) integer nanoseconds, floats JSON numbers or
//!   `"nan"`/`"inf"`/`"-inf"`. A key the algorithm does not have is an error in the file.
//!
//! The limiter and admission vectors embed the same object under their `"limit"` key.
//!
//! # Ops
//! - `update` — arguments `now` (ns), `rtt` (ns), `in_flight` (integer), `dropped` (bool);
//!   result: the limit after the sample (integer), as `Limit::update` returns it.
//! - `limit` — result: the current limit (integer).
//! - `estimate` — Vegas and Gradient only; result: the float estimate, compared bit for bit
//!   (written in the file as the shortest decimal that round-trips).
//! - `min_rtt` — Vegas only; result: the no-load RTT in use, integer ns (0 before any
//!   sample).
//! - `long_rtt` — Gradient only; result: the long-term RTT average, float ns.

use guards_core::limit::{
    AimdConfig, GradientConfig, Limit, LimitConfig, LimitSample, VegasConfig,
};
use guards_core::Nanos;

use super::common::{self, check_keys, Value};

fn u64_or(v: &Value, key: &str, default: u64) -> u64 {
    if v.get(key).is_some() {
        common::u64_of(v, key)
    } else {
        default
    }
}

fn f64_or(v: &Value, key: &str, default: f64) -> f64 {
    if v.get(key).is_some() {
        common::f64_of(v, key)
    } else {
        default
    }
}

fn nanos_or(v: &Value, key: &str, default: Nanos) -> Nanos {
    Nanos(u64_or(v, key, default.0))
}

/// Parse a `limit` config object (shared with the limiter and admission runners).
pub fn limit_config(v: &Value) -> LimitConfig {
    match common::str_of(v, "algorithm") {
        "fixed" => {
            check_keys("limit config", v, &["algorithm", "limit"]);
            LimitConfig::Fixed(common::u64_of(v, "limit"))
        }
        "aimd" => {
            check_keys(
                "limit config",
                v,
                &[
                    "algorithm",
                    "initial_limit",
                    "min_limit",
                    "max_limit",
                    "backoff_ratio",
                    "interval",
                    "latency_target",
                ],
            );
            let d = AimdConfig::default();
            LimitConfig::Aimd(AimdConfig {
                initial_limit: u64_or(v, "initial_limit", d.initial_limit),
                min_limit: u64_or(v, "min_limit", d.min_limit),
                max_limit: u64_or(v, "max_limit", d.max_limit),
                backoff_ratio: f64_or(v, "backoff_ratio", d.backoff_ratio),
                interval: nanos_or(v, "interval", d.interval),
                latency_target: nanos_or(v, "latency_target", d.latency_target),
            })
        }
        "vegas" => {
            check_keys(
                "limit config",
                v,
                &[
                    "algorithm",
                    "initial_limit",
                    "min_limit",
                    "max_limit",
                    "smoothing",
                    "alpha",
                    "beta",
                    "threshold",
                    "probe_multiplier",
                    "probe_jitter",
                    "probe_seed",
                ],
            );
            let d = VegasConfig::default();
            LimitConfig::Vegas(VegasConfig {
                initial_limit: u64_or(v, "initial_limit", d.initial_limit),
                min_limit: u64_or(v, "min_limit", d.min_limit),
                max_limit: u64_or(v, "max_limit", d.max_limit),
                smoothing: f64_or(v, "smoothing", d.smoothing),
                alpha: f64_or(v, "alpha", d.alpha),
                beta: f64_or(v, "beta", d.beta),
                threshold: f64_or(v, "threshold", d.threshold),
                probe_multiplier: u64_or(v, "probe_multiplier", d.probe_multiplier),
                probe_jitter: f64_or(v, "probe_jitter", d.probe_jitter),
                probe_seed: u64_or(v, "probe_seed", d.probe_seed),
            })
        }
        "gradient" => {
            check_keys(
                "limit config",
                v,
                &[
                    "algorithm",
                    "initial_limit",
                    "min_limit",
                    "max_limit",
                    "smoothing",
                    "queue_size",
                    "long_window",
                    "warmup_samples",
                ],
            );
            let d = GradientConfig::default();
            LimitConfig::Gradient(GradientConfig {
                initial_limit: u64_or(v, "initial_limit", d.initial_limit),
                min_limit: u64_or(v, "min_limit", d.min_limit),
                max_limit: u64_or(v, "max_limit", d.max_limit),
                smoothing: f64_or(v, "smoothing", d.smoothing),
                queue_size: f64_or(v, "queue_size", d.queue_size),
                long_window: u64_or(v, "long_window", d.long_window),
                warmup_samples: u64_or(v, "warmup_samples", d.warmup_samples),
            })
        }
        other => panic!("unknown algorithm `{other}`"),
    }
}

fn run_step(limit: &mut Limit, case: &Value, step: &Value) -> Value {
    match common::str_of(step, "op") {
        "update" => Value::from(limit.update(LimitSample {
            now: common::now(step),
            rtt: Nanos(common::u64_of(step, "rtt")),
            in_flight: common::u64_of(step, "in_flight"),
            dropped: common::opt_bool(step, "dropped").expect("`dropped` (bool)"),
        })),
        "limit" => Value::from(limit.limit()),
        "estimate" => match limit {
            Limit::Vegas(v) => Value::from(v.estimate()),
            Limit::Gradient(g) => Value::from(g.estimate()),
            other => panic!("`estimate` on {:?}", other.algorithm()),
        },
        "min_rtt" => match limit {
            Limit::Vegas(v) => Value::from(v.min_rtt().0),
            other => panic!("`min_rtt` on {:?}", other.algorithm()),
        },
        "long_rtt" => match limit {
            Limit::Gradient(g) => Value::from(g.long_rtt()),
            other => panic!("`long_rtt` on {:?}", other.algorithm()),
        },
        op => panic!("case `{}`: unknown op `{op}`", common::name(case)),
    }
}

#[test]
fn limit_vectors() {
    common::replay(
        "limit",
        |case| Limit::new(limit_config(&case["config"])),
        run_step,
    );
}
