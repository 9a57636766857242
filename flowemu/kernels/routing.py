"""Routing kernels for k-ary n-dimensional tori and meshes.

Arrays in, arrays out, status codes instead of exceptions (the topology layer
turns a nonzero status into a :class:`~flowemu.core.errors.RoutingError` naming the
flow). Routing is two-pass so no Python code loops over flows:

1. :func:`torus_route_counts` computes the number of CSR entries and the hop
   count of every flow in closed form;
2. the caller prefix-sums the counts into ``flow_ptr`` and allocates;
3. :func:`torus_route_fill_split` (every minimal path, ECMP mass split at each
   node) or :func:`torus_route_fill_path` (one path: dimension order or
   seeded hash) writes the entries.

Node ids are row-major over ``dims`` (last dimension fastest) and link
``node * 2D + 2 * dim + b`` leaves ``node`` in dimension ``dim``, ``b = 0`` in
the + direction and ``b = 1`` in the − direction.

Minimal routes in one dimension
-------------------------------
With source coordinate ``a`` and destination ``b`` on a ring of ``d`` nodes the
offset ``o = (b - a) mod d`` is travelled ``+`` when ``2o < d`` and ``−`` when
``2o > d``; when ``2o == d`` both ways are minimal (a *tie*). On a mesh the
offset is the signed ``b - a``, never a tie. In split mode each dimension is a
small chain of *progress states*:

* non-tie dimension, distance ``m``: states ``0..m`` (one link between
  consecutive states);
* tie dimension, distance ``m = d/2``: ``2m`` states ordered
  ``0, +1, −1, +2, −2, …, +(m−1), −(m−1), end`` (index ``2k−1`` is ``+k``,
  index ``2k`` is ``−k``, index ``2m−1`` is the destination coordinate
  reached either way). State 0 has two out-links (+ and −).

The minimal-path DAG of a flow is the product of its per-dimension chains.
Every transition raises exactly one per-dimension index, so the mixed-radix
order of the product states is topological: one sweep in that order pushes the
flow's mass from the source to the destination, each state dividing its mass
evenly over its out-links, which is what per-hop ECMP hardware does. Distinct
states sit on distinct nodes (the per-dimension coordinates of a chain are
distinct), so every (state, out-link) pair is a distinct link and each link is
emitted exactly once per flow.

A flow that moves in one dimension only (most collective traffic on a torus)
skips the sweep: its entries have fraction 1 (or 1/2 on a tie) and are written
directly.
"""

from __future__ import annotations

import numpy as np

from .hashing import GOLDEN, mix64
from .jit import njit

#: kernel status codes
STATUS_OK = 0
#: a source or destination id is outside ``0..num_nodes-1``
STATUS_BAD_NODE = 1
#: the fill pass wrote a different number of entries than the count pass
#: predicted (an internal inconsistency, never expected)
STATUS_COUNT_MISMATCH = 2



@njit(inline="always")
def _dim_route(cs, ct, d, wrap):
    """Minimal travel in one dimension: ``(distance, direction ±1, tie)``."""
    if wrap:
        o = ct - cs
        if o < 0:
            o += d
        if 2 * o < d:
            return o, 1, False
        if 2 * o > d:
            return d - o, -1, False
        return o, 1, True
    o = ct - cs
    if o >= 0:
        return o, 1, False
    return -o, -1, False


@njit
def hop_hash(seed, src, dst, hop):
    """Hash of ``(seed, src, dst, hop)`` used by ``ecmp="hash"`` (uint64).

    Parameters
    ----------
    seed : uint64
    src, dst, hop : int64
    """
    h = mix64(seed + GOLDEN)
    h = mix64(h ^ np.uint64(src))
    h = mix64(h ^ np.uint64(dst) ^ GOLDEN)
    return mix64(h ^ np.uint64(hop))


