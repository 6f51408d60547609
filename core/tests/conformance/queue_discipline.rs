//! Conformance runner for `queue_discipline` (placeholder until the guard lands).
