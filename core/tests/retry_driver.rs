//! `retry_driver`: scripted scenarios (Retry-After honoured, deadline cut, budget refusal,
//! refunds, cancel, wrong phases) and a proptest against a plain reference loop written
//! with the policy, the deadline and the budget directly.
#![cfg(not(loom))]

use std::mem::MaybeUninit;

use guards_core::backoff::{BackoffConfig, Jitter};
use guards_core::deadline::{AttemptBudget, Deadline, DeadlineConfig};
use guards_core::retry_budget::{
    AwsRetryQuotaConfig, Budget, GrpcThrottleConfig, RetryBudget, RetryBudgetConfig, RetryReceipt,
    TokenBudgetConfig,
};
use guards_core::retry_driver::{Attempt, RetryDriver, RetryPhase, RetryStep, Wait};
use guards_core::retry_policy::{
    GiveUpReason, Idempotency, RetryCause, RetryContext, RetryDecision, RetryGate, RetryPolicy,
    RetryPolicyConfig,
};
use guards_core::{Nanos, Outcome, Rng};
use proptest::prelude::*;

fn ms(v: u64) -> Nanos {
    Nanos::from_millis(v)
}

fn policy(max_attempts: u32, base_ms: u64) -> RetryPolicy {
    RetryPolicy::new(RetryPolicyConfig {
        max_attempts,
        backoff: BackoffConfig {
            base: ms(base_ms),
            cap: ms(1_000),
            jitter: Jitter::None,
            ..BackoffConfig::default()
        },
        ..RetryPolicyConfig::default()
    })
    .unwrap()
}

fn driver(deadline: Deadline, timeout_ms: u64) -> RetryDriver {
    RetryDriver::new(
        deadline,
        Idempotency::Idempotent,
        DeadlineConfig::new(ms(timeout_ms), ms(1)).unwrap(),
    )
    .unwrap()
}

fn attempt(step: RetryStep) -> Attempt {
    match step {
        RetryStep::Attempt(a) => a,
        other => panic!("expected an attempt, got {other:?}"),
    }
}

fn wait(step: RetryStep) -> Wait {
    match step {
        RetryStep::Wait(w) => w,
        other => panic!("expected a wait, got {other:?}"),
    }
}

#[test]
fn retry_after_is_honoured_and_an_early_wake_waits_again() {
    let p = policy(3, 10);
    let rng = Rng::new(0);
    let mut d = driver(Deadline::NONE, 60);
    let a = attempt(d.start(ms(0), None).unwrap());
    assert_eq!((a.number, a.budget, a.expires_at), (1, ms(59), ms(59)));
    let w = wait(
        d.report(ms(5), Outcome::Throttled, Some(ms(2_000)), &p, &rng, None)
            .unwrap(),
    );
    assert_eq!((w.retry_at, w.retry_after), (ms(2_005), ms(2_000)));
    assert_eq!(d.phase(), RetryPhase::Waiting);
    let early = wait(d.resume(ms(1_000)).unwrap());
    assert_eq!((early.retry_at, early.retry_after), (ms(2_005), ms(1_005)));
    let a = attempt(d.resume(ms(2_005)).unwrap());
    assert_eq!((a.number, a.expires_at), (2, ms(2_064)));
    assert_eq!(
        d.report(ms(2_010), Outcome::Success, None, &p, &rng, None),
        Ok(RetryStep::Succeeded)
    );
    assert_eq!(
        (d.phase(), d.attempts(), d.retries()),
        (RetryPhase::Succeeded, 2, 1)
    );
    assert_eq!(d.give_up_reason(), None);
    assert_eq!(d.last_outcome(), Some(Outcome::Success));
    // A Retry-After longer than the policy's maximum gives up at once.
    let mut d = driver(Deadline::NONE, 60);
    d.start(ms(0), None).unwrap();
    assert_eq!(
        d.report(ms(1), Outcome::Throttled, Some(Nanos::MAX), &p, &rng, None),
        Ok(RetryStep::GiveUp(GiveUpReason::RetryAfterTooLong))
    );
}

