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
  settled flows on it above its *water level* (the level at which it
  saturates once those rise with its rising flows; they were held
  elsewhere, higher, and now cannot get that much) and the flows it holds
  above ``lam``, then freezes its rising flows where it saturates; a
  settled flow at or below the water level keeps its rate, as it would
  freeze again at it (:func:`flowemu.kernels.refill.water_level`);
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
the flow is counted again on its screened resources one drift step above that
level (its rate is at least that level now; counted ahead, a rate that keeps
rising, as a background flow's does while a step's last flows finish, is
counted again half as often), and a resource that may then fill up is
*admitted*: its exact load and rising weight are summed from its flows, each
of which gets the entry in its pool. At that level every flow on it is within
the bound, so it is still below capacity and its own level lies ahead: the
heap order stays the fill's level order. A flow that settles far below its lazy
rate (more than two drift steps) is counted lower (freeing room); a finished
flow's lazy load leaves.

Numbers
-------
A resource's load (of its settled flows) and the weight of its rising flows
are kept as unevaluated double-double sums (error-free two-sum updates): a
flow's load is added and taken out with the same product, so the sums cancel
exactly, and ECMP fractions from 0.5 down to 1e-30 keep their digits. The
products themselves are rounded, so a load is known to a few units in the
last place of the capacity; a resource whose rising weight is tiny (a flow
with a fraction of 1e-17 on it) would make that a level far from the one
of the flows it holds, so a resource with no room beyond rounding at
the level of the flows it holds (or of its fastest settled flow) freezes
its rising flows there (``refill.SNAP``). Each
flow's remaining bytes are brought up to date only when its rate changes, and
its finish time (``t + remaining / rate``) is its key in a second indexed
heap. Nothing is allocated per event.

