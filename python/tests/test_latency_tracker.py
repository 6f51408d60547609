"""LatencyTracker: recording, quantiles, summary, proposed timeout, windows, threads."""

from __future__ import annotations

import inspect

import pytest
from helpers import config_error, run_threads, type_error

import guards

MS = 1_000_000
S = 1_000_000_000


def test_defaults_match_core_and_the_signature() -> None:
    t = guards.LatencyTracker()
    cfg = t.config()
    assert cfg == {"window": 10.0, "timeout_quantile": 0.999, "timeout_factor": 2.0, "min_samples": 1000}
    assert {k: p.default for k, p in inspect.signature(guards.LatencyTracker).parameters.items()} == cfg
    assert t.max_trackable > 1000  # latencies up to ~18 minutes are told apart


def test_small_values_are_exact_and_ranks_are_nearest() -> None:
    t = guards.LatencyTracker()
    for ns in range(1, 11):
        t.record_ns(ns, now=0)
    assert t.count(now=0) == 10
    assert t.quantile_ns(0.5, now=0) == 5
    assert t.quantile_ns(1.0, now=0) == 10
    assert t.quantile_ns(0.0, now=0) == 1
    assert t.quantile(0.5, now=0) == 5e-9
    assert t.quantile_ns(float("nan"), now=0) is None
    assert t.quantile_ns(1.5, now=0) is None


def test_larger_values_are_within_one_sixty_fourth() -> None:
    t = guards.LatencyTracker()
    for v in (0.0123, 0.25, 1.5):
        t.record(v, now=0)
    for q, v in ((0.2, 0.0123), (0.5, 0.25), (1.0, 1.5)):
        got = t.quantile(q, now=0)
        assert got is not None and abs(got - v) <= v / 64


def test_record_and_record_ns_agree() -> None:
    a, b = guards.LatencyTracker(), guards.LatencyTracker()
    a.record(0.02, now=0)
    b.record_ns(20 * MS, now=0)
    a.record(guards.Nanos(7), now=0)
    b.record_ns(7, now=0)
    assert a.summary_ns(now=0) == b.summary_ns(now=0)


def test_summary_and_empty_tracker() -> None:
    t = guards.LatencyTracker()
    assert t.summary(now=0) == {"count": 0, "p50": 0.0, "p95": 0.0, "p99": 0.0, "p999": 0.0, "max": 0.0}
    assert t.quantile(0.5, now=0) is None
    assert t.false_timeout_rate(1, now=0) is None
    for ns in range(1, 21):
        t.record_ns(ns, now=0)
    s = t.summary_ns(now=0)
    assert s == {"count": 20, "p50": 10, "p95": 19, "p99": 20, "p999": 20, "max": 20}
    assert t.summary(now=0)["p50"] == 1e-8


def test_proposed_timeout_needs_min_samples() -> None:
    t = guards.LatencyTracker(timeout_quantile=0.5, timeout_factor=3.0, min_samples=4)
    for ns in (10, 20, 30):
        t.record_ns(ns, now=0)
    assert t.propose_timeout_ns(now=0) is None
    t.record_ns(40, now=0)
    assert t.propose_timeout_ns(now=0) == 60
    assert t.propose_timeout(now=0) == 6e-8


def test_false_timeout_rate() -> None:
    t = guards.LatencyTracker()
    for ns in (5, 10, 15, 20):
        t.record_ns(ns, now=0)
    assert t.false_timeout_rate(guards.Nanos(12), now=0) == 0.5
    assert t.false_timeout_rate(guards.Nanos(20), now=0) == 0.0


def test_old_windows_expire(clock: guards.FakeClock) -> None:
    t = guards.LatencyTracker(window=1)
    t.record(0.01)
    clock.advance(5)
    assert t.count() == 1  # six windows of one second: still inside
    clock.advance(1)
    assert t.count() == 0
    assert t.stats() == {"recorded": 1, "saturated": 0, "stale": 0}


@pytest.mark.parametrize(
    ("kwargs", "field", "kind"),
    [
        ({"window": 0}, "window", "zero"),
        ({"window": 0.5}, "window", "out_of_range"),
        ({"window": -1}, "window", "negative"),
        ({"timeout_quantile": float("nan")}, "timeout_quantile", "not_finite"),
        ({"timeout_quantile": 0.0}, "timeout_quantile", "zero"),
        ({"timeout_quantile": 1.5}, "timeout_quantile", "out_of_range"),
        ({"timeout_factor": 0.5}, "timeout_factor", "out_of_range"),
        ({"min_samples": 0}, "min_samples", "zero"),
        ({"min_samples": -3}, "min_samples", "negative"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, object], field: str, kind: str) -> None:
    with config_error(field, kind):
        guards.LatencyTracker(**kwargs)  # type: ignore[arg-type]


def test_bad_arguments() -> None:
    t = guards.LatencyTracker()
    with type_error("latency"):
        t.record("1ms")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`latency`"):
        t.record(-0.001)
    with type_error("latency_ns"):
        t.record_ns(1.5)  # type: ignore[arg-type]
    with type_error("q"):
        t.quantile("p99")  # type: ignore[arg-type]
    with type_error("min_samples"):
        guards.LatencyTracker(min_samples=1.0)  # type: ignore[arg-type]
    assert t.stats()["recorded"] == 0


def test_threads_share_one_tracker() -> None:
    t = guards.LatencyTracker()

    def work(i: int) -> None:
        for k in range(2500):
            t.record_ns(1 + (k % 1000), now=S)

    run_threads(4, work)
    assert t.count(now=S) == 10_000
    assert t.stats()["recorded"] == 10_000
    # The same samples recorded by one thread give the same histogram.
    sequential = guards.LatencyTracker()
    for _ in range(4):
        for k in range(2500):
            sequential.record_ns(1 + (k % 1000), now=S)
    assert t.summary_ns(now=S) == sequential.summary_ns(now=S)
    assert [t.quantile_ns(q / 20, now=S) for q in range(21)] == [
        sequential.quantile_ns(q / 20, now=S) for q in range(21)
    ]
