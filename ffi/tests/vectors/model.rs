//! The interpreter's bookkeeping against a model, on random bulkhead and limiter cases
//! (numbered and named permits, repeats, unnamed grants handed back, permits used twice
//! or never granted):
//!
//! - each step that uses a permit gets the handle of the grant the file means, and one
//!   that names a permit not held is a file error at that step, as the model says;
//! - in-process and through the C ABI the steps and the report are the same;
//! - the file with every `expect` filled in from core's own answers passes, comparing
//!   exactly the values written.

use std::collections::{HashMap, VecDeque};

use guards::vectors::{CaseOutcome, Reply, Role, Scalar, Session, Step};
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::c_protocol;
use crate::core_backend::CoreBackend;

#[derive(Debug, Clone)]
enum BulkheadOp {
    Acquire(u64),
    Release(usize),
    InFlight,
    Stats,
}

fn bulkhead_op() -> impl Strategy<Value = BulkheadOp> {
    prop_oneof![
        (1u64..4).prop_map(BulkheadOp::Acquire),
        (0usize..6).prop_map(BulkheadOp::Release),
        Just(BulkheadOp::InFlight),
        Just(BulkheadOp::Stats),
    ]
}

#[derive(Debug, Clone)]
enum LimiterOp {
    Acquire {
        name: Option<u8>,
        repeat: u64,
        priority: u8,
    },
    Report {
        name: u8,
        how: &'static str,
    },
    InFlight,
    Stats,
}

fn limiter_op() -> impl Strategy<Value = LimiterOp> {
    prop_oneof![
        (proptest::option::of(0u8..3), 1u64..3, 0u8..3).prop_map(|(name, repeat, priority)| {
            LimiterOp::Acquire {
                name,
                repeat,
                priority,
            }
        }),
        (
            0u8..3,
            prop_oneof![Just("on_success"), Just("on_dropped"), Just("on_ignore")]
        )
            .prop_map(|(name, how)| LimiterOp::Report { name, how }),
        Just(LimiterOp::InFlight),
        Just(LimiterOp::Stats),
    ]
}

fn file(guard: &str, config: Value, steps: Vec<Value>) -> String {
    json!({"guard": guard, "cases": [{"name": "random", "config": config, "steps": steps}]})
        .to_string()
}

fn run(name: &str, text: &str) -> (guards::vectors::Report, Vec<(Step, Reply)>) {
    let mut s = Session::from_text(name, text);
    s.keep_transcript();
    s.run(&mut CoreBackend::default());
    (s.report().clone(), s.transcript().to_vec())
}

fn handle(step: &Step, name: &str) -> Option<u64> {
    match step.args.get(name) {
        Some(Scalar::Int(h)) => Some(*h as u64),
        _ => None,
    }
}

fn granted(reply: &Reply, path: &str) -> bool {
    match reply {
        Reply::Result(r) => r.get(path) == Some(&guards::vectors::Entry::Value(Scalar::Bool(true))),
        _ => false,
    }
}

/// The file's steps with each `expect` set to core's answer (for steps whose repetitions
/// all gave the same answer), and how many values that writes.
fn filled(steps: &[Value], transcript: &[(Step, Reply)]) -> (Vec<Value>, usize) {
    let mut out = steps.to_vec();
    let mut answers: HashMap<usize, Vec<Value>> = HashMap::new();
    for (st, reply) in transcript {
        if let (Role::Op, Some(i), Reply::Result(r)) = (st.origin.role, st.origin.step, reply) {
            answers.entry(i).or_default().push(r.to_json());
        }
    }
    let mut values = 0;
    for (i, step) in out.iter_mut().enumerate() {
        let Some(a) = answers.get(&i) else { continue };
        if a.windows(2).all(|w| w[0] == w[1]) {
            let repeat = step.get("repeat").and_then(Value::as_u64).unwrap_or(1) as usize;
            let mut leaves = 0;
            guards::vectors::Record::from_json(&a[0])
                .entries()
                .for_each(|_| leaves += 1);
            values += leaves * repeat;
            step["expect"] = a[0].clone();
        }
    }
    (out, values)
}

