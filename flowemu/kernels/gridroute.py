"""Routing kernels for products of per-dimension *line graphs*: HyperX and
HammingMesh.

Both families are a grid of nodes (row-major node ids, last dimension
fastest) in which every move changes one coordinate, and the links of a
dimension join the nodes of one *line* (all nodes sharing every other
coordinate). A line of ``G`` positions is one of:

* ``KIND_COMPLETE`` (HyperX): every position linked to every other, one hop;
  line edge ``u -> v`` is ``u·(G−1) + (v if v < u else v − 1)``.
* ``KIND_BOARDS`` (HammingMesh): ``n = G/s`` boards of ``s`` positions, a
  path (PCB mesh links) on each board, and one switch (the line's fat tree,
  line vertex ``G``) joined to the two edge positions of every board (local
  ``0``, the west port, and ``s − 1``, the east port; two parallel ports when
  ``s = 1``). Line edges, ``B`` the board and ``l`` the local position:
  ``+`` mesh ``p -> p+1``: ``B(s−1) + l``; ``−`` mesh ``p -> p−1``:
  ``n(s−1) + B(s−1) + l − 1``; port up (side 0 west, 1 east):
  ``2n(s−1) + 2B + side``; port down: ``2n(s−1) + 2n + 2B + side``.

The real link of line edge ``e`` on line ``ℓ`` of dimension ``k`` is
``lbase[k] + ℓ·nedges[k] + e``, the line index ``ℓ = Σ_{i≠k} c_i·lstride[k, i]``
(row-major over the other coordinates).

Distances add over dimensions, and a minimal path is an interleaving of one
minimal walk per dimension, except that a walk through a switch is atomic (a
switch of dimension ``k`` only has links of dimension ``k``). The per-flow
minimal-path DAG is thus the product of small per-dimension DAGs (the
minimal line vertices in order of distance from the source) in which a state
with a coordinate at a switch may only move in that dimension. Its
mixed-radix order is topological; one sweep pushes the flow's mass from the
source, each state splitting it evenly over its out-links (per-hop ECMP, as
the torus kernels do). Status codes instead of exceptions, as in
:mod:`flowemu.kernels.routing`.
"""

from __future__ import annotations

import numpy as np

from .jit import njit
from .routing import STATUS_BAD_NODE, STATUS_COUNT_MISMATCH, STATUS_OK, hop_hash

KIND_COMPLETE = 0
KIND_BOARDS = 1

#: most out-edges of one line vertex in its minimal DAG (a switch: the two
#: ports of the source board and of the destination board)
MAX_DEG = 4

__all__ = ["KIND_BOARDS", "KIND_COMPLETE", "MAX_DEG", "STATUS_BAD_NODE",
           "STATUS_COUNT_MISMATCH", "STATUS_OK", "grid_route_counts", "grid_route_fill",
           "line_dist", "max_path_latency"]


@njit(inline="always")
def _edge_dist(l, s):
    """Hops from local position ``l`` of a board of ``s`` to its nearer edge."""
    return min(l, s - 1 - l)


@njit
def line_dist(kind, size, s, u, v):
    """Hops between line vertices ``u`` and ``v`` (``size`` is the switch)."""
    if u == v:
        return 0
    if kind == KIND_COMPLETE:
        return 1
    if u == size:
        return _edge_dist(v % s, s) + 1
    if v == size:
        return _edge_dist(u % s, s) + 1
    lu = u % s
    lv = v % s
    via = _edge_dist(lu, s) + 2 + _edge_dist(lv, s)
    if u // s == v // s:
        return min(abs(lu - lv), via)
    return via


