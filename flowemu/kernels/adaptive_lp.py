"""The LP behind ``ecmp="adaptive"`` on one component of flows (numba):
the dual lower bound, the series-contracted variables, PDHG, and the repair
of an iterate into a valid routing. See :mod:`flowemu.kernels.adaptive` for
the problem and :func:`~flowemu.kernels.adaptive.adaptive_kernel` for the
entry point."""

from __future__ import annotations

import numpy as np

from .jit import njit

#: a component's split max this close (relative) to its bound is optimal,
#: and a routing must beat the split by more than this to replace it
CERTIFY_RTOL = 1e-9
#: a node's outflow share below this goes to 0 (the solver needs fractions > 0)
SNAP = 1e-9


@njit
def lower_bound(flows, links, weight, flow_ptr, node_ptr, head, src_row, dst_row, out_ptr, out_ent,
           topo, link, alive, flow_bytes, capacity, dist):
    """``LB(w) = sum_f b_f dist_w(f) / sum_l w_l c_l`` over ``flows`` and
    their ``links`` (``weight`` >= 0, zero on links of infinite capacity);
    0 when no weight."""
    denom = 0.0
    for i in range(links.shape[0]):
        l = links[i]
        if weight[l] > 0.0:
            denom += weight[l] * capacity[l]
    if not denom > 0.0:
        return 0.0
    total = 0.0
    for f in flows:
        r0, r1 = node_ptr[f], node_ptr[f + 1]
        for k in range(r0, r1):
            dist[k] = np.inf
        dist[src_row[f]] = 0.0
        for k in range(r0, r1):
            r = topo[k]
            du = dist[r]
            if du == np.inf:
                continue
            for i in range(out_ptr[r], out_ptr[r + 1]):
                e = out_ent[i]
                if alive[e]:
                    dist[head[e]] = min(dist[head[e]], du + weight[link[e]])
        total += flow_bytes[f] * dist[dst_row[f]]
    return total / denom


@njit
def _segments(flows, choice, flow_ptr, node_ptr, head, src_row, dst_row, out_ptr, out_ent, topo,
              alive, eq_of, indeg, outdeg):
    """The choice flows' DAGs with series links contracted: a *segment* is
    a maximal chain of alive entries whose inner nodes have one alive entry
    in and one out (its entries carry the same flow), between *branch*
    nodes (the source, the destination, and nodes where paths split or
    merge). The LP's variables are segments and its conservation rows
    branch nodes: a torus flow's path of 32 links is one variable, not 32
    chained by conservation, which PDHG would need ~32 iterations to
    propagate through.

    Returns ``(neq, eq_flow_ptr, eq_seg_ptr, seg_end, seg_ptr, seg_ent)``:
    branch node ``i`` (``eq_of[row] = i``; each flow's in topological
    order, flow ``k`` of the choice flows owning ``eq_flow_ptr[k]:...[k+1]``)
    starts segments ``eq_seg_ptr[i]:eq_seg_ptr[i+1]``; segment ``j`` ends at
    branch node ``seg_end[j]`` and holds entries
    ``seg_ent[seg_ptr[j]:seg_ptr[j+1]]``."""
    n_choice = 0
    n_rows = 0
    n_ent = 0
    for f in flows:
        if choice[f]:
            n_choice += 1
            n_rows += node_ptr[f + 1] - node_ptr[f]
            n_ent += flow_ptr[f + 1] - flow_ptr[f]
    # alive in/out degrees of the choice flows' rows (scratch, zero on entry)
    for f in flows:
        if choice[f]:
            for k in range(node_ptr[f], node_ptr[f + 1]):
                for i in range(out_ptr[k], out_ptr[k + 1]):
                    e = out_ent[i]
                    if alive[e]:
                        outdeg[k] += 1
                        indeg[head[e]] += 1
    eq_flow_ptr = np.zeros(n_choice + 1, dtype=np.int64)
    eq_seg_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    seg_end = np.empty(n_ent, dtype=np.int64)
    seg_ptr = np.zeros(n_ent + 1, dtype=np.int64)
    seg_ent = np.empty(n_ent, dtype=np.int64)
    neq = 0
    nseg = 0
    nse = 0
    c = 0
    # branch nodes first (segment ends need their ids)
    for f in flows:
        if not choice[f]:
            continue
        for k in range(node_ptr[f], node_ptr[f + 1]):
            r = topo[k]
            if indeg[r] + outdeg[r] == 0:
                continue
            if r == src_row[f] or r == dst_row[f] or indeg[r] != 1 or outdeg[r] != 1:
                eq_of[r] = neq
                neq += 1
        c += 1
        eq_flow_ptr[c] = neq
    for f in flows:
        if not choice[f]:
            continue
        for k in range(node_ptr[f], node_ptr[f + 1]):
            r = topo[k]
            if eq_of[r] < 0 or indeg[r] + outdeg[r] == 0:
                continue
            eq_seg_ptr[eq_of[r]] = nseg
            for i in range(out_ptr[r], out_ptr[r + 1]):
                e = out_ent[i]
                if not alive[e]:
                    continue
                seg_ent[nse] = e
                nse += 1
                v = head[e]
                while eq_of[v] < 0:   # an inner node: its one alive entry out
                    e2 = -1
                    for i2 in range(out_ptr[v], out_ptr[v + 1]):
                        e2 = out_ent[i2]
                        if alive[e2]:
                            break
                    seg_ent[nse] = e2
                    nse += 1
                    v = head[e2]
                seg_end[nseg] = eq_of[v]
                nseg += 1
                seg_ptr[nseg] = nse
            eq_seg_ptr[eq_of[r] + 1] = nseg
    # a branch node without out-segments (a destination) keeps an empty range
    for i in range(1, neq + 1):
        eq_seg_ptr[i] = max(eq_seg_ptr[i], eq_seg_ptr[i - 1])
    return (neq, eq_flow_ptr, eq_seg_ptr[:neq + 1].copy(), seg_end[:nseg].copy(),
            seg_ptr[:nseg + 1].copy(), seg_ent[:nse].copy())


