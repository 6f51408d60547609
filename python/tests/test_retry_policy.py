"""RetryPolicy: outcome classes, attempts, idempotency, Retry-After, deadline, gates,
stats, worst-case time, validation, threads."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from helpers import config_error, run_threads, type_error

import guards

MS = 1_000_000
S = 1_000_000_000


def policy(**kw: Any) -> guards.RetryPolicy:
    kw.setdefault("backoff", {"base": 0.01, "jitter": "none"})
    return guards.RetryPolicy(**kw)


def test_defaults_match_core_and_the_signature() -> None:
    p = guards.RetryPolicy()
    cfg = p.config()
    assert cfg == {
        "max_attempts": 3,
        "retry_timeouts": True,
        "retry_connection_errors": True,
        "retry_other_transient": True,
        "retry_throttled": True,
        "honor_retry_after": True,
        "max_retry_after": 20.0,
        "min_attempt_time": 0.001,
        "unkeyed_side_effects": "never",
        "backoff": {"base": 0.025, "cap": 20.0, "multiplier": 2.0, "jitter": "full"},
    }
    sig = inspect.signature(guards.RetryPolicy)
    defaults = {k: v.default for k, v in sig.parameters.items()}
    assert defaults == {**cfg, "backoff": None, "seed": None}
    assert p.max_attempts == 3


def test_outcome_classes() -> None:
    p = policy()
    given_up: list[tuple[Any, str]] = [
        ("success", "succeeded"),
        ("permanent", "permanent"),
        ("overloaded", "overloaded"),
    ]
    for outcome, reason in given_up:
        d = p.decide(1, outcome, now=0)
        assert (d.retry, d.reason, d.delay, d.delay_ns) == (False, reason, None, None)
        assert not d
    retried: list[Any] = ["timeout", "connection_error", "other_transient", "throttled"]
    for outcome in retried:
        d = p.decide(1, outcome, now=0)
        assert (d.retry, d.delay_ns, d.delay, d.reason) == (True, 10 * MS, 0.01, None)
        assert d
    assert p.decide(2, "timeout", now=0).delay_ns == 20 * MS
    assert p.decide(3, "timeout", now=0).reason == "attempts_exhausted"
    assert p.decide(0, "timeout", now=0).delay_ns == 10 * MS  # 0 is read as 1


def test_give_up_propagation_flag() -> None:
    p = policy()
    assert not p.decide(1, "success", now=0).propagate_as_overloaded
    assert not p.decide(1, "permanent", now=0).propagate_as_overloaded
    assert p.decide(3, "timeout", now=0).propagate_as_overloaded
    assert not p.decide(1, "timeout", now=0).propagate_as_overloaded  # retrying


def test_switched_off_outcomes_are_not_retryable() -> None:
    p = policy(retry_timeouts=False, retry_throttled=False)
    assert p.decide(1, "timeout", now=0).reason == "not_retryable"
    assert p.decide(1, "throttled", now=0).reason == "not_retryable"
    assert p.decide(1, "connection_error", now=0).retry


def test_idempotency() -> None:
    p = policy()
    assert p.decide(1, "timeout", idempotency="keyed_side_effect", now=0).retry
    assert p.decide(1, "timeout", idempotency="unkeyed_side_effect", now=0).reason == "not_idempotent"
    q = policy(unkeyed_side_effects="retry_throttled")
    assert q.decide(1, "throttled", idempotency="unkeyed_side_effect", now=0).retry
    assert q.decide(1, "timeout", idempotency="unkeyed_side_effect", now=0).reason == "not_idempotent"


def test_retry_after() -> None:
    p = policy(max_retry_after=1.0)
    assert p.decide(1, "throttled", retry_after=0.5, now=0).delay_ns == 500 * MS
    assert p.decide(1, "throttled", retry_after=0.001, now=0).delay_ns == 10 * MS  # backoff wins
    assert p.decide(1, "throttled", retry_after=2, now=0).reason == "retry_after_too_long"
    # Only read for throttled outcomes, and only when honoured.
    assert p.decide(1, "timeout", retry_after=0.5, now=0).delay_ns == 10 * MS
    q = policy(honor_retry_after=False)
    assert q.decide(1, "throttled", retry_after=100, now=0).delay_ns == 10 * MS


def test_deadline_bounds_the_wait() -> None:
    p = policy(min_attempt_time=0.005)
    # The wait plus the minimum attempt time must fit before the deadline.
    assert p.decide(1, "timeout", time_left=0.016, now=0).retry
    assert p.decide(1, "timeout", time_left=0.015, now=0).reason == "deadline_exceeded"
    d = guards.Deadline.at(S + 15 * MS)
    assert p.decide(1, "timeout", deadline=d, now=S).reason == "deadline_exceeded"
    assert p.decide(1, "timeout", deadline=d, now=S - MS).retry
    assert p.decide(1, "timeout", deadline=guards.Deadline.none(), now=0).retry
    with pytest.raises(TypeError, match="not both"):
        p.decide(1, "timeout", deadline=d, time_left=1, now=0)


def test_python_gates_are_asked_last_and_only_for_retries() -> None:
    p = policy()
    calls: list[tuple[int, str]] = []

    class Gate:
        def __init__(self, allow: bool) -> None:
            self.allow = allow

        def allow_retry(self, now: int, cause: str) -> bool:
            calls.append((now, cause))
            return self.allow

    assert p.decide(1, "timeout", gate=Gate(True), now=5).retry
    assert p.decide(1, "throttled", gate=Gate(False), now=6).reason == "budget_exhausted"
    assert p.decide(1, "success", gate=Gate(True), now=7).reason == "succeeded"
    assert p.decide(3, "timeout", gate=Gate(True), now=8).reason == "attempts_exhausted"
    assert calls == [(5, "timeout"), (6, "throttled")]
    # A plain callable works too.
    assert p.decide(1, "connection_error", gate=lambda now, cause: cause == "transient", now=9).retry


def test_gate_exceptions_propagate() -> None:
    p = policy()

    def broken(now: int, cause: str) -> bool:
        raise RuntimeError("gate down")

    with pytest.raises(RuntimeError, match="gate down"):
        p.decide(1, "timeout", gate=broken, now=0)
    with type_error("gate"):
        p.decide(1, "timeout", gate=42, now=0)  # type: ignore[arg-type]


def test_stats_count_every_decision() -> None:
    p = policy()
    p.decide(1, "timeout", now=0)
    p.decide(1, "timeout", now=0)
    p.decide(3, "timeout", now=0)
    p.decide(1, "success", now=0)
    s = p.stats()
    assert s["retries"] == 2 and s["attempts_exhausted"] == 1 and s["succeeded"] == 1
    assert sum(s.values()) == 4


def test_worst_case_time() -> None:
    p = policy(max_attempts=3)
    # 3 attempts of 100 ms plus waits of 10 ms and 20 ms.
    assert p.worst_case_time_ns(0.1) == 330 * MS
    assert p.worst_case_time(0.1) == 0.33


def test_backoff_argument_forms() -> None:
    b = guards.Backoff(base=0.02, jitter="none")
    p = guards.RetryPolicy(backoff=b)
    assert p.config()["backoff"] == b.config()
    assert p.backoff.config() == b.config()
    assert p.decide(1, "timeout", now=0).delay_ns == 20 * MS


def test_seeded_jitter_is_reproducible() -> None:
    a, b = guards.RetryPolicy(seed=3), guards.RetryPolicy(seed=3)
    da = [a.decide(1, "timeout", now=0).delay_ns for _ in range(20)]
    assert da == [b.decide(1, "timeout", now=0).delay_ns for _ in range(20)]
    r1, r2 = guards.Rng(8), guards.Rng(8)
    c = guards.RetryPolicy()
    assert c.decide(2, "timeout", rng=r1, now=0) == c.decide(2, "timeout", rng=r2, now=0)


def test_fake_clock_is_what_a_gate_sees(clock: guards.FakeClock) -> None:
    seen: list[int] = []

    def gate(now: int, cause: str) -> bool:
        seen.append(now)
        return True

    assert policy().decide(1, "timeout", gate=gate).retry
    assert seen == [clock.now()]


@pytest.mark.parametrize(
    ("kwargs", "field", "kind"),
    [
        ({"max_attempts": 0}, "max_attempts", "zero"),
        ({"max_attempts": 101}, "max_attempts", "out_of_range"),
        ({"max_attempts": -1}, "max_attempts", "negative"),
        ({"max_attempts": 2**40}, "max_attempts", "out_of_range"),
        ({"max_retry_after": 86_401}, "max_retry_after", "out_of_range"),
        ({"max_retry_after": float("nan")}, "max_retry_after", "not_finite"),
        ({"min_attempt_time": -1}, "min_attempt_time", "negative"),
        ({"unkeyed_side_effects": "always"}, "unkeyed_side_effects", "out_of_range"),
        (
            {"unkeyed_side_effects": "retry_throttled", "retry_throttled": False},
            "unkeyed_side_effects",
            "inconsistent",
        ),
        ({"backoff": {"base": 0}}, "backoff.base", "zero"),
        ({"backoff": {"base": 1.0, "cap": 0.5}}, "backoff.cap", "inconsistent"),
        ({"backoff": {"multiplier": float("nan")}}, "backoff.multiplier", "not_finite"),
        ({"backoff": {"jitter": "some"}}, "backoff.jitter", "out_of_range"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, Any], field: str, kind: str) -> None:
    with config_error(field, kind):
        guards.RetryPolicy(**kwargs)


def test_wrong_types_and_bad_arguments() -> None:
    with type_error("retry_timeouts"):
        guards.RetryPolicy(retry_timeouts=1)  # type: ignore[arg-type]
    with type_error("backoff"):
        guards.RetryPolicy(backoff=0.1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown setting"):
        guards.RetryPolicy(backoff={"bse": 0.1})  # type: ignore[arg-type]
    with type_error("backoff.base"):
        guards.RetryPolicy(backoff={"base": "fast"})  # type: ignore[arg-type]
    p = guards.RetryPolicy()
    with pytest.raises(ValueError, match="`outcome`"):
        p.decide(1, "boom", now=0)  # type: ignore[arg-type]
    with type_error("outcome"):
        p.decide(1, 5, now=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`idempotency`"):
        p.decide(1, "timeout", idempotency="maybe", now=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`attempts_made`"):
        p.decide(-1, "timeout", now=0)
    with pytest.raises(ValueError, match="`retry_after`"):
        p.decide(1, "throttled", retry_after=-1, now=0)
    with type_error("deadline"):
        p.decide(1, "timeout", deadline=5, now=0)  # type: ignore[arg-type]
    assert sum(p.stats().values()) == 0  # nothing was decided


def test_threads_share_one_policy() -> None:
    p = guards.RetryPolicy(max_attempts=5, seed=1)

    def work(t: int) -> int:
        retries = 0
        for i in range(2000):
            d = p.decide(1 + i % 5, "timeout", now=t)
            if d.retry:
                assert d.delay_ns is not None and d.delay_ns <= p.backoff.max_delay_ns(i % 5)
                retries += 1
        return retries

    retries = sum(run_threads(4, work))
    s = p.stats()
    assert s["retries"] == retries == 4 * 1600
    assert s["attempts_exhausted"] == 4 * 400


def test_a_seed_out_of_range_names_its_field() -> None:
    for make in (
        lambda: guards.RetryPolicy(seed=-1),
        lambda: guards.RetryPolicy(seed=2**64),
        lambda: guards.Rng(2**64),
    ):
        with pytest.raises(guards.ConfigError) as info:
            make()
        assert info.value.field == "seed"
