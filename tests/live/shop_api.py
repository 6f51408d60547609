"""The live testbed's caller tier in Python (docs/live.md): an ASGI app under uvicorn.

Each request (``GET /product``, ``/cart``, ``/checkout``) enters through
:class:`guards.AdmissionMiddleware` (which reads the caller's ``grpc-timeout`` and
publishes the deadline), waits for one of the topology's ``servers`` threads (an
:class:`asyncio.Semaphore`, FIFO, held for the whole request: the work, the call to stock,
its retries and backoff), drops the request at dequeue when its deadline has passed
(``deadline_check``), works for the op's time (``asyncio.sleep``), then calls stock
through :class:`guards.httpx.AsyncGuardedTransport` configured from the edge's policy:
the retry policy, the shared retry budget, a breaker per operation (one
:class:`guards.KeyedBreakers` per edge), the deadline sent, and the bulkhead
(:class:`guards.Bulkhead`, shared by both operations, inside the breaker: one slot per
attempt, refused at once when full).

Answers to the app: 200 ``x-outcome: full``; 200 ``x-outcome: degraded`` (an optional
call failed and the page is served without it: the brownout); otherwise 503 +
``Retry-After`` (``give_up_as_overloaded``: "don't retry") or 502, with
``x-refused-by`` naming why (``breaker``, ``bulkhead``, ``budget``, ``admission``,
``db-queue``, ``timeout``, ``error``). A request whose app left is cancelled when the app
edge has ``cancel`` (the handler watches for the ASGI disconnect); as shipped, it runs on.

With ``region`` in the config (``run.py --caller-procs N``, N > 1) this process is one
of N caller processes of one caller tier: the bulkhead and the retry budget are the
region's (``guards.shared``: one cap and one budget for the N processes, as the
topology's one instance has), found by name or created with the topology's settings; the
breakers stay per process, as ``run.py``'s ``scaled_topology`` models the N processes
(``AsyncGuardedTransport`` would also take the region's ``keyed_breakers``).

``GET /stats`` gives the guards' gauges (every in-flight count; ``bulkhead_in_flight`` is
this process's own slots, ``region_bulkhead_in_flight`` every process's); ``GET /series``
the per-second counters; ``GET /snapshot`` both at once; ``GET /admin/quit`` stops the
server. It also stops by itself after
``--max-run-s``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import socket
import sys
import time
import uuid
from typing import Any, Optional

import aio
from counts import PerSecond

import httpx
import uvicorn

import guards
from guards.httpx import AsyncGuardedTransport

NS = 1_000_000_000


class Series:
    """Counters per second since the run's start (``t0_ns``), in a ``counts.PerSecond``
    table of ``seconds`` rows (later seconds are kept too, in its overflow)."""

    def __init__(self, t0: int, seconds: int) -> None:
        self.t0 = t0
        self.table = PerSecond(seconds)

    def add(self, name: str, n: int = 1) -> None:
        self.table.add((time.monotonic_ns() - self.t0) // NS, name, n)

    def peak(self, name: str, value: int) -> None:
        """Keeps the largest ``value`` of the second under ``name``."""
        self.table.peak((time.monotonic_ns() - self.t0) // NS, name, value)

    def dump(self) -> dict[str, dict[str, int]]:
        return self.table.as_dict()


LATENCY_BUCKETS = ("5", "10", "20", "40", "60", "inf")  # upper bounds, ms
POOL_SHARDS = 8  # connection pools per op (see ShardedPool)


async def watch_loop_lag(series: Series, stop: asyncio.Event) -> None:
    """How late the event loop runs a 10 ms timer: the peak of each second, in ms (a busy
    loop delays every caller's send and every answer it reads)."""
    while not stop.is_set():
        t = time.monotonic_ns()
        await asyncio.sleep(0.01)
        series.peak("loop_lag_max_ms", (time.monotonic_ns() - t - 10_000_000) // 1_000_000)


class ShardedPool(httpx.AsyncBaseTransport):
    """Attempts spread round-robin over ``shards`` connection pools. httpcore's pool scans
    every connection it holds for each request it places, so its cost per request grows
    with the connections times the requests waiting; in a hiccup (attempts cut at their
    timeout close their connections, new ones open) one pool took most of the caller's
    core, the event loop fell behind and the caller never recovered. Several smaller
    pools do the same work at a fraction of the scanning."""

    def __init__(self, shards: int, keepalive: int) -> None:
        per = max(1, keepalive // shards) if keepalive else 0
        self.pools = [httpx.AsyncHTTPTransport(limits=httpx.Limits(
            max_connections=4096, max_keepalive_connections=per)) for _ in range(shards)]
        self.turn = itertools.cycle(self.pools)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await next(self.turn).handle_async_request(request)

    async def aclose(self) -> None:
        for p in self.pools:
            await p.aclose()


class GateTransport(httpx.AsyncBaseTransport):
    """Counts every attempt and holds a bulkhead slot for it (refused at once when full)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, bulkhead: Optional[guards.Bulkhead],
                 series: Series, op: str, held: list[int]) -> None:
        self.inner = inner
        self.held = held  # [slots this process holds] (a region bulkhead counts every process's)
        self.bulkhead = bulkhead
        self.series = series
        self.op = op

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        s, op = self.series, self.op
        permit = None
        if self.bulkhead is not None:
            permit = self.bulkhead.try_acquire()
            if permit is None:
                s.add(f"{op}.bulkhead_rejections")
                raise guards.BulkheadFull("the bulkhead is full")
            self.held[0] += 1
        s.add(f"{op}.calls")
        t = time.monotonic_ns()
        try:
            r = await self.inner.handle_async_request(request)
            await r.aread()
            s.add(f"{op}.status_{r.status_code}")
            # the attempt's round trip, in buckets (a trace of where the caller's time goes)
            ms = (time.monotonic_ns() - t) // 1_000_000
            s.add(f"{op}.answered_ms_" + next(b for b in LATENCY_BUCKETS if ms < int(b) or b == "inf"))
            return r
        except asyncio.CancelledError:
            s.add(f"{op}.timeouts")  # the attempt's time ran out (or its caller left)
            raise
        except httpx.TimeoutException:
            s.add(f"{op}.timeouts")
            raise
        except httpx.HTTPError:
            s.add(f"{op}.errors")
            raise
        finally:
            if permit is not None:
                permit.release()
                self.held[0] -= 1

    async def aclose(self) -> None:
        await self.inner.aclose()


class ShopApi:
    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.t0 = int(cfg["t0_ns"])
        self.series = Series(self.t0, int(cfg.get("series_seconds", 600)))
        self.threads = asyncio.Semaphore(int(cfg["servers"]))
        self.busy = 0
        self.queued = 0
        self.deadline_check = bool(cfg["deadline_check"])
        self.cancel_on_disconnect = bool(cfg["cancel_on_disconnect"])
        budget_cfg = cfg.get("budget")
        self.budget = None
        self.region = None
        self.held = [0]
        if cfg.get("region"):
            from guards import shared

            self.region = shared.Region(cfg["region"])
        if budget_cfg:
            kw = {k: v for k, v in budget_cfg.items() if k != "mode"}
            if self.region is not None:
                self.budget = self.region.retry_budget(cfg["region_budget"], **budget_cfg)
            else:
                self.budget = getattr(guards.RetryBudget, budget_cfg.get("mode", "token_bucket"))(**kw)
        bh = cfg.get("bulkhead")
        self.bulkhead: Any = None
        if bh and self.region is not None:
            self.bulkhead = self.region.bulkhead(cfg["region_bulkhead"], **bh)
        elif bh:
            self.bulkhead = guards.Bulkhead(**bh)
        self.ops: dict[str, dict[str, Any]] = cfg["ops"]
        self.clients: dict[str, httpx.AsyncClient] = {}
        self.transports: dict[str, AsyncGuardedTransport] = {}
        self.refused_seen: dict[str, int] = {}
        for name, op in self.ops.items():
            call = op.get("call")
            if not call:
                continue
            pol = call["policy"]
            # A keep-alive pool (stock serves keep-alive), or a new connection per attempt.
            keep = int(cfg.get("servers", 1)) * 4 if cfg.get("keep_alive", True) else 0
            inner = ShardedPool(POOL_SHARDS, keep)
            gate = GateTransport(inner, self.bulkhead if pol.get("bulkhead") is not None else None,
                                 self.series, call["op"], self.held)
            breakers: Any = False
            if pol.get("breaker"):
                breakers = guards.KeyedBreakers(slots=1, **pol["breaker"])
            t = AsyncGuardedTransport(
                gate,
                max_attempts=pol["retry"]["max_attempts"],
                backoff=pol["retry"]["backoff"],
                budget=self.budget if pol.get("budget") is not None and self.budget else False,
                breakers=breakers,
                attempt_timeout=pol["attempt_timeout"],
                deadline_header="grpc" if pol["deadline"] != "none" else None,
                retry={**{k: v for k, v in pol["retry"].items() if k not in ("max_attempts", "backoff")},
                       "on_retry": self._counter(f"{call['op']}.retries")},
            )
            self.transports[name] = t
            self.clients[name] = httpx.AsyncClient(transport=t, timeout=None)

    def _counter(self, name: str) -> Any:
        def count(_state: Any) -> None:
            self.series.add(name)
        return count

    def gauges(self) -> dict[str, Any]:
        out: dict[str, Any] = {"busy": self.busy, "queued": self.queued}
        if self.bulkhead is not None:
            out["bulkhead_in_flight"] = self.held[0] if self.region is not None else self.bulkhead.in_flight
        if self.region is not None:
            out["pid"] = os.getpid()
            if self.bulkhead is not None:
                out["region_bulkhead_in_flight"] = self.bulkhead.in_flight
            out["region"] = self.region.stats()
        for name, t in self.transports.items():
            if t.breakers is not None:
                out[f"breaker_{name}"] = t.breakers.stats(self._host())
        if self.budget is not None:
            out["budget"] = self.budget.stats()
        return out

    def _host(self) -> str:
        return f"http://127.0.0.1:{self.cfg['stock_port']}"

    async def call_stock(self, name: str) -> tuple[bool, str]:
        """(ok, why): one call to stock through the guarded client."""
        op = self.ops[name]
        call = op["call"]
        s = self.series
        url = f"{self._host()}/{call['op']}"
        headers = {"x-priority": str(call.get("priority") if call.get("priority") is not None else 1)}
        s.add(f"{call['op']}.first")
        r = await self._call_stock(name, call, url, headers)
        if not r[0]:
            # Retries the budget refused, from the transport's give-up counts (a call that
            # succeeded refused none): a refused retry after a response (stock's 504)
            # returns that response rather than raising BudgetExhausted, and the model
            # counts every refused ask.
            n = self.transports[name].stats()["budget_exhausted"]
            d = n - self.refused_seen.get(name, 0)
            if d > 0:
                self.refused_seen[name] = n
                s.add(f"{call['op']}.budget_refusals", d)
        return r

    async def _call_stock(self, name: str, call: dict[str, Any], url: str,
                          headers: dict[str, str]) -> tuple[bool, str]:
        s = self.series
        try:
            if call["policy"]["idempotency"] == "keyed_side_effect":
                headers["Idempotency-Key"] = uuid.uuid4().hex
                r = await self.clients[name].post(url, headers=headers)
            else:
                r = await self.clients[name].get(url, headers=headers)
        except guards.BreakerOpen:
            s.add(f"{call['op']}.breaker_rejections")
            return False, "breaker"
        except guards.BulkheadFull:
            return False, "bulkhead"
        except guards.BudgetExhausted:
            return False, "budget"
        except (guards.DeadlineExceeded, guards.RetriesExhausted, httpx.TimeoutException,
                asyncio.TimeoutError):
            return False, "timeout"
        except httpx.HTTPError:
            return False, "error"
        if r.status_code == 200:
            s.add(f"{call['op']}.ok")
            return True, ""
        why = r.headers.get("x-refused-by") or f"status-{r.status_code}"
        if r.status_code == 504:
            why = "timeout"
        return False, why

    async def handle(self, name: str) -> tuple[int, list[tuple[bytes, bytes]]]:
        op = self.ops[name]
        s = self.series
        self.queued += 1
        try:
            await self.threads.acquire()
        finally:
            self.queued -= 1
        self.busy += 1
        try:
            left = guards.time_left()
            if self.deadline_check and left is not None and left <= 0:
                s.add("dropped_deadline")
                return 504, [(b"x-refused-by", b"shop-api-deadline")]
            if op["work"] > 0:
                await asyncio.sleep(op["work"])
            if not op.get("call"):
                s.add(f"{name}.full")
                return 200, [(b"x-outcome", b"full")]
            ok, why = await self.call_stock(name)
            if ok:
                s.add(f"{name}.full")
                return 200, [(b"x-outcome", b"full")]
            if op["call"].get("optional"):
                s.add(f"{name}.degraded")
                return 200, [(b"x-outcome", b"degraded"), (b"x-refused-by", why.encode())]
            s.add(f"{name}.failed")
            if op["call"]["policy"].get("give_up_as_overloaded"):
                return 503, [(b"retry-after", b"1"), (b"x-refused-by", why.encode())]
            return 502, [(b"x-refused-by", why.encode())]
        finally:
            self.busy -= 1
            self.threads.release()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        name = path.lstrip("/")
        if name in self.ops:
            self.series.add(f"{name}.arrivals")
            work = asyncio.ensure_future(self.handle(name))
            watch = None
            if self.cancel_on_disconnect:
                async def watch_disconnect() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                watch = asyncio.ensure_future(watch_disconnect())
                done, _ = await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
                if work not in done:
                    work.cancel()
                    self.series.add(f"{name}.cancelled")
                    await asyncio.gather(work, return_exceptions=True)
                    return
                watch.cancel()
            status, headers = await work
            body = b""
        elif path == "/stats":
            status, headers, body = 200, [], json.dumps(self.gauges()).encode()
        elif path == "/series":
            status, headers, body = 200, [], json.dumps(self.series.dump()).encode()
        elif path == "/snapshot":
            status, headers, body = 200, [], json.dumps({"gauges": self.gauges(),
                                                         "series": self.series.dump()}).encode()
        elif path == "/admin/quit":
            self.stop.set()
            status, headers, body = 200, [], b"bye\n"
        else:
            status, headers, body = 404, [], b"no such path\n"
        await send({"type": "http.response.start", "status": status,
                    "headers": headers + [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    stop: asyncio.Event


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--max-run-s", type=float, default=600)
    a = ap.parse_args()
    with open(a.config) as f:
        cfg = json.load(f)
    shop = ShopApi(cfg)
    shop.stop = asyncio.Event()
    adm = cfg.get("admission")
    # The shop-api of the topology has no admission when `admission` is null: the door then
    # has a limit no request reaches (more than its threads and queue can hold), and the
    # middleware is there for the deadline it reads and publishes.
    door = guards.Admission(**adm) if adm else guards.Admission(limits=[1_000_000] * 8)
    app = guards.AdmissionMiddleware(shop, door, priority=guards.priority_from_header(),
                                     deadline="grpc")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(cfg.get("port", 0))))
    sock.listen(4096)
    print(f"listening on 127.0.0.1:{sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", access_log=False, log_level="warning",
                                           backlog=4096, timeout_keep_alive=60, http=os.environ.get("LIVE_HTTP", "httptools"),
                                           loop="none"))  # the loop is aio.run's
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    lag = asyncio.ensure_future(watch_loop_lag(shop.series, shop.stop))
    try:
        await asyncio.wait_for(shop.stop.wait(), a.max_run_s)
    except asyncio.TimeoutError:
        print("live-shop-api: --max-run-s reached, stopping", file=sys.stderr)
    server.should_exit = True
    await serving
    shop.stop.set()
    await lag
    for c in shop.clients.values():
        await c.aclose()
    g = shop.gauges()
    print(f"live-shop-api: stopped; {json.dumps(g)}", file=sys.stderr)
    clean = g["busy"] == 0 and g["queued"] == 0 and g.get("bulkhead_in_flight", 0) == 0
    return 0 if clean else 3


if __name__ == "__main__":
    sys.exit(aio.run(main()))
