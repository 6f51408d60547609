//! Deadlines: the budget of the attempt about to be made, and the two wire forms that carry
//! a deadline to the next hop (`grpc-timeout` and an integer-milliseconds header such as
//! `x-envoy-expected-rq-timeout-ms`), formatted into and parsed from caller buffers.
//!
//! No handle: core's deadline is a value (an instant, `GUARDS_NO_DEADLINE` for none) and
//! its config two durations, with nothing shared or counted, so the functions take them by
//! value or by pointer and keep nothing.
//!
//! ```c
//! /* A request arrives with "grpc-timeout: 2S": its deadline, then each attempt's budget. */
//! uint64_t now = guards_now_ns(), deadline, ns;
//! guards_deadline_from_grpc_timeout(now, value, value_len, &deadline);
//! guards_deadline_config per_attempt;
//! guards_deadline_config_default(&per_attempt);          /* 60 ms, 1 ms margin */
//! guards_attempt_budget a;
//! guards_deadline_attempt_budget(&per_attempt, deadline, now, &a);
//! if (a.kind == GUARDS_ATTEMPT_BUDGET_KIND_START) {
//!     char hdr[GUARDS_HEADER_VALUE_MAX];
//!     guards_grpc_timeout_format(a.budget_ns, hdr, sizeof hdr, NULL);  /* "59m" -> callee */
//! }
//! ```

use std::ffi::c_char;

use super::{arg, boundary, bytes, config_default, write_text, Out};
use crate::error::GuardsResult;
use crate::names::{AttemptBudget, Deadline, DeadlineConfig, Nanos};
use guards_core::deadline::{encode_grpc_timeout, encode_millis, parse_grpc_timeout, parse_millis};

/// Room for any formatted header value of this API, its NUL included (a `grpc-timeout`
/// value is at most 9 bytes, a milliseconds value at most 20 digits).
pub const GUARDS_HEADER_VALUE_MAX: usize = 25;
const _: () = assert!(GUARDS_HEADER_VALUE_MAX == guards_core::deadline::HEADER_VALUE_CAPACITY + 1);

/// Per-attempt deadline settings: `budget = min(attempt_timeout, time left) − margin`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct guards_deadline_config {
    /// The longest one attempt may take (default 60 ms; 1 ns..=86400 s).
    pub attempt_timeout_ns: u64,
    /// Kept back from every budget, for the answer to travel (default 1 ms;
    /// 0..attempt_timeout).
    pub margin_ns: u64,
}

impl guards_deadline_config {
    /// The schema defaults.
    pub fn of_defaults() -> Self {
        Self::of_core(&crate::schema::DEADLINE.defaults())
    }

    /// Core's config (not validated here).
    pub fn to_core(&self) -> DeadlineConfig {
        DeadlineConfig {
            attempt_timeout: Nanos(self.attempt_timeout_ns),
            margin: Nanos(self.margin_ns),
        }
    }

    /// The C form of core's config.
    pub fn of_core(c: &DeadlineConfig) -> Self {
        guards_deadline_config {
            attempt_timeout_ns: c.attempt_timeout.0,
            margin_ns: c.margin.0,
        }
    }
}

/// Whether to start an attempt (`kind`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_attempt_budget_kind {
    /// Start it with `budget_ns`.
    Start = 0,
    /// Don't start: the deadline has passed.
    Expired = 1,
    /// Don't start: no more than the margin is left (`left_ns`).
    TooLittleLeft = 2,
}

/// The budget of an attempt about to be made.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_attempt_budget {
    /// A `guards_attempt_budget_kind`.
    pub kind: u32,
    /// Always 0 (room for later use).
    pub reserved: u32,
    /// `START`: how long to wait for the attempt (and what to tell the callee); else 0.
    pub budget_ns: u64,
    /// `TOO_LITTLE_LEFT`: the time that was left; else 0.
    pub left_ns: u64,
}

/// Write the default config to `out` (60 ms per attempt, 1 ms margin).
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_deadline_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_deadline_config_default(
    out: *mut guards_deadline_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_deadline_config::of_defaults) }
}

/// The deadline `timeout_ns` after `now_ns` (saturating: past `UINT64_MAX` it is
/// `GUARDS_NO_DEADLINE`).
#[no_mangle]
pub extern "C" fn guards_deadline_after(now_ns: u64, timeout_ns: u64) -> u64 {
    Deadline::after(Nanos(now_ns), Nanos(timeout_ns))
        .expires_at()
        .map_or(super::GUARDS_NO_DEADLINE, |t| t.0)
}

/// Time left at `now_ns` before `deadline_ns`: 0 once passed, `GUARDS_NO_DEADLINE` for no
/// deadline.
#[no_mangle]
pub extern "C" fn guards_deadline_time_left(deadline_ns: u64, now_ns: u64) -> u64 {
    Deadline::at(Nanos(deadline_ns)).time_left(Nanos(now_ns)).0
}

