//! `limiter.json`: one `Limiter`; permits held by handle.

use guards::vectors::{config, Args, Record};
use guards_core::limiter::{Limiter, LimiterPermit};
use serde_json::json as j;

use super::{done, json, now, priority, unknown, Case, Held, OrReply, Res};

struct Limited {
    limiter: Limiter,
    permits: Held<LimiterPermit>,
}

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    Ok(Box::new(Limited {
        limiter: Limiter::new(config::limiter(args).r()?).r()?,
        permits: Held::default(),
    }))
}

impl Case for Limited {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        let l = &self.limiter;
        match op {
            "try_acquire" => match l.try_acquire(now(a)?, priority(a)?) {
                Ok(p) => {
                    let v = j!({"admitted": true, "in_flight": p.in_flight(),
                                "threshold": p.threshold()});
                    self.permits.keep(a, p, |p| l.on_ignore(p))?;
                    json(v)
                }
                Err(r) => json(j!({
                    "admitted": false,
                    "reason": r.reason.name(),
                    "retry_after": r.retry_after(now(a)?).0,
                    "threshold": r.threshold,
                    "in_flight": r.in_flight,
                })),
            },
            "on_success" => {
                l.on_success(self.permits.take(a)?, now(a)?);
                done()
            }
            "on_dropped" => {
                l.on_dropped(self.permits.take(a)?, now(a)?);
                done()
            }
            "on_ignore" => {
                l.on_ignore(self.permits.take(a)?);
                done()
            }
            "limit" => Ok(Record::scalar(l.limit())),
            "in_flight" => Ok(Record::scalar(l.in_flight())),
            "threshold" => Ok(Record::scalar(l.threshold(priority(a)?))),
            "retry_after" => Ok(Record::scalar(l.retry_after().0)),
            "stats" => {
                let s = l.stats();
                json(j!({
                    "acquired": s.acquired,
                    "rejected_limit_reached": s.rejected_limit_reached,
                    "rejected_partition_cap": s.rejected_partition_cap,
                    "rejected_reserved": s.rejected_reserved,
                    "rejected_by_priority": s.rejected_by_priority.to_vec(),
                    "succeeded": s.succeeded,
                    "dropped": s.dropped,
                    "ignored": s.ignored,
                    "windows": s.windows,
                    "limit_changes": s.limit_changes,
                    "folds_skipped": s.folds_skipped,
                    "limit": s.limit,
                    "in_flight": s.in_flight,
                }))
            }
            other => unknown(other),
        }
    }
}
