//! Conformance runner for `retry_policy` (`tests/vectors/retry_policy.json`).
//!
//! # Encoding (for every language's runner)
//!
//! - **Config** (`config`): the `RetryPolicyConfig` fields `max_attempts` (integer),
//!   `retry_timeouts`, `retry_connection_errors`, `retry_other_transient`,
//!   `retry_throttled`, `honor_retry_after` (booleans), `max_retry_after`,
//!   `min_attempt_time` (integer ns), `unkeyed_side_effects` (`"never"` or
//!   `"retry_throttled"`), and `backoff`, an object with the backoff vector's keys (`base`,
//!   `cap`, `multiplier`, `jitter`). Any missing key, at either level, takes its default.
//!   A case with `expect_error` must fail `RetryPolicy::new`; embedded backoff fields are
//!   named `backoff.base`, `backoff.cap`, `backoff.multiplier`.
//! - **Random generator**: each case owns one SplitMix64 generator seeded with the case's
//!   `seed` (integer, default 0), shared by all its steps.
//! - **Ops** (`op`, arguments, `expect`):
//!   - `decide` → `RetryPolicy::decide(now, ctx, &case_rng, gate)` with
//!     - `now` (integer ns), `attempts_made` (integer);
//!     - `outcome`: an `Outcome` name (`"success"`, `"timeout"`, `"connection_error"`,
//!       `"other_transient"`, `"throttled"`, `"overloaded"`, `"permanent"`, `"rejected"`,
//!       `"ignored"`, `"cancelled"`); `retry_after` (integer ns, optional) is the
//!       throttle's Retry-After and is only read for `"throttled"`;
//!     - `idempotency`: `"idempotent"` (default), `"keyed_side_effect"`,
//!       `"unkeyed_side_effect"`;
//!     - `time_left`: integer ns, or `null`/absent for no deadline;
//!     - `prev_delay`: integer ns, default 0;
//!     - `gate`: `"allow"` or `"refuse"` for a gate that always answers so (and records
//!       the question), absent for no gate.
//!
//!     Result: `{"retry": wait_ns}` or `{"give_up": reason}` with the reason's snake_case
//!     name (`succeeded`, `permanent`, `overloaded`, `not_retryable`,
//!     `attempts_exhausted`, `not_idempotent`, `retry_after_too_long`,
//!     `deadline_exceeded`, `budget_exhausted`).
//!   - `gate_calls` `{}` → the list of every question the case's gates were asked so far,
//!     in order, as `{"now": ns, "cause": name}` with cause `timeout`, `transient`,
//!     `throttled` or `hedge`.
//!   - `stats` `{}` → object with every `RetryPolicyStats` field (`retries`,
//!     `succeeded`, `permanent`, `overloaded`, `not_retryable`, `attempts_exhausted`,
//!     `not_idempotent`, `retry_after_too_long`, `deadline_exceeded`,
//!     `budget_exhausted`).
//!   - `worst_case_time` `{attempt_timeout}` → integer ns.
//!   - `rng_next_u64` `{}` → the case generator's next word as `"0x"` + 16 lowercase hex
//!     digits (shows how many words earlier steps drew).

use std::cell::RefCell;

use guards_core::retry_policy::{
    Idempotency, RetryCause, RetryContext, RetryDecision, RetryGate, RetryPolicy,
    RetryPolicyConfig, UnkeyedSideEffects,
};
use guards_core::{Nanos, Outcome, Rng};
use serde_json::json;

use crate::common::{self, Value};

fn config(case: &Value) -> RetryPolicyConfig {
    config_of(&case["config"])
}

