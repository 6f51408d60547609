"""A plain-Python model of the Basketly C0 run, written the way one would write it without
the simulator: a heapq event loop, one class per kind of call, lazy timeouts.

It is the baseline of the engine benchmark (``engine_vs_python.py`` beside this file):
the same system, the same parameters and the same run as ``guards.sim.basketly("C0")``
(docs/basketly.md describes them), so the wall time of the two is a fair ratio. It is
not a copy of the engine: it has its own random numbers (Python's ``random``), and it
knows only what C0 needs (no guards at all).

C0, as shipped:

* 800 product pages, 1,200 cart views and 60 checkouts a second arrive (Poisson). Each
  action is one app client: up to 3 attempts of 2 s each, retried at once on any failure
  or timeout, each attempt to a shop-api instance drawn at random.
* shop-api: 4 instances x 100 threads, one unbounded FIFO queue each. A request holds a
  thread for 10 ms, then (cart view, checkout) calls stock: up to 3 attempts of 1 s,
  retried at once; no deadline is sent and an abandoned attempt is not cancelled.
* stock: 128 workers, FIFO. A call holds a worker while it calls the database (up to 3
  attempts of 5 s, retried on a timeout only).
* database: 8 connections, FIFO; a query takes an exponential time of mean 4 ms, ten
  times longer from 20:00:00 to 20:00:20.

A call is stale when some caller up the chain has stopped waiting for it. Per second it
records what the figures use: offered actions, app attempts, goodput, database queries
done and stale, the shop-api queue and the calls inside stock at the end of the second.

Run it alone: ``python3 sim/bench/plain_model.py [SEED] [UNTIL]`` prints the headline
figures (the same ones ``engine_vs_python.py --check`` compares with the engine's).
"""

from __future__ import annotations

import heapq
import random
import sys
from collections import deque

START = 19 * 3600 + 59 * 60 + 45  # 19:59:45, in seconds since midnight
HICCUP = (20 * 3600, 20 * 3600 + 20)
RATES = (("product", 800.0), ("cart", 1200.0), ("checkout", 60.0))

SHOPAPI_INSTANCES = 4
SHOPAPI_THREADS = 100
SHOPAPI_WORK = 0.010
STOCK_WORKERS = 128
DB_CONNECTIONS = 8
DB_QUERY = 0.004
HICCUP_FACTOR = 10.0
APP = (3, 2.0)  # attempts, timeout (s)
STOCK_CALL = (3, 1.0)
DB_CALL = (3, 5.0)

# Event kinds.
ARRIVE, APP_TIMEOUT, WORK_DONE, STOCK_TIMEOUT, DB_TIMEOUT, QUERY_DONE = range(6)


class Action:
    """One user action at an app client."""

    __slots__ = ("kind", "attempts", "waiting")

    def __init__(self, kind: int) -> None:
        self.kind = kind
        self.attempts = 0
        self.waiting: Request | None = None


class Request:
    """One app attempt at a shop-api instance."""

    __slots__ = ("action", "instance", "attempts", "waiting")

    def __init__(self, action: Action, instance: int) -> None:
        self.action = action
        self.instance = instance
        self.attempts = 0
        self.waiting: StockCall | None = None


class StockCall:
    """One shop-api attempt at stock."""

    __slots__ = ("request", "attempts", "waiting")

    def __init__(self, request: Request) -> None:
        self.request = request
        self.attempts = 0
        self.waiting: Query | None = None


class Query:
    """One stock attempt at the database."""

    __slots__ = ("call",)

    def __init__(self, call: StockCall) -> None:
        self.call = call


