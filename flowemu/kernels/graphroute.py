"""Shortest-path routing on an arbitrary directed graph (numba).

Flows are processed grouped by destination: one breadth-first search from
the destination over the incoming links gives every vertex's hop distance to
it, and a flow's shortest paths are then the links ``u -> v`` with
``dist[v] == dist[u] − 1`` reachable from its source (the shortest-path DAG).
A forward sweep from the source, layer by layer, writes the flow's entries
(each link once, in path order):

* ``MODE_HOP`` — each vertex splits the mass reaching it evenly over its
  shortest next-hop links (per-switch ECMP in the fluid limit; the same
  split as the torus family's);
* ``MODE_PATHS`` — every shortest path carries an equal share: a link
  ``u -> v`` carries ``paths(s→u) · paths(v→d) / paths(s→d)``, path counts
  from dynamic programming over the DAG (in float64: exact up to 2**53
  paths, relative error 1e-16 beyond);
* ``MODE_HASH`` — one shortest path, each vertex choosing among its
  next-hop links by a hash of ``(seed, src, dst, hop)``;
* ``MODE_FIRST`` — one shortest path, each vertex taking its first
  next-hop link (lowest position in its outgoing CSR): deterministic.

Since the number of entries is only known after routing, entries go to a
growing buffer in destination order; the caller reorders them into flow
order.
"""

from __future__ import annotations

import numpy as np

from .jit import njit
from .routing import hop_hash

STATUS_OK = 0
#: a flow's destination cannot be reached from its source
STATUS_UNREACHABLE = 3

MODE_HOP = 0
MODE_PATHS = 1
MODE_HASH = 2
MODE_FIRST = 3


@njit
def _bfs_to(d, in_ptr, in_link, link_src, dist, order, reached_before, wanted, tag, need):
    """Hop distance to ``d`` (−1: not reached) over the incoming links;
    ``order`` gets the reached vertices by distance. The search stops once
    the ``need`` vertices with ``wanted == tag`` (the sources of the flows to
    ``d``) are reached and every vertex closer to ``d`` than the farthest of
    them is labelled: a flow's shortest paths only visit those. Returns how
    many vertices were reached; the previous search's ``reached_before``
    labels are cleared first."""
    for i in range(reached_before):
        dist[order[i]] = -1
    dist[d] = 0
    order[0] = d
    head = 0
    tail = 1
    if wanted[d] == tag:
        need -= 1
    far = -1
    while head < tail:
        v = order[head]
        head += 1
        if need == 0:
            if far < 0:
                far = dist[order[tail - 1]]
            if dist[v] >= far:
                break
        for e in range(in_ptr[v], in_ptr[v + 1]):
            u = link_src[in_link[e]]
            if dist[u] < 0:
                dist[u] = dist[v] + 1
                order[tail] = u
                tail += 1
                if wanted[u] == tag:
                    need -= 1
    return tail


@njit
def _grow(buf, need):
    if need <= buf.shape[0]:
        return buf
    out = np.empty(max(need, 2 * buf.shape[0]), dtype=buf.dtype)
    out[:buf.shape[0]] = buf
    return out


@njit
def sweep_scratch(num_nodes):
    """Scratch arrays of :func:`sweep` without path counts: ``(val, stamp,
    front, nxt, to_d)``."""
    return (np.zeros(num_nodes, dtype=np.float64), np.full(num_nodes, -1, dtype=np.int64),
            np.empty(num_nodes, dtype=np.int64), np.empty(num_nodes, dtype=np.int64),
            np.zeros(0, dtype=np.float64))


