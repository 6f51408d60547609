"""The request's deadline in a ``contextvars.ContextVar``, and guarded blocks and calls.

Deadlines
---------
A deadline is set once, where a request enters (from the caller's ``grpc-timeout`` or
milliseconds header, or from your own timeout), and every guarded call below it inherits
it: threads started with ``contextvars.copy_context()``, asyncio tasks (which copy the
context when created) and nested scopes all see it. A nested scope never extends it: it
uses ``min(own timeout, inherited time left)``.

::

    with guards.deadline(2.0):                # this request has 2 s
        fetch_cart()                          # sees guards.time_left() <= 2 s
        with guards.deadline(0.5):            # a part of it gets at most 0.5 s
            client.get(url, timeout=guards.time_left())

    async with guards.deadline(2.0):          # asyncio: the block is cancelled at the deadline
        await fetch_cart()                    # (raises guards.DeadlineExceeded, a TimeoutError)

In synchronous code nothing can interrupt a blocking call: the deadline is *published*
for cooperative code (pass :func:`time_left` to your HTTP client's timeout, call
:func:`check_deadline` between steps) and checked when a scope is entered. In asyncio the
scope also cancels its block when the deadline passes.

The arithmetic (``min``, time left, expiry) and the wire forms are the native
:class:`guards.Deadline`'s: :func:`inject_deadline` writes the time left as a
``grpc-timeout`` value (e.g. ``"59000000n"``) or integer milliseconds, rounded down so a
callee never thinks it has more time than its caller will wait; :func:`extract_deadline`
reads one.

Guarded blocks
--------------
:func:`guarded` (see :mod:`guards._guarded`) wraps circuit breakers, bulkheads and limiters
as ``with`` / ``async with`` blocks and as decorators, with ``fallback=`` for brownouts.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, MutableMapping
from typing import Any, Callable, Optional, TypeVar

from ._deadline import (
    _DEADLINE,
    DeadlineScope,
    _now,
    check_deadline,
    current_deadline,
    deadline,
    publish,
    time_left,
    time_left_ns,
    timeout_for,
)
from ._guarded import (
    Guarded,
    GuardedCall,
    guarded,
    is_dependency_failure,
    refusal_kind,
)
from ._guards import Deadline
from ._util import config_error, fail_type

__all__ = [
    "deadline",
    "DeadlineScope",
    "current_deadline",
    "time_left",
    "time_left_ns",
    "timeout_for",
    "check_deadline",
    "inject_deadline",
    "extract_deadline",
    "deadline_header",
    "GRPC_TIMEOUT_HEADER",
    "MILLIS_HEADER",
    "guarded",
    "Guarded",
    "GuardedCall",
    "refusal_kind",
    "is_dependency_failure",
]

F = TypeVar("F", bound=Callable[..., Any])

#: The gRPC deadline header: 1 to 8 digits and a unit (``H M S m u n``).
GRPC_TIMEOUT_HEADER = "grpc-timeout"
#: The integer-milliseconds header (Envoy's name for the time the caller will wait).
MILLIS_HEADER = "x-envoy-expected-rq-timeout-ms"

_FORMATS = ("grpc", "millis")

# ------------------------------------------------------------------ headers


def _header_name(format: str, name: Optional[str]) -> str:
    if name is None:
        return GRPC_TIMEOUT_HEADER if format == "grpc" else MILLIS_HEADER
    if not isinstance(name, str):
        fail_type("name", "a str or None", name)
    if not name:
        raise config_error("name", "out_of_range", "a non-empty header name")
    return name


def _check_format(format: object) -> str:
    if not isinstance(format, str):
        fail_type("format", "a str", format)
    if format not in _FORMATS:
        raise ValueError(f"`format` must be 'grpc' or 'millis', not {format!r}")
    return format


def deadline_header(
    format: str = "grpc",
    *,
    deadline: Optional[Deadline] = None,
    now: Optional[int] = None,
) -> Optional[str]:
    """The time left on ``deadline`` (default: the inherited one) as a header value: a
    ``grpc-timeout`` (``format="grpc"``) or integer milliseconds (``"millis"``), rounded
    down. ``None`` when there is no deadline (send no header)."""
    fmt = _check_format(format)
    d = _DEADLINE.get() if deadline is None else deadline
    if d is None:
        return None
    if not isinstance(d, Deadline):
        fail_type("deadline", "a guards.Deadline or None", d)
    at = _now(now)
    return d.to_grpc_timeout(at) if fmt == "grpc" else d.to_millis(at)


def inject_deadline(
    headers: Optional[MutableMapping[str, str]] = None,
    *,
    format: str = "grpc",
    name: Optional[str] = None,
    deadline: Optional[Deadline] = None,
    now: Optional[int] = None,
) -> MutableMapping[str, str]:
    """Write the time left on the inherited deadline (or ``deadline``) into ``headers``
    (a new dict when ``None``) and return them; writes nothing without a deadline.

    ``format`` is ``"grpc"`` (header ``grpc-timeout``) or ``"millis"`` (header
    ``x-envoy-expected-rq-timeout-ms``); ``name`` overrides the header name.
    ``httpx.get(url, headers=guards.inject_deadline())`` sends it on.
    """
    fmt = _check_format(format)
    header = _header_name(fmt, name)
    if headers is None:
        headers = {}
    elif not isinstance(headers, MutableMapping):
        fail_type("headers", "a mutable mapping or None", headers)
    value = deadline_header(fmt, deadline=deadline, now=now)
    if value is not None:
        headers[header] = value
    return headers


def _lookup(headers: Any, header: str) -> Optional[str]:
    """A header's value from a mapping (any case), an ASGI header list or a WSGI environ."""
    lower = header.lower()
    if isinstance(headers, Mapping):
        environ_key = "HTTP_" + header.upper().replace("-", "_")
        for key in (header, lower, environ_key):
            v = headers.get(key)
            if v is not None:
                break
        else:
            v = None
            for k, val in headers.items():
                if isinstance(k, (str, bytes)) and _as_str(k).lower() == lower:
                    v = val
                    break
        return None if v is None else _as_str(v)
    if isinstance(headers, (list, tuple)):
        for item in headers:
            if not (isinstance(item, (list, tuple)) and len(item) == 2):
                fail_type("headers", "a mapping, an ASGI header list or a WSGI environ", headers)
            k, val = item
            if _as_str(k).lower() == lower:
                return _as_str(val)
        return None
    fail_type("headers", "a mapping, an ASGI header list or a WSGI environ", headers)


