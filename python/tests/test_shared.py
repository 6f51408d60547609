"""guards.shared in one process: regions, the guards they hold, their permits, mismatches,
independence of regions, guarded() with host-wide guards, and bad input."""

from __future__ import annotations

import gc
import time
import os
from pathlib import Path

import pytest

import guards
from guards import shared


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "region")


@pytest.fixture
def region(path: str) -> shared.Region:
    return shared.Region(path)


# ------------------------------------------------------------------ the region


def test_a_region_is_created_once_and_reopened(path: str) -> None:
    a = shared.Region(path)
    assert a.path == path and os.path.exists(path)
    a.bulkhead("db", max_concurrent=3)
    b = shared.Region(path)
    assert [g["name"] for g in b.guards()] == ["db"]
    assert b.guards()[0]["kind"] == "bulkhead"
    s = b.stats()
    assert s["guards"] == 1 and s["max_guards"] == 64 and s["permit_slots"] == 4096
    assert s["data_bytes"] == 16 << 20 and s["scans"] >= 2  # each open scans


def test_capacities_apply_when_created(path: str) -> None:
    shared.Region(path, max_guards=8, permit_slots=16, data_bytes=8192)
    s = shared.Region(path, max_guards=32).stats()  # an existing region keeps its own
    assert (s["max_guards"], s["permit_slots"], s["data_bytes"]) == (8, 16, 8192)


def test_a_bare_name_lives_in_dev_shm() -> None:
    name = f"guards-test-{os.getpid()}"
    r = shared.Region(name)
    try:
        assert r.path == f"/dev/shm/{name}" and os.path.exists(r.path)
    finally:
        shared.Region.remove(name)
    assert not os.path.exists(f"/dev/shm/{name}")


def test_path_like_and_remove(tmp_path: Path) -> None:
    p = tmp_path / "r2"
    r = shared.Region(p)
    assert r.path == str(p)
    shared.Region.remove(p)
    with pytest.raises(shared.GuardNotFound):
        shared.Region.remove(p)
    with pytest.raises(shared.GuardNotFound):
        shared.Region(p, create=False)


def test_mode_is_applied(path: str) -> None:
    shared.Region(path, mode=0o640)
    assert os.stat(path).st_mode & 0o777 == 0o640


# ------------------------------------------------------------------ bulkhead


def test_bulkhead_permits(region: shared.Region) -> None:
    b = region.bulkhead("db", max_concurrent=2)
    assert b.max_concurrent == 2 and b.name == "db" and b.config() == {"max_concurrent": 2}
    p = b.acquire()
    with b.acquire():
        assert b.in_flight == 2 and b.outstanding() == 2 and b.available == 0
        with pytest.raises(guards.BulkheadFull) as e:
            b.acquire()
        assert (e.value.in_flight, e.value.max_concurrent, e.value.reason) == (2, 2, "full")
        assert b.try_acquire() is None
    assert b.in_flight == 1
    assert p.release() is True and p.release() is False and p.released
    assert b.in_flight == 0 and b.outstanding() == 0
    assert b.stats() == {"acquired": 2, "rejected": 2, "released": 2, "in_flight": 0}
    assert region.stats()["permits_held"] == 0


def test_a_permit_collected_without_an_outcome_is_handed_back(region: shared.Region) -> None:
    b = region.bulkhead("db", max_concurrent=1)
    b.acquire()  # dropped at once
    gc.collect()
    assert b.in_flight == 0
    assert b.try_acquire() is not None


def test_two_objects_of_one_name_are_one_guard(path: str) -> None:
    a = shared.Region(path).bulkhead("db", max_concurrent=2)
    b = shared.Region(path).bulkhead("db", max_concurrent=2)
    with a.acquire(), b.acquire():
        assert a.in_flight == b.in_flight == 2
        assert a.try_acquire() is None and b.try_acquire() is None


def test_call_and_acall(region: shared.Region) -> None:
    import asyncio

    b = region.bulkhead("db", max_concurrent=1)
    assert b.call(lambda x, y=0: x + y, 1, y=2) == 3
    with pytest.raises(ZeroDivisionError):
        b.call(lambda: 1 / 0)
    assert b.in_flight == 0

    async def work(x: int) -> int:
        assert b.in_flight == 1
        return x * 2

    assert asyncio.run(b.acall(work, 21)) == 42
    assert b.in_flight == 0 and b.stats()["acquired"] == 3


