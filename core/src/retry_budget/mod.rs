//! Retry budgets: may this retry go, or has this client retried enough lately?
//!
//! A cap per request ("at most 3 attempts") multiplies load by the cap exactly when the
//! dependency is failing everything. A budget per client caps retries as a share of the
//! client's traffic instead: a blip that fails a few requests is still retried, while a
//! dependency that fails everything sees about `1 + ratio` times the traffic, not three
//! times. Basketly setting C4 (docs/basketly.md) brings the retries reaching stock down to
//! about 1.1 ×.
//!
//! Four budgets are here, each lock-free on fixed-point atomic state, each a
//! [`RetryGate`] so that a retry policy or hedging can ask
//! any of them:
//!
//! | mode | type | earns | spends | refuses |
//! |---|---|---|---|---|
//! | `token_bucket` | [`TokenBudget`] | `ratio` per first attempt | 1 per retry | below 1 token |
//! | `grpc` | [`GrpcThrottle`] | `token_ratio` per success | 1 per failure | at or below `max_tokens / 2` |
//! | `aws` | [`AwsRetryQuota`] | refund on success; `success_increment` | a cost per cause | below the cost |
//! | `windowed` | [`WindowedBudget`] | `percent_can_retry` per request, for `ttl` | 1 per retry, for `ttl` | below 1 token |
//!
//! [`RetryBudget`] holds any of the four behind one set of verbs ([`RetryBudget::deposit`],
//! [`RetryBudget::withdraw`], [`RetryBudget::on_success`], [`RetryBudget::on_failure`]),
//! chosen by the variant of [`RetryBudgetConfig`]; the bindings and the simulator use it.
//!
//! # Fixed point
//!
//! Balances are whole numbers of **micro-tokens** ([`MICROS_PER_TOKEN`] = 10^6 per token)
//! in one `AtomicU64`. Fractional settings (`ratio`, `capacity`, `percent_can_retry`,
//! `min_retries_per_sec × ttl`) are rounded once, when the budget is built, to the nearest
//! micro-token (half away from zero; gRPC's two settings to the nearest thousandth, its
//! own precision). From then on every operation is integer arithmetic, so results are
//! deterministic and identical in every language, and nothing drifts: ten deposits of
//! `0.1` make exactly one token.
//!
//! # Concurrency
//!
//! Under any interleaving of calls from any number of threads:
//!
//! - the bucket modes keep `0 <= tokens <= capacity` at every instant (every change is a
//!   compare-and-swap from the value it was computed from, never an add-then-correct);
//! - a refused withdrawal writes nothing;
//! - no deposit, withdrawal or refund is lost.
//!
//! The windowed mode gives the same guarantees for its window with the bucket-boundary
//! effects described under "Exactness" in [`WindowedBudget`]. Counters are separate
//! relaxed atomics: a [`RetryBudgetStats`] snapshot is not taken atomically with the balance.
//!
//! # Examples
//! ```
//! use guards_core::retry_budget::{RetryBudget, RetryBudgetConfig, TokenBudgetConfig};
//! use guards_core::retry_policy::RetryCause;
//! use guards_core::Nanos;
//!
//! // Basketly setting C4: 10 tokens, +0.1 per first attempt, 1 per retry.
//! let budget: RetryBudget = RetryBudget::new(RetryBudgetConfig::TokenBucket(
//!     TokenBudgetConfig::default(),
//! ))
//! .unwrap();
//! let now = Nanos::ZERO;
//! budget.deposit(now); // first attempt
//! budget.on_failure(now); // it failed: may we retry?
//! let receipt = budget.withdraw(now, RetryCause::Transient);
//! assert!(receipt.is_some());
//! budget.on_success(now, receipt); // the retry worked
//! assert_eq!(budget.tokens_micros(now), 9_000_000);
//! ```
//!
//! # References
//!
//! - Google SRE book, "Handling Overload": a per-client retry budget of 10 % of requests
//!   limits the growth of load under total failure to about 1.1 ×, where a per-request
//!   cap of 3 attempts allows 3 ×.
//! - gRPC proposal A6, "gRPC Retry Design", section on throttling: per-server token count
//!   starting at `maxTokens`, −1 per failed RPC, +`tokenRatio` per success, retries only
//!   while the count is above `maxTokens / 2`; `maxTokens` in (0, 1000], `tokenRatio`
//!   with up to three decimals.
//! - AWS SDKs, standard retry mode: a retry quota of 500 tokens per client, 5 per retried
//!   transient error, 10 per retried timeout, the cost returned when the retry succeeds, 1
//!   token added per success without a retry; newer SDK versions charge 14 per transient
//!   retry.
//! - Finagle `RetryBudget`: deposits and withdrawals that expire after a TTL (1 s to 60 s,
//!   10 s by default), a percentage of requests that may be retried (20 % by default) and
//!   a minimum number of retries a second (10 by default).
//! - tower's `retry::budget` module for the `deposit` / `withdraw` naming.

