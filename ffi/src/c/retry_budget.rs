//! `guards_retry_budget`: core's `RetryBudget`, one handle for the four budgets (token
//! bucket, gRPC retry throttling, AWS retry quota, windowed), chosen by `mode`.
//!
//! One handle with a mode rather than four handles: core has one `RetryBudget` with one set
//! of verbs (`deposit`, `withdraw`, `report`) over the four, and it is what the retry
//! policy, the retry driver and hedging are asked through; a C program switches budgets by
//! changing one config field, and every function that takes a budget takes any of them.
//! Fields of the modes not chosen are ignored (and not validated).
//!
//! A withdrawal returns a receipt, a take-once token like a permit: hand it back with
//! `guards_retry_budget_report` when the retry ended, whatever the outcome (in the AWS
//! mode a success refunds its cost; a second report, or another budget's receipt, is
//! refused and refunds nothing).
//!
//! ```c
//! guards_retry_budget_config cfg;
//! guards_retry_budget_config_default(&cfg);          /* token bucket: 10, +0.1 (Basketly C4) */
//! guards_retry_budget *b;
//! guards_retry_budget_new(&cfg, &b);
//! guards_retry_budget_deposit(b, now);                /* a first attempt goes out */
//! guards_retry_receipt r;
//! if (guards_retry_budget_withdraw(b, now, GUARDS_RETRY_CAUSE_TIMEOUT, &r) == GUARDS_RESULT_OK) {
//!     /* retry, then: */
//!     guards_retry_budget_report(b, guards_now_ns(), GUARDS_OUTCOME_SUCCESS, &r);
//! }
//! guards_retry_budget_free(b);
//! ```

use super::{call, call_out, config_default, free_handle, new_handle, read, retry_cause};
use crate::error::{Detail, Failure, GuardsResult};
use crate::handle::InPlace;
use crate::names::{
    AwsRetryQuotaConfig, GrpcThrottleConfig, Nanos, RetryBudget, RetryBudgetConfig,
    RetryBudgetStats, RetryReceipt, TokenBudgetConfig, WindowedBudgetConfig,
};
use crate::permit::{PermitSlots, PermitToken};

/// Which budget a `guards_retry_budget` runs (`mode`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_retry_budget_mode {
    /// A token bucket filled by first attempts (Basketly's C4): `token_bucket`.
    TokenBucket = 0,
    /// gRPC retry throttling: `grpc`.
    Grpc = 1,
    /// The AWS SDK retry quota, with refunds: `aws`.
    Aws = 2,
    /// Retries as a share of recent requests: `windowed`.
    Windowed = 3,
}

/// The token bucket: `ratio` tokens per first attempt, 1 per retry, at most `capacity`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_token_budget_config {
    /// The burst of retries allowed at once (default 10; 1..=1e9 tokens).
    pub capacity: f64,
    /// Tokens earned per first attempt (default 0.1; 0, or 0.000001..=1000).
    pub ratio: f64,
}

/// gRPC retry throttling: −1 token per failure, +`token_ratio` per success, retries only
/// above `max_tokens / 2`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_grpc_throttle_config {
    /// Tokens held (default 10; 0.001..=1000, three decimals).
    pub max_tokens: f64,
    /// Tokens added per success (default 0.1; 0.001..=1000, three decimals).
    pub token_ratio: f64,
}

/// The AWS retry quota: a retry costs by cause, a successful retry refunds its cost.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct guards_aws_retry_quota_config {
    /// Size of the bucket (default 500; 1..=1e9 tokens).
    pub capacity: u64,
    /// Cost of a retry after a transient error (default 5; 0..=capacity).
    pub transient_cost: u64,
    /// Cost of a retry after a timeout (default 10; 0..=capacity).
    pub timeout_cost: u64,
    /// Cost of a retry after throttling (default 5; 0..=capacity).
    pub throttled_cost: u64,
    /// Cost of a hedge (default 5; 0..=capacity).
    pub hedge_cost: u64,
    /// Tokens added when a call succeeds first time (default 1; 0..=capacity).
    pub success_increment: u64,
}

/// The windowed budget: retries as a share of the requests of the last `ttl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_windowed_budget_config {
    /// How long deposits and withdrawals count (default 10 s; 1 ms..=60 s).
    pub ttl_ns: u64,
    /// Retries a second allowed with no requests (default 10; 0..=1e6).
    pub min_retries_per_sec: f64,
    /// Retries allowed per request deposited (default 0.2; 0, or 0.000001..=1000).
    pub percent_can_retry: f64,
}

