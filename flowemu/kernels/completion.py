"""Event-driven completion with screened re-solves (the solver for flows
with many route entries, see :mod:`flowemu.kernels.maxmin`), per-receiver
incast resources, and the static rates of one solve, over the fill of
:mod:`flowemu.kernels.fill`. The model is described in
:mod:`flowemu.kernels.maxmin`."""

from __future__ import annotations

import numpy as np

from .events import bytes_left, ingress_capacity, start_completion
from .fill import (
    KEEP_TOL,
    PASS_LIMIT,
    STATUS_ITER_LIMIT,
    STATUS_NONFINITE,
    STATUS_OK,
    STATUS_STALLED,
    fill_solve,
    fill_workspace,
    no_transpose,
    padded_row,
    remap_resources,
    resource_state,
    with_transpose,
)
from .jit import njit
from .layout import CAP, NUMPY_ERRORS, RESID, TIE_TOL
from .screening import (
    RESCREEN_GROWTH,
    SCREEN_SHARE,
    admit,
    commit_drift,
    pending_drift,
    rescreen,
    roll_back,
    start_screening,
)

#: screened re-solves start at this event (a step whose flows finish in a
#: few events would not repay screening every resource and copying every
#: flow's candidate entries); before, every flow at or above the finished
#: rate is re-solved over all its entries
SCREEN_START = 16
#: with ``handoff``: a step whose flows' finish times at their t = 0 rates
#: fall in more groups than this goes to the incremental solver (in fewer, a
#: finish changes most rates, and the bulk re-solve is the cheaper)
BULK_EVENTS = 16
#: (not an error) the step goes on in the incremental solver: ``handoff``
STATUS_HANDOFF = -1


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
def few_finish_times(flow_ptr, flow_bytes, persistent, rate, most, sample=4096):
    """Whether the flows' finish times at their ``t = 0`` rates fall in at
    most ``most`` groups (ties to ``TIE_TOL``), judged on an even sample of
    at most ``sample`` flows (a choice of solver, not of results)."""
    n_flows = flow_bytes.shape[0]
    stride = max(1, (n_flows + sample - 1) // sample)
    times = np.empty(n_flows // stride + 1, dtype=np.float64)
    n = 0
    for f in range(0, n_flows, stride):
        if flow_ptr[f + 1] > flow_ptr[f] and not persistent[f]:
            times[n] = flow_bytes[f] / rate[f] if flow_bytes[f] > 0.0 else 0.0
            n += 1
    times = np.sort(times[:n])
    groups = 0
    start = -1.0
    for i in range(n):
        if groups == 0 or times[i] > start + start * TIE_TOL:
            groups += 1
            if groups > most:
                return False
            start = times[i]
    return True


@njit(**NUMPY_ERRORS)
def _one_size(act, n_act, flow_bytes, persistent):
    """Whether the flows ``act[:n_act]`` all have the same size and none is
    persistent."""
    for i in range(n_act):
        f = act[i]
        if persistent[f] or flow_bytes[f] != flow_bytes[act[0]]:
            return False
    return True


@njit(**NUMPY_ERRORS)
def finish_in_rate_order(act, n_act, times, finish):
    """The finish times of the flows ``act[:n_act]``, which all have the
    same size and never change rate, in the events' groups: each at its
    ``times[f]`` (``bytes / rate``, 0 for 0 bytes), the flows within
    ``TIE_TOL`` of an earlier one at that one's time (as the event loops end
    them together).

    Why no rate changes: a finish leaves every rate below the finished
    flow's as it was (each resource the flow crossed saturated at or above
    its rate; without it, with the same loads below that level, less weight
    and no less capacity -- a receiver's ingress capacity grows back -- it
    saturates no earlier, so the filling below that level is the same).
    With equal sizes the fastest flows finish first, those tied with them
    together, so a flow still running never sees a finish below its own
    rate: every flow keeps its ``t = 0`` rate to its end (a collective's
    step on an irregular network: failed or tapered links, incast)."""
    own = np.empty(n_act, dtype=np.float64)
    for i in range(n_act):
        own[i] = times[act[i]]
    order = np.argsort(own, kind="mergesort")
    start = 0.0
    for i in range(n_act):
        tf = own[order[i]]
        if i == 0 or tf > start + start * TIE_TOL:
            start = tf
        finish[act[order[i]]] = start


@njit(**NUMPY_ERRORS)
def screened_completion_kernel(flow_ptr, res, frac, capacity, n_plain, w_t, eps, flow_bytes,
                               persistent, screen_from=SCREEN_START, handoff=False,
                               equal_ends=False, counter=None):
    """Event-driven max-min completion of flows that all start at ``t = 0``,
    re-solving after each event every flow at or above the finished rate
    (over its candidate entries only from event ``screen_from`` on).

    Parameters
    ----------
    flow_ptr : int64[F+1]
    res : int32[E]
        Resource of each entry, in ``[0, R)``; at most once per flow.
    frac : float64[E]
        Fraction of the flow crossing the resource, in ``(0, 1]``.
    capacity : float64[R]
        Capacity (bytes/s) of each resource; for an ingress resource
        (index ``>= n_plain``) its base capacity ``1 / beta``.
    n_plain : int
        Resources ``>= n_plain`` are ingress resources whose capacity follows
        the incast model with their own terms (where ``eps > 0`` and ``w_t``
        is finite).
    w_t : float64[R - n_plain]
        Incast threshold (fan-in without penalty) of each ingress resource.
    eps : float64[R - n_plain]
        Incast slope of each ingress resource, seconds per byte per flow
        above its ``w_t``.
    flow_bytes : float64[F]
        Bytes of each flow, finite and ``>= 0``.
    persistent : bool[F]
        Flows that never finish (steady background traffic): they take part
        in every solve, their bytes are ignored, and the run ends when every
        other flow has finished (after the ``t = 0`` solve when there is
        none). A persistent flow with rate 0 does not stall the run.

    handoff : bool
        After the ``t = 0`` solve, stop with ``STATUS_HANDOFF`` (and
        ``rate0``) when the flows' finish times fall in more than
        ``BULK_EVENTS`` groups, for the incremental solver to go on
        (:func:`flowemu.kernels.incremental.incremental_events`): there each
        finish changes few rates.
    equal_ends : bool
        Where the flows all have the same size and none is persistent, end
        the step at the ``t = 0`` solve (:func:`finish_in_rate_order`).
    counter : int64[1], optional
        The flows finished by events are added to it as they finish, for a
        progress display.

    Returns
    -------
    rate0 : float64[F]
        Rate of each flow at ``t = 0`` (``+inf`` for an empty path).
    finish : float64[F]
        Time at which each flow's last byte arrives (``+inf`` for a flow that
        did not finish when the status is not ``STATUS_OK``, and for every
        persistent flow).
    moved : float64[F]
        Bytes each persistent flow moved until the run ended (0 for the others).
    status : int
    """
    n_flows = flow_ptr.shape[0] - 1
    n_res = capacity.shape[0]
    rate0, finish, moved, status, incast = start_completion(
        flow_ptr, res, frac, capacity, n_plain, w_t, eps, flow_bytes, persistent)
    if status != STATUS_OK:
        return rate0, finish, moved, status
    # from here on resources are kernel rows (padded_row), capacity is per row, and
    # so are the incast terms (padding and plain rows: off)
    first_ingress = n_plain
    n_plain = padded_row(n_plain)
    res, n_res, capacity = remap_resources(res, capacity)
    row_w_t = np.full(n_res, np.inf)
    row_eps = np.zeros(n_res, dtype=np.float64)
    for i in range(w_t.shape[0]):
        row_w_t[padded_row(first_ingress + i)] = w_t[i]
        row_eps[padded_row(first_ingress + i)] = eps[i]

    # active flows: every flow with a non-empty path (0-byte ones finish at
    # the first event, of length 0)
    act = np.empty(n_flows, dtype=np.int32)
    n_act = np.int64(0)
    n_finite = np.int64(0)   # active flows that are not persistent
    for f in range(n_flows):
        if flow_ptr[f + 1] == flow_ptr[f]:
            rate0[f] = np.inf
            finish[f] = 0.0
        else:
            act[n_act] = f
            n_act += 1
            if not persistent[f]:
                n_finite += 1

    state, w_ref, cold = resource_state(capacity)
    fan_in = np.zeros(n_res, dtype=np.int64)
    if incast:
        for i in range(n_act):
            f = act[i]
            for e in range(flow_ptr[f], flow_ptr[f + 1]):
                if res[e] >= n_plain:
                    fan_in[res[e]] += 1
        for r in range(n_plain, n_res):
            if fan_in[r] > 0:  # (padding rows have none)
                cold[r, CAP] = ingress_capacity(capacity[r], fan_in[r], row_w_t[r],
                                                  row_eps[r])
    state[:, RESID] = cold[:, CAP]

    rates = np.zeros(max(n_flows, 0), dtype=np.float64)
    # rate at which each flow is counted in RESID (0 until it is)
    applied = np.zeros(max(n_flows, 0), dtype=np.float64)
    # each flow's bytes left at time since[f], and the rate its finish time
    # t_fin[f] (+inf for a persistent flow) was taken at: an event divides
    # only for the flows whose rate changed
    remaining = flow_bytes.copy()
    since = np.zeros(max(n_flows, 0), dtype=np.float64)
    rate_at = np.zeros(max(n_flows, 0), dtype=np.float64)
    t_fin = np.full(max(n_flows, 0), np.inf)
    flow_mark = np.zeros(max(n_flows, 0), dtype=np.int64)
    sub = np.empty(max(n_flows, 0), dtype=np.int32)
    done = np.empty(max(n_flows, 0), dtype=np.int32)
    touched, heap_key, heap_res, batch = fill_workspace(n_res)
    tr = no_transpose()
    # end of each flow's entries the fill walks (all of them unless screened)
    row_end = flow_ptr[1:].copy()

    # screened re-solves (after event scr_ev's solve; allocated then): whether a
    # resource is a candidate, each flow's lazy rate, resources to admit
    scr_ev = screen_from - 1
    screened = False
    cand = np.zeros(0, dtype=np.uint8)
    cand_lazy = np.zeros(0, dtype=np.float64)  # a candidate's lazy load
    lazy = np.zeros(0, dtype=np.float64)
    joining = np.empty(0, dtype=np.int32)
    # the entries the fill walks: flow f's at flow_ptr[f] .. row_end[f] (all
    # of them until screening starts, then a pool of its candidate entries)
    pool_res = res
    pool_frac = frac
    # (per resource) residual for the flows of a solve, pending drift; (per
    # flow) event in which it was last re-solved
    base = np.empty(0, dtype=np.float64)
    pend = np.zeros(0, dtype=np.float64)
    pend_res = np.empty(0, dtype=np.int32)
    in_sub = np.zeros(0, dtype=np.int64)
    n_cand = 0  # candidates after screening (again)
    n_admitted = 0  # candidates admitted since

    t = 0.0
    mark = 0
    ev = 0
    # a background's persistent flows settle at many levels: the fill starts on
    # the heap (its passes pay off where a step's flows share one or two)
    max_passes = np.int64(PASS_LIMIT) if n_finite == n_act else np.int64(0)
    lam0 = 0.0
    while n_act > 0:
        ev += 1
        if ev > n_flows + 2:
            return rate0, finish, moved, STATUS_ITER_LIMIT
        keep_below = lam0 - lam0 * KEEP_TOL
        # every flow whose rate may change: all of them at first, then
        # those at or above the finished rate, and the flows a last pass
        # left out of RESID (applied 0; they are at the top level anyway)
        # (the flows that finished at the last event leave act here)
        n_sub = np.int64(0)
        m = np.int64(0)
        for i in range(n_act):
            f = act[i]
            if finish[f] != np.inf:
                continue
            act[m] = f
            m += 1
            if ev == 1 or rates[f] >= keep_below or applied[f] != rates[f]:
                sub[n_sub] = f
                n_sub += 1
        n_act = m
        if screened:
            for i in range(n_sub):
                in_sub[sub[i]] = ev
        while n_sub > 0:
            mark += 1
            for i in range(n_sub):
                flow_mark[sub[i]] = mark
            status, tr, heap, n_touched = fill_solve(flow_ptr, row_end, pool_res, pool_frac, tr, sub,
                                                 n_sub, applied, rates, state, w_ref, cold,
                                                 flow_mark, mark, touched, heap_key, heap_res,
                                                 batch, max_passes, base)
            # a workload with many levels goes on having them: its re-solves
            # start on the heap (each pass costs a sweep over every resource)
            max_passes = np.int64(0) if heap else np.int64(PASS_LIMIT)
            if status != STATUS_OK:
                return rate0, finish, moved, status
            if screened:
                n_pend, n_join = pending_drift(sub, n_sub, flow_ptr, res, frac, rates, lazy,
                                                state, cand, pend, pend_res, joining)
                if n_join > 0:
                    n_admitted += n_join
                    over = admit(joining, n_join, row_end, pool_res, pool_frac, rates, applied,
                                  lazy, finish, in_sub, ev, state, cold, cand, cand_lazy,
                                  tr[0], tr[1], tr[2], base)
                    if over:
                        # a new candidate cannot carry these rates: undo, solve again
                        roll_back(touched, n_touched, joining, n_join, sub, n_sub, applied,
                                   state, base, pend, pend_res, n_pend)
                        continue
                commit_drift(sub, n_sub, rates, lazy, state, cand, cand_lazy, pend, pend_res,
                              n_pend)
            break   # (a full re-solve is exact without a check)
        if ev == 1:
            for i in range(n_act):
                rate0[act[i]] = rates[act[i]]
        if n_finite == 0:
            break  # only persistent flows are left: the run is over
        if ev == scr_ev:
            # screen from the next event on, while the rates are max-min fair
            # (every flow's bottleneck is saturated, so it stays a candidate)
            apply_loads(act, n_act, flow_ptr, res, frac, rates, applied, state)
            tr = with_transpose(tr, flow_ptr, res, frac, n_res)
            cand = np.zeros(n_res, dtype=np.uint8)
            cand_lazy = np.zeros(n_res, dtype=np.float64)
            lazy = np.zeros(n_flows, dtype=np.float64)
            joining = np.empty(n_res, dtype=np.int32)
            base = np.empty(n_res, dtype=np.float64)
            pend = np.zeros(n_res, dtype=np.float64)
            pend_res = np.empty(n_res + 1, dtype=np.int32)  # (one written past the end)
            in_sub = np.zeros(n_flows, dtype=np.int64)
            pool_res, pool_frac, n_cand = start_screening(act, n_act, flow_ptr, row_end, res,
                                                           frac, rates, lazy, state, cold, cand,
                                                           cand_lazy)
            screened = True
        elif screened and n_admitted > RESCREEN_GROWTH * n_cand:
            # screen again the candidates that no longer come near capacity
            n_cand = rescreen(flow_ptr, row_end, pool_res, pool_frac, finish, state, cold, cand,
                               cand_lazy, tr[0], tr[1])
            n_admitted = 0

        # --- the flows whose rate changed (every flow at first): their bytes
        # up to now, their finish times at the new rates
        for i in range(n_sub):
            f = sub[i]
            x = rates[f]
            if not np.isfinite(x):
                return rate0, finish, moved, STATUS_NONFINITE
            was = rate_at[f]
            if x == was and ev > 1:
                continue
            rate_at[f] = x
            rem = bytes_left(f, was, t, persistent, remaining, since, moved)
            if persistent[f]:
                continue
            if rem <= 0.0:
                tf = t
            elif x > 0.0:
                tf = t + rem / x
                if not np.isfinite(tf):
                    return rate0, finish, moved, STATUS_STALLED
            else:
                return rate0, finish, moved, STATUS_STALLED
            t_fin[f] = tf

        # --- next event: the earliest finish, with those tied to it (done
        # gathers the flows within the tie tolerance of the earliest so far)
        t_next = np.inf
        thr = np.inf
        n_done = 0
        for i in range(n_act):
            f = act[i]
            tf = t_fin[f]
            if tf <= thr:
                if tf < t_next:
                    t_next = tf
                    thr = t_next + t_next * TIE_TOL
                done[n_done] = f
                n_done += 1
        if ev == 1 and (equal_ends or handoff):
            t_last = 0.0
            for i in range(n_act):
                if not persistent[act[i]]:
                    t_last = max(t_last, t_fin[act[i]])
            if equal_ends and t_last > thr and _one_size(act, n_act, flow_bytes, persistent):
                # no flow will change rate: each ends at its size / its rate
                finish_in_rate_order(act, n_act, t_fin, finish)
                return rate0, finish, moved, STATUS_OK
            if handoff and t_last > thr and not few_finish_times(
                    flow_ptr, flow_bytes, persistent, rates, BULK_EVENTS):
                return rate0, finish, moved, STATUS_HANDOFF
        lam0 = np.inf
        m = 0
        for i in range(n_done):
            f = done[i]
            if t_fin[f] <= thr:
                finish[f] = t_next
                lam0 = min(lam0, rates[f])
                done[m] = f
                m += 1
        n_done = m
        n_finite -= n_done
        if counter is not None:   # (flows finished, for a progress display)
            counter[0] += n_done
        t = t_next
        if n_finite == 0:
            break
        # release the finished flows' load; their receivers' fan-in drops
        for i in range(n_done):
            f = done[i]
            x = applied[f]
            x_lazy = lazy[f] if screened else x
            rates[f] = 0.0
            applied[f] = 0.0
            for e in range(flow_ptr[f], flow_ptr[f + 1]):
                r = res[e]
                a = frac[e]
                if screened and cand[r] == 0:
                    state[r, RESID] += a * x_lazy  # (its room)
                else:
                    state[r, RESID] += a * x
                    if screened:
                        cand_lazy[r] -= a * x_lazy
                if incast and r >= n_plain:
                    fan_in[r] -= 1
                    new_cap = ingress_capacity(capacity[r], fan_in[r], row_w_t[r], row_eps[r])
                    grown = new_cap - cold[r, CAP]
                    if screened and cand[r] == 0:
                        grown *= SCREEN_SHARE  # (its room)
                    state[r, RESID] += grown
                    cold[r, CAP] = new_cap
    # the persistent flows' bytes since their last rate change
    for i in range(n_act):
        f = act[i]
        if persistent[f]:
            moved[f] += rate_at[f] * (t - since[f])
    return rate0, finish, moved, STATUS_OK


@njit(**NUMPY_ERRORS)
def append_entries(flow_ptr, res, frac, extra):
    """Copy of the CSR with each flow's extra resources appended, fraction
    1: ``extra[f, j] >= 0`` in the order of ``j`` (-1 for none; int64[F,
    J])."""
    n_flows = flow_ptr.shape[0] - 1
    n_extra = 0
    for f in range(n_flows):
        for j in range(extra.shape[1]):
            n_extra += extra[f, j] >= 0
    n_entries = res.shape[0] + n_extra
    new_ptr = np.empty(n_flows + 1, dtype=np.int64)
    new_res = np.empty(n_entries, dtype=np.int32)
    new_frac = np.empty(n_entries, dtype=np.float64)
    k = 0
    new_ptr[0] = 0
    for f in range(n_flows):
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            new_res[k] = res[e]
            new_frac[k] = frac[e]
            k += 1
        for j in range(extra.shape[1]):
            if extra[f, j] >= 0:
                new_res[k] = extra[f, j]
                new_frac[k] = 1.0
                k += 1
        new_ptr[f + 1] = k
    return new_ptr, new_res, new_frac


@njit(**NUMPY_ERRORS)
def append_ingress(flow_ptr, res, frac, flow_dst, n_plain):
    """Copy of the CSR with one entry (fraction 1) on resource
    ``n_plain + flow_dst[f]`` appended to every non-empty flow."""
    n_flows = flow_ptr.shape[0] - 1
    extra = np.full((n_flows, 1), -1, dtype=np.int64)
    for f in range(n_flows):
        if flow_ptr[f + 1] > flow_ptr[f]:
            extra[f, 0] = n_plain + flow_dst[f]
    return append_entries(flow_ptr, res, frac, extra)


@njit(**NUMPY_ERRORS)
def first_bad_entry(res, frac, n_links):
    """Index of the first entry with a link outside ``[0, n_links)`` or a
    fraction not in ``(0, 1]`` (NaN included), or -1."""
    for e in range(res.shape[0]):
        a = frac[e]
        if res[e] < 0 or res[e] >= n_links or not (a > 0.0 and a <= 1.0):
            return e
    return -1


