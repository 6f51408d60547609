"""The live testbed's database tier (docs/live.md): a pool of connections in asyncio.

One HTTP/1.1 request per TCP connection (``GET /read`` or ``GET /write``, with the
caller's ``grpc-timeout``, ``x-priority`` and ``Idempotency-Key``). A query holds one of
the pool's connections for a time drawn when it starts: the topology's work time (an
exponential of the mean, or a constant) times the slow-down factor in force at that
instant (the topology's ``slowdowns``, replayed on the wall clock from the run's start).
Queries wait for a connection in FIFO order, or in a :class:`guards.QueueDiscipline`
(priority, CoDel age limit, adaptive LIFO) when the topology gives one; an expired
deadline is dropped at dequeue (``deadline_check``) and a running query is cut at its
deadline (``enforce_deadline``: the statement timeout). A caller that closes its
connection cancels its query (it leaves the queue, or frees its connection at once).

Answers: 200 (done), 503 ``X-Refused-By: db-queue`` (the age limit or a full queue),
504 (no time left), 500 while an outage of the timeline is in force. ``GET /stats``
gives the counters; ``GET /admin/slow?factor=F`` changes the factor by hand;
``GET /admin/quit`` stops. The process also stops by itself after ``--max-run-s``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import sys
import time
from typing import Any, Optional

import aio

import guards

NS = 1_000_000_000


class Job:
    __slots__ = ("id", "op", "deadline", "priority", "key", "fut", "enq", "task")

    def __init__(self, jid: int, op: str, deadline: Optional[int], priority: int, key: str) -> None:
        self.id = jid
        self.op = op
        self.deadline = deadline
        self.priority = priority
        self.key = key
        self.fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.enq = time.monotonic_ns()
        self.task: Optional[asyncio.Task[None]] = None


class Database:
    def __init__(self, cfg: dict[str, Any]) -> None:
        self.servers = int(cfg["servers"])
        self.free = self.servers
        self.work = cfg["work"]  # {"exp": seconds} or {"const": seconds}
        self.t0 = int(cfg["t0_ns"])  # monotonic ns of the topology's start
        self.slowdowns = cfg.get("slowdowns", [])  # [[start_s, end_s, factor]] since t0
        self.outages = cfg.get("outages", [])  # [[start_s, end_s]]
        self.deadline_check = bool(cfg.get("deadline_check"))
        self.enforce_deadline = bool(cfg.get("enforce_deadline"))
        d = cfg.get("discipline")
        self.qd = guards.QueueDiscipline(**d) if d else None
        self.fifo: collections.deque[Job] = collections.deque()
        self.waiting: dict[int, Job] = {}
        self.manual_factor: Optional[float] = None
        self.rng = random.Random(int(cfg.get("seed", 1)))
        self.next_id = 1
        self.committed: dict[str, int] = {}
        self.c = collections.Counter()

    def factor(self, now: int) -> float:
        if self.manual_factor is not None:
            return self.manual_factor
        s = (now - self.t0) / NS
        f = 1.0
        for a, b, x in self.slowdowns:
            if a <= s < b:
                f *= x
        return f

    def out(self, now: int) -> bool:
        s = (now - self.t0) / NS
        return any(a <= s < b for a, b in self.outages)

    def submit(self, job: Job) -> None:
        self.c["queries"] += 1
        if self.free > 0 and not self.waiting:
            self.start(job, time.monotonic_ns())
            return
        if self.qd is not None:
            try:
                self.qd.push(job.id, priority=job.priority, deadline=job.deadline, now=job.enq)
            except guards.GuardError:
                self.c["refused_full"] += 1
                job.fut.set_result(503)
                return
        else:
            self.fifo.append(job)
        self.waiting[job.id] = job

    def cancel(self, job: Job) -> None:
        """The caller left: out of the queue, or its connection freed at once."""
        if job.fut.done():
            return
        self.c["cancelled"] += 1
        if job.id in self.waiting:
            del self.waiting[job.id]
            if self.qd is not None:
                self.qd.remove(job.id)
            else:
                self.fifo.remove(job)
        elif job.task is not None:
            # The connection is freed here, not in the task: a task cancelled before it
            # first ran never reaches its own cleanup.
            job.task.cancel()
            job.task = None
            self.free += 1
            self.dispatch()
        if not job.fut.done():
            job.fut.set_result(499)

    def start(self, job: Job, now: int) -> None:
        self.free -= 1
        self.c["started"] += 1
        if "exp" in self.work:
            base = self.rng.expovariate(1.0 / float(self.work["exp"]))
        else:
            base = float(self.work["const"])
        takes = base * self.factor(now)
        cut = False
        if self.enforce_deadline and job.deadline is not None:
            left = (job.deadline - now) / NS
            if takes > left:
                takes, cut = max(0.0, left), True
        job.task = asyncio.get_running_loop().create_task(self.run(job, takes, cut))

    async def run(self, job: Job, takes: float, cut: bool) -> None:
        try:
            if self.out(time.monotonic_ns()):
                await asyncio.sleep(0.001)
                status = 500
            else:
                await asyncio.sleep(takes)
                status = 504 if cut else 200
            if status == 200 and job.op == "write":
                if job.key and job.key in self.committed:
                    self.c["repeats"] += 1
                else:
                    self.c["commits"] += 1
                    if job.key:
                        self.committed[job.key] = 1
        except asyncio.CancelledError:
            return  # cancel() has freed the connection
        self.c["status_%d" % status] += 1
        job.task = None
        if not job.fut.done():
            job.fut.set_result(status)
        self.free += 1
        self.dispatch()

    def dispatch(self) -> None:
        while self.free > 0 and self.waiting:
            now = time.monotonic_ns()
            if self.qd is not None:
                got, dropped = self.qd.pop(now=now)
                for d in dropped:
                    j = self.waiting.pop(d.id, None)
                    if j is not None and not j.fut.done():
                        expired = d.reason in ("expired", "deadline")
                        self.c["dropped_" + d.reason] += 1
                        j.fut.set_result(504 if expired else 503)
                if got is None:
                    if not dropped:
                        break
                    continue
                job = self.waiting.pop(got.id, None)
                if job is None:
                    continue
            else:
                job = self.fifo.popleft()
                del self.waiting[job.id]
            if self.deadline_check and job.deadline is not None and now >= job.deadline:
                self.c["dropped_expired"] += 1
                job.fut.set_result(504)
                continue
            self.start(job, now)

    def stats(self) -> dict[str, Any]:
        return {
            "busy": self.servers - self.free,
            "queued": len(self.waiting),
            "factor": self.factor(time.monotonic_ns()),
            **dict(self.c),
        }


def head_value(lines: list[bytes], name: bytes) -> Optional[str]:
    for ln in lines:
        k, _, v = ln.partition(b":")
        if k.strip().lower() == name:
            return v.strip().decode("latin-1")
    return None


def answer(status: int, body: bytes, extra: str = "") -> bytes:
    reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error", 503: "Service Unavailable",
              504: "Gateway Timeout", 400: "Bad Request"}.get(status, "Other")
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
            f"{extra}\r\n").encode() + body


async def serve(db: Database, stop: asyncio.Event, reader: asyncio.StreamReader,
                writer: asyncio.StreamWriter) -> None:
    try:
        raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
            ConnectionError):
        writer.close()
        return
    lines = raw.split(b"\r\n")
    parts = lines[0].split(b" ")
    path = parts[1].decode("latin-1") if len(parts) > 1 else "/"
    out: bytes
    if path == "/stats":
        out = answer(200, json.dumps(db.stats()).encode(), "Content-Type: application/json\r\n")
    elif path.startswith("/admin/slow"):
        _, _, q = path.partition("factor=")
        db.manual_factor = float(q) if q else None
        out = answer(200, b"ok\n")
    elif path == "/admin/quit":
        stop.set()
        out = answer(200, b"bye\n")
    elif path in ("/read", "/write"):
        now = time.monotonic_ns()
        deadline = None
        gt = head_value(lines[1:], b"grpc-timeout")
        if gt is not None:
            try:
                deadline = guards.Deadline.from_grpc_timeout(gt, now).expires_at
            except ValueError:
                deadline = None
        pr = head_value(lines[1:], b"x-priority")
        priority = int(pr) if pr in ("0", "1", "2", "3", "4", "5", "6", "7") else 1
        job = Job(db.next_id, path[1:], deadline, priority, head_value(lines[1:], b"idempotency-key") or "")
        db.next_id += 1
        db.submit(job)
        eof = asyncio.ensure_future(reader.read(1))
        done, _ = await asyncio.wait({job.fut, eof}, return_when=asyncio.FIRST_COMPLETED)
        if job.fut not in done:
            db.cancel(job)  # the caller closed its connection
        eof.cancel()
        status = job.fut.result()
        if status == 499:
            writer.close()
            return
        extra = "Retry-After: 1\r\nX-Refused-By: db-queue\r\n" if status == 503 else ""
        out = answer(status, b"", extra)
    else:
        out = answer(404, b"no such path\n")
    try:
        writer.write(out)
        await writer.drain()
    except ConnectionError:
        pass
    writer.close()


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True, help="JSON: servers, work, t0_ns, slowdowns, ...")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--max-run-s", type=float, default=600)
    a = ap.parse_args()
    with open(a.config) as f:
        cfg = json.load(f)
    db = Database(cfg)
    stop = asyncio.Event()
    server = await asyncio.start_server(lambda r, w: serve(db, stop, r, w), "127.0.0.1", a.port,
                                        backlog=4096)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on 127.0.0.1:{port}", flush=True)
    try:
        await asyncio.wait_for(stop.wait(), a.max_run_s)
    except asyncio.TimeoutError:
        print("live-db: --max-run-s reached, stopping", file=sys.stderr)
    server.close()
    busy = db.servers - db.free
    print(f"live-db: stopped; {json.dumps(db.stats())}", file=sys.stderr)
    return 0 if busy == 0 and not db.waiting else 3


if __name__ == "__main__":
    sys.exit(aio.run(main()))
