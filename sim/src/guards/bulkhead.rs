//! Bulkhead (concurrency gate) per caller instance.
//! PENDING(core bulkhead).

use crate::error::SimError;
use crate::topology::BulkheadSpec;

/// A gate.
#[derive(Debug)]
pub(crate) struct Gate;

/// A slot held in a gate.
#[derive(Debug)]
pub(crate) struct GateTicket;

impl Gate {
    pub(crate) fn new(_spec: &BulkheadSpec, place: &str) -> Result<Self, SimError> {
        Err(SimError::topology(format!(
            "{place}: bulkhead has not landed yet"
        )))
    }
    pub(crate) fn try_acquire(&self) -> Option<GateTicket> {
        None
    }
    pub(crate) fn release(&self, _t: GateTicket) {}
}
