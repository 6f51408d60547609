//! Result codes, the one mapping from core's errors to them, and the last error's detail.
//!
//! Every binding reports failures the same way: a [`GuardsResult`] code (fixed numbers,
//! `0` is success; a retired number is never reused), a static one-line message per code
//! ([`GuardsResult::message`]) and a [`Failure`] that carries the detail: which config
//! field and what it accepts, which refusal and until when. C reads the code from the
//! return value and the detail of the last failure on its thread
//! (`guards_last_error_detail`, `guards_last_rejection`); Python and Node turn a
//! [`Failure`] into an exception.
//!
//! Numbers are grouped: `1..=99` the call itself was wrong (NULL, panic, bad enum number),
//! `100..=199` a config value was refused, `200..=299` a permit was refused, `300..=399`
//! a guard refused the call (a decision, not a fault: [`GuardsResult::is_rejection`]),
//! `400..=499` a shared region (see [`crate::shared`]) refused.
//!
//! # Examples
//! ```
//! use guards::error::{Failure, GuardsResult};
//! use guards_core::{ConfigError, ConfigErrorKind};
//!
//! let e = ConfigError::new("window_size", ConfigErrorKind::Zero, "1..=65536 calls");
//! let f = Failure::from(e);
//! assert_eq!(f.code, GuardsResult::ConfigZero);
//! assert_eq!(f.code as u32, 102);
//! assert!(f.to_string().contains("window_size"));
//! ```

use std::cell::Cell;
use std::fmt;

use crate::names::{
    BreakerRejectReason, BreakerRejected, BulkheadRejected, ConfigError, ConfigErrorKind,
};

/// What a call returned. `#[repr(u32)]` with fixed numbers: `GUARDS_RESULT_OK` is 0, and a
/// number, once given, keeps its meaning forever (retired ones stay reserved).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GuardsResult {
    /// Success.
    Ok = 0,
    /// A required pointer argument (handle, config or output) was NULL.
    NullArgument = 1,
    /// A Rust panic was caught at the API boundary (a bug in guards; please report it).
    Panic = 2,
    /// Memory for a guard could not be allocated.
    OutOfMemory = 3,
    /// An enum number (outcome, window kind, ...) is not one of the defined values.
    InvalidEnum = 4,
    /// An argument is outside its domain (e.g. a NaN where a number is expected).
    InvalidArgument = 5,
    /// A config value is NaN or infinite.
    ConfigNotFinite = 100,
    /// A config value is negative where only non-negative values make sense.
    ConfigNegative = 101,
    /// A config value is zero where it must be positive.
    ConfigZero = 102,
    /// A config value is outside its documented range.
    ConfigOutOfRange = 103,
    /// A config value contradicts another field.
    ConfigInconsistent = 104,
    /// A config field name is not one of the config's fields.
    ConfigUnknownField = 105,
    /// A config value has the wrong type for its field (a string for a number, ...).
    ConfigWrongType = 106,
    /// A config value is invalid for a reason this version does not name.
    ConfigInvalid = 107,
    /// The permit was already reported (or released): nothing was counted again.
    PermitAlreadyReported = 200,
    /// The permit was issued by another guard: nothing was counted.
    PermitWrongGuard = 201,
    /// The permit was never issued by this guard (a zeroed or corrupted permit).
    PermitUnknown = 202,
    /// No permit slot could be allocated (over 2^31 permits in flight, or out of memory);
    /// the guard was left as if the call had not been made.
    PermitSlotsExhausted = 203,
    /// Refused: the circuit breaker is open.
    BreakerOpen = 300,
    /// Refused: the circuit breaker is half-open and every probe slot is taken.
    BreakerHalfOpenFull = 301,
    /// Refused: the bulkhead is at its cap.
    BulkheadFull = 310,
    /// A system call on a shared region's file failed (open, mmap, ...); the detail names
    /// the call and the OS error.
    RegionIo = 400,
    /// The file is not a guards region, or is damaged (bad magic, truncated, inconsistent).
    RegionInvalid = 401,
    /// The region was made by another layout version or build of guards, in another boot,
    /// or by a process of another pid namespace.
    RegionIncompatible = 402,
    /// The region has no room left: every directory entry, or all its guard bytes, used.
    RegionFull = 403,
    /// Another process did not finish creating a guard within the wait timeout.
    RegionTimeout = 404,
    /// A guard of that name exists with another kind, capacity or config.
    GuardMismatch = 405,
    /// No region or no guard of that name (when asked not to create one).
    GuardNotFound = 406,
}

