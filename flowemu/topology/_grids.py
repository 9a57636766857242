"""What HyperX and HammingMesh share: a grid of nodes whose links, dimension
by dimension, join the nodes of one *line* (all nodes sharing every other
coordinate), the id layout of those links, and routing through
:mod:`flowemu.kernels.gridroute`.

A family describes each dimension by a line kind (complete graph or boards
joined by a switch), its board size, and the capacity and latency scales of
its two edge classes (on-board mesh edges, and the rest). Link ids are
dimension-major, then line-major (the line index is row-major over the other
coordinates), then the kernel's line-edge id, so a link id alone says which
dimension, line and line edge it is. Vertices: the nodes (row-major over
``grid``), then one switch per line of every ``KIND_BOARDS`` dimension.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.errors import ConfigError, RoutingError
from ..kernels.gridroute import (
    KIND_BOARDS,
    KIND_COMPLETE,
    STATUS_BAD_NODE,
    STATUS_COUNT_MISMATCH,
    STATUS_OK,
    grid_route_counts,
    grid_route_fill,
    max_path_latency,
)
from .base import Routes, Topology
from .common import check_seed, readonly

_MODE_CODE = {"split": 0, "dor": 1, "hash": 2}

#: a dimension caches the split routes of its one-dimension flows when its
#: line has at most this many (source, destination) pairs
MAX_TABLE_PAIRS = 2**20

_STATUS_TEXT = {
    STATUS_BAD_NODE: "node id out of range",
    STATUS_COUNT_MISMATCH: "internal error: the routing kernels disagree on the entry count",
}


def line_edges(kind: int, size: int, board: int):
    """Local ends and class of the edges of one line, in line-edge id order
    (see :mod:`flowemu.kernels.gridroute`): ``(u, v, on_board)``, int64[E],
    int64[E], bool[E]; line vertex ``size`` is the line's switch."""
    if kind == KIND_COMPLETE:
        u = np.repeat(np.arange(size), size - 1)
        t = np.tile(np.arange(size - 1), size)
        v = t + (t >= u)
        return u, v, np.zeros(len(u), dtype=bool)
    s, n = board, size // board
    p = (np.repeat(np.arange(n), s - 1) * s + np.tile(np.arange(s - 1), n))
    port = np.repeat(np.arange(n), 2) * s + np.tile([0, s - 1], n)
    sw = np.full(2 * n, size)
    u = np.concatenate([p, p + 1, port, sw])
    v = np.concatenate([p + 1, p, sw, port])
    on_board = np.concatenate([np.ones(2 * len(p), dtype=bool), np.zeros(4 * n, dtype=bool)])
    return u, v, on_board


