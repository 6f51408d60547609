//! Retry policy: given what just happened to an attempt, retry (after how long) or give up
//! (and why).
//!
//! [`RetryPolicy::decide`] classifies the attempt's [`Outcome`], applies the attempt cap,
//! refuses to repeat a side effect that has no idempotency key, picks the wait (the
//! configured [`Backoff`], or the server's Retry-After when it
//! asks for longer), checks that the wait plus a useful attempt still fits in the
//! request's deadline, and only then asks an optional [`RetryGate`] (a retry budget) to
//! pay for the retry. The answer is a [`RetryDecision`]: `Retry { after }` or
//! `GiveUp(reason)`.
//!
//! # Why
//!
//! Retries multiply: three layers that each make 3 attempts send 27 calls to the bottom
//! one for a single user action. A retry policy decides *which* failures are worth a second
//! try (a timeout or a dropped connection may be; a permanent error or an "overloaded,
//! don't retry" never is), *how many* attempts a request may make, *when* (backoff and
//! jitter, or the server's Retry-After), and whether the request still has time for it.
//! A write is repeated only with the same idempotency key, so that the callee can return
//! the first result instead of acting twice: a timeout is an unknown, not a failure.
//!
//! # The decision, step by step
//!
//! Steps run in this order; the first that says no decides the [`GiveUpReason`]:
//!
//! 1. **Outcome class**, by the call contract ([`Outcome::retry`], the table in
//!    [`crate::outcome`]): [`Outcome::Success`] → `Succeeded`; [`Outcome::Permanent`] →
//!    `Permanent`; [`Outcome::Overloaded`] → `Overloaded`; [`Outcome::Rejected`] (a guard
//!    of this process refused) → `Rejected`; [`Outcome::Ignored`] → `Ignored`;
//!    [`Outcome::Cancelled`] → `Cancelled`; a transient or throttled outcome whose class the
//!    config does not retry (`retry_timeouts`, `retry_connection_errors`,
//!    `retry_other_transient`, `retry_throttled`) → `NotRetryable`.
//! 2. **Attempt cap.** `attempts_made` counts every attempt so far including the one that
//!    just failed (a value of 0 is read as 1). If `attempts_made >= max_attempts` →
//!    `AttemptsExhausted`.
//! 3. **Idempotency.** An [`Idempotency::UnkeyedSideEffect`] → `NotIdempotent`, except a
//!    throttled outcome when `unkeyed_side_effects` is
//!    [`UnkeyedSideEffects::RetryThrottled`].
//! 4. **Wait.** If the context carries a Retry-After (the server's, beside the outcome;
//!    [`crate::http`] reads one) and `honor_retry_after` is set: a Retry-After above
//!    `max_retry_after` → `RetryAfterTooLong` (no random draw is made). Otherwise the backoff wait for retry index `n = attempts_made − 1` is drawn
//!    (one draw from the `Rng` for a jittered backoff, none for
//!    [`Jitter::None`](crate::backoff::Jitter::None); `prev_delay` feeds decorrelated
//!    jitter), and `wait = max(backoff, retry_after)`.
//! 5. **Deadline.** With `time_left = Some(left)`: unless `wait + min_attempt_time < left`
//!    (strictly; saturating) → `DeadlineExceeded`. `None` means no deadline.
//! 6. **Gate.** If a gate is given, `gate.allow_retry(now, cause)` is asked last, so it
//!    charges only for a retry that every other rule allowed; `false` →
//!    `BudgetExhausted`. The cause is [`Outcome::cause`]: timeout → `Timeout`,
//!    connection error and other transient → `Transient`, throttled → `Throttled`.
//! 7. Otherwise `Retry { after: wait }`.
//!
//! **Retry-After: honour it or give up, never shorten it.** A server that says "not before
//! T" has told us a retry sooner would be refused, and it adds load exactly when the server
//! is shedding it; so the wait is never shorter than the Retry-After. But holding a
//! request (a thread, a connection) for minutes is its own overload (Little's law), so
//! when the server asks for longer than `max_retry_after` the policy gives up at once and
//! lets the caller answer its own caller instead of waiting.
//!
//! # Retry in one layer
//!
//! Retry only in the layer directly above the one that is failing, and let every other
//! layer pass the failure up. So when this policy gives up on a failure that was not
//! permanent (attempts exhausted, deadline, budget, a too-long Retry-After, an overloaded
//! callee, a local refusal, a side effect without a key, a class it does not retry), the
//! caller should answer *its* caller with "overloaded, don't retry" (for HTTP, a 503
//! marked not retryable, with a Retry-After), which that caller's policy classifies as
//! [`Outcome::Overloaded`] and does not retry. [`GiveUpReason::should_propagate_as_overloaded`] says when.
//!
//! # Concurrency and counters
//!
//! One `RetryPolicy` is shared by every request of a client (`&self`, `Sync`). It holds its
//! validated config and relaxed [`Counter`]s: one for retries and one per give-up reason,
//! each bumped exactly once per decision, read by [`RetryPolicy::stats`]. There is no
//! other shared state, so decisions never contend beyond that one `fetch_add` (and the
//! `Rng`'s draw, and whatever the gate does); the counters sit on their own cache lines so
//! their increments never evict the read-only config from another core. A stats snapshot reads the counters one by one:
//! under concurrent decisions it may include one decision's counter and not another's.
//!
//! # Examples
//!
//! ```
//! use guards_core::backoff::{BackoffConfig, Jitter};
//! use guards_core::retry_policy::{
//!     GiveUpReason, Idempotency, RetryContext, RetryDecision, RetryPolicy, RetryPolicyConfig,
//! };
//! use guards_core::{Nanos, Outcome, Rng};
//!
//! // Basketly's shop-api calling stock (C3): 2 attempts, full jitter from 25 ms.
//! let policy = RetryPolicy::new(RetryPolicyConfig {
//!     max_attempts: 2,
//!     backoff: BackoffConfig { base: Nanos::from_millis(25), ..BackoffConfig::default() },
//!     ..RetryPolicyConfig::default()
//! })?;
//! let rng = Rng::new(1);
//! let now = Nanos::from_secs(1);
//!
//! // The first attempt timed out; the request has 1.9 s left: retry within 0–25 ms.
//! let first = RetryContext::new(1, Outcome::Timeout)
//!     .with_idempotency(Idempotency::KeyedSideEffect)
//!     .with_time_left(Some(Nanos::from_millis(1_900)));
//! let RetryDecision::Retry { after } = policy.decide(now, first, &rng, None) else {
//!     panic!("a timeout of a keyed write is retried")
//! };
//! assert!(after <= Nanos::from_millis(25));
//!
//! // The second attempt timed out too: give up, and tell our caller not to retry.
//! let second = RetryContext::new(2, Outcome::Timeout).with_prev_delay(after);
//! let decision = policy.decide(now, second, &rng, None);
//! assert_eq!(decision, RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted));
//! assert!(GiveUpReason::AttemptsExhausted.should_propagate_as_overloaded());
//!
//! // An overloaded callee is never retried; a write without a key neither.
//! let overloaded = RetryContext::new(1, Outcome::Overloaded);
//! assert_eq!(policy.decide(now, overloaded, &rng, None).give_up_reason(), Some(GiveUpReason::Overloaded));
//! let unkeyed = RetryContext::new(1, Outcome::Timeout)
//!     .with_idempotency(Idempotency::UnkeyedSideEffect);
//! assert_eq!(policy.decide(now, unkeyed, &rng, None).give_up_reason(), Some(GiveUpReason::NotIdempotent));
//!
//! let stats = policy.stats();
//! assert_eq!((stats.retries, stats.attempts_exhausted, stats.overloaded, stats.not_idempotent), (1, 1, 1, 1));
//! # let _ = Jitter::Full;
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//!
//! - Google SRE book, "Handling Overload" and "Addressing Cascading Failures": retry only
//!   in the layer above the failing one, answer "overloaded; don't retry" otherwise, cap
//!   attempts per request and retries per client.
//! - AWS Builders' Library, "Timeouts, retries, and backoff with jitter" and "Making retries
//!   safe with idempotent APIs": retries amplify load (five layers of 3 attempts make 243
//!   calls); repeat side effects only with a client-chosen request identifier.
//! - AWS SDKs and Tools reference guide, "Retry behavior": transient, throttling and
//!   non-retryable error families; standard mode makes 3 attempts by default.
//! - RFC 9110 §10.2.3, `Retry-After`: how long the client ought to wait before a follow-up
//!   request.

