//! Conformance runner for `retry_budget` (`tests/vectors/retry_budget.json`).
//!
//! Every case builds one `RetryBudget` (the mode wrapper, with the default of 10 buckets
//! for the windowed mode) and replays its steps in order on one thread.
//!
//! # Config
//!
//! `"mode"` selects the budget: `"token_bucket"` (default when absent), `"grpc"`, `"aws"`
//! or `"windowed"`. The other keys are the fields of that mode's config struct; a key left
//! out takes its `DEFAULT_*` value. Any other key is an error in the vector file.
//!
//! | mode | keys (JSON type) |
//! |---|---|
//! | `token_bucket` | `capacity` (number), `ratio` (number) |
//! | `grpc` | `max_tokens` (number), `token_ratio` (number) |
//! | `aws` | `capacity`, `transient_cost`, `timeout_cost`, `throttled_cost`, `hedge_cost`, `success_increment` (integers, whole tokens) |
//! | `windowed` | `ttl` (integer ns), `min_retries_per_sec` (number), `percent_can_retry` (number) |
//!
//! Numbers may be the strings `"nan"`, `"inf"`, `"-inf"`.
//!
//! # Steps
//!
//! Every step may carry `"now"` (integer ns; 0 when absent). The runner keeps a list of the
//! receipts granted by `withdraw`, numbered 0, 1, 2, ... in the order they were granted
//! within the case.
//!
//! | `op` | arguments | result (`expect`) |
//! |---|---|---|
//! | `deposit` | `now` | none (`null`) |
//! | `withdraw` | `now`, `cause` | `true` (granted; the receipt is appended to the list) or `false` |
//! | `allow_retry` | `now`, `cause` | `true` / `false` (the `RetryGate` call; no receipt is kept) |
//! | `on_success` | `now`, optional `receipt` (index into the list) | none; with `receipt`, that receipt is handed back (each index at most once), without it `None` is passed |
//! | `on_failure` | `now` | none |
//! | `tokens_micros` | `now` | integer: the balance in micro-tokens (may be negative in the windowed mode) |
//! | `tokens` | `now` | number: the balance in tokens |
//! | `receipt_cost_micros` | `receipt` (index) | integer: that held receipt's cost in micro-tokens |
//! | `stats` | – | object `{"deposits", "withdrawals", "refusals", "refunds", "failures"}` of integers |
//!
//! `cause` is one of `"timeout"`, `"transient"`, `"throttled"`, `"hedge"`; `"transient"`
//! when absent.

use super::common::*;

use guards_core::retry_budget::*;
use guards_core::retry_policy::{RetryCause, RetryGate};
use guards_core::Nanos;
use serde_json::json;

fn check_keys(config: &Value, allowed: &[&str]) {
    if let Some(obj) = config.as_object() {
        for k in obj.keys() {
            assert!(
                k == "mode" || allowed.contains(&k.as_str()),
                "unknown config key `{k}` in {config}"
            );
        }
    }
}

fn f64_or(v: &Value, key: &str, default: f64) -> f64 {
    opt_f64(v, key).unwrap_or(default)
}

fn u64_or(v: &Value, key: &str, default: u64) -> u64 {
    opt_u64(v, key).unwrap_or(default)
}

