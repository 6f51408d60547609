"""CircuitBreaker and KeyedBreakers: opening, half-open probes, closing, slow calls, time
windows, permits released once, with-blocks, validation, threads."""

from __future__ import annotations

import asyncio
import gc
import inspect
import threading
from typing import Any

import pytest
from helpers import config_error, run_threads, type_error

import guards

MS = 1_000_000
S = 1_000_000_000


def breaker(**kw: Any) -> guards.CircuitBreaker:
    kw.setdefault("window_size", 4)
    kw.setdefault("open_duration", 5)
    kw.setdefault("half_open_probes", 2)
    kw.setdefault("probe_timeout", 0.1)
    return guards.CircuitBreaker(**kw)


def fail(b: guards.CircuitBreaker, n: int, now: int) -> list[Any]:
    return [b.acquire(now=now).on_failure(now=now) for _ in range(n)]


def test_defaults_match_core_and_the_signature() -> None:
    cfg = guards.CircuitBreaker().config()
    assert cfg == {
        "window_kind": "count",
        "window_size": 100,
        "window_duration": 10.0,
        "window_buckets": 10,
        "failure_rate_threshold": 0.5,
        "slow_call_duration": 60.0,
        "slow_call_rate_threshold": 1.0,
        "minimum_calls": 0,
        "open_duration": 5.0,
        "open_duration_multiplier": 1.0,
        "max_open_duration": 300.0,
        "half_open_probes": 3,
        "probe_timeout": 1.0,
        "capacity": 128,  # the fewest cells that hold the window
    }
    sig = {k: p.default for k, p in inspect.signature(guards.CircuitBreaker).parameters.items()}
    assert sig == {**cfg, "capacity": 0}  # 0: fit the window


def test_opens_on_a_window_of_failures_then_probes_and_closes() -> None:
    b = breaker()
    assert fail(b, 3, 0) == ["counted"] * 3
    assert b.state_at(0) == "closed"
    assert fail(b, 1, 0) == ["opened"]
    assert b.state_at(0) == "open"
    with pytest.raises(guards.BreakerOpen) as info:
        b.acquire(now=1 * S)
    e = info.value
    assert (e.reason, e.retry_at, e.retry_after, e.retry_after_ns) == ("open", 5 * S, 4.0, 4 * S)
    assert b.try_acquire(now=1 * S) is None
    assert b.state_at(5 * S) == "half_open"
    p1, p2 = b.acquire(now=5 * S), b.acquire(now=5 * S)
    assert p1.is_probe and p1.kind == "probe" and p1.probe_timeout == 0.1 and p1.probe_timeout_ns == 100 * MS
    with pytest.raises(guards.BreakerOpen) as info:
        b.acquire(now=5 * S)
    assert info.value.reason == "half_open_full"
    assert p1.on_success(now=5 * S + 1) == "probe_passed"
    assert p2.on_success(now=5 * S + 2) == "closed"
    assert b.state_at(6 * S) == "closed"
    assert b.window_counts(now=6 * S) == {"calls": 0, "failures": 0, "slow": 0}
    s = b.stats()
    assert (s["closed_to_open"], s["half_open_to_closed"], s["probes_admitted"], s["rejected_open"]) == (1, 1, 2, 2)


def test_a_failed_probe_reopens() -> None:
    b = breaker(half_open_probes=1)
    fail(b, 4, 0)
    p = b.acquire(now=5 * S)
    assert p.on_failure(now=5 * S) == "reopened"
    assert b.status()["half_open_at"] == 10 * S
    assert b.status()["consecutive_opens"] == 2


def test_mixed_outcomes_below_threshold_stay_closed() -> None:
    b = breaker(failure_rate_threshold=0.75)
    for i in range(20):
        p = b.acquire(now=i)
        effect = p.on_failure(now=i) if i % 2 else p.on_success(now=i)
        assert effect == "counted"
    assert b.window_counts(now=20) == {"calls": 4, "failures": 2, "slow": 0}


