//! Deadlines: the time a request has left, each attempt's own budget, and the two wire
//! forms that carry a deadline to the next hop.
//!
//! A [`Deadline`] is a point in time after which nobody wants the answer (or "none": it
//! never expires). [`DeadlineConfig::attempt_budget`] turns it into the budget of the
//! attempt about to be made, `min(attempt_timeout, time left) − margin`, or tells the
//! caller not to start at all ([`AttemptBudget`]). Between machines the deadline travels as
//! a duration, because clocks on different machines disagree: [`encode_grpc_timeout`] /
//! [`parse_grpc_timeout`] speak gRPC's `grpc-timeout` header, and [`encode_millis`] /
//! [`parse_millis`] a plain integer-milliseconds header such as Envoy's
//! `x-envoy-expected-rq-timeout-ms`.
//!
//! # Why
//!
//! A timeout bounds one attempt; a deadline bounds the whole request. Sending each hop the
//! *attempt's* budget rather than the request's whole time left means a callee stops
//! working when its caller stops waiting, even if the cancel is lost on the way: with a
//! 60 ms attempt timeout, the callee hears "60 ms", never the user's 2 s. And every queue
//! can drop work whose deadline has passed instead of serving nobody.
//!
//! # The attempt budget, exactly
//!
//! With `left = deadline.time_left(now)` (`Nanos::MAX` for no deadline):
//!
//! 1. `left == 0` (now ≥ the deadline) → [`AttemptBudget::Expired`]: don't start.
//! 2. `window = min(attempt_timeout, left)`; if `window <= margin` →
//!    [`AttemptBudget::TooLittleLeft`]: don't start, the attempt would get nothing (this is
//!    the boundary "budget ≤ 0": a budget of exactly zero is not started).
//! 3. Otherwise [`AttemptBudget::Start`] with `budget = window − margin` (at least 1 ns).
//!
//! # Wire forms and rounding
//!
//! Both encoders **round down**: a callee may be told it has *less* time than its caller
//! will wait, never more, so it never keeps working on an answer its caller has abandoned.
//! (Some gRPC implementations round up instead; the difference is below one unit of the
//! chosen precision.)
//!
//! `grpc-timeout` is 1 to 8 ASCII digits followed by one unit letter, case-sensitive:
//! `H` hours, `M` minutes, `S` seconds, `m` milliseconds, `u` microseconds,
//! `n` nanoseconds. [`encode_grpc_timeout`] picks the finest unit, in the order
//! `n, u, m, S, M, H`, whose rounded-down value has at most 8 digits, so the loss is less
//! than one part in 10⁵ of the duration, and zero when it fits exactly. Every [`Nanos`]
//! value is encodable (`u64::MAX` ns is 5,124,095 hours). Zero encodes as `0n` and a value
//! of 0 is accepted when parsing: it means "already expired".
//!
//! [`parse_grpc_timeout`] checks, in this order, and returns the first failure as a
//! [`GrpcTimeoutError`]: empty input → `Empty`; last byte is a digit → `MissingUnit`; last
//! byte is not one of `HMSmun` → `UnknownUnit`; nothing before the unit → `NoDigits`; a
//! byte before the unit that is not `0`–`9` (signs, spaces, dots included) →
//! `InvalidCharacter`; more than 8 digits → `TooManyDigits`; the duration does not fit in
//! `u64` nanoseconds (e.g. `99999999H`) → `Overflow`. Leading zeros are allowed and count
//! as digits. Nothing is trimmed.
//!
//! The milliseconds header is one or more ASCII digits, a whole number of milliseconds.
//! [`encode_millis`] writes `floor(ns / 10⁶)` with no leading zeros (so anything under
//! 1 ms encodes as `0`). [`parse_millis`] returns, in this order: empty → `Empty`; any
//! byte that is not `0`–`9` → `InvalidCharacter`; the value times 10⁶ does not fit in
//! `u64` nanoseconds → `Overflow` ([`MillisError`]). Leading zeros are allowed, at any
//! length.
//!
//! Neither parser panics or allocates on any input.
//!
//! # Counters and concurrency
//!
//! Everything here is a value: `Copy`, no shared state, so there is nothing to count and
//! nothing to synchronise. Count what you *do* with a decision (attempts not started,
//! requests dropped at dequeue) in the guard or queue that acts on it.
//!
//! # Examples
//!
//! ```
//! use guards_core::deadline::{
//!     parse_grpc_timeout, AttemptBudget, Deadline, DeadlineConfig, GrpcTimeoutError,
//! };
//! use guards_core::Nanos;
//!
//! let now = Nanos::from_secs(100);
//! // The app gave this request 2 s; shop-api's attempts to stock get 60 ms minus 1 ms.
//! let request = Deadline::after(now, Nanos::from_secs(2));
//! let per_attempt = DeadlineConfig::new(Nanos::from_millis(60), Nanos::from_millis(1))?;
//! let AttemptBudget::Start { budget } = per_attempt.attempt_budget(request, now) else {
//!     panic!("there is time left")
//! };
//! assert_eq!(budget, Nanos::from_millis(59));
//! // 1.99 s later only 10 ms are left: the attempt gets 9 ms.
//! let later = now.saturating_add(Nanos::from_millis(1_990));
//! assert_eq!(
//!     per_attempt.attempt_budget(request, later),
//!     AttemptBudget::Start { budget: Nanos::from_millis(9) }
//! );
//! // At the deadline: don't start.
//! let at = now.saturating_add(Nanos::from_secs(2));
//! assert_eq!(per_attempt.attempt_budget(request, at), AttemptBudget::Expired);
//!
//! // On the wire, the attempt's budget as a duration.
//! let header = guards_core::deadline::encode_grpc_timeout(budget);
//! assert_eq!(header.as_str(), "59000000n"); // 8 digits of nanoseconds: exact
//! assert_eq!(parse_grpc_timeout("59m"), Ok(budget));
//! assert_eq!(parse_grpc_timeout("5s"), Err(GrpcTimeoutError::UnknownUnit));
//!
//! // A nested call inherits the earlier of two deadlines.
//! let inner = Deadline::after(now, Nanos::from_millis(60));
//! assert_eq!(request.min(inner), inner);
//! assert_eq!(Deadline::NONE.min(inner), inner);
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//!
//! - gRPC, "gRPC over HTTP2" (PROTOCOL-HTTP2.md): the `grpc-timeout` grammar, a value of
//!   at most 8 digits and the six case-sensitive units.
//! - Envoy, router filter docs: `x-envoy-expected-rq-timeout-ms` carries, in integer
//!   milliseconds, the per-try timeout when one is set and otherwise the route timeout.
//! - AWS Builders' Library, "Timeouts, retries, and backoff with jitter": timeouts from
//!   measured latency; the sum of attempts and waits must fit the caller's deadline.
//! - Google SRE book, "Addressing Cascading Failures": propagate deadlines, not fixed
//!   timeouts, and check them before doing work.

