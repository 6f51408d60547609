"""`SimResult`: the per-interval columns and summary of one simulated run."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Union

from .. import _guards as _native
from . import _args

if TYPE_CHECKING:
    from .._guards import _SimResult

__all__ = ["SimResult", "Number", "Trace"]

#: A column value: counts are ``int``, averages ``float``, a missing value ``None``.
Number = Union[int, float, None]

# The per-second table's default columns: (series, header).
TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("offered", "offered"),
    ("app_attempts", "attempts"),
    ("goodput", "goodput"),
    ("goodput_incl_degraded", "+degr"),
    ("goodput_checkout", "checkout"),
    ("degraded_cart", "degraded"),
    ("stock_calls", "stock"),
    ("stock_refused", "refused"),
    ("budget_refusals", "budget"),
    ("breaker_rejections", "breaker"),
    ("bulkhead_rejections", "gate"),
    ("db_done", "db_done"),
    ("db_stale", "db_stale"),
    ("duplicate_commits", "dup"),
    ("shopapi_queue", "queue"),
    ("inside_stock", "in_stock"),
    ("conn_wait", "conn_wait"),
    ("shopapi_busy", "busy"),
    ("breakers_open", "open"),
    ("reads_served", "reads"),
)

TABLE_LEGEND: dict[str, str] = {
    "offered": "actions offered",
    "app_attempts": "app attempts to shop-api",
    "goodput": "actions answered in full within the app deadline",
    "goodput_incl_degraded": "goodput plus cart views served without badges",
    "goodput_checkout": "checkouts confirmed",
    "degraded_cart": "cart views served without badges",
    "stock_calls": "shop-api -> stock attempts (retries, probes, hedges included)",
    "stock_refused": "stock calls refused as overloaded (503)",
    "budget_refusals": "retries refused by the retry budget",
    "breaker_rejections": "stock calls refused by an open breaker",
    "bulkhead_rejections": "stock calls refused by the bulkhead",
    "db_done": "database queries finished",
    "db_stale": "database queries finished for callers who had left",
    "duplicate_commits": "reserves committed more than once",
    "shopapi_queue": "requests queued in shop-api (end of interval)",
    "inside_stock": "calls inside stock (end of interval)",
    "conn_wait": "queries waiting for a connection (end of interval)",
    "shopapi_busy": "shop-api threads busy (time average)",
    "breakers_open": "breakers open (end of interval)",
    "reads_served": "Replay P: agent reads served",
}


def _fmt(v: Number, width: int) -> str:
    if v is None:
        text = "-"
    elif isinstance(v, int):
        text = str(v)
    else:
        text = f"{v:.1f}"
    return text.rjust(width)


def format_number(v: object) -> str:
    """A summary value for people: thousands separators, 3 significant digits."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        a = abs(v)
        if a == 0:
            return "0"
        if a >= 1000:
            return f"{v:,.0f}"
        if a >= 100:
            return f"{v:.0f}"
        if a >= 10:
            return f"{v:.1f}"
        if a >= 1:
            return f"{v:.2f}"
        return f"{v:.3g}"
    return str(v)


class Trace:
    """The events of one traced action: ``entry``, ``root`` (the action's number),
    ``start`` (clock time), ``events`` (dicts with ``t``, ``depth``, ``place``,
    ``event``, ``text`` and the event's details), and :meth:`timeline`."""

    __slots__ = ("root", "entry", "start", "events", "_text")

    def __init__(self, data: dict[str, Any], text: str) -> None:
        self.root: int = data["root"]
        """The traced action's number."""
        self.entry: str = data["entry"]
        """The entry the action came in through."""
        self.start: str = data["start"]
        """The clock time the action started."""
        self.events: list[dict[str, Any]] = data["events"]
        """One dict per event: ``t``, ``depth``, ``place``, ``event``, ``text`` and the
        event's details."""
        self._text = text

    def timeline(self) -> str:
        """One line per event: time, the call (indented one step per hop), what happened."""
        return self._text

    def __str__(self) -> str:
        return f"{self.entry} #{self.root}, started {self.start}:\n{self._text}"

    def __repr__(self) -> str:
        return f"Trace({self.entry!r}, root={self.root}, {len(self.events)} events)"


