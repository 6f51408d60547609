#!/usr/bin/env python3
"""Drive guards-server (examples/c/server.c) on loopback and check what its guards do.

    python3 examples/c/test_server.py PATH/TO/guards-server

Starts the server on a free port, then:
  1. a burst of concurrent clients against a slow backend: some are served (200), the
     rest are refused at the door with 503 and an integer Retry-After;
  2. deadlines from `grpc-timeout` and `x-timeout-ms`: the attempt's budget is the
     caller's time left minus the margin, a malformed value is a 400 naming the rule, no
     time left is a 504 before the call;
  3. the backend failing: the breaker opens and answers 503 with Retry-After itself;
  4. the counters add up, no permit is left outstanding, and /admin/quit stops the
     server with exit status 0 (build it with SANITIZE=1: LeakSanitizer then fails the
     exit on any leak).
Then again in prefork mode (--workers 4: four processes on one listening socket, one
breaker and one bulkhead shared through a region file):
  5. bursts of more concurrent clients than the shared bulkhead's cap against a slow
     backend: the backend calls in flight at once, over every worker, never exceed the
     cap (each 200 says when its call started and ended, and which worker pid served it),
     though 200s come from more than one worker;
  6. the backend fails: the shared breaker opens, and workers that saw too few failures
     to open a breaker of their own refuse with the breaker's 503 too;
  7. a worker killed with SIGKILL is replaced by the supervisor; /admin/quit stops every
     worker, exit status 0 (LeakSanitizer in every worker), and the region file is
     removed.
Then once with each of --guards none and --guards admission (the variants
`make bench-servers` measures against each other):
  8. none: the same burst is served in full (no door, no guard), and no guard counted it;
     admission: the door refuses some of the burst with its 503, and only the door counted.
Standard library only. Exits non-zero, naming the check, on the first failure.
"""

import http.client
import json
import subprocess
import sys
import threading

import os
import signal
import time

BURST = 40
ADMISSION_LIMIT = 8
BACKEND_MS = 300

WORKERS = 4
THREADS_PER_WORKER = 6
SHARED_CAP = 3
MINIMUM_CALLS = 10  # the breaker's (automatic) minimum of calls before it may open


