"""Guarded async calls run natively: CircuitBreaker.acall, KeyedBreakers.acall,
Bulkhead.acall and the GuardedCoroutine that guards.guarded(one guard) awaits for an
``async def``. They behave as the coroutine of an ``async def`` wrapper would: nothing is
taken before the first step, the guard is held across suspensions, and the call's end
(returned, raised, cancelled, closed, collected) is reported once."""

from __future__ import annotations

import asyncio
import collections.abc
import gc
import inspect
import sys
import types
import warnings
from collections.abc import Generator
from typing import Any

import guards
import pytest
from guards.testing import exhaust, trip
from helpers import run_threads


def small_breaker(**kwargs: Any) -> guards.CircuitBreaker:
    settings: dict[str, Any] = {"window_size": 4, "open_duration": 5.0, "half_open_probes": 1}
    settings.update(kwargs)
    return guards.CircuitBreaker(**settings)


async def echo(*args: Any, **kwargs: Any) -> Any:
    await asyncio.sleep(0)
    return args, kwargs


async def fail(exc: BaseException) -> None:
    await asyncio.sleep(0)
    raise exc


def run(coro: Any) -> Any:
    return asyncio.run(_await(coro))


async def _await(aw: Any) -> Any:
    return await aw


# ------------------------------------------------------------------ acall


def test_acall_awaits_and_counts_a_success(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10)
    assert run(br.acall(echo, 1, k="v")) == ((1,), {"k": "v"})
    assert br.stats()["successes"] == 1
    bh = guards.Bulkhead(max_concurrent=2)

    async def inside() -> int:
        await asyncio.sleep(0)
        return bh.in_flight

    assert run(bh.acall(inside)) == 1
    assert bh.in_flight == 0
    breakers = guards.KeyedBreakers()
    assert run(breakers.acall("op", echo, 2)) == ((2,), {})
    op = breakers.stats("op")
    assert op is not None and op["successes"] == 1


def test_nothing_is_taken_before_the_first_step() -> None:
    br, bh = guards.CircuitBreaker(), guards.Bulkhead(max_concurrent=1)
    called: list[int] = []

    async def fn() -> str:
        called.append(1)
        return "ok"

    c1, c2 = br.acall(fn), bh.acall(fn)
    assert called == [] and bh.in_flight == 0
    assert all(v == 0 for v in br.stats().values())
    c1.close()  # closing an unstarted call takes nothing and does not warn
    c2.close()
    assert called == [] and bh.stats()["acquired"] == 0


def test_a_call_never_awaited_warns_as_a_coroutine_does() -> None:
    br = guards.CircuitBreaker()
    with pytest.warns(RuntimeWarning, match="was never awaited"):
        c = br.acall(echo)
        del c
        gc.collect()
    assert br.stats()["successes"] == 0


@pytest.mark.parametrize(
    ("exc", "counted"),
    [
        (ValueError("bad"), "failures"),
        (TimeoutError(), "failures"),
        (guards.DeadlineExceeded("late"), "failures"),
        (guards.BulkheadFull("inner"), "ignored"),
        (KeyboardInterrupt(), "ignored"),
        (asyncio.CancelledError(), "ignored"),
    ],
)
def test_acall_judges_exceptions_as_guarded_does(
    clock: guards.FakeClock, exc: BaseException, counted: str
) -> None:
    br = small_breaker(window_size=10)

    async def main() -> None:
        with pytest.raises(type(exc)) as info:
            await br.acall(fail, exc)
        assert info.value is exc

    asyncio.run(main())
    assert br.stats()[counted] == 1


def test_acall_refused_while_open_without_calling(clock: guards.FakeClock) -> None:
    br = small_breaker()
    trip(br)
    called: list[int] = []

    async def fn() -> None:
        called.append(1)

    with pytest.raises(guards.BreakerOpen):
        run(br.acall(fn))
    assert called == []
    bh = guards.Bulkhead(max_concurrent=1)
    held = exhaust(bh)
    with pytest.raises(guards.BulkheadFull):
        run(bh.acall(fn))
    held[0].release()
    assert called == []


