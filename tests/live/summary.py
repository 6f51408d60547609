"""One table of every live run under a directory (``make live``): each setting's
accounting, clean shutdown, CPU, validity and headline figures, measured vs predicted.

    python tests/live/summary.py target/live/runs [--markdown out.md]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    lines = []
    for d in sorted(os.listdir(a.runs)):
        p = os.path.join(a.runs, d, "report.json")
        if not os.path.exists(p):
            continue
        r = json.load(open(p))
        v = r["validity"]
        acc, sh = r["accounting"], r["shutdown"]
        lines.append(f"## {r['label']} ({r['callers']} callers)")
        lines.append("")
        lines.append(f"accounting {'OK' if acc['ok'] else 'FAILED'} (sent {acc['sent']}, ended {acc['ended']}, "
                     f"lost {acc['lost']}); clean shutdown {'OK' if sh['ok'] else 'FAILED'}; "
                     f"cast {v['cast_cores_mean']:.2f} cores, machine {v['machine_cores_mean']:.2f} cores; "
                     f"load generator late p99 {v['lateness_p99_ms']:.1f} ms; run {r['wall_s']:.0f} s")
        lines.append("")
        if not v["valid"]:
            lines.append("invalid: machine saturated (" + "; ".join(v["why"]) + ")")
            lines.append("")
            continue
        lines.append("| figure | measured | predicted (sd) | difference | tolerance | within |")
        lines.append("|---|---|---|---|---|---|")
        for row in r["comparison"]["rows"]:
            m = "never" if row["measured"] is None else f"{row['measured']:.1f}"
            pr = "never" if row["predicted"] is None else f"{row['predicted']:.1f} ({row['sim_sd']:.1f})"
            df = "" if row["diff"] is None else f"{row['diff']:+.1f}" + (
                f" ({row['rel'] * 100:+.0f} %)" if row["rel"] is not None else "")
            lines.append(f"| {row['name']} | {m} | {pr} | {df} | {row['tolerance']} | "
                         f"{'yes' if row['ok'] else 'NO'} |")
        lines.append("")
    # Python and Node callers on the same setting: the same guards should decide the same.
    reports: dict[str, dict[str, Any]] = {}
    for d in sorted(os.listdir(a.runs)):
        p = os.path.join(a.runs, d, "report.json")
        if os.path.exists(p):
            r = json.load(open(p))
            reports.setdefault(r["label"], {})[r["callers"]] = r
    for label, by in reports.items():
        if set(by) != {"python", "node"}:
            continue
        py, nd = by["python"], by["node"]
        lines.append(f"## {label}: Python vs Node callers")
        lines.append("")
        if not (py["validity"]["valid"] and nd["validity"]["valid"]):
            lines.append("invalid: machine saturated in one of the two runs")
            lines.append("")
            continue
        lines.append("| figure | Python | Node | difference | within 15 % or 3/s |")
        lines.append("|---|---|---|---|---|")
        nrows = {row["name"]: row for row in nd["comparison"]["rows"]}
        for row in py["comparison"]["rows"]:
            o = nrows.get(row["name"])
            if o is None or row["measured"] is None or o["measured"] is None:
                continue
            d = o["measured"] - row["measured"]
            ok = abs(d) <= max(0.15 * abs(row["measured"]), 3.0)
            lines.append(f"| {row['name']} | {row['measured']:.1f} | {o['measured']:.1f} | {d:+.1f} | "
                         f"{'yes' if ok else 'NO'} |")
        lines.append("")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
