//! `queue_discipline.json`: a `QueueDiscipline<128>` (the `capacity` in slots the
//! interpreter asks for).

use guards::schema;
use guards::vectors::{config, Args, Record, Reply};
use guards_core::queue_discipline::QueueDiscipline;
use serde_json::json as j;

use super::{json, now, priority, unknown, Case, OrReply, Res};

type Queue = QueueDiscipline<128>;

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    let c = config::build_under(&schema::QUEUE_DISCIPLINE, args, "config").r()?;
    let slots = args.u64("capacity").r()?;
    if slots != 128 {
        return Err(Reply::Unsupported(format!("{slots} slots (only 128 here)")));
    }
    Ok(Box::new(Queue::new(c).r()?))
}

fn drops(q: &Queue) -> serde_json::Value {
    serde_json::Value::Array(
        q.dropped()
            .iter()
            .map(|d| j!({"id": d.waiter.id, "reason": d.reason.name()}))
            .collect(),
    )
}

impl Case for Queue {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        match op {
            "push" => {
                let deadline = a.opt_u64("deadline").r()?.map(guards_core::Nanos);
                let r = self.push(now(a)?, a.u64("id").r()?, priority(a)?, deadline);
                Ok(Record::scalar(r.is_ok()))
            }
            "pop" => {
                let served = match self.pop(now(a)?) {
                    Some(d) => j!({"id": d.waiter.id, "order": d.order.name()}),
                    None => serde_json::Value::Null,
                };
                json(j!({"served": served, "dropped": drops(self)}))
            }
            "expire" => {
                let n = self.expire(now(a)?);
                if n as usize != self.dropped().len() {
                    return Err(Reply::Failed(format!(
                        "expire returned {n} but dropped() holds {}",
                        self.dropped().len()
                    )));
                }
                json(j!({ "dropped": drops(self) }))
            }
            "remove" => Ok(Record::scalar(self.remove(a.u64("id").r()?).is_some())),
            "len" => Ok(Record::scalar(self.len())),
            "len_by_priority" => json(j!(self.len_by_priority())),
            "oldest_age" => Ok(Record::scalar(self.oldest_age(now(a)?).as_u64())),
            "is_standing" => Ok(Record::scalar(self.is_standing(now(a)?))),
            "stats" => {
                let s = self.stats();
                json(j!({
                    "enqueued": s.enqueued,
                    "served_fifo": s.served_fifo,
                    "served_lifo": s.served_lifo,
                    "dropped_age_limit": s.dropped_age_limit,
                    "dropped_deadline": s.dropped_deadline,
                    "cancelled": s.cancelled,
                    "rejected_full": s.rejected_full,
                }))
            }
            other => unknown(other),
        }
    }
}
