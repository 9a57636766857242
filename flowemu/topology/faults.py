"""Failed and degraded links on any topology family (issue 16).

:func:`apply_faults` wraps a topology in a :class:`FaultyTopology`: the same
endpoints, vertices and link ids, with the selected links failed (capacity
0, never routed over) or degraded (bandwidth scaled by ``F`` in (0, 1],
latency optionally by ``M >= 1``).

Selectors
---------
One grammar serves ``fail`` and ``degrade``; a value is one selector or
several joined by ``;`` (or a list of them):

``link:ID`` / ``link:ID-ID``
    Directed link id(s), a range inclusive. A cable is both directions, so
    the reverse link of each selected link is selected too (the k-th of the
    parallel links ``u -> v`` pairs with the k-th ``v -> u``).
``node:V``
    Every link into or out of vertex ``V`` (an endpoint or a switch failing).
``X,Y,...`` (tori, meshes, HyperX, HammingMesh: the node grid)
    The node at those coordinates; ``*`` matches any coordinate, so ``3,*``
    is column 3 of a 2-D grid.
``LEVEL:I`` (families with switches)
    Switch ``I`` of a level (``I`` may be ``*``: the whole level). Fat tree:
    ``host``, ``edge``, ``agg`` (or ``aggregation``), ``core``; two levels:
    ``host``, ``leaf``, ``spine``. Leaf-spine: ``host``, ``leaf``,
    ``spine``. Tree: ``host``, ``root`` (the site roots) and ``depthD``
    (the switches at depth ``D``, ``depth0`` = ``root``). Dragonfly:
    ``host``, ``router``, ``group`` (all routers of a group). HammingMesh:
    ``colswitch``, ``rowswitch``. Graph files: ``id:NAME`` (the node with
    that id in the file).
``A-B``
    With ``A`` and ``B`` any two of the vertex forms above: the cables
    joining a vertex of ``A`` and one of ``B`` (``3,*-4,*`` every cable
    between columns 3 and 4; ``leaf:2-spine:*`` the uplinks of leaf 2;
    ``group:0-group:5`` the global links between two Dragonfly groups). A
    pattern that selects no link is refused.
``random:K:SEED``
    ``K`` distinct cables drawn by ``numpy.random.default_rng(SEED)`` among
    the fabric cables: those joining two switches, or every cable on a
    family whose endpoints are routers (torus, HyperX, HammingMesh, graph
    files with endpoint-to-endpoint links) or that has no switch-to-switch
    cable (a one-switch tree). ``K = 0`` selects nothing.

``degrade`` appends ``=F`` (bandwidth times ``F``, ``0 < F <= 1``) and
optionally ``:lat=M`` (latency times ``M >= 1``): ``spine:0=0.5``,
``link:4=0.25:lat=2``. A link selected by several degrade selectors is
scaled by each; a failed link stays failed.

Routing on the surviving graph
------------------------------
The base family routes first, in any of its modes. The flows with an entry
on a failed link are re-routed on the surviving graph by a breadth-first
shortest-path router (:mod:`flowemu.kernels.graphroute`); every other flow
keeps its base route exactly. A re-routed flow takes the shortest surviving
paths: the surviving minimal paths when any survive, otherwise the shortest
detours. ``ecmp="split"`` (and the other fluid modes, e.g. ``valiant``)
splits it evenly per vertex over its shortest next hops (per path on a graph
file with ``split=paths``); ``"hash"`` takes one shortest surviving path,
each vertex choosing its next hop by the seeded hash of ``(seed, src, dst,
hop)``; the deterministic modes (``dor``, ``dmodk``) take one shortest
surviving path, each vertex its first next hop (lowest link id).

A flow whose destination its source cannot reach any more is a ConfigError
naming the endpoints and the selector that cut them; :func:`check_fail_policy`
checks once per run that the endpoints hosting ranks still reach each other
and refuses topology-bound schedules (``AlgorithmSpec.topology_bound``: the
ring's Hamiltonian cycles, bucket's dimension rings) that a failure forces
off their minimal paths, unless ``policy="reroute"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, show
from ..kernels.faultroute import flows_on_failed, splice_rows
from ..kernels.graphroute import (
    MODE_FIRST,
    MODE_HASH,
    MODE_HOP,
    MODE_PATHS,
    STATUS_OK,
    reachable,
    route_in_flow_order,
)
from ..kernels.pathlatency import dag_max_latency
from ._common import check_seed, fmt, readonly
from .base import Routes, Topology

__all__ = ["POLICIES", "FaultyTopology", "apply_faults", "check_connected",
           "check_fail_policy", "select_links"]

FAIL, DEGRADE = "fail", "degrade"
#: what ``check_fail_policy`` does with a topology-bound schedule a failure breaks
POLICIES = ("strict", "reroute")
#: modes that route each flow on one deterministic path
_SINGLE_PATH_MODES = ("dor", "dmodk")
_SELECTOR_FORMS = "link:ID[-ID], node:V, random:K:SEED"


# ---------------------------------------------------------------- link facts

class _Fabric:
    """What the selectors need to know about a topology's links: which
    exist (a mesh keeps ids of absent links), the reverse of each (-1:
    none), the cables, the level names and the node grid."""

    def __init__(self, topo: Topology):
        self.topo = topo
        src = np.asarray(topo.link_src, dtype=np.int64)
        dst = np.asarray(topo.link_dst, dtype=np.int64)
        self.src, self.dst = src, dst
        alive = np.asarray(topo.link_capacity_scale) > 0
        bw = getattr(topo, "link_bandwidth_abs", None)
        if bw is not None:
            alive |= ~np.isnan(bw) & (bw > 0)
        self.exists = (src != dst) & alive
        self.rev = _reverse_links(src, dst, self.exists)
        ids = np.arange(len(src), dtype=np.int64)
        self.cables = ids[self.exists & ((self.rev < 0) | (ids < self.rev))]
        self.levels = _levels(topo)
        grid = getattr(topo, "grid", None) or getattr(topo, "dims", None)
        self.grid = tuple(int(d) for d in grid) if grid is not None and \
            math.prod(grid) == topo.num_endpoints else None

    def with_reverse(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        rev = self.rev[ids]
        return np.unique(np.concatenate([ids, rev[rev >= 0]]))

    def fabric_cables(self) -> np.ndarray:
        """Cables ``random:`` draws from (see the module docstring)."""
        n = self.topo.num_endpoints
        a, b = self.src[self.cables], self.dst[self.cables]
        if ((a < n) & (b < n)).any():           # endpoints are routers
            return self.cables
        inner = (a >= n) & (b >= n)
        return self.cables[inner] if inner.any() else self.cables

    def forms(self) -> str:
        parts = ["link:ID[-ID]", "node:V"]
        if self.grid is not None:
            parts.append(f"coordinates {','.join('X' + str(i) for i in range(len(self.grid)))} "
                         f"('*' any) of the {'x'.join(map(str, self.grid))} grid")
        if self.levels:
            parts.append("LEVEL:I or LEVEL:* with LEVEL one of " + ", ".join(self.levels))
        if _graph_names(self.topo) is not None:
            parts.append("id:NAME (a node id of the file)")
        parts += ["A-B (the cables between two of these)", "random:K:SEED"]
        return "; ".join(parts)


def _reverse_links(src, dst, exists) -> np.ndarray:
    """Reverse of every existing link, int64[L] (-1: none): the k-th link
    ``u -> v`` (by id) pairs with the k-th ``v -> u``."""
    rev = np.full(len(src), -1, dtype=np.int64)
    ids = np.flatnonzero(exists)
    if len(ids) == 0:
        return rev
    lo = np.minimum(src[ids], dst[ids])
    hi = np.maximum(src[ids], dst[ids])
    fwd = src[ids] < dst[ids]
    order = np.lexsort((ids, fwd, hi, lo))       # per (lo, hi): backward links, then forward
    s_lo, s_hi, s_fwd = lo[order], hi[order], fwd[order]
    first = np.r_[True, (s_lo[1:] != s_lo[:-1]) | (s_hi[1:] != s_hi[:-1])]
    group = np.cumsum(first) - 1
    start = np.flatnonzero(first)[group]
    size = np.bincount(group)[group]
    nb = np.bincount(group, weights=~s_fwd).astype(np.int64)[group]
    pos = np.arange(len(ids), dtype=np.int64)
    rank = np.where(s_fwd, pos - start - nb, pos - start)
    partner = np.where(s_fwd, start + rank, start + nb + rank)
    ok = np.where(s_fwd, rank < nb, rank < size - nb)
    sorted_ids = ids[order]
    rev[sorted_ids[ok]] = sorted_ids[partner[ok]]
    return rev


def _levels(topo: Topology) -> dict[str, np.ndarray]:
    """Level name -> int64[count, members] vertex ids (one row per index)."""
    from .dragonfly import Dragonfly
    from .fattree import FatTree
    from .hammingmesh import HammingMesh
    from .leafspine import LeafSpine
    from .tree import Tree

    n = topo.num_endpoints
    out: dict[str, np.ndarray] = {}

    def run(name, first, count, width=1):
        out[name] = (first + np.arange(count * width, dtype=np.int64)).reshape(count, width)

    if isinstance(topo, FatTree):
        k, h = topo.k, topo.half
        run("host", 0, n)
        if topo.levels == 3:
            run("edge", n, k * h)
            run("agg", n + k * h, k * h)
            out["aggregation"] = out["agg"]
            run("core", n + 2 * k * h, h * h)
        else:
            run("leaf", n, k)
            run("spine", n + k, h)
    elif isinstance(topo, LeafSpine):
        run("host", 0, n)
        run("leaf", n, topo.leaves)
        run("spine", n + topo.leaves, topo.spines)
    elif isinstance(topo, Tree):
        run("host", 0, n)
        switches = np.arange(n, topo.num_nodes, dtype=np.int64)
        depth = np.asarray(topo.depth)[n:]
        for d in range(int(depth.max()) + 1 if len(depth) else 0):
            out[f"depth{d}"] = switches[depth == d].reshape(-1, 1)
        if "depth0" in out:
            out["root"] = out["depth0"]
    elif isinstance(topo, Dragonfly):
        a, g = topo.a, topo.num_nodes - n
        run("host", 0, n)
        run("router", n, g)
        run("group", n, g // a, a)
    elif isinstance(topo, HammingMesh):
        a, b = topo.board
        x, y = topo.boards
        run("colswitch", n, b * y)
        run("rowswitch", n + b * y, a * x)
    return out


def _graph_names(topo: Topology):
    from .graph import Graph
    return topo.node_names if isinstance(topo, Graph) else None


# ------------------------------------------------------------------ parsing

def _int(text: str, what: str, option: str, sel: str, lo: int = 0, hi: int | None = None,
         allowed: str = "") -> int:
    t = text.strip()
    body = t[1:] if t[:1] in "+-" else t
    if not (body.isascii() and body.isdigit()):
        raise ConfigError(f"{option}: {sel!r}: {what} {t!r} is not an integer; expected "
                          + (allowed or f"an integer >= {lo}"))
    v = int(t)
    if v < lo or (hi is not None and v > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ConfigError(f"{option}: {sel!r}: {what} {v} is out of range; expected "
                          + (allowed or rng))
    return v


def _term(fab: _Fabric, text: str, option: str, sel: str) -> np.ndarray:
    """Vertex ids (int64) of one vertex form."""
    topo = fab.topo
    t = text.strip()
    head, colon, rest = t.partition(":")
    head = head.strip()
    if colon and head == "node":
        v = _int(rest, "vertex", option, sel, 0, topo.num_nodes - 1,
                 f"a vertex id in 0..{topo.num_nodes - 1} of {topo.spec}")
        return np.array([v], dtype=np.int64)
    if colon and head == "id":
        names = _graph_names(topo)
        if names is None:
            raise ConfigError(f"{option}: {sel!r}: id:NAME selects a node of a graph file; "
                              f"{topo.spec} is not one (allowed: {fab.forms()})")
        want = rest.strip()
        hits = [i for i, nm in enumerate(names) if str(nm) == want]
        if not hits:
            raise ConfigError(f"{option}: {sel!r}: no node has id {want!r} in {topo.spec}")
        return np.array(hits, dtype=np.int64)
    if colon and head in fab.levels:
        rows = fab.levels[head]
        if rest.strip() == "*":
            return rows.reshape(-1)
        i = _int(rest, f"{head} index", option, sel, 0, len(rows) - 1,
                 f"{head}:I with I in 0..{len(rows) - 1} (or {head}:*) on {topo.spec}")
        return rows[i]
    if colon:
        known = ", ".join(fab.levels) if fab.levels else "none"
        raise ConfigError(f"{option}: {sel!r}: unknown level {head!r} on {topo.spec} (levels: "
                          f"{known}); allowed: {fab.forms()}")
    if fab.grid is not None:
        parts = [p.strip() for p in t.split(",")]
        if len(parts) == len(fab.grid):
            mask = np.ones(topo.num_endpoints, dtype=bool)
            coords = np.unravel_index(np.arange(topo.num_endpoints), fab.grid)
            for i, (p, d) in enumerate(zip(parts, fab.grid, strict=True)):
                if p == "*":
                    continue
                c = _int(p, f"coordinate {i}", option, sel, 0, d - 1,
                         f"0..{d - 1} or '*' in dimension {i} of "
                         f"{'x'.join(map(str, fab.grid))}")
                mask &= coords[i] == c
            return np.flatnonzero(mask).astype(np.int64)
        if "," in t or t.replace("*", "").isdigit():
            raise ConfigError(f"{option}: {sel!r}: {t!r} has {len(parts)} coordinate(s); "
                              f"{topo.spec} has {len(fab.grid)} dimensions "
                              f"({'x'.join(map(str, fab.grid))})")
    raise ConfigError(f"{option}: {sel!r} is not a selector of {topo.spec}; allowed: "
                      f"{fab.forms()}")


def _links_of(fab: _Fabric, a: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """Existing links touching a vertex of ``a`` (``b`` None), or joining a
    vertex of ``a`` and one of ``b``."""
    n = fab.topo.num_nodes
    in_a = np.zeros(n, dtype=bool)
    in_a[a] = True
    if b is None:
        hit = in_a[fab.src] | in_a[fab.dst]
    else:
        in_b = np.zeros(n, dtype=bool)
        in_b[b] = True
        hit = (in_a[fab.src] & in_b[fab.dst]) | (in_b[fab.src] & in_a[fab.dst])
    return np.flatnonzero(hit & fab.exists).astype(np.int64)


def _select(fab: _Fabric, text, option: str) -> tuple[np.ndarray, str]:
    """``(sorted link ids with their reverses, canonical text)`` of one selector."""
    topo = fab.topo
    if not isinstance(text, str):
        raise ConfigError(f"{option}: {show(text)} is not allowed; expected a selector string "
                          f"({_SELECTOR_FORMS}, ...)")
    sel = text.strip()
    if not sel:
        raise ConfigError(f"{option}: an empty selector is not allowed; expected "
                          f"{fab.forms()}")
    head, _, rest = sel.partition(":")
    head = head.strip()
    if head == "link":
        lo_t, dash, hi_t = rest.partition("-")
        last = topo.num_links - 1
        allowed = f"link ids in 0..{last} of {topo.spec}"
        lo = _int(lo_t, "link", option, sel, 0, last, allowed)
        hi = _int(hi_t, "link", option, sel, 0, last, allowed) if dash else lo
        if hi < lo:
            raise ConfigError(f"{option}: {sel!r}: the range {lo}-{hi} is empty; expected "
                              "link:FIRST-LAST with FIRST <= LAST")
        ids = np.arange(lo, hi + 1, dtype=np.int64)
        absent = ids[~fab.exists[ids]]
        if len(absent):
            raise ConfigError(f"{option}: {sel!r}: link {int(absent[0])} of {topo.spec} does "
                              "not exist (a mesh boundary or zero-capacity link)")
        return fab.with_reverse(ids), f"link:{lo}" + (f"-{hi}" if hi != lo else "")
    if head == "random":
        parts = rest.split(":")
        if len(parts) != 2:
            raise ConfigError(f"{option}: {sel!r}: expected random:K:SEED (K cables drawn "
                              "with seed SEED, e.g. random:4:0)")
        pool = fab.fabric_cables()
        k = _int(parts[0], "count", option, sel, 0, len(pool),
                 f"a count in 0..{len(pool)} (the fabric cables of {topo.spec})")
        seed = _int(parts[1], "seed", option, sel, 0, None, "a seed >= 0")
        pick = np.random.default_rng(seed).choice(len(pool), size=k, replace=False)
        return fab.with_reverse(pool[np.sort(pick)]), f"random:{k}:{seed}"
    if _graph_names(topo) is None:
        sel = "".join(sel.split())          # canonical: no spaces inside
    terms = _split_pair(fab, sel, option)
    if terms is None:
        ids = _links_of(fab, _term(fab, sel, option, sel), None)
        if len(ids) == 0:
            raise ConfigError(f"{option}: {sel!r} selects no link of {topo.spec}")
        return fab.with_reverse(ids), sel
    (ta, a), (tb, b) = terms
    ids = _links_of(fab, a, b)
    if len(ids) == 0:
        raise ConfigError(f"{option}: {sel!r} selects no link: no cable of {topo.spec} joins "
                          f"{ta.strip()!r} and {tb.strip()!r}")
    return fab.with_reverse(ids), sel


def _split_pair(fab: _Fabric, sel: str, option: str):
    """``((text, vertices), (text, vertices))`` of an ``A-B`` selector, or
    None when ``sel`` has no ``-`` outside a graph node id."""
    cuts = [i for i, ch in enumerate(sel) if ch == "-"]
    if not cuts:
        return None
    if _graph_names(fab.topo) is not None:
        try:                              # a graph node id may hold a '-'
            _term(fab, sel, option, sel)
            return None
        except ConfigError:
            pass
    error = None
    for i in cuts:
        try:
            a = _term(fab, sel[:i], option, sel)
            b = _term(fab, sel[i + 1:], option, sel)
            return (sel[:i], a), (sel[i + 1:], b)
        except ConfigError as exc:
            error = exc
    raise error


def _selectors(value, option: str) -> list[str]:
    """The selectors of a fail / degrade value: a string (``;``-separated)
    or a sequence of strings; None or empty: none."""
    if value is None:
        return []
    if isinstance(value, str):
        items = [value]
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = list(value)
    else:
        raise ConfigError(f"{option}: {show(value)} is not allowed; expected a selector string "
                          f"({_SELECTOR_FORMS}, ...; several joined by ';') or a list of them")
    out = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(f"{option}: {show(item)} is not allowed; expected a selector "
                              f"string ({_SELECTOR_FORMS}, ...)")
        out += [part.strip() for part in str(item).split(";") if part.strip()]
    return out


def _factor(text: str, what: str, sel: str, lo_open: float, hi: float) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    ok = np.isfinite(v) and v > lo_open and v <= hi if what == "factor" else \
        np.isfinite(v) and v >= lo_open
    if not ok:
        allowed = "a number in (0, 1]" if what == "factor" else "a finite number >= 1"
        raise ConfigError(f"degrade: {what} {text.strip()!r} in {sel!r} is not allowed; "
                          f"expected {allowed}")
    return v


def _degrade(fab: _Fabric, text: str) -> tuple[np.ndarray, float, float, str]:
    sel = text.strip()
    target, eq, value = sel.partition("=")
    if not eq or not value.strip():
        raise ConfigError(f"degrade: {sel!r} has no factor; expected SELECTOR=F with F in "
                          "(0, 1] (e.g. spine:0=0.5), or SELECTOR=F:lat=M to also multiply "
                          "the latency by M >= 1")
    f_text, colon, lat_text = value.partition(":")
    factor = _factor(f_text, "factor", sel, 0.0, 1.0)
    lat = 1.0
    if colon:
        key, eq2, m_text = lat_text.partition("=")
        if key.strip() != "lat" or not eq2:
            raise ConfigError(f"degrade: {sel!r}: {lat_text.strip()!r} is not allowed; "
                              "expected lat=M (latency multiplier >= 1), e.g. spine:0=0.5:lat=2")
        lat = _factor(m_text, "latency multiplier", sel, 1.0, math.inf)
    ids, canon = _select(fab, target, DEGRADE)
    canon += f"={fmt(factor)}" + (f":lat={fmt(lat)}" if lat != 1.0 else "")
    return ids, factor, lat, canon


def select_links(topology: Topology, selector: str, option: str = FAIL) -> np.ndarray:
    """Directed link ids a selector picks, int64 sorted, both directions of
    each cable (see the module docstring for the grammar).

    Parameters
    ----------
    topology : Topology or str
        A topology or its spec; a :class:`FaultyTopology` selects on its base.
    selector : str
        One selector, without a degrade factor.
    option : str
        The option named in error messages (``"fail"`` or ``"degrade"``).

    Raises
    ------
    ConfigError
        Naming ``option``, the selector and the forms allowed on the family.
    """
    if isinstance(topology, str):
        from . import parse_topology
        topology = parse_topology(topology)
    if isinstance(topology, FaultyTopology):
        topology = topology.base
    return _select(_Fabric(topology), selector, option)[0]


# ------------------------------------------------------------- the topology

@dataclass(frozen=True)
class FaultyTopology(Topology):
    """A topology with failed and degraded links.

    Parameters
    ----------
    base : Topology
        The healthy topology (its endpoints, vertices, link ids, grid and
        routing modes are kept).
    fail, degrade : str
        Selectors joined by ``;`` (see the module docstring); stored in
        canonical form.

    Attributes
    ----------
    spec : str
        The base's spec (results keep the faults in their own columns).
    failed : bool[L]
        Links that failed (capacity 0, never routed over).
    bandwidth_factor, latency_factor : float64[L]
        Degrade multipliers (0 on failed links; 1 where untouched).
    link_capacity_scale : float64[L]
        The base's scale times ``bandwidth_factor``.

    Other attributes of the base (``dims``, ``wrap``, ``distance``, tree
    levels, ...) are read through from it.
    """

    base: Topology
    fail: str = ""
    degrade: str = ""

    def __post_init__(self):
        base = self.base
        if isinstance(base, FaultyTopology):
            raise ConfigError("topology: already has faults; apply_faults merges them")
        if not isinstance(base, Topology):
            raise ConfigError(f"topology: {show(base)} is not allowed; expected a Topology")
        fab = _Fabric(base)
        L = base.num_links
        failed = np.zeros(L, dtype=bool)
        parts = []
        for text in _selectors(self.fail, FAIL):
            ids, canon = _select(fab, text, FAIL)
            failed[ids] = True
            parts.append((canon, ids))
        bw = np.ones(L)
        lat = np.ones(L)
        degraded = []
        for text in _selectors(self.degrade, DEGRADE):
            ids, f, m, canon = _degrade(fab, text)
            bw[ids] *= f
            lat[ids] *= m
            degraded.append(canon)
        bw[failed] = 0.0
        set_ = object.__setattr__
        set_(self, "fail", ";".join(c for c, _ in parts))
        set_(self, "degrade", ";".join(degraded))
        set_(self, "_fail_parts", tuple(parts))
        for name in ("spec", "num_nodes", "num_endpoints", "grid", "ecmp_modes", "id_word"):
            set_(self, name, getattr(base, name))
        set_(self, "link_src", base.link_src)
        set_(self, "link_dst", base.link_dst)
        set_(self, "failed", readonly(failed))
        set_(self, "bandwidth_factor", readonly(bw))
        set_(self, "latency_factor", readonly(lat))
        set_(self, "link_capacity_scale", readonly(base.link_capacity_scale * bw))
        if base.link_bandwidth_abs is not None:
            set_(self, "link_bandwidth_abs", readonly(base.link_bandwidth_abs * bw))
        if base.link_latency_abs is not None:
            set_(self, "link_latency_abs", readonly(base.link_latency_abs * lat))
        if base.link_latency_scale is not None or (lat != 1.0).any():
            scale = 1.0 if base.link_latency_scale is None else base.link_latency_scale
            set_(self, "link_latency_scale", readonly(scale * lat))
        set_(self, "_any_failed", bool(failed.any()))
        set_(self, "_changed", bool(failed.any() or (bw != 1.0).any() or (lat != 1.0).any()))
        set_(self, "_lat_changed", bool((lat != 1.0).any()))
        set_(self, "_fluid_mode", MODE_PATHS if getattr(base, "split", None) == "paths"
             else MODE_HOP)
        # CSR of the surviving links, out of and into each vertex
        alive = fab.exists & ~failed
        src = np.asarray(base.link_src, dtype=np.int64)
        dst = np.asarray(base.link_dst, dtype=np.int64)
        ids = np.flatnonzero(alive).astype(np.int64)
        n = base.num_nodes
        for name, key in (("_out", src), ("_in", dst)):
            order = ids[np.argsort(key[ids], kind="stable")]
            ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(key[ids], minlength=n), out=ptr[1:])
            set_(self, name + "_ptr", readonly(ptr))
            set_(self, name + "_link", readonly(order))
        set_(self, "_num_alive", len(ids))

    def __getattr__(self, name):
        # only reached for attributes the wrapper lacks: read them from the base
        if name.startswith("__") or name in ("base", "fail", "degrade"):
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "base"), name)

    def __reduce__(self):
        # the base ships its own parameters; the texts rebuild the faults
        return (type(self), (self.base, self.fail, self.degrade))

    def describe(self) -> dict:
        """The base's description plus ``fail``, ``degrade`` (canonical
        texts), ``failed_links`` and ``degraded_links`` (directed links)."""
        out = dict(self.base.describe())
        slower = (self.bandwidth_factor != 1.0) | (self.latency_factor != 1.0)
        out.update(fail=self.fail, degrade=self.degrade,
                   failed_links=int(self.failed.sum()),
                   degraded_links=int((slower & ~self.failed).sum()))
        return out

    @property
    def solver_resolve(self) -> str:
        return self.base.solver_resolve

    def check_mode(self, ecmp, *, engine: bool = False) -> str:
        return self.base.check_mode(ecmp, engine=engine)

    # ------------------------------------------------------------ link values

    def link_capacity(self, network) -> np.ndarray:
        """The base's capacities times the degrade factors (0 if failed)."""
        return self.base.link_capacity(network) * self.bandwidth_factor

    def link_latency(self, network) -> np.ndarray:
        """The base's latencies times the degrade latency multipliers."""
        return self.base.link_latency(network) * self.latency_factor

    def incast_classes(self, network):
        return self.base.incast_classes(network)

    def flow_incast_class(self, src, dst):
        return self.base.flow_incast_class(src, dst)

    # ---------------------------------------------------------------- routing

    def route(self, src, dst, ecmp: str = "split", seed: int = 0) -> Routes:
        """Route flows on the surviving graph.

        The base routes every flow (any of its modes); the flows with an
        entry on a failed link are re-routed on the shortest surviving
        paths (the surviving minimal paths when any survive, else the
        shortest detours): ``split`` and the other fluid modes split evenly
        per vertex (per path on a graph file with ``split=paths``),
        ``hash`` takes one path by the seeded hash of ``(seed, src, dst,
        hop)``, ``dor`` / ``dmodk`` one path, each vertex its first next hop.
        Other flows keep their base routes exactly; ``hops`` of a re-routed
        flow is its surviving distance.

        Raises
        ------
        ConfigError
            When a failure leaves a flow's destination unreachable, naming
            both endpoints and the selector that cut them.
        """
        routes = self.base.route(src, dst, ecmp, seed)
        if not self._any_failed or routes.num_entries == 0:
            return routes
        flows = flows_on_failed(routes.flow_ptr, routes.link, self.failed)
        if len(flows) == 0:
            return routes
        src, dst = self._check_flows(src, dst)
        new = self._reroute(src[flows], dst[flows], ecmp, seed)
        return Routes(*splice_rows(routes.flow_ptr, routes.link, routes.frac, routes.hops, flows,
                                   new.flow_ptr, new.link, new.frac, new.hops))

    def _mode(self, ecmp: str) -> int:
        if ecmp == "hash":
            return MODE_HASH
        if ecmp in _SINGLE_PATH_MODES:
            return MODE_FIRST
        return self._fluid_mode

    def _reroute(self, src, dst, ecmp: str, seed: int) -> Routes:
        seed = check_seed(seed)
        status, bad, ptr, link, frac, hops = route_in_flow_order(
            src, dst, self._out_ptr, self._out_link, self._in_ptr, self._in_link,
            self.link_src, self.link_dst, self.num_nodes, self._mode(ecmp), seed)
        if status != STATUS_OK:
            s, d = int(src[bad]), int(dst[bad])
            # name the side that is cut off: the one that reaches fewer vertices
            out = reachable(s, self._out_ptr, self._out_link, self.link_dst).sum()
            into = reachable(d, self._in_ptr, self._in_link, self.link_src).sum()
            raise self._cut_error(s, d) if into <= out else self._cut_error(d, s, forward=False)
        return Routes(ptr, link, frac, hops)

    def _cut_error(self, s: int, d: int, ranks: tuple | None = None,
                   forward: bool = True) -> ConfigError:
        """ConfigError: ``d`` is cut off from ``s`` (no surviving path
        ``s -> d``, or ``d -> s`` when not ``forward``), naming the first
        selector after which none is left."""
        word = self.id_word
        what = self.fail
        failed = np.zeros(self.num_links, dtype=bool)
        src = np.asarray(self.link_src, dtype=np.int64)
        dst = np.asarray(self.link_dst, dtype=np.int64)
        exists = _Fabric(self.base).exists
        for canon, ids in self._fail_parts:
            failed[ids] = True
            keep = np.flatnonzero(exists & ~failed)
            order = keep[np.argsort(src[keep], kind="stable")]
            ptr = np.zeros(self.num_nodes + 1, dtype=np.int64)
            np.cumsum(np.bincount(src[keep], minlength=self.num_nodes), out=ptr[1:])
            a, b = (s, d) if forward else (d, s)
            if not reachable(a, ptr, order, dst)[b]:
                what = canon
                break
        rs = f" (rank {ranks[0]})" if ranks else ""
        rd = f" (rank {ranks[1]})" if ranks else ""
        return ConfigError(f"fail: {what!r} cuts off {word} {d}{rd} from {word} {s}{rs} (no "
                           "surviving path); fail fewer links or place no rank there")

    def route_entries(self, src, dst, ecmp: str = "split") -> int:
        """Route entries :meth:`route` returns (the base's count when no
        link failed, else counted by routing in chunks)."""
        if not self._any_failed:
            return self.base.route_entries(src, dst, ecmp)
        return super().route_entries(src, dst, ecmp)

    def max_route_entries(self, ecmp: str = "split") -> int | None:
        """The base's bound, raised to what a re-routed flow may take: every
        surviving link once (fluid modes) or a path of at most
        ``num_nodes − 1`` links."""
        worst = self.base.max_route_entries(ecmp)
        if not self._any_failed or worst is None:
            return worst
        mode = self._mode(ecmp)
        detour = self._num_alive if mode in (MODE_HOP, MODE_PATHS) else self.num_nodes - 1
        return max(int(worst), int(detour))

    # family shortcuts assume healthy links: only without faults
    def solver_routes(self, src, dst, ecmp: str, link_capacity: np.ndarray):
        return None if self._changed else self.base.solver_routes(src, dst, ecmp, link_capacity)

    def solver_route_entries(self, src, dst, ecmp: str) -> int | None:
        return None if self._changed else self.base.solver_route_entries(src, dst, ecmp)

    def solver_problem(self, routes: Routes, link_capacity: np.ndarray, ecmp: str):
        if self._changed:
            return routes, link_capacity
        return self.base.solver_problem(routes, link_capacity, ecmp)

    def path_latency(self, routes: Routes, link_latency: np.ndarray) -> np.ndarray:
        """Largest link-latency sum over each flow's paths (re-routed flows
        and degraded latencies make split paths differ)."""
        lat = np.asarray(link_latency, dtype=np.float64)
        if len(lat) == 0 or np.all(lat == lat[0]):
            return super().path_latency(routes, lat)
        if not self._any_failed and not self._lat_changed:
            return self.base.path_latency(routes, lat)
        return dag_max_latency(routes.flow_ptr, routes.link, self.link_src, self.link_dst, lat,
                               self.num_nodes)


