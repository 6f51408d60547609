"""Guarded functions as Starlette endpoints (issue 11): Starlette's ``Route`` calls a
function (or method) as ``endpoint(request)`` and takes any other object for an ASGI app,
so what ``@guarded(...)`` returns must be seen as the function it decorates."""

from __future__ import annotations

import copy
import inspect
import pickle

import pytest

import guards

starlette = pytest.importorskip("starlette")

from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import PlainTextResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

breaker = guards.CircuitBreaker(window_size=4, minimum_calls=4, failure_rate_threshold=0.5)
bulkhead = guards.Bulkhead(2)


@guards.guarded(breaker)
async def stock(request: Request) -> PlainTextResponse:
    if request.query_params.get("fail"):
        raise ConnectionError("stock service unreachable")
    return PlainTextResponse("in stock")


@guards.guarded(bulkhead)
def report(request: Request) -> PlainTextResponse:
    return PlainTextResponse(f"report, {bulkhead.in_flight} running")


class Views:
    @guards.guarded(bulkhead)
    async def cart(self, request: Request) -> PlainTextResponse:
        return PlainTextResponse(f"cart of {type(self).__name__}")


def test_async_and_sync_guarded_functions_are_starlette_endpoints() -> None:
    app = Starlette(
        routes=[
            Route("/stock", stock),
            Route("/report", report),
            Route("/cart", Views().cart),
        ]
    )
    before = breaker.stats()
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/stock").text == "in stock"
        # Run in Starlette's thread pool (a sync endpoint), holding one slot meanwhile.
        assert client.get("/report").text == "report, 1 running"
        assert client.get("/cart").text == "cart of Views"
        assert client.get("/stock", params={"fail": "1"}).status_code == 500
    after = breaker.stats()
    assert after["successes"] - before["successes"] == 1
    assert after["failures"] - before["failures"] == 1
    assert bulkhead.stats()["released"] == 2 and bulkhead.in_flight == 0


def test_a_guarded_function_is_seen_as_the_function_it_decorates() -> None:
    assert isinstance(stock, guards.GuardedFunction) and type(stock) is guards.GuardedFunction
    assert inspect.isfunction(stock) and inspect.isfunction(report)
    assert stock.__code__ is stock.__wrapped__.__code__  # type: ignore[attr-defined]
    assert stock.guard is breaker and report.guard is bulkhead and stock.is_async
    assert inspect.iscoroutinefunction(stock) and not inspect.iscoroutinefunction(report)
    assert str(inspect.signature(stock)) == "(request: 'Request') -> 'PlainTextResponse'"
    assert stock.__name__ == "stock" and repr(stock) == "<guarded function stock>"
    # By reference, as a function is.
    assert pickle.loads(pickle.dumps(report)) is report
    assert copy.copy(report) is report and copy.deepcopy(report) is report
    with pytest.raises(AttributeError):
        stock.no_such_attribute  # noqa: B018
    # Built directly (no functools.update_wrapper), it still reads as its function.
    direct = guards.GuardedFunction(bulkhead, report.__wrapped__)  # type: ignore[attr-defined]
    assert direct.__name__ == "report" and direct.__defaults__ is None
