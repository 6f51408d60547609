//! Placeholder: `brownout` is being built.
