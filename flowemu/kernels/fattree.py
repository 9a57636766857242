"""Route-filling kernel of the fat tree (flowemu.topology.fattree).

Arrays in, arrays out. The caller classifies the flows and prefix-sums their
entry counts into ``flow_ptr`` (closed forms, numpy); this kernel writes the
entries of every flow in path order in one pass, so no Python code loops over
flows. Link ids follow the layout documented in
:mod:`flowemu.topology.fattree`; with ``N`` hosts, ``h = k/2``:

levels=3
    host→edge ``i``; edge→host ``N+i``; edge ``E``→agg ``j`` of its pod
    ``2N+E·h+j``; agg ``A``→edge ``e`` of its pod ``3N+A·h+e``; agg ``A=q·h+j``
    →core ``j·h+m`` ``4N+A·h+m``; core ``C``→agg of pod ``q`` ``5N+C·k+q``.
levels=2
    host→leaf ``i``; leaf→host ``N+i``; leaf ``l``→spine ``s`` ``2N+l·h+s``;
    spine ``s``→leaf ``l`` ``3N+s·k+l``.

Flow classes (``cls``): 0 src == dst, 1 same edge switch, 2 same pod (levels=3
only), 3 across pods (levels=3) or across leaves (levels=2).
"""

from __future__ import annotations

from .jit import njit


@njit
def fattree_fill(src, dst, cls, up_j, up_m, flow_ptr, link, frac, n_hosts, h, k, levels,
                 split):
    """Write the route entries of every flow.

    Parameters
    ----------
    src, dst, cls : int64[F]
        Host ids and flow classes (see the module docstring).
    up_j, up_m : int64[F]
        Single-path modes: the aggregation (spine) index ``j`` and the core
        index ``m`` within agg ``j``'s group of each flow (ignored in split).
    flow_ptr : int64[F+1]
        CSR offsets from the counts (split: 2, 2+2h, 2+2h+2h² for classes
        1..3 with levels=3 and 2+2h for class 3 with levels=2; single path:
        2, 4, 6 or 4).
    link : int32[E], frac : float64[E]
        Output.
    n_hosts, h, k, levels : int
    split : bool
        Even split over all minimal paths, else the one path ``up_j, up_m``.

    Returns
    -------
    int
        Entries written (the caller checks it equals ``flow_ptr[-1]``).
    """
    N = n_hosts
    hh = h * h
    inv_h = 1.0 / h
    inv_hh = 1.0 / hh
    written = 0
    for f in range(src.shape[0]):
        c = cls[f]
        if c == 0:
            continue
        s = src[f]
        d = dst[f]
        at = flow_ptr[f]
        link[at] = s
        frac[at] = 1.0
        at += 1
        es = s // h                    # source edge (leaf), global index
        ed = d // h
        if c == 3 and levels == 2:
            if split:
                for j in range(h):
                    link[at] = 2 * N + es * h + j
                    frac[at] = inv_h
                    at += 1
                for j in range(h):
                    link[at] = 3 * N + j * k + ed
                    frac[at] = inv_h
                    at += 1
            else:
                j = up_j[f]
                link[at] = 2 * N + es * h + j
                link[at + 1] = 3 * N + j * k + ed
                frac[at] = 1.0
                frac[at + 1] = 1.0
                at += 2
        elif c == 2:
            qs = s // hh
            e_d = ed - qs * h          # destination edge within the (shared) pod
            if split:
                for j in range(h):
                    link[at] = 2 * N + es * h + j
                    frac[at] = inv_h
                    at += 1
                for j in range(h):
                    link[at] = 3 * N + (qs * h + j) * h + e_d
                    frac[at] = inv_h
                    at += 1
            else:
                j = up_j[f]
                link[at] = 2 * N + es * h + j
                link[at + 1] = 3 * N + (qs * h + j) * h + e_d
                frac[at] = 1.0
                frac[at + 1] = 1.0
                at += 2
        elif c == 3:
            qs = s // hh
            qd = d // hh
            e_d = ed - qd * h
            if split:
                for j in range(h):
                    link[at] = 2 * N + es * h + j
                    frac[at] = inv_h
                    at += 1
                for j in range(h):
                    base = 4 * N + (qs * h + j) * h
                    for m in range(h):
                        link[at] = base + m
                        frac[at] = inv_hh
                        at += 1
                for j in range(h):
                    for m in range(h):
                        link[at] = 5 * N + (j * h + m) * k + qd
                        frac[at] = inv_hh
                        at += 1
                for j in range(h):
                    link[at] = 3 * N + (qd * h + j) * h + e_d
                    frac[at] = inv_h
                    at += 1
            else:
                j = up_j[f]
                m = up_m[f]
                link[at] = 2 * N + es * h + j
                link[at + 1] = 4 * N + (qs * h + j) * h + m
                link[at + 2] = 5 * N + (j * h + m) * k + qd
                link[at + 3] = 3 * N + (qd * h + j) * h + e_d
                for x in range(4):
                    frac[at + x] = 1.0
                at += 4
        link[at] = N + d
        frac[at] = 1.0
        at += 1
        written += at - flow_ptr[f]
    return written
