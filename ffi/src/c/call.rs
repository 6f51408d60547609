//! `guards_call`: a callback run under a guard, its permit never leaving Rust.
//!
//! `guards_<guard>_try_acquire` + `_report` hand the caller a permit that it copies and
//! gives back later, so the guard must park core's permit in a take-once slot table to
//! refuse a copy reported twice. A synchronous caller does not need the permit at all:
//! `guards_bulkhead_call` and `guards_circuit_breaker_call` admit the call, run `fn(ctx,
//! &call)` on the caller's thread, and report the outcome `fn` returns with core's permit
//! still in a local variable. Nothing can be reported twice, so no table is touched: the
//! cost is core's own plus one indirect call.
//!
//! ```c
//! static uint32_t fetch(void *ctx, guards_call *call) {
//!     struct request *r = ctx;
//!     int rc = send(r, call->is_probe ? call->probe_timeout_ns : r->timeout_ns);
//!     call->ended_ns = guards_now_ns();
//!     return rc == 0 ? GUARDS_OUTCOME_SUCCESS : GUARDS_OUTCOME_TIMEOUT;
//! }
//! /* ... */
//! guards_result rc = guards_circuit_breaker_call(breaker, guards_now_ns(), fetch, &req);
//! /* GUARDS_RESULT_OK: fetch ran; GUARDS_RESULT_BREAKER_OPEN: it did not. */
//! ```

use std::ffi::c_void;

use super::{fail_arg, fail_outcome};
use crate::error::GuardsResult;
use crate::names::Outcome;

/// What a call run by `guards_<guard>_call` is told, and where it says when it ended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_call {
    /// When the call was admitted (the `now_ns` passed in; 0 for a bulkhead).
    pub started_ns: u64,
    /// When the call ended: set to `started_ns` before `fn` runs; `fn` sets it (e.g. to
    /// `guards_now_ns()`) for a breaker to judge slow calls. Read once `fn` returns.
    pub ended_ns: u64,
    /// For a half-open breaker probe: the timeout the call must use; 0 otherwise.
    pub probe_timeout_ns: u64,
    /// 1 for a half-open breaker probe, 0 for an ordinary call.
    pub is_probe: u32,
    /// Always 0 (room for later use).
    pub reserved: u32,
}

/// The call `guards_<guard>_call` runs: `ctx` is the caller's pointer, passed through;
/// `call` is valid for reads and writes until `fn` returns. Returns how the call ended, a
/// `guards_outcome`. It must return normally (no `longjmp` out of it, no C++ exception
/// through it); it may use any guard, this one included.
pub type guards_call_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, call: *mut guards_call) -> u32>;

/// Run `f` with `call` and read back the outcome it returns and the time it ended. An
/// outcome that is not a `guards_outcome` is reported as `Ignored` (the permit goes back
/// without a verdict) and the call returns the recorded `INVALID_ENUM`.
///
/// # Safety
/// `f` must be safe to call with `ctx` (the caller's contract).
#[inline(always)]
pub(crate) unsafe fn run(
    f: unsafe extern "C" fn(*mut c_void, *mut guards_call) -> u32,
    ctx: *mut c_void,
    mut call: guards_call,
) -> (Outcome, u64, GuardsResult) {
    // SAFETY: the caller's contract; `call` is a live local for the duration.
    let n = unsafe { f(ctx, &mut call) };
    match u8::try_from(n).ok().and_then(|b| Outcome::try_from(b).ok()) {
        Some(o) => (o, call.ended_ns, GuardsResult::Ok),
        None => (Outcome::Ignored, call.ended_ns, fail_outcome()),
    }
}

/// The function of a `_call`, or the recorded `NULL_ARGUMENT` naming `fn`.
#[inline(always)]
pub(crate) fn hot_fn(
    f: guards_call_fn,
) -> Result<unsafe extern "C" fn(*mut c_void, *mut guards_call) -> u32, GuardsResult> {
    match f {
        Some(f) => Ok(f),
        None => Err(fail_arg(true, "fn")),
    }
}
