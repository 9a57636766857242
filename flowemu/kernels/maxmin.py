"""Max-min fair rates and event-driven flow completion (numba kernels).

The model
---------
Resources ``r = 0..R-1`` (links, and per-receiver ingress resources) have a
capacity ``c_r > 0`` in bytes/s. Flow ``f`` crosses resource ``r`` with the
fraction ``a_{f,r}`` in ``(0, 1]`` of its bytes (ECMP splits a flow over
equal-cost paths); the entries form a CSR (``flow_ptr``, ``res``, ``frac``) in
which a resource appears at most once per flow. With flow rates ``x_f`` the
load of ``r`` is ``sum_f a_{f,r} x_f <= c_r``.

Rates are max-min fair, computed by *progressive filling*: every unfrozen flow
rises at a common level ``lambda``; resource ``r`` saturates when
``c_r - used_frozen_r = lambda * W_r`` with ``W_r = sum_{unfrozen f on r}
a_{f,r}``; the unfrozen flows of a saturated resource freeze at that level;
repeat. Resources whose level equals the minimum to a relative ``1e-12`` are
saturated in the same pass (ties are batched). A flow with an empty path gets
rate ``+inf`` and finishes at time 0.

Completion is event driven: all flows start at ``t = 0`` with their bytes; the
next event is the earliest ``t + remaining / rate``; the flows whose finish
time is within a relative ``1e-12`` of it finish together; the others have
``rate * dt`` bytes fewer; rates are re-solved for the flows still active, and
so on. A flow with 0 bytes is part of the ``t = 0`` solve (its ``rate0`` is
its fair share) and finishes at time 0 (the first event, of length 0).

Persistent flows (steady background traffic, ``persistent=``) take part in
every solve like the others but never finish: their bytes are ignored, the
next event is the earliest finish of the other flows, and the run ends when
the last of those has finished (after the ``t = 0`` solve when there is
none). Each reports the bytes it moved until then (``Solution.moved``). They
change no rule above: after an event only flows at or above the finished
rate can change, persistent ones included.

Incast (GenModel, ../shared/papers/genmodel-gentree.txt, §3.2, eq. 7-10): a
receiver with fan-in ``w`` above the threshold ``w_t`` pays ``max(w - w_t, 0) *
eps`` extra seconds per byte, i.e. its per-byte cost is ``beta' = beta +
max(w - w_t, 0) * eps`` (eq. 10). Receivers get *ingress resources* (indices
``>= n_plain``) which every flow to them crosses with fraction 1; the capacity
of one is ``1 / (1 / base + max(w - w_t, 0) * eps)`` where ``base = 1 / beta``
is the receiver's ingress bandwidth and ``w`` the number of flows on that
resource that are still active, so the capacity grows back as they finish.

Incast classes (per tier, "where flows converge"): every flow has a class
``k`` in ``0..K-1`` with its own ``(w_t[k], eps[k])``; a receiver gets one
ingress resource per class of the flows into it, whose ``w`` counts only that
class's active flows and whose terms are that class's, all with the same
``base``. A topology with tiers gives a flow the class of the tier where it
converges (on a tree: the lowest common ancestor of its sender and receiver,
:meth:`flowemu.topology.Topology.flow_incast_class`); with one class (every
other topology) there is exactly one ingress resource per receiver with the
network-wide terms. The kernel keeps ``w_t`` and ``eps`` per ingress
resource, and each capacity update after an event uses its resource's own
terms. A class's incast is off when its ``eps == 0`` or ``w_t == inf`` (its
resources keep ``base``); incast is off when every class's is.

Speed
-----
Two exact solving paths: pass-based filling (one pass per distinct level over
the resources still in play, each freeze updating the residual and weight of
the flow's resources) for the first ``PASS_LIMIT`` levels, then a lazy
min-heap of resource levels over a resource -> flows transposed CSR (built
the first time a kernel call needs it, then kept for its later events).
Heap keys are lower bounds: a resource's level only rises as flows freeze
(when ``C >= lambda * W`` and a flow of fraction ``a`` freezes at ``lambda``,
``(C - lambda a) / (W - a) >= C / W``), so a popped key that is no longer the
resource's level is re-keyed instead of every update being pushed; resources
whose flows all froze
elsewhere are dropped in bulk once they are half the heap. When a pass
freezes every flow left (a symmetric workload has a single level) the entry
updates are skipped and the loads are brought up to date only if a later
event needs them. A re-solve after an event starts on the heap directly when
the previous solve needed it (a workload with many levels keeps them, and
each pass sweeps every resource); after a solve that did not, passes again.

The heap is 4-ary; what every entry update touches of a resource is one
32-byte row (the rest lives in other arrays), and resources are addressed
through padded rows (:func:`_row`) so that power-of-two link strides do not
make every entry update a 4K-aliasing stall.

Weights are kept as an unevaluated double-double sum (error-free two-sum
updates): on ECMP routes a resource carries fractions from 0.5 down to 1e-15
and below, and once the big ones have frozen, a plain running sum would leave
the small ones nothing but rounding error (negative weights, zero rates).

After an event only the flows with a rate ``>= lambda0 * (1 - 1e-9)``
(``lambda0`` = the smallest rate of the flows that just finished) can change:
progressive filling below ``lambda0`` is unchanged, because every resource a
finished flow crosses saturates at a level at least the flow's rate, and
ingress capacities only change (grow) on resources that finished flows cross.
The others keep their rates exactly and a re-solve runs on the residual
capacities over the resources the re-solved flows touch (each resource keeps
its residual capacity between events; a screened resource, see below, its
room). Its cost is O(entries of the re-solved flows + resources they touch),
not O(E).

Restricted re-solves. Of those flows, often only a few change: on a random
permutation on torus:64x64 with one hashed path per flow, 680 are at or above
the finished rate per event on average, ~150 change (median 7 of 292). So
each flow keeps a recorded *bottleneck*: a saturated resource on which no
flow is faster. An event re-solves only the flows whose bottleneck a finished
flow crossed, closed under "a re-solved flow's resources may change, so
re-solve the flows bottlenecked there"; the other flows keep their rates
(they are fixed loads in the fill). Then every flow whose bottleneck may have
changed (re-solved, bottleneck on a resource whose load changed, or none
recorded) is checked, and a new bottleneck is recorded when the old one no
longer is one. The allocation is max-min fair exactly when it is feasible
(the fill keeps it so) and every flow has a bottleneck; a flow without one is
added, with the faster flows on its saturated resources, and the set is
re-solved (after ``MAX_ROUNDS`` rounds: every flow at or above the finished
rate and every flow touched, which is exact without a check). Saturation is
judged to ``bottlenecks.SAT_TOL`` of the capacity and "no flow faster" to
``TIE_TOL`` (the checks are in :mod:`.bottlenecks`). This pays with few
entries a flow; with ECMP split routes (~570 entries a flow and ~140 flows a
resource on torus:64x64) most of the reached flows change anyway and the
checks cost more than they save.

Screened re-solves (the default from event ``AUTO_START`` on; the proofs are
in :mod:`.screening`). Every flow at or above the finished rate is re-solved,
but over its entries on *candidate* resources only: those that are, or may
come, near capacity. The others are screened: a drift bound (every flow's
rate within ``SCREEN_DRIFT`` of a lazy rate at which its screened entries are
counted) proves them below capacity without summing their loads; a resource
whose bound breaks becomes a candidate, and the event is solved again if it
is over capacity. The rates are the exact max-min fair ones. Each flow's
candidate entries are copied to a pool (``flow_ptr[f] .. row_end[f]``), which
the fill walks instead of the row. On the split-routed permutation on torus:64x64
about 400 of 16,384 links are saturated at ``t = 0`` (~320 are candidates on
average); an event re-solves ~680 flows over ~14 entries each instead of
~570, and the solve runs ~9x faster than full re-solves (and ~2x faster with
hashed paths than restricted ones).

Layers
------
``maxmin_rates_kernel`` and ``completion_kernel`` take arrays only, never raise
on data and return a status code; :func:`max_min_rates` and
:func:`solve_completion` validate arguments, allocate and build the ingress
entries. ``completion_tiers_kernel`` takes the incast terms per ingress
resource; ``completion_kernel`` is the same with one ``(w_t, eps)`` for all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import SolverError
from .bottlenecks import (
    UNKNOWN,
    add_dependents,
    add_violators,
    apply_loads,
    check_bottlenecks,
    fall_back,
    join_resolved,
)
from .jit import njit
from .layout import CAP, COUNT, LEVEL, NUMPY_ERRORS, RESID, TIE_TOL, W_HI, W_LO
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
_COMPACT_MIN = 64
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
def _check_inputs(flow_ptr, res, frac, capacity):
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
def _row(r):
    """Row of resource ``r`` in the kernels' per-resource arrays: ``r`` plus
    one padding row per 64 (and 4096, 262144) resources. Strictly increasing.
    Link numberings have power-of-two strides (a torus path visits links
    512 apart on 128x128), and entry updates that far apart hit addresses a
    multiple of 4 KiB apart: the CPU takes each load for a possible alias of
    the pending stores (4K aliasing) and the scatter runs 5x slower. The
    padding makes such strides odd multiples of the row size."""
    return r + (r >> 6) + (r >> 12) + (r >> 18)


@njit(**NUMPY_ERRORS)
def _remap(res, capacity):
    """``res`` in kernel rows (:func:`_row`), the number of rows and the
    capacity of each row (0 on padding rows). Call after the input check."""
    n_res = capacity.shape[0]
    n_rows = _row(n_res - 1) + 1 if n_res > 0 else 0
    rows = np.empty(res.shape[0], dtype=np.int32)
    for e in range(res.shape[0]):
        rows[e] = _row(res[e])
    cap = np.zeros(n_rows, dtype=np.float64)
    for r in range(n_res):
        cap[_row(r)] = capacity[r]
    return rows, n_rows, cap


@njit(**NUMPY_ERRORS)
def _transpose(flow_ptr, res, frac, n_res):
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


@njit(**NUMPY_ERRORS)
def _sift_down(heap_key, heap_res, size, pos):
    """Sift down in a 4-ary min-heap (children ``4 pos + 1 .. 4 pos + 4``):
    half the depth of a binary heap, and the four keys compared at each step
    share a cache line."""
    key = heap_key[pos]
    item = heap_res[pos]
    while True:
        first = 4 * pos + 1
        if first >= size:
            break
        child = first
        ck = heap_key[first]
        last = min(first + 4, size)
        for c in range(first + 1, last):
            kc = heap_key[c]
            if kc < ck:
                ck = kc
                child = c
        if ck >= key:
            break
        heap_key[pos] = ck
        heap_res[pos] = heap_res[child]
        pos = child
    heap_key[pos] = key
    heap_res[pos] = item


@njit(**NUMPY_ERRORS)
def _heapify(heap_key, heap_res, size):
    """Make ``heap_key[:size]`` (with ``heap_res``) a 4-ary min-heap."""
    for pos in range((size - 2) // 4, -1, -1):
        _sift_down(heap_key, heap_res, size, pos)


@njit(**NUMPY_ERRORS)
def _heap_pop(heap_key, heap_res, size):
    """Remove the top; returns the new size."""
    size -= 1
    if size > 0:
        heap_key[0] = heap_key[size]
        heap_res[0] = heap_res[size]
        _sift_down(heap_key, heap_res, size, np.int64(0))
    return size



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


@njit(**NUMPY_ERRORS)
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


@njit(**NUMPY_ERRORS)
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


@njit(**NUMPY_ERRORS)
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
    _heapify(heap_key, heap_res, size)

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
        if 2 * dead > size > _COMPACT_MIN:
            m = np.int64(0)
            for i in range(size):
                r = heap_res[i]
                if state[r, COUNT] > 0.0:
                    heap_key[m] = _level(state, r)
                    heap_res[m] = r
                    m += 1
            size = m
            _heapify(heap_key, heap_res, size)
            dead = 0
            continue
        r = heap_res[0]
        if state[r, COUNT] == 0.0:
            size = _heap_pop(heap_key, heap_res, size)
            dead -= 1
            continue
        lv = _level(state, r)
        if lv != heap_key[0]:  # stale lower bound: re-key and look again
            if np.isnan(lv):
                return STATUS_NONFINITE, heap
            heap_key[0] = lv
            _sift_down(heap_key, heap_res, size, np.int64(0))
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
        size = _heap_pop(heap_key, heap_res, size)
        while size > 0 and heap_key[0] <= thr:
            r2 = heap_res[0]
            if state[r2, COUNT] == 0.0:
                size = _heap_pop(heap_key, heap_res, size)
                dead -= 1
                continue
            lv2 = _level(state, r2)
            if lv2 <= thr:
                batch[n_batch] = r2
                n_batch += 1
                size = _heap_pop(heap_key, heap_res, size)
            else:
                heap_key[0] = lv2
                _sift_down(heap_key, heap_res, size, np.int64(0))
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
def _solve(flow_ptr, row_end, res, frac, tr, sub, n_sub, applied, rates, state, w_ref, cold,
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
        res_ptr, res_flow, res_frac = _transpose(flow_ptr, res, frac, state.shape[0])
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


# ---- restricted re-solves (see "Speed" above; the checks are in .bottlenecks)
#: re-solve rounds of one event before it falls back to re-solving every flow
#: at or above the finished rate
MAX_ROUNDS = 6
#: with ``resolve="auto"``: screened re-solves start at this event (a step
#: whose flows finish in a few events would not repay screening every
#: resource and copying every flow's candidate entries)
AUTO_START = 16
RESOLVE_AUTO = 0
RESOLVE_RESTRICTED = 1
RESOLVE_FULL = 2
RESOLVE_SCREENED = 3
#: names of the re-solve modes (:func:`solve_completion`'s ``resolve``)
RESOLVE_MODES = {"auto": RESOLVE_AUTO, "restricted": RESOLVE_RESTRICTED, "full": RESOLVE_FULL,
                 "screened": RESOLVE_SCREENED}


@njit(**NUMPY_ERRORS)
def _resource_state(capacity):
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
def _fill_workspace(n_res):
    """Scratch of :func:`_fill` for ``n_res`` resources: ``touched`` (one
    slot more: :func:`_gather` writes one past the resources it keeps),
    ``heap_key``, ``heap_res`` and ``batch``."""
    return (np.empty(n_res + 1, dtype=np.int32), np.empty(n_res, dtype=np.float64),
            np.empty(n_res, dtype=np.int32), np.empty(n_res, dtype=np.int32))


@njit(**NUMPY_ERRORS)
def _no_transpose():
    return (np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.float64), np.bool_(False))


@njit(**NUMPY_ERRORS)
def _with_transpose(tr, flow_ptr, res, frac, n_res):
    """``tr``, built now if it is not yet (:func:`_no_transpose`)."""
    if tr[3]:
        return tr
    res_ptr, res_flow, res_frac = _transpose(flow_ptr, res, frac, n_res)
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
    status = _check_inputs(flow_ptr, res, frac, capacity)
    if status != STATUS_OK:
        return rates, status
    if active.shape[0] != n_flows:
        return rates, STATUS_BAD_INPUT
    res, n_res, capacity = _remap(res, capacity)  # from here on: kernel rows
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
    state, w_ref, cold = _resource_state(capacity)
    touched, heap_key, heap_res, batch = _fill_workspace(n_res)
    applied = np.zeros(n_flows, dtype=np.float64)
    row_end = flow_ptr[1:]  # (read only: every entry)
    status, _, _, _ = _solve(flow_ptr, row_end, res, frac, _no_transpose(), sub, n_sub, applied,
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


@njit(**NUMPY_ERRORS)
def _ingress_capacity(base, fan_in, w_t, eps):
    """GenModel eq. 10: ``1 / beta' = 1 / (1 / base + max(w - w_t, 0) eps)``;
    exactly ``base`` when the resource's incast is off (``eps == 0``)."""
    excess = fan_in - w_t
    if excess > 0.0 and eps > 0.0:
        return 1.0 / (1.0 / base + excess * eps)
    return base


