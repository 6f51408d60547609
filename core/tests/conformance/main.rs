//! Replays the shared conformance vectors in `tests/vectors/*.json` through guards-core.
//!
//! Every binding (C, Python, Node) replays the same files and must reach the same
//! decisions. The file format is described in `tests/vectors/README.md`; each guard's
//! interpreter lives in the submodule of the same name.
#![cfg(not(loom))]

mod common;

mod adaptive_throttle;
mod admission;
mod backoff;
mod brownout;
mod bulkhead;
mod circuit_breaker;
mod deadline;
mod hedging;
mod http;
mod latency_tracker;
mod limit;
mod limiter;
mod outcome;
mod queue_discipline;
mod retry_budget;
mod retry_driver;
mod retry_policy;
