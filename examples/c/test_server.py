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
Standard library only. Exits non-zero, naming the check, on the first failure.
"""

import http.client
import json
import subprocess
import sys
import threading

BURST = 40
ADMISSION_LIMIT = 8
BACKEND_MS = 300


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


def burst(port):
    """BURST clients at once (released together by a barrier): their answers."""
    results = [None] * BURST
    barrier = threading.Barrier(BURST)

    def client(i):
        barrier.wait()
        results[i] = get(port, "/work", {"x-priority": "3"})

    threads = [threading.Thread(target=client, args=(i,)) for i in range(BURST)]
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
    print("test_server: all passed")


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