def test_acall_refuses_bad_input_at_once() -> None:
    br, bh, kb = guards.CircuitBreaker(), guards.Bulkhead(), guards.KeyedBreakers()
    with pytest.raises(TypeError, match="fn"):
        br.acall(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fn"):
        bh.acall("x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key"):
        kb.acall(1.5, echo)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        br.acall()  # type: ignore[call-arg]


def test_what_fn_returns_must_be_awaitable_and_a_bad_one_is_the_callers_bug(
    clock: guards.FakeClock,
) -> None:
    br = small_breaker(window_size=10)
    with pytest.raises(TypeError, match="can't be used in 'await' expression"):
        run(br.acall(lambda: 5))  # type: ignore[arg-type,return-value]
    with pytest.raises(ZeroDivisionError):
        run(br.acall(lambda: 1 / 0))  # type: ignore[arg-type,return-value]  # raised at once
    # Both are programming errors (`ignored`): they say nothing about the dependency.
    assert (br.stats()["failures"], br.stats()["ignored"]) == (0, 2)


def test_return_values_come_back_as_they_are() -> None:
    bh = guards.Bulkhead()
    err = ValueError("a value, not raised")
    for value in (None, 0, (1, 2), (), err, [3], StopIteration(7)):

        async def give(v: Any = value) -> Any:
            return v

        assert run(bh.acall(give)) == value or run(bh.acall(give)) is value
        result = run(bh.acall(give))
        assert result is value or result == value
    assert bh.in_flight == 0


def test_the_guard_is_held_across_suspensions() -> None:
    bh = guards.Bulkhead(max_concurrent=3)
    seen: list[int] = []

    async def slow(n: int) -> int:
        for _ in range(3):
            await asyncio.sleep(0)
            seen.append(bh.in_flight)
        return n

    async def main() -> list[Any]:
        return await asyncio.gather(
            *(bh.acall(slow, i) for i in range(5)), return_exceptions=True
        )

    results = asyncio.run(main())
    assert results[:3] == [0, 1, 2]
    assert all(isinstance(r, guards.BulkheadFull) for r in results[3:])
    assert max(seen) == 3 and bh.in_flight == 0


def test_awaitables_other_than_coroutines() -> None:
    bh = guards.Bulkhead()

    class Ready:
        """An awaitable whose iterator has no send()."""

        def __await__(self) -> Any:
            return iter(())  # returns None at once

    class Steps:
        def __await__(self) -> Generator[Any, None, str]:
            yield None  # one suspension
            return "stepped"

    @types.coroutine
    def legacy() -> Generator[Any, None, str]:
        yield None
        return "legacy"

    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        loop.call_soon(fut.set_result, "future")
        return [
            await bh.acall(lambda: fut),
            await bh.acall(Ready),
            await bh.acall(Steps),
            await bh.acall(legacy),
        ]

    assert asyncio.run(main()) == ["future", None, "stepped", "legacy"]
    assert bh.stats()["released"] == 4

    class BadAwait:
        def __await__(self) -> int:
            return 3

    with pytest.raises(TypeError, match="non-iterator"):
        run(bh.acall(BadAwait))  # type: ignore[arg-type]
    assert bh.in_flight == 0


def test_it_is_a_coroutine_for_asyncio() -> None:
    br = guards.CircuitBreaker()

    async def main() -> Any:
        c = br.acall(echo, "t")
        assert asyncio.iscoroutine(c)
        assert isinstance(c, collections.abc.Coroutine)
        assert c.__name__ == "echo" and c.__qualname__ == "echo"
        assert "echo" in repr(c)
        task = asyncio.create_task(c)
        assert "echo" in repr(task)
        return await task

    assert asyncio.run(main()) == (("t",), {})
    assert asyncio.run(asyncio.wait_for(br.acall(echo), 5)) == ((), {})
    assert br.stats()["successes"] == 2


def test_cancelling_the_task_gives_the_guard_back(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10)
    bh = guards.Bulkhead(max_concurrent=1)
    cleaned: list[str] = []

    async def hang() -> None:
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.append("finally")

    async def cancel(aw: Any) -> None:
        task = asyncio.ensure_future(aw)
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel(br.acall(hang)))
    asyncio.run(cancel(bh.acall(hang)))
    assert cleaned == ["finally", "finally"]
    assert br.stats()["ignored"] == 1
    assert bh.in_flight == 0

    br2 = small_breaker()
    trip(br2)
    clock.advance(5.0)
    asyncio.run(cancel(br2.acall(hang)))  # an abandoned probe counts as failed
    assert br2.stats()["probe_failures"] == 1
    assert br2.state == "open"


