"""Durations, Nanos and the TypeError/ValueError rules shared by every guard."""

from __future__ import annotations

import datetime
import inspect
import pickle
from typing import Any

import pytest
from helpers import config_error, type_error

import guards


def interval_ns(value: object) -> int:
    """The interval a QueueDiscipline ends up with, in ns (via oldest_age of a stood queue)."""
    q = guards.QueueDiscipline(interval=value, target=0)  # type: ignore[arg-type]
    q.push(1, now=0)
    # Standing exactly when now - nonempty_since >= interval: find the edge by probing.
    lo, hi = 0, 2**63
    while lo < hi:
        mid = (lo + hi) // 2
        if q.is_standing(now=mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


@pytest.mark.parametrize(
    ("value", "ns"),
    [
        (0.1, 100_000_000),
        (1, 1_000_000_000),
        (0, 0),
        (1.5e-9, 2),  # rounded to the nearest nanosecond
        (datetime.timedelta(milliseconds=3, microseconds=7), 3_007_000),
        (guards.Nanos(123_456_789), 123_456_789),
        (guards.Nanos.from_seconds(0.25), 250_000_000),
    ],
)
def test_durations_in_every_accepted_form(value: object, ns: int) -> None:
    # interval must be >= target (5 ms default), so compare through a target-0 queue.
    assert interval_ns(value) == ns


def test_nanos_value_semantics() -> None:
    n = guards.Nanos(1_500)
    assert n.ns == 1_500 and int(n) == 1_500
    assert n.seconds == 1.5e-6
    assert n == guards.Nanos(1_500) and n != guards.Nanos(1_501)
    assert n < guards.Nanos(1_501)
    assert hash(n) == hash(guards.Nanos(1_500))
    assert repr(n) == "Nanos(1500)"
    assert str(guards.Nanos(60_000_000)) == "60ms"
    assert guards.Nanos.from_seconds(datetime.timedelta(days=1)).ns == 86_400 * 10**9


def test_nanos_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="`ns`.*negative"):
        guards.Nanos(-1)
    with pytest.raises(ValueError, match="`ns`"):
        guards.Nanos(2**64)
    with type_error("ns"):
        guards.Nanos(1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`seconds`"):
        guards.Nanos.from_seconds(-0.5)


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (float("nan"), "not_finite"),
        (float("inf"), "not_finite"),
        (float("-inf"), "not_finite"),
        (-0.001, "negative"),
        (-1, "negative"),
        (datetime.timedelta(seconds=-1), "negative"),
        (1e30, "out_of_range"),
        (10**30, "out_of_range"),
        (datetime.timedelta(days=999_999_999), "out_of_range"),
    ],
)
def test_bad_duration_values_name_the_field(value: object, kind: str) -> None:
    with config_error("interval", kind):
        guards.QueueDiscipline(interval=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["0.1", True, [1], object()])
def test_wrong_duration_types_raise_type_error(value: object) -> None:
    with type_error("interval"):
        guards.QueueDiscipline(interval=value)  # type: ignore[arg-type]


def test_integers_accept_index_objects_and_reject_floats() -> None:
    class Idx:
        def __index__(self) -> int:
            return 4

    assert guards.QueueDiscipline(capacity=Idx()).capacity == 4  # type: ignore[arg-type]
    with type_error("capacity"):
        guards.QueueDiscipline(capacity=4.0)  # type: ignore[arg-type]


def test_unknown_keyword_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        guards.QueueDiscipline(capacty=4)  # type: ignore[call-arg]


def test_none_is_never_the_default() -> None:
    # Leave a setting out to get its default; None is a value of the wrong type.
    for make in (
        lambda: guards.QueueDiscipline(capacity=None),  # type: ignore[arg-type]
        lambda: guards.QueueDiscipline(interval=None),  # type: ignore[arg-type]
        lambda: guards.Bulkhead(None),  # type: ignore[arg-type]
        lambda: guards.RetryPolicy(max_attempts=None),  # type: ignore[arg-type]
        lambda: guards.LatencyTracker(window=None),  # type: ignore[arg-type]
    ):
        with pytest.raises(TypeError, match="not None"):
            make()


CONFIGURED = [
    guards.AdaptiveThrottle,
    guards.Admission,
    guards.AimdLimit,
    guards.Backoff,
    guards.Brownout,
    guards.BrownoutTable,
    guards.Bulkhead,
    guards.CircuitBreaker,
    guards.DeadlineConfig,
    guards.GradientLimit,
    guards.Hedging,
    guards.KeyedBreakers,
    guards.LatencyTracker,
    guards.Limiter,
    guards.QueueDiscipline,
    guards.RetryPolicy,
    guards.VegasLimit,
]


@pytest.mark.parametrize("cls", CONFIGURED, ids=lambda c: c.__name__)
def test_none_is_a_type_error_for_every_setting_with_a_default(cls: type) -> None:
    """One rule for every constructor (issue 11): a setting is left out to get its
    default; ``None`` is accepted only where the signature's default is ``None`` (where it
    means "none": no latency target, no seed, an admission door without an adaptive
    limit), and is otherwise a TypeError naming the setting."""
    params = inspect.signature(cls).parameters
    checked = 0
    for name, p in params.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default in (None, p.empty):
            continue
        with pytest.raises(TypeError, match=f"{name}.*not None"):
            cls(**{name: None})
        checked += 1
    assert checked > 0


@pytest.mark.parametrize(
    "make, read, value",
    [
        (lambda: guards.Bulkhead(7), lambda g: g.config()["max_concurrent"], 7),
        (lambda: guards.Limiter(5), lambda g: g.limit, 5),
        (lambda: guards.QueueDiscipline(9), lambda g: g.config()["capacity"], 9),
        (lambda: guards.RetryPolicy(4), lambda g: g.config()["max_attempts"], 4),
        (lambda: guards.Backoff(0.5), lambda g: g.config()["base"], 0.5),
        (lambda: guards.DeadlineConfig(0.2), lambda g: g.attempt_timeout, 0.2),
        (lambda: guards.BrownoutTable(4), lambda g: g.capacity, 4),
        (lambda: guards.RetryBudget("grpc"), lambda g: g.mode, "grpc"),
        (lambda: guards.Admission([100, 50]), lambda g: g.threshold(1), 50),
    ],
    ids=lambda v: getattr(v, "__name__", None) if not callable(v) else None,
)
def test_the_one_obvious_setting_is_positional(make: Any, read: Any, value: Any) -> None:
    """``Bulkhead(12)`` like ``asyncio.Semaphore(12)``: the first setting of a guard that
    has an obvious one is positional (or keyword), the rest keyword-only."""
    assert read(make()) == value


def test_nanos_pickles() -> None:
    n = guards.Nanos(5)
    assert pickle.loads(pickle.dumps(n)) == n
