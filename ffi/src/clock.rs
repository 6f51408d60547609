//! The default clock of every binding: monotonic nanoseconds on CLOCK_MONOTONIC's timeline.
//!
//! Core never reads a clock; every binding defaults `now` to [`now_ns`] and accepts an
//! explicit value. Users mix the two (a deadline computed from `time.monotonic_ns()` in
//! Python or `clock_gettime(CLOCK_MONOTONIC)` in C, a `now` left to the default), so the
//! default must be *the same timeline*, not merely a monotonic one: [`now_ns`] is
//! `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds, which is what Python's
//! `time.monotonic_ns()` reads on Linux and macOS.
//!
//! # Why not a TSC clock
//!
//! A TSC clock (the `quanta` crate) is faster to read, and `benches/clock.rs` measures how
//! much. It is not used because it is not on CLOCK_MONOTONIC's timeline: it is calibrated
//! against it once and then runs at its own estimated rate, so the two drift apart (by
//! microseconds within seconds on the machine measured, see `docs/benchmarks.md`, "Clock"),
//! and a deadline taken from one clock and checked with the other would be off by that
//! much, growing with uptime. `examples/clock_probe.rs` measures the drift and counts
//! backward steps across cores; `tests/clock.rs` checks that [`now_ns`] never steps back
//! across threads and lies between two CLOCK_MONOTONIC readings taken around it.
//!
//! # Examples
//! ```
//! let a = guards::clock::now_ns();
//! let b = guards::clock::now_ns();
//! assert!(b >= a);
//! ```

use crate::names::Nanos;

/// Monotonic nanoseconds on CLOCK_MONOTONIC's timeline (the same values as C's
/// `clock_gettime(CLOCK_MONOTONIC)` and Python's `time.monotonic_ns()`).
#[cfg(unix)]
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call, and
    // CLOCK_MONOTONIC is supported on every unix this crate builds for.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        // Cannot happen with a valid pointer and clock id; never report time going back.
        return fallback_ns();
    }
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// Monotonic nanoseconds since the first reading in this process (no CLOCK_MONOTONIC here).
#[cfg(not(unix))]
#[inline]
pub fn now_ns() -> u64 {
    fallback_ns()
}

/// `std::time::Instant` since the first call, for platforms (or failures) without
/// CLOCK_MONOTONIC.
#[cold]
fn fallback_ns() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// [`now_ns`] as core's [`Nanos`].
#[inline]
pub fn now() -> Nanos {
    Nanos(now_ns())
}
