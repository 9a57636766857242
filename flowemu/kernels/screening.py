"""Screened re-solves for the max-min solver (numba).

A flow with ECMP split routes on a torus crosses hundreds of links, but only
the few that are (nearly) saturated can bind its rate: on a random
permutation on torus:64x64 about 400 of 16,384 links are saturated at
``t = 0``, fewer later. A *screened* event solves the flows at or above the
finished rate over the entries on *candidate* resources only, and proves
that the other resources stay below capacity without summing their loads.

The proof is a drift bound. Every active flow ``f`` has a *lazy rate*
``x~_f``, and every resource a *lazy load* ``L~_r = sum_f a_{f,r} x~_f``; a
screened resource's ``RESID`` holds its *room* ``SCREEN_SHARE c_r - L~_r``
(a candidate's, its exact residual; its lazy load is kept beside). After a
solve, every flow whose rate ``x_f`` left ``[(1 - SCREEN_DRIFT) x~_f, (1 +
SCREEN_DRIFT) x~_f]`` gets ``x~_f = x_f`` and the lazy loads of its
resources are updated. So ``x_f <= (1 + SCREEN_DRIFT) x~_f`` for every flow
and the true load of a screened resource is at most ``(1 + SCREEN_DRIFT)
L~_r``. A screened resource stays screened while that bound is below its
capacity (by ``SCREEN_MARGIN``, for rounding); when an update breaks it, the
resource becomes a candidate: its load is summed exactly over its flows (the
transpose) and its entries join the flows' pools (below). If its exact load
is over capacity, the event solves again with it. Between events, once
enough resources have joined, the candidates whose lazy bound has fallen
well below capacity are screened again (:func:`rescreen`).

The rates of a screened event are the max-min fair ones, not an
approximation: they are max-min fair for the candidate resources (every flow
has a bottleneck among them), and feasible on every other resource, so every
flow has a bottleneck in the whole network and the allocation is feasible,
which characterises the max-min fair allocation.

The pool. The fill (:mod:`.maxmin`) walks each flow's candidate entries
only, kept in a pool beside the rows: flow ``f``'s at ``flow_ptr[f] ..
row_end[f]`` of ``pool_res``/``pool_frac`` (the rows themselves are never
reordered). A new candidate's entries are appended to the pools of the
flows crossing it, found by the transpose; a candidate screened again is
looked up in each such pool (a few dozen entries) and swapped with the last.
The loops over screened entries (drift, finished flows) walk the whole row
and skip the candidates. Every active flow keeps at least one candidate
entry: its bottleneck is saturated when screening starts, and a candidate is
not screened again while it is the last candidate entry of a flow.
"""

from __future__ import annotations

import numpy as np

from .jit import njit
from .layout import CAP, NUMPY_ERRORS, RESID, TIE_TOL

#: relative drift of a flow's rate from its lazy rate before its lazy loads
#: are brought up to date (a smaller value updates more often and keeps
#: fewer candidates; on the split-routed permutation on torus:64x64 0.03
#: costs least, 0.02 and 0.04 ~6 % more)
SCREEN_DRIFT = 0.03
#: relative headroom a screened resource keeps below its capacity, far above
#: the rounding of its running residual
SCREEN_MARGIN = 1e-9
#: a candidate is screened again (between events, see :func:`rescreen`)
#: when its bound is this share below what screening allows
SCREEN_SLACK = 0.005
#: ... once the candidates admitted since the last look are this share of
#: those left after it. A look costs a pass over the candidate flags and the
#: columns of the resources it screens again; looking more often keeps fewer
#: candidates (on the permutation above 0.15 walks ~27 % fewer entries than
#: 0.5 for ~30 % more rescreening; 0.05-0.1 and 0.25 cost ~4 % more than 0.15)
RESCREEN_GROWTH = 0.15
#: a new candidate whose exact load is above its capacity by more than this
#: share is a violation (the event solves again); below it, rounding
VIOL_TOL = TIE_TOL


