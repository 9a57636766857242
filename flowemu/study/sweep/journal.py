"""The journal of a running sweep: every configuration's rows (or error) are
recorded the moment it finishes, so a kill (even SIGKILL, of the sweep or of a
worker) loses at most the configuration each worker was running.

Part files are written per task (a chunk of configurations), which keeps the
per-configuration cost small; the journal covers the configurations of a task
that finished before its part file exists::

    DATASET/_journal/<run>-<task>.jsonl    one JSON line per finished configuration

The process that runs the task (a local worker, or the sweep itself) appends
each line with a single ``write`` to an ``O_APPEND`` file: the OS keeps what
was written when the process is killed, so only a line cut short by the kill
(no newline at its end) is incomplete, and reading leaves it out. A line is
``{"config": <sweep columns>, "rows": [<simulate_rows dicts>]}`` or
``{"error": <error record>}``; JSON because a line costs ~0.1 ms (an Arrow or
pandas batch per configuration would cost more than timing a small one), and
reading a journal runs no code (unlike pickle). Floats are written as their
shortest repr, which reads back bit for bit (NaN and infinity included).

When the task's part files are written (atomically), its journal file is
deleted. A journal left behind (a killed sweep, a worker that died with its
task) is turned into the part files the task would have written — the same
names, ``part-<run>-<task>.parquet`` and ``_errors/errors-<run>-<task>.parquet``
— leaving out configurations saved elsewhere, and then deleted
(:func:`recover`, under the sweep's lock). A part file of that name that exists
already holds every row of the journal (it is written once, whole), so a kill
at any step leaves nothing lost and, done again, nothing duplicated.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .dataset import (
    ERRORS_DIR,
    JOURNAL_DIR,
    fsync_dir,
    result_hashes,
    rows_frame,
    write_errors,
    write_rows,
)

SUFFIX = ".jsonl"


def _plain(value):
    """JSON for the numpy scalars a row may hold."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


class JournalWriter:
    """Appends the configurations of one task to its journal file (opened at
    the first one). Runs in the process that runs the task."""

    def __init__(self, path: str):
        self.path = path
        self.fd = None

    def _append(self, record: dict) -> None:
        line = (json.dumps(record, default=_plain, separators=(",", ":")) + "\n").encode()
        if self.fd is None:
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        view = memoryview(line)
        while view:
            view = view[os.write(self.fd, view):]

    def rows(self, fields: dict, rows: list[dict]) -> None:
        self._append({"config": fields, "rows": rows})

    def error(self, record: dict) -> None:
        self._append({"error": record})

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Journal:
    """The journal files of one sweep run: a fresh name per task."""

    def __init__(self, dataset, run_id: str):
        self.dir = Path(dataset) / JOURNAL_DIR
        self.dir.mkdir(exist_ok=True)
        self.run_id = run_id
        self._seq = itertools.count()

    def task(self) -> str:
        """The journal file of a new task (not created yet)."""
        return str(self.dir / f"{self.run_id}-{next(self._seq):05d}{SUFFIX}")

    def close(self) -> None:
        """Remove the journal directory if no journal is left in it."""
        try:
            self.dir.rmdir()
        except OSError:
            pass


def part_names(journal) -> tuple[str, str]:
    """The names (without ``.parquet``) of a task's result and error part files."""
    stem = Path(journal).name.removesuffix(SUFFIX)
    return f"part-{stem}", f"errors-{stem}"


def read(journal) -> tuple[list[tuple[dict, list[dict]]], list[dict]]:
    """The complete records of a journal file: ``([(sweep columns, rows), ...],
    [error record, ...])``; a line cut short by a kill is left out."""
    try:
        data = Path(journal).read_bytes()
    except FileNotFoundError:
        return [], []
    batches, errors = [], []
    for line in data[:data.rfind(b"\n") + 1].splitlines():
        try:
            record = json.loads(line)
        except ValueError:   # not ours to judge: only a cut-short last line can be torn
            continue
        if isinstance(record, dict) and "error" in record:
            errors.append(record["error"])
        elif isinstance(record, dict) and "config" in record:
            batches.append((record["config"], record["rows"]))
    return batches, errors


@dataclass
class Saved:
    """What :func:`save` turned into part files."""

    hashes: set[str] = field(default_factory=set)   # configurations with rows
    rows: int = 0
    errors: list[dict] = field(default_factory=list)


def save(dataset, journal, saved: set[str]) -> Saved:
    """Write the task's part files from its journal file, leaving out the
    configurations in ``saved`` (hashes whose rows are in other part files;
    updated), then delete the journal. Call under the sweep's lock."""
    dataset = Path(dataset)
    rows_name, errors_name = part_names(journal)
    batches, errors = read(journal)
    out = Saved()
    new = []
    for fields, rows in batches:
        h = fields["config_hash"]
        if h not in saved and h not in out.hashes:
            out.hashes.add(h)
            new.append((fields, rows))
    if new and not (dataset / f"{rows_name}.parquet").exists():
        frame = rows_frame(new)
        write_rows(dataset, frame, rows_name)
        out.rows = len(frame)
    saved |= out.hashes
    out.errors = [e for e in errors if e["config_hash"] not in saved]
    if out.errors and not (dataset / ERRORS_DIR / f"{errors_name}.parquet").exists():
        write_errors(dataset / ERRORS_DIR, out.errors, errors_name)
    Path(journal).unlink(missing_ok=True)
    fsync_dir(Path(journal).parent)
    return out


def journaled(dataset) -> tuple[set[str], set[str]]:
    """``(configurations with rows, configurations failed)`` in the journals
    a killed sweep left, read only (:func:`recover`, which the next run
    calls, saves them): what a dry run counts as done."""
    directory = Path(dataset) / JOURNAL_DIR
    rows, failed = set(), set()
    for journal in sorted(directory.glob(f"*{SUFFIX}")) if directory.is_dir() else []:
        batches, errors = read(journal)
        rows.update(fields["config_hash"] for fields, _ in batches)
        failed.update(e["config_hash"] for e in errors)
    return rows, failed


def recover(dataset) -> Saved:
    """Turn the journals a killed sweep left into part files (oldest first),
    so their configurations count as done. Call under the sweep's lock,
    before anything else reads the dataset's hashes."""
    directory = Path(dataset) / JOURNAL_DIR
    journals = sorted(directory.glob(f"*{SUFFIX}")) if directory.is_dir() else []
    total = Saved()
    if not journals:
        return total
    saved = result_hashes(dataset)
    for journal in journals:
        got = save(dataset, journal, saved)
        total.hashes |= got.hashes
        total.rows += got.rows
        total.errors += got.errors
    return total
