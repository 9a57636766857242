"""The fill of the incremental max-min solver (:mod:`.incremental`, whose
notes say why it is exact): per-resource and per-flow state, which resource
holds which flow, releases, and the lazy counting of flows on resources far
from capacity (screening).

Layout
------
What a fill reads and writes of a resource is one 64-byte row of ``rs``
(float64) and one of ``ri`` (int64), of a flow one row of ``fl`` (int64);
the columns are named below.
"""

from __future__ import annotations

import numpy as np

from .heaps import heap_pop, heap_set
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
#: a resource's load is known to within this (relative to its capacity):
#: each flow's share of it is a rounded product. Its level is the room
#: over the weight of its rising flows, so a small weight (a flow with an
#: ECMP fraction of 1e-17 on it) makes that rounding a level far from the
#: one the full filling would give. When the level of the flows it holds
#: (or, holding none, the rate of its fastest settled flow) fills it to
#: within this, that is its level. For the flows it holds that is exact: a
#: resource full at their level freezes its rising flows there (one slower
#: before rises to it, the others giving up a share below rounding), and
#: they stay its fastest. Holding none, it settles a tie within rounding:
#: such flows freeze with the others there, as in the full filling when
#: the resource comes first among equal levels
SNAP = 16.0 * 2.0 ** -53

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
TOUCHED = 6   # 1 while listed for a key update after an expansion
# fl: int64[F, 8] per flow
PHASE = 0     # SETTLED, RISING or DONE
STAMP = 1     # fill in which it was last released
BNECK = 2     # resource that holds it (-1: none)
HELD_NEXT = 3
HELD_PREV = 4


@njit(refcounts=False, **NUMPY_ERRORS)
def add_dd(rs, r, col, a):
    """``rs[r, col] + rs[r, col + 1] += a`` without losing ``a``'s digits
    (two-sum; ``col + 1`` holds the low part)."""
    h = rs[r, col]
    s = h + a
    bp = s - h
    rs[r, col + 1] += (h - (s - bp)) + (a - bp)
    rs[r, col] = s


@njit(refcounts=False, **NUMPY_ERRORS)
def level_of(rs, ri, r):
    """Level at which ``r`` saturates with its rising weight: the level of
    the flows it holds (of its fastest settled flow if it holds none) when
    that fills it to within ``SNAP`` of its capacity."""
    s = (rs[r, CAP] - rs[r, LOAD_HI]) - rs[r, LOAD_LO]
    w = rs[r, W_HI] + rs[r, W_LO]
    ref = rs[r, HELD_AT] if ri[r, N_HELD] > 0 else rs[r, TOP]
    if abs(s - ref * w) <= rs[r, CAP] * SNAP:
        return ref
    return max(0.0, s / w)


@njit(refcounts=False, **NUMPY_ERRORS)
def attention(r, ev, rs, ri):
    """Level at which resource ``r`` needs the fill's attention: the level of
    the flows it holds if it is not yet checked in fill ``ev`` and sooner,
    else where its rising flows would saturate it (``+inf``: never)."""
    lam = level_of(rs, ri, r) if ri[r, N_RISING] > 0 else np.inf
    if ri[r, N_HELD] > 0 and ri[r, CHECKED] != ev and rs[r, HELD_AT] < lam:
        return rs[r, HELD_AT]
    return lam


@njit(refcounts=False, **NUMPY_ERRORS)
def hold(g, r, fl, ri):
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


@njit(refcounts=False, **NUMPY_ERRORS)
def unhold(g, fl, ri):
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


@njit(refcounts=False, **NUMPY_ERRORS)
def release(g, ev, fl, ri, rate, old_rate, changed, n_changed, stack, n_stack):
    """Make settled flow ``g`` rising (its entries are applied when it is
    expanded; it leaves the resource that held it); the first time in fill
    ``ev``, note its rate before."""
    fl[g, PHASE] = RISING
    unhold(g, fl, ri)
    if fl[g, STAMP] != ev:
        fl[g, STAMP] = ev
        old_rate[g] = rate[g]
        changed[n_changed] = g
        n_changed += 1
    stack[n_stack] = g
    return n_changed, n_stack + 1


