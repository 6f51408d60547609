//! `Deadline`: an instant by which a request must be answered, the per-attempt budget
//! taken from it, and its wire forms (`grpc-timeout`, a milliseconds header).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards_core::deadline::{self as dl, AttemptBudget, Deadline as CoreDeadline};

use crate::args;
use crate::convert::{big, ms};
use crate::errors::{self, Details};

/// A malformed header value: a `RangeError` with `option` and `reason` (the parse error's
/// name: `empty`, `missing_unit`, `unknown_unit`, `no_digits`, `invalid_character`,
/// `too_many_digits`, `overflow`).
fn malformed(env: &Env, what: &str, value: &[u8], reason: &'static str) -> Error {
    errors::throw(
        env,
        "RangeError",
        &format!("bad {what} {:?}: {reason}", String::from_utf8_lossy(value)),
        Details {
            option: Some("value".to_owned()),
            reason: Some(reason),
            ..Details::default()
        },
    )
}

fn attempt_config(
    env: &Env,
    attempt_timeout: &Unknown<'_>,
    margin: Option<Unknown<'_>>,
) -> Result<dl::DeadlineConfig> {
    let t = args::duration(env, "attemptTimeout", attempt_timeout)?;
    let m = args::opt_duration(env, "margin", margin)?.unwrap_or(guards::names::Nanos(0));
    dl::DeadlineConfig::new(t, m).map_err(|e| {
        let name = if e.field() == "margin" {
            "margin"
        } else {
            "attemptTimeout"
        };
        errors::config_range_error(
            env,
            name,
            e.kind(),
            &format!(
                "invalid `{name}`: {} (expected {})",
                errors::describe(e.kind()),
                e.expected()
            ),
        )
    })
}

/// A deadline: an instant on the monotonic clock (or none). Immutable: to share one with
/// another thread, post its `expiresAt` and rebuild it with `Deadline.at`.
#[napi]
pub struct Deadline {
    d: CoreDeadline,
}