use core::fmt;

use crate::backoff::{Backoff, BackoffConfig};
use crate::cache::CachePadded;
use crate::counter::Counter;
use crate::error::{check_nanos, check_u64, inconsistent, ConfigError};
use crate::outcome::{Outcome, RetryVerdict};
use crate::rng::Rng;
use crate::time::Nanos;

/// Why a retry is wanted. Gates that price retries by cause (the AWS retry quota charges
/// more for a timeout than for other transient errors) use it; others ignore it.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryCause {
    /// The attempt timed out (no answer).
    Timeout = 0,
    /// A transient error other than a timeout (connection reset, 5xx that may be retried).
    Transient = 1,
    /// The callee throttled the caller (429, or a throttling error code).
    Throttled = 2,
    /// A hedge: a second copy sent because the first is slow, not because it failed.
    Hedge = 3,
}

/// Something that can allow or refuse a retry (or hedge) right now, and pays for it if it
/// allows it: a retry budget, a retry quota, a throttle.
///
/// `allow_retry` must be lock-free and must only charge when it returns `true`.
pub trait RetryGate {
    /// May one retry caused by `cause` go at `now`? Returns `true` and charges its cost,
    /// or returns `false` and charges nothing.
    fn allow_retry(&self, now: Nanos, cause: RetryCause) -> bool;
}

