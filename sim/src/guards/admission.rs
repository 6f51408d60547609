//! Admission control at a service instance's door.
//! PENDING(core admission).

use guards_core::{Nanos, Priority};

use crate::error::SimError;
use crate::topology::AdmissionSpec;

/// The door.
#[derive(Debug)]
pub(crate) struct Door;

/// A call admitted through the door.
#[derive(Debug)]
pub(crate) struct DoorTicket;

impl Door {
    pub(crate) fn new(_spec: &AdmissionSpec, place: &str) -> Result<Self, SimError> {
        Err(SimError::topology(format!(
            "{place}: admission has not landed yet"
        )))
    }
    pub(crate) fn try_admit(&self, _now: Nanos, _p: Priority) -> Option<DoorTicket> {
        None
    }
    pub(crate) fn release(&self, _now: Nanos, _t: DoorTicket, _ok: bool) {}
    pub(crate) fn forget(&self, _t: DoorTicket) {}
}
