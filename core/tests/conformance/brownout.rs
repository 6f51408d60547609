//! Conformance runner for `brownout` (placeholder until the guard lands).
