"""Translation symmetry of a traffic pattern on a grid of nodes (numba).

A pattern is *invariant* under the translation by ``t`` when moving every
flow's sender and receiver by ``t`` (coordinates modulo the grid's sizes)
gives the same flows with the same bytes. :func:`translation_period` finds,
dimension by dimension, the smallest step ``P_i`` (a divisor of the size
``d_i``) whose translation leaves the pattern invariant; the pattern is then
invariant under the group of translations by multiples of ``P`` (``Π d_i/P_i``
elements), which the engine uses to solve one flow per orbit
(:meth:`flowemu.topology.Topology.orbits`).

The test is exact, not a hash: sender ``s``'s flows, in the order they
appear, are compared one by one with those of ``s + P_i·e_i``: the same
receiver offset (coordinates modulo the sizes) and the same bytes, bit for
bit. Flows listed in another order at one
sender count as a mismatch, which only costs the reduction, never its
correctness. A mismatch ends a candidate step at once, so a pattern without
symmetry (a random permutation) costs a few comparisons per divisor.
"""

import numpy as np

from .hashing import mix64
from .jit import njit


@njit
def _shift(node, i, step, coords, dims, strides):
    """The node ``step`` places further along dimension ``i`` (wrapping)."""
    c = coords[node, i] + step
    if c >= dims[i]:
        return node + (step - dims[i]) * strides[i]
    return node + step * strides[i]


@njit
def _invariant(i, step, src_ptr, off, bits, coords, dims, strides):
    """Whether the translation by ``step`` along dimension ``i`` maps the
    flows (grouped by sender: sender ``s``'s are ``src_ptr[s]:src_ptr[s+1]``
    of ``off``, the receivers' offsets from the sender, and ``bits``) onto
    themselves: a translation moves a flow's receiver with its sender, so
    its offset stays."""
    n = src_ptr.shape[0] - 1
    for s in range(n):
        s2 = _shift(s, i, step, coords, dims, strides)
        a, b = src_ptr[s], src_ptr[s2]
        k = src_ptr[s + 1] - a
        if src_ptr[s2 + 1] - b != k:
            return False
        for j in range(k):
            if bits[a + j] != bits[b + j] or off[a + j] != off[b + j]:
                return False
    return True


@njit
def _group(src, dst, bits, coords, dims, strides, src_ptr, off, sbits, bounded):
    """Write each flow's receiver offset and bytes into its sender's slots
    ``src_ptr[s]:src_ptr[s+1]``, in flow order; with ``bounded``, return
    False as soon as a sender has more flows than slots."""
    n = src_ptr.shape[0] - 1
    fill = src_ptr[:n].copy()
    for f in range(src.shape[0]):
        s = src[f]
        k = fill[s]
        if bounded and k == src_ptr[s + 1]:
            return False
        off[k] = _offset(s, dst[f], coords, dims, strides)
        sbits[k] = bits[f]
        fill[s] = k + 1
    return True


@njit
def translation_period(src, dst, bits, coords, dims, strides, period):
    """Fill ``period`` (int64[D]) with the smallest invariant step of each
    dimension (``d_i`` when there is none) for the flows ``src[f] -> dst[f]``
    (node ids, int32 or int64, fewer than 2**31) carrying ``bits[f]`` (uint64, a float's bits).
    ``coords`` int32[N, D] holds every node's coordinates, ``strides`` the
    node-id stride of each dimension (row-major node ids)."""
    n = coords.shape[0]
    nf = src.shape[0]
    for i in range(dims.shape[0]):
        period[i] = dims[i]
    if nf == 0 or not _may_be_invariant(src, dst, bits, coords, dims, strides):
        return
    # grouped by sender, a sender's flows in order: the receiver's offset
    # (coordinates minus the sender's, modulo the sizes, as a node id) and
    # bytes. int32 counters and offsets (fewer than 2**31 flows, 2**24
    # nodes): the scattered writes are what this costs. Most steps have the
    # same number of flows at every sender: that layout is tried first,
    # without a counting pass, and given up at the first sender with more.
    src_ptr = np.zeros(n + 1, dtype=np.int32)
    off = np.empty(nf, dtype=np.int32)
    sbits = np.empty(nf, dtype=np.uint64)
    even = nf % n == 0
    if even:
        per = nf // n
        for s in range(n + 1):
            src_ptr[s] = s * per
        even = _group(src, dst, bits, coords, dims, strides, src_ptr, off, sbits, True)
    if not even:
        src_ptr[:] = 0
        for f in range(nf):
            src_ptr[src[f] + 1] += 1
        for s in range(n):
            src_ptr[s + 1] += src_ptr[s]
        _group(src, dst, bits, coords, dims, strides, src_ptr, off, sbits, False)
    for i in range(dims.shape[0]):
        d = dims[i]
        period[i] = d
        for step in _divisors(d):
            if step < d and _invariant(i, step, src_ptr, off, sbits, coords, dims, strides):
                period[i] = step
                break


@njit(inline="always")
def _offset(s, d, coords, dims, strides):
    """The receiver's coordinates minus the sender's, modulo the sizes, as a
    node id."""
    o = 0
    for i in range(dims.shape[0]):
        c = coords[d, i] - coords[s, i]
        if c < 0:
            c += dims[i]
        o += c * strides[i]
    return o


