//! `Admission`: server-side admission control at the door (core's `Admission`, built in
//! place by ffi, configured through ffi's schema). Per priority class a hard cap
//! (`limits`) and, when an adaptive `limit` is given, a share of it (`shares`); refused
//! requests get `AdmissionRejected` with `reason` (`"limit_reached"`: the class's cap;
//! `"overloaded"`: the adaptive limit) and a `retry_after` (seconds, and whole seconds in
//! `retry_after_secs` for a Retry-After header).
//!
//! Tickets behave like limiter permits: one outcome (`report(outcome)`, or the primitives
//! `on_success`, `on_dropped`, `on_ignore`), then no-ops; `with ticket:` reports how the
//! block ended (the exception classified by `guards.classify_exception`); a ticket
//! collected without an outcome is ignored.

use guards::handle::InPlace;
use guards::names::Admission;
use guards::schema::ADMISSION;
use guards_core::admission::{AdmissionPermit, AdmissionRejected as CoreRejected};
use guards_core::priority::MAX_PRIORITIES;
use guards_core::{Nanos, Outcome};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::clock;
use crate::config::{self, Args};
use crate::errors::{self, AdmissionRejected};
use crate::events::{self, Op};
use crate::limit;
use crate::limiter::{priority_arg, refusal_with};
use crate::outcome;
use crate::permit::{self, Granted, Issuer};
use crate::util::{self, given};

pub(crate) fn refused_error(py: Python<'_>, r: CoreRejected, now: Nanos) -> PyErr {
    let wait = r.retry_after(now);
    refusal_with(
        py,
        &py.get_type::<AdmissionRejected>(),
        format!(
            "refused at the door ({}: {} inside, threshold {} for priority {}); try again in {}",
            r.reason.name(),
            r.in_flight,
            r.threshold,
            r.priority.level(),
            errors::human(wait)
        ),
        r.reason.name(),
        wait,
        &[
            ("retry_after_secs", r.retry_after_secs(now)),
            ("threshold", r.threshold),
            ("in_flight", r.in_flight),
            ("priority", u64::from(r.priority.level())),
        ],
    )
}

/// A per-priority list argument (`limits`, `shares`): at most 8 values (`None`: as the
/// class before).
fn per_priority_list<'py>(
    name: &'static str,
    v: &Bound<'py, PyAny>,
) -> PyResult<Vec<Option<Bound<'py, PyAny>>>> {
    Ok(util::short_list(name, v, MAX_PRIORITIES)?
        .into_iter()
        .map(|item| (!item.is_none()).then_some(item))
        .collect())
}

/// Admission control at the door of a server.
#[pyclass(module = "guards", name = "Admission", frozen)]
#[derive(Debug)]
pub struct PyAdmission {
    pub(crate) a: InPlace<Admission>,
}

impl PyAdmission {
    fn ticket(
        slf: &Bound<'_, Self>,
        t: AdmissionPermit,
        operation: Option<Bound<'_, PyAny>>,
    ) -> PyAdmissionTicket {
        PyAdmissionTicket {
            start: t.start().as_u64(),
            in_flight: t.in_flight(),
            priority: t.priority().level(),
            ticket: Granted::new(Issuer(slf.clone().unbind()), t),
            operation: operation.map(Bound::unbind),
        }
    }

    /// A ticket for class `priority` at `now`, or the refusal (emitted as a `refusal`
    /// named `op`).
    fn admit(
        slf: &Bound<'_, Self>,
        priority: Option<&Bound<'_, PyAny>>,
        now: Nanos,
        op: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PyAdmissionTicket> {
        let py = slf.py();
        let p = priority_arg(priority)?;
        match slf.get().a.try_acquire(now, p) {
            Ok(t) => Ok(Self::ticket(slf, t, op)),
            Err(r) => {
                let err = refused_error(py, r, now);
                events::refusal(py, slf.as_any(), Op::given(op.as_ref()), &err);
                Err(err)
            }
        }
    }
}

#[pymethods]
impl PyAdmission {
    /// `Admission(limits=[80, 64, ...], **settings)`. `limits`: up to 8 caps, index =
    /// priority (a class left out repeats the one before, so `[100, 50]` is 100 for class 0
    /// and 50 for the rest); `limit`: an adaptive limit (a `Limit`, an int or a mapping with
    /// `algorithm`; `None`, the default: none); `shares`: up to 8 shares of it (left out: as
    /// the class before). Each class's cap and share are no larger than the more important
    /// class's.
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(limits=None, *, limit=None, shares=None, window=0.1, min_window_samples=10, min_retry_after=1.0, max_retry_after=60.0)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let py = args.py();
        let mut a = Args::collect("Admission", &["limits"], args, kwargs)?;
        let limits = a.take("limits");
        let shares = a.take("shares");
        let limit = a.take("limit");
        let mut c = ADMISSION.defaults();
        if let Some(v) = limit.filter(|v| !v.is_none()) {
            c.limit = limit::limit_config_arg(&v)?;
        }
        a.apply(&ADMISSION, &mut c)?;
        if let Some(v) = limits {
            if v.is_none() {
                return Err(config::wrong_type("limits", "a list of ints", &v));
            }
            let items = per_priority_list("limits", &v)?;
            config::apply_per_priority(py, &ADMISSION, &mut c, "limits", None, &items)?;
        }
        if let Some(v) = shares {
            if v.is_none() {
                return Err(config::wrong_type("shares", "a list of numbers", &v));
            }
            let items = per_priority_list("shares", &v)?;
            config::apply_per_priority(py, &ADMISSION, &mut c, "shares", None, &items)?;
        }
        ADMISSION.validate(&c).map_err(|f| errors::failure(py, f))?;
        let a = InPlace::<Admission>::new(c).map_err(|f| errors::failure(py, f))?;
        Ok(PyAdmission { a })
    }

