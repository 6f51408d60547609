"""Runs side by side: one row per metric, one column per run (Basketly presets or any
topologies).

The windows (during the disturbance, at its end, after it) come from each result's own
summary, computed by the simulator for any topology (``disturbance``: its slowdowns).
Rows read columns by name: the generic ones every topology has (``entry.*``, ``edge.*``,
``svc.*``, the summary's ``recovered_at`` and ``latency_ms``) and, when the results have
them, the Basketly series (``goodput``, ``stock_calls``, ...). The windows and the
Basketly rows (:data:`METRICS`) are defined and computed by the simulator crate
(``guards_sim::compare``), like every other summary."""

from __future__ import annotations

import csv
import io
import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from .. import _guards as _native
from . import _args
from .api import Run, _Overrides
from .progress import Progress, callback
from .result import SimResult

__all__ = ["Comparison", "Metric", "METRICS", "GENERIC_METRICS", "compare", "windows"]

#: Basketly's C line (docs/basketly.md): as shipped, then one guard more per setting.
C_LINE: tuple[str, ...] = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8")

Value = Union[float, str, None]


@dataclass(frozen=True)
class Windows:
    """The clock-time windows a comparison reads a result over."""

    #: Mean over ``[during_start, during_end)``: the disturbance (Basketly: the hiccup)
    #: after its first 2 s (the whole run when there is none).
    during_start: str
    during_end: str
    #: Gauges are read at this instant: the end of the disturbance (of the run without one).
    gauge_at: str
    #: Mean over ``[after_start, end)``: from 1 s after the disturbance to the end
    #: (``None`` without one or when the run ends first).
    after_start: Optional[str]
    end: str


def _ns(text: str) -> int:
    return _args.clock_ns("time", text)


def _clock(ns: int) -> str:
    text = _args.format_clock(ns, True)
    return text[:-4] if text.endswith(".000") else text


def windows(result: SimResult) -> Windows:
    """The windows of any result, from its summary's ``disturbance`` (the topology's
    slowdowns; for Basketly, the hiccup) and its first and last intervals, as the
    simulator computes them."""
    during_start, during_end, gauge_at, after_start, end = result._r.windows()
    return Windows(
        during_start=_clock(during_start),
        during_end=_clock(during_end),
        gauge_at=_clock(gauge_at),
        after_start=None if after_start is None else _clock(after_start),
        end=_clock(end),
    )


def _mean(r: SimResult, w: Windows, name: str) -> Optional[float]:
    if name not in r:
        return None
    return r.mean(name, w.during_start, w.during_end)


def _gauge(r: SimResult, w: Windows, name: str) -> Optional[float]:
    """The gauge at ``w.gauge_at``: the value at the end of the interval before it."""
    if name not in r:
        return None
    at = _ns(w.gauge_at) - round(r.interval_s * 1e9)
    return r.at(name, _args.format_clock(max(at, 0), True))


def _after(r: SimResult, w: Windows, name: str) -> Optional[float]:
    if name not in r or w.after_start is None:
        return None
    return r.mean(name, w.after_start, w.end)


def _entries(r: SimResult) -> list[str]:
    """The entry names of a result, in column order."""
    return [n[len("entry."):-len(".offered")] for n in r.names
            if n.startswith("entry.") and n.endswith(".offered")]


def _total(kind: str) -> Callable[[SimResult, Windows], Value]:
    """Mean per interval, over the "during" window, of ``entry.*.<kind>`` summed over
    every entry."""
    def read(r: SimResult, w: Windows) -> Value:
        vals = [_mean(r, w, f"entry.{e}.{kind}") for e in _entries(r)]
        vals = [v for v in vals if v is not None]
        return sum(vals) if vals else None
    return read


def _total_after(kind: str) -> Callable[[SimResult, Windows], Value]:
    def read(r: SimResult, w: Windows) -> Value:
        vals = [_after(r, w, f"entry.{e}.{kind}") for e in _entries(r)]
        vals = [v for v in vals if v is not None]
        return sum(vals) if vals else None
    return read


