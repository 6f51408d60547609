"""Host-wide guards under gunicorn with 4 worker processes.

- The ASGI demo (examples/python/shared_breaker_app.py) under
  ``gunicorn -w 4 -k uvicorn_worker.UvicornWorker`` (and ``uvicorn.workers.UvicornWorker``,
  deprecated in uvicorn, while uvicorn ships it): failures seen by some workers open the
  breaker for all of them.
- A WSGI app (shared_wsgi_app.py) under gunicorn's default sync workers, with the region
  opened in each worker and, with ``--preload``, once in the master before the fork: the
  breaker opened for all workers; a bulkhead of 2 refusing in workers that hold no slot while
  two others do, and never more than 2 calls inside at once across workers under a burst;
  the slots of workers killed with SIGKILL given back.

Workers are told apart by the pid in each answer.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import check_breaker_opened_for_all, free_port, get_json

pytest.importorskip("gunicorn")
import gunicorn.config  # type: ignore[import-untyped]  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"
TESTS = Path(__file__).resolve().parent
WORKERS = 4
CAP = 2  # shared_wsgi_app.CAP
WAIT_S = 30.0  # the bound of every wait below (a wait that runs out fails the test)

# gunicorn >= 24 opens a control socket in the home directory unless told not to.
_NO_CONTROL_SOCKET = any(
    "--no-control-socket" in (getattr(s, "cli", None) or [])
    for s in gunicorn.config.KNOWN_SETTINGS
)


def _get(port: int, path: str, timeout: float = WAIT_S) -> tuple[int, dict[str, Any]]:
    return get_json(port, path, timeout)


def _wait_for(what: str, check: Callable[[], bool], log: Path | None = None) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            tail = log.read_text()[-4000:] if log is not None and log.exists() else ""
            pytest.fail(f"{what}: not seen within {WAIT_S:.0f} s\n{tail}")
        time.sleep(0.02)


class Gunicorn:
    """One gunicorn master with its workers, on a free loopback port."""

    def __init__(self, tmp: Path, app_dir: Path, app: str, worker_class: str | None,
                 preload: bool) -> None:  # fmt: skip
        self.region = tmp / "region"
        self.ledger = tmp / "ledger.json"
        self.release = tmp / "release"
        self.log = tmp / "gunicorn.log"
        self.ledger.write_text("")
        self.port = free_port()
        cmd = [
            sys.executable, "-m", "gunicorn", app, "--chdir", str(app_dir),
            "-w", str(WORKERS), "-b", f"127.0.0.1:{self.port}",
            "--timeout", "120", "--graceful-timeout", "5", "--log-level", "warning",
        ]  # fmt: skip
        if worker_class is not None:
            cmd += ["-k", worker_class]
        if preload:
            cmd.append("--preload")
        if _NO_CONTROL_SOCKET:
            cmd.append("--no-control-socket")
        env = dict(
            os.environ,
            GUARDS_REGION=str(self.region),
            GUARDS_TEST_LEDGER=str(self.ledger),
            GUARDS_TEST_RELEASE=str(self.release),
        )
        with open(self.log, "wb") as err:
            # Its own process group, so that the workers can be killed with the master.
            self.proc = subprocess.Popen(
                cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
            )

    def wait_ready(self) -> None:
        """Answers come, from at least two workers (as far as a few tries show)."""
        pids: set[int] = set()

        def ready() -> bool:
            if self.proc.poll() is not None:
                pytest.fail(f"gunicorn exited with {self.proc.returncode}:\n{self.log.read_text()}")
            try:
                status, body = _get(self.port, "/stats", timeout=5)
            except OSError:
                return False
            assert status == 200, body
            pids.add(body["pid"])
            return len(pids) >= 2

        _wait_for("gunicorn answering from two workers", ready, self.log)

    def workers(self) -> set[int]:
        """The pids of the master's children (its workers), from /proc."""
        kids: set[int] = set()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == self.proc.pid:
                kids.add(int(entry))
        return kids

    def read_ledger(self) -> dict[str, Any]:
        text = self.ledger.read_text()
        return json.loads(text) if text else {"now": 0, "max": 0, "entered": 0, "inside": []}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                pass
        try:  # workers left behind, if any, and the master if it did not stop
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait(15)


@pytest.fixture
def start_gunicorn(tmp_path: Path) -> Iterator[Callable[..., Gunicorn]]:
    started: list[Gunicorn] = []

    def start(app_dir: Path, app: str, *, worker_class: str | None = None,
              preload: bool = False) -> Gunicorn:  # fmt: skip
        g = Gunicorn(tmp_path, app_dir, app, worker_class, preload)
        started.append(g)
        g.wait_ready()
        return g

    try:
        yield start
    finally:
        for g in started:
            g.stop()


# ------------------------------------------------------------------ ASGI: the documented demo


@pytest.mark.parametrize(
    "worker_class", ["uvicorn_worker.UvicornWorker", "uvicorn.workers.UvicornWorker"]
)
def test_asgi_demo_breaker_opens_for_all_workers(
    start_gunicorn: Callable[..., Gunicorn], worker_class: str
) -> None:
    module = worker_class.rsplit(".", 1)[0]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    g = start_gunicorn(EXAMPLES, "shared_breaker_app:app", worker_class=worker_class)
    check_breaker_opened_for_all(g.port, WAIT_S)


# ------------------------------------------------------------------ WSGI: sync workers

