//! The retry budget per caller instance: guards-core's
//! [`RetryBudget`](guards_core::retry_budget::RetryBudget) in any of its modes (Basketly's C4: a
//! token bucket of 10 tokens, +0.1 per first attempt, 1 per retry). Hedges are paid from
//! the same budget.

use guards_core::retry_budget::{RetryBudget, RetryBudgetConfig, TokenBudget};
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

    fn bucket(&self) -> Option<&TokenBudget> {
        match &self.budget {
            RetryBudget::TokenBucket(b) => Some(b),
            _ => None,
        }
    }

    /// A token bucket's balance in micro-tokens (0 for another kind of budget).
    pub(crate) fn tokens_micros(&self) -> u64 {
        self.bucket().map_or(0, TokenBudget::tokens_micros)
    }

    /// A token bucket's capacity in micro-tokens (0 for another kind of budget).
    pub(crate) fn capacity_micros(&self) -> u64 {
        self.bucket().map_or(0, TokenBudget::capacity_micros)
    }

    /// A fleet share of a burst, in whole tokens: core's run-time resize (a smaller
    /// bucket drops the tokens above its new size; a larger one is not topped up).
    pub(crate) fn set_capacity(&self, tokens: u64) {
        if let Some(b) = self.bucket() {
            // Shares never exceed the allowance, checked against core's range when the
            // topology is validated.
            let _ = b.set_capacity(tokens as f64);
        }
    }
}
