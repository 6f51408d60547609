//! One schema per config: every field's name, unit, default, valid range and one-line doc,
//! and a builder from (name, value) pairs whose errors name the field.
//!
//! The schemas are what bindings are generated from and checked against: Python keyword
//! arguments, Node option objects, the C `_config_default` functions, the simulator's
//! overrides and the error messages all read them, so a field is spelled, defaulted and
//! bounded the same way everywhere. Defaults come from core's `DEFAULT_*` constants and
//! ranges from its limits; `tests/schema.rs` checks every default against core's
//! `Default` and every numeric bound against core's `validate` (the minimum accepted and
//! just below it refused, the maximum accepted and just above it refused, NaN and
//! infinities refused).
//!
//! Units and the binding conventions:
//!
//! | unit | core type | C | Python | Node |
//! |---|---|---|---|---|
//! | [`Unit::Duration`] | `Nanos` | `uint64_t <name>_ns` | seconds (`float`/`int`), `timedelta` | milliseconds (`number`) |
//! | [`Unit::Count`] | `u64`/`u32` | `uint64_t` | `int` | `number` (integer) |
//! | [`Unit::Ratio`] | `f64` | `double` | `float` or `int` | `number` |
//! | [`Unit::Bool`] | `bool` | `bool` | `bool` (not `int`) | `boolean` |
//! | [`Unit::Enum`] | a core enum | `uint32_t` constant | `str` name | `string` name |
//! | [`Unit::Flags`] | a bit set | `uint32_t` bits | `int` bits | `number` bits |
//!
//! A builder takes a [`DurationUnit`] saying how the binding spells a plain number given
//! for a duration (C: nanoseconds, Python: seconds, Node: milliseconds); an exact
//! [`Input::Nanos`] is always accepted.
//!
//! Not yet in the schemas: the `limit` of [`LimiterConfig`] and [`AdmissionConfig`] (an
//! enum of four algorithm configs; their own schemas are [`AIMD`], [`VEGAS`], [`GRADIENT`])
//! and the retry budget's mode (one schema per mode: [`TOKEN_BUDGET`], [`GRPC_THROTTLE`],
//! [`AWS_RETRY_QUOTA`], [`WINDOWED_BUDGET`]). A binding selects the variant by name and
//! builds it with that variant's schema.
//!
//! # Examples
//! ```
//! use guards::schema::{self, DurationUnit, Input};
//! use guards::error::GuardsResult;
//!
//! let c = schema::CIRCUIT_BREAKER
//!     .build([("window_size", Input::Int(20)), ("open_duration", Input::Float(2.5))],
//!            DurationUnit::Secs)
//!     .unwrap();
//! assert_eq!(c.window_size, 20);
//! assert_eq!(c.open_duration.0, 2_500_000_000);
//!
//! let e = schema::CIRCUIT_BREAKER
//!     .build([("window_sise", Input::Int(20))], DurationUnit::Secs)
//!     .unwrap_err();
//! assert_eq!(e.code, GuardsResult::ConfigUnknownField);
//! assert!(e.to_string().contains("window_size"));   // the valid names are listed
//! ```

use std::fmt;

use guards_core::error::{check_f64, check_f64_above, check_u64};

use crate::error::{Detail, Failure, GuardsResult};
use crate::names::{
    AdaptiveThrottleConfig, AdmissionConfig, AimdConfig, AwsRetryQuotaConfig, BackoffConfig,
    BrownoutConfig, BulkheadConfig, CircuitBreakerConfig, ConfigError, ConfigErrorKind,
    DeadlineConfig, GradientConfig, GrpcThrottleConfig, HedgingConfig, Jitter,
    LatencyTrackerConfig, LimiterConfig, Nanos, QueueDisciplineConfig, RefusalKinds,
    RetryPolicyConfig, TokenBudgetConfig, UnkeyedSideEffects, VegasConfig, WindowKind,
    WindowedBudgetConfig,
};

/// What kind of value a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A duration (core: nanoseconds; each binding spells it its own way, see the module
    /// docs).
    Duration,
    /// A whole number (calls, tokens, samples, a seed).
    Count,
    /// A real number: a fraction, a factor, a rate.
    Ratio,
    /// `true` or `false`.
    Bool,
    /// One of these names (the value is its index).
    Enum(&'static [&'static str]),
    /// A set of these names (bit `i` = name `i`).
    Flags(&'static [&'static str]),
}

impl Unit {
    /// What a value of this unit is, for "wrong type" messages.
    pub const fn describe(self) -> &'static str {
        match self {
            Unit::Duration => "a duration",
            Unit::Count => "a whole number",
            Unit::Ratio => "a number",
            Unit::Bool => "a bool",
            Unit::Enum(_) => "a name (string)",
            Unit::Flags(_) => "a set of flags (bits)",
        }
    }
}

/// A field's value as stored: durations in nanoseconds, enums as their index, flags as
/// bits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// A count, a duration in nanoseconds, an enum index or flag bits.
    Uint(u64),
    /// A ratio.
    Float(f64),
    /// A bool.
    Bool(bool),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Uint(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
        }
    }
}

/// A value as a binding received it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Input<'a> {
    /// An integer (any sign and size the binding has; out-of-range values are refused).
    Int(i128),
    /// A float.
    Float(f64),
    /// A bool.
    Bool(bool),
    /// A string (an enum name).
    Str(&'a str),
    /// An exact duration in nanoseconds.
    Nanos(u64),
}

/// How a plain number given for a duration is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationUnit {
    /// Nanoseconds (C).
    Nanos,
    /// Milliseconds (Node).
    Millis,
    /// Seconds (Python).
    Secs,
}

impl DurationUnit {
    const fn scale(self) -> u64 {
        match self {
            DurationUnit::Nanos => 1,
            DurationUnit::Millis => 1_000_000,
            DurationUnit::Secs => 1_000_000_000,
        }
    }
}

/// A field's valid values on its own (other fields may narrow them: core's `validate`
/// has the last word and reports a contradiction as `inconsistent`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// `min..=max`.
    Uint {
        /// Smallest accepted.
        min: u64,
        /// Largest accepted.
        max: u64,
    },
    /// From `min` to `max`, each end included unless marked exclusive.
    Float {
        /// Lower end.
        min: f64,
        /// Whether `min` itself is refused.
        min_exclusive: bool,
        /// Upper end.
        max: f64,
        /// Whether `max` itself is refused.
        max_exclusive: bool,
    },
    /// Any value of the unit (bools, enum names).
    Any,
}

const fn uint(min: u64, max: u64) -> Range {
    Range::Uint { min, max }
}

const fn float(min: f64, max: f64) -> Range {
    Range::Float {
        min,
        min_exclusive: false,
        max,
        max_exclusive: false,
    }
}

/// `min < x <= max`.
const fn float_above(min: f64, max: f64) -> Range {
    Range::Float {
        min,
        min_exclusive: true,
        max,
        max_exclusive: false,
    }
}

/// `min <= x < max`.
const fn float_below(min: f64, max: f64) -> Range {
    Range::Float {
        min,
        min_exclusive: false,
        max,
        max_exclusive: true,
    }
}

