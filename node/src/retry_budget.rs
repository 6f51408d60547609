//! `RetryBudget`: may this retry go? One of four modes (token bucket, gRPC retry
//! throttling, the AWS retry quota, a windowed share of recent requests). Also the `gate`
//! argument of `RetryPolicy.decide` and `Hedging.shouldHedge`: a budget, or a JavaScript
//! function answering each question.

use std::cell::RefCell;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::ValueType;
use napi_derive::napi;

use guards::error::GuardsResult;
use guards::handle::InPlace;
use guards::names::{Nanos, RetryBudget as CoreBudget, RetryBudgetConfig};
use guards::permit::TakeOnce;
use guards::schema;
use guards_core::retry_budget::{Budget, RetryReceipt as CoreReceipt};
use guards_core::retry_policy::{RetryCause, RetryGate};

use crate::args;
use crate::convert::{build_leaves, num, numbers, Options, Val};
use crate::errors::{self, range_error, type_error};
use crate::shared::{self, Keep};

const CLASS: &str = "RetryBudget";

pub(crate) struct BudgetCore {
    pub(crate) g: InPlace<CoreBudget>,
    _keep: Keep,
}

pub(crate) fn read_config(
    env: &Env,
    options: Option<Unknown<'_>>,
) -> Result<(RetryBudgetConfig, u64)> {
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
    let c = match mode.as_str() {
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
    };
    Ok((c, 0))
}

/// The cause named by argument `v` (`'timeout'`, `'transient'`, `'throttled'`, `'hedge'`;
/// left out: `'transient'`).
pub(crate) fn cause(env: &Env, v: Option<Unknown<'_>>) -> Result<RetryCause> {
    let Some(name) = args::opt_string(env, "cause", v)? else {
        return Ok(RetryCause::Transient);
    };
    RetryCause::from_name(&name).ok_or_else(|| {
        type_error(
            env,
            "cause",
            &format!(
                "`cause` must be 'timeout', 'transient', 'throttled' or 'hedge', not {name:?}"
            ),
        )
    })
}

/// What decides whether a retry (or hedge) may go: a budget, or a JavaScript function
/// `(now: bigint, cause) => boolean`.
pub(crate) enum Gate<'a> {
    Budget(&'a InPlace<CoreBudget>),
    Js {
        env: &'a Env,
        f: Function<'a, FnArgs<(BigInt, &'static str)>, Unknown<'a>>,
        /// The first error the function threw (or a wrong answer), rethrown afterwards.
        failed: RefCell<Option<Error>>,
    },
}

impl<'a> Gate<'a> {
    /// The gate argument `v` (named `name`): a `RetryBudget`, a function, or nothing.
    pub(crate) fn read(env: &'a Env, name: &str, v: Option<Unknown<'a>>) -> Result<Option<Self>> {
        let Some(x) = v.filter(|_| !args::absent(&v)) else {
            return Ok(None);
        };
        if x.get_type()? == ValueType::Function {
            // SAFETY: checked to be a function.
            let f =
                unsafe { x.cast::<Function<'a, FnArgs<(BigInt, &'static str)>, Unknown<'a>>>() }?;
            return Ok(Some(Gate::Js {
                env,
                f,
                failed: RefCell::new(None),
            }));
        }
        let b = args::instance::<RetryBudget>(
            env,
            name,
            "RetryBudget or a function (now, cause) => boolean",
            &x,
        )?;
        Ok(Some(Gate::Budget(&b.core.g)))
    }

    /// The error the function threw, if it did.
    pub(crate) fn error(self) -> Option<Error> {
        match self {
            Gate::Js { failed, .. } => failed.into_inner(),
            Gate::Budget(_) => None,
        }
    }
}

