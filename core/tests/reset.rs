//! Building in place (see "Building in place" in the crate docs), for every guard:
//!
//! - `new(a)`, then traffic, then `reset(b)` behaves and reports stats exactly like
//!   `new(b)` under the same traffic afterwards;
//! - a value of all bytes zero, allocated the way a binding allocates it
//!   (`alloc_zeroed` with the type's own layout), is safe to call (no panic) and behaves
//!   like `new(b)` once `reset(b)` has been called on it;
//! - a `reset` with an invalid config fails and changes nothing.
//!
//! Each guard has a `drive` function that runs a fixed script of calls and returns every
//! decision and the final stats as one string; two guards behave alike when their strings
//! are equal.
#![cfg(not(loom))]

use std::alloc::{alloc_zeroed, Layout};
use std::fmt::Write;

use guards_core::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
use guards_core::admission::{Admission, AdmissionConfig};
use guards_core::brownout::{Brownout, BrownoutConfig, BrownoutTable, RefusalKind, RefusalKinds};
use guards_core::bulkhead::{Bulkhead, BulkheadConfig};
use guards_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, KeyedBreakers, WindowKind,
};
use guards_core::hedging::{Hedging, HedgingConfig};
use guards_core::latency_tracker::{LatencyTracker, LatencyTrackerConfig};
use guards_core::limit::{AimdConfig, LimitConfig};
use guards_core::limiter::{Limiter, LimiterConfig};
use guards_core::queue_discipline::{QueueDiscipline, QueueDisciplineConfig};
use guards_core::retry_budget::{
    AwsRetryQuota, AwsRetryQuotaConfig, GrpcThrottle, GrpcThrottleConfig, RetryBudget,
    RetryBudgetConfig, TokenBudget, TokenBudgetConfig, WindowedBudget, WindowedBudgetConfig,
};
use guards_core::retry_policy::{RetryCause, RetryContext, RetryPolicy, RetryPolicyConfig};
use guards_core::{ConfigError, Nanos, Outcome, Priority, Rng};
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn ms(v: u64) -> Nanos {
    Nanos(v * MS)
}

/// A `T` of all bytes zero on the heap, allocated with `T`'s own size and alignment, as a
/// binding does.
fn zeroed<T>() -> Box<T> {
    let layout = Layout::new::<T>();
    assert!(layout.size() > 0);
    // SAFETY: the layout has a non-zero size (checked above). All bytes zero is a valid
    // `T` for every guard type of guards-core (crate docs, "Building in place": `repr(C)`
    // structs of integers, floats, bools, atomics and `repr(u8)` enums with a variant at 0;
    // no references, no niches that zero breaks). The allocation is made with the global
    // allocator and `Layout::new::<T>()`, which is what `Box<T>` frees it with.
    unsafe {
        let p = alloc_zeroed(layout).cast::<T>();
        assert!(!p.is_null(), "allocation failed");
        Box::from_raw(p)
    }
}

/// The three properties above for one guard type.
fn check<G, C: Copy + std::fmt::Debug>(
    new: impl Fn(C) -> Result<G, ConfigError>,
    reset: impl Fn(&mut G, C) -> Result<(), ConfigError>,
    drive: impl Fn(&mut G) -> String,
    a: C,
    b: C,
    bad: C,
) {
    let mut fresh = Box::new(new(b).expect("config b is valid"));
    let want = drive(&mut fresh);

    let mut used = Box::new(new(a).expect("config a is valid"));
    let before = drive(&mut used);
    if format!("{a:?}") != format!("{b:?}") {
        // The script tells the two configs apart, so the comparisons below mean something.
        assert_ne!(before, want, "the script does not tell {a:?} from {b:?}");
    }
    reset(&mut used, b).expect("reset to b");
    assert_eq!(
        drive(&mut used),
        want,
        "new(a) + traffic + reset(b) differs from new(b)"
    );

    let mut z = zeroed::<G>();
    let _ = drive(&mut z); // safe to call, unconfigured
    reset(&mut z, b).expect("reset of a zeroed value");
    assert_eq!(drive(&mut z), want, "zeroed + reset(b) differs from new(b)");

    // A failed reset changes nothing: same behaviour as a second fresh new(b).
    let mut kept = Box::new(new(b).expect("config b is valid"));
    assert!(reset(&mut kept, bad).is_err(), "{bad:?} must be refused");
    assert_eq!(drive(&mut kept), want, "a failed reset changed the guard");
}

