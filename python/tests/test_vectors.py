"""Replays the shared conformance vectors (``tests/vectors/*.json``) through the Python
classes. Results must equal the Rust runners' exactly: same decisions, same integers, same
floats bit for bit, same JSON types (an int is not a float, a bool is not an int).

Each guard's encoding (ops, arguments, results) is the one documented at the top of its
Rust runner, ``core/tests/conformance/<guard>.rs``; the runner here for that guard follows
it. A vector file without a runner here, an op a runner does not know, or a config key it
does not understand fails the test: nothing is skipped, except the call-contract files
listed in ``CONTRACT_FILES`` (the outcome table and HTTP answers), which core's runner
replays (Python's ``classify_exception``, ``http_outcome`` and permits' ``report`` call
those core functions; their Python behaviour is tested in test_retry.py and the guards'
files). The retry driver's vectors run here through ``guards.RetryRun``.

Durations in vectors are integer nanoseconds: a non-negative one is passed as
``guards.Nanos`` (exact); a negative one, which core's types cannot hold, is passed as
negative seconds, so the Python class reports it the way it reports user input
(``ConfigError`` with kind ``negative``). ``"nan"``, ``"inf"`` and ``"-inf"`` stand for the
non-finite floats.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest

import guards

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"

# ----------------------------------------------------------------- helpers


def num(v: Any) -> Any:
    """A JSON number, with the spellings of the non-finite floats."""
    if isinstance(v, str):
        spelled = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
        if v not in spelled:
            raise AssertionError(f"not a number: {v!r}")
        return spelled[v]
    return v


def dur(v: Any) -> Any:
    """A duration given in integer nanoseconds, as the Python API takes it."""
    v = num(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise AssertionError(f"duration is not a number: {v!r}")
    if isinstance(v, int) and v >= 0:
        return guards.Nanos(v)
    return v / 1e9  # negative or non-finite: let the binding judge it as user input


def strict_eq(got: Any, want: Any) -> bool:
    """JSON equality that, like serde_json's, tells 1 from 1.0 and True from 1."""
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, int) and isinstance(got, int):
        return got == want
    if isinstance(want, float) and isinstance(got, float):
        return got == want or (math.isnan(got) and math.isnan(want))
    if isinstance(want, list) and isinstance(got, list):
        return len(got) == len(want) and all(strict_eq(g, w) for g, w in zip(got, want))
    if isinstance(want, dict) and isinstance(got, dict):
        return got.keys() == want.keys() and all(strict_eq(got[k], want[k]) for k in want)
    if want is None or isinstance(want, str):
        return got == want and type(got) is type(want)
    return False


class Config:
    """A case's config; every key must be consumed by the runner."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = dict(raw)
        self.used: set[str] = set()

    def take(self, key: str, conv: Callable[[Any], Any] = lambda v: v) -> dict[str, Any]:
        """``{key: conv(value)}`` if the key is present, else ``{}``."""
        if key not in self.raw:
            return {}
        self.used.add(key)
        return {key: conv(self.raw[key])}

    def check_all_used(self) -> None:
        unknown = set(self.raw) - self.used
        assert not unknown, f"config keys this runner does not understand: {sorted(unknown)}"


@dataclass
class Runner:
    """How to build a guard from a case's config and run one step on it."""

    build: Callable[[Config, int], Any]
    step: Callable[[Any, dict[str, Any]], Any]


def op_of(step: dict[str, Any]) -> str:
    return str(step["op"])


def unknown_op(step: dict[str, Any]) -> Any:
    raise AssertionError(f"op {op_of(step)!r} is not supported by this runner: {step}")


# ----------------------------------------------------------------- queue_discipline


def queue_build(c: Config, seed: int) -> Any:
    kw: dict[str, Any] = {}
    kw |= c.take("capacity")
    kw |= c.take("interval", dur)
    kw |= c.take("target", dur)
    kw |= c.take("lifo")
    kw |= c.take("codel")
    kw |= c.take("priority")
    c.check_all_used()
    return guards.QueueDiscipline(**kw)


def queue_drops(dropped: list[guards.Dropped]) -> list[dict[str, Any]]:
    return [{"id": d.id, "reason": d.reason} for d in dropped]


def queue_step(q: guards.QueueDiscipline, s: dict[str, Any]) -> Any:
    op = op_of(s)
    if op == "push":
        try:
            q.push(s["id"], priority=s["priority"], deadline=s.get("deadline"), now=s["now"])
        except guards.QueueFull:
            return False
        return True
    if op == "pop":
        served, dropped = q.pop(now=s["now"])
        return {
            "served": None if served is None else {"id": served.id, "order": served.order},
            "dropped": queue_drops(dropped),
        }
    if op == "expire":
        return {"dropped": queue_drops(q.expire(now=s["now"]))}
    if op == "remove":
        return q.remove(s["id"]) is not None
    if op == "len":
        return q.len()
    if op == "len_by_priority":
        return q.len_by_priority()
    if op == "oldest_age":
        return q.oldest_age_ns(now=s["now"])
    if op == "is_standing":
        return q.is_standing(now=s["now"])
    if op == "stats":
        return q.stats()
    return unknown_op(s)


