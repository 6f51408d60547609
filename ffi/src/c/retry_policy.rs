//! `guards_retry_policy`: core's `RetryPolicy` (retry or give up, after how long, and why)
//! with its own seedable jitter generator.
//!
//! For a whole request loop use the retry driver (`guards_retry_driver`), which asks this
//! policy after every attempt; `guards_retry_policy_decide` is the single decision, for a
//! caller that runs its own loop.
//!
//! ```c
//! guards_retry_policy_config cfg;
//! guards_retry_policy_config_default(&cfg);
//! cfg.max_attempts = 2;
//! guards_retry_policy *p;
//! guards_retry_policy_new(&cfg, &p);
//! guards_retry_context ctx;
//! guards_retry_context_default(&ctx);              /* no deadline, no Retry-After */
//! ctx.attempts_made = 1;
//! ctx.outcome = GUARDS_OUTCOME_TIMEOUT;
//! guards_retry_decision d;
//! guards_retry_policy_decide(p, guards_now_ns(), &ctx, NULL, &d);
//! if (d.kind == GUARDS_RETRY_DECISION_KIND_RETRY) { /* sleep d.after_ns, then retry */ }
//! guards_retry_policy_free(p);
//! ```

use super::backoff::guards_backoff_config;
use super::retry_budget::guards_retry_budget;
use super::{
    arg, call, call_out, config_default, free_handle, idempotency, new_handle, outcome, read,
    GUARDS_NO_DEADLINE, GUARDS_NO_RETRY_AFTER,
};
use crate::error::{Failure, GuardsResult};
use crate::handle::InPlace;
use crate::names::{
    Nanos, RetryContext, RetryDecision, RetryPolicy, RetryPolicyConfig, RetryPolicyStats, Rng,
    UnkeyedSideEffects,
};

/// What a policy does with a side effect that has no idempotency key
/// (`unkeyed_side_effects`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_unkeyed_side_effects {
    /// Never retry it (the default).
    Never = 0,
    /// Retry it only after a throttle (requires `retry_throttled`).
    RetryThrottled = 1,
}

/// A retry policy's settings. Start from `guards_retry_policy_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_retry_policy_config {
    /// Attempts per request, the first included (default 3; 1..=100).
    pub max_attempts: u32,
    /// Retry after a timeout (default true).
    pub retry_timeouts: bool,
    /// Retry after a connection error (default true).
    pub retry_connection_errors: bool,
    /// Retry after another transient error (default true).
    pub retry_other_transient: bool,
    /// Retry after being throttled (default true).
    pub retry_throttled: bool,
    /// Wait at least the server's Retry-After, and give up when it is longer than
    /// `max_retry_after_ns` (default true).
    pub honor_retry_after: bool,
    /// The longest Retry-After waited for (default 20 s; 0..=86400 s).
    pub max_retry_after_ns: u64,
    /// Do not start an attempt with less time left than this (default 1 ms; 0..=86400 s).
    pub min_attempt_time_ns: u64,
    /// A `guards_unkeyed_side_effects` (default `NEVER`).
    pub unkeyed_side_effects: u32,
    /// The backoff between attempts (errors name `backoff.<field>`).
    pub backoff: guards_backoff_config,
}

impl guards_retry_policy_config {
    /// The schema defaults.
    pub fn of_defaults() -> Self {
        Self::of_core(&crate::schema::RETRY_POLICY.defaults())
    }

    /// Core's config, or `INVALID_ENUM` for an unknown enum number.
    pub fn to_core(&self) -> Result<RetryPolicyConfig, Failure> {
        let unkeyed_side_effects = u8::try_from(self.unkeyed_side_effects)
            .ok()
            .and_then(|b| UnkeyedSideEffects::try_from(b).ok())
            .ok_or(Failure::bad_enum(
                "unkeyed_side_effects",
                "a guards_unkeyed_side_effects value, 0..=1",
            ))?;
        Ok(RetryPolicyConfig {
            max_attempts: self.max_attempts,
            retry_timeouts: self.retry_timeouts,
            retry_connection_errors: self.retry_connection_errors,
            retry_other_transient: self.retry_other_transient,
            retry_throttled: self.retry_throttled,
            honor_retry_after: self.honor_retry_after,
            max_retry_after: Nanos(self.max_retry_after_ns),
            min_attempt_time: Nanos(self.min_attempt_time_ns),
            unkeyed_side_effects,
            backoff: self.backoff.to_core_named("backoff.jitter")?,
        })
    }

    /// The C form of core's config.
    pub fn of_core(c: &RetryPolicyConfig) -> Self {
        guards_retry_policy_config {
            max_attempts: c.max_attempts,
            retry_timeouts: c.retry_timeouts,
            retry_connection_errors: c.retry_connection_errors,
            retry_other_transient: c.retry_other_transient,
            retry_throttled: c.retry_throttled,
            honor_retry_after: c.honor_retry_after,
            max_retry_after_ns: c.max_retry_after.0,
            min_attempt_time_ns: c.min_attempt_time.0,
            unkeyed_side_effects: c.unkeyed_side_effects as u32,
            backoff: guards_backoff_config::of_core(&c.backoff),
        }
    }
}

