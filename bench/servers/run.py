#!/usr/bin/env python3
"""The cost of guards' admission middleware inside real servers (`make bench-servers`).

For each server (Express, Fastify, node:http, an ASGI app under uvicorn, the C example
server, and Fastify over HTTP/2), start it on a free loopback port without guards and
with them, saturate it with a real load tool (wrk; h2load for HTTP/2), and report
requests per second and p99 latency, with and without guards, in the same run: the
variants of one server are measured in turns (A B, then B A, ...; several rounds) so the
machine's noise hits every side alike, and each figure is the median over the rounds
with its spread (min-max). The ratio is the median of the rounds' own ratios (each
round's "with" over the same round's "without").

Every guarded variant is configured the way a user would, with limits far above the load
tool's concurrency so that the row measures the cost, not refusals; the refusals are
counted (responses not 2xx/3xx from the load tool, and the door's own refusal counter)
and reported.

    python3 bench/servers/run.py --python .venv/bin/python --c-server PATH [--rounds 5]
        [--duration 5] [--only express,fastify] [--out target/bench-servers.md]

Standard library only. Prints the markdown table and writes it to --out (and every run's
raw figures beside it, as JSON).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

RPS_GOAL = 0.97  # guards cost <= 3 % of requests per second
P99_GOAL = 1.05  # and add <= 5 % to p99


# ---------------------------------------------------------------- load tools' output


def _duration_s(text: str) -> float:
    """A wrk duration ("812.00us", "1.23ms", "2.00s", "1.5m") in seconds."""
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", text.strip())
    if not m:
        raise ValueError(f"not a wrk duration: {text!r}")
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}[m.group(2)]
    return float(m.group(1)) * scale


def parse_wrk(out: str) -> dict:
    """Requests/sec, p50/p99 (s), request count, non-2xx/3xx count and socket errors from
    the output of `wrk --latency`."""
    rps = re.search(r"^Requests/sec:\s+([0-9.]+)", out, re.M)
    p99 = re.search(r"^\s+99(?:\.000)?%\s+(\S+)", out, re.M)
    p50 = re.search(r"^\s+50(?:\.000)?%\s+(\S+)", out, re.M)
    total = re.search(r"^\s+(\d+) requests in ", out, re.M)
    if not (rps and p99 and p50 and total):
        raise ValueError(f"unexpected wrk output:\n{out}")
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return {
        "rps": float(rps.group(1)),
        "p99": _duration_s(p99.group(1)),
        "p50": _duration_s(p50.group(1)),
        "requests": int(total.group(1)),
        "non2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": sum(int(x) for x in sock.groups()) if sock else 0,
    }


def _percentile(sorted_values: list, q: float) -> float:
    """The q-quantile (nearest rank) of a sorted list."""
    if not sorted_values:
        raise ValueError("no samples")
    k = max(0, min(len(sorted_values) - 1, int(round(q * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def parse_h2load(out: str, log_path: str) -> dict:
    """Requests/sec and counts from h2load's summary; p50/p99 from its per-request log
    (`--log-file`: start time, status, latency in microseconds, tab-separated)."""
    rps = re.search(r"^finished in [0-9.]+\w*, ([0-9.]+) req/s", out, re.M)
    codes = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out, re.M)
    reqs = re.search(
        r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
        r"(\d+) errored, (\d+) timeout",
        out,
        re.M,
    )
    if not (rps and codes and reqs):
        raise ValueError(f"unexpected h2load output:\n{out}")
    lat = []
    with open(log_path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3:
                lat.append(int(parts[2]) * 1e-6)
    lat.sort()
    return {
        "rps": float(rps.group(1)),
        "p99": _percentile(lat, 0.99),
        "p50": _percentile(lat, 0.50),
        "requests": int(reqs.group(3)),
        "non2xx": int(codes.group(3)) + int(codes.group(4)),
        "socket_errors": int(reqs.group(6)) + int(reqs.group(7)),
    }


# ---------------------------------------------------------------- servers


@dataclass
class Variant:
    """One server process: `cmd` prints `listening on 127.0.0.1:PORT` first."""

    name: str  # "without" or "with ..."
    cmd: list
    stop: str = "sigterm"  # or "c-quit": GET /stats, then /admin/quit
    env: dict = field(default_factory=dict)
    proc: Optional[subprocess.Popen] = None
    port: int = 0
    final_stats: Optional[dict] = None
    runs: list = field(default_factory=list)  # in turns, alone on its core
    together: list = field(default_factory=list)  # every variant loaded at once


@dataclass
class Group:
    """A server measured without guards (variants[0]) and with them (the others)."""

    key: str
    label: str
    variants: list
    path: str = "/"
    tool: str = "wrk"  # or "h2load"


def _pin(cpu: Optional[int]):
    if cpu is None:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def start(v: Variant, cpu: Optional[int]) -> None:
    env = dict(os.environ)
    env.update(v.env)
    v.proc = subprocess.Popen(
        v.cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_pin(cpu),
    )
    line: list = []

    def first_line() -> None:
        assert v.proc is not None and v.proc.stdout is not None
        line.append(v.proc.stdout.readline())

    t = threading.Thread(target=first_line, daemon=True)
    t.start()
    t.join(60)
    m = re.match(r"listening on 127\.0\.0\.1:(\d+)", line[0] if line else "")
    if not m:
        err = ""
        if v.proc.poll() is not None:
            err = v.proc.stderr.read() if v.proc.stderr else ""
        stop_all([v])
        raise RuntimeError(f"{' '.join(v.cmd)} did not start: {line!r} {err}")
    v.port = int(m.group(1))


def _get(port: int, path: str, timeout: float = 10.0) -> tuple:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def stop(v: Variant) -> None:
    p = v.proc
    if p is None or p.poll() is not None:
        return
    out = ""
    try:
        if v.stop == "c-quit":
            status, body = _get(v.port, "/stats")
            if status == 200:
                v.final_stats = json.loads(body)
            _get(v.port, "/admin/quit")
        else:
            p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=20)
    except Exception:  # noqa: BLE001 - never leave a server behind
        p.kill()
        out, _ = p.communicate()
    if v.stop != "c-quit":
        for line in reversed((out or "").splitlines()):
            if line.startswith("{"):
                try:
                    v.final_stats = json.loads(line)
                except ValueError:
                    pass
                break


def stop_all(variants: list) -> None:
    for v in variants:
        try:
            stop(v)
        finally:
            if v.proc is not None and v.proc.poll() is None:
                v.proc.kill()
                v.proc.wait()


def refused_by_door(v: Variant) -> Optional[int]:
    """The door's own refusal count, from the stats the server reported when stopped."""
    s = v.final_stats
    if not s:
        return None
    if "refused" in s:  # the C server's /stats
        return int(s["refused"])
    mw = s.get("middleware")
    return None if mw is None else int(mw.get("rejected", 0))


