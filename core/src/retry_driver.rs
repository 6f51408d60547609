//! [`RetryDriver`]: the retry loop of one request as a sans-IO state machine, so that a
//! binding only sleeps and calls.
//!
//! Every retry loop is the same: take an attempt budget from the request's deadline, make
//! the attempt, classify how it ended, tell the retry budget, ask the policy, then wait and
//! go again or give up. Written in each binding it drifts (which outcome pays the budget,
//! whether the deadline is checked after the wait, what a cancellation does); here it is
//! written once. The driver decides; the binding acts:
//!
//! ```text
//!            start(now)                 report(now, outcome, retry_after)
//!   Idle ───────────────▶ Attempting ─────────────────────────────────▶ Succeeded
//!     │                      ▲   │                                   ├─▶ GaveUp(reason)
//!     │ (deadline passed)    │   ▼ Wait { retry_at, retry_after }
//!     └────▶ GaveUp          └── Waiting ◀── resume(now) before retry_at: Wait again
//!                                  │ resume(now) at/after retry_at, no time left
//!                                  └──────────────────────────────▶ GaveUp(deadline_exceeded)
//! ```
//!
//! - [`start`](RetryDriver::start) deposits the first attempt in the budget and returns the
//!   first [`Attempt`]: its number, its budget `min(attempt_timeout, time left) − margin`
//!   ([`DeadlineConfig::attempt_budget`]) and the instant it expires at — or gives up with
//!   [`GiveUpReason::DeadlineExceeded`] when the request has no time left for one.
//! - [`report`](RetryDriver::report) takes how the attempt ended (an [`Outcome`] and the
//!   server's Retry-After, if any). It tells the retry budget first, by the call contract
//!   ([`Budget::report`]: gRPC throttling's success or
//!   failure, the AWS quota's refund of the retry's receipt or its success increment), then
//!   asks the [`RetryPolicy`] (attempt cap, idempotency, backoff or Retry-After, deadline,
//!   and the budget last, whose receipt the driver keeps for the refund). The answer is
//!   [`RetryStep::Wait`] (`retry_at`, an instant, and `retry_after`, the same wait as a
//!   duration), [`RetryStep::Succeeded`] or [`RetryStep::GiveUp`].
//! - After sleeping, [`resume`](RetryDriver::resume) gives the next attempt, or gives up
//!   with `DeadlineExceeded` if the request's time ran out meanwhile. Woken early, it says
//!   to wait again for the rest.
//! - [`cancel`](RetryDriver::cancel) ends the request from any phase that is not final:
//!   the caller abandoned it ([`GiveUpReason::Cancelled`]); a cancelled call tells no budget
//!   anything (see [`crate::outcome`]).
//!
//! A call in the wrong phase (a `report` with no attempt out, a `resume` while attempting,
//! anything after the end) returns [`RetryDriverError`] and changes nothing; nothing here
//! panics.
//!
//! The driver is plain `#[repr(C)]` data owned by one request: `&mut self`, no references
//! kept (the policy, the generator and the budget are passed to each call), so a C caller
//! can hold it by value. All bytes zero is a valid driver in the `Idle` phase with an
//! expired deadline (its `start` gives up at once); build a real one with
//! [`RetryDriver::new`].
//!
//! # Examples
//! ```
//! use guards_core::backoff::{BackoffConfig, Jitter};
//! use guards_core::deadline::{Deadline, DeadlineConfig};
//! use guards_core::retry_budget::{RetryBudget, RetryBudgetConfig};
//! use guards_core::retry_driver::{RetryDriver, RetryStep};
//! use guards_core::retry_policy::{GiveUpReason, Idempotency, RetryPolicy, RetryPolicyConfig};
//! use guards_core::{Nanos, Outcome, Rng};
//!
//! let ms = Nanos::from_millis;
//! let policy = RetryPolicy::new(RetryPolicyConfig {
//!     backoff: BackoffConfig { base: ms(25), jitter: Jitter::None, ..BackoffConfig::default() },
//!     ..RetryPolicyConfig::default()
//! })?;
//! let budget: RetryBudget = RetryBudget::new(RetryBudgetConfig::default())?;
//! let rng = Rng::new(1);
//! let now = ms(1_000);
//! // A request with 2 s left; each attempt gets at most 60 ms (minus a 1 ms margin).
//! let mut d = RetryDriver::new(
//!     Deadline::after(now, ms(2_000)),
//!     Idempotency::Idempotent,
//!     DeadlineConfig::new(ms(60), ms(1))?,
//! )?;
//! let RetryStep::Attempt(a) = d.start(now, Some(&budget))? else { unreachable!() };
//! assert_eq!((a.number, a.budget, a.expires_at), (1, ms(59), ms(1_059)));
//!
//! // It timed out: wait 25 ms (the backoff), then attempt again.
//! let step = d.report(ms(1_059), Outcome::Timeout, None, &policy, &rng, Some(&budget))?;
//! let RetryStep::Wait(w) = step else { unreachable!() };
//! assert_eq!((w.retry_at, w.retry_after), (ms(1_084), ms(25)));
//! let RetryStep::Attempt(a) = d.resume(ms(1_084))? else { unreachable!() };
//! assert_eq!(a.number, 2);
//!
//! // The server said "429, come back in 5 s": that does not fit in the time left.
//! let step = d.report(ms(1_100), Outcome::Throttled, Some(ms(5_000)), &policy, &rng, Some(&budget))?;
//! assert_eq!(step, RetryStep::GiveUp(GiveUpReason::DeadlineExceeded));
//! assert_eq!((d.attempts(), d.retries()), (2, 1));
//! assert!(d.report(ms(1_200), Outcome::Success, None, &policy, &rng, None).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # References
//!
//! - AWS SDKs, standard retry mode: the attempt loop with a retry quota, refunds on
//!   success.
//! - gRPC proposal A6: per-attempt outcomes feed retry throttling.
//! - Google SRE book, "Addressing Cascading Failures": deadlines checked before every
//!   attempt.

