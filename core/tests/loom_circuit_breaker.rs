#![cfg(loom)]
//! loom models of every atomic protocol of the circuit breaker: the count window (claim,
//! slot write, epoch switch, evaluation hand-off), the time window's tagged buckets, the
//! state-word transitions and probe slots, the tagged open-until word, and the keyed set.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3 \
//!  cargo test -p guards-core --release --test loom_circuit_breaker`

use guards_core::circuit_breaker::{
    BreakerState, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerPermit,
    CircuitBreakerRejectReason, KeyedBreakers, OutcomeEffect, WindowCounts, WindowKind,
};
use guards_core::Nanos;
use loom::sync::Arc;
use loom::thread;

type Small = CircuitBreaker<6>;

fn ms(v: u64) -> Nanos {
    Nanos::from_millis(v)
}

/// A count window of `n` calls, opening at `threshold` failures once full.
fn count_config(n: u64, threshold: f64, probes: u64) -> CircuitBreakerConfig {
    CircuitBreakerConfig {
        window_kind: WindowKind::Count,
        window_size: n,
        failure_rate_threshold: threshold,
        slow_call_duration: Nanos::MAX,
        open_duration: ms(5),
        half_open_probes: probes,
        probe_timeout: ms(1),
        ..CircuitBreakerConfig::default()
    }
}

/// A time window of 2 buckets of 1 ms.
fn time_config(min_calls: u64, threshold: f64) -> CircuitBreakerConfig {
    CircuitBreakerConfig {
        window_kind: WindowKind::Time,
        window_duration: ms(2),
        window_buckets: 2,
        minimum_calls: min_calls,
        failure_rate_threshold: threshold,
        slow_call_duration: Nanos::MAX,
        open_duration: ms(5),
        half_open_probes: 1,
        probe_timeout: ms(1),
        ..CircuitBreakerConfig::default()
    }
}

fn record(b: &Small, t: Nanos, failed: bool) -> OutcomeEffect {
    let p = b.try_acquire(t).expect("closed");
    if failed {
        b.on_failure(p, t)
    } else {
        b.on_success(p, t)
    }
}

/// Run `a` and `b` on two spawned threads and return both results. (Both actors are spawned
/// threads, never the model's main thread: loom then explores every interleaving of the two,
/// including the other thread running first.)
fn both<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send + 'static,
    B: FnOnce() -> RB + Send + 'static,
    RA: Send + 'static,
    RB: Send + 'static,
{
    let ta = thread::spawn(a);
    let tb = thread::spawn(b);
    (ta.join().unwrap(), tb.join().unwrap())
}

fn is_opened(e: OutcomeEffect) -> bool {
    e == OutcomeEffect::Opened
}

/// Two writers replace a full window of successes with failures: no outcome is lost, the
/// window that results meets the threshold, and exactly one of them opens the breaker (the
/// acquire-release hand-off guarantees the later evaluator sees the earlier one's write).
#[test]
fn count_window_two_failures_open_exactly_once() {
    loom::model(|| {
        let b = Arc::new(Small::new(count_config(2, 1.0, 1)).unwrap());
        record(&b, ms(0), false);
        record(&b, ms(0), false);
        let pa = b.try_acquire(ms(1)).unwrap();
        let pb = b.try_acquire(ms(1)).unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        let (ea, eb) = both(
            move || b1.on_failure(pa, ms(1)),
            move || b2.on_failure(pb, ms(1)),
        );
        let opened = [ea, eb].iter().filter(|e| is_opened(**e)).count();
        assert_eq!(opened, 1, "{ea:?} {eb:?}");
        assert_eq!(b.status().state, BreakerState::Open);
        let s = b.stats();
        assert_eq!((s.closed_to_open, s.failures, s.successes), (1, 2, 2));
    });
}

