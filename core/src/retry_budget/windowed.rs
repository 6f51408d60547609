//! [`WindowedBudget`]: a retry budget over a sliding time window (mode "windowed", after
//! Finagle's `RetryBudget`).

use crate::counter::Counter;
use crate::error::{check_f64, check_nanos, ConfigError, ConfigErrorKind};
use crate::math;
use crate::retry_policy::{RetryCause, RetryGate};
use crate::sync::{set_mut, AtomicU64, Ordering};
use crate::time::Nanos;

use super::{micros_of, RetryBudgetStats, MICROS_PER_TOKEN};

/// Default number of buckets the window is cut into. A const-generic parameter of
/// [`WindowedBudget`]; valid `1..=1000` (checked at compile time).
pub const DEFAULT_BUCKETS: usize = 10;

/// Default for [`WindowedBudgetConfig::ttl`]: 10 s. Valid range: 1 ms..=60 s.
pub const DEFAULT_WINDOW_TTL: Nanos = Nanos::from_secs(10);

/// Default for [`WindowedBudgetConfig::min_retries_per_sec`]: 10 retries a second.
/// Valid range: `0.0..=1e6`.
pub const DEFAULT_MIN_RETRIES_PER_SEC: f64 = 10.0;

/// Default for [`WindowedBudgetConfig::percent_can_retry`]: 0.2, i.e. retries up to 20 % of
/// requests. Valid range: `0.0` or `0.000001..=1000.0`.
pub const DEFAULT_PERCENT_CAN_RETRY: f64 = 0.2;

const MIN_TTL: Nanos = Nanos::from_millis(1);
const MAX_TTL: Nanos = Nanos::from_secs(60);

const EPOCH_BITS: u32 = 56;
const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;
const ERA_MASK: u64 = 0xFF;
/// A head jump of this many buckets or more starts a new era.
const ERA_GAP: u64 = 1 << 23;
const TAG_EPOCH_MASK: u64 = 0xFF_FFFF;
const LOW32: u64 = 0xFFFF_FFFF;
/// A bucket word no head ever expects at construction (era 255): every bucket is claimed
/// by the first sweep.
const UNCLAIMED: u64 = u64::MAX;

/// Configuration of a [`WindowedBudget`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowedBudgetConfig {
    /// How long deposits and withdrawals count. Default [`DEFAULT_WINDOW_TTL`];
    /// valid 1 ms..=60 s (`1_000_000..=60_000_000_000` ns).
    pub ttl: Nanos,
    /// The floor: this many retries a second are allowed with no requests at all, i.e.
    /// `min_retries_per_sec × ttl` per window (rounded to the nearest micro-token).
    /// Default [`DEFAULT_MIN_RETRIES_PER_SEC`]; valid `0.0..=1e6`.
    pub min_retries_per_sec: f64,
    /// Retries allowed per request deposited in the window (0.2 = 20 %). Rounded to the
    /// nearest micro-token; a positive value that rounds to zero is rejected.
    /// Default [`DEFAULT_PERCENT_CAN_RETRY`]; valid `0.0` or `0.000001..=1000.0`.
    pub percent_can_retry: f64,
}

impl Default for WindowedBudgetConfig {
    fn default() -> Self {
        WindowedBudgetConfig {
            ttl: DEFAULT_WINDOW_TTL,
            min_retries_per_sec: DEFAULT_MIN_RETRIES_PER_SEC,
            percent_can_retry: DEFAULT_PERCENT_CAN_RETRY,
        }
    }
}

impl WindowedBudgetConfig {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_nanos(
            "ttl",
            self.ttl,
            MIN_TTL,
            MAX_TTL,
            "a duration in 1 ms..=60 s (nanoseconds)",
        )?;
        check_f64(
            "min_retries_per_sec",
            self.min_retries_per_sec,
            0.0,
            1e6,
            "retries a second in 0.0..=1e6",
        )?;
        let expected = "0.0 or a fraction in 0.000001..=1000.0";
        check_f64(
            "percent_can_retry",
            self.percent_can_retry,
            0.0,
            1000.0,
            expected,
        )?;
        if self.percent_can_retry > 0.0 && micros_of(self.percent_can_retry) == 0 {
            return Err(ConfigError::new(
                "percent_can_retry",
                ConfigErrorKind::OutOfRange,
                expected,
            ));
        }
        Ok(())
    }

    /// The floor `min_retries_per_sec × ttl` in micro-tokens, rounded to the nearest.
    fn reserve_micros(&self) -> u64 {
        // tokens = rate × ttl_ns / 1e9, micro-tokens = tokens × 1e6 = rate × ttl_ns / 1e3.
        math::to_u64_saturating(math::round(
            self.min_retries_per_sec * self.ttl.as_u64() as f64 / 1e3,
        ))
    }
}

