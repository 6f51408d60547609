//! Placeholder: `backoff` is being built.
