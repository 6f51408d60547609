//! Admission control at a service instance's door: guards-core's
//! [`Admission`](guards_core::admission::Admission) with fixed per-priority limits on one
//! shared count of calls inside (seed C5: views refused at 64, reserves at 80). A ticket is
//! taken at the door and given back when the call is answered or cancelled.

use guards_core::admission::{Admission, AdmissionConfig, AdmissionPermit};
use guards_core::priority::MAX_PRIORITIES;
use guards_core::{Nanos, Priority};

use crate::engine::call::Outcome;
use crate::error::SimError;
use crate::topology::AdmissionSpec;

/// The door.
#[derive(Debug)]
pub(crate) struct Door {
    admission: Admission,
}

/// A call admitted through the door.
pub(crate) type DoorTicket = AdmissionPermit;

impl Door {
    pub(crate) fn new(spec: &AdmissionSpec, place: &str) -> Result<Self, SimError> {
        let last = spec.limits.last().copied().unwrap_or(u32::MAX);
        let mut limits = [u64::from(last); MAX_PRIORITIES];
        for (l, v) in limits.iter_mut().zip(&spec.limits) {
            *l = u64::from(*v);
        }
        let admission = Admission::new(AdmissionConfig {
            limits,
            ..AdmissionConfig::default()
        })
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