#[napi]
impl Deadline {
    /// The deadline `timeout` (ms, or exact ns as a bigint) after `now`.
    #[napi(
        factory,
        catch_unwind,
        ts_args_type = "timeout: number | bigint, now?: bigint"
    )]
    pub fn after(env: Env, timeout: Unknown<'_>, now: Option<Unknown<'_>>) -> Result<Deadline> {
        let t = args::duration(&env, "timeout", &timeout)?;
        let now = args::now(&env, now)?;
        Ok(Deadline {
            d: CoreDeadline::after(now, t),
        })
    }

    /// The deadline at instant `at` (bigint ns).
    #[napi(factory, catch_unwind, ts_args_type = "at: bigint")]
    pub fn at(env: Env, at: Unknown<'_>) -> Result<Deadline> {
        Ok(Deadline {
            d: CoreDeadline::at(args::instant(&env, "at", &at)?),
        })
    }

    /// No deadline.
    #[napi(factory, catch_unwind)]
    pub fn none() -> Deadline {
        Deadline {
            d: CoreDeadline::NONE,
        }
    }

    /// The deadline a `grpc-timeout` header value (a string or its bytes) gives at `now`;
    /// a malformed value throws a `RangeError` whose `reason` names the fault.
    #[napi(
        factory,
        catch_unwind,
        ts_args_type = "value: string | Uint8Array, now?: bigint"
    )]
    pub fn from_grpc_timeout(
        env: Env,
        value: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<Deadline> {
        let v = args::header_bytes(&env, "value", &value)?;
        let now = args::now(&env, now)?;
        CoreDeadline::from_grpc_timeout(now, &v)
            .map(|d| Deadline { d })
            .map_err(|e| malformed(&env, "grpc-timeout", &v, e.name()))
    }

    /// The deadline a milliseconds header value gives at `now` (as `fromGrpcTimeout`).
    #[napi(
        factory,
        catch_unwind,
        ts_args_type = "value: string | Uint8Array, now?: bigint"
    )]
    pub fn from_millis(env: Env, value: Unknown<'_>, now: Option<Unknown<'_>>) -> Result<Deadline> {
        let v = args::header_bytes(&env, "value", &value)?;
        let now = args::now(&env, now)?;
        CoreDeadline::from_millis(now, &v)
            .map(|d| Deadline { d })
            .map_err(|e| malformed(&env, "milliseconds header", &v, e.name()))
    }

    /// Whether there is no deadline.
    #[napi(getter, catch_unwind)]
    pub fn is_none(&self) -> bool {
        self.d.is_none()
    }

    /// The instant (`null`: none).
    #[napi(getter, catch_unwind)]
    pub fn expires_at(&self) -> Option<BigInt> {
        self.d.expires_at().map(big)
    }

    /// Time left at `now`, in ms (`Infinity` for none, 0 once passed).
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn time_left_ms(&self, env: Env, now: Option<Unknown<'_>>) -> Result<f64> {
        if self.d.is_none() {
            return Ok(f64::INFINITY);
        }
        Ok(ms(self.d.time_left(args::now(&env, now)?)))
    }

    /// Whether it has passed at `now`.
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn is_expired(&self, env: Env, now: Option<Unknown<'_>>) -> Result<bool> {
        Ok(self.d.is_expired(args::now(&env, now)?))
    }

    /// The earlier of the two.
    #[napi(catch_unwind, ts_args_type = "other: Deadline")]
    pub fn min(&self, env: Env, other: Unknown<'_>) -> Result<Deadline> {
        let other = args::instance::<Deadline>(&env, "other", "Deadline", &other)?;
        Ok(Deadline {
            d: self.d.min(other.d),
        })
    }

    /// The time left as a `grpc-timeout` value (rounded down), `null` for none.
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn to_grpc_timeout(&self, env: Env, now: Option<Unknown<'_>>) -> Result<Option<String>> {
        let now = args::now(&env, now)?;
        Ok(self.d.to_grpc_timeout(now).map(|h| h.as_str().to_owned()))
    }

    /// The time left as whole milliseconds (rounded down), `null` for none.
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn to_millis(&self, env: Env, now: Option<Unknown<'_>>) -> Result<Option<String>> {
        let now = args::now(&env, now)?;
        Ok(self.d.to_millis(now).map(|h| h.as_str().to_owned()))
    }

    /// The budget of an attempt started at `now`: `min(attemptTimeout, time left) −
    /// margin` in ms, or `null` when it should not start (passed, or too little left).
    /// Durations are ms, or exact ns as a bigint.
    #[napi(
        catch_unwind,
        ts_args_type = "attemptTimeout: number | bigint, margin?: number | bigint, now?: bigint"
    )]
    pub fn attempt_budget_ms(
        &self,
        env: Env,
        attempt_timeout: Unknown<'_>,
        margin: Option<Unknown<'_>>,
        now: Option<Unknown<'_>>,
    ) -> Result<Option<f64>> {
        let cfg = attempt_config(&env, &attempt_timeout, margin)?;
        let now = args::now(&env, now)?;
        Ok(cfg.attempt_budget(self.d, now).budget().map(ms))
    }

    /// The same decision in full: `{ decision: 'start', budgetMs }`, `{ decision:
    /// 'expired' }` or `{ decision: 'too_little_left', leftMs }` (`leftMs` `Infinity`
    /// without a deadline).
    #[napi(
        catch_unwind,
        ts_args_type = "attemptTimeout: number | bigint, margin?: number | bigint, now?: bigint",
        ts_return_type = "AttemptBudgetDecision"
    )]
    pub fn attempt_budget<'e>(
        &self,
        env: &'e Env,
        attempt_timeout: Unknown<'_>,
        margin: Option<Unknown<'_>>,
        now: Option<Unknown<'_>>,
    ) -> Result<Object<'e>> {
        let cfg = attempt_config(env, &attempt_timeout, margin)?;
        let now = args::now(env, now)?;
        let b = cfg.attempt_budget(self.d, now);
        let mut o = Object::new(env)?;
        o.set("decision", b.name())?;
        match b {
            AttemptBudget::Start { budget } => o.set("budgetMs", ms(budget))?,
            AttemptBudget::Expired => {}
            AttemptBudget::TooLittleLeft { left } => o.set(
                "leftMs",
                if left == guards::names::Nanos::MAX {
                    f64::INFINITY
                } else {
                    ms(left)
                },
            )?,
        }
        Ok(o)
    }
}

/// A duration (ms, or exact ns as a bigint) as a `grpc-timeout` value (at most 8 digits and
/// a unit, rounded down).
#[napi(catch_unwind, ts_args_type = "timeout: number | bigint")]
pub fn encode_grpc_timeout(env: Env, timeout: Unknown<'_>) -> Result<String> {
    let t = args::duration(&env, "timeout", &timeout)?;
    Ok(dl::encode_grpc_timeout(t).as_str().to_owned())
}

/// A `grpc-timeout` value as ms; a malformed one throws a `RangeError` whose `reason`
/// names the fault.
#[napi(catch_unwind, ts_args_type = "value: string | Uint8Array")]
pub fn parse_grpc_timeout(env: Env, value: Unknown<'_>) -> Result<f64> {
    let v = args::header_bytes(&env, "value", &value)?;
    dl::parse_grpc_timeout(&v)
        .map(ms)
        .map_err(|e| malformed(&env, "grpc-timeout", &v, e.name()))
}

/// A duration (ms, or exact ns as a bigint) as a milliseconds header value (whole
/// milliseconds, rounded down).
#[napi(catch_unwind, ts_args_type = "timeout: number | bigint")]
pub fn encode_millis(env: Env, timeout: Unknown<'_>) -> Result<String> {
    let t = args::duration(&env, "timeout", &timeout)?;
    Ok(dl::encode_millis(t).as_str().to_owned())
}

/// A milliseconds header value as ms; a malformed one throws a `RangeError` whose
/// `reason` names the fault.
#[napi(catch_unwind, ts_args_type = "value: string | Uint8Array")]
pub fn parse_millis(env: Env, value: Unknown<'_>) -> Result<f64> {
    let v = args::header_bytes(&env, "value", &value)?;
    dl::parse_millis(&v)
        .map(ms)
        .map_err(|e| malformed(&env, "milliseconds header", &v, e.name()))
}
