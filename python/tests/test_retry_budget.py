"""RetryBudget in its four modes: deposits, withdrawals, receipts, gates, stats, threads."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from helpers import config_error, run_threads, type_error

import guards

S = 1_000_000_000


def defaults_of(f: Any) -> dict[str, Any]:
    return {k: p.default for k, p in inspect.signature(f).parameters.items()}


def test_per_mode_defaults_match_core_and_the_signatures() -> None:
    cases: list[tuple[Any, dict[str, Any]]] = [
        (guards.RetryBudget.token_bucket, {"capacity": 10.0, "ratio": 0.1}),
        (guards.RetryBudget.grpc, {"max_tokens": 10.0, "token_ratio": 0.1}),
        (
            guards.RetryBudget.aws,
            {
                "capacity": 500,
                "transient_cost": 5,
                "timeout_cost": 10,
                "throttled_cost": 5,
                "hedge_cost": 5,
                "success_increment": 1,
            },
        ),
        (guards.RetryBudget.windowed, {"ttl": 10.0, "min_retries_per_sec": 10.0, "percent_can_retry": 0.2}),
    ]
    for ctor, want in cases:
        assert defaults_of(ctor) == want
        b = ctor()
        cfg = b.config()
        assert cfg.pop("mode") == b.mode == ctor.__name__
        assert cfg == want
    assert guards.RetryBudget().mode == "token_bucket"
    assert guards.RetryBudget(mode="aws").config() == guards.RetryBudget.aws().config()


def test_token_bucket() -> None:
    b = guards.RetryBudget.token_bucket(capacity=2.0, ratio=0.5)
    assert b.tokens() == 2.0
    assert b.withdraw() is not None and b.withdraw() is not None
    assert b.withdraw() is None
    b.deposit()
    b.deposit()
    assert b.tokens() == 1.0 and b.tokens_micros() == 1_000_000
    assert b.allow_retry() is True and b.allow_retry() is False
    for _ in range(10):
        b.deposit()
    assert b.tokens() == 2.0  # capped
    assert b.stats() == {"deposits": 12, "withdrawals": 3, "refusals": 2, "refunds": 0, "failures": 0}


def test_grpc_throttle() -> None:
    b = guards.RetryBudget.grpc(max_tokens=4.0, token_ratio=0.5)
    assert b.tokens() == 4.0
    b.on_failure()
    b.on_failure()
    # At most half of max_tokens left: retries stop.
    assert b.tokens() == 2.0 and b.withdraw() is None
    b.on_success()
    assert b.tokens() == 2.5 and b.withdraw() is not None
    assert b.stats()["failures"] == 2


def test_aws_quota_prices_by_cause_and_refunds() -> None:
    b = guards.RetryBudget.aws(capacity=20)
    r = b.withdraw("timeout")
    assert r is not None and (r.cost, r.cost_micros, r.used) == (10.0, 10_000_000, False)
    assert b.tokens() == 10.0
    t = b.withdraw("transient")
    assert t is not None and t.cost == 5.0
    assert b.withdraw("timeout") is None  # 5 left, a timeout costs 10
    b.on_success(r)
    assert r.used and b.tokens() == 15.0
    with pytest.raises(RuntimeError, match="already"):
        b.on_success(r)
    other = guards.RetryBudget.aws()
    with pytest.raises(ValueError, match="another"):
        other.on_success(t)
    assert not t.used
    b.on_success()  # a first attempt's success: + success_increment
    assert b.tokens() == 16.0
    s = b.stats()
    assert (s["withdrawals"], s["refusals"], s["refunds"], s["deposits"]) == (2, 1, 1, 1)


def test_windowed_budget(clock: guards.FakeClock) -> None:
    b = guards.RetryBudget.windowed(ttl=1, min_retries_per_sec=0.0, percent_can_retry=0.5)
    for _ in range(4):
        b.deposit()
    assert b.tokens() == 2.0
    assert b.withdraw() is not None and b.withdraw() is not None
    assert b.withdraw() is None
    clock.advance(2)  # the window slid past every deposit and withdrawal
    assert b.tokens() == 0.0


def test_budget_is_a_native_gate_for_retry_policy() -> None:
    policy = guards.RetryPolicy(backoff={"jitter": "none"})
    budget = guards.RetryBudget.token_bucket(capacity=1.0, ratio=0.1)
    assert policy.decide(1, "timeout", gate=budget, now=0).retry
    d = policy.decide(1, "timeout", gate=budget, now=0)
    assert (d.retry, d.reason) == (False, "budget_exhausted")
    assert budget.stats()["withdrawals"] == 1 and budget.stats()["refusals"] == 1
    # Asked only when everything else allows the retry.
    policy.decide(1, "success", gate=budget, now=0)
    assert budget.stats()["refusals"] == 1


@pytest.mark.parametrize(
    ("kwargs", "field", "kind"),
    [
        ({"capacity": float("nan")}, "capacity", "not_finite"),
        ({"ratio": float("inf")}, "ratio", "not_finite"),
        ({"ratio": -0.1}, "ratio", "negative"),
        ({"mode": "grpc", "max_tokens": 0.0}, "max_tokens", "zero"),
        ({"mode": "grpc", "token_ratio": -1.0}, "token_ratio", "negative"),
        ({"mode": "aws", "capacity": 0}, "capacity", "zero"),
        ({"mode": "aws", "capacity": -5}, "capacity", "negative"),
        ({"mode": "aws", "success_increment": 501}, "success_increment", "inconsistent"),
        ({"mode": "windowed", "ttl": 0}, "ttl", "zero"),
        ({"mode": "windowed", "ttl": -1}, "ttl", "negative"),
        ({"mode": "windowed", "min_retries_per_sec": float("nan")}, "min_retries_per_sec", "not_finite"),
        ({"mode": "lottery"}, "mode", "out_of_range"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, Any], field: str, kind: str) -> None:
    with config_error(field, kind):
        guards.RetryBudget(**kwargs)


def test_wrong_types_and_settings_of_another_mode() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'ratio'.*max_tokens"):
        guards.RetryBudget(mode="grpc", ratio=0.1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'ttl'"):
        guards.RetryBudget(ttl=1)
    with type_error("capacity"):
        guards.RetryBudget.aws(capacity=2.5)  # type: ignore[arg-type]
    with type_error("ratio"):
        guards.RetryBudget.token_bucket(ratio="0.1")  # type: ignore[arg-type]
    with type_error("mode"):
        guards.RetryBudget(mode=1)  # type: ignore[arg-type]
    b = guards.RetryBudget()
    with pytest.raises(ValueError, match="`cause`"):
        b.withdraw("bad luck")  # type: ignore[arg-type]
    with type_error("receipt"):
        b.on_success(5)  # type: ignore[arg-type]
    assert b.stats()["withdrawals"] == 0


def test_threads_share_one_budget_and_never_overdraw() -> None:
    b = guards.RetryBudget.token_bucket(capacity=100.0, ratio=0.25)

    def work(_t: int) -> int:
        granted = 0
        for i in range(2000):
            b.deposit()
            if i % 2 == 0 and b.withdraw() is not None:
                granted += 1
        return granted

    granted = sum(run_threads(4, work))
    s = b.stats()
    assert s["withdrawals"] == granted
    assert s["withdrawals"] + s["refusals"] == 4 * 1000
    assert s["deposits"] == 4 * 2000
    # Tokens in = 100 + 0.25 per deposit (capped), tokens out = 1 per withdrawal.
    assert granted <= 100 + 0.25 * 8000
    assert 0 <= b.tokens() <= 100


def test_threads_hand_back_one_receipt_once() -> None:
    b = guards.RetryBudget.aws()
    r = b.withdraw("timeout")
    assert r is not None

    def work(_t: int) -> bool:
        try:
            b.on_success(r)
        except RuntimeError:
            return False
        return True

    assert run_threads(6, work).count(True) == 1
    assert b.stats()["refunds"] == 1
