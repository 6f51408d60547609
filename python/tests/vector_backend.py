"""The Python backend of the conformance vectors (``tests/vectors/README.md``).

The shared interpreter (``guards._guards._VectorSession``, ffi's ``guards::vectors``) reads
the files, hands out one step at a time, keeps permits by handle and compares; this module
runs each step through the PUBLIC Python classes (``import guards``) and replies with the
result. An op or value the Python API does not have is replied as unsupported or
unobservable (``...``): the interpreter reports both, never as passed.

Conventions:

- A case's config arrives flattened (``config.backoff.base``, ``config.limits[2]``); it is
  folded back into the file's nested form and passed as keyword arguments. Durations are
  integer nanoseconds: a non-negative one goes in as ``guards.Nanos`` (exact), a negative
  one as negative seconds, so that the class judges it as user input (``negative``).
- Results in nanoseconds come from the ``*_ns`` forms of the API (exact integers).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Optional

import guards
from guards._guards import _VectorSession


class Unsupported(Exception):
    """The Python API cannot run this step (the case is reported as not covered)."""


class ConfigRefused(Exception):
    def __init__(self, field: str, kind: str) -> None:
        super().__init__(f"{field}: {kind}")
        self.field = field
        self.kind = kind


#: A value the Python API cannot show (the interpreter counts it as unobserved).
U = ...

# ----------------------------------------------------------------- configs

DURATIONS = {
    # breaker
    "window_duration", "slow_call_duration", "open_duration", "max_open_duration", "probe_timeout",
    # deadline, retry
    "attempt_timeout", "margin", "base", "cap", "max_retry_after", "min_attempt_time", "ttl",
    # queue, tracker, hedging, throttle
    "interval", "target", "window", "min_delay", "max_delay", "refresh_interval",
    # limits, limiter, admission
    "latency_target", "min_retry_after",
}  # fmt: skip

_SEG = re.compile(r"^(\w+?)((?:\[\d+\])*)$")


def unflatten(args: dict[str, Any], prefix: str = "config.") -> dict[str, Any]:
    """The ``config.*`` arguments folded back into the file's nested object."""
    root: dict[str, Any] = {}
    for k, v in args.items():
        if not k.startswith(prefix):
            continue
        parts: list[Any] = []
        for seg in k[len(prefix) :].split("."):
            m = _SEG.match(seg)
            assert m, f"bad config path {k!r}"
            parts.append(m.group(1))
            parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
        cur: Any = root
        for here, nxt in zip(parts, parts[1:]):
            empty: Any = [] if isinstance(nxt, int) else {}
            if isinstance(cur, list):
                while len(cur) <= here:
                    cur.append(None)
                if cur[here] is None:
                    cur[here] = empty
            elif here not in cur:
                cur[here] = empty
            cur = cur[here]
        last = parts[-1]
        if isinstance(cur, list):
            while len(cur) <= last:
                cur.append(None)
        cur[last] = v
    return root


def dur(v: Any) -> Any:
    """A duration in integer ns as the Python API takes it (see the module docs)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return guards.Nanos(v) if v >= 0 else v / 1e9
    return v  # a float (non-finite) or a wrong type: the class judges it


def kwargs(raw: dict[str, Any]) -> dict[str, Any]:
    """A flat config object as keyword arguments (durations converted)."""
    return {k: dur(v) if k in DURATIONS else v for k, v in raw.items()}


def building(make: Callable[[], Any], strip: str = "") -> Any:
    """Build with ``make()``; a refused config becomes the interpreter's config error."""
    try:
        return make()
    except guards.ConfigError as e:
        f = e.field or ""
        if strip and f.startswith(strip):
            f = f[len(strip) :]
        raise ConfigRefused(f, e.kind or "") from e


def ns_of_seconds(s: Optional[float]) -> Any:
    """Exact integer ns of seconds the API gives as a float (``U`` where not exact)."""
    if s is None:
        return None
    if not math.isfinite(s):
        return U
    x = s * 1e9
    if abs(x) >= 2**53 or x != round(x):
        return U
    return int(round(x))


class Held:
    """Permits (or receipts) kept under the interpreter's handles."""

    def __init__(self) -> None:
        self.m: dict[int, Any] = {}

    def keep(self, a: dict[str, Any], p: Any, drop: Callable[[Any], Any]) -> None:
        if "hold" in a:
            self.m[a["hold"]] = p
        else:
            drop(p)

    def take(self, a: dict[str, Any]) -> Any:
        return self.m.pop(a["permit"])

    def peek(self, a: dict[str, Any]) -> Any:
        return self.m[a["permit"]]