use core::fmt;

use crate::error::{check_nanos, inconsistent, ConfigError};
use crate::time::Nanos;

/// The point in time after which an answer is useless, or none.
///
/// Stored as one instant; [`Nanos::MAX`] means "no deadline" (so a deadline that would lie
/// 584 years ahead, or that saturates when computed, is the same as none). Ordered by
/// expiry: earlier deadlines compare less, and none is the greatest.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline {
    expires_at: Nanos,
}

impl Default for Deadline {
    /// [`Deadline::NONE`].
    fn default() -> Self {
        Deadline::NONE
    }
}

impl Deadline {
    /// No deadline: never expires, and its time left is [`Nanos::MAX`].
    pub const NONE: Deadline = Deadline {
        expires_at: Nanos::MAX,
    };

    /// `timeout` after `now` (saturating: an instant past [`Nanos::MAX`] means none).
    #[inline]
    pub const fn after(now: Nanos, timeout: Nanos) -> Deadline {
        Deadline {
            expires_at: now.saturating_add(timeout),
        }
    }

    /// Expires at `instant` (`Nanos::MAX` means none).
    #[inline]
    pub const fn at(instant: Nanos) -> Deadline {
        Deadline {
            expires_at: instant,
        }
    }

    /// Whether this is "no deadline".
    #[inline]
    pub const fn is_none(self) -> bool {
        self.expires_at.0 == u64::MAX
    }