    /// The settings (durations in seconds; `limit` as a dict, or `None` without one).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.a.config();
        let d = config::to_dict(py, &ADMISSION, c)?;
        if c.limit == guards_core::admission::DEFAULT_LIMIT {
            d.set_item("limit", py.None())?;
        } else {
            d.set_item("limit", limit::config_dict(py, &c.limit)?)?;
        }
        Ok(d)
    }

    /// Let a request of class `priority` (0..=7, default 1) in at `now`: a ticket, or
    /// `AdmissionRejected` (with `reason`, `retry_after`, `retry_after_secs`, `threshold`,
    /// `in_flight`, `priority`; emitted as a `refusal` named `operation`).
    #[pyo3(signature = (priority = None, now = None, *, operation = None))]
    fn acquire(
        slf: &Bound<'_, Self>,
        priority: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyAdmissionTicket> {
        let now = util::get_now(now)?;
        Self::admit(slf, priority, now, given(operation).cloned())
    }

    /// The ASGI door's step in (`guards.AdmissionMiddleware`): `acquire(priority,
    /// operation=path)` (the path when it is a `str`) and a watch of the request's
    /// `receive` and `send`, in one call.
    fn _asgi_enter(
        slf: &Bound<'_, Self>,
        priority: Option<&Bound<'_, PyAny>>,
        path: &Bound<'_, PyAny>,
        receive: Bound<'_, PyAny>,
        send: Bound<'_, PyAny>,
    ) -> PyResult<PyAsgiWatch> {
        let op = path.is_instance_of::<PyString>().then(|| path.clone());
        let ticket = Self::admit(slf, priority, clock::now(), op)?;
        Ok(PyAsgiWatch {
            ticket,
            receive: receive.unbind(),
            send: send.unbind(),
            status: AtomicI64::new(NO_STATUS),
            ended: AtomicBool::new(false),
            gone: AtomicBool::new(false),
        })
    }

    /// Like `acquire`, but `None` instead of raising.
    #[pyo3(signature = (priority = None, now = None, *, operation = None))]
    fn try_acquire(
        slf: &Bound<'_, Self>,
        priority: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
        operation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyAdmissionTicket>> {
        let p = priority_arg(priority)?;
        let now = util::get_now(now)?;
        let op = given(operation).cloned();
        Ok(slf
            .get()
            .a
            .try_acquire(now, p)
            .ok()
            .map(|t| Self::ticket(slf, t, op)))
    }

    /// Requests inside now.
    #[getter]
    fn in_flight(&self) -> u64 {
        self.a.in_flight()
    }

    /// The adaptive limit now, or `None` without one.
    #[getter]
    fn limit(&self) -> Option<u64> {
        if self.a.config().limit == guards_core::admission::DEFAULT_LIMIT {
            None
        } else {
            Some(self.a.limit())
        }
    }

    /// How many requests of class `priority` may be inside now.
    #[pyo3(signature = (priority = None))]
    fn threshold(&self, priority: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        Ok(self.a.threshold(priority_arg(priority)?))
    }

    /// Counters: `admitted`, `refused_limit_reached`, `refused_overloaded`, `succeeded`,
    /// `dropped`, `ignored`, `in_flight`, `limit` (per-priority refusals:
    /// `refused_by_priority()`).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.a.stats();
        util::stats_dict(
            py,
            &[
                ("admitted", s.admitted),
                ("refused_limit_reached", s.refused_limit_reached),
                ("refused_overloaded", s.refused_overloaded),
                ("succeeded", s.succeeded),
                ("dropped", s.dropped),
                ("ignored", s.ignored),
                ("in_flight", s.in_flight),
                ("limit", s.limit),
            ],
        )
    }

    /// Refusals per priority class (a list of 8 ints, index = class).
    fn refused_by_priority(&self) -> Vec<u64> {
        self.a.stats().refused_by_priority.to_vec()
    }

    fn __repr__(&self) -> String {
        format!("Admission(in_flight={})", self.a.in_flight())
    }
}

