#![cfg(not(loom))]
//! Integration tests for `hedging`: a slow-replica replay (Basketly's Replay H shape),
//! proptest against a reference model, two-thread stress with a shared budget gate.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use guards_core::hedging::{HedgeDecision, HedgeRefusal, Hedging, HedgingConfig};
use guards_core::latency_tracker::{bucket_index, bucket_value, LatencyTrackerConfig};
use guards_core::retry_policy::{RetryCause, RetryGate};
use guards_core::{Nanos, Rng};
use proptest::prelude::*;

/// A token-bucket retry budget like Basketly's C4, in tenths of a token: 10 tokens,
/// +0.1 per first attempt, 1 per retry or hedge.
struct Budget {
    tenths: AtomicU64,
}

impl Budget {
    fn new() -> Self {
        Budget {
            tenths: AtomicU64::new(100),
        }
    }
    fn on_first_attempt(&self) {
        let _ = self
            .tenths
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some((t + 1).min(100))
            });
    }
}

impl RetryGate for Budget {
    fn allow_retry(&self, _now: Nanos, cause: RetryCause) -> bool {
        assert_eq!(cause, RetryCause::Hedge);
        self.tenths
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| t.checked_sub(10))
            .is_ok()
    }
}

/// Each call independently takes Exp(4 ms), plus a 250 ms stall with probability 1% (one
/// slow replica). Calls start every millisecond. Without hedging the P99.9 sits on the
/// stall (> 250 ms). Hedging after the tracked P95 sends one copy for the ~5% slowest
/// calls; a stalled call is then rescued by its hedge, and the P99.9 falls below 60 ms
/// for about 5% more calls, which Basketly's retry budget (10% + a burst of 10) pays for.
#[test]
fn slow_replica_tail_is_cut_for_five_percent_more_calls() {
    let rng = Rng::new(11);
    let latency = || {
        let base = -(1.0 - rng.next_f64()).ln() * 4e6;
        let stall = if rng.next_f64() < 0.01 { 250e6 } else { 0.0 };
        Nanos((base + stall) as u64)
    };
    let hedging: Hedging = Hedging::new(HedgingConfig::default()).unwrap();
    let budget = Budget::new();
    const CALLS: u64 = 200_000;
    let (mut plain, mut hedged) = (Vec::new(), Vec::new());
    let mut hedges = 0u64;
    for i in 0..CALLS {
        let start = Nanos::from_millis(i);
        budget.on_first_attempt();
        let first = latency();
        plain.push(first.as_u64());
        // Ask when the call is first made, then again at the time it says, while no answer.
        let mut answer = first;
        let mut decision = hedging.should_hedge(start, start, 0, true, Some(&budget));
        while let HedgeDecision::WaitUntil(at) = decision {
            if at.saturating_sub(start) >= first {
                break; // answered before the hedge was due
            }
            decision = hedging.should_hedge(at, start, 0, true, Some(&budget));
            if decision == HedgeDecision::HedgeNow {
                hedges += 1;
                let second = at.saturating_sub(start).saturating_add(latency());
                answer = answer.min(second);
            }
        }
        hedged.push(answer.as_u64());
        hedging.record_latency(start.saturating_add(answer), answer);
    }
    plain.sort_unstable();
    hedged.sort_unstable();
    let p999 = |v: &[u64]| v[(v.len() as f64 * 0.999).ceil() as usize - 1];
    assert!(p999(&plain) > 250_000_000, "plain P99.9 {}", p999(&plain));
    assert!(p999(&hedged) < 60_000_000, "hedged P99.9 {}", p999(&hedged));
    let extra = hedges as f64 / CALLS as f64;
    eprintln!(
        "P99.9 plain {} ms, hedged {} ms, extra calls {:.2}%",
        p999(&plain) / 1_000_000,
        p999(&hedged) / 1_000_000,
        extra * 100.0
    );
    assert!((0.03..=0.08).contains(&extra), "{extra}");
    assert_eq!(hedging.stats().hedges, hedges);
}

