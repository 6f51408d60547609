"""Backoff: ceilings, jitter ranges, seeded determinism, stable offsets, validation."""

from __future__ import annotations

import inspect

import pytest
from helpers import config_error, run_threads, type_error

import guards

MS = 1_000_000


def test_defaults_match_core_and_the_signature() -> None:
    b = guards.Backoff()
    cfg = b.config()
    assert cfg == {"base": 0.025, "cap": 20.0, "multiplier": 2.0, "jitter": "full"}
    sig = inspect.signature(guards.Backoff)
    defaults = {k: p.default for k, p in sig.parameters.items()}
    assert defaults == {**cfg, "seed": None}


def test_ceiling_is_capped_exponential() -> None:
    b = guards.Backoff(base=0.01, cap=0.1, jitter="none")
    assert [b.ceiling_ns(n) for n in range(6)] == [10 * MS, 20 * MS, 40 * MS, 80 * MS, 100 * MS, 100 * MS]
    assert b.ceiling(2) == 0.04
    assert b.ceiling_ns(2**32 - 1) == 100 * MS
    assert [b.delay_ns(n) for n in range(3)] == [10 * MS, 20 * MS, 40 * MS]
    assert b.max_delay_ns(3) == 80 * MS


def test_non_doubling_multiplier() -> None:
    b = guards.Backoff(base=0.1, cap=10, multiplier=1.5, jitter="none")
    assert b.ceiling_ns(2) == 225 * MS


def test_full_jitter_stays_within_the_ceiling() -> None:
    b = guards.Backoff(base=0.01, cap=1.0, jitter="full", seed=7)
    for retry in range(8):
        ceiling = b.ceiling_ns(retry)
        draws = [b.delay_ns(retry) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in draws)
        assert len(set(draws)) > 1  # it is jittered


def test_equal_jitter_keeps_half() -> None:
    b = guards.Backoff(base=0.01, cap=1.0, jitter="equal", seed=3)
    for retry in range(6):
        ceiling = b.ceiling_ns(retry)
        assert all(ceiling // 2 <= b.delay_ns(retry) <= ceiling for _ in range(100))


def test_decorrelated_jitter_grows_from_prev() -> None:
    b = guards.Backoff(base=0.01, cap=5.0, jitter="decorrelated", seed=11)
    prev = 0
    for retry in range(20):
        d = b.delay_ns(retry, guards.Nanos(prev))
        assert 10 * MS <= d <= min(5_000 * MS, max(prev, 10 * MS) * 3)
        prev = d


def test_seeded_draws_are_reproducible_and_rng_can_be_shared() -> None:
    a = guards.Backoff(seed=42)
    b = guards.Backoff(seed=42)
    assert [a.delay_ns(3) for _ in range(10)] == [b.delay_ns(3) for _ in range(10)]
    r1, r2 = guards.Rng(5), guards.Rng(5)
    c = guards.Backoff()
    assert [c.delay_ns(2, rng=r1) for _ in range(5)] == [c.delay_ns(2, rng=r2) for _ in range(5)]
    # delay (seconds) and delay_ns draw the same way.
    r3, r4 = guards.Rng(9), guards.Rng(9)
    assert c.delay(4, rng=r3) * 1e9 == pytest.approx(c.delay_ns(4, rng=r4), abs=1)


def test_delay_from_bits_is_deterministic() -> None:
    b = guards.Backoff(base=0.01, cap=1.0, jitter="full")
    assert b.delay_from_bits_ns(0, 0) == 0
    assert b.delay_from_bits_ns(0, 2**64 - 1) <= 10 * MS
    assert b.delay_from_bits_ns(1, 123, guards.Nanos(5)) == b.delay_from_bits_ns(1, 123, guards.Nanos(5))
    assert b.delay_from_bits(3, 2**63) == b.delay_from_bits_ns(3, 2**63) / 1e9


def test_rng_reference_sequence() -> None:
    # SplitMix64 with seed 0: the reference generator's first output.
    r = guards.Rng(0)
    assert r.next_u64() == 0xE220A8397B1DCDAF
    r.reseed(0)
    assert r.next_u64() == 0xE220A8397B1DCDAF
    assert 0 <= r.next_f64() < 1
    assert r.below(0) == 0 and r.below(1) == 0 and r.below(10) < 10


def test_stable_schedule_offsets() -> None:
    assert guards.fnv1a64("") == 0xCBF29CE484222325
    assert guards.fnv1a64("a") == guards.fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    period = guards.Nanos(60 * 1_000_000_000)
    off = guards.stable_offset_ns("job-7", period)
    assert 0 <= off < period.ns
    assert off == guards.fnv1a64("job-7") % period.ns
    run = guards.next_stable_run("job-7", period, now=10**12)
    assert run >= 10**12 and run % period.ns == off
    assert guards.next_stable_run("job-7", 60, now=run) == run
    assert guards.stable_offset_ns("x", 0) == 0


@pytest.mark.parametrize(
    ("kwargs", "field", "kind"),
    [
        ({"base": 0}, "base", "zero"),
        ({"base": 86_401}, "base", "out_of_range"),
        ({"base": -0.1}, "base", "negative"),
        ({"cap": 0}, "cap", "zero"),
        ({"cap": 0.01, "base": 0.02}, "cap", "inconsistent"),
        ({"multiplier": float("nan")}, "multiplier", "not_finite"),
        ({"multiplier": float("inf")}, "multiplier", "not_finite"),
        ({"multiplier": 0.5}, "multiplier", "out_of_range"),
        ({"multiplier": 0}, "multiplier", "zero"),
        ({"multiplier": -2}, "multiplier", "negative"),
        ({"multiplier": 101}, "multiplier", "out_of_range"),
        ({"jitter": "gaussian"}, "jitter", "out_of_range"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, object], field: str, kind: str) -> None:
    with config_error(field, kind):
        guards.Backoff(**kwargs)  # type: ignore[arg-type]


def test_wrong_types() -> None:
    with type_error("multiplier"):
        guards.Backoff(multiplier="2")  # type: ignore[arg-type]
    with type_error("multiplier"):
        guards.Backoff(multiplier=True)  # type: ignore[arg-type]
    with type_error("jitter"):
        guards.Backoff(jitter=1)  # type: ignore[arg-type]
    with type_error("seed"):
        guards.Backoff(seed=1.5)  # type: ignore[arg-type]
    b = guards.Backoff()
    with type_error("retry"):
        b.ceiling(1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`retry`"):
        b.ceiling(-1)
    with pytest.raises(ValueError, match="`retry`"):
        b.ceiling(2**32)
    with type_error("rng"):
        b.delay(1, rng=5)  # type: ignore[arg-type]
    with type_error("id"):
        guards.stable_offset_ns(5, 1)  # type: ignore[arg-type]


def test_threads_share_one_backoff() -> None:
    b = guards.Backoff(base=0.001, cap=0.5, seed=1)

    def work(_t: int) -> list[int]:
        return [b.delay_ns(i % 10) for i in range(3000)]

    for per_thread in run_threads(4, work):
        for i, d in enumerate(per_thread):
            assert 0 <= d <= b.ceiling_ns(i % 10)


def test_threads_sharing_one_rng_draw_each_word_exactly_once() -> None:
    shared = guards.Rng(1234)
    draws = run_threads(4, lambda _t: [shared.next_u64() for _ in range(3000)])
    got = [w for per_thread in draws for w in per_thread]
    fresh = guards.Rng(1234)
    assert sorted(got) == sorted(fresh.next_u64() for _ in range(12000))