@njit(inline="always")
def _line_dag(k, kind, size, s, a, b, vert, dsrc, deg, oedge, onext):
    """Minimal DAG of line ``a -> b`` in dimension ``k``: fills row ``k`` of
    the tables (vertices by distance from ``a``, their out-edges and the DAG
    index each leads to); returns ``(vertices, distance)``."""
    vert[k, 0] = a
    dsrc[k, 0] = 0
    if a == b:
        deg[k, 0] = 0
        return 1, 0
    if kind == KIND_COMPLETE:
        vert[k, 1] = b
        dsrc[k, 1] = 1
        deg[k, 0] = 1
        deg[k, 1] = 0
        oedge[k, 0, 0] = a * (size - 1) + (b if b < a else b - 1)
        onext[k, 0, 0] = 1
        return 2, 1
    total = line_dist(kind, size, s, a, b)
    n = size // s
    ba = a // s
    bb = b // s
    # only the two boards and the switch can be on a minimal path
    c = 0
    for r in range(2):
        if r == 1 and bb == ba:
            break
        board = ba if r == 0 else bb
        for l in range(s):
            p = board * s + l
            ds = line_dist(kind, size, s, a, p)
            if ds + line_dist(kind, size, s, p, b) == total:
                vert[k, c] = p
                dsrc[k, c] = ds
                c += 1
    ds = line_dist(kind, size, s, a, size)
    if ds + line_dist(kind, size, s, size, b) == total:
        vert[k, c] = size
        dsrc[k, c] = ds
        c += 1
    # insertion sort by distance from the source (a topological order)
    for i in range(1, c):
        v = vert[k, i]
        d = dsrc[k, i]
        j = i - 1
        while j >= 0 and dsrc[k, j] > d:
            vert[k, j + 1] = vert[k, j]
            dsrc[k, j + 1] = dsrc[k, j]
            j -= 1
        vert[k, j + 1] = v
        dsrc[k, j + 1] = d
    mesh_minus = n * (s - 1)
    port_up = 2 * n * (s - 1)
    port_down = port_up + 2 * n
    for j in range(c):
        v = vert[k, j]
        nd = 0
        want = dsrc[k, j] + 1
        if v == size:
            for r in range(2):
                if r == 1 and bb == ba:
                    break
                board = ba if r == 0 else bb
                for side in range(2):
                    w = board * s + side * (s - 1)
                    for jw in range(j + 1, c):
                        if vert[k, jw] == w and dsrc[k, jw] == want:
                            oedge[k, j, nd] = port_down + 2 * board + side
                            onext[k, j, nd] = jw
                            nd += 1
                            break
        else:
            board = v // s
            l = v % s
            for e in range(4):
                if e == 0:
                    if l >= s - 1:
                        continue
                    w = v + 1
                    edge = board * (s - 1) + l
                elif e == 1:
                    if l == 0:
                        continue
                    w = v - 1
                    edge = mesh_minus + board * (s - 1) + l - 1
                elif e == 2:
                    if l != 0:
                        continue
                    w = size
                    edge = port_up + 2 * board
                else:
                    if l != s - 1:
                        continue
                    w = size
                    edge = port_up + 2 * board + 1
                for jw in range(j + 1, c):
                    if vert[k, jw] == w and dsrc[k, jw] == want:
                        oedge[k, j, nd] = edge
                        onext[k, j, nd] = jw
                        nd += 1
                        break
        deg[k, j] = nd
    return c, total


