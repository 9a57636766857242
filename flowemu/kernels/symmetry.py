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

Grouping the flows by sender is the scattered, costly part. Steps whose
flows come in blocks, each listing every sender once in a row-major order
of the dimensions (Swing's ports, a pattern built with ``np.arange``), are
compared without it: sender ``s``'s ``k``-th flow is block ``k``'s flow of
``s``, found a fixed number of places away (:func:`_block_layout`,
:func:`_block_invariant`); the comparisons, and so the answer, are the same.
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
    if nf == 0:
        return
    if nf % n == 0:
        pstride = np.empty((nf // n, dims.shape[0]), dtype=np.int64)
        down = np.empty((nf // n, dims.shape[0]), dtype=np.bool_)
        if _block_layout(src, n, dims, strides, pstride, down):
            # sender s's k-th flow is block k's flow of s: the per-sender
            # comparison needs no grouping pass (and a pattern without
            # symmetry fails it within a run, so no screening pass either)
            same = True
            for f in range(1, nf):
                same &= bits[f] == bits[0]
            for i in range(dims.shape[0]):
                for step in _divisors(dims[i]):
                    if step < dims[i] and _block_invariant(i, step, src, dst, bits, same,
                                                           coords, dims, strides, pstride, down):
                        period[i] = step
                        break
            return
    if not _may_be_invariant(src, dst, bits, coords, dims, strides):
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


@njit
def _block_layout(src, n, dims, strides, pstride, down):
    """Whether the flows come in blocks of ``n`` (one a sender each), every
    block listing the senders in the row-major order of some order of the
    dimensions, each counted up or down from 0 (Swing's ports rotate and
    mirror the dimensions; ``np.arange`` is the identity order). Fills
    ``pstride[k, i]``, how many places apart block ``k`` lists two senders
    one apart along dimension ``i``, and ``down[k, i]``, whether it counts
    that dimension down. One sequential pass over ``src``."""
    nd = dims.shape[0]
    order = np.empty(nd, dtype=np.int64)
    digit = np.empty(nd, dtype=np.int64)
    lane = np.empty(dims.max(), dtype=np.int64)
    for k in range(src.shape[0] // n):
        b = k * n
        if src[b] != 0:
            return False
        # the dimensions from the fastest-changing: the sender listed at
        # place p (the product of the faster ones' sizes) is one along the
        # next, up (coordinate 1) or down (coordinate d - 1)
        p = 1
        m = 0
        for i in range(nd):
            pstride[k, i] = 0
            down[k, i] = False
        while p < n:
            v = src[b + p]
            nxt = -1
            for i in range(nd):
                if dims[i] > 1 and pstride[k, i] == 0 and (
                        strides[i] == v or (dims[i] - 1) * strides[i] == v):
                    nxt = i
            if nxt < 0:
                return False
            pstride[k, nxt] = p
            down[k, nxt] = strides[nxt] != v
            order[m] = nxt
            m += 1
            p *= dims[nxt]
        if p != n or m == 0:
            return False
        for i in range(nd):
            if dims[i] == 1:
                pstride[k, i] = n
        # the whole block: runs along the fastest dimension, the run's first
        # sender counted like an odometer over the others
        i0 = order[0]
        d0 = dims[i0]
        for c in range(d0):
            lane[c] = (c if not down[k, i0] or c == 0 else d0 - c) * strides[i0]
        for r in range(m):
            digit[r] = 0
        base = 0
        for run in range(b, b + n, d0):
            for c in range(d0):
                if src[run + c] != base + lane[c]:
                    return False
            for r in range(1, m):
                i = order[r]
                d = dims[i]
                up = not down[k, i]
                digit[r] += 1
                if digit[r] == d:
                    # back to coordinate 0: from d - 1 (up) or from 1 (down)
                    digit[r] = 0
                    base -= (d - 1) * strides[i] if up else strides[i]
                    continue
                if up:
                    base += strides[i]
                elif digit[r] == 1:
                    base += (d - 1) * strides[i]
                else:
                    base -= strides[i]
                break
    return True


@njit
def _block_invariant(i, step, src, dst, bits, same, coords, dims, strides, pstride, down):
    """Whether, in every block of :func:`_block_layout`, the flow of each
    sender ``s`` and that of ``s + step·e_i`` match: the receiver moved by
    the same step, the same bytes. That flow is ``step·pstride`` places
    further (``d - step`` back at the end of a dimension's run), or as far
    before where the block counts the dimension down; every read is
    sequential but the receiver's coordinate. With ``same`` (every flow
    carries the same bytes) the bytes are not read."""
    n_blocks = pstride.shape[0]
    n = src.shape[0] // n_blocks
    d = dims[i]
    move = step * strides[i]
    wrap = d * strides[i]
    for k in range(n_blocks):
        ps = pstride[k, i]
        span = ps * d
        # place x + j pairs with y + j: (x, y) = (hi, hi + step·ps) for the
        # first d - step digits, (hi + (d - step)·ps, hi) for the last step
        for hi in range(k * n, (k + 1) * n, span):
            for half in range(2):
                if half == 0:
                    x, y, length = hi, hi + step * ps, (d - step) * ps
                else:
                    x, y, length = hi + (d - step) * ps, hi, step * ps
                if down[k, i]:
                    x, y = y, x
                for j in range(length):
                    a = x + j
                    c = y + j
                    r = dst[a]
                    if dst[c] != r + move - (wrap if coords[r, i] >= d - step else 0) or (
                            not same and bits[a] != bits[c]):
                        return False
    return True


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
