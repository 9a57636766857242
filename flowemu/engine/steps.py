"""One step, routed and solved: its flows' routes (ECMP, adaptive), the
family's reduced problem or one flow per orbit where they are exact, the
max-min completion solve with the run's incast, background and slow ports,
and each flow's latency. :mod:`flowemu.engine.profiles` turns the finish
times into a step's lines (:mod:`flowemu.engine.steptimes`)."""

from __future__ import annotations

import numpy as np

from ..algorithms.base import Traffic
from ..core import progress
from ..core.errors import SolverError
from ..kernels.maxmin import solve_completion
from ..topology.base import Routes
from .adaptive import AdaptedRoutes, adaptive_routes
from .aggregation import stream_problem
from .context import Context, endpoints, step_orbits
from .steptimes import pareto_lines


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


def adapted(routes: Routes) -> bool:
    """Whether ``ecmp="adaptive"`` changed these routes' split fractions."""
    return isinstance(routes, AdaptedRoutes)


def reduced_route(ctx: Context, traffic: Traffic):
    """``(routes, capacity, src, dst)`` of the family's exact reduced
    problem built straight from the flows (:meth:`Topology.solver_routes`),
    or None. Only where every link has the same latency, so a flow's hops
    give its latency as they do on the full routes."""
    if ctx.uniform_latency is None or ctx.load is not None:
        return None   # (background flows join the full routes)
    src, dst = endpoints(ctx, traffic)
    got = ctx.topology.solver_routes(src, dst, ctx.ecmp, ctx.link_capacity)
    return None if got is None else (*got, src, dst)


def orbit_lines(ctx: Context, traffic: Traffic, norm: np.ndarray, label: str):
    """The step's latency and seconds-per-byte lines solved on one flow per
    orbit (:meth:`Topology.orbit_problem`), or None (no
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
    exact = adapted(routes) or ctx.link_incast is not None or not reducible
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
    with progress.counting(np.zeros(1, np.int64), finishing(routes, persistent)) as counter:
        sol = solve_completion(
            routes, capacity, flow_bytes, flow_dst=dst,
            ingress_capacity=ctx.ingress_capacity, incast_threshold=w_t, incast_slope=eps,
            flow_class=flow_class, persistent=persistent, link_incast=link_incast,
            counter=counter)
    if sol.status != 0:
        raise SolverError(f"max-min solver failed (status {sol.status}) on {ctx.topology.spec}, "
                          f"step {label!r}, {routes.num_flows} flows")
    return sol if persistent is None else ctx.load.split(sol, num_flows)


def finishing(routes, persistent) -> int:
    """The flows a solve's events finish (a path, not persistent; one of 0
    bytes at the first): the total the progress line shows."""
    routed = np.diff(routes.flow_ptr) > 0
    return int(np.count_nonzero(routed if persistent is None else routed & ~persistent))


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


def solve_streams(ctx: Context, traffic: Traffic, flow_bytes: np.ndarray, label: str) -> tuple:
    """``(solution, StreamProblem)`` of a step of aggregation streams
    carrying ``flow_bytes`` each (:mod:`flowemu.engine.aggregation`)."""
    sp = stream_problem(ctx, traffic)
    return solve_step(sp.context, sp.routes, sp.root, flow_bytes, label, sp.root, sp.capacity,
                      reducible=False), sp
