"""The sweep: a validated plan run into a dataset directory under a lock,
each configuration journaled as it finishes and each chunk written as it
arrives; the journals a killed run left are saved first."""

from __future__ import annotations

import fcntl
import math
import numbers
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...core import checks
from ...core.errors import ConfigError, checked_keywords, show
from . import dataset as ds
from . import layout
from .dataset import ERRORS_DIR
from .executor import (
    Tasks,
    check_jobs,
    chunk_configs,
    default_jobs,
    open_pool,
    run_local,
    run_pool,
)
from .journal import Journal, JournalWriter, part_names, recover, save
from .plan import SweepPlan, load_sweep
from .progress import Progress


@dataclass
class SweepSummary:
    """What a sweep did. ``os.fspath(summary)`` is the dataset path, so a
    summary can be passed to :func:`flowemu.load` directly.

    ``errors`` lists ``(config_key, message)`` of every configuration of the
    sweep that has no results after the run: failed now, or recorded as
    failed by an earlier run and not retried.
    """

    path: Path
    name: str
    total: int              # configurations in the sweep file
    skipped: int            # not run: reused, or recorded as failed earlier
    computed: int           # run now, successfully
    failed: int             # run now and failed (recorded in _errors/)
    internal: int           # of which unexpected exceptions (bugs)
    rows: int               # result rows written now
    seconds: float
    reused: int = 0         # configurations whose rows were already in the dataset
    failed_earlier: int = 0  # recorded as failed by an earlier run, not retried
    set_aside: int = 0      # configurations in the dataset the file no longer lists
    set_aside_now: int = 0  # of which the file listed at the run before (set aside now)
    pruned: int = 0         # configurations deleted by prune
    pruned_rows: int = 0
    replaced: str = ""      # the other sweep whose results prune replaced
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: why the local workers died, once per restart of the pool (each
    #: configuration they ran was saved from their journals or run again)
    worker_deaths: list[str] = field(default_factory=list)

    def __fspath__(self) -> str:
        return str(self.path)

    def text(self) -> str:
        detail = [f"{self.computed} computed ({counted(self.rows, 'row')})"]
        if self.reused:
            detail.append(f"{self.reused} reused")
        if self.errors:
            detail.append(f"{len(self.errors)} failed")
        out = (f"sweep {self.name}: {counted(self.total, 'configuration')}: "
               f"{', '.join(detail)} -> "
               f"{self.path} in {self.seconds:.1f}s")
        if self.replaced:
            out += f"\n  replaced the results of sweep {self.replaced!r} (--prune)"
        if self.set_aside_now:   # (those set aside by an earlier run were said then)
            earlier = (f"; {self.set_aside} in all with those set aside before"
                       if self.set_aside > self.set_aside_now else "")
            n = self.set_aside_now
            out += (f"\n  set aside: {counted(n, 'configuration')} not in the sweep "
                    "as it is now (the file no longer lists it, or a file or plug-in it names "
                    f"changed; kept on disk, not loaded: their rows in "
                    f"{self.path / ds.ASIDE_DIR}{earlier}; --prune deletes them)")
        if self.pruned:
            out += (f"\n  pruned: {counted(self.pruned, 'configuration')} "
                    f"({counted(self.pruned_rows, 'row')}) no "
                    "longer in the sweep")
        if self.worker_deaths:
            n = len(self.worker_deaths)
            why = "; ".join(dict.fromkeys(self.worker_deaths))
            out += (f"\n  the worker processes died {'once' if n == 1 else f'{n} times'} "
                    f"({why}); what they finished was saved and the rest ran again")
        if self.internal:
            out += (f"\n  {self.internal} of the failures are unexpected exceptions "
                    "(flowemu bugs; see the error column)")
        return out

    def failure_text(self, first: int = 5) -> str:
        """How many configurations failed and the first ``first`` errors, one
        line each (empty when none failed)."""
        if not self.errors:
            return ""
        earlier = (f", {self.failed_earlier} of them in an earlier run"
                   if self.failed_earlier else "")
        lines = [(f"sweep {self.name}: {len(self.errors)} of "
                  f"{counted(self.total, 'configuration')} "
                 f"failed{earlier} (recorded in {self.path / ERRORS_DIR}; --retry-errors "
                 "runs them again):")]
        for key, message in self.errors[:first]:
            lines.append(f"  {key}: {message}")
        if len(self.errors) > first:
            lines.append(f"  ... and {len(self.errors) - first} more "
                         "(flowemu.results.load_errors)")
        return "\n".join(lines)


def counted(n: int, word: str) -> str:
    """``1 configuration``, ``2 configurations``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


class DatasetLock:
    """An exclusive lock on a dataset (released by the OS even on SIGKILL)."""

    def __init__(self, directory: Path):
        self.path = directory / ds.LOCK
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


@checked_keywords
def sweep(config_path, out=None, *, jobs: int | None = None, scheduler=None,
          scheduler_timeout: float | None = None, retry_errors: bool = False,
          prune: bool = False,
          progress: bool | None = None, chunk_size: int | None = None,
          stream=None) -> SweepSummary:
    """Run a sweep file into a parquet dataset that holds exactly this sweep.

    Configurations already in the dataset are reused (their rows are not
    touched), new ones computed; rows of configurations the file no longer
    lists are set aside (moved to ``_aside/``, not loaded, kept until ``prune``).

    Parameters
    ----------
    config_path : path
        A sweep TOML file (see the module doc). It is validated completely
        before any work, each configuration by the checks ``simulate`` makes
        before it solves: every problem is reported in one ConfigError.
    out : path, optional
        Dataset directory (default ``results/<file stem>``). A directory
        holding another sweep's results is refused (ConfigError) unless
        ``prune``, which replaces them.
    jobs : int, optional
        Local worker processes (default: every core). ``1`` runs in this
        process, without a pool.
    scheduler : str or distributed.Client, optional
        ``tcp://host:port`` of a Dask scheduler: tasks go to the cluster
        through ``Client(address).get_executor()``, one configuration each
        (unless ``chunk_size``); this process journals each as it returns and
        writes part files of a chunk's worth.
    scheduler_timeout : float, optional
        Seconds to wait for the scheduler (and for a worker to join it);
        default 10. Only with ``scheduler``.
    retry_errors : bool
        Run again the configurations recorded in ``_errors/``.
    prune : bool
        Delete the rows and errors of configurations not in the sweep.
    progress : bool, optional
        Progress on stderr (default on).
    chunk_size : int, optional
        Configurations per task (and per part file); default: by cost (on a
        Dask cluster, one per task and part files of a chunk's worth).

    Returns
    -------
    SweepSummary
        Counts, the failures (``errors``) and the dataset path
        (``os.fspath(summary)``).
    """
    t0 = time.monotonic()
    jobs, chunk_size = _count("jobs", jobs), _count("chunk_size", chunk_size)
    check_jobs(jobs, scheduler)
    if scheduler_timeout is not None and scheduler is None:
        raise ConfigError("scheduler_timeout: applies only with scheduler= (the time to wait "
                          "for a Dask scheduler); drop it")
    scheduler_timeout = 10.0 if scheduler_timeout is None else \
        _seconds("scheduler_timeout", scheduler_timeout)
    retry_errors, prune = checks.flag("retry_errors", retry_errors), checks.flag("prune", prune)
    if progress is not None:
        progress = checks.flag("progress", progress)
    if stream is not None and not callable(getattr(stream, "write", None)):
        raise ConfigError(f"stream: {show(stream)} is not allowed; expected a text stream "
                          "(an object with write(), as sys.stderr) or None")
    if out is not None:
        out = checks.path("out", out, "the dataset directory")
    plan = load_sweep(config_path)
    for note in plan.notes:   # (files read from the current directory: said before any work)
        print(f"flowemu: note: {note}", file=stream or sys.stderr)
    out = Path(out) if out is not None else Path("results") / plan.name
    if out.exists() and not out.is_dir():
        raise ConfigError(f"out: {str(out)!r} exists and is not a directory")
    # a cluster that cannot be reached fails now, before the dataset is touched
    pool = open_pool(None, scheduler, scheduler_timeout) if scheduler is not None else None
    try:
        _check_out(out)
        summary = _sweep(plan, out, pool, jobs, retry_errors, prune, progress, chunk_size,
                         stream, t0)
    except BaseException:
        if pool is not None:
            pool.close(cancel=True)
        raise
    if pool is not None:
        pool.close()
    return summary


def _check_out(out: Path) -> None:
    """The dataset directory exists (or can be made) and takes files: checked
    before any work, so a bad ``--out`` costs nothing."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"out: {str(out)!r} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".tmp-probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"out: cannot write the dataset directory {str(out)!r}: "
                          f"{exc.strerror or exc}") from None
    foreign = foreign_files(out)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3
                                          else "")
        raise ConfigError(f"out: {str(out)!r} holds files that are no dataset's ({shown}); "
                          "readers of a dataset read every file in its directory "
                          "(pd.read_parquet would fail on them): choose a new or empty "
                          "directory, or a dataset's")


