"""Instructions per guarded no-op call, counted by callgrind: a measure load does not disturb.

Each contender runs twice under ``valgrind --tool=callgrind``: a loop of ``--calls`` calls
and a loop of none; the difference divided by the calls is its cost per call, import and
start-up cancelling out. Printed beside the bare call, a do-nothing Python wrapper (the
floor of any guard written in Python) and the peers, with the ratios. Clock reads are
undercounted (under valgrind they are system calls), which flatters guards' breaker.

    python python/bench/count_instructions.py            # about 5 minutes
    python python/bench/count_instructions.py --calls 20000

Needs valgrind, and pybreaker and aiobreaker (``pip install './python[bench]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
from typing import Any, Callable

SYNC = ["bare", "floor", "bulkhead", "breaker", "pybreaker", "ubreaker"]
ASYNC = ["abare", "afloor", "abulkhead", "abreaker", "aiobreaker", "aubreaker"]


def contender(name: str) -> Callable[[], Any]:
    import aiobreaker
    import pybreaker

    import guards

    # The largest slow-call duration: no call is ever slow, so none is timed.
    untimed = guards.Nanos(2**64 - 1)

    def noop() -> int:
        return 1

    async def anoop() -> int:
        return 1

    def w(*a: Any, **k: Any) -> int:
        return noop(*a, **k)

    async def aw(*a: Any, **k: Any) -> int:
        return await anoop(*a, **k)

    return {
        "bare": lambda: noop,
        "floor": lambda: w,
        "bulkhead": lambda: guards.guarded(guards.Bulkhead(64))(noop),
        "breaker": lambda: guards.guarded(guards.CircuitBreaker())(noop),
        "pybreaker": lambda: pybreaker.CircuitBreaker()(noop),
        "ubreaker": lambda: guards.guarded(guards.CircuitBreaker(slow_call_duration=untimed))(noop),
        "abare": lambda: anoop,
        "afloor": lambda: aw,
        "abulkhead": lambda: guards.guarded(guards.Bulkhead(64))(anoop),
        "abreaker": lambda: guards.guarded(guards.CircuitBreaker())(anoop),
        "aiobreaker": lambda: aiobreaker.CircuitBreaker()(anoop),
        "aubreaker": lambda: guards.guarded(guards.CircuitBreaker(slow_call_duration=untimed))(anoop),
    }[name]()


def loop(name: str, calls: int) -> None:
    """The measured loop (run under valgrind by ``count``)."""
    f = contender(name)
    if name in SYNC:
        for _ in range(1000 + calls):
            f()
        return

    async def run() -> None:
        for _ in range(1000 + calls):
            await f()

    asyncio.new_event_loop().run_until_complete(run())


def count(name: str, calls: int) -> float:
    """Instructions per call of ``name``."""
    totals = []
    for n in (0, calls):
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
             sys.executable, __file__, "--loop", name, str(n)],
            capture_output=True, text=True, check=True,
        ).stderr  # fmt: skip
        m = re.search(r"Collected : ([\d,]+)", out)
        if m is None:
            raise RuntimeError(f"no callgrind total for {name}: {out[-500:]}")
        totals.append(int(m.group(1).replace(",", "")))
    return (totals[1] - totals[0]) / calls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--loop", nargs=2, metavar=("NAME", "CALLS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.loop:
        loop(args.loop[0], int(args.loop[1]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed", file=sys.stderr)
        return 1
    for title, names in (("sync", SYNC), ("asyncio", ASYNC)):
        ir = {n: count(n, args.calls) for n in names}
        bare, floor, peer = ir[names[0]], ir[names[1]] - ir[names[0]], ir[names[4]] - ir[names[0]]
        print(f"\n{title}: instructions per call (bare call: {bare:.0f})")
        for n in names[1:]:
            print(f"  {n:12} +{ir[n] - bare:8.0f}")
        ours = ir[names[3]] - bare
        print(f"  {names[4]} / guards breaker: {peer / ours:.1f}x; {names[4]} / do-nothing wrapper: {peer / floor:.1f}x")
        untimed = ir[names[5]] - bare
        print(f"  guards breaker / do-nothing wrapper: {ours / floor:.2f}x timed, {untimed / floor:.2f}x untimed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
