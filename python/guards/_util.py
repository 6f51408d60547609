"""Argument checks shared by the Pythonic layer (private).

Every public entry point of the pure-Python modules validates what it is given, the way
the native classes do: a value of the wrong type raises ``TypeError`` naming the argument
(in backquotes, like the native messages), a value of the right type that is not
accepted raises :class:`guards.ConfigError` (a ``ValueError``) naming the field, with
``field``, ``kind`` and ``expected`` set. Conversions of durations go through the native
``Nanos.from_seconds`` so that seconds round to nanoseconds exactly as the native classes
round them.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import inspect
import math
import types
from collections.abc import Callable
from typing import Any, NoReturn, Optional, Tuple, Type, Union

from ._guards import ConfigError, Nanos
from ._guards import GuardedFunction as _GuardedFunction

#: What a duration argument accepts, for messages.
DURATION_WHAT = "a duration: seconds (float or int), datetime.timedelta or guards.Nanos"

ExcTypes = Tuple[Type[BaseException], ...]
ExcSpec = Union[Type[BaseException], ExcTypes, Callable[[BaseException], bool], None]


def type_name(value: object) -> str:
    return type(value).__name__


def fail_type(field: str, what: str, value: object) -> NoReturn:
    raise TypeError(f"`{field}` must be {what}, not {type_name(value)}")


def config_error(field: str, kind: str, expected: str, detail: str = "") -> ConfigError:
    """A :class:`ConfigError` with its attributes set, like the native ones."""
    message = f"invalid `{field}`: {kind.replace('_', ' ')} (expected {expected})"
    if detail:
        message += f"; {detail}"
    err = ConfigError(message)
    err.field = field
    err.kind = kind
    err.expected = expected
    return err


def duration_ns(field: str, value: object) -> int:
    """A duration argument as integer nanoseconds (seconds, timedelta or Nanos)."""
    if isinstance(value, Nanos):
        return value.ns
    if isinstance(value, bool) or not isinstance(value, (int, float, datetime.timedelta)):
        fail_type(field, DURATION_WHAT, value)
    expected = "a duration of 0 s up to about 584 years"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise config_error(field, "not_finite", expected)
    if isinstance(value, datetime.timedelta):
        negative = value < datetime.timedelta(0)
    else:
        negative = value < 0
    if negative:
        raise config_error(field, "negative", expected)
    try:
        return Nanos.from_seconds(value).ns
    except (ValueError, OverflowError):
        raise config_error(field, "out_of_range", expected) from None


def opt_duration_ns(field: str, value: object) -> Optional[int]:
    return None if value is None else duration_ns(field, value)


def positive_duration_ns(field: str, value: object) -> int:
    ns = duration_ns(field, value)
    if ns == 0:
        raise config_error(field, "zero", "a duration above 0 s")
    return ns


def http_status(exc: BaseException) -> Optional[tuple[int, Any]]:
    """An HTTP status carried by an exception (httpx, requests, aiohttp, or our own), and
    what carries it: the exception or its ``response`` (whose ``headers`` go with it)."""
    for holder in (exc, getattr(exc, "response", None)):
        if holder is None:
            continue
        for attr in ("status_code", "status"):
            v = getattr(holder, attr, None)
            if isinstance(v, int) and not isinstance(v, bool) and 100 <= v <= 599:
                return v, holder
    return None


def instant_ns(field: str, value: object) -> int:
    """An instant: integer nanoseconds of the monotonic clock."""
    if isinstance(value, bool) or not isinstance(value, int):
        fail_type(field, "an int (nanoseconds of the monotonic clock)", value)
    if value < 0 or value > 2**64 - 1:
        raise ValueError(f"`{field}` must be integer nanoseconds in 0..=2**64-1, got {value}")
    return value


def check_bool(field: str, value: object) -> bool:
    if not isinstance(value, bool):
        fail_type(field, "a bool", value)
    return value


def check_int(field: str, value: object, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        fail_type(field, "an int", value)
    if value < lo or value > hi:
        kind = "negative" if value < 0 else ("zero" if value == 0 else "out_of_range")
        raise config_error(field, kind, f"{lo}..={hi}")
    return value


def check_callable(field: str, value: object, *, optional: bool = True) -> Any:
    if value is None and optional:
        return None
    if not callable(value):
        fail_type(field, "callable" + (" or None" if optional else ""), value)
    return value


def check_str_choice(field: str, value: object, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        fail_type(field, "a str", value)
    if value not in choices:
        raise config_error(field, "out_of_range", " | ".join(repr(c) for c in choices))
    return value


def exception_matcher(field: str, spec: ExcSpec) -> Optional[Callable[[BaseException], bool]]:
    """``spec`` (an exception type, a tuple of them, or a predicate) as a predicate.

    ``None`` stays ``None`` (no match). A tuple must hold exception classes only.
    """
    if spec is None:
        return None
    if isinstance(spec, type):
        if not issubclass(spec, BaseException):
            fail_type(field, "an exception type, a tuple of them or a predicate", spec)
        types: ExcTypes = (spec,)
        return lambda e: isinstance(e, types)
    if isinstance(spec, tuple):
        for t in spec:
            if not (isinstance(t, type) and issubclass(t, BaseException)):
                fail_type(field, "a tuple of exception types", t)
        tuple_types: ExcTypes = spec
        return lambda e: isinstance(e, tuple_types)
    if callable(spec):
        return spec
    fail_type(field, "an exception type, a tuple of them or a predicate", spec)


def is_async_callable(fn: object) -> bool:
    """Whether calling ``fn`` returns a coroutine: an ``async def`` function or method,
    one behind ``functools.partial``, or an object whose class has ``async def
    __call__``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.ismethod(fn) and isinstance(fn.__func__, _GuardedFunction):
        fn = fn.__func__
    if isinstance(fn, _GuardedFunction):
        return fn.is_async
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isbuiltin(fn):
        return False
    call = getattr(type(fn), "__call__", None)
    return call is not None and inspect.iscoroutinefunction(call)