/// `min < x < max`.
const fn float_open(min: f64, max: f64) -> Range {
    Range::Float {
        min,
        min_exclusive: true,
        max,
        max_exclusive: true,
    }
}

/// One field of a config `C`.
pub struct Field<C: 'static> {
    /// Its name, as spelled in core's config struct (nested: `tracker.window`; arrays:
    /// `partitions[0].share`).
    pub name: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Its default.
    pub default: Value,
    /// Its valid values on their own.
    pub range: Range,
    /// What it accepts, in words (the `expected` of its errors).
    pub expected: &'static str,
    /// One line saying what it does.
    pub doc: &'static str,
    get: fn(&C) -> Value,
    set: fn(&mut C, Value),
}

impl<C> fmt::Debug for Field<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Field")
            .field("name", &self.name)
            .field("unit", &self.unit)
            .field("default", &self.default)
            .field("range", &self.range)
            .finish()
    }
}

impl<C> Field<C> {
    /// The field's value in `c`.
    pub fn get(&self, c: &C) -> Value {
        (self.get)(c)
    }

    /// Convert `input` (durations read with `durations`) and check it against the range.
    pub fn check(&self, input: Input<'_>, durations: DurationUnit) -> Result<Value, Failure> {
        let v = self.convert(input, durations)?;
        self.check_range(v)?;
        Ok(v)
    }

    /// Check an already converted `v` against the field's own range (not against other
    /// fields: that is core's `validate`).
    pub fn check_value(&self, v: Value) -> Result<(), Failure> {
        self.check_range(v)
    }

    /// Store `v` in `c` without any check (for generators and tests that probe core's
    /// own validation).
    pub fn set_unchecked(&self, c: &mut C, v: Value) {
        (self.set)(c, v);
    }

    /// Set the field in `c` to `input` after [`Field::check`].
    pub fn set(&self, c: &mut C, input: Input<'_>, durations: DurationUnit) -> Result<(), Failure> {
        let v = self.check(input, durations)?;
        (self.set)(c, v);
        Ok(())
    }

    fn error(&self, kind: ConfigErrorKind) -> Failure {
        Failure::from(ConfigError::new(self.name, kind, self.expected))
    }

    fn wrong_type(&self) -> Failure {
        Failure::argument(
            GuardsResult::ConfigWrongType,
            self.name,
            self.unit.describe(),
        )
    }

    fn whole(&self, i: i128) -> Result<u64, Failure> {
        if i < 0 {
            return Err(self.error(ConfigErrorKind::Negative));
        }
        u64::try_from(i).map_err(|_| self.error(ConfigErrorKind::OutOfRange))
    }

    fn convert(&self, input: Input<'_>, durations: DurationUnit) -> Result<Value, Failure> {
        match (self.unit, input) {
            (Unit::Count | Unit::Flags(_), Input::Int(i)) => Ok(Value::Uint(self.whole(i)?)),
            (Unit::Duration, Input::Nanos(n)) => Ok(Value::Uint(n)),
            (Unit::Duration, Input::Int(i)) => {
                let ns = self.whole(i)?;
                ns.checked_mul(durations.scale())
                    .map(Value::Uint)
                    .ok_or_else(|| self.error(ConfigErrorKind::OutOfRange))
            }
            (Unit::Duration, Input::Float(f)) => {
                if !f.is_finite() {
                    return Err(self.error(ConfigErrorKind::NotFinite));
                }
                if f < 0.0 {
                    return Err(self.error(ConfigErrorKind::Negative));
                }
                let ns = (f * durations.scale() as f64).round();
                // 2^64 as f64 is exact; at or above it does not fit.
                if ns >= 18_446_744_073_709_551_616.0 {
                    return Err(self.error(ConfigErrorKind::OutOfRange));
                }
                Ok(Value::Uint(ns as u64))
            }
            (Unit::Ratio, Input::Float(f)) => Ok(Value::Float(f)),
            (Unit::Ratio, Input::Int(i)) => Ok(Value::Float(i as f64)),
            (Unit::Bool, Input::Bool(b)) => Ok(Value::Bool(b)),
            (Unit::Enum(names), Input::Str(s)) => names
                .iter()
                .position(|n| *n == s)
                .map(|i| Value::Uint(i as u64))
                .ok_or_else(|| self.error(ConfigErrorKind::OutOfRange)),
            _ => Err(self.wrong_type()),
        }
    }

    fn check_range(&self, v: Value) -> Result<(), Failure> {
        match (self.range, v) {
            (Range::Uint { min, max }, Value::Uint(u)) => {
                check_u64(self.name, u, min, max, self.expected)?;
            }
            (
                Range::Float {
                    min,
                    min_exclusive,
                    max,
                    max_exclusive,
                },
                Value::Float(f),
            ) => {
                if min_exclusive {
                    check_f64_above(self.name, f, min, max, self.expected)?;
                } else {
                    check_f64(self.name, f, min, max, self.expected)?;
                }
                if max_exclusive && f >= max {
                    return Err(self.error(ConfigErrorKind::OutOfRange));
                }
            }
            (Range::Any, _) => {}
            _ => return Err(self.wrong_type()),
        }
        Ok(())
    }
}

/// The schema of a config `C`.
pub struct Schema<C: 'static> {
    /// The config's name (`"circuit_breaker"`, ...): the guard's module name in core.
    pub name: &'static str,
    /// One line saying what it configures.
    pub doc: &'static str,
    /// Its fields, in core's declaration order.
    pub fields: &'static [Field<C>],
    names: &'static str,
    base: fn() -> C,
    validate: fn(&C) -> Result<(), ConfigError>,
}

impl<C> fmt::Debug for Schema<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema")
            .field("name", &self.name)
            .field("fields", &self.fields)
            .finish()
    }
}

/// A config field name as given (truncated to 48 bytes), kept without allocating for the
/// "unknown field" detail.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ShortName {
    bytes: [u8; 48],
    len: u8,
}

impl ShortName {
    fn new(s: &str) -> Self {
        let mut end = s.len().min(48);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0u8; 48];
        if let (Some(dst), Some(src)) = (bytes.get_mut(..end), s.as_bytes().get(..end)) {
            dst.copy_from_slice(src);
        }
        ShortName {
            bytes,
            len: end as u8,
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        let b = self.bytes.get(..usize::from(self.len)).unwrap_or(&[]);
        std::str::from_utf8(b).unwrap_or("")
    }
}

