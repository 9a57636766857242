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

from .adaptive_lp import CERTIFY_RTOL, lower_bound, solve_component
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

#: links within this (relative) of the split's max are "at the max"
MAX_RTOL = 1e-12


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
            lb = lower_bound(flows, links, weight, flow_ptr, node_ptr, head, src_row, dst_row,
                        out_ptr, out_ent, topo, link, alive, flow_bytes, capacity, dist)
            for i in range(n_links):
                weight[links[i]] = 0.0
            lb_all = max(lb_all, lb)
            if u_comp <= lb * (1.0 + CERTIFY_RTOL):
                continue
        all_certified = False
        improved, _, best_lb, its = solve_component(
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
