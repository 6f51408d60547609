//! Retry budget per caller instance.
//! PENDING(core retry_budget).

use guards_core::retry_policy::RetryGate;
use guards_core::Nanos;

use crate::error::SimError;
use crate::topology::BudgetSpec;

/// One token bucket.
#[derive(Debug)]
pub(crate) struct Budget {
    never: Never,
}

#[derive(Debug)]
struct Never;

impl RetryGate for Never {
    fn allow_retry(&self, _now: Nanos, _cause: guards_core::retry_policy::RetryCause) -> bool {
        false
    }
}

impl Budget {
    pub(crate) fn new(_spec: &BudgetSpec, place: &str) -> Result<Self, SimError> {
        Err(SimError::topology(format!(
            "{place}: retry_budget has not landed yet"
        )))
    }
    pub(crate) fn deposit(&self, _now: Nanos) {}
    pub(crate) fn gate(&self) -> &dyn RetryGate {
        &self.never
    }
}