impl GuardsResult {
    /// Every code, in numeric order.
    pub const ALL: [GuardsResult; 28] = [
        GuardsResult::Ok,
        GuardsResult::NullArgument,
        GuardsResult::Panic,
        GuardsResult::OutOfMemory,
        GuardsResult::InvalidEnum,
        GuardsResult::InvalidArgument,
        GuardsResult::ConfigNotFinite,
        GuardsResult::ConfigNegative,
        GuardsResult::ConfigZero,
        GuardsResult::ConfigOutOfRange,
        GuardsResult::ConfigInconsistent,
        GuardsResult::ConfigUnknownField,
        GuardsResult::ConfigWrongType,
        GuardsResult::ConfigInvalid,
        GuardsResult::PermitAlreadyReported,
        GuardsResult::PermitWrongGuard,
        GuardsResult::PermitUnknown,
        GuardsResult::PermitSlotsExhausted,
        GuardsResult::BreakerOpen,
        GuardsResult::BreakerHalfOpenFull,
        GuardsResult::BulkheadFull,
        GuardsResult::RegionIo,
        GuardsResult::RegionInvalid,
        GuardsResult::RegionIncompatible,
        GuardsResult::RegionFull,
        GuardsResult::RegionTimeout,
        GuardsResult::GuardMismatch,
        GuardsResult::GuardNotFound,
    ];

    /// The code numbered `n`, if there is one.
    pub fn from_u32(n: u32) -> Option<GuardsResult> {
        GuardsResult::ALL.iter().copied().find(|c| *c as u32 == n)
    }

    /// A static one-line message (what the code means, not which value caused it).
    pub const fn message(self) -> &'static str {
        match self {
            GuardsResult::Ok => "ok",
            GuardsResult::NullArgument => "a required pointer argument was NULL",
            GuardsResult::Panic => "internal error: a panic was caught at the API boundary",
            GuardsResult::OutOfMemory => "out of memory",
            GuardsResult::InvalidEnum => "an enum argument is not one of its defined values",
            GuardsResult::InvalidArgument => "an argument is outside its domain",
            GuardsResult::ConfigNotFinite => "invalid config: a value must be a finite number",
            GuardsResult::ConfigNegative => "invalid config: a value must not be negative",
            GuardsResult::ConfigZero => "invalid config: a value must not be zero",
            GuardsResult::ConfigOutOfRange => "invalid config: a value is out of range",
            GuardsResult::ConfigInconsistent => {
                "invalid config: a value contradicts another setting"
            }
            GuardsResult::ConfigUnknownField => "invalid config: unknown field",
            GuardsResult::ConfigWrongType => "invalid config: a value has the wrong type",
            GuardsResult::ConfigInvalid => "invalid config",
            GuardsResult::PermitAlreadyReported => "the permit was already reported",
            GuardsResult::PermitWrongGuard => "the permit belongs to another guard",
            GuardsResult::PermitUnknown => "the permit was not issued by this guard",
            GuardsResult::PermitSlotsExhausted => "no permit slot could be allocated",
            GuardsResult::BreakerOpen => "refused: the circuit breaker is open",
            GuardsResult::BreakerHalfOpenFull => {
                "refused: the circuit breaker is half-open and all probes are taken"
            }
            GuardsResult::BulkheadFull => "refused: the bulkhead is full",
            GuardsResult::RegionIo => "shared region: a system call failed",
            GuardsResult::RegionInvalid => "shared region: not a guards region, or damaged",
            GuardsResult::RegionIncompatible => {
                "shared region: made by another layout version, build, boot or pid namespace"
            }
            GuardsResult::RegionFull => "shared region: no room left",
            GuardsResult::RegionTimeout => {
                "shared region: another process did not finish creating the guard in time"
            }
            GuardsResult::GuardMismatch => {
                "shared region: a guard of that name exists with another kind, capacity or config"
            }
            GuardsResult::GuardNotFound => "shared region: no such region or guard",
        }
    }

    /// The message of the code numbered `n`, or `"unknown result code"`.
    pub fn message_of(n: u32) -> &'static str {
        GuardsResult::from_u32(n).map_or("unknown result code", GuardsResult::message)
    }

    /// Whether this is a guard's refusal (a decision to fail fast or fall back), not a
    /// fault of the caller or of guards.
    pub const fn is_rejection(self) -> bool {
        (self as u32) >= 300 && (self as u32) <= 399
    }

    /// Whether a config value was refused.
    pub const fn is_config_error(self) -> bool {
        (self as u32) >= 100 && (self as u32) <= 199
    }

    /// The code of a core [`ConfigErrorKind`].
    pub fn of_config_kind(kind: ConfigErrorKind) -> GuardsResult {
        match kind {
            ConfigErrorKind::NotFinite => GuardsResult::ConfigNotFinite,
            ConfigErrorKind::Negative => GuardsResult::ConfigNegative,
            ConfigErrorKind::Zero => GuardsResult::ConfigZero,
            ConfigErrorKind::OutOfRange => GuardsResult::ConfigOutOfRange,
            ConfigErrorKind::Inconsistent => GuardsResult::ConfigInconsistent,
            _ => GuardsResult::ConfigInvalid,
        }
    }
}

