"""Bottleneck checks for the max-min solver's restricted re-solves (numba).

A flow's *bottleneck* is a saturated resource on its path on which no flow is
faster. A feasible allocation in which every flow has one is the max-min fair
allocation, so after an event :func:`flowemu.kernels.completion.completion_kernel`
re-solves only the flows a finish can reach and accepts the result when every
flow whose bottleneck may have changed still has one (see the "Speed" section
of :mod:`.maxmin`). Arrays in, arrays out, no exceptions; the per-resource
state layout is :mod:`.layout`'s.
"""

from __future__ import annotations

from .jit import njit
from .layout import CAP, NUMPY_ERRORS, RESID, TIE_TOL

#: a resource whose residual capacity is at most this share of its capacity
#: counts as saturated when a flow's bottleneck is checked
SAT_TOL = 1e-11
UNKNOWN = -1  # bneck of a flow whose bottleneck is to be looked up


@njit(**NUMPY_ERRORS)
def _saturated(r, state, cold):
    """Whether resource ``r`` has at most ``SAT_TOL`` of its capacity left."""
    return state[r, RESID] <= SAT_TOL * cold[r, CAP]


@njit(**NUMPY_ERRORS)
def _none_faster(f, r, rates, res_ptr, res_flow):
    """Whether no flow on resource ``r`` is faster than ``f`` (to
    ``TIE_TOL``). Finished flows have rate 0."""
    x = rates[f]
    top = x + x * TIE_TOL
    for k in range(res_ptr[r], res_ptr[r + 1]):
        if rates[res_flow[k]] > top:
            return False
    return True


@njit(**NUMPY_ERRORS)
def join_resolved(f, ev, in_s, old_rate, rates):
    """Mark ``f`` re-solved in event ``ev``, keeping its rate before it;
    False when it already is."""
    if in_s[f] == ev:
        return False
    in_s[f] = ev
    old_rate[f] = rates[f]
    return True


@njit(**NUMPY_ERRORS)
def _find_bottleneck(f, hint, flow_ptr, res, rates, state, cold, res_ptr, res_flow):
    """A bottleneck resource of ``f`` (``hint`` first), or ``UNKNOWN``."""
    if (hint >= 0 and _saturated(hint, state, cold)
            and _none_faster(f, hint, rates, res_ptr, res_flow)):
        return hint
    for e in range(flow_ptr[f], flow_ptr[f + 1]):
        r = res[e]
        if r != hint and _saturated(r, state, cold) and _none_faster(f, r, rates, res_ptr,
                                                                     res_flow):
            return r
    return UNKNOWN


@njit(**NUMPY_ERRORS)
def apply_loads(flows, n, flow_ptr, res, frac, rates, applied, state):
    """Count each flow of ``flows[:n]`` in ``RESID`` at its rate (the flows a
    last pass froze without updating the entries)."""
    for i in range(n):
        f = flows[i]
        d = rates[f] - applied[f]
        if d != 0.0:
            for e in range(flow_ptr[f], flow_ptr[f + 1]):
                state[res[e], RESID] -= frac[e] * d
            applied[f] = rates[f]


@njit(**NUMPY_ERRORS)
def check_bottlenecks(act, n_act, ev, in_s, stamp, bneck, flow_ptr, res, rates, state, cold,
                       res_ptr, res_flow, viol):
    """Check every active flow whose bottleneck may have changed in event
    ``ev``: the flows re-solved in it (``in_s == ev``), the flows whose
    recorded bottleneck is a resource it changed (``stamp == ev``) and those
    with none recorded. Records the bottleneck found; lists the flows with
    none in ``viol`` and returns their number. When none is listed every
    active flow has a bottleneck, and the rates are max-min fair (a feasible
    allocation in which every flow crosses a saturated resource where no
    flow is faster is the max-min fair one)."""
    n_viol = 0
    for i in range(n_act):
        f = act[i]
        b = bneck[f]
        if in_s[f] != ev and b >= 0 and stamp[b] != ev:
            continue
        b = _find_bottleneck(f, b, flow_ptr, res, rates, state, cold, res_ptr, res_flow)
        bneck[f] = b
        if b < 0:
            viol[n_viol] = f
            n_viol += 1
    return n_viol


@njit(**NUMPY_ERRORS)
def add_dependents(sub, n_sub, q, ev, keep_below, in_s, seen, bneck, old_rate, rates, flow_ptr,
                    res, res_ptr, res_flow, state, cold):
    """Close ``sub[:n_sub]`` (from position ``q`` on) under "its rate may
    change": the rates of its flows change, and with them the resources they
    cross, so add the flows (at or above ``keep_below``) whose recorded
    bottleneck is one of those, and so on. ``seen == ev`` marks the resources
    done. Only saturated resources are scanned: a recorded bottleneck is
    saturated (the bottleneck check after every change sees to it). Returns
    the new size."""
    while q < n_sub:
        f = sub[q]
        q += 1
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            r = res[e]
            if seen[r] != ev and _saturated(r, state, cold):
                seen[r] = ev
                for k in range(res_ptr[r], res_ptr[r + 1]):
                    g = res_flow[k]
                    if (bneck[g] == r and rates[g] >= keep_below
                            and join_resolved(g, ev, in_s, old_rate, rates)):
                        sub[n_sub] = g
                        n_sub += 1
    return n_sub


@njit(**NUMPY_ERRORS)
def add_violators(sub, n_sub, viol, n_viol, ev, in_s, old_rate, rates, flow_ptr, res, res_ptr,
                   res_flow, state, cold):
    """Grow ``sub[:n_sub]`` by the flows ``viol[:n_viol]`` that have no
    bottleneck and by the faster flows on their saturated resources (which
    must yield for them to rise). Marks them re-solved in event ``ev``
    (``in_s``), keeping their rate before it in ``old_rate``. Returns the
    number added (written from ``sub[n_sub]`` on)."""
    n_new = 0
    for j in range(n_viol):
        h = viol[j]
        if join_resolved(h, ev, in_s, old_rate, rates):
            sub[n_sub + n_new] = h
            n_new += 1
        top = rates[h] + rates[h] * TIE_TOL
        for e in range(flow_ptr[h], flow_ptr[h + 1]):
            r = res[e]
            if _saturated(r, state, cold):
                for k in range(res_ptr[r], res_ptr[r + 1]):
                    g = res_flow[k]
                    if rates[g] > top and join_resolved(g, ev, in_s, old_rate, rates):
                        sub[n_sub + n_new] = g
                        n_new += 1
    return n_new


@njit(**NUMPY_ERRORS)
def fall_back(act, n_act, ev, keep_below, in_s, old_rate, rates, stamp, bneck, flow_ptr, res,
               sub):
    """The re-solve set that is exact without a check, written to ``sub``:
    every active flow that was at or above ``keep_below`` before event ``ev``
    and every flow re-solved in it. Their resources count as changed, and
    the bottlenecks recorded on them are dropped (looked up again at the next
    event). Returns its size."""
    n_sub = 0
    for i in range(n_act):
        f = act[i]
        was = old_rate[f] if in_s[f] == ev else rates[f]
        if in_s[f] == ev or was >= keep_below:
            join_resolved(f, ev, in_s, old_rate, rates)
            sub[n_sub] = f
            n_sub += 1
    for i in range(n_sub):
        f = sub[i]
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            stamp[res[e]] = ev
    for i in range(n_act):
        f = act[i]
        if bneck[f] >= 0 and stamp[bneck[f]] == ev:
            bneck[f] = UNKNOWN
    return n_sub
