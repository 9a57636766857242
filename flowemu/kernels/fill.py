"""Progressive filling: the static max-min solve of one set of flows over
resources (numba kernels), with the status codes and tolerances every solver
kernel shares. The model and the event loop around it are described in
:mod:`flowemu.kernels.maxmin`; the loop is :mod:`flowemu.kernels.completion`."""

from __future__ import annotations

import numpy as np

from .heaps import quad_heapify, quad_pop, quad_sift_down
from .jit import njit
from .layout import CAP, COUNT, LEVEL, NUMPY_ERRORS, RESID, TIE_TOL, W_HI, W_LO

STATUS_OK = 0
"""Solved."""
STATUS_STALLED = 1
"""An active flow cannot progress (rate 0 or non-finite finish time)."""
STATUS_NONFINITE = 2
"""NaN or inf appeared in the inputs or the rates."""
STATUS_ITER_LIMIT = 3
"""The event or pass count exceeded its safety bound."""
STATUS_BAD_INPUT = 4
"""A kernel got structurally invalid arrays (index out of range, fraction not
in (0, 1], negative capacity or bytes). The kernel's first pass finds them;
the checking layer then raises ``ValueError`` naming the entry."""

STATUS_NAMES = {
    STATUS_OK: "ok",
    STATUS_STALLED: "stalled",
    STATUS_NONFINITE: "non-finite",
    STATUS_ITER_LIMIT: "iteration limit",
    STATUS_BAD_INPUT: "bad input",
}

#: flows whose rate is below ``lambda0 * (1 - KEEP_TOL)`` keep it after an event
KEEP_TOL = 1e-9
#: passes of pass-based filling before switching to the heap
PASS_LIMIT = 2
#: the heap drops its emptied resources in one sweep only above this size
COMPACT_MIN = 64
#: a resource's (two-sum) weight is summed again when it falls below this
#: share of its last exact value
WEIGHT_RESUM = 1e-12



# --------------------------------------------------------------------------
# numba kernels
# --------------------------------------------------------------------------


# Constant arguments of kernel calls are written np.int64(0), np.bool_(True): a bare 0 or
# True is typed as a literal (Literal[int](0)) and compiles a second copy of the callee
# (four of _fill), which cost ~13 s of a cold start; the code and results are the same.


@njit(**NUMPY_ERRORS)
def check_inputs(flow_ptr, res, frac, capacity):
    """Structural check of the CSR and capacities; returns a status."""
    n_flows = flow_ptr.shape[0] - 1
    n_entries = res.shape[0]
    n_res = capacity.shape[0]
    if n_flows < 0 or frac.shape[0] != n_entries:
        return STATUS_BAD_INPUT
    if flow_ptr[0] != 0 or flow_ptr[n_flows] != n_entries:
        return STATUS_BAD_INPUT
    for f in range(n_flows):
        if flow_ptr[f + 1] < flow_ptr[f]:
            return STATUS_BAD_INPUT
    status = STATUS_OK
    for e in range(n_entries):
        a = frac[e]
        r = res[e]
        # one branch-free test per entry; sort out which failure after
        if not ((r >= 0) & (r < n_res) & (a > 0.0) & (a <= 1.0)):
            status = STATUS_NONFINITE if np.isnan(a) else STATUS_BAD_INPUT
            break
    if status != STATUS_OK:
        return status
    for r in range(n_res):
        c = capacity[r]
        if not np.isfinite(c):
            return STATUS_NONFINITE
        if c < 0.0:
            return STATUS_BAD_INPUT
    return STATUS_OK


@njit(**NUMPY_ERRORS)
def padded_row(r):
    """Row of resource ``r`` in the kernels' per-resource arrays: ``r`` plus
    one padding row per 64 (and 4096, 262144) resources. Strictly increasing.
    Link numberings have power-of-two strides (a torus path visits links
    512 apart on 128x128), and entry updates that far apart hit addresses a
    multiple of 4 KiB apart: the CPU takes each load for a possible alias of
    the pending stores (4K aliasing) and the scatter runs 5x slower. The
    padding makes such strides odd multiples of the row size."""
    return r + (r >> 6) + (r >> 12) + (r >> 18)


