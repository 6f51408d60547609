#![cfg(not(loom))]
//! Integration tests for `deadline`: a sequential reference model of deadlines and attempt
//! budgets (proptest), the two wire forms against reference encoders/parsers, parsers fed
//! arbitrary bytes and strings (never a panic), Basketly's numbers, and two threads sharing
//! one deadline value.

use std::sync::Arc;

use guards_core::deadline::{
    encode_grpc_timeout, encode_millis, parse_grpc_timeout, parse_millis, AttemptBudget, Deadline,
    DeadlineConfig, GrpcTimeoutError, MillisError, MAX_ATTEMPT_TIMEOUT,
};
use guards_core::Nanos;
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------
// Reference model: a deadline is `Option<u64>` (None = never), arithmetic in i128.
// ---------------------------------------------------------------------------------------

fn model_after(now: u64, timeout: u64) -> Option<u64> {
    let at = now as u128 + timeout as u128;
    if at >= u64::MAX as u128 {
        None
    } else {
        Some(at as u64)
    }
}

fn model_left(d: Option<u64>, now: u64) -> Option<i128> {
    d.map(|at| (at as i128 - now as i128).max(0))
}

/// "start" with a budget, or the reason not to start.
fn model_budget(d: Option<u64>, now: u64, timeout: u64, margin: u64) -> AttemptBudget {
    let left = model_left(d, now);
    if left == Some(0) {
        return AttemptBudget::Expired;
    }
    let window = match left {
        Some(l) => (timeout as i128).min(l),
        None => timeout as i128,
    };
    let budget = window - margin as i128;
    if budget <= 0 {
        AttemptBudget::TooLittleLeft {
            left: Nanos(left.map_or(u64::MAX, |l| l as u64)),
        }
    } else {
        AttemptBudget::Start {
            budget: Nanos(budget as u64),
        }
    }
}

const UNITS: [(u8, u128); 6] = [
    (b'n', 1),
    (b'u', 1_000),
    (b'm', 1_000_000),
    (b'S', 1_000_000_000),
    (b'M', 60_000_000_000),
    (b'H', 3_600_000_000_000),
];

fn model_grpc_encode(ns: u64) -> String {
    for (unit, size) in UNITS {
        let v = ns as u128 / size;
        if v < 100_000_000 {
            return format!("{v}{}", unit as char);
        }
    }
    unreachable!("u64 nanoseconds always fit in hours")
}

fn model_grpc_parse(b: &[u8]) -> Result<u64, GrpcTimeoutError> {
    use GrpcTimeoutError::*;
    let Some((&last, digits)) = b.split_last() else {
        return Err(Empty);
    };
    if last.is_ascii_digit() {
        return Err(MissingUnit);
    }
    let Some(&(_, size)) = UNITS.iter().find(|(u, _)| *u == last) else {
        return Err(UnknownUnit);
    };
    if digits.is_empty() {
        return Err(NoDigits);
    }
    if digits.iter().any(|c| !c.is_ascii_digit()) {
        return Err(InvalidCharacter);
    }
    if digits.len() > 8 {
        return Err(TooManyDigits);
    }
    let v: u128 = std::str::from_utf8(digits).unwrap().parse().unwrap();
    let ns = v * size;
    if ns > u64::MAX as u128 {
        Err(Overflow)
    } else {
        Ok(ns as u64)
    }
}

fn model_millis_parse(b: &[u8]) -> Result<u64, MillisError> {
    if b.is_empty() {
        return Err(MillisError::Empty);
    }
    if b.iter().any(|c| !c.is_ascii_digit()) {
        return Err(MillisError::InvalidCharacter);
    }
    // Strip leading zeros, then compare as big decimal via u128 when short enough.
    let s = std::str::from_utf8(b).unwrap().trim_start_matches('0');
    if s.len() > 30 {
        return Err(MillisError::Overflow);
    }
    let v: u128 = if s.is_empty() { 0 } else { s.parse().unwrap() };
    let ns = v * 1_000_000;
    if ns > u64::MAX as u128 {
        Err(MillisError::Overflow)
    } else {
        Ok(ns as u64)
    }
}

fn to_model(d: Deadline) -> Option<u64> {
    d.expires_at().map(|n| n.0)
}

