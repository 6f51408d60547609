//! `limit.json`: a limit algorithm fed one sample at a time.

use guards::vectors::{config, Args, Record, Reply};
use guards_core::limit::{Limit, LimitSample};

use super::{nanos, now, unknown, Case, OrReply, Res};

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    Ok(Box::new(
        Limit::new(config::limit(args, "config").r()?).r()?,
    ))
}

fn not_for(op: &str, l: &Limit) -> Res<Record> {
    Err(Reply::Failed(format!("`{op}` on {:?}", l.algorithm())))
}

impl Case for Limit {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        match op {
            "update" => Ok(Record::scalar(self.update(LimitSample {
                now: now(a)?,
                rtt: nanos(a, "rtt")?,
                in_flight: a.u64("in_flight").r()?,
                dropped: a.bool("dropped").r()?,
            }))),
            "limit" => Ok(Record::scalar(self.limit())),
            "estimate" => match self {
                Limit::Vegas(v) => Ok(Record::scalar(v.estimate())),
                Limit::Gradient(g) => Ok(Record::scalar(g.estimate())),
                other => not_for(op, other),
            },
            "min_rtt" => match self {
                Limit::Vegas(v) => Ok(Record::scalar(v.min_rtt().0)),
                other => not_for(op, other),
            },
            "long_rtt" => match self {
                Limit::Gradient(g) => Ok(Record::scalar(g.long_rtt())),
                other => not_for(op, other),
            },
            other => unknown(other),
        }
    }
}
