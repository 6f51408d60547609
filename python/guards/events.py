"""What the guards do, as events you can listen to, and the ``guards`` logger.

::

    import guards, logging

    def page_on_call(event: guards.events.Event) -> None:
        if event.new == "open":
            alert(f"breaker {event.operation} opened")

    guards.events.on("state_change", page_on_call)                 # every guard
    guards.events.on(["retry", "give_up"], log_it, source=stock)   # only this guard
    logging.getLogger("guards").setLevel(logging.INFO)              # or read the log

One registry for the process (``guards.events.on``): a listener receives the events of
every guard, or only those of ``source=`` (a guard, a :class:`guards.Retry`, a guarded
object, a middleware). ``on`` returns a :class:`Subscription`; ``close()`` it (or use it
as a ``with`` block) to stop listening.

Event kinds (``Event.kind``) and where they come from:

``state_change``
    A circuit breaker moved: ``old`` and ``new`` are ``"closed"``, ``"open"`` or
    ``"half_open"``. Seen by the calls that cause it: a failure that opens it, the first
    half-open probe, the probe outcome that closes or re-opens it.
``refusal``
    A guard refused a call (``exception`` is the :class:`guards.GuardError`).
``retry``
    ``@guards.retry`` is about to wait and try again (``attempt`` that failed,
    ``outcome``, ``delay`` seconds, ``exception``).
``give_up``
    ``@guards.retry`` gave up (``reason``, ``attempts``, the last ``exception``).
``fallback``
    A guarded call ended in an exception and a fallback was configured: ``served`` tells
    whether the fallback answered; when not, the exception propagated (a programming
    error, or another exception outside ``fallback_on``).
``limit_change``
    An adaptive limit (a :class:`guards.Limiter` or :class:`guards.Admission` with one)
    moved from ``old`` to ``new``.

Where events are emitted: everywhere a guard is used. The Python paths of
:func:`guards.guarded`, the admission middlewares, :func:`guards.retry` and
:mod:`guards.httpx` emit them from Python; the native paths -- ``breaker.call(...)``,
``@guards.guarded(one_breaker_or_bulkhead)`` functions, coroutines and ``with`` blocks,
permits used by hand -- emit them from native code into this same registry (a breaker's
state change once, by the call that caused it). An event that no listener and no enabled
log level would see is not even built: native code reads the listener table and the
logger's cached answer for the event's level first, so a refused call costs no Python
call for its event until someone listens.

Listeners run synchronously, in the thread (or task) of the call that caused the event,
and must be quick; an exception raised by a listener is logged (``guards`` logger, level
ERROR) and never reaches the guarded call.

The logger
----------
``logging.getLogger("guards")`` has a ``NullHandler`` (silent unless your application
configures logging). It logs breaker state changes (WARNING when a breaker opens, INFO
when it goes half-open or closes), give-ups (INFO), exceptions that a fallback let
through (WARNING), and, at DEBUG only, retries, refusals, fallbacks served and limit
changes: nothing is logged on the path of a call that succeeds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any, Callable, Optional, Union

__all__ = ["Event", "Subscription", "KINDS", "on", "logger"]

#: Every event kind.
KINDS = ("state_change", "refusal", "retry", "give_up", "fallback", "limit_change")

#: The package's logger (a ``NullHandler`` by default).
logger = logging.getLogger("guards")
logger.addHandler(logging.NullHandler())

Listener = Callable[["Event"], Any]

#: kind -> tuple of (listener, source or None); replaced, never mutated, under _LOCK.
_LISTENERS: dict[str, tuple[tuple[Listener, Any], ...]] = {}
_LOCK = threading.Lock()

_LEVELS = {
    "refusal": logging.DEBUG,
    "retry": logging.DEBUG,
    "give_up": logging.INFO,
    "limit_change": logging.DEBUG,
}


class Event:
    """One thing a guard did. ``kind`` (see :data:`KINDS`), ``source`` (the guard or
    decorator object that emitted it), ``operation`` (the guarded function's qualified
    name, a breaker key, or ``None``) and, depending on the kind: ``old`` / ``new``
    (``state_change``, ``limit_change``), ``exception``, ``reason``, ``attempt`` /
    ``attempts``, ``outcome``, ``delay`` (seconds), ``served`` (``fallback``); the others
    are ``None``."""

    __slots__ = (
        "kind",
        "source",
        "operation",
        "old",
        "new",
        "exception",
        "reason",
        "attempt",
        "outcome",
        "delay",
        "served",
    )

    def __init__(
        self,
        kind: str,
        source: Any,
        *,
        operation: Optional[str] = None,
        old: Any = None,
        new: Any = None,
        exception: Optional[BaseException] = None,
        reason: Optional[str] = None,
        attempt: Optional[int] = None,
        outcome: Optional[str] = None,
        delay: Optional[float] = None,
        served: Optional[bool] = None,
    ) -> None:
        self.kind = kind
        """What happened: one of :data:`KINDS`."""
        self.source = source
        """The guard or decorator object that emitted the event."""
        self.operation = operation
        """The guarded function's qualified name, a breaker key, or ``None``."""
        self.old = old
        """The state or limit before (``state_change``, ``limit_change``)."""
        self.new = new
        """The state or limit after (``state_change``, ``limit_change``)."""
        self.exception = exception
        """The exception of the call, when one ended it."""
        self.reason = reason
        """Why a guard refused or a retry gave up (e.g. ``"open"``, ``"budget_exhausted"``)."""
        self.attempt = attempt
        """The attempt concerned, from 1 (``retry``, ``give_up``)."""
        self.outcome = outcome
        """The outcome of the call contract the call was classified as."""
        self.delay = delay
        """The wait before the next attempt, in seconds (``retry``)."""
        self.served = served
        """Whether a fallback answer was served (``fallback``)."""

    @property
    def attempts(self) -> Optional[int]:
        """For ``give_up``: the attempts made (the same number as ``attempt``)."""
        return self.attempt

    def __repr__(self) -> str:
        fields = [f"kind={self.kind!r}"]
        for name in self.__slots__[2:]:
            v = getattr(self, name)
            if v is not None:
                fields.append(f"{name}={v!r}")
        return f"Event({', '.join(fields)})"

    def message(self) -> str:
        """A one-line description, as the ``guards`` logger writes it."""
        what = f" {self.operation}" if self.operation else ""
        src = _describe(self.source)
        if self.kind == "state_change":
            return f"{src}{what}: {self.old} -> {self.new}"
        if self.kind == "refusal":
            return f"{src}{what} refused a call: {self.exception}"
        if self.kind == "retry":
            return (
                f"retry{what}: attempt {self.attempt} failed ({self.outcome}: "
                f"{_exc(self.exception)}); trying again in {self.delay:.3f} s"
            )
        if self.kind == "give_up":
            return (
                f"retry{what} gave up after {self.attempt} attempt(s) ({self.reason}): "
                f"{_exc(self.exception)}"
            )
        if self.kind == "fallback":
            if self.served:
                return f"fallback served{what} for {_exc(self.exception)}"
            return (
                f"fallback not served{what}: {_exc(self.exception)} is not a refusal or a "
                "dependency failure (propagated; `fallback_on=` changes this)"
            )
        if self.kind == "limit_change":
            return f"{src}{what}: limit {self.old} -> {self.new}"
        return f"{self.kind}{what}"  # pragma: no cover - every kind is handled above


