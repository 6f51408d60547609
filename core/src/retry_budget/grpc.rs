//! [`GrpcThrottle`]: gRPC's client-side retry throttling (mode "grpc").

use crate::counter::Counter;
use crate::error::{check_f64_above, ConfigError, ConfigErrorKind};
use crate::math;
use crate::outcome::{BudgetVerdict, Outcome};
use crate::retry_policy::{RetryCause, RetryGate};
use crate::time::Nanos;

use super::bucket::Bucket;
use super::{counted, tokens_of, RetryBudgetStats, MICROS_PER_TOKEN};

/// Default for [`GrpcThrottleConfig::max_tokens`]: 10 tokens. Valid range: `0.001..=1000.0`.
pub const DEFAULT_GRPC_MAX_TOKENS: f64 = 10.0;

/// Default for [`GrpcThrottleConfig::token_ratio`]: 0.1 token per success.
/// Valid range: `0.001..=1000.0`.
pub const DEFAULT_GRPC_TOKEN_RATIO: f64 = 0.1;

/// Micro-tokens per thousandth of a token (gRPC's precision).
const MICROS_PER_MILLI: u64 = 1_000;

/// Round a token amount to whole thousandths, returned in micro-tokens.
fn milli_rounded_micros(tokens: f64) -> u64 {
    math::to_u64_saturating(math::round(tokens * 1_000.0)).saturating_mul(MICROS_PER_MILLI)
}

/// Configuration of a [`GrpcThrottle`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GrpcThrottleConfig {
    /// The most tokens the throttle holds, and where it starts. Retries stop at or below
    /// half of it. Rounded to the nearest 0.001. Default [`DEFAULT_GRPC_MAX_TOKENS`];
    /// valid `0.001..=1000.0` (gRPC requires more than zero and at most 1000).
    pub max_tokens: f64,
    /// Tokens added per successful attempt. Rounded to the nearest 0.001.
    /// Default [`DEFAULT_GRPC_TOKEN_RATIO`]; valid `0.001..=1000.0`.
    pub token_ratio: f64,
}

impl Default for GrpcThrottleConfig {
    fn default() -> Self {
        GrpcThrottleConfig {
            max_tokens: DEFAULT_GRPC_MAX_TOKENS,
            token_ratio: DEFAULT_GRPC_TOKEN_RATIO,
        }
    }
}

impl GrpcThrottleConfig {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let expected = "a number of tokens in 0.001..=1000.0 (three decimals)";
        check_f64_above("max_tokens", self.max_tokens, 0.0, 1000.0, expected)?;
        if milli_rounded_micros(self.max_tokens) == 0 {
            return Err(ConfigError::new(
                "max_tokens",
                ConfigErrorKind::OutOfRange,
                expected,
            ));
        }
        check_f64_above("token_ratio", self.token_ratio, 0.0, 1000.0, expected)?;
        if milli_rounded_micros(self.token_ratio) == 0 {
            return Err(ConfigError::new(
                "token_ratio",
                ConfigErrorKind::OutOfRange,
                expected,
            ));
        }
        Ok(())
    }
}

/// gRPC retry throttling (mode "grpc"). Lock-free: one atomic word.
///
/// All bytes zero is a valid, inert `GrpcThrottle` (no tokens, `max_tokens` 0: it refuses
/// every retry); see "Building in place" in the crate docs and [`GrpcThrottle::reset`].
///
/// One token count per server, starting at `max_tokens` and always within
/// `0..=max_tokens`. Every attempt that fails with a retryable status (or a pushback that
/// says not to retry) takes one token away; every successful attempt adds `token_ratio`.
/// A retry or a hedge may go only while the count is strictly above `max_tokens / 2`.
/// Asking does not cost anything: the failures pay.
///
/// Both settings carry three decimal places in gRPC's service config, so both are rounded
/// to the nearest thousandth of a token when the throttle is built; after that all
/// arithmetic is on integers and exact.
///
/// # Examples
/// ```
/// use guards_core::retry_budget::{GrpcThrottle, GrpcThrottleConfig};
/// let t = GrpcThrottle::new(GrpcThrottleConfig::default()).unwrap(); // 10 tokens, 0.1
/// for _ in 0..4 {
///     t.on_failure(); // 10 -> 6
/// }
/// assert!(t.withdraw()); // 6 > 5: a retry may go, and costs nothing by itself
/// t.on_failure(); // 5
/// assert!(!t.withdraw()); // 5 is not above 5
/// t.on_success(); // 5.1
/// assert!(t.withdraw());
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct GrpcThrottle {
    config: GrpcThrottleConfig,
    max_micros: u64,
    ratio_micros: u64,
    bucket: Bucket,
    successes: Counter,
    failures: Counter,
    withdrawals: Counter,
    refusals: Counter,
}

