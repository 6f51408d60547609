//! Conformance runner for `limit` (placeholder until the guard lands).
