//! The call contract applied: every guard's `report` does what the table of
//! `docs/outcomes.md` says, for every outcome (the table itself is checked against the code
//! in `outcome_table.rs`).
#![cfg(not(loom))]

use guards_core::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
use guards_core::admission::{Admission, AdmissionConfig};
use guards_core::brownout::{Brownout, BrownoutConfig, BrownoutDecision, RefusalKind};
use guards_core::bulkhead::{Bulkhead, BulkheadConfig};
use guards_core::circuit_breaker::{
    BreakerState, CircuitBreaker, CircuitBreakerConfig, KeyedBreakers, OutcomeEffect,
};
use guards_core::latency_tracker::{LatencyTracker, LatencyTrackerConfig};
use guards_core::limit::LimitConfig;
use guards_core::limiter::{Limiter, LimiterConfig};
use guards_core::outcome::{
    BreakerVerdict, BudgetVerdict, LatencyVerdict, LimiterVerdict, ThrottleVerdict,
};
use guards_core::retry_budget::{
    AwsRetryQuotaConfig, GrpcThrottleConfig, RetryBudget, RetryBudgetConfig, TokenBudgetConfig,
};
use guards_core::retry_policy::RetryCause;
use guards_core::{Nanos, Outcome, Priority};

fn ms(v: u64) -> Nanos {
    Nanos::from_millis(v)
}

/// A breaker of a 4-call window that opens at 50 % and has two probes.
fn small_breaker() -> CircuitBreaker {
    CircuitBreaker::new(CircuitBreakerConfig {
        window_size: 4,
        open_duration: ms(100),
        half_open_probes: 2,
        slow_call_duration: ms(50),
        ..CircuitBreakerConfig::default()
    })
    .unwrap()
}

/// The same breaker, opened and then half-open at `t` = 200 ms.
fn half_open_breaker() -> CircuitBreaker {
    let b = small_breaker();
    for i in 0..4 {
        let p = b.try_acquire(ms(i)).unwrap();
        b.report(p, Outcome::Timeout, ms(i));
    }
    assert_eq!(b.state(ms(200)), BreakerState::HalfOpen);
    b
}

#[test]
fn breaker_ordinary_calls_follow_the_table() {
    for o in Outcome::ALL {
        let b = small_breaker();
        let p = b.try_acquire(ms(0)).unwrap();
        let effect = b.report(p, o, ms(1));
        let s = b.stats();
        match o.breaker(false) {
            BreakerVerdict::Success => {
                assert_eq!(
                    (effect, s.successes, s.failures),
                    (OutcomeEffect::Counted, 1, 0)
                )
            }
            BreakerVerdict::Failure => {
                assert_eq!(
                    (effect, s.successes, s.failures),
                    (OutcomeEffect::Counted, 0, 1)
                )
            }
            BreakerVerdict::Ignore => {
                assert_eq!(
                    (effect, s.ignored, b.window_counts(ms(1)).calls),
                    (OutcomeEffect::Ignored, 1, 0)
                )
            }
        }
    }
}

#[test]
fn a_cancelled_probe_reopens_a_cancelled_call_is_not_counted() {
    let b = half_open_breaker();
    let probe = b.try_acquire(ms(200)).unwrap();
    assert!(probe.is_probe());
    assert_eq!(
        b.report(probe, Outcome::Cancelled, ms(210)),
        OutcomeEffect::Reopened
    );

    let b = small_breaker();
    let call = b.try_acquire(ms(0)).unwrap();
    assert_eq!(
        b.report(call, Outcome::Cancelled, ms(500)),
        OutcomeEffect::Ignored
    );
    assert_eq!(b.window_counts(ms(500)).calls, 0);
}

#[test]
fn a_rejected_or_ignored_probe_gives_its_slot_back_without_a_verdict() {
    for o in [Outcome::Rejected, Outcome::Ignored] {
        let b = half_open_breaker();
        let p1 = b.try_acquire(ms(200)).unwrap();
        let p2 = b.try_acquire(ms(200)).unwrap();
        assert!(b.try_acquire(ms(200)).is_err(), "two probes out");
        assert_eq!(b.report(p1, o, ms(201)), OutcomeEffect::Ignored);
        let p3 = b.try_acquire(ms(202)).expect("the slot came back");
        assert_eq!(
            b.report(p2, Outcome::Success, ms(203)),
            OutcomeEffect::ProbePassed
        );
        assert_eq!(
            b.report(p3, Outcome::Permanent, ms(204)),
            OutcomeEffect::Closed
        );
    }
}

