//! The interpreter: a [`Session`] walks the vector files case by case and hands out one
//! [`Step`] at a time; a backend executes it and [`submit`](Session::submit)s a [`Reply`].
//! The session owns everything else: `repeat`, `expect` and its comparison, the case
//! seed, config-rejection cases, named and numbered held permits, and the report.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io;
use std::path::Path;

use serde_json::Value;

use super::file::{CaseBody, PermitRef, Prepared, VectorFile};
use super::report::{CaseOutcome, CaseReport, FileReport, Mismatch, Report};
use super::spec::{By, Compare, Granted, Permits, Unnamed};
use super::value::{flatten, Args, Entry, Record, Scalar};
use crate::error::{Detail, Failure, GuardsResult};

/// Why the session emitted a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `new`: build the case's guard from `config.*` (and `seed`, ...). Every case starts
    /// with one.
    Build,
    /// A step of the file.
    Op,
    /// A permit the file did not name, handed straight back (e.g. `on_ignore`).
    Release,
    /// `free`: the case is over; drop the guard `new` built (and anything held).
    Free,
}

/// Where a step comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The vector file (`circuit_breaker.json`).
    pub file: String,
    /// The case's name.
    pub case: String,
    /// The step's index in the case (`Role::Op`).
    pub step: Option<usize>,
    /// Which repetition (1-based) of a step with `repeat`.
    pub repetition: u64,
    /// Why it was emitted.
    pub role: Role,
}

/// One step for a backend: on the guard of file `guard`, run `op` with `args`.
///
/// Arguments are normalised: defaults filled in, `"nan"` read as a float, `"0x…"` words
/// as integers, `value_bytes` as bytes, a config flattened into `config.<field>` (nested:
/// `config.tracker.window`, `config.limits[2]`). A permit is a number (a handle): `hold`
/// on a step that may grant one says "keep what you grant under this handle"; `permit` on
/// a step that uses one says which. See `tests/vectors/README.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The vector file's guard (`circuit_breaker`, `http`, ...).
    pub guard: &'static str,
    /// The op: `new`, `free`, or one of the file's.
    pub op: &'static str,
    /// Its arguments.
    pub args: Args,
    /// Where it comes from (for messages; a backend need not read it).
    pub origin: Origin,
}

/// What a backend answers to a step.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The op ran; this is its result ([`Record::null`] for an op without one).
    Result(Record),
    /// `new` (or an op taking a config) refused the config: the field and the error kind
    /// name (`not_finite`, `negative`, `zero`, `out_of_range`, `inconsistent`, or the
    /// binding's `unknown_field` / `wrong_type`).
    ConfigError {
        /// The field, as the schema names it.
        field: String,
        /// The kind.
        kind: String,
    },
    /// The backend could not run the op (a bug, or an error the op should not give).
    Failed(String),
    /// The backend's API does not have this guard or op (yet): the case is reported as
    /// not covered, from this step on.
    Unsupported(String),
}

impl Reply {
    /// A result.
    pub fn result(r: Record) -> Reply {
        Reply::Result(r)
    }

    /// The reply for a [`Failure`]: a refused config value becomes
    /// [`Reply::ConfigError`] naming the field, anything else [`Reply::Failed`].
    pub fn from_failure(f: &Failure) -> Reply {
        match config_error_of(f) {
            Some((field, kind)) => Reply::ConfigError {
                field: field.to_owned(),
                kind: kind.to_owned(),
            },
            None => Reply::Failed(f.to_string()),
        }
    }
}

/// The field and kind name of a refused config value.
pub(crate) fn config_error_of(f: &Failure) -> Option<(&str, &'static str)> {
    let kind = config_kind_name(f.code)?;
    match &f.detail {
        Detail::Config(e) => Some((e.field(), e.kind().name())),
        Detail::UnknownField { given, .. } => Some((given.as_str(), kind)),
        Detail::Argument { name, .. } => Some((name, kind)),
        _ => None,
    }
}

