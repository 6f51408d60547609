"""The live testbed (docs/live.md): one simulator topology run as real processes on
loopback and as a simulation, side by side.

    python tests/live/run.py live-C8                   # a preset of guards.sim
    python tests/live/run.py my-topology.json --duration 40
    python tests/live/run.py live-C8 --smoke           # accounting + clean shutdown only

It starts the database tier (Python, ``db.py``), the dependency behind libguards' admission
(C, ``stock.c`` built as ``live-stock``), the caller tier (Python ``shop_api.py`` under
uvicorn, or Node ``shop_api.js`` with ``--callers node``) and the apps (``loadgen.py``),
each on a free loopback port with the topology's settings; samples the CPU of every
process and of the machine and the calls inside the dependency; stops every process
(each also stops by itself); checks that every request is accounted for and that every
guard's in-flight count is back to 0; runs the simulator on the same topology; and writes
``report.json``, ``report.md`` (the headline table) and ``compare.png`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import guards.sim  # noqa: E402
import topo  # noqa: E402

NS = 1_000_000_000
HZ = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1


def fmt_clock(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600:02}:{s // 60 % 60:02}:{s % 60:02}"


def fmt_instant(s: float) -> str:
    """Seconds since midnight as a topology instant, to the millisecond."""
    ms = int(round(s * 1000))
    return f"{ms // 3_600_000:02}:{ms // 60_000 % 60:02}:{ms // 1000 % 60:02}.{ms % 1000:03}"


def get_json(port: int, path: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return json.loads(r.read())


def proc_cpu(pid: int) -> Optional[float]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / HZ
    except (OSError, IndexError, ValueError):
        return None


def proc_rss_kb(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/status") as f:
            for ln in f:
                if ln.startswith("VmRSS:"):
                    return int(ln.split()[1])
    except OSError:
        return None
    return None


def machine_cpu() -> tuple[float, float, float]:
    """(busy, busy at normal priority, total) CPU seconds of the machine since boot. The
    second leaves out niced time (/proc/stat's `nice`): a niced process (a build at nice
    10) yields to the cast, which runs at normal priority."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    busy = sum(v[:8]) - idle
    return busy / HZ, (busy - v[1]) / HZ, sum(v[:8]) / HZ


class Proc:
    def __init__(self, name: str, argv: list[str], outdir: str, log_mode: str = "w") -> None:
        self.name = name
        self.log = open(os.path.join(outdir, f"{name}.log"), log_mode)
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.port = 0

    def wait_listening(self, timeout: float = 30.0) -> int:
        assert self.p.stdout is not None
        line = self.p.stdout.readline()
        if not line.startswith("listening on 127.0.0.1:"):
            raise RuntimeError(f"{self.name} did not start: {line!r} (see {self.log.name})")
        self.port = int(line.strip().rsplit(":", 1)[1])
        return self.port


def build_stock(root: str) -> str:
    exe = os.environ.get("LIVE_STOCK") or os.path.join(root, "target", "live", "live-stock")
    if not os.path.exists(exe):
        raise SystemExit(f"{exe} is missing: build it with `make live-build`")
    return exe