/// During a shared slowdown every call is slow: hedges only add load, and the budget
/// bounds them to about 10% of calls plus the burst.
#[test]
fn shared_slowdown_is_bounded_by_the_budget() {
    let hedging: Hedging = Hedging::new(HedgingConfig::default()).unwrap();
    let budget = Budget::new();
    // A healthy minute of 5 ms calls teaches the tracker what normal is.
    for i in 0..10_000u64 {
        hedging.record_latency(Nanos::from_millis(i), Nanos::from_millis(5));
    }
    let t0 = Nanos::from_secs(10);
    let mut hedges = 0;
    for i in 0..1_000u64 {
        let start = t0.saturating_add(Nanos::from_millis(i));
        budget.on_first_attempt();
        // Everything now takes 50 ms: every call is past the P95 at 5 ms.
        if hedging.should_hedge(
            start.saturating_add(Nanos::from_millis(6)),
            start,
            0,
            true,
            Some(&budget),
        ) == HedgeDecision::HedgeNow
        {
            hedges += 1;
        }
    }
    // 10 tokens of burst + 0.1 per call.
    assert!(hedges <= 10 + 100, "{hedges}");
    assert!(hedges >= 100, "{hedges}");
    assert!(hedging.stats().budget_exhausted >= 800);
}

// --- proptest against a reference model -------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Record {
        dt: u64,
        latency: u64,
    },
    Ask {
        dt: u64,
        age: u64,
        hedges_sent: u32,
        idempotent: bool,
        gate: Option<bool>,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u64..50_000_000, 0u64..200_000_000)
            .prop_map(|(dt, latency)| Op::Record { dt, latency }),
        2 => (0u64..50_000_000, 0u64..400_000_000, 0u32..4, prop::bool::weighted(0.9),
              prop_oneof![Just(None), any::<bool>().prop_map(Some)])
            .prop_map(|(dt, age, hedges_sent, idempotent, gate)|
                Op::Ask { dt, age, hedges_sent, idempotent, gate }),
    ]
}

fn config() -> impl Strategy<Value = HedgingConfig> {
    (
        prop_oneof![Just(0.95), 0.01f64..=1.0],
        0u64..20_000_000,
        0u64..200_000_000,
        0u32..4,
        1u64..30,
        prop_oneof![Just(0u64), 0u64..300_000_000],
    )
        .prop_map(
            |(q, min, extra, max_hedges, min_samples, refresh)| HedgingConfig {
                delay_quantile: q,
                min_delay: Nanos(min),
                max_delay: Nanos(min + extra),
                max_hedges,
                min_samples,
                refresh_interval: Nanos(refresh),
                tracker: LatencyTrackerConfig {
                    window: Nanos::from_secs(1),
                    ..LatencyTrackerConfig::default()
                },
            },
        )
}

struct FixedGate(bool);

impl RetryGate for FixedGate {
    fn allow_retry(&self, _now: Nanos, _cause: RetryCause) -> bool {
        self.0
    }
}

/// The model: recorded (slot, latency) pairs; the delay is the nearest-rank sample of the
/// last 6 one-second windows, reported as its bucket's midpoint and clamped; it is
/// recomputed when `refresh_interval` has passed since the last recomputation.
struct Model {
    c: HedgingConfig,
    samples: Vec<(u64, u64)>,
    last_refresh: Option<u64>,
    cached: Option<u64>,
}

impl Model {
    fn compute(&self, now: u64) -> Option<u64> {
        let cur = now / 1_000_000_000;
        let mut v: Vec<u64> = self
            .samples
            .iter()
            .filter(|(s, _)| *s <= cur && cur - *s < 6)
            .map(|(_, l)| *l)
            .collect();
        if (v.len() as u64) < self.c.min_samples {
            return None;
        }
        v.sort_unstable();
        let r = ((self.c.delay_quantile * v.len() as f64).ceil() as usize).clamp(1, v.len());
        let q = bucket_value(bucket_index(v[r - 1]));
        Some(q.clamp(self.c.min_delay.as_u64(), self.c.max_delay.as_u64()))
    }

    fn delay(&mut self, now: u64) -> Option<u64> {
        let due = match self.last_refresh {
            None => true,
            Some(last) => now.saturating_sub(last) >= self.c.refresh_interval.as_u64(),
        };
        if due {
            self.last_refresh = Some(now);
            self.cached = self.compute(now);
        }
        self.cached
    }