def test_slow_calls_count() -> None:
    b = breaker(slow_call_duration=0.1, slow_call_rate_threshold=0.5, failure_rate_threshold=1.0)
    b.acquire(now=0).on_success(now=50 * MS)
    b.acquire(now=0).on_success(now=150 * MS)
    b.acquire(now=0).on_success(now=10 * MS)
    assert b.acquire(now=0).on_success(now=200 * MS) == "opened"
    assert b.stats()["slow_calls"] == 2


def test_time_window(clock: guards.FakeClock) -> None:
    b = guards.CircuitBreaker(window_kind="time", window_duration=3, window_buckets=3, minimum_calls=2)
    b.acquire().on_failure()
    clock.advance(4)
    b.acquire().on_failure()  # the first failure has left the window
    assert b.state == "closed"
    assert b.acquire().on_failure() == "opened"


def test_outcomes_are_reported_once_and_permits_expose_their_facts() -> None:
    b = breaker()
    p = b.acquire(now=7)
    assert (p.kind, p.is_probe, p.generation, p.acquired_at, p.probe_timeout) == ("call", False, 0, 7, None)
    assert p.on_success(now=8) == "counted"
    assert p.done
    assert p.on_success(now=9) is None and p.on_failure(now=9) is None and p.on_ignore() is False
    q = b.acquire(now=9)
    assert q.on_ignore() is True and q.on_failure() is None
    assert b.stats()["successes"] == 1 and b.stats()["ignored"] == 1


def test_with_blocks_report_success_failure_or_ignore() -> None:
    b = breaker(window_size=10)
    with b.acquire(now=0):
        pass
    with pytest.raises(ValueError):
        with b.acquire(now=0):
            raise ValueError("callee failed")
    with pytest.raises(guards.BulkheadFull):
        with b.acquire(now=0):
            raise guards.BulkheadFull("local refusal")
    with pytest.raises(KeyboardInterrupt):
        with b.acquire(now=0):
            raise KeyboardInterrupt
    s = b.stats()
    assert (s["successes"], s["failures"], s["ignored"]) == (1, 1, 2)


@pytest.mark.parametrize("abandon", [KeyboardInterrupt, asyncio.CancelledError, GeneratorExit])
def test_a_probe_abandoned_by_a_base_exception_is_a_failed_probe(
    clock: guards.FakeClock, abandon: type[BaseException]
) -> None:
    """Issue 8: ``BreakerPermit.__exit__`` used to report any non-``Exception`` as ignored,
    a half-open probe included. The contract (docs/outcomes.md) says ``cancelled``: nothing
    for an ordinary call, a failure for a probe (a breaker must not close on probes that
    never answered), as ``guarded()`` and core report it."""
    b = breaker(window_size=4, minimum_calls=4, half_open_probes=1)
    with pytest.raises(abandon):
        with b.acquire():
            raise abandon()
    assert b.stats()["ignored"] == 1 and b.state == "closed"  # an ordinary call: nothing
    for _ in range(4):
        b.acquire().on_failure()
    assert b.state == "open"
    clock.advance(5.5)
    probe = b.acquire()
    assert probe.is_probe and b.state == "half_open"
    with pytest.raises(abandon):
        with probe:
            raise abandon()
    assert b.state == "open" and b.stats()["probe_failures"] == 1
    # The same through guarded(): one rule.
    clock.advance(5.5)
    with pytest.raises(abandon):
        with guards.guarded(b):
            raise abandon()
    assert b.state == "open" and b.stats()["probe_failures"] == 2


def test_a_forgotten_permit_is_ignored_when_collected() -> None:
    b = breaker(half_open_probes=1)
    fail(b, 4, 0)
    b.acquire(now=5 * S)  # a probe, dropped at once
    gc.collect()
    assert b.stats()["ignored"] == 1
    assert b.acquire(now=5 * S).is_probe  # its slot came back