/// A `RetryBudgetConfig` from its vector encoding (also used by the retry driver's runner).
pub fn config_of(v: &Value) -> RetryBudgetConfig {
    let mode = v
        .get("mode")
        .and_then(Value::as_str)
        .unwrap_or("token_bucket");
    match mode {
        "token_bucket" => {
            check_keys(v, &["capacity", "ratio"]);
            RetryBudgetConfig::TokenBucket(TokenBudgetConfig {
                capacity: f64_or(v, "capacity", DEFAULT_TOKEN_CAPACITY),
                ratio: f64_or(v, "ratio", DEFAULT_TOKEN_RATIO),
            })
        }
        "grpc" => {
            check_keys(v, &["max_tokens", "token_ratio"]);
            RetryBudgetConfig::Grpc(GrpcThrottleConfig {
                max_tokens: f64_or(v, "max_tokens", DEFAULT_GRPC_MAX_TOKENS),
                token_ratio: f64_or(v, "token_ratio", DEFAULT_GRPC_TOKEN_RATIO),
            })
        }
        "aws" => {
            check_keys(
                v,
                &[
                    "capacity",
                    "transient_cost",
                    "timeout_cost",
                    "throttled_cost",
                    "hedge_cost",
                    "success_increment",
                ],
            );
            RetryBudgetConfig::Aws(AwsRetryQuotaConfig {
                capacity: u64_or(v, "capacity", DEFAULT_AWS_CAPACITY),
                transient_cost: u64_or(v, "transient_cost", DEFAULT_AWS_TRANSIENT_COST),
                timeout_cost: u64_or(v, "timeout_cost", DEFAULT_AWS_TIMEOUT_COST),
                throttled_cost: u64_or(v, "throttled_cost", DEFAULT_AWS_THROTTLED_COST),
                hedge_cost: u64_or(v, "hedge_cost", DEFAULT_AWS_HEDGE_COST),
                success_increment: u64_or(v, "success_increment", DEFAULT_AWS_SUCCESS_INCREMENT),
            })
        }
        "windowed" => {
            check_keys(v, &["ttl", "min_retries_per_sec", "percent_can_retry"]);
            RetryBudgetConfig::Windowed(WindowedBudgetConfig {
                ttl: opt_nanos(v, "ttl").unwrap_or(DEFAULT_WINDOW_TTL),
                min_retries_per_sec: f64_or(v, "min_retries_per_sec", DEFAULT_MIN_RETRIES_PER_SEC),
                percent_can_retry: f64_or(v, "percent_can_retry", DEFAULT_PERCENT_CAN_RETRY),
            })
        }
        other => panic!("unknown mode `{other}`"),
    }
}

fn cause_of(step: &Value) -> RetryCause {
    match step
        .get("cause")
        .and_then(Value::as_str)
        .unwrap_or("transient")
    {
        "timeout" => RetryCause::Timeout,
        "transient" => RetryCause::Transient,
        "throttled" => RetryCause::Throttled,
        "hedge" => RetryCause::Hedge,
        other => panic!("unknown cause `{other}`"),
    }
}

fn step_now(step: &Value) -> Nanos {
    opt_nanos(step, "now").unwrap_or(Nanos::ZERO)
}

#[test]
fn retry_budget_vectors() {
    replay(
        "retry_budget",
        |case| {
            Ok((
                RetryBudget::<10>::new(config_of(&case["config"]))?,
                Vec::new(),
            ))
        },
        |(budget, receipts), case, step| {
            let now = step_now(step);
            match str_of(step, "op") {
                "deposit" => {
                    budget.deposit(now);
                    Value::Null
                }
                "withdraw" => match budget.withdraw(now, cause_of(step)) {
                    Some(r) => {
                        receipts.push(Some(r));
                        json!(true)
                    }
                    None => json!(false),
                },
                "allow_retry" => json!(budget.allow_retry(now, cause_of(step))),
                "on_success" => {
                    let receipt = opt_u64(step, "receipt").map(|k| {
                        receipts
                            .get_mut(k as usize)
                            .and_then(Option::take)
                            .unwrap_or_else(|| {
                                panic!("case `{}`: receipt {k} not held", name(case))
                            })
                    });
                    budget.on_success(now, receipt);
                    Value::Null
                }
                "on_failure" => {
                    budget.on_failure(now);
                    Value::Null
                }
                "tokens_micros" => json!(budget.tokens_micros(now)),
                "tokens" => json!(budget.tokens(now)),
                "receipt_cost_micros" => {
                    let k = u64_of(step, "receipt") as usize;
                    let r = receipts
                        .get(k)
                        .and_then(Option::as_ref)
                        .unwrap_or_else(|| panic!("case `{}`: receipt {k} not held", name(case)));
                    json!(r.cost_micros())
                }
                "stats" => {
                    let s = budget.stats();
                    json!({
                        "deposits": s.deposits,
                        "withdrawals": s.withdrawals,
                        "refusals": s.refusals,
                        "refunds": s.refunds,
                        "failures": s.failures,
                    })
                }
                other => panic!("case `{}`: unknown op `{other}`", name(case)),
            }
        },
    );
}
