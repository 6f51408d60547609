//! Brownout: serve an optional call's fallback or fail fast.
//! PENDING(core brownout).

use crate::engine::call::Outcome;
use crate::error::SimError;

/// The fallback decision for one edge.
#[derive(Debug)]
pub(crate) struct Fallback;

impl Fallback {
    pub(crate) fn new(_optional: bool, place: &str) -> Result<Self, SimError> {
        Err(SimError::topology(format!(
            "{place}: brownout has not landed yet"
        )))
    }
    pub(crate) fn serve_fallback(&self, _why: Outcome) -> bool {
        false
    }
    pub(crate) fn full(&self) {}
}