@dataclass(frozen=True)
class Metric:
    """One row of a comparison."""

    #: The row's name in ``rows()``, ``to_dict()`` and ``to_csv()``.
    key: str
    #: The row's label in ``table()``.
    label: str
    #: The table section the row is printed under.
    section: str
    #: ``rate`` (per second), ``count``, ``ratio`` (×), ``pct``, ``ms`` or ``clock``.
    unit: str
    #: Reads the row's value from one result and its comparison windows.
    read: Callable[[SimResult, Windows], Value]


def _m(key: str, label: str, section: str, unit: str, read: Callable[[SimResult, Windows], Value]) -> Metric:
    return Metric(key, label, section, unit, read)


def _during(name: str) -> Callable[[SimResult, Windows], Value]:
    return lambda r, w: _mean(r, w, name)


def _gauge_of(name: str) -> Callable[[SimResult, Windows], Value]:
    return lambda r, w: _gauge(r, w, name)


#: The rows every topology has: its actions (all entries together).
GENERIC_METRICS: tuple[Metric, ...] = (
    _m("actions_offered", "actions offered (all entries)", "during", "rate", _total("offered")),
    _m("actions_full", "full answers (all entries)", "during", "rate", _total("full")),
    _m("actions_degraded", "degraded answers (fallbacks)", "during", "rate", _total("degraded")),
    _m("actions_failed", "failed actions", "during", "rate", _total("failed")),
    _m("actions_full_after", "full answers (all entries)", "after", "rate", _total_after("full")),
)

def _basketly(key: str) -> Callable[[SimResult, Windows], Value]:
    """Read Basketly metric ``key`` of a result over the given windows, as the simulator
    computes it."""
    def read(r: SimResult, w: Windows) -> Value:
        return r._r.basketly_metric(key, w.during_start, w.during_end, w.gauge_at,
                                    w.after_start, w.end)
    return read


#: The rows of a Basketly comparison, in order (named series of the Basketly presets),
#: defined and computed by the simulator (``guards_sim::compare``): rates during the
#: hiccup, gauges at its end, rates after it, the recovery and the stock-call P99.
METRICS: tuple[Metric, ...] = tuple(
    _m(key, label, section, unit, _basketly(key))
    for key, label, section, unit in _native._sim_basketly_metrics()
)


def format_value(v: Value, unit: str) -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if unit == "ratio":
        return f"{v:.1f}×"
    if unit == "pct":
        return f"{v:.0f} %"
    if unit == "ms":
        return f"{v:,.1f}" if v < 100 else f"{v:,.0f}"
    return f"{v:,.0f}"


def _dynamic(results: Sequence[SimResult]) -> list[Metric]:
    """Per-entry, per-service and per-edge rows for results without the Basketly series:
    each entry's full and degraded answers, each service's queue at the end of the
    disturbance, each recording edge's P99."""
    out: list[Metric] = []
    seen: set[str] = set()

    def add(m: Metric) -> None:
        if m.key not in seen:
            seen.add(m.key)
            out.append(m)

    for r in results:
        for e in _entries(r):
            add(_m(f"entry.{e}.full", f"{e}: full answers", "during", "rate", _during(f"entry.{e}.full")))
            add(_m(f"entry.{e}.degraded", f"{e}: degraded answers", "during", "rate",
                   _during(f"entry.{e}.degraded")))
    for r in results:
        for n in r.names:
            if n.startswith("svc.") and n.endswith(".queue"):
                add(_m(n, f"queued in {n[4:-6]}", "gauge", "count", _gauge_of(n)))
    for r in results:
        lat = r.summary.get("latency_ms")
        for edge in lat if isinstance(lat, dict) else {}:
            def p99(rr: SimResult, _w: Windows, edge: str = edge) -> Value:
                d = rr.summary.get("latency_ms")
                v = d.get(edge, {}).get("p99") if isinstance(d, dict) else None
                return float(v) if isinstance(v, (int, float)) else None
            add(_m(f"latency.{edge}.p99", f"{edge} P99, ms", "run", "ms", p99))
    return out


