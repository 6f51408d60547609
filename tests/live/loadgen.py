"""The live testbed's apps (docs/live.md): open-loop Poisson callers on raw asyncio.

Every entry of the topology is an independent Poisson stream at its rate from the run's
start (``t0_ns``) for ``duration`` seconds; each arrival is one action that runs its own
attempts as the app edge's policy says (attempts, per-attempt timeout, which answers are
retried, backoff with its jitter, the deadline sent). An attempt that times out closes its
connection (the shop-api then cancels it if its app edge has ``cancel``).

Every action ends in exactly one outcome: ``full``, ``degraded``, ``refused`` (with the
``x-refused-by`` of the last answer), ``timeout`` (the last attempt got no answer in
time) or ``error``. The output JSON has the totals, the per-second series (by the second
in which each action ended, and attempts/retries by the second they were sent), and
``lateness``: how far behind its schedule the generator sent (the run is invalid if it
fell behind). ``sent`` must equal the sum of the outcomes; actions still running when
the generator stops waiting are counted as ``lost``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import sys
import time
from typing import Any, Optional

NS = 1_000_000_000
OUTCOMES = ("full", "degraded", "refused", "timeout", "error")


class Pool:
    """Idle keep-alive connections to the shop-api."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def get(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        while self.idle:
            r, w = self.idle.pop()
            if not w.is_closing() and not r.at_eof():
                return r, w
            w.close()
        return await asyncio.open_connection("127.0.0.1", self.port, limit=65536)

    def put(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
        self.idle.append(conn)

    def close(self) -> None:
        for _, w in self.idle:
            w.close()
        self.idle.clear()


async def exchange(pool: Pool, path: str, timeout: float, deadline_ms: Optional[int]) -> tuple[str, int, dict[str, str]]:
    """One attempt: ("answer", status, headers), ("timeout", 0, {}) or ("error", 0, {})."""
    conn = None
    try:
        async with asyncio.timeout(timeout):
            conn = await pool.get()
            r, w = conn
            dl = f"grpc-timeout: {deadline_ms}m\r\n" if deadline_ms is not None else ""
            w.write(f"GET /{path} HTTP/1.1\r\nHost: shop-api\r\n{dl}\r\n".encode())
            head = await r.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ")[1])
            hdrs = {}
            for ln in lines[1:]:
                k, sep, v = ln.partition(":")
                if sep:
                    hdrs[k.strip().lower()] = v.strip()
            n = int(hdrs.get("content-length", "0"))
            if n:
                await r.readexactly(n)
            if hdrs.get("connection", "").lower() == "close":
                w.close()
            else:
                pool.put(conn)
            return "answer", status, hdrs
    except TimeoutError:
        if conn is not None:
            conn[1].close()  # the app gives up on this attempt: its connection goes
        return "timeout", 0, {}
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, IndexError):
        if conn is not None:
            conn[1].close()
        return "error", 0, {}


