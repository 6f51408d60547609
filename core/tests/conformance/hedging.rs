//! Conformance runner for `hedging` (placeholder until the guard lands).
