//! [`Brownout`]: decide in advance, per operation, what a refused or failed call becomes —
//! a degraded answer from a fallback, a fast honest error, or (for exempt paths) the call
//! anyway.
//!
//! When a guard refuses a call (breaker open, bulkhead full, retry budget exhausted,
//! throttled) or the call fails (timeout, the callee's 503 "overloaded", another error),
//! [`Brownout::on_refusal`] answers from the operation's [`BrownoutConfig`]:
//!
//! - **exempt** operations (load-balancer health checks, emergency paths) are never shed:
//!   when a *local* guard refused them the answer is [`BrownoutDecision::Proceed`] — make
//!   the call anyway. A failure of the call itself can't be undone, so it then falls
//!   through to the rules below;
//! - **optional** operations (a star rating, a stock badge) answer
//!   [`BrownoutDecision::ServeFallback`] for the failure kinds listed in
//!   [`BrownoutConfig::fallback_on`]: serve the page without that part;
//! - everything else is **required** (the cart's items, a checkout's reservation) and gets
//!   [`BrownoutDecision::FailFast`]: a quick error, not a wait.
//!
//! Each operation counts full answers ([`Brownout::on_full`]), degraded answers, errors
//! and exempt pass-throughs, so a dashboard can show how much of the product is browned
//! out right now. [`BrownoutTable`] keeps up to `N` operations in one fixed-capacity,
//! pointer-free table keyed by a 64-bit operation key ([`operation_key`] hashes a name).
//!
//! # Why
//!
//! A guard that refuses a call has only done half the job: something must still answer
//! the user. If an optional widget's failure fails the whole page, the guard has turned a
//! partial outage into a full one. In the Basketly run (setting C8, docs/basketly.md),
//! deciding this per operation turned about 1,190 cart-view errors a second into cart pages
//! without stock badges, while checkouts — required — still failed fast and honestly. Health
//! checks must never be shed: a server that ignores them is taken out of rotation exactly when
//! every server is needed.
//!
//! # Concurrency
//!
//! A decision reads the operation's plain, immutable config and bumps one relaxed
//! counter: lock-free and wait-free. [`BrownoutTable::register`] takes `&mut self`: set the
//! table up before sharing it; lookups are then a linear scan of at most `N` plain keys.
//!
//! # Examples
//! ```
//! use guards_core::brownout::{Brownout, BrownoutConfig, BrownoutDecision, RefusalKind};
//!
//! let badges = Brownout::new(BrownoutConfig { optional: true, ..BrownoutConfig::default() })?;
//! let reserve = Brownout::new(BrownoutConfig::default())?; // required
//! let health = Brownout::new(BrownoutConfig { exempt: true, ..BrownoutConfig::default() })?;
//!
//! assert_eq!(badges.on_refusal(RefusalKind::BreakerOpen), BrownoutDecision::ServeFallback);
//! assert_eq!(reserve.on_refusal(RefusalKind::BreakerOpen), BrownoutDecision::FailFast);
//! assert_eq!(health.on_refusal(RefusalKind::BulkheadFull), BrownoutDecision::Proceed);
//! badges.on_full();
//! let s = badges.stats();
//! assert_eq!((s.full, s.degraded, s.errors), (1, 1, 0));
//! # Ok::<(), guards_core::ConfigError>(())
//! ```
//!
//! # References
//! - C. Klein, M. Maggio, K.-E. Årzén, F. Hernández-Rodriguez, "Brownout: building more
//!   robust cloud applications", ICSE 2014: mark optional content, and drop it under load
//!   to keep the essential answer.
//! - B. Beyer et al. (eds.), *Site Reliability Engineering*, ch. 21–22: serve degraded
//!   responses under overload; exercise the degraded mode, or it will not work when
//!   needed.
//! - Envoy proxy, admission-control filter: health-check requests bypass the filter.
//! - Basketly setting C8 (docs/basketly.md, "C8: a brownout"): per-operation fallback
//!   decided in advance; health checks and emergency
//!   paths exempt from shedding.

use core::fmt;

use crate::counter::Counter;
use crate::error::{inconsistent, ConfigError, ConfigErrorKind};
use crate::outcome::Outcome;

/// Why a call did not produce a full answer.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefusalKind {
    /// A local circuit breaker is open (the call was not sent).
    BreakerOpen = 0,
    /// A local bulkhead or concurrency limit is full (not sent).
    BulkheadFull = 1,
    /// The retry budget refused a retry (not sent).
    BudgetExhausted = 2,
    /// A local throttle or admission check rejected it (not sent).
    Throttled = 3,
    /// The call was sent and timed out.
    Timeout = 4,
    /// The callee answered "overloaded" (503, `RESOURCE_EXHAUSTED`).
    Overloaded = 5,
    /// The call was sent and failed otherwise.
    Failed = 6,
}

