//! Benchmarks for `retry_policy` beside the atomic baseline: one decision that retries a
//! timeout with full jitter (a random draw and a counter increment), on one thread and on
//! two threads sharing the policy and the `Rng`.
mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use guards_core::backoff::BackoffConfig;
use guards_core::retry_policy::{Idempotency, RetryContext, RetryPolicy, RetryPolicyConfig};
use guards_core::{Nanos, Outcome, Rng};

fn baseline(c: &mut Criterion) {
    common::baseline(c, "retry_policy");
}

fn policy() -> RetryPolicy {
    RetryPolicy::new(RetryPolicyConfig {
        max_attempts: 3,
        backoff: BackoffConfig {
            base: Nanos::from_millis(25),
            ..BackoffConfig::default()
        },
        ..RetryPolicyConfig::default()
    })
    .expect("valid config")
}

fn ctx(i: u64) -> RetryContext {
    RetryContext::new(1 + (i & 1) as u32, Outcome::Timeout)
        .with_idempotency(Idempotency::KeyedSideEffect)
        .with_time_left(Some(Nanos::from_millis(1_900)))
}

fn retry_policy(c: &mut Criterion) {
    let mut g = c.benchmark_group("retry_policy");
    let p = policy();
    let rng = Rng::new(1);
    g.bench_function("decide/1t", |b| {
        let mut i = 0u64;
        b.iter(|| {
            i += 1;
            black_box(p.decide(Nanos(i), black_box(ctx(i)), &rng, None))
        })
    });
    g.bench_function("decide/2t", |b| {
        b.iter_custom(|iters| {
            let shared = Arc::new((policy(), Rng::new(1)));
            common::two_threads(iters, move |i| {
                black_box(
                    shared
                        .0
                        .decide(Nanos(i), black_box(ctx(i)), &shared.1, None),
                );
            })
        })
    });
    g.finish();
}

criterion::criterion_group!(benches, baseline, retry_policy);
criterion::criterion_main!(benches);
