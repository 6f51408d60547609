"""One table of every live run under a directory (``make live``): each setting's
accounting, clean shutdown, CPU, validity and headline figures, measured vs predicted.

    python tests/live/summary.py target/live/runs [--markdown out.md]
    python tests/live/summary.py --pool runs-seed1 runs-seed2 runs-seed3

``--pool``: the same settings run several times (``run.py --seed N --out DIR``), one
table per setting and caller tier: each figure's mean over the valid runs beside the
prediction, judged by the same tolerance as one run's row.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, Optional


def tolerance(row: dict[str, Any]) -> Optional[tuple[float, float]]:
    """(relative, absolute) of a row; reports older than the fields say it in words."""
    if "tol_rel" in row:
        return row["tol_rel"], row["tol_abs"]
    m = re.fullmatch(r"(\d+) %(?: or ([\d.]+)/s)?", row["tolerance"])
    return (int(m.group(1)) / 100, float(m.group(2) or 0)) if m else None


def pooled(dirs: list[str]) -> list[str]:
    """Each figure's mean over the valid runs of one setting and caller tier."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    invalid: dict[tuple[str, str], int] = {}
    for runs in dirs:
        for d in sorted(os.listdir(runs)):
            p = os.path.join(runs, d, "report.json")
            if not os.path.exists(p):
                continue
            r = json.load(open(p))
            key = (r["label"], r["callers"])
            if r["validity"]["valid"] and r["accounting"]["ok"]:
                groups.setdefault(key, []).append(r)
            else:
                invalid[key] = invalid.get(key, 0) + 1
    lines = []
    for (label, callers), rs in sorted(groups.items()):
        lines += [f"## {label} ({callers} callers): mean of {len(rs)} valid runs"
                  + (f" ({invalid[(label, callers)]} invalid left out)" if (label, callers) in invalid else ""),
                  "", "| figure | runs | mean | predicted (sd) | difference | tolerance | within |",
                  "|---|---|---|---|---|---|---|"]
        names: list[str] = []
        for r in rs:
            names += [row["name"] for row in r["comparison"]["rows"] if row["name"] not in names]
        for name in names:
            rows = [row for r in rs for row in r["comparison"]["rows"] if row["name"] == name]
            vals = [row["measured"] for row in rows if row["measured"] is not None]
            each = ", ".join("never" if row["measured"] is None else f"{row['measured']:.1f}" for row in rows)
            pr = rows[0]
            tol = tolerance(pr)
            if pr["predicted"] is None or len(vals) < len(rows) or tol is None:
                lines.append(f"| {name} | {each} | | {pr['predicted']} | | {pr['tolerance']} | "
                             f"{sum(row['ok'] for row in rows)} of {len(rows)} runs |")
                continue
            m = sum(vals) / len(vals)
            diff = m - pr["predicted"]
            ok = abs(diff) <= max(tol[0] * abs(pr["predicted"]), tol[1])
            rel = f" ({diff / pr['predicted'] * 100:+.0f} %)" if pr["predicted"] else ""
            lines.append(f"| {name} | {each} | {m:.1f} | {pr['predicted']:.1f} ({pr['sim_sd']:.1f}) | "
                         f"{diff:+.1f}{rel} | {pr['tolerance']} | {'yes' if ok else 'NO'} |")
        lines.append("")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="?")
    ap.add_argument("--markdown")
    ap.add_argument("--pool", nargs="+", metavar="DIR", help="pool repeated runs (see above)")
    a = ap.parse_args()
    if a.pool:
        text = "\n".join(pooled(a.pool)) + "\n"
        print(text)
        if a.markdown:
            with open(a.markdown, "w") as f:
                f.write(text)
        return 0
    if not a.runs:
        ap.error("give a directory of runs, or --pool DIR ...")
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