// ----------------------------------------------------------------- circuit breaker

fn drive_breaker<const CAP: usize>(b: &mut CircuitBreaker<CAP>) -> String {
    let mut out = String::new();
    for i in 0..40u64 {
        let t = ms(i * 10);
        match b.try_acquire(t) {
            Ok(p) => {
                let e = if i % 3 == 0 {
                    b.on_success(p, t.saturating_add(ms(1)))
                } else if i % 7 == 0 {
                    b.on_ignore(p);
                    continue;
                } else {
                    b.on_failure(p, t.saturating_add(ms(150)))
                };
                write!(out, "{}:{} ", i, e.name()).unwrap();
            }
            Err(r) => write!(out, "{}:{}@{} ", i, r.reason.name(), r.retry_at.0).unwrap(),
        }
    }
    // Past the open period: probes.
    for i in 0..4u64 {
        let t = ms(20_000 + i);
        match b.try_acquire(t) {
            Ok(p) => write!(out, "p{}:{} ", i, b.on_success(p, t).name()).unwrap(),
            Err(r) => write!(out, "p{}:{} ", i, r.reason.name()).unwrap(),
        }
    }
    write!(
        out,
        "{:?} {:?} {:?}",
        b.status(),
        b.window_counts(ms(20_010)),
        b.stats()
    )
    .unwrap();
    out
}

#[test]
fn circuit_breaker_count_and_time_windows() {
    let time = CircuitBreakerConfig {
        window_kind: WindowKind::Time,
        window_duration: Nanos::from_secs(1),
        window_buckets: 10,
        minimum_calls: 5,
        slow_call_duration: ms(100),
        ..CircuitBreakerConfig::default()
    };
    let bad = CircuitBreakerConfig {
        window_size: 0,
        ..CircuitBreakerConfig::default()
    };
    check(
        CircuitBreaker::<128>::new,
        CircuitBreaker::reset,
        drive_breaker,
        time,
        CircuitBreakerConfig::fast_trip(),
        bad,
    );
    check(
        CircuitBreaker::<128>::new,
        CircuitBreaker::reset,
        drive_breaker,
        CircuitBreakerConfig::fast_trip(),
        time,
        bad,
    );
    // A window too big for the capacity is refused by reset as by new.
    let mut b = CircuitBreaker::<16>::new(CircuitBreakerConfig {
        window_size: 16,
        ..CircuitBreakerConfig::default()
    })
    .unwrap();
    assert_eq!(
        b.reset(CircuitBreakerConfig::default())
            .unwrap_err()
            .field(),
        "window_size"
    );
}

#[test]
fn a_zeroed_breaker_is_closed_and_never_trips() {
    let b = zeroed::<CircuitBreaker>();
    for i in 0..50 {
        let p = b.try_acquire(ms(i)).expect("closed");
        let _ = b.on_failure(p, ms(i));
    }
    assert_eq!(
        b.state(ms(60)),
        guards_core::circuit_breaker::BreakerState::Closed
    );
}

fn drive_keyed(set: &mut KeyedBreakers<4, 32>) -> String {
    let mut out = String::new();
    for i in 0..60u64 {
        let key = i % 6;
        match set.try_acquire(key, ms(i)) {
            Ok(p) => {
                let e = if key == 1 {
                    set.on_success(p, ms(i))
                } else {
                    set.on_failure(p, ms(i))
                };
                write!(out, "{key}:{} ", e.name()).unwrap();
            }
            Err(r) => write!(out, "{key}:{} ", r.reason.name()).unwrap(),
        }
    }
    write!(out, "{} {:?}", set.len(), set.stats()).unwrap();
    out
}

