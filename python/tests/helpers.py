"""Helpers shared by the native-layer tests."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import pytest

import guards


def run_threads(n: int, target: Callable[[int], Any]) -> list[Any]:
    """Run ``target(i)`` on ``n`` threads released together; re-raise the first error."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            barrier.wait()
            results[i] = target(i)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def config_error(field: str, kind: str | None = None) -> Any:
    """``pytest.raises`` for a ConfigError naming ``field`` (and ``kind`` if given)."""

    class _Check:
        def __enter__(self) -> Any:
            self._cm = pytest.raises(guards.ConfigError)
            self._info = self._cm.__enter__()
            return self._info

        def __exit__(self, *exc: Any) -> bool:
            handled = self._cm.__exit__(*exc)
            err = self._info.value
            assert err.field == field, f"field {err.field!r} != {field!r} ({err})"
            if kind is not None:
                assert err.kind == kind, f"kind {err.kind!r} != {kind!r} ({err})"
            assert field in str(err)
            return bool(handled)

    return _Check()


def type_error(field: str) -> Any:
    """``pytest.raises(TypeError)`` whose message names ``field``."""
    return pytest.raises(TypeError, match=re.escape(f"`{field}`"))
