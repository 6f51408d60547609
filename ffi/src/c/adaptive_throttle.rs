//! `guards_adaptive_throttle`: core's client-side adaptive throttle (Google SRE): reject
//! locally with a probability that grows as the backend accepts less of what it is sent.
//!
//! ```c
//! if (guards_adaptive_throttle_try_acquire(t, guards_now_ns()) == GUARDS_RESULT_THROTTLED) {
//!     /* don't send: fail fast or fall back */
//! } else {
//!     /* send, then: */
//!     guards_adaptive_throttle_report(t, guards_now_ns(), outcome);
//! }
//! ```

use super::{call, call_out, config_default, free_handle, new_handle, read};
use crate::error::{Detail, Failure, GuardsResult};
use crate::handle::AnyAdaptiveThrottle;
use crate::names::{AdaptiveThrottleConfig, AdaptiveThrottleStats, Nanos};

/// An adaptive throttle's settings. Start from `guards_adaptive_throttle_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_adaptive_throttle_config {
    /// How far back requests and accepts count (default 120 s; 1 s..=1 h).
    pub window_ns: u64,
    /// Rejecting starts when requests > k × accepts (default 2; 1..=1000).
    pub k: f64,
    /// The probability is raised to 1/aggression (default 1; 1..=100).
    pub aggression: f64,
    /// Cap on the rejection probability (default 1; 0..=1).
    pub max_reject_probability: f64,
    /// With fewer requests in the window nothing is rejected (default 0; 0..=10^12).
    pub min_requests: u64,
    /// Count locally rejected requests as requests (default true: the SRE book's rule).
    pub count_rejected: bool,
    /// Seed of the throttle's own generator (default 0).
    pub seed: u64,
}

impl guards_adaptive_throttle_config {
    /// The schema defaults.
    pub fn of_defaults() -> Self {
        Self::of_core(&crate::schema::ADAPTIVE_THROTTLE.defaults())
    }

    /// Core's config (validated by core when the throttle is built).
    pub fn to_core(&self) -> AdaptiveThrottleConfig {
        AdaptiveThrottleConfig {
            window: Nanos(self.window_ns),
            k: self.k,
            aggression: self.aggression,
            max_reject_probability: self.max_reject_probability,
            min_requests: self.min_requests,
            count_rejected: self.count_rejected,
            seed: self.seed,
        }
    }

    /// The C form of core's config.
    pub fn of_core(c: &AdaptiveThrottleConfig) -> Self {
        guards_adaptive_throttle_config {
            window_ns: c.window.0,
            k: c.k,
            aggression: c.aggression,
            max_reject_probability: c.max_reject_probability,
            min_requests: c.min_requests,
            count_rejected: c.count_rejected,
            seed: c.seed,
        }
    }
}

/// Requests and accepts counted in the window.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_throttle_window {
    /// Requests attempted (admitted, plus rejected ones if `count_rejected`).
    pub requests: u64,
    /// Requests the backend accepted.
    pub accepts: u64,
}

/// An adaptive throttle's counters.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_adaptive_throttle_stats {
    /// Requests let through.
    pub admitted: u64,
    /// Requests rejected locally.
    pub throttled: u64,
    /// Backend accepts reported.
    pub accepted: u64,
    /// Backend refusals (and timeouts) reported.
    pub rejected_by_backend: u64,
    /// Counts dropped because their bucket had been reused (a lagging `now_ns`).
    pub stale: u64,
}

impl From<AdaptiveThrottleStats> for guards_adaptive_throttle_stats {
    fn from(s: AdaptiveThrottleStats) -> Self {
        guards_adaptive_throttle_stats {
            admitted: s.admitted,
            throttled: s.throttled,
            accepted: s.accepted,
            rejected_by_backend: s.rejected_by_backend,
            stale: s.stale,
        }
    }
}

/// An adaptive throttle (opaque). Thread-safe and lock-free.
#[derive(Debug)]
pub struct guards_adaptive_throttle {
    throttle: AnyAdaptiveThrottle,
}

