//! The schemas agree with core: every default is core's `Default`, and every numeric
//! field's bounds are where core's `validate` draws them (the minimum accepted and just
//! below it refused, the maximum accepted and just above it refused, NaN and infinities
//! refused), with the same error kind and field name on both sides. Then the builder:
//! unknown names, wrong types, duration conventions.

use guards::error::{Detail, GuardsResult};
use guards::schema::{self, DurationUnit, Field, Input, Range, Schema, Unit, Value};
use guards_core::ConfigErrorKind;

fn next_up(x: f64) -> f64 {
    if x == 0.0 {
        f64::from_bits(1)
    } else if x > 0.0 {
        f64::from_bits(x.to_bits() + 1)
    } else {
        f64::from_bits(x.to_bits() - 1)
    }
}

fn next_down(x: f64) -> f64 {
    -next_up(-x)
}

/// Set field `name` of `c` to `v` without checks.
fn put<C: Copy>(s: &Schema<C>, c: &mut C, name: &str, v: Value) {
    s.field(name)
        .unwrap_or_else(|| panic!("{}: no field {name}", s.name))
        .set_unchecked(c, v);
}

/// Companion settings that let `field` reach the ends of its own range without
/// contradicting another field (core reports such a contradiction as `inconsistent`).
/// They never widen the field's own range.
fn relax<C: Copy>(s: &Schema<C>, field: &str, c: &mut C) {
    use Value::{Float as F, Uint as U};
    const DAY: u64 = 86_400_000_000_000;
    let mut p = |name: &str, v: Value| put(s, c, name, v);
    match (s.name, field) {
        ("circuit_breaker", "window_duration") => p("window_buckets", U(1)),
        ("circuit_breaker", "window_buckets") => p("window_duration", U(21_845_000_000_000)),
        ("circuit_breaker", "minimum_calls") => p("window_kind", U(1)),
        ("circuit_breaker", "open_duration") => p("max_open_duration", U(366 * DAY)),
        ("circuit_breaker", "max_open_duration") => p("open_duration", U(1_000)),
        ("deadline", "margin") => p("attempt_timeout", U(DAY)),
        ("deadline", "attempt_timeout") => p("margin", U(0)),
        ("backoff", "base") | ("retry_policy", "backoff.base") => {
            p(&field.replace("base", "cap"), U(DAY))
        }
        ("backoff", "cap") | ("retry_policy", "backoff.cap") => {
            p(&field.replace("cap", "base"), U(1))
        }
        ("aws_retry_quota", f) if f != "capacity" => p("capacity", U(1_000_000_000)),
        ("aws_retry_quota", "capacity") => {
            for f in [
                "transient_cost",
                "timeout_cost",
                "throttled_cost",
                "hedge_cost",
            ] {
                p(f, U(0));
            }
            p("success_increment", U(0));
        }
        ("hedging", "min_delay") => p("max_delay", U(3_600_000_000_000)),
        ("hedging", "max_delay") => p("min_delay", U(0)),
        ("queue_discipline", "target") => p("interval", U(3_600_000_000_000)),
        ("queue_discipline", "interval") => p("target", U(0)),
        ("aimd" | "vegas" | "gradient", "initial_limit" | "min_limit" | "max_limit") => {
            // Each of the three at an end: the others follow so min <= initial <= max.
            p("min_limit", U(1));
            p("max_limit", U(1_000_000));
            if field == "min_limit" {
                p("initial_limit", U(1_000_000));
            }
            if field == "max_limit" {
                p("initial_limit", U(1));
            }
        }
        ("vegas", "alpha" | "beta" | "threshold") => {
            // threshold <= alpha <= beta: pin the other two to the field's end later by
            // letting them span the whole range.
            p("threshold", F(0.0));
            p("beta", F(1000.0));
            if field == "beta" {
                p("alpha", F(0.0));
            }
            if field == "threshold" {
                p("alpha", F(1000.0));
            }
        }
        ("limiter" | "admission", "min_retry_after") => p("max_retry_after", U(DAY)),
        ("limiter" | "admission", "max_retry_after") => p("min_retry_after", U(0)),
        _ => {}
    }
    // Per-priority arrays must not grow with the class: make every other class equal to
    // the probed one at its ends by setting them all from the probe (see `probe`).
}

/// The per-class array a field belongs to, if any: its fields in class order.
fn class_array<C: Copy>(s: &Schema<C>, field: &str) -> Option<Vec<&'static Field<C>>> {
    let stem = field.split_once('[')?;
    let rest = stem.1.split_once(']')?.1;
    Some(
        (0..8)
            .filter_map(|i| s.field(&format!("{}[{i}]{rest}", stem.0)))
            .collect(),
    )
}

