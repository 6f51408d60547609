//! `guards_circuit_breaker`: core's circuit breaker behind an opaque handle.
//!
//! ```c
//! guards_circuit_breaker_config cfg;
//! guards_circuit_breaker_config_default(&cfg);
//! cfg.window_size = 20;
//! guards_circuit_breaker *b;
//! if (guards_circuit_breaker_new(&cfg, &b) != GUARDS_RESULT_OK) { /* bad config */ }
//! guards_permit p;
//! uint64_t now = guards_now_ns();
//! if (guards_circuit_breaker_try_acquire(b, now, &p) == GUARDS_RESULT_OK) {
//!     /* ... call, then: */
//!     guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_SUCCESS, guards_now_ns());
//! }
//! guards_circuit_breaker_free(b);
//! ```

use std::ffi::c_void;

use super::call::{self, guards_call, guards_call_fn};
use super::{
    call_out, code_to_result, config_default, fail_arg, fail_with, free_handle, guards_permit, hot,
    hot_out_ok, hot_outcome, hot_ref, new_handle, park, read, settle,
};
use crate::error::{Failure, GuardsResult};
use crate::handle::AnyBreaker;
use crate::names::{
    BreakerState, BreakerStatus, CircuitBreakerConfig, CircuitBreakerPermit, CircuitBreakerStats,
    Nanos, OutcomeEffect, WindowCounts, WindowKind,
};
use crate::permit::PermitSlots;
use crate::permit::PermitToken;

/// Which recent calls a breaker judges (`window_kind`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_window_kind {
    /// The last `window_size` outcomes.
    Count = 0,
    /// The outcomes of the last `window_duration_ns`, in `window_buckets` buckets.
    Time = 1,
}

/// A breaker's state (`guards_circuit_breaker_state`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_breaker_state {
    /// Calls flow; outcomes are recorded.
    Closed = 0,
    /// Calls are refused until the open period ends.
    Open = 1,
    /// A few probes are let through.
    HalfOpen = 2,
}

/// A breaker's settings. Start from `guards_circuit_breaker_config_default`; durations are
/// nanoseconds. Ranges are those of core's `CircuitBreakerConfig` (see its docs and
/// ffi/README.md).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_circuit_breaker_config {
    /// A `guards_window_kind`: `GUARDS_WINDOW_KIND_COUNT` (default) or `_TIME`.
    pub window_kind: u32,
    /// Count window: how many recent outcomes are judged (default 100; 1..=65536).
    pub window_size: u64,
    /// Time window: how far back outcomes count (default 10 s; a whole multiple of
    /// `window_buckets`, buckets of at least 1 µs, at most 366 days).
    pub window_duration_ns: u64,
    /// Time window: buckets the duration is split into (default 10; 1..=21845).
    pub window_buckets: u64,
    /// Open at this failure rate (default 0.5; 0 < x <= 1).
    pub failure_rate_threshold: f64,
    /// A call at least this long is slow (default 60 s; UINT64_MAX: never slow).
    pub slow_call_duration_ns: u64,
    /// Open at this slow-call rate (default 1.0; 0 < x <= 1).
    pub slow_call_rate_threshold: f64,
    /// Calls needed before rates are judged; 0 = automatic: 10, or the whole count window
    /// if it is smaller (default 0).
    pub minimum_calls: u64,
    /// How long the breaker stays open the first time (default 5 s; 1 µs..=366 days).
    pub open_duration_ns: u64,
    /// Growth of the open duration per consecutive re-opening (default 1.0; 1..=100).
    pub open_duration_multiplier: f64,
    /// Cap on the grown open duration (default 300 s; open_duration..=366 days).
    pub max_open_duration_ns: u64,
    /// Probes admitted while half-open (default 3; 1..=1000).
    pub half_open_probes: u64,
    /// The timeout each probe is told to use (default 1 s; at least 1 ns).
    pub probe_timeout_ns: u64,
    /// Window cells to allocate: 0 (default) = just enough for the window; otherwise
    /// rounded up to 128, 1024, 8192 or 65536.
    pub capacity: u64,
}