# ---------------------------------------------------------------- load


def cpu_ns(pid: int) -> int:
    """CPU time the process's threads have run, in ns (the first field of each thread's
    schedstat): time on a CPU, so time the machine gave to other processes is not in it."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return total


def load(group: Group, v: Variant, seconds: float, args, cpu: Optional[int]) -> dict:
    assert v.proc is not None
    before = cpu_ns(v.proc.pid)
    res = _load(group, v, seconds, args, cpu)
    used = cpu_ns(v.proc.pid) - before
    # the server's CPU time per request served: the cost, with the machine's other load
    # (time it was not running) left out
    res["cpu_us"] = used / 1e3 / res["requests"] if res["requests"] and before else float("nan")
    return res


def _load(group: Group, v: Variant, seconds: float, args, cpu: Optional[int]) -> dict:
    url = f"http://127.0.0.1:{v.port}{group.path}"
    if group.tool == "wrk":
        cmd = [args.wrk, "-t1", f"-c{args.connections}", f"-d{int(seconds)}s", "--latency", url]
        out = subprocess.run(
            cmd, capture_output=True, text=True, timeout=seconds + 60, preexec_fn=_pin(cpu)
        )
        if out.returncode != 0:
            raise RuntimeError(f"wrk failed: {out.stderr}")
        return parse_wrk(out.stdout)
    with tempfile.NamedTemporaryFile("r", suffix=".log") as log:
        streams = max(1, args.connections // args.h2_connections)
        cmd = [
            args.h2load, "-t1", f"-c{args.h2_connections}", f"-m{streams}", f"-D{int(seconds)}",
            "--log-file", log.name, url,
        ]
        out = subprocess.run(
            cmd, capture_output=True, text=True, timeout=seconds + 60, preexec_fn=_pin(cpu)
        )
        if out.returncode != 0:
            raise RuntimeError(f"h2load failed: {out.stdout}{out.stderr}")
        return parse_h2load(out.stdout, log.name)


def _progress(group: Group, v: Variant, r: int, how: str, res: dict) -> None:
    print(
        f"  {group.label:<34} {v.name:<16} {how:<8} round {r + 1}: {res['rps']:>9.0f} req/s, "
        f"p99 {res['p99'] * 1e3:7.2f} ms, cpu {res['cpu_us']:6.2f} us/req, non-2xx {res['non2xx']}",
        file=sys.stderr,
        flush=True,
    )


def measure(group: Group, args, server_cpu, load_cpu) -> None:
    for v in group.variants:
        start(v, server_cpu)
    try:
        for v in group.variants:
            if group.tool == "wrk":  # (http.client speaks HTTP/1.1 only)
                status, _ = _get(v.port, group.path)
                if status != 200:
                    raise RuntimeError(f"{group.label} {v.name}: GET {group.path} answered {status}")
            if args.warmup > 0:
                w = load(group, v, args.warmup, args, load_cpu)  # JIT, caches, pools
                if w["requests"] == 0 or w["non2xx"] == w["requests"]:
                    raise RuntimeError(f"{group.label} {v.name}: nothing served in the warm-up: {w}")
        for r in range(args.rounds):
            if args.mode in ("turns", "both"):
                order = group.variants if r % 2 == 0 else list(reversed(group.variants))
                for v in order:
                    res = load(group, v, args.duration, args, load_cpu)
                    res["round"] = r
                    v.runs.append(res)
                    _progress(group, v, r, "turns", res)
            if args.mode in ("together", "both"):
                # Every variant loaded at the same moment, the servers sharing one core and
                # the load tools another: whatever else the machine runs then hits all alike.
                results: dict = {}

                def one(v: Variant) -> None:
                    try:
                        results[v.name] = load(group, v, args.duration, args, load_cpu)
                    except Exception as e:  # noqa: BLE001 - reported below
                        results[v.name] = e

                threads = [threading.Thread(target=one, args=(v,)) for v in group.variants]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                for v in group.variants:
                    res = results[v.name]
                    if isinstance(res, Exception):
                        raise res
                    res["round"] = r
                    v.together.append(res)
                    _progress(group, v, r, "together", res)
    finally:
        stop_all(group.variants)


# ---------------------------------------------------------------- the table


def _spread(values: list, fmt) -> str:
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}–{fmt(max(values))})"


def rows(groups: list, how: str = "runs") -> list:
    out = []
    for g in groups:
        base = g.variants[0]
        for v in g.variants[1:]:
            a_runs, b_runs = getattr(base, how), getattr(v, how)
            if not a_runs:
                continue
            rps_ratio = [b["rps"] / a["rps"] for a, b in zip(a_runs, b_runs)]
            p99_ratio = [b["p99"] / a["p99"] for a, b in zip(a_runs, b_runs)]
            cpu_ratio = [b["cpu_us"] / a["cpu_us"] for a, b in zip(a_runs, b_runs)]
            rr, pr = statistics.median(rps_ratio), statistics.median(p99_ratio)
            cr = statistics.median(cpu_ratio)
            wrk_refused = sum(x["non2xx"] for x in b_runs)
            base_refused = sum(x["non2xx"] for x in a_runs)
            door = refused_by_door(v)
            served = sum(x["requests"] for x in b_runs)
            sock = sum(x["socket_errors"] for x in b_runs) + sum(x["socket_errors"] for x in a_runs)
            out.append(
                {
                    "server": g.label if v.name == "with" else f"{g.label} ({v.name[5:]})",
                    "tool": g.tool,
                    "rps_without": _spread([x["rps"] for x in a_runs], lambda x: f"{x:,.0f}"),
                    "rps_with": _spread([x["rps"] for x in b_runs], lambda x: f"{x:,.0f}"),
                    "rps_ratio": f"{rr:.3f} ({min(rps_ratio):.3f}–{max(rps_ratio):.3f})",
                    "p99_without": _spread([x["p99"] * 1e3 for x in a_runs], lambda x: f"{x:.2f}"),
                    "p99_with": _spread([x["p99"] * 1e3 for x in b_runs], lambda x: f"{x:.2f}"),
                    "p99_ratio": f"{pr:.3f} ({min(p99_ratio):.3f}–{max(p99_ratio):.3f})",
                    "refusals": f"{wrk_refused} of {served:,}"
                    + ("" if door is None else f"; door {door}")
                    + (f"; baseline {base_refused}" if base_refused else ""),
                    "cpu_without": _spread([x["cpu_us"] for x in a_runs], lambda x: f"{x:.1f}"),
                    "cpu_with": _spread([x["cpu_us"] for x in b_runs], lambda x: f"{x:.1f}"),
                    "cpu_ratio": f"{cr:.3f} ({min(cpu_ratio):.3f}–{max(cpu_ratio):.3f})",
                    "cpu_ratio_value": cr,
                    "socket_errors": sock,
                    "goal": "met"
                    if rr >= RPS_GOAL and pr <= P99_GOAL
                    else "missed: "
                    + ", ".join(
                        ([f"rps −{(1 - rr) * 100:.1f} %"] if rr < RPS_GOAL else [])
                        + ([f"p99 +{(pr - 1) * 100:.1f} %"] if pr > P99_GOAL else [])
                    ),
                    "rps_ratio_value": rr,
                    "p99_ratio_value": pr,
                }
            )
    return out


def _table(table: list) -> list:
    lines = [
        "| server | rps without | rps with | ratio | p99 without | p99 with | ratio | refusals | goal |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in table:
        lines.append(
            f"| {r['server']} | {r['rps_without']} | {r['rps_with']} | {r['rps_ratio']} | "
            f"{r['p99_without']} | {r['p99_with']} | {r['p99_ratio']} | {r['refusals']} | {r['goal']} |"
        )
    lines += [
        "",
        "| server | CPU µs/request without | with | ratio |",
        "|---|---:|---:|---:|",
    ]
    for r in table:
        lines.append(f"| {r['server']} | {r['cpu_without']} | {r['cpu_with']} | {r['cpu_ratio']} |")
    return lines


def markdown(turns: list, together: list, args) -> str:
    lines = [
        f"{args.rounds} rounds of {args.duration:g} s per side, {args.connections} concurrent "
        "requests (wrk -t1; h2load: "
        f"{args.h2_connections} connections × {max(1, args.connections // args.h2_connections)} "
        "streams); each figure is the median (min–max) over the rounds, each ratio the median "
        "of the rounds' own ratios (with ÷ without of the same round). p99 in ms. Refusals: "
        "responses the load tool counted as not 2xx/3xx, of the requests the guarded side "
        "served; door: the middleware's own refusal counter over the server's life. CPU "
        "µs/request: the server's own CPU time (every thread, from /proc/PID/task/*/schedstat) "
        "over the requests it served.",
        "",
    ]
    if turns:
        lines += [
            "**In turns** (A B, then B A, ...: each side alone on its core, saturated):",
            "",
        ] + _table(turns) + [""]
    if together:
        lines += [
            "**Together** (every side loaded at the same moment, the servers sharing one core "
            "and the load tools the other, so the machine's other load hits all alike; each "
            "server gets its share of the core, so the rps ratio is the inverse of the cost "
            "ratio):",
            "",
        ] + _table(together) + [""]
    errs = [r for r in turns + together if r["socket_errors"]]
    for r in errs:
        lines.append(f"Socket errors reported by the load tool for {r['server']}: {r['socket_errors']}.")
    return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------- main


def groups_for(args) -> list:
    node_server = os.path.join(HERE, "node_server.js")
    asgi_server = os.path.join(HERE, "asgi_server.py")
    node_env = {"GUARDS_NODE_DIR": args.node_dir} if args.node_dir else {}
    py_env = {"PYTHONPATH": args.pythonpath} if args.pythonpath else {}
    gs = []
    for key, label, fw in (
        ("express", "Express 5 (node)", "express"),
        ("fastify", "Fastify 5 (node)", "fastify"),
        ("http", "node:http", "http"),
    ):
        gs.append(
            Group(
                key,
                label,
                [
                    Variant("without", [args.node, node_server, fw, "none"], env=node_env),
                    Variant("with an empty middleware", [args.node, node_server, fw, "empty"], env=node_env),
                    Variant("with admission", [args.node, node_server, fw, "admission"], env=node_env),
                ],
            )
        )
    # The noise floor: the same server without guards on both sides (two processes).
    gs.append(
        Group(
            "http-aa",
            "node:http A/A (no guards either side)",
            [
                Variant("without", [args.node, node_server, "http", "none"], env=node_env),
                Variant("with", [args.node, node_server, "http", "none"], env=node_env),
            ],
        )
    )
    gs.append(
        Group(
            "uvicorn",
            "ASGI app under uvicorn (httptools, uvloop)",
            [
                Variant("without", [args.python, asgi_server, "none"], env=py_env),
                Variant("with an empty middleware", [args.python, asgi_server, "empty"], env=py_env),
                Variant("with admission", [args.python, asgi_server, "admission"], env=py_env),
            ],
        )
    )
    gs.append(
        Group(
            "uvicorn-h11",
            "ASGI app under uvicorn (h11, asyncio)",
            [
                Variant("without", [args.python, asgi_server, "none", "h11", "asyncio"], env=py_env),
                Variant("with an empty middleware", [args.python, asgi_server, "empty", "h11", "asyncio"], env=py_env),
                Variant("with admission", [args.python, asgi_server, "admission", "h11", "asyncio"], env=py_env),
            ],
        )
    )
    if args.c_server:
        c = [
            args.c_server, "--port", "0", "--threads", "64", "--backend-ms", "0",
            "--admission-limit", "4096", "--bulkhead", "4096",
        ]
        gs.append(
            Group(
                "c",
                "C guards-server",
                [
                    Variant("without", c + ["--guards", "none"], stop="c-quit"),
                    Variant("with admission", c + ["--guards", "admission"], stop="c-quit"),
                    Variant("with all guards", c + ["--guards", "all"], stop="c-quit"),
                ],
                path="/work",
            )
        )
    gs.append(
        Group(
            "fastify-h2",
            "Fastify 5 over HTTP/2 (h2load)",
            [
                Variant("without", [args.node, node_server, "fastify-h2", "none"], env=node_env),
                Variant("with an empty middleware", [args.node, node_server, "fastify-h2", "empty"], env=node_env),
                Variant("with admission", [args.node, node_server, "fastify-h2", "admission"], env=node_env),
            ],
            tool="h2load",
        )
    )
    if args.only:
        keep = set(args.only.split(","))
        unknown = keep - {g.key for g in gs}
        if unknown:
            raise SystemExit(f"--only: unknown {sorted(unknown)} (known: {[g.key for g in gs]})")
        gs = [g for g in gs if g.key in keep]
    return gs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5, help="seconds per run")
    ap.add_argument("--warmup", type=int, default=2, help="seconds of load before the rounds")
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--h2-connections", type=int, default=16, help="h2load: connections (streams: the rest)")
    ap.add_argument("--node", default="node")
    ap.add_argument("--node-dir", default=None, help="the node package (default: the repository's node/)")
    ap.add_argument("--python", default=sys.executable, help="a Python with guards and uvicorn")
    ap.add_argument("--pythonpath", default=None, help="extra PYTHONPATH for the ASGI server (httptools, uvloop)")
    ap.add_argument("--c-server", default=None, help="a guards-server binary (examples/c)")
    ap.add_argument("--wrk", default="wrk")
    ap.add_argument("--h2load", default="h2load")
    ap.add_argument("--only", default=None, help="comma-separated: express,fastify,http,http-aa,uvicorn,uvicorn-h11,c,fastify-h2")
    ap.add_argument("--mode", choices=("turns", "together", "both"), default="both",
                    help="turns: A B / B A, each alone; together: all sides loaded at once; both (default)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin the server and the load tool to different cores")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "bench-servers.md"))
    args = ap.parse_args()
    if args.rounds < 1 or args.duration <= 0:
        raise SystemExit("--rounds >= 1 and --duration > 0")
    for tool in (args.wrk, args.h2load):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found (make bench-servers installs it)")
    cpus = sorted(os.sched_getaffinity(0))
    server_cpu, load_cpu = (cpus[0], cpus[1]) if len(cpus) >= 2 and not args.no_pin else (None, None)
    groups = groups_for(args)
    print(
        f"bench-servers: {len(groups)} servers, {args.rounds} x {args.duration:g} s per side, "
        f"server on cpu {server_cpu}, load tool on cpu {load_cpu}",
        file=sys.stderr,
    )
    started = time.time()
    for g in groups:
        measure(g, args, server_cpu, load_cpu)
    table = rows(groups, "runs")
    together = rows(groups, "together")
    md = markdown(table, together, args)
    print(md)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(md)
    raw = {
        g.key: {
            v.name: {"cmd": [os.path.basename(c) if os.path.isabs(c) else c for c in v.cmd],
                     "turns": v.runs, "together": v.together, "stats": v.final_stats}
            for v in g.variants
        }
        for g in groups
    }
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump({"args": {k: getattr(args, k) for k in ("rounds", "duration", "warmup", "connections")},
                   "servers": raw, "turns": table, "together": together}, f, indent=1)
    print(f"bench-servers: {time.time() - started:.0f} s; written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
