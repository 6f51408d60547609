//! `RetryBudget`: how many retries a client may add on top of its traffic, in one of four
//! modes: `"token_bucket"` (a deposit per success, a token per retry), `"grpc"` (gRPC's
//! retry throttling), `"aws"` (the AWS SDKs' retry quota, priced by cause, refunded on
//! success) and `"windowed"` (a share of the requests of the last `ttl` plus a floor).
//!
//! Build one with `RetryBudget(mode=..., <that mode's settings>)` or with the per-mode
//! constructors `RetryBudget.token_bucket(...)`, `.grpc(...)`, `.aws(...)`,
//! `.windowed(...)`. A budget is a retry gate: pass it as `gate=` to
//! `RetryPolicy.decide`.

use guards::handle::InPlace;
use guards::permit::TakeOnce;
use guards::schema;
use guards_core::retry_budget::{RetryBudget, RetryBudgetConfig, RetryReceipt, MICROS_PER_TOKEN};
use guards_core::retry_policy::RetryGate;
use guards_core::{ConfigError, ConfigErrorKind};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::config::{self, Args};
use crate::errors;
use crate::retry_policy::cause_of;
use crate::util::{self, given};

/// The config of `mode` from its settings (ffi's schema of that mode: a setting of another
/// mode is a `TypeError` listing this mode's).
fn budget_config(py: Python<'_>, mode: &str, a: &Args<'_>) -> PyResult<RetryBudgetConfig> {
    Ok(match mode {
        "token_bucket" => RetryBudgetConfig::TokenBucket(a.build(&schema::TOKEN_BUDGET)?),
        "grpc" => RetryBudgetConfig::Grpc(a.build(&schema::GRPC_THROTTLE)?),
        "aws" => RetryBudgetConfig::Aws(a.build(&schema::AWS_RETRY_QUOTA)?),
        "windowed" => RetryBudgetConfig::Windowed(a.build(&schema::WINDOWED_BUDGET)?),
        _ => {
            return Err(errors::config_error(
                py,
                ConfigError::new(
                    "mode",
                    ConfigErrorKind::OutOfRange,
                    "one of 'token_bucket', 'grpc', 'aws', 'windowed'",
                ),
            ))
        }
    })
}

/// A granted retry: hand it back with `on_success(receipt)` so that the `"aws"` mode can
/// refund its cost. Handing it back twice raises `RuntimeError`; to another budget,
/// `ValueError`.
#[pyclass(module = "guards", name = "RetryReceipt", frozen)]
#[derive(Debug)]
pub struct RetryReceiptObj {
    receipt: TakeOnce<RetryReceipt>,
    cost_micros: u64,
    owner: usize,
}

#[pymethods]
impl RetryReceiptObj {
    /// What the retry cost, in tokens.
    #[getter]
    fn cost(&self) -> f64 {
        self.cost_micros as f64 / MICROS_PER_TOKEN as f64
    }

    /// What the retry cost, in micro-tokens (exact).
    #[getter]
    fn cost_micros(&self) -> u64 {
        self.cost_micros
    }

    /// Whether it has been handed back.
    #[getter]
    fn used(&self) -> bool {
        self.receipt.is_taken()
    }

    fn __repr__(&self) -> String {
        format!("RetryReceipt(cost_micros={})", self.cost_micros)
    }
}

/// A retry budget (see the module docs for the modes).
#[pyclass(module = "guards", name = "RetryBudget", frozen)]
#[derive(Debug)]
pub struct PyRetryBudget {
    /// Built in place: core's state may be cache-line aligned.
    pub(crate) b: InPlace<RetryBudget>,
}

impl PyRetryBudget {
    fn build(py: Python<'_>, c: RetryBudgetConfig) -> PyResult<Self> {
        let b = InPlace::<RetryBudget>::new(c).map_err(|f| errors::failure(py, f))?;
        Ok(PyRetryBudget { b })
    }

    fn of_mode(
        mode: &str,
        owner: &'static str,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let py = args.py();
        let a = Args::collect(owner, &[], args, kwargs)?;
        Self::build(py, budget_config(py, mode, &a)?)
    }

    fn id(&self) -> usize {
        std::ptr::from_ref::<RetryBudget>(&*self.b) as usize
    }
}

