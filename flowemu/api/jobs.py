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

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core import budget, checks
from ..core.errors import ConfigError, show
from ..core.placement import parse_placement
from ..core.units import parse_size, parse_time
from ..core.version import __version__
from ..engine.context import make_context
from ..engine.dataflow import check_sync, layout
from ..topology import checks as topology_checks
from ..whatif.conditions import HEALTHY, WHATIF_COLUMNS, check_whatif
from ..whatif.conditions import apply as apply_whatif
from ..whatif.faults import check_fail_policy
from .simulation import build_topology, expand_algorithm

__all__ = ["JOB_COLUMNS", "check_job_failures", "check_jobs", "job_text", "simulate_jobs"]

#: the keys of a job (``"algorithm=ring size=64MiB ranks=512"`` or a dict)
JOB_KEYS = ("algorithm", "size", "ranks", "placement", "start")
#: one line on a job's keys (``flowemu list``)
JOB_DOC = ("algorithm=NAME[:opts] size=SIZE [ranks=N] [placement=packed|linear|random:SEED|FILE] "
           "[start=TIME]: each job its own allreduce, all sharing the network; a row per job "
           "with its time, its time alone and the slowdown")
#: the columns of :func:`simulate_jobs`'s rows, one row per job
JOB_COLUMNS = ["job", "topology", "nodes", "ranks", "algorithm", "variant", "options",
               "placement", "size_bytes", "start_s", "end_s", "time_s", "alone_s", "slowdown",
               "goodput_Bps", "steps", "sync", "ecmp", "seed", "bandwidth_Bps",
               "link_latency_s", "hop_latency_s", "alpha_s", "gamma_s_per_B", "delta_s_per_B",
               "incast_threshold", "incast_slope_s_per_B", *WHATIF_COLUMNS, "flowemu_version"]


@dataclass(frozen=True)
class JobSpec:
    """One job as given, checked: its algorithm spec, size in bytes, ranks
    (None: every endpoint left), placement text ("" for packed) and start."""

    algorithm: str
    size: int
    ranks: int | None
    placement: str
    start: float


