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
mod model;

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

/// The C ABI of the protocol refuses bad input with a code, and never crashes.
#[test]
fn the_c_abi_refuses_bad_input() {
    use guards::error::GuardsResult as R;
    use guards::vectors::c_abi::*;
    use std::ffi::CString;
    use std::ptr::{null, null_mut};

    let text = r#"{"guard": "bulkhead", "cases": [{"name": "a",
        "config": {"max_concurrent": 1},
        "steps": [{"op": "from_littles_law", "rate_per_sec": -1, "p99": 5, "headroom": 1.5}]}]}"#;
    let name = CString::new("bulkhead.json").unwrap();
    let mut v: *mut guards_vectors = null_mut();
    let c = |s: &str| CString::new(s).unwrap();
    // SAFETY: every pointer passed is NULL or valid for what the function
    // reads or writes; `v` is a live session until freed at the end.
    unsafe {
        assert_eq!(guards_vectors_open(null(), &mut v), R::NullArgument);
        assert_eq!(
            guards_vectors_open(c("/no/such/dir").as_ptr(), &mut v),
            R::InvalidArgument
        );
        assert_eq!(
            guards_vectors_open_text(name.as_ptr(), null(), 0, &mut v),
            R::NullArgument
        );
        let bad = [0xffu8, 0xfe];
        assert_eq!(
            guards_vectors_open_text(name.as_ptr(), bad.as_ptr().cast(), 2, &mut v),
            R::InvalidArgument
        );
        assert!(v.is_null(), "nothing written on failure");
        assert_eq!(
            guards_vectors_open_text(name.as_ptr(), text.as_ptr().cast(), text.len(), null_mut()),
            R::NullArgument
        );
        assert_eq!(
            guards_vectors_open_text(name.as_ptr(), text.as_ptr().cast(), text.len(), &mut v),
            R::Ok
        );
        // No step handed out yet: nothing to read or answer.
        assert_eq!(guards_vectors_submit(v), R::InvalidArgument);
        let mut u = 0u64;
        assert_eq!(
            guards_vectors_arg_u64(v, c("now").as_ptr(), &mut u),
            R::InvalidArgument
        );
        assert_eq!(guards_vectors_next(null_mut(), null_mut()), R::NullArgument);
        assert_eq!(guards_vectors_next(v, null_mut()), R::NullArgument);
        let mut s = std::mem::MaybeUninit::<guards_vectors_step>::uninit();
        assert_eq!(guards_vectors_next(v, s.as_mut_ptr()), R::Ok);
        let s = s.assume_init();
        assert_eq!(std::ffi::CStr::from_ptr(s.op).to_str().unwrap(), "new");
        // Getters: absent, wrong type, NULL name/output.
        assert_eq!(
            guards_vectors_arg_u64(v, c("nope").as_ptr(), &mut u),
            R::InvalidArgument
        );
        let mut b = false;
        assert_eq!(
            guards_vectors_arg_bool(v, c("config.max_concurrent").as_ptr(), &mut b),
            R::ConfigWrongType
        );
        assert_eq!(guards_vectors_arg_u64(v, null(), &mut u), R::NullArgument);
        assert_eq!(
            guards_vectors_arg_u64(v, c("seed").as_ptr(), null_mut()),
            R::NullArgument
        );
        let mut a = guards_vectors_arg {
            name: null(),
            kind: 0,
        };
        assert_eq!(guards_vectors_arg_at(v, 99, &mut a), R::InvalidArgument);
        assert_eq!(
            guards_vectors_result_u64(v, null(), 1),
            R::NullArgument,
            "a result needs a path"
        );
        assert_eq!(
            guards_vectors_result_str(v, c("x").as_ptr(), null()),
            R::NullArgument
        );
        assert_eq!(
            guards_vectors_submit_unsupported(v, null()),
            R::NullArgument
        );
        assert_eq!(guards_vectors_submit(v), R::Ok);
        // The step: a negative integer is refused by the unsigned getter, naming it.
        let mut s = std::mem::MaybeUninit::<guards_vectors_step>::uninit();
        assert_eq!(guards_vectors_next(v, s.as_mut_ptr()), R::Ok);
        assert_eq!(
            guards_vectors_arg_u64(v, c("rate_per_sec").as_ptr(), &mut u),
            R::ConfigNegative
        );
        let mut i = 0i64;
        assert_eq!(
            guards_vectors_arg_i64(v, c("rate_per_sec").as_ptr(), &mut i),
            R::Ok
        );
        assert_eq!(i, -1);
        let mut f = 0.0;
        assert_eq!(
            guards_vectors_arg_f64(v, c("headroom").as_ptr(), &mut f),
            R::Ok
        );
        assert_eq!(f, 1.5);
        // A failure code with no matching detail fails the case, with the code's message.
        guards::error::set_last(guards::error::Failure::code(R::PermitUnknown));
        assert_eq!(
            guards_vectors_submit_failure(v, R::OutOfMemory as u32),
            R::Ok
        );
        let mut sum = guards_vectors_summary::default();
        let mut s = std::mem::MaybeUninit::<guards_vectors_step>::uninit();
        while {
            assert_eq!(guards_vectors_next(v, s.as_mut_ptr()), R::Ok);
            s.assume_init_ref().done == 0
        } {
            assert_eq!(guards_vectors_submit(v), R::Ok);
        }
        assert_eq!(guards_vectors_get_summary(v, &mut sum), R::Ok);
        assert_eq!((sum.failed, sum.ok), (1, 0));
        let mut buf = [0 as std::ffi::c_char; 8];
        let n = guards_vectors_report(v, buf.as_mut_ptr(), buf.len());
        assert!(n > 8, "the full length is returned");
        assert_eq!(buf[7], 0, "truncated and NUL-terminated");
        assert_eq!(guards_vectors_report(null_mut(), buf.as_mut_ptr(), 8), 0);
        guards_vectors_free(v);
        guards_vectors_free(null_mut());
    }
}

