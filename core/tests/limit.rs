#![cfg(not(loom))]
//! Integration tests for the limit algorithms: each against a sequential reference model
//! written here from the definition in its module docs, plus properties (bounds,
//! determinism, step sizes).
//!
//! The algorithms are single-owner state machines (`&mut self`); their concurrent use is
//! exercised through the limiter (`tests/limiter.rs`, `tests/loom_limiter.rs`).

use guards_core::limit::{
    AimdConfig, AimdLimit, GradientConfig, GradientLimit, Limit, LimitConfig, LimitSample,
    VegasConfig, VegasLimit,
};
use guards_core::rng::{mix64, unit_f64, GOLDEN_GAMMA};
use guards_core::{math, Nanos};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

// ---------------------------------------------------------------- reference models

/// AIMD as its module docs define it.
struct RefAimd {
    c: AimdConfig,
    limit: u64,
    interval_start: Option<u64>,
    last_decrease: Option<u64>,
}

impl RefAimd {
    fn new(c: AimdConfig) -> Self {
        RefAimd {
            c,
            limit: c.initial_limit,
            interval_start: None,
            last_decrease: None,
        }
    }

    fn update(&mut self, s: LimitSample) -> u64 {
        let now = s.now.0;
        let start = *self.interval_start.get_or_insert(now);
        if s.dropped || s.rtt > self.c.latency_target {
            let allowed = match self.last_decrease {
                None => true,
                Some(d) => now.saturating_sub(d) >= self.c.interval.0,
            };
            if allowed {
                let scaled = (self.limit as f64 * self.c.backoff_ratio).floor() as u64;
                self.limit = scaled.min(self.limit - 1).max(self.c.min_limit);
                self.last_decrease = Some(now);
            }
            self.interval_start = Some(now);
        } else if now.saturating_sub(start) >= self.c.interval.0 {
            if 2 * s.in_flight >= self.limit {
                self.limit = (self.limit + 1).min(self.c.max_limit);
            }
            self.interval_start = Some(now);
        }
        self.limit
    }
}

/// Vegas as its module docs define it.
struct RefVegas {
    c: VegasConfig,
    e: f64,
    min_rtt: Option<u64>,
    count: u64,
    f: f64,
    seed: u64,
}

impl RefVegas {
    fn new(c: VegasConfig) -> Self {
        let mut v = RefVegas {
            c,
            e: c.initial_limit as f64,
            min_rtt: None,
            count: 0,
            f: 1.0,
            seed: c.probe_seed,
        };
        v.f = v.draw();
        v
    }

    fn draw(&mut self) -> f64 {
        self.seed = self.seed.wrapping_add(GOLDEN_GAMMA);
        1.0 - self.c.probe_jitter * unit_f64(mix64(self.seed))
    }

    fn limit(&self) -> u64 {
        (self.e.floor() as u64).max(1)
    }

    fn update(&mut self, s: LimitSample) -> u64 {
        let rtt = s.rtt.0.max(1);
        self.count += 1;
        if self.count as f64 >= self.f * self.c.probe_multiplier as f64 * self.e {
            self.count = 0;
            self.min_rtt = Some(rtt);
            self.f = self.draw();
            return self.limit();
        }
        let min = match self.min_rtt {
            Some(m) if rtt >= m => m,
            _ => {
                self.min_rtt = Some(rtt);
                return self.limit();
            }
        };
        let n = self.e.floor();
        let step = if n < 10.0 {
            1.0
        } else {
            math::floor(math::log10(n)).max(1.0)
        };
        let queue = (self.e * (1.0 - min as f64 / rtt as f64)).ceil();
        let t = if s.dropped {
            self.e - step
        } else if (s.in_flight as f64) * 2.0 < self.e {
            return self.limit();
        } else if queue <= self.c.threshold * step {
            self.e + self.c.beta * step
        } else if queue < self.c.alpha * step {
            self.e + step
        } else if queue > self.c.beta * step {
            self.e - step
        } else {
            return self.limit();
        };
        let (lo, hi) = (self.c.min_limit as f64, self.c.max_limit as f64);
        let t = t.max(lo).min(hi);
        self.e = ((1.0 - self.c.smoothing) * self.e + self.c.smoothing * t)
            .max(lo)
            .min(hi);
        self.limit()
    }
}

/// Gradient2 as its module docs define it.
struct RefGradient {
    c: GradientConfig,
    e: f64,
    long: f64,
    sum: f64,
    n: u64,
}

