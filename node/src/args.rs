//! Positional arguments in, each checked by hand and refused by name.
//!
//! napi-rs converts a typed parameter (`now: Option<BigInt>`, `key: String`) before the
//! method runs and, on a value of the wrong JavaScript type, throws a plain `Error` whose
//! `code` is napi's status (`BigintExpected`, `StringExpected`): it names neither the
//! argument nor what was given. So every method takes its arguments as [`Unknown`] and
//! reads them here: a wrong type is a `TypeError`, a value out of range a `RangeError`,
//! both with `code: 'GUARDS_INVALID_OPTION'` and `option` naming the argument
//! (`TypeError: \`now\` must be a bigint (nanoseconds on the monotonic clock), not a
//! number`). The method's TypeScript signature is then given with `ts_args_type`.
//!
//! A class argument (`budget: RetryBudget`) is checked with `instanceof` before it is
//! unwrapped: napi-rs's own unwrap trusts the object and would read another class's
//! memory as this one's.

use napi::bindgen_prelude::*;
use napi::sys;
use napi::{JsValue, ValueType};

use guards::names::Nanos;
use guards_core::{Outcome, Priority};

use crate::errors::{range_error, type_error};

/// What a value is, for messages: `a number`, `a string`, `undefined`, ...
pub(crate) fn what(v: &Unknown<'_>) -> &'static str {
    match v.get_type() {
        Ok(ValueType::Undefined) => "undefined",
        Ok(ValueType::Null) => "null",
        Ok(ValueType::Boolean) => "a boolean",
        Ok(ValueType::Number) => "a number",
        Ok(ValueType::String) => "a string",
        Ok(ValueType::Symbol) => "a symbol",
        Ok(ValueType::BigInt) => "a bigint",
        Ok(ValueType::Function) => "a function",
        Ok(ValueType::External) => "an external",
        _ => "an object",
    }
}

fn ty(v: &Unknown<'_>) -> ValueType {
    v.get_type().unwrap_or(ValueType::Unknown)
}

/// `undefined` or `null`: an optional argument left out.
pub(crate) fn absent(v: &Option<Unknown<'_>>) -> bool {
    match v {
        None => true,
        Some(v) => matches!(ty(v), ValueType::Undefined | ValueType::Null),
    }
}

fn wrong(env: &Env, name: &str, expected: &str, v: &Unknown<'_>) -> Error {
    type_error(
        env,
        name,
        &format!("`{name}` must be {expected}, not {}", what(v)),
    )
}

/// A bigint as a `u64`, if it is one (`None`: negative or 2^64 or more).
pub(crate) fn bigint_u64(v: &Unknown<'_>) -> Option<u64> {
    let mut out = 0u64;
    let mut lossless = false;
    // SAFETY: `v` is a live value of its env (checked to be a bigint by the callers); the
    // out-pointers are valid for the call.
    let st = unsafe {
        sys::napi_get_value_bigint_uint64(v.value().env, v.raw(), &mut out, &mut lossless)
    };
    (st == sys::Status::napi_ok && lossless).then_some(out)
}

const INSTANT: &str = "a bigint (nanoseconds on the monotonic clock)";

/// An instant argument: a `bigint` of nanoseconds in `0..2^64`.
pub(crate) fn instant(env: &Env, name: &str, v: &Unknown<'_>) -> Result<Nanos> {
    if ty(v) != ValueType::BigInt {
        return Err(wrong(env, name, INSTANT, v));
    }
    bigint_u64(v).map(Nanos).ok_or_else(|| {
        range_error(
            env,
            name,
            &format!("`{name}` must be a bigint of nanoseconds in 0..2^64"),
        )
    })
}

/// `now`: left out (or `null`) reads the monotonic clock.
#[inline]
pub(crate) fn now(env: &Env, v: Option<Unknown<'_>>) -> Result<Nanos> {
    match v {
        Some(v) if !absent(&Some(v)) => instant(env, "now", &v),
        _ => Ok(guards::clock::now()),
    }
}

/// An optional instant (`null` / left out: `None`).
pub(crate) fn opt_instant(env: &Env, name: &str, v: Option<Unknown<'_>>) -> Result<Option<Nanos>> {
    match v {
        Some(v) if !absent(&Some(v)) => instant(env, name, &v).map(Some),
        _ => Ok(None),
    }
}

/// A number.
pub(crate) fn number(env: &Env, name: &str, v: &Unknown<'_>) -> Result<f64> {
    if ty(v) != ValueType::Number {
        return Err(wrong(env, name, "a number", v));
    }
    // SAFETY: checked to be a number.
    unsafe { v.cast::<f64>() }
}

/// A duration: milliseconds as a number (finite, not negative), or exact nanoseconds as a
/// `bigint`.
pub(crate) fn duration(env: &Env, name: &str, v: &Unknown<'_>) -> Result<Nanos> {
    match ty(v) {
        ValueType::Number => duration_ms(env, name, number(env, name, v)?),
        ValueType::BigInt => bigint_u64(v).map(Nanos).ok_or_else(|| {
            range_error(
                env,
                name,
                &format!("`{name}` must be a bigint of nanoseconds in 0..2^64"),
            )
        }),
        _ => Err(wrong(
            env,
            name,
            "a number of milliseconds (or a bigint of nanoseconds)",
            v,
        )),
    }
}

/// An optional duration.
pub(crate) fn opt_duration(env: &Env, name: &str, v: Option<Unknown<'_>>) -> Result<Option<Nanos>> {
    match v {
        Some(v) if !absent(&Some(v)) => duration(env, name, &v).map(Some),
        _ => Ok(None),
    }
}

/// Milliseconds (a number) as nanoseconds: finite, not negative, below 2^64 ns.
pub(crate) fn duration_ms(env: &Env, name: &str, ms: f64) -> Result<Nanos> {
    if !ms.is_finite() || ms < 0.0 {
        return Err(range_error(
            env,
            name,
            &format!("`{name}` must be a finite, non-negative number of milliseconds, not {ms}"),
        ));
    }
    let ns = (ms * 1e6).round();
    if ns >= 18_446_744_073_709_551_616.0 {
        return Err(range_error(
            env,
            name,
            &format!("`{name}` is too large (at most 2^64 ns)"),
        ));
    }
    Ok(Nanos(ns as u64))
}

/// A whole number in `0..=max` (a number, or a bigint).
pub(crate) fn whole(env: &Env, name: &str, v: &Unknown<'_>, max: u64) -> Result<u64> {
    let out_of_range = || {
        range_error(
            env,
            name,
            &format!("`{name}` must be a whole number in 0..={max}"),
        )
    };
    match ty(v) {
        ValueType::Number => {
            let n = number(env, name, v)?;
            if !n.is_finite() || n.fract() != 0.0 || n < 0.0 || n > max as f64 {
                return Err(out_of_range());
            }
            Ok(n as u64)
        }
        ValueType::BigInt => bigint_u64(v).filter(|n| *n <= max).ok_or_else(out_of_range),
        _ => Err(wrong(env, name, "a whole number", v)),
    }
}

/// A `u32` whole number.
pub(crate) fn whole_u32(env: &Env, name: &str, v: &Unknown<'_>) -> Result<u32> {
    whole(env, name, v, u64::from(u32::MAX)).map(|n| n as u32)
}

/// A string.
pub(crate) fn string(env: &Env, name: &str, v: &Unknown<'_>) -> Result<String> {
    if ty(v) != ValueType::String {
        return Err(wrong(env, name, "a string", v));
    }
    // SAFETY: checked to be a string.
    unsafe { v.cast::<String>() }
}

/// An optional string.
pub(crate) fn opt_string(env: &Env, name: &str, v: Option<Unknown<'_>>) -> Result<Option<String>> {
    match v {
        Some(v) if !absent(&Some(v)) => string(env, name, &v).map(Some),
        _ => Ok(None),
    }
}

/// A boolean.
pub(crate) fn boolean(env: &Env, name: &str, v: &Unknown<'_>) -> Result<bool> {
    if ty(v) != ValueType::Boolean {
        return Err(wrong(env, name, "a boolean", v));
    }
    // SAFETY: checked to be a boolean.
    unsafe { v.cast::<bool>() }
}

/// An optional boolean.
pub(crate) fn opt_boolean(env: &Env, name: &str, v: Option<Unknown<'_>>) -> Result<Option<bool>> {
    match v {
        Some(v) if !absent(&Some(v)) => boolean(env, name, &v).map(Some),
        _ => Ok(None),
    }
}

const OUTCOMES: &str = "'success', 'timeout', 'connection_error', 'other_transient', \
                        'throttled', 'overloaded', 'permanent', 'rejected', 'ignored', \
                        'cancelled'";

/// An outcome by name (core's snake_case names).
pub(crate) fn outcome(env: &Env, name: &str, v: &Unknown<'_>) -> Result<Outcome> {
    if ty(v) != ValueType::String {
        return Err(wrong(env, name, &format!("an outcome ({OUTCOMES})"), v));
    }
    let s = string(env, name, v)?;
    Outcome::from_name(&s).ok_or_else(|| {
        type_error(
            env,
            name,
            &format!("`{name}` must be an outcome: one of {OUTCOMES}, not {s:?}"),
        )
    })
}

/// A priority level, 0 (most important) ..= 7; left out: `default`.
pub(crate) fn priority(env: &Env, v: Option<Unknown<'_>>, default: u8) -> Result<Priority> {
    let level = match v {
        Some(v) if !absent(&Some(v)) => {
            if ty(&v) != ValueType::Number {
                return Err(wrong(env, "priority", "a whole number in 0..=7", &v));
            }
            let n = number(env, "priority", &v)?;
            if n.fract() != 0.0 || !(0.0..=7.0).contains(&n) {
                return Err(range_error(
                    env,
                    "priority",
                    &format!(
                        "`priority` must be a whole number in 0..=7 (0 is the most important), not {n}"
                    ),
                ));
            }
            n as u8
        }
        _ => default,
    };
    Priority::new(level).ok_or_else(|| {
        range_error(
            env,
            "priority",
            "`priority` must be a whole number in 0..=7",
        )
    })
}

/// An instance of native class `T` (named `class` in messages), checked with
/// `instanceof` before it is unwrapped.
pub(crate) fn instance<'a, T>(env: &Env, name: &str, class: &str, v: &Unknown<'a>) -> Result<&'a T>
where
    T: FromNapiRef + 'static,
    &'a T: ValidateNapiValue,
{
    let refuse = || wrong(env, name, &format!("a {class}"), v);
    if ty(v) != ValueType::Object {
        return Err(refuse());
    }
    // SAFETY: `v` is a live object of this env; `validate` only runs `instanceof` against
    // the class's registered constructor.
    if unsafe { <&'a T as ValidateNapiValue>::validate(env.raw(), v.raw()) }.is_err() {
        return Err(refuse());
    }
    // SAFETY: the object is an instance of `T`'s class, so what it wraps is a `T`; the
    // reference does not outlive the call that received `v`.
    unsafe { T::from_napi_ref(env.raw(), v.raw()) }.map_err(|_| refuse())
}

