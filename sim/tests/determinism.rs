//! The same seed gives the same output bit for bit; a different seed gives a different one.

use guards_sim::basketly::basketly;

fn json(setting: &str, seed: u64, until: &str) -> String {
    basketly(setting, seed, Some(until), &[] as &[&str])
        .unwrap_or_else(|e| panic!("{e}"))
        .to_json()
}

#[test]
fn same_seed_same_output_c0() {
    let a = json("C0", 1, "20:00:08");
    let b = json("C0", 1, "20:00:08");
    assert_eq!(a, b);
}

#[test]
fn different_seed_different_output_c0() {
    assert_ne!(json("C0", 1, "20:00:03"), json("C0", 2, "20:00:03"));
}

#[test]
fn same_seed_same_output_with_every_guard() {
    // C8 exercises retries with jitter, budgets, admission, the queue discipline,
    // breakers, the bulkhead and the brownout.
    let a = json("C8", 7, "20:00:06");
    let b = json("C8", 7, "20:00:06");
    assert_eq!(a, b);
    assert_ne!(a, json("C8", 8, "20:00:06"));
}

#[test]
fn same_seed_same_output_hedging() {
    let a = json("H-hedge", 3, "20:00:04");
    let b = json("H-hedge", 3, "20:00:04");
    assert_eq!(a, b);
}
