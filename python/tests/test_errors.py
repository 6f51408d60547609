"""The exception hierarchy and the attributes every refusal carries."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import guards

REFUSALS = [
    guards.BreakerOpen,
    guards.BulkheadFull,
    guards.BudgetExhausted,
    guards.LimitExceeded,
    guards.DeadlineExceeded,
    guards.AdmissionRejected,
    guards.QueueFull,
    guards.Throttled,
    guards.RetriesExhausted,
]


@pytest.mark.parametrize("cls", REFUSALS)
def test_every_refusal_is_a_guard_error_with_default_attributes(cls: type) -> None:
    assert issubclass(cls, guards.GuardError)
    assert issubclass(cls, Exception)
    e = cls("refused")
    assert e.reason is None
    assert e.retry_after is None
    assert e.retry_after_ns is None
    assert str(e) == "refused"
    assert cls.__module__ == "guards"
    assert getattr(guards, cls.__name__) is cls


def test_deadline_exceeded_is_also_a_timeout_error() -> None:
    assert issubclass(guards.DeadlineExceeded, TimeoutError)
    with pytest.raises(TimeoutError):
        raise guards.DeadlineExceeded("too late")
    with pytest.raises(guards.GuardError):
        raise guards.DeadlineExceeded("too late")


def test_retries_exhausted_carries_attempts_and_cause() -> None:
    last = ConnectionResetError("reset")
    e = guards.RetriesExhausted("gave up after 3 attempts")
    assert e.attempts == 0
    e.attempts = 3
    try:
        raise e from last
    except guards.RetriesExhausted as caught:
        assert caught.attempts == 3
        assert caught.__cause__ is last


def test_config_error_is_a_value_error_naming_the_field() -> None:
    assert issubclass(guards.ConfigError, ValueError)
    assert not issubclass(guards.ConfigError, guards.GuardError)
    with pytest.raises(ValueError) as info:
        guards.QueueDiscipline(capacity=0)
    err = info.value
    assert isinstance(err, guards.ConfigError)
    assert (err.field, err.kind) == ("capacity", "zero")
    assert err.expected == "1 to 65536"  # Python words, not Rust's `1..=65536`
    assert "..=" not in str(err)
    assert "capacity" in str(err)


@pytest.mark.parametrize(
    "make",
    [
        lambda: guards.Limiter(limit=0),
        lambda: guards.CircuitBreaker(probe_timeout=0),
        lambda: guards.CircuitBreaker(window_size=10**9),
        lambda: guards.AdaptiveThrottle(seed=2**64),
        lambda: guards.Admission(limits=[10, 50]),
        lambda: guards.RetryBudget(capacity=-1.0),
        lambda: guards.KeyedBreakers(slots=0),
    ],
)
def test_config_errors_use_no_rust_wording(make: Any) -> None:
    with pytest.raises(guards.ConfigError) as info:
        make()
    text = f"{info.value} {info.value.expected}"
    for rust in ("..=", "::MAX", "CircuitBreaker<", "CAP", "u64", "usize", "Some(", "None)"):
        assert rust not in text, text


def test_refusals_raised_natively_carry_reason() -> None:
    q = guards.QueueDiscipline(capacity=1)
    q.push(1, now=0)
    with pytest.raises(guards.QueueFull) as info:
        q.push(2, now=0)
    assert info.value.reason == "full"
    assert info.value.retry_after is None
    assert "refused" in str(info.value)


def test_errors_pickle_with_their_attributes() -> None:
    q = guards.QueueDiscipline(capacity=1)
    q.push(1, now=0)
    with pytest.raises(guards.QueueFull) as info:
        q.push(2, now=0)
    copy = pickle.loads(pickle.dumps(info.value))
    assert type(copy) is guards.QueueFull
    assert copy.reason == "full"
    with pytest.raises(guards.ConfigError) as cinfo:
        guards.QueueDiscipline(target=1.0, interval=0.5)
    ccopy = pickle.loads(pickle.dumps(cinfo.value))
    assert (ccopy.field, ccopy.kind) == ("target", "inconsistent")
    d = pickle.loads(pickle.dumps(guards.DeadlineExceeded("late")))
    assert isinstance(d, TimeoutError) and str(d) == "late"