def _as_str(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("latin-1")
    if isinstance(v, str):
        return v
    fail_type("header value", "str or bytes", v)


def extract_deadline(
    headers: Any,
    *,
    format: str = "grpc",
    name: Optional[str] = None,
    now: Optional[int] = None,
    strict: bool = True,
) -> Optional[Deadline]:
    """The deadline a received header sets, counted from ``now`` (the arrival), or
    ``None`` when the header is absent.

    ``headers``: a mapping (looked up in any case), an ASGI ``[(name, value), ...]`` list
    of bytes, or a WSGI environ (``HTTP_GRPC_TIMEOUT``). A malformed value raises
    :class:`guards.HeaderError` (a ``ValueError`` with ``kind``) when ``strict``, else
    reads as absent.
    """
    fmt = _check_format(format)
    header = _header_name(fmt, name)
    if not isinstance(strict, bool):
        fail_type("strict", "a bool", strict)
    value = _lookup(headers, header)
    if value is None:
        return None
    at = _now(now)
    try:
        if fmt == "grpc":
            return Deadline.from_grpc_timeout(value, at)
        return Deadline.from_millis(value, at)
    except ValueError:
        if strict:
            raise
        return None


def _set_deadline(d: Optional[Deadline]) -> contextvars.Token[Optional[Deadline]]:
    """Publish ``d`` (private: the middleware and retry use it)."""
    return publish(d)


def _reset_deadline(token: contextvars.Token[Optional[Deadline]]) -> None:
    _DEADLINE.reset(token)
