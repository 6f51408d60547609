#![cfg(not(loom))]
//! Integration tests for the circuit breaker: Basketly's C6 settings and reasoning
//! (docs/basketly.md) with explicit times, open-duration growth, discarded outcomes, the time
//! window, the keyed set, a proptest against a sequential reference model, and a two-thread
//! stress test.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use guards_core::circuit_breaker::{
    key_of, BreakerState, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerPermit,
    CircuitBreakerRejectReason, KeyedBreakers, OutcomeEffect, WindowCounts, WindowKind,
};
use guards_core::{ConfigErrorKind, Nanos, Rng};
use proptest::prelude::*;

fn ms(v: u64) -> Nanos {
    Nanos::from_millis(v)
}

fn secs(v: u64) -> Nanos {
    Nanos::from_secs(v)
}

fn c6() -> CircuitBreaker {
    CircuitBreaker::new(CircuitBreakerConfig::fast_trip()).unwrap()
}

fn call<const C: usize>(b: &CircuitBreaker<C>, t: Nanos, failed: bool) -> OutcomeEffect {
    let p = b.try_acquire(t).expect("admitted");
    if failed {
        b.on_failure(p, t)
    } else {
        b.on_success(p, t)
    }
}

// ---------------------------------------------------------------------------------------
// Basketly C6: last 20, >= 50 %, open 5 s, 3 probes with a 100 ms timeout.
// ---------------------------------------------------------------------------------------

#[test]
fn c6_opens_as_soon_as_the_window_is_full_of_failures_and_not_before() {
    let b = c6();
    for i in 0..19 {
        assert_eq!(call(&b, ms(i), true), OutcomeEffect::Counted, "call {i}");
        assert_eq!(b.state(ms(i)), BreakerState::Closed);
    }
    assert_eq!(
        b.window_counts(ms(18)),
        WindowCounts {
            calls: 19,
            failures: 19,
            slow: 0
        }
    );
    assert_eq!(call(&b, ms(19), true), OutcomeEffect::Opened);
    assert_eq!(b.state(ms(19)), BreakerState::Open);
}

#[test]
fn c6_half_failed_full_window_opens_on_the_twentieth_call() {
    // 10 successes then 10 failures: 10 / 20 = 50 % reached exactly on the 20th outcome.
    let b = c6();
    for i in 0..10 {
        assert_eq!(call(&b, ms(i), false), OutcomeEffect::Counted);
    }
    for i in 10..19 {
        assert_eq!(call(&b, ms(i), true), OutcomeEffect::Counted);
    }
    assert_eq!(call(&b, ms(19), true), OutcomeEffect::Opened);

    // 11 successes then 9 failures: 45 % stays closed; the window slides from there.
    let b = c6();
    for i in 0..11 {
        call(&b, ms(i), false);
    }
    for i in 11..20 {
        assert_eq!(call(&b, ms(i), true), OutcomeEffect::Counted);
    }
    // The 21st outcome (a failure) pushes out a success: 10 of 20 failed.
    assert_eq!(call(&b, ms(20), true), OutcomeEffect::Opened);
}

#[test]
fn c6_open_five_seconds_three_probes_then_close_or_reopen() {
    let b = c6();
    for i in 0..20 {
        call(&b, ms(i), true);
    }
    // Opened at 19 ms: refused until 5.019 s, with that instant as the retry time.
    let r = b.try_acquire(ms(2_500)).unwrap_err();
    assert_eq!(r.reason, CircuitBreakerRejectReason::Open);
    assert_eq!(r.retry_at, ms(5_019));
    assert!(b.try_acquire(ms(5_018)).is_err());

    // Exactly 3 probes, each told 100 ms; a 4th concurrent caller is refused.
    let t = ms(5_019);
    let probes: Vec<CircuitBreakerPermit> = (0..3).map(|_| b.try_acquire(t).unwrap()).collect();
    assert!(probes
        .iter()
        .all(|p| p.is_probe() && p.probe_timeout() == Some(ms(100))));
    assert_eq!(probes[0].probe_deadline(), Some(ms(5_119)));
    let r = b.try_acquire(ms(5_020)).unwrap_err();
    assert_eq!(
        (r.reason, r.retry_at),
        (CircuitBreakerRejectReason::HalfOpenFull, ms(5_120))
    );

    // 3 successes close it with a cleared window.
    let effects: Vec<_> = probes
        .into_iter()
        .map(|p| b.on_success(p, ms(5_030)))
        .collect();
    assert_eq!(
        effects,
        [
            OutcomeEffect::ProbePassed,
            OutcomeEffect::ProbePassed,
            OutcomeEffect::Closed
        ]
    );
    assert_eq!(b.state(ms(5_030)), BreakerState::Closed);
    assert_eq!(b.window_counts(ms(5_030)), WindowCounts::default());
    // The cleared window needs 20 fresh outcomes again before it can open.
    for i in 0..19 {
        assert_eq!(call(&b, ms(5_100 + i), true), OutcomeEffect::Counted);
    }
    assert_eq!(call(&b, ms(5_119), true), OutcomeEffect::Opened);

    // Next half-open: one probe failure reopens it for another 5 s from that failure.
    let p = b.try_acquire(ms(10_119)).unwrap();
    let q = b.try_acquire(ms(10_119)).unwrap();
    assert_eq!(b.on_failure(p, ms(10_150)), OutcomeEffect::Reopened);
    assert_eq!(b.on_success(q, ms(10_160)), OutcomeEffect::Discarded);
    let r = b.try_acquire(ms(10_200)).unwrap_err();
    assert_eq!(
        (r.reason, r.retry_at),
        (CircuitBreakerRejectReason::Open, ms(15_150))
    );
    let s = b.stats();
    assert_eq!(
        (
            s.closed_to_open,
            s.open_to_half_open,
            s.half_open_to_closed,
            s.half_open_to_open
        ),
        (2, 2, 1, 1)
    );
    assert_eq!(b.status().consecutive_opens, 2);
}