@njit
def _repair(x, neq, eq_seg_ptr, seg_end, seg_ptr, seg_ent, frac_out, inflow):
    """A valid routing from the segment iterate ``x``: each branch node's
    inflow split over its out-segments in proportion to ``x`` (shares below
    ``SNAP`` dropped; uniform when ``x`` gives none), pushed from the
    sources in topological order (branch nodes are numbered so). Writes the
    segments' entries of ``frac_out``."""
    for i in range(neq):
        inflow[i] = 0.0
    # a flow's source is its first branch node and has no in-segment
    has_in = np.zeros(neq, dtype=np.bool_)
    for j in range(seg_end.shape[0]):
        has_in[seg_end[j]] = True
    for i in range(neq):
        if not has_in[i]:
            inflow[i] = 1.0
    for i in range(neq):
        fin = inflow[i]
        a, b = eq_seg_ptr[i], eq_seg_ptr[i + 1]
        total = 0.0
        for j in range(a, b):
            total += max(x[j], 0.0)
        kept = 0.0
        for j in range(a, b):
            v = max(x[j], 0.0)
            if v >= SNAP * total and v > 0.0:
                kept += v
        for j in range(a, b):
            share = 0.0
            if fin > 0.0:
                if kept > 0.0:
                    v = max(x[j], 0.0)
                    share = v / kept if v >= SNAP * total and v > 0.0 else 0.0
                else:
                    share = 1.0 / (b - a)
            y = fin * share
            for k in range(seg_ptr[j], seg_ptr[j + 1]):
                frac_out[seg_ent[k]] = y
            inflow[seg_end[j]] += y


@njit
def _comp_max(flows, links, flow_ptr, link, frac, flow_bytes, capacity, load):
    """Most utilized link of a component under fractions ``frac`` (``load``:
    zero scratch, left zero)."""
    for f in flows:
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            load[link[e]] += flow_bytes[f] * frac[e]
    best = 0.0
    for i in range(links.shape[0]):
        l = links[i]
        if load[l] > 0.0:
            c = capacity[l]
            best = max(best, np.inf if c <= 0.0 else load[l] / c)
        load[l] = 0.0
    return best