class Comparison:
    """Runs side by side: ``results`` (label -> :class:`SimResult`), ``metrics`` (the
    rows that apply), ``rows()``, ``table()``, ``to_dict()``, ``to_csv()`` and
    ``plot(path)``. Any topologies compare: the rows are those their columns allow (the
    Basketly series when every result has them, else per-entry, per-service and per-edge
    rows), and a row no result has is left out."""

    __slots__ = ("results", "seed")

    def __init__(self, results: Mapping[str, SimResult], seed: int) -> None:
        self.results: dict[str, SimResult] = dict(results)
        """The results compared, by label."""
        self.seed = seed
        """The seed every run used."""

    @property
    def settings(self) -> list[str]:
        """The labels, in the order given."""
        return list(self.results)

    @property
    def metrics(self) -> list[Metric]:
        """The candidate rows: the generic ones, then the Basketly series (when every
        result has them) or the per-entry, per-service and per-edge rows."""
        rs = list(self.results.values())
        named = all("goodput" in r for r in rs)
        return [*GENERIC_METRICS, *(METRICS if named else _dynamic(rs))]

    def value(self, metric: str, setting: str) -> Value:
        """One cell: ``metric`` is the key of one of :attr:`metrics`."""
        for m in self.metrics:
            if m.key == metric:
                r = self.results[setting]
                return m.read(r, windows(r))
        raise KeyError(metric)

    def rows(self) -> list[tuple[Metric, list[Value]]]:
        """Every metric that applies to at least one run, with one value per run
        (``None`` where it does not apply)."""
        ws = {s: windows(r) for s, r in self.results.items()}
        out = []
        for m in self.metrics:
            vals = [m.read(r, ws[s]) for s, r in self.results.items()]
            if any(v is not None for v in vals):
                out.append((m, vals))
        return out

    def table(self) -> str:
        """The comparison as text, grouped by window."""
        rows = self.rows()
        ws = [windows(r) for r in self.results.values()]
        w0 = ws[0]
        same = all(w == w0 for w in ws)
        note = "" if same else " (first setting's window; others differ)"
        first = self.results[self.settings[0]]
        disturbed = isinstance(first.summary.get("disturbance"), dict)
        # Basketly's disturbance is the database hiccup.
        what = "the hiccup" if first.config is not None else "the disturbance"
        headers = {
            "during": (
                f"During {what}, per second (mean over {w0.during_start}-{w0.during_end}){note}"
                if disturbed
                else f"Per second (mean over {w0.during_start}-{w0.during_end}){note}"
            ),
            "gauge": (
                f"At the end of {what} ({w0.gauge_at}){note}"
                if disturbed
                else f"At the end ({w0.gauge_at}){note}"
            ),
            "after": (
                f"After {what}, per second ({w0.after_start} to {w0.end}){note}"
                if w0.after_start is not None
                else f"After {what}"
            ),
            "run": "Whole run",
        }
        cells = [[format_value(v, m.unit) for v in vals] for m, vals in rows]
        lw = max(len(m.label) for m, _ in rows) + 2
        widths = [
            max([len(s)] + [len(c[i]) for c in cells]) for i, s in enumerate(self.settings)
        ]
        kind = "Basketly, " if all(r.config is not None for r in self.results.values()) else ""
        out = [
            f"{kind}seed {self.seed}: {', '.join(self.settings)} side by side",
            "".ljust(lw) + "".join("  " + s.rjust(w) for s, w in zip(self.settings, widths)),
        ]
        order = ["during", "gauge", "after", "run"]
        grouped = sorted(zip(rows, cells), key=lambda x: order.index(x[0][0].section))
        section = None
        for (m, _), c in grouped:
            if m.section != section:
                section = m.section
                out.append(headers[section])
            out.append(("  " + m.label).ljust(lw) + "".join("  " + x.rjust(w) for x, w in zip(c, widths)))
        return "\n".join(out) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """``{"seed", "settings", "metrics": [{"key", "label", "section", "unit",
        "values": {setting: value}}], "windows": {setting: {...}}, "results": {setting:
        result JSON}}``."""
        return {
            "seed": self.seed,
            "settings": self.settings,
            "metrics": [
                {
                    "key": m.key,
                    "label": m.label,
                    "section": m.section,
                    "unit": m.unit,
                    "values": dict(zip(self.settings, vals)),
                }
                for m, vals in self.rows()
            ],
            "windows": {s: windows(r).__dict__ for s, r in self.results.items()},
            "results": {s: r.to_dict() for s, r in self.results.items()},
        }

    def to_csv(self) -> str:
        """One row per metric (``metric,label,<setting>...``), raw values."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["metric", "label", *self.settings])
        for m, vals in self.rows():
            w.writerow([m.key, m.label, *["" if v is None else v for v in vals]])
        return buf.getvalue()

    def plot(self, path: Union[str, "os.PathLike[str]"], *, title: Optional[str] = None) -> Any:
        """Full answers of every run over time (dashed: with degraded answers) and the
        calls it makes, with matplotlib (``pip install 'guards[sim]'``); returns the
        ``Figure``."""
        from . import plot as _plot

        return _plot.plot_comparison(self, path, title=title)


class _Stopped(Exception):
    """A sweep's run stopped because another one failed (or Ctrl-C)."""


