//! Calls in flight, kept in a slab with generation-checked references.
//!
//! A [`Call`] is one request being handled by one service instance: an action at a client,
//! a request at shop-api, a call inside stock, a query at the database. The caller's side
//! of each attempt it makes lives in its [`Attempt`] slots. References carry a generation,
//! so a reference to a freed (and maybe reused) slot is recognised as stale.

use guards_core::{Nanos, Priority};

use crate::guards::{
    admission::DoorTicket, bulkhead::GateTicket, circuit_breaker::BreakerTicket,
    limiter::LimiterTicket,
};

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
    /// Not a call: the slab's slot is free.
    Free,
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

/// A guard's permit with the epoch of the guard that gave it: a guard replaced mid-run
/// (a timeline change) bumps its epoch, and permits of the old one are then dropped
/// instead of being given to the new one.
#[derive(Debug)]
pub(crate) struct Held<T> {
    pub epoch: u32,
    pub ticket: T,
}

/// The caller's side of one attempt.
#[derive(Debug)]
pub(crate) struct Attempt {
    pub child: CallRef,
    pub started: Nanos,
    pub token: u32,
    pub breaker: Option<Held<BreakerTicket>>,
    pub gate: Option<Held<GateTicket>>,
    pub limiter: Option<Held<LimiterTicket>>,
}

/// A parent that is no parent (an action at a client).
pub(crate) const NO_PARENT: CallRef = CallRef {
    idx: u32::MAX,
    gen: 0,
};

/// No index.
const NONE: u32 = u32::MAX;

/// One request at one service instance: what every call needs, in one cache line (the
/// queues of an overloaded run hold hundreds of thousands of calls, and each one is
/// touched when it leaves its queue). What only a call in the middle of a call step needs
/// is in its [`Caller`]; an admission ticket sits beside the slab. Service, operation,
/// step, edge and entry numbers fit 16 bits (`Sim::new` checks the topology's sizes).
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct Call {
    /// The caller's call ([`NO_PARENT`] for an action at a client).
    pub parent: CallRef,
    /// When the deadline this call received expires (`Nanos::MAX`: none).
    pub expires_at: Nanos,
    pub arrived: Nanos,
    /// The action (root) this call serves: the idempotency key of its side effects.
    pub root: u64,
    pub gen: u32,
    /// Bumped to invalidate this call's pending work, backoff and hedge events.
    pub token: u32,
    pub inst: u32,
    /// Index of its [`Caller`] state, once it made a call step.
    caller: u32,
    pub svc: u16,
    pub op: u16,
    pub step: u16,
    /// The edge this call arrived over ([`NO_EDGE`] for an action at a client).
    pub edge: u16,
    pub entry: u16,
    pub priority: Priority,
    pub phase: Phase,
    pub has_server: bool,
    /// Counted in its instance's calls inside (admitted at the door).
    pub inside: bool,
    pub degraded: bool,
    /// Its admission ticket is held beside the slab.
    has_ticket: bool,
}

/// The edge of an action at a client (it arrived over none).
pub(crate) const NO_EDGE: u16 = u16::MAX;

/// The most services, operations per service, steps per operation, edges and entries a
/// topology may have (they are kept in 16 bits; `u16::MAX` itself means "none").
pub(crate) const MAX_INDEX: usize = u16::MAX as usize - 1;

impl Call {
    fn blank(gen: u32) -> Self {
        Call {
            parent: NO_PARENT,
            expires_at: Nanos::MAX,
            arrived: Nanos::ZERO,
            root: 0,
            gen,
            token: 0,
            inst: 0,
            caller: NONE,
            svc: 0,
            op: 0,
            step: 0,
            edge: NO_EDGE,
            entry: 0,
            priority: Priority::CRITICAL,
            phase: Phase::Free,
            has_server: false,
            inside: false,
            degraded: false,
            has_ticket: false,
        }
    }

    /// The caller's call, if it has one.
    #[inline]
    pub fn parent(&self) -> Option<CallRef> {
        (self.parent != NO_PARENT).then_some(self.parent)
    }
}

/// The state of a call as a caller, during one call step: its attempts so far and the
/// copies (first attempt or retry, and a hedge) in flight.
#[derive(Debug)]
pub(crate) struct Caller {
    pub attempts: u32,
    pub hedges: u32,
    pub call_started: Nanos,
    pub prev_delay: Nanos,
    pub slots: [Option<Attempt>; 2],
}