/// The kind name of a config result code.
pub(crate) fn config_kind_name(code: GuardsResult) -> Option<&'static str> {
    Some(match code {
        GuardsResult::ConfigNotFinite => "not_finite",
        GuardsResult::ConfigNegative => "negative",
        GuardsResult::ConfigZero => "zero",
        GuardsResult::ConfigOutOfRange => "out_of_range",
        GuardsResult::ConfigInconsistent => "inconsistent",
        GuardsResult::ConfigUnknownField => "unknown_field",
        GuardsResult::ConfigWrongType => "wrong_type",
        GuardsResult::ConfigInvalid => "invalid",
        _ => return None,
    })
}

/// A backend: runs one step on its language's API and answers with data.
pub trait Backend {
    /// Run `step` and say what happened.
    fn run(&mut self, step: &Step) -> Reply;
}

/// [`Session::submit`] was called without a step waiting for its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoStepPending;

impl fmt::Display for NoStepPending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no step is waiting for a reply (call next_step first)")
    }
}

impl std::error::Error for NoStepPending {}

/// What to do with the reply to the step handed out.
#[derive(Debug)]
enum Waiting {
    Build,
    Op { hold: Option<u64> },
    Release,
    Free,
}

/// One case being run.
#[derive(Debug, Default)]
struct Run {
    /// The next step to run, and its repetition (1-based).
    step: usize,
    repetition: u64,
    built: bool,
    freed: bool,
    named: HashMap<String, VecDeque<u64>>,
    numbered: Vec<Option<u64>>,
    next_handle: u64,
    release: Option<(&'static str, u64)>,
    compared: usize,
    unobserved: usize,
    /// Set when the case is over (it then frees what it built and is reported).
    outcome: Option<CaseOutcome>,
}

#[derive(Debug)]
enum State {
    FileStart,
    CaseStart,
    InCase(Box<Run>),
    Done,
}

/// A replay of vector files, one step at a time (see the module docs).
///
/// # Examples
/// ```
/// use guards::vectors::{Record, Reply, Session};
///
/// let text = r#"{"guard": "bulkhead", "cases": [{"name": "one",
///     "config": {"max_concurrent": 1},
///     "steps": [{"op": "in_flight", "expect": 0}]}]}"#;
/// let mut s = Session::from_text("bulkhead.json", text);
/// while let Some(step) = s.next_step() {
///     let reply = match step.op {
///         "new" | "free" => Reply::Result(Record::null()),
///         "in_flight" => Reply::Result(Record::scalar(0u64)),
///         _ => Reply::Unsupported("not in this example".into()),
///     };
///     s.submit(reply).unwrap();
/// }
/// assert!(s.report().ok());
/// assert_eq!(s.report().summary().passed, 1);
/// ```
#[derive(Debug)]
pub struct Session {
    files: Vec<VectorFile>,
    file: usize,
    case: usize,
    state: State,
    pending: Option<(Step, Waiting)>,
    report: Report,
    transcript: Option<Vec<(Step, Reply)>>,
}

impl Session {
    /// A session over `path`: one vector file, or every `*.json` file of a directory in
    /// name order.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Session> {
        let path = path.as_ref();
        let mut paths = Vec::new();
        if path.is_dir() {
            for e in std::fs::read_dir(path)? {
                let p = e?.path();
                if p.extension().is_some_and(|x| x == "json") {
                    paths.push(p);
                }
            }
            paths.sort();
            if paths.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no *.json vector files in {}", path.display()),
                ));
            }
        } else {
            std::fs::metadata(path)?;
            paths.push(path.to_path_buf());
        }
        let files = paths
            .iter()
            .map(|p| {
                let name = p
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                match std::fs::read_to_string(p) {
                    Ok(text) => VectorFile::parse(&name, &text),
                    Err(e) => VectorFile::unreadable(&name, format!("cannot read: {e}")),
                }
            })
            .collect();
        Ok(Session::of_files(files))
    }

    /// A session over one vector file given as text; `file_name` is its name
    /// (`<guard>.json`).
    pub fn from_text(file_name: &str, text: &str) -> Session {
        Session::of_files(vec![VectorFile::parse(file_name, text)])
    }

    fn of_files(files: Vec<VectorFile>) -> Session {
        Session {
            files,
            file: 0,
            case: 0,
            state: State::FileStart,
            pending: None,
            report: Report::default(),
            transcript: None,
        }
    }

    /// Keep every step and its reply (see [`Session::transcript`]).
    pub fn keep_transcript(&mut self) {
        self.transcript.get_or_insert_with(Vec::new);
    }

    /// Every step handed out and the reply it got, when [`Session::keep_transcript`] was
    /// called first.
    pub fn transcript(&self) -> &[(Step, Reply)] {
        self.transcript.as_deref().unwrap_or(&[])
    }

    /// The names of the files replayed.
    pub fn file_names(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.name.as_str())
    }

    /// The next step to run, or `None` when every file has been replayed. Until it is
    /// [`submit`](Session::submit)ted, the same step is returned again.
    pub fn next_step(&mut self) -> Option<&Step> {
        if self.pending.is_none() {
            self.pending = self.produce();
        }
        self.pending.as_ref().map(|(s, _)| s)
    }

    /// The step handed out and not yet submitted.
    pub(crate) fn pending_step(&self) -> Option<&Step> {
        self.pending.as_ref().map(|(s, _)| s)
    }

    /// The backend's reply to the step [`next_step`](Session::next_step) returned.
    pub fn submit(&mut self, reply: Reply) -> Result<(), NoStepPending> {
        let (step, waiting) = self.pending.take().ok_or(NoStepPending)?;
        self.accept(&step, waiting, &reply);
        if let Some(t) = &mut self.transcript {
            t.push((step, reply));
        }
        Ok(())
    }

    /// Run every step through `backend`, then return the report.
    pub fn run(&mut self, backend: &mut dyn Backend) -> &Report {
        while let Some(step) = self.next_step() {
            let reply = backend.run(step);
            // A step is pending: `submit` cannot fail here.
            let _ = self.submit(reply);
        }
        &self.report
    }

    /// The report so far (complete once `next_step` has returned `None`).
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Whether every file has been replayed.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done) && self.pending.is_none()
    }

    fn body(&self) -> Option<(&'static str, &str, &CaseBody)> {
        let f = self.files.get(self.file)?;
        let content = f.content.as_ref().ok()?;
        let case = content.cases.get(self.case)?;
        let body = case.body.as_ref().ok()?;
        Some((content.guard.name, case.name.as_str(), body))
    }

    fn origin(&self, step: Option<usize>, repetition: u64, role: Role) -> Origin {
        let (file, case) = match self.files.get(self.file) {
            Some(f) => (
                f.name.clone(),
                f.content
                    .as_ref()
                    .ok()
                    .and_then(|c| c.cases.get(self.case))
                    .map_or_else(String::new, |c| c.name.clone()),
            ),
            None => (String::new(), String::new()),
        };
        Origin {
            file,
            case,
            step,
            repetition,
            role,
        }
    }

    fn record_case(&mut self, outcome: CaseOutcome) {
        let Some(f) = self.files.get(self.file) else {
            return;
        };
        let Some(case) = f.content.as_ref().ok().and_then(|c| c.cases.get(self.case)) else {
            return;
        };
        let report = CaseReport {
            name: case.name.clone(),
            line: case.line,
            outcome,
        };
        if let Some(fr) = self.report.files.last_mut() {
            fr.cases.push(report);
        }
    }

    fn produce(&mut self) -> Option<(Step, Waiting)> {
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Done => return None,
                State::FileStart => {
                    let f = self.files.get(self.file)?;
                    self.report.files.push(FileReport {
                        file: f.name.clone(),
                        error: f.content.as_ref().err().cloned(),
                        cases: Vec::new(),
                    });
                    if f.content.is_err() {
                        self.file += 1;
                        self.state = State::FileStart;
                    } else {
                        self.case = 0;
                        self.state = State::CaseStart;
                    }
                }
                State::CaseStart => {
                    let case = self
                        .files
                        .get(self.file)
                        .and_then(|f| f.content.as_ref().ok())
                        .and_then(|c| c.cases.get(self.case));
                    let Some(case) = case else {
                        self.file += 1;
                        self.state = State::FileStart;
                        continue;
                    };
                    if let Err(e) = &case.body {
                        let e = e.clone();
                        self.record_case(CaseOutcome::FileError(e));
                        self.case += 1;
                        self.state = State::CaseStart;
                        continue;
                    }
                    let (guard, _, body) = self.body()?;
                    let step = Step {
                        guard,
                        op: "new",
                        args: body.new_args.clone(),
                        origin: self.origin(None, 1, Role::Build),
                    };
                    self.state = State::InCase(Box::new(Run {
                        repetition: 1,
                        ..Run::default()
                    }));
                    return Some((step, Waiting::Build));
                }
                State::InCase(mut run) => {
                    if let Some(outcome) = run.outcome.clone() {
                        if run.built && !run.freed {
                            let (guard, _, _) = self.body()?;
                            let step = Step {
                                guard,
                                op: "free",
                                args: Args::new(),
                                origin: self.origin(None, 1, Role::Free),
                            };
                            self.state = State::InCase(run);
                            return Some((step, Waiting::Free));
                        }
                        self.record_case(outcome);
                        self.case += 1;
                        self.state = State::CaseStart;
                        continue;
                    }
                    if let Some((op, handle)) = run.release.take() {
                        let (guard, _, _) = self.body()?;
                        let mut args = Args::new();
                        args.set("permit", handle);
                        let step = Step {
                            guard,
                            op,
                            args,
                            origin: self.origin(None, 1, Role::Release),
                        };
                        self.state = State::InCase(run);
                        return Some((step, Waiting::Release));
                    }
                    let produced = self.op_step(&mut run);
                    self.state = State::InCase(run);
                    if let Some(p) = produced {
                        return Some(p);
                    }
                }
            }
        }
    }

    /// The run's next file step, or `None` after setting the run's outcome (the case is
    /// over, or the file is wrong here).
    fn op_step(&self, run: &mut Run) -> Option<(Step, Waiting)> {
        let (guard, _, body) = self.body()?;
        let Some(p) = body.steps.get(run.step) else {
            run.outcome = Some(CaseOutcome::Passed {
                compared: run.compared,
                unobserved: run.unobserved,
            });
            return None;
        };
        let mut args = p.args.clone();
        let mut hold = None;
        match p.op.permits {
            Permits::None => {}
            Permits::Grant { by, unnamed, .. } => {
                let keep = match by {
                    By::Index(_) => true,
                    By::Name(_) => p.permit != PermitRef::None || unnamed != Unnamed::Drop,
                };
                if keep {
                    let h = run.next_handle;
                    run.next_handle += 1;
                    args.set("hold", h);
                    hold = Some(h);
                }
            }
            Permits::Take { .. } | Permits::Peek { .. } => {
                let take = matches!(p.op.permits, Permits::Take { .. });
                let handle = match &p.permit {
                    PermitRef::None => None,
                    PermitRef::Name(n) => {
                        let h = run.named.get_mut(n).and_then(|q| {
                            if take {
                                q.pop_front()
                            } else {
                                q.front().copied()
                            }
                        });
                        match h {
                            Some(h) => Some(h),
                            None => {
                                run.outcome = Some(CaseOutcome::FileError(format!(
                                    "step {}: no permit held under the name `{n}`",
                                    p.index
                                )));
                                return None;
                            }
                        }
                    }
                    PermitRef::Index(i) => {
                        let slot = run.numbered.get_mut(*i);
                        let h = slot.and_then(|s| if take { s.take() } else { *s });
                        match h {
                            Some(h) => Some(h),
                            None => {
                                run.outcome = Some(CaseOutcome::FileError(format!(
                                    "step {}: permit {i} is not held (never granted, or \
                                     already handed back)",
                                    p.index
                                )));
                                return None;
                            }
                        }
                    }
                };
                if let Some(h) = handle {
                    args.set("permit", h);
                }
            }
        }
        let step = Step {
            guard,
            op: p.op.name,
            args,
            origin: self.origin(Some(p.index), run.repetition, Role::Op),
        };
        Some((step, Waiting::Op { hold }))
    }

    fn accept(&mut self, step: &Step, waiting: Waiting, reply: &Reply) {
        let State::InCase(run) = &mut self.state else {
            return;
        };
        let Some((_, _, body)) = body_of(&self.files, self.file, self.case) else {
            return;
        };
        match waiting {
            Waiting::Build => accept_build(run, body, step, reply),
            Waiting::Op { hold } => {
                if let Some(p) = body.steps.get(run.step) {
                    accept_op(run, p, step, hold, reply);
                }
            }
            Waiting::Release => match reply {
                Reply::Result(_) => {}
                Reply::Unsupported(r) => {
                    run.outcome = Some(CaseOutcome::NotCovered {
                        op: step.op.to_owned(),
                        step: None,
                        reason: r.clone(),
                    })
                }
                other => {
                    let detail = "handing back a permit the file did not name failed".into();
                    run.outcome = Some(failed(step, None, other, detail));
                }
            },
            Waiting::Free => {
                run.freed = true;
                if let Reply::Failed(m) = reply {
                    run.outcome = Some(failed(
                        step,
                        None,
                        reply,
                        format!("freeing the guard failed: {m}"),
                    ));
                }
            }
        }
    }
}

