//! `QueueDiscipline`: core's bounded wait queue (CoDel age limit, adaptive LIFO, strict
//! priority, deadline drop at dequeue) for Python.
//!
//! Core's queue takes `&mut self` (it is a single-consumer structure, not lock-free), so
//! the Python class keeps it behind a mutex: every method is one short critical section,
//! and `pop`/`expire` return the waiters dropped by that same call, so a thread never
//! sees another thread's drops.
//!
//! Core's queue has a fixed slot count (a const generic); ffi's `AnyQueue` picks the
//! smallest of 128, 1024, 8192 or 65536 slots that holds `capacity` and builds it in place.

use std::sync::{Mutex, MutexGuard};

use guards::handle::AnyQueue;
use guards::schema::QUEUE_DISCIPLINE;
use guards_core::queue_discipline::{
    self as qd, Dequeued as CoreDequeued, DropReason, Dropped as CoreDropped,
    QueueDisciplineConfig, ServeOrder, Waiter as CoreWaiter,
};
use guards_core::Nanos;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::config::{self, Args};
use crate::errors::{self, QueueFull};
use crate::util::{self, given, Ctx};

/// A waiter in the queue: the caller's `id`, when it was enqueued, its absolute deadline
/// (integer nanoseconds, or `None`) and its priority class.
#[pyclass(module = "guards", frozen, get_all)]
#[derive(Debug, Clone)]
pub struct Waiter {
    /// The id given to `push`.
    id: u64,
    /// When it was enqueued (integer nanoseconds).
    enqueued_at: u64,
    /// Its absolute deadline (integer nanoseconds), or `None`.
    deadline: Option<u64>,
    /// Its priority class (0 is the most important).
    priority: u8,
}

impl From<CoreWaiter> for Waiter {
    fn from(w: CoreWaiter) -> Self {
        Waiter {
            id: w.id,
            enqueued_at: w.enqueued_at.as_u64(),
            deadline: w.has_deadline().then_some(w.deadline.as_u64()),
            priority: w.priority.level(),
        }
    }
}

#[pymethods]
impl Waiter {
    /// How long it has waited at `now`, integer nanoseconds.
    #[pyo3(signature = (now = None))]
    fn age_ns(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        Ok(util::get_now(now)?
            .as_u64()
            .saturating_sub(self.enqueued_at))
    }

    /// Whether its deadline has passed at `now`.
    #[pyo3(signature = (now = None))]
    fn is_expired(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let now = util::get_now(now)?.as_u64();
        Ok(self.deadline.is_some_and(|d| now >= d))
    }

    fn __repr__(&self) -> String {
        let deadline = self
            .deadline
            .map_or_else(|| "None".to_owned(), |d| d.to_string());
        format!(
            "Waiter(id={}, enqueued_at={}, deadline={}, priority={})",
            self.id, self.enqueued_at, deadline, self.priority
        )
    }
}

/// The waiter `pop` served, and in which order (`"fifo"` or `"lifo"`).
#[pyclass(module = "guards", frozen, get_all)]
#[derive(Debug)]
pub struct Dequeued {
    /// The served waiter.
    waiter: Py<Waiter>,
    /// `"fifo"` (oldest first) or `"lifo"` (newest first, while the queue is standing).
    order: &'static str,
}

#[pymethods]
impl Dequeued {
    /// The served waiter's id.
    #[getter]
    fn id(&self) -> u64 {
        self.waiter.get().id
    }

    fn __repr__(&self) -> String {
        format!(
            "Dequeued(waiter={}, order='{}')",
            self.waiter.get().__repr__(),
            self.order
        )
    }
}

/// A waiter dropped instead of served, and why (`"age_limit"` or `"deadline"`).
#[pyclass(module = "guards", frozen, get_all)]
#[derive(Debug)]
pub struct Dropped {
    /// The dropped waiter.
    waiter: Py<Waiter>,
    /// `"age_limit"` (waited longer than `target` while the queue stood) or `"deadline"`.
    reason: &'static str,
}

#[pymethods]
impl Dropped {
    /// The dropped waiter's id.
    #[getter]
    fn id(&self) -> u64 {
        self.waiter.get().id
    }