@njit
def torus_route_counts(src, dst, dims, strides, coords, wrap, split, counts, hops):
    """Pass 1: CSR entries and minimal hop count of every flow.

    Parameters
    ----------
    src, dst : int64[F]
        Node ids.
    dims : int64[D]
        Size of each dimension.
    strides : int64[D]
        Row-major node-id stride of each dimension (``strides[D-1] == 1``).
    coords : int32[N, D]
        Coordinates of every node (``coords[v, i] = (v // strides[i]) %
        dims[i]``), a table because integer division costs more than the
        rest of a flow's routing.
    wrap : bool
        True for a torus, False for a mesh.
    split : bool
        True to count the entries of the all-minimal-paths DAG, False for one
        path (entries = hops).
    counts : int64[F]
        Output: entries of each flow.
    hops : int32[F]
        Output: minimal hop count of each flow.

    Returns
    -------
    status : int64
        ``STATUS_OK`` or ``STATUS_BAD_NODE``.
    bad_flow : int64
        First failing flow (-1 when ok).
    max_states : int64
        Largest number of DAG states of any flow (size of the split kernel's
        scratch buffer).
    """
    num_flows = src.shape[0]
    ndim = dims.shape[0]
    num_nodes = strides[0] * dims[0]
    max_states = 1
    for f in range(num_flows):
        s = src[f]
        t = dst[f]
        if s < 0 or s >= num_nodes or t < 0 or t >= num_nodes:
            return STATUS_BAD_NODE, f, max_states
        dist = 0
        # States and edges of the product DAG, accumulated one dimension at a
        # time: edges(A×B) = edges(A)·|B| + |A|·edges(B).
        states = 1
        edges = 0
        for i in range(ndim):
            d = dims[i]
            m, _, tie = _dim_route(np.int64(coords[s, i]), np.int64(coords[t, i]), d, wrap)
            dist += m
            if split:
                if tie:
                    n_i = 2 * m
                    e_i = 2 * m
                else:
                    n_i = m + 1
                    e_i = m
                edges = edges * n_i + states * e_i
                states *= n_i
        hops[f] = dist
        counts[f] = edges if split else dist
        max_states = max(max_states, states)
    return STATUS_OK, -1, max_states


@njit(inline="always")
def _wrapped(c, d):
    if c >= d:
        return c - d
    if c < 0:
        return c + d
    return c


@njit
def _fill_one_dim(s, stride, d, i, two_d, m, direction, tie, a0, link, frac, pos):
    """Split routing of a flow that moves in dimension ``i`` only.

    The DAG is one chain (or, for a tie, two chains meeting at the
    destination), so every mass is 1 (or 1/2) and no mass buffer is needed.
    Entries come out in the same order as the general sweep produces. Link
    ids are stepped incrementally (one add per hop, one more on wrapping)
    because this loop writes most of the entries of typical collective
    traffic, which moves along one dimension at a time.
    """
    step = stride * two_d
    wrap_back = d * step
    if not tie:
        lk = s * two_d + 2 * i + (0 if direction > 0 else 1)
        c = a0
        for _ in range(m):
            link[pos] = lk
            frac[pos] = 1.0
            pos += 1
            c += direction
            lk += direction * step
            if c == d:
                c = 0
                lk -= wrap_back
            elif c < 0:
                c = d - 1
                lk += wrap_back
        return pos
    lp = s * two_d + 2 * i
    lm = lp + 1
    link[pos] = lp
    frac[pos] = 0.5
    link[pos + 1] = lm
    frac[pos + 1] = 0.5
    pos += 2
    cp = a0
    cm = a0
    for _ in range(1, m):
        cp += 1
        lp += step
        if cp == d:
            cp = 0
            lp -= wrap_back
        cm -= 1
        lm -= step
        if cm < 0:
            cm = d - 1
            lm += wrap_back
        link[pos] = lp
        frac[pos] = 0.5
        link[pos + 1] = lm
        frac[pos + 1] = 0.5
        pos += 2
    return pos