#[test]
fn slowness_is_measured_not_reported() {
    // A 4xx that took 60 ms is a success of the dependency, and a slow call.
    let b = small_breaker();
    let p = b.try_acquire(ms(0)).unwrap();
    b.report(p, Outcome::Permanent, ms(60));
    let w = b.window_counts(ms(60));
    assert_eq!((w.calls, w.failures, w.slow), (1, 0, 1));
    // A slow probe success re-opens.
    let b = half_open_breaker();
    let p = b.try_acquire(ms(200)).unwrap();
    assert_eq!(
        b.report(p, Outcome::Success, ms(260)),
        OutcomeEffect::Reopened
    );
}

#[test]
fn keyed_breakers_report_to_the_key() {
    let set: KeyedBreakers<4, 8> = KeyedBreakers::new(CircuitBreakerConfig {
        window_size: 2,
        ..CircuitBreakerConfig::default()
    })
    .unwrap();
    for t in 0..2 {
        let p = set.try_acquire(7, ms(t)).unwrap();
        set.report(p, Outcome::OtherTransient, ms(t));
    }
    assert_eq!(set.get(7).unwrap().state(ms(3)), BreakerState::Open);
    let p = set.try_acquire(8, ms(3)).unwrap();
    assert_eq!(
        set.report(p, Outcome::Success, ms(3)),
        OutcomeEffect::Counted
    );
}

#[test]
fn bulkhead_always_releases() {
    let b = Bulkhead::new(BulkheadConfig { max_concurrent: 1 }).unwrap();
    for o in Outcome::ALL {
        let p = b.try_acquire().unwrap();
        b.report(p, o);
        assert_eq!(b.in_flight(), 0, "{o}");
    }
}

#[test]
fn limiter_and_admission_sample_drop_or_ignore() {
    for o in Outcome::ALL {
        let l = Limiter::new(LimiterConfig {
            limit: LimitConfig::Fixed(2),
            ..LimiterConfig::default()
        })
        .unwrap();
        let p = l.try_acquire(ms(0), Priority::CRITICAL).unwrap();
        assert_eq!(l.report(p, o, ms(5)), o.limiter());
        let s = l.stats();
        let want = match o.limiter() {
            LimiterVerdict::Success => (1, 0, 0),
            LimiterVerdict::Dropped => (0, 1, 0),
            LimiterVerdict::Ignore => (0, 0, 1),
        };
        assert_eq!((s.succeeded, s.dropped, s.ignored), want, "{o}");
        assert_eq!(s.in_flight, 0);

        let door = Admission::new(AdmissionConfig::default()).unwrap();
        let p = door.try_acquire(ms(0), Priority::CRITICAL).unwrap();
        assert_eq!(door.report(p, o, ms(5)), o.limiter());
        let s = door.stats();
        assert_eq!((s.succeeded, s.dropped, s.ignored), want, "{o}");
    }
    // Netflix's convention, spelled out.
    assert_eq!(Outcome::Timeout.limiter(), LimiterVerdict::Dropped);
    assert_eq!(Outcome::Throttled.limiter(), LimiterVerdict::Dropped);
    assert_eq!(Outcome::OtherTransient.limiter(), LimiterVerdict::Ignore);
}

#[test]
fn grpc_throttling_sees_success_and_retryable_failure_only() {
    for o in Outcome::ALL {
        let b: RetryBudget =
            RetryBudget::new(RetryBudgetConfig::Grpc(GrpcThrottleConfig::default())).unwrap();
        let before = b.tokens_micros(ms(0));
        assert_eq!(b.report(ms(0), o, None), o.retry_budget());
        let delta = b.tokens_micros(ms(0)) - before;
        let want = match o.retry_budget() {
            BudgetVerdict::Success => 0, // already full: capped
            BudgetVerdict::Failure => -1_000_000,
            BudgetVerdict::Nothing => 0,
        };
        assert_eq!(delta, want, "{o}");
        let s = b.stats();
        assert_eq!(
            s.failures,
            u64::from(o.retry_budget() == BudgetVerdict::Failure)
        );
        assert_eq!(
            s.deposits,
            u64::from(o.retry_budget() == BudgetVerdict::Success)
        );
    }
}

#[test]
fn aws_quota_refunds_a_successful_retry_and_nothing_else() {
    for o in Outcome::ALL {
        let b: RetryBudget =
            RetryBudget::new(RetryBudgetConfig::Aws(AwsRetryQuotaConfig::default())).unwrap();
        let receipt = b.withdraw(ms(0), RetryCause::Timeout).unwrap(); // 500 -> 490
        b.report(ms(1), o, Some(receipt));
        let want = if o == Outcome::Success { 500 } else { 490 };
        assert_eq!(b.tokens(ms(1)), f64::from(want), "{o}");
    }
    // A first attempt that succeeds adds the success increment (capped at the capacity).
    let b: RetryBudget =
        RetryBudget::new(RetryBudgetConfig::Aws(AwsRetryQuotaConfig::default())).unwrap();
    let _spent = b.withdraw(ms(0), RetryCause::Transient); // 495
    b.report(ms(1), Outcome::Success, None);
    assert_eq!(b.tokens(ms(1)), 496.0);
}

