//! Traces of single actions: every attempt, queue wait, guard decision, timeout and
//! answer of one request, at every hop, with its virtual time.
//!
//! A run traces the first [`TraceSpec::count`] actions that start at or after
//! [`TraceSpec::from`] (of one entry, or of any). Each [`Trace`] lists its events in the
//! order they happened; [`Trace::timeline`] prints them as an indented timeline, one hop
//! deeper per call:
//!
//! ```text
//! 20:00:07.000312  checkout #1                start
//! 20:00:07.000312    app->shop-api.checkout  attempt 1 sent to shop-api[2], timeout 2000.000 ms
//! 20:00:07.000312      shop-api[2] #2        queued behind 1,234
//! ...
//! ```
//!
//! Tracing costs nothing when it is off and a little per traced call when it is on.
//!
//! # Examples
//! ```
//! use guards_sim::basketly::basketly;
//! let r = basketly("C8", 1, Some("20:00:08"),
//!     &["trace.at=20:00:07", "trace.entry=checkout"]).unwrap();
//! let t = &r.traces[0];
//! assert_eq!(t.entry, "checkout");
//! assert!(t.timeline().contains("attempt 1 sent to shop-api"));
//! ```

use core::fmt;

use guards_core::Nanos;
use serde_json::{json, Value};

use crate::topology::clock;

/// The most actions one run traces.
pub const MAX_TRACES: u32 = 1000;

/// Which actions to trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSpec {
    /// Trace actions that start at or after this instant.
    pub from: Nanos,
    /// Only actions of this entry (by name); `None`: any entry.
    pub entry: Option<String>,
    /// How many actions (1 to [`MAX_TRACES`]).
    pub count: u32,
}

/// How an answer or a call ended, as a trace shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// A full, successful answer.
    Ok,
    /// A successful answer without an optional part (a brownout fallback).
    Degraded,
    /// An ordinary error.
    Error,
    /// "Overloaded, don't retry" (a 503): refused or shed.
    Overloaded,
    /// The deadline passed (dropped at dequeue or cut by a statement timeout).
    Deadline,
}

impl Ended {
    fn name(self) -> &'static str {
        match self {
            Ended::Ok => "ok",
            Ended::Degraded => "ok, degraded",
            Ended::Error => "error",
            Ended::Overloaded => "overloaded (503)",
            Ended::Deadline => "deadline passed",
        }
    }
}

/// What happened.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TraceWhat {
    /// The action starts at its client.
    Start,
    /// The caller sends an attempt (or a hedge) over `edge` to `to`.
    Send {
        /// The edge.
        edge: String,
        /// Attempt number of this call step (a hedge keeps the number of its first attempt).
        attempt: u32,
        /// A hedge.
        hedge: bool,
        /// A breaker probe.
        probe: bool,
        /// The callee instance, e.g. `stock[0]`.
        to: String,
        /// How long the caller will wait (`None`: unbounded).
        wait: Option<Nanos>,
        /// The deadline sent with it, as time left (`None`: none sent).
        deadline: Option<Nanos>,
    },
    /// A local guard refused the attempt before it was sent: `breaker open`,
    /// `bulkhead full`, or `no time left`.
    NotSent {
        /// The edge.
        edge: String,
        /// Why.
        why: &'static str,
    },
    /// The callee refused the call at its door: `admission limit`, `shed`, `outage`, or
    /// `queue full`.
    Refused {
        /// Why.
        why: &'static str,
    },
    /// The call waits for a server behind `ahead` others.
    Queued {
        /// Calls waiting before it arrived.
        ahead: u32,
    },
    /// The call got a server after waiting `waited`.
    Started {
        /// Time in the queue.
        waited: Nanos,
    },
    /// The queue dropped the call: `age limit` or `deadline passed`.
    Dropped {
        /// Why.
        why: &'static str,
    },
    /// A work step takes `took` (`cut`: the deadline will cut it at that instant).
    Work {
        /// The drawn duration (slowdowns included).
        took: Nanos,
        /// When the deadline cuts it, if it will.
        cut: Option<Nanos>,
    },
    /// A side effect committed (`duplicate`: the action had committed already).
    Commit {
        /// A second commit of the same action.
        duplicate: bool,
    },
    /// The caller stopped waiting for an attempt over `edge`.
    Timeout {
        /// The edge.
        edge: String,
        /// How long it had waited.
        after: Nanos,
    },
    /// The callee answered an attempt over `edge`.
    Answer {
        /// The edge.
        edge: String,
        /// How the answer ended.
        ended: Ended,
        /// The attempt's latency.
        latency: Nanos,
    },
    /// The retry policy sends another attempt after `after`.
    Retry {
        /// The backoff wait.
        after: Nanos,
    },
    /// The retry policy gives up: `budget` (the retry budget refused) or `policy`
    /// (attempts used up, not retryable, no time, or not idempotent).
    GiveUp {
        /// Why.
        why: &'static str,
    },
    /// The call step failed for good and the caller serves its fallback (brownout).
    Fallback,
    /// The call is over and answers its caller (`stale`: a caller up the chain had given
    /// up already).
    Done {
        /// How it ended.
        ended: Ended,
        /// Some caller up the chain had given up.
        stale: bool,
    },
    /// The caller cancelled the call.
    Cancelled,
    /// An operator's flush dropped the call from its queue.
    Flushed,
}

