//! HTTP answers in the call contract (core's `http`): status → outcome, Retry-After.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards_core::http;

use crate::convert::ms;
use crate::errors::range_error;

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn status_of(env: &Env, status: f64) -> Result<u16> {
    if status.fract() != 0.0 || !(0.0..=65535.0).contains(&status) {
        return Err(range_error(
            env,
            "status",
            &format!("`status` must be a whole number in 0..=65535, not {status}"),
        ));
    }
    Ok(status as u16)
}

/// The outcome and Retry-After (ms, only with `'throttled'`) of an HTTP answer with
/// `status` and its raw `Retry-After` header value; `nowUnixSecs` (default: the wall
/// clock) turns a date into a delay. A garbage header is no Retry-After, never an error.
#[napi(
    catch_unwind,
    ts_return_type = "{ outcome: Outcome; retryAfterMs: number | null }"
)]
pub fn classify_http<'e>(
    env: &'e Env,
    status: f64,
    retry_after: Option<String>,
    now_unix_secs: Option<f64>,
) -> Result<Object<'e>> {
    let status = status_of(env, status)?;
    let now = now_unix_secs.map_or_else(unix_now, |s| {
        if s.is_finite() && s > 0.0 {
            s as u64
        } else {
            0
        }
    });
    let a = http::classify(status, retry_after.as_deref().map(str::as_bytes), now);
    let mut o = Object::new(env)?;
    o.set("outcome", a.outcome.name())?;
    o.set("retryAfterMs", a.retry_after.map(ms))?;
    Ok(o)
}

/// A `Retry-After` value as a delay in ms (`null` for garbage; 0 for a past date;
/// `1.8446744073709552e13` ms, the largest delay, when it does not fit).
#[napi(catch_unwind)]
pub fn parse_retry_after(value: String, now_unix_secs: Option<f64>) -> Option<f64> {
    let now = now_unix_secs.map_or_else(unix_now, |s| {
        if s.is_finite() && s > 0.0 {
            s as u64
        } else {
            0
        }
    });
    http::parse_retry_after(value.as_bytes(), now).map(ms)
}

/// The outcome of an HTTP status (`hasRetryAfter`: it came with a readable Retry-After).
#[napi(catch_unwind, ts_return_type = "Outcome")]
pub fn outcome_of_status(
    env: Env,
    status: f64,
    has_retry_after: Option<bool>,
) -> Result<&'static str> {
    let status = status_of(&env, status)?;
    Ok(http::outcome_of_status(status, has_retry_after.unwrap_or(false)).name())
}

/// `unixSecs` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), `null` after year 9999.
#[napi(catch_unwind)]
pub fn format_http_date(unix_secs: f64) -> Option<String> {
    if !unix_secs.is_finite() || unix_secs < 0.0 {
        return None;
    }
    http::format_http_date(unix_secs as u64).map(|d| d.as_str().to_owned())
}
