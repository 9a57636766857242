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
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from ..algorithms.base import Reduction, Schedule, Traffic
from ..core import budget, checks, progress
from ..core.errors import ConfigError, SolverError, show
from ..core.network import Network
from ..kernels.maxmin import solve_completion
from ..topology import checks as topology_checks
from ..topology.base import Routes, Topology
from .adaptive import AdaptedRoutes, adaptive_routes
from .aggregation import stream_problem
from .context import (
    Context,
    endpoints,
    known_key,
    make_context,
    step_orbits,
)
from .load import background_throughput, uncontested_rate
from .memory import check_memory

#: environment variable overriding :func:`default_threads`
THREADS_ENV = "FLOWEMU_THREADS"


@dataclass(frozen=True)
class StepProfile:
    """Time of one step as a function of the vector size n.

    ``time(n) = max_k(latency[k] + spb[k]·n) + reduce_spb·n``; the lines kept
    are the Pareto front of the step's flows (no kept line is beaten by
    another in both latency and slope), so the max is exact.
    """

    latency: np.ndarray
    spb: np.ndarray
    reduce_spb: float
    label: str = ""
    num_flows: int = 0
    congestion: StepCongestion | None = None
    #: bytes background flows moved during the step's fluid phase, per byte of n
    background_bytes: float = 0.0

    @property
    def max_flows_per_link(self) -> int:
        """Most flows crossing one link direction (needs ``congestion=True``)."""
        if self.congestion is None:
            raise ConfigError("congestion: profile(..., congestion=True) computes per-link counts")
        return self.congestion.max_flows_per_link

    def time(self, sizes) -> np.ndarray:
        """This step's time at each size, float64[sizes] (sizes as
        :meth:`Profile.times` takes them)."""
        return self.time_at(checks.size_points(sizes))

    def time_at(self, n: np.ndarray) -> np.ndarray:
        """:meth:`time` at sizes the caller has checked (float64[k] of
        positive byte counts): a profile's times evaluate every distinct
        step with it, their sizes checked once."""
        if len(self.latency) == 0:
            return self.reduce_spb * n
        comm = np.max(self.latency[:, None] + self.spb[:, None] * n[None, :], axis=0)
        return comm + self.reduce_spb * n


@dataclass(frozen=True)
class StepCongestion:
    """Link usage of one step, in bytes per byte of the vector size n.

    ``max_link_load`` is the most bytes crossing one link direction;
    ``max_injection`` the most bytes a node puts on one of its outgoing
    links (a port); ``ideal_link_load`` the bytes per port if the busiest
    sender spread its bytes evenly over all its ports.
    """

    max_flows_per_link: int
    max_link_load: float
    max_injection: float
    ideal_link_load: float

    @property
    def load_vs_ideal(self) -> float:
        return self.max_link_load / self.ideal_link_load if self.ideal_link_load else 1.0


def link_totals(routes: Routes, share: np.ndarray, num_links: int) -> tuple:
    """``(load float64[L], flows int64[L], entry_load float64[E])`` of routed
    flows carrying ``share`` bytes each: the bytes on each link (``Σ
    share·frac``), the flows crossing it, and each route entry's bytes."""
    entry_load = routes.frac * np.repeat(np.asarray(share, dtype=np.float64),
                                         np.diff(routes.flow_ptr))
    return (np.bincount(routes.link, weights=entry_load, minlength=num_links),
            np.bincount(routes.link, minlength=num_links), entry_load)


def step_congestion(topology: Topology, routes: Routes, src_node: np.ndarray,
                    share: np.ndarray) -> StepCongestion:
    """Per-link flow counts and loads of one routed step."""
    flow_of = np.repeat(np.arange(routes.num_flows), np.diff(routes.flow_ptr))
    per_link_load, per_link_flows, load = link_totals(routes, share, topology.num_links)
    first_hop = topology.link_src[routes.link] == src_node[flow_of]
    injection = np.bincount(routes.link[first_hop], weights=load[first_hop],
                            minlength=topology.num_links)
    sent = np.bincount(src_node, weights=share, minlength=topology.num_nodes)
    ports = np.bincount(topology.link_src, weights=(topology.link_capacity_scale > 0),
                        minlength=topology.num_nodes)
    busiest = int(np.argmax(sent))
    ideal = float(sent[busiest] / max(ports[busiest], 1))
    return StepCongestion(int(per_link_flows.max()), float(per_link_load.max()),
                          float(injection.max()), ideal)