/// Validate `c` with `field` at `v` (per-class arrays: every class at `v`, so the
/// non-increasing rule holds), returning core's verdict.
fn core_verdict<C: Copy>(
    s: &Schema<C>,
    f: &Field<C>,
    v: Value,
) -> Result<(), (String, ConfigErrorKind)> {
    let mut c = s.defaults();
    relax(s, f.name, &mut c);
    match class_array(s, f.name) {
        Some(all) => all.iter().for_each(|g| g.set_unchecked(&mut c, v)),
        None => f.set_unchecked(&mut c, v),
    }
    s.validate(&c).map_err(|e| match e.detail {
        Detail::Config(ce) => (ce.field().to_owned(), ce.kind()),
        other => panic!("{}: not a config error: {other:?}", f.name),
    })
}

/// Both sides accept `v` for `f`.
fn accepted<C: Copy>(s: &Schema<C>, f: &Field<C>, v: Value, what: &str) {
    assert!(
        f.check_value(v).is_ok(),
        "{}.{} {what} {v}: schema refuses it",
        s.name,
        f.name
    );
    if let Err(e) = core_verdict(s, f, v) {
        panic!("{}.{} {what} {v}: core refuses it: {e:?}", s.name, f.name);
    }
}

/// Both sides refuse `v` for `f`, naming `f` (for per-class arrays: the first class)
/// with the same kind.
fn refused<C: Copy>(s: &Schema<C>, f: &Field<C>, v: Value, what: &str) {
    let schema_err = f.check_value(v).expect_err(&format!(
        "{}.{} {what} {v}: schema accepts it",
        s.name, f.name
    ));
    let Detail::Config(se) = schema_err.detail else {
        panic!("{}.{}: {schema_err:?}", s.name, f.name)
    };
    let (field, kind) = core_verdict(s, f, v).expect_err(&format!(
        "{}.{} {what} {v}: core accepts it",
        s.name, f.name
    ));
    let named = class_array(s, f.name)
        .and_then(|all| all.first().map(|g| g.name))
        .unwrap_or(f.name);
    assert_eq!(
        field, named,
        "{}.{} {what} {v}: core names another field",
        s.name, f.name
    );
    // Where the schema's end is set by a companion at its own end (deadline.margin below
    // the largest attempt_timeout), core calls the same refusal a contradiction.
    let contradiction =
        kind == ConfigErrorKind::Inconsistent && se.kind() == ConfigErrorKind::OutOfRange;
    assert!(
        kind == se.kind() || contradiction,
        "{}.{} {what} {v}: kinds differ: core {kind:?}, schema {:?}",
        s.name,
        f.name,
        se.kind()
    );
}

fn check_schema<C: Copy + Default + PartialEq + std::fmt::Debug>(s: &Schema<C>) -> usize {
    // Defaults: the whole config and each field.
    let core = C::default();
    assert_eq!(
        s.defaults(),
        core,
        "{}: defaults differ from core's Default",
        s.name
    );
    for f in s.fields {
        assert_eq!(f.get(&core), f.default, "{}.{}: default", s.name, f.name);
        assert!(
            f.check_value(f.default).is_ok(),
            "{}.{}: default out of range",
            s.name,
            f.name
        );
        assert!(!f.doc.is_empty() && !f.expected.is_empty());
    }
    s.validate(&s.defaults()).unwrap();
    // Bounds.
    let mut probes = 0;
    for f in s.fields {
        match f.range {
            Range::Uint { min, max } => {
                accepted(s, f, Value::Uint(min), "min");
                accepted(s, f, Value::Uint(max), "max");
                if min > 0 {
                    refused(s, f, Value::Uint(min - 1), "just below min");
                }
                if max < u64::MAX {
                    refused(s, f, Value::Uint(max + 1), "just above max");
                }
                probes += 2 + usize::from(min > 0) + usize::from(max < u64::MAX);
            }
            Range::Float {
                min,
                min_exclusive,
                max,
                max_exclusive,
            } => {
                if min_exclusive {
                    refused(s, f, Value::Float(min), "exclusive min");
                } else {
                    accepted(s, f, Value::Float(min), "min");
                    refused(s, f, Value::Float(next_down(min)), "just below min");
                }
                if max_exclusive {
                    refused(s, f, Value::Float(max), "exclusive max");
                    accepted(s, f, Value::Float(next_down(max)), "just below max");
                } else {
                    accepted(s, f, Value::Float(max), "max");
                    refused(s, f, Value::Float(next_up(max)), "just above max");
                }
                for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                    refused(s, f, Value::Float(v), "non-finite");
                }
                probes += 7;
            }
            Range::Any => {}
        }
        if let Unit::Enum(names) = f.unit {
            for (i, n) in names.iter().enumerate() {
                let v = f.check(Input::Str(n), DurationUnit::Nanos).unwrap();
                assert_eq!(v, Value::Uint(i as u64));
                let mut c = s.defaults();
                f.set_unchecked(&mut c, v);
                assert_eq!(
                    f.get(&c),
                    v,
                    "{}.{}: {n} does not round-trip",
                    s.name,
                    f.name
                );
            }
        }
    }
    probes
}

