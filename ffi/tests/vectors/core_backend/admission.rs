//! `admission.json`: one `Admission` door; tickets held by handle.

use guards::vectors::{config, Args, Record};
use guards_core::admission::{Admission, AdmissionPermit};
use serde_json::json as j;

use super::{done, json, now, priority, unknown, Case, Held, OrReply, Res};

struct Door {
    door: Admission,
    tickets: Held<AdmissionPermit>,
}

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    let door = Admission::new(config::admission(args).r()?).r()?;
    Ok(Box::new(Door {
        door,
        tickets: Held::default(),
    }))
}

impl Case for Door {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        let door = &self.door;
        match op {
            "try_acquire" => match door.try_acquire(now(a)?, priority(a)?) {
                Ok(t) => {
                    let v = j!({"admitted": true, "in_flight": t.in_flight()});
                    self.tickets.keep(a, t, |t| door.on_ignore(t))?;
                    json(v)
                }
                Err(r) => json(j!({
                    "admitted": false,
                    "reason": r.reason.name(),
                    "retry_after": r.retry_after(now(a)?).0,
                    "retry_after_secs": r.retry_after_secs(now(a)?),
                    "in_flight": r.in_flight,
                    "threshold": r.threshold,
                })),
            },
            "on_success" => {
                door.on_success(self.tickets.take(a)?, now(a)?);
                done()
            }
            "on_dropped" => {
                door.on_dropped(self.tickets.take(a)?, now(a)?);
                done()
            }
            "on_ignore" => {
                door.on_ignore(self.tickets.take(a)?);
                done()
            }
            "limit" => Ok(Record::scalar(door.limit())),
            "in_flight" => Ok(Record::scalar(door.in_flight())),
            "threshold" => Ok(Record::scalar(door.threshold(priority(a)?))),
            "stats" => {
                let s = door.stats();
                json(j!({
                    "admitted": s.admitted,
                    "refused_limit_reached": s.refused_limit_reached,
                    "refused_overloaded": s.refused_overloaded,
                    "refused_by_priority": s.refused_by_priority.to_vec(),
                    "succeeded": s.succeeded,
                    "dropped": s.dropped,
                    "ignored": s.ignored,
                    "in_flight": s.in_flight,
                    "limit": s.limit,
                }))
            }
            other => unknown(other),
        }
    }
}