# ------------------------------------------------------------------ breaker


def test_breaker_opens_on_failures_and_reports_effects(region: shared.Region) -> None:
    cb = region.circuit_breaker("stock", window_size=4, minimum_calls=4, open_duration=60)
    assert cb.state == "closed" and cb.capacity == 128
    effects = []
    for _ in range(4):
        p = cb.acquire()
        assert p.kind == "call" and not p.is_probe
        effects.append(p.report("timeout"))
        assert p.report("timeout") is None  # once
    assert effects == ["counted", "counted", "counted", "opened"]
    assert cb.state == "open"
    with pytest.raises(guards.BreakerOpen) as e:
        cb.acquire()
    assert e.value.reason == "open" and e.value.retry_after > 0
    assert cb.try_acquire() is None
    assert cb.stats()["failures"] == 4 and cb.stats()["rejected_open"] == 2


def test_breaker_with_block_classifies_like_the_package(region: shared.Region) -> None:
    cb = region.circuit_breaker("b", window_size=2, minimum_calls=2)
    with pytest.raises(KeyError):
        with cb.acquire():
            raise KeyError("a bug")  # a programming error: ignored
    with pytest.raises(TimeoutError):
        with cb.acquire():
            raise TimeoutError()
    s = cb.stats()
    assert (s["ignored"], s["failures"], s["successes"]) == (1, 1, 0)
    with cb.acquire():
        pass
    assert cb.stats()["successes"] == 1


def test_half_open_probe(region: shared.Region, clock: guards.FakeClock) -> None:
    cb = region.circuit_breaker(
        "p", window_size=2, minimum_calls=2, open_duration=1.0, half_open_probes=1
    )
    for _ in range(2):
        cb.acquire().on_failure()
    assert cb.state == "open"
    clock.advance(2.0)
    probe = cb.acquire()
    assert probe.is_probe and probe.kind == "probe" and probe.probe_timeout == 1.0
    with pytest.raises(guards.BreakerOpen) as e:
        cb.acquire()
    assert e.value.reason == "half_open_full"
    assert probe.on_success() == "closed"
    assert cb.state == "closed"


# ------------------------------------------------------------------ limiter, admission, budget


def test_limiter_and_admission(region: shared.Region) -> None:
    lim = region.limiter("lim", 2)
    assert lim.limit == 2
    a, b = lim.acquire(), lim.acquire(priority=0)
    with pytest.raises(guards.LimitExceeded):
        lim.acquire()
    assert lim.try_acquire() is None
    assert a.report("success") is True and b.on_dropped() is True and a.on_success() is False
    assert lim.in_flight == 0

    adm = region.admission("door", [1])
    t = adm.acquire()
    with pytest.raises(guards.AdmissionRejected) as e:
        adm.acquire()
    assert e.value.reason == "limit_reached"
    t.on_ignore()
    assert adm.in_flight == 0


def test_retry_budget_is_a_package_retry_budget(path: str) -> None:
    rb = shared.Region(path).retry_budget("rb", capacity=3, ratio=0.5)
    assert isinstance(rb, guards.RetryBudget)
    other = shared.Region(path).retry_budget("rb", capacity=3, ratio=0.5)
    start = rb.tokens()
    assert rb.withdraw() is not None
    assert other.tokens() == start - 1  # one balance
    assert other.stats()["withdrawals"] == 1


# ------------------------------------------------------------------ guarded()


def test_guarded_takes_host_wide_guards(region: shared.Region) -> None:
    cb = region.circuit_breaker("g", window_size=2, minimum_calls=2, open_duration=60)
    bh = region.bulkhead("gb", max_concurrent=1)
    with guards.guarded(cb, bh):
        assert bh.in_flight == 1
    assert bh.in_flight == 0 and cb.stats()["successes"] == 1

    @guards.guarded(cb, bh, fallback="cached")
    def fetch() -> str:
        raise ConnectionError("down")

    assert fetch() == "cached" and fetch() == "cached"
    assert cb.state == "open" and bh.in_flight == 0
    assert fetch() == "cached"  # refused by the breaker: the fallback again
    assert cb.stats()["rejected_open"] >= 1

    lim = region.limiter("gl", 4)
    with guards.guarded(lim, priority=0):
        assert lim.in_flight == 1
    assert lim.in_flight == 0


