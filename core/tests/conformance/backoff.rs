//! Conformance runner for `backoff` (placeholder until the guard lands).
