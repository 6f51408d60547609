//! `guards_bulkhead`: core's bulkhead behind an opaque handle.
//!
//! ```c
//! guards_bulkhead_config cfg;
//! guards_bulkhead_config_default(&cfg);
//! cfg.max_concurrent = 12;
//! guards_bulkhead *h;
//! guards_bulkhead_new(&cfg, &h);
//! guards_permit p;
//! if (guards_bulkhead_try_acquire(h, &p) == GUARDS_RESULT_OK) {
//!     /* ... call ... */
//!     guards_bulkhead_release(h, p);
//! }
//! guards_bulkhead_free(h);
//! ```

use std::ffi::c_void;

use super::call::{self, guards_call, guards_call_fn};
use super::{
    boundary, code_to_result, config_default, fail_arg, fail_with, free_handle, guards_permit, hot,
    hot_out_ok, hot_outcome, hot_ref, new_handle, park, read, settle, Out,
};
use crate::error::{Failure, GuardsResult};
use crate::handle::InPlace;
use crate::names::{Bulkhead, BulkheadConfig, BulkheadPermit, BulkheadStats, Nanos};
use crate::permit::PermitSlots;

/// A bulkhead's settings. Start from `guards_bulkhead_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct guards_bulkhead_config {
    /// How many calls may be in flight at once (default 12; 1..=4294967295).
    pub max_concurrent: u64,
}

impl guards_bulkhead_config {
    /// Core's config (validated by core when the bulkhead is built).
    pub fn to_core(&self) -> BulkheadConfig {
        BulkheadConfig {
            max_concurrent: self.max_concurrent,
        }
    }

    /// The C form of core's config.
    pub fn of_core(c: &BulkheadConfig) -> Self {
        guards_bulkhead_config {
            max_concurrent: c.max_concurrent,
        }
    }
}

/// A bulkhead's counters (relaxed snapshots, readable while traffic flows).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_bulkhead_stats {
    /// Permits granted.
    pub acquired: u64,
    /// Requests refused at the cap.
    pub rejected: u64,
    /// Permits released (`acquired - in_flight`).
    pub released: u64,
    /// Calls in flight now.
    pub in_flight: u64,
}

impl From<BulkheadStats> for guards_bulkhead_stats {
    fn from(s: BulkheadStats) -> Self {
        guards_bulkhead_stats {
            acquired: s.acquired,
            rejected: s.rejected,
            released: s.released,
            in_flight: s.in_flight,
        }
    }
}

/// A bulkhead (opaque). Thread-safe: share one handle between threads.
#[derive(Debug)]
pub struct guards_bulkhead {
    bulkhead: InPlace<Bulkhead>,
    permits: PermitSlots<BulkheadPermit>,
}

impl guards_bulkhead {
    /// Build from a C config.
    pub fn new(cfg: &guards_bulkhead_config) -> Result<Self, Failure> {
        // The permit table is not limited to the cap: besides the permits out (at most the
        // cap) it holds the slots threads keep reserved for their next permit.
        Ok(guards_bulkhead {
            bulkhead: InPlace::<Bulkhead>::new(cfg.to_core())?,
            permits: PermitSlots::new(),
        })
    }

    /// A permit, or the refusal.
    pub fn try_acquire(&self) -> Result<guards_permit, Failure> {
        let mut p = guards_permit::default();
        code_to_result(self.acquire_into(&mut p)).map(|()| p)
    }

    /// Release `permit`, once.
    pub fn release(&self, permit: &guards_permit) -> Result<(), Failure> {
        code_to_result(self.release_code(permit))
    }

    #[inline(always)]
    fn acquire_into(&self, out: *mut guards_permit) -> GuardsResult {
        let p = match self.bulkhead.try_acquire() {
            Ok(p) => p,
            Err(r) => return fail_with(r),
        };
        let head = guards_permit::default();
        // SAFETY: `out` is non-null, aligned and writable (checked by the caller).
        unsafe { park(&self.permits, p, head, |p| self.bulkhead.release(p), out) }
    }

    #[inline(always)]
    fn report_code(&self, permit: &guards_permit, outcome: u32) -> GuardsResult {
        let outcome = match hot_outcome(outcome) {
            Ok(o) => o,
            Err(code) => return code,
        };
        settle(&self.permits, permit, |p| {
            let _ = self.bulkhead.report(p, outcome);
        })
    }

    #[inline(always)]
    fn release_code(&self, permit: &guards_permit) -> GuardsResult {
        settle(&self.permits, permit, |p| self.bulkhead.release(p))
    }

    /// Run `f` under the bulkhead (`guards_bulkhead_call`).
    ///
    /// # Safety
    /// `f` must be safe to call with `ctx`.
    #[inline(always)]
    unsafe fn call_code(
        &self,
        f: unsafe extern "C" fn(*mut c_void, *mut guards_call) -> u32,
        ctx: *mut c_void,
    ) -> GuardsResult {
        let p = match self.bulkhead.try_acquire() {
            Ok(p) => p,
            Err(r) => return fail_with(r),
        };
        // SAFETY: the caller's contract.
        let (_, _, code) = unsafe { call::run(f, ctx, guards_call::default()) };
        self.bulkhead.release(p);
        code
    }

    /// The bulkhead.
    pub fn bulkhead(&self) -> &Bulkhead {
        &self.bulkhead
    }

    /// Its permit table.
    pub fn permits(&self) -> &PermitSlots<BulkheadPermit> {
        &self.permits
    }
}