# ----------------------------------------------------------------- shared by several guards


def hex_word(w: int) -> str:
    """A 64-bit word as the vectors spell it: "0x" + 16 lowercase hex digits."""
    return f"{w:#018x}"


def parse_hex(s: str) -> int:
    assert s.startswith("0x"), f"hex words start with 0x: {s!r}"
    return int(s, 16)


@dataclass
class Seeded:
    """A guard (or plain config) with the case's SplitMix64 generator."""

    guard: Any
    rng: guards.Rng


# ----------------------------------------------------------------- deadline


def deadline_of(v: Any) -> guards.Deadline:
    return guards.Deadline(v)


def deadline_value(d: guards.Deadline) -> Any:
    return d.expires_at


def header_result(parse: Callable[[], Any], ok: Callable[[Any], Any]) -> Any:
    try:
        value = parse()
    except guards.HeaderError as e:
        return {"error": e.kind}
    return {"ok": ok(value)}


def deadline_build(c: Config) -> Any:
    kw: dict[str, Any] = {}
    kw |= c.take("attempt_timeout", dur)
    kw |= c.take("margin", dur)
    c.check_all_used()
    return guards.DeadlineConfig(**kw)


def deadline_step(cfg: guards.DeadlineConfig, s: dict[str, Any]) -> Any:
    op = op_of(s)
    if op == "after":
        return deadline_value(guards.Deadline.after(guards.Nanos(s["timeout"]), now=s["now"]))
    if op == "time_left":
        return deadline_of(s["deadline"]).time_left_ns(now=s["now"])
    if op == "is_expired":
        return deadline_of(s["deadline"]).is_expired(now=s["now"])
    if op == "min":
        return deadline_value(deadline_of(s["a"]).min(deadline_of(s["b"])))
    if op == "attempt_budget":
        b = cfg.attempt_budget(deadline_of(s["deadline"]), now=s["now"])
        if b.decision == "start":
            return {"decision": "start", "budget": b.budget_ns}
        if b.decision == "too_little_left":
            return {"decision": "too_little_left", "left": b.left_ns}
        return {"decision": b.decision}
    if op == "encode_grpc_timeout":
        return guards.encode_grpc_timeout(guards.Nanos(s["timeout"]))
    if op == "encode_millis":
        return guards.encode_millis(guards.Nanos(s["timeout"]))
    if op == "to_grpc_timeout":
        return deadline_of(s["deadline"]).to_grpc_timeout(now=s["now"])
    if op == "to_millis":
        return deadline_of(s["deadline"]).to_millis(now=s["now"])
    if op == "parse_grpc_timeout":
        return header_result(lambda: guards.parse_grpc_timeout(s["value"]), lambda n: n.ns)
    if op == "parse_millis":
        return header_result(lambda: guards.parse_millis(s["value"]), lambda n: n.ns)
    if op == "from_grpc_timeout":
        return header_result(
            lambda: guards.Deadline.from_grpc_timeout(s["value"], now=s["now"]), deadline_value
        )
    if op == "from_millis":
        return header_result(
            lambda: guards.Deadline.from_millis(s["value"], now=s["now"]), deadline_value
        )
    return unknown_op(s)


# ----------------------------------------------------------------- backoff


def backoff_kwargs(c: Config) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    kw |= c.take("base", dur)
    kw |= c.take("cap", dur)
    kw |= c.take("multiplier", num)
    kw |= c.take("jitter")
    return kw


def backoff_build(c: Config, seed: int) -> Any:
    kw = backoff_kwargs(c)
    c.check_all_used()
    return Seeded(guards.Backoff(**kw), guards.Rng(seed))


def backoff_step(g: Seeded, s: dict[str, Any]) -> Any:
    b: guards.Backoff = g.guard
    op = op_of(s)
    prev = guards.Nanos(s.get("prev", 0))
    if op == "ceiling":
        return b.ceiling_ns(s["retry"])
    if op == "max_delay":
        return b.max_delay_ns(s["retry"])
    if op == "delay":
        return b.delay_ns(s["retry"], prev, rng=g.rng)
    if op == "delay_from_bits":
        return b.delay_from_bits_ns(s["retry"], parse_hex(s["bits"]), prev)
    if op == "rng_next_u64":
        return hex_word(g.rng.next_u64())
    if op == "fnv1a64":
        return hex_word(guards.fnv1a64(s["id"]))
    if op == "stable_offset":
        return guards.stable_offset_ns(s["id"], guards.Nanos(s["period"]))
    if op == "next_stable_run":
        return guards.next_stable_run(s["id"], guards.Nanos(s["period"]), now=s["now"])
    return unknown_op(s)


# ----------------------------------------------------------------- retry_policy


