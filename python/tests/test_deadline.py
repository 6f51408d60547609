"""Deadline, DeadlineConfig, AttemptBudget and the grpc-timeout / milliseconds headers."""

from __future__ import annotations

import datetime
import inspect
import math
import pickle

import pytest
from helpers import config_error, run_threads, type_error

import guards

MS = 1_000_000
S = 1_000_000_000


def test_after_at_and_none() -> None:
    d = guards.Deadline.after(2, now=100 * S)
    assert d.expires_at == 102 * S
    assert d == guards.Deadline.at(102 * S) == guards.Deadline(102 * S)
    assert not d.is_none()
    n = guards.Deadline.none()
    assert n.is_none() and n.expires_at is None and n == guards.Deadline()
    assert guards.Deadline.after(datetime.timedelta(milliseconds=5), now=0).expires_at == 5 * MS
    # Saturates instead of overflowing: an enormous timeout is "no deadline".
    assert guards.Deadline.after(guards.Nanos(2**64 - 1), now=5).is_none()


def test_time_left_and_expiry() -> None:
    d = guards.Deadline.at(10 * MS)
    assert d.time_left_ns(now=4 * MS) == 6 * MS
    assert d.time_left(now=4 * MS) == 0.006
    assert d.time_left_ns(now=11 * MS) == 0
    assert not d.is_expired(now=10 * MS - 1)
    assert d.is_expired(now=10 * MS)
    n = guards.Deadline.none()
    assert n.time_left(now=0) == math.inf
    assert n.time_left_ns(now=0) is None
    assert not n.is_expired(now=2**64 - 1)


def test_min_is_the_earlier_and_ordering() -> None:
    a, b = guards.Deadline.at(5), guards.Deadline.at(9)
    assert a.min(b) == a and b.min(a) == a
    assert guards.Deadline.none().min(b) == b
    assert a < b < guards.Deadline.none()
    assert len({a, guards.Deadline.at(5), b}) == 2


def test_attempt_budget_decisions() -> None:
    cfg = guards.DeadlineConfig(attempt_timeout=0.06, margin=0.001)
    request = guards.Deadline.after(2, now=0)
    b = cfg.attempt_budget(request, now=0)
    assert (b.decision, b.should_start, b.budget_ns, b.budget) == ("start", True, 59 * MS, 0.059)
    assert b.attempt_deadline(now=0) == guards.Deadline.at(59 * MS)
    late = 2 * S - 10 * MS
    assert cfg.attempt_budget(request, now=late).budget_ns == 9 * MS
    at = cfg.attempt_budget(request, now=2 * S)
    assert (at.decision, at.should_start, at.budget, at.left) == ("expired", False, None, None)
    assert at.attempt_deadline(now=2 * S) is None
    tiny = cfg.attempt_budget(request, now=2 * S - MS)
    assert (tiny.decision, tiny.left_ns, tiny.left) == ("too_little_left", MS, 0.001)
    # Same answer from the Deadline method with explicit timings.
    assert request.attempt_budget(0.06, 0.001, now=late) == cfg.attempt_budget(request, now=late)
    # No deadline: the attempt timeout alone.
    assert cfg.attempt_budget(None, now=0).budget_ns == 59 * MS
    assert repr(b) == "AttemptBudget('start', budget_ns=59000000)"


def test_too_little_left_without_a_deadline_reports_infinite_left() -> None:
    b = guards.Deadline.none().attempt_budget(guards.Nanos(5), guards.Nanos(5), now=0)
    assert b.decision == "too_little_left"
    assert b.left == math.inf and b.left_ns is None


def test_default_now_reads_the_fake_clock(clock: guards.FakeClock) -> None:
    d = guards.Deadline.after(0.5)
    assert d.expires_at == clock.now() + 500 * MS
    clock.advance(0.2)
    assert d.time_left_ns() == 300 * MS
    assert d.to_millis() == "300"
    clock.advance(0.3)
    assert d.is_expired()