mod aws;
mod bucket;
mod grpc;
mod token;
mod windowed;

pub use aws::{
    AwsRetryQuota, AwsRetryQuotaConfig, AWS_NEWER_TRANSIENT_COST, DEFAULT_AWS_CAPACITY,
    DEFAULT_AWS_HEDGE_COST, DEFAULT_AWS_SUCCESS_INCREMENT, DEFAULT_AWS_THROTTLED_COST,
    DEFAULT_AWS_TIMEOUT_COST, DEFAULT_AWS_TRANSIENT_COST,
};
pub use grpc::{
    GrpcThrottle, GrpcThrottleConfig, DEFAULT_GRPC_MAX_TOKENS, DEFAULT_GRPC_TOKEN_RATIO,
};
pub use token::{TokenBudget, TokenBudgetConfig, DEFAULT_TOKEN_CAPACITY, DEFAULT_TOKEN_RATIO};
pub use windowed::{
    WindowedBudget, WindowedBudgetConfig, DEFAULT_BUCKETS, DEFAULT_MIN_RETRIES_PER_SEC,
    DEFAULT_PERCENT_CAN_RETRY, DEFAULT_WINDOW_TTL,
};

use crate::counter::Counter;
use crate::error::ConfigError;
use crate::math;
use crate::outcome::{BudgetVerdict, Outcome};
use crate::retry_policy::{RetryCause, RetryGate};
use crate::time::Nanos;

/// Micro-tokens per token: the fixed-point unit of every balance.
pub const MICROS_PER_TOKEN: u64 = 1_000_000;

/// Round a token amount to the nearest micro-token (half away from zero), saturating.
pub(crate) fn micros_of(tokens: f64) -> u64 {
    math::to_u64_saturating(math::round(tokens * MICROS_PER_TOKEN as f64))
}

/// A micro-token amount as tokens.
pub(crate) fn tokens_of(micros: u64) -> f64 {
    micros as f64 / MICROS_PER_TOKEN as f64
}

/// Count a bucket mode's answer to a withdrawal (`allowed`: a withdrawal, else a refusal)
/// and return it.
#[inline]
pub(crate) fn counted(allowed: bool, withdrawals: &Counter, refusals: &Counter) -> bool {
    if allowed {
        withdrawals.incr();
    } else {
        refusals.incr();
    }
    allowed
}

/// Proof that a retry was allowed, and what it cost.
///
/// An owned, move-only value: not `Clone`, not `Copy`, no borrow of the budget, so it can
/// be held across events and handed back at most once. Hand it back through
/// [`RetryBudget::on_success`] (or [`AwsRetryQuota::refund`]) when the retry succeeds: in
/// the `aws` mode its cost returns to the quota; the other modes ignore it. Dropping it is
/// fine when the retry fails. A receipt must go back to the budget that issued it.
#[must_use = "hand the receipt back on success so the aws mode can refund it"]
#[repr(C)]
#[derive(Debug, PartialEq, Eq)]
pub struct RetryReceipt {
    cost_micros: u64,
}