@dataclass
class PolicyCase:
    policy: guards.RetryPolicy
    rng: guards.Rng
    gate_calls: list[dict[str, Any]]


class ScriptedGate:
    """A gate with a fixed answer that logs every question in the case's shared log."""

    def __init__(self, allow: bool, log: list[dict[str, Any]]) -> None:
        self.allow = allow
        self.log = log

    def allow_retry(self, now: int, cause: str) -> bool:
        self.log.append({"now": now, "cause": cause})
        return self.allow


def retry_policy_build(c: Config, seed: int) -> Any:
    kw: dict[str, Any] = {}
    kw |= c.take("max_attempts")
    for flag in (
        "retry_timeouts",
        "retry_connection_errors",
        "retry_other_transient",
        "retry_throttled",
        "honor_retry_after",
    ):
        kw |= c.take(flag)
    kw |= c.take("max_retry_after", dur)
    kw |= c.take("min_attempt_time", dur)
    kw |= c.take("unkeyed_side_effects")
    if "backoff" in c.raw:
        inner = Config(c.raw["backoff"])
        kw["backoff"] = backoff_kwargs(inner)
        inner.check_all_used()
        c.used.add("backoff")
    c.check_all_used()
    return PolicyCase(guards.RetryPolicy(**kw), guards.Rng(seed), [])


def retry_policy_step(g: PolicyCase, s: dict[str, Any]) -> Any:
    op = op_of(s)
    if op == "decide":
        gate = None
        if "gate" in s:
            assert s["gate"] in ("allow", "refuse"), s
            gate = ScriptedGate(s["gate"] == "allow", g.gate_calls)
        d = g.policy.decide(
            s["attempts_made"],
            s["outcome"],
            retry_after=dur(s["retry_after"]) if s.get("retry_after") is not None else None,
            idempotency=s.get("idempotency"),
            time_left=dur(s["time_left"]) if s.get("time_left") is not None else None,
            prev_delay=guards.Nanos(s.get("prev_delay", 0)),
            gate=gate,
            rng=g.rng,
            now=s["now"],
        )
        return {"retry": d.delay_ns} if d.retry else {"give_up": d.reason}
    if op == "gate_calls":
        return list(g.gate_calls)
    if op == "stats":
        return stats_subset(s, g.policy.stats())  # core counts more than these vectors name
    if op == "worst_case_time":
        return g.policy.worst_case_time_ns(guards.Nanos(s["attempt_timeout"]))
    if op == "rng_next_u64":
        return hex_word(g.rng.next_u64())
    return unknown_op(s)


# ----------------------------------------------------------------- bulkhead


@dataclass
class BulkheadCase:
    bulkhead: guards.Bulkhead
    permits: list[Any]


def bulkhead_build(c: Config, _seed: int) -> Any:
    kw = c.take("max_concurrent")
    c.check_all_used()
    return BulkheadCase(guards.Bulkhead(**kw), [])


def bulkhead_step(g: BulkheadCase, s: dict[str, Any]) -> Any:
    b = g.bulkhead
    op = op_of(s)
    if op == "try_acquire":
        try:
            g.permits.append(b.acquire())
        except guards.BulkheadFull as e:
            return {"acquired": False, "in_flight": e.in_flight, "max_concurrent": e.max_concurrent}
        return {"acquired": True}
    if op == "release":
        permit = g.permits[s["permit"]]
        assert permit.release(), f"permit {s['permit']} was not held"
        return None
    if op == "in_flight":
        return b.in_flight
    if op == "available":
        return b.available
    if op == "stats":
        return b.stats()
    if op == "from_littles_law":
        try:
            sized = guards.Bulkhead.from_littles_law(
                num(s["rate_per_sec"]), guards.Nanos(s["p99"]), num(s["headroom"])
            )
        except guards.ConfigError as e:
            return {"error": {"field": e.field, "kind": e.kind}}
        return {"max_concurrent": sized.max_concurrent}
    return unknown_op(s)


# ----------------------------------------------------------------- retry_budget


@dataclass
class BudgetCase:
    budget: guards.RetryBudget
    receipts: list[Any]


def retry_budget_build(c: Config, _seed: int) -> Any:
    kw: dict[str, Any] = {}
    kw |= c.take("mode")
    for key in ("capacity", "ratio", "max_tokens", "token_ratio", "min_retries_per_sec", "percent_can_retry"):
        kw |= c.take(key, num)
    for key in ("transient_cost", "timeout_cost", "throttled_cost", "hedge_cost", "success_increment"):
        kw |= c.take(key)
    kw |= c.take("ttl", dur)
    c.check_all_used()
    return BudgetCase(guards.RetryBudget(**kw), [])