/// Bytes that hold a NUL reach a C driver whole: pointer and length.
#[test]
fn bytes_with_a_nul_reach_c_whole() {
    use guards::error::GuardsResult as R;
    use guards::vectors::c_abi::*;
    use std::ffi::{c_char, CString};

    let text = r#"{"guard": "http", "cases": [{"name": "nul",
        "steps": [{"op": "parse_retry_after", "value_bytes": [49, 0, 50], "now_unix": 0}]}]}"#;
    let name = CString::new("http.json").unwrap();
    let value = CString::new("value").unwrap();
    let mut v: *mut guards_vectors = std::ptr::null_mut();
    let mut s = std::mem::MaybeUninit::<guards_vectors_step>::uninit();
    let mut p: *const c_char = std::ptr::null();
    let mut n = 0usize;
    let mut kind = guards_vectors_kind::Absent;
    // SAFETY: valid pointers throughout; `v` is live until freed; the bytes read are the
    // `n` the session reports, plus its NUL.
    unsafe {
        assert_eq!(
            guards_vectors_open_text(name.as_ptr(), text.as_ptr().cast(), text.len(), &mut v),
            R::Ok
        );
        assert_eq!(guards_vectors_next(v, s.as_mut_ptr()), R::Ok); // new
        assert_eq!(guards_vectors_submit(v), R::Ok);
        assert_eq!(guards_vectors_next(v, s.as_mut_ptr()), R::Ok); // parse_retry_after
        assert_eq!(guards_vectors_arg_kind(v, value.as_ptr(), &mut kind), R::Ok);
        assert_eq!(kind as u32, guards_vectors_kind::Bytes as u32);
        assert_eq!(
            guards_vectors_arg_str(v, value.as_ptr(), &mut p, &mut n),
            R::Ok
        );
        let got = std::slice::from_raw_parts(p.cast::<u8>(), n + 1);
        assert_eq!(got, [49, 0, 50, 0]);
        guards_vectors_free(v);
    }
}