impl guards_circuit_breaker_config {
    /// The defaults (the schema's, `capacity` 0): what `guards_circuit_breaker_config_default`
    /// writes.
    pub fn of_defaults() -> Self {
        Self::of_core(&crate::schema::circuit_breaker_defaults(), 0)
    }

    /// Core's config and the capacity, or the first invalid value.
    pub fn to_core(&self) -> Result<(CircuitBreakerConfig, u64), Failure> {
        let window_kind = match self.window_kind {
            0 => WindowKind::Count,
            1 => WindowKind::Time,
            _ => {
                return Err(Failure::argument(
                    GuardsResult::InvalidEnum,
                    "window_kind",
                    "GUARDS_WINDOW_KIND_COUNT (0) or GUARDS_WINDOW_KIND_TIME (1)",
                ))
            }
        };
        Ok((
            CircuitBreakerConfig {
                window_kind,
                window_size: self.window_size,
                window_duration: Nanos(self.window_duration_ns),
                window_buckets: self.window_buckets,
                failure_rate_threshold: self.failure_rate_threshold,
                slow_call_duration: Nanos(self.slow_call_duration_ns),
                slow_call_rate_threshold: self.slow_call_rate_threshold,
                minimum_calls: self.minimum_calls,
                open_duration: Nanos(self.open_duration_ns),
                open_duration_multiplier: self.open_duration_multiplier,
                max_open_duration: Nanos(self.max_open_duration_ns),
                half_open_probes: self.half_open_probes,
                probe_timeout: Nanos(self.probe_timeout_ns),
            },
            self.capacity,
        ))
    }

    /// The C form of core's `c` with `capacity`.
    pub fn of_core(c: &CircuitBreakerConfig, capacity: u64) -> Self {
        guards_circuit_breaker_config {
            window_kind: c.window_kind as u32,
            window_size: c.window_size,
            window_duration_ns: c.window_duration.0,
            window_buckets: c.window_buckets,
            failure_rate_threshold: c.failure_rate_threshold,
            slow_call_duration_ns: c.slow_call_duration.0,
            slow_call_rate_threshold: c.slow_call_rate_threshold,
            minimum_calls: c.minimum_calls,
            open_duration_ns: c.open_duration.0,
            open_duration_multiplier: c.open_duration_multiplier,
            max_open_duration_ns: c.max_open_duration.0,
            half_open_probes: c.half_open_probes,
            probe_timeout_ns: c.probe_timeout.0,
            capacity,
        }
    }
}

/// A breaker's counters since it was built (relaxed snapshots, readable while traffic
/// flows), plus the permits now outstanding.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_circuit_breaker_stats {
    /// Ordinary outcomes recorded as successes (slow ones included).
    pub successes: u64,
    /// Ordinary outcomes recorded as failures (slow ones included).
    pub failures: u64,
    /// Ordinary outcomes recorded as slow.
    pub slow_calls: u64,
    /// Probes admitted.
    pub probes_admitted: u64,
    /// Probe successes counted.
    pub probe_successes: u64,
    /// Probe failures counted.
    pub probe_failures: u64,
    /// Permits handed back without an outcome.
    pub ignored: u64,
    /// Outcomes discarded (the breaker had moved on since the permit was issued).
    pub discarded: u64,
    /// Calls refused while open.
    pub rejected_open: u64,
    /// Calls refused while half-open with every probe taken.
    pub rejected_half_open: u64,
    /// Transitions closed -> open.
    pub closed_to_open: u64,
    /// Transitions open -> half-open.
    pub open_to_half_open: u64,
    /// Transitions half-open -> closed.
    pub half_open_to_closed: u64,
    /// Transitions half-open -> open.
    pub half_open_to_open: u64,
}

