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

use std::ffi::c_char;
use std::sync::Mutex;
use std::time::Duration;

use super::{Fleet, FleetConfig, FleetError, Resizable, Trippable};
use crate::c::bulkhead::guards_bulkhead;
use crate::c::circuit_breaker::guards_circuit_breaker;
use crate::c::limiter::guards_limiter;
use crate::c::retry_budget::guards_retry_budget;
use crate::c::{arg, boundary, c_str, free_handle, Out};
use crate::error::{Failure, GuardsResult};
use guards_core::retry_budget::{RetryBudget, TokenBudget};
use guards_core::Nanos;

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
            "a name not attached yet",
        ),
    }
}

/// A C handle the agent resizes (see the lifetime rule on `guards_fleet_attach_*`).
struct HandleRef<T>(*const T);

// SAFETY: the handles are thread-safe (atomics only); the caller keeps the handle alive
// until `guards_fleet_leave` has returned.
unsafe impl<T> Send for HandleRef<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for HandleRef<T> {}

impl<T> HandleRef<T> {
    fn get(&self) -> &T {
        // SAFETY: live until the fleet is left (the caller's contract).
        unsafe { &*self.0 }
    }
}

impl Resizable for HandleRef<guards_bulkhead> {
    fn in_flight(&self) -> u64 {
        self.get().bulkhead().in_flight()
    }
    fn cap(&self) -> u64 {
        self.get().bulkhead().max_concurrent()
    }
    fn set_cap(&self, cap: u64) {
        Resizable::set_cap(self.get().bulkhead(), cap)
    }
}

impl Resizable for HandleRef<guards_limiter> {
    fn in_flight(&self) -> u64 {
        Resizable::in_flight(self.get().limiter())
    }
    fn cap(&self) -> u64 {
        Resizable::cap(self.get().limiter())
    }
    fn set_cap(&self, cap: u64) {
        Resizable::set_cap(self.get().limiter(), cap)
    }
}

impl Trippable for HandleRef<guards_circuit_breaker> {
    fn window(&self, now: Nanos) -> (u64, u64) {
        self.get().breaker().window(now)
    }
    fn recorded(&self) -> (u64, u64) {
        self.get().breaker().recorded()
    }
    fn is_closed(&self, now: Nanos) -> bool {
        self.get().breaker().is_closed(now)
    }
    fn minimum_calls(&self) -> u64 {
        self.get().breaker().minimum_calls()
    }
    fn failure_rate_threshold(&self) -> f64 {
        self.get().breaker().failure_rate_threshold()
    }
    fn open_on_evidence(&self, now: Nanos) -> bool {
        self.get().breaker().open_on_evidence(now)
    }
}

/// A token-bucket budget (checked at attach: the mode never changes afterwards, as
/// `guards_retry_budget` has no reset).
struct TokenRef(HandleRef<guards_retry_budget>);

impl TokenRef {
    fn token(&self) -> Option<&TokenBudget> {
        match self.0.get().budget() {
            RetryBudget::TokenBucket(b) => Some(b),
            _ => None,
        }
    }
}

impl Resizable for TokenRef {
    fn in_flight(&self) -> u64 {
        self.token().map_or(0, Resizable::in_flight)
    }
    fn cap(&self) -> u64 {
        self.token().map_or(0, Resizable::cap)
    }
    fn set_cap(&self, cap: u64) {
        if let Some(b) = self.token() {
            b.set_cap(cap);
        }
    }
    fn max_cap(&self) -> u64 {
        self.token().map_or(0, Resizable::max_cap)
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
                c_str(url, "url")?,
                c_str(service, "service")?,
                c_str(member, "member")?,
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

/// Attach `guard` to the allowance `name`.
///
/// # Safety
/// `f` must be NULL or a live handle; `name` NULL or a NUL-terminated string.
unsafe fn attach(
    f: *const guards_fleet,
    name: *const c_char,
    allowance: u64,
    guard: Box<dyn Resizable>,
) -> Result<(), Failure> {
    // SAFETY: the caller's contract.
    unsafe { with_fleet(f, name, |fleet, name| fleet.attach(name, allowance, guard)) }
}

/// Run `op` on the fleet behind `f` with the name `name` (both checked).
///
/// # Safety
/// As [`attach`].
unsafe fn with_fleet(
    f: *const guards_fleet,
    name: *const c_char,
    op: impl FnOnce(&Fleet, &str) -> Result<(), FleetError>,
) -> Result<(), Failure> {
    // SAFETY: the caller's contract.
    let f = unsafe { arg(f, "fleet") }?;
    // SAFETY: the caller's contract.
    let name = unsafe { c_str(name, "name") }?;
    let fleet = f.fleet.lock().unwrap_or_else(|p| p.into_inner());
    op(&fleet, name).map_err(|e| failure(&e))
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
        let _ = unsafe { arg(bulkhead, "bulkhead") }?;
        // SAFETY: the caller's contract.
        unsafe { attach(f, name, allowance, Box::new(HandleRef(bulkhead))) }
    })
}

