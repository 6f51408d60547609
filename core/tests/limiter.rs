#![cfg(not(loom))]
//! Integration tests for the limiter: a proptest against a sequential reference model,
//! two-thread stress tests of its invariants, and Basketly's "about 12 useful
//! waiters" experiment (C5) driving each limit algorithm through the real limiter.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use guards_core::limit::{
    AimdConfig, GradientConfig, Limit, LimitConfig, LimitSample, VegasConfig,
};
use guards_core::limiter::{
    Limiter, LimiterConfig, LimiterPermit, LimiterRejectReason, PartitionConfig, MAX_SAMPLE_RTT,
};
use guards_core::priority::MAX_PRIORITIES;
use guards_core::{math, Nanos, Priority, Rng};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

const MS: u64 = 1_000_000;

fn p(level: u8) -> Priority {
    Priority::new(level).unwrap()
}

// ---------------------------------------------------------------- reference model

/// The limiter's semantics, one call at a time, written from its module docs.
struct Model {
    cfg: LimiterConfig,
    alg: Limit,
    in_flight: u64,
    window_start: u64,
    samples: u64,
    rtt_sum: u64,
    drops: u64,
    max_in_flight: u64,
    last_rtt: u64,
    windows: u64,
    /// The ceiling of `set_max_limit`; `None`: none.
    ceiling: Option<u64>,
}

#[derive(Debug, PartialEq)]
enum Decision {
    Admitted {
        in_flight: u64,
        threshold: u64,
    },
    Refused {
        reason: LimiterRejectReason,
        retry_after: Nanos,
        threshold: u64,
        in_flight: u64,
    },
}

impl Model {
    fn new(cfg: LimiterConfig) -> Self {
        Model {
            cfg,
            alg: Limit::new(cfg.limit).unwrap(),
            in_flight: 0,
            window_start: 0,
            samples: 0,
            rtt_sum: 0,
            drops: 0,
            max_in_flight: 0,
            last_rtt: 0,
            windows: 0,
            ceiling: None,
        }
    }

    /// A level's threshold under a limit of `l` (the partition rule).
    fn threshold_under(&self, level: usize, l: u64) -> u64 {
        let part = self.cfg.partitions[level];
        let shared = if part.share >= 1.0 {
            l
        } else {
            ((l as f64 * part.share).floor() as u64).max(1)
        };
        shared.min(part.max_in_flight)
    }

    /// The lower of the level's threshold under the algorithm's limit and under the
    /// ceiling, which never exceeds the ceiling itself (a ceiling of 0 admits nothing).
    fn threshold(&self, level: usize) -> u64 {
        let own = self.threshold_under(level, self.alg.limit());
        match self.ceiling {
            None => own,
            Some(c) => own.min(self.threshold_under(level, c).min(c)),
        }
    }

    fn limit(&self) -> u64 {
        self.alg.limit().min(self.ceiling.unwrap_or(u64::MAX))
    }

    fn retry_after(&self) -> Nanos {
        if self.last_rtt == 0 {
            self.cfg.min_retry_after
        } else {
            Nanos(
                self.last_rtt
                    .clamp(self.cfg.min_retry_after.0, self.cfg.max_retry_after.0),
            )
        }
    }

    fn acquire(&mut self, level: usize) -> Decision {
        let t = self.threshold(level);
        if self.in_flight >= t {
            let reason = if self.in_flight >= self.cfg.partitions[level].max_in_flight {
                LimiterRejectReason::PartitionCap
            } else if self.in_flight >= self.limit() {
                LimiterRejectReason::LimitReached
            } else {
                LimiterRejectReason::ReservedForHigherPriority
            };
            return Decision::Refused {
                reason,
                retry_after: self.retry_after(),
                threshold: t,
                in_flight: self.in_flight,
            };
        }
        self.in_flight += 1;
        Decision::Admitted {
            in_flight: self.in_flight,
            threshold: t,
        }
    }

