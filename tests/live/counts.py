"""Per-second counters for the live testbed's processes (docs/live.md), in a table
allocated and written through once, so that counting allocates nothing and a process's
RSS does not grow with the run's length (the soak measures every process's RSS slope)."""

from __future__ import annotations

import array
import collections


class PerSecond:
    """Counts by (second, key), in a table allocated and written through at the start
    (``seconds`` rows of ``width`` columns), so that counting never allocates. A key past
    the first ``width`` or a second outside the table goes to a dict (never dropped)."""

    def __init__(self, seconds: int, width: int = 192) -> None:
        self.seconds, self.width = seconds, width
        self.cols: dict[str, int] = {}
        self.cells = array.array("q", bytes(8 * seconds * width))
        self.spill: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)

    def _cell(self, sec: int, key: str) -> int | None:
        """The cell of (``sec``, ``key``), or ``None`` when it goes to the spill dict."""
        c = self.cols.get(key)
        if c is None and len(self.cols) < self.width:
            c = self.cols[key] = len(self.cols)
        return None if c is None or not 0 <= sec < self.seconds else sec * self.width + c

    def add(self, sec: int, key: str, n: int = 1) -> None:
        i = self._cell(sec, key)
        if i is None:
            self.spill[sec][key] += n
        else:
            self.cells[i] += n

    def peak(self, sec: int, key: str, value: int) -> None:
        """Keep the largest ``value`` of second ``sec`` under ``key``."""
        i = self._cell(sec, key)
        if i is None:
            row = self.spill[sec]
            row[key] = max(row[key], value)
        elif value > self.cells[i]:
            self.cells[i] = value

    def as_dict(self) -> dict[str, dict[str, int]]:
        out: dict[int, dict[str, int]] = {}
        for sec in range(self.seconds):
            base = sec * self.width
            row = {k: self.cells[base + c] for k, c in self.cols.items() if self.cells[base + c]}
            if row:
                out[sec] = row
        for sec, extra in self.spill.items():
            row = out.setdefault(sec, {})
            for k, v in extra.items():
                row[k] = row.get(k, 0) + v
        return {str(k): out[k] for k in sorted(out)}
