"""The request's deadline: the ContextVar, deadline scopes and the asyncio canceller
(private; the public names are re-exported by :mod:`guards.context`)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import sys
from typing import Any, Callable, Optional, TypeVar, Union

from ._guards import Deadline, DeadlineExceeded, Nanos, _note_deadline_published, now_ns
from ._util import (
    duration_ns,
    fail_type,
    instant_ns,
    is_async_callable,
    reject_generator_function,
)

F = TypeVar("F", bound=Callable[..., Any])

#: The current request's deadline (``None``: none set).
_DEADLINE: contextvars.ContextVar[Optional[Deadline]] = contextvars.ContextVar(
    "guards_deadline", default=None
)


_published = False


def publish(d: Optional[Deadline]) -> contextvars.Token[Optional[Deadline]]:
    """Make ``d`` the deadline of the current context. Every write of ``_DEADLINE`` goes
    through here: the native guarded calls do not read it until a first deadline has been
    published in the process (``_guards._note_deadline_published``)."""
    global _published
    if not _published:
        _note_deadline_published()
        _published = True
    return _DEADLINE.set(d)


#: The active scopes in this context, outermost first: a tuple of nodes
#: ``(scope, before, deadline, canceller)``, ``before`` being the deadline in force when
#: the scope was entered. A tuple (never mutated) so that contexts copied from this one
#: (tasks, ``copy_context()``) keep their own view.
_SCOPES: contextvars.ContextVar[tuple[tuple[Any, ...], ...]] = contextvars.ContextVar(
    "guards_deadline_scopes", default=()
)


def current_deadline() -> Optional[Deadline]:
    """The deadline the current context inherits, or ``None``."""
    return _DEADLINE.get()


def _now(now: Optional[int]) -> int:
    return now_ns() if now is None else instant_ns("now", now)


_NO_DEFAULT: Any = object()


def time_left(now: Optional[int] = None, *, default: Any = _NO_DEFAULT) -> Any:
    """Seconds left before the inherited deadline (0.0 once passed), or, when no deadline
    is set, ``default`` -- ``None`` if not given.

    Careful with HTTP clients: ``httpx.get(url, timeout=guards.time_left())`` outside a
    deadline passes ``None``, which *turns httpx's timeouts off*. Give a default
    (``timeout=guards.time_left(default=5.0)``) or use :func:`timeout_for`, which is
    never ``None``."""
    at = _now(now)
    d = _DEADLINE.get()
    if d is None or d.is_none():
        return None if default is _NO_DEFAULT else default
    return d.time_left(at)


def timeout_for(limit: Any, now: Optional[int] = None) -> float:
    """A timeout to hand to a client: ``min(limit, time left before the inherited
    deadline)`` in seconds; ``limit`` itself when there is no deadline. Never ``None``
    (so never "no timeout"): ``httpx.get(url, timeout=guards.timeout_for(2.0))``.
    ``limit``: seconds, ``timedelta`` or ``Nanos``."""
    limit_ns = duration_ns("limit", limit)
    left = time_left_ns(now)
    ns = limit_ns if left is None else min(limit_ns, left)
    return ns / 1e9


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
        for node in reversed(_SCOPES.get()):
            if node[0] is self:
                return node[2]  # type: ignore[no-any-return]
        return None

    def _push(self, eff: Deadline, canceller: Optional[CancelAfter]) -> None:
        before = _DEADLINE.get()
        publish(eff)
        _SCOPES.set(_SCOPES.get() + ((self, before, eff, canceller),))

    def _pop(self) -> tuple[Deadline, Optional[CancelAfter]]:
        """Leave this scope's innermost entry in the current context, in any order.

        Scopes are usually left in the reverse order of entry, but not always: a ``with``
        inside a generator (or an async generator) is left when the generator is closed,
        which may come after a scope entered later by another generator is still open.
        The entry is found by identity wherever it is in the stack and taken out; the
        deadline goes back to what it was before the entry when the entry was the
        innermost and its deadline is still the one in force (else a later entry, or code
        that published a deadline of its own, decides what is in force)."""
        stack = _SCOPES.get()
        i = len(stack) - 1
        while i >= 0 and stack[i][0] is not self:
            i -= 1
        if i < 0:
            raise RuntimeError(
                "this deadline scope has no open entry in this context (thread or task)"
            )
        _, before, eff, canceller = stack[i]
        if i == len(stack) - 1:
            _SCOPES.set(stack[:i])
            if _DEADLINE.get() is eff:
                publish(before)
        else:  # left out of order: the entry above inherits what this one restored
            above = stack[i + 1]
            _SCOPES.set(stack[:i] + ((above[0], before, above[2], above[3]),) + stack[i + 2 :])
        return eff, canceller

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
        reject_generator_function("guards.deadline(...)", fn)
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
    reads it) or a :class:`guards.Deadline` (such as :func:`extract_deadline` returns).
    With neither, the scope only inherits (useful as a checkpoint: entering raises if the
    inherited deadline has passed). See :class:`DeadlineScope`."""
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
