"""Stubs of the native module ``guards._guards`` (re-exported by ``guards``)."""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Generator
from typing import Any, SupportsIndex, final

from typing_extensions import Self, TypeAlias

__all__ = [
    "__version__",
    "GuardError",
    "BreakerOpen",
    "BulkheadFull",
    "BudgetExhausted",
    "LimitExceeded",
    "AdmissionRejected",
    "QueueFull",
    "Throttled",
    "RetriesExhausted",
    "DeadlineExceeded",
    "ConfigError",
    "monotonic_ns",
    "now_ns",
    "current_clock",
    "FakeClock",
    "FakeSleep",
    "Nanos",
    "Priority",
    "QueueDiscipline",
    "Waiter",
    "Dequeued",
    "Dropped",
]

__version__: str

# A duration: seconds (float or int), a timedelta, or exact nanoseconds.
_Duration: TypeAlias = float | int | datetime.timedelta | Nanos
# An instant: integer nanoseconds of the monotonic clock (``time.monotonic_ns()``).
_Instant: TypeAlias = int | SupportsIndex

# ---------------------------------------------------------------- errors

class GuardError(Exception):
    """Base of every refusal by a guard."""

    reason: str | None
    retry_after: float | None
    retry_after_ns: int | None

class BreakerOpen(GuardError): ...
class BulkheadFull(GuardError): ...
class BudgetExhausted(GuardError): ...
class LimitExceeded(GuardError): ...
class AdmissionRejected(GuardError): ...
class QueueFull(GuardError): ...
class Throttled(GuardError): ...

class RetriesExhausted(GuardError):
    attempts: int

class DeadlineExceeded(GuardError, TimeoutError): ...

class ConfigError(ValueError):
    """A rejected setting: ``field`` names it, ``kind`` says why."""

    field: str | None
    kind: str | None
    expected: str | None

# ---------------------------------------------------------------- time

def monotonic_ns() -> int:
    """The monotonic clock (``CLOCK_MONOTONIC``), integer nanoseconds."""

def now_ns() -> int:
    """What guards' default ``now`` reads: the installed FakeClock, else the monotonic clock."""

def current_clock() -> FakeClock | None:
    """The innermost installed FakeClock, or None."""

@final
class Nanos:
    """An exact duration in integer nanoseconds."""

    def __new__(cls, ns: _Instant) -> Self: ...
    @staticmethod
    def from_seconds(seconds: float | int | datetime.timedelta) -> Nanos: ...
    @property
    def ns(self) -> int: ...
    @property
    def seconds(self) -> float: ...
    def __reduce__(self) -> tuple[type[Nanos], tuple[int]]: ...
    def __int__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __lt__(self, other: Nanos, /) -> bool: ...
    def __le__(self, other: Nanos, /) -> bool: ...
    def __gt__(self, other: Nanos, /) -> bool: ...
    def __ge__(self, other: Nanos, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class FakeClock:
    """A manual clock for tests; ``with clock:`` installs it for every guard."""

    def __new__(cls, now: _Instant | None = None) -> Self: ...
    def now(self) -> int: ...
    def set(self, ns: _Instant) -> None: ...
    def advance(self, seconds: _Duration | None = None, *, ns: _Instant | None = None) -> int: ...
    def sleep(self, seconds: _Duration) -> None: ...
    def asleep(self, seconds: _Duration) -> FakeSleep: ...
    @property
    def installed(self) -> bool: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_args: object) -> bool: ...

@final
class FakeSleep(Awaitable[None]):
    """The awaitable returned by ``FakeClock.asleep``."""

    def __await__(self) -> Generator[None, None, None]: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> None: ...

# ---------------------------------------------------------------- shared types

@final
class Priority:
    """Named priority classes; any int in 0..=7 is accepted (0 is the most important)."""

    CRITICAL_PLUS: int
    CRITICAL: int
    SHEDDABLE_PLUS: int
    SHEDDABLE: int
    COUNT: int

# ---------------------------------------------------------------- queue discipline

@final
class Waiter:
    @property
    def id(self) -> int: ...
    @property
    def enqueued_at(self) -> int: ...
    @property
    def deadline(self) -> int | None: ...
    @property
    def priority(self) -> int: ...
    def age_ns(self, now: _Instant | None = None) -> int: ...
    def is_expired(self, now: _Instant | None = None) -> bool: ...

@final
class Dequeued:
    @property
    def waiter(self) -> Waiter: ...
    @property
    def order(self) -> str: ...
    @property
    def id(self) -> int: ...

@final
class Dropped:
    @property
    def waiter(self) -> Waiter: ...
    @property
    def reason(self) -> str: ...
    @property
    def id(self) -> int: ...

@final
class QueueDiscipline:
    """Bounded wait queue: strict priority, CoDel age limit and adaptive LIFO when standing."""

    def __new__(
        cls,
        *,
        capacity: int = 128,
        interval: _Duration = 0.1,
        target: _Duration = 0.005,
        lifo: bool = True,
        codel: bool = True,
        priority: bool = True,
    ) -> Self: ...
    def config(self) -> dict[str, Any]: ...
    @property
    def capacity(self) -> int: ...
    def push(
        self,
        id: _Instant,
        priority: int | None = None,
        deadline: _Instant | None = None,
        now: _Instant | None = None,
    ) -> None: ...
    def pop(self, now: _Instant | None = None) -> tuple[Dequeued | None, list[Dropped]]: ...
    def expire(self, now: _Instant | None = None) -> list[Dropped]: ...
    def dropped(self) -> list[Dropped]: ...
    def remove(self, id: _Instant) -> Waiter | None: ...
    def __len__(self) -> int: ...
    def len(self) -> int: ...
    def is_empty(self) -> bool: ...
    def len_by_priority(self) -> list[int]: ...
    def is_standing(self, now: _Instant | None = None) -> bool: ...
    def oldest_age(self, now: _Instant | None = None) -> float: ...
    def oldest_age_ns(self, now: _Instant | None = None) -> int: ...
    def stats(self) -> dict[str, int]: ...