@dataclass(frozen=True)
class Profile:
    """Per-step profiles of one schedule on one topology and network.

    Held as the schedule's distinct step profiles (``distinct``, in first-use
    order), each step's entry in them (``index``) and each step's label: a ring
    on 16k ranks has 32k steps but one distinct profile, and its times cost
    what that one costs. :attr:`steps` gives one :class:`StepProfile` per step.
    """

    distinct: tuple[StepProfile, ...]
    index: np.ndarray
    labels: Sequence[str]
    schedule: Schedule | None = None
    info: dict = field(default_factory=dict)

    @property
    def num_steps(self) -> int:
        return len(self.index)

    @cached_property
    def steps(self) -> tuple[StepProfile, ...]:
        """One StepProfile per step (made on first use)."""
        return tuple(d if d.label == label else replace(d, label=label)
                     for d, label in zip((self.distinct[i] for i in self.index.tolist()),
                                         self.labels, strict=True))

    def counted(self) -> list[tuple[StepProfile, int]]:
        """``(distinct step profile, how many steps use it)``, in first-use order."""
        counts = np.bincount(self.index, minlength=len(self.distinct)).tolist()
        return list(zip(self.distinct, counts, strict=True))

    def congestion_report(self):
        """Per-step congestion and the run's deficiencies (Swing paper §2.2).

        Returns ``(steps, summary)``: a DataFrame with one row per step
        (``step, label, flows, max_flows_per_link, max_link_load,
        max_port_injection, load_vs_ideal``; loads in bytes per byte of n)
        and a dict with ``psi`` and ``xi``.

        The paper models the bandwidth term as (n/D)·β·Ψ·Ξ (eq. 1). Here
        Ψ = Σ_s (bytes on the busiest port in step s) / (2(p−1)/p · n / ports),
        i.e. how many more bytes than an optimal allreduce spread over all
        ports, and Ξ = Σ_s (bytes on the busiest link) / Σ_s (bytes on the
        busiest port), the slowdown from messages sharing links. Ψ·Ξ is the
        bandwidth time relative to optimal. (Table 2 gives Ξ of the
        latency-optimal algorithms as a sum of distances, not as a ratio;
        compare those through Ψ·Ξ.)
        """
        import pandas as pd

        if any(s.congestion is None for s in self.steps):
            raise ConfigError("congestion: profile(..., congestion=True) is needed for a congestion "
                              "report")
        rows = [{"step": k, "label": s.label, "flows": s.num_flows,
                 "max_flows_per_link": s.congestion.max_flows_per_link,
                 "max_link_load": s.congestion.max_link_load,
                 "max_port_injection": s.congestion.max_injection,
                 "load_vs_ideal": s.congestion.load_vs_ideal} for k, s in enumerate(self.steps)]
        df = pd.DataFrame(rows)
        p = self.schedule.p if self.schedule is not None else 0
        ports = self.info.get("ports_per_node", 0)
        ideal = 2 * (p - 1) / p / ports if p and ports else float("nan")
        inj = float(df.max_port_injection.sum())
        link = float(df.max_link_load.sum())
        summary = {"psi": inj / ideal, "xi": link / inj if inj else float("nan"),
                   "psi_xi": link / ideal}
        return df, summary

    def step_times(self, sizes) -> np.ndarray:
        """float64[steps, sizes] (sizes as :meth:`times` takes them)."""
        n = checks.size_points(sizes)
        if not self.distinct:
            return np.zeros((0, len(n)))
        return np.stack([s.time_at(n) for s in self.distinct])[self.index]

    def times(self, sizes) -> np.ndarray:
        """Total time for each size, float64[sizes], in the order given:
        a size or size spec (``"1MiB"``, ``"32B..512MiB"``: every power of
        two), or a number or 1-D list/array of byte counts or size strings.
        A size that is not a positive, finite number of bytes is a
        ConfigError naming it."""
        n = checks.size_points(sizes)
        # Steps with the same solved lines (the engine caches them) are
        # evaluated once and counted; the summation order is fixed by first use.
        groups: dict = {}
        for s, count in self.counted():
            key = (id(s.latency), id(s.spb), s.reduce_spb)
            if key in groups:
                groups[key][1] += count
            else:
                groups[key] = [s, count]
        total = np.zeros(len(n))
        for s, count in groups.values():
            total += count * s.time_at(n)
        return total

    def background_throughput(self, sizes) -> np.ndarray:
        """Background bytes/s averaged over the run, float64[sizes] (zeros
        without background; the approximation is in :mod:`flowemu.whatif.background`;
        sizes as :meth:`times` takes them)."""
        return background_throughput(self, checks.size_points(sizes))


