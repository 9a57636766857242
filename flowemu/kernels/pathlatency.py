"""Longest latency over the paths of each flow's route (numba).

A flow split over several paths finishes when its slowest path has
delivered, so its latency is the largest path latency, not the average the
fractions would give (they differ when split paths cross links of different
latency: a graph file's links, a Dragonfly's Valiant detours)."""

from __future__ import annotations

import numpy as np

from .jit import njit


@njit
def dag_max_latency(flow_ptr, link, link_src, link_dst, lat, num_nodes):
    """Largest latency of a path through each flow's entries, float64[F].

    A flow's entries form a DAG from its source to its destination; its
    longest path by ``lat`` is found by relaxing the entries until nothing
    changes (at most one pass per hop). The source is the one vertex no
    entry enters."""
    num_flows = flow_ptr.shape[0] - 1
    out = np.zeros(num_flows, dtype=np.float64)
    dist = np.full(num_nodes, -np.inf)
    indeg = np.zeros(num_nodes, dtype=np.int64)
    for f in range(num_flows):
        a0 = flow_ptr[f]
        b0 = flow_ptr[f + 1]
        if b0 == a0:
            continue
        for e in range(a0, b0):
            indeg[link_dst[link[e]]] += 1
        for e in range(a0, b0):
            u = link_src[link[e]]
            if indeg[u] == 0:
                dist[u] = 0.0
        changed = True
        while changed:
            changed = False
            for e in range(a0, b0):
                l = link[e]
                du = dist[link_src[l]]
                if du > -np.inf and du + lat[l] > dist[link_dst[l]]:
                    dist[link_dst[l]] = du + lat[l]
                    changed = True
        best = 0.0
        for e in range(a0, b0):
            v = link_dst[link[e]]
            best = max(best, dist[v])
        out[f] = best
        for e in range(a0, b0):
            l = link[e]
            dist[link_src[l]] = -np.inf
            dist[link_dst[l]] = -np.inf
            indeg[link_dst[l]] = 0
    return out
