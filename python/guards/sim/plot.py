"""Plots of runs and comparisons with matplotlib (the ``sim`` extra:
``pip install 'guards[sim]'``). Only matplotlib's object API is used (no pyplot, no
display): figures go straight to a file whose extension picks the format."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from . import _args

if TYPE_CHECKING:
    from .compare import Comparison
    from .result import SimResult

__all__ = ["plot_result", "plot_comparison", "plot_sweep", "PlotUnavailable", "available"]

_Path = Union[str, "os.PathLike[str]"]

INSTALL_HINT = "plotting needs matplotlib: pip install 'guards[sim]' (or pip install matplotlib)"


class PlotUnavailable(ImportError):
    """matplotlib is not installed."""


def available() -> bool:
    """Whether matplotlib can be imported."""
    try:
        _figure()
    except PlotUnavailable:
        return False
    return True


def _figure() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise PlotUnavailable(INSTALL_HINT) from e
    return Figure


def _clock_axis(ax: Any) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    def fmt(x: float, _pos: object) -> str:
        return _args.format_clock(max(0, round(x * 1e9)))

    ax.xaxis.set_major_locator(MaxNLocator(nbins=8, steps=[1, 2, 5, 10]))
    ax.xaxis.set_major_formatter(FuncFormatter(fmt))


def _shade_disturbance(ax: Any, result: "SimResult", label: bool = True) -> None:
    """Shade the run's disturbance (its topology's slowdowns; Basketly's hiccup)."""
    dist = result.summary.get("disturbance")
    if not isinstance(dist, dict):
        return
    a = _args.clock_ns("disturbance", dist["start"]) / 1e9
    b = _args.clock_ns("disturbance", dist["end"]) / 1e9
    name = "hiccup" if result.config is not None else "slowdown"
    ax.axvspan(a, b, color="0.9", zorder=0, label=name if label else None)


def _sum_columns(result: "SimResult", names: Sequence[str]) -> list[float]:
    """Per interval, the sum of the named columns (missing values count 0)."""
    out = [0.0] * len(result)
    for n in names:
        for i, v in enumerate(result.column(n)):
            out[i] += 0.0 if v is None else float(v)
    return out


def _entry_names(result: "SimResult") -> list[str]:
    return [n[len("entry."):-len(".offered")] for n in result.names
            if n.startswith("entry.") and n.endswith(".offered")]


def _good(result: "SimResult") -> tuple[list[float], list[float], list[float]]:
    """Offered, full answers and full + degraded answers per interval: the Basketly
    series when the result has them, else summed over every entry."""
    if "goodput" in result:
        return (
            [float(v or 0) for v in result.column("offered")],
            [float(v or 0) for v in result.column("goodput")],
            [float(v or 0) for v in result.column("goodput_incl_degraded")],
        )
    es = _entry_names(result)
    full = _sum_columns(result, [f"entry.{e}.full" for e in es])
    degraded = _sum_columns(result, [f"entry.{e}.degraded" for e in es])
    return (
        _sum_columns(result, [f"entry.{e}.offered" for e in es]),
        full,
        [f + d for f, d in zip(full, degraded)],
    )


def _mid(result: "SimResult") -> list[float]:
    """Interval midpoints: a count over [t, t + interval) is drawn in the middle."""
    half = result.interval_s / 2
    return [t + half for t in result.times]