@njit
def _may_be_invariant(src, dst, bits, coords, dims, strides):
    """A necessary condition, checked in one pass over the flows: a pattern
    invariant under some step ``P_i < d_i`` of dimension ``i`` is invariant
    under ``d_i / q`` for a prime ``q`` dividing ``d_i / P_i`` (a multiple
    of ``P_i``). For each such translation, four senders spread over the
    flow list must send what the senders it moves them to send: compared by
    a hash of each one's flows in order (different hashes prove different
    flows; equal ones leave the exact test to decide). False when every
    translation fails: the pattern has no symmetry."""
    n = coords.shape[0]
    nf = src.shape[0]
    nd = dims.shape[0]
    # (dimension, step): at most Σ_i (primes dividing d_i) <= log2(Π d_i) <= 24
    shifts = np.empty((64, 2), dtype=np.int64)
    m = 0
    for i in range(nd):
        d = dims[i]
        for q in _divisors(d):
            if q > 1 and _is_prime(q):
                shifts[m, 0] = i
                shifts[m, 1] = d // q
                m += 1
    if m == 0:
        return False
    # (a byte a node, so the table stays in the first-level cache: at most
    # 4 · 25 watched senders)
    slot = np.full(n, 255, dtype=np.uint8)
    watched = np.empty(4 * (m + 1), dtype=np.int64)
    nw = 0
    samples = np.empty(4, dtype=np.int64)
    for j in range(4):
        s0 = src[(j * nf) // 4]
        samples[j] = s0
        for k in range(-1, m):
            s2 = s0 if k < 0 else _shift(s0, shifts[k, 0], shifts[k, 1], coords, dims, strides)
            if slot[s2] == 255:
                slot[s2] = nw
                watched[nw] = s2
                nw += 1
    h = np.zeros(nw, dtype=np.uint64)
    count = np.zeros(nw, dtype=np.int64)
    for f in range(nf):
        w = slot[src[f]]
        if w != 255:
            x = np.uint64(_offset(src[f], dst[f], coords, dims, strides)) ^ mix64(bits[f])
            h[w] = mix64(h[w] ^ mix64(x + np.uint64(count[w])))
            count[w] += 1
    for k in range(m):
        ok = True
        for j in range(4):
            s0 = samples[j]
            s2 = _shift(s0, shifts[k, 0], shifts[k, 1], coords, dims, strides)
            a, b = slot[s0], slot[s2]
            if h[a] != h[b] or count[a] != count[b]:
                ok = False
                break
        if ok:
            return True
    return False


@njit
def _is_prime(q):
    j = 2
    while j * j <= q:
        if q % j == 0:
            return False
        j += 1
    return q > 1


@njit
def _divisors(d):
    """The divisors of ``d`` in increasing order, int64."""
    low = np.empty(64, dtype=np.int64)
    high = np.empty(64, dtype=np.int64)
    nl = 0
    nh = 0
    q = 1
    while q * q <= d:
        if d % q == 0:
            if nl == low.shape[0]:
                low = np.concatenate((low, np.empty(nl, dtype=np.int64)))
                high = np.concatenate((high, np.empty(nl, dtype=np.int64)))
            low[nl] = q
            nl += 1
            if q * q != d:
                high[nh] = d // q
                nh += 1
        q += 1
    out = np.empty(nl + nh, dtype=np.int64)
    out[:nl] = low[:nl]
    for j in range(nh):
        out[nl + j] = high[nh - 1 - j]
    return out


@njit
def orbit_representatives(src, coords, period):
    """The flows whose sender has every coordinate below ``period[i]`` (one
    per orbit of an invariant pattern), int64, in flow order."""
    nf = src.shape[0]
    keep = np.empty(nf, dtype=np.int64)
    n = 0
    for f in range(nf):
        ok = True
        for i in range(period.shape[0]):
            if coords[src[f], i] >= period[i]:
                ok = False
                break
        if ok:
            keep[n] = f
            n += 1
    return keep[:n].copy()


@njit
def merge_orbit_entries(flow_ptr, link, frac, node_index, ndir, num_res):
    """The representatives' routes over link orbits: link ``l`` (``ndir``
    links a node) belongs to resource ``node_index[l // ndir]·ndir + l %
    ndir``, and a row's entries on one resource are summed. Returns
    ``(flow_ptr, res int32, coef float64, top)``, ``top[r]`` the largest
    coefficient on resource ``r`` (0 where none)."""
    n_rows = flow_ptr.shape[0] - 1
    mark = np.full(num_res, -1, dtype=np.int64)
    where = np.empty(num_res, dtype=np.int64)
    out_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    res = np.empty(link.shape[0], dtype=np.int32)
    coef = np.empty(link.shape[0], dtype=np.float64)
    n = 0
    for row in range(n_rows):
        for e in range(flow_ptr[row], flow_ptr[row + 1]):
            lk = link[e]
            r = node_index[lk // ndir] * ndir + lk % ndir
            if mark[r] != row:
                mark[r] = row
                where[r] = n
                res[n] = r
                coef[n] = frac[e]
                n += 1
            else:
                coef[where[r]] += frac[e]
        out_ptr[row + 1] = n
    top = np.zeros(num_res, dtype=np.float64)
    for e in range(n):
        top[res[e]] = max(top[res[e]], coef[e])
    return out_ptr, res[:n].copy(), coef[:n].copy(), top
