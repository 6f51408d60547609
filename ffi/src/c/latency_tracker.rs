//! `guards_latency_tracker`: core's streaming latency percentiles (within 1/64) over a
//! sliding window, and the timeout they propose (default 2 × P99.9).
//!
//! ```c
//! guards_latency_tracker_config cfg;
//! guards_latency_tracker_config_default(&cfg);
//! guards_latency_tracker *t;
//! guards_latency_tracker_new(&cfg, &t);
//! guards_latency_tracker_report(t, guards_now_ns(), started_at, GUARDS_OUTCOME_SUCCESS);
//! uint64_t timeout;
//! if (guards_latency_tracker_propose_timeout(t, guards_now_ns(), &timeout) == GUARDS_RESULT_OK) {
//!     /* use it; GUARDS_RESULT_NO_DATA until min_samples are in */
//! }
//! ```

use super::{call, call_out, config_default, free_handle, new_handle, read};
use crate::error::{Failure, GuardsResult};
use crate::handle::AnyLatencyTracker;
use crate::names::{LatencySummary, LatencyTrackerConfig, LatencyTrackerStats, Nanos};

/// A latency tracker's settings. Start from `guards_latency_tracker_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_latency_tracker_config {
    /// Length of one window of the ring; reads merge the last 6 (default 10 s; 1 s..=1 day).
    pub window_ns: u64,
    /// The quantile a proposed timeout starts from (default 0.999; 0 < q <= 1).
    pub timeout_quantile: f64,
    /// Proposed timeout = this × that quantile (default 2.0; 1..=100).
    pub timeout_factor: f64,
    /// Samples needed before a timeout is proposed (default 1000; 1..=10^12).
    pub min_samples: u64,
}

impl guards_latency_tracker_config {
    /// The schema defaults.
    pub fn of_defaults() -> Self {
        Self::of_core(&crate::schema::LATENCY_TRACKER.defaults())
    }

    /// Core's config (validated by core when the tracker is built).
    pub fn to_core(&self) -> LatencyTrackerConfig {
        LatencyTrackerConfig {
            window: Nanos(self.window_ns),
            timeout_quantile: self.timeout_quantile,
            timeout_factor: self.timeout_factor,
            min_samples: self.min_samples,
        }
    }

    /// The C form of core's config.
    pub fn of_core(c: &LatencyTrackerConfig) -> Self {
        guards_latency_tracker_config {
            window_ns: c.window.0,
            timeout_quantile: c.timeout_quantile,
            timeout_factor: c.timeout_factor,
            min_samples: c.min_samples,
        }
    }
}

/// A latency tracker's counters.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_latency_tracker_stats {
    /// Samples added (saturated ones included).
    pub recorded: u64,
    /// Samples above the largest trackable value, clamped into the last bucket.
    pub saturated: u64,
    /// Samples dropped because their window had already been reused (a `now_ns` a whole
    /// ring behind).
    pub stale: u64,
}

impl From<LatencyTrackerStats> for guards_latency_tracker_stats {
    fn from(s: LatencyTrackerStats) -> Self {
        guards_latency_tracker_stats {
            recorded: s.recorded,
            saturated: s.saturated,
            stale: s.stale,
        }
    }
}

/// Several quantiles read in one pass; all zero when `count` is 0.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_latency_summary {
    /// Samples in the merged windows.
    pub count: u64,
    /// Median.
    pub p50_ns: u64,
    /// 95th percentile.
    pub p95_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest sample (its bucket's midpoint).
    pub max_ns: u64,
}

impl From<LatencySummary> for guards_latency_summary {
    fn from(s: LatencySummary) -> Self {
        guards_latency_summary {
            count: s.count,
            p50_ns: s.p50.0,
            p95_ns: s.p95.0,
            p99_ns: s.p99.0,
            p999_ns: s.p999.0,
            max_ns: s.max.0,
        }
    }
}

/// A latency tracker (opaque). Thread-safe and lock-free: share one handle.
#[derive(Debug)]
pub struct guards_latency_tracker {
    tracker: AnyLatencyTracker,
}

pub(crate) fn no_data() -> Failure {
    Failure::argument(
        GuardsResult::NoData,
        "samples",
        "enough samples in the window (min_samples)",
    )
}

/// A quantile argument: a number in 0..=1.
pub(crate) fn check_quantile(q: f64) -> Result<f64, Failure> {
    if (0.0..=1.0).contains(&q) {
        Ok(q)
    } else {
        Err(Failure::argument(
            GuardsResult::InvalidArgument,
            "q",
            "a quantile in 0.0..=1.0 (not NaN)",
        ))
    }
}

/// Write the default config to `out` (10 s windows, timeouts from 2 × P99.9 after 1000
/// samples).
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_latency_tracker_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_config_default(
    out: *mut guards_latency_tracker_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_latency_tracker_config::of_defaults) }
}