/// What a decision needs to know about the request. Start from
/// `guards_retry_context_default` (a zeroed context means "Retry-After 0" and "no time
/// left", not "none").
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct guards_retry_context {
    /// Attempts made so far, counting the one whose outcome this is (0 is read as 1).
    pub attempts_made: u32,
    /// What happened to that attempt: a `guards_outcome`.
    pub outcome: u32,
    /// Whether the call may be repeated: a `guards_idempotency`.
    pub idempotency: u32,
    /// Always 0 (room for later use).
    pub reserved: u32,
    /// The server's Retry-After that came with the outcome, a duration
    /// (`GUARDS_NO_RETRY_AFTER`: none; see `guards_http_outcome`).
    pub retry_after_ns: u64,
    /// Time left on the request's deadline (`GUARDS_NO_DEADLINE`: no deadline).
    pub time_left_ns: u64,
    /// The wait before the previous retry of this request (0 before the first).
    pub prev_delay_ns: u64,
}

impl guards_retry_context {
    /// Core's context, or `INVALID_ENUM` for an unknown outcome or idempotency.
    pub fn to_core(&self) -> Result<RetryContext, Failure> {
        Ok(
            RetryContext::new(self.attempts_made, outcome(self.outcome)?)
                .with_idempotency(idempotency(self.idempotency)?)
                .with_retry_after(none_if(self.retry_after_ns, GUARDS_NO_RETRY_AFTER))
                .with_time_left(none_if(self.time_left_ns, GUARDS_NO_DEADLINE))
                .with_prev_delay(Nanos(self.prev_delay_ns)),
        )
    }
}

/// `Some(Nanos(v))`, or `None` for the sentinel.
pub(crate) fn none_if(v: u64, sentinel: u64) -> Option<Nanos> {
    (v != sentinel).then_some(Nanos(v))
}

/// A retry decision's kind.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_retry_decision_kind {
    /// Retry after waiting `after_ns`.
    Retry = 0,
    /// Don't retry, for `give_up_reason`.
    GiveUp = 1,
}

/// A retry policy's answer.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_retry_decision {
    /// A `guards_retry_decision_kind`.
    pub kind: u32,
    /// `GIVE_UP`: a `guards_give_up_reason`; else 0.
    pub give_up_reason: u32,
    /// `RETRY`: how long to wait (pass it back as the next `prev_delay_ns`); else 0.
    pub after_ns: u64,
}

impl guards_retry_decision {
    fn of_core(d: RetryDecision) -> Self {
        match d {
            RetryDecision::Retry { after } => guards_retry_decision {
                kind: guards_retry_decision_kind::Retry as u32,
                give_up_reason: 0,
                after_ns: after.0,
            },
            RetryDecision::GiveUp(r) => guards_retry_decision {
                kind: guards_retry_decision_kind::GiveUp as u32,
                give_up_reason: r as u32,
                after_ns: 0,
            },
        }
    }
}

/// A retry policy's counters: one decision bumps exactly one of them.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_retry_policy_stats {
    /// Decisions to retry.
    pub retries: u64,
    /// Give-ups because the attempt succeeded.
    pub succeeded: u64,
    /// Give-ups on permanent errors.
    pub permanent: u64,
    /// Give-ups on "overloaded, don't retry".
    pub overloaded: u64,
    /// Give-ups on classes this config does not retry.
    pub not_retryable: u64,
    /// Give-ups at the attempt cap.
    pub attempts_exhausted: u64,
    /// Give-ups on side effects without a key.
    pub not_idempotent: u64,
    /// Give-ups on a too-long Retry-After.
    pub retry_after_too_long: u64,
    /// Give-ups because the deadline had no room for another attempt.
    pub deadline_exceeded: u64,
    /// Give-ups because the budget refused.
    pub budget_exhausted: u64,
    /// Give-ups because a guard of this process refused the attempt.
    pub rejected: u64,
    /// Give-ups on outcomes that say nothing about the dependency.
    pub ignored: u64,
    /// Give-ups because the caller abandoned the request.
    pub cancelled: u64,
}

impl From<RetryPolicyStats> for guards_retry_policy_stats {
    fn from(s: RetryPolicyStats) -> Self {
        guards_retry_policy_stats {
            retries: s.retries,
            succeeded: s.succeeded,
            permanent: s.permanent,
            overloaded: s.overloaded,
            not_retryable: s.not_retryable,
            attempts_exhausted: s.attempts_exhausted,
            not_idempotent: s.not_idempotent,
            retry_after_too_long: s.retry_after_too_long,
            deadline_exceeded: s.deadline_exceeded,
            budget_exhausted: s.budget_exhausted,
            rejected: s.rejected,
            ignored: s.ignored,
            cancelled: s.cancelled,
        }
    }
}

/// A retry policy and its jitter generator (opaque). Thread-safe: share one handle between
/// every request of a client.
#[derive(Debug)]
pub struct guards_retry_policy {
    policy: InPlace<RetryPolicy>,
    rng: Rng,
}

