//! Core configs from the arguments of a `new` step, through ffi's schemas: every value is
//! converted and range-checked by its schema field, then the whole config is validated by
//! core, so a config-rejection case checks the schema and core alike (and its error names
//! the field as the schema does).
//!
//! A config arrives flattened under `config.` (see [`Args::under`]); durations are
//! integer nanoseconds ([`DurationUnit::Nanos`]).

use guards_core::admission::AdmissionConfig;
use guards_core::brownout::BrownoutConfig;
use guards_core::deadline::DeadlineConfig;
use guards_core::limit::LimitConfig;
use guards_core::limiter::LimiterConfig;
use guards_core::retry_budget::RetryBudgetConfig;
use guards_core::retry_policy::{Idempotency, RetryPolicyConfig};
use guards_core::Nanos;

use super::value::{Args, Scalar};
use crate::error::{Failure, GuardsResult};
use crate::schema::{self, DurationUnit, Input, Schema};

/// The schema input of `v` for the field `name` of `schema`.
fn input<'a, C: Copy>(schema: &Schema<C>, name: &str, v: &'a Scalar) -> Result<Input<'a>, Failure> {
    Ok(match v {
        Scalar::Int(i) => Input::Int(*i),
        Scalar::Float(f) => Input::Float(*f),
        Scalar::Bool(b) => Input::Bool(*b),
        Scalar::Str(s) => Input::Str(s),
        Scalar::Null | Scalar::Bytes(_) => {
            return Err(match schema.field(name) {
                Some(f) => {
                    Failure::argument(GuardsResult::ConfigWrongType, f.name, f.unit.describe())
                }
                None => Failure::argument(
                    GuardsResult::ConfigUnknownField,
                    "config",
                    schema.field_names(),
                ),
            })
        }
    })
}

/// Set the fields `pairs` of `c` through `schema` (each converted and range-checked).
pub fn set_all<'a, C: Copy>(
    schema: &Schema<C>,
    c: &mut C,
    pairs: impl IntoIterator<Item = (&'a str, &'a Scalar)>,
) -> Result<(), Failure> {
    for (name, v) in pairs {
        let i = input(schema, name, v)?;
        schema.set(c, name, i, DurationUnit::Nanos)?;
    }
    Ok(())
}

/// The schema's defaults with `pairs` set, validated by core.
pub fn build<'a, C: Copy>(
    schema: &Schema<C>,
    pairs: impl IntoIterator<Item = (&'a str, &'a Scalar)>,
) -> Result<C, Failure> {
    let mut c = schema.defaults();
    set_all(schema, &mut c, pairs)?;
    schema.validate(&c)?;
    Ok(c)
}

/// The fields under `prefix` of a `new` step's arguments, built with `schema` (the usual
/// call: `build_under(&schema::CIRCUIT_BREAKER, args, "config")`).
pub fn build_under<C: Copy>(schema: &Schema<C>, args: &Args, prefix: &str) -> Result<C, Failure> {
    build(schema, args.under(prefix))
}

/// Whether `name` is `head` or starts with `head.` / `head[`.
fn is_under(name: &str, head: &str) -> bool {
    name.strip_prefix(head)
        .is_some_and(|r| r.is_empty() || r.starts_with('.') || r.starts_with('['))
}

fn str_arg<'a>(
    args: &'a Args,
    name: &str,
    field: &'static str,
) -> Result<Option<&'a str>, Failure> {
    match args.get(name) {
        None => Ok(None),
        Some(Scalar::Str(s)) => Ok(Some(s)),
        Some(_) => Err(Failure::argument(
            GuardsResult::ConfigWrongType,
            field,
            "a name (string)",
        )),
    }
}

/// A limit algorithm's config under `prefix` (`config` in `limit.json`, `config.limit` in
/// the limiter's and admission's): `algorithm` is `fixed` (with `limit`), `aimd`,
/// `vegas` or `gradient` (with that schema's fields).
pub fn limit(args: &Args, prefix: &str) -> Result<LimitConfig, Failure> {
    let algorithm =
        str_arg(args, &format!("{prefix}.algorithm"), "algorithm")?.ok_or(Failure::argument(
            GuardsResult::ConfigInvalid,
            "algorithm",
            "\"fixed\", \"aimd\", \"vegas\" or \"gradient\"",
        ))?;
    let fields = args.under(prefix).filter(|(n, _)| *n != "algorithm");
    Ok(match algorithm {
        "fixed" => {
            let mut n = u64::MAX;
            for (name, v) in fields {
                if name != "limit" {
                    return Err(Failure::argument(
                        GuardsResult::ConfigUnknownField,
                        "limit",
                        "a fixed limit has one field, `limit`",
                    ));
                }
                n = match v {
                    Scalar::Int(i) if *i < 0 => {
                        return Err(Failure::argument(
                            GuardsResult::ConfigNegative,
                            "limit",
                            "1..=u64::MAX",
                        ))
                    }
                    Scalar::Int(i) => u64::try_from(*i).map_err(|_| {
                        Failure::argument(GuardsResult::ConfigOutOfRange, "limit", "1..=u64::MAX")
                    })?,
                    _ => {
                        return Err(Failure::argument(
                            GuardsResult::ConfigWrongType,
                            "limit",
                            "a whole number",
                        ))
                    }
                };
            }
            LimitConfig::Fixed(n)
        }
        "aimd" => LimitConfig::Aimd(build(&schema::AIMD, fields)?),
        "vegas" => LimitConfig::Vegas(build(&schema::VEGAS, fields)?),
        "gradient" => LimitConfig::Gradient(build(&schema::GRADIENT, fields)?),
        _ => {
            return Err(Failure::argument(
                GuardsResult::ConfigOutOfRange,
                "algorithm",
                "\"fixed\", \"aimd\", \"vegas\" or \"gradient\"",
            ))
        }
    })
}

