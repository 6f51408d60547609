//! `http.json`: core's HTTP status and Retry-After rules (no guard: `new` builds nothing).

use guards::vectors::{Args, Record, Reply};
use guards_core::http::{
    classify, format_http_date, outcome_of_status, parse_http_date, parse_retry_after,
};
use serde_json::json as j;

use super::{json, unknown, Case, OrReply, Res};

struct Http;

pub fn build(_: &Args) -> Res<Box<dyn Case>> {
    Ok(Box::new(Http))
}

fn status(a: &Args) -> Res<u16> {
    let s = a.u64("status").r()?;
    u16::try_from(s).map_err(|_| Reply::Failed(format!("status {s} > 65535")))
}

impl Case for Http {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        let now = || a.u64("now_unix").r();
        match op {
            "outcome_of_status" => Ok(Record::scalar(
                outcome_of_status(status(a)?, a.bool("has_retry_after").r()?).name(),
            )),
            "classify" => {
                let header = if a.has("retry_after") {
                    Some(a.bytes("retry_after").r()?)
                } else {
                    None
                };
                let c = classify(status(a)?, header, now()?);
                json(j!({"outcome": c.outcome.name(), "retry_after": c.retry_after.map(|d| d.0)}))
            }
            "parse_retry_after" => Ok(Record::scalar(
                parse_retry_after(a.bytes("value").r()?, now()?).map(|d| d.0),
            )),
            "parse_http_date" => Ok(Record::scalar(parse_http_date(
                a.bytes("value").r()?,
                now()?,
            ))),
            "format_http_date" => Ok(Record::scalar(
                format_http_date(a.u64("unix").r()?).map(|d| d.as_str().to_owned()),
            )),
            other => unknown(other),
        }
    }
}
