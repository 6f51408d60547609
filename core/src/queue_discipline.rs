//! Placeholder: `queue_discipline` is being built.
