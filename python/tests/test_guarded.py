"""guards.guarded: breakers, bulkheads and limiters as with / async with blocks and as
decorators; outcomes reported to each guard; brownout fallbacks; threads; cancellation."""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import AsyncIterator, Iterator

import guards
import pytest
from guards.testing import exhaust, trip
from helpers import config_error, run_threads, type_error


class HTTPError(Exception):
    def __init__(self, status: int, retry_after: "str | None" = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.headers = {} if retry_after is None else {"Retry-After": retry_after}


def small_breaker(**kwargs: object) -> guards.CircuitBreaker:
    """Judges the last 4 calls; opens at 50 % failures for 5 s; one probe."""
    settings: dict[str, object] = {"window_size": 4, "open_duration": 5.0, "half_open_probes": 1}
    settings.update(kwargs)
    return guards.CircuitBreaker(**settings)  # type: ignore[arg-type]


def fail(exc: BaseException) -> None:
    raise exc


# ------------------------------------------------------------------ circuit breaker


def test_breaker_opens_after_failures_in_with_blocks(clock: guards.FakeClock) -> None:
    br = small_breaker()
    g = guards.guarded(br)
    for _ in range(4):
        with pytest.raises(ConnectionError):
            with g:
                raise ConnectionError("down")
    assert br.state == "open"
    with pytest.raises(guards.BreakerOpen) as info:
        with g:
            raise AssertionError("must not run while open")
    assert info.value.retry_after == 5.0
    assert info.value.reason == "open"
    s = br.stats()
    assert (s["failures"], s["closed_to_open"], s["rejected_open"]) == (4, 1, 1)


def test_breaker_decorator_counts_successes_and_failures(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10)

    @guards.guarded(br)
    def call(x: int) -> int:
        if x < 0:
            raise ValueError("negative")
        return x * 2

    assert call(2) == 4
    with pytest.raises(ValueError):
        call(-1)
    s = br.stats()
    assert (s["successes"], s["failures"]) == (1, 1)
    assert call.__name__ == "call"


def test_ignore_and_failure_decide_what_counts(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10)
    g = guards.guarded(br, failure=(ConnectionError, TimeoutError), ignore=KeyError)
    for exc in (KeyError("k"), ValueError("v"), ConnectionError("c"), TimeoutError()):
        with pytest.raises(type(exc)):
            g.call(fail, exc)
    s = br.stats()
    assert (s["ignored"], s["failures"]) == (2, 2)  # KeyError ignored, ValueError not a failure


def test_refusals_of_nested_guards_are_not_failures(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10)
    inner = guards.Bulkhead(max_concurrent=1)
    held = exhaust(inner)
    with pytest.raises(guards.BulkheadFull):
        with guards.guarded(br):
            with guards.guarded(inner):
                pass
    s = br.stats()
    assert (s["failures"], s["ignored"]) == (0, 1)
    held[0].release()


def test_marking_a_failure_without_an_exception(clock: guards.FakeClock) -> None:
    br = small_breaker()
    g = guards.guarded(br)
    for _ in range(4):
        with g as call:
            status = 500  # e.g. a response the client did not raise for
            if status >= 500:
                call.failure()
    assert br.state == "open"


def test_half_open_probe_closes_the_breaker(clock: guards.FakeClock) -> None:
    br = small_breaker(probe_timeout=0.25)
    trip(br)
    g = guards.guarded(br)
    clock.advance(5.0)
    with g as call:
        assert call.probe_timeout == 0.25
    assert br.state == "closed"
    with g as call:
        assert call.probe_timeout is None


def test_cancelled_probe_counts_as_failed_and_cancelled_call_as_ignored(
    clock: guards.FakeClock,
) -> None:
    br = small_breaker(window_size=10)
    g = guards.guarded(br)

    async def hang() -> None:
        async with g:
            await asyncio.sleep(30)

    async def cancel_one() -> None:
        task = asyncio.ensure_future(hang())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_one())
    assert br.stats()["ignored"] == 1  # an ordinary call abandoned: no verdict

    br2 = small_breaker()
    trip(br2)
    clock.advance(5.0)
    g = guards.guarded(br2)
    asyncio.run(cancel_one())  # the probe is abandoned: it must not hold half-open
    s = br2.stats()
    assert s["probe_failures"] == 1
    assert br2.state == "open"


