"""Kernels of routing with failed links (numba): which flows cross a failed
link, and the routes with those flows' rows replaced by their re-routes."""

from __future__ import annotations

import numpy as np

from .jit import njit


@njit
def flows_on_failed(flow_ptr, link, failed):
    """Flows with an entry on a failed link, int64[K] ascending.

    ``flow_ptr`` int64[F+1], ``link`` int32[E] (CSR routes), ``failed``
    bool[L]."""
    num_flows = flow_ptr.shape[0] - 1
    out = np.empty(num_flows, dtype=np.int64)
    k = 0
    for f in range(num_flows):
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            if failed[link[e]]:
                out[k] = f
                k += 1
                break
    return out[:k]


@njit
def splice_rows(flow_ptr, link, frac, hops, flows, new_ptr, new_link, new_frac, new_hops):
    """CSR routes with the rows of ``flows`` (ascending) replaced by the rows
    of the re-routes (``new_*``, one row per entry of ``flows``, in that
    order). Returns ``(flow_ptr, link, frac, hops)``."""
    num_flows = flow_ptr.shape[0] - 1
    ptr = np.empty(num_flows + 1, dtype=np.int64)
    ptr[0] = 0
    j = 0
    for f in range(num_flows):
        if j < flows.shape[0] and flows[j] == f:
            ptr[f + 1] = ptr[f] + new_ptr[j + 1] - new_ptr[j]
            j += 1
        else:
            ptr[f + 1] = ptr[f] + flow_ptr[f + 1] - flow_ptr[f]
    out_link = np.empty(ptr[num_flows], dtype=np.int32)
    out_frac = np.empty(ptr[num_flows], dtype=np.float64)
    out_hops = hops.copy()
    j = 0
    for f in range(num_flows):
        at = ptr[f]
        if j < flows.shape[0] and flows[j] == f:
            for e in range(new_ptr[j], new_ptr[j + 1]):
                out_link[at] = new_link[e]
                out_frac[at] = new_frac[e]
                at += 1
            out_hops[f] = new_hops[j]
            j += 1
        else:
            for e in range(flow_ptr[f], flow_ptr[f + 1]):
                out_link[at] = link[e]
                out_frac[at] = frac[e]
                at += 1
    return ptr, out_link, out_frac, out_hops
