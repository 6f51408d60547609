#!/usr/bin/env python3
"""Print criterion results as ns/op and as a ratio to the atomic baseline of the same run.

Each bench binary measures `<guard>.baseline/fetch_add/{1t,2t}` beside its own
`<guard>/<op>/{1t,2t}` benches; a 1-thread bench is divided by the 1-thread baseline and a
2-thread bench by the 2-thread baseline of the same binary.

usage: bench_report.py [target/criterion] [--markdown]
"""
import json
import os
import sys


def estimates(root):
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        if "estimates.json" in files and os.path.basename(dirpath) == "new":
            bench_dir = os.path.dirname(dirpath)
            with open(os.path.join(bench_dir, "new", "benchmark.json")) as f:
                meta = json.load(f)
            with open(os.path.join(dirpath, "estimates.json")) as f:
                est = json.load(f)
            out[(meta["group_id"], meta.get("function_id") or "", meta.get("value_str") or "")] = est[
                "median"
            ]["point_estimate"]
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = args[0] if args else os.path.join("target", "criterion")
    md = "--markdown" in sys.argv
    est = estimates(root)
    rows = []
    for (group, func, value), ns in sorted(est.items()):
        if group.endswith(".baseline"):
            continue
        bench = "/".join(x for x in (func, value) if x)
        threads = "2t" if bench.endswith("2t") else "1t"
        base = est.get((group + ".baseline", "fetch_add/" + threads, ""))
        ratio = ns / base if base else float("nan")
        rows.append((group, bench, ns, base or float("nan"), ratio))
    if md:
        print("| guard | operation | ns/op | baseline ns/op | ratio |")
        print("|---|---|---:|---:|---:|")
        for g, b, ns, base, r in rows:
            print(f"| {g} | {b} | {ns:.2f} | {base:.2f} | {r:.2f} |")
    else:
        print(f"{'guard':<20} {'operation':<36} {'ns/op':>9} {'base':>7} {'ratio':>7}")
        for g, b, ns, base, r in rows:
            print(f"{g:<20} {b:<36} {ns:>9.2f} {base:>7.2f} {r:>7.2f}")


if __name__ == "__main__":
    main()
