"""Routing kernels for the Dragonfly (Kim et al., ISCA 2008).

Arrays in, arrays out, status codes instead of exceptions. Two passes so no
Python code loops over flows: :func:`dragonfly_route_counts` gives every
flow's CSR entry count and hop count, the caller prefix-sums and allocates,
:func:`dragonfly_route_fill` writes the entries. Both passes enumerate the
same paths through :func:`_flow`, which writes a flow's entries into a
scratch buffer, adding up the fractions of a link that several of its paths
share (a link appears once per flow).

Layout (see :mod:`flowemu.topology.dragonfly`): ``N`` hosts, ``g`` groups of
``a`` routers, ``m`` parallel global links between every pair of groups.

* host ``i`` -> its router: link ``i``; router -> host ``i``: ``N + i``;
* local link router ``(G, x)`` -> ``(G, y)``:
  ``2N + (G·a + x)·(a−1) + (y if y < x else y−1)``;
* global links: ``glink[G, T, c]`` (copy ``c`` from group ``G`` to ``T``),
  leaving router ``gx[G, T, c]`` of ``G`` and landing on router
  ``gy[G, T, c]`` of ``T``.

A minimal leg (local–global–local) from router ``x0`` of ``G`` to router
``yd`` of ``T`` costs ``[x0 ≠ gx] + 1 + [gy ≠ yd]`` router hops over copy
``c``; the flow is split evenly over the copies of least cost (``hash``:
one of them). Valiant sends ``1/(g−2)`` of the flow to each intermediate
group ``I``: a leg minimal to the group (least ``[x0 ≠ gx]``), then a
minimal leg from its landing router to the destination router.
"""

from __future__ import annotations

import numpy as np

from .jit import njit
from .routing import hop_hash

STATUS_OK = 0
#: the fill pass wrote a different number of entries than the count pass
STATUS_COUNT_MISMATCH = 2

MODE_SPLIT = 0
MODE_HASH = 1
MODE_VALIANT = 2


@njit(inline="always")
def _local(base, a, G, x, y):
    return base + (G * a + x) * (a - 1) + (y if y < x else y - 1)


@njit(inline="always")
def _emit(link, frac, out_link, out_frac, pos, n):
    """Add ``frac`` of the flow to ``link``; returns the new entry count."""
    at = pos[link]
    if at >= 0:
        out_frac[at] += frac
        return n
    pos[link] = n
    out_link[n] = link
    out_frac[n] = frac
    return n + 1


@njit(refcounts=False)
def _leg(G, x0, T, yd, w, a, local_base, glink, gx, gy, pick, out_link, out_frac, pos, n):
    """Minimal leg from router ``x0`` of group ``G`` to router ``yd`` of group
    ``T`` carrying ``w`` of the flow; ``pick >= 0`` takes only that one of the
    least-cost copies. Returns ``(entries, router hops)``."""
    m = glink.shape[2]
    best = 3
    for c in range(m):
        cost = (1 if gx[G, T, c] != x0 else 0) + (1 if gy[G, T, c] != yd else 0)
        best = min(best, cost)
    cnt = 0
    for c in range(m):
        if (1 if gx[G, T, c] != x0 else 0) + (1 if gy[G, T, c] != yd else 0) == best:
            cnt += 1
    f = w / cnt if pick < 0 else w
    k = 0
    for c in range(m):
        x = gx[G, T, c]
        y = gy[G, T, c]
        if (1 if x != x0 else 0) + (1 if y != yd else 0) != best:
            continue
        k += 1
        if pick >= 0 and k - 1 != pick % cnt:
            continue
        if x != x0:
            n = _emit(_local(local_base, a, G, x0, x), f, out_link, out_frac, pos, n)
        n = _emit(glink[G, T, c], f, out_link, out_frac, pos, n)
        if y != yd:
            n = _emit(_local(local_base, a, T, y, yd), f, out_link, out_frac, pos, n)
    return n, best + 1