/// A `RetryPolicyConfig` from its vector encoding (also used by the retry driver's runner).
pub fn config_of(c: &Value) -> RetryPolicyConfig {
    let d = RetryPolicyConfig::default();
    let flag = |key: &str, default: bool| common::opt_bool(c, key).unwrap_or(default);
    RetryPolicyConfig {
        max_attempts: common::opt_u64(c, "max_attempts")
            .map_or(d.max_attempts, |n| u32::try_from(n).unwrap_or(u32::MAX)),
        retry_timeouts: flag("retry_timeouts", d.retry_timeouts),
        retry_connection_errors: flag("retry_connection_errors", d.retry_connection_errors),
        retry_other_transient: flag("retry_other_transient", d.retry_other_transient),
        retry_throttled: flag("retry_throttled", d.retry_throttled),
        honor_retry_after: flag("honor_retry_after", d.honor_retry_after),
        max_retry_after: common::opt_nanos(c, "max_retry_after").unwrap_or(d.max_retry_after),
        min_attempt_time: common::opt_nanos(c, "min_attempt_time").unwrap_or(d.min_attempt_time),
        unkeyed_side_effects: c
            .get("unkeyed_side_effects")
            .and_then(Value::as_str)
            .map(|s| UnkeyedSideEffects::from_name(s).unwrap_or_else(|| panic!("unknown {s}")))
            .unwrap_or(d.unkeyed_side_effects),
        backoff: crate::backoff::config_of(&c["backoff"]),
    }
}

/// A gate with a fixed answer that records every question in the case's shared log.
struct Scripted<'a> {
    allow: bool,
    log: &'a RefCell<Vec<Value>>,
}

impl RetryGate for Scripted<'_> {
    fn allow_retry(&self, now: Nanos, cause: RetryCause) -> bool {
        self.log
            .borrow_mut()
            .push(json!({ "now": now.0, "cause": cause.name() }));
        self.allow
    }
}

fn context(step: &Value) -> RetryContext {
    let attempts = u32::try_from(common::u64_of(step, "attempts_made")).expect("u32 attempts");
    let name = common::str_of(step, "outcome");
    let outcome = Outcome::from_name(name).unwrap_or_else(|| panic!("unknown outcome {name}"));
    // This file's encoding: the Retry-After is only read with a throttled outcome.
    let retry_after =
        common::opt_nanos(step, "retry_after").filter(|_| outcome == Outcome::Throttled);
    let idempotency = step
        .get("idempotency")
        .and_then(Value::as_str)
        .map_or(Idempotency::Idempotent, |s| {
            Idempotency::from_name(s).unwrap_or_else(|| panic!("unknown idempotency {s}"))
        });
    RetryContext::new(attempts, outcome)
        .with_retry_after(retry_after)
        .with_idempotency(idempotency)
        .with_time_left(common::opt_nanos(step, "time_left"))
        .with_prev_delay(common::opt_nanos(step, "prev_delay").unwrap_or(Nanos::ZERO))
}

fn decision_value(d: RetryDecision) -> Value {
    match d {
        RetryDecision::Retry { after } => json!({ "retry": after.0 }),
        RetryDecision::GiveUp(reason) => json!({ "give_up": reason.name() }),
    }
}

fn run_step(p: &RetryPolicy, rng: &Rng, log: &RefCell<Vec<Value>>, step: &Value) -> Value {
    match common::str_of(step, "op") {
        "decide" => {
            let gate = step.get("gate").map(|g| Scripted {
                allow: match g.as_str() {
                    Some("allow") => true,
                    Some("refuse") => false,
                    _ => panic!("gate is \"allow\" or \"refuse\", got {g}"),
                },
                log,
            });
            let d = p.decide(
                common::now(step),
                context(step),
                rng,
                gate.as_ref().map(|g| g as &dyn RetryGate),
            );
            decision_value(d)
        }
        "gate_calls" => Value::Array(log.borrow().clone()),
        "stats" => {
            let s = p.stats();
            json!({
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
            })
        }
        "worst_case_time" => p
            .worst_case_time(Nanos(common::u64_of(step, "attempt_timeout")))
            .0
            .into(),
        "rng_next_u64" => common::to_hex(rng.next_u64()),
        other => panic!("unknown retry_policy op `{other}`"),
    }
}

#[test]
fn retry_policy_vectors() {
    common::replay(
        "retry_policy",
        |case| {
            let p = RetryPolicy::new(config(case))?;
            Ok((p, common::case_rng(case), RefCell::new(Vec::new())))
        },
        |(p, rng, log), _, step| run_step(p, rng, log, step),
    );
}