fn body_of(
    files: &[VectorFile],
    file: usize,
    case: usize,
) -> Option<(&'static str, &str, &CaseBody)> {
    let f = files.get(file)?;
    let content = f.content.as_ref().ok()?;
    let c = content.cases.get(case)?;
    Some((content.guard.name, c.name.as_str(), c.body.as_ref().ok()?))
}

fn reply_json(reply: &Reply) -> Value {
    match reply {
        Reply::Result(r) => r.to_json(),
        Reply::ConfigError { field, kind } => {
            serde_json::json!({"config_error": {"field": field, "kind": kind}})
        }
        Reply::Failed(m) => serde_json::json!({ "failed": m }),
        Reply::Unsupported(m) => serde_json::json!({ "unsupported": m }),
    }
}

fn failed(step: &Step, expected: Option<&Value>, got: &Reply, detail: String) -> CaseOutcome {
    CaseOutcome::Failed(Box::new(Mismatch {
        op: step.op.to_owned(),
        step: step.origin.step,
        repetition: step.origin.repetition,
        repeat: 1,
        args: step.args.to_json(),
        expected: expected.cloned().unwrap_or(Value::Null),
        got: reply_json(got),
        detail,
    }))
}

fn accept_build(run: &mut Run, body: &CaseBody, step: &Step, reply: &Reply) {
    run.built = matches!(reply, Reply::Result(_));
    let expected = body
        .expect_error
        .as_ref()
        .map(|(field, kind)| serde_json::json!({"config_error": {"field": field, "kind": kind}}));
    match (reply, &body.expect_error) {
        (Reply::Unsupported(r), _) => {
            run.outcome = Some(CaseOutcome::NotCovered {
                op: "new".into(),
                step: None,
                reason: r.clone(),
            });
        }
        (Reply::Result(_), None) => {}
        (Reply::ConfigError { field, kind }, Some((f, k))) if field == f && kind == k => {
            run.outcome = Some(CaseOutcome::Passed {
                compared: 1,
                unobserved: 0,
            });
        }
        (Reply::ConfigError { .. }, Some(_)) => {
            let detail = "a different config error".to_owned();
            run.outcome = Some(failed(step, expected.as_ref(), reply, detail));
        }
        (Reply::Result(_), Some(_)) => {
            let detail = "the config was accepted; the file expects it refused".to_owned();
            run.outcome = Some(failed(step, expected.as_ref(), reply, detail));
        }
        (Reply::ConfigError { .. }, None) => {
            let detail = "the config was refused; the file expects it accepted".to_owned();
            run.outcome = Some(failed(step, None, reply, detail));
        }
        (Reply::Failed(m), _) => {
            let detail = format!("building the guard failed: {m}");
            run.outcome = Some(failed(step, expected.as_ref(), reply, detail));
        }
    }
}