impl Caller {
    const fn blank() -> Self {
        Caller {
            attempts: 0,
            hedges: 0,
            call_started: Nanos::ZERO,
            prev_delay: Nanos::ZERO,
            slots: [None, None],
        }
    }

    /// Whether an attempt is waiting for `child`.
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

/// A growable array in fixed-size chunks: growing never moves (or copies) what is
/// already stored, and each chunk keeps its elements' alignment.
#[derive(Debug)]
struct Chunked<T> {
    chunks: Vec<Box<[T; CHUNK]>>,
    len: usize,
}

/// Elements per chunk (a power of two).
const CHUNK: usize = 1 << 12;

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    /// One element more, a new chunk filled by `blank` when the last one is full.
    fn grow(&mut self, blank: impl Fn() -> T) {
        if self.len % CHUNK == 0 {
            let chunk: Box<[T]> = (0..CHUNK).map(|_| blank()).collect();
            match chunk.try_into() {
                Ok(c) => self.chunks.push(c),
                Err(_) => return,
            }
        }
        self.len += 1;
    }

    /// Element `i`: past the length but inside the last chunk, a blank one.
    #[inline]
    fn get(&self, i: usize) -> Option<&T> {
        Some(&self.chunks.get(i / CHUNK)?[i % CHUNK])
    }

    /// Element `i`, mutably (past the length but inside the last chunk, a blank one).
    #[inline]
    fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        Some(&mut self.chunks.get_mut(i / CHUNK)?[i % CHUNK])
    }
}

/// The tickets of one chunk of call indices.
type TicketChunk = [Option<Held<DoorTicket>>; CHUNK];

/// Admission tickets by call index, in chunks made only when a call of their range gets
/// a ticket (a run without admission control never makes one).
#[derive(Debug, Default)]
struct Tickets {
    chunks: Vec<Option<Box<TicketChunk>>>,
}

impl Tickets {
    fn slot(&mut self, i: usize) -> Option<&mut Option<Held<DoorTicket>>> {
        let chunk = self.chunks.get_mut(i / CHUNK)?.as_mut()?;
        Some(&mut chunk[i % CHUNK])
    }

    fn set(&mut self, i: usize, t: Held<DoorTicket>) {
        let k = i / CHUNK;
        if self.chunks.len() <= k {
            self.chunks.resize_with(k + 1, || None);
        }
        if self.chunks[k].is_none() {
            let c: Box<[Option<Held<DoorTicket>>]> = (0..CHUNK).map(|_| None).collect();
            // A boxed slice of CHUNK elements always converts.
            self.chunks[k] = c.try_into().ok();
        }
        if let Some(chunk) = self.chunks[k].as_mut() {
            chunk[i % CHUNK] = Some(t);
        }
    }

    fn bytes(&self) -> usize {
        self.chunks.iter().flatten().count()
            * CHUNK
            * core::mem::size_of::<Option<Held<DoorTicket>>>()
    }
}

/// The slab of calls, their caller states and their admission tickets.
#[derive(Debug, Default)]
pub(crate) struct Slab {
    calls: Chunked<Call>,
    free: Vec<u32>,
    /// Admission tickets by call index (beside the calls: only admitted calls touch it).
    tickets: Tickets,
    callers: Vec<Caller>,
    free_callers: Vec<u32>,
    live: usize,
    peak: usize,
}

