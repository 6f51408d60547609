"""Type stubs of guards.fleet (fleet-wide allowances through Redis)."""

from __future__ import annotations

from typing import Any, Literal, TypedDict, Union, final

from typing_extensions import Self

from ._guards import Bulkhead, CircuitBreaker, FleetAuthError, FleetError, FleetUnavailable, Limiter, RetryBudget

__all__ = ["Fleet", "FleetError", "FleetUnavailable", "FleetAuthError"]

_Duration = Union[float, int, Any]

class _AllowanceStats(TypedDict):
    name: str
    allowance: int
    share: int
    fair: int
    claims_won: int
    claims_lost: int

class _BreakerStats(TypedDict):
    name: str
    calls: int
    failures: int
    fleet_calls: int
    fleet_failures: int
    fleet_members: int
    opened_on_evidence: int

class _FleetStats(TypedDict):
    members: int
    syncs: int
    sync_errors: int
    connected: bool
    fallen_back: bool
    events_dropped: int
    allowances: list[_AllowanceStats]
    breakers: list[_BreakerStats]

_EventKind = Literal[
    "share_changed",
    "member_joined",
    "member_left",
    "redis_lost",
    "redis_regained",
    "fell_back",
    "breaker_opened_on_fleet_evidence",
]

@final
class Fleet:
    """This process as one member of the fleet ``service``."""

    def __new__(
        cls,
        url: str,
        service: str,
        member: str,
        *,
        sync_interval: _Duration | None = 0.25,
        ttl: _Duration | None = None,
        stale_after: _Duration | None = None,
        fallback_floor: int | None = None,
        io_timeout: _Duration | None = None,
        weight: int | None = 1,
    ) -> Self: ...
    @property
    def service(self) -> str: ...
    @property
    def member(self) -> str: ...
    @property
    def left(self) -> bool: ...
    def attach(self, name: str, allowance: int, guard: Bulkhead | Limiter | RetryBudget) -> None:
        """Keep ``guard``'s cap at this member's share of the fleet-wide ``allowance``."""
    def attach_breaker(self, name: str, breaker: CircuitBreaker) -> None:
        """Publish ``breaker``'s window and open it on the fleet's evidence."""
    def share(self, name: str) -> int:
        """This member's share of allowance ``name`` now (``KeyError`` if not attached)."""
    def stats(self) -> _FleetStats: ...
    def events(self) -> list[dict[str, Any]]:
        """The events since the last call; each has ``kind`` (one of ``_EventKind``)."""
    def leave(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *args: object) -> bool: ...
