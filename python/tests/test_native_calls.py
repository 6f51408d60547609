"""Guarded calls run natively: CircuitBreaker.call, KeyedBreakers.call, Bulkhead.call and
guards.GuardedFunction (what guards.guarded(one guard) decorates a plain function with).
Same outcome rules as guards.guarded; bad input refused before any guard is taken."""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
import pickle
import sys
import weakref
from typing import Any

import guards
import pytest
from guards._deadline import _DEADLINE
from guards.testing import exhaust, trip
from helpers import run_threads


def small_breaker(**kwargs: Any) -> guards.CircuitBreaker:
    """Judges the last 4 calls; opens at 50 % failures for 5 s; one probe."""
    settings: dict[str, Any] = {"window_size": 4, "open_duration": 5.0, "half_open_probes": 1}
    settings.update(kwargs)
    return guards.CircuitBreaker(**settings)


def raiser(exc: BaseException) -> Any:
    def fn(*_args: Any, **_kwargs: Any) -> Any:
        raise exc

    return fn


class Counter:
    def __init__(self, result: Any = "ok") -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.result = result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        return self.result


def guarded_module_level(x: int) -> int:
    """A module-level function for the pickling test."""
    return x + 1


_PICKLED_BREAKER = guards.CircuitBreaker()
guarded_module_level = guards.guarded(_PICKLED_BREAKER)(  # type: ignore[assignment]
    guarded_module_level
)


# ------------------------------------------------------------------ CircuitBreaker.call


def test_breaker_call_passes_arguments_and_counts_a_success(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10)
    fn = Counter(result=42)
    assert br.call(fn, 1, 2, key="k") == 42
    assert fn.calls == [((1, 2), {"key": "k"})]
    s = br.stats()
    assert (s["successes"], s["failures"], s["ignored"]) == (1, 0, 0)


def test_breaker_call_counts_failures_and_reraises_the_same_exception(
    clock: guards.FakeClock,
) -> None:
    br = small_breaker()
    boom = ConnectionError("down")
    for _ in range(4):
        with pytest.raises(ConnectionError) as info:
            br.call(raiser(boom))
        assert info.value is boom
        assert info.value.__traceback__ is not None
    assert br.state == "open"
    fn = Counter()
    with pytest.raises(guards.BreakerOpen) as refused:
        br.call(fn)
    assert fn.calls == []  # refused before the call
    assert refused.value.retry_after == 5.0
    assert br.stats()["rejected_open"] == 1


@pytest.mark.parametrize(
    ("exc", "counted"),
    [
        (ValueError("bad"), "failures"),
        (TimeoutError(), "failures"),
        (guards.DeadlineExceeded("late"), "failures"),
        (guards.RetriesExhausted("gave up"), "failures"),
        (guards.BulkheadFull("inner"), "ignored"),  # another guard's refusal
        (guards.BreakerOpen("inner"), "ignored"),
        (KeyboardInterrupt(), "ignored"),
        (asyncio.CancelledError(), "ignored"),
        (GeneratorExit(), "ignored"),
    ],
)
def test_breaker_call_judges_exceptions_as_guarded_does(
    clock: guards.FakeClock, exc: BaseException, counted: str
) -> None:
    br = small_breaker(window_size=10)
    with pytest.raises(type(exc)):
        br.call(raiser(exc))
    s = br.stats()
    assert s[counted] == 1
    assert s["failures"] + s["ignored"] == 1


def test_abandoned_probe_counts_as_failed(clock: guards.FakeClock) -> None:
    br = small_breaker()
    trip(br)
    clock.advance(5.0)
    with pytest.raises(KeyboardInterrupt):
        br.call(raiser(KeyboardInterrupt()))  # the half-open probe, abandoned
    s = br.stats()
    assert (s["probe_failures"], s["half_open_to_open"]) == (1, 1)
    assert br.state == "open"


def test_probe_success_closes_the_breaker(clock: guards.FakeClock) -> None:
    br = small_breaker()
    trip(br)
    clock.advance(5.0)
    assert br.call(lambda: "probe") == "probe"
    assert br.state == "closed"


