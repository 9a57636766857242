"""Running configurations: one configuration, a chunk of them (the worker
task), and the executors (in this process, local processes, or Dask)."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from concurrent.futures import FIRST_COMPLETED, Executor, wait
from functools import lru_cache

from ..errors import ConfigError, FlowEmuError
from .config import Config
from .fields import _topo_info


@lru_cache(maxsize=8)
def _topology(spec: str):
    from ..topology import parse_topology
    return parse_topology(spec)


def run_config(cfg: Config, threads: int | None = None):
    """Time one configuration: all its sizes from one :func:`flowemu.simulate`
    call (one profile). Returns the simulate rows (without sweep columns)."""
    from ..api import simulate
    return simulate(_topology(cfg.topology), cfg.algorithm, list(cfg.sizes), ecmp=cfg.ecmp,
                    seed=cfg.seed, ranks=cfg.ranks, network=cfg.network(), threads=threads)


def run_chunk(configs: list[Config], threads: int | None = None):
    """Worker task: run configurations, never raise for one of them.
    ``threads`` is passed to the engine: pool workers use 1 (the pool already
    keeps every core busy), an in-process run the default (all cores).

    Returns ``(rows DataFrame or None, [error dict, ...])``; the rows carry
    the sweep columns (:data:`flowemu.results.SWEEP_COLUMNS`).
    """
    from ..results import add_config_columns, error_row
    frames, done, errors = [], [], []
    for cfg in configs:
        try:
            frames.append(run_config(cfg, threads))
            done.append(cfg)
        except FlowEmuError as exc:
            errors.append(error_row(cfg, type(exc).__name__, str(exc), internal=False))
        except Exception as exc:  # noqa: BLE001 - a bug must not kill a long sweep
            tb = "".join(traceback.format_exception(exc, limit=-4))
            errors.append(error_row(cfg, type(exc).__name__, f"{exc}\n{tb}", internal=True))
    rows = add_config_columns(frames, done) if frames else None
    return rows, errors


def _chunks(configs: list[Config], workers: int, chunk_size: int | None) -> list[list[Config]]:
    """Batches of configurations. Big topologies first (they set the makespan);
    each batch costs about total / (4 · workers), at most ~100 small configs,
    so per-task overhead stays small and progress stays live."""
    if not configs:
        return []
    cost = {c.hash: 1.0 + _topo_info(c.topology).nodes / 128.0 for c in configs}
    order = sorted(configs, key=lambda c: -_topo_info(c.topology).nodes)
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
    from ..engine import available_cores
    return available_cores()


def _check_jobs(jobs, scheduler) -> None:
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ConfigError(f"jobs: {jobs!r} is not allowed; expected an integer >= 1")
    if scheduler is not None and jobs is not None:
        raise ConfigError("jobs: give either jobs (local processes) or scheduler (a Dask "
                          "cluster), not both")
    if isinstance(scheduler, str) and "://" not in scheduler:
        raise ConfigError(f"scheduler: {scheduler!r} is not an address; expected e.g. "
                          "tcp://host:8786")


def _executor(jobs: int, scheduler):
    """``(executor, workers, close)`` for local processes or a Dask cluster."""
    if scheduler is not None:
        try:
            from distributed import Client
        except ImportError:
            raise ConfigError("scheduler: dask.distributed is not installed; "
                              "pip install 'dask[distributed]'") from None
        if isinstance(scheduler, str):
            try:
                client = Client(scheduler, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise ConfigError(f"scheduler: cannot connect to {scheduler!r}: {exc}") from None
            owned = True
        else:
            client, owned = scheduler, False   # a Client object from Python callers
        workers = max(1, sum(client.nthreads().values()))
        ex = client.get_executor()

        def close(cancel=False):
            ex.shutdown(wait=False)
            if owned:
                client.close()
        return ex, workers, close
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
    ex = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init,
                             initargs=(os.getpid(),))

    def close(cancel=False):
        if cancel:
            # the pool would finish the running chunks first; these are our
            # own workers, stop them now
            for proc in list(getattr(ex, "_processes", {}).values()):
                proc.terminate()
        ex.shutdown(wait=True, cancel_futures=cancel)
    return ex, jobs, close


def _run_local(chunks, on_result):
    for chunk in chunks:
        on_result(chunk, run_chunk(chunk))


def _run_executor(ex: Executor, workers: int, chunks, on_result):
    pending = list(reversed(chunks))
    inflight = {}
    limit = 2 * workers
    while pending or inflight:
        while pending and len(inflight) < limit:
            chunk = pending.pop()
            inflight[ex.submit(run_chunk, chunk, 1)] = chunk
        done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
        for fut in done:
            chunk = inflight.pop(fut)
            on_result(chunk, fut.result())