/// Write the default config to `out` (k = 2 over 120 s, linear, no cap, counting local
/// rejections: the SRE book's throttle).
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_adaptive_throttle_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_adaptive_throttle_config_default(
    out: *mut guards_adaptive_throttle_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_adaptive_throttle_config::of_defaults) }
}

/// Build an adaptive throttle from `config` into `*out`. Errors: `NULL_ARGUMENT`,
/// `CONFIG_*` naming the field, `OUT_OF_MEMORY`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_adaptive_throttle_new(
    config: *const guards_adaptive_throttle_config,
    out: *mut *mut guards_adaptive_throttle,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        new_handle(config, out, |c| {
            Ok(guards_adaptive_throttle {
                throttle: AnyAdaptiveThrottle::new(c.to_core())?,
            })
        })
    }
}

/// Free an adaptive throttle (NULL is a no-op).
///
/// # Safety
/// `t` must be NULL or a handle from `guards_adaptive_throttle_new` not freed before, and no
/// other thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_adaptive_throttle_free(t: *mut guards_adaptive_throttle) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(t) }
}

/// Decide a request at `now_ns`: `GUARDS_RESULT_OK` (send it, then report how it ended) or
/// `GUARDS_RESULT_THROTTLED` (reject it locally; the detail gives the probability). The
/// request is counted (a rejected one only with `count_rejected`).
///
/// # Safety
/// `t` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_adaptive_throttle_try_acquire(
    t: *mut guards_adaptive_throttle,
    now_ns: u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(t, "throttle", |t| {
            let reject = with_adaptive_throttle!(&t.throttle, t => t.should_reject(Nanos(now_ns)));
            if reject {
                let probability = with_adaptive_throttle!(
                    &t.throttle, t => t.reject_probability(Nanos(now_ns))
                );
                return Err(Failure {
                    code: GuardsResult::Throttled,
                    detail: Detail::Throttled { probability },
                });
            }
            Ok(())
        })
    }
}

/// How a request the throttle let through ended, at `now_ns` (`outcome`: a
/// `guards_outcome`), by the call contract: success, permanent and other transient are
/// accepts of the backend; timeout, connection error, throttled and overloaded are
/// refusals; rejected, ignored and cancelled change nothing.
///
/// # Safety
/// `t` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_adaptive_throttle_report(
    t: *mut guards_adaptive_throttle,
    now_ns: u64,
    outcome: u32,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(t, "throttle", |t| {
            let o = super::outcome(outcome)?;
            with_adaptive_throttle!(&t.throttle, t => t.report(Nanos(now_ns), o));
            Ok(())
        })
    }
}

/// The probability with which a request at `now_ns` would be rejected, into `*out`.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_adaptive_throttle_reject_probability(
    t: *const guards_adaptive_throttle,
    now_ns: u64,
    out: *mut f64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(
            t,
            "throttle",
            out,
            |t| with_adaptive_throttle!(&t.throttle, t => t.reject_probability(Nanos(now_ns))),
        )
    }
}

/// Requests and accepts in the window at `now_ns`, into `*out`.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_adaptive_throttle_window(
    t: *const guards_adaptive_throttle,
    now_ns: u64,
    out: *mut guards_throttle_window,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(t, "throttle", out, |t| {
            let w = with_adaptive_throttle!(&t.throttle, t => t.window(Nanos(now_ns)));
            guards_throttle_window {
                requests: w.requests,
                accepts: w.accepts,
            }
        })
    }
}

/// The counters into `*out`; safe while other threads use the throttle.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_adaptive_throttle_get_stats(
    t: *const guards_adaptive_throttle,
    out: *mut guards_adaptive_throttle_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(t, "throttle", out, |t| {
            with_adaptive_throttle!(&t.throttle, t => t.stats()).into()
        })
    }
}

/// The config the throttle was built with.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_adaptive_throttle_get_config(
    t: *const guards_adaptive_throttle,
    out: *mut guards_adaptive_throttle_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(t, "throttle", out, |t| {
            Ok(guards_adaptive_throttle_config::of_core(
                with_adaptive_throttle!(&t.throttle, t => t.config()),
            ))
        })
    }
}
