"""The sweep: a validated plan run into a dataset directory under a lock,
each chunk written as it arrives."""

from __future__ import annotations

import fcntl
import itertools
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from .executor import _check_jobs, _chunks, _executor, _run_executor, _run_local, default_jobs
from .plan import SweepPlan, load_sweep
from .progress import Progress


@dataclass
class SweepSummary:
    """What a sweep did. ``os.fspath(summary)`` is the dataset path, so a
    summary can be passed to :func:`flowemu.load` directly."""

    path: Path
    name: str
    total: int           # configurations in the sweep file
    skipped: int         # already in the dataset (or recorded errors)
    computed: int        # run now, successfully
    failed: int          # run now, recorded in errors/
    internal: int        # of which unexpected exceptions (bugs)
    rows: int            # result rows written now
    seconds: float
    stale: int = 0       # configurations in the dataset that the file no longer lists

    def __fspath__(self) -> str:
        return str(self.path)

    def text(self) -> str:
        parts = [f"sweep {self.name}: {self.total} configurations"]
        detail = [f"{self.computed} computed ({self.rows} rows)"]
        if self.skipped:
            detail.append(f"{self.skipped} already done")
        if self.failed:
            detail.append(f"{self.failed} failed (see {self.path / 'errors'})")
        parts.append(", ".join(detail))
        out = f"{parts[0]}: {parts[1]} -> {self.path} in {self.seconds:.1f}s"
        if self.internal:
            out += (f"\n  {self.internal} of the failures are unexpected exceptions "
                    "(flowemu bugs; see the error column)")
        if self.stale:
            out += (f"\n  note: the dataset also holds {self.stale} configurations this file "
                    "no longer lists (from an earlier version of it)")
        return out


class _Lock:
    """An exclusive lock on a dataset (released by the OS even on SIGKILL)."""

    def __init__(self, directory: Path):
        self.path = directory / ".lock"
        self.fh = None

    def __enter__(self):
        self.fh = open(self.path, "a+")
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.fh.close()
            raise ConfigError(f"dataset {str(self.path.parent)!r} is in use by another "
                              "sweep; wait for it or choose another --out") from None
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()


def sweep(config_path, out=None, *, jobs: int | None = None, scheduler=None,
          retry_errors: bool = False, progress: bool | None = None,
          chunk_size: int | None = None, stream=None) -> SweepSummary:
    """Run a sweep file into a parquet dataset; resume where it stopped.

    Parameters
    ----------
    config_path : path
        A sweep TOML file (see the module doc). It is validated completely
        before any work: every problem is reported in one ConfigError.
    out : path, optional
        Dataset directory (default ``results/<file stem>``).
    jobs : int, optional
        Local worker processes (default: every core). ``1`` runs in this
        process, without a pool.
    scheduler : str or distributed.Client, optional
        ``tcp://host:port`` of a Dask scheduler: the same chunks go to the
        cluster through ``Client(address).get_executor()``.
    retry_errors : bool
        Run again the configurations recorded in ``errors/``.
    progress : bool, optional
        Progress on stderr (default on).
    chunk_size : int, optional
        Configurations per task (and per part file); default: by cost.

    Returns
    -------
    SweepSummary
        Counts and the dataset path (``os.fspath(summary)``).
    """
    from ..results import (
        ERRORS_DIR,
        clean_temp,
        error_hashes,
        result_hashes,
        write_errors,
        write_rows,
    )
    t0 = time.monotonic()
    _check_jobs(jobs, scheduler)
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int)
                                   or chunk_size < 1):
        raise ConfigError(f"chunk_size: {chunk_size!r} is not allowed; expected an integer >= 1")
    plan = load_sweep(config_path)
    out = Path(out) if out is not None else Path("results") / plan.name
    if out.exists() and not out.is_dir():
        raise ConfigError(f"out: {str(out)!r} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    with _Lock(out):
        clean_temp(out)
        done = result_hashes(out)
        skip = set(done) if retry_errors else set(done) | error_hashes(out)
        wanted = {c.hash for c in plan.configs}
        todo = [c for c in plan.configs if c.hash not in skip]
        _save_config(plan, out)
        bar = Progress(len(todo), f"sweep {plan.name}", stream=stream,
                       enabled=progress is not False)
        summary = SweepSummary(out, plan.name, len(plan.configs), len(plan.configs) - len(todo),
                               0, 0, 0, 0, 0.0, len(set(done) - wanted))
        now = time.time_ns()   # part names sort in the order they were written
        run_id = (time.strftime("%Y%m%dT%H%M%S", time.gmtime(now // 10**9))
                  + f"{now % 10**9:09d}-{os.getpid()}")
        seq = itertools.count()

        def on_result(chunk, result):
            rows, errors = result
            n = next(seq)
            if rows is not None and len(rows):
                write_rows(out, rows, f"part-{run_id}-{n:05d}")
                summary.rows += len(rows)
            if errors:
                write_errors(out / ERRORS_DIR, errors, f"errors-{run_id}-{n:05d}")
                summary.failed += len(errors)
                summary.internal += sum(bool(e["internal"]) for e in errors)
            summary.computed += len(chunk) - len(errors)
            bar.update(len(chunk), len(errors))

        try:
            if scheduler is None:
                workers = 1 if jobs == 1 else (jobs or default_jobs())
                chunks = _chunks(todo, workers, chunk_size)
                if workers == 1 or len(chunks) <= 1:
                    ex = None   # in this process, no pool
                else:
                    ex, workers, close = _executor(min(workers, len(chunks)), None)
            elif todo:
                ex, workers, close = _executor(None, scheduler)
                chunks = _chunks(todo, workers, chunk_size)
            else:
                ex, chunks = None, []
            if ex is None:
                _run_local(chunks, on_result)
            else:
                try:
                    _run_executor(ex, workers, chunks, on_result)
                except BaseException:
                    close(cancel=True)
                    raise
                close()
        except KeyboardInterrupt:
            bar.close()
            if progress is not False:
                print(f"sweep {plan.name}: interrupted; {summary.computed + summary.skipped} of "
                      f"{summary.total} configurations are saved in {out}; run the same "
                      "command again to resume", file=stream or sys.stderr)
            raise
        finally:
            bar.close()
        summary.seconds = time.monotonic() - t0
    return summary


def _save_config(plan: SweepPlan, out: Path) -> None:
    """Keep the sweep file next to its results (``_config.toml``, atomic)."""
    from ..results import atomic_write_bytes
    atomic_write_bytes(out / "_config.toml", plan.path.read_bytes())


def run_sweep(config_path, out=None, *, jobs: int | None = None, scheduler=None,
              retry_errors: bool = False, progress: bool | None = None) -> Path:
    """:func:`sweep`, returning the dataset path (for scripts and the demo)."""
    return sweep(config_path, out, jobs=jobs, scheduler=scheduler, retry_errors=retry_errors,
                 progress=progress).path
