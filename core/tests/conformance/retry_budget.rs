//! Conformance runner for `retry_budget` (placeholder until the guard lands).
