"""Fluid minimal adaptive routing: min-max link load over each flow's minimal
paths (numba).

Flow ``f`` sends ``b_f`` bytes from its source to its destination over the
DAG its ``split`` route entries form (all its minimal paths). A routing is a
unit flow ``x_f`` on that DAG per flow; link ``l`` then carries
``load_l = sum_f b_f x_fl`` and the problem is

    minimise  U = max_l load_l / c_l      (the most loaded link, in time units)

a linear programme (min-congestion multicommodity flow). Its dual gives a
certified lower bound for any link weights ``w >= 0``:

    LB(w) = sum_f b_f dist_w(f) / sum_l w_l c_l

with ``dist_w(f)`` the ``w``-shortest path of ``f`` in its DAG (any routing
has ``sum_l w_l load_l >= sum_f b_f dist_w(f)`` and ``sum_l w_l load_l <=
U sum_l w_l c_l``).

:func:`adaptive_kernel` solves each component of flows joined by shared
links on its own (components share no link, so each has its own min-max, and
each is balanced to it rather than only the worst one). It first certifies
the component's split: with ``w = 1`` on its links at the split's maximum,
``LB(w)`` equals that maximum exactly when every split path of every flow
crosses the same number of them (as on every symmetric instance); then the
split is optimal and kept. Otherwise it solves the LP by a primal-dual hybrid
gradient method (Chambolle-Pock with diagonal preconditioning, restarts to
the average and a primal weight, as in PDLP: Applegate et al., "Practical
large-scale linear programming using primal-dual hybrid gradient", NeurIPS
2021) over the flows that have a choice (flows on a single path are
constants). Every 64 iterations the iterate is turned into a valid routing
(each node's outflow split in proportion to the iterate, pushed from the
source in topological order) and the link-row duals into weights for
``LB``; it stops when the best routing's max is within ``tol`` (relative) of
the best bound, or at ``max_iter``. A component keeps its split unless the
routing found beats it by more than ``CERTIFY_RTOL``.

Capacities: an infinite one is never a bottleneck; a flow avoids links of
zero capacity wherever its DAG lets it (when a flow cannot, every routing of
its component has an infinite maximum and that component keeps its split).
"""

from __future__ import annotations

import numpy as np

from .jit import njit

#: new fractions, better than the split's maximum
STATUS_OPTIMIZED = 0
#: the split is certified optimal (kept unchanged)
STATUS_SPLIT_OPTIMAL = 1
#: no routing found beating the split by more than 1e-9 relative (kept)
STATUS_NO_GAIN = 2
#: a flow cannot avoid a link of zero capacity: every routing is infinite (split kept)
STATUS_UNAVOIDABLE_ZERO = 3
#: a flow's entries contain a cycle
STATUS_NOT_DAG = -1
#: an entry's link or a flow's source/destination is out of range, or a
#: flow's entries do not touch its source and destination
STATUS_BAD_INPUT = -2

STATUS_NAMES = {
    STATUS_OPTIMIZED: "optimized",
    STATUS_SPLIT_OPTIMAL: "split optimal",
    STATUS_NO_GAIN: "no gain over split",
    STATUS_UNAVOIDABLE_ZERO: "a flow must cross a zero-capacity link",
    STATUS_NOT_DAG: "a flow's route entries contain a cycle",
    STATUS_BAD_INPUT: "route entries do not form flows from source to destination",
}

#: a split max this close (relative) to its bound is optimal
CERTIFY_RTOL = 1e-9
#: links within this (relative) of the split's max are "at the max"
MAX_RTOL = 1e-12
#: a node's outflow share below this goes to 0 (the solver needs fractions > 0)
SNAP = 1e-9


