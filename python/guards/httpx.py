"""httpx transports that retry, break and respect the deadline: ``guards.httpx``.

::

    import httpx, guards
    from guards.httpx import GuardedTransport, AsyncGuardedTransport

    client = httpx.Client(transport=GuardedTransport(attempt_timeout=0.5), timeout=5.0)
    aclient = httpx.AsyncClient(transport=AsyncGuardedTransport(attempt_timeout=0.5))

    with guards.deadline(2.0):            # or the admission middleware's deadline="grpc"
        r = client.get("https://stock.internal/items/42")

Every request sent through the transport gets, in this order (outermost first):

1. **Retries** (:class:`guards.Retry`): failed attempts are classified as
   :func:`guards.classify_exception` does (httpx's timeouts and connection errors are
   retried), and responses by their status (:func:`guards.http_outcome`: 5xx, 408 and
   429 are retried, ``Retry-After`` honoured and a too-long one gives up). A response
   that is retried is read and closed first; when the policy gives up on a response,
   that last response is returned (already read). Only idempotent methods (GET, HEAD,
   OPTIONS, PUT, DELETE, TRACE) are retried freely; POST and PATCH are retried only with
   an ``Idempotency-Key`` header (a keyed side effect), else never after a timeout.
2. **A retry budget** (one :class:`guards.RetryBudget` per transport by default, shared
   by all hosts; pass ``budget=`` to share one wider): retries stay a small share of
   requests.
3. **A circuit breaker per host** (a :class:`guards.KeyedBreakers` set keyed by
   ``scheme://host:port``): inside the retry loop, so each attempt is one call of the
   breaker; an open breaker refuses at once (:class:`guards.BreakerOpen`), which the
   retry loop raises as it is (retry in one layer only). 5xx responses and transport
   errors are failures, 503/429 and timeouts overload signals, anything else a success.
4. **Time**: each attempt's timeouts (connect, read, write, pool) are cut to the time
   left of the attempt's deadline -- ``min(attempt_timeout, time left on the caller's
   deadline)`` -- and the deadline is sent to the server (``grpc-timeout``, or
   milliseconds with ``deadline_header="millis"``; ``None`` to send nothing).

Errors are the guards' own: :class:`guards.RetriesExhausted`,
:class:`guards.DeadlineExceeded`, :class:`guards.BudgetExhausted` (each with the last
httpx error as ``__cause__``), :class:`guards.BreakerOpen`; a permanent error is raised
as httpx raised it. ``retry.stats()``, ``breakers.stats(host)`` and ``budget.stats()``
count what happened; events and log lines come from :mod:`guards.events`.

Needs ``httpx`` (``pip install 'guards[httpx]'``).
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional, Union

import httpx

from . import _guards as _n
from ._deadline import _DEADLINE, time_left
from ._guarded import guarded
from ._util import check_str_choice, fail_type
from .context import inject_deadline
from .retry import Retry, http_outcome

__all__ = ["GuardedTransport", "AsyncGuardedTransport", "IDEMPOTENT_METHODS"]

#: Methods whose repetition is harmless (RFC 9110, 9.2.2).
IDEMPOTENT_METHODS = frozenset(("GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"))
_IDEMPOTENCY_KEY = "idempotency-key"
_TIMEOUT_KEYS = ("connect", "read", "write", "pool")


def host_key(url: httpx.URL) -> str:
    """The breaker key of a request: ``scheme://host:port`` (the port made explicit)."""
    port = url.port
    if port is None:
        port = 443 if url.scheme == "https" else 80
    return f"{url.scheme}://{url.host}:{port}"


