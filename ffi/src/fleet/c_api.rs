//! `guards_fleet_*`: the fleet agent behind an opaque handle (see `docs/fleet.md`).
//!
//! ```c
//! guards_fleet *f;
//! if (guards_fleet_join("redis://127.0.0.1:6379", "shop-api", "host-1", 0, &f) == GUARDS_RESULT_OK) {
//!     guards_fleet_attach_bulkhead(f, "stock", 48, stock);  /* stock: a guards_bulkhead */
//!     /* ... serve: guards_bulkhead_try_acquire(stock, ...) as before ... */
//!     guards_fleet_leave(f);  /* before guards_bulkhead_free(stock) */
//! }
//! ```

#![allow(non_camel_case_types)]

use std::ffi::{c_char, CStr};
use std::sync::Mutex;
use std::time::Duration;

use super::{Fleet, FleetConfig, FleetError, Resizable};
use crate::c::bulkhead::guards_bulkhead;
use crate::c::{arg, boundary, free_handle, Out};
use crate::error::{Failure, GuardsResult};

/// A fleet membership (opaque): the agent thread and the guards attached to it.
/// Thread-safe.
#[derive(Debug)]
pub struct guards_fleet {
    fleet: Mutex<Fleet>,
}

/// The agent's counters (`guards_fleet_get_stats`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_fleet_stats {
    /// Live members in the last view (0 before the first).
    pub members: u64,
    /// Successful syncs.
    pub syncs: u64,
    /// Failed syncs (Redis errors and timeouts).
    pub sync_errors: u64,
    /// 1 when the last sync succeeded.
    pub connected: u8,
    /// 1 when the shares are fallbacks (Redis unreachable for `stale_after`).
    pub fallen_back: u8,
}

fn failure(e: &FleetError) -> Failure {
    match e {
        FleetError::Config(field, expected) => {
            Failure::argument(GuardsResult::InvalidArgument, field, expected)
        }
        FleetError::BadUrl(_) => Failure::argument(
            GuardsResult::InvalidArgument,
            "url",
            "redis://[user:password@]host:port[/db]",
        ),
        FleetError::Auth(_) => Failure::code(GuardsResult::FleetAuth),
        FleetError::Unavailable(_) => Failure::code(GuardsResult::FleetUnavailable),
        FleetError::Duplicate(_) => Failure::argument(
            GuardsResult::InvalidArgument,
            "name",
            "an allowance name not attached yet",
        ),
    }
}

/// # Safety
/// A non-null `p` must point to a NUL-terminated string.
unsafe fn text<'a>(p: *const c_char, name: &'static str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::argument(
            GuardsResult::NullArgument,
            name,
            "a non-NULL string",
        ));
    }
    // SAFETY: non-null and NUL-terminated (caller's contract).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Failure::argument(GuardsResult::InvalidArgument, name, "UTF-8 text"))
}

/// A bulkhead handle the agent resizes (see the lifetime rule on
/// `guards_fleet_attach_bulkhead`).
struct BulkheadRef(*const guards_bulkhead);

// SAFETY: `guards_bulkhead` is thread-safe (atomics only); the caller keeps it alive
// until `guards_fleet_leave` has returned.
unsafe impl Send for BulkheadRef {}
// SAFETY: as above.
unsafe impl Sync for BulkheadRef {}

impl BulkheadRef {
    fn get(&self) -> &guards_bulkhead {
        // SAFETY: live until the fleet is left (the caller's contract).
        unsafe { &*self.0 }
    }
}

impl Resizable for BulkheadRef {
    fn in_flight(&self) -> u64 {
        self.get().bulkhead().in_flight()
    }
    fn cap(&self) -> u64 {
        self.get().bulkhead().max_concurrent()
    }
    fn set_cap(&self, cap: u64) {
        let _ = self.get().bulkhead().set_max_concurrent(cap);
    }
}

/// Join the fleet `service` at `url` as `member` (both 1..=128 bytes of `[A-Za-z0-9._-]`),
/// syncing every `sync_interval_ms` (0: the default, 250 ms; else 10..=60000), with the
/// other settings at their defaults (TTL 3 × the interval, stale after 2 ×, fallback the
/// allowance ÷ the last known members). Connects once: `FLEET_UNAVAILABLE` if Redis
/// cannot be reached, `FLEET_AUTH` if it refuses the credentials, `INVALID_ARGUMENT`
/// naming `url`, `service`, `member` or `sync_interval` for bad values, `NULL_ARGUMENT`.
/// Leave (and free) with `guards_fleet_leave`.
///
/// # Safety
/// `url`, `service`, `member` must be NULL or NUL-terminated strings; `out` NULL or valid
/// for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_fleet_join(
    url: *const c_char,
    service: *const c_char,
    member: *const c_char,
    sync_interval_ms: u64,
    out: *mut *mut guards_fleet,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let (url, service, member) = unsafe {
            (
                text(url, "url")?,
                text(service, "service")?,
                text(member, "member")?,
            )
        };
        let out = Out::new(out, "out")?;
        let mut config = FleetConfig::new(url, service, member);
        if sync_interval_ms != 0 {
            let i = Duration::from_millis(sync_interval_ms.min(3_600_000));
            config.sync_interval = i;
            config.ttl = i * 3;
            config.stale_after = i * 2;
            config.io_timeout = i;
        }
        let fleet = Fleet::join(config).map_err(|e| failure(&e))?;
        let h = Box::into_raw(Box::new(guards_fleet {
            fleet: Mutex::new(fleet),
        }));
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(h) };
        Ok(())
    })
}