@njit
def _index_dags(flow_ptr, link, link_src, link_dst, flow_src, flow_dst, num_nodes):
    """Local node rows of every flow's DAG and a topological order.

    Returns ``(status, node_ptr, tail, head, src_row, dst_row, out_ptr,
    out_ent, topo)``: flow ``f``'s nodes are rows ``node_ptr[f]:node_ptr[f+1]``;
    entry ``e`` goes from row ``tail[e]`` to row ``head[e]``; the entries
    leaving row ``r`` are ``out_ent[out_ptr[r]:out_ptr[r+1]]``; ``topo``
    lists each flow's rows in topological order (same ranges as rows)."""
    num_flows = flow_ptr.shape[0] - 1
    num_entries = link.shape[0]
    num_links = link_src.shape[0]
    node_ptr = np.zeros(num_flows + 1, dtype=np.int64)
    tail = np.empty(num_entries, dtype=np.int64)
    head = np.empty(num_entries, dtype=np.int64)
    src_row = np.full(num_flows, -1, dtype=np.int64)
    dst_row = np.full(num_flows, -1, dtype=np.int64)
    empty = np.empty(0, dtype=np.int64)
    stamp = np.full(num_nodes, -1, dtype=np.int64)
    row_of = np.empty(num_nodes, dtype=np.int64)
    rows = 0
    for f in range(num_flows):
        node_ptr[f] = rows
        a, b = flow_ptr[f], flow_ptr[f + 1]
        for e in range(a, b):
            l = link[e]
            if l < 0 or l >= num_links:
                return STATUS_BAD_INPUT, node_ptr, tail, head, src_row, dst_row, empty, empty, empty
            for side in range(2):
                v = link_src[l] if side == 0 else link_dst[l]
                if v < 0 or v >= num_nodes:
                    return (STATUS_BAD_INPUT, node_ptr, tail, head, src_row, dst_row, empty,
                            empty, empty)
                if stamp[v] != f:
                    stamp[v] = f
                    row_of[v] = rows
                    rows += 1
                if side == 0:
                    tail[e] = row_of[v]
                else:
                    head[e] = row_of[v]
        if b > a:
            s, d = flow_src[f], flow_dst[f]
            if s < 0 or s >= num_nodes or d < 0 or d >= num_nodes or stamp[s] != f \
                    or stamp[d] != f:
                return STATUS_BAD_INPUT, node_ptr, tail, head, src_row, dst_row, empty, empty, empty
            src_row[f] = row_of[s]
            dst_row[f] = row_of[d]
    node_ptr[num_flows] = rows
    # entries leaving each row (counting sort by tail)
    out_ptr = np.zeros(rows + 1, dtype=np.int64)
    for e in range(num_entries):
        out_ptr[tail[e] + 1] += 1
    for r in range(rows):
        out_ptr[r + 1] += out_ptr[r]
    fill = out_ptr[:-1].copy()
    out_ent = np.empty(num_entries, dtype=np.int64)
    for e in range(num_entries):
        out_ent[fill[tail[e]]] = e
        fill[tail[e]] += 1
    # Kahn's algorithm per flow
    indeg = np.zeros(rows, dtype=np.int64)
    for e in range(num_entries):
        indeg[head[e]] += 1
    topo = np.empty(rows, dtype=np.int64)
    reach = np.zeros(rows, dtype=np.bool_)
    for f in range(num_flows):
        r0, r1 = node_ptr[f], node_ptr[f + 1]
        n = r0
        for r in range(r0, r1):
            if indeg[r] == 0:
                topo[n] = r
                n += 1
        k = r0
        while k < n:
            r = topo[k]
            k += 1
            for i in range(out_ptr[r], out_ptr[r + 1]):
                h = head[out_ent[i]]
                indeg[h] -= 1
                if indeg[h] == 0:
                    topo[n] = h
                    n += 1
        if n != r1:
            return STATUS_NOT_DAG, node_ptr, tail, head, src_row, dst_row, out_ptr, out_ent, topo
        if r1 > r0:   # the destination must be reachable from the source
            reach[src_row[f]] = True
            for k in range(r0, r1):
                r = topo[k]
                if reach[r]:
                    for i in range(out_ptr[r], out_ptr[r + 1]):
                        reach[head[out_ent[i]]] = True
            if not reach[dst_row[f]]:
                return (STATUS_BAD_INPUT, node_ptr, tail, head, src_row, dst_row, out_ptr,
                        out_ent, topo)
    return STATUS_SPLIT_OPTIMAL, node_ptr, tail, head, src_row, dst_row, out_ptr, out_ent, topo


@njit
def _prune(flow_ptr, node_ptr, head, src_row, dst_row, out_ptr, out_ent, topo, usable):
    """Entries on a source-destination path of usable entries (``alive``),
    and the flows with entries but no such path (``stuck``)."""
    num_flows = flow_ptr.shape[0] - 1
    rows = topo.shape[0]
    alive = usable.copy()
    fwd = np.zeros(rows, dtype=np.bool_)
    bwd = np.zeros(rows, dtype=np.bool_)
    stuck = np.zeros(num_flows, dtype=np.bool_)
    for f in range(num_flows):
        r0, r1 = node_ptr[f], node_ptr[f + 1]
        if r1 == r0:
            continue
        fwd[src_row[f]] = True
        for k in range(r0, r1):
            r = topo[k]
            if fwd[r]:
                for i in range(out_ptr[r], out_ptr[r + 1]):
                    e = out_ent[i]
                    if usable[e]:
                        fwd[head[e]] = True
        bwd[dst_row[f]] = True
        for k in range(r1 - 1, r0 - 1, -1):
            r = topo[k]
            for i in range(out_ptr[r], out_ptr[r + 1]):
                e = out_ent[i]
                if usable[e] and bwd[head[e]]:
                    bwd[r] = True
        stuck[f] = not bwd[src_row[f]]
        for k in range(r0, r1):
            r = topo[k]
            for i in range(out_ptr[r], out_ptr[r + 1]):
                e = out_ent[i]
                alive[e] = usable[e] and fwd[r] and bwd[head[e]]
    return alive, stuck


