//! `guards_limiter`: core's `Limiter`, a lock-free concurrency limit, fixed or adaptive
//! (AIMD, Vegas, Gradient2), partitioned by priority.
//!
//! ```c
//! guards_limiter_config cfg;
//! guards_limiter_config_default(&cfg);
//! cfg.limit.algorithm = GUARDS_LIMIT_ALGORITHM_AIMD;   /* start from cfg.limit.aimd */
//! guards_limiter *l;
//! guards_limiter_new(&cfg, &l);
//! guards_permit p;
//! if (guards_limiter_try_acquire(l, guards_now_ns(), 1, &p) == GUARDS_RESULT_OK) {
//!     /* ... call, then (a timeout is a drop that shrinks the limit): */
//!     guards_limiter_report(l, p, GUARDS_OUTCOME_SUCCESS, guards_now_ns());
//! }
//! guards_limiter_free(l);
//! ```

use super::gate::GateHandle;
use super::{
    call_mut_out, call_out, config_default, fail_arg, free_handle, guards_permit, hot, hot_out_ok,
    hot_ref, new_handle, priority, read,
};
use crate::error::{Failure, GuardsResult};
use crate::names::{
    AimdConfig, GradientConfig, LimitConfig, Limiter, LimiterConfig, LimiterStats, Nanos,
    PartitionConfig, VegasConfig,
};
use guards_core::limit::{Limit, LimitSample};

/// Which limit a `guards_limit_config` runs (`algorithm`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_limit_algorithm {
    /// A fixed number: `fixed`.
    Fixed = 0,
    /// Additive increase, multiplicative decrease: `aimd`.
    Aimd = 1,
    /// Queue estimation from the RTT above its minimum: `vegas`.
    Vegas = 2,
    /// Gradient of a long-term RTT average over the current RTT: `gradient`.
    Gradient = 3,
}

/// AIMD: +1 per healthy interval, × `backoff_ratio` on a drop (at most once an interval).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_aimd_config {
    /// The limit before any sample (default 10; within min_limit..=max_limit).
    pub initial_limit: u64,
    /// The limit never goes below (default 1; 1..=1000000).
    pub min_limit: u64,
    /// The limit never goes above (default 1000; min_limit..=1000000).
    pub max_limit: u64,
    /// The limit is multiplied by this on a drop (default 0.5; 0 < x < 1).
    pub backoff_ratio: f64,
    /// At most one change per interval (default 100 ms; 1 ns..=1 day).
    pub interval_ns: u64,
    /// An RTT above this counts as a drop (default `UINT64_MAX`: no target).
    pub latency_target_ns: u64,
}

/// Vegas: the limit from the queue estimated from RTT above its minimum.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_vegas_config {
    /// The limit before any sample (default 20).
    pub initial_limit: u64,
    /// The limit never goes below (default 1).
    pub min_limit: u64,
    /// The limit never goes above (default 1000).
    pub max_limit: u64,
    /// Weight of a new estimate (default 1.0; 0 < x <= 1).
    pub smoothing: f64,
    /// Grow while the queue is below this (default 3; 0..=1000).
    pub alpha: f64,
    /// Shrink while the queue is above this (default 6; alpha..=1000).
    pub beta: f64,
    /// Grow fast below this (default 1; 0..=alpha).
    pub threshold: f64,
    /// Re-probe the minimum RTT every this × limit samples (default 30; 1..=1000000).
    pub probe_multiplier: u64,
    /// Random share taken off the probe interval (default 0.5; 0 <= x < 1).
    pub probe_jitter: f64,
    /// Seed of the probe jitter (default 0).
    pub probe_seed: u64,
}

/// Gradient2: the limit from the gradient of a long-term RTT average over the current RTT.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_gradient_config {
    /// The limit before any sample (default 20).
    pub initial_limit: u64,
    /// The limit never goes below (default 1).
    pub min_limit: u64,
    /// The limit never goes above (default 200).
    pub max_limit: u64,
    /// Weight of a new estimate (default 0.2; 0 < x <= 1).
    pub smoothing: f64,
    /// Queue allowed above the estimate (default 4; 0..=1000000).
    pub queue_size: f64,
    /// Samples in the long-term RTT average (default 600; 1..=1e9).
    pub long_window: u64,
    /// Samples before the limit moves (default 10; 1..=1e9).
    pub warmup_samples: u64,
}

