"""Does a guarded async call leave memory behind? Rounds of guarded calls through
``guards.httpx.AsyncGuardedTransport`` (retry policy, token-bucket budget, keyed breakers,
grpc deadline header) inside a ``guards.Bulkhead``, against an in-process
``httpx.MockTransport`` that answers 503 to one path in seven; the RSS after each round
(after a full collection).

    .venv/bin/python python/bench/rss_soak.py [CALLS_PER_ROUND] [ROUNDS]

A binding that leaked per call would grow by the same amount every round; allocator
warm-up shows in the first rounds only. docs/live.md has a measured run.
"""

from __future__ import annotations

import asyncio
import gc
import sys

import httpx

import guards
from guards.httpx import AsyncGuardedTransport


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


async def main(calls: int, rounds: int) -> None:
    def answer(req: httpx.Request) -> httpx.Response:
        return httpx.Response(503 if req.url.path == "/p0" else 200)

    bulkhead = guards.Bulkhead(max_concurrent=64)
    transport = AsyncGuardedTransport(
        httpx.MockTransport(answer),
        max_attempts=2,
        budget=guards.RetryBudget.token_bucket(),
        breakers=guards.KeyedBreakers(slots=1),
        attempt_timeout=0.5,
        deadline_header="grpc",
    )
    marks = []
    async with httpx.AsyncClient(transport=transport, timeout=None) as client:
        for rnd in range(rounds):
            for i in range(calls):
                with guards.guarded(bulkhead):
                    try:
                        await client.get(f"http://dependency/p{i % 7}")
                    except guards.GuardError:
                        pass
            gc.collect()
            marks.append(rss_kib())
            print(f"round {rnd + 1:>3}: {calls * (rnd + 1):>8} calls, RSS {marks[-1]} KiB", flush=True)
    half = len(marks) // 2
    print(f"RSS over the second half of the rounds: {marks[half]} -> {marks[-1]} KiB "
          f"({marks[-1] - marks[half]:+d} KiB over {calls * (len(marks) - 1 - half)} calls)")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    r = int(sys.argv[2]) if len(sys.argv) > 2 else 14
    if n < 1 or r < 2:
        raise SystemExit("CALLS_PER_ROUND must be >= 1 and ROUNDS >= 2")
    asyncio.run(main(n, r))