impl From<CircuitBreakerStats> for guards_circuit_breaker_stats {
    fn from(s: CircuitBreakerStats) -> Self {
        guards_circuit_breaker_stats {
            successes: s.successes,
            failures: s.failures,
            slow_calls: s.slow_calls,
            probes_admitted: s.probes_admitted,
            probe_successes: s.probe_successes,
            probe_failures: s.probe_failures,
            ignored: s.ignored,
            discarded: s.discarded,
            rejected_open: s.rejected_open,
            rejected_half_open: s.rejected_half_open,
            closed_to_open: s.closed_to_open,
            open_to_half_open: s.open_to_half_open,
            half_open_to_closed: s.half_open_to_closed,
            half_open_to_open: s.half_open_to_open,
        }
    }
}

/// A circuit breaker (opaque). Thread-safe: share one handle between threads.
#[derive(Debug)]
pub struct guards_circuit_breaker {
    breaker: AnyBreaker,
    permits: PermitSlots<CircuitBreakerPermit>,
}

impl guards_breaker_state {
    /// The C value of core's state.
    pub const fn of_core(s: BreakerState) -> Self {
        match s {
            BreakerState::Closed => guards_breaker_state::Closed,
            BreakerState::Open => guards_breaker_state::Open,
            BreakerState::HalfOpen => guards_breaker_state::HalfOpen,
        }
    }
}

/// A breaker permit as C sees it: its token, when it was granted, and whether it is a
/// probe (with the probe's timeout).
#[inline]
pub(crate) fn c_permit(p: &CircuitBreakerPermit, token: PermitToken) -> guards_permit {
    guards_permit {
        acquired_at_ns: p.acquired_at().0,
        probe_timeout_ns: p.probe_timeout().map_or(0, |t| t.0),
        is_probe: u32::from(p.is_probe()),
        ..guards_permit::of_token(token)
    }
}

impl guards_circuit_breaker {
    /// Build from a C config.
    pub fn new(cfg: &guards_circuit_breaker_config) -> Result<Self, Failure> {
        let (config, capacity) = cfg.to_core()?;
        Ok(guards_circuit_breaker {
            breaker: AnyBreaker::new(config, capacity)?,
            permits: PermitSlots::new(),
        })
    }

    /// `try_acquire` at `now`: a permit, or the refusal.
    pub fn try_acquire(&self, now: u64) -> Result<guards_permit, Failure> {
        let mut p = guards_permit::default();
        code_to_result(self.acquire_into(now, &mut p)).map(|()| p)
    }

    /// Report `permit` with `outcome` (a `guards_outcome` number) at `now`, once, through
    /// core's `report`: the call contract decides what the outcome does.
    pub fn report(&self, permit: &guards_permit, outcome: u32, now: u64) -> Result<(), Failure> {
        code_to_result(self.report_code(permit, outcome, now))
    }

    /// The acquire, its permit written to `out` on success; a failure is recorded.
    #[inline(always)]
    fn acquire_into(&self, now: u64, out: *mut guards_permit) -> GuardsResult {
        let p = match self.breaker.try_acquire(Nanos(now)) {
            Ok(p) => p,
            Err(r) => return fail_with(r),
        };
        let head = c_permit(&p, PermitToken::default());
        // SAFETY: `out` is non-null, aligned and writable (checked by the caller).
        unsafe { park(&self.permits, p, head, |p| self.breaker.on_ignore(p), out) }
    }

    /// The report; a failure is recorded.
    #[inline(always)]
    fn report_code(&self, permit: &guards_permit, outcome: u32, now: u64) -> GuardsResult {
        let outcome = match hot_outcome(outcome) {
            Ok(o) => o,
            Err(code) => return code,
        };
        settle(&self.permits, permit, |p| {
            self.breaker.report(p, outcome, Nanos(now));
        })
    }

