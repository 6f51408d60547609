"""The event loop every Python process of the live testbed runs on (docs/live.md).

``LIVE_LOOP=uvloop`` (the default: what a production asyncio service runs, and what
``make live-build`` installs) or ``LIVE_LOOP=asyncio`` (the standard library's loop).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Coroutine


def loop_name() -> str:
    name = os.environ.get("LIVE_LOOP", "uvloop")
    if name not in ("uvloop", "asyncio"):
        raise SystemExit(f"LIVE_LOOP must be uvloop or asyncio, not {name!r}")
    return name


def run(main: Coroutine[Any, Any, int]) -> int:
    """Runs ``main`` to its end on the chosen loop and returns its exit status."""
    if loop_name() == "uvloop":
        try:
            import uvloop
        except ImportError:
            main.close()
            raise SystemExit("LIVE_LOOP=uvloop needs uvloop (make live-build installs it), "
                             "or set LIVE_LOOP=asyncio")
        return uvloop.run(main)
    return asyncio.run(main)
