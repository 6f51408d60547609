//! # guards-core
//!
//! Overload guards written once, for every stack: deadlines, retry policies, backoff with
//! jitter, retry budgets, circuit breakers, bulkheads, adaptive concurrency limits,
//! admission control, CoDel/LIFO queue discipline, hedging and brownouts.
//!
//! Every guard here is:
//!
//! - **sans-IO**: it never reads a clock, sleeps, spawns or allocates. Every call that
//!   depends on time takes `now: Nanos`; randomness comes from a seedable [`Rng`]. A guard
//!   answers with a *decision* (admit / reject with a reason and a retry-after, retry after
//!   N ns / give up and why, an attempt budget) and the caller's runtime does the waiting;
//! - **lock-free** where it says so: state is `#[repr(C)]` atomics with no pointers and no
//!   heap, so it may even live in memory shared between processes. The few structures that
//!   cannot be lock-free (a wait queue owned by one consumer) take `&mut self` and say so;
//! - **validated**: every `<Guard>Config` is checked when the guard is built and a bad value
//!   returns a [`ConfigError`] naming the field; nothing reachable from user input panics;
//! - **observable**: each guard keeps relaxed atomic [`Counter`]s that a stats snapshot reads
//!   without stopping traffic.
//!
//! The C, Python and Node bindings and the discrete-event simulator all call this crate;
//! none re-implements an algorithm. Conformance vectors in the repository's
//! `tests/vectors/` are replayed by every language and must give identical decisions.
//!
//! ## Where it stays lock-free
//! Core uses atomics of 64 bits and narrower only. On every target with a native 64-bit
//! compare-and-swap (x86_64, aarch64, riscv64, 64-bit PowerPC, s390x, ...) every guard
//! documented as lock-free is lock-free. On 32-bit targets without 64-bit atomics (e.g.
//! Cortex-M), enable the `fallback` feature: `portable-atomic` then emulates 64-bit
//! atomics with a lock (or, on single-core chips, by masking interrupts), and the guards
//! are correct but no longer lock-free there.

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented
    )
)]

#[macro_use]
mod named;

pub mod cache;
pub mod counter;
pub mod error;
pub mod hash;
pub mod math;
pub mod priority;
pub mod rng;
pub(crate) mod sync;
pub mod time;

pub mod adaptive_throttle;
pub mod admission;
pub mod backoff;
pub mod brownout;
pub mod bulkhead;
pub mod circuit_breaker;
pub mod deadline;
pub mod hedging;
pub mod latency_tracker;
pub mod limit;
pub mod limiter;
pub mod queue_discipline;
pub mod retry_budget;
pub mod retry_policy;

pub use adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
pub use admission::{Admission, AdmissionConfig};
pub use backoff::{Backoff, BackoffConfig, Jitter};
pub use brownout::{Brownout, BrownoutConfig, BrownoutDecision, BrownoutTable, RefusalKind};
pub use bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadPermit, BulkheadRejected, BulkheadScope, BulkheadStats,
};
pub use circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
pub use counter::Counter;
pub use deadline::{AttemptBudget, Deadline, DeadlineConfig};
pub use error::{ConfigError, ConfigErrorKind, UnknownDiscriminant};
pub use hedging::{HedgeDecision, Hedging, HedgingConfig};
pub use latency_tracker::{LatencyTracker, LatencyTrackerConfig};
pub use limit::{Limit, LimitConfig};
pub use limiter::{Limiter, LimiterConfig};
pub use priority::Priority;
pub use queue_discipline::{QueueDiscipline, QueueDisciplineConfig, QueueDisciplineStats};
pub use retry_budget::{
    RetryBudget, RetryBudgetConfig, RetryBudgetMode, RetryBudgetStats, RetryReceipt,
};
pub use retry_policy::{
    GiveUpReason, Idempotency, RetryCause, RetryContext, RetryDecision, RetryGate, RetryPolicy,
    RetryPolicyConfig,
};
pub use rng::Rng;
pub use time::Nanos;