impl RetryReceipt {
    pub(crate) fn new(cost_micros: u64) -> Self {
        RetryReceipt { cost_micros }
    }

    /// What the retry cost, in micro-tokens (0 in the `grpc` mode, where failures pay).
    pub fn cost_micros(&self) -> u64 {
        self.cost_micros
    }

    /// What the retry cost, in tokens.
    pub fn cost(&self) -> f64 {
        tokens_of(self.cost_micros)
    }
}

/// Counters of a retry budget (every mode uses the same struct).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetryBudgetStats {
    /// Credits recorded: first attempts (`token_bucket`, `windowed`), successes (`grpc`),
    /// successes without a retry (`aws`).
    pub deposits: u64,
    /// Retries allowed.
    pub withdrawals: u64,
    /// Retries refused.
    pub refusals: u64,
    /// Receipts refunded (`aws`; 0 elsewhere).
    pub refunds: u64,
    /// Failures reported (`grpc`; 0 elsewhere).
    pub failures: u64,
}

/// Which budget a [`RetryBudget`] runs.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryBudgetMode {
    /// [`TokenBudget`].
    TokenBucket = 0,
    /// [`GrpcThrottle`].
    Grpc = 1,
    /// [`AwsRetryQuota`].
    Aws = 2,
    /// [`WindowedBudget`].
    Windowed = 3,
}

named_enum!(RetryBudgetMode {
    TokenBucket => "token_bucket",
    Grpc => "grpc",
    Aws => "aws",
    Windowed => "windowed",
});

/// Configuration of a [`RetryBudget`]: the mode and that mode's settings.
#[repr(C, u8)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RetryBudgetConfig {
    /// The per-client token bucket (Basketly's C4).
    TokenBucket(TokenBudgetConfig) = 0,
    /// gRPC retry throttling.
    Grpc(GrpcThrottleConfig) = 1,
    /// The AWS SDK retry quota.
    Aws(AwsRetryQuotaConfig) = 2,
    /// The windowed budget.
    Windowed(WindowedBudgetConfig) = 3,
}

impl Default for RetryBudgetConfig {
    /// Basketly's C4 bucket: [`TokenBudgetConfig::default`].
    fn default() -> Self {
        RetryBudgetConfig::TokenBucket(TokenBudgetConfig::default())
    }
}

impl RetryBudgetConfig {
    /// The mode this config selects.
    pub const fn mode(&self) -> RetryBudgetMode {
        match self {
            RetryBudgetConfig::TokenBucket(_) => RetryBudgetMode::TokenBucket,
            RetryBudgetConfig::Grpc(_) => RetryBudgetMode::Grpc,
            RetryBudgetConfig::Aws(_) => RetryBudgetMode::Aws,
            RetryBudgetConfig::Windowed(_) => RetryBudgetMode::Windowed,
        }
    }

    /// Check every field of the selected mode; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            RetryBudgetConfig::TokenBucket(c) => c.validate(),
            RetryBudgetConfig::Grpc(c) => c.validate(),
            RetryBudgetConfig::Aws(c) => c.validate(),
            RetryBudgetConfig::Windowed(c) => c.validate(),
        }
    }
}

