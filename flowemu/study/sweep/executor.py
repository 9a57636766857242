"""Running configurations: one configuration, a chunk of them (the worker
task), and the executors (in this process, local processes, or Dask)."""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, wait

import pandas as pd

from ...api import simulation
from ...api.simulation import RESULT_COLUMNS
from ...core import budget
from ...core.errors import ConfigError, FlowEmuError, interrupted
from ...engine.profiles import available_cores
from .config import Config
from .dataset import JOB_DATASET_COLUMNS, error_row, rows_frame, sweep_fields
from .fields import build_topology, topo_info
from .jobs import job_rows
from .journal import JournalWriter


def simulate_arguments(cfg: Config) -> tuple[tuple, dict]:
    """The :func:`flowemu.simulate` arguments of a configuration (positional,
    keywords; without ``threads`` and ``max_memory``): what it runs, and
    what the sweep checks before anything runs."""
    return ((build_topology(cfg.topology), cfg.algorithm, list(cfg.sizes)),
            {"ecmp": cfg.ecmp, "seed": cfg.seed, "ranks": cfg.ranks, "placement": cfg.placement,
             "network": cfg.network(), "model": cfg.model, "sync": cfg.sync,
             "collective": cfg.collective,
             "fail": cfg.fail or None,
             "degrade": cfg.degrade or None, "fail_policy": cfg.fail_policy,
             "slow": cfg.slow or None, "background": cfg.background or None})


def run_config(cfg: Config, threads: int | None = None, max_memory=None):
    """Time one configuration: all its sizes from one :func:`flowemu.simulate`
    call (one profile), or its traffic file from :func:`flowemu.time_traffic`
    (as ``flowemu run --traffic``). Returns the result rows (without sweep columns)."""
    return pd.DataFrame(config_rows(cfg, threads, max_memory),
                        columns=RESULT_COLUMNS + (JOB_DATASET_COLUMNS if cfg.jobs else []))


def config_rows(cfg: Config, threads: int | None = None, max_memory=None) -> list[dict]:
    """:func:`run_config`'s rows as dicts (:func:`flowemu.api.simulation.simulate_rows`)."""
    if cfg.jobs:
        return job_rows(cfg, threads, max_memory)
    if cfg.traffic:
        return simulation.time_traffic(build_topology(cfg.topology), cfg.traffic,
                                       ecmp=cfg.ecmp, seed=cfg.seed, placement=cfg.placement,
                                       network=cfg.network(), threads=threads,
                                       max_memory=max_memory, fail=cfg.fail or None,
                                       degrade=cfg.degrade or None,
                                       fail_policy=cfg.fail_policy, slow=cfg.slow or None,
                                       background=cfg.background or None,
                                       sync=cfg.sync).to_dict("records")
    args, kwargs = simulate_arguments(cfg)
    # through the module: a test counting the calls replaces simulation.simulate_rows
    return simulation.simulate_rows(*args, threads=threads, max_memory=max_memory, **kwargs)


def _run_one(cfg: Config, threads, max_memory) -> tuple[tuple[dict, list[dict]] | None, dict | None]:
    """One configuration, never raising for it: ``((sweep columns, rows), None)``
    or ``(None, error record)``."""
    try:
        rows = config_rows(cfg, threads, max_memory)
    except Exception as exc:  # noqa: BLE001 - a bug must not kill a long sweep
        if interrupted(exc):
            # a Ctrl-C that landed in a kernel comes out wrapped (a SystemError,
            # or a plug-in's ScheduleError chained to it): stop the sweep as a
            # Ctrl-C does, and record no failure
            raise KeyboardInterrupt from None
        if isinstance(exc, FlowEmuError):
            return None, error_row(cfg, type(exc).__name__, str(exc), internal=False)
        tb = "".join(traceback.format_exception(exc, limit=-4))
        return None, error_row(cfg, type(exc).__name__, f"{exc}\n{tb}", internal=True)
    if cfg.written:   # a file named as the sweep file names it, from any directory
        rows = [{k: cfg.shown(v) for k, v in row.items()} for row in rows]
    return (sweep_fields(cfg), rows), None