#[test]
fn abandoned_probe_reported_as_failure_reopens() {
    let b = c6();
    for i in 0..20 {
        call(&b, ms(i), true);
    }
    let probe = b.try_acquire(ms(5_019)).unwrap();
    let deadline = probe.probe_deadline().unwrap();
    // The caller gives up at the probe deadline and reports a failure, as documented.
    assert_eq!(b.on_failure(probe, deadline), OutcomeEffect::Reopened);
    assert_eq!(b.status().half_open_at, ms(5_119 + 5_000));
}

// ---------------------------------------------------------------------------------------
// Basketly's C6 and 15t: a count window of 20 vs a 10 s time window on a sudden failure.
// ---------------------------------------------------------------------------------------

/// 315 calls a second per instance (one every 3,174,603 ns); healthy for 10 s (3,150 calls),
/// then every call fails. Returns the time after the onset at which the breaker opened.
fn time_to_open<const C: usize>(b: &CircuitBreaker<C>) -> Nanos {
    let spacing = 3_174_603u64;
    let onset = secs(10);
    for i in 0..3_150u64 {
        let t = Nanos(i * spacing);
        assert!(t < onset);
        assert_eq!(call(b, t, false), OutcomeEffect::Counted);
    }
    for j in 0..10_000u64 {
        let t = onset.saturating_add(Nanos(j * spacing));
        if call(b, t, true) == OutcomeEffect::Opened {
            return t.saturating_sub(onset);
        }
    }
    panic!("never opened");
}

#[test]
fn part7_count_window_trips_within_the_first_second() {
    let b = c6();
    let took = time_to_open(&b);
    // The window of 20 is full of successes at the onset; the 10th failure makes 10 / 20:
    // 9 spacings after the onset, about 29 ms.
    assert_eq!(took, Nanos(9 * 3_174_603));
    assert!(took < secs(1));
}

#[test]
fn part7_time_window_takes_about_window_times_threshold() {
    // 10 s window in 1 s buckets, 50 %, no minimum beyond one call (side row 15t).
    let b: CircuitBreaker = CircuitBreaker::new(CircuitBreakerConfig {
        window_kind: WindowKind::Time,
        window_duration: secs(10),
        window_buckets: 10,
        ..CircuitBreakerConfig::fast_trip()
    })
    .unwrap();
    let took = time_to_open(&b);
    // About 3,000 healthy calls sit in the window at the onset; failures must catch up
    // with the healthy calls still in it: roughly 10 s × 50 % = 5 s.
    assert!(took > ms(4_900) && took < ms(5_100), "took {took}");
    // Just before the trip the window held thousands of calls.
    assert!(b.stats().successes == 3_150);
}

// ---------------------------------------------------------------------------------------
// Open-duration growth, slow calls, discarded outcomes, ignore.
// ---------------------------------------------------------------------------------------

