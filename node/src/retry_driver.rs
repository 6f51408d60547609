//! `RetryDriver`: core's retry loop of one request, step by step; and `RetryDrivers`, the
//! drivers of the JavaScript layer's `Retry`, kept in a pool so a call builds no native
//! object. `retry()` only sleeps, calls and classifies: every decision (the attempt's
//! budget from the deadline, whether and when to retry, the budget's deposits, charges
//! and refunds) is the driver's.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::names::Nanos;
use guards_core::deadline::{Deadline, DeadlineConfig, MAX_ATTEMPT_TIMEOUT};
use guards_core::outcome::RetryVerdict;
use guards_core::retry_budget::Budget;
use guards_core::retry_driver::{RetryDriver as CoreDriver, RetryDriverError, RetryStep};
use guards_core::retry_policy::Idempotency;
use guards_core::Outcome;

use crate::args;
use crate::convert::{big, ms};
use crate::errors::{self, config_failure, range_error, type_error, Details};
use crate::fast::{self, fast_fn};
use crate::outcome;
use crate::retry_budget::{BudgetCore, RetryBudget};
use crate::retry_policy::{PolicyCore, RetryPolicy};

const CLASS: &str = "RetryDriver";

/// Settings shared by every request of a plan.
#[derive(Clone, Copy)]
struct Plan {
    /// An absolute deadline (or none).
    deadline: Deadline,
    /// A time limit from each request's start (or none).
    timeout: Option<Nanos>,
    config: DeadlineConfig,
    idempotency: Idempotency,
}

impl Plan {
    fn deadline_at(&self, now: Nanos) -> Deadline {
        match self.timeout {
            Some(t) => self.deadline.min(Deadline::after(now, t)),
            None => self.deadline,
        }
    }

    fn driver(&self, now: Nanos) -> std::result::Result<CoreDriver, guards::error::Failure> {
        CoreDriver::new(self.deadline_at(now), self.idempotency, self.config)
            .map_err(guards::error::Failure::from)
    }
}

const OPTIONS: [&str; 6] = [
    "budget",
    "deadline",
    "timeoutMs",
    "attemptTimeoutMs",
    "marginMs",
    "idempotency",
];

/// Read a driver's options: the plan and the budget.
fn read_plan(env: &Env, options: Option<Unknown<'_>>) -> Result<(Plan, Option<Arc<BudgetCore>>)> {
    let mut deadline = Deadline::NONE;
    let mut timeout = None;
    let mut attempt_timeout = MAX_ATTEMPT_TIMEOUT;
    let mut margin = Nanos(0);
    let mut idem = Idempotency::Idempotent;
    let mut budget = None;
    if let Some(o) = args::opt_object(env, "options", options)? {
        for k in Object::keys(&o)? {
            if !OPTIONS.contains(&k.as_str()) {
                return Err(type_error(
                    env,
                    &k,
                    &format!(
                        "{CLASS}: unknown option `{k}` (valid options: {})",
                        OPTIONS.join(", ")
                    ),
                ));
            }
        }
        let get = |k: &str| o.get::<Unknown<'_>>(k);
        if let Some(t) = args::opt_instant(env, "deadline", get("deadline")?)? {
            deadline = Deadline::at(t);
        }
        timeout = args::opt_duration(env, "timeoutMs", get("timeoutMs")?)?;
        if let Some(t) = args::opt_duration(env, "attemptTimeoutMs", get("attemptTimeoutMs")?)? {
            attempt_timeout = t;
        }
        if let Some(t) = args::opt_duration(env, "marginMs", get("marginMs")?)? {
            margin = t;
        }
        if let Some(s) = args::opt_string(env, "idempotency", get("idempotency")?)? {
            idem = crate::retry_policy::idempotency(env, &s)?;
        }
        let b = get("budget")?;
        if let Some(b) = args::opt_instance::<RetryBudget>(env, "budget", "RetryBudget", &b)? {
            budget = Some(Arc::clone(&b.core));
        }
    }
    let config = DeadlineConfig::new(attempt_timeout, margin).map_err(|e| {
        let name = match e.field() {
            "attempt_timeout" => "attemptTimeoutMs",
            "margin" => "marginMs",
            other => other,
        };
        errors::config_range_error(
            env,
            name,
            e.kind(),
            &format!(
                "{CLASS}: invalid option `{name}`: {} (expected {})",
                errors::describe(e.kind()),
                e.expected()
            ),
        )
    })?;
    Ok((
        Plan {
            deadline,
            timeout,
            config,
            idempotency: idem,
        },
        budget,
    ))
}

