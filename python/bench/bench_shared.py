"""Cost of a host-wide guard against a private one: one acquire + report from Python.

For a bulkhead (``acquire()`` then ``release()``) and a circuit breaker (``acquire()``
then ``report("success")``, closed, window full), the script times the package's own guard
(``guards.Bulkhead``, ``guards.CircuitBreaker``) and the same guard from a region
(``guards.shared``), in one process, in one run. Rounds are interleaved (each round times
every variant once; the best round of each is kept), so load from elsewhere on the machine
lands on every variant alike. It prints nanoseconds per acquire + report and the ratio
shared / private (the goal: at most 1.5).

    python python/bench/bench_shared.py            # about 20 s
    python python/bench/bench_shared.py --quick    # a few seconds, noisier

Build guards in release mode first (``make python`` does).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import tempfile
import timeit
from collections.abc import Callable
from typing import Any

import guards
from guards import shared


def variants(region: shared.Region) -> dict[str, Callable[[], object]]:
    pb = guards.Bulkhead(max_concurrent=64)
    sb = region.bulkhead("bench-bulkhead", max_concurrent=64)
    settings: dict[str, Any] = {"window_size": 100, "minimum_calls": 100}
    pc = guards.CircuitBreaker(**settings)
    sc = region.circuit_breaker("bench-breaker", **settings)

    def bulkhead(b: object) -> Callable[[], object]:
        acquire = b.acquire  # type: ignore[attr-defined]

        def run() -> object:
            return acquire().release()

        return run

    def breaker(b: object) -> Callable[[], object]:
        acquire = b.acquire  # type: ignore[attr-defined]

        def run() -> object:
            return acquire().report("success")

        return run

    out = {
        "bulkhead private": bulkhead(pb),
        "bulkhead shared": bulkhead(sb),
        "breaker private": breaker(pc),
        "breaker shared": breaker(sc),
    }
    for f in out.values():  # fill the breakers' windows, warm up
        for _ in range(1000):
            f()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    a = ap.parse_args()
    rounds, number = (5, 20_000) if a.quick else (15, 100_000)
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
        region = shared.Region(os.path.join(d, "bench"))
        vs = variants(region)
        best = {k: float("inf") for k in vs}
        gc.disable()
        try:
            for _ in range(rounds):
                for name, f in vs.items():
                    t = timeit.timeit(f, number=number) / number * 1e9
                    best[name] = min(best[name], t)
        finally:
            gc.enable()
        print(
            f"guards {guards.__version__}, Python {platform.python_version()} "
            f"({sys.implementation.name}), {platform.machine()}; best of {rounds} x {number} "
            "acquire + report, variants interleaved"
        )
        print(f"{'variant':<20}{'ns/op':>10}")
        for name, t in best.items():
            print(f"{name:<20}{t:>10.1f}")
        for g in ("bulkhead", "breaker"):
            r = best[f"{g} shared"] / best[f"{g} private"]
            print(f"ratio {g} shared / private: {r:.2f}  (goal <= 1.5: {'met' if r <= 1.5 else 'MISSED'})")


if __name__ == "__main__":
    main()
