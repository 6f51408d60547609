//! Host-wide guards: `Region` and the guards in it, over ffi's `guards::shared`.
//!
//! A region is a file (a bare name means `/dev/shm/<name>`) mapped by every process that
//! opens it, holding named guards; every process that asks for `"stock"` gets the same
//! bulkhead, and core's code runs on the shared state (`docs/shared.md`). This module
//! makes that reachable from Node, for the workers of a `cluster` or any processes of one
//! machine (worker threads of one process can use it too, or `SharedArrayBuffer`s: see
//! `shared`).
//!
//! The guard classes (`RegionCircuitBreaker`, `RegionKeyedBreakers`, `RegionBulkhead`,
//! `RegionLimiter`, `RegionAdmission`) read their options with the
//! private classes' readers, throw the same refusals, and give the JavaScript layer
//! (`lib/region.js`), `guarded`, `createFetch` and the admission middlewares the same
//! fast path (`_fast()`: `acquire` and `report`/`release` as plain Node-API functions,
//! permits parked in the object's token table). The difference is where a permit is kept:
//! in the region's permit table with this process as its owner, so that when a process
//! dies holding permits, `Region.reclaim()` (or the next acquire that finds the guard
//! full, or the next `open`) gives them back to their guards as `cancelled`.
//!
//! The kinds without permits (retry budget, adaptive throttle, latency tracker, hedging,
//! brownout) have no class here: `Region._retryBudget` and its siblings find or create the
//! guard and hand it to the package's own class (`new RetryBudget(undefined, it)`), which
//! then works on the region's memory and keeps its mapping alive. So a region budget is a
//! `RetryBudget`, and `retry`, `createFetch`, `RetryDriver` and the gates take it.
//!
//! Failures of the region itself throw a `RegionError` whose `code` is stable:
//! `GUARDS_GUARD_MISMATCH` (a guard of that name exists with another kind, capacity or
//! config; `field` says which), `GUARDS_GUARD_NOT_FOUND`, `GUARDS_REGION_FULL`,
//! `GUARDS_REGION_TIMEOUT`, `GUARDS_REGION_INVALID`, `GUARDS_REGION_INCOMPATIBLE`,
//! `GUARDS_REGION_IO` (`errno`), `GUARDS_PERMIT_SLOTS_EXHAUSTED`. Bad options and
//! arguments throw `TypeError` / `RangeError` naming them, as everywhere in the package.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::error::{Detail, Failure, GuardsResult};
use guards::handle::{AnyAdaptiveThrottle, AnyHedging, AnyLatencyTracker, InPlace};
use guards::names::{
    AdaptiveThrottleConfig, AdmissionConfig, BreakerStatus, BrownoutConfig, BulkheadConfig,
    CircuitBreakerConfig, HedgingConfig, LatencyTrackerConfig, LimitConfig, LimiterConfig, Nanos,
    Outcome, RetryBudgetConfig,
};
use guards::permit::PermitToken;
use guards::schema::{self, Schema, Unit, Value};
use guards::shared::{self as gs, AnyShared, Refusal, RegionOptions, Shared, SharedGuard};
use guards_core::adaptive_throttle::AdaptiveThrottle as CoreThrottle;
use guards_core::admission::{Admission as CoreAdmission, AdmissionRejected};
use guards_core::brownout::Brownout as CoreBrownout;
use guards_core::bulkhead::{Bulkhead as CoreBulkhead, BulkheadRejected};
use guards_core::circuit_breaker::{
    key_of, BreakerState, CircuitBreaker as CoreBreaker, CircuitBreakerRejected,
    KeyedBreakers as CoreKeyed, KeyedBreakersRejected,
};
use guards_core::hedging::Hedging as CoreHedging;
use guards_core::latency_tracker::LatencyTracker as CoreTracker;
use guards_core::limiter::{Limiter as CoreLimiter, LimiterRejected};
use guards_core::retry_budget::RetryBudget as CoreBudget;
use guards_core::Priority;

use crate::args;
use crate::convert::{big, camel, config_object, ms, num, numbers, whole, Options, Val};
use crate::errors::{self, config_failure, range_error, type_error, Details};
use crate::fast::{self, fast_fn};
use crate::outcome;
use crate::shared::{Keep, Placeable, Placed};
use crate::token::{Tokens, CHANGED};

// ---------------------------------------------------------------------------------------
// Errors and options

/// The error kind (the `code` without `GUARDS_`) of a region failure.
fn kind_of(code: GuardsResult) -> &'static str {
    match code {
        GuardsResult::RegionIo => "REGION_IO",
        GuardsResult::RegionInvalid => "REGION_INVALID",
        GuardsResult::RegionIncompatible => "REGION_INCOMPATIBLE",
        GuardsResult::RegionFull => "REGION_FULL",
        GuardsResult::RegionTimeout => "REGION_TIMEOUT",
        GuardsResult::GuardMismatch => "GUARD_MISMATCH",
        GuardsResult::GuardNotFound => "GUARD_NOT_FOUND",
        GuardsResult::PermitSlotsExhausted => "PERMIT_SLOTS_EXHAUSTED",
        _ => "INTERNAL",
    }
}

/// Throw failure `f` of `what` (a class or method name): a bad config or argument as a
/// `TypeError` / `RangeError` naming it, anything else as a `RegionError` with its code.
fn failure(env: &Env, what: &str, f: &Failure) -> Error {
    match f.detail {
        Detail::Config(_) | Detail::UnknownField { .. } => config_failure(env, what, "", f),
        Detail::Argument { name, expected } => {
            let option = camel(name);
            let msg = format!("{what}: `{option}` must be {expected}");
            if f.code == GuardsResult::ConfigWrongType {
                type_error(env, &option, &msg)
            } else {
                range_error(env, &option, &msg)
            }
        }
        Detail::GuardMismatch {
            field,
            existing,
            requested,
        } => errors::throw(
            env,
            kind_of(f.code),
            &format!("{what}: {f}"),
            Details {
                strings: vec![("field", field)],
                numbers: vec![("existing", num(existing)), ("requested", num(requested))],
                ..Details::default()
            },
        ),
        Detail::Region { errno, .. } => errors::throw(
            env,
            kind_of(f.code),
            &format!("{what}: {f}"),
            Details {
                numbers: vec![("errno", f64::from(errno))],
                ..Details::default()
            },
        ),
        _ => errors::throw(
            env,
            kind_of(f.code),
            &format!("{what}: {f}"),
            Details::default(),
        ),
    }
}

/// A guard of kind `existing` found where one of kind `requested` was asked for.
fn kind_mismatch(
    env: &Env,
    what: &str,
    existing: gs::GuardKind,
    requested: gs::GuardKind,
) -> Error {
    failure(
        env,
        what,
        &Failure {
            code: GuardsResult::GuardMismatch,
            detail: Detail::GuardMismatch {
                field: "kind",
                existing: existing as u64,
                requested: requested as u64,
            },
        },
    )
}

// ---------------------------------------------------------------------------------------
// Which options differ, for a config mismatch

/// An option whose value differs between the region's guard and the one asked for: its
/// name as written in the options, and the two values as JSON text.
struct Difference {
    option: String,
    existing: String,
    requested: String,
}

/// A config whose options can be compared one by one.
trait Differ {
    /// The options in which `existing` and `requested` differ.
    fn differences(existing: &Self, requested: &Self) -> Vec<Difference>;
}

/// A value of `unit` as JSON text, as the options spell it (durations in ms, names).
fn json_value(unit: Unit, v: Value) -> String {
    let number = |x: f64| {
        if x.is_finite() {
            format!("{x}")
        } else {
            "null".to_owned()
        }
    };
    match (unit, v) {
        (Unit::Duration, Value::Uint(n)) => number(ms(Nanos(n))),
        (Unit::Enum(names), Value::Uint(i)) => {
            errors::quote(names.get(i as usize).copied().unwrap_or(""))
        }
        (Unit::Flags(names), Value::Uint(bits)) => {
            let set: Vec<String> = names
                .iter()
                .enumerate()
                .filter(|(i, _)| *i < 64 && bits & (1 << i) != 0)
                .map(|(_, n)| errors::quote(n))
                .collect();
            format!("[{}]", set.join(","))
        }
        (_, Value::Uint(n)) => number(num(n)),
        (_, Value::Float(x)) => number(x),
        (_, Value::Bool(b)) => b.to_string(),
    }
}

/// The fields of schema `s` in which `a` and `b` differ.
fn by_schema<C: Copy>(s: &Schema<C>, a: &C, b: &C, out: &mut Vec<Difference>) {
    for f in s.fields {
        let (x, y) = (f.get(a), f.get(b));
        if x != y {
            out.push(Difference {
                option: camel(f.name),
                existing: json_value(f.unit, x),
                requested: json_value(f.unit, y),
            });
        }
    }
}

/// `Differ` by a config's schema; `with limit` also compares its `limit` (an object of its
/// own, which the schema leaves out).
macro_rules! differ_by_schema {
    ($($cfg:ty => $schema:expr $(, with $limit:ident)?);* $(;)?) => {$(
        impl Differ for $cfg {
            fn differences(a: &Self, b: &Self) -> Vec<Difference> {
                let mut out = Vec::new();
                by_schema(&$schema, a, b, &mut out);
                $(limit_difference(&a.$limit, &b.$limit, &mut out);)?
                out
            }
        }
    )*};
}

differ_by_schema!(
    CircuitBreakerConfig => schema::CIRCUIT_BREAKER;
    BulkheadConfig => schema::BULKHEAD;
    HedgingConfig => schema::HEDGING;
    LatencyTrackerConfig => schema::LATENCY_TRACKER;
    AdaptiveThrottleConfig => schema::ADAPTIVE_THROTTLE;
    BrownoutConfig => schema::BROWNOUT;
    LimiterConfig => schema::LIMITER, with limit;
    AdmissionConfig => schema::ADMISSION, with limit;
);

