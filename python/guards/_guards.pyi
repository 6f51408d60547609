"""Stubs of the native module ``guards._guards`` (re-exported by ``guards``)."""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable, Mapping, Sequence
from typing import Any, Generic, Literal, Protocol, SupportsIndex, TypedDict, TypeVar, final

from typing_extensions import ParamSpec, Self, TypeAlias, disjoint_base

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
    "FleetError",
    "FleetUnavailable",
    "FleetAuthError",
    "HeaderError",
    "monotonic_ns",
    "now_ns",
    "current_clock",
    "FakeClock",
    "FakeSleep",
    "Nanos",
    "Priority",
    "Rng",
    "Deadline",
    "DeadlineConfig",
    "AttemptBudget",
    "encode_grpc_timeout",
    "parse_grpc_timeout",
    "encode_millis",
    "parse_millis",
    "Backoff",
    "fnv1a64",
    "stable_offset_ns",
    "next_stable_run",
    "RetryPolicy",
    "RetryDecision",
    "RetryRun",
    "classify_exception",
    "http_outcome",
    "outcome_verdicts",
    "OUTCOMES",
    "parse_http_date",
    "format_http_date",
    "PROGRAMMING_ERRORS",
    "RetryBudget",
    "RetryReceipt",
    "Bulkhead",
    "BulkheadPermit",
    "LatencyTracker",
    "Hedging",
    "HedgeDecision",
    "AdaptiveThrottle",
    "Brownout",
    "BrownoutTable",
    "operation_key",
    "Limit",
    "FixedLimit",
    "AimdLimit",
    "VegasLimit",
    "GradientLimit",
    "Gradient2Limit",
    "Limiter",
    "LimiterPermit",
    "Admission",
    "AdmissionTicket",
    "CircuitBreaker",
    "KeyedBreakers",
    "BreakerPermit",
    "GuardedFunction",
    "GuardedCoroutine",
    "GuardedBase",
    "GuardedBlockCall",
    "QueueDiscipline",
    "Waiter",
    "Dequeued",
    "Dropped",
]

__version__: str
"""The package's version (the workspace's, shared by every artefact of the project)."""

_P = ParamSpec("_P")
_R = TypeVar("_R")
_R_co = TypeVar("_R_co", covariant=True)

# An instant: integer nanoseconds of the monotonic clock (``time.monotonic_ns()``).
_Instant: TypeAlias = int | SupportsIndex

# ---------------------------------------------------------------- errors

class GuardError(Exception):
    """Base of every refusal by a guard."""

    reason: str | None
    """Why the guard refused (the refusal's name, e.g. ``"open"``, ``"limit_reached"``)."""
    retry_after: float | None
    """Seconds until trying again could help, or None when the guard does not know."""
    retry_after_ns: int | None
    """``retry_after`` in exact nanoseconds."""

class BreakerOpen(GuardError):
    retry_at: int | None

class BulkheadFull(GuardError):
    in_flight: int | None
    """Calls in flight when it refused."""
    max_concurrent: int | None
    """The bulkhead's cap."""

class BudgetExhausted(GuardError): ...
class LimitExceeded(GuardError):
    threshold: int | None
    in_flight: int | None
    priority: int | None

class AdmissionRejected(GuardError):
    retry_after_secs: int | None
    threshold: int | None
    in_flight: int | None
    priority: int | None

class QueueFull(GuardError): ...
class Throttled(GuardError): ...

class RetriesExhausted(GuardError):
    attempts: int
    """Attempts made before giving up."""

class DeadlineExceeded(GuardError, TimeoutError): ...

class FleetError(RuntimeError):
    """A fleet member could not do what was asked: Redis could not be used, or the member
    has left."""

class FleetUnavailable(FleetError):
    """Redis could not be reached (or answered an error) when joining the fleet."""

class FleetAuthError(FleetError):
    """Redis refused the credentials of the fleet's URL (or requires some)."""

class HeaderError(ValueError):
    """A deadline header could not be parsed; ``kind`` names why."""

    kind: str | None
    """Why the header was refused: ``"empty"``, ``"missing_unit"``, ``"unknown_unit"``,
    ``"no_digits"``, ``"invalid_character"``, ``"too_many_digits"`` or ``"overflow"``."""

class ConfigError(ValueError):
    """A rejected setting: ``field`` names it, ``kind`` says why."""

    field: str | None
    """The setting refused, as the constructor spells it (``"window_size"``)."""
    kind: str | None
    """Why: ``"not_finite"``, ``"negative"``, ``"zero"``, ``"out_of_range"`` or
    ``"inconsistent"``."""
    expected: str | None
    """What is accepted (e.g. ``"1..=65536 calls"``)."""

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

# A duration: seconds (float or int), a timedelta, or exact nanoseconds.
_Duration: TypeAlias = float | int | datetime.timedelta | Nanos

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
    """0: the most important requests (shed last)."""
    CRITICAL: int
    """1: requests the product needs."""
    SHEDDABLE_PLUS: int
    """2: requests that may be shed under load, after the sheddable ones."""
    SHEDDABLE: int
    """3: requests shed first (batch, prefetch)."""
    COUNT: int
    """8: how many priority classes there are (valid priorities are ``0..COUNT``)."""

@final
class Rng:
    """A seeded SplitMix64 generator (the same sequence in every language)."""

    def __new__(cls, seed: _Instant | None = None) -> Self: ...
    def reseed(self, seed: _Instant) -> None: ...
    def next_u64(self) -> int: ...
    def next_f64(self) -> float: ...
    def below(self, n: _Instant) -> int: ...

class _RetryGateObject(Protocol):
    def allow_retry(self, now: int, cause: str, /) -> bool: ...


# ---------------------------------------------------------------- deadline

