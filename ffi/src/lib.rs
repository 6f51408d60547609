//! # guards-ffi
//!
//! The one foreign-function layer over `guards-core`: what every binding (C, Python, Node)
//! needs and must not write for itself, plus the C ABI built on it (`libguards`,
//! `include/guards.h`).
//!
//! Shared layer, by concern:
//!
//! - [`clock`]: the default clock, monotonic nanoseconds on CLOCK_MONOTONIC's timeline;
//! - [`error`]: result codes with fixed numbers, the mapping from core's errors, a message
//!   per code and the last failure's detail per thread;
//! - [`gate`]: the limiter and the admission door as one priority gate, so a binding
//!   holds their permits once;
//! - [`handle`]: guards built in place on the heap with their own alignment, and the one
//!   dispatch from a runtime capacity to core's const generics;
//! - [`outcome`]: the call contract's table as a row of verdict names per outcome;
//! - [`permit`]: take-once permits: a lock-free slot table for C's plain-data permits and
//!   an owning take-once cell for Python and Node;
//! - [`schema`]: one schema per config (name, unit, default, range, doc) and a builder from
//!   (name, value) pairs whose errors name the field;
//! - [`shared`]: host-wide guards: named guards in a file mapped by every process, with
//!   owner-recorded permits reclaimed from dead processes.
//! - [`seed`]: a fresh random seed for a binding's jitter generator.
//!
//! [`c`] is the C ABI over that layer; [`names`] is the one place core's type names come
//! from.
//!
//! A rule two bindings would both need lives here (if it needs `std`) or in core (if it is
//! a decision); a binding that finds itself writing one moves it down.

#![deny(missing_docs)]
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

pub mod clock;
pub mod error;
pub mod fleet;
pub mod gate;
#[macro_use]
pub mod handle;
pub mod names;
pub mod outcome;
pub mod permit;
pub mod schema;
pub mod seed;
pub mod shared;
pub(crate) mod sync;
pub mod vectors;

pub mod c;
