//! `RetryBudget`: may this retry go? One of four modes (token bucket, gRPC retry
//! throttling, the AWS retry quota, a windowed share of recent requests).

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::InPlace;
use guards::names::{RetryBudget as CoreBudget, RetryBudgetConfig};
use guards::schema;
use guards_core::retry_budget::Budget;
use guards_core::retry_policy::RetryCause;

use crate::convert::{build_leaves, now_of, num, numbers, Options, Val};
use crate::errors::{config_failure, range_error, type_error};
use crate::shared::{self, Kind};

const CLASS: &str = "RetryBudget";

pub(crate) struct BudgetCore {
    pub(crate) g: InPlace<CoreBudget>,
    _mem: Option<Uint8Array>,
}

fn read_config(env: &Env, options: Option<Unknown<'_>>) -> Result<RetryBudgetConfig> {
    let mut o = Options::read(env, CLASS, options)?;
    let mode = match o.take("mode") {
        None => "token_bucket".to_owned(),
        Some((_, Val::Str(s))) => s,
        Some(_) => {
            return Err(type_error(
                env,
                "mode",
                "RetryBudget: `mode` must be 'token_bucket', 'grpc', 'aws' or 'windowed'",
            ))
        }
    };
    let leaves = o.leaves;
    Ok(match mode.as_str() {
        "token_bucket" => RetryBudgetConfig::TokenBucket(build_leaves(env, CLASS, &schema::TOKEN_BUDGET, "", leaves)?),
        "grpc" => RetryBudgetConfig::Grpc(build_leaves(env, CLASS, &schema::GRPC_THROTTLE, "", leaves)?),
        "aws" => RetryBudgetConfig::Aws(build_leaves(env, CLASS, &schema::AWS_RETRY_QUOTA, "", leaves)?),
        "windowed" => RetryBudgetConfig::Windowed(build_leaves(env, CLASS, &schema::WINDOWED_BUDGET, "", leaves)?),
        other => {
            return Err(range_error(
                env,
                "mode",
                &format!("RetryBudget: `mode` must be 'token_bucket', 'grpc', 'aws' or 'windowed', not {other:?}"),
            ))
        }
    })
}

/// The cause named `name` (`'timeout'`, `'transient'`, `'throttled'`, `'hedge'`).
pub(crate) fn cause(env: &Env, name: &str) -> Result<RetryCause> {
    RetryCause::from_name(name).ok_or_else(|| {
        type_error(
            env,
            "cause",
            &format!(
                "`cause` must be 'timeout', 'transient', 'throttled' or 'hedge', not {name:?}"
            ),
        )
    })
}

/// A retry budget: retries stay a bounded share of the traffic, so a failing dependency
/// sees about 1.1× its load instead of 3×. Share one across every call to a dependency
/// (and across worker threads with `RetryBudget.shared`).
#[napi]
pub struct RetryBudget {
    pub(crate) core: Arc<BudgetCore>,
}

#[napi]
impl RetryBudget {
    /// A budget with `options`: `mode` (`'token_bucket'` default: `capacity` 10,
    /// `ratio` 0.1; `'grpc'`: `maxTokens`, `tokenRatio`; `'aws'`: `capacity`,
    /// `transientCost`, `timeoutCost`, `throttledCost`, `hedgeCost`, `successIncrement`;
    /// `'windowed'`: `ttl`, `minRetriesPerSec`, `percentCanRetry`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: RetryBudgetOptions, shared?: Uint8Array"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>, shared: Option<Uint8Array>) -> Result<Self> {
        let layout = InPlace::<CoreBudget>::layout();
        let (g, mem) = match shared {
            None => {
                let c = read_config(&env, options)?;
                (
                    InPlace::new(c).map_err(|f| config_failure(&env, CLASS, "", &f))?,
                    None,
                )
            }
            Some(mem) => {
                if options.is_none() {
                    let (ptr, _) =
                        shared::attach(&env, CLASS, &mem, Kind::RetryBudget, |_| Some(layout))?;
                    // SAFETY: `attach` checked the buffer holds a built budget at `ptr`.
                    (unsafe { InPlace::attach(ptr.cast()) }, Some(mem))
                } else {
                    let c = read_config(&env, options)?;
                    let ptr = shared::claim(&env, CLASS, &mem, layout)?;
                    // SAFETY: `claim` gave exclusive use of the aligned bytes at `ptr`.
                    let g = unsafe { InPlace::build_at(ptr.cast(), c) }
                        .map_err(|f| config_failure(&env, CLASS, "", &f))?;
                    shared::publish(&mem, Kind::RetryBudget, 1);
                    (g, Some(mem))
                }
            }
        };
        Ok(RetryBudget {
            core: Arc::new(BudgetCore { g, _mem: mem }),
        })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a budget.
    #[napi(catch_unwind)]
    pub fn shared_size() -> u32 {
        u32::try_from(shared::bytes_for(InPlace::<CoreBudget>::layout())).unwrap_or(u32::MAX)
    }

    /// A first attempt goes out at `now` (the token bucket and windowed modes earn).
    #[napi(catch_unwind)]
    pub fn deposit(&self, env: Env, now: Option<BigInt>) -> Result<()> {
        let now = now_of(&env, now)?;
        self.core.g.deposit(now);
        Ok(())
    }

    /// May a retry caused by `cause` (default `'transient'`) go at `now`? Charges the
    /// mode's cost when it may.
    #[napi(
        catch_unwind,
        ts_args_type = "cause?: 'timeout' | 'transient' | 'throttled' | 'hedge', now?: bigint"
    )]
    pub fn withdraw(&self, env: Env, cause: Option<String>, now: Option<BigInt>) -> Result<bool> {
        let c = match cause {
            None => RetryCause::Transient,
            Some(s) => self::cause(&env, &s)?,
        };
        let now = now_of(&env, now)?;
        Ok(self.core.g.withdraw(now, c).is_some())
    }

    /// Tell the budget how an attempt ended (gRPC mode: a success adds `tokenRatio`, a
    /// failure takes a token; the other modes do not look).
    #[napi(catch_unwind, ts_args_type = "outcome: Outcome, now?: bigint")]
    pub fn report(&self, env: Env, outcome: String, now: Option<BigInt>) -> Result<&'static str> {
        let outcome = crate::outcome::parse(&env, "outcome", &outcome)?;
        let now = now_of(&env, now)?;
        Ok(Budget::report(&*self.core.g, now, outcome, None).name())
    }

    /// The balance at `now`, in tokens (mode-specific; the windowed mode: retries allowed).
    #[napi(catch_unwind)]
    pub fn tokens(&self, env: Env, now: Option<BigInt>) -> Result<f64> {
        let now = now_of(&env, now)?;
        Ok(self.core.g.tokens(now))
    }

    /// The mode's name.
    #[napi(getter)]
    pub fn mode(&self) -> &'static str {
        self.core.g.mode().name()
    }

    /// `{ deposits, withdrawals, refusals, refunds, failures, tokens }`.
    #[napi(catch_unwind, ts_return_type = "RetryBudgetStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.core.g.stats();
        numbers(
            env,
            &[
                ("deposits", num(s.deposits)),
                ("withdrawals", num(s.withdrawals)),
                ("refusals", num(s.refusals)),
                ("refunds", num(s.refunds)),
                ("failures", num(s.failures)),
                ("tokens", self.core.g.tokens(guards::clock::now())),
            ],
        )
    }
}