def retry_budget_step(g: BudgetCase, s: dict[str, Any]) -> Any:
    b = g.budget
    op = op_of(s)
    now = s.get("now", 0)
    cause = s.get("cause", "transient")
    if op == "deposit":
        b.deposit(now=now)
        return None
    if op == "withdraw":
        r = b.withdraw(cause, now=now)
        if r is None:
            return False
        g.receipts.append(r)
        return True
    if op == "allow_retry":
        return b.allow_retry(now, cause)
    if op == "on_success":
        receipt = g.receipts[s["receipt"]] if "receipt" in s else None
        b.on_success(receipt, now=now)
        return None
    if op == "on_failure":
        b.on_failure(now=now)
        return None
    if op == "tokens_micros":
        return b.tokens_micros(now=now)
    if op == "tokens":
        return b.tokens(now=now)
    if op == "receipt_cost_micros":
        receipt = g.receipts[s["receipt"]]
        assert not receipt.used, f"receipt {s['receipt']} not held"
        return receipt.cost_micros
    if op == "stats":
        return b.stats()
    return unknown_op(s)


# ----------------------------------------------------------------- latency_tracker


def tracker_kwargs(c: Config) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    kw |= c.take("window", dur)
    kw |= c.take("timeout_quantile", num)
    kw |= c.take("timeout_factor", num)
    kw |= c.take("min_samples")
    return kw


def latency_tracker_build(c: Config, _seed: int) -> Any:
    kw = tracker_kwargs(c)
    c.check_all_used()
    return guards.LatencyTracker(**kw)


def latency_tracker_step(t: guards.LatencyTracker, s: dict[str, Any]) -> Any:
    op = op_of(s)
    if op == "record":
        t.record_ns(s["latency"], now=s["now"])
        return None
    if op == "count":
        return t.count(now=s["now"])
    if op == "quantile":
        return t.quantile_ns(num(s["q"]), now=s["now"])
    if op == "summary":
        return t.summary_ns(now=s["now"])
    if op == "propose_timeout":
        return t.propose_timeout_ns(now=s["now"])
    if op == "false_timeout_rate":
        return t.false_timeout_rate(guards.Nanos(s["timeout"]), now=s["now"])
    if op == "stats":
        return t.stats()
    return unknown_op(s)


# ----------------------------------------------------------------- hedging


class FixedHedgeGate:
    """A gate that answers every hedge the same way (and checks the cause)."""

    def __init__(self, allow: bool) -> None:
        self.allow = allow

    def allow_retry(self, now: int, cause: str) -> bool:
        assert cause == "hedge", cause
        return self.allow


def hedging_build(c: Config, _seed: int) -> Any:
    kw: dict[str, Any] = {}
    kw |= c.take("delay_quantile", num)
    kw |= c.take("min_delay", dur)
    kw |= c.take("max_delay", dur)
    kw |= c.take("max_hedges")
    kw |= c.take("min_samples")
    kw |= c.take("refresh_interval", dur)
    if "tracker" in c.raw:
        inner = Config(c.raw["tracker"])
        kw["tracker"] = tracker_kwargs(inner)
        inner.check_all_used()
        c.used.add("tracker")
    c.check_all_used()
    return guards.Hedging(**kw)


def hedging_step(h: guards.Hedging, s: dict[str, Any]) -> Any:
    op = op_of(s)
    if op == "record_latency":
        h.record_latency_ns(s["latency"], now=s["now"])
        return None
    if op == "hedge_delay":
        return h.hedge_delay_ns(now=s["now"])
    if op == "should_hedge":
        gate = None
        if "gate" in s:
            assert s["gate"] in ("allow", "deny"), s
            gate = FixedHedgeGate(s["gate"] == "allow")
        d = h.should_hedge(
            s["request_started"], s["hedges_sent"], idempotent=s["idempotent"], gate=gate, now=s["now"]
        )
        if d.decision == "wait_until":
            return {"decision": "wait_until", "at": d.at}
        if d.decision == "never":
            return {"decision": "never", "reason": d.reason}
        return {"decision": d.decision}
    if op == "stats":
        return h.stats()
    return unknown_op(s)


# ----------------------------------------------------------------- adaptive_throttle


def adaptive_throttle_build(c: Config, _seed: int) -> Any:
    kw: dict[str, Any] = {}
    kw |= c.take("window", dur)
    for key in ("k", "aggression", "max_reject_probability"):
        kw |= c.take(key, num)
    kw |= c.take("min_requests")
    kw |= c.take("count_rejected")
    kw |= c.take("seed")
    c.check_all_used()
    return guards.AdaptiveThrottle(**kw)


def adaptive_throttle_step(t: guards.AdaptiveThrottle, s: dict[str, Any]) -> Any:
    op = op_of(s)
    if op == "should_reject":
        return t.should_reject(now=s["now"])
    if op == "on_accepted":
        t.on_accepted(now=s["now"])
        return None
    if op == "on_rejected_by_backend":
        t.on_rejected_by_backend(now=s["now"])
        return None
    if op == "reject_probability":
        return t.reject_probability(now=s["now"])
    if op == "window":
        return t.window(now=s["now"])
    if op == "stats":
        return t.stats()
    return unknown_op(s)


