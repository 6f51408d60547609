//! Errors thrown into JavaScript, made by the JavaScript layer's factory.
//!
//! `lib/errors.js` defines the `Error` subclasses (stable `code`s) and installs a factory
//! `(kind, message, details) => Error` per environment (main thread and each worker). The
//! native code throws what the factory makes, so a refusal thrown here and one thrown by
//! the JavaScript layer are the same class. Kinds:
//!
//! - `TypeError` / `RangeError`: a bad option or argument; `details.option` names it;
//! - the refusals, by their code without the `GUARDS_` prefix (`BREAKER_OPEN`,
//!   `BULKHEAD_FULL`, `LIMIT_EXCEEDED`, `ADMISSION_REJECTED`, `QUEUE_FULL`, ...), with
//!   `details.retryAt` (bigint ns) when the guard knows when to try again;
//! - `PERMIT`: a permit reported twice (details.code);
//! - `INTERNAL`: a bug (a caught panic).
//!
//! Without a factory (the addon loaded without `lib/`), plain `TypeError`, `RangeError`
//! and `Error` with `code` are thrown.

use napi::bindgen_prelude::*;

use guards::error::{Detail, Failure, GuardsResult};

use crate::convert::camel;

type Factory = FunctionRef<FnArgs<(String, String, String)>, Unknown<'static>>;

struct Installed(Factory);

pub(crate) fn install(
    env: &Env,
    factory: Function<'_, FnArgs<(String, String, String)>, Unknown<'static>>,
) -> Result<()> {
    env.set_instance_data(Installed(factory.create_ref()?), (), |_| {})
}

/// Details attached to a thrown error (passed to the factory as JSON).
#[derive(Default)]
pub(crate) struct Details {
    pub option: Option<String>,
    pub retry_at: Option<u64>,
    pub reason: Option<&'static str>,
    /// A refused config value's kind (`not_finite`, `negative`, `zero`, `out_of_range`,
    /// `inconsistent`).
    pub kind: Option<&'static str>,
    pub numbers: Vec<(&'static str, f64)>,
    pub strings: Vec<(&'static str, &'static str)>,
    /// Properties whose values are JSON text made by the caller.
    pub json: Vec<(&'static str, String)>,
}

impl Details {
    pub(crate) fn option(name: impl Into<String>) -> Self {
        Details {
            option: Some(name.into()),
            ..Details::default()
        }
    }

    fn json(&self) -> String {
        let mut parts = Vec::new();
        if let Some(o) = &self.option {
            parts.push(format!("\"option\":{}", quote(o)));
        }
        if let Some(t) = self.retry_at {
            // a bigint: as a string, turned back into a bigint by the factory
            parts.push(format!("\"retryAt\":\"{t}\""));
        }
        if let Some(r) = self.reason {
            parts.push(format!("\"reason\":{}", quote(r)));
        }
        if let Some(k) = self.kind {
            parts.push(format!("\"kind\":{}", quote(k)));
        }
        for (k, v) in &self.strings {
            parts.push(format!("{}:{}", quote(k), quote(v)));
        }
        for (k, v) in &self.numbers {
            if v.is_finite() {
                parts.push(format!("{}:{v}", quote(k)));
            }
        }
        for (k, v) in &self.json {
            parts.push(format!("{}:{v}", quote(k)));
        }
        format!("{{{}}}", parts.join(","))
    }
}

pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Make the error of `kind` and throw it; the returned `Error` tells napi-rs that an
/// exception is pending.
pub(crate) fn throw(env: &Env, kind: &str, message: &str, details: Details) -> Error {
    match made(env, kind, message, &details) {
        Some(value) => {
            let _ = env.throw(value);
            Error::from_status(Status::PendingException)
        }
        None => fallback(env, kind, message),
    }
}

/// The error of `kind`, not thrown: for a promise to reject with (an async task's
/// `resolve`). Without a factory, a plain `Error` whose message starts with the code.
pub(crate) fn rejection(env: &Env, kind: &str, message: &str, details: Details) -> Error {
    match made(env, kind, message, &details) {
        Some(value) => Error::from(value),
        None => Error::new(Status::GenericFailure, format!("GUARDS_{kind}: {message}")),
    }
}

fn made<'e>(env: &'e Env, kind: &str, message: &str, details: &Details) -> Option<Unknown<'e>> {
    env.get_instance_data::<Installed>()
        .ok()
        .flatten()
        .and_then(|Installed(f)| {
            let f = f.borrow_back(env).ok()?;
            f.call(FnArgs::from((
                kind.to_owned(),
                message.to_owned(),
                details.json(),
            )))
            .ok()
        })
}