    /// Run `f` under the breaker at `now` (`guards_circuit_breaker_call`).
    ///
    /// # Safety
    /// `f` must be safe to call with `ctx`.
    #[inline(always)]
    unsafe fn call_code(
        &self,
        now: u64,
        f: unsafe extern "C" fn(*mut c_void, *mut guards_call) -> u32,
        ctx: *mut c_void,
    ) -> GuardsResult {
        let p = match self.breaker.try_acquire(Nanos(now)) {
            Ok(p) => p,
            Err(r) => return fail_with(r),
        };
        let call = guards_call {
            started_ns: now,
            ended_ns: now,
            probe_timeout_ns: p.probe_timeout().map_or(0, |t| t.0),
            is_probe: u32::from(p.is_probe()),
            reserved: 0,
        };
        // SAFETY: the caller's contract.
        let (outcome, ended, code) = unsafe { call::run(f, ctx, call) };
        self.breaker.report(p, outcome, Nanos(ended));
        code
    }

    /// The breaker.
    pub fn breaker(&self) -> &AnyBreaker {
        &self.breaker
    }

    /// Its permit table.
    pub fn permits(&self) -> &PermitSlots<CircuitBreakerPermit> {
        &self.permits
    }
}

/// Write the default config (every field at its schema default, `capacity` 0) to `out`.
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_circuit_breaker_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_config_default(
    out: *mut guards_circuit_breaker_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_circuit_breaker_config::of_defaults) }
}

/// Build a breaker from `config` into `*out`. Errors: `NULL_ARGUMENT`,
/// `INVALID_ENUM` (window_kind), `CONFIG_*` naming the field (see
/// `guards_last_error_detail`), `OUT_OF_MEMORY`. Free it with `guards_circuit_breaker_free`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_new(
    config: *const guards_circuit_breaker_config,
    out: *mut *mut guards_circuit_breaker,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { new_handle(config, out, guards_circuit_breaker::new) }
}

/// Free a breaker (NULL is a no-op). Its outstanding permits become invalid.
///
/// # Safety
/// `b` must be NULL or a handle from `guards_circuit_breaker_new` not freed before, and no
/// other thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_free(b: *mut guards_circuit_breaker) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(b) }
}

/// Ask to make a call at `now_ns`. `GUARDS_RESULT_OK` with a permit in `*out` (report it
/// once with `guards_circuit_breaker_report`; a probe has `is_probe` set and must use
/// `probe_timeout_ns`), or a refusal: `GUARDS_RESULT_BREAKER_OPEN` /
/// `GUARDS_RESULT_BREAKER_HALF_OPEN_FULL` (`guards_last_rejection` says until when).
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_try_acquire(
    b: *mut guards_circuit_breaker,
    now_ns: u64,
    out: *mut guards_permit,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(b) = (unsafe { hot_ref(b.cast_const()) }) else {
            return fail_arg(b.is_null(), "breaker");
        };
        if !hot_out_ok(out) {
            return fail_arg(out.is_null(), "out");
        }
        b.acquire_into(now_ns, out)
    })
}

/// Report how the call of `permit` ended (`outcome`: a `guards_outcome`) at `now_ns`. What
/// the outcome does is the call contract's (`docs/outcomes.md`): success and permanent
/// count as successes (a slow one as slow too); timeout, connection error, other
/// transient, throttled and overloaded as failures; rejected and ignored hand the permit
/// back without a verdict; cancelled does too for an ordinary call but is a failure for a
/// half-open probe. A permit is reported once: again, or to another guard, is refused
/// (`PERMIT_ALREADY_REPORTED`, `PERMIT_WRONG_GUARD`, `PERMIT_UNKNOWN`) and nothing is
/// counted; an invalid `outcome` (`INVALID_ENUM`) leaves the permit outstanding.
///
/// # Safety
/// `b` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_report(
    b: *mut guards_circuit_breaker,
    permit: guards_permit,
    outcome: u32,
    now_ns: u64,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(b) = (unsafe { hot_ref(b.cast_const()) }) else {
            return fail_arg(b.is_null(), "breaker");
        };
        b.report_code(&permit, outcome, now_ns)
    })
}

