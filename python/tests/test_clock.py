"""The clock: monotonic_ns, now_ns, FakeClock (install, nesting, advance, sleep, asleep)."""

from __future__ import annotations

import asyncio
import datetime
import time

import pytest
from helpers import run_threads

import guards


def test_monotonic_ns_reads_the_same_clock_as_time_monotonic_ns() -> None:
    before = time.monotonic_ns()
    mine = guards.monotonic_ns()
    after = time.monotonic_ns()
    assert before <= mine <= after


def test_now_ns_is_the_monotonic_clock_without_a_fake() -> None:
    before = guards.monotonic_ns()
    now = guards.now_ns()
    assert before <= now <= guards.monotonic_ns()
    assert guards.current_clock() is None


def test_fake_clock_reads_set_and_advance() -> None:
    c = guards.FakeClock()
    assert c.now() == 0
    c.set(5)
    assert c.now() == 5
    assert c.advance(0.5) == 500_000_005
    assert c.advance(ns=7) == 500_000_012
    assert c.advance(1, ns=1) == 1_500_000_013
    assert c.advance(datetime.timedelta(microseconds=3)) == 1_500_003_013
    assert c.advance(guards.Nanos(2)) == 1_500_003_015
    assert c.advance() == 1_500_003_015
    c.set(1)  # may go backwards, for tests of skew
    assert c.now() == 1
    assert repr(c) == "FakeClock(now=1)"


def test_fake_clock_advance_saturates_instead_of_overflowing() -> None:
    c = guards.FakeClock(now=2**64 - 10)
    assert c.advance(ns=100) == 2**64 - 1


def test_installed_clock_is_what_guards_read() -> None:
    c = guards.FakeClock(now=42)
    assert not c.installed
    with c as entered:
        assert entered is c
        assert c.installed
        assert guards.current_clock() is c
        assert guards.now_ns() == 42
        q = guards.QueueDiscipline()
        q.push(1)  # enqueued at 42 by the fake clock
        c.advance(ns=8)
        assert q.oldest_age_ns() == 8
    assert not c.installed
    assert guards.current_clock() is None


def test_nested_installs_restore_the_previous_clock() -> None:
    outer, inner = guards.FakeClock(now=1), guards.FakeClock(now=2)
    with outer:
        with inner:
            assert guards.current_clock() is inner
            assert guards.now_ns() == 2
        assert guards.current_clock() is outer
        assert guards.now_ns() == 1
        with outer:  # the same clock twice
            assert guards.current_clock() is outer
        assert guards.current_clock() is outer
    assert guards.current_clock() is None


def test_clock_is_uninstalled_when_the_block_raises() -> None:
    c = guards.FakeClock()
    with pytest.raises(KeyError):
        with c:
            raise KeyError("boom")
    assert guards.current_clock() is None


def test_installed_clock_is_process_wide() -> None:
    with guards.FakeClock(now=77):
        seen = run_threads(4, lambda _i: guards.now_ns())
    assert seen == [77, 77, 77, 77]


def test_sleep_advances_the_clock() -> None:
    c = guards.FakeClock()
    c.sleep(0.25)
    c.sleep(datetime.timedelta(milliseconds=1))
    assert c.now() == 251_000_000


def test_asleep_advances_and_yields_to_the_loop() -> None:
    c = guards.FakeClock()
    order: list[str] = []

    async def sleeper() -> None:
        order.append("sleep")
        await c.asleep(2)
        order.append("woke")

    async def other() -> None:
        order.append("other")

    async def main() -> None:
        await asyncio.gather(sleeper(), other())

    asyncio.run(main())
    assert c.now() == 2_000_000_000
    # The sleeper yielded once, so the other task ran before it woke.
    assert order == ["sleep", "other", "woke"]


def test_asleep_can_be_cancelled() -> None:
    c = guards.FakeClock()
    reached: list[bool] = []

    async def sleeper() -> None:
        await c.asleep(1)
        reached.append(True)

    async def main() -> None:
        task = asyncio.ensure_future(sleeper())
        await asyncio.sleep(0)  # the sleeper starts and yields inside asleep
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert reached == []


def test_concurrent_advances_all_count() -> None:
    c = guards.FakeClock()

    def work(_i: int) -> None:
        for _ in range(2000):
            c.advance(ns=1)

    run_threads(4, work)
    assert c.now() == 8000


@pytest.mark.parametrize("bad", [-1, 2**64])
def test_fake_clock_rejects_out_of_range_instants(bad: int) -> None:
    with pytest.raises(ValueError, match="`now`"):
        guards.FakeClock(now=bad)
    c = guards.FakeClock()
    with pytest.raises(ValueError, match="`ns`"):
        c.set(bad)


@pytest.mark.parametrize("bad", [1.5, "3", True, None])
def test_fake_clock_set_rejects_non_integers(bad: object) -> None:
    with pytest.raises(TypeError, match="`ns`"):
        guards.FakeClock().set(bad)  # type: ignore[arg-type]


def test_advance_rejects_bad_durations() -> None:
    c = guards.FakeClock()
    with pytest.raises(ValueError, match="`seconds`.*negative"):
        c.advance(-1.0)
    with pytest.raises(ValueError, match="`seconds`.*finite"):
        c.advance(float("nan"))
    with pytest.raises(ValueError, match="`ns`"):
        c.advance(ns=-1)
    with pytest.raises(TypeError, match="`seconds`"):
        c.advance("1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`seconds`"):
        c.sleep(float("inf"))
    with pytest.raises(ValueError, match="`seconds`"):
        c.asleep(-2)
    assert c.now() == 0  # nothing moved


def test_now_argument_is_validated_everywhere() -> None:
    q = guards.QueueDiscipline()
    with pytest.raises(TypeError, match="`now`"):
        q.is_standing(now=1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`now`"):
        q.is_standing(now=True)
    with pytest.raises(ValueError, match="`now`"):
        q.is_standing(now=-5)
    with pytest.raises(ValueError, match="`now`"):
        q.is_standing(now=2**64)
    assert q.is_standing(now=2**64 - 1) is False
