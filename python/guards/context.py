"""The request's deadline in a ``contextvars.ContextVar``, and guarded blocks and calls.

Deadlines
---------
A deadline is set once, where a request enters (from the caller's ``grpc-timeout`` or
milliseconds header, or from your own timeout), and every guarded call below it inherits
it: threads started with ``contextvars.copy_context()``, asyncio tasks (which copy the
context when created) and nested scopes all see it. A nested scope never extends it: it
uses ``min(own timeout, inherited time left)``.

::

    with guards.deadline(2.0):                # this request has 2 s
        fetch_cart()                          # sees guards.time_left() <= 2 s
        with guards.deadline(0.5):            # a part of it gets at most 0.5 s
            client.get(url, timeout=guards.time_left())

    async with guards.deadline(2.0):          # asyncio: the block is cancelled at the deadline
        await fetch_cart()                    # (raises guards.DeadlineExceeded, a TimeoutError)

In synchronous code nothing can interrupt a blocking call: the deadline is *published*
for cooperative code (pass :func:`time_left` to your HTTP client's timeout, call
:func:`check_deadline` between steps) and checked when a scope is entered. In asyncio the
scope also cancels its block when the deadline passes.

The arithmetic (``min``, time left, expiry) and the wire forms are the native
:class:`guards.Deadline`'s: :func:`inject_deadline` writes the time left as a
``grpc-timeout`` value (e.g. ``"59000000n"``) or integer milliseconds, rounded down so a
callee never thinks it has more time than its caller will wait; :func:`extract_deadline`
reads one.

Guarded blocks
--------------
:func:`guarded` (see :mod:`guards._guarded`) wraps circuit breakers, bulkheads and limiters
as ``with`` / ``async with`` blocks and as decorators, with ``fallback=`` for brownouts.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, Callable, Optional, TypeVar, Union

from ._guards import Deadline, DeadlineExceeded, Nanos, now_ns
from ._guarded import Guarded, guarded, refusal_kind
from ._util import config_error, duration_ns, fail_type, instant_ns, is_async_callable

__all__ = [
    "deadline",
    "DeadlineScope",
    "current_deadline",
    "time_left",
    "time_left_ns",
    "check_deadline",
    "inject_deadline",
    "extract_deadline",
    "deadline_header",
    "GRPC_TIMEOUT_HEADER",
    "MILLIS_HEADER",
    "guarded",
    "Guarded",
    "refusal_kind",
]

F = TypeVar("F", bound=Callable[..., Any])

#: The gRPC deadline header: 1 to 8 digits and a unit (``H M S m u n``).
GRPC_TIMEOUT_HEADER = "grpc-timeout"
#: The integer-milliseconds header (Envoy's name for the time the caller will wait).
MILLIS_HEADER = "x-envoy-expected-rq-timeout-ms"

_FORMATS = ("grpc", "millis")

#: The current request's deadline (``None``: none set).
_DEADLINE: contextvars.ContextVar[Optional[Deadline]] = contextvars.ContextVar(
    "guards_deadline", default=None
)


#: The active scopes in this context, innermost first: (scope, token, deadline,
#: canceller, parent).
_SCOPES: contextvars.ContextVar[Optional[tuple[Any, ...]]] = contextvars.ContextVar(
    "guards_deadline_scopes", default=None
)


def current_deadline() -> Optional[Deadline]:
    """The deadline the current context inherits, or ``None``."""
    return _DEADLINE.get()


def _now(now: Optional[int]) -> int:
    return now_ns() if now is None else instant_ns("now", now)


def time_left(now: Optional[int] = None) -> Optional[float]:
    """Seconds left before the inherited deadline (0.0 once passed), or ``None`` when no
    deadline is set. Pass it as an HTTP client's timeout."""
    at = _now(now)
    d = _DEADLINE.get()
    if d is None:
        return None
    return d.time_left(at)