@pytest.mark.parametrize("capacity", [1024, 8192])
def test_larger_capacities_hold_larger_windows(capacity: int) -> None:
    # The window is judged once it holds `capacity` outcomes: a single failure among them
    # opens a breaker whose threshold is tiny. (While a count window fills, core scans
    # it on every outcome, so filling a 65536 window takes a while: see the next test.)
    b = guards.CircuitBreaker(
        window_size=capacity,
        capacity=capacity,
        minimum_calls=capacity,
        failure_rate_threshold=1e-9,
    )
    assert b.config()["capacity"] == capacity
    assert b.acquire(now=0).on_failure(now=0) == "counted"  # not enough calls yet
    for _ in range(capacity - 2):
        assert b.acquire(now=0).on_success(now=0) == "counted"
    assert b.acquire(now=0).on_failure(now=0) == "opened"


def test_the_largest_capacity() -> None:
    b = guards.CircuitBreaker(window_size=65536, capacity=65536, minimum_calls=3)
    for _ in range(3):
        b.acquire(now=0).on_failure(now=0)
    assert b.state_at(0) == "open"
    assert b.config()["capacity"] == 65536


@pytest.mark.parametrize(
    ("cls", "size"),
    [("capacity", n) for n in (128, 1024, 8192, 65536)] + [("slots", n) for n in (4, 16, 64, 256)],
)
def test_every_size_builds_and_checks_its_settings(cls: str, size: int) -> None:
    # The larger sizes are built on a helper thread: a bad setting is still named.
    def build(**kwargs: Any) -> Any:
        if cls == "capacity":
            return guards.CircuitBreaker(capacity=size, **kwargs)
        return guards.KeyedBreakers(slots=size, **kwargs)

    b = build(window_size=1)
    assert b.config()[cls] == size
    permit = b.acquire(now=0) if cls == "capacity" else b.acquire("k", now=0)
    assert permit.on_failure(now=0) == "opened"
    with config_error("window_size", "zero"):
        build(window_size=0)


