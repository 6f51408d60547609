//! [`TokenBudget`]: the per-client retry token bucket (Basketly setting C4, the SRE-book budget).

use crate::counter::Counter;
use crate::error::{check_f64, ConfigError, ConfigErrorKind};
use crate::retry_policy::{RetryCause, RetryGate};
use crate::sync::{set_mut, AtomicU64, Ordering};
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
    capacity_micros: AtomicU64,
    ratio_micros: AtomicU64,
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
            capacity_micros: AtomicU64::new(0),
            ratio_micros: AtomicU64::new(0),
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
        let capacity = micros_of(config.capacity);
        set_mut(&mut self.capacity_micros, capacity);
        set_mut(&mut self.ratio_micros, micros_of(config.ratio));
        self.bucket.set_mut(capacity);
        self.deposits.reset();
        self.withdrawals.reset();
        self.refusals.reset();
        Ok(())
    }

    /// The configuration this budget was built (or last [`reset`](Self::reset)) with;
    /// [`set_capacity`](Self::set_capacity) and [`set_ratio`](Self::set_ratio) do not
    /// change it (read [`capacity_micros`](Self::capacity_micros) and
    /// [`ratio_micros`](Self::ratio_micros) for the values in force).
    pub fn config(&self) -> &TokenBudgetConfig {
        &self.config
    }

    /// A first attempt is going out: earn `ratio` tokens, up to `capacity`.
    #[inline]
    pub fn deposit(&self) {
        self.deposits.incr();
        self.bucket.add_capped(
            self.ratio_micros.load(Ordering::Relaxed),
            self.capacity_micros.load(Ordering::Relaxed),
        );
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

    /// The capacity in force, in micro-tokens, after rounding.
    pub fn capacity_micros(&self) -> u64 {
        self.capacity_micros.load(Ordering::Relaxed)
    }

    /// The tokens earned per first attempt in force, in micro-tokens, after rounding.
    pub fn ratio_micros(&self) -> u64 {
        self.ratio_micros.load(Ordering::Relaxed)
    }

    /// Resize the bucket at run time to `capacity` tokens (`0.0..=1e9`, rounded to the
    /// nearest micro-token; 0 refuses every retry): the fleet agent sets this member's
    /// share of a fleet-wide burst here. A smaller bucket drops the tokens above its new
    /// size at once; a larger one starts filling from the balance it has (it is not
    /// topped up). Returns the previous capacity in micro-tokens.
    ///
    /// Lock-free. A deposit racing a shrink may have read the old capacity and land after
    /// the clamp, so the balance can exceed the new capacity by at most one `ratio` per
    /// racing deposit; no later deposit adds to a balance above the capacity, and
    /// withdrawals bring it down.
    pub fn set_capacity(&self, capacity: f64) -> Result<u64, ConfigError> {
        check_f64(
            "capacity",
            capacity,
            0.0,
            1e9,
            "a number of tokens in 0.0..=1e9",
        )?;
        let micros = micros_of(capacity);
        let old = self.capacity_micros.swap(micros, Ordering::Relaxed);
        self.bucket.clamp(micros);
        Ok(old)
    }

    /// Change the tokens earned per first attempt at run time (the same range and rounding
    /// as [`TokenBudgetConfig::ratio`]). Returns the previous ratio in micro-tokens.
    pub fn set_ratio(&self, ratio: f64) -> Result<u64, ConfigError> {
        TokenBudgetConfig {
            capacity: DEFAULT_TOKEN_CAPACITY,
            ratio,
        }
        .validate()?;
        Ok(self.ratio_micros.swap(micros_of(ratio), Ordering::Relaxed))
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
    fn a_shrink_drops_the_tokens_above_the_new_size_and_a_growth_refills_by_deposits() {
        let b = budget(10.0, 0.5);
        assert_eq!(b.set_capacity(3.0), Ok(10_000_000));
        assert_eq!(b.tokens_micros(), 3_000_000);
        b.deposit();
        assert_eq!(b.tokens_micros(), 3_000_000, "capped at the new size");
        assert_eq!(b.set_capacity(5.0), Ok(3_000_000));
        assert_eq!(b.tokens_micros(), 3_000_000, "a growth is not topped up");
        for _ in 0..10 {
            b.deposit();
        }
        assert_eq!(b.tokens_micros(), 5_000_000);
        assert_eq!(b.set_capacity(0.0), Ok(5_000_000));
        assert!(!b.withdraw(), "capacity 0 refuses every retry");
        b.deposit();
        assert_eq!(b.tokens_micros(), 0);
        assert_eq!(
            b.config().capacity,
            10.0,
            "config() is what it was built with"
        );
    }

    #[test]
    fn a_resize_validates_and_changes_nothing_on_error() {
        let b = budget(10.0, 0.1);
        assert_eq!(
            b.set_capacity(f64::NAN).map_err(|e| e.field()),
            Err("capacity")
        );
        assert_eq!(
            b.set_capacity(-1.0).map_err(|e| e.kind()),
            Err(ConfigErrorKind::Negative)
        );
        assert_eq!(
            b.set_capacity(2e9).map_err(|e| e.kind()),
            Err(ConfigErrorKind::OutOfRange)
        );
        assert_eq!(b.set_ratio(1e-7).map_err(|e| e.field()), Err("ratio"));
        assert_eq!(b.capacity_micros(), 10_000_000);
        assert_eq!(b.ratio_micros(), 100_000);
        assert_eq!(b.set_ratio(0.0), Ok(100_000));
        assert!(b.withdraw());
        b.deposit();
        assert_eq!(b.tokens_micros(), 9_000_000, "ratio 0 earns nothing");
    }

    #[test]
    fn gate_is_withdraw() {
        let b = budget(1.0, 0.0);
        assert!(b.allow_retry(Nanos::ZERO, RetryCause::Timeout));
        assert!(!b.allow_retry(Nanos::ZERO, RetryCause::Hedge));
    }
}
