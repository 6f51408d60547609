//! `guards_region`: host-wide guards for C. One region file holds named guards that
//! every process opening it uses (the workers of a prefork server share one breaker and
//! one bulkhead); permits record their owner, and a dead process's permits are reclaimed.
//! And for programs that share memory their own way: a guard placed in caller memory
//! (`guards_<guard>_size` / `_align` / `_init_in` / `_attach`).
//!
//! ```c
//! guards_region *r;
//! if (guards_region_open("myapp-guards", NULL, &r) != GUARDS_RESULT_OK) { /* ... */ }
//! guards_bulkhead_config bc;
//! guards_bulkhead_config_default(&bc);
//! bc.max_concurrent = 12;                   /* 12 for the whole host */
//! guards_region_guard *stock;
//! guards_region_bulkhead(r, "stock", &bc, &stock);
//! guards_permit p;
//! if (guards_region_try_acquire(stock, 0, guards_now_ns(), &p) == GUARDS_RESULT_OK) {
//!     /* ... call stock ... */
//!     guards_region_report(stock, p, GUARDS_OUTCOME_SUCCESS, guards_now_ns());
//! }
//! guards_region_guard_free(stock);
//! guards_region_close(r);
//! ```
//!
//! Every kind a region holds comes to C: `guards_region_<guard>` (circuit breaker, keyed
//! breakers, bulkhead, retry budget, limiter, admission, adaptive throttle, latency
//! tracker, hedging, brownout) with the guard's own C config, and
//! `guards_<guard>_size` / `_align` / `_init_in` / `_attach` for caller memory. The kinds
//! that hand out permits (breakers, keyed breakers, bulkhead, limiter, admission) are
//! driven with `guards_region_try_acquire` / `guards_region_report` (owner-recorded); the
//! others with `guards_region_<guard>_<verb>` (a retry budget's deposit / withdraw /
//! report, a throttle's try_acquire / report, ...), and every kind's counters with
//! `guards_region_<guard>_get_stats`. cbindgen does not expand macros, so each exported
//! function is written out, as a short call of a generic one (`region_guard`,
//! `size_for`, `init_in_for`, `attach_for`).

use std::ffi::{c_char, c_void};

use super::adaptive_throttle::{guards_adaptive_throttle_config, guards_adaptive_throttle_stats};
use super::admission::{guards_admission_config, guards_admission_stats};
use super::brownout::{guards_brownout_config, guards_brownout_decision, guards_brownout_stats};
use super::bulkhead::{guards_bulkhead_config, guards_bulkhead_stats};
use super::circuit_breaker::{
    guards_breaker_state, guards_circuit_breaker_config, guards_circuit_breaker_stats,
};
use super::hedging::{guards_hedging_config, guards_hedging_stats};
use super::keyed_breakers::guards_keyed_breakers_config;
use super::latency_tracker::{guards_latency_tracker_config, guards_latency_tracker_stats};
use super::limiter::{guards_limiter_config, guards_limiter_stats};
use super::retry_budget::{
    guards_retry_budget_config, guards_retry_budget_stats, guards_retry_receipt,
};
use super::{
    arg, boundary, c_str, fail_arg, fail_code, fail_with, guards_permit, hot, hot_out_ok,
    hot_outcome, hot_priority, hot_ref, Out,
};
use crate::error::{Detail, Failure, GuardsResult};
use crate::permit::{PermitSlots, PermitToken};
use crate::shared::{
    breaker_capacity, place, AnyShared, GuardKind, Refusal, Region, RegionOptions, Shared,
    SharedGuard, SharedPermits,
};
use guards_core::circuit_breaker::{
    BreakerState, CircuitBreaker, CircuitBreakerConfig, KeyedBreakers,
};
use guards_core::retry_budget::RetryReceipt;
use guards_core::{
    AdaptiveThrottle, Admission, Brownout, BrownoutDecision, Bulkhead, BulkheadConfig, ConfigError,
    ConfigErrorKind, Hedging, LatencyTracker, Limiter, Nanos, Outcome, RetryBudget,
};

/// The kinds of guard a region holds (`guards_region_guard_info.kind`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_kind {
    /// A circuit breaker.
    CircuitBreaker = 1,
    /// A keyed breaker set.
    KeyedBreakers = 2,
    /// A bulkhead.
    Bulkhead = 3,
    /// A retry budget (any mode).
    RetryBudget = 4,
    /// A concurrency limiter.
    Limiter = 5,
    /// Admission control.
    Admission = 6,
    /// An adaptive throttle.
    AdaptiveThrottle = 7,
    /// A latency tracker.
    LatencyTracker = 8,
    /// A hedging policy.
    Hedging = 9,
    /// A brownout policy (one operation).
    Brownout = 10,
}

/// How to open (or create) a region. Start from `guards_region_options_default`. The
/// capacities apply when this call creates the region; an existing one keeps its own.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct guards_region_options {
    /// Named guards it can hold (default 64; 1..=65536).
    pub max_guards: u64,
    /// Owner-recorded permits in flight at once, all guards and processes (default 4096;
    /// 1..=16777216).
    pub permit_slots: u64,
    /// Bytes for guard state (default 16 MiB; 4096..=2^40; a /dev/shm file only uses
    /// memory for the guards created).
    pub data_bytes: u64,
    /// How long to wait for another process creating a guard this call needs (default
    /// 5 s; at most 1 hour). Past it: `GUARDS_RESULT_REGION_TIMEOUT`.
    pub wait_timeout_ns: u64,
    /// Least time between two reclaim scans started by a full guard (default 10 ms; 0 =
    /// on every such refusal; at most 1 hour).
    pub reclaim_interval_ns: u64,
    /// Permission bits of a new region file, applied exactly (default 0600; at most 0777).
    pub mode: u32,
    /// 1 (default): create the region if there is none; 0: open an existing one only
    /// (`GUARDS_RESULT_GUARD_NOT_FOUND` otherwise).
    pub create: u32,
}

impl guards_region_options {
    fn of(o: &RegionOptions) -> Self {
        guards_region_options {
            max_guards: o.max_guards,
            permit_slots: o.permit_slots,
            data_bytes: o.data_bytes,
            wait_timeout_ns: o.wait_timeout.0,
            reclaim_interval_ns: o.reclaim_interval.0,
            mode: o.mode,
            create: u32::from(o.create),
        }
    }

    fn to_options(self) -> Result<RegionOptions, Failure> {
        let create = match self.create {
            0 => false,
            1 => true,
            _ => {
                return Err(Failure::argument(
                    GuardsResult::InvalidArgument,
                    "create",
                    "0 or 1",
                ))
            }
        };
        let o = RegionOptions {
            max_guards: self.max_guards,
            permit_slots: self.permit_slots,
            data_bytes: self.data_bytes,
            wait_timeout: Nanos(self.wait_timeout_ns),
            reclaim_interval: Nanos(self.reclaim_interval_ns),
            mode: self.mode,
            create,
        };
        o.validate()?;
        Ok(o)
    }
}

/// A region's counters and sizes (relaxed snapshots; `permits_held` is a scan).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_region_stats {
    /// Guards created.
    pub guards: u64,
    /// Named guards it can hold.
    pub max_guards: u64,
    /// Bytes of guard state handed out.
    pub data_used: u64,
    /// Bytes for guard state in all.
    pub data_bytes: u64,
    /// Permit records.
    pub permit_slots: u64,
    /// Permits held now, all guards and processes.
    pub permits_held: u64,
    /// Permits of dead processes given back to their guards (as cancelled).
    pub reclaimed_permits: u64,
    /// Permit records of dead processes freed that were claimed but never published (the
    /// process died while asking its guard).
    pub reclaimed_claims: u64,
    /// Reclaim scans run.
    pub scans: u64,
    /// Guards whose creator died while creating them, finished by another process.
    pub takeovers: u64,
}

/// What a region guard handle is.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_region_guard_info {
    /// Its kind (a `guards_kind`).
    pub kind: u32,
    /// Always 0.
    pub reserved: u32,
    /// Its type's capacity (window cells of a breaker; 0 for kinds of one size).
    pub capacity: u64,
    /// Its permits held now, all processes (a scan).
    pub permits_held: u64,
}

/// An open region (opaque). Thread-safe.
#[derive(Debug)]
pub struct guards_region {
    region: Region,
}

