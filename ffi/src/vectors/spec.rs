//! What the interpreter knows about each vector file's ops: their arguments (types,
//! defaults), which ones grant, use or look at a held permit, and how their results are
//! compared. A backend knows none of this: it is handed normalised arguments and returns
//! a result.
//!
//! The table is the encoding of `tests/vectors/README.md`, guard by guard.

use serde_json::Value;

use super::value::{non_finite, number, Scalar};

/// How an argument is read from a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A JSON integer.
    Int,
    /// A number: an integer, a float, or `"nan"` / `"inf"` / `"-inf"`.
    Num,
    /// A boolean.
    Bool,
    /// A string.
    Str,
    /// A 64-bit word written `"0x"` + 16 hex digits, passed as an integer.
    Hex,
    /// Bytes: the string `<name>` (its UTF-8 bytes) or the list of byte values
    /// `<name>_bytes`.
    Bytes,
    /// An integer or `null` (kept: `null` means "none" to the op).
    IntOrNull,
    /// An object of config fields, passed flattened under `<name>.`.
    Config,
}

/// Whether an argument must be given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Need {
    /// The step must give it.
    Required,
    /// Passed when given; `null` counts as not given.
    Optional,
    /// Passed as given, or as this integer.
    DefaultInt(i64),
    /// Passed as given, or as this string.
    DefaultStr(&'static str),
}

/// One argument of an op.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arg {
    pub name: &'static str,
    pub kind: Kind,
    pub need: Need,
}

const fn req(name: &'static str, kind: Kind) -> Arg {
    Arg {
        name,
        kind,
        need: Need::Required,
    }
}

const fn opt(name: &'static str, kind: Kind) -> Arg {
    Arg {
        name,
        kind,
        need: Need::Optional,
    }
}

const fn int_or(name: &'static str, default: i64) -> Arg {
    Arg {
        name,
        kind: Kind::Int,
        need: Need::DefaultInt(default),
    }
}

const fn str_or(name: &'static str, default: &'static str) -> Arg {
    Arg {
        name,
        kind: Kind::Str,
        need: Need::DefaultStr(default),
    }
}

/// How a held permit is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum By {
    /// By the name the step gives under this key; each name is a first-in-first-out list.
    Name(&'static str),
    /// By the index (0, 1, 2, ...) the step gives under this key, counting the case's
    /// grants in order.
    Index(&'static str),
}

impl By {
    pub(crate) fn key(self) -> &'static str {
        match self {
            By::Name(k) | By::Index(k) => k,
        }
    }
}

/// Which results mean a permit was granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Granted {
    /// The result has this path (whatever its value).
    Has(&'static str),
    /// The result has `true` at this path (`""`: the whole result is `true`).
    IsTrue(&'static str),
}

/// What happens to a granted permit the step gives no name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unnamed {
    /// Dropped unreported: it is not held.
    Drop,
    /// Held, then handed straight back with this op (e.g. `on_ignore`).
    Release(&'static str),
}

/// What an op does with held permits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Permits {
    /// Nothing.
    None,
    /// It may grant one.
    Grant {
        by: By,
        granted: Granted,
        unnamed: Unnamed,
    },
    /// It hands one back (it is held no more).
    Take { by: By, optional: bool },
    /// It reads one (it stays held).
    Peek { by: By },
}

/// How a result is compared with `expect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compare {
    /// Exactly: the same paths, the same values.
    Exact,
    /// Only the top-level keys `expect` names (counters, stats); each in full.
    Subset,
    /// `expect` is a 64-bit word written `"0x…"`; the result is the integer.
    Hex,
}

/// One op of a vector file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Op {
    pub name: &'static str,
    pub args: &'static [Arg],
    pub permits: Permits,
    pub compare: Compare,
    /// An extra rule of this file's encoding, applied to the normalised arguments.
    pub adjust: Option<fn(&mut super::value::Args)>,
}

const fn op(name: &'static str, args: &'static [Arg]) -> Op {
    Op {
        name,
        args,
        permits: Permits::None,
        compare: Compare::Exact,
        adjust: None,
    }
}

impl Op {
    const fn subset(mut self) -> Op {
        self.compare = Compare::Subset;
        self
    }

    const fn hex(mut self) -> Op {
        self.compare = Compare::Hex;
        self
    }

    const fn permits(mut self, p: Permits) -> Op {
        self.permits = p;
        self
    }

    const fn adjust(mut self, f: fn(&mut super::value::Args)) -> Op {
        self.adjust = Some(f);
        self
    }
}