/// A retry budget's settings: `mode` chooses which of the four sub-configs is used (the
/// others are ignored). Start from `guards_retry_budget_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct guards_retry_budget_config {
    /// A `guards_retry_budget_mode` (default `GUARDS_RETRY_BUDGET_MODE_TOKEN_BUCKET`).
    pub mode: u32,
    /// Used when `mode` is `TOKEN_BUCKET`.
    pub token_bucket: guards_token_budget_config,
    /// Used when `mode` is `GRPC`.
    pub grpc: guards_grpc_throttle_config,
    /// Used when `mode` is `AWS`.
    pub aws: guards_aws_retry_quota_config,
    /// Used when `mode` is `WINDOWED`.
    pub windowed: guards_windowed_budget_config,
}

/// Proof that a retry was allowed, and what it cost: a take-once token. Plain data the
/// caller copies; hand it back once with `guards_retry_budget_report`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct guards_retry_receipt {
    /// The issuing budget's id (0 is never issued).
    pub guard: u64,
    /// The receipt's slot in the budget.
    pub slot: u32,
    /// The slot's generation when the receipt was issued.
    pub generation: u32,
    /// What the retry cost, in micro-tokens (10^6 per token; 0 in the gRPC mode).
    pub cost_micros: u64,
}

/// A retry budget's counters (every mode; relaxed snapshots, readable while traffic
/// flows).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_retry_budget_stats {
    /// Credits recorded: first attempts (token bucket, windowed), successes (gRPC),
    /// successes without a retry (AWS).
    pub deposits: u64,
    /// Retries allowed.
    pub withdrawals: u64,
    /// Retries refused.
    pub refusals: u64,
    /// Receipts refunded (AWS; 0 elsewhere).
    pub refunds: u64,
    /// Failures reported (gRPC; 0 elsewhere).
    pub failures: u64,
}

impl From<RetryBudgetStats> for guards_retry_budget_stats {
    fn from(s: RetryBudgetStats) -> Self {
        guards_retry_budget_stats {
            deposits: s.deposits,
            withdrawals: s.withdrawals,
            refusals: s.refusals,
            refunds: s.refunds,
            failures: s.failures,
        }
    }
}

impl guards_retry_budget_config {
    /// The schema defaults of every mode, `mode` the token bucket (core's default).
    pub fn of_defaults() -> Self {
        use crate::schema::{AWS_RETRY_QUOTA, GRPC_THROTTLE, TOKEN_BUDGET, WINDOWED_BUDGET};
        let mut c = Self::of_core(&RetryBudgetConfig::default());
        c.token_bucket = token_of_core(&TOKEN_BUDGET.defaults());
        c.grpc = grpc_of_core(&GRPC_THROTTLE.defaults());
        c.aws = aws_of_core(&AWS_RETRY_QUOTA.defaults());
        c.windowed = windowed_of_core(&WINDOWED_BUDGET.defaults());
        c
    }

    /// Core's config of the chosen mode, or `INVALID_ENUM` for an unknown mode.
    pub fn to_core(&self) -> Result<RetryBudgetConfig, Failure> {
        let t = &self.token_bucket;
        let g = &self.grpc;
        let a = &self.aws;
        let w = &self.windowed;
        Ok(match self.mode {
            0 => RetryBudgetConfig::TokenBucket(TokenBudgetConfig {
                capacity: t.capacity,
                ratio: t.ratio,
            }),
            1 => RetryBudgetConfig::Grpc(GrpcThrottleConfig {
                max_tokens: g.max_tokens,
                token_ratio: g.token_ratio,
            }),
            2 => RetryBudgetConfig::Aws(AwsRetryQuotaConfig {
                capacity: a.capacity,
                transient_cost: a.transient_cost,
                timeout_cost: a.timeout_cost,
                throttled_cost: a.throttled_cost,
                hedge_cost: a.hedge_cost,
                success_increment: a.success_increment,
            }),
            3 => RetryBudgetConfig::Windowed(WindowedBudgetConfig {
                ttl: Nanos(w.ttl_ns),
                min_retries_per_sec: w.min_retries_per_sec,
                percent_can_retry: w.percent_can_retry,
            }),
            _ => {
                return Err(Failure::bad_enum(
                    "mode",
                    "a guards_retry_budget_mode value, 0..=3",
                ))
            }
        })
    }

