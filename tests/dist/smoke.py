"""Install test of the wheel (make test-dist-python): run in a fresh venv that has only the
wheel (and its extras) installed. A breaker opens after a window of failures and refuses;
a bulkhead of one refuses a second call. Exits non-zero on any surprise."""

import sys

import guards


def check(ok: bool, what: str) -> None:
    if not ok:
        print(f"smoke: FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def main() -> None:
    check("site-packages" in guards.__file__, f"guards imported from {guards.__file__}")
    breaker = guards.CircuitBreaker(window_size=4, minimum_calls=4)
    for i in range(4):
        permit = breaker.acquire()
        effect = permit.report("timeout")
        check(effect == ("opened" if i == 3 else "counted"), f"report {i}: {effect}")
    check(breaker.state == "open", f"state {breaker.state}")
    check(breaker.try_acquire() is None, "an open breaker refuses")
    try:
        breaker.acquire()
        check(False, "acquire on an open breaker raised nothing")
    except guards.BreakerOpen as e:
        print(f"breaker: open after 4 timeouts, next call refused ({type(e).__name__})")

    bulkhead = guards.Bulkhead(max_concurrent=1)
    first = bulkhead.acquire()
    check(bulkhead.try_acquire() is None, "a full bulkhead refuses")
    try:
        bulkhead.acquire()
        check(False, "acquire on a full bulkhead raised nothing")
    except guards.BulkheadFull as e:
        print(f"bulkhead: second call refused while one is in flight ({type(e).__name__})")
    check(first.release(), "release")
    second = bulkhead.try_acquire()
    check(second is not None, "a slot again after the release")
    second.release()
    for extra in sys.argv[1:]:
        __import__(extra)  # an extra's integration module imports with its dependency
        print(f"extra: {extra} imports")
    print("smoke: ok")


if __name__ == "__main__":
    main()