/// A limit: `algorithm` chooses `fixed` or one of the three sub-configs (the others are
/// ignored).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_limit_config {
    /// A `guards_limit_algorithm`.
    pub algorithm: u32,
    /// Always 0 (room for later use).
    pub reserved: u32,
    /// `FIXED`: the limit (1..=UINT64_MAX; UINT64_MAX: no limit; default UINT64_MAX).
    pub fixed: u64,
    /// Used when `algorithm` is `AIMD`.
    pub aimd: guards_aimd_config,
    /// Used when `algorithm` is `VEGAS`.
    pub vegas: guards_vegas_config,
    /// Used when `algorithm` is `GRADIENT`.
    pub gradient: guards_gradient_config,
}

impl guards_limit_config {
    /// `algorithm` set to core's `c`, every sub-config at its schema default and `fixed`
    /// at "no limit", then `c`'s own values.
    pub fn of_core(c: &LimitConfig) -> Self {
        use crate::schema::{AIMD, GRADIENT, VEGAS};
        let mut out = guards_limit_config {
            algorithm: c.algorithm() as u32,
            reserved: 0,
            fixed: u64::MAX,
            aimd: aimd_of_core(&AIMD.defaults()),
            vegas: vegas_of_core(&VEGAS.defaults()),
            gradient: gradient_of_core(&GRADIENT.defaults()),
        };
        match c {
            LimitConfig::Fixed(n) => out.fixed = *n,
            LimitConfig::Aimd(a) => out.aimd = aimd_of_core(a),
            LimitConfig::Vegas(v) => out.vegas = vegas_of_core(v),
            LimitConfig::Gradient(g) => out.gradient = gradient_of_core(g),
        }
        out
    }

    /// Core's limit config of the chosen algorithm, or `INVALID_ENUM` naming `field`.
    pub fn to_core(&self, field: &'static str) -> Result<LimitConfig, Failure> {
        let a = &self.aimd;
        let v = &self.vegas;
        let g = &self.gradient;
        Ok(match self.algorithm {
            0 => LimitConfig::Fixed(self.fixed),
            1 => LimitConfig::Aimd(AimdConfig {
                initial_limit: a.initial_limit,
                min_limit: a.min_limit,
                max_limit: a.max_limit,
                backoff_ratio: a.backoff_ratio,
                interval: Nanos(a.interval_ns),
                latency_target: Nanos(a.latency_target_ns),
            }),
            2 => LimitConfig::Vegas(VegasConfig {
                initial_limit: v.initial_limit,
                min_limit: v.min_limit,
                max_limit: v.max_limit,
                smoothing: v.smoothing,
                alpha: v.alpha,
                beta: v.beta,
                threshold: v.threshold,
                probe_multiplier: v.probe_multiplier,
                probe_jitter: v.probe_jitter,
                probe_seed: v.probe_seed,
            }),
            3 => LimitConfig::Gradient(GradientConfig {
                initial_limit: g.initial_limit,
                min_limit: g.min_limit,
                max_limit: g.max_limit,
                smoothing: g.smoothing,
                queue_size: g.queue_size,
                long_window: g.long_window,
                warmup_samples: g.warmup_samples,
            }),
            _ => {
                return Err(Failure::bad_enum(
                    field,
                    "a guards_limit_algorithm value, 0..=3",
                ))
            }
        })
    }
}

fn aimd_of_core(c: &AimdConfig) -> guards_aimd_config {
    guards_aimd_config {
        initial_limit: c.initial_limit,
        min_limit: c.min_limit,
        max_limit: c.max_limit,
        backoff_ratio: c.backoff_ratio,
        interval_ns: c.interval.0,
        latency_target_ns: c.latency_target.0,
    }
}

fn vegas_of_core(c: &VegasConfig) -> guards_vegas_config {
    guards_vegas_config {
        initial_limit: c.initial_limit,
        min_limit: c.min_limit,
        max_limit: c.max_limit,
        smoothing: c.smoothing,
        alpha: c.alpha,
        beta: c.beta,
        threshold: c.threshold,
        probe_multiplier: c.probe_multiplier,
        probe_jitter: c.probe_jitter,
        probe_seed: c.probe_seed,
    }
}

fn gradient_of_core(c: &GradientConfig) -> guards_gradient_config {
    guards_gradient_config {
        initial_limit: c.initial_limit,
        min_limit: c.min_limit,
        max_limit: c.max_limit,
        smoothing: c.smoothing,
        queue_size: c.queue_size,
        long_window: c.long_window,
        warmup_samples: c.warmup_samples,
    }
}