/// Two writers into a window that must not trip: at quiescence it holds exactly the last n
/// outcomes (one old success and both new outcomes), with consistent counts.
#[test]
fn count_window_keeps_exactly_the_last_n() {
    loom::model(|| {
        let cfg = CircuitBreakerConfig {
            slow_call_duration: ms(10),
            slow_call_rate_threshold: 1.0,
            ..count_config(3, 1.0, 1)
        };
        let b = Arc::new(Small::new(cfg).unwrap());
        for _ in 0..3 {
            record(&b, ms(0), false);
        }
        let pa = b.try_acquire(ms(0)).unwrap();
        let pb = b.try_acquire(ms(0)).unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        let (ea, eb) = both(
            move || b1.on_failure(pa, ms(1)),
            move || b2.on_success(pb, ms(20)), // slow success
        );
        assert_eq!((ea, eb), (OutcomeEffect::Counted, OutcomeEffect::Counted));
        assert_eq!(
            b.window_counts(ms(20)),
            WindowCounts {
                calls: 3,
                failures: 1,
                slow: 1
            }
        );
    });
}

/// A failure and a fast success race on a full window; the failure's scan may miss the
/// success, which can only lower the rate, so the failure always opens the breaker (1 of 2
/// = 50 % whichever of the two it sees); the success is counted if it lands first and
/// discarded if it arrives after the opening.
#[test]
fn count_window_failure_and_fast_success() {
    loom::model(|| {
        let b = Arc::new(Small::new(count_config(2, 0.5, 1)).unwrap());
        record(&b, ms(0), false);
        record(&b, ms(0), false);
        let pa = b.try_acquire(ms(1)).unwrap();
        let pb = b.try_acquire(ms(1)).unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        let (ea, eb) = both(
            move || b1.on_failure(pa, ms(1)),
            move || b2.on_success(pb, ms(1)),
        );
        assert_eq!(ea, OutcomeEffect::Opened);
        assert!(matches!(
            eb,
            OutcomeEffect::Counted | OutcomeEffect::Discarded
        ));
        assert_eq!(b.stats().closed_to_open, 1);
    });
}

/// An ordinary outcome of closed generation 0 races a whole open → half-open → closed cycle
/// run by another thread: it is either counted in generation 0 or discarded, never counted
/// in the new closed generation's window.
#[test]
fn stale_outcome_never_reaches_the_next_window() {
    loom::model(|| {
        // n = 1: one failure opens it.
        let b = Arc::new(Small::new(count_config(1, 1.0, 1)).unwrap());
        let old = b.try_acquire(ms(0)).unwrap();
        let p1 = b.try_acquire(ms(0)).unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        let cycle = move || {
            let _ = b2.on_failure(p1, ms(0));
            if b2.status().state != BreakerState::Open {
                // `old` took a later position, superseded p1 and has not evaluated yet:
                // the opening is its to make.
                return false;
            }
            // 6 ms later the next call is the single probe, and it closes.
            let probe = b2.try_acquire(ms(6)).unwrap();
            assert!(probe.is_probe());
            assert_eq!(b2.on_success(probe, ms(6)), OutcomeEffect::Closed);
            let p = b2.try_acquire(ms(7)).unwrap();
            assert_eq!(b2.on_success(p, ms(7)), OutcomeEffect::Counted);
            true
        };
        let (e, cycled) = both(move || b1.on_failure(old, ms(0)), cycle);
        assert!(matches!(
            e,
            OutcomeEffect::Counted | OutcomeEffect::Opened | OutcomeEffect::Discarded
        ));
        let st = b.status();
        if cycled {
            assert_eq!((st.state, st.generation), (BreakerState::Closed, 3));
            assert_eq!(
                b.window_counts(ms(7)),
                WindowCounts {
                    calls: 1,
                    failures: 0,
                    slow: 0
                }
            );
        } else {
            assert_eq!(e, OutcomeEffect::Opened);
            assert_eq!((st.state, st.generation), (BreakerState::Open, 1));
        }
    });
}

/// Open it from a single thread (n = 1: one failure), at `t`.
fn opened(cfg: CircuitBreakerConfig, t: Nanos) -> Arc<Small> {
    let b = Arc::new(Small::new(cfg).unwrap());
    assert_eq!(record(&b, t, true), OutcomeEffect::Opened);
    b
}

