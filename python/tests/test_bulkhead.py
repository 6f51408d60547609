"""Bulkhead: permits, release exactly once, with-blocks, Little's law, threads."""

from __future__ import annotations

import gc
import inspect
import threading

import pytest
from helpers import config_error, run_threads, type_error

import guards


def test_defaults_match_core_and_the_signature() -> None:
    b = guards.Bulkhead()
    assert b.config() == {"max_concurrent": 12}
    sig = inspect.signature(guards.Bulkhead)
    assert {k: p.default for k, p in sig.parameters.items()} == {"max_concurrent": 12}
    assert (b.max_concurrent, b.in_flight, b.available) == (12, 0, 12)


def test_acquire_until_full_then_release() -> None:
    b = guards.Bulkhead(max_concurrent=2)
    p1, p2 = b.acquire(), b.acquire()
    assert b.in_flight == 2 and b.available == 0
    with pytest.raises(guards.BulkheadFull) as info:
        b.acquire()
    e = info.value
    assert isinstance(e, guards.GuardError)
    assert (e.in_flight, e.max_concurrent, e.reason, e.retry_after) == (2, 2, "full", None)
    assert b.try_acquire() is None
    assert p1.release() is True
    assert p1.released
    assert p1.release() is False  # a second release is a no-op
    assert b.in_flight == 1
    p3 = b.try_acquire()
    assert p3 is not None
    p2.release()
    p3.release()
    assert b.stats() == {"acquired": 3, "rejected": 2, "released": 3, "in_flight": 0}


def test_permit_as_context_manager() -> None:
    b = guards.Bulkhead(max_concurrent=1)
    with b.acquire() as permit:
        assert b.in_flight == 1
        assert not permit.released
    assert permit.released and b.in_flight == 0
    with pytest.raises(KeyError):
        with b.acquire():
            raise KeyError("boom")
    assert b.in_flight == 0
    # Releasing inside the block, then leaving it, releases once.
    with b.acquire() as permit:
        assert permit.release()
        assert b.in_flight == 0
        other = b.acquire()  # the slot is free again; leaving the block must not free it
    assert b.in_flight == 1
    other.release()
    assert b.stats() == {"acquired": 4, "rejected": 0, "released": 4, "in_flight": 0}


def test_a_forgotten_permit_is_released_when_collected() -> None:
    b = guards.Bulkhead(max_concurrent=1)
    b.acquire()  # dropped at once
    gc.collect()
    assert b.in_flight == 0
    assert b.acquire().release()


def test_littles_law_sizing() -> None:
    # 315 calls/s at an 18.7 ms p99 with 2x headroom: ceil(11.781) = 12.
    assert guards.Bulkhead.from_littles_law(315.0, 0.0187, 2.0).max_concurrent == 12
    assert guards.Bulkhead.from_littles_law(1, guards.Nanos(1), 1).max_concurrent == 1
    with config_error("rate_per_sec", "zero"):
        guards.Bulkhead.from_littles_law(0.0, 0.1, 1.0)
    with config_error("rate_per_sec", "not_finite"):
        guards.Bulkhead.from_littles_law(float("nan"), 0.1, 1.0)
    with config_error("p99", "zero"):
        guards.Bulkhead.from_littles_law(1.0, 0, 1.0)
    with config_error("p99", "negative"):
        guards.Bulkhead.from_littles_law(1.0, -0.1, 1.0)
    with config_error("headroom", "out_of_range"):
        guards.Bulkhead.from_littles_law(1.0, 0.1, 0.5)
    with type_error("headroom"):
        guards.Bulkhead.from_littles_law(1.0, 0.1, "2")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "kind"), [(0, "zero"), (-1, "negative"), (2**32, "out_of_range"), (2**70, "out_of_range")]
)
def test_bad_max_concurrent(value: int, kind: str) -> None:
    with config_error("max_concurrent", kind):
        guards.Bulkhead(max_concurrent=value)


@pytest.mark.parametrize("value", [1.5, "3", True])
def test_wrong_type_max_concurrent(value: object) -> None:
    with type_error("max_concurrent"):
        guards.Bulkhead(max_concurrent=value)  # type: ignore[arg-type]


def test_threads_never_exceed_the_cap() -> None:
    cap = 3
    b = guards.Bulkhead(max_concurrent=cap)
    holders = 0
    peak = 0
    lock = threading.Lock()

    def work(_t: int) -> tuple[int, int]:
        nonlocal holders, peak
        ok = refused = 0
        for _ in range(3000):
            permit = b.try_acquire()
            if permit is None:
                refused += 1
                continue
            with lock:
                holders += 1
                peak = max(peak, holders)
            with lock:
                holders -= 1
            permit.release()
            ok += 1
        return ok, refused

    results = run_threads(6, work)
    ok = sum(r[0] for r in results)
    refused = sum(r[1] for r in results)
    assert peak <= cap
    assert ok + refused == 6 * 3000
    s = b.stats()
    assert (s["acquired"], s["rejected"], s["released"], s["in_flight"]) == (ok, refused, ok, 0)


def test_threads_releasing_one_permit_release_it_once() -> None:
    b = guards.Bulkhead(max_concurrent=1)
    permit = b.acquire()
    wins = run_threads(8, lambda _t: permit.release())
    assert wins.count(True) == 1
    assert b.in_flight == 0 and b.stats()["released"] == 1


def test_repr() -> None:
    b = guards.Bulkhead(max_concurrent=4)
    p = b.acquire()
    assert repr(b) == "Bulkhead(max_concurrent=4, in_flight=1)"
    assert repr(p) == "BulkheadPermit(released=False)"


def test_max_concurrent_is_positional_like_a_semaphore() -> None:
    assert guards.Bulkhead(12).max_concurrent == 12  # type: ignore[misc]
