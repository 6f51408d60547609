"""guards.fleet against a real redis-server: shares that split one allowance among the
members, rebalance on join / leave / a killed member, survive Redis going away, and resize
limiters and token budgets; every bad input raises a typed error.

Redis is started on a free loopback port (one per module; the tests that kill Redis or need
a password start their own) and killed at the end. Waits poll a condition a bounded number
of times; nothing is timed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import guards
from guards.fleet import Fleet, FleetAuthError, FleetError, FleetUnavailable

from helpers import free_port

INTERVAL = 0.05


class Redis:
    """A redis-server on a loopback port, killed by ``stop()``."""

    def __init__(self, port: int | None = None, *extra: str) -> None:
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server not found: run `make redis-server` (installs it)")
        self.port = port if port is not None else free_port()
        self.extra = extra
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
            + ["--save", "", "--appendonly", "no", *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert poll(self._listening), f"redis-server did not listen on {self.port}"

    def _listening(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def poll(cond: Callable[[], bool], tries: int = 400, step: float = 0.025) -> bool:
    """``cond()`` became true within ``tries`` checks."""
    for _ in range(tries):
        if cond():
            return True
        time.sleep(step)
    return bool(cond())


@pytest.fixture(scope="module")
def redis() -> Iterator[Redis]:
    r = Redis()
    yield r
    r.stop()


_services = iter(range(1_000_000))


@pytest.fixture
def service() -> str:
    """A fresh fleet name per test: tests sharing the module's Redis do not meet."""
    return f"svc-{os.getpid()}-{next(_services)}"


class Member:
    """A fleet member with one bulkhead attached to ``allowance``."""

    def __init__(self, url: str, service: str, name: str, allowance: int = 12) -> None:
        self.bulkhead = guards.Bulkhead(max_concurrent=1)
        self.fleet = Fleet(url, service, name, sync_interval=INTERVAL)
        self.fleet.attach("stock", allowance, self.bulkhead)

    def share(self) -> int:
        return self.fleet.share("stock")


def shares(members: list[Member]) -> list[int]:
    return [m.share() for m in members]


@pytest.fixture
def members() -> Iterator[list[Member]]:
    """Members a test makes; each leaves at the end."""
    made: list[Member] = []
    yield made
    for m in made:
        m.fleet.leave()


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] for e in events]


# ---------------------------------------------------------------- shares


def test_three_members_split_the_allowance_and_rebalance(
    redis: Redis, service: str, members: list[Member]
) -> None:
    members += [Member(redis.url, service, n) for n in ("a", "b", "c")]
    seen_sums: list[int] = []

    def all_at(n: int) -> bool:
        s = shares(members)
        seen_sums.append(sum(s))
        return s == [n] * len(members)

    assert poll(lambda: all_at(4)), shares(members)
    for m in members:
        assert m.bulkhead.max_concurrent == 4  # the share is the bulkhead's cap
    # A fourth member: everyone shrinks to 3 and the newcomer grows into the room.
    members.append(Member(redis.url, service, "d"))
    assert poll(lambda: all_at(3)), shares(members)
    assert max(seen_sums) <= 12, seen_sums
    assert {"kind": "member_joined", "member": "d"} in members[0].fleet.events()
    # One leaves: the other three grow back to 4.
    members[3].fleet.leave()
    rest = members[:3]
    assert poll(lambda: shares(rest) == [4, 4, 4]), shares(rest)
    ev = members[0].fleet.events()
    assert {"kind": "member_left", "member": "d"} in ev
    assert any(e["kind"] == "share_changed" and e["allowance"] == "stock" for e in ev), ev
    # The member that left keeps its last cap and reports no more.
    assert members[3].fleet.left
    assert members[3].bulkhead.max_concurrent == 3
    with pytest.raises(KeyError):
        members[3].fleet.share("stock")


def test_stats_report_members_syncs_and_allowances(
    redis: Redis, service: str, members: list[Member]
) -> None:
    members += [Member(redis.url, service, n, allowance=10) for n in ("a", "b")]
    assert poll(lambda: shares(members) == [5, 5])
    s = members[0].fleet.stats()
    assert set(s) == {
        "members",
        "syncs",
        "sync_errors",
        "connected",
        "fallen_back",
        "events_dropped",
        "allowances",
        "breakers",
    }
    assert s["breakers"] == []
    assert s["members"] == 2
    assert s["syncs"] > 0 and s["sync_errors"] == 0
    assert s["connected"] is True and s["fallen_back"] is False
    [a] = s["allowances"]
    assert a["name"] == "stock" and a["allowance"] == 10
    assert a["share"] == 5 and a["fair"] == 5
    assert a["claims_won"] >= 1 and a["claims_lost"] >= 0
    r = repr(members[0].fleet)
    assert r.startswith(f"Fleet(service='{service}', member='a', members=2") and "redis" not in r