/// How the limits (`limit`: a number, or an object of its own) differ: `limit` for two
/// fixed limits, `limit.algorithm` for two algorithms, `limit.<option>` for the options of
/// one algorithm.
fn limit_difference(a: &LimitConfig, b: &LimitConfig, out: &mut Vec<Difference>) {
    let start = out.len();
    match (a, b) {
        (LimitConfig::Fixed(x), LimitConfig::Fixed(y)) => {
            if x != y {
                out.push(Difference {
                    option: "limit".to_owned(),
                    existing: json_value(Unit::Count, Value::Uint(*x)),
                    requested: json_value(Unit::Count, Value::Uint(*y)),
                });
            }
            return;
        }
        (LimitConfig::Aimd(x), LimitConfig::Aimd(y)) => by_schema(&schema::AIMD, x, y, out),
        (LimitConfig::Vegas(x), LimitConfig::Vegas(y)) => by_schema(&schema::VEGAS, x, y, out),
        (LimitConfig::Gradient(x), LimitConfig::Gradient(y)) => {
            by_schema(&schema::GRADIENT, x, y, out)
        }
        _ => out.push(Difference {
            option: "algorithm".to_owned(),
            existing: errors::quote(a.algorithm().name()),
            requested: errors::quote(b.algorithm().name()),
        }),
    }
    for d in out.iter_mut().skip(start) {
        d.option = format!("limit.{}", d.option);
    }
}

impl Differ for RetryBudgetConfig {
    fn differences(a: &Self, b: &Self) -> Vec<Difference> {
        let mut out = Vec::new();
        match (a, b) {
            (RetryBudgetConfig::TokenBucket(x), RetryBudgetConfig::TokenBucket(y)) => {
                by_schema(&schema::TOKEN_BUDGET, x, y, &mut out)
            }
            (RetryBudgetConfig::Grpc(x), RetryBudgetConfig::Grpc(y)) => {
                by_schema(&schema::GRPC_THROTTLE, x, y, &mut out)
            }
            (RetryBudgetConfig::Aws(x), RetryBudgetConfig::Aws(y)) => {
                by_schema(&schema::AWS_RETRY_QUOTA, x, y, &mut out)
            }
            (RetryBudgetConfig::Windowed(x), RetryBudgetConfig::Windowed(y)) => {
                by_schema(&schema::WINDOWED_BUDGET, x, y, &mut out)
            }
            _ => out.push(Difference {
                option: "mode".to_owned(),
                existing: errors::quote(a.mode().name()),
                requested: errors::quote(b.mode().name()),
            }),
        }
        out
    }
}

/// The config of the breaker or keyed breaker set named `name`, if there is one.
fn breaker_config(region: &gs::Region, name: &str) -> Option<CircuitBreakerConfig> {
    Some(match AnyShared::attach(region, name).ok()? {
        AnyShared::Breaker128(g) => g.config_of(),
        AnyShared::Breaker1024(g) => g.config_of(),
        AnyShared::Breaker8192(g) => g.config_of(),
        AnyShared::Breaker65536(g) => g.config_of(),
        AnyShared::Keyed4(g) => g.config_of(),
        AnyShared::Keyed16(g) => g.config_of(),
        AnyShared::Keyed64(g) => g.config_of(),
        AnyShared::Keyed256(g) => g.config_of(),
        _ => return None,
    })
}

/// Failure `f` of `what` for the guard `name`: a config mismatch names the options that
/// differ (`differences: { option: { existing, requested } }`, and the message), when the
/// existing guard's config `existing` can be read; anything else as `failure` throws it.
fn mismatch<C: Differ>(
    env: &Env,
    what: &str,
    name: &str,
    f: &Failure,
    existing: Option<C>,
    requested: &C,
) -> Error {
    let Detail::GuardMismatch {
        field: "config",
        existing: old_hash,
        requested: new_hash,
    } = f.detail
    else {
        return failure(env, what, f);
    };
    let Some(existing) = existing else {
        return failure(env, what, f);
    };
    let diffs = C::differences(&existing, requested);
    if diffs.is_empty() {
        return failure(env, what, f);
    }
    let words: Vec<String> = diffs
        .iter()
        .map(|d| {
            format!(
                "`{}` is {} there, {} here",
                d.option, d.existing, d.requested
            )
        })
        .collect();
    let json: Vec<String> = diffs
        .iter()
        .map(|d| {
            format!(
                "{}:{{\"existing\":{},\"requested\":{}}}",
                errors::quote(&d.option),
                d.existing,
                d.requested
            )
        })
        .collect();
    errors::throw(
        env,
        kind_of(f.code),
        &format!(
            "{what}: the guard {name:?} exists with other options ({}): give the same options in every process, or another name",
            words.join("; ")
        ),
        Details {
            strings: vec![("field", "config")],
            numbers: vec![("existing", num(old_hash)), ("requested", num(new_hash))],
            json: vec![("differences", format!("{{{}}}", json.join(",")))],
            ..Details::default()
        },
    )
}

const REGION: &str = "Region";
const REGION_OPTIONS: &str =
    "maxGuards, permitSlots, dataBytes, waitTimeout, reclaimInterval, mode, create";

/// A duration option: milliseconds as a number, or exact nanoseconds as a bigint.
fn duration(env: &Env, name: &str, v: &Val) -> Result<Nanos> {
    match v {
        Val::Num(x) => args::duration_ms(env, name, *x),
        Val::Big { .. } => Ok(Nanos(whole(env, REGION, name, v, u64::MAX)?)),
        _ => Err(type_error(
            env,
            name,
            &format!(
                "{REGION}: `{name}` must be a number of milliseconds or a bigint of nanoseconds"
            ),
        )),
    }
}

fn read_region_options(env: &Env, options: Option<Unknown<'_>>) -> Result<RegionOptions> {
    let mut o = Options::read(env, REGION, options)?;
    let mut r = RegionOptions::default();
    r.max_guards = o.count(env, "max_guards", r.max_guards, u64::MAX)?;
    r.permit_slots = o.count(env, "permit_slots", r.permit_slots, u64::MAX)?;
    r.data_bytes = o.count(env, "data_bytes", r.data_bytes, u64::MAX)?;
    r.mode = u32::try_from(o.count(env, "mode", u64::from(r.mode), 0o777)?).unwrap_or(0o600);
    if let Some((name, v)) = o.take("wait_timeout") {
        r.wait_timeout = duration(env, &name, &v)?;
    }
    if let Some((name, v)) = o.take("reclaim_interval") {
        r.reclaim_interval = duration(env, &name, &v)?;
    }
    match o.take("create") {
        None => {}
        Some((_, Val::Bool(b))) => r.create = b,
        Some((name, _)) => {
            return Err(type_error(
                env,
                &name,
                &format!("{REGION}: `{name}` must be a boolean"),
            ))
        }
    }
    if let Some((_, name, _)) = o.leaves.first() {
        return Err(type_error(
            env,
            name,
            &format!("{REGION}: unknown option `{name}` (valid options: {REGION_OPTIONS})"),
        ));
    }
    r.validate().map_err(|f| failure(env, REGION, &f))?;
    Ok(r)
}

/// A guard's name argument: a string (1 to 64 bytes, checked by the region).
fn name_arg(env: &Env, class: &str, v: &Unknown<'_>) -> Result<String> {
    if v.get_type()? != napi::ValueType::String {
        return Err(type_error(
            env,
            "name",
            &format!("{class}: `name` must be a string, not {}", args::what(v)),
        ));
    }
    args::string(env, "name", v)
}

/// The region argument of a guard's constructor.
fn region_arg<'a>(env: &Env, v: &Unknown<'a>) -> Result<&'a Region> {
    args::instance::<Region>(env, "region", "Region", v)
}

/// The `attach` argument of a guard's constructor: `true` takes the existing guard
/// whatever its config, and then there must be no options.
fn attach_arg(
    env: &Env,
    class: &str,
    options: &Option<Unknown<'_>>,
    attach: Option<Unknown<'_>>,
) -> Result<bool> {
    let attach = args::opt_boolean(env, "attach", attach)?.unwrap_or(false);
    if attach && !args::absent(options) {
        return Err(type_error(
            env,
            "options",
            &format!("{class}: attaching takes the existing guard's config: give no options"),
        ));
    }
    Ok(attach)
}

