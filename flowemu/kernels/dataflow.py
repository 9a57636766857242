"""Dataflow completion: flows that start when the stages they depend on end
(numba kernel). The max-min model is :mod:`flowemu.kernels.maxmin`'s; here
flows enter the solve when they start and leave it when they finish.

Stages
------
A *stage* is one rank's part of one step of a schedule (or, for a job run
at a barrier, the whole step). Stage ``s`` starts at ``stage_release[s]``
if it is a first stage (``>= 0``: a job's start time), else at the end of
its previous stage (``stage_next`` links a stage to the next one). At its
start the flows it sends (``stage_ptr``/``stage_flows``) enter the solve.
It ends ``stage_delay[s]`` seconds (the rank's reduction work) after the
last of these has happened: its own start, and the *delivery* of every flow
it sends or receives. Flow ``f`` is delivered ``flow_lat[f]`` seconds (its
latency: α, hops, links) after its fluid transfer ends, and counts for its
sender's stage ``flow_src_stage[f]`` and its receiver's
``flow_dst_stage[f]``. ``stage_pending[s]`` is the number of those events
(1 + flows sent + flows received).

A flow's fluid transfer is max-min fair against every flow in the solve at
the time, with incast at receivers counting the flows in the solve, as in
:mod:`flowemu.kernels.maxmin`. A flow with an empty path ends its transfer
when it starts. Persistent flows (background) are in the solve from 0 and
never finish; the run ends when every stage has ended.

Events
------
Time advances to the earliest of the next fluid finish and the next timer
(a delivery or a stage end). At that time ``T`` the flows whose finish is
within a relative ``TIE_TOL`` of ``T`` finish at ``T`` together; then every
timer due at ``T`` or before is handled (those it sets at ``T`` too, so
zero latencies and delays chain within one time); then the flows that
started at ``T`` and the capacity the finished ones left are filled by the
incremental solver's fill (:mod:`flowemu.kernels.refill`: a starting flow is
a released flow rising from rate 0, so only what it and the finished flows
reach is solved again).
"""

from __future__ import annotations

import numpy as np

from .events import bytes_left, ingress_capacity
from .fill import (
    STATUS_ITER_LIMIT,
    STATUS_NONFINITE,
    STATUS_OK,
    STATUS_STALLED,
    transpose,
)
from .heaps import heap_pop, heap_set
from .jit import njit
from .layout import NUMPY_ERRORS, TIE_TOL
from .refill import (
    BNECK,
    CAP,
    DONE,
    HELD_HEAD,
    LOAD_HI,
    PHASE,
    RISE_GEN,
    RISE_HEAD,
    add_dd,
    admit,
    over_buffers,
    refill,
    release,
    rescreen_if_stale,
    start_screening,
    unhold,
)


@njit(refcounts=False, **NUMPY_ERRORS)
def _link(g, flow_ptr, res, act_head, act_next, act_prev):
    """Put flow ``g``'s entries on their resources' lists of flows in the solve."""
    for e in range(flow_ptr[g], flow_ptr[g + 1]):
        r = res[e]
        head = act_head[r]
        act_prev[e] = -1
        act_next[e] = head
        if head >= 0:
            act_prev[head] = e
        act_head[r] = e


@njit(refcounts=False, **NUMPY_ERRORS)
def _unlink(g, flow_ptr, res, act_head, act_next, act_prev):
    """Take flow ``g``'s entries off those lists."""
    for e in range(flow_ptr[g], flow_ptr[g + 1]):
        p = act_prev[e]
        n = act_next[e]
        if p >= 0:
            act_next[p] = n
        else:
            act_head[res[e]] = n
        if n >= 0:
            act_prev[n] = p


