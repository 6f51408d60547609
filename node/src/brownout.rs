//! `Brownout`: for a refused or failed call, serve the fallback (optional part), fail fast
//! (required part) or proceed (exempt), per operation.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::{BuildInPlace, InPlace};
use guards::names::{BrownoutConfig, ConfigError};
use guards::schema;
use guards_core::brownout::{operation_key, Brownout as CoreBrownout, RefusalKind};

use crate::args;
use crate::convert::{num, numbers, Options, Val};
use crate::errors::{config_failure, type_error};
use crate::shared::{self, Keep};

const CLASS: &str = "Brownout";
const KINDS: &str = "'breaker_open', 'bulkhead_full', 'budget_exhausted', 'throttled', 'timeout', 'overloaded', 'failed'";

/// A brownout, placeable in a shared buffer.
#[repr(C)]
pub(crate) struct BrownoutState(CoreBrownout);

impl BuildInPlace for BrownoutState {
    type Config = BrownoutConfig;
    fn reset_in_place(&mut self, config: BrownoutConfig) -> std::result::Result<(), ConfigError> {
        self.0.reset(config)
    }
}

/// A refusal kind argument.
pub(crate) fn kind(env: &Env, v: &Unknown<'_>) -> Result<RefusalKind> {
    let name = args::string(env, "kind", v)?;
    RefusalKind::from_name(&name).ok_or_else(|| {
        type_error(
            env,
            "kind",
            &format!("`kind` must be a refusal kind: one of {KINDS}, not {name:?}"),
        )
    })
}

pub(crate) fn read_config(
    env: &Env,
    options: Option<Unknown<'_>>,
) -> Result<(BrownoutConfig, u64)> {
    let mut o = Options::read(env, CLASS, options)?;
    let named = o.take_prefixed("fallback_on[");
    if !named.is_empty() {
        let mut bits = 0u8;
        for (_, camel, v) in named {
            match v {
                Val::Str(s) => match RefusalKind::from_name(&s) {
                    Some(k) => bits |= k.bit(),
                    None => {
                        return Err(type_error(
                            env,
                            &camel,
                            &format!(
                            "{CLASS}: `{camel}` must be a refusal kind: one of {KINDS}, not {s:?}"
                        ),
                        ))
                    }
                },
                _ => {
                    return Err(type_error(
                        env,
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
    let c = o.build(env, &schema::BROWNOUT, "")?;
    CoreBrownout::new(c).map_err(|e| config_failure(env, CLASS, "", &e.into()))?;
    Ok((c, 0))
}

/// A brownout decision for one operation. `optional: true` (default): refusals and
/// failures of the kinds in `fallbackOn` (default all) serve the fallback; `optional:
/// false`: fail fast; `exempt: true`: local refusals let the call proceed. Lock-free;
/// shareable by worker threads (`Brownout.shared`: its counters).
#[napi]
pub struct Brownout {
    b: InPlace<BrownoutState>,
    _keep: Keep,
}

#[napi]
impl Brownout {
    /// A brownout with `options`: `optional`, `exempt`, `fallbackOn` (an array of refusal
    /// kinds, or their bits). With `shared`: built in or attached to a
    /// `SharedArrayBuffer` (see `CircuitBreaker`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: BrownoutOptions, shared?: Uint8Array"
    )]
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        shared: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let (b, _keep) =
            crate::region::place_or_attach::<CoreBrownout>(&env, CLASS, options, shared, |o| {
                read_config(&env, o)
            })?;
        Ok(Brownout { b, _keep })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a brownout.
    #[napi(catch_unwind, ts_args_type = "options?: BrownoutOptions")]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        shared::size_for::<InPlace<BrownoutState>>(&env, CLASS, || read_config(&env, options))
    }

    /// A guard refused the call (or it failed) with refusal `kind`: `'serve_fallback'`,
    /// `'fail_fast'` or `'proceed'` (counted).
    #[napi(
        catch_unwind,
        ts_args_type = "kind: RefusalKind",
        ts_return_type = "'serve_fallback' | 'fail_fast' | 'proceed'"
    )]
    pub fn on_refusal(&self, env: Env, kind: Unknown<'_>) -> Result<&'static str> {
        Ok(self.b.0.on_refusal(self::kind(&env, &kind)?).name())
    }

    /// What a refusal of `kind` would get, without counting it.
    #[napi(
        catch_unwind,
        ts_args_type = "kind: RefusalKind",
        ts_return_type = "'serve_fallback' | 'fail_fast' | 'proceed'"
    )]
    pub fn decide(&self, env: Env, kind: Unknown<'_>) -> Result<&'static str> {
        Ok(self.b.0.config().decide(self::kind(&env, &kind)?).name())
    }

    /// A call finished with `outcome`: its decision if it is a refusal kind (`null`: a
    /// success, or an outcome that never gets a fallback: permanent, ignored, cancelled).
    #[napi(
        catch_unwind,
        ts_args_type = "outcome: Outcome",
        ts_return_type = "'serve_fallback' | 'fail_fast' | 'proceed' | null"
    )]
    pub fn report(&self, env: Env, outcome: Unknown<'_>) -> Result<Option<&'static str>> {
        let o = args::outcome(&env, "outcome", &outcome)?;
        Ok(self.b.0.report(o).map(|d| d.name()))
    }

    /// The refusal kind of `outcome` (`null` for those that never get a fallback).
    #[napi(
        catch_unwind,
        ts_args_type = "outcome: Outcome",
        ts_return_type = "RefusalKind | null"
    )]
    pub fn kind_of(env: Env, outcome: Unknown<'_>) -> Result<Option<&'static str>> {
        let o = args::outcome(&env, "outcome", &outcome)?;
        Ok(RefusalKind::of(o).map(|k| k.name()))
    }

    /// The 64-bit key of operation `name`, as every binding computes it.
    #[napi(catch_unwind, ts_args_type = "name: string")]
    pub fn operation_key(env: Env, name: Unknown<'_>) -> Result<BigInt> {
        let s = args::string(&env, "name", &name)?;
        Ok(BigInt::from(operation_key(&s)))
    }

    /// A full answer was served.
    #[napi(catch_unwind)]
    pub fn on_full(&self) {
        self.b.0.on_full();
    }

    /// Whether the operation is optional.
    #[napi(getter, catch_unwind)]
    pub fn optional(&self) -> bool {
        self.b.0.config().optional
    }

    /// `{ full, degraded, errors, proceeded }`.
    #[napi(catch_unwind, ts_return_type = "BrownoutStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.b.0.stats();
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

/// An operation argument: a name (its key is `Brownout.operationKey(name)`) or a bigint key.
fn operation(env: &Env, v: &Unknown<'_>) -> Result<u64> {
    match v.get_type()? {
        napi::ValueType::String => Ok(operation_key(&args::string(env, "operation", v)?)),
        napi::ValueType::BigInt => args::bigint_u64(v).ok_or_else(|| {
            crate::errors::range_error(
                env,
                "operation",
                "`operation` as a bigint must be in 0..2^64",
            )
        }),
        _ => Err(type_error(
            env,
            "operation",
            &format!(
                "`operation` must be a name (a string) or a key (a bigint), not {}",
                args::what(v)
            ),
        )),
    }
}

fn stats_object<'e>(env: &'e Env, s: guards_core::brownout::BrownoutStats) -> Result<Object<'e>> {
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

