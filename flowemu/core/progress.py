"""What a long computation is doing, for whoever shows it.

The engine says what it is working on (:func:`begin`: a label and how many
items) and when an item is done (:func:`advance`); the command line reads
:func:`snapshot` from the thread that waits for the work and draws it
(:func:`flowemu.cli.options.run_interruptible`). Nothing is printed here, and
a library user who never reads it pays a lock per distinct step.

Inside one item, an event-driven solve (one step of random traffic can take
a minute) counts the flows it has finished in an array of its own, which a
kernel writes as it goes (:func:`counting`); :func:`snapshot` sums the
solves running then (a lock and a read per solve, only when read).
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Snapshot:
    label: str          # what is being done ("" before anything began)
    done: int           # items finished of ...
    total: int          # ... this many
    started: float      # time.monotonic() at begin()
    flows_done: int = 0     # flows the solves running now have finished ...
    flows_total: int = 0    # ... of this many (0: no event-driven solve running)


_lock = threading.Lock()
_state = Snapshot("", 0, 0, 0.0)
#: the running solves: id of the counter -> (counter: [0] flows finished, flows to finish)
_solves: dict[int, tuple] = {}


@contextmanager
def counting(counter, total: int):
    """Show ``counter`` (an int64[1] array a solve that will finish
    ``total`` flows adds the flows it finishes to) in :func:`snapshot`
    until the ``with`` block ends; yields it."""
    with _lock:
        _solves[id(counter)] = (counter, int(total))
    try:
        yield counter
    finally:
        with _lock:
            _solves.pop(id(counter), None)


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
    """The current phase, with the flows the solves running now have
    finished (a kernel's count, read while it runs: a display's figure)."""
    with _lock:
        s = _state
        if not _solves:
            return s
        done = sum(min(int(c[0]), n) for c, n in _solves.values())
        total = sum(n for _, n in _solves.values())
    return Snapshot(s.label, s.done, s.total, s.started, done, total)