/// One bucket: the running totals when it began, each tagged with its bucket number.
#[repr(C)]
#[derive(Debug)]
struct Slot {
    deposits: AtomicU64,
    withdrawals: AtomicU64,
}

impl Slot {
    fn new() -> Self {
        Slot {
            deposits: AtomicU64::new(UNCLAIMED),
            withdrawals: AtomicU64::new(UNCLAIMED),
        }
    }
}

#[inline]
fn era_of(head: u64) -> u64 {
    (head >> EPOCH_BITS) & ERA_MASK
}

#[inline]
fn epoch_of(head: u64) -> u64 {
    head & EPOCH_MASK
}

#[inline]
fn tag(era: u64, epoch: u64) -> u64 {
    (era << 24) | (epoch & TAG_EPOCH_MASK)
}

#[inline]
fn tag_of_word(word: u64) -> u64 {
    word >> 32
}

/// A retry budget over a sliding window of `ttl`, cut into `BUCKETS` buckets
/// (default [`DEFAULT_BUCKETS`]). Lock-free.
///
/// All bytes zero is a valid, unconfigured `WindowedBudget` (no floor, no share: it refuses
/// every retry): safe to call, meant to be [`reset`](WindowedBudget::reset) before use; see
/// "Building in place" in the crate docs.
///
/// Within any window of `ttl`, retries may go up to `percent_can_retry` × the requests
/// deposited in that window, plus a floor of `min_retries_per_sec` × `ttl` that needs no
/// requests at all. Deposits and withdrawals both expire when they leave the window, so a
/// burst of failures long ago does not hold retries back today, and a quiet client still
/// gets its floor.
///
/// # Exactness
///
/// The window, and what happens at bucket boundaries:
///
/// Time is cut into `BUCKETS` buckets of `width = ttl / BUCKETS` nanoseconds (rounded
/// down; the window really covers `BUCKETS × width`, which is `ttl` minus less than
/// `BUCKETS` ns). The window at a call is the call's bucket and the `BUCKETS − 1` before
/// it. So:
///
/// - a deposit or withdrawal counts for at least `ttl − width` and less than `ttl` after
///   it happened (it expires with its whole bucket);
/// - time only moves forward: a call whose `now` lies before the newest bucket any call has
///   seen is counted in that newest bucket;
/// - a call that races another call entering a new bucket may be counted in the new bucket
///   (it then expires one bucket later), and a withdrawal racing a boundary is decided by
///   the window of the bucket it started in;
/// - counts are kept modulo 2^32: at most 2^32 − 1 deposits and as many withdrawals may
///   fall in one window (4.29 × 10^9; at the largest `ttl` of 60 s that is 71 million a
///   second).
///
/// Apart from those boundary effects the budget is exact under any interleaving: two
/// withdrawals can never both take the last retry, because every grant is a
/// compare-and-swap on the one running total of withdrawals.
///
/// # The atomic protocol
///
/// State: `deposit_total` and `withdraw_total`, running counts since construction;
/// `head`, the newest bucket number seen (with an 8-bit era, below); `swept`, the head for
/// which every bucket of the window is known to be prepared; and per bucket two words
/// `tag << 32 | snapshot`, where `snapshot` is the low 32 bits of the running total when
/// the bucket began. The window's count is then `total − snapshot(oldest bucket)`,
/// computed modulo 2^32.
///
/// 1. **Advance.** A call computes its bucket number and raises `head` to it with a
///    compare-and-swap (never lowers it).
/// 2. **Sweep.** If `swept != head`, the call walks the window's buckets and *claims*
///    every bucket whose tag is not the one expected for this head: it stores the expected
///    tag and the current running total with a compare-and-swap from the exact word it
///    read. Before each claim it re-reads `head`; if the head has moved on it abandons the
///    sweep and starts again at the newer head. A claim is only made for buckets of the
///    current head, and a newer head's claims are visible (acquire/release) to anyone who
///    sees their effect, so an older sweep can never overwrite a newer one. Then it stores
///    `swept = head`. Sweeps are idempotent: two calls sweeping together store the same
///    tags, and the first claim of a bucket wins.
/// 3. **Deposit** is one `fetch_add` on `deposit_total`. **Withdraw** reads the oldest
///    bucket's two snapshots (checking their tags; a mismatch means the head moved, so it
///    starts again), then loops: compute the balance from the totals, refuse without any
///    write if it is below one token, else compare-and-swap `withdraw_total` from the value
///    the balance was computed with. A failed CAS re-reads the total and re-checks.
///
/// Every loop retries only because another call changed the state, so the protocol is
/// lock-free. The common path (same bucket as the previous call) is: one load of `head`,
/// one of `swept`, then one `fetch_add` (deposit), or four loads (the oldest bucket's two
/// words and the two totals) and one CAS (withdraw). The deposit and withdrawal counts in
/// [`WindowedBudget::stats`] are the running totals themselves.
///
/// Tags are the bucket number's low 24 bits plus an 8-bit era; the era advances whenever
/// the head jumps by 2^23 buckets or more, so a bucket's tag from before a long idle gap
/// can never be mistaken for a current one.
///
/// # Examples
/// ```
/// use guards_core::retry_budget::{WindowedBudget, WindowedBudgetConfig};
/// use guards_core::Nanos;
/// let b: WindowedBudget = WindowedBudget::new(WindowedBudgetConfig {
///     ttl: Nanos::from_secs(10),
///     min_retries_per_sec: 0.0,
///     percent_can_retry: 0.5,
/// })
/// .unwrap();
/// let t0 = Nanos::from_secs(100);
/// b.deposit(t0);
/// b.deposit(t0);
/// assert!(b.withdraw(t0)); // 2 requests × 0.5 = one retry
/// assert!(!b.withdraw(t0));
/// // Ten seconds later both deposits and the withdrawal have expired.
/// assert_eq!(b.tokens_micros(t0.saturating_add(Nanos::from_secs(10))), 0);
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct WindowedBudget<const BUCKETS: usize = DEFAULT_BUCKETS> {
    config: WindowedBudgetConfig,
    width: u64,
    reserve_micros: u64,
    percent_micros: u64,
    head: AtomicU64,
    swept: AtomicU64,
    deposit_total: AtomicU64,
    withdraw_total: AtomicU64,
    slots: [Slot; BUCKETS],
    refusals: Counter,
}