class Model:
    def __init__(self, seed: int, until: float) -> None:
        self.rng = random.Random(seed)
        self.until = until
        self.now = float(START)
        self.heap: list[tuple[float, int, int, object, int]] = []
        self.seq = 0
        self.events = 0
        self.threads_free = [SHOPAPI_THREADS] * SHOPAPI_INSTANCES
        self.queues = [deque() for _ in range(SHOPAPI_INSTANCES)]
        self.workers_free = STOCK_WORKERS
        self.stock_queue: deque[StockCall] = deque()
        self.stock_inside = 0
        self.conns_free = DB_CONNECTIONS
        self.db_queue: deque[Query] = deque()
        self.tokens = 0
        # Per-second counters: offered, app attempts, goodput, db done, db stale.
        n = int(until - START) + 1
        self.offered = [0] * n
        self.app_attempts = [0] * n
        self.goodput = [0] * n
        self.db_done = [0] * n
        self.db_stale = [0] * n
        self.shopapi_queue = [0] * n
        self.inside_stock = [0] * n
        self.second = 0

    # ------------------------------------------------------------ event loop

    def schedule(self, at: float, kind: int, obj: object, token: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (at, self.seq, kind, obj, token))

    def run(self) -> None:
        for i, (_, rate) in enumerate(RATES):
            self.schedule(self.now + self.rng.expovariate(rate), ARRIVE, i)
        heap = self.heap
        pop = heapq.heappop
        until = self.until
        while heap and heap[0][0] < until:
            at, _, kind, obj, token = pop(heap)
            while at >= START + self.second + 1:
                self.close_second()
            self.now = at
            self.events += 1
            if kind == ARRIVE:
                self.arrive(obj)
            elif kind == APP_TIMEOUT:
                if obj.waiting is not None and token == obj.attempts:
                    obj.waiting = None
                    self.app_attempt(obj)
            elif kind == WORK_DONE:
                self.work_done(obj)
            elif kind == STOCK_TIMEOUT:
                if obj.waiting is not None and token == obj.attempts:
                    obj.waiting = None
                    self.stock_attempt(obj)
            elif kind == DB_TIMEOUT:
                if obj.waiting is not None and token == obj.attempts:
                    obj.waiting = None
                    self.db_attempt(obj)
            else:
                self.query_done(obj)
        while START + self.second + 1 <= until:
            self.close_second()

    def close_second(self) -> None:
        if self.second < len(self.shopapi_queue):
            self.shopapi_queue[self.second] = sum(len(q) for q in self.queues)
            self.inside_stock[self.second] = self.stock_inside
        self.second += 1

    def bucket(self) -> int:
        return int(self.now - START)

    # ------------------------------------------------------------ apps

    def arrive(self, i: int) -> None:
        self.schedule(self.now + self.rng.expovariate(RATES[i][1]), ARRIVE, i)
        self.offered[self.bucket()] += 1
        self.app_attempt(Action(i))

    def app_attempt(self, a: Action) -> None:
        """Send the action's next attempt, or give up."""
        if a.attempts >= APP[0]:
            return  # failed
        a.attempts += 1
        self.app_attempts[self.bucket()] += 1
        r = Request(a, int(self.rng.random() * SHOPAPI_INSTANCES))
        a.waiting = r
        self.schedule(self.now + APP[1], APP_TIMEOUT, a, a.attempts)
        if self.threads_free[r.instance] > 0:
            self.threads_free[r.instance] -= 1
            self.schedule(self.now + SHOPAPI_WORK, WORK_DONE, r)
        else:
            self.queues[r.instance].append(r)

    def app_answer(self, r: Request, ok: bool) -> None:
        a = r.action
        if a.waiting is not r:
            return  # the app has given up on this attempt
        a.waiting = None
        if ok:
            self.goodput[self.bucket()] += 1
        else:
            self.app_attempt(a)

    # ------------------------------------------------------------ shop-api

    def work_done(self, r: Request) -> None:
        if r.action.kind == 0:  # product page: prices only
            self.request_done(r, True)
        else:
            self.stock_attempt(r)

    def request_done(self, r: Request, ok: bool) -> None:
        q = self.queues[r.instance]
        if q:
            self.schedule(self.now + SHOPAPI_WORK, WORK_DONE, q.popleft())
        else:
            self.threads_free[r.instance] += 1
        self.app_answer(r, ok)

    def stock_attempt(self, r: Request) -> None:
        if r.attempts >= STOCK_CALL[0]:
            self.request_done(r, False)
            return
        r.attempts += 1
        c = StockCall(r)
        r.waiting = c
        self.schedule(self.now + STOCK_CALL[1], STOCK_TIMEOUT, r, r.attempts)
        self.stock_inside += 1
        if self.workers_free > 0:
            self.workers_free -= 1
            self.db_attempt(c)
        else:
            self.stock_queue.append(c)

    def stock_answer(self, c: StockCall) -> None:
        r = c.request
        if r.waiting is not c:
            return
        r.waiting = None
        self.request_done(r, True)

    # ------------------------------------------------------------ stock

    def db_attempt(self, c: StockCall) -> None:
        if c.attempts >= DB_CALL[0]:
            self.stock_done(c)  # gives up: an error nobody retries past this layer
            return
        c.attempts += 1
        q = Query(c)
        c.waiting = q
        self.schedule(self.now + DB_CALL[1], DB_TIMEOUT, c, c.attempts)
        if self.conns_free > 0:
            self.conns_free -= 1
            self.start_query(q)
        else:
            self.db_queue.append(q)

    def stock_done(self, c: StockCall, ok: bool = False) -> None:
        self.stock_inside -= 1
        if self.stock_queue:
            self.db_attempt(self.stock_queue.popleft())
        else:
            self.workers_free += 1
        if ok:
            self.stock_answer(c)
        else:
            r = c.request
            if r.waiting is c:
                r.waiting = None
                self.stock_attempt(r)

    # ------------------------------------------------------------ database

    def start_query(self, q: Query) -> None:
        factor = HICCUP_FACTOR if HICCUP[0] <= self.now < HICCUP[1] else 1.0
        self.schedule(self.now + self.rng.expovariate(1.0 / DB_QUERY) * factor, QUERY_DONE, q)

    def query_done(self, q: Query) -> None:
        b = self.bucket()
        self.db_done[b] += 1
        c = q.call
        r = c.request
        if c.waiting is not q or r.waiting is not c or r.action.waiting is not r:
            self.db_stale[b] += 1
        if self.db_queue:
            self.start_query(self.db_queue.popleft())
        else:
            self.conns_free += 1
        if c.waiting is q:
            c.waiting = None
            self.stock_done(c, True)