@final
class Deadline:
    """An instant after which nobody wants the answer, or none."""

    def __new__(cls, expires_at: _Instant | None = None) -> Self: ...
    @staticmethod
    def after(timeout: _Duration, now: _Instant | None = None) -> Deadline: ...
    @staticmethod
    def at(instant: _Instant) -> Deadline: ...
    @staticmethod
    def none() -> Deadline: ...
    @staticmethod
    def from_grpc_timeout(value: str | bytes, now: _Instant | None = None) -> Deadline: ...
    @staticmethod
    def from_millis(value: str | bytes, now: _Instant | None = None) -> Deadline: ...
    @property
    def expires_at(self) -> int | None: ...
    def is_none(self) -> bool: ...
    def time_left(self, now: _Instant | None = None) -> float: ...
    def time_left_ns(self, now: _Instant | None = None) -> int | None: ...
    def is_expired(self, now: _Instant | None = None) -> bool: ...
    def min(self, other: Deadline) -> Deadline: ...
    def attempt_budget(
        self, attempt_timeout: _Duration, margin: _Duration, now: _Instant | None = None
    ) -> AttemptBudget: ...
    def to_grpc_timeout(self, now: _Instant | None = None) -> str | None: ...
    def to_millis(self, now: _Instant | None = None) -> str | None: ...
    def __reduce__(self) -> tuple[type[Deadline], tuple[int | None]]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __lt__(self, other: Deadline, /) -> bool: ...
    def __le__(self, other: Deadline, /) -> bool: ...
    def __gt__(self, other: Deadline, /) -> bool: ...
    def __ge__(self, other: Deadline, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class AttemptBudget:
    """The next attempt's budget: ``decision`` is "start", "expired" or "too_little_left"."""

    @property
    def decision(self) -> str: ...
    @property
    def should_start(self) -> bool: ...
    @property
    def budget(self) -> float | None: ...
    @property
    def budget_ns(self) -> int | None: ...
    @property
    def left(self) -> float | None: ...
    @property
    def left_ns(self) -> int | None: ...
    def attempt_deadline(self, now: _Instant | None = None) -> Deadline | None: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class DeadlineConfig:
    """Per-attempt timing: each attempt gets ``min(attempt_timeout, time left) - margin``."""

    def __new__(cls, attempt_timeout: _Duration = 0.06, *, margin: _Duration = 0.001) -> Self: ...
    @property
    def attempt_timeout(self) -> float: ...
    @property
    def margin(self) -> float: ...
    def attempt_budget(
        self, deadline: Deadline | None, now: _Instant | None = None
    ) -> AttemptBudget: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

def encode_grpc_timeout(timeout: _Duration) -> str: ...
def parse_grpc_timeout(value: str | bytes) -> Nanos: ...
def encode_millis(timeout: _Duration) -> str: ...
def parse_millis(value: str | bytes) -> Nanos: ...

# ---------------------------------------------------------------- backoff

_Jitter: TypeAlias = Literal["none", "full", "equal", "decorrelated"]

class _BackoffSettings(TypedDict, total=False):
    base: _Duration
    cap: _Duration
    multiplier: float
    jitter: _Jitter

@final
class Backoff:
    """Capped exponential backoff with jitter."""

    def __new__(
        cls,
        base: _Duration = 0.025,
        *,
        cap: _Duration = 20.0,
        multiplier: float = 2.0,
        jitter: _Jitter = "full",
        seed: _Instant | None = None,
    ) -> Self: ...
    def config(self) -> dict[str, Any]: ...
    def ceiling(self, retry: _Instant) -> float: ...
    def ceiling_ns(self, retry: _Instant) -> int: ...
    def max_delay(self, retry: _Instant) -> float: ...
    def max_delay_ns(self, retry: _Instant) -> int: ...
    def delay(self, retry: _Instant, prev: _Duration | None = None, *, rng: Rng | None = None) -> float: ...
    def delay_ns(self, retry: _Instant, prev: _Duration | None = None, *, rng: Rng | None = None) -> int: ...
    def delay_from_bits(self, retry: _Instant, bits: _Instant, prev: _Duration | None = None) -> float: ...
    def delay_from_bits_ns(self, retry: _Instant, bits: _Instant, prev: _Duration | None = None) -> int: ...

def fnv1a64(data: str | bytes) -> int: ...
def stable_offset_ns(id: str | bytes, period: _Duration) -> int: ...
def next_stable_run(id: str | bytes, period: _Duration, now: _Instant | None = None) -> int: ...

# ---------------------------------------------------------------- retry policy

_Outcome: TypeAlias = Literal[
    "success",
    "timeout",
    "connection_error",
    "other_transient",
    "throttled",
    "overloaded",
    "permanent",
    "rejected",
    "ignored",
    "cancelled",
]
_Idempotency: TypeAlias = Literal["idempotent", "keyed_side_effect", "unkeyed_side_effect"]

@final
class RetryDecision:
    """Retry after ``delay`` seconds (``delay_ns`` exact), or give up for ``reason``."""

    @property
    def retry(self) -> bool: ...
    @property
    def delay(self) -> float | None: ...
    @property
    def delay_ns(self) -> int | None: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def propagate_as_overloaded(self) -> bool: ...
    def __bool__(self) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class RetryPolicy:
    """Whether to retry after an outcome, and after how long."""

    def __new__(
        cls,
        max_attempts: int = 3,
        *,
        retry_timeouts: bool = True,
        retry_connection_errors: bool = True,
        retry_other_transient: bool = True,
        retry_throttled: bool = True,
        honor_retry_after: bool = True,
        max_retry_after: _Duration = 20.0,
        min_attempt_time: _Duration = 0.001,
        unkeyed_side_effects: Literal["never", "retry_throttled"] = "never",
        backoff: Backoff | _BackoffSettings | None = None,
        seed: _Instant | None = None,
    ) -> Self: ...
    def config(self) -> dict[str, Any]: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def backoff(self) -> Backoff: ...
    def decide(
        self,
        attempts_made: _Instant,
        outcome: _Outcome,
        *,
        retry_after: _Duration | None = None,
        idempotency: _Idempotency | None = None,
        time_left: _Duration | None = None,
        deadline: Deadline | None = None,
        prev_delay: _Duration | None = None,
        gate: _RetryGate | None = None,
        rng: Rng | None = None,
        now: _Instant | None = None,
    ) -> RetryDecision: ...
    def worst_case_time(self, attempt_timeout: _Duration) -> float: ...
    def worst_case_time_ns(self, attempt_timeout: _Duration) -> int: ...
    def stats(self) -> dict[str, int]: ...

# A step of a retry loop: ("attempt", number, budget_ns | None, expires_at | None),
# ("wait", delay_ns, retry_at, None), ("succeeded", None, None, None) or
# ("give_up", reason, None, None).
_RetryStep: TypeAlias = tuple[str, Any, Any, Any]

@final
class RetryRun:
    """The retry loop of one request on core's RetryDriver: the caller only sleeps and calls."""

    def __new__(
        cls,
        policy: RetryPolicy,
        *,
        budget: RetryBudget | None = None,
        deadline: Deadline | None = None,
        idempotency: _Idempotency | None = None,
        attempt_timeout: _Duration | None = None,
        margin: _Duration | None = None,
    ) -> Self: ...
    def start(self, now: _Instant | None = None) -> _RetryStep: ...
    def report(
        self, outcome: _Outcome, retry_after: _Duration | None = None, now: _Instant | None = None
    ) -> _RetryStep: ...
    def resume(self, now: _Instant | None = None) -> _RetryStep: ...
    def cancel(self) -> _RetryStep: ...
    @property
    def attempts(self) -> int: ...
    @property
    def retries(self) -> int: ...
    @property
    def phase(self) -> Literal["idle", "attempting", "waiting", "succeeded", "gave_up"]: ...
    @property
    def give_up_reason(self) -> str | None: ...
    @property
    def last_outcome(self) -> _Outcome | None: ...

def classify_exception(exc: BaseException) -> tuple[_Outcome, float | None]:
    """The outcome of an exception a call raised, and the server's Retry-After (seconds)."""

def http_outcome(
    status: int,
    retry_after: float | int | str | bytes | None = None,
    *,
    now_unix: int | None = None,
) -> tuple[_Outcome, float | None]:
    """The outcome of an HTTP answer (core's http classification)."""

def outcome_verdicts(outcome: _Outcome) -> dict[str, Any]:
    """What every guard does with ``outcome`` (the call contract's table, core's)."""

OUTCOMES: tuple[_Outcome, ...]
"""Every outcome name of the call contract, in core's order (``"success"`` first)."""

def parse_http_date(value: str | bytes, *, now_unix: int | None = None) -> int | None:
    """An HTTP date as unix seconds, or None when the value is not one."""

def format_http_date(unix: int) -> str | None:
    """Unix seconds as an IMF-fixdate, or None after the year 9999."""

PROGRAMMING_ERRORS: tuple[type[BaseException], ...]
"""Exceptions that are bugs, not a dependency's failure (``TypeError``, ``KeyError``, ...):
classified as ``"ignored"`` (no verdict) and raised as they are."""

# ---------------------------------------------------------------- circuit breaker

_Effect: TypeAlias = Literal[
    "counted", "opened", "probe_passed", "closed", "reopened", "discarded", "ignored"
]
_State: TypeAlias = Literal["closed", "open", "half_open"]

@final
class BreakerPermit:
    """A breaker call or half-open probe; report one outcome."""

    def report(self, outcome: _Outcome, now: _Instant | None = None) -> _Effect | None: ...
    def on_success(self, now: _Instant | None = None) -> _Effect | None: ...
    def on_failure(self, now: _Instant | None = None) -> _Effect | None: ...
    def on_ignore(self) -> bool: ...
    @property
    def done(self) -> bool: ...
    @property
    def kind(self) -> Literal["call", "probe"]: ...
    @property
    def is_probe(self) -> bool: ...
    @property
    def generation(self) -> int: ...
    @property
    def acquired_at(self) -> int: ...
    @property
    def probe_timeout(self) -> float | None: ...
    @property
    def probe_timeout_ns(self) -> int | None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, _exc_type: object = None, exc: object = None, _tb: object = None) -> bool: ...