def fail(msg):
    print(f"test_server: FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def get(port, path, headers=None):
    """One request on its own connection: (status, headers as a dict, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
    finally:
        c.close()


def stats(port):
    status, _, body = get(port, "/stats")
    check(status == 200, f"/stats answered {status}")
    return json.loads(body)


def burst(port, n=BURST):
    """n clients at once (released together by a barrier): their answers."""
    results = [None] * n
    barrier = threading.Barrier(n)

    def client(i):
        barrier.wait()
        results[i] = get(port, "/work", {"x-priority": "3"})

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def main():
    if len(sys.argv) != 2:
        fail("usage: test_server.py PATH/TO/guards-server")
    server = subprocess.Popen(
        [
            sys.argv[1],
            "--port", "0",
            "--threads", "64",
            "--backend-ms", str(BACKEND_MS),
            "--admission-limit", str(ADMISSION_LIMIT),
            "--bulkhead", "12",
            "--attempt-timeout-ms", "1000",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        run(server)
    except BaseException:
        server.kill()
        raise
    prefork = subprocess.Popen(
        [
            sys.argv[1],
            "--port", "0",
            "--workers", str(WORKERS),
            "--threads", str(THREADS_PER_WORKER),
            "--backend-ms", str(BACKEND_MS),
            "--admission-limit", "64",
            "--bulkhead", str(SHARED_CAP),
            "--attempt-timeout-ms", "1000",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        run_prefork(prefork)
    except BaseException:
        prefork.kill()
        raise
    for mode in ("none", "admission"):
        variant = subprocess.Popen(
            [
                sys.argv[1],
                "--port", "0",
                "--threads", "64",
                "--backend-ms", str(BACKEND_MS),
                "--admission-limit", str(ADMISSION_LIMIT),
                "--guards", mode,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            run_guards_mode(variant, mode)
        except BaseException:
            variant.kill()
            raise
    print("test_server: all passed")


def run_guards_mode(server, mode):
    """--guards none: every request of a burst served, nothing counted by any guard;
    --guards admission: the door refuses part of the burst, the breaker sees nothing."""
    line = server.stdout.readline().strip()
    check(line.startswith("listening on 127.0.0.1:"), f"first line {line!r}")
    port = int(line.rsplit(":", 1)[1])
    results = burst(port)
    codes = [status for status, _, _ in results]
    s = stats(port)
    ok = codes.count(200)
    if mode == "none":
        check(ok == BURST, f"--guards none: {BURST - ok} of the burst not served: {codes}")
        check(s["admitted"] == 0 and s["refused"] == 0, f"--guards none: the door counted {s}")
    else:
        refused = [h for status, h, _ in results if status == 503]
        check(ok + len(refused) == BURST, f"--guards admission: answers {codes}")
        check(refused and all(h.get("x-refused-by") == "admission" for h in refused),
              f"--guards admission: no 503 from the door in a burst of {BURST}: {codes}")
        check(s["admitted"] == ok and s["refused"] == len(refused), f"--guards admission: {s}")
    check(s["served_ok"] == ok, f"--guards {mode}: served_ok {s['served_ok']} != {ok}")
    check(s["breaker_failures"] == 0 and s["outstanding_permits"] == 0, f"--guards {mode}: {s}")
    for status, headers, _ in results:
        if status == 200:
            check(headers.get("x-attempt-budget-ms") == "1000",
                  f"--guards {mode}: budget {headers.get('x-attempt-budget-ms')}")
    check(get(port, "/admin/quit")[0] == 200, "/admin/quit")
    try:
        server.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        fail(f"--guards {mode}: the server did not stop after /admin/quit")
    check(server.returncode == 0, f"--guards {mode}: exit status {server.returncode}")
    print(f"test_server: --guards {mode}: {ok} of {BURST} served, {BURST - ok} refused by the door")


def victim_alive(pid):
    """Whether process `pid` still runs (neither gone nor a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def most_at_once(intervals):
    """The most intervals (start, end) open at one instant (an end before a start at the
    same instant)."""
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals],
                    key=lambda e: (e[0], e[1]))
    most = cur = 0
    for _, d in events:
        cur += d
        most = max(most, cur)
    return most