#[test]
fn token_bucket_ignores_outcomes() {
    let b: RetryBudget =
        RetryBudget::new(RetryBudgetConfig::TokenBucket(TokenBudgetConfig::default())).unwrap();
    for o in Outcome::ALL {
        b.report(ms(0), o, None);
    }
    assert_eq!(b.tokens_micros(ms(0)), 10_000_000);
}

#[test]
fn adaptive_throttle_counts_accepts_and_backend_refusals() {
    for o in Outcome::ALL {
        let t: AdaptiveThrottle = AdaptiveThrottle::new(AdaptiveThrottleConfig::default()).unwrap();
        assert!(!t.should_reject(ms(0)));
        assert_eq!(t.report(ms(1), o), o.adaptive_throttle());
        let s = t.stats();
        let w = t.window(ms(1));
        match o.adaptive_throttle() {
            ThrottleVerdict::Accepted => assert_eq!((s.accepted, w.accepts), (1, 1)),
            ThrottleVerdict::RejectedByBackend => {
                assert_eq!((s.rejected_by_backend, w.accepts), (1, 0))
            }
            ThrottleVerdict::Nothing => {
                assert_eq!((s.accepted, s.rejected_by_backend, w.accepts), (0, 0, 0))
            }
        }
    }
}

#[test]
fn latency_is_recorded_for_answers_and_lower_bounds() {
    for o in Outcome::ALL {
        let t: LatencyTracker<2> = LatencyTracker::new(LatencyTrackerConfig::default()).unwrap();
        assert_eq!(t.report(ms(40), ms(10), o), o.latency());
        let recorded = o.latency() == LatencyVerdict::Record;
        assert_eq!(t.count(ms(40)), u64::from(recorded), "{o}");
        if recorded {
            let p = t.quantile(ms(40), 1.0).unwrap();
            assert!(p.as_u64().abs_diff(ms(30).as_u64()) * 64 <= ms(30).as_u64());
        }
    }
}

#[test]
fn brownout_never_falls_back_for_the_callers_own_errors() {
    let optional = Brownout::new(BrownoutConfig {
        optional: true,
        ..BrownoutConfig::default()
    })
    .unwrap();
    assert_eq!(optional.report(Outcome::Success), None);
    assert_eq!(
        optional.report(Outcome::Timeout),
        Some(BrownoutDecision::ServeFallback)
    );
    assert_eq!(
        optional.report(Outcome::Overloaded),
        Some(BrownoutDecision::ServeFallback)
    );
    for o in [Outcome::Permanent, Outcome::Ignored, Outcome::Cancelled] {
        assert_eq!(optional.report(o), None, "{o}");
    }
    let s = optional.stats();
    assert_eq!((s.full, s.degraded, s.errors), (1, 2, 0));
    // A local refusal is a local kind: an exempt operation proceeds.
    let exempt = Brownout::new(BrownoutConfig {
        exempt: true,
        ..BrownoutConfig::default()
    })
    .unwrap();
    assert_eq!(
        exempt.report(Outcome::Rejected),
        Some(BrownoutDecision::Proceed)
    );
    assert_eq!(
        RefusalKind::of(Outcome::Rejected),
        Some(RefusalKind::Throttled)
    );
}

#[test]
fn rejections_name_their_brownout_kind() {
    let b = Bulkhead::new(BulkheadConfig { max_concurrent: 1 }).unwrap();
    let _held = b.try_acquire().unwrap();
    assert_eq!(
        b.try_acquire().unwrap_err().refusal_kind(),
        RefusalKind::BulkheadFull
    );
    let door = Admission::new(AdmissionConfig {
        limits: [1; 8],
        ..AdmissionConfig::default()
    })
    .unwrap();
    let _inside = door.try_acquire(ms(0), Priority::CRITICAL).unwrap();
    let r = door.try_acquire(ms(0), Priority::CRITICAL).unwrap_err();
    assert_eq!(r.refusal_kind(), RefusalKind::Throttled);
    let br = half_open_breaker();
    let _p = (
        br.try_acquire(ms(200)).unwrap(),
        br.try_acquire(ms(200)).unwrap(),
    );
    assert_eq!(
        br.try_acquire(ms(200)).unwrap_err().refusal_kind(),
        RefusalKind::BreakerOpen
    );
}
