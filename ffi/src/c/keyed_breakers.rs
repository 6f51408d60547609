//! `guards_keyed_breakers`: core's `KeyedBreakers`, one circuit breaker per key (dependency
//! × operation, tenant, route), behind an opaque handle.
//!
//! ```c
//! guards_keyed_breakers_config cfg;
//! guards_keyed_breakers_config_default(&cfg);
//! cfg.breaker.window_size = 20;
//! guards_keyed_breakers *set;
//! guards_keyed_breakers_new(&cfg, &set);
//! uint64_t view;
//! guards_key_of("stock.view", 10, &view);
//! guards_permit p;
//! if (guards_keyed_breakers_try_acquire(set, view, guards_now_ns(), &p) == GUARDS_RESULT_OK) {
//!     /* ... call, then: */
//!     guards_keyed_breakers_report(set, p, GUARDS_OUTCOME_SUCCESS, guards_now_ns());
//! }
//! guards_keyed_breakers_free(set);
//! ```

use std::ffi::c_char;

use super::circuit_breaker::{
    c_permit, guards_breaker_state, guards_breaker_status, guards_circuit_breaker_config,
    guards_circuit_breaker_stats, guards_outcome_effect, guards_window_counts,
};
use super::{
    boundary, bytes, call, call_out, code_to_result, config_default, fail_arg, fail_with,
    free_handle, guards_permit, hot, hot_out_ok, hot_outcome, hot_ref, new_handle, park, read,
    settle, Out,
};
use crate::error::{Failure, GuardsResult};
use crate::handle::AnyKeyedBreakers;
use crate::names::{ConfigError, ConfigErrorKind, KeyedBreakersPermit, Nanos};
use crate::permit::PermitSlots;

/// Cells of every breaker of a keyed set (core's default capacity).
const CELLS: u64 = 128;

/// A keyed breaker set's settings. Start from `guards_keyed_breakers_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_keyed_breakers_config {
    /// Every key's breaker. Its window must fit 128 cells (a count window of at most 128
    /// calls, or a time window of at most 42 buckets); `capacity` must be 0 or at most 128.
    pub breaker: guards_circuit_breaker_config,
    /// How many keys the set holds (default 16; 1..=256, rounded up to 4, 16, 64 or 256).
    /// Entries are never removed: size it for every key it will see.
    pub slots: u64,
}

/// A keyed set's own counters (each key's breaker has its own, see
/// `guards_keyed_breakers_get_stats`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_keyed_breakers_set_stats {
    /// Keys inserted.
    pub entries: u64,
    /// Calls refused because the set was full.
    pub full: u64,
    /// Slots allocated (the configured `slots` rounded up).
    pub slots: u64,
}

/// A set of circuit breakers by key (opaque). Thread-safe: share one handle between
/// threads.
#[derive(Debug)]
pub struct guards_keyed_breakers {
    set: AnyKeyedBreakers,
    permits: PermitSlots<KeyedBreakersPermit>,
}

impl guards_keyed_breakers_config {
    /// The defaults: the breaker's schema defaults with a count window of 100 and 16 slots.
    pub fn of_defaults() -> Self {
        guards_keyed_breakers_config {
            breaker: guards_circuit_breaker_config::of_defaults(),
            slots: guards_core::circuit_breaker::DEFAULT_KEYED_SLOTS as u64,
        }
    }
}

impl guards_keyed_breakers {
    /// Build from a C config.
    pub fn new(cfg: &guards_keyed_breakers_config) -> Result<Self, Failure> {
        let (config, capacity) = cfg.breaker.to_core()?;
        if capacity > CELLS {
            return Err(Failure::from(ConfigError::new(
                "breaker.capacity",
                ConfigErrorKind::OutOfRange,
                "0 or at most 128 cells (every breaker of a keyed set has 128)",
            )));
        }
        Ok(guards_keyed_breakers {
            set: AnyKeyedBreakers::new(config, cfg.slots)?,
            permits: PermitSlots::new(),
        })
    }

    /// A permit for `key` at `now`, or the refusal.
    pub fn try_acquire(&self, key: u64, now: u64) -> Result<guards_permit, Failure> {
        let mut p = guards_permit::default();
        code_to_result(self.acquire_into(key, now, &mut p)).map(|()| p)
    }

    /// Report `permit` with `outcome` at `now`, once, through core's `report`.
    pub fn report(&self, permit: &guards_permit, outcome: u32, now: u64) -> Result<(), Failure> {
        code_to_result(self.report_code(permit, outcome, now))
    }