def foreign_files(out: Path) -> list[str]:
    """The entries of ``out`` a dataset does not write (sorted names), where
    ``out`` is no dataset yet (a dataset is left as it is): not part files
    (``part-*.parquet``), nor hidden or ``_``-prefixed ones (a manifest,
    errors, rows set aside, figures, the lock and journal, and a user's own
    ``_`` folder, which readers skip)."""
    if not out.is_dir() or (out / ds.MANIFEST).exists() or ds.result_parts(out) \
            or ds.error_parts(out) or any((out / old).is_dir() for old in layout.OLD_DIRS):
        return []
    return sorted(p.name for p in out.iterdir()
                  if not p.name.startswith(("_", "."))
                  and not (p.name.startswith("part-") and p.name.endswith(".parquet")))


def _sweep(plan, out: Path, pool, jobs, retry_errors, prune, progress, chunk_size, stream,
           t0) -> SweepSummary:
    with DatasetLock(out):   # the directory exists: _check_out made it
        ds.clean_temp(out)
        recover(out)   # what a killed run finished counts as done
        wanted = {c.hash for c in plan.configs}
        summary = SweepSummary(out, plan.name, len(plan.configs), 0, 0, 0, 0, 0, 0.0)
        other = other_sweep(out, plan)
        if other and not prune:
            raise ConfigError(f"out: {str(out)!r} holds the results of sweep {other!r}, not of "
                              f"{plan.name!r} ({plan.path}); choose another --out, or add "
                              f"--prune to replace them")
        layout.migrate(out)   # a dataset of the old layout: errors/ and figures/ renamed
        if other:
            summary.replaced = other
            summary.pruned, summary.pruned_rows = ds.prune(out, set())
        done = ds.result_hashes(out)
        failed_before = ds.error_hashes(out) - done
        aside = (done | failed_before) - wanted
        before = ds.read_manifest(out)   # what the last run listed, if the dataset says
        summary.set_aside = len(aside)
        summary.set_aside_now = len(aside & set(before["hashes"]) if before else aside)
        if prune and summary.set_aside:
            n, rows = ds.prune(out, wanted)
            summary.pruned += n
            summary.pruned_rows += rows
            summary.set_aside = summary.set_aside_now = 0
        ds.write_manifest(out, plan.name, plan.path.resolve(), wanted)
        layout.place_rows(out, wanted)   # after the manifest: load filters a killed move
        _save_config(plan, out)
        todo = [c for c in plan.configs
                if c.hash not in done and (retry_errors or c.hash not in failed_before)]
        earlier_errors = ds.error_parts(out)
        summary.reused = sum(c.hash in done for c in plan.configs)
        summary.failed_earlier = len(plan.configs) - summary.reused - len(todo)
        summary.skipped = summary.reused + summary.failed_earlier
        bar = Progress(len(todo), f"sweep {plan.name}", stream=stream,
                       enabled=progress is not False)
        now = time.time_ns()   # part names sort in the order they were written
        run_id = (time.strftime("%Y%m%dT%H%M%S", time.gmtime(now // 10**9))
                  + f"{now % 10**9:09d}-{os.getpid()}")
        journal_files = Journal(out, run_id)
        if pool is None:
            tasks = _Saving(out, journal_files, summary, bar)
        else:
            tasks = _Journaling(out, journal_files, summary, bar,
                                _part_size(todo, pool.workers, chunk_size))
        try:
            _run(todo, jobs, pool, chunk_size, tasks)
            tasks.finish()
        except KeyboardInterrupt:
            bar.close()
            # the workers are stopped: what their journals hold is saved now
            # (the sweep's own journal counted already, as its tasks returned)
            summary.computed += len(recover(out).hashes - tasks.pending)
            if progress is not False:
                print(f"sweep {plan.name}: interrupted; {summary.computed + summary.skipped} of "
                      f"{summary.total} configurations are saved in {out}; run the same "
                      "command again to resume", file=stream or sys.stderr)
            raise
        finally:
            bar.close()
        tasks.journal_files.close()
        # each current failure once: none of a retry that succeeded, the latest of one
        # that failed again
        ds.drop_errors(out, ds.result_hashes(out))
        ds.drop_errors(out, {c.hash for c in todo}, [p for p in earlier_errors if p.exists()])
        summary.errors = _failures(out, plan)
        summary.seconds = time.monotonic() - t0
    return summary


class _Saving(Tasks):
    """Each task's rows and errors into part files named after its journal
    file, which is deleted once they are written (:mod:`.journal`)."""

    pending: set[str] = frozenset()   # configurations counted, in no part file yet

    def __init__(self, out: Path, journal: Journal, summary: SweepSummary, bar: Progress):
        self.out, self.journal_files, self.summary, self.bar = out, journal, summary, bar

    def journal(self) -> str:
        return self.journal_files.task()

    def done(self, journal, chunk, result) -> None:
        rows, errors = result
        rows_name, errors_name = part_names(journal)
        if rows is not None and len(rows):
            ds.write_rows(self.out, rows, rows_name)
            self.summary.rows += len(rows)
        if errors:
            ds.write_errors(self.out / ds.ERRORS_DIR, errors, errors_name)
        Path(journal).unlink(missing_ok=True)
        self._count(len(chunk), errors)

    def finish(self) -> None:
        """Write what is left to write (nothing: each task wrote its own)."""

    def lost(self, journal, chunk) -> list:
        saved = save(self.out, journal, set())
        self.summary.rows += saved.rows
        gone = saved.hashes | {e["config_hash"] for e in saved.errors}
        self._count(len(gone), saved.errors)
        return [c for c in chunk if c.hash not in gone]

    def broke(self, reason: str) -> None:
        self.summary.worker_deaths.append(reason)

    def _count(self, configs: int, errors: list[dict]) -> None:
        self.summary.failed += len(errors)
        self.summary.internal += sum(bool(e["internal"]) for e in errors)
        self.summary.computed += configs - len(errors)
        self.bar.update(configs, len(errors))


class _Journaling(_Saving):
    """The tasks of a Dask cluster, whose workers may run on other hosts and
    write no journal: this process appends each task's records to a journal
    of its own as the task returns (so a kill of the sweep loses only what
    the workers are running), and turns that journal into part files every
    ``part_size`` configurations and at the end (:meth:`finish`)."""

    def __init__(self, out: Path, journal: Journal, summary: SweepSummary, bar: Progress,
                 part_size: int):
        super().__init__(out, journal, summary, bar)
        self.part_size = part_size
        self.writer = None
        self.batches, self.errors = [], []
        self.pending = set()   # configurations in the journal, not yet in part files

    def done(self, journal, chunk, result) -> None:
        batches, errors = result
        batches = batches or []
        if self.writer is None:
            self.writer = JournalWriter(self.journal_files.task())
        for fields, rows in batches:
            self.writer.rows(fields, rows)
        for error in errors:
            self.writer.error(error)
        self.batches += batches
        self.errors += errors
        self.pending |= {f["config_hash"] for f, _ in batches}
        self.pending |= {e["config_hash"] for e in errors}
        self._count(len(chunk), errors)
        if len(self.batches) + len(self.errors) >= self.part_size:
            self.finish()

    def finish(self) -> None:
        """Write the journal's part files (atomically), then delete it."""
        if self.writer is None:
            return
        writer, batches, errors = self.writer, self.batches, self.errors
        self.writer, self.batches, self.errors = None, [], []
        writer.close()
        rows_name, errors_name = part_names(writer.path)
        if batches:
            rows = ds.rows_frame(batches)
            ds.write_rows(self.out, rows, rows_name)
            self.summary.rows += len(rows)
        if errors:
            ds.write_errors(self.out / ds.ERRORS_DIR, errors, errors_name)
        Path(writer.path).unlink(missing_ok=True)
        self.pending = set()


def _count(name: str, value) -> int | None:
    """An integer >= 1 (a numpy integer too), or None."""
    return None if value is None else checks.integer(name, value, lo=1)


def _seconds(name: str, value) -> float:
    """A number of seconds > 0 (finite)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not 0 < float(value) < math.inf:
        raise ConfigError(f"{name}: {show(value)} is not allowed; expected a number of "
                          "seconds > 0")
    return float(value)


def _run(todo, jobs, pool, chunk_size, tasks: Tasks) -> None:
    """The configurations ``todo`` in this process, local processes, or on
    ``pool`` (a Dask cluster)."""
    if pool is None:
        workers = 1 if jobs == 1 else (jobs or default_jobs())
        chunks = chunk_configs(todo, workers, chunk_size)
        if workers == 1 or len(chunks) <= 1:
            run_local(chunks, tasks)   # in this process, no pool
            return
        pool = open_pool(min(workers, len(chunks)), None)
        try:
            run_pool(pool, chunks, tasks)
        except BaseException:
            pool.close(cancel=True)
            raise
        pool.close()
    elif todo:
        # a task of one configuration each (unless chunk_size): the sweep
        # journals each as it returns, so a kill loses only the running ones
        chunks = chunk_configs(todo, pool.workers, chunk_size) if chunk_size else [[c] for c in todo]
        run_pool(pool, chunks, tasks)


def _part_size(todo, workers: int, chunk_size: int | None) -> int:
    """Configurations per part file on a Dask cluster: ``chunk_size``, or as
    many as the largest chunk of a local run (at most ~100)."""
    if chunk_size:
        return chunk_size
    return max((len(c) for c in chunk_configs(todo, workers, None)), default=1)


def other_sweep(out: Path, plan: SweepPlan) -> str:
    """The name of another sweep whose results ``out`` holds ("" if none):
    from the manifest, or for a dataset without one, from its rows."""
    doc = ds.read_manifest(out)
    names = {doc["sweep"]} if doc is not None else ds.sweep_names(out)
    return ", ".join(sorted(names - {plan.name}))


def _failures(out: Path, plan: SweepPlan) -> list[tuple[str, str]]:
    """``(config_key, first line of the error)`` of the sweep's configurations
    without results, in file order."""
    errs = ds.load_errors(out)
    if errs.empty:
        return []
    first = dict(zip(errs["config_hash"], errs["error"].astype(str).str.split("\n").str[0]))
    return [(c.key, first[c.hash]) for c in plan.configs if c.hash in first]


def _save_config(plan: SweepPlan, out: Path) -> None:
    """Keep the sweep file next to its results (``_config.toml``, atomic)."""
    ds.atomic_write_bytes(out / ds.CONFIG_COPY, plan.path.read_bytes())


def run_sweep(config_path, out=None, **kwargs) -> Path:
    """:func:`sweep` (same keyword arguments), returning the dataset path (for
    scripts and the demo)."""
    return sweep(config_path, out, **kwargs).path
