//! # guards-sim
//!
//! A discrete-event simulator that runs guards-core's real guards: the same retry
//! policies, budgets, breakers, bulkheads, admission limits, queue disciplines, brownouts
//! and hedging that services link, driven by a virtual clock instead of a real one.
//!
//! - [`topology`]: a system as data (services with pools and queues, operations, call
//!   edges with per-edge policies, open-loop callers, timed operator actions), also as
//!   JSON ([`Topology::from_json`]) so any system can be described from Python. Its
//!   guards are guards-core's own configs ([`topology::configs`]), with the field names,
//!   units, defaults and validation of the Python API, so a service's breaker, retry,
//!   budget or limiter config can be pasted into a topology.
//! - [`Sim`]: the engine. A virtual nanosecond clock, an event heap ordered by time and
//!   insertion sequence, seeded random streams; no wall clock anywhere, so the same seed
//!   gives the same output bit for bit.
//! - [`SimResult`]: per-interval columns and a summary ([`summary`]: the same for any
//!   topology), as JSON or CSV.
//! - [`compare`]: the windows and metrics a comparison of runs reads (the Basketly rows).
//! - [`basketly`]: the Basketly incident of docs/basketly.md (settings C0 to C8, side rows and
//!   replays) as named presets with `key=value` overrides ([`basketly::basketly`], or
//!   [`basketly::Run`] to advance in steps).
//!
//! Every guard decision (retry or not and after how long, attempt budgets, retry budgets,
//! breakers, bulkheads, admission, the connection queue's discipline, brownout fallbacks,
//! hedges) is made by guards-core, through one small adapter per guard; the simulator only
//! moves calls around and measures. docs/basketly.md describes the model of Basketly and
//! lists where it misses the figures it is compared with.
//!
//! # Examples
//! ```
//! use guards_sim::basketly::basketly;
//! let r = basketly("C0", 1, Some("19:59:47"), &[] as &[&str]).unwrap();
//! let json = r.to_json();
//! assert!(json.starts_with("{\"setting\":\"C0\",\"seed\":1,\"interval_s\":1.0,\"series\":{\"t\":[\"19:59:45\""));
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod basketly;
pub mod compare;
mod engine;
pub mod error;
mod guards;
pub mod limits;
pub mod result;
pub mod rng;
pub mod summary;
pub mod topology;
pub mod trace;

pub use engine::Sim;
pub use error::SimError;
pub use limits::{Limits, Stop, StopReason};
pub use result::{Column, LatencySamples, RunStats, SimResult, SummaryValue};
pub use topology::Topology;