impl GrpcThrottle {
    /// A throttle at `max_tokens`, or the first invalid field of `config`.
    pub fn new(config: GrpcThrottleConfig) -> Result<Self, ConfigError> {
        let mut t = GrpcThrottle {
            config: GrpcThrottleConfig {
                max_tokens: 0.0,
                token_ratio: 0.0,
            },
            max_micros: 0,
            ratio_micros: 0,
            bucket: Bucket::new(0),
            successes: Counter::new(),
            failures: Counter::new(),
            withdrawals: Counter::new(),
            refusals: Counter::new(),
        };
        t.reset(config)?;
        Ok(t)
    }

    /// Validate `config`, then put this throttle in exactly the state
    /// [`GrpcThrottle::new`]`(config)` gives (at `max_tokens`, zeroed counters), in place.
    /// On error nothing changes.
    pub fn reset(&mut self, config: GrpcThrottleConfig) -> Result<(), ConfigError> {
        config.validate()?;
        self.config = config;
        self.max_micros = milli_rounded_micros(config.max_tokens);
        self.ratio_micros = milli_rounded_micros(config.token_ratio);
        self.bucket.set_mut(self.max_micros);
        self.successes.reset();
        self.failures.reset();
        self.withdrawals.reset();
        self.refusals.reset();
        Ok(())
    }

    /// The configuration this throttle was built with.
    pub fn config(&self) -> &GrpcThrottleConfig {
        &self.config
    }

    /// An attempt (first or retry) succeeded: add `token_ratio`, up to `max_tokens`.
    #[inline]
    pub fn on_success(&self) {
        self.successes.incr();
        self.bucket.add_capped(self.ratio_micros, self.max_micros);
    }

    /// An attempt (first or retry) failed with a retryable status, or was pushed back with
    /// "don't retry": take one token, stopping at zero. Failures that no retry could fix
    /// (a malformed request) should not be reported.
    #[inline]
    pub fn on_failure(&self) {
        self.failures.incr();
        self.bucket.sub_saturating(MICROS_PER_TOKEN);
    }

    /// Tell the throttle how an attempt ended, by the call contract
    /// ([`Outcome::retry_budget`]): a success adds `token_ratio`; a failure a retry could be
    /// for (a timeout, a transport error, a 5xx, throttling, "overloaded" pushback) takes a
    /// token; anything else (a permanent error, a local refusal, an ignored or cancelled
    /// call) changes nothing. Returns the verdict applied.
    #[inline]
    pub fn report(&self, outcome: Outcome) -> BudgetVerdict {
        let verdict = outcome.retry_budget();
        match verdict {
            BudgetVerdict::Success => self.on_success(),
            BudgetVerdict::Failure => self.on_failure(),
            BudgetVerdict::Nothing => {}
        }
        verdict
    }

    /// May a retry or hedge go now? `true` while the count is strictly above
    /// `max_tokens / 2`. Asking changes no tokens; it only counts the answer.
    #[inline]
    pub fn withdraw(&self) -> bool {
        // tokens > max / 2  <=>  2 * tokens > max, exact in integers (both <= 10^9).
        counted(
            self.bucket.load().saturating_mul(2) > self.max_micros,
            &self.withdrawals,
            &self.refusals,
        )
    }

    /// The token count in tokens.
    pub fn tokens(&self) -> f64 {
        tokens_of(self.bucket.load())
    }