impl<const BUCKETS: usize> WindowedBudget<BUCKETS> {
    const NB: u64 = BUCKETS as u64;

    /// An empty window (only the floor is available), or the first invalid field of
    /// `config`.
    pub fn new(config: WindowedBudgetConfig) -> Result<Self, ConfigError> {
        let mut b = WindowedBudget {
            config: WindowedBudgetConfig {
                ttl: Nanos::ZERO,
                min_retries_per_sec: 0.0,
                percent_can_retry: 0.0,
            },
            width: 0,
            reserve_micros: 0,
            percent_micros: 0,
            head: AtomicU64::new(0),
            swept: AtomicU64::new(0),
            deposit_total: AtomicU64::new(0),
            withdraw_total: AtomicU64::new(0),
            slots: core::array::from_fn(|_| Slot::new()),
            refusals: Counter::new(),
        };
        b.reset(config)?;
        Ok(b)
    }

    /// Validate `config`, then put this budget in exactly the state
    /// [`WindowedBudget::new`]`(config)` gives (an empty window, zeroed counters), in
    /// place: the buckets are rewritten one by one. On error nothing changes.
    pub fn reset(&mut self, config: WindowedBudgetConfig) -> Result<(), ConfigError> {
        const {
            assert!(
                BUCKETS >= 1 && BUCKETS <= 1000,
                "BUCKETS must be in 1..=1000"
            )
        };
        config.validate()?;
        self.config = config;
        // ttl >= 1 ms and BUCKETS <= 1000, so width >= 1 µs.
        self.width = (config.ttl.as_u64() / Self::NB).max(1);
        self.reserve_micros = config.reserve_micros();
        self.percent_micros = micros_of(config.percent_can_retry);
        set_mut(&mut self.head, 0);
        set_mut(&mut self.swept, u64::MAX);
        set_mut(&mut self.deposit_total, 0);
        set_mut(&mut self.withdraw_total, 0);
        for slot in &mut self.slots {
            set_mut(&mut slot.deposits, UNCLAIMED);
            set_mut(&mut slot.withdrawals, UNCLAIMED);
        }
        self.refusals.reset();
        Ok(())
    }

    /// The configuration this budget was built with.
    pub fn config(&self) -> &WindowedBudgetConfig {
        &self.config
    }