def test_open_breaker_serves_the_fallback(clock: guards.FakeClock) -> None:
    br = small_breaker()
    trip(br)

    @guards.guarded(br, fallback="cached badge")
    def badge() -> str:
        return "live badge"

    assert badge() == "cached badge"
    clock.advance(5.0)
    assert badge() == "live badge"  # the probe went through and closed it
    assert br.state == "closed"


@pytest.mark.asyncio
async def test_async_breaker_decorator_like_aiobreaker(clock: guards.FakeClock) -> None:
    br = small_breaker()

    @guards.guarded(br)
    async def fetch(fail_it: bool) -> str:
        await asyncio.sleep(0)
        if fail_it:
            raise ConnectionError("down")
        return "ok"

    assert await fetch(False) == "ok"
    for _ in range(3):
        with pytest.raises(ConnectionError):
            await fetch(True)
    with pytest.raises(guards.BreakerOpen):
        await fetch(False)


def test_threads_share_one_guarded_breaker(clock: guards.FakeClock) -> None:
    br = guards.CircuitBreaker(window_size=50)
    g = guards.guarded(br)

    def body(i: int) -> int:
        ok = 0
        for k in range(200):
            try:
                with g:
                    if (i + k) % 10 == 0:
                        raise ConnectionError("one in ten fails")
                ok += 1
            except ConnectionError:
                pass
        return ok

    oks = sum(run_threads(6, body))
    s = br.stats()
    assert br.state == "closed"  # 10 % failures never reach 50 %
    assert s["successes"] == oks
    assert s["successes"] + s["failures"] == 1200


def test_breaker_and_bulkhead_together_release_in_reverse(clock: guards.FakeClock) -> None:
    br = small_breaker()
    b = guards.Bulkhead(max_concurrent=1)
    g = guards.guarded(br, b)
    with pytest.raises(ConnectionError):
        with g:
            assert b.in_flight == 1
            raise ConnectionError
    assert b.in_flight == 0
    assert br.stats()["failures"] == 1
    trip(br)
    with pytest.raises(guards.BreakerOpen):
        with g:
            pass
    assert b.stats()["acquired"] == 1  # the open breaker refused before the bulkhead


def test_keyed_breakers_one_breaker_per_operation(clock: guards.FakeClock) -> None:
    breakers = guards.KeyedBreakers(window_size=4, open_duration=5.0)
    stock = guards.guarded(breakers, key="stock:get")

    @guards.guarded(breakers, key="cart:get")
    def cart() -> str:
        return "cart"

    for _ in range(4):
        with pytest.raises(ConnectionError):
            stock.call(fail, ConnectionError("down"))
    with pytest.raises(guards.BreakerOpen):
        stock.call(lambda: "never")
    assert cart() == "cart"  # another operation's breaker is untouched
    assert breakers.state("stock:get") == "open"
    assert breakers.state("cart:get") == "closed"
    assert stock.stats()["keyed_breakers_failures"] == 4
    assert cart.guarded.stats()["keyed_breakers_successes"] == 1
    with pytest.raises(TypeError, match="`key`"):
        guards.guarded(breakers)
    with type_error("key"):
        guards.guarded(breakers, key=1.5)


def test_testing_trip_rejects_other_guards() -> None:
    with type_error("breaker"):
        trip(guards.Bulkhead())


# ------------------------------------------------------------------ bulkhead


def test_with_bulkhead_holds_a_slot_for_the_block() -> None:
    b = guards.Bulkhead(max_concurrent=2)
    g = guards.guarded(b)
    with g:
        assert b.in_flight == 1
        with g:
            assert b.in_flight == 2
            with pytest.raises(guards.BulkheadFull) as info:
                with g:
                    raise AssertionError("must not run")
            assert info.value.reason == "full"
        assert b.in_flight == 1
    assert b.in_flight == 0
    s = b.stats()
    assert (s["acquired"], s["rejected"], s["released"]) == (2, 1, 2)


def test_bulkhead_slot_is_released_when_the_block_raises() -> None:
    b = guards.Bulkhead(max_concurrent=1)
    with pytest.raises(KeyError):
        with guards.guarded(b):
            raise KeyError("boom")
    assert b.in_flight == 0


def test_bulkhead_decorator_sync_and_async() -> None:
    b = guards.Bulkhead(max_concurrent=1)

    @guards.guarded(b)
    def inside() -> int:
        return b.in_flight

    @guards.guarded(b)
    async def ainside() -> int:
        await asyncio.sleep(0)
        return b.in_flight

    assert inside() == 1
    assert asyncio.run(ainside()) == 1
    assert inside.guarded.guards == (b,)
    assert b.in_flight == 0