#: share of its capacity a screened resource's lazy load may reach: ``(1 +
#: SCREEN_DRIFT) L~ < (1 - SCREEN_MARGIN) c``
SCREEN_SHARE = (1.0 - SCREEN_MARGIN) / (1.0 + SCREEN_DRIFT)


@njit(**NUMPY_ERRORS)
def _drifted(x, xl):
    """Whether a flow at rate ``x`` with lazy rate ``xl`` must be brought up
    to date."""
    return abs(x - xl) > SCREEN_DRIFT * xl


@njit(**NUMPY_ERRORS)
def _room(cap, lazy_load):
    """What a screened resource keeps in ``RESID``: the lazy load it may
    still take, ``SCREEN_SHARE c - L~`` (it stays screened while that is
    positive; a zero-capacity resource never is)."""
    return cap * SCREEN_SHARE - lazy_load


@njit(**NUMPY_ERRORS)
def start_screening(act, n_act, flow_ptr, row_end, res, frac, rates, lazy, state, cold, cand,
                     cand_lazy):
    """Screen every resource whose load allows it (loads at the current
    rates, which are max-min fair), copy the active flows' candidate
    entries into the pool and set their lazy rates. ``RESID`` must count
    every active flow at its rate; a candidate's lazy load goes to
    ``cand_lazy`` (the lazy rates are the rates). Returns the pool ``(pool_res,
    pool_frac)`` (flow ``f``'s candidate entries at ``flow_ptr[f] ..
    row_end[f]``) and the number of candidates."""
    n_res = state.shape[0]
    n_entries = res.shape[0]
    pool_res = np.empty(n_entries, dtype=res.dtype)
    pool_frac = np.empty(n_entries, dtype=np.float64)
    n_cand = 0
    for r in range(n_res):
        cap = cold[r, CAP]
        room = _room(cap, cap - state[r, RESID])
        c = not room > 0.0
        cand[r] = c
        n_cand += c
        if c:
            cand_lazy[r] = cap - state[r, RESID]
        else:
            state[r, RESID] = room
    for i in range(n_act):
        f = act[i]
        k = flow_ptr[f]
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            r = res[e]
            if cand[r]:
                pool_res[k] = r
                pool_frac[k] = frac[e]
                k += 1
        row_end[f] = k
        lazy[f] = rates[f]
    return pool_res, pool_frac, n_cand


@njit(**NUMPY_ERRORS)
def pending_drift(sub, n_sub, flow_ptr, res, frac, rates, lazy, state, cand, pend, pend_res,
                   joining):
    """The changes of the lazy loads if every flow of ``sub[:n_sub]`` that
    drifted too far from its lazy rate were brought up to date: summed in
    ``pend`` (resources listed in ``pend_res``, which has a slot more than
    there are resources), nothing committed. Lists the screened resources
    whose bound would no longer hold in ``joining`` (marked ``cand == 2``).
    Returns ``(resources with a pending change, resources listed)``."""
    n_pend = 0
    n_join = 0
    for i in range(n_sub):
        f = sub[i]
        x = rates[f]
        xl = lazy[f]
        d = x - xl
        if not _drifted(x, xl):
            continue
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            r = res[e]
            p = pend[r]
            pend_res[n_pend] = r
            n_pend += p == 0.0
            p += frac[e] * d
            if p == 0.0:
                p = 1e-300  # (keep it listed once)
            pend[r] = p
            if cand[r] == 0 and p >= state[r, RESID]:  # (its room)
                cand[r] = 2
                joining[n_join] = r
                n_join += 1
    return n_pend, n_join


@njit(**NUMPY_ERRORS)
def commit_drift(sub, n_sub, rates, lazy, state, cand, cand_lazy, pend, pend_res, n_pend):
    """Apply the pending changes (to the room of a screened resource, to the
    lazy load of a candidate) and set the lazy rate of every flow that
    drifted too far to its rate."""
    for i in range(n_pend):
        r = pend_res[i]
        if cand[r] == 0:
            state[r, RESID] -= pend[r]
        else:
            cand_lazy[r] += pend[r]
        pend[r] = 0.0
    for i in range(n_sub):
        f = sub[i]
        x = rates[f]
        if _drifted(x, lazy[f]):
            lazy[f] = x


