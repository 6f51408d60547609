//! Outcomes in: the call contract's names (`'success'`, `'timeout'`, ...) or numbers.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards_core::Outcome;

use crate::errors::type_error;

const NAMES: &str = "'success', 'timeout', 'connection_error', 'other_transient', 'throttled', \
                     'overloaded', 'permanent', 'rejected', 'ignored', 'cancelled'";

/// The outcome named `name` (core's snake_case names), or a `TypeError` naming `option`.
pub(crate) fn parse(env: &Env, option: &str, name: &str) -> Result<Outcome> {
    Outcome::from_name(name).ok_or_else(|| {
        type_error(
            env,
            option,
            &format!("`{option}` must be an outcome: one of {NAMES}, not {name:?}"),
        )
    })
}

/// The outcome numbered `n` (the fast paths of the JavaScript layer pass numbers).
#[inline]
pub(crate) fn of_number(env: &Env, n: u32) -> Result<Outcome> {
    u8::try_from(n)
        .ok()
        .and_then(|n| Outcome::try_from(n).ok())
        .ok_or_else(|| type_error(env, "outcome", &format!("unknown outcome number {n}")))
}

/// The outcomes in number order (`OUTCOMES[n]` is outcome `n`'s name).
#[napi(catch_unwind)]
pub fn outcome_names() -> Vec<&'static str> {
    Outcome::ALL.iter().map(|o| o.name()).collect()
}