    /// The bucket width in nanoseconds (`ttl / BUCKETS`, rounded down).
    pub fn bucket_width(&self) -> Nanos {
        Nanos(self.width)
    }

    /// The floor `min_retries_per_sec × ttl`, in micro-tokens.
    pub fn reserve_micros(&self) -> u64 {
        self.reserve_micros
    }

    /// A request (first attempt) is going out at `now`: it earns `percent_can_retry`
    /// tokens for as long as it stays in the window.
    #[inline]
    pub fn deposit(&self, now: Nanos) {
        self.prepare(now);
        self.deposit_total.fetch_add(1, Ordering::AcqRel);
    }

    /// May a retry go at `now`? Records the withdrawal and returns `true` if the window's
    /// balance covers one token; otherwise returns `false` and records nothing.
    #[inline]
    pub fn withdraw(&self, now: Nanos) -> bool {
        loop {
            let Some((d_snap, w_snap)) = self.window_start(now) else {
                continue;
            };
            let d_total = self.deposit_total.load(Ordering::Acquire);
            let mut w_total = self.withdraw_total.load(Ordering::Acquire);
            loop {
                let w_win = w_total.wrapping_sub(w_snap) & LOW32;
                let need = w_win.saturating_add(1).saturating_mul(MICROS_PER_TOKEN) as u128;
                if self.earned(d_total, d_snap) < need {
                    self.refusals.incr();
                    return false;
                }
                match self.withdraw_total.compare_exchange_weak(
                    w_total,
                    w_total.wrapping_add(1),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return true,
                    Err(actual) => w_total = actual,
                }
            }
        }
    }

    /// The window's balance at `now` in micro-tokens: floor + earned − withdrawn. Negative
    /// when deposits expired before the withdrawals they paid for.
    pub fn tokens_micros(&self, now: Nanos) -> i64 {
        loop {
            let Some((d_snap, w_snap)) = self.window_start(now) else {
                continue;
            };
            // Withdrawals first: every grant counted here was justified by deposits made
            // before it, all of which the later load of the deposit total sees, so a
            // reading racing grants never dips below what the budget really holds.
            let w_total = self.withdraw_total.load(Ordering::Acquire);
            let d_total = self.deposit_total.load(Ordering::Acquire);
            let w_win = (w_total.wrapping_sub(w_snap) & LOW32) as u128;
            let spent = w_win.saturating_mul(MICROS_PER_TOKEN as u128);
            let earned = self.earned(d_total, d_snap);
            let balance = if earned >= spent {
                i64::try_from(earned.saturating_sub(spent)).unwrap_or(i64::MAX)
            } else {
                i64::try_from(spent.saturating_sub(earned))
                    .map(|v| -v)
                    .unwrap_or(i64::MIN)
            };
            return balance;
        }
    }

    /// The window's balance at `now` in tokens.
    pub fn tokens(&self, now: Nanos) -> f64 {
        self.tokens_micros(now) as f64 / MICROS_PER_TOKEN as f64
    }

    /// Counters: deposits (requests), withdrawals (retries allowed) and refusals. The
    /// first two are the running totals the protocol keeps anyway, so counting them costs
    /// nothing extra.
    pub fn stats(&self) -> RetryBudgetStats {
        RetryBudgetStats {
            deposits: self.deposit_total.load(Ordering::Relaxed),
            withdrawals: self.withdraw_total.load(Ordering::Relaxed),
            refusals: self.refusals.get(),
            refunds: 0,
            failures: 0,
        }
    }

    /// floor + percent × deposits in the window, in micro-tokens.
    #[inline]
    fn earned(&self, d_total: u64, d_snap: u64) -> u128 {
        let d_win = (d_total.wrapping_sub(d_snap) & LOW32) as u128;
        (self.reserve_micros as u128)
            .saturating_add((self.percent_micros as u128).saturating_mul(d_win))
    }

    /// Bring the window up to `now` and return the oldest bucket's snapshots, or `None` if
    /// the head moved on meanwhile (the caller starts again).
    #[inline]
    fn window_start(&self, now: Nanos) -> Option<(u64, u64)> {
        let head = self.prepare(now);
        let oldest = epoch_of(head).saturating_sub(Self::NB.saturating_sub(1));
        let want = tag(era_of(head), oldest);
        let slot = self.slot(oldest)?;
        let d = slot.deposits.load(Ordering::Acquire);
        let w = slot.withdrawals.load(Ordering::Acquire);
        if tag_of_word(d) != want || tag_of_word(w) != want {
            // The head moved on and a newer sweep re-claimed the bucket: start again. (If
            // the head had not moved this would mean a bucket of a swept window lost its
            // claim, which the protocol rules out; sweeping again here makes even that
            // case heal instead of looping.)
            self.sweep(head);
            return None;
        }
        Some((d & LOW32, w & LOW32))
    }