    /// The instant it expires, or `None` for no deadline.
    #[inline]
    pub const fn expires_at(self) -> Option<Nanos> {
        if self.is_none() {
            None
        } else {
            Some(self.expires_at)
        }
    }

    /// Time left at `now`: zero once expired, [`Nanos::MAX`] for no deadline.
    #[inline]
    pub const fn time_left(self, now: Nanos) -> Nanos {
        if self.is_none() {
            Nanos::MAX
        } else {
            self.expires_at.saturating_sub(now)
        }
    }

    /// Whether the deadline has passed at `now` (`now >= expires_at`; never for none).
    #[inline]
    pub const fn is_expired(self, now: Nanos) -> bool {
        !self.is_none() && now.0 >= self.expires_at.0
    }

    /// The earlier of two deadlines: what a nested call inherits. None is later than
    /// every instant.
    #[inline]
    #[must_use]
    pub const fn min(self, other: Deadline) -> Deadline {
        Deadline {
            expires_at: self.expires_at.min_of(other.expires_at),
        }
    }

    /// The budget of an attempt starting at `now` with this deadline; see the
    /// [module docs](self) for the exact rule. Works on any input (no validation needed):
    /// an `attempt_timeout` not above `margin` never starts.
    pub const fn attempt_budget(
        self,
        now: Nanos,
        attempt_timeout: Nanos,
        margin: Nanos,
    ) -> AttemptBudget {
        let left = self.time_left(now);
        if left.is_zero() {
            return AttemptBudget::Expired;
        }
        let window = attempt_timeout.min_of(left);
        if window.0 <= margin.0 {
            return AttemptBudget::TooLittleLeft { left };
        }
        AttemptBudget::Start {
            budget: window.saturating_sub(margin),
        }
    }

    /// The time left at `now` as a `grpc-timeout` value, or `None` for no deadline
    /// (send no header). An expired deadline encodes as `0n`.
    pub fn to_grpc_timeout(self, now: Nanos) -> Option<HeaderValue> {
        if self.is_none() {
            None
        } else {
            Some(encode_grpc_timeout(self.time_left(now)))
        }
    }

    /// The deadline a received `grpc-timeout` value sets, counted from `now` (the local
    /// arrival time).
    pub fn from_grpc_timeout(
        now: Nanos,
        value: impl AsRef<[u8]>,
    ) -> Result<Deadline, GrpcTimeoutError> {
        parse_grpc_timeout(value).map(|timeout| Deadline::after(now, timeout))
    }

    /// The time left at `now` as integer milliseconds (rounded down), or `None` for no
    /// deadline.
    pub fn to_millis(self, now: Nanos) -> Option<HeaderValue> {
        if self.is_none() {
            None
        } else {
            Some(encode_millis(self.time_left(now)))
        }
    }

    /// The deadline a received milliseconds header sets, counted from `now`.
    pub fn from_millis(now: Nanos, value: impl AsRef<[u8]>) -> Result<Deadline, MillisError> {
        parse_millis(value).map(|timeout| Deadline::after(now, timeout))
    }
}

/// Whether to start an attempt, and with what budget.
#[repr(C, u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptBudget {
    /// Start the attempt; give it (and send the callee) `budget`.
    Start {
        /// How long to wait for this attempt: `min(attempt_timeout, left) − margin`.
        budget: Nanos,
    } = 0,
    /// Don't start: the deadline has passed.
    Expired = 1,
    /// Don't start: time is left, but no more than the margin, so the attempt would get a
    /// budget of zero or less.
    TooLittleLeft {
        /// The time that was left.
        left: Nanos,
    } = 2,
}

