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

from . import _guards
from ._guards import *  # noqa: F401,F403  (every native name; see _guards.pyi)

# The Pythonic layer: each module's ``__all__`` decides what it adds to ``guards``.
from . import context as _context
from . import events as events
from . import middleware as _middleware
from . import prometheus as _prometheus
from . import retry as _retry
from . import shared as shared  # host-wide guards: guards.shared.Region
from . import fleet as fleet  # fleet-wide allowances through Redis: guards.fleet.Fleet
from .context import *  # noqa: F401,F403
from .middleware import *  # noqa: F401,F403
from .prometheus import *  # noqa: F401,F403
from .retry import *  # noqa: F401,F403

__all__: list[str] = ["events"]
__all__ += _guards.__all__
__all__ += _context.__all__
__all__ += _middleware.__all__
__all__ += _prometheus.__all__
__all__ += _retry.__all__
