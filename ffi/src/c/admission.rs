//! `guards_admission`: core's `Admission`, the server's door: refuse work by priority
//! before doing any of it, with a Retry-After (Basketly's C5: 64 views, 80 reserves).
//!
//! ```c
//! guards_admission_config cfg;
//! guards_admission_config_default(&cfg);            /* 80 for priority 0, 64 for the rest */
//! guards_admission *door;
//! guards_admission_new(&cfg, &door);
//! guards_permit p;
//! uint64_t now = guards_now_ns();
//! if (guards_admission_try_acquire(door, now, priority, &p) != GUARDS_RESULT_OK) {
//!     guards_rejection r;
//!     guards_last_rejection(&r);
//!     /* 503, Retry-After: guards_retry_after_secs(r.retry_at_ns, now) */
//! } else {
//!     /* serve, then: */
//!     guards_admission_report(door, p, GUARDS_OUTCOME_SUCCESS, guards_now_ns());
//! }
//! ```

use super::gate::GateHandle;
use super::limiter::guards_limit_config;
use super::{
    call_out, config_default, fail_arg, free_handle, guards_permit, hot, hot_out_ok, hot_ref,
    new_handle, priority, read,
};
use crate::error::{Failure, GuardsResult};
use crate::names::{Admission, AdmissionConfig, AdmissionStats, Nanos};

/// An admission door's settings. Start from `guards_admission_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_admission_config {
    /// Per priority level 0..=7: refuse once this many calls (of any priority) are inside
    /// (default 80 for 0, 64 for the others; 1..=UINT64_MAX, at most a more important
    /// level's).
    pub limits: [u64; 8],
    /// An adaptive limit on the calls inside, or a fixed total (default: fixed, no limit).
    pub limit: guards_limit_config,
    /// Per priority level: the share of the adaptive limit it may fill (default 1.0;
    /// 0 < x <= 1, at most a more important level's).
    pub shares: [f64; 8],
    /// Sampling window of the adaptive limit (default 100 ms; 1 ns..=1 day).
    pub window_ns: u64,
    /// Samples per window (default 10; 1..=1000000).
    pub min_window_samples: u64,
    /// Lower bound of the Retry-After (default 1 s; 0..=1 day).
    pub min_retry_after_ns: u64,
    /// Upper bound of the Retry-After (default 60 s; min_retry_after..=1 day).
    pub max_retry_after_ns: u64,
}

impl guards_admission_config {
    /// The schema defaults (the limit: core's default, fixed with no limit).
    pub fn of_defaults() -> Self {
        Self::of_core(&crate::schema::ADMISSION.defaults())
    }

    /// Core's config, or `INVALID_ENUM` for an unknown algorithm.
    pub fn to_core(&self) -> Result<AdmissionConfig, Failure> {
        Ok(AdmissionConfig {
            limits: self.limits,
            limit: self.limit.to_core("limit.algorithm")?,
            shares: self.shares,
            window: Nanos(self.window_ns),
            min_window_samples: self.min_window_samples,
            min_retry_after: Nanos(self.min_retry_after_ns),
            max_retry_after: Nanos(self.max_retry_after_ns),
        })
    }

    /// The C form of core's config.
    pub fn of_core(c: &AdmissionConfig) -> Self {
        guards_admission_config {
            limits: c.limits,
            limit: guards_limit_config::of_core(&c.limit),
            shares: c.shares,
            window_ns: c.window.0,
            min_window_samples: c.min_window_samples,
            min_retry_after_ns: c.min_retry_after.0,
            max_retry_after_ns: c.max_retry_after.0,
        }
    }
}

/// An admission door's counters and gauges (relaxed snapshots, readable while traffic
/// flows).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_admission_stats {
    /// Calls admitted.
    pub admitted: u64,
    /// Refusals at a priority's fixed limit.
    pub refused_limit_reached: u64,
    /// Refusals at the adaptive limit or a priority's share of it.
    pub refused_overloaded: u64,
    /// Refusals (either reason) by priority level.
    pub refused_by_priority: [u64; 8],
    /// Permits released as successes.
    pub succeeded: u64,
    /// Permits released as drops.
    pub dropped: u64,
    /// Permits released without a sample.
    pub ignored: u64,
    /// Calls inside now.
    pub in_flight: u64,
    /// The current adaptive (or fixed total) limit.
    pub limit: u64,
}