    fn __repr__(&self) -> String {
        format!(
            "Dropped(waiter={}, reason='{}')",
            self.waiter.get().__repr__(),
            self.reason
        )
    }
}

fn order_str(o: ServeOrder) -> &'static str {
    o.name()
}

fn reason_str(r: DropReason) -> &'static str {
    r.name()
}

fn waiter_obj(py: Python<'_>, w: CoreWaiter) -> PyResult<Py<Waiter>> {
    Py::new(py, Waiter::from(w))
}

fn dequeued_obj(py: Python<'_>, d: CoreDequeued) -> PyResult<Py<Dequeued>> {
    Py::new(
        py,
        Dequeued {
            waiter: waiter_obj(py, d.waiter)?,
            order: order_str(d.order),
        },
    )
}

fn dropped_list<'py>(py: Python<'py>, drops: &[CoreDropped]) -> PyResult<Bound<'py, PyList>> {
    let l = PyList::empty(py);
    for d in drops {
        l.append(Py::new(
            py,
            Dropped {
                waiter: waiter_obj(py, d.waiter)?,
                reason: reason_str(d.reason),
            },
        )?)?;
    }
    Ok(l)
}

/// A bounded wait queue: strict priority by class, FIFO until the queue has been
/// non-empty for `interval`, then ("standing") every waiter older than `target` is dropped
/// at each `pop` (CoDel's age limit) and the newest is served first (adaptive LIFO).
/// Waiters whose deadline has passed are dropped when they reach the front.
///
/// Not lock-free (core's queue is single-consumer): methods serialise on a mutex.
#[pyclass(module = "guards", name = "QueueDiscipline", frozen)]
pub struct PyQueueDiscipline {
    q: Mutex<AnyQueue>,
    config: QueueDisciplineConfig,
}

impl PyQueueDiscipline {
    fn lock(&self) -> MutexGuard<'_, AnyQueue> {
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl std::fmt::Debug for PyQueueDiscipline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueDiscipline")
            .field("config", &self.config)
            .finish()
    }
}

