"""guards.sim: Basketly presets and any topology through the Python API.

The full list of the Basketly figures (docs/basketly.md) is tested in Rust (``cargo test
-p guards-sim --release``); here a handful of them check that the Python layer hands over
the same runs.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import re
import threading

import pytest

import guards
import guards.sim as sim
from guards.sim import SimError

# The Basketly per-second series (``reads_served`` only in Replay P).
ISSUE_SERIES = [
    "offered", "app_attempts", "goodput", "goodput_incl_degraded", "goodput_product",
    "goodput_cart", "goodput_checkout", "degraded_cart", "stock_calls", "stock_refused",
    "budget_refusals", "breaker_rejections", "bulkhead_rejections", "db_done", "db_stale",
    "duplicate_commits", "reserve_attempts", "reserve_timeouts", "shopapi_queue",
    "inside_stock", "conn_wait", "shopapi_busy", "breakers_open",
]
HICCUP = ("20:00:02", "20:00:20")


def clock_s(text: str) -> int:
    h, m, s = (int(x) for x in text.split(":"))
    return h * 3600 + m * 60 + s


@pytest.fixture(scope="module")
def c8() -> sim.SimResult:
    return sim.basketly("C8", seed=1)


# ---------------------------------------------------------------- determinism


def test_same_seed_gives_identical_json() -> None:
    a = sim.basketly("C5", seed=3, until="20:00:08").to_json()
    b = sim.basketly("C5", seed=3, until="20:00:08").to_json()
    assert a == b


def test_different_seeds_give_different_runs() -> None:
    a = sim.basketly("C5", seed=1, until="20:00:08")
    b = sim.basketly("C5", seed=2, until="20:00:08")
    assert a.series["offered"] != b.series["offered"]
    assert a.to_json() != b.to_json()


def test_stepped_run_equals_one_call_run() -> None:
    one = sim.basketly("C3", seed=7, until="20:00:06").to_json()
    run = sim.Run.basketly("C3", seed=7, until="20:00:06")
    fractions = list(run.steps(0.7))
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert len(fractions) == 30  # 21 s in steps of 0.7 s
    assert run.finish().to_json() == one


def test_progress_callback_sees_the_run_to_the_end() -> None:
    seen: list[float] = []
    r = sim.basketly("C1", seed=1, until="20:00:00", progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) >= 10
    assert r.to_json() == sim.basketly("C1", seed=1, until="20:00:00").to_json()


# ---------------------------------------------------------------- JSON and result shape


def test_json_has_the_issue_shape(c8: sim.SimResult) -> None:
    d = json.loads(c8.to_json())
    assert list(d) == ["setting", "seed", "interval_s", "series", "summary"]
    assert (d["setting"], d["seed"], d["interval_s"]) == ("C8", 1, 1.0)
    series = d["series"]
    assert next(iter(series)) == "t"
    for name in ISSUE_SERIES:
        assert name in series, name
    assert "reads_served" not in series
    n = len(series["t"])
    assert n == 45  # 19:59:45 to 20:00:30
    assert all(len(v) == n for v in series.values())
    assert series["t"][0] == "19:59:45" and series["t"][-1] == "20:00:29"
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d", t) for t in series["t"])
    assert [clock_s(t) for t in series["t"]] == list(range(clock_s("19:59:45"), clock_s("20:00:30")))
    assert all(isinstance(v, int) for v in series["goodput"])
    summary = d["summary"]
    assert summary["recovered_at"] == "20:00:21"
    assert set(summary["stock_latency_ms"]) >= {"p50", "p95", "p99", "p999"}
    lat = summary["stock_latency_ms"]
    assert lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["p999"]
    assert summary["extra_load"] == 0


def test_result_views_agree_with_the_json(c8: sim.SimResult) -> None:
    assert c8.to_dict() == json.loads(c8.to_json())
    assert c8.series["goodput"] == c8.column("goodput")
    assert c8.t == c8.series["t"] and len(c8) == len(c8.t)
    assert c8.names == list(c8.series)[1:]
    assert c8.summary["recovered_at"] == "20:00:21"
    assert c8.config is not None and c8.config["hiccup_end"] == "20:00:20.000"
    assert c8.times[0] == clock_s("19:59:45")
    goodput = c8.column("goodput")
    assert c8.sum("goodput", "19:59:45", "19:59:50") == sum(goodput[:5])
    assert c8.at("goodput", "19:59:46.5") == goodput[1]
    assert c8.mean("goodput", "19:59:45", "19:59:47") == pytest.approx(sum(goodput[:2]) / 2)
    assert json.loads(c8.to_json(indent=2)) == json.loads(c8.to_json())


def test_csv_has_one_row_per_interval(c8: sim.SimResult) -> None:
    lines = c8.to_csv().splitlines()
    header = lines[0].split(",")
    assert header[:4] == ["t", "offered", "app_attempts", "goodput"]
    assert len(lines) == 1 + len(c8)
    first = dict(zip(header, lines[1].split(",")))
    assert first["t"] == "19:59:45" and int(first["goodput"]) == c8.column("goodput")[0]


def test_table_prints_every_interval_and_drops_zero_columns(c8: sim.SimResult) -> None:
    text = c8.table()
    rows = [line for line in text.splitlines() if re.match(r"\d\d:\d\d:\d\d ", line)]
    assert len(rows) == len(c8)
    header = text.splitlines()[0].split()
    assert header[:4] == ["t", "offered", "attempts", "goodput"]
    assert "degraded" in header  # C8 serves carts without badges
    assert "db_stale" not in header and "db_stale" in text  # 0 throughout: listed as omitted
    chosen = c8.table(["goodput", "db_stale"], legend=False)
    assert chosen.splitlines()[0].split() == ["t", "goodput", "db_stale"]
    assert "summary:" in c8.summary_text() and "recovered_at: 20:00:21" in c8.summary_text()


def test_replay_p_adds_reads_served_and_sub_second_labels() -> None:
    p = sim.basketly("P-sync", seed=1, until="20:00:03")
    assert len(p.column("reads_served")) == 3
    j = sim.basketly("jitter-fixed", seed=1, until="20:00:19.05")
    assert j.interval_s == pytest.approx(0.01)
    assert j.t == ["20:00:19"] * 5  # the JSON's labels are whole seconds
    assert j.labels(millis=True) == [f"20:00:19.0{i}0" for i in range(5)]


def test_unknown_columns_raise_key_error(c8: sim.SimResult) -> None:
    with pytest.raises(KeyError):
        c8.column("nope")
    with pytest.raises(KeyError):
        c8.mean("nope", "20:00:00", "20:00:05")
    with pytest.raises(KeyError):
        c8.table(["goodput", "nope"])
    with pytest.raises(KeyError):
        c8.latencies("nope")
    with pytest.raises(ValueError, match="clock time"):
        c8.mean("goodput", "8pm", "20:00:05")
    with pytest.raises(TypeError):
        c8.table("goodput")
    assert "nope" not in c8 and "goodput" in c8


def test_latencies_match_the_summary(c8: sim.SimResult) -> None:
    views = c8.latencies("shop-api->stock.view")
    reserves = c8.latencies("shop-api->stock.reserve")
    assert len(views) + len(reserves) == c8.summary["stock_latency_ms"]["count"]
    assert min(views) > 0


# ---------------------------------------------------------------- presets


def test_presets_and_keys_are_listed() -> None:
    assert len(sim.PRESETS) == 48
    assert sim.PRESETS[:2] == ("healthy", "C0") and sim.PRESETS[38] == "jitter-full"
    assert sim.PRESETS[39:] == tuple(f"live-C{n}" for n in range(9))
    assert {"A-C7-fleet", "A-C7-fleet-lb", "13a-fleet"} <= set(sim.PRESETS)
    assert "stock_call.idempotency_key" in sim.KEYS and "HOP.attempt_timeout" in sim.KEYS
    assert {"fleet.stock", "fleet.retry_burst", "fleet.sync_interval_ms", "fleet.ttl_ms",
            "scale.lb_delay_ms"} <= set(sim.KEYS)
    # A guard's keys are its config's fields, generated from the schema.
    assert {"breaker.failure_rate_threshold", "breaker.window_size", "HOP.retry.max_attempts",
            "HOP.retry.backoff.base", "budget.ratio", "hedge.delay_quantile",
            "admission.limits[1]", "admission.limit", "bulkhead.max_concurrent"} <= set(sim.KEYS)
    assert "breaker.failure_rate" not in sim.KEYS  # the old second vocabulary is gone
    assert all(isinstance(d, str) and d for d in sim.KEYS.values())
    assert sim.SERIES["goodput_cart"] == ("entry.cart.full",)
    assert set(ISSUE_SERIES) <= set(sim.SERIES)


@pytest.mark.parametrize("name", sim.PRESETS)
def test_every_preset_runs(name: str) -> None:
    cfg = sim.basketly_config(name)
    start = clock_s(cfg["start"][:8])
    end = start + 2
    until = f"{end // 3600:02}:{end // 60 % 60:02}:{end % 60:02}"
    r = sim.basketly(name, seed=1, until=until)
    assert r.setting == name
    assert len(r) == round(2 / cfg["interval_s"])
    assert sum(r.column("offered")) + sum(r.column("app_attempts")) >= 0
    assert r.events > 0 or name.startswith("jitter")


# ---------------------------------------------------------------- overrides


def test_overrides_by_keyword_mapping_and_strings_are_the_same() -> None:
    kw = sim.basketly("C0", until="20:00:03", stock_call__attempt_timeout="60ms", lb="round_robin")
    mapping = sim.basketly(
        "C0", until="20:00:03", overrides={"stock_call.attempt_timeout": 0.06, "lb": "round_robin"}
    )
    strings = sim.basketly(
        "C0", until="20:00:03", overrides=["stock_call.attempt_timeout=60ms", "lb=round_robin"]
    )
    delta = sim.basketly("C0", until="20:00:03", lb="round_robin",
                         stock_call__attempt_timeout=datetime.timedelta(milliseconds=60))
    assert delta.to_json() == kw.to_json()
    plain = sim.basketly("C0", until="20:00:03")
    assert kw.to_json() == mapping.to_json() == strings.to_json()
    assert kw.to_json() != plain.to_json()


def test_overrides_change_the_run() -> None:
    calm = sim.basketly("C0", until="20:00:10", hiccup=False)
    assert all(g >= 0.9 * o for g, o in zip(calm.column("goodput"), calm.column("offered")))
    no_carts = sim.basketly("C8", until="19:59:50", rate__cart=0)
    assert sum(no_carts.column("entry.cart.offered")) == 0
    assert sum(no_carts.column("goodput_product")) > 0
    bigger = sim.basketly_config("C0", shopapi__instances=8, until=datetime.time(20, 0, 5))
    assert bigger["shopapi_instances"] == 8 and bigger["until"] == "20:00:05.000"
    cfg = sim.basketly_config(
        "C0",
        hiccup__start=datetime.time(20, 0, 1, 500_000),
        hiccup__factor=2.5,
        stock_call__attempt_timeout=None,
        app__retry__backoff__base=datetime.timedelta(milliseconds=250),
    )
    assert cfg["hiccup_start"] == "20:00:01.500" and cfg["hiccup_factor"] == 2.5


def test_unknown_preset_is_a_sim_error_listing_the_presets() -> None:
    with pytest.raises(SimError) as e:
        sim.basketly("C9")
    assert e.value.kind == "unknown_preset" and e.value.key == "C9"
    assert e.value.known == list(sim.PRESETS)
    assert isinstance(e.value, ValueError)


def test_unknown_key_and_bad_values_are_sim_errors_naming_the_key() -> None:
    with pytest.raises(SimError) as e:
        sim.basketly("C8", until="20:00:00", nope=1)
    assert (e.value.kind, e.value.key) == ("unknown_key", "nope")
    with pytest.raises(SimError) as e:
        sim.basketly("C8", overrides={"shopapi.threads": -1})
    assert (e.value.kind, e.value.key, e.value.value) == ("bad_value", "shopapi.threads", "-1")
    assert "integer" in (e.value.expected or "")
    with pytest.raises(SimError) as e:
        sim.basketly("C8", breaker__failure_rate_threshold=1.5)
    assert e.value.key == "breaker.failure_rate_threshold"
    assert "0.0 < x <= 1.0" in (e.value.expected or "")
    with pytest.raises(SimError) as e:
        sim.basketly("C8", breaker__window_sise=20)
    assert (e.value.kind, e.value.key) == ("unknown_key", "breaker.window_sise")
    # Core's check of the whole config names the key at fault.
    with pytest.raises(SimError) as e:
        sim.basketly("C8", breaker__window_kind="time", breaker__window_buckets=7)
    assert (e.value.kind, e.value.key) == ("bad_value", "breaker.window_duration")
    with pytest.raises(SimError) as e:
        sim.basketly("C8", overrides=["hiccup"])
    assert e.value.kind == "bad_override"
    with pytest.raises(SimError) as e:
        sim.basketly("C0", until="19:00:00")  # before the start
    assert (e.value.kind, e.value.key) == ("bad_value", "until")


def test_arguments_of_the_wrong_type_are_type_errors() -> None:
    with pytest.raises(TypeError, match="setting"):
        sim.basketly(8)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed"):
        sim.basketly("C8", seed="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed"):
        sim.basketly("C8", seed=True)
    with pytest.raises(ValueError, match="seed"):
        sim.basketly("C8", seed=-1)
    with pytest.raises(ValueError, match="seed"):
        sim.basketly("C8", seed=2**64)
    with pytest.raises(TypeError, match="until"):
        sim.basketly("C8", until=20)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="until"):
        sim.basketly("C8", until="8pm")
    with pytest.raises(TypeError, match="overrides"):
        sim.basketly("C8", overrides="lb=random")
    with pytest.raises(TypeError, match="overrides"):
        sim.basketly("C8", overrides=[("lb", "random")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="rate.cart"):
        sim.basketly("C8", rate__cart=[1])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        sim.basketly("C8", rate__cart=float("nan"))
    with pytest.raises(TypeError, match="timedelta"):
        sim.basketly("C8", rate__cart=datetime.timedelta(seconds=1))
    with pytest.raises(TypeError, match="progress"):
        sim.basketly("C8", until="20:00:00", progress="yes")  # type: ignore[arg-type]


# ---------------------------------------------------------------- Basketly figures


def test_c0_goodput_is_zero_after_20_00_02() -> None:
    r = sim.basketly("C0", seed=1, until="20:01:00")
    assert r.sum("goodput", "20:00:02", "20:01:00") == 0
    assert r.summary["recovered_at"] is None
    # ... while the database is busy for nobody after the hiccup: about 2,000 a second.
    assert r.mean("db_stale", "20:00:21", "20:01:00") == pytest.approx(2000, rel=0.15)


def test_c1_recovers_at_20_00_20() -> None:
    r = sim.basketly("C1", seed=1)
    assert abs(clock_s(r.summary["recovered_at"]) - clock_s("20:00:20")) <= 1


def test_c4_sends_about_1_1_calls_per_stock_action() -> None:
    r = sim.basketly("C4", seed=1)
    assert r.mean("stock_calls", *HICCUP) == pytest.approx(1380, rel=0.15)


def test_c8_serves_about_1190_degraded_cart_views_a_second(c8: sim.SimResult) -> None:
    assert c8.mean("degraded_cart", *HICCUP) == pytest.approx(1190, rel=0.15)
    assert c8.mean("goodput", *HICCUP) == pytest.approx(850, rel=0.15)
    assert abs(clock_s(c8.summary["recovered_at"]) - clock_s("20:00:21")) <= 1


# ---------------------------------------------------------------- comparison


def test_compare_puts_settings_side_by_side() -> None:
    cmp = sim.compare(["C0", "C8"], seed=1, until="20:00:25")
    assert cmp.settings == ["C0", "C8"]
    assert cmp.value("goodput", "C0") == 0
    assert cmp.value("degraded_cart", "C8") == pytest.approx(1190, rel=0.15)
    assert cmp.value("recovered_at", "C0") == "never"
    assert cmp.value("recovered_at", "C8") == "20:00:21"
    text = cmp.table()
    assert "During the hiccup, per second (mean over 20:00:02-20:00:20)" in text
    header = text.splitlines()[1].split()
    assert header == ["C0", "C8"]
    rows = {m.key: v for m, v in cmp.rows()}
    # Every metric but the fleet rows (neither run has fleet guards: they apply to none).
    assert set(rows) == {m.key for m in (*sim.GENERIC_METRICS, *sim.METRICS)
                         if not m.key.startswith("fleet_")}
    assert rows["actions_full"] == [rows["goodput"][0], rows["goodput"][1]]
    assert len(cmp.to_csv().splitlines()) == 1 + len(rows)
    d = json.loads(json.dumps(cmp.to_dict()))
    assert d["settings"] == ["C0", "C8"] and d["results"]["C8"]["setting"] == "C8"
    assert d["windows"]["C8"]["during_start"] == "20:00:02"


def test_compare_in_threads_gives_the_same_runs() -> None:
    one = sim.compare(["C2", "C6", "C7"], until="20:00:04", jobs=1)
    two = sim.compare(["C2", "C6", "C7"], until="20:00:04", jobs=2, progress=lambda f: None)
    for s in one.settings:
        assert one.results[s].to_json() == two.results[s].to_json()


def test_compare_refuses_bad_arguments() -> None:
    with pytest.raises(TypeError):
        sim.compare("C0")
    with pytest.raises(ValueError, match="at least one"):
        sim.compare([])
    with pytest.raises(ValueError, match="twice"):
        sim.compare(["C0", "C0"])
    with pytest.raises(ValueError, match="jobs"):
        sim.compare(["C0"], jobs=0)
    with pytest.raises(SimError) as e:
        sim.compare(["C0", "C42"])
    assert e.value.kind == "unknown_preset"


# ---------------------------------------------------------------- stepped runs


def test_run_reports_progress_and_finishes_once() -> None:
    run = sim.Run.basketly("C8", seed=1, until="20:00:00")
    assert (run.start, run.until, run.progress, run.finished) == (
        "19:59:45.000", "20:00:00.000", 0.0, False)
    assert run.step(3) == pytest.approx(0.2)
    assert run.now == "19:59:48.000"
    assert run.advance("19:59:54") == pytest.approx(0.6)
    assert run.advance("21:00:00") == 1.0  # never past the end
    assert run.config is not None and run.config["setting"] == "C8"
    r = run.finish()
    assert len(r) == 15 and run.finished
    with pytest.raises(RuntimeError, match="finished"):
        run.finish()
    with pytest.raises(RuntimeError, match="finished"):
        run.step(1)
    with pytest.raises(ValueError):
        sim.Run.basketly("C8").step(0)
    with pytest.raises(TypeError):
        sim.Run.basketly("C8").step("1")  # type: ignore[arg-type]


# ---------------------------------------------------------------- any topology

# The example of ``guards.sim.simulate``'s documentation.
WEB_API = {
    "start": "12:00:00",
    "services": [
        {"name": "web", "client": True,
         "ops": [{"name": "page", "steps": [{"call": "web->api"}]}]},
        {"name": "api", "instances": 2, "servers": 4,
         "queue": {"deadline_check": True},
         "ops": [{"name": "get", "steps": [{"work": {"exp": "20ms"}}]}]},
    ],
    "edges": [{"name": "web->api", "from": "web", "to": "api", "op": "get",
               "record_latency": True,
               "policy": {"attempt_timeout": "100ms", "deadline": "attempt", "cancel": True,
                          "retry": {"max_attempts": 2, "backoff": {"base": "10ms", "cap": "1s"}}}}],
    "entries": [{"name": "page", "service": "web", "op": "page",
                 "arrivals": {"poisson": 300}}],
}


def test_a_generic_topology_runs() -> None:
    r = sim.simulate(WEB_API, seed=1, duration=20)
    assert r.setting == "custom" and len(r) == 20 and r.t[0] == "12:00:00"
    offered = sum(r.column("entry.page.offered"))
    full = sum(r.column("entry.page.full"))
    assert offered == pytest.approx(6000, rel=0.15)
    assert full >= 0.95 * offered
    assert "goodput" not in r  # Basketly's series belong to Basketly runs
    lat = r.summary["latency_ms"]["web->api"]
    assert lat["count"] == len(r.latencies("web->api"))
    assert 20 <= lat["p50"] <= lat["p99"]
    assert r.summary["events"] == r.events
    assert r.to_dict() == json.loads(r.to_json())
    same = sim.simulate(json.dumps(WEB_API), seed=1, until="12:00:20", label="web")
    assert same.setting == "web"
    assert same.series == r.series


def test_a_generic_topology_with_a_breaker_and_an_outage() -> None:
    # The example of python/README.md.
    topo = json.loads(json.dumps(WEB_API))
    topo["services"][1]["outages"] = [{"start": "12:00:10", "end": "12:00:20"}]
    # Pasted from a service: guards.CircuitBreaker(window_size=20, open_duration=2.0,
    # probe_timeout=0.1) as its keyword arguments.
    topo["edges"][0]["policy"]["breaker"] = {"window_size": 20, "open_duration": 2.0,
                                             "probe_timeout": 0.1}
    r = sim.simulate(topo, seed=1, duration=30)
    rejected = r.column("edge.web->api.breaker_rejections")
    open_ = r.column("edge.web->api.breakers_open")
    assert sum(rejected[:10]) == 0 and sum(rejected[11:20]) > 0.8 * sum(r.column("entry.page.offered")[11:20])
    assert all(open_[11:20]) and not any(open_[22:])
    assert sum(r.column("entry.page.full")[22:]) >= 0.95 * sum(r.column("entry.page.offered")[22:])


def test_check_topology_fills_in_the_defaults() -> None:
    full = sim.check_topology(WEB_API)
    assert full["interval"] == "1s"
    policy = full["edges"][0]["policy"]
    assert policy["retry"]["retry_timeouts"] is True and policy["breaker"] is None
    assert policy["retry"]["backoff"] == {"base": "10ms", "cap": "1s", "multiplier": 2.0,
                                          "jitter": "full"}
    assert full["services"][1]["balance"] == "random"
    assert sim.check_topology(full) == full
    basketly = sim.basketly_topology("C8")
    assert {"shop-api", "stock", "db"} <= {s["name"] for s in basketly["services"]}
    r = sim.simulate(basketly, seed=1, until="19:59:47", label="C8 by hand")
    assert r.column("edge.shop-api->stock.view.calls") == sim.basketly(
        "C8", seed=1, until="19:59:47").column("edge.shop-api->stock.view.calls")


def test_bad_topologies_are_sim_errors_naming_the_path() -> None:
    bad = json.loads(json.dumps(WEB_API))
    bad["services"][1]["bogus"] = 1
    with pytest.raises(SimError) as e:
        sim.simulate(bad, duration=1)
    assert (e.value.kind, e.value.key) == ("unknown_key", "services[1].bogus")
    bad = json.loads(json.dumps(WEB_API))
    bad["edges"][0]["policy"]["attempt_timeout"] = "soon"
    with pytest.raises(SimError) as e:
        sim.simulate(bad, duration=1)
    assert (e.value.kind, e.value.key) == ("bad_value", "edges[0].policy.attempt_timeout")
    bad = json.loads(json.dumps(WEB_API))
    bad["edges"][0]["policy"]["breaker"] = {"window_size": 0}
    with pytest.raises(SimError) as e:
        sim.simulate(bad, duration=1)
    assert (e.value.kind, e.value.key, e.value.value) == (
        "bad_value", "edges[0].policy.breaker.window_size", "0")
    bad = json.loads(json.dumps(WEB_API))
    bad["edges"][0]["policy"]["retry"]["backoff"]["cap"] = "1ms"
    with pytest.raises(SimError) as e:
        sim.simulate(bad, duration=1)
    assert e.value.key == "edges[0].policy.retry.backoff.cap"
    bad = json.loads(json.dumps(WEB_API))
    bad["edges"][0]["to"] = "nowhere"
    with pytest.raises(SimError, match="edges\\[0\\].to"):
        sim.check_topology(bad)
    bad = json.loads(json.dumps(WEB_API))
    bad["services"][1]["servers"] = 0
    with pytest.raises(SimError) as e:
        sim.simulate(bad, duration=1)
    assert e.value.kind == "topology"
    with pytest.raises(SimError) as e:
        sim.simulate("{not json", duration=1)
    assert e.value.kind == "bad_value"
    with pytest.raises(SimError) as e:
        sim.simulate(WEB_API, until="11:00:00")
    assert e.value.key == "until"
    with pytest.raises(TypeError, match="exactly one"):
        sim.simulate(WEB_API)
    with pytest.raises(TypeError, match="exactly one"):
        sim.simulate(WEB_API, until="12:00:05", duration=5)
    with pytest.raises(ValueError, match="duration"):
        sim.simulate(WEB_API, duration=-1)
    with pytest.raises(ValueError, match="JSON"):
        sim.simulate({**WEB_API, "interval": float("nan")}, duration=1)
    with pytest.raises(TypeError, match="topology"):
        sim.simulate(42, duration=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="label"):
        sim.simulate(WEB_API, duration=1, label=3)  # type: ignore[arg-type]


def test_a_topology_from_a_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "web.json"
    path.write_text(json.dumps(WEB_API))
    assert sim.simulate(path, duration=3).series == sim.simulate(WEB_API, duration=3).series


# ---------------------------------------------------------------- threads and the GIL


def test_simulations_run_in_threads_at_once() -> None:
    settings = ["C0", "C4", "C8", "C1"]
    expected = {s: sim.basketly(s, seed=5, until="20:00:05").to_json() for s in settings}
    got: dict[str, str] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(settings))

    def work(s: str) -> None:
        try:
            barrier.wait()
            got[s] = sim.basketly(s, seed=5, until="20:00:05").to_json()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in settings]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert got == expected


def test_one_run_stepped_from_two_threads_stays_consistent() -> None:
    run = sim.Run.basketly("C5", seed=2, until="20:00:05")
    barrier = threading.Barrier(2)

    def work() -> None:
        barrier.wait()
        for _ in run.steps(0.5):
            pass

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert run.progress == 1.0
    assert run.finish().to_json() == sim.basketly("C5", seed=2, until="20:00:05").to_json()


# ---------------------------------------------------------------- plots and the package


def test_plots_are_written(tmp_path: pathlib.Path, c8: sim.SimResult) -> None:
    pytest.importorskip("matplotlib")
    d = tmp_path
    c8.plot(d / "c8.png")
    assert (d / "c8.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    c8.plot(d / "two.svg", ["goodput", "degraded_cart"])
    assert b"<svg" in (d / "two.svg").read_bytes()[:1000]
    sim.simulate(WEB_API, duration=3).plot(d / "web.png")
    assert (d / "web.png").stat().st_size > 1000
    sim.compare(["C0", "C8"], until="20:00:22").plot(d / "cmp.png")
    assert (d / "cmp.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(KeyError):
        c8.plot(d / "bad.png", ["nope"])


def test_sim_names_stay_out_of_the_guards_namespace() -> None:
    assert "SimError" not in guards.__all__ and not hasattr(guards, "_SimResult")
    assert sim.SimError is guards._guards.SimError
    assert sim.SimError.__module__ == "guards.sim"
    for name in sim.__all__:
        assert hasattr(sim, name), name
