//! The `limit` option of `Limiter` and `Admission`: a number (a fixed limit) or
//! `{ algorithm: 'aimd' | 'vegas' | 'gradient', ...that algorithm's options }`, read with
//! ffi's `AIMD`, `VEGAS` and `GRADIENT` schemas; and `Limit`, the algorithm on its own
//! (fed samples by the caller, as a limiter feeds it).

use napi::bindgen_prelude::*;
use napi::ValueType;
use napi_derive::napi;

use guards_core::limit::{Limit as CoreLimit, LimitSample};
use guards_core::LimitConfig;

use crate::args;
use crate::convert::{build_leaves, ms, num, whole, Options, Val};
use crate::errors::{config_failure, range_error, type_error};

/// Take the `limit` option out of `o`: `None` when left out.
pub(crate) fn take(env: &Env, o: &mut Options) -> Result<Option<LimitConfig>> {
    let class = o.class;
    if let Some((camel, v)) = o.take("limit") {
        let n = whole(env, class, &camel, &v, u64::MAX)?;
        if n == 0 {
            return Err(crate::errors::config_range_error(
                env,
                "limit",
                guards_core::ConfigErrorKind::Zero,
                &format!(
                    "{class}: invalid option `limit`: must not be zero (expected 1..=u64::MAX)"
                ),
            ));
        }
        return Ok(Some(LimitConfig::Fixed(n)));
    }
    let leaves = o.take_prefixed("limit.");
    if leaves.is_empty() {
        return Ok(None);
    }
    of_leaves(env, class, leaves, "limit.").map(Some)
}

/// A limit config from the leaves of `{ algorithm, ... }` (`prefix` for messages).
fn of_leaves(
    env: &Env,
    class: &str,
    mut leaves: Vec<(String, String, Val)>,
    prefix: &str,
) -> Result<LimitConfig> {
    let algo_name = format!("{prefix}algorithm");
    let algo = match leaves.iter().position(|(p, _, _)| p == "algorithm") {
        Some(i) => match leaves.remove(i).2 {
            Val::Str(s) => s,
            _ => {
                return Err(type_error(
                    env,
                    &algo_name,
                    &format!("{class}: `{algo_name}` must be 'aimd', 'vegas' or 'gradient'"),
                ))
            }
        },
        None => {
            return Err(type_error(
                env,
                &algo_name,
                &format!("{class}: `{algo_name}` is needed: 'aimd', 'vegas' or 'gradient' (or give a number for a fixed limit)"),
            ))
        }
    };
    Ok(match algo.as_str() {
        "aimd" => LimitConfig::Aimd(build_leaves(
            env,
            class,
            &guards::schema::AIMD,
            prefix,
            leaves,
        )?),
        "vegas" => LimitConfig::Vegas(build_leaves(
            env,
            class,
            &guards::schema::VEGAS,
            prefix,
            leaves,
        )?),
        "gradient" => LimitConfig::Gradient(build_leaves(
            env,
            class,
            &guards::schema::GRADIENT,
            prefix,
            leaves,
        )?),
        other => {
            return Err(range_error(
                env,
                &algo_name,
                &format!(
                    "{class}: `{algo_name}` must be 'aimd', 'vegas' or 'gradient', not {other:?}"
                ),
            ))
        }
    })
}

/// The limit config as an object (`{ algorithm: 'fixed', limit }` or the algorithm's
/// options).
pub(crate) fn object<'e>(env: &'e Env, l: &LimitConfig) -> Result<Object<'e>> {
    use crate::convert::config_object;
    let mut o = match l {
        LimitConfig::Fixed(n) => {
            let mut o = Object::new(env)?;
            o.set("limit", *n as f64)?;
            o
        }
        LimitConfig::Aimd(c) => config_object(env, &guards::schema::AIMD, c)?,
        LimitConfig::Vegas(c) => config_object(env, &guards::schema::VEGAS, c)?,
        LimitConfig::Gradient(c) => config_object(env, &guards::schema::GRADIENT, c)?,
    };
    o.set("algorithm", l.algorithm().name())?;
    Ok(o)
}

