"""Hedging: delay from the tracked quantile, waits, limits, gates, validation, threads."""

from __future__ import annotations

import inspect

import pytest
from helpers import config_error, run_threads, type_error

import guards

MS = 1_000_000


def trained(**kw: object) -> guards.Hedging:
    h = guards.Hedging(min_samples=10, refresh_interval=0, **kw)  # type: ignore[arg-type]
    for _ in range(20):
        h.record_latency(0.01, now=0)
    return h


def test_defaults_match_core_and_the_signature() -> None:
    cfg = guards.Hedging().config()
    tracker = cfg.pop("tracker")
    assert cfg == {
        "delay_quantile": 0.95,
        "min_delay": 0.001,
        "max_delay": 10.0,
        "max_hedges": 1,
        "min_samples": 100,
        "refresh_interval": 0.1,
    }
    assert tracker == guards.LatencyTracker().config()
    sig = {k: p.default for k, p in inspect.signature(guards.Hedging).parameters.items()}
    assert sig == {**cfg, "tracker": None}


def test_no_data_means_never() -> None:
    h = guards.Hedging()
    d = h.should_hedge(0, now=50 * MS)
    assert (d.decision, d.reason, d.hedge, d.at) == ("never", "no_latency_data", False, None)
    assert h.hedge_delay(now=0) is None


def test_wait_then_hedge_once() -> None:
    h = trained()
    delay = h.hedge_delay_ns(now=0)
    assert delay is not None and abs(delay - 10 * MS) <= 10 * MS // 64
    early = h.should_hedge(0, 0, now=1 * MS)
    assert (early.decision, early.at) == ("wait_until", delay)
    due = h.should_hedge(0, 0, now=delay)
    assert due.decision == "hedge_now" and due.hedge and bool(due)
    assert h.should_hedge(0, 1, now=delay).reason == "limit_reached"
    assert h.should_hedge(0, idempotent=False, now=delay).reason == "not_idempotent"
    s = h.stats()
    assert (s["hedges"], s["deferred"], s["limit_reached"], s["not_idempotent"]) == (1, 1, 1, 1)


def test_delay_is_clamped() -> None:
    h = trained(min_delay=0.05, max_delay=0.06)
    assert h.hedge_delay_ns(now=0) == 50 * MS
    assert h.hedge_delay(now=0) == 0.05


def test_gates_pay_for_hedges() -> None:
    h = trained()
    budget = guards.RetryBudget.token_bucket(capacity=1.0)
    assert h.should_hedge(0, gate=budget, now=20 * MS).hedge
    assert h.should_hedge(0, gate=budget, now=20 * MS).reason == "budget_exhausted"
    causes: list[str] = []

    def gate(now: int, cause: str) -> bool:
        causes.append(cause)
        return True

    assert h.should_hedge(0, gate=gate, now=20 * MS).hedge
    assert causes == ["hedge"]


def test_tracker_settings_and_quantile() -> None:
    h = guards.Hedging(tracker={"window": 2, "min_samples": 5})
    assert h.config()["tracker"]["window"] == 2.0
    h2 = guards.Hedging(tracker=guards.LatencyTracker(window=3))
    assert h2.config()["tracker"]["window"] == 3.0
    h.record_latency_ns(5 * MS, now=0)
    assert h.latency_quantile(0.5, now=0) == pytest.approx(0.005, rel=1 / 64)


@pytest.mark.parametrize(
    ("kwargs", "field", "kind"),
    [
        ({"delay_quantile": 0.0}, "delay_quantile", "zero"),
        ({"delay_quantile": float("nan")}, "delay_quantile", "not_finite"),
        ({"min_delay": 3601}, "min_delay", "out_of_range"),
        ({"min_delay": 2, "max_delay": 1}, "max_delay", "inconsistent"),
        ({"max_hedges": 17}, "max_hedges", "out_of_range"),
        ({"min_samples": 0}, "min_samples", "zero"),
        ({"refresh_interval": 61}, "refresh_interval", "out_of_range"),
        ({"tracker": {"window": 0}}, "tracker.window", "zero"),
        ({"tracker": {"timeout_factor": "x"}}, "tracker.timeout_factor", None),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, object], field: str, kind: str | None) -> None:
    if kind is None:
        with type_error(field):
            guards.Hedging(**kwargs)  # type: ignore[arg-type]
        return
    with config_error(field, kind):
        guards.Hedging(**kwargs)  # type: ignore[arg-type]


def test_bad_arguments() -> None:
    h = trained()
    with type_error("idempotent"):
        h.should_hedge(0, idempotent=1, now=0)  # type: ignore[arg-type]
    with type_error("request_started"):
        h.should_hedge(0.5, now=0)  # type: ignore[arg-type]
    with type_error("gate"):
        h.should_hedge(0, gate="yes", now=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown setting"):
        guards.Hedging(tracker={"windw": 1})  # type: ignore[arg-type]


def test_threads_share_one_policy() -> None:
    h = trained()

    def work(t: int) -> int:
        hedges = 0
        for i in range(2000):
            h.record_latency_ns(10 * MS, now=0)
            if h.should_hedge(0, now=50 * MS).hedge:
                hedges += 1
        return hedges

    hedges = sum(run_threads(4, work))
    assert hedges == 8000 == h.stats()["hedges"]


def test_fake_clock_drives_the_default_now(clock: guards.FakeClock) -> None:
    h = guards.Hedging(min_samples=1, refresh_interval=0)
    h.record_latency(0.02)
    started = clock.now()
    d = h.should_hedge(started)
    assert d.decision == "wait_until" and d.at is not None
    clock.set(d.at)
    assert h.should_hedge(started).hedge
