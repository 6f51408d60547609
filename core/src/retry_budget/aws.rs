//! [`AwsRetryQuota`]: the retry quota of the AWS SDKs' standard retry mode (mode "aws").

use crate::counter::Counter;
use crate::error::{check_u64, inconsistent, ConfigError};
use crate::outcome::{BudgetVerdict, Outcome};
use crate::retry_policy::{RetryCause, RetryGate};
use crate::time::Nanos;

use super::bucket::Bucket;
use super::{counted, tokens_of, RetryBudgetStats, RetryReceipt, MICROS_PER_TOKEN};

/// Default for [`AwsRetryQuotaConfig::capacity`]: 500 tokens per client.
/// Valid range: `1..=1_000_000_000`.
pub const DEFAULT_AWS_CAPACITY: u64 = 500;

/// Default for [`AwsRetryQuotaConfig::transient_cost`]: 5 tokens (standard mode).
/// Valid range: `0..=capacity`.
pub const DEFAULT_AWS_TRANSIENT_COST: u64 = 5;

/// Default for [`AwsRetryQuotaConfig::timeout_cost`]: 10 tokens (standard mode).
/// Valid range: `0..=capacity`.
pub const DEFAULT_AWS_TIMEOUT_COST: u64 = 10;

/// Default for [`AwsRetryQuotaConfig::throttled_cost`]: 5 tokens, the same as any other
/// transient error in standard mode. Valid range: `0..=capacity`.
pub const DEFAULT_AWS_THROTTLED_COST: u64 = 5;

/// Default for [`AwsRetryQuotaConfig::hedge_cost`]: 5 tokens. The SDKs do not hedge; a
/// hedge is priced like a transient retry. Valid range: `0..=capacity`.
pub const DEFAULT_AWS_HEDGE_COST: u64 = 5;

/// Default for [`AwsRetryQuotaConfig::success_increment`]: 1 token back per call that
/// succeeds without a retry. Valid range: `0..=capacity`.
pub const DEFAULT_AWS_SUCCESS_INCREMENT: u64 = 1;

/// The transient-retry cost of the newer AWS SDK retry behaviour, which charges 14 tokens
/// per transient retry (about 35 transient retries out of 500 tokens). Set
/// [`AwsRetryQuotaConfig::transient_cost`] to it to model that behaviour.
pub const AWS_NEWER_TRANSIENT_COST: u64 = 14;

const MAX_TOKENS: u64 = 1_000_000_000;

/// Configuration of an [`AwsRetryQuota`]. All amounts are whole tokens.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AwsRetryQuotaConfig {
    /// Size of the bucket, and where it starts. Default [`DEFAULT_AWS_CAPACITY`];
    /// valid `1..=1_000_000_000`.
    pub capacity: u64,
    /// Cost of a retry after a transient error ([`RetryCause::Transient`]).
    /// Default [`DEFAULT_AWS_TRANSIENT_COST`]; valid `0..=capacity`.
    pub transient_cost: u64,
    /// Cost of a retry after a timeout ([`RetryCause::Timeout`]).
    /// Default [`DEFAULT_AWS_TIMEOUT_COST`]; valid `0..=capacity`.
    pub timeout_cost: u64,
    /// Cost of a retry after throttling ([`RetryCause::Throttled`]).
    /// Default [`DEFAULT_AWS_THROTTLED_COST`]; valid `0..=capacity`.
    pub throttled_cost: u64,
    /// Cost of a hedge ([`RetryCause::Hedge`]). Default [`DEFAULT_AWS_HEDGE_COST`];
    /// valid `0..=capacity`.
    pub hedge_cost: u64,
    /// Tokens added when a call succeeds on its first attempt.
    /// Default [`DEFAULT_AWS_SUCCESS_INCREMENT`]; valid `0..=capacity`.
    pub success_increment: u64,
}