use core::cell::Cell;
use core::fmt;

use crate::deadline::{AttemptBudget, Deadline, DeadlineConfig};
use crate::error::ConfigError;
use crate::outcome::Outcome;
use crate::retry_budget::{Budget, RetryReceipt};
use crate::retry_policy::{
    GiveUpReason, Idempotency, RetryCause, RetryContext, RetryDecision, RetryGate, RetryPolicy,
};
use crate::rng::Rng;
use crate::time::Nanos;

/// Where a [`RetryDriver`] is.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryPhase {
    /// Built, not started (`start` next).
    Idle = 0,
    /// An attempt is out (`report` next).
    Attempting = 1,
    /// Waiting before the next attempt (`resume` next).
    Waiting = 2,
    /// Finished: an attempt succeeded.
    Succeeded = 3,
    /// Finished: gave up (see [`RetryDriver::give_up_reason`]).
    GaveUp = 4,
}

named_enum!(RetryPhase {
    Idle => "idle",
    Attempting => "attempting",
    Waiting => "waiting",
    Succeeded => "succeeded",
    GaveUp => "gave_up",
});

impl RetryPhase {
    /// Whether the request is over (`Succeeded` or `GaveUp`).
    pub const fn is_final(self) -> bool {
        matches!(self, RetryPhase::Succeeded | RetryPhase::GaveUp)
    }
}

/// An attempt to make now.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Attempt {
    /// 1 for the first attempt, 2 for the first retry, ...
    pub number: u32,
    /// A duration: how long to wait for this attempt (and what to tell the callee),
    /// `min(attempt_timeout, time left) − margin`.
    pub budget: Nanos,
    /// An instant: when this attempt's budget runs out (`now + budget`).
    pub expires_at: Nanos,
}

/// Wait before the next attempt, then call [`RetryDriver::resume`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Wait {
    /// An instant: when to resume.
    pub retry_at: Nanos,
    /// A duration: the same wait from the `now` of the call that returned it.
    pub retry_after: Nanos,
}

/// What the caller does next.
#[repr(C, u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryStep {
    /// Make this attempt now, then [`report`](RetryDriver::report) how it ended.
    Attempt(Attempt) = 0,
    /// Sleep, then [`resume`](RetryDriver::resume).
    Wait(Wait) = 1,
    /// Done: the last attempt succeeded.
    Succeeded = 2,
    /// Done: give up, for this reason ([`GiveUpReason::should_propagate_as_overloaded`]
    /// says what to tell the caller's own caller).
    GiveUp(GiveUpReason) = 3,
}

impl RetryStep {
    /// Stable snake_case name of the variant: `"attempt"`, `"wait"`, `"succeeded"`,
    /// `"give_up"`.
    pub const fn name(self) -> &'static str {
        match self {
            RetryStep::Attempt(_) => "attempt",
            RetryStep::Wait(_) => "wait",
            RetryStep::Succeeded => "succeeded",
            RetryStep::GiveUp(_) => "give_up",
        }
    }
}

/// A call made in a phase where it means nothing (e.g. `report` with no attempt out).
/// Nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RetryDriverError {
    /// The method called: `"start"`, `"report"`, `"resume"` or `"cancel"`.
    pub call: &'static str,
    /// The phase the driver was in.
    pub phase: RetryPhase,
}

