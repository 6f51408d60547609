"""Shared fixtures for the native-layer tests.

Run from the repository root (``python -m pytest python/tests``) so that the installed
package is imported, not the source directory ``python/guards`` (which lacks the native
module unless built in place).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import guards


@pytest.fixture
def clock() -> Iterator[guards.FakeClock]:
    """A FakeClock at t = 1 s, installed for the test."""
    with guards.FakeClock(now=1_000_000_000) as c:
        yield c


@pytest.fixture(autouse=True)
def _no_clock_left_installed() -> Iterator[None]:
    """Every test leaves the process clock as it found it (no FakeClock installed)."""
    assert guards.current_clock() is None, "a previous test left a FakeClock installed"
    yield
    assert guards.current_clock() is None, "this test left a FakeClock installed"