def test_a_killed_member_returns_its_share_after_the_ttl(
    redis: Redis, service: str, members: list[Member]
) -> None:
    members += [Member(redis.url, service, n) for n in ("a", "b")]
    script = textwrap.dedent(
        f"""
        import sys, time
        import guards
        from guards.fleet import Fleet
        b = guards.Bulkhead(max_concurrent=1)
        f = Fleet({redis.url!r}, {service!r}, "doomed", sync_interval={INTERVAL})
        f.attach("stock", 12, b)
        print("joined", flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "joined"
        assert poll(lambda: shares(members) == [4, 4]), shares(members)
        assert poll(lambda: members[0].fleet.stats()["members"] == 3)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        # Its record expires after the TTL (3 intervals): the two left take 6 each.
        assert poll(lambda: shares(members) == [6, 6]), shares(members)
        assert {"kind": "member_left", "member": "doomed"} in members[0].fleet.events()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_redis_killed_and_restarted(service: str, members: list[Member]) -> None:
    r = Redis()
    try:
        members += [Member(r.url, service, n, allowance=8) for n in ("a", "b")]
        assert poll(lambda: shares(members) == [4, 4])
        members[0].fleet.events()
        port = r.port
        r.stop()

        def cut_off(m: Member) -> bool:
            s = m.fleet.stats()
            return s["connected"] is False and s["fallen_back"] is True

        assert poll(lambda: all(cut_off(m) for m in members))
        # The fallback: 8 ÷ 2 last known members; the bulkheads keep serving.
        assert shares(members) == [4, 4]
        assert members[0].fleet.stats()["sync_errors"] > 0
        r = Redis(port)

        def back(m: Member) -> bool:
            s = m.fleet.stats()
            return s["connected"] is True and s["fallen_back"] is False and m.share() == 4

        # The new Redis is empty: both rejoin as newcomers and grow back to 4.
        assert poll(lambda: all(back(m) for m in members)), [m.fleet.stats() for m in members]
        ev = members[0].fleet.events()
        k = kinds(ev)
        assert "redis_lost" in k and "redis_regained" in k, k
        assert k.index("redis_lost") < k.index("redis_regained")
        lost = ev[k.index("redis_lost")]
        assert isinstance(lost["error"], str) and lost["error"]
        assert {"kind": "fell_back", "allowance": "stock", "share": 4} in ev
    finally:
        r.stop()


# ---------------------------------------------------------------- other guards


def test_a_limiter_ceiling_follows_the_share(redis: Redis, service: str) -> None:
    limiters = [guards.Limiter(), guards.Limiter()]
    fleets = [Fleet(redis.url, service, n, sync_interval=INTERVAL) for n in ("a", "b")]
    try:
        for f, lim in zip(fleets, limiters):
            f.attach("db", 10, lim)
        assert poll(lambda: [lim.max_limit for lim in limiters] == [5, 5])
        assert all(lim.limit <= 5 for lim in limiters)
        assert [f.share("db") for f in fleets] == [5, 5]
    finally:
        for f in fleets:
            f.leave()


def test_a_token_budget_capacity_follows_the_share(redis: Redis, service: str) -> None:
    budgets = [guards.RetryBudget.token_bucket(capacity=1.0) for _ in range(2)]
    fleets = [Fleet(redis.url, service, n, sync_interval=INTERVAL) for n in ("a", "b")]
    try:
        for f, b in zip(fleets, budgets):
            f.attach("retries", 20, b)
        assert poll(lambda: [b.capacity for b in budgets] == [10.0, 10.0])
        assert [f.share("retries") for f in fleets] == [10, 10]
        assert all(b.tokens() <= 10.0 for b in budgets)
    finally:
        for f in fleets:
            f.leave()


def test_the_resize_methods_of_the_guards() -> None:
    b = guards.Bulkhead(max_concurrent=4)
    p = b.acquire()
    assert b.set_max_concurrent(0) == 4
    assert b.max_concurrent == 0 and b.try_acquire() is None
    assert b.config()["max_concurrent"] == 4  # the cap it was built with
    p.release()
    assert b.set_max_concurrent(2) == 0 and b.try_acquire() is not None
    with pytest.raises(ValueError, match="max_concurrent"):
        b.set_max_concurrent(-1)
    with pytest.raises(ValueError, match="max_concurrent"):
        b.set_max_concurrent(2**32)
    with pytest.raises(TypeError, match="max_concurrent"):
        b.set_max_concurrent(1.5)

    lim = guards.Limiter()
    assert lim.max_limit is None
    assert lim.set_max_limit(3) is None
    assert lim.max_limit == 3 and lim.limit <= 3
    assert lim.set_max_limit(2) == 3
    assert lim.clear_max_limit() == 2 and lim.max_limit is None
    with pytest.raises(ValueError, match="max_limit"):
        lim.set_max_limit(2**32)
    with pytest.raises(TypeError, match="max_limit"):
        lim.set_max_limit("3")

    tb = guards.RetryBudget.token_bucket(capacity=10.0)
    assert tb.capacity == 10.0
    assert tb.set_capacity(2.5) == 10.0 and tb.capacity == 2.5
    assert tb.tokens() <= 2.5
    with pytest.raises(ValueError, match="capacity"):
        tb.set_capacity(-1.0)
    with pytest.raises(ValueError, match="capacity"):
        tb.set_capacity(float("nan"))
    grpc = guards.RetryBudget.grpc()
    assert grpc.capacity is None
    with pytest.raises(ValueError, match="token_bucket"):
        grpc.set_capacity(3.0)


# ---------------------------------------------------------------- bad input


def test_bad_url_unreachable_server_and_bad_settings(redis: Redis, service: str) -> None:
    with pytest.raises(guards.ConfigError) as e:
        Fleet("not a url", service, "m")
    assert e.value.field == "url"
    with pytest.raises(FleetUnavailable) as u:
        Fleet(f"redis://127.0.0.1:{free_port()}", service, "m", sync_interval=INTERVAL)
    assert isinstance(u.value, FleetError) and isinstance(u.value, RuntimeError)
    assert guards.FleetUnavailable is FleetUnavailable and guards.FleetError is FleetError
    for field, kwargs in [
        ("service", {"service": ""}),
        ("service", {"service": "a b"}),
        ("service", {"service": "x" * 129}),
        ("member", {"member": "m/1"}),
        ("sync_interval", {"sync_interval": 0.001}),
        ("sync_interval", {"sync_interval": 61}),
        ("sync_interval", {"sync_interval": -1.0}),
        ("sync_interval", {"sync_interval": float("nan")}),
        ("ttl", {"ttl": 0.05}),
        ("stale_after", {"stale_after": 1.0}),
        ("stale_after", {"stale_after": 0}),
        ("io_timeout", {"io_timeout": 0}),
        ("weight", {"weight": 0}),
        ("weight", {"weight": 1001}),
        ("fallback_floor", {"fallback_floor": -1}),
        ("fallback_floor", {"fallback_floor": 2**32}),
    ]:
        args: dict[str, Any] = {"service": service, "member": "m", "sync_interval": INTERVAL}
        args.update(kwargs)
        with pytest.raises(guards.ConfigError) as c:
            Fleet(redis.url, **args)
        assert c.value.field == field, (kwargs, c.value)
    for field, kwargs in [
        ("url", {"url": 6379}),
        ("service", {"service": None}),
        ("member", {"member": b"m"}),
        ("sync_interval", {"sync_interval": "fast"}),
        ("weight", {"weight": 1.0}),
        ("fallback_floor", {"fallback_floor": "0"}),
    ]:
        args = {"url": redis.url, "service": service, "member": "m"}
        args.update(kwargs)
        with pytest.raises(TypeError, match=f"`{field}`"):
            Fleet(**args)


def test_authentication(service: str) -> None:
    r = Redis(None, "--requirepass", "s3cret")
    try:
        with pytest.raises(FleetAuthError):
            Fleet(r.url, service, "m", sync_interval=INTERVAL)
        with pytest.raises(FleetAuthError) as e:
            Fleet(f"redis://:wrong@127.0.0.1:{r.port}", service, "m", sync_interval=INTERVAL)
        assert "s3cret" not in str(e.value)
        with Fleet(f"redis://:s3cret@127.0.0.1:{r.port}", service, "m", sync_interval=INTERVAL) as f:
            b = guards.Bulkhead()
            f.attach("stock", 3, b)
            assert poll(lambda: f.share("stock") == 3)
    finally:
        r.stop()


def test_bad_attach_arguments(redis: Redis, service: str) -> None:
    with Fleet(redis.url, service, "m", sync_interval=INTERVAL) as f:
        b = guards.Bulkhead()
        for name in ["", "a b", "x" * 129, "é"]:
            with pytest.raises(ValueError, match="`name`"):
                f.attach(name, 4, b)
        with pytest.raises(TypeError, match="`name`"):
            f.attach(1, 4, b)
        for allowance in [0, 2**32, -1]:
            with pytest.raises(ValueError, match="`allowance`"):
                f.attach("stock", allowance, b)
        with pytest.raises(TypeError, match="`allowance`"):
            f.attach("stock", 4.0, b)
        for guard in [guards.CircuitBreaker(), object(), None, 12]:
            with pytest.raises(TypeError, match="guards.Bulkhead, a guards.Limiter or a token_bucket"):
                f.attach("stock", 4, guard)
        with pytest.raises(ValueError, match="token_bucket"):
            f.attach("retries", 4, guards.RetryBudget.grpc())
        with pytest.raises(ValueError, match="allowance"):
            f.attach("retries", 10**9 + 1, guards.RetryBudget.token_bucket())
        f.attach("stock", 2**32 - 1, b)
        with pytest.raises(ValueError, match="already attached"):
            f.attach("stock", 4, guards.Bulkhead())
        assert poll(lambda: f.share("stock") == 2**32 - 1)
        with pytest.raises(KeyError):
            f.share("other")
        with pytest.raises(TypeError, match="`name`"):
            f.share(None)
    assert f.left


def test_leave_twice_and_attach_after_leave(redis: Redis, service: str) -> None:
    f = Fleet(redis.url, service, "m", sync_interval=INTERVAL)
    b = guards.Bulkhead()
    f.attach("stock", 5, b)
    assert poll(lambda: b.max_concurrent == 5)
    f.leave()
    f.leave()
    assert f.left and repr(f) == f"Fleet(service='{service}', member='m', left=True)"
    assert b.max_concurrent == 5  # the guard keeps its last cap
    with pytest.raises(FleetError, match="has left"):
        f.attach("other", 5, guards.Bulkhead())
    assert f.stats()["allowances"] == []
    # The member's record is gone: a newcomer of the same name takes the whole allowance.
    with Fleet(redis.url, service, "m", sync_interval=INTERVAL) as g:
        b2 = guards.Bulkhead()
        g.attach("stock", 5, b2)
        assert poll(lambda: g.share("stock") == 5)
        with g as same:
            assert same is g
    assert g.left


def test_the_fleet_keeps_an_attached_guard_alive_until_it_leaves(
    redis: Redis, service: str
) -> None:
    b = guards.Bulkhead()
    before = sys.getrefcount(b)
    f = Fleet(redis.url, service, "m", sync_interval=INTERVAL)
    f.attach("stock", 3, b)
    assert sys.getrefcount(b) == before + 1
    f.leave()
    assert sys.getrefcount(b) == before
    g = Fleet(redis.url, service, "m2", sync_interval=INTERVAL)
    g.attach("stock", 3, b)
    assert sys.getrefcount(b) == before + 1
    del g  # garbage collection leaves too
    assert sys.getrefcount(b) == before


# ---------------------------------------------------------------- breaker evidence


def breaker() -> guards.CircuitBreaker:
    """A count window of 50 calls judged from 20, opening at 30 % failures for a minute."""
    return guards.CircuitBreaker(
        window_size=50,
        minimum_calls=20,
        failure_rate_threshold=0.3,
        open_duration=60,
        max_open_duration=60,
    )


def calls(b: guards.CircuitBreaker, n: int, failures: int) -> None:
    """``n`` calls, the first ``failures`` of them failed; refused calls are skipped."""
    for i in range(n):
        p = b.try_acquire()
        if p is not None:
            if i < failures:
                p.on_failure()
            else:
                p.on_success()


class BreakerMember:
    """A fleet member with one breaker attached as ``pay``."""

    def __init__(self, url: str, service: str, name: str) -> None:
        self.breaker = breaker()
        self.fleet = Fleet(url, service, name, sync_interval=INTERVAL)
        self.fleet.attach_breaker("pay", self.breaker)

    def pay(self) -> dict[str, Any]:
        return next(b for b in self.fleet.stats()["breakers"] if b["name"] == "pay")

    def more_syncs(self, n: int) -> None:
        start = self.fleet.stats()["syncs"]
        assert poll(lambda: self.fleet.stats()["syncs"] >= start + n), "no syncs"


@pytest.fixture
def breaker_members() -> Iterator[list[BreakerMember]]:
    made: list[BreakerMember] = []
    yield made
    for m in made:
        m.fleet.leave()


def test_members_with_few_calls_open_on_the_fleets_evidence(
    redis: Redis, service: str, breaker_members: list[BreakerMember]
) -> None:
    a, b, c, d = (BreakerMember(redis.url, service, n) for n in "abcd")
    breaker_members += [a, b, c, d]
    # A fails 30 calls (it trips on its own at the 20th); B and C make 2 successful calls
    # each, D 20, as many as its minimum.
    calls(a.breaker, 30, 30)
    assert a.breaker.state == "open"
    calls(b.breaker, 2, 0)
    calls(c.breaker, 2, 0)
    calls(d.breaker, 20, 0)
    assert poll(lambda: b.breaker.state == "open" and c.breaker.state == "open")
    for m in (b, c):
        s = m.pay()
        assert s["opened_on_evidence"] == 1
        assert m.breaker.stats()["closed_to_open"] == 1
        # A publishes the 20 failures that opened it, D its 20 successes.
        assert s["fleet_calls"] >= 40 and s["fleet_failures"] == 20, s
        assert s["fleet_members"] >= 2, s
        opened = [e for e in m.fleet.events() if e["kind"] == "breaker_opened_on_fleet_evidence"]
        assert len(opened) == 1, opened
        assert opened[0]["name"] == "pay" and opened[0]["fleet_failures"] == 20, opened
        assert opened[0]["members"] >= 2, opened
        # Opened as a local trip opens: refused for the open duration.
        with pytest.raises(guards.BreakerOpen):
            m.breaker.acquire()
    # D has calls enough of its own, all successes: it stays closed, sync after sync.
    d.more_syncs(5)
    assert d.breaker.state == "closed"
    assert (d.pay()["opened_on_evidence"], d.pay()["calls"]) == (0, 20)
    # A opened on its own: the agent did not count that.
    assert a.pay()["opened_on_evidence"] == 0
    assert a.breaker.stats()["closed_to_open"] == 1
    # B and C, opened on evidence, publish nothing while open (no echo).
    assert (b.pay()["calls"], c.pay()["calls"]) == (0, 0)


def test_evidence_from_one_member_opens_nobody(
    redis: Redis, service: str, breaker_members: list[BreakerMember]
) -> None:
    x, y = BreakerMember(redis.url, service, "x"), BreakerMember(redis.url, service, "y")
    breaker_members += [x, y]
    calls(x.breaker, 30, 30)
    assert poll(lambda: y.pay()["fleet_calls"] >= 20), y.pay()
    y.more_syncs(5)
    s = y.pay()
    assert (s["fleet_members"], s["opened_on_evidence"]) == (1, 0), s
    assert y.breaker.state == "closed"
    assert "breaker_opened_on_fleet_evidence" not in kinds(y.fleet.events())


def test_bad_attach_breaker_arguments(redis: Redis, service: str) -> None:
    b = breaker()
    before = sys.getrefcount(b)
    with Fleet(redis.url, service, "m", sync_interval=INTERVAL) as f:
        for name in ["", "a b", "x" * 129]:
            with pytest.raises(ValueError, match="`breaker name`|`name`"):
                f.attach_breaker(name, b)
        with pytest.raises(TypeError, match="`name`"):
            f.attach_breaker(None, b)
        for guard in [guards.Bulkhead(), object(), None, "pay"]:
            with pytest.raises(TypeError, match="guards.CircuitBreaker"):
                f.attach_breaker("pay", guard)
        f.attach_breaker("pay", b)
        assert sys.getrefcount(b) == before + 1
        with pytest.raises(ValueError, match="a breaker named `pay` is already attached"):
            f.attach_breaker("pay", breaker())
        with pytest.raises(ValueError, match="already attached as `pay`"):
            f.attach_breaker("other", b)
        # An allowance of the same name lives in another namespace.
        f.attach("pay", 4, guards.Bulkhead())
        assert poll(lambda: len(f.stats()["breakers"]) == 1 and f.stats()["syncs"] > 2)
        s = f.stats()["breakers"][0]
        assert set(s) == {
            "name", "calls", "failures", "fleet_calls", "fleet_failures", "fleet_members",
            "opened_on_evidence",
        }
    assert sys.getrefcount(b) == before  # leaving lets go of the breaker
    with pytest.raises(FleetError, match="has left"):
        f.attach_breaker("pay", b)
    assert f.stats()["breakers"] == []
