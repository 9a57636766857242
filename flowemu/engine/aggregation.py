"""In-network aggregation streams as a max-min problem
(:mod:`flowemu.algorithms.streams`): each stream is one flow whose route is
every link of its aggregation tree, fraction 1 each
(:func:`flowemu.topology.aggregation.stream_tree`, on the endpoints the
ranks run on), so its rate is the max-min share of the tree's tightest link.

A per-switch reduction rate adds one resource per reducing switch (capacity
the rate) to every stream the switch combines: streams through one switch
share its reduction rate. A stream's time is

    α + hops·(per-hop latency) + link latency up and down its longest
    paths + bytes / rate,

as a flow's is (hops = its longest way up plus its longest way down), and no
host-side reduction (the switches combine). Incast is not charged: each
host receives one stream. Background flows join the problem as they do for
flows; slow network ports (``slow=…:network``) are refused (a slow port
binds a stream at every member, not only at a flow's two ends).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..algorithms.base import Traffic
from ..core.errors import ConfigError
from ..topology.aggregation import stream_tree
from ..topology.base import Routes
from .context import Context, check_ranks


@dataclass(frozen=True)
class StreamProblem:
    """A step's streams ready for the solver.

    Attributes
    ----------
    context : Context
        The run's context with the capacity below and incast off.
    routes : Routes
        One row per stream: its links, then its switches' reduction
        resources (ids ``num_links + switch − num_endpoints``).
    capacity : float64[R]
        The links' capacities, then each switch's reduction rate (when
        capped).
    link_routes : Routes
        The rows without the reduction resources (per-link reports).
    root : int64[S]
        Each stream's root endpoint (its ``src`` and ``dst`` for the solver).
    latency : float64[S]
        Each stream's latency (s).
    """

    context: Context
    routes: Routes
    capacity: np.ndarray
    link_routes: Routes
    root: np.ndarray
    latency: np.ndarray


def stream_problem(ctx: Context, traffic: Traffic) -> StreamProblem:
    """The :class:`StreamProblem` of a step whose traffic carries streams."""
    streams = traffic.aggregation
    check_ranks(ctx, traffic)
    lo, hi = int(streams.members.min()), int(streams.members.max())
    if lo < 0 or hi >= len(ctx.mapping):
        raise ConfigError(f"schedule: rank {lo if lo < 0 else hi} is not allowed; "
                          f"expected ranks 0..{len(ctx.mapping) - 1}")
    topo = ctx.topology
    if not topo.has_aggregation_trees:
        raise ConfigError(f"in-network aggregation: {topo.spec} has no aggregation trees (the "
                          "tree, leafspine and fattree families have)")
    mapping, net = ctx.mapping, ctx.network
    slow = ctx.load.slow_ends if ctx.load is not None else np.zeros(0, np.int64)
    if len(slow):
        # a slow port would bind a stream at every member, which the load's
        # per-flow port resources (at a flow's ends) do not express
        raise ConfigError(f"in-network aggregation on {topo.spec}: slow network ports "
                          "(slow=RANKS=F:network) are not modelled for aggregation streams; "
                          "slow compute (slow=RANKS=F) and degraded links (degrade=) are")
    num_links = topo.num_links
    capped = np.isfinite(streams.switch_rate)
    rows, link_rows, hops, latency = [], [], [], []
    for s in range(streams.num_streams):
        tree = stream_tree(topo, mapping[streams.group(s)], int(mapping[traffic.src[s]]),
                           int(streams.kind[s]), int(streams.tree[s]), ctx.link_latency)
        dead = tree.links[ctx.link_capacity[tree.links] <= 0]
        if len(dead):
            lk = int(dead[0])
            raise ConfigError(f"in-network aggregation on {topo.spec}: a stream's tree crosses "
                              f"the failed link {lk} ({int(topo.link_src[lk])} -> "
                              f"{int(topo.link_dst[lk])}); aggregation trees are not re-routed "
                              "around failures (choose another trees= index or no failure)")
        link_rows.append(tree.links)
        rows.append(np.concatenate([tree.links, num_links + tree.reducers
                                    - topo.num_endpoints]) if capped else tree.links)
        hops.append(tree.hops)
        latency.append(tree.latency)
    hops = np.asarray(hops, dtype=np.int32)
    if ctx.uniform_latency is not None:   # as flow_latency charges a flow
        lat = net.alpha + hops.astype(np.float64) * (ctx.uniform_latency + net.hop_latency)
    else:
        lat = net.alpha + hops.astype(np.float64) * net.hop_latency + np.asarray(latency)
    capacity = ctx.link_capacity
    if capped:
        switches = topo.num_nodes - topo.num_endpoints
        capacity = np.concatenate([capacity, np.full(switches, streams.switch_rate)])
    root = mapping[traffic.src].astype(np.int64)
    return StreamProblem(replace(ctx, link_capacity=capacity, ingress_capacity=None),
                         _routes(rows, hops), capacity, _routes(link_rows, hops), root, lat)


def _routes(rows, hops) -> Routes:
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=ptr[1:])
    link = np.concatenate(rows).astype(np.int32) if rows else np.zeros(0, np.int32)
    return Routes(ptr, link, np.ones(len(link)), hops)