impl RefGradient {
    fn new(c: GradientConfig) -> Self {
        RefGradient {
            c,
            e: c.initial_limit as f64,
            long: 0.0,
            sum: 0.0,
            n: 0,
        }
    }

    fn update(&mut self, s: LimitSample) -> u64 {
        let rtt = s.rtt.0.max(1) as f64;
        let long = if self.n < self.c.warmup_samples {
            self.n += 1;
            self.sum += rtt;
            self.sum / self.n as f64
        } else {
            let k = 2.0 / (self.c.long_window as f64 + 1.0);
            self.long * (1.0 - k) + rtt * k
        };
        self.long = if long / rtt > 2.0 { long * 0.9 } else { long };
        if (s.in_flight as f64) < self.e / 2.0 {
            return (self.e.floor() as u64).max(1);
        }
        let g = (long / rtt).clamp(0.5, 1.0);
        let next =
            (1.0 - self.c.smoothing) * self.e + self.c.smoothing * (g * self.e + self.c.queue_size);
        self.e = next.clamp(self.c.min_limit as f64, self.c.max_limit as f64);
        (self.e.floor() as u64).max(1)
    }
}

// ---------------------------------------------------------------- strategies

/// Samples with non-decreasing times (steps of 0..200 ms), RTTs up to 100 ms, in-flight up
/// to 60 and about one drop in five.
fn samples() -> impl Strategy<Value = Vec<LimitSample>> {
    prop::collection::vec(
        (
            0u64..200,
            0u64..100_000,
            0u64..60,
            prop::bool::weighted(0.2),
        ),
        1..120,
    )
    .prop_map(|raw| {
        let mut now = 0u64;
        raw.into_iter()
            .map(|(dt_ms, rtt_us, in_flight, dropped)| {
                now += dt_ms * 1_000_000;
                LimitSample {
                    now: Nanos(now),
                    rtt: Nanos(rtt_us * 1_000),
                    in_flight,
                    dropped,
                }
            })
            .collect()
    })
}

fn bounds() -> impl Strategy<Value = (u64, u64, u64)> {
    (1u64..30, 0u64..30, 0u64..60).prop_map(|(min, up, span)| (min + up.min(span), min, min + span))
}

fn aimd_config() -> impl Strategy<Value = AimdConfig> {
    (
        bounds(),
        0.05f64..0.99,
        1u64..300,
        prop::option::of(1u64..80),
    )
        .prop_map(
            |((initial_limit, min_limit, max_limit), backoff_ratio, interval_ms, target_ms)| {
                AimdConfig {
                    initial_limit,
                    min_limit,
                    max_limit,
                    backoff_ratio,
                    interval: Nanos::from_millis(interval_ms),
                    latency_target: target_ms.map_or(Nanos::MAX, Nanos::from_millis),
                }
            },
        )
}

fn vegas_config() -> impl Strategy<Value = VegasConfig> {
    (
        bounds(),
        0.05f64..=1.0,
        (0.0f64..3.0, 0.0f64..3.0, 0.0f64..6.0),
        1u64..40,
        0.0f64..0.9,
        any::<u64>(),
    )
        .prop_map(
            |(
                (initial_limit, min_limit, max_limit),
                smoothing,
                (t, da, db),
                probe_multiplier,
                probe_jitter,
                probe_seed,
            )| {
                VegasConfig {
                    initial_limit,
                    min_limit,
                    max_limit,
                    smoothing,
                    threshold: t,
                    alpha: t + da,
                    beta: t + da + db,
                    probe_multiplier,
                    probe_jitter,
                    probe_seed,
                }
            },
        )
}

