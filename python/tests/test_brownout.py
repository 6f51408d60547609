"""Brownout and BrownoutTable: decisions by refusal kind, counters, registration."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from helpers import config_error, run_threads, type_error

import guards

KINDS: list[Any] = ["breaker_open", "bulkhead_full", "budget_exhausted", "throttled", "timeout", "overloaded", "failed"]
LOCAL = KINDS[:4]


def test_defaults_match_core_and_the_signature() -> None:
    b = guards.Brownout()
    assert b.config() == {"optional": False, "exempt": False, "fallback_on": KINDS}
    sig = {k: p.default for k, p in inspect.signature(guards.Brownout).parameters.items()}
    assert sig == {"optional": False, "exempt": False, "fallback_on": None}


def test_required_fails_fast_optional_serves_fallback() -> None:
    required, optional = guards.Brownout(), guards.Brownout(optional=True)
    for kind in KINDS:
        assert required.on_refusal(kind) == "fail_fast"
        assert optional.on_refusal(kind) == "serve_fallback"
    optional.on_full()
    assert optional.stats() == {"full": 1, "degraded": 7, "errors": 0, "proceeded": 0}
    assert required.stats()["errors"] == 7


def test_fallback_only_for_listed_kinds_and_masks() -> None:
    b = guards.Brownout(optional=True, fallback_on=["breaker_open", "timeout"])
    assert b.decide("breaker_open") == "serve_fallback"
    assert b.decide("timeout") == "serve_fallback"
    assert b.decide("failed") == "fail_fast"
    assert b.config()["fallback_on"] == ["breaker_open", "timeout"]
    assert b.stats()["degraded"] == 0  # decide does not count
    masked = guards.Brownout(optional=True, fallback_on=0b1000)
    assert masked.config()["fallback_on"] == ["throttled"]
    assert guards.Brownout(optional=True, fallback_on=("overloaded",)).decide("overloaded") == "serve_fallback"


def test_exempt_operations_proceed_past_local_refusals() -> None:
    b = guards.Brownout(exempt=True)
    for kind in KINDS:
        assert b.decide(kind) == ("proceed" if kind in LOCAL else "fail_fast")


def test_operation_key_is_fnv1a() -> None:
    assert guards.operation_key("") == 0xCBF29CE484222325
    assert guards.operation_key("stock") == guards.fnv1a64("stock")


def test_table_registration_and_decisions() -> None:
    t = guards.BrownoutTable()
    assert (t.capacity, len(t)) == (16, 0)
    assert t.register("recommendations", optional=True) == 0
    assert t.register(guards.operation_key("checkout")) == 1
    assert "recommendations" in t and "checkout" in t and "search" not in t
    assert t.on_refusal("recommendations", "timeout") == "serve_fallback"
    assert t.on_refusal("checkout", "timeout") == "fail_fast"
    assert t.on_refusal("search", "timeout") == "fail_fast"  # unknown
    assert t.on_full("checkout") is True
    assert t.on_full("search") is False
    assert t.unknown() == 2
    assert t.stats("recommendations") == {"full": 0, "degraded": 1, "errors": 0, "proceeded": 0}
    assert t.stats("search") is None
    assert t.totals() == {"full": 1, "degraded": 1, "errors": 1, "proceeded": 0}
    assert t.stats() == {**t.totals(), "unknown": 2}
    assert t.config("recommendations") == {"optional": True, "exempt": False, "fallback_on": KINDS}
    with pytest.raises(ValueError, match="already registered"):
        t.register("checkout")
    with config_error("fallback_on", "inconsistent"):
        t.register("x", optional=True, fallback_on=[])


def test_full_tables() -> None:
    t = guards.BrownoutTable(capacity=2)
    t.register(1)
    t.register(2)
    with pytest.raises(RuntimeError, match="full"):
        t.register(3)
    with pytest.raises(ValueError, match="already"):
        t.register(1)  # a duplicate is reported as such even when full
    big = guards.BrownoutTable(capacity=100)
    for k in range(100):
        big.register(k)
    with pytest.raises(RuntimeError):
        big.register(100)
    assert len(big) == 100


@pytest.mark.parametrize(
    ("kwargs", "field", "kind"),
    [
        ({"fallback_on": 128}, "fallback_on", "out_of_range"),
        ({"fallback_on": 256}, "fallback_on", "out_of_range"),
        ({"fallback_on": -1}, "fallback_on", "negative"),
        ({"fallback_on": ["meteor"]}, "fallback_on", "out_of_range"),
        ({"optional": True, "fallback_on": []}, "fallback_on", "inconsistent"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, object], field: str, kind: str) -> None:
    with config_error(field, kind):
        guards.Brownout(**kwargs)  # type: ignore[arg-type]


def test_wrong_types_and_values() -> None:
    with type_error("fallback_on"):
        guards.Brownout(fallback_on="timeout")  # type: ignore[arg-type]
    with type_error("optional"):
        guards.Brownout(optional=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`kind`"):
        guards.Brownout().decide("meteor")  # type: ignore[arg-type]
    with type_error("key"):
        guards.BrownoutTable().on_full(1.5)  # type: ignore[arg-type]
    with config_error("capacity", "zero"):
        guards.BrownoutTable(capacity=0)
    with config_error("capacity", "out_of_range"):
        guards.BrownoutTable(capacity=1025)


def test_threads_share_one_table() -> None:
    t = guards.BrownoutTable()
    t.register("a", optional=True)
    t.register("b")

    def work(i: int) -> None:
        for k in range(2000):
            t.on_refusal("a" if k % 2 else "b", "timeout")
            t.on_full("a")

    run_threads(4, work)
    assert t.stats("a") == {"full": 8000, "degraded": 4000, "errors": 0, "proceeded": 0}
    assert t.stats("b") == {"full": 0, "degraded": 0, "errors": 4000, "proceeded": 0}