#[test]
fn keyed_breakers() {
    let c = |n| CircuitBreakerConfig {
        window_size: n,
        ..CircuitBreakerConfig::default()
    };
    check(
        KeyedBreakers::new,
        KeyedBreakers::reset,
        drive_keyed,
        c(20),
        c(5),
        c(33),
    );
}

// ----------------------------------------------------------------- bulkhead, budgets

fn drive_bulkhead(b: &mut Bulkhead) -> String {
    let mut held = Vec::new();
    let mut out = String::new();
    for i in 0..6 {
        match b.try_acquire() {
            Ok(p) => held.push(p),
            Err(r) => write!(out, "{i}:{r} ").unwrap(),
        }
        if i == 3 {
            if let Some(p) = held.pop() {
                b.release(p);
            }
        }
    }
    for p in held {
        b.release(p);
    }
    write!(out, "{:?}", b.stats()).unwrap();
    out
}

#[test]
fn bulkhead() {
    let c = |n| BulkheadConfig { max_concurrent: n };
    check(
        Bulkhead::new,
        Bulkhead::reset,
        drive_bulkhead,
        c(5),
        c(2),
        c(0),
    );
}

proptest! {
    #[test]
    fn bulkhead_reset_matches_new(a in 1u64..8, b in 1u64..8, before in 0usize..10) {
        let mut used = Bulkhead::new(BulkheadConfig { max_concurrent: a }).unwrap();
        let held: Vec<_> = (0..before).filter_map(|_| used.try_acquire().ok()).collect();
        std::mem::forget(held); // permits left out: reset forgets them
        used.reset(BulkheadConfig { max_concurrent: b }).unwrap();
        let mut fresh = Bulkhead::new(BulkheadConfig { max_concurrent: b }).unwrap();
        prop_assert_eq!(drive_bulkhead(&mut used), drive_bulkhead(&mut fresh));
    }

    #[test]
    fn token_budget_reset_matches_new(
        cap in 1u32..20, ratio in 0u32..10, ops in proptest::collection::vec(0u8..2, 0..40),
    ) {
        let b = TokenBudgetConfig { capacity: f64::from(cap), ratio: f64::from(ratio) / 10.0 };
        let mut used = TokenBudget::new(TokenBudgetConfig::default()).unwrap();
        for op in &ops {
            if *op == 0 { used.deposit() } else { let _ = used.withdraw(); }
        }
        used.reset(b).unwrap();
        let mut fresh = TokenBudget::new(b).unwrap();
        prop_assert_eq!(drive_token(&mut used), drive_token(&mut fresh));
    }
}

fn drive_token(b: &mut TokenBudget) -> String {
    let mut out = String::new();
    for i in 0..30 {
        if i % 4 == 0 {
            b.deposit();
        } else {
            write!(out, "{}", u8::from(b.withdraw())).unwrap();
        }
    }
    write!(out, " {} {:?}", b.tokens_micros(), b.stats()).unwrap();
    out
}

#[test]
fn token_budget() {
    let c = |capacity, ratio| TokenBudgetConfig { capacity, ratio };
    check(
        TokenBudget::new,
        TokenBudget::reset,
        drive_token,
        c(3.0, 0.5),
        c(10.0, 0.1),
        c(0.0, 0.1),
    );
}

fn drive_grpc(t: &mut GrpcThrottle) -> String {
    let mut out = String::new();
    for i in 0..30 {
        match i % 3 {
            0 => t.on_failure(),
            1 => t.on_success(),
            _ => write!(out, "{}", u8::from(t.withdraw())).unwrap(),
        }
    }
    write!(out, " {} {:?}", t.tokens_micros(), t.stats()).unwrap();
    out
}

