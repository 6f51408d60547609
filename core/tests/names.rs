//! The one vocabulary of core's fieldless public enums: every variant has a unique stable
//! name that `from_name` reads back, and a fixed discriminant that `TryFrom<u8>` reads back;
//! every other number and name is refused.
#![cfg(not(loom))]

use std::collections::HashSet;

use guards_core::admission::AdmissionRejectReason;
use guards_core::backoff::Jitter;
use guards_core::brownout::{BrownoutDecision, RefusalKind};
use guards_core::circuit_breaker::{
    BreakerState, CircuitBreakerRejectReason, KeyedBreakersRejectReason, OutcomeEffect, PermitKind,
    WindowKind,
};
use guards_core::deadline::{GrpcTimeoutError, GrpcTimeoutUnit, MillisError};
use guards_core::hedging::HedgeRefusal;
use guards_core::limit::LimitAlgorithm;
use guards_core::limiter::LimiterRejectReason;
use guards_core::outcome::{
    BreakerVerdict, BudgetVerdict, BulkheadVerdict, LatencyVerdict, LimiterVerdict, ThrottleVerdict,
};
use guards_core::queue_discipline::{DropReason, ServeOrder};
use guards_core::retry_budget::RetryBudgetMode;
use guards_core::retry_driver::RetryPhase;
use guards_core::retry_policy::{GiveUpReason, Idempotency, RetryCause, UnkeyedSideEffects};
use guards_core::{ConfigErrorKind, Outcome, UnknownDiscriminant};

/// Check one enum; returns how many variants it has.
macro_rules! check {
    ($ty:ident) => {{
        let all = $ty::ALL;
        let mut names = HashSet::new();
        let mut codes = HashSet::new();
        for v in all {
            let name = v.name();
            assert!(
                names.insert(name),
                "{}: name `{name}` used twice",
                stringify!($ty)
            );
            assert!(
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{}: `{name}` is not snake_case",
                stringify!($ty)
            );
            assert_eq!($ty::from_name(name), Some(v));
            let code = v as u8;
            assert!(codes.insert(code));
            assert_eq!($ty::try_from(code), Ok(v));
        }
        for code in 0..=u8::MAX {
            if !codes.contains(&code) {
                let e: UnknownDiscriminant = $ty::try_from(code).unwrap_err();
                assert_eq!((e.type_name(), e.value()), (stringify!($ty), code));
            }
        }
        assert_eq!($ty::from_name(""), None);
        assert_eq!($ty::from_name("not_a_name"), None);
        if let Some(first) = all.first() {
            assert_eq!($ty::from_name(&first.name().to_uppercase()), None);
        }
        all.len()
    }};
}

#[test]
fn every_fieldless_enum_round_trips_its_name_and_number() {
    let counts = [
        check!(ConfigErrorKind),
        check!(Jitter),
        check!(RefusalKind),
        check!(BrownoutDecision),
        check!(BreakerState),
        check!(CircuitBreakerRejectReason),
        check!(KeyedBreakersRejectReason),
        check!(OutcomeEffect),
        check!(PermitKind),
        check!(WindowKind),
        check!(GrpcTimeoutError),
        check!(GrpcTimeoutUnit),
        check!(MillisError),
        check!(HedgeRefusal),
        check!(LimitAlgorithm),
        check!(LimiterRejectReason),
        check!(AdmissionRejectReason),
        check!(DropReason),
        check!(ServeOrder),
        check!(RetryBudgetMode),
        check!(GiveUpReason),
        check!(Idempotency),
        check!(RetryCause),
        check!(UnkeyedSideEffects),
        check!(Outcome),
        check!(BreakerVerdict),
        check!(BudgetVerdict),
        check!(LatencyVerdict),
        check!(LimiterVerdict),
        check!(ThrottleVerdict),
        check!(RetryPhase),
    ];
    assert!(counts.iter().all(|&n| n >= 2));
    assert_eq!(check!(BulkheadVerdict), 1);
}

#[test]
fn discriminants_are_the_published_numbers() {
    // Numbers the C ABI passes: changing one is a breaking change.
    assert_eq!(ConfigErrorKind::Inconsistent as u8, 4);
    assert_eq!(RefusalKind::Failed as u8, 6);
    assert_eq!(GiveUpReason::BudgetExhausted as u8, 8);
    assert_eq!(GiveUpReason::Cancelled as u8, 11);
    assert_eq!(Outcome::Success as u8, 0);
    assert_eq!(Outcome::Cancelled as u8, 9);
    assert_eq!(OutcomeEffect::Discarded as u8, 5);
    assert_eq!(GrpcTimeoutUnit::Seconds as u8, b'S');
    assert_eq!(
        GrpcTimeoutUnit::try_from(b'm'),
        Ok(GrpcTimeoutUnit::Milliseconds)
    );
    assert_eq!(
        GrpcTimeoutUnit::from_letter(b'H'),
        Some(GrpcTimeoutUnit::Hours)
    );
}

#[test]
fn display_prints_the_name_where_it_did() {
    assert_eq!(RefusalKind::BulkheadFull.to_string(), "bulkhead_full");
    assert_eq!(
        BrownoutDecision::ServeFallback.to_string(),
        "serve_fallback"
    );
    assert_eq!(
        GiveUpReason::DeadlineExceeded.to_string(),
        "deadline_exceeded"
    );
    assert_eq!(HedgeRefusal::NoLatencyData.to_string(), "no_latency_data");
}