    #[inline]
    fn slot(&self, epoch: u64) -> Option<&Slot> {
        // The remainder is below BUCKETS, so it fits usize and `get` always succeeds.
        self.slots.get(usize::try_from(epoch % Self::NB).ok()?)
    }

    /// Steps 1 and 2 of the protocol: advance the head to `now`'s bucket and make sure
    /// every bucket of its window is claimed. Returns the head the call runs at.
    #[inline]
    fn prepare(&self, now: Nanos) -> u64 {
        loop {
            let head = self.advance(now);
            if self.swept.load(Ordering::Acquire) == head {
                return head;
            }
            if self.sweep(head) {
                self.swept.store(head, Ordering::Release);
                return head;
            }
        }
    }

    /// Raise the head to `now`'s bucket; return the head (which may be newer than `now`).
    #[inline]
    fn advance(&self, now: Nanos) -> u64 {
        // Offset by BUCKETS so that every bucket of the first window has a number >= 1.
        // (`width` is at least 1 once configured; 0 only in an all-zero, unconfigured
        // budget, which then sees every instant in one bucket.)
        let e = now
            .as_u64()
            .checked_div(self.width)
            .unwrap_or(0)
            .saturating_add(Self::NB);
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            let cur = epoch_of(head);
            if e <= cur {
                return head;
            }
            let era = if e.saturating_sub(cur) >= ERA_GAP {
                (era_of(head) + 1) & ERA_MASK
            } else {
                era_of(head)
            };
            let new = (era << EPOCH_BITS) | (e & EPOCH_MASK);
            match self
                .head
                .compare_exchange_weak(head, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return new,
                Err(actual) => head = actual,
            }
        }
    }

    /// Claim every bucket of `head`'s window. `false` if the head moved on meanwhile.
    fn sweep(&self, head: u64) -> bool {
        let era = era_of(head);
        let top = epoch_of(head);
        for k in 0..Self::NB {
            let epoch = top.saturating_sub(k);
            let Some(slot) = self.slot(epoch) else {
                continue;
            };
            let want = tag(era, epoch);
            if !self.claim(&slot.deposits, &self.deposit_total, want, head)
                || !self.claim(&slot.withdrawals, &self.withdraw_total, want, head)
            {
                return false;
            }
        }
        true
    }

    /// Make `word` carry tag `want`, snapshotting `total` if it has to change it.
    fn claim(&self, word: &AtomicU64, total: &AtomicU64, want: u64, head: u64) -> bool {
        let mut cur = word.load(Ordering::Acquire);
        loop {
            if tag_of_word(cur) == want {
                return true;
            }
            if self.head.load(Ordering::Acquire) != head {
                return false;
            }
            let new = (want << 32) | (total.load(Ordering::Acquire) & LOW32);
            match word.compare_exchange(cur, new, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }
}

impl<const BUCKETS: usize> RetryGate for WindowedBudget<BUCKETS> {
    /// [`WindowedBudget::withdraw`]; the cause does not matter to this mode.
    fn allow_retry(&self, now: Nanos, _cause: RetryCause) -> bool {
        self.withdraw(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn budget(ttl_s: u64, min: f64, pct: f64) -> WindowedBudget {
        WindowedBudget::new(WindowedBudgetConfig {
            ttl: Nanos::from_secs(ttl_s),
            min_retries_per_sec: min,
            percent_can_retry: pct,
        })
        .unwrap()
    }

    #[test]
    fn floor_only() {
        // 1 retry a second over 2 s: two retries per window.
        let b = budget(2, 1.0, 0.0);
        assert_eq!(b.reserve_micros(), 2_000_000);
        assert!(b.withdraw(Nanos(0)));
        assert!(b.withdraw(Nanos(0)));
        assert!(!b.withdraw(Nanos(0)));
        // Still inside the window at 1.99 s, expired at 2 s.
        assert!(!b.withdraw(Nanos(2 * S - 1)));
        assert!(b.withdraw(Nanos(2 * S)));
        let s = b.stats();
        assert_eq!((s.withdrawals, s.refusals), (3, 2));
    }

    #[test]
    fn deposits_earn_and_expire_with_their_bucket() {
        // ttl 10 s, 10 buckets of 1 s.
        let b = budget(10, 0.0, 0.5);
        b.deposit(Nanos(500_000_000)); // bucket 0
        b.deposit(Nanos(3 * S)); // bucket 3
        assert_eq!(b.tokens_micros(Nanos(3 * S)), 1_000_000);
        assert!(b.withdraw(Nanos(4 * S))); // bucket 4
        assert_eq!(b.tokens_micros(Nanos(4 * S)), 0);
        // At 10 s bucket 0 leaves the window: 0.5 earned - 1 withdrawn.
        assert_eq!(b.tokens_micros(Nanos(10 * S)), -500_000);
        assert!(!b.withdraw(Nanos(10 * S)));
        // At 14 s the withdrawal (bucket 4) has expired too; bucket 3 expired at 13 s.
        assert_eq!(b.tokens_micros(Nanos(14 * S)), 0);
    }

    #[test]
    fn late_calls_count_in_the_newest_bucket() {
        let b = budget(10, 0.0, 1.0);
        b.deposit(Nanos(20 * S));
        b.deposit(Nanos(5 * S)); // older than the head: counted at 20 s
        assert_eq!(b.tokens_micros(Nanos(29 * S)), 2_000_000);
        assert_eq!(b.tokens_micros(Nanos(30 * S)), 0);
    }

    #[test]
    fn long_idle_gap_starts_a_new_era() {
        let b = budget(1, 0.0, 1.0);
        b.deposit(Nanos(0));
        assert_eq!(b.tokens_micros(Nanos(0)), 1_000_000);
        // 2^23 buckets of 100 ms later (about 9.7 days).
        let later = Nanos((1u64 << 23) * 100_000_000);
        assert_eq!(b.tokens_micros(later), 0);
        assert_eq!(era_of(b.head.load(Ordering::Relaxed)), 1);
        b.deposit(later);
        assert!(b.withdraw(later));
        assert!(!b.withdraw(later));
        // Near the end of time the clock still works (no overflow).
        assert_eq!(b.tokens_micros(Nanos::MAX), 0);
        b.deposit(Nanos::MAX);
        assert_eq!(b.tokens_micros(Nanos::MAX), 1_000_000);
    }

    #[test]
    fn exact_multiple_of_the_tag_space_is_not_mistaken() {
        // A gap of exactly 2^24 buckets would alias tags without the era.
        let b = budget(1, 0.0, 1.0);
        b.deposit(Nanos(0));
        let later = Nanos((1u64 << 24) * 100_000_000);
        assert_eq!(b.tokens_micros(later), 0);
    }

    #[test]
    fn config_errors_name_the_field() {
        let e = |ttl: u64, min: f64, pct: f64| {
            WindowedBudgetConfig {
                ttl: Nanos(ttl),
                min_retries_per_sec: min,
                percent_can_retry: pct,
            }
            .validate()
            .err()
            .map(|e| (e.field(), e.kind()))
        };
        assert_eq!(e(0, 1.0, 0.2), Some(("ttl", ConfigErrorKind::Zero)));
        assert_eq!(
            e(999_999, 1.0, 0.2),
            Some(("ttl", ConfigErrorKind::OutOfRange))
        );
        assert_eq!(
            e(61 * S, 1.0, 0.2),
            Some(("ttl", ConfigErrorKind::OutOfRange))
        );
        assert_eq!(
            e(S, f64::NAN, 0.2),
            Some(("min_retries_per_sec", ConfigErrorKind::NotFinite))
        );
        assert_eq!(
            e(S, -1.0, 0.2),
            Some(("min_retries_per_sec", ConfigErrorKind::Negative))
        );
        assert_eq!(
            e(S, 1.0, 1e-9),
            Some(("percent_can_retry", ConfigErrorKind::OutOfRange))
        );
        assert_eq!(
            e(S, 1.0, 1000.5),
            Some(("percent_can_retry", ConfigErrorKind::OutOfRange))
        );
        assert_eq!(e(S, 0.0, 0.0), None);
    }

    #[test]
    fn one_bucket_window() {
        let b: WindowedBudget<1> = WindowedBudget::new(WindowedBudgetConfig {
            ttl: Nanos(S),
            min_retries_per_sec: 0.0,
            percent_can_retry: 1.0,
        })
        .unwrap();
        b.deposit(Nanos(0));
        assert!(b.withdraw(Nanos(S - 1)));
        assert!(!b.withdraw(Nanos(S - 1)));
        b.deposit(Nanos(S));
        assert!(b.withdraw(Nanos(S)));
    }
}
