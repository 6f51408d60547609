//! HTTP answers in the call contract (core's `http`): status → outcome, Retry-After.
//!
//! Header values are strings, or the bytes that came off the wire (`Uint8Array`); the
//! wall clock (`nowUnixSecs`, whole seconds since 1970, a number or a bigint) is read from
//! the system when left out.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards_core::http;

use crate::args;
use crate::convert::ms;

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn status_of(env: &Env, v: &Unknown<'_>) -> Result<u16> {
    args::whole(env, "status", v, 65_535).map(|s| s as u16)
}

fn now_unix(env: &Env, v: Option<Unknown<'_>>) -> Result<u64> {
    match v {
        Some(x) if !args::absent(&Some(x)) => args::whole(env, "nowUnixSecs", &x, u64::MAX),
        _ => Ok(unix_now()),
    }
}

/// The outcome and Retry-After (ms, only with `'throttled'`) of an HTTP answer with
/// `status` and its raw `Retry-After` header value; `nowUnixSecs` (default: the wall
/// clock) turns a date into a delay. A garbage header is no Retry-After, never an error.
#[napi(
    catch_unwind,
    ts_args_type = "status: number, retryAfter?: string | Uint8Array | null, nowUnixSecs?: number | bigint",
    ts_return_type = "HttpClassification"
)]
pub fn classify_http<'e>(
    env: &'e Env,
    status: Unknown<'_>,
    retry_after: Option<Unknown<'_>>,
    now_unix_secs: Option<Unknown<'_>>,
) -> Result<Object<'e>> {
    let status = status_of(env, &status)?;
    let header = args::opt_header_bytes(env, "retryAfter", retry_after)?;
    let now = now_unix(env, now_unix_secs)?;
    let a = http::classify(status, header.as_deref(), now);
    let mut o = Object::new(env)?;
    o.set("outcome", a.outcome.name())?;
    o.set("retryAfterMs", a.retry_after.map(ms))?;
    Ok(o)
}

/// A `Retry-After` value as a delay in ms (`null` for garbage; 0 for a past date;
/// `1.8446744073709552e13` ms, the largest delay, when it does not fit).
#[napi(
    catch_unwind,
    ts_args_type = "value: string | Uint8Array, nowUnixSecs?: number | bigint"
)]
pub fn parse_retry_after(
    env: Env,
    value: Unknown<'_>,
    now_unix_secs: Option<Unknown<'_>>,
) -> Result<Option<f64>> {
    let v = args::header_bytes(&env, "value", &value)?;
    let now = now_unix(&env, now_unix_secs)?;
    Ok(http::parse_retry_after(&v, now).map(ms))
}

/// An HTTP date (IMF-fixdate, or the obsolete RFC 850 and asctime forms) as whole seconds
/// since 1970 (negative before), `null` for garbage; `nowUnixSecs` resolves a two-digit
/// RFC 850 year.
#[napi(
    catch_unwind,
    ts_args_type = "value: string | Uint8Array, nowUnixSecs?: number | bigint"
)]
pub fn parse_http_date(
    env: Env,
    value: Unknown<'_>,
    now_unix_secs: Option<Unknown<'_>>,
) -> Result<Option<f64>> {
    let v = args::header_bytes(&env, "value", &value)?;
    let now = now_unix(&env, now_unix_secs)?;
    Ok(http::parse_http_date(&v, now).map(|s| s as f64))
}

/// The outcome of an HTTP status (`hasRetryAfter`: it came with a readable Retry-After).
#[napi(
    catch_unwind,
    ts_args_type = "status: number, hasRetryAfter?: boolean",
    ts_return_type = "Outcome"
)]
pub fn outcome_of_status(
    env: Env,
    status: Unknown<'_>,
    has_retry_after: Option<Unknown<'_>>,
) -> Result<&'static str> {
    let status = status_of(&env, &status)?;
    let has = args::opt_boolean(&env, "hasRetryAfter", has_retry_after)?.unwrap_or(false);
    Ok(http::outcome_of_status(status, has).name())
}

/// `unixSecs` (a whole number, or a bigint) as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37
/// GMT`), `null` after the year 9999.
#[napi(catch_unwind, ts_args_type = "unixSecs: number | bigint")]
pub fn format_http_date(env: Env, unix_secs: Unknown<'_>) -> Result<Option<String>> {
    let s = args::whole(&env, "unixSecs", &unix_secs, u64::MAX)?;
    Ok(http::format_http_date(s).map(|d| d.as_str().to_owned()))
}