# ------------------------------------------------------------------ mismatches


def test_mismatch_names_what_differs(region: shared.Region) -> None:
    region.circuit_breaker("stock", window_size=20)
    with pytest.raises(shared.GuardMismatch) as e:
        region.bulkhead("stock", max_concurrent=4)
    assert (e.value.field, e.value.existing, e.value.requested) == (
        "kind",
        "circuit_breaker",
        "bulkhead",
    )
    assert e.value.name == "stock" and "circuit_breaker" in str(e.value)
    assert e.value.differences is None
    with pytest.raises(shared.GuardMismatch) as e:
        region.circuit_breaker("stock", window_size=20, failure_rate_threshold=0.25)
    assert e.value.field == "config" and "settings" in str(e.value)
    assert e.value.differences == {"failure_rate_threshold": (0.5, 0.25)}
    assert "failure_rate_threshold is 0.5 there, 0.25 here" in str(e.value)
    region.bulkhead("db", max_concurrent=4)
    with pytest.raises(shared.GuardMismatch) as e:
        region.bulkhead("db", max_concurrent=5)
    assert e.value.differences == {"max_concurrent": (4, 5)}
    region.retry_budget("rb", mode="grpc")
    with pytest.raises(shared.GuardMismatch) as e:
        region.retry_budget("rb", mode="token_bucket")
    assert e.value.field == "config" and "mode" in e.value.differences
    with pytest.raises(shared.GuardMismatch) as e:
        region.circuit_breaker("stock", window_size=20, capacity=1024)
    assert (e.value.field, e.value.existing, e.value.requested) == ("capacity", 128, 1024)
    assert isinstance(e.value, shared.RegionError)
    region.circuit_breaker("stock", window_size=20)  # the same settings: fine


def test_a_second_region_is_independent(tmp_path: Path) -> None:
    a = shared.Region(str(tmp_path / "a"))
    b = shared.Region(str(tmp_path / "b"))
    ba = a.bulkhead("db", max_concurrent=1)
    bb = b.bulkhead("db", max_concurrent=5)  # another config: another region, no mismatch
    with ba.acquire():
        assert ba.try_acquire() is None
        assert bb.in_flight == 0 and bb.try_acquire() is not None
    assert [g["name"] for g in b.guards()] == ["db"]
    assert b.stats()["permits_held"] == 0


# ------------------------------------------------------------------ full regions


def test_region_full_and_permit_slots_exhausted(path: str) -> None:
    r = shared.Region(path, max_guards=1, permit_slots=1)
    b = r.bulkhead("one", max_concurrent=5)
    with pytest.raises(shared.RegionFull):
        r.bulkhead("two", max_concurrent=5)
    p = b.acquire()
    with pytest.raises(shared.PermitSlotsExhausted):
        b.acquire()
    assert b.in_flight == 1  # the refused acquire left the bulkhead alone
    p.release()
    b.acquire().release()


# ------------------------------------------------------------------ bad input