    #[inline(always)]
    fn acquire_into(&self, key: u64, now: u64, out: *mut guards_permit) -> GuardsResult {
        let p = match with_keyed_breakers!(&self.set, s => s.try_acquire(key, Nanos(now))) {
            Ok(p) => p,
            Err(r) => return fail_with(r),
        };
        let head = c_permit(p.permit(), crate::permit::PermitToken::default());
        let give_back = |p| with_keyed_breakers!(&self.set, s => s.on_ignore(p));
        // SAFETY: `out` is non-null, aligned and writable (checked by the caller).
        unsafe { park(&self.permits, p, head, give_back, out) }
    }

    #[inline(always)]
    fn report_code(&self, permit: &guards_permit, outcome: u32, now: u64) -> GuardsResult {
        let outcome = match hot_outcome(outcome) {
            Ok(o) => o,
            Err(code) => return code,
        };
        settle(&self.permits, permit, |p| {
            with_keyed_breakers!(&self.set, s => s.report(p, outcome, Nanos(now)));
        })
    }

    fn not_found() -> Failure {
        Failure::argument(
            GuardsResult::NotFound,
            "key",
            "a key inserted by try_acquire",
        )
    }
}

/// The 64-bit key of a name (`len` bytes, no NUL needed): FNV-1a 64, the same in every
/// language (core's `key_of`), for keyed breakers and brownout operations alike.
///
/// # Safety
/// `name` must be NULL (with `len` 0) or valid for reads of `len` bytes; `out` NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_key_of(
    name: *const c_char,
    len: usize,
    out: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let name = unsafe { bytes(name, len, "name") }?;
        let out = Out::new(out, "out")?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(guards_core::circuit_breaker::key_of(name)) };
        Ok(())
    })
}

/// Write the default config (the breaker's defaults, 16 slots) to `out`.
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_keyed_breakers_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_config_default(
    out: *mut guards_keyed_breakers_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_keyed_breakers_config::of_defaults) }
}

/// Build a keyed set from `config` into `*out`. Errors: `NULL_ARGUMENT`, `INVALID_ENUM`
/// (window_kind), `CONFIG_*` naming the field (`slots`, `breaker.capacity`, or a breaker
/// field such as `window_size` when the window does not fit 128 cells), `OUT_OF_MEMORY`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_new(
    config: *const guards_keyed_breakers_config,
    out: *mut *mut guards_keyed_breakers,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { new_handle(config, out, guards_keyed_breakers::new) }
}

/// Free a keyed set (NULL is a no-op). Its outstanding permits become invalid.
///
/// # Safety
/// `k` must be NULL or a handle from `guards_keyed_breakers_new` not freed before, and no
/// other thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_free(k: *mut guards_keyed_breakers) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(k) }
}

/// Ask to make a call through the breaker of `key` at `now_ns`, inserting the key if it is
/// new. `GUARDS_RESULT_OK` with a permit in `*out`, or a refusal:
/// `GUARDS_RESULT_BREAKER_OPEN`, `GUARDS_RESULT_BREAKER_HALF_OPEN_FULL`, or
/// `GUARDS_RESULT_KEYED_BREAKERS_FULL` (a new key and no free slot); `guards_last_rejection`
/// says which key and until when.
///
/// # Safety
/// `k` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_try_acquire(
    k: *mut guards_keyed_breakers,
    key: u64,
    now_ns: u64,
    out: *mut guards_permit,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { hot_ref(k.cast_const()) }) else {
            return fail_arg(k.is_null(), "keyed_breakers");
        };
        if !hot_out_ok(out) {
            return fail_arg(out.is_null(), "out");
        }
        h.acquire_into(key, now_ns, out)
    })
}

/// Report how the call of `permit` ended (`outcome`: a `guards_outcome`) at `now_ns`, to
/// the breaker of its key: as `guards_circuit_breaker_report`.
///
/// # Safety
/// `k` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_report(
    k: *mut guards_keyed_breakers,
    permit: guards_permit,
    outcome: u32,
    now_ns: u64,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { hot_ref(k.cast_const()) }) else {
            return fail_arg(k.is_null(), "keyed_breakers");
        };
        h.report_code(&permit, outcome, now_ns)
    })
}

/// The state of the breaker of `key` at `now_ns` into `*out`; `GUARDS_RESULT_NOT_FOUND`
/// when the key was never inserted (reading never inserts).
///
/// # Safety
/// `k` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_state(
    k: *const guards_keyed_breakers,
    key: u64,
    now_ns: u64,
    out: *mut guards_breaker_state,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(k, "keyed_breakers", out, |k| {
            with_keyed_breakers!(&k.set, s => s.get(key).map(|b| b.state(Nanos(now_ns))))
                .map(guards_breaker_state::of_core)
                .ok_or_else(guards_keyed_breakers::not_found)
        })
    }
}

