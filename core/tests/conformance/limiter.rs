//! Conformance runner for `limiter` (placeholder until the guard lands).
