"""guards: overload guards for Python services.

Circuit breaker, retries with backoff and budgets, bulkhead, adaptive concurrency limits,
admission control, queue discipline, deadlines, hedging and brownout, built on one
lock-free Rust core shared with the C and Node bindings and the simulator.

Conventions:

* Durations you pass are seconds (``float``/``int``), ``datetime.timedelta`` or
  :class:`Nanos` (exact nanoseconds). Durations handed back are seconds floats, with an
  exact ``*_ns`` integer twin where exactness matters.
* Instants (``now``, deadlines) are integer nanoseconds of the monotonic clock
  (``time.monotonic_ns()``). Every time-dependent method takes ``now: int | None = None``
  and reads the clock when it is ``None`` (a :class:`FakeClock` installed with ``with``
  replaces the clock in tests).
* A refusal raises a :class:`GuardError` subclass carrying ``reason`` and
  ``retry_after``; a bad setting raises :class:`ConfigError` (a ``ValueError``) naming the
  field; a value of the wrong type raises ``TypeError``.
* Every guard is safe to share between threads and has ``stats() -> dict[str, int]``.
"""

from __future__ import annotations

from ._guards import (
    AdmissionRejected,
    BreakerOpen,
    BudgetExhausted,
    BulkheadFull,
    ConfigError,
    DeadlineExceeded,
    Dequeued,
    Dropped,
    FakeClock,
    GuardError,
    LimitExceeded,
    Nanos,
    Priority,
    QueueDiscipline,
    QueueFull,
    RetriesExhausted,
    Throttled,
    Waiter,
    __version__,
    current_clock,
    monotonic_ns,
    now_ns,
)

# The Pythonic layer: each module's ``__all__`` decides what it adds to ``guards``.
from . import context as _context
from . import middleware as _middleware
from . import prometheus as _prometheus
from . import retry as _retry
from .context import *  # noqa: F401,F403
from .middleware import *  # noqa: F401,F403
from .prometheus import *  # noqa: F401,F403
from .retry import *  # noqa: F401,F403

__all__ = [
    # errors
    "GuardError",
    "BreakerOpen",
    "BulkheadFull",
    "BudgetExhausted",
    "LimitExceeded",
    "DeadlineExceeded",
    "AdmissionRejected",
    "QueueFull",
    "Throttled",
    "RetriesExhausted",
    "ConfigError",
    # time
    "Nanos",
    "FakeClock",
    "monotonic_ns",
    "now_ns",
    "current_clock",
    # shared types
    "Priority",
    # queue discipline
    "QueueDiscipline",
    "Waiter",
    "Dequeued",
    "Dropped",
    "__version__",
]
__all__ += _context.__all__
__all__ += _middleware.__all__
__all__ += _prometheus.__all__
__all__ += _retry.__all__
