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

Incast (GenModel: Xiong et al., "Revisiting the Time Cost Model of AllReduce", §3.2, eq. 7-10): a
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
A step whose flows all have one size, without persistent flows (a
collective's step), needs no events: no flow ever changes rate, since a
finish moves no rate below the finished flow's and equal sizes finish
fastest first, so each flow ends at ``bytes / rate0``
(:func:`flowemu.kernels.completion.finish_in_rate_order`; "auto" takes it).

Otherwise two exact event-driven solvers; :func:`solve_completion` picks one
from the problem itself (``method="auto"``), never from the topology: the ``t = 0``
solve (the progressive fill of :mod:`.fill`, fast where a step's flows share
few levels) shows when the flows would finish; a step whose flows finish in
at most ``BULK_EVENTS`` groups (a collective's step, where a finish changes
most rates) goes on with the screened re-solves, one with more (random
traffic, background load, tapered trees) with the incremental solver when
the flows that finish (not the persistent ones) have at most
``SCREEN_ENTRIES`` route entries on average.

* **incremental** (:mod:`.incremental`, ``incremental_completion_kernel``):
  each flow is held by the resource that froze it; after an event only what
  the finished flows reach is filled again -- the flows their resources held
  (when those have room to spare at the held level), the settled flows a
  refilled resource can no longer carry, and so on, in level order from an
  indexed heap. Its work is proportional to the entries of the flows whose
  rate changes. Above ``LAZY_ENTRIES`` entries a flow it also *screens*:
  after the ``t = 0`` fill each flow is counted at a lazy rate on the
  resources far from capacity, which the fill then never touches; a rising
  flow that passes ``1 + DRIFT`` times its lazy rate is counted again there
  (a drift event in the same heap), and a resource that may come near
  capacity is admitted with its exact load. With fewer entries it starts to
  screen between two events once the events so far have moved more than
  ``SWITCH_CHANGES`` rates each (after ``SWITCH_EVENTS`` events at least):
  a measurement of the problem, not of its topology. In ``"auto"``, once
  they have moved more than ``BULK_SHARE`` of all the flows' rates each
  (after ``BULK_AFTER`` events), it stops and the screened re-solves go on
  from that time with the bytes left (a tree's root couples every flow:
  following each change costs more than re-solving in bulk). While it
  screens, it looks at its pools each time its fills have walked
  ``RESCREEN_WALK`` times as many entries as the problem has entries and
  resources, and screens again from the loads then if more than
  ``RESCREEN_STALE`` of the candidates' entries lie on resources now far
  from capacity (a collective's step under a background load saturates
  every link at ``t = 0``; once most of its flows have finished, the
  background's long routes cross few links near capacity). Used up to
  ``SCREEN_ENTRIES`` entries a flow that finishes (single paths, the fat
  tree's reduced problem, HyperX, Dragonfly, tori with hashed or
  dimension-order paths up to ~30 hops; with those, a background of split
  routes).
* **screened** (:mod:`.completion`, ``screened_completion_kernel``): every
  flow at or above the finished rate is re-solved by the progressive fill of
  :mod:`.fill` (only those can change: progressive filling below the finished
  rate ``lambda0`` is unchanged, because every resource a finished flow
  crosses saturates at a level at least the flow's rate), over all its
  entries for the first events and then over its entries on *candidate*
  resources only, the others proven below capacity by a drift bound (the
  proofs are in :mod:`.screening`). Used above ``SCREEN_ENTRIES`` entries a
  flow: ECMP split routes on tori cross hundreds of links a flow, and a
  finish changes so many rates by so little that re-solving every flow
  above the finished rate in bulk costs less than following each change.

Measured on random permutations (each flow its own finish time; 2-core VM,
1 GiB copy ~85 ms), incremental against screened: ``fattree:k=32`` with
``dmodk`` 18 ms against 3.5 s, ``torus:16x16x16`` hashed (12 entries) 44 ms
against 0.80 s, ``torus:32x32x16`` hashed (20) 1.4 s against 14.8 s,
``torus:64x64`` hashed (32) 0.75 s against 0.64 s, split routes on
``torus:32x32`` (160) 0.21 s against 63 ms. Both give the same rates (to
rounding), which the tests check against the oracle and each other.

The fill keeps weights as an unevaluated double-double sum (error-free
two-sum updates): on ECMP routes a resource carries fractions from 0.5 down
to 1e-15 and below, and once the big ones have frozen, a plain running sum
would leave the small ones nothing but rounding error (negative weights,
zero rates). Resources are addressed through padded rows
(:func:`padded_row`) so that power-of-two link strides do not make every
entry update a 4K-aliasing stall.

Layers
------
``maxmin_rates_kernel`` and the two completion kernels take arrays only, never
raise on data and return a status code; :func:`max_min_rates`,
:func:`solve_completion` and :func:`solve_dataflow` have their arguments
checked and the ingress entries built by :mod:`.problem`, call the kernels
and name a bad status. The completion kernels take the incast terms per
ingress resource.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import SolverError
from .completion import (
    SCREEN_START,
    STATUS_HANDOFF,
    screened_completion_kernel,
)
from .dataflow import dataflow_kernel
from .fill import (
    STATUS_BAD_INPUT,
    STATUS_NAMES,
    STATUS_NONFINITE,
    STATUS_OK,
    maxmin_rates_kernel,
)
from .incremental import STATUS_BULK, incremental_completion_kernel, incremental_events
from .problem import (
    check_routes,
    float_array,
    int_array,
    prepared_problem,
    raise_bad_entry,
    release_times,
)

#: mean route entries a flow that finishes above which
#: :func:`solve_completion` uses the screened re-solves (see "Speed" above)
SCREEN_ENTRIES = 30
#: mean route entries a flow above which the incremental solver screens:
#: it counts flows lazily on the resources far from capacity
LAZY_ENTRIES = 8
#: ... and below which it starts to once ``SWITCH_EVENTS`` events or more
#: have changed more than ``SWITCH_CHANGES`` rates an event on average
#: (:func:`flowemu.kernels.incremental.moved_enough`; a random permutation
#: with mixed sizes on fattree:k=32,taper=2, split: ~220 an event; with
#: dmodk routes: ~1)
SWITCH_EVENTS = 32
SWITCH_CHANGES = 16.0
#: in "auto", the incremental solver hands a step on to the screened
#: re-solves once ``BULK_AFTER`` events or more have moved the rates of more
#: than ``BULK_SHARE`` of the flows that finish, an event on average (a
#: random permutation on tree:32x32x16: ~21 % of them, where the bulk
#: re-solves take 6.2 s and following each change 10.5 s; on
#: fattree:k=32,taper=2 with split routes ~3 %, 3.3 s against 0.83 s)
BULK_AFTER = 32
BULK_SHARE = 0.1
#: while it screens, the incremental solver looks at its pools each time its
#: fills have walked ``RESCREEN_WALK`` times all the route entries, and
#: screens again if more than ``RESCREEN_STALE`` of the candidates' entries
#: lie on resources now far from capacity (Swing's steps on torus:64x64
#: under perm:0.5: every link is saturated at t = 0 and ~4 % are near
#: capacity once most of the step's flows have finished)
RESCREEN_WALK = 0.25
RESCREEN_STALE = 0.5
#: the event-driven solvers (:func:`solve_completion`'s ``method``)
METHODS = ("auto", "incremental", "screened")

# --------------------------------------------------------------------------
# entry points
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
    link_capacity = float_array("link_capacity", link_capacity, what="links")
    flow_ptr, link, frac = check_routes(routes, link_capacity.shape[0])
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
        raise_bad_entry(link, frac, link_capacity.shape[0])
    if status != STATUS_OK:
        raise SolverError(f"max-min solve failed: status {status} "
                          f"({STATUS_NAMES.get(status, '?')}), {n_flows} flows, "
                          f"{link_capacity.shape[0]} links")
    return rates


def solve_completion(routes, link_capacity, flow_bytes, *, flow_dst=None,
                     ingress_capacity=None, incast_threshold=float("inf"),
                     incast_slope=0.0, flow_class=None, method="auto",
                     persistent=None, link_incast=None, counter=None) -> Solution:
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
    method : {"auto", "incremental", "screened"}
        The event-driven solver (see "Speed" in the module notes): the
        incremental one, the screened re-solves, or (``"auto"``, the default)
        the screened solver's ``t = 0`` solve, then the incremental solver for
        a step whose flows finish in more than ``BULK_EVENTS`` groups, where
        :func:`completion_method` allows it; flows all of one size without
        persistent ones end at the ``t = 0`` solve (none changes rate, see
        :func:`flowemu.kernels.completion.finish_in_rate_order`). Results
        are the same (to rounding); only the time differs.
    persistent : bool[F], optional
        Flows that never finish (steady background traffic, each with a
        non-empty path; their ``flow_bytes`` are ignored): they share every
        solve, and the run ends when every other flow has finished. Their
        ``finish`` is ``+inf``; ``Solution.moved`` gives the bytes each moved
        until then. Default: none (and ``moved`` is None).
    link_incast : (float64[L], float64[L]), optional
        GenModel's ``(w_t, eps)`` per link, for incast where flows converge
        (a switch's egress port): a link with ``eps > 0`` and a finite
        ``w_t`` has capacity ``1 / (1 / c + max(w - w_t, 0) * eps)``, ``w``
        the active flows crossing it. Default: none.
    counter : int64[1], optional
        The flows the events finish are added to it as they finish (a
        progress display reads it while the solve runs:
        :func:`flowemu.core.progress.counting`).

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
    if method not in METHODS:
        raise ValueError(f"method: {method!r} is not one of {list(METHODS)}")
    flow_ptr, link, frac, capacity, n_plain, w_t, eps, n_links, flow_bytes, keep = prepared_problem(
        routes, link_capacity, flow_bytes, flow_dst, ingress_capacity, incast_threshold,
        incast_slope, flow_class, persistent, link_incast)
    counts = np.diff(flow_ptr)   # (once: both choices below read them)
    lazy = _screens(*_entries(counts))
    switch_after = -1 if lazy else SWITCH_EVENTS
    rate0, finish, moved, status = _completion(
        method, flow_ptr, link, frac, capacity, n_plain, w_t, eps, flow_bytes, keep, counts,
        lazy, switch_after, _counter(counter))
    if status in (STATUS_BAD_INPUT, STATUS_NONFINITE):
        raise_bad_entry(link, frac, n_links)
    return Solution(rate0=rate0, finish=finish, status=int(status),
                    moved=None if persistent is None else moved)


def _counter(counter):
    """The kernels' int64[1] count of finished flows: the caller's, or one
    of their own (the kernels always get an array: one compiled version)."""
    return np.zeros(1, dtype=np.int64) if counter is None else counter


def _completion(method, flow_ptr, link, frac, capacity, n_plain, w_t, eps, flow_bytes, keep,
                counts, lazy, switch_after, counter):
    """The kernels of :func:`solve_completion` for ``method``, on its
    prepared problem: ``(rate0, finish, moved, status)``."""
    if method == "incremental":
        rate0, finish, moved, status = incremental_completion_kernel(
            flow_ptr, link, frac, capacity, n_plain, w_t, eps,
            flow_bytes, keep, lazy, switch_after, SWITCH_CHANGES, RESCREEN_WALK,
            RESCREEN_STALE, counter)
    else:
        # "auto": the screened solver solves t = 0 and hands a step with many
        # finish times to the incremental one where the routes of the flows
        # that finish allow
        # ("auto": flows of one size without persistent ones end at the
        # t = 0 solve, completion.finish_in_rate_order says why)
        handoff = method == "auto" and \
            _method(*_entries(counts, keep), int(flow_ptr[-1])) == "incremental"
        rate0, finish, moved, status = screened_completion_kernel(
            flow_ptr, link, frac, capacity, n_plain, w_t, eps,
            flow_bytes, keep, SCREEN_START, handoff, method == "auto", counter)
        if status == STATUS_HANDOFF:
            state = np.empty(len(flow_bytes) + 1)
            rate0, finish, moved, status = incremental_events(
                flow_ptr, link, frac, capacity, n_plain, w_t, eps,
                flow_bytes, keep, lazy, rate0.copy(), rate0, finish, moved, switch_after,
                SWITCH_CHANGES, BULK_AFTER, BULK_SHARE, state, RESCREEN_WALK, RESCREEN_STALE,
                counter)
            if status == STATUS_BULK:
                status = _bulk_rest(flow_ptr, link, frac, capacity, n_plain, w_t, eps, keep,
                                    state, finish, moved, counter)
    return rate0, finish, moved, status


def _bulk_rest(flow_ptr, link, frac, capacity, n_plain, w_t, eps, keep, state, finish,
               moved, counter) -> int:
    """The rest of a step the incremental solver stopped with
    ``STATUS_BULK`` (``state``: its time and each flow's bytes left, -1 when
    finished), solved by the screened re-solves on the flows left from that
    time on; their finish times and the persistent flows' bytes moved are
    added into ``finish`` and ``moved``. Returns the status."""
    t = state[-1]
    left = state[:-1] >= 0.0
    counts = np.diff(flow_ptr)[left]
    sub_ptr = np.zeros(len(counts) + 1, dtype=flow_ptr.dtype)
    np.cumsum(counts, out=sub_ptr[1:])
    entry_left = np.repeat(left, np.diff(flow_ptr))
    _, sub_finish, sub_moved, status = screened_completion_kernel(
        sub_ptr, link[entry_left], frac[entry_left], capacity, n_plain, w_t, eps,
        state[:-1][left], keep[left], SCREEN_START, False, False, counter)
    done = left & ~keep
    finish[done] = t + sub_finish[~keep[left]]
    moved[left & keep] += sub_moved[keep[left]]
    return status


@dataclass(frozen=True)
class DataflowSolution:
    """Result of :func:`solve_dataflow`: per flow the time it entered the
    solve (``start``) and its fluid transfer ended (``finish``; ``+inf`` for
    persistent flows), per stage its ``end``, the bytes each persistent flow
    moved until the last stage ended (``moved``), and the kernel's status."""

    start: np.ndarray
    finish: np.ndarray
    end: np.ndarray
    moved: np.ndarray
    status: int


def solve_dataflow(routes, link_capacity, flow_bytes, flow_latency, src_stage, dst_stage,
                   stage_ptr, stage_flows, stage_delay, stage_next, stage_release, *,
                   flow_dst=None, ingress_capacity=None, incast_threshold=float("inf"),
                   incast_slope=0.0, flow_class=None, persistent=None,
                   link_incast=None, counter=None) -> DataflowSolution:
    """Max-min completion of flows that start when their stages do
    (:mod:`flowemu.kernels.dataflow` gives the rules).

    Routes, capacities, bytes and the incast arguments are
    :func:`solve_completion`'s. Per flow: ``flow_latency`` (seconds from the
    end of its transfer to its delivery), ``src_stage`` and ``dst_stage``
    (the sender's and receiver's stage it counts for, -1 for none; a
    persistent flow has none). Per stage: the flows it starts
    (``stage_flows[stage_ptr[s]:stage_ptr[s + 1]]``), its ``stage_delay``
    (seconds of work after its last delivery), the rank's next stage
    ``stage_next`` (-1: none) and ``stage_release`` (a first stage's start
    time, ``>= 0``; -1 for the others). Where the persistent flows have
    more than ``LAZY_ENTRIES`` route entries on average (a background of
    split routes), the solver screens the resources far from capacity, as
    the incremental solver does (the results are the same to rounding).
    ``counter``: as :func:`solve_completion`'s (the flows whose transfer
    ends).
    """
    flow_ptr, link, frac, capacity, n_plain, w_t, eps, n_links, flow_bytes, keep = prepared_problem(
        routes, link_capacity, flow_bytes, flow_dst, ingress_capacity, incast_threshold,
        incast_slope, flow_class, persistent, link_incast)
    n_flows = flow_ptr.shape[0] - 1
    lat = float_array("flow_latency", flow_latency, n_flows, what="flows")
    delay = float_array("stage_delay", stage_delay, what="stages")
    n_stages = delay.shape[0]
    src_stage = int_array("src_stage", src_stage, np.int64)
    dst_stage = int_array("dst_stage", dst_stage, np.int64)
    stage_next = int_array("stage_next", stage_next, np.int64)
    stage_ptr = int_array("stage_ptr", stage_ptr, np.int64)
    stage_flows = int_array("stage_flows", stage_flows, np.int32)
    release = release_times(stage_release)
    for name, arr, n in (("src_stage", src_stage, n_flows), ("dst_stage", dst_stage, n_flows),
                         ("stage_next", stage_next, n_stages),
                         ("stage_ptr", stage_ptr, n_stages + 1),
                         ("stage_release", release, n_stages)):
        if arr.shape[0] != n:
            raise ValueError(f"{name}: expected {n} entries, got {arr.shape[0]}")
    for name, arr in (("src_stage", src_stage), ("dst_stage", dst_stage),
                      ("stage_next", stage_next)):
        if arr.size and (arr.min() < -1 or arr.max() >= n_stages):
            raise ValueError(f"{name}: stage ids must be in [-1, {n_stages})")
    if stage_flows.size and (stage_flows.min() < 0 or stage_flows.max() >= n_flows):
        raise ValueError(f"stage_flows: flow ids must be in [0, {n_flows})")
    if stage_ptr[0] != 0 or stage_ptr[-1] != stage_flows.shape[0] or np.any(
            np.diff(stage_ptr) < 0):
        raise ValueError("stage_ptr: must rise from 0 to the number of stage_flows")
    pending = np.ones(n_stages, dtype=np.int64)
    for arr in (src_stage, dst_stage):
        pending += np.bincount(arr[arr >= 0], minlength=n_stages)
    # a background whose routes are long (split routes on tori) moves at
    # most finishes: screen the resources far from capacity
    screen = _screens(*_entries(np.diff(flow_ptr)[keep]))   # (none: False)
    start, finish, end, moved, status = dataflow_kernel(
        flow_ptr, link, frac, capacity, n_plain, w_t, eps, flow_bytes,
        keep, lat, src_stage, dst_stage, stage_ptr, stage_flows, pending, delay, stage_next,
        release, screen, RESCREEN_WALK, RESCREEN_STALE, _counter(counter))
    if status in (STATUS_BAD_INPUT, STATUS_NONFINITE):
        raise_bad_entry(link, frac, n_links)
    return DataflowSolution(start=start, finish=finish, end=end, moved=moved, status=int(status))


def completion_method(flow_ptr, persistent=None) -> str:
    """The event-driven solver for routes with these row pointers:
    ``"screened"`` above ``SCREEN_ENTRIES`` entries a flow on average (of the
    flows with a path that finish: not the ``persistent`` ones, whose rates
    the events move but which never finish) or from 2**31 entries on, else
    ``"incremental"``."""
    flow_ptr = np.asarray(flow_ptr)
    return _method(*_entries(np.diff(flow_ptr), persistent), int(flow_ptr[-1] - flow_ptr[0]))


def _method(entries: int, routed: int, total: int) -> str:
    # (the incremental solver links entries with int32)
    return "screened" if entries > SCREEN_ENTRIES * routed or total >= 2**31 else \
        "incremental"


def incremental_screens(flow_ptr) -> bool:
    """Whether the incremental solver screens these routes (more than
    ``LAZY_ENTRIES`` entries a flow on average)."""
    return _screens(*_entries(np.diff(np.asarray(flow_ptr))))


def _screens(entries: int, routed: int) -> bool:
    return entries > LAZY_ENTRIES * routed


def _entries(counts, persistent=None) -> tuple[int, int]:
    """``(route entries, flows with a path)`` from each flow's entry count,
    of the flows not ``persistent`` (bool[F]) where given."""
    if persistent is not None:
        counts = counts[~np.asarray(persistent, dtype=bool)]
    return int(counts.sum()), int(np.count_nonzero(counts))