# ----------------------------------------------------------------- brownout


def brownout_kwargs(c: Config) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    kw |= c.take("optional")
    kw |= c.take("exempt")
    kw |= c.take("fallback_on")
    return kw


@dataclass
class BrownoutTableCase:
    table: guards.BrownoutTable


def brownout_build(c: Config, _seed: int) -> Any:
    if "operations" in c.raw:
        c.used.add("operations")
        c.check_all_used()
        table = guards.BrownoutTable()
        for op in c.raw["operations"]:
            inner = Config(op)
            key = inner.take("key")["key"]
            table.register(key, **brownout_kwargs(inner))
            inner.check_all_used()
        return BrownoutTableCase(table)
    kw = brownout_kwargs(c)
    c.check_all_used()
    return guards.Brownout(**kw)


def brownout_step(g: Any, s: dict[str, Any]) -> Any:
    op = op_of(s)
    if isinstance(g, BrownoutTableCase):
        t = g.table
        if op == "on_refusal":
            return t.on_refusal(s["key"], s["kind"])
        if op == "on_full":
            return t.on_full(s["key"])
        if op == "stats":
            return t.stats(s["key"])
        if op == "totals":
            return t.totals()
        if op == "unknown":
            return t.unknown()
        if op == "register":
            inner = Config(s["config"])
            kw = brownout_kwargs(inner)
            inner.check_all_used()
            try:
                return t.register(s["key"], **kw)
            except guards.ConfigError as e:
                return {"error": "config", "field": e.field, "kind": e.kind}
            except ValueError as e:
                assert "already registered" in str(e), e
                return {"error": "duplicate"}
            except RuntimeError as e:
                assert "full" in str(e), e
                return {"error": "full"}
        return unknown_op(s)
    b: guards.Brownout = g
    if op == "on_refusal":
        return b.on_refusal(s["kind"])
    if op == "decide":
        return b.decide(s["kind"])
    if op == "on_full":
        b.on_full()
        return None
    if op == "stats":
        return b.stats()
    if op == "operation_key":
        return hex_word(guards.operation_key(s["name"]))
    return unknown_op(s)


# ----------------------------------------------------------------- limit, limiter, admission

LIMIT_DURATIONS = {"interval", "latency_target"}
LIMIT_FLOATS = {
    "backoff_ratio",
    "smoothing",
    "alpha",
    "beta",
    "threshold",
    "probe_jitter",
    "queue_size",
}


def limit_spec(raw: dict[str, Any]) -> dict[str, Any]:
    """A limit config object of the vectors as the mapping `limit=` takes (every key kept:
    the binding rejects the ones an algorithm does not have)."""
    out: dict[str, Any] = {}
    for k, v in raw.items():
        if k in LIMIT_DURATIONS:
            out[k] = dur(v)
        elif k in LIMIT_FLOATS:
            out[k] = num(v)
        else:
            out[k] = v
    return out


def limit_build(c: Config, _seed: int) -> Any:
    spec = limit_spec(c.raw)
    c.used |= set(c.raw)
    algorithm = spec.pop("algorithm")
    return guards.Limit(algorithm, **spec)


def limit_step(lim: guards.Limit, s: dict[str, Any]) -> Any:
    op = op_of(s)
    if op == "update":
        return lim.update(guards.Nanos(s["rtt"]), s["in_flight"], s["dropped"], now=s["now"])
    if op == "limit":
        return lim.limit
    if op == "estimate":
        assert lim.estimate is not None, f"estimate on {lim.algorithm}"
        return lim.estimate
    if op == "min_rtt":
        assert lim.min_rtt_ns is not None, f"min_rtt on {lim.algorithm}"
        return lim.min_rtt_ns
    if op == "long_rtt":
        assert lim.long_rtt_ns is not None, f"long_rtt on {lim.algorithm}"
        return lim.long_rtt_ns
    return unknown_op(s)


def stats_subset(step: dict[str, Any], got: dict[str, Any]) -> Any:
    """Keep the keys `expect` names (the limiter and admission runners compare only those)."""
    want = step.get("expect")
    if not isinstance(want, dict):
        return got
    unknown = set(want) - set(got)
    assert not unknown, f"unknown stats keys {unknown}"
    return {k: got[k] for k in want}


@dataclass
class HeldCase:
    """A limiter or admission door with named FIFO lists of held permits/tickets."""

    guard: Any
    held: dict[str, list[Any]]

    def take(self, name: str) -> Any:
        queue = self.held.get(name)
        assert queue, f"no permit held under {name!r}"
        return queue.pop(0)


