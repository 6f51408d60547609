//! The `limit` option of `Limiter` and `Admission`: a number (a fixed limit) or
//! `{ algorithm: 'aimd' | 'vegas' | 'gradient', ...that algorithm's options }`, read with
//! ffi's `AIMD`, `VEGAS` and `GRADIENT` schemas.

use napi::bindgen_prelude::*;

use guards_core::LimitConfig;

use crate::convert::{build_leaves, whole, Options, Val};
use crate::errors::{range_error, type_error};

/// Take the `limit` option out of `o`: `None` when left out.
pub(crate) fn take(env: &Env, o: &mut Options) -> Result<Option<LimitConfig>> {
    let class = o.class;
    if let Some((camel, v)) = o.take("limit") {
        let n = whole(env, class, &camel, &v, u64::MAX)?;
        if n == 0 {
            return Err(range_error(
                env,
                "limit",
                &format!("{class}: `limit` must be at least 1"),
            ));
        }
        return Ok(Some(LimitConfig::Fixed(n)));
    }
    let mut leaves = o.take_prefixed("limit.");
    if leaves.is_empty() {
        return Ok(None);
    }
    let algo = match leaves.iter().position(|(p, _, _)| p == "algorithm") {
        Some(i) => match leaves.remove(i).2 {
            Val::Str(s) => s,
            _ => {
                return Err(type_error(
                    env,
                    "limit.algorithm",
                    &format!("{class}: `limit.algorithm` must be 'aimd', 'vegas' or 'gradient'"),
                ))
            }
        },
        None => {
            return Err(type_error(
                env,
                "limit.algorithm",
                &format!("{class}: `limit` needs `algorithm`: 'aimd', 'vegas' or 'gradient' (or give a number for a fixed limit)"),
            ))
        }
    };
    Ok(Some(match algo.as_str() {
        "aimd" => LimitConfig::Aimd(build_leaves(
            env,
            class,
            &guards::schema::AIMD,
            "limit.",
            leaves,
        )?),
        "vegas" => LimitConfig::Vegas(build_leaves(
            env,
            class,
            &guards::schema::VEGAS,
            "limit.",
            leaves,
        )?),
        "gradient" => LimitConfig::Gradient(build_leaves(
            env,
            class,
            &guards::schema::GRADIENT,
            "limit.",
            leaves,
        )?),
        other => {
            return Err(range_error(
                env,
                "limit.algorithm",
                &format!(
                "{class}: `limit.algorithm` must be 'aimd', 'vegas' or 'gradient', not {other:?}"
            ),
            ))
        }
    }))
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
