"""Reading a simulator topology into the live cast's settings (docs/live.md).

The live testbed runs topologies of the shape the Basketly presets have: one client
service (the apps: its entries and the edges its ops call), one caller tier (each op is a
``work`` step and at most one ``call``), one dependency tier (each op one call to the
database tier) and one database tier (each op a ``work`` step). :func:`cast` checks the
shape, with every default filled in by :func:`guards.sim.check_topology`, and returns
the settings of each process; a topology of another shape is refused with a message
saying what the testbed cannot run.
"""

from __future__ import annotations

import re
from typing import Any

import guards.sim

_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def seconds(v: Any) -> float:
    """A topology duration (``"60ms"``, ``"1s"``, a number of seconds) in seconds."""
    if isinstance(v, (int, float)):
        return float(v)
    m = re.fullmatch(r"\s*([0-9.]+)\s*(ns|us|ms|s)\s*", str(v))
    if not m:
        raise ValueError(f"not a duration: {v!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def clock(v: Any) -> float:
    """A topology instant (``"20:00:00.000"`` or seconds since midnight) in seconds."""
    if isinstance(v, (int, float)):
        return float(v)
    h, m, s = str(v).split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


class Unsupported(ValueError):
    """The topology has a shape the live testbed does not run."""


def _durations(d: Any) -> Any:
    """Every duration-looking string of a guard's config turned into seconds."""
    if isinstance(d, dict):
        return {k: _durations(v) for k, v in d.items()}
    if isinstance(d, str) and re.fullmatch(r"[0-9.]+(ns|us|ms|s)", d):
        return seconds(d)
    return d


def _work(step: dict[str, Any]) -> dict[str, float]:
    w = step["work"]
    if "exp" in w:
        return {"exp": seconds(w["exp"])}
    if "const" in w:
        return {"const": seconds(w["const"])}
    raise Unsupported(f"work {w!r}: the live testbed runs const and exp work times only")


def cast(topology: Any) -> dict[str, Any]:
    """The settings of every process for ``topology`` (a dict, JSON text or path)."""
    t = guards.sim.check_topology(topology)
    svcs = {s["name"]: s for s in t["services"]}
    edges = {e["name"]: e for e in t["edges"]}
    clients = [s for s in t["services"] if s["client"]]
    if len(clients) != 1:
        raise Unsupported("the live testbed needs exactly one client service (the apps)")
    app = clients[0]
    if t.get("events"):
        raise Unsupported("timed events (scale, shed, flush) are not run live")
    entries = []
    caller = None
    for e in t["entries"]:
        op = next(o for o in app["ops"] if o["name"] == e["op"])
        if len(op["steps"]) != 1 or "call" not in op["steps"][0]:
            raise Unsupported(f"app op {op['name']}: one call per app op")
        edge = edges[op["steps"][0]["call"]]
        if caller is not None and edge["to"] != caller:
            raise Unsupported("every app op must call the same caller tier")
        caller = edge["to"]
        if "poisson" not in e["arrivals"]:
            raise Unsupported(f"entry {e['name']}: Poisson arrivals only")
        pol = _durations(edge["policy"])
        entries.append({"name": e["name"], "path": edge["op"], "rate": float(e["arrivals"]["poisson"]),
                        "policy": pol})
    assert caller is not None
    shop = svcs[caller]
    if shop["instances"] != 1:
        raise Unsupported(f"{caller}: one instance (scale the rates instead, as the live-C* presets do)")
    ops: dict[str, Any] = {}
    dep = None
    for op in shop["ops"]:
        work = 0.0
        call = None
        for st in op["steps"]:
            if "work" in st:
                w = _work(st)
                if "exp" in w:
                    raise Unsupported(f"{caller}.{op['name']}: constant work in the caller tier")
                work += w["const"]
            elif "call" in st:
                if call is not None:
                    raise Unsupported(f"{caller}.{op['name']}: at most one call per op")
                ed = edges[st["call"]]
                if dep is not None and ed["to"] != dep:
                    raise Unsupported(f"{caller}: every call goes to the same dependency")
                dep = ed["to"]
                call = {"op": ed["op"], "priority": ed["priority"], "optional": ed["optional"],
                        "policy": _durations(ed["policy"])}
        ops[op["name"]] = {"work": work, "call": call}
    if dep is None:
        raise Unsupported(f"{caller} calls no dependency")
    stock = svcs[dep]
    db_edge = None
    for op in stock["ops"]:
        if len(op["steps"]) != 1 or "call" not in op["steps"][0]:
            raise Unsupported(f"{dep}.{op['name']}: one database call per op")
        ed = edges[op["steps"][0]["call"]]
        if db_edge is not None and ed["to"] != db_edge["to"]:
            raise Unsupported(f"{dep}: every op calls the same database")
        if db_edge is not None and ed["policy"] != db_edge["policy"]:
            raise Unsupported(f"{dep}: every database call has the same policy")
        db_edge = ed
    assert db_edge is not None
    db = svcs[db_edge["to"]]
    db_ops = {}
    for op in db["ops"]:
        if len(op["steps"]) != 1 or "work" not in op["steps"][0]:
            raise Unsupported(f"{db['name']}.{op['name']}: one work step")
        db_ops[op["name"]] = _work(op["steps"][0])
    if len({json_key(v) for v in db_ops.values()}) != 1:
        raise Unsupported(f"{db['name']}: every op takes the same time")
    stock_ops = {op["name"]: edges[op["steps"][0]["call"]]["op"] for op in stock["ops"]}
    if any(stock_ops.get(k, v) != v for k, v in (("view", "read"), ("reserve", "write"))) or \
            not set(stock_ops) <= {"view", "reserve"}:
        raise Unsupported(f"{dep}: the C server answers view (a read) and reserve (a write)")
    start = clock(t["start"])
    adm = stock.get("admission")
    limits = adm["limits"] if adm else None
    if adm and (adm.get("limit") not in (None, 18446744073709551615)):
        raise Unsupported(f"{dep}: fixed admission limits only")
    dp = _durations(db_edge["policy"])
    bud = shop.get("budgets") or []
    bh = shop.get("bulkheads") or []
    return {
        "name": t.get("name"),
        "start": start,
        "entries": entries,
        "shop": {
            "name": caller,
            "servers": shop["servers"],
            "deadline_check": shop["queue"]["deadline_check"],
            "cancel_on_disconnect": all(e["policy"]["cancel"] for e in entries),
            "budget": _durations(bud[0]) if bud else None,
            "bulkhead": bh[0] if bh else None,
            "admission": _durations(shop["admission"]) if shop.get("admission") else None,
            "ops": ops,
        },
        "stock": {
            "name": dep,
            "workers": stock["servers"],
            "deadline_check": stock["queue"]["deadline_check"],
            "cancel": any((o["call"] or {}).get("policy", {}).get("cancel") for o in ops.values()),
            "reserve_limit": limits[0] if limits else 0,
            "view_limit": limits[1] if limits else 0,
            "db_attempts": dp["retry"]["max_attempts"],
            "db_timeout_ms": int(dp["attempt_timeout"] * 1000),
            "send_deadline": dp["deadline"] != "none",
            "ops": stock_ops,
        },
        "db": {
            "name": db["name"],
            "servers": db["servers"],
            "work": next(iter(db_ops.values())),
            "deadline_check": db["queue"]["deadline_check"],
            "enforce_deadline": db["enforce_deadline"],
            "discipline": _durations(db["queue"]["discipline"]),
            "slowdowns": [[clock(s["start"]) - start, clock(s["end"]) - start, s["factor"]]
                          for s in db["slowdowns"]],
            "outages": [[clock(s["start"]) - start, clock(s["end"]) - start] for s in db["outages"]],
        },
        "edges": {"stock_ops": [o["call"]["op"] for o in ops.values() if o["call"]]},
    }


def json_key(v: Any) -> str:
    import json

    return json.dumps(v, sort_keys=True)