@final
class CircuitBreaker:
    """A circuit breaker over a count or time window."""

    def __new__(
        cls,
        *,
        window_kind: Literal["count", "time"] = "count",
        window_size: int = 100,
        window_duration: _Duration = 10.0,
        window_buckets: int = 10,
        failure_rate_threshold: float = 0.5,
        slow_call_duration: _Duration = 60.0,
        slow_call_rate_threshold: float = 1.0,
        minimum_calls: int = 0,
        open_duration: _Duration = 5.0,
        open_duration_multiplier: float = 1.0,
        max_open_duration: _Duration = 300.0,
        half_open_probes: int = 3,
        probe_timeout: _Duration = 1.0,
        capacity: int = 0,
    ) -> Self: ...
    def config(self) -> dict[str, Any]: ...
    @property
    def capacity(self) -> int: ...
    def acquire(self, now: _Instant | None = None, *, operation: str | None = None) -> BreakerPermit: ...
    def call(self, fn: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """``fn(*args, **kwargs)`` under the breaker, judged as ``guards.guarded`` judges it."""
    def acall(
        self, fn: Callable[_P, Awaitable[_R]], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> GuardedCoroutine[_R]:
        """``await breaker.acall(fn, ...)``: ``fn(...)`` awaited under the breaker."""
    def try_acquire(
        self, now: _Instant | None = None, *, operation: str | None = None
    ) -> BreakerPermit | None: ...
    @property
    def state(self) -> _State: ...
    def state_at(self, now: _Instant) -> _State: ...
    def status(self) -> dict[str, Any]: ...
    def window_counts(self, now: _Instant | None = None) -> dict[str, int]: ...
    def stats(self) -> dict[str, int]: ...

_Key: TypeAlias = int | str | bytes

@final
class KeyedBreakers:
    """One circuit breaker per key, in a fixed set of slots."""

    def __new__(
        cls,
        *,
        slots: int = 16,
        window_kind: Literal["count", "time"] = "count",
        window_size: int = 100,
        window_duration: _Duration = 10.0,
        window_buckets: int = 10,
        failure_rate_threshold: float = 0.5,
        slow_call_duration: _Duration = 60.0,
        slow_call_rate_threshold: float = 1.0,
        minimum_calls: int = 0,
        open_duration: _Duration = 5.0,
        open_duration_multiplier: float = 1.0,
        max_open_duration: _Duration = 300.0,
        half_open_probes: int = 3,
        probe_timeout: _Duration = 1.0,
    ) -> Self: ...
    @staticmethod
    def key_of(data: str | bytes) -> int: ...
    @property
    def slots(self) -> int: ...
    def config(self) -> dict[str, Any]: ...
    def get_or_insert(self, key: _Key) -> bool: ...
    def acquire(
        self, key: _Key, now: _Instant | None = None, *, operation: str | None = None
    ) -> BreakerPermit: ...
    def call(
        self, key: _Key, fn: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> _R: ...
    def acall(
        self,
        key: _Key,
        fn: Callable[_P, Awaitable[_R]],
        /,
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> GuardedCoroutine[_R]: ...
    def try_acquire(
        self, key: _Key, now: _Instant | None = None, *, operation: str | None = None
    ) -> BreakerPermit | None: ...
    def state(self, key: _Key, now: _Instant | None = None) -> _State: ...
    def status(self, key: _Key) -> dict[str, Any] | None: ...
    def window_counts(self, key: _Key, now: _Instant | None = None) -> dict[str, int] | None: ...
    def stats(self, key: _Key | None = None) -> dict[str, int] | None: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: _Key, /) -> bool: ...

# ---------------------------------------------------------------- guarded calls

def _note_deadline_published() -> None: ...
def _deadline_published() -> bool: ...

_native_await_slots: bool

@final
class GuardedFunction:
    """A function guarded by one breaker, keyed breaker or bulkhead (what
    ``guards.guarded(guard)`` decorates with); binds as a method, pickles by reference."""

    # Copied from ``fn`` by ``functools.update_wrapper`` (as ``guards.guarded`` does).
    __name__: str
    __qualname__: str
    __wrapped__: Callable[..., Any]
    def __new__(
        cls,
        guard: CircuitBreaker | KeyedBreakers | Bulkhead,
        fn: Callable[..., Any],
        /,
        *,
        key: _Key | None = None,
        classify: Callable[[BaseException], _Outcome] | None = None,
        deadline: Callable[[], Any] | None = None,
        deadline_gated: bool = False,
        is_async: bool = False,
    ) -> Self: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, instance: Any, owner: Any = None, /) -> Any: ...
    def __reduce__(self) -> Any: ...
    @property
    def guard(self) -> CircuitBreaker | KeyedBreakers | Bulkhead: ...
    @property
    def is_async(self) -> bool: ...

@final
class GuardedCoroutine(Coroutine[Any, Any, _R_co], Generic[_R_co]):
    """The awaitable of a guarded ``async`` call: the guard is taken at the first step and
    given back when the call ends."""

    def __await__(self) -> Generator[Any, None, _R_co]: ...
    def __next__(self) -> Any: ...
    def send(self, value: Any, /) -> Any: ...
    def throw(self, *args: Any) -> Any: ...
    def close(self) -> None: ...
    # Read-only at run time (the guarded function's names).
    __name__: str
    __qualname__: str

@disjoint_base
class GuardedBase:
    """Base of ``guards.Guarded``: ``with`` blocks under one breaker or bulkhead run
    natively; other configurations call ``_enter_slow`` / ``_exit_slow``."""

    def __new__(cls, *_args: Any, **_kwargs: Any) -> Self: ...
    def _configure_blocks(
        self,
        guard: CircuitBreaker | KeyedBreakers | Bulkhead,
        *,
        key: _Key | None = None,
        classify: Callable[[BaseException], _Outcome] | None = None,
        deadline: Callable[[], Any] | None = None,
        deadline_gated: bool = False,
    ) -> None: ...
    def _set_operation(self, operation: str) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, et: object = None, e: object = None, tb: object = None) -> None: ...

@final
class GuardedBlockCall:
    """An open native guarded block (``with guards.guarded(guard) as call``): mark the
    outcome when no exception tells it."""

    def failure(self) -> None: ...
    def dropped(self) -> None: ...
    def ignore(self) -> None: ...
    def success(self) -> None: ...
    def set_outcome(self, outcome: _Outcome) -> None: ...
    @property
    def outcome(self) -> _Outcome: ...
    @property
    def probe_timeout(self) -> float | None: ...

# ---------------------------------------------------------------- retry budget

_RetryCause: TypeAlias = Literal["timeout", "transient", "throttled", "hedge"]

@final
class RetryReceipt:
    """A granted retry; hand it back with ``on_success(receipt)`` (once)."""

    @property
    def cost(self) -> float: ...
    @property
    def cost_micros(self) -> int: ...
    @property
    def used(self) -> bool: ...

@final
class RetryBudget:
    """How many retries may be added on top of traffic ("token_bucket", "grpc", "aws", "windowed")."""

    def __new__(
        cls,
        mode: Literal["token_bucket", "grpc", "aws", "windowed"] = "token_bucket",
        *,
        capacity: float = ...,
        ratio: float = ...,
        max_tokens: float = ...,
        token_ratio: float = ...,
        transient_cost: int = ...,
        timeout_cost: int = ...,
        throttled_cost: int = ...,
        hedge_cost: int = ...,
        success_increment: int = ...,
        ttl: _Duration = ...,
        min_retries_per_sec: float = ...,
        percent_can_retry: float = ...,
    ) -> Self: ...
    @staticmethod
    def token_bucket(*, capacity: float = 10.0, ratio: float = 0.1) -> RetryBudget: ...
    @staticmethod
    def grpc(*, max_tokens: float = 10.0, token_ratio: float = 0.1) -> RetryBudget: ...
    @staticmethod
    def aws(
        *,
        capacity: int = 500,
        transient_cost: int = 5,
        timeout_cost: int = 10,
        throttled_cost: int = 5,
        hedge_cost: int = 5,
        success_increment: int = 1,
    ) -> RetryBudget: ...
    @staticmethod
    def windowed(
        *, ttl: _Duration = 10.0, min_retries_per_sec: float = 10.0, percent_can_retry: float = 0.2
    ) -> RetryBudget: ...
    @property
    def mode(self) -> str: ...
    def config(self) -> dict[str, Any]: ...
    def deposit(self, now: _Instant | None = None) -> None: ...
    def withdraw(self, cause: _RetryCause | None = None, now: _Instant | None = None) -> RetryReceipt | None: ...
    def allow_retry(self, now: _Instant | None = None, cause: _RetryCause | None = None) -> bool: ...
    def on_success(self, receipt: RetryReceipt | None = None, now: _Instant | None = None) -> None: ...
    def on_failure(self, now: _Instant | None = None) -> None: ...
    def tokens(self, now: _Instant | None = None) -> float: ...
    def tokens_micros(self, now: _Instant | None = None) -> int: ...
    @property
    def capacity(self) -> float | None:
        """The token bucket's capacity in force, in tokens; ``None`` in the other modes."""
    def set_capacity(self, capacity: float) -> float:
        """Resize the token bucket (``0.0..=1e9`` tokens); returns the previous capacity.
        ``ValueError`` in the other modes."""
    def stats(self) -> dict[str, int]: ...

# A retry gate: a native guard that gates retries, an object with
# ``allow_retry(now, cause)``, or a callable ``(now, cause) -> bool``.
_RetryGate: TypeAlias = RetryBudget | _RetryGateObject | Callable[[int, str], bool]

# ---------------------------------------------------------------- bulkhead

@final
class BulkheadPermit:
    """A bulkhead slot; released once by ``release()``, ``with``, or garbage collection."""

    def release(self) -> bool: ...
    def report(self, outcome: _Outcome) -> bool: ...
    @property
    def released(self) -> bool: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_args: object) -> bool: ...