@pytest.mark.parametrize(
    ("kwargs", "field", "kind"),
    [
        ({"failure_rate_threshold": float("nan")}, "failure_rate_threshold", "not_finite"),
        ({"failure_rate_threshold": 0.0}, "failure_rate_threshold", "zero"),
        ({"failure_rate_threshold": 1.5}, "failure_rate_threshold", "out_of_range"),
        ({"slow_call_rate_threshold": -0.5}, "slow_call_rate_threshold", "negative"),
        ({"slow_call_duration": 0}, "slow_call_duration", "zero"),
        ({"window_size": 0}, "window_size", "zero"),
        ({"window_size": 65537}, "window_size", "out_of_range"),
        ({"window_kind": "time", "window_buckets": 21846, "window_duration": 21846}, "window_buckets", "out_of_range"),
        ({"window_duration": 10.000000001}, "window_duration", "inconsistent"),
        ({"window_size": 20, "minimum_calls": 21}, "minimum_calls", "inconsistent"),
        ({"open_duration": 0}, "open_duration", "zero"),
        ({"open_duration_multiplier": 0.5}, "open_duration_multiplier", "out_of_range"),
        ({"open_duration": 5, "max_open_duration": 1}, "max_open_duration", "inconsistent"),
        ({"half_open_probes": 1001}, "half_open_probes", "out_of_range"),
        ({"probe_timeout": -1}, "probe_timeout", "negative"),
        ({"window_kind": "sliding"}, "window_kind", "out_of_range"),
        ({"capacity": 65537}, "capacity", "out_of_range"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, Any], field: str, kind: str) -> None:
    with config_error(field, kind):
        guards.CircuitBreaker(**kwargs)


def test_wrong_types() -> None:
    with type_error("window_size"):
        guards.CircuitBreaker(window_size=10.0)  # type: ignore[arg-type]
    with type_error("failure_rate_threshold"):
        guards.CircuitBreaker(failure_rate_threshold="half")  # type: ignore[arg-type]
    with type_error("open_duration"):
        guards.CircuitBreaker(open_duration=[5])  # type: ignore[arg-type]
    with type_error("now"):
        guards.CircuitBreaker().acquire(now=0.5)  # type: ignore[arg-type]


def test_keyed_breakers_are_independent() -> None:
    ks = guards.KeyedBreakers(slots=4, window_size=1, open_duration=1)
    assert ks.acquire("db-1", now=0).on_failure(now=0) == "opened"
    assert ks.state("db-1", now=0) == "open"
    assert ks.state("db-2", now=0) == "closed"
    assert ks.acquire(b"db-2", now=0).on_success(now=0) == "counted"
    with pytest.raises(guards.BreakerOpen):
        ks.acquire("db-1", now=0)
    assert "db-1" in ks and guards.KeyedBreakers.key_of("db-1") in ks and "db-9" not in ks
    for k in ("a", "b"):
        assert ks.get_or_insert(k)
    assert len(ks) == 4
    assert not ks.get_or_insert("e")
    with pytest.raises(RuntimeError, match="full"):
        ks.acquire("e", now=0)
    assert ks.stats() == {"entries": 4, "full": 2}
    status = ks.status("db-1")
    assert status is not None and status["state"] == "open"
    assert ks.status("nope") is None and ks.stats("nope") is None
    assert guards.KeyedBreakers.key_of("db-1") == guards.fnv1a64("db-1")
    assert guards.KeyedBreakers(slots=5).slots == 16  # rounded up
    with config_error("slots", "out_of_range"):
        guards.KeyedBreakers(slots=257)
    with config_error("slots", "zero"):
        guards.KeyedBreakers(slots=0)
    with type_error("key"):
        ks.acquire(1.5, now=0)  # type: ignore[arg-type]


def test_threads_share_one_breaker() -> None:
    b = guards.CircuitBreaker(window_size=50, failure_rate_threshold=1.0, open_duration=1)
    outcomes: dict[str, int] = {}
    lock = threading.Lock()

    def work(t: int) -> None:
        mine: dict[str, int] = {}
        for k in range(2000):
            p = b.try_acquire(now=k)
            if p is None:
                mine["rejected"] = mine.get("rejected", 0) + 1
                continue
            effect = p.on_success(now=k) if (k + t) % 3 else p.on_failure(now=k)
            assert effect in ("counted", "opened", "discarded")
            mine[str(effect)] = mine.get(str(effect), 0) + 1
        with lock:
            for key, n in mine.items():
                outcomes[key] = outcomes.get(key, 0) + n

    run_threads(4, work)
    s = b.stats()
    assert sum(outcomes.values()) == 8000
    assert s["successes"] + s["failures"] + s["discarded"] == 8000 - outcomes.get("rejected", 0)
    assert s["closed_to_open"] == 0  # a third failing is below the 100% threshold
    assert b.state_at(0) == "closed"


def test_threads_on_keyed_breakers() -> None:
    ks = guards.KeyedBreakers(slots=16, window_size=10)

    def work(t: int) -> None:
        for k in range(1000):
            ks.acquire(f"host-{k % 8}", now=k).on_success(now=k)

    run_threads(4, work)
    assert len(ks) == 8
    total = 0
    for h in range(8):
        st = ks.stats(f"host-{h}")
        assert st is not None
        total += st["successes"]
    assert total == 4000


def test_none_for_a_number_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="window_size"):
        guards.CircuitBreaker(window_size=None)  # type: ignore[arg-type]


def test_probes_never_reported_do_not_block_for_ever() -> None:
    with guards.FakeClock(now=10**9) as clock:
        b = guards.CircuitBreaker(window_size=2, open_duration=0.5, probe_timeout=1.0)
        for _ in range(2):
            b.acquire().on_failure()
        clock.advance(0.6)
        lost = [b.try_acquire() for _ in range(3)]  # probes taken, never reported
        assert all(p is not None and p.is_probe for p in lost)
        clock.advance(10.0)  # well past the probe timeout
        assert b.acquire().is_probe
        del lost