@njit(refcounts=False, **NUMPY_ERRORS)
def _unscreen(g, flow_ptr, res, frac, row_end, pool_res, pool_frac, res_ptr, res_flow, res_frac,
              rs, ri, fl, rate, rise_next, rise_mark, cand, room, lazy):
    """Flow ``g`` is about to enter the solve while the solver screens: it
    rises from rate 0, where no drift bound holds, so every resource it
    crosses joins the solve (:func:`flowemu.kernels.refill.admit`: no
    flow it may cross waits to be expanded; the flows entering before it
    at this time crossed only resources in the solve) and its pool is its
    whole route."""
    for e in range(flow_ptr[g], flow_ptr[g + 1]):
        r = res[e]
        if not cand[r]:
            admit(r, row_end, pool_res, pool_frac, res_ptr, res_flow, res_frac, rs, ri, fl,
                  rate, rise_next, rise_mark, cand, room)
    for e in range(flow_ptr[g], flow_ptr[g + 1]):
        pool_res[e] = res[e]
        pool_frac[e] = frac[e]
        rise_mark[e] = 0   # (on no list: generations start at 1)
    row_end[g] = flow_ptr[g + 1]
    lazy[g] = 0.0


@njit(refcounts=False, **NUMPY_ERRORS)
def _enter(g, ev, flow_ptr, res, n_plain, incast, capacity, w_t, eps, fan_in, rs, ri, fl, rate,
           old_rate, changed, n_changed, stack, n_stack, seeded, seeds, n_seeds, act_head,
           act_next, act_prev):
    """Flow ``g`` (with a path) enters the solve at rate 0, rising: it joins
    its resources' lists and receivers' fan-in, and its resources seed the
    next fill. Returns ``(n_changed, n_stack, n_seeds)``."""
    n_changed, n_stack = release(g, ev, fl, ri, rate, old_rate, changed, n_changed, stack,
                                 n_stack)
    _link(g, flow_ptr, res, act_head, act_next, act_prev)
    for e in range(flow_ptr[g], flow_ptr[g + 1]):
        r = res[e]
        if incast and r >= n_plain:
            fan_in[r] += 1
            rs[r, CAP] = ingress_capacity(capacity[r], fan_in[r], w_t[r - n_plain],
                                          eps[r - n_plain])
        if seeded[r] != ev:
            seeded[r] = ev
            seeds[n_seeds] = r
            n_seeds += 1
    return n_changed, n_stack, n_seeds


@njit(**NUMPY_ERRORS)
def _start_stage(s, t, n_flows, stage_ptr, stage_flows, stage_pending, stage_delay,
                 stage_start, start, flow_ptr, res, n_plain, incast, capacity, w_t, eps, fan_in,
                 rs, ri, fl, rate, old_rate, changed, n_changed, stack, n_stack, ev, seeded, seeds, n_seeds,
                 finish, flow_lat, tk, ti, tpos, tsize, act_head, act_next, act_prev, screening,
                 frac, row_end, pool_res, pool_frac, res_ptr, res_flow, res_frac, rise_next,
                 rise_mark, cand, room, lazy):
    """Stage ``s`` starts at ``t``: its flows enter the solve (rising from
    rate 0, each bringing its resources back into the solve first while
    ``screening``: :func:`_unscreen`; an empty path is delivered after its
    latency), and its start counts as one of its pending events. Returns
    ``(n_changed, n_stack, n_seeds, tsize)``."""
    stage_start[s] = t
    for i in range(stage_ptr[s], stage_ptr[s + 1]):
        g = stage_flows[i]
        if flow_ptr[g + 1] == flow_ptr[g]:
            start[g] = t
            finish[g] = t
            tsize = heap_set(tk, ti, tpos, tsize, g, t + flow_lat[g])
            continue
        if screening:
            _unscreen(g, flow_ptr, res, frac, row_end, pool_res, pool_frac, res_ptr, res_flow,
                      res_frac, rs, ri, fl, rate, rise_next, rise_mark, cand, room, lazy)
        n_changed, n_stack, n_seeds = _enter(
            g, ev, flow_ptr, res, n_plain, incast, capacity, w_t, eps, fan_in, rs, ri, fl, rate,
            old_rate, changed, n_changed, stack, n_stack, seeded, seeds, n_seeds, act_head,
            act_next, act_prev)
    stage_pending[s] -= 1
    if stage_pending[s] == 0:
        tsize = heap_set(tk, ti, tpos, tsize, n_flows + s, t + stage_delay[s])
    return n_changed, n_stack, n_seeds, tsize