def _check_path(path: _Path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` must be a file path, not {type(path).__name__}")
    return os.fspath(path)


def _save(fig: Any, path: str) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_result(
    result: "SimResult",
    path: _Path,
    columns: Optional[Sequence[str]] = None,
    *,
    title: Optional[str] = None,
) -> Any:
    """One run: with ``columns``, those columns in one panel; else (Basketly) goodput and
    load, the work reaching stock and the database, and the queues, in three panels; any
    other topology shows each entry's offered, full and degraded answers and the queues.
    Returns the matplotlib ``Figure``."""
    p = _check_path(path)
    Figure = _figure()
    x = _mid(result)
    if columns is not None:
        if isinstance(columns, str):
            raise TypeError("`columns` must be a list of column names, not a str")
        for c in columns:
            result.column(c)  # KeyError for an unknown column
        panels = [("", list(columns), False)]
    elif "goodput" in result:
        top = ["offered", "goodput"]
        if any(result.column("degraded_cart")):
            top.append("goodput_incl_degraded")
        panels = [
            ("actions per interval", top, False),
            ("work per interval", ["stock_calls", "db_done", "db_stale"], True),
            ("waiting (end of interval)", ["shopapi_queue", "inside_stock", "conn_wait"], True),
        ]
    else:
        # Any topology: each entry's actions offered, answered in full and answered
        # degraded (a brownout's fallback), then the queues.
        entries = [n for n in result.names
                   if n.startswith("entry.") and n.endswith((".offered", ".full", ".degraded"))
                   and (not n.endswith(".degraded") or any(result.column(n)))]
        queues = [n for n in result.names if n.startswith("svc.") and n.endswith(".queue")]
        panels = [("actions per interval", entries, False)]
        if queues:
            panels.append(("queued (end of interval)", queues, True))
    fig = Figure(figsize=(11, 2.8 * len(panels) + 0.6))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for k, (ax, (ylabel, cols, log)) in enumerate(zip(axes, panels)):
        _shade_disturbance(ax, result, label=k == 0)
        drawn = False
        for c in cols:
            if c not in result:
                continue
            ys = [float("nan") if v is None else v for v in result.column(c)]
            if log and not any(ys):
                continue
            ax.plot(x, ys, label=c, linewidth=1.4)
            drawn = True
        if log and drawn:
            ax.set_yscale("symlog", linthresh=10)
        ax.set_ylim(bottom=0)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        if drawn:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    _clock_axis(axes[-1])
    fig.suptitle(title or f"{result.setting}, seed {result.seed}")
    _save(fig, p)
    return fig


def plot_comparison(cmp: "Comparison", path: _Path, *, title: Optional[str] = None) -> Any:
    """Full answers of every run over time (dashed: with degraded answers, where there are
    any), and the calls each run makes: calls to stock for Basketly, calls over every
    edge for any other topology. Returns the matplotlib ``Figure``."""
    p = _check_path(path)
    Figure = _figure()
    fig = Figure(figsize=(11, 7.5))
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    first = next(iter(cmp.results.values()))
    _shade_disturbance(top, first)
    _shade_disturbance(bottom, first, label=False)
    offered, _, _ = _good(first)
    top.plot(_mid(first), offered, color="0.5", linestyle=":", linewidth=1.2, label="offered")
    basketly = all("stock_calls" in r for r in cmp.results.values())
    for setting, r in cmp.results.items():
        _, full, with_degraded = _good(r)
        (line,) = top.plot(_mid(r), full, linewidth=1.5, label=setting)
        if any(d > f for d, f in zip(with_degraded, full)):
            top.plot(_mid(r), with_degraded, linewidth=1.0, linestyle="--", color=line.get_color(),
                     label=f"{setting} incl. degraded")
        calls = (r.column("stock_calls") if basketly
                 else _sum_columns(r, [n for n in r.names if n.startswith("edge.") and n.endswith(".calls")]))
        bottom.plot(_mid(r), calls, linewidth=1.2, color=line.get_color(), label=setting)
    top.set_ylabel("full answers per interval")
    top.set_ylim(bottom=0)
    top.grid(True, alpha=0.3)
    top.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")
    bottom.set_ylabel("calls to stock per interval" if basketly else "calls over all edges per interval")
    bottom.set_yscale("symlog", linthresh=100)
    bottom.set_ylim(bottom=0)
    bottom.grid(True, alpha=0.3)
    _clock_axis(bottom)
    what = "Basketly: goodput by setting" if basketly else "full answers by run"
    fig.suptitle(title or f"{what} (seed {cmp.seed}; grey band: the disturbance)")
    _save(fig, p)
    return fig


def plot_sweep(sw: Any, path: _Path, metric: str, *, title: Optional[str] = None) -> None:
    """A sweep's ``metric``: a heatmap of the mean over two parameters (one panel per
    setting), a line of the mean with its min-max band over one, bars otherwise."""
    p = _check_path(path)
    Figure = _figure()
    if metric not in sw.metrics:
        raise KeyError(metric)
    rows = sw.rows()
    params = sw.params
    settings = list(dict.fromkeys(r["setting"] for r in rows))
    if len(params) == 2:
        xs = list(dict.fromkeys(r[params[0]] for r in rows))
        ys = list(dict.fromkeys(r[params[1]] for r in rows))
        fig = Figure(figsize=(5.5 * len(settings), 4.5))
        axes = fig.subplots(1, len(settings), squeeze=False)[0]
        for ax, s in zip(axes, settings):
            grid = [[float("nan")] * len(xs) for _ in ys]
            for r in rows:
                if r["setting"] == s:
                    grid[ys.index(r[params[1]])][xs.index(r[params[0]])] = r[metric]
            im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
            ax.set_xticks(range(len(xs)), [str(x) for x in xs])
            ax.set_yticks(range(len(ys)), [str(y) for y in ys])
            ax.set_xlabel(params[0])
            ax.set_ylabel(params[1])
            for j, row in enumerate(grid):
                for i, v in enumerate(row):
                    ax.text(i, j, f"{v:.1f}", ha="center", va="center", color="w", fontsize="small")
            ax.set_title(s)
            fig.colorbar(im, ax=ax, label=f"{metric} (mean over {len(sw.seeds)} seeds)")
    elif len(params) == 1:
        fig = Figure(figsize=(8, 4.5))
        ax = fig.subplots()
        for s in settings:
            rs = [r for r in rows if r["setting"] == s]
            xs = [str(r[params[0]]) for r in rs]
            ax.plot(xs, [r[metric] for r in rs], marker="o", label=s)
            ax.fill_between(xs, [r[f"{metric}_min"] for r in rs], [r[f"{metric}_max"] for r in rs],
                            alpha=0.2)
        ax.set_xlabel(params[0])
        ax.set_ylabel(f"{metric} (mean, min-max over {len(sw.seeds)} seeds)")
        ax.grid(True, alpha=0.3)
        ax.legend()
    else:
        fig = Figure(figsize=(max(6, 0.6 * len(rows) + 2), 4.5))
        ax = fig.subplots()
        labels = [" ".join([r["setting"], *[str(r[k]) for k in params]]) for r in rows]
        means = [r[metric] for r in rows]
        err = [[m - r[f"{metric}_min"] for m, r in zip(means, rows)],
               [r[f"{metric}_max"] - m for m, r in zip(means, rows)]]
        ax.bar(range(len(rows)), means, yerr=err, capsize=3)
        ax.set_xticks(range(len(rows)), labels, rotation=45, ha="right")
        ax.set_ylabel(f"{metric} (mean, min-max over {len(sw.seeds)} seeds)")
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(title or f"sweep: {metric}")
    _save(fig, p)