/// How one priority level shares the limit: admitted while the calls in flight (all
/// priorities) are below `min(max_in_flight, share == 1 ? limit : max(1, floor(limit ×
/// share)))`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_partition_config {
    /// Fraction of the limit this level may fill (default 1.0; 0 < x <= 1, at most the
    /// share of a more important level).
    pub share: f64,
    /// A fixed cap for this level (default UINT64_MAX: none; at most a more important
    /// level's).
    pub max_in_flight: u64,
}

/// A limiter's settings. Start from `guards_limiter_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_limiter_config {
    /// The limit (default Vegas).
    pub limit: guards_limit_config,
    /// Minimum length of a sampling window (default 100 ms; 1 ns..=1 day).
    pub window_ns: u64,
    /// Samples before a window is folded into the algorithm (default 10; 1..=1000000).
    pub min_window_samples: u64,
    /// Per priority level 0..=7 (0 most important).
    pub partitions: [guards_partition_config; 8],
    /// Lower bound of a refusal's retry-after hint (default 1 ms; 0..=1 day).
    pub min_retry_after_ns: u64,
    /// Upper bound of the hint (default 1 s; min_retry_after..=1 day).
    pub max_retry_after_ns: u64,
}

impl guards_limiter_config {
    /// The schema defaults (the limit: core's default, Vegas).
    pub fn of_defaults() -> Self {
        Self::of_core(&crate::schema::LIMITER.defaults())
    }

    /// Core's config, or `INVALID_ENUM` for an unknown algorithm.
    pub fn to_core(&self) -> Result<LimiterConfig, Failure> {
        Ok(LimiterConfig {
            limit: self.limit.to_core("limit.algorithm")?,
            window: Nanos(self.window_ns),
            min_window_samples: self.min_window_samples,
            partitions: self.partitions.map(|p| PartitionConfig {
                share: p.share,
                max_in_flight: p.max_in_flight,
            }),
            min_retry_after: Nanos(self.min_retry_after_ns),
            max_retry_after: Nanos(self.max_retry_after_ns),
        })
    }

    /// The C form of core's config.
    pub fn of_core(c: &LimiterConfig) -> Self {
        guards_limiter_config {
            limit: guards_limit_config::of_core(&c.limit),
            window_ns: c.window.0,
            min_window_samples: c.min_window_samples,
            partitions: c.partitions.map(|p| guards_partition_config {
                share: p.share,
                max_in_flight: p.max_in_flight,
            }),
            min_retry_after_ns: c.min_retry_after.0,
            max_retry_after_ns: c.max_retry_after.0,
        }
    }
}

/// A limiter's counters and gauges (relaxed snapshots, readable while traffic flows).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_limiter_stats {
    /// Calls admitted.
    pub acquired: u64,
    /// Refusals because the limit was reached.
    pub rejected_limit_reached: u64,
    /// Refusals because a priority's fixed cap was reached.
    pub rejected_partition_cap: u64,
    /// Refusals because the rest of the limit is reserved for higher priorities.
    pub rejected_reserved: u64,
    /// Refusals (any reason) by priority level.
    pub rejected_by_priority: [u64; 8],
    /// Permits given back as successes (RTT samples).
    pub succeeded: u64,
    /// Permits given back as drops (overload samples).
    pub dropped: u64,
    /// Permits given back without a sample.
    pub ignored: u64,
    /// Windows folded into the algorithm.
    pub windows: u64,
    /// Folds that changed the limit.
    pub limit_changes: u64,
    /// Due windows left to a thread already folding.
    pub folds_skipped: u64,
    /// The current limit.
    pub limit: u64,
    /// Calls in flight now.
    pub in_flight: u64,
}

impl From<LimiterStats> for guards_limiter_stats {
    fn from(s: LimiterStats) -> Self {
        guards_limiter_stats {
            acquired: s.acquired,
            rejected_limit_reached: s.rejected_limit_reached,
            rejected_partition_cap: s.rejected_partition_cap,
            rejected_reserved: s.rejected_reserved,
            rejected_by_priority: s.rejected_by_priority,
            succeeded: s.succeeded,
            dropped: s.dropped,
            ignored: s.ignored,
            windows: s.windows,
            limit_changes: s.limit_changes,
            folds_skipped: s.folds_skipped,
            limit: s.limit,
            in_flight: s.in_flight,
        }
    }
}