/// The budget of an attempt starting at `now_ns` under `deadline_ns` (`GUARDS_NO_DEADLINE`:
/// none) with `config`, into `*out`: `min(attempt_timeout, time left) − margin`, or don't
/// start (expired, or too little left). Errors: `NULL_ARGUMENT`, `CONFIG_*` naming the
/// field of `config`.
///
/// # Safety
/// `config` must be NULL or valid for reads; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_deadline_attempt_budget(
    config: *const guards_deadline_config,
    deadline_ns: u64,
    now_ns: u64,
    out: *mut guards_attempt_budget,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let config = unsafe { arg(config, "config") }?.to_core();
        let out = Out::new(out, "out")?;
        config.validate()?;
        let b = match config.attempt_budget(Deadline::at(Nanos(deadline_ns)), Nanos(now_ns)) {
            AttemptBudget::Start { budget } => guards_attempt_budget {
                kind: guards_attempt_budget_kind::Start as u32,
                budget_ns: budget.0,
                ..guards_attempt_budget::default()
            },
            AttemptBudget::Expired => guards_attempt_budget {
                kind: guards_attempt_budget_kind::Expired as u32,
                ..guards_attempt_budget::default()
            },
            AttemptBudget::TooLittleLeft { left } => guards_attempt_budget {
                kind: guards_attempt_budget_kind::TooLittleLeft as u32,
                left_ns: left.0,
                ..guards_attempt_budget::default()
            },
        };
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(b) };
        Ok(())
    })
}

/// Format `timeout_ns` as a `grpc-timeout` value (the finest unit whose value fits 8
/// digits, rounded down: `"59000000n"`, `"2000m"`) into `buf` (`len` bytes), with a NUL;
/// its length without the NUL goes to `*written` (NULL: not wanted).
/// `GUARDS_RESULT_BUFFER_TOO_SMALL` when it does not fit (`*written` = the length needed,
/// `buf` untouched); `GUARDS_HEADER_VALUE_MAX` bytes always suffice.
///
/// # Safety
/// `buf` must be NULL or valid for writes of `len` bytes; `written` NULL or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn guards_grpc_timeout_format(
    timeout_ns: u64,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> GuardsResult {
    boundary(|| {
        let v = encode_grpc_timeout(Nanos(timeout_ns));
        // SAFETY: the caller's contract, passed on.
        unsafe { write_text(v.as_bytes(), buf, len, written) }
    })
}

/// Parse a `grpc-timeout` value (`len` bytes, no NUL needed: 1 to 8 digits and a unit
/// among `H M S m u n`) into a duration in `*timeout_ns`. `GUARDS_RESULT_INVALID_HEADER`
/// for anything else, the detail naming the rule broken (`empty`, `missing_unit`,
/// `unknown_unit`, `no_digits`, `invalid_character`, `too_many_digits`, `overflow`).
///
/// # Safety
/// `value` must be NULL (with `len` 0) or valid for reads of `len` bytes; `timeout_ns`
/// NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_grpc_timeout_parse(
    value: *const c_char,
    len: usize,
    timeout_ns: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let value = unsafe { bytes(value, len, "value") }?;
        let out = Out::new(timeout_ns, "timeout_ns")?;
        let t = parse_grpc_timeout(value)?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(t.0) };
        Ok(())
    })
}

/// Format `timeout_ns` as whole milliseconds, rounded down (`"59"`, `"0"`), into `buf`:
/// as `guards_grpc_timeout_format`.
///
/// # Safety
/// As `guards_grpc_timeout_format`.
#[no_mangle]
pub unsafe extern "C" fn guards_millis_format(
    timeout_ns: u64,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> GuardsResult {
    boundary(|| {
        let v = encode_millis(Nanos(timeout_ns));
        // SAFETY: the caller's contract, passed on.
        unsafe { write_text(v.as_bytes(), buf, len, written) }
    })
}

/// Parse an integer-milliseconds header value (`len` bytes of ASCII digits) into a
/// duration in `*timeout_ns`. `GUARDS_RESULT_INVALID_HEADER` (`empty`,
/// `invalid_character`, `overflow`) for anything else.
///
/// # Safety
/// As `guards_grpc_timeout_parse`.
#[no_mangle]
pub unsafe extern "C" fn guards_millis_parse(
    value: *const c_char,
    len: usize,
    timeout_ns: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let value = unsafe { bytes(value, len, "value") }?;
        let out = Out::new(timeout_ns, "timeout_ns")?;
        let t = parse_millis(value)?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(t.0) };
        Ok(())
    })
}

/// The deadline a received `grpc-timeout` value sets, counted from `now_ns` (the local
/// arrival time), into `*deadline_ns`. Errors as `guards_grpc_timeout_parse`.
///
/// # Safety
/// As `guards_grpc_timeout_parse`.
#[no_mangle]
pub unsafe extern "C" fn guards_deadline_from_grpc_timeout(
    now_ns: u64,
    value: *const c_char,
    len: usize,
    deadline_ns: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let value = unsafe { bytes(value, len, "value") }?;
        let out = Out::new(deadline_ns, "deadline_ns")?;
        let t = parse_grpc_timeout(value)?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(guards_deadline_after(now_ns, t.0)) };
        Ok(())
    })
}

/// The deadline a received milliseconds header sets, counted from `now_ns`, into
/// `*deadline_ns`. Errors as `guards_millis_parse`.
///
/// # Safety
/// As `guards_millis_parse`.
#[no_mangle]
pub unsafe extern "C" fn guards_deadline_from_millis(
    now_ns: u64,
    value: *const c_char,
    len: usize,
    deadline_ns: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let value = unsafe { bytes(value, len, "value") }?;
        let out = Out::new(deadline_ns, "deadline_ns")?;
        let t = parse_millis(value)?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(guards_deadline_after(now_ns, t.0)) };
        Ok(())
    })
}