@njit
def _fill_product(s, dims, strides, two_d, na, active, direction, tie, nstates, start,
                  total, link, frac, pos, mass, inv, sstride, idx, coord, in_node, in_deg,
                  in_link, in_next, out_link, out_next):
    """Split routing over the product DAG of ``na >= 2`` active dimensions.

    States are swept in mixed-radix order, one *row* (all states of the last
    active dimension, the fastest) at a time. Within a row the outer
    dimensions' contribution (node offset, out-links, out-degree) is constant,
    and the inner dimension is described by small per-state tables, so the
    per-state work is a few table reads. The sweep is a recurrence: a state's
    mass includes what its row predecessor pushed. For a non-tie inner
    dimension that push is carried in a register (``carry``) rather than a
    store and reload of ``mass``, which is the critical path of the loop.
    """
    inner = na - 1
    i_in = active[inner]
    d_in = dims[i_in]
    n_in = nstates[inner]
    end_in = n_in - 1
    tie_in = tie[inner]
    a_in = start[inner]
    for j in range(n_in):
        if tie_in:
            if j == 0:
                c = a_in
            elif j % 2 == 1:
                c = a_in + (j + 1) // 2
            else:
                c = a_in - j // 2
        else:
            c = a_in + direction[inner] * j
        in_node[j] = (_wrapped(c, d_in) - a_in) * strides[i_in]
        if j == end_in:
            in_deg[j] = 0
            in_link[j] = 0
            in_next[j] = 0
        elif tie_in:
            in_deg[j] = 2 if j == 0 else 1
            # odd index = +k chain, even = −k chain; state 0 starts with +
            in_link[j] = 2 * i_in + (0 if (j == 0 or j % 2 == 1) else 1)
            in_next[j] = 1 if j == 0 else min(j + 2, end_in) - j
        else:
            in_deg[j] = 1
            in_link[j] = 2 * i_in + (0 if direction[inner] > 0 else 1)
            in_next[j] = 1
    acc = 1
    for a in range(na - 1, -1, -1):
        sstride[a] = acc
        acc *= nstates[a]
        idx[a] = 0
        coord[a] = start[a]
    mass[:total] = 0.0
    mass[0] = 1.0
    row_start = 0
    while row_start < total:
        # what the outer dimensions contribute to every state of this row
        row_node = s
        nout = 0
        for a in range(inner):
            i = active[a]
            row_node += (coord[a] - start[a]) * strides[i]
            j = idx[a]
            last = nstates[a] - 1
            if j == last:
                continue
            if tie[a]:
                if j == 0:
                    out_link[nout] = 2 * i
                    out_next[nout] = sstride[a]
                    out_link[nout + 1] = 2 * i + 1
                    out_next[nout + 1] = min(2, last) * sstride[a]
                    nout += 2
                else:
                    out_link[nout] = 2 * i + (0 if j % 2 == 1 else 1)
                    out_next[nout] = (min(j + 2, last) - j) * sstride[a]
                    nout += 1
            else:
                out_link[nout] = 2 * i + (0 if direction[a] > 0 else 1)
                out_next[nout] = sstride[a]
                nout += 1
        row_deg = nout  # every outer out-link adds one to each state's out-degree
        carry = 0.0
        for j in range(n_in):
            st = row_start + j
            deg = row_deg + in_deg[j]
            if deg == 0:
                break  # the destination: last state of the last row
            share = (mass[st] + carry) * inv[deg]
            base = (row_node + in_node[j]) * two_d
            for k in range(nout):
                link[pos] = base + out_link[k]
                frac[pos] = share
                mass[st + out_next[k]] += share
                pos += 1
            if in_deg[j] == 0:
                continue
            link[pos] = base + in_link[j]
            frac[pos] = share
            pos += 1
            if tie_in:
                mass[st + in_next[j]] += share
                if j == 0:
                    link[pos] = base + in_link[j] + 1
                    frac[pos] = share
                    pos += 1
                    mass[st + min(2, end_in)] += share
            else:
                carry = share
        # odometer step over the outer dimensions, coordinates kept in sync
        row_start += n_in
        a = inner - 1
        while a >= 0:
            idx[a] += 1
            j = idx[a]
            if j < nstates[a]:
                if tie[a]:
                    k = (j + 1) // 2
                    c = start[a] + k if j % 2 == 1 else start[a] - k
                else:
                    c = start[a] + direction[a] * j
                coord[a] = _wrapped(c, dims[active[a]])
                break
            idx[a] = 0
            coord[a] = start[a]
            a -= 1
    return pos


@njit
def torus_route_fill_split(src, dst, dims, strides, coords, wrap, flow_ptr, link, frac,
                           mass):
    """Pass 2, ``ecmp="split"``: all minimal paths, mass split at every node.

    Parameters
    ----------
    src, dst : int64[F]
        Node ids, checked by :func:`torus_route_counts`.
    dims, strides : int64[D]
    coords : int32[N, D]
    wrap : bool
    flow_ptr : int64[F+1]
        Prefix sum of the counts from :func:`torus_route_counts`.
    link : int32[E]
        Output: link id of each entry, in topological order per flow (states
        in mixed-radix order, a state's out-links by dimension, + before −).
    frac : float64[E]
        Output: fraction of the flow crossing that link.
    mass : float64[S]
        Scratch, ``S >= max_states`` from :func:`torus_route_counts`.

    Returns
    -------
    status : int64
    bad_flow : int64
    """
    num_flows = src.shape[0]
    ndim = dims.shape[0]
    two_d = 2 * ndim
    # Scratch allocated once for all flows. Only the dimensions a flow moves
    # in ("active") take part in its sweep.
    active = np.empty(ndim, np.int64)
    direction = np.empty(ndim, np.int64)
    tie = np.empty(ndim, np.bool_)
    nstates = np.empty(ndim, np.int64)
    start = np.empty(ndim, np.int64)
    sstride = np.empty(ndim, np.int64)
    idx = np.empty(ndim, np.int64)
    coord = np.empty(ndim, np.int64)
    out_link = np.empty(two_d, np.int64)
    out_next = np.empty(two_d, np.int64)
    max_dim = 1
    for i in range(ndim):
        max_dim = max(max_dim, dims[i])
    in_node = np.empty(max_dim + 1, np.int64)
    in_deg = np.empty(max_dim + 1, np.int64)
    in_link = np.empty(max_dim + 1, np.int64)
    in_next = np.empty(max_dim + 1, np.int64)
    # a reciprocal multiply keeps a division off the sweep's critical path
    inv = np.zeros(two_d + 1, np.float64)
    for k in range(1, two_d + 1):
        inv[k] = 1.0 / k

    for f in range(num_flows):
        s = src[f]
        t = dst[f]
        pos = flow_ptr[f]
        # plain int64/bool, not literals: a literal would compile a second copy of the
        # callees below (see kernels/fill.py)
        na = np.int64(0)
        total = np.int64(1)
        m1, dr1, tq1, a1 = np.int64(0), np.int64(1), np.bool_(False), np.int64(0)
        for i in range(ndim):
            d = dims[i]
            a0 = np.int64(coords[s, i])
            m, dr, tq = _dim_route(a0, np.int64(coords[t, i]), d, wrap)
            if m == 0:
                continue
            if na == 0:
                # remembered for the one-dimension fast path
                m1, dr1, tq1, a1 = m, dr, tq, a0
            active[na] = i
            direction[na] = dr
            tie[na] = tq
            nstates[na] = 2 * m if tq else m + 1
            start[na] = a0
            total *= nstates[na]
            na += 1
        if na == 1:
            i = active[0]
            pos = _fill_one_dim(s, strides[i], dims[i], i, two_d, m1, dr1, tq1, a1,
                                link, frac, pos)
        elif na > 1:
            pos = _fill_product(s, dims, strides, two_d, na, active, direction, tie, nstates,
                                start, total, link, frac, pos, mass, inv, sstride, idx, coord,
                                in_node, in_deg, in_link, in_next, out_link, out_next)
        if pos != flow_ptr[f + 1]:
            return STATUS_COUNT_MISMATCH, f
    return STATUS_OK, -1


