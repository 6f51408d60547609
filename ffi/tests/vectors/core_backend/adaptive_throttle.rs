//! `adaptive_throttle.json`: an `AdaptiveThrottle<12>` (the default 12 buckets) drawing
//! from its own generator, seeded with the config's `seed`.

use guards::schema;
use guards::vectors::{config, Args, Record};
use guards_core::adaptive_throttle::AdaptiveThrottle;
use serde_json::json as j;

use super::{done, json, now, unknown, Case, OrReply, Res};

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    let c = config::build_under(&schema::ADAPTIVE_THROTTLE, args, "config").r()?;
    Ok(Box::new(AdaptiveThrottle::<12>::new(c).r()?))
}

impl Case for AdaptiveThrottle<12> {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        match op {
            "should_reject" => Ok(Record::scalar(self.should_reject(now(a)?))),
            "on_accepted" => {
                self.on_accepted(now(a)?);
                done()
            }
            "on_rejected_by_backend" => {
                self.on_rejected_by_backend(now(a)?);
                done()
            }
            "reject_probability" => Ok(Record::scalar(self.reject_probability(now(a)?))),
            "window" => {
                let w = self.window(now(a)?);
                json(j!({"requests": w.requests, "accepts": w.accepts}))
            }
            "stats" => {
                let s = self.stats();
                json(j!({"admitted": s.admitted, "throttled": s.throttled,
                         "accepted": s.accepted, "rejected_by_backend": s.rejected_by_backend,
                         "stale": s.stale}))
            }
            other => unknown(other),
        }
    }
}