/// Two callers arrive after the open period with one probe slot: exactly one becomes the
/// probe (one open → half-open transition), the other is refused.
#[test]
fn one_transition_to_half_open_and_k_probes() {
    loom::model(|| {
        let b = opened(count_config(1, 1.0, 1), ms(0));
        let (b1, b2) = (b.clone(), b.clone());
        let (a, c) = both(move || b1.try_acquire(ms(5)), move || b2.try_acquire(ms(5)));
        let probes = [a.as_ref().ok(), c.as_ref().ok()]
            .iter()
            .flatten()
            .filter(|p| p.is_probe())
            .count();
        assert_eq!(probes, 1);
        let refused = [a.as_ref().err(), c.as_ref().err()];
        assert!(refused
            .iter()
            .flatten()
            .all(|r| r.reason == CircuitBreakerRejectReason::HalfOpenFull));
        assert_eq!(b.stats().open_to_half_open, 1);
        assert_eq!(b.status().probes_issued, 1);
        for p in [a, c].into_iter().flatten() {
            b.on_ignore(p);
        }
    });
}

/// A probe taken at 5 ms (due at 6 ms: probe timeout 1 ms) races a caller at 20 ms. The
/// late caller gets a probe (first, or because it sees the early probe's due instant,
/// judges it a failed probe and re-opens: at 6 ms for 5 ms, over by 20 ms), or, when its own
/// lost attempt at the half-open transition raised the due instant, is refused until at most
/// 21 ms. Either way a caller at 30 ms is a probe: no probe holds the breaker for ever.
#[test]
fn an_overdue_probe_does_not_block_for_ever() {
    loom::model(|| {
        let b = opened(count_config(1, 1.0, 1), ms(0));
        let (b1, b2) = (b.clone(), b.clone());
        let (early, late) = both(
            move || b1.try_acquire(ms(5)),
            move || b2.try_acquire(ms(20)),
        );
        match &late {
            Ok(p) => assert!(p.is_probe()),
            Err(r) => {
                assert_eq!(r.reason, CircuitBreakerRejectReason::HalfOpenFull);
                assert!(r.retry_at <= ms(21), "{r:?}");
            }
        }
        let again = b.try_acquire(ms(30));
        assert!(
            again.as_ref().is_ok_and(CircuitBreakerPermit::is_probe),
            "{again:?}"
        );
        for p in [early, late, again].into_iter().flatten() {
            b.on_ignore(p);
        }
    });
}

/// Two callers at the same instant with one probe slot: the probe taken is never judged
/// overdue by the other (it is not due yet), so exactly one is admitted.
#[test]
fn a_fresh_probe_is_never_judged_overdue() {
    loom::model(|| {
        let b = opened(count_config(1, 1.0, 1), ms(0));
        let (b1, b2) = (b.clone(), b.clone());
        let (x, y) = both(move || b1.try_acquire(ms(5)), move || b2.try_acquire(ms(5)));
        assert_eq!(usize::from(x.is_ok()) + usize::from(y.is_ok()), 1);
        assert_eq!(b.stats().half_open_to_open, 0);
        for p in [x, y].into_iter().flatten() {
            b.on_ignore(p);
        }
    });
}

/// Two probes out of two fail at once: exactly one re-opens, the other is discarded, and
/// the open-until instant is that of the generation published (from one of the two `now`s).
#[test]
fn two_probe_failures_reopen_once() {
    loom::model(|| {
        let b = opened(count_config(1, 1.0, 2), ms(0));
        let p1 = b.try_acquire(ms(5)).unwrap();
        let p2 = b.try_acquire(ms(5)).unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        let (e1, e2) = both(
            move || b1.on_failure(p1, ms(6)),
            move || b2.on_failure(p2, ms(7)),
        );
        let reopened = [e1, e2]
            .iter()
            .filter(|e| **e == OutcomeEffect::Reopened)
            .count();
        assert_eq!(reopened, 1);
        assert!([e1, e2].contains(&OutcomeEffect::Discarded));
        let st = b.status();
        assert_eq!(
            (st.state, st.generation, st.consecutive_opens),
            (BreakerState::Open, 3, 2)
        );
        assert!(
            st.half_open_at == ms(11) || st.half_open_at == ms(12),
            "{st:?}"
        );
        let r = b.try_acquire(ms(8)).unwrap_err();
        assert_eq!(r.retry_at, st.half_open_at);
        assert_eq!(b.stats().half_open_to_open, 1);
    });
}