fn accept_op(run: &mut Run, p: &Prepared, step: &Step, hold: Option<u64>, reply: &Reply) {
    let with_repeat = |mut o: CaseOutcome| {
        if let CaseOutcome::Failed(m) = &mut o {
            m.repeat = p.repeat;
        }
        o
    };
    let record = match reply {
        Reply::Result(r) => r,
        Reply::Unsupported(r) => {
            run.outcome = Some(CaseOutcome::NotCovered {
                op: step.op.to_owned(),
                step: Some(p.index),
                reason: r.clone(),
            });
            return;
        }
        Reply::Failed(m) => {
            let detail = format!("the backend failed: {m}");
            run.outcome = Some(with_repeat(failed(step, p.expect.as_ref(), reply, detail)));
            return;
        }
        Reply::ConfigError { .. } => {
            let detail = "an unexpected config error".to_owned();
            run.outcome = Some(with_repeat(failed(step, p.expect.as_ref(), reply, detail)));
            return;
        }
    };
    if let (
        Permits::Grant {
            by,
            granted,
            unnamed,
        },
        Some(h),
    ) = (p.op.permits, hold)
    {
        let path = match granted {
            Granted::Has(path) | Granted::IsTrue(path) => path,
        };
        let is_granted = match (granted, record.get(path)) {
            (_, Some(Entry::Unobservable)) => {
                let detail = format!(
                    "the backend must observe `{path}`: it says whether a permit was granted"
                );
                run.outcome = Some(with_repeat(failed(step, p.expect.as_ref(), reply, detail)));
                return;
            }
            (Granted::Has(_), e) => e.is_some(),
            (Granted::IsTrue(_), e) => e == Some(&Entry::Value(Scalar::Bool(true))),
        };
        if is_granted {
            match (&p.permit, by, unnamed) {
                (PermitRef::Name(n), By::Name(_), _) => {
                    run.named.entry(n.clone()).or_default().push_back(h);
                }
                (_, By::Name(_), Unnamed::Release(op)) => run.release = Some((op, h)),
                (_, By::Index(_), _) => run.numbered.push(Some(h)),
                _ => {}
            }
        }
    }
    if let Some(expected) = &p.expect {
        match compare(expected, record, p.op.compare) {
            Ok((compared, unobserved)) => {
                run.compared += compared;
                run.unobserved += unobserved;
            }
            Err(detail) => {
                run.outcome = Some(with_repeat(failed(step, Some(expected), reply, detail)));
                return;
            }
        }
    }
    run.repetition += 1;
    if run.repetition > p.repeat {
        run.step += 1;
        run.repetition = 1;
    }
}

