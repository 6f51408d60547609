//! Placeholder: `latency_tracker` is being built.
