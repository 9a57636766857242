"""Multi-tier trees given level by level, cross-site trees, and the GenTree presets.

A tree is a root switch whose children are hosts or switches, each switch in
turn a list of *groups*: ``c`` hosts, or ``c`` copies of a child switch. The
spec writes a switch as its groups joined by ``+``, a group as ``COUNT`` (hosts)
or ``COUNTxCHILD`` (``COUNT`` child switches), a child as ``HOSTS``,
``COUNTxCHILD`` or ``(switch)``::

    tree:24                one switch, 24 hosts
    tree:16x24             a root, 16 middle switches of 24 hosts each
    tree:8x32+8x16         a root, 8 middle switches of 32 hosts and 8 of 16
    tree:2x(4x8+16)        a root, 2 switches each holding 4 switches of 8
                           hosts and 16 hosts of their own
    tree:dc(8x32)+dc(8x16) two data centres (each a tree) whose root switches
                           are joined by one link (pairwise with more sites)

Levels and options
------------------
Links are grouped in *levels*, top first: level ``d`` holds the links between
the switches at depth ``d`` (the root is at depth 0) and their children; in a
multi-site tree level 0 is the cross-site tier (the links joining the roots)
and the tree levels follow. Per-level options list one value per level, top
first, separated by ``:`` (or one value for every level); an empty entry keeps
the default of that level:

``uplinks=U0:U1:...``   parallel links between a switch and each child (1)
``bw=B0:B1:...``        bandwidth: a rate with its unit (``50Gb/s``, absolute)
                        or ``Kx`` (K times the network bandwidth; default 1x)
``lat=T0:T1:...``       link latency: a time with its unit (``6.58ms``,
                        absolute) or ``Kx`` (K times the network link
                        latency; default 1x)
``eps=E0:E1:...``       GenModel incast slope ε, seconds per byte per flow
                        above the threshold (``30.5ps``)
``wt=W0:W1:...``        GenModel incast threshold w_t (a flow count)

e.g. ``tree:16x24,bw=50Gb/s:5Gb/s,lat=6.58ms:6.58ms``.

Incast per tier (GenModel §3.2, eq. 7-10, Table 5): a flow *converges* at
the highest switch on its path, its sender's and receiver's lowest common
ancestor (a flow between sites at the cross-site tier, level 0), and is
charged the incast terms of that switch's level: the level of the links from
that switch to its children. Each receiver gets one ingress resource per
level at which flows into it converge; its fan-in ``w`` counts the active
flows of that level into the receiver, its ``(w_t, ε)`` are the level's
``wt=`` / ``eps=`` (the network's ``incast_threshold`` / ``incast_slope``
where the level gives none; a level's terms apply even when the network's
incast is off), its base capacity the receiver's ingress bandwidth
(:meth:`Tree.incast_classes`, :meth:`Tree.flow_incast_class`). So a
co-located PS inside one middle switch pays the middle level's terms for
its fan-in there, and one across the root the root level's. A one-level tree
(``tree:24``, ``SS24``) has one class: exactly the single-switch model. The
terms are also kept per vertex (``vertex_incast_slope`` /
``vertex_incast_threshold``: a switch its own level's, a host its parent's).

Routing
-------
A tree has one path between two hosts: up to their lowest common ancestor and
down (across the cross-site link when the hosts sit in different sites).
``ecmp="split"`` spreads each hop evenly over the parallel links of that hop,
``"hash"`` picks one of them per flow and hop by a seeded hash; with one link
per hop both give the same single path. ``"dor"`` is refused.

Vertices: hosts ``0..N−1`` in depth-first order (the hosts below one switch
are contiguous, so linear rank placement keeps neighbours close), then the
switches in level order (site roots first, then depth 1 left to right, ...).
Link ids: every non-root vertex ``v`` has ``U`` (its level's ``uplinks``)
contiguous links up to its parent, ``up0[v] ..``, then in the same order the
links down into it, ``num_up + up0[v] ..``; the cross-site links come last.

GenTree presets
---------------
``tree:SS24``, ``SS32``, ``SYM384``, ``SYM512``, ``ASY384`` and ``CDC384``
(genmodel-gentree.txt §5.3, Fig. 11) with Table 5's per-tier parameters: see
:mod:`flowemu.topology.treepresets` for the structures and our reading of
Table 5.

Modules of the family: :mod:`~flowemu.topology.treeshape` (the structure and
its grammar), :mod:`~flowemu.topology.treepresets` (the GenTree presets),
this module (the :class:`Tree` and its routing) and
:mod:`~flowemu.topology.treespec` (the spec parser, built on :class:`Tree`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.budget import reserve_topology
from ..core.errors import ConfigError, show
from .base import Routes, Topology
from .common import (
    check_seed,
    flow_hash,
    fmt,
    is_int,
    is_number,
    rate_text,
    readonly,
    time_text,
)
from .treepresets import GENTREE_PRESETS, preset_genmodel, preset_params

#: where a tree charges incast (its ``incast=`` option)
INCAST_AT = ("receiver", "switch")
from .treeshape import (
    MAX_LEVELS,
    MAX_SITES,
    check_switch,
    expand_switch,
    level_words,
    normal_structure,
    render_structure,
    structure_sizes,
    weighted_links,
)

#: largest number of hosts, of vertices and of links a tree may have
MAX_HOSTS = 2**24
MAX_NODES = 2**25
MAX_LINKS = 2**26


# ------------------------------------------------------------ per-level values

def _level_tuple(name: str, value, levels: int, check, default):
    """A per-level option as a tuple of ``levels`` values (None -> default)."""
    if value is None:
        return (default,) * levels
    if not isinstance(value, (tuple, list)):
        raise ConfigError(f"{name}: expected one value per level ({levels}, top first), got "
                          f"{show(value)}")
    if len(value) != levels:
        raise ConfigError(f"{name}: {len(value)} value(s) given but the tree has {levels} "
                          "level(s), top first; use None for a level's default")
    return tuple(default if v is None else check(v) for v in value)


def _positive_number(name: str, what: str):
    def check(v):
        if not is_number(v) or not math.isfinite(v) or v <= 0:
            raise ConfigError(f"{name}: {show(v)} is not allowed; expected a finite number > 0 "
                              f"({what})")
        return float(v)
    return check


def _nonneg_number(name: str, what: str, allow_inf: bool = False):
    def check(v):
        if not is_number(v) or math.isnan(v) or v < 0 or (math.isinf(v) and not allow_inf):
            raise ConfigError(f"{name}: {show(v)} is not allowed; expected a number >= 0 "
                              f"({what})")
        return float(v)
    return check


def _uplinks_check(v):
    if not is_int(v) or v < 1:
        raise ConfigError(f"uplinks: {show(v)} is not allowed; expected an integer >= 1 "
                          "(parallel links between a switch and each child)")
    return int(v)


# ------------------------------------------------------------------ the family

@dataclass(frozen=True)
class Tree(Topology):
    """A multi-tier tree, possibly several sites whose roots are joined.

    Parameters
    ----------
    sites : tuple of switch structures
        One root switch per site (one for a plain tree). A switch is a tuple
        of groups ``(count, child)``: ``count`` hosts when ``child`` is None,
        else ``count`` copies of the switch ``child``; e.g. ``16x24`` is
        ``(((16, ((24, None),)),),)``. Use :func:`flowemu.topology.treespec.parse_tree` for spec text.
    uplinks : tuple of int, optional
        Per level (top first): parallel links between a switch and each child
        (1). The cross-site level is one link per pair of roots times this.
    bandwidth : tuple of float or None, optional
        Per level: absolute bandwidth in bytes/s, None for the scaled default.
    capacity_scale : tuple of float or None, optional
        Per level: bandwidth as a multiple of the network's (1); set to 1
        where ``bandwidth`` is given.
    latency : tuple of float or None, optional
        Per level: absolute link latency in seconds, None for the default.
    latency_scale : tuple of float or None, optional
        Per level: latency as a multiple of the network's link latency (1);
        set to 1 where ``latency`` is given.
    incast_slope, incast_threshold : tuple of float or None, optional
        Per level: GenModel ε (s per byte per flow above w_t) and w_t,
        charged to the flows that converge at that level (None: the
        network's; see :meth:`flow_incast_class`).
    preset : str, optional
        The GenTree preset this tree is (its spec is then ``tree:NAME``).

    Levels: level ``d`` holds the links between depth-``d`` switches and their
    children; with several sites level 0 is the cross-site tier and the tree
    levels follow.

    Attributes
    ----------
    spec : str
        Canonical spec, e.g. ``"tree:16x24,bw=50Gb/s:5Gb/s"`` or ``"tree:SYM384"``.
    num_endpoints, num_nodes : int
        Hosts; hosts + switches.
    num_levels : int
    parent : int64[num_nodes]
        Parent vertex of each vertex, -1 at a site's root.
    depth : int64[num_nodes]
        Depth in its site (roots 0).
    site : int64[num_nodes]
        Site of each vertex.
    link_level : int32[L]
        Level of each link.
    vertex_incast_slope, vertex_incast_threshold : float64[num_nodes] or None
        The level terms at each vertex (a switch: its own level, the links to
        its children; a host: its parent's), NaN where that level gives none;
        None when no level gives any.
    genmodel : dict or None
        For a preset: Table 5 as printed and its per-byte host terms.
    """
    # peak and held bytes a link (96 and 40 measured on tree:4096x256), with a margin
    build_link_bytes = 116
    held_link_bytes = 48

    id_word = "host"   # in messages (a class attribute, not a field)

    sites: tuple
    uplinks: tuple | None = None
    bandwidth: tuple | None = None
    capacity_scale: tuple | None = None
    latency: tuple | None = None
    latency_scale: tuple | None = None
    incast_slope: tuple | None = None
    incast_threshold: tuple | None = None
    preset: str | None = None
    #: where incast is charged: "receiver" (each receiver's ingress, per
    #: level of convergence) or "switch" (every switch egress link, its level's terms)
    incast_at: str = "receiver"

    def __post_init__(self):
        sites = self.sites
        if not isinstance(sites, tuple) or not sites:
            raise ConfigError(f"sites: {show(sites)} is not allowed; expected a non-empty tuple "
                              "of switch structures")
        if len(sites) > MAX_SITES:
            raise ConfigError(f"sites: {len(sites)} sites; at most {MAX_SITES} are allowed")
        for sw in sites:
            check_switch(sw, "sites")
        sites = tuple(normal_structure(sw) for sw in sites)
        sizes = [structure_sizes(sw) for sw in sites]
        hosts = sum(h for h, _, _ in sizes)
        switches = sum(s for _, s, _ in sizes)
        depth = max(d for _, _, d in sizes)
        text = render_structure(sites)
        if hosts < 2:
            raise ConfigError(f"{text} has {hosts} host; at least 2 hosts are needed")
        if hosts > MAX_HOSTS:
            raise ConfigError(f"{text} has {hosts} hosts; at most {MAX_HOSTS} (2**24) are "
                              "allowed")
        if hosts + switches > MAX_NODES:
            raise ConfigError(f"{text} has {hosts + switches} vertices; at most {MAX_NODES} "
                              "(2**25) are allowed")
        cross = len(sites) > 1
        levels = depth + 1 + cross
        if levels > MAX_LEVELS:
            raise ConfigError(f"{text} has {levels} levels; at most {MAX_LEVELS} are allowed")
        set_ = object.__setattr__
        set_(self, "sites", sites)
        set_(self, "num_levels", levels)
        set_(self, "uplinks", _level_tuple("uplinks", self.uplinks, levels, _uplinks_check, 1))
        set_(self, "bandwidth", _level_tuple(
            "bandwidth", self.bandwidth, levels,
            _positive_number("bandwidth", "bytes/s of one link at that level"), None))
        set_(self, "capacity_scale", _level_tuple(
            "capacity_scale", self.capacity_scale, levels,
            _positive_number("capacity_scale", "a multiple of the network bandwidth"), 1.0))
        set_(self, "latency", _level_tuple(
            "latency", self.latency, levels,
            _nonneg_number("latency", "seconds per link at that level"), None))
        set_(self, "latency_scale", _level_tuple(
            "latency_scale", self.latency_scale, levels,
            _nonneg_number("latency_scale", "a multiple of the network link latency"), 1.0))
        set_(self, "incast_slope", _level_tuple(
            "incast_slope", self.incast_slope, levels,
            _nonneg_number("incast_slope", "GenModel ε, seconds per byte per flow above w_t"),
            None))
        set_(self, "incast_threshold", _level_tuple(
            "incast_threshold", self.incast_threshold, levels,
            _nonneg_number("incast_threshold", "GenModel w_t, a flow count", allow_inf=True),
            None))
        # an absolute value overrides the scale: keep the scale at 1 there so
        # that the spec (which prints one of them) rebuilds an equal tree
        set_(self, "capacity_scale", tuple(
            1.0 if b is not None else c
            for b, c in zip(self.bandwidth, self.capacity_scale, strict=True)))
        set_(self, "latency_scale", tuple(
            1.0 if t is not None else c
            for t, c in zip(self.latency, self.latency_scale, strict=True)))
        # per-pair cross links times uplinks, counted before allocating
        up = self.uplinks
        links = 0
        for sw in sites:
            links += 2 * weighted_links(sw, up, int(cross))
        links += len(sites) * (len(sites) - 1) * up[0] if cross else 0
        if links > MAX_LINKS:
            raise ConfigError(f"{text} with uplinks={':'.join(map(str, up))} has {links} "
                              f"links; at most {MAX_LINKS} (2**26) are allowed")
        if self.preset is not None:
            # the spec says only the preset's name: the network must be exactly it
            if self.preset not in GENTREE_PRESETS:
                raise ConfigError(f"preset: {show(self.preset)} is not allowed; presets: "
                                  f"{', '.join(GENTREE_PRESETS)}")
            mine = {k: getattr(self, k) for k in preset_params(self.preset)}
            mine["sites"] = sites
            if mine != preset_params(self.preset):
                raise ConfigError(f"preset: {self.preset} does not describe this tree; build "
                                  "a preset with flowemu.topology.treespec.preset_tree(name)")
        set_(self, "num_endpoints", hosts)
        set_(self, "num_nodes", hosts + switches)
        set_(self, "structure", text)
        if self.incast_at not in INCAST_AT:
            raise ConfigError(f"incast: {show(self.incast_at)} is not allowed; expected one of "
                              f"{', '.join(INCAST_AT)}")
        where = "" if self.incast_at == "receiver" else f",incast={self.incast_at}"
        set_(self, "spec", (f"tree:{self.preset}" if self.preset else
                            "tree:" + self._options_text()) + where)
        reserve_topology(self.spec, links, hosts + switches, self.build_link_bytes)
        self._build()

    # ------------------------------------------------------------ construction

    def _options_text(self) -> str:
        """Structure and non-default options, the body of the canonical spec."""
        parts = [self.structure]
        per_level = [
            ("uplinks", [None if u == 1 else str(u) for u in self.uplinks]),
            ("bw", [rate_text(b) if b is not None else
                    (None if s == 1.0 else f"{fmt(s)}x")
                    for b, s in zip(self.bandwidth, self.capacity_scale, strict=True)]),
            ("lat", [time_text(t) if t is not None else
                     (None if s == 1.0 else f"{fmt(s)}x")
                     for t, s in zip(self.latency, self.latency_scale, strict=True)]),
            ("eps", [None if e is None else time_text(e) for e in self.incast_slope]),
            ("wt", [None if w is None else ("inf" if math.isinf(w) else fmt(w))
                    for w in self.incast_threshold]),
        ]
        for key, values in per_level:
            if any(v is not None for v in values):
                parts.append(f"{key}=" + ":".join(v or "" for v in values))
        return ",".join(parts)

    def _build(self) -> None:
        cross = len(self.sites) > 1
        parts = [expand_switch(sw) for sw in self.sites]
        n_hosts = sum(len(hp) for hp, _, _ in parts)
        # global switch ids before the level-order sort: sites one after another
        host_parent, sw_parent, sw_depth, sw_site = [], [], [], []
        base = 0
        for i, (hp, sp, sd) in enumerate(parts):
            host_parent.append(hp + base)
            sw_parent.append(np.where(sp < 0, -1, sp + base))
            sw_depth.append(sd)
            sw_site.append(np.full(len(sp), i, dtype=np.int64))
            base += len(sp)
        host_parent = np.concatenate(host_parent)
        sw_parent = np.concatenate(sw_parent)
        sw_depth = np.concatenate(sw_depth)
        sw_site = np.concatenate(sw_site)
        # level order: depth first, then site and depth-first position (stable)
        order = np.argsort(sw_depth, kind="stable")
        vertex_of = np.empty(len(order), dtype=np.int64)
        vertex_of[order] = n_hosts + np.arange(len(order), dtype=np.int64)
        n = n_hosts + len(order)
        parent = np.empty(n, dtype=np.int64)
        parent[:n_hosts] = vertex_of[host_parent]
        sp = sw_parent[order]
        parent[n_hosts:] = np.where(sp < 0, -1, vertex_of[np.maximum(sp, 0)])
        depth = np.empty(n, dtype=np.int64)
        depth[n_hosts:] = sw_depth[order]
        depth[:n_hosts] = depth[parent[:n_hosts]] + 1
        site = np.empty(n, dtype=np.int64)
        site[n_hosts:] = sw_site[order]
        site[:n_hosts] = site[parent[:n_hosts]]
        roots = np.flatnonzero(parent < 0)
        set_ = object.__setattr__
        set_(self, "parent", readonly(parent))
        set_(self, "depth", readonly(depth))
        set_(self, "site", readonly(site))
        set_(self, "roots", readonly(roots.astype(np.int64)))
        set_(self, "num_switches", n - n_hosts)

        # links: U up-links per non-root vertex (contiguous), then the same down
        child = np.flatnonzero(parent >= 0)
        up_level = depth[parent[child]] + int(cross)      # level of v's links to its parent
        uplinks = np.asarray(self.uplinks, dtype=np.int64)
        copies = uplinks[up_level]
        up0 = np.full(n, -1, dtype=np.int64)
        starts = np.zeros(len(child), dtype=np.int64)
        np.cumsum(copies[:-1], out=starts[1:])
        up0[child] = starts
        num_up = int(copies.sum())
        vertex = np.repeat(child, copies)
        level = np.repeat(up_level, copies)
        src = [vertex, parent[vertex]]
        dst = [parent[vertex], vertex]
        levels = [level, level]
        cross0 = 2 * num_up
        if cross:
            # every ordered pair of roots, U0 parallel links each
            k = len(roots)
            a, b = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
            off = a != b
            ua = np.repeat(a[off], self.uplinks[0])
            ub = np.repeat(b[off], self.uplinks[0])
            src.append(roots[ua])
            dst.append(roots[ub])
            levels.append(np.zeros(len(ua), dtype=np.int64))
        link_src = np.concatenate(src).astype(np.int32)
        link_dst = np.concatenate(dst).astype(np.int32)
        link_level = np.concatenate(levels).astype(np.int32)
        set_(self, "_up0", readonly(up0))
        set_(self, "_num_up", num_up)
        set_(self, "_cross0", cross0)
        set_(self, "link_src", readonly(link_src))
        set_(self, "link_dst", readonly(link_dst))
        set_(self, "link_level", readonly(link_level))
        # the level of each vertex's incoming link (for the per-link arrays)
        set_(self, "_vertex_up_level", readonly(np.where(parent >= 0,
                                                         depth[np.maximum(parent, 0)]
                                                         + int(cross), 0)))

        scale = np.asarray(self.capacity_scale, dtype=np.float64)
        bw = np.array([np.nan if b is None else b for b in self.bandwidth])
        lat_scale = np.asarray(self.latency_scale, dtype=np.float64)
        lat = np.array([np.nan if t is None else t for t in self.latency])
        set_(self, "link_capacity_scale",
             readonly(np.where(np.isnan(bw), scale, 1.0)[link_level]))
        if not np.isnan(bw).all():
            set_(self, "link_bandwidth_abs", readonly(bw[link_level]))
        if (lat_scale != 1.0).any():
            set_(self, "link_latency_scale", readonly(lat_scale[link_level]))
        if not np.isnan(lat).all():
            set_(self, "link_latency_abs", readonly(lat[link_level]))

        # per-vertex incast terms: a switch has its own level's, a host its parent's
        own_level = depth + int(cross)
        vertex_level = np.where(np.arange(n) < n_hosts, self._vertex_up_level, own_level)
        for name, values in (("incast_slope", self.incast_slope),
                             ("incast_threshold", self.incast_threshold)):
            arr = None
            if any(v is not None for v in values):
                per_level = np.array([np.nan if v is None else v for v in values])
                arr = readonly(per_level[np.minimum(vertex_level, self.num_levels - 1)])
            set_(self, f"vertex_{name}", arr)

    def __reduce__(self):
        # Ship only the parameters to worker processes; the arrays are rebuilt.
        return (_rebuild, (self.sites, self.uplinks, self.bandwidth, self.capacity_scale,
                           self.latency, self.latency_scale, self.incast_slope,
                           self.incast_threshold, self.preset, self.incast_at))

    # ---------------------------------------------------------------- queries

    has_aggregation_trees = True

    def aggregation_parent(self, vertex, tree: int = 0) -> tuple:
        """Aggregation tree ``tree`` (:meth:`Topology.aggregation_parent`):
        the tree itself, over parallel link ``tree mod U`` of each hop
        (``U`` its level's ``uplinks``); a site's root is a top (sites are
        joined by cross-site links, not by a switch)."""
        v = np.asarray(vertex, dtype=np.int64)
        parent = np.asarray(self.parent)[v]
        has = parent >= 0
        copies = np.asarray(self.uplinks, dtype=np.int64)[self._vertex_up_level[v]]
        up = np.where(has, self._up0[v] + tree % copies, -1)
        down = np.where(has, self._num_up + up, -1)
        return parent, up, down

    @property
    def expanded_spec(self) -> str:
        """The spec written out (a preset's structure and options)."""
        return "tree:" + self._options_text() + (
            "" if self.incast_at == "receiver" else f",incast={self.incast_at}")

    @property
    def genmodel(self) -> dict | None:
        """For a GenTree preset: Table 5 as printed (``table5``, per float),
        the tiers of its levels (top first), and the server terms per byte
        (``alpha`` s, ``gamma`` and ``delta`` s/byte) for a Network."""
        if self.preset is None:
            return None
        return preset_genmodel(self.preset)

    def describe(self) -> dict:
        """Plain-data description: family, spec, preset, structure, sites,
        hosts, switches, nodes, links, levels and per-level lists (top first:
        ``level_names``, ``uplinks``, ``bandwidth`` (bytes/s or None),
        ``capacity_scale``, ``latency`` (s or None), ``latency_scale``,
        ``incast_slope``, ``incast_threshold``), plus ``genmodel`` for a
        preset."""
        cross = len(self.sites) > 1
        out = {"family": "tree", "spec": self.spec, "preset": self.preset,
               "structure": self.structure, "expanded": self.expanded_spec,
               "sites": len(self.sites), "hosts": self.num_endpoints,
               "switches": self.num_switches, "nodes": self.num_nodes,
               "links": self.num_links, "levels": self.num_levels,
               "level_names": level_words(len(self.sites), self.num_levels - 1 - cross),
               "uplinks": list(self.uplinks), "bandwidth": list(self.bandwidth),
               "capacity_scale": list(self.capacity_scale), "latency": list(self.latency),
               "latency_scale": list(self.latency_scale),
               "incast_slope": list(self.incast_slope),
               "incast_threshold": list(self.incast_threshold), "incast_at": self.incast_at}
        if self.preset is not None:
            out["genmodel"] = self.genmodel
        return out

    # ---------------------------------------------------------------- routing

    def _walk(self, src, dst, visit) -> np.ndarray:
        """The lowest-common-ancestor walk, one numpy step per level (no loop
        over flows).

        Calls ``visit(side, flows, vertex)`` for the flows whose path takes
        the link(s) between ``vertex`` and its parent: ``side`` 0 on the way
        up from the source (in path order), 1 on the way down to the
        destination (in reverse path order). Returns ``(top, cross)``: the
        vertex each flow's walk ends at on the source side (the lowest common
        ancestor, or the source's site root) and the mask of flows that cross
        between sites (their walk ends at two distinct roots)."""
        parent, depth = self.parent, self.depth
        a, b = src.copy(), dst.copy()
        live = np.flatnonzero(a != b)
        while len(live):
            va, vb = a[live], b[live]
            da, db = depth[va], depth[vb]
            pa, pb = parent[va], parent[vb]
            # lift the deeper end (both at equal depth); a root cannot be lifted
            move_a = (da >= db) & (pa >= 0)
            move_b = (db >= da) & (pb >= 0)
            if not (move_a.any() or move_b.any()):
                break                                   # only distinct site roots left
            if move_a.any():
                visit(0, live[move_a], va[move_a])
                a[live[move_a]] = pa[move_a]
            if move_b.any():
                visit(1, live[move_b], vb[move_b])
                b[live[move_b]] = pb[move_b]
            live = live[a[live] != b[live]]
        return a, a != b

    def _counts(self, src, dst, ecmp, steps=None):
        """Entries and hops of every flow, and the cross-site mask; ``steps``
        (a list) also records the walk for :meth:`route` to fill from."""
        entries = np.zeros(len(src), dtype=np.int64)
        hops = np.zeros(len(src), dtype=np.int64)
        copies = np.asarray(self.uplinks, dtype=np.int64)[self._vertex_up_level]

        def visit(side, flows, vertex):
            entries[flows] += copies[vertex] if ecmp == "split" else 1
            hops[flows] += 1
            if steps is not None:
                steps.append((side, flows, vertex))

        _, cross = self._walk(src, dst, visit)
        cross_copies = self.uplinks[0] if ecmp == "split" else 1
        entries += np.where(cross, cross_copies, 0)
        hops += cross
        return entries, hops, cross

    def route(self, src, dst, ecmp: str = "split", seed: int = 0) -> Routes:
        """Route flows ``src[i] -> dst[i]`` between hosts.

        Parameters
        ----------
        src, dst : int[F]
            Host ids in ``0..N−1``.
        ecmp : {"split", "hash"}
            The one path up to the lowest common ancestor (or the site root
            and across to the other site's root) and down. ``"split"``:
            each hop spread evenly over its parallel links (fraction
            ``1/uplinks``); ``"hash"``: one of them per flow and hop by a
            splitmix64 hash of ``(seed, src, dst, level, direction)``. With
            one link per hop both give the same path. ``"dor"`` is refused.
        seed : int
            Hash seed (``ecmp="hash"`` only).

        Returns
        -------
        Routes
            Entries in path order; ``hops`` is the number of links on the
            path (parallel links count once), 0 when ``src == dst``.
        """
        self.check_mode(ecmp)
        seed = check_seed(seed)
        src, dst = self._check_flows(src, dst)
        steps: list = []
        entries, hops, cross = self._counts(src, dst, ecmp, steps)
        flow_ptr = np.zeros(len(src) + 1, dtype=np.int64)
        np.cumsum(entries, out=flow_ptr[1:])
        link = np.empty(int(flow_ptr[-1]), dtype=np.int32)
        frac = np.ones(len(link), dtype=np.float64)
        front = flow_ptr[:-1].copy()        # next entry on the way up
        back = flow_ptr[1:].copy()          # one past the last entry on the way down
        level_copies = np.asarray(self.uplinks, dtype=np.int64)
        copies = level_copies[self._vertex_up_level]
        up0, num_up = self._up0, self._num_up

        for side, flows, vertex in steps:
            first = up0[vertex] + (0 if side == 0 else num_up)
            u = copies[vertex]
            step = u if ecmp == "split" else 1
            if side == 1:
                back[flows] -= step
            at = front[flows] if side == 0 else back[flows]
            if ecmp == "split":
                _write_copies(link, frac, at, first, u)
            else:
                link[at] = first + _pick(src[flows], dst[flows], seed,
                                         self._vertex_up_level[vertex], side, u)
            if side == 0:
                front[flows] += step
        c = np.flatnonzero(cross)
        if len(c):
            # the cross-site link(s) between the two roots sit between the halves
            k = len(self.roots)
            ra, rb = self.site[src[c]], self.site[dst[c]]     # root i is site i's
            u0 = self.uplinks[0]
            first = self._cross0 + (ra * (k - 1) + rb - (rb > ra)) * u0
            if ecmp == "split":
                _write_copies(link, frac, front[c], first, np.full(len(c), u0))
            else:
                link[front[c]] = first + _pick(src[c], dst[c], seed, 0, 2, np.full(len(c), u0))
        return Routes(flow_ptr=flow_ptr, link=link, frac=frac, hops=hops.astype(np.int32))

    # ------------------------------------------------------------------ incast

    def incast_classes(self, network) -> tuple[np.ndarray, np.ndarray]:
        """One incast class per level (top first, class ``k`` = level ``k``):
        ``(w_t, eps)`` float64[num_levels], each level's ``wt=`` / ``eps=``,
        the network's ``incast_threshold`` / ``incast_slope`` where the level
        gives none (genmodel-gentree.txt §3.2, Table 5: ε and w_t per tier).
        A level's terms apply even when the network's incast is off."""
        w_t, eps = self._level_terms(network)
        if self.incast_at == "switch":   # charged on the links instead (link_incast)
            return np.full(len(w_t), np.inf), np.zeros(len(eps))
        return w_t, eps

    def _level_terms(self, network) -> tuple[np.ndarray, np.ndarray]:
        """Each level's ``(w_t, eps)``, the network's where it gives none."""
        w_t = np.array([network.incast_threshold if w is None else w
                        for w in self.incast_threshold], dtype=np.float64)
        eps = np.array([network.incast_slope if e is None else e
                        for e in self.incast_slope], dtype=np.float64)
        return w_t, eps

    def link_incast(self, network):
        """With ``incast=switch``: ``(w_t, eps)`` float64[L], the terms of
        every switch egress link, where the flows crossing it converge: its
        level's (the tier whose links, bandwidth and latency it has, as
        GenModel's Table 5 gives them per tier). A host's own link up is no
        switch port and has none (inf, 0). Else None (charged at receivers)."""
        if self.incast_at != "switch":
            return None
        w_t, eps = self._level_terms(network)
        level = np.asarray(self.link_level, dtype=np.int64)
        host = np.asarray(self.link_src) < self.num_endpoints
        return (np.where(host, np.inf, w_t[level]), np.where(host, 0.0, eps[level]))

    def flow_incast_class(self, src, dst) -> np.ndarray:
        """The level where each flow converges, int64[F]: its sender's and
        receiver's lowest common ancestor is a switch at depth ``d``, whose
        links to its children are level ``d`` (``d + 1`` with several sites);
        a flow between sites converges at the cross-site tier, level 0. (0
        for a flow to itself, which has no path and is charged nothing.)"""
        src, dst = self._check_flows(src, dst)
        # the ancestors two hosts share are those at depths 0 .. m-1, so the
        # lowest common one is at depth m - 1 (m = 0: different sites)
        table = self._host_ancestors()
        shared = np.zeros(len(src), dtype=np.int64)
        for row in table:
            shared += row[src] == row[dst]
        level = shared - 1 + int(len(self.sites) > 1)
        return np.where((shared == 0) | (src == dst), 0, level).astype(np.int64)

    def _host_ancestors(self) -> np.ndarray:
        """``table[d, h]``: the switch at depth ``d`` above host ``h`` (a value
        of its own, ``-1 - h``, where the host has none: it sits at depth
        ``<= d``), int32[switch depths, hosts]; built once, on first use."""
        table = self.__dict__.get("_ancestors")
        if table is None:
            hosts = self.num_endpoints
            depths = int(self.depth[hosts:].max()) + 1
            table = np.empty((depths, hosts), dtype=np.int32)
            table[:] = -1 - np.arange(hosts, dtype=np.int32)
            v = np.arange(hosts, dtype=np.int64)
            live = np.arange(hosts, dtype=np.int64)
            while len(live):
                p = self.parent[v[live]]
                keep = p >= 0
                live, p = live[keep], p[keep]
                table[self.depth[p], live] = p
                v[live] = p
            table = readonly(table)
            object.__setattr__(self, "_ancestors", table)
        return table

    def max_route_entries(self, ecmp: str = "split") -> int:
        """One flow's entries at most: up and down through every tree level
        (``uplinks`` each when split) plus the cross-site hop."""
        self.check_mode(ecmp)
        cross = len(self.sites) > 1
        tree_levels = self.uplinks[int(cross):]
        per_hop = list(tree_levels) if ecmp == "split" else [1] * len(tree_levels)
        top = (self.uplinks[0] if ecmp == "split" else 1) if cross else 0
        return 2 * sum(per_hop) + top

    def route_entries(self, src, dst, ecmp: str = "split") -> int:
        """Route entries :meth:`route` would return, counted by the walk."""
        self.check_mode(ecmp)
        src, dst = self._check_flows(src, dst)
        return int(self._counts(src, dst, ecmp)[0].sum())


def _write_copies(link, frac, at, first, u) -> None:
    """Entries ``at[i] + j`` get link ``first[i] + j``, fraction ``1/u[i]``,
    for ``j < u[i]`` (all the parallel links of one hop)."""
    u = np.asarray(u, dtype=np.int64)
    if (u == 1).all():
        link[at] = first
        return
    rep = np.repeat(np.arange(len(u)), u)
    j = np.arange(int(u.sum()), dtype=np.int64) - np.repeat(np.cumsum(u) - u, u)
    link[at[rep] + j] = first[rep] + j
    frac[at[rep] + j] = 1.0 / u[rep]


def _pick(src, dst, seed, level, side, u) -> np.ndarray:
    """The parallel link ``ecmp="hash"`` takes on one hop, int64[F]: a hash of
    the flow salted by the hop's level and direction (0 up, 1 down, 2 across)."""
    u = np.asarray(u, dtype=np.int64)
    out = np.zeros(len(src), dtype=np.int64)
    many = u > 1
    if many.any():
        salt = 3 * np.broadcast_to(np.asarray(level, dtype=np.int64), u.shape)[many] + side
        # flow_hash takes a scalar salt: hash per distinct salt (a handful of levels)
        for s in np.unique(salt):
            sel = np.flatnonzero(many)[salt == s]
            out[sel] = (flow_hash(src[sel], dst[sel], seed, int(s))
                        % u[sel].astype(np.uint64)).astype(np.int64)
    return out


def _rebuild(sites, uplinks, bandwidth, capacity_scale, latency, latency_scale,
             incast_slope, incast_threshold, preset, incast_at="receiver"):
    return Tree(sites, uplinks, bandwidth, capacity_scale, latency, latency_scale,
                incast_slope, incast_threshold, preset, incast_at)