def test_a_slow_success_counts_as_slow(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10, slow_call_duration=0.5)
    assert br.call(clock.advance, 0.75) is not None  # the call takes 0.75 s
    assert br.call(lambda: None) is None
    s = br.stats()
    assert (s["successes"], s["slow_calls"]) == (2, 1)


def test_breaker_call_is_reentrant(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10)

    def nested(depth: int) -> int:
        return depth if depth == 0 else br.call(nested, depth - 1) + 1

    assert br.call(nested, 5) == 5
    assert br.stats()["successes"] == 6


def test_breaker_call_from_threads() -> None:
    br = guards.CircuitBreaker(window_size=100)
    run_threads(8, lambda i: [br.call(int, i) for _ in range(200)])
    assert br.stats()["successes"] == 1600


def test_breaker_call_refuses_a_non_callable_before_acquiring() -> None:
    br = guards.CircuitBreaker()
    with pytest.raises(TypeError, match="fn"):
        br.call(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        br.call()  # type: ignore[call-arg]
    assert all(v == 0 for v in br.stats().values())


# ------------------------------------------------------------------ KeyedBreakers.call


def test_keyed_call_judges_each_key_alone(clock: guards.FakeClock) -> None:
    breakers = guards.KeyedBreakers(window_size=4, open_duration=5.0)
    for _ in range(4):
        with pytest.raises(ConnectionError):
            breakers.call("stock", raiser(ConnectionError()))
    assert breakers.state("stock") == "open"
    with pytest.raises(guards.BreakerOpen):
        breakers.call("stock", Counter())
    assert breakers.call(b"cart", lambda x: x * 2, 21) == 42
    assert breakers.call(7, lambda: "seven") == "seven"
    cart = breakers.stats("cart")
    assert cart is not None and cart["successes"] == 1
    assert breakers.stats(7) is not None


def test_keyed_call_refuses_bad_input_and_a_full_set() -> None:
    breakers = guards.KeyedBreakers(slots=4)
    fn = Counter()
    with pytest.raises(TypeError, match="key"):
        breakers.call(1.5, fn)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fn"):
        breakers.call("a", "not callable")  # type: ignore[arg-type]
    for k in range(4):
        breakers.call(k, fn)
    with pytest.raises(RuntimeError, match="full"):
        breakers.call("one more", fn)
    assert len(fn.calls) == 4


# ------------------------------------------------------------------ Bulkhead.call


def test_bulkhead_call_holds_a_slot_only_during_the_call() -> None:
    bh = guards.Bulkhead(max_concurrent=2)
    assert bh.call(lambda: bh.in_flight) == 1
    assert bh.in_flight == 0
    for exc in (ValueError("x"), KeyboardInterrupt(), guards.BreakerOpen("inner")):
        with pytest.raises(type(exc)):
            bh.call(raiser(exc))
        assert bh.in_flight == 0
    s = bh.stats()
    assert (s["acquired"], s["released"], s["rejected"]) == (4, 4, 0)


def test_bulkhead_call_refuses_when_full_without_calling() -> None:
    bh = guards.Bulkhead(max_concurrent=1)
    held = exhaust(bh)
    fn = Counter()
    with pytest.raises(guards.BulkheadFull) as info:
        bh.call(fn)
    assert fn.calls == []
    assert (info.value.in_flight, info.value.max_concurrent) == (1, 1)
    held[0].release()
    assert bh.call(fn) == "ok"


def test_bulkhead_call_is_reentrant() -> None:
    bh = guards.Bulkhead(max_concurrent=2)
    nested: Any = bh.call

    def flight() -> int:
        return bh.in_flight

    assert bh.call(nested, flight) == 2  # nested: two slots
    with pytest.raises(guards.BulkheadFull):
        bh.call(nested, nested, flight)  # a third slot does not exist
    assert bh.in_flight == 0


def test_bulkhead_call_from_threads() -> None:
    bh = guards.Bulkhead(max_concurrent=64)
    run_threads(8, lambda i: [bh.call(int, i) for _ in range(200)])
    s = bh.stats()
    assert (s["acquired"], s["released"], s["in_flight"]) == (1600, 1600, 0)


def test_bulkhead_call_refuses_a_non_callable() -> None:
    bh = guards.Bulkhead()
    with pytest.raises(TypeError, match="fn"):
        bh.call(None)  # type: ignore[arg-type]
    assert bh.stats()["acquired"] == 0


# ------------------------------------------------------------------ GuardedFunction


def test_guarded_decorates_plain_functions_natively() -> None:
    br = guards.CircuitBreaker()

    @guards.guarded(br)
    def get(item: str, *, qty: int = 1) -> str:
        """Get an item."""
        return f"{qty} x {item}"

    assert isinstance(get, guards.GuardedFunction)
    # Taken for the function it guards by code asking inspect.isfunction (Starlette's
    # Route), as a wrapt proxy is; type() tells it apart.
    assert inspect.isfunction(get) and type(get) is guards.GuardedFunction
    assert get.__code__ is get.__wrapped__.__code__  # type: ignore[attr-defined]
    assert get("apple", qty=2) == "2 x apple"
    assert get.__name__ == "get"
    assert get.__doc__ == "Get an item."
    assert get.__qualname__.endswith("get")
    assert get.__module__ == __name__
    assert get.__wrapped__("pear") == "1 x pear"  # type: ignore[attr-defined]
    assert str(inspect.signature(get)) == "(item: 'str', *, qty: 'int' = 1) -> 'str'"
    assert isinstance(get.guarded, guards.guarded(br).__class__)  # type: ignore[attr-defined]
    assert get.guard is br
    assert "get" in repr(get)
    assert not inspect.iscoroutinefunction(get)
    around_len = guards.guarded(guards.Bulkhead())(len)
    assert isinstance(around_len, guards.GuardedFunction)
    assert not inspect.isfunction(around_len)  # len is a builtin: it says what it is
    with pytest.raises(AttributeError):
        around_len.__code__  # noqa: B018
    keyed = guards.guarded(guards.KeyedBreakers(), key="op")(len)
    assert isinstance(keyed, guards.GuardedFunction)


def test_guarded_keeps_python_wrappers_where_the_native_one_does_not_apply() -> None:
    assert not isinstance(guards.guarded(guards.Limiter())(len), guards.GuardedFunction)
    br, bh = guards.CircuitBreaker(), guards.Bulkhead()
    for g in (guards.guarded(br, bh), guards.guarded(br, fallback=None)):
        assert not isinstance(g(len), guards.GuardedFunction)
    for g in (guards.guarded(br, timeout=1),):
        assert not isinstance(g(len), guards.GuardedFunction)


def test_guarded_function_binds_as_a_method() -> None:
    br = guards.CircuitBreaker()

    class Client:
        def __init__(self, base: str) -> None:
            self.base = base

        @guards.guarded(br)
        def get(self, path: str) -> str:
            return self.base + path

    c = Client("http://stock")
    assert c.get("/items") == "http://stock/items"
    assert Client.get(c, "/x") == "http://stock/x"
    assert isinstance(Client.__dict__["get"], guards.GuardedFunction)
    assert Client.get is Client.__dict__["get"]
    assert br.stats()["successes"] == 2


def test_guarded_function_pickles_by_reference() -> None:
    assert pickle.loads(pickle.dumps(guarded_module_level)) is guarded_module_level
    assert guarded_module_level(1) == 2


def test_guarded_function_cycles_are_collected() -> None:
    br = guards.CircuitBreaker()

    def make() -> Any:
        @guards.guarded(br)
        def again(n: int) -> int:
            return 0 if n == 0 else again(n - 1)  # the closure refers to the wrapper

        return again

    f = make()
    assert f(3) == 0
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None


def test_guarded_function_refuses_once_the_inherited_deadline_has_passed(
    clock: guards.FakeClock,
) -> None:
    br, bh = guards.CircuitBreaker(), guards.Bulkhead()
    fn = Counter()
    gb, gh = guards.guarded(br)(fn), guards.guarded(bh)(fn)
    with guards.deadline(1.0):
        assert gb() == "ok" and gh() == "ok"
        clock.advance(1.0)
        for g in (gb, gh):
            with pytest.raises(guards.DeadlineExceeded) as info:
                g()
            assert info.value.reason == "deadline_exceeded"
            assert info.value.retry_after is None and info.value.retry_after_ns is None
            assert "before the call started" in str(info.value)
    assert len(fn.calls) == 2
    assert br.stats()["successes"] == 1 and bh.stats()["acquired"] == 1


def test_guarded_function_deadline_callable() -> None:
    br = guards.CircuitBreaker()
    d = guards.Deadline.after(10.0)

    class Late:
        def is_expired(self) -> bool:
            return True

    assert guards.GuardedFunction(br, len, deadline=lambda: d)("abc") == 3
    assert guards.GuardedFunction(br, len, deadline=lambda: None)("ab") == 2
    with pytest.raises(guards.DeadlineExceeded):
        guards.GuardedFunction(br, len, deadline=lambda: Late())("a")
    with pytest.raises(ZeroDivisionError):
        guards.GuardedFunction(br, len, deadline=lambda: 1 / 0)("a")
    assert br.stats()["successes"] == 2  # the refused calls took nothing
    g = guards.GuardedFunction(br, len, deadline=_DEADLINE.get)
    assert g("abcd") == 4  # no deadline set


def test_guarded_function_with_failure_and_ignore(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10)

    @guards.guarded(br, failure=(ConnectionError, TimeoutError), ignore=KeyError)
    def call(exc: BaseException) -> None:
        raise exc

    assert isinstance(call, guards.GuardedFunction)
    for exc in (KeyError("k"), ValueError("v"), ConnectionError("c"), TimeoutError()):
        with pytest.raises(type(exc)):
            call(exc)
    s = br.stats()
    assert (s["ignored"], s["failures"]) == (2, 2)


@pytest.mark.parametrize(
    ("outcome", "counted"),
    [
        ("success", "successes"),
        ("permanent", "successes"),  # a 4xx: the dependency answered
        ("other_transient", "failures"),
        ("timeout", "failures"),
        ("overloaded", "failures"),
        ("ignored", "ignored"),
        ("rejected", "ignored"),
        ("cancelled", "ignored"),  # an ordinary call (a probe would fail)
    ],
)
def test_classify_returns_an_outcome(clock: guards.FakeClock, outcome: str, counted: str) -> None:
    br = small_breaker(window_size=10)
    g = guards.GuardedFunction(br, raiser(ValueError()), classify=lambda exc: outcome)
    with pytest.raises(ValueError):
        g()
    assert br.stats()[counted] == 1


@pytest.mark.parametrize("bad", ["failure", 9, -1, None, 1.0])
def test_a_bad_classify_result_gives_the_guard_back(bad: Any) -> None:
    br, bh = guards.CircuitBreaker(), guards.Bulkhead()
    for guard in (br, bh):
        g = guards.GuardedFunction(guard, raiser(ValueError("v")), classify=lambda exc: bad)
        with pytest.raises((TypeError, ValueError), match="outcome") as info:
            g()
        assert isinstance(info.value.__context__, ValueError)
    assert br.stats()["ignored"] == 1
    assert bh.in_flight == 0


def test_a_raising_classify_surfaces_chained_to_the_call_error() -> None:
    br, bh = guards.CircuitBreaker(), guards.Bulkhead()
    original = ConnectionError("down")

    def classify(exc: BaseException) -> int:
        raise RuntimeError("classifier bug")

    for guard in (br, bh):
        g = guards.GuardedFunction(guard, raiser(original), classify=classify)
        with pytest.raises(RuntimeError, match="classifier bug") as info:
            g()
        assert info.value.__context__ is original
    assert br.stats()["ignored"] == 1 and br.stats()["failures"] == 0
    assert bh.in_flight == 0


def test_guarded_function_refuses_bad_arguments() -> None:
    br = guards.CircuitBreaker()
    with pytest.raises(TypeError, match="guard"):
        guards.GuardedFunction(object(), len)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="guard"):
        guards.GuardedFunction(guards.Limiter(), len)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fn"):
        guards.GuardedFunction(br, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key"):
        guards.GuardedFunction(guards.KeyedBreakers(), len)
    with pytest.raises(TypeError, match="key"):
        guards.GuardedFunction(br, len, key="op")
    with pytest.raises(TypeError, match="key"):
        guards.GuardedFunction(guards.KeyedBreakers(), len, key=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key"):
        guards.GuardedFunction(guards.KeyedBreakers(), len, key=-1)
    with pytest.raises(TypeError, match="classify"):
        guards.GuardedFunction(br, len, classify=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="deadline"):
        guards.GuardedFunction(br, len, deadline="soon")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        guards.GuardedFunction(br)  # type: ignore[call-arg]
    assert all(v == 0 for v in br.stats().values())


def test_native_calls_and_blocks_read_guard_and_key_alike() -> None:
    """GuardedFunction and native ``with`` blocks (GuardedBase._configure_blocks) take the
    same ``guard``/``key`` and ``classify``/``deadline`` arguments, and refuse them alike
    (a key for a guard that is not keyed included)."""
    from guards import _guards

    def call(guard: Any, **kw: Any) -> None:
        guards.GuardedFunction(guard, len, **kw)

    def block(guard: Any, **kw: Any) -> None:
        _guards.GuardedBase()._configure_blocks(guard, **kw)

    for configure in (call, block):
        needs_key = r"a guards\.KeyedBreakers needs `key` \(the operation's name or number\)"
        with pytest.raises(TypeError, match=needs_key):
            configure(guards.KeyedBreakers())
        with pytest.raises(TypeError, match=r"a guards\.CircuitBreaker, KeyedBreakers or Bulkhead"):
            configure(object())
        with pytest.raises(TypeError, match=r"`key`"):
            configure(guards.KeyedBreakers(), key=2.5)
        with pytest.raises(TypeError, match=r"`classify`.*a callable or None"):
            configure(guards.CircuitBreaker(), classify=3)
        with pytest.raises(TypeError, match=r"`deadline`.*a callable or None"):
            configure(guards.Bulkhead(), deadline="soon")
        configure(guards.KeyedBreakers(), key="op")
    for configure in (call, block):
        with pytest.raises(TypeError, match=r"`key` is only for a guards\.KeyedBreakers"):
            configure(guards.CircuitBreaker(), key="op")


def test_guarded_function_is_reentrant_and_thread_safe() -> None:
    bh = guards.Bulkhead(max_concurrent=3)
    g: Any = None

    def nested(depth: int) -> int:
        return bh.in_flight if depth == 0 else g(depth - 1)

    g = guards.GuardedFunction(bh, nested)
    assert g(2) == 3
    with pytest.raises(guards.BulkheadFull):
        g(3)
    assert bh.in_flight == 0
    br = guards.CircuitBreaker()
    gb = guards.GuardedFunction(br, functools.partial(int, "7"))
    run_threads(8, lambda i: [gb() for _ in range(200)])
    assert br.stats()["successes"] == 1600


def test_native_calls_keep_the_traceback_of_the_callee() -> None:
    br = guards.CircuitBreaker()

    def deep() -> None:
        raise ValueError("from deep")

    g = guards.guarded(br)(deep)
    with pytest.raises(ValueError) as info:
        g()
    names = [frame.name for frame in info.traceback]
    assert "deep" in names


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="refcounts")
def test_native_calls_do_not_leak_references() -> None:
    br, bh = guards.CircuitBreaker(), guards.Bulkhead()
    arg = object()
    before = sys.getrefcount(arg)

    def fail(x: Any, y: Any = None) -> None:
        raise ValueError(x)

    for guard in (br, bh):
        g = guards.GuardedFunction(guard, lambda x, y=None: x)
        gf = guards.GuardedFunction(guard, fail)
        for _ in range(100):
            assert g(arg, y=arg) is arg
            assert guard.call(lambda x: x, arg) is arg
            with pytest.raises(ValueError):
                gf(arg, y=arg)
    assert sys.getrefcount(arg) == before


# ------------------------------------------------------------------ Guarded.call / acall


def test_guarded_call_and_acall_run_natively_with_the_inherited_deadline(
    clock: guards.FakeClock,
) -> None:
    br, kb, bh = guards.CircuitBreaker(), guards.KeyedBreakers(), guards.Bulkhead()
    fn = Counter()

    async def afn(x: int) -> int:
        return x + 1

    for g in (guards.guarded(br), guards.guarded(kb, key="op"), guards.guarded(bh)):
        # a bulkhead's calls run natively; a breaker's judge exceptions in Python (a
        # programming error is not a failure of the dependency)
        assert (g._native is not None) == (g.guards[0] is bh)  # type: ignore[attr-defined]
        assert g.call(fn, 1, k=2) == "ok"
        assert asyncio.run(g.acall(afn, 1)) == 2
        with guards.deadline(1.0):
            clock.advance(2.0)
            with pytest.raises(guards.DeadlineExceeded):
                g.call(fn)
            with pytest.raises(guards.DeadlineExceeded):
                asyncio.run(g.acall(afn, 1))
    assert fn.calls == [((1,), {"k": 2})] * 3
    op = kb.stats("op")
    assert br.stats()["successes"] == 2 and op is not None and op["successes"] == 2
    assert bh.stats()["acquired"] == 2


def test_guarded_call_refuses_a_non_callable_before_taking_anything() -> None:
    br, bh = guards.CircuitBreaker(), guards.Bulkhead()
    for g in (guards.guarded(br), guards.guarded(br, bh), guards.guarded(br, ignore=KeyError)):
        with pytest.raises(TypeError, match="fn"):
            g.call(42)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="fn"):
            asyncio.run(g.acall(42))  # type: ignore[arg-type]
    assert all(v == 0 for v in br.stats().values())
    assert bh.stats()["acquired"] == 0


