//! `retry_policy.json`: a `RetryPolicy`, the case's generator, and scripted gates that
//! record every question they are asked.

use std::cell::RefCell;

use guards::schema;
use guards::vectors::{config, Args, Record, Reply};
use guards_core::retry_policy::{
    Idempotency, RetryCause, RetryContext, RetryDecision, RetryGate, RetryPolicy,
};
use guards_core::{Nanos, Outcome, Rng};
use serde_json::{json as j, Value};

use super::{json, nanos, now, unknown, Case, OrReply, Res};

struct Policy {
    policy: RetryPolicy,
    rng: Rng,
    log: RefCell<Vec<Value>>,
}

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    let c = config::build_under(&schema::RETRY_POLICY, args, "config").r()?;
    Ok(Box::new(Policy {
        policy: RetryPolicy::new(c).r()?,
        rng: Rng::new(args.u64("seed").r()?),
        log: RefCell::new(Vec::new()),
    }))
}

/// A gate with a fixed answer that records every question in the case's log.
struct Scripted<'a> {
    allow: bool,
    log: &'a RefCell<Vec<Value>>,
}

impl RetryGate for Scripted<'_> {
    fn allow_retry(&self, now: Nanos, cause: RetryCause) -> bool {
        self.log
            .borrow_mut()
            .push(j!({ "now": now.0, "cause": cause.name() }));
        self.allow
    }
}

fn context(a: &Args) -> Res<RetryContext> {
    let attempts = u32::try_from(a.u64("attempts_made").r()?)
        .map_err(|_| Reply::Failed("attempts_made > u32".into()))?;
    let name = a.str("outcome").r()?;
    let outcome = Outcome::from_name(name)
        .ok_or_else(|| Reply::Failed(format!("unknown outcome `{name}`")))?;
    let idem = a.str("idempotency").r()?;
    let idempotency = Idempotency::from_name(idem)
        .ok_or_else(|| Reply::Failed(format!("unknown idempotency `{idem}`")))?;
    Ok(RetryContext::new(attempts, outcome)
        .with_retry_after(a.opt_u64("retry_after").r()?.map(Nanos))
        .with_idempotency(idempotency)
        .with_time_left(a.opt_u64("time_left").r()?.map(Nanos))
        .with_prev_delay(nanos(a, "prev_delay")?))
}

impl Case for Policy {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        match op {
            "decide" => {
                let gate = match a.opt_str("gate").r()? {
                    None => None,
                    Some(g) => Some(Scripted {
                        allow: match g {
                            "allow" => true,
                            "refuse" => false,
                            other => return Err(Reply::Failed(format!("unknown gate `{other}`"))),
                        },
                        log: &self.log,
                    }),
                };
                let d = self.policy.decide(
                    now(a)?,
                    context(a)?,
                    &self.rng,
                    gate.as_ref().map(|g| g as &dyn RetryGate),
                );
                json(match d {
                    RetryDecision::Retry { after } => j!({ "retry": after.0 }),
                    RetryDecision::GiveUp(reason) => j!({ "give_up": reason.name() }),
                })
            }
            "gate_calls" => json(Value::Array(self.log.borrow().clone())),
            "stats" => {
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
                }))
            }
            "worst_case_time" => Ok(Record::scalar(
                self.policy.worst_case_time(nanos(a, "attempt_timeout")?).0,
            )),
            "rng_next_u64" => Ok(Record::scalar(self.rng.next_u64())),
            other => unknown(other),
        }
    }
}
