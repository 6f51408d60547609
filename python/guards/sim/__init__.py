"""guards.sim: the discrete-event simulator (guards-sim) from Python.

The simulator runs guards-core's real guards (the same retry policies, budgets, breakers,
bulkheads, admission limits, queue disciplines, brownouts and hedging that services use)
under a virtual clock: the same seed gives the same output bit for bit, and a run never
reads the wall clock. Every run releases the GIL.

* :func:`basketly` runs one of the Basketly incident presets (:data:`PRESETS`: ``C0``
  as shipped up to ``C8`` with every guard, side rows and replays) with overrides
  (:data:`KEYS`) and returns a :class:`SimResult`: per-interval ``series`` (``"t"`` clock
  labels, ``"goodput"``, ``"stock_calls"``, ... see :data:`SERIES`), a ``summary``
  (``recovered_at``, stock-call latency percentiles, ``extra_load``), ``to_json()``,
  ``to_csv()``, ``table()``, ``plot(path)``.
* :func:`compare` runs several presets or topologies with one seed and puts them side by
  side (:class:`Comparison`: ``table()``, ``plot(path)``).
* :func:`simulate` runs any other system described as a dict (services, call edges with
  their policies, callers, timed actions); :func:`basketly_topology` shows a full one.
  Its guards are guards-core's own configs with the Python API's field names: paste a
  service's ``CircuitBreaker(...)`` keywords as ``{"window_size": 20, ...}``.
* :data:`KEYS`: every Basketly override; a guard's keys are its config's fields
  (``breaker.failure_rate_threshold``, ``stock_call.retry.max_attempts``).
* :class:`Run` advances either kind of run in steps (progress bars).
* ``timeline=`` changes settings during a run; ``trace=`` records single actions
  (:attr:`SimResult.traces`); ``max_memory_mb`` / ``max_events`` bound a run.
* :func:`sweep` runs a grid of presets (or topologies) x parameters x seeds on every
  core or on Ray and sums it up per cell (:class:`Sweep`: mean, sd, min, max; plots);
  :func:`each_guard_alone` is the "each guard alone" comparison.
* Errors: :class:`SimError` (a ``ValueError``) with ``kind`` and ``key``; ``TypeError``
  for arguments of the wrong type.

Example::

    import guards.sim as sim

    r = sim.basketly("C8", seed=1)
    r.summary["recovered_at"]                      # '20:00:21'
    r.mean("degraded_cart", "20:00:02", "20:00:20")  # about 1,190 cart views a second
    r2 = sim.basketly("C0", until="20:02:01", stock_call__attempt_timeout="60ms", lb="round_robin")
    r3 = sim.basketly("C6", breaker__failure_rate_threshold=0.3, breaker__open_duration=2.0)

The command line: ``python -m guards.sim basketly --compare C0 C1 C2 C3 C4 C5 C6 C7 C8``.
"""

from __future__ import annotations

from .api import (
    GUARDS,
    KEYS,
    PRESET_INFO,
    PRESETS,
    SERIES,
    Run,
    SimError,
    basketly,
    basketly_config,
    basketly_topology,
    check_topology,
    simulate,
)
from .compare import GENERIC_METRICS, METRICS, Comparison, Metric, compare
from .result import SimResult, Trace
from .sweep import Cell, Sweep, each_guard_alone, sweep

__all__ = [
    "PRESETS",
    "PRESET_INFO",
    "GUARDS",
    "KEYS",
    "SERIES",
    "SimError",
    "SimResult",
    "Trace",
    "Run",
    "basketly",
    "basketly_config",
    "basketly_topology",
    "check_topology",
    "simulate",
    "compare",
    "Comparison",
    "Metric",
    "METRICS",
    "GENERIC_METRICS",
    "sweep",
    "Sweep",
    "Cell",
    "each_guard_alone",
]