#[test]
fn grpc_throttle() {
    let c = |max_tokens, token_ratio| GrpcThrottleConfig {
        max_tokens,
        token_ratio,
    };
    check(
        GrpcThrottle::new,
        GrpcThrottle::reset,
        drive_grpc,
        c(5.0, 0.5),
        c(10.0, 0.1),
        c(0.0, 0.1),
    );
}

fn drive_aws(q: &mut AwsRetryQuota) -> String {
    let mut out = String::new();
    for i in 0..30 {
        let cause = [
            RetryCause::Timeout,
            RetryCause::Transient,
            RetryCause::Throttled,
        ][i % 3];
        match q.withdraw(cause) {
            Some(r) if i % 2 == 0 => q.refund(r),
            Some(_) => out.push('+'),
            None => out.push('-'),
        }
        if i % 5 == 0 {
            q.deposit();
        }
    }
    write!(out, " {} {:?}", q.tokens_micros(), q.stats()).unwrap();
    out
}

#[test]
fn aws_retry_quota() {
    let c = |capacity| AwsRetryQuotaConfig {
        capacity,
        ..AwsRetryQuotaConfig::default()
    };
    check(
        AwsRetryQuota::new,
        AwsRetryQuota::reset,
        drive_aws,
        c(20),
        c(60),
        c(0),
    );
}

fn drive_windowed(b: &mut WindowedBudget) -> String {
    let mut out = String::new();
    for i in 0..60u64 {
        let t = ms(i * 300);
        if i % 3 == 0 {
            b.deposit(t);
        } else {
            write!(out, "{}", u8::from(b.withdraw(t))).unwrap();
        }
    }
    write!(out, " {} {:?}", b.tokens_micros(ms(18_000)), b.stats()).unwrap();
    out
}

#[test]
fn windowed_budget() {
    let c = |secs, floor, pct| WindowedBudgetConfig {
        ttl: Nanos::from_secs(secs),
        min_retries_per_sec: floor,
        percent_can_retry: pct,
    };
    check(
        WindowedBudget::new,
        WindowedBudget::reset,
        drive_windowed,
        c(10, 1.0, 0.5),
        c(3, 0.5, 0.2),
        c(0, 0.5, 0.2),
    );
}

fn drive_retry_budget(b: &mut RetryBudget) -> String {
    let mut out = String::new();
    for i in 0..40u64 {
        let t = ms(i * 100);
        b.deposit(t);
        if i % 2 == 0 {
            b.on_failure(t);
            match b.withdraw(t, RetryCause::Timeout) {
                Some(r) => b.on_success(t, Some(r)),
                None => out.push('-'),
            }
        }
    }
    write!(
        out,
        " {} {} {:?}",
        b.mode().name(),
        b.tokens_micros(ms(4_000)),
        b.stats()
    )
    .unwrap();
    out
}

#[test]
fn retry_budget_every_mode_and_mode_switches() {
    let modes = [
        RetryBudgetConfig::TokenBucket(TokenBudgetConfig::default()),
        RetryBudgetConfig::Grpc(GrpcThrottleConfig::default()),
        RetryBudgetConfig::Aws(AwsRetryQuotaConfig::default()),
        RetryBudgetConfig::Windowed(WindowedBudgetConfig::default()),
    ];
    let bad = RetryBudgetConfig::Grpc(GrpcThrottleConfig {
        max_tokens: f64::NAN,
        token_ratio: 0.1,
    });
    for a in modes {
        for b in modes {
            check(
                RetryBudget::new,
                RetryBudget::reset,
                drive_retry_budget,
                a,
                b,
                bad,
            );
        }
    }
}

// ----------------------------------------------------------------- limiter, admission

fn drive_limiter(l: &mut Limiter) -> String {
    let mut out = String::new();
    let mut held = Vec::new();
    for i in 0..40u64 {
        let t = ms(i * 30);
        match l.try_acquire(t, Priority::new((i % 4) as u8).unwrap()) {
            Ok(p) => held.push(p),
            Err(r) => write!(out, "{i}:{}:{} ", r.reason.name(), r.retry_after(t).0).unwrap(),
        }
        if i % 3 == 0 {
            if let Some(p) = held.pop() {
                if i % 2 == 0 {
                    l.on_dropped(p, t.saturating_add(ms(40)));
                } else {
                    l.on_success(p, t.saturating_add(ms(5)));
                }
            }
        }
    }
    for p in held {
        l.on_ignore(p);
    }
    write!(out, "{:?}", l.stats()).unwrap();
    out
}

