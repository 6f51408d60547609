//! `guards_hedging`: core's hedging policy: send a second copy of an idempotent call once
//! it is slower than the tracked P95, paid for by the retry budget.
//!
//! ```c
//! guards_hedge_decision d;
//! guards_hedging_should_hedge(h, guards_now_ns(), started, hedges_sent, true, budget, &d);
//! if (d.kind == GUARDS_HEDGE_DECISION_KIND_HEDGE_NOW) { /* send the copy */ }
//! else if (d.kind == GUARDS_HEDGE_DECISION_KIND_WAIT_UNTIL) { /* ask again at d.wait_until_ns */ }
//! /* every attempt that completes: */
//! guards_hedging_report(h, guards_now_ns(), attempt_started, GUARDS_OUTCOME_SUCCESS);
//! ```

use super::latency_tracker::{guards_latency_tracker_config, no_data};
use super::retry_budget::guards_retry_budget;
use super::{arg, call, call_out, config_default, free_handle, new_handle, read};
use crate::error::GuardsResult;
use crate::handle::AnyHedging;
use crate::names::{HedgeDecision, HedgingConfig, HedgingStats, Nanos};

/// A hedging policy's settings. Start from `guards_hedging_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_hedging_config {
    /// Hedge a call slower than this quantile (default 0.95; 0 < q <= 1).
    pub delay_quantile: f64,
    /// Floor on the hedge delay (default 1 ms; 0..=1 h).
    pub min_delay_ns: u64,
    /// Ceiling on the hedge delay (default 10 s; min_delay..=1 h).
    pub max_delay_ns: u64,
    /// Most hedges per request (default 1; 0..=16, 0: off).
    pub max_hedges: u32,
    /// Always 0 (room for later use).
    pub reserved: u32,
    /// Samples needed before any hedge (default 100; 1..=10^9).
    pub min_samples: u64,
    /// How often the cached delay is recomputed (default 100 ms; 0..=1 min).
    pub refresh_interval_ns: u64,
    /// The policy's own latency tracker (errors name `tracker.<field>`).
    pub tracker: guards_latency_tracker_config,
}

impl guards_hedging_config {
    /// The schema defaults.
    pub fn of_defaults() -> Self {
        Self::of_core(&crate::schema::HEDGING.defaults())
    }

    /// Core's config (validated by core when the policy is built).
    pub fn to_core(&self) -> HedgingConfig {
        HedgingConfig {
            delay_quantile: self.delay_quantile,
            min_delay: Nanos(self.min_delay_ns),
            max_delay: Nanos(self.max_delay_ns),
            max_hedges: self.max_hedges,
            min_samples: self.min_samples,
            refresh_interval: Nanos(self.refresh_interval_ns),
            tracker: self.tracker.to_core(),
        }
    }

    /// The C form of core's config.
    pub fn of_core(c: &HedgingConfig) -> Self {
        guards_hedging_config {
            delay_quantile: c.delay_quantile,
            min_delay_ns: c.min_delay.0,
            max_delay_ns: c.max_delay.0,
            max_hedges: c.max_hedges,
            reserved: 0,
            min_samples: c.min_samples,
            refresh_interval_ns: c.refresh_interval.0,
            tracker: guards_latency_tracker_config::of_core(&c.tracker),
        }
    }
}

/// What to do about a request that has not answered yet (`kind`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_hedge_decision_kind {
    /// Send a hedge now (the budget has been charged).
    HedgeNow = 0,
    /// Not yet: ask again at `wait_until_ns` if there is still no answer.
    WaitUntil = 1,
    /// Don't hedge this request (any more), for `refusal`.
    Never = 2,
}

/// Why a request must not be hedged (`refusal`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_hedge_refusal {
    /// The call is not idempotent.
    NotIdempotent = 0,
    /// The request already has `max_hedges` hedges.
    LimitReached = 1,
    /// Fewer than `min_samples` latencies are tracked.
    NoLatencyData = 2,
    /// The retry budget refused the hedge.
    BudgetExhausted = 3,
}

/// A hedging decision.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_hedge_decision {
    /// A `guards_hedge_decision_kind`.
    pub kind: u32,
    /// `NEVER`: a `guards_hedge_refusal`; else 0.
    pub refusal: u32,
    /// `WAIT_UNTIL`: the instant to ask again; else 0.
    pub wait_until_ns: u64,
}

/// A hedging policy's counters.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_hedging_stats {
    /// Hedges allowed.
    pub hedges: u64,
    /// Decisions that said wait.
    pub deferred: u64,
    /// Refused: not idempotent.
    pub not_idempotent: u64,
    /// Refused: the per-request limit.
    pub limit_reached: u64,
    /// Refused: too few latency samples.
    pub no_latency_data: u64,
    /// Refused: the budget said no.
    pub budget_exhausted: u64,
}

impl From<HedgingStats> for guards_hedging_stats {
    fn from(s: HedgingStats) -> Self {
        guards_hedging_stats {
            hedges: s.hedges,
            deferred: s.deferred,
            not_idempotent: s.not_idempotent,
            limit_reached: s.limit_reached,
            no_latency_data: s.no_latency_data,
            budget_exhausted: s.budget_exhausted,
        }
    }
}

