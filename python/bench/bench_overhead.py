"""Overhead of a guarded no-op call: guards beside pybreaker, tenacity and aiobreaker.

Every contender wraps the same no-op function (sync) or coroutine (async); the script
times calls through each wrapper in one process, in one run, subtracts the cost of
calling the bare no-op, and prints the overhead in nanoseconds per call and the ratio of
each peer's overhead to guards'. The goal is at least 10x less overhead.

Timing runs are interleaved (each round times every contender once; the best round of
each is kept), so that a burst of load from elsewhere on the machine lands on every
contender alike instead of on whichever was being timed.

    python python/bench/bench_overhead.py            # about 30 s
    python python/bench/bench_overhead.py --quick    # a few seconds, noisier

Peers that are not installed are skipped (``pip install pybreaker tenacity aiobreaker``).
Build guards in release mode first (``pip install ./python`` does); a debug build from
``maturin develop`` is several times slower.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import platform
import sys
import threading
import time
import timeit
from collections.abc import Callable
from typing import Any, Optional

import guards



# The largest slow-call duration: no call is ever slow, so no call is timed.
UNTIMED = guards.Nanos(2**64 - 1)

def noop() -> int:
    return 1


async def anoop() -> int:
    return 1


# ------------------------------------------------------------------ contenders


def sync_contenders() -> dict[str, tuple[str, Callable[[], Any]]]:
    """name -> (group, zero-argument callable making one guarded call)."""
    out: dict[str, tuple[str, Callable[[], Any]]] = {}
    out["bare call"] = ("baseline", noop)

    def wrapper(*args: Any, **kwargs: Any) -> int:
        return noop(*args, **kwargs)

    out["floor: def w(*a, **k): return f(*a, **k)"] = ("floor", wrapper)

    breaker = guards.CircuitBreaker()
    out["guards @guarded(CircuitBreaker)"] = ("breaker", guards.guarded(breaker)(noop))
    gb = guards.guarded(guards.CircuitBreaker())

    def with_breaker() -> int:
        with gb:
            return noop()

    out["guards with guarded(CircuitBreaker)"] = ("breaker", with_breaker)
    # No slow-call timing, as pybreaker's breaker: with the lazy clock a closed breaker of
    # this kind reads no clock on a success.
    out["guards @guarded(CircuitBreaker, untimed)"] = (
        "breaker",
        guards.guarded(guards.CircuitBreaker(slow_call_duration=UNTIMED))(noop),
    )
    try:
        import pybreaker

        out["pybreaker @CircuitBreaker"] = ("breaker", pybreaker.CircuitBreaker()(noop))
    except ImportError:
        pass

    out["guards @retry"] = ("retry", guards.retry(noop))
    try:
        import tenacity

        out["tenacity @retry(stop_after_attempt(3))"] = (
            "retry",
            tenacity.retry(stop=tenacity.stop_after_attempt(3))(noop),
        )
    except ImportError:
        pass

    bulkhead = guards.Bulkhead(max_concurrent=64)
    out["guards @guarded(Bulkhead)"] = ("bulkhead", guards.guarded(bulkhead)(noop))
    bh2 = guards.Bulkhead(max_concurrent=64)

    def with_permit() -> int:
        with bh2.acquire():
            return noop()

    out["guards with Bulkhead.acquire()"] = ("bulkhead", with_permit)
    sem = threading.BoundedSemaphore(64)

    def semaphore() -> int:
        if not sem.acquire(blocking=False):
            raise RuntimeError("full")
        try:
            return noop()
        finally:
            sem.release()

    out["threading.BoundedSemaphore (hand-rolled bulkhead)"] = ("bulkhead", semaphore)
    return out


def async_contenders() -> dict[str, tuple[str, Callable[[], Any]]]:
    out: dict[str, tuple[str, Callable[[], Any]]] = {}
    out["bare await"] = ("baseline", anoop)

    async def awrapper(*args: Any, **kwargs: Any) -> int:
        return await anoop(*args, **kwargs)

    out["floor: async def w(*a, **k): return await f(*a, **k)"] = ("floor", awrapper)
    out["guards @guarded(CircuitBreaker) async"] = (
        "breaker",
        guards.guarded(guards.CircuitBreaker())(anoop),
    )
    out["guards @guarded(CircuitBreaker, untimed) async"] = (
        "breaker",
        guards.guarded(guards.CircuitBreaker(slow_call_duration=UNTIMED))(anoop),
    )
    try:
        import aiobreaker

        out["aiobreaker @CircuitBreaker"] = ("breaker", aiobreaker.CircuitBreaker()(anoop))
    except ImportError:
        pass
    out["guards @retry async"] = ("retry", guards.retry(anoop))
    try:
        import tenacity

        out["tenacity @retry async"] = (
            "retry",
            tenacity.retry(stop=tenacity.stop_after_attempt(3))(anoop),
        )
    except ImportError:
        pass
    out["guards @guarded(Bulkhead) async"] = (
        "bulkhead",
        guards.guarded(guards.Bulkhead(max_concurrent=64))(anoop),
    )
    return out


# ------------------------------------------------------------------ timing


def time_sync(fn: Callable[[], Any], number: int) -> float:
    """ns per call over one run of ``number`` calls."""
    gc.collect()
    return timeit.timeit(fn, number=number) / number * 1e9


def time_async(runner: asyncio.AbstractEventLoop, fn: Callable[[], Any], number: int) -> float:
    async def loop() -> None:
        for _ in range(number):
            await fn()

    gc.collect()
    t0 = time.perf_counter_ns()
    runner.run_until_complete(loop())
    return (time.perf_counter_ns() - t0) / number


def best_of_rounds(
    contenders: dict[str, tuple[str, Callable[[], Any]]],
    timer: Callable[[Callable[[], Any]], float],
    repeat: int,
) -> dict[str, tuple[str, float]]:
    """Best ns per call of each contender over ``repeat`` interleaved rounds."""
    best = {name: float("inf") for name in contenders}
    for _ in range(repeat):
        for name, (_group, fn) in contenders.items():
            best[name] = min(best[name], timer(fn))
    return {name: (group, best[name]) for name, (group, _fn) in contenders.items()}


def report(
    title: str, results: dict[str, tuple[str, float]]
) -> list[tuple[str, str, float, Optional[float]]]:
    base = next(ns for name, (group, ns) in results.items() if group == "baseline")
    print(f"\n{title}  (bare call: {base:.0f} ns)")
    print(f"  {'contender':52} {'ns/call':>9} {'overhead':>9}  ratio to guards")
    rows = []
    by_group: dict[str, float] = {}
    for name, (group, ns) in results.items():
        if group == "baseline":
            continue
        overhead = max(ns - base, 1.0)
        if name.startswith("guards") and group not in by_group:
            by_group[group] = overhead
        ours = by_group.get(group)
        ratio = None if name.startswith("guards") or ours is None else overhead / ours
        rows.append((group, name, overhead, ratio))
        shown = "" if ratio is None else f"{ratio:6.1f}x more than guards"
        print(f"  {name:52} {ns:9.0f} {overhead:9.0f}  {shown}")
    return rows


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer calls (noisier)")
    ap.add_argument("--number", type=int, default=None, help="calls per timing run")
    ap.add_argument("--repeat", type=int, default=None, help="timing runs (best is kept)")
    args = ap.parse_args(argv)
    number = args.number or (5_000 if args.quick else 50_000)
    repeat = args.repeat or (3 if args.quick else 7)

    print(
        f"guards {guards.__version__}, Python {platform.python_version()} "
        f"({sys.implementation.name}), "
        f"{platform.machine()}; best of {repeat} x {number} calls"
    )
    sync = best_of_rounds(sync_contenders(), lambda fn: time_sync(fn, number), repeat)
    runner = asyncio.new_event_loop()
    try:
        asyn = best_of_rounds(
            async_contenders(), lambda fn: time_async(runner, fn, number), repeat
        )
    finally:
        runner.close()
    report_rows_sync = report("sync", sync)
    rows = report_rows_sync + report("asyncio", asyn)

    print("\nratios (peer overhead / guards overhead; goals: sync breaker >= 20x, others >= 10x):")
    for group, name, _overhead, ratio in rows:
        if ratio is not None:
            print(f"  {group:9} {name:52} {ratio:6.1f}x")
    # The floor: a Python-level wrapper that only passes the call on. Any guard written as
    # Python code costs at least this; the ratio a peer would have against it is the
    # ceiling for such a guard.
    print("\nfloor (peer overhead / the overhead of a do-nothing Python wrapper, same run):")
    for part in (rows[: len(report_rows_sync)], rows[len(report_rows_sync) :]):
        floors = [o for g, n, o, _r in part if g == "floor"]
        for group, name, overhead, ratio in part:
            if ratio is not None and group == "breaker" and floors:
                print(f"  {name:52} {overhead / floors[0]:6.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
