//! Every file of `tests/vectors` replayed by the shared interpreter (`guards::vectors`)
//! with Rust backends:
//!
//! - (a) `core_backend`: every step run directly on guards-core (what
//!   `core/tests/conformance` did before the interpreter moved into ffi);
//! - (b) the same backend driven through the step protocol's C ABI (`c_protocol`), as a C
//!   or any foreign driver drives it: the steps it reads back and the report must be
//!   identical to (a)'s.
//!
//! And the interpreter's own promises: a difference is reported with its file, line,
//! case, step, arguments, expected and got; a value a backend cannot observe is counted,
//! never passed as equal; a guard a backend lacks is "not covered", never passed.
#![cfg(not(loom))]

mod c_protocol;
mod core_backend;

use std::collections::BTreeSet;
use std::path::PathBuf;

use guards::vectors::{Backend, CaseOutcome, Entry, Record, Reply, Report, Role, Session, Step};

use core_backend::CoreBackend;

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests")
        .join("vectors")
}

fn run_core() -> (Report, Vec<(Step, Reply)>) {
    let mut s = Session::open(vectors_dir()).expect("tests/vectors");
    s.keep_transcript();
    s.run(&mut CoreBackend::default());
    (s.report().clone(), s.transcript().to_vec())
}

#[test]
fn every_vector_file_passes_on_core() {
    let (report, transcript) = run_core();
    let s = report.summary();
    assert!(report.ok(), "{report}");
    // Core observes everything and runs every case: nothing unobserved, nothing skipped.
    assert_eq!(s.not_covered, 0, "{report}");
    assert_eq!(s.unobserved, 0, "{report}");
    assert_eq!(s.passed, s.cases, "{report}");
    // Every guard the interpreter knows has its file, and every file was replayed.
    let files: BTreeSet<_> = report.files.iter().map(|f| f.file.clone()).collect();
    let guards: BTreeSet<_> = guards::vectors::guard_names()
        .map(|g| format!("{g}.json"))
        .collect();
    assert_eq!(files, guards);
    for f in &report.files {
        assert!(!f.cases.is_empty(), "{}: no cases", f.file);
    }
    // The call-contract files (the Python runner skipped their 25 cases) ran too.
    for (file, cases) in [
        ("outcome.json", 2),
        ("http.json", 7),
        ("retry_driver.json", 16),
    ] {
        let f = report.file(file).unwrap();
        assert_eq!(f.cases.len(), cases, "{file}");
        assert_eq!(f.summary().passed, cases, "{file}");
    }
    // Every case built a guard (or was refused its config) and every built one was freed.
    let built = transcript
        .iter()
        .filter(|(st, r)| st.origin.role == Role::Build && matches!(r, Reply::Result(_)))
        .count();
    let freed = transcript
        .iter()
        .filter(|(st, _)| st.origin.role == Role::Free)
        .count();
    assert_eq!(built, freed);
    println!("{report}");
}

#[test]
fn the_c_abi_protocol_gives_the_same_steps_and_results() {
    let (report, transcript) = run_core();
    let c = c_protocol::replay_path(&vectors_dir(), &mut CoreBackend::default());
    // Every step, read back through the C getters, equals the one handed out in-process:
    // same guard, op, argument names, kinds and values (floats bit for bit), same origin.
    assert_eq!(c.steps.len(), transcript.len());
    for (i, (cs, (rs, _))) in c.steps.iter().zip(&transcript).enumerate() {
        assert_eq!(format!("{cs:?}"), format!("{rs:?}"), "step {i}");
    }
    // And the results written through the C setters compare the same way: same report.
    assert_eq!(c.report, report.to_string());
    let s = report.summary();
    assert_eq!(c.summary.cases, s.cases as u64);
    assert_eq!(c.summary.passed, s.passed as u64);
    assert_eq!(c.summary.compared, s.compared as u64);
    assert_eq!(c.summary.ok, 1);
}

/// The bulkhead file with one expected value changed.
fn tampered_bulkhead() -> String {
    let text = std::fs::read_to_string(vectors_dir().join("bulkhead.json")).unwrap();
    let needle = "{\"acquired\": false, \"in_flight\": 1, \"max_concurrent\": 1}, \"repeat\": 3";
    assert!(
        text.contains(needle),
        "the bulkhead file changed: update this test"
    );
    text.replacen(
        needle,
        "{\"acquired\": false, \"in_flight\": 3, \"max_concurrent\": 1}, \"repeat\": 3",
        1,
    )
}

