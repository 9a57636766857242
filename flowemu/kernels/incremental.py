"""Incremental max-min completion: after flows finish, only the part of the
allocation that can change is filled again (the model is described in
:mod:`flowemu.kernels.maxmin`).

Why it is exact
---------------
Max-min rates are those of progressive filling: every unfrozen flow rises at a
common level; a resource saturates when ``c_r - C_r = level * W_r`` (``C_r``
the load of its frozen flows, ``W_r`` the weight of its unfrozen ones); its
unfrozen flows freeze at that level. Each flow is *held* by the resource that
froze it (one, even when several saturate at its level), at the level
``held_at[r]`` of that resource.

When flows finish, their resources have room to spare (and a receiver's
ingress capacity grows back). Fill again from there and compare with the old
filling, resource by resource, in level order: a resource none of whose flows
changed saturates at its old level with its old flows, so it needs no work.
Work starts at the finished flows' resources and spreads only through change:

* a resource with room to spare at the level of the flows it holds (checked
  when the fill reaches that level) releases them: they *rise* again from
  there, taking their load out of every resource they cross;
* a resource whose rising flows would saturate it at ``lam`` releases the
  settled flows on it above ``lam`` (they were held elsewhere, higher, and
  now cannot get that much), then freezes its rising flows at ``lam``;
* a flow that is not released keeps its rate: it is a fixed load.

The levels come out of an indexed min-heap in increasing order (a resource's
key is a lower bound of its level: its level only rises as flows freeze
elsewhere, and a release that may lower it lowers the key), so rising flows
freeze exactly where a full progressive filling would freeze them. A flow
that is released is the same as one the full filling would move; one that is
not, is held by a resource whose level and flows are unchanged. The work of
an event is proportional to the entries of the flows whose rate changes (and
of the resources they cross), not to the whole problem's: an event whose
finished flows held nothing releases nothing.

The t = 0 solve is the same fill with every flow rising.

Screening
---------
With ``screen`` (many route entries a flow, e.g. ECMP on tori), after the
``t = 0`` fill each flow ``g`` gets a *lazy rate* (its rate then), and a
resource whose *lazy load* (its flows at their lazy rates) times
``1 + DRIFT`` stays below ``capacity * (1 - MARGIN)`` is *screened*: as long
as every flow's rate stays at most ``1 + DRIFT`` times its lazy rate, such a
resource cannot fill up, so it constrains nothing and the fill need not
count it. The fill walks each flow's *pool* (its entries on the other,
candidate, resources). The bound is kept by *drift events* in the same heap:
when the fill level reaches ``1 + DRIFT`` times a rising flow's lazy rate,
the flow is counted again on its screened resources at that level (its rate
is at least that now), and a resource that may then fill up is *admitted*:
its exact load and rising weight are summed from its flows, each of which
gets the entry in its pool. At that level every flow on it is within the
bound, so it is still below capacity and its own level lies ahead: the heap
order stays the fill's level order. A flow that settles far below its lazy
rate is counted lower (freeing room); a finished flow's lazy load leaves.

Numbers
-------
A resource's load (of its settled flows) and the weight of its rising flows
are kept as unevaluated double-double sums (error-free two-sum updates): a
flow's load is added and taken out with the same product, so the sums cancel
exactly, and ECMP fractions from 0.5 down to 1e-30 keep their digits. Each
flow's remaining bytes are brought up to date only when its rate changes, and
its finish time (``t + remaining / rate``) is its key in a second indexed
heap. Nothing is allocated per event.

Layout
------
What a fill reads and writes of a resource is one 64-byte row of ``rs``
(float64) and one of ``ri`` (int64), of a flow one row of ``fl`` (int64);
the columns are named below.
"""

from __future__ import annotations

import numpy as np

from .fill import (
    STATUS_ITER_LIMIT,
    STATUS_NONFINITE,
    STATUS_OK,
    STATUS_STALLED,
    check_completion_inputs,
    ingress_capacity,
    transpose,
)
from .jit import njit
from .layout import NUMPY_ERRORS, TIE_TOL

SETTLED = 0   # a flow whose rate is fixed (for the fill in progress)
RISING = 1    # a flow the fill in progress is solving again
DONE = 2      # a finished flow, or one with an empty path
#: a settled flow more than this (relative) above the level at which a
#: resource saturates is not held there: it is released; a resource with
#: more than this room at its held level releases what it holds
OVER_TOL = TIE_TOL
#: screening: a flow's rate stays within this factor above the lazy rate at
#: which its screened resources count it (a drift event re-counts it past it)
DRIFT = 0.03
#: a screened resource stays this far (relative) below capacity
MARGIN = 1e-9

