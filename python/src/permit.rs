//! What the permit classes share (`BreakerPermit`, `BulkheadPermit`, `LimiterPermit`,
//! `AdmissionTicket`): ffi's take-once cell (`guards::permit::Granted`) holding core's
//! permit, given back once: with the first outcome reported, or unjudged when the Python
//! object is collected without one; and how a `with` block's end becomes an outcome.

pub(crate) use guards::permit::Granted;
use guards_core::Outcome;
use pyo3::prelude::*;

use crate::outcome;
use crate::util::given;

/// The guard a Python permit goes back to (a local type, so ffi's `Owner` can be
/// implemented for it).
#[derive(Debug)]
pub(crate) struct Issuer<T: pyo3::PyClass>(pub(crate) Py<T>);

/// How a `with permit:` block ended, as the call contract's outcome: `success`, or the
/// exception leaving it classified by `guards.classify_exception` (the one rule).
pub(crate) fn exit_outcome(exc: Option<&Bound<'_, PyAny>>) -> PyResult<Outcome> {
    match given(exc) {
        None => Ok(Outcome::Success),
        Some(e) => Ok(outcome::classify(e)?.0),
    }
}
