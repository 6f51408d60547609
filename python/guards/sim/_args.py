"""Argument checks and conversions shared by the simulator's API and CLI."""

from __future__ import annotations

import datetime
import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Union

from .. import _guards as _native

#: A clock time: ``"HH:MM:SS[.fff]"`` or a :class:`datetime.time`.
ClockTime = Union[str, datetime.time]
#: An override value: converted to the text the simulator parses.
OverrideValue = Union[str, int, float, bool, None, datetime.time, datetime.timedelta]


def clock_text(name: str, value: ClockTime) -> str:
    """``value`` as ``"HH:MM:SS[.ffffff]"`` text, checked to parse."""
    if isinstance(value, datetime.time):
        if value.tzinfo is not None:
            raise ValueError(f"`{name}` must be a naive time of day, not {value!r}")
        text = f"{value.hour:02}:{value.minute:02}:{value.second:02}"
        if value.microsecond:
            text += f".{value.microsecond:06}"
        return text
    if not isinstance(value, str):
        raise TypeError(
            f"`{name}` must be a clock time \"HH:MM:SS[.fff]\" (str or datetime.time), "
            f"not {type(value).__name__}"
        )
    if _native._sim_parse_clock(value) is None:
        raise ValueError(f"`{name}` must be a clock time \"HH:MM:SS[.fff]\", not {value!r}")
    return value


def clock_ns(name: str, value: ClockTime) -> int:
    """A clock time as nanoseconds since midnight."""
    ns = _native._sim_parse_clock(clock_text(name, value))
    assert ns is not None  # clock_text checked it
    return ns


def format_clock(ns: int, millis: bool = False) -> str:
    """Nanoseconds since midnight as ``"HH:MM:SS"`` (``"HH:MM:SS.mmm"`` with ``millis``)."""
    return _native._sim_format_clock(ns, millis)


def seconds(name: str, value: float | int | datetime.timedelta) -> float:
    """A non-negative, finite number of seconds (or a timedelta)."""
    if isinstance(value, datetime.timedelta):
        s = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"`{name}` must be seconds (float or int) or a datetime.timedelta, "
            f"not {type(value).__name__}"
        )
    else:
        s = float(value)
    if not math.isfinite(s) or s < 0:
        raise ValueError(f"`{name}` must be a finite, non-negative number of seconds, not {value!r}")
    return s


def setting_name(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"`setting` must be a preset name (str), not {type(value).__name__}")
    return value


_DURATION_KEYS: set[str] | None = None


def takes_duration(key: str) -> bool:
    """Whether Basketly override ``key`` is a duration (a field of a guard's config with
    that unit, a hop's ``attempt_timeout`` or ``margin``), from the keys' descriptions."""
    global _DURATION_KEYS
    if _DURATION_KEYS is None:
        _DURATION_KEYS = {k for k, d in _native._sim_keys() if "duration" in d}
    head, _, rest = key.partition(".")
    if head in ("app", "stock_call", "db_call"):
        key = f"HOP.{rest}"
    return key in _DURATION_KEYS


def override_text(key: str, value: OverrideValue) -> str:
    """One ``key=value`` override; the value as the simulator's text."""
    if not isinstance(key, str):
        raise TypeError(f"override keys must be str, not {type(key).__name__}")
    if isinstance(value, bool):
        text = "on" if value else "off"
    elif value is None:
        text = "none"
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"override {key!r} must be finite, not {value!r}")
        text = repr(value)
    elif isinstance(value, str):
        text = value
    elif isinstance(value, datetime.time):
        text = clock_text(key, value)
    elif isinstance(value, datetime.timedelta):
        if key.endswith("_ms"):
            text = repr(value.total_seconds() * 1e3)
        elif key.endswith("_s"):
            text = repr(value.total_seconds())
        elif takes_duration(key):
            # A duration field of a guard's config (or a hop's attempt_timeout/margin):
            # exact, in nanoseconds.
            if value < datetime.timedelta(0):
                raise ValueError(f"override {key!r} must not be a negative duration, not {value!r}")
            text = f"{(value // datetime.timedelta(microseconds=1)) * 1000}ns"
        else:
            raise TypeError(
                f"override {key!r} does not take a timedelta (durations do: see guards.sim.KEYS)"
            )
    else:
        raise TypeError(
            f"override {key!r} must be a str, int, float, bool, None, datetime.time or "
            f"datetime.timedelta, not {type(value).__name__}"
        )
    if "\n" in text or "\r" in text:
        raise ValueError(f"override {key!r} has a line break in its value")
    return f"{key}={text}"


def override_list(
    overrides: Mapping[str, OverrideValue] | Sequence[str] | None,
    keywords: Mapping[str, OverrideValue],
) -> list[str]:
    """``key=value`` strings from ``overrides`` (a mapping, or ``"key=value"`` strings)
    then the keyword overrides, whose ``__`` stands for ``.`` (``stock_call__attempt_timeout``
    is ``stock_call.attempt_timeout``)."""
    out: list[str] = []
    if overrides is None:
        pass
    elif isinstance(overrides, Mapping):
        for k, v in overrides.items():
            out.append(override_text(k, v))
    elif isinstance(overrides, (str, bytes)) or not isinstance(overrides, Sequence):
        raise TypeError(
            "`overrides` must be a mapping of key to value (e.g. "
            "{'stock_call.attempt_timeout': '60ms'}) or a list of \"key=value\" strings, "
            f"not {type(overrides).__name__}"
        )
    else:
        for item in overrides:
            if not isinstance(item, str):
                raise TypeError(
                    f"`overrides` items must be \"key=value\" strings, not {type(item).__name__}"
                )
            out.append(item)
    for k, v in keywords.items():
        out.append(override_text(k.replace("__", "."), v))
    return out


