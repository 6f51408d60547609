//! `RetryBudget`: how many retries a client may add on top of its traffic, in one of four
//! modes: `"token_bucket"` (a deposit per success, a token per retry), `"grpc"` (gRPC's
//! retry throttling), `"aws"` (the AWS SDKs' retry quota, priced by cause, refunded on
//! success) and `"windowed"` (a share of the requests of the last `ttl` plus a floor).
//!
//! Build one with `RetryBudget(mode=..., <that mode's settings>)` or with the per-mode
//! constructors `RetryBudget.token_bucket(...)`, `.grpc(...)`, `.aws(...)`,
//! `.windowed(...)`. A budget is a retry gate: pass it as `gate=` to
//! `RetryPolicy.decide`.

use guards_core::retry_budget::{
    AwsRetryQuotaConfig, GrpcThrottleConfig, RetryBudget, RetryBudgetConfig, RetryReceipt,
    TokenBudgetConfig, WindowedBudgetConfig, MICROS_PER_TOKEN,
};
use guards_core::retry_policy::RetryGate;
use guards_core::ConfigErrorKind;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;
use crate::permit::Once;
use crate::retry_policy::cause_of;
use crate::util::{self, given, Ctx};

/// Every keyword of the generic constructor, by mode.
const TOKEN_KEYS: &[&str] = &["capacity", "ratio"];
const GRPC_KEYS: &[&str] = &["max_tokens", "token_ratio"];
const AWS_KEYS: &[&str] = &[
    "capacity",
    "transient_cost",
    "timeout_cost",
    "throttled_cost",
    "hedge_cost",
    "success_increment",
];
const WINDOWED_KEYS: &[&str] = &["ttl", "min_retries_per_sec", "percent_can_retry"];

/// The settings given to a constructor, by name.
struct Settings<'a, 'py> {
    given: Vec<(&'static str, &'a Bound<'py, PyAny>)>,
}

impl<'a, 'py> Settings<'a, 'py> {
    fn new(pairs: &[(&'static str, Option<&'a Bound<'py, PyAny>>)]) -> Self {
        Settings {
            given: pairs
                .iter()
                .filter_map(|(k, v)| given(*v).map(|v| (*k, v)))
                .collect(),
        }
    }

    fn get(&self, key: &str) -> Option<&'a Bound<'py, PyAny>> {
        self.given.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    /// Refuse settings that do not belong to `mode`.
    fn only(&self, mode: &str, allowed: &[&str]) -> PyResult<()> {
        for (k, _) in &self.given {
            if !allowed.contains(k) {
                return Err(PyTypeError::new_err(format!(
                    "`{k}` is not a setting of the {mode:?} retry budget (its settings: {})",
                    allowed.join(", ")
                )));
            }
        }
        Ok(())
    }

    fn f64(&self, key: &'static str, default: f64) -> PyResult<f64> {
        self.get(key)
            .map_or(Ok(default), |v| util::get_f64(key, v, Ctx::Config))
    }

    fn u64(&self, key: &'static str, default: u64) -> PyResult<u64> {
        self.get(key)
            .map_or(Ok(default), |v| util::get_u64(key, v, Ctx::Config))
    }

    fn config(&self, mode: &str) -> PyResult<RetryBudgetConfig> {
        Ok(match mode {
            "token_bucket" => {
                self.only(mode, TOKEN_KEYS)?;
                let d = TokenBudgetConfig::default();
                RetryBudgetConfig::TokenBucket(TokenBudgetConfig {
                    capacity: self.f64("capacity", d.capacity)?,
                    ratio: self.f64("ratio", d.ratio)?,
                })
            }
            "grpc" => {
                self.only(mode, GRPC_KEYS)?;
                let d = GrpcThrottleConfig::default();
                RetryBudgetConfig::Grpc(GrpcThrottleConfig {
                    max_tokens: self.f64("max_tokens", d.max_tokens)?,
                    token_ratio: self.f64("token_ratio", d.token_ratio)?,
                })
            }
            "aws" => {
                self.only(mode, AWS_KEYS)?;
                let d = AwsRetryQuotaConfig::default();
                RetryBudgetConfig::Aws(AwsRetryQuotaConfig {
                    capacity: self.u64("capacity", d.capacity)?,
                    transient_cost: self.u64("transient_cost", d.transient_cost)?,
                    timeout_cost: self.u64("timeout_cost", d.timeout_cost)?,
                    throttled_cost: self.u64("throttled_cost", d.throttled_cost)?,
                    hedge_cost: self.u64("hedge_cost", d.hedge_cost)?,
                    success_increment: self.u64("success_increment", d.success_increment)?,
                })
            }
            "windowed" => {
                self.only(mode, WINDOWED_KEYS)?;
                let d = WindowedBudgetConfig::default();
                RetryBudgetConfig::Windowed(WindowedBudgetConfig {
                    ttl: match self.get("ttl") {
                        Some(v) => util::get_duration("ttl", v, Ctx::Config)?,
                        None => d.ttl,
                    },
                    min_retries_per_sec: self.f64("min_retries_per_sec", d.min_retries_per_sec)?,
                    percent_can_retry: self.f64("percent_can_retry", d.percent_can_retry)?,
                })
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown retry budget mode {other:?}"
                )))
            }
        })
    }
}

/// A granted retry: hand it back with `on_success(receipt)` so that the `"aws"` mode can
/// refund its cost. Handing it back twice raises `RuntimeError`; to another budget,
/// `ValueError`.
#[pyclass(module = "guards", name = "RetryReceipt", frozen)]
#[derive(Debug)]
pub struct RetryReceiptObj {
    receipt: Once<RetryReceipt>,
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
    /// Boxed: core's state may be cache-line aligned (see `check_pyclass_alignment`).
    pub(crate) b: Box<RetryBudget>,
}

impl PyRetryBudget {
    fn build(py: Python<'_>, c: RetryBudgetConfig) -> PyResult<Self> {
        let b = RetryBudget::new(c).map_err(|e| errors::config_error(py, e))?;
        Ok(PyRetryBudget { b: Box::new(b) })
    }