/// Ask to make a call at `now_ns` and, if it is let through, run `fn(ctx, &call)` on this
/// thread and report the outcome `fn` returns (a `guards_outcome`) at `call.ended_ns`
/// (`now_ns` unless `fn` sets it: set it to the end time for slow calls to count). What
/// the outcome does is `guards_circuit_breaker_report`'s. Returns `GUARDS_RESULT_OK` once
/// `fn` has run and been reported, or a refusal (`BREAKER_OPEN`, `BREAKER_HALF_OPEN_FULL`;
/// `fn` did not run). A probe has `call.is_probe` set and must use
/// `call.probe_timeout_ns`. The permit never leaves the library, so this costs less than
/// `_try_acquire` + `_report`. An outcome that is not a `guards_outcome` is reported as
/// `GUARDS_OUTCOME_IGNORED` and returns `GUARDS_RESULT_INVALID_ENUM`. Errors:
/// `NULL_ARGUMENT` / `INVALID_ARGUMENT` (`breaker` NULL / misaligned) and `NULL_ARGUMENT`
/// (`fn`), checked before anything is taken.
///
/// # Safety
/// `b` must be NULL or a live handle; `fn` NULL or a function safe to call with `ctx`,
/// which returns normally.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_call(
    b: *mut guards_circuit_breaker,
    now_ns: u64,
    r#fn: guards_call_fn,
    ctx: *mut c_void,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(b) = (unsafe { hot_ref(b.cast_const()) }) else {
            return fail_arg(b.is_null(), "breaker");
        };
        let f = match call::hot_fn(r#fn) {
            Ok(f) => f,
            Err(code) => return code,
        };
        // SAFETY: the caller's contract.
        unsafe { b.call_code(now_ns, f, ctx) }
    })
}

/// The state at `now_ns` into `*out` (an open breaker whose open period has ended reads
/// half-open).
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_state(
    b: *const guards_circuit_breaker,
    now_ns: u64,
    out: *mut guards_breaker_state,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(b, "breaker", out, |b| {
            guards_breaker_state::of_core(b.breaker.state(Nanos(now_ns)))
        })
    }
}

/// The counters into `*out`; safe to call while other threads use the breaker.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_get_stats(
    b: *const guards_circuit_breaker,
    out: *mut guards_circuit_breaker_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(b, "breaker", out, |b| b.breaker.stats().into()) }
}

/// The config the breaker was built with, `capacity` set to the cells allocated.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_get_config(
    b: *const guards_circuit_breaker,
    out: *mut guards_circuit_breaker_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(b, "breaker", out, |b| {
            guards_circuit_breaker_config::of_core(&b.breaker.config(), b.breaker.capacity() as u64)
        })
    }
}

/// Permits issued and not yet reported, into `*out` (a scan; for tests and diagnostics).
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_outstanding(
    b: *const guards_circuit_breaker,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(b, "breaker", out, |b| b.permits.outstanding()) }
}

/// What a report did to a breaker (`guards_circuit_breaker_report_effect`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_outcome_effect {
    /// An ordinary outcome went into the window; the breaker stays closed.
    Counted = 0,
    /// An ordinary outcome went into the window and this report opened the breaker.
    Opened = 1,
    /// A probe succeeded; the breaker stays half-open, waiting for the other probes.
    ProbePassed = 2,
    /// The last probe succeeded and this report closed the breaker.
    Closed = 3,
    /// A probe failed (or was slow) and this report re-opened the breaker.
    Reopened = 4,
    /// Not counted: the breaker left the state and generation the permit was issued in.
    Discarded = 5,
    /// Handed back without a verdict (an outcome the call contract ignores).
    Ignored = 6,
}

