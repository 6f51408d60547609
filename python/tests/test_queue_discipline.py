"""QueueDiscipline: priority order, standing queue (age limit + LIFO), deadlines, cancel,
full queue, config validation, FakeClock, and threads sharing one queue."""

from __future__ import annotations

import inspect
import threading

import pytest
from helpers import config_error, run_threads, type_error

import guards

MS = 1_000_000


def ids(dropped: list[guards.Dropped]) -> list[tuple[int, str]]:
    return [(d.id, d.reason) for d in dropped]


def test_defaults_match_core_and_the_signature() -> None:
    q = guards.QueueDiscipline()
    cfg = q.config()
    assert cfg == {
        "capacity": 128,
        "interval": 0.1,
        "target": 0.005,
        "lifo": True,
        "codel": True,
        "priority": True,
    }
    sig = inspect.signature(guards.QueueDiscipline)
    assert {k: p.default for k, p in sig.parameters.items()} == cfg
    assert q.capacity == 128 and len(q) == 0 and q.is_empty()


def test_priority_classes_then_fifo_within_a_class() -> None:
    q = guards.QueueDiscipline()
    q.push(1, priority=guards.Priority.SHEDDABLE, now=0)
    q.push(2, priority=3, now=0)
    q.push(3, priority=1, now=1 * MS)
    q.push(4, now=2 * MS)  # default priority: CRITICAL (1)
    q.push(5, priority=guards.Priority.CRITICAL_PLUS, now=2 * MS)
    assert q.len_by_priority() == [1, 2, 0, 2, 0, 0, 0, 0]
    served = []
    while True:
        d, dropped = q.pop(now=3 * MS)
        assert dropped == []
        if d is None:
            break
        assert d.order == "fifo"
        served.append(d.id)
    assert served == [5, 3, 4, 1, 2]
    assert q.stats()["served_fifo"] == 5


def test_standing_queue_drops_old_waiters_and_serves_newest_first() -> None:
    q = guards.QueueDiscipline(interval=0.1, target=0.005)
    for i in range(5):
        q.push(i, priority=3, now=i * MS)
    q.push(10, priority=3, now=99 * MS)
    assert not q.is_standing(now=99 * MS)
    q.push(11, priority=3, now=100 * MS)
    assert q.is_standing(now=100 * MS)
    served, dropped = q.pop(now=101 * MS)
    # Everything older than 5 ms is dropped; the newest is served (LIFO).
    assert served is not None and (served.id, served.order) == (11, "lifo")
    assert ids(dropped) == [(i, "age_limit") for i in range(5)]
    assert [d.waiter.enqueued_at for d in dropped] == [i * MS for i in range(5)]
    assert ids(q.dropped()) == ids(dropped)
    served, dropped = q.pop(now=101 * MS)
    assert served is not None and served.id == 10 and dropped == []
    s = q.stats()
    assert (s["dropped_age_limit"], s["served_lifo"]) == (5, 2)


def test_expired_deadlines_are_dropped_at_the_front() -> None:
    q = guards.QueueDiscipline()
    q.push(1, deadline=5 * MS, now=0)
    q.push(2, deadline=50 * MS, now=0)
    q.push(3, now=0)
    served, dropped = q.pop(now=10 * MS)
    assert served is not None and served.id == 2
    assert ids(dropped) == [(1, "deadline")]
    assert dropped[0].waiter.deadline == 5 * MS
    assert dropped[0].waiter.is_expired(now=10 * MS)
    served, _ = q.pop(now=10 * MS)
    assert served is not None and served.waiter.deadline is None


def test_expire_sweeps_without_serving() -> None:
    q = guards.QueueDiscipline()
    q.push(1, deadline=5 * MS, now=0)
    q.push(2, now=0)
    q.push(3, deadline=1 * MS, priority=0, now=0)
    assert ids(q.expire(now=6 * MS)) == [(3, "deadline"), (1, "deadline")]
    assert len(q) == 1 and q.stats()["dropped_deadline"] == 2


def test_remove_cancels_a_waiter() -> None:
    q = guards.QueueDiscipline()
    q.push(7, priority=2, now=3)
    w = q.remove(7)
    assert w is not None
    assert (w.id, w.priority, w.enqueued_at, w.deadline) == (7, 2, 3, None)
    assert w.age_ns(now=10) == 7
    assert q.remove(7) is None
    assert q.stats()["cancelled"] == 1


def test_full_queue_raises_queue_full() -> None:
    q = guards.QueueDiscipline(capacity=2)
    q.push(1, now=0)
    q.push(2, now=0)
    with pytest.raises(guards.QueueFull) as info:
        q.push(3, now=0)
    assert isinstance(info.value, guards.GuardError)
    assert info.value.reason == "full"
    assert q.stats()["rejected_full"] == 1
    assert len(q) == 2


def test_oldest_age_in_seconds_and_nanoseconds() -> None:
    q = guards.QueueDiscipline()
    assert q.oldest_age(now=5) == 0.0
    q.push(1, now=1 * MS)
    assert q.oldest_age_ns(now=3 * MS) == 2 * MS
    assert q.oldest_age(now=3 * MS) == 0.002