@njit
def sweep(s, d, k, dist, out_ptr, out_link, link_dst, mode, seed, to_d, val, stamp, front, nxt,
          link, frac, n):
    """Write flow ``s -> d``'s entries at ``link[n:]``, ``frac[n:]`` (room
    for every link once is the caller's), layer by layer from ``s`` along
    the links ``u -> v`` with ``dist[v] == dist[u] − 1`` (``dist``: hop
    distance to ``d``, −1 where unknown), split by ``mode``; returns the new
    ``n``. ``k`` must differ from every earlier call's (it stamps
    ``stamp``); ``to_d``: shortest-path counts to ``d`` (``MODE_PATHS``
    only); ``val``, ``front``, ``nxt``: scratch of one slot per vertex."""
    front[0] = s
    width = 1
    val[s] = 1.0
    stamp[s] = k
    for layer in range(dist[s]):
        width_next = 0
        for i in range(width):
            u = front[i]
            want = dist[u] - 1
            nhops = 0
            for e in range(out_ptr[u], out_ptr[u + 1]):
                if dist[link_dst[out_link[e]]] == want:
                    nhops += 1
            pick = -1
            if mode == MODE_HASH:
                pick = np.int64((hop_hash(seed, s, d, layer) >> np.uint64(1))
                                % np.uint64(nhops))
            elif mode == MODE_FIRST:
                pick = 0
            j = -1
            for e in range(out_ptr[u], out_ptr[u + 1]):
                lk = out_link[e]
                v = link_dst[lk]
                if dist[v] != want:
                    continue
                j += 1
                if pick >= 0 and j != pick:
                    continue
                if mode == MODE_PATHS:
                    share = val[u] * to_d[v] / to_d[s]
                    add = val[u]
                elif mode == MODE_HOP:
                    share = val[u] / nhops
                    add = share
                else:
                    share = 1.0
                    add = 1.0
                link[n] = lk
                # (a sum of even splits may round past 1: a share never does)
                frac[n] = min(1.0, share)
                n += 1
                if stamp[v] != k:
                    stamp[v] = k
                    val[v] = 0.0
                    nxt[width_next] = v
                    width_next += 1
                val[v] += add
        front, nxt = nxt, front
        width = width_next
    return n


@njit
def graph_route(src, dst, flows_by_dst, out_ptr, out_link, in_ptr, in_link, link_src, link_dst,
                num_nodes, mode, seed):
    """Route every flow on shortest paths.

    Parameters
    ----------
    src, dst : int64[F]
        Vertex ids.
    flows_by_dst : int64[F]
        Flow ids sorted by destination (the processing order).
    out_ptr, out_link : int64[V+1], int64[L]
        CSR of each vertex's outgoing link ids.
    in_ptr, in_link : int64[V+1], int64[L]
        CSR of each vertex's incoming link ids.
    link_src, link_dst : int32[L]
    mode : int
        ``MODE_HOP``, ``MODE_PATHS``, ``MODE_HASH`` or ``MODE_FIRST``.
    seed : uint64

    Returns
    -------
    status : int64
        ``STATUS_OK`` or ``STATUS_UNREACHABLE``.
    bad_flow : int64
    counts : int64[F]
        Entries of each flow, in ``flows_by_dst`` order.
    hops : int32[F]
        Hop count of each flow (flow order).
    link, frac : int32[E], float64[E]
        Entries, flows in ``flows_by_dst`` order.
    """
    num_flows = src.shape[0]
    counts = np.zeros(num_flows, dtype=np.int64)
    hops = np.zeros(num_flows, dtype=np.int32)
    link = np.empty(max(16, 4 * num_flows), dtype=np.int32)
    frac = np.empty(link.shape[0], dtype=np.float64)
    dist = np.full(num_nodes, -1, dtype=np.int64)
    bfs = np.empty(num_nodes, dtype=np.int64)
    wanted = np.full(num_nodes, -1, dtype=np.int64)
    reached = 0
    to_d = np.zeros(num_nodes, dtype=np.float64)     # shortest paths v -> d
    val = np.zeros(num_nodes, dtype=np.float64)      # mass (hop) or paths s -> v
    stamp = np.full(num_nodes, -1, dtype=np.int64)
    front = np.empty(num_nodes, dtype=np.int64)
    nxt = np.empty(num_nodes, dtype=np.int64)
    n = 0
    cur_d = -1
    for k in range(num_flows):
        f = flows_by_dst[k]
        s = src[f]
        d = dst[f]
        if d != cur_d:
            cur_d = d
            # tag the distinct sources of the flows to d (they are contiguous)
            need = 0
            k2 = k
            while k2 < num_flows and dst[flows_by_dst[k2]] == d:
                u = src[flows_by_dst[k2]]
                if wanted[u] != k:
                    wanted[u] = k
                    need += 1
                k2 += 1
            reached = _bfs_to(d, in_ptr, in_link, link_src, dist, bfs, reached, wanted, k,
                              need)
            if mode == MODE_PATHS:
                for i in range(reached):
                    to_d[bfs[i]] = 0.0
                to_d[d] = 1.0
                for i in range(reached):
                    v = bfs[i]
                    for e in range(in_ptr[v], in_ptr[v + 1]):
                        u = link_src[in_link[e]]
                        if dist[u] == dist[v] + 1:
                            to_d[u] += to_d[v]
        if s == d:
            continue
        if dist[s] < 0:
            return STATUS_UNREACHABLE, f, counts, hops, link[:n], frac[:n]
        hops[f] = dist[s]
        start = n
        # at most every link of the graph once
        link = _grow(link, n + out_ptr[num_nodes])
        frac = _grow(frac, link.shape[0])
        n = sweep(s, d, k, dist, out_ptr, out_link, link_dst, mode, seed, to_d, val, stamp,
                  front, nxt, link, frac, n)
        counts[k] = n - start
    return STATUS_OK, -1, counts, hops, link[:n], frac[:n]