def run_prefork(server):
    line = server.stdout.readline().strip()
    check(line.startswith("listening on 127.0.0.1:"), f"first line {line!r}")
    port = int(line.rsplit(":", 1)[1])
    line = server.stdout.readline().strip()
    check(line.startswith(f"prefork: {WORKERS} workers sharing region "), f"second line {line!r}")
    region = line.rsplit(" ", 1)[1]
    region_file = region if "/" in region else os.path.join("/dev/shm", region)
    check(os.path.exists(region_file), f"no region file {region_file}")

    # 5. The shared bulkhead caps the backend calls of the whole host.
    intervals, pids, refused = [], set(), 0
    for attempt in range(6):
        for status, headers, _ in burst(port, WORKERS * THREADS_PER_WORKER):
            check(status in (200, 503), f"prefork burst answered {status}")
            if status == 200:
                intervals.append((int(headers["x-backend-start-ns"]), int(headers["x-backend-end-ns"])))
                pids.add(headers["x-worker-pid"])
            else:
                check(headers.get("x-refused-by") == "bulkhead",
                      f"503 from {headers.get('x-refused-by')}, expected bulkhead")
                refused += 1
        if len(pids) >= 2 and refused:
            break
    most = most_at_once(intervals)
    check(most <= SHARED_CAP, f"{most} backend calls at once over the workers, cap {SHARED_CAP}")
    check(most >= 2, f"never more than {most} call at once: the test did not load the bulkhead")
    check(len(pids) >= 2, f"every 200 came from one worker ({pids})")
    check(refused > 0, "no bulkhead refusal")
    s = stats(port)
    check(s["workers"] == WORKERS, f"stats workers {s['workers']}")
    check(s["bulkhead_in_flight"] == 0 and s["outstanding_permits"] == 0, f"stats {s}")
    print(f"test_server: prefork bulkhead: {len(intervals)} calls served by {len(pids)} workers, "
          f"at most {most} at once (cap {SHARED_CAP} for the host), {refused} refused")

    # 6. Failures seen by some workers open the breaker for every worker.
    check(get(port, "/admin/fail")[0] == 200, "/admin/fail")
    failures = {}
    opened = False
    for _ in range(40):
        status, headers, _ = get(port, "/work")
        pid = headers["x-worker-pid"]
        if status == 503:
            check(headers.get("x-refused-by") == "circuit_breaker", f"503 from {headers.get('x-refused-by')}")
            opened = True
            first_refusal = pid
            break
        check(status == 502, f"failing backend answered {status}")
        failures[pid] = failures.get(pid, 0) + 1
    check(opened, "the shared breaker did not open within 40 failing calls")
    refusing = {first_refusal}
    proof = None  # a refusing worker that saw too few failures to open a breaker itself
    for _ in range(120):
        if failures.get(first_refusal, 0) * 2 < MINIMUM_CALLS:
            proof = first_refusal
        if proof is not None and len(refusing) >= 2:
            break
        status, headers, _ = get(port, "/work")
        check(status == 503 and headers.get("x-refused-by") == "circuit_breaker",
              f"after the breaker opened: {status} {headers.get('x-refused-by')}")
        first_refusal = headers["x-worker-pid"]
        refusing.add(first_refusal)
    check(len(refusing) >= 2, f"only worker(s) {refusing} refused")
    check(proof is not None,
          f"every refusing worker saw half of {MINIMUM_CALLS} failures itself ({failures})")
    s = stats(port)
    check(s["breaker"] == "open", f"shared breaker {s['breaker']}")
    check(s["breaker_failures"] == sum(failures.values()),
          f"shared breaker failures {s['breaker_failures']} != 502s {sum(failures.values())}")
    print(f"test_server: prefork breaker: open after {sum(failures.values())} failures seen by "
          f"{len(failures)} workers ({sorted(failures.values())}); refused by {len(refusing)} workers, "
          f"worker {proof} with {failures.get(proof, 0)} failures of its own")
    check(get(port, "/admin/heal")[0] == 200, "/admin/heal")

    # 7. A worker killed with SIGKILL is replaced; a clean stop removes the region.
    victim = int(get(port, "/stats")[1]["x-worker-pid"])
    os.kill(victim, signal.SIGKILL)
    # A connection that the victim accepted in the instant before it died is reset: that is
    # the kill, not the server. Wait until it can accept no more (gone, or a zombie waiting
    # for the supervisor), then every request must be served by the others.
    for _ in range(500):
        if not victim_alive(victim):
            break
        time.sleep(0.01)
    else:
        fail(f"worker {victim} still running after SIGKILL")
    seen = set()
    for _ in range(60):
        status, headers, _ = get(port, "/stats")
        check(status == 200, f"/stats after the kill answered {status}")
        seen.add(int(headers["x-worker-pid"]))
        if len(seen - {victim}) >= WORKERS:
            break
        time.sleep(0.02)
    check(victim not in seen, f"killed worker {victim} still answered")
    check(len(seen) >= WORKERS, f"only {len(seen)} workers answered after the kill: not replaced")
    s = stats(port)
    check(s["outstanding_permits"] == 0, f"outstanding permits {s['outstanding_permits']}")
    check(get(port, "/admin/quit")[0] == 200, "/admin/quit")
    try:
        out, _ = server.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        fail("the prefork server did not stop after /admin/quit")
    check(server.returncode == 0, f"the prefork server exited with {server.returncode}")
    check("stopped after" in out, f"last output {out!r}")
    check(not os.path.exists(region_file), f"region file {region_file} left behind")
    print(f"test_server: prefork: worker {victim} killed and replaced, clean stop, region removed")


