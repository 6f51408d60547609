//! Shared helpers for the simulator's integration tests: runs cached per (setting, seed,
//! end, overrides) so that several figure tests read one run, and the figures' tolerances
//! (docs/basketly.md).
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use guards_sim::basketly::basketly;
use guards_sim::topology::clock;
use guards_sim::SimResult;

type Cell = Arc<OnceLock<Arc<SimResult>>>;

fn cache() -> &'static Mutex<HashMap<String, Cell>> {
    static C: OnceLock<Mutex<HashMap<String, Cell>>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Run (or reuse) preset `setting` with `seed`, optional end time and overrides.
pub fn run(setting: &str, seed: u64, until: Option<&str>, overrides: &[&str]) -> Arc<SimResult> {
    let key = format!("{setting}|{seed}|{until:?}|{overrides:?}");
    let cell = {
        let mut m = cache().lock().unwrap_or_else(|e| e.into_inner());
        m.entry(key).or_default().clone()
    };
    cell.get_or_init(|| {
        Arc::new(
            basketly(setting, seed, until, overrides)
                .unwrap_or_else(|e| panic!("{setting} seed {seed}: {e}")),
        )
    })
    .clone()
}

/// The preset with its default end.
pub fn preset(setting: &str, seed: u64) -> Arc<SimResult> {
    run(setting, seed, None, &[])
}

/// Mean of a column over the hiccup's steady state, 20:00:02 to 20:00:20 (the first two
/// seconds left out: "during the hiccup" in docs/basketly.md).
pub fn hiccup_mean(r: &SimResult, col: &str) -> f64 {
    r.mean(col, "20:00:02", "20:00:20")
        .unwrap_or_else(|| panic!("no column {col}"))
}

/// Mean of a column over `[from, to)`.
pub fn mean(r: &SimResult, col: &str, from: &str, to: &str) -> f64 {
    r.mean(col, from, to)
        .unwrap_or_else(|| panic!("no column {col} over {from}..{to}"))
}

/// A gauge (recorded at the end of each interval) at the instant `at`.
pub fn gauge_at(r: &SimResult, col: &str, at: &str) -> f64 {
    let t = clock::parse(at).expect("clock");
    let i = r.index_of(t).expect("inside the run");
    assert!(i > 0, "no interval ends at {at}");
    r.column(col).unwrap_or_else(|| panic!("no column {col}"))[i - 1]
}

/// The value of a per-interval column in the interval starting at `at`.
pub fn at(r: &SimResult, col: &str, at: &str) -> f64 {
    r.at(col, at).unwrap_or_else(|| panic!("no {col} at {at}"))
}

/// `x` within `tol` (a fraction) of `target`.
pub fn close(x: f64, target: f64, tol: f64) -> bool {
    (x - target).abs() <= tol * target.abs()
}

/// Assert `x` within ±15 % of `target` (the figures' rate tolerance).
#[track_caller]
pub fn assert_rate(what: &str, x: f64, target: f64) {
    assert!(
        close(x, target, 0.15),
        "{what}: simulated {x:.1}, figure {target} (±15 % = {:.1}..{:.1})",
        target * 0.85,
        target * 1.15
    );
}

/// Assert `x` in `[lo·0.85, hi·1.15]`: a range a figure states, widened by the rate tolerance.
#[track_caller]
pub fn assert_range(what: &str, x: f64, lo: f64, hi: f64) {
    assert!(
        x >= lo * 0.85 && x <= hi * 1.15,
        "{what}: simulated {x:.1}, figure {lo}..{hi} (with ±15 %: {:.1}..{:.1})",
        lo * 0.85,
        hi * 1.15
    );
}

/// Assert a clock time within ±1 s of the figure's.
#[track_caller]
pub fn assert_time(what: &str, got: Option<&str>, want: &str) {
    let w = clock::parse(want).expect("clock").as_u64() as i128;
    match got.and_then(clock::parse) {
        Some(g) => {
            let d = (g.as_u64() as i128 - w).abs();
            assert!(
                d <= 1_000_000_000,
                "{what}: simulated {got:?}, figure {want} (±1 s)"
            );
        }
        None => panic!("{what}: simulated {got:?}, figure {want}"),
    }
}

/// `recovered_at` of a result.
pub fn recovered(r: &SimResult) -> Option<String> {
    r.summary_value("recovered_at")
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// The expected-failure pattern: the model misses a figure; assert the miss so the test
/// fails loudly the day the model starts matching (then turn it into an ordinary test).
#[track_caller]
pub fn assert_miss(what: &str, matches: bool, detail: &str) {
    assert!(
        !matches,
        "{what} now MATCHES the figure ({detail}): turn this expected failure into a normal test"
    );
    eprintln!("expected miss, {what}: {detail}");
}
