"""OpenTelemetry metrics for guards, read from each guard's ``stats()`` at collection time.

::

    from opentelemetry import metrics
    import guards.otel

    exporter = guards.otel.OpenTelemetryMetrics({"stock": stock_breaker, "door": door})
    exporter.add("get_stock", get_stock.retry)          # anything with stats()

Install with ``pip install 'guards[otel]'`` (the OpenTelemetry API); your application
sets up the SDK, a reader and an exporter as usual. By default the global meter
provider is used (``meter_provider=`` to pass another).

Each stat becomes an asynchronous instrument named ``guards.<kind>.<stat>`` with the
attribute ``guard=<name>`` (and ``priority`` for per-priority lists): event counts are
observable counters (cumulative, monotonic), levels (``in_flight``, ``limit``, ``tokens``,
the breaker ``state``, ...) are observable gauges -- the same split as
:class:`guards.PrometheusCollector`. A breaker's state is a gauge
``guards.circuit_breaker.state`` with one point per state (1 for the current one, 0 for
the others). Unknown values (the native u64::MAX placeholder) are left out. Nothing is
counted twice: each collection reads the guards' own counters.

The module imports without OpenTelemetry; building :class:`OpenTelemetryMetrics` needs it
and raises ``ImportError`` saying so.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from ._util import config_error, fail_type
from .prometheus import (
    _BREAKER_STATES,
    GAUGES,
    HELP,
    _extra_levels,
    _kind_of,
    _known,
)

try:  # pragma: no cover - exercised by the import-safety test with the module hidden
    from opentelemetry import metrics as _metrics
    from opentelemetry.metrics import CallbackOptions, Observation

    HAVE_OTEL = True
except ImportError:  # pragma: no cover
    HAVE_OTEL = False

__all__ = ["OpenTelemetryMetrics"]

_NAME_MAX = 200


class OpenTelemetryMetrics:
    """Export the ``stats()`` of named guards as OpenTelemetry asynchronous instruments.

    ``guards``: an optional mapping of name to guard (anything with ``stats()``).
    ``meter_provider``: the provider to get the meter from (default: the global one).
    ``namespace``: the instrument name prefix (default ``"guards"``). ``label``: the
    attribute carrying each guard's name (default ``"guard"``).

    Thread-safe: :meth:`add` / :meth:`remove` may run while a reader collects.
    """

    def __init__(
        self,
        guards: Optional[Mapping[str, Any]] = None,
        *,
        meter_provider: Any = None,
        namespace: str = "guards",
        label: str = "guard",
    ) -> None:
        if not HAVE_OTEL:
            raise ImportError(
                "guards.otel needs the OpenTelemetry API: pip install 'guards[otel]'"
            )
        if not isinstance(namespace, str):
            fail_type("namespace", "a str", namespace)
        if not namespace or not namespace.replace("_", "a").replace(".", "a").isalnum():
            raise config_error("namespace", "out_of_range", "an instrument name prefix")
        if not isinstance(label, str):
            fail_type("label", "a str", label)
        if not label or label == "priority" or label == "state":
            raise config_error("label", "out_of_range", "an attribute name other than 'priority'")
        from . import __version__  # noqa: PLC0415 - the package is imported by now

        provider = meter_provider if meter_provider is not None else _metrics.get_meter_provider()
        self._meter = provider.get_meter("guards", __version__)
        self._namespace = namespace
        self._label = label
        self._lock = threading.Lock()
        self._guards: dict[str, Any] = {}
        self._instruments: set[tuple[str, str]] = set()
        if guards is not None:
            if not isinstance(guards, Mapping):
                fail_type("guards", "a mapping of name to guard", guards)
            for name, guard in guards.items():
                self.add(name, guard)

    def add(self, name: str, guard: Any) -> Any:
        """Export ``guard``'s stats under ``name``; returns the guard. A second guard
        under the same name replaces the first."""
        if not isinstance(name, str):
            fail_type("name", "a str", name)
        if not name or len(name) > _NAME_MAX:
            raise config_error("name", "out_of_range", f"1..={_NAME_MAX} characters")
        stats = getattr(guard, "stats", None)
        if not callable(stats):
            fail_type("guard", "an object with a stats() method", guard)
        kind = _kind_of(guard)
        keys = list(_read(kind, guard))
        if kind == "circuit_breaker":
            keys.append(("state", "gauge"))
        with self._lock:
            self._guards[name] = guard
            for key, typ in keys:
                if (kind, key) not in self._instruments:
                    self._instruments.add((kind, key))
                    self._create(kind, key, typ)
        return guard

    def remove(self, name: str) -> bool:
        """Stop exporting ``name``; returns whether it was there."""
        if not isinstance(name, str):
            fail_type("name", "a str", name)
        with self._lock:
            return self._guards.pop(name, None) is not None

    def names(self) -> list[str]:
        """The exported names."""
        with self._lock:
            return sorted(self._guards)

    # ------------------------------------------------------------------ instruments
    def _create(self, kind: str, key: str, typ: str) -> None:
        name = f"{self._namespace}.{kind}.{key}"
        description = HELP.get(key) or f"guards {kind.replace('_', ' ')}: {key.replace('_', ' ')}"
        callback = self._callback(kind, key)
        if typ == "counter":
            self._meter.create_observable_counter(
                name, callbacks=[callback], unit="1", description=description
            )
        else:
            self._meter.create_observable_gauge(
                name, callbacks=[callback], unit="1", description=description
            )

    def _callback(self, kind: str, key: str) -> Any:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            with self._lock:
                items = [(n, g) for n, g in self._guards.items() if _kind_of(g) == kind]
            out: list[Observation] = []
            for name, guard in items:
                if key == "state" and kind == "circuit_breaker":
                    try:
                        state = guard.state
                    except Exception:  # noqa: BLE001 - one broken guard, one missing point
                        continue
                    for s in _BREAKER_STATES:
                        out.append(
                            Observation(1 if state == s else 0, {self._label: name, "state": s})
                        )
                    continue
                try:
                    stats = dict(guard.stats())
                    stats.update(_extra_levels(kind, guard))
                except Exception:  # noqa: BLE001 - one broken guard must not break a read
                    continue
                value: Any = stats.get(key)
                if isinstance(value, bool):
                    value = int(value)
                if isinstance(value, (list, tuple)):
                    for i, v in enumerate(value):
                        if _known(v):
                            out.append(
                                Observation(float(v), {self._label: name, "priority": str(i)})
                            )
                elif _known(value):
                    out.append(Observation(float(value), {self._label: name}))
            return out

        return observe


def _read(kind: str, guard: Any) -> Iterable[tuple[str, str]]:
    """The stats of ``guard`` as (key, "counter" | "gauge")."""
    try:
        stats = guard.stats()
    except Exception:  # noqa: BLE001 - a guard that cannot say yet: nothing to declare
        return
    if not isinstance(stats, Mapping):
        return
    stats = dict(stats)
    stats.update(_extra_levels(kind, guard))
    for key, value in stats.items():
        if not isinstance(key, str) or not key.replace("_", "a").isalnum():
            continue
        if isinstance(value, (list, tuple)):
            gauge = key in GAUGES or key.startswith("in_flight")
        elif isinstance(value, (int, float)):
            gauge = (isinstance(value, float) and not isinstance(value, bool)) or key in GAUGES
        else:
            continue
        yield key, ("gauge" if gauge else "counter")