/// A guard in a region, or in caller memory (opaque). Thread-safe: share one handle
/// between threads. It keeps its region mapped until freed, even after
/// `guards_region_close`.
#[derive(Debug)]
pub struct guards_region_guard {
    guard: AnyShared,
    /// A retry budget's receipts issued through this handle (a receipt holds nothing in
    /// the budget, so it is kept per handle, not in the region).
    receipts: Option<Box<PermitSlots<RetryReceipt>>>,
}

impl guards_region_guard {
    fn boxed(guard: AnyShared) -> Box<guards_region_guard> {
        let receipts = match guard {
            AnyShared::RetryBudget(_) => Some(Box::new(PermitSlots::new())),
            _ => None,
        };
        Box::new(guards_region_guard { guard, receipts })
    }
}

/// The generic get-or-create: `K` from core config `config`, as a handle.
pub(crate) fn get_or_create<K: SharedGuard>(
    region: &Region,
    name: &str,
    config: K::Config,
    wrap: fn(Shared<K>) -> AnyShared,
) -> Result<Box<guards_region_guard>, Failure> {
    let g = region.get_or_create::<K>(name, config)?;
    Ok(guards_region_guard::boxed(wrap(g)))
}

/// The generic `_init_in`: build a `K` from `config` in caller memory.
///
/// # Safety
/// As [`place::init_in`].
pub(crate) unsafe fn init_in<K: SharedGuard>(
    mem: *mut c_void,
    len: usize,
    config: K::Config,
) -> Result<(), Failure> {
    // SAFETY: the caller's contract.
    unsafe { place::init_in::<K>(mem.cast(), len, config) }
}

/// The generic `_attach`: a handle on the guard built in caller memory, which must be of
/// `kind` (any capacity).
///
/// # Safety
/// As [`place::attach`].
pub(crate) unsafe fn attach(
    mem: *mut c_void,
    len: usize,
    kind: GuardKind,
) -> Result<Box<guards_region_guard>, Failure> {
    // SAFETY: the caller's contract.
    let g = unsafe { AnyShared::attach_placed(mem.cast(), len) }?;
    if g.kind() != kind {
        return Err(Failure {
            code: GuardsResult::GuardMismatch,
            detail: Detail::GuardMismatch {
                field: "kind",
                existing: g.kind() as u64,
                requested: kind as u64,
            },
        });
    }
    Ok(guards_region_guard::boxed(g))
}

/// The hot acquire: core's permit recorded in the region, written to `out` with wide stores;
/// a refusal recorded out of line. Only a code comes back.
///
/// # Safety
/// `out` must be non-NULL, aligned and valid for writes.
#[inline(always)]
unsafe fn acquire_hot<K: SharedPermits>(
    g: &Shared<K>,
    arg: K::Arg,
    now: u64,
    out: *mut guards_permit,
) -> GuardsResult
where
    Failure: From<K::Rejected>,
{
    match g.try_acquire(arg, Nanos(now)) {
        Ok((t, v)) => {
            let p = guards_permit {
                guard: t.guard,
                slot: t.slot,
                generation: t.generation,
                acquired_at_ns: v.acquired_at.0,
                probe_timeout_ns: v.probe_timeout.map_or(0, |t| t.0),
                is_probe: u32::from(v.probe_timeout.is_some()),
                reserved: 0,
            };
            // SAFETY: the caller's contract.
            unsafe { p.write_to(out) };
            GuardsResult::Ok
        }
        Err(Refusal::Rejected(r)) => fail_with(r),
        Err(Refusal::Failed(f)) => fail_with(f),
    }
}

/// [`acquire_hot`] for a kind whose acquire takes no key (a breaker, a bulkhead).
///
/// # Safety
/// As [`acquire_hot`].
#[inline(always)]
unsafe fn acquire_no_key<K: SharedPermits<Arg = ()>>(
    g: &Shared<K>,
    key: u64,
    now: u64,
    out: *mut guards_permit,
) -> GuardsResult
where
    Failure: From<K::Rejected>,
{
    if key != 0 {
        return fail_with(no_key());
    }
    // SAFETY: the caller's contract.
    unsafe { acquire_hot(g, (), now, out) }
}

/// The hot report: only a code comes back; a refusal is recorded out of line.
#[inline(always)]
fn report_hot<K: SharedPermits>(
    g: &Shared<K>,
    token: PermitToken,
    outcome: Outcome,
    now: u64,
) -> GuardsResult {
    match g.report(token, outcome, Nanos(now)) {
        Ok(_) => GuardsResult::Ok,
        Err(code) => fail_code(code),
    }
}

#[cold]
fn no_key() -> Failure {
    Failure::argument(
        GuardsResult::InvalidArgument,
        "key",
        "0 for a circuit breaker or a bulkhead",
    )
}

#[cold]
fn wrong_kind(what: &'static str) -> Failure {
    Failure::argument(GuardsResult::InvalidArgument, "guard", what)
}

#[cold]
fn no_permits() -> Failure {
    Failure::argument(
        GuardsResult::InvalidArgument,
        "guard",
        "a guard that hands out permits (circuit breaker, keyed breakers, bulkhead, limiter, \
         admission)",
    )
}

/// A handle's guard as one kind, or `INVALID_ARGUMENT` naming the kind wanted.
macro_rules! only {
    ($g:expr, $variant:ident, $what:literal) => {
        match $g {
            AnyShared::$variant(x) => Ok(x),
            _ => Err(Failure::argument(
                GuardsResult::InvalidArgument,
                "guard",
                $what,
            )),
        }
    };
}

/// Write what `read` takes from the region guard `g` (its stats, ...) to `*out`, inside the
/// panic boundary: `g` and `out` checked, `*out` untouched on error.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
unsafe fn read_into<T, S: Into<T>>(
    g: *const guards_region_guard,
    out: *mut T,
    read: impl FnOnce(&AnyShared) -> Result<S, Failure>,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let v = read(&g.guard)?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(v.into()) };
        Ok(())
    })
}