The fill itself (state, holders, releases, screening) is in :mod:`.refill`,
the indexed heap in :mod:`.heaps`.
"""


from __future__ import annotations

import numpy as np

from .events import bytes_left, ingress_capacity, start_completion
from .fill import (
    STATUS_ITER_LIMIT,
    STATUS_NONFINITE,
    STATUS_OK,
    STATUS_STALLED,
    maxmin_rates_kernel,
    transpose,
)
from .heaps import heap_pop, heap_set
from .jit import njit
from .layout import NUMPY_ERRORS, TIE_TOL
from .refill import (
    BNECK,
    CAP,
    DONE,
    HELD_AT,
    HELD_HEAD,
    LOAD_HI,
    LOAD_LO,
    PHASE,
    RISE_GEN,
    RISE_HEAD,
    TOP,
    add_dd,
    count_load,
    hold,
    over_buffers,
    refill,
    release,
    rescreen_if_stale,
    start_screening,
    unhold,
)

#: (not an error) the step goes on in the screened re-solves: ``state``
STATUS_BULK = -3

#: a resource within this (relative) of capacity, and a flow within it of
#: the fastest on a resource, count as saturated / fastest when the t = 0
#: rates are given their holders (a false one is checked at its level)
SAT_TOL = 1e-9


@njit(**NUMPY_ERRORS)
def _t0_capacities(flow_ptr, res, capacity, n_plain, w_t, eps, persistent):
    """``(capacity at t = 0 with every receiver's fan-in, fan_in, active,
    unfinished non-persistent flows, incast)`` (active: flows with a path)."""
    n_flows = flow_ptr.shape[0] - 1
    n_res = capacity.shape[0]
    incast = False
    for i in range(n_res - n_plain):
        incast |= eps[i] > 0.0 and np.isfinite(w_t[i])
    cap0 = capacity.astype(np.float64).copy()
    fan_in = np.zeros(n_res, dtype=np.int64)
    active = np.zeros(n_flows, dtype=np.bool_)
    n_finite = 0
    for f in range(n_flows):
        if flow_ptr[f + 1] == flow_ptr[f]:
            continue
        active[f] = True
        if not persistent[f]:
            n_finite += 1
        if incast:
            for e in range(flow_ptr[f], flow_ptr[f + 1]):
                if res[e] >= n_plain:
                    fan_in[res[e]] += 1
    if incast:
        for r in range(n_plain, n_res):
            if fan_in[r] > 0:
                cap0[r] = ingress_capacity(capacity[r], fan_in[r], w_t[r - n_plain],
                                           eps[r - n_plain])
    return cap0, fan_in, active, n_finite, incast


@njit(**NUMPY_ERRORS)
def moved_enough(events, moved, after, per_event):
    """Whether ``events`` events that moved ``moved`` rates call for a
    change of method: from event ``after`` on (``-1``: never), once they
    moved more than ``per_event`` rates each on average. The event loop
    asks it twice. Screening (``per_event`` 16): where a finish moves many
    rates (flows coupled through shared, saturated groups of links: a
    tapered fat tree's pods, a tree's switches) most of a moved flow's
    entries lie on links far from capacity, which screening stops walking;
    where it moves few, screening's drift events would cost more. The bulk
    re-solves (a tenth of the flows that finish): where a finish moves a
    good share of all rates, re-solving them together costs less than
    following each change."""
    return 0 <= after <= events and moved > per_event * events


@njit(**NUMPY_ERRORS)
def incremental_completion_kernel(flow_ptr, res, frac, capacity, n_plain, w_t, eps, flow_bytes,
                                  persistent, screen=False, switch_after=-1, switch_changes=0.0,
                                  rescreen_walk=-1.0, rescreen_stale=0.5, counter=None):
    """Event-driven max-min completion of flows that all start at ``t = 0``,
    each event filling again only what its finished flows reach; with
    ``screen``, after the ``t = 0`` fill only over the resources that are,
    or may come, near capacity.

    Arrays in and out as
    :func:`flowemu.kernels.completion.screened_completion_kernel` (whose
    results it equals to rounding): the CSR ``flow_ptr``, ``res``,
    ``frac``; ``capacity`` per resource (``>= n_plain``: ingress resources
    with incast terms ``w_t``, ``eps``); ``flow_bytes``; ``persistent``
    flows that never finish. Without ``screen``, screening starts after
    event ``switch_after`` (``-1``: never) if the events so far changed
    more than ``switch_changes`` rates each on average. While screening,
    it screens again between two events where the pools have gone stale
    (``rescreen_walk``, ``rescreen_stale``: :func:`incremental_events`).
    The flows finished are added to ``counter`` (int64[1], optional) as
    they finish, for a progress display.
    Returns ``(rate0, finish, moved, status)``.
    """
    n_flows = flow_ptr.shape[0] - 1
    rate0, finish, moved, status, _ = start_completion(
        flow_ptr, res, frac, capacity, n_plain, w_t, eps, flow_bytes, persistent)
    if status != STATUS_OK:
        return rate0, finish, moved, status

    # t = 0: the static fill over every flow (fast where a step's flows share
    # few levels); a step whose flows all finish at once ends here
    cap0, _, active, n_finite, _ = _t0_capacities(flow_ptr, res, capacity, n_plain, w_t, eps,
                                                  persistent)
    for f in range(n_flows):
        if not active[f]:
            rate0[f] = np.inf
            finish[f] = 0.0
    rate, status = maxmin_rates_kernel(flow_ptr, res, frac, cap0, active)
    if status != STATUS_OK and status != STATUS_STALLED:
        return rate0, finish, moved, status
    t_first = np.inf
    t_last = 0.0
    for f in range(n_flows):
        if not active[f]:
            continue
        x = rate[f]
        rate0[f] = x
        if not np.isfinite(x):
            return rate0, finish, moved, STATUS_NONFINITE
        if persistent[f]:
            continue
        if flow_bytes[f] <= 0.0:
            tf = 0.0
        elif x <= 0.0:
            return rate0, finish, moved, STATUS_STALLED
        else:
            tf = flow_bytes[f] / x
            if not np.isfinite(tf):
                return rate0, finish, moved, STATUS_STALLED
        t_first = min(t_first, tf)
        t_last = max(t_last, tf)
    if n_finite == 0:
        return rate0, finish, moved, STATUS_OK   # (only persistent flows: the run is over)
    if t_last <= t_first + t_first * TIE_TOL:
        for f in range(n_flows):
            if active[f]:
                if persistent[f]:
                    moved[f] = rate[f] * t_first
                else:
                    finish[f] = t_first
        return rate0, finish, moved, STATUS_OK
    return incremental_events(flow_ptr, res, frac, capacity, n_plain, w_t, eps, flow_bytes,
                              persistent, screen, rate, rate0, finish, moved, switch_after,
                              switch_changes, -1, 0.0, None, rescreen_walk, rescreen_stale,
                              counter)


@njit(**NUMPY_ERRORS)
def incremental_events(flow_ptr, res, frac, capacity, n_plain, w_t, eps, flow_bytes, persistent,
                       screen, rate, rate0, finish, moved, switch_after=-1, switch_changes=0.0,
                       bulk_after=-1, bulk_share=0.0, state=None, rescreen_walk=-1.0,
                       rescreen_stale=0.5, counter=None):
    """The event loop of :func:`incremental_completion_kernel` from the
    max-min rates at ``t = 0`` (``rate``, with ``rate0``, ``finish`` and
    ``moved`` as far as they are known; inputs checked): each flow is held
    by a saturated resource on which no flow is faster (the resource that
    would have frozen it). Screening starts at ``t = 0`` with ``screen``,
    else after event ``switch_after`` when the events so far changed more
    than ``switch_changes`` rates each on average (between two events every
    flow is settled and every load exact, as after the ``t = 0`` fill).

    With ``state`` (float64[F + 1]), from event ``bulk_after`` on, once
    the events so far moved the rates of more than ``bulk_share`` of the
    flows that finish, each on average, it stops between two events with
    ``STATUS_BULK`` for the screened re-solves to go on: ``state[F]`` is the
    time then, ``state[g]`` the bytes left of each unfinished flow (0 for a
    persistent one, whose ``moved`` counts up to then), -1 for a finished
    one (``finish`` set).

    While screening, once the fills have walked ``rescreen_walk`` times as
    many entries as there are entries and resources (``-1``: never) since
    the pools were last looked at, it screens again if more than
    ``rescreen_stale`` of the candidates' entries lie on resources now far
    from capacity: the pools were screened at loads that may have fallen
    since (a collective's flows finishing under a background load leave the
    links they saturated).
    ``counter``: as :func:`incremental_completion_kernel`'s.
    Returns ``(rate0, finish, moved, status)``."""
    n_flows = flow_ptr.shape[0] - 1
    n_res = capacity.shape[0]
    cap0, fan_in, active, n_finite, incast = _t0_capacities(flow_ptr, res, capacity, n_plain,
                                                            w_t, eps, persistent)
    res_ptr, res_flow, res_frac = transpose(flow_ptr, res, frac, n_res)
    # each flow's pool of entries the fill walks (screening: candidates only)
    row_end = flow_ptr[1:].copy()
    pool_res = res.copy() if screen else res
    pool_frac = frac.copy() if screen else frac
    screening = False
    cand = np.ones(n_res, dtype=np.uint8)
    lazy = np.zeros(n_flows, dtype=np.float64)
    room = np.full(n_res, np.inf)   # screened resources: lazy_room
    joined = np.empty(n_res, dtype=np.int32)
    over_h, over_x = over_buffers(res_ptr)   # (refill's list of a resource's fast flows)
    entry_flow = np.empty(res.shape[0], dtype=np.int32)
    for f in range(n_flows):
        entry_flow[flow_ptr[f]:flow_ptr[f + 1]] = f
    rise_next = np.empty(res.shape[0], dtype=np.int32)   # (fewer than 2**31 entries)
    rise_mark = np.zeros(res.shape[0], dtype=np.int32)
    rs = np.zeros((n_res, 8), dtype=np.float64)
    rs[:, CAP] = cap0
    ri = np.zeros((n_res, 8), dtype=np.int64)
    ri[:, HELD_HEAD] = -1
    ri[:, RISE_HEAD] = -1
    ri[:, RISE_GEN] = 1
    fl = np.zeros((n_flows, 8), dtype=np.int64)
    fl[:, BNECK] = -1
    old_rate = np.zeros(n_flows, dtype=np.float64)
    changed = np.empty(n_flows, dtype=np.int32)
    stack = np.empty(n_flows, dtype=np.int32)
    remaining = flow_bytes.copy()
    since = np.zeros(n_flows, dtype=np.float64)   # time remaining/moved was last brought up to date
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

    # the loads of the t = 0 rates, and who holds whom (a flow whose holder
    # the tolerances miss is filled again at the first event)
    n_changed = 0
    n_stack = 0
    for f in range(n_flows):
        if not active[f]:
            fl[f, PHASE] = DONE
            continue
        count_load(f, rate[f], flow_ptr, res, frac, rs, None)
    for f in range(n_flows):
        if not active[f]:
            continue
        x = rate[f]
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            r = res[e]
            if (rs[r, LOAD_HI] + rs[r, LOAD_LO] >= rs[r, CAP] * (1.0 - SAT_TOL)
                    and x >= rs[r, TOP] * (1.0 - SAT_TOL)):
                hold(f, r, fl, ri)
                rs[r, HELD_AT] = rs[r, TOP]
                break
        if fl[f, BNECK] < 0:
            n_changed, n_stack = release(f, 2, fl, ri, rate, old_rate, changed, n_changed,
                                          stack, n_stack)
        if not persistent[f]:
            tf = remaining[f] / x if remaining[f] > 0.0 else 0.0
            fsize = heap_set(fk, fi, fpos, fsize, f, tf)
    if screen:
        start_screening(flow_ptr, res, frac, row_end, pool_res, pool_frac, rs, fl, rate,
                         rise_mark, n_plain, cand, lazy, room)
        screening = True

    t = 0.0
    ev = 1
    n_moved = 0   # rate changes so far
    n_finite0 = n_finite   # flows that finish
    walked = 0   # pool entries the fills walked since the pools were last looked at
    while True:
        # --- next event: the earliest finish, with those tied to it
        t_next = np.inf
        n_done = 0
        while fsize > 0:
            key = fk[0]
            if n_done == 0:
                t_next = key
            elif key > t_next + t_next * TIE_TOL:
                break
            _, g, fsize = heap_pop(fk, fi, fpos, fsize)
            fl[g, PHASE] = DONE
            done[n_done] = g
            n_done += 1
        if n_done == 0:
            return rate0, finish, moved, STATUS_STALLED
        t = t_next
        n_finite -= n_done
        if counter is not None:   # (flows finished, for a progress display)
            counter[0] += n_done
        for i in range(n_done):
            g = done[i]
            unhold(g, fl, ri)
            finish[g] = t
            remaining[g] = 0.0
        if n_finite == 0:
            break
        # release the finished flows' load; their resources (and receivers'
        # ingress capacities) changed: they seed the next fill
        ev += 1
        if ev > n_flows + 2:
            return rate0, finish, moved, STATUS_ITER_LIMIT
        n_seeds = 0
        for i in range(n_done):
            g = done[i]
            x = rate[g]
            for e in range(flow_ptr[g], flow_ptr[g + 1]):
                r = res[e]
                if not cand[r]:
                    room[r] += frac[e] * lazy[g]
                    continue
                add_dd(rs, r, LOAD_HI, -frac[e] * x)
                if incast and r >= n_plain:
                    fan_in[r] -= 1
                    rs[r, CAP] = ingress_capacity(capacity[r], fan_in[r], w_t[r - n_plain],
                                                  eps[r - n_plain])
                if seeded[r] != ev:
                    seeded[r] = ev
                    seeds[n_seeds] = r
                    n_seeds += 1
        n_changed = refill(ev, n_stack, n_changed, flow_ptr, res, frac, row_end, pool_res,
                          pool_frac, entry_flow, res_ptr, res_flow, res_frac, rs, ri, fl, rate,
                          old_rate, changed, stack, rise_next, rise_mark, seeds, n_seeds, hk, hi,
                          pos, screening, cand, lazy, room, joined, None, None, over_h, over_x)
        n_stack = 0
        # the flows whose rate changed: bring their bytes up to date
        for i in range(n_changed):
            g = changed[i]
            walked += row_end[g] - flow_ptr[g]
            x = rate[g]
            if not np.isfinite(x):
                return rate0, finish, moved, STATUS_NONFINITE
            was = old_rate[g]
            if x == was:
                continue
            n_moved += 1
            rem = bytes_left(g, was, t, persistent, remaining, since, moved)
            if persistent[g]:
                continue
            if rem <= 0.0:
                tf = t
            elif x <= 0.0:
                return rate0, finish, moved, STATUS_STALLED
            else:
                tf = t + rem / x
                if not np.isfinite(tf):
                    return rate0, finish, moved, STATUS_STALLED
            fsize = heap_set(fk, fi, fpos, fsize, g, tf)
        n_changed = 0
        if state is not None and moved_enough(ev - 1, n_moved, bulk_after,
                                                bulk_share * n_finite0):
            # a finish moves a good share of all rates: re-solving the flows
            # in bulk costs less than following each change
            for g in range(n_flows):
                if fl[g, PHASE] == DONE:
                    state[g] = -1.0
                elif persistent[g]:
                    moved[g] += rate[g] * (t - since[g])
                    state[g] = 0.0
                else:
                    state[g] = max(0.0, remaining[g] - rate[g] * (t - since[g]))
            state[n_flows] = t
            return rate0, finish, moved, STATUS_BULK
        if screening:
            walked = rescreen_if_stale(walked, rescreen_walk, rescreen_stale, flow_ptr, row_end,
                                       pool_res, pool_frac, res_ptr, res_flow, res_frac, rs, fl,
                                       rate, rise_mark, n_plain, cand, lazy, room)
        if not screening and moved_enough(ev - 1, n_moved, switch_after, switch_changes):
            # many rates move an event: from now on count each flow lazily
            # on the resources far from capacity (its pool gets its own copy)
            pool_res = res.copy()
            pool_frac = frac.copy()
            start_screening(flow_ptr, res, frac, row_end, pool_res, pool_frac, rs, fl, rate,
                             rise_mark, n_plain, cand, lazy, room)
            screening = True
    for f in range(n_flows):
        if persistent[f] and fl[f, PHASE] != DONE:
            moved[f] += rate[f] * (t - since[f])
    return rate0, finish, moved, STATUS_OK

