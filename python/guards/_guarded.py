"""Guarded blocks and calls: circuit breakers, bulkheads and limiters as ``with`` /
``async with`` blocks and as decorators, with ``fallback=`` for brownouts.

::

    stock = guards.CircuitBreaker()
    pool = guards.Bulkhead(max_concurrent=12)

    with guards.guarded(stock, pool):        # acquire both, report the outcome to both
        reply = client.get("/stock")

    @guards.guarded(stock, fallback=None)     # an optional part of the page
    async def stock_badge(item):
        return await client.get(f"/stock/{item}")

``guarded(*guards)`` acquires each guard in order (a refusal releases what was already
taken and raises the guard's :class:`guards.GuardError`), runs the block or the call, and
hands each guard back, in reverse order, with how it ended: one *outcome* of the call
contract (``docs/outcomes.md``), which each guard turns into its own verdict. The block
or call returned: ``success``. It raised: the exception is classified by
:func:`guards.classify_exception`, the one rule every path shares:

==========================================================  ==================
the call raised                                             outcome
==========================================================  ==================
``CancelledError``, ``KeyboardInterrupt``, ``GeneratorExit``  ``cancelled``
``DeadlineExceeded``                                        ``timeout``
an inner ``@retry`` that gave up after attempts             ``overloaded``
another guard's refusal (``BreakerOpen``, ...)              ``rejected``
a programming error (:data:`PROGRAMMING_ERRORS`)            ``ignored``
an exception carrying an HTTP status                        by the status
``TimeoutError``, HTTP clients' timeouts                    ``timeout``
``ConnectionError``, DNS failures, HTTP connection errors   ``connection_error``
anything else                                               ``other_transient``
==========================================================  ==================

So a ``CircuitBreaker`` counts timeouts, connection errors, 5xx, 429 and overload answers
as failures, a 4xx as a success of the dependency, and ignores refusals, programming
errors and cancellations (a cancelled half-open probe is a failure); a ``Bulkhead`` gives
its slot back whatever happened; a ``Limiter`` or ``Admission`` takes a success as an RTT
sample and a timeout or an overload answer as a drop, and ignores the rest; an
:class:`guards.AdaptiveThrottle` may refuse locally (``Throttled``) before the call and
hears afterwards whether the backend accepted it.

``failure=`` (exception types or a predicate) says which exceptions count as failures of
the dependency (the others are ``ignored``); ``ignore=`` lists exceptions that say
nothing about the dependency (a 404, a validation error).

Inside a ``with`` block, the object ``as`` gives you can mark the outcome when no
exception says it: ``call.failure()`` (e.g. for a 5xx response: ``other_transient``),
``call.dropped()`` (an overload signal: ``overloaded``), ``call.ignore()``, or
``call.set_outcome(name)``.

Deadlines: a guarded call or block inherits the deadline of its context
(:func:`guards.deadline`, ``@guards.retry`` attempts, the admission middleware) and does
not start -- no guard is taken -- once it has passed. ``timeout=`` gives it its own
deadline, ``min(timeout, inherited time left)``: published for the block, and in asyncio
the block is cancelled when it passes, which the guards hear as a timeout (a breaker
failure, a limiter's dropped call).

Fallbacks: with ``fallback=`` (a value, or a callable taking no argument or the
exception), a decorated call (or :meth:`Guarded.call` / :meth:`Guarded.acall`) that a guard
refuses or whose dependency fails returns the fallback instead of raising. By default
only refusals (any :class:`guards.GuardError`) and dependency failures
(:func:`is_dependency_failure`: timeouts, connection errors, HTTP 5xx and 429 carried by
the exception) are served; anything else -- a ``KeyError`` in your own code -- propagates,
is logged by the ``guards`` logger and counts as nothing for the breaker. ``fallback_on=``
(exception types or a predicate) replaces that rule. Whether a fallback is served is then
the :class:`guards.Brownout`'s decision (default: an optional operation, which serves it
for every kind of refusal and failure; pass your own ``brownout=`` to restrict the kinds,
or mark an exempt operation, which proceeds without a guard that refused it). A ``with``
block cannot produce a value, so fallbacks apply to calls only. ``guarded(fallback=...)``
with no guard at all is a fallback alone (for the outermost layer of a stack).

Blocks left out of order: a ``with`` block inside a generator is left when the generator
is closed, possibly after a block entered later (in another generator) is still open.
Each context keeps its open blocks in a stack; leaving one takes the innermost open block
of that ``guarded`` object out of the stack wherever it is, so no slot leaks. With one
breaker or bulkhead and no ``timeout=``, the block and its stack run natively.
"""

from __future__ import annotations

