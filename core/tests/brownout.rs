#![cfg(not(loom))]
//! Integration tests for `brownout`: proptest of decisions and counters against a
//! reference model (single operations and the keyed table), Basketly's C8 split, and a
//! two-thread stress test.

use std::sync::Arc;

use guards_core::brownout::{
    operation_key, Brownout, BrownoutConfig, BrownoutDecision, BrownoutStats, BrownoutTable,
    RefusalKind, RefusalKinds,
};
use proptest::prelude::*;

fn kind() -> impl Strategy<Value = RefusalKind> {
    (0usize..7).prop_map(|i| RefusalKind::ALL[i])
}

fn config() -> impl Strategy<Value = BrownoutConfig> {
    (any::<bool>(), any::<bool>(), 1u8..=0x7F).prop_map(|(optional, exempt, bits)| BrownoutConfig {
        optional,
        exempt,
        fallback_on: RefusalKinds(bits),
    })
}

/// The model, written from the rules in words: exempt + refused before sending → proceed;
/// optional + kind listed → fallback; otherwise fail fast.
fn model(c: &BrownoutConfig, k: RefusalKind) -> BrownoutDecision {
    let sent = matches!(
        k,
        RefusalKind::Timeout | RefusalKind::Overloaded | RefusalKind::Failed
    );
    if c.exempt && !sent {
        return BrownoutDecision::Proceed;
    }
    if c.optional && c.fallback_on.0 & (1 << k as u8) != 0 {
        return BrownoutDecision::ServeFallback;
    }
    BrownoutDecision::FailFast
}

fn tally(s: &mut BrownoutStats, d: BrownoutDecision) {
    match d {
        BrownoutDecision::ServeFallback => s.degraded += 1,
        BrownoutDecision::FailFast => s.errors += 1,
        BrownoutDecision::Proceed => s.proceeded += 1,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn single_operation_matches_model(
        c in config(),
        events in proptest::collection::vec(prop::option::of(kind()), 0..100),
    ) {
        let b = Brownout::new(c).unwrap();
        let mut want = BrownoutStats::default();
        for e in events {
            match e {
                Some(k) => {
                    let d = b.on_refusal(k);
                    prop_assert_eq!(d, model(&c, k));
                    tally(&mut want, d);
                }
                None => {
                    b.on_full();
                    want.full += 1;
                }
            }
        }
        prop_assert_eq!(b.stats(), want);
    }

    #[test]
    fn table_matches_model(
        configs in proptest::collection::vec(config(), 1..8),
        events in proptest::collection::vec((0usize..10, prop::option::of(kind())), 0..200),
    ) {
        let mut t: BrownoutTable<8> = BrownoutTable::new();
        let key = |i: usize| operation_key(&format!("op{i}"));
        for (i, c) in configs.iter().enumerate() {
            prop_assert_eq!(t.register(key(i), *c), Ok(i));
        }
        let mut want = vec![BrownoutStats::default(); configs.len()];
        let mut unknown = 0;
        for (i, e) in events {
            let known = i < configs.len();
            match e {
                Some(k) => {
                    let d = t.on_refusal(key(i), k);
                    if known {
                        prop_assert_eq!(d, model(&configs[i], k));
                        tally(&mut want[i], d);
                    } else {
                        prop_assert_eq!(d, BrownoutDecision::FailFast);
                        unknown += 1;
                    }
                }
                None => {
                    prop_assert_eq!(t.on_full(key(i)), known);
                    if known { want[i].full += 1 } else { unknown += 1 }
                }
            }
        }
        for (i, w) in want.iter().enumerate() {
            prop_assert_eq!(t.get(key(i)).unwrap().stats(), *w);
        }
        prop_assert_eq!(t.unknown(), unknown);
        let total = want.iter().fold(BrownoutStats::default(), |a, w| BrownoutStats {
            full: a.full + w.full,
            degraded: a.degraded + w.degraded,
            errors: a.errors + w.errors,
            proceeded: a.proceeded + w.proceeded,
        });
        prop_assert_eq!(t.totals(), total);
    }
}

/// Basketly's C8 (docs/basketly.md) on one second of the hiccup: the same five failure kinds
/// give a degraded cart view (the stock badge is optional) and a fast error for a checkout's
/// reservation (required); health checks proceed even when the bulkhead is full.
#[test]
fn basketly_c8_split() {
    let mut t: BrownoutTable = BrownoutTable::new();
    let view = operation_key("stock.view");
    let reserve = operation_key("stock.reserve");
    let health = operation_key("health");
    t.register(
        view,
        BrownoutConfig {
            optional: true,
            ..BrownoutConfig::default()
        },
    )
    .unwrap();
    t.register(reserve, BrownoutConfig::default()).unwrap();
    t.register(
        health,
        BrownoutConfig {
            exempt: true,
            ..BrownoutConfig::default()
        },
    )
    .unwrap();
    let five = [
        RefusalKind::BreakerOpen,
        RefusalKind::BulkheadFull,
        RefusalKind::Timeout,
        RefusalKind::Overloaded,
        RefusalKind::BudgetExhausted,
    ];
    // About 1,190 failed cart views and a handful of failed reserves in one second.
    for i in 0..1_190 {
        assert_eq!(
            t.on_refusal(view, five[i % 5]),
            BrownoutDecision::ServeFallback
        );
    }
    for i in 0..15 {
        assert_eq!(
            t.on_refusal(reserve, five[i % 5]),
            BrownoutDecision::FailFast
        );
    }
    for _ in 0..850 {
        assert!(t.on_full(view));
    }
    assert_eq!(
        t.on_refusal(health, RefusalKind::BulkheadFull),
        BrownoutDecision::Proceed
    );
    let v = t.get(view).unwrap().stats();
    assert_eq!((v.full, v.degraded, v.errors), (850, 1_190, 0));
    assert_eq!(t.get(reserve).unwrap().stats().errors, 15);
    assert_eq!(t.totals().proceeded, 1);
}

/// Two threads record decisions and full answers on one shared table: every event is
/// counted exactly once, in the right operation, and decisions never depend on timing.
#[test]
fn two_threads_count_exactly() {
    const N: usize = 50_000;
    let mut t: BrownoutTable<4> = BrownoutTable::new();
    let optional = BrownoutConfig {
        optional: true,
        ..BrownoutConfig::default()
    };
    t.register(1, optional).unwrap();
    t.register(2, BrownoutConfig::default()).unwrap();
    let t = Arc::new(t);
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let t = Arc::clone(&t);
            std::thread::spawn(move || {
                for i in 0..N {
                    let k = RefusalKind::ALL[i % 7];
                    assert_eq!(t.on_refusal(1, k), BrownoutDecision::ServeFallback);
                    assert_eq!(t.on_refusal(2, k), BrownoutDecision::FailFast);
                    assert!(t.on_full(1));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let n = 2 * N as u64;
    assert_eq!(
        t.get(1).unwrap().stats(),
        BrownoutStats {
            full: n,
            degraded: n,
            errors: 0,
            proceeded: 0
        }
    );
    assert_eq!(
        t.get(2).unwrap().stats(),
        BrownoutStats {
            full: 0,
            degraded: 0,
            errors: n,
            proceeded: 0
        }
    );
}
