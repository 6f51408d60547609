"""Admission: per-priority caps at the door, the adaptive limit, tickets, threads."""

from __future__ import annotations

import gc
import inspect
from typing import Any

import pytest
from helpers import config_error, run_threads, type_error

import guards


def test_defaults_match_core_and_the_signature() -> None:
    door = guards.Admission()
    cfg = door.config()
    assert cfg["limits"] == [80, 64, 64, 64, 64, 64, 64, 64]
    assert cfg["shares"] == [1.0] * 8
    assert cfg["limit"] is None and door.limit is None  # no adaptive limit
    rest = {k: cfg[k] for k in ("window", "min_window_samples", "min_retry_after", "max_retry_after")}
    assert rest == {"window": 0.1, "min_window_samples": 10, "min_retry_after": 1.0, "max_retry_after": 60.0}
    sig = {k: p.default for k, p in inspect.signature(guards.Admission).parameters.items()}
    assert sig == {**rest, "limits": None, "limit": None, "shares": None}
    assert guards.Admission([100]).threshold(0) == 100  # the one obvious argument, positional


def test_views_are_refused_at_64_while_reserves_get_in() -> None:
    door = guards.Admission()
    views = [door.acquire(priority=3, now=0) for _ in range(64)]
    with pytest.raises(guards.AdmissionRejected) as info:
        door.acquire(priority=3, now=0)
    e = info.value
    assert (e.reason, e.threshold, e.in_flight, e.priority) == ("limit_reached", 64, 64, 3)
    assert e.retry_after == 1.0 and e.retry_after_secs == 1 and isinstance(e, guards.GuardError)
    reserve = door.acquire(priority=0, now=0)
    assert reserve.in_flight == 65 and reserve.priority == 0
    assert door.refused_by_priority() == [0, 0, 0, 1, 0, 0, 0, 0]
    for v in views:
        assert v.on_success(now=1)
    reserve.on_ignore()
    s = door.stats()
    assert (s["admitted"], s["succeeded"], s["ignored"], s["refused_limit_reached"], s["in_flight"]) == (
        65,
        64,
        1,
        1,
        0,
    )


def test_short_lists_repeat_the_last_class_given() -> None:
    # Classes left out (past the end, or None) take the value of the class before them:
    # never an order the user did not write.
    assert guards.Admission(limits=[10, 5]).config()["limits"] == [10] + [5] * 7
    door = guards.Admission(limits=[100])
    assert door.config()["limits"] == [100] * 8
    assert door.threshold(0) == 100 and door.threshold(1) == 100
    assert guards.Admission(limits=[10, None, 4]).config()["limits"] == [10, 10] + [4] * 6
    assert guards.Admission(shares=[1.0, 0.5]).config()["shares"] == [1.0] + [0.5] * 7
    with config_error("limits[2]", "inconsistent"):  # an index the user wrote
        guards.Admission(limits=[10, 5, 6])


def test_adaptive_door_sheds_low_priority_first(clock: guards.FakeClock) -> None:
    door = guards.Admission(limit=guards.AimdLimit(initial_limit=20), shares=[1.0] + [0.8] * 7, min_window_samples=1)
    assert door.limit == 20
    assert door.threshold(0) == 20 and door.threshold(3) == 16
    tickets = [door.acquire(priority=3) for _ in range(16)]
    with pytest.raises(guards.AdmissionRejected) as info:
        door.acquire(priority=3)
    assert info.value.reason == "overloaded"
    assert door.acquire(priority=0).on_ignore()
    for t in tickets:
        t.on_ignore()


def test_tickets_as_context_managers_and_collection() -> None:
    door = guards.Admission(limits=[1] * 8)
    with door.acquire(now=0):
        assert door.in_flight == 1
    with pytest.raises(TimeoutError):
        with door.acquire(now=0):
            raise TimeoutError
    door.acquire(now=0)
    gc.collect()
    s = door.stats()
    assert (s["succeeded"], s["dropped"], s["ignored"], s["in_flight"]) == (1, 1, 1, 0)
    assert door.try_acquire(now=0) is not None


@pytest.mark.parametrize(
    ("kwargs", "field", "kind"),
    [
        ({"limits": [80, 64, 0]}, "limits[2]", "zero"),
        ({"limits": [10, 20]}, "limits[1]", "inconsistent"),
        ({"limits": [-1]}, "limits[0]", "negative"),
        ({"shares": [1.0, 1.0, 1.0, 1.0, float("nan")]}, "shares[4]", "not_finite"),
        ({"shares": [0.0]}, "shares[0]", "zero"),
        ({"shares": [0.5, 1.0]}, "shares[1]", "inconsistent"),
        ({"limits": [1] * 9}, "limits", "out_of_range"),
        ({"window": 0}, "window", "zero"),
        ({"max_retry_after": 0}, "max_retry_after", "inconsistent"),
        ({"limit": {"algorithm": "vegas", "smoothing": float("nan")}}, "smoothing", "not_finite"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, Any], field: str, kind: str) -> None:
    with config_error(field, kind):
        guards.Admission(**kwargs)


def test_wrong_types() -> None:
    with type_error("limits"):
        guards.Admission(limits=80)  # type: ignore[arg-type]
    with type_error("limits[1]"):
        guards.Admission(limits=[80, 6.5])  # type: ignore[list-item]
    with type_error("shares[0]"):
        guards.Admission(shares=["all"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="`priority`"):
        guards.Admission().acquire(priority=-1)


def test_threads_share_one_door() -> None:
    door = guards.Admission(limits=[8, 4, 4, 4, 4, 4, 4, 4])

    def work(t: int) -> tuple[int, int]:
        ok = refused = 0
        for k in range(2000):
            ticket = door.try_acquire(priority=t % 4, now=k)
            if ticket is None:
                refused += 1
                continue
            assert ticket.in_flight <= 8
            ticket.on_success(now=k + 1)
            ok += 1
        return ok, refused

    results = run_threads(6, work)
    s = door.stats()
    assert s["admitted"] == s["succeeded"] == sum(r[0] for r in results)
    assert s["refused_limit_reached"] + s["refused_overloaded"] == sum(r[1] for r in results)
    assert s["in_flight"] == 0


def test_partial_limits_never_name_an_index_that_was_not_given() -> None:
    try:
        guards.Admission(limits=[100, 50])
    except guards.ConfigError as e:
        assert e.field in ("limits", "limits[0]", "limits[1]"), e.field
