"""A progress bar on stderr for long runs and sweeps: tqdm's when it is installed, else
a one-line bar redrawn in place (no dependency)."""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Any, Callable, Optional, Union

__all__ = ["ProgressBar", "Progress"]

#: What the API's ``progress=`` accepts: ``True`` (a bar on stderr), ``False``/``None``
#: (nothing), or a callable given the fraction done (0.0 to 1.0) after every step.
Progress = Union[bool, None, Callable[[float], Any]]


class ProgressBar:
    """``update(fraction, label)`` redraws the bar; ``close()`` ends its line.

    Thread-safe (a sweep's workers update it together). Redraws at most every 50 ms and
    only when the text changes."""

    def __init__(self, desc: str = "", stream: Optional[IO[str]] = None, width: int = 30) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._desc = desc
        self._width = width
        self._lock = threading.Lock()
        self._last_text = ""
        self._last_draw = 0.0
        self._closed = False
        self._start = time.monotonic()
        self._tqdm: Any = None
        try:
            from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

            self._tqdm = tqdm(
                total=1000, desc=desc, file=self._stream, leave=True,
                bar_format="{desc} {bar} {percentage:3.0f}% {postfix}",
            )
        except Exception:  # noqa: BLE001 - tqdm missing or unusable: draw our own
            self._tqdm = None

    def update(self, fraction: float, label: str = "") -> None:
        """Show ``fraction`` (0..1) done, with ``label`` after the bar."""
        fraction = min(max(float(fraction), 0.0), 1.0)
        with self._lock:
            if self._closed:
                return
            if self._tqdm is not None:
                n = int(fraction * 1000)
                if n > self._tqdm.n:
                    self._tqdm.update(n - self._tqdm.n)
                if label:
                    self._tqdm.set_postfix_str(label, refresh=False)
                return
            filled = int(round(fraction * self._width))
            bar = "#" * filled + "." * (self._width - filled)
            text = f"{self._desc} [{bar}] {fraction * 100:3.0f}% {label}".rstrip()
            now = time.monotonic()
            if text == self._last_text or (now - self._last_draw < 0.05 and fraction < 1.0):
                return
            pad = " " * max(0, len(self._last_text) - len(text))
            self._stream.write("\r" + text + pad)
            self._stream.flush()
            self._last_text, self._last_draw = text, now

    def close(self) -> None:
        """End the bar's line (a second call does nothing)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._tqdm is not None:
                self._tqdm.close()
            elif self._last_text:
                elapsed = time.monotonic() - self._start
                self._stream.write(f"\r{self._last_text} ({elapsed:.1f} s)\n")
                self._stream.flush()

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def callback(progress: Progress, desc: str) -> tuple[Optional[Callable[[float], Any]], Optional[ProgressBar]]:
    """The per-step callback for ``progress=`` and the bar to close afterwards (if any)."""
    if progress is None or progress is False:
        return None, None
    if progress is True:
        bar = ProgressBar(desc)
        return (lambda f: bar.update(f)), bar
    if callable(progress):
        return progress, None
    raise TypeError(
        "`progress` must be True, False, None or a callable taking the fraction done, "
        f"not {type(progress).__name__}"
    )