impl fmt::Debug for ShortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<C: Copy> Schema<C> {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&'static Field<C>> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The valid field names, comma-separated.
    pub fn field_names(&self) -> &'static str {
        self.names.trim_end_matches(", ")
    }

    /// The config with every field at its schema default (fields the schema does not
    /// cover keep core's default).
    pub fn defaults(&self) -> C {
        let mut c = (self.base)();
        for f in self.fields {
            (f.set)(&mut c, f.default);
        }
        c
    }

    /// Set field `name` of `c` to `input`: the error names the field (unknown name: the
    /// valid names; wrong type; out of range: the range).
    pub fn set(
        &self,
        c: &mut C,
        name: &str,
        input: Input<'_>,
        durations: DurationUnit,
    ) -> Result<(), Failure> {
        match self.field(name) {
            Some(f) => f.set(c, input, durations),
            None => Err(Failure {
                code: GuardsResult::ConfigUnknownField,
                detail: Detail::UnknownField {
                    config: self.name,
                    given: ShortName::new(name),
                    valid: self.field_names(),
                },
            }),
        }
    }

    /// The defaults with `pairs` applied in order, then validated as a whole by core
    /// (contradictions between fields are reported there).
    pub fn build<'a>(
        &self,
        pairs: impl IntoIterator<Item = (&'a str, Input<'a>)>,
        durations: DurationUnit,
    ) -> Result<C, Failure> {
        let mut c = self.defaults();
        for (name, input) in pairs {
            self.set(&mut c, name, input, durations)?;
        }
        self.validate(&c)?;
        Ok(c)
    }

    /// Core's `validate` of `c`.
    pub fn validate(&self, c: &C) -> Result<(), Failure> {
        (self.validate)(c).map_err(Failure::from)
    }
}

/// How a core field type is stored as a [`Value`].
trait Stored: Sized {
    fn to_value(self) -> Value;
    fn from_value(v: Value) -> Self;
}

impl Stored for u64 {
    fn to_value(self) -> Value {
        Value::Uint(self)
    }
    fn from_value(v: Value) -> Self {
        match v {
            Value::Uint(u) => u,
            _ => 0,
        }
    }
}

impl Stored for u32 {
    fn to_value(self) -> Value {
        Value::Uint(u64::from(self))
    }
    fn from_value(v: Value) -> Self {
        u32::try_from(u64::from_value(v)).unwrap_or(u32::MAX)
    }
}

impl Stored for f64 {
    fn to_value(self) -> Value {
        Value::Float(self)
    }
    fn from_value(v: Value) -> Self {
        match v {
            Value::Float(f) => f,
            _ => f64::NAN,
        }
    }
}

impl Stored for bool {
    fn to_value(self) -> Value {
        Value::Bool(self)
    }
    fn from_value(v: Value) -> Self {
        matches!(v, Value::Bool(true))
    }
}

impl Stored for Nanos {
    fn to_value(self) -> Value {
        Value::Uint(self.0)
    }
    fn from_value(v: Value) -> Self {
        Nanos(u64::from_value(v))
    }
}

impl Stored for RefusalKinds {
    fn to_value(self) -> Value {
        Value::Uint(u64::from(self.0))
    }
    fn from_value(v: Value) -> Self {
        RefusalKinds(u8::try_from(u64::from_value(v)).unwrap_or(u8::MAX))
    }
}

/// Enums stored as their index in the schema's name list.
macro_rules! stored_enum {
    ($t:ty, [$($variant:path),+ $(,)?]) => {
        impl Stored for $t {
            fn to_value(self) -> Value {
                let all = [$($variant),+];
                Value::Uint(all.iter().position(|v| *v == self).unwrap_or(0) as u64)
            }
            fn from_value(v: Value) -> Self {
                let all = [$($variant),+];
                usize::try_from(u64::from_value(v))
                    .ok()
                    .and_then(|i| all.get(i).copied())
                    .unwrap_or(all[0])
            }
        }
    };
}

stored_enum!(WindowKind, [WindowKind::Count, WindowKind::Time]);
stored_enum!(
    Jitter,
    [
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated
    ]
);
stored_enum!(
    UnkeyedSideEffects,
    [
        UnkeyedSideEffects::Never,
        UnkeyedSideEffects::RetryThrottled
    ]
);

const WINDOW_KINDS: Unit = Unit::Enum(&["count", "time"]);
const JITTERS: Unit = Unit::Enum(&["none", "full", "equal", "decorrelated"]);
const SIDE_EFFECTS: Unit = Unit::Enum(&["never", "retry_throttled"]);
const REFUSAL_KINDS: Unit = Unit::Flags(&[
    "breaker_open",
    "bulkhead_full",
    "budget_exhausted",
    "throttled",
    "timeout",
    "overloaded",
    "failed",
]);

use Unit::{Bool as BOOL, Count as COUNT, Duration as DURATION, Ratio as RATIO};
use Value::{Bool as B, Float as F, Uint as U};