@njit(**NUMPY_ERRORS)
def remap_resources(res, capacity):
    """``res`` in kernel rows (:func:`padded_row`), the number of rows and the
    capacity of each row (0 on padding rows). Call after the input check."""
    n_res = capacity.shape[0]
    n_rows = padded_row(n_res - 1) + 1 if n_res > 0 else 0
    rows = np.empty(res.shape[0], dtype=np.int32)
    for e in range(res.shape[0]):
        rows[e] = padded_row(res[e])
    cap = np.zeros(n_rows, dtype=np.float64)
    for r in range(n_res):
        cap[padded_row(r)] = capacity[r]
    return rows, n_rows, cap


@njit(**NUMPY_ERRORS)
def transpose(flow_ptr, res, frac, n_res):
    """Resource -> flows CSR: ``res_ptr`` int64[R+1], ``res_flow`` int32[E]
    and ``res_frac`` float64[E]."""
    n_flows = flow_ptr.shape[0] - 1
    res_ptr = np.zeros(n_res + 1, dtype=np.int64)
    for e in range(res.shape[0]):
        res_ptr[res[e] + 1] += 1
    for r in range(n_res):
        res_ptr[r + 1] += res_ptr[r]
    fill = res_ptr[:-1].copy()
    res_flow = np.empty(res.shape[0], dtype=np.int32)
    res_frac = np.empty(res.shape[0], dtype=np.float64)
    for f in range(n_flows):
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            r = res[e]
            k = fill[r]
            res_flow[k] = f
            res_frac[k] = frac[e]
            fill[r] = k + 1
    return res_ptr, res_flow, res_frac


_NEED_TRANSPOSE = -1  # internal: the fill needs the resource -> flows CSR
_FROZEN = -1  # flow_mark of a flow frozen in a fill, its load in RESID
_FROZEN_UNLOADED = -2  # flow_mark of a flow frozen in a last pass that skipped the entries


@njit(**NUMPY_ERRORS)
def _gather(flow_ptr, row_end, res, frac, sub, n_sub, applied, state, w_ref, cold, touched):
    """Set up a fill of the flows ``sub[:n_sub]``: list the resources they
    touch in ``touched``, sum their weights and counts, and take their loads
    (at their ``applied`` rates) out of the residual capacity, which then is
    the capacity minus the load of the other flows. Branch-free per entry: a
    resource is appended to ``touched`` every time and kept only the first
    time (when its count was 0). Returns ``(n_touched, n_entries)``."""
    n_touched = 0
    n_entries = 0
    for i in range(n_sub):
        f = sub[i]
        x = applied[f]
        n_entries += row_end[f] - flow_ptr[f]
        for e in range(flow_ptr[f], row_end[f]):
            r = res[e]
            a = frac[e]
            c = state[r, COUNT]
            touched[n_touched] = r
            n_touched += c == 0.0
            state[r, COUNT] = c + 1.0
            hi = state[r, W_HI]
            s = hi + a
            z = s - hi
            state[r, W_LO] += (hi - (s - z)) + (a - z)
            state[r, W_HI] = s
            state[r, RESID] += a * x
    for i in range(n_touched):
        r = touched[i]
        w_ref[r] = state[r, W_HI] + state[r, W_LO]
    return n_touched, n_entries


@njit(refcounts=False, **NUMPY_ERRORS)
def _resum_weight(r, res_ptr, res_flow, res_frac, flow_mark, mark):
    """Exact (two-sum) weight of the unfrozen flows on ``r``."""
    s = 0.0
    lo = 0.0
    for k in range(res_ptr[r], res_ptr[r + 1]):
        if flow_mark[res_flow[k]] == mark:
            b = res_frac[k]
            t = s + b
            z = t - s
            lo += (s - (t - z)) + (b - z)
            s = t
    return s + lo


