"""guards.httpx against a local flaky server on loopback (no network): retries of 5xx and
transport errors, Retry-After, the budget, a breaker per host, per-attempt timeouts cut to
the deadline, the deadline header, idempotency; sync and async transports."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import guards
import pytest

httpx = pytest.importorskip("httpx")
from guards.httpx import AsyncGuardedTransport, GuardedTransport, host_key  # noqa: E402

NO_WAIT = {"base": 1e-6, "cap": 1e-6}


class Flaky:
    """What the server answers, per path: a list of (status, headers) to answer in turn
    (the last one repeats); ``/slow`` holds the request until released."""

    def __init__(self) -> None:
        self.plans: dict[str, list[tuple[int, dict[str, str]]]] = {}
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.release = threading.Event()
        self.lock = threading.Lock()

    def answer(self, method: str, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
        with self.lock:
            self.seen.append((method, path, headers))
            plan = self.plans.get(path, [(200, {})])
            return plan.pop(0) if len(plan) > 1 else plan[0]

    def count(self, path: str) -> int:
        with self.lock:
            return sum(1 for _, p, _ in self.seen if p == path)


@pytest.fixture
def server() -> Iterator[tuple[str, Flaky]]:
    flaky = Flaky()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            if self.path == "/slow":
                flaky.answer(self.command, self.path, headers)
                flaky.release.wait(10.0)
                status, extra = 200, {}
            else:
                status, extra = flaky.answer(self.command, self.path, headers)
            body = f"{status} {headers.get('grpc-timeout', '-')}".encode()
            try:
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client gave up on a slow answer
                self.close_connection = True

        do_GET = do_POST = do_PUT = _serve

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", flaky
    finally:
        flaky.release.set()
        httpd.shutdown()
        httpd.server_close()
        t.join(10.0)


def client(**kwargs: Any) -> Any:
    kwargs.setdefault("backoff", NO_WAIT)
    return httpx.Client(transport=GuardedTransport(**kwargs), timeout=10.0)


def test_5xx_then_success_is_retried(server: tuple[str, Flaky]) -> None:
    base, flaky = server
    flaky.plans["/stock"] = [(503, {}), (500, {}), (200, {})]
    with client() as c:
        r = c.get(base + "/stock")
        assert r.status_code == 200
        s = c._transport.stats()
    assert flaky.count("/stock") == 3
    assert (s["calls"], s["attempts"], s["retries"], s["successes"]) == (1, 3, 2, 1)


def test_a_permanent_answer_is_not_retried(server: tuple[str, Flaky]) -> None:
    base, flaky = server
    flaky.plans["/missing"] = [(404, {})]
    with client() as c:
        assert c.get(base + "/missing").status_code == 404
    assert flaky.count("/missing") == 1


def test_giving_up_returns_the_last_response_read(server: tuple[str, Flaky]) -> None:
    base, flaky = server
    flaky.plans["/down"] = [(502, {})]
    with client(max_attempts=2) as c:
        r = c.get(base + "/down")
    assert r.status_code == 502 and r.text.startswith("502")
    assert flaky.count("/down") == 2


def test_retry_after_is_honoured(server: tuple[str, Flaky]) -> None:
    base, flaky = server
    flaky.plans["/busy"] = [(429, {"Retry-After": "2"}), (200, {})]
    delays: list[float] = []
    with guards.FakeClock(now=10**9):  # the wait advances the fake clock: no sleeping
        with client(retry={"on_retry": lambda st: delays.append(st.delay)}) as c:
            assert c.get(base + "/busy").status_code == 200
    assert delays and delays[0] >= 2.0


def test_a_retry_after_too_long_gives_up_at_once(server: tuple[str, Flaky]) -> None:
    base, flaky = server
    flaky.plans["/later"] = [(503, {"Retry-After": "3600"})]
    with client() as c:
        r = c.get(base + "/later")
        assert r.status_code == 503
        assert c._transport.stats()["retry_after_too_long"] == 1
    assert flaky.count("/later") == 1


def test_the_budget_limits_retries(server: tuple[str, Flaky]) -> None:
    base, flaky = server
    flaky.plans["/down"] = [(500, {})]
    budget = guards.RetryBudget(capacity=1.0, ratio=0.0)  # one retry, never refilled
    with client(budget=budget, max_attempts=3) as c:
        assert c.get(base + "/down").status_code == 500  # 1 + 1 retry, then refused
        assert c.get(base + "/down").status_code == 500  # no retry left
        s = c._transport.stats()
    assert flaky.count("/down") == 3
    assert s["budget_exhausted"] == 2


def test_transport_errors_are_retried_then_give_up(server: tuple[str, Flaky]) -> None:
    base, _ = server
    port = int(base.rsplit(":", 1)[1])
    with client(breakers=False) as c:
        with pytest.raises(guards.RetriesExhausted) as info:
            c.get(f"http://127.0.0.1:{_closed_port(port)}/x")
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert info.value.attempts == 3  # type: ignore[attr-defined]


def _closed_port(avoid: int) -> int:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens there now
    assert port != avoid
    return int(port)


def test_a_breaker_per_host(server: tuple[str, Flaky]) -> None:
    base, flaky = server
    flaky.plans["/down"] = [(500, {})]
    breakers = guards.KeyedBreakers(window_size=2, open_duration=60.0)
    with client(breakers=breakers, max_attempts=1, budget=False) as c:
        for _ in range(2):
            assert c.get(base + "/down").status_code == 500
        with pytest.raises(guards.BreakerOpen):
            c.get(base + "/ok")  # the same host: refused without a request
        assert flaky.count("/ok") == 0
        other = base.replace("127.0.0.1", "localhost")  # another host key, same server
        assert c.get(other + "/ok").status_code == 200
    assert breakers.state(host_key(httpx.URL(base))) == "open"
    assert breakers.state(host_key(httpx.URL(other))) == "closed"


def test_a_regions_breakers_are_shared_by_transports_over_it(
    server: tuple[str, Flaky], tmp_path: Any
) -> None:
    """Two transports over two openings of one region (as two processes of a host open it):
    the failures one sees open the host's breaker for the other, sync and async alike."""
    from guards import shared

    base, flaky = server
    flaky.plans["/down"] = [(500, {})]
    path = str(tmp_path / "region")
    a, b = shared.Region(path), shared.Region(path)
    settings = {"slots": 4, "window_size": 2, "minimum_calls": 2, "open_duration": 60.0}
    kb_a, kb_b = a.keyed_breakers("hosts", **settings), b.keyed_breakers("hosts", **settings)
    with client(breakers=kb_a, max_attempts=1, budget=False) as c:
        for _ in range(2):
            assert c.get(base + "/down").status_code == 500

    async def other_process() -> None:
        transport = AsyncGuardedTransport(breakers=kb_b, max_attempts=1, budget=False)
        async with httpx.AsyncClient(transport=transport, timeout=10.0) as c:
            with pytest.raises(guards.BreakerOpen):
                await c.get(base + "/ok")  # refused without a request

    asyncio.run(other_process())
    assert flaky.count("/ok") == 0
    assert kb_b.state(host_key(httpx.URL(base))) == "open"