@njit(refcounts=False, **NUMPY_ERRORS)
def _count_down(s, t, n_flows, stage_pending, stage_delay, tk, ti, tpos, tsize):
    """One pending event of stage ``s`` happened at ``t``: at the last, its
    end is due after its delay. Returns the timer heap's size."""
    stage_pending[s] -= 1
    if stage_pending[s] == 0:
        tsize = heap_set(tk, ti, tpos, tsize, n_flows + s, t + stage_delay[s])
    return tsize


@njit(**NUMPY_ERRORS)
def dataflow_kernel(flow_ptr, res, frac, capacity, n_plain, w_t, eps, flow_bytes, persistent,
                    flow_lat, flow_src_stage, flow_dst_stage, stage_ptr, stage_flows,
                    stage_pending, stage_delay, stage_next, stage_release, screen=False,
                    rescreen_walk=-1.0, rescreen_stale=0.5, counter=None):
    """Dataflow completion (see the module notes). Inputs as
    :func:`flowemu.kernels.incremental.incremental_completion_kernel`'s
    (checked by the caller), plus per flow its latency and its sender's and
    receiver's stages (-1: none, e.g. a persistent flow), and per stage the
    CSR of the flows it starts, its pending-event count (1 + flows sent +
    flows received; consumed), its delay, the next stage (-1: none) and its
    release: the time a first stage starts (``< 0``: not a first stage).
    With ``screen``, from the first fill on the fill leaves aside the
    resources far from capacity, as the incremental solver's screening
    does (each flow counted there at a lazy rate; a flow that enters the
    solve brings every resource it crosses back into it), and screens
    again as :func:`flowemu.kernels.incremental.incremental_events` does
    (``rescreen_walk``, ``rescreen_stale``). The flows whose transfer
    ends are added to ``counter`` (int64[1], optional) as they end, for a
    progress display.

    Returns ``(start, finish, end, moved, status)``: per flow the time it
    entered the solve and the time its fluid transfer ended (``+inf`` for
    persistent flows and flows that never started), per stage its end
    (``+inf``: never), and the bytes each persistent flow moved until the
    last stage ended. Timer items: ``g`` the delivery of flow ``g``,
    ``n_flows + s`` the end of stage ``s``, ``n_flows + n_stages + s`` the
    release of first stage ``s``."""
    n_flows = flow_ptr.shape[0] - 1
    n_res = capacity.shape[0]
    n_stages = stage_delay.shape[0]
    start = np.full(n_flows, np.inf)
    finish = np.full(n_flows, np.inf)
    moved = np.zeros(n_flows, dtype=np.float64)
    stage_start = np.full(n_stages, np.inf)
    end = np.full(n_stages, np.inf)
    incast = False
    for i in range(n_res - n_plain):
        incast |= eps[i] > 0.0 and np.isfinite(w_t[i])
    fan_in = np.zeros(n_res, dtype=np.int64)
    res_ptr, res_flow, res_frac = transpose(flow_ptr, res, frac, n_res)
    row_end = flow_ptr[1:].copy()
    pool_res = res.copy() if screen else res   # (each flow's entries the fill walks)
    pool_frac = frac.copy() if screen else frac
    screening = False
    walked = 0   # pool entries the fills walked since the pools were last looked at
    cand = np.ones(n_res, dtype=np.uint8)
    lazy = np.zeros(n_flows, dtype=np.float64)
    room = np.full(n_res, np.inf)
    joined = np.empty(n_res, dtype=np.int32)
    over_h, over_x = over_buffers(res_ptr)   # (refill's list of a resource's fast flows)
    entry_flow = np.empty(res.shape[0], dtype=np.int32)
    for f in range(n_flows):
        entry_flow[flow_ptr[f]:flow_ptr[f + 1]] = f
    rise_next = np.empty(res.shape[0], dtype=np.int32)
    rise_mark = np.zeros(res.shape[0], dtype=np.int32)
    rs = np.zeros((n_res, 8), dtype=np.float64)
    rs[:, CAP] = capacity
    ri = np.zeros((n_res, 8), dtype=np.int64)
    ri[:, HELD_HEAD] = -1
    ri[:, RISE_HEAD] = -1
    ri[:, RISE_GEN] = 1
    fl = np.zeros((n_flows, 8), dtype=np.int64)
    fl[:, BNECK] = -1
    fl[:, PHASE] = DONE   # (not started: outside the solve)
    rate = np.zeros(n_flows, dtype=np.float64)
    old_rate = np.zeros(n_flows, dtype=np.float64)
    changed = np.empty(n_flows, dtype=np.int32)
    stack = np.empty(n_flows, dtype=np.int32)
    remaining = flow_bytes.copy()
    since = np.zeros(n_flows, dtype=np.float64)
    seeded = np.zeros(n_res, dtype=np.int64)
    seeds = np.empty(n_res, dtype=np.int32)
    hk = np.empty(n_res + n_flows, dtype=np.float64)
    hi = np.empty(n_res + n_flows, dtype=np.int32)
    pos = np.full(n_res + n_flows, -1, dtype=np.int32)
    fk = np.empty(n_flows, dtype=np.float64)
    fi = np.empty(n_flows, dtype=np.int32)
    fpos = np.full(n_flows, -1, dtype=np.int32)
    fsize = 0
    tk = np.empty(n_flows + 2 * n_stages, dtype=np.float64)
    ti = np.empty(n_flows + 2 * n_stages, dtype=np.int32)
    tpos = np.full(n_flows + 2 * n_stages, -1, dtype=np.int32)
    tsize = 0
    done = np.empty(n_flows, dtype=np.int32)
    # per resource, a list of the entries of the flows in the solve (refill scans it)
    act_head = np.full(n_res, -1, dtype=np.int64)
    act_next = np.full(res.shape[0], -1, dtype=np.int64)
    act_prev = np.full(res.shape[0], -1, dtype=np.int64)
    n_changed = 0
    n_stack = 0
    n_seeds = 0
    n_ended = 0

    ev = 1
    t = 0.0
    for f in range(n_flows):
        if persistent[f]:
            start[f] = 0.0
            n_changed, n_stack, n_seeds = _enter(
                f, ev, flow_ptr, res, n_plain, incast, capacity, w_t, eps, fan_in, rs, ri, fl,
                rate, old_rate, changed, n_changed, stack, n_stack, seeded, seeds, n_seeds,
                act_head, act_next, act_prev)
    for s in range(n_stages):
        if stage_release[s] > 0.0:
            tsize = heap_set(tk, ti, tpos, tsize, n_flows + n_stages + s, stage_release[s])
        elif stage_release[s] == 0.0:
            n_changed, n_stack, n_seeds, tsize = _start_stage(
                s, 0.0, n_flows, stage_ptr, stage_flows, stage_pending, stage_delay,
                stage_start, start, flow_ptr, res, n_plain, incast, capacity, w_t, eps, fan_in, rs,
                ri, fl, rate, old_rate, changed, n_changed, stack, n_stack, ev, seeded, seeds,
                n_seeds, finish, flow_lat, tk, ti, tpos, tsize, act_head, act_next, act_prev,
                screening, frac, row_end, pool_res, pool_frac, res_ptr, res_flow, res_frac,
                rise_next, rise_mark, cand, room, lazy)
    while True:
        # --- the timers due now (they may set more at this time)
        while tsize > 0 and tk[0] <= t:
            _, item, tsize = heap_pop(tk, ti, tpos, tsize)
            if item < n_flows:
                g = item
                if flow_src_stage[g] >= 0:
                    tsize = _count_down(flow_src_stage[g], t, n_flows, stage_pending,
                                        stage_delay, tk, ti, tpos, tsize)
                if flow_dst_stage[g] >= 0:
                    tsize = _count_down(flow_dst_stage[g], t, n_flows, stage_pending,
                                        stage_delay, tk, ti, tpos, tsize)
                continue
            if item >= n_flows + n_stages:
                s2 = item - n_flows - n_stages   # a first stage's release
            else:
                s = item - n_flows
                end[s] = t
                n_ended += 1
                s2 = stage_next[s]
            if s2 >= 0:
                n_changed, n_stack, n_seeds, tsize = _start_stage(
                    s2, t, n_flows, stage_ptr, stage_flows, stage_pending, stage_delay,
                    stage_start, start, flow_ptr, res, n_plain, incast, capacity, w_t, eps, fan_in,
                    rs, ri, fl, rate, old_rate, changed, n_changed, stack, n_stack, ev, seeded,
                    seeds, n_seeds, finish, flow_lat, tk, ti, tpos, tsize, act_head, act_next,
                    act_prev, screening, frac, row_end, pool_res, pool_frac, res_ptr, res_flow,
                    res_frac, rise_next, rise_mark, cand, room, lazy)
        # --- fill what the flows that started and finished changed
        if n_stack > 0 or n_seeds > 0:
            n_changed = refill(ev, n_stack, n_changed, flow_ptr, res, frac, row_end, pool_res,
                               pool_frac, entry_flow, res_ptr, res_flow, res_frac, rs, ri, fl,
                               rate, old_rate, changed, stack, rise_next, rise_mark, seeds,
                               n_seeds, hk, hi, pos, screening, cand, lazy, room, joined, act_head,
                               act_next, over_h, over_x)
            n_stack = 0
            n_seeds = 0
        for i in range(n_changed):
            g = changed[i]
            walked += row_end[g] - flow_ptr[g]
            x = rate[g]
            if not np.isfinite(x):
                return start, finish, end, moved, STATUS_NONFINITE
            was = old_rate[g]
            if start[g] == np.inf:
                start[g] = t   # (entered the solve now)
                since[g] = t
            elif x == was:
                continue
            rem = bytes_left(g, was, t, persistent, remaining, since, moved)
            if persistent[g]:
                continue
            if rem <= 0.0:
                tf = t
            elif x <= 0.0:
                fsize = heap_set(fk, fi, fpos, fsize, g, np.inf)
                continue   # (stalled unless another flow's finish frees it)
            else:
                tf = t + rem / x
                if not np.isfinite(tf):
                    return start, finish, end, moved, STATUS_STALLED
            fsize = heap_set(fk, fi, fpos, fsize, g, tf)
        n_changed = 0
        # (between two fills: every flow in the solve settled, every load exact)
        if screen and not screening:
            start_screening(flow_ptr, res, frac, row_end, pool_res, pool_frac, rs, fl, rate,
                            rise_mark, n_plain, cand, lazy, room)
            screening = True
        elif screening:
            walked = rescreen_if_stale(walked, rescreen_walk, rescreen_stale, flow_ptr, row_end,
                                       pool_res, pool_frac, res_ptr, res_flow, res_frac, rs, fl,
                                       rate, rise_mark, n_plain, cand, lazy, room)
        if n_ended == n_stages:
            break
        # --- the next time: the earliest finish or timer
        t_flow = fk[0] if fsize > 0 else np.inf
        t_timer = tk[0] if tsize > 0 else np.inf
        t_next = min(t_flow, t_timer)
        if t_next == np.inf:
            return start, finish, end, moved, STATUS_STALLED
        ev += 1
        if ev > 2 * (n_flows + n_stages) + 2:
            return start, finish, end, moved, STATUS_ITER_LIMIT
        t = t_next
        n_done = 0
        while fsize > 0 and fk[0] <= t + t * TIE_TOL:
            _, g, fsize = heap_pop(fk, fi, fpos, fsize)
            done[n_done] = g
            n_done += 1
        if counter is not None:   # (flows finished, for a progress display)
            counter[0] += n_done
        for i in range(n_done):
            g = done[i]
            fl[g, PHASE] = DONE
            unhold(g, fl, ri)
            _unlink(g, flow_ptr, res, act_head, act_next, act_prev)
            finish[g] = t
            remaining[g] = 0.0
            x = rate[g]
            for e in range(flow_ptr[g], flow_ptr[g + 1]):
                r = res[e]
                if not cand[r]:
                    room[r] += frac[e] * lazy[g]   # (screened: its lazy load leaves)
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
            rate[g] = 0.0
            tsize = heap_set(tk, ti, tpos, tsize, g, t + flow_lat[g])
    for f in range(n_flows):
        if persistent[f]:
            moved[f] += rate[f] * (t - since[f])
    return start, finish, end, moved, STATUS_OK
