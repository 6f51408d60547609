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
//! Guards of every kind can live in a region (see `docs/shared.md`); from C, this version
//! creates and drives circuit breakers and bulkheads. The other kinds get their
//! `guards_region_<guard>` and `_init_in` functions with their C configs (each a call of
//! one generic function of this module: `get_or_create`, `init_in`, `attach`); until then
//! C refuses them with `GUARDS_RESULT_INVALID_ARGUMENT`. cbindgen does not expand macros,
//! so each exported function is written out, as a short call of the generic one.

use std::ffi::{c_char, c_void, CStr};

use super::bulkhead::{guards_bulkhead_config, guards_bulkhead_stats};
use super::circuit_breaker::{
    guards_breaker_state, guards_circuit_breaker_config, guards_circuit_breaker_stats,
};
use super::{arg, boundary, guards_permit, Out};
use crate::error::{Detail, Failure, GuardsResult};
use crate::permit::PermitToken;
use crate::shared::{
    breaker_capacity, place, AnyShared, GuardKind, Refusal, Region, RegionOptions, Shared,
    SharedGuard, SharedPermits,
};
use guards_core::circuit_breaker::{BreakerState, CircuitBreaker, CircuitBreakerConfig};
use guards_core::{Bulkhead, BulkheadConfig, Nanos, Outcome};

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
}

/// `name` as a guard name (UTF-8, 1..=64 bytes).
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string.
unsafe fn c_str<'a>(name: *const c_char, what: &'static str) -> Result<&'a str, Failure> {
    if name.is_null() {
        return Err(Failure::argument(
            GuardsResult::NullArgument,
            what,
            "a non-NULL string",
        ));
    }
    // SAFETY: non-NULL and NUL-terminated (the caller's contract).
    unsafe { CStr::from_ptr(name) }
        .to_str()
        .map_err(|_| Failure::argument(GuardsResult::InvalidArgument, what, "a UTF-8 string"))
}

fn unsupported() -> Failure {
    Failure::argument(
        GuardsResult::InvalidArgument,
        "guard",
        "a circuit breaker or a bulkhead (the other kinds come to C with their C configs)",
    )
}

/// The generic get-or-create: `K` from core config `config`, as a handle.
pub(crate) fn get_or_create<K: SharedGuard>(
    region: &Region,
    name: &str,
    config: K::Config,
    wrap: fn(Shared<K>) -> AnyShared,
) -> Result<Box<guards_region_guard>, Failure> {
    let g = region.get_or_create::<K>(name, config)?;
    Ok(Box::new(guards_region_guard { guard: wrap(g) }))
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
    Ok(Box::new(guards_region_guard { guard: g }))
}

fn acquire<K: SharedPermits>(g: &Shared<K>, arg: K::Arg, now: u64) -> Result<guards_permit, Failure>
where
    Failure: From<K::Rejected>,
{
    match g.try_acquire(arg, Nanos(now)) {
        Ok((t, v)) => Ok(guards_permit {
            guard: t.guard,
            slot: t.slot,
            generation: t.generation,
            acquired_at_ns: v.acquired_at.0,
            probe_timeout_ns: v.probe_timeout.map_or(0, |t| t.0),
            is_probe: u32::from(v.probe_timeout.is_some()),
            reserved: 0,
        }),
        Err(Refusal::Rejected(r)) => Err(Failure::from(r)),
        Err(Refusal::Failed(f)) => Err(f),
    }
}

fn report<K: SharedPermits>(
    g: &Shared<K>,
    p: &guards_permit,
    outcome: Outcome,
    now: u64,
) -> Result<(), Failure> {
    let token = PermitToken {
        guard: p.guard,
        slot: p.slot,
        generation: p.generation,
    };
    g.report(token, outcome, Nanos(now))
        .map(|_| ())
        .map_err(Failure::code)
}

fn no_arg(a: u64) -> Result<(), Failure> {
    if a == 0 {
        Ok(())
    } else {
        Err(Failure::argument(
            GuardsResult::InvalidArgument,
            "key",
            "0 for a circuit breaker or a bulkhead",
        ))
    }
}

macro_rules! breaker_or_bulkhead {
    ($g:expr, $b:ident => $breaker:expr, $h:ident => $bulkhead:expr) => {
        match $g {
            AnyShared::Breaker128($b) => $breaker,
            AnyShared::Breaker1024($b) => $breaker,
            AnyShared::Breaker8192($b) => $breaker,
            AnyShared::Breaker65536($b) => $breaker,
            AnyShared::Bulkhead($h) => $bulkhead,
            _ => Err(unsupported()),
        }
    };
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
        let g = Box::new(guards_region_guard {
            guard: AnyShared::breaker(&r.region, name, config, capacity)?,
        });
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

/// The existing guard named `name`, whatever its config (of any kind; from C, circuit
/// breakers and bulkheads can be driven). Errors: `GUARD_NOT_FOUND`.
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
        let g = Box::new(guards_region_guard {
            guard: AnyShared::attach(&r.region, name)?,
        });
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

/// Ask the guard for a permit at `now_ns` (`key`: the key of a keyed breaker set, or the
/// priority of a limiter or admission, when those kinds come to C; 0 for a circuit breaker
/// or a bulkhead).
/// `GUARDS_RESULT_OK` with a permit in `*out`, recorded in the region with this process as
/// its owner (report it once with `guards_region_report`; a breaker probe has `is_probe`
/// set and must use `probe_timeout_ns`); or the guard's refusal
/// (`BREAKER_OPEN`, `BREAKER_HALF_OPEN_FULL`, `BULKHEAD_FULL`; `guards_last_rejection`
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
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let out = Out::new(out, "out")?;
        no_arg(key)?;
        let p = breaker_or_bulkhead!(&g.guard,
            b => acquire(b, (), now_ns),
            h => acquire(h, (), now_ns))?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(p) };
        Ok(())
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
    boundary(|| {
        // SAFETY: the caller's contract.
        let g = unsafe { arg(g, "guard") }?;
        let outcome = super::outcome(outcome)?;
        breaker_or_bulkhead!(&g.guard,
            b => report(b, &permit, outcome, now_ns),
            h => report(h, &permit, outcome, now_ns))
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