/// A limiter's config: the `LIMITER` schema's fields and, under `config.limit`, its limit
/// (default: the schema's, Vegas).
pub fn limiter(args: &Args) -> Result<LimiterConfig, Failure> {
    let mut c = schema::LIMITER.defaults();
    set_all(
        &schema::LIMITER,
        &mut c,
        args.under("config").filter(|(n, _)| !is_under(n, "limit")),
    )?;
    if args.under("config.limit").next().is_some() {
        c.limit = limit(args, "config.limit")?;
    }
    schema::LIMITER.validate(&c)?;
    Ok(c)
}

/// Admission's config: the `ADMISSION` schema's fields and, under `config.limit`, its
/// adaptive limit (default: none, a fixed limit of `u64::MAX`).
pub fn admission(args: &Args) -> Result<AdmissionConfig, Failure> {
    let mut c = schema::ADMISSION.defaults();
    set_all(
        &schema::ADMISSION,
        &mut c,
        args.under("config").filter(|(n, _)| !is_under(n, "limit")),
    )?;
    if args.under("config.limit").next().is_some() {
        c.limit = limit(args, "config.limit")?;
    }
    schema::ADMISSION.validate(&c)?;
    Ok(c)
}

/// A retry budget's config under `prefix`: `mode` (`token_bucket`, the default; `grpc`;
/// `aws`; `windowed`) and that mode's schema fields.
pub fn retry_budget(args: &Args, prefix: &str) -> Result<RetryBudgetConfig, Failure> {
    let mode = str_arg(args, &format!("{prefix}.mode"), "mode")?.unwrap_or("token_bucket");
    let fields = args.under(prefix).filter(|(n, _)| *n != "mode");
    Ok(match mode {
        "token_bucket" => RetryBudgetConfig::TokenBucket(build(&schema::TOKEN_BUDGET, fields)?),
        "grpc" => RetryBudgetConfig::Grpc(build(&schema::GRPC_THROTTLE, fields)?),
        "aws" => RetryBudgetConfig::Aws(build(&schema::AWS_RETRY_QUOTA, fields)?),
        "windowed" => RetryBudgetConfig::Windowed(build(&schema::WINDOWED_BUDGET, fields)?),
        _ => {
            return Err(Failure::argument(
                GuardsResult::ConfigOutOfRange,
                "mode",
                "\"token_bucket\", \"grpc\", \"aws\" or \"windowed\"",
            ))
        }
    })
}

/// The operations of a brownout table: `config.operations[i].key` and that operation's
/// `BROWNOUT` fields, in order.
pub fn brownout_operations(args: &Args) -> Result<Vec<(u64, BrownoutConfig)>, Failure> {
    let mut out = Vec::new();
    for i in 0.. {
        let prefix = format!("config.operations[{i}]");
        if args.under(&prefix).next().is_none() {
            break;
        }
        let key = match args.get(&format!("{prefix}.key")) {
            Some(Scalar::Int(k)) => u64::try_from(*k).map_err(|_| {
                Failure::argument(
                    GuardsResult::ConfigOutOfRange,
                    "key",
                    "a 64-bit operation key",
                )
            })?,
            _ => {
                return Err(Failure::argument(
                    GuardsResult::ConfigInvalid,
                    "key",
                    "a 64-bit operation key",
                ))
            }
        };
        let config = build(
            &schema::BROWNOUT,
            args.under(&prefix).filter(|(n, _)| *n != "key"),
        )?;
        out.push((key, config));
    }
    Ok(out)
}