impl Default for AwsRetryQuotaConfig {
    fn default() -> Self {
        AwsRetryQuotaConfig {
            capacity: DEFAULT_AWS_CAPACITY,
            transient_cost: DEFAULT_AWS_TRANSIENT_COST,
            timeout_cost: DEFAULT_AWS_TIMEOUT_COST,
            throttled_cost: DEFAULT_AWS_THROTTLED_COST,
            hedge_cost: DEFAULT_AWS_HEDGE_COST,
            success_increment: DEFAULT_AWS_SUCCESS_INCREMENT,
        }
    }
}

impl AwsRetryQuotaConfig {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_u64(
            "capacity",
            self.capacity,
            1,
            MAX_TOKENS,
            "a whole number of tokens in 1..=1_000_000_000",
        )?;
        let amounts = [
            ("transient_cost", self.transient_cost),
            ("timeout_cost", self.timeout_cost),
            ("throttled_cost", self.throttled_cost),
            ("hedge_cost", self.hedge_cost),
            ("success_increment", self.success_increment),
        ];
        for (field, v) in amounts {
            check_u64(
                field,
                v,
                0,
                MAX_TOKENS,
                "a whole number of tokens in 0..=capacity",
            )?;
            if v > self.capacity {
                return Err(inconsistent(field, "at most `capacity` tokens"));
            }
        }
        Ok(())
    }
}

/// The AWS SDK retry quota (mode "aws"). Lock-free: one atomic word.
///
/// All bytes zero is a valid, unconfigured `AwsRetryQuota` (capacity and every cost 0, so
/// retries cost nothing): safe to call, meant to be [`reset`](AwsRetryQuota::reset) before
/// use; see "Building in place" in the crate docs.
///
/// A bucket of whole tokens that starts full at `capacity`. A retry costs a number of
/// tokens that depends on why it is wanted (a timeout costs more than another transient
/// error) and is refused when the bucket holds less than that. The withdrawal returns a
/// [`RetryReceipt`] with the cost; when the retried call then succeeds, the receipt is
/// handed back and its cost returns to the bucket. A call that succeeds on its first
/// attempt may add a small `success_increment`.
///
/// # Examples
/// ```
/// use guards_core::retry_budget::{AwsRetryQuota, AwsRetryQuotaConfig};
/// use guards_core::retry_policy::RetryCause;
/// let q = AwsRetryQuota::new(AwsRetryQuotaConfig::default()).unwrap(); // 500 tokens
/// let receipt = q.withdraw(RetryCause::Timeout).expect("tokens left"); // costs 10
/// assert_eq!(receipt.cost_micros(), 10_000_000);
/// assert_eq!(q.tokens(), 490.0);
/// q.refund(receipt); // the retry succeeded: its 10 tokens come back
/// assert_eq!(q.tokens(), 500.0);
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct AwsRetryQuota {
    config: AwsRetryQuotaConfig,
    capacity_micros: u64,
    bucket: Bucket,
    deposits: Counter,
    withdrawals: Counter,
    refusals: Counter,
    refunds: Counter,
}

impl AwsRetryQuota {
    /// A full quota, or the first invalid field of `config`.
    pub fn new(config: AwsRetryQuotaConfig) -> Result<Self, ConfigError> {
        let mut q = AwsRetryQuota {
            config: AwsRetryQuotaConfig {
                capacity: 0,
                transient_cost: 0,
                timeout_cost: 0,
                throttled_cost: 0,
                hedge_cost: 0,
                success_increment: 0,
            },
            capacity_micros: 0,
            bucket: Bucket::new(0),
            deposits: Counter::new(),
            withdrawals: Counter::new(),
            refusals: Counter::new(),
            refunds: Counter::new(),
        };
        q.reset(config)?;
        Ok(q)
    }