def time_left_ns(now: Optional[int] = None) -> Optional[int]:
    """:func:`time_left` in integer nanoseconds."""
    at = _now(now)
    d = _DEADLINE.get()
    if d is None:
        return None
    return d.time_left_ns(at)


def _expired_error(d: Deadline, what: str = "the deadline has passed") -> DeadlineExceeded:
    err = DeadlineExceeded(what)
    err.reason = "deadline_exceeded"
    err.retry_after = None
    err.retry_after_ns = None
    return err


def check_deadline(now: Optional[int] = None) -> None:
    """Raise :class:`guards.DeadlineExceeded` if the inherited deadline has passed."""
    at = _now(now)
    d = _DEADLINE.get()
    if d is not None and d.is_expired(at):
        raise _expired_error(d)


class DeadlineScope:
    """A deadline for a block (``with`` / ``async with``) or for every call of a function
    (as a decorator). Made by :func:`deadline`.

    Entering computes ``own = now + timeout`` (or the given instant), takes the earlier of
    it and the inherited deadline, publishes that for the block, and raises
    :class:`guards.DeadlineExceeded` at once if it has already passed. ``async with``
    additionally cancels the block when the deadline passes and turns that cancellation
    into :class:`guards.DeadlineExceeded`; a cancellation from elsewhere passes through
    unchanged. Leaving restores the inherited deadline.

    A scope object may be shared: entries are kept per context (thread or asyncio task),
    so one scope can be entered by several threads and tasks at once, and nested.
    """

    __slots__ = ("_timeout_ns", "_at")

    def __init__(self, timeout_ns: Optional[int], at: Optional[int]) -> None:
        self._timeout_ns = timeout_ns
        self._at = at

    def _effective(self, now: int) -> Deadline:
        if self._at is not None:
            own = Deadline.at(self._at)
        elif self._timeout_ns is not None:
            own = Deadline.after(Nanos(self._timeout_ns), now)
        else:
            own = Deadline.none()
        inherited = _DEADLINE.get()
        return own if inherited is None else own.min(inherited)

    @property
    def deadline(self) -> Optional[Deadline]:
        """The deadline in force inside this scope's innermost active entry in the current
        context, or ``None`` outside it."""
        node = _SCOPES.get()
        while node is not None:
            if node[0] is self:
                return node[2]
            node = node[4]
        return None

    def _push(self, eff: Deadline, canceller: Optional[CancelAfter]) -> None:
        token = _DEADLINE.set(eff)
        _SCOPES.set((self, token, eff, canceller, _SCOPES.get()))

    def _pop(self) -> tuple[Deadline, Optional[CancelAfter]]:
        node = _SCOPES.get()
        if node is None or node[0] is not self:
            raise RuntimeError("deadline scopes must be exited in the reverse order of entry")
        _SCOPES.set(node[4])
        _DEADLINE.reset(node[1])
        return node[2], node[3]

    # ---- sync
    def __enter__(self) -> Deadline:
        now = now_ns()
        eff = self._effective(now)
        if eff.is_expired(now):
            raise _expired_error(eff, "the deadline had passed before the block started")
        self._push(eff, None)
        return eff

    def __exit__(self, et: Any, e: Any, tb: Any) -> None:
        self._pop()

    # ---- async
    async def __aenter__(self) -> Deadline:
        now = now_ns()
        eff = self._effective(now)
        if eff.is_expired(now):
            raise _expired_error(eff, "the deadline had passed before the block started")
        left = eff.time_left_ns(now)
        canceller = None
        if left is not None:
            canceller = CancelAfter(left / 1e9)
            canceller.start()
        self._push(eff, canceller)
        return eff

    async def __aexit__(self, et: Any, e: Any, tb: Any) -> None:
        eff, canceller = self._pop()
        if canceller is not None and canceller.stop(et):
            raise _expired_error(eff, "the deadline passed while the block ran") from e

    # ---- decorator
    def __call__(self, fn: F) -> F:
        if not callable(fn):
            fail_type("fn", "a callable", fn)
        timeout_ns, at = self._timeout_ns, self._at
        if is_async_callable(fn):

            @functools.wraps(fn)
            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                async with DeadlineScope(timeout_ns, at):
                    return await fn(*args, **kwargs)

            return awrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with DeadlineScope(timeout_ns, at):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def __repr__(self) -> str:
        if self._at is not None:
            return f"guards.deadline(at={self._at})"
        if self._timeout_ns is not None:
            return f"guards.deadline({self._timeout_ns / 1e9!r})"
        return "guards.deadline(None)"