def limiter_build(c: Config, _seed: int) -> Any:
    kw: dict[str, Any] = {}
    kw |= c.take("limit", limit_spec)
    kw |= c.take("window", dur)
    kw |= c.take("min_window_samples")
    kw |= c.take("min_retry_after", dur)
    kw |= c.take("max_retry_after", dur)
    if "partitions" in c.raw:
        # A vector's config is core's struct: a partition or a key left out takes core's
        # default. Python reads a short list as "repeat the class before", so every class
        # and key is spelled out.
        parts = []
        for i in range(8):
            p = c.raw["partitions"][i] if i < len(c.raw["partitions"]) else {}
            inner = Config(p)
            entry = {"share": 1.0, "max_in_flight": 2**64 - 1}
            entry |= inner.take("share", num) | inner.take("max_in_flight")
            inner.check_all_used()
            parts.append(entry)
        kw["partitions"] = parts
        c.used.add("partitions")
    c.check_all_used()
    return HeldCase(guards.Limiter(**kw), {})


def limiter_step(g: HeldCase, s: dict[str, Any]) -> Any:
    lim: guards.Limiter = g.guard
    op = op_of(s)
    if op == "try_acquire":
        try:
            p = lim.acquire(s["priority"], now=s["now"])
        except guards.LimitExceeded as e:
            return {
                "admitted": False,
                "reason": e.reason,
                "retry_after": e.retry_after_ns,
                "threshold": e.threshold,
                "in_flight": e.in_flight,
            }
        got = {"admitted": True, "in_flight": p.in_flight, "threshold": p.threshold}
        if "permit" in s:
            g.held.setdefault(s["permit"], []).append(p)
        else:
            assert p.on_ignore()
        return got
    if op == "on_success":
        assert g.take(s["permit"]).on_success(now=s["now"])
        return None
    if op == "on_dropped":
        assert g.take(s["permit"]).on_dropped(now=s["now"])
        return None
    if op == "on_ignore":
        assert g.take(s["permit"]).on_ignore()
        return None
    if op == "limit":
        return lim.limit
    if op == "in_flight":
        return lim.in_flight
    if op == "threshold":
        return lim.threshold(s["priority"])
    if op == "retry_after":
        return lim.retry_after_ns
    if op == "stats":
        return stats_subset(s, {**lim.stats(), "rejected_by_priority": lim.rejected_by_priority()})
    return unknown_op(s)


def admission_build(c: Config, _seed: int) -> Any:
    kw: dict[str, Any] = {}
    # Core's struct: classes a short list leaves out keep core's defaults (80, 64, ...;
    # shares 1.0), which Python would read as "repeat the class before": spelled out.
    kw |= c.take("limits", lambda v: list(v) + [80, 64, 64, 64, 64, 64, 64, 64][len(v) :])
    kw |= c.take("shares", lambda v: [num(x) for x in v] + [1.0] * (8 - len(v)))
    kw |= c.take("limit", limit_spec)
    kw |= c.take("window", dur)
    kw |= c.take("min_window_samples")
    kw |= c.take("min_retry_after", dur)
    kw |= c.take("max_retry_after", dur)
    c.check_all_used()
    return HeldCase(guards.Admission(**kw), {})


def admission_step(g: HeldCase, s: dict[str, Any]) -> Any:
    door: guards.Admission = g.guard
    op = op_of(s)
    if op == "try_acquire":
        try:
            t = door.acquire(s["priority"], now=s["now"])
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
        if "ticket" in s:
            g.held.setdefault(s["ticket"], []).append(t)
        else:
            assert t.on_ignore()
        return got
    if op == "on_success":
        assert g.take(s["ticket"]).on_success(now=s["now"])
        return None
    if op == "on_dropped":
        assert g.take(s["ticket"]).on_dropped(now=s["now"])
        return None
    if op == "on_ignore":
        assert g.take(s["ticket"]).on_ignore()
        return None
    if op == "limit":
        return door.limit
    if op == "in_flight":
        return door.in_flight
    if op == "threshold":
        return door.threshold(s["priority"])
    if op == "stats":
        return stats_subset(s, {**door.stats(), "refused_by_priority": door.refused_by_priority()})
    return unknown_op(s)


# ----------------------------------------------------------------- circuit_breaker

BREAKER_DURATIONS = {"window_duration", "slow_call_duration", "open_duration", "max_open_duration", "probe_timeout"}
BREAKER_FLOATS = {"failure_rate_threshold", "slow_call_rate_threshold", "open_duration_multiplier"}
BREAKER_INTS = {"window_size", "window_buckets", "minimum_calls", "half_open_probes"}


@dataclass
class BreakerCase:
    guard: Any  # a CircuitBreaker, or KeyedBreakers for keyed cases
    keyed: bool
    queues: dict[str, list[Any]]


def breaker_build(c: Config, _seed: int) -> Any:
    kw = breaker_kwargs(c)
    return BreakerCase(guards.CircuitBreaker(**kw), False, {})


def breaker_kwargs(c: Config) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    kw |= c.take("window_kind")
    for key in BREAKER_DURATIONS:
        kw |= c.take(key, dur)
    for key in BREAKER_FLOATS:
        kw |= c.take(key, num)
    for key in BREAKER_INTS:
        kw |= c.take(key)
    c.check_all_used()
    return kw


