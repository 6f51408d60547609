//! The config schemas (ffi's `schema`) as seen from JavaScript: names in camelCase,
//! durations in ms. Used by the tests that check `index.d.ts`'s option interfaces against
//! the schemas, and by anyone generating docs.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::schema::{self, Range, Schema, Unit, Value};

use crate::convert::camel;
use crate::errors::type_error;

fn fields<'e, C: Copy>(env: &'e Env, s: &Schema<C>) -> Result<Vec<Object<'e>>> {
    s.fields
        .iter()
        .map(|f| {
            let mut o = Object::new(env)?;
            o.set("name", camel(f.name))?;
            let unit = match f.unit {
                Unit::Duration => "duration_ms",
                Unit::Count => "count",
                Unit::Ratio => "ratio",
                Unit::Bool => "bool",
                Unit::Enum(names) => {
                    o.set("values", names.to_vec())?;
                    "enum"
                }
                Unit::Flags(_) => "flags",
            };
            o.set("unit", unit)?;
            match (f.unit, f.default) {
                (Unit::Duration, Value::Uint(n)) => o.set("default", n as f64 / 1e6)?,
                (Unit::Enum(names), Value::Uint(i)) => {
                    o.set("default", names.get(i as usize).copied())?
                }
                (_, Value::Uint(n)) => o.set("default", n as f64)?,
                (_, Value::Float(x)) => o.set("default", x)?,
                (_, Value::Bool(b)) => o.set("default", b)?,
            }
            if let Range::Uint { min, max } = f.range {
                o.set("min", min as f64)?;
                o.set("max", max as f64)?;
            }
            o.set("expected", f.expected)?;
            o.set("doc", f.doc)?;
            Ok(o)
        })
        .collect()
}

/// The fields of config `name` (`'circuit_breaker'`, `'bulkhead'`, `'deadline'`,
/// `'backoff'`, `'retry_policy'`, `'token_budget'`, `'grpc_throttle'`,
/// `'aws_retry_quota'`, `'windowed_budget'`, `'latency_tracker'`, `'hedging'`,
/// `'adaptive_throttle'`, `'brownout'`, `'queue_discipline'`, `'aimd'`, `'vegas'`,
/// `'gradient'`, `'limiter'`, `'admission'`): `{ name, unit, default, expected, doc }`.
#[napi(
    catch_unwind,
    ts_args_type = "name: string",
    ts_return_type = "Array<ConfigField>"
)]
pub fn config_schema<'e>(env: &'e Env, name: Unknown<'_>) -> Result<Vec<Object<'e>>> {
    let name = crate::args::string(env, "name", &name)?;
    macro_rules! pick {
        ($($n:literal => $s:ident),* $(,)?) => {
            match name.as_str() {
                $($n => fields(env, &schema::$s),)*
                _ => Err(type_error(env, "name", &format!("no config schema named {name:?}"))),
            }
        };
    }
    pick!(
        "circuit_breaker" => CIRCUIT_BREAKER, "bulkhead" => BULKHEAD, "deadline" => DEADLINE,
        "backoff" => BACKOFF, "retry_policy" => RETRY_POLICY, "token_budget" => TOKEN_BUDGET,
        "grpc_throttle" => GRPC_THROTTLE, "aws_retry_quota" => AWS_RETRY_QUOTA,
        "windowed_budget" => WINDOWED_BUDGET, "latency_tracker" => LATENCY_TRACKER,
        "hedging" => HEDGING, "adaptive_throttle" => ADAPTIVE_THROTTLE, "brownout" => BROWNOUT,
        "queue_discipline" => QUEUE_DISCIPLINE, "aimd" => AIMD, "vegas" => VEGAS,
        "gradient" => GRADIENT, "limiter" => LIMITER, "admission" => ADMISSION,
    )
}
