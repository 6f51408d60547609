//! `deadline.json`: the case's `DeadlineConfig` and the deadline functions.

use guards::schema;
use guards::vectors::{config, Args, Record, Scalar};
use guards_core::deadline::{
    encode_grpc_timeout, encode_millis, parse_grpc_timeout, parse_millis, AttemptBudget, Deadline,
    DeadlineConfig,
};
use guards_core::Nanos;
use serde_json::json as j;

use super::{json, nanos, now, unknown, Case, OrReply, Res};

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    Ok(Box::new(
        config::build_under(&schema::DEADLINE, args, "config").r()?,
    ))
}

/// A deadline argument: an instant, or `null` for none.
fn deadline(a: &Args, name: &str) -> Res<Deadline> {
    Ok(match a.get(name) {
        Some(Scalar::Null) => Deadline::NONE,
        _ => Deadline::at(nanos(a, name)?),
    })
}

fn deadline_value(d: Deadline) -> serde_json::Value {
    d.expires_at()
        .map_or(serde_json::Value::Null, |n| n.0.into())
}

/// A duration, `null` for unlimited.
fn duration_or_null(n: Nanos) -> serde_json::Value {
    if n == Nanos::MAX {
        serde_json::Value::Null
    } else {
        n.0.into()
    }
}

fn parsed<T, E>(
    r: Result<T, E>,
    ok: impl Fn(T) -> serde_json::Value,
    err: impl Fn(E) -> &'static str,
) -> Res<Record> {
    match r {
        Ok(v) => json(j!({ "ok": ok(v) })),
        Err(e) => json(j!({ "error": err(e) })),
    }
}

impl Case for DeadlineConfig {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        let timeout = || nanos(a, "timeout");
        let value = || a.bytes("value").r();
        match op {
            "after" => json(deadline_value(Deadline::after(now(a)?, timeout()?))),
            "time_left" => json(duration_or_null(
                deadline(a, "deadline")?.time_left(now(a)?),
            )),
            "is_expired" => Ok(Record::scalar(deadline(a, "deadline")?.is_expired(now(a)?))),
            "min" => json(deadline_value(deadline(a, "a")?.min(deadline(a, "b")?))),
            "attempt_budget" => {
                let b = self.attempt_budget(deadline(a, "deadline")?, now(a)?);
                json(match b {
                    AttemptBudget::Start { budget } => {
                        j!({ "decision": b.name(), "budget": budget.0 })
                    }
                    AttemptBudget::Expired => j!({ "decision": b.name() }),
                    AttemptBudget::TooLittleLeft { left } => {
                        j!({ "decision": b.name(), "left": duration_or_null(left) })
                    }
                })
            }
            "encode_grpc_timeout" => Ok(Record::scalar(encode_grpc_timeout(timeout()?).as_str())),
            "encode_millis" => Ok(Record::scalar(encode_millis(timeout()?).as_str())),
            "to_grpc_timeout" => Ok(Record::scalar(
                deadline(a, "deadline")?
                    .to_grpc_timeout(now(a)?)
                    .map(|h| h.as_str().to_owned()),
            )),
            "to_millis" => Ok(Record::scalar(
                deadline(a, "deadline")?
                    .to_millis(now(a)?)
                    .map(|h| h.as_str().to_owned()),
            )),
            "parse_grpc_timeout" => {
                parsed(parse_grpc_timeout(value()?), |n| n.0.into(), |e| e.name())
            }
            "parse_millis" => parsed(parse_millis(value()?), |n| n.0.into(), |e| e.name()),
            "from_grpc_timeout" => parsed(
                Deadline::from_grpc_timeout(now(a)?, value()?),
                deadline_value,
                |e| e.name(),
            ),
            "from_millis" => parsed(
                Deadline::from_millis(now(a)?, value()?),
                deadline_value,
                |e| e.name(),
            ),
            other => unknown(other),
        }
    }
}
