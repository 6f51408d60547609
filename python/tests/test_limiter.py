"""Limiter: permits and outcomes, partitions, adaptive limits, refusals, threads."""

from __future__ import annotations

import gc
import inspect
import threading
from typing import Any

import pytest
from helpers import config_error, run_threads, type_error

import guards

MS = 1_000_000


def test_defaults_match_core_and_the_signature() -> None:
    lim = guards.Limiter()
    cfg = lim.config()
    assert cfg["limit"] == guards.VegasLimit().config()
    assert cfg["partitions"] == [{"share": 1.0, "max_in_flight": 2**64 - 1}] * 8
    rest = {k: v for k, v in cfg.items() if k not in ("limit", "partitions")}
    assert rest == {"window": 0.1, "min_window_samples": 10, "min_retry_after": 0.001, "max_retry_after": 1.0}
    sig = {k: p.default for k, p in inspect.signature(guards.Limiter).parameters.items()}
    assert sig == {**rest, "limit": None, "partitions": None}


def test_fixed_limit_and_outcomes() -> None:
    lim = guards.Limiter(limit=2)
    a = lim.acquire(now=0)
    b = lim.acquire(priority=3, now=0)
    assert (a.in_flight, a.threshold, a.priority, b.priority, b.start) == (1, 2, 1, 3, 0)
    with pytest.raises(guards.LimitExceeded) as info:
        lim.acquire(now=0)
    e = info.value
    assert (e.reason, e.threshold, e.in_flight, e.priority) == ("limit_reached", 2, 2, 1)
    assert e.retry_after == 0.001 and e.retry_after_ns == MS
    assert lim.try_acquire(now=0) is None
    assert a.on_success(now=5 * MS) is True
    assert a.on_success(now=5 * MS) is False and a.on_dropped() is False and a.on_ignore() is False
    assert a.done
    assert b.on_dropped(now=5 * MS)
    c = lim.acquire(now=0)
    assert c.on_ignore()
    s = lim.stats()
    assert (s["acquired"], s["succeeded"], s["dropped"], s["ignored"], s["in_flight"]) == (3, 1, 1, 1, 0)
    assert s["rejected_limit_reached"] == 2
    assert lim.rejected_by_priority() == [0, 2, 0, 0, 0, 0, 0, 0]


def test_with_block_reports_the_outcome() -> None:
    lim = guards.Limiter(limit=10)
    with lim.acquire(now=0):
        pass
    with pytest.raises(TimeoutError):
        with lim.acquire(now=0):
            raise TimeoutError
    # Another guard's refusal is `rejected` (the call never left: no sample), the same
    # under `with permit:` as under guards.guarded() (issue 8: it used to be a drop here).
    with pytest.raises(guards.BreakerOpen):
        with lim.acquire(now=0):
            raise guards.BreakerOpen("downstream")
    with pytest.raises(KeyError):
        with lim.acquire(now=0):
            raise KeyError("a bug, not overload")
    s = lim.stats()
    assert (s["succeeded"], s["dropped"], s["ignored"], s["in_flight"]) == (1, 1, 2, 0)
    g = guards.guarded(lim)
    with pytest.raises(guards.BreakerOpen):
        with g:
            raise guards.BreakerOpen("downstream")
    assert lim.stats()["ignored"] == 3


def test_a_forgotten_permit_is_ignored_when_collected() -> None:
    lim = guards.Limiter(limit=1)
    lim.acquire(now=0)
    gc.collect()
    assert lim.in_flight == 0 and lim.stats()["ignored"] == 1


def test_partitions_reserve_room_for_important_traffic() -> None:
    caps: list[Any] = [{"max_in_flight": 80}] + [{"max_in_flight": 64}] * 7
    lim = guards.Limiter(limit=80, partitions=caps)
    assert lim.threshold(0) == 80 and lim.threshold(3) == 64
    views = [lim.acquire(priority=3, now=0) for _ in range(64)]
    with pytest.raises(guards.LimitExceeded) as info:
        lim.acquire(priority=3, now=0)
    assert info.value.reason == "partition_cap"
    reserve = lim.acquire(priority=0, now=0)
    assert reserve.in_flight == 65
    for p in views:
        p.on_ignore()
    shares = guards.Limiter(limit=10, partitions=[None] + [{"share": 0.9}] * 7)
    assert shares.threshold(1) == 9 and shares.threshold(0) == 10


def test_adaptive_limit_moves_with_samples(clock: guards.FakeClock) -> None:
    lim = guards.Limiter(limit=guards.AimdLimit(initial_limit=4), min_window_samples=1, window=0.01)
    assert lim.limit == 4
    for _ in range(3):
        clock.advance(0.02)
        lim.acquire().on_dropped()
    assert lim.limit < 4
    assert lim.stats()["windows"] >= 1
    assert lim.config()["limit"]["algorithm"] == "aimd"
    # A mapping spells the same limit.
    same = guards.Limiter(limit={"algorithm": "aimd", "initial_limit": 4})
    assert same.config()["limit"] == guards.AimdLimit(initial_limit=4).config()


@pytest.mark.parametrize(
    ("kwargs", "field", "kind"),
    [
        ({"window": 0}, "window", "zero"),
        ({"min_window_samples": 0}, "min_window_samples", "zero"),
        ({"partitions": [{}, {"share": 0.0}]}, "partitions[1].share", "zero"),
        ({"partitions": [{"share": float("nan")}]}, "partitions[0].share", "not_finite"),
        ({"partitions": [{"share": 0.5}, {"share": 0.9}]}, "partitions[1].share", "inconsistent"),
        (
            {"partitions": [{"max_in_flight": 10}, {"max_in_flight": 11}]},
            "partitions[1].max_in_flight",
            "inconsistent",
        ),
        ({"partitions": [{}] * 9}, "partitions", "out_of_range"),
        ({"min_retry_after": 0.005, "max_retry_after": 0.004}, "max_retry_after", "inconsistent"),
        ({"limit": 0}, "limit", "zero"),
        ({"limit": {"algorithm": "aimd", "backoff_ratio": 1.5}}, "backoff_ratio", "out_of_range"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, Any], field: str, kind: str) -> None:
    with config_error(field, kind):
        guards.Limiter(**kwargs)


def test_wrong_types() -> None:
    with type_error("limit"):
        guards.Limiter(limit="vegas")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="algorithm"):
        guards.Limiter(limit={"initial_limit": 3})
    with type_error("partitions"):
        guards.Limiter(partitions={"share": 1.0})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown setting"):
        guards.Limiter(partitions=[{"shares": 1.0}])  # type: ignore[list-item]
    lim = guards.Limiter()
    with pytest.raises(ValueError, match="`priority`"):
        lim.acquire(priority=8, now=0)
    with type_error("priority"):
        lim.acquire(priority="high", now=0)  # type: ignore[arg-type]
    assert lim.in_flight == 0


def test_threads_never_exceed_the_limit() -> None:
    cap = 4
    lim = guards.Limiter(limit=cap)
    inside = 0
    peak = 0
    lock = threading.Lock()

    def work(t: int) -> int:
        nonlocal inside, peak
        done = 0
        for k in range(2000):
            p = lim.try_acquire(now=k)
            if p is None:
                continue
            with lock:
                inside += 1
                peak = max(peak, inside)
            with lock:
                inside -= 1
            p.on_success(now=k + 1)
            done += 1
        return done

    done = sum(run_threads(6, work))
    s = lim.stats()
    assert peak <= cap
    assert s["succeeded"] == done and s["in_flight"] == 0
    assert s["acquired"] + s["rejected_limit_reached"] == 6 * 2000