named_enum!(RetryCause {
    Timeout => "timeout",
    Transient => "transient",
    Throttled => "throttled",
    Hedge => "hedge",
});

/// Whether repeating the call is safe.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Idempotency {
    /// A read, or a write that has the same effect however often it runs.
    #[default]
    Idempotent = 0,
    /// A side effect sent with the same idempotency key on every attempt, so the callee
    /// can return the first result instead of acting twice.
    KeyedSideEffect = 1,
    /// A side effect without a key: a retry after an unknown outcome may act twice.
    UnkeyedSideEffect = 2,
}

named_enum!(Idempotency {
    Idempotent => "idempotent",
    KeyedSideEffect => "keyed_side_effect",
    UnkeyedSideEffect => "unkeyed_side_effect",
});

/// What a policy may do with a side effect that has no idempotency key.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum UnkeyedSideEffects {
    /// Never retry it (the default): after a timeout or an error it may already have
    /// happened.
    #[default]
    Never = 0,
    /// Retry it only after a throttle, which refused the call before it acted. Choose
    /// this only if the callee guarantees that a throttled call had no effect.
    RetryThrottled = 1,
}

named_enum!(UnkeyedSideEffects {
    Never => "never",
    RetryThrottled => "retry_throttled",
});

/// Why a policy did not retry.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GiveUpReason {
    /// The attempt succeeded: nothing to retry.
    Succeeded = 0,
    /// A permanent error: a retry cannot fix it.
    Permanent = 1,
    /// The callee said it is overloaded and must not be retried.
    Overloaded = 2,
    /// A transient or throttled outcome whose class this config does not retry.
    NotRetryable = 3,
    /// `max_attempts` attempts have been made.
    AttemptsExhausted = 4,
    /// A side effect without an idempotency key.
    NotIdempotent = 5,
    /// The server's Retry-After is longer than `max_retry_after`.
    RetryAfterTooLong = 6,
    /// The wait plus a minimal attempt does not fit in the time left.
    DeadlineExceeded = 7,
    /// The retry gate (a retry budget) refused.
    BudgetExhausted = 8,
    /// A guard of this process refused the attempt ([`Outcome::Rejected`]): it never left,
    /// and retrying here would only be refused again (retry in one layer only).
    Rejected = 9,
    /// The outcome says nothing about the dependency ([`Outcome::Ignored`], the caller's
    /// own error): pass it up as it is.
    Ignored = 10,
    /// The caller abandoned the request ([`Outcome::Cancelled`]).
    Cancelled = 11,
}

named_enum!(GiveUpReason {
    Succeeded => "succeeded",
    Permanent => "permanent",
    Overloaded => "overloaded",
    NotRetryable => "not_retryable",
    AttemptsExhausted => "attempts_exhausted",
    NotIdempotent => "not_idempotent",
    RetryAfterTooLong => "retry_after_too_long",
    DeadlineExceeded => "deadline_exceeded",
    BudgetExhausted => "budget_exhausted",
    Rejected => "rejected",
    Ignored => "ignored",
    Cancelled => "cancelled",
});

/// How many [`GiveUpReason`]s there are.
pub const GIVE_UP_REASONS: usize = GiveUpReason::ALL.len();

impl GiveUpReason {
    /// Whether the caller should answer its own caller with "overloaded, don't retry"
    /// (the one-retry-layer rule): true for every reason except `Succeeded`, `Permanent`
    /// and `Ignored` (those are passed up as they are) and `Cancelled` (nobody is waiting
    /// for an answer).
    pub const fn should_propagate_as_overloaded(self) -> bool {
        !matches!(
            self,
            GiveUpReason::Succeeded
                | GiveUpReason::Permanent
                | GiveUpReason::Ignored
                | GiveUpReason::Cancelled
        )
    }
}

impl fmt::Display for GiveUpReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A retry policy's answer.
#[repr(C, u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryDecision {
    /// Retry after waiting `after` (pass it back as the next `prev_delay`).
    Retry {
        /// How long to wait before the next attempt.
        after: Nanos,
    } = 0,
    /// Don't retry, for this reason.
    GiveUp(GiveUpReason) = 1,
}