@final
class Bulkhead:
    """At most ``max_concurrent`` calls in flight."""

    def __new__(cls, max_concurrent: int = 12) -> Self: ...
    @staticmethod
    def from_littles_law(rate_per_sec: float, p99: _Duration, headroom: float) -> Bulkhead: ...
    def config(self) -> dict[str, Any]: ...
    @property
    def max_concurrent(self) -> int:
        """The cap in force (``config()`` keeps the cap it was built with)."""
    def set_max_concurrent(self, max_concurrent: int) -> int:
        """Change the cap at run time (``0..=2**32-1``); returns the cap it replaced."""
    def acquire(self, *, operation: str | None = None) -> BulkheadPermit: ...
    def call(self, fn: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """``fn(*args, **kwargs)`` in a slot, given back however the call ends."""
    def acall(
        self, fn: Callable[_P, Awaitable[_R]], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> GuardedCoroutine[_R]:
        """``await bulkhead.acall(fn, ...)``: ``fn(...)`` awaited in a slot."""
    def try_acquire(self) -> BulkheadPermit | None: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def available(self) -> int: ...
    def stats(self) -> dict[str, int]: ...

# ---------------------------------------------------------------- latency tracker

class _TrackerSettings(TypedDict, total=False):
    window: _Duration
    timeout_quantile: float
    timeout_factor: float
    min_samples: int

@final
class LatencyTracker:
    """Latency histogram over a sliding ring of windows."""

    def __new__(
        cls,
        *,
        window: _Duration = 10.0,
        timeout_quantile: float = 0.999,
        timeout_factor: float = 2.0,
        min_samples: int = 1000,
    ) -> Self: ...
    def config(self) -> dict[str, Any]: ...
    @property
    def max_trackable(self) -> float: ...
    def record(self, latency: _Duration, now: _Instant | None = None) -> None: ...
    def record_ns(self, latency_ns: _Instant, now: _Instant | None = None) -> None: ...
    def count(self, now: _Instant | None = None) -> int: ...
    def quantile(self, q: float, now: _Instant | None = None) -> float | None: ...
    def quantile_ns(self, q: float, now: _Instant | None = None) -> int | None: ...
    def summary(self, now: _Instant | None = None) -> dict[str, float]: ...
    def summary_ns(self, now: _Instant | None = None) -> dict[str, int]: ...
    def propose_timeout(self, now: _Instant | None = None) -> float | None: ...
    def propose_timeout_ns(self, now: _Instant | None = None) -> int | None: ...
    def false_timeout_rate(self, timeout: _Duration, now: _Instant | None = None) -> float | None: ...
    def stats(self) -> dict[str, int]: ...

# ---------------------------------------------------------------- hedging

@final
class HedgeDecision:
    """``decision`` is "hedge_now", "wait_until" (``at``) or "never" (``reason``)."""

    @property
    def decision(self) -> str: ...
    @property
    def hedge(self) -> bool: ...
    @property
    def at(self) -> int | None: ...
    @property
    def reason(self) -> str | None: ...
    def __bool__(self) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@final
class Hedging:
    """Hedged requests after a tracked latency quantile."""

    def __new__(
        cls,
        *,
        delay_quantile: float = 0.95,
        min_delay: _Duration = 0.001,
        max_delay: _Duration = 10.0,
        max_hedges: int = 1,
        min_samples: int = 100,
        refresh_interval: _Duration = 0.1,
        tracker: LatencyTracker | _TrackerSettings | None = None,
    ) -> Self: ...
    def config(self) -> dict[str, Any]: ...
    def record_latency(self, latency: _Duration, now: _Instant | None = None) -> None: ...
    def record_latency_ns(self, latency_ns: _Instant, now: _Instant | None = None) -> None: ...
    def hedge_delay(self, now: _Instant | None = None) -> float | None: ...
    def hedge_delay_ns(self, now: _Instant | None = None) -> int | None: ...
    def should_hedge(
        self,
        request_started: _Instant,
        hedges_sent: _Instant | None = None,
        *,
        idempotent: bool | None = None,
        gate: _RetryGate | None = None,
        now: _Instant | None = None,
    ) -> HedgeDecision: ...
    def latency_quantile(self, q: float, now: _Instant | None = None) -> float | None: ...
    def stats(self) -> dict[str, int]: ...

# ---------------------------------------------------------------- adaptive throttle

@final
class AdaptiveThrottle:
    """Client-side adaptive throttling (reject locally what the backend would refuse)."""

    def __new__(
        cls,
        *,
        window: _Duration = 120.0,
        k: float = 2.0,
        aggression: float = 1.0,
        max_reject_probability: float = 1.0,
        min_requests: int = 0,
        count_rejected: bool = True,
        seed: int = 0,
        success_rate_threshold: float | None = None,
    ) -> Self: ...
    @staticmethod
    def envoy(
        *,
        window: _Duration = 30.0,
        k: float | None = None,
        aggression: float = 1.0,
        max_reject_probability: float = 0.8,
        min_requests: int = 0,
        count_rejected: bool = False,
        seed: int = 0,
        success_rate_threshold: float = 0.95,
    ) -> AdaptiveThrottle: ...
    def config(self) -> dict[str, Any]: ...
    @property
    def success_rate_threshold(self) -> float: ...
    def should_reject(self, now: _Instant | None = None, *, rng: Rng | None = None) -> bool: ...
    def admit(
        self, now: _Instant | None = None, *, rng: Rng | None = None, operation: str | None = None
    ) -> None: ...
    def report(
        self, outcome: _Outcome, now: _Instant | None = None
    ) -> Literal["accepted", "rejected_by_backend", "nothing"]: ...
    def on_accepted(self, now: _Instant | None = None) -> None: ...
    def on_rejected_by_backend(self, now: _Instant | None = None) -> None: ...
    def reject_probability(self, now: _Instant | None = None) -> float: ...
    def window(self, now: _Instant | None = None) -> dict[str, int]: ...
    def stats(self) -> dict[str, int]: ...

# ---------------------------------------------------------------- brownout

_RefusalKind: TypeAlias = Literal[
    "breaker_open", "bulkhead_full", "budget_exhausted", "throttled", "timeout", "overloaded", "failed"
]
_BrownoutDecision: TypeAlias = Literal["serve_fallback", "fail_fast", "proceed"]

@final
class Brownout:
    """What to do when an optional dependency's call is refused."""

    def __new__(
        cls,
        *,
        optional: bool = False,
        exempt: bool = False,
        fallback_on: Iterable[_RefusalKind] | int | None = None,
    ) -> Self: ...
    def config(self) -> dict[str, Any]: ...
    def decide(self, kind: _RefusalKind) -> _BrownoutDecision: ...
    def on_refusal(self, kind: _RefusalKind) -> _BrownoutDecision: ...
    def on_full(self) -> None: ...
    def stats(self) -> dict[str, int]: ...

@final
class BrownoutTable:
    """Brownout policies for named operations."""

    def __new__(cls, capacity: int = 16) -> Self: ...
    @property
    def capacity(self) -> int: ...
    def register(
        self,
        key: str | int,
        *,
        optional: bool = False,
        exempt: bool = False,
        fallback_on: Iterable[_RefusalKind] | int | None = None,
    ) -> int: ...
    def on_refusal(self, key: str | int, kind: _RefusalKind) -> _BrownoutDecision: ...
    def on_full(self, key: str | int) -> bool: ...
    def stats(self, key: str | int | None = None) -> dict[str, int] | None: ...
    def totals(self) -> dict[str, int]: ...
    def unknown(self) -> int: ...
    def config(self, key: str | int) -> dict[str, Any] | None: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: str | int, /) -> bool: ...

def operation_key(name: str) -> int: ...

# ---------------------------------------------------------------- limits

_Algorithm: TypeAlias = Literal["fixed", "aimd", "vegas", "gradient"]

@disjoint_base
class Limit:
    """A concurrency limit algorithm (base of FixedLimit, AimdLimit, VegasLimit, GradientLimit)."""

    def __new__(cls, algorithm: _Algorithm, **settings: Any) -> Self: ...
    @property
    def algorithm(self) -> str: ...
    def config(self) -> dict[str, Any]: ...
    @property
    def limit(self) -> int: ...
    def update(
        self, rtt: _Duration, in_flight: _Instant, dropped: bool | None = None, now: _Instant | None = None
    ) -> int: ...
    @property
    def estimate(self) -> float | None: ...
    @property
    def min_rtt(self) -> float | None: ...
    @property
    def min_rtt_ns(self) -> int | None: ...
    @property
    def long_rtt(self) -> float | None: ...
    @property
    def long_rtt_ns(self) -> float | None: ...

@final
class FixedLimit(Limit):
    def __new__(cls, limit: int) -> Self: ...

@final
class AimdLimit(Limit):
    def __new__(
        cls,
        *,
        initial_limit: int = 10,
        min_limit: int = 1,
        max_limit: int = 1000,
        backoff_ratio: float = 0.5,
        interval: _Duration = 0.1,
        latency_target: _Duration | None = None,
    ) -> Self: ...

@final
class VegasLimit(Limit):
    def __new__(
        cls,
        *,
        initial_limit: int = 20,
        min_limit: int = 1,
        max_limit: int = 1000,
        smoothing: float = 1.0,
        alpha: float = 3.0,
        beta: float = 6.0,
        threshold: float = 1.0,
        probe_multiplier: int = 30,
        probe_jitter: float = 0.5,
        probe_seed: int = 0,
    ) -> Self: ...

@final
class GradientLimit(Limit):
    def __new__(
        cls,
        *,
        initial_limit: int = 20,
        min_limit: int = 1,
        max_limit: int = 200,
        smoothing: float = 0.2,
        queue_size: float = 4.0,
        long_window: int = 600,
        warmup_samples: int = 10,
    ) -> Self: ...

Gradient2Limit = GradientLimit
"""Another name of :class:`GradientLimit` (Netflix's Gradient2 algorithm)."""

_LimitArg: TypeAlias = Limit | int | Mapping[str, Any]

class _Partition(TypedDict, total=False):
    share: float
    max_in_flight: int

# ---------------------------------------------------------------- limiter

@final
class LimiterPermit:
    """A limiter slot; report one outcome (``report``, or ``on_success``, ``on_dropped``,
    ``on_ignore``)."""

    def report(self, outcome: _Outcome, now: _Instant | None = None) -> bool: ...
    def on_success(self, now: _Instant | None = None) -> bool: ...
    def on_dropped(self, now: _Instant | None = None) -> bool: ...
    def on_ignore(self) -> bool: ...
    @property
    def done(self) -> bool: ...
    @property
    def start(self) -> int: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def threshold(self) -> int: ...
    @property
    def priority(self) -> int: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, _exc_type: object = None, exc: object = None, _tb: object = None) -> bool: ...

