//! Conformance runner for `http` (`tests/vectors/http.json`).
//!
//! # Encoding (for every language's runner)
//!
//! No config. Durations in results are integer nanoseconds; `null` stands for "none".
//! A header value is `value` (a JSON string, its UTF-8 bytes) or `value_bytes` (a list of
//! byte values, for bytes that are not UTF-8).
//!
//! | `op` | arguments | result (`expect`) |
//! |---|---|---|
//! | `outcome_of_status` | `status` (integer 0..=65535), `has_retry_after` (bool) | the outcome's name |
//! | `classify` | `status`, optional `retry_after` (header value), `now_unix` (integer seconds) | `{"outcome": name, "retry_after": ns or null}` |
//! | `parse_retry_after` | `value` / `value_bytes`, `now_unix` | the delay in ns, or `null` for garbage |
//! | `parse_http_date` | `value` / `value_bytes`, `now_unix` | unix seconds (negative before 1970), or `null` |
//! | `format_http_date` | `unix` (integer seconds) | the IMF-fixdate string, or `null` after the year 9999 |

use guards_core::http::{
    classify, format_http_date, outcome_of_status, parse_http_date, parse_retry_after,
};
use serde_json::json;

use crate::common::{self, Value};

fn bytes(step: &Value) -> Vec<u8> {
    if let Some(list) = step.get("value_bytes").and_then(Value::as_array) {
        return list
            .iter()
            .map(|b| {
                b.as_u64()
                    .and_then(|b| u8::try_from(b).ok())
                    .expect("a byte")
            })
            .collect();
    }
    common::str_of(step, "value").as_bytes().to_vec()
}

fn status(step: &Value) -> u16 {
    u16::try_from(common::u64_of(step, "status")).expect("status in 0..=65535")
}

fn run_step(step: &Value) -> Value {
    let now = || common::u64_of(step, "now_unix");
    match common::str_of(step, "op") {
        "outcome_of_status" => {
            let has = common::opt_bool(step, "has_retry_after").expect("has_retry_after");
            json!(outcome_of_status(status(step), has).name())
        }
        "classify" => {
            let header = step.get("retry_after").and_then(Value::as_str);
            let c = classify(status(step), header.map(str::as_bytes), now());
            json!({"outcome": c.outcome.name(), "retry_after": c.retry_after.map(|d| d.0)})
        }
        "parse_retry_after" => json!(parse_retry_after(&bytes(step), now()).map(|d| d.0)),
        "parse_http_date" => json!(parse_http_date(&bytes(step), now())),
        "format_http_date" => {
            let date = format_http_date(common::u64_of(step, "unix"));
            json!(date.map(|d| d.as_str().to_string()))
        }
        other => panic!("unknown http op `{other}`"),
    }
}

#[test]
fn http_vectors() {
    common::replay("http", |_| Ok(()), |_, _, step| run_step(step));
}