#[pymethods]
impl PyQueueDiscipline {
    /// `QueueDiscipline(capacity=128, interval=0.1, target=0.005, lifo=True, codel=True,
    /// priority=True)`; durations in seconds.
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(capacity=128, *, interval=0.1, target=0.005, lifo=True, codel=True, priority=True)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = args.py();
        let c = Args::collect("QueueDiscipline", &["capacity"], args, kwargs)?
            .build(&QUEUE_DISCIPLINE)?;
        let q = AnyQueue::new(c).map_err(|f| errors::failure(py, f))?;
        Ok(PyQueueDiscipline {
            q: Mutex::new(q),
            config: c,
        })
    }

    /// The settings (durations in seconds).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config::to_dict(py, &QUEUE_DISCIPLINE, &self.config)
    }

    /// Most waiters the queue holds.
    #[getter]
    fn capacity(&self) -> u32 {
        self.config.capacity
    }

    /// Enqueue waiter `id` (any int the caller chooses) in class `priority` (0..=7) with an
    /// optional absolute `deadline` (integer nanoseconds). Raises `QueueFull` when full.
    #[pyo3(signature = (id, priority = None, deadline = None, now = None))]
    fn push(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        priority: Option<&Bound<'_, PyAny>>,
        deadline: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let id = util::get_u64("id", id, Ctx::Arg)?;
        let prio = match given(priority) {
            Some(p) => util::get_priority("priority", p, Ctx::Arg)?,
            None => guards_core::Priority::default(),
        };
        let deadline = given(deadline)
            .map(|d| util::get_instant("deadline", d))
            .transpose()?;
        let now = util::get_now(now)?;
        let r = guards::with_queue!(&mut *self.lock(), q => q.push(now, id, prio, deadline));
        r.map_err(|full| {
            errors::refusal(
                &py.get_type::<QueueFull>(),
                full.to_string(),
                Some("full"),
                None,
            )
        })
    }

    /// Serve the next waiter: `(served, dropped)` where `served` is a `Dequeued` or `None`
    /// and `dropped` lists the waiters this call dropped (age limit or deadline), in order.
    #[pyo3(signature = (now = None))]
    fn pop<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Option<Py<Dequeued>>, Bound<'py, PyList>)> {
        let now = util::get_now(now)?;
        let mut drops: Vec<CoreDropped> = Vec::new();
        let served = guards::with_queue!(&mut *self.lock(), q => {
            let s = q.pop(now);
            drops.extend_from_slice(q.dropped());
            s
        });
        let served = served.map(|d| dequeued_obj(py, d)).transpose()?;
        Ok((served, dropped_list(py, &drops)?))
    }

    /// Drop every waiter past its deadline (and, while standing, every waiter past the age
    /// limit) without serving anyone; returns the dropped waiters in order.
    #[pyo3(signature = (now = None))]
    fn expire<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let now = util::get_now(now)?;
        let mut drops: Vec<CoreDropped> = Vec::new();
        guards::with_queue!(&mut *self.lock(), q => {
            q.expire(now);
            drops.extend_from_slice(q.dropped());
        });
        dropped_list(py, &drops)
    }

    /// The waiters the last `pop`/`expire` (by any thread) dropped.
    fn dropped<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let drops: Vec<CoreDropped> = guards::with_queue!(&*self.lock(), q => q.dropped().to_vec());
        dropped_list(py, &drops)
    }

    /// Remove waiter `id` (e.g. its caller gave up); returns it, or `None` if absent.
    fn remove(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<Option<Py<Waiter>>> {
        let id = util::get_u64("id", id, Ctx::Arg)?;
        let w = guards::with_queue!(&mut *self.lock(), q => q.remove(id));
        w.map(|w| waiter_obj(py, w)).transpose()
    }

    /// How many waiters are queued.
    fn __len__(&self) -> usize {
        guards::with_queue!(&*self.lock(), q => q.len()) as usize
    }

    /// How many waiters are queued.
    fn len(&self) -> u32 {
        guards::with_queue!(&*self.lock(), q => q.len())
    }

    /// Whether the queue is empty.
    fn is_empty(&self) -> bool {
        guards::with_queue!(&*self.lock(), q => q.is_empty())
    }

    /// Queued waiters per priority class (a list of 8 ints, index = class).
    fn len_by_priority(&self) -> Vec<u32> {
        guards::with_queue!(&*self.lock(), q => q.len_by_priority()).to_vec()
    }

    /// Whether the queue is standing at `now` (non-empty for at least `interval`).
    #[pyo3(signature = (now = None))]
    fn is_standing(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let now = util::get_now(now)?;
        Ok(guards::with_queue!(&*self.lock(), q => q.is_standing(now)))
    }

    /// Age of the oldest waiter at `now` in seconds (0.0 when empty).
    #[pyo3(signature = (now = None))]
    fn oldest_age(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
        Ok(util::secs(self.oldest_age_nanos(now)?))
    }

    /// Age of the oldest waiter at `now`, integer nanoseconds (0 when empty).
    #[pyo3(signature = (now = None))]
    fn oldest_age_ns(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        Ok(self.oldest_age_nanos(now)?.as_u64())
    }

    /// Counters: `enqueued`, `served_fifo`, `served_lifo`, `dropped_age_limit`,
    /// `dropped_deadline`, `cancelled`, `rejected_full`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s: qd::QueueDisciplineStats = guards::with_queue!(&*self.lock(), q => q.stats());
        util::stats_dict(
            py,
            &[
                ("enqueued", s.enqueued),
                ("served_fifo", s.served_fifo),
                ("served_lifo", s.served_lifo),
                ("dropped_age_limit", s.dropped_age_limit),
                ("dropped_deadline", s.dropped_deadline),
                ("cancelled", s.cancelled),
                ("rejected_full", s.rejected_full),
            ],
        )
    }

    fn __repr__(&self) -> String {
        let len = guards::with_queue!(&*self.lock(), q => q.len());
        format!(
            "QueueDiscipline(capacity={}, len={})",
            self.config.capacity, len
        )
    }
}

impl PyQueueDiscipline {
    fn oldest_age_nanos(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<Nanos> {
        let now = util::get_now(now)?;
        Ok(guards::with_queue!(&*self.lock(), q => q.oldest_age(now)))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyQueueDiscipline>()?;
    m.add_class::<Waiter>()?;
    m.add_class::<Dequeued>()?;
    m.add_class::<Dropped>()?;
    Ok(())
}