@njit(refcounts=False, **NUMPY_ERRORS)
def admit(r, row_end, pool_res, pool_frac, res_ptr, res_flow, res_frac, rs, ri, fl, rate,
          rise_next, rise_mark, cand, room):
    """Make screened resource ``r`` a candidate during a fill (no released
    flow is waiting to be expanded): its exact load and rising weight from
    its flows, an entry in each one's pool (and in its rising list)."""
    cand[r] = 1
    room[r] = np.inf
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
            add_dd(rs, r, W_HI, a)
            ri[r, N_RISING] += 1
            rise_mark[p] = ri[r, RISE_GEN]
            rise_next[p] = ri[r, RISE_HEAD]
            ri[r, RISE_HEAD] = p
        else:
            add_dd(rs, r, LOAD_HI, a * rate[g])
            rs[r, TOP] = max(rs[r, TOP], rate[g])


@njit(refcounts=False, **NUMPY_ERRORS)
def relazy(g, new, flow_ptr, res, frac, row_end, pool_res, pool_frac, res_ptr, res_flow,
           res_frac, rs, ri, fl, rate, rise_next, rise_mark, cand, lazy, room, joined):
    """Count flow ``g`` at the lazy rate ``new`` on its screened resources;
    those that may come near capacity are admitted (listed in ``joined``).
    Returns how many. (A candidate's ``room`` is ``+inf``: the walk needs
    no test to leave it alone.)"""
    d = new - lazy[g]
    lazy[g] = new
    admitted = 0
    if d <= 0.0:
        for e in range(flow_ptr[g], flow_ptr[g + 1]):
            room[res[e]] -= frac[e] * d
        return 0
    for e in range(flow_ptr[g], flow_ptr[g + 1]):
        r = res[e]
        room[r] -= frac[e] * d
        if room[r] <= 0.0:
            admit(r, row_end, pool_res, pool_frac, res_ptr, res_flow, res_frac, rs, ri, fl,
                  rate, rise_next, rise_mark, cand, room)
            joined[admitted] = r
            admitted += 1
    return admitted


@njit(**NUMPY_ERRORS)
def lazy_room(lazy_load, cap):
    """A screened resource's *room*: how much more lazy load it takes while
    it stays below capacity ``cap`` with its flows within ``DRIFT`` of the
    lazy rates that load it with ``lazy_load`` (it may be screened while the
    room is ``> 0``)."""
    return cap * (1.0 - MARGIN) / (1.0 + DRIFT) - lazy_load


@njit(**NUMPY_ERRORS)
def start_screening(flow_ptr, res, frac, row_end, pool_res, pool_frac, rs, fl, rate, rise_mark,
                     n_plain, cand, lazy, room):
    """After the ``t = 0`` fill (every flow settled, every load exact): count
    each flow at its rate as its lazy rate, keep as candidates the resources
    that may come near capacity (ingress resources, whose capacity moves,
    always), and pool each flow's entries on them. ``room``: each screened
    resource's :func:`lazy_room`, ``+inf`` for a candidate."""
    n_flows = flow_ptr.shape[0] - 1
    n_res = rs.shape[0]
    for r in range(n_res):
        room[r] = lazy_room(rs[r, LOAD_HI] + rs[r, LOAD_LO], rs[r, CAP])
        cand[r] = 1 if r >= n_plain or room[r] <= 0.0 else 0
    for g in range(n_flows):
        if fl[g, PHASE] == DONE:
            continue
        lazy[g] = rate[g]
        if rate[g] <= 0.0:
            # (no drift bound holds at rate 0: every resource it crosses stays)
            for e in range(flow_ptr[g], flow_ptr[g + 1]):
                cand[res[e]] = 1
    for r in range(n_res):
        if cand[r]:
            room[r] = np.inf
    for g in range(n_flows):
        p = flow_ptr[g]
        for e in range(flow_ptr[g], flow_ptr[g + 1]):
            if cand[res[e]]:
                pool_res[p] = res[e]
                pool_frac[p] = frac[e]
                p += 1
        row_end[g] = p
    rise_mark[:] = 0   # (pool entries moved; lists are empty between fills)


