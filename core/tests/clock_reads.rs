//! How often each breaker path reads its clock: the lazy-clock contract (`crate::time`).
//!
//! A counting clock (a closure over a `Cell`) stands in for the process's monotonic clock.
//! The figures asserted here are the minimum each path needs: a decision that does not
//! depend on time reads nothing, one that does reads once. A property test then drives a
//! breaker with the counting clock and a twin with plain instants through the same random
//! calls and requires the same answers, so reading lazily never changes a decision.

use core::cell::Cell;

use guards_core::circuit_breaker::{
    BreakerState, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerPermit, OutcomeEffect,
    WindowKind,
};
use guards_core::{Clock, Nanos, Outcome};
use proptest::prelude::*;

/// A clock that reads `at` and counts its reads.
struct Counting {
    at: Cell<Nanos>,
    reads: Cell<u32>,
}

impl Counting {
    fn new() -> Self {
        Counting {
            at: Cell::new(Nanos::ZERO),
            reads: Cell::new(0),
        }
    }
    fn clock(&self) -> impl Fn() -> Nanos + '_ {
        || {
            self.reads.set(self.reads.get() + 1);
            self.at.get()
        }
    }
    fn set(&self, t: Nanos) {
        self.at.set(t);
    }
    /// Reads since the last call.
    fn take(&self) -> u32 {
        self.reads.replace(0)
    }
}

fn ms(v: u64) -> Nanos {
    Nanos::from_millis(v)
}

/// A count window of 4 calls, opening at half failures, slow-call timing off.
fn untimed() -> CircuitBreakerConfig {
    CircuitBreakerConfig {
        window_kind: WindowKind::Count,
        window_size: 4,
        minimum_calls: 4,
        failure_rate_threshold: 0.5,
        slow_call_duration: Nanos::MAX,
        open_duration: ms(100),
        half_open_probes: 2,
        probe_timeout: ms(50),
        ..CircuitBreakerConfig::default()
    }
}

fn acquire(b: &CircuitBreaker, c: &Counting) -> CircuitBreakerPermit {
    b.try_acquire(c.clock()).expect("a permit")
}

#[test]
fn a_closed_untimed_count_window_reads_no_clock() {
    let b: CircuitBreaker = CircuitBreaker::new(untimed()).unwrap();
    let c = Counting::new();
    for i in 0..1000 {
        c.set(ms(i));
        let p = acquire(&b, &c);
        assert_eq!(p.acquired_at(), Nanos::ZERO, "nothing was read to stamp it");
        assert_eq!(
            b.report(p, Outcome::Success, c.clock()),
            OutcomeEffect::Counted
        );
        // One failure in four never reaches the threshold of one half.
        if i % 4 == 0 {
            let p = acquire(&b, &c);
            assert_eq!(
                b.report(p, Outcome::ConnectionError, c.clock()),
                OutcomeEffect::Counted
            );
        }
    }
    assert_eq!(c.take(), 0);
    assert_eq!(b.state(c.clock()), BreakerState::Closed);
    assert_eq!(c.take(), 0, "state() reads the clock only when open");
    assert_eq!(b.window_counts(c.clock()).calls, 4);
    assert_eq!(c.take(), 0, "a count window is counted without time");
}

#[test]
fn the_report_that_trips_reads_once_and_dates_the_opening() {
    let b: CircuitBreaker = CircuitBreaker::new(untimed()).unwrap();
    let c = Counting::new();
    c.set(ms(10));
    // Three failures: the window holds fewer than minimum_calls, nothing trips.
    for _ in 0..3 {
        let p = acquire(&b, &c);
        assert_eq!(
            b.report(p, Outcome::ConnectionError, c.clock()),
            OutcomeEffect::Counted
        );
    }
    assert_eq!(c.take(), 0);
    // A success reaches minimum_calls with the failure rate at 3/4 >= 1/2: it trips, and
    // that branch reads the clock (once) to date the open period.
    let p = acquire(&b, &c);
    c.set(ms(25));
    assert_eq!(
        b.report(p, Outcome::Success, c.clock()),
        OutcomeEffect::Opened
    );
    assert_eq!(c.take(), 1);
    assert_eq!(b.status().half_open_at, ms(125));
}