# rs: float64[R, 8] per resource
CAP = 0       # capacity now (ingress: after incast)
LOAD_HI = 1   # load of its settled flows, double-double
LOAD_LO = 2
W_HI = 3      # weight (sum of fractions) of its rising flows, double-double
W_LO = 4
HELD_AT = 5   # level of the flows it holds
TOP = 6       # upper bound of its settled flows' rates
# ri: int64[R, 8] per resource
N_RISING = 0  # rising flows on it
N_HELD = 1    # flows it holds
CHECKED = 2   # fill in which its held level was checked
HELD_HEAD = 3  # first of the flows it holds (list through fl[:, HELD_NEXT/PREV])
RISE_HEAD = 4  # first entry of its rising flows' list (through rise_next)
RISE_GEN = 5  # number of that list (an entry is on it when rise_mark == it)
# fl: int64[F, 8] per flow
PHASE = 0     # SETTLED, RISING or DONE
STAMP = 1     # fill in which it was last released
BNECK = 2     # resource that holds it (-1: none)
HELD_NEXT = 3
HELD_PREV = 4


@njit(**NUMPY_ERRORS)
def _sift_up(hk, hi, pos, i):
    key = hk[i]
    item = hi[i]
    while i > 0:
        parent = (i - 1) >> 1
        if hk[parent] <= key:
            break
        hk[i] = hk[parent]
        hi[i] = hi[parent]
        pos[hi[i]] = i
        i = parent
    hk[i] = key
    hi[i] = item
    pos[item] = i