@final
class Limiter:
    """An adaptive concurrency limiter with priority partitions."""

    def __new__(
        cls,
        limit: _LimitArg | None = None,
        *,
        window: _Duration = 0.1,
        min_window_samples: int = 10,
        partitions: Sequence[_Partition | None] | None = None,
        min_retry_after: _Duration = 0.001,
        max_retry_after: _Duration = 1.0,
    ) -> Self: ...
    def config(self) -> dict[str, Any]: ...
    def acquire(
        self, priority: int | None = None, now: _Instant | None = None, *, operation: str | None = None
    ) -> LimiterPermit: ...
    def try_acquire(
        self, priority: int | None = None, now: _Instant | None = None, *, operation: str | None = None
    ) -> LimiterPermit | None: ...
    @property
    def limit(self) -> int: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def max_limit(self) -> int | None:
        """The ceiling of ``set_max_limit``, or ``None``."""
    def set_max_limit(self, max_limit: int) -> int | None:
        """Cap the limit at ``max_limit`` (``0..=2**32-1``); returns the previous ceiling."""
    def clear_max_limit(self) -> int | None:
        """Remove the ceiling; returns the previous one."""
    def threshold(self, priority: int | None = None) -> int: ...
    @property
    def retry_after(self) -> float: ...
    @property
    def retry_after_ns(self) -> int: ...
    def stats(self) -> dict[str, int]: ...
    def rejected_by_priority(self) -> list[int]: ...