#[test]
fn the_deadline_cuts_attempts_and_waits() {
    let p = policy(5, 10);
    let rng = Rng::new(0);
    let mut d = driver(Deadline::at(ms(100)), 60);
    assert_eq!(attempt(d.start(ms(0), None).unwrap()).budget, ms(59));
    // Timed out at 60: wait 10 ms, then only 30 ms are left: the attempt gets 29.
    let w = wait(
        d.report(ms(60), Outcome::Timeout, None, &p, &rng, None)
            .unwrap(),
    );
    assert_eq!(w.retry_at, ms(70));
    let a = attempt(d.resume(ms(70)).unwrap());
    assert_eq!((a.budget, a.expires_at), (ms(29), ms(99)));
    // The policy refuses a wait that leaves no room for an attempt.
    assert_eq!(
        d.report(ms(99), Outcome::Timeout, None, &p, &rng, None),
        Ok(RetryStep::GiveUp(GiveUpReason::DeadlineExceeded))
    );
    // A sleep that overshoots the deadline gives up on resume.
    let mut d = driver(Deadline::at(ms(100)), 60);
    d.start(ms(0), None).unwrap();
    wait(
        d.report(ms(50), Outcome::Timeout, None, &p, &rng, None)
            .unwrap(),
    );
    assert_eq!(
        d.resume(ms(150)),
        Ok(RetryStep::GiveUp(GiveUpReason::DeadlineExceeded))
    );
    // No time at the start: give up before any attempt.
    let mut d = driver(Deadline::at(ms(100)), 60);
    assert_eq!(
        d.start(ms(100), None),
        Ok(RetryStep::GiveUp(GiveUpReason::DeadlineExceeded))
    );
    assert_eq!(
        (d.attempts(), d.give_up_reason()),
        (0, Some(GiveUpReason::DeadlineExceeded))
    );
}

#[test]
fn the_budget_is_deposited_charged_and_refused() {
    let p = policy(10, 1);
    let rng = Rng::new(0);
    let budget: RetryBudget = RetryBudget::new(RetryBudgetConfig::TokenBucket(TokenBudgetConfig {
        capacity: 1.0,
        ratio: 0.0,
    }))
    .unwrap();
    let mut d = driver(Deadline::NONE, 60);
    d.start(ms(0), Some(&budget)).unwrap();
    assert_eq!(budget.stats().deposits, 1);
    wait(
        d.report(
            ms(1),
            Outcome::ConnectionError,
            None,
            &p,
            &rng,
            Some(&budget),
        )
        .unwrap(),
    );
    d.resume(ms(2)).unwrap();
    assert_eq!(
        d.report(
            ms(3),
            Outcome::ConnectionError,
            None,
            &p,
            &rng,
            Some(&budget)
        ),
        Ok(RetryStep::GiveUp(GiveUpReason::BudgetExhausted))
    );
    let s = budget.stats();
    assert_eq!((s.deposits, s.withdrawals, s.refusals), (1, 1, 1));
    assert_eq!(p.stats().budget_exhausted, 1);
}

#[test]
fn aws_quota_refunds_the_retry_that_succeeded() {
    let p = policy(3, 1);
    let rng = Rng::new(0);
    let quota: RetryBudget =
        RetryBudget::new(RetryBudgetConfig::Aws(AwsRetryQuotaConfig::default())).unwrap();
    let mut d = driver(Deadline::NONE, 60);
    d.start(ms(0), Some(&quota)).unwrap();
    wait(
        d.report(ms(60), Outcome::Timeout, None, &p, &rng, Some(&quota))
            .unwrap(),
    );
    assert_eq!(quota.tokens(ms(60)), 490.0); // a timeout retry costs 10
    d.resume(ms(61)).unwrap();
    d.report(ms(70), Outcome::Success, None, &p, &rng, Some(&quota))
        .unwrap();
    assert_eq!(quota.tokens(ms(70)), 500.0);
    assert_eq!(quota.stats().refunds, 1);
    // A retry that fails keeps its cost spent; a first attempt's success adds 1.
    let mut d = driver(Deadline::NONE, 60);
    d.start(ms(100), Some(&quota)).unwrap();
    wait(
        d.report(
            ms(101),
            Outcome::OtherTransient,
            None,
            &p,
            &rng,
            Some(&quota),
        )
        .unwrap(),
    );
    d.resume(ms(102)).unwrap();
    wait(
        d.report(
            ms(103),
            Outcome::OtherTransient,
            None,
            &p,
            &rng,
            Some(&quota),
        )
        .unwrap(),
    );
    assert_eq!(quota.tokens(ms(103)), 490.0);
    let mut d = driver(Deadline::NONE, 60);
    d.start(ms(200), Some(&quota)).unwrap();
    d.report(ms(201), Outcome::Success, None, &p, &rng, Some(&quota))
        .unwrap();
    assert_eq!(quota.tokens(ms(201)), 491.0);
}