macro_rules! schema {
    (
        $(#[$meta:meta])*
        $NAME:ident: $C:ty = $name:literal, $doc:literal;
        $(
            $fname:literal => ($($path:tt)+): $unit:expr, $default:expr, $range:expr,
            $expected:literal, $fdoc:literal;
        )+
    ) => {
        $(#[$meta])*
        pub static $NAME: Schema<$C> = Schema {
            name: $name,
            doc: $doc,
            fields: &[$(
                Field {
                    name: $fname,
                    unit: $unit,
                    default: $default,
                    range: $range,
                    expected: $expected,
                    doc: $fdoc,
                    get: |c: &$C| Stored::to_value(c.$($path)+),
                    set: |c: &mut $C, v: Value| c.$($path)+ = Stored::from_value(v),
                },
            )+],
            names: concat!($($fname, ", ",)+),
            base: <$C as Default>::default,
            validate: <$C>::validate,
        };
    };
}

mod cb {
    pub(super) use guards_core::circuit_breaker::*;
}

schema! {
    /// [`CircuitBreakerConfig`].
    CIRCUIT_BREAKER: CircuitBreakerConfig = "circuit_breaker", "when a breaker opens, how long, and how it probes";
    "window_kind" => (window_kind): WINDOW_KINDS, U(cb::DEFAULT_WINDOW_KIND as u64), Range::Any,
        "\"count\" or \"time\"", "judge the last N calls (count) or the last T (time)";
    "window_size" => (window_size): COUNT, U(cb::DEFAULT_WINDOW_SIZE), uint(1, cb::MAX_WINDOW_SIZE),
        "1..=65536 calls", "count window: how many recent outcomes are judged";
    "window_duration" => (window_duration): DURATION, U(cb::DEFAULT_WINDOW_DURATION.0),
        uint(1_000, cb::MAX_WINDOW_DURATION.0),
        "1 µs..=366 days, a whole multiple of window_buckets", "time window: how far back outcomes count";
    "window_buckets" => (window_buckets): COUNT, U(cb::DEFAULT_WINDOW_BUCKETS), uint(1, cb::MAX_WINDOW_BUCKETS),
        "1..=21845 buckets", "time window: buckets the duration is split into";
    "failure_rate_threshold" => (failure_rate_threshold): RATIO, F(cb::DEFAULT_FAILURE_RATE_THRESHOLD),
        float_above(0.0, 1.0), "a fraction in 0.0 < x <= 1.0", "open at this failure rate";
    "slow_call_duration" => (slow_call_duration): DURATION, U(cb::DEFAULT_SLOW_CALL_DURATION.0),
        uint(1, u64::MAX), "at least 1 ns (the largest value: never slow)", "a call at least this long is slow";
    "slow_call_rate_threshold" => (slow_call_rate_threshold): RATIO, F(cb::DEFAULT_SLOW_CALL_RATE_THRESHOLD),
        float_above(0.0, 1.0), "a fraction in 0.0 < x <= 1.0", "open at this slow-call rate";
    "minimum_calls" => (minimum_calls): COUNT, U(cb::DEFAULT_MINIMUM_CALLS), uint(0, cb::MAX_MINIMUM_CALLS),
        "0 (automatic) ..=1e9 calls", "calls needed before rates are judged (0: 10, or a smaller count window whole)";
    "open_duration" => (open_duration): DURATION, U(cb::DEFAULT_OPEN_DURATION.0),
        uint(1_000, cb::MAX_OPEN_DURATION.0), "1 µs..=366 days, at most max_open_duration",
        "how long it stays open the first time";
    "open_duration_multiplier" => (open_duration_multiplier): RATIO, F(cb::DEFAULT_OPEN_DURATION_MULTIPLIER),
        float(1.0, cb::MAX_OPEN_DURATION_MULTIPLIER), "1.0..=100.0", "growth per consecutive re-opening";
    "max_open_duration" => (max_open_duration): DURATION, U(cb::DEFAULT_MAX_OPEN_DURATION.0),
        uint(1_000, cb::MAX_OPEN_DURATION.0), "open_duration..=366 days", "cap on the grown open duration";
    "half_open_probes" => (half_open_probes): COUNT, U(cb::DEFAULT_HALF_OPEN_PROBES),
        uint(1, cb::MAX_HALF_OPEN_PROBES), "1..=1000 probes", "probes admitted while half-open";
    "probe_timeout" => (probe_timeout): DURATION, U(cb::DEFAULT_PROBE_TIMEOUT.0), uint(1, u64::MAX),
        "at least 1 ns", "the timeout each probe is told to use";
}

schema! {
    /// [`BulkheadConfig`].
    BULKHEAD: BulkheadConfig = "bulkhead", "a fixed cap on calls in flight";
    "max_concurrent" => (max_concurrent): COUNT, U(guards_core::bulkhead::DEFAULT_MAX_CONCURRENT),
        uint(1, guards_core::bulkhead::MAX_CONCURRENT_LIMIT), "1..=4294967295 calls",
        "how many calls may be in flight at once";
}

mod dl {
    pub(super) use guards_core::deadline::*;
}

schema! {
    /// [`DeadlineConfig`].
    DEADLINE: DeadlineConfig = "deadline", "the per-attempt budget taken from a deadline";
    "attempt_timeout" => (attempt_timeout): DURATION, U(dl::DEFAULT_ATTEMPT_TIMEOUT.0),
        uint(1, dl::MAX_ATTEMPT_TIMEOUT.0), "1 ns..=86400 s", "the longest one attempt may take";
    "margin" => (margin): DURATION, U(dl::DEFAULT_MARGIN.0), uint(0, dl::MAX_ATTEMPT_TIMEOUT.0 - 1),
        "0..attempt_timeout", "kept back from the time left, for the answer to travel";
}

mod bo {
    pub(super) use guards_core::backoff::*;
}

schema! {
    /// [`BackoffConfig`].
    BACKOFF: BackoffConfig = "backoff", "capped exponential backoff with jitter";
    "base" => (base): DURATION, U(bo::DEFAULT_BASE.0), uint(1, bo::MAX_DELAY.0), "1 ns..=86400 s",
        "the first delay before jitter";
    "cap" => (cap): DURATION, U(bo::DEFAULT_CAP.0), uint(1, bo::MAX_DELAY.0), "1 ns..=86400 s, at least base",
        "the largest delay before jitter";
    "multiplier" => (multiplier): RATIO, F(bo::DEFAULT_MULTIPLIER), float(1.0, bo::MAX_MULTIPLIER),
        "1.0..=100.0", "growth per attempt";
    "jitter" => (jitter): JITTERS, U(bo::DEFAULT_JITTER as u64), Range::Any,
        "\"none\", \"full\", \"equal\" or \"decorrelated\"", "how the delay is randomised";
}

mod rp {
    pub(super) use guards_core::retry_policy::*;
}

schema! {
    /// [`RetryPolicyConfig`].
    RETRY_POLICY: RetryPolicyConfig = "retry_policy", "which failures are retried, how often and after how long";
    "max_attempts" => (max_attempts): COUNT, U(rp::DEFAULT_MAX_ATTEMPTS as u64),
        uint(1, rp::MAX_ATTEMPTS_LIMIT as u64), "1..=100", "attempts in all, the first included";
    "retry_timeouts" => (retry_timeouts): BOOL, B(true), Range::Any, "true or false", "retry after a timeout";
    "retry_connection_errors" => (retry_connection_errors): BOOL, B(true), Range::Any, "true or false",
        "retry after a connection error";
    "retry_other_transient" => (retry_other_transient): BOOL, B(true), Range::Any, "true or false",
        "retry after another transient error";
    "retry_throttled" => (retry_throttled): BOOL, B(true), Range::Any, "true or false",
        "retry after being throttled";
    "honor_retry_after" => (honor_retry_after): BOOL, B(true), Range::Any, "true or false",
        "wait at least the server's Retry-After";
    "max_retry_after" => (max_retry_after): DURATION, U(rp::DEFAULT_MAX_RETRY_AFTER.0), uint(0, rp::MAX_WAIT.0),
        "0..=86400 s", "give up rather than wait a longer Retry-After";
    "min_attempt_time" => (min_attempt_time): DURATION, U(rp::DEFAULT_MIN_ATTEMPT_TIME.0), uint(0, rp::MAX_WAIT.0),
        "0..=86400 s", "do not start an attempt with less time left";
    "unkeyed_side_effects" => (unkeyed_side_effects): SIDE_EFFECTS, U(0), Range::Any,
        "\"never\" or \"retry_throttled\"", "whether a call with side effects and no idempotency key is retried";
    "backoff.base" => (backoff.base): DURATION, U(bo::DEFAULT_BASE.0), uint(1, bo::MAX_DELAY.0), "1 ns..=86400 s",
        "the first delay before jitter";
    "backoff.cap" => (backoff.cap): DURATION, U(bo::DEFAULT_CAP.0), uint(1, bo::MAX_DELAY.0),
        "1 ns..=86400 s, at least base", "the largest delay before jitter";
    "backoff.multiplier" => (backoff.multiplier): RATIO, F(bo::DEFAULT_MULTIPLIER), float(1.0, bo::MAX_MULTIPLIER),
        "1.0..=100.0", "growth per attempt";
    "backoff.jitter" => (backoff.jitter): JITTERS, U(bo::DEFAULT_JITTER as u64), Range::Any,
        "\"none\", \"full\", \"equal\" or \"decorrelated\"", "how the delay is randomised";
}

mod rb {
    pub(super) use guards_core::retry_budget::*;
}

schema! {
    /// [`TokenBudgetConfig`].
    TOKEN_BUDGET: TokenBudgetConfig = "token_budget", "a retry token bucket filled by first attempts";
    "capacity" => (capacity): RATIO, F(rb::DEFAULT_TOKEN_CAPACITY), float(1.0, 1e9),
        "a number of tokens in 1.0..=1e9", "the burst of retries allowed at once";
    "ratio" => (ratio): RATIO, F(rb::DEFAULT_TOKEN_RATIO), float(0.0, 1000.0),
        "0.0 or a number of tokens in 0.000001..=1000.0", "tokens earned per first attempt";
}

schema! {
    /// [`GrpcThrottleConfig`].
    GRPC_THROTTLE: GrpcThrottleConfig = "grpc_throttle", "gRPC retry throttling";
    "max_tokens" => (max_tokens): RATIO, F(rb::DEFAULT_GRPC_MAX_TOKENS), float_above(0.0, 1000.0),
        "a number of tokens in 0.001..=1000.0 (three decimals)", "tokens held; retries stop at half";
    "token_ratio" => (token_ratio): RATIO, F(rb::DEFAULT_GRPC_TOKEN_RATIO), float_above(0.0, 1000.0),
        "a number of tokens in 0.001..=1000.0 (three decimals)", "tokens added per success";
}

schema! {
    /// [`AwsRetryQuotaConfig`].
    AWS_RETRY_QUOTA: AwsRetryQuotaConfig = "aws_retry_quota", "the AWS SDK retry quota";
    "capacity" => (capacity): COUNT, U(rb::DEFAULT_AWS_CAPACITY), uint(1, 1_000_000_000),
        "a whole number of tokens in 1..=1_000_000_000", "size of the bucket";
    "transient_cost" => (transient_cost): COUNT, U(rb::DEFAULT_AWS_TRANSIENT_COST), uint(0, 1_000_000_000),
        "a whole number of tokens in 0..=capacity", "cost of a retry after a transient error";
    "timeout_cost" => (timeout_cost): COUNT, U(rb::DEFAULT_AWS_TIMEOUT_COST), uint(0, 1_000_000_000),
        "a whole number of tokens in 0..=capacity", "cost of a retry after a timeout";
    "throttled_cost" => (throttled_cost): COUNT, U(rb::DEFAULT_AWS_THROTTLED_COST), uint(0, 1_000_000_000),
        "a whole number of tokens in 0..=capacity", "cost of a retry after throttling";
    "hedge_cost" => (hedge_cost): COUNT, U(rb::DEFAULT_AWS_HEDGE_COST), uint(0, 1_000_000_000),
        "a whole number of tokens in 0..=capacity", "cost of a hedge";
    "success_increment" => (success_increment): COUNT, U(rb::DEFAULT_AWS_SUCCESS_INCREMENT),
        uint(0, 1_000_000_000), "a whole number of tokens in 0..=capacity",
        "tokens added when a call succeeds first time";
}

schema! {
    /// [`WindowedBudgetConfig`].
    WINDOWED_BUDGET: WindowedBudgetConfig = "windowed_budget", "retries as a share of recent requests";
    "ttl" => (ttl): DURATION, U(rb::DEFAULT_WINDOW_TTL.0), uint(1_000_000, 60_000_000_000),
        "a duration in 1 ms..=60 s", "how long deposits and withdrawals count";
    "min_retries_per_sec" => (min_retries_per_sec): RATIO, F(rb::DEFAULT_MIN_RETRIES_PER_SEC), float(0.0, 1e6),
        "retries a second in 0.0..=1e6", "retries a second allowed with no requests";
    "percent_can_retry" => (percent_can_retry): RATIO, F(rb::DEFAULT_PERCENT_CAN_RETRY), float(0.0, 1000.0),
        "0.0 or a fraction in 0.000001..=1000.0", "retries allowed per request deposited";
}

mod lt {
    pub(super) use guards_core::latency_tracker::*;
}

schema! {
    /// [`LatencyTrackerConfig`].
    LATENCY_TRACKER: LatencyTrackerConfig = "latency_tracker", "streaming latency percentiles and timeout proposals";
    "window" => (window): DURATION, U(lt::DEFAULT_WINDOW.0), uint(lt::MIN_WINDOW.0, lt::MAX_WINDOW.0),
        "1 s..=1 day", "how far back samples count";
    "timeout_quantile" => (timeout_quantile): RATIO, F(lt::DEFAULT_TIMEOUT_QUANTILE), float_above(0.0, 1.0),
        "0.0 < q <= 1.0", "the quantile a proposed timeout is based on";
    "timeout_factor" => (timeout_factor): RATIO, F(lt::DEFAULT_TIMEOUT_FACTOR), float(1.0, 100.0),
        "1.0..=100.0", "proposed timeout = factor × that quantile";
    "min_samples" => (min_samples): COUNT, U(lt::DEFAULT_MIN_SAMPLES), uint(1, 1_000_000_000_000),
        "1..=10^12", "samples needed before a timeout is proposed";
}

mod hd {
    pub(super) use guards_core::hedging::*;
}

schema! {
    /// [`HedgingConfig`].
    HEDGING: HedgingConfig = "hedging", "when to send a hedge";
    "delay_quantile" => (delay_quantile): RATIO, F(hd::DEFAULT_DELAY_QUANTILE), float_above(0.0, 1.0),
        "0.0 < q <= 1.0", "hedge a call slower than this quantile";
    "min_delay" => (min_delay): DURATION, U(hd::DEFAULT_MIN_DELAY.0), uint(0, 3_600_000_000_000),
        "0..=1 h", "floor on the hedge delay";
    "max_delay" => (max_delay): DURATION, U(hd::DEFAULT_MAX_DELAY.0), uint(0, 3_600_000_000_000),
        "min_delay..=1 h", "ceiling on the hedge delay";
    "max_hedges" => (max_hedges): COUNT, U(hd::DEFAULT_MAX_HEDGES as u64), uint(0, 16), "0..=16",
        "most hedges per request (0: off)";
    "min_samples" => (min_samples): COUNT, U(hd::DEFAULT_MIN_SAMPLES), uint(1, 1_000_000_000), "1..=10^9",
        "samples needed before any hedge";
    "refresh_interval" => (refresh_interval): DURATION, U(hd::DEFAULT_REFRESH_INTERVAL.0),
        uint(0, 60_000_000_000), "0..=1 min", "how often the cached delay is recomputed";
    "tracker.window" => (tracker.window): DURATION, U(lt::DEFAULT_WINDOW.0),
        uint(lt::MIN_WINDOW.0, lt::MAX_WINDOW.0), "1 s..=1 day", "how far back samples count";
    "tracker.timeout_quantile" => (tracker.timeout_quantile): RATIO, F(lt::DEFAULT_TIMEOUT_QUANTILE),
        float_above(0.0, 1.0), "0.0 < q <= 1.0", "the quantile a proposed timeout is based on";
    "tracker.timeout_factor" => (tracker.timeout_factor): RATIO, F(lt::DEFAULT_TIMEOUT_FACTOR),
        float(1.0, 100.0), "1.0..=100.0", "proposed timeout = factor × that quantile";
    "tracker.min_samples" => (tracker.min_samples): COUNT, U(lt::DEFAULT_MIN_SAMPLES),
        uint(1, 1_000_000_000_000), "1..=10^12", "samples needed before a timeout is proposed";
}

mod at {
    pub(super) use guards_core::adaptive_throttle::*;
}

schema! {
    /// [`AdaptiveThrottleConfig`].
    ADAPTIVE_THROTTLE: AdaptiveThrottleConfig = "adaptive_throttle", "client-side rejection probability";
    "window" => (window): DURATION, U(at::DEFAULT_WINDOW.0), uint(1_000_000_000, 3_600_000_000_000),
        "1 s..=1 h", "how far back requests and accepts count";
    "k" => (k): RATIO, F(at::DEFAULT_K), float(1.0, 1000.0), "1.0..=1000.0",
        "requests allowed per accept before rejecting";
    "aggression" => (aggression): RATIO, F(at::DEFAULT_AGGRESSION), float(1.0, 100.0), "1.0..=100.0",
        "how steeply the probability rises";
    "max_reject_probability" => (max_reject_probability): RATIO, F(at::DEFAULT_MAX_REJECT_PROBABILITY),
        float(0.0, 1.0), "0.0..=1.0", "cap on the rejection probability";
    "min_requests" => (min_requests): COUNT, U(at::DEFAULT_MIN_REQUESTS), uint(0, 1_000_000_000_000),
        "0..=10^12", "requests in the window before any rejection";
    "count_rejected" => (count_rejected): BOOL, B(at::DEFAULT_COUNT_REJECTED), Range::Any, "true or false",
        "count locally rejected requests as requests";
    "seed" => (seed): COUNT, U(at::DEFAULT_SEED), uint(0, u64::MAX), "any 64-bit number",
        "seed of the rejection draws";
}

mod bw {
    pub(super) use guards_core::brownout::*;
}

schema! {
    /// [`BrownoutConfig`].
    BROWNOUT: BrownoutConfig = "brownout", "fallback or fail fast, per operation";
    "optional" => (optional): BOOL, B(bw::DEFAULT_OPTIONAL), Range::Any, "true or false",
        "the operation is optional: serve its fallback when refused";
    "exempt" => (exempt): BOOL, B(bw::DEFAULT_EXEMPT), Range::Any, "true or false",
        "local refusals let the call proceed";
    "fallback_on" => (fallback_on): REFUSAL_KINDS, U(bw::DEFAULT_FALLBACK_ON.0 as u64), uint(0, 0x7F),
        "a subset of the 7 refusal kinds (bits 0..=6)", "which refusals serve the fallback";
}

mod qd {
    pub(super) use guards_core::queue_discipline::*;
}

schema! {
    /// [`QueueDisciplineConfig`].
    QUEUE_DISCIPLINE: QueueDisciplineConfig = "queue_discipline", "who gets the next free slot";
    "capacity" => (capacity): COUNT, U(qd::DEFAULT_CAPACITY as u64), uint(1, qd::MAX_CAPACITY as u64),
        "1..=65536", "waiters that may wait at once";
    "interval" => (interval): DURATION, U(qd::DEFAULT_INTERVAL.0), uint(0, qd::MAX_DURATION.0),
        "0..=3600 s", "non-empty this long = standing";
    "target" => (target): DURATION, U(qd::DEFAULT_TARGET.0), uint(0, qd::MAX_DURATION.0),
        "0..=interval", "age limit while standing";
    "lifo" => (lifo): BOOL, B(qd::DEFAULT_LIFO), Range::Any, "true or false", "serve newest first while standing";
    "codel" => (codel): BOOL, B(qd::DEFAULT_CODEL), Range::Any, "true or false", "drop waiters past the age limit";
    "priority" => (priority): BOOL, B(qd::DEFAULT_PRIORITY), Range::Any, "true or false",
        "serve more important classes first";
}

mod lm {
    pub(super) use guards_core::limit::*;
}

schema! {
    /// [`AimdConfig`].
    AIMD: AimdConfig = "aimd", "additive increase, multiplicative decrease";
    "initial_limit" => (initial_limit): COUNT, U(lm::aimd::DEFAULT_INITIAL_LIMIT), uint(1, lm::MAX_LIMIT),
        "1..=1000000, within min_limit..=max_limit", "the limit before any sample";
    "min_limit" => (min_limit): COUNT, U(lm::aimd::DEFAULT_MIN_LIMIT), uint(1, lm::MAX_LIMIT), "1..=1000000",
        "the limit never goes below";
    "max_limit" => (max_limit): COUNT, U(lm::aimd::DEFAULT_MAX_LIMIT), uint(1, lm::MAX_LIMIT),
        "1..=1000000, at least min_limit", "the limit never goes above";
    "backoff_ratio" => (backoff_ratio): RATIO, F(lm::aimd::DEFAULT_BACKOFF_RATIO), float_open(0.0, 1.0),
        "0.0 < backoff_ratio < 1.0", "the limit is multiplied by this on a drop";
    "interval" => (interval): DURATION, U(lm::aimd::DEFAULT_INTERVAL.0), uint(1, 86_400_000_000_000),
        "1 ns..=1 day", "at most one change per interval";
    "latency_target" => (latency_target): DURATION, U(lm::aimd::DEFAULT_LATENCY_TARGET.0), uint(1, u64::MAX),
        "1 ns.. (the largest value: no target)", "an RTT above this counts as a drop";
}

schema! {
    /// [`VegasConfig`].
    VEGAS: VegasConfig = "vegas", "a limit from the queue estimated from RTT";
    "initial_limit" => (initial_limit): COUNT, U(lm::vegas::DEFAULT_INITIAL_LIMIT), uint(1, lm::MAX_LIMIT),
        "1..=1000000, within min_limit..=max_limit", "the limit before any sample";
    "min_limit" => (min_limit): COUNT, U(lm::vegas::DEFAULT_MIN_LIMIT), uint(1, lm::MAX_LIMIT), "1..=1000000",
        "the limit never goes below";
    "max_limit" => (max_limit): COUNT, U(lm::vegas::DEFAULT_MAX_LIMIT), uint(1, lm::MAX_LIMIT),
        "1..=1000000, at least min_limit", "the limit never goes above";
    "smoothing" => (smoothing): RATIO, F(lm::vegas::DEFAULT_SMOOTHING), float_above(0.0, 1.0),
        "0.0 < smoothing <= 1.0", "weight of a new estimate";
    "alpha" => (alpha): RATIO, F(lm::vegas::DEFAULT_ALPHA), float(0.0, 1000.0), "0.0..=1000.0",
        "grow while the queue is below this";
    "beta" => (beta): RATIO, F(lm::vegas::DEFAULT_BETA), float(0.0, 1000.0), "0.0..=1000.0, at least alpha",
        "shrink while the queue is above this";
    "threshold" => (threshold): RATIO, F(lm::vegas::DEFAULT_THRESHOLD), float(0.0, 1000.0),
        "0.0..=1000.0, at most alpha", "grow fast below this";
    "probe_multiplier" => (probe_multiplier): COUNT, U(lm::vegas::DEFAULT_PROBE_MULTIPLIER),
        uint(1, 1_000_000), "1..=1000000", "probe the minimum RTT every this × limit samples";
    "probe_jitter" => (probe_jitter): RATIO, F(lm::vegas::DEFAULT_PROBE_JITTER), float_below(0.0, 1.0),
        "0.0 <= probe_jitter < 1.0", "random share taken off the probe interval";
    "probe_seed" => (probe_seed): COUNT, U(lm::vegas::DEFAULT_PROBE_SEED), uint(0, u64::MAX),
        "any 64-bit number", "seed of the probe jitter";
}

schema! {
    /// [`GradientConfig`].
    GRADIENT: GradientConfig = "gradient", "a limit from the gradient of long-term over current RTT";
    "initial_limit" => (initial_limit): COUNT, U(lm::gradient::DEFAULT_INITIAL_LIMIT), uint(1, lm::MAX_LIMIT),
        "1..=1000000, within min_limit..=max_limit", "the limit before any sample";
    "min_limit" => (min_limit): COUNT, U(lm::gradient::DEFAULT_MIN_LIMIT), uint(1, lm::MAX_LIMIT),
        "1..=1000000", "the limit never goes below";
    "max_limit" => (max_limit): COUNT, U(lm::gradient::DEFAULT_MAX_LIMIT), uint(1, lm::MAX_LIMIT),
        "1..=1000000, at least min_limit", "the limit never goes above";
    "smoothing" => (smoothing): RATIO, F(lm::gradient::DEFAULT_SMOOTHING), float_above(0.0, 1.0),
        "0.0 < smoothing <= 1.0", "weight of a new estimate";
    "queue_size" => (queue_size): RATIO, F(lm::gradient::DEFAULT_QUEUE_SIZE), float(0.0, 1e6),
        "0.0..=1000000.0", "queue allowed above the estimate";
    "long_window" => (long_window): COUNT, U(lm::gradient::DEFAULT_LONG_WINDOW), uint(1, 1_000_000_000),
        "1..=1000000000", "samples in the long-term RTT average";
    "warmup_samples" => (warmup_samples): COUNT, U(lm::gradient::DEFAULT_WARMUP_SAMPLES),
        uint(1, 1_000_000_000), "1..=1000000000", "samples before the limit moves";
}

mod li {
    pub(super) use guards_core::limiter::*;
}

schema! {
    /// [`LimiterConfig`] (its `limit` is not covered yet: see the module docs).
    LIMITER: LimiterConfig = "limiter", "permits against a (possibly adaptive) limit, by priority";
    "window" => (window): DURATION, U(li::DEFAULT_WINDOW.0), uint(1, 86_400_000_000_000), "1 ns..=1 day",
        "minimum length of a sampling window";
    "min_window_samples" => (min_window_samples): COUNT, U(li::DEFAULT_MIN_WINDOW_SAMPLES), uint(1, 1_000_000),
        "1..=1000000", "samples before a window is folded";
    "partitions[0].share" => (partitions[0].share): RATIO, F(li::DEFAULT_SHARE), float_above(0.0, 1.0),
        "0.0 < share <= 1.0", "share of the limit class 0 may fill";
    "partitions[1].share" => (partitions[1].share): RATIO, F(li::DEFAULT_SHARE), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 0's", "share of the limit class 1 may fill";
    "partitions[2].share" => (partitions[2].share): RATIO, F(li::DEFAULT_SHARE), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 1's", "share of the limit class 2 may fill";
    "partitions[3].share" => (partitions[3].share): RATIO, F(li::DEFAULT_SHARE), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 2's", "share of the limit class 3 may fill";
    "partitions[4].share" => (partitions[4].share): RATIO, F(li::DEFAULT_SHARE), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 3's", "share of the limit class 4 may fill";
    "partitions[5].share" => (partitions[5].share): RATIO, F(li::DEFAULT_SHARE), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 4's", "share of the limit class 5 may fill";
    "partitions[6].share" => (partitions[6].share): RATIO, F(li::DEFAULT_SHARE), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 5's", "share of the limit class 6 may fill";
    "partitions[7].share" => (partitions[7].share): RATIO, F(li::DEFAULT_SHARE), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 6's", "share of the limit class 7 may fill";
    "partitions[0].max_in_flight" => (partitions[0].max_in_flight): COUNT, U(li::DEFAULT_MAX_IN_FLIGHT),
        uint(1, u64::MAX), "1..=2^64-1", "fixed cap on in-flight calls for class 0";
    "partitions[1].max_in_flight" => (partitions[1].max_in_flight): COUNT, U(li::DEFAULT_MAX_IN_FLIGHT),
        uint(1, u64::MAX), "1..=2^64-1, at most class 0's", "fixed cap on in-flight calls for class 1";
    "partitions[2].max_in_flight" => (partitions[2].max_in_flight): COUNT, U(li::DEFAULT_MAX_IN_FLIGHT),
        uint(1, u64::MAX), "1..=2^64-1, at most class 1's", "fixed cap on in-flight calls for class 2";
    "partitions[3].max_in_flight" => (partitions[3].max_in_flight): COUNT, U(li::DEFAULT_MAX_IN_FLIGHT),
        uint(1, u64::MAX), "1..=2^64-1, at most class 2's", "fixed cap on in-flight calls for class 3";
    "partitions[4].max_in_flight" => (partitions[4].max_in_flight): COUNT, U(li::DEFAULT_MAX_IN_FLIGHT),
        uint(1, u64::MAX), "1..=2^64-1, at most class 3's", "fixed cap on in-flight calls for class 4";
    "partitions[5].max_in_flight" => (partitions[5].max_in_flight): COUNT, U(li::DEFAULT_MAX_IN_FLIGHT),
        uint(1, u64::MAX), "1..=2^64-1, at most class 4's", "fixed cap on in-flight calls for class 5";
    "partitions[6].max_in_flight" => (partitions[6].max_in_flight): COUNT, U(li::DEFAULT_MAX_IN_FLIGHT),
        uint(1, u64::MAX), "1..=2^64-1, at most class 5's", "fixed cap on in-flight calls for class 6";
    "partitions[7].max_in_flight" => (partitions[7].max_in_flight): COUNT, U(li::DEFAULT_MAX_IN_FLIGHT),
        uint(1, u64::MAX), "1..=2^64-1, at most class 6's", "fixed cap on in-flight calls for class 7";
    "min_retry_after" => (min_retry_after): DURATION, U(li::DEFAULT_MIN_RETRY_AFTER.0),
        uint(0, 86_400_000_000_000), "0..=1 day", "lower bound of the retry-after hint";
    "max_retry_after" => (max_retry_after): DURATION, U(li::DEFAULT_MAX_RETRY_AFTER.0),
        uint(0, 86_400_000_000_000), "min_retry_after..=1 day", "upper bound of the retry-after hint";
}

mod ad {
    pub(super) use guards_core::admission::*;
}

schema! {
    /// [`AdmissionConfig`] (its `limit` is not covered yet: see the module docs).
    ADMISSION: AdmissionConfig = "admission", "the server refuses at the door, by priority";
    "limits[0]" => (limits[0]): COUNT, U(ad::DEFAULT_LIMITS[0]), uint(1, u64::MAX), "1..=2^64-1",
        "requests in flight admitted for class 0";
    "limits[1]" => (limits[1]): COUNT, U(ad::DEFAULT_LIMITS[1]), uint(1, u64::MAX),
        "1..=2^64-1, at most class 0's", "requests in flight admitted for class 1";
    "limits[2]" => (limits[2]): COUNT, U(ad::DEFAULT_LIMITS[2]), uint(1, u64::MAX),
        "1..=2^64-1, at most class 1's", "requests in flight admitted for class 2";
    "limits[3]" => (limits[3]): COUNT, U(ad::DEFAULT_LIMITS[3]), uint(1, u64::MAX),
        "1..=2^64-1, at most class 2's", "requests in flight admitted for class 3";
    "limits[4]" => (limits[4]): COUNT, U(ad::DEFAULT_LIMITS[4]), uint(1, u64::MAX),
        "1..=2^64-1, at most class 3's", "requests in flight admitted for class 4";
    "limits[5]" => (limits[5]): COUNT, U(ad::DEFAULT_LIMITS[5]), uint(1, u64::MAX),
        "1..=2^64-1, at most class 4's", "requests in flight admitted for class 5";
    "limits[6]" => (limits[6]): COUNT, U(ad::DEFAULT_LIMITS[6]), uint(1, u64::MAX),
        "1..=2^64-1, at most class 5's", "requests in flight admitted for class 6";
    "limits[7]" => (limits[7]): COUNT, U(ad::DEFAULT_LIMITS[7]), uint(1, u64::MAX),
        "1..=2^64-1, at most class 6's", "requests in flight admitted for class 7";
    "shares[0]" => (shares[0]): RATIO, F(ad::DEFAULT_SHARES[0]), float_above(0.0, 1.0),
        "0.0 < share <= 1.0", "share of the adaptive limit class 0 may fill";
    "shares[1]" => (shares[1]): RATIO, F(ad::DEFAULT_SHARES[1]), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 0's", "share of the adaptive limit class 1 may fill";
    "shares[2]" => (shares[2]): RATIO, F(ad::DEFAULT_SHARES[2]), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 1's", "share of the adaptive limit class 2 may fill";
    "shares[3]" => (shares[3]): RATIO, F(ad::DEFAULT_SHARES[3]), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 2's", "share of the adaptive limit class 3 may fill";
    "shares[4]" => (shares[4]): RATIO, F(ad::DEFAULT_SHARES[4]), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 3's", "share of the adaptive limit class 4 may fill";
    "shares[5]" => (shares[5]): RATIO, F(ad::DEFAULT_SHARES[5]), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 4's", "share of the adaptive limit class 5 may fill";
    "shares[6]" => (shares[6]): RATIO, F(ad::DEFAULT_SHARES[6]), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 5's", "share of the adaptive limit class 6 may fill";
    "shares[7]" => (shares[7]): RATIO, F(ad::DEFAULT_SHARES[7]), float_above(0.0, 1.0),
        "0.0 < share <= 1.0, at most class 6's", "share of the adaptive limit class 7 may fill";
    "window" => (window): DURATION, U(ad::DEFAULT_WINDOW.0), uint(1, 86_400_000_000_000), "1 ns..=1 day",
        "minimum length of a sampling window";
    "min_window_samples" => (min_window_samples): COUNT, U(ad::DEFAULT_MIN_WINDOW_SAMPLES), uint(1, 1_000_000),
        "1..=1000000", "samples before a window is folded";
    "min_retry_after" => (min_retry_after): DURATION, U(ad::DEFAULT_MIN_RETRY_AFTER.0),
        uint(0, 86_400_000_000_000), "0..=1 day", "lower bound of the Retry-After answered";
    "max_retry_after" => (max_retry_after): DURATION, U(ad::DEFAULT_MAX_RETRY_AFTER.0),
        uint(0, 86_400_000_000_000), "min_retry_after..=1 day", "upper bound of the Retry-After answered";
}

/// Priority classes a per-priority setting covers (`limits[0]` ..= `limits[7]`).
pub const PRIORITY_CLASSES: usize = guards_core::priority::MAX_PRIORITIES;

/// The values of a per-priority setting (`limits[i]`, `shares[i]`, `partitions[i].share`,
/// `partitions[i].max_in_flight`) when a binding was given a list of fewer than
/// [`PRIORITY_CLASSES`] values, or none for some class: each class without a value takes
/// the value of the class before it (class 0 keeps the default, `None` here). So
/// `limits = [100, 50]` means 100 for class 0 and 50 for classes 1 to 7: the classes a
/// user left out never break the ordering core requires (each class at most the one
/// before), and an error always names an index the user wrote. Values past the last class
/// are ignored (a binding refuses a longer list before calling this).
///
/// ```
/// use guards::schema::{per_priority, Input};
///
/// let got = per_priority(&[Some(Input::Int(100)), Some(Input::Int(50))]);
/// assert_eq!(got[0], Some(Input::Int(100)));
/// assert!(got[1..].iter().all(|v| *v == Some(Input::Int(50))));
/// assert_eq!(per_priority(&[None, Some(Input::Int(7))])[0], None);
/// ```
pub fn per_priority<'a>(given: &[Option<Input<'a>>]) -> [Option<Input<'a>>; PRIORITY_CLASSES] {
    let mut out = [None; PRIORITY_CLASSES];
    let mut last = None;
    for (i, slot) in out.iter_mut().enumerate() {
        if let Some(Some(v)) = given.get(i) {
            last = Some(*v);
        }
        *slot = last;
    }
    out
}

