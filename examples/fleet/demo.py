"""A fleet of "hosts" sharing one allowance of 48 calls to a dependency ("stock").

Run ``python examples/fleet/demo.py`` (with the ``guards`` package installed and
``redis-server`` on the PATH). It starts its own redis-server on a free loopback port and
three host processes; each host joins the fleet ``shop-api``, attaches a bulkhead to the
fleet-wide allowance ``stock`` of 48 and serves a synthetic load (20 threads, each taking a
slot, holding it 20 ms, giving it back). Every half second it prints each host's share and
calls in flight and the fleet-wide count. After 4 s a fourth host joins (shares 16 -> 12),
after 8 s one host is killed with SIGKILL (its share returns to the others after the TTL,
0.75 s), and after 12 s everything stops. A summary ends the run.

The fleet-wide count is exact, not a sum of samples: every call also holds a slot of a
host-wide ``guards.shared`` bulkhead (cap 1000, a gauge) in a region file all the hosts map,
and each host reads the gauge right after taking its slot. With every host reaching Redis
the count never exceeds the allowance.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, TextIO

ALLOWANCE = 48
SERVICE = "shop-api"
WORKERS = 20
HOLD = 0.020


def host(url: str, name: str, region_path: str) -> None:
    """One host: join, attach, serve until told to stop on stdin (or killed)."""
    import guards
    from guards import shared
    from guards.fleet import Fleet

    gauge = shared.Region(region_path).bulkhead("in-flight", max_concurrent=1000)
    stock = guards.Bulkhead(max_concurrent=1)
    fleet = Fleet(url, SERVICE, name)
    fleet.attach("stock", ALLOWANCE, stock)
    stop = threading.Event()
    lock = threading.Lock()
    seen = {"max": 0, "served": 0, "refused": 0}

    def worker() -> None:
        while not stop.is_set():
            p = stock.try_acquire()
            if p is None:
                with lock:
                    seen["refused"] += 1
                time.sleep(0.005)
                continue
            g = gauge.acquire()
            now = gauge.in_flight
            try:
                time.sleep(HOLD)
            finally:
                g.release()
                p.release()
            with lock:
                seen["max"] = max(seen["max"], now)
                seen["served"] += 1

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(WORKERS)]
    for t in threads:
        t.start()

    def report() -> None:
        while not stop.is_set():
            with lock:
                line = dict(seen, share=fleet.share("stock"), in_flight=stock.in_flight)
            print(json.dumps(line), flush=True)
            stop.wait(0.1)

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    sys.stdin.readline()  # "stop", or EOF when the parent goes away
    stop.set()
    for t in threads:
        t.join()
    reporter.join()
    fleet.leave()


class Host:
    """The parent's handle on a host process and its latest report."""

    def __init__(self, name: str, url: str, region_path: str) -> None:
        self.name = name
        self.latest: dict[str, Any] = {}
        self.alive = True
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--host", url, name, region_path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, out: TextIO) -> None:
        for line in out:
            try:
                self.latest = json.loads(line)
            except ValueError:
                pass

    def stop(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.write("stop\n")
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.alive = False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis() -> tuple[subprocess.Popen[bytes], str]:
    if shutil.which("redis-server") is None:
        sys.exit("redis-server not found (Debian: apt-get install redis-server)")
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1"]
        + ["--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return proc, f"redis://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.025)
    proc.kill()
    sys.exit(f"redis-server did not listen on port {port}")


def main() -> None:
    from guards import shared

    redis, url = start_redis()
    workdir = tempfile.mkdtemp(prefix="guards-fleet-demo-")
    region_path = os.path.join(workdir, "gauge.region")
    region = shared.Region(region_path)
    gauge = region.bulkhead("in-flight", max_concurrent=1000)
    hosts: list[Host] = []
    peak = {"sampled": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak["sampled"] = max(peak["sampled"], gauge.in_flight)
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    try:
        print(f"redis on {url}; allowance 'stock' = {ALLOWANCE} for fleet '{SERVICE}'")
        hosts += [Host(f"host-{i}", url, region_path) for i in (1, 2, 3)]
        sampler.start()
        names = [f"host-{i}" for i in (1, 2, 3, 4)]
        print("  t(s) " + "".join(f"{n:>16}" for n in names) + "   fleet in flight")
        print("       " + "".join(f"{'share/in_flight':>16}" for _ in names))
        start = time.monotonic()
        phase = 0
        tick = 0
        while True:
            t = time.monotonic() - start
            if phase == 0 and t >= 4.0:
                print("-- host-4 joins: shares go 16 -> 12")
                hosts.append(Host("host-4", url, region_path))
                phase = 1
            elif phase == 1 and t >= 8.0:
                print("-- host-2 is killed (SIGKILL): its 12 return to the others after the TTL")
                hosts[1].kill()
                region.reclaim()  # the gauge slots the dead host held
                phase = 2
            elif phase == 2 and t >= 12.0:
                break
            cells = []
            for n in names:
                h = next((h for h in hosts if h.name == n), None)
                if h is None:
                    cells.append(f"{'-':>16}")
                elif not h.alive:
                    cells.append(f"{'killed':>16}")
                else:
                    r = h.latest
                    cells.append(f"{r.get('share', 0):>9}/{r.get('in_flight', 0):<6}")
            print(f"{t:6.1f} " + "".join(cells) + f"   {gauge.in_flight:>5}")
            tick += 1
            time.sleep(max(0.0, start + 0.5 * tick - time.monotonic()))
        for h in hosts:
            if h.alive:
                h.stop()
        done.set()
        sampler.join()
        seen = max([peak["sampled"]] + [h.latest.get("max", 0) for h in hosts])
        print()
        print(f"max fleet-wide in flight seen: {seen} (allowance {ALLOWANCE})")
        print(
            "final shares: "
            + ", ".join(f"{h.name}={h.latest.get('share', 0)}" for h in hosts if h.alive)
        )
        print("served: " + ", ".join(f"{h.name}={h.latest.get('served', 0)}" for h in hosts))
    finally:
        done.set()
        for h in hosts:
            if h.proc.poll() is None:
                h.proc.kill()
                h.proc.wait()
        redis.kill()
        redis.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--host":
        host(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main()
