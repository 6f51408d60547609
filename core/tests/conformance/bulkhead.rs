//! Conformance runner for `bulkhead` (placeholder until the guard lands).
