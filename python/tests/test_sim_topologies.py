"""guards.sim with topologies of your own: the guards' configs as the Python API spells
them, the summary every topology gets, comparisons of topologies and their plots."""

from __future__ import annotations

import copy
import json
import pathlib

import pytest

import guards.sim as sim
from guards.sim import SimError

# A web tier whose page calls an api, which calls a recommendations service for an
# optional part of the answer. The api is slow from 12:00:12 to 12:00:15 (the
# disturbance) and the recommendations service is down from 12:00:12 to 12:00:16.
SHOP: dict = {
    "start": "12:00:00",
    "services": [
        {"name": "web", "client": True,
         "ops": [{"name": "page", "steps": [{"call": "web->api"}]}]},
        {"name": "api", "instances": 2, "servers": 8,
         "slowdowns": [{"start": "12:00:12", "end": "12:00:15", "factor": 3}],
         "ops": [{"name": "get", "steps": [{"work": {"exp": "5ms"}}, {"call": "api->recs"}]}]},
        {"name": "recs", "servers": 8,
         "outages": [{"start": "12:00:12", "end": "12:00:16"}],
         "ops": [{"name": "list", "steps": [{"work": {"exp": "2ms"}}]}]},
    ],
    "edges": [
        {"name": "web->api", "from": "web", "to": "api", "op": "get", "record_latency": True,
         "policy": {"attempt_timeout": "500ms"}},
        {"name": "api->recs", "from": "api", "to": "recs", "op": "list", "optional": True,
         "policy": {"attempt_timeout": "50ms",
                    # guards.CircuitBreaker(window_size=20, open_duration=1.0,
                    #                       probe_timeout=0.05), pasted:
                    "breaker": {"window_size": 20, "open_duration": 1.0, "probe_timeout": 0.05}}},
    ],
    "entries": [{"name": "page", "service": "web", "op": "page", "arrivals": {"poisson": 200}}],
}


def test_a_pasted_config_keeps_its_fields_and_gets_the_python_defaults() -> None:
    full = sim.check_topology(SHOP)
    b = full["edges"][1]["policy"]["breaker"]
    assert (b["window_size"], b["open_duration"], b["probe_timeout"]) == (20, "1s", "50ms")
    # Every other field is the documented default of guards.CircuitBreaker.
    assert (b["window_kind"], b["failure_rate_threshold"], b["half_open_probes"],
            b["max_open_duration"]) == ("count", 0.5, 3, "300s")
    assert sim.check_topology(full) == full
    # A value the Python class refuses is refused here, naming the path down to the field.
    bad = copy.deepcopy(SHOP)
    bad["edges"][1]["policy"]["breaker"]["failure_rate_threshold"] = 1.5
    with pytest.raises(SimError) as e:
        sim.check_topology(bad)
    assert (e.value.kind, e.value.key) == ("bad_value", "edges[1].policy.breaker.failure_rate_threshold")
    assert e.value.value == "1.5"
    bad = copy.deepcopy(SHOP)
    bad["edges"][1]["policy"]["breaker"]["open_for"] = "2s"  # the old vocabulary
    with pytest.raises(SimError) as e:
        sim.check_topology(bad)
    assert (e.value.kind, e.value.key) == ("unknown_key", "edges[1].policy.breaker.open_for")


def test_every_topology_gets_the_summary_with_degraded_answers() -> None:
    r = sim.simulate(SHOP, seed=1, duration=20)
    s = r.summary
    assert s["disturbance"] == {"start": "12:00:12.000", "end": "12:00:15.000"}
    page = s["entries"]["page"]
    assert page["offered"] == sum(r.column("entry.page.offered"))
    assert page["degraded"] == sum(r.column("entry.page.degraded")) > 0
    # The outage of recs is served by the fallback (degraded), not failed.
    assert sum(r.column("entry.page.degraded")[12:16]) > 0.8 * sum(r.column("entry.page.offered")[12:16])
    assert sum(r.column("entry.page.degraded")[:12]) == 0
    assert page["goodput_incl_degraded"] == pytest.approx((page["full"] + page["degraded"]) / page["offered"])
    assert s["edges"]["api->recs"]["calls"] == sum(r.column("edge.api->recs.calls"))
    assert isinstance(s["recovered_at"], str)


