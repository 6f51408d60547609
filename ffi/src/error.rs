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
//! `400..=499` there is nothing to answer yet (no data, not found, empty), `500..=599` a
//! shared region (see [`crate::shared`]) refused.
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
    AdmissionRejected, BulkheadRejected, CircuitBreakerRejectReason, CircuitBreakerRejected,
    ConfigError, ConfigErrorKind, GrpcTimeoutError, KeyedBreakersRejectReason,
    KeyedBreakersRejected, LimiterRejectReason, LimiterRejected, MillisError,
    QueueDisciplineRejected, RetryBudgetMode, RetryCause, RetryDriverError,
};
use guards_core::admission::AdmissionRejectReason;

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
    /// An argument is outside its domain (a NaN quantile, a priority above 7, a misaligned
    /// pointer, ...).
    InvalidArgument = 5,
    /// The call is not allowed in the object's current phase (a retry driver's `report`
    /// with no attempt out, anything after it finished); nothing was changed.
    WrongPhase = 6,
    /// An output buffer is too small for the value; nothing was written to it (the length
    /// output, when there is one, says how many bytes are needed).
    BufferTooSmall = 7,
    /// A header value could not be parsed (the detail names the rule it broke).
    InvalidHeader = 8,
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
    /// The permit (or receipt) was already reported (or released): nothing was counted
    /// again.
    PermitAlreadyReported = 200,
    /// The permit (or receipt) was issued by another guard: nothing was counted.
    PermitWrongGuard = 201,
    /// The permit (or receipt) was never issued by this guard (a zeroed or corrupted one).
    PermitUnknown = 202,
    /// No permit slot could be allocated (over 2^31 permits in flight, or out of memory);
    /// the guard was left as if the call had not been made.
    PermitSlotsExhausted = 203,
    /// Refused: the circuit breaker is open.
    BreakerOpen = 300,
    /// Refused: the circuit breaker is half-open and every probe slot is taken.
    BreakerHalfOpenFull = 301,
    /// Refused: the keyed breaker set has no breaker for the key and no free slot.
    KeyedBreakersFull = 302,
    /// Refused: the bulkhead is at its cap.
    BulkheadFull = 310,
    /// Refused: the limiter's calls in flight reached its limit.
    LimiterLimitReached = 320,
    /// Refused: the calls in flight reached the fixed cap of the call's priority.
    LimiterPartitionCap = 321,
    /// Refused: the rest of the limit is reserved for more important priorities.
    LimiterReserved = 322,
    /// Refused at the door: the calls inside reached this priority's fixed limit.
    AdmissionLimitReached = 330,
    /// Refused at the door: the calls inside reached the adaptive limit (or this
    /// priority's share of it).
    AdmissionOverloaded = 331,
    /// Refused: the wait queue holds `capacity` waiters.
    QueueFull = 340,
    /// Refused: the retry budget has no tokens for this retry (or hedge).
    RetryBudgetExhausted = 350,
    /// Refused locally by the adaptive throttle (the backend accepts too little of what it
    /// is sent).
    Throttled = 360,
    /// Nothing to answer yet: too few latency samples.
    NoData = 400,
    /// No such entry (a key never inserted, an id not queued).
    NotFound = 401,
    /// Nothing to return: the queue is empty.
    Empty = 402,
    /// A system call on a shared region's file failed (open, mmap, ...); the detail names
    /// the call and the OS error.
    RegionIo = 500,
    /// The file is not a guards region, or is damaged (bad magic, truncated, inconsistent).
    RegionInvalid = 501,
    /// The region was made by another layout version or build of guards, in another boot,
    /// or by a process of another pid namespace.
    RegionIncompatible = 502,
    /// The region has no room left: every directory entry, or all its guard bytes, used.
    RegionFull = 503,
    /// Another process did not finish creating a guard within the wait timeout.
    RegionTimeout = 504,
    /// A guard of that name exists with another kind, capacity or config.
    GuardMismatch = 505,
    /// No region or no guard of that name (when asked not to create one).
    GuardNotFound = 506,
    /// The fleet's Redis could not be reached, or answered an error, when joining.
    FleetUnavailable = 600,
    /// The fleet's Redis refused the credentials (or requires some).
    FleetAuth = 601,
}

