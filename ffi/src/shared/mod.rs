//! Host-wide guards: core's guards in a memory-mapped file shared by every process of a
//! machine, so that the workers of a prefork server, of gunicorn or of a Node cluster use
//! one breaker, one bulkhead, one retry budget instead of one each.
//!
//! Core's guard state is `#[repr(C)]` atomics with no pointers, and all-zero bytes are a
//! valid inert guard that `reset` turns into a working one ("Building in place" in core).
//! So a guard can be built in shared memory and used by every process that maps it, with
//! core's own code: a [`Shared<K>`] derefs to core's `K`.
//!
//! - [`Region`]: a file (under `/dev/shm`, or any path) holding named guards: a header
//!   (magic, layout version, build fingerprint), a directory (name, kind, type and config
//!   hashes, place), a permit table, and the guards. [`Region::get_or_create`] returns the
//!   guard of a name, creating it the first time; a name that exists with another kind,
//!   capacity or config is refused with [`GuardsResult::GuardMismatch`]. The file format
//!   and its versioning: [`layout`].
//! - Owner-recorded permits: [`Shared::try_acquire`] records this process (pid and start
//!   time) with every permit in the region's permit table ([`table`]), and
//!   [`Region::reclaim`] gives a dead process's permits back to their guards as
//!   `cancelled` (the call contract then releases a bulkhead slot, frees a limiter place,
//!   fails an abandoned half-open probe). When it runs: on [`Region::open`], when an
//!   acquire finds its guard full (at most once per `reclaim_interval`), when the permit
//!   table is full, and whenever [`Region::reclaim`] is called.
//! - [`place`]: a guard in memory the caller provides, for programs that share memory
//!   their own way (no region file; no reclaim).
//! - [`AnyShared`]: a guard of a kind and capacity chosen at run time, for bindings.
//!
//! `docs/shared.md` says when to share a guard and when not, what it costs, and the
//! reclaim rule in full.
//!
//! Linux: owners are checked through `/proc` and `kill(pid, 0)`, and every process must
//! be in the same pid namespace (a region records its creator's and refuses others).
//! Targets without native 64-bit atomics are not supported: `portable-atomic`'s fallback
//! there is a lock inside one process, which does not exclude other processes.
//!
//! # Examples
//! ```
//! use guards::shared::{Region, RegionOptions};
//! use guards_core::{Bulkhead, BulkheadConfig, Nanos, Outcome};
//!
//! # let path = std::env::temp_dir().join(format!("guards-doc-{}", std::process::id()));
//! # let path = path.to_str().unwrap();
//! let region = Region::open(path, &RegionOptions::default())?;
//! // Every process that runs this gets the same bulkhead.
//! let stock = region.get_or_create::<Bulkhead>("stock", BulkheadConfig { max_concurrent: 12 })?;
//! let (permit, _) = stock.try_acquire((), Nanos(1)).expect("room");
//! assert_eq!(stock.in_flight(), 1); // core's own method, on the shared state
//! stock.report(permit, Outcome::Success, Nanos(2)).expect("reported once");
//! # Region::remove(path)?;
//! # Ok::<(), guards::error::Failure>(())
//! ```

#[cfg(doc)]
use crate::error::GuardsResult;

mod any;
pub mod file;
mod guard;
pub mod kind;
pub mod layout;
pub mod owner;
pub mod place;
mod region;
pub mod table;

pub use any::{breaker_capacity, AnyShared};
pub use guard::{Refusal, Shared};
pub use kind::{GuardKind, PermitView, SharedGuard, SharedPermits};
pub use region::{
    pause_while_creating, GuardInfo, Reclaim, Region, RegionOptions, RegionStats,
    DEFAULT_DATA_BYTES, DEFAULT_MAX_GUARDS, DEFAULT_MODE, DEFAULT_PERMIT_SLOTS,
    DEFAULT_RECLAIM_INTERVAL, DEFAULT_WAIT_TIMEOUT,
};