def test_compare_takes_topologies(tmp_path: pathlib.Path) -> None:
    no_brownout = copy.deepcopy(SHOP)
    no_brownout["edges"][1]["optional"] = False
    path = tmp_path / "strict.json"
    path.write_text(json.dumps(no_brownout))
    cmp = sim.compare([("brownout", SHOP), path], seed=1, duration=20)
    assert cmp.settings == ["brownout", "strict"]
    rows = {m.key: v for m, v in cmp.rows()}
    # No Basketly series: the generic rows, and one per entry, service and recording edge.
    assert "goodput" not in rows and "stock_calls" not in rows
    assert {"actions_offered", "actions_full", "entry.page.full", "svc.api.queue"} <= set(rows)
    assert rows["actions_degraded"][0] > 0 and rows["actions_degraded"][1] == 0
    assert "latency.web->api.p99" in rows
    text = cmp.table()
    assert "During the disturbance, per second (mean over 12:00:14-12:00:15)" in text
    # Topologies and presets in one comparison: the rows both have.
    late = dict(copy.deepcopy(SHOP), start="19:59:45")
    mixed = sim.compare(["C8", ("shop", late)], seed=1, until="20:00:05")
    keys = {m.key for m, _ in mixed.rows()}
    assert "actions_full" in keys and "goodput" not in keys
    with pytest.raises(TypeError, match="until"):
        sim.compare([("shop", SHOP)])


def test_an_adaptive_limit_where_a_fixed_one_was() -> None:
    topo = copy.deepcopy(SHOP)
    api = topo["services"][1]
    api["admission"] = {"limit": {"algorithm": "aimd", "initial_limit": 4, "min_limit": 2,
                                  "max_limit": 6}}
    topo["entries"][0]["arrivals"] = {"poisson": 3000}
    r = sim.simulate(topo, seed=1, duration=5)
    assert sum(r.column("svc.api.refused")) > 0
    assert max(r.column("svc.api.inside")) <= 12  # 2 instances x 6
    # A limiter on the web->api edge in place of a bulkhead.
    topo = copy.deepcopy(SHOP)
    topo["services"][0]["limiters"] = [{"limit": {"algorithm": "vegas", "max_limit": 30}}]
    topo["edges"][0]["policy"]["limiter"] = 0
    r = sim.simulate(topo, seed=1, duration=5)
    assert all(1 <= x <= 30 for x in r.column("edge.web->api.limiter_limit"))


def test_plots_of_any_topology_show_degraded_answers(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("matplotlib")
    r = sim.simulate(SHOP, seed=1, duration=20)
    fig = r.plot(tmp_path / "shop.png")
    labels = {line.get_label() for ax in fig.axes for line in ax.get_lines()}
    assert {"entry.page.offered", "entry.page.full", "entry.page.degraded"} <= labels
    assert (tmp_path / "shop.png").read_bytes()[:4] == b"\x89PNG"
    cmp = sim.compare([("shop", SHOP)], seed=1, duration=20)
    fig = cmp.plot(tmp_path / "cmp.png")
    labels = {line.get_label() for ax in fig.axes for line in ax.get_lines()}
    assert {"shop", "shop incl. degraded"} <= labels


def test_basketly_keys_are_the_configs_fields() -> None:
    base = sim.basketly("C6", seed=1, until="20:00:10")
    same = sim.basketly("C6", seed=1, until="20:00:10", breaker__failure_rate_threshold=0.5,
                        breaker__open_duration="5s", breaker__half_open_probes=3)
    assert same.to_json() == base.to_json()
    other = sim.basketly("C6", seed=1, until="20:00:10", breaker__failure_rate_threshold=0.9)
    assert other.to_json() != base.to_json()
    # Overrides apply in order: the algorithm first, then its fields.
    limited = sim.basketly("C8", seed=1, until="20:00:05",
                           overrides=["bulkhead.limit=aimd", "bulkhead.limit.max_limit=20"])
    assert "edge.shop-api->stock.view.limiter_limit" in limited
    assert all(x <= 20 for x in limited.column("edge.shop-api->stock.view.limiter_limit"))