@njit(**NUMPY_ERRORS)
def _sift_down(hk, hi, pos, size, i):
    key = hk[i]
    item = hi[i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and hk[c + 1] < hk[c]:
            c += 1
        if hk[c] >= key:
            break
        hk[i] = hk[c]
        hi[i] = hi[c]
        pos[hi[i]] = i
        i = c
    hk[i] = key
    hi[i] = item
    pos[item] = i


@njit(**NUMPY_ERRORS)
def _heap_set(hk, hi, pos, size, item, key):
    """Give ``item`` the key ``key`` in an indexed binary min-heap (``pos``:
    each item's place, -1 when out; ``+inf`` takes it out); returns the size."""
    i = pos[item]
    if key == np.inf:
        if i < 0:
            return size
        size -= 1
        pos[item] = -1
        if i < size:
            hk[i] = hk[size]
            hi[i] = hi[size]
            pos[hi[i]] = i
            if i > 0 and hk[i] < hk[(i - 1) >> 1]:
                _sift_up(hk, hi, pos, i)
            else:
                _sift_down(hk, hi, pos, size, i)
        return size
    if i < 0:
        hk[size] = key
        hi[size] = item
        _sift_up(hk, hi, pos, size)
        return size + 1
    old = hk[i]
    hk[i] = key
    if key < old:
        _sift_up(hk, hi, pos, i)
    elif key > old:
        _sift_down(hk, hi, pos, size, i)
    return size


@njit(**NUMPY_ERRORS)
def _heap_pop(hk, hi, pos, size):
    """Take the minimum out of a non-empty indexed heap: ``(key, item, size)``."""
    key = hk[0]
    item = hi[0]
    return key, item, _heap_set(hk, hi, pos, size, item, np.inf)


@njit(**NUMPY_ERRORS)
def _add(rs, r, col, a):
    """``rs[r, col] + rs[r, col + 1] += a`` without losing ``a``'s digits
    (two-sum; ``col + 1`` holds the low part)."""
    h = rs[r, col]
    s = h + a
    bp = s - h
    rs[r, col + 1] += (h - (s - bp)) + (a - bp)
    rs[r, col] = s


@njit(**NUMPY_ERRORS)
def _level(rs, r):
    """Level at which ``r`` saturates with its rising weight."""
    lam = ((rs[r, CAP] - rs[r, LOAD_HI]) - rs[r, LOAD_LO]) / (rs[r, W_HI] + rs[r, W_LO])
    return max(0.0, lam)


@njit(**NUMPY_ERRORS)
def _key(r, ev, rs, ri):
    """Level at which resource ``r`` needs the fill's attention: the level of
    the flows it holds if it is not yet checked in fill ``ev`` and sooner,
    else where its rising flows would saturate it (``+inf``: never)."""
    lam = _level(rs, r) if ri[r, N_RISING] > 0 else np.inf
    if ri[r, N_HELD] > 0 and ri[r, CHECKED] != ev and rs[r, HELD_AT] < lam:
        return rs[r, HELD_AT]
    return lam


@njit(**NUMPY_ERRORS)
def _hold(g, r, fl, ri):
    """Record that resource ``r`` holds flow ``g`` (a doubly-linked list of
    the flows each resource holds)."""
    fl[g, BNECK] = r
    head = ri[r, HELD_HEAD]
    fl[g, HELD_PREV] = -1
    fl[g, HELD_NEXT] = head
    if head >= 0:
        fl[head, HELD_PREV] = g
    ri[r, HELD_HEAD] = g
    ri[r, N_HELD] += 1


@njit(**NUMPY_ERRORS)
def _unhold(g, fl, ri):
    """Take flow ``g`` off the list of the resource that holds it."""
    r = fl[g, BNECK]
    if r < 0:
        return
    p = fl[g, HELD_PREV]
    n = fl[g, HELD_NEXT]
    if p >= 0:
        fl[p, HELD_NEXT] = n
    else:
        ri[r, HELD_HEAD] = n
    if n >= 0:
        fl[n, HELD_PREV] = p
    ri[r, N_HELD] -= 1
    fl[g, BNECK] = -1


@njit(**NUMPY_ERRORS)
def _release(g, ev, fl, ri, rate, old_rate, changed, n_changed, stack, n_stack):
    """Make settled flow ``g`` rising (its entries are applied when it is
    expanded; it leaves the resource that held it); the first time in fill
    ``ev``, note its rate before."""
    fl[g, PHASE] = RISING
    _unhold(g, fl, ri)
    if fl[g, STAMP] != ev:
        fl[g, STAMP] = ev
        old_rate[g] = rate[g]
        changed[n_changed] = g
        n_changed += 1
    stack[n_stack] = g
    return n_changed, n_stack + 1


@njit(**NUMPY_ERRORS)
def _admit(r, row_end, pool_res, pool_frac, res_ptr, res_flow, res_frac, rs, ri, fl, rate,
           rise_next, rise_mark, cand):
    """Make screened resource ``r`` a candidate during a fill (no released
    flow is waiting to be expanded): its exact load and rising weight from
    its flows, an entry in each one's pool (and in its rising list)."""
    cand[r] = 1
    rs[r, LOAD_HI] = 0.0
    rs[r, LOAD_LO] = 0.0
    rs[r, W_HI] = 0.0
    rs[r, W_LO] = 0.0
    rs[r, TOP] = 0.0
    ri[r, N_RISING] = 0
    ri[r, RISE_GEN] += 1
    ri[r, RISE_HEAD] = -1
    for k in range(res_ptr[r], res_ptr[r + 1]):
        g = res_flow[k]
        if fl[g, PHASE] == DONE:
            continue
        a = res_frac[k]
        p = row_end[g]
        row_end[g] = p + 1
        pool_res[p] = r
        pool_frac[p] = a
        if fl[g, PHASE] == RISING:
            _add(rs, r, W_HI, a)
            ri[r, N_RISING] += 1
            rise_mark[p] = ri[r, RISE_GEN]
            rise_next[p] = ri[r, RISE_HEAD]
            ri[r, RISE_HEAD] = p
        else:
            _add(rs, r, LOAD_HI, a * rate[g])
            rs[r, TOP] = max(rs[r, TOP], rate[g])


@njit(**NUMPY_ERRORS)
def _relazy(g, new, flow_ptr, res, frac, row_end, pool_res, pool_frac, res_ptr, res_flow,
            res_frac, rs, ri, fl, rate, rise_next, rise_mark, cand, lazy, lazy_load, joined):
    """Count flow ``g`` at the lazy rate ``new`` on its screened resources;
    those that may come near capacity are admitted (listed in ``joined``).
    Returns how many."""
    d = new - lazy[g]
    lazy[g] = new
    admitted = 0
    for e in range(flow_ptr[g], flow_ptr[g + 1]):
        r = res[e]
        if cand[r]:
            continue
        lazy_load[r] += frac[e] * d
        if d > 0.0 and not _screenable(lazy_load[r], rs[r, CAP]):
            _admit(r, row_end, pool_res, pool_frac, res_ptr, res_flow, res_frac, rs, ri, fl,
                   rate, rise_next, rise_mark, cand)
            joined[admitted] = r
            admitted += 1
    return admitted


@njit(**NUMPY_ERRORS)
def _screenable(lazy_load, cap):
    """Whether a resource whose flows run within ``DRIFT`` of the lazy rates
    that load it with ``lazy_load`` stays below capacity ``cap``."""
    return lazy_load * (1.0 + DRIFT) < cap * (1.0 - MARGIN)


@njit(**NUMPY_ERRORS)
def _start_screening(flow_ptr, res, frac, row_end, pool_res, pool_frac, rs, fl, rate, rise_mark,
                     n_plain, cand, lazy, lazy_load):
    """After the ``t = 0`` fill (every flow settled, every load exact): count
    each flow at its rate as its lazy rate, keep as candidates the resources
    that may come near capacity (ingress resources, whose capacity moves,
    always), and pool each flow's entries on them."""
    n_flows = flow_ptr.shape[0] - 1
    n_res = rs.shape[0]
    for r in range(n_res):
        lazy_load[r] = rs[r, LOAD_HI] + rs[r, LOAD_LO]
        cand[r] = 1 if r >= n_plain or not _screenable(lazy_load[r], rs[r, CAP]) else 0
    for g in range(n_flows):
        if fl[g, PHASE] == DONE:
            continue
        lazy[g] = rate[g]
        if rate[g] <= 0.0:
            # (no drift bound holds at rate 0: every resource it crosses stays)
            for e in range(flow_ptr[g], flow_ptr[g + 1]):
                cand[res[e]] = 1
    for g in range(n_flows):
        p = flow_ptr[g]
        for e in range(flow_ptr[g], flow_ptr[g + 1]):
            if cand[res[e]]:
                pool_res[p] = res[e]
                pool_frac[p] = frac[e]
                p += 1
        row_end[g] = p
    rise_mark[:] = 0   # (pool entries moved; lists are empty between fills)


@njit(**NUMPY_ERRORS)
def _fill(ev, n_stack, n_changed, flow_ptr, res, frac, row_end, pool_res, pool_frac, entry_flow,
          res_ptr, res_flow, res_frac, rs, ri, fl, rate, old_rate, changed, stack, rise_next,
          rise_mark, seeds, n_seeds, hk, hi, pos, screening, cand, lazy, lazy_load, joined):
    """Fill again what the released flows on ``stack`` and the changed
    resources ``seeds[:n_seeds]`` reach; returns ``n_changed``. Every
    released flow is settled at its new rate on return.

    The fill walks each flow's *pool*, ``pool_res``/``pool_frac`` at
    ``flow_ptr[g] .. row_end[g]``: its entries on candidate resources (all
    of them unless ``screening``). Per resource, ``ri[r, RISE_HEAD]`` starts
    a list (through ``rise_next``, over pool entries) of its rising flows'
    entries, appended as they expand and dropped when it saturates or has
    none left. Heap items ``R + g`` are drift events: rising flow ``g``
    reaching ``1 + DRIFT`` times its lazy rate."""
    n_res = rs.shape[0]
    size = 0
    for i in range(n_seeds):
        r = seeds[i]
        size = _heap_set(hk, hi, pos, size, r, _key(r, ev, rs, ri))
    while True:
        # expand the released flows: their loads leave, their weights rise
        while n_stack > 0:
            n_stack -= 1
            g = stack[n_stack]
            x = rate[g]   # (as counted in the loads: 0 before the first fill)
            for e in range(flow_ptr[g], row_end[g]):
                r = pool_res[e]
                a = pool_frac[e]
                if x != 0.0:
                    _add(rs, r, LOAD_HI, -a * x)
                _add(rs, r, W_HI, a)
                ri[r, N_RISING] += 1
                if rise_mark[e] != ri[r, RISE_GEN]:
                    rise_mark[e] = ri[r, RISE_GEN]
                    rise_next[e] = ri[r, RISE_HEAD]
                    ri[r, RISE_HEAD] = e
                k = _key(r, ev, rs, ri)
                p = pos[r]
                if p < 0 or k < hk[p]:
                    size = _heap_set(hk, hi, pos, size, r, k)
            if screening and row_end[g] < flow_ptr[g + 1]:
                size = _heap_set(hk, hi, pos, size, n_res + g, lazy[g] * (1.0 + DRIFT))
        if size == 0:
            break
        key, r, size = _heap_pop(hk, hi, pos, size)
        if r >= n_res:
            # a rising flow reached the drift bound of its lazy rate: count it
            # at this level where it is screened (admitting what may fill up)
            g = r - n_res
            if fl[g, PHASE] == RISING:
                n_joined = _relazy(g, key, flow_ptr, res, frac, row_end, pool_res, pool_frac,
                                   res_ptr, res_flow, res_frac, rs, ri, fl, rate, rise_next,
                                   rise_mark, cand, lazy, lazy_load, joined)
                for i in range(n_joined):
                    r2 = joined[i]
                    size = _heap_set(hk, hi, pos, size, r2, _key(r2, ev, rs, ri))
                if row_end[g] < flow_ptr[g + 1]:
                    size = _heap_set(hk, hi, pos, size, r, key * (1.0 + DRIFT))
            continue
        k = _key(r, ev, rs, ri)
        if k == np.inf:
            continue
        if k > key:
            # its level rose as flows froze elsewhere (keys are lower bounds)
            size = _heap_set(hk, hi, pos, size, r, k)
            continue
        n_up = ri[r, N_RISING]
        lam = _level(rs, r) if n_up > 0 else np.inf
        if ri[r, N_HELD] > 0 and ri[r, CHECKED] != ev:
            ri[r, CHECKED] = ev
            level = rs[r, HELD_AT]
            if lam > level + level * OVER_TOL and (
                    n_up > 0 or (rs[r, CAP] - rs[r, LOAD_HI]) - rs[r, LOAD_LO]
                    > rs[r, CAP] * OVER_TOL):
                # at the level of the flows it holds r has room to spare:
                # they rise again (and its level is computed again after)
                while ri[r, HELD_HEAD] >= 0:
                    n_changed, n_stack = _release(ri[r, HELD_HEAD], ev, fl, ri, rate, old_rate,
                                                  changed, n_changed, stack, n_stack)
                size = _heap_set(hk, hi, pos, size, r, level)
                continue
        if n_up == 0:
            continue
        ri[r, CHECKED] = ev
        over = lam + lam * OVER_TOL
        if rs[r, TOP] > over:
            # settled flows above this level are not held here: release them
            highest = 0.0
            for j in range(res_ptr[r], res_ptr[r + 1]):
                h = res_flow[j]
                if fl[h, PHASE] == SETTLED:
                    if rate[h] > over:
                        n_changed, n_stack = _release(h, ev, fl, ri, rate, old_rate, changed,
                                                      n_changed, stack, n_stack)
                    elif rate[h] > highest:
                        highest = rate[h]
            rs[r, TOP] = highest
            if n_stack > 0:
                # (it stays in play; its level is computed again)
                size = _heap_set(hk, hi, pos, size, r, lam)
                continue
        # r saturates: its rising flows freeze at lam
        rs[r, HELD_AT] = lam
        e = ri[r, RISE_HEAD]
        while e >= 0:
            nxt = rise_next[e]
            g = entry_flow[e]
            if fl[g, PHASE] == RISING:
                fl[g, PHASE] = SETTLED
                rate[g] = lam
                _hold(g, r, fl, ri)
                for e2 in range(flow_ptr[g], row_end[g]):
                    r2 = pool_res[e2]
                    _add(rs, r2, LOAD_HI, pool_frac[e2] * lam)
                    rs[r2, TOP] = max(rs[r2, TOP], lam)
                    ri[r2, N_RISING] -= 1
                    if ri[r2, N_RISING] == 0:
                        rs[r2, W_HI] = 0.0
                        rs[r2, W_LO] = 0.0
                        ri[r2, RISE_HEAD] = -1
                        ri[r2, RISE_GEN] += 1
                        if pos[r2] >= 0:
                            # nothing rises on it: it stays only for its held check
                            size = _heap_set(hk, hi, pos, size, r2, _key(r2, ev, rs, ri))
                    else:
                        _add(rs, r2, W_HI, -pool_frac[e2])
                if screening and row_end[g] < flow_ptr[g + 1]:
                    size = _heap_set(hk, hi, pos, size, n_res + g, np.inf)
                    if lam * (1.0 + DRIFT) * (1.0 + DRIFT) < lazy[g]:
                        # far below its lazy rate: count it lower (frees room)
                        _relazy(g, lam, flow_ptr, res, frac, row_end, pool_res, pool_frac,
                                res_ptr, res_flow, res_frac, rs, ri, fl, rate, rise_next,
                                rise_mark, cand, lazy, lazy_load, joined)
            e = nxt
    return n_changed


@njit(**NUMPY_ERRORS)
def incremental_completion_kernel(flow_ptr, res, frac, capacity, n_plain, w_t, eps, flow_bytes,
                                  persistent, screen=False):
    """Event-driven max-min completion of flows that all start at ``t = 0``,
    each event filling again only what its finished flows reach; with
    ``screen``, after the ``t = 0`` fill only over the resources that are,
    or may come, near capacity.

    Arrays in and out as
    :func:`flowemu.kernels.completion.screened_completion_kernel` (whose
    results it equals to rounding): the CSR ``flow_ptr``, ``res``,
    ``frac``; ``capacity`` per resource (``>= n_plain``: ingress resources
    with incast terms ``w_t``, ``eps``); ``flow_bytes``; ``persistent``
    flows that never finish. Returns ``(rate0, finish, moved, status)``.
    """
    n_flows = flow_ptr.shape[0] - 1
    n_res = capacity.shape[0]
    rate0 = np.zeros(max(n_flows, 0), dtype=np.float64)
    finish = np.full(max(n_flows, 0), np.inf)
    moved = np.zeros(max(n_flows, 0), dtype=np.float64)
    status, incast = check_completion_inputs(flow_ptr, res, frac, capacity, n_plain, w_t, eps,
                                             flow_bytes, persistent)
    if status != STATUS_OK:
        return rate0, finish, moved, status

    res_ptr, res_flow, res_frac = transpose(flow_ptr, res, frac, n_res)
    # each flow's pool of entries the fill walks (screening: candidates only)
    row_end = flow_ptr[1:].copy()
    pool_res = res.copy() if screen else res
    pool_frac = frac.copy() if screen else frac
    screening = False
    cand = np.ones(n_res, dtype=np.uint8)
    lazy = np.zeros(n_flows, dtype=np.float64)
    lazy_load = np.zeros(n_res, dtype=np.float64)
    joined = np.empty(n_res, dtype=np.int32)
    entry_flow = np.empty(res.shape[0], dtype=np.int32)
    for f in range(n_flows):
        entry_flow[flow_ptr[f]:flow_ptr[f + 1]] = f
    rise_next = np.empty(res.shape[0], dtype=np.int32)   # (fewer than 2**31 entries)
    rise_mark = np.zeros(res.shape[0], dtype=np.int32)
    rs = np.zeros((n_res, 8), dtype=np.float64)
    ri = np.zeros((n_res, 8), dtype=np.int64)
    ri[:, HELD_HEAD] = -1
    ri[:, RISE_HEAD] = -1
    ri[:, RISE_GEN] = 1
    fl = np.zeros((n_flows, 8), dtype=np.int64)
    fl[:, BNECK] = -1
    rate = np.zeros(n_flows, dtype=np.float64)
    old_rate = np.zeros(n_flows, dtype=np.float64)
    changed = np.empty(n_flows, dtype=np.int32)
    stack = np.empty(n_flows, dtype=np.int32)
    remaining = flow_bytes.copy()
    since = np.zeros(n_flows, dtype=np.float64)   # time remaining/moved was last brought up to date

    rs[:, CAP] = capacity
    fan_in = np.zeros(n_res, dtype=np.int64)
    n_finite = 0
    n_changed = 0
    n_stack = 0
    for f in range(n_flows):
        if flow_ptr[f + 1] == flow_ptr[f]:
            fl[f, PHASE] = DONE
            rate0[f] = np.inf
            finish[f] = 0.0
        else:
            if not persistent[f]:
                n_finite += 1
            n_changed, n_stack = _release(f, 1, fl, ri, rate, old_rate, changed, n_changed,
                                          stack, n_stack)
            if incast:
                for e in range(flow_ptr[f], flow_ptr[f + 1]):
                    if res[e] >= n_plain:
                        fan_in[res[e]] += 1
    if incast:
        for r in range(n_plain, n_res):
            if fan_in[r] > 0:
                rs[r, CAP] = ingress_capacity(capacity[r], fan_in[r], w_t[r - n_plain],
                                               eps[r - n_plain])
    seeded = np.zeros(n_res, dtype=np.int64)
    seeds = np.empty(n_res, dtype=np.int32)        # resources a fill starts from
    # indexed heaps: resources by level (one fill), unfinished flows by finish time
    # (items n_res + g: drift events of flow g)
    hk = np.empty(n_res + n_flows, dtype=np.float64)
    hi = np.empty(n_res + n_flows, dtype=np.int32)
    pos = np.full(n_res + n_flows, -1, dtype=np.int32)
    fk = np.empty(n_flows, dtype=np.float64)
    fi = np.empty(n_flows, dtype=np.int32)
    fpos = np.full(n_flows, -1, dtype=np.int32)
    fsize = 0
    done = np.empty(n_flows, dtype=np.int32)

    t = 0.0
    ev = 0
    n_seeds = 0
    while True:
        ev += 1
        if ev > n_flows + 2:
            return rate0, finish, moved, STATUS_ITER_LIMIT
        n_changed = _fill(ev, n_stack, n_changed, flow_ptr, res, frac, row_end, pool_res,
                          pool_frac, entry_flow, res_ptr, res_flow, res_frac, rs, ri, fl, rate,
                          old_rate, changed, stack, rise_next, rise_mark, seeds, n_seeds, hk, hi,
                          pos, screening, cand, lazy, lazy_load, joined)
        n_stack = 0
        # the flows whose rate changed: bring their bytes up to date
        for i in range(n_changed):
            g = changed[i]
            x = rate[g]
            if not np.isfinite(x):
                return rate0, finish, moved, STATUS_NONFINITE
            was = old_rate[g]
            if x == was and ev > 1:
                continue
            if persistent[g]:
                moved[g] += was * (t - since[g])
                since[g] = t
                continue
            rem = max(0.0, remaining[g] - was * (t - since[g]))
            remaining[g] = rem
            since[g] = t
            if rem <= 0.0:
                tf = t   # (a 0-byte flow finishes at the first event, even at rate 0)
            elif x <= 0.0:
                return rate0, finish, moved, STATUS_STALLED
            else:
                tf = t + rem / x
                if not np.isfinite(tf):
                    return rate0, finish, moved, STATUS_STALLED
            fsize = _heap_set(fk, fi, fpos, fsize, g, tf)
        n_changed = 0
        if ev == 1:
            for f in range(n_flows):
                if fl[f, PHASE] != DONE:
                    rate0[f] = rate[f]
            if screen:
                _start_screening(flow_ptr, res, frac, row_end, pool_res, pool_frac, rs, fl, rate,
                                 rise_mark, n_plain, cand, lazy, lazy_load)
                screening = True
        if n_finite == 0:
            break
        # --- next event: the earliest finish, with those tied to it
        t_next = np.inf
        n_done = 0
        while fsize > 0:
            key = fk[0]
            if n_done == 0:
                t_next = key
            elif key > t_next + t_next * TIE_TOL:
                break
            _, g, fsize = _heap_pop(fk, fi, fpos, fsize)
            fl[g, PHASE] = DONE
            done[n_done] = g
            n_done += 1
        if n_done == 0:
            return rate0, finish, moved, STATUS_STALLED
        t = t_next
        n_finite -= n_done
        for i in range(n_done):
            g = done[i]
            _unhold(g, fl, ri)
            finish[g] = t
            remaining[g] = 0.0
        if n_finite == 0:
            break
        # release the finished flows' load; their resources (and receivers'
        # ingress capacities) changed: they seed the next fill
        ev_next = ev + 1
        n_seeds = 0
        for i in range(n_done):
            g = done[i]
            x = rate[g]
            for e in range(flow_ptr[g], flow_ptr[g + 1]):
                r = res[e]
                if not cand[r]:
                    lazy_load[r] -= frac[e] * lazy[g]
                    continue
                _add(rs, r, LOAD_HI, -frac[e] * x)
                if incast and r >= n_plain:
                    fan_in[r] -= 1
                    rs[r, CAP] = ingress_capacity(capacity[r], fan_in[r], w_t[r - n_plain],
                                                   eps[r - n_plain])
                if seeded[r] != ev_next:
                    seeded[r] = ev_next
                    seeds[n_seeds] = r
                    n_seeds += 1
    for f in range(n_flows):
        if persistent[f] and fl[f, PHASE] != DONE:
            moved[f] += rate[f] * (t - since[f])
    return rate0, finish, moved, STATUS_OK
