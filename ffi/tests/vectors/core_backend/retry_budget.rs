//! `retry_budget.json`: a `RetryBudget<10>` (the windowed mode's default 10 buckets);
//! receipts held by handle.

use guards::vectors::{config, Args, Record, Reply};
use guards_core::retry_budget::{RetryBudget, RetryReceipt};
use guards_core::retry_policy::{RetryCause, RetryGate};
use serde_json::json as j;

use super::{done, json, now, unknown, Case, Held, OrReply, Res};

struct Budgeted {
    budget: RetryBudget<10>,
    receipts: Held<RetryReceipt>,
}

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    Ok(Box::new(Budgeted {
        budget: RetryBudget::<10>::new(config::retry_budget(args, "config").r()?).r()?,
        receipts: Held::default(),
    }))
}

fn cause(a: &Args) -> Res<RetryCause> {
    Ok(match a.str("cause").r()? {
        "timeout" => RetryCause::Timeout,
        "transient" => RetryCause::Transient,
        "throttled" => RetryCause::Throttled,
        "hedge" => RetryCause::Hedge,
        other => return Err(Reply::Failed(format!("unknown cause `{other}`"))),
    })
}

impl Case for Budgeted {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        let b = &self.budget;
        match op {
            "deposit" => {
                b.deposit(now(a)?);
                done()
            }
            "withdraw" => match b.withdraw(now(a)?, cause(a)?) {
                Some(r) => {
                    self.receipts.keep(a, r, drop)?;
                    Ok(Record::scalar(true))
                }
                None => Ok(Record::scalar(false)),
            },
            "allow_retry" => Ok(Record::scalar(b.allow_retry(now(a)?, cause(a)?))),
            "on_success" => {
                let receipt = self.receipts.take_opt(a)?;
                b.on_success(now(a)?, receipt);
                done()
            }
            "on_failure" => {
                b.on_failure(now(a)?);
                done()
            }
            "tokens_micros" => Ok(Record::scalar(b.tokens_micros(now(a)?))),
            "tokens" => Ok(Record::scalar(b.tokens(now(a)?))),
            "receipt_cost_micros" => Ok(Record::scalar(self.receipts.peek(a)?.cost_micros())),
            "stats" => {
                let s = b.stats();
                json(j!({"deposits": s.deposits, "withdrawals": s.withdrawals,
                         "refusals": s.refusals, "refunds": s.refunds, "failures": s.failures}))
            }
            other => unknown(other),
        }
    }
}