def test_bad_input(path: str, tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        shared.Region(123)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        shared.Region("")
    with pytest.raises(guards.ConfigError) as e:
        shared.Region(path, max_guards=0)
    assert e.value.field == "max_guards"
    with pytest.raises(guards.ConfigError) as e:
        shared.Region(path, permit_slots=1 << 30)
    assert e.value.field == "permit_slots"
    with pytest.raises(guards.ConfigError) as e:
        shared.Region(path, data_bytes=100)
    assert e.value.field == "data_bytes"
    with pytest.raises(guards.ConfigError) as e:
        shared.Region(path, mode=0o1777)
    assert e.value.field == "mode"
    with pytest.raises(guards.ConfigError):
        shared.Region(path, wait_timeout=-1)
    with pytest.raises(guards.ConfigError):
        shared.Region(path, reclaim_interval=7200)
    with pytest.raises(TypeError):
        shared.Region(path, create="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        shared.Region(path, bogus=1)  # type: ignore[call-arg]
    with pytest.raises(FileNotFoundError):
        shared.Region(str(tmp_path / "no" / "such" / "dir"))
    junk = tmp_path / "junk"
    junk.write_bytes(b"not a region" * 1000)
    with pytest.raises(shared.RegionInvalid):
        shared.Region(str(junk))

    r = shared.Region(path)
    with pytest.raises(TypeError):
        r.bulkhead(5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        r.bulkhead("")
    with pytest.raises(ValueError):
        r.bulkhead("x" * 65)
    with pytest.raises(guards.ConfigError):
        r.bulkhead("b", max_concurrent=0)
    with pytest.raises(TypeError):
        r.circuit_breaker("c", windows_size=3)
    with pytest.raises(guards.ConfigError):
        r.limiter("l", partitions=[{"share": 2.0}])
    with pytest.raises(guards.ConfigError):
        r.retry_budget("r", mode="nope")
    assert r.guards() == []  # nothing was created by the refused calls

    b = r.bulkhead("b", max_concurrent=1)
    p = b.acquire()
    with pytest.raises(ValueError):
        p.report("maybe")
    with pytest.raises(TypeError):
        p.report(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b.acquire(operation=5)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        b.no_such_method  # noqa: B018
    with pytest.raises(AttributeError):
        b._private  # noqa: B018
    assert p.release()
    with pytest.raises(TypeError):
        r.reclaim(now="soon")  # type: ignore[arg-type]


# ------------------------------------------------------------------ kinds without permits


def test_kinds_without_permits_are_the_package_classes(path: str) -> None:
    a, b = shared.Region(path), shared.Region(path)
    t1, t2 = a.adaptive_throttle("t", k=2.0), b.adaptive_throttle("t", k=2.0)
    assert isinstance(t1, guards.AdaptiveThrottle)
    t1.on_accepted()
    assert t2.stats()["accepted"] == 1
    with guards.guarded(t2):  # the package's own throttle: the native adapter
        pass
    assert t1.stats()["admitted"] == 1 and t1.stats()["accepted"] == 2

    l1, l2 = a.latency_tracker("lt"), b.latency_tracker("lt")
    assert isinstance(l1, guards.LatencyTracker)
    for ms in range(1, 101):
        l1.record(ms / 1000)
    assert l2.count() == 100 and l2.quantile(0.5) == l1.quantile(0.5)

    h1, h2 = a.hedging("h", max_hedges=2), b.hedging("h", max_hedges=2)
    assert isinstance(h1, guards.Hedging) and h2.config()["max_hedges"] == 2
    assert h1.stats() == h2.stats()

    br = a.brownout("search", optional=True)
    assert isinstance(br, guards.Brownout) and b.brownout("search", optional=True).config()["optional"]
    with pytest.raises(shared.GuardMismatch) as e:
        b.brownout("search", optional=False)
    assert e.value.differences == {"optional": (True, False)}
    kinds = {g["name"]: g["kind"] for g in a.guards()}
    assert kinds == {
        "t": "adaptive_throttle",
        "lt": "latency_tracker",
        "h": "hedging",
        "search": "brownout",
    }


# ------------------------------------------------------------------ keyed breakers


def test_keyed_breakers(path: str) -> None:
    a = shared.Region(path).keyed_breakers("hosts", slots=4, window_size=2, minimum_calls=2)
    b = shared.Region(path).keyed_breakers("hosts", slots=4, window_size=2, minimum_calls=2)
    assert a.slots == 4 and a.config()["slots"] == 4 and len(a) == 0
    for _ in range(2):
        with pytest.raises(ConnectionError):
            with a.acquire("db-1"):
                raise ConnectionError()
    assert b.state("db-1") == "open" and b.state("db-2") == "closed" and "db-1" in b
    with pytest.raises(guards.BreakerOpen) as e:
        b.acquire("db-1")
    assert e.value.reason == "open"
    assert b.try_acquire("db-1") is None
    p = b.acquire("db-2")
    assert p.kind == "call" and p.report("success") == "counted"
    assert b.stats() == {"entries": 2, "full": 0}
    assert b.stats("db-1")["failures"] == 2 and b.stats("nope") is None
    for k in ("c", "d"):
        b.acquire(k).on_ignore()
    with pytest.raises(RuntimeError):
        b.acquire("e")  # 4 keys: the set is full
    assert b.call("db-2", lambda: 5) == 5
    with guards.guarded(a, key="db-2"):
        pass
    assert a.stats("db-2")["successes"] == 3
    with pytest.raises(TypeError):
        guards.guarded(a)  # no key
    with pytest.raises(shared.GuardMismatch) as m:
        shared.Region(path).keyed_breakers("hosts", slots=16, window_size=2, minimum_calls=2)
    assert m.value.field == "capacity"
    with pytest.raises(guards.ConfigError):
        shared.Region(path).keyed_breakers("k2", slots=0)
    with pytest.raises(TypeError):
        a.acquire(1.5)


def test_methods_kept_after_the_region_objects_are_gone(path: str) -> None:
    def take() -> tuple[object, object]:
        r = shared.Region(path)
        lim = r.limiter("lim", 3)
        return lim.stats, r.retry_budget("rb").tokens  # a view's and a budget's methods

    stats, tokens = take()
    gc.collect()
    assert stats()["limit"] == 3  # type: ignore[operator]
    assert tokens() >= 0  # type: ignore[operator]


# ------------------------------------------------------------------ events


def test_state_changes_and_refusals_are_emitted(path: str, clock: guards.FakeClock) -> None:
    got: list[guards.events.Event] = []
    with guards.events.on(guards.events.KINDS, got.append):
        region = shared.Region(path)
        settings = {
            "window_size": 2,
            "minimum_calls": 2,
            "open_duration": 1.0,
            "half_open_probes": 1,
        }
        cb = region.circuit_breaker("dep", **settings)
        for _ in range(2):
            with pytest.raises(TimeoutError):
                with cb.acquire(operation="fetch"):
                    raise TimeoutError
        with pytest.raises(guards.BreakerOpen):
            cb.acquire(operation="fetch")
        # Another object of the same breaker (another worker's view) announces what it sees.
        other = shared.Region(path).circuit_breaker("dep", **settings)
        assert other.try_acquire() is None
        clock.advance(1.5)
        other.acquire(operation="probe").report("success")
        keyed = region.keyed_breakers("hosts", slots=4, window_size=1, minimum_calls=1)
        with pytest.raises(ConnectionError):
            with keyed.acquire("db-1"):
                raise ConnectionError
    changes = [(e.old, e.new, e.operation) for e in got if e.kind == "state_change"]
    assert changes == [
        ("closed", "open", "fetch"),  # the first object saw it open
        ("closed", "open", None),  # the other object's first look
        ("open", "half_open", "probe"),
        ("half_open", "closed", "probe"),
        ("closed", "open", "db-1"),
    ]
    refusals = [e for e in got if e.kind == "refusal"]
    assert len(refusals) == 1 and isinstance(refusals[0].exception, guards.BreakerOpen)


def test_threads_share_the_cap_and_the_counters(region: shared.Region) -> None:
    import threading

    b = region.bulkhead("t", max_concurrent=2)
    peaks: list[int] = []
    counts: list[tuple[int, int]] = []

    def work() -> None:
        got = refused = peak = 0
        for i in range(2000):
            p = b.try_acquire()
            if p is None:
                refused += 1
                continue
            got += 1
            peak = max(peak, b.in_flight)
            if i % 5 == 0:
                time.sleep(0)
            p.release()
        peaks.append(peak)
        counts.append((got, refused))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(peaks) <= 2
    got = sum(c[0] for c in counts)
    refused = sum(c[1] for c in counts)
    assert got + refused == 8000
    assert b.stats() == {"acquired": got, "rejected": refused, "released": got, "in_flight": 0}
    assert region.stats()["permits_held"] == 0


def test_async_paths(region: shared.Region) -> None:
    import asyncio

    cb = region.circuit_breaker("a", window_size=2, minimum_calls=2, open_duration=60)
    bh = region.bulkhead("ab", max_concurrent=1)

    @guards.guarded(cb, bh)
    async def fetch(fail: bool) -> str:
        assert bh.in_flight == 1
        await asyncio.sleep(0)
        if fail:
            raise ConnectionError("down")
        return "ok"

    async def main() -> None:
        assert await fetch(False) == "ok"
        async with guards.guarded(bh):
            assert bh.in_flight == 1
        with pytest.raises(ConnectionError):
            await cb.acall(fetch, True)  # fetch's failure opens it (1 of 2 calls)
        s = cb.stats()  # acall's own permit ended with the generation: discarded
        assert (s["failures"], s["discarded"], s["closed_to_open"]) == (1, 1, 1)
        with pytest.raises(guards.BreakerOpen):
            await fetch(False)

    asyncio.run(main())
    assert bh.in_flight == 0 and cb.state == "open"
    assert cb.outstanding() == 0 and region.stats()["permits_held"] == 0