class _Guards:
    """What both transports share: the retry loops, the breakers, the settings."""

    def __init__(
        self,
        *,
        max_attempts: int,
        backoff: Any,
        budget: Any,
        breakers: Any,
        attempt_timeout: Any,
        timeout: Any,
        deadline_header: Optional[str],
        retry_kwargs: dict[str, Any],
    ) -> None:
        if breakers is None:
            breakers = _n.KeyedBreakers()
        elif breakers is not False and not isinstance(
            breakers, (_n.KeyedBreakers, _n._shared.KeyedBreakers)
        ):
            fail_type(
                "breakers",
                "a guards.KeyedBreakers, a guards.shared.KeyedBreakers, None or False",
                breakers,
            )
        self.breakers = None if breakers is False else breakers
        if budget is None:
            budget = _n.RetryBudget()
        elif budget is False:
            budget = None
        if deadline_header is not None:
            check_str_choice("deadline_header", deadline_header, ("grpc", "millis"))
        self.deadline_header = deadline_header
        common = dict(
            max_attempts=max_attempts,
            backoff=backoff,
            budget=budget,
            attempt_timeout=attempt_timeout,
            timeout=timeout,
            retry_on_result=self._result_outcome,
            **retry_kwargs,
        )
        #: The retry of idempotent requests (and its stats).
        self.retry = Retry(idempotency="idempotent", **common)
        self._keyed = Retry(idempotency="keyed_side_effect", policy=self.retry.policy, **{
            k: v for k, v in common.items() if k not in _POLICY_KEYS
        })
        self._unkeyed = Retry(idempotency="unkeyed_side_effect", policy=self.retry.policy, **{
            k: v for k, v in common.items() if k not in _POLICY_KEYS
        })
        self.budget = budget
        self._guarded: dict[str, Any] = {}

    @staticmethod
    def _result_outcome(response: httpx.Response) -> Any:
        outcome, after = http_outcome(response.status_code, response.headers.get("Retry-After"))
        if outcome in ("success", "permanent"):
            return None  # a success, or the caller's mistake: not retried
        return outcome, after

    def retry_for(self, request: httpx.Request) -> Retry:
        if request.method.upper() in IDEMPOTENT_METHODS:
            return self.retry
        if _IDEMPOTENCY_KEY in request.headers:
            return self._keyed
        return self._unkeyed

    def breaker_for(self, request: httpx.Request) -> Any:
        if self.breakers is None:
            return None
        key = host_key(request.url)
        g = self._guarded.get(key)
        if g is None:
            g = self._guarded[key] = guarded(self.breakers, key=key)
        return g

    def prepare(self, request: httpx.Request) -> None:
        """Cut the attempt's timeouts to the time left and send the deadline."""
        left = time_left()
        if left is not None:
            if left <= 0:
                from ._deadline import _expired_error  # noqa: PLC0415

                d = _DEADLINE.get()
                assert d is not None  # time_left() is a number only under a deadline
                raise _expired_error(d, "the deadline had passed before the attempt started")
            timeouts = dict(request.extensions.get("timeout") or {})
            for k in _TIMEOUT_KEYS:
                v = timeouts.get(k)
                timeouts[k] = left if v is None else min(v, left)
            request.extensions = {**request.extensions, "timeout": timeouts}
        if self.deadline_header is not None:
            for name in ("grpc-timeout", "x-envoy-expected-rq-timeout-ms"):
                if name in request.headers:
                    del request.headers[name]
            inject_deadline(request.headers, format=self.deadline_header)  # type: ignore[arg-type]

    @staticmethod
    def judge(call: Any, response: httpx.Response) -> None:
        """Tell the breaker how the answer went: its status's outcome (core's ``http``)."""
        outcome, _ = http_outcome(response.status_code, response.headers.get("Retry-After"))
        call.set_outcome(outcome)

    @staticmethod
    def retried(response: httpx.Response) -> bool:
        return _Guards._result_outcome(response) is not None


_POLICY_KEYS = frozenset(
    (
        "max_attempts",
        "backoff",
        "retry_timeouts",
        "retry_connection_errors",
        "retry_other_transient",
        "retry_throttled",
        "honor_retry_after",
        "max_retry_after",
        "min_attempt_time",
        "unkeyed_side_effects",
        "seed",
    )
)


