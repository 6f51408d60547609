//! Benchmarks for `circuit_breaker` beside the atomic baseline.
//!
//! Group `circuit_breaker`:
//! - `allow_record_closed`: `try_acquire` + `on_success` of a fast call on a closed breaker
//!   whose count window (100 calls) is full: the hot path;
//! - `allow_record_time`: the same with a 10 s time window in 1 s buckets;
//! - `record_failure_scan`: alternating failures and successes in a full 100-call window
//!   that cannot open (threshold 100 %): each failure scans the 100 slots (the evaluation
//!   path), each success does not; the figure is the average of the two;
//! - `try_acquire_open`: a refused call on an open breaker;
//! - `keyed_lookup`: `get_or_insert` of a present key in a 16-slot keyed set.
//!
//! `/1t` is one thread; `/2t` is two threads on one shared breaker (`common::two_threads`).
mod common;

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use guards_core::circuit_breaker::{
    key_of, CircuitBreaker, CircuitBreakerConfig, KeyedBreakers, WindowKind,
};
use guards_core::Nanos;

fn baseline(c: &mut Criterion) {
    common::baseline(c, "circuit_breaker");
}

/// A closed breaker whose 100-call window is full of fast successes.
fn closed_count() -> CircuitBreaker {
    let b = CircuitBreaker::new(CircuitBreakerConfig::default()).unwrap();
    for _ in 0..100 {
        let p = b.try_acquire(Nanos::ZERO).unwrap();
        b.on_success(p, Nanos::ZERO);
    }
    b
}

fn closed_time() -> CircuitBreaker {
    CircuitBreaker::new(CircuitBreakerConfig {
        window_kind: WindowKind::Time,
        window_duration: Nanos::from_secs(10),
        window_buckets: 10,
        minimum_calls: 10,
        ..CircuitBreakerConfig::default()
    })
    .unwrap()
}

/// A full window that never opens: the failure threshold is 100 % and half the calls succeed.
fn scanning() -> CircuitBreaker {
    let b = CircuitBreaker::new(CircuitBreakerConfig {
        failure_rate_threshold: 1.0,
        ..CircuitBreakerConfig::default()
    })
    .unwrap();
    for _ in 0..100 {
        let p = b.try_acquire(Nanos::ZERO).unwrap();
        b.on_success(p, Nanos::ZERO);
    }
    b
}

fn open() -> CircuitBreaker {
    let b = CircuitBreaker::new(CircuitBreakerConfig {
        window_size: 1,
        open_duration: Nanos::from_secs(3600),
        max_open_duration: Nanos::from_secs(3600),
        ..CircuitBreakerConfig::default()
    })
    .unwrap();
    let p = b.try_acquire(Nanos::ZERO).unwrap();
    b.on_failure(p, Nanos::ZERO);
    b
}

fn keyed() -> KeyedBreakers {
    let set = KeyedBreakers::new(CircuitBreakerConfig::default()).unwrap();
    for name in ["stock.view", "stock.reserve", "prices.get", "cart.read"] {
        set.get_or_insert(key_of(name.as_bytes())).unwrap();
    }
    set
}

fn allow_record(b: &CircuitBreaker, now: Nanos) {
    let p = b.try_acquire(now).unwrap();
    black_box(b.on_success(p, now));
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("circuit_breaker");

    let b = closed_count();
    g.bench_function("allow_record_closed/1t", |bn| {
        bn.iter(|| allow_record(&b, Nanos::from_millis(1)))
    });
    g.bench_function("allow_record_closed/2t", |bn| {
        bn.iter_custom(|iters| {
            let b = Arc::new(closed_count());
            common::two_threads(iters, move |_| allow_record(&b, Nanos::from_millis(1)))
        })
    });

    let b = closed_time();
    g.bench_function("allow_record_time/1t", |bn| {
        let mut i = 0u64;
        bn.iter(|| {
            i += 1;
            allow_record(&b, Nanos(i))
        })
    });
    g.bench_function("allow_record_time/2t", |bn| {
        bn.iter_custom(|iters| {
            let b = Arc::new(closed_time());
            common::two_threads(iters, move |i| allow_record(&b, Nanos(i)))
        })
    });

    let b = scanning();
    g.bench_function("record_failure_scan/1t", |bn| {
        let mut i = 0u64;
        bn.iter(|| {
            i += 1;
            let p = b.try_acquire(Nanos::ZERO).unwrap();
            if i % 2 == 0 {
                black_box(b.on_failure(p, Nanos::ZERO));
            } else {
                black_box(b.on_success(p, Nanos::ZERO));
            }
        })
    });
    g.bench_function("record_failure_scan/2t", |bn| {
        bn.iter_custom(|iters| {
            let b = Arc::new(scanning());
            common::two_threads(iters, move |i| {
                let p = b.try_acquire(Nanos::ZERO).unwrap();
                if i % 2 == 0 {
                    black_box(b.on_failure(p, Nanos::ZERO));
                } else {
                    black_box(b.on_success(p, Nanos::ZERO));
                }
            })
        })
    });

    let b = open();
    g.bench_function("try_acquire_open/1t", |bn| {
        bn.iter(|| black_box(b.try_acquire(Nanos::from_secs(1)).is_err()))
    });
    g.bench_function("try_acquire_open/2t", |bn| {
        bn.iter_custom(|iters| {
            let b = Arc::new(open());
            common::two_threads(iters, move |_| {
                black_box(b.try_acquire(Nanos::from_secs(1)).is_err());
            })
        })
    });

    let set = keyed();
    let key = key_of(b"stock.reserve");
    g.bench_function("keyed_lookup/1t", |bn| {
        bn.iter(|| black_box(set.get_or_insert(black_box(key)).is_ok()))
    });
    g.bench_function("keyed_lookup/2t", |bn| {
        bn.iter_custom(|iters| {
            let set = Arc::new(keyed());
            common::two_threads(iters, move |_| {
                black_box(set.get_or_insert(black_box(key)).is_ok());
            })
        })
    });

    g.finish();
}

criterion::criterion_group!(circuit_breaker, baseline, benches);
criterion::criterion_main!(circuit_breaker);
