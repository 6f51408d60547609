//! `Fleet`: this process as one member of a fleet sharing allowances through Redis (or
//! Valkey), over ffi's fleet agent (`guards::fleet`, docs/fleet.md).
//!
//! `Fleet.join(options)` connects on a worker of libuv's pool and resolves to the member
//! (its agent thread syncs in the background from then on); `attach(name, allowance,
//! guard)` hands a guard to the agent, which keeps its cap at this member's share of the
//! fleet-wide allowance; `leave()` stops the agent on the pool too. No call of the event
//! loop waits for Redis: the methods that stay on it (`attach`, `stats`, `events`,
//! `share`) only take the agent's lock, which the agent holds for arithmetic, never I/O.
//!
//! The guards a fleet can resize, each held by the agent through the `Arc` its JavaScript
//! object holds (so the guard's memory, its own, a `SharedArrayBuffer` or a region's,
//! lives as long as either): a `Bulkhead` or `RegionBulkhead` (its cap), a `Limiter` or
//! `RegionLimiter` (its ceiling, `maxLimit`), and a `RetryBudget` in the `'token_bucket'`
//! mode (its capacity, in whole tokens).
//!
//! Bad options throw nothing: `join` always returns a promise, rejected with the
//! `TypeError` / `RangeError` naming the option. Redis failures reject with a
//! `FleetError` whose `code` is `GUARDS_FLEET_UNAVAILABLE` or `GUARDS_FLEET_AUTH`;
//! `attach` throws `GUARDS_FLEET_DUPLICATE` (a name or a guard attached twice) and
//! `GUARDS_FLEET_LEFT` (after `leave`).

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::{JsValue, Task, ValueType};
use napi_derive::napi;

use guards::fleet::{
    self as gf, EventField, FleetConfig, FleetError, FleetEvent, Resizable, Through, Trippable,
};
use guards::names::{Bulkhead as CoreBulkhead, Limiter as CoreLimiter, RetryBudget as CoreBudget};
use guards::shared::Shared;
use guards_core::retry_budget::TokenBudget;

use crate::args;
use crate::bulkhead::{Bulkhead, BulkheadCore};
use crate::circuit_breaker::{BreakerCore, CircuitBreaker};
use crate::convert::{camel, num};
use crate::errors::{self, quote, range_error, type_error, Details};
use crate::gate::GateCore;
use crate::limiter::Limiter;
use crate::region::{RegionBulkhead, RegionLimiter};
use crate::retry_budget::{BudgetCore, RetryBudget};

/// The largest allowance (`2^32 − 1`), and a token budget's (its largest capacity).
const MAX_ALLOWANCE: u64 = u32::MAX as u64;
const MAX_BUDGET_ALLOWANCE: u64 = 1_000_000_000;
const MICROS: u64 = 1_000_000;

// ---------------------------------------------------------------------------------------
// The guards the agent resizes

/// A guard attached to a fleet, held through its JavaScript object's `Arc`.
enum Guard {
    Bulkhead(Arc<BulkheadCore>),
    RegionBulkhead(Arc<Shared<CoreBulkhead>>),
    Limiter(Arc<GateCore<CoreLimiter>>),
    RegionLimiter(Arc<Shared<CoreLimiter>>),
    /// Checked to be in the token-bucket mode when attached (a mode never changes).
    Budget(Arc<BudgetCore>),
}

