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
//! ## The call contract
//! How a finished call is reported is written here once, not in each binding: a binding
//! classifies the call into one [`Outcome`] (from an HTTP answer with [`http::classify`])
//! and hands it to every guard's `report`; the table in [`outcome`] (and
//! `docs/outcomes.md`) decides what it means to each guard. A call's slowness is measured
//! by the guards from the permit's start, never reported. [`retry_driver::RetryDriver`]
//! runs the retry loop of one request on the same table, so a binding only sleeps and calls.
//!
//! ## One vocabulary
//! Admission-type guards hand out a `<Guard>Permit` from `try_acquire` (or a
//! `<Guard>Scope` from `try_acquire_scoped`) or refuse with a `<Guard>Rejected` carrying its
//! reason and, when it knows one, `retry_at` (an instant) with `retry_after(now)` (a
//! duration). Every fieldless public enum is `#[repr(u8)]` with fixed discriminants and has
//! `name()`, `from_name()` and `TryFrom<u8>` (refusing an unknown number with
//! [`UnknownDiscriminant`]); the names are what vectors, stats and bindings spell.
//!
//! Permits are move-only so that a call is reported once. Those a binding must keep where a
//! value cannot go (a record in memory shared by processes) come apart into plain `Copy`
//! parts and back: `into_parts` / `from_parts` on [`circuit_breaker::CircuitBreakerPermit`],
//! [`circuit_breaker::KeyedBreakersPermit`], [`limiter::LimiterPermit`],
//! [`admission::AdmissionPermit`] and [`bulkhead::BulkheadPermit`]. Whoever rebuilds a
//! permit takes over the report-once duty; each parts type says what the guard does if
//! that duty is broken (never memory unsafety, never a count below zero).
//!
//! ## Where it stays lock-free
//! Core uses atomics of 64 bits and narrower only. On every target with a native 64-bit
//! compare-and-swap (x86_64, aarch64, riscv64, 64-bit PowerPC, s390x, ...) every guard
//! documented as lock-free is lock-free. On 32-bit targets without 64-bit atomics (e.g.
//! Cortex-M), enable the `fallback` feature: `portable-atomic` then emulates 64-bit
//! atomics with a lock (or, on single-core chips, by masking interrupts), and the guards
//! are correct but no longer lock-free there.

//!
//! ## Building in place
//! Every guard has `new(config)`, which returns the guard by value, and
//! `reset(&mut self, config) -> Result<(), ConfigError>`, which validates `config` and then
//! writes exactly the state `new(config)` gives into an existing value, field by field and
//! cell by cell, without a temporary of the guard's size (a
//! [`CircuitBreaker<65536>`](CircuitBreaker) or a [`LatencyTracker`] of a few hundred KiB
//! cannot go through a thread's stack). On error `reset` changes nothing.
//!
//! All bytes zero is a valid value of every guard type and of every config type, by
//! structure: guards and configs are `#[repr(C)]` structs of integers, floats, `bool`s,
//! atomics and fieldless `#[repr(u8)]` enums whose variant 0 exists, and the
//! data-carrying enums among them ([`LimitConfig`], [`RetryBudgetConfig`],
//! [`RetryBudget`]) are `#[repr(C, u8)]` with a variant at discriminant 0; there are no
//! references, no `Option` of a non-nullable type, no `NonZero*` and no `char`. A zeroed
//! guard is *unconfigured*: every method is safe to call on it (it never panics, and it
//! refuses, never retries, or counts nothing, as each guard's docs say) but it is meant to
//! be `reset` before use. So a binding (or code placing a guard in memory shared between
//! processes) may allocate zeroed memory of `size_of::<G>()` bytes aligned to
//! `align_of::<G>()` — which can exceed what `malloc` promises, see
//! [`cache::CachePadded`] — and call `reset` on it. That allocation is the binding's
//! `unsafe` code; this crate stays `#![forbid(unsafe_code)]`.
//!
//! ```
//! use guards_core::{Bulkhead, BulkheadConfig};
//! // In Rust, `new` is the way; a binding does the same as `reset` on zeroed memory.
//! let mut b = Bulkhead::new(BulkheadConfig { max_concurrent: 1 })?;
//! let p = b.try_acquire().expect("room for one");
//! b.release(p);
//! b.reset(BulkheadConfig { max_concurrent: 2 })?;
//! assert_eq!((b.available(), b.stats().acquired), (2, 0));
//! assert!(b.reset(BulkheadConfig { max_concurrent: 0 }).is_err());
//! assert_eq!(b.available(), 2); // unchanged
//! # Ok::<(), guards_core::ConfigError>(())
//! ```

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
pub mod fleet;
pub mod hedging;
pub mod http;
pub mod latency_tracker;
pub mod limit;
pub mod limiter;
pub mod outcome;
pub mod queue_discipline;
pub mod retry_budget;
pub mod retry_driver;
pub mod retry_policy;

pub use adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
pub use admission::{Admission, AdmissionConfig};
pub use backoff::{Backoff, BackoffConfig, Jitter};
pub use brownout::{Brownout, BrownoutConfig, BrownoutDecision, BrownoutTable, RefusalKind};
pub use bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadPermit, BulkheadPermitParts, BulkheadRejected, BulkheadScope,
    BulkheadStats,
};
pub use cache::CachePadded;
pub use circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
pub use counter::Counter;
pub use deadline::{AttemptBudget, Deadline, DeadlineConfig};
pub use error::{ConfigError, ConfigErrorKind, UnknownDiscriminant};
pub use hedging::{HedgeDecision, Hedging, HedgingConfig};
pub use latency_tracker::{LatencyTracker, LatencyTrackerConfig};
pub use limit::{Limit, LimitConfig};
pub use limiter::{Limiter, LimiterConfig};
pub use outcome::Outcome;
pub use priority::Priority;
pub use queue_discipline::{QueueDiscipline, QueueDisciplineConfig, QueueDisciplineStats};
pub use retry_budget::{
    RetryBudget, RetryBudgetConfig, RetryBudgetMode, RetryBudgetStats, RetryReceipt,
};
pub use retry_driver::{RetryDriver, RetryStep};
pub use retry_policy::{
    GiveUpReason, Idempotency, RetryCause, RetryContext, RetryDecision, RetryGate, RetryPolicy,
    RetryPolicyConfig,
};
pub use rng::Rng;
pub use time::{Clock, Nanos};

// The README's examples (the crate's page on crates.io) compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