def split_pool(servers: int, n: int) -> list[int]:
    """The caller tier's ``servers`` threads over ``n`` processes: ``servers // n`` each,
    the first ``servers % n`` one more (the sum is the topology's)."""
    return [servers // n + (1 if i < servers % n else 0) for i in range(n)]


REGION_BULKHEAD = "stock-bulkhead"
REGION_BUDGET = "retry-budget"


class RegionWatch:
    """The launcher's own view of the callers' region (``guards.shared``): the region
    bulkhead's in-flight count (every process's) and the region's counters. The launcher
    is the callers' supervisor: after a caller dies it calls ``reclaim()``, as
    docs/shared.md says a supervisor does."""

    def __init__(self, path: str, bulkhead: Optional[dict[str, Any]]) -> None:
        from guards import shared

        self.shared = shared
        self.path = path
        try:
            shared.Region.remove(path)
        except (OSError, shared.RegionError):
            pass
        self.region = shared.Region(path)
        self.bulkhead = self.region.bulkhead(REGION_BULKHEAD, **bulkhead) if bulkhead else None

    def view(self) -> dict[str, Any]:
        st = self.region.stats()
        return {"t_ns": time.monotonic_ns(),
                "bulkhead_in_flight": self.bulkhead.in_flight if self.bulkhead is not None else 0,
                "permits_held": st["permits_held"], "reclaimed_permits": st["reclaimed_permits"],
                "reclaimed_claims": st["reclaimed_claims"], "scans": st["scans"]}

    def remove(self) -> None:
        try:
            self.shared.Region.remove(self.path)
        except (OSError, self.shared.RegionError):
            pass


def kill_caller(victim: "Proc", survivors: list["Proc"], region: RegionWatch, t0: int, at: float,
                out: dict[str, Any], stop: Any, supervise: bool = True) -> None:
    """At ``at`` s after the start: SIGKILL ``victim`` (at the first moment within 2 s that
    its /snapshot says it holds a slot of the region bulkhead, so that there is something
    to reclaim; at 2 s whatever it holds), reap it, then reclaim the region as its
    supervisor and watch until the region's in-flight count is the survivors' own again.
    Everything measured goes into ``out``. ``supervise=False``: no supervisor's reclaim;
    the dead caller's permits come back when a survivor's acquire finds the bulkhead full
    (docs/shared.md, "When reclaim runs"), watched every 5 ms until the run ends."""
    while not stop.is_set() and time.monotonic_ns() < t0 + int(at * NS):
        time.sleep(0.01)
    if stop.is_set():
        return
    snap: Any = None
    polls = 0
    give_up = time.monotonic() + 2.0
    while True:
        try:
            snap = get_json(victim.port, "/snapshot", 2.0)
            polls += 1
        except OSError:
            pass
        if (snap and snap["gauges"].get("bulkhead_in_flight", 0) > 0) or time.monotonic() >= give_up:
            break
        time.sleep(0.01)
    before = region.view()
    victim.p.send_signal(signal.SIGKILL)
    kill_ns = time.monotonic_ns()
    victim.p.wait()
    reaped = region.view()
    if supervise:
        got = region.region.reclaim()
        reclaimed = region.view()
    else:
        got = {"permits": 0, "claims": 0}
        reclaimed = reaped
        while not stop.is_set():
            v = region.view()
            if v["reclaimed_permits"] > before["reclaimed_permits"]:
                reclaimed = v
                break
            time.sleep(0.005)
    again = region.region.reclaim()
    # Consistent again: the region's in-flight count equals the survivors' own slots (read
    # from their /stats between two equal readings of the region), polled for up to 5 s.
    consistent = None
    for _ in range(250):
        a = region.view()
        try:
            own = sum(get_json(p.port, "/stats", 2.0).get("bulkhead_in_flight", 0) for p in survivors)
        except OSError:
            continue
        b = region.view()
        if a["bulkhead_in_flight"] == b["bulkhead_in_flight"] == own:
            consistent = {**b, "survivors_own": own}
            break
        time.sleep(0.02)
    s = lambda v: (v - t0) / NS  # noqa: E731
    out.update({
        "victim": victim.name, "pid": victim.p.pid, "exit": victim.p.returncode,
        "at_s": s(kill_ns), "asked_at_s": at, "snapshot_polls": polls,
        "victim_held_at_snapshot": (snap or {}).get("gauges", {}).get("bulkhead_in_flight"),
        "victim_series": (snap or {}).get("series", {}), "victim_gauges": (snap or {}).get("gauges"),
        "region_before": before, "region_reaped": reaped, "region_reclaimed": reclaimed,
        "reaped_ms": (reaped["t_ns"] - kill_ns) / 1e6,
        "reclaim": got, "reclaim_again": again,
        "reclaim_ms": None if reclaimed is reaped and not supervise else (reclaimed["t_ns"] - kill_ns) / 1e6,
        "supervised": supervise,
        "lazy_reclaimed": None if supervise else reclaimed["reclaimed_permits"] - before["reclaimed_permits"],
        "consistent": consistent,
        "consistent_ms": None if consistent is None else (consistent["t_ns"] - kill_ns) / 1e6,
    })


def run_cast(cast: dict[str, Any], duration: float, outdir: str, callers: str,
             seed: int, restart_stock: Optional[tuple[float, float]] = None,
             caller_procs: int = 1, kill_at: Optional[float] = None,
             close_connections: bool = False, supervise_reclaim: bool = True) -> dict[str, Any]:
    """Run the cast. ``restart_stock = (at, down)``: the dependency is killed with SIGKILL
    ``at`` seconds after the start and a new one is started on the same port ``down``
    seconds later (the callers keep their connections' pools and guards).
    ``caller_procs = N > 1``: the caller tier is N processes (``split_pool``) whose stock
    bulkhead and retry budget are one region's; ``kill_at``: the first of them is killed
    with SIGKILL ``kill_at`` seconds after the start (``kill_caller``).
    ``close_connections``: the callers open a new connection to stock for each attempt
    instead of reusing a keep-alive pool. ``supervise_reclaim=False``: the launcher does not
    reclaim the killed caller's permits (a survivor's acquire does, when it finds the
    bulkhead full)."""
    root = os.path.dirname(os.path.dirname(HERE))
    stock_exe = build_stock(root)
    py = sys.executable
    bound = duration + 420  # every process stops by itself after this
    stops_at = time.monotonic() + bound  # (the processes are started within the next seconds)
    t0 = time.monotonic_ns() + int(8 * NS)  # the topology's start, on the shared monotonic clock
    cfg_db = {**cast["db"], "t0_ns": t0, "seed": seed}
    with open(os.path.join(outdir, "db.json"), "w") as f:
        json.dump(cfg_db, f)
    procs: dict[str, Proc] = {}
    result: dict[str, Any] = {"processes": {}}
    region: Optional[RegionWatch] = None
    try:
        procs["db"] = Proc("db", [py, os.path.join(HERE, "db.py"), "--config",
                                   os.path.join(outdir, "db.json"), "--max-run-s", str(bound)], outdir)
        db_port = procs["db"].wait_listening()
        s = cast["stock"]
        argv = [stock_exe, "--db-port", str(db_port), "--workers", str(s["workers"]),
                "--cancel", str(int(s["cancel"])), "--deadline-check", str(int(s["deadline_check"])),
                "--send-deadline", str(int(s["send_deadline"])), "--db-attempts", str(s["db_attempts"]),
                "--db-timeout-ms", str(s["db_timeout_ms"]), "--max-run-s", str(int(bound))]
        if s["reserve_limit"]:
            argv += ["--reserve-limit", str(s["reserve_limit"]), "--view-limit", str(s["view_limit"])]
        stock_argv = argv
        procs["stock"] = Proc("stock", argv, outdir)
        stock_port = procs["stock"].wait_listening()
        cfg_shop = {**cast["shop"], "t0_ns": t0, "stock_port": stock_port,
                    "keep_alive": not close_connections, "series_seconds": int(duration) + 60}
        shop_names = ["shop"] if caller_procs == 1 else [f"shop{i}" for i in range(caller_procs)]
        if caller_procs > 1:
            region = RegionWatch(f"/dev/shm/guards-live-{os.getpid()}", cast["shop"]["bulkhead"])
            result["region_path"] = region.path
            result["caller_servers"] = split_pool(int(cast["shop"]["servers"]), caller_procs)
        for i, name in enumerate(shop_names):
            cfg_i = cfg_shop
            if caller_procs > 1:
                cfg_i = {**cfg_shop, "servers": result["caller_servers"][i], "region": region.path,
                         "region_bulkhead": REGION_BULKHEAD, "region_budget": REGION_BUDGET}
            with open(os.path.join(outdir, f"{name}.json"), "w") as f:
                json.dump(cfg_i, f)
            if callers == "node":
                argv = ["node", os.path.join(HERE, "shop_api.js"), "--config",
                        os.path.join(outdir, f"{name}.json"), "--max-run-s", str(bound)]
            else:
                argv = [py, os.path.join(HERE, "shop_api.py"), "--config",
                        os.path.join(outdir, f"{name}.json"), "--max-run-s", str(bound)]
            procs[name] = Proc(name, argv, outdir)
            procs[name].wait_listening()
        shop_port = procs[shop_names[0]].port
        plan = {"port": shop_port, "t0_ns": t0, "duration": duration, "entries": cast["entries"],
                "seed": seed, "grace_s": 30}
        if caller_procs > 1:
            plan["ports"] = [procs[nm].port for nm in shop_names]
        with open(os.path.join(outdir, "plan.json"), "w") as f:
            json.dump(plan, f)
        lg_out = os.path.join(outdir, "loadgen.json")
        procs["loadgen"] = Proc("loadgen", [py, os.path.join(HERE, "loadgen.py"), "--plan",
                                            os.path.join(outdir, "plan.json"), "--out", lg_out], outdir)
        ready = time.monotonic_ns()
        result["started_before_t0_s"] = (t0 - ready) / NS
        # Sample: CPU of each process and of the machine, the calls inside stock, RSS.
        samples: list[dict[str, Any]] = []
        last_cpu = {n: proc_cpu(p.p.pid) or 0.0 for n, p in procs.items()}
        last_m = machine_cpu()
        last_t = time.monotonic()
        inside: dict[int, list[int]] = {}
        killed: Optional[dict[str, Any]] = None
        kill: dict[str, Any] = {}
        stop_killer = threading.Event()
        killer = None
        if kill_at is not None:
            killer = threading.Thread(target=kill_caller, daemon=True, args=(
                procs[shop_names[0]], [procs[nm] for nm in shop_names[1:]], region, t0, kill_at, kill,
                stop_killer, supervise_reclaim))
            killer.start()
        while procs["loadgen"].p.poll() is None:
            time.sleep(0.2)
            now_ns = time.monotonic_ns()
            sec = (now_ns - t0) // NS
            if restart_stock is not None:
                at, down = restart_stock
                since = (now_ns - t0) / NS
                if killed is None and since >= at:
                    old = procs["stock"]
                    old.p.send_signal(signal.SIGKILL)
                    old.p.wait()
                    old.log.close()
                    killed = {"at_s": since, "exit": old.p.returncode, "restarted_at_s": None}
                elif killed is not None and killed["restarted_at_s"] is None and since >= at + down:
                    procs["stock"] = Proc("stock", stock_argv + ["--port", str(stock_port)], outdir,
                                          log_mode="a")
                    procs["stock"].wait_listening()
                    killed["restarted_at_s"] = (time.monotonic_ns() - t0) / NS
                    last_cpu["stock"] = 0.0
            try:
                if procs["stock"].p.poll() is None:
                    st = get_json(stock_port, "/stats", 2.0)
                    # calls inside: admitted at the door, queued or with a worker (as the model)
                    inside.setdefault(sec, []).append(int(st["inside"]) + int(st.get("queued", 0)))
            except OSError:
                pass
            if time.monotonic() - last_t >= 1.0:
                t = time.monotonic()
                # (a process that has exited reads None: it used nothing since the last sample)
                cpu = {n: proc_cpu(p.p.pid) for n, p in procs.items()}
                cpu = {n: last_cpu.get(n, 0.0) if v is None else v for n, v in cpu.items()}
                m = machine_cpu()
                row = {"sec": sec, "dt": t - last_t,
                       "cpu": {n: ((cpu[n] or 0.0) - last_cpu.get(n, 0.0)) / (t - last_t) for n in procs},
                       "machine": (m[0] - last_m[0]) / max(1e-9, m[2] - last_m[2]) * NCPU,
                       "machine_normal": (m[1] - last_m[1]) / max(1e-9, m[2] - last_m[2]) * NCPU,
                       "rss_kb": {n: proc_rss_kb(p.p.pid) for n, p in procs.items()}}
                samples.append(row)
                last_cpu = {n: cpu[n] or 0.0 for n in procs}
                last_m, last_t = m, t
        stop_killer.set()
        if killer is not None:
            killer.join(30)
        result["kill"] = kill or None
        dead = {kill["victim"]} if kill.get("victim") else set()
        live_shops = [nm for nm in shop_names if nm not in dead]
        result["loadgen_exit"] = procs["loadgen"].p.returncode
        with open(lg_out) as f:
            result["loadgen"] = json.load(f)
        # Let the callers and the dependency finish what they still hold (work the apps
        # abandoned, as shipped), then read the gauges. The drain goes on while the database
        # makes progress (a backlog of abandoned work can take minutes: C0's does), and stops
        # when nothing moved for LIVE_STALL_S, or 40 s before the processes stop by themselves.
        drain_start = time.monotonic()
        drain_until = min(stops_at - 40, drain_start + float(os.environ.get("LIVE_DRAIN_S", "360")))
        stall_s = float(os.environ.get("LIVE_STALL_S", "30"))
        drained = False
        last: Any = None
        progress, moved = -1, drain_start
        while time.monotonic() < drain_until and time.monotonic() - moved < stall_s:
            try:
                gs = [get_json(procs[nm].port, "/stats", 20.0) for nm in live_shops]
                st = get_json(stock_port, "/stats", 20.0)
                dbs = get_json(db_port, "/stats", 20.0)
                if all(g["busy"] == 0 and g["queued"] == 0 for g in gs) and st["inside"] == 0 \
                        and st.get("queued", 0) == 0 and dbs["busy"] == 0:
                    drained = True
                    break
                last = (gs[0] if caller_procs == 1 else gs, st, dbs)
                if dbs["queries"] != progress:
                    progress, moved = dbs["queries"], time.monotonic()
            except OSError as e:
                last = repr(e)
            result["drain_last"] = last
            time.sleep(0.5)
        result["drained"] = drained
        result["drain_s"] = time.monotonic() - drain_start
        if caller_procs == 1:
            result["shop_series"] = get_json(shop_port, "/series", 60.0)
            result["shop_gauges"] = get_json(shop_port, "/stats", 60.0)
        else:
            # The tier's series is the sum of its processes'; a killed one's is its last
            # /snapshot before the kill.
            by_proc = {nm: get_json(procs[nm].port, "/series", 60.0) for nm in live_shops}
            if kill.get("victim"):
                by_proc[kill["victim"]] = kill["victim_series"]
            total: dict[str, dict[str, int]] = {}
            for ser in by_proc.values():
                for sec, counters in ser.items():
                    row = total.setdefault(sec, {})
                    for k, v in counters.items():
                        row[k] = row.get(k, 0) + v
            result["shop_series"] = dict(sorted(total.items(), key=lambda kv: int(kv[0])))
            per = {nm: get_json(procs[nm].port, "/stats", 60.0) for nm in live_shops}
            result["shop_gauges"] = {
                "busy": sum(g["busy"] for g in per.values()),
                "queued": sum(g["queued"] for g in per.values()),
                "bulkhead_in_flight": sum(g.get("bulkhead_in_flight", 0) for g in per.values()),
                "per_process": per}
            end = region.view()
            result["region_end"] = {**end, "reclaim": region.region.reclaim(), "after": region.view()}
        result["stock_stats"] = get_json(stock_port, "/stats", 60.0)
        result["db_stats"] = get_json(db_port, "/stats", 60.0)
        result["inside"] = {str(k): statistics.mean(v) for k, v in sorted(inside.items())}
        result["samples"] = samples
        result["killed"] = killed
        # Stop: each answers /admin/quit and must exit 0 (its guards back to 0).
        for name, port in [(nm, procs[nm].port) for nm in live_shops] + [("stock", stock_port),
                                                                          ("db", db_port)]:
            try:
                get_json_text(port, "/admin/quit")
            except OSError:
                pass
            try:
                procs[name].p.wait(30)
            except subprocess.TimeoutExpired:
                procs[name].p.kill()
                procs[name].p.wait()
    finally:
        for p in procs.values():
            if p.p.poll() is None:
                p.p.kill()
                p.p.wait()
            p.log.close()
            result["processes"][p.name] = p.p.returncode
        if region is not None:
            region.remove()
    return result


def get_json_text(port: int, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return r.read().decode()


# ---------------------------------------------------------------- the comparison

def live_series(res: dict[str, Any], n: int, cast: dict[str, Any]) -> dict[str, list[float]]:
    """The measured per-second series, named as the simulator's generic columns."""
    lg = res["loadgen"]["series"]
    sh = res["shop_series"]
    out: dict[str, list[float]] = {}

    def col(src: dict[str, dict[str, int]], key: str) -> list[float]:
        return [float(src.get(str(i), {}).get(key, 0)) for i in range(n)]

    for e in cast["entries"]:
        name = e["name"]
        out[f"entry.{name}.full"] = col(lg, f"{name}.full")
        out[f"entry.{name}.degraded"] = col(lg, f"{name}.degraded")
        failed = [sum(x) for x in zip(*(col(lg, f"{name}.{o}")
                                        for o in ("refused", "timeout", "error", "caller_died")))]
        out[f"entry.{name}.failed"] = failed
        out[f"edge.app->{cast['shop']['name']}.{name}.retries"] = col(lg, f"{name}.retries")
    shop, stock = cast["shop"]["name"], cast["stock"]["name"]
    for op in cast["edges"]["stock_ops"]:
        pre = f"edge.{shop}->{stock}.{op}"
        out[f"{pre}.calls"] = col(sh, f"{op}.calls")
        out[f"{pre}.retries"] = col(sh, f"{op}.retries")
        out[f"{pre}.breaker_rejections"] = col(sh, f"{op}.breaker_rejections")
        out[f"{pre}.bulkhead_rejections"] = col(sh, f"{op}.bulkhead_rejections")
        out[f"{pre}.budget_refusals"] = col(sh, f"{op}.budget_refusals")
        out[f"{pre}.overloaded"] = col(sh, f"{op}.status_503")
        # timeouts as the simulator counts them on an edge: attempts the caller cut at their
        # budget, and answers that said the time had run out (504: stock's deadline check or
        # its statement timeout)
        out[f"{pre}.timeouts"] = [x + y for x, y in zip(col(sh, f"{op}.timeouts"), col(sh, f"{op}.status_504"))]
    out[f"svc.{stock}.inside_avg"] = [float(res["inside"].get(str(i), 0.0)) for i in range(n)]
    return out


def mean_window(xs: list[float], a: int, b: int) -> float:
    w = xs[a:b + 1]
    return sum(w) / len(w) if w else 0.0


def back_to_normal(series: dict[str, list[float]], entries: list[dict[str, Any]],
                   after: int) -> Optional[int]:
    """The first interval from `after` on from which, in every interval to the end of
    arrivals, at least 95 % of the requests that ended were answered in full (a second in
    which none ended is not normal).

    A share of what ended, not of the offered rate: with Poisson arrivals the count of a
    healthy second has a spread of about the square root of the rate (23 at Basketly's
    515 a second, against a 5 % margin of 26), so one healthy second in eight or so falls
    below 95 % of the rate, and the last such dip, not the recovery, decided the figure
    (the model's own seeds then spread over 0-9 s)."""
    names = [e["name"] for e in entries]
    n = len(series[f"entry.{names[0]}.full"])
    full = [sum(series[f"entry.{m}.full"][i] for m in names) for i in range(n)]
    ended = [full[i] + sum(series[f"entry.{m}.degraded"][i] + series[f"entry.{m}.failed"][i]
                           for m in names) for i in range(n)]
    normal = [ended[i] > 0 and full[i] >= 0.95 * ended[i] for i in range(n)]
    for i in range(after, n):
        if all(normal[i:]):
            return i
    return None


def compare(cast: dict[str, Any], res: dict[str, Any], sims: list[dict[str, list[float]]],
            n: int, label: str, window: Optional[tuple[int, int, int]] = None) -> dict[str, Any]:
    live = live_series(res, n, cast)
    keys = list(live)
    pred = {k: [statistics.mean(s[k][i] for s in sims) for i in range(n)] for k in keys}
    spread = {k: [statistics.pstdev([s[k][i] for s in sims]) for i in range(n)] for k in keys}
    # The hiccup window: from 2 s after the first slow-down starts to 1 s before it ends
    # (Basketly: 20:00:02 to 20:00:19), as interval indices since the start.
    sl = cast["db"]["slowdowns"] or cast["db"]["outages"]
    if window is not None:
        a, b, end_idx = window
    elif sl:
        a, b = int(sl[0][0]) + 2, int(sl[0][1]) - 1
        end_idx = int(sl[0][1])
    else:
        a, b, end_idx = 2, n - 2, 0
    rows = []

    def row(kind: str, name: str, key: Optional[str], tol_rel: float, tol_abs: float,
            lv: Optional[float] = None, pv: Optional[float] = None) -> None:
        if key is not None:
            lv, pv = mean_window(live[key], a, b), mean_window(pred[key], a, b)
            sd = statistics.pstdev([mean_window(s[key], a, b) for s in sims]) if len(sims) > 1 else 0.0
        else:
            sd = 0.0
        assert lv is not None and pv is not None
        diff = lv - pv
        ok = abs(diff) <= max(tol_rel * abs(pv), tol_abs)
        rows.append({"kind": kind, "name": name, "measured": lv, "predicted": pv, "sim_sd": sd,
                     "diff": diff, "rel": (diff / pv) if pv else None, "ok": ok,
                     "tol_rel": tol_rel, "tol_abs": tol_abs,
                     "tolerance": f"{int(tol_rel * 100)} %" + (f" or {tol_abs:g}/s" if tol_abs else "")})

    for e in cast["entries"]:
        row("goodput", f"{e['name']} full", f"entry.{e['name']}.full", 0.15, 3.0)
        if any(v > 0 for v in pred[f"entry.{e['name']}.degraded"]) or any(
                v > 0 for v in live[f"entry.{e['name']}.degraded"]):
            row("goodput", f"{e['name']} degraded", f"entry.{e['name']}.degraded", 0.15, 3.0)
    shop, stock = cast["shop"]["name"], cast["stock"]["name"]
    for op in cast["edges"]["stock_ops"]:
        pre = f"edge.{shop}->{stock}.{op}"
        for r in ("breaker_rejections", "bulkhead_rejections", "budget_refusals", "overloaded", "timeouts"):
            if any(v > 0 for v in pred[f"{pre}.{r}"]) or any(v > 0 for v in live[f"{pre}.{r}"]):
                row("refusals", f"{op} {r}", f"{pre}.{r}", 0.20, 0.0)
        row("calls", f"{op} calls to {stock}", f"{pre}.calls", 0.20, 0.0)
        row("calls", f"{op} retries", f"{pre}.retries", 0.20, 0.0)
    # The gauge is read from stock's /stats (its I/O thread answers it, busy workers or not);
    # a second without a reading (stock down) is not a second with 0 inside.
    seen = [i for i in range(a, b + 1) if str(i) in res["inside"]]
    if len(seen) * 2 > b - a + 1:
        lv = statistics.mean(res["inside"][str(i)] for i in seen)
        row("gauge", f"inside {stock} (mean of {len(seen)} s read)", None, 0.20, 0.0,
            lv=lv, pv=mean_window(pred[f"svc.{stock}.inside_avg"], a, b))
    elif window is None:  # (with the dependency restarted, it was down: nothing to read)
        rows.append({"kind": "gauge", "name": f"inside {stock} (read in {len(seen)} of {b - a + 1} s)",
                     "measured": None, "predicted": mean_window(pred[f"svc.{stock}.inside_avg"], a, b),
                     "sim_sd": 0.0, "diff": None, "rel": None, "ok": False,
                     "tolerance": "not measured: stock's /stats went unanswered"})
    lb = back_to_normal(live, cast["entries"], end_idx)
    pbs = [back_to_normal(s, cast["entries"], end_idx) for s in sims]
    # The simulator's seeds spread widely here (breakers that flap): the prediction is
    # the median seed, its spread the range over the seeds.
    known = sorted(p for p in pbs if p is not None)
    pb = known[len(known) // 2] if len(known) * 2 > len(pbs) else None
    back = {"measured": None if lb is None else lb - end_idx,
            "predicted": [None if p is None else p - end_idx for p in pbs]}
    rng = f"seeds {min(known) - end_idx}..{max(known) - end_idx} s" if known else "seeds: never"
    if lb is not None and pb is not None:
        rows.append({"kind": "time", "name": f"back to normal (s after the slow-down; {rng})",
                     "measured": float(lb - end_idx), "predicted": float(pb - end_idx), "sim_sd": 0.0,
                     "diff": float(lb - pb), "rel": None, "ok": abs(lb - pb) <= 2, "tolerance": "2 s"})
    else:
        same = lb is None and pb is None
        rows.append({"kind": "time", "name": f"back to normal (s after the slow-down; {rng})",
                     "measured": None if lb is None else float(lb - end_idx),
                     "predicted": None if pb is None else float(pb - end_idx), "sim_sd": 0.0,
                     "diff": None, "rel": None, "ok": same, "tolerance": "2 s (never = never)"})
    return {"label": label, "window": [a, b], "rows": rows, "live": live, "pred": pred,
            "spread": spread, "back": back}


def validity(res: dict[str, Any], n: int) -> dict[str, Any]:
    samples = [s for s in res["samples"] if 0 <= s["sec"] < n]
    machine = [s["machine"] for s in samples]
    normal = [s.get("machine_normal", s["machine"]) for s in samples]
    cast_cpu = [sum(s["cpu"].values()) for s in samples]
    per = {}
    for name in (samples[0]["cpu"] if samples else {}):
        per[name] = statistics.mean(s["cpu"][name] for s in samples)
    lg = res["loadgen"]
    why = []
    m_mean = statistics.mean(machine) if machine else 0.0
    n_mean = statistics.mean(normal) if normal else 0.0
    if n_mean > 0.9 * NCPU:
        why.append(f"the machine was {n_mean:.2f} of {NCPU} cores busy at normal priority (over 90 %)")
    if lg["lateness_p99_s"] > 0.05:
        why.append(f"the load generator fell behind its schedule (p99 {lg['lateness_p99_s'] * 1000:.0f} ms late)")
    if res.get("started_before_t0_s", 1) < 0:
        why.append("the cast was not ready at the start")
    return {"valid": not why, "why": why, "machine_cores_mean": m_mean, "machine_normal_cores_mean": n_mean,
            "machine_cores_max": max(machine) if machine else 0.0,
            "cast_cores_mean": statistics.mean(cast_cpu) if cast_cpu else 0.0,
            "cast_cores_max": max(cast_cpu) if cast_cpu else 0.0, "per_process_cores": per,
            "lateness_p99_ms": lg["lateness_p99_s"] * 1000, "lateness_max_ms": lg["lateness_max_s"] * 1000}


def clean_shutdown(res: dict[str, Any]) -> dict[str, Any]:
    g = res["shop_gauges"]
    st = res["stock_stats"]
    dbs = res["db_stats"]
    checks = {
        "every process exited 0": all(v == 0 for v in res["processes"].values()),
        "callers and dependency drained after the load": bool(res.get("drained")),
        "caller threads busy 0": g.get("busy") == 0 and g.get("queued") == 0,
        "caller bulkhead in flight 0": g.get("bulkhead_in_flight", 0) == 0,
        "dependency calls inside 0": st["inside"] == 0 and st.get("queued", 0) == 0,
        "dependency admission outstanding 0": st["admission_outstanding"] == 0,
        "database connections busy 0, queue empty": dbs["busy"] == 0 and dbs["queued"] == 0,
    }
    return {"ok": all(checks.values()), "checks": checks, "exit_codes": res["processes"]}


def accounting(res: dict[str, Any]) -> dict[str, Any]:
    lg = res["loadgen"]
    per = {}
    for name, sent in lg["sent"].items():
        outs = lg["outcomes"].get(name, {})
        per[name] = {"sent": sent, **outs, "ok": sent == sum(outs.values())}
    return {"ok": lg["accounted"] and all(p["ok"] for p in per.values()), "sent": lg["sent_total"],
            "ended": lg["ended_total"], "lost": lg["lost"], "per_entry": per}


def write_report(outdir: str, label: str, cmp: Optional[dict[str, Any]], valid: dict[str, Any],
                 acc: dict[str, Any], shut: dict[str, Any], start: float, callers: str) -> str:
    lines = [f"# live run {label} ({callers} callers)", ""]
    lines.append(f"accounting: sent {acc['sent']}, ended {acc['ended']}, lost {acc['lost']}: "
                 + ("OK" if acc["ok"] else "FAILED"))
    lines.append("clean shutdown: " + ("OK" if shut["ok"] else "FAILED " + json.dumps(shut["checks"])))
    lines.append(f"CPU: cast {valid['cast_cores_mean']:.2f} cores mean (max {valid['cast_cores_max']:.2f}), "
                 f"machine {valid['machine_cores_mean']:.2f} of {NCPU} (max {valid['machine_cores_max']:.2f}), "
                 f"{valid['machine_normal_cores_mean']:.2f} at normal priority; "
                 + ", ".join(f"{k} {v:.2f}" for k, v in valid["per_process_cores"].items())
                 + f"; load generator late p99 {valid['lateness_p99_ms']:.1f} ms")
    lines.append("")
    if not valid["valid"]:
        lines.append("invalid: machine saturated (" + "; ".join(valid["why"]) + ")")
    elif cmp is not None:
        a, b = cmp["window"]
        lines.append(f"hiccup window {fmt_clock(start + a)}-{fmt_clock(start + b)} (mean per second); "
                     "predicted = simulator mean over its seeds (sd)")
        lines.append("")
        lines.append("| figure | measured | predicted (sd) | difference | tolerance | within |")
        lines.append("|---|---|---|---|---|---|")
        for r in cmp["rows"]:
            m = ("never" if r["kind"] == "time" else "n/a") if r["measured"] is None else f"{r['measured']:.1f}"
            p = "never" if r["predicted"] is None else f"{r['predicted']:.1f} ({r['sim_sd']:.1f})"
            d = "" if r["diff"] is None else f"{r['diff']:+.1f}" + (
                f" ({r['rel'] * 100:+.0f} %)" if r["rel"] is not None else "")
            lines.append(f"| {r['name']} | {m} | {p} | {d} | {r['tolerance']} | "
                         f"{'yes' if r['ok'] else 'NO'} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write(text)
    return text


def plot(outdir: str, cmp: dict[str, Any], cast: dict[str, Any], start: float, label: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    live, pred = cmp["live"], cmp["pred"]
    n = len(next(iter(live.values())))
    x = list(range(n))
    shop, stock = cast["shop"]["name"], cast["stock"]["name"]
    fig, axes = plt.subplots(4, 1, figsize=(10, 12), sharex=True)
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    ax = axes[0]
    for i, e in enumerate(cast["entries"]):
        k = f"entry.{e['name']}.full"
        ax.plot(x, live[k], color=colors[i], label=f"{e['name']} full, measured")
        ax.plot(x, pred[k], color=colors[i], ls="--", label=f"{e['name']} full, predicted")
        kd = f"entry.{e['name']}.degraded"
        if any(pred[kd]) or any(live[kd]):
            ax.plot(x, live[kd], color=colors[i + 3], label=f"{e['name']} degraded, measured")
            ax.plot(x, pred[kd], color=colors[i + 3], ls="--", label=f"{e['name']} degraded, predicted")
    ax.set_ylabel("goodput /s")
    ax.legend(fontsize=7, ncol=2)
    ax = axes[1]
    i = 0
    for op in cast["edges"]["stock_ops"]:
        for r in ("breaker_rejections", "bulkhead_rejections", "budget_refusals", "overloaded", "timeouts"):
            k = f"edge.{shop}->{stock}.{op}.{r}"
            if any(live[k]) or any(pred[k]):
                c = colors[i % len(colors)]
                ax.plot(x, live[k], color=c, label=f"{op} {r}, measured")
                ax.plot(x, pred[k], color=c, ls="--", label=f"{op} {r}, predicted")
                i += 1
    ax.set_ylabel("refusals /s")
    ax.legend(fontsize=7, ncol=2)
    ax = axes[2]
    k = f"svc.{stock}.inside_avg"
    ax.plot(x, live[k], color="tab:blue", label="measured")
    ax.plot(x, pred[k], color="tab:blue", ls="--", label="predicted")
    ax.set_ylabel(f"calls inside {stock}")
    ax.legend(fontsize=7)
    ax = axes[3]
    for j, op in enumerate(cast["edges"]["stock_ops"]):
        k = f"edge.{shop}->{stock}.{op}.retries"
        ax.plot(x, live[k], color=colors[j], label=f"{op} retries, measured")
        ax.plot(x, pred[k], color=colors[j], ls="--", label=f"{op} retries, predicted")
    ax.set_ylabel("retries /s")
    ax.legend(fontsize=7)
    ticks = list(range(0, n, 5))
    ax.set_xticks(ticks)
    ax.set_xticklabels([fmt_clock(start + t) for t in ticks], rotation=30)
    fig.suptitle(f"{label}: measured (solid) vs predicted (dashed)")
    fig.tight_layout()
    path = os.path.join(outdir, "compare.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def restart_shutdown(shut: dict[str, Any], res: dict[str, Any]) -> dict[str, Any]:
    """The clean-shutdown checks of a run whose dependency was killed: the killed process
    must have died of SIGKILL, the new one must exit 0 like every other."""
    k = res.get("killed")
    checks = dict(shut["checks"])
    checks["the dependency was killed with SIGKILL"] = bool(k) and k["exit"] == -signal.SIGKILL
    checks["a new dependency was started on its port"] = bool(k) and k["restarted_at_s"] is not None
    return {"ok": all(checks.values()), "checks": checks, "exit_codes": shut["exit_codes"]}


def restart_report(res: dict[str, Any], cast: dict[str, Any], n: int) -> dict[str, Any]:
    """What the callers did while the dependency was down, and how long until full
    goodput came back after the new one started (``back_to_normal``)."""
    k = res.get("killed") or {}
    live = live_series(res, n, cast)
    if not k or k.get("restarted_at_s") is None:
        return {"ok": False, "why": "the dependency was not restarted", "killed": k}
    a, b = int(k["at_s"]), int(k["restarted_at_s"])
    shop, stock = cast["shop"]["name"], cast["stock"]["name"]
    down: dict[str, float] = {}
    for e in cast["entries"]:
        for kind in ("full", "degraded", "failed"):
            down[f"{e['name']} {kind}"] = mean_window(live[f"entry.{e['name']}.{kind}"], a, max(a, b - 1))
    for op in cast["edges"]["stock_ops"]:
        pre = f"edge.{shop}->{stock}.{op}"
        for r in ("calls", "retries", "breaker_rejections", "bulkhead_rejections", "budget_refusals"):
            down[f"{op} {r}"] = mean_window(live[f"{pre}.{r}"], a, max(a, b - 1))
    before = {f"{e['name']} full": mean_window(live[f"entry.{e['name']}.full"], 2, max(2, a - 1))
              for e in cast["entries"]}
    back = back_to_normal(live, cast["entries"], b)
    return {"ok": True, "killed_at_s": k["at_s"], "restarted_at_s": k["restarted_at_s"],
            "killed_exit": k["exit"], "before_per_s": before, "while_down_per_s": down,
            "back_to_normal_s": None if back is None else back - k["restarted_at_s"]}


def soak_report(res: dict[str, Any]) -> dict[str, Any]:
    """Each process's RSS over the run: the least-squares slope after the first minute
    (KiB a minute) and the RSS at its start and end. A process grows if its RSS over the
    last minute is above its RSS over the second minute by more than 10 % and 4 MiB."""
    samples = [s for s in res["samples"] if s["sec"] >= 0]
    out: dict[str, Any] = {"ok": True, "processes": {}}
    if len(samples) < 180:
        return {"ok": False, "why": f"{len(samples)} samples: a soak needs at least 3 minutes"}
    for name in samples[0]["rss_kb"]:
        pts = [(s["sec"], s["rss_kb"][name]) for s in samples if s["rss_kb"].get(name)]
        tail = [(t, r) for t, r in pts if t >= 60]
        if len(tail) < 2:
            continue
        mt = statistics.mean(t for t, _ in tail)
        mr = statistics.mean(r for _, r in tail)
        slope = sum((t - mt) * (r - mr) for t, r in tail) / max(1e-9, sum((t - mt) ** 2 for t, _ in tail))
        second = statistics.mean(r for t, r in pts if 60 <= t < 120)
        last_t = pts[-1][0]
        last = statistics.mean(r for t, r in pts if t > last_t - 60)
        grows = last > second * 1.10 and last - second > 4096
        out["processes"][name] = {"rss_start_kib": pts[0][1], "rss_minute_2_kib": second,
                                  "rss_last_minute_kib": last, "slope_kib_per_min": slope * 60,
                                  "grows": grows}
        out["ok"] = out["ok"] and not grows
    return out


def scaled_topology(t: dict[str, Any], cast: dict[str, Any], procs: int, kill_s: float) -> dict[str, Any]:
    """The simulator's nearest counterpart of N caller processes, one killed at ``kill_s``:
    the caller tier as ``procs`` instances with its threads split as ``split_pool`` splits
    them, in turn (round-robin), each with its own breakers, the bulkhead's cap and the
    token bucket's capacity as fleet-wide allowances (the region keeps one of each), and a
    scale-in to ``procs - 1`` instances at the kill. (The simulator has no kill: a removed
    instance finishes what it holds, where a killed process loses it.)"""
    t2 = json.loads(json.dumps(t))
    svc = next(x for x in t2["services"] if x["name"] == cast["shop"]["name"])
    svc["instances"] = procs
    svc["servers"] = split_pool(int(cast["shop"]["servers"]), procs)[0]
    svc["balance"] = "round_robin"
    allow = []
    if svc.get("bulkheads"):
        allow.append({"name": "bulkhead", "guard": {"bulkhead": 0},
                      "allowance": int(svc["bulkheads"][0]["max_concurrent"])})
    b = (svc.get("budgets") or [None])[0]
    if b and b.get("mode", "token_bucket") == "token_bucket":
        allow.append({"name": "budget", "guard": {"budget": 0}, "allowance": int(b["capacity"])})
    if allow:
        svc["fleet"] = {"allowances": allow}
    t2["events"] = [{"at": fmt_instant(cast["start"] + kill_s),
                     "scale": {"service": cast["shop"]["name"], "instances": procs - 1}}]
    return t2


def kill_shutdown(shut: dict[str, Any], res: dict[str, Any]) -> dict[str, Any]:
    """The clean-shutdown checks of a run with several caller processes, one of them
    killed: the killed one died of SIGKILL, every other exited 0 with its own slots back to
    0, and the region is back to 0 (in flight, permits held, nothing left to reclaim)."""
    k = res.get("kill") or {}
    codes = dict(res["processes"])
    checks = dict(shut["checks"])
    victim = k.get("victim")
    checks["every process exited 0"] = all(v == 0 for n, v in codes.items() if n != victim)
    if "kill_at" in res:
        checks["the caller was killed with SIGKILL"] = bool(k) and k.get("exit") == -signal.SIGKILL
    end = res.get("region_end") or {}
    checks["region bulkhead in flight 0"] = end.get("bulkhead_in_flight") == 0
    checks["region permits held 0"] = end.get("permits_held") == 0
    checks["nothing left to reclaim at the end"] = end.get("reclaim") == {"permits": 0, "claims": 0}
    return {"ok": all(checks.values()), "checks": checks, "exit_codes": codes}


def kill_report(res: dict[str, Any], cast: dict[str, Any]) -> dict[str, Any]:
    """The caller killed mid-run: what the region held and gave back, when the region was
    consistent again, and what the apps saw (attempts in flight to it, sent to it after
    its death, actions that ended with it)."""
    k = res.get("kill") or {}
    if not k.get("victim"):
        return {"ok": False, "why": "no caller was killed (the run ended first?)"}
    lg = res["loadgen"]
    at = k["at_s"]
    victim = int(k["victim"].removeprefix("shop"))
    died = [d for d in lg.get("died_attempts", []) if d["caller"] == victim]
    found = lg.get("dead_callers", {}).get(str(victim))
    in_flight = sum(1 for d in died if d["sent_s"] < at)
    after = len(died) - in_flight
    ended = {e: lg["outcomes"].get(e, {}).get("caller_died", 0) for e in lg["sent"]}
    rb, rr, rc = k["region_before"], k["region_reaped"], k["region_reclaimed"]
    checks = {
        "the caller was killed with SIGKILL": k.get("exit") == -signal.SIGKILL,
        "the load generator found it gone": found is not None,
        "no attempt went to it after it was found gone": all(d["sent_s"] <= found for d in died)
        if found is not None else False,
        "a second reclaim right after found nothing": k.get("reclaim_again") == {"permits": 0, "claims": 0},
        "the region was consistent again": k.get("consistent") is not None,
    }
    return {
        "ok": all(checks.values()), "checks": checks, "victim": k["victim"], "pid": k["pid"],
        "exit": k.get("exit"), "asked_at_s": k["asked_at_s"], "killed_at_s": at,
        "killed_at": fmt_instant(cast["start"] + at),
        "victim_slots_at_last_snapshot": k.get("victim_held_at_snapshot"),
        "region_before_kill": {x: rb[x] for x in ("bulkhead_in_flight", "permits_held")},
        "region_after_reap": {x: rr[x] for x in ("bulkhead_in_flight", "permits_held")},
        "region_after_reclaim": {x: rc[x] for x in ("bulkhead_in_flight", "permits_held")},
        "reaped_ms": k["reaped_ms"], "reclaim": k["reclaim"], "reclaim_done_ms": k["reclaim_ms"],
        "supervised": k.get("supervised", True), "lazy_reclaimed": k.get("lazy_reclaimed"),
        "reclaimed_permits_total": rc["reclaimed_permits"] - rb["reclaimed_permits"],
        "consistent_ms": k.get("consistent_ms"),
        "survivors_own_slots_when_consistent": (k.get("consistent") or {}).get("survivors_own"),
        "attempts_in_flight_at_kill": in_flight, "attempts_sent_after_kill": after,
        "loadgen_found_gone_ms": None if found is None else (found - at) * 1000,
        "actions_ended_caller_died": ended, "region_end": res.get("region_end"),
        "caller_servers": res.get("caller_servers"),
    }


def extra_text(extra: dict[str, Any]) -> str:
    lines = []
    kr = extra.get("kill_caller")
    if kr:
        lines += ["", "## caller killed", ""]
        if "why" in kr:
            lines.append(f"FAILED: {kr['why']}")
        else:
            lines.append(f"{kr['victim']} (pid {kr['pid']}, {kr['caller_servers']} threads over the "
                         f"caller processes) killed with SIGKILL at {kr['killed_at_s']:.2f} s "
                         f"({kr['killed_at']}; asked for {kr['asked_at_s']:g} s), exit {kr['exit']}: "
                         + ("OK" if kr["ok"] else "FAILED " + json.dumps(kr["checks"])))
            lines.append("")
            lines.append("| region bulkhead | in flight (all processes) | permits held |")
            lines.append("|---|---|---|")
            by = "the supervisor's reclaim" if kr["supervised"] else "a survivor's reclaim"
            done = "never" if kr["reclaim_done_ms"] is None else f"+{kr['reclaim_done_ms']:.1f} ms"
            for nm, key in (("just before the kill", "region_before_kill"),
                            (f"dead caller reaped (+{kr['reaped_ms']:.1f} ms)", "region_after_reap"),
                            (f"after {by} ({done})", "region_after_reclaim")):
                lines.append(f"| {nm} | {kr[key]['bulkhead_in_flight']} | {kr[key]['permits_held']} |")
            end = kr.get("region_end") or {}
            lines.append(f"| after the run | {end.get('bulkhead_in_flight')} | {end.get('permits_held')} |")
            lines.append("")
            if kr["supervised"]:
                how = (f"{kr['reclaim']['permits']} permits ({kr['reclaim']['claims']} claims) by the "
                       f"supervisor's `region.reclaim()` {kr['reclaim_done_ms']:.1f} ms after the kill; ")
            elif kr["reclaim_done_ms"] is None:
                how = "nothing by a survivor before the run ended (no supervisor's reclaim); "
            else:
                how = (f"{kr['lazy_reclaimed']} permits by a survivor's acquire that found the bulkhead "
                       f"full, {kr['reclaim_done_ms']:.1f} ms after the kill (no supervisor's reclaim); ")
            lines.append("reclaimed: " + how +
                         f"{kr['reclaimed_permits_total']} by any process; the dead caller held "
                         f"{kr['victim_slots_at_last_snapshot']} slots at its last /snapshot. Consistent again "
                         "(region in flight = the survivors' own slots) "
                         + ("never" if kr["consistent_ms"] is None else f"{kr['consistent_ms']:.1f} ms after the kill")
                         + f"; at the end a reclaim found {end.get('reclaim')}.")
            lines.append(f"apps: {kr['attempts_in_flight_at_kill']} attempts in flight to it at the kill, "
                         f"{kr['attempts_sent_after_kill']} sent to it after, found gone "
                         + ("never" if kr["loadgen_found_gone_ms"] is None
                            else f"{kr['loadgen_found_gone_ms']:.1f} ms after the kill")
                         + "; actions ended `caller_died`: "
                         + ", ".join(f"{e} {v}" for e, v in kr["actions_ended_caller_died"].items()))
        sc = kr.get("scaled_sim") if kr and "why" not in kr else None
        if sc:
            ch = sc["topology_changes"]
            lines += ["", f"The same window against the simulator with the caller tier as {ch['instances']} "
                      f"instances of {ch['servers']} threads (round-robin; fleet allowances "
                      + ", ".join(f"{x['name']} {x['allowance']}" for x in (ch["fleet"] or {}).get("allowances", []))
                      + f"; breakers per instance) scaled in to {ch['instances'] - 1} at the kill "
                      "(a removed instance finishes what it holds):", "",
                      "| figure | measured | predicted (sd) | within |", "|---|---|---|---|"]
            for r2 in sc["rows"]:
                m = "never" if r2["measured"] is None else f"{r2['measured']:.1f}"
                p2 = "never" if r2["predicted"] is None else f"{r2['predicted']:.1f} ({r2['sim_sd']:.1f})"
                lines.append(f"| {r2['name']} | {m} | {p2} | {'yes' if r2['ok'] else 'NO'} |")
    r = extra.get("restart")
    if r:
        lines += ["", "## dependency restart", ""]
        if not r["ok"]:
            lines.append(f"FAILED: {r['why']}")
        else:
            lines.append(f"killed at {r['killed_at_s']:.1f} s (exit {r['killed_exit']}), new one "
                         f"listening at {r['restarted_at_s']:.1f} s; back to normal "
                         + ("never" if r["back_to_normal_s"] is None else f"{r['back_to_normal_s']:.1f} s")
                         + " after it started")
            lines.append("")
            lines.append("| per second | before | while down |")
            lines.append("|---|---|---|")
            for k, v in r["while_down_per_s"].items():
                b = r["before_per_s"].get(k)
                lines.append(f"| {k} | {'' if b is None else f'{b:.1f}'} | {v:.1f} |")
    s = extra.get("soak")
    if s:
        lines += ["", "## soak: RSS", ""]
        if "why" in s:
            lines.append(f"FAILED: {s['why']}")
        else:
            lines.append("| process | start KiB | minute 2 KiB | last minute KiB | slope KiB/min | grows |")
            lines.append("|---|---|---|---|---|---|")
            for k, v in s["processes"].items():
                lines.append(f"| {k} | {v['rss_start_kib']} | {v['rss_minute_2_kib']:.0f} | "
                             f"{v['rss_last_minute_kib']:.0f} | {v['slope_kib_per_min']:+.1f} | "
                             f"{'YES' if v['grows'] else 'no'} |")
    return "\n".join(lines) + ("\n" if lines else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("topology", help="a guards.sim preset (live-C8) or a topology JSON file")
    ap.add_argument("--duration", type=float, help="seconds of arrivals (default: the preset's run)")
    ap.add_argument("--out", default="out/live")
    ap.add_argument("--callers", choices=("python", "node"), default="python")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sim-seeds", type=int, default=8, help="simulator seeds to average")
    ap.add_argument("--smoke", action="store_true",
                    help="check the accounting and the clean shutdown only (no figures)")
    ap.add_argument("--healthy", action="store_true",
                    help="leave out the topology's slow-downs and outages (the healthy rate)")
    ap.add_argument("--restart-stock", metavar="AT:DOWN",
                    help="kill the dependency with SIGKILL AT s after the start and start a new "
                         "one on its port DOWN s later; reports the fault instead of the comparison")
    ap.add_argument("--caller-procs", type=int, default=1, metavar="N",
                    help="run the caller tier as N processes (its threads split between them, "
                         "its bulkhead and retry budget one region's); default 1")
    ap.add_argument("--kill-caller", type=float, metavar="AT",
                    help="kill the first caller process with SIGKILL AT s after the start (needs "
                         "--caller-procs >= 2); reports the fault and compares the survivors")
    ap.add_argument("--close-connections", action="store_true",
                    help="callers open a new connection to stock for every attempt (default: "
                         "keep-alive pools, as production clients run)")
    ap.add_argument("--lazy-reclaim", action="store_true",
                    help="with --kill-caller: no supervisor's reclaim; a survivor's acquire that "
                         "finds the region bulkhead full gives the dead caller's permits back")
    ap.add_argument("--soak", action="store_true",
                    help="the healthy rate for --duration (default 600 s); reports each "
                         "process's RSS slope instead of the comparison")
    a = ap.parse_args()
    restart = None
    if a.restart_stock:
        try:
            at, down = (float(x) for x in a.restart_stock.split(":"))
        except ValueError:
            ap.error(f"--restart-stock wants AT:DOWN in seconds, not {a.restart_stock!r}")
        if not (at > 0 and down >= 0):
            ap.error("--restart-stock: AT must be > 0 and DOWN >= 0")
        restart = (at, down)
    if a.caller_procs < 1:
        ap.error("--caller-procs must be >= 1")
    if a.kill_caller is not None:
        if a.caller_procs < 2:
            ap.error("--kill-caller needs --caller-procs >= 2 (one must carry on)")
        if a.kill_caller <= 0:
            ap.error("--kill-caller: AT must be > 0")
        if restart is not None or a.soak:
            ap.error("--kill-caller runs alone (not with --restart-stock or --soak)")
    elif a.lazy_reclaim:
        ap.error("--lazy-reclaim needs --kill-caller")
    if a.soak:
        a.healthy = True
        if a.duration is None:
            a.duration = 600.0
    if os.path.exists(a.topology):
        t = json.load(open(a.topology))
        label = os.path.basename(a.topology)
        if a.duration is None:
            ap.error("--duration is needed with a topology file")
        duration = a.duration
    else:
        t = guards.sim.basketly_topology(a.topology)
        label = a.topology
        cfg = guards.sim.basketly_config(a.topology)
        duration = a.duration or (topo.clock(cfg["until"]) - topo.clock(cfg["start"]))
    if a.healthy:
        for svc in t["services"]:
            svc["slowdowns"], svc["outages"] = [], []
        label += "-healthy"
    if restart is not None:
        label += f"-restart-{a.restart_stock}"
    if a.soak:
        label += "-soak"
    if a.caller_procs > 1:
        label += f"-procs{a.caller_procs}"
    if a.kill_caller is not None:
        label += f"-kill-{a.kill_caller:g}" + ("-lazy" if a.lazy_reclaim else "")
    if a.close_connections:
        label += "-close"
    cast = topo.cast(t)
    if a.caller_procs > int(cast["shop"]["servers"]):
        ap.error(f"--caller-procs {a.caller_procs}: the caller tier has {cast['shop']['servers']} threads")
    outdir = os.path.join(a.out, f"{label}-{a.callers}")
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "topology.json"), "w") as f:
        json.dump(t, f, indent=1)
    t_start = time.monotonic()
    res = run_cast(cast, duration, outdir, a.callers, a.seed, restart, a.caller_procs, a.kill_caller,
                   a.close_connections, not a.lazy_reclaim)
    if a.kill_caller is not None:
        res["kill_at"] = a.kill_caller
    n = int(duration)
    acc = accounting(res)
    shut = clean_shutdown(res)
    valid = validity(res, n)
    cmp = None
    extra: dict[str, Any] = {}
    if restart is not None:
        extra["restart"] = restart_report(res, cast, n)
        shut = restart_shutdown(shut, res)
    if a.soak:
        extra["soak"] = soak_report(res)
    if a.caller_procs > 1:
        shut = kill_shutdown(shut, res)
    if a.kill_caller is not None:
        extra["kill_caller"] = kill_report(res, cast)
    if not a.smoke and not a.soak:
        sims = []
        until = fmt_clock(cast["start"] + n)
        window = None
        sim_t = t
        k = res.get("killed")
        if restart is not None and k and k["restarted_at_s"] is not None:
            # The simulator's counterpart of the restart: the dependency refuses every call
            # (an error at once, as a closed port does) from the kill to the new start.
            sim_t = json.loads(json.dumps(t))
            for svc in sim_t["services"]:
                if svc["name"] == cast["stock"]["name"]:
                    svc["outages"] = [{"start": fmt_instant(cast["start"] + k["at_s"]),
                                       "end": fmt_instant(cast["start"] + k["restarted_at_s"])}]
            window = (int(k["at_s"]) + 1, max(int(k["at_s"]) + 1, int(k["restarted_at_s"]) - 1),
                      int(k["restarted_at_s"]) + 1)
        kc = res.get("kill")
        if a.kill_caller is not None and kc and kc.get("victim"):
            # The simulator has no "kill a caller" event: it runs the topology as it is (the
            # caller tier as one instance with the topology's threads and guards, which the
            # region keeps one), and the comparison is over the survivors' window: from the
            # second after the kill to the end of the slow-down window.
            k_s = int(kc["at_s"]) + 1
            sl = cast["db"]["slowdowns"] or cast["db"]["outages"]
            if sl and k_s < int(sl[0][1]) - 1:
                window = (max(k_s, int(sl[0][0]) + 2), int(sl[0][1]) - 1, int(sl[0][1]))
            else:
                window = (k_s, max(k_s, n - 2), int(sl[0][1]) if sl else 0)
        for s in range(1, a.sim_seeds + 1):
            r = guards.sim.simulate(sim_t, seed=s, until=until)
            sims.append({k: [float(v or 0.0) for v in vals] for k, vals in r.series.items() if k != "t"})
        cmp = compare(cast, res, sims, n, label, window)
        if a.kill_caller is not None and kc and kc.get("victim") and "kill_caller" in extra \
                and valid["valid"]:
            sc_t = scaled_topology(t, cast, a.caller_procs, kc["at_s"])
            sims2 = []
            for s in range(1, a.sim_seeds + 1):
                r = guards.sim.simulate(sc_t, seed=s, until=until)
                sims2.append({k: [float(v or 0.0) for v in vals] for k, vals in r.series.items() if k != "t"})
            cmp2 = compare(cast, res, sims2, n, label, window)
            extra["kill_caller"]["scaled_sim"] = {
                "topology_changes": {"instances": a.caller_procs,
                                     "servers": split_pool(int(cast["shop"]["servers"]), a.caller_procs)[0],
                                     "balance": "round_robin",
                                     "fleet": next(x for x in sc_t["services"]
                                                   if x["name"] == cast["shop"]["name"]).get("fleet"),
                                     "events": sc_t["events"]},
                "rows": cmp2["rows"]}
        if valid["valid"]:
            plot(outdir, cmp, cast, cast["start"], f"{label} ({a.callers} callers)")
    text = write_report(outdir, label, cmp, valid, acc, shut, cast["start"], a.callers)
    text += extra_text(extra)
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write(text)
    rep = {"label": label, "callers": a.callers, "duration": duration, "accounting": acc,
           "shutdown": shut, "validity": valid, "comparison": cmp and {k: cmp[k] for k in ("window", "rows", "back")},
           "live_series": cmp and cmp["live"], "predicted_series": cmp and cmp["pred"],
           "loadgen": {k: v for k, v in res["loadgen"].items() if k != "series"},
           "shop_series": res["shop_series"], "shop_gauges": res["shop_gauges"], "stock_stats": res["stock_stats"], "db_stats": res["db_stats"],
           "samples": res["samples"], "faults": extra, "wall_s": time.monotonic() - t_start}
    with open(os.path.join(outdir, "report.json"), "w") as f:
        json.dump(rep, f, indent=1)
    print(text)
    print(f"written to {outdir} in {time.monotonic() - t_start:.0f} s")
    ok = acc["ok"] and shut["ok"] and all(v.get("ok", True) for v in extra.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
