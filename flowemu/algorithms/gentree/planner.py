"""GenTree: allreduce plan generation on trees (Xiong et al., "Revisiting the
Time Cost Model of AllReduce", §4.2, Algorithms 1 and 2).

GenTree builds a *reduce-scatter* plan bottom up, one sub-plan per
switch-local sub-tree (a switch and its children), and runs the allgather as
its mirror. This module holds the planning half on the tree a topology
offers (:mod:`flowemu.algorithms.gentree.treeview`): the GenModel price of every candidate sub-plan and
GenTree's choices (:func:`make_plan`), and the plan table (:func:`plan`, the
form of the paper's Table 6). :mod:`flowemu.algorithms.gentree.schedule` turns a plan
into a schedule the flow engine times.

Trees
-----
``tree:`` (every preset and spec; a multi-site tree gets a top node "Cross
DC" joining the site roots over the cross-site links), ``leafspine:`` and
``fattree:`` (§4.2: "we choose a random top-level switch as the root and
ignore the other top-level switches" — the top layer is the root; the pods
of a three-level fat tree are one node each, their aggregation switches
together). Other families are refused. Ranks are the hosts in endpoint order
(linear placement); with fewer ranks than hosts the tree keeps the first
``p`` hosts.

Basic sub-plans (Algorithm 1)
-----------------------------
The vector is cut into ``N`` blocks (``N`` ranks). After the sub-plan of a
switch with ``n`` servers below it every server holds ``⌊N/n⌋`` or
``⌈N/n⌉`` blocks reduced over those ``n`` servers. A server takes its
blocks from those it held after its child's sub-plan, first come first
served in child and server order (Algorithm 1 lines 10-23); blocks no server
could take (possible with unequal children) go to the servers with room left.

Final sub-plans (Algorithm 2)
-----------------------------
*Plan type selection.* When a switch's children are equal sub-trees (same
shape, same links) and none was rearranged, the servers in the same place of
every child form a *lane*; every lane runs the same switch-local
reduce-scatter on the blocks its members hold, with one of the
state-of-the-art types of Table 2: ``cps`` (Co-located PS), ``m×n...``
(Hierarchical Co-located PS over the ``c`` children, every ordered
factorisation of ``c`` into at most three factors), ``ring`` and ``rhd``
(recursive halving, when ``c`` is a power of two). Otherwise the switch
runs ``acps`` (Asymmetric Co-located PS: every holder sends each block
straight to the server that reduces it, Fig. 7b).

*Data rearrangement.* For a child ``C`` that is a switch, GenTree also
prices moving ``C``'s reduced blocks onto the servers under its first ``k``
children before they leave ``C``, ``k = ⌈children(C) · B_up(C) /
Σ B_up(children)⌉`` (the convergence ratio of §4.2: the bandwidth from the
switch to ``C`` over that of ``C`` to its children), and keeps it when the
move plus the transfer out of ``C`` costs less than the transfer out
without it (Algorithm 2 lines 8-16). A switch with a rearranged child runs
``acps``. ``rearrange=no`` turns this off (the paper's GenTree*).

GenModel prices (this module's reading of §3 for a switch-local sub-tree)
------------------------------------------------------------------------
A sub-plan is priced step by step, reduce-scatter and its mirrored
allgather: a step costs

    α_A + max( recv·(β_s + max(w − w_t, 0)·ε),  send·β_s,
               D_C·(β_C + max(w_C − w_t, 0)·ε),  D_v·β_v ... ) + reduce

* ``α_A``: the network's α plus the latency of a path through the switch
  (hop and link latencies of a flow between its first two children, as the
  flow engine charges it);
* ``recv``/``send``: the most bytes a server receives/sends in the step,
  ``β_s`` its link's seconds per byte, ``w`` its fan-in (incoming flows + 1,
  Table 2's count: ``N`` for Co-located PS);
* ``D_C``: bytes leaving a child ``C`` over its uplinks (capacity ``1/β_C``,
  the sum of the links leaving ``C``'s region), ``w_C`` the servers whose
  flows cross them (the fan-in of that many-to-one, as Table 2 counts it) —
  many servers converging on one slow uplink is where rearrangement pays;
  deeper links of the child (``D_v``, e.g. an edge switch's uplinks inside a
  pod) are charged bandwidth only;
* ``ε``, ``w_t``: the switch's tier terms (``eps=``/``wt=`` of a tree level,
  the Table 5 row of a preset) or else the network's ``incast_slope`` and
  ``incast_threshold``;
* ``reduce``: the slowest server's ``Σ ((f+1)·δ + (f−1)·γ)·bytes`` (eq. 3-5),
  reduce-scatter steps only.

On one switch this is exactly Table 2 (the tests recompute the rows), and
a switch's finish time is the latest child's finish time plus its own
sub-plan (Algorithm 2 line 30); the plan's GenModel time is the root's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..base import DEFAULT_AT
from ..registry import get_algorithm
from .treeview import TreeView, ancestors, switches_bottom_up, tree_view

__all__ = ["DEFAULT_AT", "Plan", "TreeView", "make_plan",
           "tree_view"]


#: most factors of an HCPS candidate
MAX_FACTORS = 3

#: the flat baselines priced over every rank beside the tree plan (rhd when
#: the rank count is a power of two), and the most ranks they are priced for
FLAT_KINDS = ("cps", "ring", "rhd")
FLAT_MAX = 1024


# --------------------------------------------------------------------------- prices

def _inc(w, w_t, eps):
    """max(w − w_t, 0)·ε, elementwise."""
    return np.maximum(np.asarray(w, np.float64) - w_t, 0.0) * eps


@dataclass(frozen=True)
class LocalStep:
    """One step of a switch-local sub-plan in the switch's local server
    indices (0..n−1), shares in fractions of the vector; ``reduce``: a
    reduce-scatter step (REDUCE flows), else a move (COPY)."""

    src: np.ndarray
    dst: np.ndarray
    share: np.ndarray
    blocks: list | None          # per flow: global block ids (or None)
    red_node: np.ndarray
    red_share: np.ndarray
    red_fanin: np.ndarray
    reduce: bool

    @property
    def num_flows(self) -> int:
        return len(self.src)


def mirror(st: LocalStep) -> LocalStep:
    """The allgather step that undoes a reduce-scatter step: every flow
    backwards, copying, no reduction."""
    z = np.zeros(0)
    return LocalStep(st.dst, st.src, st.share, st.blocks, z.astype(np.int64), z,
                     z.astype(np.int64), False)


def step_cost(view: TreeView, A: int, st: LocalStep, S: float, network,
              with_reduce: bool = True) -> float:
    """GenModel time of one local step of switch ``A`` for a vector of
    ``S`` bytes (the module docstring has the terms)."""
    if st.num_flows == 0:
        return 0.0
    n = view.servers(A)
    base = int(view.host_lo[A])
    eps, wt = float(view.eps[A]), float(view.wt[A])
    bs = 1.0 / view.up_capacity[base:base + n]          # β of each server's link
    send = np.bincount(st.src, weights=st.share, minlength=n) * S
    recv = np.bincount(st.dst, weights=st.share, minlength=n) * S
    anc = ancestors(view)
    dA = int(view.depth[A])
    # incast at a receiver: per switch where its flows converge (their lowest
    # common ancestor), that switch's terms with w = its flows in + 1 (Table
    # 2's fan-in); a switch-local sub-plan's flows all converge at A
    lca = np.full(st.num_flows, A, np.int64)
    for d in range(dA + 1, int(view.depth[:view.num_hosts].max())):
        a_s, a_d = anc[d][base + st.src], anc[d][base + st.dst]
        same = (a_s == a_d) & (a_s >= view.num_hosts)
        lca[same] = a_s[same]
    if np.all(lca == A):
        fin = np.bincount(st.dst, minlength=n) + 1
        extra = recv * _inc(fin, wt, eps)
    else:
        key = st.dst * len(view.parent) + lca
        uk, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
        vol = np.bincount(inv, weights=st.share) * S
        at = uk % len(view.parent)
        ex = vol * _inc(cnt + 1, view.wt[at], view.eps[at])
        extra = np.bincount(uk // len(view.parent), weights=ex, minlength=n)
    t = max(float(np.max(recv * bs + extra)), float(np.max(send * bs)))
    for d in range(dA + 1, int(view.depth[:view.num_hosts].max())):
        a_src = anc[d][base + st.src]
        a_dst = anc[d][base + st.dst]
        out = (a_src >= view.num_hosts) & (a_src != a_dst)
        if not out.any():
            continue
        D = np.bincount(a_src[out], weights=st.share[out]) * S
        g = np.flatnonzero(D)
        beta = 1.0 / view.up_capacity[g]
        if d == dA + 1:   # the children's uplinks, where their servers' flows converge
            sending = np.zeros(n, bool)
            sending[st.src[out]] = True
            w = np.bincount(anc[d][base + np.flatnonzero(sending)], minlength=len(D))[g]
            beta = beta + _inc(w, wt, eps)
        t = max(t, float(np.max(D[g] * beta)))
    red = 0.0
    if with_reduce and st.reduce and len(st.red_node):
        per = ((st.red_fanin + 1) * network.delta + (st.red_fanin - 1) * network.gamma) \
            * st.red_share * S
        red = float(np.bincount(st.red_node, weights=per, minlength=n).max())
    return float(view.alpha[A]) + t + red


def steps_cost(view, A, steps, S, network) -> float:
    """Reduce-scatter steps and their mirrored allgather."""
    return sum(step_cost(view, A, st, S, network, True)
               + step_cost(view, A, mirror(st), S, network, False) for st in steps)


# --------------------------------------------------------------------------- candidates

def factorisations(c: int, most: int = MAX_FACTORS) -> list[tuple[int, ...]]:
    """Ordered factorisations of ``c`` into 2..``most`` factors >= 2."""
    out: list[tuple[int, ...]] = []

    def rec(rest, prefix):
        if rest == 1:
            if len(prefix) >= 2:
                out.append(tuple(prefix))
            return
        if len(prefix) >= most:
            return
        for d in range(2, rest + 1):
            if rest % d == 0:
                rec(rest // d, prefix + [d])
    rec(c, [])
    return out


def candidate_types(c: int) -> list[str]:
    """Plan types for ``c`` equal children: cps, the HCPS factorisations
    (``8x3``), ring, and rhd when ``c`` is a power of two."""
    types = ["cps"] + ["x".join(map(str, f)) for f in factorisations(c)] + ["ring"]
    if c & (c - 1) == 0 and c >= 2:
        types.append("rhd")
    return types


def type_schedule(kind: str, c: int):
    """Reduce-scatter half of plan type ``kind`` on ``c`` ranks and its
    blocks (the *parts*, ``c`` or a multiple): ``(steps, holder)`` with steps ``(src, dst, parts of each flow,
    (node, part, fan-in) of every reduction)`` and ``holder[j]`` the rank
    that ends with part ``j`` reduced."""
    if kind == "cps":
        sched = get_algorithm("cps").build(c, None, True)
    elif kind == "ring":
        sched = get_algorithm("ring").build(c, None, True, ports=1)
    elif kind == "rhd":
        sched = get_algorithm("recdoub").build(c, None, True, variant="bandwidth",
                                               layout="linear")
    else:
        sched = get_algorithm("hcps").build(c, None, True, factors=kind)
    nb = sched.num_blocks
    steps = []
    contrib = np.ones(c * nb, np.int64)       # origins summed into (rank, part), flat
    for st in sched.steps:
        if not st.label.startswith("rs"):
            continue
        tr = st.traffic
        ptr, idx = tr.block_ptr.astype(np.int64), tr.block_idx.astype(np.int64)
        fe = np.repeat(np.arange(tr.num_flows), np.diff(ptr))     # flow of every entry
        src, dst = tr.src.astype(np.int64), tr.dst.astype(np.int64)
        into = dst[fe] * nb + idx                 # (receiver, part) of every entry
        add = contrib[src[fe] * nb + idx]         # what each entry carries, before the step
        hit, cnt = np.unique(into, return_counts=True)
        if len(hit) == len(into):                 # one sender per (receiver, part)
            contrib[into] += add
        else:
            np.add.at(contrib, into, add)
        steps.append((src, dst, ptr, idx, (hit // nb, hit % nb, cnt + 1)))
    holder = np.full(nb, -1, np.int64)
    full = np.flatnonzero(contrib == c)
    holder[full % nb] = full // nb
    if np.any(holder < 0):
        raise AssertionError(f"{kind} on {c} ranks: a part has no fully reduced holder")
    return steps, holder


_TYPE_CACHE: dict = {}


def cached_type(kind: str, c: int):
    key = (kind, c)
    if key not in _TYPE_CACHE:
        _TYPE_CACHE[key] = type_schedule(kind, c)
    return _TYPE_CACHE[key]


# --------------------------------------------------------------------------- sub-plans

@dataclass
class ClassPlan:
    """GenTree's decision for one class of equal switches."""

    kind: str                     # cps, 8x3, ring, rhd or acps
    rearranged: tuple             # positions of the children rearranged
    cost: float                   # GenModel time of this switch's sub-plan (RS + AG)
    rearrange_cost: float         # of the moves it asked its children for
    finish: float                 # GenModel finish time of the sub-tree
    candidates: dict              # kind -> GenModel cost considered
    own: np.ndarray               # block -> local server holding it after the sub-plan
    steps: list                   # LocalSteps: the move (COPY) first if any, then RS


