"""Progress of a sweep on stderr."""

from __future__ import annotations

import math
import sys
import time


def _fmt_eta(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "--"
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Progress:
    """Configurations done / total, rate and ETA on stderr: a redrawn bar on a
    terminal, a plain line every ``interval`` seconds otherwise."""

    def __init__(self, total: int, label: str, stream=None, enabled: bool = True,
                 interval: float = 10.0):
        self.total, self.label = total, label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and total > 0
        self.tty = self.enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval = 0.1 if self.tty else interval
        self.done = self.errors = 0
        self.start = time.monotonic()
        self._last = -math.inf
        if self.enabled and not self.tty:
            self._emit(f"{label}: {total} configuration{'' if total == 1 else 's'} to run")

    def _emit(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.write("\n" if not self.tty else "")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else math.inf
        pct = 100.0 * self.done / self.total if self.total else 100.0
        err = f", {self.errors} error{'' if self.errors == 1 else 's'}" if self.errors else ""
        stats = (f"{self.done}/{self.total} {pct:3.0f}% {rate:.1f} cfg/s "
                 f"ETA {_fmt_eta(eta)}{err}")
        if not self.tty:
            return f"{self.label}: {stats}"
        width = 28
        fill = int(width * self.done / self.total) if self.total else width
        return f"\r{self.label} [{'#' * fill}{'.' * (width - fill)}] {stats}\x1b[K"

    def update(self, done: int = 0, errors: int = 0) -> None:
        self.done += done
        self.errors += errors
        now = time.monotonic()
        if self.enabled and (now - self._last >= self.interval or self.done == self.total):
            self._last = now
            self._emit(self.line())

    def close(self) -> None:
        if self.enabled and self.tty:
            self._emit(self.line() + "\n")
        elif self.enabled and self.done != self.total:
            self._emit(self.line())
        self.enabled = False   # closing twice prints once