#[test]
fn limiter() {
    let aimd = LimiterConfig {
        limit: LimitConfig::Aimd(AimdConfig {
            initial_limit: 6,
            ..AimdConfig::default()
        }),
        min_window_samples: 1,
        ..LimiterConfig::default()
    };
    let fixed = LimiterConfig {
        limit: LimitConfig::Fixed(4),
        ..LimiterConfig::default()
    };
    let bad = LimiterConfig {
        window: Nanos::ZERO,
        ..LimiterConfig::default()
    };
    check(
        Limiter::new,
        Limiter::reset,
        drive_limiter,
        fixed,
        aimd,
        bad,
    );
    check(
        Limiter::new,
        Limiter::reset,
        drive_limiter,
        aimd,
        fixed,
        bad,
    );
    check(
        Limiter::new,
        Limiter::reset,
        drive_limiter,
        LimiterConfig::default(),
        aimd,
        bad,
    );
}

fn drive_admission(a: &mut Admission) -> String {
    let mut out = String::new();
    let mut held = Vec::new();
    for i in 0..30u64 {
        let t = ms(i);
        match a.try_acquire(t, Priority::new((i % 3) as u8).unwrap()) {
            Ok(p) => held.push(p),
            Err(r) => write!(out, "{i}:{}:{} ", r.reason.name(), r.retry_after_secs(t)).unwrap(),
        }
        if i % 4 == 0 {
            if let Some(p) = held.pop() {
                a.on_success(p, t.saturating_add(ms(2)));
            }
        }
    }
    for p in held {
        a.on_dropped(p, ms(100));
    }
    write!(out, "{:?}", a.stats()).unwrap();
    out
}

#[test]
fn admission() {
    let small = AdmissionConfig {
        limits: [8, 6, 6, 6, 6, 6, 6, 6],
        ..AdmissionConfig::default()
    };
    let mut bad = AdmissionConfig::default();
    bad.limits[3] = 0;
    check(
        Admission::new,
        Admission::reset,
        drive_admission,
        AdmissionConfig::default(),
        small,
        bad,
    );
}

// ----------------------------------------------------------------- latency, hedging, throttle

fn drive_tracker(t: &mut LatencyTracker<4, 512>) -> String {
    for i in 0..500u64 {
        t.record(ms(i * 10), Nanos(1_000 + (i * 7919) % 100_000));
    }
    format!(
        "{:?} {:?} {:?}",
        t.summary(ms(5_000)),
        t.propose_timeout(ms(5_000)),
        t.stats()
    )
}

#[test]
fn latency_tracker() {
    let c = |secs, min_samples| LatencyTrackerConfig {
        window: Nanos::from_secs(secs),
        min_samples,
        ..LatencyTrackerConfig::default()
    };
    check(
        LatencyTracker::new,
        LatencyTracker::reset,
        drive_tracker,
        c(10, 10),
        c(1, 1000),
        c(0, 1),
    );
}

fn drive_hedging(h: &mut Hedging<4, 512>) -> String {
    let mut out = String::new();
    let budget = TokenBudget::new(TokenBudgetConfig::default()).unwrap();
    for i in 0..300u64 {
        h.record_latency(ms(i), Nanos(1_000_000 + (i * 7919) % 9_000_000));
        if i % 20 == 0 {
            let sent = u32::from(i % 40 == 0);
            let d = h.should_hedge(
                ms(i),
                ms(i).saturating_sub(ms(8)),
                sent,
                true,
                Some(&budget),
            );
            write!(out, "{} ", d.name()).unwrap();
        }
    }
    write!(out, "{:?} {:?}", h.hedge_delay(ms(300)), h.stats()).unwrap();
    out
}

