#![cfg(not(loom))]
//! Integration tests for `retry_budget`: Basketly's C4 behaviour, proptest against simple
//! sequential reference models of all four modes, and two-thread stress tests.

use std::sync::atomic::{AtomicU64 as StdAtomicU64, Ordering as StdOrdering};
use std::sync::Arc;

use guards_core::retry_budget::{
    AwsRetryQuota, AwsRetryQuotaConfig, GrpcThrottle, GrpcThrottleConfig, RetryBudget,
    RetryBudgetConfig, RetryReceipt, TokenBudget, TokenBudgetConfig, WindowedBudget,
    WindowedBudgetConfig, MICROS_PER_TOKEN,
};
use guards_core::retry_policy::{RetryCause, RetryGate};
use guards_core::Nanos;
use proptest::prelude::*;

const M: u64 = MICROS_PER_TOKEN;

// ---------------------------------------------------------------------------------------
// Basketly C4: with every call failing, retries reach about 10 % of first attempts plus 10.
// ---------------------------------------------------------------------------------------

/// Every request makes one first attempt (deposit 0.1) that fails, then up to
/// `retries_per_request` retries, each of which also fails.
///
/// Reasoning for the exact count. Tokens are conserved: retries allowed = 10 (the full
/// start) + deposits that were not capped − the final balance. Only the very first deposit
/// is capped (the bucket is full then; afterwards every request that retries loses 0.9 net,
/// and once it cannot retry the balance stays below 1.1, so it never refills to 10). So
/// deposits accepted = 0.1 × (N − 1). The final balance is below one token: the last
/// request either was refused (balance < 1) or retried from a balance below 1.1 (the
/// previous balance was below 1, plus 0.1). Hence
/// `retries = floor(10 + 0.1 × (N − 1))`, which is within 1 of `10 + floor(0.1 × N)`,
/// whatever the number of retries each request may make.
fn c4_all_failing(n: u64, retries_per_request: u32) -> u64 {
    let b = TokenBudget::new(TokenBudgetConfig::default()).unwrap();
    let mut retries = 0;
    for _ in 0..n {
        b.deposit();
        for _ in 0..retries_per_request {
            if b.withdraw() {
                retries += 1;
            } else {
                break;
            }
        }
    }
    retries
}

#[test]
fn c4_retries_are_ten_percent_plus_the_burst() {
    for &n in &[11u64, 100, 1_000, 2_060, 10_000] {
        let expected = (10 * M + 100_000 * (n - 1)) / M;
        for per_request in [1, 2, 4] {
            let got = c4_all_failing(n, per_request);
            assert_eq!(
                got, expected,
                "n = {n}, retries per request = {per_request}"
            );
            let rough = 10 + n / 10;
            assert!(got.abs_diff(rough) <= 1, "n = {n}: {got} vs {rough}");
        }
    }
    // For Basketly's 2,060 requests a second: 215 retries, i.e. about 1.1x the calls.
    assert_eq!(c4_all_failing(2_060, 2), 215);
}

#[test]
fn c4_blip_is_fully_retried() {
    // A blip failing 5 % of requests for a while: the budget never refuses.
    let b = TokenBudget::new(TokenBudgetConfig::default()).unwrap();
    for i in 0..10_000u64 {
        b.deposit();
        if i % 20 == 0 {
            assert!(b.withdraw(), "request {i}");
        }
    }
    assert_eq!(b.stats().refusals, 0);
}

#[test]
fn aws_newer_transient_cost() {
    // 500 tokens at 14 per transient retry: about 35 retries of burst per client.
    let q = AwsRetryQuota::new(AwsRetryQuotaConfig {
        transient_cost: 14,
        ..AwsRetryQuotaConfig::default()
    })
    .unwrap();
    let mut n = 0;
    while q.allow_retry(Nanos::ZERO, RetryCause::Transient) {
        n += 1;
    }
    assert_eq!(n, 35);
    // Standard mode: 100 transient retries or 50 timeout retries from a full quota.
    let q = AwsRetryQuota::new(AwsRetryQuotaConfig::default()).unwrap();
    let mut held: Vec<RetryReceipt> = Vec::new();
    while let Some(r) = q.withdraw(RetryCause::Transient) {
        held.push(r);
    }
    assert_eq!(held.len(), 100);
    // Half of them succeed: their cost comes back.
    for r in held.drain(..50) {
        q.refund(r);
    }
    assert_eq!(q.tokens_micros(), 250 * M);
}