class Case:
    """A guard built by ``new``; ``run(op, args)`` answers one step."""

    def run(self, op: str, a: dict[str, Any]) -> Any:
        f = getattr(self, "op_" + op, None)
        if f is None:
            raise LookupError(f"the Python backend has no op `{op}` for {type(self).__name__}")
        return f(a)


# ----------------------------------------------------------------- deadline


def deadline_of(v: Optional[int]) -> guards.Deadline:
    return guards.Deadline(v)


def parsed(f: Callable[[], Any], ok: Callable[[Any], Any]) -> Any:
    try:
        v = f()
    except guards.HeaderError as e:
        return {"error": e.kind}
    return {"ok": ok(v)}


class DeadlineCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        self.cfg = building(lambda: guards.DeadlineConfig(**kwargs(unflatten(a))))

    def op_after(self, a: dict[str, Any]) -> Any:
        return guards.Deadline.after(guards.Nanos(a["timeout"]), now=a["now"]).expires_at

    def op_time_left(self, a: dict[str, Any]) -> Any:
        return deadline_of(a.get("deadline")).time_left_ns(now=a["now"])

    def op_is_expired(self, a: dict[str, Any]) -> Any:
        return deadline_of(a.get("deadline")).is_expired(now=a["now"])

    def op_min(self, a: dict[str, Any]) -> Any:
        return deadline_of(a.get("a")).min(deadline_of(a.get("b"))).expires_at

    def op_attempt_budget(self, a: dict[str, Any]) -> Any:
        b = self.cfg.attempt_budget(deadline_of(a.get("deadline")), now=a["now"])
        if b.decision == "start":
            return {"decision": "start", "budget": b.budget_ns}
        if b.decision == "too_little_left":
            return {"decision": "too_little_left", "left": b.left_ns}
        return {"decision": b.decision}

    def op_encode_grpc_timeout(self, a: dict[str, Any]) -> Any:
        return guards.encode_grpc_timeout(guards.Nanos(a["timeout"]))

    def op_encode_millis(self, a: dict[str, Any]) -> Any:
        return guards.encode_millis(guards.Nanos(a["timeout"]))

    def op_to_grpc_timeout(self, a: dict[str, Any]) -> Any:
        return deadline_of(a.get("deadline")).to_grpc_timeout(now=a["now"])

    def op_to_millis(self, a: dict[str, Any]) -> Any:
        return deadline_of(a.get("deadline")).to_millis(now=a["now"])

    def op_parse_grpc_timeout(self, a: dict[str, Any]) -> Any:
        return parsed(lambda: guards.parse_grpc_timeout(a["value"]), lambda n: n.ns)

    def op_parse_millis(self, a: dict[str, Any]) -> Any:
        return parsed(lambda: guards.parse_millis(a["value"]), lambda n: n.ns)

    def op_from_grpc_timeout(self, a: dict[str, Any]) -> Any:
        return parsed(
            lambda: guards.Deadline.from_grpc_timeout(a["value"], now=a["now"]),
            lambda d: d.expires_at,
        )

    def op_from_millis(self, a: dict[str, Any]) -> Any:
        return parsed(
            lambda: guards.Deadline.from_millis(a["value"], now=a["now"]), lambda d: d.expires_at
        )


# ----------------------------------------------------------------- backoff


class BackoffCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        self.b = building(lambda: guards.Backoff(**kwargs(unflatten(a))))
        self.rng = guards.Rng(a["seed"])

    def op_ceiling(self, a: dict[str, Any]) -> Any:
        return self.b.ceiling_ns(a["retry"])

    def op_max_delay(self, a: dict[str, Any]) -> Any:
        return self.b.max_delay_ns(a["retry"])

    def op_delay(self, a: dict[str, Any]) -> Any:
        return self.b.delay_ns(a["retry"], guards.Nanos(a.get("prev", 0)), rng=self.rng)

    def op_delay_from_bits(self, a: dict[str, Any]) -> Any:
        return self.b.delay_from_bits_ns(a["retry"], a["bits"], guards.Nanos(a.get("prev", 0)))

    def op_rng_next_u64(self, a: dict[str, Any]) -> Any:
        return self.rng.next_u64()

    def op_fnv1a64(self, a: dict[str, Any]) -> Any:
        return guards.fnv1a64(a["id"])

    def op_stable_offset(self, a: dict[str, Any]) -> Any:
        return guards.stable_offset_ns(a["id"], guards.Nanos(a["period"]))

    def op_next_stable_run(self, a: dict[str, Any]) -> Any:
        return guards.next_stable_run(a["id"], guards.Nanos(a["period"]), now=a["now"])


