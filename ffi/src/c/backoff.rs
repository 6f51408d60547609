//! `guards_backoff`: core's capped exponential backoff with jitter, with its own seedable
//! generator, and the stable offset of periodic work.
//!
//! ```c
//! guards_backoff_config cfg;
//! guards_backoff_config_default(&cfg);               /* 25 ms base, 20 s cap, full jitter */
//! guards_backoff *b;
//! guards_backoff_new(&cfg, &b);                      /* a random seed; _reseed for tests */
//! uint64_t wait, prev = 0;
//! for (uint32_t retry = 0; retry < 3; retry++) {
//!     guards_backoff_delay(b, retry, prev, &wait);   /* retry 0 = the first retry */
//!     prev = wait;
//! }
//! guards_backoff_free(b);
//! ```

use std::ffi::c_char;

use super::{boundary, bytes, call, config_default, free_handle, new_handle, read, Out};
use crate::error::{Failure, GuardsResult};
use crate::names::{Backoff, BackoffConfig, Jitter, Nanos, Rng};

/// How a backoff's waits are randomised (`jitter`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_jitter {
    /// No jitter: the ceiling `min(cap, base · multiplier^n)` itself.
    None = 0,
    /// Uniform in `0..=ceiling` (the default).
    Full = 1,
    /// Uniform in `ceiling/2..=ceiling`.
    Equal = 2,
    /// Uniform in `base..=3 · previous wait`, capped.
    Decorrelated = 3,
}

/// A backoff's settings. Start from `guards_backoff_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_backoff_config {
    /// The first delay before jitter (default 25 ms; 1 ns..=86400 s).
    pub base_ns: u64,
    /// The largest delay before jitter (default 20 s; base..=86400 s).
    pub cap_ns: u64,
    /// Growth per retry (default 2.0; 1.0..=100.0).
    pub multiplier: f64,
    /// A `guards_jitter` (default `GUARDS_JITTER_FULL`).
    pub jitter: u32,
}

impl guards_backoff_config {
    /// The schema defaults.
    pub fn of_defaults() -> Self {
        Self::of_core(&crate::schema::BACKOFF.defaults())
    }

    /// Core's config, or `INVALID_ENUM` naming `field` for an unknown jitter.
    pub fn to_core_named(&self, field: &'static str) -> Result<BackoffConfig, Failure> {
        let jitter = u8::try_from(self.jitter)
            .ok()
            .and_then(|b| Jitter::try_from(b).ok())
            .ok_or(Failure::bad_enum(field, "a guards_jitter value, 0..=3"))?;
        Ok(BackoffConfig {
            base: Nanos(self.base_ns),
            cap: Nanos(self.cap_ns),
            multiplier: self.multiplier,
            jitter,
        })
    }

    /// The C form of core's config.
    pub fn of_core(c: &BackoffConfig) -> Self {
        guards_backoff_config {
            base_ns: c.base.0,
            cap_ns: c.cap.0,
            multiplier: c.multiplier,
            jitter: c.jitter as u32,
        }
    }
}

/// A backoff and its generator (opaque). Thread-safe: every draw is one atomic add.
#[derive(Debug)]
pub struct guards_backoff {
    backoff: Backoff,
    rng: Rng,
}

impl guards_backoff {
    /// Build from a C config, with a random seed.
    pub fn new(cfg: &guards_backoff_config) -> Result<Self, Failure> {
        Ok(guards_backoff {
            backoff: Backoff::new(cfg.to_core_named("jitter")?)?,
            rng: Rng::new(crate::seed::random_seed()),
        })
    }
}

/// Write the default config to `out` (25 ms base, 20 s cap, ×2, full jitter).
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_backoff_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_backoff_config_default(
    out: *mut guards_backoff_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_backoff_config::of_defaults) }
}

/// Build a backoff from `config` into `*out`, its generator seeded at random (call
/// `guards_backoff_reseed` for a reproducible sequence). Errors: `NULL_ARGUMENT`,
/// `INVALID_ENUM` (jitter), `CONFIG_*` naming the field, `OUT_OF_MEMORY`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_backoff_new(
    config: *const guards_backoff_config,
    out: *mut *mut guards_backoff,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { new_handle(config, out, guards_backoff::new) }
}