def test_threads_never_exceed_the_bulkhead() -> None:
    b = guards.Bulkhead(max_concurrent=3)
    g = guards.guarded(b)
    lock = threading.Lock()
    state = {"inside": 0, "max": 0, "ran": 0, "refused": 0}

    def body(_: int) -> None:
        for _ in range(300):
            try:
                with g:
                    with lock:
                        state["inside"] += 1
                        state["max"] = max(state["max"], state["inside"])
                    with lock:
                        state["inside"] -= 1
                        state["ran"] += 1
            except guards.BulkheadFull:
                with lock:
                    state["refused"] += 1

    run_threads(8, body)
    assert state["max"] <= 3
    assert state["ran"] + state["refused"] == 2400
    s = b.stats()
    assert s["acquired"] == state["ran"]
    assert s["rejected"] == state["refused"]
    assert b.in_flight == 0


@pytest.mark.asyncio
async def test_async_with_bulkhead_released_on_cancellation() -> None:
    b = guards.Bulkhead(max_concurrent=1)
    entered = asyncio.Event()

    async def hold() -> None:
        async with guards.guarded(b):
            entered.set()
            await asyncio.sleep(30)

    task = asyncio.ensure_future(hold())
    await entered.wait()
    assert b.in_flight == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert b.in_flight == 0


@pytest.mark.asyncio
async def test_tasks_sharing_one_guarded_object() -> None:
    b = guards.Bulkhead(max_concurrent=10)
    g = guards.guarded(b)
    peak = {"n": 0}

    async def body(delay: float) -> None:
        async with g:
            peak["n"] = max(peak["n"], b.in_flight)
            await asyncio.sleep(delay)

    await asyncio.gather(*(body(0.001 * (i % 3)) for i in range(10)))
    assert peak["n"] >= 2  # they really overlapped
    assert b.in_flight == 0
    assert b.stats()["acquired"] == 10


def test_testing_exhaust_fills_a_bulkhead() -> None:
    b = guards.Bulkhead(max_concurrent=4)
    permits = exhaust(b)
    assert len(permits) == 4
    assert b.available == 0
    for p in permits:
        p.release()
    assert b.available == 4


# ------------------------------------------------------------------ limiter / admission


def test_limiter_block_reports_success_dropped_and_ignored() -> None:
    lim = guards.Limiter(limit=2)
    g = guards.guarded(lim)
    with g:
        with g:
            with pytest.raises(guards.LimitExceeded) as info:
                with g:
                    raise AssertionError("must not run")
            assert info.value.retry_after is not None
    with pytest.raises(TimeoutError):
        with g:
            raise TimeoutError  # an overload signal: the adaptive limit hears "dropped"
    with pytest.raises(HTTPError):
        with g:
            raise HTTPError(503, "2")  # the callee shed it, "come back in 2 s": dropped too
    with pytest.raises(HTTPError):
        with g:
            raise HTTPError(503)  # a 503 without Retry-After: other_transient, no sample
    with pytest.raises(KeyError):
        with g:
            raise KeyError("a client error says nothing about capacity")
    with g as call:
        call.dropped()  # no exception, but the reply said "overloaded"
    s = lim.stats()
    assert (s["acquired"], s["succeeded"], s["dropped"], s["ignored"]) == (7, 2, 3, 2)
    assert s["rejected_limit_reached"] == 1
    assert lim.in_flight == 0


def test_limiter_priority_is_passed_on() -> None:
    lim = guards.Limiter(limit=4, partitions=[{"max_in_flight": 4}] + [{"max_in_flight": 1}] * 7)
    low = guards.guarded(lim, priority=3)
    high = guards.guarded(lim, priority=0)
    with low:
        with pytest.raises(guards.LimitExceeded) as info:
            with low:
                pass
        assert info.value.reason == "partition_cap"
        with high:
            assert lim.in_flight == 2


def test_limiter_decorator_counts_under_threads() -> None:
    lim = guards.Limiter(limit=3)
    lock = threading.Lock()
    inside = {"now": 0, "max": 0}

    @guards.guarded(lim)
    def work() -> None:
        with lock:
            inside["now"] += 1
            inside["max"] = max(inside["max"], inside["now"])
        with lock:
            inside["now"] -= 1

    def body(_: int) -> int:
        refused = 0
        for _ in range(300):
            try:
                work()
            except guards.LimitExceeded:
                refused += 1
        return refused

    refused = sum(run_threads(6, body))
    s = lim.stats()
    assert inside["max"] <= 3
    assert s["acquired"] + refused == 1800
    assert s["succeeded"] == s["acquired"]
    assert lim.in_flight == 0


