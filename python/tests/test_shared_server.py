"""The demo of examples/python: uvicorn with 4 worker processes sharing one circuit breaker.
Failures seen by some workers open the breaker for all of them: workers that saw fewer
failures than the breaker's minimum (4) refuse, which a per-process breaker never would."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import check_breaker_opened_for_all, free_port, get_json

pytest.importorskip("uvicorn")

APP_DIR = Path(__file__).resolve().parents[2] / "examples" / "python"
WORKERS = 4
TIMEOUT_S = 10.0  # each request's


@pytest.fixture
def server(tmp_path: Path) -> Any:
    port = free_port()
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
                status, body = get_json(port, "/stats", TIMEOUT_S)
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
    check_breaker_opened_for_all(server, TIMEOUT_S)
