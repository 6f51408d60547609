//! `latency_tracker.json`: a `LatencyTracker<6, 1152>` (the default shape).

use guards::schema;
use guards::vectors::{config, Args, Record};
use guards_core::latency_tracker::LatencyTracker;
use serde_json::json as j;

use super::{done, json, nanos, now, unknown, Case, OrReply, Res};

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    let c = config::build_under(&schema::LATENCY_TRACKER, args, "config").r()?;
    Ok(Box::new(LatencyTracker::<6, 1152>::new(c).r()?))
}

impl Case for LatencyTracker<6, 1152> {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        match op {
            "record" => {
                self.record(now(a)?, nanos(a, "latency")?);
                done()
            }
            "count" => Ok(Record::scalar(self.count(now(a)?))),
            "quantile" => Ok(Record::scalar(
                self.quantile(now(a)?, a.f64("q").r()?).map(|n| n.as_u64()),
            )),
            "summary" => {
                let s = self.summary(now(a)?);
                json(
                    j!({"count": s.count, "p50": s.p50.as_u64(), "p95": s.p95.as_u64(),
                         "p99": s.p99.as_u64(), "p999": s.p999.as_u64(),
                         "max": s.max.as_u64()}),
                )
            }
            "propose_timeout" => Ok(Record::scalar(
                self.propose_timeout(now(a)?).map(|n| n.as_u64()),
            )),
            "false_timeout_rate" => Ok(Record::scalar(
                self.false_timeout_rate(now(a)?, nanos(a, "timeout")?),
            )),
            "stats" => {
                let s = self.stats();
                json(j!({"recorded": s.recorded, "saturated": s.saturated, "stale": s.stale}))
            }
            other => unknown(other),
        }
    }
}