@njit(refcounts=False, **NUMPY_ERRORS)
def _freeze_flow(f, lam, flow_ptr, row_end, res, frac, res_ptr, res_flow, res_frac, have_tr, state,
                 w_ref, flow_mark, mark, rates):
    """Freeze flow ``f`` at rate ``lam``. Returns ``(ok, emptied)``: ``ok``
    is False when its weights need an exact re-summation and no transpose is
    there to do it; ``emptied`` counts the resources left with no unfrozen
    flow."""
    rates[f] = lam
    flow_mark[f] = _FROZEN
    ok = True
    emptied = 0
    for e in range(flow_ptr[f], row_end[f]):
        r = res[e]
        a = frac[e]
        c = state[r, COUNT] - 1.0
        state[r, COUNT] = c
        state[r, RESID] -= a * lam
        if c == 0.0:
            state[r, W_HI] = 0.0
            state[r, W_LO] = 0.0
            emptied += 1
            continue
        hi = state[r, W_HI]
        s = hi - a
        z = s - hi
        lo = state[r, W_LO] + ((hi - (s - z)) + (-a - z))
        if s + lo < WEIGHT_RESUM * w_ref[r]:
            # even the two-sum lost its digits (fractions 1e-12 below the
            # ones that left): sum the unfrozen fractions again
            if have_tr:
                s = _resum_weight(r, res_ptr, res_flow, res_frac, flow_mark, mark)
                lo = 0.0
                w_ref[r] = s
            else:
                ok = False
        state[r, W_HI] = s
        state[r, W_LO] = lo
    return ok, emptied


@njit(**NUMPY_ERRORS)
def _all_saturated(flow_ptr, row_end, res, sub, n_sub, cold, flow_mark, mark):
    """Whether every unfrozen flow of ``sub`` crosses a resource marked
    saturated (``LEVEL == -inf``)."""
    for i in range(n_sub):
        f = sub[i]
        if flow_mark[f] == mark:
            hit = False
            for e in range(flow_ptr[f], row_end[f]):
                if cold[res[e], LEVEL] == -np.inf:
                    hit = True
                    break
            if not hit:
                return False
    return True


@njit(refcounts=False, **NUMPY_ERRORS)
def _level(state, r):
    return state[r, RESID] / (state[r, W_HI] + state[r, W_LO])