def test_admission_as_a_guard() -> None:
    door = guards.Admission(limits=[1] * 8)
    g = guards.guarded(door)
    with g:
        with pytest.raises(guards.AdmissionRejected) as info:
            with g:
                pass
        assert info.value.retry_after == 1.0
    assert door.stats()["succeeded"] == 1


# ------------------------------------------------------------------ deadlines


def test_no_call_starts_after_the_inherited_deadline(clock: guards.FakeClock) -> None:
    br = small_breaker()
    b = guards.Bulkhead()

    @guards.guarded(br)
    def one() -> None:
        raise AssertionError("must not run")

    both = guards.guarded(br, b)
    with guards.deadline(1.0):
        clock.advance(1.0)
        with pytest.raises(guards.DeadlineExceeded):
            one()
        with pytest.raises(guards.DeadlineExceeded):
            both.call(one)
        with pytest.raises(guards.DeadlineExceeded):
            with both:
                raise AssertionError("must not run")
    assert br.stats()["successes"] + br.stats()["failures"] + br.stats()["ignored"] == 0
    assert b.stats()["acquired"] == 0


def test_timeout_is_published_and_never_extends_the_inherited_deadline(
    clock: guards.FakeClock,
) -> None:
    g = guards.guarded(guards.Bulkhead(), timeout=0.5)
    with g:
        assert guards.time_left_ns() == 500 * 1_000_000
    assert g.call(guards.time_left_ns) == 500 * 1_000_000
    with guards.deadline(0.2):
        assert g.call(guards.time_left_ns) == 200 * 1_000_000
        with g:
            assert guards.time_left_ns() == 200 * 1_000_000
    assert guards.current_deadline() is None


@pytest.mark.asyncio
async def test_async_timeout_cancels_and_counts_as_a_timeout() -> None:
    br = small_breaker(window_size=10)
    lim = guards.Limiter(limit=5)
    finished = []

    @guards.guarded(br, lim, timeout=0.02)
    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        finally:
            finished.append("cleanup")

    with pytest.raises(guards.DeadlineExceeded):
        await slow()
    assert finished == ["cleanup"]
    assert br.stats()["failures"] == 1  # a timeout is the dependency's failure
    assert lim.stats()["dropped"] == 1  # and an overload signal for the limit
    assert lim.in_flight == 0

    g = guards.guarded(lim, timeout=0.02)
    with pytest.raises(guards.DeadlineExceeded):
        async with g:
            await asyncio.sleep(30)
    assert lim.stats()["dropped"] == 2
    async with g:  # a quick block is not cancelled
        await asyncio.sleep(0)
    assert lim.stats()["succeeded"] == 1


@pytest.mark.asyncio
async def test_async_timeout_with_a_fallback() -> None:
    @guards.guarded(guards.Bulkhead(), timeout=0.01, fallback="stale")
    async def slow() -> str:
        await asyncio.sleep(30)
        return "fresh"

    assert await slow() == "stale"


def test_expired_deadline_with_a_fallback_serves_it(clock: guards.FakeClock) -> None:
    g = guards.guarded(guards.Bulkhead(), fallback="cached")
    with guards.deadline(1.0):
        clock.advance(2.0)
        assert g.call(lambda: "live") == "cached"


def test_timeout_bad_input() -> None:
    with config_error("timeout", "zero"):
        guards.guarded(guards.Bulkhead(), timeout=0)
    with type_error("timeout"):
        guards.guarded(guards.Bulkhead(), timeout="1s")


# ------------------------------------------------------------------ brownout / fallback


def full_bulkhead() -> tuple[guards.Bulkhead, list[object]]:
    b = guards.Bulkhead(max_concurrent=1)
    return b, exhaust(b)


def test_fallback_value_when_a_guard_refuses() -> None:
    b, held = full_bulkhead()

    @guards.guarded(b, fallback=[])
    def badges() -> list[str]:
        raise AssertionError("must not run while the bulkhead is full")

    assert badges() == []
    stats = badges.guarded.stats()
    assert stats["brownout_degraded"] == 1
    assert stats["bulkhead_rejected"] == 2  # exhaust() was refused once too


def test_fallback_callable_when_the_call_fails() -> None:
    b = guards.Bulkhead(max_concurrent=4)
    made = []

    def default() -> str:
        made.append(1)
        return "n/a"

    @guards.guarded(b, fallback=default)
    def rating() -> str:
        raise HTTPError(503)

    assert rating() == "n/a"
    assert rating() == "n/a"
    assert made == [1, 1]
    assert b.in_flight == 0


