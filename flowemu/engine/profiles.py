"""Schedule × topology × network → per-step profiles → times for all sizes.

Every flow of a schedule carries ``share·n`` bytes, so with max-min sharing
the fluid part of each step is exactly proportional to n: rates do not depend
on n and every event time scales with it. A step is therefore solved once
(with ``bytes = share``) and kept as a small profile of lines
``latency_k + seconds_per_byte_k · n``; the step time for any n is the upper
envelope of those lines plus the slowest node's reduction time
(``reduce_spb · n``). Steps with identical traffic are solved once.

Flow time = α + hops·(link latency + per-hop latency) + fluid transfer time.
Step time = slowest flow + slowest node's reduction
((f+1)·b·δ + (f−1)·b·γ for b bytes reduced with fan-in f, GenModel Table 2).

Incast (GenModel §3.2, eq. 7–10) is charged at receivers, per tier "where
flows converge": the topology gives each flow an incast class
(:meth:`~flowemu.topology.Topology.flow_incast_class`: on a tree the level of
the sender's and receiver's lowest common ancestor, between sites the
cross-site tier) and each class its ``(w_t, ε)``
(:meth:`~flowemu.topology.Topology.incast_classes`: a tree level's ``wt=`` /
``eps=``, else the network's). A receiver gets one ingress resource per class
of the flows into it, with base capacity its ingress bandwidth, fan-in w the
active flows of that class into it, and capacity 1/(β + max(w − w_t, 0)·ε).
Families without tiers have one class with the network's terms: one ingress
resource per receiver counting every flow into it. Incast is on when any
class has ε > 0 and a finite w_t (a tree level's terms apply even when the
network's incast is off).
"""

from __future__ import annotations

import os

import numpy as np

from ..algorithms.base import Reduction, Schedule, Traffic
from ..core import budget, checks, progress
from ..core.errors import ConfigError, show
from ..core.network import Network
from ..topology import checks as topology_checks
from ..topology.base import Topology
from .context import Context, known_key, make_context
from .load import uncontested_rate
from .memory import check_memory
from .steps import (
    adapted,
    flow_latency,
    orbit_lines,
    reduced_route,
    route_step,
    solve_step,
    solve_streams,
)
from .steptimes import (
    Profile,
    StepCongestion,
    StepProfile,
    pareto_lines,
    step_congestion,
)

#: environment variable overriding :func:`default_threads`
THREADS_ENV = "FLOWEMU_THREADS"


def step_profile(ctx: Context, traffic: Traffic, reduction: Reduction, label: str = "",
                 p: int | None = None, congestion: bool = False) -> StepProfile:
    """Solve one step once (bytes = share) and keep its profile; with
    ``congestion`` also its per-link counts and loads."""
    rkey = ("reduction", id(reduction))
    reduce_spb = ctx.key_of.get(rkey)
    if reduce_spb is None:
        reduce_spb = reduction.seconds_per_byte(ctx.network.gamma, ctx.network.delta,
                                                p if p is not None else len(ctx.mapping),
                                                ctx.speed)
        ctx.key_of[rkey] = reduce_spb
    if traffic.num_flows == 0:
        return StepProfile(np.zeros(0), np.zeros(0), reduce_spb, label, 0,
                           StepCongestion(0, 0.0, 0.0, 0.0) if congestion else None)
    key, scale = known_key(ctx, traffic)
    hit = ctx.cache.get(key)
    if _needs_solve(hit, congestion):
        hit = _solve_pattern(ctx, traffic, scale, label, congestion)
        ctx.cache[key] = hit
    lat, spb, cong, moved = hit
    if scale != 1.0:
        # scaled once per pattern and scale: steps that repeat a pattern share
        # their arrays, so Profile.times evaluates each distinct step once
        skey = ("scaled", key, scale)
        scaled = ctx.key_of.get(skey)
        if scaled is None or scaled[0] is not hit:
            if cong is not None:
                cong = StepCongestion(cong.max_flows_per_link, cong.max_link_load * scale,
                                      cong.max_injection * scale, cong.ideal_link_load * scale)
            scaled = (hit, spb * scale, cong, moved * scale)
            ctx.key_of[skey] = scaled
        _, spb, cong, moved = scaled
    return StepProfile(lat, spb, reduce_spb, label, traffic.num_flows, cong, moved)