/// One vector file's guard.
#[derive(Debug)]
pub(crate) struct Guard {
    /// The file's `guard` (and file name).
    pub name: &'static str,
    /// Case keys beyond `name`, `note`, `config`, `steps`, `expect_error`, `seed`.
    pub case_keys: &'static [&'static str],
    /// Its ops.
    pub ops: &'static [Op],
    /// Arguments of `new` beyond the config and the seed, from the case.
    pub new_args: fn(&Value) -> Vec<(&'static str, Scalar)>,
    /// A config leaf this file spells its own way, as a scalar (`Ok(None)`: the generic
    /// rule applies).
    pub leaf: fn(&str, &Value) -> Result<Option<Scalar>, String>,
}

impl Guard {
    pub(crate) fn op(&self, name: &str) -> Option<&'static Op> {
        self.ops.iter().find(|o| o.name == name)
    }
}

fn no_new_args(_: &Value) -> Vec<(&'static str, Scalar)> {
    Vec::new()
}

fn generic_leaf(_: &str, _: &Value) -> Result<Option<Scalar>, String> {
    Ok(None)
}

/// A config flattened under `prefix` into (path, scalar) pairs: nested objects joined with
/// `.`, lists as `[i]`, and `"nan"`, `"inf"`, `"-inf"` read as floats.
pub(crate) fn flatten_config(
    guard: &Guard,
    v: &Value,
    prefix: &str,
    out: &mut Vec<(String, Scalar)>,
) -> Result<(), String> {
    if let Some(s) = (guard.leaf)(prefix, v)? {
        out.push((prefix.to_owned(), s));
        return Ok(());
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                flatten_config(guard, x, &format!("{prefix}.{k}"), out)?;
            }
            Ok(())
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten_config(guard, x, &format!("{prefix}[{i}]"), out)?;
            }
            Ok(())
        }
        Value::String(s) => {
            let scalar = non_finite(s).map_or_else(|| Scalar::Str(s.clone()), Scalar::Float);
            out.push((prefix.to_owned(), scalar));
            Ok(())
        }
        other => {
            let scalar = match other {
                Value::Bool(b) => Scalar::Bool(*b),
                _ => number(other).unwrap_or(Scalar::Null),
            };
            out.push((prefix.to_owned(), scalar));
            Ok(())
        }
    }
}

use Kind::{Bool, Bytes, Config, Hex, Int, IntOrNull, Num, Str};

const NOW: Arg = req("now", Int);
const PRIORITY: Arg = req("priority", Int);
const KEY: Arg = opt("key", Int);

/// The named, first-in-first-out permits of the breaker, limiter and admission vectors.
const fn named(key: &'static str) -> By {
    By::Name(key)
}

// ---------------------------------------------------------------- adaptive_throttle

const ADAPTIVE_THROTTLE: &[Op] = &[
    op("should_reject", &[NOW]),
    op("on_accepted", &[NOW]),
    op("on_rejected_by_backend", &[NOW]),
    op("reject_probability", &[NOW]),
    op("window", &[NOW]),
    op("stats", &[]),
];

// ---------------------------------------------------------------- admission

const ADMISSION: &[Op] = &[
    op("try_acquire", &[NOW, PRIORITY]).permits(Permits::Grant {
        by: named("ticket"),
        granted: Granted::IsTrue("admitted"),
        unnamed: Unnamed::Release("on_ignore"),
    }),
    op("on_success", &[NOW]).permits(Permits::Take {
        by: named("ticket"),
        optional: false,
    }),
    op("on_dropped", &[NOW]).permits(Permits::Take {
        by: named("ticket"),
        optional: false,
    }),
    op("on_ignore", &[]).permits(Permits::Take {
        by: named("ticket"),
        optional: false,
    }),
    op("limit", &[]),
    op("in_flight", &[]),
    op("threshold", &[PRIORITY]),
    op("stats", &[]).subset(),
];

// ---------------------------------------------------------------- backoff

const RETRY: Arg = req("retry", Int);
const PREV: Arg = int_or("prev", 0);

const BACKOFF: &[Op] = &[
    op("ceiling", &[RETRY]),
    op("max_delay", &[RETRY]),
    op("delay", &[RETRY, PREV]),
    op("delay_from_bits", &[RETRY, PREV, req("bits", Hex)]),
    op("rng_next_u64", &[]).hex(),
    op("fnv1a64", &[req("id", Str)]).hex(),
    op("stable_offset", &[req("id", Str), req("period", Int)]),
    op(
        "next_stable_run",
        &[req("id", Str), req("period", Int), NOW],
    ),
];

// ---------------------------------------------------------------- brownout

