//! `RetryPolicy`: retry after N ms, or give up and why.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::error::Failure;
use guards::handle::{BuildInPlace, InPlace};
use guards::names::{ConfigError, RetryPolicyConfig};
use guards::schema;
use guards_core::retry_policy::{
    Idempotency, RetryContext, RetryDecision, RetryGate, RetryPolicy as CorePolicy,
};
use guards_core::Rng;

use crate::args;
use crate::convert::{config_object, ms, num, numbers, Options};
use crate::errors::type_error;
use crate::retry_budget::Gate;
use crate::shared::{self, Placed};

const CLASS: &str = "RetryPolicy";

/// A policy and its jitter generator, placed together (so worker threads sharing a policy
/// share its generator and its counters).
#[repr(C)]
pub(crate) struct PolicyState {
    pub(crate) policy: CorePolicy,
    pub(crate) rng: Rng,
}

/// A policy config and the seed of its generator.
pub(crate) type PolicySeed = (RetryPolicyConfig, u64);

impl BuildInPlace for PolicyState {
    type Config = PolicySeed;
    fn reset_in_place(
        &mut self,
        (config, seed): PolicySeed,
    ) -> std::result::Result<(), ConfigError> {
        self.policy.reset(config)?;
        self.rng = Rng::new(seed);
        Ok(())
    }
}

pub(crate) struct PolicyCore {
    pub(crate) s: InPlace<PolicyState>,
    _mem: Option<Uint8Array>,
}

impl PolicyCore {
    pub(crate) fn policy(&self) -> &CorePolicy {
        &self.s.policy
    }

    pub(crate) fn rng(&self) -> &Rng {
        &self.s.rng
    }
}

/// The idempotency named `name`.
pub(crate) fn idempotency(env: &Env, name: &str) -> Result<Idempotency> {
    Idempotency::from_name(name).ok_or_else(|| {
        type_error(
            env,
            "idempotency",
            &format!("`idempotency` must be 'idempotent', 'keyed_side_effect' or 'unkeyed_side_effect', not {name:?}"),
        )
    })
}

/// A seed from the clock and the process id (when the options give none).
pub(crate) fn fresh_seed(salt: u64) -> u64 {
    guards::clock::now_ns() ^ salt ^ u64::from(std::process::id()).rotate_left(32)
}

fn read_config(env: &Env, options: Option<Unknown<'_>>) -> Result<(PolicySeed, u64)> {
    let mut o = Options::read(env, CLASS, options)?;
    let seed = match o.take("seed") {
        None => fresh_seed(0x9E37_79B9_7F4A_7C15),
        Some((camel, v)) => crate::convert::whole(env, CLASS, &camel, &v, u64::MAX)?,
    };
    let c = o.build(env, &schema::RETRY_POLICY, "")?;
    // Validate here so the error names the field (`reset` validates again).
    CorePolicy::new(c)
        .map_err(|e| crate::errors::config_failure(env, CLASS, "", &Failure::from(e)))?;
    Ok(((c, seed), 0))
}

/// A retry policy: which failures are retried (by outcome), how often (`maxAttempts`),
/// after how long (backoff with jitter, Retry-After honoured up to `maxRetryAfter`), only
/// with an idempotency that allows it, only while the deadline leaves time, and only if
/// the budget pays (asked last). Shareable by worker threads (`RetryPolicy.shared`: its
/// counters and its jitter generator).
#[napi]
pub struct RetryPolicy {
    pub(crate) core: Arc<PolicyCore>,
}

