"""The live testbed's apps (docs/live.md): open-loop Poisson callers on raw asyncio.

Every entry of the topology is an independent Poisson stream at its rate from the run's
start (``t0_ns``) for ``duration`` seconds; each arrival is one action that runs its own
attempts as the app edge's policy says (attempts, per-attempt timeout, which answers are
retried, backoff with its jitter, the deadline sent). An attempt that times out closes its
connection (the shop-api then cancels it if its app edge has ``cancel``).

Every action ends in exactly one outcome: ``full``, ``degraded``, ``refused`` (with the
``x-refused-by`` of the last answer), ``timeout`` (the last attempt got no answer in
time), ``error`` or, with several caller processes, ``caller_died`` (the last attempt went
to a caller process that had died: its connection reset, or refused once the process was
gone). The output JSON has the totals, the per-second series (by the second
in which each action ended, and attempts/retries by the second they were sent), and
``lateness``: how far behind its schedule the generator sent (the run is invalid if it
fell behind). ``sent`` must equal the sum of the outcomes; actions still running when
the generator stops waiting are counted as ``lost``.

The generator's own memory does not grow with the run's length (the soak checks its RSS
like every other process's): the per-second series is a ``counts.PerSecond`` table, and
the lateness a histogram of fixed bins, not a list of samples.

With several caller processes (``ports`` in the plan, ``run.py --caller-procs N``) each
attempt goes to the next live one in turn (round-robin). An attempt that ends in a
connection error is checked with one fresh connect to its port: refused means the process
is gone, and from then on no attempt is sent to it; every attempt that ended that way is
recorded (``died``: when it was sent and when it ended) and the action goes on by its
retry policy (``retry_connection_errors``) with the next live caller.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import collections
import json
import random
import sys
import time
from typing import Any, Optional

import aio
from counts import PerSecond

NS = 1_000_000_000
OUTCOMES = ("full", "degraded", "refused", "timeout", "error", "caller_died")


class Lateness:
    """How late each arrival was sent, as a histogram of ``bin_s`` bins up to ``top_s``
    (later ones in one overflow bin) plus the exact maximum. The p99 is the upper edge of
    its bin: at most ``bin_s`` above the exact figure."""

    def __init__(self, bin_s: float = 1e-4, top_s: float = 2.0) -> None:
        self.bin_s = bin_s
        self.bins = array.array("q", bytes(8 * (int(top_s / bin_s) + 1)))
        self.n = 0
        self.max_s = 0.0

    def add(self, late_s: float) -> None:
        i = min(len(self.bins) - 1, max(0, int(late_s / self.bin_s)))
        self.bins[i] += 1
        self.n += 1
        self.max_s = max(self.max_s, late_s)

    def quantile(self, q: float) -> float:
        if not self.n:
            return 0.0
        rank = int(q * (self.n - 1))
        seen = 0
        for i, c in enumerate(self.bins):
            seen += c
            if seen > rank:
                return self.max_s if i == len(self.bins) - 1 else min(self.max_s, (i + 1) * self.bin_s)
        return self.max_s


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
    """One attempt: ("answer", status, headers), ("timeout", 0, {}) or ("error", 0, {})
    (with ``{"refused": "1"}`` when the connect itself was refused)."""
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
    except ConnectionRefusedError:
        return "error", 0, {"refused": "1"}
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, IndexError):
        if conn is not None:
            conn[1].close()
        return "error", 0, {}


async def refuses(port: int) -> bool:
    """Whether a fresh connect to ``port`` is refused (nothing listens there any more)."""
    try:
        async with asyncio.timeout(2.0):
            _, w = await asyncio.open_connection("127.0.0.1", port)
    except ConnectionRefusedError:
        return True
    except (OSError, TimeoutError):
        return False
    w.close()
    return False


class Gen:
    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan
        self.t0 = int(plan["t0_ns"])
        ports = [int(p) for p in plan.get("ports") or [plan["port"]]]
        self.pools = [Pool(p) for p in ports]
        self.alive = list(range(len(ports)))  # indices of the callers attempts go to
        self.turn = 0
        self.dead: dict[int, float] = {}  # caller index -> when it was found gone (s since t0)
        self.died: list[dict[str, Any]] = []  # attempts that ended with a dead caller
        self.rng = random.Random(int(plan.get("seed", 1)))
        self.sent = collections.Counter()
        self.outcomes: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.reasons: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        seconds = int(float(plan["duration"]) + float(plan.get("grace_s", 30))) + 5
        self.series = PerSecond(seconds)
        self.lateness = Lateness()
        self.running = 0

    def sec(self) -> int:
        return (time.monotonic_ns() - self.t0) // NS

    def now_s(self) -> float:
        return (time.monotonic_ns() - self.t0) / NS

    def pick(self) -> int:
        """The caller the next attempt goes to: the next live one in turn."""
        i = self.alive[self.turn % len(self.alive)]
        self.turn += 1
        return i

    async def caller_gone(self, i: int, refused: bool) -> bool:
        """After a connection error from caller ``i``: whether it is gone (and, the first
        time, stop sending to it). Only with several callers: one caller is never dropped."""
        if len(self.pools) == 1:
            return False
        if i in self.dead:
            return True
        if not refused and not await refuses(self.pools[i].port):
            return False
        if i not in self.dead:
            self.dead[i] = self.now_s()
            if i in self.alive and len(self.alive) > 1:
                self.alive.remove(i)
            self.pools[i].close()
        return True

    async def action(self, entry: dict[str, Any]) -> None:
        name = entry["name"]
        pol = entry["policy"]
        retry = pol["retry"]
        self.running += 1
        outcome, why = "error", ""
        try:
            for attempt in range(int(retry["max_attempts"])):
                if attempt > 0:
                    self.series.add(self.sec(), f"{name}.retries")
                self.series.add(self.sec(), f"{name}.attempts")
                dl = None
                if pol["deadline"] != "none":
                    dl = max(1, int(pol["attempt_timeout"] * 1000))
                ci = self.pick()
                sent_at = self.now_s()
                kind, status, hdrs = await exchange(self.pools[ci], entry["path"], pol["attempt_timeout"], dl)
                if kind == "error" and await self.caller_gone(ci, bool(hdrs.get("refused"))):
                    kind = "died"
                    self.died.append({"entry": name, "caller": ci, "sent_s": sent_at, "ended_s": self.now_s(),
                                      "refused": bool(hdrs.get("refused"))})
                    self.series.add(self.sec(), f"{name}.caller_died_attempts")
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
                elif kind == "died":
                    outcome, why = "caller_died", f"caller-{ci}"
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
            self.series.add(self.sec(), f"{name}.{outcome}")
            if outcome == "refused":
                self.series.add(self.sec(), f"{name}.refused.{why}")
            if outcome == "degraded":
                self.series.add(self.sec(), f"{name}.degraded.{why}")

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
            self.lateness.add((time.monotonic_ns() - t) / NS)
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
        for p in self.pools:
            p.close()
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
            "lateness_p99_s": self.lateness.quantile(0.99),
            "lateness_max_s": self.lateness.max_s,
            "series": self.series.as_dict(),
            **({"callers": len(self.pools), "dead_callers": {str(k): v for k, v in self.dead.items()},
                "died_attempts": self.died} if len(self.pools) > 1 else {}),
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
    sys.exit(aio.run(main()))