@njit(refcounts=False, **NUMPY_ERRORS)
def count_load(g, x, flow_ptr, res, frac, rs, skip):
    """Count flow ``g`` at rate ``x`` in the load (and ``TOP``) of each
    resource it crosses, but those with ``skip[r]`` (``skip`` None: none)."""
    for e in range(flow_ptr[g], flow_ptr[g + 1]):
        r = res[e]
        if skip is not None and skip[r]:
            continue
        add_dd(rs, r, LOAD_HI, frac[e] * x)
        rs[r, TOP] = max(rs[r, TOP], x)


@njit(**NUMPY_ERRORS)
def stale_pools(res_ptr, rs, cand, n_plain, share):
    """Whether more than ``share`` of the entries on candidate resources lie
    on resources now far enough from capacity to be screened (counting every
    flow that crosses them, finished ones included: an estimate of O(R))."""
    stale = 0
    total = 0
    for r in range(n_plain):
        if not cand[r]:
            continue
        n = res_ptr[r + 1] - res_ptr[r]
        total += n
        if lazy_room(rs[r, LOAD_HI] + rs[r, LOAD_LO], rs[r, CAP]) > 0.0:
            stale += n
    return stale > share * total


@njit(**NUMPY_ERRORS)
def rescreen(flow_ptr, row_end, pool_res, pool_frac, res_ptr, res_flow, res_frac, rs, fl, rate,
             rise_mark, n_plain, cand, lazy, room):
    """Between two events (every flow settled, every candidate's load
    exact): screen again each candidate that its flows at their lazy rates
    now leave far from capacity, and drop its entries from their pools.
    Returns how many were screened.

    A flow whose pool is its whole route had no drift events (nothing of it
    was screened), so its lazy rate is set to its rate first, as
    :func:`start_screening` does; the others' lazy rates bound their rates
    within ``DRIFT`` already, and the resources screened before keep their
    room. A resource with a flow at lazy rate 0 stays (no drift bound holds
    there). The work is the CSR rows of the candidates screened and the
    pools of their flows, not every entry."""
    n_flows = flow_ptr.shape[0] - 1
    now = np.empty(n_plain, dtype=np.int32)   # (screened now)
    n_now = 0
    for r in range(n_plain):
        if not cand[r] or lazy_room(rs[r, LOAD_HI] + rs[r, LOAD_LO], rs[r, CAP]) <= 0.0:
            continue
        load = 0.0
        zero = False
        for k in range(res_ptr[r], res_ptr[r + 1]):
            g = res_flow[k]
            if fl[g, PHASE] == DONE:
                continue
            if row_end[g] == flow_ptr[g + 1]:
                lazy[g] = rate[g]
            if lazy[g] <= 0.0:
                zero = True
                break
            load += res_frac[k] * lazy[g]
        r_room = lazy_room(load, rs[r, CAP])
        if zero or r_room <= 0.0:
            continue
        cand[r] = 0
        room[r] = r_room
        now[n_now] = r
        n_now += 1
    # the pools of the flows on them lose them (each pool compacted once)
    seen = np.zeros(n_flows, dtype=np.uint8)
    for i in range(n_now):
        r = now[i]
        for k in range(res_ptr[r], res_ptr[r + 1]):
            g = res_flow[k]
            if fl[g, PHASE] == DONE or seen[g]:
                continue
            seen[g] = 1
            p = flow_ptr[g]
            for e in range(flow_ptr[g], row_end[g]):
                rise_mark[e] = 0   # (pool entries move; lists are empty between fills)
                if cand[pool_res[e]]:
                    pool_res[p] = pool_res[e]
                    pool_frac[p] = pool_frac[e]
                    p += 1
            row_end[g] = p
    return n_now


