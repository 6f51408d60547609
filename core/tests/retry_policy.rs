#![cfg(not(loom))]
//! Integration tests for `retry_policy`: a sequential reference model of the decision
//! (proptest), the counters, Basketly's retry layers, and two threads sharing one policy,
//! one generator and one atomic retry budget.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use guards_core::backoff::{Backoff, BackoffConfig, Jitter};
use guards_core::retry_policy::{
    GiveUpReason, Idempotency, RetryCause, RetryContext, RetryDecision, RetryGate, RetryPolicy,
    RetryPolicyConfig, RetryPolicyStats, UnkeyedSideEffects,
};
use guards_core::{Nanos, Outcome, Rng};
use proptest::prelude::*;

/// A gate with a scripted answer that records every question.
struct Scripted {
    allow: bool,
    asked: RefCell<Vec<(Nanos, RetryCause)>>,
}

impl Scripted {
    fn new(allow: bool) -> Self {
        Scripted {
            allow,
            asked: RefCell::new(Vec::new()),
        }
    }
}

impl RetryGate for Scripted {
    fn allow_retry(&self, now: Nanos, cause: RetryCause) -> bool {
        self.asked.borrow_mut().push((now, cause));
        self.allow
    }
}

// ---------------------------------------------------------------------------------------
// Reference model: the documented rules, one after another, in plain code. The backoff
// wait itself comes from `Backoff::delay_from_bits` (tested on its own in tests/backoff.rs)
// fed from a second generator with the same seed, which also checks how many words the
// policy draws.
// ---------------------------------------------------------------------------------------

struct ModelResult {
    decision: RetryDecision,
    gate_cause: Option<RetryCause>,
}

fn model(
    c: &RetryPolicyConfig,
    ctx: &RetryContext,
    rng: &Rng,
    gate_allows: Option<bool>,
) -> ModelResult {
    let give_up = |r| ModelResult {
        decision: RetryDecision::GiveUp(r),
        gate_cause: None,
    };
    let (retryable, cause) = match ctx.outcome {
        Outcome::Success => return give_up(GiveUpReason::Succeeded),
        Outcome::Permanent => return give_up(GiveUpReason::Permanent),
        Outcome::Overloaded => return give_up(GiveUpReason::Overloaded),
        Outcome::Rejected => return give_up(GiveUpReason::Rejected),
        Outcome::Ignored => return give_up(GiveUpReason::Ignored),
        Outcome::Cancelled => return give_up(GiveUpReason::Cancelled),
        Outcome::Timeout => (c.retry_timeouts, RetryCause::Timeout),
        Outcome::ConnectionError => (c.retry_connection_errors, RetryCause::Transient),
        Outcome::OtherTransient => (c.retry_other_transient, RetryCause::Transient),
        Outcome::Throttled => (c.retry_throttled, RetryCause::Throttled),
    };
    if !retryable {
        return give_up(GiveUpReason::NotRetryable);
    }
    let made = if ctx.attempts_made == 0 {
        1
    } else {
        ctx.attempts_made
    };
    if made >= c.max_attempts {
        return give_up(GiveUpReason::AttemptsExhausted);
    }
    if ctx.idempotency == Idempotency::UnkeyedSideEffect {
        let throttled_ok = c.unkeyed_side_effects == UnkeyedSideEffects::RetryThrottled
            && ctx.outcome == Outcome::Throttled;
        if !throttled_ok {
            return give_up(GiveUpReason::NotIdempotent);
        }
    }
    let ra = match ctx.retry_after {
        Some(ra) if c.honor_retry_after => Some(ra.0),
        _ => None,
    };
    if let Some(ra) = ra {
        if ra > c.max_retry_after.0 {
            return give_up(GiveUpReason::RetryAfterTooLong);
        }
    }
    let backoff = Backoff::new(c.backoff).unwrap();
    let drawn = if c.backoff.jitter == Jitter::None {
        backoff.ceiling(made - 1).0
    } else {
        backoff
            .delay_from_bits(made - 1, ctx.prev_delay, rng.next_u64())
            .0
    };
    let wait = drawn.max(ra.unwrap_or(0));
    if let Some(left) = ctx.time_left {
        if wait as u128 + c.min_attempt_time.0 as u128 >= left.0 as u128 {
            return give_up(GiveUpReason::DeadlineExceeded);
        }
    }
    match gate_allows {
        Some(false) => ModelResult {
            decision: RetryDecision::GiveUp(GiveUpReason::BudgetExhausted),
            gate_cause: Some(cause),
        },
        Some(true) => ModelResult {
            decision: RetryDecision::Retry { after: Nanos(wait) },
            gate_cause: Some(cause),
        },
        None => ModelResult {
            decision: RetryDecision::Retry { after: Nanos(wait) },
            gate_cause: None,
        },
    }
}