/// Free a backoff (NULL is a no-op).
///
/// # Safety
/// `b` must be NULL or a handle from `guards_backoff_new` not freed before, and no other
/// thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_backoff_free(b: *mut guards_backoff) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(b) }
}

/// Restart the backoff's generator from `seed`: the same seed gives the same waits in
/// every language.
///
/// # Safety
/// `b` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_backoff_reseed(b: *mut guards_backoff, seed: u64) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(b, "backoff", |b| {
            b.rng.reseed(seed);
            Ok(())
        })
    }
}

/// The wait before retry `retry` (0 = the first retry) into `*out`, drawing once from the
/// backoff's generator (not at all without jitter). `prev_ns` is the previous wait of the
/// same request (0 before the first); only decorrelated jitter uses it.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_backoff_delay(
    b: *mut guards_backoff,
    retry: u32,
    prev_ns: u64,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(b, "backoff", out, |b| {
            b.backoff.delay(retry, Nanos(prev_ns), &b.rng).0
        })
    }
}

/// Draw the next word from the backoff's generator (the word `guards_backoff_delay` would
/// draw) into `*out`: record it, and `guards_backoff_delay_from_bits` gives (and later
/// replays) the wait it makes. The same seed gives the same words in every language.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_backoff_next_u64(
    b: *mut guards_backoff,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(b, "backoff", out, |b| b.rng.next_u64()) }
}

/// The wait before retry `retry` for the random word `bits` (what `guards_backoff_delay`
/// does after drawing; pure: replays a wait from a recorded word) into `*out`.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_backoff_delay_from_bits(
    b: *const guards_backoff,
    retry: u32,
    prev_ns: u64,
    bits: u64,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(b, "backoff", out, |b| {
            b.backoff.delay_from_bits(retry, Nanos(prev_ns), bits).0
        })
    }
}

/// The un-jittered wait before retry `retry`, `min(cap, base · multiplier^retry)`, into
/// `*out`.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_backoff_ceiling(
    b: *const guards_backoff,
    retry: u32,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(b, "backoff", out, |b| b.backoff.ceiling(retry).0) }
}

/// The largest wait `guards_backoff_delay` can return for retry `retry` (to check that
/// attempts and waits fit a deadline) into `*out`.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_backoff_max_delay(
    b: *const guards_backoff,
    retry: u32,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(b, "backoff", out, |b| b.backoff.max_delay(retry).0) }
}

/// The config the backoff was built with.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_backoff_get_config(
    b: *const guards_backoff,
    out: *mut guards_backoff_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(b, "backoff", out, |b| {
            guards_backoff_config::of_core(&b.backoff.config())
        })
    }
}

/// The stable start offset of periodic work named `id` (`len` bytes): `fnv1a64(id) mod
/// period_ns`, the same in every process and language (0 for a zero period), into `*out`.
///
/// # Safety
/// `id` must be NULL (with `len` 0) or valid for reads of `len` bytes; `out` NULL or valid
/// for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_stable_offset(
    id: *const c_char,
    len: usize,
    period_ns: u64,
    out: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let id = unsafe { bytes(id, len, "id") }?;
        let out = Out::new(out, "out")?;
        let v = guards_core::backoff::stable_offset(id, Nanos(period_ns)).0;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(v) };
        Ok(())
    })
}

/// The first instant at or after `now_ns` that is the stable offset of `id` past a
/// multiple of `period_ns` (saturating; `now_ns` for a zero period), into `*out`.
///
/// # Safety
/// As `guards_stable_offset`.
#[no_mangle]
pub unsafe extern "C" fn guards_next_stable_run(
    id: *const c_char,
    len: usize,
    period_ns: u64,
    now_ns: u64,
    out: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let id = unsafe { bytes(id, len, "id") }?;
        let out = Out::new(out, "out")?;
        let v = guards_core::backoff::next_stable_run(id, Nanos(period_ns), Nanos(now_ns)).0;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(v) };
        Ok(())
    })
}