/// The core guard behind a [`Guard`].
enum Core<'a> {
    Bulkhead(&'a CoreBulkhead),
    Limiter(&'a CoreLimiter),
    Budget(&'a TokenBudget),
    None,
}

impl Guard {
    fn core(&self) -> Core<'_> {
        match self {
            Guard::Bulkhead(b) => Core::Bulkhead(&b.g),
            Guard::RegionBulkhead(b) => Core::Bulkhead(b),
            Guard::Limiter(l) => Core::Limiter(&l.g),
            Guard::RegionLimiter(l) => Core::Limiter(l),
            Guard::Budget(b) => match &*b.g {
                CoreBudget::TokenBucket(t) => Core::Budget(t),
                _ => Core::None,
            },
        }
    }

    /// The guard's address: two objects over one guard (a `SharedArrayBuffer`'s, a
    /// region's) have the same.
    fn address(&self) -> usize {
        match self.core() {
            Core::Bulkhead(b) => b as *const CoreBulkhead as usize,
            Core::Limiter(l) => l as *const CoreLimiter as usize,
            Core::Budget(t) => t as *const TokenBudget as usize,
            Core::None => 0,
        }
    }
}

impl Resizable for Guard {
    fn in_flight(&self) -> u64 {
        match self.core() {
            Core::Bulkhead(b) => b.in_flight(),
            Core::Limiter(l) => l.in_flight(),
            // The balance, rounded up: tokens a retry may still spend before the next sync.
            Core::Budget(t) => t.tokens_micros().div_ceil(MICROS),
            Core::None => 0,
        }
    }

    fn cap(&self) -> u64 {
        match self.core() {
            Core::Bulkhead(b) => b.max_concurrent(),
            Core::Limiter(l) => l.max_limit().unwrap_or(MAX_ALLOWANCE),
            Core::Budget(t) => t.capacity_micros() / MICROS,
            Core::None => 0,
        }
    }

    fn set_cap(&self, cap: u64) {
        // The agent's shares never exceed the allowance, checked at attach to fit the
        // guard; the clamps only keep an impossible value from being refused.
        match self.core() {
            Core::Bulkhead(b) => {
                let _ = b.set_max_concurrent(cap.min(MAX_ALLOWANCE));
            }
            Core::Limiter(l) => {
                let _ = l.set_max_limit(cap.min(MAX_ALLOWANCE));
            }
            Core::Budget(t) => {
                let _ = t.set_capacity(cap.min(MAX_BUDGET_ALLOWANCE) as f64);
            }
            Core::None => {}
        }
    }
}

/// An instance of native class `T`, or `None` (nothing thrown).
fn as_instance<'a, T>(env: &Env, v: &Unknown<'a>) -> Option<&'a T>
where
    T: FromNapiRef + 'static,
    &'a T: ValidateNapiValue,
{
    if v.get_type().ok()? != ValueType::Object {
        return None;
    }
    // SAFETY: `v` is a live object of this env; `validate` only runs `instanceof` against
    // the class's registered constructor, and throws nothing.
    unsafe { <&'a T as ValidateNapiValue>::validate(env.raw(), v.raw()) }.ok()?;
    // SAFETY: the object is an instance of `T`'s class, so what it wraps is a `T`; the
    // reference does not outlive the call that received `v`.
    unsafe { T::from_napi_ref(env.raw(), v.raw()) }.ok()
}

/// The `guard` argument of `attach`, and the largest allowance it can take.
fn guard_of(env: &Env, v: &Unknown<'_>) -> Result<(Guard, u64)> {
    if let Some(b) = as_instance::<Bulkhead>(env, v) {
        return Ok((Guard::Bulkhead(Arc::clone(&b.l.core)), MAX_ALLOWANCE));
    }
    if let Some(b) = as_instance::<RegionBulkhead>(env, v) {
        return Ok((Guard::RegionBulkhead(Arc::clone(&b.l.g)), MAX_ALLOWANCE));
    }
    if let Some(l) = as_instance::<Limiter>(env, v) {
        return Ok((Guard::Limiter(Arc::clone(&l.l.core)), MAX_ALLOWANCE));
    }
    if let Some(l) = as_instance::<RegionLimiter>(env, v) {
        return Ok((Guard::RegionLimiter(Arc::clone(&l.l.g)), MAX_ALLOWANCE));
    }
    if let Some(b) = as_instance::<RetryBudget>(env, v) {
        if !matches!(&*b.core.g, CoreBudget::TokenBucket(_)) {
            return Err(type_error(
                env,
                "guard",
                &format!(
                    "Fleet.attach: a RetryBudget must be in the 'token_bucket' mode to be resized by a fleet (its capacity), not '{}'",
                    b.core.g.mode().name()
                ),
            ));
        }
        return Ok((Guard::Budget(Arc::clone(&b.core)), MAX_BUDGET_ALLOWANCE));
    }
    Err(type_error(
        env,
        "guard",
        &format!(
            "Fleet.attach: `guard` must be a Bulkhead, a Limiter, a token-bucket RetryBudget, a RegionBulkhead or a RegionLimiter, not {}",
            args::what(v)
        ),
    ))
}

// ---------------------------------------------------------------------------------------
// Options

/// A bad option found on the event loop, thrown later by the promise.
struct Bad {
    kind: &'static str,
    option: String,
    message: String,
}

impl Bad {
    fn ty(option: impl Into<String>, message: String) -> Self {
        Bad {
            kind: "TypeError",
            option: option.into(),
            message,
        }
    }
    fn range(option: impl Into<String>, message: String) -> Self {
        Bad {
            kind: "RangeError",
            option: option.into(),
            message,
        }
    }
}

const OPTIONS: [&str; 9] = [
    "url",
    "service",
    "member",
    "syncIntervalMs",
    "ttlMs",
    "staleAfterMs",
    "fallbackFloor",
    "ioTimeoutMs",
    "weight",
];

fn what(v: &Unknown<'_>) -> &'static str {
    args::what(v)
}

fn present(v: &Unknown<'_>) -> bool {
    !matches!(v.get_type(), Ok(ValueType::Undefined) | Ok(ValueType::Null))
}

fn read_string(name: &'static str, v: &Unknown<'_>) -> std::result::Result<String, Bad> {
    if v.get_type().ok() != Some(ValueType::String) {
        return Err(Bad::ty(
            name,
            format!("Fleet.join: `{name}` must be a string, not {}", what(v)),
        ));
    }
    // SAFETY: checked to be a string.
    unsafe { v.cast::<String>() }.map_err(|e| Bad::ty(name, format!("Fleet.join: `{name}`: {e}")))
}

fn read_number(name: &'static str, v: &Unknown<'_>) -> std::result::Result<f64, Bad> {
    if v.get_type().ok() != Some(ValueType::Number) {
        return Err(Bad::ty(
            name,
            format!("Fleet.join: `{name}` must be a number, not {}", what(v)),
        ));
    }
    // SAFETY: checked to be a number.
    unsafe { v.cast::<f64>() }.map_err(|e| Bad::ty(name, format!("Fleet.join: `{name}`: {e}")))
}

/// Milliseconds in `lo..=hi` (finite; fractions allowed).
fn read_ms(
    name: &'static str,
    v: &Unknown<'_>,
    lo: f64,
    hi: f64,
) -> std::result::Result<Duration, Bad> {
    let ms = read_number(name, v)?;
    if !ms.is_finite() || ms < lo || ms > hi {
        return Err(Bad::range(
            name,
            format!(
                "Fleet.join: `{name}` must be a number of milliseconds in {lo}..={hi}, not {ms}"
            ),
        ));
    }
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

fn read_whole(
    name: &'static str,
    v: &Unknown<'_>,
    lo: u64,
    hi: u64,
) -> std::result::Result<u64, Bad> {
    let n = read_number(name, v)?;
    if !n.is_finite() || n.fract() != 0.0 || n < lo as f64 || n > hi as f64 {
        return Err(Bad::range(
            name,
            format!("Fleet.join: `{name}` must be a whole number in {lo}..={hi}, not {n}"),
        ));
    }
    Ok(n as u64)
}

/// Whether `s` is a fleet name: 1..=128 bytes of `[A-Za-z0-9._-]`.
/// `name` read as a fleet name (`gf::is_valid_name`), or a RangeError from `method`.
fn fleet_name(env: &Env, method: &str, name: &Unknown<'_>) -> Result<String> {
    let name = args::string(env, "name", name)?;
    if gf::is_valid_name(&name) {
        return Ok(name);
    }
    Err(range_error(
        env,
        "name",
        &format!(
            "{method}: `name` must be 1..=128 characters of [A-Za-z0-9._-], not {}",
            quote(&name)
        ),
    ))
}

/// Why reading the options stopped: a bad option (for the promise to reject with), or a
/// JavaScript exception (a getter that threw), rethrown at once.
enum Stop {
    Bad(Bad),
    Js(Error),
}

impl From<Bad> for Stop {
    fn from(b: Bad) -> Self {
        Stop::Bad(b)
    }
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Js(e)
    }
}

/// Option `name` of `o`, if given (`undefined` and `null` are not).
fn prop<'a>(o: &Object<'a>, name: &str) -> Result<Option<Unknown<'a>>> {
    let v: Unknown<'a> = o.get_named_property(name)?;
    Ok(Some(v).filter(present))
}

