"""What the event-driven completion kernels (:mod:`.completion`,
:mod:`.incremental`, :mod:`.dataflow`) share around the fill of :mod:`.fill`:
their inputs checked and their outputs started, a flow's bytes brought up to
date as its rate changes, and a receiver's ingress capacity under incast."""

from __future__ import annotations

import numpy as np

from .fill import STATUS_BAD_INPUT, STATUS_NONFINITE, STATUS_OK, check_inputs
from .jit import njit
from .layout import NUMPY_ERRORS


@njit(**NUMPY_ERRORS)
def check_completion_inputs(flow_ptr, res, frac, capacity, n_plain, w_t, eps, flow_bytes,
                            persistent):
    """:func:`check_inputs` and the completion kernels' other arrays;
    returns ``(status, incast)``, ``incast`` whether any ingress resource's
    incast term is on."""
    n_flows = flow_ptr.shape[0] - 1
    n_res = capacity.shape[0]
    status = check_inputs(flow_ptr, res, frac, capacity)
    if status != STATUS_OK:
        return status, False
    if (flow_bytes.shape[0] != n_flows or persistent.shape[0] != n_flows or n_plain < 0
            or n_plain > n_res):
        return STATUS_BAD_INPUT, False
    for f in range(n_flows):
        b = flow_bytes[f]
        if not np.isfinite(b):
            return STATUS_NONFINITE, False
        if b < 0.0:
            return STATUS_BAD_INPUT, False
    if w_t.shape[0] != n_res - n_plain or eps.shape[0] != n_res - n_plain:
        return STATUS_BAD_INPUT, False
    incast = False
    for i in range(n_res - n_plain):
        if np.isnan(w_t[i]) or not np.isfinite(eps[i]):
            return STATUS_NONFINITE, False
        if eps[i] < 0.0:
            return STATUS_BAD_INPUT, False
        incast |= eps[i] > 0.0 and np.isfinite(w_t[i])
    return STATUS_OK, incast


@njit(**NUMPY_ERRORS)
def start_completion(flow_ptr, res, frac, capacity, n_plain, w_t, eps, flow_bytes, persistent):
    """The completion kernels' outputs, empty (``rate0`` 0, ``finish``
    ``+inf``, ``moved`` 0 per flow), and their inputs checked
    (:func:`check_completion_inputs`): ``(rate0, finish, moved, status,
    incast)``."""
    n_flows = max(flow_ptr.shape[0] - 1, 0)
    status, incast = check_completion_inputs(flow_ptr, res, frac, capacity, n_plain, w_t, eps,
                                             flow_bytes, persistent)
    return (np.zeros(n_flows, dtype=np.float64), np.full(n_flows, np.inf),
            np.zeros(n_flows, dtype=np.float64), status, incast)


@njit(refcounts=False, **NUMPY_ERRORS)
def bytes_left(g, was, t, persistent, remaining, since, moved):
    """Bring flow ``g``'s bytes up to time ``t`` as its rate changes (it ran
    at ``was`` since ``since[g]``): a persistent flow's bytes moved grow,
    another flow's bytes left shrink. Returns the bytes left (0 for a
    persistent flow). The completion kernels' event loops call it for every
    rate change; compiled without reference counts (``njit``'s
    ``refcounts``)."""
    dt = t - since[g]
    since[g] = t
    if persistent[g]:
        moved[g] += was * dt
        return 0.0
    rem = max(0.0, remaining[g] - was * dt)
    remaining[g] = rem
    return rem


@njit(**NUMPY_ERRORS)
def ingress_capacity(base, fan_in, w_t, eps):
    """GenModel eq. 10: ``1 / beta' = 1 / (1 / base + max(w - w_t, 0) eps)``;
    exactly ``base`` when the resource's incast is off (``eps == 0``)."""
    excess = fan_in - w_t
    if excess > 0.0 and eps > 0.0:
        return 1.0 / (1.0 / base + excess * eps)
    return base