/// Any of the four retry budgets behind one set of verbs.
///
/// The verbs mean the same in every mode; a mode that has no use for one ignores it:
///
/// | verb | `token_bucket` | `grpc` | `aws` | `windowed` |
/// |---|---|---|---|---|
/// | [`deposit`](Self::deposit): a first attempt goes out | +`ratio` | – | – | +1 request |
/// | [`withdraw`](Self::withdraw): may a retry go? | −1 | check only | −cost(cause) | −1 |
/// | [`on_success`](Self::on_success): an attempt succeeded | – | +`token_ratio` | refund or +increment | – |
/// | [`on_failure`](Self::on_failure): an attempt failed, retryably | – | −1 | – | – |
///
/// So a caller that reports every event works with every mode: `deposit` before each
/// first attempt, `on_failure` after each retryable failure, `withdraw` before each retry,
/// `on_success` (with the last retry's receipt, if any) after a success. Simpler still,
/// [`report`](Self::report) every attempt's [`Outcome`] (with its receipt) and the call
/// contract calls `on_success` / `on_failure` for you; the
/// [`RetryDriver`](crate::retry_driver::RetryDriver) does all of it.
///
/// `#[repr(C, u8)]` with the token bucket at discriminant 0: all bytes zero is a valid,
/// unconfigured `RetryBudget` (an empty token bucket of capacity 0, which refuses every
/// retry): safe to call, meant to be [`reset`](RetryBudget::reset) before use; see
/// "Building in place" in the crate docs.
#[repr(C, u8)]
#[derive(Debug)]
pub enum RetryBudget<const BUCKETS: usize = DEFAULT_BUCKETS> {
    /// The per-client token bucket (Basketly's C4).
    TokenBucket(TokenBudget) = 0,
    /// gRPC retry throttling.
    Grpc(GrpcThrottle) = 1,
    /// The AWS SDK retry quota.
    Aws(AwsRetryQuota) = 2,
    /// The windowed budget.
    Windowed(WindowedBudget<BUCKETS>) = 3,
}

impl<const BUCKETS: usize> RetryBudget<BUCKETS> {
    /// Build the budget `config` selects, or return its first invalid field.
    pub fn new(config: RetryBudgetConfig) -> Result<Self, ConfigError> {
        Ok(match config {
            RetryBudgetConfig::TokenBucket(c) => RetryBudget::TokenBucket(TokenBudget::new(c)?),
            RetryBudgetConfig::Grpc(c) => RetryBudget::Grpc(GrpcThrottle::new(c)?),
            RetryBudgetConfig::Aws(c) => RetryBudget::Aws(AwsRetryQuota::new(c)?),
            RetryBudgetConfig::Windowed(c) => RetryBudget::Windowed(WindowedBudget::new(c)?),
        })
    }

    /// Validate `config`, then put this budget in exactly the state
    /// [`RetryBudget::new`]`(config)` gives. Within one mode the mode's own `reset` runs in
    /// place; switching modes writes the new mode's value (for the windowed mode that is
    /// `BUCKETS × 16` bytes, at most 16 KiB). On error nothing changes.
    pub fn reset(&mut self, config: RetryBudgetConfig) -> Result<(), ConfigError> {
        config.validate()?;
        match (&mut *self, config) {
            (RetryBudget::TokenBucket(b), RetryBudgetConfig::TokenBucket(c)) => b.reset(c),
            (RetryBudget::Grpc(b), RetryBudgetConfig::Grpc(c)) => b.reset(c),
            (RetryBudget::Aws(b), RetryBudgetConfig::Aws(c)) => b.reset(c),
            (RetryBudget::Windowed(b), RetryBudgetConfig::Windowed(c)) => b.reset(c),
            (_, config) => {
                *self = RetryBudget::new(config)?;
                Ok(())
            }
        }
    }

    /// The configuration this budget was built with.
    pub fn config(&self) -> RetryBudgetConfig {
        match self {
            RetryBudget::TokenBucket(b) => RetryBudgetConfig::TokenBucket(*b.config()),
            RetryBudget::Grpc(b) => RetryBudgetConfig::Grpc(*b.config()),
            RetryBudget::Aws(b) => RetryBudgetConfig::Aws(*b.config()),
            RetryBudget::Windowed(b) => RetryBudgetConfig::Windowed(*b.config()),
        }
    }