/// Whether an unobservable leaf at `q` covers the expected path `p`.
fn covers(q: &str, p: &str) -> bool {
    q.is_empty()
        || p == q
        || p.strip_prefix(q)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

fn top_key(p: &str) -> &str {
    let end = p.find(['.', '[']).unwrap_or(p.len());
    p.get(..end).unwrap_or(p)
}

fn show(e: &Entry) -> String {
    match e {
        Entry::Value(s) => s.to_string(),
        Entry::EmptyList => "[]".into(),
        Entry::EmptyObject => "{}".into(),
        Entry::Unobservable => "<unobservable>".into(),
    }
}

fn at(p: &str) -> String {
    if p.is_empty() {
        "the result".into()
    } else {
        format!("`{p}`")
    }
}

/// Compare `expected` (JSON) with a backend's `got`: `Ok((compared, unobserved))` or where
/// they differ.
pub(crate) fn compare(
    expected: &Value,
    got: &Record,
    mode: Compare,
) -> Result<(usize, usize), String> {
    let mut want = Vec::new();
    flatten(expected, String::new(), &mut |p, e| want.push((p, e)));
    let keys: Vec<&str> = want.iter().map(|(p, _)| top_key(p)).collect();
    let mut compared = 0;
    let mut unobserved = 0;
    for (p, w) in &want {
        match got.get(p) {
            Some(Entry::Unobservable) => unobserved += 1,
            Some(g) => {
                let same = match (w, g) {
                    (Entry::Value(a), Entry::Value(b)) => a.same(b),
                    (a, b) => a == b,
                };
                if !same {
                    return Err(format!(
                        "at {}: expected {}, got {}",
                        at(p),
                        show(w),
                        show(g)
                    ));
                }
                compared += 1;
            }
            None => {
                if got
                    .entries()
                    .any(|(q, e)| *e == Entry::Unobservable && covers(q, p))
                {
                    unobserved += 1;
                } else {
                    return Err(format!("at {}: expected {}, got nothing", at(p), show(w)));
                }
            }
        }
    }
    for (q, e) in got.entries() {
        if *e == Entry::Unobservable || want.iter().any(|(p, _)| p == q) {
            continue;
        }
        if mode == Compare::Subset && !keys.contains(&top_key(q)) {
            continue;
        }
        return Err(format!(
            "at {}: got {} that is not expected",
            at(q),
            show(e)
        ));
    }
    Ok((compared, unobserved))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exact_comparison_finds_every_difference() {
        let r = |v: Value| Record::from_json(&v);
        let exact = Compare::Exact;
        assert_eq!(compare(&json!(3), &r(json!(3)), exact), Ok((1, 0)));
        assert!(compare(&json!(3), &r(json!(3.0)), exact)
            .unwrap_err()
            .contains("expected 3, got 3.0"));
        assert!(
            compare(&json!({"a": 1}), &r(json!({"a": 1, "b": 2})), exact)
                .unwrap_err()
                .contains("`b`")
        );
        assert!(
            compare(&json!({"a": 1, "b": 2}), &r(json!({"a": 1})), exact)
                .unwrap_err()
                .contains("got nothing")
        );
        assert!(compare(&json!({"d": []}), &r(json!({"d": [1]})), exact).is_err());
        assert_eq!(
            compare(&json!({"d": []}), &r(json!({"d": []})), exact),
            Ok((1, 0))
        );
        assert!(compare(&json!(null), &r(json!(false)), exact).is_err());
    }

    #[test]
    fn subset_comparison_ignores_unnamed_counters_only() {
        let got = Record::from_json(&json!({"a": 1, "b": 2, "l": [1, 2]}));
        assert_eq!(compare(&json!({"a": 1}), &got, Compare::Subset), Ok((1, 0)));
        assert_eq!(
            compare(&json!({"l": [1, 2]}), &got, Compare::Subset),
            Ok((2, 0))
        );
        assert!(compare(&json!({"l": [1]}), &got, Compare::Subset).is_err());
        assert!(compare(&json!({"zz": 1}), &got, Compare::Subset).is_err());
    }

    #[test]
    fn unobservable_values_are_counted_never_passed_as_equal() {
        let got = Record::new()
            .with("admitted", "call")
            .with_unobservable("generation");
        assert_eq!(
            compare(
                &json!({"admitted": "call", "generation": 4}),
                &got,
                Compare::Exact
            ),
            Ok((1, 1))
        );
        assert!(compare(
            &json!({"admitted": "probe", "generation": 4}),
            &got,
            Compare::Exact
        )
        .is_err());
        let whole = Record::unobservable();
        assert_eq!(
            compare(&json!({"a": {"b": 1}, "c": [1, 2]}), &whole, Compare::Exact),
            Ok((0, 3))
        );
        let part = Record::new().with_unobservable("a").with("c", 1u64);
        assert_eq!(
            compare(
                &json!({"a": {"b": 1}, "ab": 2, "c": 1}),
                &part,
                Compare::Exact
            )
            .unwrap_err(),
            "at `ab`: expected 2, got nothing"
        );
    }

    #[test]
    fn failures_become_config_errors_naming_the_field() {
        let e = guards_core::ConfigError::new("window", guards_core::ConfigErrorKind::Zero, "x");
        assert_eq!(
            Reply::from_failure(&Failure::from(e)),
            Reply::ConfigError {
                field: "window".into(),
                kind: "zero".into()
            }
        );
        let f = crate::schema::BULKHEAD
            .build(
                [("max_concurrent", crate::schema::Input::Str("x"))],
                crate::schema::DurationUnit::Nanos,
            )
            .unwrap_err();
        assert_eq!(
            Reply::from_failure(&f),
            Reply::ConfigError {
                field: "max_concurrent".into(),
                kind: "wrong_type".into()
            }
        );
        assert!(matches!(
            Reply::from_failure(&Failure::code(GuardsResult::NullArgument)),
            Reply::Failed(_)
        ));
    }
}