def run_chunk(configs: list[Config], threads: int | None = None, max_memory=None,
              journal: str | None = None):
    """Worker task: run configurations, never raise for one of them.
    ``threads`` is passed to the engine: pool workers use 1 (the pool already
    keeps every core busy), an in-process run the default (all cores).
    ``max_memory`` (a :class:`flowemu.core.budget.Limit`) is each local worker's
    share of the machine's limit, so workers running side by side are refused
    before they could exhaust memory together (default: the whole limit).

    ``journal`` (a file path) records each configuration as it finishes
    (:mod:`.journal`), so a kill loses at most the one running.

    Returns ``(rows DataFrame or None, [error dict, ...])``; the rows carry
    the sweep columns (:data:`flowemu.study.sweep.dataset.SWEEP_COLUMNS`).
    """
    batches, errors = [], []
    log = JournalWriter(journal) if journal else None
    try:
        for cfg in configs:
            batch, error = _run_one(cfg, threads, max_memory)
            if batch is not None:
                batches.append(batch)
                if log:
                    log.rows(*batch)
            else:
                errors.append(error)
                if log:
                    log.error(error)
    finally:
        if log:
            log.close()
    return (rows_frame(batches) if batches else None), errors


def run_records(configs: list[Config], threads: int | None = None, max_memory=None):
    """Worker task of a Dask cluster (whose workers may run on other hosts and
    write no journal): run configurations, never raise for one of them.
    Returns ``([(sweep columns, rows), ...], [error dict, ...])``, the records
    of a journal (:mod:`.journal`), which the sweep appends to its own."""
    batches, errors = [], []
    for cfg in configs:
        batch, error = _run_one(cfg, threads, max_memory)
        if batch is not None:
            batches.append(batch)
        else:
            errors.append(error)
    return batches, errors


def chunk_configs(configs: list[Config], workers: int, chunk_size: int | None) -> list[list[Config]]:
    """Batches of configurations. Big topologies first (they set the makespan);
    each batch costs about total / (4 · workers), at most ~100 small configs,
    so per-task overhead stays small and progress stays live."""
    if not configs:
        return []
    cost = {c.hash: 1.0 + topo_info(c.topology).nodes / 128.0 for c in configs}
    order = sorted(configs, key=lambda c: -topo_info(c.topology).nodes)
    if chunk_size:
        return [order[i:i + chunk_size] for i in range(0, len(order), chunk_size)]
    budget = min(max(sum(cost.values()) / (4 * workers), 1.0), 100.0)
    out, cur, acc = [], [], 0.0
    for c in order:
        if cur and acc + cost[c.hash] > budget:
            out.append(cur)
            cur, acc = [], 0.0
        cur.append(c)
        acc += cost[c.hash]
    if cur:
        out.append(cur)
    return out