    /// The exact token count in micro-tokens.
    pub fn tokens_micros(&self) -> u64 {
        self.bucket.load()
    }

    /// `max_tokens` after rounding, in micro-tokens.
    pub fn max_micros(&self) -> u64 {
        self.max_micros
    }

    /// `token_ratio` after rounding, in micro-tokens.
    pub fn ratio_micros(&self) -> u64 {
        self.ratio_micros
    }

    /// Counters: deposits (successes reported), failures reported, withdrawals (retries
    /// allowed) and refusals.
    pub fn stats(&self) -> RetryBudgetStats {
        RetryBudgetStats {
            deposits: self.successes.get(),
            withdrawals: self.withdrawals.get(),
            refusals: self.refusals.get(),
            refunds: 0,
            failures: self.failures.get(),
        }
    }
}

impl RetryGate for GrpcThrottle {
    /// [`GrpcThrottle::withdraw`]: retries and hedges are throttled alike; nothing is
    /// charged (the failure that caused the retry is charged through
    /// [`GrpcThrottle::on_failure`]).
    fn allow_retry(&self, _now: Nanos, _cause: RetryCause) -> bool {
        self.withdraw()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttle(max_tokens: f64, token_ratio: f64) -> GrpcThrottle {
        GrpcThrottle::new(GrpcThrottleConfig {
            max_tokens,
            token_ratio,
        })
        .unwrap()
    }

    #[test]
    fn threshold_is_strictly_above_half() {
        let t = throttle(10.0, 0.1);
        for _ in 0..5 {
            assert!(t.withdraw());
            t.on_failure();
        }
        assert_eq!(t.tokens_micros(), 5_000_000);
        assert!(!t.withdraw());
        t.on_success();
        assert_eq!(t.tokens_micros(), 5_100_000);
        assert!(t.withdraw());
    }

    #[test]
    fn count_stays_within_zero_and_max() {
        let t = throttle(3.0, 1.0);
        t.on_success();
        assert_eq!(t.tokens_micros(), 3_000_000);
        for _ in 0..10 {
            t.on_failure();
        }
        assert_eq!(t.tokens_micros(), 0);
        let s = t.stats();
        assert_eq!((s.deposits, s.failures), (1, 10));
    }

    #[test]
    fn odd_max_threshold() {
        // max 3: threshold 1.5, so 2 tokens allow, 1 does not, 1.501 does.
        let t = throttle(3.0, 0.501);
        t.on_failure();
        assert!(t.withdraw());
        t.on_failure();
        assert!(!t.withdraw());
        t.on_success();
        assert_eq!(t.tokens_micros(), 1_501_000);
        assert!(t.withdraw());
    }

    #[test]
    fn settings_round_to_thousandths() {
        let t = throttle(10.0004, 0.0996);
        assert_eq!(t.max_micros(), 10_000_000);
        assert_eq!(t.ratio_micros(), 100_000);
    }

    #[test]
    fn config_errors_name_the_field() {
        let e = |max_tokens, token_ratio| {
            GrpcThrottle::new(GrpcThrottleConfig {
                max_tokens,
                token_ratio,
            })
            .err()
            .map(|e| (e.field(), e.kind()))
        };
        assert_eq!(e(0.0, 0.1), Some(("max_tokens", ConfigErrorKind::Zero)));
        assert_eq!(
            e(1000.5, 0.1),
            Some(("max_tokens", ConfigErrorKind::OutOfRange))
        );
        assert_eq!(
            e(0.0004, 0.1),
            Some(("max_tokens", ConfigErrorKind::OutOfRange))
        );
        assert_eq!(
            e(f64::NAN, 0.1),
            Some(("max_tokens", ConfigErrorKind::NotFinite))
        );
        assert_eq!(e(10.0, 0.0), Some(("token_ratio", ConfigErrorKind::Zero)));
        assert_eq!(
            e(10.0, -1.0),
            Some(("token_ratio", ConfigErrorKind::Negative))
        );
        assert_eq!(
            e(10.0, 0.0004),
            Some(("token_ratio", ConfigErrorKind::OutOfRange))
        );
        assert_eq!(e(1000.0, 0.001), None);
    }
}