impl RetryGate for Gate<'_> {
    fn allow_retry(&self, now: Nanos, cause: RetryCause) -> bool {
        match self {
            Gate::Budget(b) => b.withdraw(now, cause).is_some(),
            Gate::Js { env, f, failed } => {
                if failed.borrow().is_some() {
                    return false;
                }
                let answer = f
                    .call(FnArgs::from((BigInt::from(now.0), cause.name())))
                    .and_then(|v| match v.get_type()? {
                        // SAFETY: checked to be a boolean.
                        ValueType::Boolean => unsafe { v.cast::<bool>() },
                        _ => Err(type_error(
                            env,
                            "gate",
                            &format!("the gate must return a boolean, not {}", args::what(&v)),
                        )),
                    });
                match answer {
                    Ok(b) => b,
                    Err(e) => {
                        *failed.borrow_mut() = Some(e);
                        false
                    }
                }
            }
        }
    }
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
    /// `'windowed'`: `ttl`, `minRetriesPerSec`, `percentCanRetry`). With `shared`: built
    /// in or attached to a `SharedArrayBuffer` (see `CircuitBreaker`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: RetryBudgetOptions, shared?: Uint8Array"
    )]
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        shared: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let (g, _keep) =
            crate::region::place_or_attach::<CoreBudget>(&env, CLASS, options, shared, |o| {
                read_config(&env, o)
            })?;
        Ok(RetryBudget {
            core: Arc::new(BudgetCore { g, _keep }),
        })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a budget.
    #[napi(catch_unwind, ts_args_type = "options?: RetryBudgetOptions")]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        shared::size_for::<InPlace<CoreBudget>>(&env, CLASS, || read_config(&env, options))
    }

    /// A first attempt goes out at `now` (the token bucket and windowed modes earn).
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn deposit(&self, env: Env, now: Option<Unknown<'_>>) -> Result<()> {
        let now = args::now(&env, now)?;
        self.core.g.deposit(now);
        Ok(())
    }

    /// May a retry caused by `cause` (default `'transient'`) go at `now`? Charges the
    /// mode's cost and returns its receipt (hand it back with `report` when the retry
    /// ends: the `'aws'` mode refunds a retry that succeeded), or `null` when it may not.
    #[napi(
        catch_unwind,
        ts_args_type = "cause?: 'timeout' | 'transient' | 'throttled' | 'hedge', now?: bigint"
    )]
    pub fn withdraw(
        &self,
        env: Env,
        cause: Option<Unknown<'_>>,
        now: Option<Unknown<'_>>,
    ) -> Result<Option<RetryReceipt>> {
        let c = self::cause(&env, cause)?;
        let now = args::now(&env, now)?;
        Ok(self.core.g.withdraw(now, c).map(|r| RetryReceipt {
            cost_micros: r.cost_micros(),
            cost: r.cost(),
            budget: Arc::as_ptr(&self.core) as usize,
            cell: TakeOnce::new(r),
        }))
    }

    /// Tell the budget how an attempt ended at `now`, with the `receipt` of the retry it
    /// was (none for a first attempt): by the call contract, a success is a success (gRPC:
    /// +`tokenRatio`; AWS: the receipt refunded, or the success increment), a failure a
    /// retry could fix a failure (gRPC: −1 token); the other modes do not look. Returns
    /// the verdict (`'success'`, `'failure'`, `'nothing'`).
    #[napi(
        catch_unwind,
        ts_args_type = "outcome: Outcome, now?: bigint, receipt?: RetryReceipt",
        ts_return_type = "'success' | 'failure' | 'nothing'"
    )]
    pub fn report(
        &self,
        env: Env,
        outcome: Unknown<'_>,
        now: Option<Unknown<'_>>,
        receipt: Option<Unknown<'_>>,
    ) -> Result<&'static str> {
        let outcome = args::outcome(&env, "outcome", &outcome)?;
        let now = args::now(&env, now)?;
        let receipt =
            match args::opt_instance::<RetryReceipt>(&env, "receipt", "RetryReceipt", &receipt)? {
                None => None,
                Some(r) => {
                    if r.budget != Arc::as_ptr(&self.core) as usize {
                        return Err(errors::permit(&env, GuardsResult::PermitWrongGuard));
                    }
                    Some(
                        r.cell.take().ok_or_else(|| {
                            errors::permit(&env, GuardsResult::PermitAlreadyReported)
                        })?,
                    )
                }
            };
        Ok(Budget::report(&*self.core.g, now, outcome, receipt).name())
    }

    /// The balance at `now`, in tokens (mode-specific; the windowed mode: retries allowed).
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn tokens(&self, env: Env, now: Option<Unknown<'_>>) -> Result<f64> {
        let now = args::now(&env, now)?;
        Ok(self.core.g.tokens(now))
    }

    /// The balance at `now` in micro-tokens, exactly (negative only in the windowed mode).
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn tokens_micros(&self, env: Env, now: Option<Unknown<'_>>) -> Result<f64> {
        let now = args::now(&env, now)?;
        Ok(self.core.g.tokens_micros(now) as f64)
    }

    /// The token bucket's capacity in force, in tokens (`null` in the other modes).
    #[napi(getter, catch_unwind)]
    pub fn capacity(&self) -> Option<f64> {
        match &*self.core.g {
            CoreBudget::TokenBucket(t) => Some(t.capacity_micros() as f64 / 1e6),
            _ => None,
        }
    }

    /// Resize the token bucket at run time to `capacity` tokens (`0..=1e9`; 0 refuses every
    /// retry): a smaller bucket drops the tokens above it at once, a larger one fills from
    /// the balance it has. Returns the capacity it replaced. Only the `'token_bucket'` mode
    /// has a capacity to resize (a `TypeError` in the others). A budget attached to a
    /// `Fleet` has its capacity set by the fleet.
    #[napi(catch_unwind, ts_args_type = "capacity: number")]
    pub fn set_capacity(&self, env: Env, capacity: Unknown<'_>) -> Result<f64> {
        let CoreBudget::TokenBucket(t) = &*self.core.g else {
            return Err(type_error(
                &env,
                "capacity",
                &format!(
                    "RetryBudget.setCapacity: only a 'token_bucket' budget has a capacity to resize, not a {:?} one",
                    self.core.g.mode().name()
                ),
            ));
        };
        let c = args::number(&env, "capacity", &capacity)?;
        t.set_capacity(c).map(|old| old as f64 / 1e6).map_err(|_| {
            range_error(
                &env,
                "capacity",
                &format!("`capacity` must be a number of tokens in 0..=1e9, not {c}"),
            )
        })
    }

    /// The mode's name.
    #[napi(
        getter,
        catch_unwind,
        ts_return_type = "'token_bucket' | 'grpc' | 'aws' | 'windowed'"
    )]
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

/// What a retry cost, from `RetryBudget.withdraw`: hand it back once with the budget's
/// `report` when the retry ends (the `'aws'` mode refunds a retry that succeeded).
#[napi]
pub struct RetryReceipt {
    cost_micros: u64,
    cost: f64,
    /// The issuing budget (its address, compared, never read).
    budget: usize,
    cell: TakeOnce<CoreReceipt>,
}

#[napi]
impl RetryReceipt {
    /// What the retry cost, in micro-tokens (0 in the `'grpc'` mode, where failures pay).
    #[napi(getter, catch_unwind)]
    pub fn cost_micros(&self) -> f64 {
        num(self.cost_micros)
    }

    /// What the retry cost, in tokens.
    #[napi(getter, catch_unwind)]
    pub fn cost(&self) -> f64 {
        self.cost
    }

    /// Whether it has been handed back.
    #[napi(getter, catch_unwind)]
    pub fn done(&self) -> bool {
        self.cell.is_taken()
    }
}
