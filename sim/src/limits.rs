//! Bounds on a run: how much memory it may use and how many events it may process.
//!
//! A model that never drains (the as-shipped Basketly setting's queue grows by some 2,900
//! requests a second) grows without end, and a very short output interval makes the
//! per-interval series huge. A [`Sim`](crate::Sim) therefore checks its size as it runs:
//! when its estimate of the memory it holds passes [`Limits::max_memory`] (or it has
//! processed [`Limits::max_events`]) it stops at that instant, keeps every interval it
//! completed, and says so in [`SimResult::stopped`](crate::SimResult::stopped). Nothing
//! is lost or made up: the intervals kept are exactly those of the same run without a
//! limit.
//!
//! # Examples
//! ```
//! use guards_sim::basketly::basketly;
//! // C0 never drains: with 20 MB it stops long before 21:00.
//! let r = basketly("C0", 1, Some("21:00:00"), &["max_memory_mb=20"]).unwrap();
//! let stop = r.stopped.expect("stopped by the memory limit");
//! assert!(stop.at < guards_sim::topology::clock::hms(21, 0, 0));
//! assert!(stop.to_string().contains("memory"));
//! ```

use core::fmt;

use guards_core::Nanos;

use crate::topology::clock;

/// The shortest output interval a run accepts (1 ms): shorter ones would spend more on
/// the series than on the model.
pub const MIN_INTERVAL: Nanos = Nanos::from_millis(1);

/// The default memory limit: 1 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 1 << 30;

/// The limits of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Stop once the run's estimated memory (calls in flight, pending events, queued
    /// calls, the series and the latency samples) passes this many bytes. Default 1 GiB.
    pub max_memory: u64,
    /// Stop after this many events (`None`: no limit, the default).
    pub max_events: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_memory: DEFAULT_MAX_MEMORY,
            max_events: None,
        }
    }
}

/// Why a run stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Its memory estimate passed the limit.
    Memory {
        /// The limit, bytes.
        limit: u64,
        /// The estimate when it stopped, bytes.
        used: u64,
    },
    /// It processed as many events as allowed.
    Events {
        /// The limit.
        limit: u64,
    },
}

impl StopReason {
    /// Stable snake_case name (`memory`, `events`), for bindings.
    pub fn kind(&self) -> &'static str {
        match self {
            StopReason::Memory { .. } => "memory",
            StopReason::Events { .. } => "events",
        }
    }

    /// The limit that was reached (bytes or events).
    pub fn limit(&self) -> u64 {
        match *self {
            StopReason::Memory { limit, .. } | StopReason::Events { limit } => limit,
        }
    }
}

/// Where and why a run stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    /// The virtual time at which it stopped; every interval that ended by then is kept.
    pub at: Nanos,
    /// Why.
    pub reason: StopReason,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = clock::format_millis(self.at);
        match self.reason {
            StopReason::Memory { limit, used } => write!(
                f,
                "stopped at {at}: the run's memory estimate ({} MB) passed its limit of {} MB \
                 (a queue that never drains, or a very short interval); the intervals before \
                 {at} are complete",
                used.div_ceil(1 << 20),
                limit / (1 << 20)
            ),
            StopReason::Events { limit } => write!(
                f,
                "stopped at {at}: it processed its limit of {limit} events; the intervals \
                 before {at} are complete"
            ),
        }
    }
}
