//! Placeholder: `limiter` is being built.