named_enum!(RefusalKind {
    BreakerOpen => "breaker_open",
    BulkheadFull => "bulkhead_full",
    BudgetExhausted => "budget_exhausted",
    Throttled => "throttled",
    Timeout => "timeout",
    Overloaded => "overloaded",
    Failed => "failed",
});

impl RefusalKind {
    /// Whether a local guard refused the call before it was sent (so an exempt operation
    /// can still make it).
    pub const fn is_local(self) -> bool {
        matches!(
            self,
            RefusalKind::BreakerOpen
                | RefusalKind::BulkheadFull
                | RefusalKind::BudgetExhausted
                | RefusalKind::Throttled
        )
    }

    /// The refusal kind of a finished call's outcome, or `None` when it never gets a
    /// fallback: the brownout column of the call contract (see [`crate::outcome`]). A
    /// local refusal ([`Outcome::Rejected`]) reads as [`RefusalKind::Throttled`]; prefer the
    /// refusing guard's own `refusal_kind()` (e.g.
    /// [`CircuitBreakerRejected::refusal_kind`](crate::circuit_breaker::CircuitBreakerRejected::refusal_kind))
    /// when it is at hand.
    pub const fn of(outcome: Outcome) -> Option<RefusalKind> {
        outcome.brownout()
    }

    /// This kind's bit in a [`RefusalKinds`] set.
    pub const fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for RefusalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`RefusalKind`]s, one bit each (bit `k as u8`).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RefusalKinds(pub u8);

impl RefusalKinds {
    /// No kind.
    pub const NONE: RefusalKinds = RefusalKinds(0);
    /// Every kind.
    pub const ALL: RefusalKinds = RefusalKinds(0x7F);

    /// The set with `kind` added.
    #[must_use]
    pub const fn with(self, kind: RefusalKind) -> RefusalKinds {
        RefusalKinds(self.0 | kind.bit())
    }

    /// The set with `kind` removed.
    #[must_use]
    pub const fn without(self, kind: RefusalKind) -> RefusalKinds {
        RefusalKinds(self.0 & !kind.bit())
    }

    /// Whether `kind` is in the set.
    pub const fn contains(self, kind: RefusalKind) -> bool {
        self.0 & kind.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl Default for RefusalKinds {
    /// [`RefusalKinds::ALL`].
    fn default() -> Self {
        RefusalKinds::ALL
    }
}

/// What to answer instead of the full result.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use]
pub enum BrownoutDecision {
    /// Serve the fallback: the answer without this optional part.
    ServeFallback = 0,
    /// Fail fast with an error (the operation is required).
    FailFast = 1,
    /// Exempt from shedding: ignore the local guard and make the call.
    Proceed = 2,
}

named_enum!(BrownoutDecision {
    ServeFallback => "serve_fallback",
    FailFast => "fail_fast",
    Proceed => "proceed",
});

impl fmt::Display for BrownoutDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Default for [`BrownoutConfig::optional`]: required.
pub const DEFAULT_OPTIONAL: bool = false;
/// Default for [`BrownoutConfig::exempt`]: not exempt.
pub const DEFAULT_EXEMPT: bool = false;
/// Default for [`BrownoutConfig::fallback_on`]: every kind. Valid: any subset of
/// [`RefusalKinds::ALL`], non-empty when `optional`.
pub const DEFAULT_FALLBACK_ON: RefusalKinds = RefusalKinds::ALL;

/// One operation's brownout policy.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrownoutConfig {
    /// The operation is optional: the page works without it, so a fallback may be served.
    /// Default [`DEFAULT_OPTIONAL`].
    pub optional: bool,
    /// Never shed (health checks, emergency paths): local refusals become
    /// [`BrownoutDecision::Proceed`]. Default [`DEFAULT_EXEMPT`].
    pub exempt: bool,
    /// Which failure kinds may fall back (for an optional operation).
    /// Default [`DEFAULT_FALLBACK_ON`]; any subset of [`RefusalKinds::ALL`], not empty
    /// when `optional`.
    pub fallback_on: RefusalKinds,
}

impl Default for BrownoutConfig {
    fn default() -> Self {
        BrownoutConfig {
            optional: DEFAULT_OPTIONAL,
            exempt: DEFAULT_EXEMPT,
            fallback_on: DEFAULT_FALLBACK_ON,
        }
    }
}

impl BrownoutConfig {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.fallback_on.0 & !RefusalKinds::ALL.0 != 0 {
            return Err(ConfigError::new(
                "fallback_on",
                ConfigErrorKind::OutOfRange,
                "a subset of the 7 refusal kinds (bits 0..=6)",
            ));
        }
        if self.optional && self.fallback_on.is_empty() {
            return Err(inconsistent(
                "fallback_on",
                "at least one kind when `optional` is set",
            ));
        }
        Ok(())
    }