impl GuardsResult {
    /// Every code, in numeric order.
    pub const ALL: &'static [GuardsResult] = &[
        GuardsResult::Ok,
        GuardsResult::NullArgument,
        GuardsResult::Panic,
        GuardsResult::OutOfMemory,
        GuardsResult::InvalidEnum,
        GuardsResult::InvalidArgument,
        GuardsResult::WrongPhase,
        GuardsResult::BufferTooSmall,
        GuardsResult::InvalidHeader,
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
        GuardsResult::KeyedBreakersFull,
        GuardsResult::BulkheadFull,
        GuardsResult::LimiterLimitReached,
        GuardsResult::LimiterPartitionCap,
        GuardsResult::LimiterReserved,
        GuardsResult::AdmissionLimitReached,
        GuardsResult::AdmissionOverloaded,
        GuardsResult::QueueFull,
        GuardsResult::RetryBudgetExhausted,
        GuardsResult::Throttled,
        GuardsResult::NoData,
        GuardsResult::NotFound,
        GuardsResult::Empty,
        GuardsResult::RegionIo,
        GuardsResult::RegionInvalid,
        GuardsResult::RegionIncompatible,
        GuardsResult::RegionFull,
        GuardsResult::RegionTimeout,
        GuardsResult::GuardMismatch,
        GuardsResult::GuardNotFound,
        GuardsResult::FleetUnavailable,
        GuardsResult::FleetAuth,
    ];

    /// The code numbered `n`, if there is one.
    pub const fn from_u32(n: u32) -> Option<GuardsResult> {
        Some(match n {
            0 => GuardsResult::Ok,
            1 => GuardsResult::NullArgument,
            2 => GuardsResult::Panic,
            3 => GuardsResult::OutOfMemory,
            4 => GuardsResult::InvalidEnum,
            5 => GuardsResult::InvalidArgument,
            6 => GuardsResult::WrongPhase,
            7 => GuardsResult::BufferTooSmall,
            8 => GuardsResult::InvalidHeader,
            100 => GuardsResult::ConfigNotFinite,
            101 => GuardsResult::ConfigNegative,
            102 => GuardsResult::ConfigZero,
            103 => GuardsResult::ConfigOutOfRange,
            104 => GuardsResult::ConfigInconsistent,
            105 => GuardsResult::ConfigUnknownField,
            106 => GuardsResult::ConfigWrongType,
            107 => GuardsResult::ConfigInvalid,
            200 => GuardsResult::PermitAlreadyReported,
            201 => GuardsResult::PermitWrongGuard,
            202 => GuardsResult::PermitUnknown,
            203 => GuardsResult::PermitSlotsExhausted,
            300 => GuardsResult::BreakerOpen,
            301 => GuardsResult::BreakerHalfOpenFull,
            302 => GuardsResult::KeyedBreakersFull,
            310 => GuardsResult::BulkheadFull,
            320 => GuardsResult::LimiterLimitReached,
            321 => GuardsResult::LimiterPartitionCap,
            322 => GuardsResult::LimiterReserved,
            330 => GuardsResult::AdmissionLimitReached,
            331 => GuardsResult::AdmissionOverloaded,
            340 => GuardsResult::QueueFull,
            350 => GuardsResult::RetryBudgetExhausted,
            360 => GuardsResult::Throttled,
            400 => GuardsResult::NoData,
            401 => GuardsResult::NotFound,
            402 => GuardsResult::Empty,
            500 => GuardsResult::RegionIo,
            501 => GuardsResult::RegionInvalid,
            502 => GuardsResult::RegionIncompatible,
            503 => GuardsResult::RegionFull,
            504 => GuardsResult::RegionTimeout,
            505 => GuardsResult::GuardMismatch,
            506 => GuardsResult::GuardNotFound,
            600 => GuardsResult::FleetUnavailable,
            601 => GuardsResult::FleetAuth,
            _ => return None,
        })
    }

    /// The static one-line message (what the code means, not which value caused it) as a
    /// NUL-terminated C string: the one place the messages are written.
    pub const fn message_cstr(self) -> &'static std::ffi::CStr {
        match self {
            GuardsResult::Ok => c"ok",
            GuardsResult::NullArgument => c"a required pointer argument was NULL",
            GuardsResult::Panic => c"internal error: a panic was caught at the API boundary",
            GuardsResult::OutOfMemory => c"out of memory",
            GuardsResult::InvalidEnum => c"an enum argument is not one of its defined values",
            GuardsResult::InvalidArgument => c"an argument is outside its domain",
            GuardsResult::WrongPhase => c"the call is not allowed in the current phase",
            GuardsResult::BufferTooSmall => c"the output buffer is too small",
            GuardsResult::InvalidHeader => c"a header value could not be parsed",
            GuardsResult::ConfigNotFinite => c"invalid config: a value must be a finite number",
            GuardsResult::ConfigNegative => c"invalid config: a value must not be negative",
            GuardsResult::ConfigZero => c"invalid config: a value must not be zero",
            GuardsResult::ConfigOutOfRange => c"invalid config: a value is out of range",
            GuardsResult::ConfigInconsistent => {
                c"invalid config: a value contradicts another setting"
            }
            GuardsResult::ConfigUnknownField => c"invalid config: unknown field",
            GuardsResult::ConfigWrongType => c"invalid config: a value has the wrong type",
            GuardsResult::ConfigInvalid => c"invalid config",
            GuardsResult::PermitAlreadyReported => c"the permit was already reported",
            GuardsResult::PermitWrongGuard => c"the permit belongs to another guard",
            GuardsResult::PermitUnknown => c"the permit was not issued by this guard",
            GuardsResult::PermitSlotsExhausted => c"no permit slot could be allocated",
            GuardsResult::BreakerOpen => c"refused: the circuit breaker is open",
            GuardsResult::BreakerHalfOpenFull => {
                c"refused: the circuit breaker is half-open and all probes are taken"
            }
            GuardsResult::KeyedBreakersFull => c"refused: the keyed breaker set is full",
            GuardsResult::BulkheadFull => c"refused: the bulkhead is full",
            GuardsResult::LimiterLimitReached => c"refused: the limiter is at its limit",
            GuardsResult::LimiterPartitionCap => {
                c"refused: the priority's cap on calls in flight is reached"
            }
            GuardsResult::LimiterReserved => {
                c"refused: the rest of the limit is reserved for higher priorities"
            }
            GuardsResult::AdmissionLimitReached => {
                c"refused at the door: the priority's limit is reached"
            }
            GuardsResult::AdmissionOverloaded => c"refused at the door: overloaded",
            GuardsResult::QueueFull => c"refused: the wait queue is full",
            GuardsResult::RetryBudgetExhausted => c"refused: the retry budget is exhausted",
            GuardsResult::Throttled => c"refused: throttled locally",
            GuardsResult::NoData => c"no data yet",
            GuardsResult::NotFound => c"not found",
            GuardsResult::Empty => c"empty",
            GuardsResult::RegionIo => c"shared region: a system call failed",
            GuardsResult::RegionInvalid => c"shared region: not a guards region, or damaged",
            GuardsResult::RegionIncompatible => {
                c"shared region: made by another layout version, build, boot or pid namespace"
            }
            GuardsResult::RegionFull => c"shared region: no room left",
            GuardsResult::RegionTimeout => {
                c"shared region: another process did not finish creating the guard in time"
            }
            GuardsResult::GuardMismatch => {
                c"shared region: a guard of that name exists with another kind, capacity or config"
            }
            GuardsResult::GuardNotFound => c"shared region: no such region or guard",
            GuardsResult::FleetUnavailable => c"fleet: redis unreachable or answering errors",
            GuardsResult::FleetAuth => c"fleet: redis refused the credentials",
        }
    }

    /// The static one-line message (what the code means, not which value caused it).
    pub const fn message(self) -> &'static str {
        match self.message_cstr().to_str() {
            Ok(s) => s,
            Err(_) => "",
        }
    }
}

