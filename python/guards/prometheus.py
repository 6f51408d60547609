"""Prometheus metrics for guards, read from each guard's ``stats()``.

:class:`PrometheusCollector` is a ``prometheus_client`` custom collector: register it once,
add the guards you want to see under a name, and every scrape reads their counters
(nothing is counted twice, nothing is kept in Python between scrapes)::

    from prometheus_client import REGISTRY, start_http_server
    import guards

    stock_breaker = guards.CircuitBreaker()
    door = guards.Admission()
    collector = guards.PrometheusCollector({"stock": stock_breaker, "door": door})
    REGISTRY.register(collector)
    start_http_server(9100)

Each stat becomes one metric family per kind of guard, labelled with the name you gave:
``guards_circuit_breaker_rejected_open_total{guard="stock"}``. Counters end in ``_total``;
values that go up and down (``in_flight``, ``limit``, ``tokens``, ...) are gauges; a stat
that is a list (per priority class) gets a ``priority`` label. Besides ``stats()``, each
scrape reads the levels a guard only shows by a method:

* a circuit breaker's state, as a state set: ``guards_circuit_breaker_state{guard="stock",
  state="open"} 1`` (and 0 for ``closed`` and ``half_open``);
* a retry budget's ``tokens``, a bulkhead's ``max_concurrent``, a queue's ``len``, an
  adaptive throttle's ``reject_probability``.

A value that is not known is left out rather than exported as a placeholder: an
admission without an adaptive limit has no ``limit`` (its native stat is 2**64-1). Anything with a
``stats() -> dict`` can be added: the retry decorator's ``fn.retry``, a guarded call's
``guarded`` object, the admission middleware.

The module imports without ``prometheus_client``; only building a collector needs it
(``pip install prometheus_client``), and then it raises ``ImportError`` saying so.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Optional

from ._util import config_error, fail_type, snake_case

try:  # pragma: no cover - exercised by the import-safety test with the module hidden
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
    from prometheus_client.registry import Collector as _Collector

    HAVE_PROMETHEUS = True
except ImportError:  # pragma: no cover
    HAVE_PROMETHEUS = False
    _Collector = object  # type: ignore[assignment,misc]

__all__ = ["PrometheusCollector"]

#: Stats that are levels, not event counts: exported as gauges.
GAUGES = frozenset(
    {
        "in_flight",
        "limit",
        "available",
        "tokens",
        "tokens_micros",
        "len",
        "length",
        "queued",
        "state",
        "threshold",
        "capacity",
        "max_concurrent",
        "consecutive_openings",
        "generation",
        "standing",
        "estimate",
        "estimate_ns",
        "p50_ns",
        "p90_ns",
        "p99_ns",
        "p999_ns",
        "probability",
        "reject_probability",
        "entries",
    }
)

#: The native counters' "no value" (u64::MAX): never exported.
_UNKNOWN = 2**64 - 1

#: Help text of the stats a reader meets first (others get a generic line).
HELP = {
    "state": "Circuit breaker state (a state set: 1 for the current state, 0 for the others)",
    "in_flight": "Calls inside the guard now",
    "limit": "Current concurrency limit",
    "tokens": "Retry budget tokens available now (one pays for a retry)",
    "max_concurrent": "Bulkhead capacity (calls allowed inside at once)",
    "len": "Waiters in the queue now",
    "reject_probability": "Probability that the adaptive throttle rejects a call locally now",
    "entries": "Keys with a breaker of their own",
    "successes": "Calls that succeeded",
    "failures": "Calls that failed",
    "rejected_open": "Calls refused while the breaker was open",
    "rejected_half_open": "Calls refused while the breaker was half-open (probes busy)",
    "closed_to_open": "Times the breaker opened",
    "half_open_to_closed": "Times the breaker closed after passing probes",
    "half_open_to_open": "Times a failed probe re-opened the breaker",
    "open_to_half_open": "Times the breaker let probes through",
    "admitted": "Requests admitted",
    "dropped": "Calls that ended in an overload signal (timeout, 503, 429)",
    "withdrawals": "Retries the budget paid for",
    "refusals": "Retries the budget refused",
}

#: Levels read by a method, per kind: (stat name, how to read it).
_EXTRA_GAUGES: dict[str, tuple[tuple[str, str], ...]] = {
    "retry_budget": (("tokens", "tokens"),),
    "bulkhead": (("max_concurrent", "max_concurrent"),),
    "queue_discipline": (("len", "len"),),
    "adaptive_throttle": (("reject_probability", "reject_probability"),),
}
_BREAKER_STATES = ("closed", "open", "half_open")

_NAME_OK = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_VALUE_MAX = 200


def _kind_of(guard: object) -> str:
    kind = getattr(guard, "metrics_kind", None)
    if isinstance(kind, str) and kind:
        return kind
    return snake_case(type(guard).__name__)


class PrometheusCollector(_Collector):  # type: ignore[misc,valid-type]
    """A collector exporting the ``stats()`` of named guards.

    ``guards``: an optional mapping of name to guard (anything with ``stats()``).
    ``namespace``: the metric name prefix (default ``"guards"``).
    ``label``: the label carrying each guard's name (default ``"guard"``).

    Safe to use from several threads: :meth:`add`/:meth:`remove` may run while a scrape
    collects.
    """

    def __init__(
        self,
        guards: Optional[Mapping[str, Any]] = None,
        *,
        namespace: str = "guards",
        label: str = "guard",
    ) -> None:
        if not HAVE_PROMETHEUS:
            raise ImportError(
                "guards.PrometheusCollector needs prometheus_client: pip install prometheus_client"
            )
        if not isinstance(namespace, str):
            fail_type("namespace", "a str", namespace)
        if not isinstance(label, str):
            fail_type("label", "a str", label)
        if not _NAME_OK.match(namespace):
            raise config_error("namespace", "out_of_range", "a Prometheus metric name prefix")
        if not _NAME_OK.match(label) or label.startswith("__") or label == "priority":
            raise config_error(
                "label", "out_of_range", "a Prometheus label name other than 'priority'"
            )
        self._namespace = namespace
        self._label = label
        self._lock = threading.Lock()
        self._guards: dict[str, Any] = {}
        if guards is not None:
            if not isinstance(guards, Mapping):
                fail_type("guards", "a mapping of name to guard", guards)
            for name, guard in guards.items():
                self.add(name, guard)

    def add(self, name: str, guard: Any) -> Any:
        """Export ``guard``'s stats under ``name``; returns the guard (so it can wrap a
        constructor). A second guard under the same name replaces the first."""
        if not isinstance(name, str):
            fail_type("name", "a str", name)
        if not name or len(name) > _LABEL_VALUE_MAX:
            raise config_error("name", "out_of_range", f"1..={_LABEL_VALUE_MAX} characters")
        stats = getattr(guard, "stats", None)
        if not callable(stats):
            fail_type("guard", "an object with a stats() method", guard)
        with self._lock:
            self._guards[name] = guard
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

    def describe(self) -> Iterable[Any]:
        """Nothing: the guards are registered and removed after the collector is, so it
        declares no metric up front (and registering it runs no collection)."""
        # Guards come and go after registration: nothing to declare up front (this also
        # keeps registration from running a collection).
        return []

    def collect(self) -> Iterator[Any]:
        with self._lock:
            items = list(self._guards.items())
        families: dict[str, Any] = {}
        for name, guard in items:
            kind = _kind_of(guard)
            try:
                stats = guard.stats()
            except Exception:  # noqa: BLE001 - one broken guard must not break a scrape
                continue
            if not isinstance(stats, Mapping):
                continue
            stats = dict(stats)
            stats.update(_extra_levels(kind, guard))
            for key, value in stats.items():
                if not isinstance(key, str):
                    continue
                base = f"{self._namespace}_{kind}_{key}"
                if not _NAME_OK.match(base):
                    continue
                if isinstance(value, bool):
                    value = int(value)
                if isinstance(value, (list, tuple)):
                    gauge = key in GAUGES or key.startswith("in_flight")
                    fam = self._family(families, base, gauge, kind, key, by_priority=True)
                    for i, v in enumerate(value):
                        if _known(v):
                            fam.add_metric([name, str(i)], float(v))
                elif _known(value):
                    gauge = isinstance(value, float) or key in GAUGES
                    fam = self._family(families, base, gauge, kind, key, by_priority=False)
                    fam.add_metric([name], float(value))
            if kind == "circuit_breaker":
                self._breaker_state(families, kind, name, guard)
        yield from families.values()

    def _breaker_state(self, families: dict[str, Any], kind: str, name: str, guard: Any) -> None:
        try:
            state = guard.state
        except Exception:  # noqa: BLE001 - one broken guard must not break a scrape
            return
        base = f"{self._namespace}_{kind}_state"
        fam = families.get(base)
        if fam is None:
            fam = GaugeMetricFamily(base, HELP["state"], labels=[self._label, "state"])
            families[base] = fam
        for s in _BREAKER_STATES:
            fam.add_metric([name, s], 1.0 if state == s else 0.0)

    def _family(
        self,
        families: dict[str, Any],
        base: str,
        gauge: bool,
        kind: str,
        key: str,
        *,
        by_priority: bool,
    ) -> Any:
        fam = families.get(base)
        if fam is None:
            labels = [self._label, "priority"] if by_priority else [self._label]
            doc = HELP.get(key) or f"guards {kind.replace('_', ' ')}: {key.replace('_', ' ')}"
            if gauge:
                fam = GaugeMetricFamily(base, doc, labels=labels)
            else:
                fam = CounterMetricFamily(base, doc, labels=labels)
            families[base] = fam
        return fam


def _known(v: Any) -> bool:
    """A number to export: not a bool-like placeholder, not NaN, not u64::MAX."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    if isinstance(v, float):
        return v == v and v not in (float("inf"), float("-inf"))
    return v != _UNKNOWN


def _extra_levels(kind: str, guard: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stat, attr in _EXTRA_GAUGES.get(kind, ()):
        try:
            v = getattr(guard, attr)
            if callable(v):
                v = v()
        except Exception:  # noqa: BLE001 - one broken reading must not break a scrape
            continue
        out[stat] = v
    return out