/// A concurrency limiter (opaque). Thread-safe and lock-free: share one handle.
#[derive(Debug)]
pub struct guards_limiter(GateHandle<Limiter>);

impl guards_limiter {
    /// Build from a C config.
    pub fn new(cfg: &guards_limiter_config) -> Result<Self, Failure> {
        GateHandle::new(cfg.to_core()?).map(guards_limiter)
    }

    /// Core's limiter (for the fleet agent).
    pub(crate) fn limiter(&self) -> &Limiter {
        &self.0.gate
    }
}

/// Write the default config to `out` (a Vegas limit, a 100 ms window, every priority
/// sharing the whole limit, retry-after hints of 1 ms..1 s).
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_limiter_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_config_default(
    out: *mut guards_limiter_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_limiter_config::of_defaults) }
}

/// Build a limiter from `config` into `*out`. Errors: `NULL_ARGUMENT`, `INVALID_ENUM`
/// (`limit.algorithm`), `CONFIG_*` naming the field (an algorithm's own field such as
/// `backoff_ratio`, `partitions[i].share`, ...), `OUT_OF_MEMORY`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_new(
    config: *const guards_limiter_config,
    out: *mut *mut guards_limiter,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { new_handle(config, out, guards_limiter::new) }
}

/// Free a limiter (NULL is a no-op). Its outstanding permits become invalid.
///
/// # Safety
/// `l` must be NULL or a handle from `guards_limiter_new` not freed before, and no other
/// thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_free(l: *mut guards_limiter) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(l) }
}

/// Admit a call of priority `priority` (0..=7, 0 most important) at `now_ns`:
/// `GUARDS_RESULT_OK` with a permit in `*out`, or a refusal
/// (`GUARDS_RESULT_LIMITER_LIMIT_REACHED`, `_LIMITER_PARTITION_CAP`, `_LIMITER_RESERVED`;
/// `guards_last_rejection` gives the retry-after hint). Errors: `INVALID_ARGUMENT`
/// (priority).
///
/// # Safety
/// `l` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_try_acquire(
    l: *mut guards_limiter,
    now_ns: u64,
    priority: u32,
    out: *mut guards_permit,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { hot_ref(l.cast_const()) }) else {
            return fail_arg(l.is_null(), "limiter");
        };
        if !hot_out_ok(out) {
            return fail_arg(out.is_null(), "out");
        }
        h.0.acquire_into(now_ns, priority, out)
    })
}

/// Give `permit` back with how the call ended (`outcome`: a `guards_outcome`) at `now_ns`,
/// by the call contract: success is an RTT sample (measured from the permit's start);
/// timeout, throttled and overloaded are drops (the overload signal); anything else frees
/// the slot without a sample. Once: again, or to another guard, is refused (`PERMIT_*`);
/// an invalid `outcome` leaves the permit outstanding.
///
/// # Safety
/// `l` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_report(
    l: *mut guards_limiter,
    permit: guards_permit,
    outcome: u32,
    now_ns: u64,
) -> GuardsResult {
    hot(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { hot_ref(l.cast_const()) }) else {
            return fail_arg(l.is_null(), "limiter");
        };
        h.0.report_code(&permit, outcome, now_ns)
    })
}

/// The counters and gauges (limit, in flight) into `*out`; safe while other threads use the
/// limiter.
///
/// # Safety
/// `l` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_get_stats(
    l: *const guards_limiter,
    out: *mut guards_limiter_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(l, "limiter", out, |l| l.0.gate.stats().into()) }
}

/// The config the limiter was built with.
///
/// # Safety
/// `l` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_get_config(
    l: *const guards_limiter,
    out: *mut guards_limiter_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(l, "limiter", out, |l| {
            guards_limiter_config::of_core(l.0.gate.config())
        })
    }
}

/// Permits issued and not yet reported, into `*out` (a scan; for tests and diagnostics).
///
/// # Safety
/// `l` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_outstanding(
    l: *const guards_limiter,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(l, "limiter", out, |l| l.0.permits.outstanding()) }
}

/// The threshold priority `priority` (0..=7) is held to now, into `*out`: a call of that
/// priority is admitted while fewer calls (of any priority) are in flight. Errors:
/// `INVALID_ARGUMENT` (priority).
///
/// # Safety
/// `l` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_threshold(
    l: *const guards_limiter,
    priority: u32,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(l, "limiter", out, |l| {
            Ok(l.0.gate.threshold(self::priority(priority)?))
        })
    }
}