def test_guarded_call_with_failure_rules_keeps_them() -> None:
    br = guards.CircuitBreaker(window_size=10)
    g = guards.guarded(br, ignore=KeyError)
    assert g._native is None  # type: ignore[attr-defined]
    with pytest.raises(KeyError):
        g.call(raiser(KeyError("k")))
    assert br.stats()["ignored"] == 1


# ------------------------------------------------------------------ with blocks


def test_native_blocks_give_a_guarded_call(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10)
    g = guards.guarded(br)
    with g as call:
        assert isinstance(call, guards.GuardedCall)
        assert call.probe_timeout is None
        assert "open" in repr(call)
    assert "closed" in repr(call)
    for mark, counted in (("failure", "failures"), ("dropped", "failures"), ("ignore", "ignored")):
        with g as call:
            getattr(call, mark)()
        assert br.stats()[counted] >= 1
    with g as call:
        call.failure()
        call.success()  # the last mark wins
    s = br.stats()
    assert (s["successes"], s["failures"], s["ignored"]) == (2, 2, 1)
    assert g.__enter__() is not None
    assert g.__exit__(None, None, None) is None


def test_native_blocks_judge_exceptions_as_guarded_does(clock: guards.FakeClock) -> None:
    br = small_breaker(window_size=10)
    g = guards.guarded(br)
    for exc in (ValueError("v"), guards.BulkheadFull("inner"), KeyboardInterrupt()):
        with pytest.raises(type(exc)) as info:
            with g as call:
                call.ignore()  # an exception decides first
                raise exc
        assert info.value is exc
    s = br.stats()
    assert (s["failures"], s["ignored"]) == (1, 2)
    g2 = guards.guarded(br, ignore=ValueError)
    with pytest.raises(ValueError):
        with g2:
            raise ValueError("ignored by the rule")
    assert br.stats()["ignored"] == 3


