//! Placeholder: `admission` is being built.
