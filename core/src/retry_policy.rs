//! Placeholder: `retry_policy` is being built.
