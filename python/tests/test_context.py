"""The deadline ContextVar: scopes, inheritance, asyncio cancellation, header helpers."""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import math
import threading
from collections.abc import AsyncIterator, Iterator

import guards
import pytest
from helpers import config_error, run_threads, type_error

S = 1_000_000_000
MS = 1_000_000


# ------------------------------------------------------------------ scopes


def test_no_deadline_outside_every_scope() -> None:
    assert guards.current_deadline() is None
    assert guards.time_left() is None
    assert guards.time_left_ns() is None
    guards.check_deadline()  # nothing to check: does not raise
    assert guards.deadline_header() is None
    assert guards.inject_deadline() == {}


def test_scope_publishes_the_deadline_and_restores_on_exit(clock: guards.FakeClock) -> None:
    with guards.deadline(2.0) as d:
        assert isinstance(d, guards.Deadline)
        assert d.expires_at == clock.now() + 2 * S
        assert guards.current_deadline() == d
        assert guards.time_left_ns() == 2 * S
        clock.advance(0.5)
        assert guards.time_left() == 1.5
    assert guards.current_deadline() is None


def test_nested_scope_takes_the_earlier_deadline(clock: guards.FakeClock) -> None:
    start = clock.now()
    with guards.deadline(1.0):
        with guards.deadline(5.0) as inner:  # cannot extend the inherited 1 s
            assert inner.expires_at == start + 1 * S
            assert guards.time_left_ns() == 1 * S
        with guards.deadline(0.25) as shorter:  # may shorten it
            assert shorter.expires_at == start + S // 4
            assert guards.time_left_ns() == S // 4
        assert guards.time_left_ns() == 1 * S


def test_scope_accepts_timedelta_nanos_and_an_instant(clock: guards.FakeClock) -> None:
    now = clock.now()
    with guards.deadline(datetime.timedelta(milliseconds=30)) as d:
        assert d.expires_at == now + 30 * MS
    with guards.deadline(guards.Nanos(7)) as d:
        assert d.expires_at == now + 7
    with guards.deadline(at=now + 123) as d:
        assert d.expires_at == now + 123
    with guards.deadline(at=guards.Deadline.after(1, now)) as d:
        assert d.expires_at == now + 1_000_000_000
    with guards.deadline(at=guards.Deadline.none()) as d:
        assert d.is_none()
    with guards.deadline() as d:  # only inherits: no deadline at all here
        assert d.is_none()


def test_entering_an_expired_deadline_raises_a_timeout_error(clock: guards.FakeClock) -> None:
    with guards.deadline(1.0):
        clock.advance(1.0)
        with pytest.raises(guards.DeadlineExceeded) as info:
            with guards.deadline(10.0):
                raise AssertionError("must not run")
        assert isinstance(info.value, TimeoutError)
        assert info.value.reason == "deadline_exceeded"
        with pytest.raises(guards.DeadlineExceeded):
            guards.check_deadline()
        assert guards.time_left() == 0.0
    with pytest.raises(TimeoutError):
        with guards.deadline(0):
            raise AssertionError("must not run")


def test_sync_scope_does_not_interrupt_a_late_block(clock: guards.FakeClock) -> None:
    with guards.deadline(1.0):
        clock.advance(3.0)  # the block overran: its result is still used
        result = "late but done"
    assert result == "late but done"


def test_scope_as_a_decorator_gives_each_call_its_own_deadline(clock: guards.FakeClock) -> None:
    seen: list[int | None] = []

    @guards.deadline(0.5)
    def handler() -> str:
        seen.append(guards.time_left_ns())
        clock.advance(0.1)
        return "ok"

    assert handler() == "ok"
    assert handler() == "ok"
    assert seen == [S // 2, S // 2]
    assert guards.current_deadline() is None


def test_one_scope_object_shared_by_threads(clock: guards.FakeClock) -> None:
    scope = guards.deadline(3.0)
    barrier = threading.Barrier(8)

    def body(i: int) -> int | None:
        with scope:
            barrier.wait()  # all eight inside the same scope object at once
            left = guards.time_left_ns()
        assert guards.current_deadline() is None
        return left

    assert run_threads(8, body) == [3 * S] * 8


def test_threads_inherit_only_through_a_copied_context(clock: guards.FakeClock) -> None:
    got: dict[str, int | None] = {}
    with guards.deadline(2.0):
        ctx = contextvars.copy_context()
        t1 = threading.Thread(
            target=lambda: got.__setitem__("copied", ctx.run(guards.time_left_ns))
        )
        t2 = threading.Thread(target=lambda: got.__setitem__("plain", guards.time_left_ns()))
        for t in (t1, t2):
            t.start()
            t.join()
    assert got == {"copied": 2 * S, "plain": None}


def test_scopes_left_out_of_order_restore_the_deadline() -> None:
    """Left out of order (as generators do), every scope still goes: nothing stays set."""
    a = guards.deadline(10.0)
    b = guards.deadline(20.0)
    da = a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)  # out of order
    assert guards.current_deadline() is not None  # b (within a's 10 s) is still open
    b.__exit__(None, None, None)
    assert guards.current_deadline() is None
    assert a.deadline is None and b.deadline is None
    assert da.expires_at > 0
    with pytest.raises(RuntimeError, match="no open entry"):
        a.__exit__(None, None, None)  # nothing open


