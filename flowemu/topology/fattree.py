"""k-ary fat trees: the three-level fat tree of Al-Fares et al. and its
two-level folded-Clos counterpart, with optional tapering.

Three levels (Al-Fares, Loukissas, Vahdat, "A Scalable, Commodity Data Center
Network Architecture", SIGCOMM 2008, §3.1): ``k`` pods, each of ``k/2`` edge
and ``k/2`` aggregation switches of ``k`` ports; every edge switch serves
``k/2`` hosts and links to every aggregation switch of its pod; aggregation
switch ``j`` of every pod links to the cores ``j·k/2 … j·k/2 + k/2 − 1``, so
there are ``(k/2)²`` cores and ``k³/4`` hosts.

Two levels: ``k`` leaves of ``k/2`` hosts and ``k/2`` spines, every leaf
linked to every spine once (``k²/2`` hosts). This is what ``k``-port switches
build in two tiers when every switch port is used: a leaf spends half its
ports on hosts and half on spines, a spine spends its ``k`` ports on the
``k`` leaves. It is the same graph as ``leafspine:Kx(K/2)x(K/2)``; the fat
tree spelling keeps the port-count view and the ``taper`` and ``dmodk``
options of this family.

Vertices: hosts ``0..N−1`` (host ``i`` hangs off edge switch ``i // (k/2)``;
pod ``i // (k/2)²``), then the edge switches (``k·k/2``), then the aggregation
switches (``k·k/2``, agg ``j`` of pod ``q`` is number ``q·k/2 + j``), then the
cores (``(k/2)²``, core ``j·k/2 + m`` is the ``m``-th core of agg group
``j``). With two levels: hosts, then the ``k`` leaves, then the ``k/2``
spines. Link ids, with ``h = k/2``:

    levels=3                                levels=2
    host i → edge            i              host i → leaf            i
    edge → host i            N + i          leaf → host i            N + i
    edge E → agg j (pod)     2N + E·h + j   leaf l → spine s         2N + l·h + s
    agg A → edge e (pod)     3N + A·h + e   spine s → leaf l         3N + s·k + l
    agg A=(q,j) → core j·h+m 4N + A·h + m
    core C → agg of pod q    5N + C·k + q

Tapering (oversubscription) ``taper=R1[:R2]`` gives, bottom-up, the ratio of
downlink to uplink capacity of each switch tier that has uplinks: ``R1`` the
edge (leaf) tier, ``R2`` the aggregation tier (three levels only); a missing
ratio is 1. It is implemented by scaling the uplinks: an edge switch's ``h``
uplinks (and the links back down, a link being a pair of directions of one
speed) get ``1/R1`` of the host link bandwidth each, so their sum is the
``h`` host links / ``R1``; an aggregation switch's ``h`` uplinks get
``1/(R1·R2)``, its downlink capacity ``h/R1`` divided by ``R2``. ``taper=2``
(or ``taper=2:1``) halves the bandwidth above the edge tier; ``taper=1:4``
leaves edge–agg links at full speed and gives core links a quarter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.budget import reserve_topology
from ..core.errors import ConfigError, RoutingError, show
from ..kernels.fattree import fattree_fill
from .base import Routes, Topology
from .common import MAX_ENDPOINTS as MAX_HOSTS
from .common import (
    MAX_LINKS,
    check_seed,
    flow_hash,
    fmt,
    is_int,
    is_number,
    parse_int,
    parse_options,
    readonly,
)

_EXAMPLE = "e.g. fattree:k=8, fattree:k=16,levels=2 or fattree:k=8,taper=2"


@dataclass(frozen=True)
class FatTree(Topology):
    """A k-ary fat tree of ``levels`` switch tiers.

    Parameters
    ----------
    k : int
        Switch port count, even, ``>= 2``.
    levels : int
        3 (Al-Fares fat tree, ``k³/4`` hosts) or 2 (leaves and spines,
        ``k²/2`` hosts).
    taper : tuple of float
        Oversubscription ratio of each switch tier with uplinks, bottom-up
        (edge, then aggregation; one entry for two levels), each ``> 0``;
        shorter tuples are padded with 1.

    Attributes
    ----------
    spec : str
        Canonical spec, e.g. ``"fattree:k=8"``, ``"fattree:k=8,levels=2"``,
        ``"fattree:k=8,taper=2:4"`` (defaults and trailing 1 ratios omitted).
    num_endpoints : int
        ``N = k³/4`` (levels=3) or ``k²/2`` (levels=2) hosts.
    num_nodes : int
        ``N + k² + k²/4`` (levels=3) or ``N + k + k/2`` (levels=2).
    link_src, link_dst : int32[6N] (levels=3) or int32[4N] (levels=2)
    link_capacity_scale : float64[...]
        1 on host links, ``1/R1`` edge–agg (leaf–spine), ``1/(R1·R2)``
        agg–core.
    oversubscription : float
        ``R1·R2``: the bandwidth a host may inject over what the top tier
        carries for it when all hosts send across pods.
    """

    id_word = "host"   # in messages (a class attribute, not a field)
    ecmp_modes = ("split", "hash", "dmodk")
    # peak and held bytes a link (49.5 and 16 measured on fattree:k=160), with a margin
    build_link_bytes = 60
    held_link_bytes = 20
    split_every_shortest = True   # split: every minimal path, even per vertex

    k: int
    levels: int = 3
    taper: tuple = ()

    def __post_init__(self):
        k, levels = self.k, self.levels
        if not is_int(k) or k < 2 or k % 2:
            raise ConfigError(f"k: {show(k)} is not allowed; expected an even integer >= 2 "
                              f"(switch ports, {_EXAMPLE})")
        if not is_int(levels) or levels not in (2, 3):
            raise ConfigError(f"levels: {show(levels)} is not allowed; expected 2 or 3")
        k, levels = int(k), int(levels)
        tiers = levels - 1
        taper = self.taper
        if isinstance(taper, (str, bytes)) or not isinstance(taper, (tuple, list)):
            raise ConfigError(f"taper: {show(taper)} is not allowed; expected a tuple of "
                              f"numbers > 0, one per switch tier with uplinks ({tiers})")
        if len(taper) > tiers:
            raise ConfigError(f"taper: {len(taper)} ratios given; levels={levels} has {tiers} "
                              f"switch tier(s) with uplinks ({_tier_names(levels)})")
        for r in taper:
            if not is_number(r) or not np.isfinite(r) or r <= 0:
                raise ConfigError(f"taper: ratio {show(r)} is not allowed; expected a finite "
                                  "number > 0 (downlink over uplink capacity of a tier)")
        taper = tuple(float(r) for r in taper) + (1.0,) * (tiers - len(taper))
        h = k // 2
        hosts = k * h * h if levels == 3 else k * h
        links = (6 if levels == 3 else 4) * hosts
        if hosts > MAX_HOSTS:
            raise ConfigError(f"k: {k} with levels={levels} gives {hosts} hosts; at most "
                              f"{MAX_HOSTS} (2**24) are allowed")
        if links > MAX_LINKS:
            raise ConfigError(f"k: {k} with levels={levels} has {links} links; at most "
                              f"{MAX_LINKS} (2**26) are allowed")
        set_ = object.__setattr__
        set_(self, "k", k)
        set_(self, "levels", levels)
        set_(self, "taper", taper)
        opts = [f"k={k}"] + (["levels=2"] if levels == 2 else [])
        shown = list(taper)
        while shown and shown[-1] == 1.0:
            shown.pop()
        if shown:
            opts.append("taper=" + ":".join(fmt(r) for r in shown))
        set_(self, "spec", "fattree:" + ",".join(opts))
        switches = 2 * k * h + h * h if levels == 3 else k + h
        reserve_topology(self.spec, links, hosts + switches, self.build_link_bytes)
        set_(self, "num_endpoints", hosts)
        set_(self, "num_nodes", hosts + switches)
        set_(self, "oversubscription", float(np.prod(taper)))
        self._build_links()

    @property
    def half(self) -> int:
        """``k/2``: hosts per edge switch, uplinks per switch."""
        return self.k // 2

    @property
    def pods(self) -> int:
        """Pods (levels=3: ``k``); with two levels the whole tree is one pod."""
        return self.k if self.levels == 3 else 1

    def _build_links(self) -> None:
        k, h, N = self.k, self.half, self.num_endpoints
        hosts = np.arange(N, dtype=np.int64)
        edge0 = N                                  # first edge (leaf) vertex
        if self.levels == 3:
            agg0 = N + k * h
            core0 = agg0 + k * h
            # edge E -> agg j of its pod: E = q·h + e, ids E·h + j
            E = np.repeat(np.arange(k * h, dtype=np.int64), h)
            j = np.tile(np.arange(h, dtype=np.int64), k * h)
            e_up_src, e_up_dst = edge0 + E, agg0 + (E // h) * h + j
            # agg A -> edge e of its pod: A = q·h + j, ids A·h + e
            A, e = E, j
            a_dn_src, a_dn_dst = agg0 + A, edge0 + (A // h) * h + e
            # agg A = (q, j) -> core j·h + m, ids A·h + m
            m = j
            a_up_src, a_up_dst = agg0 + A, core0 + (A % h) * h + m
            # core C -> agg j = C // h of pod q, ids C·k + q
            C = np.repeat(np.arange(h * h, dtype=np.int64), k)
            q = np.tile(np.arange(k, dtype=np.int64), h * h)
            c_dn_src, c_dn_dst = core0 + C, agg0 + q * h + C // h
            src = np.concatenate([hosts, edge0 + hosts // h, e_up_src, a_dn_src, a_up_src,
                                  c_dn_src])
            dst = np.concatenate([edge0 + hosts // h, hosts, e_up_dst, a_dn_dst, a_up_dst,
                                  c_dn_dst])
            r1, r2 = self.taper
            cap = np.concatenate([np.ones(2 * N), np.full(2 * N, 1.0 / r1),
                                  np.full(2 * N, 1.0 / (r1 * r2))])
        else:
            spine0 = N + k
            leaf = np.repeat(np.arange(k, dtype=np.int64), h)
            s = np.tile(np.arange(h, dtype=np.int64), k)
            sp = np.repeat(np.arange(h, dtype=np.int64), k)
            lf = np.tile(np.arange(k, dtype=np.int64), h)
            src = np.concatenate([hosts, edge0 + hosts // h, edge0 + leaf, spine0 + sp])
            dst = np.concatenate([edge0 + hosts // h, hosts, spine0 + s, edge0 + lf])
            (r1,) = self.taper
            cap = np.concatenate([np.ones(2 * N), np.full(2 * N, 1.0 / r1)])
        set_ = object.__setattr__
        set_(self, "link_src", readonly(src.astype(np.int32)))
        set_(self, "link_dst", readonly(dst.astype(np.int32)))
        set_(self, "link_capacity_scale", readonly(cap))

    def __reduce__(self):
        # Ship only the parameters to worker processes; the arrays are rebuilt.
        return (type(self), (self.k, self.levels, self.taper))

    def endpoint_groups(self) -> tuple[np.ndarray, str]:
        """Pods (host ``i`` in pod ``i // (k/2)²``); a two-level tree's edge
        switches (host ``i`` under edge ``i // (k/2)``)."""
        h = self.k // 2
        hosts = np.arange(self.num_endpoints)
        if self.levels == 2:
            return hosts // h, "edge switch"
        return hosts // (h * h), "pod"

    def describe(self) -> dict:
        """Plain-data description: family, k, levels, pods, hosts, switches per
        tier, nodes, links, taper (one ratio per tier with uplinks) and
        oversubscription (their product)."""
        k, h = self.k, self.half
        tiers = {"edge": k * h, "aggregation": k * h, "core": h * h} if self.levels == 3 \
            else {"leaf": k, "spine": h}
        return {"family": "fattree", "k": k, "levels": self.levels, "pods": self.pods,
                "hosts": self.num_endpoints, "switches": tiers, "nodes": self.num_nodes,
                "links": self.num_links, "taper": list(self.taper),
                "oversubscription": self.oversubscription}

    # ------------------------------------------------------- aggregation trees

    has_aggregation_trees = True

    def aggregation_parent(self, vertex, tree: int = 0) -> tuple:
        """Aggregation tree ``tree`` (:meth:`Topology.aggregation_parent`):
        hosts → their edge (leaf) switch → aggregation switch ``j = tree mod
        k/2`` of the pod → core ``j·k/2 + m``, ``m = (tree div k/2) mod
        k/2`` (two levels: leaf → spine ``tree mod k/2``), so the first
        ``(k/2)²`` (``k/2``) trees use distinct cores (spines)."""
        v = np.asarray(vertex, dtype=np.int64)
        k, h, N = self.k, self.half, self.num_endpoints
        j, m = tree % h, (tree // h) % h
        parent = np.full(len(v), -1, dtype=np.int64)
        up = np.full(len(v), -1, dtype=np.int64)
        down = np.full(len(v), -1, dtype=np.int64)
        host = v < N
        parent[host], up[host], down[host] = N + v[host] // h, v[host], N + v[host]
        edge = (v >= N) & (v < N + k * h) if self.levels == 3 else (v >= N) & (v < N + k)
        E = v[edge] - N
        if self.levels == 3:
            A = (E // h) * h + j
            parent[edge] = N + k * h + A
            up[edge], down[edge] = 2 * N + E * h + j, 3 * N + A * h + E % h
            agg = (v >= N + k * h) & (v < N + 2 * k * h)
            A = v[agg] - N - k * h
            C = (A % h) * h + m
            parent[agg] = N + 2 * k * h + C
            up[agg], down[agg] = 4 * N + A * h + m, 5 * N + C * k + A // h
        else:
            parent[edge] = N + k + j
            up[edge], down[edge] = 2 * N + E * h + j, 3 * N + j * k + E
        return parent, up, down

    # ---------------------------------------------------------------- routing

    def _classes(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """0 same host, 1 same edge switch, 2 same pod, 3 across pods (levels=2:
        across leaves), int64[F]."""
        h = self.half
        cls = np.where(src // h == dst // h, 1, 3)
        if self.levels == 3:
            hh = h * h
            cls = np.where((cls == 3) & (src // hh == dst // hh), 2, cls)
        cls[src == dst] = 0
        return cls.astype(np.int64)

    def _per_class(self, ecmp: str) -> tuple[np.ndarray, np.ndarray]:
        """Entries and hops of a flow of each class, int64[4] each."""
        h = self.half
        if self.levels == 3:
            hops = np.array([0, 2, 4, 6])
            entries = np.array([0, 2, 2 + 2 * h, 2 + 2 * h + 2 * h * h]) if ecmp == "split" \
                else hops
        else:
            hops = np.array([0, 2, 0, 4])
            entries = np.array([0, 2, 0, 2 + 2 * h]) if ecmp == "split" else hops
        return entries.astype(np.int64), hops.astype(np.int64)

    def route(self, src, dst, ecmp: str = "split", seed: int = 0) -> Routes:
        """Route flows ``src[i] -> dst[i]`` between hosts over minimal paths:
        up to the lowest common ancestor tier and down again.

        Parameters
        ----------
        src, dst : int[F]
            Host ids in ``0..N−1``.
        ecmp : {"split", "hash", "dmodk"}
            ``"split"``: the flow spread evenly over every minimal path: each
            switch on the way up divides what it receives evenly over its
            ``k/2`` uplinks, so a flow between pods puts ``1/(k/2)`` on each
            edge→agg and agg→edge link and ``1/(k/2)²`` on each of the
            ``(k/2)²`` agg→core and core→agg links; within a pod it crosses
            every agg of the pod with ``1/(k/2)``; under one edge switch it
            never leaves it. ``"hash"``: one minimal path, the up-ports
            chosen by a splitmix64 hash of ``(seed, src, dst)`` (what an
            Ethernet switch's ECMP does). ``"dmodk"``: the deterministic
            destination-mod-k rule (see :meth:`dmodk_ports`). ``"dor"`` is
            refused (there are no dimensions).
        seed : int
            Hash seed (``ecmp="hash"`` only).

        Returns
        -------
        Routes
            Entries in path order (host uplink, edge uplinks, agg uplinks,
            core downlinks, agg downlinks, host downlink); ``hops`` 2 under
            one edge switch, 4 within a pod (levels=2: between leaves), 6
            between pods, 0 when ``src == dst``.
        """
        self.check_mode(ecmp)
        seed = check_seed(seed)
        src, dst = self._check_flows(src, dst)
        cls = self._classes(src, dst)
        entries, hops = self._per_class(ecmp)
        counts = entries[cls]
        flow_ptr = np.zeros(len(src) + 1, dtype=np.int64)
        np.cumsum(counts, out=flow_ptr[1:])
        total = int(flow_ptr[-1])
        link = np.empty(total, dtype=np.int32)
        frac = np.empty(total, dtype=np.float64)
        if ecmp == "split":
            up_j = up_m = np.zeros(0, dtype=np.int64)
        elif ecmp == "dmodk":
            up_j, up_m = self.dmodk_ports(dst)
        else:
            up_j, up_m = self.hash_ports(src, dst, seed)
        written = fattree_fill(src, dst, cls, up_j, up_m, flow_ptr, link, frac,
                               self.num_endpoints, self.half, self.k, self.levels,
                               ecmp == "split")
        if written != total:   # pragma: no cover - the counts and the kernel disagree
            raise RoutingError(f"fat-tree routing wrote {written} entries, expected {total} "
                               f"on {self.spec}")
        return Routes(flow_ptr=flow_ptr, link=link, frac=frac,
                      hops=hops[cls].astype(np.int32))

    def hash_ports(self, src, dst, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Up-ports ``ecmp="hash"`` picks, ``(j, m)`` int64[F] each: ``j`` the
        edge switch's uplink (the agg, or with two levels the spine), ``m``
        the agg's uplink (the core within agg group ``j``). One hash of
        ``(seed, src, dst)`` picks the path among the ``(k/2)²`` (levels=3)
        or ``k/2`` ones; within a pod only ``j`` is used."""
        h = self.half
        x = flow_hash(np.asarray(src), np.asarray(dst), seed)
        if self.levels == 2:
            return (x % np.uint64(h)).astype(np.int64), np.zeros(len(x), dtype=np.int64)
        idx = (x % np.uint64(h * h)).astype(np.int64)
        return idx // h, idx % h

    def dmodk_ports(self, dst) -> tuple[np.ndarray, np.ndarray]:
        """Up-ports of destination-mod-k routing, ``(j, m)`` int64[F] each.

        The up-port at tier ``t`` (1: edge, 2: aggregation) toward host ``d``
        is ``⌊d / (k/2)^(t−1)⌋ mod (k/2)``: the edge switch sends to agg
        ``j = d mod (k/2)``, the agg to core ``m = ⌊d/(k/2)⌋ mod (k/2)`` of its
        group (Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for
        Shift Permutations on Real Life Fat Trees", CCIT Report 776, Technion
        2010; Gómez et al., "Deterministic versus Adaptive Routing in
        Fat-Trees", IPDPS 2007). Each core then carries the traffic of exactly
        one host of every pod (core ``j·k/2 + m`` serves the hosts with
        ``d mod (k/2)² = m·k/2 + j``), so every downlink carries the flows of
        one destination and shift permutations ``d = s + c`` are non-blocking.
        """
        h = self.half
        d = np.asarray(dst, dtype=np.int64)
        return d % h, (d // h) % h

    def solver_problem(self, routes: Routes, link_capacity: np.ndarray,
                       ecmp: str) -> tuple[Routes, np.ndarray]:
        """The max-min problem of split routes with each group of parallel
        uplinks merged into one resource (exact; hash and dmodk routes are
        returned as they are).

        Split routes cross these groups of links, every flow on a group
        crossing each of its links with the same fraction ``a``:

        * the ``k/2`` uplinks of an edge switch (leaf): every flow leaving
          the edge switch, ``a = 1/(k/2)``;
        * the ``k/2`` agg→edge links into an edge switch: every flow entering
          it from another edge switch, ``a = 1/(k/2)``; with two levels the
          ``k/2`` spine→leaf links into a leaf;
        * the ``(k/2)²`` agg→core links of a pod: every flow leaving the pod,
          ``a = 1/(k/2)²``; and the ``(k/2)²`` core→agg links into a pod:
          every flow entering it.

        No other flow crosses a link of a group. So the links of a group
        ``G`` have the same load ``a·Σ x_f`` and their capacity constraints
        reduce to the tightest, ``a·Σ x_f <= min c``, i.e. ``Σ x_f <=
        |G|·min c`` with ``|G|·a = 1``: one resource crossed with fraction 1.
        Progressive filling sees the same constraints, so every flow gets
        the same max-min rate, at every event. The merged resource takes the
        id of the group's first link (agg 0, core 0): the reduced routes are
        the single paths through agg 0 and core 0 (``dmodk``-like routes with
        ``j = m = 0``), the group's other links carry nothing. A flow then has
        at most 6 entries instead of ``2 + k + 2(k/2)²``.
        """
        h = self.half
        if ecmp != "split" or h == 1 or routes.num_entries == 0:
            return routes, link_capacity
        N = self.num_endpoints
        ptr, link = routes.flow_ptr, routes.link
        has = ptr[1:] > ptr[:-1]
        # the first entry of a flow is its host uplink (id = source host), the
        # last its host downlink (id N + destination host)
        src = np.where(has, link[np.minimum(ptr[:-1], len(link) - 1)], 0).astype(np.int64)
        dst = np.where(has, link[np.maximum(ptr[1:] - 1, 0)] - N, 0).astype(np.int64)
        reduced = self._reduced_routes(src, dst, routes.hops)
        return reduced, self._reduced_capacity(link_capacity)

    def solver_routes(self, src, dst, ecmp: str, link_capacity: np.ndarray):
        """:meth:`solver_problem`'s reduced routes and capacities straight
        from the flows (split only): 6 entries a flow at most instead of
        ``2 + k + 2(k/2)²``, so a co-located PS across the pods of a
        16,000-host fat tree fits and routes in a fraction of the time."""
        if ecmp != "split" or self.half == 1:
            return None
        src, dst = self._check_flows(src, dst)
        hops = self._per_class("split")[1][self._classes(src, dst)].astype(np.int32)
        return (self._reduced_routes(src, dst, hops),
                self._reduced_capacity(link_capacity))

    def solver_route_entries(self, src, dst, ecmp: str) -> int | None:
        if ecmp != "split" or self.half == 1:
            return None
        src, dst = self._check_flows(src, dst)
        return int(self._per_class("dmodk")[0][self._classes(src, dst)].sum())

    def _reduced_routes(self, src, dst, hops) -> Routes:
        """The single paths through agg 0 and core 0 (``dmodk``-like routes
        with ``j = m = 0``) of flows ``src -> dst`` (hosts)."""
        h, k, N = self.half, self.k, self.num_endpoints
        cls = self._classes(src, dst)
        counts = self._per_class("dmodk")[0][cls]
        flow_ptr = np.zeros(len(src) + 1, dtype=np.int64)
        np.cumsum(counts, out=flow_ptr[1:])
        total = int(flow_ptr[-1])
        red_link = np.empty(total, dtype=np.int32)
        red_frac = np.empty(total, dtype=np.float64)
        zero = np.zeros(len(src), dtype=np.int64)
        fattree_fill(np.asarray(src, np.int64), np.asarray(dst, np.int64), cls, zero, zero,
                     flow_ptr, red_link, red_frac, N, h, k, self.levels, False)
        return Routes(flow_ptr=flow_ptr, link=red_link, frac=red_frac, hops=hops)

    def _reduced_capacity(self, link_capacity: np.ndarray) -> np.ndarray:
        """Every group of parallel links merged into its first link: the
        group's size times its slowest link (see :meth:`solver_problem`)."""
        h, k, N = self.half, self.k, self.num_endpoints
        cap = np.array(link_capacity, dtype=np.float64, copy=True)
        # edge (leaf) uplinks: 2N + E·h + j, grouped by E
        up = cap[2 * N:3 * N].reshape(-1, h)
        cap[2 * N:3 * N:h] = h * up.min(axis=1)
        if self.levels == 3:
            # agg -> edge: 3N + (q·h + j)·h + e, grouped by (q, e)
            down = cap[3 * N:4 * N].reshape(k, h, h)
            cap[3 * N:4 * N].reshape(k, h, h)[:, 0, :] = h * down.min(axis=1)
            # agg -> core of pod q: 4N + q·h² + (j·h + m)
            hh = h * h
            pod_up = cap[4 * N:5 * N].reshape(k, hh)
            cap[4 * N:5 * N:hh] = hh * pod_up.min(axis=1)
            # core -> agg of pod q: 5N + C·k + q, grouped by q
            pod_down = cap[5 * N:6 * N].reshape(hh, k)
            cap[5 * N:5 * N + k] = hh * pod_down.min(axis=0)
        else:
            # spine -> leaf l: 3N + s·k + l, grouped by l
            down = cap[3 * N:4 * N].reshape(h, k)
            cap[3 * N:3 * N + k] = h * down.min(axis=0)
        return cap

    def max_route_entries(self, ecmp: str = "split") -> int:
        """One flow's entries at most: split ``2 + k + 2(k/2)²`` (levels=3) or
        ``2 + k`` (levels=2); one path 6 or 4."""
        self.check_mode(ecmp)
        return int(self._per_class(ecmp)[0].max())

    def route_entries(self, src, dst, ecmp: str = "split") -> int:
        """Route entries :meth:`route` would return, counted from the flow
        classes."""
        self.check_mode(ecmp)
        src, dst = self._check_flows(src, dst)
        return int(self._per_class(ecmp)[0][self._classes(src, dst)].sum())


def _tier_names(levels: int) -> str:
    return "edge, aggregation" if levels == 3 else "leaf"


def _parse_k(text: str) -> int:
    """``k``: an even integer >= 2 (one message for k=0 and k=5 alike)."""
    k = parse_int("k", text, f"switch ports, {_EXAMPLE}", low=2, kind="an even integer")
    if k % 2:
        raise ConfigError(f"k is {k}; expected an even integer >= 2 (switch ports, {_EXAMPLE})")
    return k


def _parse_levels(text: str) -> int:
    v = parse_int("levels", text, _EXAMPLE)
    if v not in (2, 3):
        raise ConfigError(f"levels is {v}; expected 2 or 3")
    return v


def _parse_taper(text: str) -> tuple:
    parts = [p.strip() for p in text.split(":")]
    ratios = []
    for p in parts:
        try:
            v = float(p)
        except ValueError:
            v = float("nan")
        if not (np.isfinite(v) and v > 0):
            raise ConfigError(f"taper is {text.strip()!r}; expected R1[:R2], each a number > 0 "
                              "(oversubscription of the edge tier, then the aggregation tier, "
                              "e.g. taper=2 or taper=2:4)")
        ratios.append(v)
    return tuple(ratios)


def parse_fattree(params: str) -> FatTree:
    """``"k=K[,levels=3|2][,taper=R1[:R2]]"`` -> :class:`FatTree`."""
    opts = [part.strip() for part in params.split(",")] if params.strip() else []
    values = parse_options(opts, {
        "k": _parse_k,
        "levels": _parse_levels,
        "taper": _parse_taper},
        "k=EVEN INT >= 2 (required), levels=2|3, taper=R1[:R2]")
    if "k" not in values:
        raise ConfigError(f"k is missing; expected k=K, an even number of switch ports "
                          f"({_EXAMPLE})")
    k = values["k"]
    levels = values.get("levels", 3)
    taper = values.get("taper", ())
    if len(taper) > levels - 1:
        raise ConfigError(f"taper has {len(taper)} ratios; levels={levels} has {levels - 1} "
                          f"switch tier(s) with uplinks ({_tier_names(levels)}): "
                          + ("taper=R1[:R2]" if levels == 3 else "taper=R1"))
    return FatTree(k, levels, taper)