fn same_through_c(name: &str, text: &str, report: &guards::vectors::Report, steps: &[Step]) {
    let c = c_protocol::replay_text(name, text, &mut CoreBackend::default());
    assert_eq!(c.report, report.to_string());
    assert_eq!(format!("{:?}", c.steps), format!("{steps:?}"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn numbered_permits_follow_the_grants(
        cap in 1u64..4,
        ops in proptest::collection::vec(bulkhead_op(), 1..24),
    ) {
        let steps: Vec<Value> = ops.iter().map(|o| match o {
            BulkheadOp::Acquire(n) => json!({"op": "try_acquire", "repeat": n}),
            BulkheadOp::Release(k) => json!({"op": "release", "permit": k}),
            BulkheadOp::InFlight => json!({"op": "in_flight"}),
            BulkheadOp::Stats => json!({"op": "stats"}),
        }).collect();
        let text = file("bulkhead", json!({"max_concurrent": cap}), steps.clone());
        let (report, transcript) = run("bulkhead.json", &text);

        // The model: grants in order; a release names one by number, once.
        let mut grants: Vec<Option<u64>> = Vec::new();
        let mut expected_error = None;
        for (st, reply) in &transcript {
            match (st.op, st.origin.role) {
                ("try_acquire", Role::Op) => {
                    let h = handle(st, "hold").expect("every try_acquire may keep a permit");
                    if granted(reply, "acquired") {
                        grants.push(Some(h));
                    }
                }
                ("release", Role::Op) => {
                    let i = st.origin.step.unwrap();
                    let BulkheadOp::Release(k) = ops[i] else { unreachable!() };
                    let want = grants.get_mut(k).and_then(Option::take);
                    prop_assert_eq!(handle(st, "permit"), want);
                }
                _ => {}
            }
        }
        // The first release of a permit not held (if any) is where the case stops.
        let mut model: Vec<bool> = Vec::new();
        for (i, o) in ops.iter().enumerate() {
            match o {
                BulkheadOp::Acquire(_) => {
                    let n = transcript.iter().filter(|(st, r)| {
                        st.origin.step == Some(i) && granted(r, "acquired")
                    }).count();
                    model.extend(std::iter::repeat_n(true, n));
                }
                BulkheadOp::Release(k) => {
                    if model.get(*k).copied() != Some(true) {
                        expected_error = Some(i);
                        break;
                    }
                    model[*k] = false;
                }
                _ => {}
            }
        }
        let outcome = &report.files[0].cases[0].outcome;
        match expected_error {
            Some(i) => prop_assert!(
                matches!(outcome, CaseOutcome::FileError(e) if e.starts_with(&format!("step {i}:"))),
                "{outcome:?}"
            ),
            None => prop_assert!(matches!(outcome, CaseOutcome::Passed { .. }), "{outcome:?}"),
        }
        let steps_seen: Vec<Step> = transcript.iter().map(|(s, _)| s.clone()).collect();
        same_through_c("bulkhead.json", &text, &report, &steps_seen);

        if expected_error.is_none() {
            let (with_expect, values) = filled(&steps, &transcript);
            let text = file("bulkhead", json!({"max_concurrent": cap}), with_expect);
            let (report, _) = run("bulkhead.json", &text);
            let s = report.summary();
            prop_assert_eq!((s.passed, s.compared, s.unobserved), (1, values, 0), "{}", report);
        }
    }

    #[test]
    fn named_permits_are_first_in_first_out(
        ops in proptest::collection::vec(limiter_op(), 1..24),
    ) {
        let config = json!({"limit": {"algorithm": "fixed", "limit": 3}});
        let steps: Vec<Value> = ops.iter().map(|o| match o {
            LimiterOp::Acquire { name: Some(n), repeat, priority } => json!(
                {"op": "try_acquire", "now": 0, "priority": priority, "permit": format!("p{n}"),
                 "repeat": repeat}),
            LimiterOp::Acquire { name: None, repeat, priority } => json!(
                {"op": "try_acquire", "now": 0, "priority": priority, "repeat": repeat}),
            LimiterOp::Report { name, how } if *how == "on_ignore" =>
                json!({"op": how, "permit": format!("p{name}")}),
            LimiterOp::Report { name, how } =>
                json!({"op": how, "now": 1, "permit": format!("p{name}")}),
            LimiterOp::InFlight => json!({"op": "in_flight"}),
            LimiterOp::Stats => json!({"op": "stats"}),
        }).collect();
        let text = file("limiter", config.clone(), steps.clone());
        let (report, transcript) = run("limiter.json", &text);

        // The model: per name a FIFO of granted handles; an unnamed grant is handed back
        // at once with on_ignore; a report takes the oldest under its name.
        let mut held: HashMap<u8, VecDeque<u64>> = HashMap::new();
        let mut pending_release: Option<u64> = None;
        let mut stopped_at = None;
        for (st, reply) in &transcript {
            match st.origin.role {
                Role::Release => {
                    prop_assert_eq!(st.op, "on_ignore");
                    prop_assert_eq!(handle(st, "permit"), pending_release.take());
                }
                Role::Op => {
                    prop_assert!(pending_release.is_none(), "released before the next step");
                    let i = st.origin.step.unwrap();
                    match &ops[i] {
                        LimiterOp::Acquire { name, .. } => {
                            let h = handle(st, "hold").expect("a limiter grant is always kept");
                            if granted(reply, "admitted") {
                                match name {
                                    Some(n) => held.entry(*n).or_default().push_back(h),
                                    None => pending_release = Some(h),
                                }
                            }
                        }
                        LimiterOp::Report { name, .. } => {
                            let want = held.get_mut(name).and_then(VecDeque::pop_front);
                            prop_assert!(want.is_some());
                            prop_assert_eq!(handle(st, "permit"), want);
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        // The case stops where a report names nothing held.
        if let CaseOutcome::FileError(e) = &report.files[0].cases[0].outcome {
            stopped_at = e.split(':').next().map(str::to_owned);
            let i: usize = stopped_at.as_deref().unwrap().trim_start_matches("step ").parse().unwrap();
            let LimiterOp::Report { name, .. } = &ops[i] else {
                panic!("a file error at a step that names no permit: {e}")
            };
            prop_assert!(held.get(name).is_none_or(VecDeque::is_empty));
        } else {
            let outcome = &report.files[0].cases[0].outcome;
            prop_assert!(matches!(outcome, CaseOutcome::Passed { .. }), "{:?}", outcome);
        }
        let steps_seen: Vec<Step> = transcript.iter().map(|(s, _)| s.clone()).collect();
        same_through_c("limiter.json", &text, &report, &steps_seen);

        if stopped_at.is_none() {
            let (with_expect, values) = filled(&steps, &transcript);
            let (report, _) = run("limiter.json", &file("limiter", config, with_expect));
            let s = report.summary();
            prop_assert_eq!((s.passed, s.compared, s.unobserved), (1, values, 0), "{}", report);
        }
    }
}