    /// Which mode this budget runs.
    pub fn mode(&self) -> RetryBudgetMode {
        match self {
            RetryBudget::TokenBucket(_) => RetryBudgetMode::TokenBucket,
            RetryBudget::Grpc(_) => RetryBudgetMode::Grpc,
            RetryBudget::Aws(_) => RetryBudgetMode::Aws,
            RetryBudget::Windowed(_) => RetryBudgetMode::Windowed,
        }
    }

    /// A first attempt goes out at `now`.
    #[inline]
    pub fn deposit(&self, now: Nanos) {
        match self {
            RetryBudget::TokenBucket(b) => b.deposit(),
            RetryBudget::Windowed(b) => b.deposit(now),
            RetryBudget::Grpc(_) | RetryBudget::Aws(_) => {}
        }
    }

    /// May a retry (or hedge) caused by `cause` go at `now`? Charges the mode's cost and
    /// returns a receipt, or returns `None` and changes nothing.
    #[inline]
    pub fn withdraw(&self, now: Nanos, cause: RetryCause) -> Option<RetryReceipt> {
        match self {
            RetryBudget::TokenBucket(b) => {
                b.withdraw().then(|| RetryReceipt::new(MICROS_PER_TOKEN))
            }
            RetryBudget::Grpc(b) => b.withdraw().then(|| RetryReceipt::new(0)),
            RetryBudget::Aws(b) => b.withdraw(cause),
            RetryBudget::Windowed(b) => {
                b.withdraw(now).then(|| RetryReceipt::new(MICROS_PER_TOKEN))
            }
        }
    }

    /// An attempt succeeded at `now`; `receipt` is the receipt of the retry that
    /// succeeded, or `None` for a first attempt.
    #[inline]
    pub fn on_success(&self, _now: Nanos, receipt: Option<RetryReceipt>) {
        match self {
            RetryBudget::Grpc(b) => b.on_success(),
            RetryBudget::Aws(b) => b.on_success(receipt),
            RetryBudget::TokenBucket(_) | RetryBudget::Windowed(_) => {}
        }
    }

    /// Tell the budget how an attempt ended at `now`, by the call contract
    /// ([`Outcome::retry_budget`], the table in [`crate::outcome`]), with the receipt of the
    /// retry this attempt was (`None` for a first attempt). A success is
    /// [`on_success`](Self::on_success) (gRPC: +`token_ratio`; AWS: refund, or the success
    /// increment); a failure a retry could be for is [`on_failure`](Self::on_failure)
    /// (gRPC: −1 token); anything else changes nothing. The token bucket and the windowed
    /// budget ignore outcomes. The receipt is consumed either way. Returns the verdict.
    #[inline]
    pub fn report(
        &self,
        now: Nanos,
        outcome: Outcome,
        receipt: Option<RetryReceipt>,
    ) -> BudgetVerdict {
        let verdict = outcome.retry_budget();
        match verdict {
            BudgetVerdict::Success => self.on_success(now, receipt),
            BudgetVerdict::Failure => self.on_failure(now),
            BudgetVerdict::Nothing => {}
        }
        verdict
    }

    /// An attempt failed at `now` with an error a retry could fix.
    #[inline]
    pub fn on_failure(&self, _now: Nanos) {
        if let RetryBudget::Grpc(b) = self {
            b.on_failure();
        }
    }

    /// The balance at `now` in micro-tokens (negative only in the windowed mode).
    pub fn tokens_micros(&self, now: Nanos) -> i64 {
        let unsigned = match self {
            RetryBudget::TokenBucket(b) => b.tokens_micros(),
            RetryBudget::Grpc(b) => b.tokens_micros(),
            RetryBudget::Aws(b) => b.tokens_micros(),
            RetryBudget::Windowed(b) => return b.tokens_micros(now),
        };
        // Bucket balances are at most 10^15 micro-tokens.
        i64::try_from(unsigned).unwrap_or(i64::MAX)
    }