impl RetryDecision {
    /// Stable snake_case name of the variant: `"retry"`, `"give_up"`.
    pub const fn name(self) -> &'static str {
        match self {
            RetryDecision::Retry { .. } => "retry",
            RetryDecision::GiveUp(_) => "give_up",
        }
    }

    /// Whether to retry.
    pub const fn is_retry(self) -> bool {
        matches!(self, RetryDecision::Retry { .. })
    }

    /// The wait, if retrying.
    pub const fn after(self) -> Option<Nanos> {
        match self {
            RetryDecision::Retry { after } => Some(after),
            RetryDecision::GiveUp(_) => None,
        }
    }

    /// The reason, if giving up.
    pub const fn give_up_reason(self) -> Option<GiveUpReason> {
        match self {
            RetryDecision::GiveUp(reason) => Some(reason),
            RetryDecision::Retry { .. } => None,
        }
    }
}

/// Everything a decision needs to know about the request, apart from `now`, the random
/// generator and the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RetryContext {
    /// Attempts made so far, counting the one whose outcome this is (1 after the first
    /// attempt; 0 is read as 1).
    pub attempts_made: u32,
    /// What happened to that attempt.
    pub outcome: Outcome,
    /// The server's Retry-After that came with the outcome, as a duration (`None`: none).
    /// See [`crate::http::parse_retry_after`].
    pub retry_after: Option<Nanos>,
    /// Whether the call may be repeated.
    pub idempotency: Idempotency,
    /// Time left on the request's deadline at `now`, or `None` for no deadline
    /// (`Deadline::time_left` gives it; `Nanos::MAX` also means unlimited).
    pub time_left: Option<Nanos>,
    /// The wait before the previous retry of this request (`Nanos::ZERO` before the
    /// first); used by decorrelated jitter.
    pub prev_delay: Nanos,
}

impl RetryContext {
    /// A context for an idempotent call with no deadline and no previous wait.
    pub const fn new(attempts_made: u32, outcome: Outcome) -> Self {
        RetryContext {
            attempts_made,
            outcome,
            retry_after: None,
            idempotency: Idempotency::Idempotent,
            time_left: None,
            prev_delay: Nanos::ZERO,
        }
    }

    /// With the server's Retry-After (a duration; `None`: none).
    #[must_use]
    pub const fn with_retry_after(mut self, retry_after: Option<Nanos>) -> Self {
        self.retry_after = retry_after;
        self
    }

    /// With `idempotency`.
    #[must_use]
    pub const fn with_idempotency(mut self, idempotency: Idempotency) -> Self {
        self.idempotency = idempotency;
        self
    }

    /// With the request's time left (`None`: no deadline).
    #[must_use]
    pub const fn with_time_left(mut self, time_left: Option<Nanos>) -> Self {
        self.time_left = time_left;
        self
    }

    /// With the previous retry's wait.
    #[must_use]
    pub const fn with_prev_delay(mut self, prev_delay: Nanos) -> Self {
        self.prev_delay = prev_delay;
        self
    }
}

/// The largest [`RetryPolicyConfig::max_attempts`] accepted.
pub const MAX_ATTEMPTS_LIMIT: u32 = 100;

/// Default for [`RetryPolicyConfig::max_attempts`]: 3 attempts including the first (the
/// AWS SDKs' standard mode; Basketly's shop-api uses 2). Valid range:
/// `1..=MAX_ATTEMPTS_LIMIT` (1 never retries).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// The largest `max_retry_after` and `min_attempt_time` accepted: one day.
pub const MAX_WAIT: Nanos = Nanos::from_secs(86_400);

/// Default for [`RetryPolicyConfig::max_retry_after`]: 20 s (as long as the default
/// backoff cap). Valid range: `0..=MAX_WAIT`.
pub const DEFAULT_MAX_RETRY_AFTER: Nanos = Nanos::from_secs(20);

/// Default for [`RetryPolicyConfig::min_attempt_time`]: 1 ms. Valid range: `0..=MAX_WAIT`.
pub const DEFAULT_MIN_ATTEMPT_TIME: Nanos = Nanos::from_millis(1);