fn required_name(
    o: &Object<'_>,
    name: &'static str,
    check: bool,
) -> std::result::Result<String, Stop> {
    let Some(v) = prop(o, name)? else {
        return Err(Bad::ty(
            name,
            format!("Fleet.join: option `{name}` is required (a string)"),
        )
        .into());
    };
    let s = read_string(name, &v)?;
    if check && !gf::is_valid_name(&s) {
        return Err(Bad::range(
            name,
            format!(
                "Fleet.join: `{name}` must be 1..=128 characters of [A-Za-z0-9._-], not {}",
                quote(&s)
            ),
        )
        .into());
    }
    Ok(s)
}

/// Settings from `join`'s options, every value checked (ffi's `FleetConfig::validate`
/// checks them again).
fn read_config(options: Option<Unknown<'_>>) -> std::result::Result<FleetConfig, Stop> {
    let Some(v) = options.filter(present) else {
        return Err(Bad::ty(
            "options",
            "Fleet.join: options `{ url, service, member }` are required".to_owned(),
        )
        .into());
    };
    if v.get_type()? != ValueType::Object || v.is_array()? {
        return Err(Bad::ty(
            "options",
            format!("Fleet.join: options must be an object, not {}", what(&v)),
        )
        .into());
    }
    // SAFETY: checked to be an object.
    let o = unsafe { v.cast::<Object<'_>>() }?;
    let keys = o.get_property_names()?;
    for i in 0..keys.get_array_length()? {
        let k: Unknown<'_> = keys.get_element(i)?;
        let k = k.coerce_to_string()?.into_utf8()?.as_str()?.to_owned();
        if !OPTIONS.contains(&k.as_str()) {
            return Err(Bad::ty(
                k.clone(),
                format!(
                    "Fleet.join: unknown option `{k}` (valid options: {})",
                    OPTIONS.join(", ")
                ),
            )
            .into());
        }
    }
    let url = required_name(&o, "url", false)?;
    let service = required_name(&o, "service", true)?;
    let member = required_name(&o, "member", true)?;
    let mut c = FleetConfig::new(&url, &service, &member);
    if let Some(v) = prop(&o, "syncIntervalMs")? {
        let i = read_ms("syncIntervalMs", &v, 10.0, 60_000.0)?;
        c.sync_interval = i;
        c.ttl = i * 3;
        c.stale_after = i * 2;
        c.io_timeout = i;
    }
    let i = c.sync_interval;
    if let Some(v) = prop(&o, "ttlMs")? {
        let t = read_ms("ttlMs", &v, 0.0, 600_000.0)?;
        if t < i * 2 {
            return Err(Bad::range(
                "ttlMs",
                format!(
                    "Fleet.join: `ttlMs` must be at least 2 × syncIntervalMs ({} ms), up to 600000",
                    (i * 2).as_secs_f64() * 1000.0
                ),
            )
            .into());
        }
        c.ttl = t;
    }
    if let Some(v) = prop(&o, "staleAfterMs")? {
        c.stale_after = read_ms("staleAfterMs", &v, 0.0, 600_000.0)?;
    }
    if c.stale_after.is_zero() || c.stale_after >= c.ttl {
        return Err(Bad::range(
            "staleAfterMs",
            format!(
                "Fleet.join: `staleAfterMs` (default 2 × syncIntervalMs) must be more than 0 and less than ttlMs ({} ms), not {} ms",
                c.ttl.as_secs_f64() * 1000.0,
                c.stale_after.as_secs_f64() * 1000.0
            ),
        )
        .into());
    }
    if let Some(v) = prop(&o, "ioTimeoutMs")? {
        c.io_timeout = read_ms("ioTimeoutMs", &v, 1.0, 60_000.0)?;
    }
    if let Some(v) = prop(&o, "fallbackFloor")? {
        c.fallback_floor = Some(read_whole("fallbackFloor", &v, 0, MAX_ALLOWANCE)?);
    }
    if let Some(v) = prop(&o, "weight")? {
        c.weight = read_whole("weight", &v, 1, 1000)? as u32;
    }
    c.validate()
        .map_err(|e| Bad::range("options", format!("Fleet.join: {e}")))?;
    Ok(c)
}

// ---------------------------------------------------------------------------------------
// Errors

fn thrown(env: &Env, e: &FleetError, rejecting: bool) -> Error {
    let (kind, message, details) = match e {
        FleetError::Config(field, why) => (
            "RangeError",
            format!("Fleet: invalid setting `{field}`: {why}"),
            Details::option(*field),
        ),
        FleetError::BadUrl(m) => (
            "TypeError",
            format!("Fleet.join: `url` is not a Redis URL (redis://[user:password@]host:port[/db]): {m}"),
            Details::option("url"),
        ),
        FleetError::Auth(m) => (
            "FLEET_AUTH",
            format!("Fleet.join: Redis refused the credentials: {m}"),
            Details::default(),
        ),
        FleetError::Unavailable(m) => (
            "FLEET_UNAVAILABLE",
            format!("Fleet.join: Redis is unreachable: {m}"),
            Details::default(),
        ),
        FleetError::Duplicate(a) => (
            "FLEET_DUPLICATE",
            format!("Fleet.attach: an allowance named {} is already attached", quote(a)),
            Details {
                json: vec![("allowance", quote(a))],
                ..Details::default()
            },
        ),
    };
    if rejecting {
        errors::rejection(env, kind, &message, details)
    } else {
        errors::throw(env, kind, &message, details)
    }
}

fn has_left(env: &Env, what: &str) -> Error {
    errors::throw(
        env,
        "FLEET_LEFT",
        &format!("Fleet.{what}: this member has left the fleet"),
        Details::default(),
    )
}

// ---------------------------------------------------------------------------------------
// Tasks

/// `join` on libuv's pool: connect, write the first heartbeat, start the agent.
pub struct JoinTask {
    config: Option<std::result::Result<FleetConfig, Bad>>,
}

impl Task for JoinTask {
    type Output = Option<std::result::Result<gf::Fleet, FleetError>>;
    /// The `Fleet` object.
    type JsValue = Unknown<'static>;

    fn compute(&mut self) -> Result<Self::Output> {
        let Some(Ok(c)) = self.config.as_ref() else {
            return Ok(None);
        };
        let c = c.clone();
        Ok(Some(
            catch_unwind(AssertUnwindSafe(|| gf::Fleet::join(c))).unwrap_or_else(|_| {
                Err(FleetError::Unavailable(
                    "the fleet agent failed to start".to_owned(),
                ))
            }),
        ))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> Result<Unknown<'static>> {
        match output {
            Some(Ok(f)) => {
                let instance = Fleet {
                    inner: RefCell::new(Some(f)),
                    attached: RefCell::new(Vec::new()),
                    breakers: RefCell::new(Vec::new()),
                    left: Cell::new(false),
                    keep: RefCell::new(None),
                }
                .into_instance(&env)?;
                let object = instance.as_object(&env);
                // A member is an active resource, like an open socket: it stays one until
                // `leave()` whether or not the program keeps the object (`leave` drops
                // this reference). It keeps no handle of the event loop alive.
                *instance.keep.borrow_mut() = Some(object.create_ref::<false>()?);
                // SAFETY: the object was made in this scope of `env`, and the value is
                // handed straight back to napi-rs, which resolves the promise with it
                // before the scope closes.
                Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), object.raw()) })
            }
            Some(Err(e)) => Err(thrown(&env, &e, true)),
            None => match self.config.take() {
                Some(Err(b)) => Err(errors::rejection(
                    &env,
                    b.kind,
                    &b.message,
                    Details::option(b.option),
                )),
                _ => Err(errors::rejection(
                    &env,
                    "INTERNAL",
                    "Fleet.join: no settings",
                    Details::default(),
                )),
            },
        }
    }
}