fn gradient_config() -> impl Strategy<Value = GradientConfig> {
    (bounds(), 0.05f64..=1.0, 0.0f64..10.0, 1u64..1000, 1u64..20).prop_map(
        |(
            (initial_limit, min_limit, max_limit),
            smoothing,
            queue_size,
            long_window,
            warmup_samples,
        )| {
            GradientConfig {
                initial_limit,
                min_limit,
                max_limit,
                smoothing,
                queue_size,
                long_window,
                warmup_samples,
            }
        },
    )
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/limit.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn aimd_matches_reference(c in aimd_config(), xs in samples()) {
        let mut real = AimdLimit::new(c).unwrap();
        let mut model = RefAimd::new(c);
        for s in xs {
            let before = real.limit();
            let got = real.update(s);
            prop_assert_eq!(got, model.update(s));
            prop_assert!(got >= c.min_limit && got <= c.max_limit);
            // Growth is +1 at most, and only on a healthy sample.
            prop_assert!(got <= before + 1);
            if got < before {
                prop_assert!(s.dropped || s.rtt > c.latency_target);
            }
        }
    }

    #[test]
    fn vegas_matches_reference(c in vegas_config(), xs in samples()) {
        let mut real = VegasLimit::new(c).unwrap();
        let mut model = RefVegas::new(c);
        for s in xs {
            let got = real.update(s);
            prop_assert_eq!(got, model.update(s));
            prop_assert_eq!(real.estimate().to_bits(), model.e.to_bits());
            prop_assert!(got >= c.min_limit && got <= c.max_limit);
        }
    }

    #[test]
    fn gradient_matches_reference(c in gradient_config(), xs in samples()) {
        let mut real = GradientLimit::new(c).unwrap();
        let mut model = RefGradient::new(c);
        for s in xs {
            let before = real.estimate();
            let got = real.update(s);
            prop_assert_eq!(got, model.update(s));
            prop_assert_eq!(real.estimate().to_bits(), model.e.to_bits());
            prop_assert!(got >= c.min_limit && got <= c.max_limit);
            // One sample cuts the estimate by at most smoothing × half (gradient ≥ 0.5),
            // unless the floor lifts it.
            prop_assert!(real.estimate() >= before * (1.0 - c.smoothing * 0.5) - 1e-9
                || real.estimate() == c.min_limit as f64);
        }
    }

    #[test]
    fn the_enum_is_deterministic_and_round_trips_its_config(
        which in 0usize..3, a in aimd_config(), v in vegas_config(), g in gradient_config(),
        xs in samples(),
    ) {
        let cfg = match which {
            0 => LimitConfig::Aimd(a),
            1 => LimitConfig::Vegas(v),
            _ => LimitConfig::Gradient(g),
        };
        let mut x = Limit::new(cfg).unwrap();
        let mut y = Limit::new(cfg).unwrap();
        for s in &xs {
            prop_assert_eq!(x.update(*s), y.update(*s));
        }
        prop_assert_eq!(x, y);
        prop_assert_eq!(x.config(), cfg);
    }

    #[test]
    fn gradient_never_shrinks_at_a_steady_rtt(
        c in gradient_config(), rtt in 1u64..1_000_000_000, n in 1usize..200,
    ) {
        let mut g = GradientLimit::new(c).unwrap();
        let mut last = g.estimate();
        for i in 0..n {
            g.update(LimitSample {
                now: Nanos(i as u64),
                rtt: Nanos(rtt),
                in_flight: 2_000_000,
                dropped: false,
            });
            // Rounding in the moving average may leave long/rtt a hair below 1.
            prop_assert!(g.estimate() >= last - 1e-9);
            last = g.estimate();
        }
    }
}

#[test]
fn vegas_settles_inside_its_band_on_a_fixed_queue() {
    // A dependency with a 10 ms no-load RTT that adds 1 ms per call beyond 8 in flight.
    // From 8: the first sample sets min_rtt; the second sees no queue (0 <= threshold 1)
    // and grows by beta = 6 to 14; at 14 the RTT is 16 ms and the queue
    // ⌈14 × (1 − 10/16)⌉ = ⌈5.25⌉ = 6 lies in [alpha, beta] = [3, 6], so it rests there.
    let mut v = VegasLimit::new(VegasConfig {
        initial_limit: 8,
        probe_jitter: 0.0,
        probe_multiplier: 1_000_000,
        ..VegasConfig::default()
    })
    .unwrap();
    let rtt_at = |l: u64| Nanos::from_millis(10 + l.saturating_sub(8));
    let mut l = v.limit();
    for i in 0..200 {
        l = v.update(LimitSample {
            now: Nanos(i),
            rtt: rtt_at(l),
            in_flight: l,
            dropped: false,
        });
    }
    assert_eq!(l, 14);
}

#[test]
fn aimd_saw_tooth_under_periodic_drops() {
    // One drop every 5 healthy intervals: +1 four times, then halve.
    let mut a = AimdLimit::new(AimdConfig {
        initial_limit: 40,
        ..AimdConfig::default()
    })
    .unwrap();
    let mut seen = Vec::new();
    for i in 0..=20u64 {
        let l = a.update(LimitSample {
            now: Nanos::from_millis(100 * i),
            rtt: Nanos::from_millis(1),
            in_flight: 1_000,
            dropped: i % 5 == 4,
        });
        seen.push(l);
    }
    assert_eq!(
        seen,
        vec![40, 41, 42, 43, 21, 22, 23, 24, 25, 12, 13, 14, 15, 16, 8, 9, 10, 11, 12, 6, 7]
    );
}
