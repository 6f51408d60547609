"""The engine beside a plain-Python model of the same run, in the same process and run.

    python sim/bench/engine_vs_python.py [--until 20:02:00] [--reps 3] [--check]

Needs the package (``pip install ./python``; ``make python`` builds it into ``.venv``).
It runs the Basketly C0 setting (as shipped; docs/basketly.md) from 19:59:45 to
``--until`` with seed 1 on the engine (``guards.sim.basketly``) and on
``plain_model.py`` beside this file, alternately, ``--reps`` times each, and reports the
fastest wall time of each, events per second, nanoseconds per event and the ratio of the
two wall times (plain Python / engine). The machine is shared, so only the ratio of two
measurements taken side by side means much. ``--check`` also compares the headline C0
figures of the two models (they agree within the noise of two different random streams).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import plain_model  # noqa: E402

import guards.sim as sim  # noqa: E402


def engine(until: str) -> tuple[float, int, sim.SimResult]:
    t0 = time.perf_counter()
    r = sim.basketly("C0", 1, until=until)
    return time.perf_counter() - t0, r.events, r


def python(until: str) -> tuple[float, int, plain_model.Model]:
    t0 = time.perf_counter()
    m = plain_model.run(1, until)
    return time.perf_counter() - t0, m.events, m


def engine_headline(r: sim.SimResult) -> dict[str, float]:
    def at_end_of(col: str, t: str) -> float:
        i = r.t.index(t)
        return float(r.column(col)[i - 1])

    h = {
        "goodput_before": r.mean("goodput", "19:59:50", "20:00:00"),
        "goodput_after_20_00_02": r.mean("goodput", "20:00:02", "20:00:30"),
        "db_stale_hiccup": r.mean("db_stale", "20:00:02", "20:00:20"),
        "db_stale_after": r.mean("db_stale", "20:00:22", "20:00:30"),
        "app_attempts": r.mean("app_attempts", "20:00:06", "20:00:30"),
        "inside_stock_20_00_15": at_end_of("inside_stock", "20:00:15"),
    }
    if "20:02:00" in r.t or r.t[-1] >= "20:01:59":
        last = r.t[-1]
        h["shopapi_queue_20_02_00"] = float(r.column("shopapi_queue")[r.t.index(last)])
    return {k: float(v) for k, v in h.items() if v is not None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--until", default="20:02:00")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    best_e = best_p = float("inf")
    ev_e = ev_p = 0
    r = m = None
    for _ in range(args.reps):
        w, ev_e, r = engine(args.until)
        best_e = min(best_e, w)
        w, ev_p, m = python(args.until)
        best_p = min(best_p, w)
    print(f"C0, seed 1, 19:59:45 to {args.until}; fastest of {args.reps}, alternating")
    print(f"{'model':<14} {'events':>10} {'wall s':>8} {'M events/s':>11} {'ns/event':>9}")
    for name, ev, w in (("engine", ev_e, best_e), ("plain Python", ev_p, best_p)):
        print(f"{name:<14} {ev:>10,} {w:>8.3f} {ev / w / 1e6:>11.2f} {w / ev * 1e9:>9.0f}")
    print(f"ratio (plain Python wall / engine wall): {best_p / best_e:.1f}x")
    if args.check and r is not None and m is not None:
        a, b = engine_headline(r), plain_model.headline(m)
        print(f"\n{'figure':<28} {'engine':>12} {'plain':>12}")
        ok = True
        for k in b:
            x, y = a.get(k, float("nan")), b[k]
            close = abs(x - y) <= 0.15 * max(abs(y), 1.0) or (x == y == 0)
            ok &= close
            print(f"{k:<28} {x:>12.1f} {y:>12.1f}{'' if close else '   <- differs'}")
        if not ok:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
