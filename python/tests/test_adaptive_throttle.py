"""AdaptiveThrottle: the rejection formula, seeded draws, windows, Envoy preset, threads."""

from __future__ import annotations

import inspect

import pytest
from helpers import config_error, run_threads, type_error

import guards

S = 1_000_000_000


def test_defaults_match_core_and_the_signature() -> None:
    t = guards.AdaptiveThrottle()
    cfg = t.config()
    assert cfg == {
        "window": 120.0,
        "k": 2.0,
        "aggression": 1.0,
        "max_reject_probability": 1.0,
        "min_requests": 0,
        "count_rejected": True,
        "seed": 0,
    }
    sig = {k: p.default for k, p in inspect.signature(guards.AdaptiveThrottle).parameters.items()}
    assert sig == {**cfg, "success_rate_threshold": None}
    assert t.success_rate_threshold == 0.5


def test_healthy_backend_is_never_throttled() -> None:
    t = guards.AdaptiveThrottle()
    for i in range(100):
        assert t.should_reject(now=i) is False
        t.on_accepted(now=i)
    assert t.reject_probability(now=100) == 0.0
    assert t.window(now=100) == {"requests": 100, "accepts": 100}


def test_failing_backend_raises_the_rejection_probability() -> None:
    t = guards.AdaptiveThrottle(min_requests=11)
    for i in range(10):
        assert t.should_reject(now=i) is False
    assert t.reject_probability(now=10) == 0.0  # below min_requests
    t.should_reject(now=10)
    # 11 requests, 0 accepts: (11 - 2*0) / 12.
    assert t.reject_probability(now=11) == 11 / 12
    rejected = sum(t.should_reject(now=12) for _ in range(200))
    assert rejected > 100
    admits = 0
    with pytest.raises(guards.Throttled) as info:
        for _ in range(100):
            admits += 1
            t.admit(now=13)
    assert info.value.reason == "throttled" and isinstance(info.value, guards.GuardError)
    s = t.stats()
    assert s["admitted"] + s["throttled"] == 11 + 200 + admits
    assert s["throttled"] == rejected + 1


def test_seeded_draws_are_reproducible() -> None:
    def run(**kw: object) -> list[bool]:
        t = guards.AdaptiveThrottle(min_requests=1, **kw)  # type: ignore[arg-type]
        return [t.should_reject(now=i) for i in range(50)]

    assert run(seed=7) == run(seed=7)
    a = guards.AdaptiveThrottle(min_requests=1)
    b = guards.AdaptiveThrottle(min_requests=1)
    ra, rb = guards.Rng(3), guards.Rng(3)
    assert [a.should_reject(now=i, rng=ra) for i in range(50)] == [b.should_reject(now=i, rng=rb) for i in range(50)]


def test_envoy_preset_and_threshold_spelling() -> None:
    e = guards.AdaptiveThrottle.envoy()
    cfg = e.config()
    assert (cfg["window"], cfg["max_reject_probability"], cfg["count_rejected"]) == (30.0, 0.8, False)
    assert e.success_rate_threshold == pytest.approx(0.95)
    t = guards.AdaptiveThrottle(success_rate_threshold=0.8)
    assert t.config()["k"] == 1 / 0.8
    assert guards.AdaptiveThrottle.envoy(window=10).config()["window"] == 10.0
    with pytest.raises(TypeError, match="not both"):
        guards.AdaptiveThrottle(k=2.0, success_rate_threshold=0.5)
    with config_error("success_rate_threshold", "out_of_range"):
        guards.AdaptiveThrottle(success_rate_threshold=1.5)


def test_window_slides(clock: guards.FakeClock) -> None:
    t = guards.AdaptiveThrottle(window=12)
    t.should_reject()
    t.on_accepted()
    clock.advance(13)
    assert t.window() == {"requests": 0, "accepts": 0}
    t.on_rejected_by_backend()
    assert t.stats()["rejected_by_backend"] == 1


@pytest.mark.parametrize(
    ("kwargs", "field", "kind"),
    [
        ({"window": 0}, "window", "zero"),
        ({"window": 3601}, "window", "out_of_range"),
        ({"k": 0.5}, "k", "out_of_range"),
        ({"k": float("nan")}, "k", "not_finite"),
        ({"aggression": float("inf")}, "aggression", "not_finite"),
        ({"max_reject_probability": -0.1}, "max_reject_probability", "negative"),
        ({"min_requests": 10**12 + 1}, "min_requests", "out_of_range"),
        ({"seed": -1}, "seed", "negative"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, object], field: str, kind: str) -> None:
    with config_error(field, kind):
        guards.AdaptiveThrottle(**kwargs)  # type: ignore[arg-type]


def test_wrong_types() -> None:
    with type_error("count_rejected"):
        guards.AdaptiveThrottle(count_rejected="no")  # type: ignore[arg-type]
    with type_error("k"):
        guards.AdaptiveThrottle(k="2")  # type: ignore[arg-type]
    with type_error("rng"):
        guards.AdaptiveThrottle().should_reject(now=0, rng=1)  # type: ignore[arg-type]


def test_threads_share_one_throttle() -> None:
    t = guards.AdaptiveThrottle(min_requests=1, seed=5)

    def work(_i: int) -> int:
        rejected = 0
        for k in range(2500):
            if t.should_reject(now=S):
                rejected += 1
            elif k % 4 == 0:
                t.on_accepted(now=S)
        return rejected

    rejected = sum(run_threads(4, work))
    s = t.stats()
    assert s["throttled"] == rejected
    assert s["admitted"] + s["throttled"] == 10_000
    w = t.window(now=S)
    assert w["requests"] == 10_000 and w["accepts"] == s["accepted"]
