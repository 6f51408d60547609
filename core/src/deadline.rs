//! Placeholder: `deadline` is being built.