/// A call in the wrong phase: a `RetryDriverError` (`GUARDS_RETRY_DRIVER_PHASE`) with
/// `call` and `phase`.
fn phase_error(env: &Env, e: RetryDriverError) -> Error {
    errors::throw(
        env,
        "RETRY_DRIVER_PHASE",
        &e.to_string(),
        Details {
            strings: vec![("call", e.call), ("phase", e.phase.name())],
            ..Details::default()
        },
    )
}

fn step_object<'e>(env: &'e Env, d: &CoreDriver, s: RetryStep) -> Result<Object<'e>> {
    let mut o = Object::new(env)?;
    o.set("kind", s.name())?;
    match s {
        RetryStep::Attempt(a) => {
            o.set("number", a.number)?;
            o.set("budgetMs", ms(a.budget))?;
            o.set("expiresAt", big(a.expires_at))?;
        }
        RetryStep::Wait(w) => {
            o.set("retryAfterMs", ms(w.retry_after))?;
            o.set("retryAt", big(w.retry_at))?;
        }
        RetryStep::Succeeded => {}
        RetryStep::GiveUp(r) => {
            o.set("reason", r.name())?;
            o.set("overloaded", r.should_propagate_as_overloaded())?;
        }
    }
    o.set("attempts", d.attempts())?;
    Ok(o)
}

fn budget_of(b: &Option<Arc<BudgetCore>>) -> Option<&dyn Budget> {
    b.as_ref().map(|b| &*b.g as &dyn Budget)
}

/// The retry loop of one request (see core's `retry_driver`). Built per request from a
/// shared `RetryPolicy` and an optional shared `RetryBudget`. A call in the wrong phase
/// (a `report` with no attempt out, anything after the end) throws a `RetryDriverError`
/// (`code` `GUARDS_RETRY_DRIVER_PHASE`, with `call` and `phase`) and changes nothing.
#[napi]
pub struct RetryDriver {
    d: CoreDriver,
    policy: Arc<PolicyCore>,
    budget: Option<Arc<BudgetCore>>,
}