def test_full_answers_are_counted() -> None:
    g = guards.guarded(guards.Bulkhead(), fallback=None)
    assert g.call(lambda: 5) == 5
    assert g.stats()["brownout_full"] == 1


def test_fallback_only_for_the_listed_kinds() -> None:
    b, held = full_bulkhead()
    brownout = guards.Brownout(optional=True, fallback_on=["bulkhead_full"])
    g = guards.guarded(b, fallback="cached", brownout=brownout)
    assert g.call(lambda: "live") == "cached"  # refused: listed
    held[0].release()
    with pytest.raises(ConnectionError):  # failed: not listed, so it fails fast
        g.call(lambda: (_ for _ in ()).throw(ConnectionError("down")))
    s = brownout.stats()
    assert (s["degraded"], s["errors"]) == (1, 1)


def test_required_operation_fails_fast() -> None:
    b, held = full_bulkhead()
    brownout = guards.Brownout()  # required
    g = guards.guarded(b, fallback="unused", brownout=brownout)
    with pytest.raises(guards.BulkheadFull):
        g.call(lambda: "live")
    assert brownout.stats()["errors"] == 1


def test_exempt_operation_proceeds_without_the_full_guard() -> None:
    b, held = full_bulkhead()
    brownout = guards.Brownout(exempt=True)
    health = guards.guarded(b, brownout=brownout)
    assert health.call(lambda: "healthy") == "healthy"
    assert brownout.stats()["proceeded"] == 1
    assert b.in_flight == 1  # only the permit held by the test


@pytest.mark.asyncio
async def test_async_fallback() -> None:
    b, held = full_bulkhead()

    @guards.guarded(b, fallback=lambda: "later")
    async def fetch() -> str:
        raise AssertionError("must not run")

    assert await fetch() == "later"

    @guards.guarded(guards.Bulkhead(), fallback=0)
    async def fails() -> int:
        await asyncio.sleep(0)
        raise TimeoutError

    assert await fails() == 0


def test_with_blocks_do_not_serve_fallbacks() -> None:
    b, held = full_bulkhead()
    with pytest.raises(guards.BulkheadFull):
        with guards.guarded(b, fallback="ignored here"):
            raise AssertionError("must not run")


# ------------------------------------------------------------------ adaptive throttle


def test_adaptive_throttle_is_told_what_the_backend_answered() -> None:
    t = guards.AdaptiveThrottle()
    g = guards.guarded(t)
    assert g.call(lambda: 1) == 1
    with pytest.raises(HTTPError):
        g.call(lambda: (_ for _ in ()).throw(HTTPError(429)))  # refused: "slow down"
    with pytest.raises(HTTPError):
        g.call(lambda: (_ for _ in ()).throw(HTTPError(404)))  # answered (the request's fault)
    with pytest.raises(HTTPError):
        g.call(lambda: (_ for _ in ()).throw(HTTPError(500)))  # answered (a failure)
    s = t.stats()
    assert (s["admitted"], s["accepted"], s["rejected_by_backend"]) == (4, 3, 1)


def test_adaptive_throttle_rejects_locally_once_the_backend_keeps_refusing(
    clock: guards.FakeClock,
) -> None:
    t = guards.AdaptiveThrottle(seed=7)

    @guards.guarded(t, fallback="shed")
    def call() -> str:
        raise HTTPError(429)

    answers = [call() for _ in range(200)]
    assert answers == ["shed"] * 200
    s = t.stats()
    assert s["throttled"] > 0  # some never left the process
    assert s["admitted"] + s["throttled"] == 200
    assert s["rejected_by_backend"] == s["admitted"]


# ------------------------------------------------------------------ bad input


def test_guarded_rejects_bad_arguments() -> None:
    with pytest.raises(TypeError, match="at least one guard"):
        guards.guarded()
    with type_error("guards"):
        guards.guarded(object())
    with type_error("guards"):
        guards.guarded(guards.RetryPolicy())
    b = guards.Bulkhead()
    with type_error("failure"):
        guards.guarded(b, failure=5)  # type: ignore[arg-type]
    with type_error("ignore"):
        guards.guarded(b, ignore=(KeyError, 3))  # type: ignore[arg-type]
    with type_error("priority"):
        guards.guarded(b, priority="high")  # type: ignore[arg-type]
    with config_error("priority", "out_of_range"):
        guards.guarded(b, priority=8)
    with type_error("brownout"):
        guards.guarded(b, brownout="optional")
    with type_error("fn"):
        guards.guarded(b)(42)  # type: ignore[arg-type]