/// The guard of type `K` named `name` in `region`: created from the options `read` reads
/// if there is none (an existing one must match), or with `attach` the existing one
/// whatever its config.
fn guard_in<K: gs::SharedGuard>(
    env: &Env,
    class: &str,
    region: Unknown<'_>,
    name: Unknown<'_>,
    options: Option<Unknown<'_>>,
    attach: Option<Unknown<'_>>,
    read: impl FnOnce(&Env, Option<Unknown<'_>>) -> Result<K::Config>,
) -> Result<Shared<K>>
where
    K::Config: Differ,
{
    region_arg(env, &region)?.guard_of(env, class, name, options, attach, read)
}

// ---------------------------------------------------------------------------------------
// Guards without permits, as the package's own classes

/// A guard of a region handed to the JavaScript layer (an external value, from
/// `Region._retryBudget`, `_hedging`, ...), for the package's own class to be built over:
/// `new RetryBudget(undefined, it)` is a `RetryBudget` whose state is the region's. These
/// kinds hand out no permits, so there is nothing to record or reclaim; the object keeps
/// the mapping alive.
pub struct InRegion(AnyShared);

/// A core guard type a region can hand to a package class, and the guard that class holds.
pub(crate) trait Pick: gs::SharedGuard {
    /// The package class's guard: built in place, of one size, with the same config.
    type Placed: Placeable<Config = Self::Config>;
    /// Its guard, if `a` is of this kind.
    fn pick(a: &AnyShared) -> Option<&Shared<Self>>;
}

macro_rules! pick {
    ($($variant:ident => $ty:ty, $placed:ty),* $(,)?) => {$(
        impl Pick for $ty {
            type Placed = $placed;
            fn pick(a: &AnyShared) -> Option<&Shared<Self>> {
                match a {
                    AnyShared::$variant(s) => Some(s),
                    _ => None,
                }
            }
        }
    )*};
}

pick!(
    RetryBudget => CoreBudget, InPlace<CoreBudget>,
    Hedging => CoreHedging, AnyHedging,
    LatencyTracker => CoreTracker, AnyLatencyTracker,
    AdaptiveThrottle => CoreThrottle, AnyAdaptiveThrottle,
    // `BrownoutState` is a `repr(C)` wrapper of exactly `CoreBrownout`.
    Brownout => CoreBrownout, InPlace<crate::brownout::BrownoutState>,
);

/// The guard a package class (`RetryBudget`, `Hedging`, ...) holds, from its constructor's
/// `options` and `shared`, with what keeps its memory alive: the region's guard of kind `K`
/// when `shared` is one the JavaScript layer passed (then there must be no options: the
/// region's guard has its config); otherwise built in its own memory or in a
/// `SharedArrayBuffer`, or attached to one (`shared::place`), its config read by `config`.
pub(crate) fn place_or_attach<K: Pick>(
    env: &Env,
    class: &str,
    options: Option<Unknown<'_>>,
    shared: Option<Unknown<'_>>,
    config: impl FnOnce(Option<Unknown<'_>>) -> Result<(K::Config, u64)>,
) -> Result<(K::Placed, Keep)> {
    if let Some(attached) = in_region::<K>(env, class, &options, &shared)? {
        return Ok(attached);
    }
    let mem = crate::convert::shared_arg(env, shared)?;
    let given = !args::absent(&options);
    let Placed { g, mem } =
        crate::shared::place::<K::Placed>(env, class, mem, given, || config(options))?;
    Ok((g, Keep::buffer(mem)))
}

/// The region guard of type `K` the JavaScript layer passed as a package class's `shared`
/// argument, if it passed one, as that class's guard, with what keeps its mapping alive.
/// `None` when `shared` is anything else (the class then reads it as a buffer).
fn in_region<K: Pick>(
    env: &Env,
    class: &str,
    options: &Option<Unknown<'_>>,
    shared: &Option<Unknown<'_>>,
) -> Result<Option<(K::Placed, Keep)>> {
    let Some(v) = shared.as_ref() else {
        return Ok(None);
    };
    if v.get_type()? != napi::ValueType::External {
        return Ok(None);
    }
    // SAFETY: `v` is a live external value of this env; `from_napi_ref` checks that it
    // wraps an `InRegion` (its type id) before giving a reference, used only in this call.
    let r = unsafe { <External<InRegion> as FromNapiRef>::from_napi_ref(env.raw(), v.raw()) }
        .map_err(|_| {
            type_error(
                env,
                "shared",
                &format!("{class}: `shared` must be a Uint8Array over a SharedArrayBuffer"),
            )
        })?;
    if !args::absent(options) {
        return Err(type_error(
            env,
            "options",
            &format!("{class}: a region's guard has its config: give no options"),
        ));
    }
    let s = K::pick(&r.0).ok_or_else(|| {
        type_error(
            env,
            "shared",
            &format!("{class}: the region's guard is of another kind"),
        )
    })?;
    let region = s
        .region()
        .cloned()
        .ok_or_else(|| errors::internal(env, "a region guard without its region"))?;
    let cap = K::Placed::capacity(&s.config_of(), 0).map_err(|f| failure(env, class, &f))?;
    // SAFETY: `s` is the region's built guard of kind `K`, whose mapping the returned `Keep`
    // holds for as long as the view lives (the class keeps both); it is only reached
    // through `&`.
    let g = unsafe { K::Placed::attach(cap, NonNull::from(&**s).cast()) }
        .ok_or_else(|| errors::internal(env, "capacity"))?;
    Ok(Some((g, Keep::region(region))))
}

// ---------------------------------------------------------------------------------------
// Region

/// A region file of named guards, mapped by every process that opens it (a bare name
/// means `/dev/shm/<name>`; a path with a `/` is used as it is).
#[napi]
pub struct Region {
    r: gs::Region,
}

#[napi]
impl Region {
    /// Open the region at `path`, creating it (with `options`' capacities) if there is
    /// none: `maxGuards` (default 64), `permitSlots` (4096), `dataBytes` (16 MiB),
    /// `waitTimeout` (ms, 5000), `reclaimInterval` (ms, 10), `mode` (0o600), `create`
    /// (true). Opening gives dead processes' permits back to their guards.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "path: string, options?: RegionOptions"
    )]
    pub fn new(env: Env, path: Unknown<'_>, options: Option<Unknown<'_>>) -> Result<Self> {
        let path = args::string(&env, "path", &path)?;
        let options = read_region_options(&env, options)?;
        let r = gs::Region::open(&path, &options).map_err(|f| failure(&env, REGION, &f))?;
        Ok(Region { r })
    }

    /// Remove the region file at `path`: processes that have it open keep using it; the
    /// next open creates a new one. Throws `GUARDS_GUARD_NOT_FOUND` when there is none.
    #[napi(catch_unwind, ts_args_type = "path: string")]
    pub fn remove(env: Env, path: Unknown<'_>) -> Result<()> {
        let path = args::string(&env, "path", &path)?;
        gs::Region::remove(&path).map_err(|f| failure(&env, "Region.remove", &f))
    }

    /// The file's path.
    #[napi(getter, catch_unwind)]
    pub fn path(&self) -> String {
        self.r.path().to_string_lossy().into_owned()
    }

    /// Give every permit of a dead process back to its guard, reported `cancelled` at
    /// `now`: `{ permits, claims }` (claims: records of processes that died while asking).
    #[napi(
        catch_unwind,
        ts_args_type = "now?: bigint",
        ts_return_type = "ReclaimCounts"
    )]
    pub fn reclaim<'e>(&self, env: &'e Env, now: Option<Unknown<'_>>) -> Result<Object<'e>> {
        let now = args::now(env, now)?;
        let r = self.r.reclaim(now);
        numbers(
            env,
            &[("permits", num(r.permits)), ("claims", num(r.claims))],
        )
    }

    /// Sizes and counters of the region (all processes).
    #[napi(catch_unwind, ts_return_type = "RegionStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.r.stats();
        numbers(
            env,
            &[
                ("guards", num(s.guards)),
                ("maxGuards", num(s.max_guards)),
                ("dataUsed", num(s.data_used)),
                ("dataBytes", num(s.data_bytes)),
                ("permitSlots", num(s.permit_slots)),
                ("permitsHeld", num(s.permits_held)),
                ("reclaimedPermits", num(s.reclaimed_permits)),
                ("reclaimedClaims", num(s.reclaimed_claims)),
                ("scans", num(s.scans)),
                ("takeovers", num(s.takeovers)),
            ],
        )
    }

    /// The kind (`'circuit_breaker'`, `'bulkhead'`, ...) and capacity of the guard named
    /// `name`; throws `GUARDS_GUARD_NOT_FOUND` when there is none.
    #[napi(
        catch_unwind,
        ts_args_type = "name: string",
        ts_return_type = "RegionGuardKind"
    )]
    pub fn lookup<'e>(&self, env: &'e Env, name: Unknown<'_>) -> Result<Object<'e>> {
        let name = name_arg(env, "Region.lookup", &name)?;
        let (kind, capacity) = self
            .r
            .lookup(&name)
            .map_err(|f| failure(env, "Region.lookup", &f))?;
        let mut o = Object::new(env)?;
        o.set("kind", kind.name())?;
        o.set("capacity", num(capacity))?;
        Ok(o)
    }

    /// The guards created so far: `[{ name, kind, capacity, size }]`.
    #[napi(catch_unwind, ts_return_type = "Array<RegionGuardInfo>")]
    pub fn guards<'e>(&self, env: &'e Env) -> Result<Array<'e>> {
        let list = self.r.guards();
        let mut a = env.create_array(u32::try_from(list.len()).unwrap_or(u32::MAX))?;
        for (i, g) in list.iter().enumerate() {
            let mut o = Object::new(env)?;
            o.set("name", g.name.as_str())?;
            o.set("kind", g.kind.name())?;
            o.set("capacity", num(g.capacity))?;
            o.set("size", num(g.size))?;
            a.set(u32::try_from(i).unwrap_or(u32::MAX), o)?;
        }
        Ok(a)
    }
}

