"""Helpers for testing code that uses guards.

* :class:`FakeClock` (the native one, re-exported): ``with FakeClock() as clock:`` makes
  every guard's default ``now`` read ``clock``; ``clock.advance(0.5)`` moves time. While a
  fake clock is installed, :func:`guards.retry` sleeps with ``clock.sleep`` /
  ``clock.asleep`` (advancing it) instead of really sleeping, so a test of five retries
  with exponential backoff runs instantly and deterministically.
* :func:`fake_clock`: a pytest fixture (when pytest is installed) yielding an installed
  ``FakeClock``; import it into your ``conftest.py``.
* :class:`Flaky` / :class:`AsyncFlaky`: a callable that raises given exceptions a number of
  times, then returns a value, counting its calls.
* :func:`trip`, :func:`exhaust`: drive a guard into a refusing state (open a breaker, fill
  a bulkhead or limiter) through its ordinary API.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any, Optional

from ._guards import FakeClock, current_clock, now_ns
from ._util import check_int, fail_type, instant_ns

__all__ = [
    "FakeClock",
    "current_clock",
    "now_ns",
    "installed_clock",
    "Flaky",
    "AsyncFlaky",
    "trip",
    "exhaust",
]


@contextlib.contextmanager
def installed_clock(now: Optional[int] = 1_000_000_000) -> Iterator[FakeClock]:
    """A :class:`FakeClock` reading ``now`` ns (default 1 s), installed for the block."""
    start = 0 if now is None else instant_ns("now", now)
    clock = FakeClock(now=start)
    with clock:
        yield clock


try:  # the fixture exists only where pytest does
    import pytest as _pytest

    @_pytest.fixture
    def fake_clock() -> Iterator[FakeClock]:
        """A FakeClock at t = 1 s, installed for the test (import into conftest.py)."""
        with installed_clock() as clock:
            yield clock

    __all__.append("fake_clock")
except ImportError:  # pragma: no cover - pytest missing
    pass


def _exceptions(field: str, errors: Any) -> list[BaseException]:
    if isinstance(errors, BaseException):
        return [errors]
    if isinstance(errors, type) and issubclass(errors, BaseException):
        return [errors("flaky failure")]
    if isinstance(errors, Iterable) and not isinstance(errors, (str, bytes)):
        out: list[BaseException] = []
        for e in errors:
            if isinstance(e, BaseException):
                out.append(e)
            elif isinstance(e, type) and issubclass(e, BaseException):
                out.append(e("flaky failure"))
            else:
                fail_type(field, "exceptions or exception types", e)
        return out
    fail_type(field, "an exception, an exception type or a list of them", errors)


class Flaky:
    """A callable that fails, then succeeds.

    ``Flaky(ConnectionError, times=2, result="ok")`` raises ``ConnectionError`` on its first
    two calls and returns ``"ok"`` from then on. ``errors`` may also be a list of exception
    instances or types raised in turn (``times`` then defaults to its length). ``calls``
    counts every call. Thread-safe enough for tests (one counter bump per call under the
    GIL is what it counts).
    """

    def __init__(
        self, errors: Any = ConnectionError, times: Optional[int] = None, result: Any = None
    ) -> None:
        self._errors = _exceptions("errors", errors)
        if not self._errors:
            raise ValueError("`errors` must name at least one exception")
        if times is None:
            times = (
                len(self._errors)
                if isinstance(errors, Iterable) and not isinstance(errors, type)
                else 1
            )
        self.times = check_int("times", times, 0, 2**31)
        """How many calls fail before the calls succeed."""
        self.result = result
        """What a call returns once the failures are spent."""
        self.calls = 0
        """The calls made so far."""

    def _next(self) -> Optional[BaseException]:
        n = self.calls
        self.calls += 1
        if n < self.times:
            return self._errors[min(n, len(self._errors) - 1)]
        return None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        err = self._next()
        if err is not None:
            raise err
        return self.result


class AsyncFlaky(Flaky):
    """:class:`Flaky` as a coroutine function: ``await flaky()``."""

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        err = self._next()
        if err is not None:
            raise err
        return self.result


def trip(breaker: Any, *, now: Optional[int] = None) -> int:
    """Open ``breaker`` by reporting failures until it refuses; returns the failures made.

    Uses only the breaker's public API (``acquire`` and the permit's ``on_failure``), so
    its window, thresholds and counters behave exactly as in production.
    """
    from ._guards import CircuitBreaker, GuardError  # noqa: PLC0415

    if not isinstance(breaker, CircuitBreaker):
        fail_type("breaker", "a guards.CircuitBreaker", breaker)
    at = None if now is None else instant_ns("now", now)
    made = 0
    for _ in range(1_000_000):
        try:
            permit = breaker.acquire(now=at)
        except GuardError:
            return made
        permit.on_failure(now=at)
        made += 1
    raise RuntimeError("the breaker never opened after 1,000,000 failures")


def exhaust(guard: Any, *, now: Optional[int] = None, **kwargs: Any) -> list[Any]:
    """Take every free slot of a bulkhead, limiter or admission; returns the permits
    (release them, or give them back to the guard, to restore it). ``kwargs`` are passed to
    ``acquire`` (e.g. ``priority=3``)."""
    from ._guards import GuardError  # noqa: PLC0415

    acquire = getattr(guard, "acquire", None)
    if not callable(acquire):
        fail_type("guard", "a Bulkhead, Limiter or Admission", guard)
    if now is not None:
        kwargs["now"] = instant_ns("now", now)
    permits: list[Any] = []
    for _ in range(1_000_000):
        try:
            permit = acquire(**kwargs)
        except GuardError:
            return permits
        if permit is None:
            return permits
        permits.append(permit)
    raise RuntimeError("the guard never refused after 1,000,000 acquisitions")