impl TraceWhat {
    /// Stable snake_case name of the event, for bindings.
    pub fn kind(&self) -> &'static str {
        match self {
            TraceWhat::Start => "start",
            TraceWhat::Send { .. } => "send",
            TraceWhat::NotSent { .. } => "not_sent",
            TraceWhat::Refused { .. } => "refused",
            TraceWhat::Queued { .. } => "queued",
            TraceWhat::Started { .. } => "started",
            TraceWhat::Dropped { .. } => "dropped",
            TraceWhat::Work { .. } => "work",
            TraceWhat::Commit { .. } => "commit",
            TraceWhat::Timeout { .. } => "timeout",
            TraceWhat::Answer { .. } => "answer",
            TraceWhat::Retry { .. } => "retry",
            TraceWhat::GiveUp { .. } => "give_up",
            TraceWhat::Fallback => "fallback",
            TraceWhat::Done { .. } => "done",
            TraceWhat::Cancelled => "cancelled",
            TraceWhat::Flushed => "flushed",
        }
    }

    fn details(&self) -> Value {
        let ms = |d: Nanos| d.as_u64() as f64 / 1e6;
        match self {
            TraceWhat::Send {
                edge,
                attempt,
                hedge,
                probe,
                to,
                wait,
                deadline,
            } => json!({
                "edge": edge, "attempt": attempt, "hedge": hedge, "probe": probe, "to": to,
                "wait_ms": wait.map(ms), "deadline_ms": deadline.map(ms),
            }),
            TraceWhat::NotSent { edge, why } => json!({"edge": edge, "why": why}),
            TraceWhat::Refused { why } | TraceWhat::Dropped { why } | TraceWhat::GiveUp { why } => {
                json!({ "why": why })
            }
            TraceWhat::Queued { ahead } => json!({ "ahead": ahead }),
            TraceWhat::Started { waited } => json!({"waited_ms": ms(*waited)}),
            TraceWhat::Work { took, cut } => {
                json!({"took_ms": ms(*took), "cut_at": cut.map(clock::format_micros)})
            }
            TraceWhat::Commit { duplicate } => json!({ "duplicate": duplicate }),
            TraceWhat::Timeout { edge, after } => json!({"edge": edge, "after_ms": ms(*after)}),
            TraceWhat::Answer {
                edge,
                ended,
                latency,
            } => json!({"edge": edge, "ended": ended.name(), "latency_ms": ms(*latency)}),
            TraceWhat::Retry { after } => json!({"after_ms": ms(*after)}),
            TraceWhat::Done { ended, stale } => json!({"ended": ended.name(), "stale": stale}),
            TraceWhat::Start | TraceWhat::Fallback | TraceWhat::Cancelled | TraceWhat::Flushed => {
                json!({})
            }
        }
    }
}

fn ms_text(d: Nanos) -> String {
    format!("{:.3} ms", d.as_u64() as f64 / 1e6)
}