fn arb_time() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..10_000,
        any::<u64>(),
        Just(u64::MAX),
        Just(u64::MAX - 1)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Deadlines, time left, expiry, min and attempt budgets agree with the model.
    #[test]
    fn deadline_matches_reference_model(
        now in arb_time(), timeout in arb_time(), other in arb_time(),
        at_now in arb_time(), attempt in 0u64..5_000, margin in 0u64..5_000,
    ) {
        let d = Deadline::after(Nanos(now), Nanos(timeout));
        let md = model_after(now, timeout);
        prop_assert_eq!(to_model(d), md);
        let e = Deadline::at(Nanos(other));
        let me = if other == u64::MAX { None } else { Some(other) };
        prop_assert_eq!(to_model(e), me);
        let earliest = match (md, me) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, None) => a,
            (None, b) => b,
        };
        prop_assert_eq!(to_model(d.min(e)), earliest);
        prop_assert_eq!(d.min(e), e.min(d));

        let left = model_left(md, at_now);
        prop_assert_eq!(d.time_left(Nanos(at_now)).0, left.map_or(u64::MAX, |l| l as u64));
        prop_assert_eq!(d.is_expired(Nanos(at_now)), left == Some(0));
        prop_assert_eq!(
            d.attempt_budget(Nanos(at_now), Nanos(attempt), Nanos(margin)),
            model_budget(md, at_now, attempt, margin)
        );
        let cfg = DeadlineConfig { attempt_timeout: Nanos(attempt), margin: Nanos(margin) };
        prop_assert_eq!(cfg.attempt_budget(d, Nanos(at_now)), model_budget(md, at_now, attempt, margin));
    }

    /// A started attempt's budget never exceeds the timeout nor the time left, and its own
    /// deadline never outlives the request's.
    #[test]
    fn attempt_deadline_never_outlives_the_request(
        now in 0u64..1_000_000_000, timeout in 1u64..1_000_000_000,
        at_now in 0u64..2_000_000_000, attempt in 1u64..100_000_000, margin in 0u64..1_000_000,
    ) {
        let request = Deadline::after(Nanos(now), Nanos(timeout));
        let decision = request.attempt_budget(Nanos(at_now), Nanos(attempt), Nanos(margin));
        if let Some(budget) = decision.budget() {
            prop_assert!(budget.0 >= 1);
            prop_assert!(budget.0 <= attempt);
            prop_assert!(budget <= request.time_left(Nanos(at_now)));
            let inner = decision.attempt_deadline(Nanos(at_now)).unwrap();
            prop_assert!(inner <= request);
            prop_assert_eq!(request.min(inner), inner);
        }
    }

    /// Encoding agrees with the reference encoder, fits the grammar, and parsing it back
    /// gives at most the original and loses less than one unit of the chosen precision.
    #[test]
    fn grpc_encode_round_trips_rounding_down(ns in arb_time()) {
        let h = encode_grpc_timeout(Nanos(ns));
        let want = model_grpc_encode(ns);
        prop_assert_eq!(h.as_str(), want.as_str());
        prop_assert!(h.len() >= 2 && h.len() <= 9);
        let back = parse_grpc_timeout(&*h).unwrap().0;
        prop_assert!(back <= ns);
        let unit = UNITS.iter().find(|(u, _)| *u == *h.as_bytes().last().unwrap()).unwrap().1;
        prop_assert!(((ns - back) as u128) < unit);
        if ns >= 100_000_000 {
            // Coarser than nanoseconds only when needed: relative loss below 1e-5.
            prop_assert!(((ns - back) as f64) / (ns as f64) < 1e-5);
        }
    }

    /// The milliseconds header rounds down to whole milliseconds and parses back exactly.
    #[test]
    fn millis_round_trips_rounding_down(ns in arb_time()) {
        let h = encode_millis(Nanos(ns));
        prop_assert_eq!(h.as_str(), (ns / 1_000_000).to_string());
        prop_assert_eq!(parse_millis(&*h).unwrap().0, ns / 1_000_000 * 1_000_000);
    }

    /// Arbitrary bytes never panic either parser, and they agree with the models.
    #[test]
    fn parsers_on_arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..24)) {
        prop_assert_eq!(parse_grpc_timeout(&b).map(|n| n.0), model_grpc_parse(&b));
        prop_assert_eq!(parse_millis(&b).map(|n| n.0), model_millis_parse(&b));
    }

    /// Near-miss strings (digits, unit letters, signs, spaces, dots) hit every error path.
    #[test]
    fn parsers_on_header_like_strings(s in "[0-9 +.\\-]{0,12}[0-9HMSmunsx ]?") {
        prop_assert_eq!(parse_grpc_timeout(&s).map(|n| n.0), model_grpc_parse(s.as_bytes()));
        prop_assert_eq!(parse_millis(&s).map(|n| n.0), model_millis_parse(s.as_bytes()));
    }

    /// Arbitrary Unicode strings never panic.
    #[test]
    fn parsers_on_arbitrary_strings(s in any::<String>()) {
        let _ = parse_grpc_timeout(&s);
        let _ = parse_millis(&s);
        let _ = Deadline::from_grpc_timeout(Nanos(5), &s);
        let _ = Deadline::from_millis(Nanos(5), &s);
    }

    /// Config validation matches its documented rule.
    #[test]
    fn config_validation_rule(t in arb_time(), m in arb_time()) {
        let ok = (1..=MAX_ATTEMPT_TIMEOUT.0).contains(&t) && m < t;
        prop_assert_eq!(DeadlineConfig::new(Nanos(t), Nanos(m)).is_ok(), ok);
    }
}

