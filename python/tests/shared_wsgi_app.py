"""A WSGI app for gunicorn's sync workers with host-wide guards (test_shared_gunicorn.py).

One circuit breaker and one bulkhead of 2 from a ``guards.shared.Region``, opened when the
module is imported: in each worker, or once in gunicorn's master with ``--preload`` (the
workers then inherit the mapping through ``fork``). Every answer is JSON with the worker's
pid.

Routes:

- ``/call?fail=1``: a call under the breaker (502 when the dependency fails, 503 refused).
- ``/slow?ms=N``: a call holding a bulkhead slot for N ms (503 when the bulkhead is full).
- ``/hold``: a call holding a bulkhead slot until the file ``$GUARDS_TEST_RELEASE`` exists.
- ``/stats``: the breaker's and the bulkhead's host-wide counters.

While it holds a slot, a call counts itself in the ledger file ``$GUARDS_TEST_LEDGER`` (JSON,
updated under ``flock``): how many calls are inside now, the most ever inside at once, how
many entered, and the pids inside. The ledger is the test's own view of the in-flight count
across workers, independent of the bulkhead's counters.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

import guards
from guards import shared

REGION = os.environ["GUARDS_REGION"]
LEDGER = os.environ["GUARDS_TEST_LEDGER"]
RELEASE = os.environ["GUARDS_TEST_RELEASE"]
CAP = 2
HOLD_LIMIT_S = 20.0  # a /hold never released answers 500 after this long

region = shared.Region(REGION)
breaker = region.circuit_breaker(
    "dependency",
    window_size=4,
    minimum_calls=4,
    failure_rate_threshold=0.5,
    open_duration=60.0,
    half_open_probes=1,
)
pool = region.bulkhead("pool", max_concurrent=CAP)
OPENED_BY = os.getpid()  # the master's pid under --preload, the worker's otherwise


def _ledger(delta: int) -> None:
    with open(LEDGER, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        text = f.read()
        d: dict[str, Any] = (
            json.loads(text) if text else {"now": 0, "max": 0, "entered": 0, "inside": []}
        )
        d["now"] += delta
        if delta > 0:
            d["entered"] += 1
            d["inside"].append(os.getpid())
        else:
            d["inside"].remove(os.getpid())
        d["max"] = max(d["max"], d["now"])
        f.seek(0)
        f.truncate()
        f.write(json.dumps(d))


def _dependency(fail: bool) -> str:
    if fail:
        raise ConnectionError("the dependency refused the connection")
    return "fresh data"


def _held(wait: Callable[[], bool]) -> tuple[int, dict[str, Any]]:
    pid = os.getpid()
    try:
        with guards.guarded(pool):
            _ledger(+1)
            try:
                released = wait()
            finally:
                _ledger(-1)
    except guards.BulkheadFull:
        return 503, {"pid": pid, "result": "refused", "in_flight": pool.in_flight}
    if not released:
        return 500, {"pid": pid, "result": "never released"}
    return 200, {"pid": pid, "result": "admitted"}


def _sleep(ms: int) -> bool:
    time.sleep(ms / 1000)
    return True


def _wait_for_release() -> bool:
    deadline = time.monotonic() + HOLD_LIMIT_S
    while not os.path.exists(RELEASE):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _route(path: str, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
    pid = os.getpid()
    if path == "/stats":
        return 200, {
            "pid": pid,
            "opened_by": OPENED_BY,
            "state": breaker.state,
            "breaker": breaker.stats(),
            "pool": pool.stats(),
            "region": region.stats(),
        }
    if path == "/call":
        fail = query.get("fail") == ["1"]
        try:
            with guards.guarded(breaker):
                result = _dependency(fail)
        except guards.BreakerOpen:
            return 503, {"pid": pid, "result": "refused", "breaker": breaker.state}
        except ConnectionError:
            return 502, {"pid": pid, "result": "failed", "breaker": breaker.state}
        return 200, {"pid": pid, "result": result, "breaker": breaker.state}
    if path == "/slow":
        ms = int(query.get("ms", ["0"])[0])
        return _held(lambda: _sleep(ms))
    if path == "/hold":
        return _held(_wait_for_release)
    return 404, {"pid": pid}


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    status, body = _route(environ["PATH_INFO"], parse_qs(environ.get("QUERY_STRING", "")))
    data = json.dumps(body).encode()
    reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error", 502: "Bad Gateway"}
    start_response(
        f"{status} {reason.get(status, 'Service Unavailable')}",
        [("Content-Type", "application/json"), ("Content-Length", str(len(data)))],
    )
    return [data]