def breaker_step(g: BreakerCase, s: dict[str, Any]) -> Any:
    op = op_of(s)
    keyed: Any = g.guard if g.keyed else None
    key_args: tuple[Any, ...] = (s["key"],) if g.keyed and "key" in s else ()
    if g.keyed and op not in ("get_or_insert", "len", "key_of"):
        assert "key" in s, f"keyed step without key: {s}"
    if op == "try_acquire":
        try:
            p = g.guard.acquire(*key_args, now=s["now"])
        except guards.BreakerOpen as e:
            assert e.retry_after_ns == max(0, e.retry_at - s["now"])
            return {"rejected": e.reason, "retry_at": e.retry_at}
        if p.is_probe:
            got = {"admitted": "probe", "generation": p.generation, "probe_timeout": p.probe_timeout_ns}
        else:
            got = {"admitted": "call", "generation": p.generation}
        if "as" in s:
            g.queues.setdefault(s["as"], []).append(p)
        else:
            # Dropped unreported, as the Rust runner does: keep it alive so that the
            # binding's release-on-collection does not report an outcome.
            g.queues.setdefault("\0dropped", []).append(p)
        return got
    if op in ("on_success", "on_failure", "on_ignore"):
        queue = g.queues.get(s["permit"])
        assert queue, f"no permit in {s['permit']!r}"
        p = queue.pop(0)
        if op == "on_ignore":
            assert p.on_ignore()
            return None
        return getattr(p, op)(now=s["now"])
    if op == "state":
        if g.keyed:
            return g.guard.state(*key_args, now=s["now"])
        return g.guard.state_at(s["now"])
    if op == "status":
        return g.guard.status(*key_args)
    if op == "window_counts":
        return g.guard.window_counts(*key_args, now=s["now"])
    if op == "stats":
        return stats_subset(s, g.guard.stats(*key_args))
    if op == "get_or_insert":
        assert keyed is not None
        return "ok" if keyed.get_or_insert(s["key"]) else "full"
    if op == "len":
        assert keyed is not None
        return len(keyed)
    if op == "key_of":
        return hex_word(guards.KeyedBreakers.key_of(s["bytes"]))
    return unknown_op(s)


# ----------------------------------------------------------------- retry_driver


@dataclass
class DriverCase:
    run: guards.RetryRun
    policy: guards.RetryPolicy
    budget: Optional[guards.RetryBudget]


def retry_driver_build(c: Config, seed: int) -> Any:
    if "policy" in c.raw:
        policy = retry_policy_build(Config(c.raw["policy"]), seed).policy
        c.used.add("policy")
    else:
        policy = guards.RetryPolicy()
    budget = None
    if "budget" in c.raw:
        budget = retry_budget_build(Config(c.raw["budget"]), seed).budget
        c.used.add("budget")
    kw: dict[str, Any] = {}
    kw |= c.take("attempt_timeout", dur)
    kw |= c.take("margin", dur)
    kw |= c.take("idempotency")
    # A case without them runs on core's DeadlineConfig defaults; RetryRun's own default
    # is no attempt timeout (what ``@guards.retry`` wants), so they are given explicitly.
    core = guards.DeadlineConfig()
    kw.setdefault("attempt_timeout", core.attempt_timeout)
    kw.setdefault("margin", core.margin)
    if "deadline" in c.raw:
        kw["deadline"] = guards.Deadline(c.raw["deadline"])
        c.used.add("deadline")
    c.check_all_used()
    return DriverCase(guards.RetryRun(policy, budget=budget, **kw), policy, budget)


def driver_answer(step: tuple[str, Any, Any, Any]) -> Any:
    """A RetryRun step as the vectors spell it."""
    kind, a, b, c = step
    if kind == "attempt":
        return {"attempt": {"number": a, "budget": b, "expires_at": c}}
    if kind == "wait":
        return {"wait": {"retry_at": b, "retry_after": a}}
    if kind == "give_up":
        return {"give_up": a}
    return kind  # "succeeded"


def retry_driver_step(g: DriverCase, s: dict[str, Any]) -> Any:
    op = op_of(s)
    run = g.run
    try:
        if op == "start":
            return driver_answer(run.start(now=s["now"]))
        if op == "report":
            ra = s.get("retry_after")
            ra = None if ra is None else guards.Nanos(ra)
            return driver_answer(run.report(s["outcome"], retry_after=ra, now=s["now"]))
        if op == "resume":
            return driver_answer(run.resume(now=s["now"]))
        if op == "cancel":
            return driver_answer(run.cancel())
    except RuntimeError as e:
        # "`<call>` is not allowed in phase `<phase>`": the call and the phase it met.
        call, phase = re.findall(r"`([a-z_]+)`", str(e))
        return {"error": {"call": call, "phase": phase}}
    if op == "state":
        return {
            "phase": run.phase,
            "attempts": run.attempts,
            "retries": run.retries,
            "give_up": run.give_up_reason,
            "last_outcome": run.last_outcome,
        }
    if op == "policy_stats":
        return stats_subset(s, g.policy.stats())
    if op == "budget":
        assert g.budget is not None
        got = dict(g.budget.stats(), tokens_micros=g.budget.tokens_micros(now=s["now"]))
        return stats_subset(s, got)
    return unknown_op(s)