def _describe(source: Any) -> str:
    kind = getattr(source, "metrics_kind", None)
    if not isinstance(kind, str):
        from ._util import snake_case  # noqa: PLC0415 - keeps this module light

        kind = snake_case(type(source).__name__)
    return kind.replace("_", " ")


def _exc(e: Optional[BaseException]) -> str:
    if e is None:
        return "a rejected result"
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class Subscription:
    """A registered listener; :meth:`close` (or leaving a ``with`` block) removes it."""

    __slots__ = ("_kinds", "_entry", "_closed")

    def __init__(self, kinds: tuple[str, ...], entry: tuple[Listener, Any]) -> None:
        self._kinds = kinds
        self._entry = entry
        self._closed = False

    @property
    def kinds(self) -> tuple[str, ...]:
        """The event kinds the listener hears."""
        return self._kinds

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._closed

    def close(self) -> None:
        """Stop listening (a second call does nothing)."""
        with _LOCK:
            if self._closed:
                return
            self._closed = True
            for kind in self._kinds:
                rest = tuple(e for e in _LISTENERS.get(kind, ()) if e is not self._entry)
                if rest:
                    _LISTENERS[kind] = rest
                else:
                    _LISTENERS.pop(kind, None)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<guards.events.Subscription {list(self._kinds)} ({state})>"


