//! Benchmarks for `retry_budget` beside the atomic baseline: each mode's hot path, on one
//! thread and on two threads sharing one budget.
//!
//! Withdraw benches build a fresh budget per sample, sized so that every withdrawal in the
//! sample is granted (the measured path is the successful compare-and-swap, not the cheaper
//! refusal).
mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::Criterion;
use guards_core::retry_budget::{
    AwsRetryQuota, AwsRetryQuotaConfig, GrpcThrottle, GrpcThrottleConfig, TokenBudget,
    TokenBudgetConfig, WindowedBudget, WindowedBudgetConfig,
};
use guards_core::retry_policy::RetryCause;
use guards_core::Nanos;

fn baseline(c: &mut Criterion) {
    common::baseline(c, "retry_budget");
}

/// A token bucket holding `n` tokens (at most 1e9), ratio 0.1.
fn token(n: u64) -> TokenBudget {
    TokenBudget::new(TokenBudgetConfig {
        capacity: (n.clamp(1, 1_000_000_000)) as f64,
        ratio: 0.1,
    })
    .unwrap()
}

fn grpc() -> GrpcThrottle {
    GrpcThrottle::new(GrpcThrottleConfig {
        max_tokens: 1000.0,
        token_ratio: 1.0,
    })
    .unwrap()
}

fn aws() -> AwsRetryQuota {
    AwsRetryQuota::new(AwsRetryQuotaConfig::default()).unwrap()
}

/// A windowed budget whose floor (1e6/s x 60 s) covers one withdrawal every 2 µs.
fn windowed() -> WindowedBudget {
    WindowedBudget::new(WindowedBudgetConfig {
        ttl: Nanos::from_secs(60),
        min_retries_per_sec: 1e6,
        percent_can_retry: 0.2,
    })
    .unwrap()
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("retry_budget");

    // token_bucket (Basketly setting C4)
    g.bench_function("token_bucket.deposit/1t", |b| {
        let t = token(10);
        b.iter(|| t.deposit())
    });
    g.bench_function("token_bucket.deposit/2t", |b| {
        b.iter_custom(|iters| {
            let t = Arc::new(token(10));
            common::two_threads(iters, move |_| t.deposit())
        })
    });
    g.bench_function("token_bucket.withdraw/1t", |b| {
        b.iter_custom(|iters| {
            let t = token(iters + 1);
            let start = Instant::now();
            for _ in 0..iters {
                black_box(t.withdraw());
            }
            start.elapsed()
        })
    });
    g.bench_function("token_bucket.withdraw/2t", |b| {
        b.iter_custom(|iters| {
            let t = Arc::new(token(2 * iters + 1));
            common::two_threads(iters, move |_| {
                black_box(t.withdraw());
            })
        })
    });

    // grpc: the check is a load; outcomes are CAS updates.
    g.bench_function("grpc.withdraw/1t", |b| {
        let t = grpc();
        b.iter(|| black_box(t.withdraw()))
    });
    g.bench_function("grpc.withdraw/2t", |b| {
        b.iter_custom(|iters| {
            let t = Arc::new(grpc());
            common::two_threads(iters, move |_| {
                black_box(t.withdraw());
            })
        })
    });
    g.bench_function("grpc.on_failure_on_success/1t", |b| {
        let t = grpc();
        b.iter(|| {
            t.on_failure();
            t.on_success();
        })
    });
    g.bench_function("grpc.on_failure_on_success/2t", |b| {
        b.iter_custom(|iters| {
            let t = Arc::new(grpc());
            common::two_threads(iters, move |_| {
                t.on_failure();
                t.on_success();
            })
        })
    });

    // aws: a retry and the refund of its success.
    g.bench_function("aws.withdraw_refund/1t", |b| {
        let q = aws();
        b.iter(|| {
            if let Some(r) = q.withdraw(RetryCause::Transient) {
                q.refund(r);
            }
        })
    });
    g.bench_function("aws.withdraw_refund/2t", |b| {
        b.iter_custom(|iters| {
            let q = Arc::new(aws());
            common::two_threads(iters, move |_| {
                if let Some(r) = q.withdraw(RetryCause::Transient) {
                    q.refund(r);
                }
            })
        })
    });

    // windowed: time advances 1 µs (deposit) or 4 µs (withdraw) per call, crossing a
    // bucket every 6 s of virtual time, so sweeps are included at their real frequency.
    g.bench_function("windowed.deposit/1t", |b| {
        b.iter_custom(|iters| {
            let w = windowed();
            let start = Instant::now();
            for i in 0..iters {
                w.deposit(Nanos::from_micros(i));
            }
            start.elapsed()
        })
    });
    g.bench_function("windowed.deposit/2t", |b| {
        b.iter_custom(|iters| {
            let w = Arc::new(windowed());
            common::two_threads(iters, move |i| w.deposit(Nanos::from_micros(i)))
        })
    });
    g.bench_function("windowed.withdraw/1t", |b| {
        b.iter_custom(|iters| {
            let w = windowed();
            let start = Instant::now();
            for i in 0..iters {
                black_box(w.withdraw(Nanos::from_micros(4 * i)));
            }
            start.elapsed()
        })
    });
    g.bench_function("windowed.withdraw/2t", |b| {
        b.iter_custom(|iters| {
            let w = Arc::new(windowed());
            common::two_threads(iters, move |i| {
                black_box(w.withdraw(Nanos::from_micros(4 * i)));
            })
        })
    });
    g.finish();
}

criterion::criterion_group!(all, baseline, benches);
criterion::criterion_main!(all);