# ----------------------------------------------------------------- registry

#: Cases about the capacity of core's fixed-size breaker type (see `test_vector`).
FIXED_CAPACITY_CASES = {
    ("circuit_breaker", "rejects_window_size_above_the_capacity"),
    ("circuit_breaker", "rejects_too_many_buckets_for_the_capacity"),
}

# Call-contract vectors without a Python runner: core/tests/conformance replays them (their
# HTTP dates need a fixed wall clock, their verdicts every guard's internal answer). Each
# is reported as skipped, never silently dropped.
CONTRACT_FILES = {"outcome", "http"}

RUNNERS: dict[str, Runner] = {
    "deadline": Runner(lambda c, _seed: deadline_build(c), deadline_step),
    "backoff": Runner(backoff_build, backoff_step),
    "retry_policy": Runner(retry_policy_build, retry_policy_step),
    "retry_budget": Runner(retry_budget_build, retry_budget_step),
    "bulkhead": Runner(bulkhead_build, bulkhead_step),
    "queue_discipline": Runner(queue_build, queue_step),
    "latency_tracker": Runner(latency_tracker_build, latency_tracker_step),
    "hedging": Runner(hedging_build, hedging_step),
    "adaptive_throttle": Runner(adaptive_throttle_build, adaptive_throttle_step),
    "brownout": Runner(brownout_build, brownout_step),
    "limit": Runner(limit_build, limit_step),
    "limiter": Runner(limiter_build, limiter_step),
    "admission": Runner(admission_build, admission_step),
    "circuit_breaker": Runner(breaker_build, breaker_step),
    "retry_driver": Runner(retry_driver_build, retry_driver_step),
}

# ----------------------------------------------------------------- the test


def load_cases() -> list[Any]:
    params = []
    files = sorted(VECTORS.glob("*.json"))
    assert files, f"no vector files in {VECTORS}"
    for path in files:
        data = json.loads(path.read_text())
        assert data["guard"] == path.stem, f"{path}: wrong guard field"
        assert data["cases"], f"{path}: no cases"
        for case in data["cases"]:
            marks = (
                [pytest.mark.skip(reason="call-contract vectors: replayed by core's runner")]
                if path.stem in CONTRACT_FILES
                else []
            )
            params.append(
                pytest.param(path.stem, case, id=f"{path.stem}/{case['name']}", marks=marks)
            )
    return params


CASES = load_cases()


def test_every_vector_file_has_a_runner() -> None:
    guards_in_files = {p.stem for p in VECTORS.glob("*.json")}
    missing = guards_in_files - set(RUNNERS) - CONTRACT_FILES
    assert not missing, f"vector files without a Python runner: {sorted(missing)}"


@pytest.mark.parametrize(("guard", "case"), CASES)
def test_vector(guard: str, case: dict[str, Any]) -> None:
    runner = RUNNERS.get(guard)
    assert runner is not None, f"no Python runner for {guard}"
    known = {"name", "note", "config", "steps", "expect_error", "seed", "keyed_slots"}
    assert not set(case) - known, f"case keys this runner does not know: {set(case) - known}"
    config = Config(case.get("config", {}))
    seed = int(case.get("seed", 0))
    if (guard, case["name"]) in FIXED_CAPACITY_CASES:
        # Core's `CircuitBreaker<128>` refuses a window of more than 128 cells; Python's
        # breaker (like C's with `capacity` 0) takes the capacity that fits the window.
        kw = breaker_kwargs(config)
        assert guards.CircuitBreaker(**kw).capacity == 1024
        return
    if "expect_error" in case:
        want = case["expect_error"]
        assert "steps" not in case or not case["steps"], "an error case has no steps"
        with pytest.raises(guards.ConfigError) as info:
            runner.build(config, seed)
        assert (info.value.field, info.value.kind) == (want["field"], want["kind"]), str(info.value)
        return
    if "keyed_slots" in case:
        # A keyed set of breakers sharing the case's config (circuit_breaker only).
        assert guard == "circuit_breaker", case["name"]
        kw = breaker_kwargs(config)
        g: Any = BreakerCase(guards.KeyedBreakers(slots=case["keyed_slots"], **kw), True, {})
    else:
        g = runner.build(config, seed)
    for i, step in enumerate(case.get("steps", [])):
        for _ in range(int(step.get("repeat", 1))):
            got = runner.step(g, step)
            if "expect" in step:
                want = step["expect"]
                assert strict_eq(got, want), (
                    f"case {case['name']}, step {i} ({step}): got {got!r}, expected {want!r}"
                )