/// A reader racing a re-opening never uses a stale open-until: it is refused either as
/// half-open-full (before) or as open with exactly the new instant (after), and a status
/// snapshot never shows an open state without its instant.
#[test]
fn reader_never_sees_a_stale_open_until() {
    loom::model(|| {
        let b = opened(count_config(1, 1.0, 1), ms(0));
        let probe = b.try_acquire(ms(5)).unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        // The reader comes at 5.5 ms, before the probe is due (6 ms).
        let (e, (r, st)) = both(
            move || b1.on_failure(probe, ms(6)),
            move || (b2.try_acquire(Nanos::from_micros(5_500)), b2.status()),
        );
        assert_eq!(e, OutcomeEffect::Reopened);
        match st.state {
            BreakerState::HalfOpen => {
                assert_eq!((st.generation, st.half_open_at), (2, Nanos::ZERO))
            }
            BreakerState::Open => assert_eq!((st.generation, st.half_open_at), (3, ms(11))),
            BreakerState::Closed => panic!("{st:?}"),
        }
        match r {
            Err(r) if r.reason == CircuitBreakerRejectReason::HalfOpenFull => {
                assert_eq!(r.retry_at, Nanos::from_micros(6_500))
            }
            Err(r) => {
                assert_eq!(r.reason, CircuitBreakerRejectReason::Open);
                assert_eq!(r.retry_at, ms(11));
            }
            Ok(p) => panic!("admitted {p:?}"),
        }
    });
}

/// A writer that decided to open from closed generation 0 is delayed while another thread
/// opens it, sends the probe and re-opens it (generation 3). The delayed opener must not
/// overwrite generation 3's open-until instant: it loads the instant before the state word,
/// so any newer instant makes its compare-and-swap fail.
#[test]
fn delayed_opener_cannot_overwrite_a_newer_open_until() {
    loom::model(|| {
        let b = Arc::new(Small::new(count_config(1, 1.0, 1)).unwrap());
        let pa = b.try_acquire(ms(0)).unwrap();
        let pb = b.try_acquire(ms(0)).unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        let cycle = move || {
            let _ = b2.on_failure(pb, ms(0));
            if b2.status().state != BreakerState::Open {
                return false; // the other failure superseded ours and opens it itself
            }
            let probe = b2.try_acquire(ms(5)).unwrap();
            assert_eq!(b2.on_failure(probe, ms(6)), OutcomeEffect::Reopened);
            true
        };
        let (_, cycled) = both(move || b1.on_failure(pa, ms(0)), cycle);
        let st = b.status();
        if cycled {
            assert_eq!((st.state, st.generation), (BreakerState::Open, 3));
            assert_eq!(st.half_open_at, ms(11));
            assert_eq!(b.try_acquire(ms(8)).unwrap_err().retry_at, ms(11));
        } else {
            assert_eq!(
                (st.state, st.generation, st.half_open_at),
                (BreakerState::Open, 1, ms(5))
            );
        }
    });
}

/// Giving a probe slot back races a new caller: the slot is reused at most once, and the
/// issued count never exceeds K.
#[test]
fn ignore_races_acquire() {
    loom::model(|| {
        let b = opened(count_config(1, 1.0, 1), ms(0));
        let probe = b.try_acquire(ms(5)).unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        let ((), r) = both(move || b1.on_ignore(probe), move || b2.try_acquire(ms(5)));
        let issued = b.status().probes_issued;
        match r {
            Ok(p) => {
                assert!(p.is_probe());
                assert_eq!(issued, 1);
                b.on_ignore(p);
            }
            Err(_) => assert_eq!(issued, 0),
        }
    });
}