impl AttemptBudget {
    /// The budget if the attempt should start.
    #[inline]
    pub const fn budget(self) -> Option<Nanos> {
        match self {
            AttemptBudget::Start { budget } => Some(budget),
            _ => None,
        }
    }

    /// Whether the attempt should start.
    #[inline]
    pub const fn should_start(self) -> bool {
        matches!(self, AttemptBudget::Start { .. })
    }

    /// The attempt's own deadline if it starts at `now`: `now + budget`.
    #[inline]
    pub const fn attempt_deadline(self, now: Nanos) -> Option<Deadline> {
        match self {
            AttemptBudget::Start { budget } => Some(Deadline::after(now, budget)),
            _ => None,
        }
    }

    /// Stable snake_case name of the variant: `"start"`, `"expired"`, `"too_little_left"`.
    pub const fn name(self) -> &'static str {
        match self {
            AttemptBudget::Start { .. } => "start",
            AttemptBudget::Expired => "expired",
            AttemptBudget::TooLittleLeft { .. } => "too_little_left",
        }
    }
}

/// The largest [`DeadlineConfig::attempt_timeout`] (and margin) accepted: one day.
pub const MAX_ATTEMPT_TIMEOUT: Nanos = Nanos::from_secs(86_400);

/// Default for [`DeadlineConfig::attempt_timeout`]: 60 ms (Basketly's shop-api → stock
/// timeout from setting C1 in docs/basketly.md, about 2 × the healthy P99.9). Valid range:
/// `1 ns..=MAX_ATTEMPT_TIMEOUT`.
pub const DEFAULT_ATTEMPT_TIMEOUT: Nanos = Nanos::from_millis(60);

/// Default for [`DeadlineConfig::margin`]: 1 ms, for the network and the callee's own
/// bookkeeping. Valid range: `0..attempt_timeout`.
pub const DEFAULT_MARGIN: Nanos = Nanos::from_millis(1);

/// Per-attempt deadline settings: `budget = min(attempt_timeout, time left) − margin`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeadlineConfig {
    /// The longest any single attempt may take. Default [`DEFAULT_ATTEMPT_TIMEOUT`];
    /// valid `1 ns..=MAX_ATTEMPT_TIMEOUT`.
    pub attempt_timeout: Nanos,
    /// Subtracted from every budget so the callee gives up a little before the caller.
    /// Default [`DEFAULT_MARGIN`]; valid `0..attempt_timeout`.
    pub margin: Nanos,
}

impl Default for DeadlineConfig {
    fn default() -> Self {
        DeadlineConfig {
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
            margin: DEFAULT_MARGIN,
        }
    }
}

impl DeadlineConfig {
    /// A validated config.
    pub fn new(attempt_timeout: Nanos, margin: Nanos) -> Result<Self, ConfigError> {
        let config = DeadlineConfig {
            attempt_timeout,
            margin,
        };
        config.validate()?;
        Ok(config)
    }

    /// Check every field; the error names the first bad one (`attempt_timeout`, then
    /// `margin`; a margin not below the timeout is `inconsistent`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_nanos(
            "attempt_timeout",
            self.attempt_timeout,
            Nanos(1),
            MAX_ATTEMPT_TIMEOUT,
            "1 ns..=86400 s",
        )?;
        check_nanos(
            "margin",
            self.margin,
            Nanos::ZERO,
            MAX_ATTEMPT_TIMEOUT,
            "0..attempt_timeout",
        )?;
        if self.margin >= self.attempt_timeout {
            return Err(inconsistent("margin", "margin < attempt_timeout"));
        }
        Ok(())
    }

    /// The budget of an attempt starting at `now` under `deadline` (see the
    /// [module docs](self)).
    #[inline]
    pub const fn attempt_budget(&self, deadline: Deadline, now: Nanos) -> AttemptBudget {
        deadline.attempt_budget(now, self.attempt_timeout, self.margin)
    }
}

/// Room in a [`HeaderValue`]: enough for any `u64` in decimal plus a unit letter.
pub const HEADER_VALUE_CAPACITY: usize = 24;

