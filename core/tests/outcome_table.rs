//! `docs/outcomes.md` and the code can never drift: this test reads the user-facing table of
//! what each outcome does to each guard, and checks every cell against the `const fn`s of
//! `Outcome` (and the outcome list's numbers against the discriminants).
#![cfg(not(loom))]

use std::path::PathBuf;

use guards_core::brownout::RefusalKind;
use guards_core::outcome::RetryVerdict;
use guards_core::Outcome;

fn doc() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("docs")
        .join("outcomes.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The rows of the markdown table whose header row starts with `header`, each split into
/// trimmed cells; the header itself first.
fn table(doc: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = doc.lines().skip_while(|l| !l.starts_with(header));
    let head = lines
        .next()
        .unwrap_or_else(|| panic!("no table starting `{header}`"));
    let sep = lines.next().expect("separator row");
    assert!(sep.starts_with("|---"), "not a table separator: {sep}");
    std::iter::once(head)
        .chain(lines.take_while(|l| l.starts_with('|')))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

fn code(name: &str) -> String {
    format!("`{name}`")
}

/// The cell text the code gives for each column.
fn expected(o: Outcome) -> Vec<String> {
    vec![
        code(o.name()),
        code(o.breaker(false).name()),
        code(o.breaker(true).name()),
        code(o.bulkhead().name()),
        code(o.limiter().name()),
        code(o.retry_budget().name()),
        code(o.adaptive_throttle().name()),
        code(o.latency().name()),
        match o.retry() {
            RetryVerdict::Retry(cause) => format!("retry: {}", code(cause.name())),
            RetryVerdict::GiveUp(reason) => format!("give up: {}", code(reason.name())),
        },
        RefusalKind::of(o).map_or_else(|| "—".to_string(), |k| code(k.name())),
    ]
}

/// A cell without its footnote markers.
fn strip_notes(cell: &str) -> String {
    cell.trim_end_matches(['¹', '²', '³', ' ']).to_string()
}

#[test]
fn every_cell_of_the_table_matches_the_code() {
    let doc = doc();
    let rows = table(&doc, "| outcome | breaker: call");
    let header: Vec<&str> = rows[0].iter().map(String::as_str).collect();
    assert_eq!(
        header,
        [
            "outcome",
            "breaker: call",
            "breaker: probe",
            "bulkhead",
            "limiter, admission",
            "retry budget",
            "adaptive throttle",
            "latency tracker, hedging",
            "retry policy",
            "brownout",
        ]
    );
    let body = &rows[1..];
    assert_eq!(body.len(), Outcome::ALL.len(), "one row per outcome");
    for (row, o) in body.iter().zip(Outcome::ALL) {
        let got: Vec<String> = row.iter().map(|c| strip_notes(c)).collect();
        assert_eq!(
            got,
            expected(o),
            "row of `{}` in docs/outcomes.md",
            o.name()
        );
    }
}

#[test]
fn the_outcome_list_has_the_names_and_numbers_of_the_code() {
    let doc = doc();
    let rows = table(&doc, "| # | outcome | meaning |");
    let body = &rows[1..];
    assert_eq!(body.len(), Outcome::ALL.len());
    for (row, o) in body.iter().zip(Outcome::ALL) {
        assert_eq!(row[0], (o as u8).to_string());
        assert_eq!(row[1], code(o.name()));
        assert!(!row[2].is_empty());
    }
}