#[test]
fn grpc_throttling_hears_the_failure_before_the_retry_is_asked() {
    let p = policy(10, 1);
    let rng = Rng::new(0);
    // 2 tokens; retries only above 1: the first failure takes a token (2 -> 1), so the
    // retry it asks for is already refused.
    let t: RetryBudget = RetryBudget::new(RetryBudgetConfig::Grpc(GrpcThrottleConfig {
        max_tokens: 2.0,
        token_ratio: 0.1,
    }))
    .unwrap();
    let mut d = driver(Deadline::NONE, 60);
    d.start(ms(0), Some(&t)).unwrap();
    assert_eq!(
        d.report(ms(1), Outcome::Timeout, None, &p, &rng, Some(&t)),
        Ok(RetryStep::GiveUp(GiveUpReason::BudgetExhausted))
    );
    assert_eq!(t.stats().failures, 1);
}

#[test]
fn outcomes_that_are_never_retried() {
    let p = policy(3, 1);
    let rng = Rng::new(0);
    for (o, reason) in [
        (Outcome::Overloaded, GiveUpReason::Overloaded),
        (Outcome::Permanent, GiveUpReason::Permanent),
        (Outcome::Rejected, GiveUpReason::Rejected),
        (Outcome::Ignored, GiveUpReason::Ignored),
        (Outcome::Cancelled, GiveUpReason::Cancelled),
    ] {
        let mut d = driver(Deadline::NONE, 60);
        d.start(ms(0), None).unwrap();
        assert_eq!(
            d.report(ms(1), o, None, &p, &rng, None),
            Ok(RetryStep::GiveUp(reason))
        );
        assert_eq!(d.give_up_reason(), Some(reason));
    }
    // Side effects without a key are not repeated.
    let mut d = RetryDriver::new(
        Deadline::NONE,
        Idempotency::UnkeyedSideEffect,
        DeadlineConfig::default(),
    )
    .unwrap();
    d.start(ms(0), None).unwrap();
    assert_eq!(
        d.report(ms(1), Outcome::Timeout, None, &p, &rng, None),
        Ok(RetryStep::GiveUp(GiveUpReason::NotIdempotent))
    );
}

#[test]
fn cancel_ends_any_phase_that_is_not_final() {
    let p = policy(3, 10);
    let rng = Rng::new(0);
    let aws: RetryBudget =
        RetryBudget::new(RetryBudgetConfig::Aws(AwsRetryQuotaConfig::default())).unwrap();
    // While idle, attempting and waiting.
    let mut idle = driver(Deadline::NONE, 60);
    assert_eq!(
        idle.cancel(),
        Ok(RetryStep::GiveUp(GiveUpReason::Cancelled))
    );
    let mut attempting = driver(Deadline::NONE, 60);
    attempting.start(ms(0), Some(&aws)).unwrap();
    assert_eq!(
        attempting.cancel(),
        Ok(RetryStep::GiveUp(GiveUpReason::Cancelled))
    );
    assert_eq!(attempting.last_outcome(), Some(Outcome::Cancelled));
    let mut waiting = driver(Deadline::NONE, 60);
    waiting.start(ms(0), Some(&aws)).unwrap();
    wait(
        waiting
            .report(ms(1), Outcome::Timeout, None, &p, &rng, Some(&aws))
            .unwrap(),
    );
    assert_eq!(
        waiting.cancel(),
        Ok(RetryStep::GiveUp(GiveUpReason::Cancelled))
    );
    // The pending retry's tokens stay spent; nothing was refunded or added.
    assert_eq!(aws.tokens(ms(2)), 490.0);
    // After the end, and for the policy's stats: cancelling is not a decision.
    assert!(waiting.cancel().is_err());
    assert_eq!(p.stats().cancelled, 0);
}