@njit(**NUMPY_ERRORS)
def _fill(flow_ptr, row_end, res, frac, res_ptr, res_flow, res_frac, have_tr, sub, n_sub, n_entries,
          touched, n_touched, state, w_ref, cold, flow_mark, mark, heap_key, heap_res, batch,
          rates, max_passes):
    """Progressive filling of the flows ``sub[:n_sub]`` (set up by
    :func:`_gather`, or left unfinished by an earlier call).

    On entry ``flow_mark[f] == mark`` for exactly the unfrozen flows of
    ``sub``, which all have at least one entry, and ``touched[:n_touched]``
    lists the resources they cross with their ``state``. On exit ``rates[f]``
    is set for every flow of ``sub``, their marks are cleared, ``RESID`` is
    the capacity left and ``touched[:n_touched]`` holds the same resources,
    reordered. Without the transpose (``have_tr`` False) the pass-based
    path freezes by scanning the flows, and the call returns
    ``_NEED_TRANSPOSE`` (state consistent, to be called again with it) when
    it needs the heap. At most ``max_passes`` pass-based levels are filled
    before the heap takes over. Returns ``(status, whether the heap was
    used)``.
    """
    n_left = 0
    floor = 0.0  # the fill level never falls; below it is rounding noise
    for i in range(n_sub):
        f = sub[i]
        if flow_mark[f] == mark:
            n_left += 1
        elif rates[f] > floor:
            floor = rates[f]  # resumed fill: frozen at this level already
    resumed = n_left < n_sub
    heap = False

    # --- pass-based filling: cheap while there are few distinct levels
    passes = 0
    while n_left > 0 and passes < max_passes and not resumed:
        passes += 1
        lam = np.inf
        m = 0
        for i in range(n_touched):
            r = touched[i]
            if state[r, COUNT] > 0.0:
                # swap, not overwrite: the caller still needs the whole set
                touched[i] = touched[m]
                touched[m] = r
                m += 1
                lv = _level(state, r)
                cold[r, LEVEL] = lv
                lam = min(lam, lv)
        n_touched = m
        if not np.isfinite(lam):
            return STATUS_NONFINITE, heap
        lam = max(lam, floor)
        floor = lam
        thr = lam + lam * TIE_TOL
        # mark the saturated resources before freezing anything: freezing
        # changes the levels of the others
        n_sat_flows = 0.0
        for i in range(n_touched):
            r = touched[i]
            if cold[r, LEVEL] <= thr:
                cold[r, LEVEL] = -np.inf
                n_sat_flows += state[r, COUNT]
        if n_sat_flows >= n_left and _all_saturated(flow_ptr, row_end, res, sub, n_sub, cold,
                                                    flow_mark, mark):
            # every flow left freezes now (one level left; a symmetric
            # workload has only one): skip the entry updates, the caller
            # brings the loads up to date when it needs them
            for i in range(n_sub):
                f = sub[i]
                if flow_mark[f] == mark:
                    rates[f] = lam
                    flow_mark[f] = _FROZEN_UNLOADED
            return STATUS_OK, heap
        if have_tr:
            for i in range(n_touched):
                r = touched[i]
                if cold[r, LEVEL] == -np.inf:
                    for k in range(res_ptr[r], res_ptr[r + 1]):
                        f = res_flow[k]
                        if flow_mark[f] == mark:
                            _freeze_flow(f, lam, flow_ptr, row_end, res, frac, res_ptr, res_flow,
                                         res_frac, have_tr, state, w_ref, flow_mark, mark,
                                         rates)
                            n_left -= 1
        else:
            ok = True
            for i in range(n_sub):
                f = sub[i]
                if flow_mark[f] == mark:
                    for e in range(flow_ptr[f], row_end[f]):
                        if cold[res[e], LEVEL] == -np.inf:
                            ok &= _freeze_flow(f, lam, flow_ptr, row_end, res, frac, res_ptr, res_flow,
                                               res_frac, have_tr, state, w_ref, flow_mark,
                                               mark, rates)[0]
                            n_left -= 1
                            break
            if not ok and n_left > 0:
                return _NEED_TRANSPOSE, heap
    if n_left == 0:
        return STATUS_OK, heap
    if not have_tr:
        return _NEED_TRANSPOSE, heap

    # --- lazy heap of resource levels: one entry per resource still in play,
    # keyed by a lower bound of its level (levels only rise)
    heap = True
    size = np.int64(0)
    for i in range(n_touched):
        r = touched[i]
        if state[r, COUNT] > 0.0:
            if resumed:  # no exact re-summation was possible before
                state[r, W_HI] = _resum_weight(r, res_ptr, res_flow, res_frac, flow_mark,
                                                mark)
                state[r, W_LO] = 0.0
                w_ref[r] = state[r, W_HI]
            heap_key[size] = _level(state, r)
            heap_res[size] = r
            size += 1
    quad_heapify(heap_key, heap_res, size)

    guard = 0
    guard_limit = 2 * (n_entries + n_touched) + 1024  # re-keys <= updates
    # Resources whose flows all froze through other resources stay in the
    # heap (lazy deletion). On a permutation most resources end that way, and
    # popping each costs a sift plus a cache miss on its state; once they are
    # half the heap, one sweep drops them all and re-keys the rest to their
    # current levels (valid keys: levels only rise).
    dead = 0
    while n_left > 0:
        guard += 1
        if size == 0 or guard > guard_limit:
            return STATUS_ITER_LIMIT, heap
        if 2 * dead > size > COMPACT_MIN:
            m = np.int64(0)
            for i in range(size):
                r = heap_res[i]
                if state[r, COUNT] > 0.0:
                    heap_key[m] = _level(state, r)
                    heap_res[m] = r
                    m += 1
            size = m
            quad_heapify(heap_key, heap_res, size)
            dead = 0
            continue
        r = heap_res[0]
        if state[r, COUNT] == 0.0:
            size = quad_pop(heap_key, heap_res, size)
            dead -= 1
            continue
        lv = _level(state, r)
        if lv != heap_key[0]:  # stale lower bound: re-key and look again
            if np.isnan(lv):
                return STATUS_NONFINITE, heap
            heap_key[0] = lv
            quad_sift_down(heap_key, heap_res, size, np.int64(0))
            continue
        # lv is the minimum level; collect every resource tied with it before
        # freezing anything (same rule as the pass-based path)
        lam = max(floor, lv)
        if not np.isfinite(lam):
            return STATUS_NONFINITE, heap
        floor = lam
        thr = lam + lam * TIE_TOL
        n_batch = 1
        batch[0] = r
        size = quad_pop(heap_key, heap_res, size)
        while size > 0 and heap_key[0] <= thr:
            r2 = heap_res[0]
            if state[r2, COUNT] == 0.0:
                size = quad_pop(heap_key, heap_res, size)
                dead -= 1
                continue
            lv2 = _level(state, r2)
            if lv2 <= thr:
                batch[n_batch] = r2
                n_batch += 1
                size = quad_pop(heap_key, heap_res, size)
            else:
                heap_key[0] = lv2
                quad_sift_down(heap_key, heap_res, size, np.int64(0))
        for i in range(n_batch):
            r = batch[i]
            for k in range(res_ptr[r], res_ptr[r + 1]):
                f = res_flow[k]
                if flow_mark[f] == mark:
                    dead += _freeze_flow(f, lam, flow_ptr, row_end, res, frac, res_ptr, res_flow,
                                         res_frac, np.bool_(True), state, w_ref, flow_mark, mark,
                                         rates)[1]
                    n_left -= 1
        dead -= n_batch  # (popped already; each was emptied exactly once)
    return STATUS_OK, heap