    /// The decision for `kind` under this policy (pure; counts nothing).
    pub const fn decide(&self, kind: RefusalKind) -> BrownoutDecision {
        if self.exempt && kind.is_local() {
            BrownoutDecision::Proceed
        } else if self.optional && self.fallback_on.contains(kind) {
            BrownoutDecision::ServeFallback
        } else {
            BrownoutDecision::FailFast
        }
    }
}

/// Counters of a [`Brownout`] (plain snapshot).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BrownoutStats {
    /// Full answers ([`Brownout::on_full`]).
    pub full: u64,
    /// Degraded answers ([`BrownoutDecision::ServeFallback`]).
    pub degraded: u64,
    /// Errors ([`BrownoutDecision::FailFast`]).
    pub errors: u64,
    /// Exempt calls made despite a local refusal ([`BrownoutDecision::Proceed`]).
    pub proceeded: u64,
}

impl BrownoutStats {
    fn add(self, o: BrownoutStats) -> BrownoutStats {
        BrownoutStats {
            full: self.full.wrapping_add(o.full),
            degraded: self.degraded.wrapping_add(o.degraded),
            errors: self.errors.wrapping_add(o.errors),
            proceeded: self.proceeded.wrapping_add(o.proceeded),
        }
    }
}

/// One operation's brownout policy and counters. Wait-free; see the [module docs](self).
///
/// All bytes zero is a valid `Brownout`: a required, non-exempt operation with no
/// fallback kinds and zeroed counters (it always fails fast); see "Building in place" in the
/// crate docs and [`Brownout::reset`].
#[repr(C)]
#[derive(Debug)]
pub struct Brownout {
    config: BrownoutConfig,
    full: Counter,
    degraded: Counter,
    errors: Counter,
    proceeded: Counter,
}

impl Brownout {
    /// A policy with zeroed counters, or the first invalid config field.
    pub fn new(config: BrownoutConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Brownout {
            config,
            full: Counter::new(),
            degraded: Counter::new(),
            errors: Counter::new(),
            proceeded: Counter::new(),
        })
    }

    /// Validate `config`, then put this policy in exactly the state
    /// [`Brownout::new`]`(config)` gives (zeroed counters), in place. On error nothing
    /// changes.
    pub fn reset(&mut self, config: BrownoutConfig) -> Result<(), ConfigError> {
        config.validate()?;
        self.config = config;
        for c in [
            &mut self.full,
            &mut self.degraded,
            &mut self.errors,
            &mut self.proceeded,
        ] {
            c.reset();
        }
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &BrownoutConfig {
        &self.config
    }

    /// A guard refused the call, or the call failed, with `kind`: what to answer. Counts
    /// the decision.
    #[inline]
    pub fn on_refusal(&self, kind: RefusalKind) -> BrownoutDecision {
        let d = self.config.decide(kind);
        match d {
            BrownoutDecision::ServeFallback => self.degraded.incr(),
            BrownoutDecision::FailFast => self.errors.incr(),
            BrownoutDecision::Proceed => self.proceeded.incr(),
        }
        d
    }

    /// A full answer was served.
    #[inline]
    pub fn on_full(&self) {
        self.full.incr();
    }

    /// How the call ended, by the call contract: a success is a full answer
    /// ([`on_full`](Self::on_full), `None`); an outcome with a refusal kind
    /// ([`RefusalKind::of`]) is decided and counted as [`on_refusal`](Self::on_refusal)
    /// (`Some(decision)`); a permanent error, an ignored error and a cancellation never get a
    /// fallback: `None`, nothing counted, and the caller passes the error on as it is. For a
    /// local refusal, prefer `on_refusal` with the refusing guard's own `refusal_kind()`.
    #[inline]
    pub fn report(&self, outcome: Outcome) -> Option<BrownoutDecision> {
        if outcome.is_success() {
            self.on_full();
            return None;
        }
        RefusalKind::of(outcome).map(|kind| self.on_refusal(kind))
    }

    /// Counter snapshot.
    pub fn stats(&self) -> BrownoutStats {
        BrownoutStats {
            full: self.full.get(),
            degraded: self.degraded.get(),
            errors: self.errors.get(),
            proceeded: self.proceeded.get(),
        }
    }
}

