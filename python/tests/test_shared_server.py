"""The demo of examples/python: uvicorn with 4 worker processes sharing one circuit breaker.
Failures seen by some workers open the breaker for all of them: workers that saw fewer
failures than the breaker's minimum (4) refuse, which a per-process breaker never would."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")

APP_DIR = Path(__file__).resolve().parents[2] / "examples" / "python"
WORKERS = 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, path: str) -> tuple[int, dict[str, Any]]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path, headers={"Connection": "close"})
        r = c.getresponse()
        return r.status, json.loads(r.read())
    finally:
        c.close()


@pytest.fixture
def server(tmp_path: Path) -> Any:
    port = _free_port()
    env = dict(os.environ, GUARDS_REGION=str(tmp_path / "region"))
    cmd = [
        sys.executable, "-m", "uvicorn", "shared_breaker_app:app",
        "--app-dir", str(APP_DIR), "--host", "127.0.0.1", "--port", str(port),
        "--workers", str(WORKERS), "--log-level", "warning",
    ]  # fmt: skip
    log = tmp_path / "uvicorn.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 30
        pids: set[int] = set()
        # Ready when answers come, and (as far as a few tries show) from several workers.
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            try:
                status, body = _get(port, "/stats")
                assert status == 200
                pids.add(body["pid"])
                if len(pids) >= 2:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("uvicorn did not answer from two workers within 30 s")
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)


def test_failures_in_some_workers_open_the_breaker_in_all(server: int) -> None:
    port = server
    failures_seen: dict[int, int] = {}
    for _ in range(20):
        status, body = _get(port, "/call?fail=1")
        if status == 503:
            break
        assert status == 502 and body["result"] == "failed"
        failures_seen[body["pid"]] = failures_seen.get(body["pid"], 0) + 1
    assert sum(failures_seen.values()) == 4  # window 4, minimum 4, 50 %: the 4th opens it

    refused_by: dict[int, int] = {}
    for _ in range(300):
        status, body = _get(port, "/call")
        assert status == 503 and body["result"] == "refused" and body["breaker"] == "open"
        refused_by[body["pid"]] = refused_by.get(body["pid"], 0) + 1
        if len(refused_by) >= 2 and any(failures_seen.get(p, 0) < 4 for p in refused_by):
            break
    assert len(refused_by) >= 2, refused_by
    # A worker that saw fewer failures than the breaker's minimum refused: the state is shared.
    assert any(failures_seen.get(p, 0) < 4 for p in refused_by), (failures_seen, refused_by)

    status, body = _get(port, "/stats")
    s = body["stats"]
    assert s["failures"] == 4 and s["closed_to_open"] == 1
    assert s["rejected_open"] >= sum(refused_by.values())