    /// Validate `config`, then put this quota in exactly the state
    /// [`AwsRetryQuota::new`]`(config)` gives (full, zeroed counters), in place. On error
    /// nothing changes.
    pub fn reset(&mut self, config: AwsRetryQuotaConfig) -> Result<(), ConfigError> {
        config.validate()?;
        self.config = config;
        self.capacity_micros = config.capacity.saturating_mul(MICROS_PER_TOKEN);
        self.bucket.set_mut(self.capacity_micros);
        self.deposits.reset();
        self.withdrawals.reset();
        self.refusals.reset();
        self.refunds.reset();
        Ok(())
    }

    /// The configuration this quota was built with.
    pub fn config(&self) -> &AwsRetryQuotaConfig {
        &self.config
    }

    /// The cost in whole tokens of a retry wanted because of `cause`.
    pub fn cost_of(&self, cause: RetryCause) -> u64 {
        match cause {
            RetryCause::Timeout => self.config.timeout_cost,
            RetryCause::Transient => self.config.transient_cost,
            RetryCause::Throttled => self.config.throttled_cost,
            RetryCause::Hedge => self.config.hedge_cost,
        }
    }

    /// May a retry caused by `cause` go? Takes its cost and returns the receipt, or returns
    /// `None` and changes nothing when the bucket holds less than the cost.
    ///
    /// Keep the receipt with the retry: if it succeeds, pass the receipt to
    /// [`AwsRetryQuota::refund`]; if it fails, drop it (the tokens stay spent).
    #[inline]
    pub fn withdraw(&self, cause: RetryCause) -> Option<RetryReceipt> {
        let cost = self.cost_of(cause).saturating_mul(MICROS_PER_TOKEN);
        counted(
            self.bucket.try_take(cost),
            &self.withdrawals,
            &self.refusals,
        )
        .then(|| RetryReceipt::new(cost))
    }

    /// A retried call succeeded: the receipt's cost returns to the bucket (up to
    /// `capacity`). Consumes the receipt, so a cost is refunded at most once.
    #[inline]
    pub fn refund(&self, receipt: RetryReceipt) {
        self.refunds.incr();
        self.bucket
            .add_capped(receipt.cost_micros(), self.capacity_micros);
    }

    /// A call succeeded on its first attempt: add `success_increment` (up to `capacity`).
    #[inline]
    pub fn deposit(&self) {
        self.deposits.incr();
        self.bucket.add_capped(
            self.config
                .success_increment
                .saturating_mul(MICROS_PER_TOKEN),
            self.capacity_micros,
        );
    }

    /// A call succeeded: [`AwsRetryQuota::refund`] its last retry's receipt if it was
    /// retried, otherwise [`AwsRetryQuota::deposit`].
    pub fn on_success(&self, receipt: Option<RetryReceipt>) {
        match receipt {
            Some(r) => self.refund(r),
            None => self.deposit(),
        }
    }

    /// Tell the quota how an attempt ended, by the call contract
    /// ([`Outcome::retry_budget`]): a success refunds `receipt` (the attempt was a retry)
    /// or adds the success increment (it was a first attempt, `receipt` is `None`); any
    /// other outcome changes nothing and the receipt's tokens stay spent. Returns the
    /// verdict applied.
    pub fn report(&self, outcome: Outcome, receipt: Option<RetryReceipt>) -> BudgetVerdict {
        let verdict = outcome.retry_budget();
        if verdict == BudgetVerdict::Success {
            self.on_success(receipt);
        }
        verdict
    }

    /// The balance in tokens.
    pub fn tokens(&self) -> f64 {
        tokens_of(self.bucket.load())
    }

    /// The exact balance in micro-tokens (always a multiple of 10^6 in this mode).
    pub fn tokens_micros(&self) -> u64 {
        self.bucket.load()
    }

    /// Counters: deposits (first-attempt successes), withdrawals (retries allowed),
    /// refusals, refunds.
    pub fn stats(&self) -> RetryBudgetStats {
        RetryBudgetStats {
            deposits: self.deposits.get(),
            withdrawals: self.withdrawals.get(),
            refusals: self.refusals.get(),
            refunds: self.refunds.get(),
            failures: 0,
        }
    }
}