def _worker_init(parent: int):
    """Workers leave Ctrl-C to the parent (which stops them) and die with it
    if it is killed (SIGKILL), instead of waiting forever for work."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # not the CLI's handler (fork inherits it)
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:   # the parent died before prctl took effect
        os._exit(1)


def default_jobs() -> int:
    """One worker process per available core."""
    return available_cores()


def check_jobs(jobs, scheduler) -> None:
    if scheduler is not None and jobs is not None:
        raise ConfigError("jobs: give either jobs (local processes) or scheduler (a Dask "
                          "cluster), not both")
    if isinstance(scheduler, str) and "://" not in scheduler:
        raise ConfigError(f"scheduler: {scheduler!r} is not an address; expected e.g. "
                          "tcp://host:8786")


def _death_reason(exitcodes) -> str:
    """What killed a pool's worker, from the exit codes of its processes (the
    pool terminates the survivors with SIGTERM after one died)."""
    codes = sorted((c for c in exitcodes if c not in (None, 0)),
                   key=lambda c: c == -signal.SIGTERM)
    if not codes:
        return "worker process died"
    if codes[0] > 0:
        return f"worker process died (exit status {codes[0]})"
    sig = -codes[0]
    if sig == signal.SIGKILL:
        return f"worker process died (killed by signal {sig}, e.g. out of memory)"
    try:
        name = f", {signal.Signals(sig).name}"
    except ValueError:
        name = ""
    return f"worker process died (killed by signal {sig}{name})"


class _LocalPool:
    """Worker processes on this machine (fork on Linux); after one died the
    pool is broken, :meth:`restart` replaces it."""

    queue = 2   # tasks in flight per worker

    def __init__(self, jobs: int):
        self.workers = jobs
        self._start()

    def _start(self):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
        self.ex = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx,
                                      initializer=_worker_init, initargs=(os.getpid(),))
        self._procs = {}
        whole = budget.limit()
        self.share = budget.Limit(
            whole.bytes // self.workers,
            f"1/{self.workers} of the {whole.text()}, one share a worker",
            f"run fewer workers (--jobs) or give them more ({budget.ENV_VAR}, which "
            "they share)" if self.workers > 1 else f"give a larger {budget.ENV_VAR}")

    def submit(self, chunk, journal=None):
        fut = self.ex.submit(run_chunk, chunk, 1, self.share, journal)
        # the pool forgets its processes once broken; keep them to read exit codes
        self._procs.update(getattr(self.ex, "_processes", None) or {})
        return fut

    def broken_by(self, exc) -> bool:
        from concurrent.futures.process import BrokenProcessPool
        return isinstance(exc, BrokenProcessPool)

    def restart(self) -> str:
        """A fresh pool; returns why the old one broke."""
        for proc in self._procs.values():
            proc.join(timeout=5)
        codes = [proc.exitcode for proc in self._procs.values()]
        # the pool's own thread joins its processes too: when it reaps one first, our
        # read of that exit status comes back None until it has stored it (a dead
        # worker read as None left only the survivors' SIGTERM to report)
        waited = time.monotonic() + 2.0
        while None in codes and time.monotonic() < waited:
            time.sleep(0.01)
            codes = [proc.exitcode for proc in self._procs.values()]
        reason = _death_reason(codes)
        self.close(cancel=True)
        self._start()
        return reason

    def close(self, cancel=False):
        if cancel:
            # the pool would finish the running chunks first; these are our
            # own workers, stop them now
            for proc in list((getattr(self.ex, "_processes", None) or {}).values()):
                proc.terminate()
        self.ex.shutdown(wait=True, cancel_futures=cancel)


class _DaskPool:
    """A Dask cluster through ``Client.get_executor()``; Dask itself moves the
    tasks of a lost worker, a task that keeps killing workers raises."""

    # tasks in flight per worker: one-configuration tasks are small, and the
    # round trip to the scheduler would leave a worker idle between two;
    # queued tasks have not started, so a kill loses no more
    queue = 8

    def __init__(self, client, owned: bool):
        self.client, self.owned = client, owned
        self.workers = max(1, sum(client.nthreads().values()))
        self.ex = client.get_executor()

    def submit(self, chunk, journal=None):
        # the workers may run on other hosts: the sweep journals what comes back
        return self.ex.submit(run_records, chunk, 1)

    def broken_by(self, exc) -> bool:
        return False

    def restart(self) -> str:
        return ""

    def close(self, cancel=False):
        self.ex.shutdown(wait=False)
        if self.owned:
            self.client.close()


def _connect(address: str, timeout: float):
    """A ``distributed.Client`` for ``address``, or a ConfigError after about
    ``timeout`` seconds. ``Client(timeout=...)`` bounds the connection
    attempts; the thread also bounds whatever else could hang (a host that
    answers but is not a Dask scheduler)."""
    import threading

    from distributed import Client
    box = {}

    def connect():
        try:
            box["client"] = Client(address, timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - any failure to connect is reported
            box["error"] = exc

    thread = threading.Thread(target=connect, name="flowemu-connect", daemon=True)
    thread.start()
    thread.join(timeout + 5.0)
    if "client" in box:
        return box["client"]
    exc = box.get("error")
    if exc is None:
        why = "no answer"
    elif isinstance(exc, (OSError, TimeoutError)):
        why = str(exc) or type(exc).__name__
    else:
        why = f"the reply is not a Dask scheduler's ({type(exc).__name__})"
    raise ConfigError(f"scheduler: cannot connect to {address!r} within {timeout:g}s: {why}; "
                      "start one with `dask scheduler` and `dask worker` (docs/sweeps.md, 'A Dask cluster'), "
                      "or raise --scheduler-timeout")


def open_pool(jobs: int | None, scheduler, timeout: float = 10.0):
    """A pool (``submit``, ``workers``, ``restart``, ``close``) of local
    processes or of a Dask cluster."""
    if scheduler is None:
        return _LocalPool(jobs)
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ConfigError("scheduler: dask.distributed is not installed; "
                          "pip install 'dask[distributed]'") from None
    if not isinstance(scheduler, str):
        return _DaskPool(scheduler, owned=False)   # a Client object from Python callers
    client = _connect(scheduler, timeout)
    if not client.nthreads():
        try:
            client.wait_for_workers(1, timeout=timeout)
        except Exception:  # noqa: BLE001 - TimeoutError, or the scheduler went away
            client.close()
            raise ConfigError(f"scheduler: {scheduler!r} has no workers (waited "
                              f"{timeout:g}s); start them with `dask worker {scheduler} "
                              "--nthreads 1`") from None
    return _DaskPool(client, owned=True)


class Tasks:
    """What the runners report to (the sweep implements it): a journal file
    per task, each task's result, and the journal of a task lost with its
    worker."""

    def journal(self) -> str | None:
        """The journal file of a new task (None: none)."""
        return None

    def done(self, journal, chunk, result) -> None:
        """The task's ``(rows, errors)``: save them, drop its journal."""
        raise NotImplementedError

    def lost(self, journal, chunk) -> list:
        """Save what the journal of a lost task holds; return the
        configurations of ``chunk`` still to run."""
        return chunk

    def broke(self, reason: str) -> None:
        """The pool lost its workers (``reason``: what killed one) and was
        started again."""


