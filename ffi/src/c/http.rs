//! HTTP answers in the call contract: an answer's status and `Retry-After` header into an
//! outcome and a delay (core's `http::classify`), and an HTTP-date for a server's own
//! `Retry-After`.
//!
//! ```c
//! uint32_t outcome;
//! uint64_t retry_after_ns;
//! guards_http_outcome(503, "30", 2, (uint64_t)time(NULL), &outcome, &retry_after_ns);
//! /* outcome == GUARDS_OUTCOME_THROTTLED, retry_after_ns == 30 s */
//! ```

use std::ffi::c_char;

use super::{boundary, bytes, write_text, Out, GUARDS_NO_RETRY_AFTER};
use crate::error::{Failure, GuardsResult};
use crate::names::Nanos;
use guards_core::http::{classify, format_http_date, parse_http_date, parse_retry_after};

/// Room for an IMF-fixdate (`"Sun, 06 Nov 1994 08:49:37 GMT"`) and its NUL.
pub const GUARDS_HTTP_DATE_MAX: usize = 30;
const _: () = assert!(GUARDS_HTTP_DATE_MAX == guards_core::http::HTTP_DATE_LEN + 1);

/// A Retry-After delay as C sees it: `GUARDS_NO_RETRY_AFTER` for none, and a delay too
/// long to represent as `UINT64_MAX - 1` (every policy gives up on either the same way).
pub(crate) fn c_retry_after(d: Option<Nanos>) -> u64 {
    match d {
        None => GUARDS_NO_RETRY_AFTER,
        Some(n) => n.0.min(GUARDS_NO_RETRY_AFTER - 1),
    }
}

/// Classify an HTTP answer: its `status` and its raw `Retry-After` header value
/// (`retry_after`, `len` bytes, no NUL needed; NULL with `len` 0 when the header is
/// absent), with the caller's wall clock `unix_now_s` (seconds since 1970, to read a date).
/// The outcome goes to `*outcome` (a `guards_outcome`: 1xx-3xx success, 408 timeout, 429
/// throttled, 503 with a readable Retry-After throttled, other 5xx and malformed statuses
/// other transient, other 4xx permanent) and the delay to `*retry_after_ns`, kept only
/// with a throttled outcome (`GUARDS_NO_RETRY_AFTER` otherwise). A garbage header is no
/// Retry-After, never an error: an answer is never lost to its header. Errors:
/// `NULL_ARGUMENT` only.
///
/// # Safety
/// `retry_after` must be NULL (with `len` 0) or valid for reads of `len` bytes; `outcome`
/// and `retry_after_ns` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_http_outcome(
    status: u32,
    retry_after: *const c_char,
    len: usize,
    unix_now_s: u64,
    outcome: *mut u32,
    retry_after_ns: *mut u64,
) -> GuardsResult {
    boundary(|| {
        let header = if retry_after.is_null() && len == 0 {
            None
        } else {
            // SAFETY: the caller's contract.
            Some(unsafe { bytes(retry_after, len, "retry_after") }?)
        };
        let outcome = Out::new(outcome, "outcome")?;
        let retry_after_ns = Out::new(retry_after_ns, "retry_after_ns")?;
        // A status beyond 16 bits is as malformed as 600 or 999: other transient.
        let status = u16::try_from(status).unwrap_or(0);
        let answer = classify(status, header, unix_now_s);
        // SAFETY: valid for writes (caller's contract).
        unsafe {
            outcome.set(answer.outcome as u32);
            retry_after_ns.set(c_retry_after(answer.retry_after));
        }
        Ok(())
    })
}

/// Read a `Retry-After` value (`len` bytes: delay-seconds or an HTTP-date in any of its
/// three forms) into a delay from `unix_now_s` in `*retry_after_ns`: 0 for a date in the
/// past, `GUARDS_NO_RETRY_AFTER` for garbage (never an error), `UINT64_MAX - 1` when it
/// does not fit.
///
/// # Safety
/// `value` must be NULL (with `len` 0) or valid for reads of `len` bytes; `retry_after_ns`
/// NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_http_retry_after_parse(
    value: *const c_char,
    len: usize,
    unix_now_s: u64,
    retry_after_ns: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let value = unsafe { bytes(value, len, "value") }?;
        let out = Out::new(retry_after_ns, "retry_after_ns")?;
        let d = parse_retry_after(value, unix_now_s);
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(c_retry_after(d)) };
        Ok(())
    })
}

/// Format `unix_s` (seconds since 1970) as an IMF-fixdate (`"Sun, 06 Nov 1994 08:49:37
/// GMT"`, 29 bytes) into `buf` with a NUL, its length to `*written` (NULL: not wanted).
/// `GUARDS_RESULT_INVALID_ARGUMENT` after the year 9999; `BUFFER_TOO_SMALL` below
/// `GUARDS_HTTP_DATE_MAX` bytes.
///
/// # Safety
/// `buf` must be NULL or valid for writes of `len` bytes; `written` NULL or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn guards_http_date_format(
    unix_s: u64,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> GuardsResult {
    boundary(|| {
        let d = format_http_date(unix_s).ok_or(Failure::argument(
            GuardsResult::InvalidArgument,
            "unix_s",
            "at most 253402300799 (the last second of 9999)",
        ))?;
        // SAFETY: the caller's contract, passed on.
        unsafe { write_text(d.as_bytes(), buf, len, written) }
    })
}

/// Read an HTTP-date (`len` bytes, no NUL needed) in any of its three forms (IMF-fixdate,
/// RFC 850, asctime) into unix seconds in `*unix_s` (negative before 1970); `unix_now_s`
/// places an RFC 850 two-digit year. `GUARDS_RESULT_INVALID_HEADER` for a value that is
/// none of the forms or names a date that does not exist (no surrounding whitespace).
///
/// # Safety
/// `value` must be NULL (with `len` 0) or valid for reads of `len` bytes; `unix_s` NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_http_date_parse(
    value: *const c_char,
    len: usize,
    unix_now_s: u64,
    unix_s: *mut i64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let value = unsafe { bytes(value, len, "value") }?;
        let out = Out::new(unix_s, "unix_s")?;
        let t = parse_http_date(value, unix_now_s).ok_or(Failure::argument(
            GuardsResult::InvalidHeader,
            "value",
            "an HTTP-date",
        ))?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(t) };
        Ok(())
    })
}
