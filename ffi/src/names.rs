//! Every name this crate takes from `guards-core`, in one place: the rest of the crate
//! imports core's types from here, spelled as core spells them, so a rename in core is an
//! edit here and in the few lines that use it.

pub use guards_core::adaptive_throttle::{
    AdaptiveThrottle, AdaptiveThrottleConfig, AdaptiveThrottleStats,
};
pub use guards_core::admission::{
    Admission, AdmissionConfig, AdmissionPermit, AdmissionRejected, AdmissionStats,
};
pub use guards_core::backoff::{Backoff, BackoffConfig, Jitter};
pub use guards_core::brownout::{
    Brownout, BrownoutConfig, BrownoutDecision, BrownoutStats, BrownoutTable, RefusalKind,
    RefusalKinds,
};
pub use guards_core::bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadPermit, BulkheadRejected, BulkheadStats,
};
pub use guards_core::circuit_breaker::{
    BreakerState, BreakerStatus, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerPermit,
    CircuitBreakerRejectReason, CircuitBreakerRejected, CircuitBreakerStats, KeyedBreakers,
    KeyedBreakersPermit, KeyedBreakersRejectReason, KeyedBreakersRejected, KeyedStats,
    OutcomeEffect, PermitKind, WindowCounts, WindowKind,
};
pub use guards_core::deadline::{
    AttemptBudget, Deadline, DeadlineConfig, GrpcTimeoutError, MillisError,
};
pub use guards_core::hedging::{HedgeDecision, HedgeRefusal, Hedging, HedgingConfig, HedgingStats};
pub use guards_core::latency_tracker::{
    LatencySummary, LatencyTracker, LatencyTrackerConfig, LatencyTrackerStats,
};
pub use guards_core::limit::{
    AimdConfig, GradientConfig, LimitAlgorithm, LimitConfig, VegasConfig,
};
pub use guards_core::limiter::{
    Limiter, LimiterConfig, LimiterPermit, LimiterRejectReason, LimiterRejected, LimiterStats,
    PartitionConfig,
};
pub use guards_core::queue_discipline::{
    DropReason, Dropped, QueueDiscipline, QueueDisciplineConfig, QueueDisciplineRejected,
    QueueDisciplineStats, ServeOrder, Waiter,
};
pub use guards_core::retry_budget::{
    AwsRetryQuotaConfig, GrpcThrottleConfig, RetryBudget, RetryBudgetConfig, RetryBudgetMode,
    RetryBudgetStats, RetryReceipt, TokenBudgetConfig, WindowedBudget, WindowedBudgetConfig,
};
pub use guards_core::retry_driver::{RetryDriver, RetryDriverError, RetryPhase, RetryStep};
pub use guards_core::retry_policy::{
    GiveUpReason, Idempotency, RetryCause, RetryContext, RetryDecision, RetryPolicy,
    RetryPolicyConfig, RetryPolicyStats, UnkeyedSideEffects,
};
pub use guards_core::{Clock, ConfigError, ConfigErrorKind, Nanos, Outcome, Priority, Rng};