/// Attach the limiter `limiter` to the fleet-wide maximum `name` of `allowance` calls in
/// flight (1..=4294967295): its ceiling (`guards_limiter_set_max_limit`) drops to 0 at
/// once and follows this member's share; the algorithm adapts beneath it. The same
/// lifetime rule and errors as `guards_fleet_attach_bulkhead`.
///
/// # Safety
/// `f` and `limiter` must be NULL or live handles; `name` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn guards_fleet_attach_limiter(
    f: *const guards_fleet,
    name: *const c_char,
    allowance: u64,
    limiter: *const guards_limiter,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let _ = unsafe { arg(limiter, "limiter") }?;
        // SAFETY: the caller's contract.
        unsafe { attach(f, name, allowance, Box::new(HandleRef(limiter))) }
    })
}

/// Attach the token-bucket retry budget `budget` to the fleet-wide burst `name` of
/// `allowance` tokens (1..=1000000000): its capacity (`guards_retry_budget_set_capacity`)
/// drops to 0 at once (no retry goes until the first share arrives) and follows this
/// member's share; its earn ratio is unchanged (earned per first attempt, the fleet's
/// total already follows the traffic). `INVALID_ARGUMENT` naming `budget` for a budget of
/// another mode; otherwise as `guards_fleet_attach_bulkhead`.
///
/// # Safety
/// `f` and `budget` must be NULL or live handles; `name` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn guards_fleet_attach_retry_budget(
    f: *const guards_fleet,
    name: *const c_char,
    allowance: u64,
    budget: *const guards_retry_budget,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let b = unsafe { arg(budget, "budget") }?;
        if !matches!(b.budget(), RetryBudget::TokenBucket(_)) {
            return Err(Failure::argument(
                GuardsResult::InvalidArgument,
                "budget",
                "a token-bucket retry budget",
            ));
        }
        let guard = TokenRef(HandleRef(budget));
        // SAFETY: the caller's contract.
        unsafe { attach(f, name, allowance, Box::new(guard)) }
    })
}

/// Attach the circuit breaker `breaker` to the fleet's evidence under `name` (1..=128
/// bytes of `[A-Za-z0-9._-]`; breaker names are apart from allowance names): each sync
/// the agent publishes its window counts and, while it is closed with fewer calls than its
/// `minimum_calls`, opens it when the fleet's calls (at least `minimum_calls`, from at
/// least two other members) fail at its `failure_rate_threshold` or more, exactly as a
/// local trip opens it (see docs/fleet.md, "Breaker evidence"). Nothing else about the
/// breaker changes; its `now_ns` must be `guards_now_ns`'s timeline. The same lifetime
/// rule as `guards_fleet_attach_bulkhead`. Errors: `INVALID_ARGUMENT` naming `name` (bad
/// or already attached); `NULL_ARGUMENT`.
///
/// # Safety
/// `f` and `breaker` must be NULL or live handles; `name` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn guards_fleet_attach_breaker(
    f: *const guards_fleet,
    name: *const c_char,
    breaker: *const guards_circuit_breaker,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let _ = unsafe { arg(breaker, "breaker") }?;
        let guard = Box::new(HandleRef(breaker));
        // SAFETY: the caller's contract.
        unsafe { with_fleet(f, name, |fleet, name| fleet.attach_trippable(name, guard)) }
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
        let name = unsafe { c_str(name, "name") }?;
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

/// Cap the limiter's limit at `max_limit` at run time (0..=4294967295; 0 refuses every
/// call; `UINT64_MAX` removes the ceiling), whatever its algorithm says, without touching
/// the permits in flight: a ceiling below the calls in flight admits nothing until they
/// drain; the algorithm adapts beneath it. The previous ceiling goes to
/// `*previous` (may be NULL; `UINT64_MAX` when there was none). (A fleet-attached
/// limiter's ceiling is the agent's to set.) Errors: `CONFIG_OUT_OF_RANGE` naming
/// `max_limit`; `NULL_ARGUMENT`.
///
/// # Safety
/// `h` must be NULL or a live handle; `previous` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_set_max_limit(
    h: *const guards_limiter,
    max_limit: u64,
    previous: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let h = unsafe { arg(h, "limiter") }?;
        let old = if max_limit == u64::MAX {
            h.limiter().clear_max_limit()
        } else {
            h.limiter().set_max_limit(max_limit)?
        };
        if let Ok(o) = Out::new(previous, "previous") {
            // SAFETY: valid for writes (caller's contract).
            unsafe { o.set(old.unwrap_or(u64::MAX)) };
        }
        Ok(())
    })
}

/// Resize a token-bucket retry budget's bucket at run time to `capacity` tokens
/// (0..=1e9, rounded to micro-tokens; 0 refuses every retry): tokens above a smaller
/// capacity are dropped at once, a larger bucket fills from the balance it has.
/// Errors: `CONFIG_OUT_OF_RANGE` naming `capacity`; `INVALID_ARGUMENT` naming `budget`
/// for a budget of another mode; `NULL_ARGUMENT`.
///
/// # Safety
/// `h` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_set_capacity(
    h: *const guards_retry_budget,
    capacity: f64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let h = unsafe { arg(h, "budget") }?;
        let RetryBudget::TokenBucket(b) = h.budget() else {
            return Err(Failure::argument(
                GuardsResult::InvalidArgument,
                "budget",
                "a token-bucket retry budget",
            ));
        };
        b.set_capacity(capacity)?;
        Ok(())
    })
}