def _needs_solve(hit, congestion: bool) -> bool:
    """Whether a cached pattern (or ``None``) lacks what this profile needs."""
    return hit is None or (congestion and hit[2] is None)


def _solve_pattern(ctx: Context, traffic: Traffic, scale: float, label: str,
                   congestion: bool) -> tuple:
    """Route and solve a pattern at unit scale (its times scale exactly with
    the bytes): ``(latency lines, seconds-per-byte lines, congestion)``.
    Reads ``ctx`` only, so several can run at once in threads (the kernels
    release the GIL)."""
    try:
        return _solved_pattern(ctx, traffic, scale, label, congestion)
    finally:
        progress.advance()


def _solved_pattern(ctx: Context, traffic: Traffic, scale: float, label: str,
                    congestion: bool) -> tuple:
    norm = traffic.share / scale
    if traffic.aggregation is not None:   # in-network aggregation (engine/aggregation.py)
        sol, sp = solve_streams(ctx, traffic, norm, label)
        cong = step_congestion(ctx.topology, sp.link_routes, sp.root, norm) if congestion \
            else None
        return (*pareto_lines(sp.latency, sol.finish), cong,
                getattr(sol, "background_moved", 0.0))
    # adaptive routes first: a split it keeps is solved exactly as "split" is
    routed = route_step(ctx, traffic) if ctx.adaptive else None
    # (incast on links counts each link's flows: no symmetric or merged-link shortcut)
    plain = not congestion and not (routed and adapted(routed[0])) and ctx.link_incast is None
    lines = orbit_lines(ctx, traffic, norm, label) if plain else None
    if lines is not None:
        return (*lines, None, 0.0)
    fast = reduced_route(ctx, traffic) if plain else None
    if fast is not None:
        routes, capacity, src, dst = fast
        sol = solve_step(ctx, routes, dst, norm, label, src, capacity)
        return (*pareto_lines(flow_latency(ctx, routes), sol.finish), None, 0.0)
    routes, src, dst = routed or route_step(ctx, traffic)
    sol = solve_step(ctx, routes, dst, norm, label, src)
    lat, spb = pareto_lines(flow_latency(ctx, routes), sol.finish)
    cong = step_congestion(ctx.topology, routes, src, norm) if congestion else None
    return lat, spb, cong, getattr(sol, "background_moved", 0.0)


def _solve_patterns(ctx: Context, schedule: Schedule, congestion: bool, threads: int) -> None:
    """Solve the distinct patterns of ``schedule`` not yet in ``ctx.cache``,
    ``threads`` at a time, and cache them. Routing and solving are numba
    kernels that release the GIL, so distinct steps run truly in parallel."""
    todo: dict = {}
    first: dict = {}   # each traffic object once, at its first step (its label)
    for step in schedule.steps.patterns:
        first.setdefault(id(step.traffic), step)
    for step in first.values():
        if step.traffic.num_flows == 0:
            continue
        key, scale = known_key(ctx, step.traffic)
        if key not in todo and _needs_solve(ctx.cache.get(key), congestion):
            todo[key] = (step.traffic, scale, step.label)
    loaded = " under the background" if ctx.load is not None else ""
    progress.begin(f"{ctx.topology.spec} {schedule.algorithm}{loaded}: distinct steps",
                   len(todo))
    if threads <= 1 or len(todo) <= 1:
        return  # step_profile solves them in order
    from concurrent.futures import ThreadPoolExecutor

    # Biggest first (most flows; among equals the later step, since
    # collectives on tori move farther in later steps), so that no thread is
    # left with a big pattern at the end while the others idle.
    items = list(todo.items())
    order = sorted(range(len(items)), key=lambda i: (-items[i][1][0].num_flows, -i))
    with ThreadPoolExecutor(max_workers=min(threads, len(todo))) as pool:
        futures = {items[i][0]: pool.submit(_solve_pattern, ctx, *items[i][1], congestion)
                   for i in order}
        for key, _ in items:
            ctx.cache[key] = futures[key].result()   # re-raises a step's ConfigError/SolverError


