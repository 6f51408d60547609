//! What a replay found: per file, per case, passed / failed (with the first mismatch:
//! file, line, case, step, expected, got) / not covered by the backend; and a summary.

use std::fmt;

use serde_json::Value;

/// How one case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CaseOutcome {
    /// Every step ran and every expected value the backend could observe was equal.
    /// `unobserved` counts the expected values the backend could not observe (0: the case
    /// was checked in full).
    Passed {
        /// Expected values compared and equal.
        compared: usize,
        /// Expected values the backend marked unobservable.
        unobserved: usize,
    },
    /// The first difference (the case stops there).
    Failed(Box<Mismatch>),
    /// The backend cannot run this case (a guard or op its API does not have yet).
    NotCovered {
        /// The op it could not run (`new`: the guard itself).
        op: String,
        /// The step's index, `None` for `new`.
        step: Option<usize>,
        /// The backend's reason.
        reason: String,
    },
    /// The vector file is wrong here (unknown op, missing argument, a permit that is not
    /// held, ...): nothing was run.
    FileError(String),
}

/// The first difference in a case.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// The op.
    pub op: String,
    /// The step's index in the case, `None` for `new` (building the guard) and for a
    /// step the interpreter added (handing back a permit the file did not name).
    pub step: Option<usize>,
    /// The repetition (1-based) of a step with `repeat`.
    pub repetition: u64,
    /// Of how many.
    pub repeat: u64,
    /// The arguments the backend was given.
    pub args: Value,
    /// What the file expects.
    pub expected: Value,
    /// What the backend gave.
    pub got: Value,
    /// Where and how they differ.
    pub detail: String,
}

/// One case's report.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// The line of its name in the file.
    pub line: Option<usize>,
    /// How it ended.
    pub outcome: CaseOutcome,
}

/// One file's report.
#[derive(Debug, Clone, PartialEq)]
pub struct FileReport {
    /// The file name (`circuit_breaker.json`).
    pub file: String,
    /// Why the whole file could not be replayed (not JSON, unknown guard, ...).
    pub error: Option<String>,
    /// Its cases, in file order.
    pub cases: Vec<CaseReport>,
}

/// Counts over a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    /// Files read.
    pub files: usize,
    /// Cases in them.
    pub cases: usize,
    /// Cases that passed (including those with unobservable values).
    pub passed: usize,
    /// Of the passed cases, those with at least one unobservable value.
    pub partly_observed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Cases the backend cannot run.
    pub not_covered: usize,
    /// Cases (or whole files, counted once each) the vector file gets wrong.
    pub file_errors: usize,
    /// Expected values compared (and equal, in passed cases).
    pub compared: usize,
    /// Expected values the backend could not observe.
    pub unobserved: usize,
}

impl Summary {
    /// No case failed and no file is wrong (cases not covered are allowed: they are
    /// reported, not passed).
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.file_errors == 0
    }
}

/// The report of a replay.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    /// Every file, in the order replayed.
    pub files: Vec<FileReport>,
}

impl FileReport {
    /// This file's counts.
    pub fn summary(&self) -> Summary {
        let mut s = Summary {
            files: 1,
            ..Summary::default()
        };
        if self.error.is_some() {
            s.file_errors += 1;
        }
        for c in &self.cases {
            s.cases += 1;
            match &c.outcome {
                CaseOutcome::Passed {
                    compared,
                    unobserved,
                } => {
                    s.passed += 1;
                    s.compared += compared;
                    s.unobserved += unobserved;
                    if *unobserved > 0 {
                        s.partly_observed += 1;
                    }
                }
                CaseOutcome::Failed(_) => s.failed += 1,
                CaseOutcome::NotCovered { .. } => s.not_covered += 1,
                CaseOutcome::FileError(_) => s.file_errors += 1,
            }
        }
        s
    }
}

impl Report {
    /// The counts over every file.
    pub fn summary(&self) -> Summary {
        self.files.iter().fold(Summary::default(), |mut a, f| {
            let s = f.summary();
            a.files += s.files;
            a.cases += s.cases;
            a.passed += s.passed;
            a.partly_observed += s.partly_observed;
            a.failed += s.failed;
            a.not_covered += s.not_covered;
            a.file_errors += s.file_errors;
            a.compared += s.compared;
            a.unobserved += s.unobserved;
            a
        })
    }

    /// Whether the replay passed: no failure, no file error.
    pub fn ok(&self) -> bool {
        self.summary().ok()
    }

    /// The report of `file` (`circuit_breaker.json`).
    pub fn file(&self, file: &str) -> Option<&FileReport> {
        self.files.iter().find(|f| f.file == file)
    }
}

fn counts(s: &Summary) -> String {
    let passed = if s.partly_observed > 0 {
        format!(
            "{} passed ({} with {} of {} expected values unobservable)",
            s.passed,
            s.partly_observed,
            s.unobserved,
            s.compared + s.unobserved
        )
    } else {
        format!("{} passed", s.passed)
    };
    let mut parts = vec![passed];
    if s.failed > 0 {
        parts.push(format!("{} FAILED", s.failed));
    }
    if s.not_covered > 0 {
        parts.push(format!("{} not covered", s.not_covered));
    }
    if s.file_errors > 0 {
        parts.push(format!("{} FILE ERRORS", s.file_errors));
    }
    parts.join(", ")
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            Some(i) => write!(f, "step {i} `{}` {}", self.op, self.args)?,
            None => write!(f, "`{}` {}", self.op, self.args)?,
        }
        if self.repeat > 1 {
            write!(f, " (repetition {} of {})", self.repetition, self.repeat)?;
        }
        write!(
            f,
            ": {}\n    expected: {}\n    got:      {}",
            self.detail, self.expected, self.got
        )
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.summary();
        writeln!(
            f,
            "vectors: {} files, {} cases: {}; {} expected values compared",
            s.files,
            s.cases,
            counts(&s),
            s.compared
        )?;
        for file in &self.files {
            let fs = file.summary();
            if let Some(e) = &file.error {
                writeln!(f, "  {}: FILE ERROR: {e}", file.file)?;
                continue;
            }
            if fs.not_covered == fs.cases {
                // Every case refused at `new` for the same reason: the guard is missing.
                let reason = file.cases.iter().find_map(|c| match &c.outcome {
                    CaseOutcome::NotCovered { reason, .. } => Some(reason.as_str()),
                    _ => None,
                });
                writeln!(
                    f,
                    "  {}: {} cases: not yet covered ({})",
                    file.file,
                    fs.cases,
                    reason.unwrap_or("")
                )?;
                continue;
            }
            writeln!(f, "  {}: {} cases: {}", file.file, fs.cases, counts(&fs))?;
            let mut reasons: Vec<String> = Vec::new();
            for c in &file.cases {
                if let CaseOutcome::NotCovered { op, reason, .. } = &c.outcome {
                    let r = format!("`{op}`: {reason}");
                    if !reasons.contains(&r) {
                        reasons.push(r);
                    }
                }
            }
            for r in reasons {
                writeln!(f, "      not covered: {r}")?;
            }
        }
        for file in &self.files {
            for c in &file.cases {
                let at = match c.line {
                    Some(l) => format!("{}:{l}", file.file),
                    None => file.file.clone(),
                };
                match &c.outcome {
                    CaseOutcome::Failed(m) => {
                        writeln!(f, "FAILED {at}: case `{}`, {m}", c.name)?;
                    }
                    CaseOutcome::FileError(e) => {
                        writeln!(f, "FILE ERROR {at}: case `{}`: {e}", c.name)?;
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}