/// Write the default options to `out`.
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_region_options`.
#[no_mangle]
pub unsafe extern "C" fn guards_region_options_default(
    out: *mut guards_region_options,
) -> GuardsResult {
    boundary(|| {
        let out = Out::new(out, "out")?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(guards_region_options::of(&RegionOptions::default())) };
        Ok(())
    })
}

/// Open the region at `path` (a bare name, no `/`, means `/dev/shm/<name>`), creating it
/// if there is none (unless `options->create` is 0); `options` may be NULL for the
/// defaults. Opening reclaims the permits of dead processes (at `guards_now_ns()`).
/// Errors: `NULL_ARGUMENT`, `INVALID_ARGUMENT` (path), `CONFIG_*` naming the option,
/// `REGION_IO` (a system call failed: see `guards_last_error_detail`), `REGION_INVALID` (not
/// a region, or damaged), `REGION_INCOMPATIBLE` (another layout version, build, boot or pid
/// namespace), `GUARD_NOT_FOUND` (no region and `create` 0). Close with
/// `guards_region_close`.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string; `options` NULL or a valid options
/// struct; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_open(
    path: *const c_char,
    options: *const guards_region_options,
    out: *mut *mut guards_region,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let path = unsafe { c_str(path, "path") }?;
        let options = if options.is_null() {
            RegionOptions::default()
        } else {
            // SAFETY: the caller's contract.
            unsafe { arg(options, "options") }?.to_options()?
        };
        let out = Out::new(out, "out")?;
        let r = Box::new(guards_region {
            region: Region::open(path, &options)?,
        });
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(Box::into_raw(r)) };
        Ok(())
    })
}

/// Close a region handle (NULL is a no-op). Guard handles from it stay usable (each keeps
/// the region mapped) until freed.
///
/// # Safety
/// `r` must be NULL or a handle from `guards_region_open` not closed before, and no other
/// thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_region_close(r: *mut guards_region) {
    if r.is_null() {
        return;
    }
    let _ = boundary(|| {
        // SAFETY: from `Box::into_raw` in `guards_region_open`, freed once.
        drop(unsafe { Box::from_raw(r) });
        Ok(())
    });
}

/// Remove the region file at `path` (a bare name means `/dev/shm/<name>`). Processes that
/// have it open keep using it; the next open creates a new one. Errors:
/// `GUARD_NOT_FOUND`, `REGION_IO`.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn guards_region_remove(path: *const c_char) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let path = unsafe { c_str(path, "path") }?;
        Region::remove(path)
    })
}

/// Scan the permit table now and give every permit of a dead process back to its guard,
/// reported as cancelled at `now_ns` (a bulkhead slot is released, a limiter place freed,
/// a half-open probe counted as failed); the number given back goes to `*reclaimed`.
///
/// # Safety
/// `r` must be NULL or a live handle; `reclaimed` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_reclaim(
    r: *const guards_region,
    now_ns: u64,
    reclaimed: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { arg(r, "region") }?;
        let out = Out::new(reclaimed, "reclaimed")?;
        let done = r.region.reclaim(Nanos(now_ns));
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(done.permits) };
        Ok(())
    })
}

/// The region's counters and sizes into `*out`.
///
/// # Safety
/// `r` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_get_stats(
    r: *const guards_region,
    out: *mut guards_region_stats,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { arg(r, "region") }?;
        let out = Out::new(out, "out")?;
        let s = r.region.stats();
        let c = guards_region_stats {
            guards: s.guards,
            max_guards: s.max_guards,
            data_used: s.data_used,
            data_bytes: s.data_bytes,
            permit_slots: s.permit_slots,
            permits_held: s.permits_held,
            reclaimed_permits: s.reclaimed_permits,
            reclaimed_claims: s.reclaimed_claims,
            scans: s.scans,
            takeovers: s.takeovers,
        };
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(c) };
        Ok(())
    })
}

/// The circuit breaker named `name` (1..=64 bytes of UTF-8), created from `config` if the
/// region has none. A breaker of that name made with another config or capacity, or a
/// guard of another kind, is refused with `GUARDS_RESULT_GUARD_MISMATCH` (the detail says
/// what differs). Other errors: `CONFIG_*` naming the field, `INVALID_ARGUMENT` (name),
/// `REGION_FULL`, `REGION_TIMEOUT`. Free the handle with `guards_region_guard_free`.
///
/// # Safety
/// `r` must be NULL or a live handle; `name` NULL or a NUL-terminated string; `config` NULL
/// or a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_circuit_breaker(
    r: *const guards_region,
    name: *const c_char,
    config: *const guards_circuit_breaker_config,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { arg(r, "region") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        // SAFETY: the caller's contract.
        let (config, capacity) = unsafe { arg(config, "config") }?.to_core()?;
        let out = Out::new(out, "out")?;
        let g = guards_region_guard::boxed(AnyShared::breaker(&r.region, name, config, capacity)?);
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(Box::into_raw(g)) };
        Ok(())
    })
}

/// The bulkhead named `name`, created from `config` if the region has none (its cap is
/// then the cap of every process together). Errors as `guards_region_circuit_breaker`.
///
/// # Safety
/// As `guards_region_circuit_breaker`.
#[no_mangle]
pub unsafe extern "C" fn guards_region_bulkhead(
    r: *const guards_region,
    name: *const c_char,
    config: *const guards_bulkhead_config,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { arg(r, "region") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        // SAFETY: the caller's contract.
        let config = bulkhead_config(unsafe { arg(config, "config") }?);
        let out = Out::new(out, "out")?;
        let g = get_or_create::<Bulkhead>(&r.region, name, config, AnyShared::Bulkhead)?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(Box::into_raw(g)) };
        Ok(())
    })
}

fn bulkhead_config(c: &guards_bulkhead_config) -> BulkheadConfig {
    BulkheadConfig {
        max_concurrent: c.max_concurrent,
    }
}

/// The existing guard named `name`, whatever its kind and config. Errors:
/// `GUARD_NOT_FOUND`.
///
/// # Safety
/// As `guards_region_circuit_breaker`.
#[no_mangle]
pub unsafe extern "C" fn guards_region_attach(
    r: *const guards_region,
    name: *const c_char,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { arg(r, "region") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        let out = Out::new(out, "out")?;
        let g = guards_region_guard::boxed(AnyShared::attach(&r.region, name)?);
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(Box::into_raw(g)) };
        Ok(())
    })
}

/// Free a guard handle (NULL is a no-op). The guard stays in its region; permits taken
/// through this handle and not reported stay held (by this process) until reported
/// through another handle of the same guard, or reclaimed after this process dies.
///
/// # Safety
/// `g` must be NULL or a handle not freed before, and no other thread may use it during
/// or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_region_guard_free(g: *mut guards_region_guard) {
    if g.is_null() {
        return;
    }
    let _ = boundary(|| {
        // SAFETY: from `Box::into_raw` in this module, freed once (caller's contract).
        drop(unsafe { Box::from_raw(g) });
        Ok(())
    });
}

/// What the guard is, into `*out`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_guard_get_info(
    g: *const guards_region_guard,
    out: *mut guards_region_guard_info,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let held = match &g.guard {
            AnyShared::Breaker128(b) => b.outstanding(),
            AnyShared::Breaker1024(b) => b.outstanding(),
            AnyShared::Breaker8192(b) => b.outstanding(),
            AnyShared::Breaker65536(b) => b.outstanding(),
            AnyShared::Keyed4(b) => b.outstanding(),
            AnyShared::Keyed16(b) => b.outstanding(),
            AnyShared::Keyed64(b) => b.outstanding(),
            AnyShared::Keyed256(b) => b.outstanding(),
            AnyShared::Bulkhead(b) => b.outstanding(),
            AnyShared::Limiter(b) => b.outstanding(),
            AnyShared::Admission(b) => b.outstanding(),
            _ => 0,
        };
        let info = guards_region_guard_info {
            kind: g.guard.kind() as u32,
            reserved: 0,
            capacity: g.guard.capacity(),
            permits_held: held,
        };
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(info) };
        Ok(())
    })
}

/// Ask the guard for a permit at `now_ns` (`key`: the key of a keyed breaker set
/// (`guards_key_of`), the priority 0..=7 of a limiter or admission (0 most important), 0
/// for a circuit breaker or a bulkhead). The other kinds hand out no permits:
/// `INVALID_ARGUMENT`.
/// `GUARDS_RESULT_OK` with a permit in `*out`, recorded in the region with this process as
/// its owner (report it once with `guards_region_report`; a breaker probe has `is_probe`
/// set and must use `probe_timeout_ns`); or the guard's refusal
/// (`BREAKER_OPEN`, `BREAKER_HALF_OPEN_FULL`, `BULKHEAD_FULL`, `LIMITER_*`, `ADMISSION_*`;
/// `guards_last_rejection`
/// says more), or `PERMIT_SLOTS_EXHAUSTED` when the region's permit table is full. A guard
/// found full first gets the permits of dead processes back (at most once per
/// `reclaim_interval_ns`) and is asked again.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_try_acquire(
    g: *const guards_region_guard,
    key: u64,
    now_ns: u64,
    out: *mut guards_permit,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { hot_ref(g) }) else {
            return fail_arg(g.is_null(), "guard");
        };
        if !hot_out_ok(out) {
            return fail_arg(out.is_null(), "out");
        }
        // SAFETY: in every arm, `out` is non-NULL, aligned and valid for writes (checked
        // above; the caller's contract).
        unsafe {
            match &h.guard {
                AnyShared::Breaker128(x) => acquire_no_key(x, key, now_ns, out),
                AnyShared::Breaker1024(x) => acquire_no_key(x, key, now_ns, out),
                AnyShared::Breaker8192(x) => acquire_no_key(x, key, now_ns, out),
                AnyShared::Breaker65536(x) => acquire_no_key(x, key, now_ns, out),
                AnyShared::Bulkhead(x) => acquire_no_key(x, key, now_ns, out),
                AnyShared::Keyed4(x) => acquire_hot(x, key, now_ns, out),
                AnyShared::Keyed16(x) => acquire_hot(x, key, now_ns, out),
                AnyShared::Keyed64(x) => acquire_hot(x, key, now_ns, out),
                AnyShared::Keyed256(x) => acquire_hot(x, key, now_ns, out),
                AnyShared::Limiter(x) => match hot_priority(u32::try_from(key).unwrap_or(u32::MAX))
                {
                    Ok(p) => acquire_hot(x, p, now_ns, out),
                    Err(code) => code,
                },
                AnyShared::Admission(x) => {
                    match hot_priority(u32::try_from(key).unwrap_or(u32::MAX)) {
                        Ok(p) => acquire_hot(x, p, now_ns, out),
                        Err(code) => code,
                    }
                }
                _ => fail_with(no_permits()),
            }
        }
    })
}

/// Report how the call of `permit` ended (`outcome`: a `guards_outcome`) at `now_ns`,
/// once: the call contract (docs/outcomes.md) decides what it does to the guard. Again, to
/// another guard, or after the permit was reclaimed: refused (`PERMIT_ALREADY_REPORTED`,
/// `PERMIT_WRONG_GUARD`, `PERMIT_UNKNOWN`), nothing counted; an invalid `outcome`
/// (`INVALID_ENUM`) leaves the permit held.
///
/// # Safety
/// `g` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_region_report(
    g: *const guards_region_guard,
    permit: guards_permit,
    outcome: u32,
    now_ns: u64,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { hot_ref(g) }) else {
            return fail_arg(g.is_null(), "guard");
        };
        let outcome = match hot_outcome(outcome) {
            Ok(o) => o,
            Err(code) => return code,
        };
        let t = permit.token();
        match &h.guard {
            AnyShared::Breaker128(x) => report_hot(x, t, outcome, now_ns),
            AnyShared::Breaker1024(x) => report_hot(x, t, outcome, now_ns),
            AnyShared::Breaker8192(x) => report_hot(x, t, outcome, now_ns),
            AnyShared::Breaker65536(x) => report_hot(x, t, outcome, now_ns),
            AnyShared::Keyed4(x) => report_hot(x, t, outcome, now_ns),
            AnyShared::Keyed16(x) => report_hot(x, t, outcome, now_ns),
            AnyShared::Keyed64(x) => report_hot(x, t, outcome, now_ns),
            AnyShared::Keyed256(x) => report_hot(x, t, outcome, now_ns),
            AnyShared::Bulkhead(x) => report_hot(x, t, outcome, now_ns),
            AnyShared::Limiter(x) => report_hot(x, t, outcome, now_ns),
            AnyShared::Admission(x) => report_hot(x, t, outcome, now_ns),
            _ => fail_with(no_permits()),
        }
    })
}

fn breaker_state(s: BreakerState) -> guards_breaker_state {
    match s {
        BreakerState::Closed => guards_breaker_state::Closed,
        BreakerState::Open => guards_breaker_state::Open,
        BreakerState::HalfOpen => guards_breaker_state::HalfOpen,
    }
}

macro_rules! any_breaker {
    ($g:expr, $b:ident => $body:expr) => {
        match $g {
            AnyShared::Breaker128($b) => Ok($body),
            AnyShared::Breaker1024($b) => Ok($body),
            AnyShared::Breaker8192($b) => Ok($body),
            AnyShared::Breaker65536($b) => Ok($body),
            _ => Err(Failure::argument(
                GuardsResult::InvalidArgument,
                "guard",
                "a circuit breaker",
            )),
        }
    };
}

/// A shared breaker's state at `now_ns` into `*out`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_circuit_breaker_state(
    g: *const guards_region_guard,
    now_ns: u64,
    out: *mut guards_breaker_state,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let s = any_breaker!(&g.guard, b => breaker_state(b.state(Nanos(now_ns))))?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(s) };
        Ok(())
    })
}

/// A shared breaker's counters (all processes together) into `*out`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_circuit_breaker_get_stats(
    g: *const guards_region_guard,
    out: *mut guards_circuit_breaker_stats,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let s = any_breaker!(&g.guard, b => b.stats())?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(s.into()) };
        Ok(())
    })
}

/// A shared bulkhead's counters (all processes together) into `*out`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_bulkhead_get_stats(
    g: *const guards_region_guard,
    out: *mut guards_bulkhead_stats,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let s = match &g.guard {
            AnyShared::Bulkhead(b) => b.stats(),
            _ => {
                return Err(Failure::argument(
                    GuardsResult::InvalidArgument,
                    "guard",
                    "a bulkhead",
                ))
            }
        };
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(s.into()) };
        Ok(())
    })
}

// ---- Guards in caller memory: `_size`, `_align`, `_init_in`, `_attach` per kind.

/// The breaker capacity `config` asks for, and the core config.
fn breaker_of(c: &guards_circuit_breaker_config) -> Result<(CircuitBreakerConfig, u64), Failure> {
    let (config, capacity) = c.to_core()?;
    config.validate()?;
    Ok((config, breaker_capacity(&config, capacity)?))
}

macro_rules! by_breaker_capacity {
    ($cap:expr, $K:ident => $body:expr) => {
        match $cap {
            128 => {
                type $K = CircuitBreaker<128>;
                $body
            }
            1024 => {
                type $K = CircuitBreaker<1024>;
                $body
            }
            8192 => {
                type $K = CircuitBreaker<8192>;
                $body
            }
            _ => {
                type $K = CircuitBreaker<65536>;
                $body
            }
        }
    };
}

/// The bytes a circuit breaker of `config` needs in caller memory (`config->capacity`
/// decides its type, as for `guards_circuit_breaker_new`), into `*out`.
///
/// # Safety
/// `config` must be NULL or a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_size(
    config: *const guards_circuit_breaker_config,
    out: *mut usize,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let (_, cap) = breaker_of(unsafe { arg(config, "config") }?)?;
        let out = Out::new(out, "out")?;
        let n = by_breaker_capacity!(cap, K => place::size_of::<K>());
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(n) };
        Ok(())
    })
}

/// The alignment caller memory for a circuit breaker needs (128 bytes on x86_64).
#[no_mangle]
pub extern "C" fn guards_circuit_breaker_align() -> usize {
    place::align_of::<CircuitBreaker<128>>()
}

/// Build a circuit breaker from `config` in the `len` bytes at `mem` (aligned to
/// `guards_circuit_breaker_align()`, at least `guards_circuit_breaker_size(config)`
/// bytes), e.g. an anonymous `MAP_SHARED` mapping made before `fork`. Then every process
/// that maps the memory gets a handle with `guards_circuit_breaker_attach`. Build it once,
/// before any process attaches. Such a guard has no reclaim: a process killed while
/// holding a permit leaks it (use a region when that matters).
///
/// # Safety
/// `mem` must be valid for `len` bytes and used by nothing else during the call; `config`
/// NULL or a valid config.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const guards_circuit_breaker_config,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let (config, cap) = breaker_of(unsafe { arg(config, "config") }?)?;
        // SAFETY: the caller's contract.
        by_breaker_capacity!(cap, K => unsafe { init_in::<K>(mem, len, config) })
    })
}

/// A handle on the circuit breaker that `guards_circuit_breaker_init_in` built at `mem`
/// (in this process or another). Errors: `GUARD_NOT_FOUND` (nothing built there),
/// `GUARD_MISMATCH` (another kind, or another build of guards). Free the handle with
/// `guards_region_guard_free`; the memory must outlive it.
///
/// # Safety
/// `mem` must be valid for `len` bytes for as long as the handle lives; `out` NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_circuit_breaker_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    boundary(|| {
        let out = Out::new(out, "out")?;
        // SAFETY: the caller's contract.
        let g = unsafe { attach(mem, len, GuardKind::CircuitBreaker) }?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(Box::into_raw(g)) };
        Ok(())
    })
}

/// The bytes a bulkhead needs in caller memory, into `*out` (`config` is checked; the size
/// does not depend on it).
///
/// # Safety
/// `config` must be NULL or a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_size(
    config: *const guards_bulkhead_config,
    out: *mut usize,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let config = bulkhead_config(unsafe { arg(config, "config") }?);
        config.validate()?;
        let out = Out::new(out, "out")?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(place::size_of::<Bulkhead>()) };
        Ok(())
    })
}

/// The alignment caller memory for a bulkhead needs (128 bytes on x86_64).
#[no_mangle]
pub extern "C" fn guards_bulkhead_align() -> usize {
    place::align_of::<Bulkhead>()
}

/// Build a bulkhead from `config` in the `len` bytes at `mem`; as
/// `guards_circuit_breaker_init_in`.
///
/// # Safety
/// As `guards_circuit_breaker_init_in`.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const guards_bulkhead_config,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let config = bulkhead_config(unsafe { arg(config, "config") }?);
        // SAFETY: the caller's contract.
        unsafe { init_in::<Bulkhead>(mem, len, config) }
    })
}

/// A handle on the bulkhead that `guards_bulkhead_init_in` built at `mem`; as
/// `guards_circuit_breaker_attach`.
///
/// # Safety
/// As `guards_circuit_breaker_attach`.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    boundary(|| {
        let out = Out::new(out, "out")?;
        // SAFETY: the caller's contract.
        let g = unsafe { attach(mem, len, GuardKind::Bulkhead) }?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(Box::into_raw(g)) };
        Ok(())
    })
}

// ---- Every other kind: `guards_region_<guard>` and `guards_<guard>_size` / `_align` /
// `_init_in` / `_attach`, each a call of one generic function below.

/// The generic `guards_region_<guard>`: the guard named `name` in `r`, created from the
/// C config (converted and checked by `conv`) if there is none.
///
/// # Safety
/// As `guards_region_circuit_breaker`.
unsafe fn region_guard<C, K: SharedGuard>(
    r: *const guards_region,
    name: *const c_char,
    config: *const C,
    out: *mut *mut guards_region_guard,
    conv: impl FnOnce(&C) -> Result<K::Config, Failure>,
    wrap: fn(Shared<K>) -> AnyShared,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { arg(r, "region") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        // SAFETY: the caller's contract.
        let config = conv(unsafe { arg(config, "config") }?)?;
        let out = Out::new(out, "out")?;
        let g = get_or_create::<K>(&r.region, name, config, wrap)?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(Box::into_raw(g)) };
        Ok(())
    })
}

/// The generic `_size`: check the C config, write `size_of::<K>()` (as placed).
///
/// # Safety
/// `config` NULL or valid; `out` NULL or valid for writes.
unsafe fn size_for<C, K: SharedGuard>(
    config: *const C,
    out: *mut usize,
    conv: impl FnOnce(&C) -> Result<K::Config, Failure>,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let config = conv(unsafe { arg(config, "config") }?)?;
        K::check(&config)?;
        let out = Out::new(out, "out")?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(place::size_of::<K>()) };
        Ok(())
    })
}

/// The generic `_init_in` from a C config.
///
/// # Safety
/// As `guards_circuit_breaker_init_in`.
unsafe fn init_in_for<C, K: SharedGuard>(
    mem: *mut c_void,
    len: usize,
    config: *const C,
    conv: impl FnOnce(&C) -> Result<K::Config, Failure>,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let config = conv(unsafe { arg(config, "config") }?)?;
        // SAFETY: the caller's contract.
        unsafe { init_in::<K>(mem, len, config) }
    })
}

/// The generic `_attach` for `kind`.
///
/// # Safety
/// As `guards_circuit_breaker_attach`.
unsafe fn attach_for(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut guards_region_guard,
    kind: GuardKind,
) -> GuardsResult {
    boundary(|| {
        let out = Out::new(out, "out")?;
        // SAFETY: the caller's contract.
        let g = unsafe { attach(mem, len, kind) }?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(Box::into_raw(g)) };
        Ok(())
    })
}

/// A keyed set's core config and slots, checked as `guards_keyed_breakers_new` checks them
/// (every key's breaker has 128 cells).
fn keyed_of(c: &guards_keyed_breakers_config) -> Result<(CircuitBreakerConfig, u64), Failure> {
    let (config, capacity) = c.breaker.to_core()?;
    if capacity > 128 {
        return Err(Failure::from(ConfigError::new(
            "breaker.capacity",
            ConfigErrorKind::OutOfRange,
            "0 or at most 128 cells (every breaker of a keyed set has 128)",
        )));
    }
    let slots = match c.slots {
        0 => {
            return Err(Failure::from(ConfigError::new(
                "slots",
                ConfigErrorKind::Zero,
                "1..=256 keys",
            )))
        }
        1..=4 => 4,
        5..=16 => 16,
        17..=64 => 64,
        65..=256 => 256,
        _ => {
            return Err(Failure::from(ConfigError::new(
                "slots",
                ConfigErrorKind::OutOfRange,
                "1..=256 keys",
            )))
        }
    };
    Ok((config, slots))
}

macro_rules! by_keyed_slots {
    ($slots:expr, $K:ident => $body:expr) => {
        match $slots {
            4 => {
                type $K = KeyedBreakers<4, 128>;
                $body
            }
            16 => {
                type $K = KeyedBreakers<16, 128>;
                $body
            }
            64 => {
                type $K = KeyedBreakers<64, 128>;
                $body
            }
            _ => {
                type $K = KeyedBreakers<256, 128>;
                $body
            }
        }
    };
}

/// The keyed breaker set named `name`, created from `config` if the region has none
/// (`config->slots` rounded up to 4, 16, 64 or 256 decides its type, as for
/// `guards_keyed_breakers_new`). Acquire with the key as `key`. Errors as
/// `guards_region_circuit_breaker`.
///
/// # Safety
/// As `guards_region_circuit_breaker`.
#[no_mangle]
pub unsafe extern "C" fn guards_region_keyed_breakers(
    r: *const guards_region,
    name: *const c_char,
    config: *const guards_keyed_breakers_config,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { arg(r, "region") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        // SAFETY: the caller's contract.
        let (config, slots) = keyed_of(unsafe { arg(config, "config") }?)?;
        let out = Out::new(out, "out")?;
        let g =
            guards_region_guard::boxed(AnyShared::keyed_breakers(&r.region, name, config, slots)?);
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(Box::into_raw(g)) };
        Ok(())
    })
}

/// The retry budget named `name` (any mode), created from `config` if the region has none:
/// one budget for every process. Use it with `guards_region_retry_budget_deposit` /
/// `_withdraw` / `_report`. Errors as `guards_region_circuit_breaker`, and
/// `INVALID_ENUM` (mode).
///
/// # Safety
/// As `guards_region_circuit_breaker`.
#[no_mangle]
pub unsafe extern "C" fn guards_region_retry_budget(
    r: *const guards_region,
    name: *const c_char,
    config: *const guards_retry_budget_config,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        region_guard::<_, RetryBudget>(
            r,
            name,
            config,
            out,
            |c| c.to_core(),
            AnyShared::RetryBudget,
        )
    }
}

/// The concurrency limiter named `name`, created from `config` if the region has none: its
/// limit counts the calls of every process. Acquire with the priority (0..=7) as `key`.
/// Errors as `guards_region_circuit_breaker`.
///
/// # Safety
/// As `guards_region_circuit_breaker`.
#[no_mangle]
pub unsafe extern "C" fn guards_region_limiter(
    r: *const guards_region,
    name: *const c_char,
    config: *const guards_limiter_config,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { region_guard::<_, Limiter>(r, name, config, out, |c| c.to_core(), AnyShared::Limiter) }
}

/// The admission door named `name`, created from `config` if the region has none. Acquire
/// with the priority (0..=7) as `key`. Errors as `guards_region_circuit_breaker`.
///
/// # Safety
/// As `guards_region_circuit_breaker`.
#[no_mangle]
pub unsafe extern "C" fn guards_region_admission(
    r: *const guards_region,
    name: *const c_char,
    config: *const guards_admission_config,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        region_guard::<_, Admission>(r, name, config, out, |c| c.to_core(), AnyShared::Admission)
    }
}

/// The adaptive throttle named `name`, created from `config` if the region has none. Use
/// it with `guards_region_adaptive_throttle_try_acquire` / `_report`. Errors as
/// `guards_region_circuit_breaker`.
///
/// # Safety
/// As `guards_region_circuit_breaker`.
#[no_mangle]
pub unsafe extern "C" fn guards_region_adaptive_throttle(
    r: *const guards_region,
    name: *const c_char,
    config: *const guards_adaptive_throttle_config,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        region_guard::<_, AdaptiveThrottle>(
            r,
            name,
            config,
            out,
            |c| Ok(c.to_core()),
            AnyShared::AdaptiveThrottle,
        )
    }
}

/// The latency tracker named `name`, created from `config` if the region has none. Use it
/// with `guards_region_latency_tracker_record` / `_quantile`. Errors as
/// `guards_region_circuit_breaker`.
///
/// # Safety
/// As `guards_region_circuit_breaker`.
#[no_mangle]
pub unsafe extern "C" fn guards_region_latency_tracker(
    r: *const guards_region,
    name: *const c_char,
    config: *const guards_latency_tracker_config,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        region_guard::<_, LatencyTracker>(
            r,
            name,
            config,
            out,
            |c| Ok(c.to_core()),
            AnyShared::LatencyTracker,
        )
    }
}

/// The hedging policy named `name`, created from `config` if the region has none. Use it
/// with `guards_region_hedging_record_latency` / `_hedge_delay`. Errors as
/// `guards_region_circuit_breaker`.
///
/// # Safety
/// As `guards_region_circuit_breaker`.
#[no_mangle]
pub unsafe extern "C" fn guards_region_hedging(
    r: *const guards_region,
    name: *const c_char,
    config: *const guards_hedging_config,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        region_guard::<_, Hedging>(
            r,
            name,
            config,
            out,
            |c| Ok(c.to_core()),
            AnyShared::Hedging,
        )
    }
}

/// The brownout policy of one operation named `name`, created from `config` if the region
/// has none (one named guard per operation). Use it with `guards_region_brownout_on_refusal`
/// / `_report` / `_on_full`. Errors as `guards_region_circuit_breaker`.
///
/// # Safety
/// As `guards_region_circuit_breaker`.
#[no_mangle]
pub unsafe extern "C" fn guards_region_brownout(
    r: *const guards_region,
    name: *const c_char,
    config: *const guards_brownout_config,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        region_guard::<_, Brownout>(r, name, config, out, |c| c.to_core(), AnyShared::Brownout)
    }
}

// ---- Kind-specific verbs of region (or placed) guards.

/// A shared keyed set: the state of the breaker of `key` at `now_ns` into `*out`;
/// `NOT_FOUND` when the key was never inserted.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_keyed_breakers_state(
    g: *const guards_region_guard,
    key: u64,
    now_ns: u64,
    out: *mut guards_breaker_state,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let state = match &g.guard {
            AnyShared::Keyed4(k) => k.get(key).map(|b| b.state(Nanos(now_ns))),
            AnyShared::Keyed16(k) => k.get(key).map(|b| b.state(Nanos(now_ns))),
            AnyShared::Keyed64(k) => k.get(key).map(|b| b.state(Nanos(now_ns))),
            AnyShared::Keyed256(k) => k.get(key).map(|b| b.state(Nanos(now_ns))),
            _ => {
                return Err(Failure::argument(
                    GuardsResult::InvalidArgument,
                    "guard",
                    "a keyed breaker set",
                ))
            }
        };
        let state = state.ok_or_else(|| {
            Failure::argument(
                GuardsResult::NotFound,
                "key",
                "a key inserted by try_acquire",
            )
        })?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(breaker_state(state)) };
        Ok(())
    })
}

/// A shared keyed set: the counters of the breaker of `key` (all processes together) into
/// `*out`; `NOT_FOUND` when the key was never inserted.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_keyed_breakers_get_stats(
    g: *const guards_region_guard,
    key: u64,
    out: *mut guards_circuit_breaker_stats,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let stats = match &g.guard {
            AnyShared::Keyed4(k) => k.get(key).map(|b| b.stats()),
            AnyShared::Keyed16(k) => k.get(key).map(|b| b.stats()),
            AnyShared::Keyed64(k) => k.get(key).map(|b| b.stats()),
            AnyShared::Keyed256(k) => k.get(key).map(|b| b.stats()),
            _ => return Err(wrong_kind("a keyed breaker set")),
        };
        let stats = stats.ok_or_else(|| {
            Failure::argument(
                GuardsResult::NotFound,
                "key",
                "a key inserted by try_acquire",
            )
        })?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(stats.into()) };
        Ok(())
    })
}

/// A shared limiter's counters (all processes together) into `*out`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_limiter_get_stats(
    g: *const guards_region_guard,
    out: *mut guards_limiter_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe { read_into(g, out, |a| Ok(only!(a, Limiter, "a limiter")?.stats())) }
}

/// A shared admission door's counters (all processes together) into `*out`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_admission_get_stats(
    g: *const guards_region_guard,
    out: *mut guards_admission_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe {
        read_into(g, out, |a| {
            Ok(only!(a, Admission, "an admission door")?.stats())
        })
    }
}

/// A first attempt goes out at `now_ns` (a shared retry budget; as
/// `guards_retry_budget_deposit`).
///
/// # Safety
/// `g` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_region_retry_budget_deposit(
    g: *const guards_region_guard,
    now_ns: u64,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        match unsafe { hot_ref(g) }.map(|h| &h.guard) {
            Some(AnyShared::RetryBudget(b)) => {
                b.deposit(Nanos(now_ns));
                GuardsResult::Ok
            }
            Some(_) => fail_with(wrong_kind("a retry budget")),
            None => fail_arg(g.is_null(), "guard"),
        }
    })
}

/// May a retry caused by `cause` (a `guards_retry_cause`) go at `now_ns`, on the budget of
/// every process? As `guards_retry_budget_withdraw`: `OK` with the receipt in `*out`, or
/// `RETRY_BUDGET_EXHAUSTED`. Report the receipt through this same handle (receipts hold
/// nothing in the budget: they are kept per handle, and one outstanding when its process
/// dies is simply gone).
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_retry_budget_withdraw(
    g: *const guards_region_guard,
    now_ns: u64,
    cause: u32,
    out: *mut guards_retry_receipt,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let budget = only!(&g.guard, RetryBudget, "a retry budget")?;
        let cause = super::retry_cause(cause)?;
        let slots = g.receipts.as_deref().ok_or_else(|| {
            Failure::argument(GuardsResult::InvalidArgument, "guard", "a retry budget")
        })?;
        let Some(r) = budget.withdraw(Nanos(now_ns), cause) else {
            return Err(Failure {
                code: GuardsResult::RetryBudgetExhausted,
                detail: Detail::BudgetExhausted {
                    mode: budget.mode(),
                    cause,
                },
            });
        };
        let cost_micros = r.cost_micros();
        let t = slots.insert(r).map_err(|(_, code)| Failure::code(code))?;
        // SAFETY: valid for writes (caller's contract).
        unsafe {
            out.set(guards_retry_receipt {
                guard: t.guard,
                slot: t.slot,
                generation: t.generation,
                cost_micros,
            })
        };
        Ok(())
    })
}

/// How an attempt ended at `now_ns` (`outcome`: a `guards_outcome`), on a shared retry
/// budget; `receipt` is the receipt of the retry it was (from this handle), or NULL for a
/// first attempt. As `guards_retry_budget_report`.
///
/// # Safety
/// `g` must be NULL or a live handle; `receipt` NULL or valid for reads.
#[no_mangle]
pub unsafe extern "C" fn guards_region_retry_budget_report(
    g: *const guards_region_guard,
    now_ns: u64,
    outcome: u32,
    receipt: *const guards_retry_receipt,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let budget = only!(&g.guard, RetryBudget, "a retry budget")?;
        let outcome = super::outcome(outcome)?;
        let r = if receipt.is_null() {
            None
        } else {
            // SAFETY: non-NULL, valid for reads (caller's contract).
            let c = unsafe { arg(receipt, "receipt") }?;
            let slots = g.receipts.as_deref().ok_or_else(|| {
                Failure::argument(GuardsResult::InvalidArgument, "guard", "a retry budget")
            })?;
            Some(
                slots
                    .take(PermitToken {
                        guard: c.guard,
                        slot: c.slot,
                        generation: c.generation,
                    })
                    .map_err(Failure::code)?,
            )
        };
        budget.report(Nanos(now_ns), outcome, r);
        Ok(())
    })
}

/// A shared retry budget's balance at `now_ns`, in micro-tokens, into `*out`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_retry_budget_tokens_micros(
    g: *const guards_region_guard,
    now_ns: u64,
    out: *mut i64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let t = only!(&g.guard, RetryBudget, "a retry budget")?.tokens_micros(Nanos(now_ns));
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(t) };
        Ok(())
    })
}

/// A shared retry budget's counters (all processes together) into `*out`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_retry_budget_get_stats(
    g: *const guards_region_guard,
    out: *mut guards_retry_budget_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe {
        read_into(g, out, |a| {
            Ok(only!(a, RetryBudget, "a retry budget")?.stats())
        })
    }
}

/// Decide a request at `now_ns` on a shared adaptive throttle: `OK` (send it, then report)
/// or `THROTTLED`. As `guards_adaptive_throttle_try_acquire`.
///
/// # Safety
/// `g` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_region_adaptive_throttle_try_acquire(
    g: *const guards_region_guard,
    now_ns: u64,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        match unsafe { hot_ref(g) }.map(|h| &h.guard) {
            Some(AnyShared::AdaptiveThrottle(t)) => {
                if t.should_reject(Nanos(now_ns)) {
                    return fail_with(Failure {
                        code: GuardsResult::Throttled,
                        detail: Detail::Throttled {
                            probability: t.reject_probability(Nanos(now_ns)),
                        },
                    });
                }
                GuardsResult::Ok
            }
            Some(_) => fail_with(wrong_kind("an adaptive throttle")),
            None => fail_arg(g.is_null(), "guard"),
        }
    })
}

/// How a request the shared throttle let through ended (`outcome`: a `guards_outcome`).
///
/// # Safety
/// `g` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_region_adaptive_throttle_report(
    g: *const guards_region_guard,
    now_ns: u64,
    outcome: u32,
) -> GuardsResult {
    hot(|| {
        let outcome = match hot_outcome(outcome) {
            Ok(o) => o,
            Err(code) => return code,
        };
        // SAFETY: the caller's contract.
        match unsafe { hot_ref(g) }.map(|h| &h.guard) {
            Some(AnyShared::AdaptiveThrottle(t)) => {
                t.report(Nanos(now_ns), outcome);
                GuardsResult::Ok
            }
            Some(_) => fail_with(wrong_kind("an adaptive throttle")),
            None => fail_arg(g.is_null(), "guard"),
        }
    })
}

/// A shared adaptive throttle's counters into `*out`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_adaptive_throttle_get_stats(
    g: *const guards_region_guard,
    out: *mut guards_adaptive_throttle_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe {
        read_into(g, out, |a| {
            Ok(only!(a, AdaptiveThrottle, "an adaptive throttle")?.stats())
        })
    }
}

/// Record one latency at `now_ns` in a shared latency tracker.
///
/// # Safety
/// `g` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_region_latency_tracker_record(
    g: *const guards_region_guard,
    now_ns: u64,
    latency_ns: u64,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        match unsafe { hot_ref(g) }.map(|h| &h.guard) {
            Some(AnyShared::LatencyTracker(t)) => {
                t.record(Nanos(now_ns), Nanos(latency_ns));
                GuardsResult::Ok
            }
            Some(_) => fail_with(wrong_kind("a latency tracker")),
            None => fail_arg(g.is_null(), "guard"),
        }
    })
}

/// The `q` quantile (0..=1) of a shared latency tracker at `now_ns` into `*out`;
/// `NO_DATA` when it has no samples.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_latency_tracker_quantile(
    g: *const guards_region_guard,
    now_ns: u64,
    q: f64,
    out: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let t = only!(&g.guard, LatencyTracker, "a latency tracker")?;
        let q = super::latency_tracker::check_quantile(q)?;
        let v = t
            .quantile(Nanos(now_ns), q)
            .ok_or_else(super::latency_tracker::no_data)?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(v.0) };
        Ok(())
    })
}

/// A shared latency tracker's counters into `*out`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_latency_tracker_get_stats(
    g: *const guards_region_guard,
    out: *mut guards_latency_tracker_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe {
        read_into(g, out, |a| {
            Ok(only!(a, LatencyTracker, "a latency tracker")?.stats())
        })
    }
}

/// Record one latency at `now_ns` in a shared hedging policy.
///
/// # Safety
/// `g` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_region_hedging_record_latency(
    g: *const guards_region_guard,
    now_ns: u64,
    latency_ns: u64,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        match unsafe { hot_ref(g) }.map(|h| &h.guard) {
            Some(AnyShared::Hedging(t)) => {
                t.record_latency(Nanos(now_ns), Nanos(latency_ns));
                GuardsResult::Ok
            }
            Some(_) => fail_with(wrong_kind("a hedging policy")),
            None => fail_arg(g.is_null(), "guard"),
        }
    })
}

/// A shared hedging policy's hedge delay at `now_ns` into `*out`; `NO_DATA` below
/// `min_samples`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_hedging_hedge_delay(
    g: *const guards_region_guard,
    now_ns: u64,
    out: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let d = only!(&g.guard, Hedging, "a hedging policy")?
            .hedge_delay(Nanos(now_ns))
            .ok_or_else(super::latency_tracker::no_data)?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(d.0) };
        Ok(())
    })
}

/// A shared hedging policy's counters into `*out`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_hedging_get_stats(
    g: *const guards_region_guard,
    out: *mut guards_hedging_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe {
        read_into(g, out, |a| {
            Ok(only!(a, Hedging, "a hedging policy")?.stats())
        })
    }
}

fn brownout_decision(d: Option<BrownoutDecision>) -> u32 {
    match d {
        Some(BrownoutDecision::ServeFallback) => guards_brownout_decision::ServeFallback as u32,
        Some(BrownoutDecision::FailFast) => guards_brownout_decision::FailFast as u32,
        Some(BrownoutDecision::Proceed) => guards_brownout_decision::Proceed as u32,
        None => guards_brownout_decision::None as u32,
    }
}

/// A guard refused the call with `kind` (a `guards_refusal_kind`): the shared brownout's
/// decision (a `guards_brownout_decision`) into `*out`, counted. As
/// `guards_brownout_on_refusal`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_brownout_on_refusal(
    g: *const guards_region_guard,
    kind: u32,
    out: *mut u32,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let b = only!(&g.guard, Brownout, "a brownout policy")?;
        let d = b.on_refusal(super::refusal_kind(kind)?);
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(brownout_decision(Some(d))) };
        Ok(())
    })
}

/// How the call ended (`outcome`: a `guards_outcome`): the shared brownout's decision
/// into `*out`. As `guards_brownout_report`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_brownout_report(
    g: *const guards_region_guard,
    outcome: u32,
    out: *mut u32,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        let b = only!(&g.guard, Brownout, "a brownout policy")?;
        let d = b.report(super::outcome(outcome)?);
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(brownout_decision(d)) };
        Ok(())
    })
}

/// A full answer was served (a shared brownout).
///
/// # Safety
/// `g` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_region_brownout_on_full(
    g: *const guards_region_guard,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        only!(&g.guard, Brownout, "a brownout policy")?.on_full();
        Ok(())
    })
}

/// A shared brownout's counters into `*out`.
///
/// # Safety
/// `g` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_region_brownout_get_stats(
    g: *const guards_region_guard,
    out: *mut guards_brownout_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe {
        read_into(g, out, |a| {
            Ok(only!(a, Brownout, "a brownout policy")?.stats())
        })
    }
}

// ---- Every other kind in caller memory (all plain atomics): as the breaker's.

/// The bytes a keyed breaker set of `config` needs in caller memory (`config->slots`
/// decides its type), into `*out`.
///
/// # Safety
/// `config` must be NULL or a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_size(
    config: *const guards_keyed_breakers_config,
    out: *mut usize,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let (config, slots) = keyed_of(unsafe { arg(config, "config") }?)?;
        let out = Out::new(out, "out")?;
        let n = by_keyed_slots!(slots, K => {
            K::check(&config)?;
            place::size_of::<K>()
        });
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(n) };
        Ok(())
    })
}

/// The alignment caller memory for a keyed breaker set needs.
#[no_mangle]
pub extern "C" fn guards_keyed_breakers_align() -> usize {
    place::align_of::<KeyedBreakers<4, 128>>()
}

/// Build a keyed breaker set from `config` in the `len` bytes at `mem`; as
/// `guards_circuit_breaker_init_in`.
///
/// # Safety
/// As `guards_circuit_breaker_init_in`.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const guards_keyed_breakers_config,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let (config, slots) = keyed_of(unsafe { arg(config, "config") }?)?;
        // SAFETY: the caller's contract.
        by_keyed_slots!(slots, K => unsafe { init_in::<K>(mem, len, config) })
    })
}

/// A handle on the keyed breaker set that `guards_keyed_breakers_init_in` built at `mem`;
/// as `guards_circuit_breaker_attach`.
///
/// # Safety
/// As `guards_circuit_breaker_attach`.
#[no_mangle]
pub unsafe extern "C" fn guards_keyed_breakers_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { attach_for(mem, len, out, GuardKind::KeyedBreakers) }
}

/// The bytes a retry budget needs in caller memory, into `*out` (`config` is checked; the size
/// does not depend on it).
///
/// # Safety
/// `config` must be NULL or a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_size(
    config: *const guards_retry_budget_config,
    out: *mut usize,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { size_for::<_, RetryBudget>(config, out, |c| c.to_core()) }
}

/// The alignment caller memory for a retry budget needs.
#[no_mangle]
pub extern "C" fn guards_retry_budget_align() -> usize {
    place::align_of::<RetryBudget>()
}

/// Build a retry budget from `config` in the `len` bytes at `mem`; as
/// `guards_circuit_breaker_init_in`.
///
/// # Safety
/// As `guards_circuit_breaker_init_in`.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const guards_retry_budget_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { init_in_for::<_, RetryBudget>(mem, len, config, |c| c.to_core()) }
}

/// A handle on a retry budget that `guards_retry_budget_init_in` built at `mem`; as
/// `guards_circuit_breaker_attach`.
///
/// # Safety
/// As `guards_circuit_breaker_attach`.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { attach_for(mem, len, out, GuardKind::RetryBudget) }
}

/// The bytes a limiter needs in caller memory, into `*out` (`config` is checked; the size
/// does not depend on it).
///
/// # Safety
/// `config` must be NULL or a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_size(
    config: *const guards_limiter_config,
    out: *mut usize,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { size_for::<_, Limiter>(config, out, |c| c.to_core()) }
}

/// The alignment caller memory for a limiter needs.
#[no_mangle]
pub extern "C" fn guards_limiter_align() -> usize {
    place::align_of::<Limiter>()
}

/// Build a limiter from `config` in the `len` bytes at `mem`; as
/// `guards_circuit_breaker_init_in`.
///
/// # Safety
/// As `guards_circuit_breaker_init_in`.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const guards_limiter_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { init_in_for::<_, Limiter>(mem, len, config, |c| c.to_core()) }
}

/// A handle on a limiter that `guards_limiter_init_in` built at `mem`; as
/// `guards_circuit_breaker_attach`.
///
/// # Safety
/// As `guards_circuit_breaker_attach`.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { attach_for(mem, len, out, GuardKind::Limiter) }
}

/// The bytes an admission door needs in caller memory, into `*out` (`config` is checked; the size
/// does not depend on it).
///
/// # Safety
/// `config` must be NULL or a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_admission_size(
    config: *const guards_admission_config,
    out: *mut usize,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { size_for::<_, Admission>(config, out, |c| c.to_core()) }
}

/// The alignment caller memory for an admission door needs.
#[no_mangle]
pub extern "C" fn guards_admission_align() -> usize {
    place::align_of::<Admission>()
}

/// Build an admission door from `config` in the `len` bytes at `mem`; as
/// `guards_circuit_breaker_init_in`.
///
/// # Safety
/// As `guards_circuit_breaker_init_in`.
#[no_mangle]
pub unsafe extern "C" fn guards_admission_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const guards_admission_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { init_in_for::<_, Admission>(mem, len, config, |c| c.to_core()) }
}

/// A handle on an admission door that `guards_admission_init_in` built at `mem`; as
/// `guards_circuit_breaker_attach`.
///
/// # Safety
/// As `guards_circuit_breaker_attach`.
#[no_mangle]
pub unsafe extern "C" fn guards_admission_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { attach_for(mem, len, out, GuardKind::Admission) }
}

/// The bytes an adaptive throttle needs in caller memory, into `*out` (`config` is checked; the size
/// does not depend on it).
///
/// # Safety
/// `config` must be NULL or a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_adaptive_throttle_size(
    config: *const guards_adaptive_throttle_config,
    out: *mut usize,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { size_for::<_, AdaptiveThrottle>(config, out, |c| Ok(c.to_core())) }
}

/// The alignment caller memory for an adaptive throttle needs.
#[no_mangle]
pub extern "C" fn guards_adaptive_throttle_align() -> usize {
    place::align_of::<AdaptiveThrottle>()
}

/// Build an adaptive throttle from `config` in the `len` bytes at `mem`; as
/// `guards_circuit_breaker_init_in`.
///
/// # Safety
/// As `guards_circuit_breaker_init_in`.
#[no_mangle]
pub unsafe extern "C" fn guards_adaptive_throttle_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const guards_adaptive_throttle_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { init_in_for::<_, AdaptiveThrottle>(mem, len, config, |c| Ok(c.to_core())) }
}

/// A handle on an adaptive throttle that `guards_adaptive_throttle_init_in` built at `mem`; as
/// `guards_circuit_breaker_attach`.
///
/// # Safety
/// As `guards_circuit_breaker_attach`.
#[no_mangle]
pub unsafe extern "C" fn guards_adaptive_throttle_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { attach_for(mem, len, out, GuardKind::AdaptiveThrottle) }
}

/// The bytes a latency tracker needs in caller memory, into `*out` (`config` is checked; the size
/// does not depend on it).
///
/// # Safety
/// `config` must be NULL or a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_size(
    config: *const guards_latency_tracker_config,
    out: *mut usize,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { size_for::<_, LatencyTracker>(config, out, |c| Ok(c.to_core())) }
}

/// The alignment caller memory for a latency tracker needs.
#[no_mangle]
pub extern "C" fn guards_latency_tracker_align() -> usize {
    place::align_of::<LatencyTracker>()
}

/// Build a latency tracker from `config` in the `len` bytes at `mem`; as
/// `guards_circuit_breaker_init_in`.
///
/// # Safety
/// As `guards_circuit_breaker_init_in`.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const guards_latency_tracker_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { init_in_for::<_, LatencyTracker>(mem, len, config, |c| Ok(c.to_core())) }
}

/// A handle on a latency tracker that `guards_latency_tracker_init_in` built at `mem`; as
/// `guards_circuit_breaker_attach`.
///
/// # Safety
/// As `guards_circuit_breaker_attach`.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { attach_for(mem, len, out, GuardKind::LatencyTracker) }
}

/// The bytes a hedging policy needs in caller memory, into `*out` (`config` is checked; the size
/// does not depend on it).
///
/// # Safety
/// `config` must be NULL or a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_hedging_size(
    config: *const guards_hedging_config,
    out: *mut usize,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { size_for::<_, Hedging>(config, out, |c| Ok(c.to_core())) }
}

/// The alignment caller memory for a hedging policy needs.
#[no_mangle]
pub extern "C" fn guards_hedging_align() -> usize {
    place::align_of::<Hedging>()
}

/// Build a hedging policy from `config` in the `len` bytes at `mem`; as
/// `guards_circuit_breaker_init_in`.
///
/// # Safety
/// As `guards_circuit_breaker_init_in`.
#[no_mangle]
pub unsafe extern "C" fn guards_hedging_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const guards_hedging_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { init_in_for::<_, Hedging>(mem, len, config, |c| Ok(c.to_core())) }
}

/// A handle on a hedging policy that `guards_hedging_init_in` built at `mem`; as
/// `guards_circuit_breaker_attach`.
///
/// # Safety
/// As `guards_circuit_breaker_attach`.
#[no_mangle]
pub unsafe extern "C" fn guards_hedging_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { attach_for(mem, len, out, GuardKind::Hedging) }
}

/// The bytes a brownout policy needs in caller memory, into `*out` (`config` is checked; the size
/// does not depend on it).
///
/// # Safety
/// `config` must be NULL or a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_size(
    config: *const guards_brownout_config,
    out: *mut usize,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { size_for::<_, Brownout>(config, out, |c| c.to_core()) }
}

/// The alignment caller memory for a brownout policy needs.
#[no_mangle]
pub extern "C" fn guards_brownout_align() -> usize {
    place::align_of::<Brownout>()
}

/// Build a brownout policy from `config` in the `len` bytes at `mem`; as
/// `guards_circuit_breaker_init_in`.
///
/// # Safety
/// As `guards_circuit_breaker_init_in`.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const guards_brownout_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { init_in_for::<_, Brownout>(mem, len, config, |c| c.to_core()) }
}

/// A handle on a brownout policy that `guards_brownout_init_in` built at `mem`; as
/// `guards_circuit_breaker_attach`.
///
/// # Safety
/// As `guards_circuit_breaker_attach`.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut guards_region_guard,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { attach_for(mem, len, out, GuardKind::Brownout) }
}