/// What went wrong, beyond the code: enough to name the field or the refusal. `Copy` and
/// allocation-free, so recording it on a refusal (a hot path while a breaker is open)
/// costs a few stores.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Detail {
    /// Nothing more to say than the code's message.
    None,
    /// Core refused a config value.
    Config(ConfigError),
    /// A named argument was wrong (`what` says what it accepts).
    Argument {
        /// The argument or field.
        name: &'static str,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// A config field name is unknown (`valid` lists the config's fields).
    UnknownField {
        /// The config ("circuit_breaker", ...).
        config: &'static str,
        /// The name given.
        given: crate::schema::ShortName,
        /// The valid field names, comma-separated.
        valid: &'static str,
    },
    /// The circuit breaker refused the call.
    BreakerRejected(BreakerRejected),
    /// The bulkhead refused the call.
    BulkheadRejected(BulkheadRejected),
    /// A shared region refused: what was wrong, and the OS error number if a system call
    /// failed (0 otherwise).
    Region {
        /// What was wrong (or which system call failed).
        what: &'static str,
        /// The OS error number (`errno`), or 0.
        errno: i32,
    },
    /// A guard of the name asked for exists with another kind, capacity or config.
    GuardMismatch {
        /// What differs: `"kind"`, `"capacity"` or `"config"`.
        field: &'static str,
        /// The existing guard's value (a kind number, a capacity, a config hash).
        existing: u64,
        /// The value asked for.
        requested: u64,
    },
}

/// A failure: its code and detail. `Display` gives the full message bindings show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Failure {
    /// The code.
    pub code: GuardsResult,
    /// The detail.
    pub detail: Detail,
}

impl Failure {
    /// A failure with no detail beyond the code's message.
    pub const fn code(code: GuardsResult) -> Self {
        Failure {
            code,
            detail: Detail::None,
        }
    }

    /// A bad argument `name` (code `code`), accepting `expected`.
    pub const fn argument(code: GuardsResult, name: &'static str, expected: &'static str) -> Self {
        Failure {
            code,
            detail: Detail::Argument { name, expected },
        }
    }

    /// When a refusal says when to retry: the instant (same clock as the call's `now`).
    pub fn retry_at(&self) -> Option<u64> {
        match self.detail {
            Detail::BreakerRejected(r) => Some(r.retry_at.0),
            _ => None,
        }
    }
}

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Self {
        Failure {
            code: GuardsResult::of_config_kind(e.kind()),
            detail: Detail::Config(e),
        }
    }
}

impl From<BreakerRejected> for Failure {
    fn from(r: BreakerRejected) -> Self {
        Failure {
            code: match r.reason {
                BreakerRejectReason::Open => GuardsResult::BreakerOpen,
                BreakerRejectReason::HalfOpenFull => GuardsResult::BreakerHalfOpenFull,
            },
            detail: Detail::BreakerRejected(r),
        }
    }
}