impl Region {
    /// The guard of type `K` named `name` here (see `guard_in`).
    fn guard_of<K: gs::SharedGuard>(
        &self,
        env: &Env,
        class: &str,
        name: Unknown<'_>,
        options: Option<Unknown<'_>>,
        attach: Option<Unknown<'_>>,
        read: impl FnOnce(&Env, Option<Unknown<'_>>) -> Result<K::Config>,
    ) -> Result<Shared<K>>
    where
        K::Config: Differ,
    {
        let name = name_arg(env, class, &name)?;
        let attached = attach_arg(env, class, &options, attach)?;
        if attached {
            return self
                .r
                .attach::<K>(&name)
                .map_err(|f| failure(env, class, &f));
        }
        let config = read(env, options)?;
        self.r.get_or_create::<K>(&name, config).map_err(|f| {
            let existing = self.r.attach::<K>(&name).ok().map(|g| g.config_of());
            mismatch(env, class, &name, &f, existing, &config)
        })
    }
}

/// `Region._retryBudget` and its siblings: the guard named `name` of a kind without
/// permits, created from `options` (read by the package class's own reader) if there is
/// none, as an external value for the class's constructor (`InRegion`).
macro_rules! plain_kind {
    ($(#[$meta:meta])* $fn:ident, $js:literal, $class:literal, $args:literal, $core:ty, $variant:ident, $read:path) => {
        #[napi]
        impl Region {
            $(#[$meta])*
            #[napi(
                js_name = $js,
                catch_unwind,
                ts_args_type = $args,
                ts_return_type = "unknown"
            )]
            pub fn $fn(
                &self,
                env: Env,
                name: Unknown<'_>,
                options: Option<Unknown<'_>>,
                attach: Option<Unknown<'_>>,
            ) -> Result<External<InRegion>> {
                let g = self.guard_of::<$core>(&env, $class, name, options, attach, |e, o| {
                    $read(e, o).map(|(c, _)| c)
                })?;
                Ok(External::new(InRegion(AnyShared::$variant(g))))
            }
        }
    };
}

plain_kind!(
    /// The retry budget named `name` (for `RetryBudget`'s constructor).
    retry_budget_in, "_retryBudget", "RetryBudget", "name: string, options?: RetryBudgetOptions, attach?: boolean", CoreBudget, RetryBudget,
    crate::retry_budget::read_config
);
plain_kind!(
    /// The hedging policy named `name` (for `Hedging`'s constructor).
    hedging_in, "_hedging", "Hedging", "name: string, options?: HedgingOptions, attach?: boolean", CoreHedging, Hedging,
    crate::hedging::read_config
);
plain_kind!(
    /// The latency tracker named `name` (for `LatencyTracker`'s constructor).
    latency_tracker_in, "_latencyTracker", "LatencyTracker", "name: string, options?: LatencyTrackerOptions, attach?: boolean", CoreTracker,
    LatencyTracker, crate::latency_tracker::read_config
);
plain_kind!(
    /// The adaptive throttle named `name` (for `AdaptiveThrottle`'s constructor).
    adaptive_throttle_in, "_adaptiveThrottle", "AdaptiveThrottle", "name: string, options?: AdaptiveThrottleOptions, attach?: boolean",
    CoreThrottle, AdaptiveThrottle, crate::adaptive_throttle::read_config
);
plain_kind!(
    /// The brownout (one operation) named `name` (for `Brownout`'s constructor).
    brownout_in, "_brownout", "Brownout", "name: string, options?: BrownoutOptions, attach?: boolean", CoreBrownout, Brownout,
    crate::brownout::read_config
);

// ---------------------------------------------------------------------------------------
// Permits handed out as objects (`tryAcquire`)

/// A region guard a permit object goes back to.
trait Reporter {
    /// Report `token` with `outcome`: the verdict's name, or the table's refusal.
    fn report_token(
        &self,
        token: PermitToken,
        outcome: Outcome,
        now: Nanos,
    ) -> std::result::Result<&'static str, GuardsResult>;
}

/// A permit of a region guard, from `tryAcquire`: `report` (or, for a bulkhead,
/// `release`) it exactly once; a second report throws `GUARDS_PERMIT_ALREADY_REPORTED`, as
/// does one for a permit given back by `reclaim` after its process was thought dead. A
/// permit garbage-collected unreported is handed back without a verdict (`ignored`).
#[napi]
pub struct RegionPermit {
    owner: Rc<dyn Reporter>,
    token: Cell<Option<PermitToken>>,
    acquired_at: Nanos,
    probe_timeout: Option<Nanos>,
}

impl Drop for RegionPermit {
    fn drop(&mut self) {
        if let Some(t) = self.token.take() {
            let _ = self
                .owner
                .report_token(t, Outcome::Ignored, guards::clock::now());
        }
    }
}

impl RegionPermit {
    fn new(owner: Rc<dyn Reporter>, token: PermitToken, view: gs::PermitView) -> Self {
        RegionPermit {
            owner,
            token: Cell::new(Some(token)),
            acquired_at: view.acquired_at,
            probe_timeout: view.probe_timeout,
        }
    }
}

#[napi]
impl RegionPermit {
    /// Report how the call ended (`'success'`, `'timeout'`, ... see `Outcome`) at `now`;
    /// returns the guard's verdict (a breaker's effect, `'release'`, a limiter's verdict).
    #[napi(catch_unwind, ts_args_type = "outcome: Outcome, now?: bigint")]
    pub fn report(
        &self,
        env: Env,
        outcome: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<&'static str> {
        let outcome = args::outcome(&env, "outcome", &outcome)?;
        let now = args::now(&env, now)?;
        let t = self
            .token
            .take()
            .ok_or_else(|| errors::permit(&env, GuardsResult::PermitAlreadyReported))?;
        self.owner
            .report_token(t, outcome, now)
            .map_err(|code| errors::permit(&env, code))
    }

    /// Report a success: for a bulkhead slot, give it back. `false` if it was reported
    /// before (or reclaimed).
    #[napi(catch_unwind)]
    pub fn release(&self) -> bool {
        match self.token.take() {
            Some(t) => self
                .owner
                .report_token(t, Outcome::Success, guards::clock::now())
                .is_ok(),
            None => false,
        }
    }

    /// Whether it has been reported.
    #[napi(getter, catch_unwind)]
    pub fn done(&self) -> bool {
        let t = self.token.get();
        t.is_none()
    }

    /// When it was granted (0n for a bulkhead slot).
    #[napi(getter, catch_unwind)]
    pub fn acquired_at(&self) -> BigInt {
        big(self.acquired_at)
    }

    /// Whether it is a half-open breaker's probe.
    #[napi(getter, catch_unwind)]
    pub fn is_probe(&self) -> bool {
        self.probe_timeout.is_some()
    }

    /// A probe's timeout in ms, `null` otherwise.
    #[napi(getter, catch_unwind)]
    pub fn probe_timeout_ms(&self) -> Option<f64> {
        self.probe_timeout.map(ms)
    }
}

/// The fast path's answer for a failed permit claim.
const NO_SLOT: f64 = -3.0;

// ---------------------------------------------------------------------------------------
// Circuit breaker

/// A shared breaker of one of the supported window capacities.
enum Breaker {
    C128(Shared<CoreBreaker<128>>),
    C1024(Shared<CoreBreaker<1024>>),
    C8192(Shared<CoreBreaker<8192>>),
    C65536(Shared<CoreBreaker<65536>>),
}

macro_rules! with_b {
    ($b:expr, $g:ident => $e:expr) => {
        match $b {
            Breaker::C128($g) => $e,
            Breaker::C1024($g) => $e,
            Breaker::C8192($g) => $e,
            Breaker::C65536($g) => $e,
        }
    };
}

impl Breaker {
    /// Window cells.
    fn capacity(&self) -> u64 {
        match self {
            Breaker::C128(_) => 128,
            Breaker::C1024(_) => 1024,
            Breaker::C8192(_) => 8192,
            Breaker::C65536(_) => 65536,
        }
    }
    fn status(&self) -> BreakerStatus {
        with_b!(self, g => g.status())
    }
    fn try_acquire(
        &self,
        now: Nanos,
    ) -> std::result::Result<(PermitToken, gs::PermitView), Refusal<CircuitBreakerRejected>> {
        with_b!(self, g => g.try_acquire((), now))
    }
    fn report(
        &self,
        t: PermitToken,
        outcome: Outcome,
        now: Nanos,
    ) -> std::result::Result<&'static str, GuardsResult> {
        with_b!(self, g => g.report(t, outcome, now).map(|e| e.name()))
    }
}

struct BreakerLocal {
    g: Breaker,
    tokens: Tokens<PermitToken>,
    seen: Cell<u8>,
    last: Cell<Option<Refusal<CircuitBreakerRejected>>>,
}

impl BreakerLocal {
    #[inline]
    fn observe(&self) -> (u8, bool) {
        let s = self.g.status().state as u8;
        let changed = s != self.seen.get();
        if changed {
            self.seen.set(s);
        }
        (s, changed)
    }
}

impl Reporter for BreakerLocal {
    fn report_token(
        &self,
        t: PermitToken,
        outcome: Outcome,
        now: Nanos,
    ) -> std::result::Result<&'static str, GuardsResult> {
        self.g.report(t, outcome, now)
    }
}

impl Drop for BreakerLocal {
    /// Permits still parked (calls that never ended) go back without a verdict.
    fn drop(&mut self) {
        let now = guards::clock::now();
        for t in self.tokens.drain() {
            let _ = self.g.report(t, Outcome::Ignored, now);
        }
    }
}

const BREAKER: &str = "RegionCircuitBreaker";

fn breaker_refusal(env: &Env, r: &Refusal<CircuitBreakerRejected>) -> Error {
    match r {
        Refusal::Rejected(r) => {
            crate::circuit_breaker::rejection_error(env, r, guards::clock::now())
        }
        Refusal::Failed(f) => failure(env, BREAKER, f),
    }
}

// `acquire()`: a token (plus 2^30 if this object saw the state change), or -1 (open), -2
// (half-open, probes out), -3 (no permit record; `_lastRejection()` throws why).
// `report(token, outcome)`: the stored state (closed 0, open 1, half-open 2) plus 2^30
// if it changed; -1 for a token reported before or never issued.
fast_fn!(
    breaker_acquire,
    BreakerLocal,
    0,
    "RegionCircuitBreaker acquire",
    |_env, l, _a| {
        let now = guards::clock::now();
        Ok(match l.g.try_acquire(now) {
            Ok((t, _)) => match l.tokens.insert(t) {
                Ok(x) => {
                    let (_, changed) = l.observe();
                    x + if changed { CHANGED } else { 0.0 }
                }
                Err(t) => {
                    let _ = l.g.report(t, Outcome::Ignored, now);
                    NO_SLOT
                }
            },
            Err(r) => {
                l.last.set(Some(r));
                match r {
                    Refusal::Rejected(r) if r.reason.name() == "open" => -1.0,
                    Refusal::Rejected(_) => -2.0,
                    Refusal::Failed(_) => NO_SLOT,
                }
            }
        })
    }
);

fast_fn!(
    breaker_report,
    BreakerLocal,
    2,
    "RegionCircuitBreaker report",
    |env, l, a| {
        let token = a.f64(env, 0, "token")?;
        let outcome = outcome::of_number(env, a.whole(env, 1, "outcome", 255)?)?;
        let Some(t) = l.tokens.take(token) else {
            return Ok(-1.0);
        };
        // A permit reclaimed meanwhile (its process thought dead) counts nothing.
        let _ = l.g.report(t, outcome, guards::clock::now());
        let (s, changed) = l.observe();
        Ok(f64::from(s) + if changed { CHANGED } else { 0.0 })
    }
);

/// A circuit breaker in a region: one breaker for every process that opens the region
/// and asks for this name, so one process's failures open it for all. Same options,
/// refusals and methods as `CircuitBreaker`.
#[napi]
pub struct RegionCircuitBreaker {
    l: Rc<BreakerLocal>,
}