@njit
def _utilization(flow_ptr, link, frac, flow_bytes, capacity):
    """Per-link load / capacity (inf capacity: 0; zero capacity with load: inf)."""
    num_flows = flow_ptr.shape[0] - 1
    load = np.zeros(capacity.shape[0])
    for f in range(num_flows):
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            load[link[e]] += flow_bytes[f] * frac[e]
    util = np.zeros(capacity.shape[0])
    for l in range(capacity.shape[0]):
        c = capacity[l]
        if load[l] > 0.0:
            util[l] = np.inf if c <= 0.0 else load[l] / c
    return util


@njit
def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit
def _components(flow_ptr, link, num_links):
    """Flows joined by shared links, ``(comp_ptr, comp_flows)``: component
    ``k``'s flows are ``comp_flows[comp_ptr[k]:comp_ptr[k+1]]`` (flows
    without entries belong to none). Components share no link, so each has
    its own min-max problem."""
    num_flows = flow_ptr.shape[0] - 1
    parent = np.arange(num_flows)
    first = np.full(num_links, -1, dtype=np.int64)
    for f in range(num_flows):
        for e in range(flow_ptr[f], flow_ptr[f + 1]):
            l = link[e]
            if first[l] < 0:
                first[l] = f
            else:
                a, b = _find(parent, f), _find(parent, first[l])
                if a != b:
                    parent[max(a, b)] = min(a, b)
    comp_of = np.full(num_flows, -1, dtype=np.int64)
    count = 0
    for f in range(num_flows):
        if flow_ptr[f + 1] > flow_ptr[f]:
            r = _find(parent, f)
            if comp_of[r] < 0:
                comp_of[r] = count
                count += 1
            comp_of[f] = comp_of[r]
    comp_ptr = np.zeros(count + 1, dtype=np.int64)
    for f in range(num_flows):
        if comp_of[f] >= 0:
            comp_ptr[comp_of[f] + 1] += 1
    for k in range(count):
        comp_ptr[k + 1] += comp_ptr[k]
    fill = comp_ptr[:-1].copy()
    comp_flows = np.empty(comp_ptr[count], dtype=np.int64)
    for f in range(num_flows):
        k = comp_of[f]
        if k >= 0:
            comp_flows[fill[k]] = f
            fill[k] += 1
    return comp_ptr, comp_flows