# ----------------------------------------------------------------- retry policy


#: The counters the file's `stats` names (Python's policy counts the retry loop's too).
POLICY_STATS = (
    "retries", "succeeded", "permanent", "overloaded", "not_retryable", "attempts_exhausted",
    "not_idempotent", "retry_after_too_long", "deadline_exceeded", "budget_exhausted",
)  # fmt: skip


class RetryPolicyCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        raw = unflatten(a)
        kw = kwargs(raw)
        if "backoff" in raw:
            kw["backoff"] = kwargs(raw["backoff"])
        self.p = building(lambda: guards.RetryPolicy(**kw))
        self.rng = guards.Rng(a["seed"])
        self.calls: list[dict[str, Any]] = []

    def op_decide(self, a: dict[str, Any]) -> Any:
        gate = None
        if "gate" in a:
            allow = a["gate"] == "allow"
            calls = self.calls

            class Gate:
                def allow_retry(self, now: int, cause: str) -> bool:
                    calls.append({"now": now, "cause": cause})
                    return allow

            gate = Gate()
        ra = a.get("retry_after")
        tl = a.get("time_left")
        d = self.p.decide(
            a["attempts_made"],
            a["outcome"],
            retry_after=None if ra is None else guards.Nanos(ra),
            idempotency=a.get("idempotency"),
            time_left=None if tl is None else guards.Nanos(tl),
            prev_delay=guards.Nanos(a.get("prev_delay", 0)),
            gate=gate,
            rng=self.rng,
            now=a["now"],
        )
        return {"retry": d.delay_ns} if d.retry else {"give_up": d.reason}

    def op_gate_calls(self, a: dict[str, Any]) -> Any:
        return list(self.calls)

    def op_stats(self, a: dict[str, Any]) -> Any:
        s = self.p.stats()
        return {k: s[k] for k in POLICY_STATS}

    def op_worst_case_time(self, a: dict[str, Any]) -> Any:
        return self.p.worst_case_time_ns(guards.Nanos(a["attempt_timeout"]))

    def op_rng_next_u64(self, a: dict[str, Any]) -> Any:
        return self.rng.next_u64()


# ----------------------------------------------------------------- bulkhead


class BulkheadCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        self.b = building(lambda: guards.Bulkhead(**kwargs(unflatten(a))))
        self.held = Held()

    def op_try_acquire(self, a: dict[str, Any]) -> Any:
        try:
            p = self.b.acquire()
        except guards.BulkheadFull as e:
            return {"acquired": False, "in_flight": e.in_flight, "max_concurrent": e.max_concurrent}
        self.held.keep(a, p, lambda q: q.release())
        return {"acquired": True}

    def op_release(self, a: dict[str, Any]) -> Any:
        if not self.held.take(a).release():
            raise AssertionError("the permit was already released")
        return None

    def op_in_flight(self, a: dict[str, Any]) -> Any:
        return self.b.in_flight

    def op_available(self, a: dict[str, Any]) -> Any:
        return self.b.available

    def op_stats(self, a: dict[str, Any]) -> Any:
        return self.b.stats()

    def op_from_littles_law(self, a: dict[str, Any]) -> Any:
        try:
            b = guards.Bulkhead.from_littles_law(
                a["rate_per_sec"], guards.Nanos(a["p99"]), a["headroom"]
            )
        except guards.ConfigError as e:
            return {"error": {"field": e.field, "kind": e.kind}}
        return {"max_concurrent": b.max_concurrent}


# ----------------------------------------------------------------- retry budget


def budget_kwargs(raw: dict[str, Any]) -> dict[str, Any]:
    return kwargs(raw)


class RetryBudgetCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        self.b = building(lambda: guards.RetryBudget(**budget_kwargs(unflatten(a))))
        self.held = Held()

    def op_deposit(self, a: dict[str, Any]) -> Any:
        self.b.deposit(now=a["now"])

    def op_withdraw(self, a: dict[str, Any]) -> Any:
        r = self.b.withdraw(a["cause"], now=a["now"])
        if r is None:
            return False
        self.held.keep(a, r, lambda _r: None)
        return True

    def op_allow_retry(self, a: dict[str, Any]) -> Any:
        return self.b.allow_retry(a["now"], a["cause"])

    def op_on_success(self, a: dict[str, Any]) -> Any:
        r = self.held.take(a) if "permit" in a else None
        self.b.on_success(r, now=a["now"])

    def op_on_failure(self, a: dict[str, Any]) -> Any:
        self.b.on_failure(now=a["now"])

    def op_tokens_micros(self, a: dict[str, Any]) -> Any:
        return self.b.tokens_micros(now=a["now"])

    def op_tokens(self, a: dict[str, Any]) -> Any:
        return self.b.tokens(now=a["now"])

    def op_receipt_cost_micros(self, a: dict[str, Any]) -> Any:
        return self.held.peek(a).cost_micros

    def op_stats(self, a: dict[str, Any]) -> Any:
        return self.b.stats()


