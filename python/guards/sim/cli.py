"""The command line: ``python -m guards.sim``.

::

    python -m guards.sim basketly --setting C8 --seed 1 [--until 20:02:00]
        [--set key=value ...] [--at 20:00:10 key=value ...] [--trace [HH:MM:SS]]
        [--json FILE] [--csv FILE] [--plot FILE.png]
    python -m guards.sim basketly --compare C0 C1 C2 C3 C4 C5 C6 C7 C8 [--plot FILE.png]
    python -m guards.sim basketly presets | keys | each-guard-alone [--seeds N]
    python -m guards.sim sweep --settings C6 C8 --param breaker.failure_rate_threshold=0.3,0.5,0.7
        [--param KEY=V1,V2 ...] [--seeds 10] [--metrics A,B] [--backend local|ray]
    python -m guards.sim run TOPOLOGY.json (--until HH:MM:SS | --duration SECONDS)
    python -m guards.sim presets | keys

Exit status: 0 done; 1 the run was done but an output could not be written (a file, or
a plot without matplotlib: the tables are printed first); 2 bad arguments (an unknown
preset or key, a bad value: the message names it); 3 a limit (``max_memory_mb``,
``max_events``) stopped the run early: what it computed is printed and written, and the
message says where it stopped; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import IO, Callable, Optional

from . import _args, plot
from .api import KEYS, PRESET_INFO, PRESETS, SERIES, SimError, basketly, simulate
from .compare import compare
from .result import SimResult
from .sweep import DEFAULT_METRICS, each_guard_alone, sweep

__all__ = ["main"]

PROG = "python -m guards.sim"


class _Fail(Exception):
    """An error already explained to the user; carries the exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Run the guards simulator: the Basketly incident presets or any topology.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    b = sub.add_parser(
        "basketly",
        help="run a Basketly preset, or compare several side by side",
        description=(
            "Run a Basketly preset and print a per-second table and a summary, or compare "
            "presets side by side with --compare."
        ),
    )
    b.add_argument(
        "what", nargs="?", default="run", choices=["run", "presets", "keys", "each-guard-alone"],
        help="run (default), list the presets or keys, or the each-guard-alone table",
    )
    b.add_argument("--setting", metavar="NAME", help="preset name (default C8); see `presets`")
    b.add_argument("--compare", nargs="+", metavar="NAME",
                   help="compare these presets (or topology .json files, with --until) side by side")
    b.add_argument("--seed", type=_seed, default=1, help="random seed (default 1)")
    b.add_argument("--until", metavar="HH:MM:SS", help="end of the run (default: the preset's)")
    b.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="override a setting (repeatable); see `keys`",
    )
    b.add_argument(
        "--at", dest="timeline", action="append", nargs="+", default=[],
        metavar="ARG", help="HH:MM:SS KEY=VALUE [KEY=VALUE ...]: change settings at that time "
        "during the run (repeatable)",
    )
    b.add_argument("--seeds", type=_positive_int, default=3, metavar="N",
                   help="each-guard-alone: seeds 1..N (default 3)")
    b.add_argument("--switch-at", default="20:00:25", metavar="HH:MM:SS",
                   help="each-guard-alone: when the guard is switched on (default 20:00:25)")
    _limits(b)
    _outputs(b)
    b.add_argument(
        "--jobs", type=_positive_int, default=None, metavar="N",
        help="with --compare: runs at a time (default: the number of CPUs, at most 4)",
    )

    r = sub.add_parser(
        "run",
        help="run a topology described as JSON",
        description="Run any topology (a JSON file; see guards.sim.simulate) and print its table.",
    )
    r.add_argument("topology", help="path to the topology's JSON file ('-' reads stdin)")
    r.add_argument("--seed", type=_seed, default=1, help="random seed (default 1)")
    end = r.add_mutually_exclusive_group(required=True)
    end.add_argument("--until", metavar="HH:MM:SS", help="end of the run (a clock time)")
    end.add_argument("--duration", type=float, metavar="SECONDS", help="length of the run")
    r.add_argument("--label", help="the result's setting name (default: custom)")
    _limits(r)
    _outputs(r)

    w = sub.add_parser(
        "sweep",
        help="run a grid of presets x parameters x seeds and sum it up",
        description=(
            "Run every combination of presets (or a topology) and parameter values with "
            "every seed, on all local cores or on Ray, and print the mean, sd and range "
            "per cell."
        ),
    )
    w.add_argument("--settings", nargs="+", default=["C8"], metavar="NAME",
                   help="Basketly presets (default C8)")
    w.add_argument("--topology", metavar="FILE.json",
                   help="sweep this topology instead (parameters are paths: edges/NAME/policy/attempt_timeout)")
    w.add_argument("--param", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a parameter and its values (repeatable; the grid is every combination)")
    w.add_argument("--seeds", type=_positive_int, default=10, metavar="N", help="seeds 1..N (default 10)")
    w.add_argument("--metrics", metavar="A,B,...",
                   help=f"metrics (default {','.join(DEFAULT_METRICS)})")
    w.add_argument("--until", metavar="HH:MM:SS", help="end of each run")
    w.add_argument("--duration", type=float, metavar="SECONDS", help="with --topology: length of each run")
    w.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="an override for every cell (repeatable)")
    w.add_argument("--backend", choices=["local", "ray"], default="local",
                   help="local threads (default) or a Ray cluster (pip install 'guards[ray]')")
    w.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                   help="local runs at a time (default: every core)")
    w.add_argument("--metric", dest="plot_metric", metavar="NAME", help="the metric to plot (default the first)")
    _outputs(w)

    sub.add_parser("presets", help="list the Basketly presets, one line each")
    sub.add_parser("keys", help="list the Basketly override keys and series")
    return p


