//! [`TokenBudget`]: the per-client retry token bucket (Basketly setting C4, the SRE-book budget).

use crate::counter::Counter;
use crate::error::{check_f64, ConfigError, ConfigErrorKind};
use crate::retry_policy::{RetryCause, RetryGate};
use crate::time::Nanos;

use super::bucket::Bucket;
use super::{counted, micros_of, tokens_of, RetryBudgetStats, MICROS_PER_TOKEN};

/// Default for [`TokenBudgetConfig::capacity`]: 10 tokens, the burst of Basketly setting C4.
/// Valid range: `1.0..=1e9`.
pub const DEFAULT_TOKEN_CAPACITY: f64 = 10.0;

/// Default for [`TokenBudgetConfig::ratio`]: 0.1 token per first attempt, so retries stay
/// near 10 % of first attempts. Valid range: `0.0` or `0.000001..=1000.0`.
pub const DEFAULT_TOKEN_RATIO: f64 = 0.1;

/// Configuration of a [`TokenBudget`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBudgetConfig {
    /// Size of the bucket in tokens: the burst of retries allowed at once. The bucket starts
    /// full. Rounded to the nearest micro-token. Default [`DEFAULT_TOKEN_CAPACITY`];
    /// valid `1.0..=1e9` (below one token no retry could ever go).
    pub capacity: f64,
    /// Tokens earned per first attempt. Rounded once, at construction, to the nearest
    /// micro-token (half away from zero); a positive value that rounds to zero is rejected.
    /// `0.0` gives a fixed burst that never refills. Default [`DEFAULT_TOKEN_RATIO`];
    /// valid `0.0` or `0.000001..=1000.0`.
    pub ratio: f64,
}

impl Default for TokenBudgetConfig {
    fn default() -> Self {
        TokenBudgetConfig {
            capacity: DEFAULT_TOKEN_CAPACITY,
            ratio: DEFAULT_TOKEN_RATIO,
        }
    }
}

impl TokenBudgetConfig {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_f64(
            "capacity",
            self.capacity,
            1.0,
            1e9,
            "a number of tokens in 1.0..=1e9",
        )?;
        let expected = "0.0 or a number of tokens in 0.000001..=1000.0";
        check_f64("ratio", self.ratio, 0.0, 1000.0, expected)?;
        if self.ratio > 0.0 && micros_of(self.ratio) == 0 {
            return Err(ConfigError::new(
                "ratio",
                ConfigErrorKind::OutOfRange,
                expected,
            ));
        }
        Ok(())
    }
}

/// The per-client retry token bucket (mode "token_bucket"). Lock-free: one atomic word.
///
/// All bytes zero is a valid, inert `TokenBudget` (empty, capacity 0: it refuses every
/// retry); see "Building in place" in the crate docs and [`TokenBudget::reset`].
///
/// Every first attempt deposits `ratio` tokens, up to `capacity`; every retry withdraws one
/// whole token and is refused when less than one token is left. The bucket starts full, so
/// a client may retry a burst of `capacity` retries at once and, after that, about `ratio`
/// retries per first attempt.
///
/// # Examples
/// ```
/// use guards_core::retry_budget::{TokenBudget, TokenBudgetConfig};
/// let budget = TokenBudget::new(TokenBudgetConfig::default()).unwrap();
/// budget.deposit(); // a first attempt (the bucket is already full: capped)
/// assert!(budget.withdraw()); // a retry: 10 -> 9 tokens
/// assert_eq!(budget.tokens_micros(), 9_000_000);
/// for _ in 0..10 {
///     budget.deposit(); // ten first attempts earn exactly one token
/// }
/// assert_eq!(budget.tokens(), 10.0);
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct TokenBudget {
    config: TokenBudgetConfig,
    capacity_micros: u64,
    ratio_micros: u64,
    bucket: Bucket,
    deposits: Counter,
    withdrawals: Counter,
    refusals: Counter,
}

impl TokenBudget {
    /// A full bucket, or the first invalid field of `config`.
    pub fn new(config: TokenBudgetConfig) -> Result<Self, ConfigError> {
        let mut b = TokenBudget {
            config: TokenBudgetConfig {
                capacity: 0.0,
                ratio: 0.0,
            },
            capacity_micros: 0,
            ratio_micros: 0,
            bucket: Bucket::new(0),
            deposits: Counter::new(),
            withdrawals: Counter::new(),
            refusals: Counter::new(),
        };
        b.reset(config)?;
        Ok(b)
    }

    /// Validate `config`, then put this budget in exactly the state
    /// [`TokenBudget::new`]`(config)` gives (a full bucket, zeroed counters), in place. On
    /// error nothing changes.
    pub fn reset(&mut self, config: TokenBudgetConfig) -> Result<(), ConfigError> {
        config.validate()?;
        self.config = config;
        self.capacity_micros = micros_of(config.capacity);
        self.ratio_micros = micros_of(config.ratio);
        self.bucket.set_mut(self.capacity_micros);
        self.deposits.reset();
        self.withdrawals.reset();
        self.refusals.reset();
        Ok(())
    }

    /// The configuration this budget was built with.
    pub fn config(&self) -> &TokenBudgetConfig {
        &self.config
    }

