"""Kernels of routing with failed links (numba): which flows cross a failed
link, and the routes with those flows' rows replaced by their re-routes."""

from __future__ import annotations

import numpy as np

from .graphroute import MODE_HOP, sweep, sweep_scratch
from .jit import njit


@njit
def flows_on_failed(flow_ptr, link, failed):
    """Flows with an entry on a failed link, int64[K] ascending.

    ``flow_ptr`` int64[F+1], ``link`` int32[E] (CSR routes), ``failed``
    bool[L]."""
    num_flows = flow_ptr.shape[0] - 1
    out = np.empty(num_flows, dtype=np.int64)
    k = 0
    for f in range(num_flows):
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            if failed[link[e]]:
                out[k] = f
                k += 1
                break
    return out[:k]


@njit
def splice_rows(flow_ptr, link, frac, hops, flows, new_ptr, new_link, new_frac, new_hops):
    """CSR routes with the rows of ``flows`` (ascending) replaced by the rows
    of the re-routes (``new_*``, one row per entry of ``flows``, in that
    order). Returns ``(flow_ptr, link, frac, hops)``."""
    num_flows = flow_ptr.shape[0] - 1
    ptr = np.empty(num_flows + 1, dtype=np.int64)
    ptr[0] = 0
    j = 0
    for f in range(num_flows):
        if j < flows.shape[0] and flows[j] == f:
            ptr[f + 1] = ptr[f] + new_ptr[j + 1] - new_ptr[j]
            j += 1
        else:
            ptr[f + 1] = ptr[f] + flow_ptr[f + 1] - flow_ptr[f]
    out_link = np.empty(ptr[num_flows], dtype=np.int32)
    out_frac = np.empty(ptr[num_flows], dtype=np.float64)
    out_hops = hops.copy()
    j = 0
    for f in range(num_flows):
        at = ptr[f]
        if j < flows.shape[0] and flows[j] == f:
            for e in range(new_ptr[j], new_ptr[j + 1]):
                out_link[at] = new_link[e]
                out_frac[at] = new_frac[e]
                at += 1
            out_hops[f] = new_hops[j]
            j += 1
        else:
            for e in range(flow_ptr[f], flow_ptr[f + 1]):
                out_link[at] = link[e]
                out_frac[at] = frac[e]
                at += 1
    return ptr, out_link, out_frac, out_hops


@njit
def _clear(dist, queue, tail):
    for i in range(tail):
        dist[queue[i]] = -1


@njit
def reroute_in_dag(flows, flow_ptr, link, failed, src, dst, out_ptr, out_link, link_src,
                   link_dst, num_nodes):
    """Re-routes of ``flows`` (split evenly per vertex, ``MODE_HOP`` of
    :mod:`flowemu.kernels.graphroute`) found inside their own routes, where
    those routes hold every shortest path (a family's ``split``).

    A failure removes links but adds none, so when a flow still has a
    surviving path of its old length its new shortest paths are the
    surviving paths of its old shortest-path DAG: every vertex on them keeps
    its distance to the destination, and a link ``u -> v`` with ``dist(v)
    = dist(u) − 1`` out of such a vertex lies on an old shortest path. The
    distances come from a breadth-first search over the flow's own surviving
    entries (backwards from the destination) instead of over the whole
    graph; the forward sweep is :func:`~flowemu.kernels.graphroute.sweep`
    over the same surviving out-links in the same order, so the entries and
    their fractions are those of the graph-wide search, bit for bit.

    ``out_ptr``, ``out_link``: CSR of each vertex's surviving out-links.
    Returns ``(ok, counts, hops, link, frac)``: ``ok[k]`` False when flow
    ``flows[k]`` lost every path of its old length (its row is empty; it
    needs a search beyond its old routes), the entries of the others in
    order."""
    nk = flows.shape[0]
    total = 0
    widest = 1
    for k in range(nk):
        m = flow_ptr[flows[k] + 1] - flow_ptr[flows[k]]
        total += m
        widest = max(widest, m)
    ok = np.ones(nk, dtype=np.bool_)
    counts = np.zeros(nk, dtype=np.int64)
    hops = np.zeros(nk, dtype=np.int32)
    new_link = np.empty(total, dtype=np.int32)
    new_frac = np.empty(total, dtype=np.float64)
    mark = np.full(num_nodes, -1, dtype=np.int64)     # vertex of flow k's DAG
    local = np.empty(num_nodes, dtype=np.int64)        # its index there
    dist = np.full(num_nodes, -1, dtype=np.int64)
    in_ptr = np.zeros(2 * widest + 2, dtype=np.int64)
    in_link = np.empty(widest, dtype=np.int64)
    queue = np.empty(2 * widest + 1, dtype=np.int64)
    val, stamp, front, nxt, no_paths = sweep_scratch(num_nodes)
    n = 0
    for k in range(nk):
        f = flows[k]
        a, b = flow_ptr[f], flow_ptr[f + 1]
        s, d = src[f], dst[f]
        # the DAG's vertices and its surviving links into each
        nloc = 0
        for e in range(a, b):
            for x in (link_src[link[e]], link_dst[link[e]]):
                if mark[x] != k:
                    mark[x] = k
                    local[x] = nloc
                    nloc += 1
        in_ptr[:nloc + 1] = 0
        for e in range(a, b):
            if not failed[link[e]]:
                in_ptr[local[link_dst[link[e]]] + 1] += 1
        for i in range(nloc):
            in_ptr[i + 1] += in_ptr[i]
        for e in range(a, b):
            lk = link[e]
            if not failed[lk]:
                j = local[link_dst[lk]]
                in_link[in_ptr[j]] = lk
                in_ptr[j] += 1
        for i in range(nloc, 0, -1):
            in_ptr[i] = in_ptr[i - 1]
        in_ptr[0] = 0
        # distances to d along the surviving DAG
        dist[d] = 0
        queue[0] = d
        head, tail = 0, 1
        while head < tail:
            v = queue[head]
            head += 1
            if mark[v] != k:
                continue
            j = local[v]
            for i in range(in_ptr[j], in_ptr[j + 1]):
                u = link_src[in_link[i]]
                if dist[u] < 0:
                    dist[u] = dist[v] + 1
                    queue[tail] = u
                    tail += 1
        if dist[s] < 0:
            ok[k] = False
        else:
            hops[k] = dist[s]
            start = n
            n = sweep(s, d, k, dist, out_ptr, out_link, link_dst, MODE_HOP, np.uint64(0),
                      no_paths, val, stamp, front, nxt, new_link, new_frac, n)
            counts[k] = n - start
        _clear(dist, queue, tail)
    return ok, counts, hops, new_link[:n], new_frac[:n]