    /// `outcome`: 0 success, 1 dropped, 2 ignore.
    fn release(&mut self, start: u64, in_flight_at_start: u64, now: u64, outcome: u8) {
        self.in_flight -= 1;
        if outcome == 2 || matches!(self.cfg.limit, LimitConfig::Fixed(_)) {
            return;
        }
        self.samples += 1;
        self.rtt_sum += now.saturating_sub(start).min(MAX_SAMPLE_RTT.0);
        self.drops += u64::from(outcome == 1);
        self.max_in_flight = self.max_in_flight.max(in_flight_at_start);
        if now >= self.window_start.saturating_add(self.cfg.window.0)
            && self.samples >= self.cfg.min_window_samples
        {
            let mean = self.rtt_sum / self.samples;
            self.alg.update(LimitSample {
                now: Nanos(now),
                rtt: Nanos(mean),
                in_flight: self.max_in_flight,
                dropped: self.drops > 0,
            });
            self.last_rtt = mean;
            self.window_start = now;
            self.samples = 0;
            self.rtt_sum = 0;
            self.drops = 0;
            self.max_in_flight = 0;
            self.windows += 1;
        }
    }
}

// ---------------------------------------------------------------- strategies

fn limit_config() -> impl Strategy<Value = LimitConfig> {
    prop_oneof![
        (1u64..30).prop_map(LimitConfig::Fixed),
        (1u64..30, 1u64..200, 0.1f64..0.95).prop_map(|(initial, interval_ms, ratio)| {
            LimitConfig::Aimd(AimdConfig {
                initial_limit: initial,
                max_limit: 60,
                interval: Nanos::from_millis(interval_ms),
                backoff_ratio: ratio,
                ..AimdConfig::default()
            })
        }),
        (1u64..30, any::<u64>()).prop_map(|(initial, seed)| {
            LimitConfig::Vegas(VegasConfig {
                initial_limit: initial,
                probe_multiplier: 2,
                probe_seed: seed,
                ..VegasConfig::default()
            })
        }),
        (1u64..30, 0.1f64..=1.0).prop_map(|(initial, smoothing)| {
            LimitConfig::Gradient(GradientConfig {
                initial_limit: initial,
                smoothing,
                warmup_samples: 3,
                long_window: 5,
                ..GradientConfig::default()
            })
        }),
    ]
}

/// Shares and caps that do not increase from more to less important levels.
fn partitions() -> impl Strategy<Value = [PartitionConfig; MAX_PRIORITIES]> {
    (
        prop::collection::vec(0.05f64..=1.0, MAX_PRIORITIES),
        prop::collection::vec(prop::option::weighted(0.5, 1u64..40), MAX_PRIORITIES),
    )
        .prop_map(|(mut shares, caps)| {
            shares.sort_by(|a, b| b.partial_cmp(a).unwrap());
            let mut caps: Vec<u64> = caps.into_iter().map(|c| c.unwrap_or(u64::MAX)).collect();
            caps.sort_by(|a, b| b.cmp(a));
            std::array::from_fn(|i| PartitionConfig {
                share: shares[i],
                max_in_flight: caps[i],
            })
        })
}

fn limiter_config() -> impl Strategy<Value = LimiterConfig> {
    (
        limit_config(),
        1u64..150,
        1u64..5,
        partitions(),
        0u64..20,
        0u64..100,
    )
        .prop_map(
            |(limit, window_ms, min_samples, partitions, min_ra_ms, span_ms)| LimiterConfig {
                limit,
                window: Nanos::from_millis(window_ms),
                min_window_samples: min_samples,
                partitions,
                min_retry_after: Nanos::from_millis(min_ra_ms),
                max_retry_after: Nanos::from_millis(min_ra_ms + span_ms),
            },
        )
}

