//! Outcomes: the call contract's names (`'success'`, `'timeout'`, ...), their numbers (the
//! fast paths pass numbers), and what each guard does with one (the table of
//! `docs/outcomes.md`).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards_core::outcome::RetryVerdict;
use guards_core::Outcome;

use crate::args;
use crate::errors::type_error;

/// The outcome numbered `n` (the fast paths of the JavaScript layer pass numbers).
#[inline]
pub(crate) fn of_number(env: &Env, n: u32) -> Result<Outcome> {
    u8::try_from(n)
        .ok()
        .and_then(|n| Outcome::try_from(n).ok())
        .ok_or_else(|| type_error(env, "outcome", &format!("unknown outcome number {n}")))
}

/// The outcomes in number order (`OUTCOMES[n]` is outcome `n`'s name).
#[napi(catch_unwind, ts_return_type = "Outcome[]")]
pub fn outcome_names() -> Vec<&'static str> {
    Outcome::ALL.iter().map(|o| o.name()).collect()
}

/// What every guard does with `outcome` (the call contract's table, docs/outcomes.md):
/// `{ number, breakerCall, breakerProbe, bulkhead, limiter, retryBudget,
/// adaptiveThrottle, latency, retry: { retry: cause } | { giveUp: reason }, brownout }`.
#[napi(
    catch_unwind,
    ts_args_type = "outcome: Outcome",
    ts_return_type = "OutcomeVerdicts"
)]
pub fn outcome_verdicts<'e>(env: &'e Env, outcome: Unknown<'_>) -> Result<Object<'e>> {
    let o = args::outcome(env, "outcome", &outcome)?;
    let mut out = Object::new(env)?;
    out.set("number", o as u8)?;
    for (column, verdict) in guards::outcome::verdict_names(o) {
        out.set(crate::convert::camel(column), verdict)?;
    }
    let mut retry = Object::new(env)?;
    match o.retry() {
        RetryVerdict::Retry(cause) => retry.set("retry", cause.name())?,
        RetryVerdict::GiveUp(reason) => retry.set("giveUp", reason.name())?,
    }
    out.set("retry", retry)?;
    out.set("brownout", o.brownout().map(|k| k.name()))?;
    Ok(out)
}
