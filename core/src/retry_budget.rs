//! Placeholder: `retry_budget` is being built.