def deadline(
    timeout: Union[float, int, Any, None] = None,
    *,
    at: Union[int, Deadline, None] = None,
) -> DeadlineScope:
    """A deadline scope: ``timeout`` from now (seconds, ``timedelta`` or ``Nanos``), or
    ``at`` an instant (integer nanoseconds of the monotonic clock, as :func:`guards.now_ns`
    reads it) or a :class:`guards.Deadline` (such as :func:`extract_deadline` returns). With neither, the scope only inherits (useful as a checkpoint: entering
    raises if the inherited deadline has passed). See :class:`DeadlineScope`."""
    if timeout is not None and at is not None:
        raise TypeError("give `timeout` or `at`, not both")
    if isinstance(at, Deadline):  # e.g. one read from a request's headers
        at = at.expires_at
    return DeadlineScope(
        None if timeout is None else duration_ns("timeout", timeout),
        None if at is None else instant_ns("at", at),
    )


class CancelAfter:
    """Cancel the current asyncio task after ``delay`` seconds (private helper shared by
    deadline scopes and the retry decorator's per-attempt timeout).

    ``stop(exc_type)`` cancels the timer and returns whether the block's
    ``CancelledError`` was this timer's doing (then the caller raises its timeout error);
    a cancellation requested from elsewhere as well is left to propagate.
    """

    __slots__ = ("_delay", "_task", "_handle", "_fired")

    def __init__(self, delay: float) -> None:
        self._delay = delay
        self._task: Optional[asyncio.Task[Any]] = None
        self._handle: Optional[asyncio.TimerHandle] = None
        self._fired = False

    def start(self) -> None:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a deadline scope must be entered inside an asyncio task")
        self._task = task
        loop = asyncio.get_running_loop()
        self._handle = loop.call_later(max(self._delay, 0.0), self._fire)

    def _fire(self) -> None:
        task = self._task
        if task is not None and not task.done():
            self._fired = True
            task.cancel()

    def stop(self, exc_type: Any) -> bool:
        if self._handle is not None:
            self._handle.cancel()
        if not self._fired:
            return False
        task = self._task
        ours = exc_type is not None and issubclass(exc_type, asyncio.CancelledError)
        if sys.version_info >= (3, 11) and task is not None:
            # Undo our cancel request; if someone else also asked, theirs wins.
            if task.uncancel() > 0:
                return False
        return ours


# ------------------------------------------------------------------ headers


def _header_name(format: str, name: Optional[str]) -> str:
    if name is None:
        return GRPC_TIMEOUT_HEADER if format == "grpc" else MILLIS_HEADER
    if not isinstance(name, str):
        fail_type("name", "a str or None", name)
    if not name:
        raise config_error("name", "out_of_range", "a non-empty header name")
    return name


def _check_format(format: object) -> str:
    if not isinstance(format, str):
        fail_type("format", "a str", format)
    if format not in _FORMATS:
        raise ValueError(f"`format` must be 'grpc' or 'millis', not {format!r}")
    return format


def deadline_header(
    format: str = "grpc",
    *,
    deadline: Optional[Deadline] = None,
    now: Optional[int] = None,
) -> Optional[str]:
    """The time left on ``deadline`` (default: the inherited one) as a header value: a
    ``grpc-timeout`` (``format="grpc"``) or integer milliseconds (``"millis"``), rounded
    down. ``None`` when there is no deadline (send no header)."""
    fmt = _check_format(format)
    d = _DEADLINE.get() if deadline is None else deadline
    if d is None:
        return None
    if not isinstance(d, Deadline):
        fail_type("deadline", "a guards.Deadline or None", d)
    at = _now(now)
    return d.to_grpc_timeout(at) if fmt == "grpc" else d.to_millis(at)