def test_send_throw_close_by_hand() -> None:
    bh = guards.Bulkhead()
    log: list[Any] = []

    async def fn() -> str:
        try:
            got = await Yielder()
            log.append(got)
            await Yielder()
        except ValueError as e:
            log.append(f"caught {e}")
            return "recovered"
        return "done"

    class Yielder:
        def __await__(self) -> Generator[str, Any, Any]:
            return (yield "suspended")

    c = bh.acall(fn)
    with pytest.raises(TypeError, match="non-None"):
        c.send(1)  # not started yet
    assert c.send(None) == "suspended"
    assert bh.in_flight == 1
    assert c.send("hello") == "suspended"  # values travel to the awaited object
    with pytest.raises(StopIteration) as stop:
        c.throw(ValueError("boom"))
    assert stop.value.value == "recovered"
    assert log == ["hello", "caught boom"]
    assert bh.in_flight == 0
    with pytest.raises(RuntimeError, match="cannot reuse"):
        c.send(None)
    with pytest.raises(KeyError):
        c.throw(KeyError("after the end"))
    c.close()  # a no-op once done

    c2 = bh.acall(fn)
    with pytest.raises(KeyError):
        c2.throw(KeyError("before the start"))  # nothing taken
    assert bh.stats()["acquired"] == 1
    with pytest.raises(RuntimeError, match="cannot reuse"):
        c2.send(None)

    c3 = bh.acall(fn)
    assert c3.send(None) == "suspended"
    with pytest.raises(TypeError):
        c3.throw()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        c3.throw(42)  # type: ignore[arg-type]
    assert bh.in_flight == 0  # the TypeError was thrown in: the call ended
    c4 = bh.acall(fn)
    assert c4.send(None) == "suspended"
    with pytest.raises(KeyError, match="legacy"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        c4.throw(KeyError, "legacy", None)
    assert bh.in_flight == 0


def test_close_while_suspended_closes_the_awaited_coroutine(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10)
    cleaned: list[str] = []

    class Suspend:
        def __await__(self) -> Generator[None, None, None]:
            yield None

    async def fn() -> None:
        try:
            await Suspend()
        finally:
            cleaned.append("finally")

    c = br.acall(fn)
    c.send(None)
    c.close()
    assert cleaned == ["finally"]
    assert br.stats()["ignored"] == 1

    async def stubborn() -> None:
        while True:
            try:
                await Suspend()
            except GeneratorExit:
                await Suspend()  # refuses to close

    c = br.acall(stubborn)
    c.send(None)
    with pytest.raises(RuntimeError, match="ignored GeneratorExit"):
        c.close()
    assert br.stats()["failures"] == 1  # raised at the await: a failure


def test_a_suspended_call_collected_gives_the_guard_back(clock: guards.FakeClock) -> None:
    bh = guards.Bulkhead(max_concurrent=1)

    class Suspend:
        def __await__(self) -> Generator[None, None, None]:
            yield None

    async def fn() -> None:
        await Suspend()

    c = bh.acall(fn)
    c.send(None)
    assert bh.in_flight == 1
    del c
    gc.collect()
    assert bh.in_flight == 0

    br = small_breaker()
    trip(br)
    clock.advance(5.0)
    c = br.acall(fn)
    c.send(None)  # the half-open probe
    del c
    gc.collect()
    assert br.stats()["probe_failures"] == 1


def test_a_step_while_stepping_is_refused() -> None:
    bh = guards.Bulkhead()
    holder: list[Any] = []

    async def fn() -> str:
        with pytest.raises(ValueError, match="already executing"):
            holder[0].send(None)
        return "ok"

    c = bh.acall(fn)
    holder.append(c)
    with pytest.raises(StopIteration) as stop:
        c.send(None)
    assert stop.value.value == "ok"
    assert bh.in_flight == 0


def test_nested_guarded_calls() -> None:
    bh = guards.Bulkhead(max_concurrent=3)

    async def nested(depth: int) -> int:
        if depth == 0:
            return bh.in_flight
        return await bh.acall(nested, depth - 1)

    assert run(bh.acall(nested, 2)) == 3
    with pytest.raises(guards.BulkheadFull):
        run(bh.acall(nested, 3))
    assert bh.in_flight == 0


def test_async_calls_from_threads() -> None:
    br = guards.CircuitBreaker(window_size=100)

    async def many() -> None:
        for _ in range(100):
            await br.acall(echo)

    run_threads(4, lambda i: asyncio.run(many()))
    assert br.stats()["successes"] == 400


# ------------------------------------------------------------------ the decorator


def test_guarded_async_functions_are_native_coroutine_functions() -> None:
    br, bh = guards.CircuitBreaker(), guards.Bulkhead()

    @guards.guarded(br)
    async def get(item: str) -> str:
        """Get it."""
        await asyncio.sleep(0)
        return item

    assert isinstance(get, guards.GuardedFunction) and get.is_async
    assert inspect.iscoroutinefunction(get)
    assert asyncio.iscoroutinefunction(get)
    assert get.__name__ == "get" and get.__doc__ == "Get it."
    assert str(inspect.signature(get)) == "(item: 'str') -> 'str'"
    assert run(get("x")) == "x"

    class Client:
        @guards.guarded(bh)
        async def fetch(self, n: int) -> int:
            return n * 2

    c = Client()
    assert inspect.iscoroutinefunction(c.fetch)
    assert run(c.fetch(21)) == 42
    # retry sees it as async too
    retried = guards.retry(get)
    assert inspect.iscoroutinefunction(retried)
    assert run(retried("y")) == "y"
    assert br.stats()["successes"] == 2 and bh.stats()["released"] == 1

    class AsyncCallable:
        async def __call__(self) -> str:
            return "called"

    wrapped = guards.guarded(br)(AsyncCallable())
    assert isinstance(wrapped, guards.GuardedFunction) and wrapped.is_async
    assert inspect.iscoroutinefunction(wrapped)
    assert run(wrapped()) == "called"


def test_guarded_async_refuses_once_the_deadline_has_passed(clock: guards.FakeClock) -> None:
    br = guards.CircuitBreaker()
    called: list[int] = []

    @guards.guarded(br)
    async def fn() -> None:
        called.append(1)

    async def main() -> None:
        async with guards.deadline(1.0):
            await fn()
            clock.advance(1.0)
            with pytest.raises(guards.DeadlineExceeded, match="before the call started"):
                await fn()

    asyncio.run(main())
    assert called == [1]
    assert br.stats()["successes"] == 1


def test_guarded_async_with_failure_and_ignore(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10)

    @guards.guarded(br, failure=ConnectionError, ignore=KeyError)
    async def call(exc: BaseException) -> None:
        await asyncio.sleep(0)
        raise exc

    async def main() -> None:
        for exc in (KeyError("k"), ValueError("v"), ConnectionError("c")):
            with pytest.raises(type(exc)):
                await call(exc)

    asyncio.run(main())
    s = br.stats()
    assert (s["ignored"], s["failures"]) == (2, 1)


def test_guarded_function_rejects_a_bad_is_async() -> None:
    with pytest.raises(TypeError, match="is_async"):
        guards.GuardedFunction(guards.Bulkhead(), echo, is_async="yes")  # type: ignore[arg-type]


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="refcounts")
def test_async_calls_do_not_leak_references() -> None:
    bh = guards.Bulkhead()
    arg = object()

    async def same(x: Any) -> Any:
        await asyncio.sleep(0)
        return x

    async def boom(x: Any) -> Any:
        raise ValueError(x)

    async def main() -> None:
        for _ in range(100):
            assert await bh.acall(same, arg) is arg
            with pytest.raises(ValueError):
                await bh.acall(boom, arg)

    asyncio.run(main())
    gc.collect()
    before = sys.getrefcount(arg)
    asyncio.run(main())
    gc.collect()
    assert sys.getrefcount(arg) == before