@njit(**NUMPY_ERRORS)
def fill_solve(flow_ptr, row_end, res, frac, tr, sub, n_sub, applied, rates, state, w_ref, cold,
           flow_mark, mark, touched, heap_key, heap_res, batch, max_passes, base):
    """Gather and fill ``sub[:n_sub]`` (marked ``mark``), building the
    transpose ``tr = (res_ptr, res_flow, res_frac, built)`` the first time
    it is needed. Afterwards ``RESID`` counts each flow of ``sub`` at its
    ``applied`` rate: its new rate, or 0 for the flows frozen in a last pass
    that skipped the entries (``flow_mark == _FROZEN_UNLOADED``). With a
    non-empty ``base``, the residual each touched resource has for ``sub``
    (before the fill) is kept there. Returns ``(status, tr, whether the heap
    was used, number of resources touched)``: ``touched`` lists them."""
    n_touched, n_entries = _gather(flow_ptr, row_end, res, frac, sub, n_sub, applied, state,
                                   w_ref, cold, touched)
    if base.shape[0] > 0:
        for i in range(n_touched):
            r = touched[i]
            base[r] = state[r, RESID]
    res_ptr, res_flow, res_frac, have_tr = tr
    status, heap = _fill(flow_ptr, row_end, res, frac, res_ptr, res_flow, res_frac, have_tr, sub, n_sub,
                         n_entries, touched, n_touched, state, w_ref, cold, flow_mark, mark,
                         heap_key, heap_res, batch, rates, max_passes)
    if status == _NEED_TRANSPOSE:
        res_ptr, res_flow, res_frac = transpose(flow_ptr, res, frac, state.shape[0])
        tr = (res_ptr, res_flow, res_frac, True)
        status, heap = _fill(flow_ptr, row_end, res, frac, res_ptr, res_flow, res_frac, np.bool_(True), sub,
                             n_sub, n_entries, touched, n_touched, state, w_ref, cold,
                             flow_mark, mark, heap_key, heap_res, batch, rates, max_passes)
    for i in range(n_touched):
        r = touched[i]
        # a last pass that skipped the entries left these set
        state[r, W_HI] = 0.0
        state[r, W_LO] = 0.0
        state[r, COUNT] = 0.0
    for i in range(n_sub):
        f = sub[i]
        applied[f] = 0.0 if flow_mark[f] == _FROZEN_UNLOADED else rates[f]
    return status, tr, heap, n_touched