# ---------------------------------------------------------------- admission

@final
class AdmissionTicket:
    """A place inside; report one outcome (``report``, or ``on_success``, ``on_dropped``,
    ``on_ignore``)."""

    def report(self, outcome: _Outcome, now: _Instant | None = None) -> bool: ...
    def on_success(self, now: _Instant | None = None) -> bool: ...
    def on_dropped(self, now: _Instant | None = None) -> bool: ...
    def on_ignore(self) -> bool: ...
    @property
    def done(self) -> bool: ...
    @property
    def start(self) -> int: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def priority(self) -> int: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, _exc_type: object = None, exc: object = None, _tb: object = None) -> bool: ...

@final
class _AsgiWatch:
    """One admitted ASGI request as ``guards.AdmissionMiddleware`` watches it (internal)."""

    def send(self, message: Any) -> Any: ...
    def receive(self) -> Any: ...
    def _disconnected(self) -> None: ...
    def finish(self) -> int: ...
    def fail(self, exc: BaseException) -> None: ...

@final
class Admission:
    """Admission control at a server's door: per-priority caps and an optional adaptive limit."""

    def __new__(
        cls,
        limits: Sequence[int | None] | None = None,
        *,
        limit: _LimitArg | None = None,
        shares: Sequence[float | None] | None = None,
        window: _Duration = 0.1,
        min_window_samples: int = 10,
        min_retry_after: _Duration = 1.0,
        max_retry_after: _Duration = 60.0,
    ) -> Self: ...
    def config(self) -> dict[str, Any]: ...
    def acquire(
        self, priority: int | None = None, now: _Instant | None = None, *, operation: str | None = None
    ) -> AdmissionTicket: ...
    def try_acquire(
        self, priority: int | None = None, now: _Instant | None = None, *, operation: str | None = None
    ) -> AdmissionTicket | None: ...
    def _asgi_enter(
        self, priority: int | None, path: object, receive: Any, send: Any
    ) -> _AsgiWatch: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def limit(self) -> int | None: ...
    def threshold(self, priority: int | None = None) -> int: ...
    def stats(self) -> dict[str, int]: ...
    def refused_by_priority(self) -> list[int]: ...

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
        capacity: int = 128,
        *,
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

