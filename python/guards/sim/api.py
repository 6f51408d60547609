"""Runs: Basketly presets and any topology, in one call or in steps."""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Union

from .. import _guards as _native
from . import _args
from .progress import Progress, callback
from .result import SimResult

__all__ = [
    "PRESETS",
    "KEYS",
    "SERIES",
    "PRESET_INFO",
    "GUARDS",
    "SimError",
    "Run",
    "basketly",
    "basketly_config",
    "basketly_topology",
    "simulate",
    "check_topology",
]

SimError = _native.SimError

#: Every Basketly preset name, in the order docs/basketly.md lists them.
PRESETS: tuple[str, ...] = tuple(_native._sim_presets())

#: Every Basketly override key with a one-line description. ``HOP.`` stands for each of
#: ``app.`` (app -> shop-api), ``stock_call.`` (shop-api -> stock) and ``db_call.``
#: (stock -> database). A guard's keys are generated from its config's schema: one per
#: field, with the Python API's name (``breaker.window_size``, ``HOP.retry.max_attempts``).
KEYS: dict[str, str] = dict(_native._sim_keys())

#: The named Basketly series and the generic columns each one sums.
SERIES: dict[str, tuple[str, ...]] = {n: tuple(parts) for n, parts in _native._sim_series()}

#: Every Basketly preset with a one-line description (docs/basketly.md tells the story).
PRESET_INFO: dict[str, str] = dict(_native._sim_preset_info())

#: Each C-line guard as overrides that switch it on alone (name -> (description,
#: overrides)), for "each guard alone" (:func:`guards.sim.each_guard_alone`).
GUARDS: dict[str, tuple[str, tuple[str, ...]]] = {
    n: (d, tuple(sets)) for n, d, sets in _native._sim_guards()
}

_Overrides = Union[Mapping[str, _args.OverrideValue], Sequence[str], None]
_Topology = Union[Mapping[str, Any], str, "os.PathLike[str]"]


class Run:
    """One run advanced in steps, for progress bars or to watch a run unfold.

    Make it with :meth:`Run.basketly` or :meth:`Run.topology`; call :meth:`step` (or
    iterate :meth:`steps`) and then :meth:`finish` for the :class:`SimResult`. Each step
    releases the GIL. The result is the same as a one-call run with the same arguments::

        run = guards.sim.Run.basketly("C0", seed=1, until="20:02:01")
        for fraction in run.steps(seconds=10):
            print(f"{fraction:.0%}")
        result = run.finish()
    """

    __slots__ = ("_run", "_config")

    def __init__(self, native: Any, config: dict[str, Any] | None = None) -> None:
        if not isinstance(native, _native._SimRun):
            raise TypeError("make a Run with Run.basketly(...) or Run.topology(...)")
        self._run = native
        self._config = config

    @classmethod
    def basketly(
        cls,
        setting: str = "C8",
        seed: int = 1,
        until: _args.ClockTime | None = None,
        *,
        overrides: _Overrides = None,
        timeline: Any = None,
        trace: Any = None,
        **kw_overrides: _args.OverrideValue,
    ) -> "Run":
        """A Basketly run; the arguments are those of :func:`basketly`."""
        setting = _args.setting_name(setting)
        until_text = None if until is None else _args.clock_text("until", until)
        items = _args.override_list(overrides, kw_overrides) + _args.trace_overrides(trace)
        changes = _args.basketly_timeline(timeline)
        native = _native._SimRun.basketly(setting, seed, until_text, items, changes)
        return cls(native, native.config())

    @classmethod
    def topology(
        cls,
        topology: _Topology,
        seed: int = 1,
        until: _args.ClockTime | None = None,
        *,
        duration: float | int | datetime.timedelta | None = None,
        label: str | None = None,
        timeline: Any = None,
        trace: Any = None,
        max_memory_mb: float | None = None,
        max_events: int | None = None,
    ) -> "Run":
        """A run of any topology; the arguments are those of :func:`simulate`."""
        text = _args.topology_text(topology)
        label = _args.label_text(label)
        if (until is None) == (duration is None):
            raise TypeError("give exactly one of `until` (a clock time) and `duration` (seconds)")
        if until is not None:
            until_ns = _args.clock_ns("until", until)
        else:
            _, start_ns = _native._sim_check_topology(text)
            until_ns = _until_ns(None, duration, start_ns)
        changes = _topology_timeline(text, timeline)
        spec = _topology_trace(trace)
        return cls(
            _native._SimRun.topology(
                text, seed, until_ns, label, max_memory_mb, max_events, changes, spec
            )
        )

    @property
    def progress(self) -> float:
        """Fraction of the run done, 0.0 to 1.0."""
        return self._run.progress

    @property
    def now(self) -> str:
        """Current virtual time, ``"HH:MM:SS.mmm"``."""
        return _args.format_clock(self._run.now_ns, True)

    @property
    def start(self) -> str:
        """The clock time the run starts at (``"HH:MM:SS"``)."""
        return _args.format_clock(self._run.start_ns, True)

    @property
    def until(self) -> str:
        """The clock time the run ends at."""
        return _args.format_clock(self._run.until_ns, True)

    @property
    def finished(self) -> bool:
        """Whether the run has reached ``until`` (then :meth:`finish` gives the result)."""
        return self._run.finished

    @property
    def stopped(self) -> dict[str, Any] | None:
        """Where and why a limit stopped the run early (``at``, ``reason``, ``limit``,
        ``message``), or ``None``."""
        return self._run.stopped

    @property
    def config(self) -> dict[str, Any] | None:
        """For a Basketly run, its settings (windows and rates); else ``None``."""
        return None if self._config is None else dict(self._config)

    def step(self, seconds: float | int | datetime.timedelta = 1.0) -> float:
        """Run ``seconds`` more of virtual time (never past the end); the fraction done."""
        s = _args.seconds("seconds", seconds)
        if s == 0:
            raise ValueError("`seconds` must be positive")
        to = min(self._run.now_ns + max(1, round(s * 1e9)), self._run.until_ns)
        self._run.advance(to)
        return self._run.progress

    def advance(self, until: _args.ClockTime) -> float:
        """Run every event before clock time ``until`` (never past the end)."""
        self._run.advance(_args.clock_ns("until", until))
        return self._run.progress

    def steps(self, seconds: float | int | datetime.timedelta = 1.0) -> Iterator[float]:
        """Step ``seconds`` at a time to the end, yielding the fraction done after each."""
        while self._run.progress < 1.0:
            yield self.step(seconds)

    def finish(self) -> SimResult:
        """Run to the end and return the result (a run finishes once)."""
        return SimResult(self._run.finish(), self._config)

    def __repr__(self) -> str:
        return repr(self._run).replace("_SimRun", "Run", 1)