/// An encoded header value in a small fixed buffer (no allocation). Always ASCII; read it
/// with [`as_str`](Self::as_str), `&*value` (it derefs to `str`) or `Display`.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HeaderValue {
    bytes: [u8; HEADER_VALUE_CAPACITY],
    len: u8,
}

impl HeaderValue {
    const EMPTY: HeaderValue = HeaderValue {
        bytes: [0; HEADER_VALUE_CAPACITY],
        len: 0,
    };

    /// `value` in decimal, then `suffix` if any.
    fn decimal(value: u64, suffix: Option<u8>) -> HeaderValue {
        let mut digits = [0u8; 20];
        let mut count = 0usize;
        let mut v = value;
        loop {
            if let Some(slot) = digits.get_mut(count) {
                *slot = b'0' + (v % 10) as u8;
            }
            count += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        let mut out = HeaderValue::EMPTY;
        for &d in digits.iter().take(count).rev() {
            out.push(d);
        }
        if let Some(s) = suffix {
            out.push(s);
        }
        out
    }

    fn push(&mut self, byte: u8) {
        if let Some(slot) = self.bytes.get_mut(usize::from(self.len)) {
            *slot = byte;
            self.len += 1;
        }
    }

    /// The value as a string slice.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(self.as_bytes()).unwrap_or("")
    }

    /// The value's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// Its length in bytes.
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether it is empty (never, for a value produced by an encoder).
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl core::ops::Deref for HeaderValue {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for HeaderValue {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<[u8]> for HeaderValue {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq<str> for HeaderValue {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for HeaderValue {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Display for HeaderValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for HeaderValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("HeaderValue").field(&self.as_str()).finish()
    }
}

/// The largest `grpc-timeout` value: 8 digits.
pub const GRPC_TIMEOUT_MAX_VALUE: u64 = 99_999_999;

/// A `grpc-timeout` unit. Its discriminant is its wire letter (`b'n'`, `b'u'`, `b'm'`,
/// `b'S'`, `b'M'`, `b'H'`), so `TryFrom<u8>` is [`GrpcTimeoutUnit::from_letter`].
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GrpcTimeoutUnit {
    /// `n`: nanoseconds.
    Nanoseconds = b'n',
    /// `u`: microseconds.
    Microseconds = b'u',
    /// `m`: milliseconds.
    Milliseconds = b'm',
    /// `S`: seconds.
    Seconds = b'S',
    /// `M`: minutes.
    Minutes = b'M',
    /// `H`: hours.
    Hours = b'H',
}

// Declared finest first: `ALL` is the order the encoder tries the units in. The
// discriminants are the wire letters.
named_enum!(GrpcTimeoutUnit {
    Nanoseconds => "nanoseconds",
    Microseconds => "microseconds",
    Milliseconds => "milliseconds",
    Seconds => "seconds",
    Minutes => "minutes",
    Hours => "hours",
});

impl GrpcTimeoutUnit {
    /// Nanoseconds in one of this unit.
    pub const fn nanos(self) -> u64 {
        match self {
            GrpcTimeoutUnit::Nanoseconds => 1,
            GrpcTimeoutUnit::Microseconds => 1_000,
            GrpcTimeoutUnit::Milliseconds => 1_000_000,
            GrpcTimeoutUnit::Seconds => 1_000_000_000,
            GrpcTimeoutUnit::Minutes => 60_000_000_000,
            GrpcTimeoutUnit::Hours => 3_600_000_000_000,
        }
    }

    /// The wire letter.
    pub const fn letter(self) -> u8 {
        self as u8
    }

    /// The unit for a wire letter (case-sensitive), or `None`.
    pub const fn from_letter(letter: u8) -> Option<GrpcTimeoutUnit> {
        match letter {
            b'n' => Some(GrpcTimeoutUnit::Nanoseconds),
            b'u' => Some(GrpcTimeoutUnit::Microseconds),
            b'm' => Some(GrpcTimeoutUnit::Milliseconds),
            b'S' => Some(GrpcTimeoutUnit::Seconds),
            b'M' => Some(GrpcTimeoutUnit::Minutes),
            b'H' => Some(GrpcTimeoutUnit::Hours),
            _ => None,
        }
    }
}

/// Why a `grpc-timeout` value was rejected (checked in declaration order).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GrpcTimeoutError {
    /// The value is empty.
    Empty = 0,
    /// The value ends in a digit: the unit letter is missing.
    MissingUnit = 1,
    /// The last byte is not one of `H M S m u n`.
    UnknownUnit = 2,
    /// There are no digits before the unit.
    NoDigits = 3,
    /// A byte before the unit is not an ASCII digit.
    InvalidCharacter = 4,
    /// More than 8 digits.
    TooManyDigits = 5,
    /// The duration does not fit in `u64` nanoseconds.
    Overflow = 6,
}

named_enum!(GrpcTimeoutError {
    Empty => "empty",
    MissingUnit => "missing_unit",
    UnknownUnit => "unknown_unit",
    NoDigits => "no_digits",
    InvalidCharacter => "invalid_character",
    TooManyDigits => "too_many_digits",
    Overflow => "overflow",
});

impl fmt::Display for GrpcTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            GrpcTimeoutError::Empty => "is empty",
            GrpcTimeoutError::MissingUnit => "has no unit letter",
            GrpcTimeoutError::UnknownUnit => {
                "ends in an unknown unit (expected one of H M S m u n)"
            }
            GrpcTimeoutError::NoDigits => "has no digits before the unit",
            GrpcTimeoutError::InvalidCharacter => "has a character that is not a digit",
            GrpcTimeoutError::TooManyDigits => "has more than 8 digits",
            GrpcTimeoutError::Overflow => "is too long to represent in nanoseconds",
        };
        write!(f, "grpc-timeout value {what}")
    }
}