def test_deadlines_in_generators_closed_in_entry_order() -> None:
    """Regression: two generators each inside `with guards.deadline(...)`, closed in the
    order they were entered, left the first one's deadline set for every later call in
    the thread."""

    def stream(seconds: float) -> Iterator[float | None]:
        with guards.deadline(seconds):
            yield guards.time_left()
            yield guards.time_left()

    g1, g2 = stream(5.0), stream(50.0)
    next(g1)
    next(g2)
    g1.close()
    g2.close()
    assert guards.current_deadline() is None
    assert guards.time_left() is None
    g3 = stream(1.0)  # and the next generator starts from a clean context
    left = next(g3)
    assert left is not None and left <= 1.0
    g3.close()
    assert guards.current_deadline() is None


@pytest.mark.asyncio
async def test_deadlines_in_async_generators_closed_in_entry_order() -> None:
    async def stream(seconds: float) -> AsyncIterator[float | None]:
        async with guards.deadline(seconds):
            yield guards.time_left()
            yield guards.time_left()

    g1, g2 = stream(5.0), stream(50.0)
    await g1.__anext__()
    await g2.__anext__()
    await g1.aclose()
    await g2.aclose()
    assert guards.current_deadline() is None
    await asyncio.sleep(0)  # no stray cancellation is left armed for this task either


def test_a_scope_left_after_the_deadline_was_reset_by_others_leaves_it_alone() -> None:
    """A generator's scope closed after the code around it (here a retry's attempt) has
    already restored its own deadline must not bring the generator's back."""

    def stream() -> Iterator[None]:
        with guards.deadline(5.0):
            yield

    @guards.retry(timeout=60.0)
    def start() -> Iterator[None]:
        g = stream()
        next(g)
        return g

    g = start()
    assert guards.current_deadline() is None
    g.close()
    assert guards.current_deadline() is None


def test_deadline_decorator_refuses_generator_functions() -> None:
    def gen() -> Iterator[int]:
        yield 1

    async def agen() -> AsyncIterator[int]:
        yield 1

    for fn in (gen, agen):
        with pytest.raises(TypeError, match="generator function"):
            guards.deadline(1.0)(fn)  # type: ignore[type-var]


# ------------------------------------------------------------------ asyncio


@pytest.mark.asyncio
async def test_async_scope_cancels_the_block_at_the_deadline() -> None:
    finished = []
    with pytest.raises(guards.DeadlineExceeded) as info:
        async with guards.deadline(0.02):
            try:
                await asyncio.sleep(30)
            finally:
                finished.append("cleanup ran")
    assert finished == ["cleanup ran"]
    assert isinstance(info.value.__cause__, asyncio.CancelledError)
    assert guards.current_deadline() is None


@pytest.mark.asyncio
async def test_async_scope_lets_an_outside_cancellation_through() -> None:
    started = asyncio.Event()

    async def victim() -> None:
        async with guards.deadline(30.0):
            started.set()
            await asyncio.sleep(30)

    task = asyncio.ensure_future(victim())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


@pytest.mark.asyncio
async def test_async_scope_that_finishes_in_time_is_not_cancelled() -> None:
    async with guards.deadline(30.0) as d:
        await asyncio.sleep(0)
        assert guards.current_deadline() == d
    await asyncio.sleep(0)  # a stray cancel would land here
    assert guards.current_deadline() is None


@pytest.mark.asyncio
async def test_tasks_started_inside_a_scope_inherit_it(clock: guards.FakeClock) -> None:
    async def child() -> int | None:
        return guards.time_left_ns()

    async with guards.deadline(4.0):
        inside = await asyncio.gather(child(), asyncio.ensure_future(child()))
    outside = await asyncio.ensure_future(child())
    assert inside == [4 * S, 4 * S]
    assert outside is None


@pytest.mark.asyncio
async def test_concurrent_tasks_sharing_one_scope_keep_their_own_entries() -> None:
    scope = guards.deadline(30.0)
    order: list[str] = []

    async def body(name: str, delay: float) -> None:
        async with scope:
            await asyncio.sleep(delay)
            order.append(name)
        assert guards.current_deadline() is None

    await asyncio.gather(body("slow", 0.02), body("fast", 0.0))
    assert sorted(order) == ["fast", "slow"]


@pytest.mark.asyncio
async def test_async_decorator() -> None:
    @guards.deadline(0.02)
    async def slow() -> None:
        await asyncio.sleep(30)

    @guards.deadline(30.0)
    async def quick() -> float | None:
        return guards.time_left()

    with pytest.raises(guards.DeadlineExceeded):
        await slow()
    left = await quick()
    assert left is not None and 0 < left <= 30.0