/// What a retry driver case builds: the driver's settings, its policy and its budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryDriverSetup {
    /// The request's deadline (an instant), if any: `config.deadline`.
    pub deadline: Option<Nanos>,
    /// `config.idempotency` (default: idempotent).
    pub idempotency: Idempotency,
    /// `config.attempt_timeout` and `config.margin` (the `DEADLINE` schema).
    pub attempt: DeadlineConfig,
    /// `config.policy.*` (the `RETRY_POLICY` schema).
    pub policy: RetryPolicyConfig,
    /// `config.budget.*` (see [`retry_budget`]), if the case has one.
    pub budget: Option<RetryBudgetConfig>,
}

/// A retry driver case's setup.
pub fn retry_driver(args: &Args) -> Result<RetryDriverSetup, Failure> {
    let attempt = build(
        &schema::DEADLINE,
        args.under("config")
            .filter(|(n, _)| *n == "attempt_timeout" || *n == "margin"),
    )?;
    for (n, _) in args.under("config") {
        let known = ["attempt_timeout", "margin", "deadline", "idempotency"];
        if !known.contains(&n) && !is_under(n, "policy") && !is_under(n, "budget") {
            return Err(Failure::argument(
                GuardsResult::ConfigUnknownField,
                "config",
                "policy, budget, deadline, attempt_timeout, margin, idempotency",
            ));
        }
    }
    let deadline = match args.get("config.deadline") {
        None | Some(Scalar::Null) => None,
        Some(Scalar::Int(d)) => Some(Nanos(u64::try_from(*d).map_err(|_| {
            Failure::argument(
                GuardsResult::ConfigOutOfRange,
                "deadline",
                "an instant in nanoseconds",
            )
        })?)),
        Some(_) => {
            return Err(Failure::argument(
                GuardsResult::ConfigWrongType,
                "deadline",
                "an instant in nanoseconds",
            ))
        }
    };
    let idempotency = match str_arg(args, "config.idempotency", "idempotency")? {
        None => Idempotency::Idempotent,
        Some(s) => Idempotency::from_name(s).ok_or(Failure::argument(
            GuardsResult::ConfigOutOfRange,
            "idempotency",
            "\"idempotent\", \"keyed_side_effect\" or \"unkeyed_side_effect\"",
        ))?,
    };
    let policy = build(&schema::RETRY_POLICY, args.under("config.policy"))?;
    let budget = if args.under("config.budget").next().is_some() {
        Some(retry_budget(args, "config.budget")?)
    } else {
        None
    };
    Ok(RetryDriverSetup {
        deadline,
        idempotency,
        attempt,
        policy,
        budget,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::Reply;

    fn args(pairs: &[(&str, Scalar)]) -> Args {
        let mut a = Args::new();
        for (n, v) in pairs {
            a.set(*n, v.clone());
        }
        a
    }

    fn error_of(f: Failure) -> (String, String) {
        match Reply::from_failure(&f) {
            Reply::ConfigError { field, kind } => (field, kind),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nested_configs_name_their_fields() {
        let a = args(&[
            ("config.window", Scalar::Int(5)),
            ("config.limit.algorithm", "vegas".into()),
            ("config.limit.smoothing", Scalar::Float(f64::NAN)),
        ]);
        assert_eq!(
            error_of(limiter(&a).unwrap_err()),
            ("smoothing".into(), "not_finite".into())
        );
        let a = args(&[("config.limits[0]", Scalar::Int(10))]);
        assert_eq!(
            error_of(admission(&a).unwrap_err()),
            ("limits[1]".into(), "inconsistent".into())
        );
        let a = args(&[
            ("config.limit.algorithm", "fixed".into()),
            ("config.limit.limit", Scalar::Int(80)),
        ]);
        assert_eq!(limiter(&a).unwrap().limit, LimitConfig::Fixed(80));
    }

    #[test]
    fn a_value_no_field_can_hold_is_refused_by_the_schema() {
        let a = args(&[("config.interval", Scalar::Int(-1))]);
        assert_eq!(
            error_of(build_under(&schema::QUEUE_DISCIPLINE, &a, "config").unwrap_err()),
            ("interval".into(), "negative".into())
        );
        let a = args(&[("config.windw", Scalar::Int(1))]);
        assert_eq!(
            error_of(build_under(&schema::QUEUE_DISCIPLINE, &a, "config").unwrap_err()).1,
            "unknown_field"
        );
    }

    #[test]
    fn a_retry_driver_case_reads_its_parts() {
        let a = args(&[
            ("config.deadline", Scalar::Int(100)),
            ("config.policy.max_attempts", Scalar::Int(2)),
            ("config.budget.mode", "aws".into()),
            ("config.attempt_timeout", Scalar::Int(50)),
            ("config.margin", Scalar::Int(1)),
        ]);
        let s = retry_driver(&a).unwrap();
        assert_eq!(s.deadline, Some(Nanos(100)));
        assert_eq!(s.policy.max_attempts, 2);
        assert!(matches!(s.budget, Some(RetryBudgetConfig::Aws(_))));
        assert_eq!(s.attempt.attempt_timeout, Nanos(50));
    }
}
