//! [`Priority`]: how important a request is, shared by admission, limiter partitions and
//! the queue discipline.
//!
//! Lower numbers are more important. The four named levels follow the criticalities the
//! Google SRE book describes for requests carried through a call chain; any value below
//! [`MAX_PRIORITIES`] is allowed.
//!
//! # Examples
//! ```
//! use guards_core::Priority;
//! assert!(Priority::CRITICAL_PLUS.is_above(Priority::SHEDDABLE));
//! assert_eq!(Priority::new(9), None);
//! ```

/// How many priority classes guards keep separate state for (0..=7).
pub const MAX_PRIORITIES: usize = 8;

/// A priority class; 0 is the most important.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(u8);

impl Default for Priority {
    /// [`Priority::CRITICAL`].
    fn default() -> Self {
        Priority::CRITICAL
    }
}

impl Priority {
    /// Most important: never shed before anything else (e.g. health checks, checkouts).
    pub const CRITICAL_PLUS: Priority = Priority(0);
    /// Important production traffic (the default).
    pub const CRITICAL: Priority = Priority(1);
    /// Traffic that tolerates some shedding.
    pub const SHEDDABLE_PLUS: Priority = Priority(2);
    /// Traffic shed first (batch, prefetch, optional widgets).
    pub const SHEDDABLE: Priority = Priority(3);

    /// A priority class, or `None` if `level >= MAX_PRIORITIES`.
    pub const fn new(level: u8) -> Option<Priority> {
        if (level as usize) < MAX_PRIORITIES {
            Some(Priority(level))
        } else {
            None
        }
    }

    /// The class number (0 = most important).
    pub const fn level(self) -> u8 {
        self.0
    }

    /// The class number as an index into per-priority arrays (always `< MAX_PRIORITIES`).
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Whether `self` is strictly more important than `other`.
    pub const fn is_above(self, other: Priority) -> bool {
        self.0 < other.0
    }
}