#[test]
fn open_duration_grows_on_consecutive_reopens_and_resets_on_close() {
    let b: CircuitBreaker = CircuitBreaker::new(CircuitBreakerConfig {
        window_size: 1,
        open_duration: secs(5),
        open_duration_multiplier: 2.0,
        max_open_duration: secs(30),
        half_open_probes: 1,
        ..CircuitBreakerConfig::default()
    })
    .unwrap();
    assert_eq!(call(&b, secs(0), true), OutcomeEffect::Opened);
    let mut t = secs(0);
    // 5 s, then 10, 20, 30 (capped), 30.
    for expected in [5u64, 10, 20, 30, 30] {
        assert_eq!(b.status().half_open_at, t.saturating_add(secs(expected)));
        t = t.saturating_add(secs(expected));
        let probe = b.try_acquire(t).unwrap();
        assert_eq!(b.on_failure(probe, t), OutcomeEffect::Reopened);
    }
    // Close, then the next opening is back to 5 s.
    t = b.status().half_open_at;
    let probe = b.try_acquire(t).unwrap();
    assert_eq!(b.on_success(probe, t), OutcomeEffect::Closed);
    assert_eq!(call(&b, t, true), OutcomeEffect::Opened);
    assert_eq!(b.status().half_open_at, t.saturating_add(secs(5)));
}

#[test]
fn slow_probe_success_counts_as_a_failed_probe() {
    let b: CircuitBreaker = CircuitBreaker::new(CircuitBreakerConfig {
        slow_call_duration: ms(50),
        ..CircuitBreakerConfig::fast_trip()
    })
    .unwrap();
    for i in 0..20 {
        call(&b, ms(i), true);
    }
    let p = b.try_acquire(ms(5_019)).unwrap();
    assert_eq!(b.on_success(p, ms(5_069)), OutcomeEffect::Reopened);
    assert_eq!(b.stats().probe_failures, 1);
}

#[test]
fn outcomes_from_other_states_and_generations_are_discarded() {
    let b = c6();
    let early = b.try_acquire(ms(0)).unwrap();
    for i in 0..20 {
        call(&b, ms(i), true);
    }
    // Issued while closed, reported while open.
    assert_eq!(b.on_failure(early, ms(25)), OutcomeEffect::Discarded);
    // Probes of one half-open generation, reported after it ended.
    let p1 = b.try_acquire(ms(5_019)).unwrap();
    let p2 = b.try_acquire(ms(5_019)).unwrap();
    assert_eq!(b.on_failure(p1, ms(5_020)), OutcomeEffect::Reopened);
    assert_eq!(b.on_failure(p2, ms(5_021)), OutcomeEffect::Discarded);
    // Ordinary permit from an older closed generation, reported in a newer closed one.
    let b = c6();
    let old = b.try_acquire(ms(0)).unwrap();
    for i in 0..20 {
        call(&b, ms(i), true);
    }
    let probes: Vec<_> = (0..3).map(|_| b.try_acquire(ms(5_019)).unwrap()).collect();
    for p in probes {
        let _ = b.on_success(p, ms(5_020));
    }
    assert_eq!(b.state(ms(5_020)), BreakerState::Closed);
    assert_eq!(b.on_failure(old, ms(5_021)), OutcomeEffect::Discarded);
    assert_eq!(b.window_counts(ms(5_021)), WindowCounts::default());
    assert_eq!(b.stats().discarded, 1);
}

#[test]
fn ignored_outcomes_are_not_counted() {
    let b = c6();
    for i in 0..30 {
        let p = b.try_acquire(ms(i)).unwrap();
        b.on_ignore(p);
    }
    assert_eq!(b.window_counts(ms(30)), WindowCounts::default());
    assert_eq!(b.stats().ignored, 30);
}

#[test]
fn minimum_calls_below_the_window_size() {
    let b: CircuitBreaker = CircuitBreaker::new(CircuitBreakerConfig {
        window_size: 20,
        minimum_calls: 4,
        ..CircuitBreakerConfig::default()
    })
    .unwrap();
    assert_eq!(call(&b, ms(0), false), OutcomeEffect::Counted);
    assert_eq!(call(&b, ms(1), true), OutcomeEffect::Counted);
    assert_eq!(call(&b, ms(2), true), OutcomeEffect::Counted); // 3 calls < 4
    assert_eq!(call(&b, ms(3), false), OutcomeEffect::Opened); // 2 / 4 = 50 %
}

// ---------------------------------------------------------------------------------------
// Time window.
// ---------------------------------------------------------------------------------------

fn time_breaker() -> CircuitBreaker {
    CircuitBreaker::new(CircuitBreakerConfig {
        window_kind: WindowKind::Time,
        window_duration: secs(3),
        window_buckets: 3,
        minimum_calls: 4,
        ..CircuitBreakerConfig::default()
    })
    .unwrap()
}