#[pymethods]
impl PyRetryBudget {
    /// `RetryBudget(mode="token_bucket", **settings)`: `mode` is `"token_bucket"`
    /// (`capacity`, `ratio`), `"grpc"` (`max_tokens`, `token_ratio`), `"aws"` (`capacity`,
    /// `transient_cost`, `timeout_cost`, `throttled_cost`, `hedge_cost`,
    /// `success_increment`, whole tokens) or `"windowed"` (`ttl` in seconds,
    /// `min_retries_per_sec`, `percent_can_retry`). Settings left out take core's defaults;
    /// a setting of another mode is a `TypeError`.
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(mode='token_bucket', **settings)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = args.py();
        let mut a = Args::collect("RetryBudget", &["mode"], args, kwargs)?;
        let mode = match a.take("mode") {
            Some(m) => util::get_str("mode", &m)?,
            None => "token_bucket".to_owned(),
        };
        Self::build(py, budget_config(py, &mode, &a)?)
    }

    /// A token bucket: each first attempt deposits `ratio` tokens (up to `capacity`), each
    /// retry takes one.
    #[staticmethod]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, capacity=10.0, ratio=0.1)"
    )]
    fn token_bucket(
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        Self::of_mode("token_bucket", "RetryBudget.token_bucket", args, kwargs)
    }

    /// gRPC retry throttling: a failure takes one token, a success returns
    /// `token_ratio`; retries stop while at most half of `max_tokens` is left.
    #[staticmethod]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, max_tokens=10.0, token_ratio=0.1)"
    )]
    fn grpc(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Self::of_mode("grpc", "RetryBudget.grpc", args, kwargs)
    }

    /// The AWS SDKs' retry quota: a retry costs tokens by cause, a success refunds the
    /// retry's cost (or adds `success_increment` for a first attempt).
    #[staticmethod]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, capacity=500, transient_cost=5, timeout_cost=10, throttled_cost=5, hedge_cost=5, success_increment=1)"
    )]
    fn aws(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Self::of_mode("aws", "RetryBudget.aws", args, kwargs)
    }

    /// A windowed budget: retries may add `percent_can_retry` of the requests of the
    /// last `ttl` seconds, plus `min_retries_per_sec`.
    #[staticmethod]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(*, ttl=10.0, min_retries_per_sec=10.0, percent_can_retry=0.2)"
    )]
    fn windowed(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Self::of_mode("windowed", "RetryBudget.windowed", args, kwargs)
    }

    /// The mode: `"token_bucket"`, `"grpc"`, `"aws"` or `"windowed"`.
    #[getter]
    fn mode(&self) -> &'static str {
        self.b.mode().name()
    }

    /// The token bucket's capacity in force, in tokens (`set_capacity`, or a fleet the
    /// budget is attached to, may have changed it); `None` in the other modes.
    #[getter]
    fn capacity(&self) -> Option<f64> {
        match &*self.b {
            RetryBudget::TokenBucket(t) => {
                Some(t.capacity_micros() as f64 / MICROS_PER_TOKEN as f64)
            }
            _ => None,
        }
    }

    /// Resize the token bucket at run time to `capacity` tokens (`0.0..=1e9`; 0 refuses
    /// every retry): a smaller bucket drops the tokens above its size at once, a larger
    /// one fills from the balance it has. Returns the previous capacity in tokens. Only
    /// the `"token_bucket"` mode can be resized (`ValueError` otherwise).
    fn set_capacity(&self, py: Python<'_>, capacity: &Bound<'_, PyAny>) -> PyResult<f64> {
        let c = util::get_f64("capacity", capacity, util::Ctx::Arg)?;
        match &*self.b {
            RetryBudget::TokenBucket(t) => t
                .set_capacity(c)
                .map(|old| old as f64 / MICROS_PER_TOKEN as f64)
                .map_err(|e| errors::config_error(py, e)),
            _ => Err(PyValueError::new_err(format!(
                "only a token_bucket budget can be resized, not a {} one",
                self.mode()
            ))),
        }
    }

    /// The settings: `mode` and that mode's settings (durations in seconds).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = match self.b.config() {
            RetryBudgetConfig::TokenBucket(c) => config::to_dict(py, &schema::TOKEN_BUDGET, &c)?,
            RetryBudgetConfig::Grpc(c) => config::to_dict(py, &schema::GRPC_THROTTLE, &c)?,
            RetryBudgetConfig::Aws(c) => config::to_dict(py, &schema::AWS_RETRY_QUOTA, &c)?,
            RetryBudgetConfig::Windowed(c) => config::to_dict(py, &schema::WINDOWED_BUDGET, &c)?,
        };
        d.set_item("mode", self.mode())?;
        Ok(d)
    }

    /// Record a request (a first attempt) at `now`: the token bucket and the windowed
    /// budget earn their share of retries from it; the gRPC and AWS modes ignore it.
    #[pyo3(signature = (now = None))]
    fn deposit(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.b.deposit(util::get_now(now)?);
        Ok(())
    }

    /// Ask for one retry caused by `cause` (`"timeout"`, `"transient"`, `"throttled"`,
    /// `"hedge"`): a `RetryReceipt` if granted (its cost is paid), else `None`.
    #[pyo3(signature = (cause = None, now = None))]
    fn withdraw(
        slf: &Bound<'_, Self>,
        cause: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<RetryReceiptObj>> {
        let cause = cause_of(cause)?;
        let now = util::get_now(now)?;
        let me = slf.get();
        Ok(me.b.withdraw(now, cause).map(|r| RetryReceiptObj {
            cost_micros: r.cost_micros(),
            receipt: TakeOnce::new(r),
            owner: me.id(),
        }))
    }

    /// The retry-gate question: may one retry caused by `cause` go at `now`? Pays for it
    /// when the answer is yes (no receipt is kept).
    #[pyo3(signature = (now = None, cause = None))]
    fn allow_retry(
        &self,
        now: Option<&Bound<'_, PyAny>>,
        cause: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let cause = cause_of(cause)?;
        Ok(self.b.allow_retry(util::get_now(now)?, cause))
    }

    /// Record a success at `now`, handing back the receipt of the retry that succeeded
    /// (if it was one): the gRPC mode earns `token_ratio`, the AWS mode refunds the
    /// receipt's cost (or adds `success_increment` without one).
    #[pyo3(signature = (receipt = None, now = None))]
    fn on_success(
        &self,
        receipt: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let now = util::get_now(now)?;
        let r = match given(receipt) {
            None => None,
            Some(v) => {
                let obj = v
                    .cast::<RetryReceiptObj>()
                    .map_err(|_| util::type_error("receipt", "a guards.RetryReceipt or None", v))?
                    .get();
                if obj.owner != self.id() {
                    return Err(PyValueError::new_err(
                        "`receipt` was granted by another retry budget",
                    ));
                }
                match obj.receipt.take() {
                    Some(r) => Some(r),
                    None => {
                        return Err(PyRuntimeError::new_err(
                            "`receipt` has already been handed back",
                        ))
                    }
                }
            }
        };
        self.b.on_success(now, r);
        Ok(())
    }

    /// Record a failed attempt at `now` (the gRPC mode takes a token).
    #[pyo3(signature = (now = None))]
    fn on_failure(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.b.on_failure(util::get_now(now)?);
        Ok(())
    }

    /// The balance at `now` in tokens (negative in the windowed mode when overdrawn).
    #[pyo3(signature = (now = None))]
    fn tokens(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
        Ok(self.b.tokens(util::get_now(now)?))
    }

    /// The balance at `now` in micro-tokens (exact).
    #[pyo3(signature = (now = None))]
    fn tokens_micros(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<i64> {
        Ok(self.b.tokens_micros(util::get_now(now)?))
    }

    /// Counters: `deposits`, `withdrawals`, `refusals`, `refunds`, `failures`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.b.stats();
        util::stats_dict(
            py,
            &[
                ("deposits", s.deposits),
                ("withdrawals", s.withdrawals),
                ("refusals", s.refusals),
                ("refunds", s.refunds),
                ("failures", s.failures),
            ],
        )
    }

    fn __repr__(&self) -> String {
        format!("RetryBudget(mode='{}')", self.mode())
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRetryBudget>()?;
    m.add_class::<RetryReceiptObj>()?;
    Ok(())
}
