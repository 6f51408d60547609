"""guards.otel: OpenTelemetry instruments read by the SDK's in-memory metric reader."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import guards
import pytest
from helpers import config_error, type_error

pytest.importorskip("opentelemetry.sdk.metrics")
from guards.otel import OpenTelemetryMetrics  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import Gauge, InMemoryMetricReader, Sum  # noqa: E402


def read(reader: InMemoryMetricReader) -> dict[str, Any]:
    """metric name -> (data, {frozenset(attributes): value})."""
    out: dict[str, Any] = {}
    data = reader.get_metrics_data()
    assert data is not None
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                points = {frozenset(p.attributes.items()): p.value for p in m.data.data_points}
                out[m.name] = (m.data, points)
    return out


@pytest.fixture
def reader() -> Any:
    r = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[r])
    yield r, provider
    provider.shutdown()


def test_counters_gauges_and_breaker_state(reader: Any, clock: guards.FakeClock) -> None:
    r, provider = reader
    breaker = guards.CircuitBreaker(window_size=2)
    budget = guards.RetryBudget()
    door = guards.Admission()
    OpenTelemetryMetrics({"stock": breaker, "budget": budget, "door": door}, meter_provider=provider)
    for _ in range(2):
        breaker.acquire().on_failure()
    got = read(r)
    data, points = got["guards.circuit_breaker.failures"]
    assert isinstance(data, Sum) and data.is_monotonic
    assert points == {frozenset({("guard", "stock")}): 2}
    data, points = got["guards.circuit_breaker.state"]
    assert isinstance(data, Gauge)
    state = {dict(k)["state"]: v for k, v in points.items()}
    assert state == {"closed": 0, "open": 1, "half_open": 0}
    data, points = got["guards.retry_budget.tokens"]
    assert isinstance(data, Gauge) and list(points.values()) == [budget.tokens()]
    assert isinstance(got["guards.admission.in_flight"][0], Gauge)
    assert "guards.admission.limit" not in got or got["guards.admission.limit"][1] == {}
    for data, points in got.values():
        assert all(v < 2**63 for v in points.values())


def test_added_and_removed_guards_and_a_broken_one(reader: Any) -> None:
    r, provider = reader

    class Broken:
        metrics_kind = "bulkhead"

        def stats(self) -> dict[str, int]:
            raise RuntimeError("boom")

    m = OpenTelemetryMetrics(meter_provider=provider)
    a, b = guards.Bulkhead(max_concurrent=3), guards.Bulkhead(max_concurrent=5)
    assert m.add("a", a) is a
    m.add("b", b)
    m.add("bad", Broken())
    held = a.acquire()
    _, points = read(r)["guards.bulkhead.in_flight"]
    assert points == {frozenset({("guard", "a")}): 1, frozenset({("guard", "b")}): 0}
    assert m.remove("b") and not m.remove("b")
    assert m.names() == ["a", "bad"]
    _, points = read(r)["guards.bulkhead.max_concurrent"]
    assert points == {frozenset({("guard", "a")}): 3}
    held.release()


def test_bad_input_names_the_field(reader: Any) -> None:
    _, provider = reader
    with type_error("name"):
        OpenTelemetryMetrics(meter_provider=provider).add(5, guards.Bulkhead())  # type: ignore[arg-type]
    with config_error("name", "out_of_range"):
        OpenTelemetryMetrics(meter_provider=provider).add("", guards.Bulkhead())
    with type_error("guard"):
        OpenTelemetryMetrics(meter_provider=provider).add("x", object())
    with config_error("label", "out_of_range"):
        OpenTelemetryMetrics(meter_provider=provider, label="priority")
    with config_error("namespace", "out_of_range"):
        OpenTelemetryMetrics(meter_provider=provider, namespace="my app")


def test_importable_without_opentelemetry() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry"] = None
        import guards, guards.otel
        try:
            guards.otel.OpenTelemetryMetrics()
        except ImportError as e:
            assert "guards[otel]" in str(e)
            print("import-safe")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "import-safe"