#[test]
fn calls_in_the_wrong_phase_are_errors_and_change_nothing() {
    let p = policy(3, 10);
    let rng = Rng::new(0);
    let mut d = driver(Deadline::NONE, 60);
    let e = d.resume(ms(0)).unwrap_err();
    assert_eq!((e.call, e.phase), ("resume", RetryPhase::Idle));
    assert!(d
        .report(ms(0), Outcome::Success, None, &p, &rng, None)
        .is_err());
    d.start(ms(0), None).unwrap();
    assert_eq!(d.start(ms(0), None).unwrap_err().call, "start");
    assert!(d.resume(ms(0)).is_err());
    assert_eq!((d.phase(), d.attempts()), (RetryPhase::Attempting, 1));
    wait(
        d.report(ms(1), Outcome::Timeout, None, &p, &rng, None)
            .unwrap(),
    );
    assert!(d
        .report(ms(2), Outcome::Timeout, None, &p, &rng, None)
        .is_err());
    assert_eq!((d.phase(), d.retries()), (RetryPhase::Waiting, 1));
    assert_eq!(
        e.to_string(),
        "retry driver: `resume` is not allowed in phase `idle`"
    );
    assert!(RetryDriver::new(
        Deadline::NONE,
        Idempotency::Idempotent,
        DeadlineConfig {
            attempt_timeout: ms(1),
            margin: ms(1)
        }
    )
    .is_err());
}

#[test]
fn an_all_zero_driver_is_idle_with_an_expired_deadline() {
    // SAFETY: all bytes zero is a valid `RetryDriver` (module docs): a `repr(C)` struct of
    // integers, bools and `repr(u8)` enums whose variant 0 exists.
    let mut d: RetryDriver = unsafe { MaybeUninit::zeroed().assume_init() };
    assert_eq!(d.phase(), RetryPhase::Idle);
    assert_eq!(
        d.start(ms(5), None),
        Ok(RetryStep::GiveUp(GiveUpReason::DeadlineExceeded))
    );
}

// ------------------------------------------------------------------ reference loop

/// One attempt of a scripted request: how long it takes, how it ends, the server's
/// Retry-After, and how long the caller oversleeps a wait.
#[derive(Debug, Clone, Copy)]
struct Script {
    took: u64,
    outcome: Outcome,
    retry_after: Option<u64>,
    late: u64,
}

/// A gate keeping the receipt of the retry it allowed (the reference's own copy).
struct Keep<'a> {
    budget: &'a RetryBudget,
    receipt: std::cell::Cell<Option<RetryReceipt>>,
}

impl RetryGate for Keep<'_> {
    fn allow_retry(&self, now: Nanos, cause: RetryCause) -> bool {
        match Budget::withdraw(self.budget, now, cause) {
            Some(r) => {
                self.receipt.set(Some(r));
                true
            }
            None => false,
        }
    }
}

/// The loop as a caller would write it by hand, returning every step it takes.
fn reference(
    policy: &RetryPolicy,
    budget: &RetryBudget,
    rng: &Rng,
    deadline: Deadline,
    attempt_config: DeadlineConfig,
    script: &[Script],
) -> Vec<RetryStep> {
    let mut steps = Vec::new();
    let mut now = Nanos(1_000);
    Budget::deposit(budget, now);
    let mut attempts = 0u32;
    let mut prev = Nanos::ZERO;
    let mut receipt: Option<RetryReceipt> = None;
    for s in script {
        match attempt_config.attempt_budget(deadline, now) {
            AttemptBudget::Start { budget: b } => {
                attempts += 1;
                steps.push(RetryStep::Attempt(Attempt {
                    number: attempts,
                    budget: b,
                    expires_at: now.saturating_add(b),
                }));
            }
            _ => {
                steps.push(RetryStep::GiveUp(GiveUpReason::DeadlineExceeded));
                return steps;
            }
        }
        now = now.saturating_add(ms(s.took));
        Budget::report(budget, now, s.outcome, receipt.take());
        let time_left = (!deadline.is_none()).then(|| deadline.time_left(now));
        let ctx = RetryContext::new(attempts, s.outcome)
            .with_retry_after(s.retry_after.map(ms))
            .with_time_left(time_left)
            .with_prev_delay(prev);
        let gate = Keep {
            budget,
            receipt: std::cell::Cell::new(None),
        };
        match policy.decide(now, ctx, rng, Some(&gate)) {
            RetryDecision::Retry { after } => {
                receipt = gate.receipt.take();
                prev = after;
                steps.push(RetryStep::Wait(Wait {
                    retry_at: now.saturating_add(after),
                    retry_after: after,
                }));
                now = now.saturating_add(after).saturating_add(ms(s.late));
            }
            RetryDecision::GiveUp(GiveUpReason::Succeeded) => {
                steps.push(RetryStep::Succeeded);
                return steps;
            }
            RetryDecision::GiveUp(r) => {
                steps.push(RetryStep::GiveUp(r));
                return steps;
            }
        }
    }
    steps
}