#[napi]
impl RegionCircuitBreaker {
    /// The breaker named `name` in `region`, created with `options` (as `CircuitBreaker`'s)
    /// if there is none; an existing one must have been created with the same options
    /// (else `GUARDS_GUARD_MISMATCH`). Use the layer's `region.circuitBreaker(name, options)`.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "region: Region, name: string, options?: CircuitBreakerOptions, attach?: boolean"
    )]
    pub fn new(
        env: Env,
        region: Unknown<'_>,
        name: Unknown<'_>,
        options: Option<Unknown<'_>>,
        attach: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let region = region_arg(&env, &region)?;
        let name = name_arg(&env, BREAKER, &name)?;
        let made = if attach_arg(&env, BREAKER, &options, attach)? {
            AnyShared::attach(&region.r, &name).map_err(|f| failure(&env, BREAKER, &f))
        } else {
            let (config, capacity) = crate::circuit_breaker::read_config(&env, options)?;
            AnyShared::breaker(&region.r, &name, config, capacity).map_err(|f| {
                mismatch(
                    &env,
                    BREAKER,
                    &name,
                    &f,
                    breaker_config(&region.r, &name),
                    &config,
                )
            })
        };
        let g = match made? {
            AnyShared::Breaker128(g) => Breaker::C128(g),
            AnyShared::Breaker1024(g) => Breaker::C1024(g),
            AnyShared::Breaker8192(g) => Breaker::C8192(g),
            AnyShared::Breaker65536(g) => Breaker::C65536(g),
            other => {
                return Err(kind_mismatch(
                    &env,
                    BREAKER,
                    other.kind(),
                    gs::GuardKind::CircuitBreaker,
                ))
            }
        };
        let s = g.status().state as u8;
        Ok(RegionCircuitBreaker {
            l: Rc::new(BreakerLocal {
                g,
                tokens: Tokens::new(),
                seen: Cell::new(s),
                last: Cell::new(None),
            }),
        })
    }

    /// The fast path's functions (`{ acquire, report }`): for the JavaScript layer.
    #[napi(js_name = "_fast", catch_unwind, ts_return_type = "unknown")]
    pub fn fast<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        fast::functions(
            env,
            &self.l,
            &[("acquire", breaker_acquire), ("report", breaker_report)],
        )
    }

    /// The stored state's number plus 2^30 if it differs from what this object saw last.
    #[napi(js_name = "_sync", catch_unwind)]
    pub fn sync(&self) -> f64 {
        let (s, changed) = self.l.observe();
        f64::from(s) + if changed { CHANGED } else { 0.0 }
    }

    /// The last refusal of this object's fast path, thrown as its error.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env) -> Result<()> {
        match self.l.last.get() {
            Some(r) => Err(breaker_refusal(&env, &r)),
            None => Ok(()),
        }
    }

    /// Ask to make a call at `now`: a permit (recorded with this process as its owner)
    /// to report exactly once, or a thrown `BreakerOpenError`.
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn try_acquire(&self, env: Env, now: Option<Unknown<'_>>) -> Result<RegionPermit> {
        let now = args::now(&env, now)?;
        match self.l.g.try_acquire(now) {
            Ok((t, view)) => {
                self.l.observe();
                Ok(RegionPermit::new(
                    Rc::clone(&self.l) as Rc<dyn Reporter>,
                    t,
                    view,
                ))
            }
            Err(r) => Err(breaker_refusal(&env, &r)),
        }
    }

    /// The state at `now` (`'closed'`, `'open'`, `'half_open'`), as every process sees it.
    #[napi(
        catch_unwind,
        ts_args_type = "now?: bigint",
        ts_return_type = "'closed' | 'open' | 'half_open'"
    )]
    pub fn state(&self, env: Env, now: Option<Unknown<'_>>) -> Result<&'static str> {
        let now = args::now(&env, now)?;
        let s: BreakerState = with_b!(&self.l.g, g => g.state(now));
        Ok(s.name())
    }

    /// The state word (see `CircuitBreaker.status`).
    #[napi(catch_unwind, ts_return_type = "BreakerStatus")]
    pub fn status<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        crate::circuit_breaker::status_object(env, &self.l.g.status())
    }

    /// What the window holds at `now`: `{ calls, failures, slow }`.
    #[napi(
        catch_unwind,
        ts_args_type = "now?: bigint",
        ts_return_type = "WindowCounts"
    )]
    pub fn window_counts<'e>(&self, env: &'e Env, now: Option<Unknown<'_>>) -> Result<Object<'e>> {
        let now = args::now(env, now)?;
        let w = with_b!(&self.l.g, g => g.window_counts(now));
        numbers(
            env,
            &[
                ("calls", num(w.calls)),
                ("failures", num(w.failures)),
                ("slow", num(w.slow)),
            ],
        )
    }

    /// Counters since it was created, all processes together.
    #[napi(catch_unwind, ts_return_type = "CircuitBreakerStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let now = guards::clock::now();
        let (s, state) = with_b!(&self.l.g, g => (g.stats(), g.state(now)));
        crate::circuit_breaker::stats_object(env, &s, state)
    }

    /// The config it was created with (camelCase, durations in ms).
    #[napi(
        getter,
        catch_unwind,
        ts_return_type = "Required<CircuitBreakerOptions>"
    )]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let (c, cap) = (with_b!(&self.l.g, g => *g.config()), self.l.g.capacity());
        let mut o = config_object(env, &schema::CIRCUIT_BREAKER, &c)?;
        o.set("capacity", num(cap))?;
        Ok(o)
    }

    /// Window cells allocated.
    #[napi(getter, catch_unwind)]
    pub fn capacity(&self) -> u32 {
        u32::try_from(self.l.g.capacity()).unwrap_or(u32::MAX)
    }

    /// Its name in the region.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        with_b!(&self.l.g, g => g.name()).unwrap_or_default()
    }

    /// Permits this object's fast path (`execute`) handed out and that are not reported.
    #[napi(getter, catch_unwind)]
    pub fn outstanding(&self) -> f64 {
        num(self.l.tokens.outstanding())
    }

    /// Permits of this breaker held now by every process (a scan of the permit table).
    #[napi(getter, catch_unwind)]
    pub fn permits_held(&self) -> f64 {
        num(with_b!(&self.l.g, g => g.outstanding()))
    }
}

// ---------------------------------------------------------------------------------------
// Keyed breakers

/// A shared keyed breaker set of one of the supported slot counts.
enum Keyed {
    K4(Shared<CoreKeyed<4, 128>>),
    K16(Shared<CoreKeyed<16, 128>>),
    K64(Shared<CoreKeyed<64, 128>>),
    K256(Shared<CoreKeyed<256, 128>>),
}

macro_rules! with_k {
    ($k:expr, $g:ident => $e:expr) => {
        match $k {
            Keyed::K4($g) => $e,
            Keyed::K16($g) => $e,
            Keyed::K64($g) => $e,
            Keyed::K256($g) => $e,
        }
    };
}

impl Keyed {
    fn slots(&self) -> u64 {
        match self {
            Keyed::K4(_) => 4,
            Keyed::K16(_) => 16,
            Keyed::K64(_) => 64,
            Keyed::K256(_) => 256,
        }
    }
    /// The stored state of `key`'s breaker (255: none yet).
    fn stored(&self, key: u64) -> u8 {
        with_k!(self, g => g.get(key).map_or(255, |b| b.status().state as u8))
    }
    fn try_acquire(
        &self,
        key: u64,
        now: Nanos,
    ) -> std::result::Result<(PermitToken, gs::PermitView), Refusal<KeyedBreakersRejected>> {
        with_k!(self, g => g.try_acquire(key, now))
    }
    fn report(
        &self,
        t: PermitToken,
        outcome: Outcome,
        now: Nanos,
    ) -> std::result::Result<&'static str, GuardsResult> {
        with_k!(self, g => g.report(t, outcome, now).map(|e| e.name()))
    }
}

struct KeyedLocal {
    g: Keyed,
    /// Parked permits, with their key (for events).
    tokens: Tokens<(PermitToken, u64)>,
    seen: RefCell<HashMap<u64, u8>>,
    last: Cell<Option<Refusal<KeyedBreakersRejected>>>,
}

impl KeyedLocal {
    /// Whether `key`'s stored state differs from what this object saw last (which it then
    /// sees); a key seen for the first time starts closed, like every breaker.
    fn observe(&self, key: u64) -> bool {
        let s = self.g.stored(key);
        let Ok(mut seen) = self.seen.try_borrow_mut() else {
            return false;
        };
        let before = seen.insert(key, s).unwrap_or(0);
        before != s && !(before == 0 && s == 255)
    }
}

impl Reporter for KeyedLocal {
    fn report_token(
        &self,
        t: PermitToken,
        outcome: Outcome,
        now: Nanos,
    ) -> std::result::Result<&'static str, GuardsResult> {
        self.g.report(t, outcome, now)
    }
}

impl Drop for KeyedLocal {
    fn drop(&mut self) {
        let now = guards::clock::now();
        for (t, _) in self.tokens.drain() {
            let _ = self.g.report(t, Outcome::Ignored, now);
        }
    }
}

const KEYED: &str = "RegionKeyedBreakers";

fn keyed_refusal(env: &Env, shown: &str, r: &Refusal<KeyedBreakersRejected>) -> Error {
    match r {
        Refusal::Rejected(r) => {
            crate::keyed_breakers::rejection_error(env, shown, r, guards::clock::now())
        }
        Refusal::Failed(f) => failure(env, KEYED, f),
    }
}

// As `KeyedBreakers`' fast path: `acquire(key)` a token (plus 2^30 if this object saw the
// key's breaker change state), or -1 (open), -2 (half-open full), -4 (set full), -3 (no
// permit record); `report(token, outcome)` 1 (plus 2^30 on a change), or -1 if reported
// before.
fast_fn!(
    keyed_acquire,
    KeyedLocal,
    1,
    "RegionKeyedBreakers acquire",
    |env, l, a| {
        let mut buf = [0u8; 256];
        let mut heap = Vec::new();
        let k = key_of(a.str_bytes(env, 0, "key", &mut buf, &mut heap)?);
        let now = guards::clock::now();
        Ok(match l.g.try_acquire(k, now) {
            Ok((t, _)) => match l.tokens.insert((t, k)) {
                Ok(x) => x + if l.observe(k) { CHANGED } else { 0.0 },
                Err((t, _)) => {
                    let _ = l.g.report(t, Outcome::Ignored, now);
                    NO_SLOT
                }
            },
            Err(r) => {
                l.last.set(Some(r));
                match r {
                    Refusal::Rejected(r) => match r.reason.name() {
                        "open" => -1.0,
                        "half_open_full" => -2.0,
                        _ => -4.0,
                    },
                    Refusal::Failed(_) => NO_SLOT,
                }
            }
        })
    }
);