#[test]
fn a_difference_is_reported_with_where_and_what() {
    let text = tampered_bulkhead();
    let mut s = Session::from_text("bulkhead.json", &text);
    let report = s.run(&mut CoreBackend::default()).clone();
    assert!(!report.ok());
    assert_eq!(report.summary().failed, 1, "{report}");
    let failed = report.files[0]
        .cases
        .iter()
        .find(|c| matches!(c.outcome, CaseOutcome::Failed(_)))
        .unwrap();
    let CaseOutcome::Failed(m) = &failed.outcome else {
        unreachable!()
    };
    assert_eq!(m.op, "try_acquire");
    assert!(m.step.is_some());
    assert_eq!(m.detail, "at `in_flight`: expected 3, got 1");
    assert_eq!((m.repetition, m.repeat), (1, 3));
    assert_eq!(m.expected["in_flight"], 3);
    assert_eq!(m.got["in_flight"], 1);
    let line = failed.line.unwrap();
    assert!(
        text.lines().nth(line - 1).unwrap().contains(&failed.name),
        "line {line} names the case"
    );
    let shown = report.to_string();
    assert!(
        shown.contains(&format!(
            "FAILED bulkhead.json:{line}: case `{}`",
            failed.name
        )),
        "{shown}"
    );
    assert!(
        shown.contains("(repetition 1 of 3): at `in_flight`: expected 3, got 1"),
        "{shown}"
    );
    // Through the C ABI: the same report, so the C setters wrote the same `got`.
    let c = c_protocol::replay_text("bulkhead.json", &text, &mut CoreBackend::default());
    assert_eq!(c.report, shown);
    assert_eq!(c.summary.ok, 0);
}

/// Core, seen through an API that lacks some guards and hides some values: a stand-in
/// for a binding that is not complete yet.
struct Partial {
    core: CoreBackend,
}

impl Backend for Partial {
    fn run(&mut self, step: &Step) -> Reply {
        if step.guard == "http" {
            return Reply::Unsupported("no HTTP helpers here".into());
        }
        let reply = self.core.run(step);
        match (step.guard, step.op, reply) {
            ("circuit_breaker", "try_acquire", Reply::Result(r)) => {
                let mut hidden = Record::new();
                for (p, e) in r.entries() {
                    let e = if p == "generation" {
                        Entry::Unobservable
                    } else {
                        e.clone()
                    };
                    hidden.put(p, e);
                }
                Reply::Result(hidden)
            }
            ("circuit_breaker", "status", Reply::Result(_)) => {
                Reply::Result(Record::unobservable())
            }
            ("circuit_breaker", "get_or_insert", _) => {
                Reply::Unsupported("no keyed breakers here".into())
            }
            (_, _, reply) => reply,
        }
    }
}

#[test]
fn what_a_backend_cannot_do_is_reported_never_passed() {
    let mut s = Session::open(vectors_dir()).unwrap();
    let report = s
        .run(&mut Partial {
            core: CoreBackend::default(),
        })
        .clone();
    assert!(report.ok(), "{report}");
    let http = report.file("http.json").unwrap().summary();
    assert_eq!(http.not_covered, http.cases);
    assert_eq!(http.passed, 0);
    let cb = report.file("circuit_breaker.json").unwrap().summary();
    assert!(cb.partly_observed > 0 && cb.unobserved > 0, "{cb:?}");
    assert!(cb.not_covered > 0, "the keyed cases: {cb:?}");
    let shown = report.to_string();
    assert!(
        shown.contains("http.json: 7 cases: not yet covered (no HTTP helpers here)"),
        "{shown}"
    );
    assert!(
        shown.contains("not covered: `get_or_insert`: no keyed breakers here"),
        "{shown}"
    );
    // A hidden value is not a free pass: a wrong visible value still fails.
    let text = std::fs::read_to_string(vectors_dir().join("circuit_breaker.json")).unwrap();
    let wrong = text.replacen("\"admitted\": \"call\"", "\"admitted\": \"probe\"", 1);
    let mut s = Session::from_text("circuit_breaker.json", &wrong);
    let report = s
        .run(&mut Partial {
            core: CoreBackend::default(),
        })
        .clone();
    assert_eq!(report.summary().failed, 1, "{report}");
}