fn fallback(env: &Env, kind: &str, msg: &str) -> Error {
    let thrown = match kind {
        "TypeError" => env.throw_type_error(msg, Some("GUARDS_INVALID_OPTION")),
        "RangeError" => env.throw_range_error(msg, Some("GUARDS_INVALID_OPTION")),
        _ => env.throw_error(msg, Some(&format!("GUARDS_{kind}"))),
    };
    match thrown {
        Ok(()) => Error::from_status(Status::PendingException),
        Err(e) => e,
    }
}

/// A bad value for option or argument `option` (camelCase): `TypeError` for a wrong type
/// or an unknown name, `RangeError` for a value out of range.
pub(crate) fn type_error(env: &Env, option: &str, message: &str) -> Error {
    throw(env, "TypeError", message, Details::option(option))
}

pub(crate) fn range_error(env: &Env, option: &str, message: &str) -> Error {
    throw(env, "RangeError", message, Details::option(option))
}

/// A `RangeError` for a config value refused with `kind` (core's `ConfigErrorKind`).
pub(crate) fn config_range_error(
    env: &Env,
    option: &str,
    kind: guards_core::ConfigErrorKind,
    message: &str,
) -> Error {
    throw(
        env,
        "RangeError",
        message,
        Details {
            option: Some(option.to_owned()),
            kind: Some(kind.name()),
            ..Details::default()
        },
    )
}

/// A config failure from the schema or core's `validate`, for class `class` (option
/// names in camelCase, nested with `.` and `[i]`; `prefix` is prepended, for nested
/// configs such as a limiter's `limit`).
pub(crate) fn config_failure(env: &Env, class: &str, prefix: &str, f: &Failure) -> Error {
    match f.detail {
        Detail::Config(e) => {
            let option = format!("{prefix}{}", camel(e.field()));
            let msg = format!(
                "{class}: invalid option `{option}`: {} (expected {})",
                crate::errors::describe(e.kind()),
                e.expected()
            );
            config_range_error(env, &option, e.kind(), &msg)
        }
        Detail::Argument { name, expected } => {
            let option = format!("{prefix}{}", camel(name));
            let msg = format!("{class}: option `{option}` must be {expected}");
            if f.code == GuardsResult::ConfigWrongType {
                type_error(env, &option, &msg)
            } else {
                range_error(env, &option, &msg)
            }
        }
        Detail::UnknownField { given, valid, .. } => {
            let option = format!("{prefix}{}", camel(given.as_str()));
            let valid: Vec<String> = valid.split(", ").map(camel).collect();
            let msg = format!(
                "{class}: unknown option `{option}` (valid options: {})",
                valid.join(", ")
            );
            type_error(env, &option, &msg)
        }
        _ => internal(env, &f.to_string()),
    }
}

/// A bug: should not happen.
pub(crate) fn internal(env: &Env, message: &str) -> Error {
    throw(env, "INTERNAL", message, Details::default())
}

/// A permit handed back a second time (or to another guard).
pub(crate) fn permit(env: &Env, code: GuardsResult) -> Error {
    let kind = match code {
        GuardsResult::PermitAlreadyReported => "PERMIT_ALREADY_REPORTED",
        GuardsResult::PermitWrongGuard => "PERMIT_WRONG_GUARD",
        _ => "PERMIT_UNKNOWN",
    };
    throw(env, kind, code.message(), Details::default())
}

/// What a refused config value must be, in words.
pub(crate) fn describe(kind: guards_core::ConfigErrorKind) -> &'static str {
    match kind.name() {
        "not_finite" => "must be a finite number",
        "negative" => "must not be negative",
        "zero" => "must not be zero",
        "out_of_range" => "is out of range",
        "inconsistent" => "contradicts another option",
        _ => "is invalid",
    }
}