impl GuardsResult {
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
    /// A named argument was wrong (`expected` says what it accepts).
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
    CircuitBreakerRejected(CircuitBreakerRejected),
    /// The keyed breaker set refused the call.
    KeyedBreakersRejected(KeyedBreakersRejected),
    /// The bulkhead refused the call.
    BulkheadRejected(BulkheadRejected),
    /// The limiter refused the call.
    LimiterRejected(LimiterRejected),
    /// The admission door refused the call.
    AdmissionRejected(AdmissionRejected),
    /// The wait queue refused the waiter.
    QueueRejected(QueueDisciplineRejected),
    /// The retry budget refused a retry.
    BudgetExhausted {
        /// The budget's mode.
        mode: RetryBudgetMode,
        /// What the retry was for.
        cause: RetryCause,
    },
    /// The adaptive throttle refused the request.
    Throttled {
        /// The rejection probability it drew against.
        probability: f64,
    },
    /// A retry driver call in the wrong phase.
    Phase(RetryDriverError),
    /// A `grpc-timeout` value was refused.
    GrpcTimeout(GrpcTimeoutError),
    /// A milliseconds header value was refused.
    Millis(MillisError),
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

    /// A bad enum number for `name`, which accepts `expected`.
    pub const fn bad_enum(name: &'static str, expected: &'static str) -> Self {
        Failure::argument(GuardsResult::InvalidEnum, name, expected)
    }