def run(server):
    line = server.stdout.readline().strip()
    check(line.startswith("listening on 127.0.0.1:"), f"first line {line!r}")
    port = int(line.rsplit(":", 1)[1])

    # 1. A burst into a slow backend: refused at the door with 503 + Retry-After.
    refused = served = 0
    for attempt in range(3):
        results = burst(port)
        for status, headers, _ in results:
            check(status in (200, 503), f"burst answered {status}")
            if status == 503:
                check(headers.get("x-refused-by") == "admission",
                      f"503 from {headers.get('x-refused-by')}, expected admission")
                ra = headers.get("retry-after", "")
                check(ra.isdigit() and int(ra) >= 1, f"Retry-After {ra!r} is not >= 1 s")
                refused += 1
            else:
                served += 1
        if refused:
            break
    check(refused > 0, "no 503 from admission in 3 bursts of concurrent clients")
    check(served > 0, "nobody was served")
    s = stats(port)
    check(s["refused"] == refused, f"stats refused {s['refused']} != 503s seen {refused}")
    check(s["inside"] == 0, f"{s['inside']} still inside after the burst")
    print(f"test_server: burst: {served} served, {refused} refused with 503 + Retry-After")

    # 2. Deadlines from the caller's headers.
    status, headers, _ = get(port, "/work", {"grpc-timeout": "50m"})
    check(status == 504, f"grpc-timeout 50m against a {BACKEND_MS} ms backend answered {status}")
    check(headers.get("x-attempt-budget-ms") == "49", f"budget {headers.get('x-attempt-budget-ms')}")
    status, headers, _ = get(port, "/work", {"x-timeout-ms": "100"})
    check(status == 504 and headers.get("x-attempt-budget-ms") == "99",
          f"x-timeout-ms 100: {status}, budget {headers.get('x-attempt-budget-ms')}")
    status, _, body = get(port, "/work", {"grpc-timeout": "5s"})
    check(status == 400 and "unknown_unit" in body, f"grpc-timeout 5s: {status} {body!r}")
    status, _, body = get(port, "/work", {"grpc-timeout": "0n"})
    check(status == 504 and "before the call" in body, f"grpc-timeout 0n: {status} {body!r}")
    status, headers, _ = get(port, "/work", {"grpc-timeout": "2S"})
    check(status == 200 and headers.get("x-attempt-budget-ms") == "999",
          f"grpc-timeout 2S: {status}, budget {headers.get('x-attempt-budget-ms')}")
    print("test_server: deadlines: budgets 49, 99 and 999 ms, 400 on a bad header, 504 when none is left")

    # 3. The backend fails: the breaker opens (its window is the last 20 calls).
    check(get(port, "/admin/fail")[0] == 200, "/admin/fail")
    opened = None
    for i in range(25):
        status, headers, _ = get(port, "/work")
        if status == 503:
            opened = (i, headers)
            break
        check(status == 502, f"failing backend answered {status}")
    check(opened is not None, "the breaker did not open within 25 failing calls")
    i, headers = opened
    check(headers.get("x-refused-by") == "circuit_breaker", f"503 from {headers.get('x-refused-by')}")
    ra = headers.get("retry-after", "")
    check(ra.isdigit() and 1 <= int(ra) <= 5, f"breaker Retry-After {ra!r}, expected 1..5 s")
    s = stats(port)
    check(s["breaker"] == "open", f"breaker {s['breaker']}")
    check(s["breaker_rejected"] == 1, f"breaker rejected {s['breaker_rejected']}")
    print(f"test_server: breaker: open after {i} failing calls, 503 + Retry-After {ra}")
    check(get(port, "/admin/heal")[0] == 200, "/admin/heal")

    # 4. Nothing left behind; a clean stop.
    s = stats(port)
    check(s["outstanding_permits"] == 0, f"outstanding permits {s['outstanding_permits']}")
    check(s["inside"] == 0 and s["bulkhead_in_flight"] == 0, f"stats {s}")
    check(get(port, "/admin/quit")[0] == 200, "/admin/quit")
    try:
        out, _ = server.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        fail("the server did not stop after /admin/quit")
    check(server.returncode == 0, f"the server exited with {server.returncode} (a leak or an error?)")
    check("stopped after" in out, f"last output {out!r}")


if __name__ == "__main__":
    main()
