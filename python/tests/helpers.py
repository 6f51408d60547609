"""Helpers shared by the tests: threads, error matchers, and HTTP against servers on
loopback."""

from __future__ import annotations

import http.client
import json
import re
import socket
import threading
from collections.abc import Callable
from typing import Any

import pytest

import guards


def run_threads(n: int, target: Callable[[int], Any]) -> list[Any]:
    """Run ``target(i)`` on ``n`` threads released together; re-raise the first error."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            barrier.wait()
            results[i] = target(i)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def config_error(field: str, kind: str | None = None) -> Any:
    """``pytest.raises`` for a ConfigError naming ``field`` (and ``kind`` if given)."""

    class _Check:
        def __enter__(self) -> Any:
            self._cm = pytest.raises(guards.ConfigError)
            self._info = self._cm.__enter__()
            return self._info

        def __exit__(self, *exc: Any) -> bool:
            handled = self._cm.__exit__(*exc)
            err = self._info.value
            assert err.field == field, f"field {err.field!r} != {field!r} ({err})"
            if kind is not None:
                assert err.kind == kind, f"kind {err.kind!r} != {kind!r} ({err})"
            assert field in str(err)
            return bool(handled)

    return _Check()


def type_error(field: str) -> Any:
    """``pytest.raises(TypeError)`` whose message names ``field``."""
    return pytest.raises(TypeError, match=re.escape(f"`{field}`"))


def free_port() -> int:
    """A loopback port free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(port: int, path: str, timeout: float) -> tuple[int, dict[str, Any]]:
    """``GET path`` on loopback ``port`` on a connection of its own: status and JSON body."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers={"Connection": "close"})
        r = c.getresponse()
        return r.status, json.loads(r.read())
    finally:
        c.close()


def check_breaker_opened_for_all(port: int, timeout: float) -> None:
    """For a server whose workers share one breaker (window 4, minimum 4, 50 %: the 4th
    failure opens it) and answer with their pid (``/call?fail=1``, ``/call``, ``/stats``):
    failures until the breaker opens, then refusals from several workers, among them one
    that saw fewer failures than the minimum: its own failures could never have opened a
    breaker of its own, so the state is shared."""
    failures_seen: dict[int, int] = {}
    for _ in range(20):
        status, body = get_json(port, "/call?fail=1", timeout)
        if status == 503:
            break
        assert status == 502 and body["result"] == "failed", (status, body)
        failures_seen[body["pid"]] = failures_seen.get(body["pid"], 0) + 1
    assert sum(failures_seen.values()) == 4, failures_seen

    refused_by: dict[int, int] = {}
    for _ in range(300):
        status, body = get_json(port, "/call", timeout)
        assert status == 503 and body["result"] == "refused" and body["breaker"] == "open", body
        refused_by[body["pid"]] = refused_by.get(body["pid"], 0) + 1
        if len(refused_by) >= 2 and any(failures_seen.get(p, 0) < 4 for p in refused_by):
            break
    assert len(refused_by) >= 2, refused_by
    assert any(failures_seen.get(p, 0) < 4 for p in refused_by), (failures_seen, refused_by)

    status, body = get_json(port, "/stats", timeout)
    s = body.get("stats") or body["breaker"]
    assert s["failures"] == 4 and s["closed_to_open"] == 1, s
    assert s["rejected_open"] >= sum(refused_by.values()), s