impl fmt::Display for RetryDriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "retry driver: `{}` is not allowed in phase `{}`",
            self.call,
            self.phase.name()
        )
    }
}

impl core::error::Error for RetryDriverError {}

/// The retry loop of one request; see the [module docs](self).
///
/// Owned by one request and not `Clone`: it may hold the receipt of a retry, which must be
/// refunded at most once.
#[repr(C)]
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RetryDriver {
    deadline: Deadline,
    attempt_config: DeadlineConfig,
    started_at: Nanos,
    attempt_started_at: Nanos,
    retry_at: Nanos,
    prev_delay: Nanos,
    receipt_micros: u64,
    attempts: u32,
    retries: u32,
    phase: RetryPhase,
    idempotency: Idempotency,
    give_up: GiveUpReason,
    last_outcome: Outcome,
    holds_receipt: bool,
    has_outcome: bool,
}

/// Lends a budget to the policy as its gate and keeps the receipt of the retry it allows.
struct ReceiptGate<'a> {
    budget: &'a dyn Budget,
    receipt: Cell<Option<RetryReceipt>>,
}

impl RetryGate for ReceiptGate<'_> {
    fn allow_retry(&self, now: Nanos, cause: RetryCause) -> bool {
        match self.budget.withdraw(now, cause) {
            Some(r) => {
                self.receipt.set(Some(r));
                true
            }
            None => false,
        }
    }
}

impl RetryDriver {
    /// A driver for one request with `deadline` (or [`Deadline::NONE`]), `idempotency`,
    /// and per-attempt settings `attempt_config`, in the `Idle` phase; or the first invalid
    /// field of `attempt_config`.
    pub fn new(
        deadline: Deadline,
        idempotency: Idempotency,
        attempt_config: DeadlineConfig,
    ) -> Result<Self, ConfigError> {
        attempt_config.validate()?;
        Ok(RetryDriver {
            deadline,
            attempt_config,
            started_at: Nanos::ZERO,
            attempt_started_at: Nanos::ZERO,
            retry_at: Nanos::ZERO,
            prev_delay: Nanos::ZERO,
            receipt_micros: 0,
            attempts: 0,
            retries: 0,
            phase: RetryPhase::Idle,
            idempotency,
            give_up: GiveUpReason::Succeeded,
            last_outcome: Outcome::Success,
            holds_receipt: false,
            has_outcome: false,
        })
    }

    /// Start the request at `now`: deposit its first attempt in `budget` (if any) and
    /// return that attempt, or give up with `DeadlineExceeded` if it has no time for one.
    /// Only in the `Idle` phase.
    pub fn start(
        &mut self,
        now: Nanos,
        budget: Option<&dyn Budget>,
    ) -> Result<RetryStep, RetryDriverError> {
        self.expect(RetryPhase::Idle, "start")?;
        self.started_at = now;
        if let Some(b) = budget {
            b.deposit(now);
        }
        Ok(self.next_attempt(now))
    }

    /// The attempt out ended at `now` with `outcome` (and the server's `retry_after`, a
    /// duration, if it sent one). Tells `budget` by the call contract, then asks `policy`
    /// (drawing from `rng` for jitter, and from `budget` last): wait and retry, succeeded,
    /// or give up. Only in the `Attempting` phase.
    pub fn report(
        &mut self,
        now: Nanos,
        outcome: Outcome,
        retry_after: Option<Nanos>,
        policy: &RetryPolicy,
        rng: &Rng,
        budget: Option<&dyn Budget>,
    ) -> Result<RetryStep, RetryDriverError> {
        self.expect(RetryPhase::Attempting, "report")?;
        self.last_outcome = outcome;
        self.has_outcome = true;
        let receipt = self.take_receipt();
        if let Some(b) = budget {
            b.report(now, outcome, receipt);
        }
        let time_left = if self.deadline.is_none() {
            None
        } else {
            Some(self.deadline.time_left(now))
        };
        let ctx = RetryContext::new(self.attempts, outcome)
            .with_retry_after(retry_after)
            .with_idempotency(self.idempotency)
            .with_time_left(time_left)
            .with_prev_delay(self.prev_delay);
        let decision = match budget {
            Some(b) => {
                let gate = ReceiptGate {
                    budget: b,
                    receipt: Cell::new(None),
                };
                let d = policy.decide(now, ctx, rng, Some(&gate));
                if let Some(r) = gate.receipt.take() {
                    self.keep_receipt(r);
                }
                d
            }
            None => policy.decide(now, ctx, rng, None),
        };
        Ok(match decision {
            RetryDecision::Retry { after } => {
                self.phase = RetryPhase::Waiting;
                self.retries = self.retries.saturating_add(1);
                self.prev_delay = after;
                self.retry_at = now.saturating_add(after);
                RetryStep::Wait(Wait {
                    retry_at: self.retry_at,
                    retry_after: after,
                })
            }
            RetryDecision::GiveUp(GiveUpReason::Succeeded) => {
                self.phase = RetryPhase::Succeeded;
                RetryStep::Succeeded
            }
            RetryDecision::GiveUp(reason) => self.finish(reason),
        })
    }