    /// The C form of core's `c`: its mode's sub-config set, the others at their defaults.
    pub fn of_core(c: &RetryBudgetConfig) -> Self {
        let mut out = guards_retry_budget_config {
            mode: c.mode() as u32,
            token_bucket: token_of_core(&TokenBudgetConfig::default()),
            grpc: grpc_of_core(&GrpcThrottleConfig::default()),
            aws: aws_of_core(&AwsRetryQuotaConfig::default()),
            windowed: windowed_of_core(&WindowedBudgetConfig::default()),
        };
        match c {
            RetryBudgetConfig::TokenBucket(t) => out.token_bucket = token_of_core(t),
            RetryBudgetConfig::Grpc(g) => out.grpc = grpc_of_core(g),
            RetryBudgetConfig::Aws(a) => out.aws = aws_of_core(a),
            RetryBudgetConfig::Windowed(w) => out.windowed = windowed_of_core(w),
        }
        out
    }
}

fn token_of_core(c: &TokenBudgetConfig) -> guards_token_budget_config {
    guards_token_budget_config {
        capacity: c.capacity,
        ratio: c.ratio,
    }
}

fn grpc_of_core(c: &GrpcThrottleConfig) -> guards_grpc_throttle_config {
    guards_grpc_throttle_config {
        max_tokens: c.max_tokens,
        token_ratio: c.token_ratio,
    }
}

fn aws_of_core(c: &AwsRetryQuotaConfig) -> guards_aws_retry_quota_config {
    guards_aws_retry_quota_config {
        capacity: c.capacity,
        transient_cost: c.transient_cost,
        timeout_cost: c.timeout_cost,
        throttled_cost: c.throttled_cost,
        hedge_cost: c.hedge_cost,
        success_increment: c.success_increment,
    }
}

fn windowed_of_core(c: &WindowedBudgetConfig) -> guards_windowed_budget_config {
    guards_windowed_budget_config {
        ttl_ns: c.ttl.0,
        min_retries_per_sec: c.min_retries_per_sec,
        percent_can_retry: c.percent_can_retry,
    }
}

/// A retry budget (opaque). Thread-safe: share one handle between threads (every
/// operation is lock-free).
#[derive(Debug)]
pub struct guards_retry_budget {
    budget: InPlace<RetryBudget>,
    receipts: PermitSlots<RetryReceipt>,
}

impl guards_retry_budget {
    /// Build from a C config.
    pub fn new(cfg: &guards_retry_budget_config) -> Result<Self, Failure> {
        Ok(guards_retry_budget {
            budget: InPlace::new(cfg.to_core()?)?,
            receipts: PermitSlots::new(),
        })
    }

    /// Core's budget (for the retry policy, the retry driver and hedging).
    pub fn budget(&self) -> &RetryBudget {
        &self.budget
    }

    fn withdraw(&self, now: u64, cause: u32) -> Result<guards_retry_receipt, Failure> {
        let cause = retry_cause(cause)?;
        let Some(r) = self.budget.withdraw(Nanos(now), cause) else {
            return Err(Failure {
                code: GuardsResult::RetryBudgetExhausted,
                detail: Detail::BudgetExhausted {
                    mode: self.budget.mode(),
                    cause,
                },
            });
        };
        let cost_micros = r.cost_micros();
        match self.receipts.insert(r) {
            Ok(t) => Ok(guards_retry_receipt {
                guard: t.guard,
                slot: t.slot,
                generation: t.generation,
                cost_micros,
            }),
            Err((r, code)) => {
                // The tokens stay spent, as for a retry that failed; the caller is told
                // no receipt was issued and must not retry.
                drop(r);
                Err(Failure::code(code))
            }
        }
    }

    fn report(
        &self,
        now: u64,
        outcome: u32,
        receipt: Option<&guards_retry_receipt>,
    ) -> Result<(), Failure> {
        let outcome = super::outcome(outcome)?;
        let r = match receipt {
            None => None,
            Some(r) => Some(
                self.receipts
                    .take(PermitToken {
                        guard: r.guard,
                        slot: r.slot,
                        generation: r.generation,
                    })
                    .map_err(Failure::code)?,
            ),
        };
        self.budget.report(Nanos(now), outcome, r);
        Ok(())
    }
}