# ----------------------------------------------------------------- latency tracker, hedging


class LatencyTrackerCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        self.t = building(lambda: guards.LatencyTracker(**kwargs(unflatten(a))))

    def op_record(self, a: dict[str, Any]) -> Any:
        self.t.record_ns(a["latency"], now=a["now"])

    def op_count(self, a: dict[str, Any]) -> Any:
        return self.t.count(now=a["now"])

    def op_quantile(self, a: dict[str, Any]) -> Any:
        return self.t.quantile_ns(a["q"], now=a["now"])

    def op_summary(self, a: dict[str, Any]) -> Any:
        return self.t.summary_ns(now=a["now"])

    def op_propose_timeout(self, a: dict[str, Any]) -> Any:
        return self.t.propose_timeout_ns(now=a["now"])

    def op_false_timeout_rate(self, a: dict[str, Any]) -> Any:
        return self.t.false_timeout_rate(guards.Nanos(a["timeout"]), now=a["now"])

    def op_stats(self, a: dict[str, Any]) -> Any:
        return self.t.stats()


class HedgingCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        raw = unflatten(a)
        kw = kwargs(raw)
        if "tracker" in raw:
            kw["tracker"] = kwargs(raw["tracker"])
        self.h = building(lambda: guards.Hedging(**kw))

    def op_record_latency(self, a: dict[str, Any]) -> Any:
        self.h.record_latency_ns(a["latency"], now=a["now"])

    def op_hedge_delay(self, a: dict[str, Any]) -> Any:
        return self.h.hedge_delay_ns(now=a["now"])

    def op_should_hedge(self, a: dict[str, Any]) -> Any:
        gate = None
        if "gate" in a:
            allow = a["gate"] == "allow"

            class Gate:
                def allow_retry(self, now: int, cause: str) -> bool:
                    if cause != "hedge":
                        raise AssertionError(f"a hedge gate asked about {cause!r}")
                    return allow

            gate = Gate()
        d = self.h.should_hedge(
            a["request_started"],
            a["hedges_sent"],
            idempotent=a["idempotent"],
            gate=gate,
            now=a["now"],
        )
        if d.decision == "wait_until":
            return {"decision": "wait_until", "at": d.at}
        if d.decision == "never":
            return {"decision": "never", "reason": d.reason}
        return {"decision": d.decision}

    def op_stats(self, a: dict[str, Any]) -> Any:
        return self.h.stats()


# ----------------------------------------------------------------- adaptive throttle


class AdaptiveThrottleCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        self.t = building(lambda: guards.AdaptiveThrottle(**kwargs(unflatten(a))))

    def op_should_reject(self, a: dict[str, Any]) -> Any:
        return self.t.should_reject(now=a["now"])

    def op_on_accepted(self, a: dict[str, Any]) -> Any:
        self.t.on_accepted(now=a["now"])

    def op_on_rejected_by_backend(self, a: dict[str, Any]) -> Any:
        self.t.on_rejected_by_backend(now=a["now"])

    def op_reject_probability(self, a: dict[str, Any]) -> Any:
        return self.t.reject_probability(now=a["now"])

    def op_window(self, a: dict[str, Any]) -> Any:
        return self.t.window(now=a["now"])

    def op_stats(self, a: dict[str, Any]) -> Any:
        return self.t.stats()


# ----------------------------------------------------------------- brownout


def brownout_kwargs(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k != "key"}


class BrownoutCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        raw = unflatten(a)
        self.b = building(lambda: guards.Brownout(**brownout_kwargs(raw)))

    def op_on_refusal(self, a: dict[str, Any]) -> Any:
        return self.b.on_refusal(a["kind"])

    def op_decide(self, a: dict[str, Any]) -> Any:
        return self.b.decide(a["kind"])

    def op_on_full(self, a: dict[str, Any]) -> Any:
        self.b.on_full()

    def op_stats(self, a: dict[str, Any]) -> Any:
        return self.b.stats()

    def op_operation_key(self, a: dict[str, Any]) -> Any:
        return guards.operation_key(a["name"])


class BrownoutTableCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        self.t = guards.BrownoutTable(a["capacity"])
        if self.t.capacity != a["capacity"]:
            raise Unsupported(f"a table of {a['capacity']} (Python made {self.t.capacity})")
        for op in unflatten(a)["operations"]:
            self.t.register(op["key"], **brownout_kwargs(op))

    def op_on_refusal(self, a: dict[str, Any]) -> Any:
        return self.t.on_refusal(a["key"], a["kind"])

    def op_on_full(self, a: dict[str, Any]) -> Any:
        return self.t.on_full(a["key"])

    def op_stats(self, a: dict[str, Any]) -> Any:
        return self.t.stats(a["key"])

    def op_totals(self, a: dict[str, Any]) -> Any:
        return self.t.totals()

    def op_unknown(self, a: dict[str, Any]) -> Any:
        return self.t.unknown()

    def op_register(self, a: dict[str, Any]) -> Any:
        try:
            return self.t.register(a["key"], **brownout_kwargs(unflatten(a)))
        except guards.ConfigError as e:
            return {"error": "config", "field": e.field, "kind": e.kind}
        except ValueError as e:
            if "already registered" not in str(e):
                raise
            return {"error": "duplicate"}
        except RuntimeError as e:
            if "full" not in str(e):
                raise
            return {"error": "full"}

    def op_operation_key(self, a: dict[str, Any]) -> Any:
        return guards.operation_key(a["name"])


def brownout_build(a: dict[str, Any]) -> Case:
    if "capacity" in a:
        return BrownoutTableCase(a)
    return BrownoutCase(a)


# ----------------------------------------------------------------- limit, limiter, admission


def limit_kwargs(raw: dict[str, Any]) -> dict[str, Any]:
    return kwargs(raw)


class LimitCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        kw = limit_kwargs(unflatten(a))
        algorithm = kw.pop("algorithm", "vegas")
        self.lim = building(lambda: guards.Limit(algorithm, **kw))

    def op_update(self, a: dict[str, Any]) -> Any:
        return self.lim.update(guards.Nanos(a["rtt"]), a["in_flight"], a["dropped"], now=a["now"])

    def op_limit(self, a: dict[str, Any]) -> Any:
        return self.lim.limit

    def op_estimate(self, a: dict[str, Any]) -> Any:
        return self.lim.estimate

    def op_min_rtt(self, a: dict[str, Any]) -> Any:
        return self.lim.min_rtt_ns

    def op_long_rtt(self, a: dict[str, Any]) -> Any:
        return self.lim.long_rtt_ns


class GateCase(Case):
    """What the limiter and the admission door share: permits kept by name and reported
    through the call contract's primitives, and the limit as the gate sees it."""

    gate: Any
    held: Held

    def op_on_success(self, a: dict[str, Any]) -> Any:
        self.held.take(a).on_success(now=a["now"])

    def op_on_dropped(self, a: dict[str, Any]) -> Any:
        self.held.take(a).on_dropped(now=a["now"])

    def op_on_ignore(self, a: dict[str, Any]) -> Any:
        self.held.take(a).on_ignore()

    def op_limit(self, a: dict[str, Any]) -> Any:
        return self.gate.limit

    def op_in_flight(self, a: dict[str, Any]) -> Any:
        return self.gate.in_flight

    def op_threshold(self, a: dict[str, Any]) -> Any:
        return self.gate.threshold(a["priority"])


class LimiterCase(GateCase):
    def __init__(self, a: dict[str, Any]) -> None:
        raw = unflatten(a)
        kw = kwargs({k: v for k, v in raw.items() if k not in ("limit", "partitions")})
        if "limit" in raw:
            kw["limit"] = limit_kwargs(raw["limit"])
        if "partitions" in raw:
            # The file's config is core's struct: a partition or key left out takes core's
            # default; Python reads a short list as "repeat the class before", so every
            # class and key is spelled out.
            parts = []
            for i in range(8):
                given = raw["partitions"][i] if i < len(raw["partitions"]) else None
                entry: dict[str, Any] = {"share": 1.0, "max_in_flight": 2**64 - 1}
                entry |= given or {}
                parts.append(entry)
            kw["partitions"] = parts
        self.gate = building(lambda: guards.Limiter(**kw), strip="limit.")
        self.held = Held()

    def op_try_acquire(self, a: dict[str, Any]) -> Any:
        try:
            p = self.gate.acquire(a["priority"], now=a["now"])
        except guards.LimitExceeded as e:
            return {
                "admitted": False,
                "reason": e.reason,
                "retry_after": e.retry_after_ns,
                "threshold": e.threshold,
                "in_flight": e.in_flight,
            }
        got = {"admitted": True, "in_flight": p.in_flight, "threshold": p.threshold}
        self.held.keep(a, p, lambda q: q.on_ignore())
        return got

    def op_retry_after(self, a: dict[str, Any]) -> Any:
        return self.gate.retry_after_ns

    def op_stats(self, a: dict[str, Any]) -> Any:
        return {**self.gate.stats(), "rejected_by_priority": self.gate.rejected_by_priority()}


