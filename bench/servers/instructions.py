#!/usr/bin/env python3
"""Instructions per request inside the real servers of bench/servers/run.py, counted under
valgrind (`make bench-servers-instructions`): the one figure of a server's cost that the
machine's other load cannot move.

Each variant (the server without guards, with an empty middleware, with admission) is
started twice under ``valgrind --tool=cachegrind --cache-sim=no``; the first process
serves ``--requests`` requests, the second three times as many, both after the same
warm-up, sent by ``h2load --h1`` over 4 connections. The instructions the server ran (every
thread) in the second minus those in the first, over the extra requests, is the cost of one
request: start-up, warm-up and shutdown cancel out. The ratio with ÷ without is what the
guards' middleware adds to each request's work; at saturation on one core, requests per
second fall by the same factor.

    python3 bench/servers/instructions.py --python .venv/bin/python --c-server PATH
        [--only uvicorn,c] [--requests 2000] [--out target/bench-servers-instructions.md]

Node servers are left out by default (V8 under valgrind takes minutes to start and its JIT
needs ``--smc-check=all``); ``--only express`` runs them anyway.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run as bench  # noqa: E402  (the servers and their variants)

DEFAULT_ONLY = "uvicorn,uvicorn-h11,c"
NODE_KEYS = {"express", "fastify", "http", "http-aa", "fastify-h2"}


def total_instructions(path: str) -> int:
    """The `summary:` of a cachegrind output file (events: Ir)."""
    with open(path) as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError(f"no summary in {path}")


def load(h2load: str, port: int, path: str, n: int) -> int:
    """Send `n` requests with h2load over HTTP/1.1; the number that succeeded."""
    out = subprocess.run(
        [h2load, "--h1", "-n", str(n), "-c", "4", "-m", "1", f"http://127.0.0.1:{port}{path}"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    m = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out)
    if not m:
        raise RuntimeError(f"h2load said: {out}")
    return int(m.group(1))


def ready(port: int, path: str, tries: int = 600) -> None:
    """Wait until the server answers (under valgrind it prints its port before it serves)."""
    for _ in range(tries):
        try:
            if bench._get(port, path, timeout=5.0)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"no answer on port {port}")


def one_process(v: bench.Variant, g: bench.Group, n: int, warmup: int, args, tmp: str) -> tuple:
    """(instructions, requests served) of one server process serving warmup + n requests."""
    out = os.path.join(tmp, f"cg.{os.getpid()}.{time.monotonic_ns()}")
    vg = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}"]
    if g.key in NODE_KEYS:
        vg.append("--smc-check=all")
    w = bench.Variant(v.name, vg + v.cmd, stop=v.stop, env=v.env)
    bench.start(w, None)
    try:
        ready(w.port, g.path)
        served = load(args.h2load, w.port, g.path, warmup)
        served += load(args.h2load, w.port, g.path, n)
    finally:
        bench.stop_all([w])
    if served != warmup + n:
        raise RuntimeError(f"{g.label} {v.name}: {served} of {warmup + n} requests succeeded")
    return total_instructions(out), served


def per_request(v: bench.Variant, g: bench.Group, args, tmp: str) -> float:
    small, n_small = one_process(v, g, args.requests, args.warmup, args, tmp)
    large, n_large = one_process(v, g, 3 * args.requests, args.warmup, args, tmp)
    return (large - small) / (n_large - n_small)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--node", default="node")
    ap.add_argument("--node-dir", default=None)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--pythonpath", default=None)
    ap.add_argument("--c-server", default=None)
    ap.add_argument("--h2load", default="h2load")
    ap.add_argument("--only", default=DEFAULT_ONLY)
    ap.add_argument("--out", default=os.path.join(bench.ROOT, "target", "bench-servers-instructions.md"))
    args = ap.parse_args()
    if args.requests < 1 or args.warmup < 0:
        raise SystemExit("--requests >= 1 and --warmup >= 0")
    for tool in ("valgrind", args.h2load):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found (make bench-servers-instructions installs it)")
    groups = bench.groups_for(args)
    started = time.time()
    lines = [
        f"Instructions per request (cachegrind; ({3 * args.requests} − {args.requests}) requests "
        f"after {args.warmup} of warm-up, h2load --h1 over 4 connections; every thread of the server):",
        "",
        "| server | variant | instructions / request | ratio to without | added |",
        "|---|---|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for g in groups:
            base = None
            for v in g.variants:
                ir = per_request(v, g, args, tmp)
                if base is None:
                    base = ir
                    lines.append(f"| {g.label} | {v.name} | {ir:,.0f} | 1.000 | |")
                else:
                    lines.append(f"| {g.label} | {v.name} | {ir:,.0f} | {ir / base:.3f} | {ir - base:+,.0f} |")
                print(lines[-1], file=sys.stderr, flush=True)
    md = "\n".join(lines) + "\n"
    print(md)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(md)
    print(f"instructions: {time.time() - started:.0f} s; written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
