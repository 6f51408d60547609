"""Admission middleware against real servers on loopback (uvicorn for ASGI, wsgiref for
WSGI) and the frameworks' test clients (Starlette, Flask): 503 with Retry-After,
priorities, exempt health checks, outcomes reported, deadlines published, counters."""

from __future__ import annotations

import asyncio
import http.client
import socketserver
import threading
import time
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any, Callable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import guards
import pytest
from helpers import config_error, type_error

uvicorn = pytest.importorskip("uvicorn")
starlette = pytest.importorskip("starlette")
flask = pytest.importorskip("flask")
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import PlainTextResponse, Response, StreamingResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

WAIT_LIMIT = 10.0  # seconds: bound on every wait for a server-side condition


def wait_for(cond: Callable[[], bool], what: str) -> None:
    """Poll ``cond`` until it holds (bounded; never a timing assertion)."""
    end = time.monotonic() + WAIT_LIMIT
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


class Gate:
    """Holds requests inside the application until the test opens it."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.inside = 0
        self._lock = threading.Lock()

    def enter(self) -> None:
        with self._lock:
            self.inside += 1

    def leave(self) -> None:
        with self._lock:
            self.inside -= 1


def get(
    port: int, path: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_LIMIT)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    return t, out


# ------------------------------------------------------------------ ASGI app + server


def asgi_app(gate: Gate, seen: dict[str, Any]) -> Starlette:
    async def hold(request: Request) -> Response:
        gate.enter()
        try:
            end = time.monotonic() + WAIT_LIMIT
            while not gate.open.is_set() and time.monotonic() < end:
                await asyncio.sleep(0.002)
        finally:
            gate.leave()
        return PlainTextResponse("held")

    async def fast(request: Request) -> Response:
        seen["time_left"] = guards.time_left()
        return PlainTextResponse("fast")

    async def shed(request: Request) -> Response:
        return PlainTextResponse("busy downstream", status_code=503)

    async def boom(request: Request) -> Response:
        raise RuntimeError("handler bug")

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def stream(request: Request) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            yield b"first chunk\n"
            end = time.monotonic() + WAIT_LIMIT  # the client leaves long before
            while time.monotonic() < end:
                await asyncio.sleep(0.005)
            yield b"never sent\n"

        return StreamingResponse(chunks())

    return Starlette(
        routes=[
            Route("/hold", hold),
            Route("/fast", fast),
            Route("/shed", shed),
            Route("/boom", boom),
            Route("/healthz", health),
            Route("/stream", stream),
        ]
    )


@pytest.fixture
def asgi_server() -> Iterator[
    Callable[..., tuple[int, Gate, guards.AdmissionMiddleware, dict[str, Any]]]
]:
    servers: list[tuple[Any, threading.Thread, Gate]] = []

    def start(
        door: guards.Admission, **kwargs: Any
    ) -> tuple[int, Gate, guards.AdmissionMiddleware, dict[str, Any]]:
        gate = Gate()
        seen: dict[str, Any] = {}
        mw = guards.AdmissionMiddleware(asgi_app(gate, seen), door, **kwargs)
        config = uvicorn.Config(mw, host="127.0.0.1", port=0, log_level="critical", lifespan="off")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        wait_for(lambda: server.started, "uvicorn to start")
        port = server.servers[0].sockets[0].getsockname()[1]
        servers.append((server, thread, gate))
        return port, gate, mw, seen

    yield start
    for server, thread, gate in servers:
        gate.open.set()
        server.should_exit = True
        thread.join(WAIT_LIMIT)


def test_asgi_sheds_with_503_and_retry_after_on_loopback(asgi_server: Any) -> None:
    door = guards.Admission(limits=[1] * 8)
    port, gate, mw, _ = asgi_server(door)

    held, out = in_thread(lambda: get(port, "/hold"))
    wait_for(lambda: gate.inside == 1, "the first request to be inside")
    assert door.in_flight == 1

    status, headers, body = get(port, "/fast")
    assert status == 503
    assert headers["retry-after"] == "1"  # the admission's min_retry_after, whole seconds
    assert body == b"overloaded: try again later\n"

    status, _, body = get(port, "/healthz")  # exempt: still answered
    assert (status, body) == (200, b"ok")

    gate.open.set()
    held.join(WAIT_LIMIT)
    assert out[0][0] == 200 and out[0][2] == b"held"
    assert get(port, "/fast")[0] == 200
    # the ticket goes back just after the last byte is sent
    wait_for(lambda: door.in_flight == 0, "the last ticket to be given back")

    s = mw.stats()
    assert (s["requests"], s["exempt"], s["admitted"], s["rejected"]) == (4, 1, 2, 1)
    d = door.stats()
    assert (d["admitted"], d["refused_limit_reached"], d["succeeded"], d["in_flight"]) == (
        2,
        1,
        2,
        0,
    )


def test_asgi_client_gone_mid_stream_is_ignored_not_a_success(asgi_server: Any) -> None:
    """Regression: a client that disconnects in the middle of a streamed response under
    uvicorn was reported to the admission as a success."""
    door = guards.Admission()
    port, _, mw, _ = asgi_server(door)
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_LIMIT)
    try:
        sock.sendall(b"GET /stream HTTP/1.1\r\nHost: test\r\n\r\n")
        got = b""
        while b"first chunk" not in got:
            data = sock.recv(4096)
            assert data, "the server closed the connection early"
            got += data
        assert got.startswith(b"HTTP/1.1 200")
    finally:
        sock.close()  # gone mid-stream
    wait_for(lambda: door.in_flight == 0, "the ticket to be given back")
    d = door.stats()
    assert (d["admitted"], d["succeeded"], d["ignored"]) == (1, 0, 1)
    assert mw.stats()["disconnected"] == 1
    assert get(port, "/fast")[0] == 200  # a whole response is still a success
    wait_for(lambda: door.stats()["succeeded"] == 1, "the success to be reported")
    assert mw.stats()["disconnected"] == 1


def test_asgi_priority_from_a_header_keeps_room_for_important_requests(asgi_server: Any) -> None:
    door = guards.Admission(limits=[2, 1, 1, 1, 1, 1, 1, 1])
    port, gate, mw, _ = asgi_server(door, priority=guards.priority_from_header("x-priority"))

    held, out = in_thread(lambda: get(port, "/hold", {"x-priority": "sheddable"}))
    wait_for(lambda: gate.inside == 1, "a sheddable request inside")
    assert get(port, "/fast", {"x-priority": "3"})[0] == 503  # sheddable: full at 1
    assert get(port, "/fast")[0] == 503  # default class (1) also capped at 1
    assert get(port, "/fast", {"x-priority": "critical_plus"})[0] == 200  # 0: room for 2
    gate.open.set()
    held.join(WAIT_LIMIT)
    wait_for(lambda: door.in_flight == 0, "the last ticket to be given back")
    assert door.refused_by_priority()[:4] == [0, 1, 0, 1]


def test_asgi_reports_outcomes_to_the_admission() -> None:
    door = guards.Admission()
    mw = guards.AdmissionMiddleware(asgi_app(Gate(), {}), door)
    with TestClient(mw, raise_server_exceptions=False) as client:
        assert client.get("/fast").status_code == 200
        assert client.get("/shed").status_code == 503  # the app's own 503: dropped
        assert client.get("/boom").status_code == 500  # an exception: ignored
    d = door.stats()
    assert (d["admitted"], d["succeeded"], d["dropped"], d["ignored"], d["in_flight"]) == (
        3,
        1,
        1,
        1,
        0,
    )
    s = mw.stats()
    assert (s["overloaded"], s["errors"]) == (1, 1)


def test_asgi_publishes_the_callers_deadline() -> None:
    seen: dict[str, Any] = {}
    mw = guards.AdmissionMiddleware(asgi_app(Gate(), seen), guards.Admission(), deadline="grpc")
    with TestClient(mw) as client:
        client.get("/fast", headers={"grpc-timeout": "2S"})
        assert seen["time_left"] is not None and 0 < seen["time_left"] <= 2.0
        client.get("/fast")
        assert seen["time_left"] is None
        client.get("/fast", headers={"grpc-timeout": "garbage"})  # ignored, not an error
        assert seen["time_left"] is None


def test_asgi_passes_other_scopes_through() -> None:
    calls: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        calls.append(scope["type"])

    door = guards.Admission(limits=[1] * 8)
    mw = guards.AdmissionMiddleware(app, door)
    asyncio.run(mw({"type": "lifespan"}, None, None))
    asyncio.run(mw({"type": "websocket", "path": "/ws"}, None, None))
    assert calls == ["lifespan", "websocket"]
    assert door.stats()["admitted"] == 0


def test_asgi_custom_exempt_predicate_and_body() -> None:
    door = guards.Admission(limits=[1] * 8)
    mw = guards.AdmissionMiddleware(
        asgi_app(Gate(), {}), door, exempt=lambda path: path.startswith("/heal"), body="go away"
    )
    ticket = door.acquire()  # the door is full
    try:
        with TestClient(mw) as client:
            assert client.get("/healthz").status_code == 200
            r = client.get("/fast")
            assert (r.status_code, r.text) == (503, "go away")
            assert r.headers["cache-control"] == "no-store"
    finally:
        ticket.on_ignore()


# ------------------------------------------------------------------ ASGI, message by message


class _Mapping:
    """A message that is a mapping with ``get`` but not a dict."""

    def __init__(self, **items: Any) -> None:
        self._items = items

    def get(self, key: str, default: Any = None) -> Any:
        return self._items.get(key, default)


def _drive(mw: Any, app_steps: Any, incoming: list[Any], path: Any = "/x") -> list[Any]:
    """Run one http request through ``mw`` with a hand-made server: ``incoming`` are the
    messages ``receive`` hands out; returns what reached the server's ``send``."""
    sent: list[Any] = []
    queue = list(incoming)

    async def receive() -> Any:
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    asyncio.run(mw({"type": "http", "path": path, "headers": []}, receive, send))
    return sent