const KIND: Arg = req("kind", Str);

const BROWNOUT: &[Op] = &[
    op("on_refusal", &[KIND, KEY]),
    op("decide", &[KIND]),
    op("on_full", &[KEY]),
    op("stats", &[KEY]),
    op("operation_key", &[req("name", Str)]).hex(),
    op("totals", &[]),
    op("unknown", &[]),
    op("register", &[req("key", Int), req("config", Config)]),
];

/// The refusal kinds, in bit order (`fallback_on` bit `i` = kind `i`).
fn refusal_kind_names() -> &'static [&'static str] {
    match crate::schema::BROWNOUT.field("fallback_on").map(|f| f.unit) {
        Some(crate::schema::Unit::Flags(names)) => names,
        _ => &[],
    }
}

/// `fallback_on` may be a list of kind names: passed as its bits.
fn brownout_leaf(path: &str, v: &Value) -> Result<Option<Scalar>, String> {
    if !path.ends_with("fallback_on") {
        return Ok(None);
    }
    let Value::Array(list) = v else {
        return Ok(None);
    };
    let names = refusal_kind_names();
    let mut bits = 0u64;
    for n in list {
        let name = n
            .as_str()
            .ok_or_else(|| format!("`{path}`: {n} is not a refusal kind name"))?;
        let i = names
            .iter()
            .position(|k| *k == name)
            .ok_or_else(|| format!("`{path}`: unknown refusal kind `{name}`"))?;
        bits |= 1 << i;
    }
    Ok(Some(Scalar::Int(i128::from(bits))))
}

fn brownout_new_args(case: &Value) -> Vec<(&'static str, Scalar)> {
    if case
        .get("config")
        .and_then(|c| c.get("operations"))
        .is_some()
    {
        // A table of 16 operations (the register cases fill it to that).
        vec![("capacity", Scalar::Int(16))]
    } else {
        Vec::new()
    }
}

// ---------------------------------------------------------------- bulkhead

const BULKHEAD: &[Op] = &[
    op("try_acquire", &[]).permits(Permits::Grant {
        by: By::Index("permit"),
        granted: Granted::IsTrue("acquired"),
        unnamed: Unnamed::Drop,
    }),
    op("release", &[]).permits(Permits::Take {
        by: By::Index("permit"),
        optional: false,
    }),
    op("in_flight", &[]),
    op("available", &[]),
    op("stats", &[]),
    op(
        "from_littles_law",
        &[
            req("rate_per_sec", Num),
            req("p99", Int),
            req("headroom", Num),
        ],
    ),
];

// ---------------------------------------------------------------- circuit_breaker

const CIRCUIT_BREAKER: &[Op] = &[
    op("try_acquire", &[NOW, KEY]).permits(Permits::Grant {
        by: named("as"),
        granted: Granted::Has("admitted"),
        unnamed: Unnamed::Drop,
    }),
    op("on_success", &[NOW, KEY]).permits(Permits::Take {
        by: named("permit"),
        optional: false,
    }),
    op("on_failure", &[NOW, KEY]).permits(Permits::Take {
        by: named("permit"),
        optional: false,
    }),
    op("on_ignore", &[KEY]).permits(Permits::Take {
        by: named("permit"),
        optional: false,
    }),
    op("state", &[NOW, KEY]),
    op("status", &[KEY]),
    op("window_counts", &[NOW, KEY]),
    op("stats", &[KEY]).subset(),
    op("get_or_insert", &[req("key", Int)]),
    op("len", &[]),
    op("key_of", &[req("bytes", Str)]).hex(),
];

fn breaker_new_args(case: &Value) -> Vec<(&'static str, Scalar)> {
    // The breakers of this file have 128 window cells: a larger window is refused.
    let mut out = vec![("capacity", Scalar::Int(128))];
    if let Some(n) = case.get("keyed_slots").and_then(Value::as_u64) {
        out.push(("keyed_slots", Scalar::Int(i128::from(n))));
    }
    out
}

// ---------------------------------------------------------------- deadline

const DEADLINE_ARG: Arg = req("deadline", IntOrNull);
const TIMEOUT: Arg = req("timeout", Int);
const VALUE: Arg = req("value", Bytes);