def default_threads() -> int:
    """Threads :func:`profile` uses for distinct steps: ``FLOWEMU_THREADS``
    if set, else the cores this process may run on. Sweep pool workers pass
    ``threads=1`` instead (the pool already runs one process per core)."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise ConfigError(f"{THREADS_ENV}: {raw!r} is not allowed; expected an integer >= 1")
        return value
    return available_cores()


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where known)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _check_threads(threads) -> int:
    return default_threads() if threads is None else checks.threads(threads)


def profile(schedule: Schedule, topology: Topology, network: Network | None = None, *,
            ecmp: str = "split", seed: int = 0, mapping=None,
            congestion: bool = False, threads: int | None = None,
            max_memory=None, background=None, slow=None) -> Profile:
    """Profile every step of ``schedule`` on ``topology``: the engine's side of
    :func:`flowemu.profile` (:mod:`flowemu.api.profiling`), whose docstring
    gives every parameter. Here ``background`` and ``slow`` are the objects
    :func:`flowemu.whatif.background.parse_background` and
    :func:`flowemu.whatif.stragglers.parse_slow` make (or None), not specs:
    the engine never parses what-ifs."""
    schedule, topology, network = check_profile_args(schedule, topology, network)
    ecmp, seed = topology_checks.ecmp(ecmp), checks.seed(seed)
    congestion = checks.flag("congestion", congestion)
    threads = _check_threads(threads)
    lim = budget.limit(max_memory)
    if schedule.p > topology.num_endpoints:
        raise ConfigError(f"ranks: {schedule.p} ranks do not fit on {topology.spec} "
                          f"({topology.num_endpoints} endpoints)")
    ctx = make_context(topology, network, ecmp, seed, mapping, schedule.p, background, slow,
                       lim)
    need = check_memory(ctx, schedule, threads, lim, reduced=not congestion and ctx.load is None)
    if ctx.load is not None:   # every solve also carries the background's flows
        ctx.load.check_memory(need, threads, lim, f"{topology.spec} {schedule.algorithm}")
    _solve_patterns(ctx, schedule, congestion, threads)
    # one profile per distinct (traffic, reduction): steps that repeat them
    # (a ring's 2(p-1) equal steps) keep an index into those, not a profile each
    steps = schedule.steps
    distinct = tuple(step_profile(ctx, s.traffic, s.reduction, s.label, schedule.p, congestion)
                     for s in steps.patterns)
    info = dict(schedule.info)
    endpoints = ctx.mapping
    out_ports = np.bincount(topology.link_src, weights=(topology.link_capacity_scale > 0),
                            minlength=topology.num_nodes)[endpoints]
    info["ports_per_node"] = int(out_ports.max()) if len(out_ports) else 0
    if background is not None:
        info["background_rate"] = uncontested_rate(ctx, solve_step)
        info["background_flows"] = ctx.load.num_background if ctx.load is not None else 0
    return Profile(distinct, steps.order, steps.labels, schedule, info)


def check_profile_args(schedule, topology, network) -> tuple:
    """``(schedule, topology, network)`` of :func:`profile`, checked (a spec parsed)."""
    if not isinstance(schedule, Schedule):
        raise ConfigError(f"schedule: {show(schedule)} is not allowed; expected a Schedule "
                          "(e.g. flowemu.algorithms.get_algorithm('ring').build(p, topology))")
    topology = topology_checks.topology(topology)
    if network is not None and not isinstance(network, Network):
        raise ConfigError(f"network: {show(network)} is not allowed; expected a "
                          "flowemu.Network or None")
    return schedule, topology, network or Network()


def direct_times(schedule: Schedule, topology: Topology, network: Network | None = None,
                 sizes=(1.0,), *, ecmp: str = "split", seed: int = 0, mapping=None,
                 background=None, slow=None) -> np.ndarray:
    """Reference path: solve every step at every size with real byte counts
    (no profile, no cache). Used by tests to prove the profile is exact."""
    network = network or Network()
    ctx = make_context(topology, network, ecmp, seed, mapping, schedule.p, background, slow)
    out = np.zeros(len(sizes))
    for i, n in enumerate(sizes):
        total = 0.0
        for step in schedule.steps:
            red = step.reduction.seconds_per_byte(network.gamma, network.delta, schedule.p,
                                                  ctx.speed) * n
            if step.traffic.num_flows == 0:
                total += red
                continue
            if step.traffic.aggregation is not None:
                sol, sp = solve_streams(ctx, step.traffic, step.traffic.share * n, step.label)
                total += float(np.max(sp.latency + sol.finish)) + red
                continue
            routes, src, dst = route_step(ctx, step.traffic)
            sol = solve_step(ctx, routes, dst, step.traffic.share * n, step.label, src)
            total += float(np.max(flow_latency(ctx, routes) + sol.finish)) + red
        out[i] = total
    return out