fast_fn!(
    keyed_report,
    KeyedLocal,
    2,
    "RegionKeyedBreakers report",
    |env, l, a| {
        let token = a.f64(env, 0, "token")?;
        let outcome = outcome::of_number(env, a.whole(env, 1, "outcome", 255)?)?;
        let Some((t, k)) = l.tokens.take(token) else {
            return Ok(-1.0);
        };
        let _ = l.g.report(t, outcome, guards::clock::now());
        Ok(1.0 + if l.observe(k) { CHANGED } else { 0.0 })
    }
);

/// One circuit breaker per key (an operation, a host) in a region, for every process.
/// Same options, refusals and methods as `KeyedBreakers`; `createFetch` takes it as
/// `breakers`.
#[napi]
pub struct RegionKeyedBreakers {
    l: Rc<KeyedLocal>,
}

#[napi]
impl RegionKeyedBreakers {
    /// The set named `name` in `region`, created with `options` (the breaker options and
    /// `slots`, default 64) if there is none.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "region: Region, name: string, options?: KeyedBreakersOptions, attach?: boolean"
    )]
    pub fn new(
        env: Env,
        region: Unknown<'_>,
        name: Unknown<'_>,
        options: Option<Unknown<'_>>,
        attach: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let region = region_arg(&env, &region)?;
        let name = name_arg(&env, KEYED, &name)?;
        let made = if attach_arg(&env, KEYED, &options, attach)? {
            AnyShared::attach(&region.r, &name).map_err(|f| failure(&env, KEYED, &f))
        } else {
            let (config, slots) = crate::keyed_breakers::read_config(&env, options)?;
            AnyShared::keyed_breakers(&region.r, &name, config, slots).map_err(|f| {
                mismatch(
                    &env,
                    KEYED,
                    &name,
                    &f,
                    breaker_config(&region.r, &name),
                    &config,
                )
            })
        };
        let g = match made? {
            AnyShared::Keyed4(g) => Keyed::K4(g),
            AnyShared::Keyed16(g) => Keyed::K16(g),
            AnyShared::Keyed64(g) => Keyed::K64(g),
            AnyShared::Keyed256(g) => Keyed::K256(g),
            other => {
                return Err(kind_mismatch(
                    &env,
                    KEYED,
                    other.kind(),
                    gs::GuardKind::KeyedBreakers,
                ))
            }
        };
        Ok(RegionKeyedBreakers {
            l: Rc::new(KeyedLocal {
                g,
                tokens: Tokens::new(),
                seen: RefCell::new(HashMap::new()),
                last: Cell::new(None),
            }),
        })
    }

    /// The fast path's functions (`{ acquire, report }`): for the JavaScript layer.
    #[napi(js_name = "_fast", catch_unwind, ts_return_type = "unknown")]
    pub fn fast<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        fast::functions(
            env,
            &self.l,
            &[("acquire", keyed_acquire), ("report", keyed_report)],
        )
    }

    /// The keys whose breaker changed state since this object last looked, each with its
    /// stored state (for the layer's events).
    #[napi(
        js_name = "_changes",
        catch_unwind,
        ts_return_type = "Array<[bigint, 'closed' | 'open' | 'half_open']>"
    )]
    pub fn changes(&self) -> Vec<(BigInt, &'static str)> {
        let now_states: Vec<(u64, u8, &'static str)> = with_k!(&self.l.g, g => g
            .iter()
            .map(|(k, b)| {
                let s = b.status().state;
                (k, s as u8, s.name())
            })
            .collect());
        let Ok(mut seen) = self.l.seen.try_borrow_mut() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (k, s, name) in now_states {
            let before = seen.insert(k, s).unwrap_or(0);
            if before != s {
                out.push((BigInt::from(k), name));
            }
        }
        out
    }

    /// A permit for a call on `key` at `now`, or a thrown `BreakerOpenError`
    /// (`BreakersFullError` when the set has no room for a new key).
    #[napi(catch_unwind, ts_args_type = "key: string | bigint, now?: bigint")]
    pub fn try_acquire(
        &self,
        env: Env,
        key: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<RegionPermit> {
        let (k, shown) = crate::keyed_breakers::key_arg(&env, &key)?;
        let now = args::now(&env, now)?;
        match self.l.g.try_acquire(k, now) {
            Ok((t, view)) => {
                self.l.observe(k);
                Ok(RegionPermit::new(
                    Rc::clone(&self.l) as Rc<dyn Reporter>,
                    t,
                    view,
                ))
            }
            Err(r) => Err(keyed_refusal(&env, &shown, &r)),
        }
    }

    /// The last refusal of this object's fast path, for `key`, thrown as its error.
    #[napi(
        catch_unwind,
        js_name = "_lastRejection",
        ts_args_type = "key: string | bigint"
    )]
    pub fn last_rejection(&self, env: Env, key: Unknown<'_>) -> Result<()> {
        let (_, shown) = crate::keyed_breakers::key_arg(&env, &key)?;
        match self.l.last.get() {
            Some(r) => Err(keyed_refusal(&env, &shown, &r)),
            None => Ok(()),
        }
    }

    /// The state of `key`'s breaker at `now` (`'closed'` for a key not seen yet).
    #[napi(
        catch_unwind,
        ts_args_type = "key: string | bigint, now?: bigint",
        ts_return_type = "'closed' | 'open' | 'half_open'"
    )]
    pub fn state(
        &self,
        env: Env,
        key: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<&'static str> {
        let (k, _) = crate::keyed_breakers::key_arg(&env, &key)?;
        let now = args::now(&env, now)?;
        Ok(with_k!(&self.l.g, g => g.get(k).map_or("closed", |b| b.state(now).name())))
    }

    /// `key`'s breaker's state word, `null` for a key not seen yet.
    #[napi(
        catch_unwind,
        ts_args_type = "key: string | bigint",
        ts_return_type = "BreakerStatus | null"
    )]
    pub fn status<'e>(&self, env: &'e Env, key: Unknown<'_>) -> Result<Option<Object<'e>>> {
        let (k, _) = crate::keyed_breakers::key_arg(env, &key)?;
        let s = with_k!(&self.l.g, g => g.get(k).map(|b| b.status()));
        s.map(|s| crate::circuit_breaker::status_object(env, &s))
            .transpose()
    }

    /// `key`'s breaker's counters, all processes (`null` for a key not seen yet).
    #[napi(
        catch_unwind,
        ts_args_type = "key: string | bigint",
        ts_return_type = "CircuitBreakerStats | null"
    )]
    pub fn breaker_stats<'e>(&self, env: &'e Env, key: Unknown<'_>) -> Result<Option<Object<'e>>> {
        let (k, _) = crate::keyed_breakers::key_arg(env, &key)?;
        let now = guards::clock::now();
        let s = with_k!(&self.l.g, g => g.get(k).map(|b| (b.stats(), b.state(now))));
        s.map(|(s, st)| crate::circuit_breaker::stats_object(env, &s, st))
            .transpose()
    }

    /// `{ entries, full, open }`: keys held, refusals for lack of a slot, breakers not
    /// closed (all processes).
    #[napi(catch_unwind, ts_return_type = "KeyedBreakersStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let (s, open) = with_k!(&self.l.g, g => (
            g.stats(),
            g.iter().filter(|(_, b)| b.status().state != BreakerState::Closed).count() as u64,
        ));
        numbers(
            env,
            &[
                ("entries", num(s.entries)),
                ("full", num(s.full)),
                ("open", num(open)),
            ],
        )
    }

    /// The breaker options (camelCase, ms) and `slots`.
    #[napi(getter, catch_unwind, ts_return_type = "Record<string, unknown>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let c = with_k!(&self.l.g, g => *g.config());
        let mut o = config_object(env, &schema::CIRCUIT_BREAKER, &c)?;
        o.set("slots", num(self.l.g.slots()))?;
        Ok(o)
    }

    /// Its name in the region.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        with_k!(&self.l.g, g => g.name()).unwrap_or_default()
    }

    /// Permits this object's fast path holds now.
    #[napi(getter, catch_unwind)]
    pub fn outstanding(&self) -> f64 {
        num(self.l.tokens.outstanding())
    }

    /// Permits held now by every process (a scan of the permit table).
    #[napi(getter, catch_unwind)]
    pub fn permits_held(&self) -> f64 {
        num(with_k!(&self.l.g, g => g.outstanding()))
    }
}

// ---------------------------------------------------------------------------------------
// Bulkhead

pub(crate) struct BulkheadLocal {
    /// An `Arc` so that a `Fleet` can hold the guard too.
    pub(crate) g: std::sync::Arc<Shared<CoreBulkhead>>,
    tokens: Tokens<PermitToken>,
    last: Cell<Option<Refusal<BulkheadRejected>>>,
}

impl Reporter for BulkheadLocal {
    fn report_token(
        &self,
        t: PermitToken,
        outcome: Outcome,
        now: Nanos,
    ) -> std::result::Result<&'static str, GuardsResult> {
        self.g.report(t, outcome, now).map(|v| v.name())
    }
}

impl Drop for BulkheadLocal {
    fn drop(&mut self) {
        let now = guards::clock::now();
        for t in self.tokens.drain() {
            let _ = self.g.report(t, Outcome::Ignored, now);
        }
    }
}

const BULKHEAD: &str = "RegionBulkhead";

fn bulkhead_refusal(env: &Env, r: &Refusal<BulkheadRejected>) -> Error {
    match r {
        Refusal::Rejected(r) => crate::bulkhead::rejection_error(env, r),
        Refusal::Failed(f) => failure(env, BULKHEAD, f),
    }
}