    fn decide(
        &mut self,
        now: u64,
        started: u64,
        sent: u32,
        idempotent: bool,
        gate: Option<bool>,
    ) -> HedgeDecision {
        if !idempotent {
            return HedgeDecision::Never(HedgeRefusal::NotIdempotent);
        }
        if sent >= self.c.max_hedges {
            return HedgeDecision::Never(HedgeRefusal::LimitReached);
        }
        let Some(d) = self.delay(now) else {
            return HedgeDecision::Never(HedgeRefusal::NoLatencyData);
        };
        let due = started + d * (u64::from(sent) + 1);
        if now < due {
            return HedgeDecision::WaitUntil(Nanos(due));
        }
        if gate == Some(false) {
            return HedgeDecision::Never(HedgeRefusal::BudgetExhausted);
        }
        HedgeDecision::HedgeNow
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn matches_reference_model(c in config(), ops in proptest::collection::vec(op(), 1..150)) {
        let h: Hedging = Hedging::new(c).unwrap();
        let mut m = Model { c, samples: Vec::new(), last_refresh: None, cached: None };
        let mut now = 1_000_000_000u64;
        let mut counts = [0u64; 6];
        for op in ops {
            match op {
                Op::Record { dt, latency } => {
                    now += dt;
                    h.record_latency(Nanos(now), Nanos(latency));
                    m.samples.push((now / 1_000_000_000, latency));
                }
                Op::Ask { dt, age, hedges_sent, idempotent, gate } => {
                    now += dt;
                    let started = now.saturating_sub(age);
                    let g = gate.map(FixedGate);
                    let got = h.should_hedge(
                        Nanos(now), Nanos(started), hedges_sent, idempotent,
                        g.as_ref().map(|g| g as &dyn RetryGate),
                    );
                    let want = m.decide(now, started, hedges_sent, idempotent, gate);
                    prop_assert_eq!(got, want);
                    let i = match want {
                        HedgeDecision::HedgeNow => 0,
                        HedgeDecision::WaitUntil(_) => 1,
                        HedgeDecision::Never(HedgeRefusal::NotIdempotent) => 2,
                        HedgeDecision::Never(HedgeRefusal::LimitReached) => 3,
                        HedgeDecision::Never(HedgeRefusal::NoLatencyData) => 4,
                        HedgeDecision::Never(HedgeRefusal::BudgetExhausted) => 5,
                    };
                    counts[i] += 1;
                }
            }
        }
        let s = h.stats();
        prop_assert_eq!(
            [s.hedges, s.deferred, s.not_idempotent, s.limit_reached, s.no_latency_data, s.budget_exhausted],
            counts
        );
    }
}

// --- two-thread stress ------------------------------------------------------------------

/// Two threads record latencies and ask for hedges on one policy, paying from one shared
/// budget, with a short refresh interval so the cached delay is recomputed concurrently.
/// Invariants: every decision lands in exactly one counter; every hedge was paid (hedges
/// never exceed what the budget handed out); a WaitUntil is always in the future and
/// within [min_delay, max_delay] of the start; a hedge only when at least min_delay old.
#[test]
fn two_threads_share_policy_and_budget() {
    const N: u64 = 20_000;
    let h: Arc<Hedging> = Arc::new(
        Hedging::new(HedgingConfig {
            refresh_interval: Nanos::from_micros(50),
            min_samples: 10,
            ..HedgingConfig::default()
        })
        .unwrap(),
    );
    let budget = Arc::new(Budget::new());
    let paid = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..2u64)
        .map(|thread| {
            let (h, budget, paid) = (Arc::clone(&h), Arc::clone(&budget), Arc::clone(&paid));
            std::thread::spawn(move || {
                for i in 0..N {
                    let now = Nanos::from_micros(i * 10);
                    h.record_latency(now, Nanos::from_micros(1_000 + (i * 7 + thread) % 5_000));
                    budget.on_first_attempt();
                    let started = now.saturating_sub(Nanos::from_micros((i * 13) % 8_000));
                    match h.should_hedge(now, started, (i % 3) as u32, i % 10 != 0, Some(&*budget))
                    {
                        HedgeDecision::HedgeNow => {
                            paid.fetch_add(1, Ordering::Relaxed);
                            assert!(now.saturating_sub(started) >= Nanos::from_millis(1));
                        }
                        HedgeDecision::WaitUntil(at) => {
                            assert!(at > now);
                            let d = at.saturating_sub(started);
                            assert!(d >= Nanos::from_millis(1) && d <= Nanos::from_secs(10));
                        }
                        HedgeDecision::Never(_) => {}
                    }
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let s = h.stats();
    let total = s.hedges
        + s.deferred
        + s.not_idempotent
        + s.limit_reached
        + s.no_latency_data
        + s.budget_exhausted;
    assert_eq!(total, 2 * N);
    assert_eq!(s.hedges, paid.load(Ordering::Relaxed));
    assert_eq!(s.not_idempotent, 2 * N / 10);
    // The budget earned 0.1 per call (2N calls) on top of its 10 tokens; each hedge took 1.
    assert!(s.hedges <= 10 + 2 * N / 10);
    assert!(s.hedges > 0);
}