@njit(**NUMPY_ERRORS)
def resource_state(capacity):
    """``state``, ``w_ref`` and ``cold`` (see the layout) of resources with
    these capacities and no flow counted yet."""
    n_res = capacity.shape[0]
    state = np.zeros((n_res, 4), dtype=np.float64)
    state[:, RESID] = capacity
    w_ref = np.zeros(n_res, dtype=np.float64)
    cold = np.zeros((n_res, 2), dtype=np.float64)
    cold[:, CAP] = capacity
    return state, w_ref, cold


@njit(**NUMPY_ERRORS)
def fill_workspace(n_res):
    """Scratch of :func:`_fill` for ``n_res`` resources: ``touched`` (one
    slot more: :func:`_gather` writes one past the resources it keeps),
    ``heap_key``, ``heap_res`` and ``batch``."""
    return (np.empty(n_res + 1, dtype=np.int32), np.empty(n_res, dtype=np.float64),
            np.empty(n_res, dtype=np.int32), np.empty(n_res, dtype=np.int32))


@njit(**NUMPY_ERRORS)
def no_transpose():
    return (np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.float64), np.bool_(False))


@njit(**NUMPY_ERRORS)
def with_transpose(tr, flow_ptr, res, frac, n_res):
    """``tr``, built now if it is not yet (:func:`no_transpose`)."""
    if tr[3]:
        return tr
    res_ptr, res_flow, res_frac = transpose(flow_ptr, res, frac, n_res)
    return (res_ptr, res_flow, res_frac, True)


@njit(**NUMPY_ERRORS)
def maxmin_rates_kernel(flow_ptr, res, frac, capacity, active):
    """Max-min fair rates of the active flows (one static solve).

    Parameters
    ----------
    flow_ptr : int64[F+1]
    res : int32[E]
        Resource of each entry, in ``[0, R)``; at most once per flow.
    frac : float64[E]
        Fraction of the flow crossing the resource, in ``(0, 1]``.
    capacity : float64[R]
        Capacity of each resource, bytes/s, finite and ``>= 0``.
    active : bool[F]
        Flows taking part; the others get rate 0.

    Returns
    -------
    rates : float64[F]
        Max-min fair rate of each active flow (``+inf`` for an empty path).
    status : int
        ``STATUS_OK``; ``STATUS_STALLED`` when an active flow gets rate 0;
        ``STATUS_NONFINITE``/``STATUS_BAD_INPUT`` on bad data.
    """
    n_flows = flow_ptr.shape[0] - 1
    n_res = capacity.shape[0]
    rates = np.zeros(max(n_flows, 0), dtype=np.float64)
    status = check_inputs(flow_ptr, res, frac, capacity)
    if status != STATUS_OK:
        return rates, status
    if active.shape[0] != n_flows:
        return rates, STATUS_BAD_INPUT
    res, n_res, capacity = remap_resources(res, capacity)  # from here on: kernel rows
    sub = np.empty(n_flows, dtype=np.int32)
    flow_mark = np.zeros(n_flows, dtype=np.int64)
    n_sub = np.int64(0)
    for f in range(n_flows):
        if active[f]:
            if flow_ptr[f + 1] == flow_ptr[f]:
                rates[f] = np.inf
            else:
                sub[n_sub] = f
                n_sub += 1
                flow_mark[f] = 1
    state, w_ref, cold = resource_state(capacity)
    touched, heap_key, heap_res, batch = fill_workspace(n_res)
    applied = np.zeros(n_flows, dtype=np.float64)
    row_end = flow_ptr[1:]  # (read only: every entry)
    status, _, _, _ = fill_solve(flow_ptr, row_end, res, frac, no_transpose(), sub, n_sub, applied,
                             rates, state, w_ref, cold, flow_mark, np.int64(1), touched, heap_key,
                             heap_res, batch, np.int64(PASS_LIMIT), np.empty(0, dtype=np.float64))
    if status != STATUS_OK:
        return rates, status
    for i in range(n_sub):
        x = rates[sub[i]]
        if not np.isfinite(x):
            return rates, STATUS_NONFINITE
        if x <= 0.0:
            status = STATUS_STALLED
    return rates, status