const DEADLINE: &[Op] = &[
    op("after", &[NOW, TIMEOUT]),
    op("time_left", &[DEADLINE_ARG, NOW]),
    op("is_expired", &[DEADLINE_ARG, NOW]),
    op("min", &[req("a", IntOrNull), req("b", IntOrNull)]),
    op("attempt_budget", &[DEADLINE_ARG, NOW]),
    op("encode_grpc_timeout", &[TIMEOUT]),
    op("encode_millis", &[TIMEOUT]),
    op("to_grpc_timeout", &[DEADLINE_ARG, NOW]),
    op("to_millis", &[DEADLINE_ARG, NOW]),
    op("parse_grpc_timeout", &[VALUE]),
    op("parse_millis", &[VALUE]),
    op("from_grpc_timeout", &[NOW, VALUE]),
    op("from_millis", &[NOW, VALUE]),
];

// ---------------------------------------------------------------- hedging

const HEDGING: &[Op] = &[
    op("record_latency", &[NOW, req("latency", Int)]),
    op("hedge_delay", &[NOW]),
    op(
        "should_hedge",
        &[
            NOW,
            req("request_started", Int),
            req("hedges_sent", Int),
            req("idempotent", Bool),
            opt("gate", Str),
        ],
    ),
    op("stats", &[]),
];

// ---------------------------------------------------------------- http

const NOW_UNIX: Arg = req("now_unix", Int);
const STATUS: Arg = req("status", Int);

const HTTP: &[Op] = &[
    op("outcome_of_status", &[STATUS, req("has_retry_after", Bool)]),
    op("classify", &[STATUS, opt("retry_after", Bytes), NOW_UNIX]),
    op("parse_retry_after", &[VALUE, NOW_UNIX]),
    op("parse_http_date", &[VALUE, NOW_UNIX]),
    op("format_http_date", &[req("unix", Int)]),
];

// ---------------------------------------------------------------- latency_tracker

const LATENCY_TRACKER: &[Op] = &[
    op("record", &[NOW, req("latency", Int)]),
    op("count", &[NOW]),
    op("quantile", &[NOW, req("q", Num)]),
    op("summary", &[NOW]),
    op("propose_timeout", &[NOW]),
    op("false_timeout_rate", &[NOW, TIMEOUT]),
    op("stats", &[]),
];

// ---------------------------------------------------------------- limit

const LIMIT: &[Op] = &[
    op(
        "update",
        &[
            NOW,
            req("rtt", Int),
            req("in_flight", Int),
            req("dropped", Bool),
        ],
    ),
    op("limit", &[]),
    op("estimate", &[]),
    op("min_rtt", &[]),
    op("long_rtt", &[]),
];

// ---------------------------------------------------------------- limiter

const LIMITER: &[Op] = &[
    op("try_acquire", &[NOW, PRIORITY]).permits(Permits::Grant {
        by: named("permit"),
        granted: Granted::IsTrue("admitted"),
        unnamed: Unnamed::Release("on_ignore"),
    }),
    op("on_success", &[NOW]).permits(Permits::Take {
        by: named("permit"),
        optional: false,
    }),
    op("on_dropped", &[NOW]).permits(Permits::Take {
        by: named("permit"),
        optional: false,
    }),
    op("on_ignore", &[]).permits(Permits::Take {
        by: named("permit"),
        optional: false,
    }),
    op("limit", &[]),
    op("in_flight", &[]),
    op("threshold", &[PRIORITY]),
    op("retry_after", &[]),
    op("stats", &[]).subset(),
];

// ---------------------------------------------------------------- outcome

const OUTCOME: &[Op] = &[
    op("verdicts", &[req("outcome", Str)]),
    op("from_number", &[req("number", Int)]),
    op("from_name", &[req("name", Str)]),
];

// ---------------------------------------------------------------- queue_discipline

const QUEUE_DISCIPLINE: &[Op] = &[
    op(
        "push",
        &[NOW, req("id", Int), PRIORITY, opt("deadline", Int)],
    ),
    op("pop", &[NOW]),
    op("expire", &[NOW]),
    op("remove", &[req("id", Int)]),
    op("len", &[]),
    op("len_by_priority", &[]),
    op("oldest_age", &[NOW]),
    op("is_standing", &[NOW]),
    op("stats", &[]),
];

fn queue_new_args(_: &Value) -> Vec<(&'static str, Scalar)> {
    // At least 128 slots: the largest capacity in the file is the default, 128.
    vec![("capacity", Scalar::Int(128))]
}

// ---------------------------------------------------------------- retry_budget

const NOW_OR_0: Arg = int_or("now", 0);
const CAUSE: Arg = str_or("cause", "transient");