impl fmt::Display for TraceWhat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceWhat::Start => write!(f, "start"),
            TraceWhat::Send {
                attempt,
                hedge,
                probe,
                to,
                wait,
                deadline,
                ..
            } => {
                let what = if *hedge {
                    "hedge".to_string()
                } else {
                    format!("attempt {attempt}")
                };
                write!(
                    f,
                    "{what}{} sent to {to}",
                    if *probe { " (probe)" } else { "" }
                )?;
                match wait {
                    Some(w) => write!(f, ", timeout {}", ms_text(*w))?,
                    None => write!(f, ", no timeout")?,
                }
                match deadline {
                    Some(d) => write!(f, ", deadline {} sent", ms_text(*d)),
                    None => write!(f, ", no deadline sent"),
                }
            }
            TraceWhat::NotSent { why, .. } => write!(f, "not sent: {why}"),
            TraceWhat::Refused { why } => write!(f, "refused at the door: {why}"),
            TraceWhat::Queued { ahead } => write!(f, "queued behind {ahead}"),
            TraceWhat::Started { waited } => write!(f, "got a server after {}", ms_text(*waited)),
            TraceWhat::Dropped { why } => write!(f, "dropped from the queue: {why}"),
            TraceWhat::Work { took, cut } => match cut {
                Some(c) => write!(
                    f,
                    "works {}, cut by its deadline at {}",
                    ms_text(*took),
                    clock::format_micros(*c)
                ),
                None => write!(f, "works {}", ms_text(*took)),
            },
            TraceWhat::Commit { duplicate } => {
                if *duplicate {
                    write!(f, "commits again (a duplicate)")
                } else {
                    write!(f, "commits")
                }
            }
            TraceWhat::Timeout { after, .. } => {
                write!(f, "stops waiting after {} (timeout)", ms_text(*after))
            }
            TraceWhat::Answer { ended, latency, .. } => {
                write!(f, "answer: {} after {}", ended.name(), ms_text(*latency))
            }
            TraceWhat::Retry { after } => write!(f, "retries after {}", ms_text(*after)),
            TraceWhat::GiveUp { why } => write!(f, "gives up: {why}"),
            TraceWhat::Fallback => write!(f, "serves its fallback (brownout)"),
            TraceWhat::Done { ended, stale } => write!(
                f,
                "done: {}{}",
                ended.name(),
                if *stale {
                    " (stale: a caller had given up)"
                } else {
                    ""
                }
            ),
            TraceWhat::Cancelled => write!(f, "cancelled by its caller"),
            TraceWhat::Flushed => write!(f, "flushed from the queue"),
        }
    }
}

/// One event of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEvent {
    /// When.
    pub at: Nanos,
    /// Hops from the action (0: the action at its client, 1: its call at the first
    /// service, ...).
    pub depth: u32,
    /// Where: the call, e.g. `shop-api[2] #2` (service, instance, call number in the trace).
    pub place: String,
    /// What happened.
    pub what: TraceWhat,
}

/// The events of one traced action.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The action's number in the run (its idempotency key).
    pub root: u64,
    /// Its entry (request type).
    pub entry: String,
    /// When it started.
    pub start: Nanos,
    /// What happened, in order.
    pub events: Vec<TraceEvent>,
}

impl Trace {
    /// The trace as an indented timeline, one line per event.
    pub fn timeline(&self) -> String {
        let width = self
            .events
            .iter()
            .map(|e| 2 * e.depth as usize + e.place.len())
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        for e in &self.events {
            let place = format!("{}{}", "  ".repeat(e.depth as usize), e.place);
            out.push_str(&format!(
                "{}  {place:<width$}  {}\n",
                clock::format_micros(e.at),
                e.what
            ));
        }
        out
    }

    /// The trace as JSON: `{"root", "entry", "start", "events": [{"t", "depth", "place",
    /// "event", "text", ...details}]}`.
    pub fn to_json_value(&self) -> Value {
        let events: Vec<Value> = self
            .events
            .iter()
            .map(|e| {
                let mut v = json!({
                    "t": clock::format_micros(e.at),
                    "depth": e.depth,
                    "place": e.place,
                    "event": e.what.kind(),
                    "text": e.what.to_string(),
                });
                if let (Value::Object(o), Value::Object(d)) = (&mut v, e.what.details()) {
                    o.extend(d);
                }
                v
            })
            .collect();
        json!({
            "root": self.root,
            "entry": self.entry,
            "start": clock::format_micros(self.start),
            "events": events,
        })
    }
}
