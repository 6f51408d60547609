"""Fleet-wide guards: one allowance for every instance of a service, shared through Redis
(or Valkey), instead of one cap per instance that grows with the number of instances.

::

    import guards
    from guards.fleet import Fleet

    stock = guards.Bulkhead(max_concurrent=1)        # the fleet sets its cap
    with Fleet("redis://127.0.0.1:6379", "shop-api", "host-1") as fleet:
        fleet.attach("stock", 48, stock)              # 48 in flight for the whole fleet
        ...                                           # serve: stock.acquire() as before

Each member joins the fleet (a service name) and attaches guards to fleet-wide
allowances; a background agent syncs every ``sync_interval`` (0.25 s by default) and keeps
each guard's cap at this member's share: the allowance split by weight among the live
members, shrinking at once and growing only into room the others have left, so the calls
in flight across the fleet never exceed the allowance while members reach Redis. The hot
path never waits for Redis.

Attachable guards: :class:`guards.Bulkhead` (``max_concurrent`` follows the share),
:class:`guards.Limiter` (``max_limit``) and a ``"token_bucket"`` :class:`guards.RetryBudget`
(``capacity``, in tokens). ``attach_breaker(name, breaker)`` shares a
:class:`guards.CircuitBreaker`'s evidence: a member with too few calls of its own opens when
the windows of at least two other members hold ``minimum_calls`` calls failing at its
threshold.

A member that cannot reach Redis keeps its shares for ``stale_after``, then falls back to
``fallback_floor`` (or the allowance ÷ the last known members); a member that dies gives its
share back after ``ttl``. ``stats()`` and ``events()`` report what the agent saw.
``docs/fleet.md`` has the rule, its guarantee, the Redis keys and the defaults.
"""

from __future__ import annotations

from ._guards import _fleet as _n

Fleet = _n.Fleet
FleetError = _n.FleetError
FleetUnavailable = _n.FleetUnavailable
FleetAuthError = _n.FleetAuthError

__all__ = ["Fleet", "FleetError", "FleetUnavailable", "FleetAuthError"]