@njit
def reachable(start, ptr, link, link_end):
    """Vertices reachable from ``start`` along CSR adjacency (``ptr``,
    ``link``: the links leaving (or entering) each vertex; ``link_end``: the
    vertex each link leads to), bool[V] by breadth-first search."""
    n = len(ptr) - 1
    seen = np.zeros(n, dtype=np.bool_)
    queue = np.empty(n, dtype=np.int64)
    seen[start] = True
    queue[0] = start
    head, tail = 0, 1
    while head < tail:
        v = queue[head]
        head += 1
        for e in range(ptr[v], ptr[v + 1]):
            w = link_end[link[e]]
            if not seen[w]:
                seen[w] = True
                queue[tail] = w
                tail += 1
    return seen


def route_in_flow_order(src, dst, out_ptr, out_link, in_ptr, in_link, link_src, link_dst,
                        num_nodes, mode, seed):
    """:func:`graph_route` with its entries put back in flow order.

    Returns ``(status, bad_flow, flow_ptr, link, frac, hops)``: ``flow_ptr``
    int64[F+1], ``link`` int32[E], ``frac`` float64[E], ``hops`` int32[F]
    (meaningful when ``status == STATUS_OK``)."""
    src = np.ascontiguousarray(src, dtype=np.int64)
    dst = np.ascontiguousarray(dst, dtype=np.int64)
    by_dst = np.argsort(dst, kind="stable").astype(np.int64)
    status, bad, counts_sorted, hops, link_buf, frac_buf = graph_route(
        src, dst, by_dst, out_ptr, out_link, in_ptr, in_link, link_src, link_dst, num_nodes,
        mode, np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF))
    num_flows = len(src)
    counts = np.empty(num_flows, dtype=np.int64)
    counts[by_dst] = counts_sorted
    flow_ptr = np.zeros(num_flows + 1, dtype=np.int64)
    np.cumsum(counts, out=flow_ptr[1:])
    sorted_ptr = np.zeros(num_flows + 1, dtype=np.int64)
    np.cumsum(counts_sorted, out=sorted_ptr[1:])
    # entry i of the buffer (destination order) goes to its flow's row
    shift = np.repeat(flow_ptr[by_dst] - sorted_ptr[:-1], counts_sorted)
    where = np.arange(len(link_buf), dtype=np.int64) + shift
    link = np.empty(len(link_buf), dtype=np.int32)
    frac = np.empty(len(link_buf), dtype=np.float64)
    link[where] = link_buf
    frac[where] = frac_buf
    return int(status), int(bad), flow_ptr, link, frac, hops
