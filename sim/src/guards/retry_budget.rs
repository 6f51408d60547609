//! The retry budget per caller instance: guards-core's
//! [`RetryBudget`](guards_core::retry_budget::RetryBudget) in any of its modes (Basketly's C4: a
//! token bucket of 10 tokens, +0.1 per first attempt, 1 per retry). Hedges are paid from
//! the same budget.

use guards_core::retry_budget::{RetryBudget, RetryBudgetConfig};
use guards_core::retry_policy::RetryGate;
use guards_core::Nanos;

use crate::error::SimError;

/// One token bucket.
#[derive(Debug)]
pub(crate) struct Budget {
    budget: RetryBudget,
}

impl Budget {
    pub(crate) fn new(config: &RetryBudgetConfig, place: &str) -> Result<Self, SimError> {
        let budget = RetryBudget::new(*config)
            .map_err(|e| SimError::guard(format!("{place}: retry_budget"), e))?;
        Ok(Budget { budget })
    }

    /// A first attempt goes out.
    pub(crate) fn deposit(&self, now: Nanos) {
        self.budget.deposit(now);
    }

    /// The budget as the gate a retry or a hedge asks.
    pub(crate) fn gate(&self) -> &dyn RetryGate {
        &self.budget
    }
}