impl From<AdmissionStats> for guards_admission_stats {
    fn from(s: AdmissionStats) -> Self {
        guards_admission_stats {
            admitted: s.admitted,
            refused_limit_reached: s.refused_limit_reached,
            refused_overloaded: s.refused_overloaded,
            refused_by_priority: s.refused_by_priority,
            succeeded: s.succeeded,
            dropped: s.dropped,
            ignored: s.ignored,
            in_flight: s.in_flight,
            limit: s.limit,
        }
    }
}

/// An admission door (opaque). Thread-safe and lock-free: share one handle.
#[derive(Debug)]
pub struct guards_admission(GateHandle<Admission>);

impl guards_admission {
    /// Build from a C config.
    pub fn new(cfg: &guards_admission_config) -> Result<Self, Failure> {
        GateHandle::new(cfg.to_core()?).map(guards_admission)
    }
}

/// Write the default config to `out` (Basketly's C5: 80 calls inside for priority 0, 64 for the
/// others, no adaptive limit, Retry-After 1..60 s).
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_admission_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_admission_config_default(
    out: *mut guards_admission_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_admission_config::of_defaults) }
}

/// Build an admission door from `config` into `*out`. Errors: `NULL_ARGUMENT`,
/// `INVALID_ENUM` (`limit.algorithm`), `CONFIG_*` naming the field (`limits[i]`,
/// `shares[i]`, ...), `OUT_OF_MEMORY`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_admission_new(
    config: *const guards_admission_config,
    out: *mut *mut guards_admission,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { new_handle(config, out, guards_admission::new) }
}

/// Free an admission door (NULL is a no-op). Its outstanding permits become invalid.
///
/// # Safety
/// `a` must be NULL or a handle from `guards_admission_new` not freed before, and no other
/// thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_admission_free(a: *mut guards_admission) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(a) }
}

/// Admit a call of `priority` (0..=7) at `now_ns`: `GUARDS_RESULT_OK` with a permit in
/// `*out`, or a refusal (`GUARDS_RESULT_ADMISSION_LIMIT_REACHED`,
/// `_ADMISSION_OVERLOADED`): answer 503 with `Retry-After:
/// guards_retry_after_secs(r.retry_at_ns, now_ns)` from `guards_last_rejection(&r)`.
/// Errors: `INVALID_ARGUMENT` (priority).
///
/// # Safety
/// `a` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_admission_try_acquire(
    a: *mut guards_admission,
    now_ns: u64,
    priority: u32,
    out: *mut guards_permit,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { hot_ref(a.cast_const()) }) else {
            return fail_arg(a.is_null(), "admission");
        };
        if !hot_out_ok(out) {
            return fail_arg(out.is_null(), "out");
        }
        h.0.acquire_into(now_ns, priority, out)
    })
}

/// Release `permit` with how the call ended (`outcome`: a `guards_outcome`) at `now_ns`: as
/// `guards_limiter_report`. Once; an invalid `outcome` leaves the permit outstanding.
///
/// # Safety
/// `a` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_admission_report(
    a: *mut guards_admission,
    permit: guards_permit,
    outcome: u32,
    now_ns: u64,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { hot_ref(a.cast_const()) }) else {
            return fail_arg(a.is_null(), "admission");
        };
        h.0.report_code(&permit, outcome, now_ns)
    })
}

/// The counters and gauges into `*out`; safe while other threads use the door.
///
/// # Safety
/// `a` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_admission_get_stats(
    a: *const guards_admission,
    out: *mut guards_admission_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(a, "admission", out, |a| a.0.gate.stats().into()) }
}

/// The config the door was built with.
///
/// # Safety
/// `a` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_admission_get_config(
    a: *const guards_admission,
    out: *mut guards_admission_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(a, "admission", out, |a| {
            guards_admission_config::of_core(a.0.gate.config())
        })
    }
}

/// Permits issued and not yet reported, into `*out` (a scan; for tests and diagnostics).
///
/// # Safety
/// `a` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_admission_outstanding(
    a: *const guards_admission,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(a, "admission", out, |a| a.0.permits.outstanding()) }
}

/// The threshold priority `priority` (0..=7) is held to now (its limit, capped by the
/// adaptive limit's share), into `*out`. Errors: `INVALID_ARGUMENT` (priority).
///
/// # Safety
/// `a` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_admission_threshold(
    a: *const guards_admission,
    priority: u32,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(a, "admission", out, |a| {
            Ok(a.0.gate.threshold(self::priority(priority)?))
        })
    }
}