const CLASS: &str = "Limit";

/// A concurrency limit algorithm on its own: a fixed limit, AIMD, Vegas or Gradient2, fed
/// one sample per finished call (`update`), as a `Limiter` feeds it. Owned by one caller
/// (not shared between threads): a limiter is the lock-free, shared form.
#[napi]
pub struct Limit {
    l: CoreLimit,
}

#[napi]
impl Limit {
    /// A limit: a number (fixed), or `{ algorithm: 'aimd' | 'vegas' | 'gradient', ...that
    /// algorithm's options }`.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options: number | LimitOptions"
    )]
    pub fn new(env: Env, options: Unknown<'_>) -> Result<Self> {
        let c = if options.get_type()? == ValueType::Number {
            let n = whole(
                &env,
                CLASS,
                "limit",
                &Val::Num(args::number(&env, "options", &options)?),
                u64::MAX,
            )?;
            LimitConfig::Fixed(n)
        } else {
            let o = Options::read(&env, CLASS, Some(options))?;
            if o.leaves.is_empty() {
                return Err(type_error(
                    &env,
                    "options",
                    "Limit: give a number (a fixed limit) or { algorithm, ...options }",
                ));
            }
            of_leaves(&env, CLASS, o.leaves, "")?
        };
        let l = CoreLimit::new(c).map_err(|e| config_failure(&env, CLASS, "", &e.into()))?;
        Ok(Limit { l })
    }

    /// A call ended at `now` after `rtt` (ms, or exact ns as a bigint) with `inFlight`
    /// calls in flight, `dropped` or not: the limit after the sample.
    #[napi(
        catch_unwind,
        ts_args_type = "rtt: number | bigint, inFlight: number, dropped: boolean, now?: bigint"
    )]
    pub fn update(
        &mut self,
        env: Env,
        rtt: Unknown<'_>,
        in_flight: Unknown<'_>,
        dropped: Unknown<'_>,
        now: Option<Unknown<'_>>,
    ) -> Result<f64> {
        let sample = LimitSample {
            rtt: args::duration(&env, "rtt", &rtt)?,
            in_flight: args::whole(&env, "inFlight", &in_flight, u64::MAX)?,
            dropped: args::boolean(&env, "dropped", &dropped)?,
            now: args::now(&env, now)?,
        };
        Ok(num(self.l.update(sample)))
    }

    /// The current limit.
    #[napi(getter, catch_unwind)]
    pub fn limit(&self) -> f64 {
        num(self.l.limit())
    }

    /// The algorithm: `'fixed'`, `'aimd'`, `'vegas'` or `'gradient'`.
    #[napi(
        getter,
        catch_unwind,
        ts_return_type = "'fixed' | 'aimd' | 'vegas' | 'gradient'"
    )]
    pub fn algorithm(&self) -> &'static str {
        self.l.algorithm().name()
    }

    /// The unrounded limit estimate (Vegas, Gradient; `null` for the others).
    #[napi(getter, catch_unwind)]
    pub fn estimate(&self) -> Option<f64> {
        match &self.l {
            CoreLimit::Vegas(v) => Some(v.estimate()),
            CoreLimit::Gradient(g) => Some(g.estimate()),
            _ => None,
        }
    }

    /// The smallest RTT seen, in ms (Vegas; 0 before any sample; `null` for the others).
    #[napi(getter, catch_unwind)]
    pub fn min_rtt_ms(&self) -> Option<f64> {
        match &self.l {
            CoreLimit::Vegas(v) => Some(ms(v.min_rtt())),
            _ => None,
        }
    }

    /// The long-term RTT average, in ms (Gradient; `null` for the others).
    #[napi(getter, catch_unwind)]
    pub fn long_rtt_ms(&self) -> Option<f64> {
        match &self.l {
            CoreLimit::Gradient(g) => Some(g.long_rtt() / 1e6),
            _ => None,
        }
    }

    /// The options (`{ algorithm, ... }`, durations in ms).
    #[napi(getter, catch_unwind, ts_return_type = "Record<string, unknown>")]
    pub fn config<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        object(env, &self.l.config())
    }
}