fn arb_backoff() -> impl Strategy<Value = BackoffConfig> {
    (
        1u64..=10_000_000,
        0u64..=200_000_000,
        prop_oneof![Just(1.0), Just(2.0), Just(1.5)],
        prop_oneof![
            Just(Jitter::None),
            Just(Jitter::Full),
            Just(Jitter::Equal),
            Just(Jitter::Decorrelated)
        ],
    )
        .prop_map(|(base, extra, multiplier, jitter)| BackoffConfig {
            base: Nanos(base),
            cap: Nanos(base + extra),
            multiplier,
            jitter,
        })
}

fn arb_config() -> impl Strategy<Value = RetryPolicyConfig> {
    (
        1u32..=6,
        any::<[bool; 5]>(),
        0u64..=50_000_000,
        0u64..=5_000_000,
        any::<bool>(),
        arb_backoff(),
    )
        .prop_map(
            |(max_attempts, f, max_ra, min_attempt, keyed_throttle, backoff)| {
                let retry_throttled = f[3] || keyed_throttle;
                RetryPolicyConfig {
                    max_attempts,
                    retry_timeouts: f[0],
                    retry_connection_errors: f[1],
                    retry_other_transient: f[2],
                    retry_throttled,
                    honor_retry_after: f[4],
                    max_retry_after: Nanos(max_ra),
                    min_attempt_time: Nanos(min_attempt),
                    unkeyed_side_effects: if keyed_throttle {
                        UnkeyedSideEffects::RetryThrottled
                    } else {
                        UnkeyedSideEffects::Never
                    },
                    backoff,
                }
            },
        )
}

fn arb_outcome() -> impl Strategy<Value = Outcome> {
    (0..Outcome::ALL.len()).prop_map(|i| Outcome::ALL[i])
}

fn arb_context() -> impl Strategy<Value = RetryContext> {
    (
        0u32..=7,
        arb_outcome(),
        proptest::option::of(0u64..=60_000_000),
        prop_oneof![
            Just(Idempotency::Idempotent),
            Just(Idempotency::KeyedSideEffect),
            Just(Idempotency::UnkeyedSideEffect)
        ],
        proptest::option::of(prop_oneof![0u64..=300_000_000, Just(u64::MAX)]),
        0u64..=300_000_000,
    )
        .prop_map(|(attempts_made, outcome, ra, idempotency, left, prev)| {
            RetryContext::new(attempts_made, outcome)
                .with_retry_after(ra.map(Nanos))
                .with_idempotency(idempotency)
                .with_time_left(left.map(Nanos))
                .with_prev_delay(Nanos(prev))
        })
}