#[test]
fn hedging() {
    let c = |min_samples, max_hedges| HedgingConfig {
        min_samples,
        max_hedges,
        refresh_interval: Nanos::ZERO,
        tracker: LatencyTrackerConfig {
            window: Nanos::from_secs(1),
            ..LatencyTrackerConfig::default()
        },
        ..HedgingConfig::default()
    };
    check(
        Hedging::new,
        Hedging::reset,
        drive_hedging,
        c(50, 2),
        c(20, 1),
        c(0, 1),
    );
}

fn drive_throttle(t: &mut AdaptiveThrottle) -> String {
    let mut out = String::new();
    for i in 0..200u64 {
        let now = ms(i * 100);
        let rejected = t.should_reject(now);
        out.push(if rejected { 'r' } else { '.' });
        if !rejected && i % 4 == 0 {
            t.on_accepted(now);
        }
    }
    write!(out, " {:?} {:?}", t.window(ms(20_000)), t.stats()).unwrap();
    out
}

#[test]
fn adaptive_throttle() {
    let seeded = AdaptiveThrottleConfig {
        seed: 7,
        ..AdaptiveThrottleConfig::strict_success_rate()
    };
    let bad = AdaptiveThrottleConfig {
        k: 0.5,
        ..AdaptiveThrottleConfig::default()
    };
    check(
        AdaptiveThrottle::new,
        AdaptiveThrottle::reset,
        drive_throttle,
        AdaptiveThrottleConfig::default(),
        seeded,
        bad,
    );
}

// ----------------------------------------------------------------- retry policy, queue, brownout

fn drive_policy(p: &mut RetryPolicy) -> String {
    let rng = Rng::new(3);
    let budget = TokenBudget::new(TokenBudgetConfig {
        capacity: 2.0,
        ratio: 0.0,
    })
    .unwrap();
    let mut out = String::new();
    for attempts in 1..6 {
        for outcome in [
            Outcome::Timeout,
            Outcome::OtherTransient,
            Outcome::Overloaded,
        ] {
            let ctx = RetryContext::new(attempts, outcome).with_time_left(Some(ms(500)));
            write!(out, "{:?} ", p.decide(ms(1), ctx, &rng, Some(&budget))).unwrap();
        }
    }
    write!(out, "{:?}", p.stats()).unwrap();
    out
}

#[test]
fn retry_policy() {
    let c = |max_attempts| RetryPolicyConfig {
        max_attempts,
        ..RetryPolicyConfig::default()
    };
    check(
        RetryPolicy::new,
        RetryPolicy::reset,
        drive_policy,
        c(5),
        c(3),
        c(0),
    );
}

fn drive_queue(q: &mut QueueDiscipline<16>) -> String {
    let mut out = String::new();
    for i in 0..40u64 {
        let t = ms(i * 7);
        let p = Priority::new((i % 3) as u8).unwrap();
        let deadline = (i % 5 == 0).then(|| t.saturating_add(ms(20)));
        if q.push(t, i, p, deadline).is_err() {
            write!(out, "full{i} ").unwrap();
        }
        if i % 3 == 0 {
            if let Some(d) = q.pop(t) {
                write!(out, "{}{} ", d.waiter.id, d.order.name()).unwrap();
            }
            for d in q.dropped() {
                write!(out, "x{}{} ", d.waiter.id, d.reason.name()).unwrap();
            }
        }
        if i == 20 {
            let _ = q.remove(19);
        }
    }
    write!(out, "{} {:?}", q.expire(ms(400)), q.stats()).unwrap();
    out
}

#[test]
fn queue_discipline() {
    let c = |capacity, lifo| QueueDisciplineConfig {
        capacity,
        lifo,
        interval: ms(30),
        target: ms(10),
        ..QueueDisciplineConfig::default()
    };
    check(
        QueueDiscipline::new,
        QueueDiscipline::reset,
        drive_queue,
        c(16, false),
        c(8, true),
        c(17, true),
    );
}