/// A place inside. Report its outcome once: `report(outcome)`, or the primitives
/// `on_success`, `on_dropped`, `on_ignore`.
#[pyclass(module = "guards", name = "AdmissionTicket", frozen)]
#[derive(Debug)]
pub struct PyAdmissionTicket {
    ticket: Granted<Issuer<PyAdmission>>,
    start: u64,
    in_flight: u64,
    priority: u8,
    operation: Option<Py<PyAny>>,
}

impl guards::permit::Owner for Issuer<PyAdmission> {
    type Permit = AdmissionPermit;

    fn give_back(&self, t: AdmissionPermit) {
        self.0.get().a.on_ignore(t);
    }
}

impl PyAdmissionTicket {
    /// Report `outcome` at `now`: `false` if already reported.
    fn finish(&self, py: Python<'_>, outcome: Outcome, now: Nanos) -> bool {
        let Some(t) = self.ticket.take() else {
            return false;
        };
        let owner = self.ticket.owner().0.bind(py);
        let a = &owner.get().a;
        let before = a.limit();
        a.report(t, outcome, now);
        let after = a.limit();
        if after != before {
            let op = Op::given(self.operation.as_ref().map(|o| o.bind(py)));
            events::limit_change(py, owner.as_any(), op, before, after);
        }
        true
    }
}

#[pymethods]
impl PyAdmissionTicket {
    /// Hand the place back with how the request ended (the call contract's outcome) at
    /// `now`. `False` if already reported.
    #[pyo3(signature = (outcome, now = None))]
    fn report(
        &self,
        py: Python<'_>,
        outcome: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let o = outcome::outcome_arg(outcome)?;
        Ok(self.finish(py, o, util::get_now(now)?))
    }

    /// The primitive `on_success`: the request succeeded at `now`. `False` if already
    /// reported.
    #[pyo3(signature = (now = None))]
    fn on_success(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        Ok(self.finish(py, Outcome::Success, util::get_now(now)?))
    }

    /// The primitive `on_dropped`: the request was dropped at `now` (timed out or shed
    /// later; reported as `"overloaded"`). `False` if already reported.
    #[pyo3(signature = (now = None))]
    fn on_dropped(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        Ok(self.finish(py, Outcome::Overloaded, util::get_now(now)?))
    }

    /// The primitive `on_ignore`: release the place without a sample. `False` if already
    /// reported.
    fn on_ignore(&self) -> bool {
        self.ticket.give_back()
    }

    /// Whether an outcome has been reported.
    #[getter]
    fn done(&self) -> bool {
        self.ticket.done()
    }

    /// When the request was let in (integer nanoseconds).
    #[getter]
    fn start(&self) -> u64 {
        self.start
    }

    /// Requests inside right after this one came in.
    #[getter]
    fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Its priority class.
    #[getter]
    fn priority(&self) -> u8 {
        self.priority
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Report how the block ended (the exception leaving it classified by
    /// `guards.classify_exception`); the exception is never suppressed.
    #[pyo3(signature = (_exc_type = None, exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let o = permit::exit_outcome(exc)?;
        self.finish(py, o, clock::now());
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "AdmissionTicket(priority={}, in_flight={}, done={})",
            self.priority,
            self.in_flight,
            util::py_bool(self.done())
        )
    }
}

/// `status` before the response started.
const NO_STATUS: i64 = i64::MIN;
/// `status` of a start message whose status is not an `int` (not an overload status).
const OTHER_STATUS: i64 = 0;

/// How `PyAsgiWatch::finish` reported the request (what the middleware counts).
const FINISHED_SUCCESS: u8 = 0;
const FINISHED_OVERLOADED: u8 = 1;
const FINISHED_DISCONNECTED: u8 = 2;
const FINISHED_NO_STATUS: u8 = 3;

