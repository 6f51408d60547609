"""One ASGI server for bench/servers/run.py: ``python asgi_server.py GUARDS [HTTP LOOP]``.

``GUARDS`` is ``none``, ``empty`` (a pass-through ASGI middleware: the cost of one more
layer, the floor under any middleware) or ``admission``; ``HTTP`` and ``LOOP`` are uvicorn's ``--http``
and ``--loop`` (default ``httptools`` and ``uvloop``, what ``uvicorn[standard]`` runs).
A plain ASGI application answers ``GET /`` with 200 ``ok``; with ``admission`` it is
wrapped in ``guards.AdmissionMiddleware`` configured the way a user would (one
``guards.Admission`` door with a limit per priority far above the load tool's
connections, so the benchmark measures the door's cost, never a refusal). uvicorn
serves it, one worker, access log off, on a socket bound to a free loopback port; prints
``listening on 127.0.0.1:PORT`` and, when stopped (SIGTERM: the lifespan's shutdown),
one JSON line with the middleware's and the door's counters.
"""

from __future__ import annotations

import json
import socket
import sys

import uvicorn

LIMIT = 4096  # per priority: far above the load tool's concurrent requests
BODY = b"ok\n"
HEADERS = [(b"content-type", b"text/plain"), (b"content-length", str(len(BODY)).encode())]


MIDDLEWARE = None  # the AdmissionMiddleware when GUARDS is admission


def report() -> None:
    """The counters, printed when uvicorn shuts the application down (it then re-raises
    SIGTERM, so this is the last chance)."""
    m = MIDDLEWARE
    stats = {
        "middleware": None if m is None else m.stats(),
        "admission": None if m is None else m.admission.stats(),
    }
    print(json.dumps(stats), flush=True)


async def app(scope, receive, send):  # type: ignore[no-untyped-def]
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                report()
                await send({"type": "lifespan.shutdown.complete"})
                return
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})


def main() -> int:
    args = sys.argv[1:]
    if not args or args[0] not in ("none", "empty", "admission") or len(args) not in (1, 3):
        print("usage: asgi_server.py none|empty|admission [HTTP LOOP]", file=sys.stderr)
        return 2
    mode = args[0]
    http, loop = (args[1], args[2]) if len(args) == 3 else ("httptools", "uvloop")
    global MIDDLEWARE
    served = app
    if mode == "empty":

        async def empty(scope, receive, send):  # type: ignore[no-untyped-def]
            await app(scope, receive, send)

        served = empty
    if mode == "admission":
        import guards

        MIDDLEWARE = guards.AdmissionMiddleware(app, guards.Admission(limits=[LIMIT] * 8))
        served = MIDDLEWARE
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print(f"listening on 127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(
        served, http=http, loop=loop, lifespan="on", access_log=False, log_level="warning",
        backlog=1024,
    )
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
