"""guards.sim.compare: the Basketly rows and the windows, computed by the simulator crate,
against a plain reading of the same result through the public ``SimResult`` API (the
definitions ``compare`` used before the crate computed them)."""

from __future__ import annotations

from typing import Optional, Union

import pytest

import guards.sim as sim
from guards.sim import _args
from guards.sim.compare import Windows, windows

Value = Union[float, str, None]

# A few presets and ends: windows inside the run, a run that ends inside the hiccup (no
# "after" window), breakers, hedges, a scaling event.
CASES = [
    (["C0", "C4", "C8"], 1, "20:00:25"),
    (["C6", "15t", "17x"], 2, "20:00:10"),
    (["C1", "H-hedge", "A-C7", "A-C7-fleet"], 3, "20:00:40"),
]


def clock(ns: int) -> str:
    text = _args.format_clock(ns, True)
    return text[:-4] if text.endswith(".000") else text


def reference_windows(r: sim.SimResult) -> Windows:
    start = r.start_ns
    end = start + len(r) * r.interval_ns
    dist = r.summary.get("disturbance")
    if isinstance(dist, dict):
        hs = _args.clock_ns("start", dist["start"])
        he = _args.clock_ns("end", dist["end"])
        after = he + 1_000_000_000
        return Windows(
            during_start=clock(max(min(hs + 2_000_000_000, he), start)),
            during_end=clock(min(he, end)),
            gauge_at=clock(min(he, end)),
            after_start=clock(after) if after < end else None,
            end=clock(end),
        )
    return Windows(clock(start), clock(end), clock(end), None, clock(end))


def reference_value(key: str, r: sim.SimResult, w: Windows) -> Value:
    """Basketly metric ``key`` read with the public API."""

    def during(name: str) -> Optional[float]:
        return r.mean(name, w.during_start, w.during_end) if name in r else None

    def total(name: str) -> Optional[float]:
        return r.sum(name, w.during_start, w.during_end) if name in r else None

    def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
        return None if a is None or b is None or b == 0 else a / b

    if key in ("shopapi_queue", "inside_stock"):
        at = _args.clock_ns("at", w.gauge_at) - r.interval_ns
        return r.at(key, _args.format_clock(max(at, 0), True)) if key in r else None
    if key in ("goodput_after", "db_stale_after"):
        name = key[: -len("_after")]
        return None if w.after_start is None else r.mean(name, w.after_start, w.end)
    if key == "stock_calls_x":
        need = [during("entry.cart.offered"), during("entry.checkout.offered")]
        if any(x is None for x in need):
            return None
        return ratio(during("stock_calls"), sum(x for x in need if x is not None))
    if key == "reserve_timeouts_pct":
        t = ratio(total("reserve_timeouts"), total("reserve_attempts"))
        return None if t is None else 100.0 * t
    if key == "recovered_at":
        v = r.summary.get("recovered_at")
        return v if isinstance(v, str) else "never"
    if key == "stock_p99_ms":
        v = r.summary["stock_latency_ms"]["p99"]
        return float(v) if isinstance(v, (int, float)) else None
    if key.startswith("fleet_stock_"):
        stock = r.summary.get("fleet", {}).get("shop-api", {}).get("stock", {})
        v = stock.get(key[len("fleet_stock_"):])
        return float(v) if isinstance(v, (int, float)) else None
    column = {"cart_failed": "entry.cart.failed"}.get(key, key)
    return during(column)


@pytest.mark.parametrize(("settings", "seed", "until"), CASES)
def test_basketly_rows_match_the_reference(settings: list[str], seed: int, until: str) -> None:
    cmp = sim.compare(settings, seed=seed, until=until)
    assert [m.key for m in sim.METRICS] == [
        "offered", "app_attempts", "goodput", "goodput_incl_degraded", "goodput_product",
        "goodput_cart", "degraded_cart", "cart_failed", "goodput_checkout", "stock_calls",
        "stock_calls_x", "stock_refused", "budget_refusals", "breaker_rejections",
        "bulkhead_rejections", "db_done", "db_stale", "duplicate_commits",
        "reserve_timeouts_pct", "shopapi_queue", "inside_stock", "goodput_after",
        "db_stale_after", "recovered_at", "stock_p99_ms", "fleet_stock_in_flight_max",
        "fleet_stock_cap_sum_max",
    ]
    compared = 0
    for s, r in cmp.results.items():
        w = windows(r)
        assert w == reference_windows(r)
        for m in sim.METRICS:
            got = cmp.value(m.key, s)
            want = reference_value(m.key, r, w)
            # The same numbers, bit for bit, and the same types (floats stay floats).
            assert type(got) is type(want), (m.key, s, got, want)
            assert got == want, (m.key, s, got, want)
            if m.key.startswith("fleet_"):
                # Only a run with fleet guards has them.
                assert (want is not None) == ("fleet" in s), (m.key, s, want)
            else:
                compared += want is not None
    # Most cells have a value (the run ending inside the hiccup has no "after" rows).
    rows = len([m for m in sim.METRICS if not m.key.startswith("fleet_")])
    assert compared >= rows * len(settings) - 3 * len(settings)


def test_rows_keep_labels_sections_and_units() -> None:
    rows = {m.key: (m.label, m.section, m.unit) for m in sim.METRICS}
    assert rows["goodput"] == ("goodput (full answers in time)", "during", "rate")
    assert rows["stock_calls_x"] == ("calls to stock per cart view + checkout", "during", "ratio")
    assert rows["reserve_timeouts_pct"] == ("reserve timeouts ÷ reserve attempts", "during", "pct")
    assert rows["shopapi_queue"] == ("queued in shop-api", "gauge", "count")
    assert rows["goodput_after"] == ("goodput", "after", "rate")
    assert rows["recovered_at"] == ("recovered at", "after", "clock")
    assert rows["stock_p99_ms"] == ("stock call P99, ms (as shop-api sees it)", "run", "ms")


def test_the_table_reads_the_crates_values() -> None:
    cmp = sim.compare(["C0", "C8"], seed=1, until="20:00:25")
    lines = cmp.table().splitlines()
    assert lines[0] == "Basketly, seed 1: C0, C8 side by side"
    recovered = next(line for line in lines if line.strip().startswith("recovered at"))
    assert recovered.split()[-2:] == ["never", "20:00:21"]
    x = next(line for line in lines if "per cart view + checkout" in line)
    assert x.split()[-1] == f"{cmp.value('stock_calls_x', 'C8'):.1f}×"


def test_custom_windows_are_honoured_and_checked() -> None:
    r = sim.basketly("C4", seed=1, until="20:00:25")
    m = next(m for m in sim.METRICS if m.key == "stock_calls")
    w = Windows("20:00:05", "20:00:10", "20:00:10", "20:00:12", "20:00:25")
    assert m.read(r, w) == r.mean("stock_calls", "20:00:05", "20:00:10")
    after = next(m for m in sim.METRICS if m.key == "goodput_after")
    assert after.read(r, w) == r.mean("goodput", "20:00:12", "20:00:25")
    with pytest.raises(ValueError, match="during_start"):
        m.read(r, Windows("noon", "20:00:10", "20:00:10", None, "20:00:25"))
    with pytest.raises(KeyError, match="nope"):
        r._r.basketly_metric("nope", "20:00:05", "20:00:10", "20:00:10", None, "20:00:25")
    with pytest.raises(TypeError):
        r._r.basketly_metric(1, "20:00:05", "20:00:10", "20:00:10", None, "20:00:25")  # type: ignore[arg-type]