class AdmissionCase(GateCase):
    def __init__(self, a: dict[str, Any]) -> None:
        raw = unflatten(a)
        kw = kwargs({k: v for k, v in raw.items() if k not in ("limit", "limits", "shares")})
        if "limit" in raw:
            kw["limit"] = limit_kwargs(raw["limit"])
        # Core's struct: levels a short list leaves out keep core's defaults (80, 64, ...;
        # shares 1.0), which Python would read as "repeat the level before": spelled out.
        if "limits" in raw:
            kw["limits"] = list(raw["limits"]) + [80, 64, 64, 64, 64, 64, 64, 64][len(raw["limits"]) :]
        if "shares" in raw:
            kw["shares"] = list(raw["shares"]) + [1.0] * (8 - len(raw["shares"]))
        self.gate = building(lambda: guards.Admission(**kw), strip="limit.")
        self.held = Held()

    def op_try_acquire(self, a: dict[str, Any]) -> Any:
        try:
            t = self.gate.acquire(a["priority"], now=a["now"])
        except guards.AdmissionRejected as e:
            return {
                "admitted": False,
                "reason": e.reason,
                "retry_after": e.retry_after_ns,
                "retry_after_secs": e.retry_after_secs,
                "in_flight": e.in_flight,
                "threshold": e.threshold,
            }
        got = {"admitted": True, "in_flight": t.in_flight}
        self.held.keep(a, t, lambda q: q.on_ignore())
        return got

    def op_stats(self, a: dict[str, Any]) -> Any:
        return {**self.gate.stats(), "refused_by_priority": self.gate.refused_by_priority()}


# ----------------------------------------------------------------- circuit breaker


class BreakerCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        kw = kwargs(unflatten(a))
        self.keyed = "keyed_slots" in a
        if self.keyed:
            self.g: Any = building(lambda: guards.KeyedBreakers(slots=a["keyed_slots"], **kw))
            if self.g.slots != a["keyed_slots"]:
                raise Unsupported(f"a set of {a['keyed_slots']} slots (Python made {self.g.slots})")
        else:
            self.g = building(lambda: guards.CircuitBreaker(**kw, capacity=a["capacity"]))
            if self.g.capacity != a["capacity"]:
                raise Unsupported(
                    f"a breaker of exactly {a['capacity']} cells (the Python API grows the "
                    f"cells to fit the window: {self.g.capacity})"
                )
        self.held = Held()
        # Admitted permits the file does not name: kept alive, unreported (a Python permit
        # that is collected gives its place back without a verdict, at the collector's time).
        self.unreported: list[Any] = []

    def key(self, a: dict[str, Any]) -> tuple[Any, ...]:
        return (a["key"],) if self.keyed else ()

    def op_try_acquire(self, a: dict[str, Any]) -> Any:
        try:
            p = self.g.acquire(*self.key(a), now=a["now"])
        except guards.BreakerOpen as e:
            return {"rejected": e.reason, "retry_at": e.retry_at}
        if p.is_probe:
            got = {"admitted": "probe", "generation": p.generation, "probe_timeout": p.probe_timeout_ns}
        else:
            got = {"admitted": "call", "generation": p.generation}
        self.held.keep(a, p, self.unreported.append)
        return got

    def op_on_success(self, a: dict[str, Any]) -> Any:
        return self.held.take(a).on_success(now=a["now"])

    def op_on_failure(self, a: dict[str, Any]) -> Any:
        return self.held.take(a).on_failure(now=a["now"])

    def op_on_ignore(self, a: dict[str, Any]) -> Any:
        self.held.take(a).on_ignore()

    def op_state(self, a: dict[str, Any]) -> Any:
        if self.keyed:
            return self.g.state(a["key"], now=a["now"])
        return self.g.state_at(a["now"])

    def op_status(self, a: dict[str, Any]) -> Any:
        return self.g.status(*self.key(a))

    def op_window_counts(self, a: dict[str, Any]) -> Any:
        return self.g.window_counts(*self.key(a), now=a["now"])

    def op_stats(self, a: dict[str, Any]) -> Any:
        return self.g.stats(*self.key(a))

    def op_get_or_insert(self, a: dict[str, Any]) -> Any:
        return "ok" if self.g.get_or_insert(a["key"]) else "full"

    def op_len(self, a: dict[str, Any]) -> Any:
        return len(self.g)

    def op_key_of(self, a: dict[str, Any]) -> Any:
        return guards.KeyedBreakers.key_of(a["bytes"])