def _topology_timeline(text: str, timeline: Any) -> list[tuple[int, str]]:
    """A topology's timeline as (instant ns, full topology JSON): each patch merged into
    the topology in force before it (changes in time order)."""
    items = _args.timeline_items(timeline)
    if not items:
        return []
    current, _ = _native._sim_check_topology(text)
    base: Any = json.loads(current)
    out = []
    timed = sorted(((_args.clock_ns("timeline", a), p) for a, p in items), key=lambda x: x[0])
    for at, patch in timed:
        if not isinstance(patch, Mapping):
            raise TypeError(
                f"a topology change must be a dict (a patch), not {type(patch).__name__}"
            )
        base = _args.merge_patch(base, patch)
        out.append((at, json.dumps(base, allow_nan=False)))
    return out


def _topology_trace(trace: Any) -> tuple[int, str | None, int] | None:
    """``trace=`` of a topology run as (from ns, entry or None, count)."""
    if trace is None or trace is False:
        return None
    if trace is True:
        return (0, None, 1)
    if isinstance(trace, (str, datetime.time)):
        return (_args.clock_ns("trace", trace), None, 1)
    if isinstance(trace, Mapping):
        at = trace.get("at")
        return (
            0 if at is None else _args.clock_ns("trace", at),
            trace.get("entry"),
            int(trace.get("count", 1)),
        )
    raise TypeError(
        "`trace` must be True, a clock time or a dict with at, entry and count, "
        f"not {type(trace).__name__}"
    )


def _until_ns(
    until: _args.ClockTime | None,
    duration: float | int | datetime.timedelta | None,
    start_ns: int,
) -> int:
    if (until is None) == (duration is None):
        raise TypeError("give exactly one of `until` (a clock time) and `duration` (seconds)")
    if until is not None:
        return _args.clock_ns("until", until)
    assert duration is not None
    s = _args.seconds("duration", duration)
    if s == 0:
        raise ValueError("`duration` must be positive")
    return start_ns + round(s * 1e9)


def _run_stepped(run: Run, progress: Progress, desc: str) -> SimResult:
    cb, bar = callback(progress, desc)
    try:
        if cb is not None:
            total = (run._run.until_ns - run._run.start_ns) / 1e9
            step = max(total / 100.0, run._run.interval_ns / 1e9)
            for f in run.steps(step):
                cb(f)
        return run.finish()
    finally:
        if bar is not None:
            bar.close()