def pareto_lines(latency: np.ndarray, spb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lines not dominated in both intercept and slope (enough for an exact
    max over n ≥ 0)."""
    if len(latency) == 0:
        return latency, spb
    order = np.lexsort((-spb, -latency))  # latency desc, then slope desc
    lat, sl = latency[order], spb[order]
    prev_max = np.maximum.accumulate(np.concatenate(([-np.inf], sl[:-1])))
    keep = sl > prev_max
    return lat[keep].copy(), sl[keep].copy()


def route_step(ctx: Context, traffic: Traffic) -> tuple[Routes, np.ndarray, np.ndarray]:
    src, dst = endpoints(ctx, traffic)
    routes = ctx.topology.route(src, dst, ecmp=ctx.ecmp, seed=ctx.seed)
    if ctx.adaptive:
        routes = adaptive_step(ctx, routes, src, dst, traffic.share)
    return routes, src, dst


def adaptive_step(ctx: Context, routes: Routes, src: np.ndarray, dst: np.ndarray,
                  flow_bytes: np.ndarray) -> Routes:
    """``ecmp="adaptive"``: the step's split routes rebalanced over each
    flow's minimal paths to minimise the most loaded link for these bytes
    and the link capacities (:func:`flowemu.engine.adaptive.adaptive_routes`; the
    routes themselves where the split is optimal). The fractions depend on
    the bytes' ratios only, so the profile stays exact in n."""
    try:
        capacity = ctx.link_capacity if ctx.adaptive_capacity is None else \
            ctx.adaptive_capacity
        return adaptive_routes(routes, ctx.topology.link_src, ctx.topology.link_dst, src, dst,
                               flow_bytes, capacity)
    except SolverError as exc:
        raise SolverError(f"{exc} on {ctx.topology.spec}") from None


def _adapted(routes: Routes) -> bool:
    """Whether ``ecmp="adaptive"`` changed these routes' split fractions."""
    return isinstance(routes, AdaptedRoutes)


def _reduced_route(ctx: Context, traffic: Traffic):
    """``(routes, capacity, src, dst)`` of the family's exact reduced
    problem built straight from the flows (:meth:`Topology.solver_routes`),
    or None. Only where every link has the same latency, so a flow's hops
    give its latency as they do on the full routes."""
    if ctx.uniform_latency is None or ctx.load is not None:
        return None   # (background flows join the full routes)
    src, dst = endpoints(ctx, traffic)
    got = ctx.topology.solver_routes(src, dst, ctx.ecmp, ctx.link_capacity)
    return None if got is None else (*got, src, dst)


def _orbit_lines(ctx: Context, traffic: Traffic, norm: np.ndarray, label: str):
    """The step's latency and seconds-per-byte lines solved on one flow per
    orbit (:func:`_orbit`, :meth:`Topology.orbit_problem`), or None (no
    symmetry, or receivers' ingress capacities that do not share it)."""
    orbits = step_orbits(ctx, traffic)
    if orbits is None:
        return None
    src, dst = endpoints(ctx, traffic)
    problem = ctx.topology.orbit_problem(orbits, src, dst, ctx.ecmp, ctx.link_capacity)
    ingress = ctx.ingress_capacity
    if ingress is not None and not np.array_equal(ingress, ingress[problem.node_orbit]):
        return None
    sol = solve_step(ctx, problem.routes, problem.dst, norm[problem.flows], label,
                     np.asarray(src)[problem.flows], problem.capacity)
    return pareto_lines(flow_latency(ctx, problem.routes), sol.finish)


def solve_step(ctx: Context, routes: Routes, dst: np.ndarray, flow_bytes: np.ndarray, label: str,
           src: np.ndarray | None = None, capacity: np.ndarray | None = None,
           reducible: bool = True):
    """Solve one routed step (``src``, ``dst``: endpoint ids; ``src`` is
    needed when the topology has several incast classes). ``capacity``:
    the routes are already the family's reduced problem with these link
    capacities. ``reducible=False``: routes the family's
    :meth:`~flowemu.topology.Topology.solver_problem` must not reduce
    (aggregation streams)."""
    persistent, num_flows = None, routes.num_flows
    # every link as it is: adaptive fractions, incast on links, aggregation streams
    exact = _adapted(routes) or ctx.link_incast is not None or not reducible
    if ctx.load is not None:   # background flows and slow ports join (flowemu/background.py)
        routes, capacity, src, dst, flow_bytes, persistent = ctx.load.problem(
            ctx, routes, src, dst, flow_bytes, reduce=not exact)
    elif capacity is None:
        # a family may hand the solver an exact, smaller problem (fat-tree uplink groups);
        # not for adaptive fractions, which break the symmetry it relies on
        routes, capacity = (routes, ctx.link_capacity) if exact else \
            ctx.topology.solver_problem(routes, ctx.link_capacity, ctx.ecmp)
    link_incast = incast_links(ctx, len(capacity))
    if len(capacity) > 4 * len(routes.link):
        # A step that touches few of many links (a HyperX has N·Σ(d−1)): the
        # solver's per-link work would dominate, so it sees the used links only.
        used = np.flatnonzero(np.bincount(routes.link, minlength=len(capacity)))
        remap = np.empty(len(capacity), dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        routes = Routes(routes.flow_ptr, remap[routes.link], routes.frac, routes.hops)
        capacity = capacity[used]
        if link_incast is not None:
            link_incast = (link_incast[0][used], link_incast[1][used])
    w_t, eps, flow_class = incast_inputs(ctx, src, dst)
    sol = solve_completion(
        routes, capacity, flow_bytes, flow_dst=dst,
        ingress_capacity=ctx.ingress_capacity, incast_threshold=w_t, incast_slope=eps,
        flow_class=flow_class, persistent=persistent, link_incast=link_incast)
    if sol.status != 0:
        raise SolverError(f"max-min solver failed (status {sol.status}) on {ctx.topology.spec}, "
                          f"step {label!r}, {routes.num_flows} flows")
    return sol if persistent is None else ctx.load.split(sol, num_flows)


def incast_links(ctx: Context, num_resources: int):
    """The links' own incast terms for a problem of ``num_resources``
    resources (the links, then virtual ones such as background demands,
    which have none), or None."""
    if ctx.link_incast is None:
        return None
    w_t, eps = ctx.link_incast
    extra = num_resources - len(w_t)
    if extra <= 0:
        return w_t, eps
    return np.concatenate([w_t, np.full(extra, np.inf)]), np.concatenate([eps, np.zeros(extra)])


def incast_inputs(ctx: Context, src, dst) -> tuple:
    """``(w_t, eps, flow_class)`` for the solver: scalars and no classes when
    the topology has one incast class (or incast is off), else the classes'
    terms and each flow's class."""
    if ctx.ingress_capacity is None:   # no receiver charges incast (or its context turns it off)
        return float("inf"), 0.0, None
    if len(ctx.incast_threshold) == 1:
        return float(ctx.incast_threshold[0]), float(ctx.incast_slope[0]), None
    if src is None:
        raise ValueError("solve_step: src is needed on a topology with several incast classes")
    return ctx.incast_threshold, ctx.incast_slope, ctx.topology.flow_incast_class(src, dst)


def flow_latency(ctx: Context, routes: Routes) -> np.ndarray:
    """α + hops·(per-hop latency) + the link latencies along the path (the
    largest over its ECMP paths), float64[F]."""
    net = ctx.network
    if ctx.uniform_latency is not None:   # hops · (link + hop latency), as one product
        return net.alpha + routes.hops.astype(np.float64) * (ctx.uniform_latency
                                                             + net.hop_latency)
    return net.alpha + routes.hops.astype(np.float64) * net.hop_latency \
        + ctx.topology.path_latency(routes, ctx.link_latency)


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
    plain = not congestion and not (routed and _adapted(routed[0])) and ctx.link_incast is None
    lines = _orbit_lines(ctx, traffic, norm, label) if plain else None
    if lines is not None:
        return (*lines, None, 0.0)
    fast = _reduced_route(ctx, traffic) if plain else None
    if fast is not None:
        routes, capacity, src, dst = fast
        sol = solve_step(ctx, routes, dst, norm, label, src, capacity)
        return (*pareto_lines(flow_latency(ctx, routes), sol.finish), None, 0.0)
    routes, src, dst = routed or route_step(ctx, traffic)
    sol = solve_step(ctx, routes, dst, norm, label, src)
    lat, spb = pareto_lines(flow_latency(ctx, routes), sol.finish)
    cong = step_congestion(ctx.topology, routes, src, norm) if congestion else None
    return lat, spb, cong, getattr(sol, "background_moved", 0.0)


def solve_streams(ctx: Context, traffic: Traffic, flow_bytes: np.ndarray, label: str) -> tuple:
    """``(solution, StreamProblem)`` of a step of aggregation streams
    carrying ``flow_bytes`` each (:mod:`flowemu.engine.aggregation`)."""
    sp = stream_problem(ctx, traffic)
    return solve_step(sp.context, sp.routes, sp.root, flow_bytes, label, sp.root, sp.capacity,
                      reducible=False), sp


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
    ctx = make_context(topology, network, ecmp, seed, mapping, schedule.p, background, slow)
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