    /// The balance at `now` in tokens.
    pub fn tokens(&self, now: Nanos) -> f64 {
        self.tokens_micros(now) as f64 / MICROS_PER_TOKEN as f64
    }

    /// The mode's counters.
    pub fn stats(&self) -> RetryBudgetStats {
        match self {
            RetryBudget::TokenBucket(b) => b.stats(),
            RetryBudget::Grpc(b) => b.stats(),
            RetryBudget::Aws(b) => b.stats(),
            RetryBudget::Windowed(b) => b.stats(),
        }
    }
}

/// What a retry loop needs of a retry budget: a first attempt goes out
/// ([`deposit`](Budget::deposit)), may a retry go ([`withdraw`](Budget::withdraw), with a
/// receipt), how did an attempt end ([`report`](Budget::report), by the call contract).
/// Every budget of this module implements it, and [`RetryBudget`] for any mode; the
/// [`RetryDriver`](crate::retry_driver::RetryDriver) takes one as `&dyn Budget`.
pub trait Budget {
    /// A first attempt goes out at `now` (the token bucket and the windowed budget earn;
    /// the others ignore it).
    fn deposit(&self, now: Nanos);

    /// May a retry (or hedge) caused by `cause` go at `now`? Charges the mode's cost and
    /// returns a receipt, or returns `None` and changes nothing.
    fn withdraw(&self, now: Nanos, cause: RetryCause) -> Option<RetryReceipt>;

    /// An attempt ended at `now` with `outcome`; `receipt` is the receipt of the retry it
    /// was (`None` for a first attempt). See [`RetryBudget::report`].
    fn report(&self, now: Nanos, outcome: Outcome, receipt: Option<RetryReceipt>) -> BudgetVerdict;
}

impl<const BUCKETS: usize> Budget for RetryBudget<BUCKETS> {
    fn deposit(&self, now: Nanos) {
        RetryBudget::deposit(self, now);
    }

    fn withdraw(&self, now: Nanos, cause: RetryCause) -> Option<RetryReceipt> {
        RetryBudget::withdraw(self, now, cause)
    }

    fn report(&self, now: Nanos, outcome: Outcome, receipt: Option<RetryReceipt>) -> BudgetVerdict {
        RetryBudget::report(self, now, outcome, receipt)
    }
}

impl Budget for TokenBudget {
    fn deposit(&self, _now: Nanos) {
        TokenBudget::deposit(self);
    }

    fn withdraw(&self, _now: Nanos, _cause: RetryCause) -> Option<RetryReceipt> {
        TokenBudget::withdraw(self).then(|| RetryReceipt::new(MICROS_PER_TOKEN))
    }

    fn report(
        &self,
        _now: Nanos,
        outcome: Outcome,
        _receipt: Option<RetryReceipt>,
    ) -> BudgetVerdict {
        outcome.retry_budget()
    }
}

impl Budget for GrpcThrottle {
    fn deposit(&self, _now: Nanos) {}

    fn withdraw(&self, _now: Nanos, _cause: RetryCause) -> Option<RetryReceipt> {
        GrpcThrottle::withdraw(self).then(|| RetryReceipt::new(0))
    }

    fn report(
        &self,
        _now: Nanos,
        outcome: Outcome,
        _receipt: Option<RetryReceipt>,
    ) -> BudgetVerdict {
        GrpcThrottle::report(self, outcome)
    }
}

impl Budget for AwsRetryQuota {
    fn deposit(&self, _now: Nanos) {}

    fn withdraw(&self, _now: Nanos, cause: RetryCause) -> Option<RetryReceipt> {
        AwsRetryQuota::withdraw(self, cause)
    }

    fn report(
        &self,
        _now: Nanos,
        outcome: Outcome,
        receipt: Option<RetryReceipt>,
    ) -> BudgetVerdict {
        AwsRetryQuota::report(self, outcome, receipt)
    }
}

