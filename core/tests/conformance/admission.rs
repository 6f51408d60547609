//! Conformance runner for `admission` (placeholder until the guard lands).