/// `leave` on libuv's pool: stop the agent (it finishes its sync) and delete this member's
/// record.
pub struct LeaveTask(Option<gf::Fleet>);

impl Task for LeaveTask {
    type Output = ();
    type JsValue = ();

    fn compute(&mut self) -> Result<()> {
        if let Some(mut f) = self.0.take() {
            let _ = catch_unwind(AssertUnwindSafe(move || {
                f.leave();
                drop(f);
            }));
        }
        Ok(())
    }

    fn resolve(&mut self, _env: Env, _output: ()) -> Result<()> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// The class

/// A field of `FleetStats.allowances`: one attached allowance.
#[napi(object)]
pub struct FleetAllowanceStats {
    /// The allowance's name.
    pub name: String,
    /// The fleet-wide allowance.
    pub allowance: f64,
    /// This member's share now (the attached guard's cap).
    pub share: f64,
    /// Its fair share in the last view of the fleet.
    pub fair: f64,
    /// Growth claims this member won.
    pub claims_won: f64,
    /// Growth claims lost to another member's claim.
    pub claims_lost: f64,
}

/// The fleet agent's counters (`Fleet.stats()`).
#[napi(object)]
pub struct FleetStats {
    /// Live members in the last view (0 before the first sync).
    pub members: f64,
    /// Successful syncs.
    pub syncs: f64,
    /// Failed syncs (Redis errors and timeouts).
    pub sync_errors: f64,
    /// Whether the last sync succeeded.
    pub connected: bool,
    /// Whether the shares are fallbacks (Redis unreachable for `staleAfterMs`).
    pub fallen_back: bool,
    /// Events dropped because `events()` was not called (the agent keeps the last 1024).
    pub events_dropped: f64,
    /// Each attached allowance.
    pub allowances: Vec<FleetAllowanceStats>,
    /// Each attached breaker.
    pub breakers: Vec<FleetBreakerStats>,
}

/// A field of `FleetStats.breakers`: one attached breaker.
#[napi(object)]
pub struct FleetBreakerStats {
    /// The breaker's name.
    pub name: String,
    /// Calls this member published at the last sync.
    pub calls: f64,
    /// Failures this member published at the last sync.
    pub failures: f64,
    /// The fleet's evidence at the last sync: calls (this member's included).
    pub fleet_calls: f64,
    /// Failures among them.
    pub fleet_failures: f64,
    /// Other members that contributed calls.
    pub fleet_members: f64,
    /// Times the agent opened the breaker on the fleet's evidence.
    pub opened_on_evidence: f64,
}

/// A member of a fleet: this process's share of fleet-wide allowances, kept by a
/// background agent through Redis (docs/fleet.md). Made by `Fleet.join`; a member until
/// `leave()`, referenced or not.
#[napi]
pub struct Fleet {
    inner: RefCell<Option<gf::Fleet>>,
    /// The addresses of the attached guards (one guard, one allowance).
    attached: RefCell<Vec<(usize, String)>>,
    /// The addresses of the attached breakers, and their names.
    breakers: RefCell<Vec<(usize, String)>>,
    left: Cell<bool>,
    /// A reference to this object, held until `leave()`.
    keep: RefCell<Option<ObjectRef<false>>>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if let Some(f) = self.inner.get_mut().take() {
            // Leaving waits for the agent's sync in progress: not on the event loop.
            let spawned = std::thread::Builder::new()
                .name("guards-fleet-leave".to_owned())
                .spawn(move || drop(f));
            drop(spawned);
        }
    }
}