class SimResult:
    """The output of one run: per-interval columns, clock labels and a summary.

    * ``series``: the JSON's ``series``, a dict of lists: ``"t"`` (clock labels
      ``"HH:MM:SS"`` of the interval starts) and every column by name (the Basketly series
      such as ``"goodput"`` first, then the generic ``entry.*``, ``edge.*`` and ``svc.*``
      columns). Counts are per interval; queues and ``inside`` are read at the interval's
      end; ``*busy`` is a time average. Integral values are ``int``.
    * ``t``: the clock labels; ``times``: the interval starts as seconds since midnight.
    * ``summary``: a dict computed by the simulator for any topology: ``disturbance``
      (``start``/``end`` of its slowdowns, or ``None``), ``recovered_at``, ``entries``
      (per entry ``offered``, ``full``, ``degraded``, ``failed``, ``goodput``,
      ``goodput_incl_degraded``), ``latency_ms`` (per recording edge ``p50``/``p95``/
      ``p99``/``p999``/``mean``/``count``), ``edges`` (``calls``, ``first``,
      ``calls_per_first_attempt``, ``extra_load``), ``events``, ``peak_calls``; Basketly
      results put their own first: ``recovered_at`` over the three request types,
      ``stock_latency_ms``, ``stock_over_5ms``, ``extra_load``,
      ``stock_calls_per_first_attempt``.
    * ``to_json()``, ``to_csv()``, ``to_dict()`` (equal to ``json.loads(to_json())``),
      ``table()``, ``plot(path)``; ``mean``/``sum``/``at`` over clock-time windows.
    """

    __slots__ = ("_r", "_series", "_summary", "_traces", "config")

    def __init__(self, native: _SimResult, config: dict[str, Any] | None = None) -> None:
        if not isinstance(native, _native._SimResult):
            raise TypeError("SimResult is made by guards.sim.basketly/simulate/Run, not directly")
        self._r = native
        self._series: dict[str, list[Any]] | None = None
        self._summary: dict[str, Any] | None = None
        self._traces: list[Trace] | None = None
        #: For a Basketly run, its settings (windows and rates); else ``None``.
        self.config = config

    # ------------------------------------------------------------ identity

    @property
    def setting(self) -> str:
        """The preset name, or the topology's label."""
        return self._r.setting

    @property
    def seed(self) -> int:
        """The seed of the run."""
        return self._r.seed

    @property
    def interval_s(self) -> float:
        """Interval length in seconds."""
        return self._r.interval_s

    @property
    def start_ns(self) -> int:
        """Start of the first interval, nanoseconds since midnight."""
        return self._r.start_ns

    @property
    def interval_ns(self) -> int:
        """Interval length in nanoseconds."""
        return self._r.interval_ns

    @property
    def events(self) -> int:
        """Events the engine processed."""
        return self._r.events

    @property
    def stopped(self) -> dict[str, Any] | None:
        """Where and why a limit (``max_memory_mb``, ``max_events``) stopped the run
        early: ``{"at", "reason", "limit", "message"}``; ``None`` for a complete run.
        The intervals kept are complete."""
        return self._r.stopped

    @property
    def traces(self) -> list[Trace]:
        """The traced actions (``trace=`` of the run), in the order they started."""
        if self._traces is None:
            data = json.loads(self._r.traces_json())
            self._traces = [Trace(d, t) for d, t in zip(data, self._r.trace_timelines())]
        return self._traces

    def __len__(self) -> int:
        return len(self._r)

    def __repr__(self) -> str:
        return f"SimResult({self.setting!r}, seed={self.seed}, {len(self)} intervals)"

    # ------------------------------------------------------------ data

    @property
    def series(self) -> dict[str, list[Any]]:
        """``{"t": [...labels...], NAME: [...values...], ...}`` as in the JSON."""
        if self._series is None:
            s: dict[str, list[Any]] = {"t": self._r.labels()}
            s.update(self._r.columns())
            self._series = s
        return self._series

    @property
    def t(self) -> list[str]:
        """Clock labels (``"HH:MM:SS"``) of the interval starts."""
        return self.series["t"]

    @property
    def times(self) -> list[float]:
        """Interval starts as seconds since midnight (exact for sub-second intervals)."""
        start, step = self._r.start_ns, self._r.interval_ns
        return [(start + i * step) / 1e9 for i in range(len(self))]

    def labels(self, millis: bool = False) -> list[str]:
        """Clock labels; ``millis=True`` adds ``.mmm`` (for sub-second intervals)."""
        if not millis:
            return self.t
        start, step = self._r.start_ns, self._r.interval_ns
        return [_args.format_clock(start + i * step, True) for i in range(len(self))]

    @property
    def names(self) -> list[str]:
        """Column names, in output order (without ``"t"``)."""
        return self._r.names()

    def column(self, name: str) -> list[Number]:
        """One column; ``KeyError`` if there is no such column."""
        col = self._r.column(name)
        if col is None:
            raise KeyError(name)
        return col

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._r.column(name) is not None

    @property
    def summary(self) -> dict[str, Any]:
        """The summary the simulator computed (see the class docstring for its keys)."""
        if self._summary is None:
            self._summary = self._r.summary()
        return self._summary

    def mean(self, name: str, start: str, end: str) -> float | None:
        """Mean of column ``name`` over the intervals starting in ``[start, end)``
        (clock times), or ``None`` when the window holds no interval; ``KeyError`` for an
        unknown column."""
        self._check_name(name)
        return self._r.mean(name, start, end)

    def sum(self, name: str, start: str, end: str) -> float | None:
        """Sum of column ``name`` over the intervals starting in ``[start, end)``."""
        self._check_name(name)
        return self._r.sum(name, start, end)

    def at(self, name: str, time: str) -> float | None:
        """The value of column ``name`` in the interval containing clock time ``time``."""
        self._check_name(name)
        return self._r.at(name, time)

    def latencies(self, edge: str, attempts: bool = False) -> list[float]:
        """Latencies in milliseconds of the whole successful calls over ``edge`` (single
        successful attempts with ``attempts=True``), in completion order; ``KeyError`` if
        the edge did not record them (Basketly records ``shop-api->stock.view`` and
        ``shop-api->stock.reserve``)."""
        if not isinstance(attempts, bool):
            raise TypeError(f"`attempts` must be a bool, not {type(attempts).__name__}")
        ns = self._r.latencies_ns(edge, attempts)
        if ns is None:
            raise KeyError(edge)
        return [x / 1e6 for x in ns]

    def _check_name(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"`name` must be a column name (str), not {type(name).__name__}")
        if self._r.column(name) is None:
            raise KeyError(name)

    # ------------------------------------------------------------ output

    def to_json(self, indent: int | None = None) -> str:
        """The result as JSON: ``{"setting", "seed", "interval_s", "series": {"t": [...],
        NAME: [...]}, "summary": {...}}``. Compact and byte-for-byte reproducible by
        default; ``indent`` pretty-prints it."""
        text = self._r.to_json()
        if indent is None:
            return text
        return json.dumps(json.loads(text), indent=indent)

    def to_dict(self) -> dict[str, Any]:
        """The JSON's structure as Python objects."""
        return {
            "setting": self.setting,
            "seed": self.seed,
            "interval_s": self.interval_s,
            "series": {k: list(v) for k, v in self.series.items()},
            "summary": json.loads(json.dumps(self.summary)),
        }

    def to_csv(self) -> str:
        """The columns as CSV, first column ``t``."""
        return self._r.to_csv()

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the result to ``path``: CSV if it ends in ``.csv``, else JSON."""
        p = os.fspath(path)
        text = self.to_csv() if p.lower().endswith(".csv") else self.to_json()
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
            if not text.endswith("\n"):
                f.write("\n")

    def table(
        self,
        columns: Iterable[str] | None = None,
        *,
        skip_zero: bool = True,
        legend: bool = True,
    ) -> str:
        """A fixed-width table, one row per interval.

        ``columns`` are column names (default: the Basketly series that matter, with short
        headers explained in a legend below, leaving out those that stay 0 throughout when
        ``skip_zero``). Sub-second intervals are labelled with milliseconds.
        """
        if columns is None:
            chosen = [(n, h) for n, h in TABLE_COLUMNS if n in self]
            if skip_zero:
                chosen = [(n, h) for n, h in chosen if any(self.column(n))]
                if "degraded_cart" in self and not any(self.column("degraded_cart")):
                    # Without degraded answers it is the goodput column again.
                    chosen = [(n, h) for n, h in chosen if n != "goodput_incl_degraded"]
            if not chosen:
                chosen = [(n, n) for n in self.names]
        else:
            if isinstance(columns, str):
                raise TypeError("`columns` must be a list of column names, not a str")
            chosen = []
            for n in columns:
                if not isinstance(n, str):
                    raise TypeError(f"`columns` items must be str, not {type(n).__name__}")
                self._check_name(n)
                chosen.append((n, n))
        sub_second = self._r.interval_ns % 1_000_000_000 != 0
        labels = self.labels(millis=sub_second)
        tw = max([len(x) for x in labels] + [1])
        cols = [(h, self.column(n)) for n, h in chosen]
        widths = [
            max(len(h), max((len(_fmt(v, 0)) for v in c), default=1)) for h, c in cols
        ]
        lines = ["t".ljust(tw) + "".join(" " + h.rjust(w) for (h, _), w in zip(cols, widths))]
        for i, label in enumerate(labels):
            lines.append(label.ljust(tw) + "".join(" " + _fmt(c[i], w) for (_, c), w in zip(cols, widths)))
        out = "\n".join(lines) + "\n"
        if legend and columns is None:
            used = [(h, TABLE_LEGEND.get(n, n)) for n, h in chosen if h != n or n in TABLE_LEGEND]
            if used:
                hw = max(len(h) for h, _ in used)
                out += "\n" + "\n".join(f"  {h.ljust(hw)}  {d}" for h, d in used) + "\n"
            omitted = [h for n, h in TABLE_COLUMNS if n in self and not any(self.column(n))]
            if omitted:
                out += f"  (0 throughout, not shown: {', '.join(omitted)})\n"
        return out

    def summary_text(self) -> str:
        """The summary as indented ``key: value`` lines."""
        lines: list[str] = []

        def walk(d: dict[str, Any], depth: int) -> None:
            for k, v in d.items():
                pad = "  " * depth
                if isinstance(v, dict):
                    if v and not any(isinstance(x, dict) for x in v.values()):
                        inner = "  ".join(f"{kk} {format_number(vv)}" for kk, vv in v.items())
                        lines.append(f"{pad}{k}: {inner}")
                    else:
                        lines.append(f"{pad}{k}:")
                        walk(v, depth + 1)
                else:
                    lines.append(f"{pad}{k}: {'never' if v is None and k == 'recovered_at' else format_number(v)}")

        walk(self.summary, 1)
        return "summary:\n" + "\n".join(lines) + "\n"

    def plot(
        self,
        path: str | os.PathLike[str],
        columns: Sequence[str] | None = None,
        *,
        title: str | None = None,
    ) -> Any:
        """Plot the run to ``path`` (PNG, SVG, PDF: by extension) with matplotlib
        (``pip install 'guards[sim]'``) and return the ``Figure``: for Basketly goodput and
        load, the work reaching stock and the database, and the queues; for any other
        topology each entry's offered, full and degraded answers and the queues; or just
        ``columns``. The disturbance (the topology's slowdowns) is shaded."""
        from . import plot as _plot

        return _plot.plot_result(self, path, columns=columns, title=title)