/// Attach the bulkhead `bulkhead` to the fleet-wide allowance `name` of `allowance` slots
/// (1..=4294967295): its cap drops to 0 at once and follows this member's share from then
/// on (attach before serving). The bulkhead must stay alive until `guards_fleet_leave`
/// has returned. Errors: `INVALID_ARGUMENT` naming `name` (bad or already attached) or
/// `allowance`; `NULL_ARGUMENT`.
///
/// # Safety
/// `f` and `bulkhead` must be NULL or live handles; `name` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn guards_fleet_attach_bulkhead(
    f: *const guards_fleet,
    name: *const c_char,
    allowance: u64,
    bulkhead: *const guards_bulkhead,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let f = unsafe { arg(f, "fleet") }?;
        // SAFETY: the caller's contract.
        let _ = unsafe { arg(bulkhead, "bulkhead") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { text(name, "name") }?;
        let fleet = f.fleet.lock().unwrap_or_else(|p| p.into_inner());
        fleet
            .attach(name, allowance, Box::new(BulkheadRef(bulkhead)))
            .map_err(|e| failure(&e))
    })
}

/// The agent's counters into `*out`.
///
/// # Safety
/// `f` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_fleet_get_stats(
    f: *const guards_fleet,
    out: *mut guards_fleet_stats,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let f = unsafe { arg(f, "fleet") }?;
        let out = Out::new(out, "out")?;
        let s = f.fleet.lock().unwrap_or_else(|p| p.into_inner()).stats();
        // SAFETY: valid for writes (caller's contract).
        unsafe {
            out.set(guards_fleet_stats {
                members: s.members,
                syncs: s.syncs,
                sync_errors: s.sync_errors,
                connected: u8::from(s.connected),
                fallen_back: u8::from(s.fallen_back),
            })
        };
        Ok(())
    })
}

/// This member's share of the allowance `name` (the attached guard's cap) into `*share`,
/// and its fair share in the last view into `*fair` (either may be NULL). `NOT_FOUND` if
/// no allowance of that name is attached.
///
/// # Safety
/// `f` must be NULL or a live handle; `name` NULL or NUL-terminated; `share`, `fair` NULL
/// or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_fleet_get_share(
    f: *const guards_fleet,
    name: *const c_char,
    share: *mut u64,
    fair: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let f = unsafe { arg(f, "fleet") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { text(name, "name") }?;
        let s = f.fleet.lock().unwrap_or_else(|p| p.into_inner()).stats();
        let a = s
            .allowances
            .iter()
            .find(|a| a.name == name)
            .ok_or(Failure::code(GuardsResult::NotFound))?;
        if let Ok(o) = Out::new(share, "share") {
            // SAFETY: valid for writes (caller's contract).
            unsafe { o.set(a.share) };
        }
        if let Ok(o) = Out::new(fair, "fair") {
            // SAFETY: valid for writes (caller's contract).
            unsafe { o.set(a.fair) };
        }
        Ok(())
    })
}

/// Leave the fleet: stop the agent, remove this member's record from Redis (best effort),
/// free the handle. Attached bulkheads keep their last caps (set them with
/// `guards_bulkhead_set_max_concurrent` if needed) and may be freed afterwards. NULL is a
/// no-op.
///
/// # Safety
/// `f` must be NULL or a handle from `guards_fleet_join` not left before, and no other
/// thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_fleet_leave(f: *mut guards_fleet) {
    // SAFETY: the caller's contract, passed on (dropping the Fleet leaves).
    unsafe { free_handle(f) }
}

/// Set the bulkhead's cap at runtime (0..=4294967295) without touching the permits in
/// flight: a cap lowered below the calls in flight admits nothing until they drain; a cap
/// raised admits at once. (A fleet-attached bulkhead's cap is the agent's to set.)
/// Errors: `CONFIG_OUT_OF_RANGE` naming `max_concurrent`; `NULL_ARGUMENT`.
///
/// # Safety
/// `h` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_set_max_concurrent(
    h: *const guards_bulkhead,
    max_concurrent: u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let h = unsafe { arg(h, "bulkhead") }?;
        h.bulkhead().set_max_concurrent(max_concurrent)?;
        Ok(())
    })
}
