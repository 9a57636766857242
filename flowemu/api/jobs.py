"""Several jobs at once: collectives of several jobs sharing one network.

:func:`simulate_jobs` times jobs that each run their own allreduce — own
algorithm, vector size, ranks, placement and start time — on one topology
at the same time. Their flows share the links max-min fairly in one
event-driven solve (:mod:`flowemu.engine.dataflow`); each job runs its steps
at a barrier of its own (``sync="barrier"``: a job's step ends when all its
flows are delivered) or in dataflow. Each job's row gives its time, the time
it takes alone on the same network, and the slowdown.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..algorithms import algorithm_names
from ..algorithms.registry import serving
from ..core import budget, checks
from ..core.errors import ConfigError, show
from ..core.version import __version__
from ..engine.context import make_context
from ..engine.dataflow import check_sync, layout
from ..topology import checks as topology_checks
from ..whatif.conditions import HEALTHY, WHATIF_COLUMNS, check_whatif, unfaulted
from ..whatif.conditions import apply as apply_whatif
from ..whatif.faults import check_fail_policy
from ..whatif.jobs import JOB_KEYS, JobSpec, job_mappings, job_text, parse_job
from .run import build_topology, expand_algorithm

__all__ = ["JOB_COLUMNS", "JOB_KEYS", "JobSpec", "check_job_failures", "check_job_schedules",
           "check_jobs", "job_text", "parse_job", "simulate_jobs"]

#: one line on a job's keys (``flowemu list``)
JOB_DOC = ("algorithm=NAME[:opts] size=SIZE [ranks=N] [placement=packed|linear|random:SEED|FILE] "
           "[start=TIME]: each job its own allreduce, all sharing the network; a row per job "
           "with its time, its time alone and the slowdown")
#: the columns of :func:`simulate_jobs`'s rows, one row per job
JOB_COLUMNS = ["job", "job_set", "topology", "nodes", "ranks", "algorithm", "variant", "options",
               "placement", "size_bytes", "start_s", "end_s", "time_s", "alone_s", "slowdown",
               "goodput_Bps", "steps", "sync", "ecmp", "seed", "bandwidth_Bps",
               "link_latency_s", "hop_latency_s", "alpha_s", "gamma_s_per_B", "delta_s_per_B",
               "incast_threshold", "incast_slope_s_per_B", *WHATIF_COLUMNS, "flowemu_version"]


def _check_policy(j, sched, topo, ends, policy, alg) -> None:
    """A topology-bound job a failure breaks is refused under ``strict``."""
    try:
        check_fail_policy(sched, topo, ends, policy, alg)
    except ConfigError as exc:
        raise ConfigError(f"jobs[{j}]: {exc}") from None


def check_job_failures(topology, jobs, network, fail, degrade, fail_policy) -> None:
    """What :func:`simulate_jobs` refuses about failed links before it solves
    (a ConfigError naming the job): a rank cut off, a topology-bound job a
    failure breaks under ``fail_policy="strict"``."""
    whatif = check_whatif(fail, degrade, fail_policy, None, None)
    topo, whatif = unfaulted(build_topology(topology), whatif)
    if whatif.healthy:
        return
    specs, chosen, mappings = check_jobs(topo, jobs)
    applied = apply_whatif(whatif, topo, int(sum(len(m) for m in mappings)), network,
                           np.concatenate(mappings))
    for j, ((alg, candidates), ends) in enumerate(zip(chosen, mappings, strict=True)):
        for _, sched in _schedules(j, alg, candidates, len(ends), applied.topology, network,
                                   specs[j].size):
            _check_policy(j, sched, applied.topology, ends, whatif.fail_policy, alg)


def check_job_schedules(topology, jobs, network) -> None:
    """What :func:`simulate_jobs` refuses before it solves on a healthy
    network, each job's schedules built (and dropped): a ConfigError naming
    the job (``ring:ports=4`` on ranks that are no 2-D grid)."""
    topo = build_topology(topology)
    specs, chosen, mappings = check_jobs(topo, jobs)
    for j, ((alg, candidates), ends) in enumerate(zip(chosen, mappings, strict=True)):
        _schedules(j, alg, candidates, len(ends), topo, network, specs[j].size)


def _schedules(j, alg, candidates, p, topo, net, size) -> list:
    """``(options, schedule)`` of every candidate of job ``j``; an algorithm
    that plans per size and network plans for the job's size. What its
    builder refuses (``ring:ports=4`` on ranks that are no 2-D grid) names
    the job."""
    out = []
    try:
        for cand in candidates:
            if alg.sized is None:
                out.append((cand, alg.build(p, topo, False, **cand)))
            else:
                out.extend((cand, sched)
                           for sched, _ in alg.sized(p, topo, net, np.array([float(size)]), cand))
    except ConfigError as exc:
        raise ConfigError(_job_message(j, exc)) from None
    return out


def _job_message(j: int, exc: ConfigError) -> str:
    """``exc``'s message about an algorithm, located at job ``j``: the
    location names the field once (``jobs[0].algorithm: ...`` for
    ``algorithm: ...``, ``jobs[0].algorithm ring: ...`` for a builder's
    ``algorithm ring: ...``)."""
    msg = str(exc)
    if msg.startswith("algorithm "):
        return f"jobs[{j}].{msg}"
    return f"jobs[{j}].algorithm: {msg.removeprefix('algorithm: ')}"


def check_jobs(topo, jobs) -> tuple:
    """Every check of ``jobs`` on the built topology ``topo`` short of
    solving: ``(specs, [(algorithm, candidates)], mappings)``; a ConfigError
    names the job and key."""
    if isinstance(jobs, (str, dict)) or not hasattr(jobs, "__len__") or len(jobs) == 0 \
            or getattr(jobs, "ndim", 1) != 1:   # (a DataFrame's items are its column names)
        raise ConfigError(f"jobs: {show(jobs)} is not allowed; expected a list of one or more "
                          "jobs, e.g. ['algorithm=ring size=64MiB ranks=512', ...]"
                          + (" (a DataFrame of them: df.to_dict('records'))"
                             if getattr(jobs, "ndim", 1) == 2 else ""))
    specs = [parse_job(raw, j) for j, raw in enumerate(jobs)]
    chosen = []
    for j, spec in enumerate(specs):
        try:
            alg, candidates = expand_algorithm(spec.algorithm)
            alg.check_family(topo.spec)
        except ConfigError as exc:
            name = spec.algorithm.partition(":")[0].strip()
            serves = serving(name)
            if serves and name not in algorithm_names():
                raise ConfigError(
                    f"jobs[{j}].algorithm: {name!r} serves {', '.join(serves)}; a job is an "
                    "allreduce (several jobs of other collectives are not offered); allreduce's "
                    f"algorithms: {', '.join(algorithm_names())}") from None
            raise ConfigError(_job_message(j, exc)) from None
        if alg.barrier_only:
            raise ConfigError(f"jobs[{j}].algorithm: {alg.name} times its in-network "
                              "aggregation streams one job at a time; it is not offered in "
                              "several-job runs yet")
        chosen.append((alg, candidates))
    mappings = job_mappings(specs, topo)
    for j, ((alg, candidates), ends) in enumerate(zip(chosen, mappings, strict=True)):
        if alg.check is not None:   # what its builder would refuse, without building
            try:
                for cand in candidates:
                    alg.check(len(ends), cand)
            except ConfigError as exc:
                raise ConfigError(_job_message(j, exc)) from None
    return specs, chosen, mappings


def simulate_jobs(topology, jobs, *, sync: str = "barrier", ecmp: str = "split",
                  seed: int = 0, network=None, max_memory=None, fail=None, degrade=None,
                  fail_policy: str = "strict", background=None,
                  **network_params) -> pd.DataFrame:
    """Time several jobs' allreduces sharing one network.

    Parameters
    ----------
    topology : str or Topology
    jobs : list of str or dict
        One entry per job: ``"algorithm=swing size=64MiB ranks=2048
        placement=random:1 start=20us"`` or the same as a dict. ``algorithm``
        and ``size`` are required; ``ranks`` defaults to every endpoint the
        jobs before it left; ``placement`` is ``packed`` (default: the next
        endpoints no earlier job took, in id order), ``linear`` (endpoints
        0..ranks-1), ``random:SEED`` (drawn from the endpoints left) or a
        file of endpoint ids; with ``linear`` or a file two jobs may share
        endpoints (and their links), e.g. two communicators on every node. ``start``
        (default 0) is when the job's first step starts. An ``auto`` option
        runs the variant fastest for the job alone.
    sync : {"barrier", "dataflow"}
        How each job runs its steps: at a barrier of its own (a step ends
        when all the job's flows of the step are delivered and its slowest
        rank has reduced) or in dataflow (:func:`flowemu.simulate`).
    ecmp, seed, network, max_memory, **network_params
        As for :func:`flowemu.simulate`.
    fail, degrade, fail_policy, background
        What-ifs, as for :func:`flowemu.simulate`. Slow ranks are not taken
        (they name ranks, which each job numbers from 0).

    Returns
    -------
    pandas.DataFrame
        One row per job with :data:`JOB_COLUMNS`: ``start_s`` and
        ``end_s`` on the common clock, ``time_s = end_s - start_s``,
        ``alone_s`` the job's time alone on the same network (with the same
        what-ifs), ``slowdown = time_s / alone_s`` and ``goodput_Bps =
        size_bytes / time_s``.
    """
    lim = budget.limit(max_memory)
    net = checks.network(network, network_params, "simulate_jobs",
                         ("sync", "ecmp", "seed", "network", "max_memory", "fail", "degrade",
                          "fail_policy", "background"))
    sync = check_sync(sync)
    (ecmp, seed) = topology_checks.routing(ecmp, seed)
    whatif = check_whatif(fail, degrade, fail_policy, None, background)
    topo, whatif = unfaulted(build_topology(topology, lim), whatif)
    specs, chosen, mappings = check_jobs(topo, jobs)
    applied = None if whatif.healthy else apply_whatif(
        whatif, topo, int(sum(len(m) for m in mappings)), net, np.concatenate(mappings))
    run_topo = topo if applied is None else applied.topology
    shared = make_context(run_topo, net, ecmp, seed, None, None,
                          None if applied is None else applied.background, limit=lim)
    picked = []
    for j, ((alg, candidates), ends) in enumerate(zip(chosen, mappings, strict=True)):
        p = len(ends)
        jctx = make_context(run_topo, net, ecmp, seed, ends, p)
        best = None
        for cand, sched in _schedules(j, alg, candidates, p, run_topo, net, specs[j].size):
            if applied is not None:
                _check_policy(j, sched, run_topo, ends, whatif.fail_policy, alg)
            alone_run = layout(shared, [(sched, jctx, sync)], lim)
            alone = float(alone_run.ends(alone_run.solve([specs[j].size]))[0]) \
                if alone_run.num_stages else 0.0
            if best is None or alone < best[2]:
                best = (sched, cand, alone)
        keep = {id(pat.traffic) for pat in best[0].steps.patterns}   # routes layout memoised
        jctx.key_of = {k: v for k, v in jctx.key_of.items()
                       if not (k[0] == "dataflow" and k[1] not in keep)}
        picked.append((best[0], jctx, best[1], best[2]))
    parts = [(sched, jctx, sync) for sched, jctx, _, _ in picked]
    sizes = np.array([s.size for s in specs], dtype=np.float64)
    starts = np.array([s.start for s in specs], dtype=np.float64)
    if applied is not None and applied.background is not None:
        # one solve on the common clock: the background couples every job and
        # moves its bytes in the gaps between them too
        run = layout(shared, parts, lim)
        times, carried = np.zeros(len(specs)), np.nan
        if run.num_stages:
            sol = run.solve(sizes, starts)
            times = np.maximum(run.ends(sol) - starts, 0.0)
            last = float(sol.end.max())
            if last > 0:
                carried = float(sol.moved[run.num_flows:].sum()) / last
    else:
        times = _apart(shared, parts, sizes, starts, np.array([a for *_, a in picked]), lim)
        carried = np.nan
    columns = HEALTHY if applied is None else {**HEALTHY, **applied.columns}
    # the set, as a sweep's algorithm_spec names it: tells apart two sets that
    # share a job (a slowdown's healthy twin is the same job of the same set)
    job_set = "jobs[" + " | ".join(job_text(s) for s in specs) + "]"
    rows = []
    for j, (spec, (sched, jctx, cand, alone)) in enumerate(zip(specs, picked, strict=True)):
        t = float(times[j])
        end = spec.start + t
        rows.append({
            "job": j, "job_set": job_set, "topology": run_topo.spec, "nodes": run_topo.num_endpoints,
            "ranks": sched.p, "algorithm": chosen[j][0].name, "variant": sched.variant,
            "options": ",".join(f"{k}={v}" for k, v in sorted(cand.items())),
            "placement": spec.placement or "packed", "size_bytes": spec.size,
            "start_s": spec.start, "end_s": end, "time_s": t, "alone_s": alone,
            "slowdown": t / alone if alone > 0 else np.nan,
            "goodput_Bps": spec.size / t if t > 0 else np.inf, "steps": sched.num_steps,
            "sync": sync, "ecmp": ecmp, "seed": seed, "bandwidth_Bps": net.bandwidth,
            "link_latency_s": net.link_latency, "hop_latency_s": net.hop_latency,
            "alpha_s": net.alpha, "gamma_s_per_B": net.gamma, "delta_s_per_B": net.delta,
            "incast_threshold": net.incast_threshold, "incast_slope_s_per_B": net.incast_slope,
            **columns, "background_Bps": carried, "flowemu_version": __version__})
    return pd.DataFrame(rows, columns=JOB_COLUMNS)


def _apart(shared, parts, sizes, starts, alone, lim) -> np.ndarray:
    """Each job's time from its start to its end: the jobs whose runs overlap (a job that
    starts before the ones started earlier have all ended) are solved
    together, each such set on a clock of its own that starts at its first
    job's start. A job that starts long after the others (``start=1e6s``
    beside jobs of microseconds) is then timed as precisely as one at 0: on
    the common clock its times would be sums of 1e6 and microseconds, and
    the solver's relative tie between finishing flows (1e-12 of the clock)
    a microsecond. A set starts with the jobs that would overlap if each took
    its time ``alone`` (usually the whole set: one solve), and grows while a
    solve ends after the next job's start. (Which jobs share a solve changes
    nothing but rounding: the ones that do not overlap do not meet.)"""
    n = len(parts)
    order = np.argsort(starts, kind="stable")
    times = np.zeros(n)
    i = 0
    while i < n:
        first = float(starts[order[i]])
        k, guess = i + 1, float(alone[order[i]])
        while k < n and starts[order[k]] - first < guess:
            guess = max(guess, float(starts[order[k]] - first + alone[order[k]]))
            k += 1
        while True:
            members = np.sort(order[i:k])   # (in the jobs' order, as one solve of them all)
            run = layout(shared, [parts[m] for m in members], lim)
            rel = starts[members] - first
            ends = run.ends(run.solve(sizes[members], rel)) if run.num_stages else rel
            span = float(np.maximum(ends, rel).max())
            more = k
            while more < n and starts[order[more]] - first < span:
                more += 1
            if more == k:
                break
            k = more
        times[members] = np.maximum(ends - rel, 0.0)
        i = k
    return times

