//! Placeholder: `hedging` is being built.
