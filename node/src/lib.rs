//! # guards-node
//!
//! The native addon of the npm package `guards`: every guard of `guards-core` as a class,
//! built on `guards-ffi`'s shared layer (in-place handles, take-once permits, config
//! schemas read with Node's conventions, the default clock). The JavaScript layer in
//! `node/lib/` subclasses these classes and adds promises, events and middleware; it
//! decides nothing itself.
//!
//! Conventions (see `node/README.md`): classes in PascalCase, methods and options in
//! camelCase; durations in milliseconds as numbers (a `bigint` option is exact
//! nanoseconds); instants as optional `bigint` nanoseconds on CLOCK_MONOTONIC's timeline,
//! read from the clock when left out. Bad options throw a `TypeError` (unknown option,
//! wrong type) or a `RangeError` (out of range) naming the option; a guard's refusal
//! throws an `Error` subclass with a stable `code` (`GUARDS_BREAKER_OPEN`, ...), made by
//! the JavaScript layer's error factory (see [`errors`]). Every export runs inside a panic
//! boundary (`catch_unwind`): a panic is a JavaScript error, never an abort.

#![deny(unsafe_op_in_unsafe_fn)]
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
// napi-derive's generated glue trips these.
#![allow(missing_debug_implementations, clippy::new_without_default)]

mod args;
mod convert;
mod errors;
mod fast;
mod gate;
pub mod outcome;
pub mod region;
pub mod shared;
pub mod token;
pub mod vectors;

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
pub mod keyed_breakers;
pub mod latency_tracker;
pub mod limit;
pub mod limiter;
pub mod queue_discipline;
pub mod retry_budget;
pub mod retry_driver;
pub mod retry_policy;
pub mod schema;

use napi::bindgen_prelude::*;
use napi_derive::napi;

/// Monotonic nanoseconds on CLOCK_MONOTONIC's timeline: the default `now` of every guard
/// (`process.hrtime.bigint()` reads the same clock on Linux).
#[napi(catch_unwind)]
pub fn now_ns() -> BigInt {
    BigInt::from(guards::clock::now_ns())
}

/// The version of the native addon (the workspace's version).
#[napi(catch_unwind)]
pub fn native_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Install the JavaScript error factory for this thread's environment (called once by
/// `lib/errors.js` when the package loads; each worker thread loads its own).
#[napi(
    catch_unwind,
    ts_args_type = "factory: (kind: string, message: string, detailsJson: string) => Error"
)]
pub fn install_error_factory(env: Env, factory: Unknown<'_>) -> Result<()> {
    if factory.get_type()? != napi::ValueType::Function {
        return Err(errors::type_error(
            &env,
            "factory",
            &format!("`factory` must be a function, not {}", args::what(&factory)),
        ));
    }
    // SAFETY: checked to be a function.
    let f = unsafe {
        factory.cast::<Function<'_, FnArgs<(String, String, String)>, Unknown<'static>>>()
    }?;
    errors::install(&env, f)
}