impl core::error::Error for GrpcTimeoutError {}

/// `timeout` as a `grpc-timeout` value: the finest unit whose rounded-down value fits in 8
/// digits (see the [module docs](self)). Total: every `Nanos` encodes.
pub fn encode_grpc_timeout(timeout: Nanos) -> HeaderValue {
    let ns = timeout.as_u64();
    for unit in GrpcTimeoutUnit::ALL {
        let value = ns / unit.nanos();
        if value <= GRPC_TIMEOUT_MAX_VALUE {
            return HeaderValue::decimal(value, Some(unit.letter()));
        }
    }
    // Not reached: u64::MAX ns is 5,124,095 hours. Kept total without a panic path.
    HeaderValue::decimal(
        GRPC_TIMEOUT_MAX_VALUE,
        Some(GrpcTimeoutUnit::Hours.letter()),
    )
}

/// Parse a `grpc-timeout` value into a duration (see the [module docs](self) for the
/// order of checks). Accepts `&str` or bytes; never panics.
pub fn parse_grpc_timeout(value: impl AsRef<[u8]>) -> Result<Nanos, GrpcTimeoutError> {
    let bytes = value.as_ref();
    let Some((&letter, digits)) = bytes.split_last() else {
        return Err(GrpcTimeoutError::Empty);
    };
    if letter.is_ascii_digit() {
        return Err(GrpcTimeoutError::MissingUnit);
    }
    let Some(unit) = GrpcTimeoutUnit::from_letter(letter) else {
        return Err(GrpcTimeoutError::UnknownUnit);
    };
    if digits.is_empty() {
        return Err(GrpcTimeoutError::NoDigits);
    }
    if !digits.iter().all(u8::is_ascii_digit) {
        return Err(GrpcTimeoutError::InvalidCharacter);
    }
    if digits.len() > 8 {
        return Err(GrpcTimeoutError::TooManyDigits);
    }
    // At most 8 digits: at most 99,999,999, no overflow here.
    let amount = digits
        .iter()
        .fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
    amount
        .checked_mul(unit.nanos())
        .map(Nanos)
        .ok_or(GrpcTimeoutError::Overflow)
}