/// Two failures land in the same time bucket, one of them rolling it over from an older
/// period: both are counted and exactly one opens the breaker.
#[test]
fn time_window_rollover_and_trip() {
    loom::model(|| {
        let b = Arc::new(Small::new(time_config(2, 1.0)).unwrap());
        assert_eq!(record(&b, ms(0), false), OutcomeEffect::Counted);
        // Period 2 reuses bucket 0 (period 0 is out of the window).
        let pa = b.try_acquire(ms(2)).unwrap();
        let pb = b.try_acquire(ms(2)).unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        let (ea, eb) = both(
            move || b1.on_failure(pa, ms(2)),
            move || b2.on_failure(pb, ms(2)),
        );
        assert_eq!([ea, eb].iter().filter(|e| is_opened(**e)).count(), 1);
        let s = b.stats();
        assert_eq!((s.failures, s.closed_to_open), (2, 1));
    });
}

/// Two fast successes in one bucket with no trip possible: the bucket counts both exactly.
#[test]
fn time_window_counts_concurrent_successes() {
    loom::model(|| {
        let b = Arc::new(Small::new(time_config(10, 1.0)).unwrap());
        record(&b, ms(0), true);
        let pa = b.try_acquire(ms(1)).unwrap();
        let pb = b.try_acquire(ms(1)).unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        let _ = both(
            move || b1.on_success(pa, ms(1)),
            move || b2.on_success(pb, ms(1)),
        );
        assert_eq!(
            b.window_counts(ms(1)),
            WindowCounts {
                calls: 3,
                failures: 1,
                slow: 0
            }
        );
    });
}

/// The time-window version of the stale-outcome race: a call issued in closed generation 0
/// finishes at 6 ms, inside the window of the closed generation 3 that another thread
/// reaches meanwhile. Its bucket write carries generation 0's epoch, so generation 3 neither
/// counts it nor loses its own outcome to it.
#[test]
fn time_window_stale_outcome_is_not_counted() {
    loom::model(|| {
        let b = Arc::new(Small::new(time_config(1, 1.0)).unwrap());
        let old = b.try_acquire(ms(0)).unwrap();
        let p1 = b.try_acquire(ms(0)).unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        let cycle = move || {
            let _ = b2.on_failure(p1, ms(0));
            let Ok(probe) = b2.try_acquire(ms(5)) else {
                return false; // `old` opened it first, at 6 ms: still open at 5 ms
            };
            if !probe.is_probe() {
                b2.on_ignore(probe);
                return false;
            }
            assert_eq!(b2.on_success(probe, ms(5)), OutcomeEffect::Closed);
            let p = b2.try_acquire(ms(6)).unwrap();
            assert_eq!(b2.on_success(p, ms(6)), OutcomeEffect::Counted);
            true
        };
        let (_, cycled) = both(move || b1.on_failure(old, ms(6)), cycle);
        if cycled {
            assert_eq!(b.status().generation, 3);
            assert_eq!(
                b.window_counts(ms(6)),
                WindowCounts {
                    calls: 1,
                    failures: 0,
                    slow: 0
                }
            );
        } else {
            assert_eq!(b.status().state, BreakerState::Open);
        }
    });
}

/// Two threads insert the same key: one slot, one breaker. Two different keys in a set of
/// one slot: exactly one fits.
#[test]
fn keyed_insert() {
    loom::model(|| {
        let cfg = count_config(2, 1.0, 1);
        let set: Arc<KeyedBreakers<2, 2>> = Arc::new(KeyedBreakers::new(cfg).unwrap());
        let (s1, s2) = (set.clone(), set.clone());
        let addr = |s: Arc<KeyedBreakers<2, 2>>| {
            move || s.get_or_insert(7).unwrap() as *const CircuitBreaker<2> as usize
        };
        let (mine, theirs) = both(addr(s1), addr(s2));
        assert_eq!(mine, theirs);
        assert_eq!(set.len(), 1);
        assert_eq!(set.stats().entries, 1);
    });
    loom::model(|| {
        let cfg = count_config(2, 1.0, 1);
        let set: Arc<KeyedBreakers<1, 2>> = Arc::new(KeyedBreakers::new(cfg).unwrap());
        let (s1, s2) = (set.clone(), set.clone());
        let (mine, theirs) = both(
            move || s1.get_or_insert(2).is_ok(),
            move || s2.get_or_insert(1).is_ok(),
        );
        assert!(mine ^ theirs);
        assert_eq!(set.stats().full, 1);
    });
}