// ---------------------------------------------------------------------------------------
// Reference models (plain integers, one thread) and proptest.
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum BucketOp {
    Deposit,
    Withdraw,
}

fn bucket_ops() -> impl Strategy<Value = Vec<BucketOp>> {
    prop::collection::vec(
        prop_oneof![Just(BucketOp::Deposit), Just(BucketOp::Withdraw)],
        0..200,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn token_bucket_matches_model(
        cap_micros in 1_000_000u64..20_000_000,
        ratio_micros in 0u64..2_000_000,
        ops in bucket_ops(),
    ) {
        let b = TokenBudget::new(TokenBudgetConfig {
            capacity: cap_micros as f64 / 1e6,
            ratio: ratio_micros as f64 / 1e6,
        })
        .unwrap();
        prop_assert_eq!(b.capacity_micros(), cap_micros);
        prop_assert_eq!(b.ratio_micros(), ratio_micros);
        let mut bal = cap_micros;
        let (mut dep, mut wd, mut refused) = (0, 0, 0);
        for op in ops {
            match op {
                BucketOp::Deposit => {
                    bal = (bal + ratio_micros).min(cap_micros);
                    dep += 1;
                    b.deposit();
                }
                BucketOp::Withdraw => {
                    let want = bal >= M;
                    if want { bal -= M; wd += 1 } else { refused += 1 }
                    prop_assert_eq!(b.withdraw(), want);
                }
            }
            prop_assert_eq!(b.tokens_micros(), bal);
        }
        let s = b.stats();
        prop_assert_eq!((s.deposits, s.withdrawals, s.refusals), (dep, wd, refused));
    }
}

#[derive(Debug, Clone)]
enum GrpcOp {
    Success,
    Failure,
    Withdraw,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn grpc_matches_model(
        max_milli in 1u64..20_000,
        ratio_milli in 1u64..2_000,
        ops in prop::collection::vec(
            prop_oneof![Just(GrpcOp::Success), Just(GrpcOp::Failure), Just(GrpcOp::Withdraw)],
            0..200,
        ),
    ) {
        let t = GrpcThrottle::new(GrpcThrottleConfig {
            max_tokens: max_milli as f64 / 1e3,
            token_ratio: ratio_milli as f64 / 1e3,
        })
        .unwrap();
        let max = max_milli * 1_000;
        let ratio = ratio_milli * 1_000;
        let mut tokens = max;
        for op in ops {
            match op {
                GrpcOp::Success => { tokens = (tokens + ratio).min(max); t.on_success() }
                GrpcOp::Failure => { tokens = tokens.saturating_sub(M); t.on_failure() }
                // Allowed while tokens > max / 2, compared exactly: 2 * tokens > max.
                GrpcOp::Withdraw => prop_assert_eq!(t.withdraw(), 2 * tokens > max),
            }
            prop_assert_eq!(t.tokens_micros(), tokens);
        }
    }
}

#[derive(Debug, Clone)]
enum AwsOp {
    Withdraw(u8),
    RefundOldest,
    DropOldest,
    Deposit,
}

fn cause(i: u8) -> RetryCause {
    match i % 4 {
        0 => RetryCause::Timeout,
        1 => RetryCause::Transient,
        2 => RetryCause::Throttled,
        _ => RetryCause::Hedge,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn aws_matches_model(
        capacity in 1u64..100,
        costs in prop::array::uniform4(0u64..30),
        increment in 0u64..5,
        ops in prop::collection::vec(
            prop_oneof![
                any::<u8>().prop_map(AwsOp::Withdraw),
                Just(AwsOp::RefundOldest),
                Just(AwsOp::DropOldest),
                Just(AwsOp::Deposit),
            ],
            0..200,
        ),
    ) {
        let [timeout_cost, transient_cost, throttled_cost, hedge_cost] =
            costs.map(|c| c.min(capacity));
        let config = AwsRetryQuotaConfig {
            capacity,
            transient_cost,
            timeout_cost,
            throttled_cost,
            hedge_cost,
            success_increment: increment.min(capacity),
        };
        let q = AwsRetryQuota::new(config).unwrap();
        let model_cost = |c: RetryCause| match c {
            RetryCause::Timeout => timeout_cost,
            RetryCause::Transient => transient_cost,
            RetryCause::Throttled => throttled_cost,
            RetryCause::Hedge => hedge_cost,
        };
        let cap = capacity * M;
        let mut tokens = cap;
        let mut held: std::collections::VecDeque<(u64, RetryReceipt)> = Default::default();
        let mut refunds = 0;
        for op in ops {
            match op {
                AwsOp::Withdraw(i) => {
                    let c = model_cost(cause(i)) * M;
                    let got = q.withdraw(cause(i));
                    if tokens >= c {
                        tokens -= c;
                        let r = got.expect("model allows");
                        prop_assert_eq!(r.cost_micros(), c);
                        held.push_back((c, r));
                    } else {
                        prop_assert!(got.is_none());
                    }
                }
                AwsOp::RefundOldest => {
                    if let Some((c, r)) = held.pop_front() {
                        tokens = (tokens + c).min(cap);
                        refunds += 1;
                        q.on_success(Some(r));
                    }
                }
                AwsOp::DropOldest => {
                    held.pop_front();
                }
                AwsOp::Deposit => {
                    tokens = (tokens + config.success_increment * M).min(cap);
                    q.on_success(None);
                }
            }
            prop_assert_eq!(q.tokens_micros(), tokens);
        }
        prop_assert_eq!(q.stats().refunds, refunds);
    }
}

#[derive(Debug, Clone)]
enum WinOp {
    /// Deposit at `now` = previous now + step (or an earlier time when `back` is set).
    Deposit {
        step: u64,
        back: bool,
    },
    Withdraw {
        step: u64,
        back: bool,
    },
    Tokens {
        step: u64,
    },
}

fn win_ops() -> impl Strategy<Value = Vec<WinOp>> {
    // Steps up to 3 s against a 1 s ttl of 4 buckets: crossings and full expiries.
    let step = prop_oneof![Just(0u64), 0u64..300_000_000, 0u64..3_000_000_000];
    prop::collection::vec(
        prop_oneof![
            (step.clone(), any::<bool>()).prop_map(|(step, back)| WinOp::Deposit { step, back }),
            (step.clone(), any::<bool>()).prop_map(|(step, back)| WinOp::Withdraw { step, back }),
            step.prop_map(|step| WinOp::Tokens { step }),
        ],
        0..150,
    )
}

/// Sequential model of the windowed budget: events stamped with the newest bucket seen.
struct WindowModel {
    width: u64,
    buckets: u64,
    reserve: u64,
    pct: u64,
    head: Option<u64>,
    deposits: Vec<u64>,
    withdrawals: Vec<u64>,
}

impl WindowModel {
    fn at(&mut self, now: u64) -> u64 {
        let e = now / self.width;
        let h = self.head.map_or(e, |h| h.max(e));
        self.head = Some(h);
        h
    }
    fn balance(&self, h: u64) -> i128 {
        let live = |v: &Vec<u64>| v.iter().filter(|&&e| e + self.buckets > h).count() as i128;
        self.reserve as i128 + self.pct as i128 * live(&self.deposits)
            - M as i128 * live(&self.withdrawals)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn windowed_matches_model(
        min_per_sec_milli in 0u64..5_000,
        pct_micros in 0u64..1_500_000,
        start in 0u64..1_000_000_000_000,
        ops in win_ops(),
    ) {
        let config = WindowedBudgetConfig {
            ttl: Nanos::from_secs(1),
            min_retries_per_sec: min_per_sec_milli as f64 / 1e3,
            percent_can_retry: pct_micros as f64 / 1e6,
        };
        let b: WindowedBudget<4> = WindowedBudget::new(config).unwrap();
        // floor = rate x 1 s: milli-retries x 1000 micro-tokens.
        prop_assert_eq!(b.reserve_micros(), min_per_sec_milli * 1_000);
        let mut m = WindowModel {
            width: 250_000_000,
            buckets: 4,
            reserve: min_per_sec_milli * 1_000,
            pct: pct_micros,
            head: None,
            deposits: vec![],
            withdrawals: vec![],
        };
        let mut now = start;
        for op in ops {
            match op {
                WinOp::Deposit { step, back } => {
                    let t = if back { now.saturating_sub(step) } else { now += step; now };
                    let h = m.at(t);
                    m.deposits.push(h);
                    b.deposit(Nanos(t));
                }
                WinOp::Withdraw { step, back } => {
                    let t = if back { now.saturating_sub(step) } else { now += step; now };
                    let h = m.at(t);
                    let want = m.balance(h) >= M as i128;
                    if want { m.withdrawals.push(h) }
                    prop_assert_eq!(b.withdraw(Nanos(t)), want);
                }
                WinOp::Tokens { step } => {
                    now += step;
                    let h = m.at(now);
                    prop_assert_eq!(b.tokens_micros(Nanos(now)) as i128, m.balance(h));
                }
            }
        }
        let s = b.stats();
        prop_assert_eq!(s.deposits, m.deposits.len() as u64);
        prop_assert_eq!(s.withdrawals, m.withdrawals.len() as u64);
    }
}

// ---------------------------------------------------------------------------------------
// Two-thread stress tests: invariants under real contention.
// ---------------------------------------------------------------------------------------

const ITERS: u64 = 4_000;

/// Run `f(thread_index)` on two threads at once and collect the results.
fn two<T: Send + 'static>(f: impl Fn(u64) -> T + Send + Sync + 'static) -> Vec<T> {
    let f = Arc::new(f);
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|i| {
            let f = Arc::clone(&f);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                f(i)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn stress_token_bucket_conserves_tokens() {
    // 1000 tokens, drained first, so the 2 x 4000 x 0.1 = 800 tokens deposited below are
    // never capped: the final balance must be exactly 800 - granted.
    let b = Arc::new(
        TokenBudget::new(TokenBudgetConfig {
            capacity: 1_000.0,
            ratio: 0.1,
        })
        .unwrap(),
    );
    while b.withdraw() {}
    let cap = b.capacity_micros();
    let bb = Arc::clone(&b);
    let granted: u64 = two(move |_| {
        let mut granted = 0;
        for i in 0..ITERS {
            bb.deposit();
            if i % 8 == 0 && bb.withdraw() {
                granted += 1;
            }
            let t = bb.tokens_micros();
            assert!(t <= cap, "balance {t} above capacity");
        }
        granted
    })
    .into_iter()
    .sum();
    assert_eq!(b.tokens_micros(), 2 * ITERS * 100_000 - granted * M);
    let s = b.stats();
    assert_eq!(s.withdrawals, 1_000 + granted);
    assert_eq!(s.deposits, 2 * ITERS);
}

#[test]
fn stress_token_bucket_never_overdraws() {
    // Both threads race for a small bucket; every grant is backed by a token.
    let b = Arc::new(
        TokenBudget::new(TokenBudgetConfig {
            capacity: 3.0,
            ratio: 0.5,
        })
        .unwrap(),
    );
    let bb = Arc::clone(&b);
    let granted: u64 = two(move |_| {
        let mut granted = 0;
        for _ in 0..ITERS {
            if bb.withdraw() {
                granted += 1;
            }
            bb.deposit();
            assert!(bb.tokens_micros() <= 3 * M);
        }
        granted
    })
    .into_iter()
    .sum();
    // Conservation with capping: granted = 3 + accepted deposits - final, and accepted
    // deposits <= 0.5 per deposit call.
    let final_micros = b.tokens_micros();
    assert!(granted * M <= 3 * M + 2 * ITERS * 500_000 - final_micros);
    assert_eq!(b.stats().withdrawals, granted);
    assert_eq!(b.stats().withdrawals + b.stats().refusals, 2 * ITERS);
}

#[test]
fn stress_grpc_bounds() {
    let t = Arc::new(GrpcThrottle::new(GrpcThrottleConfig::default()).unwrap());
    let tt = Arc::clone(&t);
    two(move |i| {
        for k in 0..ITERS {
            if (k + i) % 3 == 0 {
                tt.on_success();
            } else {
                tt.on_failure();
            }
            let _ = tt.withdraw();
            assert!(tt.tokens_micros() <= 10 * M);
        }
    });
    let s = t.stats();
    assert_eq!(s.deposits + s.failures, 2 * ITERS);
    assert_eq!(s.withdrawals + s.refusals, 2 * ITERS);
}

#[test]
fn stress_aws_refunds_are_exact() {
    // Every receipt is refunded: the quota must end exactly full, and never exceed it.
    let q = Arc::new(AwsRetryQuota::new(AwsRetryQuotaConfig::default()).unwrap());
    let qq = Arc::clone(&q);
    let counts = two(move |i| {
        let mut granted = 0u64;
        for k in 0..ITERS {
            if let Some(r) = qq.withdraw(cause((k + i) as u8)) {
                granted += 1;
                assert!(qq.tokens_micros() <= 500 * M);
                qq.refund(r);
            }
        }
        granted
    });
    assert_eq!(q.tokens_micros(), 500 * M);
    assert_eq!(q.stats().refunds, counts.iter().sum::<u64>());
}

#[test]
fn stress_aws_concurrent_drain_never_overdraws() {
    // 500 tokens at 5 per retry and nothing refunded: exactly 100 grants in total.
    let q = Arc::new(AwsRetryQuota::new(AwsRetryQuotaConfig::default()).unwrap());
    let qq = Arc::clone(&q);
    let granted: usize = two(move |_| {
        let mut held = Vec::new();
        for _ in 0..ITERS {
            if let Some(r) = qq.withdraw(RetryCause::Transient) {
                held.push(r);
            }
        }
        held.len()
    })
    .into_iter()
    .sum();
    assert_eq!(granted, 100);
    assert_eq!(q.tokens_micros(), 0);
}

#[test]
fn stress_windowed_single_bucket_is_exact() {
    // All calls in one bucket (no expiry): grants can never exceed 0.1 x deposits, and the
    // final balance accounts for every deposit and grant.
    let b: Arc<WindowedBudget> = Arc::new(
        WindowedBudget::new(WindowedBudgetConfig {
            ttl: Nanos::from_secs(10),
            min_retries_per_sec: 0.0,
            percent_can_retry: 0.1,
        })
        .unwrap(),
    );
    let now = Nanos::from_secs(1_000);
    let bb = Arc::clone(&b);
    let granted: u64 = two(move |_| {
        let mut granted = 0;
        for k in 0..ITERS {
            bb.deposit(now);
            if k % 4 == 0 && bb.withdraw(now) {
                granted += 1;
            }
            assert!(bb.tokens_micros(now) >= 0, "overdrawn");
        }
        granted
    })
    .into_iter()
    .sum();
    assert_eq!(
        b.tokens_micros(now),
        (2 * ITERS * 100_000) as i64 - (granted * M) as i64
    );
    assert!(granted <= 2 * ITERS / 10);
}

#[test]
fn stress_windowed_across_buckets() {
    // Each thread's clock moves 1 ms per call through a 100 ms window of 10 buckets: many
    // boundary races. Counters stay consistent and, once everything has expired, the
    // balance is back to the floor.
    let b: Arc<WindowedBudget> = Arc::new(
        WindowedBudget::new(WindowedBudgetConfig {
            ttl: Nanos::from_millis(100),
            min_retries_per_sec: 100.0,
            percent_can_retry: 0.2,
        })
        .unwrap(),
    );
    let bb = Arc::clone(&b);
    let results = two(move |i| {
        let mut granted = 0u64;
        for k in 0..ITERS {
            let now = Nanos::from_millis(k).saturating_add(Nanos::from_micros(i * 300));
            bb.deposit(now);
            if k % 3 == i && bb.withdraw(now) {
                granted += 1;
            }
        }
        granted
    });
    let s = b.stats();
    assert_eq!(s.deposits, 2 * ITERS);
    assert_eq!(s.withdrawals, results.iter().sum::<u64>());
    let later = Nanos::from_millis(ITERS + 1_000);
    assert_eq!(b.tokens_micros(later), b.reserve_micros() as i64);
    // In steady state each 100 ms window holds ~200 deposits (40 tokens) + a floor of 10:
    // at most ~50 grants a window, far fewer than the ~67 attempts, so some were refused.
    assert!(s.refusals > 0);
}

#[test]
fn wrapper_stress_every_mode() {
    let configs = [
        RetryBudgetConfig::TokenBucket(TokenBudgetConfig::default()),
        RetryBudgetConfig::Grpc(GrpcThrottleConfig::default()),
        RetryBudgetConfig::Aws(AwsRetryQuotaConfig::default()),
        RetryBudgetConfig::Windowed(WindowedBudgetConfig::default()),
    ];
    for config in configs {
        let b: Arc<RetryBudget> = Arc::new(RetryBudget::new(config).unwrap());
        let bb = Arc::clone(&b);
        let attempts = Arc::new(StdAtomicU64::new(0));
        let a2 = Arc::clone(&attempts);
        two(move |i| {
            for k in 0..ITERS / 4 {
                let now = Nanos::from_millis(k);
                bb.deposit(now);
                bb.on_failure(now);
                a2.fetch_add(1, StdOrdering::Relaxed);
                let r = bb.withdraw(now, cause((k + i) as u8));
                if k % 2 == 0 {
                    bb.on_success(now, r);
                }
                let t = bb.tokens_micros(now);
                assert!(t >= 0, "{} balance {t}", bb.mode().name());
            }
        });
        let s = b.stats();
        assert_eq!(
            s.withdrawals + s.refusals,
            attempts.load(StdOrdering::Relaxed),
            "{}",
            b.mode().name()
        );
    }
}