class Gen:
    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan
        self.t0 = int(plan["t0_ns"])
        self.pool = Pool(int(plan["port"]))
        self.rng = random.Random(int(plan.get("seed", 1)))
        self.sent = collections.Counter()
        self.outcomes: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.reasons: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.series: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.lateness: list[float] = []
        self.running = 0

    def sec(self) -> int:
        return (time.monotonic_ns() - self.t0) // NS

    async def action(self, entry: dict[str, Any]) -> None:
        name = entry["name"]
        pol = entry["policy"]
        retry = pol["retry"]
        self.running += 1
        outcome, why = "error", ""
        try:
            for attempt in range(int(retry["max_attempts"])):
                if attempt > 0:
                    self.series[self.sec()][f"{name}.retries"] += 1
                self.series[self.sec()][f"{name}.attempts"] += 1
                dl = None
                if pol["deadline"] != "none":
                    dl = max(1, int(pol["attempt_timeout"] * 1000))
                kind, status, hdrs = await exchange(self.pool, entry["path"], pol["attempt_timeout"], dl)
                last = attempt + 1 >= int(retry["max_attempts"])
                if kind == "answer" and status == 200:
                    outcome = "degraded" if hdrs.get("x-outcome") == "degraded" else "full"
                    why = hdrs.get("x-refused-by", "") if outcome == "degraded" else ""
                    break
                if kind == "timeout":
                    outcome, why = "timeout", "app-timeout"
                    again = retry["retry_timeouts"]
                elif kind == "error":
                    outcome, why = "error", "connection"
                    again = retry["retry_connection_errors"]
                else:
                    why = hdrs.get("x-refused-by", f"status-{status}")
                    outcome = "refused" if status in (429, 503) or "x-refused-by" in hdrs else "error"
                    if status in (429, 503):
                        again = bool(pol["overloaded_is_transient"]) and retry["retry_other_transient"]
                    else:
                        again = retry["retry_other_transient"]
                if last or not again:
                    break
                b = retry["backoff"]
                wait = min(b["cap"], b["base"] * b["multiplier"] ** (attempt))
                if b["jitter"] == "full":
                    wait = self.rng.uniform(0, wait)
                await asyncio.sleep(wait)
        finally:
            self.running -= 1
            self.outcomes[name][outcome] += 1
            if why:
                self.reasons[name][f"{outcome}:{why}"] += 1
            self.series[self.sec()][f"{name}.{outcome}"] += 1
            if outcome == "refused":
                self.series[self.sec()][f"{name}.refused.{why}"] += 1
            if outcome == "degraded":
                self.series[self.sec()][f"{name}.degraded.{why}"] += 1

    async def stream(self, entry: dict[str, Any], end: int, tasks: set[asyncio.Task[None]]) -> None:
        rate = float(entry["rate"])
        rng = random.Random(self.rng.random())
        t = self.t0
        while rate > 0:
            t += int(rng.expovariate(rate) * NS)
            if t >= end:
                break
            now = time.monotonic_ns()
            if t > now:
                await asyncio.sleep((t - now) / NS)
            self.lateness.append((time.monotonic_ns() - t) / NS)
            self.sent[entry["name"]] += 1
            task = asyncio.ensure_future(self.action(entry))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    async def run(self) -> dict[str, Any]:
        end = self.t0 + int(float(self.plan["duration"]) * NS)
        now = time.monotonic_ns()
        if self.t0 > now:
            await asyncio.sleep((self.t0 - now) / NS)
        tasks: set[asyncio.Task[None]] = set()
        await asyncio.gather(*(self.stream(e, end, tasks) for e in self.plan["entries"]))
        # Every action ends by itself within its attempts, timeouts and backoff.
        grace = float(self.plan.get("grace_s", 30))
        if tasks:
            await asyncio.wait(set(tasks), timeout=grace)
        lost = len(tasks)
        for t in list(tasks):
            t.cancel()
        self.pool.close()
        lat = sorted(self.lateness)
        sent = sum(self.sent.values())
        ended = sum(sum(c.values()) for c in self.outcomes.values())
        return {
            "sent": dict(self.sent),
            "sent_total": sent,
            "outcomes": {k: dict(v) for k, v in self.outcomes.items()},
            "reasons": {k: dict(v) for k, v in self.reasons.items()},
            "ended_total": ended,
            "lost": lost,
            "accounted": lost == 0 and sent == ended,
            "lateness_p99_s": lat[int(0.99 * (len(lat) - 1))] if lat else 0.0,
            "lateness_max_s": lat[-1] if lat else 0.0,
            "series": {str(k): dict(v) for k, v in sorted(self.series.items())},
        }


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plan", required=True, help="JSON: port, t0_ns, duration, entries")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    with open(a.plan) as f:
        plan = json.load(f)
    result = await Gen(plan).run()
    with open(a.out, "w") as f:
        json.dump(result, f)
    print(f"live-loadgen: sent {result['sent_total']}, ended {result['ended_total']}, "
          f"lost {result['lost']}", file=sys.stderr)
    return 0 if result["accounted"] else 4


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