/// The circuit breaker config at the schema's defaults (what `guards_circuit_breaker_config_default`
/// hands C).
pub fn circuit_breaker_defaults() -> CircuitBreakerConfig {
    CIRCUIT_BREAKER.defaults()
}

/// The bulkhead config at the schema's defaults.
pub fn bulkhead_defaults() -> BulkheadConfig {
    BULKHEAD.defaults()
}

/// Call `$mac!(SCHEMA)` for every schema (tests and generators iterate with it).
#[macro_export]
macro_rules! for_each_schema {
    ($mac:ident) => {
        $mac!(CIRCUIT_BREAKER);
        $mac!(BULKHEAD);
        $mac!(DEADLINE);
        $mac!(BACKOFF);
        $mac!(RETRY_POLICY);
        $mac!(TOKEN_BUDGET);
        $mac!(GRPC_THROTTLE);
        $mac!(AWS_RETRY_QUOTA);
        $mac!(WINDOWED_BUDGET);
        $mac!(LATENCY_TRACKER);
        $mac!(HEDGING);
        $mac!(ADAPTIVE_THROTTLE);
        $mac!(BROWNOUT);
        $mac!(QUEUE_DISCIPLINE);
        $mac!(AIMD);
        $mac!(VEGAS);
        $mac!(GRADIENT);
        $mac!(LIMITER);
        $mac!(ADMISSION);
    };
}