/// One admitted ASGI request as `guards.AdmissionMiddleware` watches it: the ticket, the
/// status of the response's start, whether its last body message was sent, whether the
/// client went away before that. The application gets `receive` and `send` (bound
/// methods: the fast native call) in place of the server's.
#[pyclass(module = "guards", name = "_AsgiWatch", frozen)]
#[derive(Debug)]
pub struct PyAsgiWatch {
    ticket: PyAdmissionTicket,
    receive: Py<PyAny>,
    send: Py<PyAny>,
    status: AtomicI64,
    ended: AtomicBool,
    gone: AtomicBool,
}

/// `message.get(key)`: a dict's item without a method call, any other mapping's `get`.
fn message_get<'py>(
    message: &Bound<'py, PyAny>,
    key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    match message.cast::<PyDict>() {
        Ok(d) => d.get_item(key),
        Err(_) => {
            let v = message.call_method1(intern!(message.py(), "get"), (key,))?;
            Ok((!v.is_none()).then_some(v))
        }
    }
}

/// `f(arg)` through the interpreter's stack-argument call (no argument tuple is made: pyo3's
/// `call1` makes one under the stable ABI).
fn call_one<'py>(f: &Bound<'py, PyAny>, arg: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let end: *mut pyo3::ffi::PyObject = std::ptr::null_mut();
    // SAFETY: `f` and `arg` are valid objects kept alive for the call; the argument list
    // ends with NULL as PyObject_CallFunctionObjArgs requires; the result is a new
    // reference or NULL with an exception set.
    unsafe {
        let r = pyo3::ffi::PyObject_CallFunctionObjArgs(f.as_ptr(), arg.as_ptr(), end);
        Bound::from_owned_ptr_or_err(f.py(), r)
    }
}

#[pymethods]
impl PyAsgiWatch {
    /// The application's `send`: notes a response start's status and the last body
    /// message, then hands the message to the server's `send` (its awaitable returned).
    fn send<'py>(&self, message: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = message.py();
        if let Some(kind) = message_get(message, intern!(py, "type"))? {
            if let Ok(kind) = kind.cast::<PyString>() {
                match kind.to_str()? {
                    "http.response.start" => {
                        let status = match message_get(message, intern!(py, "status"))? {
                            None => NO_STATUS,
                            Some(v) => v.extract::<i64>().unwrap_or(OTHER_STATUS),
                        };
                        self.status.store(status, Ordering::Relaxed);
                    }
                    "http.response.body" => {
                        let more = match message_get(message, intern!(py, "more_body"))? {
                            None => false,
                            Some(v) => v.is_truthy()?,
                        };
                        if !more {
                            self.ended.store(true, Ordering::Relaxed);
                        }
                    }
                    _ => {}
                }
            }
        }
        call_one(self.send.bind(py), message)
    }

    /// The application's `receive`: the server's, watched for a client that leaves
    /// before the response ended (by `guards.middleware`'s `_watch_receive`).
    fn receive<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        static WATCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let py = slf.py();
        let watch = WATCH.import(py, "guards.middleware", "_watch_receive")?;
        watch.call1((slf, slf.get().receive.bind(py)))
    }

    /// The client went away (an `http.disconnect` came in): counts only before the
    /// response ended.
    fn _disconnected(&self) {
        if !self.ended.load(Ordering::Relaxed) {
            self.gone.store(true, Ordering::Relaxed);
        }
    }

    /// The application returned: report the ticket's outcome. `0`: a success; `1`: the
    /// application answered 503 or 429 (`overloaded`); `2`: the client went away, or the
    /// response never ended (`cancelled`); `3`: no response was started (`ignored`).
    fn finish(&self, py: Python<'_>) -> u8 {
        let (outcome, code) =
            if self.gone.load(Ordering::Relaxed) || !self.ended.load(Ordering::Relaxed) {
                (Outcome::Cancelled, FINISHED_DISCONNECTED)
            } else {
                match self.status.load(Ordering::Relaxed) {
                    NO_STATUS => (Outcome::Ignored, FINISHED_NO_STATUS),
                    503 | 429 => (Outcome::Overloaded, FINISHED_OVERLOADED),
                    _ => (Outcome::Success, FINISHED_SUCCESS),
                }
            };
        self.ticket.finish(py, outcome, clock::now());
        code
    }

    /// The application raised `exc`: report it as `guards.classify_exception` does.
    fn fail(&self, py: Python<'_>, exc: &Bound<'_, PyAny>) -> PyResult<()> {
        let o = permit::exit_outcome(Some(exc))?;
        self.ticket.finish(py, o, clock::now());
        Ok(())
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAdmission>()?;
    m.add_class::<PyAdmissionTicket>()?;
    // Internal to guards.middleware: on the module without entering `__all__`.
    m.setattr("_AsgiWatch", m.py().get_type::<PyAsgiWatch>())?;
    Ok(())
}