# ------------------------------------------------------------- public doors

def apply_faults(topology, fail=None, degrade=None) -> Topology:
    """``topology`` with failed and degraded links.

    Parameters
    ----------
    topology : Topology or str
        A topology or its spec; a :class:`FaultyTopology` gets the new
        selectors added to its own.
    fail, degrade : str or sequence of str, optional
        Selectors (see the module docstring), several joined by ``;`` or
        given as a list; degrade selectors end in ``=F[:lat=M]``.

    Returns
    -------
    Topology
        ``topology`` itself when both are empty, else a
        :class:`FaultyTopology`.
    """
    from . import parse_topology

    fail_sel = _selectors(fail, FAIL)
    degrade_sel = _selectors(degrade, DEGRADE)
    if not fail_sel and not degrade_sel:
        return topology
    if isinstance(topology, str):
        topology = parse_topology(topology)
    if isinstance(topology, FaultyTopology):
        fail_sel = _selectors(topology.fail, FAIL) + fail_sel
        degrade_sel = _selectors(topology.degrade, DEGRADE) + degrade_sel
        topology = topology.base
    return FaultyTopology(topology, ";".join(fail_sel), ";".join(degrade_sel))


def check_connected(topology: Topology, endpoints) -> None:
    """ConfigError unless the ``endpoints`` (int array; position ``r`` hosts
    rank ``r``) all reach each other over the surviving links of a
    :class:`FaultyTopology` (one search forward and one backward)."""
    if not isinstance(topology, FaultyTopology) or not topology._any_failed:
        return
    ends = np.asarray(endpoints, dtype=np.int64)
    if len(ends) < 2:
        return

    def cut_from(i: int) -> np.ndarray:
        e = int(ends[i])
        fwd = reachable(e, topology._out_ptr, topology._out_link, topology.link_dst)
        back = reachable(e, topology._in_ptr, topology._in_link, topology.link_src)
        return np.flatnonzero(~(fwd[ends] & back[ends]))

    bad0 = cut_from(0)
    if len(bad0) == 0:
        return
    bad1 = cut_from(int(bad0[0]))
    # the smaller side is the one cut off
    if len(bad0) <= len(bad1):
        far, near = int(bad0[0]), 0
    else:
        far, near = 0, int(bad0[0])
    raise topology._cut_error(int(ends[near]), int(ends[far]), (near, far))


