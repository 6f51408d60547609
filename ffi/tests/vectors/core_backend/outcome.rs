//! `outcome.json`: the call contract's `Outcome` and its table (no guard: `new` builds
//! nothing).

use guards::vectors::{Args, Record, Reply};
use guards_core::brownout::RefusalKind;
use guards_core::outcome::RetryVerdict;
use guards_core::Outcome;
use serde_json::json as j;

use super::{json, unknown, Case, OrReply, Res};

struct Contract;

pub fn build(_: &Args) -> Res<Box<dyn Case>> {
    Ok(Box::new(Contract))
}

impl Case for Contract {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        match op {
            "verdicts" => {
                let name = a.str("outcome").r()?;
                let o = Outcome::from_name(name)
                    .ok_or_else(|| Reply::Failed(format!("unknown outcome `{name}`")))?;
                let retry = match o.retry() {
                    RetryVerdict::Retry(cause) => j!({ "retry": cause.name() }),
                    RetryVerdict::GiveUp(reason) => j!({ "give_up": reason.name() }),
                };
                json(j!({
                    "number": o as u8,
                    "breaker_call": o.breaker(false).name(),
                    "breaker_probe": o.breaker(true).name(),
                    "bulkhead": o.bulkhead().name(),
                    "limiter": o.limiter().name(),
                    "retry_budget": o.retry_budget().name(),
                    "adaptive_throttle": o.adaptive_throttle().name(),
                    "latency": o.latency().name(),
                    "retry": retry,
                    "brownout": RefusalKind::of(o).map(RefusalKind::name),
                }))
            }
            "from_number" => {
                let n = a.u64("number").r()?;
                let o = u8::try_from(n).ok().and_then(|n| Outcome::try_from(n).ok());
                Ok(Record::scalar(o.map(Outcome::name)))
            }
            "from_name" => Ok(Record::scalar(
                Outcome::from_name(a.str("name").r()?).map(|o| o as u8),
            )),
            other => unknown(other),
        }
    }
}