/// Build a latency tracker from `config` into `*out`. Errors: `NULL_ARGUMENT`, `CONFIG_*`
/// naming the field, `OUT_OF_MEMORY`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_new(
    config: *const guards_latency_tracker_config,
    out: *mut *mut guards_latency_tracker,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        new_handle(config, out, |c| {
            Ok(guards_latency_tracker {
                tracker: AnyLatencyTracker::new(c.to_core())?,
            })
        })
    }
}

/// Free a latency tracker (NULL is a no-op).
///
/// # Safety
/// `t` must be NULL or a handle from `guards_latency_tracker_new` not freed before, and no
/// other thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_free(t: *mut guards_latency_tracker) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(t) }
}

/// Record one latency (`latency_ns`) observed at `now_ns`.
///
/// # Safety
/// `t` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_record(
    t: *mut guards_latency_tracker,
    now_ns: u64,
    latency_ns: u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(t, "tracker", |t| {
            with_latency_tracker!(&t.tracker, t => t.record(Nanos(now_ns), Nanos(latency_ns)));
            Ok(())
        })
    }
}

/// Record how a call that started at `started_at_ns` ended at `now_ns` (`outcome`: a
/// `guards_outcome`), by the call contract: success, permanent, timeout and cancelled
/// record `now_ns − started_at_ns` (for the last two a lower bound of the real latency);
/// fast failures and calls that never left record nothing.
///
/// # Safety
/// `t` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_report(
    t: *mut guards_latency_tracker,
    now_ns: u64,
    started_at_ns: u64,
    outcome: u32,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(t, "tracker", |t| {
            let o = super::outcome(outcome)?;
            with_latency_tracker!(&t.tracker, t => t.report(Nanos(now_ns), Nanos(started_at_ns), o));
            Ok(())
        })
    }
}

/// The `q`-quantile (0..=1) of the samples of the last windows at `now_ns` into `*out`.
/// `GUARDS_RESULT_NO_DATA` with no samples; `INVALID_ARGUMENT` for a NaN or out-of-range
/// `q`.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_quantile(
    t: *const guards_latency_tracker,
    now_ns: u64,
    q: f64,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(t, "tracker", out, |t| {
            let q = check_quantile(q)?;
            with_latency_tracker!(&t.tracker, t => t.quantile(Nanos(now_ns), q))
                .map(|n| n.0)
                .ok_or_else(no_data)
        })
    }
}

/// Samples in the merged windows at `now_ns` into `*out`.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_count(
    t: *const guards_latency_tracker,
    now_ns: u64,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(
            t,
            "tracker",
            out,
            |t| with_latency_tracker!(&t.tracker, t => t.count(Nanos(now_ns))),
        )
    }
}

/// Count, P50, P95, P99, P99.9 and max at `now_ns` in one pass, into `*out`.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_summary(
    t: *const guards_latency_tracker,
    now_ns: u64,
    out: *mut guards_latency_summary,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(t, "tracker", out, |t| {
            with_latency_tracker!(&t.tracker, t => t.summary(Nanos(now_ns))).into()
        })
    }
}

/// The timeout the config proposes at `now_ns` (`timeout_factor × quantile
/// (timeout_quantile)`) into `*out`; `GUARDS_RESULT_NO_DATA` below `min_samples`.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_propose_timeout(
    t: *const guards_latency_tracker,
    now_ns: u64,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(t, "tracker", out, |t| {
            with_latency_tracker!(&t.tracker, t => t.propose_timeout(Nanos(now_ns)))
                .map(|n| n.0)
                .ok_or_else(no_data)
        })
    }
}

/// The share of the samples at `now_ns` that a timeout of `timeout_ns` would have cut off,
/// into `*out`; `GUARDS_RESULT_NO_DATA` with no samples.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_false_timeout_rate(
    t: *const guards_latency_tracker,
    now_ns: u64,
    timeout_ns: u64,
    out: *mut f64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(t, "tracker", out, |t| {
            with_latency_tracker!(&t.tracker, t => t.false_timeout_rate(Nanos(now_ns), Nanos(timeout_ns)))
                .ok_or_else(no_data)
        })
    }
}

/// The counters into `*out`; safe while other threads use the tracker.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_get_stats(
    t: *const guards_latency_tracker,
    out: *mut guards_latency_tracker_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(t, "tracker", out, |t| {
            with_latency_tracker!(&t.tracker, t => t.stats()).into()
        })
    }
}

/// The config the tracker was built with.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_latency_tracker_get_config(
    t: *const guards_latency_tracker,
    out: *mut guards_latency_tracker_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(t, "tracker", out, |t| {
            guards_latency_tracker_config::of_core(
                with_latency_tracker!(&t.tracker, t => t.config()),
            )
        })
    }
}