#[test]
fn time_window_expires_old_buckets() {
    let b = time_breaker();
    for i in 0..3 {
        call(&b, ms(100 + i), false); // period 0
    }
    call(&b, ms(1_500), true); // period 1: 1 of 4
    assert_eq!(b.window_counts(ms(2_999)).calls, 4);
    // At 3.0 s (period 3) period 0 has left the window: 1 call.
    assert_eq!(
        b.window_counts(ms(3_000)),
        WindowCounts {
            calls: 1,
            failures: 1,
            slow: 0
        }
    );
    // 3 more failures in period 3: 4 of 4 failed, minimum reached: opens.
    assert_eq!(call(&b, ms(3_100), true), OutcomeEffect::Counted);
    assert_eq!(call(&b, ms(3_200), true), OutcomeEffect::Counted);
    assert_eq!(call(&b, ms(3_300), true), OutcomeEffect::Opened);
}

#[test]
fn time_window_fast_success_can_complete_the_minimum_and_open() {
    let b = time_breaker();
    for i in 0..3 {
        call(&b, ms(i), true);
    }
    // The 4th call is a success, but 3 of 4 failed: it opens the breaker.
    assert_eq!(call(&b, ms(3), false), OutcomeEffect::Opened);
}

#[test]
fn time_window_is_cleared_on_close() {
    let b: CircuitBreaker = CircuitBreaker::new(CircuitBreakerConfig {
        window_kind: WindowKind::Time,
        window_duration: secs(10),
        window_buckets: 10,
        minimum_calls: 1,
        open_duration: ms(500),
        half_open_probes: 1,
        ..CircuitBreakerConfig::default()
    })
    .unwrap();
    assert_eq!(call(&b, ms(100), true), OutcomeEffect::Opened);
    let p = b.try_acquire(ms(600)).unwrap();
    assert_eq!(b.on_success(p, ms(700)), OutcomeEffect::Closed);
    // Same 1 s bucket as the failure that opened it, yet the window starts empty.
    assert_eq!(b.window_counts(ms(800)), WindowCounts::default());
    assert_eq!(call(&b, ms(900), false), OutcomeEffect::Counted);
    assert_eq!(b.window_counts(ms(900)).calls, 1);
}

// ---------------------------------------------------------------------------------------
// Keyed set.
// ---------------------------------------------------------------------------------------

#[test]
fn keyed_view_breaker_opens_without_touching_reserve() {
    let set: KeyedBreakers<8> = KeyedBreakers::new(CircuitBreakerConfig::fast_trip()).unwrap();
    let view = set.get_or_insert(key_of(b"stock.view")).unwrap();
    let reserve = set.get_or_insert(key_of(b"stock.reserve")).unwrap();
    for i in 0..20 {
        call(view, ms(i), true);
        call(reserve, ms(i), false);
    }
    assert_eq!(view.state(ms(20)), BreakerState::Open);
    assert_eq!(reserve.state(ms(20)), BreakerState::Closed);
    let again = set.get(key_of(b"stock.view")).unwrap();
    assert_eq!(again.state(ms(20)), BreakerState::Open);
    assert_eq!(set.len(), 2);
}

#[test]
fn keyed_set_reports_full() {
    let set: KeyedBreakers<4> = KeyedBreakers::new(CircuitBreakerConfig::fast_trip()).unwrap();
    for k in 1..=4u64 {
        set.get_or_insert(k).unwrap();
    }
    let e = set.get_or_insert(5).err().unwrap();
    assert_eq!(e.key, 5);
    assert!(e.to_string().contains("full"));
    assert!(set.get_or_insert(3).is_ok());
    assert_eq!(set.stats().full, 1);
}

