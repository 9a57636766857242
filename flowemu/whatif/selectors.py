"""Link selectors: which links a ``fail`` or ``degrade`` value names, on any
topology family (:func:`select_links`; :mod:`flowemu.whatif.faults` applies
them).

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
    is every node whose first coordinate is 3 (node ids are row-major: on
    ``torus:4x6``, nodes 18-23).
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
    between a node whose first coordinate is 3 and one whose first is 4; ``leaf:2-spine:*`` the uplinks of leaf 2;
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
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..core.errors import ConfigError, show, suggest
from ..topology.base import Topology
from ..topology.common import fmt
from ..topology.dragonfly import Dragonfly
from ..topology.fattree import FatTree
from ..topology.graph import Graph
from ..topology.hammingmesh import HammingMesh
from ..topology.leafspine import LeafSpine
from ..topology.tree import Tree

__all__ = ["DEGRADE", "FAIL", "Fabric", "resolve_degrade", "resolve_selector", "split_selectors"]

FAIL, DEGRADE = "fail", "degrade"
_SELECTOR_FORMS = "link:ID[-ID], node:V, random:K:SEED"


# ---------------------------------------------------------------- link facts

class Fabric:
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


def _term(fab: Fabric, text: str, option: str, sel: str) -> np.ndarray:
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
        kinds = ["link", "node", *fab.levels, "random"] + \
            (["id"] if _graph_names(topo) is not None else [])
        raise ConfigError(f"{option}: {sel!r}: {head + ':'!r} is not a selector of {topo.spec}"
                          f"{suggest(head, [k for k in kinds if k != head])}; allowed: "
                          f"{fab.forms()}")
    if fab.grid is not None:
        parts = [p.strip() for p in t.split(",")]
        if len(parts) == len(fab.grid):
            mask = np.ones(topo.num_endpoints, dtype=bool)
            coords = np.unravel_index(np.arange(topo.num_endpoints), fab.grid)
            for i, (p, d) in enumerate(zip(parts, fab.grid, strict=True)):
                if p == "*":
                    continue
                c = _int(p, "coordinate", option, sel, 0, d - 1,
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


def _links_of(fab: Fabric, a: np.ndarray, b: np.ndarray | None) -> np.ndarray:
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


def resolve_selector(fab: Fabric, text, option: str) -> tuple[np.ndarray, str]:
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
        last = topo.num_links - 1
        allowed = f"link ids in 0..{last} of {topo.spec}"
        if rest.strip().startswith("-"):   # ('-1' read as the range '' to 1)
            raise ConfigError(f"{option}: {sel!r}: link {rest.strip()} is out of range; "
                              f"expected {allowed}")
        lo_t, dash, hi_t = rest.partition("-")
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
        sel = "".join(sel.split())          # canonical: no spaces inside, one name a level
        sel = re.sub(r"(?<![a-z])aggregation:", "agg:", sel)
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


def _split_pair(fab: Fabric, sel: str, option: str):
    """``((text, vertices), (text, vertices))`` of an ``A-B`` selector, or
    None when ``sel`` has no ``-`` outside a graph node id."""
    # a '-' right after ':' is a sign (node:-1), not the cut of a pair
    cuts = [i for i, ch in enumerate(sel) if ch == "-" and (i == 0 or sel[i - 1] != ":")]
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


def split_selectors(value, option: str) -> list[str]:
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


def resolve_degrade(fab: Fabric, text: str) -> tuple[np.ndarray, float, float, str]:
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
    ids, canon = resolve_selector(fab, target, DEGRADE)
    canon += f"={fmt(factor)}" + (f":lat={fmt(lat)}" if lat != 1.0 else "")
    return ids, factor, lat, canon
