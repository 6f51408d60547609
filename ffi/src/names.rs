//! Every name this crate takes from `guards-core`, in one place.
//!
//! Core is being renamed (`BulkheadFull` -> `BulkheadRejected`, `as_str` -> `name`, scoped
//! types `<Guard>Scope`, a fieldless call `Outcome` with `report(permit, outcome, now)` and
//! `reset(&mut self, config)` on every guard). The rest of this crate refers to core only
//! through the aliases below, so following a rename is an edit here.

pub use guards_core::bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadPermit, BulkheadRejected, BulkheadStats,
};
pub use guards_core::circuit_breaker::{
    BreakerState, BreakerStatus, CircuitBreaker, CircuitBreakerConfig,
    CircuitBreakerPermit as BreakerPermit, CircuitBreakerRejectReason as BreakerRejectReason,
    CircuitBreakerRejected as BreakerRejected, CircuitBreakerStats, KeyedBreakers, OutcomeEffect,
    PermitKind, WindowCounts, WindowKind,
};
pub use guards_core::{ConfigError, ConfigErrorKind, Nanos, Outcome};

pub use guards_core::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
pub use guards_core::admission::{Admission, AdmissionConfig};
pub use guards_core::backoff::{BackoffConfig, Jitter};
pub use guards_core::brownout::{Brownout, BrownoutConfig, BrownoutTable, RefusalKinds};
pub use guards_core::deadline::DeadlineConfig;
pub use guards_core::hedging::{Hedging, HedgingConfig};
pub use guards_core::latency_tracker::{LatencyTracker, LatencyTrackerConfig};
pub use guards_core::limit::{AimdConfig, GradientConfig, VegasConfig};
pub use guards_core::limiter::{Limiter, LimiterConfig};
pub use guards_core::queue_discipline::{QueueDiscipline, QueueDisciplineConfig};
pub use guards_core::retry_budget::{
    AwsRetryQuotaConfig, GrpcThrottleConfig, RetryBudget, RetryBudgetConfig, TokenBudgetConfig,
    WindowedBudget, WindowedBudgetConfig,
};
pub use guards_core::retry_policy::{RetryPolicy, RetryPolicyConfig, UnkeyedSideEffects};

/// A stable snake_case name of a core enum value. Core spells it `as_str` today and will
/// spell it `name`; only this trait's impls change.
pub trait Name {
    /// The stable name.
    fn name(self) -> &'static str;
}

macro_rules! name_via_as_str {
    ($($t:ty),* $(,)?) => {$(
        impl Name for $t {
            fn name(self) -> &'static str {
                <$t>::name(self)
            }
        }
    )*};
}

name_via_as_str!(
    BreakerState,
    BreakerRejectReason,
    OutcomeEffect,
    PermitKind,
    WindowKind,
    ConfigErrorKind,
);