class Planner:
    """GenTree's Algorithms 1 and 2 on a :class:`TreeView` for one size."""

    def __init__(self, view: TreeView, network, S: float, rearrange: bool = True,
                 blocks: bool = False, follow: dict | None = None):
        self.view, self.network, self.S = view, network, float(S)
        self.rearrange, self.blocks = rearrange, blocks
        self.N = view.num_hosts
        self.plans: dict = {}
        #: class -> ClassPlan whose choices (type, rearranged children) are
        #: kept instead of chosen: a plan decided for one size, priced at another
        self.follow = follow

    def plan_of(self, v: int) -> ClassPlan:
        sig = self.view.signature[v]
        if sig not in self.plans:
            self.plans[sig] = self._decide(v)
        return self.plans[sig]

    def own_of(self, v: int) -> np.ndarray:
        if self.view.is_host(v):
            return np.zeros(self.N, np.int64)
        return self.plan_of(v).own

    def finish_of(self, v: int) -> float:
        return 0.0 if self.view.is_host(v) else self.plan_of(v).finish

    def _decide(self, A: int) -> ClassPlan:
        view = self.view
        kids = view.children[A]
        offs = [int(view.host_lo[c] - view.host_lo[A]) for c in kids]
        owns = [self.own_of(c) + o for c, o in zip(kids, offs, strict=True)]
        n = view.servers(A)
        # data rearrangement, child by child (Algorithm 2 lines 8-16)
        rearranged, moves, move_cost, start = [], [], 0.0, 0.0
        kept = self.follow.get(view.signature[A]) if self.follow is not None else None
        for i, c in enumerate(kids):
            fin = self.finish_of(c)
            if kept is not None and i not in kept.rearranged:
                pass
            elif self.rearrange and not view.is_host(c) and len(view.children[c]) > 1 \
                    and len(kids) > 1:
                got = self._rearrangement(A, i, c, offs[i], owns, n, kept is not None)
                if got is not None:
                    owns[i], mv, cost_mv = got
                    rearranged.append(i)
                    moves.append(mv)
                    move_cost = max(move_cost, cost_mv)
                    fin += cost_mv
            start = max(start, fin)
        equal = (len(kids) > 1 and not rearranged
                 and len({view.signature[c] for c in kids}) == 1)
        kinds = candidate_types(len(kids)) if equal else ["acps"]
        if kept is not None:
            kinds = [kept.kind]
        candidates, best = {}, None
        for kind in kinds:
            own, steps = (self._lanes(kind, owns[0] - offs[0], len(kids), n)
                           if kind != "acps" else self._acps(owns, n))
            cost = steps_cost(view, A, steps, self.S, self.network)
            candidates[kind] = cost
            if best is None or cost < best[1]:
                best = (kind, cost, own, steps)
        kind, cost, own, steps = best
        all_steps = ([_merge_steps(moves)] if moves else []) + list(steps)
        return ClassPlan(kind, tuple(rearranged), cost, move_cost, start + cost, candidates,
                         own, all_steps)

    # ---- the lanes of equal children
    def _lanes(self, kind, lane, c, n):
        """Every lane (the servers in one place of each of the ``c`` equal
        children; ``lane[b]``: the lane holding block ``b``) runs the
        reduce-scatter half of ``kind`` on its blocks, cut into the type's
        parts as evenly as the blocks allow."""
        N = self.N
        m = n // c
        steps_t, holder = cached_type(kind, c)
        order = np.argsort(lane, kind="stable")           # blocks by lane, in order
        size = np.bincount(lane, minlength=m)
        first = np.concatenate([[0], np.cumsum(size)[:-1]])
        pos = np.empty(N, np.int64)
        pos[order] = np.arange(N) - np.repeat(first, size)
        nb = len(holder)
        q, r = np.divmod(size, nb)                        # parts of q+1 (r of them), then q
        psize = q[:, None] + (np.arange(nb)[None, :] < r[:, None])       # (m, nb)
        qb, rb = q[lane], r[lane]
        big = pos < rb * (qb + 1)
        part = np.where(big, pos // np.maximum(qb + 1, 1),
                        rb + (pos - rb * (qb + 1)) // np.maximum(qb, 1))
        own = holder[part] * m + lane
        lanes = np.arange(m, dtype=np.int64)
        pedge = np.concatenate([np.zeros((m, 1), np.int64), np.cumsum(psize, axis=1)], axis=1)
        out = []
        for src_r, dst_r, ptr, idx, (rnode, rpart, rfan) in steps_t:
            F = len(src_r)
            # blocks of each flow in every lane: sums over the flow's parts
            # (CSR runs; every flow of a type carries at least one part)
            per = np.add.reduceat(psize[:, idx], ptr[:-1], axis=1).astype(np.float64)
            share = (per.T / N).reshape(-1)                               # (F, m) flat
            src = (src_r[:, None] * m + lanes[None, :]).reshape(-1)
            dst = (dst_r[:, None] * m + lanes[None, :]).reshape(-1)
            keep = share > 0
            blocks = None
            if self.blocks:
                blocks = []
                for f in range(F):
                    for k in range(m):
                        sel = [order[first[k] + pedge[k, j]:first[k] + pedge[k, j + 1]]
                               for j in idx[ptr[f]:ptr[f + 1]]]
                        blocks.append(np.concatenate(sel))
                blocks = [b for b, kf in zip(blocks, keep, strict=True) if kf]
            rn = (rnode[:, None] * m + lanes[None, :]).reshape(-1)
            rs = (psize.T[rpart] / N).reshape(-1)
            rf = np.repeat(rfan, m)
            rk = rs > 0
            out.append(LocalStep(src[keep], dst[keep], share[keep], blocks, rn[rk], rs[rk],
                                 rf[rk], True))
        return own, out

    # ---- Algorithm 1's allocation and the asymmetric co-located PS
    def _allocate(self, owns, n) -> np.ndarray:
        """Algorithm 1: server by server (children in order), each takes up
        to its quota (``⌊N/n⌋``, one more for the first ``N mod n``) of the
        blocks it holds that no one took yet; a block left over goes to the
        holder (in some child) with the most room."""
        N = self.N
        q, remain = divmod(N, n)
        taken = np.full(N, -1, np.int64)
        room = np.zeros(n, np.int64)
        for own in owns:
            order = np.argsort(own, kind="stable")
            servers, counts = np.unique(own, return_counts=True)
            ptr = np.concatenate([[0], np.cumsum(counts)])
            for i, s in enumerate(servers.tolist()):
                want = q + (1 if remain > 0 else 0)
                remain = max(remain - 1, 0)
                mine = order[ptr[i]:ptr[i + 1]]
                free = mine[taken[mine] < 0][:want]
                taken[free] = s
                room[s] = want - len(free)
        for b in np.flatnonzero(taken < 0).tolist():
            holders = np.array([own[b] for own in owns])
            s = int(holders[np.argmax(room[holders])])
            taken[b] = s
            room[s] -= 1
        return taken

    def _acps(self, owns, n):
        """Every child's holder of block ``b`` sends it straight to the
        server that reduces ``b`` (Fig. 7b); flows between the same two
        servers are one flow."""
        N = self.N
        own = self._allocate(owns, n)
        src = np.concatenate(owns)
        dst = np.tile(own, len(owns))
        blk = np.tile(np.arange(N, dtype=np.int64), len(owns))
        move = src != dst
        src, dst, blk = src[move], dst[move], blk[move]
        uniq, cnt, blocks = _block_flows(src, dst, blk, n, self.blocks)
        incoming = np.bincount(blk, minlength=N)
        has = incoming > 0
        width = len(owns) + 2
        rkey = own[has] * width + incoming[has] + 1
        u2, c2 = np.unique(rkey, return_counts=True)
        step = LocalStep(uniq // n, uniq % n, cnt / N, blocks, u2 // width, c2 / N,
                         u2 % width, True)
        return own, [step]

    # ---- data rearrangement of child i
    def _rearrangement(self, A, i, c, off, owns, n, force: bool = False):
        """Move child ``c``'s blocks onto the servers below its first ``k``
        children (``k`` from the convergence ratio) when GenModel says the
        move plus the transfer out costs less than the transfer out."""
        view = self.view
        grand = view.children[c]
        caps = np.array([view.up_capacity[g] for g in grand])
        k = max(1, math.ceil(len(grand) * view.up_capacity[c] / caps.sum()))
        if k >= len(grand):
            return None
        base = int(view.host_lo[A])
        keep_lo = int(view.host_lo[grand[0]]) - base
        keep_hi = int(view.host_hi[grand[k - 1]]) - base
        own = owns[i]
        outside = (own < keep_lo) | (own >= keep_hi)
        idx = np.flatnonzero(outside)
        width = keep_hi - keep_lo
        load = np.bincount(own[~outside] - keep_lo, minlength=width)
        new = own.copy()
        new[idx] = keep_lo + np.argsort(load, kind="stable")[np.arange(len(idx)) % width]
        uniq, cnt, blocks = _block_flows(own[idx], new[idx], idx, n, self.blocks)
        z = np.zeros(0)
        mv = LocalStep(uniq // n, uniq % n, cnt / self.N, blocks, z.astype(np.int64), z,
                       z.astype(np.int64), False)
        shift = off
        local = LocalStep(mv.src - shift, mv.dst - shift, mv.share, None, mv.red_node,
                          mv.red_share, mv.red_fanin, False)
        move_cost = (step_cost(view, c, local, self.S, self.network, False)
                     + step_cost(view, c, mirror(local), self.S, self.network, False))
        before = self._transfer_out(A, c, own, n)
        after = self._transfer_out(A, c, new, n)
        if force or move_cost + after < before:
            return new, mv, move_cost
        return None

    def _transfer_out(self, A, c, own, n) -> float:
        """Algorithm 2's all_transfer_out: what leaves child ``c`` (each
        holder keeps the share of its own child, ``1/children``, and sends the
        rest to one server per other child), over ``c``'s uplink where those
        flows converge, and out of the senders' links; both directions."""
        view = self.view
        kids = len(view.children[A])
        base = int(view.host_lo[A])
        per = np.bincount(own, minlength=n) * (kids - 1) / kids / self.N * self.S
        senders = np.count_nonzero(per)
        D = float(per.sum())
        bs = 1.0 / view.up_capacity[base:base + n]
        eps, wt = float(view.eps[A]), float(view.wt[A])
        t = max(D * (1.0 / view.up_capacity[c] + float(_inc(senders, wt, eps))),
                float(np.max(per * bs)))
        return 2 * (float(view.alpha[A]) + t)


def _block_flows(src, dst, blk, n: int, blocks: bool):
    """Block moves ``blk[i]: src[i] -> dst[i]`` as one flow per server pair:
    ``(pair key src·n + dst, blocks per flow, block lists or None)``."""
    uniq, inv, cnt = np.unique(src * n + dst, return_inverse=True, return_counts=True)
    lists = None
    if blocks:
        order = np.argsort(inv, kind="stable")
        ptr = np.concatenate([[0], np.cumsum(cnt)])
        lists = [blk[order[ptr[i]:ptr[i + 1]]] for i in range(len(uniq))]
    return uniq, cnt, lists


def _merge_steps(steps: list) -> LocalStep:
    cat = lambda name: np.concatenate([getattr(s, name) for s in steps])
    blocks = None
    if all(s.blocks is not None for s in steps):
        blocks = [b for s in steps for b in s.blocks]
    return LocalStep(cat("src"), cat("dst"), cat("share"), blocks, cat("red_node"),
                     cat("red_share"), cat("red_fanin"), steps[0].reduce)


# --------------------------------------------------------------------------- plans

@dataclass
class Plan:
    """GenTree's plan for one size: the decided classes and the tree."""

    view: TreeView
    planner: Planner
    size: float
    #: ``(kind, GenModel time, steps)`` when a flat baseline over every rank
    #: beats the tree plan (then it is the plan), else None
    flat: tuple | None = None

    @property
    def time(self) -> float:
        """GenModel time of the whole allreduce (the root's finish time)."""
        if self.flat is not None:
            return self.flat[1]
        return self.planner.finish_of(self.view.root)

    def key(self) -> tuple:
        """What the schedule depends on: every class's type and moves."""
        if self.flat is not None:
            return ("flat", self.flat[0])
        return tuple(sorted((s, cp.kind, cp.rearranged) for s, cp in self.planner.plans.items()))

    def summary(self) -> str:
        """Each switch tier's plan type, lowest first (the ``variant``)."""
        if self.flat is not None:
            return f"flat {self.flat[0]}"
        view = self.view
        order = sorted(switches_bottom_up(view), key=lambda v: (-int(view.depth[v]), v))
        kinds: dict = {}
        for v in order:   # a tier whose switches differ in plan names their sizes
            cp = self.planner.plans[view.signature[v]]
            kinds.setdefault(view.tier[v], set()).add((cp.kind, cp.rearranged))
        seen, parts = set(), []
        for v in order:
            cp = self.planner.plans[view.signature[v]]
            tier = view.tier[v]
            if len(kinds[tier]) > 1:
                tier += f" ({view.servers(v)} servers)"
            text = f"{tier}: {cp.kind}" + (" +r" if cp.rearranged else "")
            if text not in seen:
                seen.add(text)
                parts.append(text)
        return "; ".join(parts)


def make_plan(topology, network, S: float, p: int | None = None, rearrange: bool = True,
              blocks: bool = False, view: TreeView | None = None, flat: bool = True,
              follow: Plan | None = None) -> Plan:
    """GenTree's plan for a vector of ``S`` bytes (Algorithms 1 and 2), or
    a flat baseline over every rank when GenModel prices it lower (``flat``,
    up to :data:`FLAT_MAX` ranks). ``follow``: keep that plan's choices
    (made for another size) and price them at ``S``."""
    view = tree_view(topology, network, p) if view is None else view
    planner = Planner(view, network, S, rearrange, blocks,
                      None if follow is None else follow.planner.plans)
    root = planner.plan_of(view.root)
    plan = Plan(view, planner, S)
    N = view.num_hosts
    deep = any(not view.is_host(c) for c in view.children[view.root])
    if follow is not None:
        flat = follow.flat is not None
    if flat and deep and N <= FLAT_MAX:
        for kind in FLAT_KINDS:
            if kind == "rhd" and N & (N - 1):
                continue
            if follow is not None and kind != follow.flat[0]:
                continue
            _, steps = planner._lanes(kind, np.zeros(N, np.int64), N, N)
            cost = steps_cost(view, view.root, steps, S, network)
            root.candidates["flat " + kind] = cost
            if follow is not None or cost < (plan.flat[1] if plan.flat else root.finish):
                plan.flat = (kind, cost, steps)
    return plan


# --------------------------------------------------------------------------- the table
