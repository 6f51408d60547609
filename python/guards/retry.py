"""``@guards.retry``: retries for sync and async functions, decided by the native
:class:`guards.RetryPolicy`.

::

    budget = guards.RetryBudget()                       # shared by the whole client

    @guards.retry(max_attempts=3, budget=budget, attempt_timeout=0.25, timeout=2.0)
    async def get_stock(item):
        return await client.get(f"/stock/{item}")

Each failed attempt is classified (see :func:`classify_exception`) into one of the
policy's outcomes -- ``timeout``, ``connection_error``, ``other_transient``,
``throttled`` (with the server's Retry-After), ``overloaded`` or ``permanent`` -- and the
native policy decides, in this order: is the class retried at all, are attempts left, is
the call safe to repeat (``idempotency``), how long to wait (the policy's
:class:`guards.Backoff`, never shorter than a Retry-After and giving up on one longer
than ``max_retry_after``), does the wait plus a useful attempt fit in the deadline, and
does the retry budget pay for it. Nothing of that is re-computed in Python.

Time
----
* ``timeout``: the whole call's deadline, combined with the deadline the caller's context
  already carries (:func:`guards.deadline`): the earlier one wins.
* ``attempt_timeout``: each attempt's budget, ``min(attempt_timeout, time left) -
  margin``. The attempt runs with that deadline published in the context, so nested
  guarded calls and :func:`guards.time_left` see it (pass it to your HTTP client).
* **async**: an attempt that outlives its budget is cancelled (it runs in the caller's
  task, so the cancellation reaches whatever it awaits) and counts as a timeout; the
  waits between attempts are ``asyncio.sleep``. Cancelling the caller cancels the
  attempt or the wait and is never retried.
* **sync**: nothing can interrupt a blocking call, so the attempt's deadline is only
  *published*: code that reads it (an HTTP client given ``timeout=guards.time_left()``)
  stops in time; code that ignores it runs on, and its late result is still returned.
  Waits are ``time.sleep``.
* With a :class:`guards.FakeClock` installed, waits advance that clock instead of sleeping
  (``clock.sleep`` / ``clock.asleep``), so tests run instantly.

Giving up
---------
The error raised says why: :class:`guards.RetriesExhausted` (attempts used up, or a
Retry-After longer than ``max_retry_after``), :class:`guards.DeadlineExceeded` (no time
for another attempt), :class:`guards.BudgetExhausted` (the retry budget refused). Each
carries ``reason`` (the policy's give-up reason), ``attempts``, and the last attempt's
exception as ``__cause__``. With ``reraise=True`` the last exception itself is raised
instead. A permanent error, an "overloaded" answer, a class the policy does not retry, or
a side effect that is not safe to repeat is raised as it is, at once.

Statistics: ``fn.retry.stats()`` counts calls, attempts, retries, successes, failures and
each give-up reason, for that decorated function.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import threading
import time
from collections.abc import Mapping
from typing import Any, Callable, Optional, TypeVar, Union, overload

from . import _guards as _n
from . import events as _events
from ._deadline import _DEADLINE, CancelAfter, publish
from ._guards import (
    Backoff,
    BudgetExhausted,
    Deadline,
    DeadlineExceeded,
    GuardError,
    Nanos,
    RetriesExhausted,
    RetryPolicy,
    current_clock,
    now_ns,
)
from ._util import (
    ExcSpec,
    check_bool,
    check_callable,
    config_error,
    duration_ns,
    exception_matcher,
    fail_type,
    is_async_callable,
    positive_duration_ns,
    reject_generator_function,
)

__all__ = ["retry", "Retry", "RetryState"]

F = TypeVar("F", bound=Callable[..., Any])

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
#: Outcomes a retry could be for (``retry_on=`` narrows these).
_RETRIED = frozenset(("timeout", "connection_error", "other_transient", "throttled"))
_IDEMPOTENCY = ("idempotent", "keyed_side_effect", "unkeyed_side_effect")

# Class names (anywhere in an exception's MRO) of HTTP client libraries' errors, so they
# are classified without importing those libraries.
_TIMEOUT_NAMES = frozenset(
    ("TimeoutException", "Timeout", "ReadTimeout", "ConnectTimeout", "ServerTimeoutError")
)
_CONNECTION_NAMES = frozenset(
    (
        "ConnectError",
        "NetworkError",
        "RemoteProtocolError",
        "ClientConnectionError",
        "ConnectionError",
    )
)


#: ``http_outcome(status, retry_after=None)`` and ``classify_exception(exc)`` are the
#: native functions (``guards.http_outcome``, ``guards.classify_exception``): the one
#: classification every path uses, on core's ``http`` module.
http_outcome = _n.http_outcome
classify_exception = _n.classify_exception


class RetryState:
    """What ``on_retry`` is told before each wait: the attempt that failed (``attempt``,
    1-based), its ``exception`` (or ``None`` for a rejected result) and ``outcome``, the
    wait (``delay`` seconds, ``delay_ns``), and the decorated function ``fn``."""

    __slots__ = ("fn", "attempt", "exception", "result", "outcome", "delay", "delay_ns")

    def __init__(
        self,
        fn: Any,
        attempt: int,
        exception: Optional[BaseException],
        result: Any,
        outcome: str,
        delay: float,
        delay_ns: int,
    ) -> None:
        self.fn = fn
        """The decorated function."""
        self.attempt = attempt
        """The attempt that failed, from 1."""
        self.exception = exception
        """The exception it raised, or ``None`` when its result was rejected."""
        self.result = result
        """The rejected result (``retry_on_result``), or ``None`` after an exception."""
        self.outcome = outcome
        """How the attempt ended, as an outcome of the call contract (``"timeout"``, ...)."""
        self.delay = delay
        """The wait before the next attempt, in seconds."""
        self.delay_ns = delay_ns
        """The wait in exact nanoseconds."""

    def __repr__(self) -> str:
        return (
            f"RetryState(attempt={self.attempt}, outcome={self.outcome!r}, "
            f"delay={self.delay!r}, exception={self.exception!r})"
        )


_STAT_NAMES = (
    "calls",
    "attempts",
    "retries",
    "successes",
    "failures",
    "attempt_timeouts",
    "cancelled",
    "not_started",
    # give-up reasons of the native policy
    "permanent",
    "overloaded",
    "not_retryable",
    "attempts_exhausted",
    "not_idempotent",
    "retry_after_too_long",
    "deadline_exceeded",
    "budget_exhausted",
    "rejected",
    "ignored",
)


_IDX = {name: i for i, name in enumerate(_STAT_NAMES)}
_CALLS, _ATTEMPTS, _SUCCESSES = _IDX["calls"], _IDX["attempts"], _IDX["successes"]


#: Give-up reasons that mean "raised as it is, at once": not reported as give-ups.
_RAISED_AS_IS = frozenset(
    ("permanent", "overloaded", "not_retryable", "not_idempotent", "rejected", "ignored")
)


def _emit_give_up(r: Retry, reason: str, last: Optional[BaseException], attempts: int) -> None:
    if reason not in _RAISED_AS_IS:
        _events.emit_new(
            "give_up", r, operation=r._operation, reason=reason, attempt=attempts, exception=last
        )


def _emit_retry(
    r: Retry,
    fn: Any,
    attempts: int,
    last: Optional[BaseException],
    outcome: str,
    delay: float,
) -> None:
    _events.emit_new(
        "retry",
        r,
        operation=r._operation or getattr(fn, "__qualname__", None),
        attempt=attempts,
        exception=last,
        outcome=outcome,
        delay=delay,
    )


class Retry:
    """A retry configuration: a decorator (``Retry(...)(fn)``) and a runner
    (:meth:`call`, :meth:`acall`). :func:`retry` builds one per decorated function.

    See :func:`retry` for the arguments. Thread-safe: one instance may run many calls at
    once (its counters are updated under a lock, once per call).
    """

    def __init__(
        self,
        *,
        max_attempts: Optional[int] = None,
        backoff: Any = None,
        budget: Any = None,
        policy: Optional[RetryPolicy] = None,
        attempt_timeout: Any = None,
        timeout: Any = None,
        margin: Any = None,
        retry_on: ExcSpec = None,
        give_up_on: ExcSpec = None,
        overloaded_on: ExcSpec = None,
        classify: Optional[Callable[[BaseException], Any]] = None,
        retry_on_result: Optional[Callable[[Any], Any]] = None,
        idempotency: Union[str, bool] = "idempotent",
        retry_timeouts: Optional[bool] = None,
        retry_connection_errors: Optional[bool] = None,
        retry_other_transient: Optional[bool] = None,
        retry_throttled: Optional[bool] = None,
        honor_retry_after: Optional[bool] = None,
        max_retry_after: Any = None,
        min_attempt_time: Any = None,
        unkeyed_side_effects: Optional[str] = None,
        seed: Optional[int] = None,
        reraise: bool = False,
        on_retry: Optional[Callable[[RetryState], Any]] = None,
        sleep: Optional[Callable[[float], Any]] = None,
    ) -> None:
        policy_kwargs = {
            "max_attempts": max_attempts,
            "backoff": backoff,
            "retry_timeouts": retry_timeouts,
            "retry_connection_errors": retry_connection_errors,
            "retry_other_transient": retry_other_transient,
            "retry_throttled": retry_throttled,
            "honor_retry_after": honor_retry_after,
            "max_retry_after": max_retry_after,
            "min_attempt_time": min_attempt_time,
            "unkeyed_side_effects": unkeyed_side_effects,
            "seed": seed,
        }
        if policy is not None:
            if not isinstance(policy, RetryPolicy):
                fail_type("policy", "a guards.RetryPolicy or None", policy)
            clash = [k for k, v in policy_kwargs.items() if v is not None]
            if clash:
                raise TypeError(f"give `policy` or its settings, not both (`{clash[0]}`)")
            self.policy = policy
        else:
            self.policy = RetryPolicy(**{k: v for k, v in policy_kwargs.items() if v is not None})
        if budget is not None and not isinstance(budget, _n.RetryBudget):
            fail_type("budget", "a guards.RetryBudget or None", budget)
        self.budget = budget
        """The retry budget the retries are paid from (``None``: retries are not budgeted)."""
        self._attempt_timeout = (
            None
            if attempt_timeout is None
            else Nanos(positive_duration_ns("attempt_timeout", attempt_timeout))
        )
        self._timeout = None if timeout is None else Nanos(duration_ns("timeout", timeout))
        self._margin = Nanos(0 if margin is None else duration_ns("margin", margin))
        if self._attempt_timeout is not None and self._margin.ns >= self._attempt_timeout.ns:
            raise config_error("margin", "inconsistent", "margin < attempt_timeout")
        self._retry_on = exception_matcher("retry_on", retry_on)
        self._give_up_on = exception_matcher("give_up_on", give_up_on)
        self._overloaded_on = exception_matcher("overloaded_on", overloaded_on)
        self._classify = check_callable("classify", classify)
        self._retry_on_result = check_callable("retry_on_result", retry_on_result)
        if isinstance(idempotency, bool):
            idempotency = "idempotent" if idempotency else "unkeyed_side_effect"
        elif not isinstance(idempotency, str):
            fail_type("idempotency", "a str or a bool", idempotency)
        if idempotency not in _IDEMPOTENCY:
            raise config_error(
                "idempotency", "out_of_range", " | ".join(repr(i) for i in _IDEMPOTENCY)
            )
        self.idempotency: Any = idempotency
        """Whether a repeated call is harmless: ``"idempotent"``, ``"keyed_side_effect"`` (the
        call carries an idempotency key) or ``"unkeyed_side_effect"`` (never retried)."""
        self._reraise = check_bool("reraise", reraise)
        self._on_retry = check_callable("on_retry", on_retry)
        self._sleep = check_callable("sleep", sleep)
        self._lock = threading.Lock()
        self._n = [0] * len(_STAT_NAMES)
        self._operation: Optional[str] = None  # the decorated function, for events
        # Nothing to do before or after a first attempt that succeeds: no budget to tell,
        # no deadline of our own, no result to inspect.
        self._simple = (
            budget is None
            and self._attempt_timeout is None
            and self._timeout is None
            and self._retry_on_result is None
        )

    metrics_kind = "retry"
    """How ``guards.prometheus`` and ``guards.otel`` name this object's ``stats()``."""

    # ------------------------------------------------------------------ classification
    def _outcome(self, exc: BaseException) -> tuple[str, Optional[float]]:
        if self._give_up_on is not None and self._give_up_on(exc):
            return "permanent", None
        if self._overloaded_on is not None and self._overloaded_on(exc):
            return "overloaded", None
        if self._classify is not None:
            got = self._classify(exc)
            if got is not None:
                return _check_outcome(got)
        outcome, after = classify_exception(exc)
        if self._retry_on is not None and outcome in _RETRIED and not self._retry_on(exc):
            return "permanent", None
        return outcome, after

    def _result_outcome(self, result: Any) -> tuple[str, Optional[float]]:
        assert self._retry_on_result is not None
        got = self._retry_on_result(result)
        if got is None or got is False:
            return "success", None
        if got is True:
            return "other_transient", None
        return _check_outcome(got)

    # ------------------------------------------------------------------ helpers
    def _overall(self, now: int) -> Optional[Deadline]:
        inherited = _DEADLINE.get()
        if self._timeout is None:
            return inherited
        own = Deadline.after(self._timeout, now)
        return own if inherited is None else own.min(inherited)

    def _count(self, **deltas: int) -> None:
        with self._lock:
            n = self._n
            for k, v in deltas.items():
                n[_IDX[k]] += v

    def _count_result_give_up(self, reason: str, attempts: int) -> None:
        self._count(
            **{"calls": 1, "attempts": attempts, "retries": attempts - 1, "failures": 1, reason: 1}
        )

    def _give_up(
        self,
        reason: str,
        last: Optional[BaseException],
        attempts: int,
        *,
        not_started: bool = False,
        retry_after: Optional[float] = None,
    ) -> BaseException:
        """The exception to raise when giving up for ``reason`` (counted here)."""
        deltas = {
            "calls": 1,
            "attempts": attempts,
            "retries": max(attempts - 1, 0),
            "failures": 1,
            reason: 1,
        }
        if not_started:
            deltas["not_started"] = 1
        self._count(**deltas)
        _emit_give_up(self, reason, last, attempts)
        if reason in _RAISED_AS_IS or reason == "succeeded":
            assert last is not None
            return last
        if self._reraise and last is not None:
            return last
        if reason == "deadline_exceeded":
            err: GuardError = DeadlineExceeded(
                f"gave up after {attempts} attempt(s): no time left for another"
                if attempts
                else "the deadline had passed before the first attempt"
            )
        elif reason == "budget_exhausted":
            err = BudgetExhausted(
                f"gave up after {attempts} attempt(s): the retry budget refused a retry"
            )
        else:
            what = (
                "every attempt failed"
                if reason == "attempts_exhausted"
                else "the server asked to wait longer than max_retry_after"
            )
            err = RetriesExhausted(f"gave up after {attempts} attempt(s): {what}")
        err.reason = reason
        err.attempts = attempts  # type: ignore[attr-defined]
        if retry_after is not None:
            err.retry_after = retry_after
            err.retry_after_ns = min(round(retry_after * 1e9), 2**64 - 1)
        err.__cause__ = last
        err.__suppress_context__ = True
        return err

    def _run_of(self, now: int, first: bool) -> Any:
        """The native retry loop of one call (core's ``RetryDriver``): the overall deadline,
        the per-attempt budget, the policy and the budget (none when the first attempt was
        already made by the fast path, which only runs without one)."""
        return _n.RetryRun(
            self.policy,
            budget=None if first else self.budget,
            deadline=self._overall(now),
            idempotency=self.idempotency,
            attempt_timeout=self._attempt_timeout,
            margin=self._margin,
        )

    def _waiting(
        self,
        fn: Any,
        attempts: int,
        last: Optional[BaseException],
        result: Any,
        outcome: str,
        delay_ns: int,
    ) -> float:
        """The loop waits ``delay_ns`` before the next attempt: tell ``on_retry`` and the
        listeners; the wait in seconds."""
        delay = delay_ns / 1e9
        if self._on_retry is not None:
            self._on_retry(RetryState(fn, attempts, last, result, outcome, delay, delay_ns))
        _emit_retry(self, fn, attempts, last, outcome, delay)
        return delay

    def _ended(
        self,
        step: Any,
        attempts: int,
        last: Optional[BaseException],
        result: Any,
        retry_after: Optional[float],
        not_started: bool,
    ) -> Any:
        """The loop ended with ``step`` (succeeded or give up): the result to return, or
        raise."""
        if step[0] == "succeeded":
            self._count(calls=1, attempts=attempts, successes=1, retries=attempts - 1)
            return result
        reason = step[1]
        if last is None and attempts > 0:  # a rejected result: hand back the last one
            self._count_result_give_up(reason, attempts)
            _emit_give_up(self, reason, None, attempts)
            return result
        raise self._give_up(
            reason, last, attempts, not_started=not_started, retry_after=retry_after
        )

    # ------------------------------------------------------------------ sync
    def call(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` with retries."""
        return self._run_interruptible(fn, args, kwargs, None)

    def _run(
        self, fn: Callable[..., Any], args: Any, kwargs: Any, first: Optional[Exception]
    ) -> Any:
        """The retry loop: the native run decides, this only calls and sleeps. ``first`` is
        the exception of a first attempt already made by the fast path."""
        run = self._run_of(now_ns(), first is not None)
        step = run.start()
        last: Optional[BaseException] = None
        result: Any = None
        outcome = "success"
        retry_after: Optional[float] = None
        if first is not None:
            last = first
            outcome, retry_after = self._outcome(first)
            step = run.report(outcome, retry_after)
        while True:
            kind = step[0]
            if kind == "attempt":
                expires_at = step[3]
                token = None if expires_at is None else publish(Deadline.at(expires_at))
                try:
                    result = fn(*args, **kwargs)
                except Exception as exc:  # noqa: BLE001 - classified below
                    last, result = exc, None
                    outcome, retry_after = self._outcome(exc)
                else:
                    if self._retry_on_result is None:
                        outcome, retry_after = "success", None
                    else:
                        outcome, retry_after = self._result_outcome(result)
                        last = None
                finally:
                    if token is not None:
                        _DEADLINE.reset(token)
                step = run.report(outcome, retry_after)
            elif kind == "wait":
                retry_at = step[2]
                self._do_sleep(self._waiting(fn, run.attempts, last, result, outcome, step[1]))
                # The sleep returned: the wait is over (a custom `sleep=` decides that).
                step = run.resume(max(now_ns(), retry_at))
                if step[0] == "give_up":
                    return self._ended(step, run.attempts, last, result, retry_after, True)
            else:
                not_started = run.attempts == 0
                return self._ended(step, run.attempts, last, result, retry_after, not_started)

    def _do_sleep(self, seconds: float) -> None:
        if self._sleep is not None:
            self._sleep(seconds)
            return
        clock = current_clock()
        if clock is not None:
            clock.sleep(seconds)
        elif seconds > 0:
            time.sleep(seconds)

    # ------------------------------------------------------------------ async
    async def acall(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run ``await fn(*args, **kwargs)`` with retries (each attempt cancelled when it
        outlives its budget)."""
        return await self._arun(fn, args, kwargs, None)

    async def _arun(
        self, fn: Callable[..., Any], args: Any, kwargs: Any, first: Optional[Exception]
    ) -> Any:
        run = self._run_of(now_ns(), first is not None)
        step = run.start()
        last: Optional[BaseException] = None
        result: Any = None
        outcome = "success"
        retry_after: Optional[float] = None
        if first is not None:
            last = first
            outcome, retry_after = self._outcome(first)
            step = run.report(outcome, retry_after)
        try:
            while True:
                kind = step[0]
                if kind == "attempt":
                    budget_ns, expires_at = step[2], step[3]
                    token = None if expires_at is None else publish(Deadline.at(expires_at))
                    canceller = None
                    try:
                        if budget_ns is not None:
                            canceller = CancelAfter(budget_ns / 1e9)
                            canceller.start()
                        result = await fn(*args, **kwargs)
                    except BaseException as exc:
                        timed_out = canceller is not None and canceller.stop(type(exc))
                        result = None
                        if timed_out:
                            last = DeadlineExceeded(
                                "the attempt outlived its budget and was cancelled"
                            )
                            last.reason = "attempt_timeout"
                            last.__cause__ = exc
                            self._count(attempt_timeouts=1)
                            outcome, retry_after = "timeout", None
                        elif isinstance(exc, Exception):
                            last = exc
                            outcome, retry_after = self._outcome(exc)
                        else:
                            raise
                    else:
                        if canceller is not None:
                            canceller.stop(None)
                        if self._retry_on_result is None:
                            outcome, retry_after = "success", None
                        else:
                            outcome, retry_after = self._result_outcome(result)
                            last = None
                    finally:
                        if token is not None:
                            _DEADLINE.reset(token)
                    step = run.report(outcome, retry_after)
                elif kind == "wait":
                    retry_at = step[2]
                    delay = self._waiting(fn, run.attempts, last, result, outcome, step[1])
                    await self._do_asleep(delay)
                    # The sleep returned: the wait is over (a custom `sleep=` decides that).
                    step = run.resume(max(now_ns(), retry_at))
                    if step[0] == "give_up":
                        return self._ended(step, run.attempts, last, result, retry_after, True)
                else:
                    not_started = run.attempts == 0
                    return self._ended(step, run.attempts, last, result, retry_after, not_started)
        except asyncio.CancelledError:
            attempts = run.attempts
            if run.phase not in ("succeeded", "gave_up"):
                run.cancel()
            self._count(cancelled=1, calls=1, attempts=attempts, retries=max(attempts - 1, 0))
            raise

    async def _do_asleep(self, seconds: float) -> None:
        if self._sleep is not None:
            r = self._sleep(seconds)
            if asyncio.iscoroutine(r) or isinstance(r, asyncio.Future):
                await r
            return
        clock = current_clock()
        if clock is not None:
            await clock.asleep(seconds)
        else:
            await asyncio.sleep(seconds)

    # ------------------------------------------------------------------ decorator
    def __call__(self, fn: F) -> F:
        if not callable(fn):
            fail_type("fn", "a callable", fn)
        reject_generator_function("guards.retry", fn)
        if self._operation is None:
            self._operation = getattr(fn, "__qualname__", None)
        simple = self._simple
        lock = self._lock
        get_deadline = _DEADLINE.get
        arun = self._arun
        me = self

        # The fast path: a first attempt that succeeds costs one call of ``fn``, one
        # context-variable read and one lock for the counters.
        if is_async_callable(fn):

            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                if simple and get_deadline() is None:
                    try:
                        result = await fn(*args, **kwargs)
                    except Exception as exc:  # noqa: BLE001 - the loop classifies it
                        return await arun(fn, args, kwargs, exc)
                    except BaseException:  # cancelled (or interrupted)
                        me._count(cancelled=1, calls=1, attempts=1)
                        raise
                    with lock:
                        n = me._n
                        n[_CALLS] += 1
                        n[_ATTEMPTS] += 1
                        n[_SUCCESSES] += 1
                    return result
                return await arun(fn, args, kwargs, None)

            functools.update_wrapper(awrapper, fn)
            awrapper.retry = self  # type: ignore[attr-defined]
            return awrapper  # type: ignore[return-value]

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if simple and get_deadline() is None:
                try:
                    result = fn(*args, **kwargs)
                except Exception as exc:  # noqa: BLE001 - the loop classifies it
                    return me._run_interruptible(fn, args, kwargs, exc)
                except BaseException:  # KeyboardInterrupt, SystemExit: the call is abandoned
                    me._count(cancelled=1, calls=1, attempts=1)
                    raise
                with lock:
                    n = me._n
                    n[_CALLS] += 1
                    n[_ATTEMPTS] += 1
                    n[_SUCCESSES] += 1
                return result
            return me._run_interruptible(fn, args, kwargs, None)

        functools.update_wrapper(wrapper, fn)
        wrapper.retry = self  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    def _run_interruptible(
        self, fn: Callable[..., Any], args: Any, kwargs: Any, first: Optional[Exception]
    ) -> Any:
        """The sync retry loop; a call abandoned by a ``KeyboardInterrupt`` (or another
        ``BaseException`` that is not an ``Exception``) is counted as ``cancelled``, as the
        async loop counts a cancellation."""
        try:
            return self._run(fn, args, kwargs, first)
        except Exception:
            raise
        except BaseException:
            self._count(cancelled=1, calls=1)
            raise

    # ------------------------------------------------------------------ stats
    def stats(self) -> dict[str, int]:
        """This decorator's counters: ``calls``, ``attempts``, ``retries``,
        ``successes``, ``failures`` (calls that raised or returned a rejected result),
        ``attempt_timeouts`` (async attempts cancelled at their budget), ``cancelled``
        (calls cancelled by their caller), ``not_started`` (a deadline had passed before
        an attempt), and one per give-up reason."""
        with self._lock:
            return dict(zip(_STAT_NAMES, self._n))

    def reset_stats(self) -> None:
        """Set every counter of ``stats()`` back to zero."""
        with self._lock:
            self._n = [0] * len(_STAT_NAMES)

    def __repr__(self) -> str:
        return f"guards.Retry(max_attempts={self.policy.max_attempts})"


def _check_outcome(got: Any) -> tuple[str, Optional[float]]:
    after: Any = None
    if isinstance(got, tuple):
        if len(got) != 2:
            raise TypeError("`classify` must return an outcome name, (name, retry_after) or None")
        got, after = got
    if not isinstance(got, str):
        fail_type("classify", "an outcome name (str)", got)
    if got not in OUTCOMES:
        raise ValueError(f"`classify` returned {got!r}; expected one of {', '.join(OUTCOMES)}")
    if after is not None:
        if isinstance(after, bool) or not isinstance(after, (int, float)):
            fail_type("retry_after", "seconds (float or int) or None", after)
        if not after >= 0 or after == float("inf"):
            raise ValueError(f"`retry_after` must be finite seconds >= 0, not {after!r}")
        after = float(after)
    return got, after


#: A duration argument: seconds, a ``datetime.timedelta`` or :class:`guards.Nanos`.
_Duration = Union[float, int, datetime.timedelta, Nanos, None]


@overload
def retry(fn: F, /) -> F: ...
@overload
def retry(
    fn: None = None,
    /,
    *,
    max_attempts: Optional[int] = None,
    backoff: Union[Backoff, Mapping[str, Any], None] = None,
    budget: Any = None,
    policy: Optional[RetryPolicy] = None,
    attempt_timeout: _Duration = None,
    timeout: _Duration = None,
    margin: _Duration = None,
    retry_on: ExcSpec = None,
    give_up_on: ExcSpec = None,
    overloaded_on: ExcSpec = None,
    classify: Optional[Callable[[BaseException], Any]] = None,
    retry_on_result: Optional[Callable[[Any], Any]] = None,
    idempotency: Union[str, bool] = "idempotent",
    retry_timeouts: Optional[bool] = None,
    retry_connection_errors: Optional[bool] = None,
    retry_other_transient: Optional[bool] = None,
    retry_throttled: Optional[bool] = None,
    honor_retry_after: Optional[bool] = None,
    max_retry_after: _Duration = None,
    min_attempt_time: _Duration = None,
    unkeyed_side_effects: Optional[str] = None,
    seed: Optional[int] = None,
    reraise: bool = False,
    on_retry: Optional[Callable[[RetryState], Any]] = None,
    sleep: Optional[Callable[[float], Any]] = None,
) -> Retry: ...


def retry(
    fn: Optional[F] = None,
    /,
    *,
    max_attempts: Optional[int] = None,
    backoff: Union[Backoff, Mapping[str, Any], None] = None,
    budget: Any = None,
    policy: Optional[RetryPolicy] = None,
    attempt_timeout: _Duration = None,
    timeout: _Duration = None,
    margin: _Duration = None,
    retry_on: ExcSpec = None,
    give_up_on: ExcSpec = None,
    overloaded_on: ExcSpec = None,
    classify: Optional[Callable[[BaseException], Any]] = None,
    retry_on_result: Optional[Callable[[Any], Any]] = None,
    idempotency: Union[str, bool] = "idempotent",
    retry_timeouts: Optional[bool] = None,
    retry_connection_errors: Optional[bool] = None,
    retry_other_transient: Optional[bool] = None,
    retry_throttled: Optional[bool] = None,
    honor_retry_after: Optional[bool] = None,
    max_retry_after: _Duration = None,
    min_attempt_time: _Duration = None,
    unkeyed_side_effects: Optional[str] = None,
    seed: Optional[int] = None,
    reraise: bool = False,
    on_retry: Optional[Callable[[RetryState], Any]] = None,
    sleep: Optional[Callable[[float], Any]] = None,
) -> Any:
    """Retry a function (``def`` or ``async def``): ``@guards.retry`` or
    ``@guards.retry(...)``.

    Policy (native :class:`guards.RetryPolicy`; defaults are core's):
      ``max_attempts`` (3, the first included), ``backoff`` (a :class:`guards.Backoff` or
      a dict of ``base``/``cap``/``multiplier``/``jitter``; default full jitter from
      25 ms, capped at 20 s), ``retry_timeouts``, ``retry_connection_errors``,
      ``retry_other_transient``, ``retry_throttled``, ``honor_retry_after`` (all True),
      ``max_retry_after`` (20 s), ``min_attempt_time`` (1 ms),
      ``unkeyed_side_effects`` (``"never"``), ``seed`` (jitter), or a ready ``policy``.
    Budget: ``budget``, a :class:`guards.RetryBudget` shared by the calls of one client.
    Time: ``timeout`` (the whole call), ``attempt_timeout`` (each attempt), ``margin``
      (kept back from each attempt's budget, default 0).
    What to retry: ``retry_on`` (only these exceptions; others are permanent),
      ``give_up_on`` (permanent), ``overloaded_on`` (overloaded: never retried),
      ``classify`` (``exc -> outcome`` or ``(outcome, retry_after)`` or ``None`` for the
      default, :func:`classify_exception`), ``retry_on_result`` (``result -> outcome``,
      ``True``/``False`` or ``None``: e.g. :func:`http_outcome` of a response; when the
      policy gives up on a result, that result is returned).
    Safety: ``idempotency`` (``"idempotent"``, ``"keyed_side_effect"``,
      ``"unkeyed_side_effect"``; or ``True``/``False``).
    Other: ``reraise`` (raise the last exception instead of a GuardError), ``on_retry``
      (called with a :class:`RetryState` before each wait), ``sleep`` (replace the wait;
      may return an awaitable in async code).
    """
    settings = {
        "max_attempts": max_attempts,
        "backoff": backoff,
        "budget": budget,
        "policy": policy,
        "attempt_timeout": attempt_timeout,
        "timeout": timeout,
        "margin": margin,
        "retry_on": retry_on,
        "give_up_on": give_up_on,
        "overloaded_on": overloaded_on,
        "classify": classify,
        "retry_on_result": retry_on_result,
        "idempotency": idempotency,
        "retry_timeouts": retry_timeouts,
        "retry_connection_errors": retry_connection_errors,
        "retry_other_transient": retry_other_transient,
        "retry_throttled": retry_throttled,
        "honor_retry_after": honor_retry_after,
        "max_retry_after": max_retry_after,
        "min_attempt_time": min_attempt_time,
        "unkeyed_side_effects": unkeyed_side_effects,
        "seed": seed,
        "reraise": reraise,
        "on_retry": on_retry,
        "sleep": sleep,
    }
    if fn is not None:
        defaults = {"idempotency": "idempotent", "reraise": False}
        if any(v is not None and v != defaults.get(k) for k, v in settings.items()):
            raise TypeError("use @retry or @retry(**settings), not both")
        return Retry()(fn)
    return Retry(**settings)