#[test]
fn every_error_has_a_stable_name_and_message() {
    use GrpcTimeoutError::*;
    for (input, err, name) in [
        ("", Empty, "empty"),
        ("10", MissingUnit, "missing_unit"),
        ("10s", UnknownUnit, "unknown_unit"),
        ("m", NoDigits, "no_digits"),
        ("1 0m", InvalidCharacter, "invalid_character"),
        ("000000001m", TooManyDigits, "too_many_digits"),
        ("5124096H", Overflow, "overflow"),
    ] {
        assert_eq!(parse_grpc_timeout(input), Err(err), "{input:?}");
        assert_eq!(err.name(), name);
        assert!(err.to_string().starts_with("grpc-timeout value"));
    }
    assert_eq!(
        parse_grpc_timeout("5124095H"),
        Ok(Nanos(5_124_095 * 3_600_000_000_000))
    );
    for (input, err, name) in [
        ("", MillisError::Empty, "empty"),
        ("-1", MillisError::InvalidCharacter, "invalid_character"),
        ("18446744073710", MillisError::Overflow, "overflow"),
    ] {
        assert_eq!(parse_millis(input), Err(err));
        assert_eq!(err.name(), name);
        assert!(!err.to_string().is_empty());
    }
    assert_eq!(
        parse_millis("18446744073709"),
        Ok(Nanos(18_446_744_073_709_000_000))
    );
}

#[test]
fn header_value_formats() {
    let h = encode_grpc_timeout(Nanos::from_secs(2));
    assert_eq!(h.to_string(), "2000000u");
    assert_eq!(format!("{h:?}"), "HeaderValue(\"2000000u\")");
    let s: &str = &h;
    assert_eq!(s, "2000000u");
}

/// Basketly's C1 (docs/basketly.md): shop-api calls stock with `min(60 ms, left) − margin`;
/// stock hears that as a duration and drops the work at dequeue once it has passed.
#[test]
fn basketly_shop_api_to_stock() {
    let cfg = DeadlineConfig::new(Nanos::from_millis(60), Nanos::ZERO).unwrap();
    let arrival = Nanos::from_secs(1_000);
    let app = Deadline::after(arrival, Nanos::from_secs(2));
    let attempt = cfg.attempt_budget(app, arrival);
    assert_eq!(
        attempt,
        AttemptBudget::Start {
            budget: Nanos::from_millis(60)
        }
    );
    // On the wire stock hears 60 ms, never the app's 2 s.
    let wire = Deadline::after(arrival, attempt.budget().unwrap())
        .to_grpc_timeout(arrival)
        .unwrap();
    assert_eq!(wire, "60000000n");
    // Stock: expires_at = its own clock + the received duration.
    let stock_now = Nanos::from_secs(55);
    let at_stock = Deadline::from_grpc_timeout(stock_now, &*wire).unwrap();
    assert!(!at_stock.is_expired(stock_now.saturating_add(Nanos::from_millis(59))));
    assert!(at_stock.is_expired(stock_now.saturating_add(Nanos::from_millis(60))));
    // Envoy-style milliseconds header of the same budget.
    let ms = Deadline::after(arrival, Nanos::from_millis(60))
        .to_millis(arrival)
        .unwrap();
    assert_eq!(ms, "60");
    // The app has given up: don't start.
    let late = arrival.saturating_add(Nanos::from_secs(2));
    assert_eq!(cfg.attempt_budget(app, late), AttemptBudget::Expired);
}

/// A deadline is a `Copy` value: two threads reading the same one (here through an `Arc`)
/// compute the same budgets and headers as one thread does, with nothing to synchronise.
#[test]
fn two_threads_share_a_deadline_value() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Deadline>();
    assert_send_sync::<DeadlineConfig>();
    let shared = Arc::new((
        Deadline::after(Nanos(1_000), Nanos::from_millis(500)),
        DeadlineConfig::default(),
    ));
    let run = |shared: Arc<(Deadline, DeadlineConfig)>| {
        (0..20_000u64)
            .map(|i| {
                let now = Nanos(1_000 + i * 30_000);
                let b = shared.1.attempt_budget(shared.0, now);
                let h = shared.0.to_grpc_timeout(now).unwrap();
                (b, parse_grpc_timeout(&*h).unwrap())
            })
            .collect::<Vec<_>>()
    };
    let (s1, s2) = (Arc::clone(&shared), Arc::clone(&shared));
    let t1 = std::thread::spawn(move || run(s1));
    let t2 = std::thread::spawn(move || run(s2));
    let (a, b) = (t1.join().unwrap(), t2.join().unwrap());
    let single = run(shared);
    assert_eq!(a, single);
    assert_eq!(b, single);
    // Invariants along the sweep: budgets never grow as time passes, and the header never
    // promises more than the time left.
    for w in single.windows(2) {
        let (b0, b1) = (
            w[0].0.budget().unwrap_or(Nanos::ZERO),
            w[1].0.budget().unwrap_or(Nanos::ZERO),
        );
        assert!(b1 <= b0);
    }
    assert!(single.iter().any(|(b, _)| *b == AttemptBudget::Expired));
}