def test_a_raising_predicate_still_gives_the_slot_back() -> None:
    def broken(exc: BaseException) -> bool:
        raise LookupError("predicate bug")

    b = guards.Bulkhead(max_concurrent=1)
    for g in (
        guards.guarded(b, failure=broken),
        guards.guarded(b, guards.Bulkhead(), ignore=broken),
    ):
        with pytest.raises(LookupError):
            with g:
                raise ValueError("the call failed")
        assert b.in_flight == 0

        @g
        def fails() -> None:
            raise ValueError

        with pytest.raises(LookupError):
            fails()
        assert b.in_flight == 0


def test_blocks_exited_out_of_order_give_every_slot_back() -> None:
    b = guards.Bulkhead()
    g1, g2 = guards.guarded(b), guards.guarded(b)
    g1.__enter__()
    g2.__enter__()
    g1.__exit__(None, None, None)  # out of order: g1's own slot goes back
    assert b.in_flight == 1
    g2.__exit__(None, None, None)
    assert b.in_flight == 0
    with pytest.raises(RuntimeError, match="no open block"):
        g1.__exit__(None, None, None)  # nothing open


def test_blocks_in_generators_closed_in_entry_order_do_not_leak() -> None:
    """Regression: `with guarded(bulkhead)` in two generators closed in the order they
    were entered raised RuntimeError from the first close and kept its slot for ever."""
    pool = guards.Bulkhead(max_concurrent=2)
    shared = guards.guarded(pool)

    def rows(g: guards.Guarded) -> Iterator[int]:
        with g:
            yield 1
            yield 2

    for first, second in ((shared, shared), (guards.guarded(pool), guards.guarded(pool))):
        r1, r2 = rows(first), rows(second)
        next(r1)
        next(r2)
        assert pool.in_flight == 2
        r1.close()
        r2.close()
        assert pool.in_flight == 0
    assert pool.stats()["released"] == 4


@pytest.mark.asyncio
async def test_blocks_in_async_generators_closed_in_entry_order_do_not_leak() -> None:
    pool = guards.Bulkhead(max_concurrent=2)
    breaker = guards.CircuitBreaker(window_size=4)

    async def rows() -> AsyncIterator[int]:
        async with guards.guarded(pool), guards.guarded(breaker, timeout=30.0):
            yield 1
            yield 2

    a1, a2 = rows(), rows()
    await a1.__anext__()
    await a2.__anext__()
    await a1.aclose()
    await a2.aclose()
    assert pool.in_flight == 0
    assert guards.current_deadline() is None
    s = breaker.stats()
    assert s["failures"] == 0 and s["ignored"] == 2  # abandoned (GeneratorExit): ignored


def test_guarded_refuses_generator_functions() -> None:
    b = guards.Bulkhead()

    def gen() -> Iterator[int]:
        yield 1

    async def agen() -> AsyncIterator[int]:
        yield 1

    class CallableGen:
        def __call__(self) -> Iterator[int]:
            yield 1

    for g in (guards.guarded(b), guards.guarded(guards.CircuitBreaker()), guards.guarded(b, fallback=0)):
        for fn in (gen, agen, functools.partial(gen), CallableGen()):
            with pytest.raises(TypeError, match="generator function"):
                g(fn)  # type: ignore[arg-type]
    assert b.stats()["acquired"] == 0


def test_a_key_without_keyed_breakers_is_refused() -> None:
    """Regression: `guarded(Bulkhead(), key="x")` silently ignored the key."""
    for guard in (guards.Bulkhead(), guards.CircuitBreaker(), guards.Limiter()):
        with pytest.raises(TypeError, match="KeyedBreakers"):
            guards.guarded(guard, key="x")
    guards.guarded(guards.Bulkhead(), guards.KeyedBreakers(), key="x")  # fine: one is keyed


def test_refusal_kind_table() -> None:
    assert guards.refusal_kind(guards.BreakerOpen("x")) == "breaker_open"
    assert guards.refusal_kind(guards.BulkheadFull("x")) == "bulkhead_full"
    assert guards.refusal_kind(guards.LimitExceeded("x")) == "bulkhead_full"
    assert guards.refusal_kind(guards.BudgetExhausted("x")) == "budget_exhausted"
    assert guards.refusal_kind(guards.Throttled("x")) == "throttled"
    assert guards.refusal_kind(guards.DeadlineExceeded("x")) == "timeout"
    assert guards.refusal_kind(TimeoutError()) == "timeout"
    assert guards.refusal_kind(HTTPError(429)) == "overloaded"
    assert guards.refusal_kind(HTTPError(503, "1")) == "overloaded"
    assert guards.refusal_kind(HTTPError(503)) == "failed"  # no Retry-After: other_transient
    assert guards.refusal_kind(HTTPError(500)) == "failed"
    assert guards.refusal_kind(ValueError()) == "failed"


