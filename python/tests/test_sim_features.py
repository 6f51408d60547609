"""guards.sim: changes during a run (timeline), traces of single actions, per-interval
latency percentiles, run limits, and the presets' one-line descriptions."""

from __future__ import annotations

import json
import math

import pytest

import guards.sim as sim
from guards.sim import SimError
from guards.sim.cli import main


def test_a_guard_switched_on_mid_run_acts_from_its_instant() -> None:
    plain = sim.basketly("C4", 1, until="20:00:15")
    changed = sim.basketly("C4", 1, until="20:00:15", timeline=[("20:00:10", {"breaker": True})])
    i = changed.t.index("20:00:10")
    assert changed.column("stock_calls")[:i] == plain.column("stock_calls")[:i]
    refused = changed.column("breaker_rejections")
    assert not any(refused[:i]) and sum(refused[i:]) > 0
    # The same change given as "key=value" strings, or as a dict of times, is the same run.
    same = sim.basketly("C4", 1, until="20:00:15", timeline={"20:00:10": ["breaker=on"]})
    assert same.to_json() == changed.to_json()


def test_bad_timelines_are_refused() -> None:
    with pytest.raises(SimError) as e:
        sim.basketly("C0", timeline=[("20:00:10", {"until": "20:01:00"})])
    assert e.value.kind == "bad_value"
    with pytest.raises(SimError) as e:
        sim.basketly("C0", until="20:00:12", timeline=[("20:00:10", {"stock.stall_p": 0.1})])
    assert e.value.kind == "topology" and "20:00:10" in str(e.value)
    with pytest.raises(ValueError):
        sim.basketly("C0", timeline=[("soon", {"breaker": True})])
    with pytest.raises(TypeError):
        sim.basketly("C0", timeline="20:00:10 breaker=on")


def test_a_topology_changes_by_patch_during_the_run() -> None:
    topo = {
        "start": "12:00:00",
        "services": [
            {"name": "web", "client": True, "ops": [{"name": "page", "steps": [{"call": "web->api"}]}]},
            {"name": "api", "servers": 4, "ops": [{"name": "get", "steps": [{"work": {"exp": "20ms"}}]}]},
        ],
        "edges": [{"name": "web->api", "from": "web", "to": "api", "op": "get",
                   "policy": {"attempt_timeout": "500ms"}}],
        "entries": [{"name": "page", "service": "web", "op": "page", "arrivals": {"poisson": 100}}],
    }
    patch = {"services": {"api": {"servers": 1}}}
    r = sim.simulate(topo, 1, duration=10, timeline=[("12:00:05", patch)])
    busy = r.column("svc.api.busy")
    assert max(busy[6:]) <= 1.0 < max(busy[:5])
    with pytest.raises(ValueError):
        sim.simulate(topo, 1, duration=10, timeline=[("12:00:05", {"services": {"nope": {}}})])


def test_a_trace_shows_every_hop() -> None:
    r = sim.basketly("C8", 1, until="20:00:08", trace={"at": "20:00:07", "entry": "checkout", "count": 2})
    assert len(r.traces) == 2
    t = r.traces[0]
    assert t.entry == "checkout" and t.start >= "20:00:07"
    kinds = [e["event"] for e in t.events]
    assert kinds[0] == "start" and kinds[-1] == "done" and "send" in kinds
    assert t.events[1]["edge"] == "app->shop-api.checkout"
    assert "attempt 1 sent to shop-api" in t.timeline()
    assert str(t).startswith("checkout #")
    # No trace asked for: none.
    assert sim.basketly("C8", 1, until="20:00:01").traces == []


def test_latency_percentiles_per_edge_each_interval() -> None:
    r = sim.basketly("C1", 1, until="20:00:05")
    p50 = r.column("edge.shop-api->stock.view.p50_ms")
    p999 = r.column("edge.shop-api->stock.view.p999_ms")
    assert all(a <= b for a, b in zip(p50, p999))
    # C0: no app attempt succeeds late in the hiccup: no value (None) in those intervals.
    c0 = sim.basketly("C0", 1, until="20:00:10")
    assert c0.column("edge.app->shop-api.cart.p50_ms")[-1] is None


def test_limits_keep_what_was_computed() -> None:
    r = sim.basketly("C0", 1, until="23:00:00", max_memory_mb=16)
    assert r.stopped is not None and r.stopped["reason"] == "memory"
    assert "memory estimate" in r.stopped["message"]
    n = len(r)
    full = sim.basketly("C0", 1, until=r.t[-1])
    assert r.column("goodput")[: n - 1] == full.column("goodput")[: n - 1]
    # A stepped run that stops reports it is done.
    run = sim.Run.basketly("C0", 1, until="21:00:00", max_events=30_000)
    assert list(run.steps(60))[-1] == 1.0
    assert run.stopped is not None and run.stopped["reason"] == "events"
    # An interval under 1 ms is refused instead of exhausting memory.
    with pytest.raises(SimError) as e:
        sim.basketly("C0", interval_ms=0.0001)
    assert e.value.key == "interval_ms" and "at least 1 ms" in str(e.value)
    topo = json.loads(json.dumps(sim.basketly_topology("C0")))
    topo["interval"] = "100ns"
    with pytest.raises(SimError):
        sim.simulate(topo, duration=1)


def test_cli_trace_timeline_and_limit(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["basketly", "--setting", "C8", "--until", "20:00:08", "--trace", "20:00:07",
                   "--trace-entry", "checkout", "--columns", "goodput", "--no-progress"])
    out = capsys.readouterr().out
    assert status == 0 and "trace of checkout #" in out and "attempt 1 sent" in out
    status = main(["basketly", "--setting", "C4", "--until", "20:00:14", "--at", "20:00:10",
                   "breaker=on", "--columns", "breaker_rejections", "--no-progress"])
    assert status == 0
    status = main(["basketly", "--setting", "C0", "--until", "23:00:00", "--max-memory-mb", "16",
                   "--quiet", "--no-progress"])
    err = capsys.readouterr().err
    assert status == 3 and "stopped at" in err and "error" not in err
    assert main(["basketly", "--at", "20:00:10", "--no-progress"]) == 2


def test_presets_have_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["basketly", "presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(sim.PRESETS)
    for name, line in zip(sim.PRESETS, lines):
        assert line.split()[0] == name and sim.PRESET_INFO[name] in line
    assert set(sim.GUARDS) >= {"timeouts", "budget", "breakers", "brownout"}
    assert math.isfinite(len(sim.GUARDS))
