//! The bulkhead per caller instance: guards-core's
//! [`Bulkhead`](guards_core::bulkhead::Bulkhead). A permit is taken when an attempt is
//! sent and given back when the caller stops waiting for it (answer or timeout), not when
//! the abandoned work inside the callee ends.

use guards_core::bulkhead::{Bulkhead, BulkheadConfig, BulkheadPermit};

use crate::error::SimError;

/// A gate.
#[derive(Debug)]
pub(crate) struct Gate {
    bulkhead: Bulkhead,
}

/// A slot held in a gate.
pub(crate) type GateTicket = BulkheadPermit;

impl Gate {
    pub(crate) fn new(config: &BulkheadConfig, place: &str) -> Result<Self, SimError> {
        let bulkhead =
            Bulkhead::new(*config).map_err(|e| SimError::guard(format!("{place}: bulkhead"), e))?;
        Ok(Gate { bulkhead })
    }

    pub(crate) fn try_acquire(&self) -> Option<GateTicket> {
        self.bulkhead.try_acquire().ok()
    }

    pub(crate) fn release(&self, t: GateTicket) {
        self.bulkhead.release(t);
    }

    /// Permits out now.
    pub(crate) fn in_flight(&self) -> u64 {
        self.bulkhead.in_flight()
    }

    /// The cap in force.
    pub(crate) fn cap(&self) -> u64 {
        self.bulkhead.max_concurrent()
    }

    /// A fleet share: core's run-time resize (a cap below the permits out admits nothing
    /// until enough come back).
    pub(crate) fn set_cap(&self, cap: u64) {
        // Shares never exceed the allowance, checked against core's limit when the
        // topology is validated.
        let _ = self.bulkhead.set_max_concurrent(cap);
    }
}