def test_a_breaker_around_a_retry_counts_budget_give_ups_as_failures() -> None:
    """`@guarded(breaker)` outside `@retry`: when the retry gives up because the budget
    refused a retry after a failed attempt, the dependency failed: the breaker counts it
    (on the native path and on the Python path alike)."""
    budget = guards.RetryBudget(capacity=1.0, ratio=0.0)  # one retry, never refilled
    for fallback in (False, True):
        breaker = guards.CircuitBreaker(window_size=4)
        extra = {"fallback": dict} if fallback else {}

        @guards.guarded(breaker, **extra)  # type: ignore[arg-type]
        @guards.retry(max_attempts=2, budget=budget, backoff={"base": 1e-6, "cap": 1e-6})
        def call() -> dict[str, int]:
            raise ConnectionError("down")

        outcomes = []
        for _ in range(4):
            try:
                outcomes.append(call())
            except (guards.RetriesExhausted, guards.BudgetExhausted) as e:
                outcomes.append(type(e).__name__)
        assert breaker.stats()["failures"] == 4
        assert breaker.state == "open"
        if fallback:
            assert outcomes == [{}, {}, {}, {}]
        budget = guards.RetryBudget(capacity=1.0, ratio=0.0)


def test_a_local_budget_refusal_without_attempts_is_still_ignored() -> None:
    breaker = guards.CircuitBreaker(window_size=2)

    @guards.guarded(breaker)
    def call() -> None:
        raise guards.BudgetExhausted("refused before any attempt")

    for _ in range(3):
        with pytest.raises(guards.BudgetExhausted):
            call()
    assert breaker.stats()["failures"] == 0
    assert breaker.state == "closed"


# ------------------------------------------------------------------ fallbacks that do not hide bugs