def topology_text(topology: object) -> str:
    """A topology as JSON text: a mapping, JSON text, or a path to a JSON file."""
    if isinstance(topology, Mapping):
        try:
            return json.dumps(topology, allow_nan=False)
        except ValueError as e:
            raise ValueError(f"`topology` has a value JSON cannot hold: {e}") from None
        except TypeError as e:
            raise TypeError(f"`topology` has a value JSON cannot hold: {e}") from None
    if isinstance(topology, str):
        return topology
    if isinstance(topology, os.PathLike):
        with open(topology, encoding="utf-8") as f:
            return f.read()
    raise TypeError(
        "`topology` must be a dict (or JSON text, or a path to a JSON file), "
        f"not {type(topology).__name__}"
    )


def label_text(label: object) -> str | None:
    if label is None or isinstance(label, str):
        return label
    raise TypeError(f"`label` must be a str or None, not {type(label).__name__}")



#: A change during a run: ``(clock time, overrides)`` where the overrides are a mapping or
#: ``"key=value"`` strings (Basketly), or a topology patch (a dict, see ``simulate``).
Change = tuple[ClockTime, object]


def timeline_items(timeline: object) -> list[tuple[ClockTime, object]]:
    """``timeline`` as a list of ``(clock time, what)`` pairs: a mapping of times to what
    changes, or a sequence of pairs."""
    if timeline is None:
        return []
    if isinstance(timeline, Mapping):
        return list(timeline.items())
    if isinstance(timeline, (str, bytes)) or not isinstance(timeline, Sequence):
        raise TypeError(
            "`timeline` must be a list of (clock time, changes) pairs or a dict of them, "
            f"not {type(timeline).__name__}"
        )
    out: list[tuple[ClockTime, object]] = []
    for item in timeline:
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise TypeError(f"`timeline` items must be (clock time, changes) pairs, not {item!r}")
        out.append((item[0], item[1]))
    return out


def basketly_timeline(timeline: object) -> list[tuple[str, list[str]]]:
    """A Basketly timeline as ``(clock text, ["key=value", ...])`` pairs."""
    out = []
    for at, sets in timeline_items(timeline):
        if isinstance(sets, (str, bytes)):
            sets = [sets]
        if isinstance(sets, Mapping) or isinstance(sets, Sequence):
            items = override_list(sets, {})  # type: ignore[arg-type]
        else:
            raise TypeError(
                f"the changes at {at!r} must be a dict of overrides or \"key=value\" strings"
            )
        out.append((clock_text("timeline", at), items))
    return out


def trace_overrides(trace: object) -> list[str]:
    """``trace=`` as Basketly overrides: ``True`` (the first action), a clock time (the
    first action from then), or a dict with ``at``, ``entry`` and ``count``."""
    if trace is None or trace is False:
        return []
    if trace is True:
        return ["trace=on"]
    if isinstance(trace, (str, datetime.time)):
        return [f"trace.at={clock_text('trace', trace)}"]
    if isinstance(trace, Mapping):
        unknown = set(trace) - {"at", "entry", "count"}
        if unknown:
            raise TypeError(f"`trace` takes at, entry and count, not {sorted(unknown)}")
        out = ["trace=on"]
        if trace.get("at") is not None:
            out.append(f"trace.at={clock_text('trace', trace['at'])}")
        if trace.get("entry") is not None:
            out.append(override_text("trace.entry", trace["entry"]))
        if trace.get("count") is not None:
            out.append(override_text("trace.count", trace["count"]))
        return out
    raise TypeError(
        "`trace` must be True, a clock time or a dict with at, entry and count, "
        f"not {type(trace).__name__}"
    )


def merge_patch(base: object, patch: object, where: str = "topology") -> object:
    """``patch`` merged into ``base`` (a topology as a dict): objects merge key by key;
    ``services``, ``edges``, ``entries`` and ``ops`` may be patched by name with a dict
    ``{name: patch}``; any other value replaces the one in ``base``."""
    if isinstance(patch, Mapping) and isinstance(base, Mapping):
        out = dict(base)
        for k, v in patch.items():
            if k in out and isinstance(out[k], list) and isinstance(v, Mapping):
                items = list(out[k])
                for name, sub in v.items():
                    idx = [i for i, x in enumerate(items) if isinstance(x, Mapping) and x.get("name") == name]
                    if not idx:
                        raise ValueError(f"{where}.{k}: no element named {name!r}")
                    items[idx[0]] = merge_patch(items[idx[0]], sub, f"{where}.{k}[{name}]")
                out[k] = items
            elif k in out:
                out[k] = merge_patch(out[k], v, f"{where}.{k}")
            else:
                out[k] = v
        return out
    return patch
