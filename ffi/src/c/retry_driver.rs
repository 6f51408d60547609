//! `guards_retry_driver`: core's `RetryDriver`, the retry loop of one request as a sans-IO
//! state machine. The C caller only sleeps and calls:
//!
//! ```c
//! guards_retry_driver_config cfg;
//! guards_retry_driver_config_default(&cfg);
//! cfg.deadline_ns = guards_deadline_after(guards_now_ns(), 2000 * 1000000ull);
//! guards_retry_driver *d;
//! guards_retry_driver_new(&cfg, &d);
//! guards_retry_step step;
//! guards_retry_driver_start(d, guards_now_ns(), budget, &step);
//! for (;;) {
//!     if (step.kind == GUARDS_RETRY_STEP_KIND_ATTEMPT) {
//!         uint32_t outcome; uint64_t retry_after_ns;
//!         call_with_timeout(step.budget_ns, &outcome, &retry_after_ns);
//!         guards_retry_driver_report(d, guards_now_ns(), outcome, retry_after_ns, policy,
//!                                    budget, &step);
//!     } else if (step.kind == GUARDS_RETRY_STEP_KIND_WAIT) {
//!         sleep_ns(step.retry_after_ns);
//!         guards_retry_driver_resume(d, guards_now_ns(), &step);
//!     } else {
//!         break;   /* SUCCEEDED, or GIVE_UP with step.give_up_reason */
//!     }
//! }
//! guards_retry_driver_free(d);   /* or guards_retry_driver_reset(d, &cfg) for the next one */
//! ```
//!
//! A driver belongs to one request: its functions take a non-`const` handle and must not be
//! called from two threads at once. The policy and the budget it is given are shared
//! handles (thread-safe).

use super::deadline::guards_deadline_config;
use super::retry_budget::guards_retry_budget;
use super::retry_policy::{guards_retry_policy, none_if};
use super::{
    arg, arg_mut, boundary, call_mut_out, config_default, free_handle, idempotency, new_handle,
    read, GUARDS_NO_RETRY_AFTER,
};
use crate::error::{Failure, GuardsResult};
use crate::names::{Deadline, Nanos, RetryBudget, RetryDriver, RetryStep};

/// A retry driver's settings: one request's deadline and idempotency, and the per-attempt
/// budget rule. Start from `guards_retry_driver_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct guards_retry_driver_config {
    /// The request's deadline, an instant (`GUARDS_NO_DEADLINE`, the default: none).
    pub deadline_ns: u64,
    /// Whether the call may be repeated: a `guards_idempotency` (default idempotent).
    pub idempotency: u32,
    /// Always 0 (room for later use).
    pub reserved: u32,
    /// Each attempt's budget: `min(attempt_timeout, time left) − margin`.
    pub attempt: guards_deadline_config,
}

impl guards_retry_driver_config {
    fn of_defaults() -> Self {
        guards_retry_driver_config {
            deadline_ns: super::GUARDS_NO_DEADLINE,
            idempotency: 0,
            reserved: 0,
            attempt: guards_deadline_config::of_defaults(),
        }
    }

    /// Core's driver in its `Idle` phase, or the first invalid field.
    pub fn to_core(&self) -> Result<RetryDriver, Failure> {
        Ok(RetryDriver::new(
            Deadline::at(Nanos(self.deadline_ns)),
            idempotency(self.idempotency)?,
            self.attempt.to_core(),
        )?)
    }
}

/// What the caller does next (`kind`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_retry_step_kind {
    /// Make attempt number `attempt` now, with `budget_ns` (it expires at `expires_at_ns`),
    /// then `guards_retry_driver_report` how it ended.
    Attempt = 0,
    /// Sleep until `retry_at_ns` (`retry_after_ns` from now), then
    /// `guards_retry_driver_resume`.
    Wait = 1,
    /// Done: the last attempt succeeded.
    Succeeded = 2,
    /// Done: give up, for `give_up_reason` (`guards_give_up_should_propagate_as_overloaded`
    /// says what to tell the caller's own caller).
    GiveUp = 3,
}

/// The retry driver's answer: what to do next.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_retry_step {
    /// A `guards_retry_step_kind`.
    pub kind: u32,
    /// `GIVE_UP`: a `guards_give_up_reason`; else 0.
    pub give_up_reason: u32,
    /// `ATTEMPT`: its number (1 = the first attempt); else 0.
    pub attempt: u32,
    /// Always 0 (room for later use).
    pub reserved: u32,
    /// `ATTEMPT`: how long to wait for it (and what to tell the callee); else 0.
    pub budget_ns: u64,
    /// `ATTEMPT`: when its budget runs out; else 0.
    pub expires_at_ns: u64,
    /// `WAIT`: when to resume; else 0.
    pub retry_at_ns: u64,
    /// `WAIT`: the same wait as a duration from the call's `now_ns`; else 0.
    pub retry_after_ns: u64,
}