def reject_generator_function(decorator: str, fn: object) -> None:
    """Raise ``TypeError`` when ``fn`` is a generator or async generator function (or a
    ``functools.partial`` of one, or an object whose class's ``__call__`` is one).

    Calling such a function only creates the generator: its body runs later, while it is
    iterated, long after a decorator's guard was released or its retry loop returned. A
    guard around it would guard nothing, silently."""
    f = fn
    while isinstance(f, functools.partial):
        f = f.func
    call = None if inspect.isfunction(f) or inspect.ismethod(f) else getattr(type(f), "__call__", None)
    for candidate in (f, call):
        if candidate is None:
            continue
        if inspect.isgeneratorfunction(candidate) or inspect.isasyncgenfunction(candidate):
            kind = "an async generator" if inspect.isasyncgenfunction(candidate) else "a generator"
            name = getattr(f, "__qualname__", None) or type(f).__name__
            raise TypeError(
                f"{decorator} cannot decorate {kind} function ({name}): its body runs only "
                "while the generator is iterated, after the decorated call has returned, so "
                "nothing would be guarded; use `with` / `async with` inside the generator, "
                "around the work to guard"
            )


async def _an_async_function() -> None:  # pragma: no cover - its code object is used
    """Lends its code flags to a guarded coroutine function on Python < 3.12."""


def mark_coroutine_function(wrapper: Any, fn: Any) -> None:
    """Make ``inspect.iscoroutinefunction(wrapper)`` (and ``asyncio``'s) true for a native
    :class:`guards.GuardedFunction` around a coroutine function, as it is for the
    ``async def`` wrapper a decorator usually returns (frameworks ask it to decide whether
    to await a handler). Python 3.12+ has ``inspect.markcoroutinefunction``; before it,
    ``inspect`` trusts the code flags of a function-like object, so the wrapper gets the
    ``__code__`` (and ``__defaults__`` / ``__kwdefaults__``) of ``fn``, or of an ``async
    def`` when ``fn`` has none."""
    mark = getattr(inspect, "markcoroutinefunction", None)
    if mark is not None:
        mark(wrapper)
        return
    if not isinstance(getattr(wrapper, "__name__", None), str):  # e.g. a callable object
        wrapper.__name__ = type(fn).__name__
    code = getattr(fn, "__code__", None)
    lender = fn
    if not (isinstance(code, types.CodeType) and code.co_flags & inspect.CO_COROUTINE):
        lender = _an_async_function
    wrapper.__code__ = lender.__code__
    wrapper.__defaults__ = getattr(lender, "__defaults__", None)
    wrapper.__kwdefaults__ = getattr(lender, "__kwdefaults__", None)
    wrapper._is_coroutine = getattr(asyncio.coroutines, "_is_coroutine", None)


def snake_case(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        elif (
            ch.isupper()
            and i
            and i + 1 < len(name)
            and name[i + 1].islower()
            and name[i - 1].isupper()
        ):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)