# ---------------------------------------------------------------- simulator
# The native pieces of ``guards.sim`` (guards-sim). They are set on the module without
# entering ``__all__``, so ``guards`` does not re-export them; ``guards.sim`` does.

class SimError(ValueError):
    """The simulator refused a preset, an override, a topology or a guard setting."""

    kind: str | None
    """Why: ``"unknown_preset"``, ``"unknown_key"``, ``"bad_value"``, ``"bad_override"``,
    ``"topology"``, ``"guard"`` or ``"internal"`` (a bug in the engine)."""
    key: str | None
    """The setting or topology path refused."""
    value: str | None
    """The value refused, as given."""
    expected: str | None
    """What is accepted there."""
    known: list[str] | None
    """For ``unknown_preset``: the preset names."""

def _sim_presets() -> list[str]: ...
def _sim_keys() -> list[tuple[str, str]]: ...
def _sim_series() -> list[tuple[str, list[str]]]: ...
def _sim_basketly_metrics() -> list[tuple[str, str, str, str]]: ...
def _sim_preset_info() -> list[tuple[str, str]]: ...
def _sim_guards() -> list[tuple[str, str, list[str]]]: ...
def _sim_basketly(
    setting: str,
    seed: int,
    until: str | None = None,
    overrides: Sequence[str] | None = None,
    timeline: Sequence[tuple[str, Sequence[str]]] | None = None,
) -> _SimResult: ...
def _sim_topology(
    topology: str,
    seed: int,
    until_ns: int,
    label: str | None = None,
    max_memory_mb: float | None = None,
    max_events: int | None = None,
    timeline: Sequence[tuple[int, str]] | None = None,
    trace: tuple[int, str | None, int] | None = None,
) -> _SimResult: ...
def _sim_basketly_topology(
    setting: str, until: str | None = None, overrides: Sequence[str] | None = None
) -> str: ...
def _sim_basketly_config(
    setting: str, until: str | None = None, overrides: Sequence[str] | None = None
) -> dict[str, Any]: ...
def _sim_check_topology(topology: str) -> tuple[str, int]: ...
def _sim_parse_clock(text: str) -> int | None: ...
def _sim_format_clock(ns: int, millis: bool = False) -> str: ...