/// Write the default config to `out`: mode `TOKEN_BUCKET` (10 tokens, +0.1 per first
/// attempt: Basketly's C4) and every mode's sub-config at its defaults.
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_retry_budget_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_config_default(
    out: *mut guards_retry_budget_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_retry_budget_config::of_defaults) }
}

/// Build a retry budget from `config` into `*out`. Errors: `NULL_ARGUMENT`,
/// `INVALID_ENUM` (mode), `CONFIG_*` naming the field of the chosen mode,
/// `OUT_OF_MEMORY`. Free it with `guards_retry_budget_free`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_new(
    config: *const guards_retry_budget_config,
    out: *mut *mut guards_retry_budget,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { new_handle(config, out, guards_retry_budget::new) }
}

/// Free a retry budget (NULL is a no-op). Its outstanding receipts become invalid.
///
/// # Safety
/// `b` must be NULL or a handle from `guards_retry_budget_new` not freed before, and no
/// other thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_free(b: *mut guards_retry_budget) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(b) }
}

/// A first attempt goes out at `now_ns` (the token bucket and the windowed budget earn;
/// the gRPC and AWS modes ignore it).
///
/// # Safety
/// `b` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_deposit(
    b: *mut guards_retry_budget,
    now_ns: u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(b, "budget", |b| {
            b.budget.deposit(Nanos(now_ns));
            Ok(())
        })
    }
}

/// May a retry (or hedge) caused by `cause` (a `guards_retry_cause`) go at `now_ns`?
/// `GUARDS_RESULT_OK` with its receipt in `*out` (the cost is charged), or
/// `GUARDS_RESULT_RETRY_BUDGET_EXHAUSTED` (nothing charged). Errors: `INVALID_ENUM`
/// (cause).
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_withdraw(
    b: *mut guards_retry_budget,
    now_ns: u64,
    cause: u32,
    out: *mut guards_retry_receipt,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { call_out(b, "budget", out, |b| b.withdraw(now_ns, cause)) }
}

/// Tell the budget how an attempt ended at `now_ns` (`outcome`: a `guards_outcome`), by
/// the call contract: gRPC takes a token on a failure a retry could be for and adds
/// `token_ratio` on a success; AWS refunds `receipt` on a success (or adds its success
/// increment for a first attempt); the token bucket and the windowed budget ignore
/// outcomes. `receipt` is the receipt of the retry this attempt was, or NULL for a first
/// attempt; it is taken back whatever the outcome (report a retry that was never made as
/// `GUARDS_OUTCOME_CANCELLED`), once: a second report of it, or another budget's, is
/// refused (`PERMIT_*`) and nothing changes. An invalid `outcome` (`INVALID_ENUM`) leaves
/// the receipt outstanding.
///
/// # Safety
/// `b` must be NULL or a live handle; `receipt` NULL or valid for reads.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_report(
    b: *mut guards_retry_budget,
    now_ns: u64,
    outcome: u32,
    receipt: *const guards_retry_receipt,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(b, "budget", |b| {
            let r = if receipt.is_null() {
                None
            } else {
                // SAFETY: non-null; valid for reads (caller's contract).
                Some(super::arg(receipt, "receipt")?)
            };
            b.report(now_ns, outcome, r)
        })
    }
}

/// The balance at `now_ns`, in micro-tokens (10^6 per token), into `*out`. Negative only in
/// the windowed mode (retries taken beyond the window's earnings).
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_tokens_micros(
    b: *const guards_retry_budget,
    now_ns: u64,
    out: *mut i64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(b, "budget", out, |b| b.budget.tokens_micros(Nanos(now_ns))) }
}

/// The counters into `*out`; safe while other threads use the budget.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_get_stats(
    b: *const guards_retry_budget,
    out: *mut guards_retry_budget_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(b, "budget", out, |b| b.budget.stats().into()) }
}

/// The config the budget was built with (its mode's sub-config; the others at their
/// defaults).
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_get_config(
    b: *const guards_retry_budget,
    out: *mut guards_retry_budget_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(b, "budget", out, |b| {
            guards_retry_budget_config::of_core(&b.budget.config())
        })
    }
}

/// Receipts issued and not yet reported, into `*out` (a scan; for tests and diagnostics).
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_retry_budget_outstanding(
    b: *const guards_retry_budget,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(b, "budget", out, |b| b.receipts.outstanding()) }
}
