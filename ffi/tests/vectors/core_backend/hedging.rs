//! `hedging.json`: a `Hedging<6, 1152>` (its tracker of the default shape).

use guards::schema;
use guards::vectors::{config, Args, Record, Reply};
use guards_core::hedging::{HedgeDecision, Hedging};
use guards_core::retry_policy::{RetryCause, RetryGate};
use guards_core::Nanos;
use serde_json::json as j;

use super::{done, json, nanos, now, unknown, Case, OrReply, Res};

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    let c = config::build_under(&schema::HEDGING, args, "config").r()?;
    Ok(Box::new(Hedging::<6, 1152>::new(c).r()?))
}

/// A gate that allows or refuses every hedge.
struct Fixed(bool);

impl RetryGate for Fixed {
    fn allow_retry(&self, _now: Nanos, cause: RetryCause) -> bool {
        assert_eq!(
            cause,
            RetryCause::Hedge,
            "the hedging policy asks about hedges"
        );
        self.0
    }
}

impl Case for Hedging<6, 1152> {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        match op {
            "record_latency" => {
                self.record_latency(now(a)?, nanos(a, "latency")?);
                done()
            }
            "hedge_delay" => Ok(Record::scalar(
                self.hedge_delay(now(a)?).map(|d| d.as_u64()),
            )),
            "should_hedge" => {
                let gate = match a.opt_str("gate").r()? {
                    None => None,
                    Some("allow") => Some(Fixed(true)),
                    Some("deny") => Some(Fixed(false)),
                    Some(other) => return Err(Reply::Failed(format!("unknown gate `{other}`"))),
                };
                let sent = u32::try_from(a.u64("hedges_sent").r()?)
                    .map_err(|_| Reply::Failed("hedges_sent > u32".into()))?;
                let d = self.should_hedge(
                    now(a)?,
                    nanos(a, "request_started")?,
                    sent,
                    a.bool("idempotent").r()?,
                    gate.as_ref().map(|g| g as &dyn RetryGate),
                );
                json(match d {
                    HedgeDecision::HedgeNow => j!({"decision": "hedge_now"}),
                    HedgeDecision::WaitUntil(at) => {
                        j!({"decision": "wait_until", "at": at.as_u64()})
                    }
                    HedgeDecision::Never(r) => j!({"decision": "never", "reason": r.name()}),
                })
            }
            "stats" => {
                let s = self.stats();
                json(j!({"hedges": s.hedges, "deferred": s.deferred,
                         "not_idempotent": s.not_idempotent, "limit_reached": s.limit_reached,
                         "no_latency_data": s.no_latency_data,
                         "budget_exhausted": s.budget_exhausted}))
            }
            other => unknown(other),
        }
    }
}