/// A stable 64-bit key for an operation name ([FNV-1a](crate::hash)), e.g.
/// `operation_key("stock.view")`.
pub const fn operation_key(name: &str) -> u64 {
    crate::hash::fnv1a64(name.as_bytes())
}

/// Why [`BrownoutTable::register`] refused an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// The table already holds `N` operations.
    Full,
    /// The key is already registered.
    Duplicate,
    /// The operation's config is invalid.
    Config(ConfigError),
}

impl RegisterError {
    /// Stable snake_case name of the variant: `"full"`, `"duplicate"`, `"config"`.
    pub const fn name(&self) -> &'static str {
        match self {
            RegisterError::Full => "full",
            RegisterError::Duplicate => "duplicate",
            RegisterError::Config(_) => "config",
        }
    }
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::Full => f.write_str("brownout table is full"),
            RegisterError::Duplicate => f.write_str("operation key already registered"),
            RegisterError::Config(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for RegisterError {}

/// Default capacity (`N`) of a [`BrownoutTable`]. Valid range: `1..=1024`.
pub const DEFAULT_TABLE_CAPACITY: usize = 16;

#[repr(C)]
#[derive(Debug)]
struct Slot {
    key: u64,
    op: Brownout,
}

/// Up to `N` operations' brownout policies, keyed by a `u64` (see [`operation_key`]).
/// Fixed capacity, no heap, no pointers. All bytes zero is a valid, empty table (the same
/// as [`BrownoutTable::new`] but for the unused slots' configs, which are never read); see
/// "Building in place" in the crate docs and [`BrownoutTable::reset`].
#[repr(C)]
#[derive(Debug)]
pub struct BrownoutTable<const N: usize = DEFAULT_TABLE_CAPACITY> {
    slots: [Slot; N],
    len: usize,
    unknown: Counter,
}

impl<const N: usize> Default for BrownoutTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> BrownoutTable<N> {
    const SHAPE_OK: () = assert!(N >= 1 && N <= 1_024, "N must be in 1..=1024");

    /// Put this table in exactly the state [`BrownoutTable::new`] gives (no operation, zeroed
    /// counters), in place: every slot is rewritten one by one. A table has no config, so
    /// this cannot fail.
    pub fn reset(&mut self) {
        #[allow(clippy::let_unit_value)]
        let () = Self::SHAPE_OK;
        for slot in &mut self.slots {
            slot.key = 0;
            slot.op.config = BrownoutConfig::default();
            for c in [
                &mut slot.op.full,
                &mut slot.op.degraded,
                &mut slot.op.errors,
                &mut slot.op.proceeded,
            ] {
                c.reset();
            }
        }
        self.len = 0;
        self.unknown.reset();
    }

    /// An empty table.
    pub fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::SHAPE_OK;
        BrownoutTable {
            slots: core::array::from_fn(|_| Slot {
                key: 0,
                op: Brownout {
                    config: BrownoutConfig::default(),
                    full: Counter::new(),
                    degraded: Counter::new(),
                    errors: Counter::new(),
                    proceeded: Counter::new(),
                },
            }),
            len: 0,
            unknown: Counter::new(),
        }
    }

    /// Add operation `key` with `config`; returns its index. Setup only (`&mut self`).
    pub fn register(&mut self, key: u64, config: BrownoutConfig) -> Result<usize, RegisterError> {
        config.validate().map_err(RegisterError::Config)?;
        if self.get(key).is_some() {
            return Err(RegisterError::Duplicate);
        }
        let index = self.len;
        let slot = self.slots.get_mut(index).ok_or(RegisterError::Full)?;
        *slot = Slot {
            key,
            op: Brownout::new(config).map_err(RegisterError::Config)?,
        };
        self.len += 1;
        Ok(index)
    }

    /// Registered operations.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no operation is registered.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn used(&self) -> &[Slot] {
        self.slots.get(..self.len).unwrap_or(&[])
    }

    /// The operation registered under `key`.
    pub fn get(&self, key: u64) -> Option<&Brownout> {
        self.used().iter().find(|s| s.key == key).map(|s| &s.op)
    }

    /// The decision for operation `key`. An unknown key is treated as a required
    /// operation (fail fast) and counted in [`unknown`](Self::unknown).
    #[inline]
    pub fn on_refusal(&self, key: u64, kind: RefusalKind) -> BrownoutDecision {
        match self.get(key) {
            Some(op) => op.on_refusal(kind),
            None => {
                self.unknown.incr();
                BrownoutDecision::FailFast
            }
        }
    }

    /// [`Brownout::report`] for operation `key`. An unknown key is counted in
    /// [`unknown`](Self::unknown) and treated as a required operation
    /// (`Some(FailFast)` for an outcome with a refusal kind).
    #[inline]
    pub fn report(&self, key: u64, outcome: Outcome) -> Option<BrownoutDecision> {
        match self.get(key) {
            Some(op) => op.report(outcome),
            None => {
                self.unknown.incr();
                RefusalKind::of(outcome).map(|_| BrownoutDecision::FailFast)
            }
        }
    }

    /// A full answer was served for `key`; `false` if the key is unknown.
    #[inline]
    pub fn on_full(&self, key: u64) -> bool {
        match self.get(key) {
            Some(op) => {
                op.on_full();
                true
            }
            None => {
                self.unknown.incr();
                false
            }
        }
    }

    /// Decisions and full answers asked for unknown keys.
    pub fn unknown(&self) -> u64 {
        self.unknown.get()
    }

    /// The counters of every registered operation, summed.
    pub fn totals(&self) -> BrownoutStats {
        self.used()
            .iter()
            .fold(BrownoutStats::default(), |acc, s| acc.add(s.op.stats()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_table() {
        let required = BrownoutConfig::default();
        let optional = BrownoutConfig {
            optional: true,
            ..required
        };
        let exempt = BrownoutConfig {
            exempt: true,
            ..required
        };
        let picky = BrownoutConfig {
            optional: true,
            fallback_on: RefusalKinds::NONE.with(RefusalKind::BreakerOpen),
            ..required
        };
        for k in RefusalKind::ALL {
            assert_eq!(required.decide(k), BrownoutDecision::FailFast);
            assert_eq!(optional.decide(k), BrownoutDecision::ServeFallback);
            let want = if k.is_local() {
                BrownoutDecision::Proceed
            } else {
                BrownoutDecision::FailFast
            };
            assert_eq!(exempt.decide(k), want);
        }
        assert_eq!(
            picky.decide(RefusalKind::BreakerOpen),
            BrownoutDecision::ServeFallback
        );
        assert_eq!(
            picky.decide(RefusalKind::Timeout),
            BrownoutDecision::FailFast
        );
    }

    #[test]
    fn names_round_trip() {
        for k in RefusalKind::ALL {
            assert_eq!(RefusalKind::from_name(k.name()), Some(k));
            assert!(RefusalKinds::ALL.contains(k));
            assert!(!RefusalKinds::ALL.without(k).contains(k));
        }
        assert_eq!(RefusalKind::from_name("nope"), None);
    }

    #[test]
    fn config_validation() {
        let e = BrownoutConfig {
            fallback_on: RefusalKinds(0x80),
            ..BrownoutConfig::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(
            (e.field(), e.kind()),
            ("fallback_on", ConfigErrorKind::OutOfRange)
        );
        let e = BrownoutConfig {
            optional: true,
            fallback_on: RefusalKinds::NONE,
            ..BrownoutConfig::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.kind(), ConfigErrorKind::Inconsistent);
    }

    #[test]
    fn table() {
        let mut t: BrownoutTable<2> = BrownoutTable::new();
        let view = operation_key("stock.view");
        let reserve = operation_key("stock.reserve");
        assert_ne!(view, reserve);
        assert_eq!(operation_key(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(operation_key("a"), 0xaf63_dc4c_8601_ec8c);
        let optional = BrownoutConfig {
            optional: true,
            ..BrownoutConfig::default()
        };
        assert_eq!(t.register(view, optional), Ok(0));
        assert_eq!(t.register(view, optional), Err(RegisterError::Duplicate));
        assert_eq!(t.register(reserve, BrownoutConfig::default()), Ok(1));
        assert_eq!(t.register(3, optional), Err(RegisterError::Full));
        assert_eq!(
            t.on_refusal(view, RefusalKind::Timeout),
            BrownoutDecision::ServeFallback
        );
        assert_eq!(
            t.on_refusal(reserve, RefusalKind::Timeout),
            BrownoutDecision::FailFast
        );
        assert_eq!(
            t.on_refusal(99, RefusalKind::Timeout),
            BrownoutDecision::FailFast
        );
        assert!(t.on_full(view));
        assert!(!t.on_full(99));
        assert_eq!(t.unknown(), 2);
        assert_eq!(
            t.totals(),
            BrownoutStats {
                full: 1,
                degraded: 1,
                errors: 1,
                proceeded: 0
            }
        );
        assert_eq!(t.len(), 2);
    }
}
