//! Conformance runner for `circuit_breaker` (placeholder until the guard lands).