def basketly(
    setting: str = "C8",
    seed: int = 1,
    until: _args.ClockTime | None = None,
    *,
    overrides: _Overrides = None,
    timeline: Any = None,
    trace: Any = None,
    progress: Progress = None,
    **kw_overrides: _args.OverrideValue,
) -> SimResult:
    """Run Basketly preset ``setting`` (one of :data:`PRESETS`) with ``seed``.

    ``until`` ends the run at a clock time (``"20:02:00"`` or a :class:`datetime.time`;
    default: the preset's end, 20:00:30 for C0-C8). Overrides are the keys of
    :data:`KEYS`: pass them in ``overrides`` as a dict
    (``{"stock_call.attempt_timeout": "60ms"}``) or as ``"key=value"`` strings, or as
    keywords where ``__`` stands for ``.`` (``stock_call__attempt_timeout="60ms"``,
    ``breaker__failure_rate_threshold=0.3``, ``hiccup=False``, ``lb="round_robin"``). A
    guard's keys are the fields of its config with the Python API's names and units
    (``breaker.open_duration=2.5`` is 2.5 s, as in ``CircuitBreaker(open_duration=2.5)``;
    ``"250ms"`` works too). Values may be ``str``, ``int``, ``float``, ``bool`` (on/off),
    ``None`` ("none"), a :class:`datetime.time` for clock keys or a
    :class:`datetime.timedelta` for durations. ``progress=True`` draws a bar on stderr; a callable gets the fraction
    done after every step.

    ``timeline`` changes settings during the run: ``[("20:00:10", {"breaker": "on"}),
    ("20:00:20", ["budget=off"])]`` (or a dict of times to changes); each change applies
    at its instant on top of the settings then in force (docs/basketly.md). ``trace``
    records single actions (every attempt, wait, guard decision and timeout):
    ``trace=True`` (the first action), ``trace="20:00:07"`` or ``trace={"at":
    "20:00:07", "entry": "checkout", "count": 3}``; see :attr:`SimResult.traces`. The
    keys ``max_memory_mb`` and ``max_events`` stop a run early, keeping what it computed
    (:attr:`SimResult.stopped`).

    Raises :class:`SimError` (a ``ValueError``) with ``kind`` ``"unknown_preset"``,
    ``"unknown_key"``, ``"bad_value"`` or ``"bad_override"`` and ``key`` naming what was
    wrong; ``TypeError`` for arguments of the wrong type. The run releases the GIL.
    """
    if progress is not None and progress is not False:
        run = Run.basketly(
            setting, seed, until, overrides=overrides, timeline=timeline, trace=trace,
            **kw_overrides,
        )
        return _run_stepped(run, progress, setting)
    setting = _args.setting_name(setting)
    until_text = None if until is None else _args.clock_text("until", until)
    items = _args.override_list(overrides, kw_overrides) + _args.trace_overrides(trace)
    changes = _args.basketly_timeline(timeline)
    native = _native._sim_basketly(setting, seed, until_text, items, changes)
    config = _native._sim_basketly_config(setting, until_text, items)
    return SimResult(native, config)


def basketly_config(
    setting: str = "C8",
    until: _args.ClockTime | None = None,
    *,
    overrides: _Overrides = None,
    **kw_overrides: _args.OverrideValue,
) -> dict[str, Any]:
    """The main settings of a Basketly preset after ``until`` and overrides: ``start``,
    ``until``, ``interval_s``, the hiccup (``hiccup``, ``hiccup_start``, ``hiccup_end``,
    ``hiccup_factor``), the rates and the pool sizes."""
    setting = _args.setting_name(setting)
    until_text = None if until is None else _args.clock_text("until", until)
    items = _args.override_list(overrides, kw_overrides)
    return _native._sim_basketly_config(setting, until_text, items)


def basketly_topology(
    setting: str = "C8",
    until: _args.ClockTime | None = None,
    *,
    overrides: _Overrides = None,
    **kw_overrides: _args.OverrideValue,
) -> dict[str, Any]:
    """The topology of a Basketly preset as a dict, every field written out: a starting
    point for variations run with :func:`simulate` (which reports the generic columns
    only; the named Basketly series and summary come from :func:`basketly`)."""
    setting = _args.setting_name(setting)
    until_text = None if until is None else _args.clock_text("until", until)
    items = _args.override_list(overrides, kw_overrides)
    text = _native._sim_basketly_topology(setting, until_text, items)
    result: dict[str, Any] = json.loads(text)
    return result


def check_topology(topology: _Topology) -> dict[str, Any]:
    """Check a topology and return it with every default filled in; raises
    :class:`SimError` naming the path of what is wrong
    (``edges[0].policy.breaker.window_size``)."""
    text, _ = _native._sim_check_topology(_args.topology_text(topology))
    result: dict[str, Any] = json.loads(text)
    return result