@njit(inline="always")
def _setup(s_node, t_node, kinds, sizes, boards, strides, coord_s, act, cnt, vert, dsrc,
           deg, oedge, onext):
    """Per-flow DAG tables of every dimension; returns ``(active dims,
    states, hops)``."""
    ndim = kinds.shape[0]
    na = 0
    states = 1
    hops = 0
    for k in range(ndim):
        a = (s_node // strides[k]) % sizes[k]
        b = (t_node // strides[k]) % sizes[k]
        coord_s[k] = a
        c, d = _line_dag(k, kinds[k], sizes[k], boards[k], a, b, vert, dsrc, deg, oedge, onext)
        cnt[k] = c
        hops += d
        if c > 1:
            act[na] = k
            na += 1
            states *= c
    return na, states, hops


@njit(inline="always")
def _line_index(k, na, act, idx, vert, coord_s, lstride, base_line):
    """Index of the dimension-``k`` line through the current state."""
    line = base_line[k]
    for i in range(na):
        k2 = act[i]
        if k2 != k:
            line += (vert[k2, idx[i]] - coord_s[k2]) * lstride[k, k2]
    return line


@njit
def _sweep(write, pos, na, act, states, sizes, cnt, vert, deg, oedge, onext, coord_s,
           lstride, base_line, lbase, nedges, mass, idx, sst, link, frac):
    """Split routing of one flow over its product DAG; returns the next
    entry position (entries are only written when ``write``)."""
    acc = 1
    for i in range(na - 1, -1, -1):
        sst[i] = acc
        acc *= cnt[act[i]]
        idx[i] = 0
    mass[:states] = 0.0
    mass[0] = 1.0
    for st in range(states):
        m = mass[st]
        if m > 0.0:
            at_switch = -1
            for i in range(na):
                k = act[i]
                if vert[k, idx[i]] == sizes[k]:
                    at_switch = i
            total_deg = 0
            if at_switch >= 0:
                total_deg = deg[act[at_switch], idx[at_switch]]
            else:
                for i in range(na):
                    total_deg += deg[act[i], idx[i]]
            if total_deg > 0:
                share = m / total_deg
                for i in range(na):
                    if at_switch >= 0 and i != at_switch:
                        continue
                    k = act[i]
                    j = idx[i]
                    if deg[k, j] == 0:
                        continue
                    first = lbase[k] + _line_index(k, na, act, idx, vert, coord_s, lstride,
                                                   base_line) * nedges[k]
                    for e in range(deg[k, j]):
                        if write:
                            link[pos] = first + oedge[k, j, e]
                            frac[pos] = share
                        pos += 1
                        mass[st + (onext[k, j, e] - j) * sst[i]] += share
        # odometer over the active dimensions, last fastest
        i = na - 1
        while i >= 0:
            idx[i] += 1
            if idx[i] < cnt[act[i]]:
                break
            idx[i] = 0
            i -= 1
    return pos


@njit
def _walk(use_hash, seed, s_node, t_node, pos, na, act, hops, sizes, cnt, vert, deg, oedge,
          onext, coord_s, lstride, base_line, lbase, nedges, idx, link, frac):
    """One minimal path: dimension order (lowest dimension first, a
    dimension's out-edges in table order) or, with ``use_hash``, the
    ``hop_hash mod k``-th of the ``k`` minimal next hops at every hop."""
    for i in range(na):
        idx[i] = 0
    for h in range(hops):
        at_switch = -1
        for i in range(na):
            k = act[i]
            if vert[k, idx[i]] == sizes[k]:
                at_switch = i
        choices = 0
        for i in range(na):
            if at_switch < 0 or i == at_switch:
                choices += deg[act[i], idx[i]]
        r = 0
        if use_hash:
            r = np.int64(hop_hash(seed, s_node, t_node, h) % np.uint64(choices))
        for i in range(na):
            if at_switch >= 0 and i != at_switch:
                continue
            k = act[i]
            j = idx[i]
            d = deg[k, j]
            if r < d:
                line = _line_index(k, na, act, idx, vert, coord_s, lstride, base_line)
                link[pos] = lbase[k] + line * nedges[k] + oedge[k, j, r]
                frac[pos] = 1.0
                pos += 1
                idx[i] = onext[k, j, r]
                break
            r -= d
    return pos


@njit(inline="always")
def _one_dim(s, t, sizes, strides, pair_base):
    """Index of the flow's cached one-dimension route in the pair tables,
    or -1 (the flow moves in no or several dimensions, or its dimension has
    no table). Pair ``(a, b)`` of dimension ``k`` sits at
    ``pair_base[k] + a·size_k + b``."""
    at = -1
    for k in range(sizes.shape[0]):
        a = (s // strides[k]) % sizes[k]
        b = (t // strides[k]) % sizes[k]
        if a != b:
            if at != -1 or pair_base[k] < 0:
                return -1
            at = pair_base[k] + a * sizes[k] + b
    return at


@njit
def _tables(ndim, max_board):
    maxv = 2 * max_board + 1
    return (np.empty(ndim, np.int64), np.empty(ndim, np.int64), np.empty(ndim, np.int64),
            np.empty((ndim, maxv), np.int64), np.empty((ndim, maxv), np.int64),
            np.empty((ndim, maxv), np.int64), np.empty((ndim, maxv, MAX_DEG), np.int64),
            np.empty((ndim, maxv, MAX_DEG), np.int64), np.empty(ndim, np.int64),
            np.empty(ndim, np.int64), np.empty(ndim, np.int64))


@njit
def grid_route_counts(src, dst, kinds, sizes, boards, strides, lstride, lbase, nedges,
                      num_nodes, split, pair_base, tab_ptr, tab_hops, counts, hops):
    """Pass 1: CSR entries and minimal hop count of every flow.

    Parameters
    ----------
    src, dst : int64[F]
        Node ids.
    kinds, sizes, boards, strides : int64[D]
        Line kind, positions per line, board size (1 on a complete line) and
        row-major node stride of each dimension.
    lstride : int64[D, D]
        ``lstride[k, i]``: stride of coordinate ``i`` in the line index of
        dimension ``k`` (0 for ``i == k``).
    lbase, nedges : int64[D]
        First link id and edges per line of each dimension.
    num_nodes : int
    pair_base, tab_ptr, tab_hops
        Cached split routes of flows moving in one dimension (see
        :func:`_one_dim`); ``pair_base[k] = -1`` when dimension ``k`` has none.
    split : bool
        Count the all-minimal-paths DAG (else one path: entries = hops).
    counts : int64[F], hops : int32[F]
        Outputs.

    Returns
    -------
    status, bad_flow, max_states : int64
    """
    ndim = kinds.shape[0]
    max_board = 1
    for k in range(ndim):
        max_board = max(max_board, boards[k])
    act, cnt, coord_s, vert, dsrc, deg, _, onext, idx, sst, base_line = \
        _tables(ndim, max_board)
    oedge = np.empty_like(onext)
    max_states = 1
    mass = np.empty(1, np.float64)
    dummy_link = np.empty(0, np.int32)
    dummy_frac = np.empty(0, np.float64)
    for f in range(src.shape[0]):
        s = src[f]
        t = dst[f]
        if s < 0 or s >= num_nodes or t < 0 or t >= num_nodes:
            return STATUS_BAD_NODE, f, max_states
        at = _one_dim(s, t, sizes, strides, pair_base)
        if at >= 0:
            hops[f] = tab_hops[at]
            counts[f] = tab_ptr[at + 1] - tab_ptr[at] if split else tab_hops[at]
            continue
        na, states, h = _setup(s, t, kinds, sizes, boards, strides, coord_s, act, cnt, vert,
                               dsrc, deg, oedge, onext)
        hops[f] = h
        if not split or na == 0 or na == 1 and kinds[act[0]] == KIND_COMPLETE:
            # one path, or one complete-line hop: entries = hops
            counts[f] = h
        else:
            if states > mass.shape[0]:
                mass = np.empty(2 * states, np.float64)
            counts[f] = _sweep(False, 0, na, act, states, sizes, cnt, vert, deg, oedge, onext,
                               coord_s, lstride, base_line, lbase, nedges, mass, idx, sst,
                               dummy_link, dummy_frac)
        max_states = max(max_states, states)
    return STATUS_OK, -1, max_states


@njit
def grid_route_fill(src, dst, kinds, sizes, boards, strides, lstride, lbase, nedges, mode,
                    seed, pair_base, tab_ptr, tab_edge, tab_frac, flow_ptr, link, frac,
                    max_states):
    """Pass 2: write the entries.

    ``mode`` 0 = split (every minimal path, mass split evenly at every vertex;
    entries in topological order), 1 = dimension order, 2 = hash (seeded,
    per hop). ``tab_edge``, ``tab_frac``: the cached line edges and fractions
    ``tab_ptr`` indexes. Other parameters as :func:`grid_route_counts`; ``flow_ptr`` is
    the prefix sum of its counts and ``link`` (int32[E]), ``frac``
    (float64[E]) are the outputs.

    Returns
    -------
    status, bad_flow : int64
    """
    ndim = kinds.shape[0]
    max_board = 1
    for k in range(ndim):
        max_board = max(max_board, boards[k])
    act, cnt, coord_s, vert, dsrc, deg, _, onext, idx, sst, base_line = \
        _tables(ndim, max_board)
    oedge = np.empty_like(onext)
    mass = np.empty(max(max_states, 1), np.float64)
    for f in range(src.shape[0]):
        s = src[f]
        t = dst[f]
        pos = flow_ptr[f]
        if mode == 0:
            at = _one_dim(s, t, sizes, strides, pair_base)
            if at >= 0:
                k = 0
                while (s // strides[k]) % sizes[k] == (t // strides[k]) % sizes[k]:
                    k += 1
                line = 0
                for i in range(ndim):
                    if i != k:
                        line += ((s // strides[i]) % sizes[i]) * lstride[k, i]
                first = lbase[k] + line * nedges[k]
                for e in range(tab_ptr[at], tab_ptr[at + 1]):
                    link[pos] = first + tab_edge[e]
                    frac[pos] = tab_frac[e]
                    pos += 1
                if pos != flow_ptr[f + 1]:
                    return STATUS_COUNT_MISMATCH, f
                continue
        na, states, h = _setup(s, t, kinds, sizes, boards, strides, coord_s, act, cnt, vert,
                               dsrc, deg, oedge, onext)
        for k in range(ndim):
            line = 0
            for i in range(ndim):
                if i != k:
                    line += coord_s[i] * lstride[k, i]
            base_line[k] = line
        pos = flow_ptr[f]
        if na == 1 and kinds[act[0]] == KIND_COMPLETE:
            # one hop (most collective traffic on a HyperX): no sweep
            k = act[0]
            link[pos] = lbase[k] + base_line[k] * nedges[k] + oedge[k, 0, 0]
            frac[pos] = 1.0
            pos += 1
        elif mode == 0:
            pos = _sweep(True, pos, na, act, states, sizes, cnt, vert, deg, oedge, onext,
                         coord_s, lstride, base_line, lbase, nedges, mass, idx, sst, link, frac)
        else:
            pos = _walk(mode == 2, seed, s, t, pos, na, act, h, sizes, cnt, vert, deg, oedge,
                        onext, coord_s, lstride, base_line, lbase, nedges, idx, link, frac)
        if pos != flow_ptr[f + 1]:
            return STATUS_COUNT_MISMATCH, f
    return STATUS_OK, -1


@njit
def max_path_latency(flow_ptr, link, link_src, link_dst, latency, num_nodes):
    """Largest summed link latency over the paths of each flow, float64[F].

    A flow's entries must list its DAG's links in topological order of their
    tail vertices (as :func:`grid_route_fill` and every single path do); the
    longest path is then one relaxation pass over them."""
    num_flows = flow_ptr.shape[0] - 1
    out = np.zeros(num_flows, np.float64)
    best = np.zeros(num_nodes, np.float64)
    stamp = np.full(num_nodes, -1, np.int64)
    for f in range(num_flows):
        a = flow_ptr[f]
        b = flow_ptr[f + 1]
        if a == b:
            continue
        stamp[link_src[link[a]]] = f
        best[link_src[link[a]]] = 0.0
        far = 0.0
        # the destination is reached last on every path and latencies are
        # >= 0, so the largest distance seen is the destination's
        for e in range(a, b):
            lk = link[e]
            u = link_src[lk]
            v = link_dst[lk]
            here = (best[u] if stamp[u] == f else 0.0) + latency[lk]
            if stamp[v] != f or here > best[v]:
                stamp[v] = f
                best[v] = here
            far = max(far, here)
        out[f] = far
    return out