/// The counters of the breaker of `key` into `*out`; `GUARDS_RESULT_NOT_FOUND` when the
/// key was never inserted. Safe while other threads use the set.
///
/// # Safety
/// `k` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_get_stats(
    k: *const guards_keyed_breakers,
    key: u64,
    out: *mut guards_circuit_breaker_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(k, "keyed_breakers", out, |k| {
            with_keyed_breakers!(&k.set, s => s.get(key).map(|b| b.stats()))
                .map(guards_circuit_breaker_stats::from)
                .ok_or_else(guards_keyed_breakers::not_found)
        })
    }
}

/// The set's own counters (keys inserted, refusals of a full set, slots) into `*out`.
///
/// # Safety
/// `k` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_get_set_stats(
    k: *const guards_keyed_breakers,
    out: *mut guards_keyed_breakers_set_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(k, "keyed_breakers", out, |k| {
            let s = with_keyed_breakers!(&k.set, s => s.stats());
            guards_keyed_breakers_set_stats {
                entries: s.entries,
                full: s.full,
                slots: k.set.capacity() as u64,
            }
        })
    }
}

/// The config the set was built with (`slots` rounded up as allocated, `breaker.capacity`
/// 128).
///
/// # Safety
/// `k` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_get_config(
    k: *const guards_keyed_breakers,
    out: *mut guards_keyed_breakers_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(k, "keyed_breakers", out, |k| guards_keyed_breakers_config {
            breaker: guards_circuit_breaker_config::of_core(
                with_keyed_breakers!(&k.set, s => s.config()),
                CELLS,
            ),
            slots: k.set.capacity() as u64,
        })
    }
}

/// Permits issued and not yet reported, into `*out` (a scan; for tests and diagnostics).
///
/// # Safety
/// `k` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_outstanding(
    k: *const guards_keyed_breakers,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(k, "keyed_breakers", out, |k| k.permits.outstanding()) }
}

/// Insert `key` (if it is new) without making a call: its breaker starts closed.
/// `GUARDS_RESULT_OK` when the key is in the set, `GUARDS_RESULT_KEYED_BREAKERS_FULL` (a
/// new key and no free slot; `guards_last_rejection` says which key). For pre-registering
/// every key a set will see.
///
/// # Safety
/// `k` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_insert(
    k: *const guards_keyed_breakers,
    key: u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(k, "keyed_breakers", |k| {
            with_keyed_breakers!(&k.set, s => s.get_or_insert(key).map(|_| ()))
                .map_err(Failure::from)
        })
    }
}

/// `guards_keyed_breakers_report`, and what the report did to the key's breaker into
/// `*effect` (a `guards_outcome_effect`). A NULL `effect` is refused before the permit is
/// taken.
///
/// # Safety
/// `k` must be NULL or a live handle; `effect` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_report_effect(
    k: *mut guards_keyed_breakers,
    permit: guards_permit,
    outcome: u32,
    now_ns: u64,
    effect: *mut u32,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(k.cast_const(), "keyed_breakers", effect, |h| {
            let outcome = super::outcome(outcome)?;
            let p = h.permits.take(permit.token()).map_err(Failure::code)?;
            let e = with_keyed_breakers!(&h.set, s => s.report(p, outcome, Nanos(now_ns)));
            Ok(guards_outcome_effect::of_core(e) as u32)
        })
    }
}

/// The state word of the breaker of `key` (as `guards_circuit_breaker_status`) into
/// `*out`; `GUARDS_RESULT_NOT_FOUND` when the key was never inserted.
///
/// # Safety
/// `k` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_status(
    k: *const guards_keyed_breakers,
    key: u64,
    out: *mut guards_breaker_status,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(k, "keyed_breakers", out, |k| {
            with_keyed_breakers!(&k.set, s => s.get(key).map(|b| b.status()))
                .map(guards_breaker_status::of_core)
                .ok_or_else(guards_keyed_breakers::not_found)
        })
    }
}

/// The window of the breaker of `key` at `now_ns` (as
/// `guards_circuit_breaker_window_counts`) into `*out`; `GUARDS_RESULT_NOT_FOUND` when the
/// key was never inserted.
///
/// # Safety
/// `k` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_window_counts(
    k: *const guards_keyed_breakers,
    key: u64,
    now_ns: u64,
    out: *mut guards_window_counts,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(k, "keyed_breakers", out, |k| {
            with_keyed_breakers!(&k.set, s => s.get(key).map(|b| b.window_counts(Nanos(now_ns))))
                .map(guards_window_counts::from)
                .ok_or_else(guards_keyed_breakers::not_found)
        })
    }
}
