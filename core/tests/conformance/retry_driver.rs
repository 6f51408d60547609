//! Conformance runner for `retry_driver` (`tests/vectors/retry_driver.json`).
//!
//! # Encoding (for every language's runner)
//!
//! - **Config** (`config`): `policy` (a retry policy config, encoded as in
//!   `retry_policy.json`; default: every default), `budget` (a retry budget config, encoded
//!   as in `retry_budget.json`, with its `mode`; absent: no budget), `deadline` (the
//!   request's deadline, an instant in ns; absent: none), `attempt_timeout` and `margin`
//!   (ns; default 60 ms and 1 ms), `idempotency` (`"idempotent"` by default,
//!   `"keyed_side_effect"`, `"unkeyed_side_effect"`). A case with `expect_error` must fail
//!   `RetryDriver::new` (the attempt settings are its only config).
//! - **Random generator**: SplitMix64 seeded with the case's `seed` (default 0), used by
//!   every `report`.
//! - **Steps**: a step's result is what the caller must do next:
//!   `{"attempt": {"number", "budget", "expires_at"}}`, `{"wait": {"retry_at",
//!   "retry_after"}}`, `"succeeded"`, `{"give_up": reason}`; or, for a call in the wrong
//!   phase, `{"error": {"call", "phase"}}`.
//!
//! | `op` | arguments | result |
//! |---|---|---|
//! | `start` | `now` | a step |
//! | `report` | `now`, `outcome` (name), optional `retry_after` (ns) | a step |
//! | `resume` | `now` | a step |
//! | `cancel` | – | a step |
//! | `state` | – | `{"phase", "attempts", "retries", "give_up" (reason or null), "last_outcome" (name or null)}` |
//! | `policy_stats` | – | the `RetryPolicyStats` fields the `expect` names (`retries`, `succeeded`, ..., `rejected`, `ignored`, `cancelled`) |
//! | `budget` | `now` | `tokens_micros` and the `RetryBudgetStats` fields (`deposits`, `withdrawals`, `refusals`, `refunds`, `failures`), those the `expect` names |

use guards_core::deadline::{Deadline, DeadlineConfig};
use guards_core::retry_budget::{Budget, RetryBudget};
use guards_core::retry_driver::{RetryDriver, RetryDriverError, RetryStep};
use guards_core::retry_policy::{Idempotency, RetryPolicy};
use guards_core::{ConfigError, Outcome, Rng};
use serde_json::json;

use crate::common::{self, Value};

struct Case {
    driver: RetryDriver,
    policy: RetryPolicy,
    budget: Option<RetryBudget>,
    rng: Rng,
}

fn build(case: &Value) -> Result<Case, ConfigError> {
    let c = &case["config"];
    common::check_keys(
        "config",
        c,
        &[
            "policy",
            "budget",
            "deadline",
            "attempt_timeout",
            "margin",
            "idempotency",
        ],
    );
    let d = DeadlineConfig::default();
    let attempt = DeadlineConfig {
        attempt_timeout: common::opt_nanos(c, "attempt_timeout").unwrap_or(d.attempt_timeout),
        margin: common::opt_nanos(c, "margin").unwrap_or(d.margin),
    };
    let deadline = common::opt_nanos(c, "deadline").map_or(Deadline::NONE, Deadline::at);
    let idempotency = c
        .get("idempotency")
        .and_then(Value::as_str)
        .map_or(Idempotency::Idempotent, |s| {
            Idempotency::from_name(s).unwrap_or_else(|| panic!("unknown idempotency {s}"))
        });
    let driver = RetryDriver::new(deadline, idempotency, attempt)?;
    let policy = RetryPolicy::new(crate::retry_policy::config_of(&c["policy"]))?;
    let budget = match c.get("budget") {
        Some(b) => Some(RetryBudget::new(crate::retry_budget::config_of(b))?),
        None => None,
    };
    Ok(Case {
        driver,
        policy,
        budget,
        rng: common::case_rng(case),
    })
}

fn step_value(r: Result<RetryStep, RetryDriverError>) -> Value {
    match r {
        Ok(RetryStep::Attempt(a)) => json!({"attempt": {
            "number": a.number, "budget": a.budget.0, "expires_at": a.expires_at.0}}),
        Ok(RetryStep::Wait(w)) => json!({"wait": {
            "retry_at": w.retry_at.0, "retry_after": w.retry_after.0}}),
        Ok(RetryStep::Succeeded) => json!("succeeded"),
        Ok(RetryStep::GiveUp(reason)) => json!({"give_up": reason.name()}),
        Err(e) => json!({"error": {"call": e.call, "phase": e.phase.name()}}),
    }
}

fn run_step(case: &mut Case, step: &Value) -> Value {
    let budget = case.budget.as_ref().map(|b| b as &dyn Budget);
    match common::str_of(step, "op") {
        "start" => step_value(case.driver.start(common::now(step), budget)),
        "report" => {
            let name = common::str_of(step, "outcome");
            let outcome =
                Outcome::from_name(name).unwrap_or_else(|| panic!("unknown outcome {name}"));
            step_value(case.driver.report(
                common::now(step),
                outcome,
                common::opt_nanos(step, "retry_after"),
                &case.policy,
                &case.rng,
                budget,
            ))
        }
        "resume" => step_value(case.driver.resume(common::now(step))),
        "cancel" => step_value(case.driver.cancel()),
        "state" => {
            let d = &case.driver;
            json!({
                "phase": d.phase().name(),
                "attempts": d.attempts(),
                "retries": d.retries(),
                "give_up": d.give_up_reason().map(|r| r.name()),
                "last_outcome": d.last_outcome().map(Outcome::name),
            })
        }
        "policy_stats" => {
            let s = case.policy.stats();
            let all = json!({
                "retries": s.retries,
                "succeeded": s.succeeded,
                "permanent": s.permanent,
                "overloaded": s.overloaded,
                "not_retryable": s.not_retryable,
                "attempts_exhausted": s.attempts_exhausted,
                "not_idempotent": s.not_idempotent,
                "retry_after_too_long": s.retry_after_too_long,
                "deadline_exceeded": s.deadline_exceeded,
                "budget_exhausted": s.budget_exhausted,
                "rejected": s.rejected,
                "ignored": s.ignored,
                "cancelled": s.cancelled,
            });
            common::subset(step, all)
        }
        "budget" => {
            let b = case.budget.as_ref().expect("the case has a budget");
            let s = b.stats();
            let all = json!({
                "tokens_micros": b.tokens_micros(common::now(step)),
                "deposits": s.deposits,
                "withdrawals": s.withdrawals,
                "refusals": s.refusals,
                "refunds": s.refunds,
                "failures": s.failures,
            });
            common::subset(step, all)
        }
        other => panic!("unknown retry_driver op `{other}`"),
    }
}

#[test]
fn retry_driver_vectors() {
    common::replay("retry_driver", build, |case, _, step| run_step(case, step));
}
