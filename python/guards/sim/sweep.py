"""Sweeps: a grid of Basketly presets (or topologies) x parameters x seeds, run on all
local cores or on a Ray cluster, and summed up as one table (mean and spread per cell
over the seeds) with a heatmap or line plot.

Every run is deterministic and independent, so the table does not depend on where or in
which order the runs ran: the local backend and Ray give the same table, bit for bit.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Optional, Union

from . import _args
from .api import GUARDS, Run
from .compare import GENERIC_METRICS, METRICS, windows
from .progress import Progress, callback
from .result import SimResult

__all__ = ["sweep", "Sweep", "Cell", "each_guard_alone", "MetricSpec", "DEFAULT_METRICS"]

#: A metric: a :data:`guards.sim.METRICS` or ``GENERIC_METRICS`` key (read over the
#: disturbance's windows), a column name (its mean during the disturbance, or over the
#: run without one), a ``(column, start, end)`` window, or a
#: callable ``f(SimResult) -> float``.
MetricSpec = Union[str, tuple, Callable[[SimResult], Optional[float]]]

#: What a Basketly sweep reports by default.
DEFAULT_METRICS: tuple[str, ...] = (
    "goodput_checkout",
    "goodput",
    "goodput_incl_degraded",
    "stock_calls",
    "recovery_s",
)

_METRIC_KEYS = {m.key: m for m in (*GENERIC_METRICS, *METRICS)}


def _metric_name(m: MetricSpec) -> str:
    if isinstance(m, str):
        return m
    if isinstance(m, tuple):
        return f"{m[0]}[{m[1]}-{m[2]}]"
    return getattr(m, "__name__", "metric")


def _recovery_s(r: SimResult) -> float:
    """The summary's ``recovery_s`` (computed by the simulator for any topology): seconds
    from the end of the disturbance (Basketly: the hiccup) to recovery; ``inf`` if never."""
    v = r.summary.get("recovery_s")
    return math.inf if v is None else float(v)


def _read(r: SimResult, m: MetricSpec) -> float:
    """One metric of one run as a float (NaN when it does not apply)."""
    if callable(m) and not isinstance(m, str):
        v = m(r)
    elif isinstance(m, tuple):
        col, start, end = m
        v = r.mean(col, start, end)
    elif m == "recovery_s":
        v = _recovery_s(r)
    elif m in _METRIC_KEYS:
        v = _METRIC_KEYS[m].read(r, windows(r))
        if isinstance(v, str):
            v = math.nan
    elif m in r and isinstance(r.summary.get("disturbance"), dict):
        w = windows(r)
        v = r.mean(m, w.during_start, w.during_end)
    elif m in r:
        col = [x for x in r.column(m) if x is not None]
        v = sum(col) / len(col) if col else None
    else:
        raise KeyError(f"no metric or column {m!r}")
    return math.nan if v is None else float(v)


@dataclass(frozen=True)
class Cell:
    """One cell of a sweep: a labelled run description, run once per seed."""

    #: The preset (or topology label).
    setting: str
    #: Parameter values of this cell, in the grid's order.
    params: tuple[tuple[str, Any], ...]
    #: Basketly overrides (``"key=value"``).
    overrides: tuple[str, ...] = ()
    #: Basketly timeline: (clock time, overrides) pairs.
    timeline: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: For a topology sweep: the topology dict (JSON text).
    topology: Optional[str] = None


def _run_cell(cell: Cell, seed: int, until: Optional[str], duration: Optional[float],
              metrics: Sequence[MetricSpec]) -> list[float]:
    """Run one cell with one seed and read its metrics (also what a Ray task runs)."""
    if cell.topology is not None:
        run = Run.topology(cell.topology, seed, until, duration=None if until else duration,
                           label=cell.setting)
    else:
        run = Run.basketly(cell.setting, seed, until, overrides=list(cell.overrides),
                           timeline=[(t, list(s)) for t, s in cell.timeline])
    r = run.finish()
    return [_read(r, m) for m in metrics]


def _stats(values: Sequence[float]) -> dict[str, float]:
    """Mean, sample standard deviation, min and max of the finite values; ``n`` of them."""
    xs = [v for v in values if not math.isnan(v)]
    n = len(xs)
    if n == 0:
        return {"mean": math.nan, "sd": math.nan, "min": math.nan, "max": math.nan, "n": 0}
    mean = math.fsum(xs) / n
    if any(math.isinf(x) for x in xs):
        sd = math.nan
    else:
        sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "sd": sd, "min": min(xs), "max": max(xs), "n": n}


class Sweep:
    """The outcome of a sweep: per cell and metric, the value of every seed and their
    ``mean``, ``sd`` (sample standard deviation), ``min``, ``max`` and ``n``.

    ``rows()``, ``table()``, ``to_dict()``, ``to_csv()``, ``values(...)``, ``plot(path)``.
    """

    def __init__(self, cells: Sequence[Cell], seeds: Sequence[int], metrics: Sequence[str],
                 values: Mapping[tuple[int, int], Sequence[float]]) -> None:
        self.cells = list(cells)
        """The cells of the grid, in order."""
        self.seeds = list(seeds)
        """The seeds each cell ran with."""
        self.metrics = list(metrics)
        """The metrics read from every run."""
        #: (cell index, seed index) -> one value per metric.
        self._values = {k: list(v) for k, v in values.items()}

    @property
    def params(self) -> list[str]:
        """The parameter names, in the grid's order."""
        return [k for k, _ in self.cells[0].params] if self.cells else []

    def values(self, cell: int, metric: str) -> list[float]:
        """The value of ``metric`` in cell ``cell`` for every seed, in seed order."""
        k = self.metrics.index(metric)
        return [self._values[(cell, s)][k] for s in range(len(self.seeds))]

    def rows(self) -> list[dict[str, Any]]:
        """One dict per cell: ``setting``, each parameter, and per metric its
        ``<metric>`` (mean), ``<metric>_sd``, ``<metric>_min``, ``<metric>_max``."""
        out = []
        for i, cell in enumerate(self.cells):
            row: dict[str, Any] = {"setting": cell.setting}
            row.update(dict(cell.params))
            for m in self.metrics:
                st = _stats(self.values(i, m))
                row[m] = st["mean"]
                row[f"{m}_sd"] = st["sd"]
                row[f"{m}_min"] = st["min"]
                row[f"{m}_max"] = st["max"]
                row[f"{m}_n"] = st["n"]
            out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain data: seeds, metrics, parameters, rows and every value."""
        return {
            "seeds": self.seeds,
            "metrics": self.metrics,
            "params": self.params,
            "rows": self.rows(),
            "values": {
                str(i): {m: self.values(i, m) for m in self.metrics} for i in range(len(self.cells))
            },
        }

    def to_csv(self) -> str:
        """The :meth:`rows` as CSV, a header line first."""
        rows = self.rows()
        buf = io.StringIO()
        if rows:
            w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        return buf.getvalue()

    def table(self) -> str:
        """Mean ± sd [min..max] per cell and metric, one row per cell."""
        def fmt(v: float) -> str:
            if math.isnan(v):
                return "-"
            if math.isinf(v):
                return "never"
            return f"{v:,.1f}" if abs(v) < 1000 else f"{v:,.0f}"

        head = ["setting", *self.params, *self.metrics]
        lines = []
        for row in self.rows():
            cells = [str(row["setting"]), *[str(row[p]) for p in self.params]]
            for m in self.metrics:
                if math.isinf(row[f"{m}_max"]) or math.isinf(row[m]):
                    cells.append(f"{fmt(row[m])} [{fmt(row[m + '_min'])}..{fmt(row[m + '_max'])}]")
                else:
                    cells.append(f"{fmt(row[m])} ± {fmt(row[m + '_sd'])} "
                                 f"[{fmt(row[m + '_min'])}..{fmt(row[m + '_max'])}]")
            lines.append(cells)
        widths = [max(len(h), *(len(c[i]) for c in lines)) if lines else len(h)
                  for i, h in enumerate(head)]
        out = [f"{len(self.seeds)} seeds per cell ({self.seeds[0]}..{self.seeds[-1]}); "
               "mean ± sd [min..max]" if self.seeds else "no seeds"]
        out.append("  ".join(h.ljust(w) for h, w in zip(head, widths)))
        for c in lines:
            out.append("  ".join(x.ljust(w) for x, w in zip(c, widths)))
        return "\n".join(out) + "\n"

    def plot(self, path: Union[str, "os.PathLike[str]"], metric: Optional[str] = None, *,
             title: Optional[str] = None) -> None:
        """Plot ``metric`` (default the first): a heatmap over two parameters, a line with
        its seed range over one, bars otherwise (one per cell), with matplotlib."""
        from . import plot as _plot

        _plot.plot_sweep(self, path, metric or self.metrics[0], title=title)


def _grid(params: Optional[Mapping[Any, Sequence[Any]]]) -> list[tuple[tuple[Any, Any], ...]]:
    if not params:
        return [()]
    if not isinstance(params, Mapping):
        raise TypeError("`params` must be a dict of parameter -> list of values")
    keys = list(params)
    for k in keys:
        vs = params[k]
        if isinstance(vs, (str, bytes)) or not isinstance(vs, Sequence) or len(vs) == 0:
            raise TypeError(f"`params[{k!r}]` must be a non-empty list of values")
    return [tuple(zip(keys, combo)) for combo in itertools.product(*(params[k] for k in keys))]


def _param_label(k: Any) -> str:
    return "/".join(map(str, k)) if isinstance(k, tuple) else str(k)


def _cells(settings: Sequence[Any], params: Optional[Mapping[Any, Sequence[Any]]],
           overrides: Sequence[str], timeline: Any) -> list[Cell]:
    cells = []
    changes = tuple((t, tuple(s)) for t, s in _args.basketly_timeline(timeline))
    for s in settings:
        for combo in _grid(params):
            labelled = tuple((_param_label(k), v) for k, v in combo)
            if isinstance(s, str):
                sets = list(overrides)
                for k, v in combo:
                    if not isinstance(k, str):
                        raise TypeError("a Basketly sweep takes override keys (str) as parameters")
                    sets.append(_args.override_text(k, v))
                cells.append(Cell(s, labelled, tuple(sets), changes))
            else:
                label, topo = s if isinstance(s, tuple) else ("custom", s)
                base = topo if isinstance(topo, Mapping) else None
                if base is None:
                    raise TypeError("a topology in `settings` must be a dict (or a (label, dict) pair)")
                for k, v in combo:
                    path = k if isinstance(k, tuple) else tuple(str(k).split("/"))
                    patch: Any = v
                    for part in reversed(path):
                        patch = {part: patch}
                    base = _args.merge_patch(base, patch)
                cells.append(Cell(label, labelled, topology=_args.topology_text(base)))
    return cells


def _execute(cells: Sequence[Cell], seeds: Sequence[int], metrics: Sequence[MetricSpec],
             until: Optional[str], duration: Optional[float], backend: str,
             jobs: Optional[int], progress: Progress, desc: str) -> dict[tuple[int, int], list[float]]:
    tasks = [(c, s) for c in range(len(cells)) for s in range(len(seeds))]
    cb, bar = callback(progress, desc)
    out: dict[tuple[int, int], list[float]] = {}
    try:
        if backend == "ray":
            try:
                import ray  # type: ignore[import-not-found, unused-ignore]
            except ImportError as e:
                raise ImportError(
                    "backend='ray' needs Ray: pip install 'guards[ray]'"
                ) from e
            if not ray.is_initialized():
                ray.init()
            remote = ray.remote(_run_cell)
            refs = {remote.remote(cells[c], seeds[s], until, duration, list(metrics)): (c, s)
                    for c, s in tasks}
            pending = list(refs)
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    out[refs[ref]] = ray.get(ref)
                if cb is not None:
                    cb(len(out) / len(tasks))
        elif backend == "local":
            n = jobs if jobs is not None else (os.cpu_count() or 1)
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError(f"`jobs` must be a positive int, not {jobs!r}")
            lock = threading.Lock()

            def one(task: tuple[int, int]) -> None:
                c, s = task
                v = _run_cell(cells[c], seeds[s], until, duration, metrics)
                with lock:
                    out[task] = v
                    done = len(out)
                if cb is not None:
                    cb(done / len(tasks))

            with ThreadPoolExecutor(max_workers=min(n, len(tasks)) or 1) as ex:
                for f in [ex.submit(one, t) for t in tasks]:
                    f.result()
        else:
            raise ValueError(f"`backend` must be 'local' or 'ray', not {backend!r}")
    finally:
        if bar is not None:
            bar.close()
    return out


def sweep(
    settings: Union[str, Sequence[Any]] = ("C8",),
    params: Optional[Mapping[Any, Sequence[Any]]] = None,
    seeds: Iterable[int] = range(1, 11),
    metrics: Optional[Sequence[MetricSpec]] = None,
    *,
    until: Optional[_args.ClockTime] = None,
    duration: Optional[float] = None,
    overrides: Any = None,
    timeline: Any = None,
    backend: str = "local",
    jobs: Optional[int] = None,
    progress: Progress = None,
) -> Sweep:
    """Run every cell of a grid with every seed and sum it up per cell.

    ``settings`` are Basketly preset names, or topologies (dicts, or ``(label, dict)``
    pairs). ``params`` maps a parameter to the values to try: for presets an override key
    (``{"breaker.failure_rate_threshold": [0.3, 0.5, 0.7], "budget.ratio": [0.05, 0.1, 0.2]}``),
    for topologies a path into the topology as a tuple of keys, names for services,
    edges, entries and operations (``("edges", "web->api", "policy", "attempt_timeout")``). The
    grid is every combination, for every setting. ``metrics`` (default
    :data:`DEFAULT_METRICS` for Basketly) are metric keys of :func:`guards.sim.compare`,
    column names, ``(column, start, end)`` windows or callables; ``recovery_s`` is the
    seconds from the hiccup's end to recovery (``inf``: never).

    ``backend="local"`` runs ``jobs`` at a time on threads (default: every core; each run
    releases the GIL); ``backend="ray"`` sends each run to a Ray cluster (``pip install
    'guards[ray]'``; ``ray.init()`` is called if Ray is not initialised, which joins the
    cluster in ``RAY_ADDRESS`` or starts a local one). ``progress=True`` draws a bar.
    """
    if isinstance(settings, (str, Mapping)):
        settings = [settings]
    seeds = list(seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise ValueError("`seeds` must be a non-empty list of non-negative ints")
    if metrics is None:
        metrics = DEFAULT_METRICS
    if isinstance(metrics, str) or not isinstance(metrics, Sequence) or not metrics:
        raise TypeError("`metrics` must be a non-empty list")
    until_text = None if until is None else _args.clock_text("until", until)
    sets = _args.override_list(overrides, {})
    cells = _cells(list(settings), params, sets, timeline)
    # Check every cell before any work: a bad name or value fails at once.
    for c in cells:
        if c.topology is None:
            Run.basketly(c.setting, seeds[0], until_text, overrides=list(c.overrides),
                         timeline=[(t, list(s)) for t, s in c.timeline])
    values = _execute(cells, seeds, list(metrics), until_text, duration, backend, jobs,
                      progress, "sweep")
    return Sweep(cells, seeds, [_metric_name(m) for m in metrics], values)


def each_guard_alone(
    seeds: Iterable[int] = range(1, 4),
    switch_at: _args.ClockTime = "20:00:25",
    until: _args.ClockTime = "20:02:00",
    *,
    backend: str = "local",
    jobs: Optional[int] = None,
    progress: Progress = None,
) -> Sweep:
    """Each guard of the C line alone on the as-shipped settings (C0): switched on from
    the start (does it prevent the outage?) and at ``switch_at`` (default 20:00:25, after
    the hiccup, when C0's outage feeds itself: does it end it?). Metrics: goodput during
    the hiccup and over the last minute, and ``recovery_s``."""
    at = _args.clock_text("switch_at", switch_at)
    end = _args.clock_text("until", until)
    cells = [Cell("C0", (("guard", "none"), ("on", "-")))]
    for name, (_, sets) in GUARDS.items():
        cells.append(Cell("C0", (("guard", name), ("on", "from the start")), tuple(sets)))
        cells.append(Cell("C0", (("guard", name), ("on", f"at {at}")), (), ((at, tuple(sets)),)))
    last_min = _args.format_clock(_args.clock_ns("until", end) - 60_000_000_000)
    metrics: list[MetricSpec] = [
        "goodput", ("goodput", last_min, end), "recovery_s",
    ]
    values = _execute(cells, list(seeds), metrics, end, None, backend, jobs, progress,
                      "each guard alone")
    names = ["goodput_hiccup", "goodput_last_minute", "recovery_s"]
    return Sweep(cells, list(seeds), names, values)