@njit(**NUMPY_ERRORS)
def completion_kernel(flow_ptr, res, frac, capacity, n_plain, w_t, eps, flow_bytes,
                      resolve=RESOLVE_AUTO):
    """:func:`completion_tiers_kernel` with the same incast terms (scalars
    ``w_t`` and ``eps``) on every ingress resource."""
    n_ingress = max(capacity.shape[0] - n_plain, 0)
    rate0, finish, _moved, status = completion_tiers_kernel(
        flow_ptr, res, frac, capacity, n_plain, np.full(n_ingress, np.float64(w_t)),
        np.full(n_ingress, np.float64(eps)), flow_bytes, resolve,
        np.zeros(max(flow_ptr.shape[0] - 1, 0), dtype=np.bool_))
    return rate0, finish, status


@njit(**NUMPY_ERRORS)
def completion_tiers_kernel(flow_ptr, res, frac, capacity, n_plain, w_t, eps, flow_bytes,
                            resolve, persistent):
    """Event-driven max-min completion of flows that all start at ``t = 0``.

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
    resolve : int
        Re-solves after an event: ``RESOLVE_FULL`` (every flow at or above
        the finished rate, over all its entries), ``RESOLVE_SCREENED`` (the
        same flows over their entries on candidate resources, from the second
        event on), ``RESOLVE_AUTO`` (full, then screened from event
        ``AUTO_START`` on) or ``RESOLVE_RESTRICTED`` (only the flows a finish
        reaches, checked by their bottlenecks). All four are exact.
    persistent : bool[F]
        Flows that never finish (steady background traffic): they take part
        in every solve, their bytes are ignored, and the run ends when every
        other flow has finished (after the ``t = 0`` solve when there is
        none). A persistent flow with rate 0 does not stall the run.

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
    rate0 = np.zeros(max(n_flows, 0), dtype=np.float64)
    finish = np.full(max(n_flows, 0), np.inf)
    moved = np.zeros(max(n_flows, 0), dtype=np.float64)
    status = _check_inputs(flow_ptr, res, frac, capacity)
    if status != STATUS_OK:
        return rate0, finish, moved, status
    if (flow_bytes.shape[0] != n_flows or persistent.shape[0] != n_flows or n_plain < 0
            or n_plain > n_res):
        return rate0, finish, moved, STATUS_BAD_INPUT
    for f in range(n_flows):
        b = flow_bytes[f]
        if not np.isfinite(b):
            return rate0, finish, moved, STATUS_NONFINITE
        if b < 0.0:
            return rate0, finish, moved, STATUS_BAD_INPUT
    if w_t.shape[0] != n_res - n_plain or eps.shape[0] != n_res - n_plain:
        return rate0, finish, moved, STATUS_BAD_INPUT
    incast = False
    for i in range(n_res - n_plain):
        if np.isnan(w_t[i]) or not np.isfinite(eps[i]):
            return rate0, finish, moved, STATUS_NONFINITE
        if eps[i] < 0.0:
            return rate0, finish, moved, STATUS_BAD_INPUT
        incast |= eps[i] > 0.0 and np.isfinite(w_t[i])
    # from here on resources are kernel rows (_row), capacity is per row, and
    # so are the incast terms (padding and plain rows: off)
    first_ingress = n_plain
    n_plain = _row(n_plain)
    res, n_res, capacity = _remap(res, capacity)
    row_w_t = np.full(n_res, np.inf)
    row_eps = np.zeros(n_res, dtype=np.float64)
    for i in range(w_t.shape[0]):
        row_w_t[_row(first_ingress + i)] = w_t[i]
        row_eps[_row(first_ingress + i)] = eps[i]

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

    state, w_ref, cold = _resource_state(capacity)
    fan_in = np.zeros(n_res, dtype=np.int64)
    if incast:
        for i in range(n_act):
            f = act[i]
            for e in range(flow_ptr[f], flow_ptr[f + 1]):
                if res[e] >= n_plain:
                    fan_in[res[e]] += 1
        for r in range(n_plain, n_res):
            if fan_in[r] > 0:  # (padding rows have none)
                cold[r, CAP] = _ingress_capacity(capacity[r], fan_in[r], row_w_t[r],
                                                  row_eps[r])
    state[:, RESID] = cold[:, CAP]

    rates = np.zeros(max(n_flows, 0), dtype=np.float64)
    # rate at which each flow is counted in RESID (0 until it is)
    applied = np.zeros(max(n_flows, 0), dtype=np.float64)
    remaining = flow_bytes.copy()
    t_fin = np.empty(max(n_flows, 0), dtype=np.float64)
    flow_mark = np.zeros(max(n_flows, 0), dtype=np.int64)
    sub = np.empty(max(n_flows, 0), dtype=np.int32)
    done = np.empty(max(n_flows, 0), dtype=np.int32)
    touched, heap_key, heap_res, batch = _fill_workspace(n_res)
    tr = _no_transpose()
    # end of each flow's entries the fill walks (all of them unless screened)
    row_end = flow_ptr[1:].copy()

    # screened re-solves (after event scr_ev's solve; allocated then): whether a
    # resource is a candidate, each flow's lazy rate, resources to admit
    scr_ev = -1
    if resolve == RESOLVE_SCREENED:
        scr_ev = 1
    elif resolve == RESOLVE_AUTO:
        scr_ev = AUTO_START - 1
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

    # restricted re-solves (from event on_ev on; allocated then): each flow's
    # recorded bottleneck resource, the event in which a flow was last
    # re-solved and a resource last changed or scanned, the rate a re-solved
    # flow had before the event
    restricted = resolve == RESOLVE_RESTRICTED
    on_ev = 2 if restricted else -1
    bneck = np.full(0, UNKNOWN, dtype=np.int32)
    in_s = np.zeros(0, dtype=np.int64)
    stamp = np.zeros(0, dtype=np.int64)
    seen = np.zeros(0, dtype=np.int64)
    old_rate = np.zeros(0, dtype=np.float64)
    viol = np.empty(0, dtype=np.int32)

    t = 0.0
    mark = 0
    ev = 0
    max_passes = np.int64(PASS_LIMIT)
    lam0 = 0.0
    while n_act > 0:
        ev += 1
        if ev > n_flows + 2:
            return rate0, finish, moved, STATUS_ITER_LIMIT
        keep_below = lam0 - lam0 * KEEP_TOL
        if ev == on_ev:
            bneck = np.full(n_flows, UNKNOWN, dtype=np.int32)
            in_s = np.zeros(n_flows, dtype=np.int64)
            stamp = np.zeros(n_res, dtype=np.int64)
            seen = np.zeros(n_res, dtype=np.int64)
            old_rate = np.zeros(n_flows, dtype=np.float64)
            viol = np.empty(n_flows, dtype=np.int32)
        if ev == 1 or not restricted:
            # every flow whose rate may change: all of them at first, then
            # those at or above the finished rate, and the flows a last pass
            # left out of RESID (applied 0; they are at the top level anyway)
            full = True
            n_sub = np.int64(0)
            for i in range(n_act):
                f = act[i]
                if ev == 1 or rates[f] >= keep_below or applied[f] != rates[f]:
                    sub[n_sub] = f
                    n_sub += 1
            if screened:
                for i in range(n_sub):
                    in_sub[sub[i]] = ev
        else:
            # start from the flows whose bottleneck the finished flows
            # changed (or that have none recorded; a last pass may have
            # left loads out of RESID: count them first)
            apply_loads(act, n_act, flow_ptr, res, frac, rates, applied, state)
            tr = _with_transpose(tr, flow_ptr, res, frac, n_res)
            full = False
            n_sub = check_bottlenecks(act, n_act, ev, in_s, stamp, bneck, flow_ptr, res, rates,
                                       state, cold, tr[0], tr[1], sub)
        if not full:
            for i in range(n_sub):
                join_resolved(sub[i], ev, in_s, old_rate, rates)
            n_sub = add_dependents(sub, n_sub, np.int64(0), ev, keep_below, in_s, seen, bneck, old_rate,
                                    rates, flow_ptr, res, tr[0], tr[1], state, cold)
        rounds = 0
        while n_sub > 0:
            rounds += 1
            mark += 1
            for i in range(n_sub):
                flow_mark[sub[i]] = mark
            status, tr, heap, n_touched = _solve(flow_ptr, row_end, pool_res, pool_frac, tr, sub,
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
                break
            if full:
                # exact without a check; bottlenecks (when kept) are looked
                # up when the next event needs them
                if bneck.shape[0] > 0:
                    for i in range(n_sub):
                        bneck[sub[i]] = UNKNOWN
                break
            # the resources of the flows whose rate changed have changed
            apply_loads(sub, n_sub, flow_ptr, res, frac, rates, applied, state)
            for i in range(n_sub):
                f = sub[i]
                if rates[f] != old_rate[f]:
                    for e in range(flow_ptr[f], flow_ptr[f + 1]):
                        stamp[res[e]] = ev
            n_viol = check_bottlenecks(act, n_act, ev, in_s, stamp, bneck, flow_ptr, res, rates,
                                        state, cold, tr[0], tr[1], viol)
            if n_viol == 0:
                break
            n_new = add_violators(sub, n_sub, viol, n_viol, ev, in_s, old_rate, rates,
                                   flow_ptr, res, tr[0], tr[1], state, cold)
            n_sub = add_dependents(sub, n_sub + n_new, n_sub, ev, keep_below, in_s, seen,
                                    bneck, old_rate, rates, flow_ptr, res, tr[0], tr[1], state,
                                    cold)
            if n_new == 0 or rounds >= MAX_ROUNDS:
                full = True
                n_sub = fall_back(act, n_act, ev, keep_below, in_s, old_rate, rates, stamp,
                                   bneck, flow_ptr, res, sub)
        if ev == 1:
            for i in range(n_act):
                rate0[act[i]] = rates[act[i]]
        if n_finite == 0:
            break  # only persistent flows are left: the run is over
        if ev == scr_ev:
            # screen from the next event on, while the rates are max-min fair
            # (every flow's bottleneck is saturated, so it stays a candidate)
            apply_loads(act, n_act, flow_ptr, res, frac, rates, applied, state)
            tr = _with_transpose(tr, flow_ptr, res, frac, n_res)
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

        # --- next event
        t_next = np.inf
        for i in range(n_act):
            f = act[i]
            x = rates[f]
            if not np.isfinite(x):
                return rate0, finish, moved, STATUS_NONFINITE
            if persistent[f]:
                continue
            rem = remaining[f]
            if rem <= 0.0:
                tf = t
            elif x > 0.0:
                tf = t + rem / x
                if not np.isfinite(tf):
                    return rate0, finish, moved, STATUS_STALLED
            else:
                return rate0, finish, moved, STATUS_STALLED
            t_fin[f] = tf
            t_next = min(t_next, tf)
        thr = t_next + t_next * TIE_TOL
        dt = t_next - t
        lam0 = np.inf
        m = np.int64(0)
        n_done = 0
        for i in range(n_act):
            f = act[i]
            x = rates[f]
            if persistent[f]:
                moved[f] += x * dt
                act[m] = f
                m += 1
            elif t_fin[f] <= thr:
                finish[f] = t_next
                remaining[f] = 0.0
                lam0 = min(lam0, x)
                done[n_done] = f
                n_done += 1
            else:
                rem = remaining[f] - x * dt
                remaining[f] = max(0.0, rem)
                act[m] = f
                m += 1
        n_act = m
        n_finite -= n_done
        t = t_next
        if n_finite == 0:
            break
        # release the finished flows' load; their receivers' fan-in drops;
        # their resources have changed (for the next event's bottleneck check)
        track = restricted and stamp.shape[0] > 0
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
                if track:
                    stamp[r] = ev + 1
                if incast and r >= n_plain:
                    fan_in[r] -= 1
                    new_cap = _ingress_capacity(capacity[r], fan_in[r], row_w_t[r], row_eps[r])
                    grown = new_cap - cold[r, CAP]
                    if screened and cand[r] == 0:
                        grown *= SCREEN_SHARE  # (its room)
                    state[r, RESID] += grown
                    cold[r, CAP] = new_cap
    return rate0, finish, moved, STATUS_OK


@njit(**NUMPY_ERRORS)
def _append_ingress(flow_ptr, res, frac, flow_dst, n_plain):
    """Copy of the CSR with one entry (fraction 1) on resource
    ``n_plain + flow_dst[f]`` appended to every non-empty flow."""
    n_flows = flow_ptr.shape[0] - 1
    n_nonempty = 0
    for f in range(n_flows):
        if flow_ptr[f + 1] > flow_ptr[f]:
            n_nonempty += 1
    n_entries = res.shape[0] + n_nonempty
    new_ptr = np.empty(n_flows + 1, dtype=np.int64)
    new_res = np.empty(n_entries, dtype=np.int32)
    new_frac = np.empty(n_entries, dtype=np.float64)
    k = 0
    new_ptr[0] = 0
    for f in range(n_flows):
        a, b = flow_ptr[f], flow_ptr[f + 1]
        for e in range(a, b):
            new_res[k] = res[e]
            new_frac[k] = frac[e]
            k += 1
        if b > a:
            new_res[k] = n_plain + flow_dst[f]
            new_frac[k] = 1.0
            k += 1
        new_ptr[f + 1] = k
    return new_ptr, new_res, new_frac


@njit(**NUMPY_ERRORS)
def _first_bad_entry(res, frac, n_links):
    """Index of the first entry with a link outside ``[0, n_links)`` or a
    fraction not in ``(0, 1]`` (NaN included), or -1."""
    for e in range(res.shape[0]):
        a = frac[e]
        if res[e] < 0 or res[e] >= n_links or not (a > 0.0 and a <= 1.0):
            return e
    return -1


# --------------------------------------------------------------------------
# checking layer
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Solution:
    """Result of :func:`solve_completion`.

    Attributes
    ----------
    rate0 : float64[F]
        Rate of each flow at ``t = 0``, bytes/s (``+inf`` for an empty path).
    finish : float64[F]
        Seconds from 0 to each flow's last byte (fluid time, no latency).
    status : int
        ``STATUS_OK`` or the kernel's failure code (see ``STATUS_NAMES``).
    moved : float64[F] or None
        With ``persistent``: bytes each persistent flow moved from 0 until the
        last other flow finished (0 for the others); else None.
    """

    rate0: np.ndarray
    finish: np.ndarray
    status: int
    moved: np.ndarray | None = None

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK


def _int_array(name, value, dtype):
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name}: expected an integer array, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=dtype)


def _float_array(name, value, length=None, what="values"):
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if arr.size and not (np.issubdtype(arr.dtype, np.floating)
                         or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name}: expected a float array, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name}: expected {length} {what}, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name}[{bad}] = {arr[bad]} is not finite")
    if np.any(arr < 0):
        bad = int(np.flatnonzero(arr < 0)[0])
        raise ValueError(f"{name}[{bad}] = {arr[bad]} is negative")
    return arr


def _check_routes(routes, n_links):
    """Validated (flow_ptr int64, link int32, frac float64) of ``routes``."""
    for attr in ("flow_ptr", "link", "frac"):
        if not hasattr(routes, attr):
            raise ValueError(f"routes: expected a Routes object, missing attribute {attr!r}")
    flow_ptr = _int_array("routes.flow_ptr", routes.flow_ptr, np.int64)
    link = _int_array("routes.link", routes.link, np.int32)
    frac = np.asarray(routes.frac)
    if frac.ndim != 1:
        raise ValueError(f"routes.frac: expected a 1-D array, got shape {frac.shape}")
    frac = np.ascontiguousarray(frac, dtype=np.float64)
    if flow_ptr.shape[0] < 1:
        raise ValueError("routes.flow_ptr: must have F+1 >= 1 entries")
    if link.shape[0] != frac.shape[0]:
        raise ValueError(f"routes: link has {link.shape[0]} entries but frac has "
                         f"{frac.shape[0]}")
    if flow_ptr[0] != 0 or flow_ptr[-1] != link.shape[0]:
        raise ValueError(f"routes.flow_ptr: must start at 0 and end at the number of entries "
                         f"({link.shape[0]}), got {flow_ptr[0]} .. {flow_ptr[-1]}")
    if np.any(np.diff(flow_ptr) < 0):
        raise ValueError("routes.flow_ptr: must be non-decreasing")
    # the entries themselves are checked by the kernel, in its first pass
    return flow_ptr, link, frac


def _raise_bad_entry(link, frac, n_links):
    """Raise ``ValueError`` naming the first entry with a link outside
    ``[0, n_links)`` or a fraction not in ``(0, 1]``, if there is one."""
    bad = _first_bad_entry(link, frac, n_links)
    if bad >= 0:
        if not (0 <= link[bad] < n_links):
            raise ValueError(f"routes.link[{bad}] = {link[bad]} is not a link id in "
                             f"[0, {n_links})")
        raise ValueError(f"routes.frac[{bad}] = {frac[bad]} is not in (0, 1]")


def max_min_rates(routes, link_capacity, active=None) -> np.ndarray:
    """Max-min fair rates of flows routed on links (one static solve).

    Parameters
    ----------
    routes : Routes
        Fractional paths of F flows over L links.
    link_capacity : float64[L]
        Capacity of each link, bytes/s, finite and ``>= 0``.
    active : bool[F], optional
        Flows taking part (default: all); the others get rate 0.

    Returns
    -------
    float64[F]
        Rate of each flow, bytes/s (``+inf`` for an active flow with an empty
        path, 0 for an inactive one).

    Raises
    ------
    ValueError
        Bad arguments (shapes, dtypes, non-finite or negative values).
    SolverError
        The kernel returned a bad status (e.g. a flow crosses a zero-capacity
        link and cannot progress).
    """
    link_capacity = _float_array("link_capacity", link_capacity, what="links")
    flow_ptr, link, frac = _check_routes(routes, link_capacity.shape[0])
    n_flows = flow_ptr.shape[0] - 1
    if active is None:
        active = np.ones(n_flows, dtype=np.bool_)
    else:
        active = np.asarray(active)
        if active.shape != (n_flows,):
            raise ValueError(f"active: expected shape ({n_flows},), got {active.shape}")
        if active.dtype != np.bool_:
            raise ValueError(f"active: expected a bool array, got dtype {active.dtype}")
        active = np.ascontiguousarray(active)
    rates, status = maxmin_rates_kernel(flow_ptr, link, frac, link_capacity, active)
    if status in (STATUS_BAD_INPUT, STATUS_NONFINITE):
        _raise_bad_entry(link, frac, link_capacity.shape[0])
    if status != STATUS_OK:
        raise SolverError(f"max-min solve failed: status {status} "
                          f"({STATUS_NAMES.get(status, '?')}), {n_flows} flows, "
                          f"{link_capacity.shape[0]} links")
    return rates


def _incast_terms(incast_threshold, incast_slope) -> tuple[np.ndarray, np.ndarray]:
    """The incast classes' ``(w_t[K], eps[K])`` (``K >= 1``) from scalars or
    equal-length 1-D arrays; ``ValueError`` naming a bad value."""
    w_t = np.atleast_1d(np.asarray(incast_threshold, dtype=np.float64))
    eps = np.atleast_1d(np.asarray(incast_slope, dtype=np.float64))
    if w_t.ndim != 1 or eps.ndim != 1 or len(w_t) != len(eps) or len(w_t) == 0:
        raise ValueError("incast_threshold and incast_slope: expected two numbers or two "
                         f"1-D arrays of equal length >= 1 (one per incast class), got shapes "
                         f"{w_t.shape} and {eps.shape}")
    bad = np.flatnonzero(np.isnan(w_t) | (w_t < 0))
    if len(bad):
        raise ValueError(f"incast_threshold: must be >= 0 (or inf), got {w_t[bad[0]]!r}"
                         + (f" (class {bad[0]})" if len(w_t) > 1 else ""))
    bad = np.flatnonzero(~np.isfinite(eps) | (eps < 0))
    if len(bad):
        raise ValueError(f"incast_slope: must be finite and >= 0, got {eps[bad[0]]!r}"
                         + (f" (class {bad[0]})" if len(eps) > 1 else ""))
    return w_t, eps


def _ingress_problem(flow_ptr, link, frac, link_capacity, flow_dst, flow_class,
                     ingress_capacity, w_t, eps):
    """The CSR, capacities and per-ingress-resource terms with the ingress
    resources appended (ids from ``len(link_capacity)`` on).

    One class: resource ``L + v`` for receiver ``v`` (every vertex has one,
    the layout the solver always had). Several: one resource per
    ``(class, receiver)`` pair that some non-empty flow has, numbered in the
    order of ``class * N + receiver``; its capacity is the receiver's base
    capacity, its terms the class's."""
    n_links = link_capacity.shape[0]
    if len(w_t) == 1:
        flow_ptr, link, frac = _append_ingress(flow_ptr, link, frac, flow_dst, n_links)
        n_vertices = ingress_capacity.shape[0]
        return (flow_ptr, link, frac, np.concatenate([link_capacity, ingress_capacity]),
                np.full(n_vertices, w_t[0]), np.full(n_vertices, eps[0]))
    n_vertices = ingress_capacity.shape[0]
    nonempty = np.diff(flow_ptr) > 0
    key = flow_class[nonempty] * n_vertices + flow_dst[nonempty]
    n_keys = len(w_t) * n_vertices
    if n_keys <= 2 * len(key) + (1 << 16):
        # mark the pairs in use and number them in key order: O(F + K·N),
        # no sort (np.unique's would be a third of a 1M-flow step's set-up);
        # only when the marks take no more memory than a few arrays of F
        used = np.zeros(n_keys, dtype=np.bool_)
        used[key] = True
        pairs = np.flatnonzero(used)
        index = (np.cumsum(used) - 1)[key]
    else:
        pairs, index = np.unique(key, return_inverse=True)
    ingress_id = np.zeros(len(flow_dst), dtype=np.int64)
    ingress_id[nonempty] = index.reshape(-1)
    flow_ptr, link, frac = _append_ingress(flow_ptr, link, frac, ingress_id, n_links)
    cls = pairs // n_vertices
    return (flow_ptr, link, frac,
            np.concatenate([link_capacity, ingress_capacity[pairs % n_vertices]]),
            w_t[cls], eps[cls])