/// Configuration of a [`RetryPolicy`]. Plain `Copy` data.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicyConfig {
    /// Attempts per request, including the first. Default [`DEFAULT_MAX_ATTEMPTS`];
    /// valid `1..=MAX_ATTEMPTS_LIMIT`.
    pub max_attempts: u32,
    /// Retry [`Outcome::Timeout`]. Default `true`.
    pub retry_timeouts: bool,
    /// Retry [`Outcome::ConnectionError`]. Default `true`.
    pub retry_connection_errors: bool,
    /// Retry [`Outcome::OtherTransient`]. Default `true`.
    pub retry_other_transient: bool,
    /// Retry [`Outcome::Throttled`]. Default `true`.
    pub retry_throttled: bool,
    /// Wait at least the server's Retry-After (and give up when it exceeds
    /// `max_retry_after`). When `false`, Retry-After is ignored and only the backoff
    /// counts. Default `true`.
    pub honor_retry_after: bool,
    /// The longest Retry-After the policy waits for; a longer one gives up with
    /// [`GiveUpReason::RetryAfterTooLong`]. Default [`DEFAULT_MAX_RETRY_AFTER`];
    /// valid `0..=MAX_WAIT`.
    pub max_retry_after: Nanos,
    /// The least time worth starting an attempt with: a retry goes only if
    /// `wait + min_attempt_time < time_left`. Default [`DEFAULT_MIN_ATTEMPT_TIME`];
    /// valid `0..=MAX_WAIT`.
    pub min_attempt_time: Nanos,
    /// What to do with a side effect that has no idempotency key. Default
    /// [`UnkeyedSideEffects::Never`]; `RetryThrottled` requires `retry_throttled`.
    pub unkeyed_side_effects: UnkeyedSideEffects,
    /// The backoff between attempts (fields reported as `backoff.<field>`).
    pub backoff: BackoffConfig,
}

impl Default for RetryPolicyConfig {
    fn default() -> Self {
        RetryPolicyConfig {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            retry_timeouts: true,
            retry_connection_errors: true,
            retry_other_transient: true,
            retry_throttled: true,
            honor_retry_after: true,
            max_retry_after: DEFAULT_MAX_RETRY_AFTER,
            min_attempt_time: DEFAULT_MIN_ATTEMPT_TIME,
            unkeyed_side_effects: UnkeyedSideEffects::Never,
            backoff: BackoffConfig::default(),
        }
    }
}

impl RetryPolicyConfig {
    /// Check every field; the error names the first bad one, in declaration order, with
    /// the embedded backoff's fields spelled `backoff.base`, `backoff.cap`,
    /// `backoff.multiplier`. `unkeyed_side_effects = RetryThrottled` with
    /// `retry_throttled = false` is `inconsistent`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_u64(
            "max_attempts",
            u64::from(self.max_attempts),
            1,
            u64::from(MAX_ATTEMPTS_LIMIT),
            "1..=100",
        )?;
        check_nanos(
            "max_retry_after",
            self.max_retry_after,
            Nanos::ZERO,
            MAX_WAIT,
            "0..=86400 s",
        )?;
        check_nanos(
            "min_attempt_time",
            self.min_attempt_time,
            Nanos::ZERO,
            MAX_WAIT,
            "0..=86400 s",
        )?;
        if self.unkeyed_side_effects == UnkeyedSideEffects::RetryThrottled && !self.retry_throttled
        {
            return Err(inconsistent(
                "unkeyed_side_effects",
                "retry_throttled must be true to retry throttled side effects",
            ));
        }
        self.backoff.validate().map_err(|e| {
            let field = match e.field() {
                "base" => "backoff.base",
                "cap" => "backoff.cap",
                "multiplier" => "backoff.multiplier",
                _ => "backoff",
            };
            ConfigError::new(field, e.kind(), e.expected())
        })
    }
}

/// A snapshot of a [`RetryPolicy`]'s counters: one decision bumps exactly one of them.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RetryPolicyStats {
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
    /// Give-ups because the gate refused.
    pub budget_exhausted: u64,
    /// Give-ups because a guard of this process refused the attempt.
    pub rejected: u64,
    /// Give-ups on outcomes that say nothing about the dependency.
    pub ignored: u64,
    /// Give-ups because the caller abandoned the request.
    pub cancelled: u64,
}

impl RetryPolicyStats {
    /// The count for one give-up reason.
    pub const fn give_ups(&self, reason: GiveUpReason) -> u64 {
        match reason {
            GiveUpReason::Succeeded => self.succeeded,
            GiveUpReason::Permanent => self.permanent,
            GiveUpReason::Overloaded => self.overloaded,
            GiveUpReason::NotRetryable => self.not_retryable,
            GiveUpReason::AttemptsExhausted => self.attempts_exhausted,
            GiveUpReason::NotIdempotent => self.not_idempotent,
            GiveUpReason::RetryAfterTooLong => self.retry_after_too_long,
            GiveUpReason::DeadlineExceeded => self.deadline_exceeded,
            GiveUpReason::BudgetExhausted => self.budget_exhausted,
            GiveUpReason::Rejected => self.rejected,
            GiveUpReason::Ignored => self.ignored,
            GiveUpReason::Cancelled => self.cancelled,
        }
    }

