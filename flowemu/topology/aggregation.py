"""Aggregation trees of the tree-like families, for in-network aggregation
(switches that reduce the streams of their children and forward one stream
up, then multicast the result down; SHARP-style switch-based reduction).

A family that has them gives :meth:`~flowemu.topology.Topology.aggregation_parent`:
for any vertex and a tree index, its parent in that aggregation tree and the
links up to it and back down (one link each way; the tree index chooses
among parallel links and among spines or cores, so that several trees use
different ones). Everything else here is the same for every family:

* :func:`ancestor_chains` — each vertex's ancestors up to the top;
* :func:`tier_ancestors` — each endpoint's aggregating switch per tier
  (tier 1: the switch hosts attach to; a switch's tier is its height, the
  longest way down to a host, so uneven trees have tiers too);
* :func:`stream_tree` — the links, reducing switches, hops and latencies of
  one aggregation stream over a group of endpoints.

A stream of kind :data:`ALLREDUCE` climbs every member's path to the
group's lowest common ancestor (the members' streams are combined in every
switch where two or more of them meet) and comes back down every path;
:data:`REDUCE` climbs every path and comes down the root's only;
:data:`BROADCAST` climbs the root's path and comes down every path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import ConfigError

#: stream kinds: every member's path up and down / up, then down to the root /
#: up from the root, then down to every member
ALLREDUCE, REDUCE, BROADCAST = 0, 1, 2


@dataclass(frozen=True)
class StreamTree:
    """One aggregation stream over a group of endpoints.

    Attributes
    ----------
    links : int64[E]
        The link ids it occupies (each once: up links child→parent, down
        links parent→child).
    reducers : int64[R]
        The switches that combine two or more of its inputs.
    hops : int
        Links on its longest way up plus its longest way down.
    latency : float
        Link latency on its longest way up plus its longest way down (s).
    top : int
        The vertex where the way up ends (the members' lowest common
        ancestor).
    """

    links: np.ndarray
    reducers: np.ndarray
    hops: int
    latency: float
    top: int


def ancestor_chains(topology, vertices, tree: int = 0) -> tuple:
    """``(chain int64[K, D+1], up int64[K, D], down int64[K, D], length
    int64[K])``: ``chain[i, 0]`` is ``vertices[i]``, ``chain[i, d+1]`` its
    parent in aggregation tree ``tree`` (-1 past the top), ``up``/``down``
    the links between ``chain[i, d]`` and ``chain[i, d+1]``, ``length`` the
    vertices of each chain."""
    cur = np.asarray(vertices, dtype=np.int64)
    chain, ups, downs = [cur], [], []
    alive = np.ones(len(cur), dtype=bool)
    while alive.any():
        parent = np.full(len(cur), -1, dtype=np.int64)
        up = np.full(len(cur), -1, dtype=np.int64)
        down = np.full(len(cur), -1, dtype=np.int64)
        got = topology.aggregation_parent(cur[alive], tree)
        parent[alive], up[alive], down[alive] = got
        alive = parent >= 0
        if not alive.any():
            break
        chain.append(parent)
        ups.append(up)
        downs.append(down)
        cur = parent
        if len(chain) > 64:   # a family's parent map with a cycle: a bug, not a user error
            raise RuntimeError(f"{topology.spec}: aggregation tree {tree} has a cycle")
    chain = np.stack(chain, axis=1)
    empty = np.zeros((len(chain), 0), dtype=np.int64)
    up = np.stack(ups, axis=1) if ups else empty
    down = np.stack(downs, axis=1) if downs else empty
    return chain, up, down, (chain >= 0).sum(axis=1)


def tier_ancestors(topology) -> np.ndarray:
    """int64[N, T]: the switch above each endpoint at every switch tier
    ``1..T`` of aggregation tree 0 (-1 where its chain skips that tier: a
    host attached straight to a higher switch of an uneven tree). A
    switch's tier is its height, the most links between it and a host
    below it."""
    n = int(topology.num_endpoints)
    chain = ancestor_chains(topology, np.arange(n), 0)[0]
    height = np.zeros(int(topology.num_nodes), dtype=np.int64)
    for d in range(1, chain.shape[1]):
        v = chain[:, d]
        ok = v >= 0
        np.maximum.at(height, v[ok], d)
    tiers = int(height.max())
    out = np.full((n, tiers), -1, dtype=np.int64)
    for d in range(1, chain.shape[1]):
        v = chain[:, d]
        ok = np.flatnonzero(v >= 0)
        out[ok, height[v[ok]] - 1] = v[ok]
    return out


def stream_tree(topology, members, root: int, kind: int, tree: int,
                link_latency: np.ndarray) -> StreamTree:
    """The :class:`StreamTree` of one stream of ``kind`` over the endpoints
    ``members`` (int array, distinct, at least two; ``root`` one of them)
    in aggregation tree ``tree``. ConfigError when the members have no
    common ancestor (the sites of a multi-site tree)."""
    members = np.asarray(members, dtype=np.int64)
    chain, up, down, length = ancestor_chains(topology, members, tree)
    tops = chain[np.arange(len(members)), length - 1]
    if (tops != tops[0]).any():
        raise ConfigError(f"in-network aggregation on {topology.spec}: the ranks' switches "
                          "have no common ancestor (a multi-site tree's sites are joined by "
                          "cross-site links, not by a switch); aggregate within one site "
                          "(tiers=) and let the sites' partial sums travel as flows")
    # the lowest common ancestor: the deepest distance from the top where
    # every chain still holds the same vertex
    rows = np.arange(len(members))
    depth = 0
    while depth + 1 < length.min():
        nxt = chain[rows, length - 2 - depth]
        if (nxt != nxt[0]).any():
            break
        depth += 1
    lca = int(chain[0, length[0] - 1 - depth])
    climb = length - 1 - depth                      # links from each member up to the lca
    below = np.arange(chain.shape[1] - 1)[None, :] < climb[:, None]
    lat_up_each = np.where(below, link_latency[np.maximum(up, 0)], 0.0).sum(axis=1)
    lat_down_each = np.where(below, link_latency[np.maximum(down, 0)], 0.0).sum(axis=1)
    child = chain[:, :-1][below]
    parent = chain[:, 1:][below]
    first = np.unique(child, return_index=True)[1]
    up_links, down_links, parents = up[below][first], down[below][first], parent[first]
    counts = np.bincount(parents - parents.min(), minlength=1) if len(parents) else \
        np.zeros(0, np.int64)
    reducers = np.flatnonzero(counts >= 2) + (parents.min() if len(parents) else 0)
    r = int(np.flatnonzero(members == root)[0]) if kind != ALLREDUCE else 0
    if kind == ALLREDUCE:
        links = np.concatenate([up_links, down_links])
        hops = 2 * int(climb.max())
        latency = float(lat_up_each.max() + lat_down_each.max())
    elif kind == REDUCE:
        mine = below[r]
        links = np.concatenate([up_links, down[r][mine]])
        hops = int(climb.max() + climb[r])
        latency = float(lat_up_each.max() + lat_down_each[r])
    elif kind == BROADCAST:
        mine = below[r]
        links = np.concatenate([up[r][mine], down_links])
        hops = int(climb[r] + climb.max())
        latency = float(lat_up_each[r] + lat_down_each.max())
        reducers = np.zeros(0, np.int64)    # a multicast replicates, it reduces nothing
    else:
        raise ValueError(f"stream kind {kind}: expected ALLREDUCE, REDUCE or BROADCAST")
    return StreamTree(np.unique(links), reducers.astype(np.int64), hops, latency, lca)
