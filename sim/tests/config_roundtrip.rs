//! Properties of the topology's JSON: a duration or an instant written in its canonical
//! form reads back as the same value, and any config core accepts reads back from the JSON
//! it is written as (so `Topology::to_json` never loses a setting).

use guards_core::circuit_breaker::{CircuitBreakerConfig, WindowKind};
use guards_core::retry_policy::RetryPolicyConfig;
use guards_core::Nanos;
use guards_sim::topology::clock;
use guards_sim::topology::configs::{from_value, to_value};
use guards_sim::topology::units::{format_duration, format_instant, parse_duration};
use proptest::prelude::*;

proptest! {
    #[test]
    fn durations_round_trip(ns in 0u64..=u64::MAX / 2) {
        let d = Nanos::new(ns);
        prop_assert_eq!(parse_duration(&format_duration(d)), Some(d));
    }

    #[test]
    fn instants_round_trip(ns in 0u64..48 * 3600 * 1_000_000_000) {
        let t = Nanos::new(ns);
        prop_assert_eq!(clock::parse(&format_instant(t)), Some(t));
    }

    #[test]
    fn breaker_configs_round_trip(
        time in any::<bool>(),
        size in 1u64..=65_536,
        buckets in 1u64..=100,
        bucket_ms in 1u64..=10_000,
        threshold in 0.001f64..=1.0,
        min_calls in 0u64..=1000,
        open_ms in 1u64..=600_000,
        probes in 1u64..=1000,
        probe_us in 1u64..=10_000_000,
    ) {
        let c = CircuitBreakerConfig {
            window_kind: if time { WindowKind::Time } else { WindowKind::Count },
            window_size: size,
            window_buckets: buckets,
            window_duration: Nanos::from_millis(buckets * bucket_ms),
            failure_rate_threshold: threshold,
            minimum_calls: min_calls,
            open_duration: Nanos::from_millis(open_ms),
            max_open_duration: Nanos::from_millis(open_ms.max(300_000)),
            half_open_probes: probes,
            probe_timeout: Nanos::from_micros(probe_us),
            ..CircuitBreakerConfig::default()
        };
        prop_assume!(c.validate().is_ok());
        prop_assert_eq!(from_value::<CircuitBreakerConfig>(&to_value(&c)), Ok(c));
    }

    #[test]
    fn retry_configs_round_trip(
        attempts in 1u32..=100,
        base_us in 1u64..=1_000_000,
        factor in 1u64..=100,
        multiplier in 1.0f64..=100.0,
        jitter in 0u8..4,
        flags in any::<[bool; 5]>(),
    ) {
        let mut c = RetryPolicyConfig {
            max_attempts: attempts,
            retry_timeouts: flags[0],
            retry_connection_errors: flags[1],
            retry_other_transient: flags[2],
            retry_throttled: flags[3],
            honor_retry_after: flags[4],
            ..RetryPolicyConfig::default()
        };
        c.backoff.base = Nanos::from_micros(base_us);
        c.backoff.cap = Nanos::from_micros(base_us * factor);
        c.backoff.multiplier = multiplier;
        c.backoff.jitter = guards_core::Jitter::try_from(jitter).unwrap_or(guards_core::Jitter::Full);
        prop_assume!(c.validate().is_ok());
        prop_assert_eq!(from_value::<RetryPolicyConfig>(&to_value(&c)), Ok(c));
    }
}