def _label_of(item: Any, i: int) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, tuple):
        return str(item[0])
    if isinstance(item, os.PathLike):
        return os.path.splitext(os.path.basename(os.fspath(item)))[0]
    return f"topology {i + 1}"


def compare(
    settings: Sequence[Any] = C_LINE,
    seed: int = 1,
    until: Optional[_args.ClockTime] = None,
    *,
    duration: Optional[float] = None,
    overrides: _Overrides = None,
    progress: Progress = None,
    jobs: int = 1,
    **kw_overrides: _args.OverrideValue,
) -> Comparison:
    """Run each item of ``settings`` with the same seed and end, ``jobs`` at a time
    (threads; each run releases the GIL), and put them side by side.

    An item is a Basketly preset name (with ``overrides`` applied), a topology (a dict,
    JSON text or a path to a JSON file, as for :func:`guards.sim.simulate`), or a
    ``(label, topology)`` pair. A topology run needs ``until`` (a clock time) or
    ``duration`` (seconds). ``progress=True`` draws one bar for the whole comparison."""
    if isinstance(settings, str) or not isinstance(settings, Sequence):
        raise TypeError("`settings` must be a list of preset names or topologies")
    items = list(settings)
    if not items:
        raise ValueError("`settings` must name at least one preset or topology")
    names = [_label_of(s, i) for i, s in enumerate(items)]
    if len(set(names)) != len(names):
        raise ValueError(f"`settings` names a run twice: {names}")
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise TypeError(f"`jobs` must be an int, not {type(jobs).__name__}")
    if jobs < 1:
        raise ValueError(f"`jobs` must be at least 1, not {jobs}")
    # Build every run first, so a bad name, override or topology fails before any work.
    runs = []
    for label, item in zip(names, items):
        if isinstance(item, str) and not _is_topology_text(item):
            runs.append(Run.basketly(_args.setting_name(item), seed, until, overrides=overrides,
                                     **kw_overrides))
        else:
            topo = item[1] if isinstance(item, tuple) else item
            if until is None and duration is None:
                raise TypeError(f"{label}: a topology needs `until` (a clock time) or `duration`")
            runs.append(Run.topology(topo, seed, until, duration=None if until is not None else duration,
                                     label=label))
    cb, bar = callback(progress, "compare")
    done = [0.0] * len(runs)
    lock = threading.Lock()
    stop = threading.Event()  # set on an error or Ctrl-C: the other runs stop at their next step

    def one(i: int) -> SimResult:
        run = runs[i]
        step = max((run._run.until_ns - run._run.start_ns) / 1e9 / 50.0, run._run.interval_ns / 1e9)
        for f in run.steps(step):
            if stop.is_set():
                raise _Stopped
            if cb is not None:
                with lock:
                    done[i] = f
                    total = sum(done) / len(done)
                cb(total)
        return run.finish()

    try:
        if jobs == 1 or len(runs) == 1:
            results = [one(i) for i in range(len(runs))]
        else:
            with ThreadPoolExecutor(max_workers=min(jobs, len(runs))) as ex:
                futures = [ex.submit(one, i) for i in range(len(runs))]
                try:
                    results = [f.result() for f in futures]
                except BaseException:
                    stop.set()
                    raise
    finally:
        if bar is not None:
            bar.close()
    return Comparison(dict(zip(names, results)), seed)


def _is_topology_text(s: str) -> bool:
    """Whether a string item of ``compare`` is a topology (JSON text or a ``.json`` path)
    rather than a preset name."""
    t = s.lstrip()
    return t.startswith("{") or s.endswith(".json")