    fn id(&self) -> usize {
        std::ptr::from_ref::<RetryBudget>(&self.b) as usize
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
    #[pyo3(signature = (
        *,
        mode = None,
        capacity = None,
        ratio = None,
        max_tokens = None,
        token_ratio = None,
        transient_cost = None,
        timeout_cost = None,
        throttled_cost = None,
        hedge_cost = None,
        success_increment = None,
        ttl = None,
        min_retries_per_sec = None,
        percent_can_retry = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        mode: Option<&Bound<'_, PyAny>>,
        capacity: Option<&Bound<'_, PyAny>>,
        ratio: Option<&Bound<'_, PyAny>>,
        max_tokens: Option<&Bound<'_, PyAny>>,
        token_ratio: Option<&Bound<'_, PyAny>>,
        transient_cost: Option<&Bound<'_, PyAny>>,
        timeout_cost: Option<&Bound<'_, PyAny>>,
        throttled_cost: Option<&Bound<'_, PyAny>>,
        hedge_cost: Option<&Bound<'_, PyAny>>,
        success_increment: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        min_retries_per_sec: Option<&Bound<'_, PyAny>>,
        percent_can_retry: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mode = match given(mode) {
            Some(m) => util::get_str("mode", m)?,
            None => "token_bucket".to_owned(),
        };
        if !matches!(mode.as_str(), "token_bucket" | "grpc" | "aws" | "windowed") {
            return Err(util::bad_value(
                py,
                Ctx::Config,
                "mode",
                ConfigErrorKind::OutOfRange,
                "one of \"token_bucket\", \"grpc\", \"aws\", \"windowed\"",
            ));
        }
        let s = Settings::new(&[
            ("capacity", capacity),
            ("ratio", ratio),
            ("max_tokens", max_tokens),
            ("token_ratio", token_ratio),
            ("transient_cost", transient_cost),
            ("timeout_cost", timeout_cost),
            ("throttled_cost", throttled_cost),
            ("hedge_cost", hedge_cost),
            ("success_increment", success_increment),
            ("ttl", ttl),
            ("min_retries_per_sec", min_retries_per_sec),
            ("percent_can_retry", percent_can_retry),
        ]);
        Self::build(py, s.config(&mode)?)
    }

