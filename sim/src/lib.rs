//! guards-sim: placeholder (being built).