def parse_job(raw, index: int) -> JobSpec:
    """A job from ``"key=value key=value ..."`` or a dict of :data:`JOB_KEYS`."""
    where = f"jobs[{index}]"
    if isinstance(raw, str):
        items = {}
        for word in raw.split():
            key, eq, value = word.partition("=")
            if not eq or not value:
                raise ConfigError(f"{where}: {word!r} is not key=value (keys: "
                                  f"{', '.join(JOB_KEYS)}), e.g. 'algorithm=ring size=64MiB "
                                  "ranks=512 start=10us'")
            if key in items:
                raise ConfigError(f"{where}: {key!r} given twice")
            items[key] = value
    elif isinstance(raw, dict):
        items = dict(raw)
    else:
        raise ConfigError(f"{where}: {show(raw)} is not allowed; expected a dict or a text "
                          "'algorithm=NAME size=SIZE [ranks=N] [placement=P] [start=TIME]'")
    unknown = sorted(set(items) - set(JOB_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; expected {', '.join(JOB_KEYS)}")
    for key in ("algorithm", "size"):
        if key not in items:
            raise ConfigError(f"{where}: {key} is missing (keys: {', '.join(JOB_KEYS)})")
    algorithm = checks.text(f"{where}.algorithm", items["algorithm"], "ring")
    size = parse_size(items["size"], f"{where}.size")
    ranks = items.get("ranks")
    if ranks is not None:
        try:
            ranks = int(ranks)
        except (TypeError, ValueError):
            ranks = 0
        if ranks < 2:
            raise ConfigError(f"{where}.ranks: {show(items['ranks'])} is not allowed; expected "
                              "an integer >= 2")
    placement = items.get("placement", "")
    if not isinstance(placement, str):
        raise ConfigError(f"{where}.placement: {show(placement)} is not allowed; expected "
                          "packed, linear, random:SEED or a file of endpoint ids")
    start = items.get("start", 0.0)
    start = parse_time(start, f"{where}.start") if isinstance(start, str) else start
    if isinstance(start, bool) or not isinstance(start, (int, float)) or not start >= 0 \
            or not np.isfinite(start):
        raise ConfigError(f"{where}.start: {show(items.get('start'))} is not allowed; expected "
                          "a time >= 0 with its unit, e.g. 10us")
    if start and not isinstance(items.get("start"), str):
        raise ConfigError(f"{where}.start: {show(start)} needs its unit, e.g. '10us' (only 0 "
                          "may be bare)")
    return JobSpec(algorithm, int(size), ranks, placement.strip(), float(start))


def _mappings(specs: list[JobSpec], topo) -> list[np.ndarray]:
    """Each job's endpoints: packed (the next endpoints no earlier job took,
    in id order), ``linear`` (0..p-1), ``random:SEED`` (drawn from the
    endpoints no earlier job took) or a file. ``linear`` and a file may
    give endpoints an earlier job has: their ranks then share the
    endpoint's links (two communicators on the same nodes)."""
    n = topo.num_endpoints
    owner = np.full(n, -1, dtype=np.int64)
    out = []
    for j, spec in enumerate(specs):
        free = np.flatnonzero(owner < 0)
        try:
            ends, p = _endpoints(spec, free, topo)
        except ConfigError as exc:
            raise ConfigError(f"jobs[{j}].placement: {exc}") from None
        if ends is None and not len(free):
            raise ConfigError(f"jobs[{j}]: no endpoints are left for it (the jobs before it "
                              f"take all {n} endpoints of {topo.spec}); give the jobs ranks= "
                              "that leave room, or placement=linear or a file to share them")
        if p < 2 or (ends is None and p > len(free)):
            what = "ranks" if spec.ranks is not None or not spec.placement else "placement"
            raise ConfigError(f"jobs[{j}].{what}: {p} ranks do not fit on the {len(free)} "
                              f"endpoints of {topo.spec} the jobs before it leave")
        if ends is None:   # packed or random: from the endpoints left
            place = parse_placement(spec.placement) if spec.placement not in ("", "packed") \
                else None
            ends = free[:p] if place is None else \
                np.random.default_rng(place.seed).permutation(free)[:p]
        ends = np.asarray(ends, dtype=np.int64)
        owner[ends] = j
        out.append(ends.astype(np.int32))
    return out


def _endpoints(spec: JobSpec, free, topo):
    """``(endpoints, ranks)`` of a job placed ``linear`` or by a file, or
    ``(None, ranks)`` for a job that takes endpoints left (packed, random)."""
    text = spec.placement
    place = None if text in ("", "packed") else parse_placement(text)
    if place is None or place.kind == "random":
        return None, spec.ranks if spec.ranks is not None else len(free)
    p = spec.ranks if spec.ranks is not None else place.ranks(topo)
    got = place.mapping(p, topo)
    return (np.arange(p) if got is None else got), p


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
    if whatif.healthy:
        return
    topo = build_topology(topology)
    specs, chosen, mappings = check_jobs(topo, jobs)
    applied = apply_whatif(whatif, topo, int(sum(len(m) for m in mappings)), network,
                           np.concatenate(mappings))
    for j, ((alg, candidates), ends) in enumerate(zip(chosen, mappings, strict=True)):
        for _, sched in _schedules(alg, candidates, len(ends), applied.topology, network,
                                   specs[j].size):
            _check_policy(j, sched, applied.topology, ends, whatif.fail_policy, alg)


def _schedules(alg, candidates, p, topo, net, size):
    """``(options, schedule)`` of every candidate of a job; an algorithm that
    plans per size and network plans for the job's size."""
    for cand in candidates:
        if alg.sized is None:
            yield cand, alg.build(p, topo, False, **cand)
        else:
            for sched, _ in alg.sized(p, topo, net, np.array([float(size)]), cand):
                yield cand, sched


def check_jobs(topo, jobs) -> tuple:
    """Every check of ``jobs`` on the built topology ``topo`` short of
    solving: ``(specs, [(algorithm, candidates)], mappings)``; a ConfigError
    names the job and key."""
    if isinstance(jobs, (str, dict)) or not hasattr(jobs, "__len__") or len(jobs) == 0:
        raise ConfigError(f"jobs: {show(jobs)} is not allowed; expected a list of one or more "
                          "jobs, e.g. ['algorithm=ring size=64MiB ranks=512', ...]")
    specs = [parse_job(raw, j) for j, raw in enumerate(jobs)]
    chosen = []
    for j, spec in enumerate(specs):
        try:
            alg, candidates = expand_algorithm(spec.algorithm)
            alg.check_family(topo.spec)
        except ConfigError as exc:
            raise ConfigError(f"jobs[{j}].algorithm: {exc}") from None
        if alg.barrier_only:
            raise ConfigError(f"jobs[{j}].algorithm: {alg.name} times its in-network "
                              "aggregation streams one job at a time; it is not offered in "
                              "several-job runs yet")
        chosen.append((alg, candidates))
    return specs, chosen, _mappings(specs, topo)


def job_text(spec: JobSpec) -> str:
    """A job in canonical form, as :func:`parse_job` reads it back (size in
    bytes, start in seconds; defaults left out)."""
    parts = [f"algorithm={spec.algorithm}", f"size={spec.size}"]
    if spec.ranks is not None:
        parts.append(f"ranks={spec.ranks}")
    if spec.placement and spec.placement != "packed":
        parts.append(f"placement={spec.placement}")
    if spec.start:
        parts.append(f"start={spec.start!r}s")
    return " ".join(parts)


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
    topo = build_topology(topology, lim)
    specs, chosen, mappings = check_jobs(topo, jobs)
    applied = None if whatif.healthy else apply_whatif(
        whatif, topo, int(sum(len(m) for m in mappings)), net, np.concatenate(mappings))
    run_topo = topo if applied is None else applied.topology
    shared = make_context(run_topo, net, ecmp, seed, None, None,
                          None if applied is None else applied.background)
    picked = []
    for j, ((alg, candidates), ends) in enumerate(zip(chosen, mappings, strict=True)):
        p = len(ends)
        jctx = make_context(run_topo, net, ecmp, seed, ends, p)
        best = None
        for cand, sched in _schedules(alg, candidates, p, run_topo, net, specs[j].size):
            if applied is not None:
                _check_policy(j, sched, run_topo, ends, whatif.fail_policy, alg)
            alone_run = layout(shared, [(sched, jctx, sync)], lim)
            alone = float(alone_run.ends(alone_run.solve([specs[j].size]))[0]) \
                if alone_run.num_stages else 0.0
            if best is None or alone < best[2]:
                best = (sched, cand, alone)
        picked.append((best[0], jctx, best[1], best[2]))
    run = layout(shared, [(sched, jctx, sync) for sched, jctx, _, _ in picked], lim)
    sizes = np.array([s.size for s in specs], dtype=np.float64)
    starts = np.array([s.start for s in specs], dtype=np.float64)
    carried = np.nan
    if run.num_stages:
        sol = run.solve(sizes, starts)
        ends = run.ends(sol)
        last = float(sol.end.max())
        if run.persistent is not None and last > 0:
            carried = float(sol.moved[run.num_flows:].sum()) / last
    else:
        ends = starts
    columns = HEALTHY if applied is None else {**HEALTHY, **applied.columns}
    rows = []
    for j, (spec, (sched, jctx, cand, alone)) in enumerate(zip(specs, picked, strict=True)):
        end = max(float(ends[j]), spec.start)
        t = end - spec.start
        rows.append({
            "job": j, "topology": run_topo.spec, "nodes": run_topo.num_endpoints,
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