def test_native_block_probe(clock: guards.FakeClock) -> None:
    br = small_breaker(probe_timeout=0.25)
    trip(br)
    clock.advance(5.0)
    with guards.guarded(br) as call:
        assert call.probe_timeout == 0.25
    assert br.state == "closed"


def test_blocks_left_out_of_order_and_mixed(clock: guards.FakeClock) -> None:
    b1, b2 = guards.Bulkhead(), guards.Bulkhead()
    g1, g2 = guards.guarded(b1), guards.guarded(b2)
    g1.__enter__()
    g2.__enter__()
    g1.__exit__(None, None, None)  # out of order: b1's slot goes back
    assert b1.in_flight == 0 and b2.in_flight == 1
    g2.__exit__(None, None, None)
    assert b1.in_flight == 0 and b2.in_flight == 0
    with pytest.raises(RuntimeError, match="no open block"):
        g1.__exit__(None, None, None)  # nothing open
    slow = guards.guarded(b1, b2)  # a block of two guards inside a one-guard block, and back
    with g1:
        with slow:
            with g2:
                assert (b1.in_flight, b2.in_flight) == (2, 2)
    assert b1.in_flight == 0 and b2.in_flight == 0


def test_a_native_block_never_exited_gives_the_guard_back() -> None:
    bh = guards.Bulkhead(max_concurrent=1)
    g = guards.guarded(bh)

    def lose() -> None:
        import contextvars

        contextvars.copy_context().run(g.__enter__)  # entered in a context then dropped

    lose()
    gc.collect()
    assert bh.in_flight == 0


