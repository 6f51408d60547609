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
reports how it went to each guard in reverse order:

================  =================  ==============  ======================
how it ended      CircuitBreaker     Bulkhead        Limiter / Admission
================  =================  ==============  ======================
returned          ``on_success``     released        ``on_success``
failure           ``on_failure``     released        ``on_ignore``
timeout/overload  ``on_failure``     released        ``on_dropped``
ignored           ``on_ignore``      released        ``on_ignore``
cancelled         probe: failure,    released        ``on_ignore``
                  else ``on_ignore``
================  =================  ==============  ======================

*failure* is any ``Exception`` unless ``failure=`` (exception types or a predicate) says
which ones count; ``ignore=`` lists exceptions that say nothing about the dependency (a
404, a validation error). A refusal by another guard nested inside (``BulkheadFull`` of an
inner call, ...) is ignored too: it is not the dependency failing. An inner ``@retry``
that gave up after making attempts (``RetriesExhausted``, or ``BudgetExhausted`` with
``attempts > 0``) is a failure: the dependency failed and no retry was left. A timeout
(``TimeoutError``, :class:`guards.DeadlineExceeded`) or an exception carrying HTTP status
503 or 429 is an overload signal, which a limiter counts as a dropped call.
An :class:`guards.AdaptiveThrottle` may refuse locally (``Throttled``) before the call;
afterwards it is told the backend accepted the call (returned, or failed otherwise) or
rejected it (timeout/overload); ignored and cancelled calls tell it nothing.
*cancelled* is a ``BaseException`` that is not an ``Exception``: ``asyncio.CancelledError``,
``KeyboardInterrupt``, ``GeneratorExit``. A breaker probe abandoned that way counts as
failed (as core requires), an ordinary call as ignored.

Inside a ``with`` block, the object ``as`` gives you can mark the outcome when no
exception says it: ``call.failure()`` (e.g. for a 5xx response), ``call.ignore()``.