impl<const BUCKETS: usize> Budget for WindowedBudget<BUCKETS> {
    fn deposit(&self, now: Nanos) {
        WindowedBudget::deposit(self, now);
    }

    fn withdraw(&self, now: Nanos, _cause: RetryCause) -> Option<RetryReceipt> {
        WindowedBudget::withdraw(self, now).then(|| RetryReceipt::new(MICROS_PER_TOKEN))
    }

    fn report(
        &self,
        _now: Nanos,
        outcome: Outcome,
        _receipt: Option<RetryReceipt>,
    ) -> BudgetVerdict {
        outcome.retry_budget()
    }
}

impl<const BUCKETS: usize> RetryGate for RetryBudget<BUCKETS> {
    /// [`RetryBudget::withdraw`] with the receipt discarded (so no `aws` refund later).
    fn allow_retry(&self, now: Nanos, cause: RetryCause) -> bool {
        self.withdraw(now, cause).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_rounding() {
        assert_eq!(micros_of(0.1), 100_000);
        assert_eq!(micros_of(0.000_000_4), 0);
        assert_eq!(micros_of(0.000_000_6), 1);
        assert_eq!(micros_of(-1.0), 0);
        assert_eq!(tokens_of(9_100_000), 9.1);
    }

    #[test]
    fn every_mode_through_the_wrapper() {
        let now = Nanos::ZERO;
        let configs = [
            RetryBudgetConfig::TokenBucket(TokenBudgetConfig::default()),
            RetryBudgetConfig::Grpc(GrpcThrottleConfig::default()),
            RetryBudgetConfig::Aws(AwsRetryQuotaConfig::default()),
            RetryBudgetConfig::Windowed(WindowedBudgetConfig::default()),
        ];
        let expected_after = [9_000_000, 9_100_000, 500_000_000, 99_000_000];
        for (config, want) in configs.into_iter().zip(expected_after) {
            let b: RetryBudget = RetryBudget::new(config).unwrap();
            assert_eq!(b.config(), config);
            assert_eq!(b.mode(), config.mode());
            b.deposit(now);
            b.on_failure(now);
            let r = b.withdraw(now, RetryCause::Timeout);
            assert!(r.is_some(), "{}", b.mode().name());
            b.on_success(now, r);
            // token_bucket: 10 - 1; grpc: 10 - 1 + 0.1; aws: 500 - 10 + 10;
            // windowed: floor 10/s x 10 s = 100, minus 1, plus 0.2 for the request.
            let want = if b.mode() == RetryBudgetMode::Windowed {
                want + 200_000
            } else {
                want
            };
            assert_eq!(b.tokens_micros(now), want, "{}", b.mode().name());
            assert_eq!(b.stats().withdrawals, 1);
        }
    }

    #[test]
    fn wrapper_validates() {
        let bad = RetryBudgetConfig::Grpc(GrpcThrottleConfig {
            max_tokens: 0.0,
            token_ratio: 0.1,
        });
        let e = RetryBudget::<10>::new(bad).unwrap_err();
        assert_eq!(e.field(), "max_tokens");
        assert_eq!(RetryBudgetConfig::default().mode().name(), "token_bucket");
    }

    #[test]
    fn receipts_carry_the_cost() {
        let b: RetryBudget =
            RetryBudget::new(RetryBudgetConfig::Grpc(GrpcThrottleConfig::default())).unwrap();
        let r = b.withdraw(Nanos::ZERO, RetryCause::Hedge).unwrap();
        assert_eq!(r.cost_micros(), 0);
        assert!(b.allow_retry(Nanos::ZERO, RetryCause::Hedge));
        let a: RetryBudget =
            RetryBudget::new(RetryBudgetConfig::Aws(AwsRetryQuotaConfig::default())).unwrap();
        assert_eq!(
            a.withdraw(Nanos::ZERO, RetryCause::Throttled)
                .map(|r| r.cost()),
            Some(5.0)
        );
    }
}