    /// When a refusal says when to retry: the instant (same clock as the call's `now`).
    pub fn retry_at(&self) -> Option<u64> {
        match self.detail {
            Detail::CircuitBreakerRejected(r) => Some(r.retry_at.0),
            Detail::KeyedBreakersRejected(r) => Some(r.retry_at.0),
            Detail::LimiterRejected(r) => Some(r.retry_at.0),
            Detail::AdmissionRejected(r) => Some(r.retry_at.0),
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

impl From<CircuitBreakerRejected> for Failure {
    #[inline]
    fn from(r: CircuitBreakerRejected) -> Self {
        Failure {
            code: match r.reason {
                CircuitBreakerRejectReason::Open => GuardsResult::BreakerOpen,
                CircuitBreakerRejectReason::HalfOpenFull => GuardsResult::BreakerHalfOpenFull,
            },
            detail: Detail::CircuitBreakerRejected(r),
        }
    }
}

impl From<KeyedBreakersRejected> for Failure {
    fn from(r: KeyedBreakersRejected) -> Self {
        Failure {
            code: match r.reason {
                KeyedBreakersRejectReason::Open => GuardsResult::BreakerOpen,
                KeyedBreakersRejectReason::HalfOpenFull => GuardsResult::BreakerHalfOpenFull,
                KeyedBreakersRejectReason::SetFull => GuardsResult::KeyedBreakersFull,
            },
            detail: Detail::KeyedBreakersRejected(r),
        }
    }
}

impl From<BulkheadRejected> for Failure {
    #[inline]
    fn from(r: BulkheadRejected) -> Self {
        Failure {
            code: GuardsResult::BulkheadFull,
            detail: Detail::BulkheadRejected(r),
        }
    }
}

impl From<LimiterRejected> for Failure {
    fn from(r: LimiterRejected) -> Self {
        Failure {
            code: match r.reason {
                LimiterRejectReason::LimitReached => GuardsResult::LimiterLimitReached,
                LimiterRejectReason::PartitionCap => GuardsResult::LimiterPartitionCap,
                LimiterRejectReason::ReservedForHigherPriority => GuardsResult::LimiterReserved,
            },
            detail: Detail::LimiterRejected(r),
        }
    }
}

impl From<AdmissionRejected> for Failure {
    fn from(r: AdmissionRejected) -> Self {
        Failure {
            code: match r.reason {
                AdmissionRejectReason::LimitReached => GuardsResult::AdmissionLimitReached,
                AdmissionRejectReason::Overloaded => GuardsResult::AdmissionOverloaded,
            },
            detail: Detail::AdmissionRejected(r),
        }
    }
}

impl From<QueueDisciplineRejected> for Failure {
    fn from(r: QueueDisciplineRejected) -> Self {
        Failure {
            code: GuardsResult::QueueFull,
            detail: Detail::QueueRejected(r),
        }
    }
}

impl From<RetryDriverError> for Failure {
    fn from(e: RetryDriverError) -> Self {
        Failure {
            code: GuardsResult::WrongPhase,
            detail: Detail::Phase(e),
        }
    }
}

impl From<GrpcTimeoutError> for Failure {
    fn from(e: GrpcTimeoutError) -> Self {
        Failure {
            code: GuardsResult::InvalidHeader,
            detail: Detail::GrpcTimeout(e),
        }
    }
}

impl From<MillisError> for Failure {
    fn from(e: MillisError) -> Self {
        Failure {
            code: GuardsResult::InvalidHeader,
            detail: Detail::Millis(e),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.code.message();
        match self.detail {
            Detail::None => f.write_str(m),
            Detail::Config(e) => write!(f, "{e}"),
            Detail::Argument { name, expected } => {
                write!(f, "{m}: `{name}` (expected {expected})")
            }
            Detail::UnknownField {
                config,
                given,
                valid,
            } => write!(
                f,
                "{m}: {config} has no field `{}` (valid fields: {valid})",
                given.as_str()
            ),
            Detail::CircuitBreakerRejected(r) => {
                write!(f, "{m} ({}, retry at {} ns)", r.reason.name(), r.retry_at.0)
            }
            Detail::KeyedBreakersRejected(r) => write!(
                f,
                "{m} (key {:#018x}: {}, retry at {} ns)",
                r.key,
                r.reason.name(),
                r.retry_at.0
            ),
            Detail::BulkheadRejected(r) => {
                write!(f, "{m} ({} of {} in flight)", r.in_flight, r.max_concurrent)
            }
            Detail::LimiterRejected(r) => write!(
                f,
                "{m} ({}: {} in flight, threshold {} for priority {}, retry at {} ns)",
                r.reason.name(),
                r.in_flight,
                r.threshold,
                r.priority.level(),
                r.retry_at.0
            ),
            Detail::AdmissionRejected(r) => write!(
                f,
                "{m} ({}: {} inside, threshold {} for priority {}, retry at {} ns)",
                r.reason.name(),
                r.in_flight,
                r.threshold,
                r.priority.level(),
                r.retry_at.0
            ),
            Detail::QueueRejected(r) => {
                write!(f, "{m} ({} waiters; waiter {} refused)", r.capacity, r.id)
            }
            Detail::BudgetExhausted { mode, cause } => {
                write!(
                    f,
                    "{m} ({} budget, retry after {})",
                    mode.name(),
                    cause.name()
                )
            }
            Detail::Throttled { probability } => {
                write!(f, "{m} (rejection probability {probability:.4})")
            }
            Detail::Phase(e) => write!(f, "{m}: {e}"),
            Detail::GrpcTimeout(e) => write!(f, "{m}: {e} ({})", e.name()),
            Detail::Millis(e) => write!(f, "{m}: {e} ({})", e.name()),
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
        for &c in GuardsResult::ALL {
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
            (GuardsResult::WrongPhase, 6),
            (GuardsResult::BufferTooSmall, 7),
            (GuardsResult::InvalidHeader, 8),
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
            (GuardsResult::KeyedBreakersFull, 302),
            (GuardsResult::BulkheadFull, 310),
            (GuardsResult::LimiterLimitReached, 320),
            (GuardsResult::LimiterPartitionCap, 321),
            (GuardsResult::LimiterReserved, 322),
            (GuardsResult::AdmissionLimitReached, 330),
            (GuardsResult::AdmissionOverloaded, 331),
            (GuardsResult::QueueFull, 340),
            (GuardsResult::RetryBudgetExhausted, 350),
            (GuardsResult::Throttled, 360),
            (GuardsResult::NoData, 400),
            (GuardsResult::NotFound, 401),
            (GuardsResult::Empty, 402),
            (GuardsResult::RegionIo, 500),
            (GuardsResult::RegionInvalid, 501),
            (GuardsResult::RegionIncompatible, 502),
            (GuardsResult::RegionFull, 503),
            (GuardsResult::RegionTimeout, 504),
            (GuardsResult::GuardMismatch, 505),
            (GuardsResult::GuardNotFound, 506),
            (GuardsResult::FleetUnavailable, 600),
            (GuardsResult::FleetAuth, 601),
        ];
        for (c, n) in fixed {
            assert_eq!(c as u32, n, "{c:?}");
            assert_eq!(GuardsResult::from_u32(n), Some(c));
        }
        assert_eq!(seen.len(), fixed.len());
        assert_eq!(GuardsResult::from_u32(9), None);
        assert_eq!(GuardsResult::message_of(9999), "unknown result code");
    }

    #[test]
    fn c_messages_are_the_messages() {
        for &c in GuardsResult::ALL {
            assert_eq!(c.message_cstr().to_str().unwrap(), c.message(), "{c:?}");
        }
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