def test_the_deadline_is_sent_and_cuts_the_timeouts(server: tuple[str, Flaky]) -> None:
    base, flaky = server
    seen: list[dict[str, float]] = []

    class Recorder(httpx.BaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.HTTPTransport()

        def handle_request(self, request: Any) -> Any:
            seen.append(dict(request.extensions["timeout"]))
            return self.inner.handle_request(request)

        def close(self) -> None:
            self.inner.close()

    with httpx.Client(transport=GuardedTransport(Recorder()), timeout=10.0) as c:
        with guards.deadline(1.5):
            r = c.get(base + "/ok")
        r2 = c.get(base + "/ok")  # no deadline: the client's own timeouts, no header
    grpc = flaky.seen[0][2]["grpc-timeout"]
    assert grpc.endswith("u") or grpc.endswith("m")
    assert r.status_code == 200 and r2.status_code == 200
    assert all(0 < v <= 1.5 for v in seen[0].values())
    assert all(v == 10.0 for v in seen[1].values())
    assert "grpc-timeout" not in flaky.seen[1][2]


def test_an_attempt_timeout_stops_a_slow_server(server: tuple[str, Flaky]) -> None:
    base, flaky = server
    with client(attempt_timeout=0.2, max_attempts=2, breakers=False) as c:
        with pytest.raises((guards.RetriesExhausted, guards.DeadlineExceeded)) as info:
            c.get(base + "/slow")
    assert isinstance(info.value.__cause__, httpx.TimeoutException)
    assert flaky.count("/slow") == 2
    flaky.release.set()


def test_post_is_retried_only_with_an_idempotency_key(server: tuple[str, Flaky]) -> None:
    base, flaky = server
    flaky.plans["/order"] = [(503, {})]
    with client() as c:
        assert c.post(base + "/order", content=b"x").status_code == 503
        assert flaky.count("/order") == 1
        r = c.post(base + "/order", content=b"x", headers={"Idempotency-Key": "k1"})
        assert r.status_code == 503
    assert flaky.count("/order") == 4  # 1 + 3 attempts with the key


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="transport"):
        GuardedTransport(transport=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="breakers"):
        GuardedTransport(breakers=guards.CircuitBreaker())
    with pytest.raises(TypeError, match="breakers"):
        AsyncGuardedTransport(breakers=guards.Bulkhead())
    with pytest.raises(guards.ConfigError):
        GuardedTransport(deadline_header="seconds")
    with pytest.raises(TypeError, match="retry_on_result"):
        GuardedTransport(retry={"retry_on_result": print})
    with pytest.raises(TypeError, match="retry"):
        GuardedTransport(retry=[1])  # type: ignore[arg-type]