#[napi]
impl RetryPolicy {
    /// A policy with `options` (`maxAttempts`, `retryTimeouts`, `retryConnectionErrors`,
    /// `retryOtherTransient`, `retryThrottled`, `honorRetryAfter`, `maxRetryAfter`,
    /// `minAttemptTime`, `unkeyedSideEffects`, `backoff: { base, cap, multiplier, jitter }`;
    /// `seed` for the jitter, default random).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: RetryPolicyOptions, shared?: Uint8Array"
    )]
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        shared: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let mem = crate::convert::shared_arg(&env, shared)?;
        let given = !args::absent(&options);
        let Placed { g, mem } =
            shared::place::<InPlace<PolicyState>>(&env, CLASS, mem, given, || {
                read_config(&env, options)
            })?;
        Ok(RetryPolicy {
            core: Arc::new(PolicyCore { s: g, _mem: mem }),
        })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a policy.
    #[napi(catch_unwind, ts_args_type = "options?: RetryPolicyOptions")]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        shared::size_for::<InPlace<PolicyState>>(&env, CLASS, || read_config(&env, options))
    }

    /// Decide after attempt `attempt` (1 for the first) ended with `outcome`:
    /// `{ retry: true, delayMs }` or `{ retry: false, reason }`. `retryAfterMs` is the
    /// server's Retry-After, `timeLeftMs` the deadline's time left (none: no deadline),
    /// `prevDelayMs` the previous wait (each also exact ns as a bigint); `gate` (a
    /// `RetryBudget`, or a function `(now, cause) => boolean`) is asked last.
    #[napi(
        catch_unwind,
        ts_args_type = "attempt: number, outcome: Outcome, options?: DecideOptions",
        ts_return_type = "RetryDecision"
    )]
    pub fn decide<'e>(
        &self,
        env: &'e Env,
        attempt: Unknown<'_>,
        outcome: Unknown<'_>,
        options: Option<Unknown<'_>>,
    ) -> Result<Object<'e>> {
        let attempt = args::whole_u32(env, "attempt", &attempt)?;
        let outcome = args::outcome(env, "outcome", &outcome)?;
        let mut ctx = RetryContext::new(attempt, outcome);
        let mut now = guards::clock::now();
        let mut gate = None;
        if let Some(o) = args::opt_object(env, "options", options)? {
            const KNOWN: [&str; 7] = [
                "retryAfterMs",
                "idempotency",
                "timeLeftMs",
                "prevDelayMs",
                "budget",
                "gate",
                "now",
            ];
            for k in Object::keys(&o)? {
                if !KNOWN.contains(&k.as_str()) {
                    return Err(type_error(
                        env,
                        &k,
                        &format!(
                            "RetryPolicy.decide: unknown option `{k}` (valid options: {})",
                            KNOWN.join(", ")
                        ),
                    ));
                }
            }
            let get = |k: &str| o.get::<Unknown<'_>>(k);
            ctx = ctx.with_retry_after(args::opt_duration(
                env,
                "retryAfterMs",
                get("retryAfterMs")?,
            )?);
            if let Some(v) = args::opt_string(env, "idempotency", get("idempotency")?)? {
                ctx = ctx.with_idempotency(idempotency(env, &v)?);
            }
            ctx = ctx.with_time_left(args::opt_duration(env, "timeLeftMs", get("timeLeftMs")?)?);
            if let Some(d) = args::opt_duration(env, "prevDelayMs", get("prevDelayMs")?)? {
                ctx = ctx.with_prev_delay(d);
            }
            if let Some(t) = args::opt_instant(env, "now", get("now")?)? {
                now = t;
            }
            gate = match (get("gate")?, get("budget")?) {
                (g, None) => Gate::read(env, "gate", g)?,
                (None, b) => Gate::read(env, "budget", b)?,
                (Some(_), Some(_)) => {
                    return Err(type_error(
                        env,
                        "gate",
                        "RetryPolicy.decide: give `gate` or `budget`, not both",
                    ))
                }
            };
        }
        let c = &self.core;
        let d = c.policy().decide(
            now,
            ctx,
            c.rng(),
            gate.as_ref().map(|g| g as &dyn RetryGate),
        );
        if let Some(e) = gate.and_then(Gate::error) {
            return Err(e);
        }
        let mut out = Object::new(env)?;
        match d {
            RetryDecision::Retry { after } => {
                out.set("retry", true)?;
                out.set("delayMs", ms(after))?;
            }
            RetryDecision::GiveUp(r) => {
                out.set("retry", false)?;
                out.set("reason", r.name())?;
            }
        }
        Ok(out)
    }

    /// The next word of the policy's jitter generator (the word its next backoff draws), as
    /// a bigint. The same seed gives the same words in every language.
    #[napi(catch_unwind)]
    pub fn next_u64(&self) -> BigInt {
        BigInt::from(self.core.rng().next_u64())
    }

    /// The longest a request can take with attempts of `attemptTimeout` (ms, or exact ns
    /// as a bigint): every attempt timing out and every wait at its ceiling, in ms.
    #[napi(catch_unwind, ts_args_type = "attemptTimeout: number | bigint")]
    pub fn worst_case_time_ms(&self, env: Env, attempt_timeout: Unknown<'_>) -> Result<f64> {
        let t = args::duration(&env, "attemptTimeout", &attempt_timeout)?;
        Ok(ms(self.core.policy().worst_case_time(t)))
    }

    /// Counters: retries and each give-up reason.
    #[napi(catch_unwind, ts_return_type = "Record<string, number>")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.core.policy().stats();
        numbers(
            env,
            &[
                ("retries", num(s.retries)),
                ("succeeded", num(s.succeeded)),
                ("permanent", num(s.permanent)),
                ("overloaded", num(s.overloaded)),
                ("notRetryable", num(s.not_retryable)),
                ("attemptsExhausted", num(s.attempts_exhausted)),
                ("notIdempotent", num(s.not_idempotent)),
                ("retryAfterTooLong", num(s.retry_after_too_long)),
                ("deadlineExceeded", num(s.deadline_exceeded)),
                ("budgetExhausted", num(s.budget_exhausted)),
                ("rejected", num(s.rejected)),
                ("ignored", num(s.ignored)),
                ("cancelled", num(s.cancelled)),
            ],
        )
    }

    /// The config (camelCase, durations in ms).
    #[napi(getter, catch_unwind, ts_return_type = "Record<string, unknown>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        config_object(env, &schema::RETRY_POLICY, self.core.policy().config())
    }
}