fn tally(stats: &mut RetryPolicyStats, d: RetryDecision) {
    match d {
        RetryDecision::Retry { .. } => stats.retries += 1,
        RetryDecision::GiveUp(r) => {
            let slot = match r {
                GiveUpReason::Succeeded => &mut stats.succeeded,
                GiveUpReason::Permanent => &mut stats.permanent,
                GiveUpReason::Overloaded => &mut stats.overloaded,
                GiveUpReason::NotRetryable => &mut stats.not_retryable,
                GiveUpReason::AttemptsExhausted => &mut stats.attempts_exhausted,
                GiveUpReason::NotIdempotent => &mut stats.not_idempotent,
                GiveUpReason::RetryAfterTooLong => &mut stats.retry_after_too_long,
                GiveUpReason::DeadlineExceeded => &mut stats.deadline_exceeded,
                GiveUpReason::BudgetExhausted => &mut stats.budget_exhausted,
                GiveUpReason::Rejected => &mut stats.rejected,
                GiveUpReason::Ignored => &mut stats.ignored,
                GiveUpReason::Cancelled => &mut stats.cancelled,
            };
            *slot += 1;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A sequence of decisions on one policy agrees, step by step, with the model: the
    /// decision, whether and with which cause the gate was asked, how many random words
    /// were drawn, and finally every counter.
    #[test]
    fn decisions_match_reference_model(
        c in arb_config(),
        steps in proptest::collection::vec(
            (arb_context(), proptest::option::of(any::<bool>()), 0u64..1_000_000_000), 1..24),
        seed in any::<u64>(),
    ) {
        let policy = RetryPolicy::new(c).unwrap();
        let rng = Rng::new(seed);
        let model_rng = Rng::new(seed);
        let mut expected = RetryPolicyStats::default();
        for (ctx, gate_allows, now) in steps {
            let gate = gate_allows.map(Scripted::new);
            let got = policy.decide(Nanos(now), ctx, &rng, gate.as_ref().map(|g| g as &dyn RetryGate));
            let want = model(&c, &ctx, &model_rng, gate_allows);
            prop_assert_eq!(got, want.decision, "ctx {:?}", ctx);
            let asked: Vec<_> = gate.map(|g| g.asked.into_inner()).unwrap_or_default();
            match want.gate_cause {
                Some(cause) => prop_assert_eq!(asked, vec![(Nanos(now), cause)]),
                None => prop_assert!(asked.is_empty()),
            }
            tally(&mut expected, got);
        }
        prop_assert_eq!(rng.next_u64(), model_rng.next_u64(), "draw count differs");
        prop_assert_eq!(policy.stats(), expected);
        prop_assert_eq!(policy.stats().decisions(), expected.decisions());
    }

    /// Whatever the inputs: a retry never waits longer than the backoff cap or the
    /// Retry-After clamp, always leaves a minimal attempt inside the deadline, and never
    /// happens for an unkeyed side effect after an outcome that may have acted.
    #[test]
    fn retry_invariants(c in arb_config(), ctx in arb_context(), seed in any::<u64>()) {
        let policy = RetryPolicy::new(c).unwrap();
        let d = policy.decide(Nanos(0), ctx, &Rng::new(seed), None);
        if let RetryDecision::Retry { after } = d {
            prop_assert!(after <= c.backoff.cap.max(c.max_retry_after));
            if let Some(left) = ctx.time_left {
                prop_assert!(after.saturating_add(c.min_attempt_time) < left);
            }
            prop_assert!(ctx.attempts_made.max(1) < c.max_attempts);
            prop_assert!(ctx.outcome.cause().is_some());
            if ctx.idempotency == Idempotency::UnkeyedSideEffect {
                prop_assert_eq!(ctx.outcome, Outcome::Throttled);
            }
            if let (true, Some(ra)) = (c.honor_retry_after, ctx.retry_after) {
                prop_assert!(after >= ra);
            }
        }
    }
}

fn policy(max_attempts: u32, base_ms: u64, jitter: Jitter) -> RetryPolicy {
    RetryPolicy::new(RetryPolicyConfig {
        max_attempts,
        backoff: BackoffConfig {
            base: Nanos::from_millis(base_ms),
            cap: Nanos::from_secs(1),
            multiplier: 2.0,
            jitter,
        },
        ..RetryPolicyConfig::default()
    })
    .unwrap()
}

/// Basketly's C2 (docs/basketly.md): shop-api is the only layer that retries stock, twice at
/// most; it stops on "overloaded" and on permanent errors, keeps the reserve's key, and answers the
/// app "overloaded, don't retry" when it gives up.
#[test]
fn basketly_shop_api_is_the_one_retry_layer() {
    let shop_api = policy(2, 25, Jitter::Full);
    let rng = Rng::new(1);
    let reserve = |n, outcome| {
        RetryContext::new(n, outcome)
            .with_idempotency(Idempotency::KeyedSideEffect)
            .with_time_left(Some(Nanos::from_millis(1_900)))
    };
    let first = shop_api.decide(Nanos(0), reserve(1, Outcome::Timeout), &rng, None);
    assert!(first.after().is_some_and(|w| w <= Nanos::from_millis(25)));
    let second = shop_api.decide(Nanos(0), reserve(2, Outcome::Timeout), &rng, None);
    assert_eq!(
        second,
        RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted)
    );
    assert!(second
        .give_up_reason()
        .unwrap()
        .should_propagate_as_overloaded());
    for outcome in [Outcome::Overloaded, Outcome::Permanent] {
        assert!(!shop_api
            .decide(Nanos(0), reserve(1, outcome), &rng, None)
            .is_retry());
    }
    // The same reserve without a key is never retried after a timeout.
    let unkeyed = reserve(1, Outcome::Timeout).with_idempotency(Idempotency::UnkeyedSideEffect);
    assert_eq!(
        shop_api.decide(Nanos(0), unkeyed, &rng, None),
        RetryDecision::GiveUp(GiveUpReason::NotIdempotent)
    );
    // The app retries once, and only when it got no answer at all.
    let app = RetryPolicy::new(RetryPolicyConfig {
        max_attempts: 2,
        retry_other_transient: false,
        retry_throttled: false,
        ..RetryPolicyConfig::default()
    })
    .unwrap();
    let ctx = |o| RetryContext::new(1, o);
    assert!(app
        .decide(Nanos(0), ctx(Outcome::Timeout), &rng, None)
        .is_retry());
    assert!(app
        .decide(Nanos(0), ctx(Outcome::ConnectionError), &rng, None)
        .is_retry());
    assert_eq!(
        app.decide(Nanos(0), ctx(Outcome::OtherTransient), &rng, None),
        RetryDecision::GiveUp(GiveUpReason::NotRetryable)
    );
    assert_eq!(
        app.decide(Nanos(0), ctx(Outcome::Overloaded), &rng, None),
        RetryDecision::GiveUp(GiveUpReason::Overloaded)
    );
}

/// Calls reaching the bottom layer when it always times out, through `layers` retrying
/// layers of 3 attempts each. With `one_layer_rule`, a layer that gives up answers its
/// caller "overloaded" as `should_propagate_as_overloaded` says.
fn calls_at_bottom(layers: usize, one_layer_rule: bool) -> u32 {
    fn call(
        layer: usize,
        layers: usize,
        rule: bool,
        p: &RetryPolicy,
        rng: &Rng,
        calls: &mut u32,
    ) -> Outcome {
        if layer == layers {
            *calls += 1;
            return Outcome::Timeout;
        }
        let mut attempts = 0;
        loop {
            let outcome = call(layer + 1, layers, rule, p, rng, calls);
            attempts += 1;
            match p.decide(Nanos(0), RetryContext::new(attempts, outcome), rng, None) {
                RetryDecision::Retry { .. } => continue,
                RetryDecision::GiveUp(reason) => {
                    return if rule && reason.should_propagate_as_overloaded() {
                        Outcome::Overloaded
                    } else {
                        outcome
                    };
                }
            }
        }
    }
    let p = policy(3, 1, Jitter::Full);
    let rng = Rng::new(2);
    let mut calls = 0;
    call(0, layers, one_layer_rule, &p, &rng, &mut calls);
    calls
}

/// Basketly's C2: three layers of 3 attempts send 27 calls to the bottom; with the
/// one-layer rule only the layer above the failing one retries: 3 calls.
#[test]
fn basketly_retries_multiply_unless_one_layer_retries() {
    assert_eq!(calls_at_bottom(3, false), 27);
    assert_eq!(calls_at_bottom(5, false), 243);
    assert_eq!(calls_at_bottom(3, true), 3);
    assert_eq!(calls_at_bottom(5, true), 3);
}

#[test]
fn retry_after_ignored_when_not_honoured() {
    let p = RetryPolicy::new(RetryPolicyConfig {
        honor_retry_after: false,
        max_retry_after: Nanos::ZERO,
        backoff: BackoffConfig {
            base: Nanos::from_millis(5),
            jitter: Jitter::None,
            ..BackoffConfig::default()
        },
        ..RetryPolicyConfig::default()
    })
    .unwrap();
    assert_eq!(
        p.decide(
            Nanos(0),
            RetryContext::new(1, Outcome::Throttled).with_retry_after(Some(Nanos::from_secs(30))),
            &Rng::new(0),
            None
        ),
        RetryDecision::Retry {
            after: Nanos::from_millis(5)
        }
    );
}

#[test]
fn unkeyed_side_effect_may_retry_a_throttle_when_configured() {
    let p = RetryPolicy::new(RetryPolicyConfig {
        unkeyed_side_effects: UnkeyedSideEffects::RetryThrottled,
        ..RetryPolicyConfig::default()
    })
    .unwrap();
    let rng = Rng::new(0);
    let ctx = |o| RetryContext::new(1, o).with_idempotency(Idempotency::UnkeyedSideEffect);
    let throttled = ctx(Outcome::Throttled).with_retry_after(Some(Nanos::from_millis(100)));
    assert!(p.decide(Nanos(0), throttled, &rng, None).after() >= Some(Nanos::from_millis(100)));
    assert_eq!(
        p.decide(Nanos(0), ctx(Outcome::Timeout), &rng, None),
        RetryDecision::GiveUp(GiveUpReason::NotIdempotent)
    );
}

/// A lock-free token budget for the stress test: `tokens` retries, each taken by CAS.
struct AtomicBudget {
    tokens: AtomicU64,
    refusals: AtomicU64,
}

impl RetryGate for AtomicBudget {
    fn allow_retry(&self, _now: Nanos, _cause: RetryCause) -> bool {
        let took = self
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| t.checked_sub(1))
            .is_ok();
        if !took {
            self.refusals.fetch_add(1, Ordering::Relaxed);
        }
        took
    }
}

