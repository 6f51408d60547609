//! Placeholder: `circuit_breaker` is being built.
