//! Admission control at a service instance's door: guards-core's
//! [`Admission`](guards_core::admission::Admission) with per-priority limits on one shared
//! count of calls inside (Basketly's C5: views refused at 64, reserves at 80) and, if its config
//! has one, an adaptive limit (AIMD, Vegas, Gradient2) learnt from the calls it lets in. A
//! ticket is taken at the door and given back when the call is answered or cancelled.

use guards_core::admission::{Admission, AdmissionConfig, AdmissionPermit};
use guards_core::{Nanos, Priority};

use crate::engine::call::Outcome;
use crate::error::SimError;

/// The door.
#[derive(Debug)]
pub(crate) struct Door {
    admission: Admission,
}

/// A call admitted through the door.
pub(crate) type DoorTicket = AdmissionPermit;

impl Door {
    pub(crate) fn new(config: &AdmissionConfig, place: &str) -> Result<Self, SimError> {
        let admission = Admission::new(*config)
            .map_err(|e| SimError::guard(format!("{place}: admission"), e))?;
        Ok(Door { admission })
    }

    pub(crate) fn try_admit(&self, now: Nanos, p: Priority) -> Option<DoorTicket> {
        self.admission.try_acquire(now, p).ok()
    }

    /// The call ended with `outcome` (the call contract decides what the door samples).
    pub(crate) fn release(&self, now: Nanos, t: DoorTicket, outcome: Outcome) {
        let _ = self.admission.report(t, super::outcome(outcome), now);
    }

    /// The call was cancelled by its caller.
    pub(crate) fn forget(&self, now: Nanos, t: DoorTicket) {
        let _ = self
            .admission
            .report(t, guards_core::Outcome::Cancelled, now);
    }
}
