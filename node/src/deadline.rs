//! `Deadline`: an instant by which a request must be answered, the per-attempt budget
//! taken from it, and its wire forms (`grpc-timeout`, a milliseconds header).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards_core::deadline::{self as dl, Deadline as CoreDeadline};

use crate::convert::{big, duration_ms, instant, ms, now_of};
use crate::errors::{range_error, type_error};

/// A deadline: an instant on the monotonic clock (or none). Immutable.
#[napi]
pub struct Deadline {
    d: CoreDeadline,
}

#[napi]
impl Deadline {
    /// The deadline `timeoutMs` after `now`.
    #[napi(factory, catch_unwind)]
    pub fn after(env: Env, timeout_ms: f64, now: Option<BigInt>) -> Result<Deadline> {
        let now = now_of(&env, now)?;
        Ok(Deadline {
            d: CoreDeadline::after(now, duration_ms(&env, "timeoutMs", timeout_ms)?),
        })
    }

    /// The deadline at instant `at` (bigint ns).
    #[napi(factory, catch_unwind)]
    pub fn at(env: Env, at: BigInt) -> Result<Deadline> {
        Ok(Deadline {
            d: CoreDeadline::at(instant(&env, "at", &at)?),
        })
    }

    /// No deadline.
    #[napi(factory)]
    pub fn none() -> Deadline {
        Deadline {
            d: CoreDeadline::NONE,
        }
    }

    /// The deadline a `grpc-timeout` header value gives at `now`; `RangeError` for a
    /// malformed value (its reason in the message).
    #[napi(factory, catch_unwind)]
    pub fn from_grpc_timeout(env: Env, value: String, now: Option<BigInt>) -> Result<Deadline> {
        let now = now_of(&env, now)?;
        CoreDeadline::from_grpc_timeout(now, value.as_bytes())
            .map(|d| Deadline { d })
            .map_err(|e| {
                range_error(
                    &env,
                    "value",
                    &format!("bad grpc-timeout {value:?}: {}", e.name()),
                )
            })
    }

    /// The deadline a milliseconds header value gives at `now`.
    #[napi(factory, catch_unwind)]
    pub fn from_millis(env: Env, value: String, now: Option<BigInt>) -> Result<Deadline> {
        let now = now_of(&env, now)?;
        CoreDeadline::from_millis(now, value.as_bytes())
            .map(|d| Deadline { d })
            .map_err(|e| {
                range_error(
                    &env,
                    "value",
                    &format!("bad milliseconds header {value:?}: {}", e.name()),
                )
            })
    }

    /// Whether there is no deadline.
    #[napi(getter)]
    pub fn is_none(&self) -> bool {
        self.d.is_none()
    }

    /// The instant (`null`: none).
    #[napi(getter)]
    pub fn expires_at(&self) -> Option<BigInt> {
        self.d.expires_at().map(big)
    }

    /// Time left at `now`, in ms (`Infinity` for none, 0 once passed).
    #[napi(catch_unwind)]
    pub fn time_left_ms(&self, env: Env, now: Option<BigInt>) -> Result<f64> {
        if self.d.is_none() {
            return Ok(f64::INFINITY);
        }
        Ok(ms(self.d.time_left(now_of(&env, now)?)))
    }

    /// Whether it has passed at `now`.
    #[napi(catch_unwind)]
    pub fn is_expired(&self, env: Env, now: Option<BigInt>) -> Result<bool> {
        Ok(self.d.is_expired(now_of(&env, now)?))
    }

    /// The earlier of the two.
    #[napi]
    pub fn min(&self, other: &Deadline) -> Deadline {
        Deadline {
            d: self.d.min(other.d),
        }
    }

    /// The time left as a `grpc-timeout` value (rounded down), `null` for none.
    #[napi(catch_unwind)]
    pub fn to_grpc_timeout(&self, env: Env, now: Option<BigInt>) -> Result<Option<String>> {
        let now = now_of(&env, now)?;
        Ok(self.d.to_grpc_timeout(now).map(|h| h.as_str().to_owned()))
    }

    /// The time left as whole milliseconds (rounded down), `null` for none.
    #[napi(catch_unwind)]
    pub fn to_millis(&self, env: Env, now: Option<BigInt>) -> Result<Option<String>> {
        let now = now_of(&env, now)?;
        Ok(self.d.to_millis(now).map(|h| h.as_str().to_owned()))
    }

    /// The budget of an attempt started at `now`: `min(attemptTimeoutMs, time left) −
    /// marginMs` in ms, or `null` when it should not start (passed, or too little left).
    #[napi(catch_unwind)]
    pub fn attempt_budget_ms(
        &self,
        env: Env,
        attempt_timeout_ms: f64,
        margin_ms: Option<f64>,
        now: Option<BigInt>,
    ) -> Result<Option<f64>> {
        let t = duration_ms(&env, "attemptTimeoutMs", attempt_timeout_ms)?;
        let m = duration_ms(&env, "marginMs", margin_ms.unwrap_or(0.0))?;
        let cfg = dl::DeadlineConfig::new(t, m).map_err(|e| {
            range_error(
                &env,
                e.field(),
                &format!(
                    "invalid `{}`: {}",
                    crate::convert::camel(e.field()),
                    crate::errors::describe(e.kind())
                ),
            )
        })?;
        let now = now_of(&env, now)?;
        Ok(cfg.attempt_budget(self.d, now).budget().map(ms))
    }
}

/// A duration as a `grpc-timeout` value (at most 8 digits and a unit, rounded down).
#[napi(catch_unwind)]
pub fn encode_grpc_timeout(env: Env, timeout_ms: f64) -> Result<String> {
    Ok(
        dl::encode_grpc_timeout(duration_ms(&env, "timeoutMs", timeout_ms)?)
            .as_str()
            .to_owned(),
    )
}

/// A `grpc-timeout` value as ms; `RangeError` naming the reason for a bad one.
#[napi(catch_unwind)]
pub fn parse_grpc_timeout(env: Env, value: String) -> Result<f64> {
    dl::parse_grpc_timeout(value.as_bytes())
        .map(ms)
        .map_err(|e| {
            type_error(
                &env,
                "value",
                &format!("bad grpc-timeout {value:?}: {}", e.name()),
            )
        })
}