/// An optional instance of native class `T`.
pub(crate) fn opt_instance<'a, T>(
    env: &Env,
    name: &str,
    class: &str,
    v: &Option<Unknown<'a>>,
) -> Result<Option<&'a T>>
where
    T: FromNapiRef + 'static,
    &'a T: ValidateNapiValue,
{
    match v {
        Some(x) if !absent(v) => instance(env, name, class, x).map(Some),
        _ => Ok(None),
    }
}

/// An optional plain object (an options bag).
pub(crate) fn opt_object<'a>(
    env: &Env,
    name: &str,
    v: Option<Unknown<'a>>,
) -> Result<Option<Object<'a>>> {
    match v {
        Some(x) if !absent(&Some(x)) => {
            if ty(&x) != ValueType::Object || x.is_array().unwrap_or(false) {
                return Err(wrong(env, name, "an object", &x));
            }
            // SAFETY: checked to be an object.
            unsafe { x.cast::<Object<'a>>() }.map(Some)
        }
        _ => Ok(None),
    }
}

/// A header value: a string (its UTF-8 bytes) or a `Uint8Array` / `Buffer` (the bytes as
/// they came off the wire).
pub(crate) fn header_bytes(env: &Env, name: &str, v: &Unknown<'_>) -> Result<Vec<u8>> {
    match ty(v) {
        ValueType::String => Ok(string(env, name, v)?.into_bytes()),
        ValueType::Object if v.is_typedarray().unwrap_or(false) => {
            // SAFETY: checked to be a typed array; napi-rs checks it is a `Uint8Array`.
            match unsafe { v.cast::<Uint8Array>() } {
                Ok(a) => Ok(a.to_vec()),
                Err(_) => Err(wrong(env, name, "a string or a Uint8Array", v)),
            }
        }
        _ => Err(wrong(env, name, "a string or a Uint8Array", v)),
    }
}

/// An optional header value.
pub(crate) fn opt_header_bytes(
    env: &Env,
    name: &str,
    v: Option<Unknown<'_>>,
) -> Result<Option<Vec<u8>>> {
    match v {
        Some(v) if !absent(&Some(v)) => header_bytes(env, name, &v).map(Some),
        _ => Ok(None),
    }
}