#[test]
fn open_and_half_open_read_once_per_call() {
    let b: CircuitBreaker = CircuitBreaker::new(untimed()).unwrap();
    let c = Counting::new();
    for _ in 0..4 {
        let p = acquire(&b, &c);
        b.report(p, Outcome::ConnectionError, c.clock());
    }
    assert_eq!(c.take(), 1, "only the trip");
    c.set(ms(50));
    assert!(b.try_acquire(c.clock()).is_err());
    assert_eq!(c.take(), 1, "an open breaker checks its open period");
    assert_eq!(b.state(c.clock()), BreakerState::Open);
    assert_eq!(c.take(), 1);
    c.set(ms(100));
    let probe = acquire(&b, &c);
    assert_eq!(
        c.take(),
        1,
        "the first probe: one read for the transition and its due"
    );
    assert!(probe.is_probe());
    assert_eq!(probe.acquired_at(), ms(100));
    let second = acquire(&b, &c);
    assert_eq!(c.take(), 1);
    assert!(b.try_acquire(c.clock()).is_err());
    assert_eq!(c.take(), 1, "probes full: the overdue check needs the time");
    // A passing probe of an untimed breaker needs no time; the closing one neither.
    assert_eq!(
        b.report(probe, Outcome::Success, c.clock()),
        OutcomeEffect::ProbePassed
    );
    assert_eq!(
        b.report(second, Outcome::Success, c.clock()),
        OutcomeEffect::Closed
    );
    assert_eq!(c.take(), 0);
}

#[test]
fn a_failed_probe_reads_once_to_reopen() {
    let b: CircuitBreaker = CircuitBreaker::new(untimed()).unwrap();
    let c = Counting::new();
    for _ in 0..4 {
        let p = acquire(&b, &c);
        b.report(p, Outcome::ConnectionError, c.clock());
    }
    c.set(ms(100));
    let probe = acquire(&b, &c);
    c.take();
    c.set(ms(130));
    assert_eq!(
        b.report(probe, Outcome::ConnectionError, c.clock()),
        OutcomeEffect::Reopened
    );
    assert_eq!(c.take(), 1);
    assert!(b.status().half_open_at >= ms(130));
}

#[test]
fn a_timed_breaker_reads_at_acquire_and_at_report() {
    let cfg = CircuitBreakerConfig {
        slow_call_duration: ms(30),
        ..untimed()
    };
    let b: CircuitBreaker = CircuitBreaker::new(cfg).unwrap();
    let c = Counting::new();
    c.set(ms(1));
    let p = acquire(&b, &c);
    assert_eq!((c.take(), p.acquired_at()), (1, ms(1)));
    c.set(ms(40));
    assert_eq!(
        b.report(p, Outcome::Success, c.clock()),
        OutcomeEffect::Counted
    );
    assert_eq!(c.take(), 1);
    assert_eq!(
        b.stats().slow_calls,
        1,
        "39 ms against a threshold of 30 ms"
    );
    // An outcome the breaker does not judge reads nothing.
    let p = acquire(&b, &c);
    c.take();
    assert_eq!(
        b.report(p, Outcome::Cancelled, c.clock()),
        OutcomeEffect::Ignored
    );
    assert_eq!(c.take(), 0);
}

#[test]
fn a_time_window_reads_once_per_report_and_not_at_acquire() {
    let cfg = CircuitBreakerConfig {
        window_kind: WindowKind::Time,
        window_duration: ms(1000),
        window_buckets: 10,
        minimum_calls: 100,
        ..untimed()
    };
    let b: CircuitBreaker = CircuitBreaker::new(cfg).unwrap();
    let c = Counting::new();
    for i in 0..50 {
        c.set(ms(i * 10));
        let p = acquire(&b, &c);
        assert_eq!(c.take(), 0);
        assert_eq!(
            b.report(p, Outcome::Success, c.clock()),
            OutcomeEffect::Counted
        );
        assert_eq!(c.take(), 1, "the bucket is chosen by the time");
    }
}

#[test]
fn a_scope_always_carries_its_instant() {
    let b: CircuitBreaker = CircuitBreaker::new(untimed()).unwrap();
    let c = Counting::new();
    c.set(ms(7));
    let scope = b.try_acquire_scoped(c.clock()).unwrap();
    assert_eq!(c.take(), 1);
    assert_eq!(scope.permit().unwrap().acquired_at(), ms(7));
    drop(scope);
    assert_eq!(b.stats().failures, 1);
    assert_eq!(c.take(), 0, "a dropped scope is judged at its acquisition");
}