def test_fake_clock_drives_every_default_now(clock: guards.FakeClock) -> None:
    q = guards.QueueDiscipline(interval=0.01, target=0.001)
    q.push(1)
    q.push(2, deadline=clock.now() + 3 * MS)
    clock.advance(0.002)
    assert q.oldest_age_ns() == 2 * MS
    assert not q.is_standing()
    clock.advance(0.008)
    assert q.is_standing()
    served, dropped = q.pop()
    assert served is None  # both older than the 1 ms target while standing
    assert sorted(d.id for d in dropped) == [1, 2]


@pytest.mark.parametrize("capacity", [129, 1024, 1025, 8193, 65_536])
def test_large_capacities(capacity: int) -> None:
    q = guards.QueueDiscipline(capacity=capacity, codel=False)
    for i in range(capacity):
        q.push(i, now=0)
    with pytest.raises(guards.QueueFull):
        q.push(capacity, now=0)
    assert len(q) == capacity
    served, _ = q.pop(now=1)
    assert served is not None and served.id == 0


@pytest.mark.parametrize(
    ("kwargs", "field", "kind"),
    [
        ({"capacity": 0}, "capacity", "zero"),
        ({"capacity": 65_537}, "capacity", "out_of_range"),
        ({"capacity": 2**40}, "capacity", "out_of_range"),
        ({"capacity": -1}, "capacity", "negative"),
        ({"interval": float("nan")}, "interval", "not_finite"),
        ({"interval": 3601}, "interval", "out_of_range"),
        ({"interval": -0.1}, "interval", "negative"),
        ({"target": float("inf")}, "target", "not_finite"),
        ({"target": -1}, "target", "negative"),
        ({"target": 0.2, "interval": 0.1}, "target", "inconsistent"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, object], field: str, kind: str) -> None:
    with config_error(field, kind):
        guards.QueueDiscipline(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"capacity": "8"}, "capacity"),
        ({"capacity": 8.0}, "capacity"),
        ({"lifo": 1}, "lifo"),
        ({"codel": "yes"}, "codel"),
        ({"priority": 0}, "priority"),
        ({"interval": "0.1"}, "interval"),
    ],
)
def test_wrong_config_types_raise_type_error(kwargs: dict[str, object], field: str) -> None:
    with type_error(field):
        guards.QueueDiscipline(**kwargs)  # type: ignore[arg-type]


def test_bad_call_arguments() -> None:
    q = guards.QueueDiscipline()
    with pytest.raises(ValueError, match="`priority`"):
        q.push(1, priority=8, now=0)
    with pytest.raises(ValueError, match="`id`"):
        q.push(-1, now=0)
    with type_error("id"):
        q.push("a", now=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`deadline`"):
        q.push(1, deadline=-1, now=0)
    with type_error("deadline"):
        q.push(1, deadline=1.5, now=0)  # type: ignore[arg-type]
    with type_error("id"):
        q.remove(None)  # type: ignore[arg-type]
    assert len(q) == 0 and q.stats()["enqueued"] == 0


def test_threads_share_one_queue_and_every_waiter_is_accounted_for() -> None:
    q = guards.QueueDiscipline(capacity=64)
    per_thread = 3000
    served_ids: list[int] = []
    dropped_ids: list[int] = []
    refused = 0
    lock = threading.Lock()
    clock = guards.FakeClock()

    def work(t: int) -> None:
        nonlocal refused
        mine_served: list[int] = []
        mine_dropped: list[int] = []
        mine_refused = 0
        for i in range(per_thread):
            now = clock.advance(ns=50_000)  # 50 µs per step, shared across threads
            wid = t * per_thread + i
            try:
                q.push(wid, priority=wid % 4, deadline=now + 2 * MS if i % 3 == 0 else None, now=now)
            except guards.QueueFull:
                mine_refused += 1
            if i % 2 == 1:
                served, dropped = q.pop(now=now)
                if served is not None:
                    mine_served.append(served.id)
                mine_dropped.extend(d.id for d in dropped)
            if i % 97 == 0:
                q.remove(wid)
        with lock:
            served_ids.extend(mine_served)
            dropped_ids.extend(mine_dropped)
            refused += mine_refused

    run_threads(4, work)
    s = q.stats()
    assert len(q) <= 64
    assert s["rejected_full"] == refused
    assert s["enqueued"] + refused == 4 * per_thread
    assert s["served_fifo"] + s["served_lifo"] == len(served_ids)
    assert s["dropped_age_limit"] + s["dropped_deadline"] == len(dropped_ids)
    # Every enqueued waiter is served, dropped, cancelled or still queued: exactly once.
    assert len(served_ids) + len(dropped_ids) + s["cancelled"] + len(q) == s["enqueued"]
    everyone = served_ids + dropped_ids
    assert len(set(everyone)) == len(everyone)


def test_repr() -> None:
    q = guards.QueueDiscipline(capacity=3)
    q.push(9, now=0)
    assert repr(q) == "QueueDiscipline(capacity=3, len=1)"
    served, _ = q.pop(now=0)
    assert repr(served) == (
        "Dequeued(waiter=Waiter(id=9, enqueued_at=0, deadline=None, priority=1), order='fifo')"
    )