# ------------------------------------------------------------------ headers


def test_inject_grpc_and_millis_headers(clock: guards.FakeClock) -> None:
    with guards.deadline(guards.Nanos(59 * MS)):
        assert guards.deadline_header() == "59000000n"
        assert guards.inject_deadline() == {"grpc-timeout": "59000000n"}
        assert guards.inject_deadline(format="millis") == {"x-envoy-expected-rq-timeout-ms": "59"}
        headers = {"accept": "text/plain"}
        out = guards.inject_deadline(headers, name="x-timeout-ms", format="millis")
        assert out is headers and headers == {"accept": "text/plain", "x-timeout-ms": "59"}
        clock.advance(guards.Nanos(MS // 2))  # 58.5 ms left: rounded down
        assert guards.deadline_header("millis") == "58"
        assert guards.deadline_header() == "58500000n"


def test_header_for_an_explicit_deadline_and_an_expired_one(clock: guards.FakeClock) -> None:
    d = guards.Deadline.after(2, now=clock.now())
    assert guards.deadline_header(deadline=d) == "2000000u"
    clock.advance(3)
    assert guards.deadline_header(deadline=d) == "0n"
    assert guards.deadline_header("millis", deadline=d) == "0"


def test_extract_from_mapping_asgi_list_and_wsgi_environ(clock: guards.FakeClock) -> None:
    now = clock.now()
    want = now + 59 * MS
    assert guards.extract_deadline({"grpc-timeout": "59m"}).expires_at == want
    assert guards.extract_deadline({"Grpc-Timeout": "59m"}).expires_at == want
    assert guards.extract_deadline([(b"grpc-timeout", b"59m")]).expires_at == want
    assert guards.extract_deadline({"HTTP_GRPC_TIMEOUT": "59m"}).expires_at == want
    assert (
        guards.extract_deadline(
            {"x-envoy-expected-rq-timeout-ms": "59"}, format="millis"
        ).expires_at
        == want
    )
    assert guards.extract_deadline({"other": "1"}) is None
    assert guards.extract_deadline([]) is None


def test_round_trip_through_a_header(clock: guards.FakeClock) -> None:
    with guards.deadline(1.5):
        headers = guards.inject_deadline()
    # the next hop, at the same instant, sees the same deadline
    received = guards.extract_deadline(headers)
    assert received is not None
    assert received.time_left_ns() == 1500 * MS


def test_malformed_header_is_an_error_unless_lenient() -> None:
    with pytest.raises(guards.HeaderError) as info:
        guards.extract_deadline({"grpc-timeout": "5s"})
    assert info.value.kind == "unknown_unit"
    assert isinstance(info.value, ValueError)
    assert guards.extract_deadline({"grpc-timeout": "5s"}, strict=False) is None
    with pytest.raises(guards.HeaderError):
        guards.extract_deadline({"x-envoy-expected-rq-timeout-ms": "-5"}, format="millis")


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("bad", ["1", [1], object()])
def test_scope_timeout_of_the_wrong_type(bad: object) -> None:
    with type_error("timeout"):
        guards.deadline(bad)  # type: ignore[arg-type]


def test_scope_bool_is_not_a_duration() -> None:
    with type_error("timeout"):
        guards.deadline(True)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("bad", "kind"),
    [(-1, "negative"), (-0.5, "negative"), (math.nan, "not_finite"), (math.inf, "not_finite")],
)
def test_scope_timeout_out_of_range(bad: float, kind: str) -> None:
    with config_error("timeout", kind):
        guards.deadline(bad)


def test_scope_bad_instant_and_both_arguments() -> None:
    with type_error("at"):
        guards.deadline(at=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`at`"):
        guards.deadline(at=-1)
    with pytest.raises(TypeError, match="not both"):
        guards.deadline(1.0, at=5)


def test_header_helpers_reject_bad_arguments() -> None:
    with pytest.raises(ValueError, match="`format`"):
        guards.inject_deadline(format="seconds")
    with type_error("format"):
        guards.deadline_header(1)  # type: ignore[arg-type]
    with type_error("headers"):
        guards.inject_deadline(headers=[("a", "b")])  # type: ignore[arg-type]
    with type_error("headers"):
        guards.extract_deadline(42)
    with type_error("name"):
        guards.extract_deadline({}, name=5)  # type: ignore[arg-type]
    with type_error("strict"):
        guards.extract_deadline({}, strict="yes")  # type: ignore[arg-type]
    with type_error("deadline"):
        guards.deadline_header(deadline=5)  # type: ignore[arg-type]
    with type_error("now"):
        guards.time_left(now="now")  # type: ignore[arg-type]
    with config_error("name", "out_of_range"):
        guards.inject_deadline(name="")
