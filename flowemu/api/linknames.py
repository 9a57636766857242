"""Human-readable names of links: what :func:`flowemu.link_loads` reports
beside each link id.

Vertices are named as the ``fail``/``degrade`` selectors name them
(:mod:`flowemu.whatif.selectors`), so a link's name, with ``>`` read as
``-``, selects its cable: grid coordinates (``3,4``) on tori, meshes, HyperX
and HammingMesh; ``LEVEL:I`` on families with switches (``edge:3``,
``spine:0``, ``depth1:2``, ``router:7``); ``id:NAME`` on graph files; else
``node:V``.

Each link gets

``name``
    ``3,4 +x`` on a torus or mesh (the link leaving node (3, 4) in the +x
    direction: a torus has one link per node, dimension and direction, so
    this is unique); ``A>B`` elsewhere (``edge:3>agg:5``, ``0,1>0,3``).
``tier``
    The dimension on a grid (``x``, ``y``, ``z``, then ``d3``...), the pair
    of levels a link joins on trees, low to high (``host-edge``,
    ``leaf-spine``, ``depth1-depth0``), ``local``/``global`` between
    Dragonfly routers, ``link`` where the family has no tiers.
``direction``
    ``+``/``-`` along a grid dimension (the sign of the coordinate step,
    the wrap-around link counting as its direction's), ``up``/``down``
    between levels, ``""`` otherwise.
"""

from __future__ import annotations

import numpy as np

from ..topology.base import Topology
from ..topology.graph import Graph
from ..topology.torus import Torus
from ..whatif.faults import FaultyTopology
from ..whatif.selectors import Fabric

#: names of the first grid dimensions (later ones are d3, d4, ...)
DIM_NAMES = ("x", "y", "z")


def dim_name(d: int) -> str:
    return DIM_NAMES[d] if d < len(DIM_NAMES) else f"d{d}"


def _text(values) -> np.ndarray:
    return np.asarray(values).astype(str).astype(object)


def _levels(fab: Fabric) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(level names, level of each vertex (-1: none), index in it)``;
    aliases (``aggregation``, ``root``) and groups of several vertices
    (Dragonfly's ``group``) are skipped."""
    n = fab.topo.num_nodes
    level = np.full(n, -1, dtype=np.int64)
    index = np.zeros(n, dtype=np.int64)
    names, seen = [], []
    for name, members in fab.levels.items():
        if members.shape[1] != 1 or any(members is m for m in seen):
            continue
        seen.append(members)
        level[members[:, 0]] = len(names)
        index[members[:, 0]] = np.arange(len(members))
        names.append(name)
    return names, level, index


def _height(name: str, position: int) -> int:
    """Order of levels from the hosts up (a tree's ``depthD`` counts from
    the root down, so deeper is lower)."""
    if name.startswith("depth") and name[5:].isdigit():
        return 1_000_000 - int(name[5:])
    return position


def vertex_names(topology: Topology, fab: Fabric | None = None) -> np.ndarray:
    """The name of every vertex, object[num_nodes] (see the module docstring)."""
    fab = fab or Fabric(topology)
    n = topology.num_nodes
    out = np.char.add("node:", np.arange(n).astype(str)).astype(object)
    if isinstance(topology, Graph):
        out[:] = np.char.add("id:", np.asarray(topology.node_names, dtype=str)).astype(object)
        return out
    names, level, index = _levels(fab)
    has = level >= 0
    if has.any():
        prefix = np.asarray([f"{name}:" for name in names], dtype=object)[level[has]]
        out[has] = prefix + _text(index[has])
    if fab.grid is not None:
        e = topology.num_endpoints
        coords = np.unravel_index(np.arange(e), fab.grid)
        text = _text(coords[0])
        for c in coords[1:]:
            text = text + "," + _text(c)
        out[:e] = text
    return out


def link_names(topology: Topology, links) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(name, tier, direction)`` of the links ``links`` (ids), object[K] each.
    A topology with failed or degraded links is named as its healthy base
    (the same link ids): its family's names, tiers and directions."""
    if isinstance(topology, FaultyTopology):
        topology = topology.base
    links = np.asarray(links, dtype=np.int64)
    src = np.asarray(topology.link_src, dtype=np.int64)[links]
    dst = np.asarray(topology.link_dst, dtype=np.int64)[links]
    k = len(links)
    tier = np.full(k, "link", dtype=object)
    direction = np.full(k, "", dtype=object)
    if isinstance(topology, Torus):   # the link id says its dimension and direction
        per_node = 2 * topology.ndim
        dim, minus = (links % per_node) // 2, links % 2 == 1
        tier[:] = np.asarray([dim_name(d) for d in range(topology.ndim)], dtype=object)[dim]
        direction[:] = np.where(minus, "-", "+")
        coords = vertex_names(topology)[src]
        return coords + " " + direction + tier, tier, direction
    fab = Fabric(topology)
    vertex = vertex_names(topology, fab)
    name = vertex[src] + ">" + vertex[dst]
    e = topology.num_endpoints
    if fab.grid is not None:   # endpoint to endpoint along a grid dimension
        on_grid = (src < e) & (dst < e)
        a = np.stack(np.unravel_index(src[on_grid], fab.grid), axis=-1)
        b = np.stack(np.unravel_index(dst[on_grid], fab.grid), axis=-1)
        differ = a != b
        dim = np.argmax(differ, axis=-1)
        step = (b - a)[np.arange(len(dim)), dim]
        tier[on_grid] = np.asarray([dim_name(d) for d in range(len(fab.grid))],
                                   dtype=object)[dim]
        direction[on_grid] = np.where(step > 0, "+", "-")
    names, level, _ = _levels(fab)
    if not names:
        return name, tier, direction
    height = np.asarray([_height(nm, i) for i, nm in enumerate(names)] + [-1])
    # vertices of no level (a grid's endpoints beside its switches) sit lowest
    lo_level, hi_level = level[src], level[dst]
    h_src, h_dst = height[lo_level], height[hi_level]
    level_name = np.asarray(names + ["node"], dtype=object)
    between = (h_src != h_dst) & ~((src < e) & (dst < e) & (fab.grid is not None))
    low = np.where(h_src < h_dst, lo_level, hi_level)
    high = np.where(h_src < h_dst, hi_level, lo_level)
    tier[between] = level_name[low[between]] + "-" + level_name[high[between]]
    direction[between] = np.where(h_src[between] < h_dst[between], "up", "down")
    same = (h_src == h_dst) & (lo_level >= 0)
    if "group" in fab.levels and same.any():   # Dragonfly: routers of one group or two
        group = np.full(topology.num_nodes, -1, dtype=np.int64)
        members = fab.levels["group"]
        group[members.reshape(-1)] = np.repeat(np.arange(len(members)), members.shape[1])
        tier[same] = np.where(group[src[same]] == group[dst[same]], "local", "global")
    elif same.any():
        tier[same] = level_name[lo_level[same]] + "-" + level_name[lo_level[same]]
    return name, tier, direction
