"""Host-wide guards: one circuit breaker, bulkhead, limiter, admission door or retry budget
for every process of a machine (the workers of gunicorn, ``uvicorn --workers``,
``multiprocessing``), instead of one per process.

::

    import guards
    from guards import shared

    region = shared.Region("myapp")              # /dev/shm/myapp, created on first use
    stock = region.circuit_breaker("stock", failure_rate_threshold=0.5, window_size=20)
    pool = region.bulkhead("db", max_concurrent=12)   # 12 in flight across all workers
    budget = region.retry_budget("retries", capacity=10)   # a guards.RetryBudget

    with stock.acquire():                         # the package's call contract
        reply = client.get("/stock")

    with guards.guarded(stock, pool):             # guarded() takes host-wide guards too
        ...

A :class:`Region` is a file (a bare name is ``/dev/shm/<name>``; any path works) that every
process maps; every process that opens it with the same path gets the same guards. A guard
is created the first time its name is asked for, with the settings of that call (the same
settings, defaults and errors as the package's own classes: ``region.bulkhead(name,
max_concurrent=12)`` takes what ``guards.Bulkhead(max_concurrent=12)`` takes). Asking for an
existing name with another kind or other settings raises :class:`GuardMismatch` naming what
differs.

Kinds: ``circuit_breaker``, ``keyed_breakers``, ``bulkhead``, ``limiter`` and ``admission``
(host-wide classes of this module, with the methods of the package's own); ``retry_budget``,
``adaptive_throttle``, ``latency_tracker``, ``hedging`` and ``brownout`` return the package's
own classes over the region's memory (they hand out no permits).

Permits are recorded in the region with the process that holds them: when a worker is
killed while holding a bulkhead slot, a limiter place or a half-open probe,
:meth:`Region.reclaim` (also run when a process opens the region, and when an acquire finds
its guard full) gives it back to the guard as ``cancelled``. ``docs/shared.md`` has the
rules, the file format and the costs.

Each process opens the region itself (``Region(path)`` in the worker, or before ``fork``:
the mapping is inherited). Every process of a region must run the same build of guards.
"""

from __future__ import annotations

from typing import Any

from ._guards import _shared as _n

Region = _n.Region
CircuitBreaker = _n.CircuitBreaker
Bulkhead = _n.Bulkhead
KeyedBreakers = _n.KeyedBreakers
Limiter = _n.Limiter
Admission = _n.Admission
Permit = _n.Permit
RegionError = _n.RegionError
RegionInvalid = _n.RegionInvalid
RegionIncompatible = _n.RegionIncompatible
RegionFull = _n.RegionFull
RegionTimeout = _n.RegionTimeout
GuardMismatch = _n.GuardMismatch
GuardNotFound = _n.GuardNotFound
PermitSlotsExhausted = _n.PermitSlotsExhausted


async def _acall_keyed(
    guard: Any, key: Any, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``await breakers.acall(key, fn, *args, **kwargs)``, as :func:`_acall`."""
    with guard.acquire(key):
        return await fn(*args, **kwargs)


async def _acall(guard: Any, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``await guard.acall(fn, *args, **kwargs)``: the permit is taken when the awaitable
    is first awaited and reported when the call ends (the exception classified by
    :func:`guards.classify_exception`; a cancellation is ``cancelled``)."""
    with guard.acquire():
        return await fn(*args, **kwargs)


__all__ = [
    "Region",
    "CircuitBreaker",
    "Bulkhead",
    "KeyedBreakers",
    "Limiter",
    "Admission",
    "Permit",
    "RegionError",
    "RegionInvalid",
    "RegionIncompatible",
    "RegionFull",
    "RegionTimeout",
    "GuardMismatch",
    "GuardNotFound",
    "PermitSlotsExhausted",
]