def test_a_bug_is_not_served_a_fallback_nor_counted_by_the_breaker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: a KeyError in the user's own function returned the fallback, counted as
    a breaker failure and logged nothing."""
    breaker = guards.CircuitBreaker(window_size=2)

    @guards.guarded(breaker, fallback="cached")
    def price(item: str) -> str:
        return {"apple": "1.00"}[item]

    with caplog.at_level(logging.WARNING, "guards"):
        for _ in range(5):
            with pytest.raises(KeyError):
                price("pear")
    assert price("apple") == "1.00"
    s = breaker.stats()
    assert (s["failures"], s["ignored"], s["successes"]) == (0, 5, 1)
    assert breaker.state == "closed"
    warnings = [r for r in caplog.records if r.name == "guards"]
    assert len(warnings) == 5
    assert "KeyError" in warnings[0].getMessage()
    assert "fallback not served" in warnings[0].getMessage()


def test_programming_errors_are_ignored_by_breakers_on_every_path() -> None:
    for exc in (TypeError("t"), AttributeError("a"), AssertionError(), KeyError("k")):
        breaker = guards.CircuitBreaker(window_size=1)

        @guards.guarded(breaker)  # the native fast path
        def native() -> None:
            raise exc

        with pytest.raises(type(exc)):
            native()
        with pytest.raises(type(exc)):
            with guards.guarded(breaker):
                raise exc
        with pytest.raises(type(exc)):
            guards.guarded(breaker).call(native.__wrapped__)  # type: ignore[attr-defined]
        assert breaker.state == "closed"
        assert breaker.stats()["ignored"] == 3
    counted = guards.CircuitBreaker(window_size=1)
    with pytest.raises(KeyError):
        with guards.guarded(counted, failure=KeyError):  # asked for: counted
            raise KeyError("k")
    assert counted.state == "open"


def test_dependency_failures_and_refusals_are_served() -> None:
    seen: list[BaseException] = []

    def fallback(exc: BaseException) -> str:
        seen.append(exc)
        return "cached"

    g = guards.guarded(guards.Bulkhead(), fallback=fallback)
    failures: list[BaseException] = [
        TimeoutError(),
        ConnectionError(),
        HTTPError(503),
        HTTPError(500),
        HTTPError(429),
        guards.RetriesExhausted("gave up"),
    ]
    for exc in failures:
        assert g.call(lambda: (_ for _ in ()).throw(exc)) == "cached"
    assert seen == failures
    with pytest.raises(HTTPError):
        g.call(lambda: (_ for _ in ()).throw(HTTPError(404)))  # the caller's mistake
    b, held = full_bulkhead()
    refused = guards.guarded(b, fallback=fallback)
    assert refused.call(lambda: "live") == "cached"
    assert isinstance(seen[-1], guards.BulkheadFull)


def test_fallback_signatures_are_decided_once() -> None:
    g0 = guards.guarded(guards.Bulkhead(), fallback=lambda: "zero")
    g1 = guards.guarded(guards.Bulkhead(), fallback=lambda exc: type(exc).__name__)
    gd = guards.guarded(guards.Bulkhead(), fallback=dict)  # a builtin: called with nothing
    gv = guards.guarded(guards.Bulkhead(), fallback=lambda *args: len(args))
    fail = lambda: (_ for _ in ()).throw(TimeoutError())  # noqa: E731
    assert g0.call(fail) == "zero"
    assert g1.call(fail) == "TimeoutError"
    assert gd.call(fail) == {}
    assert gv.call(fail) == 1
    with pytest.raises(TypeError, match="fallback"):
        guards.guarded(guards.Bulkhead(), fallback=lambda a, b: None)
    with pytest.raises(TypeError, match="fallback"):

        def kw_only(*, exc: BaseException) -> None: ...

        guards.guarded(guards.Bulkhead(), fallback=kw_only)


def test_fallback_on_replaces_the_default_rule() -> None:
    g = guards.guarded(guards.Bulkhead(), fallback="n/a", fallback_on=(KeyError, TimeoutError))
    assert g.call(lambda: {}["x"]) == "n/a"
    with pytest.raises(ConnectionError):
        g.call(lambda: (_ for _ in ()).throw(ConnectionError()))
    anything = guards.guarded(guards.Bulkhead(), fallback="n/a", fallback_on=Exception)
    assert anything.call(lambda: {}["x"]) == "n/a"
    with pytest.raises(TypeError, match="fallback_on"):
        guards.guarded(guards.Bulkhead(), fallback_on=KeyError)
    with type_error("fallback_on"):
        guards.guarded(guards.Bulkhead(), fallback=1, fallback_on=5)  # type: ignore[arg-type]


def test_a_fallback_alone_is_the_outer_layer_of_a_stack(clock: guards.FakeClock) -> None:
    """`guarded(fallback=...)` with no guard: fallback outermost, breaker inside retry."""
    breaker = guards.CircuitBreaker(window_size=2, open_duration=30.0)
    calls: list[str] = []

    @guards.guarded(fallback=lambda exc: f"cached ({type(exc).__name__})")
    @guards.retry(max_attempts=3)
    @guards.guarded(breaker)
    def stock(item: str) -> str:
        calls.append(item)
        if item == "bug":
            return {}["missing"]  # type: ignore[no-any-return]
        raise ConnectionError("down")

    assert stock("a") == "cached (BreakerOpen)"  # 2 failures opened it; the 3rd refused
    assert calls == ["a", "a"]
    assert stock("b") == "cached (BreakerOpen)"  # open: refused at once, not retried
    assert calls == ["a", "a"]
    assert breaker.state == "open"
    clock.advance(31.0)
    with pytest.raises((KeyError, guards.RetriesExhausted)) as info:
        stock("bug")  # a bug: never served as a fallback, even through the retry
    assert isinstance(info.value, KeyError) or isinstance(info.value.__cause__, KeyError)
    with pytest.raises(TypeError, match="at least one guard"):
        guards.guarded()


@pytest.mark.asyncio
async def test_async_fallbacks() -> None:
    async def later(exc: BaseException) -> str:
        await asyncio.sleep(0)
        return f"later: {type(exc).__name__}"

    @guards.guarded(guards.Bulkhead(), fallback=later)
    async def fetch() -> str:
        raise TimeoutError

    assert await fetch() == "later: TimeoutError"

    @guards.guarded(guards.Bulkhead(), fallback=lambda exc: "sync fallback")
    async def fetch2() -> str:
        raise ConnectionError

    assert await fetch2() == "sync fallback"

    def sync_fn() -> str:
        return "x"

    with pytest.raises(TypeError, match="async `fallback`"):
        guards.guarded(guards.Bulkhead(), fallback=later)(sync_fn)