#[test]
fn every_schema_agrees_with_core() {
    let mut total = 0;
    macro_rules! check {
        ($s:ident) => {
            total += check_schema(&schema::$s);
        };
    }
    guards::for_each_schema!(check);
    // 19 schemas; a count, so a schema that silently lost its numeric fields shows up.
    println!("{total} bound probes");
    assert!(total > 400, "only {total} bound probes");
}

#[test]
fn field_names_are_unique_and_listed() {
    macro_rules! check {
        ($s:ident) => {{
            let s = &schema::$s;
            let mut seen = std::collections::HashSet::new();
            for f in s.fields {
                assert!(seen.insert(f.name), "{}: {} twice", s.name, f.name);
                assert!(s.field_names().split(", ").any(|n| n == f.name));
            }
            assert_eq!(s.field_names().split(", ").count(), s.fields.len());
        }};
    }
    guards::for_each_schema!(check);
}

#[test]
fn builder_names_the_field() {
    let s = &schema::CIRCUIT_BREAKER;
    let build = |pairs: &[(&str, Input<'_>)]| s.build(pairs.iter().copied(), DurationUnit::Secs);

    let e = build(&[("windw_size", Input::Int(3))]).unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigUnknownField);
    let msg = e.to_string();
    assert!(
        msg.contains("`windw_size`") && msg.contains("window_size, window_duration"),
        "{msg}"
    );

    let e = build(&[("window_size", Input::Float(3.0))]).unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigWrongType);
    assert!(e.to_string().contains("window_size"));
    let e = build(&[("window_kind", Input::Int(1))]).unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigWrongType);
    let e = build(&[("window_kind", Input::Str("sliding"))]).unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigOutOfRange);
    assert!(e.to_string().contains("\"count\" or \"time\""), "{e}");

    let e = build(&[("window_size", Input::Int(-1))]).unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigNegative);
    let e = build(&[("window_size", Input::Int(1 << 80))]).unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigOutOfRange);
    let e = build(&[("window_size", Input::Int(65_537))]).unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigOutOfRange);
    assert!(e.to_string().contains("1..=65536"), "{e}");
    let e = build(&[("failure_rate_threshold", Input::Float(f64::NAN))]).unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigNotFinite);
    let e = build(&[("open_duration", Input::Float(-0.5))]).unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigNegative);
    let e = build(&[("open_duration", Input::Float(f64::INFINITY))]).unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigNotFinite);
    let e = build(&[("open_duration", Input::Float(1e12))]).unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigOutOfRange);
    // A contradiction between fields is core's to report, after the fields are set.
    let e = build(&[("open_duration", Input::Int(400))]).unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigInconsistent);
    assert!(e.to_string().contains("max_open_duration"));
}

#[test]
fn durations_follow_each_binding_convention() {
    let s = &schema::CIRCUIT_BREAKER;
    let open = |input, unit| {
        s.build([("open_duration", input)], unit)
            .unwrap()
            .open_duration
            .0
    };
    assert_eq!(open(Input::Int(2), DurationUnit::Secs), 2_000_000_000);
    assert_eq!(open(Input::Float(0.25), DurationUnit::Secs), 250_000_000);
    assert_eq!(open(Input::Int(250), DurationUnit::Millis), 250_000_000);
    assert_eq!(open(Input::Float(1.5), DurationUnit::Millis), 1_500_000);
    assert_eq!(open(Input::Int(1_000), DurationUnit::Nanos), 1_000);
    assert_eq!(open(Input::Nanos(123_456), DurationUnit::Secs), 123_456);
    let c = s
        .build(
            [
                ("window_kind", Input::Str("time")),
                ("window_buckets", Input::Int(5)),
            ],
            DurationUnit::Secs,
        )
        .unwrap();
    assert_eq!(c.window_buckets, 5);
    assert_eq!(
        c.window_kind,
        guards_core::circuit_breaker::WindowKind::Time
    );
    let q = schema::QUEUE_DISCIPLINE
        .build([("lifo", Input::Bool(false))], DurationUnit::Secs)
        .unwrap();
    assert!(!q.lifo);
    let e = schema::QUEUE_DISCIPLINE
        .build([("lifo", Input::Int(0))], DurationUnit::Secs)
        .unwrap_err();
    assert_eq!(e.code, GuardsResult::ConfigWrongType);
}

#[test]
fn c_defaults_come_from_the_schema() {
    let c = guards::c::circuit_breaker::guards_circuit_breaker_config::of_defaults();
    let (core, capacity) = c.to_core().unwrap();
    assert_eq!(core, schema::CIRCUIT_BREAKER.defaults());
    assert_eq!(capacity, 0);
}