    /// A first attempt is going out: earn `ratio` tokens, up to `capacity`.
    #[inline]
    pub fn deposit(&self) {
        self.deposits.incr();
        self.bucket
            .add_capped(self.ratio_micros, self.capacity_micros);
    }

    /// May a retry go? Takes one token and returns `true`, or returns `false` and changes
    /// nothing when less than one token is left.
    #[inline]
    pub fn withdraw(&self) -> bool {
        counted(
            self.bucket.try_take(MICROS_PER_TOKEN),
            &self.withdrawals,
            &self.refusals,
        )
    }

    /// The balance in tokens (micro-tokens divided by 10^6).
    pub fn tokens(&self) -> f64 {
        tokens_of(self.bucket.load())
    }

    /// The exact balance in micro-tokens.
    pub fn tokens_micros(&self) -> u64 {
        self.bucket.load()
    }

    /// The capacity in micro-tokens, after rounding.
    pub fn capacity_micros(&self) -> u64 {
        self.capacity_micros
    }

    /// The tokens earned per first attempt, in micro-tokens, after rounding.
    pub fn ratio_micros(&self) -> u64 {
        self.ratio_micros
    }

    /// Counters: deposits (first attempts seen, including those capped), withdrawals
    /// (retries allowed) and refusals.
    pub fn stats(&self) -> RetryBudgetStats {
        RetryBudgetStats {
            deposits: self.deposits.get(),
            withdrawals: self.withdrawals.get(),
            refusals: self.refusals.get(),
            refunds: 0,
            failures: 0,
        }
    }
}

impl RetryGate for TokenBudget {
    /// [`TokenBudget::withdraw`]; the cause and time do not matter to this mode.
    fn allow_retry(&self, _now: Nanos, _cause: RetryCause) -> bool {
        self.withdraw()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(capacity: f64, ratio: f64) -> TokenBudget {
        TokenBudget::new(TokenBudgetConfig { capacity, ratio }).unwrap()
    }

    #[test]
    fn starts_full_and_caps_deposits() {
        let b = budget(10.0, 0.1);
        assert_eq!(b.tokens_micros(), 10_000_000);
        b.deposit();
        assert_eq!(b.tokens_micros(), 10_000_000);
        assert_eq!(b.stats().deposits, 1);
    }

    #[test]
    fn ten_deposits_of_a_tenth_make_exactly_one_token() {
        let b = budget(10.0, 0.1);
        for _ in 0..10 {
            assert!(b.withdraw());
        }
        assert_eq!(b.tokens_micros(), 0);
        assert!(!b.withdraw());
        for _ in 0..10 {
            b.deposit();
        }
        assert_eq!(b.tokens_micros(), MICROS_PER_TOKEN);
        assert!(b.withdraw());
        assert!(!b.withdraw());
        let s = b.stats();
        assert_eq!((s.deposits, s.withdrawals, s.refusals), (10, 11, 2));
    }

    #[test]
    fn a_refused_withdraw_changes_nothing() {
        let b = budget(1.5, 0.25);
        assert!(b.withdraw());
        assert_eq!(b.tokens_micros(), 500_000);
        assert!(!b.withdraw());
        assert_eq!(b.tokens_micros(), 500_000);
        b.deposit();
        b.deposit();
        assert_eq!(b.tokens_micros(), 1_000_000);
        assert!(b.withdraw());
    }

    #[test]
    fn rounding_is_to_the_nearest_micro_token() {
        assert_eq!(budget(10.0, 0.000_000_6).ratio_micros(), 1);
        assert_eq!(budget(10.0, 1.0 / 3.0).ratio_micros(), 333_333);
        assert_eq!(budget(2.345_678_6, 0.0).capacity_micros(), 2_345_679);
    }

    #[test]
    fn config_errors_name_the_field() {
        let e = |capacity, ratio| {
            TokenBudget::new(TokenBudgetConfig { capacity, ratio })
                .err()
                .map(|e| (e.field(), e.kind()))
        };
        assert_eq!(
            e(f64::NAN, 0.1),
            Some(("capacity", ConfigErrorKind::NotFinite))
        );
        assert_eq!(e(0.0, 0.1), Some(("capacity", ConfigErrorKind::Zero)));
        assert_eq!(e(0.5, 0.1), Some(("capacity", ConfigErrorKind::OutOfRange)));
        assert_eq!(e(-1.0, 0.1), Some(("capacity", ConfigErrorKind::Negative)));
        assert_eq!(e(2e9, 0.1), Some(("capacity", ConfigErrorKind::OutOfRange)));
        assert_eq!(
            e(10.0, f64::INFINITY),
            Some(("ratio", ConfigErrorKind::NotFinite))
        );
        assert_eq!(e(10.0, -0.1), Some(("ratio", ConfigErrorKind::Negative)));
        assert_eq!(e(10.0, 1e-7), Some(("ratio", ConfigErrorKind::OutOfRange)));
        assert_eq!(
            e(10.0, 1001.0),
            Some(("ratio", ConfigErrorKind::OutOfRange))
        );
        assert_eq!(e(10.0, 0.0), None);
    }

    #[test]
    fn gate_is_withdraw() {
        let b = budget(1.0, 0.0);
        assert!(b.allow_retry(Nanos::ZERO, RetryCause::Timeout));
        assert!(!b.allow_retry(Nanos::ZERO, RetryCause::Hedge));
    }
}
