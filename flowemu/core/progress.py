"""What a long computation is doing, for whoever shows it.

The engine says what it is working on (:func:`begin`: a label and how many
items) and when an item is done (:func:`advance`); the command line reads
:func:`snapshot` from the thread that waits for the work and draws it
(:func:`flowemu.cli.options.run_interruptible`). Nothing is printed here, and
a library user who never reads it pays a lock per distinct step.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Snapshot:
    label: str          # what is being done ("" before anything began)
    done: int           # items finished of ...
    total: int          # ... this many
    started: float      # time.monotonic() at begin()


_lock = threading.Lock()
_state = Snapshot("", 0, 0, 0.0)


def begin(label: str, total: int) -> None:
    """Start a phase of ``total`` items (replaces the previous phase)."""
    global _state
    with _lock:
        _state = Snapshot(label, 0, int(total), time.monotonic())


def advance(n: int = 1) -> None:
    """``n`` more items of the current phase are done."""
    global _state
    with _lock:
        s = _state
        _state = Snapshot(s.label, min(s.done + n, s.total), s.total, s.started)


def snapshot() -> Snapshot:
    """The current phase."""
    return _state