#[napi]
impl RetryDriver {
    /// A driver for one request: `policy`, and `options`: `budget` (a `RetryBudget`),
    /// `deadline` (a bigint instant) or `timeoutMs` (from now), `attemptTimeoutMs` (each
    /// attempt's longest wait, default: no limit beyond the deadline, at most a day),
    /// `marginMs` (kept back from the time left; default 0), `idempotency` (default
    /// `'idempotent'`). Durations are ms, or exact ns as a bigint.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "policy: RetryPolicy, options?: RetryDriverOptions"
    )]
    pub fn new(env: Env, policy: Unknown<'_>, options: Option<Unknown<'_>>) -> Result<Self> {
        let policy = args::instance::<RetryPolicy>(&env, "policy", "RetryPolicy", &policy)?;
        let (plan, budget) = read_plan(&env, options)?;
        let d = plan
            .driver(guards::clock::now())
            .map_err(|f| config_failure(&env, CLASS, "", &f))?;
        Ok(RetryDriver {
            d,
            policy: Arc::clone(&policy.core),
            budget,
        })
    }

    /// Start the request at `now`: the first attempt, or a give-up (no time left).
    #[napi(
        catch_unwind,
        ts_args_type = "now?: bigint",
        ts_return_type = "RetryStep"
    )]
    pub fn start<'e>(&mut self, env: &'e Env, now: Option<Unknown<'_>>) -> Result<Object<'e>> {
        let now = args::now(env, now)?;
        let s = self
            .d
            .start(now, budget_of(&self.budget))
            .map_err(|e| phase_error(env, e))?;
        step_object(env, &self.d, s)
    }

    /// The attempt out ended with `outcome` (and the server's `retryAfterMs`, ms or exact
    /// ns as a bigint) at `now`: wait and retry, succeeded, or give up.
    #[napi(
        catch_unwind,
        ts_args_type = "outcome: Outcome, retryAfterMs?: number | bigint | null, now?: bigint",
        ts_return_type = "RetryStep"
    )]
    pub fn report<'e>(
        &mut self,
        env: &'e Env,
        outcome: Unknown<'_>,
        retry_after_ms: Option<Unknown<'_>>,
        now: Option<Unknown<'_>>,
    ) -> Result<Object<'e>> {
        let outcome = args::outcome(env, "outcome", &outcome)?;
        let ra = args::opt_duration(env, "retryAfterMs", retry_after_ms)?;
        let now = args::now(env, now)?;
        let p = &self.policy;
        let s = self
            .d
            .report(
                now,
                outcome,
                ra,
                p.policy(),
                p.rng(),
                budget_of(&self.budget),
            )
            .map_err(|e| phase_error(env, e))?;
        step_object(env, &self.d, s)
    }

    /// The wait is over at `now`: the next attempt, a give-up, or (woken early) more wait.
    #[napi(
        catch_unwind,
        ts_args_type = "now?: bigint",
        ts_return_type = "RetryStep"
    )]
    pub fn resume<'e>(&mut self, env: &'e Env, now: Option<Unknown<'_>>) -> Result<Object<'e>> {
        let now = args::now(env, now)?;
        let s = self.d.resume(now).map_err(|e| phase_error(env, e))?;
        step_object(env, &self.d, s)
    }

    /// The caller abandoned the request: give up with `'cancelled'` (from any phase that
    /// is not final; after the end it throws like any call in the wrong phase).
    #[napi(catch_unwind, ts_return_type = "RetryStep")]
    pub fn cancel<'e>(&mut self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.d.cancel().map_err(|e| phase_error(env, e))?;
        step_object(env, &self.d, s)
    }

    /// The phase: `'idle'`, `'attempting'`, `'waiting'`, `'succeeded'`, `'gave_up'`.
    #[napi(
        getter,
        catch_unwind,
        ts_return_type = "'idle' | 'attempting' | 'waiting' | 'succeeded' | 'gave_up'"
    )]
    pub fn phase(&self) -> &'static str {
        self.d.phase().name()
    }

    /// Why it gave up (`null` unless it has).
    #[napi(getter, catch_unwind, ts_return_type = "GiveUpReason | null")]
    pub fn give_up_reason(&self) -> Option<&'static str> {
        self.d.give_up_reason().map(|r| r.name())
    }

    /// Whether the give-up should travel up as "overloaded" (don't retry above).
    #[napi(getter, catch_unwind)]
    pub fn overloaded(&self) -> bool {
        self.d
            .give_up_reason()
            .is_some_and(|r| r.should_propagate_as_overloaded())
    }

    /// Attempts started.
    #[napi(getter, catch_unwind)]
    pub fn attempts(&self) -> u32 {
        self.d.attempts()
    }

    /// Retries decided.
    #[napi(getter, catch_unwind)]
    pub fn retries(&self) -> u32 {
        self.d.retries()
    }

    /// The outcome of the last attempt reported (or cancelled), if any.
    #[napi(getter, catch_unwind, ts_return_type = "Outcome | null")]
    pub fn last_outcome(&self) -> Option<&'static str> {
        self.d.last_outcome().map(|o| o.name())
    }

    /// The deadline's instant (`null`: none).
    #[napi(getter, catch_unwind)]
    pub fn deadline(&self) -> Option<BigInt> {
        self.d.deadline().expires_at().map(big)
    }
}