/// Now on CLOCK_MONOTONIC's timeline, from its coarse variant (the last timer tick: at
/// most a few ms behind, and about ten times cheaper to read than the precise clock on a
/// virtual machine). A bulkhead's acquire does not look at the time; the region uses it
/// only when the bulkhead is full and a reclaim scan runs, as the instant at which a dead
/// process's permits are reported cancelled, which a tick earlier does not change.
#[cfg(target_os = "linux")]
fn coarse_now() -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    if rc != 0 {
        return guards::clock::now();
    }
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    Nanos(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

#[cfg(not(target_os = "linux"))]
fn coarse_now() -> Nanos {
    guards::clock::now()
}

// `acquire()`: a token, or -1 (full) / -3 (no permit record). `release(token)`: true, or
// false for a token released before (nothing done).
fast_fn!(
    bulkhead_acquire,
    BulkheadLocal,
    0,
    "RegionBulkhead acquire",
    |_env, l, _a| {
        let now = coarse_now();
        Ok(match l.g.try_acquire((), now) {
            Ok((t, _)) => match l.tokens.insert(t) {
                Ok(x) => x,
                Err(t) => {
                    let _ = l.g.report(t, Outcome::Ignored, now);
                    NO_SLOT
                }
            },
            Err(r) => {
                l.last.set(Some(r));
                match r {
                    Refusal::Rejected(_) => -1.0,
                    Refusal::Failed(_) => NO_SLOT,
                }
            }
        })
    }
);

fast_fn!(
    bulkhead_release,
    BulkheadLocal,
    1,
    "RegionBulkhead release",
    |env, l, a| {
        let token = a.f64(env, 0, "token")?;
        // A bulkhead's report does not look at the time: no clock read.
        Ok(match l.tokens.take(token) {
            Some(t) => l.g.report(t, Outcome::Success, Nanos(0)).is_ok(),
            None => false,
        })
    }
);

/// A bulkhead in a region: at most `maxConcurrent` calls in flight across every process
/// that uses it. Same options, refusals and methods as `Bulkhead`.
#[napi]
pub struct RegionBulkhead {
    pub(crate) l: Rc<BulkheadLocal>,
}

#[napi]
impl RegionBulkhead {
    /// The bulkhead named `name` in `region`, created with `options` if there is none.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "region: Region, name: string, options?: BulkheadOptions, attach?: boolean"
    )]
    pub fn new(
        env: Env,
        region: Unknown<'_>,
        name: Unknown<'_>,
        options: Option<Unknown<'_>>,
        attach: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let g = guard_in::<CoreBulkhead>(&env, BULKHEAD, region, name, options, attach, |e, o| {
            crate::bulkhead::read_config(e, o).map(|(c, _)| c)
        })?;
        Ok(RegionBulkhead {
            l: Rc::new(BulkheadLocal {
                g: std::sync::Arc::new(g),
                tokens: Tokens::new(),
                last: Cell::new(None),
            }),
        })
    }

    /// The fast path's functions (`{ acquire, release }`): for the JavaScript layer.
    #[napi(js_name = "_fast", catch_unwind, ts_return_type = "unknown")]
    pub fn fast<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        fast::functions(
            env,
            &self.l,
            &[("acquire", bulkhead_acquire), ("release", bulkhead_release)],
        )
    }

    /// The last refusal of this object's fast path, thrown as its error.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env) -> Result<()> {
        match self.l.last.get() {
            Some(r) => Err(bulkhead_refusal(&env, &r)),
            None => Ok(()),
        }
    }

    /// Take a slot: a permit to `release()` exactly once, or a thrown `BulkheadFullError`.
    #[napi(catch_unwind)]
    pub fn try_acquire(&self, env: Env) -> Result<RegionPermit> {
        match self.l.g.try_acquire((), guards::clock::now()) {
            Ok((t, view)) => Ok(RegionPermit::new(
                Rc::clone(&self.l) as Rc<dyn Reporter>,
                t,
                view,
            )),
            Err(r) => Err(bulkhead_refusal(&env, &r)),
        }
    }

    /// Calls in flight, all processes.
    #[napi(getter, catch_unwind)]
    pub fn in_flight(&self) -> f64 {
        num(self.l.g.in_flight())
    }

    /// Free slots.
    #[napi(getter, catch_unwind)]
    pub fn available(&self) -> f64 {
        num(self.l.g.available())
    }

    /// The cap in force, all processes (see `Bulkhead.maxConcurrent`).
    #[napi(getter, catch_unwind)]
    pub fn max_concurrent(&self) -> f64 {
        num(self.l.g.max_concurrent())
    }

    /// Change the cap at run time, for every process (see `Bulkhead.setMaxConcurrent`).
    #[napi(catch_unwind, ts_args_type = "maxConcurrent: number")]
    pub fn set_max_concurrent(&self, env: Env, max_concurrent: Unknown<'_>) -> Result<f64> {
        crate::bulkhead::set_max_concurrent(&env, &self.l.g, &max_concurrent)
    }

    /// `{ acquired, rejected, released, inFlight, maxConcurrent }`, all processes.
    #[napi(catch_unwind, ts_return_type = "BulkheadStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = self.l.g.stats();
        numbers(
            env,
            &[
                ("acquired", num(s.acquired)),
                ("rejected", num(s.rejected)),
                ("released", num(s.released)),
                ("inFlight", num(s.in_flight)),
                ("maxConcurrent", num(self.l.g.max_concurrent())),
            ],
        )
    }

    /// The config (camelCase).
    #[napi(getter, catch_unwind, ts_return_type = "Required<BulkheadOptions>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        config_object(env, &schema::BULKHEAD, self.l.g.config())
    }

    /// Its name in the region.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.l.g.name().unwrap_or_default()
    }

    /// Slots this object's fast path (`execute`) holds now.
    #[napi(getter, catch_unwind)]
    pub fn outstanding(&self) -> f64 {
        num(self.l.tokens.outstanding())
    }

    /// Slots held now by every process, as the permit table records them (a scan).
    #[napi(getter, catch_unwind)]
    pub fn permits_held(&self) -> f64 {
        num(self.l.g.outstanding())
    }
}

// ---------------------------------------------------------------------------------------
// Limiter

pub(crate) struct LimiterLocal {
    /// An `Arc` so that a `Fleet` can hold the guard too.
    pub(crate) g: std::sync::Arc<Shared<CoreLimiter>>,
    tokens: Tokens<PermitToken>,
    last: Cell<Option<Refusal<LimiterRejected>>>,
}

impl Reporter for LimiterLocal {
    fn report_token(
        &self,
        t: PermitToken,
        outcome: Outcome,
        now: Nanos,
    ) -> std::result::Result<&'static str, GuardsResult> {
        self.g.report(t, outcome, now).map(|v| v.name())
    }
}

impl Drop for LimiterLocal {
    fn drop(&mut self) {
        let now = guards::clock::now();
        for t in self.tokens.drain() {
            let _ = self.g.report(t, Outcome::Ignored, now);
        }
    }
}

const LIMITER: &str = "RegionLimiter";

fn limiter_refusal(env: &Env, r: &Refusal<LimiterRejected>) -> Error {
    match r {
        Refusal::Rejected(r) => crate::limiter::rejection_error(env, r, guards::clock::now()),
        Refusal::Failed(f) => failure(env, LIMITER, f),
    }
}

// `acquire(priority)`: a token, or -1 (refused) / -3 (no permit record).
// `report(token, outcome)`: the limit after it, or -1 for a token reported before.
fast_fn!(
    limiter_acquire,
    LimiterLocal,
    1,
    "RegionLimiter acquire",
    |env, l, a| {
        let level = a.whole(env, 0, "priority", 7)?;
        let p = Priority::new(level as u8).unwrap_or(Priority::CRITICAL_PLUS);
        let now = guards::clock::now();
        Ok(match l.g.try_acquire(p, now) {
            Ok((t, _)) => match l.tokens.insert(t) {
                Ok(x) => x,
                Err(t) => {
                    let _ = l.g.report(t, Outcome::Ignored, now);
                    NO_SLOT
                }
            },
            Err(r) => {
                l.last.set(Some(r));
                match r {
                    Refusal::Rejected(_) => -1.0,
                    Refusal::Failed(_) => NO_SLOT,
                }
            }
        })
    }
);

fast_fn!(
    limiter_report,
    LimiterLocal,
    2,
    "RegionLimiter report",
    |env, l, a| {
        let token = a.f64(env, 0, "token")?;
        let outcome = outcome::of_number(env, a.whole(env, 1, "outcome", 255)?)?;
        let Some(t) = l.tokens.take(token) else {
            return Ok(-1.0);
        };
        let _ = l.g.report(t, outcome, guards::clock::now());
        Ok(num(l.g.limit()))
    }
);

/// A concurrency limiter in a region: one limit for the calls of every process. Same
/// options, refusals and methods as `Limiter`.
#[napi]
pub struct RegionLimiter {
    pub(crate) l: Rc<LimiterLocal>,
}