#[test]
fn keyed_concurrent_inserts_agree() {
    let set: Arc<KeyedBreakers<64>> =
        Arc::new(KeyedBreakers::new(CircuitBreakerConfig::fast_trip()).unwrap());
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let set = Arc::clone(&set);
            std::thread::spawn(move || {
                (0..48u64)
                    .map(|k| set.get_or_insert(k * 7919).unwrap() as *const _ as usize)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let results: Vec<Vec<usize>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(results[0], results[1]);
    assert_eq!(set.len(), 48);
    assert_eq!(set.stats().entries, 48);
}

// ---------------------------------------------------------------------------------------
// Config rejections through `new`.
// ---------------------------------------------------------------------------------------

#[test]
fn new_rejects_invalid_configs() {
    let d = CircuitBreakerConfig::default();
    let cases: Vec<(CircuitBreakerConfig, &str, ConfigErrorKind)> = vec![
        (
            CircuitBreakerConfig {
                failure_rate_threshold: f64::INFINITY,
                ..d
            },
            "failure_rate_threshold",
            ConfigErrorKind::NotFinite,
        ),
        (
            CircuitBreakerConfig {
                slow_call_rate_threshold: -0.1,
                ..d
            },
            "slow_call_rate_threshold",
            ConfigErrorKind::Negative,
        ),
        (
            CircuitBreakerConfig {
                open_duration: Nanos::ZERO,
                ..d
            },
            "open_duration",
            ConfigErrorKind::Zero,
        ),
        (
            CircuitBreakerConfig {
                half_open_probes: 0,
                ..d
            },
            "half_open_probes",
            ConfigErrorKind::Zero,
        ),
        (
            CircuitBreakerConfig {
                window_size: 200,
                ..d
            },
            "window_size",
            ConfigErrorKind::OutOfRange,
        ),
        (
            CircuitBreakerConfig {
                window_kind: WindowKind::Time,
                window_buckets: 50,
                window_duration: secs(50),
                ..d
            },
            "window_buckets",
            ConfigErrorKind::OutOfRange,
        ),
    ];
    for (cfg, field, kind) in cases {
        let e = CircuitBreaker::<128>::new(cfg).unwrap_err();
        assert_eq!((e.field(), e.kind()), (field, kind), "{e}");
    }
}

// ---------------------------------------------------------------------------------------
// proptest against a sequential reference model.
// ---------------------------------------------------------------------------------------

/// The reference: an explicit state machine and a `VecDeque` (count window) or a list of
/// timestamped outcomes (time window), evaluated on every recorded outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MState {
    Closed,
    Open { until: u64 },
    HalfOpen { issued: u64, passed: u64, due: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MPermit {
    at: u64,
    generation: u32,
    probe: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MAcquire {
    Call(u32),
    Probe(u32),
    Rejected(CircuitBreakerRejectReason, u64),
}

struct Model {
    cfg: CircuitBreakerConfig,
    state: MState,
    generation: u32,
    opens: u32,
    count: VecDeque<(bool, bool)>,
    timed: Vec<(u64, bool, bool)>,
}

impl Model {
    fn new(cfg: CircuitBreakerConfig) -> Self {
        Model {
            cfg,
            state: MState::Closed,
            generation: 0,
            opens: 0,
            count: VecDeque::new(),
            timed: Vec::new(),
        }
    }

    fn width(&self) -> u64 {
        self.cfg.window_duration.0 / self.cfg.window_buckets
    }

    /// Open duration of the k-th opening in a row (multiplier 1 or 2 only, so exact).
    fn duration(&self, opens: u32) -> u64 {
        let base = self.cfg.open_duration.0;
        let max = self.cfg.max_open_duration.0;
        if self.cfg.open_duration_multiplier == 1.0 {
            return base.min(max);
        }
        let mut d = base;
        for _ in 1..opens {
            d = d.saturating_mul(2).min(max);
        }
        d.min(max)
    }

    fn open(&mut self, now: u64) {
        self.opens = (self.opens + 1).min(1023);
        let until = now + self.duration(self.opens);
        let until_us = until.div_ceil(1_000) * 1_000;
        self.state = MState::Open { until: until_us };
        self.generation = self.generation.wrapping_add(1);
    }

    fn acquire(&mut self, now: u64) -> MAcquire {
        match self.state {
            MState::Closed => MAcquire::Call(self.generation),
            MState::Open { until } if now < until => {
                MAcquire::Rejected(CircuitBreakerRejectReason::Open, until)
            }
            MState::Open { .. } => {
                self.generation += 1;
                self.state = MState::HalfOpen {
                    issued: 1,
                    passed: 0,
                    due: self.due(now),
                };
                MAcquire::Probe(self.generation)
            }
            MState::HalfOpen {
                issued,
                passed,
                due,
            } => {
                if issued >= self.cfg.half_open_probes {
                    if now >= due {
                        // Every probe out is past its timeout: a failed probe.
                        self.open(due);
                        return self.acquire(now);
                    }
                    MAcquire::Rejected(
                        CircuitBreakerRejectReason::HalfOpenFull,
                        now + self.cfg.probe_timeout.0,
                    )
                } else {
                    self.state = MState::HalfOpen {
                        issued: issued + 1,
                        passed,
                        due: due.max(self.due(now)),
                    };
                    MAcquire::Probe(self.generation)
                }
            }
        }
    }

    /// When a probe issued at `now` is due, rounded up to a microsecond.
    fn due(&self, now: u64) -> u64 {
        (now + self.cfg.probe_timeout.0).div_ceil(1_000) * 1_000
    }

    fn counts(&self, now: u64) -> WindowCounts {
        let mut c = WindowCounts::default();
        let mut add = |f: bool, s: bool| {
            c.calls += 1;
            c.failures += f as u64;
            c.slow += s as u64;
        };
        match self.cfg.window_kind {
            WindowKind::Count => self.count.iter().for_each(|&(f, s)| add(f, s)),
            WindowKind::Time => {
                let k = now / self.width();
                for &(p, f, s) in &self.timed {
                    if p <= k && k - p < self.cfg.window_buckets {
                        add(f, s);
                    }
                }
            }
        }
        c
    }

    fn min_calls(&self) -> u64 {
        match (self.cfg.window_kind, self.cfg.minimum_calls) {
            (WindowKind::Count, 0) => self.cfg.window_size.min(10),
            (WindowKind::Time, 0) => 10,
            (_, m) => m,
        }
    }

    fn outcome(&mut self, p: MPermit, now: u64, failed: bool) -> OutcomeEffect {
        let slow = self.cfg.slow_call_duration != Nanos::MAX
            && now - p.at >= self.cfg.slow_call_duration.0;
        if p.probe {
            let MState::HalfOpen {
                issued,
                passed,
                due,
            } = self.state
            else {
                return OutcomeEffect::Discarded;
            };
            if p.generation != self.generation {
                return OutcomeEffect::Discarded;
            }
            if failed || slow {
                self.open(now);
                return OutcomeEffect::Reopened;
            }
            if passed + 1 >= self.cfg.half_open_probes {
                self.state = MState::Closed;
                self.generation += 1;
                self.opens = 0;
                self.count.clear();
                self.timed.clear();
                return OutcomeEffect::Closed;
            }
            self.state = MState::HalfOpen {
                issued,
                passed: passed + 1,
                due,
            };
            return OutcomeEffect::ProbePassed;
        }
        if self.state != MState::Closed || p.generation != self.generation {
            return OutcomeEffect::Discarded;
        }
        match self.cfg.window_kind {
            WindowKind::Count => {
                self.count.push_back((failed, slow));
                if self.count.len() as u64 > self.cfg.window_size {
                    self.count.pop_front();
                }
            }
            WindowKind::Time => self.timed.push((now / self.width(), failed, slow)),
        }
        let c = self.counts(now);
        let trips = c.calls > 0
            && c.calls >= self.min_calls()
            && (c.failures as f64 / c.calls as f64 >= self.cfg.failure_rate_threshold
                || c.slow as f64 / c.calls as f64 >= self.cfg.slow_call_rate_threshold);
        if trips {
            self.open(now);
            return OutcomeEffect::Opened;
        }
        OutcomeEffect::Counted
    }

    fn ignore(&mut self, p: MPermit) {
        if let MState::HalfOpen {
            issued,
            passed,
            due,
        } = self.state
        {
            if p.probe && p.generation == self.generation && issued > 0 {
                self.state = MState::HalfOpen {
                    issued: issued - 1,
                    passed,
                    due,
                };
            }
        }
    }

    fn state_at(&self, now: u64) -> BreakerState {
        match self.state {
            MState::Closed => BreakerState::Closed,
            MState::Open { until } if now < until => BreakerState::Open,
            _ => BreakerState::HalfOpen,
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Acquire,
    Success(usize),
    Failure(usize),
    Ignore(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Acquire),
        3 => any::<usize>().prop_map(Op::Success),
        3 => any::<usize>().prop_map(Op::Failure),
        1 => any::<usize>().prop_map(Op::Ignore),
        3 => (0u64..4_000).prop_map(Op::Advance),
    ]
}

fn config() -> impl Strategy<Value = CircuitBreakerConfig> {
    let thresholds = prop::sample::select(vec![0.25, 0.5, 0.75, 1.0]);
    (
        any::<bool>(),
        1u64..=8,
        (1u64..=4, 1u64..=3),
        (thresholds.clone(), thresholds),
        (prop::option::of(1u64..=4), 0u64..=8),
        (1u64..=10, any::<bool>(), 10u64..=40),
        (1u64..=3, 1u64..=4),
    )
        .prop_map(
            |(time, n, (buckets, width), (ft, st), (slow, min), (open, grow, max), (k, pt))| {
                let window_kind = if time {
                    WindowKind::Time
                } else {
                    WindowKind::Count
                };
                CircuitBreakerConfig {
                    window_kind,
                    window_size: n,
                    window_duration: ms(buckets * width),
                    window_buckets: buckets,
                    failure_rate_threshold: ft,
                    slow_call_rate_threshold: st,
                    slow_call_duration: slow.map(ms).unwrap_or(Nanos::MAX),
                    minimum_calls: if time { min } else { min.min(n) },
                    open_duration: ms(open),
                    open_duration_multiplier: if grow { 2.0 } else { 1.0 },
                    max_open_duration: ms(max.max(open)),
                    half_open_probes: k,
                    probe_timeout: ms(pt),
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn breaker_matches_the_reference_model(cfg in config(), ops in prop::collection::vec(op(), 1..80)) {
        let real: CircuitBreaker<32> = CircuitBreaker::new(cfg).unwrap();
        let mut model = Model::new(cfg);
        let mut now = 0u64;
        let mut held: Vec<(CircuitBreakerPermit, MPermit)> = Vec::new();
        for op in ops {
            match op {
                Op::Acquire => {
                    let want = model.acquire(now);
                    match real.try_acquire(Nanos(now)) {
                        Ok(p) => {
                            let got = if p.is_probe() { MAcquire::Probe(p.generation()) } else { MAcquire::Call(p.generation()) };
                            prop_assert_eq!(got, want);
                            let m = MPermit { at: now, generation: p.generation(), probe: p.is_probe() };
                            held.push((p, m));
                        }
                        Err(r) => prop_assert_eq!(MAcquire::Rejected(r.reason, r.retry_at.0), want),
                    }
                }
                Op::Success(i) | Op::Failure(i) | Op::Ignore(i) if !held.is_empty() => {
                    let (p, m) = held.remove(i % held.len());
                    match op {
                        Op::Success(_) => prop_assert_eq!(real.on_success(p, Nanos(now)), model.outcome(m, now, false)),
                        Op::Failure(_) => prop_assert_eq!(real.on_failure(p, Nanos(now)), model.outcome(m, now, true)),
                        _ => { real.on_ignore(p); model.ignore(m); }
                    }
                }
                Op::Advance(us) => now += us * 1_000,
                _ => {}
            }
            prop_assert_eq!(real.state(Nanos(now)), model.state_at(now));
            let st = real.status();
            prop_assert_eq!(st.generation, model.generation);
            prop_assert_eq!(st.consecutive_opens, model.opens);
            let want_counts = if model.state == MState::Closed { model.counts(now) } else { WindowCounts::default() };
            prop_assert_eq!(real.window_counts(Nanos(now)), want_counts);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Two-thread stress test.
// ---------------------------------------------------------------------------------------

fn state_code(s: BreakerState) -> u8 {
    s as u8
}

/// Two threads share one breaker and a virtual clock, with random outcomes. Checks: only
/// legal transitions (every generation has one state, consecutive generations follow the
/// state machine), every transition counted once, never more than K probes in a half-open
/// generation, and at the end a closed breaker's window holds no more than N calls and does
/// not meet the trip condition.
#[test]
fn two_threads_random_outcomes_keep_the_invariants() {
    const N: u64 = 16;
    const K: u64 = 3;
    let cfg = CircuitBreakerConfig {
        window_size: N,
        failure_rate_threshold: 0.5,
        slow_call_duration: ms(3),
        slow_call_rate_threshold: 0.75,
        open_duration: ms(2),
        half_open_probes: K,
        probe_timeout: ms(1),
        ..CircuitBreakerConfig::default()
    };
    let b: Arc<CircuitBreaker> = Arc::new(CircuitBreaker::new(cfg).unwrap());
    let clock = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..2u64)
        .map(|id| {
            let b = Arc::clone(&b);
            let clock = Arc::clone(&clock);
            std::thread::spawn(move || {
                let rng = Rng::new(0xB4EA_C0DE + id);
                let mut seen: Vec<(u32, u8)> = Vec::new();
                let mut probes: Vec<u32> = Vec::new();
                let mut effects = [0u64; 6];
                let mut held: Vec<CircuitBreakerPermit> = Vec::new();
                for _ in 0..20_000 {
                    let now = Nanos(clock.fetch_add(rng.below(60_000), Ordering::Relaxed));
                    let st = b.status();
                    seen.push((st.generation, state_code(st.state)));
                    match b.try_acquire(now) {
                        Ok(p) => {
                            if p.is_probe() {
                                probes.push(p.generation());
                            }
                            held.push(p);
                        }
                        Err(r) => assert!(r.retry_at > now, "{r:?} at {now}"),
                    }
                    // Report one held permit most of the time, keeping a few in flight.
                    if !held.is_empty() && (held.len() > 3 || rng.below(4) != 0) {
                        let p = held.swap_remove(rng.below(held.len() as u64) as usize);
                        let later = Nanos(clock.load(Ordering::Relaxed) + rng.below(4_000_000));
                        let e = match rng.below(10) {
                            0..=5 => b.on_success(p, later),
                            6..=8 => b.on_failure(p, later),
                            _ if p.is_probe() => b.on_success(p, later),
                            _ => {
                                b.on_ignore(p);
                                continue;
                            }
                        };
                        effects[e as usize] += 1;
                    }
                }
                for p in held {
                    let e = b.on_failure(p, Nanos(clock.load(Ordering::Relaxed)));
                    effects[e as usize] += 1;
                }
                (seen, probes, effects)
            })
        })
        .collect();
    let mut states: BTreeMap<u32, u8> = BTreeMap::new();
    let mut probes_per_gen: BTreeMap<u32, u64> = BTreeMap::new();
    let mut effects = [0u64; 6];
    for t in threads {
        let (seen, probes, e) = t.join().unwrap();
        for (g, s) in seen {
            let prev = states.insert(g, s);
            assert!(
                prev.is_none() || prev == Some(s),
                "generation {g} seen in two states"
            );
        }
        for g in probes {
            *probes_per_gen.entry(g).or_default() += 1;
        }
        for (a, x) in effects.iter_mut().zip(e) {
            *a += x;
        }
    }
    let st = b.status();
    states.insert(st.generation, state_code(st.state));
    // Generation 0 is closed; each observed pair of consecutive generations is a legal step.
    let closed = state_code(BreakerState::Closed);
    let open = state_code(BreakerState::Open);
    let half = state_code(BreakerState::HalfOpen);
    assert_eq!(states.get(&0).copied().unwrap_or(closed), closed);
    for (g, s) in &states {
        if let Some(next) = states.get(&(g + 1)) {
            let legal = (*s == closed && *next == open)
                || (*s == open && *next == half)
                || (*s == half && (*next == closed || *next == open));
            assert!(legal, "illegal step {s} -> {next} at generation {g}");
        }
    }
    // Probes are never ignored here, so no half-open generation admits more than K.
    let s = b.stats();
    assert!(
        probes_per_gen.values().all(|&n| n <= K),
        "{probes_per_gen:?}"
    );
    // Every transition counted exactly once and matching the effects reported.
    assert_eq!(s.closed_to_open, effects[OutcomeEffect::Opened as usize]);
    assert_eq!(
        s.half_open_to_closed,
        effects[OutcomeEffect::Closed as usize]
    );
    assert_eq!(
        s.half_open_to_open,
        effects[OutcomeEffect::Reopened as usize]
    );
    let transitions =
        s.closed_to_open + s.open_to_half_open + s.half_open_to_closed + s.half_open_to_open;
    assert_eq!(transitions, st.generation as u64);
    assert!(s.closed_to_open > 0 && s.half_open_to_closed > 0, "{s:?}");
    // At quiescence, a closed breaker's window is within bounds and below its thresholds.
    if st.state == BreakerState::Closed {
        let w = b.window_counts(Nanos(clock.load(Ordering::Relaxed)));
        assert!(w.calls <= N);
        let tripped = w.calls >= N
            && (w.failures as f64 / w.calls as f64 >= 0.5
                || w.slow as f64 / w.calls as f64 >= 0.75);
        assert!(!tripped, "missed trip: {w:?}");
    }
}

/// Two threads record into a window that can never trip (one thread only succeeds, the
/// other alternates failure and success, so any two consecutive outcomes hold a success and
/// the failure threshold is 100 %): at quiescence the window holds exactly N outcomes, and
/// after N more known outcomes it holds exactly those.
#[test]
fn two_threads_lose_no_outcome_in_the_count_window() {
    const N: u64 = 32;
    let cfg = CircuitBreakerConfig {
        window_size: N,
        failure_rate_threshold: 1.0,
        slow_call_duration: Nanos::MAX,
        ..CircuitBreakerConfig::default()
    };
    let b: Arc<CircuitBreaker> = Arc::new(CircuitBreaker::new(cfg).unwrap());
    let threads: Vec<_> = (0..2u64)
        .map(|id| {
            let b = Arc::clone(&b);
            std::thread::spawn(move || {
                for i in 0..50_000u64 {
                    let p = b.try_acquire(Nanos(i)).unwrap();
                    let failed = id == 1 && i % 2 == 0;
                    let e = if failed {
                        b.on_failure(p, Nanos(i))
                    } else {
                        b.on_success(p, Nanos(i))
                    };
                    assert_eq!(e, OutcomeEffect::Counted);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let w = b.window_counts(Nanos(0));
    assert_eq!(w.calls, N);
    assert!(w.failures < N);
    let s = b.stats();
    assert_eq!(s.successes + s.failures, 100_000);
    assert_eq!(s.failures, 25_000);
    for i in 0..N {
        call(&b, Nanos(i), i % 4 == 0);
    }
    assert_eq!(
        b.window_counts(Nanos(0)),
        WindowCounts {
            calls: N,
            failures: N / 4,
            slow: 0
        }
    );
}