@njit(**NUMPY_ERRORS)
def rescreen_if_stale(walked, rescreen_walk, rescreen_stale, flow_ptr, row_end, pool_res,
                      pool_frac, res_ptr, res_flow, res_frac, rs, fl, rate, rise_mark, n_plain,
                      cand, lazy, room):
    """Between two events while screening (every flow settled, every
    candidate's load exact): once the fills have walked ``walked`` pool
    entries, ``rescreen_walk`` times as many as there are entries and
    resources (``-1``: never), look at the pools and :func:`rescreen` if
    more than ``rescreen_stale`` of the candidates' entries lie on
    resources now far from capacity (a look costs O(R), a screening the
    rows of the resources it screens and their flows' pools). Returns the
    entries walked since the last look."""
    n_flows = flow_ptr.shape[0] - 1
    if rescreen_walk < 0.0 or walked < rescreen_walk * (flow_ptr[n_flows] + rs.shape[0]):
        return walked
    if stale_pools(res_ptr, rs, cand, n_plain, rescreen_stale):
        rescreen(flow_ptr, row_end, pool_res, pool_frac, res_ptr, res_flow, res_frac, rs, fl,
                 rate, rise_mark, n_plain, cand, lazy, room)
    return 0


@njit(**NUMPY_ERRORS)
def over_buffers(res_ptr):
    """:func:`refill`'s list of the settled flows above a level on one
    resource (``over_h``, int32; ``over_x``, float64 ``(n, 2)``), as long as
    the longest CSR row of ``res_ptr``."""
    longest = 0
    for r in range(res_ptr.shape[0] - 1):
        longest = max(longest, res_ptr[r + 1] - res_ptr[r])
    return np.empty(longest, dtype=np.int32), np.empty((longest, 2), dtype=np.float64)


@njit(refcounts=False, **NUMPY_ERRORS)
def water_level(r, lam, over, over_h, over_x, n_over, rs):
    """The rate above which resource ``r``'s settled flows must rise again
    (with ``OVER_TOL``), given that its rising flows would saturate it at
    ``lam`` (``over`` is ``lam`` with ``OVER_TOL``): the level ``l`` at
    which ``r`` saturates when the settled flows above ``l`` rise with its
    rising flows and the others keep their rates. It is the weighted mean of
    ``lam`` (weight: the rising flows') and the released flows' rates
    (weight: their fractions on ``r``), so dropping from the released set
    the flows at or below the mean raises it; repeated, this stops at ``l``.
    Only ``r``'s settled flows above ``over`` can be released: they are
    listed, as :func:`refill` found them in one walk of ``r``'s flows, in
    ``over_h[:n_over]`` (the flow; ``-1 - h`` for one ``r`` holds) and
    ``over_x[:n_over]`` (its fraction on ``r``, its rate).

    A flow at or below ``l`` held elsewhere would, released, rise past its
    rate before ``r`` stopped it, and freeze again where it is held, at its
    rate give or take rounding: it need not move. Should another resource
    now stop it lower, that resource's own check releases it, as it does
    any settled flow faster than its level. The flows ``r`` holds above
    ``lam`` rise in any case: ``r`` is what stops them, and it now
    saturates higher."""
    w = rs[r, W_HI] + rs[r, W_LO]
    base = lam * w
    cut = over
    before = over
    for _ in range(64):
        wa = 0.0
        la = 0.0
        lowest = np.inf   # (of the released flows r does not hold)
        for i in range(n_over):
            a = over_x[i, 0]
            x = over_x[i, 1]
            held = over_h[i] < 0
            if held or x > cut:
                wa += a
                la += a * x
                if not held:
                    lowest = min(lowest, x)
        if wa == 0.0:
            return before   # (rounding emptied the set: the last one goes)
        level = (base + la) / (w + wa)
        if not lowest <= level:
            return cut   # every flow released is above r's level with them
        before = cut
        cut = level
    return before


