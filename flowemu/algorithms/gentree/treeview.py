"""The tree GenTree plans on (genmodel-gentree.txt §4.2, "Understanding tree
topology"): a topology seen as a rooted tree of switches with the hosts (the
ranks) as leaves, with what GenModel needs to price a switch-local sub-tree —
each vertex's uplink capacity, the α of a path through each switch, each
switch's incast terms — and classes of equal sub-trees, so that
:mod:`flowemu.algorithms.gentree.planner` decides once per class.

``tree:`` maps one to one (a multi-site tree gets a top "Cross DC" node over
the site roots); ``leafspine:`` and ``fattree:`` take the top layer as the
root (§4.2) and a pod of a three-level fat tree as one node whose uplink is
all its agg–core links. Other families are refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...core.errors import ConfigError, show

__all__ = ["FAMILIES", "TreeView", "ancestors", "switches_bottom_up", "tree_view"]

#: the topology families GenTree plans on
FAMILIES = ("tree", "leafspine", "fattree")


@dataclass
class TreeView:
    """The tree GenTree plans on: hosts ``0..N−1`` (the ranks), then the
    switches; ``parent[v]`` (−1 at the root), children in host order."""

    topology: object
    num_hosts: int
    parent: np.ndarray                 # int64[V]
    children: list                     # list[list[int]] per vertex (hosts: [])
    label: list                        # per vertex: "Root SW", "Middle SW 3", ...
    tier: list                         # per vertex: tier name for grouping
    host_lo: np.ndarray                # int64[V] first host below
    host_hi: np.ndarray                # int64[V] one past the last host below
    up_capacity: np.ndarray            # float64[V] bytes/s leaving the vertex's region
    alpha: np.ndarray                  # float64[V] α through a switch (NaN at hosts)
    eps: np.ndarray                    # float64[V] ε of a switch's tier (s/B per flow)
    wt: np.ndarray                     # float64[V] w_t of a switch's tier
    root: int = 0
    signature: list = field(default_factory=list)   # class id per vertex
    depth: np.ndarray | None = None                  # int64[V]
    #: ancestors of the hosts by depth, built on first use (:func:`ancestors`)
    host_ancestors: dict | None = None

    def servers(self, v: int) -> int:
        return int(self.host_hi[v] - self.host_lo[v])

    def is_host(self, v: int) -> bool:
        return v < self.num_hosts


def _family(topology) -> str:
    return getattr(topology, "spec", "").split(":", 1)[0]


def _view_parent(topology, p: int):
    """``(owner, parent, names, tiers)``: every real vertex's view vertex
    (−1: none), the view tree's parents (hosts first), switch names."""
    fam = _family(topology)
    N = int(topology.num_endpoints)
    if fam == "tree":
        par = np.asarray(topology.parent, np.int64)
        depth = np.asarray(topology.depth, np.int64)
        site = np.asarray(topology.site, np.int64)
        roots = np.asarray(topology.roots, np.int64)
        V = int(topology.num_nodes)
        owner = np.arange(V, dtype=np.int64)
        parent = par.copy()
        multi = len(roots) > 1
        names, tiers = [""] * V, [""] * V
        index_in_depth: dict = {}
        for v in range(N, V):
            d, s = int(depth[v]), int(site[v])
            i = index_in_depth.get((s, d), 0)
            index_in_depth[(s, d)] = i + 1
            word = "Root SW" if d == 0 else ("Middle SW" if d == 1 else f"Level-{d} SW")
            pre = f"DC{s} " if multi else ""
            tiers[v] = pre + word
            names[v] = pre + word + ("" if d == 0 else f" {i}")
        if multi:
            parent = np.concatenate([parent, [-1]])
            parent[roots] = V
            names.append("Cross DC")
            tiers.append("Cross DC")
        return owner, parent, names, tiers
    if fam == "leafspine":
        L, H, S = topology.leaves, topology.hosts_per_leaf, topology.spines
        owner = np.concatenate([np.arange(N + L), np.full(S, N + L)])
        parent = np.concatenate([N + np.arange(N) // H, np.full(L, N + L), [-1]])
        names = [""] * N + [f"Leaf {i}" for i in range(L)] + ["Spine layer"]
        tiers = [""] * N + ["Leaf"] * L + ["Spine layer"]
        return owner, parent.astype(np.int64), names, tiers
    if fam == "fattree":
        k = topology.k
        h = k // 2
        if topology.levels == 2:
            owner = np.concatenate([np.arange(N + k), np.full(h, N + k)])
            parent = np.concatenate([N + np.arange(N) // h, np.full(k, N + k), [-1]])
            names = [""] * N + [f"Leaf {i}" for i in range(k)] + ["Spine layer"]
            tiers = [""] * N + ["Leaf"] * k + ["Spine layer"]
            return owner, parent.astype(np.int64), names, tiers
        E = k * h
        # view: hosts, edges (N..N+E), pods (N+E..N+E+k), root
        owner = np.concatenate([np.arange(N + E), N + E + np.arange(E) // h,
                                np.full(h * h, N + E + k)])
        parent = np.concatenate([N + np.arange(N) // h, N + E + np.arange(E) // h,
                                 np.full(k, N + E + k), [-1]])
        names = ([""] * N + [f"Edge {e // h}.{e % h}" for e in range(E)]
                 + [f"Pod {q}" for q in range(k)] + ["Core layer"])
        tiers = [""] * N + ["Edge"] * E + ["Pod"] * k + ["Core layer"]
        return owner, parent.astype(np.int64), names, tiers
    raise ConfigError(f"algorithm gentree: topology {getattr(topology, 'spec', show(topology))} "
                      f"is not a tree; gentree plans on {', '.join(FAMILIES)} (§4.2 restricts "
                      "GenTree to tree topologies)")


def tree_view(topology, network, p: int | None = None) -> TreeView:
    """The tree of ``topology`` GenTree plans on, priced for ``network``.

    Raises ConfigError for a family that is not a tree (see
    :data:`FAMILIES`) or a rank count outside ``2..hosts``."""
    owner, parent, names, tiers = _view_parent(topology, p)
    N = int(topology.num_endpoints)
    p = N if p is None else int(p)
    if p < 2 or p > N:
        raise ConfigError(f"algorithm gentree: ranks p={p} is not allowed on "
                          f"{topology.spec}; expected 2..{N} (one rank per host)")
    V = len(parent)
    depth = np.zeros(V, np.int64)
    cur = parent.copy()
    while np.any(cur >= 0):
        m = cur >= 0
        depth[m] += 1
        cur[m] = parent[cur[m]]
    # keep the first p hosts and the switches above them (hosts >= p are cut)
    keep = np.zeros(V, bool)
    keep[:p] = True
    frontier = np.arange(p)
    while len(frontier):
        up = parent[frontier]
        up = np.unique(up[up >= 0])
        up = up[~keep[up]]
        keep[up] = True
        frontier = up
    kept = np.flatnonzero(keep & (parent >= 0))
    by_parent = kept[np.argsort(parent[kept], kind="stable")]
    cut = np.searchsorted(parent[by_parent], np.arange(V + 1))
    children = [by_parent[cut[v]:cut[v + 1]].tolist() for v in range(V)]
    # host ranges, deepest level first (hosts are contiguous below a switch)
    lo = np.full(V, np.iinfo(np.int64).max, np.int64)
    hi = np.full(V, -1, np.int64)
    lo[:p], hi[:p] = np.arange(p), np.arange(1, p + 1)
    for d in range(int(depth.max()), 0, -1):
        m = np.flatnonzero(keep & (depth == d))
        np.minimum.at(lo, parent[m], lo[m])
        np.maximum.at(hi, parent[m], hi[m])
    for v in range(p, V):
        if len(children[v]) > 1:
            children[v].sort(key=lambda c: lo[c])
    roots = np.flatnonzero((parent < 0) & keep)
    root = int(roots[0])
    up_cap = _up_capacity(topology, network, owner, parent, depth, V)
    # tier terms: a tree level's eps=/wt= (a preset's Table 5 row), else the network's
    eps = np.full(V, np.nan)
    wt = np.full(V, np.nan)
    if _family(topology) == "tree":
        vs = getattr(topology, "vertex_incast_slope", None)
        vt = getattr(topology, "vertex_incast_threshold", None)
        nt = int(topology.num_nodes)
        if vs is not None:
            eps[:nt] = vs
            wt[:nt] = vt
        if V > nt:   # the cross-site top: level 0's terms
            e0, w0 = topology.incast_slope[0], topology.incast_threshold[0]
            eps[nt] = np.nan if e0 is None else e0
            wt[nt] = np.nan if w0 is None else w0
    net_eps = network.incast_slope if network.incast_on else 0.0
    net_wt = network.incast_threshold if network.incast_on else math.inf
    # a level that gives only one of the two terms takes the other from the network
    eps = np.where(np.isnan(eps), net_eps, eps)
    wt = np.where(np.isnan(wt), net_wt, wt)
    alpha = _switch_alpha(topology, network, children, lo, p)
    sig = _signatures(children, depth, keep, up_cap, alpha, eps, wt, p, V)
    return TreeView(topology, p, parent, children, names, tiers, lo, hi, up_cap, alpha,
                    eps, wt, root, sig, depth)


def _up_capacity(topology, network, owner, parent, depth, V) -> np.ndarray:
    """Bytes/s of the links leaving each view vertex's region (a link a -> b
    counts for every ancestor-or-self x of a's vertex that is not an
    ancestor-or-self of b's): a pod's every agg-core link, a leaf's every
    uplink, a host's link."""
    cap = np.asarray(topology.link_capacity(network), np.float64)
    a = owner[np.asarray(topology.link_src, np.int64)]
    b = owner[np.asarray(topology.link_dst, np.int64)]
    ok = (a >= 0) & (b >= 0)
    a, b, w = a[ok], b[ok], cap[ok]
    up_cap = np.zeros(V)
    while len(a):
        y = b.copy()
        for _ in range(int(depth.max()) + 1):
            m = depth[y] > depth[a]
            if not m.any():
                break
            y[m] = parent[y[m]]
        inside = y == a
        np.add.at(up_cap, a[~inside], w[~inside])
        nxt = ~inside & (parent[a] >= 0)
        a, b, w = parent[a[nxt]], b[nxt], w[nxt]
    return up_cap


def _switch_alpha(topology, network, children, lo, p) -> np.ndarray:
    """α through every switch with two children or more: the network's α
    plus what the flow engine charges a flow between the first hosts of its
    first two children (hops · hop latency + the links' latencies)."""
    V = len(children)
    alpha = np.full(V, np.nan)
    sw = [v for v in range(p, V) if len(children[v]) >= 2]
    if not sw:
        return alpha
    src = np.array([lo[children[v][0]] for v in sw], np.int32)
    dst = np.array([lo[children[v][1]] for v in sw], np.int32)
    routes = topology.route(src, dst, "split", 0)
    lat = topology.path_latency(routes, topology.link_latency(network))
    alpha[np.asarray(sw)] = network.alpha + routes.hops * network.hop_latency + lat
    return alpha


def _signatures(children, depth, keep, up_cap, alpha, eps, wt, p, V) -> list:
    """Class id per vertex: equal ids for equal sub-trees (shape, links and
    tier terms), so a plan is chosen once per class."""
    sig = np.zeros(V, np.int64)
    _, host_sig = np.unique(up_cap[:p], return_inverse=True)
    sig[:p] = host_sig
    table: dict = {}
    nxt = int(host_sig.max()) + 1
    switches = np.flatnonzero(keep[p:]) + p
    for v in switches[np.argsort(-depth[switches], kind="stable")]:
        key = (tuple(int(sig[c]) for c in children[v]), float(up_cap[v]),
               float(np.nan_to_num(alpha[v], nan=-1.0)),
               float(eps[v]), float(wt[v]))
        if key not in table:
            table[key] = nxt
            nxt += 1
        sig[v] = table[key]
    return sig.tolist()


def ancestors(view: TreeView) -> dict:
    """``anc[d][h]``: the ancestor at depth ``d`` of host ``h`` (−1 above
    the host's own depth)."""
    if view.host_ancestors is None:
        N = view.num_hosts
        hd = view.depth[:N]
        anc = {}
        cur = np.arange(N, dtype=np.int64)
        cd = hd.copy()
        for d in range(int(hd.max()), -1, -1):
            m = cd > d
            cur = cur.copy()
            cur[m] = view.parent[cur[m]]
            cd = np.where(m, cd - 1, cd)
            anc[d] = np.where(hd >= d, cur, -1)
        view.host_ancestors = anc
    return view.host_ancestors


def switches_bottom_up(view: TreeView) -> list[int]:
    """The switches of the tree, every switch after its children."""
    out, stack = [], [view.root]
    while stack:
        v = stack.pop()
        if view.is_host(v):
            continue
        out.append(v)
        stack.extend(reversed(view.children[v]))
    return out[::-1]


