//! Conformance runner for `adaptive_throttle` (placeholder until the guard lands).
