//! A backend that runs every step directly on guards-core: the reference every other
//! backend (C, Python, Node) is compared with. One module per vector file; each builds
//! its case from the `new` step's arguments (configs through ffi's schemas, see
//! `guards::vectors::config`) and runs the file's ops as `tests/vectors/README.md` says.

use std::collections::HashMap;

use guards::error::Failure;
use guards::vectors::{ArgError, Args, Backend, Record, Reply, Step};
use guards_core::{ConfigError, Nanos, Priority};

mod adaptive_throttle;
mod admission;
mod backoff;
mod brownout;
mod bulkhead;
mod circuit_breaker;
mod deadline;
mod hedging;
mod http;
mod latency_tracker;
mod limit;
mod limiter;
mod outcome;
mod queue_discipline;
mod retry_budget;
mod retry_driver;
mod retry_policy;

/// A step's result, or the reply that replaces it (an error).
pub type Res<T> = Result<T, Reply>;

/// Turn the errors steps meet into replies.
pub trait OrReply<T> {
    fn r(self) -> Res<T>;
}

impl<T> OrReply<T> for Result<T, ArgError> {
    fn r(self) -> Res<T> {
        self.map_err(|e| Reply::Failed(e.to_string()))
    }
}

impl<T> OrReply<T> for Result<T, Failure> {
    fn r(self) -> Res<T> {
        self.map_err(|f| Reply::from_failure(&f))
    }
}

impl<T> OrReply<T> for Result<T, ConfigError> {
    fn r(self) -> Res<T> {
        self.map_err(|e| Reply::from_failure(&Failure::from(e)))
    }
}

/// One case's guard: runs the file's ops.
pub trait Case {
    fn run(&mut self, op: &str, args: &Args) -> Res<Record>;
}

/// An op the guard does not have: the interpreter never sends one, so this is a bug.
pub fn unknown(op: &str) -> Res<Record> {
    Err(Reply::Failed(format!("the core backend has no op `{op}`")))
}

/// `now` (nanoseconds).
pub fn now(args: &Args) -> Res<Nanos> {
    args.u64("now").map(Nanos).r()
}

/// An integer argument in nanoseconds.
pub fn nanos(args: &Args, name: &str) -> Res<Nanos> {
    args.u64(name).map(Nanos).r()
}

/// The priority level `priority`.
pub fn priority(args: &Args) -> Res<Priority> {
    let level = args.u64("priority").r()?;
    u8::try_from(level)
        .ok()
        .and_then(Priority::new)
        .ok_or_else(|| Reply::Failed(format!("priority {level} is not a level 0..=7")))
}

/// Permits held by handle (`hold` on a granting op, `permit` on one that uses it).
#[derive(Debug)]
pub struct Held<P> {
    by_handle: HashMap<u64, P>,
}

impl<P> Default for Held<P> {
    fn default() -> Self {
        Held {
            by_handle: HashMap::new(),
        }
    }
}

impl<P> Held<P> {
    /// Keep `p` if the step says `hold`; otherwise give it to `drop`.
    pub fn keep(&mut self, args: &Args, p: P, drop: impl FnOnce(P)) -> Res<()> {
        match args.opt_u64("hold").r()? {
            Some(h) => {
                self.by_handle.insert(h, p);
            }
            None => drop(p),
        }
        Ok(())
    }

    /// The permit the step's `permit` names, taken out.
    pub fn take(&mut self, args: &Args) -> Res<P> {
        let h = args.u64("permit").r()?;
        self.by_handle
            .remove(&h)
            .ok_or_else(|| Reply::Failed(format!("no permit held under handle {h}")))
    }

    /// The permit the step's `permit` names, if it has one.
    pub fn take_opt(&mut self, args: &Args) -> Res<Option<P>> {
        if args.has("permit") {
            self.take(args).map(Some)
        } else {
            Ok(None)
        }
    }

    /// The permit the step's `permit` names, left held.
    pub fn peek(&self, args: &Args) -> Res<&P> {
        let h = args.u64("permit").r()?;
        self.by_handle
            .get(&h)
            .ok_or_else(|| Reply::Failed(format!("no permit held under handle {h}")))
    }
}

/// Runs every step on guards-core.
#[derive(Default)]
pub struct CoreBackend {
    case: Option<Box<dyn Case>>,
}

fn build(step: &Step) -> Res<Box<dyn Case>> {
    let a = &step.args;
    match step.guard {
        "adaptive_throttle" => adaptive_throttle::build(a),
        "admission" => admission::build(a),
        "backoff" => backoff::build(a),
        "brownout" => brownout::build(a),
        "bulkhead" => bulkhead::build(a),
        "circuit_breaker" => circuit_breaker::build(a),
        "deadline" => deadline::build(a),
        "hedging" => hedging::build(a),
        "http" => http::build(a),
        "latency_tracker" => latency_tracker::build(a),
        "limit" => limit::build(a),
        "limiter" => limiter::build(a),
        "outcome" => outcome::build(a),
        "queue_discipline" => queue_discipline::build(a),
        "retry_budget" => retry_budget::build(a),
        "retry_driver" => retry_driver::build(a),
        "retry_policy" => retry_policy::build(a),
        other => Err(Reply::Unsupported(format!("no core backend for `{other}`"))),
    }
}

impl Backend for CoreBackend {
    fn run(&mut self, step: &Step) -> Reply {
        match step.op {
            "new" => match build(step) {
                Ok(c) => {
                    self.case = Some(c);
                    Reply::Result(Record::null())
                }
                Err(reply) => reply,
            },
            "free" => {
                self.case = None;
                Reply::Result(Record::null())
            }
            op => match &mut self.case {
                None => Reply::Failed(format!("`{op}` before `new`")),
                Some(c) => match c.run(op, &step.args) {
                    Ok(r) => Reply::Result(r),
                    Err(reply) => reply,
                },
            },
        }
    }
}

/// A JSON result as a record.
pub fn json(v: serde_json::Value) -> Res<Record> {
    Ok(Record::from_json(&v))
}

/// `null`: the result of an op that returns nothing.
pub fn done() -> Res<Record> {
    Ok(Record::null())
}