fn drive_brownout(b: &mut Brownout) -> String {
    let mut out = String::new();
    for k in RefusalKind::ALL {
        write!(out, "{} ", b.on_refusal(k).name()).unwrap();
    }
    b.on_full();
    write!(out, "{:?}", b.stats()).unwrap();
    out
}

#[test]
fn brownout() {
    let optional = BrownoutConfig {
        optional: true,
        ..BrownoutConfig::default()
    };
    let bad = BrownoutConfig {
        optional: true,
        fallback_on: RefusalKinds::NONE,
        ..BrownoutConfig::default()
    };
    check(
        Brownout::new,
        Brownout::reset,
        drive_brownout,
        BrownoutConfig::default(),
        optional,
        bad,
    );
}

#[test]
fn brownout_table() {
    fn drive(t: &mut BrownoutTable<4>) -> String {
        let decisions: Vec<_> = (0..6u64)
            .map(|key| t.on_refusal(key, RefusalKind::Timeout).name())
            .collect();
        format!("{decisions:?} {} {} {:?}", t.len(), t.unknown(), t.totals())
    }
    let optional = BrownoutConfig {
        optional: true,
        ..BrownoutConfig::default()
    };
    let mut used = BrownoutTable::<4>::new();
    used.register(1, optional).unwrap();
    used.register(2, BrownoutConfig::default()).unwrap();
    let _ = drive(&mut used);
    used.reset();
    let mut fresh = BrownoutTable::<4>::new();
    assert_eq!(drive(&mut used), drive(&mut fresh));
    let mut z = zeroed::<BrownoutTable<4>>();
    assert_eq!(drive(&mut z), drive(&mut BrownoutTable::<4>::new()));
    z.reset();
    z.register(3, optional).unwrap();
    fresh.reset();
    fresh.register(3, optional).unwrap();
    assert_eq!(drive(&mut z), drive(&mut fresh));
}

/// `reset` writes in place: the largest shapes are built from zeroed heap memory on a
/// thread whose whole stack (128 KiB) is far smaller than any of them, so no temporary of
/// the guard's size can have been made.
#[test]
fn the_largest_shapes_build_in_place_on_a_small_stack() {
    std::thread::Builder::new()
        .stack_size(128 * 1024)
        .spawn(|| {
            let mut q = zeroed::<QueueDiscipline<65_536>>(); // about 5 MiB
            q.reset(QueueDisciplineConfig {
                capacity: 65_536,
                ..QueueDisciplineConfig::default()
            })
            .unwrap();
            for i in 0..65_536 {
                q.push(Nanos(i), i, Priority::CRITICAL, None).unwrap();
            }
            assert!(q.push(Nanos(1), 1, Priority::CRITICAL, None).is_err());
            assert_eq!(q.pop(Nanos(1)).map(|d| d.waiter.id), Some(0));

            let mut b = zeroed::<CircuitBreaker<65_536>>(); // 512 KiB of cells
            b.reset(CircuitBreakerConfig {
                window_size: 65_536,
                ..CircuitBreakerConfig::default()
            })
            .unwrap();
            let p = b.try_acquire(Nanos(1)).unwrap();
            let _ = b.on_failure(p, Nanos(2));
            assert_eq!(b.window_counts(Nanos(3)).failures, 1);

            let mut t = zeroed::<LatencyTracker<64, 1_920>>(); // 960 KiB
            t.reset(LatencyTrackerConfig::default()).unwrap();
            t.record(Nanos(5), Nanos(1_000));
            assert_eq!(t.count(Nanos(5)), 1);

            let mut k = zeroed::<KeyedBreakers<64, 1_024>>(); // 64 breakers of 8 KiB cells
            k.reset(CircuitBreakerConfig::default()).unwrap();
            assert!(k.try_acquire(42, Nanos(1)).is_ok());
        })
        .unwrap()
        .join()
        .unwrap();
}
