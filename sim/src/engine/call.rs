//! Calls in flight, kept in a slab with generation-checked references.
//!
//! A [`Call`] is one request being handled by one service instance: an action at a client,
//! a request at shop-api, a call inside stock, a query at the database. The caller's side
//! of each attempt it makes lives in its [`Attempt`] slots. References carry a generation,
//! so a reference to a freed (and maybe reused) slot is recognised as stale.

use guards_core::{Nanos, Priority};

use crate::guards::{admission::DoorTicket, bulkhead::GateTicket, circuit_breaker::BreakerTicket};

/// A generation-checked reference to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallRef {
    pub idx: u32,
    pub gen: u32,
}

impl CallRef {
    /// Packed into one `u64` (for queue ids).
    #[inline]
    pub fn to_u64(self) -> u64 {
        (u64::from(self.idx) << 32) | u64::from(self.gen)
    }

    /// Unpacked from [`CallRef::to_u64`].
    #[inline]
    pub fn from_u64(v: u64) -> Self {
        CallRef {
            idx: (v >> 32) as u32,
            gen: v as u32,
        }
    }
}

/// Where a call is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Waiting for a server.
    Queued,
    /// Holding a server (or at a client), running its steps.
    Running,
}

/// How an attempt, a step or an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Answered successfully.
    Ok,
    /// An ordinary error answer (retryable).
    Error,
    /// "Overloaded, don't retry" (503): the callee refused or shed it.
    Overloaded,
    /// The callee found the deadline passed (dropped at dequeue or cut by a statement timeout).
    Deadline,
    /// The caller stopped waiting (its attempt timeout).
    Timeout,
    /// The caller's breaker refused the attempt.
    BreakerOpen,
    /// The caller's bulkhead refused the attempt.
    GateFull,
    /// The caller had no time left to start an attempt.
    NoTime,
}

impl Outcome {
    /// Whether it ran out of time (counted as a timeout for breakers and metrics).
    pub fn is_time(self) -> bool {
        matches!(self, Outcome::Deadline | Outcome::Timeout | Outcome::NoTime)
    }
}

/// The caller's side of one attempt.
#[derive(Debug)]
pub(crate) struct Attempt {
    pub child: CallRef,
    pub started: Nanos,
    pub token: u32,
    pub breaker: Option<BreakerTicket>,
    pub gate: Option<GateTicket>,
}

/// One request at one service instance.
#[derive(Debug)]
pub(crate) struct Call {
    pub gen: u32,
    pub live: bool,
    pub parent: Option<CallRef>,
    pub svc: u32,
    pub inst: u32,
    pub op: u32,
    /// The edge this call arrived over (`u32::MAX` for an action at a client).
    pub edge: u32,
    pub entry: u32,
    /// The action (root) this call serves: the idempotency key of its side effects.
    pub root: u64,
    pub priority: Priority,
    /// When the deadline this call received expires (`Nanos::MAX`: none).
    pub expires_at: Nanos,
    pub arrived: Nanos,
    pub phase: Phase,
    pub has_server: bool,
    /// Counted in its instance's calls inside (admitted at the door).
    pub inside: bool,
    pub degraded: bool,
    pub step: u32,
    /// Bumped to invalidate this call's pending work, backoff and hedge events.
    pub token: u32,
    pub ticket: Option<DoorTicket>,
    // The current call step, as a caller.
    pub attempts: u32,
    pub hedges: u32,
    pub call_started: Nanos,
    pub prev_delay: Nanos,
    pub slots: [Option<Attempt>; 2],
    pub last_fail: Outcome,
}

impl Call {
    fn blank(gen: u32) -> Self {
        Call {
            gen,
            live: false,
            parent: None,
            svc: 0,
            inst: 0,
            op: 0,
            edge: u32::MAX,
            entry: 0,
            root: 0,
            priority: Priority::CRITICAL,
            expires_at: Nanos::MAX,
            arrived: Nanos::ZERO,
            phase: Phase::Queued,
            has_server: false,
            inside: false,
            degraded: false,
            step: 0,
            token: 0,
            ticket: None,
            attempts: 0,
            hedges: 0,
            call_started: Nanos::ZERO,
            prev_delay: Nanos::ZERO,
            slots: [None, None],
            last_fail: Outcome::Error,
        }
    }

    /// Reset the per-step caller state before a new call step.
    pub fn reset_invocation(&mut self, now: Nanos) {
        self.attempts = 0;
        self.hedges = 0;
        self.call_started = now;
        self.prev_delay = Nanos::ZERO;
        self.last_fail = Outcome::Error;
    }

    /// Whether an attempt of this call is waiting for `child`.
    #[inline]
    pub fn waits_for(&self, child: CallRef) -> bool {
        self.slots
            .iter()
            .any(|s| s.as_ref().is_some_and(|a| a.child == child))
    }

    /// Number of attempts still outstanding.
    pub fn outstanding(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }
}

/// What a new call needs to know.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewCall {
    pub parent: Option<CallRef>,
    pub svc: u32,
    pub inst: u32,
    pub op: u32,
    pub edge: u32,
    pub entry: u32,
    pub root: u64,
    pub priority: Priority,
    pub expires_at: Nanos,
    pub now: Nanos,
}

/// The slab of calls.
#[derive(Debug, Default)]
pub(crate) struct Slab {
    calls: Vec<Call>,
    free: Vec<u32>,
    live: usize,
    peak: usize,
}

impl Slab {
    /// Allocate a call.
    pub fn insert(&mut self, n: NewCall) -> CallRef {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.calls.push(Call::blank(0));
                (self.calls.len() - 1) as u32
            }
        };
        let c = &mut self.calls[idx as usize];
        let gen = c.gen.wrapping_add(1);
        *c = Call::blank(gen);
        c.live = true;
        c.parent = n.parent;
        c.svc = n.svc;
        c.inst = n.inst;
        c.op = n.op;
        c.edge = n.edge;
        c.entry = n.entry;
        c.root = n.root;
        c.priority = n.priority;
        c.expires_at = n.expires_at;
        c.arrived = n.now;
        self.live += 1;
        self.peak = self.peak.max(self.live);
        CallRef { idx, gen }
    }

    /// The call, if the reference is still valid.
    #[inline]
    pub fn get(&self, r: CallRef) -> Option<&Call> {
        match self.calls.get(r.idx as usize) {
            Some(c) if c.live && c.gen == r.gen => Some(c),
            _ => None,
        }
    }

    /// The call, mutably, if the reference is still valid.
    #[inline]
    pub fn get_mut(&mut self, r: CallRef) -> Option<&mut Call> {
        match self.calls.get_mut(r.idx as usize) {
            Some(c) if c.live && c.gen == r.gen => Some(c),
            _ => None,
        }
    }

    /// Free a call's slot (its reference becomes stale).
    pub fn remove(&mut self, r: CallRef) {
        if let Some(c) = self.get_mut(r) {
            c.live = false;
            c.slots = [None, None];
            c.ticket = None;
            self.free.push(r.idx);
            self.live -= 1;
        }
    }

    /// Calls alive now.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Most calls alive at once.
    pub fn peak(&self) -> usize {
        self.peak
    }
}