Deadlines: a guarded call or block inherits the deadline of its context
(:func:`guards.deadline`, ``@guards.retry`` attempts, the admission middleware) and does
not start -- no guard is taken -- once it has passed. ``timeout=`` gives it its own
deadline, ``min(timeout, inherited time left)``: published for the block, and in asyncio
the block is cancelled when it passes, which the guards hear as a timeout (a breaker
failure, a limiter's dropped call).

Brownouts: with ``fallback=`` (a value, or a callable taking no arguments), a decorated
call that a guard refuses or that fails returns the fallback instead of raising, as the
native :class:`guards.Brownout` decides (by default an optional operation that serves the
fallback on every kind of refusal and failure; pass your own ``brownout=`` to restrict the
kinds, or mark an exempt operation, which proceeds without a guard that refused it). A
``with`` block cannot produce a value, so fallbacks apply to calls only.
"""

from __future__ import annotations

import abc
import contextvars
import functools
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from . import _guards as _n
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
    RetriesExhausted,
    Throttled,
)
from ._util import (
    ExcSpec,
    check_int,
    exception_matcher,
    fail_type,
    http_status,
    is_async_callable,
    mark_coroutine_function,
    positive_duration_ns,
    snake_case,
)

F = TypeVar("F", bound=Callable[..., Any])

# How a call ended, as the guards are told.
SUCCESS = 0
FAILURE = 1  # the dependency failed
DROPPED = 2  # timed out or overloaded: a failure that is also an overload signal
IGNORE = 3  # says nothing about the dependency
CANCELLED = 4  # abandoned (BaseException that is not an Exception)

_MISSING: Any = object()
_TOO_LATE = "the deadline had passed before the call started"


def check_inherited() -> None:
    """Refuse to start once the inherited deadline has passed (no guard is taken)."""
    d = _DEADLINE.get()
    if d is not None and d.is_expired():
        raise _expired_error(d, _TOO_LATE)


def _status_of(exc: BaseException) -> Optional[int]:
    """An HTTP status carried by an exception (httpx, requests, aiohttp, or our own)."""
    found = http_status(exc)
    return None if found is None else found[0]


def _dependency_failed(exc: GuardError) -> bool:
    """Whether a guard error means the guarded work itself failed: a deadline passed, or
    an inner ``@retry`` gave up after making attempts (every attempt failed, or the budget
    refused a retry after a failed attempt). Any other guard error is a local refusal."""
    if isinstance(exc, (DeadlineExceeded, RetriesExhausted)):
        return True
    attempts = getattr(exc, "attempts", 0)
    return isinstance(attempts, int) and attempts > 0


def refusal_kind(exc: BaseException) -> str:
    """The brownout refusal kind of an exception: ``breaker_open``, ``bulkhead_full``,
    ``budget_exhausted``, ``throttled`` (refused locally), ``timeout``, ``overloaded``
    (the callee said so: HTTP 503 or 429) or ``failed``."""
    if isinstance(exc, BreakerOpen):
        return "breaker_open"
    if isinstance(exc, (BulkheadFull, LimitExceeded, QueueFull)):
        return "bulkhead_full"
    if isinstance(exc, BudgetExhausted):
        return "budget_exhausted"
    if isinstance(exc, (Throttled, AdmissionRejected)):
        return "throttled"
    if isinstance(exc, TimeoutError):  # DeadlineExceeded too
        return "timeout"
    status = _status_of(exc)
    if status in (429, 503):
        return "overloaded"
    return "failed"


# ------------------------------------------------------------------ adapters
#
# One adapter per kind of native guard: how to take a slot and how to give it back with
# the call's outcome. Adapters hold no state of their own.


class _Adapter:
    __slots__ = ("guard", "kind")

    def __init__(self, guard: Any, kind: str) -> None:
        self.guard = guard
        self.kind = kind

    def acquire(self, now: Optional[int]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def report(self, token: Any, outcome: int, now: Optional[int]) -> None:  # pragma: no cover
        raise NotImplementedError

    def fast_paths(self) -> tuple[Callable[[], Any], Callable[[Any], Any]]:
        """(take a slot now, give it back as a success now), as direct native calls."""
        return (lambda: self.acquire(None)), (lambda t: self.report(t, SUCCESS, None))


class _BreakerAdapter(_Adapter):
    __slots__ = ()

    def acquire(self, now: Optional[int]) -> Any:
        return self.guard.acquire()  # raises BreakerOpen (natives read the clock)

    def report(self, token: Any, outcome: int, now: Optional[int]) -> None:
        if outcome == SUCCESS:
            token.on_success()
        elif outcome == FAILURE or outcome == DROPPED:
            token.on_failure()
        elif outcome == CANCELLED and token.is_probe:
            token.on_failure()  # an abandoned probe must not hold the half-open state
        else:
            token.on_ignore()

    def fast_paths(self) -> tuple[Callable[[], Any], Callable[[Any], Any]]:
        return self.guard.acquire, _n.BreakerPermit.on_success


class _KeyedBreakerAdapter(_BreakerAdapter):
    """One breaker of a :class:`guards.KeyedBreakers` set, chosen by ``key``."""

    __slots__ = ("key",)

    def __init__(self, guard: Any, kind: str, key: Any) -> None:
        super().__init__(guard, kind)
        self.key = key

    def acquire(self, now: Optional[int]) -> Any:
        return self.guard.acquire(self.key)  # raises BreakerOpen

    def fast_paths(self) -> tuple[Callable[[], Any], Callable[[Any], Any]]:
        return functools.partial(self.guard.acquire, self.key), _n.BreakerPermit.on_success


class _BulkheadAdapter(_Adapter):
    __slots__ = ()

    def acquire(self, now: Optional[int]) -> Any:
        return self.guard.acquire()  # raises BulkheadFull

    def report(self, token: Any, outcome: int, now: Optional[int]) -> None:
        token.release()

    def fast_paths(self) -> tuple[Callable[[], Any], Callable[[Any], Any]]:
        return self.guard.acquire, _n.BulkheadPermit.release


class _LimiterAdapter(_Adapter):
    """Limiter and Admission: a permit (ticket) that reports its own outcome once."""

    __slots__ = ("priority", "permit_type")

    def __init__(self, guard: Any, kind: str, priority: Optional[int], permit_type: Any) -> None:
        super().__init__(guard, kind)
        self.priority = priority
        self.permit_type = permit_type

    def acquire(self, now: Optional[int]) -> Any:
        if self.priority is None:
            return self.guard.acquire()  # raises on refusal
        return self.guard.acquire(self.priority)

    def report(self, token: Any, outcome: int, now: Optional[int]) -> None:
        if outcome == SUCCESS:
            token.on_success()
        elif outcome == DROPPED:
            token.on_dropped()
        else:
            token.on_ignore()

    def fast_paths(self) -> tuple[Callable[[], Any], Callable[[Any], Any]]:
        acquire = self.guard.acquire
        if self.priority is not None:
            acquire = functools.partial(acquire, self.priority)
        return acquire, self.permit_type.on_success


class _ThrottleAdapter(_Adapter):
    """Client-side adaptive throttling: ``admit`` may reject locally (``Throttled``);
    the backend's answer is reported as accepted (anything but an overload signal) or
    rejected (a timeout, a 503/429)."""

    __slots__ = ()

    def acquire(self, now: Optional[int]) -> Any:
        self.guard.admit()  # raises Throttled
        return None

    def report(self, token: Any, outcome: int, now: Optional[int]) -> None:
        if outcome == SUCCESS or outcome == FAILURE:
            self.guard.on_accepted()
        elif outcome == DROPPED:
            self.guard.on_rejected_by_backend()

    def fast_paths(self) -> tuple[Callable[[], Any], Callable[[Any], Any]]:
        admit, accepted = self.guard.admit, self.guard.on_accepted
        return admit, (lambda _t: accepted())


def _adapter(guard: Any, priority: Optional[int], key: Any = None) -> _Adapter:
    keyed = getattr(_n, "KeyedBreakers", None)
    if keyed is not None and isinstance(guard, keyed):
        if key is None:
            raise TypeError("a guards.KeyedBreakers needs `key` (the operation's name or number)")
        if isinstance(key, bool) or not isinstance(key, (str, bytes, int)):
            fail_type("key", "a str, bytes or int", key)
        if not isinstance(key, int):
            keyed.key_of(key)  # a bad key fails here, not on the first call
        return _KeyedBreakerAdapter(guard, "keyed_breakers", key)
    kinds = {
        "CircuitBreaker": _BreakerAdapter,
        "Bulkhead": _BulkheadAdapter,
    }
    name = type(guard).__name__
    for cls_name, adapter in kinds.items():
        cls = getattr(_n, cls_name, None)
        if cls is not None and isinstance(guard, cls):
            return adapter(guard, snake_case(cls_name))
    for cls_name, permit_name in (("Limiter", "LimiterPermit"), ("Admission", "AdmissionTicket")):
        cls = getattr(_n, cls_name, None)
        if cls is not None and isinstance(guard, cls):
            return _LimiterAdapter(guard, snake_case(cls_name), priority, getattr(_n, permit_name))
    cls = getattr(_n, "AdaptiveThrottle", None)
    if cls is not None and isinstance(guard, cls):
        return _ThrottleAdapter(guard, "adaptive_throttle")
    fail_type(
        "guards",
        "guards.CircuitBreaker, KeyedBreakers, Bulkhead, Limiter, Admission or "
        "AdaptiveThrottle instances",
        guard,
    )
    raise AssertionError(name)  # unreachable: fail_type raises


# ------------------------------------------------------------------ the guarded object


class GuardedCall(metaclass=abc.ABCMeta):  # noqa: B024 - ABCMeta for register()
    """What ``with guarded(...) as call`` gives: mark the outcome when no exception tells
    it. ``call.failure()`` reports a failure (e.g. a 5xx response), ``call.dropped()`` an
    overload signal (a timeout, a 503), ``call.ignore()`` nothing at all; the last mark
    wins. An exception leaving the block still decides first.

    A block under one breaker or bulkhead (without a ``timeout``) gets the native
    :class:`guards.GuardedBlockCall`, which is a ``GuardedCall`` too (``isinstance``)."""

    __slots__ = ("_owner", "_adapter", "_token", "_mark", "_parent", "_scope")

    def __init__(
        self, owner: Guarded, adapter: Optional[_Adapter], token: Any, parent: Any
    ) -> None:
        self._owner = owner
        self._adapter = adapter  # the guard when there is one; else ``_token`` is the list
        self._token = token
        self._mark = SUCCESS
        self._parent = parent
        self._scope: Optional[DeadlineScope] = None

    def failure(self) -> None:
        self._mark = FAILURE

    def dropped(self) -> None:
        self._mark = DROPPED

    def ignore(self) -> None:
        self._mark = IGNORE

    def success(self) -> None:
        self._mark = SUCCESS

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


GuardedCall.register(_n.GuardedBlockCall)


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
        brownout: Any = None,
        priority: Optional[int] = None,
        timeout: Any = None,
        key: Any = None,
    ) -> None:
        self._timeout_ns = None if timeout is None else positive_duration_ns("timeout", timeout)
        if priority is not None:
            priority = check_int("priority", priority, 0, 7)
        if not guards:
            raise TypeError("guarded() needs at least one guard (`guards`)")
        self._adapters = tuple(_adapter(g, priority, key) for g in guards)
        self._one = self._adapters[0] if len(self._adapters) == 1 else None
        if self._one is not None:
            self._one_acquire, self._one_succeed = self._one.fast_paths()
        self._failure = exception_matcher("failure", failure)
        self._ignore = exception_matcher("ignore", ignore)
        if brownout is not None:
            cls = getattr(_n, "Brownout", None)
            if cls is None or not isinstance(brownout, cls):
                fail_type("brownout", "a guards.Brownout or None", brownout)
        elif fallback is not _MISSING:
            brownout = _n.Brownout(optional=True)
        self._fallback = fallback
        self._brownout = brownout
        # ``guard.call`` / ``guard.acall`` for one breaker or bulkhead judged by the default
        # rules, without a brownout or a timeout: what call() / acall() run natively.
        self._native: Optional[tuple[Callable[..., Any], Callable[..., Any]]] = None
        one = self._one
        if isinstance(one, (_BreakerAdapter, _BulkheadAdapter)) and self._timeout_ns is None:
            # ``with`` blocks run natively (GuardedBase.__enter__ / __exit__)
            self._configure_blocks(
                one.guard,
                key=one.key if isinstance(one, _KeyedBreakerAdapter) else None,
                classify=self._custom_classify(),
                deadline=_DEADLINE.get,
                deadline_gated=True,
                entries=_ENTRIES,
            )
        if (
            isinstance(one, (_BreakerAdapter, _BulkheadAdapter))
            and brownout is None
            and self._timeout_ns is None
            and self._custom_classify() is None
        ):
            if isinstance(one, _KeyedBreakerAdapter):
                self._native = (
                    functools.partial(one.guard.call, one.key),
                    functools.partial(one.guard.acall, one.key),
                )
            else:
                self._native = (one.guard.call, one.guard.acall)

    # ---------------------------------------------------------- classification
    def classify(self, exc: BaseException) -> int:
        """How an exception leaving the block is reported (see the module docs)."""
        if not isinstance(exc, Exception):
            return CANCELLED
        if self._ignore is not None and self._ignore(exc):
            return IGNORE
        if isinstance(exc, GuardError) and not _dependency_failed(exc):
            return IGNORE  # a nested guard refused: not the dependency failing
        if self._failure is not None and not self._failure(exc):
            return IGNORE
        if isinstance(exc, TimeoutError) or _status_of(exc) in (429, 503):
            return DROPPED
        return FAILURE

    def _outcome_of(self, exc: BaseException, taken: list[tuple[_Adapter, Any]]) -> int:
        """``classify(exc)``; if a user's ``failure``/``ignore`` predicate raises, the
        slots are given back (as ignored) before its error propagates."""
        try:
            return self.classify(exc)
        except BaseException:
            self._release(taken, IGNORE, None)
            raise

    # ---------------------------------------------------------- acquire / release
    def _acquire(self, now: Optional[int], skip_refused: bool) -> list[tuple[_Adapter, Any]]:
        """Take every guard in order; on a refusal give back what was taken and raise
        (or, for an exempt brownout operation, go on without that guard)."""
        taken: list[tuple[_Adapter, Any]] = []
        for adapter in self._adapters:
            try:
                taken.append((adapter, adapter.acquire(now)))
            except GuardError as refusal:
                if skip_refused:
                    decision = self._brownout_decides(refusal)
                    if decision == "proceed":
                        continue
                    refusal._guards_decision = decision  # type: ignore[attr-defined]
                self._release(taken, IGNORE, now)
                raise
        return taken

    @staticmethod
    def _release(taken: list[tuple[_Adapter, Any]], outcome: int, now: Optional[int]) -> None:
        for adapter, token in reversed(taken):
            adapter.report(token, outcome, now)

    def _brownout_decides(self, exc: BaseException) -> str:
        b = self._brownout
        if b is None:
            return "fail_fast"
        return b.on_refusal(refusal_kind(exc))

    def _fallback_value(self) -> Any:
        fb = self._fallback
        return fb() if callable(fb) else fb

    # ---------------------------------------------------------- deadlines
    def _scope(self) -> Optional[DeadlineScope]:
        """The deadline scope the call runs in: its own ``timeout`` (never beyond the
        inherited deadline), or ``None`` when it only inherits."""
        return None if self._timeout_ns is None else DeadlineScope(self._timeout_ns, None)

    # ---------------------------------------------------------- with
    def _push(self, scope: Optional[DeadlineScope]) -> GuardedCall:
        check_inherited()
        one = self._one
        if one is not None:
            call = GuardedCall(self, one, self._one_acquire(), _ENTRIES.get())
        else:
            call = GuardedCall(self, None, self._acquire(None, False), _ENTRIES.get())
        call._scope = scope
        _ENTRIES.set(call)
        return call

    def _pop(self, e: Optional[BaseException]) -> GuardedCall:
        call = _ENTRIES.get()
        if call is None or call._owner is not self:
            raise RuntimeError("guarded blocks must be exited in the reverse order of entry")
        _ENTRIES.set(call._parent)
        return call

    def _settle(self, call: GuardedCall, e: Optional[BaseException]) -> None:
        outcome = call._mark if e is None else self._outcome_of(e, call._taken())
        adapter = call._adapter
        if adapter is None:
            self._release(call._token, outcome, None)
        elif outcome == SUCCESS:
            self._one_succeed(call._token)
        else:
            adapter.report(call._token, outcome, None)

    if TYPE_CHECKING:  # native in GuardedBase: these run for the other configurations

        def __enter__(self) -> GuardedCall: ...

        def __exit__(self, et: object = None, e: object = None, tb: object = None) -> None: ...

    def _enter_slow(self) -> GuardedCall:
        one = self._one
        if self._timeout_ns is None and one is not None:
            # _push, inlined for the common case: one guard, no timeout of its own
            d = _DEADLINE.get()
            if d is not None and d.is_expired():
                raise _expired_error(d, _TOO_LATE)
            call = GuardedCall(self, one, self._one_acquire(), _ENTRIES.get())
            _ENTRIES.set(call)
            return call
        if self._timeout_ns is None:
            return self._push(None)
        scope = DeadlineScope(self._timeout_ns, None)
        call = self._push(scope)
        try:
            scope.__enter__()
        except BaseException as exc:
            self._settle(self._pop(exc), exc)
            raise
        return call

    def _exit_slow(self, et: Any, e: Any, tb: Any) -> None:
        call = _ENTRIES.get()  # _pop, inlined: this runs once per block
        if call is None or call._owner is not self:
            raise RuntimeError("guarded blocks must be exited in the reverse order of entry")
        _ENTRIES.set(call._parent)
        if call._scope is not None:
            call._scope.__exit__(et, e, tb)
        if e is None and call._adapter is not None and call._mark == SUCCESS:
            self._one_succeed(call._token)  # the common case, without a call more
        else:
            self._settle(call, e)

    async def __aenter__(self) -> GuardedCall:
        if self._timeout_ns is None:
            return self._push(None)
        scope = DeadlineScope(self._timeout_ns, None)
        call = self._push(scope)
        try:
            await scope.__aenter__()
        except BaseException as exc:
            self._settle(self._pop(exc), exc)
            raise
        return call

    async def __aexit__(self, et: Any, e: Any, tb: Any) -> None:
        call = self._pop(e)
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
        brownout = self._brownout is not None
        try:
            check_inherited()
            taken = self._acquire(None, brownout)
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
            self._release(taken, self._outcome_of(exc, taken), None)
            if brownout and isinstance(exc, Exception):
                return self._on_failed(exc)
            raise
        self._release(taken, SUCCESS, None)
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
            taken = self._acquire(None, brownout)
        except GuardError as refusal:
            return self._on_refused(refusal)
        try:
            scope = self._scope()
            if scope is None:
                result = await fn(*args, **kwargs)
            else:
                async with scope:
                    result = await fn(*args, **kwargs)
        except BaseException as exc:
            self._release(taken, self._outcome_of(exc, taken), None)
            if brownout and isinstance(exc, Exception):
                return self._on_failed(exc)
            raise
        self._release(taken, SUCCESS, None)
        if brownout:
            self._brownout.on_full()
        return result

    def _on_refused(self, refusal: GuardError) -> Any:
        # _acquire already asked the brownout when one is set (and it did not proceed).
        if self._brownout is None:
            raise refusal
        return self._serve_or_raise(refusal, asked=True)

    def _on_failed(self, exc: Exception) -> Any:
        return self._serve_or_raise(exc, asked=False)

    def _serve_or_raise(self, exc: BaseException, *, asked: bool) -> Any:
        if asked:
            decision = getattr(exc, "_guards_decision", None)
            if decision is None:  # refused before any guard: the deadline had passed
                decision = self._brownout_decides(exc)
        else:
            decision = self._brownout_decides(exc)
        if decision == "serve_fallback" and self._fallback is not _MISSING:
            return self._fallback_value()
        raise exc

    def __call__(self, fn: F) -> F:
        """Decorate ``fn`` (a function or an ``async def``)."""
        if not callable(fn):
            fail_type("fn", "a callable", fn)
        is_async = is_async_callable(fn)
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

    def _custom_classify(self) -> Optional[Callable[[BaseException], int]]:
        """``classify`` when ``failure=`` / ``ignore=`` change the default rules (which the
        native guarded calls apply by themselves), else ``None``."""
        if (
            self._failure is None
            and self._ignore is None
            and type(self).classify is Guarded.classify
        ):
            return None
        return self.classify

    def _single(self, fn: Callable[..., Any], adapter: _Adapter, is_async: bool) -> Any:
        """A decorator for one guard, no brownout and no timeout of its own: the hot path
        of most services. A breaker or bulkhead around a plain function is a native
        :class:`guards.GuardedFunction` (nothing between the caller and ``fn`` but native
        code; for an ``async def``, a native :class:`guards.GuardedCoroutine` is awaited
        instead of a Python coroutine); otherwise one Python frame and a look at the
        inherited deadline."""
        if isinstance(adapter, (_BreakerAdapter, _BulkheadAdapter)):
            return _n.GuardedFunction(
                adapter.guard,
                fn,
                key=adapter.key if isinstance(adapter, _KeyedBreakerAdapter) else None,
                classify=self._custom_classify(),
                deadline=_DEADLINE.get,
                deadline_gated=True,
                is_async=is_async,
            )
        acquire, succeed = adapter.fast_paths()
        report = adapter.report
        classify = self.classify
        get_deadline = _DEADLINE.get

        def outcome_of(exc: BaseException, token: Any) -> int:
            try:
                return classify(exc)
            except BaseException:
                report(token, IGNORE, None)  # give the slot back, then surface the bug
                raise

        if is_async:

            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                d = get_deadline()
                if d is not None and d.is_expired():
                    raise _expired_error(d, _TOO_LATE)
                token = acquire()
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as exc:
                    report(token, outcome_of(exc, token), None)
                    raise
                succeed(token)
                return result

            return awrapper

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            d = get_deadline()
            if d is not None and d.is_expired():
                raise _expired_error(d, _TOO_LATE)
            token = acquire()
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                report(token, outcome_of(exc, token), None)
                raise
            succeed(token)
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

    def __repr__(self) -> str:
        inner = ", ".join(type(a.guard).__name__ for a in self._adapters)
        return f"guards.guarded({inner})"


#: The guarded blocks open in this context (thread or asyncio task), innermost first.
_ENTRIES: contextvars.ContextVar[Optional[GuardedCall]] = contextvars.ContextVar(
    "guards_guarded_entries", default=None
)


def guarded(
    *guards: Any,
    failure: ExcSpec = None,
    ignore: ExcSpec = None,
    fallback: Any = _MISSING,
    brownout: Any = None,
    priority: Optional[int] = None,
    timeout: Any = None,
    key: Any = None,
) -> Guarded:
    """Guard a block or a call with circuit breakers, bulkheads, limiters and admission
    (see the module docs): ``with guarded(breaker, bulkhead): ...``,
    ``@guarded(breaker, fallback=[])``.

    ``failure``: exception types (or a predicate) that count as failures (default: every
    ``Exception``). ``ignore``: exceptions that count as nothing. ``fallback``: the value
    (or zero-argument callable) a decorated call returns when refused or failed, as
    ``brownout`` decides. ``brownout``: a :class:`guards.Brownout` (default with a
    fallback: an optional operation). ``priority``: the priority class (0..7) passed to
    limiters and admission. ``timeout``: the call's own deadline (seconds, timedelta or
    Nanos), never beyond the inherited one: published for the call, and in asyncio the
    call is cancelled when it passes (a :class:`guards.DeadlineExceeded`, which the
    guards hear as a timeout).

    ``key``: which breaker of a :class:`guards.KeyedBreakers` set (an operation's name).

    Whatever the settings, a call does not start (and takes no guard) once the deadline it
    inherits has passed: :class:`guards.DeadlineExceeded`.
    """
    return Guarded(
        guards,
        failure=failure,
        ignore=ignore,
        fallback=fallback,
        brownout=brownout,
        priority=priority,
        timeout=timeout,
        key=key,
    )
