//! Conformance runner for `deadline` (placeholder until the guard lands).