/// The retry-after hint a refusal would carry now (a duration in ns, within
/// `min_retry_after_ns..=max_retry_after_ns`), into `*out`.
///
/// # Safety
/// `l` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limiter_retry_after(
    l: *const guards_limiter,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(l, "limiter", out, |l| l.0.gate.retry_after().0) }
}

/// A limit algorithm on its own (opaque): fixed, AIMD, Vegas or Gradient2 fed one sample
/// at a time, for a caller that runs its own admission (a `guards_limiter` runs one for
/// you, folding each window into it). Single-owner: use it from one thread at a time.
#[derive(Debug)]
pub struct guards_limit {
    limit: Limit,
}

impl guards_limit {
    /// Build from a C config.
    pub fn new(cfg: &guards_limit_config) -> Result<Self, Failure> {
        Ok(guards_limit {
            limit: Limit::new(cfg.to_core("algorithm")?)?,
        })
    }

    fn not_for(what: &'static str) -> Failure {
        Failure::argument(GuardsResult::InvalidArgument, "limit", what)
    }
}

/// Build a limit algorithm from `config` (`algorithm` and its sub-config) into `*out`, in
/// its initial state. Errors: `NULL_ARGUMENT`, `INVALID_ENUM` (`algorithm`), `CONFIG_*`
/// naming the algorithm's field (`backoff_ratio`, `smoothing`, ...), `OUT_OF_MEMORY`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limit_new(
    config: *const guards_limit_config,
    out: *mut *mut guards_limit,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { new_handle(config, out, guards_limit::new) }
}

/// Free a limit algorithm (NULL is a no-op).
///
/// # Safety
/// `l` must be NULL or a handle from `guards_limit_new` not freed before, and no other
/// thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_limit_free(l: *mut guards_limit) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(l) }
}

/// Feed one sample: a call that finished at `now_ns` after `rtt_ns`, started with
/// `in_flight` calls in flight, `dropped` if it timed out or was refused as overload. The
/// (possibly new) limit goes to `*out`. A fixed limit ignores samples.
///
/// # Safety
/// `l` must be NULL or a live handle no other thread uses during the call; `out` NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limit_update(
    l: *mut guards_limit,
    now_ns: u64,
    rtt_ns: u64,
    in_flight: u64,
    dropped: bool,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_mut_out(l, "limit", out, |l| {
            Ok(l.limit.update(LimitSample {
                now: Nanos(now_ns),
                rtt: Nanos(rtt_ns),
                in_flight,
                dropped,
            }))
        })
    }
}

/// The current limit (at least 1) into `*out`.
///
/// # Safety
/// `l` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limit_get_limit(
    l: *const guards_limit,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(l, "limit", out, |l| l.limit.limit()) }
}

/// The unrounded limit estimate (Vegas, Gradient2) into `*out`; `INVALID_ARGUMENT` for
/// another algorithm.
///
/// # Safety
/// `l` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limit_estimate(
    l: *const guards_limit,
    out: *mut f64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(l, "limit", out, |l| match &l.limit {
            Limit::Vegas(v) => Ok(v.estimate()),
            Limit::Gradient(g) => Ok(g.estimate()),
            _ => Err(guards_limit::not_for("a Vegas or Gradient2 limit")),
        })
    }
}

/// The smallest RTT seen since the last probe (Vegas; 0 before any sample), in ns, into
/// `*out`; `INVALID_ARGUMENT` for another algorithm.
///
/// # Safety
/// `l` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limit_min_rtt(
    l: *const guards_limit,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(l, "limit", out, |l| match &l.limit {
            Limit::Vegas(v) => Ok(v.min_rtt().0),
            _ => Err(guards_limit::not_for("a Vegas limit")),
        })
    }
}

/// The long-term RTT average (Gradient2), in ns as a float, into `*out`;
/// `INVALID_ARGUMENT` for another algorithm.
///
/// # Safety
/// `l` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limit_long_rtt(
    l: *const guards_limit,
    out: *mut f64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(l, "limit", out, |l| match &l.limit {
            Limit::Gradient(g) => Ok(g.long_rtt()),
            _ => Err(guards_limit::not_for("a Gradient2 limit")),
        })
    }
}

/// The config the limit was built with.
///
/// # Safety
/// `l` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_limit_get_config(
    l: *const guards_limit,
    out: *mut guards_limit_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(l, "limit", out, |l| {
            guards_limit_config::of_core(&l.limit.config())
        })
    }
}