    /// Every decision counted: retries plus every give-up (wrapping like the counters).
    pub fn decisions(&self) -> u64 {
        GiveUpReason::ALL
            .into_iter()
            .fold(self.retries, |sum, r| sum.wrapping_add(self.give_ups(r)))
    }
}

/// A retry policy shared by every request of a client: config plus counters.
///
/// `#[repr(C)]`, no pointers; every method takes `&self` and is lock-free (relaxed counter
/// increments only). See the [module docs](self) for the decision rules.
///
/// All bytes zero is a valid, unconfigured `RetryPolicy` (at most 0 attempts: it never
/// retries): safe to call, meant to be [`reset`](RetryPolicy::reset) before use; see
/// "Building in place" in the crate docs.
#[repr(C)]
#[derive(Debug)]
pub struct RetryPolicy {
    config: RetryPolicyConfig,
    backoff: Backoff,
    counters: CachePadded<Counters>,
}

/// The counters, on their own cache lines: every decision writes one of them, and keeping
/// them apart from the read-only config stops one thread's increment from evicting the
/// config another thread is reading.
#[repr(C)]
#[derive(Debug)]
struct Counters {
    retries: Counter,
    give_ups: [Counter; GIVE_UP_REASONS],
}

impl RetryPolicy {
    /// A policy with `config`, or the first invalid field.
    pub fn new(config: RetryPolicyConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(RetryPolicy {
            config,
            backoff: Backoff::new(config.backoff)?,
            counters: CachePadded::new(Counters {
                retries: Counter::new(),
                give_ups: core::array::from_fn(|_| Counter::new()),
            }),
        })
    }

    /// Validate `config`, then put this policy in exactly the state
    /// [`RetryPolicy::new`]`(config)` gives (zeroed counters), in place. On error nothing
    /// changes.
    pub fn reset(&mut self, config: RetryPolicyConfig) -> Result<(), ConfigError> {
        config.validate()?;
        self.backoff = Backoff::new(config.backoff)?;
        self.config = config;
        self.counters.retries.reset();
        for c in &mut self.counters.give_ups {
            c.reset();
        }
        Ok(())
    }

    /// The configuration.
    pub const fn config(&self) -> &RetryPolicyConfig {
        &self.config
    }

    /// The policy's backoff (validated with the config).
    pub const fn backoff(&self) -> Backoff {
        self.backoff
    }

    /// Decide what to do after an attempt; see the [module docs](self) for the order of
    /// the rules. Counts the decision. `gate`, if given, is asked last and charged only
    /// when it allows the retry.
    pub fn decide(
        &self,
        now: Nanos,
        ctx: RetryContext,
        rng: &Rng,
        gate: Option<&dyn RetryGate>,
    ) -> RetryDecision {
        let decision = self.evaluate(now, ctx, rng, gate);
        match decision {
            RetryDecision::Retry { .. } => self.counters.retries.incr(),
            RetryDecision::GiveUp(reason) => {
                if let Some(c) = self.counters.give_ups.get(reason as usize) {
                    c.incr();
                }
            }
        }
        decision
    }

    fn evaluate(
        &self,
        now: Nanos,
        ctx: RetryContext,
        rng: &Rng,
        gate: Option<&dyn RetryGate>,
    ) -> RetryDecision {
        use GiveUpReason as R;
        let c = &self.config;
        let give_up = RetryDecision::GiveUp;
        // 1. Outcome class, by the call contract, then this config's switches.
        let cause = match ctx.outcome.retry() {
            RetryVerdict::GiveUp(reason) => return give_up(reason),
            RetryVerdict::Retry(cause) => cause,
        };
        let enabled = match ctx.outcome {
            Outcome::Timeout => c.retry_timeouts,
            Outcome::ConnectionError => c.retry_connection_errors,
            Outcome::OtherTransient => c.retry_other_transient,
            Outcome::Throttled => c.retry_throttled,
            _ => false,
        };
        if !enabled {
            return give_up(R::NotRetryable);
        }
        // 2. Attempt cap.
        let made = ctx.attempts_made.max(1);
        if made >= c.max_attempts {
            return give_up(R::AttemptsExhausted);
        }
        // 3. Idempotency.
        if ctx.idempotency == Idempotency::UnkeyedSideEffect
            && !(c.unkeyed_side_effects == UnkeyedSideEffects::RetryThrottled
                && cause == RetryCause::Throttled)
        {
            return give_up(R::NotIdempotent);
        }
        // 4. Wait: backoff, or the server's Retry-After when it is longer.
        let retry_after = if c.honor_retry_after {
            ctx.retry_after
        } else {
            None
        };
        if let Some(ra) = retry_after {
            if ra > c.max_retry_after {
                return give_up(R::RetryAfterTooLong);
            }
        }
        let backoff = self.backoff().delay(made - 1, ctx.prev_delay, rng);
        let wait = match retry_after {
            Some(ra) => backoff.max(ra),
            None => backoff,
        };
        // 5. Deadline: the wait plus a minimal attempt must fit, strictly.
        if let Some(left) = ctx.time_left {
            if wait.saturating_add(c.min_attempt_time) >= left {
                return give_up(R::DeadlineExceeded);
            }
        }
        // 6. Gate, last: it charges only for a retry everything else allowed.
        if let Some(g) = gate {
            if !g.allow_retry(now, cause) {
                return give_up(R::BudgetExhausted);
            }
        }
        RetryDecision::Retry { after: wait }
    }

