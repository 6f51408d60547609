//! Recording the traces of single actions (see [`crate::trace`]): which actions are
//! traced, the number and depth of each of their calls, and their events.

use std::collections::HashMap;

use guards_core::Nanos;

use super::call::CallRef;
use super::Sim;
use crate::error::SimError;
use crate::trace::{Trace, TraceEvent, TraceSpec, TraceWhat, MAX_TRACES};

/// Traces being recorded.
#[derive(Debug)]
pub(crate) struct Tracer {
    entry: Option<usize>,
    from: Nanos,
    remaining: u32,
    /// Traced action (root) → its trace.
    roots: HashMap<u64, usize>,
    /// Call of a traced action → (its number in the trace, its depth).
    calls: HashMap<u64, (u32, u32)>,
    next_number: Vec<u32>,
    pub traces: Vec<Trace>,
}

/// Record a trace event for call `r` when tracing is on; the event is not even built
/// otherwise.
macro_rules! trace {
    ($sim:expr, $r:expr, $what:expr) => {
        if $sim.tracer.is_some() {
            let what = $what;
            $sim.record_trace($r, what);
        }
    };
}
pub(crate) use trace;

impl Sim {
    /// Trace the actions `spec` picks (see [`crate::trace`]); the traces come back in
    /// [`SimResult::traces`](crate::SimResult::traces). Call it before the run starts.
    pub fn set_trace(&mut self, spec: &TraceSpec) -> Result<(), SimError> {
        let entry = match &spec.entry {
            None => None,
            Some(name) => Some(
                self.topo
                    .entries
                    .iter()
                    .position(|e| &e.name == name)
                    .ok_or_else(|| {
                        let names: Vec<&str> =
                            self.topo.entries.iter().map(|e| e.name.as_str()).collect();
                        SimError::bad_value(
                            "trace.entry",
                            name,
                            &format!("one of {}, or any", names.join(", ")),
                        )
                    })?,
            ),
        };
        if spec.count == 0 || spec.count > MAX_TRACES {
            return Err(SimError::bad_value(
                "trace.count",
                &spec.count.to_string(),
                &format!("1..={MAX_TRACES}"),
            ));
        }
        self.tracer = Some(Box::new(Tracer {
            entry,
            from: spec.from,
            remaining: spec.count,
            roots: HashMap::new(),
            calls: HashMap::new(),
            next_number: Vec::new(),
            traces: Vec::new(),
        }));
        Ok(())
    }

    /// Start tracing the new action `r` of entry `e` if the spec picks it.
    pub(super) fn trace_root(&mut self, r: CallRef, e: usize) {
        let now = self.now;
        let Some(t) = self.tracer.as_mut() else {
            return;
        };
        if t.remaining == 0 || now < t.from || t.entry.is_some_and(|x| x != e) {
            return;
        }
        let Some(c) = self.calls.get(r) else { return };
        t.remaining -= 1;
        t.roots.insert(c.root, t.traces.len());
        t.next_number.push(1);
        t.traces.push(Trace {
            root: c.root,
            entry: self.topo.entries[e].name.clone(),
            start: now,
            events: Vec::new(),
        });
        self.record_trace(r, TraceWhat::Start);
    }

    /// Record `what` for call `r` if it belongs to a traced action.
    pub(super) fn record_trace(&mut self, r: CallRef, what: TraceWhat) {
        let now = self.now;
        let Some(c) = self.calls.get(r) else { return };
        let Some(t) = self.tracer.as_mut() else {
            return;
        };
        let Some(&ti) = t.roots.get(&c.root) else {
            return;
        };
        let key = r.to_u64();
        let (number, depth) = match t.calls.get(&key) {
            Some(x) => *x,
            None => {
                let depth = c
                    .parent()
                    .and_then(|p| t.calls.get(&p.to_u64()))
                    .map_or(0, |(_, d)| d + 1);
                let number = t.next_number[ti];
                t.next_number[ti] += 1;
                t.calls.insert(key, (number, depth));
                (number, depth)
            }
        };
        let place = if depth == 0 {
            format!("{} #{number}", t.traces[ti].entry)
        } else {
            format!(
                "{}[{}] #{number}",
                self.topo.services[c.svc as usize].name, c.inst
            )
        };
        t.traces[ti].events.push(TraceEvent {
            at: now,
            depth,
            place,
            what,
        });
    }
}