/// The same script through the driver.
fn driven(
    policy: &RetryPolicy,
    budget: &RetryBudget,
    rng: &Rng,
    deadline: Deadline,
    attempt_config: DeadlineConfig,
    script: &[Script],
) -> Vec<RetryStep> {
    let mut d = RetryDriver::new(deadline, Idempotency::Idempotent, attempt_config).unwrap();
    let mut steps = Vec::new();
    let mut now = Nanos(1_000);
    if script.is_empty() {
        // The reference deposits and stops before its first attempt: so does this.
        Budget::deposit(budget, now);
        return steps;
    }
    let mut step = d.start(now, Some(budget)).unwrap();
    for s in script {
        steps.push(step);
        if !matches!(step, RetryStep::Attempt(_)) {
            return steps;
        }
        now = now.saturating_add(ms(s.took));
        let reported = d
            .report(
                now,
                s.outcome,
                s.retry_after.map(ms),
                policy,
                rng,
                Some(budget),
            )
            .unwrap();
        steps.push(reported);
        let RetryStep::Wait(w) = reported else {
            return steps;
        };
        now = w.retry_at.saturating_add(ms(s.late));
        step = d.resume(now).unwrap();
    }
    steps
}

fn arb_script() -> impl Strategy<Value = Script> {
    (
        0u64..80,
        (0..Outcome::ALL.len()).prop_map(|i| Outcome::ALL[i]),
        proptest::option::of(0u64..3_000),
        0u64..40,
    )
        .prop_map(|(took, outcome, retry_after, late)| Script {
            took,
            outcome,
            retry_after,
            late,
        })
}

fn arb_budget() -> impl Strategy<Value = RetryBudgetConfig> {
    prop_oneof![
        (1u32..4).prop_map(|c| RetryBudgetConfig::TokenBucket(TokenBudgetConfig {
            capacity: f64::from(c),
            ratio: 0.5
        })),
        Just(RetryBudgetConfig::Grpc(GrpcThrottleConfig {
            max_tokens: 4.0,
            token_ratio: 0.5
        })),
        (10u64..40).prop_map(|capacity| RetryBudgetConfig::Aws(AwsRetryQuotaConfig {
            capacity,
            ..AwsRetryQuotaConfig::default()
        })),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_driver_takes_the_steps_of_the_hand_written_loop(
        max_attempts in 1u32..6,
        jitter in prop_oneof![Just(Jitter::None), Just(Jitter::Full), Just(Jitter::Decorrelated)],
        deadline_ms in proptest::option::of(0u64..3_000),
        timeout_ms in 2u64..120,
        budget in arb_budget(),
        seed in any::<u64>(),
        script in proptest::collection::vec(arb_script(), 0..8),
    ) {
        let config = RetryPolicyConfig {
            max_attempts,
            max_retry_after: ms(2_000),
            backoff: BackoffConfig { base: ms(5), cap: ms(200), jitter, ..BackoffConfig::default() },
            ..RetryPolicyConfig::default()
        };
        let deadline = deadline_ms.map_or(Deadline::NONE, |d| Deadline::at(ms(1).saturating_add(ms(d))));
        let attempt_config = DeadlineConfig::new(ms(timeout_ms), ms(1)).unwrap();
        let (p1, p2) = (RetryPolicy::new(config).unwrap(), RetryPolicy::new(config).unwrap());
        let (b1, b2): (RetryBudget, RetryBudget) =
            (RetryBudget::new(budget).unwrap(), RetryBudget::new(budget).unwrap());
        let (r1, r2) = (Rng::new(seed), Rng::new(seed));
        let want = reference(&p1, &b1, &r1, deadline, attempt_config, &script);
        let got = driven(&p2, &b2, &r2, deadline, attempt_config, &script);
        prop_assert_eq!(got, want);
        prop_assert_eq!(p1.stats(), p2.stats());
        prop_assert_eq!(b1.stats(), b2.stats());
        prop_assert_eq!(b1.tokens_micros(Nanos(0)), b2.tokens_micros(Nanos(0)));
        prop_assert_eq!(r1.next_u64(), r2.next_u64());
    }
}