#[napi]
impl RegionLimiter {
    /// The limiter named `name` in `region`, created with `options` if there is none.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "region: Region, name: string, options?: LimiterOptions, attach?: boolean"
    )]
    pub fn new(
        env: Env,
        region: Unknown<'_>,
        name: Unknown<'_>,
        options: Option<Unknown<'_>>,
        attach: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let g = guard_in::<CoreLimiter>(&env, LIMITER, region, name, options, attach, |e, o| {
            crate::limiter::read_config(e, o).map(|(c, _)| c)
        })?;
        Ok(RegionLimiter {
            l: Rc::new(LimiterLocal {
                g: std::sync::Arc::new(g),
                tokens: Tokens::new(),
                last: Cell::new(None),
            }),
        })
    }

    /// The fast path's functions (`{ acquire, report }`): for the JavaScript layer.
    #[napi(js_name = "_fast", catch_unwind, ts_return_type = "unknown")]
    pub fn fast<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        fast::functions(
            env,
            &self.l,
            &[("acquire", limiter_acquire), ("report", limiter_report)],
        )
    }

    /// The last refusal of this object's fast path, thrown as its error.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env) -> Result<()> {
        match self.l.last.get() {
            Some(r) => Err(limiter_refusal(&env, &r)),
            None => Ok(()),
        }
    }

    /// A permit for a call of `priority` (0..7, default 0) at `now`, or a thrown
    /// `LimitExceededError`.
    #[napi(catch_unwind, ts_args_type = "priority?: number, now?: bigint")]
    pub fn try_acquire(
        &self,
        env: Env,
        priority: Option<Unknown<'_>>,
        now: Option<Unknown<'_>>,
    ) -> Result<RegionPermit> {
        let p = args::priority(&env, priority, 0)?;
        let now = args::now(&env, now)?;
        match self.l.g.try_acquire(p, now) {
            Ok((t, view)) => Ok(RegionPermit::new(
                Rc::clone(&self.l) as Rc<dyn Reporter>,
                t,
                view,
            )),
            Err(r) => Err(limiter_refusal(&env, &r)),
        }
    }

    /// The current limit.
    #[napi(getter, catch_unwind)]
    pub fn limit(&self) -> f64 {
        num(self.l.g.limit())
    }

    /// The ceiling set on the limit, for every process (see `Limiter.maxLimit`).
    #[napi(getter, catch_unwind)]
    pub fn max_limit(&self) -> Option<f64> {
        self.l.g.max_limit().map(num)
    }

    /// Cap the limit at `maxLimit` for every process (see `Limiter.setMaxLimit`).
    #[napi(catch_unwind, ts_args_type = "maxLimit: number")]
    pub fn set_max_limit(&self, env: Env, max_limit: Unknown<'_>) -> Result<Option<f64>> {
        crate::limiter::set_max_limit(&env, &self.l.g, &max_limit)
    }

    /// Remove the ceiling (see `Limiter.clearMaxLimit`).
    #[napi(catch_unwind)]
    pub fn clear_max_limit(&self) -> Option<f64> {
        self.l.g.clear_max_limit().map(num)
    }

    /// Calls in flight, all processes.
    #[napi(getter, catch_unwind)]
    pub fn in_flight(&self) -> f64 {
        num(self.l.g.in_flight())
    }

    /// Counters and gauges, all processes (see `Limiter.stats`).
    #[napi(catch_unwind, ts_return_type = "LimiterStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        crate::limiter::stats_object(env, &self.l.g.stats())
    }

    /// The config (camelCase, durations in ms; `limit` as an object).
    #[napi(getter, catch_unwind, ts_return_type = "Record<string, unknown>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let c = self.l.g.config();
        let mut o = config_object(env, &schema::LIMITER, c)?;
        o.set("limit", crate::limit::object(env, &c.limit)?)?;
        Ok(o)
    }

    /// Its name in the region.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.l.g.name().unwrap_or_default()
    }

    /// Permits this object's fast path (`execute`) holds now.
    #[napi(getter, catch_unwind)]
    pub fn outstanding(&self) -> f64 {
        num(self.l.tokens.outstanding())
    }

    /// Permits held now by every process (a scan of the permit table).
    #[napi(getter, catch_unwind)]
    pub fn permits_held(&self) -> f64 {
        num(self.l.g.outstanding())
    }
}

// ---------------------------------------------------------------------------------------
// Admission

struct AdmissionLocal {
    g: Shared<CoreAdmission>,
    tokens: Tokens<PermitToken>,
    last: Cell<Option<Refusal<AdmissionRejected>>>,
}

impl Reporter for AdmissionLocal {
    fn report_token(
        &self,
        t: PermitToken,
        outcome: Outcome,
        now: Nanos,
    ) -> std::result::Result<&'static str, GuardsResult> {
        self.g.report(t, outcome, now).map(|v| v.name())
    }
}

impl Drop for AdmissionLocal {
    fn drop(&mut self) {
        let now = guards::clock::now();
        for t in self.tokens.drain() {
            let _ = self.g.report(t, Outcome::Ignored, now);
        }
    }
}

const ADMISSION: &str = "RegionAdmission";

fn admission_refusal(env: &Env, r: &Refusal<AdmissionRejected>) -> Error {
    match r {
        Refusal::Rejected(r) => crate::admission::rejection_error(env, r, guards::clock::now()),
        Refusal::Failed(f) => failure(env, ADMISSION, f),
    }
}

// As `Admission`'s fast path: `acquire(priority)` a token, or -1 (refused) / -3 (no
// permit record); `retryAfterSecs()` the last refusal's Retry-After in whole seconds (1
// after a failed claim); `report(token, outcome)` the limit after it (-2 without an
// adaptive limit), or -1 for a token reported before.
fast_fn!(
    admission_acquire,
    AdmissionLocal,
    1,
    "RegionAdmission acquire",
    |env, l, a| {
        let level = a.whole(env, 0, "priority", 7)?;
        let p = Priority::new(level as u8).unwrap_or(Priority::CRITICAL);
        let now = guards::clock::now();
        Ok(match l.g.try_acquire(p, now) {
            Ok((t, _)) => match l.tokens.insert(t) {
                Ok(x) => x,
                Err(t) => {
                    let _ = l.g.report(t, Outcome::Ignored, now);
                    NO_SLOT
                }
            },
            Err(r) => {
                l.last.set(Some(r));
                match r {
                    Refusal::Rejected(_) => -1.0,
                    Refusal::Failed(_) => NO_SLOT,
                }
            }
        })
    }
);

fast_fn!(
    admission_retry_after_secs,
    AdmissionLocal,
    0,
    "RegionAdmission retryAfterSecs",
    |_env, l, _a| {
        Ok(match l.last.get() {
            Some(Refusal::Rejected(r)) => r.retry_after_secs(guards::clock::now()) as f64,
            _ => 1.0,
        })
    }
);

fast_fn!(
    admission_report,
    AdmissionLocal,
    2,
    "RegionAdmission report",
    |env, l, a| {
        let token = a.f64(env, 0, "token")?;
        let outcome = outcome::of_number(env, a.whole(env, 1, "outcome", 255)?)?;
        let Some(t) = l.tokens.take(token) else {
            return Ok(-1.0);
        };
        let _ = l.g.report(t, outcome, guards::clock::now());
        Ok(match crate::admission::limit_number(&l.g) {
            x if x < 0.0 => -2.0,
            x => x,
        })
    }
);

/// Admission control in a region: one door for the requests of every process (the
/// workers of a cluster sharing the machine's CPU). Same options, refusals and methods as
/// `Admission`; the admission middlewares take it.
#[napi]
pub struct RegionAdmission {
    l: Rc<AdmissionLocal>,
}

#[napi]
impl RegionAdmission {
    /// The door named `name` in `region`, created with `options` if there is none.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "region: Region, name: string, options?: AdmissionOptions, attach?: boolean"
    )]
    pub fn new(
        env: Env,
        region: Unknown<'_>,
        name: Unknown<'_>,
        options: Option<Unknown<'_>>,
        attach: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let g =
            guard_in::<CoreAdmission>(&env, ADMISSION, region, name, options, attach, |e, o| {
                crate::admission::read_config(e, o).map(|(c, _)| c)
            })?;
        Ok(RegionAdmission {
            l: Rc::new(AdmissionLocal {
                g,
                tokens: Tokens::new(),
                last: Cell::new(None),
            }),
        })
    }

    /// The fast path's functions (`{ acquire, report, retryAfterSecs }`): for the
    /// middlewares.
    #[napi(js_name = "_fast", catch_unwind, ts_return_type = "unknown")]
    pub fn fast<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        fast::functions(
            env,
            &self.l,
            &[
                ("acquire", admission_acquire),
                ("report", admission_report),
                ("retryAfterSecs", admission_retry_after_secs),
            ],
        )
    }

    /// The last refusal of this object's fast path, thrown as its error.
    #[napi(catch_unwind, js_name = "_lastRejection")]
    pub fn last_rejection(&self, env: Env) -> Result<()> {
        match self.l.last.get() {
            Some(r) => Err(admission_refusal(&env, &r)),
            None => Ok(()),
        }
    }

    /// A place for a request of `priority` (0..7, default 1) at `now`, or a thrown
    /// `AdmissionRejectedError`.
    #[napi(catch_unwind, ts_args_type = "priority?: number, now?: bigint")]
    pub fn try_acquire(
        &self,
        env: Env,
        priority: Option<Unknown<'_>>,
        now: Option<Unknown<'_>>,
    ) -> Result<RegionPermit> {
        let p = args::priority(&env, priority, 1)?;
        let now = args::now(&env, now)?;
        match self.l.g.try_acquire(p, now) {
            Ok((t, view)) => Ok(RegionPermit::new(
                Rc::clone(&self.l) as Rc<dyn Reporter>,
                t,
                view,
            )),
            Err(r) => Err(admission_refusal(&env, &r)),
        }
    }

    /// Requests inside, all processes.
    #[napi(getter, catch_unwind)]
    pub fn in_flight(&self) -> f64 {
        num(self.l.g.in_flight())
    }

    /// The adaptive limit, or `null` without one.
    #[napi(getter, catch_unwind)]
    pub fn limit(&self) -> Option<f64> {
        let l = crate::admission::limit_number(&self.l.g);
        (l >= 0.0).then_some(l)
    }

    /// The count inside at which `priority` (default 1) is refused.
    #[napi(catch_unwind, ts_args_type = "priority?: number")]
    pub fn threshold(&self, env: Env, priority: Option<Unknown<'_>>) -> Result<f64> {
        let p = args::priority(&env, priority, 1)?;
        Ok(num(self.l.g.threshold(p)))
    }

    /// Counters, all processes (see `Admission.stats`).
    #[napi(catch_unwind, ts_return_type = "AdmissionStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        crate::admission::stats_object(env, &self.l.g.stats())
    }

    /// The config (camelCase, durations in ms; `limit` as an object).
    #[napi(getter, catch_unwind, ts_return_type = "Record<string, unknown>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let c = self.l.g.config();
        let mut o = config_object(env, &schema::ADMISSION, c)?;
        o.set("limit", crate::limit::object(env, &c.limit)?)?;
        Ok(o)
    }

    /// Its name in the region.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.l.g.name().unwrap_or_default()
    }

    /// Places this object's fast path (the middlewares) holds now.
    #[napi(getter, catch_unwind)]
    pub fn outstanding(&self) -> f64 {
        num(self.l.tokens.outstanding())
    }

    /// Places held now by every process (a scan of the permit table).
    #[napi(getter, catch_unwind)]
    pub fn permits_held(&self) -> f64 {
        num(self.l.g.outstanding())
    }
}