impl guards_retry_step {
    fn of_core(s: RetryStep) -> Self {
        let kind = |k: guards_retry_step_kind| guards_retry_step {
            kind: k as u32,
            ..guards_retry_step::default()
        };
        match s {
            RetryStep::Attempt(a) => guards_retry_step {
                attempt: a.number,
                budget_ns: a.budget.0,
                expires_at_ns: a.expires_at.0,
                ..kind(guards_retry_step_kind::Attempt)
            },
            RetryStep::Wait(w) => guards_retry_step {
                retry_at_ns: w.retry_at.0,
                retry_after_ns: w.retry_after.0,
                ..kind(guards_retry_step_kind::Wait)
            },
            RetryStep::Succeeded => kind(guards_retry_step_kind::Succeeded),
            RetryStep::GiveUp(r) => guards_retry_step {
                give_up_reason: r as u32,
                ..kind(guards_retry_step_kind::GiveUp)
            },
        }
    }
}

/// Where a driver is (`phase` of `guards_retry_driver_state`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_retry_phase {
    /// Built, not started (`start` next).
    Idle = 0,
    /// An attempt is out (`report` next).
    Attempting = 1,
    /// Waiting before the next attempt (`resume` next).
    Waiting = 2,
    /// Finished: an attempt succeeded.
    Succeeded = 3,
    /// Finished: gave up.
    GaveUp = 4,
}

/// A driver's progress.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_retry_driver_state {
    /// A `guards_retry_phase`.
    pub phase: u32,
    /// Attempts started so far (the one out included).
    pub attempts: u32,
    /// Retries decided so far (waits handed out).
    pub retries: u32,
    /// `GAVE_UP`: a `guards_give_up_reason`; else 0.
    pub give_up_reason: u32,
    /// 1 when `last_outcome` holds the outcome of the last attempt reported (or
    /// cancelled), else 0.
    pub has_last_outcome: u32,
    /// A `guards_outcome` when `has_last_outcome`.
    pub last_outcome: u32,
    /// When the request started (`start`'s `now_ns`).
    pub started_at_ns: u64,
    /// When the attempt out (or the last one) started.
    pub attempt_started_at_ns: u64,
}

/// The retry loop of one request (opaque). One owner: not to be used from two threads at
/// once.
#[derive(Debug)]
pub struct guards_retry_driver {
    driver: RetryDriver,
}

/// The budget behind an optional C budget handle.
///
/// # Safety
/// `b` must be NULL or a live budget handle for `'a`.
unsafe fn budget<'a>(b: *mut guards_retry_budget) -> Result<Option<&'a RetryBudget>, Failure> {
    if b.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null: a live handle (caller's contract).
    Ok(Some(unsafe { arg(b.cast_const(), "budget") }?.budget()))
}

/// Write the default config to `out`: no deadline, idempotent, 60 ms per attempt with a
/// 1 ms margin.
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_retry_driver_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_driver_config_default(
    out: *mut guards_retry_driver_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_retry_driver_config::of_defaults) }
}

/// Build a driver for one request from `config` into `*out`, in its idle phase. Errors:
/// `NULL_ARGUMENT`, `INVALID_ENUM` (idempotency), `CONFIG_*` naming the field of
/// `attempt`, `OUT_OF_MEMORY`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_driver_new(
    config: *const guards_retry_driver_config,
    out: *mut *mut guards_retry_driver,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        new_handle(config, out, |c| {
            Ok(guards_retry_driver {
                driver: c.to_core()?,
            })
        })
    }
}

/// Free a driver (NULL is a no-op).
///
/// # Safety
/// `d` must be NULL or a handle from `guards_retry_driver_new` not freed before.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_driver_free(d: *mut guards_retry_driver) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(d) }
}

/// Make `d` a fresh driver for another request from `config` (idle phase), without
/// allocating. On error `d` is unchanged.
///
/// # Safety
/// `d` must be NULL or a live handle nothing else uses during the call; `config` NULL or
/// valid for reads.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_driver_reset(
    d: *mut guards_retry_driver,
    config: *const guards_retry_driver_config,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let d = unsafe { arg_mut(d, "driver") }?;
        // SAFETY: the caller's contract.
        let config = unsafe { arg(config, "config") }?;
        d.driver = config.to_core()?;
        Ok(())
    })
}