    /// The longest a request can take under this policy when every attempt uses its whole
    /// `attempt_timeout` and every wait is the backoff's largest: `max_attempts ×
    /// attempt_timeout + Σ max_delay(n)` for `n` in `0..max_attempts − 1` (saturating).
    /// Retry-After waits are not included (each is bounded by `max_retry_after`). Check it
    /// against the deadline of the layer above.
    pub fn worst_case_time(&self, attempt_timeout: Nanos) -> Nanos {
        let backoff = self.backoff();
        let attempts = attempt_timeout.saturating_mul(u64::from(self.config.max_attempts));
        (0..self.config.max_attempts.saturating_sub(1))
            .fold(attempts, |sum, n| sum.saturating_add(backoff.max_delay(n)))
    }

    /// A snapshot of the counters (relaxed reads, one by one).
    pub fn stats(&self) -> RetryPolicyStats {
        let g = |r: GiveUpReason| {
            self.counters
                .give_ups
                .get(r as usize)
                .map_or(0, Counter::get)
        };
        RetryPolicyStats {
            retries: self.counters.retries.get(),
            succeeded: g(GiveUpReason::Succeeded),
            permanent: g(GiveUpReason::Permanent),
            overloaded: g(GiveUpReason::Overloaded),
            not_retryable: g(GiveUpReason::NotRetryable),
            attempts_exhausted: g(GiveUpReason::AttemptsExhausted),
            not_idempotent: g(GiveUpReason::NotIdempotent),
            retry_after_too_long: g(GiveUpReason::RetryAfterTooLong),
            deadline_exceeded: g(GiveUpReason::DeadlineExceeded),
            budget_exhausted: g(GiveUpReason::BudgetExhausted),
            rejected: g(GiveUpReason::Rejected),
            ignored: g(GiveUpReason::Ignored),
            cancelled: g(GiveUpReason::Cancelled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::Jitter;
    use core::cell::Cell;

    struct Scripted {
        allow: bool,
        calls: Cell<u32>,
    }

    impl RetryGate for Scripted {
        fn allow_retry(&self, _now: Nanos, _cause: RetryCause) -> bool {
            self.calls.set(self.calls.get() + 1);
            self.allow
        }
    }

    fn fixed(max_attempts: u32, wait_ms: u64) -> RetryPolicy {
        RetryPolicy::new(RetryPolicyConfig {
            max_attempts,
            backoff: BackoffConfig {
                base: Nanos::from_millis(wait_ms),
                cap: Nanos::from_secs(10),
                multiplier: 2.0,
                jitter: Jitter::None,
            },
            ..RetryPolicyConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn gate_is_asked_only_when_everything_else_said_yes() {
        let p = fixed(3, 10);
        let rng = Rng::new(0);
        let refuse = Scripted {
            allow: false,
            calls: Cell::new(0),
        };
        let ctx = RetryContext::new(3, Outcome::Timeout);
        assert_eq!(
            p.decide(Nanos(0), ctx, &rng, Some(&refuse)),
            RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted)
        );
        let ctx =
            RetryContext::new(1, Outcome::Timeout).with_time_left(Some(Nanos::from_millis(5)));
        assert_eq!(
            p.decide(Nanos(0), ctx, &rng, Some(&refuse)),
            RetryDecision::GiveUp(GiveUpReason::DeadlineExceeded)
        );
        assert_eq!(refuse.calls.get(), 0);
        let ctx = RetryContext::new(1, Outcome::Timeout);
        assert_eq!(
            p.decide(Nanos(0), ctx, &rng, Some(&refuse)),
            RetryDecision::GiveUp(GiveUpReason::BudgetExhausted)
        );
        assert_eq!(refuse.calls.get(), 1);
        let allow = Scripted {
            allow: true,
            calls: Cell::new(0),
        };
        assert_eq!(
            p.decide(
                Nanos(0),
                ctx.with_idempotency(Idempotency::KeyedSideEffect),
                &rng,
                Some(&allow)
            ),
            RetryDecision::Retry {
                after: Nanos::from_millis(10)
            }
        );
        assert_eq!(allow.calls.get(), 1);
    }

    #[test]
    fn retry_after_waits_longer_never_shorter() {
        let p = fixed(3, 10);
        let rng = Rng::new(0);
        let throttled = |ra: u64| {
            RetryContext::new(1, Outcome::Throttled).with_retry_after(Some(Nanos::from_millis(ra)))
        };
        assert_eq!(
            p.decide(Nanos(0), throttled(3), &rng, None).after(),
            Some(Nanos::from_millis(10))
        );
        assert_eq!(
            p.decide(Nanos(0), throttled(300), &rng, None).after(),
            Some(Nanos::from_millis(300))
        );
        assert_eq!(
            p.decide(Nanos(0), throttled(20_001), &rng, None)
                .give_up_reason(),
            Some(GiveUpReason::RetryAfterTooLong)
        );
        assert_eq!(
            p.decide(Nanos(0), throttled(20_000), &rng, None).after(),
            Some(Nanos::from_secs(20))
        );
    }

    #[test]
    fn attempts_zero_reads_as_one() {
        let p = fixed(2, 10);
        let rng = Rng::new(0);
        assert_eq!(
            p.decide(Nanos(0), RetryContext::new(0, Outcome::Timeout), &rng, None),
            RetryDecision::Retry {
                after: Nanos::from_millis(10)
            }
        );
    }

    #[test]
    fn basketly_sum_fits_the_app_deadline() {
        // Basketly's C2 (docs/basketly.md): 2 attempts x 60 ms plus at most 25 ms of backoff
        // = 145 ms.
        let p = RetryPolicy::new(RetryPolicyConfig {
            max_attempts: 2,
            backoff: BackoffConfig {
                base: Nanos::from_millis(25),
                ..BackoffConfig::default()
            },
            ..RetryPolicyConfig::default()
        })
        .unwrap();
        assert_eq!(
            p.worst_case_time(Nanos::from_millis(60)),
            Nanos::from_millis(145)
        );
    }

    #[test]
    fn validation() {
        let d = RetryPolicyConfig::default();
        let field = |c: RetryPolicyConfig| c.validate().unwrap_err().field();
        assert_eq!(
            field(RetryPolicyConfig {
                max_attempts: 0,
                ..d
            }),
            "max_attempts"
        );
        assert_eq!(
            field(RetryPolicyConfig {
                max_attempts: 101,
                ..d
            }),
            "max_attempts"
        );
        assert_eq!(
            field(RetryPolicyConfig {
                max_retry_after: Nanos::MAX,
                ..d
            }),
            "max_retry_after"
        );
        assert_eq!(
            field(RetryPolicyConfig {
                min_attempt_time: Nanos::MAX,
                ..d
            }),
            "min_attempt_time"
        );
        assert_eq!(
            field(RetryPolicyConfig {
                unkeyed_side_effects: UnkeyedSideEffects::RetryThrottled,
                retry_throttled: false,
                ..d
            }),
            "unkeyed_side_effects"
        );
        let bad_backoff = BackoffConfig {
            multiplier: f64::INFINITY,
            ..BackoffConfig::default()
        };
        let e = RetryPolicyConfig {
            backoff: bad_backoff,
            ..d
        }
        .validate()
        .unwrap_err();
        assert_eq!(
            (e.field(), e.kind().name()),
            ("backoff.multiplier", "not_finite")
        );
        assert!(d.validate().is_ok());
    }

    #[test]
    fn names_round_trip() {
        for r in GiveUpReason::ALL {
            assert_eq!(GiveUpReason::ALL[r as usize], r);
        }
        for name in [
            "success",
            "timeout",
            "connection_error",
            "other_transient",
            "throttled",
            "overloaded",
            "permanent",
        ] {
            assert_eq!(Outcome::from_name(name).unwrap().name(), name);
        }
        assert_eq!(Outcome::from_name("nope"), None);
        assert_eq!(
            Idempotency::from_name("keyed_side_effect"),
            Some(Idempotency::KeyedSideEffect)
        );
        assert_eq!(
            UnkeyedSideEffects::from_name("retry_throttled"),
            Some(UnkeyedSideEffects::RetryThrottled)
        );
        assert!(!GiveUpReason::Permanent.should_propagate_as_overloaded());
        assert!(GiveUpReason::BudgetExhausted.should_propagate_as_overloaded());
    }
}