impl From<BulkheadRejected> for Failure {
    fn from(r: BulkheadRejected) -> Self {
        Failure {
            code: GuardsResult::BulkheadFull,
            detail: Detail::BulkheadRejected(r),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.detail {
            Detail::None => f.write_str(self.code.message()),
            Detail::Config(e) => write!(f, "{e}"),
            Detail::Argument { name, expected } => {
                write!(f, "{}: `{name}` (expected {expected})", self.code.message())
            }
            Detail::UnknownField {
                config,
                given,
                valid,
            } => write!(
                f,
                "{}: {config} has no field `{}` (valid fields: {valid})",
                self.code.message(),
                given.as_str()
            ),
            Detail::BreakerRejected(r) => write!(
                f,
                "{} ({}, retry at {} ns)",
                self.code.message(),
                r.reason.name(),
                r.retry_at.0
            ),
            Detail::BulkheadRejected(r) => write!(
                f,
                "{} ({} of {} in flight)",
                self.code.message(),
                r.in_flight,
                r.max_concurrent
            ),
            Detail::Region { what, errno: 0 } => write!(f, "{}: {what}", self.code.message()),
            Detail::Region { what, errno } => write!(
                f,
                "{}: {what}: {}",
                self.code.message(),
                std::io::Error::from_raw_os_error(errno)
            ),
            Detail::GuardMismatch {
                field: "kind",
                existing,
                requested,
            } => {
                let name = |k: u64| {
                    u32::try_from(k)
                        .ok()
                        .and_then(crate::shared::GuardKind::from_u32)
                        .map_or("unknown", crate::shared::GuardKind::name)
                };
                write!(
                    f,
                    "{}: it is a {}, not a {}",
                    self.code.message(),
                    name(existing),
                    name(requested)
                )
            }
            Detail::GuardMismatch {
                field,
                existing,
                requested,
            } => write!(
                f,
                "{}: its {field} is {existing:#x}, not {requested:#x}",
                self.code.message()
            ),
        }
    }
}

impl std::error::Error for Failure {}

thread_local! {
    static LAST: Cell<Option<Failure>> = const { Cell::new(None) };
}

/// Remember `f` as this thread's last failure (what `guards_last_error_detail` and
/// `guards_last_rejection` read). Allocation-free.
#[inline]
pub fn set_last(f: Failure) {
    // A thread being torn down has no last error to keep.
    let _ = LAST.try_with(|c| c.set(Some(f)));
}

/// This thread's last failure, if any call on it has failed.
pub fn last() -> Option<Failure> {
    LAST.try_with(Cell::get).ok().flatten()
}

/// Forget this thread's last failure.
pub fn clear_last() {
    let _ = LAST.try_with(|c| c.set(None));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_fixed_and_unique() {
        let mut seen = std::collections::BTreeMap::new();
        for c in GuardsResult::ALL {
            if let Some(prev) = seen.insert(c as u32, c) {
                assert_eq!(prev, c, "two codes share {}", c as u32);
            }
        }
        // The published numbers (include/guards.h); changing one breaks every C caller.
        let fixed = [
            (GuardsResult::Ok, 0),
            (GuardsResult::NullArgument, 1),
            (GuardsResult::Panic, 2),
            (GuardsResult::OutOfMemory, 3),
            (GuardsResult::InvalidEnum, 4),
            (GuardsResult::InvalidArgument, 5),
            (GuardsResult::ConfigNotFinite, 100),
            (GuardsResult::ConfigNegative, 101),
            (GuardsResult::ConfigZero, 102),
            (GuardsResult::ConfigOutOfRange, 103),
            (GuardsResult::ConfigInconsistent, 104),
            (GuardsResult::ConfigUnknownField, 105),
            (GuardsResult::ConfigWrongType, 106),
            (GuardsResult::ConfigInvalid, 107),
            (GuardsResult::PermitAlreadyReported, 200),
            (GuardsResult::PermitWrongGuard, 201),
            (GuardsResult::PermitUnknown, 202),
            (GuardsResult::PermitSlotsExhausted, 203),
            (GuardsResult::BreakerOpen, 300),
            (GuardsResult::BreakerHalfOpenFull, 301),
            (GuardsResult::BulkheadFull, 310),
            (GuardsResult::RegionIo, 400),
            (GuardsResult::RegionInvalid, 401),
            (GuardsResult::RegionIncompatible, 402),
            (GuardsResult::RegionFull, 403),
            (GuardsResult::RegionTimeout, 404),
            (GuardsResult::GuardMismatch, 405),
            (GuardsResult::GuardNotFound, 406),
        ];
        for (c, n) in fixed {
            assert_eq!(c as u32, n, "{c:?}");
            assert_eq!(GuardsResult::from_u32(n), Some(c));
        }
        assert_eq!(seen.len(), fixed.len());
        assert_eq!(GuardsResult::from_u32(6), None);
        assert_eq!(GuardsResult::message_of(9999), "unknown result code");
    }

    #[test]
    fn groups() {
        assert!(GuardsResult::BreakerOpen.is_rejection());
        assert!(GuardsResult::BulkheadFull.is_rejection());
        assert!(!GuardsResult::PermitWrongGuard.is_rejection());
        assert!(GuardsResult::ConfigZero.is_config_error());
        assert!(!GuardsResult::Ok.is_config_error());
    }

    #[test]
    fn every_config_kind_maps_to_its_code() {
        let kinds = [
            (ConfigErrorKind::NotFinite, GuardsResult::ConfigNotFinite),
            (ConfigErrorKind::Negative, GuardsResult::ConfigNegative),
            (ConfigErrorKind::Zero, GuardsResult::ConfigZero),
            (ConfigErrorKind::OutOfRange, GuardsResult::ConfigOutOfRange),
            (
                ConfigErrorKind::Inconsistent,
                GuardsResult::ConfigInconsistent,
            ),
        ];
        for (k, c) in kinds {
            let f = Failure::from(ConfigError::new("x", k, "y"));
            assert_eq!(f.code, c);
            assert!(f.to_string().contains("`x`"), "{f}");
        }
    }

    #[test]
    fn last_failure_is_per_thread() {
        clear_last();
        set_last(Failure::code(GuardsResult::NullArgument));
        let other = std::thread::spawn(last).join().unwrap();
        assert_eq!(other, None);
        assert_eq!(last().map(|f| f.code), Some(GuardsResult::NullArgument));
        clear_last();
        assert_eq!(last(), None);
    }
}