/// Brownout decisions for many operations in one table (an operation: a name, or its
/// 64-bit key): each registered with its own options; an operation never registered is
/// treated as required (fail fast) and counted as `unknown`. Decisions are lock-free;
/// registering changes the table (one thread, before the traffic), so a table is not
/// shared between worker threads: share a `Brownout` per operation instead.
#[napi]
pub struct BrownoutTable {
    t: guards::handle::AnyBrownoutTable,
}

#[napi]
impl BrownoutTable {
    /// A table with room for `capacity` operations (default 16; rounded up to 16, 64, 256
    /// or 1024).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: { capacity?: number }"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> Result<Self> {
        let mut o = Options::read(&env, "BrownoutTable", options)?;
        let capacity = o.count(&env, "capacity", 16, 1024)?;
        if let Some((_, camel, _)) = o.leaves.first() {
            return Err(type_error(
                &env,
                camel,
                &format!("BrownoutTable: unknown option `{camel}` (valid options: capacity)"),
            ));
        }
        let t = guards::handle::AnyBrownoutTable::new(capacity)
            .map_err(|f| config_failure(&env, "BrownoutTable", "", &f))?;
        Ok(BrownoutTable { t })
    }

    /// Register `operation` with `options` (as a `Brownout`'s): its index (registration
    /// order). A bad option is a `RangeError`/`TypeError` naming it; an operation already
    /// registered, or a full table, a `RangeError` with `option: 'operation'` and `reason`
    /// `'duplicate'` / `'full'`. A failed registration leaves the table as it was.
    #[napi(
        catch_unwind,
        ts_args_type = "operation: string | bigint, options?: BrownoutOptions"
    )]
    pub fn register(
        &mut self,
        env: Env,
        operation: Unknown<'_>,
        options: Option<Unknown<'_>>,
    ) -> Result<u32> {
        let key = self::operation(&env, &operation)?;
        let (c, _) = read_config(&env, options)?;
        let r = guards::with_brownout_table!(&mut self.t, t => t.register(key, c));
        let refuse = |reason: &'static str, what: &str| {
            crate::errors::throw(
                &env,
                "RangeError",
                &format!("BrownoutTable: {what}"),
                crate::errors::Details {
                    option: Some("operation".to_owned()),
                    reason: Some(reason),
                    ..crate::errors::Details::default()
                },
            )
        };
        match r {
            Ok(i) => Ok(u32::try_from(i).unwrap_or(u32::MAX)),
            Err(guards_core::brownout::RegisterError::Duplicate) => {
                Err(refuse("duplicate", "the operation is already registered"))
            }
            Err(guards_core::brownout::RegisterError::Full) => {
                Err(refuse("full", "the table is full"))
            }
            Err(guards_core::brownout::RegisterError::Config(e)) => {
                Err(config_failure(&env, "BrownoutTable", "", &e.into()))
            }
            Err(_) => Err(crate::errors::internal(&env, "BrownoutTable: register")),
        }
    }

    /// A guard refused a call of `operation` with `kind`: its decision (counted; an
    /// operation never registered fails fast and is counted as unknown).
    #[napi(
        catch_unwind,
        ts_args_type = "operation: string | bigint, kind: RefusalKind",
        ts_return_type = "'serve_fallback' | 'fail_fast' | 'proceed'"
    )]
    pub fn on_refusal(
        &self,
        env: Env,
        operation: Unknown<'_>,
        kind: Unknown<'_>,
    ) -> Result<&'static str> {
        let key = self::operation(&env, &operation)?;
        let k = self::kind(&env, &kind)?;
        Ok(guards::with_brownout_table!(&self.t, t => t.on_refusal(key, k)).name())
    }

    /// A call of `operation` finished with `outcome`: its decision if it is a refusal kind.
    #[napi(
        catch_unwind,
        ts_args_type = "operation: string | bigint, outcome: Outcome",
        ts_return_type = "'serve_fallback' | 'fail_fast' | 'proceed' | null"
    )]
    pub fn report(
        &self,
        env: Env,
        operation: Unknown<'_>,
        outcome: Unknown<'_>,
    ) -> Result<Option<&'static str>> {
        let key = self::operation(&env, &operation)?;
        let o = args::outcome(&env, "outcome", &outcome)?;
        Ok(guards::with_brownout_table!(&self.t, t => t.report(key, o)).map(|d| d.name()))
    }

    /// A full answer was served for `operation`: whether it is registered (an unknown
    /// one is counted as unknown).
    #[napi(catch_unwind, ts_args_type = "operation: string | bigint")]
    pub fn on_full(&self, env: Env, operation: Unknown<'_>) -> Result<bool> {
        let key = self::operation(&env, &operation)?;
        Ok(guards::with_brownout_table!(&self.t, t => t.on_full(key)))
    }

    /// `operation`'s `{ full, degraded, errors, proceeded }` (`null`: not registered).
    #[napi(
        catch_unwind,
        ts_args_type = "operation: string | bigint",
        ts_return_type = "BrownoutStats | null"
    )]
    pub fn stats<'e>(&self, env: &'e Env, operation: Unknown<'_>) -> Result<Option<Object<'e>>> {
        let key = self::operation(env, &operation)?;
        let s = guards::with_brownout_table!(&self.t, t => t.get(key).map(|b| b.stats()));
        s.map(|s| stats_object(env, s)).transpose()
    }

    /// The counters summed over every registered operation.
    #[napi(catch_unwind, ts_return_type = "BrownoutStats")]
    pub fn totals<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        stats_object(env, guards::with_brownout_table!(&self.t, t => t.totals()))
    }

    /// Decisions asked for operations never registered.
    #[napi(getter, catch_unwind)]
    pub fn unknown(&self) -> f64 {
        num(guards::with_brownout_table!(&self.t, t => t.unknown()))
    }

    /// Operations registered.
    #[napi(getter, catch_unwind)]
    pub fn length(&self) -> u32 {
        u32::try_from(guards::with_brownout_table!(&self.t, t => t.len())).unwrap_or(u32::MAX)
    }

    /// Operations it has room for.
    #[napi(getter, catch_unwind)]
    pub fn capacity(&self) -> u32 {
        u32::try_from(self.t.capacity()).unwrap_or(u32::MAX)
    }
}
