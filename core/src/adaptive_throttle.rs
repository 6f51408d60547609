//! Placeholder: `adaptive_throttle` is being built.