def run_local(chunks, tasks: Tasks):
    for chunk in chunks:
        journal = tasks.journal()
        tasks.done(journal, chunk, run_chunk(chunk, journal=journal))


def run_pool(pool, chunks, tasks: Tasks):
    """Run chunks on a pool, ``tasks.done(journal, chunk, (rows, errors))`` as
    each arrives. A worker that dies (out of memory, SIGKILL) loses the tasks
    in flight: what their journals hold is saved (``tasks.lost``), the rest is
    retried one configuration per task; those lost again run one at a time,
    so the configuration that kills its worker is alone when it does and is
    recorded as failed with the reason. Every configuration runs at most
    three times; a pool that keeps breaking with no task lost raises
    FlowEmuError."""
    from collections import deque

    normal, single, serial = deque(chunks), deque(), deque()
    inflight = {}
    limit = pool.queue * pool.workers
    idle_breaks = 0

    def submit(tier, chunk):
        journal = tasks.journal()
        try:
            inflight[pool.submit(chunk, journal)] = (tier, chunk, journal)
        except BaseException:
            # back to its queue (the pool broke since the last look)
            if tier == 0:
                normal.appendleft(chunk)
            else:
                (single if tier == 1 else serial).appendleft(chunk[0])
            raise

    while normal or single or serial or inflight:
        broken = False
        try:
            if serial:
                if not inflight:
                    submit(2, [serial.popleft()])
            else:
                while (single or normal) and len(inflight) < limit:
                    if single:
                        submit(1, [single.popleft()])
                    else:
                        submit(0, normal.popleft())
        except Exception as exc:
            if not pool.broken_by(exc):
                raise
            broken = True
        done = wait(list(inflight), return_when=FIRST_COMPLETED)[0] if inflight else ()
        lost = []
        while done:
            for fut in done:
                tier, chunk, journal = inflight.pop(fut)
                exc = fut.exception()
                if exc is None:
                    tasks.done(journal, chunk, fut.result())
                else:
                    lost.append((tier, chunk, journal, exc))
                    broken = broken or pool.broken_by(exc)
            # a broken pool fails every task in flight: collect them all
            done = wait(list(inflight))[0] if broken and inflight else ()
        reason = pool.restart() if broken else ""
        if broken:
            tasks.broke(reason)
        # a pool that breaks with no task lost (its idle workers die) has no
        # configuration to blame; give up after a few
        idle_breaks = idle_breaks + 1 if broken and not lost else 0
        if idle_breaks > 3:
            raise FlowEmuError(f"sweep: the worker processes keep dying before they run "
                               f"anything ({reason}); try --jobs 1 to see why")
        for tier, chunk, journal, exc in lost:
            # after the restart: the old workers no longer write the journals
            chunk = tasks.lost(journal, chunk)
            if not chunk:
                continue
            if tier == 0:
                single.extend(chunk)
            elif tier == 1:
                serial.extend(chunk)
            else:
                why = reason or f"worker failed: {type(exc).__name__}: {exc}"
                tasks.done(tasks.journal(), chunk,
                           (None, [error_row(c, "WorkerDied", why, internal=False)
                                   for c in chunk]))
