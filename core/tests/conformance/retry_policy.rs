//! Conformance runner for `retry_policy` (placeholder until the guard lands).