def check_fail_policy(schedule, topology: Topology, mapping=None, policy: str = "strict",
                      algorithm=None) -> None:
    """Check a run on a topology with failures before it is simulated.

    Parameters
    ----------
    schedule : Schedule
    topology : Topology
        Anything but a :class:`FaultyTopology` with failed links passes.
    mapping : int[p], optional
        Endpoint of each rank (default rank ``r`` on endpoint ``r``).
    policy : {"strict", "reroute"}
        ``"strict"``: a topology-bound algorithm (``AlgorithmSpec.
        topology_bound``, e.g. the Hamiltonian ring) whose flow lost all its
        minimal paths is refused; ``"reroute"``: it is routed around the
        failure like any other.
    algorithm : AlgorithmSpec or str, optional
        Default: the schedule's algorithm.

    Raises
    ------
    ConfigError
        For a bad policy; when the ranks' endpoints no longer reach each
        other (naming the rank cut off and the selector); under ``strict``
        naming the failed link a bound algorithm relies on.
    """
    if not isinstance(policy, str) or policy not in POLICIES:
        raise ConfigError(f"fail_policy: {show(policy)} is not allowed; expected "
                          f"{' or '.join(POLICIES)}")
    if not isinstance(topology, FaultyTopology) or not topology._any_failed:
        return
    p = schedule.p
    ends = np.arange(p, dtype=np.int64) if mapping is None else \
        np.asarray(mapping, dtype=np.int64)
    check_connected(topology, ends)
    if policy == "reroute":
        return
    if algorithm is None or isinstance(algorithm, str):
        from ..algorithms import get_algorithm
        try:
            algorithm = get_algorithm(algorithm or schedule.algorithm)
        except ConfigError:
            return
    if not getattr(algorithm, "topology_bound", False):
        return
    base = topology.base
    seen = set()
    for step in schedule.steps:
        t = step.traffic
        if t.num_flows == 0 or id(t) in seen:
            continue
        seen.add(id(t))
        src, dst = ends[t.src], ends[t.dst]
        routes = base.route(src, dst, "split")
        flows = flows_on_failed(routes.flow_ptr, routes.link, topology.failed)
        if len(flows) == 0:
            continue
        new = topology._reroute(src[flows], dst[flows], "split", 0)
        longer = np.flatnonzero(new.hops > routes.hops[flows])
        if len(longer) == 0:
            continue
        f = int(flows[longer[0]])
        a, b = routes.flow_ptr[f], routes.flow_ptr[f + 1]
        lk = int(routes.link[a:b][topology.failed[routes.link[a:b]]][0])
        u, v = int(topology.link_src[lk]), int(topology.link_dst[lk])
        raise ConfigError(
            f"fail: algorithm {algorithm.name} relies on link {u}-{v} (link {lk}, rank "
            f"{int(t.src[f])} -> rank {int(t.dst[f])}) which is failed ({topology.fail}); pass "
            "fail_policy='reroute' to route around it")