/// Start the request at `now_ns`: deposit its first attempt in `budget` (NULL: none) and
/// answer `ATTEMPT`, or `GIVE_UP` (deadline exceeded) when it has no time for one, into
/// `*out`. Only in the idle phase (`GUARDS_RESULT_WRONG_PHASE` otherwise, nothing
/// changed).
///
/// # Safety
/// `d` must be NULL or a live handle nothing else uses during the call; `budget` NULL or
/// a live budget; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_driver_start(
    d: *mut guards_retry_driver,
    now_ns: u64,
    budget: *mut guards_retry_budget,
    out: *mut guards_retry_step,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_mut_out(d, "driver", out, |d| {
            // SAFETY: the caller's contract.
            let b = budget_of(budget)?;
            let step = d.driver.start(Nanos(now_ns), b)?;
            Ok(guards_retry_step::of_core(step))
        })
    }
}

/// # Safety
/// As [`budget`].
unsafe fn budget_of<'a>(
    b: *mut guards_retry_budget,
) -> Result<Option<&'a dyn guards_core::retry_budget::Budget>, Failure> {
    // SAFETY: the caller's contract, passed on.
    Ok(unsafe { budget(b) }?.map(|b| b as &dyn guards_core::retry_budget::Budget))
}

/// The attempt out ended at `now_ns` with `outcome` (a `guards_outcome`) and the server's
/// `retry_after_ns` (`GUARDS_NO_RETRY_AFTER`: none; `guards_http_outcome` gives both).
/// Tells `budget` (NULL: none) by the call contract, then asks `policy`: `WAIT`,
/// `SUCCEEDED` or `GIVE_UP` into `*out`. Only with an attempt out
/// (`GUARDS_RESULT_WRONG_PHASE` otherwise); an invalid `outcome` (`INVALID_ENUM`) changes
/// nothing.
///
/// # Safety
/// `d` must be NULL or a live handle nothing else uses during the call; `policy` NULL or a
/// live policy; `budget` NULL or a live budget; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_driver_report(
    d: *mut guards_retry_driver,
    now_ns: u64,
    outcome: u32,
    retry_after_ns: u64,
    policy: *mut guards_retry_policy,
    budget: *mut guards_retry_budget,
    out: *mut guards_retry_step,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_mut_out(d, "driver", out, |d| {
            let outcome = super::outcome(outcome)?;
            // SAFETY: the caller's contract.
            let policy = arg(policy.cast_const(), "policy")?;
            // SAFETY: the caller's contract.
            let b = budget_of(budget)?;
            let step = d.driver.report(
                Nanos(now_ns),
                outcome,
                none_if(retry_after_ns, GUARDS_NO_RETRY_AFTER),
                policy.policy(),
                policy.rng(),
                b,
            )?;
            Ok(guards_retry_step::of_core(step))
        })
    }
}

/// The wait is over at `now_ns`: `ATTEMPT` (the next one), `GIVE_UP` (deadline exceeded
/// meanwhile) or, woken early, `WAIT` for the rest, into `*out`. Only while waiting
/// (`GUARDS_RESULT_WRONG_PHASE` otherwise).
///
/// # Safety
/// `d` must be NULL or a live handle nothing else uses during the call; `out` NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_driver_resume(
    d: *mut guards_retry_driver,
    now_ns: u64,
    out: *mut guards_retry_step,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_mut_out(d, "driver", out, |d| {
            Ok(guards_retry_step::of_core(d.driver.resume(Nanos(now_ns))?))
        })
    }
}

/// The caller abandoned the request: `GIVE_UP` (cancelled) into `*out`, from any phase that
/// is not final (`GUARDS_RESULT_WRONG_PHASE` once finished). An attempt still out is not
/// reported to the budget; a receipt held for a pending retry is dropped.
///
/// # Safety
/// `d` must be NULL or a live handle nothing else uses during the call; `out` NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_driver_cancel(
    d: *mut guards_retry_driver,
    out: *mut guards_retry_step,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_mut_out(d, "driver", out, |d| {
            Ok(guards_retry_step::of_core(d.driver.cancel()?))
        })
    }
}

/// The driver's phase and counts into `*out`.
///
/// # Safety
/// `d` must be NULL or a live handle not being changed by another thread; `out` NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_driver_get_state(
    d: *const guards_retry_driver,
    out: *mut guards_retry_driver_state,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(d, "driver", out, |d| {
            let r = &d.driver;
            guards_retry_driver_state {
                phase: r.phase() as u32,
                attempts: r.attempts(),
                retries: r.retries(),
                give_up_reason: r.give_up_reason().map_or(0, |g| g as u32),
                has_last_outcome: u32::from(r.last_outcome().is_some()),
                last_outcome: r.last_outcome().map_or(0, |o| o as u32),
                started_at_ns: r.started_at().0,
                attempt_started_at_ns: r.attempt_started_at().0,
            }
        })
    }
}