impl RetryGate for AwsRetryQuota {
    /// [`AwsRetryQuota::withdraw`] with the receipt discarded: through this trait a
    /// successful retry cannot be refunded. Call `withdraw` directly to keep the receipt.
    fn allow_retry(&self, _now: Nanos, cause: RetryCause) -> bool {
        self.withdraw(cause).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ConfigErrorKind;

    #[test]
    fn standard_mode_costs() {
        let q = AwsRetryQuota::new(AwsRetryQuotaConfig::default()).unwrap();
        assert_eq!(q.cost_of(RetryCause::Timeout), 10);
        assert_eq!(q.cost_of(RetryCause::Transient), 5);
        let r = q.withdraw(RetryCause::Transient).unwrap();
        assert_eq!(r.cost_micros(), 5_000_000);
        assert_eq!(q.tokens_micros(), 495_000_000);
        drop(r); // the retry failed: nothing comes back
        assert_eq!(q.tokens_micros(), 495_000_000);
    }

    #[test]
    fn drains_then_refuses_without_change() {
        let q = AwsRetryQuota::new(AwsRetryQuotaConfig::default()).unwrap();
        // 500 tokens / 10 per timeout = 50 timeout retries.
        for _ in 0..50 {
            assert!(q.withdraw(RetryCause::Timeout).is_some());
        }
        assert_eq!(q.tokens_micros(), 0);
        assert!(q.withdraw(RetryCause::Transient).is_none());
        assert_eq!(q.tokens_micros(), 0);
        q.deposit();
        assert_eq!(q.tokens(), 1.0);
        let s = q.stats();
        assert_eq!((s.withdrawals, s.refusals, s.deposits), (50, 1, 1));
    }

    #[test]
    fn refund_and_deposit_are_capped() {
        let q = AwsRetryQuota::new(AwsRetryQuotaConfig::default()).unwrap();
        let a = q.withdraw(RetryCause::Timeout).unwrap();
        q.deposit(); // 491
        q.on_success(Some(a)); // 501 -> capped at 500
        assert_eq!(q.tokens(), 500.0);
        q.on_success(None);
        assert_eq!(q.tokens(), 500.0);
        assert_eq!(q.stats().refunds, 1);
        assert_eq!(q.stats().deposits, 2);
    }

    #[test]
    fn newer_behaviour_allows_about_35_transient_retries() {
        let q = AwsRetryQuota::new(AwsRetryQuotaConfig {
            transient_cost: AWS_NEWER_TRANSIENT_COST,
            ..AwsRetryQuotaConfig::default()
        })
        .unwrap();
        let mut n = 0;
        while q.withdraw(RetryCause::Transient).is_some() {
            n += 1;
        }
        assert_eq!(n, 35); // floor(500 / 14)
        assert_eq!(q.tokens(), 10.0);
    }

    #[test]
    fn config_errors_name_the_field() {
        let e = |c: AwsRetryQuotaConfig| c.validate().err().map(|e| (e.field(), e.kind()));
        let d = AwsRetryQuotaConfig::default();
        assert_eq!(
            e(AwsRetryQuotaConfig { capacity: 0, ..d }),
            Some(("capacity", ConfigErrorKind::Zero))
        );
        assert_eq!(
            e(AwsRetryQuotaConfig {
                capacity: 2_000_000_000,
                ..d
            }),
            Some(("capacity", ConfigErrorKind::OutOfRange))
        );
        assert_eq!(
            e(AwsRetryQuotaConfig { capacity: 8, ..d }),
            Some(("timeout_cost", ConfigErrorKind::Inconsistent))
        );
        assert_eq!(
            e(AwsRetryQuotaConfig {
                success_increment: 501,
                ..d
            }),
            Some(("success_increment", ConfigErrorKind::Inconsistent))
        );
        assert_eq!(e(AwsRetryQuotaConfig { hedge_cost: 0, ..d }), None);
    }
}