@njit(**NUMPY_ERRORS)
def admit(joining, n_join, row_end, pool_res, pool_frac, rates, applied, lazy, finish, in_sub,
           ev, state, cold, cand, cand_lazy, res_ptr, res_flow, res_frac, base):
    """Make the resources ``joining[:n_join]`` candidates: their residual is
    summed exactly (each active flow at its applied rate, as for every
    candidate), with the flows re-solved in this event (``in_sub == ev``)
    left out in ``base``, and their lazy load summed; their entries join
    each active flow's pool. Returns whether one is over capacity at the
    current rates."""
    over = False
    for j in range(n_join):
        r = joining[j]
        cand[r] = 1
        used = 0.0
        used_sub = 0.0
        load = 0.0
        lz = 0.0
        for k in range(res_ptr[r], res_ptr[r + 1]):
            g = res_flow[k]
            if finish[g] != np.inf:
                continue  # finished (rate 0, counted nowhere)
            a = res_frac[k]
            if in_sub[g] == ev:
                used_sub += a * applied[g]
            else:
                used += a * applied[g]
            load += a * rates[g]
            lz += a * lazy[g]
            e = row_end[g]
            pool_res[e] = r
            pool_frac[e] = a
            row_end[g] = e + 1
        cand_lazy[r] = lz
        cap = cold[r, CAP]
        base[r] = cap - used
        state[r, RESID] = cap - (used + used_sub)
        if load > cap + cap * VIOL_TOL:
            over = True
    return over


@njit(**NUMPY_ERRORS)
def roll_back(touched, n_touched, joining, n_join, sub, n_sub, applied, state, base, pend,
               pend_res, n_pend):
    """Undo a solve whose rates a new candidate cannot carry: the residuals
    it touched and those of the new candidates go back to the capacity left
    by the other flows (``base``, exact: not the difference of the rates
    just solved, which may be far above the true ones), the flows of
    ``sub`` count nowhere (applied 0) and the pending drift is dropped."""
    for i in range(n_touched):
        r = touched[i]
        state[r, RESID] = base[r]
    for j in range(n_join):
        r = joining[j]
        state[r, RESID] = base[r]
    for i in range(n_sub):
        applied[sub[i]] = 0.0
    for i in range(n_pend):
        pend[pend_res[i]] = 0.0


@njit(**NUMPY_ERRORS)
def rescreen(flow_ptr, row_end, pool_res, pool_frac, finish, state, cold, cand, cand_lazy,
              res_ptr, res_flow):
    """Screen again every candidate whose load bound at the lazy rates is
    below ``1 - SCREEN_SLACK`` of what screening allows, unless it is the
    last candidate entry of a flow (call between events: rates max-min fair,
    so every flow's bottleneck, being saturated, stays). Its entries leave
    the pool and its residual becomes its room. Returns the number of
    candidates left."""
    n_res = state.shape[0]
    n_cand = 0
    for r in range(n_res):
        if cand[r] == 0:
            continue
        cap = cold[r, CAP]
        room = _room(cap, cand_lazy[r])
        if room <= SCREEN_SLACK * SCREEN_SHARE * cap:
            n_cand += 1
            continue
        last = False
        for k in range(res_ptr[r], res_ptr[r + 1]):
            g = res_flow[k]
            last |= finish[g] == np.inf and row_end[g] - flow_ptr[g] == 1
        if last:
            n_cand += 1
            continue
        cand[r] = 0
        state[r, RESID] = room
        for k in range(res_ptr[r], res_ptr[r + 1]):
            g = res_flow[k]
            if finish[g] == np.inf:
                end = row_end[g] - 1
                for e in range(flow_ptr[g], end):
                    if pool_res[e] == r:
                        pool_res[e] = pool_res[end]
                        pool_frac[e] = pool_frac[end]
                        break
                row_end[g] = end
    return n_cand