/// The pool of one `Retry` plan: drivers by slot number (the JavaScript layer hands the
/// numbers out and back), the plan's settings, policy and budget.
pub(crate) struct Pool {
    plan: Plan,
    policy: Arc<PolicyCore>,
    budget: Option<Arc<BudgetCore>>,
    drivers: RefCell<Vec<CoreDriver>>,
    /// The fast path's arguments, passed through memory (`settle` reads them there when
    /// called with none).
    io: fast::Io,
}

impl fast::WithIo for Pool {
    fn io(&self) -> &fast::Io {
        &self.io
    }
}

/// What the fast functions return for a step: an attempt's budget in ms (>= 0), -2
/// succeeded, -1 gave up (the reason from `reason(slot)`), and a wait as `-(3 + ms)`.
fn code(s: std::result::Result<RetryStep, RetryDriverError>) -> f64 {
    match s {
        Ok(RetryStep::Attempt(a)) => ms(a.budget),
        Ok(RetryStep::Wait(w)) => -3.0 - ms(w.retry_after),
        Ok(RetryStep::Succeeded) => -2.0,
        Ok(RetryStep::GiveUp(_)) | Err(_) => -1.0,
    }
}

impl Pool {
    /// Run `f` on the driver in `slot`.
    fn with<R>(&self, env: &Env, slot: u32, f: impl FnOnce(&mut CoreDriver) -> R) -> Result<R> {
        let mut ds = self
            .drivers
            .try_borrow_mut()
            .map_err(|_| errors::internal(env, "RetryDrivers: re-entered"))?;
        let d = ds
            .get_mut(slot as usize)
            .ok_or_else(|| range_error(env, "slot", "RetryDrivers: no driver in this slot"))?;
        Ok(f(d))
    }

    /// Put a fresh driver for a request starting at `now` in `slot` (a slot in use, or the
    /// next new one).
    fn fresh(&self, env: &Env, slot: u32, plan: Plan, now: Nanos) -> Result<()> {
        let d = plan
            .driver(now)
            .map_err(|f| config_failure(env, CLASS, "", &f))?;
        self.keep(env, slot, d)
    }

    /// Put driver `d` in `slot` (a slot in use, or the next new one).
    fn keep(&self, env: &Env, slot: u32, d: CoreDriver) -> Result<()> {
        let mut ds = self
            .drivers
            .try_borrow_mut()
            .map_err(|_| errors::internal(env, "RetryDrivers: re-entered"))?;
        let i = slot as usize;
        match i.cmp(&ds.len()) {
            std::cmp::Ordering::Less => {
                if let Some(x) = ds.get_mut(i) {
                    *x = d;
                }
            }
            std::cmp::Ordering::Equal => ds.push(d),
            std::cmp::Ordering::Greater => {
                return Err(range_error(
                    env,
                    "slot",
                    "RetryDrivers: slots are numbered from 0 without gaps",
                ))
            }
        }
        Ok(())
    }

    fn report(
        &self,
        env: &Env,
        slot: u32,
        outcome: Outcome,
        retry_after_ms: f64,
        now: Nanos,
    ) -> Result<f64> {
        let ra = retry_after(env, retry_after_ms)?;
        let (p, b) = (&self.policy, budget_of(&self.budget));
        self.with(env, slot, |d| {
            code(d.report(now, outcome, ra, p.policy(), p.rng(), b))
        })
    }
}

/// A Retry-After in ms from the fast path (< 0: none).
fn retry_after(env: &Env, ms: f64) -> Result<Option<Nanos>> {
    if ms >= 0.0 {
        args::duration_ms(env, "retryAfterMs", ms).map(Some)
    } else {
        Ok(None)
    }
}

// The fast functions of `RetryDrivers` (see `fast` and `code`):
//
// - `begin(slot)`: a fresh driver in `slot` starts now (deposits in the budget): the
//   first attempt's budget, or -1 (no time left);
// - `settle(slot, outcome, retryAfterMs)`: for a plan without deadline or budget, whose
//   first attempt already ran: a fresh driver starts and takes its outcome now (the same
//   decisions as starting before the attempt: without a deadline or a budget, `start`
//   decides nothing); the driver is kept in `slot` only if the request goes on (a wait)
//   or gave up (for its reason);
// - `report(slot, outcome, retryAfterMs)`: the attempt out ended (`retryAfterMs` < 0:
//   none);
// - `resume(slot)`: the wait is over.
fast_fn!(fast_begin, Pool, 1, "RetryDrivers begin", |env, p, a| {
    let slot = a.whole(env, 0, "slot", u32::MAX)?;
    let now = guards::clock::now();
    p.fresh(env, slot, p.plan, now)?;
    let b = budget_of(&p.budget);
    p.with(env, slot, |d| code(d.start(now, b)))
});