#[derive(Debug, Clone)]
enum Op {
    Acquire {
        level: u8,
        dt_ms: u64,
    },
    Release {
        pick: usize,
        outcome: u8,
        dt_ms: u64,
    },
    /// `set_max_limit(Some(n))` or `clear_max_limit()`.
    Ceiling(Option<u64>),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            8 => (0u8..8, 0u64..30).prop_map(|(level, dt_ms)| Op::Acquire { level, dt_ms }),
            8 => (any::<usize>(), 0u8..3, 0u64..80).prop_map(|(pick, outcome, dt_ms)| Op::Release {
                pick,
                outcome,
                dt_ms
            }),
            1 => prop::option::weighted(0.8, 0u64..30).prop_map(Op::Ceiling),
        ],
        1..200,
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 150,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/limiter.txt",
        ))),
        ..ProptestConfig::default()
    })]

    /// Every decision, limit and count of the lock-free limiter equals the sequential
    /// model's, for any configuration and any interleaving of acquires and releases.
    #[test]
    fn matches_sequential_model(cfg in limiter_config(), ops in ops()) {
        let limiter = Limiter::new(cfg).unwrap();
        let mut model = Model::new(cfg);
        let mut held: Vec<LimiterPermit> = Vec::new();
        let mut now = 1_000 * MS;
        for op in ops {
            match op {
                Op::Acquire { level, dt_ms } => {
                    now += dt_ms * MS;
                    let want = model.acquire(level as usize);
                    let got = match limiter.try_acquire(Nanos(now), p(level)) {
                        Ok(permit) => {
                            let d = Decision::Admitted {
                                in_flight: permit.in_flight(),
                                threshold: permit.threshold(),
                            };
                            prop_assert!(permit.in_flight() <= permit.threshold());
                            held.push(permit);
                            d
                        }
                        Err(r) => Decision::Refused {
                            reason: r.reason,
                            retry_after: r.retry_after(Nanos(now)),
                            threshold: r.threshold,
                            in_flight: r.in_flight,
                        },
                    };
                    prop_assert_eq!(got, want);
                }
                Op::Release { pick, outcome, dt_ms } => {
                    if held.is_empty() {
                        continue;
                    }
                    now += dt_ms * MS;
                    let permit = held.swap_remove(pick % held.len());
                    model.release(permit.start().0, permit.in_flight(), now, outcome);
                    match outcome {
                        0 => limiter.on_success(permit, Nanos(now)),
                        1 => limiter.on_dropped(permit, Nanos(now)),
                        _ => limiter.on_ignore(permit),
                    }
                }
                Op::Ceiling(c) => {
                    let old = match c {
                        Some(n) => limiter.set_max_limit(n).unwrap(),
                        None => limiter.clear_max_limit(),
                    };
                    prop_assert_eq!(old, model.ceiling);
                    model.ceiling = c;
                }
            }
            prop_assert_eq!(limiter.limit(), model.limit());
            prop_assert_eq!(limiter.algorithm_limit(), model.alg.limit());
            prop_assert_eq!(limiter.max_limit(), model.ceiling);
            prop_assert_eq!(limiter.in_flight(), model.in_flight);
            prop_assert_eq!(limiter.stats().windows, model.windows);
            for level in 0..8u8 {
                prop_assert_eq!(limiter.threshold(p(level)), model.threshold(level as usize));
            }
        }
        let s = limiter.stats();
        prop_assert_eq!(s.acquired, s.succeeded + s.dropped + s.ignored + held.len() as u64);
        prop_assert_eq!(s.rejected_by_priority.iter().sum::<u64>(), s.rejected());
        prop_assert_eq!(s.folds_skipped, 0);
    }
}

// ---------------------------------------------------------------- stress

/// Two threads acquire (random priorities) and release (random outcomes) against a fixed
/// limit of 10 with 60 % of it for priorities below 0: no permit ever sees more calls in
/// flight than its threshold, nobody ever observes more than 10, and the count returns
/// to zero. (Each thread holds up to 8, so together they press against the limit.)
#[test]
fn stress_fixed_limit_with_partitions() {
    let mut cfg = LimiterConfig {
        limit: LimitConfig::Fixed(10),
        ..LimiterConfig::default()
    };
    for part in cfg.partitions.iter_mut().skip(1) {
        part.share = 0.6;
    }
    let limiter = Arc::new(Limiter::new(cfg).unwrap());
    let start = Arc::new(Barrier::new(2));
    let workers: Vec<_> = (0..2u64)
        .map(|t| {
            let limiter = Arc::clone(&limiter);
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                let rng = Rng::new(t + 1);
                let mut held = Vec::new();
                let mut attempts = 0u64;
                start.wait();
                for i in 0..30_000u64 {
                    if held.len() < 8 && rng.below(2) == 0 {
                        attempts += 1;
                        let level = rng.below(8) as u8;
                        if let Ok(permit) = limiter.try_acquire(Nanos(i), p(level)) {
                            let cap = if level == 0 { 10 } else { 6 };
                            assert_eq!(permit.threshold(), cap);
                            assert!(permit.in_flight() <= cap);
                            held.push(permit);
                        }
                    } else if !held.is_empty() {
                        let permit = held.swap_remove(rng.below(held.len() as u64) as usize);
                        match rng.below(3) {
                            0 => limiter.on_success(permit, Nanos(i)),
                            1 => limiter.on_dropped(permit, Nanos(i)),
                            _ => limiter.on_ignore(permit),
                        }
                    }
                    assert!(limiter.in_flight() <= 10);
                }
                for permit in held {
                    limiter.on_ignore(permit);
                }
                attempts
            })
        })
        .collect();
    let attempts: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let s = limiter.stats();
    assert_eq!(s.in_flight, 0);
    assert_eq!(s.acquired, s.succeeded + s.dropped + s.ignored);
    assert_eq!(s.acquired + s.rejected(), attempts);
    assert_eq!(s.windows, 0); // a fixed limit never folds
    assert!(s.acquired > 0 && s.rejected() > 0);
}