def _outputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", metavar="FILE", help="write the result as JSON")
    p.add_argument("--csv", metavar="FILE", help="write the per-interval columns as CSV")
    p.add_argument("--plot", metavar="FILE.png", help="plot with matplotlib (PNG, SVG, PDF)")
    p.add_argument(
        "--columns", metavar="A,B,...",
        help="table columns: comma-separated names, or 'all' (default: the main series)",
    )
    p.add_argument("--quiet", action="store_true", help="print no table (files only)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="draw a progress bar on stderr (default: when stderr is a terminal)")
    g.add_argument("--no-progress", dest="progress", action="store_false")


def _limits(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", nargs="?", const="start", metavar="HH:MM:SS",
                   help="trace single actions from that time (default: the start) and print them")
    p.add_argument("--trace-entry", metavar="NAME", help="trace only this entry (e.g. checkout)")
    p.add_argument("--trace-count", type=_positive_int, default=None, metavar="N",
                   help="trace N actions (default 1)")
    p.add_argument("--max-memory-mb", type=float, default=None, metavar="MB",
                   help="stop the run, keeping what it computed, past this memory (default 1024)")
    p.add_argument("--max-events", type=_positive_int, default=None, metavar="N",
                   help="stop the run, keeping what it computed, after N events")


def _trace_arg(args: argparse.Namespace) -> Optional[dict[str, object]]:
    if args.trace is None and args.trace_entry is None and args.trace_count is None:
        return None
    t: dict[str, object] = {}
    if args.trace not in (None, "start"):
        t["at"] = args.trace
    if args.trace_entry is not None:
        t["entry"] = args.trace_entry
    if args.trace_count is not None:
        t["count"] = args.trace_count
    return t


def _seed(text: str) -> int:
    try:
        v = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= v < 2**64:
        raise argparse.ArgumentTypeError(f"must be in 0..2**64-1: {text}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return v


def _sim_message(e: SimError) -> str:
    kind = getattr(e, "kind", None)
    if kind == "unknown_preset":
        return f"unknown preset {e.key!r}; `{PROG} presets` lists them"
    if kind == "unknown_key":
        return f"unknown override key {e.key!r}; `{PROG} keys` lists them"
    return str(e)


def _progress(flag: Optional[bool]) -> bool:
    if flag is not None:
        return flag
    isatty: Callable[[], bool] = getattr(sys.stderr, "isatty", lambda: False)
    return bool(isatty())


def _parent(path: str) -> None:
    """Create the directory an output goes into (``--plot out/compare.png``)."""
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)


def _write(path: str, text: str, what: str) -> None:
    try:
        _parent(path)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
    except OSError as e:
        raise _Fail(f"cannot write the {what} to {path}: {e.strerror or e}", 1) from None


def _columns(result: SimResult, spec: Optional[str]) -> Optional[list[str]]:
    if spec is None:
        return None
    if spec == "all":
        return result.names
    names = [c.strip() for c in spec.split(",") if c.strip()]
    missing = [c for c in names if c not in result]
    if missing:
        raise _Fail(
            f"--columns: no column {', '.join(map(repr, missing))} "
            f"(the series are {', '.join(SERIES)}; `--columns all` shows every column)",
            2,
        )
    return names


def _header(r: SimResult) -> str:
    cfg = r.config or {}
    start = r.labels(millis=r.interval_s < 1)[0] if len(r) else "-"
    end = cfg.get("until", "")
    end = end[:-4] if end.endswith(".000") else end
    interval = f"{r.interval_s:g} s"
    text = f"{r.setting}, seed {r.seed}: {len(r)} intervals of {interval} from {start}"
    if end:
        text += f" to {end}"
    if cfg.get("hiccup"):
        hs, he = cfg["hiccup_start"], cfg["hiccup_end"]
        hs = hs[:-4] if hs.endswith(".000") else hs
        he = he[:-4] if he.endswith(".000") else he
        text += f" (hiccup x{cfg['hiccup_factor']:g} {hs}-{he})"
    return text


def _single_outputs(args: argparse.Namespace, result: SimResult, out: IO[str]) -> None:
    if not args.quiet:
        cols = _columns(result, args.columns)
        out.write(_header(result) + "\n")
        out.write(result.table(cols))
        out.write("\n" + result.summary_text())
        for t in result.traces:
            out.write("\ntrace of " + str(t))
    if args.json:
        _write(args.json, result.to_json(), "JSON")
    if args.csv:
        _write(args.csv, result.to_csv(), "CSV")
    if args.plot:
        _plot(lambda: result.plot(args.plot), args.plot)
    if result.stopped is not None:
        raise _Fail(result.stopped["message"], 3)


def _plot(draw: Callable[[], None], path: str) -> None:
    try:
        _parent(path)
        draw()
    except plot.PlotUnavailable:
        raise
    except (OSError, ValueError) as e:
        raise _Fail(f"cannot write the plot to {path}: {e}", 1) from None


def _check_until(until: Optional[str]) -> None:
    if until is not None:
        try:
            _args.clock_text("until", until)
        except ValueError:
            raise _Fail(f"--until: not a clock time HH:MM:SS[.fff]: {until!r}", 2) from None


def _cmd_basketly(args: argparse.Namespace, out: IO[str]) -> None:
    if args.what == "presets":
        _cmd_presets(out)
        return
    if args.what == "keys":
        _cmd_keys(out)
        return
    if args.what == "each-guard-alone":
        sw = each_guard_alone(
            range(1, args.seeds + 1), args.switch_at, args.until or "20:02:00",
            jobs=args.jobs, progress=_progress(args.progress),
        )
        _sweep_outputs(args, sw, out)
        return
    if args.compare and args.setting:
        raise _Fail("give either --setting or --compare, not both", 2)
    if args.jobs is not None and not args.compare:
        raise _Fail("--jobs goes with --compare", 2)
    if args.compare and args.columns:
        raise _Fail("--columns goes with a single run, not --compare", 2)
    until = args.until
    _check_until(until)
    for o in args.overrides:
        if "=" not in o:
            raise _Fail(f"--set: {o!r} is not of the form key=value", 2)
    show = _progress(args.progress)
    if args.compare:
        jobs = args.jobs or max(1, min(4, os.cpu_count() or 1))
        cmp = compare(
            args.compare, args.seed, until, overrides=args.overrides, progress=show, jobs=jobs
        )
        if not args.quiet:
            out.write(cmp.table())
        if args.json:
            _write(args.json, json.dumps(cmp.to_dict()), "JSON")
        if args.csv:
            _write(args.csv, cmp.to_csv(), "CSV")
        if args.plot:
            _plot(lambda: cmp.plot(args.plot), args.plot)
        return
    setting = args.setting or "C8"
    timeline = []
    for item in args.timeline:
        if len(item) < 2:
            raise _Fail("--at takes a time and at least one KEY=VALUE", 2)
        timeline.append((item[0], item[1:]))
    overrides = list(args.overrides)
    if args.max_memory_mb is not None:
        overrides.append(f"max_memory_mb={args.max_memory_mb}")
    if args.max_events is not None:
        overrides.append(f"max_events={args.max_events}")
    result = basketly(
        setting, args.seed, until, overrides=overrides, timeline=timeline,
        trace=_trace_arg(args), progress=show or None,
    )
    _single_outputs(args, result, out)


def _sweep_outputs(args: argparse.Namespace, sw: object, out: IO[str]) -> None:
    if not args.quiet:
        out.write(sw.table())  # type: ignore[attr-defined]
    if args.json:
        _write(args.json, json.dumps(sw.to_dict()), "JSON")  # type: ignore[attr-defined]
    if args.csv:
        _write(args.csv, sw.to_csv(), "CSV")  # type: ignore[attr-defined]
    if args.plot:
        metric = getattr(args, "plot_metric", None)
        _plot(lambda: sw.plot(args.plot, metric), args.plot)  # type: ignore[attr-defined]


def _value(text: str) -> object:
    """A parameter value from the command line: a number if it reads as one."""
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _cmd_sweep(args: argparse.Namespace, out: IO[str]) -> None:
    params: dict[object, list[object]] = {}
    for p in args.param:
        key, sep, values = p.partition("=")
        if not sep or not values:
            raise _Fail(f"--param: {p!r} is not of the form KEY=V1,V2,...", 2)
        params[key.strip()] = [_value(v.strip()) for v in values.split(",")]
    metrics = None if args.metrics is None else [m.strip() for m in args.metrics.split(",") if m.strip()]
    settings: list[object] = list(args.settings)
    if args.topology:
        try:
            with open(args.topology, encoding="utf-8") as f:
                settings = [(os.path.basename(args.topology), json.load(f))]
        except (OSError, ValueError) as e:
            raise _Fail(f"cannot read {args.topology}: {e}", 2) from None
        if metrics is None:
            raise _Fail("--metrics is needed with --topology (column names)", 2)
    _check_until(args.until)
    try:
        sw = sweep(
            settings, params or None, range(1, args.seeds + 1), metrics, until=args.until,
            duration=args.duration, overrides=args.overrides, backend=args.backend,
            jobs=args.jobs, progress=_progress(args.progress),
        )
    except (KeyError, TypeError) as e:
        raise _Fail(f"sweep: {e}", 2) from None
    except ImportError as e:
        raise _Fail(str(e), 2) from None
    _sweep_outputs(args, sw, out)


def _cmd_run(args: argparse.Namespace, out: IO[str]) -> None:
    if args.topology == "-":
        text = sys.stdin.read()
    else:
        try:
            with open(args.topology, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise _Fail(f"cannot read {args.topology}: {e.strerror or e}", 2) from None
    _check_until(args.until)
    if args.duration is not None and not (args.duration > 0 and args.duration < 1e7):
        raise _Fail(f"--duration: must be a positive number of seconds, not {args.duration}", 2)
    show = _progress(args.progress)
    timeline = None
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and "timeline" in doc:
        # The file's timeline: [{"at": "HH:MM:SS", "patch": {...}}, ...].
        items = doc.pop("timeline")
        try:
            timeline = [(i["at"], i["patch"]) for i in items]
        except (TypeError, KeyError):
            raise _Fail("timeline: a list of {\"at\": \"HH:MM:SS\", \"patch\": {...}} entries", 2) from None
        text = json.dumps(doc)
    result = simulate(
        text, args.seed, args.until, duration=args.duration, label=args.label,
        timeline=timeline, trace=_trace_arg(args), max_memory_mb=args.max_memory_mb,
        max_events=args.max_events, progress=show or None,
    )
    _single_outputs(args, result, out)


def _cmd_presets(out: IO[str]) -> None:
    w = max(len(n) for n in PRESETS)
    for name in PRESETS:
        out.write(f"{name.ljust(w)}  {PRESET_INFO.get(name, '')}\n")


def _cmd_keys(out: IO[str]) -> None:
    w = max(len(k) for k in KEYS)
    out.write("Override keys (--set KEY=VALUE; HOP is app, stock_call or db_call):\n")
    for k, d in KEYS.items():
        out.write(f"  {k.ljust(w)}  {d}\n")
    out.write("\nSeries (JSON `series`, CSV columns, --columns):\n")
    out.write("  " + ", ".join(SERIES) + "\n")


def main(argv: Optional[Sequence[str]] = None, out: Optional[IO[str]] = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); the exit status."""
    stdout = out if out is not None else sys.stdout
    args = _parser().parse_args(None if argv is None else list(argv))
    try:
        if args.command == "basketly":
            _cmd_basketly(args, stdout)
        elif args.command == "run":
            _cmd_run(args, stdout)
        elif args.command == "sweep":
            _cmd_sweep(args, stdout)
        elif args.command == "presets":
            _cmd_presets(stdout)
        else:
            _cmd_keys(stdout)
    except _Fail as e:
        stdout.flush()
        what = "" if e.status == 3 else "error: "
        print(f"{PROG}: {what}{e}", file=sys.stderr)
        return e.status
    except SimError as e:
        stdout.flush()
        print(f"{PROG}: error: {_sim_message(e)}", file=sys.stderr)
        return 2
    except plot.PlotUnavailable as e:
        stdout.flush()
        print(f"{PROG}: error: --plot: {e}; the tables above are complete", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        stdout.flush()
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # pragma: no cover - `| head`
        return 0
    return 0