def solve_completion(routes, link_capacity, flow_bytes, *, flow_dst=None,
                     ingress_capacity=None, incast_threshold=float("inf"),
                     incast_slope=0.0, flow_class=None, resolve="auto",
                     persistent=None) -> Solution:
    """Event-driven max-min completion times of flows that all start at 0.

    Parameters
    ----------
    routes : Routes
        Fractional paths of F flows over L links.
    link_capacity : float64[L]
        Capacity of each link, bytes/s, finite and ``>= 0``.
    flow_bytes : float64[F]
        Bytes of each flow, finite and ``>= 0``.
    flow_dst : int[F], optional
        Receiving vertex of each flow, in ``[0, N)``; needed when incast is on.
    ingress_capacity : float64[N], optional
        Base capacity (bytes/s, ``1 / beta``) of each vertex's ingress
        resource(s); needed when incast is on.
    incast_threshold : float or float64[K]
        GenModel's ``w_t``: fan-in a receiver takes without penalty; one per
        incast class (see ``flow_class``).
    incast_slope : float or float64[K]
        GenModel's ``eps``: extra seconds per byte per flow above ``w_t``,
        one per class. A class's incast is off when its slope is 0 or its
        threshold ``inf``; incast is on when any class's is.
    flow_class : int[F], optional
        Incast class of each flow, in ``[0, K)`` (default: all 0). Each
        receiver gets one ingress resource per class of the flows into it,
        with that class's terms and ``w`` = the active flows of that class
        into it (:meth:`flowemu.topology.Topology.flow_incast_class`).
    resolve : {"auto", "screened", "full", "restricted"}
        Which flows an event re-solves, and over which resources: every flow
        at or above the finished rate over all its resources (``"full"``) or
        over the (nearly) saturated ones only, the others proven below
        capacity by a drift bound (``"screened"``); ``"auto"`` (the default)
        is full for the first events and screened from event ``AUTO_START``
        on; ``"restricted"`` re-solves only the flows a finish can reach,
        checked by their bottlenecks. Results are the same (to rounding);
        only the time differs.
    persistent : bool[F], optional
        Flows that never finish (steady background traffic, each with a
        non-empty path; their ``flow_bytes`` are ignored): they share every
        solve, and the run ends when every other flow has finished. Their
        ``finish`` is ``+inf``; ``Solution.moved`` gives the bytes each moved
        until then. Default: none (and ``moved`` is None).

    Returns
    -------
    Solution
        ``rate0`` float64[F], ``finish`` float64[F] and the kernel's status;
        a bad status is returned, not raised (the caller names the
        configuration in its ``SolverError``).

    Raises
    ------
    ValueError
        Bad arguments (shapes, dtypes, non-finite or negative values, missing
        incast inputs).
    """
    if resolve not in RESOLVE_MODES:
        raise ValueError(f"resolve: {resolve!r} is not one of {sorted(RESOLVE_MODES)}")
    link_capacity = _float_array("link_capacity", link_capacity, what="links")
    n_links = link_capacity.shape[0]
    flow_ptr, link, frac = _check_routes(routes, n_links)
    n_flows = flow_ptr.shape[0] - 1
    flow_bytes = _float_array("flow_bytes", flow_bytes, n_flows, what="flows")
    w_t, eps = _incast_terms(incast_threshold, incast_slope)
    keep = _persistent_mask(persistent, flow_ptr)
    capacity = link_capacity
    n_ingress = 0
    if np.any((eps > 0) & np.isfinite(w_t)):
        if flow_dst is None or ingress_capacity is None:
            raise ValueError("flow_dst and ingress_capacity are required when incast is on "
                             f"(incast_threshold={_terms_text(w_t)}, "
                             f"incast_slope={_terms_text(eps)})")
        ingress_capacity = _float_array("ingress_capacity", ingress_capacity, what="vertices")
        n_vertices = ingress_capacity.shape[0]
        flow_dst = _int_array("flow_dst", flow_dst, np.int64)
        if flow_dst.shape[0] != n_flows:
            raise ValueError(f"flow_dst: expected {n_flows} flows, got {flow_dst.shape[0]}")
        if n_flows and (flow_dst.min() < 0 or flow_dst.max() >= n_vertices):
            bad = int(np.flatnonzero((flow_dst < 0) | (flow_dst >= n_vertices))[0])
            raise ValueError(f"flow_dst[{bad}] = {flow_dst[bad]} is not a vertex in "
                             f"[0, {n_vertices})")
        if flow_class is None:
            flow_class = np.zeros(n_flows, dtype=np.int64)
        flow_class = _int_array("flow_class", flow_class, np.int64)
        if flow_class.shape[0] != n_flows:
            raise ValueError(f"flow_class: expected {n_flows} flows, got {flow_class.shape[0]}")
        if n_flows and (flow_class.min() < 0 or flow_class.max() >= len(w_t)):
            bad = int(np.flatnonzero((flow_class < 0) | (flow_class >= len(w_t)))[0])
            raise ValueError(f"flow_class[{bad}] = {flow_class[bad]} is not an incast class in "
                             f"[0, {len(w_t)})")
        # an out-of-range link id must not pass for an ingress resource
        _raise_bad_entry(link, frac, n_links)
        flow_ptr, link, frac, capacity, w_t, eps = _ingress_problem(
            flow_ptr, link, frac, link_capacity, flow_dst, flow_class, ingress_capacity, w_t,
            eps)
        n_ingress = len(w_t)
    rate0, finish, moved, status = completion_tiers_kernel(
        flow_ptr, link, frac, capacity, n_links, w_t[:n_ingress], eps[:n_ingress], flow_bytes,
        RESOLVE_MODES[resolve], keep)
    if status in (STATUS_BAD_INPUT, STATUS_NONFINITE):
        _raise_bad_entry(link, frac, n_links)
    return Solution(rate0=rate0, finish=finish, status=int(status),
                    moved=None if persistent is None else moved)


def _persistent_mask(persistent, flow_ptr) -> np.ndarray:
    """``persistent`` as a checked bool[F] (all False when None)."""
    n_flows = flow_ptr.shape[0] - 1
    if persistent is None:
        return np.zeros(n_flows, dtype=np.bool_)
    mask = np.asarray(persistent)
    if mask.shape != (n_flows,) or mask.dtype != np.bool_:
        raise ValueError(f"persistent: expected a bool array of shape ({n_flows},), got "
                         f"{mask.dtype} {mask.shape}")
    empty = np.flatnonzero(mask & (flow_ptr[1:] == flow_ptr[:-1]))
    if len(empty):
        raise ValueError(f"persistent[{int(empty[0])}]: a persistent flow needs a non-empty "
                         "path (it would get an infinite rate)")
    return np.ascontiguousarray(mask)


def _terms_text(values: np.ndarray) -> str:
    """One number for one class, else the list (for messages)."""
    return repr(float(values[0])) if len(values) == 1 else repr(values.tolist())
