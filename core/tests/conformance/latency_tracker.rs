//! Conformance runner for `latency_tracker` (placeholder until the guard lands).