/// Two threads share one policy, one generator and one budget. Every decision is counted
/// exactly once; the budget is charged exactly once per retry and only for retries; every
/// refusal is a `BudgetExhausted`; every wait is within the cap.
#[test]
fn two_threads_share_policy_rng_and_budget() {
    const K: u32 = 15_000;
    const TOKENS: u64 = 5_000;
    let p = Arc::new(policy(3, 10, Jitter::Full));
    let rng = Arc::new(Rng::new(11));
    let budget = Arc::new(AtomicBudget {
        tokens: AtomicU64::new(TOKENS),
        refusals: AtomicU64::new(0),
    });
    let run = |thread: u32| {
        let (p, rng, budget) = (Arc::clone(&p), Arc::clone(&rng), Arc::clone(&budget));
        std::thread::spawn(move || {
            let mut mine = RetryPolicyStats::default();
            let outcomes = [
                Outcome::Timeout,
                Outcome::ConnectionError,
                Outcome::Success,
                Outcome::Overloaded,
                Outcome::Throttled,
            ];
            for i in 0..K {
                let outcome = outcomes[((i + thread) % 5) as usize];
                let ctx = RetryContext::new(1 + i % 3, outcome);
                let d = p.decide(Nanos(u64::from(i)), ctx, &rng, Some(&*budget));
                if let Some(after) = d.after() {
                    assert!(after <= Nanos::from_secs(1));
                }
                tally(&mut mine, d);
            }
            mine
        })
    };
    let (a, b) = (run(0), run(1));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    let stats = p.stats();
    assert_eq!(stats.decisions(), 2 * u64::from(K));
    assert_eq!(stats.retries, a.retries + b.retries);
    for r in GiveUpReason::ALL {
        assert_eq!(stats.give_ups(r), a.give_ups(r) + b.give_ups(r), "{r}");
    }
    let left = budget.tokens.load(Ordering::Relaxed);
    assert_eq!(stats.retries, TOKENS - left);
    assert_eq!(
        stats.budget_exhausted,
        budget.refusals.load(Ordering::Relaxed)
    );
    // K is a multiple of 15, so exactly 3/5 of the outcomes are retryable and 2/3 of
    // those are below the cap: 2 × 6,000 asks for 5,000 tokens.
    assert_eq!(left, 0);
    assert_eq!(stats.retries + stats.budget_exhausted, 12_000);
}