    /// A token bucket: each success deposits `ratio` tokens (up to `capacity`), each
    /// retry takes one.
    #[staticmethod]
    #[pyo3(
        signature = (*, capacity = None, ratio = None),
        text_signature = "(*, capacity=10.0, ratio=0.1)"
    )]
    fn token_bucket(
        py: Python<'_>,
        capacity: Option<&Bound<'_, PyAny>>,
        ratio: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let s = Settings::new(&[("capacity", capacity), ("ratio", ratio)]);
        Self::build(py, s.config("token_bucket")?)
    }

    /// gRPC retry throttling: a failure takes one token, a success returns
    /// `token_ratio`; retries stop while at most half of `max_tokens` is left.
    #[staticmethod]
    #[pyo3(
        signature = (*, max_tokens = None, token_ratio = None),
        text_signature = "(*, max_tokens=10.0, token_ratio=0.1)"
    )]
    fn grpc(
        py: Python<'_>,
        max_tokens: Option<&Bound<'_, PyAny>>,
        token_ratio: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let s = Settings::new(&[("max_tokens", max_tokens), ("token_ratio", token_ratio)]);
        Self::build(py, s.config("grpc")?)
    }

    /// The AWS SDKs' retry quota: a retry costs tokens by cause, a success refunds the
    /// retry's cost (or adds `success_increment` for a first attempt).
    #[staticmethod]
    #[pyo3(
        signature = (
            *,
            capacity = None,
            transient_cost = None,
            timeout_cost = None,
            throttled_cost = None,
            hedge_cost = None,
            success_increment = None
        ),
        text_signature = "(*, capacity=500, transient_cost=5, timeout_cost=10, throttled_cost=5, hedge_cost=5, success_increment=1)"
    )]
    fn aws(
        py: Python<'_>,
        capacity: Option<&Bound<'_, PyAny>>,
        transient_cost: Option<&Bound<'_, PyAny>>,
        timeout_cost: Option<&Bound<'_, PyAny>>,
        throttled_cost: Option<&Bound<'_, PyAny>>,
        hedge_cost: Option<&Bound<'_, PyAny>>,
        success_increment: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let s = Settings::new(&[
            ("capacity", capacity),
            ("transient_cost", transient_cost),
            ("timeout_cost", timeout_cost),
            ("throttled_cost", throttled_cost),
            ("hedge_cost", hedge_cost),
            ("success_increment", success_increment),
        ]);
        Self::build(py, s.config("aws")?)
    }

    /// A windowed budget: retries may add `percent_can_retry` of the requests of the
    /// last `ttl` seconds, plus `min_retries_per_sec`.
    #[staticmethod]
    #[pyo3(
        signature = (*, ttl = None, min_retries_per_sec = None, percent_can_retry = None),
        text_signature = "(*, ttl=10.0, min_retries_per_sec=10.0, percent_can_retry=0.2)"
    )]
    fn windowed(
        py: Python<'_>,
        ttl: Option<&Bound<'_, PyAny>>,
        min_retries_per_sec: Option<&Bound<'_, PyAny>>,
        percent_can_retry: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let s = Settings::new(&[
            ("ttl", ttl),
            ("min_retries_per_sec", min_retries_per_sec),
            ("percent_can_retry", percent_can_retry),
        ]);
        Self::build(py, s.config("windowed")?)
    }

    /// The mode: `"token_bucket"`, `"grpc"`, `"aws"` or `"windowed"`.
    #[getter]
    fn mode(&self) -> &'static str {
        self.b.mode().name()
    }

    /// The configuration: `mode` and that mode's settings (durations in seconds).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("mode", self.mode())?;
        match self.b.config() {
            RetryBudgetConfig::TokenBucket(c) => {
                d.set_item("capacity", c.capacity)?;
                d.set_item("ratio", c.ratio)?;
            }
            RetryBudgetConfig::Grpc(c) => {
                d.set_item("max_tokens", c.max_tokens)?;
                d.set_item("token_ratio", c.token_ratio)?;
            }
            RetryBudgetConfig::Aws(c) => {
                d.set_item("capacity", c.capacity)?;
                d.set_item("transient_cost", c.transient_cost)?;
                d.set_item("timeout_cost", c.timeout_cost)?;
                d.set_item("throttled_cost", c.throttled_cost)?;
                d.set_item("hedge_cost", c.hedge_cost)?;
                d.set_item("success_increment", c.success_increment)?;
            }
            RetryBudgetConfig::Windowed(c) => {
                d.set_item("ttl", util::secs(c.ttl))?;
                d.set_item("min_retries_per_sec", c.min_retries_per_sec)?;
                d.set_item("percent_can_retry", c.percent_can_retry)?;
            }
        }
        Ok(d)
    }

    /// Record a request (a first attempt) at `now`: the token bucket and the windowed
    /// budget earn their share of retries from it; the gRPC and AWS modes ignore it.
    #[pyo3(signature = (now = None))]
    fn deposit(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.b.deposit(util::get_now(py, now)?);
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
        let py = slf.py();
        let cause = cause_of(cause)?;
        let now = util::get_now(py, now)?;
        let me = slf.get();
        Ok(me.b.withdraw(now, cause).map(|r| RetryReceiptObj {
            cost_micros: r.cost_micros(),
            receipt: Once::new(r),
            owner: me.id(),
        }))
    }

    /// The retry-gate question: may one retry caused by `cause` go at `now`? Pays for it
    /// when the answer is yes (no receipt is kept).
    #[pyo3(signature = (now = None, cause = None))]
    fn allow_retry(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        cause: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let cause = cause_of(cause)?;
        Ok(self.b.allow_retry(util::get_now(py, now)?, cause))
    }

    /// Record a success at `now`, handing back the receipt of the retry that succeeded
    /// (if it was one): the gRPC mode earns `token_ratio`, the AWS mode refunds the
    /// receipt's cost (or adds `success_increment` without one).
    #[pyo3(signature = (receipt = None, now = None))]
    fn on_success(
        &self,
        py: Python<'_>,
        receipt: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let now = util::get_now(py, now)?;
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
    fn on_failure(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.b.on_failure(util::get_now(py, now)?);
        Ok(())
    }

    /// The balance at `now` in tokens (negative in the windowed mode when overdrawn).
    #[pyo3(signature = (now = None))]
    fn tokens(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
        Ok(self.b.tokens(util::get_now(py, now)?))
    }

    /// The balance at `now` in micro-tokens (exact).
    #[pyo3(signature = (now = None))]
    fn tokens_micros(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<i64> {
        Ok(self.b.tokens_micros(util::get_now(py, now)?))
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