def test_await_steps_through_the_native_slots_and_a_tracer_through_next() -> None:
    # On CPython `await` and asyncio's tasks send into a GuardedCoroutine through its
    # `am_send` slot (the result handed back, no StopIteration); a tracer makes 3.10 and
    # 3.11 step it through `__next__` instead. Both ways give the same results.
    import platform

    from guards import _guards

    assert _guards._native_await_slots is (
        platform.python_implementation() == "CPython" and sys.version_info >= (3, 10)
    )
    bh = guards.Bulkhead()
    br = guards.CircuitBreaker(slow_call_duration=guards.Nanos(2**64 - 1))
    err = ValueError("a value, not raised")
    values = (None, 0, (1, 2), (), err, [3], StopIteration(7))

    async def give(v: Any) -> Any:
        await asyncio.sleep(0)
        return v

    async def main() -> list[Any]:
        got = [await bh.acall(give, v) for v in values]
        got += [await guards.guarded(br)(give)(v) for v in values]
        got += await asyncio.gather(*(asyncio.ensure_future(bh.acall(give, v)) for v in values))
        return got

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        return tracer

    for traced in (False, True):
        if traced:
            sys.settrace(tracer)
        try:
            got = asyncio.run(main())
        finally:
            sys.settrace(None)
        assert [g is v or g == v for g, v in zip(got, values * 3)] == [True] * 21
        assert bh.in_flight == 0
    assert br.stats()["successes"] == 14
