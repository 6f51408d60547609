"""guards.events: listeners for breaker state changes, refusals, retries, give-ups,
fallbacks and limit changes; the `guards` logger (NullHandler, quiet on success)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import guards
import pytest
from guards.testing import exhaust
from helpers import config_error, run_threads

Events = list[guards.events.Event]


@pytest.fixture
def events() -> Iterator[Events]:
    got: Events = []
    with guards.events.on(guards.events.KINDS, got.append):
        yield got


def kinds(events: Events) -> list[str]:
    return [e.kind for e in events]


def test_breaker_state_changes_are_emitted(clock: guards.FakeClock, events: Events) -> None:
    breaker = guards.CircuitBreaker(window_size=2, open_duration=1.0, half_open_probes=1)
    g = guards.guarded(breaker)
    for _ in range(2):
        with pytest.raises(ConnectionError):
            with g:
                raise ConnectionError("down")
    with pytest.raises(guards.BreakerOpen):
        with g:
            raise AssertionError("must not run")
    clock.advance(1.5)
    with g:
        pass  # the probe passes: closed
    changes = [(e.old, e.new) for e in events if e.kind == "state_change"]
    assert changes == [("closed", "open"), ("open", "half_open"), ("half_open", "closed")]
    assert all(e.source is breaker for e in events)
    assert kinds(events).count("refusal") == 1
    refusal = next(e for e in events if e.kind == "refusal")
    assert isinstance(refusal.exception, guards.BreakerOpen)


def test_a_failed_probe_reopens(clock: guards.FakeClock, events: Events) -> None:
    breaker = guards.CircuitBreaker(window_size=2, open_duration=1.0, half_open_probes=1)

    @guards.guarded(breaker, guards.Bulkhead())  # two guards: the Python path
    def call() -> None:
        raise ConnectionError("down")

    for _ in range(2):
        with pytest.raises(ConnectionError):
            call()
    clock.advance(1.5)
    with pytest.raises(ConnectionError):
        call()
    changes = [(e.old, e.new, e.operation) for e in events if e.kind == "state_change"]
    op = call.__qualname__
    assert changes == [
        ("closed", "open", op),
        ("open", "half_open", op),
        ("half_open", "open", op),
    ]


def test_keyed_breakers_name_the_key(clock: guards.FakeClock, events: Events) -> None:
    breakers = guards.KeyedBreakers(window_size=1)
    with pytest.raises(TimeoutError):
        with guards.guarded(breakers, key="stock:get"):
            raise TimeoutError
    (change,) = [e for e in events if e.kind == "state_change"]
    assert (change.operation, change.new) == ("stock:get", "open")


def test_retries_and_give_ups_are_emitted(events: Events) -> None:
    @guards.retry(max_attempts=3, backoff={"base": 1e-6, "cap": 1e-6})
    def get() -> None:
        raise ConnectionError("down")

    with pytest.raises(guards.RetriesExhausted):
        get()
    retries = [e for e in events if e.kind == "retry"]
    assert [e.attempt for e in retries] == [1, 2]
    assert all(e.outcome == "connection_error" and e.delay is not None for e in retries)
    (give_up,) = [e for e in events if e.kind == "give_up"]
    assert (give_up.reason, give_up.attempts, give_up.source) == (
        "attempts_exhausted",
        3,
        get.retry,  # type: ignore[attr-defined]
    )
    assert give_up.operation == get.__qualname__
    assert isinstance(give_up.exception, ConnectionError)


def test_errors_raised_as_they_are_are_not_give_ups(events: Events) -> None:
    @guards.retry
    def get() -> None:
        raise guards.BreakerOpen("inner breaker")  # overloaded: raised as it is, at once

    with pytest.raises(guards.BreakerOpen):
        get()
    assert events == []


def test_limit_changes_are_emitted(clock: guards.FakeClock, events: Events) -> None:
    limiter = guards.Limiter(limit=guards.AimdLimit(), window=0.1, min_window_samples=1)
    g = guards.guarded(limiter)
    for _ in range(4):
        with g as call:
            clock.advance(0.05)
            call.dropped()
    changes = [(e.old, e.new) for e in events if e.kind == "limit_change"]
    assert changes and changes[0][0] == 10
    assert all(new < old for old, new in changes)
    assert changes[-1][1] == limiter.limit


def test_source_filter_and_closing(clock: guards.FakeClock) -> None:
    a, b = guards.Bulkhead(max_concurrent=1), guards.Bulkhead(max_concurrent=1)
    held = exhaust(a) + exhaust(b)
    got: Events = []
    sub = guards.events.on("refusal", got.append, source=a)
    for bh in (a, b):
        with pytest.raises(guards.BulkheadFull):
            with guards.guarded(bh, guards.CircuitBreaker()):
                pass
    assert [e.source for e in got] == [a]
    sub.close()
    sub.close()  # a second close does nothing
    assert sub.closed
    with pytest.raises(guards.BulkheadFull):
        with guards.guarded(a, guards.CircuitBreaker()):
            pass
    assert len(got) == 1
    del held


def test_a_failing_listener_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def broken(event: guards.events.Event) -> None:
        raise RuntimeError("listener bug")

    bh = guards.Bulkhead(max_concurrent=1)
    held = exhaust(bh)
    with guards.events.on("refusal", broken), caplog.at_level(logging.ERROR, "guards"):
        with pytest.raises(guards.BulkheadFull):
            with guards.guarded(bh, guards.CircuitBreaker()):
                pass
    assert any("listener failed" in r.getMessage() for r in caplog.records)
    del held


def test_bad_arguments() -> None:
    with config_error("kind", "out_of_range"):
        guards.events.on("breaker_opened", print)
    with pytest.raises(TypeError, match="listener"):
        guards.events.on("retry", 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="kind"):
        guards.events.on(5, print)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kind"):
        guards.events.on([], print)


# ------------------------------------------------------------------ the logger


def test_logger_has_a_null_handler() -> None:
    logger = logging.getLogger("guards")
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)


def test_state_changes_and_give_ups_are_logged(
    clock: guards.FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    breaker = guards.CircuitBreaker(window_size=1)

    @guards.retry(max_attempts=2, backoff={"base": 1e-6, "cap": 1e-6})
    def get() -> None:
        with guards.guarded(breaker):
            raise ConnectionError("down")

    with caplog.at_level(logging.INFO, "guards"):
        with pytest.raises((guards.RetriesExhausted, guards.BreakerOpen)):
            get()
    records = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "guards"]
    assert any(lvl == logging.WARNING and "closed -> open" in msg for lvl, msg in records)
    assert all(lvl >= logging.INFO for lvl, _ in records)  # retries only at DEBUG
    assert all("CircuitBreaker<" not in msg for _, msg in records)
    event = next(r for r in caplog.records if hasattr(r, "guards_event"))
    assert isinstance(event.guards_event, guards.events.Event)  # type: ignore[attr-defined]


def test_give_up_is_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    @guards.retry(max_attempts=2, backoff={"base": 1e-6, "cap": 1e-6})
    def get() -> None:
        raise TimeoutError

    with caplog.at_level(logging.INFO, "guards"), pytest.raises(guards.RetriesExhausted):
        get()
    (record,) = [r for r in caplog.records if r.name == "guards"]
    assert record.levelno == logging.INFO
    assert "gave up after 2 attempt(s) (attempts_exhausted)" in record.getMessage()


def test_quiet_on_the_success_path(caplog: pytest.LogCaptureFixture) -> None:
    breaker = guards.CircuitBreaker()
    limiter = guards.Limiter()

    @guards.retry(timeout=10.0)
    @guards.guarded(breaker, limiter, guards.Bulkhead(), fallback=None)
    def ok() -> int:
        return 1

    with caplog.at_level(logging.DEBUG, "guards"):
        for _ in range(50):
            assert ok() == 1
            with guards.guarded(breaker):
                pass
    assert [r for r in caplog.records if r.name == "guards"] == []


def test_events_say_what_happened_in_words(events: Events) -> None:
    event = guards.events.Event(
        "state_change", guards.CircuitBreaker(), operation="stock", old="closed", new="open"
    )
    assert event.message() == "circuit breaker stock: closed -> open"
    assert "old='closed'" in repr(event)
    assert isinstance(event.source, guards.CircuitBreaker)


def test_listeners_added_and_removed_while_threads_emit() -> None:
    """Subscriptions change while 4 threads cause refusals: every event reaches the
    listeners subscribed for the whole run, exactly once."""
    bh = guards.Bulkhead(max_concurrent=1)
    held = exhaust(bh)
    g = guards.guarded(bh, guards.CircuitBreaker())
    steady: Events = []
    lock = threading.Lock()

    def count(event: guards.events.Event) -> None:
        with lock:
            steady.append(event)

    per_thread = 300
    with guards.events.on("refusal", count, source=bh):

        def worker(i: int) -> None:
            for k in range(per_thread):
                if i == 0:  # one thread churns subscriptions meanwhile
                    guards.events.on("refusal", lambda e: None).close()
                try:
                    with g:
                        pass
                except guards.BulkheadFull:
                    pass

        run_threads(4, worker)
    assert len(steady) == 4 * per_thread
    assert bh.stats()["rejected"] == 4 * per_thread + 1  # + exhaust()'s probe
    del held


def test_generators_closed_out_of_order_on_many_threads() -> None:
    pool = guards.Bulkhead(max_concurrent=64)
    shared = guards.guarded(pool)

    def rows() -> Iterator[int]:
        with shared, guards.deadline(30.0):
            yield 1
            yield 2

    def worker(i: int) -> None:
        for _ in range(200):
            gens = [rows() for _ in range(3)]
            for gen in gens:
                next(gen)
            for gen in (gens[0], gens[2], gens[1]):  # not the reverse of entry
                gen.close()
            assert guards.current_deadline() is None

    run_threads(4, worker)
    assert pool.in_flight == 0
    assert pool.stats()["released"] == 4 * 200 * 3


# ------------------------------------------------------------------ native fast paths


def _trip_and_recover(
    clock: guards.FakeClock, call: object, breaker: guards.CircuitBreaker
) -> None:
    """Two failures through ``call(exc_or_none)`` open ``breaker``; one refusal; after the
    open duration a successful probe closes it."""
    for _ in range(2):
        with pytest.raises(ConnectionError):
            call(ConnectionError("down"))  # type: ignore[operator]
    with pytest.raises(guards.BreakerOpen):
        call(None)  # type: ignore[operator]
    clock.advance(1.5)
    call(None)  # type: ignore[operator]
    assert breaker.state == "closed"


def _raise_or_pass(exc: BaseException | None) -> None:
    if exc is not None:
        raise exc


async def _araise_or_pass(exc: BaseException | None) -> None:
    if exc is not None:
        raise exc


def _breaker() -> guards.CircuitBreaker:
    return guards.CircuitBreaker(
        window_size=2, minimum_calls=2, open_duration=1.0, half_open_probes=1
    )


def _permit_call(breaker: guards.CircuitBreaker) -> object:
    def call(exc: BaseException | None) -> None:
        with breaker.acquire(operation="by hand"):
            _raise_or_pass(exc)

    return call


def _guarded_call(breaker: guards.CircuitBreaker) -> object:
    @guards.guarded(breaker)
    def stock_lookup(exc: BaseException | None) -> None:
        _raise_or_pass(exc)

    assert isinstance(stock_lookup, guards.GuardedFunction)  # the native path
    return stock_lookup


def _async_guarded_call(breaker: guards.CircuitBreaker) -> object:
    @guards.guarded(breaker)
    async def stock_lookup(exc: BaseException | None) -> None:
        await _araise_or_pass(exc)

    import asyncio

    return lambda exc: asyncio.run(stock_lookup(exc))


@pytest.mark.parametrize(
    "make, operation",
    [
        (lambda b: (lambda exc: b.call(_raise_or_pass, exc)), "_raise_or_pass"),
        (_permit_call, "by hand"),
        (_guarded_call, "stock_lookup"),
        (_async_guarded_call, "stock_lookup"),
    ],
    ids=["breaker.call", "permit by hand", "native guarded", "native guarded async"],
)
def test_native_paths_emit_state_changes_and_refusals(
    clock: guards.FakeClock, events: Events, make: object, operation: str
) -> None:
    breaker = _breaker()
    _trip_and_recover(clock, make(breaker), breaker)  # type: ignore[operator]
    got = [(e.kind, e.old, e.new) if e.kind == "state_change" else (e.kind,) for e in events]
    assert got == [
        ("state_change", "closed", "open"),
        ("refusal",),
        ("state_change", "open", "half_open"),
        ("state_change", "half_open", "closed"),
    ]
    assert all(e.source is breaker for e in events)
    assert all((e.operation or "").endswith(operation) for e in events)
    refusal = next(e for e in events if e.kind == "refusal")
    assert isinstance(refusal.exception, guards.BreakerOpen)


def test_native_refusals_nobody_hears_follow_the_logger_level(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Native code skips an event without calling into Python when no listener would get
    it and the logger said no for its level; raising the logger's level later (which
    clears that answer) or adding a listener is heard at once."""
    bh = guards.Bulkhead(1)
    held = exhaust(bh)

    @guards.guarded(bh)
    def call() -> None:
        raise AssertionError("must not run")

    def refused() -> None:
        with pytest.raises(guards.BulkheadFull):
            call()

    refused()  # nobody listening: the logger is asked once, then remembered
    assert not caplog.records
    with caplog.at_level(logging.DEBUG, "guards"):
        refused()
    assert [r.guards_event.kind for r in caplog.records] == ["refusal"]  # type: ignore[attr-defined]
    caplog.clear()
    refused()
    assert not caplog.records
    got: Events = []
    with guards.events.on("refusal", got.append):
        refused()
    refused()
    assert len(got) == 1 and got[0].source is bh and got[0].operation.endswith("call")
    del held


def test_limit_changes_from_permits_by_hand(clock: guards.FakeClock, events: Events) -> None:
    limiter = guards.Limiter(limit=guards.AimdLimit(), window=0.1, min_window_samples=1)
    for _ in range(4):
        with limiter.acquire(operation="batch") as permit:
            clock.advance(0.05)
            permit.report("overloaded")
    changes = [(e.old, e.new, e.operation) for e in events if e.kind == "limit_change"]
    assert changes and changes[0][0] == 10 and all(op == "batch" for *_, op in changes)
    assert changes[-1][1] == limiter.limit