def on(
    kind: Union[str, Iterable[str]], listener: Listener, *, source: Any = None
) -> Subscription:
    """Call ``listener(event)`` for each event of ``kind`` (a kind, or several), from
    every guard or only from ``source``. Returns the :class:`Subscription`."""
    if isinstance(kind, str):
        kinds: tuple[str, ...] = (kind,)
    elif isinstance(kind, Iterable):
        kinds = tuple(kind)
        if not kinds:
            raise ValueError("`kind` must name at least one event kind")
    else:
        raise TypeError(f"`kind` must be a str or an iterable of str, not {type(kind).__name__}")
    for k in kinds:
        if not isinstance(k, str):
            raise TypeError(f"`kind` must be a str or an iterable of str, not {type(k).__name__}")
        if k not in KINDS:
            from ._util import config_error  # noqa: PLC0415 - keeps this module light

            raise config_error("kind", "out_of_range", " | ".join(repr(x) for x in KINDS))
    if not callable(listener):
        raise TypeError(f"`listener` must be callable, not {type(listener).__name__}")
    entry = (listener, source)
    with _LOCK:
        for k in dict.fromkeys(kinds):
            _LISTENERS[k] = _LISTENERS.get(k, ()) + (entry,)
    return Subscription(tuple(dict.fromkeys(kinds)), entry)


# ------------------------------------------------------------------ emitting (private)


def wanted(kind: str) -> bool:
    """Whether an event of ``kind`` may reach a listener or the logger (so the caller
    can skip the work of building it)."""
    return bool(_LISTENERS.get(kind)) or logger.isEnabledFor(_MAX_LEVEL[kind])


def _level(event: Event) -> int:
    if event.kind == "state_change":
        return logging.WARNING if event.new == "open" else logging.INFO
    if event.kind == "fallback":
        return logging.DEBUG if event.served else logging.WARNING
    return _LEVELS[event.kind]


def emit(event: Event) -> None:
    """Hand ``event`` to its listeners and the logger. Never raises."""
    for listener, source in _LISTENERS.get(event.kind, ()):
        if source is not None and source is not event.source:
            continue
        try:
            listener(event)
        except Exception:  # noqa: BLE001 - a listener must not break the guarded call
            logger.exception("guards: an event listener failed on %r", event)
    level = _level(event)
    if logger.isEnabledFor(level):
        logger.log(level, "%s", event.message(), extra={"guards_event": event})


def emit_new(kind: str, source: Any, **fields: Any) -> None:
    """Build and emit an event of ``kind`` if a listener or the logger would see it."""
    if _LISTENERS.get(kind) or logger.isEnabledFor(_MAX_LEVEL[kind]):
        emit(Event(kind, source, **fields))


#: The highest level an event of each kind is logged at (to skip building one nobody sees).
_MAX_LEVEL = {
    "state_change": logging.WARNING,
    "fallback": logging.WARNING,
    "give_up": logging.INFO,
    "refusal": logging.DEBUG,
    "retry": logging.DEBUG,
    "limit_change": logging.DEBUG,
}