    /// The wait is over at `now`: the next attempt, or `DeadlineExceeded` if the request has
    /// no time left for one. Woken before `retry_at`, it answers [`RetryStep::Wait`] for the
    /// rest and stays `Waiting`. Only in the `Waiting` phase.
    pub fn resume(&mut self, now: Nanos) -> Result<RetryStep, RetryDriverError> {
        self.expect(RetryPhase::Waiting, "resume")?;
        if now < self.retry_at {
            return Ok(RetryStep::Wait(Wait {
                retry_at: self.retry_at,
                retry_after: self.retry_at.saturating_sub(now),
            }));
        }
        Ok(self.next_attempt(now))
    }

    /// The caller abandoned the request (its client went away, an outer deadline, a
    /// cancelled task): give up with [`GiveUpReason::Cancelled`] from any phase that is not
    /// final. An attempt still out is not reported to the budget (a cancelled call changes
    /// no budget) and a receipt held for a pending retry is dropped (its tokens stay spent).
    /// The policy is not asked, so its stats do not count it: to count it, `report`
    /// [`Outcome::Cancelled`] while the attempt is out instead.
    pub fn cancel(&mut self) -> Result<RetryStep, RetryDriverError> {
        if self.phase.is_final() {
            return Err(RetryDriverError {
                call: "cancel",
                phase: self.phase,
            });
        }
        if self.phase == RetryPhase::Attempting {
            self.last_outcome = Outcome::Cancelled;
            self.has_outcome = true;
        }
        let _ = self.take_receipt();
        Ok(self.finish(GiveUpReason::Cancelled))
    }

    /// The phase.
    pub const fn phase(&self) -> RetryPhase {
        self.phase
    }

    /// Attempts started so far (the one out included).
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Retries decided so far (waits handed out).
    pub const fn retries(&self) -> u32 {
        self.retries
    }

    /// Why the request gave up, once it has (`None` in every other phase).
    pub const fn give_up_reason(&self) -> Option<GiveUpReason> {
        match self.phase {
            RetryPhase::GaveUp => Some(self.give_up),
            _ => None,
        }
    }

    /// The outcome of the last attempt reported (or cancelled), if any.
    pub const fn last_outcome(&self) -> Option<Outcome> {
        if self.has_outcome {
            Some(self.last_outcome)
        } else {
            None
        }
    }

    /// An instant: when the request started (`start`'s `now`).
    pub const fn started_at(&self) -> Nanos {
        self.started_at
    }

    /// An instant: when the attempt out (or the last one) started.
    pub const fn attempt_started_at(&self) -> Nanos {
        self.attempt_started_at
    }

    /// The request's deadline.
    pub const fn deadline(&self) -> Deadline {
        self.deadline
    }

    fn expect(&self, phase: RetryPhase, call: &'static str) -> Result<(), RetryDriverError> {
        if self.phase == phase {
            Ok(())
        } else {
            Err(RetryDriverError {
                call,
                phase: self.phase,
            })
        }
    }

    fn next_attempt(&mut self, now: Nanos) -> RetryStep {
        match self.attempt_config.attempt_budget(self.deadline, now) {
            AttemptBudget::Start { budget } => {
                self.phase = RetryPhase::Attempting;
                self.attempts = self.attempts.saturating_add(1);
                self.attempt_started_at = now;
                RetryStep::Attempt(Attempt {
                    number: self.attempts,
                    budget,
                    expires_at: now.saturating_add(budget),
                })
            }
            AttemptBudget::Expired | AttemptBudget::TooLittleLeft { .. } => {
                let _ = self.take_receipt();
                self.finish(GiveUpReason::DeadlineExceeded)
            }
        }
    }

    fn finish(&mut self, reason: GiveUpReason) -> RetryStep {
        self.phase = RetryPhase::GaveUp;
        self.give_up = reason;
        RetryStep::GiveUp(reason)
    }

    fn keep_receipt(&mut self, r: RetryReceipt) {
        self.receipt_micros = r.cost_micros();
        self.holds_receipt = true;
    }

    fn take_receipt(&mut self) -> Option<RetryReceipt> {
        if !self.holds_receipt {
            return None;
        }
        self.holds_receipt = false;
        Some(RetryReceipt::new(core::mem::take(&mut self.receipt_micros)))
    }
}