class GuardedTransport(httpx.BaseTransport):
    """A sync httpx transport with retries, a retry budget, a breaker per host and the
    deadline (see the module docs).

    ``transport``: the transport that sends (default ``httpx.HTTPTransport()``).
    ``max_attempts`` (3), ``backoff``, ``attempt_timeout``, ``timeout`` (the whole
    request, retries included), and any other :func:`guards.retry` setting in
    ``retry``: the retry policy. ``budget``: a :class:`guards.RetryBudget` (default: a
    new one; ``False`` for none). ``breakers``: a :class:`guards.KeyedBreakers` (default:
    a new one; ``False`` for none), or a region's ``region.keyed_breakers(...)`` to share
    each host's breaker with every process of the host (:mod:`guards.shared`). ``deadline_header``: ``"grpc"`` (default),
    ``"millis"`` or ``None``.
    """

    def __init__(
        self,
        transport: Optional[httpx.BaseTransport] = None,
        *,
        max_attempts: int = 3,
        backoff: Any = None,
        budget: Any = None,
        breakers: Any = None,
        attempt_timeout: Any = None,
        timeout: Any = None,
        deadline_header: Optional[str] = "grpc",
        retry: Optional[dict[str, Any]] = None,
    ) -> None:
        if transport is None:
            transport = httpx.HTTPTransport()
        elif not isinstance(transport, httpx.BaseTransport):
            fail_type("transport", "an httpx.BaseTransport or None", transport)
        self.transport = transport
        """The transport that sends each attempt."""
        self._g = _Guards(
            max_attempts=max_attempts,
            backoff=backoff,
            budget=budget,
            breakers=breakers,
            attempt_timeout=attempt_timeout,
            timeout=timeout,
            deadline_header=deadline_header,
            retry_kwargs=_retry_kwargs(retry),
        )

    @property
    def retry(self) -> Retry:
        """The retry of idempotent requests (``.stats()``)."""
        return self._g.retry

    @property
    def breakers(self) -> Any:
        """The breakers, one per ``scheme://host:port`` (``None`` when turned off)."""
        return self._g.breakers

    def stats(self) -> dict[str, int]:
        """The retry counters of every request (idempotent or not) together."""
        out: dict[str, int] = {}
        for r in (self._g.retry, self._g._keyed, self._g._unkeyed):
            for k, v in r.stats().items():
                out[k] = out.get(k, 0) + v
        return out

    metrics_kind = "httpx_transport"
    """How ``guards.prometheus`` and ``guards.otel`` name this object's ``stats()``."""

    @property
    def budget(self) -> Any:
        """The retry budget (``None`` when turned off)."""
        return self._g.budget

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        g = self._g
        if not isinstance(request.stream, httpx.ByteStream):
            request.read()  # replayable for a retry
        breaker = g.breaker_for(request)

        def attempt() -> httpx.Response:
            g.prepare(request)
            if breaker is None:
                response = self.transport.handle_request(request)
            else:
                with breaker as call:
                    response = self.transport.handle_request(request)
                    g.judge(call, response)
            if g.retried(response):
                try:
                    response.read()
                finally:
                    response.close()
            return response

        return g.retry_for(request).call(attempt)  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close the wrapped transport."""
        self.transport.close()


# An attempt cancelled this close to (or after) its deadline was cut by its budget.
_EXPIRED_SLACK = 0.001


class _AttemptTimedOut(TimeoutError):
    """Carries an attempt cut at its deadline through the breaker as a timeout."""


class AsyncGuardedTransport(httpx.AsyncBaseTransport):
    """The asyncio twin of :class:`GuardedTransport` (same arguments; ``transport``
    defaults to ``httpx.AsyncHTTPTransport()``). An attempt that outlives its budget is
    also cancelled."""

    def __init__(
        self,
        transport: Optional[httpx.AsyncBaseTransport] = None,
        *,
        max_attempts: int = 3,
        backoff: Any = None,
        budget: Any = None,
        breakers: Any = None,
        attempt_timeout: Any = None,
        timeout: Any = None,
        deadline_header: Optional[str] = "grpc",
        retry: Optional[dict[str, Any]] = None,
    ) -> None:
        if transport is None:
            transport = httpx.AsyncHTTPTransport()
        elif not isinstance(transport, httpx.AsyncBaseTransport):
            fail_type("transport", "an httpx.AsyncBaseTransport or None", transport)
        self.transport = transport
        """The transport that sends each attempt."""
        self._g = _Guards(
            max_attempts=max_attempts,
            backoff=backoff,
            budget=budget,
            breakers=breakers,
            attempt_timeout=attempt_timeout,
            timeout=timeout,
            deadline_header=deadline_header,
            retry_kwargs=_retry_kwargs(retry),
        )

    retry = GuardedTransport.retry
    breakers = GuardedTransport.breakers
    budget = GuardedTransport.budget
    stats = GuardedTransport.stats
    metrics_kind = "httpx_transport"
    """How ``guards.prometheus`` and ``guards.otel`` name this object's ``stats()``."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the guards (retries, budget, the host's breaker, the
        deadline) and the wrapped transport; httpx calls this."""
        g = self._g
        if not isinstance(request.stream, httpx.ByteStream):
            await request.aread()
        breaker = g.breaker_for(request)

        async def attempt() -> httpx.Response:
            g.prepare(request)
            if breaker is None:
                response = await self.transport.handle_async_request(request)
            else:
                try:
                    async with breaker as call:
                        try:
                            response = await self.transport.handle_async_request(request)
                        except asyncio.CancelledError as cancel:
                            # The retry loop cancels an attempt that outlives its budget:
                            # to the breaker that is a timeout (a failure of the host), not
                            # the caller going away (which it ignores).
                            left = time_left()
                            if left is not None and left <= _EXPIRED_SLACK:
                                raise _AttemptTimedOut() from cancel
                            raise
                        g.judge(call, response)
                except _AttemptTimedOut as t:
                    assert isinstance(t.__cause__, asyncio.CancelledError)
                    raise t.__cause__ from None
            if g.retried(response):
                try:
                    await response.aread()
                finally:
                    await response.aclose()
            return response

        return await g.retry_for(request).acall(attempt)  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self.transport.aclose()


_RETRY_SETTINGS = frozenset(
    (
        "retry_on",
        "give_up_on",
        "overloaded_on",
        "classify",
        "margin",
        "retry_timeouts",
        "retry_connection_errors",
        "retry_other_transient",
        "retry_throttled",
        "honor_retry_after",
        "max_retry_after",
        "min_attempt_time",
        "unkeyed_side_effects",
        "seed",
        "reraise",
        "on_retry",
        "sleep",
    )
)


def _retry_kwargs(retry: Union[dict[str, Any], None]) -> dict[str, Any]:
    if retry is None:
        return {}
    if not isinstance(retry, dict):
        fail_type("retry", "a dict of guards.retry settings or None", retry)
    for k in retry:
        if k not in _RETRY_SETTINGS:
            raise TypeError(
                f"`retry` has an unknown or reserved setting {k!r} (the transport sets "
                "max_attempts, backoff, budget, timeouts, idempotency and retry_on_result "
                "itself)"
            )
    return dict(retry)