def count_links(grid, kinds, boards) -> int:
    """Links of a grid family, computed without building them."""
    nodes = math.prod(grid)
    total = 0
    for size, kind, s in zip(grid, kinds, boards, strict=True):
        lines = nodes // size
        per_line = size * (size - 1) if kind == KIND_COMPLETE \
            else 2 * (size // s) * (s - 1) + 4 * (size // s)
        total += lines * per_line
    return total


class GridTopology(Topology):
    """Base of HyperX and HammingMesh (frozen dataclasses). A subclass calls
    :meth:`_build` from ``__post_init__`` with its per-dimension description
    and names its routing in ``_mode_doc``."""

    id_word = "node"
    ecmp_modes = ("split", "dor", "hash")
    split_every_shortest = True   # split: every minimal path, even per vertex

    def _build(self, grid, kinds, boards, board_scale, other_scale, board_latency,
               other_latency) -> None:
        """Build the vertices, links and kernel tables.

        ``grid``: positions per dimension; ``kinds``/``boards``: line kind and
        board size per dimension; ``*_scale``/``*_latency``: capacity and
        latency multiples of the on-board and the other edges of each
        dimension."""
        set_ = object.__setattr__
        ndim = len(grid)
        nodes = math.prod(grid)
        strides = np.ones(ndim, dtype=np.int64)
        for i in range(ndim - 2, -1, -1):
            strides[i] = strides[i + 1] * grid[i + 1]
        lstride = np.zeros((ndim, ndim), dtype=np.int64)
        for k in range(ndim):
            acc = 1
            for i in range(ndim - 1, -1, -1):
                if i != k:
                    lstride[k, i] = acc
                    acc *= grid[i]
        ids = np.arange(nodes, dtype=np.int64).reshape(grid)
        srcs, dsts, caps, lats = [], [], [], []
        lbase = np.zeros(ndim, dtype=np.int64)
        nedges = np.zeros(ndim, dtype=np.int64)
        swbase = np.full(ndim, -1, dtype=np.int64)
        num_vertices = nodes
        first = 0
        for k in range(ndim):
            size, lines = grid[k], nodes // grid[k]
            u, v, on_board = line_edges(kinds[k], size, boards[k])
            node_of_line = np.moveaxis(ids, k, -1).reshape(lines, size)
            switch = np.arange(lines, dtype=np.int64)[:, None] + num_vertices
            if kinds[k] == KIND_BOARDS:
                swbase[k] = num_vertices
                num_vertices += lines

            def ends(local, node_of_line=node_of_line, switch=switch, size=size):
                return np.where(local < size, node_of_line[:, np.minimum(local, size - 1)],
                                switch)

            srcs.append(ends(u).reshape(-1))
            dsts.append(ends(v).reshape(-1))
            cap = np.where(on_board, board_scale[k], other_scale[k])
            lat = np.where(on_board, board_latency[k], other_latency[k])
            caps.append(np.tile(cap, lines))
            lats.append(np.tile(lat, lines))
            lbase[k] = first
            nedges[k] = len(u)
            first += lines * len(u)
        set_(self, "grid", tuple(int(g) for g in grid))
        set_(self, "num_nodes", int(num_vertices))
        set_(self, "num_endpoints", int(nodes))
        set_(self, "link_src", readonly(np.concatenate(srcs).astype(np.int32)))
        set_(self, "link_dst", readonly(np.concatenate(dsts).astype(np.int32)))
        set_(self, "link_capacity_scale", readonly(np.concatenate(caps).astype(np.float64)))
        lat = np.concatenate(lats).astype(np.float64)
        set_(self, "link_latency_scale", readonly(lat) if np.any(lat != 1.0) else None)
        set_(self, "_kinds", readonly(np.asarray(kinds, dtype=np.int64)))
        set_(self, "_sizes", readonly(np.asarray(grid, dtype=np.int64)))
        set_(self, "_boards", readonly(np.asarray(boards, dtype=np.int64)))
        set_(self, "_strides", readonly(strides))
        set_(self, "_lstride", readonly(lstride))
        set_(self, "_lbase", readonly(lbase))
        set_(self, "_nedges", readonly(nedges))
        set_(self, "_swbase", readonly(swbase))
        self._build_pair_tables()

    def _build_pair_tables(self) -> None:
        """Cache the split routes of flows that move in one dimension (all
        of Swing's, bucket's and the rings' traffic on a grid), as line-edge
        ids and fractions per (source, destination) coordinate pair: routing
        such a flow is then a copy. Routed once, on the dimension's first
        line, by the general kernel."""
        set_ = object.__setattr__
        ndim = len(self.grid)
        empty = np.zeros(1, dtype=np.int64)
        set_(self, "_pair_base", np.full(ndim, -1, dtype=np.int64))
        set_(self, "_tab_ptr", empty)
        set_(self, "_tab_hops", empty.astype(np.int32))
        set_(self, "_tab_edge", empty)
        set_(self, "_tab_frac", np.zeros(1))
        ptrs, hops, edges, fracs = [], [], [], []
        pair_base = np.full(ndim, -1, dtype=np.int64)
        at, entries = 0, 0
        for k, size in enumerate(self.grid):
            if size * size > MAX_TABLE_PAIRS:
                continue
            pos = np.arange(size, dtype=np.int64) * int(self._strides[k])
            src, dst = (a.ravel() for a in np.meshgrid(pos, pos, indexing="ij"))
            r = self.route(src, dst, "split")
            pair_base[k] = at
            ptrs.append(r.flow_ptr[:-1] + entries)
            hops.append(r.hops)
            edges.append(r.link.astype(np.int64) - self._lbase[k])
            fracs.append(r.frac)
            at += size * size
            entries += r.num_entries
        if at:
            set_(self, "_tab_ptr", readonly(np.concatenate(ptrs + [[entries]]).astype(np.int64)))
            set_(self, "_tab_hops", readonly(np.concatenate(hops + [[0]]).astype(np.int32)))
            set_(self, "_tab_edge", readonly(np.concatenate(edges)))
            set_(self, "_tab_frac", readonly(np.concatenate(fracs)))
            set_(self, "_pair_base", readonly(pair_base))

    # ------------------------------------------------------------------ shape

    def coords(self, nodes) -> np.ndarray:
        """Grid coordinates of node ids, int64[*S, D] (row-major ids)."""
        a = np.asarray(nodes)
        if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
            raise ConfigError(f"nodes: expected integer node ids, got dtype {a.dtype}")
        a = a.astype(np.int64)
        if a.size and (a.min() < 0 or a.max() >= self.num_endpoints):
            raise ConfigError(f"nodes: ids must lie in 0..{self.num_endpoints - 1} on "
                              f"{self.spec}")
        return np.stack(np.unravel_index(a, self.grid), axis=-1).astype(np.int64)

    def distance(self, src, dst) -> np.ndarray:
        """Minimal hop count (cables) of each flow, int64[F]."""
        src, dst = self._check_flows(src, dst)
        _, hops, _ = self._counts(src, dst, False)
        return hops.astype(np.int64)

    # ---------------------------------------------------------------- routing

    def _counts(self, src, dst, split: bool):
        counts = np.empty(len(src), dtype=np.int64)
        hops = np.empty(len(src), dtype=np.int32)
        status, bad, max_states = grid_route_counts(
            src, dst, self._kinds, self._sizes, self._boards, self._strides, self._lstride,
            self._lbase, self._nedges, self.num_endpoints, split, self._pair_base,
            self._tab_ptr, self._tab_hops, counts, hops)
        self._check_status(status, bad, src, dst)
        # returned, not stored: several threads may route on one topology
        return counts, hops, int(max_states)

    def route(self, src, dst, ecmp: str = "split", seed: int = 0) -> Routes:
        """Route flows ``src[i] -> dst[i]`` over minimal paths.

        Parameters
        ----------
        src, dst : int[F]
            Node ids in ``0..num_endpoints-1``.
        ecmp : {"split", "dor", "hash"}
            ``"split"``: every minimal path, each vertex (node or switch)
            splitting the flow's mass evenly over its minimal next hops
            (per-hop ECMP); entries in topological order. ``"dor"``: one
            path, dimension 0 first (within a dimension the first minimal
            next hop: + mesh, − mesh, west port, east port). ``"hash"``: one
            minimal path, each hop chosen among the minimal next hops by a
            hash of ``(seed, src, dst, hop)``. Single paths list entries in
            path order with ``frac`` 1.
        seed : int
            Hash seed (``ecmp="hash"`` only).

        Returns
        -------
        Routes
            ``hops`` counts every cable, switch links included.
        """
        self.check_mode(ecmp)
        seed = check_seed(seed)
        src, dst = self._check_flows(src, dst)
        split = ecmp == "split"
        counts, hops, max_states = self._counts(src, dst, split)
        flow_ptr = np.zeros(len(src) + 1, dtype=np.int64)
        np.cumsum(counts, out=flow_ptr[1:])
        link = np.empty(int(flow_ptr[-1]), dtype=np.int32)
        frac = np.empty(len(link), dtype=np.float64)
        status, bad = grid_route_fill(
            src, dst, self._kinds, self._sizes, self._boards, self._strides, self._lstride,
            self._lbase, self._nedges, _MODE_CODE[ecmp],
            np.uint64(seed & 0xFFFFFFFFFFFFFFFF), self._pair_base, self._tab_ptr,
            self._tab_edge, self._tab_frac, flow_ptr, link, frac, max_states)
        self._check_status(status, bad, src, dst)
        return Routes(flow_ptr=flow_ptr, link=link, frac=frac, hops=hops)

    def route_entries(self, src, dst, ecmp: str = "split") -> int:
        """Route entries :meth:`route` would return, from the kernel's
        counting pass (no routes built)."""
        self.check_mode(ecmp)
        src, dst = self._check_flows(src, dst)
        return int(self._counts(src, dst, ecmp == "split")[0].sum())

    def max_route_entries(self, ecmp: str = "split") -> int:
        """The most entries of any one flow, counted on the flows from every
        node of one board to every node of that board and of one other board
        per dimension: lines are translation invariant board by board, and
        every other board is alike seen from a switch, so these flows cover
        every case."""
        self.check_mode(ecmp)
        key = ecmp == "split"
        cache = self.__dict__.setdefault("_max_entries", {})
        if key not in cache:
            src_axes = [np.arange(int(s)) for s in self._boards]
            dst_axes = [np.arange(min(2 * int(s), int(g)))
                        for s, g in zip(self._boards, self._sizes, strict=True)]
            src = np.ravel_multi_index(np.meshgrid(*src_axes, indexing="ij"),
                                       self.grid).ravel()
            dst = np.ravel_multi_index(np.meshgrid(*dst_axes, indexing="ij"),
                                       self.grid).ravel()
            s, d = (a.ravel() for a in np.meshgrid(src, dst, indexing="ij"))
            cache[key] = int(self._counts(s.astype(np.int64), d.astype(np.int64),
                                          key)[0].max())
        return cache[key]

    def path_latency(self, routes: Routes, link_latency: np.ndarray) -> np.ndarray:
        """Largest summed link latency over each flow's split paths,
        float64[F] (on-board and fabric links differ in latency, so paths of
        equal hop count may not be equally fast)."""
        lat = np.asarray(link_latency, dtype=np.float64)
        if len(lat) == 0 or np.all(lat == lat[0]):
            value = float(lat[0]) if len(lat) else 0.0
            return routes.hops.astype(np.float64) * value
        return max_path_latency(routes.flow_ptr, routes.link, self.link_src, self.link_dst,
                                lat, self.num_nodes)

    def _check_status(self, status: int, bad: int, src: np.ndarray, dst: np.ndarray) -> None:
        if status != STATUS_OK:
            what = _STATUS_TEXT.get(int(status), f"internal routing error (status {status})")
            raise RoutingError(f"flow {bad} ({int(src[bad])} -> {int(dst[bad])}) on "
                               f"{self.spec}: {what}")
