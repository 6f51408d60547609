//! Placeholder: `bulkhead` is being built.
