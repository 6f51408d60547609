"""guards.shared across processes: multiprocessing with "fork" and "spawn" (each process
opens the region by path), a bulkhead's cap held host-wide, a breaker opened by one
process's failures refusing in the others, a retry budget's balance in bounds, and the
permits of a process killed with SIGKILL given back by reclaim."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

import guards
from guards import shared

PROCS = 4
OPS = 3000
CAP = 2


# ------------------------------------------------------------------ workers (module level:
# "spawn" imports this module in the child)


def _bulkhead_worker(path: str, ops: int, start: Any, out: Any) -> None:
    b = shared.Region(path).bulkhead("bh", max_concurrent=CAP)
    start.wait()
    acquired = rejected = 0
    peak = 0
    for i in range(ops):
        p = b.try_acquire()
        if p is None:
            rejected += 1
            peak = max(peak, b.in_flight)
            continue
        acquired += 1
        # Sample the host-wide count while holding a slot (and let others in meanwhile).
        peak = max(peak, b.in_flight)
        if i % 7 == 0:
            os.sched_yield()
        peak = max(peak, b.in_flight)
        p.release()
    out.put((os.getpid(), acquired, rejected, peak))


def _breaker_failures(path: str, done: Any) -> None:
    cb = shared.Region(path).circuit_breaker(
        "dep", window_size=10, minimum_calls=10, failure_rate_threshold=0.5, open_duration=120
    )
    for _ in range(10):
        with pytest.raises(ConnectionError):
            with cb.acquire():
                raise ConnectionError("the dependency is down")
    done.put((os.getpid(), cb.state))


def _region_arg(region: shared.Region, out: Any) -> None:
    with region.bulkhead("bh", max_concurrent=CAP).acquire():
        out.put((region.path, region.stats()["permits_held"]))


def _breaker_probe(path: str, out: Any) -> None:
    cb = shared.Region(path).circuit_breaker(
        "dep", window_size=10, minimum_calls=10, failure_rate_threshold=0.5, open_duration=120
    )
    try:
        cb.acquire()
        out.put((os.getpid(), "admitted", cb.state))
    except guards.BreakerOpen as e:
        out.put((os.getpid(), e.reason, cb.state))


def _budget_worker(path: str, ops: int, start: Any, out: Any) -> None:
    rb = shared.Region(path).retry_budget("rb", capacity=5, ratio=0.25)
    start.wait()
    granted = deposits = 0
    lo, hi = float("inf"), float("-inf")
    for i in range(ops):
        if i % 2 == 0:
            rb.deposit()
            deposits += 1
        if rb.withdraw() is not None:
            granted += 1
        t = rb.tokens()
        lo, hi = min(lo, t), max(hi, t)
    out.put((granted, deposits, lo, hi))


def _holder(path: str, ready: Any) -> None:
    r = shared.Region(path)
    b = r.bulkhead("bh", max_concurrent=2)
    lim = r.limiter("lim", 3)
    held = [b.acquire(), b.acquire(), lim.acquire()]
    ready.put(os.getpid())
    time.sleep(600)  # killed long before
    del held


PROBE_SETTINGS: dict[str, Any] = {
    "window_size": 2,
    "minimum_calls": 2,
    "open_duration": 10,
    "half_open_probes": 1,
}


def _probe_holder(path: str, at: int, ready: Any) -> None:
    cb = shared.Region(path).circuit_breaker("dep", **PROBE_SETTINGS)
    probe = cb.acquire(now=at)  # the only half-open probe
    ready.put(probe.is_probe)
    time.sleep(600)  # killed long before
    del probe


# ------------------------------------------------------------------ helpers


def _run(ctx: Any, target: Any, args: tuple[Any, ...], n: int) -> list[Any]:
    procs = [ctx.Process(target=target, args=args) for _ in range(n)]
    for p in procs:
        p.start()
    return procs


def _join(procs: list[Any]) -> None:
    for p in procs:
        p.join(60)
        assert p.exitcode == 0, p.exitcode


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "region")


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_bulkhead_cap_is_host_wide(path: str, method: str) -> None:
    ctx = mp.get_context(method)
    region = shared.Region(path)  # before the fork: inherited; spawn children open it
    b = region.bulkhead("bh", max_concurrent=CAP)
    start, out = ctx.Event(), ctx.Queue()
    procs = _run(ctx, _bulkhead_worker, (path, OPS, start, out), PROCS)
    start.set()
    results = [out.get(timeout=60) for _ in procs]
    _join(procs)
    assert len({pid for pid, *_ in results}) == PROCS
    acquired = sum(r[1] for r in results)
    rejected = sum(r[2] for r in results)
    assert acquired + rejected == PROCS * OPS
    for _, _, _, peak in results:
        assert peak <= CAP  # sampled in each process: never above the cap
    s = b.stats()
    assert (s["acquired"], s["rejected"], s["released"]) == (acquired, rejected, acquired)
    assert b.in_flight == 0 and b.outstanding() == 0
    assert region.stats()["permits_held"] == 0


def test_a_breaker_opened_by_one_process_is_open_in_the_others(path: str) -> None:
    fork, spawn = mp.get_context("fork"), mp.get_context("spawn")
    q = fork.Queue()
    p = fork.Process(target=_breaker_failures, args=(path, q))
    p.start()
    _, state = q.get(timeout=60)
    _join([p])
    assert state == "open"
    # Other processes, forked and spawned, and this one: refused.
    out = spawn.Queue()
    others = [spawn.Process(target=_breaker_probe, args=(path, out))]
    others.append(fork.Process(target=_breaker_probe, args=(path, out)))
    for o in others:
        o.start()
    answers = [out.get(timeout=60) for _ in others]
    _join(others)
    assert sorted(a[1:] for a in answers) == [("open", "open"), ("open", "open")]
    cb = shared.Region(path).circuit_breaker(
        "dep", window_size=10, minimum_calls=10, failure_rate_threshold=0.5, open_duration=120
    )
    with pytest.raises(guards.BreakerOpen):
        cb.acquire()
    s = cb.stats()
    assert s["failures"] == 10 and s["closed_to_open"] == 1 and s["rejected_open"] == 3


def test_retry_budget_tokens_stay_in_bounds(path: str) -> None:
    ctx = mp.get_context("fork")
    rb = shared.Region(path).retry_budget("rb", capacity=5, ratio=0.25)
    initial = rb.tokens()
    assert 0 <= initial <= 5
    start, out = ctx.Event(), ctx.Queue()
    procs = _run(ctx, _budget_worker, (path, 2000, start, out), PROCS)
    start.set()
    results = [out.get(timeout=60) for _ in procs]
    _join(procs)
    granted = sum(r[0] for r in results)
    deposits = sum(r[1] for r in results)
    for _, _, lo, hi in results:
        assert 0.0 <= lo and hi <= 5.0
    s = rb.stats()
    assert s["withdrawals"] == granted and s["deposits"] == deposits
    assert s["withdrawals"] + s["refusals"] == PROCS * 2000
    # Every token granted was in the bucket at the start or deposited since.
    assert granted <= initial + 0.25 * deposits + 1e-9
    assert 0.0 <= rb.tokens() <= 5.0


@pytest.mark.parametrize("explicit", [True, False])
def test_a_killed_holders_permits_come_back(path: str, explicit: bool) -> None:
    ctx = mp.get_context("fork")
    region = shared.Region(path, reclaim_interval=0)
    b = region.bulkhead("bh", max_concurrent=2)
    lim = region.limiter("lim", 3)
    ready = ctx.Queue()
    child = ctx.Process(target=_holder, args=(path, ready))
    child.start()
    assert ready.get(timeout=60) == child.pid
    assert b.in_flight == 2 and lim.in_flight == 1 and region.stats()["permits_held"] == 3
    assert b.try_acquire() is None  # the holder is alive: nothing to reclaim
    os.kill(child.pid, signal.SIGKILL)
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    if explicit:
        assert region.reclaim() == {"permits": 3, "claims": 0}
        assert b.in_flight == 0 and lim.in_flight == 0
        assert region.reclaim() == {"permits": 0, "claims": 0}
    else:
        # An acquire that finds the bulkhead full reclaims (reclaim_interval=0) and retries.
        p = b.acquire()
        assert b.in_flight == 1 and lim.in_flight == 0
        p.release()
    s = region.stats()
    assert s["reclaimed_permits"] == 3 and s["permits_held"] == 0
    with b.acquire(), b.acquire():
        assert b.in_flight == 2


def test_a_reopened_region_reclaims_on_open(path: str) -> None:
    ctx = mp.get_context("fork")
    shared.Region(path)
    ready = ctx.Queue()
    child = ctx.Process(target=_holder, args=(path, ready))
    child.start()
    ready.get(timeout=60)
    os.kill(child.pid, signal.SIGKILL)
    child.join(60)
    r = shared.Region(path)  # a restarted worker opening the region
    assert r.stats()["reclaimed_permits"] == 3
    assert r.bulkhead("bh", max_concurrent=2).in_flight == 0


def test_a_killed_probe_holder_fails_its_probe(path: str) -> None:
    """Instants are given explicitly (`now=`), so the test reads no clock."""
    ctx = mp.get_context("fork")
    region = shared.Region(path)
    cb = region.circuit_breaker("dep", **PROBE_SETTINGS)
    t0 = 10**12
    for _ in range(2):
        cb.acquire(now=t0).report("timeout", now=t0)
    assert cb.state_at(t0) == "open"
    at = t0 + 11 * 10**9  # past the open duration: the next call is the probe
    ready = ctx.Queue()
    child = ctx.Process(target=_probe_holder, args=(path, at, ready))
    child.start()
    assert ready.get(timeout=60) is True
    with pytest.raises(guards.BreakerOpen) as e:
        cb.acquire(now=at)
    assert e.value.reason == "half_open_full"
    os.kill(child.pid or 0, signal.SIGKILL)
    child.join(60)
    assert region.reclaim(now=at + 1) == {"permits": 1, "claims": 0}
    # The abandoned probe counts as failed: open again, from the reclaim's instant.
    assert cb.state_at(at + 2) == "open"
    assert cb.stats()["probe_failures"] == 1 and cb.stats()["half_open_to_open"] == 1
    assert cb.state_at(at + 1 + 21 * 10**9) == "half_open"


def test_a_region_passed_to_a_spawned_process_opens_the_same_file(path: str) -> None:
    ctx = mp.get_context("spawn")
    region = shared.Region(path)
    b = region.bulkhead("bh", max_concurrent=CAP)
    out = ctx.Queue()
    with b.acquire():
        p = ctx.Process(target=_region_arg, args=(region, out))  # pickled as its path
        p.start()
        assert out.get(timeout=60) == (path, 2)
        _join([p])
    assert b.in_flight == 0 and b.stats()["acquired"] == 2


def test_guards_made_before_fork_record_the_child_as_owner(path: str) -> None:
    """The child uses the parent's objects (inherited by fork): its permits are its own,
    so killing it gives them back and leaves the parent's alone."""
    ctx = mp.get_context("fork")
    region = shared.Region(path)
    b = region.bulkhead("bh", max_concurrent=3)
    mine = b.acquire()
    ready = ctx.Queue()

    def hold() -> None:
        held = [b.acquire(), b.acquire()]
        ready.put(len(held))
        time.sleep(600)

    child = ctx.Process(target=hold)
    child.start()
    assert ready.get(timeout=60) == 2
    assert b.in_flight == 3
    os.kill(child.pid or 0, signal.SIGKILL)
    child.join(60)
    assert region.reclaim() == {"permits": 2, "claims": 0}
    assert b.in_flight == 1 and not mine.released
    mine.release()
    assert b.in_flight == 0