def inject_deadline(
    headers: Optional[MutableMapping[str, str]] = None,
    *,
    format: str = "grpc",
    name: Optional[str] = None,
    deadline: Optional[Deadline] = None,
    now: Optional[int] = None,
) -> MutableMapping[str, str]:
    """Write the time left on the inherited deadline (or ``deadline``) into ``headers``
    (a new dict when ``None``) and return them; writes nothing without a deadline.

    ``format`` is ``"grpc"`` (header ``grpc-timeout``) or ``"millis"`` (header
    ``x-envoy-expected-rq-timeout-ms``); ``name`` overrides the header name.
    ``httpx.get(url, headers=guards.inject_deadline())`` sends it on.
    """
    fmt = _check_format(format)
    header = _header_name(fmt, name)
    if headers is None:
        headers = {}
    elif not isinstance(headers, MutableMapping):
        fail_type("headers", "a mutable mapping or None", headers)
    value = deadline_header(fmt, deadline=deadline, now=now)
    if value is not None:
        headers[header] = value
    return headers


def _lookup(headers: Any, header: str) -> Optional[str]:
    """A header's value from a mapping (any case), an ASGI header list or a WSGI environ."""
    lower = header.lower()
    if isinstance(headers, Mapping):
        environ_key = "HTTP_" + header.upper().replace("-", "_")
        for key in (header, lower, environ_key):
            v = headers.get(key)
            if v is not None:
                break
        else:
            v = None
            for k, val in headers.items():
                if isinstance(k, (str, bytes)) and _as_str(k).lower() == lower:
                    v = val
                    break
        return None if v is None else _as_str(v)
    if isinstance(headers, (list, tuple)):
        for item in headers:
            if not (isinstance(item, (list, tuple)) and len(item) == 2):
                fail_type("headers", "a mapping, an ASGI header list or a WSGI environ", headers)
            k, val = item
            if _as_str(k).lower() == lower:
                return _as_str(val)
        return None
    fail_type("headers", "a mapping, an ASGI header list or a WSGI environ", headers)


def _as_str(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("latin-1")
    if isinstance(v, str):
        return v
    fail_type("header value", "str or bytes", v)


def extract_deadline(
    headers: Any,
    *,
    format: str = "grpc",
    name: Optional[str] = None,
    now: Optional[int] = None,
    strict: bool = True,
) -> Optional[Deadline]:
    """The deadline a received header sets, counted from ``now`` (the arrival), or
    ``None`` when the header is absent.

    ``headers``: a mapping (looked up in any case), an ASGI ``[(name, value), ...]`` list
    of bytes, or a WSGI environ (``HTTP_GRPC_TIMEOUT``). A malformed value raises
    :class:`guards.HeaderError` (a ``ValueError`` with ``kind``) when ``strict``, else
    reads as absent.
    """
    fmt = _check_format(format)
    header = _header_name(fmt, name)
    if not isinstance(strict, bool):
        fail_type("strict", "a bool", strict)
    value = _lookup(headers, header)
    if value is None:
        return None
    at = _now(now)
    try:
        if fmt == "grpc":
            return Deadline.from_grpc_timeout(value, at)
        return Deadline.from_millis(value, at)
    except ValueError:
        if strict:
            raise
        return None


def _set_deadline(d: Optional[Deadline]) -> contextvars.Token[Optional[Deadline]]:
    """Publish ``d`` (private: the middleware and retry use it)."""
    return _DEADLINE.set(d)


def _reset_deadline(token: contextvars.Token[Optional[Deadline]]) -> None:
    _DEADLINE.reset(token)