def simulate(
    topology: _Topology,
    seed: int = 1,
    until: _args.ClockTime | None = None,
    *,
    duration: float | int | datetime.timedelta | None = None,
    label: str | None = None,
    timeline: Any = None,
    trace: Any = None,
    max_memory_mb: float | None = None,
    max_events: int | None = None,
    progress: Progress = None,
) -> SimResult:
    """Run any system described as data (a dict, JSON text or a path to a JSON file).

    Give the end as a clock time ``until`` or as ``duration`` seconds after the
    topology's ``start``. The result has the generic columns ``entry.<name>.*``,
    ``edge.<name>.*`` and ``svc.<name>.*`` and the summary the simulator computes for any
    topology (:class:`SimResult`): the disturbance, ``recovered_at``, per-entry totals,
    per-edge call counts and the latency percentiles of every edge with
    ``"record_latency": true``.

    The format (durations ``"4ms"``/``"2s"`` or seconds; instants ``"HH:MM:SS[.fff]"`` or
    seconds since midnight; services, operations and edges referred to by name)::

        {
          "start": "12:00:00",
          "services": [
            {"name": "web", "client": true,
             "ops": [{"name": "page", "steps": [{"call": "web->api"}]}]},
            {"name": "api", "instances": 2, "servers": 4,
             "queue": {"deadline_check": true},
             "ops": [{"name": "get", "steps": [{"work": {"exp": "20ms"}}]}]}
          ],
          "edges": [{"name": "web->api", "from": "web", "to": "api", "op": "get",
                     "record_latency": true,
                     "policy": {"attempt_timeout": "100ms", "deadline": "attempt", "cancel": true,
                                "retry": {"max_attempts": 2,
                                          "backoff": {"base": "10ms", "cap": "1s"}},
                                "breaker": {"window_size": 20, "failure_rate_threshold": 0.5,
                                            "open_duration": 5.0, "probe_timeout": 0.1}}}],
          "entries": [{"name": "page", "service": "web", "op": "page",
                       "arrivals": {"poisson": 300}}]
        }

    The guards are guards-core's own configs, written with the Python API's field names,
    units and defaults (a field left out keeps its default; durations are seconds or
    ``"40ms"``), so a service's config can be pasted in: ``breaker`` takes the keywords of
    :class:`guards.CircuitBreaker`, ``retry`` those of :class:`guards.RetryPolicy` (its
    ``backoff`` a dict), ``hedge`` those of :class:`guards.Hedging`, a service's
    ``admission`` those of :class:`guards.Admission` (``limits`` per priority and an
    adaptive ``limit={"algorithm": "aimd", ...}``), ``queue.discipline`` those of
    :class:`guards.QueueDiscipline`, ``budgets`` items those of
    :class:`guards.RetryBudget` (``mode`` and its fields), ``bulkheads`` items those of
    :class:`guards.Bulkhead` and ``limiters`` items those of :class:`guards.Limiter` (an
    adaptive limit where a bulkhead's is fixed). Each is checked as those classes check
    it; an error names the path, down to the field.

    Services also take ``instances``, ``servers``, ``client``, ``queue.deadline_check``,
    ``enforce_deadline``, ``slowdowns`` / ``outages`` (time windows), ``balance`` and
    ``ops`` (steps: ``work`` with a ``const`` / ``exp`` / ``uniform`` / ``bernoulli`` time
    and optional ``commit``, or ``call`` over an edge). Edge policies take ``retry`` (none:
    one attempt), ``attempt_timeout``, ``deadline`` (``none``/``attempt``/``whole``: what
    is sent), ``margin``, ``cancel``, ``idempotency`` (``idempotent``,
    ``keyed_side_effect``, ``unkeyed_side_effect``), ``overloaded_is_transient``,
    ``give_up_as_overloaded``, ``breaker``, ``breaker_ignores_overloaded``, ``hedge``, and
    ``budget`` / ``bulkhead`` / ``limiter`` (indices into the caller's lists); entries take
    ``poisson``, ``burst`` or ``periodic`` arrivals; ``events`` scale, shed or flush a
    service at a time. :func:`basketly_topology` shows every field in use.

    ``timeline`` changes the system during the run: ``[("12:00:30", patch), ...]``
    where a patch is merged into the topology in force (``services``, ``edges``,
    ``entries`` and ``ops`` by name: ``{"edges": {"web->api": {"policy":
    {"attempt_timeout": "50ms"}}}}``); only settings may change, not the shape. ``trace`` records single
    actions (``True``, a clock time, or ``{"at", "entry", "count"}``); ``max_memory_mb``
    (default 1024) and ``max_events`` stop the run early, keeping what it computed.

    Raises :class:`SimError` naming the path at fault; the run releases the GIL.
    """
    run = Run.topology(
        topology, seed, until, duration=duration, label=label, timeline=timeline,
        trace=trace, max_memory_mb=max_memory_mb, max_events=max_events,
    )
    if progress is None or progress is False:
        return run.finish()
    return _run_stepped(run, progress, label or "simulate")