@njit
def solve_component(flows, links, u_split, lb_start, flow_ptr, link, frac, head, node_ptr,
                     src_row, dst_row, out_ptr, out_ent, topo, alive, flow_bytes, capacity,
                     util, new_frac, tol, max_iter, weight, fixed_load, link_row, load, eq_of,
                     indeg, outdeg, dist, choice, trial):
    """PDHG on one component's LP (see the module doc). Writes the
    component's entries of ``new_frac`` when it beats the split's
    ``u_split`` by more than ``CERTIFY_RTOL``; returns ``(improved, best max,
    best lower bound, iterations)``. The scratch arrays come in zero / -1 /
    False (``trial``: equal to ``frac``) and are left so."""
    best_lb = lb_start
    # flows with a choice (some alive node with two alive out-entries)
    for f in flows:
        for k in range(node_ptr[f], node_ptr[f + 1]):
            n_out = 0
            for i in range(out_ptr[k], out_ptr[k + 1]):
                if alive[out_ent[i]]:
                    n_out += 1
            if n_out > 1:
                choice[f] = True
                break
    # the trial routing: fixed flows take fraction 1 on their one alive path,
    # and their loads are constants of the LP
    n_ent = 0
    for f in flows:
        n_ent += flow_ptr[f + 1] - flow_ptr[f]
        if choice[f]:
            continue
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            trial[e] = 1.0 if alive[e] else 0.0
            if alive[e]:
                fixed_load[link[e]] += flow_bytes[f]
    best_vals = np.empty(n_ent)
    # scale: the split's utilizations are of order 1
    scale = 0.0
    for i in range(links.shape[0]):
        u = util[links[i]]
        if u < np.inf:
            scale = max(scale, u)
    if not scale > 0.0:
        scale = 1.0

    # variables: segments of the choice flows; t (scaled max utilization)
    neq, eq_flow_ptr, eq_seg_ptr, seg_end, seg_ptr, seg_ent = _segments(
        flows, choice, flow_ptr, node_ptr, head, src_row, dst_row, out_ptr, out_ent, topo,
        alive, eq_of, indeg, outdeg)
    nx = seg_end.shape[0]
    n_se = seg_ent.shape[0]
    seg_start = np.empty(nx, dtype=np.int64)
    seg_flow = np.empty(nx, dtype=np.int64)
    q_eq = np.zeros(neq)
    c = 0
    for f in flows:
        if not choice[f]:
            continue
        for i in range(eq_flow_ptr[c], eq_flow_ptr[c + 1]):
            for j in range(eq_seg_ptr[i], eq_seg_ptr[i + 1]):
                seg_start[j] = i
                seg_flow[j] = f
        q_eq[eq_of[src_row[f]]] += 1.0
        q_eq[eq_of[dst_row[f]]] -= 1.0
        c += 1
    # link rows: finite links the segments cross
    nlr = 0
    for k in range(n_se):
        l = link[seg_ent[k]]
        if capacity[l] < np.inf and link_row[l] < 0:
            link_row[l] = nlr
            nlr += 1
    row_link = np.empty(nlr, dtype=np.int64)
    for i in range(links.shape[0]):
        l = links[i]
        if link_row[l] >= 0:
            row_link[link_row[l]] = l
    sl = np.empty(n_se, dtype=np.int64)   # link row of each segment entry (spare row nlr: none)
    ck = np.zeros(n_se)                   # its coefficient b_f / (c_l scale)
    for j in range(nx):
        for k in range(seg_ptr[j], seg_ptr[j + 1]):
            l = link[seg_ent[k]]
            if link_row[l] >= 0:
                sl[k] = link_row[l]
                ck[k] = flow_bytes[seg_flow[j]] / (capacity[l] * scale)
            else:
                sl[k] = nlr
    q_link = np.zeros(nlr)
    for i in range(nlr):
        l = row_link[i]
        q_link[i] = fixed_load[l] / (capacity[l] * scale)
    t_low = 0.0   # t >= every fixed-only link's utilization
    t_low_link = -1
    for i in range(links.shape[0]):
        l = links[i]
        cl = capacity[l]
        if cl > 0.0 and cl < np.inf and fixed_load[l] > 0.0:
            u = fixed_load[l] / (cl * scale)
            if u > t_low:
                t_low = u
                t_low_link = l

    # diagonal preconditioning (Pock-Chambolle, alpha = 1)
    tau_x = np.empty(nx)
    row_sum_eq = np.zeros(neq)
    row_sum_link = np.ones(nlr + 1)
    for j in range(nx):
        col = 2.0
        for k in range(seg_ptr[j], seg_ptr[j + 1]):
            col += ck[k]
            row_sum_link[sl[k]] += ck[k]
        tau_x[j] = 1.0 / col
        row_sum_eq[seg_start[j]] += 1.0
        row_sum_eq[seg_end[j]] += 1.0
    tau_t = 1.0 / max(nlr, 1)
    sig_eq = 1.0 / row_sum_eq
    sig_link = 1.0 / row_sum_link

    # start from the split (a segment's entries share one split fraction)
    x = np.empty(nx)
    for j in range(nx):
        x[j] = frac[seg_ent[seg_ptr[j]]]
    t = max(u_split / scale if u_split < np.inf else 1.0, t_low)
    y_eq = np.zeros(neq)
    y_link = np.zeros(nlr + 1)
    x_avg = np.zeros(nx)
    y_eq_avg = np.zeros(neq)
    y_link_avg = np.zeros(nlr + 1)
    t_avg = 0.0
    n_avg = 0
    x_last = x.copy()
    y_eq_last = y_eq.copy()
    y_link_last = y_link.copy()
    t_last = t
    omega = 1.0
    kx_eq = np.zeros(neq)
    kx_link = np.zeros(nlr + 1)
    inflow = np.empty(neq)

    best_u = u_split
    gap_restart = np.inf
    checks_since = 0
    check_every = 64
    it = 0
    while it < max_iter:
        for _ in range(check_every):
            # one fused pass over the segments: x step (x - tau (c - K^T y),
            # c_x = 0), the extrapolated primal into K x, the running average
            sum_y = 0.0
            for i in range(nlr):
                sum_y += y_link[i]
            t_new = max(t_low, t - tau_t / omega * (1.0 - sum_y))
            t_bar = 2.0 * t_new - t
            for i in range(neq):
                kx_eq[i] = 0.0
            for i in range(nlr):
                kx_link[i] = t_bar
            n_avg += 1
            w = 1.0 / n_avg
            inv_omega = 1.0 / omega
            for j in range(nx):
                a, b = seg_start[j], seg_end[j]
                k0, k1 = seg_ptr[j], seg_ptr[j + 1]
                g = y_eq[a] - y_eq[b]
                for k in range(k0, k1):
                    g -= ck[k] * y_link[sl[k]]
                xn = max(x[j] + tau_x[j] * inv_omega * g, 0.0)
                xb = 2.0 * xn - x[j]
                kx_eq[a] += xb
                kx_eq[b] -= xb
                for k in range(k0, k1):
                    kx_link[sl[k]] -= ck[k] * xb
                x[j] = xn
                x_avg[j] += w * (xn - x_avg[j])
            for i in range(neq):
                y_eq[i] += sig_eq[i] * omega * (q_eq[i] - kx_eq[i])
                y_eq_avg[i] += w * (y_eq[i] - y_eq_avg[i])
            for i in range(nlr):
                y_link[i] = max(0.0, y_link[i] + sig_link[i] * omega * (q_link[i] - kx_link[i]))
                y_link_avg[i] += w * (y_link[i] - y_link_avg[i])
            t = t_new
            t_avg += w * (t - t_avg)
            it += 1
        checks_since += 1
        # evaluate the current iterate and the average: routing and bound
        gaps = np.empty(2)
        for cand in range(2):
            xc = x if cand == 0 else x_avg
            yc = y_link if cand == 0 else y_link_avg
            _repair(xc, neq, eq_seg_ptr, seg_end, seg_ptr, seg_ent, trial, inflow)
            u = _comp_max(flows, links, flow_ptr, link, trial, flow_bytes, capacity, load)
            if u < best_u:
                best_u = u
                n = 0
                for f in flows:
                    for e in range(flow_ptr[f], flow_ptr[f + 1]):
                        best_vals[n] = trial[e]
                        n += 1
            sum_y = 0.0
            for i in range(nlr):
                weight[row_link[i]] = yc[i] / capacity[row_link[i]]
                sum_y += yc[i]
            if t_low_link >= 0 and sum_y < 1.0:
                weight[t_low_link] += (1.0 - sum_y) / capacity[t_low_link]
            lb = lower_bound(flows, links, weight, flow_ptr, node_ptr, head, src_row, dst_row,
                        out_ptr, out_ent, topo, link, alive, flow_bytes, capacity, dist)
            for i in range(links.shape[0]):
                weight[links[i]] = 0.0
            best_lb = max(best_lb, lb)
            gaps[cand] = u / lb - 1.0 if lb > 0.0 else np.inf
        if best_u <= best_lb * (1.0 + tol):
            break
        pick = 1 if gaps[1] < gaps[0] else 0
        if gaps[pick] <= 0.5 * gap_restart or checks_since >= 16:
            # restart from the better candidate; the primal weight follows
            # how far the dual moved against the primal (PDLP)
            if pick == 1:
                x[:] = x_avg
                y_eq[:] = y_eq_avg
                y_link[:] = y_link_avg
                t = t_avg
            dx = (t - t_last) ** 2
            for j in range(nx):
                dx += (x[j] - x_last[j]) ** 2
            dy = 0.0
            for i in range(neq):
                dy += (y_eq[i] - y_eq_last[i]) ** 2
            for i in range(nlr):
                dy += (y_link[i] - y_link_last[i]) ** 2
            if dx > 1e-20 and dy > 1e-20:
                omega = np.exp(0.5 * np.log(np.sqrt(dy / dx)) + 0.5 * np.log(omega))
            x_last[:] = x
            y_eq_last[:] = y_eq
            y_link_last[:] = y_link
            t_last = t
            gap_restart = gaps[pick]
            checks_since = 0
            n_avg = 0
            x_avg[:] = 0.0
            y_eq_avg[:] = 0.0
            y_link_avg[:] = 0.0
            t_avg = 0.0
    improved = best_u < u_split * (1.0 - CERTIFY_RTOL)
    n = 0
    for f in flows:
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            if improved:
                new_frac[e] = best_vals[n]
            n += 1
            trial[e] = frac[e]
        for k in range(node_ptr[f], node_ptr[f + 1]):
            eq_of[k] = -1
            indeg[k] = 0
            outdeg[k] = 0
        choice[f] = False
    # scratch back to zero / -1
    for i in range(links.shape[0]):
        l = links[i]
        fixed_load[l] = 0.0
        link_row[l] = -1
    return improved, (best_u if improved else u_split), best_lb, it
