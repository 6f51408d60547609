"""@guards.retry: sync and async, decisions from the native RetryPolicy, budgets,
deadlines, cancellation, classification, statistics and bad input."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import guards
import pytest
from guards.testing import AsyncFlaky, Flaky
from helpers import config_error, run_threads, type_error

S = 1_000_000_000
MS = 1_000_000

NO_JITTER = {"base": 0.1, "multiplier": 2.0, "jitter": "none"}


class Recorder:
    """An on_retry callback keeping every RetryState."""

    def __init__(self) -> None:
        self.states: list[guards.RetryState] = []

    def __call__(self, state: guards.RetryState) -> None:
        self.states.append(state)


# ------------------------------------------------------------------ sync basics


def test_plain_decorator_retries_transient_errors(clock: guards.FakeClock) -> None:
    flaky = Flaky(ConnectionResetError, times=2, result="ok")
    fn = guards.retry(flaky)
    assert fn() == "ok"
    assert flaky.calls == 3
    stats = fn.retry.stats()
    assert (stats["calls"], stats["attempts"], stats["retries"], stats["successes"]) == (1, 3, 2, 1)
    assert stats["failures"] == 0


def test_waits_come_from_the_native_backoff_and_advance_the_fake_clock(
    clock: guards.FakeClock,
) -> None:
    rec = Recorder()
    start = clock.now()
    fn = guards.retry(max_attempts=4, backoff=NO_JITTER, on_retry=rec)(Flaky(TimeoutError, times=3))
    fn()
    assert [s.delay_ns for s in rec.states] == [100 * MS, 200 * MS, 400 * MS]
    assert [s.attempt for s in rec.states] == [1, 2, 3]
    assert all(s.outcome == "timeout" for s in rec.states)
    assert clock.now() - start == 700 * MS  # slept on the fake clock, not for real


def test_jittered_waits_match_the_policy_seeded_the_same_way(clock: guards.FakeClock) -> None:
    rec = Recorder()
    fn = guards.retry(max_attempts=4, seed=42, on_retry=rec)(Flaky(ConnectionError, times=3))
    fn()
    # The same decisions, asked of a native policy seeded alike, give the same waits.
    policy = guards.RetryPolicy(max_attempts=4, seed=42)
    prev = 0
    expected = []
    for attempt in (1, 2, 3):
        d = policy.decide(
            attempt, "connection_error", prev_delay=guards.Nanos(prev), now=clock.now()
        )
        expected.append(d.delay_ns)
        prev = d.delay_ns
    assert [s.delay_ns for s in rec.states] == expected


def test_attempts_exhausted_raises_retries_exhausted_with_the_cause(
    clock: guards.FakeClock,
) -> None:
    flaky = Flaky(ConnectionError, times=10)
    fn = guards.retry(max_attempts=3)(flaky)
    with pytest.raises(guards.RetriesExhausted) as info:
        fn()
    err = info.value
    assert err.attempts == 3
    assert err.reason == "attempts_exhausted"
    assert isinstance(err.__cause__, ConnectionError)
    assert isinstance(err, guards.GuardError)
    assert flaky.calls == 3
    stats = fn.retry.stats()
    assert (stats["calls"], stats["attempts"], stats["failures"], stats["attempts_exhausted"]) == (
        1,
        3,
        1,
        1,
    )


def test_reraise_raises_the_last_exception_itself(clock: guards.FakeClock) -> None:
    fn = guards.retry(max_attempts=2, reraise=True)(Flaky(KeyError, times=5))
    with pytest.raises(KeyError):
        fn()


def test_a_single_attempt_policy_never_retries(clock: guards.FakeClock) -> None:
    flaky = Flaky(ConnectionError, times=1, result=1)
    with pytest.raises(guards.RetriesExhausted):
        guards.retry(max_attempts=1)(flaky)()
    assert flaky.calls == 1


def test_arguments_and_return_value_pass_through(clock: guards.FakeClock) -> None:
    @guards.retry
    def add(a: int, b: int = 0, *, c: int = 0) -> int:
        return a + b + c

    assert add(1, 2, c=3) == 6
    assert add.__name__ == "add"
    assert isinstance(add.retry, guards.Retry)


def test_retry_as_a_runner(clock: guards.FakeClock) -> None:
    r = guards.Retry(max_attempts=3)
    assert r.call(Flaky(ConnectionError, times=1, result="x")) == "x"
    assert r.stats()["retries"] == 1


# ------------------------------------------------------------------ classification


def test_permanent_errors_are_raised_at_once(clock: guards.FakeClock) -> None:
    flaky = Flaky(ValueError, times=5)
    fn = guards.retry(give_up_on=ValueError)(flaky)
    with pytest.raises(ValueError):
        fn()
    assert flaky.calls == 1
    assert fn.retry.stats()["permanent"] == 1


def test_retry_on_limits_what_is_retried(clock: guards.FakeClock) -> None:
    only_conn = guards.retry(retry_on=(ConnectionError,))
    other = Flaky(KeyError, times=5)
    with pytest.raises(KeyError):
        only_conn(other)()
    assert other.calls == 1
    conn = Flaky(ConnectionError, times=1, result="ok")
    assert guards.retry(retry_on=lambda e: isinstance(e, ConnectionError))(conn)() == "ok"


def test_refusals_of_inner_guards_are_never_retried(clock: guards.FakeClock) -> None:
    # Retry in one layer only: a local refusal is `rejected`, an inner retry's give-up
    # `overloaded`; neither is retried, both are raised as they are.
    for err, reason in (
        (guards.BulkheadFull("full"), "rejected"),
        (guards.BreakerOpen("open"), "rejected"),
        (guards.RetriesExhausted("inner gave up"), "overloaded"),
        (guards.Throttled("slow down"), "rejected"),
    ):
        flaky = Flaky(err, times=5)
        fn = guards.retry(max_attempts=5)(flaky)
        with pytest.raises(type(err)):
            fn()
        assert flaky.calls == 1, err
        assert fn.retry.stats()[reason] == 1


def test_overloaded_on(clock: guards.FakeClock) -> None:
    class ShedError(Exception):
        pass

    flaky = Flaky(ShedError, times=5)
    with pytest.raises(ShedError):
        guards.retry(overloaded_on=ShedError)(flaky)()
    assert flaky.calls == 1


def test_classify_callable_and_retry_after(clock: guards.FakeClock) -> None:
    rec = Recorder()

    def classify(exc: BaseException) -> Any:
        if isinstance(exc, LookupError):
            return ("throttled", 2.5)
        return None  # default rules

    fn = guards.retry(max_attempts=3, classify=classify, on_retry=rec)(Flaky(KeyError, times=1))
    fn()
    assert rec.states[0].outcome == "throttled"
    assert rec.states[0].delay_ns == 2_500 * MS  # never shorter than the Retry-After


def test_exception_retry_after_attribute_is_honoured(clock: guards.FakeClock) -> None:
    class SlowDown(Exception):
        retry_after = 1.0

    rec = Recorder()
    guards.retry(on_retry=rec)(Flaky(SlowDown, times=1))()
    assert rec.states[0].outcome == "throttled"
    assert rec.states[0].delay_ns >= 1 * S


def test_retry_after_longer_than_allowed_gives_up(clock: guards.FakeClock) -> None:
    class SlowDown(Exception):
        retry_after = 60.0

    flaky = Flaky(SlowDown, times=5)
    with pytest.raises(guards.RetriesExhausted) as info:
        guards.retry(max_retry_after=10.0)(flaky)()
    assert info.value.reason == "retry_after_too_long"
    assert flaky.calls == 1


def test_unkeyed_side_effects_are_not_retried(clock: guards.FakeClock) -> None:
    flaky = Flaky(TimeoutError, times=5)
    fn = guards.retry(idempotency=False)(flaky)
    with pytest.raises(TimeoutError):
        fn()
    assert flaky.calls == 1
    assert fn.retry.stats()["not_idempotent"] == 1
    keyed = Flaky(TimeoutError, times=1, result="once")
    assert guards.retry(idempotency="keyed_side_effect")(keyed)() == "once"


def test_classes_the_policy_does_not_retry(clock: guards.FakeClock) -> None:
    flaky = Flaky(TimeoutError, times=5)
    fn = guards.retry(retry_timeouts=False)(flaky)
    with pytest.raises(TimeoutError):
        fn()
    assert fn.retry.stats()["not_retryable"] == 1


class _Response:
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.status_code = status
        self.headers = headers or {}


class _HTTPStatusError(Exception):
    def __init__(self, response: _Response) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


def test_http_errors_are_classified_by_status_and_retry_after() -> None:
    assert guards.classify_exception(_HTTPStatusError(_Response(503, {"Retry-After": "3"}))) == (
        "throttled",
        3.0,
    )
    assert guards.classify_exception(_HTTPStatusError(_Response(503))) == ("other_transient", None)
    assert guards.classify_exception(_HTTPStatusError(_Response(429, {"retry-after": "1"}))) == (
        "throttled",
        1.0,
    )
    assert guards.classify_exception(_HTTPStatusError(_Response(404))) == ("permanent", None)
    assert guards.classify_exception(_HTTPStatusError(_Response(502))) == ("other_transient", None)


def test_default_classification_table() -> None:
    class ReadTimeout(Exception):  # an HTTP client's timeout, by name
        pass

    class ConnectError(Exception):
        pass

    assert guards.classify_exception(TimeoutError()) == ("timeout", None)
    assert guards.classify_exception(asyncio.TimeoutError()) == ("timeout", None)
    assert guards.classify_exception(guards.DeadlineExceeded("late")) == ("timeout", None)
    assert guards.classify_exception(ReadTimeout()) == ("timeout", None)
    assert guards.classify_exception(ConnectionRefusedError()) == ("connection_error", None)
    assert guards.classify_exception(ConnectError()) == ("connection_error", None)
    assert guards.classify_exception(guards.BudgetExhausted("no")) == ("rejected", None)
    inner = guards.BudgetExhausted("an inner retry gave up")
    inner.attempts = 2  # type: ignore[attr-defined]
    assert guards.classify_exception(inner) == ("overloaded", None)
    assert guards.classify_exception(RuntimeError()) == ("other_transient", None)
    # Programming errors are the caller's bug: `ignored`, never retried.
    for bug in (KeyError("k"), TypeError("t"), AttributeError("a"), ZeroDivisionError()):
        assert guards.classify_exception(bug) == ("ignored", None)
    assert guards.classify_exception(KeyboardInterrupt()) == ("cancelled", None)
    assert guards.classify_exception(asyncio.CancelledError()) == ("cancelled", None)


def test_http_outcome_table() -> None:
    assert guards.http_outcome(200) == ("success", None)
    assert guards.http_outcome(304) == ("success", None)
    assert guards.http_outcome(408) == ("timeout", None)
    assert guards.http_outcome(429) == ("throttled", None)
    assert guards.http_outcome(429, "7") == ("throttled", 7.0)
    assert guards.http_outcome(503, 2) == ("throttled", 2.0)
    assert guards.http_outcome(500) == ("other_transient", None)
    assert guards.http_outcome(400) == ("permanent", None)
    assert guards.http_outcome(503, "Wed, 21 Oct 2015 07:28:00 GMT") == ("throttled", 0.0)  # past
    assert guards.http_outcome(503, "soon") == ("other_transient", None)  # unreadable: ignored
    with type_error("status"):
        guards.http_outcome("200")  # type: ignore[arg-type]
    # A status outside 100..=599 is a malformed answer: a failure that may go away.
    assert guards.http_outcome(99) == ("other_transient", None)
    assert guards.http_outcome(10**30) == ("other_transient", None)


def test_http_outcome_reads_an_http_date_at_a_given_wall_clock() -> None:
    date = "Wed, 21 Oct 2015 07:28:00 GMT"  # 1445412480 in unix seconds
    assert guards.http_outcome(503, date, now_unix=1445412480 - 30) == ("throttled", 30.0)
    assert guards.http_outcome(503, date, now_unix=1445412480 + 30) == ("throttled", 0.0)
    assert guards.http_outcome(503, "5", now_unix=0) == ("throttled", 5.0)  # seconds: no clock
    with type_error("now_unix"):
        guards.http_outcome(503, date, now_unix="now")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="now_unix"):
        guards.http_outcome(503, date, now_unix=-1)


def test_http_dates_both_ways() -> None:
    assert guards.format_http_date(784111777) == "Sun, 06 Nov 1994 08:49:37 GMT"
    assert guards.parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777
    assert guards.parse_http_date(b"Sunday, 06-Nov-94 08:49:37 GMT", now_unix=10**9) == 784111777
    assert guards.parse_http_date("soon") is None
    assert guards.format_http_date(2**63) is None  # after the year 9999
    with type_error("unix"):
        guards.format_http_date("0")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unix"):
        guards.format_http_date(-1)
    with type_error("value"):
        guards.parse_http_date(5)  # type: ignore[arg-type]


def test_the_outcome_table_is_cores() -> None:
    assert guards.OUTCOMES[0] == "success" and len(guards.OUTCOMES) == 10
    assert len(set(guards.OUTCOMES)) == 10
    v = guards.outcome_verdicts("timeout")
    assert v["number"] == guards.OUTCOMES.index("timeout")
    assert (v["breaker_call"], v["bulkhead"], v["retry"]) == ("failure", "release", {"retry": "timeout"})
    assert guards.outcome_verdicts("permanent")["retry"] == {"give_up": "permanent"}
    assert guards.outcome_verdicts("success")["brownout"] is None
    with pytest.raises(ValueError, match="outcome"):
        guards.outcome_verdicts("nope")  # type: ignore[arg-type]
    with type_error("outcome"):
        guards.outcome_verdicts(3)  # type: ignore[arg-type]


def test_retry_on_result_returns_the_last_result_when_giving_up(clock: guards.FakeClock) -> None:
    responses = [_Response(503, {"Retry-After": "1"}), _Response(502), _Response(500)]
    calls = iter(responses)

    @guards.retry(
        max_attempts=3,
        retry_on_result=lambda r: guards.http_outcome(r.status_code, r.headers.get("Retry-After")),
    )
    def get() -> _Response:
        return next(calls)

    assert get() is responses[2]
    stats = get.retry.stats()
    assert (stats["attempts"], stats["failures"], stats["attempts_exhausted"]) == (3, 1, 1)


def test_retry_on_result_accepts_booleans(clock: guards.FakeClock) -> None:
    values = iter([None, None, 5])
    fn = guards.retry(retry_on_result=lambda r: r is None)(lambda: next(values))
    assert fn() == 5


# ------------------------------------------------------------------ deadlines


def test_overall_timeout_gives_up_with_deadline_exceeded(clock: guards.FakeClock) -> None:
    def slow_failure() -> None:
        clock.advance(0.4)
        raise ConnectionError("down")

    fn = guards.retry(max_attempts=10, timeout=1.0, backoff=NO_JITTER)(slow_failure)
    with pytest.raises(guards.DeadlineExceeded) as info:
        fn()
    err = info.value
    assert isinstance(err, TimeoutError)
    assert err.reason == "deadline_exceeded"
    assert isinstance(err.__cause__, ConnectionError)
    # 0.4 fail, 0.1 wait, 0.4 fail: 0.9 s gone, no room for 0.2 s wait plus an attempt
    assert err.attempts == 2
    assert fn.retry.stats()["deadline_exceeded"] == 1


def test_each_attempt_publishes_its_own_deadline(clock: guards.FakeClock) -> None:
    seen: list[int | None] = []

    @guards.retry(max_attempts=3, attempt_timeout=0.2, margin=0.01, backoff=NO_JITTER)
    def call() -> str:
        seen.append(guards.time_left_ns())
        if len(seen) < 3:
            raise ConnectionError("down")
        return "ok"

    assert call() == "ok"
    assert seen == [190 * MS] * 3
    assert guards.current_deadline() is None


def test_attempts_inherit_the_callers_deadline(clock: guards.FakeClock) -> None:
    seen: list[int | None] = []

    @guards.retry(timeout=10.0, attempt_timeout=5.0)
    def call() -> None:
        seen.append(guards.time_left_ns())

    with guards.deadline(0.3):
        call()
    assert seen == [300 * MS]  # min(attempt 5 s, inherited 0.3 s)


def test_a_deadline_already_passed_starts_no_attempt(clock: guards.FakeClock) -> None:
    flaky = Flaky(ConnectionError, times=0, result="never")
    fn = guards.retry(timeout=1.0)(flaky)
    with guards.deadline(0.5):
        clock.advance(1.0)
        with pytest.raises(guards.DeadlineExceeded) as info:
            fn()
    assert flaky.calls == 0
    assert info.value.attempts == 0
    assert fn.retry.stats()["not_started"] == 1


def test_sync_attempt_is_not_interrupted_and_its_late_result_is_kept(
    clock: guards.FakeClock,
) -> None:
    @guards.retry(attempt_timeout=0.1)
    def slow() -> str:
        clock.advance(5.0)  # far past the attempt's budget
        return "late"

    assert slow() == "late"


# ------------------------------------------------------------------ budget


def test_budget_refusal_gives_up_with_budget_exhausted(clock: guards.FakeClock) -> None:
    budget = guards.RetryBudget(mode="token_bucket", capacity=1.0, ratio=0.0)
    fn = guards.retry(max_attempts=5, budget=budget)(Flaky(ConnectionError, times=10))
    with pytest.raises(guards.BudgetExhausted) as info:
        fn()
    assert info.value.reason == "budget_exhausted"
    assert info.value.attempts == 2  # one retry paid, the next refused
    assert budget.stats()["withdrawals"] == 1
    assert budget.stats()["refusals"] == 1
    assert fn.retry.stats()["budget_exhausted"] == 1


def test_budget_is_told_every_event(clock: guards.FakeClock) -> None:
    budget = guards.RetryBudget(mode="token_bucket")
    fn = guards.retry(budget=budget)(Flaky(ConnectionError, times=1))
    fn()
    s = budget.stats()
    assert (s["deposits"], s["withdrawals"]) == (1, 1)
    assert budget.tokens() == pytest.approx(10.0 - 1.0)


def test_aws_quota_refunds_a_successful_retry(clock: guards.FakeClock) -> None:
    quota = guards.RetryBudget(mode="aws")
    before = quota.tokens()
    fn = guards.retry(budget=quota)(Flaky(ConnectionError, times=1))
    fn()
    assert quota.stats()["refunds"] == 1
    assert quota.tokens() == before


def test_budget_shared_by_threads_pays_for_at_most_its_tokens(clock: guards.FakeClock) -> None:
    budget = guards.RetryBudget(mode="token_bucket", capacity=5.0, ratio=0.0)

    @guards.retry(max_attempts=3, budget=budget)
    def always_fails() -> None:
        raise ConnectionError("down")

    def body(_: int) -> str:
        try:
            always_fails()
        except guards.GuardError as e:
            return type(e).__name__
        return "ok"

    outcomes = run_threads(8, body)
    assert budget.stats()["withdrawals"] == 5  # the bucket held exactly five retries
    stats = always_fails.retry.stats()
    assert stats["calls"] == 8
    assert stats["retries"] == 5
    assert set(outcomes) <= {"RetriesExhausted", "BudgetExhausted"}


# ------------------------------------------------------------------ threads


def test_one_decorated_function_shared_by_threads_counts_every_call(
    clock: guards.FakeClock,
) -> None:
    lock = threading.Lock()
    seen = {"n": 0}

    @guards.retry(max_attempts=3)
    def sometimes() -> int:
        with lock:
            seen["n"] += 1
            n = seen["n"]
        if n % 2:
            raise ConnectionError("odd")
        return n

    run_threads(8, lambda i: [sometimes() for _ in range(50)])
    stats = sometimes.retry.stats()
    assert stats["calls"] == 400
    assert stats["successes"] == 400
    assert stats["attempts"] == seen["n"]
    assert stats["attempts"] == stats["calls"] + stats["retries"]


# ------------------------------------------------------------------ asyncio


@pytest.mark.asyncio
async def test_async_retries_sleep_on_the_fake_clock(clock: guards.FakeClock) -> None:
    rec = Recorder()
    start = clock.now()
    flaky = AsyncFlaky(ConnectionError, times=2, result="ok")
    fn = guards.retry(max_attempts=3, backoff=NO_JITTER, on_retry=rec)(flaky)
    assert await fn() == "ok"
    assert flaky.calls == 3
    assert clock.now() - start == 300 * MS
    assert fn.retry.stats()["successes"] == 1


@pytest.mark.asyncio
async def test_async_attempt_past_its_budget_is_cancelled_and_retried() -> None:
    attempts: list[str] = []

    @guards.retry(max_attempts=3, attempt_timeout=0.02, backoff={"base": 0.001, "jitter": "none"})
    async def sometimes_hangs() -> str:
        attempts.append("start")
        try:
            if attempts.count("start") < 3:
                await asyncio.sleep(30)  # abandoned: must be cancelled
            return "third time"
        finally:
            attempts.append("end")

    assert await sometimes_hangs() == "third time"
    assert attempts == ["start", "end"] * 3  # each abandoned attempt was cancelled
    stats = sometimes_hangs.retry.stats()
    assert (stats["attempt_timeouts"], stats["successes"], stats["attempts"]) == (2, 1, 3)


@pytest.mark.asyncio
async def test_async_attempt_timeouts_exhaust_the_attempts() -> None:
    @guards.retry(max_attempts=2, attempt_timeout=0.01, backoff={"base": 0.001})
    async def hangs() -> None:
        await asyncio.sleep(30)

    with pytest.raises(guards.RetriesExhausted) as info:
        await hangs()
    cause = info.value.__cause__
    assert isinstance(cause, guards.DeadlineExceeded)
    assert cause.reason == "attempt_timeout"
    assert info.value.attempts == 2


@pytest.mark.asyncio
async def test_async_cancellation_by_the_caller_is_never_retried() -> None:
    started = asyncio.Event()
    calls = {"n": 0}

    @guards.retry(max_attempts=5)
    async def hangs() -> None:
        calls["n"] += 1
        started.set()
        await asyncio.sleep(30)

    task = asyncio.ensure_future(hangs())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert calls["n"] == 1
    assert hangs.retry.stats()["cancelled"] == 1


@pytest.mark.asyncio
async def test_async_cancellation_during_the_wait_stops_retrying() -> None:
    calls = {"n": 0}

    @guards.retry(max_attempts=5, backoff={"base": 30.0, "jitter": "none", "cap": 60.0})
    async def fails() -> None:
        calls["n"] += 1
        raise ConnectionError("down")

    task = asyncio.ensure_future(fails())
    for _ in range(5):
        await asyncio.sleep(0)  # let it fail once and start waiting 30 s
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert calls["n"] == 1


@pytest.mark.asyncio
async def test_async_attempt_sees_its_deadline(clock: guards.FakeClock) -> None:
    @guards.retry(attempt_timeout=2.0)
    async def call() -> int | None:
        return guards.time_left_ns()

    assert await call() == 2 * S


@pytest.mark.asyncio
async def test_custom_async_sleep_is_awaited() -> None:
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    fn = guards.retry(backoff=NO_JITTER, sleep=fake_sleep)(AsyncFlaky(ConnectionError, times=2))
    await fn()
    assert waits == [0.1, 0.2]


# ------------------------------------------------------------------ bad input


def test_bad_policy_settings_name_the_field() -> None:
    with config_error("max_attempts"):
        guards.retry(max_attempts=0)
    with config_error("backoff.base"):
        guards.retry(backoff={"base": -1.0})
    with type_error("max_attempts"):
        guards.retry(max_attempts="3")  # type: ignore[arg-type]
    with type_error("retry_timeouts"):
        guards.retry(retry_timeouts=1)  # type: ignore[arg-type]


def test_bad_layer_settings_name_the_field() -> None:
    with config_error("attempt_timeout", "zero"):
        guards.retry(attempt_timeout=0)
    with config_error("timeout", "negative"):
        guards.retry(timeout=-1)
    with type_error("timeout"):
        guards.retry(timeout="1s")
    with config_error("margin", "inconsistent"):
        guards.retry(attempt_timeout=0.1, margin=0.1)
    with config_error("idempotency", "out_of_range"):
        guards.retry(idempotency="maybe")
    with type_error("idempotency"):
        guards.retry(idempotency=1)  # type: ignore[arg-type]
    with type_error("classify"):
        guards.retry(classify=5)  # type: ignore[arg-type]
    with type_error("on_retry"):
        guards.retry(on_retry="print")  # type: ignore[arg-type]
    with type_error("retry_on"):
        guards.retry(retry_on=5)  # type: ignore[arg-type]
    with type_error("retry_on"):
        guards.retry(retry_on=(ValueError, "KeyError"))  # type: ignore[arg-type]
    with type_error("give_up_on"):
        guards.retry(give_up_on=int)  # type: ignore[arg-type]
    with type_error("budget"):
        guards.retry(budget=3)
    with type_error("policy"):
        guards.retry(policy="fast")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`max_attempts`"):
        guards.retry(policy=guards.RetryPolicy(), max_attempts=2)
    with type_error("reraise"):
        guards.retry(reraise=1)  # type: ignore[arg-type]
    with type_error("fn"):
        guards.retry()(42)  # type: ignore[arg-type]


def test_bad_classifier_answers_are_reported(clock: guards.FakeClock) -> None:
    with pytest.raises(ValueError, match="`classify` returned 'flaky'"):
        guards.retry(classify=lambda e: "flaky")(Flaky(KeyError))()
    with type_error("classify"):
        guards.retry(classify=lambda e: 3)(Flaky(KeyError))()
    with pytest.raises(ValueError, match="`retry_after`"):
        guards.retry(classify=lambda e: ("throttled", -1))(Flaky(KeyError))()


@pytest.mark.asyncio
async def test_async_attempt_under_a_scope_without_deadline_is_not_cancelled() -> None:
    @guards.retry
    async def call() -> str:
        await asyncio.sleep(0.001)
        return "done"

    async with guards.deadline():  # publishes "no deadline"
        assert await call() == "done"
    assert call.retry.stats()["attempt_timeouts"] == 0


# ------------------------------------------------------------------ guards.testing

from guards.testing import fake_clock  # noqa: E402,F401  (a pytest fixture for users)


def test_fake_clock_fixture_installs_a_clock(fake_clock: guards.FakeClock) -> None:  # noqa: F811
    assert guards.current_clock() is fake_clock
    assert guards.now_ns() == S
    guards.retry(backoff=NO_JITTER)(Flaky(ConnectionError, times=1))()
    assert fake_clock.now() == S + 100 * MS


def test_flaky_helpers() -> None:
    f = Flaky([KeyError("a"), ValueError("b")], result=3)
    with pytest.raises(KeyError):
        f()
    with pytest.raises(ValueError):
        f()
    assert f() == 3
    assert f.calls == 3
    never = Flaky(ConnectionError, times=0, result="x")
    assert never() == "x"
    with type_error("errors"):
        Flaky(5)
    with type_error("errors"):
        Flaky([KeyError, "oops"])
    with config_error("times", "negative"):
        Flaky(KeyError, times=-1)
    with type_error("times"):
        Flaky(KeyError, times=1.5)  # type: ignore[arg-type]


def test_installed_clock_helper() -> None:
    from guards.testing import installed_clock

    with installed_clock(now=5) as c:
        assert guards.now_ns() == 5
        c.advance(ns=1)
        assert guards.now_ns() == 6
    assert guards.current_clock() is None
    with type_error("now"):
        with installed_clock(now=1.5):  # type: ignore[arg-type]
            pass


# ------------------------------------------------------------------ decoration, interrupts, typing


def test_retry_refuses_generator_functions() -> None:
    """Regression: `@retry` on a generator function was accepted and retried nothing (the
    body runs while the generator is iterated, after the decorated call returned)."""

    def gen() -> Any:
        yield 1

    async def agen() -> Any:
        yield 1

    for fn in (gen, agen):
        with pytest.raises(TypeError, match="generator function"):
            guards.retry(fn)
        with pytest.raises(TypeError, match="generator function"):
            guards.retry(max_attempts=2)(fn)


def test_keyboard_interrupt_is_counted_as_cancelled() -> None:
    """Regression: a KeyboardInterrupt inside a sync `@retry` call left no trace in the
    stats."""

    @guards.retry
    def first() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        first()
    s = first.retry.stats()
    assert (s["calls"], s["attempts"], s["cancelled"]) == (1, 1, 1)

    attempts: list[int] = []

    @guards.retry(max_attempts=3, timeout=60.0, backoff={"base": 1e-6, "cap": 1e-6})
    def later() -> None:  # the slow path (a timeout of its own)
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("transient")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        later()
    s = later.retry.stats()
    assert (s["calls"], s["cancelled"], s["successes"], s["failures"]) == (1, 1, 0, 0)
    with pytest.raises(KeyboardInterrupt):
        guards.Retry().call(first.__wrapped__)  # type: ignore[attr-defined]


def test_retry_called_with_a_function_and_settings_is_refused() -> None:
    with pytest.raises(TypeError, match="not both"):
        guards.retry(lambda: 1, max_attempts=2)  # type: ignore[call-overload]


def test_mypy_catches_a_misspelled_retry_setting(tmp_path: Any) -> None:
    """`guards.retry` is typed: no `**kwargs: Any`, so a misspelled setting is an error
    for mypy, not a silent default."""
    mypy_api = pytest.importorskip("mypy.api")
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import guards\n"
        "@guards.retry(max_atempts=3)\n"
        "def get() -> int:\n"
        "    return 1\n"
    )
    good = tmp_path / "good.py"
    good.write_text(
        "import guards\n"
        "@guards.retry(max_attempts=3, timeout=2.0, retry_on=ConnectionError)\n"
        "def get() -> int:\n"
        "    return 1\n"
        "n: int = get()\n"
        "@guards.retry\n"
        "async def aget() -> str:\n"
        "    return 'x'\n"
    )
    cache = tmp_path / "cache"
    out, err, status = mypy_api.run(
        [str(good), "--cache-dir", str(cache), "--no-error-summary", "--strict"]
    )
    assert status == 0, out + err
    out, err, status = mypy_api.run([str(bad), "--cache-dir", str(cache)])
    assert status == 1, out + err
    assert "max_atempts" in out or "No overload variant" in out, out


# ------------------------------------------------------------------ phase 2 (native crate)


def test_http_outcome_never_raises_on_a_remote_retry_after() -> None:
    # Garbage is no Retry-After (core's `http`): a 503 without one is other_transient.
    for value in ("²", "٣", "-5", "1.5", "5s", "", "Sun, 06 Nov 1994 08:49:37 CET", b"\xff"):
        assert guards.http_outcome(503, value) == ("other_transient", None), value
    # A number too large to hold saturates (about 584 years): still a Retry-After, which a
    # retry policy gives up on rather than wait (see the next test).
    for value in ("9" * 5000, "99999999999", "Fri, 31 Dec 9999 23:59:59 GMT", 1e300):
        outcome, after = guards.http_outcome(503, value)
        assert outcome == "throttled" and after is not None and after > 5e8, value
    assert guards.http_outcome(429, float("inf")) == ("throttled", None)  # not a number


def test_a_huge_retry_after_gives_up_with_a_reason() -> None:
    class Unavailable(Exception):
        status_code = 503
        headers = {"Retry-After": "99999999999"}

    @guards.retry(max_attempts=2)
    def call() -> None:
        raise Unavailable()

    with pytest.raises(guards.RetriesExhausted) as info:
        call()
    assert info.value.reason == "retry_after_too_long"