def test_native_blocks_refuse_once_the_deadline_has_passed(clock: guards.FakeClock) -> None:
    bh = guards.Bulkhead()
    g = guards.guarded(bh)
    with guards.deadline(1.0):
        clock.advance(1.0)
        with pytest.raises(guards.DeadlineExceeded, match="before the call started"):
            with g:
                raise AssertionError("must not run")
    assert bh.stats()["acquired"] == 0


def test_native_blocks_with_keyed_breakers_and_refusals(clock: guards.FakeClock) -> None:
    breakers = guards.KeyedBreakers(window_size=4, open_duration=5.0)
    g = guards.guarded(breakers, key="stock")
    for _ in range(4):
        with pytest.raises(ConnectionError):
            with g:
                raise ConnectionError()
    with pytest.raises(guards.BreakerOpen):
        with g:
            raise AssertionError("must not run while open")
    bh = guards.Bulkhead(max_concurrent=1)
    held = exhaust(bh)
    with pytest.raises(guards.BulkheadFull):
        with guards.guarded(bh):
            raise AssertionError("must not run when full")
    held[0].release()


def test_a_raising_classify_in_a_native_block() -> None:
    bh = guards.Bulkhead()

    def bad(exc: BaseException) -> bool:
        raise RuntimeError("classifier bug")

    g = guards.guarded(bh, failure=bad)
    original = ValueError("v")
    with pytest.raises(RuntimeError, match="classifier bug") as info:
        with g:
            raise original
    assert info.value.__context__ is original
    assert bh.in_flight == 0