@njit
def _grid_distance(u, v, coords, dims, wrap):
    """Hop distance between vertices ``u`` and ``v`` of a healthy grid
    (torus or mesh: coordinates ``coords``, sizes ``dims``)."""
    total = 0
    for i in range(dims.shape[0]):
        o = abs(np.int64(coords[u, i]) - np.int64(coords[v, i]))
        if wrap:
            o = min(o, dims[i] - o)
        total += o
    return total


@njit
def reroute_near(flows, src, dst, out_ptr, out_link, in_ptr, in_link, link_src, link_dst,
                 coords, dims, wrap, num_nodes, mode, seed):
    """Re-routes of ``flows`` on a grid with failed links, each found by a
    search bounded by the healthy grid's distances.

    Every vertex ``v`` on a path of length ``D`` from ``s`` to ``d`` has
    ``g(s, v) + g(v, d) <= D`` (``g``: the healthy distance, never more than
    the surviving one). So the breadth-first search from ``d`` over the
    surviving links may skip every other vertex: it is run within ``g(s, v)
    + dist(v, d) <= D`` for ``D = g(s, d) + 2, + 4, + 8, ...`` until it
    reaches ``s``. Within the bound it gives the surviving distance of every vertex
    on a shortest path and of every next hop a vertex there has, which is
    all :func:`~flowemu.kernels.graphroute.sweep` reads: the entries are
    those of the graph-wide search, bit for bit (``mode``: ``MODE_HOP``,
    ``MODE_HASH`` or ``MODE_FIRST``).

    Returns ``(ok, counts, hops, link, frac)``; ``ok[k]`` False when ``d``
    cannot be reached from ``s`` (that row is empty)."""
    nk = flows.shape[0]
    ok = np.ones(nk, dtype=np.bool_)
    counts = np.zeros(nk, dtype=np.int64)
    hops = np.zeros(nk, dtype=np.int32)
    num_links = out_ptr[num_nodes]
    new_link = np.empty(max(16, 8 * nk), dtype=np.int32)
    new_frac = np.empty(new_link.shape[0], dtype=np.float64)
    dist = np.full(num_nodes, -1, dtype=np.int64)
    queue = np.empty(num_nodes, dtype=np.int64)
    val, stamp, front, nxt, no_paths = sweep_scratch(num_nodes)
    reach = 0
    for i in range(dims.shape[0]):
        reach += dims[i]
    n = 0
    for k in range(nk):
        f = flows[k]
        s, d = src[f], dst[f]
        base = _grid_distance(s, d, coords, dims, wrap)
        slack = 2   # (a detour around one failed link takes two more hops)
        while True:
            bound = base + slack
            dist[d] = 0
            queue[0] = d
            head, tail = 0, 1
            far = -1
            while head < tail:
                v = queue[head]
                head += 1
                if far >= 0 and dist[v] >= far:
                    break
                for e in range(in_ptr[v], in_ptr[v + 1]):
                    u = link_src[in_link[e]]
                    if dist[u] >= 0:
                        continue
                    if _grid_distance(s, u, coords, dims, wrap) + dist[v] + 1 > bound:
                        continue
                    dist[u] = dist[v] + 1
                    queue[tail] = u
                    tail += 1
                    if u == s:
                        far = dist[u]
            if dist[s] >= 0 or tail == num_nodes or slack > 2 * reach + num_nodes:
                break
            _clear(dist, queue, tail)
            slack *= 2
        if dist[s] < 0:
            ok[k] = False
        else:
            hops[k] = dist[s]
            if new_link.shape[0] < n + num_links:
                grow = max(n + num_links, 2 * new_link.shape[0])
                bigger = np.empty(grow, dtype=np.int32)
                bigger[:n] = new_link[:n]
                new_link = bigger
                wider = np.empty(grow, dtype=np.float64)
                wider[:n] = new_frac[:n]
                new_frac = wider
            start = n
            n = sweep(s, d, k, dist, out_ptr, out_link, link_dst, mode, seed, no_paths, val,
                      stamp, front, nxt, new_link, new_frac, n)
            counts[k] = n - start
        _clear(dist, queue, tail)
    return ok, counts, hops, new_link[:n], new_frac[:n]
