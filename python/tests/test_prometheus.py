"""The Prometheus collector: every stat exported with the right type and labels, safe to
import without prometheus_client, safe to use from several threads."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from typing import Any

import guards
import pytest
from helpers import config_error, run_threads, type_error

prometheus_client = pytest.importorskip("prometheus_client")
from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402


class FakeGuard:
    """Anything with stats(): the collector does not care what it is."""

    metrics_kind = "fake"

    def __init__(self, **stats: Any) -> None:
        self._stats = stats

    def stats(self) -> dict[str, Any]:
        return dict(self._stats)


def scrape(
    collector: guards.PrometheusCollector,
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(collector)
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in registry.collect():
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_counters_gauges_and_per_priority_lists() -> None:
    g = FakeGuard(served=5, in_flight=3, limit=80, admitted_by_priority=[1, 0, 2], tokens=9.5)
    samples = scrape(guards.PrometheusCollector({"door": g}))
    assert samples[("guards_fake_served_total", (("guard", "door"),))] == 5
    assert samples[("guards_fake_in_flight", (("guard", "door"),))] == 3
    assert samples[("guards_fake_limit", (("guard", "door"),))] == 80
    assert samples[("guards_fake_tokens", (("guard", "door"),))] == 9.5
    for prio, want in enumerate([1, 0, 2]):
        key = (
            "guards_fake_admitted_by_priority_total",
            (("guard", "door"), ("priority", str(prio))),
        )
        assert samples[key] == want


def test_types_in_the_exposition() -> None:
    g = FakeGuard(served=1, in_flight=2)
    registry = CollectorRegistry()
    registry.register(guards.PrometheusCollector({"a": g}))
    text = generate_latest(registry).decode()
    assert "# TYPE guards_fake_served_total counter" in text
    assert "# TYPE guards_fake_in_flight gauge" in text


def test_guards_of_one_kind_share_a_family() -> None:
    c = guards.PrometheusCollector({"a": FakeGuard(served=1), "b": FakeGuard(served=2)})
    samples = scrape(c)
    assert samples[("guards_fake_served_total", (("guard", "a"),))] == 1
    assert samples[("guards_fake_served_total", (("guard", "b"),))] == 2


def test_native_guards_and_layer_objects(clock: guards.FakeClock) -> None:
    q = guards.QueueDiscipline(capacity=2)
    q.push(1)
    q.push(2)
    with pytest.raises(guards.QueueFull):
        q.push(3)
    policy = guards.RetryPolicy()
    policy.decide(1, "permanent")

    @guards.retry
    def ok() -> int:
        return 1

    ok()
    ok()
    c = guards.PrometheusCollector(namespace="shop")
    c.add("waiters", q)
    c.add("stock", policy)
    c.add("get_stock", ok.retry)
    samples = scrape(c)
    assert samples[("shop_queue_discipline_enqueued_total", (("guard", "waiters"),))] == 2
    assert samples[("shop_queue_discipline_rejected_full_total", (("guard", "waiters"),))] == 1
    assert samples[("shop_retry_policy_permanent_total", (("guard", "stock"),))] == 1
    assert samples[("shop_retry_calls_total", (("guard", "get_stock"),))] == 2


def test_every_scrape_reads_the_current_counters() -> None:
    q = guards.QueueDiscipline(capacity=8)
    c = guards.PrometheusCollector({"q": q})
    key = ("guards_queue_discipline_enqueued_total", (("guard", "q"),))
    assert scrape(c)[key] == 0
    q.push(1, now=0)
    assert scrape(c)[key] == 1


def test_add_remove_replace_and_names() -> None:
    c = guards.PrometheusCollector()
    g = FakeGuard(served=1)
    assert c.add("x", g) is g
    c.add("y", FakeGuard(served=2))
    assert c.names() == ["x", "y"]
    c.add("x", FakeGuard(served=7))  # replaces
    assert scrape(c)[("guards_fake_served_total", (("guard", "x"),))] == 7
    assert c.remove("y") is True
    assert c.remove("y") is False
    assert c.names() == ["x"]


def test_a_failing_guard_does_not_break_the_scrape() -> None:
    class Broken:
        def stats(self) -> dict[str, int]:
            raise RuntimeError("boom")

    c = guards.PrometheusCollector({"bad": Broken(), "good": FakeGuard(served=3)})
    assert scrape(c)[("guards_fake_served_total", (("guard", "good"),))] == 3


def test_odd_stats_are_skipped() -> None:
    g = FakeGuard(**{"ok": 1, "bad name": 2, "text": "x", "flag": True})
    samples = scrape(guards.PrometheusCollector({"g": g}))
    names = {name for name, _ in samples}
    assert names == {"guards_fake_ok_total", "guards_fake_flag_total"}


def test_custom_label_name() -> None:
    samples = scrape(guards.PrometheusCollector({"a": FakeGuard(served=1)}, label="dependency"))
    assert samples[("guards_fake_served_total", (("dependency", "a"),))] == 1


def test_scrapes_while_threads_add_and_remove_guards() -> None:
    c = guards.PrometheusCollector()
    stop = threading.Event()
    scrapes = {"n": 0}

    def scraper() -> None:
        while not stop.is_set():
            scrape(c)
            scrapes["n"] += 1

    t = threading.Thread(target=scraper)
    t.start()
    try:
        run_threads(4, lambda i: [c.add(f"g{i}_{k}", FakeGuard(served=k)) for k in range(200)])
        run_threads(4, lambda i: [c.remove(f"g{i}_{k}") for k in range(0, 200, 2)])
    finally:
        stop.set()
        t.join()
    assert len(c.names()) == 400
    assert scrapes["n"] >= 1
    final = scrape(c)
    assert len(final) == 400


def test_bad_input_names_the_field() -> None:
    with type_error("name"):
        guards.PrometheusCollector().add(5, FakeGuard())  # type: ignore[arg-type]
    with config_error("name", "out_of_range"):
        guards.PrometheusCollector().add("", FakeGuard())
    with type_error("guard"):
        guards.PrometheusCollector().add("x", object())
    with type_error("guards"):
        guards.PrometheusCollector([FakeGuard()])  # type: ignore[arg-type]
    with type_error("namespace"):
        guards.PrometheusCollector(namespace=1)  # type: ignore[arg-type]
    with config_error("namespace", "out_of_range"):
        guards.PrometheusCollector(namespace="my-app")
    with config_error("label", "out_of_range"):
        guards.PrometheusCollector(label="priority")
    with type_error("name"):
        guards.PrometheusCollector().remove(None)  # type: ignore[arg-type]


def test_importable_without_prometheus_client() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["prometheus_client"] = None          # as if it were not installed
        sys.modules["prometheus_client.core"] = None
        sys.modules["prometheus_client.registry"] = None
        import guards
        assert "PrometheusCollector" in guards.__all__
        try:
            guards.PrometheusCollector()
        except ImportError as e:
            assert "pip install prometheus_client" in str(e)
            print("import-safe")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "import-safe"


def parsed(collector: guards.PrometheusCollector) -> dict[str, Any]:
    """Scrape a real registry and read the text format back with prometheus_client's
    parser: family name -> family."""
    from prometheus_client.parser import text_string_to_metric_families

    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_the_exposition_of_every_native_guard_parses_with_the_right_types(
    clock: guards.FakeClock,
) -> None:
    breaker = guards.CircuitBreaker(window_size=2)
    for _ in range(2):
        breaker.acquire().on_failure()
    budget = guards.RetryBudget()
    pool = guards.Bulkhead(max_concurrent=12)
    held = pool.acquire()
    door = guards.Admission()  # no adaptive limit: no `limit` value
    limiter = guards.Limiter()
    families = parsed(
        guards.PrometheusCollector(
            {"stock": breaker, "budget": budget, "pool": pool, "door": door, "lim": limiter}
        )
    )
    expect = {
        "guards_circuit_breaker_failures": "counter",
        "guards_circuit_breaker_closed_to_open": "counter",
        "guards_circuit_breaker_state": "gauge",
        "guards_retry_budget_tokens": "gauge",
        "guards_retry_budget_withdrawals": "counter",
        "guards_bulkhead_in_flight": "gauge",
        "guards_bulkhead_max_concurrent": "gauge",
        "guards_admission_in_flight": "gauge",
        "guards_admission_admitted": "counter",
        "guards_limiter_limit": "gauge",
    }
    for name, kind in expect.items():
        assert families[name].type == kind, name
    for fam in families.values():
        if fam.type == "counter":
            assert all(s.name.endswith(("_total", "_created")) for s in fam.samples), fam.name
        for sample in fam.samples:
            assert sample.value < 2**63, sample  # no u64::MAX placeholder
    assert "guards_admission_limit" not in families  # unknown: left out
    state = {s.labels["state"]: s.value for s in families["guards_circuit_breaker_state"].samples}
    assert state == {"closed": 0.0, "open": 1.0, "half_open": 0.0}
    assert "state" in families["guards_circuit_breaker_state"].documentation.lower()
    tokens = families["guards_retry_budget_tokens"].samples[0].value
    assert tokens == budget.tokens()
    assert families["guards_bulkhead_max_concurrent"].samples[0].value == 12
    assert families["guards_bulkhead_in_flight"].samples[0].value == 1
    assert families["guards_limiter_limit"].samples[0].value == limiter.limit
    held.release()


def test_an_adaptive_admission_exports_its_limit() -> None:
    door = guards.Admission(limit=guards.AimdLimit())
    families = parsed(guards.PrometheusCollector({"door": door}))
    assert families["guards_admission_limit"].type == "gauge"
    assert families["guards_admission_limit"].samples[0].value == door.limit


def test_placeholders_and_non_finite_values_are_left_out() -> None:
    g = FakeGuard(limit=2**64 - 1, in_flight=float("nan"), by_priority=[1, 2**64 - 1], ok=3)
    families = parsed(guards.PrometheusCollector({"g": g}))
    assert "guards_fake_limit" not in families
    assert "guards_fake_in_flight" not in families
    assert [s.value for s in families["guards_fake_by_priority"].samples if s.name.endswith("_total")] == [1.0]
    assert families["guards_fake_ok"].samples[0].value == 3
