//! Seeds for the generators bindings build (a backoff's or a retry policy's jitter): a
//! different one on every call, so that clients that failed together do not draw the same
//! waits, unless the caller seeds the generator itself (tests, simulations, replays).
//!
//! The randomness is the standard library's per-process hash keys (`RandomState`, seeded
//! from the OS once) mixed with a call counter; core itself never reads the OS.
//!
//! # Examples
//! ```
//! assert_ne!(guards::seed::random_seed(), guards::seed::random_seed());
//! ```

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// A seed different on every call (and in every process).
pub fn random_seed() -> u64 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    h.finish()
}