const RETRY_BUDGET: &[Op] = &[
    op("deposit", &[NOW_OR_0]),
    op("withdraw", &[NOW_OR_0, CAUSE]).permits(Permits::Grant {
        by: By::Index("receipt"),
        granted: Granted::IsTrue(""),
        unnamed: Unnamed::Drop,
    }),
    op("allow_retry", &[NOW_OR_0, CAUSE]),
    op("on_success", &[NOW_OR_0]).permits(Permits::Take {
        by: By::Index("receipt"),
        optional: true,
    }),
    op("on_failure", &[NOW_OR_0]),
    op("tokens_micros", &[NOW_OR_0]),
    op("tokens", &[NOW_OR_0]),
    op("receipt_cost_micros", &[]).permits(Permits::Peek {
        by: By::Index("receipt"),
    }),
    op("stats", &[]),
];

// ---------------------------------------------------------------- retry_driver

const RETRY_DRIVER: &[Op] = &[
    op("start", &[NOW]),
    op(
        "report",
        &[NOW, req("outcome", Str), opt("retry_after", Int)],
    ),
    op("resume", &[NOW]),
    op("cancel", &[]),
    op("state", &[]),
    op("policy_stats", &[]).subset(),
    op("budget", &[NOW]).subset(),
];

// ---------------------------------------------------------------- retry_policy

/// This file's encoding: a Retry-After is only read with a throttled outcome.
fn retry_after_only_when_throttled(args: &mut super::value::Args) {
    if args.get("outcome") != Some(&Scalar::Str("throttled".into())) {
        args.remove("retry_after");
    }
}

const RETRY_POLICY: &[Op] = &[
    op(
        "decide",
        &[
            NOW,
            req("attempts_made", Int),
            req("outcome", Str),
            opt("retry_after", Int),
            str_or("idempotency", "idempotent"),
            opt("time_left", Int),
            int_or("prev_delay", 0),
            opt("gate", Str),
        ],
    )
    .adjust(retry_after_only_when_throttled),
    op("gate_calls", &[]),
    op("stats", &[]),
    op("worst_case_time", &[req("attempt_timeout", Int)]),
    op("rng_next_u64", &[]).hex(),
];

// ---------------------------------------------------------------- the table

const fn guard(name: &'static str, ops: &'static [Op]) -> Guard {
    Guard {
        name,
        case_keys: &[],
        ops,
        new_args: no_new_args,
        leaf: generic_leaf,
    }
}

/// Every vector file's guard, by file name.
pub(crate) static GUARDS: &[Guard] = &[
    guard("adaptive_throttle", ADAPTIVE_THROTTLE),
    guard("admission", ADMISSION),
    guard("backoff", BACKOFF),
    Guard {
        new_args: brownout_new_args,
        leaf: brownout_leaf,
        ..guard("brownout", BROWNOUT)
    },
    guard("bulkhead", BULKHEAD),
    Guard {
        case_keys: &["keyed_slots"],
        new_args: breaker_new_args,
        ..guard("circuit_breaker", CIRCUIT_BREAKER)
    },
    guard("deadline", DEADLINE),
    guard("hedging", HEDGING),
    guard("http", HTTP),
    guard("latency_tracker", LATENCY_TRACKER),
    guard("limit", LIMIT),
    guard("limiter", LIMITER),
    guard("outcome", OUTCOME),
    Guard {
        new_args: queue_new_args,
        ..guard("queue_discipline", QUEUE_DISCIPLINE)
    },
    guard("retry_budget", RETRY_BUDGET),
    guard("retry_driver", RETRY_DRIVER),
    guard("retry_policy", RETRY_POLICY),
];

/// The guard of a vector file.
pub(crate) fn guard_named(name: &str) -> Option<&'static Guard> {
    GUARDS.iter().find(|g| g.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_kinds_come_from_the_schema() {
        assert_eq!(refusal_kind_names().len(), 7);
        assert_eq!(
            brownout_leaf(
                "config.fallback_on",
                &serde_json::json!(["breaker_open", "timeout"])
            ),
            Ok(Some(Scalar::Int(0b1_0001)))
        );
        assert!(brownout_leaf("config.fallback_on", &serde_json::json!(["nope"])).is_err());
        assert_eq!(
            brownout_leaf("config.fallback_on", &serde_json::json!(5)),
            Ok(None)
        );
    }

    #[test]
    fn op_names_are_unique_per_guard() {
        for g in GUARDS {
            for (i, o) in g.ops.iter().enumerate() {
                assert!(
                    g.ops.iter().skip(i + 1).all(|p| p.name != o.name),
                    "{}: {} twice",
                    g.name,
                    o.name
                );
                let keys: Vec<_> = o.args.iter().map(|a| a.name).collect();
                for k in &keys {
                    assert_ne!(*k, "hold", "{}: `hold` is the protocol's", g.name);
                }
            }
        }
    }
}