impl guards_outcome_effect {
    /// The C value of core's effect.
    pub const fn of_core(e: OutcomeEffect) -> Self {
        match e {
            OutcomeEffect::Counted => guards_outcome_effect::Counted,
            OutcomeEffect::Opened => guards_outcome_effect::Opened,
            OutcomeEffect::ProbePassed => guards_outcome_effect::ProbePassed,
            OutcomeEffect::Closed => guards_outcome_effect::Closed,
            OutcomeEffect::Reopened => guards_outcome_effect::Reopened,
            OutcomeEffect::Discarded => guards_outcome_effect::Discarded,
            OutcomeEffect::Ignored => guards_outcome_effect::Ignored,
        }
    }
}

/// A breaker's state word (`guards_circuit_breaker_status`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct guards_breaker_status {
    /// The stored state, a `guards_breaker_state` (an open breaker whose open period has
    /// ended stays `OPEN` here until a call arrives; `guards_circuit_breaker_state` reports
    /// it as half-open).
    pub state: u32,
    /// +1 on every transition (wraps at 2^32).
    pub generation: u32,
    /// Probes issued in this half-open generation (0 otherwise).
    pub probes_issued: u32,
    /// Probes passed in this half-open generation (0 otherwise).
    pub probes_passed: u32,
    /// Openings in a row without a close (saturates at 1023).
    pub consecutive_opens: u32,
    /// Always 0 (room for later use).
    pub reserved: u32,
    /// When open: the end of the open period (an instant); 0 in any other state.
    pub half_open_at_ns: u64,
}

impl guards_breaker_status {
    /// The C form of core's status.
    pub fn of_core(s: BreakerStatus) -> Self {
        guards_breaker_status {
            state: guards_breaker_state::of_core(s.state) as u32,
            generation: s.generation,
            probes_issued: s.probes_issued,
            probes_passed: s.probes_passed,
            consecutive_opens: s.consecutive_opens,
            reserved: 0,
            half_open_at_ns: s.half_open_at.0,
        }
    }
}

/// The outcomes in a closed breaker's window (`guards_circuit_breaker_window_counts`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_window_counts {
    /// Calls in the window.
    pub calls: u64,
    /// Of which failed.
    pub failures: u64,
    /// Of which were slow (a slow failure counts in both).
    pub slow: u64,
}

impl From<WindowCounts> for guards_window_counts {
    fn from(w: WindowCounts) -> Self {
        guards_window_counts {
            calls: w.calls,
            failures: w.failures,
            slow: w.slow,
        }
    }
}

/// `guards_circuit_breaker_report`, and what the report did into `*effect` (a
/// `guards_outcome_effect`: counted, opened, closed, ...), for logging a transition where
/// it happens. Errors as `guards_circuit_breaker_report`; a NULL `effect` is refused before
/// the permit is taken.
///
/// # Safety
/// `b` must be NULL or a live handle; `effect` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_report_effect(
    b: *mut guards_circuit_breaker,
    permit: guards_permit,
    outcome: u32,
    now_ns: u64,
    effect: *mut u32,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(b.cast_const(), "breaker", effect, |h| {
            let outcome = super::outcome(outcome)?;
            let p = h.permits.take(permit.token()).map_err(Failure::code)?;
            let e = h.breaker.report(p, outcome, Nanos(now_ns));
            Ok(guards_outcome_effect::of_core(e) as u32)
        })
    }
}

/// The breaker's state word (stored state, generation, probes, consecutive openings, end of
/// the open period) into `*out`; safe while other threads use the breaker.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_status(
    b: *const guards_circuit_breaker,
    out: *mut guards_breaker_status,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(b, "breaker", out, |b| {
            guards_breaker_status::of_core(b.breaker.status())
        })
    }
}

/// The calls, failures and slow calls in the window at `now_ns` into `*out` (all 0 unless
/// the breaker is closed).
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_window_counts(
    b: *const guards_circuit_breaker,
    now_ns: u64,
    out: *mut guards_window_counts,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(b, "breaker", out, |b| {
            b.breaker.window_counts(Nanos(now_ns)).into()
        })
    }
}