#[test]
fn mistakes_in_a_file_are_file_errors() {
    for (text, want) in [
        (
            r#"{"guard": "bulkhead", "cases": [{"name": "a", "steps": [{"op": "release", "permit": 0}]}]}"#,
            "permit 0 is not held",
        ),
        (
            r#"{"guard": "limiter", "cases": [{"name": "a", "steps": [{"op": "on_success", "now": 0, "permit": "p"}]}]}"#,
            "no permit held under the name `p`",
        ),
        (
            r#"{"guard": "bulkhead", "cases": [{"name": "a", "steps": [{"op": "fly"}]}]}"#,
            "no op `fly`",
        ),
    ] {
        let mut s = Session::from_text(
            &format!(
                "{}.json",
                serde_json::from_str::<serde_json::Value>(text).unwrap()["guard"]
                    .as_str()
                    .unwrap()
            ),
            text,
        );
        let report = s.run(&mut CoreBackend::default()).clone();
        assert_eq!(report.summary().file_errors, 1, "{report}");
        assert!(report.to_string().contains(want), "{report}");
    }
}

#[test]
fn a_config_error_must_name_the_field_and_kind() {
    let text = r#"{"guard": "bulkhead", "cases": [
        {"name": "right", "config": {"max_concurrent": 0}, "expect_error": {"field": "max_concurrent", "kind": "zero"}},
        {"name": "wrong_kind", "config": {"max_concurrent": 0}, "expect_error": {"field": "max_concurrent", "kind": "negative"}},
        {"name": "accepted", "config": {"max_concurrent": 1}, "expect_error": {"field": "max_concurrent", "kind": "zero"}},
        {"name": "typo", "config": {"max_concurent": 1}, "steps": [{"op": "in_flight", "expect": 0}]}]}"#;
    let mut s = Session::from_text("bulkhead.json", text);
    s.keep_transcript();
    let report = s.run(&mut CoreBackend::default()).clone();
    let outcomes: Vec<_> = report.files[0]
        .cases
        .iter()
        .map(|c| matches!(c.outcome, CaseOutcome::Passed { .. }))
        .collect();
    assert_eq!(outcomes, [true, false, false, false], "{report}");
    let shown = report.to_string();
    assert!(shown.contains("the config was accepted"), "{shown}");
    assert!(shown.contains("unknown_field"), "{shown}");
    // The accepted guard was freed; the refused ones never built anything to free.
    let frees = s
        .transcript()
        .iter()
        .filter(|(st, _)| st.op == "free")
        .count();
    assert_eq!(frees, 1);
}

/// Every `expect` of every file is compared: changing any one of them (to a value no op
/// returns) fails its case at that step.
#[test]
fn no_expectation_goes_unchecked() {
    let mut checked = 0;
    for entry in std::fs::read_dir(vectors_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let file: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for case in file["cases"].as_array().unwrap() {
            let Some(steps) = case["steps"].as_array() else {
                continue;
            };
            for (i, step) in steps.iter().enumerate() {
                if step.get("expect").is_none() {
                    continue;
                }
                let mut c = case.clone();
                // A value no op returns; counters (compared by name) get a name none has.
                c["steps"][i]["expect"] = if step["expect"].is_object() {
                    serde_json::json!({"no_such_key": 0})
                } else {
                    serde_json::json!("0xffffffffffffffff")
                };
                let mut one = file.clone();
                one["cases"] = serde_json::json!([c]);
                let mut s = Session::from_text(&name, &one.to_string());
                let report = s.run(&mut CoreBackend::default()).clone();
                let outcome = &report.files[0].cases[0].outcome;
                let failed_here = matches!(outcome, CaseOutcome::Failed(m) if m.step == Some(i));
                assert!(
                    failed_here,
                    "{name} case `{}` step {i}: {outcome:?}",
                    case["name"]
                );
                checked += 1;
            }
        }
    }
    println!("{checked} expectations checked");
    assert!(checked > 1000, "{checked}");
}
