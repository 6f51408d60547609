//! The one conformance-vector interpreter, for every binding.
//!
//! `tests/vectors/*.json` hold, guard by guard, configs and sequences of calls with the
//! decisions each must return. Every binding must reach the same decisions: the same
//! integers, the same floats bit for bit. This module reads the files and runs them; a
//! binding only says how to execute one operation through its own API.
//!
//! - [`Session`] walks the files and hands out one [`Step`] at a time (`next_step`), takes
//!   the binding's [`Reply`] (`submit`) and keeps the [`Report`]. It owns everything but
//!   the call itself: reading and checking the files, `repeat`, `expect` and the
//!   comparison (exact, or the named counters of a `stats`), config-rejection cases, the
//!   case's seed, permits held by name or by number, and a precise mismatch report (file
//!   and line, case, step, arguments, expected, got).
//! - A [`Backend`] runs one step: `new` (build the case's guard from `config.*`), an op,
//!   or `free`. Its arguments are scalars by name ([`Args`]); its result is scalars by
//!   path ([`Record`]), which a C program can build one value at a time. A value its API
//!   cannot observe is marked [`Entry::Unobservable`] and counted, never passed as equal;
//!   a guard or op its API lacks is [`Reply::Unsupported`] and the case is reported as
//!   not covered.
//! - [`config`] builds core's configs from a `new` step's arguments through the schemas
//!   (so a rejection case checks the schema and core's validation alike).
//! - The same protocol is exported to C (`guards_vectors_open`, `guards_vectors_next`,
//!   `guards_vectors_arg_*`, `guards_vectors_result_*`, `guards_vectors_submit*`,
//!   `guards_vectors_report`): a C driver executes each step through `guards.h`.
//!
//! Why here: a rule that every binding needs is written once. The Python runner was a
//! ~1,000-line copy of the Rust one; with this interpreter a binding's share is the
//! op-to-call mapping and nothing else.
//!
//! The step protocol (op names, arguments, results, permits) is documented in
//! `tests/vectors/README.md`.
//!
//! # Examples
//! ```
//! use guards::vectors::{Backend, Record, Reply, Session, Step};
//!
//! /// A backend for the `outcome` file, through core's `Outcome`.
//! struct Outcomes;
//!
//! impl Backend for Outcomes {
//!     fn run(&mut self, step: &Step) -> Reply {
//!         match step.op {
//!             "new" | "free" => Reply::Result(Record::null()),
//!             "from_name" => match step.args.str("name") {
//!                 Ok(n) => Reply::Result(Record::scalar(
//!                     guards_core::Outcome::from_name(n).map(|o| o as u8),
//!                 )),
//!                 Err(e) => Reply::Failed(e.to_string()),
//!             },
//!             other => Reply::Unsupported(format!("`{other}` is not in this example")),
//!         }
//!     }
//! }
//!
//! let text = r#"{"guard": "outcome", "cases": [{"name": "names",
//!     "steps": [{"op": "from_name", "name": "timeout", "expect": 1},
//!               {"op": "from_name", "name": "nope", "expect": null}]}]}"#;
//! let mut session = Session::from_text("outcome.json", text);
//! let report = session.run(&mut Outcomes);
//! assert!(report.ok(), "{report}");
//! assert_eq!(report.summary().compared, 2);
//! ```
//!
//! # References
//! - `tests/vectors/README.md`: the file format and the step protocol.
//! - `ffi/tests/vectors/`: the Rust backends (core directly, and the same through the C
//!   ABI); `ffi/tests/c/vectors.c`: the C driver.

pub mod c_abi;
pub mod config;
mod file;
mod report;
mod session;
mod spec;
mod value;

pub use report::{CaseOutcome, CaseReport, FileReport, Mismatch, Report, Summary};
pub use session::{Backend, NoStepPending, Origin, Reply, Role, Session, Step};
pub use value::{ArgError, Args, Entry, Record, Scalar};

/// The vector files' guards, in file-name order: what a backend may be asked to build.
pub fn guard_names() -> impl Iterator<Item = &'static str> {
    spec::GUARDS.iter().map(|g| g.name)
}