impl Slab {
    /// Allocate a call.
    pub fn insert(&mut self, n: NewCall) -> CallRef {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.calls.grow(|| Call::blank(0));
                (self.calls.len - 1) as u32
            }
        };
        let Some(c) = self.calls.get_mut(idx as usize) else {
            return NO_PARENT;
        };
        let gen = c.gen.wrapping_add(1);
        // The topology's sizes were checked against MAX_INDEX: the numbers fit.
        *c = Call {
            parent: n.parent.unwrap_or(NO_PARENT),
            expires_at: n.expires_at,
            arrived: n.now,
            root: n.root,
            svc: n.svc as u16,
            inst: n.inst,
            op: n.op as u16,
            edge: n.edge as u16,
            entry: n.entry as u16,
            priority: n.priority,
            phase: Phase::Queued,
            ..Call::blank(gen)
        };
        self.live += 1;
        self.peak = self.peak.max(self.live);
        CallRef { idx, gen }
    }

    /// The call, if the reference is still valid.
    #[inline]
    pub fn get(&self, r: CallRef) -> Option<&Call> {
        match self.calls.get(r.idx as usize) {
            Some(c) if c.phase != Phase::Free && c.gen == r.gen => Some(c),
            _ => None,
        }
    }

    /// The call, mutably, if the reference is still valid.
    #[inline]
    pub fn get_mut(&mut self, r: CallRef) -> Option<&mut Call> {
        match self.calls.get_mut(r.idx as usize) {
            Some(c) if c.phase != Phase::Free && c.gen == r.gen => Some(c),
            _ => None,
        }
    }

    /// The call's caller state, if the call is valid and has made a call step.
    #[inline]
    pub fn caller(&self, r: CallRef) -> Option<&Caller> {
        let c = self.get(r)?;
        self.callers.get(c.caller as usize)
    }

    /// The call and its caller state, mutably.
    #[inline]
    pub fn caller_mut(&mut self, r: CallRef) -> Option<(&mut Call, &mut Caller)> {
        let c = match self.calls.get_mut(r.idx as usize) {
            Some(c) if c.phase != Phase::Free && c.gen == r.gen => c,
            _ => return None,
        };
        let k = self.callers.get_mut(c.caller as usize)?;
        Some((c, k))
    }

    /// A fresh caller state for the call's next call step, started at `now`.
    pub fn begin_caller(&mut self, r: CallRef, now: Nanos) -> Option<(&mut Call, &mut Caller)> {
        let c = match self.calls.get_mut(r.idx as usize) {
            Some(c) if c.phase != Phase::Free && c.gen == r.gen => c,
            _ => return None,
        };
        if c.caller == NONE {
            c.caller = match self.free_callers.pop() {
                Some(k) => k,
                None => {
                    self.callers.push(Caller::blank());
                    (self.callers.len() - 1) as u32
                }
            };
        }
        let k = &mut self.callers[c.caller as usize];
        *k = Caller::blank();
        k.call_started = now;
        Some((c, k))
    }

    /// Whether call `parent` has an attempt waiting for `child`.
    #[inline]
    pub fn waits_for(&self, parent: CallRef, child: CallRef) -> bool {
        self.caller(parent).is_some_and(|k| k.waits_for(child))
    }

    /// Hold the admission ticket of a valid call.
    pub fn set_ticket(&mut self, r: CallRef, t: Option<Held<DoorTicket>>) {
        let Some(t) = t else { return };
        if let Some(c) = self.get_mut(r) {
            c.has_ticket = true;
            self.tickets.set(r.idx as usize, t);
        }
    }

    /// Take the admission ticket of a valid call (the array beside the slab is only
    /// touched for a call that has one).
    pub fn take_ticket(&mut self, r: CallRef) -> Option<Held<DoorTicket>> {
        let c = self.get_mut(r)?;
        if !std::mem::take(&mut c.has_ticket) {
            return None;
        }
        self.tickets.slot(r.idx as usize)?.take()
    }

    /// Free a call's slot (its reference becomes stale), with its caller state and ticket.
    pub fn remove(&mut self, r: CallRef) {
        let Some(c) = self
            .calls
            .get_mut(r.idx as usize)
            .filter(|c| c.phase != Phase::Free && c.gen == r.gen)
        else {
            return;
        };
        c.phase = Phase::Free;
        let k = std::mem::replace(&mut c.caller, NONE);
        let had_ticket = std::mem::take(&mut c.has_ticket);
        if let Some(caller) = self.callers.get_mut(k as usize) {
            caller.slots = [None, None];
            self.free_callers.push(k);
        }
        if had_ticket {
            if let Some(t) = self.tickets.slot(r.idx as usize) {
                *t = None;
            }
        }
        self.free.push(r.idx);
        self.live -= 1;
    }

    /// An estimate of the bytes the slab holds.
    pub fn bytes(&self) -> usize {
        self.calls.chunks.len() * CHUNK * core::mem::size_of::<Call>()
            + self.tickets.bytes()
            + self.callers.capacity() * core::mem::size_of::<Caller>()
            + (self.free.capacity() + self.free_callers.capacity()) * 4
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
#[cfg(test)]
mod size_probe {
    #[test]
    fn sizes() {
        assert_eq!(core::mem::size_of::<super::Call>(), 64);
    }
}
