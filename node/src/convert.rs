//! JavaScript values in, core values out: option objects read through ffi's schemas,
//! instants as `bigint` nanoseconds, durations as milliseconds.
//!
//! Options are read with the schema of the guard's config (ffi's `schema`), so they are
//! spelled, defaulted and bounded as in C and Python; only the spelling changes: each name
//! in camelCase (`windowSize` for `window_size`), nested configs as nested objects
//! (`backoff: { base: 25 }` for `backoff.base`) and arrays as arrays (`limits: [64, 80]`
//! for `limits[0]`, `limits[1]`; `partitions: [{ share: 0.8 }]`). Durations are
//! milliseconds (`openDuration: 5000`), or exact nanoseconds as a `bigint`. An option left
//! out or `undefined` keeps its default. Errors name the option as the caller spelled it:
//! a `TypeError` for an unknown name or a wrong type, a `RangeError` for a value out of
//! range.

use napi::bindgen_prelude::*;
use napi::{JsValue, ValueType};

use guards::error::Failure;
use guards::names::Nanos;
use guards::schema::{DurationUnit, Input, Schema, Unit};

use crate::errors::{config_failure, range_error, type_error};

/// `snake_case` (with `.` and `[i]`) to `camelCase`.
pub(crate) fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut up = false;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `camelCase` to `snake_case`.
pub(crate) fn snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A leaf value of an options object.
#[derive(Debug, Clone)]
pub(crate) enum Val {
    Num(f64),
    Big {
        negative: bool,
        value: u64,
        lossless: bool,
    },
    Bool(bool),
    Str(String),
    /// Something no option takes (a function, a symbol, null).
    Other(&'static str),
}

impl Val {
    pub(crate) fn read(v: &Unknown<'_>) -> Result<Option<Val>> {
        Ok(Some(match v.get_type()? {
            ValueType::Undefined => return Ok(None),
            // SAFETY: the value is a number (checked by the match).
            ValueType::Number => Val::Num(unsafe { v.cast::<f64>() }?),
            // SAFETY: the value is a boolean (checked by the match).
            ValueType::Boolean => Val::Bool(unsafe { v.cast::<bool>() }?),
            // SAFETY: the value is a string (checked by the match).
            ValueType::String => Val::Str(unsafe { v.cast::<String>() }?),
            ValueType::BigInt => {
                // SAFETY: the value is a bigint (checked by the match).
                let b = unsafe { v.cast::<BigInt>() }?;
                let (negative, value, lossless) = b.get_u64();
                Val::Big {
                    negative,
                    value,
                    lossless,
                }
            }
            ValueType::Null => Val::Other("null"),
            ValueType::Function => Val::Other("a function"),
            ValueType::Symbol => Val::Other("a symbol"),
            _ => Val::Other("an object"),
        }))
    }
}

/// Flatten `obj` into `(snake_case path, value)` pairs: nested plain objects with `.`,
/// arrays with `[i]`. `camel_path` is the path as the caller spelled it, for errors.
pub(crate) fn flatten(
    env: &Env,
    class: &str,
    obj: &Object<'_>,
    prefix: (&str, &str),
    out: &mut Vec<(String, String, Val)>,
) -> Result<()> {
    for key in Object::keys(obj)? {
        let v: Unknown<'_> = match obj.get::<Unknown<'_>>(&key)? {
            Some(v) => v,
            None => continue,
        };
        let snake_path = format!("{}{}", prefix.0, snake(&key));
        let camel_path = format!("{}{}", prefix.1, key);
        leaf_or_nested(env, class, v, snake_path, camel_path, out)?;
    }
    Ok(())
}

fn leaf_or_nested(
    env: &Env,
    class: &str,
    v: Unknown<'_>,
    snake_path: String,
    camel_path: String,
    out: &mut Vec<(String, String, Val)>,
) -> Result<()> {
    if v.get_type()? == ValueType::Object {
        if v.is_array()? {
            // SAFETY: checked to be an array.
            let arr = unsafe { v.cast::<Array<'_>>() }?;
            for i in 0..arr.len() {
                if let Some(item) = arr.get::<Unknown<'_>>(i)? {
                    leaf_or_nested(
                        env,
                        class,
                        item,
                        format!("{snake_path}[{i}]"),
                        format!("{camel_path}[{i}]"),
                        out,
                    )?;
                }
            }
            return Ok(());
        }
        // SAFETY: checked to be an object.
        let o = unsafe { v.cast::<Object<'_>>() }?;
        return flatten(
            env,
            class,
            &o,
            (&format!("{snake_path}."), &format!("{camel_path}.")),
            out,
        );
    }
    if let Some(val) = Val::read(&v)? {
        out.push((snake_path, camel_path, val));
    }
    Ok(())
}

/// Options read from an optional object: its leaves, by snake_case path.
pub(crate) struct Options {
    pub class: &'static str,
    pub leaves: Vec<(String, String, Val)>,
}

impl Options {
    pub(crate) fn read(env: &Env, class: &'static str, obj: Option<Unknown<'_>>) -> Result<Self> {
        let mut leaves = Vec::new();
        if let Some(v) = obj {
            match v.get_type()? {
                ValueType::Undefined | ValueType::Null => {}
                ValueType::Object if !v.is_array()? => {
                    // SAFETY: checked to be an object.
                    let o = unsafe { v.cast::<Object<'_>>() }?;
                    flatten(env, class, &o, ("", ""), &mut leaves)?;
                }
                _ => {
                    return Err(type_error(
                        env,
                        "options",
                        &format!("{class}: options must be an object"),
                    ))
                }
            }
        }
        Ok(Options { class, leaves })
    }

    /// Take the leaf named `path` (snake_case) out.
    pub(crate) fn take(&mut self, path: &str) -> Option<(String, Val)> {
        let i = self.leaves.iter().position(|(p, _, _)| p == path)?;
        let (_, camel, v) = self.leaves.remove(i);
        Some((camel, v))
    }

    /// Take every leaf whose path starts with `prefix` (the prefix removed).
    pub(crate) fn take_prefixed(&mut self, prefix: &str) -> Vec<(String, String, Val)> {
        let mut taken = Vec::new();
        let mut i = 0;
        while i < self.leaves.len() {
            if self
                .leaves
                .get(i)
                .is_some_and(|(p, _, _)| p.starts_with(prefix))
            {
                let (p, c, v) = self.leaves.remove(i);
                taken.push((p[prefix.len()..].to_owned(), c, v));
            } else {
                i += 1;
            }
        }
        taken
    }

    /// A whole-number option (`u64`), or `default` when left out.
    pub(crate) fn count(&mut self, env: &Env, path: &str, default: u64, max: u64) -> Result<u64> {
        match self.take(path) {
            None => Ok(default),
            Some((camel, v)) => whole(env, self.class, &camel, &v, max),
        }
    }

    /// Build config `C` with `schema` from the remaining leaves (all of them must belong to
    /// it); `prefix` is the camelCase prefix for error messages.
    pub(crate) fn build<C: Copy>(self, env: &Env, schema: &Schema<C>, prefix: &str) -> Result<C> {
        let class = self.class;
        build_leaves(env, class, schema, prefix, self.leaves)
    }
}

/// Build config `C` from `(snake path, camel path, value)` leaves.
pub(crate) fn build_leaves<C: Copy>(
    env: &Env,
    class: &str,
    schema: &Schema<C>,
    prefix: &str,
    leaves: Vec<(String, String, Val)>,
) -> Result<C> {
    let mut c = schema.defaults();
    for (path, camel_path, v) in leaves {
        let field = schema.field(&path);
        let input = match (&v, field.map(|f| f.unit)) {
            (Val::Num(n), Some(Unit::Count | Unit::Flags(_))) => {
                if !n.is_finite() {
                    return Err(range_error(
                        env,
                        &camel_path,
                        &format!("{class}: option `{camel_path}` must be a finite whole number"),
                    ));
                }
                if n.fract() != 0.0 {
                    return Err(range_error(
                        env,
                        &camel_path,
                        &format!("{class}: option `{camel_path}` must be a whole number, not {n}"),
                    ));
                }
                Input::Int(*n as i128)
            }
            (Val::Num(n), _) => {
                if n.fract() == 0.0 && n.abs() < 9.0e15 {
                    Input::Int(*n as i128)
                } else {
                    Input::Float(*n)
                }
            }
            (
                Val::Big {
                    negative,
                    value,
                    lossless,
                },
                unit,
            ) => {
                if *negative || !*lossless {
                    return Err(range_error(
                        env,
                        &camel_path,
                        &format!("{class}: option `{camel_path}` is out of range (a non-negative 64-bit bigint)"),
                    ));
                }
                match unit {
                    Some(Unit::Duration) => Input::Nanos(*value),
                    _ => Input::Int(i128::from(*value)),
                }
            }
            (Val::Bool(b), _) => Input::Bool(*b),
            (Val::Str(s), _) => Input::Str(s.as_str()),
            (Val::Other(what), _) => {
                if field.is_none() {
                    return Err(unknown(env, class, schema, prefix, &camel_path));
                }
                return Err(type_error(
                    env,
                    &camel_path,
                    &format!("{class}: option `{camel_path}` must not be {what}"),
                ));
            }
        };
        if field.is_none() {
            return Err(unknown(env, class, schema, prefix, &camel_path));
        }
        if let Err(f) = schema.set(&mut c, &path, input, DurationUnit::Millis) {
            return Err(field_failure(env, class, prefix, &camel_path, &f));
        }
    }
    if let Err(f) = schema.validate(&c) {
        return Err(config_failure(env, class, prefix, &f));
    }
    Ok(c)
}

fn unknown<C: Copy>(
    env: &Env,
    class: &str,
    schema: &Schema<C>,
    prefix: &str,
    given: &str,
) -> Error {
    let valid: Vec<String> = schema
        .fields
        .iter()
        .map(|f| format!("{prefix}{}", camel(f.name)))
        .collect();
    type_error(
        env,
        given,
        &format!(
            "{class}: unknown option `{given}` (valid options: {})",
            valid.join(", ")
        ),
    )
}

/// A failure setting one field: reported under the name the caller used.
fn field_failure(env: &Env, class: &str, prefix: &str, camel_path: &str, f: &Failure) -> Error {
    use guards::error::{Detail, GuardsResult};
    match f.detail {
        Detail::Config(e) => crate::errors::config_range_error(
            env,
            camel_path,
            e.kind(),
            &format!(
                "{class}: invalid option `{camel_path}`: {} (expected {})",
                crate::errors::describe(e.kind()),
                e.expected()
            ),
        ),
        Detail::Argument { expected, .. } if f.code == GuardsResult::ConfigWrongType => type_error(
            env,
            camel_path,
            &format!("{class}: option `{camel_path}` must be {expected}"),
        ),
        _ => config_failure(env, class, prefix, f),
    }
}

/// A whole number up to `max` from a leaf.
pub(crate) fn whole(env: &Env, class: &str, name: &str, v: &Val, max: u64) -> Result<u64> {
    let bad = |what: &str| range_error(env, name, &format!("{class}: `{name}` must be {what}"));
    let n = match v {
        Val::Num(n) => {
            if !n.is_finite() || n.fract() != 0.0 {
                return Err(bad(&format!("a whole number in 0..={max}")));
            }
            if *n < 0.0 || *n > max as f64 {
                return Err(bad(&format!("a whole number in 0..={max}")));
            }
            *n as u64
        }
        Val::Big {
            negative: false,
            value,
            lossless: true,
        } if *value <= max => *value,
        Val::Big { .. } => return Err(bad(&format!("a whole number in 0..={max}"))),
        _ => {
            return Err(type_error(
                env,
                name,
                &format!("{class}: `{name}` must be a number"),
            ))
        }
    };
    Ok(n)
}

/// Nanoseconds as milliseconds (a number).
#[inline]
pub(crate) fn ms(n: Nanos) -> f64 {
    n.0 as f64 / 1e6
}

/// Nanoseconds as a `bigint`.
#[inline]
pub(crate) fn big(n: Nanos) -> BigInt {
    BigInt::from(n.0)
}

/// A u64 counter as a number (exact up to 2^53).
#[inline]
pub(crate) fn num(n: u64) -> f64 {
    n as f64
}

/// A config's fields as an object: camelCase names, durations in ms, enums by name.
pub(crate) fn config_object<'e, C: Copy>(
    env: &'e Env,
    schema: &Schema<C>,
    c: &C,
) -> Result<Object<'e>> {
    use guards::schema::Value;
    let mut o = Object::new(env)?;
    for f in schema.fields {
        let v = f.get(c);
        let name = camel(f.name);
        // nested names ("backoff.base", "limits[0]") are kept flat
        match (f.unit, v) {
            (Unit::Duration, Value::Uint(n)) => o.set(&name, ms(Nanos(n)))?,
            (Unit::Enum(names), Value::Uint(i)) => {
                o.set(&name, names.get(i as usize).copied().unwrap_or(""))?
            }
            (_, Value::Uint(n)) => o.set(&name, num(n))?,
            (_, Value::Float(x)) => o.set(&name, x)?,
            (_, Value::Bool(b)) => o.set(&name, b)?,
        }
    }
    Ok(o)
}

/// An object of numbers.
pub(crate) fn numbers<'e>(env: &'e Env, pairs: &[(&str, f64)]) -> Result<Object<'e>> {
    let mut o = Object::new(env)?;
    for (k, v) in pairs {
        o.set(*k, *v)?;
    }
    Ok(o)
}

/// The optional `shared` argument of a constructor: a `Uint8Array` (over a
/// `SharedArrayBuffer`) or nothing.
pub(crate) fn shared_arg(env: &Env, v: Option<Unknown<'_>>) -> Result<Option<Uint8Array>> {
    if crate::args::absent(&v) {
        return Ok(None);
    }
    let Some(v) = v else { return Ok(None) };
    let ok = v.get_type()? == ValueType::Object && v.is_typedarray()?;
    if ok {
        // SAFETY: checked to be a typed array; napi-rs checks it is a `Uint8Array`.
        if let Ok(a) = unsafe { v.cast::<Uint8Array>() } {
            return Ok(Some(a));
        }
    }
    Err(type_error(
        env,
        "shared",
        &format!(
            "`shared` must be a Uint8Array over a SharedArrayBuffer, not {}",
            crate::args::what(&v)
        ),
    ))
}
