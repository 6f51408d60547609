//! `retry_driver.json`: a `RetryDriver` with its policy, optional budget and the case's
//! generator.

use guards::vectors::{config, Args, Record, Reply};
use guards_core::deadline::Deadline;
use guards_core::retry_budget::{Budget, RetryBudget};
use guards_core::retry_driver::{RetryDriver, RetryDriverError, RetryStep};
use guards_core::retry_policy::RetryPolicy;
use guards_core::{Outcome, Rng};
use serde_json::json as j;

use super::{json, now, unknown, Case, OrReply, Res};

struct Driven {
    driver: RetryDriver,
    policy: RetryPolicy,
    budget: Option<RetryBudget>,
    rng: Rng,
}

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    let s = config::retry_driver(args).r()?;
    let deadline = s.deadline.map_or(Deadline::NONE, Deadline::at);
    Ok(Box::new(Driven {
        driver: RetryDriver::new(deadline, s.idempotency, s.attempt).r()?,
        policy: RetryPolicy::new(s.policy).r()?,
        budget: match s.budget {
            Some(b) => Some(RetryBudget::new(b).r()?),
            None => None,
        },
        rng: Rng::new(args.u64("seed").r()?),
    }))
}

fn step_value(r: Result<RetryStep, RetryDriverError>) -> Res<Record> {
    json(match r {
        Ok(RetryStep::Attempt(a)) => j!({"attempt": {
            "number": a.number, "budget": a.budget.0, "expires_at": a.expires_at.0}}),
        Ok(RetryStep::Wait(w)) => j!({"wait": {
            "retry_at": w.retry_at.0, "retry_after": w.retry_after.0}}),
        Ok(RetryStep::Succeeded) => j!("succeeded"),
        Ok(RetryStep::GiveUp(reason)) => j!({"give_up": reason.name()}),
        Err(e) => j!({"error": {"call": e.call, "phase": e.phase.name()}}),
    })
}

impl Case for Driven {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        let budget = self.budget.as_ref().map(|b| b as &dyn Budget);
        match op {
            "start" => step_value(self.driver.start(now(a)?, budget)),
            "report" => {
                let name = a.str("outcome").r()?;
                let outcome = Outcome::from_name(name)
                    .ok_or_else(|| Reply::Failed(format!("unknown outcome `{name}`")))?;
                let retry_after = a.opt_u64("retry_after").r()?.map(guards_core::Nanos);
                step_value(self.driver.report(
                    now(a)?,
                    outcome,
                    retry_after,
                    &self.policy,
                    &self.rng,
                    budget,
                ))
            }
            "resume" => step_value(self.driver.resume(now(a)?)),
            "cancel" => step_value(self.driver.cancel()),
            "state" => {
                let d = &self.driver;
                json(j!({
                    "phase": d.phase().name(),
                    "attempts": d.attempts(),
                    "retries": d.retries(),
                    "give_up": d.give_up_reason().map(|r| r.name()),
                    "last_outcome": d.last_outcome().map(Outcome::name),
                }))
            }
            "policy_stats" => {
                let s = self.policy.stats();
                json(j!({
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
                }))
            }
            "budget" => {
                let b = self
                    .budget
                    .as_ref()
                    .ok_or_else(|| Reply::Failed("the case has no budget".into()))?;
                let s = b.stats();
                json(j!({
                    "tokens_micros": b.tokens_micros(now(a)?),
                    "deposits": s.deposits,
                    "withdrawals": s.withdrawals,
                    "refusals": s.refusals,
                    "refunds": s.refunds,
                    "failures": s.failures,
                }))
            }
            other => unknown(other),
        }
    }
}
