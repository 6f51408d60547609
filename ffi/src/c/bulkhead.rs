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

use super::{arg, boundary, guards_permit, Out};
use crate::error::{Failure, GuardsResult};
use crate::handle::InPlace;
use crate::names::{Bulkhead, BulkheadConfig, BulkheadPermit, BulkheadStats};
use crate::permit::PermitSlots;

/// A bulkhead's settings. Start from `guards_bulkhead_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct guards_bulkhead_config {
    /// How many calls may be in flight at once (default 12; 1..=4294967295).
    pub max_concurrent: u64,
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
        let config = BulkheadConfig {
            max_concurrent: cfg.max_concurrent,
        };
        config.validate()?;
        // No more permits than the cap can ever be out at once.
        let limit = u32::try_from(cfg.max_concurrent).unwrap_or(u32::MAX);
        Ok(guards_bulkhead {
            bulkhead: InPlace::new(config)?,
            permits: PermitSlots::with_limit(limit),
        })
    }

    /// A permit, or the refusal.
    #[inline]
    pub fn try_acquire(&self) -> Result<guards_permit, Failure> {
        let p = self.bulkhead.try_acquire()?;
        match self.permits.insert(p) {
            Ok(t) => Ok(guards_permit::of_token(t)),
            Err((p, code)) => {
                self.bulkhead.release(p);
                Err(Failure::code(code))
            }
        }
    }

    /// Release `permit`, once.
    #[inline]
    pub fn release(&self, permit: &guards_permit) -> Result<(), Failure> {
        let p = self.permits.take(permit.token()).map_err(Failure::code)?;
        self.bulkhead.release(p);
        Ok(())
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
    boundary(|| {
        let out = Out::new(out, "out")?;
        let c = crate::schema::bulkhead_defaults();
        // SAFETY: valid for writes (caller's contract).
        unsafe {
            out.set(guards_bulkhead_config {
                max_concurrent: c.max_concurrent,
            })
        };
        Ok(())
    })
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
    boundary(|| {
        // SAFETY: the caller's contract.
        let config = unsafe { arg(config, "config") }?;
        let out = Out::new(out, "out")?;
        let h = Box::new(guards_bulkhead::new(config)?);
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(Box::into_raw(h)) };
        Ok(())
    })
}

/// Free a bulkhead (NULL is a no-op).
///
/// # Safety
/// `h` must be NULL or a handle from `guards_bulkhead_new` not freed before, and no other
/// thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_free(h: *mut guards_bulkhead) {
    if h.is_null() {
        return;
    }
    let _ = boundary(|| {
        // SAFETY: from `Box::into_raw` in `guards_bulkhead_new`, freed once.
        drop(unsafe { Box::from_raw(h) });
        Ok(())
    });
}

/// Take a slot: `GUARDS_RESULT_OK` with a permit in `*out` (give it back once with
/// `guards_bulkhead_release`), or `GUARDS_RESULT_BULKHEAD_FULL`.
///
/// # Safety
/// `h` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_bulkhead_try_acquire(
    h: *mut guards_bulkhead,
    out: *mut guards_permit,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let h = unsafe { arg(h.cast_const(), "bulkhead") }?;
        let out = Out::new(out, "out")?;
        let p = h.try_acquire()?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(p) };
        Ok(())
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
    boundary(|| {
        // SAFETY: the caller's contract.
        let h = unsafe { arg(h.cast_const(), "bulkhead") }?;
        h.release(&permit)
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
    boundary(|| {
        // SAFETY: the caller's contract.
        let h = unsafe { arg(h, "bulkhead") }?;
        let out = Out::new(out, "out")?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(h.bulkhead.stats().into()) };
        Ok(())
    })
}