/// Keep the permit type in view: it is moved into the other thread and reported there.
#[allow(dead_code)]
fn permit_is_send(p: CircuitBreakerPermit) -> impl Send {
    p
}

/// The lazy clock under a race: two reports of an untimed count window, one of which trips.
/// Each reads its clock at most once, the one that opens the breaker read it (to date the
/// opening), and the open-until instant comes from a reading of a racer that tried to open
/// (either may write the instant first; the other then publishes it), whatever the
/// interleaving.
#[test]
fn the_tripping_report_reads_the_clock_once() {
    use std::cell::Cell;
    fn report(b: &Small, p: CircuitBreakerPermit, failed: bool, at: Nanos) -> (OutcomeEffect, u32) {
        let reads = Cell::new(0u32);
        let clock = || {
            reads.set(reads.get() + 1);
            at
        };
        let e = if failed {
            b.on_failure(p, clock)
        } else {
            b.on_success(p, clock)
        };
        (e, reads.get())
    }
    loom::model(|| {
        let b = Arc::new(Small::new(count_config(2, 0.5, 1)).unwrap());
        // Closed untimed permits: no clock is read to stamp them.
        let pa = b
            .try_acquire(|| -> Nanos { panic!("no clock read to acquire") })
            .unwrap();
        let pb = b
            .try_acquire(|| -> Nanos { panic!("no clock read to acquire") })
            .unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        let ((ea, ra), (eb, rb)) = both(
            move || report(&b1, pa, true, ms(3)),
            move || report(&b2, pb, false, ms(4)),
        );
        assert!(ra <= 1 && rb <= 1, "{ra} {rb}");
        let opened: Vec<_> = [(ea, ra, ms(3)), (eb, rb, ms(4))]
            .into_iter()
            .filter(|(e, _, _)| is_opened(*e))
            .collect();
        assert_eq!(opened.len(), 1, "{ea:?} {eb:?}");
        assert_eq!(opened[0].1, 1);
        let until = b.status().half_open_at;
        let from_a = ra == 1 && until == ms(3).saturating_add(ms(5));
        let from_b = rb == 1 && until == ms(4).saturating_add(ms(5));
        assert!(from_a || from_b, "{until:?} {ra} {rb}");
    });
}

/// The fleet agent's `open_on_evidence` races a report that trips the breaker on its own:
/// exactly one of them opens it (one opening per closed generation), the counters say one
/// closed-to-open transition, and the breaker ends open. Then, on the open breaker, a second
/// `open_on_evidence` is a no-op.
#[test]
fn open_on_evidence_races_a_tripping_report() {
    loom::model(|| {
        let b = Arc::new(Small::new(count_config(2, 1.0, 1)).unwrap());
        record(&b, ms(0), true);
        let p = b.try_acquire(ms(1)).unwrap();
        let (b1, b2) = (b.clone(), b.clone());
        let (report, agent) = both(
            move || b1.on_failure(p, ms(1)),
            move || b2.open_on_evidence(ms(1)),
        );
        assert!(
            is_opened(report) != agent,
            "report {report:?}, agent opened: {agent}"
        );
        assert_eq!(b.status().state, BreakerState::Open);
        assert_eq!(b.stats().closed_to_open, 1);
        assert!(!b.open_on_evidence(ms(2)));
        assert_eq!(b.stats().closed_to_open, 1);
    });
}