/// Why a milliseconds header value was rejected (checked in declaration order).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MillisError {
    /// The value is empty.
    Empty = 0,
    /// A byte is not an ASCII digit (signs, spaces and dots included).
    InvalidCharacter = 1,
    /// The duration does not fit in `u64` nanoseconds.
    Overflow = 2,
}

named_enum!(MillisError {
    Empty => "empty",
    InvalidCharacter => "invalid_character",
    Overflow => "overflow",
});

impl fmt::Display for MillisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            MillisError::Empty => "is empty",
            MillisError::InvalidCharacter => "has a character that is not a digit",
            MillisError::Overflow => "is too long to represent in nanoseconds",
        };
        write!(f, "milliseconds header value {what}")
    }
}

impl core::error::Error for MillisError {}

/// `timeout` as whole milliseconds, rounded down, in decimal (`"59"`, `"0"`).
pub fn encode_millis(timeout: Nanos) -> HeaderValue {
    HeaderValue::decimal(timeout.as_millis(), None)
}

/// Parse an integer-milliseconds header value into a duration (see the
/// [module docs](self)). Accepts `&str` or bytes; never panics.
pub fn parse_millis(value: impl AsRef<[u8]>) -> Result<Nanos, MillisError> {
    let bytes = value.as_ref();
    if bytes.is_empty() {
        return Err(MillisError::Empty);
    }
    if !bytes.iter().all(u8::is_ascii_digit) {
        return Err(MillisError::InvalidCharacter);
    }
    let mut millis: u64 = 0;
    for &d in bytes {
        millis = millis
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(d - b'0')))
            .ok_or(MillisError::Overflow)?;
    }
    millis
        .checked_mul(1_000_000)
        .map(Nanos)
        .ok_or(MillisError::Overflow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_never_expires() {
        let d = Deadline::NONE;
        assert!(d.is_none());
        assert_eq!(d.expires_at(), None);
        assert_eq!(d.time_left(Nanos::MAX), Nanos::MAX);
        assert!(!d.is_expired(Nanos::MAX));
        assert_eq!(Deadline::after(Nanos(5), Nanos::MAX), Deadline::NONE);
        assert_eq!(Deadline::default(), Deadline::NONE);
        assert_eq!(d.to_grpc_timeout(Nanos(0)), None);
        assert_eq!(d.to_millis(Nanos(0)), None);
    }

    #[test]
    fn expiry_boundary_is_inclusive() {
        let d = Deadline::at(Nanos(100));
        assert!(!d.is_expired(Nanos(99)));
        assert!(d.is_expired(Nanos(100)));
        assert_eq!(d.time_left(Nanos(99)), Nanos(1));
        assert_eq!(d.time_left(Nanos(150)), Nanos(0));
        assert_eq!(d.expires_at(), Some(Nanos(100)));
        assert_eq!(d.to_grpc_timeout(Nanos(200)).unwrap(), "0n");
    }

    #[test]
    fn budget_boundaries() {
        let d = Deadline::at(Nanos(1_000));
        assert_eq!(
            d.attempt_budget(Nanos(1_000), Nanos(60), Nanos(1)),
            AttemptBudget::Expired
        );
        assert_eq!(
            d.attempt_budget(Nanos(999), Nanos(60), Nanos(1)),
            AttemptBudget::TooLittleLeft { left: Nanos(1) }
        );
        assert_eq!(
            d.attempt_budget(Nanos(998), Nanos(60), Nanos(1)),
            AttemptBudget::Start { budget: Nanos(1) }
        );
        assert_eq!(
            d.attempt_budget(Nanos(0), Nanos(60), Nanos(1)),
            AttemptBudget::Start { budget: Nanos(59) }
        );
        assert_eq!(
            Deadline::NONE.attempt_budget(Nanos::MAX, Nanos(60), Nanos(0)),
            AttemptBudget::Start { budget: Nanos(60) }
        );
        // A timeout not above the margin never starts.
        assert_eq!(
            Deadline::NONE.attempt_budget(Nanos(0), Nanos(5), Nanos(5)),
            AttemptBudget::TooLittleLeft { left: Nanos::MAX }
        );
        let b = AttemptBudget::Start { budget: Nanos(7) };
        assert_eq!(b.attempt_deadline(Nanos(3)), Some(Deadline::at(Nanos(10))));
        assert_eq!(AttemptBudget::Expired.attempt_deadline(Nanos(3)), None);
        assert_eq!(b.name(), "start");
        assert!(!AttemptBudget::Expired.should_start());
    }

    #[test]
    fn config_validation() {
        let e = |t: u64, m: u64| {
            DeadlineConfig::new(Nanos(t), Nanos(m))
                .map(|_| ())
                .unwrap_err()
        };
        assert_eq!(e(0, 0).field(), "attempt_timeout");
        assert_eq!(e(MAX_ATTEMPT_TIMEOUT.0 + 1, 0).field(), "attempt_timeout");
        assert_eq!(e(10, 10).field(), "margin");
        assert_eq!(e(10, 10).kind().name(), "inconsistent");
        assert!(DeadlineConfig::default().validate().is_ok());
    }

    #[test]
    fn grpc_encode_picks_finest_unit_and_rounds_down() {
        let enc = |n: u64| encode_grpc_timeout(Nanos(n));
        assert_eq!(enc(0), "0n");
        assert_eq!(enc(99_999_999), "99999999n");
        assert_eq!(enc(100_000_000), "100000u");
        assert_eq!(enc(100_000_999), "100000u");
        assert_eq!(enc(u64::MAX), "5124095H");
        assert_eq!(
            parse_grpc_timeout(enc(u64::MAX)),
            Ok(Nanos(5_124_095 * 3_600_000_000_000))
        );
    }

    #[test]
    fn grpc_parse_errors() {
        use GrpcTimeoutError::*;
        assert_eq!(parse_grpc_timeout(""), Err(Empty));
        assert_eq!(parse_grpc_timeout("12"), Err(MissingUnit));
        assert_eq!(parse_grpc_timeout("12x"), Err(UnknownUnit));
        assert_eq!(parse_grpc_timeout("S"), Err(NoDigits));
        assert_eq!(parse_grpc_timeout("-1S"), Err(InvalidCharacter));
        assert_eq!(parse_grpc_timeout("123456789S"), Err(TooManyDigits));
        assert_eq!(parse_grpc_timeout("99999999H"), Err(Overflow));
        assert_eq!(parse_grpc_timeout("00000001H"), Ok(Nanos::from_secs(3_600)));
        assert_eq!(
            parse_grpc_timeout(b"7m".as_slice()),
            Ok(Nanos::from_millis(7))
        );
    }

    #[test]
    fn millis_round_trip_and_errors() {
        assert_eq!(encode_millis(Nanos(999_999)), "0");
        assert_eq!(encode_millis(Nanos::from_millis(1_500)), "1500");
        assert_eq!(encode_millis(Nanos::MAX), "18446744073709");
        assert_eq!(parse_millis("0001500"), Ok(Nanos::from_millis(1_500)));
        assert_eq!(parse_millis(""), Err(MillisError::Empty));
        assert_eq!(parse_millis("1.5"), Err(MillisError::InvalidCharacter));
        assert_eq!(parse_millis("18446744073710"), Err(MillisError::Overflow));
        assert_eq!(
            parse_millis("99999999999999999999999"),
            Err(MillisError::Overflow)
        );
        assert_eq!(
            Deadline::from_millis(Nanos(10), "2"),
            Ok(Deadline::at(Nanos(2_000_010)))
        );
    }

    #[test]
    fn header_value_views() {
        let h = encode_millis(Nanos::from_millis(42));
        assert_eq!(&*h, "42");
        assert_eq!(h.len(), 2);
        assert!(!h.is_empty());
        assert_eq!(AsRef::<[u8]>::as_ref(&h), b"42");
    }
}