/// A hedging policy with its own latency tracker (opaque). Thread-safe and lock-free.
#[derive(Debug)]
pub struct guards_hedging {
    hedging: AnyHedging,
}

/// Write the default config to `out` (hedge after the P95, at most one hedge, after 100
/// samples).
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_hedging_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_hedging_config_default(
    out: *mut guards_hedging_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_hedging_config::of_defaults) }
}

/// Build a hedging policy from `config` into `*out`. Errors: `NULL_ARGUMENT`, `CONFIG_*`
/// naming the field, `OUT_OF_MEMORY`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_hedging_new(
    config: *const guards_hedging_config,
    out: *mut *mut guards_hedging,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        new_handle(config, out, |c| {
            Ok(guards_hedging {
                hedging: AnyHedging::new(c.to_core())?,
            })
        })
    }
}

/// Free a hedging policy (NULL is a no-op).
///
/// # Safety
/// `h` must be NULL or a handle from `guards_hedging_new` not freed before, and no other
/// thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_hedging_free(h: *mut guards_hedging) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(h) }
}

/// Should a request that started at `request_started_ns`, has sent `hedges_sent` hedges and
/// has no answer at `now_ns` be hedged? Checks idempotent, the per-request limit, enough
/// samples, whether hedge number `hedges_sent + 1` is due, and last `budget` (NULL: none),
/// charged only for a hedge that goes. The decision goes to `*out`.
///
/// # Safety
/// `h` must be NULL or a live handle; `budget` NULL or a live budget; `out` NULL or valid
/// for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_hedging_should_hedge(
    h: *mut guards_hedging,
    now_ns: u64,
    request_started_ns: u64,
    hedges_sent: u32,
    idempotent: bool,
    budget: *mut guards_retry_budget,
    out: *mut guards_hedge_decision,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(h, "hedging", out, |h| {
            let gate = if budget.is_null() {
                None
            } else {
                // SAFETY: non-null: a live budget (caller's contract).
                Some(arg(budget.cast_const(), "budget")?.budget())
            };
            let gate = gate.map(|g| g as &dyn guards_core::retry_policy::RetryGate);
            let d = with_hedging!(&h.hedging, h => h.should_hedge(
                Nanos(now_ns),
                Nanos(request_started_ns),
                hedges_sent,
                idempotent,
                gate,
            ));
            Ok(match d {
                HedgeDecision::HedgeNow => guards_hedge_decision {
                    kind: guards_hedge_decision_kind::HedgeNow as u32,
                    ..guards_hedge_decision::default()
                },
                HedgeDecision::WaitUntil(t) => guards_hedge_decision {
                    kind: guards_hedge_decision_kind::WaitUntil as u32,
                    refusal: 0,
                    wait_until_ns: t.0,
                },
                HedgeDecision::Never(r) => guards_hedge_decision {
                    kind: guards_hedge_decision_kind::Never as u32,
                    refusal: r as u32,
                    wait_until_ns: 0,
                },
            })
        })
    }
}

/// Record how an attempt (original or hedge) that started at `started_at_ns` ended at
/// `now_ns` (`outcome`: a `guards_outcome`), into the policy's tracker by the call
/// contract (as `guards_latency_tracker_report`).
///
/// # Safety
/// `h` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_hedging_report(
    h: *mut guards_hedging,
    now_ns: u64,
    started_at_ns: u64,
    outcome: u32,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(h, "hedging", |h| {
            let o = super::outcome(outcome)?;
            with_hedging!(&h.hedging, h => h.report(Nanos(now_ns), Nanos(started_at_ns), o));
            Ok(())
        })
    }
}

/// Record the latency of a completed attempt.
///
/// # Safety
/// `h` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_hedging_record_latency(
    h: *mut guards_hedging,
    now_ns: u64,
    latency_ns: u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(h, "hedging", |h| {
            with_hedging!(&h.hedging, h => h.record_latency(Nanos(now_ns), Nanos(latency_ns)));
            Ok(())
        })
    }
}

/// The current hedge delay at `now_ns` into `*out`; `GUARDS_RESULT_NO_DATA` below
/// `min_samples`.
///
/// # Safety
/// `h` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_hedging_hedge_delay(
    h: *mut guards_hedging,
    now_ns: u64,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(h, "hedging", out, |h| {
            with_hedging!(&h.hedging, h => h.hedge_delay(Nanos(now_ns)))
                .map(|d| d.0)
                .ok_or_else(no_data)
        })
    }
}

/// The counters into `*out`; safe while other threads use the policy.
///
/// # Safety
/// `h` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_hedging_get_stats(
    h: *const guards_hedging,
    out: *mut guards_hedging_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(h, "hedging", out, |h| {
            with_hedging!(&h.hedging, h => h.stats()).into()
        })
    }
}

/// The config the policy was built with.
///
/// # Safety
/// `h` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_hedging_get_config(
    h: *const guards_hedging,
    out: *mut guards_hedging_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(h, "hedging", out, |h| {
            guards_hedging_config::of_core(with_hedging!(&h.hedging, h => h.config()))
        })
    }
}