@final
class _SimRun:
    """One simulator run advanced in steps."""

    @staticmethod
    def basketly(
        setting: str,
        seed: int,
        until: str | None = None,
        overrides: Sequence[str] | None = None,
        timeline: Sequence[tuple[str, Sequence[str]]] | None = None,
    ) -> _SimRun: ...
    @staticmethod
    def topology(
        topology: str,
        seed: int,
        until_ns: int,
        label: str | None = None,
        max_memory_mb: float | None = None,
        max_events: int | None = None,
        timeline: Sequence[tuple[int, str]] | None = None,
        trace: tuple[int, str | None, int] | None = None,
    ) -> _SimRun: ...
    def advance(self, to_ns: int) -> None: ...
    @property
    def now_ns(self) -> int: ...
    @property
    def start_ns(self) -> int: ...
    @property
    def until_ns(self) -> int: ...
    @property
    def interval_ns(self) -> int: ...
    @property
    def progress(self) -> float: ...
    @property
    def finished(self) -> bool: ...
    @property
    def stopped(self) -> dict[str, Any] | None: ...
    def config(self) -> dict[str, Any] | None: ...
    def finish(self) -> _SimResult: ...

@final
class _SimResult:
    """The output of one simulator run."""

    @property
    def setting(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def interval_s(self) -> float: ...
    @property
    def interval_ns(self) -> int: ...
    @property
    def start_ns(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def peak_calls(self) -> int: ...
    @property
    def stopped(self) -> dict[str, Any] | None: ...
    def traces_json(self) -> str: ...
    def trace_timelines(self) -> list[str]: ...
    def __len__(self) -> int: ...
    def labels(self) -> list[str]: ...
    def names(self) -> list[str]: ...
    def column(self, name: str) -> list[int | float | None] | None: ...
    def columns(self) -> dict[str, list[int | float | None]]: ...
    def summary(self) -> dict[str, Any]: ...
    def to_json(self) -> str: ...
    def to_csv(self) -> str: ...
    def table(self, names: Sequence[str]) -> str: ...
    def mean(self, name: str, start: str, end: str) -> float | None: ...
    def sum(self, name: str, start: str, end: str) -> float | None: ...
    def at(self, name: str, at: str) -> float | None: ...
    def windows(self) -> tuple[int, int, int, int | None, int]: ...
    def basketly_metric(
        self,
        key: str,
        during_start: str,
        during_end: str,
        gauge_at: str,
        after_start: str | None,
        end: str,
    ) -> float | str | None: ...
    def latency_edges(self) -> list[str]: ...
    def latencies_ns(self, edge: str, attempts: bool = False) -> list[int] | None: ...

# ---------------------------------------------------------------- conformance vectors
# Test-only (not in ``__all__``): ffi's shared vector interpreter, see tests/vectors/README.md.

@final
class _VectorSession:
    @staticmethod
    def open(path: str) -> _VectorSession: ...
    @staticmethod
    def from_text(file_name: str, text: str) -> _VectorSession: ...
    def next(self) -> dict[str, Any] | None: ...
    def submit_result(self, result: object) -> None: ...
    def submit_config_error(self, field: str, kind: str) -> None: ...
    def submit_failed(self, message: str) -> None: ...
    def submit_unsupported(self, reason: str) -> None: ...
    @property
    def done(self) -> bool: ...
    def report(self) -> str: ...
    def summary(self) -> dict[str, Any]: ...
    def cases(self) -> list[dict[str, Any]]: ...