#[napi]
impl Fleet {
    /// Join the fleet `service` as `member` through the Redis (or Valkey) at `url`; resolves
    /// once connected, with the first heartbeat written and the agent started. Rejects with
    /// a `TypeError` / `RangeError` naming a bad option (an unparsable `url` is a
    /// `TypeError`), or a `FleetError`: `GUARDS_FLEET_UNAVAILABLE` (Redis unreachable, or
    /// answering an error), `GUARDS_FLEET_AUTH` (credentials refused or missing).
    #[napi(
        catch_unwind,
        ts_args_type = "options: FleetOptions",
        ts_return_type = "Promise<Fleet>"
    )]
    pub fn join(options: Option<Unknown<'_>>) -> Result<AsyncTask<JoinTask>> {
        let config = match read_config(options) {
            Ok(c) => Ok(c),
            Err(Stop::Bad(b)) => Err(b),
            Err(Stop::Js(e)) => return Err(e),
        };
        Ok(AsyncTask::new(JoinTask {
            config: Some(config),
        }))
    }

    /// Attach `guard` to the fleet-wide allowance `name` (1..=128 characters of
    /// `[A-Za-z0-9._-]`) of `allowance` units (`1..=2^32 − 1`; a retry budget's at most
    /// 1e9 tokens): a `Bulkhead` or `RegionBulkhead` (its cap), a `Limiter` or
    /// `RegionLimiter` (its `maxLimit`), or a `'token_bucket'` `RetryBudget` (its
    /// capacity). The guard's cap drops to 0 at once and grows to this member's share as
    /// the fleet leaves room: attach before serving. The fleet holds the guard until
    /// `leave()`.
    #[napi(
        catch_unwind,
        ts_args_type = "name: string, allowance: number, guard: Bulkhead | Limiter | RetryBudget | RegionBulkhead | RegionLimiter"
    )]
    pub fn attach(
        &self,
        env: Env,
        name: Unknown<'_>,
        allowance: Unknown<'_>,
        guard: Unknown<'_>,
    ) -> Result<()> {
        let name = fleet_name(&env, "Fleet.attach", &name)?;
        let allowance = args::whole(&env, "allowance", &allowance, u64::MAX)?;
        if allowance == 0 || allowance > MAX_ALLOWANCE {
            return Err(range_error(
                &env,
                "allowance",
                &format!("Fleet.attach: `allowance` must be a whole number in 1..=4294967295, not {allowance}"),
            ));
        }
        let (guard, max) = guard_of(&env, &guard)?;
        if allowance > max {
            return Err(range_error(
                &env,
                "allowance",
                &format!("Fleet.attach: a retry budget's `allowance` is at most {max} tokens, not {allowance}"),
            ));
        }
        if self.left.get() {
            return Err(has_left(&env, "attach"));
        }
        let address = guard.address();
        if let Some((_, other)) = self.attached.borrow().iter().find(|(a, _)| *a == address) {
            return Err(errors::throw(
                &env,
                "FLEET_DUPLICATE",
                &format!(
                    "Fleet.attach: this guard is already attached (to the allowance {})",
                    quote(other)
                ),
                Details {
                    json: vec![("allowance", quote(other))],
                    ..Details::default()
                },
            ));
        }
        let inner = self.inner.borrow();
        let Some(f) = inner.as_ref() else {
            return Err(has_left(&env, "attach"));
        };
        f.attach(&name, allowance, Box::new(guard))
            .map_err(|e| thrown(&env, &e, false))?;
        self.attached.borrow_mut().push((address, name));
        Ok(())
    }

    /// Attach `breaker` under `name` (1..=128 characters of `[A-Za-z0-9._-]`; breaker
    /// names are their own namespace, apart from the allowances'): each sync the agent
    /// publishes its window's calls and failures and, while it is closed with fewer calls
    /// than its `minimumCalls`, opens it when the fleet's windows (with calls from at
    /// least two other members) hold `minimumCalls` calls failing at its
    /// `failureRateThreshold` or more, with a `'breakerOpenedOnFleetEvidence'` event
    /// (docs/fleet.md, "Breaker evidence"). The breaker is otherwise untouched; it must
    /// be used with the default clock (no `now` arguments). The fleet holds it until
    /// `leave()`.
    #[napi(catch_unwind, ts_args_type = "name: string, breaker: CircuitBreaker")]
    pub fn attach_breaker(&self, env: Env, name: Unknown<'_>, breaker: Unknown<'_>) -> Result<()> {
        let name = fleet_name(&env, "Fleet.attachBreaker", &name)?;
        let Some(b) = as_instance::<CircuitBreaker>(&env, &breaker) else {
            return Err(type_error(
                &env,
                "breaker",
                &format!(
                    "Fleet.attachBreaker: `breaker` must be a CircuitBreaker, not {}",
                    args::what(&breaker)
                ),
            ));
        };
        let core = Arc::clone(&b.l.core);
        if self.left.get() {
            return Err(has_left(&env, "attachBreaker"));
        }
        let address = &core.g as *const _ as usize;
        let duplicate = |what: String, other: &str| {
            errors::throw(
                &env,
                "FLEET_DUPLICATE",
                &what,
                Details {
                    json: vec![("breaker", quote(other))],
                    ..Details::default()
                },
            )
        };
        if let Some((_, other)) = self
            .breakers
            .borrow()
            .iter()
            .find(|(a, n)| *a == address || *n == name)
        {
            let what = if *other == name {
                format!(
                    "Fleet.attachBreaker: a breaker named {} is already attached",
                    quote(other)
                )
            } else {
                format!(
                    "Fleet.attachBreaker: this breaker is already attached (as {})",
                    quote(other)
                )
            };
            return Err(duplicate(what, other));
        }
        let inner = self.inner.borrow();
        let Some(f) = inner.as_ref() else {
            return Err(has_left(&env, "attachBreaker"));
        };
        // The agent may open it from its own thread: `execute` must ask the breaker from
        // now on (see `circuit_breaker::Mirror`).
        core.stop_mirror();
        // Held through its JavaScript object's `Arc`; its clock is the default one
        // (`guards::clock::now_ns`'s timeline), which the agent reads.
        let held = Through(core, |c: &Arc<BreakerCore>| &c.g as &dyn Trippable);
        f.attach_trippable(&name, Box::new(held))
            .map_err(|e| match e {
                FleetError::Duplicate(n) => duplicate(
                    format!(
                        "Fleet.attachBreaker: a breaker named {} is already attached",
                        quote(&n)
                    ),
                    &n,
                ),
                e => thrown(&env, &e, false),
            })?;
        self.breakers.borrow_mut().push((address, name));
        Ok(())
    }

    /// The agent's counters, and each attached allowance's share.
    #[napi(catch_unwind)]
    pub fn stats(&self, env: Env) -> Result<FleetStats> {
        let inner = self.inner.borrow();
        let Some(f) = inner.as_ref() else {
            return Err(has_left(&env, "stats"));
        };
        let s = f.stats();
        Ok(FleetStats {
            members: num(s.members),
            syncs: num(s.syncs),
            sync_errors: num(s.sync_errors),
            connected: s.connected,
            fallen_back: s.fallen_back,
            events_dropped: num(s.events_dropped),
            allowances: s
                .allowances
                .into_iter()
                .map(|a| FleetAllowanceStats {
                    name: a.name,
                    allowance: num(a.allowance),
                    share: num(a.share),
                    fair: num(a.fair),
                    claims_won: num(a.claims_won),
                    claims_lost: num(a.claims_lost),
                })
                .collect(),
            breakers: s
                .breakers
                .into_iter()
                .map(|b| FleetBreakerStats {
                    name: b.name,
                    calls: num(b.calls),
                    failures: num(b.failures),
                    fleet_calls: num(b.fleet_calls),
                    fleet_failures: num(b.fleet_failures),
                    fleet_members: f64::from(b.fleet_members),
                    opened_on_evidence: num(b.opened_on_evidence),
                })
                .collect(),
        })
    }

    /// This member's share of the allowance `name` now (its guard's cap).
    #[napi(catch_unwind, ts_args_type = "name: string")]
    pub fn share(&self, env: Env, name: Unknown<'_>) -> Result<f64> {
        let name = args::string(&env, "name", &name)?;
        let inner = self.inner.borrow();
        let Some(f) = inner.as_ref() else {
            return Err(has_left(&env, "share"));
        };
        f.stats()
            .allowances
            .iter()
            .find(|a| a.name == name)
            .map(|a| num(a.share))
            .ok_or_else(|| {
                range_error(
                    &env,
                    "name",
                    &format!(
                        "Fleet.share: no allowance named {} is attached",
                        quote(&name)
                    ),
                )
            })
    }

    /// The events seen since the last call, oldest first (after `leave()`: none).
    #[napi(catch_unwind, ts_return_type = "FleetEvent[]")]
    pub fn events<'e>(&self, env: &'e Env) -> Result<Vec<Object<'e>>> {
        let inner = self.inner.borrow();
        let Some(f) = inner.as_ref() else {
            return Ok(Vec::new());
        };
        f.events().into_iter().map(|e| event(env, e)).collect()
    }

    /// Leave the fleet: stop the agent, delete this member's record (best effort: the
    /// others take its share at once rather than after the TTL) and release the guards,
    /// which keep their last caps. Resolves when done; idempotent.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn leave(&self, env: Env) -> AsyncTask<LeaveTask> {
        if let Some(keep) = self.keep.borrow_mut().take() {
            let _ = keep.unref(&env);
        }
        self.left.set(true);
        self.attached.borrow_mut().clear();
        self.breakers.borrow_mut().clear();
        AsyncTask::new(LeaveTask(self.inner.borrow_mut().take()))
    }

    /// Whether `leave()` was called.
    #[napi(getter, catch_unwind)]
    pub fn left(&self) -> bool {
        self.left.get()
    }
}

fn event<'e>(env: &'e Env, e: FleetEvent) -> Result<Object<'e>> {
    let mut o = Object::new(env)?;
    o.set("kind", camel(e.kind()))?;
    for (name, v) in e.fields() {
        match v {
            EventField::Text(t) => o.set(camel(name), t)?,
            EventField::Count(n) => o.set(camel(name), num(n))?,
        }
    }
    Ok(o)
}