def test_grpc_timeout_header_round_trip() -> None:
    d = guards.Deadline.at(100 * S + 59 * MS)
    assert d.to_grpc_timeout(now=100 * S) == "59000000n"
    assert guards.Deadline.none().to_grpc_timeout(now=0) is None
    assert guards.encode_grpc_timeout(0.059) == "59000000n"
    assert guards.encode_grpc_timeout(guards.Nanos(0)) == "0n"
    assert guards.encode_grpc_timeout(3600) == "3600000m"
    assert guards.parse_grpc_timeout("59m") == guards.Nanos(59 * MS)
    assert guards.parse_grpc_timeout(b"2S").seconds == 2.0
    assert guards.Deadline.from_grpc_timeout("1S", now=5).expires_at == S + 5


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("", "empty"),
        ("12", "missing_unit"),
        ("5s", "unknown_unit"),
        ("m", "no_digits"),
        ("1.5S", "invalid_character"),
        (" 1S", "invalid_character"),
        ("123456789n", "too_many_digits"),
        ("99999999H", "overflow"),
    ],
)
def test_bad_grpc_timeouts_name_the_reason(value: str, kind: str) -> None:
    with pytest.raises(guards.HeaderError) as info:
        guards.parse_grpc_timeout(value)
    assert isinstance(info.value, ValueError)
    assert info.value.kind == kind
    with pytest.raises(guards.HeaderError):
        guards.Deadline.from_grpc_timeout(value, now=0)


def test_millis_header() -> None:
    assert guards.encode_millis(0.0599) == "59"
    assert guards.encode_millis(guards.Nanos(999_999)) == "0"
    assert guards.parse_millis("0060") == guards.Nanos(60 * MS)
    assert guards.Deadline.from_millis("250", now=S).expires_at == S + 250 * MS
    assert guards.Deadline.at(S).to_millis(now=0) == "1000"
    for value, kind in [("", "empty"), ("-5", "invalid_character"), ("9" * 30, "overflow")]:
        with pytest.raises(guards.HeaderError) as info:
            guards.parse_millis(value)
        assert info.value.kind == kind


def test_config_defaults_and_validation() -> None:
    cfg = guards.DeadlineConfig()
    assert (cfg.attempt_timeout, cfg.margin) == (0.06, 0.001)
    sig = inspect.signature(guards.DeadlineConfig)
    assert {k: p.default for k, p in sig.parameters.items()} == {
        "attempt_timeout": 0.06,
        "margin": 0.001,
    }
    assert guards.DeadlineConfig(attempt_timeout=0.06) == cfg
    with config_error("attempt_timeout", "zero"):
        guards.DeadlineConfig(attempt_timeout=0)
    with config_error("attempt_timeout", "out_of_range"):
        guards.DeadlineConfig(attempt_timeout=86_401)
    with config_error("attempt_timeout", "not_finite"):
        guards.DeadlineConfig(attempt_timeout=float("nan"))
    with config_error("margin", "negative"):
        guards.DeadlineConfig(margin=-0.001)
    with config_error("margin", "inconsistent"):
        guards.DeadlineConfig(attempt_timeout=0.01, margin=0.01)
    with type_error("margin"):
        guards.DeadlineConfig(margin="1ms")  # type: ignore[arg-type]


def test_bad_arguments() -> None:
    with type_error("deadline"):
        guards.DeadlineConfig().attempt_budget(5, now=0)  # type: ignore[arg-type]
    with type_error("other"):
        guards.Deadline.none().min(3)  # type: ignore[arg-type]
    with type_error("value"):
        guards.parse_grpc_timeout(5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`expires_at`"):
        guards.Deadline(-1)
    with pytest.raises(ValueError, match="`timeout`"):
        guards.Deadline.after(-1.0, now=0)
    with type_error("instant"):
        guards.Deadline.at(1.5)  # type: ignore[arg-type]


def test_deadlines_pickle_and_repr() -> None:
    for d in (guards.Deadline.at(7), guards.Deadline.none()):
        assert pickle.loads(pickle.dumps(d)) == d
    assert repr(guards.Deadline.at(7)) == "Deadline(expires_at=7)"
    assert repr(guards.Deadline.none()) == "Deadline(None)"


def test_shared_between_threads() -> None:
    cfg = guards.DeadlineConfig()
    d = guards.Deadline.at(S)

    def work(t: int) -> int:
        starts = 0
        for i in range(2000):
            if cfg.attempt_budget(d, now=t * 1000 + i * 400_000).should_start:
                starts += 1
        return starts

    results = run_threads(4, work)
    # Deterministic per thread: starts while at least margin + 1 ns is left.
    for t, starts in enumerate(results):
        expected = sum(1 for i in range(2000) if S - (t * 1000 + i * 400_000) > MS)
        assert starts == expected