fast_fn!(fast_settle, Pool, 3, "RetryDrivers settle", |env, p, a| {
    let slot = a.whole_io(env, 0, "slot", u32::MAX, &p.io)?;
    let outcome = outcome::of_number(env, a.whole_io(env, 1, "outcome", 255, &p.io)?)?;
    let ra = retry_after(env, a.f64_io(env, 2, "retryAfterMs", &p.io)?)?;
    // Without a deadline or a budget, an outcome the retry table gives up on (a success,
    // a permanent error, ...) is decided without the time: the clock is read only for an
    // outcome that may be retried (its wait is an instant from now).
    let now = match outcome.retry() {
        RetryVerdict::GiveUp(_)
            if p.plan.deadline.is_none() && p.plan.timeout.is_none() && p.budget.is_none() =>
        {
            Nanos::ZERO
        }
        _ => guards::clock::now(),
    };
    // On the stack: the pool only keeps a driver that goes on (waits). The plan was
    // validated when the pool was built.
    let plan = &p.plan;
    let Ok(mut d) = CoreDriver::new(plan.deadline_at(now), plan.idempotency, plan.config) else {
        return Err(errors::internal(
            env,
            "RetryDrivers: a validated plan refused",
        ));
    };
    let b = budget_of(&p.budget);
    let started = code(d.start(now, b));
    if started < 0.0 {
        return Ok(started);
    }
    let pol = &p.policy;
    let r = code(d.report(now, outcome, ra, pol.policy(), pol.rng(), b));
    if r <= -3.0 || r == -1.0 {
        p.keep(env, slot, d)?;
    }
    Ok(r)
});

fast_fn!(fast_report, Pool, 3, "RetryDrivers report", |env, p, a| {
    let slot = a.whole(env, 0, "slot", u32::MAX)?;
    let outcome = outcome::of_number(env, a.whole(env, 1, "outcome", 255)?)?;
    let ra = a.f64(env, 2, "retryAfterMs")?;
    p.report(env, slot, outcome, ra, guards::clock::now())
});

fast_fn!(fast_resume, Pool, 1, "RetryDrivers resume", |env, p, a| {
    let slot = a.whole(env, 0, "slot", u32::MAX)?;
    let now = guards::clock::now();
    p.with(env, slot, |d| code(d.resume(now)))
});

/// The drivers of one `Retry` plan (the JavaScript layer's `retry()`): a pool of
/// `RetryDriver`s by slot, driven through fast functions, so that a call allocates no
/// native object. Not for direct use: `RetryDriver` is the step-by-step API.
#[napi]
pub struct RetryDrivers {
    p: Rc<Pool>,
}