import abc
import asyncio
import contextvars
import functools
import inspect
import socket
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from . import _guards as _n
from . import events as _events
from ._deadline import _DEADLINE, DeadlineScope, _expired_error
from ._guards import (
    AdmissionRejected,
    BreakerOpen,
    BudgetExhausted,
    BulkheadFull,
    DeadlineExceeded,
    GuardError,
    LimitExceeded,
    QueueFull,
    Throttled,
)
from ._util import (
    ExcSpec,
    check_int,
    config_error,
    exception_matcher,
    fail_type,
    http_status,
    is_async_callable,
    mark_coroutine_function,
    positive_duration_ns,
    reject_generator_function,
)
from .retry import _CONNECTION_NAMES, _TIMEOUT_NAMES

if TYPE_CHECKING:
    from ._guards import _Outcome
else:
    _Outcome = str  # the stubs' Literal of the outcome names (a str at run time)

F = TypeVar("F", bound=Callable[..., Any])

_MISSING: Any = object()

#: Every outcome of the call contract (``docs/outcomes.md``), in core's order.
OUTCOMES = (
    "success",
    "timeout",
    "connection_error",
    "other_transient",
    "throttled",
    "overloaded",
    "permanent",
    "rejected",
    "ignored",
    "cancelled",
)
_TOO_LATE = "the deadline had passed before the call started"

#: Exceptions that are bugs in the caller's code, not failures of a dependency
#: (classified ``ignored``): a breaker ignores them, and a fallback is not served for them
#: (they propagate and are logged).
PROGRAMMING_ERRORS: tuple[type[BaseException], ...] = _n.PROGRAMMING_ERRORS

# Class names (anywhere in an exception's MRO) of HTTP clients' timeout, connection and
# transport errors (the first two shared with the retry classifier).
_TRANSPORT_NAMES = _TIMEOUT_NAMES | _CONNECTION_NAMES | frozenset(("TransportError",))


def check_inherited() -> None:
    """Refuse to start once the inherited deadline has passed (no guard is taken)."""
    d = _DEADLINE.get()
    if d is not None and d.is_expired():
        raise _expired_error(d, _TOO_LATE)


def _status_of(exc: BaseException) -> Optional[int]:
    """An HTTP status carried by an exception (httpx, requests, aiohttp, or our own)."""
    found = http_status(exc)
    return None if found is None else found[0]


