//! Placeholder: `limit` is being built.