# ------------------------------------------------------------------ asyncio


def test_async_transport_retries_and_breaks(server: tuple[str, Flaky]) -> None:
    base, flaky = server
    flaky.plans["/stock"] = [(500, {}), (200, {})]
    flaky.plans["/down"] = [(500, {})]

    async def main() -> None:
        breakers = guards.KeyedBreakers(window_size=4, open_duration=60.0)
        transport = AsyncGuardedTransport(backoff=NO_WAIT, breakers=breakers)
        async with httpx.AsyncClient(transport=transport, timeout=10.0) as c:
            assert (await c.get(base + "/stock")).status_code == 200  # failure, success
            async with guards.deadline(2.0):
                with pytest.raises(guards.BreakerOpen):  # 2 failures open it; the 3rd
                    await c.get(base + "/down")  # attempt is refused, not retried
            with pytest.raises(guards.BreakerOpen):
                await c.get(base + "/stock")
        assert transport.stats()["retries"] == 3

    asyncio.run(main())
    assert (flaky.count("/stock"), flaky.count("/down")) == (2, 2)
    assert "grpc-timeout" in [h for m, p, h in flaky.seen if p == "/down"][0]


def test_async_attempt_timeout(server: tuple[str, Flaky]) -> None:
    base, flaky = server

    async def main() -> None:
        transport = AsyncGuardedTransport(
            backoff=NO_WAIT, attempt_timeout=0.2, max_attempts=2, breakers=False
        )
        async with httpx.AsyncClient(transport=transport, timeout=10.0) as c:
            with pytest.raises((guards.RetriesExhausted, guards.DeadlineExceeded)):
                await c.get(base + "/slow")
        assert transport.retry.stats()["attempts"] == 2

    asyncio.run(main())
    flaky.release.set()


def test_async_attempt_cut_at_its_budget_is_a_breaker_failure(server: tuple[str, Flaky]) -> None:
    # The retry loop cancels an attempt at its budget: the breaker hears a timeout (a
    # failure), never "cancelled" (ignored), whichever of httpx's own read timeout and
    # the cancel comes first.
    base, flaky = server
    host = host_key(httpx.URL(base))

    async def main() -> None:
        breakers = guards.KeyedBreakers(window_size=4, minimum_calls=4, open_duration=60.0)
        transport = AsyncGuardedTransport(
            backoff=NO_WAIT, attempt_timeout=0.05, max_attempts=2, breakers=breakers
        )
        async with httpx.AsyncClient(transport=transport, timeout=None) as c:
            for _ in range(2):
                with pytest.raises((guards.RetriesExhausted, guards.DeadlineExceeded)):
                    await c.get(base + "/slow")
            st = breakers.stats(host)
            assert (st["failures"], st["ignored"]) == (4, 0)
            with pytest.raises(guards.BreakerOpen):  # 4 of 4 failed: open
                await c.get(base + "/slow")

    asyncio.run(main())
    flaky.release.set()
    assert flaky.count("/slow") == 4


# ------------------------------------------------------------------ the safe timeout forms


def test_time_left_outside_a_deadline_and_timeout_for(clock: guards.FakeClock) -> None:
    assert guards.time_left() is None  # the trap: httpx reads None as "no timeout"
    assert guards.time_left(default=5.0) == 5.0
    assert guards.timeout_for(2.0) == 2.0
    with guards.deadline(1.0):
        assert guards.time_left(default=5.0) == 1.0
        assert guards.timeout_for(2.0) == 1.0
        assert guards.timeout_for(0.25) == 0.25
        clock.advance(2.0)
        assert guards.timeout_for(2.0) == 0.0
    with pytest.raises(TypeError, match="limit"):
        guards.timeout_for(None)