def _app(*steps: Any) -> Any:
    """An ASGI app that, in order, sends each message of ``steps``, or receives for the
    string ``"receive"``, or raises an exception instance."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        for step in steps:
            if step == "receive":
                await receive()
            elif isinstance(step, BaseException):
                raise step
            else:
                await send(step)

    return app


START = {"type": "http.response.start", "status": 200, "headers": []}
LAST = {"type": "http.response.body", "body": b"ok"}


def test_asgi_watch_counts_each_way_a_response_ends() -> None:
    door = guards.Admission()
    cases = [
        # (app steps, what the server received, the admission's counter that moves)
        ((START, LAST), {"type": "http.request"}, "succeeded"),
        ((START, {"type": "http.response.body", "body": b"a", "more_body": True}), None, "ignored"),
        ((START, {"type": "http.response.body", "more_body": True}, "receive", LAST), None, "ignored"),
        ((START, LAST, "receive"), None, "succeeded"),  # a disconnect after the end
        (({**START, "status": 429}, LAST), None, "dropped"),
        (({**START, "status": 503}, LAST), None, "dropped"),
        ((LAST,), None, "ignored"),  # no response started
        ((_Mapping(type="http.response.start", status=200), _Mapping(type="http.response.body")), None, "succeeded"),
        (({**START, "status": "odd"}, LAST), None, "succeeded"),  # not an int: not an overload
        (({"type": 7}, START, {"type": "http.response.body", "more_body": 0}), None, "succeeded"),
    ]
    for steps, _, counter in cases:
        mw = guards.AdmissionMiddleware(_app(*steps), door)
        before = door.stats()[counter]
        incoming = [{"type": "http.disconnect"}]
        sent = _drive(mw, steps, incoming)
        assert sent == [s for s in steps if not isinstance(s, (str, BaseException))], steps
        assert door.stats()[counter] == before + 1, (steps, counter, door.stats())
        assert door.in_flight == 0
    s = guards.AdmissionMiddleware(_app(START, LAST), door).stats()
    assert s["admitted"] == 0  # counters are per middleware


def test_asgi_watch_middleware_counters() -> None:
    door = guards.Admission()
    mw = guards.AdmissionMiddleware(_app({**START, "status": 503}, LAST), door)
    _drive(mw, None, [])
    mw2 = guards.AdmissionMiddleware(_app(START, {"type": "http.response.body", "more_body": True}, "receive"), door)
    _drive(mw2, None, [{"type": "http.disconnect"}])
    assert (mw.stats()["overloaded"], mw.stats()["disconnected"]) == (1, 0)
    assert (mw2.stats()["overloaded"], mw2.stats()["disconnected"]) == (0, 1)
    assert mw.stats()["admitted"] == mw2.stats()["admitted"] == 1


def test_asgi_watch_exceptions_are_classified_and_raised() -> None:
    door = guards.Admission()
    mw = guards.AdmissionMiddleware(_app(START, asyncio.CancelledError()), door)
    with pytest.raises(asyncio.CancelledError):
        _drive(mw, None, [])
    mw = guards.AdmissionMiddleware(_app(TimeoutError()), door)
    with pytest.raises(TimeoutError):
        _drive(mw, None, [])
    mw = guards.AdmissionMiddleware(_app(KeyError("k")), door)
    with pytest.raises(KeyError):
        _drive(mw, None, [])
    # A message that is not a mapping: the application's error, raised; the ticket goes back.
    mw = guards.AdmissionMiddleware(_app(["not", "a", "message"]), door)
    with pytest.raises(AttributeError):
        _drive(mw, None, [])
    d = door.stats()
    assert d["in_flight"] == 0
    assert (d["dropped"], d["ignored"]) == (1, 3), d  # the timeout is an overload signal
    assert mw.stats()["errors"] == 1


def test_asgi_watch_names_refusals_by_a_str_path_only() -> None:
    door = guards.Admission(limits=[1] * 8)
    seen: list[Any] = []
    sub = guards.events.on("refusal", lambda e: seen.append(e.operation), source=door)
    ticket = door.acquire()
    try:
        for path in ("/cart", b"/bytes"):
            sent = _drive(guards.AdmissionMiddleware(_app(START, LAST), door), None, [], path=path)
            assert sent[0]["status"] == 503
    finally:
        ticket.on_ignore()
        sub.close()
    assert seen == ["/cart", None]


# ------------------------------------------------------------------ WSGI


def wsgi_app(gate: Gate, seen: dict[str, Any]) -> Callable[..., Any]:
    def app(environ: Any, start_response: Any) -> Any:
        path = environ["PATH_INFO"]
        if path == "/hold":
            gate.enter()
            try:
                gate.open.wait(WAIT_LIMIT)
            finally:
                gate.leave()
        if path == "/shed":
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"busy"]
        if path == "/boom":
            raise RuntimeError("handler bug")
        seen["time_left"] = guards.time_left()
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [path.encode()]

    return app


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def wsgi_server() -> Iterator[Callable[..., tuple[int, Gate, guards.WSGIAdmissionMiddleware]]]:
    servers: list[tuple[Any, threading.Thread, Gate]] = []

    def start(
        door: guards.Admission, **kwargs: Any
    ) -> tuple[int, Gate, guards.WSGIAdmissionMiddleware]:
        gate = Gate()
        mw = guards.WSGIAdmissionMiddleware(wsgi_app(gate, {}), door, **kwargs)
        server = make_server(
            "127.0.0.1", 0, mw, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler
        )
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()
        servers.append((server, thread, gate))
        return server.server_address[1], gate, mw

    yield start
    for server, thread, gate in servers:
        gate.open.set()
        server.shutdown()
        server.server_close()
        thread.join(WAIT_LIMIT)


def test_wsgi_sheds_with_503_and_retry_after_on_loopback(wsgi_server: Any) -> None:
    door = guards.Admission(limits=[1] * 8)
    port, gate, mw = wsgi_server(door)

    held, out = in_thread(lambda: get(port, "/hold"))
    wait_for(lambda: gate.inside == 1, "the first request to be inside")
    status, headers, body = get(port, "/fast")
    assert status == 503
    assert headers["retry-after"] == "1"
    assert get(port, "/health")[0] == 200  # exempt
    gate.open.set()
    held.join(WAIT_LIMIT)
    assert out[0][:1] == (200,)
    wait_for(lambda: door.in_flight == 0, "the ticket to be given back on close")
    assert get(port, "/fast")[0] == 200
    wait_for(lambda: door.in_flight == 0, "the ticket to be given back on close")
    s = mw.stats()
    assert (s["requests"], s["exempt"], s["admitted"], s["rejected"]) == (4, 1, 2, 1)
    assert door.stats()["succeeded"] == 2


def test_wsgi_with_flask_reports_outcomes_and_deadline() -> None:
    app = flask.Flask("shop")
    seen: dict[str, Any] = {}

    @app.route("/ok")
    def ok() -> str:
        seen["time_left"] = guards.time_left()
        return "ok"

    @app.route("/shed")
    def shed() -> Any:
        return "busy", 503

    @app.route("/boom")
    def boom() -> str:
        raise RuntimeError("bug")

    door = guards.Admission()
    app.wsgi_app = guards.WSGIAdmissionMiddleware(app.wsgi_app, door, deadline="millis")  # type: ignore[method-assign]
    client = app.test_client()
    # the test client closes the body (giving the ticket back) when the response closes
    with client.get("/ok", headers={"x-envoy-expected-rq-timeout-ms": "1500"}) as r:
        assert r.status_code == 200
    assert seen["time_left"] is not None and 0 < seen["time_left"] <= 1.5
    with client.get("/shed") as r:
        assert r.status_code == 503
    with client.get("/boom") as r:
        assert r.status_code == 500  # Flask turns the exception into a 500
    d = door.stats()
    assert (d["admitted"], d["in_flight"], d["dropped"]) == (3, 0, 1)
    assert d["succeeded"] == 2  # Flask answered the bug with its own 500


def test_wsgi_exception_before_the_response_releases_the_ticket() -> None:
    door = guards.Admission()
    mw = guards.WSGIAdmissionMiddleware(wsgi_app(Gate(), {}), door)
    with pytest.raises(RuntimeError):
        mw({"PATH_INFO": "/boom"}, lambda *a: None)
    assert door.stats()["ignored"] == 1
    assert door.in_flight == 0
    assert mw.stats()["errors"] == 1


def test_wsgi_body_released_exactly_once() -> None:
    door = guards.Admission()
    mw = guards.WSGIAdmissionMiddleware(wsgi_app(Gate(), {}), door)
    body = mw({"PATH_INFO": "/x"}, lambda *a: None)
    assert list(body) == [b"/x"]
    assert door.in_flight == 1  # until the server closes the body
    body.close()  # type: ignore[attr-defined]
    body.close()  # type: ignore[attr-defined]
    assert door.in_flight == 0
    assert door.stats()["succeeded"] == 1


def test_wsgi_priority_callable_and_rejection_headers() -> None:
    door = guards.Admission(limits=[2, 1, 1, 1, 1, 1, 1, 1])
    mw = guards.WSGIAdmissionMiddleware(
        wsgi_app(Gate(), {}), door, priority=lambda environ: 0 if environ.get("HTTP_X_VIP") else 3
    )
    ticket = door.acquire(priority=3)  # class 3 is now full
    try:
        responses: list[Any] = []
        body = mw({"PATH_INFO": "/x"}, lambda status, headers: responses.append((status, headers)))
        assert list(body) == [b"overloaded: try again later\n"]
        status, headers = responses[0]
        assert status.startswith("503")
        assert ("Retry-After", "1") in headers
        ok = mw({"PATH_INFO": "/x", "HTTP_X_VIP": "1"}, lambda *a: None)
        assert list(ok) == [b"/x"]
        ok.close()  # type: ignore[attr-defined]
    finally:
        ticket.on_ignore()


# ------------------------------------------------------------------ helpers / bad input


def test_priority_from_header_reads_numbers_names_and_defaults() -> None:
    p = guards.priority_from_header("x-priority", default=2, names={"batch": 7})
    scope = lambda value: {"type": "http", "headers": [(b"x-priority", value)]}  # noqa: E731
    assert p(scope(b"0")) == 0
    assert p(scope(b"CRITICAL")) == 1
    assert p(scope(b"batch")) == 7
    assert p(scope(b"9")) == 2  # out of range: default
    assert p(scope(b"urgent")) == 2  # unknown: default
    assert p({"type": "http", "headers": []}) == 2
    assert p({"HTTP_X_PRIORITY": "sheddable_plus"}) == 2
    assert p({"HTTP_X_PRIORITY": "3"}) == 3


def test_a_priority_header_never_raises() -> None:
    """Regression: `x-priority: ²` (a digit to str.isdigit) or a 5,000-digit value made
    the middleware raise: a client could turn any request into a 500."""
    p = guards.priority_from_header("x-priority", default=2)
    bad = ["²", "٣", "9" * 5000, "-1", "+1", "1.0", " ", "", "\x00", "7" * 65, "0x1"]
    for value in bad:
        assert p({"type": "http", "headers": [(b"x-priority", value.encode("utf-8"))]}) == 2
        assert p({"HTTP_X_PRIORITY": value}) == 2

    class Request:
        headers = {"x-priority": "²"}

    assert p(Request()) == 2
    assert p({"type": "http", "headers": [(b"x-priority", b" 5 ")]}) == 5


def test_middlewares_answer_requests_with_hostile_priority_headers() -> None:
    door = guards.Admission()
    wsgi = guards.WSGIAdmissionMiddleware(
        wsgi_app(Gate(), {}), door, priority=guards.priority_from_header()
    )
    statuses: list[str] = []
    for value in ("²", "9" * 5000):
        body = wsgi(
            {"PATH_INFO": "/fast", "HTTP_X_PRIORITY": value},
            lambda status, headers, exc_info=None: statuses.append(status),
        )
        list(body)
        body.close()  # type: ignore[attr-defined]
    assert [s.split()[0] for s in statuses] == ["200", "200"]
    asgi = guards.AdmissionMiddleware(
        asgi_app(Gate(), {}), door, priority=guards.priority_from_header()
    )
    with TestClient(asgi) as client:
        for value in ("²", "9" * 5000):
            r = client.get("/fast", headers={"x-priority": value.encode("utf-8")})
            assert r.status_code == 200


def test_middleware_rejects_bad_arguments() -> None:
    app = wsgi_app(Gate(), {})
    with type_error("app"):
        guards.AdmissionMiddleware(42)
    with type_error("admission"):
        guards.AdmissionMiddleware(app, admission=5)
    with type_error("priority"):
        guards.WSGIAdmissionMiddleware(app, priority=3)  # type: ignore[arg-type]
    with type_error("exempt"):
        guards.WSGIAdmissionMiddleware(app, exempt="/health")
    with type_error("exempt"):
        guards.WSGIAdmissionMiddleware(app, exempt=[1])
    with config_error("deadline", "out_of_range"):
        guards.WSGIAdmissionMiddleware(app, deadline="seconds")
    with type_error("body"):
        guards.WSGIAdmissionMiddleware(app, body=5)  # type: ignore[arg-type]
    with type_error("name"):
        guards.priority_from_header(5)  # type: ignore[arg-type]
    with config_error("default", "out_of_range"):
        guards.priority_from_header(default=9)
    with config_error("names['x']", "out_of_range"):
        guards.priority_from_header(names={"x": 8})


def test_a_bad_priority_from_the_callable_is_a_type_error() -> None:
    mw = guards.WSGIAdmissionMiddleware(wsgi_app(Gate(), {}), priority=lambda environ: "high")
    with type_error("priority"):
        mw({"PATH_INFO": "/x"}, lambda *a: None)


# ------------------------------------------------------------------ aiohttp


def aiohttp_app(
    door: guards.Admission, hold: asyncio.Event, inside: list[int], **kwargs: Any
) -> Any:
    from aiohttp import web

    async def held(request: Any) -> Any:
        inside.append(1)
        await asyncio.wait_for(hold.wait(), WAIT_LIMIT)
        return web.Response(text="held")

    async def fast(request: Any) -> Any:
        return web.Response(text=str(guards.time_left()))

    async def shed(request: Any) -> Any:
        raise web.HTTPServiceUnavailable()

    async def health(request: Any) -> Any:
        return web.Response(text="ok")

    mw = guards.AiohttpAdmissionMiddleware(door, **kwargs)
    app = web.Application(middlewares=[mw])
    app.router.add_get("/hold", held)
    app.router.add_get("/fast", fast)
    app.router.add_get("/shed", shed)
    app.router.add_get("/healthz", health)
    return app, mw


@pytest.mark.asyncio
async def test_aiohttp_sheds_with_503_and_retry_after_on_loopback() -> None:
    aiohttp = pytest.importorskip("aiohttp")
    from aiohttp.test_utils import TestClient as AioClient
    from aiohttp.test_utils import TestServer

    door = guards.Admission(limits=[1] * 8)
    hold = asyncio.Event()
    inside: list[int] = []
    app, mw = aiohttp_app(door, hold, inside, deadline="grpc")
    async with AioClient(TestServer(app, host="127.0.0.1")) as client:
        first = asyncio.ensure_future(client.get("/hold"))
        while not inside:
            await asyncio.sleep(0.002)
        refused = await client.get("/fast")
        assert refused.status == 503
        assert refused.headers["Retry-After"] == "1"
        assert (await client.get("/healthz")).status == 200  # exempt
        hold.set()
        held = await first
        assert (held.status, await held.text()) == (200, "held")
        r = await client.get("/fast", headers={"grpc-timeout": "1S"})
        left = float(await r.text())
        assert 0 < left <= 1.0  # the caller's deadline, published for the handler
        assert (await client.get("/shed")).status == 503  # the handler's own 503: dropped
    assert isinstance(aiohttp.__version__, str)
    s = mw.stats()
    assert (s["requests"], s["exempt"], s["admitted"], s["rejected"], s["overloaded"]) == (
        5,
        1,
        3,
        1,
        1,
    )
    d = door.stats()
    assert (d["succeeded"], d["dropped"], d["in_flight"]) == (2, 1, 0)


@pytest.mark.asyncio
async def test_aiohttp_priority_from_header() -> None:
    pytest.importorskip("aiohttp")
    from aiohttp.test_utils import TestClient as AioClient
    from aiohttp.test_utils import TestServer

    door = guards.Admission(limits=[2, 1, 1, 1, 1, 1, 1, 1])
    hold = asyncio.Event()
    inside: list[int] = []
    app, _ = aiohttp_app(door, hold, inside, priority=guards.priority_from_header())
    async with AioClient(TestServer(app, host="127.0.0.1")) as client:
        first = asyncio.ensure_future(client.get("/hold", headers={"x-priority": "3"}))
        while not inside:
            await asyncio.sleep(0.002)
        assert (await client.get("/fast", headers={"x-priority": "3"})).status == 503
        assert (await client.get("/fast", headers={"x-priority": "0"})).status == 200
        hold.set()
        assert (await first).status == 200
    assert door.refused_by_priority()[3] == 1