@njit
def _bound(flows, links, weight, flow_ptr, node_ptr, head, src_row, dst_row, out_ptr, out_ent,
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
def _solve_component(flows, links, u_split, lb_start, flow_ptr, link, frac, head, node_ptr,
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
            lb = _bound(flows, links, weight, flow_ptr, node_ptr, head, src_row, dst_row,
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


@njit
def adaptive_kernel(flow_ptr, link, frac, link_src, link_dst, flow_src, flow_dst, flow_bytes,
                    capacity, num_nodes, tol, max_iter):
    """Min-max link utilization over each flow's split DAG, per component
    of flows joined by shared links.

    Parameters
    ----------
    flow_ptr : int64[F+1]; link : int64[E]; frac : float64[E]
        The split routes (every entry ``frac > 0``).
    link_src, link_dst : int64[L]
    flow_src, flow_dst : int64[F]
        Source and destination vertex of each flow.
    flow_bytes : float64[F]  (>= 0)
    capacity : float64[L]  (>= 0, may be +inf)
    num_nodes : int
    tol : float
        A component stops when its best routing's max is within ``tol``
        (relative) of its best lower bound.
    max_iter : int
        PDHG iterations at most per component.

    Returns
    -------
    status : int
        ``STATUS_OPTIMIZED`` when some component beat its split, else
        ``STATUS_UNAVOIDABLE_ZERO`` when some component has a flow that must
        cross a zero-capacity link, ``STATUS_SPLIT_OPTIMAL`` when every
        component's split is certified, ``STATUS_NO_GAIN`` otherwise;
        negative on bad input.
    new_frac : float64[E]
        The routing (may hold 0 on entries a flow no longer uses).
    stats : float64[4]
        ``(split max, returned max, lower bound, iterations)``: the maxima
        over all links, the largest component bound (a bound on the
        optimum), the iterations summed over components.
    """
    stats = np.zeros(4)
    num_entries = link.shape[0]
    num_links = capacity.shape[0]
    new_frac = frac.copy()
    (status, node_ptr, _tail, head, src_row, dst_row, out_ptr, out_ent,
     topo) = _index_dags(flow_ptr, link, link_src, link_dst, flow_src, flow_dst, num_nodes)
    if status < 0:
        return status, new_frac, stats
    rows = topo.shape[0]
    util = _utilization(flow_ptr, link, frac, flow_bytes, capacity)
    u_split = util.max() if num_links else 0.0
    stats[0] = u_split
    stats[1] = u_split
    if not u_split > 0.0:
        return STATUS_SPLIT_OPTIMAL, new_frac, stats

    usable = np.empty(num_entries, dtype=np.bool_)
    for e in range(num_entries):
        usable[e] = capacity[link[e]] > 0.0
    alive, stuck = _prune(flow_ptr, node_ptr, head, src_row, dst_row, out_ptr, out_ent, topo,
                          usable)
    comp_ptr, comp_flows = _components(flow_ptr, link, num_links)

    dist = np.empty(rows)
    weight = np.zeros(num_links)
    fixed_load = np.zeros(num_links)
    load = np.zeros(num_links)
    link_row = np.full(num_links, -1, dtype=np.int64)
    eq_of = np.full(rows, -1, dtype=np.int64)
    indeg = np.zeros(rows, dtype=np.int64)
    outdeg = np.zeros(rows, dtype=np.int64)
    stamp = np.full(num_links, -1, dtype=np.int64)
    link_buf = np.empty(num_links, dtype=np.int64)
    choice = np.zeros(flow_ptr.shape[0] - 1, dtype=np.bool_)
    trial = frac.copy()
    lb_all = 0.0
    iterations = 0
    any_improved = False
    any_stuck = False
    all_certified = True
    for k in range(comp_ptr.shape[0] - 1):
        flows = comp_flows[comp_ptr[k]:comp_ptr[k + 1]]
        n_links = 0
        blocked = False
        for f in flows:
            blocked |= stuck[f]
            for e in range(flow_ptr[f], flow_ptr[f + 1]):
                l = link[e]
                if stamp[l] != k:
                    stamp[l] = k
                    link_buf[n_links] = l
                    n_links += 1
        links = link_buf[:n_links].copy()
        if blocked:   # every routing of this component is infinite: split kept
            any_stuck = True
            continue
        u_comp = 0.0
        for i in range(n_links):
            u_comp = max(u_comp, util[links[i]])
        if not u_comp > 0.0:
            continue
        lb = 0.0
        if u_comp < np.inf:
            # certificate: unit weight on the component's links at its max
            for i in range(n_links):
                if util[links[i]] >= u_comp * (1.0 - MAX_RTOL):
                    weight[links[i]] = 1.0
            lb = _bound(flows, links, weight, flow_ptr, node_ptr, head, src_row, dst_row,
                        out_ptr, out_ent, topo, link, alive, flow_bytes, capacity, dist)
            for i in range(n_links):
                weight[links[i]] = 0.0
            lb_all = max(lb_all, lb)
            if u_comp <= lb * (1.0 + CERTIFY_RTOL):
                continue
        all_certified = False
        improved, _, best_lb, its = _solve_component(
            flows, links, u_comp, lb, flow_ptr, link, frac, head, node_ptr, src_row, dst_row,
            out_ptr, out_ent, topo, alive, flow_bytes, capacity, util, new_frac, tol, max_iter,
            weight, fixed_load, link_row, load, eq_of, indeg, outdeg, dist, choice, trial)
        lb_all = max(lb_all, best_lb)
        iterations += its
        any_improved |= improved
    stats[2] = lb_all
    stats[3] = iterations
    if any_improved:
        new_util = _utilization(flow_ptr, link, new_frac, flow_bytes, capacity)
        stats[1] = new_util.max()
        return STATUS_OPTIMIZED, new_frac, stats
    if any_stuck:
        return STATUS_UNAVOIDABLE_ZERO, new_frac, stats
    if all_certified:
        return STATUS_SPLIT_OPTIMAL, new_frac, stats
    return STATUS_NO_GAIN, new_frac, stats