# ----------------------------------------------------------------- queue discipline


def drops(dropped: list[Any]) -> list[dict[str, Any]]:
    return [{"id": d.id, "reason": d.reason} for d in dropped]


class QueueCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        self.q = building(lambda: guards.QueueDiscipline(**kwargs(unflatten(a))))

    def op_push(self, a: dict[str, Any]) -> Any:
        try:
            self.q.push(a["id"], priority=a["priority"], deadline=a.get("deadline"), now=a["now"])
        except guards.QueueFull:
            return False
        return True

    def op_pop(self, a: dict[str, Any]) -> Any:
        served, dropped = self.q.pop(now=a["now"])
        return {
            "served": None if served is None else {"id": served.id, "order": served.order},
            "dropped": drops(dropped),
        }

    def op_expire(self, a: dict[str, Any]) -> Any:
        return {"dropped": drops(self.q.expire(now=a["now"]))}

    def op_remove(self, a: dict[str, Any]) -> Any:
        return self.q.remove(a["id"]) is not None

    def op_len(self, a: dict[str, Any]) -> Any:
        return self.q.len()

    def op_len_by_priority(self, a: dict[str, Any]) -> Any:
        return self.q.len_by_priority()

    def op_oldest_age(self, a: dict[str, Any]) -> Any:
        return self.q.oldest_age_ns(now=a["now"])

    def op_is_standing(self, a: dict[str, Any]) -> Any:
        return self.q.is_standing(now=a["now"])

    def op_stats(self, a: dict[str, Any]) -> Any:
        return self.q.stats()


# ----------------------------------------------------------------- retry driver


class RetryDriverCase(Case):
    def __init__(self, a: dict[str, Any]) -> None:
        raw = unflatten(a)
        policy_raw = raw.get("policy", {})
        pkw = kwargs(policy_raw)
        if "backoff" in policy_raw:
            pkw["backoff"] = kwargs(policy_raw["backoff"])
        self.policy = building(lambda: guards.RetryPolicy(**pkw), strip="")
        self.budget = None
        if "budget" in raw:
            bkw = budget_kwargs(raw["budget"])
            self.budget = building(lambda: guards.RetryBudget(**bkw))
        kw: dict[str, Any] = {}
        # A case without them runs on core's DeadlineConfig defaults; RetryRun's own
        # default is no attempt timeout (what ``@guards.retry`` wants): given explicitly.
        core = guards.DeadlineConfig()
        kw["attempt_timeout"] = dur(raw["attempt_timeout"]) if "attempt_timeout" in raw else core.attempt_timeout
        kw["margin"] = dur(raw["margin"]) if "margin" in raw else core.margin
        if "idempotency" in raw:
            kw["idempotency"] = raw["idempotency"]
        if "deadline" in raw:
            kw["deadline"] = guards.Deadline(raw["deadline"])
        self.run_ = building(lambda: guards.RetryRun(self.policy, budget=self.budget, **kw))

    def answer(self, f: Callable[[], Any]) -> Any:
        try:
            kind, x, y, z = f()
        except RuntimeError as e:
            # "`<call>` is not allowed in phase `<phase>`": the call and the phase it met.
            call, phase = re.findall(r"`([a-z_]+)`", str(e))
            return {"error": {"call": call, "phase": phase}}
        if kind == "attempt":
            return {"attempt": {"number": x, "budget": y, "expires_at": z}}
        if kind == "wait":
            return {"wait": {"retry_at": y, "retry_after": x}}
        if kind == "give_up":
            return {"give_up": x}
        return kind

    def op_start(self, a: dict[str, Any]) -> Any:
        return self.answer(lambda: self.run_.start(now=a["now"]))

    def op_resume(self, a: dict[str, Any]) -> Any:
        return self.answer(lambda: self.run_.resume(now=a["now"]))

    def op_report(self, a: dict[str, Any]) -> Any:
        ra = a.get("retry_after")
        ra = None if ra is None else guards.Nanos(ra)
        return self.answer(lambda: self.run_.report(a["outcome"], retry_after=ra, now=a["now"]))

    def op_cancel(self, a: dict[str, Any]) -> Any:
        return self.answer(self.run_.cancel)

    def op_state(self, a: dict[str, Any]) -> Any:
        r = self.run_
        return {
            "phase": r.phase,
            "attempts": r.attempts,
            "retries": r.retries,
            "give_up": r.give_up_reason,
            "last_outcome": r.last_outcome,
        }

    def op_policy_stats(self, a: dict[str, Any]) -> Any:
        return self.policy.stats()

    def op_budget(self, a: dict[str, Any]) -> Any:
        if self.budget is None:
            raise AssertionError("the case has no budget")
        return {**self.budget.stats(), "tokens_micros": self.budget.tokens_micros(now=a["now"])}