impl guards_retry_policy {
    /// Build from a C config, with a random seed.
    pub fn new(cfg: &guards_retry_policy_config) -> Result<Self, Failure> {
        Ok(guards_retry_policy {
            policy: InPlace::new(cfg.to_core()?)?,
            rng: Rng::new(crate::seed::random_seed()),
        })
    }

    /// Core's policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// The policy's generator.
    pub fn rng(&self) -> &Rng {
        &self.rng
    }
}

/// Write the default config to `out` (3 attempts, every transient class retried,
/// Retry-After honoured up to 20 s, the default backoff).
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_retry_policy_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_policy_config_default(
    out: *mut guards_retry_policy_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_retry_policy_config::of_defaults) }
}

/// Write the neutral context to `out`: 1 attempt made, outcome success, idempotent, no
/// Retry-After, no deadline, no previous wait.
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_retry_context`.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_context_default(
    out: *mut guards_retry_context,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        config_default(out, || guards_retry_context {
            attempts_made: 1,
            outcome: 0,
            idempotency: 0,
            reserved: 0,
            retry_after_ns: GUARDS_NO_RETRY_AFTER,
            time_left_ns: GUARDS_NO_DEADLINE,
            prev_delay_ns: 0,
        })
    }
}

/// Build a retry policy from `config` into `*out`, its generator seeded at random (call
/// `guards_retry_policy_reseed` for reproducible jitter). Errors: `NULL_ARGUMENT`,
/// `INVALID_ENUM` (`unkeyed_side_effects`, `backoff.jitter`), `CONFIG_*` naming the field,
/// `OUT_OF_MEMORY`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_policy_new(
    config: *const guards_retry_policy_config,
    out: *mut *mut guards_retry_policy,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { new_handle(config, out, guards_retry_policy::new) }
}

/// Free a retry policy (NULL is a no-op).
///
/// # Safety
/// `p` must be NULL or a handle from `guards_retry_policy_new` not freed before, and no
/// other thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_policy_free(p: *mut guards_retry_policy) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(p) }
}

/// Draw the next word from the policy's jitter generator (the word a decision that waits
/// draws for its backoff) into `*out`: with `guards_backoff_delay_from_bits` on the same
/// backoff config it records and replays a wait. The same seed gives the same words in
/// every language.
///
/// # Safety
/// `p` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_policy_next_u64(
    p: *mut guards_retry_policy,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(p, "policy", out, |p| p.rng.next_u64()) }
}

/// Restart the policy's jitter generator from `seed`.
///
/// # Safety
/// `p` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_policy_reseed(
    p: *mut guards_retry_policy,
    seed: u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(p, "policy", |p| {
            p.rng.reseed(seed);
            Ok(())
        })
    }
}

/// Decide what to do after an attempt at `now_ns` (`ctx`: what happened), into `*out`.
/// The rules run in core's order (outcome class, attempt cap, idempotency, wait from the
/// backoff or the Retry-After, deadline) and `budget`, if not NULL, is asked last and
/// charged only for a retry every other rule allowed (its receipt is not kept: the retry
/// driver keeps it for the AWS refund). Counts the decision. Errors: `INVALID_ENUM`
/// (`ctx.outcome`, `ctx.idempotency`).
///
/// # Safety
/// `p` must be NULL or a live handle; `ctx` NULL or valid for reads; `budget` NULL or a
/// live budget; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_policy_decide(
    p: *mut guards_retry_policy,
    now_ns: u64,
    ctx: *const guards_retry_context,
    budget: *mut guards_retry_budget,
    out: *mut guards_retry_decision,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(p, "policy", out, |p| {
            // SAFETY: the caller's contract.
            let ctx = arg(ctx, "ctx")?.to_core()?;
            let gate = if budget.is_null() {
                None
            } else {
                // SAFETY: non-null: a live budget (caller's contract).
                Some(arg(budget.cast_const(), "budget")?.budget())
            };
            let d = p.policy.decide(
                Nanos(now_ns),
                ctx,
                &p.rng,
                gate.map(|g| g as &dyn guards_core::retry_policy::RetryGate),
            );
            Ok(guards_retry_decision::of_core(d))
        })
    }
}

/// The counters into `*out`; safe while other threads use the policy.
///
/// # Safety
/// `p` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_policy_get_stats(
    p: *const guards_retry_policy,
    out: *mut guards_retry_policy_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(p, "policy", out, |p| p.policy.stats().into()) }
}

/// The config the policy was built with.
///
/// # Safety
/// `p` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_policy_get_config(
    p: *const guards_retry_policy,
    out: *mut guards_retry_policy_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(p, "policy", out, |p| {
            guards_retry_policy_config::of_core(p.policy.config())
        })
    }
}

/// The longest a request can take under this policy with attempts of `attempt_timeout_ns`:
/// every attempt timing out and every wait at its largest (to check that a policy fits a
/// deadline), into `*out` (saturating).
///
/// # Safety
/// `p` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_policy_worst_case_time(
    p: *const guards_retry_policy,
    attempt_timeout_ns: u64,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(p, "policy", out, |p| {
            p.policy.worst_case_time(Nanos(attempt_timeout_ns)).0
        })
    }
}