@njit(**NUMPY_ERRORS)
def refill(ev, n_stack, n_changed, flow_ptr, res, frac, row_end, pool_res, pool_frac, entry_flow,
          res_ptr, res_flow, res_frac, rs, ri, fl, rate, old_rate, changed, stack, rise_next,
          rise_mark, seeds, n_seeds, hk, hi, pos, screening, cand, lazy, room, joined,
          act_head, act_next, over_h, over_x):
    """Fill again what the released flows on ``stack`` and the changed
    resources ``seeds[:n_seeds]`` reach; returns ``n_changed``. Every
    released flow is settled at its new rate on return.

    The fill walks each flow's *pool*, ``pool_res``/``pool_frac`` at
    ``flow_ptr[g] .. row_end[g]``: its entries on candidate resources (all
    of them unless ``screening``). Per resource, ``ri[r, RISE_HEAD]`` starts
    a list (through ``rise_next``, over pool entries) of its rising flows'
    entries, appended as they expand and dropped when it saturates or has
    none left. Heap items ``R + g`` are drift events: rising flow ``g``
    reaching ``1 + DRIFT`` times its lazy rate. Unless ``act_head`` is
    None, a resource's flows are the entries on its list ``act_head[r]``,
    ``act_next[e]`` (the flows in the solve; dataflow) instead of its CSR
    row (every flow); numba compiles each case apart, so the incremental
    solver's fill has no list code. Once the seeds have their keys,
    ``seeds`` is reused to list the resources an expansion touched."""
    n_res = rs.shape[0]
    size = 0
    for i in range(n_seeds):
        r = seeds[i]
        size = heap_set(hk, hi, pos, size, r, attention(r, ev, rs, ri))
    while True:
        # expand the released flows: their loads leave, their weights rise;
        # each resource they cross (listed once in seeds) gets its key after
        n_touched = 0
        while n_stack > 0:
            n_stack -= 1
            g = stack[n_stack]
            x = rate[g]   # (as counted in the loads: 0 before the first fill)
            for e in range(flow_ptr[g], row_end[g]):
                r = pool_res[e]
                a = pool_frac[e]
                if x != 0.0:
                    add_dd(rs, r, LOAD_HI, -a * x)
                add_dd(rs, r, W_HI, a)
                ri[r, N_RISING] += 1
                if rise_mark[e] != ri[r, RISE_GEN]:
                    rise_mark[e] = ri[r, RISE_GEN]
                    rise_next[e] = ri[r, RISE_HEAD]
                    ri[r, RISE_HEAD] = e
                if ri[r, TOUCHED] == 0:
                    ri[r, TOUCHED] = 1
                    seeds[n_touched] = r
                    n_touched += 1
            if screening and row_end[g] < flow_ptr[g + 1]:
                size = heap_set(hk, hi, pos, size, n_res + g, lazy[g] * (1.0 + DRIFT))
        for i in range(n_touched):
            r = seeds[i]
            ri[r, TOUCHED] = 0
            k = attention(r, ev, rs, ri)
            p = pos[r]
            if p < 0 or k < hk[p]:
                size = heap_set(hk, hi, pos, size, r, k)
        if size == 0:
            break
        key, r, size = heap_pop(hk, hi, pos, size)
        if r >= n_res:
            # a rising flow reached the drift bound of its lazy rate: count it
            # where it is screened one drift step ahead of this level (a rate
            # that keeps rising is counted again half as often), admitting
            # what may fill up
            g = r - n_res
            if fl[g, PHASE] == RISING:
                ahead = key * (1.0 + DRIFT)
                n_joined = relazy(g, ahead, flow_ptr, res, frac, row_end, pool_res, pool_frac,
                                   res_ptr, res_flow, res_frac, rs, ri, fl, rate, rise_next,
                                   rise_mark, cand, lazy, room, joined)
                for i in range(n_joined):
                    r2 = joined[i]
                    size = heap_set(hk, hi, pos, size, r2, attention(r2, ev, rs, ri))
                if row_end[g] < flow_ptr[g + 1]:
                    size = heap_set(hk, hi, pos, size, r, ahead * (1.0 + DRIFT))
            continue
        k = attention(r, ev, rs, ri)
        if k == np.inf:
            continue
        if k > key:
            # its level rose as flows froze elsewhere (keys are lower bounds)
            size = heap_set(hk, hi, pos, size, r, k)
            continue
        n_up = ri[r, N_RISING]
        lam = level_of(rs, ri, r) if n_up > 0 else np.inf
        if ri[r, N_HELD] > 0 and ri[r, CHECKED] != ev:
            ri[r, CHECKED] = ev
            level = rs[r, HELD_AT]
            if lam > level + level * OVER_TOL and (
                    n_up > 0 or (rs[r, CAP] - rs[r, LOAD_HI]) - rs[r, LOAD_LO]
                    > rs[r, CAP] * OVER_TOL):
                # at the level of the flows it holds r has room to spare:
                # they rise again (and its level is computed again after)
                while ri[r, HELD_HEAD] >= 0:
                    n_changed, n_stack = release(ri[r, HELD_HEAD], ev, fl, ri, rate, old_rate,
                                                  changed, n_changed, stack, n_stack)
                size = heap_set(hk, hi, pos, size, r, level)
                continue
        if n_up == 0:
            continue
        ri[r, CHECKED] = ev
        over = lam + lam * OVER_TOL
        if rs[r, TOP] > over:
            # settled flows above this level are not held here: release them
            # (those up to the level at which r saturates once the others
            # rise with its rising flows stay: see water_level). One walk of
            # r's CSR row (or with act_head of its flows in the solve only,
            # dataflow: most are not) lists the settled flows above `over`,
            # the only ones that may rise; water_level and the releases
            # then read that list only
            highest = 0.0
            n_over = 0
            j = res_ptr[r] if act_head is None else act_head[r]
            while j >= 0:
                if act_head is None:   # (pruned when compiled: None is a type of its own)
                    if j == res_ptr[r + 1]:
                        break
                    h = res_flow[j]
                    a = res_frac[j]
                else:
                    h = entry_flow[j]
                    a = frac[j]
                j = j + 1 if act_head is None else act_next[j]
                if fl[h, PHASE] == SETTLED:
                    x = rate[h]
                    if x > over:
                        over_h[n_over] = -1 - h if fl[h, BNECK] == r else h
                        over_x[n_over, 0] = a
                        over_x[n_over, 1] = x
                        n_over += 1
                    elif x > highest:
                        highest = x
            cut = water_level(r, lam, over, over_h, over_x, n_over, rs)
            for i in range(n_over):
                h = over_h[i]
                if h < 0 or over_x[i, 1] > cut:
                    n_changed, n_stack = release(h if h >= 0 else -1 - h, ev, fl, ri, rate,
                                                 old_rate, changed, n_changed, stack, n_stack)
                elif over_x[i, 1] > highest:
                    highest = over_x[i, 1]
            rs[r, TOP] = highest
            if n_stack > 0:
                # (it stays in play; its level is computed again)
                size = heap_set(hk, hi, pos, size, r, lam)
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
                hold(g, r, fl, ri)
                for e2 in range(flow_ptr[g], row_end[g]):
                    r2 = pool_res[e2]
                    add_dd(rs, r2, LOAD_HI, pool_frac[e2] * lam)
                    rs[r2, TOP] = max(rs[r2, TOP], lam)
                    ri[r2, N_RISING] -= 1
                    if ri[r2, N_RISING] == 0:
                        rs[r2, W_HI] = 0.0
                        rs[r2, W_LO] = 0.0
                        ri[r2, RISE_HEAD] = -1
                        ri[r2, RISE_GEN] += 1
                        if pos[r2] >= 0:
                            # nothing rises on it: it stays only for its held check
                            size = heap_set(hk, hi, pos, size, r2, attention(r2, ev, rs, ri))
                    else:
                        add_dd(rs, r2, W_HI, -pool_frac[e2])
                if screening and row_end[g] < flow_ptr[g + 1]:
                    size = heap_set(hk, hi, pos, size, n_res + g, np.inf)
                    if lam * (1.0 + DRIFT) ** 3 < lazy[g]:
                        # far below its lazy rate (more than two drift steps:
                        # not just counted ahead): count it lower (frees room)
                        relazy(g, lam, flow_ptr, res, frac, row_end, pool_res, pool_frac,
                                res_ptr, res_flow, res_frac, rs, ri, fl, rate, rise_next,
                                rise_mark, cand, lazy, room, joined)
            e = nxt
    return n_changed