def is_programming_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a bug in the caller's code (:data:`PROGRAMMING_ERRORS`), or a
    retry that gave up because its last attempt raised one."""
    if isinstance(exc, PROGRAMMING_ERRORS):
        return True
    if isinstance(exc, GuardError):
        cause = exc.__cause__
        return cause is not None and isinstance(cause, PROGRAMMING_ERRORS)
    return False


def is_dependency_failure(exc: BaseException) -> bool:
    """The default ``fallback_on`` of :func:`guarded`: whether ``exc`` is a refusal or a
    failure of the dependency, for which a fallback answer is right.

    * a refusal or give-up of a guard (any :class:`guards.GuardError`: breaker open,
      bulkhead full, deadline passed, retries exhausted, ...), unless a retry gave up
      because its last attempt raised a programming error;
    * a timeout (``TimeoutError``, HTTP clients' timeout errors);
    * a connection error (``ConnectionError``, a DNS failure, HTTP clients' connection
      and transport errors);
    * an exception carrying an HTTP status 5xx or 429 (``status_code``, ``status`` or
      ``response.status_code``: httpx, requests, aiohttp).

    Anything else -- a ``KeyError`` in your own code, a 404 -- is not: it propagates.
    """
    if isinstance(exc, GuardError):
        return not is_programming_error(exc)
    if not isinstance(exc, Exception) or isinstance(exc, PROGRAMMING_ERRORS):
        return False
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError, ConnectionError, socket.gaierror)):
        return True
    status = _status_of(exc)
    if status is not None:
        return status >= 500 or status == 429
    return any(c.__name__ in _TRANSPORT_NAMES for c in type(exc).__mro__)


def refusal_kind(exc: BaseException) -> str:
    """The brownout refusal kind of an exception: ``breaker_open``, ``bulkhead_full``,
    ``budget_exhausted``, ``throttled`` (refused locally), ``timeout``, ``overloaded``
    (the callee said so: HTTP 503 or 429) or ``failed`` (anything else, by the outcome
    :func:`guards.classify_exception` gives it)."""
    if isinstance(exc, BreakerOpen):
        return "breaker_open"
    if isinstance(exc, (BulkheadFull, LimitExceeded, QueueFull)):
        return "bulkhead_full"
    if isinstance(exc, BudgetExhausted):
        return "budget_exhausted"
    if isinstance(exc, (Throttled, AdmissionRejected)):
        return "throttled"
    if not isinstance(exc, Exception):
        return "failed"
    outcome, _ = _n.classify_exception(exc)
    return _REFUSAL_KIND_OF_OUTCOME.get(outcome, "failed")


#: The brownout refusal kind of an outcome (core's ``RefusalKind::of``).
_REFUSAL_KIND_OF_OUTCOME = {
    "timeout": "timeout",
    "connection_error": "failed",
    "other_transient": "failed",
    "throttled": "overloaded",
    "overloaded": "overloaded",
    "rejected": "throttled",
}


# ------------------------------------------------------------------ adapters
#
# One adapter per kind of native guard: how to take it and how to give it back with the
# call's outcome. The native guards emit the events themselves (refusals, breaker state
# changes, limit changes), named after the adapter's ``operation``. Adapters hold no
# state of their own.


class _Adapter:
    __slots__ = ("guard", "kind", "operation")

    def __init__(self, guard: Any, kind: str) -> None:
        self.guard = guard
        self.kind = kind
        self.operation: Optional[str] = None

    def acquire(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def report(self, token: Any, outcome: str) -> None:
        token.report(outcome)


class _BreakerAdapter(_Adapter):
    __slots__ = ()

    def acquire(self) -> Any:
        return self.guard.acquire(operation=self.operation)  # raises BreakerOpen


class _KeyedBreakerAdapter(_BreakerAdapter):
    """One breaker of a :class:`guards.KeyedBreakers` set, chosen by ``key``."""

    __slots__ = ("key",)

    def __init__(self, guard: Any, kind: str, key: Any) -> None:
        super().__init__(guard, kind)
        self.key = key
        self.operation = key if isinstance(key, str) else str(key)

    def acquire(self) -> Any:
        return self.guard.acquire(self.key, operation=self.operation)  # raises BreakerOpen


class _BulkheadAdapter(_Adapter):
    __slots__ = ()

    def acquire(self) -> Any:
        return self.guard.acquire(operation=self.operation)  # raises BulkheadFull


class _LimiterAdapter(_Adapter):
    """Limiter and Admission: a permit (ticket) that reports its own outcome once."""

    __slots__ = ("priority",)

    def __init__(self, guard: Any, kind: str, priority: Optional[int]) -> None:
        super().__init__(guard, kind)
        self.priority = priority

    def acquire(self) -> Any:
        return self.guard.acquire(self.priority, operation=self.operation)  # raises


class _ThrottleAdapter(_Adapter):
    """Client-side adaptive throttling: ``admit`` may reject locally (``Throttled``);
    afterwards the throttle hears how the call ended (the call contract decides whether
    the backend accepted it)."""

    __slots__ = ()

    def acquire(self) -> Any:
        self.guard.admit(operation=self.operation)  # raises Throttled
        return None

    def report(self, token: Any, outcome: str) -> None:
        self.guard.report(outcome)


class _SharedAdapter(_Adapter):
    """A host-wide guard of :mod:`guards.shared`: taken with ``acquire``, given back through
    its permit's ``report``, like the package's own guards."""

    __slots__ = ("priority", "key")

    def __init__(self, guard: Any, kind: str, priority: Optional[int], key: Any = None) -> None:
        super().__init__(guard, kind)
        self.priority = priority
        self.key = key
        if kind == "keyed_breakers":
            if key is None:
                raise TypeError("a keyed breaker set needs `key` (the operation's name or number)")
            self.operation = key if isinstance(key, str) else str(key)

    def acquire(self) -> Any:
        if self.kind == "keyed_breakers":
            return self.guard.acquire(self.key, operation=self.operation)  # raises
        if self.kind in ("limiter", "admission"):
            return self.guard.acquire(self.priority, operation=self.operation)  # raises
        return self.guard.acquire(operation=self.operation)  # raises


def _adapter(guard: Any, priority: Optional[int], key: Any = None) -> _Adapter:
    if isinstance(guard, _n.KeyedBreakers):
        if key is None:
            raise TypeError("a guards.KeyedBreakers needs `key` (the operation's name or number)")
        if isinstance(key, bool) or not isinstance(key, (str, bytes, int)):
            fail_type("key", "a str, bytes or int", key)
        if not isinstance(key, int):
            _n.KeyedBreakers.key_of(key)  # a bad key fails here, not on the first call
        return _KeyedBreakerAdapter(guard, "keyed_breakers", key)
    if isinstance(guard, _n.CircuitBreaker):
        return _BreakerAdapter(guard, "circuit_breaker")
    if isinstance(guard, _n.Bulkhead):
        return _BulkheadAdapter(guard, "bulkhead")
    if isinstance(guard, _n.Limiter):
        return _LimiterAdapter(guard, "limiter", priority)
    if isinstance(guard, _n.Admission):
        return _LimiterAdapter(guard, "admission", priority)
    if isinstance(guard, _n.AdaptiveThrottle):
        return _ThrottleAdapter(guard, "adaptive_throttle")
    shared_kind = getattr(type(guard), "_guards_shared_kind", None)
    if isinstance(shared_kind, str):  # a host-wide guard (guards.shared)
        return _SharedAdapter(guard, shared_kind, priority, key)
    fail_type(
        "guards",
        "guards.CircuitBreaker, KeyedBreakers, Bulkhead, Limiter, Admission or "
        "AdaptiveThrottle instances",
        guard,
    )


# ------------------------------------------------------------------ fallbacks


def _fallback_arity(fallback: Any) -> tuple[int, bool]:
    """How to call a callable fallback, decided once: (number of arguments, 0 or 1 -- the
    exception; whether it returns an awaitable)."""
    is_async = is_async_callable(fallback)
    try:
        sig = inspect.signature(fallback)
    except (TypeError, ValueError):  # a builtin without a signature (dict, list): no args
        return 0, is_async
    positional = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is p.empty]
    var = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
    kw_required = [
        p for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY and p.default is p.empty
    ]
    if kw_required or len(required) > 1:
        raise TypeError(
            "`fallback` must be a value or a callable taking no argument or one (the "
            f"exception); {getattr(fallback, '__qualname__', fallback)!r} takes {sig}"
        )
    return (1 if positional or var else 0), is_async


# ------------------------------------------------------------------ the guarded object


class GuardedCall(metaclass=abc.ABCMeta):  # noqa: B024 - ABCMeta for register()
    """What ``with guarded(...) as call`` gives: mark the outcome when no exception tells
    it. ``call.failure()`` reports a failure of the dependency (``other_transient``: e.g.
    a 5xx response), ``call.dropped()`` an overload signal (``overloaded``: a timeout, a
    503), ``call.ignore()`` nothing at all, ``call.set_outcome(name)`` any outcome of the
    call contract; the last mark wins. An exception leaving the block still decides first.

    A block that is never left (its context was lost) gives its slots back, reporting
    nothing, when the call object is collected (the native permits it holds do so)."""

    __slots__ = ("_owner", "_adapter", "_token", "_mark", "_scope", "_done")

    def __init__(self, owner: Guarded, adapter: Optional[_Adapter], token: Any) -> None:
        self._owner = owner
        self._adapter = adapter  # the guard when there is one; else ``_token`` is the list
        self._token = token
        self._mark = "success"
        self._scope: Optional[DeadlineScope] = None
        self._done = False

    def failure(self) -> None:
        """Mark the call a failure of the dependency (``other_transient``, e.g. a 5xx answer)."""
        self._mark = "other_transient"

    def dropped(self) -> None:
        """Mark the call an overload signal (``overloaded``, e.g. a timeout or a 503)."""
        self._mark = "overloaded"

    def ignore(self) -> None:
        """Mark the call as telling nothing (``ignored``): its slots go back without a verdict."""
        self._mark = "ignored"

    def success(self) -> None:
        """Mark the call a success (the mark a block starts with)."""
        self._mark = "success"

    def set_outcome(self, outcome: str) -> None:
        """Mark the call with any outcome of the call contract (one of ``guards.OUTCOMES``;
        another name raises ``ConfigError``)."""
        if outcome not in OUTCOMES:
            raise config_error("outcome", "out_of_range", " | ".join(repr(o) for o in OUTCOMES))
        self._mark = outcome

    @property
    def outcome(self) -> str:
        """The outcome marked so far."""
        return self._mark

    def _taken(self) -> list[tuple[_Adapter, Any]]:
        if self._adapter is not None:
            return [(self._adapter, self._token)]
        return self._token  # type: ignore[no-any-return]

    @property
    def probe_timeout(self) -> Optional[float]:
        """If a breaker let this call through as a half-open probe: the probe's timeout in
        seconds (else ``None``)."""
        for adapter, token in self._taken():
            if isinstance(adapter, _BreakerAdapter) and getattr(token, "is_probe", False):
                return getattr(token, "probe_timeout", None)  # type: ignore[no-any-return]
        return None

    def __repr__(self) -> str:
        state = "closed" if self._done else "open"
        return f"<guarded block call ({state})>"


GuardedCall.register(_n.GuardedBlockCall)


#: The guarded blocks open in this context (thread or asyncio task), outermost first. A
#: tuple (never mutated), so that contexts copied from this one keep their own view.
_ENTRIES: contextvars.ContextVar[tuple[GuardedCall, ...]] = contextvars.ContextVar(
    "guards_guarded_entries", default=()
)


def _take_entry(owner: Guarded) -> GuardedCall:
    """Take the innermost open block of ``owner`` out of this context's stack, wherever it
    is (see "Blocks left out of order" in the module docs)."""
    stack = _ENTRIES.get()
    i = len(stack) - 1
    while i >= 0 and stack[i]._owner is not owner:
        i -= 1
    if i < 0:
        raise RuntimeError(
            "this guarded object has no open block in this context (thread or task)"
        )
    _ENTRIES.set(stack[:i] + stack[i + 1 :])
    return stack[i]


class Guarded(_n.GuardedBase):
    """Guards applied together to a block or a call; made by :func:`guarded`.

    ``with`` / ``async with`` guard a block; calling the object on a function (sync or
    ``async def``) returns the guarded function; :meth:`call` / :meth:`acall` guard one
    call. Thread-safe and shareable: open blocks are kept per context (thread or asyncio
    task), so one object can guard many concurrent blocks, nested too.
    """

    def __init__(
        self,
        guards: tuple[Any, ...],
        *,
        failure: ExcSpec = None,
        ignore: ExcSpec = None,
        fallback: Any = _MISSING,
        fallback_on: ExcSpec = None,
        brownout: Any = None,
        priority: Optional[int] = None,
        timeout: Any = None,
        key: Any = None,
    ) -> None:
        self._timeout_ns = None if timeout is None else positive_duration_ns("timeout", timeout)
        if priority is not None:
            priority = check_int("priority", priority, 0, 7)
        if not guards and fallback is _MISSING:
            raise TypeError("guarded() needs at least one guard (`guards`) or a `fallback`")
        self._adapters = tuple(_adapter(g, priority, key) for g in guards)
        if key is not None and not any(
            isinstance(a, _KeyedBreakerAdapter)
            or (isinstance(a, _SharedAdapter) and a.kind == "keyed_breakers")
            for a in self._adapters
        ):
            raise TypeError(
                "`key` picks a breaker of a guards.KeyedBreakers set, and none of the "
                "guards is one (a key means nothing to the others)"
            )
        self._one = self._adapters[0] if len(self._adapters) == 1 else None
        self._failure = exception_matcher("failure", failure)
        self._ignore = exception_matcher("ignore", ignore)
        if fallback_on is not None and fallback is _MISSING:
            raise TypeError("`fallback_on` needs a `fallback`")
        self._fallback_on: Callable[[BaseException], bool] = (
            exception_matcher("fallback_on", fallback_on) or is_dependency_failure
        )
        if brownout is not None:
            cls = getattr(_n, "Brownout", None)
            if cls is None or not isinstance(brownout, cls):
                fail_type("brownout", "a guards.Brownout or None", brownout)
        elif fallback is not _MISSING:
            brownout = _n.Brownout(optional=True)
        self._fallback = fallback
        self._fallback_args, self._fallback_async = (
            _fallback_arity(fallback) if callable(fallback) else (0, False)
        )
        self._brownout = brownout
        self._operation: Optional[str] = None
        # ``guard.call`` / ``guard.acall`` for one bulkhead without a brownout or a
        # timeout: what call() / acall() run natively (a bulkhead hears no outcome).
        self._native: Optional[tuple[Callable[..., Any], Callable[..., Any]]] = None
        one = self._one
        custom = self._failure is not None or self._ignore is not None
        if (
            isinstance(one, _BulkheadAdapter)
            and brownout is None
            and self._timeout_ns is None
            and not custom
        ):
            self._native = (one.guard.call, one.guard.acall)
        # ``with`` blocks under one breaker or bulkhead without a timeout of their own run
        # natively (GuardedBase.__enter__/__exit__); others call _enter_slow/_exit_slow.
        if isinstance(one, (_BreakerAdapter, _BulkheadAdapter)) and self._timeout_ns is None:
            self._configure_blocks(
                one.guard,
                key=one.key if isinstance(one, _KeyedBreakerAdapter) else None,
                classify=self.classify if custom else None,
                deadline=_DEADLINE.get,
                deadline_gated=True,
            )
            if isinstance(one, _KeyedBreakerAdapter) and one.operation is not None:
                self._set_operation(one.operation)

    # ---------------------------------------------------------- classification
    def classify(self, exc: BaseException) -> _Outcome:
        """The outcome an exception leaving the block or call reports (see the module
        docs): :func:`guards.classify_exception`, narrowed by ``failure=`` / ``ignore=``."""
        if not isinstance(exc, Exception):
            return "cancelled"
        if self._ignore is not None and self._ignore(exc):
            return "ignored"
        outcome, _ = _n.classify_exception(exc)
        if self._failure is not None and outcome not in ("rejected", "cancelled"):
            if not self._failure(exc):
                return "ignored"
            if outcome in ("permanent", "ignored"):
                return "other_transient"  # the caller says this is the dependency failing
        return outcome

    def _outcome_of(self, exc: BaseException, taken: list[tuple[_Adapter, Any]]) -> _Outcome:
        """``classify(exc)``; if a user's ``failure``/``ignore`` predicate raises, the
        guards are given back (``ignored``) before its error propagates."""
        try:
            return self.classify(exc)
        except BaseException:
            self._release(taken, "ignored")
            raise

    # ---------------------------------------------------------- acquire / release
    def _acquire(self, skip_refused: bool) -> list[tuple[_Adapter, Any]]:
        """Take every guard in order; on a refusal give back what was taken and raise
        (or, for an exempt brownout operation, go on without that guard)."""
        taken: list[tuple[_Adapter, Any]] = []
        for adapter in self._adapters:
            try:
                taken.append((adapter, adapter.acquire()))
            except GuardError as refusal:
                if skip_refused:
                    decision = self._brownout_decides(refusal)
                    if decision == "proceed":
                        continue
                    refusal._guards_decision = decision  # type: ignore[attr-defined]
                self._release(taken, "rejected")
                raise
        return taken

    @staticmethod
    def _release(taken: list[tuple[_Adapter, Any]], outcome: str) -> None:
        for adapter, token in reversed(taken):
            adapter.report(token, outcome)

    def _brownout_decides(self, exc: BaseException) -> str:
        b = self._brownout
        if b is None:
            return "fail_fast"
        return b.on_refusal(refusal_kind(exc))  # type: ignore[no-any-return]

    # ---------------------------------------------------------- deadlines
    def _scope(self) -> Optional[DeadlineScope]:
        """The deadline scope the call runs in: its own ``timeout`` (never beyond the
        inherited deadline), or ``None`` when it only inherits."""
        return None if self._timeout_ns is None else DeadlineScope(self._timeout_ns, None)

    # ---------------------------------------------------------- with
    def _push(self) -> GuardedCall:
        check_inherited()
        one = self._one
        if one is not None:
            call = GuardedCall(self, one, one.acquire())
        else:
            call = GuardedCall(self, None, self._acquire(False))
        _ENTRIES.set(_ENTRIES.get() + (call,))
        return call

    def _settle(self, call: GuardedCall, e: Optional[BaseException]) -> None:
        if call._done:
            return
        call._done = True
        outcome = call._mark if e is None else self._outcome_of(e, call._taken())
        adapter = call._adapter
        if adapter is None:
            self._release(call._token, outcome)
        else:
            adapter.report(call._token, outcome)

    def _enter_slow(self) -> GuardedCall:
        """``__enter__`` when the block does not run natively (several guards, a limiter,
        admission or throttle, or a ``timeout``)."""
        call = self._push()
        if self._timeout_ns is not None:
            scope = DeadlineScope(self._timeout_ns, None)
            call._scope = scope
            try:
                scope.__enter__()
            except BaseException as exc:
                self._settle(_take_entry(self), exc)
                raise
        return call

    def _exit_slow(self, et: Any = None, e: Any = None, tb: Any = None) -> None:
        call = _take_entry(self)
        if call._scope is not None:
            call._scope.__exit__(et, e, tb)
        self._settle(call, e)

    async def __aenter__(self) -> GuardedCall:
        call = self._push()
        if self._timeout_ns is not None:
            scope = DeadlineScope(self._timeout_ns, None)
            call._scope = scope
            try:
                await scope.__aenter__()
            except BaseException as exc:
                self._settle(_take_entry(self), exc)
                raise
        return call

    async def __aexit__(self, et: Any, e: Any, tb: Any) -> None:
        call = _take_entry(self)
        if call._scope is not None:
            try:
                await call._scope.__aexit__(et, e, tb)
            except DeadlineExceeded as expired:  # the block was cancelled at its deadline
                self._settle(call, expired)
                raise
        self._settle(call, e)

    # ---------------------------------------------------------- calls
    def call(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` under the guards (with the fallback, if any)."""
        if not callable(fn):
            fail_type("fn", "a callable", fn)
        native = self._native
        if native is not None:
            check_inherited()
            return native[0](fn, *args, **kwargs)
        if self._fallback_async:
            raise TypeError("an async `fallback` needs an async function (use acall)")
        brownout = self._brownout is not None
        try:
            check_inherited()
            taken = self._acquire(brownout)
        except GuardError as refusal:
            return self._on_refused(refusal)
        try:
            scope = self._scope()
            if scope is None:
                result = fn(*args, **kwargs)
            else:
                with scope:
                    result = fn(*args, **kwargs)
        except BaseException as exc:
            self._release(taken, self._outcome_of(exc, taken))
            if brownout and isinstance(exc, Exception):
                return self._on_failed(exc)
            raise
        self._release(taken, "success")
        if brownout:
            self._brownout.on_full()
        return result

    async def acall(self, fn: Callable[..., Awaitable[Any]], /, *args: Any, **kwargs: Any) -> Any:
        """``await fn(*args, **kwargs)`` under the guards (with the fallback, if any); with
        a ``timeout`` (or an inherited deadline) the call is cancelled when it passes."""
        if not callable(fn):
            fail_type("fn", "a callable", fn)
        native = self._native
        if native is not None:
            check_inherited()
            return await native[1](fn, *args, **kwargs)
        brownout = self._brownout is not None
        try:
            check_inherited()
            taken = self._acquire(brownout)
        except GuardError as refusal:
            return await self._await_fallback(self._on_refused(refusal))
        try:
            scope = self._scope()
            if scope is None:
                result = await fn(*args, **kwargs)
            else:
                async with scope:
                    result = await fn(*args, **kwargs)
        except BaseException as exc:
            self._release(taken, self._outcome_of(exc, taken))
            if brownout and isinstance(exc, Exception):
                return await self._await_fallback(self._on_failed(exc))
            raise
        self._release(taken, "success")
        if brownout:
            self._brownout.on_full()
        return result

    async def _await_fallback(self, value: Any) -> Any:
        if self._fallback_async:
            return await value
        return value

    def _on_refused(self, refusal: GuardError) -> Any:
        # _acquire already asked the brownout when one is set (and it did not proceed).
        if self._brownout is None:
            raise refusal
        return self._serve_or_raise(refusal, asked=True)

    def _on_failed(self, exc: Exception) -> Any:
        return self._serve_or_raise(exc, asked=False)

    def _serve_or_raise(self, exc: BaseException, *, asked: bool) -> Any:
        if self._fallback is not _MISSING and not self._fallback_on(exc):
            _events.emit_new(
                "fallback",
                self,
                operation=self._operation,
                exception=exc,
                served=False,
                reason="programming_error" if is_programming_error(exc) else "not_in_fallback_on",
            )
            raise exc
        if asked:
            decision = getattr(exc, "_guards_decision", None)
            if decision is None:  # refused before any guard: the deadline had passed
                decision = self._brownout_decides(exc)
        else:
            decision = self._brownout_decides(exc)
        if decision == "serve_fallback" and self._fallback is not _MISSING:
            _events.emit_new(
                "fallback", self, operation=self._operation, exception=exc, served=True
            )
            return self._fallback_value(exc)
        raise exc

    def _fallback_value(self, exc: BaseException) -> Any:
        fb = self._fallback
        if not callable(fb):
            return fb
        return fb(exc) if self._fallback_args else fb()

    def __call__(self, fn: F) -> F:
        """Decorate ``fn`` (a function or an ``async def``)."""
        if not callable(fn):
            fail_type("fn", "a callable", fn)
        reject_generator_function("guards.guarded(...)", fn)
        is_async = is_async_callable(fn)
        if self._fallback_async and not is_async:
            raise TypeError(
                "an async `fallback` cannot answer for a sync function: its coroutine would "
                "be returned instead of a value"
            )
        if self._operation is None:
            self._operation = getattr(fn, "__qualname__", None)
            for a in self._adapters:
                if a.operation is None:
                    a.operation = self._operation
            if self._operation is not None and not isinstance(self._one, _KeyedBreakerAdapter):
                self._set_operation(self._operation)
        if self._brownout is None and self._timeout_ns is None and len(self._adapters) == 1:
            wrapper = self._single(fn, self._adapters[0], is_async)
        elif is_async:

            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                return await self.acall(fn, *args, **kwargs)

        else:

            def wrapper(*args: Any, **kwargs: Any) -> Any:
                return self.call(fn, *args, **kwargs)

        functools.update_wrapper(wrapper, fn)
        wrapper.guarded = self  # type: ignore[attr-defined]
        if is_async and isinstance(wrapper, _n.GuardedFunction):
            mark_coroutine_function(wrapper, fn)
        return wrapper  # type: ignore[return-value]

    def _single(self, fn: Callable[..., Any], adapter: _Adapter, is_async: bool) -> Any:
        """A decorator for one guard, no brownout and no timeout of its own: the hot path
        of most services. A breaker or bulkhead around a plain function is a native
        :class:`guards.GuardedFunction` (nothing between the caller and ``fn`` but native
        code on success; an exception is classified natively, or by :meth:`classify` when
        ``failure=`` / ``ignore=`` are given; for an ``async def``, a native
        :class:`guards.GuardedCoroutine` is awaited instead of a Python coroutine; code that
        asks ``inspect.isfunction`` takes it for ``fn``, see ``GuardedFunction.__class__``);
        otherwise one Python frame and a look at the inherited deadline."""
        custom = self._failure is not None or self._ignore is not None
        if isinstance(adapter, (_BreakerAdapter, _BulkheadAdapter)):
            return _n.GuardedFunction(
                adapter.guard,
                fn,
                key=adapter.key if isinstance(adapter, _KeyedBreakerAdapter) else None,
                classify=self.classify if custom else None,
                deadline=_DEADLINE.get,
                deadline_gated=True,
                is_async=is_async,
            )
        acquire = adapter.acquire
        report = adapter.report
        classify = self.classify
        get_deadline = _DEADLINE.get

        def outcome_of(exc: BaseException, token: Any) -> str:
            try:
                return classify(exc)
            except BaseException:
                report(token, "ignored")  # give the guard back, then surface the bug
                raise

        def take() -> Any:
            d = get_deadline()
            if d is not None and d.is_expired():
                raise _expired_error(d, _TOO_LATE)
            return acquire()

        if is_async:

            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                token = take()
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as exc:
                    report(token, outcome_of(exc, token))
                    raise
                report(token, "success")
                return result

            return awrapper

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            token = take()
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                report(token, outcome_of(exc, token))
                raise
            report(token, "success")
            return result

        return wrapper

    # ---------------------------------------------------------- stats
    @property
    def guards(self) -> tuple[Any, ...]:
        """The guards, in acquisition order."""
        return tuple(a.guard for a in self._adapters)

    @property
    def brownout(self) -> Any:
        """The brownout deciding fallbacks, or ``None``."""
        return self._brownout

    def stats(self) -> dict[str, int]:
        """Every guard's stats, keys prefixed with its kind (``circuit_breaker_rejected``;
        a second guard of the same kind gets ``_2``), plus ``brownout_*``."""
        out: dict[str, int] = {}
        seen: dict[str, int] = {}
        for adapter in self._adapters:
            n = seen[adapter.kind] = seen.get(adapter.kind, 0) + 1
            prefix = adapter.kind if n == 1 else f"{adapter.kind}_{n}"
            if isinstance(adapter, _KeyedBreakerAdapter):
                stats = adapter.guard.stats(adapter.key) or {}
            else:
                stats = adapter.guard.stats()
            for k, v in stats.items():
                out[f"{prefix}_{k}"] = v
        if self._brownout is not None:
            for k, v in self._brownout.stats().items():
                out[f"brownout_{k}"] = v
        return out

    metrics_kind = "guarded"
    """How ``guards.prometheus`` and ``guards.otel`` name this object's ``stats()``."""

    def __repr__(self) -> str:
        inner = ", ".join(type(a.guard).__name__ for a in self._adapters)
        return f"guards.guarded({inner})"


def guarded(
    *guards: Any,
    failure: ExcSpec = None,
    ignore: ExcSpec = None,
    fallback: Any = _MISSING,
    fallback_on: ExcSpec = None,
    brownout: Any = None,
    priority: Optional[int] = None,
    timeout: Any = None,
    key: Any = None,
) -> Guarded:
    """Guard a block or a call with circuit breakers, bulkheads, limiters and admission
    (see the module docs): ``with guarded(breaker, bulkhead): ...``,
    ``@guarded(breaker, fallback=[])``.

    ``failure``: exception types (or a predicate) that count as failures (default: every
    ``Exception`` but a programming error, :data:`PROGRAMMING_ERRORS`). ``ignore``:
    exceptions that count as nothing. ``fallback``: the value, or a callable taking no
    argument or the exception (an ``async def`` one for an async function), that a
    decorated call returns instead of raising a refusal or a dependency failure.
    ``fallback_on``: which exceptions the fallback answers (exception types or a
    predicate; default :func:`is_dependency_failure`); the others propagate and are
    logged. ``brownout``: a :class:`guards.Brownout` (default with a fallback: an
    optional operation). ``priority``: the priority class (0..7) passed to limiters and
    admission. ``timeout``: the call's own deadline (seconds, timedelta or Nanos), never
    beyond the inherited one: published for the call, and in asyncio the call is cancelled
    when it passes (a :class:`guards.DeadlineExceeded`, which the guards hear as a
    timeout).

    ``key``: which breaker of a :class:`guards.KeyedBreakers` set (an operation's name);
    a ``key`` without a ``KeyedBreakers`` among the guards is a ``TypeError``.

    With no guard, ``guarded(fallback=...)`` is a fallback alone: the outermost layer of
    a stack such as ``@guarded(fallback=cached)`` / ``@retry(...)`` /
    ``@guarded(breaker)``.

    Whatever the settings, a call does not start (and takes no guard) once the deadline it
    inherits has passed: :class:`guards.DeadlineExceeded`. Generator functions are refused
    (``TypeError``): their body runs after the call returns.
    """
    return Guarded(
        guards,
        failure=failure,
        ignore=ignore,
        fallback=fallback,
        fallback_on=fallback_on,
        brownout=brownout,
        priority=priority,
        timeout=timeout,
        key=key,
    )