#[napi]
impl RetryDrivers {
    /// The drivers of a plan: `policy` and the `RetryDriver` options.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "policy: RetryPolicy, options?: RetryDriverOptions"
    )]
    pub fn new(env: Env, policy: Unknown<'_>, options: Option<Unknown<'_>>) -> Result<Self> {
        let policy = args::instance::<RetryPolicy>(&env, "policy", "RetryPolicy", &policy)?;
        let (plan, budget) = read_plan(&env, options)?;
        // Validate the settings now (a bad one throws here, naming it).
        plan.driver(guards::clock::now())
            .map_err(|f| config_failure(&env, CLASS, "", &f))?;
        Ok(RetryDrivers {
            p: Rc::new(Pool {
                plan,
                policy: Arc::clone(&policy.core),
                budget,
                drivers: RefCell::new(Vec::new()),
                io: fast::Io::new(),
            }),
        })
    }

    /// The fast functions (`{ begin, settle, report, resume }`).
    #[napi(js_name = "_fast", catch_unwind, ts_return_type = "unknown")]
    pub fn fast<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        fast::functions_with_io(
            env,
            &self.p,
            &[
                ("begin", fast_begin),
                ("settle", fast_settle),
                ("report", fast_report),
                ("resume", fast_resume),
            ],
        )
    }

    /// Whether the plan has neither a deadline nor a time limit nor a budget (its requests
    /// may `settle` after the first attempt instead of `begin` before it).
    #[napi(getter, catch_unwind)]
    pub fn settles(&self) -> bool {
        let p = &self.p.plan;
        p.deadline.is_none() && p.timeout.is_none() && self.p.budget.is_none()
    }

    /// The first attempt's budget in ms when the plan `settles` (without a deadline it is
    /// the same for every request), else `null`.
    #[napi(getter, catch_unwind)]
    pub fn first_budget_ms(&self) -> Option<f64> {
        if !self.settles() {
            return None;
        }
        let mut d = self.p.plan.driver(Nanos(0)).ok()?;
        match d.start(Nanos(0), None) {
            Ok(RetryStep::Attempt(a)) => Some(ms(a.budget)),
            _ => None,
        }
    }

    /// A fresh driver in `slot` for a request narrowed to `deadline` (a bigint instant)
    /// and/or `timeoutMs`, started now: as `begin`.
    #[napi(
        js_name = "_beginWith",
        catch_unwind,
        ts_args_type = "slot: number, deadline?: bigint | null, timeoutMs?: number | bigint | null"
    )]
    pub fn begin_with(
        &self,
        env: Env,
        slot: Unknown<'_>,
        deadline: Option<Unknown<'_>>,
        timeout_ms: Option<Unknown<'_>>,
    ) -> Result<f64> {
        let slot = args::whole_u32(&env, "slot", &slot)?;
        let mut plan = self.p.plan;
        if let Some(t) = args::opt_instant(&env, "deadline", deadline)? {
            plan.deadline = plan.deadline.min(Deadline::at(t));
        }
        if let Some(t) = args::opt_duration(&env, "timeoutMs", timeout_ms)? {
            plan.timeout = Some(plan.timeout.map_or(t, |u| u.min(t)));
        }
        let now = guards::clock::now();
        self.p.fresh(&env, slot, plan, now)?;
        let b = budget_of(&self.p.budget);
        self.p.with(&env, slot, |d| code(d.start(now, b)))
    }

    /// The driver in `slot` is abandoned: give up with `'cancelled'` (no effect once over).
    #[napi(js_name = "_cancel", catch_unwind, ts_args_type = "slot: number")]
    pub fn cancel(&self, env: Env, slot: Unknown<'_>) -> Result<()> {
        let slot = args::whole_u32(&env, "slot", &slot)?;
        self.p.with(&env, slot, |d| {
            let _ = d.cancel();
        })
    }

    /// Why the driver in `slot` gave up (`null` unless it has).
    #[napi(
        js_name = "_reason",
        catch_unwind,
        ts_args_type = "slot: number",
        ts_return_type = "GiveUpReason | null"
    )]
    pub fn reason(&self, env: Env, slot: Unknown<'_>) -> Result<Option<&'static str>> {
        let slot = args::whole_u32(&env, "slot", &slot)?;
        self.p
            .with(&env, slot, |d| d.give_up_reason().map(|r| r.name()))
    }

    /// Attempts the driver in `slot` has started.
    #[napi(js_name = "_attempts", catch_unwind, ts_args_type = "slot: number")]
    pub fn attempts(&self, env: Env, slot: Unknown<'_>) -> Result<u32> {
        let slot = args::whole_u32(&env, "slot", &slot)?;
        self.p.with(&env, slot, |d| d.attempts())
    }

    /// Slots ever used (the pool's size).
    #[napi(getter, catch_unwind)]
    pub fn size(&self) -> u32 {
        u32::try_from(self.p.drivers.borrow().len()).unwrap_or(u32::MAX)
    }
}