@njit
def torus_route_fill_path(src, dst, dims, strides, coords, wrap, use_hash, seed, flow_ptr,
                          link, frac):
    """Pass 2, ``ecmp="dor"`` or ``"hash"``: one minimal path per flow.

    Dimension order (``use_hash=False``) finishes dimension 0, then 1, …,
    taking ties the + way. Hash mode picks, at hop ``h``, the
    ``hop_hash(seed, src, dst, h) mod k``-th of the ``k`` minimal next hops
    (enumerated by dimension, + before −); once a tie dimension has been
    stepped in one direction only that direction remains minimal.

    Parameters
    ----------
    src, dst : int64[F]
        Node ids, checked by :func:`torus_route_counts`.
    dims, strides : int64[D]
    coords : int32[N, D]
    wrap : bool
    use_hash : bool
    seed : uint64
    flow_ptr : int64[F+1]
    link : int32[E]
        Output, in path order.
    frac : float64[E]
        Output, all 1.0.

    Returns
    -------
    status : int64
    bad_flow : int64
    """
    num_flows = src.shape[0]
    ndim = dims.shape[0]
    two_d = 2 * ndim
    remaining = np.empty(ndim, np.int64)
    # +1 / −1, or 0 while a tie dimension is still undecided
    direction = np.empty(ndim, np.int64)
    coord = np.empty(ndim, np.int64)

    for f in range(num_flows):
        s = src[f]
        t = dst[f]
        total = 0
        for i in range(ndim):
            d = dims[i]
            a = np.int64(coords[s, i])
            m, dr, tq = _dim_route(a, np.int64(coords[t, i]), d, wrap)
            remaining[i] = m
            direction[i] = 0 if tq else dr
            coord[i] = a
            total += m
        pos = flow_ptr[f]
        node = s
        for h in range(total):
            dim = -1
            step = 0
            if use_hash:
                k = 0
                for i in range(ndim):
                    if remaining[i] > 0:
                        k += 2 if direction[i] == 0 else 1
                r = np.int64(hop_hash(seed, s, t, h) % np.uint64(k))
                for i in range(ndim):
                    if remaining[i] > 0:
                        if direction[i] == 0:
                            if r < 2:
                                dim = i
                                step = 1 if r == 0 else -1
                                break
                            r -= 2
                        else:
                            if r == 0:
                                dim = i
                                step = direction[i]
                                break
                            r -= 1
            else:
                for i in range(ndim):
                    if remaining[i] > 0:
                        dim = i
                        step = direction[i] if direction[i] != 0 else 1
                        break
            link[pos] = node * two_d + 2 * dim + (0 if step > 0 else 1)
            frac[pos] = 1.0
            pos += 1
            direction[dim] = step
            remaining[dim] -= 1
            d = dims[dim]
            c = coord[dim] + step
            if c >= d:
                c -= d
            elif c < 0:
                c += d
            node += (c - coord[dim]) * strides[dim]
            coord[dim] = c
        if pos != flow_ptr[f + 1]:
            return STATUS_COUNT_MISMATCH, f
    return STATUS_OK, -1