/// Write the default config to `out`.
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_bulkhead_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_config_default(
    out: *mut guards_bulkhead_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        config_default(out, || {
            guards_bulkhead_config::of_core(&crate::schema::bulkhead_defaults())
        })
    }
}

/// Build a bulkhead from `config` into `*out`. Errors: `NULL_ARGUMENT`, `CONFIG_*` naming
/// the field, `OUT_OF_MEMORY`. Free it with `guards_bulkhead_free`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_new(
    config: *const guards_bulkhead_config,
    out: *mut *mut guards_bulkhead,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { new_handle(config, out, guards_bulkhead::new) }
}

/// Free a bulkhead (NULL is a no-op). Its outstanding permits become invalid.
///
/// # Safety
/// `h` must be NULL or a handle from `guards_bulkhead_new` not freed before, and no other
/// thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_free(h: *mut guards_bulkhead) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(h) }
}

/// Take a slot: `GUARDS_RESULT_OK` with a permit in `*out` (give it back once with
/// `guards_bulkhead_release` or `guards_bulkhead_report`), or
/// `GUARDS_RESULT_BULKHEAD_FULL`.
///
/// # Safety
/// `h` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_try_acquire(
    h: *mut guards_bulkhead,
    out: *mut guards_permit,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { hot_ref(h.cast_const()) }) else {
            return fail_arg(h.is_null(), "bulkhead");
        };
        if !hot_out_ok(out) {
            return fail_arg(out.is_null(), "out");
        }
        h.acquire_into(out)
    })
}

/// Give the slot of `permit` back, once: again, or to another guard, is refused
/// (`PERMIT_ALREADY_REPORTED`, `PERMIT_WRONG_GUARD`, `PERMIT_UNKNOWN`) and changes nothing.
///
/// # Safety
/// `h` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_release(
    h: *mut guards_bulkhead,
    permit: guards_permit,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { hot_ref(h.cast_const()) }) else {
            return fail_arg(h.is_null(), "bulkhead");
        };
        h.release_code(&permit)
    })
}

/// Give the slot of `permit` back with how the call ended (`outcome`: a `guards_outcome`;
/// the call contract releases the slot whatever the outcome, so this is
/// `guards_bulkhead_release` with the outcome checked). Once, as for `_release`; an
/// invalid `outcome` (`INVALID_ENUM`) leaves the permit outstanding.
///
/// # Safety
/// `h` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_report(
    h: *mut guards_bulkhead,
    permit: guards_permit,
    outcome: u32,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { hot_ref(h.cast_const()) }) else {
            return fail_arg(h.is_null(), "bulkhead");
        };
        h.report_code(&permit, outcome)
    })
}

/// Run `fn(ctx, &call)` in a slot of the bulkhead, on this thread, and give the slot back
/// when it returns: `GUARDS_RESULT_OK` once `fn` has run, or `GUARDS_RESULT_BULKHEAD_FULL`
/// (`fn` did not run). The permit never leaves the library, so this costs less than
/// `guards_bulkhead_try_acquire` + `guards_bulkhead_release`. `fn` returns a
/// `guards_outcome`; one that is not (`GUARDS_RESULT_INVALID_ENUM`, returned after the
/// slot is given back) is the caller's bug. `call.started_ns` is 0. Errors:
/// `NULL_ARGUMENT` / `INVALID_ARGUMENT` (`bulkhead` NULL / misaligned) and `NULL_ARGUMENT`
/// (`fn`), checked before anything is taken.
///
/// # Safety
/// `h` must be NULL or a live handle; `fn` NULL or a function safe to call with `ctx`,
/// which returns normally.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_call(
    h: *mut guards_bulkhead,
    r#fn: guards_call_fn,
    ctx: *mut c_void,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { hot_ref(h.cast_const()) }) else {
            return fail_arg(h.is_null(), "bulkhead");
        };
        let f = match call::hot_fn(r#fn) {
            Ok(f) => f,
            Err(code) => return code,
        };
        // SAFETY: the caller's contract.
        unsafe { h.call_code(f, ctx) }
    })
}

/// The counters into `*out`; safe to call while other threads use the bulkhead.
///
/// # Safety
/// `h` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_get_stats(
    h: *const guards_bulkhead,
    out: *mut guards_bulkhead_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(h, "bulkhead", out, |h| h.bulkhead.stats().into()) }
}

/// The config the bulkhead was built with.
///
/// # Safety
/// `h` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_get_config(
    h: *const guards_bulkhead,
    out: *mut guards_bulkhead_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(h, "bulkhead", out, |h| {
            guards_bulkhead_config::of_core(h.bulkhead.config())
        })
    }
}

/// A bulkhead sized by Little's law for a dependency serving `rate_per_sec` calls per second
/// (`> 0` up to 1e9) with a healthy P99 of `p99_ns` (1 ns..=1 h), times `headroom`
/// (1.0..=100.0): `max_concurrent = ceil(rate_per_sec × p99 × headroom / 10^9)`, into
/// `*out`. Errors: `CONFIG_*` naming the argument (`rate_per_sec`, `p99`, `headroom`), or
/// `max_concurrent` when the result is too large; `NULL_ARGUMENT`.
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_bulkhead_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_config_from_littles_law(
    rate_per_sec: f64,
    p99_ns: u64,
    headroom: f64,
    out: *mut guards_bulkhead_config,
) -> GuardsResult {
    boundary(|| {
        let out = Out::new(out, "out")?;
        let c = BulkheadConfig::from_littles_law(rate_per_sec, Nanos(p99_ns), headroom)?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(guards_bulkhead_config::of_core(&c)) };
        Ok(())
    })
}
