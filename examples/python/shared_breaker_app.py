"""One circuit breaker for every worker of a server.

A small ASGI app (no framework) whose only route calls a dependency under a host-wide
circuit breaker from ``guards.shared``. Served with several worker processes, the failures
one worker sees open the breaker for all of them: the other workers refuse at once instead
of each learning the outage on its own.

Run (the region file is created by the first worker to start)::

    GUARDS_REGION=/dev/shm/guards-demo uvicorn shared_breaker_app:app --workers 4 --port 8000
    # or: gunicorn -w 4 -k uvicorn_worker.UvicornWorker shared_breaker_app:app
    # (pip install uvicorn-worker; uvicorn.workers.UvicornWorker is the deprecated same)

    curl 'localhost:8000/call?fail=1'   # the dependency fails (4 of these open the breaker)
    curl 'localhost:8000/call'          # from any worker: 503, "breaker": "open"
    curl 'localhost:8000/stats'         # the host-wide counters, from any worker

Every answer is JSON with the worker's ``pid`` and the breaker's state, so you can watch
workers that never saw a failure refuse.
"""

from __future__ import annotations

import json
import os
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

import guards
from guards import shared

REGION = os.environ.get("GUARDS_REGION", "guards-demo")

# Opened in each worker (uvicorn and gunicorn import the app in every worker process), or
# once in gunicorn's master with --preload (the workers inherit it through fork).
region = shared.Region(REGION)
breaker = region.circuit_breaker(
    "dependency",
    window_size=4,  # the last 4 calls...
    minimum_calls=4,
    failure_rate_threshold=0.5,  # ...half of them failed: open
    open_duration=30.0,
    half_open_probes=1,
)
# At most 8 calls to the dependency in flight, all workers together.
pool = region.bulkhead("dependency-pool", max_concurrent=8)


async def dependency(fail: bool) -> str:
    """The slow or failing service the app depends on (simulated)."""
    if fail:
        raise ConnectionError("the dependency refused the connection")
    return "fresh data"


Send = Callable[[dict[str, Any]], Awaitable[None]]


async def answer(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


async def app(scope: dict[str, Any], receive: Any, send: Send) -> None:
    if scope["type"] != "http":
        return
    pid = os.getpid()
    if scope["path"] == "/stats":
        await answer(send, 200, {"pid": pid, "state": breaker.state, "stats": breaker.stats()})
        return
    if scope["path"] != "/call":
        await answer(send, 404, {"pid": pid})
        return
    fail = parse_qs(scope.get("query_string", b"").decode()).get("fail") == ["1"]
    try:
        with guards.guarded(breaker, pool):
            result = await dependency(fail)
    except guards.BreakerOpen as e:
        await answer(
            send,
            503,
            {"pid": pid, "result": "refused", "breaker": breaker.state, "retry_after": e.retry_after},
        )
        return
    except ConnectionError:
        await answer(send, 502, {"pid": pid, "result": "failed", "breaker": breaker.state})
        return
    await answer(send, 200, {"pid": pid, "result": result, "breaker": breaker.state})