/// Two threads on an adaptive (AIMD) limiter whose window folds on almost every sample:
/// limits stay in bounds, every permit was admitted under the threshold it read, folds
/// happen, and the count returns to zero.
#[test]
fn stress_adaptive_limit() {
    let mut cfg = LimiterConfig {
        limit: LimitConfig::Aimd(AimdConfig {
            initial_limit: 20,
            min_limit: 2,
            max_limit: 40,
            interval: Nanos(50),
            ..AimdConfig::default()
        }),
        window: Nanos(10),
        min_window_samples: 1,
        ..LimiterConfig::default()
    };
    for part in cfg.partitions.iter_mut().skip(1) {
        part.share = 0.5;
    }
    let limiter = Arc::new(Limiter::new(cfg).unwrap());
    let clock = Arc::new(AtomicU64::new(1));
    let start = Arc::new(Barrier::new(2));
    let workers: Vec<_> = (0..2u64)
        .map(|t| {
            let limiter = Arc::clone(&limiter);
            let clock = Arc::clone(&clock);
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                let rng = Rng::new(100 + t);
                let mut held = Vec::new();
                start.wait();
                for _ in 0..30_000 {
                    let now = Nanos(clock.fetch_add(3, Ordering::Relaxed));
                    if held.len() < 6 && rng.below(2) == 0 {
                        let level = rng.below(8) as u8;
                        if let Ok(permit) = limiter.try_acquire(now, p(level)) {
                            assert!(permit.in_flight() <= permit.threshold());
                            assert!(permit.threshold() <= if level == 0 { 40 } else { 20 });
                            held.push(permit);
                        }
                    } else if !held.is_empty() {
                        let permit = held.swap_remove(0);
                        if rng.below(10) == 0 {
                            limiter.on_dropped(permit, now);
                        } else {
                            limiter.on_success(permit, now);
                        }
                    }
                    let l = limiter.limit();
                    assert!((2..=40).contains(&l));
                }
                for permit in held {
                    limiter.on_success(permit, Nanos(clock.load(Ordering::Relaxed)));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let s = limiter.stats();
    assert_eq!(s.in_flight, 0);
    assert_eq!(s.acquired, s.succeeded + s.dropped + s.ignored);
    assert!(s.windows > 100, "windows folded: {}", s.windows);
    assert!(s.windows <= s.succeeded + s.dropped);
    assert!(s.limit_changes > 0);
}

// ---------------------------------------------------------------- 12 useful waiters

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Event {
    Arrival,
    Complete { server: usize, call: usize },
    GiveUp { call: usize },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CallState {
    Waiting,
    Served(usize),
    Over,
}

/// Where a limit settled over the second half of a run.
#[derive(Debug)]
struct Settled {
    mean: f64,
    min: u64,
    p10: u64,
    p90: u64,
    max: u64,
    goodput: f64,
    mean_in_flight: f64,
}

const SERVERS: usize = 8;
const MEAN_SERVICE_MS: f64 = 40.0;
const MEAN_INTERARRIVAL_MS: f64 = 1.0;
const PATIENCE: u64 = 60 * MS;

/// A deterministic event loop: callers arrive at 1,000/s (Poisson), ask the limiter,
/// wait in one FIFO queue for 8 servers with exponential service of mean 40 ms (200/s in
/// all), and give up 60 ms after arriving — reporting `on_dropped` and taking their call
/// out of the queue or off its server (the cancel frees the server). A call served in
/// time reports `on_success`. The limit is read every 10 ms over the second half.
fn run_useful_waiters(limit: LimitConfig, seed: u64, secs: u64) -> Settled {
    let limiter = Limiter::new(LimiterConfig {
        limit,
        ..LimiterConfig::default()
    })
    .unwrap();
    let rng = Rng::new(seed);
    let exp_ns = |mean_ms: f64| (-math::ln(1.0 - rng.next_f64()) * mean_ms * MS as f64) as u64;

    let mut events = BinaryHeap::new();
    let mut seq = 0u64;
    let mut schedule = |events: &mut BinaryHeap<Reverse<(u64, u64, Event)>>, at: u64, e: Event| {
        seq += 1;
        events.push(Reverse((at, seq, e)));
    };
    let mut calls: Vec<(CallState, Option<LimiterPermit>)> = Vec::new();
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut servers: [Option<usize>; SERVERS] = [None; SERVERS];

    let end = secs * 1_000 * MS;
    let half = end / 2;
    let mut next_look = half;
    let mut looks = Vec::new();
    let mut in_flight_sum = 0u64;
    let mut good = 0u64;

    schedule(&mut events, exp_ns(MEAN_INTERARRIVAL_MS), Event::Arrival);
    while let Some(Reverse((t, _, event))) = events.pop() {
        if t > end {
            break;
        }
        while next_look <= t {
            looks.push(limiter.limit());
            in_flight_sum += limiter.in_flight();
            next_look += 10 * MS;
        }
        let now = Nanos(t);
        match event {
            Event::Arrival => {
                schedule(
                    &mut events,
                    t + exp_ns(MEAN_INTERARRIVAL_MS),
                    Event::Arrival,
                );
                if let Ok(permit) = limiter.try_acquire(now, Priority::CRITICAL) {
                    let call = calls.len();
                    calls.push((CallState::Waiting, Some(permit)));
                    queue.push_back(call);
                    schedule(&mut events, t + PATIENCE, Event::GiveUp { call });
                }
            }
            Event::Complete { server, call } => {
                if calls[call].0 == CallState::Served(server) {
                    calls[call].0 = CallState::Over;
                    servers[server] = None;
                    limiter.on_success(calls[call].1.take().unwrap(), now);
                    if t >= half {
                        good += 1;
                    }
                }
            }
            Event::GiveUp { call } => {
                let state = calls[call].0;
                if let CallState::Served(server) = state {
                    servers[server] = None;
                }
                if state != CallState::Over {
                    calls[call].0 = CallState::Over;
                    limiter.on_dropped(calls[call].1.take().unwrap(), now);
                }
            }
        }
        for (server, slot) in servers.iter_mut().enumerate() {
            if slot.is_some() {
                continue;
            }
            while let Some(call) = queue.pop_front() {
                if calls[call].0 == CallState::Waiting {
                    calls[call].0 = CallState::Served(server);
                    *slot = Some(call);
                    schedule(
                        &mut events,
                        t + exp_ns(MEAN_SERVICE_MS),
                        Event::Complete { server, call },
                    );
                    break;
                }
            }
        }
    }

    let n = looks.len();
    let mut sorted = looks.clone();
    sorted.sort_unstable();
    Settled {
        mean: looks.iter().sum::<u64>() as f64 / n as f64,
        min: sorted[0],
        p10: sorted[n / 10],
        p90: sorted[n * 9 / 10],
        max: sorted[n - 1],
        goodput: good as f64 / ((end - half) as f64 / 1e9),
        mean_in_flight: in_flight_sum as f64 / n as f64,
    }
}

/// Basketly's C5 (docs/basketly.md, "C5: stock protects itself") says a dependency
/// serving 200 requests/s to callers who wait at most
/// 60 ms has room for about 200 × 0.06 = 12 useful waiters, and that an adaptive limit
/// "would find a number near 12 on its own". This runs each algorithm, with its default
/// configuration, through the real limiter on that dependency (two seeds, 120 s each, the
/// second half measured) and checks where it settles against bands derived here, from the
/// algorithms' definitions — not from where they happen to land:
///
/// - With exponential service of mean 40 ms, a call takes more than 60 ms with probability
///   e^(−1.5) ≈ 22 % even when nothing queues. So at every limit at least 22 % of admitted
///   calls time out and report a drop, and a window (≥ 10 samples) is drop-free with
///   probability at most 0.78^10 ≈ 8 %.
/// - **AIMD** decreases on ≥ 92 % of windows and adds 1 only on the rest: a chain that
///   sits at its floor of 1 with short excursions (mean ≈ 1 + 0.08 + …). Band: mean ≤ 1.5.
/// - **Vegas** also decreases on every window with a drop; on a rare drop-free window at
///   limit 1 its queue estimate ⌈1 × (1 − min/rtt)⌉ ≤ 1 is at most the threshold, so it
///   jumps by beta = 6 and walks back down one per window. Time-weighted (a window at
///   limit 1 needs ~310 ms to collect 10 samples, one at 7 only 100 ms) that gives a mean
///   of about 1.4. Band: mean ≤ 2.
/// - **Gradient2** ignores the drop flag; a drop's RTT is at most 60 ms, so the ratio of
///   the long average to the window RTT stays near 1 and the queue allowance adds
///   0.2 × 4 = 0.8 per window. It stops growing only when the window's maximum in-flight
///   falls below half the limit; by Little's law at most ~1,000/s × 60 ms = 60 calls are
///   inside on average, so it climbs well past 60, up to its cap of 200. Band: 60 ≤ mean
///   ≤ 200.
///
/// So none of the three settles near 12 on this dependency: the loss-based ones collapse
/// to 1 (starving a dependency that could serve 200/s), the latency-based one drifts to
/// several times 12. The printed table gives the numbers.
#[test]
fn twelve_useful_waiters() {
    let algorithms = [
        ("aimd", LimitConfig::Aimd(AimdConfig::default()), 0.0, 1.5),
        (
            "vegas",
            LimitConfig::Vegas(VegasConfig::default()),
            0.0,
            2.0,
        ),
        (
            "gradient",
            LimitConfig::Gradient(GradientConfig::default()),
            60.0,
            200.0,
        ),
    ];
    println!("algorithm seed  mean   min  p10  p90  max  goodput/s  mean in flight");
    for (name, cfg, lo, hi) in algorithms {
        for seed in [1, 2] {
            let s = run_useful_waiters(cfg, seed, 120);
            println!(
                "{name:9} {seed:4} {:6.1} {:5} {:4} {:4} {:4} {:10.1} {:15.1}",
                s.mean, s.min, s.p10, s.p90, s.max, s.goodput, s.mean_in_flight
            );
            assert!(
                (lo..=hi).contains(&s.mean),
                "{name} seed {seed}: mean limit {:.1} outside the derived band {lo}..={hi}: {s:?}",
                s.mean
            );
        }
    }
}

/// The same dependency behind a fixed limit of 12 serves its full 200/s: the event loop
/// itself is sound, and what the adaptive limits miss is a number, not a modelling error.
#[test]
fn useful_waiters_fixed_limit_of_12_serves_the_capacity() {
    let s = run_useful_waiters(LimitConfig::Fixed(12), 1, 60);
    assert_eq!((s.min, s.max), (12, 12));
    // 8 servers × 25/s; with cancellation at 60 ms the exponential service is memoryless,
    // so each busy server completes in time at 1/40 ms = 25/s. Allow sampling noise.
    assert!(s.goodput > 180.0 && s.goodput < 220.0, "{s:?}");
    assert!(s.mean_in_flight > 10.0 && s.mean_in_flight <= 12.0, "{s:?}");
}

// ---------------------------------------------------------------- scenarios

#[test]
fn a_lowered_limit_admits_nothing_until_the_count_falls_below_it() {
    let limiter = Limiter::new(LimiterConfig {
        limit: LimitConfig::Aimd(AimdConfig {
            initial_limit: 4,
            ..AimdConfig::default()
        }),
        min_window_samples: 1,
        ..LimiterConfig::default()
    })
    .unwrap();
    let t = Nanos(200 * MS);
    let held: Vec<_> = (0..4)
        .map(|_| limiter.try_acquire(t, Priority::CRITICAL).unwrap())
        .collect();
    let mut held = held.into_iter();
    limiter.on_dropped(held.next().unwrap(), Nanos(250 * MS)); // 4 → 2, 3 still inside
    assert_eq!((limiter.limit(), limiter.in_flight()), (2, 3));
    let r = limiter
        .try_acquire(Nanos(251 * MS), Priority::CRITICAL)
        .unwrap_err();
    assert_eq!(r.reason, LimiterRejectReason::LimitReached);
    assert_eq!(r.retry_after(Nanos(251 * MS)), Nanos(50 * MS)); // the window's mean RTT
    limiter.on_ignore(held.next().unwrap());
    assert!(limiter
        .try_acquire(Nanos(252 * MS), Priority::CRITICAL)
        .is_err());
    limiter.on_ignore(held.next().unwrap());
    let ok = limiter
        .try_acquire(Nanos(253 * MS), Priority::CRITICAL)
        .unwrap();
    assert_eq!(ok.in_flight(), 2);
    limiter.on_ignore(ok);
    limiter.on_ignore(held.next().unwrap());
    assert_eq!(limiter.in_flight(), 0);
}

#[test]
fn retry_after_is_clamped() {
    let limiter = Limiter::new(LimiterConfig {
        limit: LimitConfig::Gradient(GradientConfig {
            initial_limit: 1,
            ..GradientConfig::default()
        }),
        min_window_samples: 1,
        min_retry_after: Nanos(10 * MS),
        max_retry_after: Nanos(20 * MS),
        ..LimiterConfig::default()
    })
    .unwrap();
    assert_eq!(limiter.retry_after(), Nanos(10 * MS));
    let a = limiter.try_acquire(Nanos(0), Priority::CRITICAL).unwrap();
    limiter.on_success(a, Nanos(500 * MS)); // mean RTT 500 ms
    assert_eq!(limiter.retry_after(), Nanos(20 * MS));
    let a = limiter
        .try_acquire(Nanos(500 * MS), Priority::CRITICAL)
        .unwrap();
    limiter.on_success(a, Nanos(601 * MS)); // 101 ms later: due again, mean 101 ms
    assert_eq!(limiter.retry_after(), Nanos(20 * MS));
    let a = limiter
        .try_acquire(Nanos(701 * MS), Priority::CRITICAL)
        .unwrap();
    limiter.on_success(a, Nanos(702 * MS)); // 1 ms
    assert_eq!(limiter.retry_after(), Nanos(10 * MS));
}

/// Two threads acquire and release against a fixed limit of 16 while a third lowers,
/// raises, zeroes and clears a ceiling: the holders (counted outside the limiter) never
/// exceed 16, no permit is lost, and once the resizer has set its last ceiling of 4 and
/// everyone has drained, no more than 4 are ever held at once again.
#[test]
fn stress_ceiling_resized_under_load() {
    let limiter = Arc::new(
        Limiter::new(LimiterConfig {
            limit: LimitConfig::Fixed(16),
            ..LimiterConfig::default()
        })
        .unwrap(),
    );
    let holders = Arc::new(AtomicU64::new(0));
    let phase = Arc::new(Barrier::new(3));
    let run = |limiter: &Limiter, holders: &AtomicU64, rng: &Rng, bound: u64, steps: u64| {
        let mut held = Vec::new();
        let mut peak = 0;
        for i in 0..steps {
            if held.len() < 10 && rng.below(2) == 0 {
                if let Ok(permit) = limiter.try_acquire(Nanos(i), p(0)) {
                    let h = holders.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(h <= bound, "{h} held, bound {bound}");
                    peak = peak.max(h);
                    held.push(permit);
                }
            } else if let Some(permit) = held.pop() {
                holders.fetch_sub(1, Ordering::SeqCst);
                limiter.on_success(permit, Nanos(i));
            }
        }
        for permit in held {
            holders.fetch_sub(1, Ordering::SeqCst);
            limiter.on_ignore(permit);
        }
        peak
    };
    let workers: Vec<_> = (0..2u64)
        .map(|t| {
            let (limiter, holders, phase) = (
                Arc::clone(&limiter),
                Arc::clone(&holders),
                Arc::clone(&phase),
            );
            std::thread::spawn(move || {
                let rng = Rng::new(t + 7);
                run(&limiter, &holders, &rng, 16, 40_000);
                phase.wait(); // the resizer has set its last ceiling
                run(&limiter, &holders, &rng, 4, 20_000)
            })
        })
        .collect();
    let rng = Rng::new(99);
    for _ in 0..2_000 {
        match rng.below(5) {
            0 => {
                limiter.clear_max_limit();
            }
            _ => {
                limiter.set_max_limit(rng.below(20)).unwrap();
            }
        }
        std::thread::yield_now();
    }
    limiter.set_max_limit(4).unwrap();
    phase.wait();
    let peaks: Vec<u64> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert!(peaks.iter().all(|&p| p <= 4), "{peaks:?}");
    assert!(peaks.contains(&4), "the ceiling was reachable: {peaks:?}");
    let s = limiter.stats();
    assert_eq!(s.in_flight, 0);
    assert_eq!(s.acquired, s.succeeded + s.ignored);
    assert_eq!(limiter.limit(), 4);
    assert_eq!(limiter.algorithm_limit(), 16);
}

#[test]
fn a_ceiling_caps_every_priority_and_keeps_the_partition_rule() {
    let mut cfg = LimiterConfig {
        limit: LimitConfig::Fixed(20),
        ..LimiterConfig::default()
    };
    for (i, part) in cfg.partitions.iter_mut().enumerate().skip(1) {
        part.share = 0.5;
        if i >= 2 {
            part.max_in_flight = 3;
        }
    }
    let l = Limiter::new(cfg).unwrap();
    assert_eq!(l.max_limit(), None);
    assert_eq!(l.set_max_limit(8), Ok(None));
    assert_eq!(
        (l.limit(), l.algorithm_limit(), l.max_limit()),
        (8, 20, Some(8))
    );
    assert_eq!([0, 1, 2].map(|i| l.threshold(p(i))), [8, 4, 3]);
    let held: Vec<_> = (0..8)
        .map(|_| l.try_acquire(Nanos(1), p(0)).unwrap())
        .collect();
    let r = l.try_acquire(Nanos(1), p(0)).unwrap_err();
    assert_eq!(
        (r.reason, r.threshold, r.in_flight),
        (LimiterRejectReason::LimitReached, 8, 8)
    );
    // Lowered below the calls in flight: nothing is admitted until they drain below it.
    assert_eq!(l.set_max_limit(2), Ok(Some(8)));
    let mut held = held.into_iter();
    for _ in 0..6 {
        l.on_ignore(held.next().unwrap());
        assert!(l.try_acquire(Nanos(2), p(0)).is_err());
    }
    l.on_ignore(held.next().unwrap());
    let again = l.try_acquire(Nanos(3), p(0)).unwrap();
    assert!(l.try_acquire(Nanos(3), p(0)).is_err());
    // 0 admits nothing, whatever the share (a share's floor of 1 does not apply).
    assert_eq!(l.set_max_limit(0), Ok(Some(2)));
    assert_eq!([0, 1, 2].map(|i| l.threshold(p(i))), [0, 0, 0]);
    assert_eq!(l.clear_max_limit(), Some(0));
    assert_eq!([0, 1, 2].map(|i| l.threshold(p(i))), [20, 10, 3]);
    l.on_ignore(again);
    l.on_ignore(held.next().unwrap());
    assert_eq!(l.in_flight(), 0);
    let e = l.set_max_limit(1 << 32).unwrap_err();
    assert_eq!(e.field(), "max_limit");
    assert_eq!(l.max_limit(), None, "a refused ceiling changes nothing");
}

/// An adaptive limit keeps adapting beneath a ceiling: drops halve it, and the ceiling,
/// when it is lower, is what admits.
#[test]
fn an_adaptive_limit_adapts_beneath_the_ceiling() {
    let l = Limiter::new(LimiterConfig {
        limit: LimitConfig::Aimd(AimdConfig {
            initial_limit: 20,
            ..AimdConfig::default()
        }),
        min_window_samples: 1,
        ..LimiterConfig::default()
    })
    .unwrap();
    l.set_max_limit(6).unwrap();
    let t = Nanos::from_millis(1_000);
    let a = l.try_acquire(t, p(0)).unwrap();
    l.on_dropped(a, t.saturating_add(Nanos::from_millis(200)));
    assert_eq!(l.algorithm_limit(), 10);
    assert_eq!(l.limit(), 6);
    l.set_max_limit(40).unwrap();
    assert_eq!(l.limit(), 10);
}