#[test]
fn a_fixed_instant_is_a_clock() {
    let b: CircuitBreaker = CircuitBreaker::new(untimed()).unwrap();
    let p = b.try_acquire(ms(3)).unwrap();
    assert_eq!(b.on_success(p, ms(4)), OutcomeEffect::Counted);
    assert_eq!(ms(9).now(), ms(9));
}

/// One step of the random walk.
#[derive(Debug, Clone)]
enum Op {
    /// Advance the time by this many ms.
    Advance(u64),
    /// Acquire; on a permit, keep it.
    Acquire,
    /// Report the oldest kept permit with this outcome (index into `OUTCOMES`).
    Report(usize),
}

const OUTCOMES: [Outcome; 5] = [
    Outcome::Success,
    Outcome::ConnectionError,
    Outcome::Timeout,
    Outcome::Cancelled,
    Outcome::Rejected,
];

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            (0u64..40).prop_map(Op::Advance),
            Just(Op::Acquire),
            (0..OUTCOMES.len()).prop_map(Op::Report),
        ],
        1..200,
    )
}

fn configs() -> impl Strategy<Value = CircuitBreakerConfig> {
    (
        any::<bool>(),
        prop_oneof![Just(Nanos::MAX), (1u64..30).prop_map(ms)],
        1u64..6,
        1u64..4,
    )
        .prop_map(|(time, slow, n, probes)| CircuitBreakerConfig {
            window_kind: if time {
                WindowKind::Time
            } else {
                WindowKind::Count
            },
            window_size: n,
            window_duration: ms(60),
            window_buckets: 3,
            minimum_calls: n,
            failure_rate_threshold: 0.5,
            slow_call_duration: slow,
            slow_call_rate_threshold: 0.5,
            open_duration: ms(50),
            half_open_probes: probes,
            probe_timeout: ms(20),
            ..CircuitBreakerConfig::default()
        })
}

proptest! {
    /// The lazy breaker and its eager twin give the same answers, states and counters at
    /// every step, and no call reads the clock more than once.
    #[test]
    fn reading_lazily_changes_no_decision(cfg in configs(), ops in ops()) {
        let lazy: CircuitBreaker = CircuitBreaker::new(cfg).unwrap();
        let eager: CircuitBreaker = CircuitBreaker::new(cfg).unwrap();
        let c = Counting::new();
        let mut now = ms(1);
        let mut held: Vec<(CircuitBreakerPermit, CircuitBreakerPermit)> = Vec::new();
        for op in ops {
            c.set(now);
            match op {
                Op::Advance(d) => now = now.saturating_add(ms(d)),
                Op::Acquire => {
                    let a = lazy.try_acquire(c.clock());
                    prop_assert!(c.take() <= 1);
                    let b = eager.try_acquire(now);
                    match (a, b) {
                        (Ok(a), Ok(b)) => {
                            prop_assert_eq!(a.is_probe(), b.is_probe());
                            prop_assert_eq!(a.generation(), b.generation());
                            if a.is_probe() || cfg.slow_call_duration != Nanos::MAX {
                                prop_assert_eq!(a.acquired_at(), b.acquired_at());
                            }
                            held.push((a, b));
                        }
                        (Err(a), Err(b)) => prop_assert_eq!(a, b),
                        (a, b) => prop_assert!(false, "lazy {:?} eager {:?}", a, b),
                    }
                }
                Op::Report(i) => {
                    if !held.is_empty() {
                        let (a, b) = held.remove(0);
                        let ea = lazy.report(a, OUTCOMES[i], c.clock());
                        prop_assert!(c.take() <= 1);
                        let eb = eager.report(b, OUTCOMES[i], now);
                        prop_assert_eq!(ea, eb);
                    }
                }
            }
            prop_assert_eq!(lazy.status(), eager.status());
            prop_assert_eq!(lazy.stats(), eager.stats());
            c.set(now);
            prop_assert_eq!(lazy.state(c.clock()), eager.state(now));
            c.take();
        }
        for (a, b) in held {
            lazy.on_ignore(a);
            eager.on_ignore(b);
        }
    }
}
