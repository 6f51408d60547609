"""guards.RetryRun: one request's retry loop on core's RetryDriver (what ``@guards.retry``
sleeps and calls on). Every step is a tuple ``(kind, a, b, c)``; times are nanoseconds."""

from __future__ import annotations

import math

import pytest

import guards

MS = 1_000_000


def policy(max_attempts: int = 3) -> guards.RetryPolicy:
    return guards.RetryPolicy(max_attempts, backoff=guards.Backoff(0.1, cap=1.0, jitter="none"))


def test_a_first_success_needs_one_attempt() -> None:
    run = guards.RetryRun(policy())
    assert run.phase == "idle" and run.attempts == 0 and run.last_outcome is None
    assert run.start(now=0) == ("attempt", 1, None, None)
    assert run.phase == "attempting"
    assert run.report("success", now=5) == ("succeeded", None, None, None)
    assert (run.phase, run.attempts, run.retries, run.last_outcome) == (
        "succeeded",
        1,
        0,
        "success",
    )


def test_retryable_failures_wait_then_give_up_when_attempts_run_out() -> None:
    run = guards.RetryRun(policy(3))
    run.start(now=0)
    # Backoff without jitter: 100 ms, then 200 ms; the instant to resume is now + wait.
    assert run.report("timeout", now=10) == ("wait", 100 * MS, 100 * MS + 10, None)
    assert run.phase == "waiting" and run.last_outcome == "timeout"
    assert run.resume(now=100 * MS + 10) == ("attempt", 2, None, None)
    assert run.report("connection_error", now=200 * MS) == ("wait", 200 * MS, 400 * MS, None)
    assert run.resume(now=400 * MS)[:2] == ("attempt", 3)
    assert run.report("timeout", now=500 * MS) == ("give_up", "attempts_exhausted", None, None)
    assert (run.phase, run.attempts, run.retries) == ("gave_up", 3, 2)


@pytest.mark.parametrize(
    "outcome", ["permanent", "ignored", "rejected", "cancelled", "overloaded"]
)
def test_outcomes_that_are_never_retried_give_up_at_once(outcome: str) -> None:
    """Programming errors (``ignored``), another guard's refusal (``rejected``), an
    abandoned call and an overload signal are not retried (docs/outcomes.md)."""
    run = guards.RetryRun(policy())
    run.start(now=0)
    assert run.report(outcome, now=1) == ("give_up", outcome, None, None)
    assert run.attempts == 1 and run.retries == 0


def test_retry_after_is_honoured_and_garbage_never_raises() -> None:
    def first_wait(retry_after: object) -> tuple[object, ...]:
        run = guards.RetryRun(policy())
        run.start(now=0)
        return run.report("throttled", retry_after=retry_after, now=0)

    assert first_wait(0.5) == ("wait", 500 * MS, 500 * MS, None)
    assert first_wait(guards.Nanos(300 * MS)) == ("wait", 300 * MS, 300 * MS, None)
    # A server's nonsense is no Retry-After: the backoff decides.
    for garbage in (-1, -0.5, math.nan, None):
        assert first_wait(garbage) == ("wait", 100 * MS, 100 * MS, None)
    # Longer than the policy's max_retry_after (20 s), or too large to hold: give up.
    for huge in (60, 10**30, math.inf):
        assert first_wait(huge) == ("give_up", "retry_after_too_long", None, None)
    with pytest.raises(TypeError, match="retry_after"):
        first_wait("soon")


def test_a_deadline_bounds_every_attempt_and_stops_the_waits() -> None:
    run = guards.RetryRun(policy(), deadline=guards.Deadline(150 * MS))
    assert run.start(now=0) == ("attempt", 1, 150 * MS, 150 * MS)
    # The next attempt could not start before the deadline: no wait.
    assert run.report("timeout", now=100 * MS) == ("give_up", "deadline_exceeded", None, None)
    bounded = guards.RetryRun(policy(), attempt_timeout=0.05)
    assert bounded.start(now=0) == ("attempt", 1, 50 * MS, 50 * MS)


def test_the_budget_is_asked_last_and_told_of_every_attempt() -> None:
    budget = guards.RetryBudget("token_bucket", capacity=1, ratio=0.1)
    run = guards.RetryRun(policy(), budget=budget)
    run.start(now=0)
    assert run.report("timeout", now=1)[0] == "wait"  # the one token
    run.resume(now=200 * MS)
    assert run.report("timeout", now=300 * MS) == ("give_up", "budget_exhausted", None, None)
    stats = budget.stats()
    assert (stats["withdrawals"], stats["refusals"]) == (1, 1)


def test_side_effects_without_a_key_are_not_retried() -> None:
    run = guards.RetryRun(policy(), idempotency="unkeyed_side_effect")
    run.start(now=0)
    assert run.report("timeout", now=1)[0] == "give_up"
    keyed = guards.RetryRun(policy(), idempotency="keyed_side_effect")
    keyed.start(now=0)
    assert keyed.report("timeout", now=1)[0] == "wait"


def test_cancel_gives_up_from_any_phase() -> None:
    for steps in ([], ["start"], ["start", "report"]):
        run = guards.RetryRun(policy())
        if "start" in steps:
            run.start(now=0)
        if "report" in steps:
            run.report("timeout", now=1)
        assert run.cancel() == ("give_up", "cancelled", None, None)
        assert run.phase == "gave_up"


def test_steps_out_of_order_are_runtime_errors_and_bad_settings_name_the_field() -> None:
    run = guards.RetryRun(policy())
    with pytest.raises(RuntimeError, match="report"):
        run.report("success")
    run.start(now=0)
    with pytest.raises(RuntimeError, match="resume"):
        run.resume(now=1)
    with pytest.raises(ValueError, match="outcome"):
        run.report("fine")  # type: ignore[arg-type]
    with pytest.raises(guards.ConfigError) as info:
        guards.RetryRun(policy(), idempotency="maybe")  # type: ignore[arg-type]
    assert info.value.field == "idempotency"
    with pytest.raises(TypeError, match="budget"):
        guards.RetryRun(policy(), budget=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="policy"):
        guards.RetryRun(3)  # type: ignore[arg-type]
