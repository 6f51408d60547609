"""Server-side admission control as ASGI and WSGI middleware.

The door of a service: every request takes a ticket from the native
:class:`guards.Admission` before any of the application runs -- before authentication,
parsing, or a single query -- and gives it back when the response is done. A request
that would push the calls inside past its priority's limit is answered at once with
``503 Service Unavailable`` and a ``Retry-After`` header (whole seconds, rounded up), for
a cost far below the work it saves. Health checks are exempt: a server that sheds its
load balancer's probes is taken out of rotation exactly when it is needed.

::

    import guards

    door = guards.Admission()                       # views 64 inside, reserves 80

    # ASGI: Starlette, FastAPI, Django (asgi.py), Quart, ...
    app = guards.AdmissionMiddleware(app, door, priority=guards.priority_from_header())

    # WSGI: Flask, Django (wsgi.py), Pyramid, ...
    flask_app.wsgi_app = guards.WSGIAdmissionMiddleware(flask_app.wsgi_app, door)

    # aiohttp
    app = aiohttp.web.Application(middlewares=[guards.AiohttpAdmissionMiddleware(door)])

How each request is reported to the admission (an adaptive limit learns from it), as an
outcome of the call contract (``docs/outcomes.md``): a response with status 503 or 429
from the application is ``overloaded`` (the server itself refused: an overload signal);
any other response is a ``success`` (timed from admission to the end of the body); an
exception the application raised is classified by :func:`guards.classify_exception` (a
timeout is an overload signal, a ``KeyError`` says nothing); a client that went away
before the end of the response is ``cancelled`` (says nothing about capacity: uvicorn
then drops what is sent and a streaming response stops without an error; counted as
``disconnected``).

``priority``: a callable receiving the ASGI ``scope`` (the WSGI ``environ``, the aiohttp
``request``) and
returning the request's priority class, 0 (most important) to 7; ``None`` means the
default (1, critical). :func:`priority_from_header` reads it from a request header; a
value the client sent that is not a priority (``"²"``, a 5,000-digit number) gives the
default, never an error.
``exempt``: paths never shed (exact matches; default ``/health``, ``/healthz``,
``/livez``, ``/readyz``, ``/ready``), or a predicate of the path.
``deadline``: ``"grpc"`` or ``"millis"`` to read the caller's deadline from the
``grpc-timeout`` (or ``x-envoy-expected-rq-timeout-ms``) header and publish it for the
request (:func:`guards.time_left` inside the handler); a malformed header is ignored.

``stats()`` counts ``requests``, ``exempt``, ``admitted``, ``rejected``, ``errors``
(the application raised), ``overloaded`` (it answered 503/429) and ``disconnected`` (ASGI:
the client left before the response ended); the admission's own
counters are in ``middleware.admission.stats()``.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, Optional, Union

from . import _guards as _n
from ._deadline import _DEADLINE, publish
from ._guards import AdmissionRejected
from ._util import check_callable, check_int, config_error, fail_type
from .context import extract_deadline

__all__ = [
    "AdmissionMiddleware",
    "WSGIAdmissionMiddleware",
    "AiohttpAdmissionMiddleware",
    "priority_from_header",
    "DEFAULT_EXEMPT_PATHS",
]

#: Paths a load balancer probes: never shed.
DEFAULT_EXEMPT_PATHS = ("/health", "/healthz", "/livez", "/readyz", "/ready")

_OVERLOAD_STATUSES = (503, 429)
_STATS = ("requests", "exempt", "admitted", "rejected", "errors", "overloaded", "disconnected")


def priority_from_header(
    name: str = "x-priority",
    *,
    default: Optional[int] = None,
    names: Optional[dict[str, int]] = None,
) -> Callable[[Any], Optional[int]]:
    """A ``priority=`` callable reading the request's priority class from header ``name``.

    The value is a number 0..7 or, case-insensitively, a name: ``critical_plus`` (0),
    ``critical`` (1), ``sheddable_plus`` (2), ``sheddable`` (3), or one of ``names``.
    A missing or unreadable value gives ``default`` (``None``: the admission's default).
    Works for ASGI scopes, WSGI environs and request objects with ``headers`` (aiohttp).
    """
    if not isinstance(name, str) or not name:
        fail_type("name", "a non-empty str", name)
    if default is not None:
        check_int("default", default, 0, 7)
    table = {"critical_plus": 0, "critical": 1, "sheddable_plus": 2, "sheddable": 3}
    if names is not None:
        if not isinstance(names, dict):
            fail_type("names", "a dict of str to int", names)
        for k, v in names.items():
            if not isinstance(k, str):
                fail_type("names", "a dict of str to int", k)
            table[k.lower()] = check_int(f"names[{k!r}]", v, 0, 7)
    raw_name = name.lower().encode("latin-1")
    environ_key = "HTTP_" + name.upper().replace("-", "_")

    def priority(scope_or_environ: Any) -> Optional[int]:
        value: Any = None
        if (
            isinstance(scope_or_environ, dict)
            and "headers" in scope_or_environ
            and "type" in scope_or_environ
        ):
            for k, v in scope_or_environ["headers"]:
                if isinstance(k, bytes) and k.lower() == raw_name:
                    value = v
                    break
        elif isinstance(scope_or_environ, dict):
            value = scope_or_environ.get(environ_key)
        else:  # a request object with headers (aiohttp, or any other)
            headers = getattr(scope_or_environ, "headers", None)
            if headers is not None:
                try:
                    value = headers.get(name)
                except Exception:  # noqa: BLE001 - an odd headers object: no priority
                    value = None
        return _read_priority(value, table, default)

    return priority


def _read_priority(value: Any, table: dict[str, int], default: Optional[int]) -> Optional[int]:
    """A priority header's value, as sent by a client: never raises. A value that is not
    one ASCII digit 0..7 (after spaces) or a name in ``table`` gives ``default`` -- also
    ``"²"`` (a digit to ``str.isdigit``), a 5,000-digit number, bytes that are not text."""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if not isinstance(value, str) or len(value) > 64:
        return default
    text = value.strip().lower()
    if len(text) == 1 and "0" <= text <= "7":
        return ord(text) - ord("0")
    return table.get(text, default)


def _exempt_matcher(exempt: Any) -> Callable[[str], bool]:
    if exempt is None:
        return lambda path: False
    if callable(exempt):
        return exempt  # type: ignore[no-any-return]
    if isinstance(exempt, str) or not isinstance(exempt, Collection):
        fail_type("exempt", "a collection of paths, a predicate or None", exempt)
    paths = frozenset(exempt)
    for p in paths:
        if not isinstance(p, str):
            fail_type("exempt", "a collection of str paths", p)
    return paths.__contains__


def _retry_after_header(err: BaseException) -> Optional[str]:
    secs = getattr(err, "retry_after_secs", None)  # the native refusal's whole seconds
    if isinstance(secs, int) and not isinstance(secs, bool):
        return str(secs)
    ra = getattr(err, "retry_after", None)
    if ra is None:
        return None
    return str(max(1, math.ceil(ra)))


#: What the middleware counts for each ``_AsgiWatch.finish`` code: a success, an answer
#: of 503/429, a client gone (or a response never ended), no response started.
_FINISHED = ("", "overloaded", "disconnected", "")


async def _watch_receive(watch: Any, receive: Any) -> Any:
    """The application's ``receive`` (made by the native watch when it is called): the
    server's, noting a client that went away."""
    message = await receive()
    if message.get("type") == "http.disconnect":
        watch._disconnected()
    return message


class _Door:
    """What both middlewares share: the admission, the settings and the counters."""

    def __init__(
        self,
        admission: Any,
        priority: Optional[Callable[[Any], Optional[int]]],
        exempt: Any,
        deadline: Optional[str],
        body: Union[bytes, str],
    ) -> None:
        if admission is None:
            admission = _n.Admission()
        elif not isinstance(admission, _n.Admission):
            fail_type("admission", "a guards.Admission or None", admission)
        self.admission = admission
        self._priority = check_callable("priority", priority)
        self._exempt = _exempt_matcher(exempt)
        if deadline is not None and deadline not in ("grpc", "millis"):
            if not isinstance(deadline, str):
                fail_type("deadline", "'grpc', 'millis' or None", deadline)
            raise config_error("deadline", "out_of_range", "'grpc', 'millis' or None")
        self._deadline = deadline
        if isinstance(body, str):
            body = body.encode("utf-8")
        if not isinstance(body, bytes):
            fail_type("body", "bytes or str", body)
        self._body = body
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(_STATS, 0)
        # The one counter every admitted request moves, without the lock: next() on an
        # itertools.count is one C call, atomic under the GIL (the extension module does
        # not run without it). stats() reads it with a next() of its own, and subtracts
        # its reads.
        self._admitted = itertools.count()
        self._admitted_reads = 0

    metrics_kind = "admission_middleware"

    def count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counts[key] += n

    def admitted(self) -> None:
        """Count one admitted request."""
        next(self._admitted)

    def stats(self) -> dict[str, int]:
        """The middleware's counters (see the module docs)."""
        with self._lock:
            counts = dict(self._counts)
            counts["admitted"] = next(self._admitted) - self._admitted_reads
            self._admitted_reads += 1
        # A request is counted once, where it was decided (exempt, admitted or rejected);
        # "requests" holds only those that raised before a decision (a priority callable's
        # error): one count on a request's path, not two.
        counts["requests"] += counts["exempt"] + counts["admitted"] + counts["rejected"]
        return counts

    def priority_of(self, request: Any) -> Optional[int]:
        if self._priority is None:
            return None
        p = self._priority(request)
        if p is None:
            return None
        return check_int("priority", p, 0, 7)

    def admit(self, request: Any, path: Any) -> Any:
        """A ticket, or raise AdmissionRejected (emitted as a ``refusal`` named by the
        request's path). Any other error (from the priority callable) is counted as a
        request that was neither admitted nor rejected, and raised."""
        try:
            p = None if self._priority is None else self.priority_of(request)
            return self.admission.acquire(p, operation=path if isinstance(path, str) else None)
        except AdmissionRejected:
            raise
        except BaseException:
            self.count("requests")
            raise

    def release(
        self,
        ticket: Any,
        status: Optional[int],
        failed: bool,
        exc: Optional[BaseException] = None,
        gone: bool = False,
    ) -> None:
        """Give the ticket back with how the request ended (see the module docs)."""
        if gone:
            outcome = "cancelled"
        elif failed:
            outcome = "ignored" if exc is None else _n.classify_exception(exc)[0]
        elif status is None:
            outcome = "ignored"
        elif status in _OVERLOAD_STATUSES:
            self.count("overloaded")
            outcome = "overloaded"
        else:
            outcome = "success"
        ticket.report(outcome)

    def refused(self, refused: BaseException, path: Any) -> None:
        self.count("rejected")

    def _refusal_headers(
        self, refused: BaseException, *, length: bool = True
    ) -> list[tuple[str, str]]:
        """The headers of a 503 for ``refused`` (``length``: with Content-Length), in
        the order they are sent."""
        headers = [("Content-Type", "text/plain; charset=utf-8")]
        if length:
            headers.append(("Content-Length", str(len(self._body))))
        headers.append(("Cache-Control", "no-store"))
        ra = _retry_after_header(refused)
        if ra is not None:
            headers.append(("Retry-After", ra))
        return headers

    def deadline_of(self, headers: Any) -> Any:
        if self._deadline is None:
            return None
        return extract_deadline(headers, format=self._deadline, strict=False)


class AdmissionMiddleware(_Door):
    """ASGI admission middleware (see the module docs): ``AdmissionMiddleware(app,
    admission=None, *, priority=None, exempt=DEFAULT_EXEMPT_PATHS, deadline=None,
    body=...)``. Only ``http`` requests are admitted; ``websocket`` and ``lifespan``
    pass through."""

    def __init__(
        self,
        app: Any,
        admission: Any = None,
        *,
        priority: Optional[Callable[[Any], Optional[int]]] = None,
        exempt: Any = DEFAULT_EXEMPT_PATHS,
        deadline: Optional[str] = None,
        body: Union[bytes, str] = b"overloaded: try again later\n",
    ) -> None:
        if not callable(app):
            fail_type("app", "an ASGI application", app)
        super().__init__(admission, priority, exempt, deadline, body)
        self.app = app
        """The ASGI application behind the door."""
        self._enter = self.admission._asgi_enter

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # The hot path of every request: one native call in (the acquire and a native watch
        # of `receive` and `send`), one native call out (the report), one counter update
        # (see docs/benchmarks.md, "inside a real server").
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if self._exempt(path):
            self.count("exempt")
            await self.app(scope, receive, send)
            return
        try:
            watch = self._enter(
                None if self._priority is None else self.priority_of(scope), path, receive, send
            )
        except AdmissionRejected as refused:
            self.refused(refused, path)
            await self._reject(send, refused)
            return
        except BaseException:
            self.count("requests")  # neither admitted nor rejected (see admit)
            raise
        next(self._admitted)
        token = None
        if self._deadline is not None:
            deadline = self.deadline_of(scope.get("headers", ()))
            if deadline is not None:
                token = publish(deadline)
        try:
            await self.app(scope, watch.receive, watch.send)
        except BaseException as e:
            if isinstance(e, Exception):
                self.count("errors")
            watch.fail(e)
            raise
        finally:
            if token is not None:
                _DEADLINE.reset(token)
        # 0: a success. Otherwise the client went away mid-response (servers then drop
        # what is sent, and a streaming response stops without an error: not a success),
        # the application answered 503/429, or it started no response.
        counted = _FINISHED[watch.finish()]
        if counted:
            self.count(counted)

    async def _reject(self, send: Any, refused: BaseException) -> None:
        headers = [(k.lower().encode(), v.encode()) for k, v in self._refusal_headers(refused)]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": self._body})


class WSGIAdmissionMiddleware(_Door):
    """WSGI admission middleware (see the module docs): ``WSGIAdmissionMiddleware(app,
    admission=None, *, priority=None, exempt=DEFAULT_EXEMPT_PATHS, deadline=None,
    body=...)``. The ticket is given back when the server closes the response."""

    def __init__(
        self,
        app: Any,
        admission: Any = None,
        *,
        priority: Optional[Callable[[Any], Optional[int]]] = None,
        exempt: Any = DEFAULT_EXEMPT_PATHS,
        deadline: Optional[str] = None,
        body: Union[bytes, str] = b"overloaded: try again later\n",
    ) -> None:
        if not callable(app):
            fail_type("app", "a WSGI application", app)
        super().__init__(admission, priority, exempt, deadline, body)
        self.app = app
        """The WSGI application behind the door."""

    def __call__(self, environ: Any, start_response: Any) -> Iterable[bytes]:
        if self._exempt(environ.get("PATH_INFO", "")):
            self.count("exempt")
            return self.app(environ, start_response)  # type: ignore[no-any-return]
        try:
            ticket = self.admit(environ, environ.get("PATH_INFO"))
        except AdmissionRejected as refused:
            self.refused(refused, environ.get("PATH_INFO"))
            start_response("503 Service Unavailable", self._refusal_headers(refused))
            return [self._body]
        self.admitted()
        status: list[int] = []

        def start_status(status_line: str, headers: Any, exc_info: Any = None) -> Any:
            try:
                code = int(status_line.split(" ", 1)[0])
            except ValueError:
                code = 0
            if status:
                status[0] = code
            else:
                status.append(code)
            if exc_info is None:
                return start_response(status_line, headers)
            return start_response(status_line, headers, exc_info)

        deadline = self.deadline_of(environ)
        token = None if deadline is None else publish(deadline)
        try:
            body = self.app(environ, start_status)
        except BaseException as e:
            if isinstance(e, Exception):
                self.count("errors")
            self.release(ticket, None, True, e)
            raise
        finally:
            if token is not None:
                _DEADLINE.reset(token)
        return _ReleasingBody(self, ticket, body, status)


class _ReleasingBody:
    """The application's response body; gives the ticket back exactly once, when the
    server closes it (PEP 3333 guarantees ``close()``), or when iterating it fails."""

    def __init__(self, door: _Door, ticket: Any, body: Iterable[bytes], status: list[int]) -> None:
        self._door = door
        self._ticket = ticket
        self._body = body
        self._status = status
        self._lock = threading.Lock()
        self._released = False
        self._failed = False
        self._error: Optional[BaseException] = None

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._body
        except GeneratorExit:
            raise
        except BaseException as e:
            if isinstance(e, Exception):
                self._door.count("errors")
            self._failed = True
            self._error = e
            self._release()
            raise

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        self._door.release(
            self._ticket, self._status[0] if self._status else None, self._failed, self._error
        )

    def __del__(self) -> None:
        # A server that never closes the body must not leak the ticket forever.
        if not self._released:
            self._failed = True
            self._release()

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            self._release()


class AiohttpAdmissionMiddleware(_Door):
    """aiohttp admission middleware (see the module docs):
    ``web.Application(middlewares=[AiohttpAdmissionMiddleware(admission=None, *,
    priority=None, exempt=DEFAULT_EXEMPT_PATHS, deadline=None, body=...)])``.

    ``priority`` receives the ``aiohttp.web.Request``. An ``aiohttp.web.HTTPException``
    raised by a handler is a response like any other (a raised ``HTTPServiceUnavailable``
    is an overload signal). Importing guards does not need aiohttp; answering a refused
    request does.
    """

    __middleware_version__ = 1  # the new-style middleware signature (request, handler)

    def __init__(
        self,
        admission: Any = None,
        *,
        priority: Optional[Callable[[Any], Optional[int]]] = None,
        exempt: Any = DEFAULT_EXEMPT_PATHS,
        deadline: Optional[str] = None,
        body: Union[bytes, str] = b"overloaded: try again later\n",
    ) -> None:
        super().__init__(admission, priority, exempt, deadline, body)

    async def __call__(self, request: Any, handler: Any) -> Any:
        from aiohttp import web  # noqa: PLC0415

        if self._exempt(request.path):
            self.count("exempt")
            return await handler(request)
        try:
            ticket = self.admit(request, request.path)
        except AdmissionRejected as refused:
            self.refused(refused, request.path)
            headers = dict(self._refusal_headers(refused, length=False))
            return web.Response(status=503, body=self._body, headers=headers)
        self.admitted()
        deadline = self.deadline_of(request.headers)
        token = None if deadline is None else publish(deadline)
        status: Optional[int] = None
        failed = True
        error: Optional[BaseException] = None
        try:
            response = await handler(request)
            status = getattr(response, "status", None)
            failed = False
            return response
        except web.HTTPException as answer:  # a response raised as an exception
            status = answer.status
            failed = False
            raise
        except BaseException as e:
            error = e
            if isinstance(e, Exception):
                self.count("errors")
            raise
        finally:
            if token is not None:
                _DEADLINE.reset(token)
            self.release(ticket, status, failed, error)