# ----------------------------------------------------------------- call contract


class OutcomeCase(Case):
    """``outcome.json``: ``guards.OUTCOMES`` (names in number order) and
    ``guards.outcome_verdicts`` (what every guard does with an outcome)."""

    def op_verdicts(self, a: dict[str, Any]) -> Any:
        return guards.outcome_verdicts(a["outcome"])

    def op_from_number(self, a: dict[str, Any]) -> Any:
        n = a["number"]
        return guards.OUTCOMES[n] if 0 <= n < len(guards.OUTCOMES) else None

    def op_from_name(self, a: dict[str, Any]) -> Any:
        return guards.OUTCOMES.index(a["name"]) if a["name"] in guards.OUTCOMES else None


class HttpCase(Case):
    """``http.json`` through ``guards.http_outcome`` (the status's outcome and the
    Retry-After it hands back, read at the case's ``now_unix``), ``guards.parse_http_date``
    and ``guards.format_http_date``."""

    def op_outcome_of_status(self, a: dict[str, Any]) -> Any:
        outcome, _ = guards.http_outcome(a["status"], "0" if a["has_retry_after"] else None)
        return outcome

    def op_classify(self, a: dict[str, Any]) -> Any:
        outcome, secs = guards.http_outcome(
            a["status"], a.get("retry_after"), now_unix=a["now_unix"]
        )
        return {"outcome": outcome, "retry_after": ns_of_seconds(secs)}

    def op_parse_retry_after(self, a: dict[str, Any]) -> Any:
        # The Retry-After of a 503 as http_outcome reads it (None: ignored as garbage).
        _, secs = guards.http_outcome(503, a["value"], now_unix=a["now_unix"])
        return ns_of_seconds(secs)

    def op_parse_http_date(self, a: dict[str, Any]) -> Any:
        return guards.parse_http_date(a["value"], now_unix=a["now_unix"])

    def op_format_http_date(self, a: dict[str, Any]) -> Any:
        return guards.format_http_date(a["unix"])


# ----------------------------------------------------------------- the loop

BUILDERS: dict[str, Callable[[dict[str, Any]], Case]] = {
    "adaptive_throttle": AdaptiveThrottleCase,
    "admission": AdmissionCase,
    "backoff": BackoffCase,
    "brownout": brownout_build,
    "bulkhead": BulkheadCase,
    "circuit_breaker": BreakerCase,
    "deadline": DeadlineCase,
    "hedging": HedgingCase,
    "http": lambda a: HttpCase(),
    "latency_tracker": LatencyTrackerCase,
    "limit": LimitCase,
    "limiter": LimiterCase,
    "outcome": lambda a: OutcomeCase(),
    "queue_discipline": QueueCase,
    "retry_budget": RetryBudgetCase,
    "retry_driver": RetryDriverCase,
    "retry_policy": RetryPolicyCase,
}


def replay(session: _VectorSession) -> _VectorSession:
    """Answer every step of ``session`` through the Python API."""
    case: Optional[Case] = None
    while (step := session.next()) is not None:
        guard, op, args = step["guard"], step["op"], step["args"]
        try:
            if op == "new":
                build = BUILDERS.get(guard)
                if build is None:
                    raise Unsupported(f"no Python backend for `{guard}`")
                case = build(args)
                result = None
            elif op == "free":
                case = None
                result = None
            else:
                if case is None:
                    raise AssertionError(f"`{op}` before `new`")
                result = case.run(op, args)
            session.submit_result(result)
        except Unsupported as e:
            session.submit_unsupported(str(e))
        except ConfigRefused as e:
            session.submit_config_error(e.field, e.kind)
        except Exception as e:  # noqa: BLE001 - any other error fails the case, with its text
            session.submit_failed(f"{type(e).__name__}: {e}")
    return session
