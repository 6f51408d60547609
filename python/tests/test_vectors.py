"""The conformance vectors (``tests/vectors/*.json``) through the public Python API.

Every file is replayed by the shared interpreter (ffi's ``guards::vectors``, exposed as
the test-only ``guards._guards._VectorSession``) with the Python backend
(``vector_backend.py``): the interpreter reads the files, holds permits and compares, so
results must equal Rust's exactly (same decisions, same integers, floats bit for bit, an
int never equal to a float). What the Python API cannot run is reported as not covered,
each for a reason listed in ``GAPS``; values it cannot show are counted as unobserved,
never as equal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from guards._guards import _VectorSession
from vector_backend import replay

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"

#: What the Python API lacks, by file and op: the only cases allowed to be not covered.
GAPS = {
    ("circuit_breaker.json", "new"): "the Python API grows a breaker's cells to fit its window",
}
#: Files whose expected values may be unobservable: a Retry-After the API gives in float
#: seconds that does not round-trip to integer nanoseconds (beyond 2**53 ns).
PARTLY = {"http.json"}


def test_every_vector_file_replays_through_the_python_api_with_the_results_of_rust() -> None:
    s = replay(_VectorSession.open(str(VECTORS)))
    summary, report = s.summary(), s.report()
    assert summary["failed"] == 0, report
    assert summary["file_errors"] == 0, report
    assert summary["ok"] is True
    assert summary["files"] == len(list(VECTORS.glob("*.json"))) == 17, report
    assert summary["compared"] > 3000, f"{summary['compared']} expected values compared"
    # 367 of 369 cases ran in full when this was written: the two breaker capacity cases
    # are not covered (GAPS).
    assert summary["not_covered"] <= 2, report
    cases = s.cases()
    assert len(cases) == summary["cases"]
    for c in cases:
        if c["outcome"] == "not_covered":
            assert (c["file"], c["op"]) in GAPS, f"{c['file']} `{c['case']}` not covered at `{c['op']}`: {c['reason']}"
        if c["outcome"] == "passed" and c["unobserved"] > 0:
            assert c["file"] in PARTLY, f"{c['file']} `{c['case']}`: {c['unobserved']} values unobserved"
    # Most of every file runs (a backend answering "unsupported" to everything would pass
    # the checks above).
    by_file: dict[str, list[int]] = {}
    for c in cases:
        f = by_file.setdefault(c["file"], [0, 0])
        f[1] += 1
        f[0] += c["outcome"] == "passed"
    for file, (passed, total) in by_file.items():
        assert passed >= total * 0.7, f"{file}: {passed} of {total} cases passed"


def test_a_changed_expectation_fails_naming_the_case_step_and_values() -> None:
    doc = json.loads((VECTORS / "bulkhead.json").read_text())
    case = next(c for c in doc["cases"] if any(st["op"] == "in_flight" and "expect" in st for st in c.get("steps", [])))
    step = next(st for st in case["steps"] if st["op"] == "in_flight" and "expect" in st)
    step["expect"] += 1
    s = replay(_VectorSession.from_text("bulkhead.json", json.dumps(doc)))
    assert s.summary()["failed"] == 1
    failed = next(c for c in s.cases() if c["outcome"] == "failed")
    assert (failed["case"], failed["op"]) == (case["name"], "in_flight")
    assert "FAILED bulkhead.json" in s.report()


def test_a_tampered_vector_file_fails() -> None:
    """The same edit as ``make test-c-vectors``'s: an expected in_flight of 2 for 1."""
    text = (VECTORS / "bulkhead.json").read_text()
    old = '"in_flight": 1, "max_concurrent": 1}, "repeat": 3'
    assert old in text
    s = replay(_VectorSession.from_text("bulkhead.json", text.replace(old, old.replace("1,", "2,", 1))))
    assert s.summary()["ok"] is False
    assert "at `in_flight`: expected 2, got 1" in s.report()


def test_an_int_never_equals_a_float() -> None:
    doc = {"guard": "bulkhead", "cases": [{"name": "x", "steps": [{"op": "in_flight", "expect": 0}]}]}
    s = _VectorSession.from_text("bulkhead.json", json.dumps(doc))
    assert s.next()["op"] == "new"
    s.submit_result(None)
    assert s.next()["op"] == "in_flight"
    s.submit_result(0.0)
    while s.next() is not None:  # `free`
        s.submit_result(None)
    assert s.summary()["failed"] == 1
    assert "expected 0, got 0.0" in s.report()


def test_what_the_python_api_cannot_run_is_reported_as_not_covered() -> None:
    doc = {"guard": "circuit_breaker", "cases": [{"name": "n", "config": {"window_size": 129}, "steps": [{"op": "len", "expect": 0}]}]}
    s = replay(_VectorSession.from_text("circuit_breaker.json", json.dumps(doc)))
    summary = s.summary()
    assert (summary["passed"], summary["not_covered"], summary["ok"]) == (0, 1, True)


def test_the_session_refuses_bad_replies_by_name() -> None:
    s = _VectorSession.from_text("bulkhead.json", '{"guard": "bulkhead", "cases": [{"name": "x", "steps": []}]}')
    with pytest.raises(RuntimeError, match="_VectorSession"):
        s.submit_result(None)  # no step handed out yet
    s.next()
    with pytest.raises(TypeError, match="cannot hold"):
        s.submit_result(object())
    with pytest.raises(TypeError, match="keys must be strings"):
        s.submit_result({1: 2})
    with pytest.raises(ValueError, match="no such file|_VectorSession"):
        _VectorSession.open(str(VECTORS / "no-such-file.json"))