@njit(refcounts=False)
def _flow(s, d, p, a, num_hosts, local_base, glink, gx, gy, mode, seed, out_link, out_frac,
          pos):
    """Entries of flow ``s -> d`` into ``out_link``/``out_frac`` (``pos``:
    link -> entry index or −1, restored to −1 on return). Returns
    ``(entries, hops)``; hops is the longest of the flow's paths."""
    if s == d:
        return 0, 0
    g = glink.shape[0]
    rs = s // p
    rd = d // p
    n = _emit(s, 1.0, out_link, out_frac, pos, 0)
    if rs == rd:
        hops = 2
    else:
        Gs, xs = rs // a, rs % a
        Gd, xd = rd // a, rd % a
        if Gs == Gd:
            n = _emit(_local(local_base, a, Gs, xs, xd), 1.0, out_link, out_frac, pos, n)
            hops = 3
        elif mode != MODE_VALIANT or g <= 2:
            pick = -1
            if mode == MODE_HASH:
                pick = np.int64(hop_hash(seed, s, d, 0) >> np.uint64(1))
            n, rh = _leg(Gs, xs, Gd, xd, 1.0, a, local_base, glink, gx, gy, pick, out_link,
                         out_frac, pos, n)
            hops = 2 + rh
        else:
            m = glink.shape[2]
            w = 1.0 / (g - 2)
            longest = 0
            for mid in range(g):
                if mid == Gs or mid == Gd:
                    continue
                best = 1
                cnt = 0
                for c in range(m):
                    cost = 1 if gx[Gs, mid, c] != xs else 0
                    if cost < best:
                        best = cost
                        cnt = 0
                    if cost == best:
                        cnt += 1
                f = w / cnt
                for c in range(m):
                    x = gx[Gs, mid, c]
                    if (1 if x != xs else 0) != best:
                        continue
                    if x != xs:
                        n = _emit(_local(local_base, a, Gs, xs, x), f, out_link, out_frac,
                                  pos, n)
                    n = _emit(glink[Gs, mid, c], f, out_link, out_frac, pos, n)
                    n, rh = _leg(mid, gy[Gs, mid, c], Gd, xd, f, a, local_base, glink, gx,
                                 gy, -1, out_link, out_frac, pos, n)
                    longest = max(longest, best + 1 + rh)
            hops = 2 + longest
    n = _emit(num_hosts + d, 1.0, out_link, out_frac, pos, n)
    for e in range(n):
        pos[out_link[e]] = -1
    return n, hops


@njit
def dragonfly_route_counts(src, dst, p, a, num_hosts, local_base, glink, gx, gy, mode, seed,
                           scratch, num_links, counts, hops):
    """Pass 1: entries (``counts``, int64[F]) and hops (int32[F]) of every
    flow; ``scratch`` is the size of one flow's largest raw entry list."""
    out_link = np.empty(scratch, dtype=np.int32)
    out_frac = np.empty(scratch, dtype=np.float64)
    pos = np.full(num_links, -1, dtype=np.int64)
    for f in range(src.shape[0]):
        n, h = _flow(src[f], dst[f], p, a, num_hosts, local_base, glink, gx, gy, mode, seed,
                     out_link, out_frac, pos)
        counts[f] = n
        hops[f] = h
    return STATUS_OK


@njit
def dragonfly_route_fill(src, dst, p, a, num_hosts, local_base, glink, gx, gy, mode, seed,
                         scratch, num_links, flow_ptr, link, frac):
    """Pass 2: write every flow's entries at ``flow_ptr[f]``. Returns
    ``(status, bad_flow)``."""
    out_link = np.empty(scratch, dtype=np.int32)
    out_frac = np.empty(scratch, dtype=np.float64)
    pos = np.full(num_links, -1, dtype=np.int64)
    for f in range(src.shape[0]):
        n, _ = _flow(src[f], dst[f], p, a, num_hosts, local_base, glink, gx, gy, mode, seed,
                     out_link, out_frac, pos)
        at = flow_ptr[f]
        if flow_ptr[f + 1] - at != n:
            return STATUS_COUNT_MISMATCH, f
        for e in range(n):
            link[at + e] = out_link[e]
            frac[at + e] = out_frac[e]
    return STATUS_OK, -1
