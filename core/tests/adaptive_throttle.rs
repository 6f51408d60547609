#![cfg(not(loom))]
//! Integration tests for `adaptive_throttle`: proptest against a sequential reference
//! model, the SRE steady state against a capacity-limited backend, two-thread stress.

use std::sync::Arc;

use guards_core::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig, ThrottleWindow};
use guards_core::{Nanos, Rng};
use proptest::prelude::*;

// --- proptest against a reference model -------------------------------------------------

const B: usize = 4;
const WIDTH: u64 = 1_000_000_000; // window 4 s over 4 buckets
type Small = AdaptiveThrottle<B>;

#[derive(Debug, Clone, Copy)]
enum Op {
    Decide(u64),
    Accept(u64),
    BackendReject(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let dt = prop_oneof![4 => 0u64..WIDTH / 4, 1 => 0u64..WIDTH * 6];
    prop_oneof![
        5 => dt.clone().prop_map(Op::Decide),
        2 => dt.clone().prop_map(Op::Accept),
        2 => dt.prop_map(Op::BackendReject),
    ]
}

fn config() -> impl Strategy<Value = AdaptiveThrottleConfig> {
    (
        1.0f64..4.0,
        prop_oneof![Just(1.0), 1.0f64..5.0],
        prop_oneof![Just(1.0), 0.0f64..=1.0],
        prop_oneof![Just(0u64), 0u64..20],
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(
            |(k, aggression, max_p, min_requests, count_rejected, seed)| AdaptiveThrottleConfig {
                window: Nanos(WIDTH * B as u64),
                k,
                aggression,
                max_reject_probability: max_p,
                min_requests,
                count_rejected,
                seed,
            },
        )
}

/// The model: a list of (slot, is_request) events; the window at `now` is every event of
/// the last `B` slots; the probability is the formula written out again with std floats.
struct Model {
    events: Vec<(u64, bool)>,
    rng: Rng,
}

impl Model {
    fn window(&self, now: u64) -> (u64, u64) {
        let cur = now / WIDTH;
        let mut req = 0;
        let mut acc = 0;
        for &(slot, is_request) in &self.events {
            if slot <= cur && cur - slot < B as u64 {
                if is_request {
                    req += 1;
                } else {
                    acc += 1;
                }
            }
        }
        (req, acc)
    }

    fn probability(c: &AdaptiveThrottleConfig, n: u64, a: u64) -> f64 {
        if n == 0 || n < c.min_requests {
            return 0.0;
        }
        let raw = ((n as f64 - c.k * a as f64) / (n as f64 + 1.0)).max(0.0);
        raw.powf(1.0 / c.aggression).min(c.max_reject_probability)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn matches_reference_model(
        c in config(),
        start in 0u64..1_000_000_000_000_000,
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        let t: Small = AdaptiveThrottle::new(c).unwrap();
        let mut m = Model { events: Vec::new(), rng: Rng::new(c.seed) };
        let mut now = start;
        let (mut admitted, mut throttled, mut accepted, mut refused) = (0u64, 0u64, 0u64, 0u64);
        for op in ops {
            match op {
                Op::Decide(dt) => {
                    now += dt;
                    let (n, a) = m.window(now);
                    prop_assert_eq!(t.window(Nanos(now)), ThrottleWindow { requests: n, accepts: a });
                    let p = Model::probability(&c, n, a);
                    let got_p = t.reject_probability(Nanos(now));
                    prop_assert!((got_p - p).abs() <= 1e-12, "p {} vs model {}", got_p, p);
                    let want = p > 0.0 && m.rng.next_f64() < p;
                    let got = t.should_reject(Nanos(now));
                    prop_assert_eq!(got, want);
                    if want { throttled += 1 } else { admitted += 1 }
                    if !want || c.count_rejected {
                        m.events.push((now / WIDTH, true));
                    }
                }
                Op::Accept(dt) => {
                    now += dt;
                    t.on_accepted(Nanos(now));
                    m.events.push((now / WIDTH, false));
                    accepted += 1;
                }
                Op::BackendReject(dt) => {
                    now += dt;
                    t.on_rejected_by_backend(Nanos(now));
                    refused += 1;
                }
            }
        }
        let s = t.stats();
        prop_assert_eq!(
            (s.admitted, s.throttled, s.accepted, s.rejected_by_backend, s.stale),
            (admitted, throttled, accepted, refused, 0)
        );
    }
}

// --- behaviour: the SRE steady state ----------------------------------------------------

/// 1,000 requests a second to a backend that can accept at most 100 a second (one token
/// every 10 ms, not stored) and refuses the rest. The throttle settles where the backend
/// sees about K = 2 times what it accepts: p = (requests − 2·accepts) / (requests + 1),
/// and the client sheds the rest locally. (Tokens that no admitted request picks up in
/// their 10 ms are lost, so accepts land somewhat below 100 a second.)
#[test]
fn settles_at_k_times_backend_capacity() {
    let t: AdaptiveThrottle = AdaptiveThrottle::new(AdaptiveThrottleConfig {
        seed: 7,
        ..AdaptiveThrottleConfig::default()
    })
    .unwrap();
    let mut token = false;
    let mut sent_last_minute = 0u64;
    let mut accepted_last_minute = 0u64;
    for ms in 0..600_000u64 {
        let now = Nanos::from_millis(ms);
        token |= ms % 10 == 0;
        if !t.should_reject(now) {
            if ms >= 540_000 {
                sent_last_minute += 1;
            }
            if token {
                token = false;
                t.on_accepted(now);
                if ms >= 540_000 {
                    accepted_last_minute += 1;
                }
            } else {
                t.on_rejected_by_backend(now);
            }
        }
    }
    let sent = sent_last_minute as f64 / 60.0;
    let accepted = accepted_last_minute as f64 / 60.0;
    assert!((75.0..=100.0).contains(&accepted), "accepted {accepted}/s");
    let ratio = sent / accepted;
    assert!(
        (1.8..=2.2).contains(&ratio),
        "sent {sent}/s for {accepted}/s accepted"
    );
    let p = t.reject_probability(Nanos::from_secs(600));
    assert!((0.75..=0.9).contains(&p), "p = {p}");
}

/// Seconds until the probability is back to zero after a total outage: 100 requests a
/// second, the backend refuses everything for one window, then accepts everything.
fn recovery_seconds(c: AdaptiveThrottleConfig) -> u64 {
    let t: AdaptiveThrottle = AdaptiveThrottle::new(c).unwrap();
    let step = 10u64; // ms between requests
    let outage_end = c.window.as_millis();
    let mut ms = 0;
    while ms < outage_end {
        if !t.should_reject(Nanos::from_millis(ms)) {
            t.on_rejected_by_backend(Nanos::from_millis(ms));
        }
        ms += step;
    }
    assert!(t.reject_probability(Nanos::from_millis(ms)) > 0.5);
    loop {
        let now = Nanos::from_millis(ms);
        if t.reject_probability(now) == 0.0 {
            return (ms - outage_end) / 1_000;
        }
        if !t.should_reject(now) {
            t.on_accepted(now);
        }
        ms += step;
        assert!(ms < outage_end + 3_600_000, "no recovery within an hour");
    }
}

/// After a total outage the SRE throttle (rejected requests counted, no cap) rejects
/// almost everything: p = n / (n + 1). Accepts then grow by about a factor e per window
/// (each accept lets about two more requests through), so recovery takes about
/// window × ln(n / 2): with 12,000 requests in a 2-minute window, roughly 120 s × 8.7 ≈
/// 17 minutes. Envoy's defaults (rejected requests not counted, p capped at 80%) keep
/// 20% flowing and recover within about one 30 s window.
#[test]
fn recovery_after_total_outage() {
    let sre = recovery_seconds(AdaptiveThrottleConfig::default());
    assert!((300..=1_800).contains(&sre), "SRE recovery took {sre} s");
    let envoy = recovery_seconds(AdaptiveThrottleConfig::strict_success_rate());
    assert!(envoy <= 35, "Envoy-style recovery took {envoy} s");
    // Capping p alone (still counting rejected requests) already helps a lot.
    let capped = recovery_seconds(AdaptiveThrottleConfig {
        max_reject_probability: 0.8,
        ..AdaptiveThrottleConfig::default()
    });
    assert!(capped < sre / 3, "capped recovery took {capped} s");
    eprintln!("recovery: sre {sre} s, envoy {envoy} s, capped {capped} s");
}

// --- two-thread stress ------------------------------------------------------------------

/// Two threads decide and report on one throttle while the window slides (200 µs apart
/// over 12 s: the 4-bucket, 4 s window turns over three times). Invariants: every
/// decision is counted exactly once in the stats; the probability is always in [0, 1];
/// and the last window holds exactly the requests and accepts made in its buckets —
/// nothing lost to a concurrent bucket reset, nothing counted in the wrong bucket — since
/// no thread ever wrote a later time there.
#[test]
fn two_threads_decide_and_report() {
    const N: u64 = 60_000;
    let c = AdaptiveThrottleConfig {
        window: Nanos::from_secs(4),
        ..AdaptiveThrottleConfig::default()
    };
    let t: Arc<Small> = Arc::new(AdaptiveThrottle::new(c).unwrap());
    let at = |i: u64| Nanos(i * 200_000);
    let handles: Vec<_> = (0..2u64)
        .map(|thread| {
            let t = Arc::clone(&t);
            std::thread::spawn(move || {
                // Accepts made at or after 8 s and at or after 9 s.
                let mut accepts = (0u64, 0u64);
                for i in 0..N {
                    let now = at(i);
                    let p = t.reject_probability(now);
                    assert!((0.0..=1.0).contains(&p));
                    // Thread 0's calls are all accepted, thread 1's all refused.
                    if !t.should_reject(now) {
                        if thread == 0 {
                            t.on_accepted(now);
                            accepts.0 += u64::from(now >= Nanos::from_secs(8));
                            accepts.1 += u64::from(now >= Nanos::from_secs(9));
                        } else {
                            t.on_rejected_by_backend(now);
                        }
                    }
                }
                accepts
            })
        })
        .collect();
    let (from_8, from_9) = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let s = t.stats();
    assert_eq!(s.admitted + s.throttled, 2 * N);
    assert!(s.accepted + s.rejected_by_backend == s.admitted);
    // At the last instant (11.9998 s) the window is slots 8..=11: decisions i >= 40,000.
    let w = t.window(at(N - 1));
    assert_eq!(w.requests, 2 * (N - 40_000));
    assert_eq!(w.accepts, from_8);
    // At 12 s slot 8 has slid out: decisions i >= 45,000.
    let w = t.window(Nanos::from_secs(12));
    assert_eq!(w.requests, 2 * (N - 45_000));
    assert_eq!(w.accepts, from_9);
}
