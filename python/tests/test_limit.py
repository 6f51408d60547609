"""The limit algorithms as standalone objects: AIMD, Vegas, Gradient2, fixed."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from helpers import config_error, run_threads, type_error

import guards

MS = 1_000_000


def defaults(cls: Any) -> dict[str, Any]:
    return {k: p.default for k, p in inspect.signature(cls).parameters.items()}


@pytest.mark.parametrize(
    ("cls", "algorithm"),
    [(guards.AimdLimit, "aimd"), (guards.VegasLimit, "vegas"), (guards.GradientLimit, "gradient")],
)
def test_defaults_match_core_and_the_signature(cls: Any, algorithm: Any) -> None:
    lim = cls()
    cfg = lim.config()
    assert cfg.pop("algorithm") == algorithm == lim.algorithm
    assert cfg == defaults(cls)
    assert isinstance(lim, guards.Limit)
    assert guards.Limit(algorithm).config() == lim.config()


def test_gradient2_is_the_gradient_limit() -> None:
    assert guards.Gradient2Limit is guards.GradientLimit


def test_fixed_limit_ignores_samples() -> None:
    f = guards.FixedLimit(7)
    assert f.update(1.0, 100, True, now=0) == 7
    assert (f.limit, f.algorithm, f.estimate, f.min_rtt) == (7, "fixed", None, None)
    assert repr(f) == "FixedLimit(limit=7)"


def test_aimd_grows_then_halves() -> None:
    a = guards.AimdLimit(initial_limit=10, interval=0.1)
    assert a.update(0.01, 10, now=0) in (10, 11)
    grown = a.update(0.01, 10, now=200 * MS)
    assert grown >= 10
    halved = a.update(0.01, grown, True, now=400 * MS)
    assert halved == max(1, grown // 2)
    assert a.config()["latency_target"] is None


def test_aimd_latency_target_counts_as_a_drop() -> None:
    a = guards.AimdLimit(initial_limit=4, latency_target=0.01)
    assert a.update(0.02, 4, now=0) == 2
    assert a.config()["latency_target"] == 0.01


def test_vegas_estimate_and_min_rtt() -> None:
    v = guards.VegasLimit(probe_jitter=0.0)
    assert v.min_rtt_ns == 0 and v.min_rtt == 0.0
    v.update(guards.Nanos(10 * MS), 20, now=0)
    assert v.min_rtt_ns == 10 * MS
    assert v.estimate is not None and v.limit >= 1
    assert v.long_rtt is None


def test_gradient_long_rtt() -> None:
    g = guards.GradientLimit()
    g.update(0.01, 20, now=0)
    assert g.long_rtt_ns is not None and g.long_rtt == pytest.approx(g.long_rtt_ns / 1e9)
    assert g.estimate is not None


@pytest.mark.parametrize(
    ("cls", "kwargs", "field", "kind"),
    [
        (guards.AimdLimit, {"backoff_ratio": 1.0}, "backoff_ratio", "out_of_range"),
        (guards.AimdLimit, {"backoff_ratio": float("nan")}, "backoff_ratio", "not_finite"),
        (guards.AimdLimit, {"interval": 0}, "interval", "zero"),
        (guards.AimdLimit, {"latency_target": 0}, "latency_target", "zero"),
        (guards.AimdLimit, {"initial_limit": 0}, "initial_limit", "zero"),
        (guards.AimdLimit, {"min_limit": 20, "max_limit": 15}, "max_limit", "inconsistent"),
        (guards.AimdLimit, {"max_limit": 1_000_001}, "max_limit", "out_of_range"),
        (guards.VegasLimit, {"smoothing": 0.0}, "smoothing", "zero"),
        (guards.VegasLimit, {"alpha": 7.0}, "beta", "inconsistent"),
        (guards.VegasLimit, {"probe_jitter": 1.0}, "probe_jitter", "out_of_range"),
        (guards.VegasLimit, {"probe_seed": -1}, "probe_seed", "negative"),
        (guards.GradientLimit, {"queue_size": -1.0}, "queue_size", "negative"),
        (guards.GradientLimit, {"long_window": 0}, "long_window", "zero"),
    ],
)
def test_bad_config_names_the_field(cls: Any, kwargs: dict[str, Any], field: str, kind: str) -> None:
    with config_error(field, kind):
        cls(**kwargs)


def test_bad_config_for_fixed_and_generic() -> None:
    with config_error("limit", "zero"):
        guards.FixedLimit(0)
    with config_error("algorithm", "out_of_range"):
        guards.Limit("bbr")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unexpected keyword argument 'alpha'"):
        guards.Limit("aimd", alpha=1.0)  # a Vegas setting
    with pytest.raises(TypeError, match="unexpected keyword argument 'alfa'"):
        guards.Limit("aimd", alfa=1.0)


def test_bad_update_arguments() -> None:
    a = guards.AimdLimit()
    with type_error("rtt"):
        a.update("1ms", 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`in_flight`"):
        a.update(0.01, -1)
    with type_error("dropped"):
        a.update(0.01, 1, 1)  # type: ignore[arg-type]
    assert a.limit == 10


def test_threads_share_one_limit_object() -> None:
    a = guards.AimdLimit(initial_limit=100, max_limit=100)

    def work(i: int) -> None:
        for k in range(1000):
            assert 1 <= a.update(0.001, 50, k % 10 == 0, now=k * MS) <= 100

    run_threads(4, work)
    assert 1 <= a.limit <= 100
