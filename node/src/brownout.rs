//! `Brownout`: for a refused or failed call, serve the fallback (optional part), fail fast
//! (required part) or proceed (exempt), per operation.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::schema;
use guards_core::brownout::{Brownout as CoreBrownout, RefusalKind};

use crate::convert::{num, numbers, Options, Val};
use crate::errors::{config_failure, type_error};

const CLASS: &str = "Brownout";
const KINDS: &str = "'breaker_open', 'bulkhead_full', 'budget_exhausted', 'throttled', 'timeout', 'overloaded', 'failed'";

pub(crate) fn kind(env: &Env, name: &str) -> Result<RefusalKind> {
    RefusalKind::from_name(name).ok_or_else(|| {
        type_error(
            env,
            "kind",
            &format!("`kind` must be a refusal kind: one of {KINDS}, not {name:?}"),
        )
    })
}

/// A brownout decision for one operation. `optional: true` (default): refusals and
/// failures of the kinds in `fallbackOn` (default all) serve the fallback; `optional:
/// false`: fail fast; `exempt: true`: local refusals let the call proceed.
#[napi]
pub struct Brownout {
    b: CoreBrownout,
}

#[napi]
impl Brownout {
    /// A brownout with `options`: `optional`, `exempt`, `fallbackOn` (an array of refusal
    /// kinds, or their bits).
    #[napi(constructor, catch_unwind, ts_args_type = "options?: BrownoutOptions")]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> Result<Self> {
        let mut o = Options::read(&env, CLASS, options)?;
        let named = o.take_prefixed("fallback_on[");
        if !named.is_empty() {
            let mut bits = 0u8;
            for (_, camel, v) in named {
                match v {
                    Val::Str(s) => bits |= kind(&env, &s)?.bit(),
                    _ => {
                        return Err(type_error(
                            &env,
                            &camel,
                            &format!("{CLASS}: `{camel}` must be a refusal kind name ({KINDS})"),
                        ))
                    }
                }
            }
            o.leaves.push((
                "fallback_on".into(),
                "fallbackOn".into(),
                Val::Num(f64::from(bits)),
            ));
        }
        let c = o.build(&env, &schema::BROWNOUT, "")?;
        let b = CoreBrownout::new(c).map_err(|e| config_failure(&env, CLASS, "", &e.into()))?;
        Ok(Brownout { b })
    }

    /// A guard refused the call (or it failed) with refusal `kind`: `'serve_fallback'`,
    /// `'fail_fast'` or `'proceed'` (counted).
    #[napi(
        catch_unwind,
        ts_args_type = "kind: RefusalKind",
        ts_return_type = "'serve_fallback' | 'fail_fast' | 'proceed'"
    )]
    pub fn on_refusal(&self, env: Env, kind: String) -> Result<&'static str> {
        Ok(self.b.on_refusal(self::kind(&env, &kind)?).name())
    }

    /// A call finished with `outcome`: its decision if it is a refusal kind (`null`: a
    /// success, or an outcome that never gets a fallback: permanent, ignored, cancelled).
    #[napi(
        catch_unwind,
        ts_args_type = "outcome: Outcome",
        ts_return_type = "'serve_fallback' | 'fail_fast' | 'proceed' | null"
    )]
    pub fn report(&self, env: Env, outcome: String) -> Result<Option<&'static str>> {
        let o = crate::outcome::parse(&env, "outcome", &outcome)?;
        Ok(self.b.report(o).map(|d| d.name()))
    }

    /// The refusal kind of `outcome` (`null` for those that never get a fallback).
    #[napi(
        catch_unwind,
        ts_args_type = "outcome: Outcome",
        ts_return_type = "RefusalKind | null"
    )]
    pub fn kind_of(env: Env, outcome: String) -> Result<Option<&'static str>> {
        let o = crate::outcome::parse(&env, "outcome", &outcome)?;
        Ok(RefusalKind::of(o).map(|k| k.name()))
    }

    /// A full answer was served.
    #[napi]
    pub fn on_full(&self) {
        self.b.on_full();
    }

    /// Whether the operation is optional.
    #[napi(getter)]
    pub fn optional(&self) -> bool {
        self.b.config().optional
    }

    /// `{ full, degraded, errors, proceeded }`.
    #[napi(
        catch_unwind,
        ts_return_type = "{ full: number; degraded: number; errors: number; proceeded: number }"
    )]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.b.stats();
        numbers(
            env,
            &[
                ("full", num(s.full)),
                ("degraded", num(s.degraded)),
                ("errors", num(s.errors)),
                ("proceeded", num(s.proceeded)),
            ],
        )
    }
}
