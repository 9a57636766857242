"""Independent references for the grid families' routes (tests only): BFS
distances over the topology's link lists and the per-hop ECMP split over
every minimal path, in plain Python."""

from __future__ import annotations

from collections import deque

import numpy as np


def adjacency(topo):
    """Outgoing and incoming ``(link, neighbour)`` lists of every vertex."""
    out = [[] for _ in range(topo.num_nodes)]
    inc = [[] for _ in range(topo.num_nodes)]
    for lk, (u, v) in enumerate(zip(topo.link_src.tolist(), topo.link_dst.tolist(),
                                    strict=True)):
        out[u].append((lk, v))
        inc[v].append((lk, u))
    return out, inc


def bfs(adj, start):
    dist = [-1] * len(adj)
    dist[start] = 0
    queue = deque([start])
    while queue:
        u = queue.popleft()
        for _, v in adj[u]:
            if dist[v] < 0:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


class MinimalPaths:
    """All-pairs minimal-path DAGs of a topology, from BFS."""

    def __init__(self, topo):
        self.topo = topo
        self.out, self.inc = adjacency(topo)
        n = topo.num_endpoints
        self.fwd = [bfs(self.out, s) for s in range(n)]
        self.bwd = [bfs(self.inc, t) for t in range(n)]

    def distance(self, s, t):
        return self.fwd[s][t]

    def dag_links(self, s, t):
        """Links on some minimal path from ``s`` to ``t``."""
        ds, dt, total = self.fwd[s], self.bwd[t], self.fwd[s][t]
        src, dst = self.topo.link_src, self.topo.link_dst
        return {lk for lk in range(self.topo.num_links)
                if ds[src[lk]] >= 0 and dt[dst[lk]] >= 0
                and ds[src[lk]] + 1 + dt[dst[lk]] == total}

    def split(self, s, t):
        """``{link: fraction}`` of the per-hop even split: every vertex
        divides the mass reaching it evenly over its minimal out-links."""
        if s == t:
            return {}
        ds, dt, total = self.fwd[s], self.bwd[t], self.fwd[s][t]
        mass = {s: 1.0}
        frac = {}
        layer = [s]
        for _ in range(total):
            nxt = []
            for u in layer:
                outs = [(lk, v) for lk, v in self.out[u]
                        if ds[v] == ds[u] + 1 and dt[v] == total - ds[v]]
                share = mass[u] / len(outs)
                for lk, v in outs:
                    frac[lk] = frac.get(lk, 0.0) + share
                    if v not in mass:
                        nxt.append(v)
                    mass[v] = mass.get(v, 0.0) + share
            layer = nxt
        return frac


def check_single_path(topo, paths, s, t, links):
    """``links`` is a minimal path from ``s`` to ``t`` in order."""
    assert len(links) == paths.distance(s, t)
    at = s
    dag = paths.dag_links(s, t)
    for lk in links:
        assert topo.link_src[lk] == at and lk in dag
        at = int(topo.link_dst[lk])
    assert at == t


def all_pairs(n):
    src, dst = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return src.ravel(), dst.ravel()