def clock(s: str) -> float:
    h, m, sec = (int(x) for x in s.split(":"))
    return float(h * 3600 + m * 60 + sec)


def run(seed: int = 1, until: str = "20:02:00") -> Model:
    m = Model(seed, clock(until))
    m.run()
    return m


def mean(col: list[int], a: str, b: str) -> float:
    i, j = int(clock(a) - START), int(clock(b) - START)
    return sum(col[i:j]) / (j - i)


def at_end_of(col: list[int], t: str) -> int:
    """A gauge at the instant ``t``: the value at the end of the second before it."""
    return col[int(clock(t) - START) - 1]


def headline(m: Model) -> dict[str, float]:
    """The C0 figures the engine's tests check (docs/basketly.md)."""
    h = {
        "goodput_before": mean(m.goodput, "19:59:50", "20:00:00"),
        "goodput_after_20_00_02": mean(m.goodput, "20:00:02", "20:00:30"),
        "db_stale_hiccup": mean(m.db_stale, "20:00:02", "20:00:20"),
        "db_stale_after": mean(m.db_stale, "20:00:22", "20:00:30"),
        "app_attempts": mean(m.app_attempts, "20:00:06", "20:00:30"),
        "inside_stock_20_00_15": at_end_of(m.inside_stock, "20:00:15"),
    }
    if m.until >= clock("20:02:00"):
        h["shopapi_queue_20_02_00"] = at_end_of(m.shopapi_queue, "20:02:00")
    return h


if __name__ == "__main__":
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    until = sys.argv[2] if len(sys.argv) > 2 else "20:02:00"
    model = run(seed, until)
    print(f"events {model.events}")
    for k, v in headline(model).items():
        print(f"{k:28} {v:12.1f}")