PRELOAD = pytest.mark.parametrize("preload", [False, True], ids=["per-worker", "preload"])


@PRELOAD
def test_wsgi_breaker_opens_for_all_workers(
    start_gunicorn: Callable[..., Gunicorn], preload: bool
) -> None:
    g = start_gunicorn(TESTS, "shared_wsgi_app:app", preload=preload)
    check_breaker_opened_for_all(g.port, WAIT_S)
    status, body = _get(g.port, "/stats")
    if preload:  # the region was opened once, in the master, before the fork
        assert body["opened_by"] == g.proc.pid, body
    else:
        assert body["opened_by"] == body["pid"] != g.proc.pid, body


def _hold_slots(g: Gunicorn, n: int) -> tuple[list[threading.Thread], list[Any]]:
    """n /hold calls in threads; returns once the ledger shows n calls inside."""
    results: list[Any] = []

    def hold() -> None:
        try:
            results.append(_get(g.port, "/hold"))
        except OSError as e:  # the worker was killed
            results.append(e)

    threads = [threading.Thread(target=hold) for _ in range(n)]
    for t in threads:
        t.start()
    _wait_for(f"{n} calls holding a slot", lambda: g.read_ledger()["now"] == n, g.log)
    return threads, results


@PRELOAD
def test_wsgi_bulkhead_cap_is_host_wide(
    start_gunicorn: Callable[..., Gunicorn], preload: bool
) -> None:
    g = start_gunicorn(TESTS, "shared_wsgi_app:app", preload=preload)

    # Two workers hold the 2 slots; the other two workers hold none of their own and refuse.
    threads, held = _hold_slots(g, CAP)
    holders = set(g.read_ledger()["inside"])
    assert len(holders) == CAP, holders  # a sync worker serves one call at a time
    refusers: set[int] = set()
    try:
        for _ in range(10):
            status, body = _get(g.port, "/slow?ms=0")
            assert status == 503 and body["result"] == "refused", (status, body)
            assert body["in_flight"] == CAP, body
            refusers.add(body["pid"])
    finally:
        g.release.touch()
        for t in threads:
            t.join(WAIT_S)
    assert not any(t.is_alive() for t in threads), "a /hold call did not return"
    assert all(r[0] == 200 for r in held), held
    assert refusers and not refusers & holders, (refusers, holders)

    # A burst: 16 clients x 5 calls holding a slot for 20 ms each, on 4 workers.
    statuses: list[int] = []
    lock = threading.Lock()

    def client() -> None:
        for _ in range(5):
            status, body = _get(g.port, "/slow?ms=20")
            assert status in (200, 503), (status, body)
            with lock:
                statuses.append(status)

    errors: list[BaseException] = []

    def run() -> None:
        try:
            client()
        except BaseException as e:  # reported below
            errors.append(e)

    burst = [threading.Thread(target=run) for _ in range(16)]
    for t in burst:
        t.start()
    for t in burst:
        t.join(WAIT_S * 2)
    assert not any(t.is_alive() for t in burst), "the burst did not finish"
    assert not errors, errors
    assert len(statuses) == 80
    ledger = g.read_ledger()
    assert ledger["max"] <= CAP, ledger  # never more than 2 inside, all workers together
    assert ledger["now"] == 0, ledger
    admitted = statuses.count(200)
    assert admitted >= 1 and ledger["entered"] == CAP + admitted, (ledger, admitted)

    status, body = _get(g.port, "/stats")
    pool = body["pool"]
    assert pool["in_flight"] == 0, pool
    assert pool["acquired"] == CAP + admitted == pool["released"], (pool, admitted)
    assert pool["rejected"] == 10 + statuses.count(503), pool


@PRELOAD
def test_wsgi_killed_workers_give_their_slots_back(
    start_gunicorn: Callable[..., Gunicorn], preload: bool
) -> None:
    """Two workers holding both slots are killed with SIGKILL (what gunicorn's worker
    timeout does); gunicorn starts new ones, and calls are admitted again: the dead workers'
    slots were reclaimed (when a new worker opened the region, or when an acquire found the
    bulkhead full)."""
    g = start_gunicorn(TESTS, "shared_wsgi_app:app", preload=preload)
    threads, held = _hold_slots(g, CAP)
    holders = set(g.read_ledger()["inside"])
    assert len(holders) == CAP and holders <= g.workers(), (holders, g.workers())
    for pid in holders:
        os.kill(pid, signal.SIGKILL)
    for t in threads:
        t.join(WAIT_S)
    assert not any(t.is_alive() for t in threads), "a /hold call did not end"
    assert all(isinstance(r, OSError) for r in held), held

    _wait_for(
        "gunicorn replacing the killed workers",
        lambda: len(g.workers() - holders) == WORKERS,
        g.log,
    )
    for _ in range(8):
        status, body = _get(g.port, "/slow?ms=0")
        assert status == 200 and body["result"] == "admitted", (status, body)
        assert body["pid"] not in holders
    status, body = _get(g.port, "/stats")
    assert body["pool"]["in_flight"] == 0, body
    # A scan adds what it gave back to the region's counter when it ends, so a slot can be
    # free a moment before the scan that freed it (in another worker) is counted.
    _wait_for(
        "both killed workers' permits counted as reclaimed",
        lambda: _get(g.port, "/stats")[1]["region"]["reclaimed_permits"] == CAP,
        g.log,
    )
    status, body = _get(g.port, "/stats")
    assert body["region"]["reclaimed_permits"] == CAP, body["region"]
