//! guards-py: the native module `guards._guards`.
//!
//! Every guard of guards-core as a frozen Python class, the exceptions, the clock
//! (`monotonic_ns`, `FakeClock`) and the conversions between Python values and core's
//! types. The pure-Python package `guards` re-exports all of it with `__all__`.
//!
//! Rules kept throughout: every public entry point validates its input (a wrong type is a
//! `TypeError`, a bad value a `ValueError`/`ConfigError` naming the field), no Rust panic
//! reaches Python (no `unwrap`/`expect`/indexing on user input), and guards are shared
//! between threads through `&self` methods on core's lock-free state.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::unreachable,
    clippy::todo
)]

use pyo3::prelude::*;

mod adaptive_throttle;
mod admission;
mod backoff;
mod brownout;
mod bulkhead;
mod circuit_breaker;
mod clock;
mod config;
mod deadline;
mod errors;
mod events;
mod fleet;
mod guarded;
mod guarded_block;
mod guarded_coro;
mod hedging;
mod latency_tracker;
mod limit;
mod limiter;
mod outcome;
mod permit;
mod priority;
mod queue_discipline;
mod retry_budget;
mod retry_driver;
mod retry_policy;
mod rng;
mod shared;
mod sim;
mod time;
mod util;
mod vectors;

/// Python allocates the objects that hold a pyclass's fields with 16-byte alignment, so
/// a field that needs more (core's cache-line-aligned counters) would be misaligned. Every
/// pyclass is checked here at compile time; core guards live in ffi's handles (built in
/// place with their own alignment), never inline.
macro_rules! check_pyclass_alignment {
    ($($t:ty),* $(,)?) => {
        $(const _: () = assert!(
            std::mem::align_of::<$t>() <= 16,
            "pyclass needs more than 16-byte alignment: box the core value"
        );)*
    };
}

check_pyclass_alignment!(
    clock::FakeClock,
    clock::FakeSleep,
    time::PyNanos,
    priority::PyPriority,
    rng::PyRng,
    deadline::PyDeadline,
    deadline::PyDeadlineConfig,
    deadline::PyAttemptBudget,
    backoff::PyBackoff,
    retry_policy::PyRetryPolicy,
    retry_policy::PyRetryDecision,
    retry_driver::PyRetryRun,
    retry_budget::PyRetryBudget,
    retry_budget::RetryReceiptObj,
    bulkhead::PyBulkhead,
    bulkhead::PyPermit,
    latency_tracker::PyLatencyTracker,
    hedging::PyHedging,
    hedging::PyHedgeDecision,
    adaptive_throttle::PyAdaptiveThrottle,
    brownout::PyBrownout,
    brownout::PyBrownoutTable,
    limit::PyLimit,
    limit::PyFixedLimit,
    limit::PyAimdLimit,
    limit::PyVegasLimit,
    limit::PyGradientLimit,
    limiter::PyLimiter,
    limiter::PyLimiterPermit,
    admission::PyAdmission,
    admission::PyAdmissionTicket,
    circuit_breaker::PyCircuitBreaker,
    circuit_breaker::PyKeyedBreakers,
    circuit_breaker::PyBreakerPermit,
    guarded::PyGuardedFunction,
    guarded_coro::PyGuardedCoroutine,
    guarded_block::PyGuardedBase,
    guarded_block::PyBlockCall,
    queue_discipline::PyQueueDiscipline,
    queue_discipline::Waiter,
    queue_discipline::Dequeued,
    queue_discipline::Dropped,
    shared::PyRegion,
    shared::PySharedBreaker,
    shared::PySharedBulkhead,
    shared::PySharedLimiter,
    shared::PySharedAdmission,
    shared::PySharedKeyedBreakers,
    shared::PySharedPermit,
    fleet::PyFleet,
    sim::PySimRun,
    sim::PySimResult,
);

#[pymodule(name = "_guards")]
fn guards_py(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;

    m.add_function(wrap_pyfunction!(clock::monotonic_ns, m)?)?;
    m.add_function(wrap_pyfunction!(clock::now_ns, m)?)?;
    m.add_function(wrap_pyfunction!(clock::current_clock, m)?)?;
    m.add_class::<clock::FakeClock>()?;
    m.add_class::<clock::FakeSleep>()?;
    m.add_class::<time::PyNanos>()?;
    m.add_class::<priority::PyPriority>()?;

    m.add_class::<rng::PyRng>()?;

    deadline::register(m)?;
    backoff::register(m)?;
    retry_policy::register(m)?;
    retry_driver::register(m)?;
    outcome::register(m)?;
    retry_budget::register(m)?;
    bulkhead::register(m)?;
    latency_tracker::register(m)?;
    hedging::register(m)?;
    adaptive_throttle::register(m)?;
    brownout::register(m)?;
    limit::register(m)?;
    limiter::register(m)?;
    admission::register(m)?;
    circuit_breaker::register(m)?;
    guarded::register(m)?;
    guarded_block::register(m)?;
    queue_discipline::register(m)?;
    sim::register(m)?;
    shared::register(m)?;
    fleet::register(m)?;
    vectors::register(m)?;
    Ok(())
}