def test_native_blocks_in_threads_and_tasks() -> None:
    bh = guards.Bulkhead(max_concurrent=64)
    g = guards.guarded(bh)

    def work(i: int) -> None:
        for _ in range(200):
            with g:
                with g:
                    pass

    run_threads(8, work)

    async def task() -> None:
        for _ in range(50):
            with g:
                await asyncio.sleep(0)
                async with g:
                    await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(*(task() for _ in range(8)))

    asyncio.run(main())
    s = bh.stats()
    assert s["acquired"] == s["released"] == 8 * 400 + 8 * 100
    assert bh.in_flight == 0


# ------------------------------------------------------------------ the deadline gate


def test_every_write_of_the_deadline_goes_through_publish() -> None:
    """The native calls skip reading the deadline ContextVar until a first publish():
    no module of the package may set it another way."""
    import pathlib

    package = pathlib.Path(guards.__file__).parent
    for path in package.glob("*.py"):
        text = path.read_text()
        for line in text.splitlines():
            if "_DEADLINE.set(" in line:
                assert path.name == "_deadline.py" and line.strip() == "return _DEADLINE.set(d)"


def test_a_gated_deadline_is_read_once_one_was_published() -> None:
    import subprocess

    script = """
import guards
from guards import _guards as n
calls = []
def deadline():
    calls.append(1)
    return None
br = guards.CircuitBreaker()
gated = guards.GuardedFunction(br, len, deadline=deadline, deadline_gated=True)
plain = guards.GuardedFunction(br, len, deadline=deadline)
assert not n._deadline_published()
assert gated("ab") == 2 and calls == []      # nothing published yet: not read
assert plain("ab") == 2 and calls == [1]     # not gated: always read
with guards.deadline(5.0):
    assert n._deadline_published()
    assert gated("ab") == 2 and calls == [1, 1]
assert gated("ab") == 2 and calls == [1, 1, 1]
print("ok")
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
