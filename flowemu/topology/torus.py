"""k-ary n-dimensional torus (``wrap=True``) and mesh (``wrap=False``).

Every vertex is an endpoint. Node ids are row-major over ``dims`` (last
dimension fastest, exactly :func:`numpy.ravel_multi_index`). Every node owns
``2·D`` outgoing directed links:

    link id = node · 2D + 2 · dim + (0 for the + direction, 1 for −)

so a link id alone tells where it starts and which way it goes. On a
dimension of size 2 the + and − links reach the same neighbour but stay
distinct links (two cables). A mesh keeps the ids of the boundary links that
would wrap, with ``link_exists = False``, ``link_dst = link_src`` and capacity
scale 0, and never routes over them; keeping the ids makes link arithmetic
identical for both families.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.errors import ConfigError, RoutingError, show
from ..kernels.hashing import id_bounds
from ..kernels.routing import (
    STATUS_BAD_NODE,
    STATUS_COUNT_MISMATCH,
    STATUS_OK,
    torus_route_counts,
    torus_route_fill_path,
    torus_route_fill_split,
)
from ..kernels.symmetry import merge_orbit_entries, orbit_representatives, translation_period
from .base import OrbitProblem, Orbits, Routes, Topology
from .common import check_seed
from .common import is_int as _is_int
from .common import readonly as _readonly

#: routing modes of a torus or mesh

#: largest number of nodes a torus or mesh may have
MAX_NODES = 2**24

#: most route entries :meth:`Torus.orbit_problem` builds for its
#: representatives (~0.4 GB); a larger step is left to the full path,
#: whose memory check counts before it routes
ORBIT_MAX_ENTRIES = 1 << 24

#: the routing modes a torus or mesh knows (other families add their own)
_STATUS_TEXT = {
    STATUS_BAD_NODE: "node id out of range",
    STATUS_COUNT_MISMATCH: "internal error: the routing kernels disagree on the entry count",
}


@dataclass(frozen=True)
class Torus(Topology):
    """A torus (``wrap=True``) or mesh (``wrap=False``) of shape ``dims``.

    Parameters
    ----------
    dims : tuple of int
        Size of each dimension, each ``>= 2``; at most ``2**24`` nodes.
    wrap : bool
        True for a torus (wraparound links), False for a mesh.
    groups : tuple of int, optional
        The shape of the sub-blocks a collective's locality is measured
        against (``cross_group_bytes``), one size per dimension, each
        dividing its dimension: ``(4, 4)`` on ``(16, 16)`` cuts the torus
        into 16 blocks of 4x4 nodes. None (default): no groups. Routing is
        the same either way.

    Attributes
    ----------
    spec : str
        ``"torus:8x8"`` or ``"mesh:4x4"``.
    num_nodes, num_endpoints : int
        ``prod(dims)``.
    link_src, link_dst : int32[L]
        ``L = num_nodes · 2D``; endpoints of each link (``link_dst == link_src``
        for a mesh link that does not exist).
    link_capacity_scale : float64[L]
        1.0, or 0.0 for a mesh link that does not exist.
    link_exists : bool[L]
    strides : int64[D]
        Node-id stride of each dimension.
    """

    id_word = "node"   # in messages (a class attribute, not a field)

    dims: tuple[int, ...]
    wrap: bool = True
    groups: tuple[int, ...] | None = None

    ecmp_modes = ("split", "dor", "hash")   # a class attribute, not a field
    # peak and held bytes a link (28 and 19 measured on torus:1024x1024), with a margin
    build_link_bytes = 36
    held_link_bytes = 24
    split_every_shortest = True             # (class attributes, not fields)

    def __post_init__(self):
        dims = self.dims
        if isinstance(dims, (int, np.integer)) and not isinstance(dims, (bool, np.bool_)):
            dims = (dims,)
        if not isinstance(dims, (tuple, list, np.ndarray)):
            raise ConfigError(f"dims: {show(dims)} is not allowed; expected a tuple of integers >= 2, "
                              "e.g. (8, 8)")
        dims = tuple(dims)
        if len(dims) < 1:
            raise ConfigError("dims: () is not allowed; expected at least one dimension, e.g. (8, 8)")
        for i, d in enumerate(dims):
            if not _is_int(d) or d < 2:
                raise ConfigError(f"dims: dimension {i} is {show(d)}; every dimension must be an "
                                  "integer >= 2")
        dims = tuple(int(d) for d in dims)
        nodes = math.prod(dims)
        if nodes > MAX_NODES:
            raise ConfigError(f"dims: {'x'.join(map(str, dims))} has {nodes} nodes; at most "
                              f"{MAX_NODES} (2**24) are allowed")
        if not isinstance(self.wrap, (bool, np.bool_)):
            raise ConfigError(f"wrap: {show(self.wrap)} is not allowed; expected True (torus) or "
                              "False (mesh)")
        wrap = bool(self.wrap)
        set_ = object.__setattr__
        set_(self, "dims", dims)
        set_(self, "wrap", wrap)
        set_(self, "grid", dims if wrap else None)
        groups = self._check_groups(dims)
        set_(self, "groups", groups)
        set_(self, "spec", f"{'torus' if wrap else 'mesh'}:{'x'.join(map(str, dims))}"
             + (f",groups={'x'.join(map(str, groups))}" if groups else ""))
        set_(self, "num_nodes", nodes)
        set_(self, "num_endpoints", nodes)
        strides = np.ones(len(dims), dtype=np.int64)
        for i in range(len(dims) - 2, -1, -1):
            strides[i] = strides[i + 1] * dims[i + 1]
        set_(self, "strides", _readonly(strides))
        self._build_links()

    def _check_groups(self, dims: tuple) -> tuple | None:
        groups = self.groups
        if groups is None:
            return None
        if isinstance(groups, (int, np.integer)) and not isinstance(groups, (bool, np.bool_)):
            groups = (groups,)
        shape = "x".join(map(str, dims))
        if not isinstance(groups, (tuple, list)) or len(groups) != len(dims) \
                or not all(_is_int(g) for g in groups):
            given = "x".join(map(str, groups)) if isinstance(groups, (tuple, list)) \
                else show(groups)
            raise ConfigError(f"groups: {given} is not allowed; expected one block "
                              f"size per dimension of {shape}, each dividing it, e.g. "
                              f"groups={'x'.join(str(max(1, d // 2)) for d in dims)}")
        for i, (g, d) in enumerate(zip(groups, dims)):
            if g < 1:
                raise ConfigError(f"groups: block size {g} of dimension {i} is not allowed; "
                                  f"each block size is an integer >= 1 dividing its "
                                  f"dimension of {shape}")
            if d % g:
                raise ConfigError(f"groups: block size {g} of dimension {i} does not divide "
                                  f"{d}; each block size must divide its dimension of {shape}")
        return tuple(int(g) for g in groups)

    def endpoint_groups(self) -> tuple[np.ndarray, str] | None:
        """The sub-blocks of shape :attr:`groups` (numbered row-major over
        the blocks, as nodes are over the grid); None without ``groups``."""
        if self.groups is None:
            return None
        block = self.coords(np.arange(self.num_nodes)) // np.asarray(self.groups)
        per = np.asarray(self.dims) // np.asarray(self.groups)
        ids = np.zeros(self.num_nodes, np.int64)
        for i in range(self.ndim):       # (a loop over dimensions)
            ids = ids * per[i] + block[:, i]
        return ids, "sub-block"

    def _build_links(self) -> None:
        # int32 throughout: L = N·2D < 2**31 for N <= 2**24, and a 2**24-node
        # torus already needs several hundred MB of link arrays.
        ndim = len(self.dims)
        nodes = np.arange(self.num_nodes, dtype=np.int32)
        # every node's coordinates, for the routing kernels (a table lookup
        # instead of two integer divisions per dimension and endpoint)
        coords = np.empty((self.num_nodes, ndim), dtype=np.int32)
        dst = np.empty((self.num_nodes, ndim, 2), dtype=np.int32)
        exists = np.ones((self.num_nodes, ndim, 2), dtype=bool)
        for i, (d, stride) in enumerate(zip(self.dims, self.strides.tolist(), strict=True)):
            c = (nodes // stride) % d
            coords[:, i] = c
            last = c == d - 1
            first = c == 0
            dst[:, i, 0] = np.where(last, nodes - (d - 1) * stride, nodes + stride)
            dst[:, i, 1] = np.where(first, nodes + (d - 1) * stride, nodes - stride)
            if not self.wrap:
                exists[:, i, 0] = ~last
                exists[:, i, 1] = ~first
        object.__setattr__(self, "_coords", _readonly(coords))
        src = np.repeat(nodes, 2 * ndim)
        exists = exists.reshape(-1)
        dst = np.where(exists, dst.reshape(-1), src)
        set_ = object.__setattr__
        set_(self, "link_src", _readonly(src))
        set_(self, "link_dst", _readonly(dst))
        set_(self, "link_exists", _readonly(exists))
        set_(self, "link_capacity_scale", _readonly(exists.astype(np.float64)))

    def __reduce__(self):
        # Ship only the shape to worker processes; the arrays are rebuilt.
        return (type(self), (self.dims, self.wrap, self.groups))

    # ------------------------------------------------------------------ shape

    @property
    def ndim(self) -> int:
        """Number of dimensions D."""
        return len(self.dims)

    def coords(self, nodes) -> np.ndarray:
        """Coordinates of node ids.

        Parameters
        ----------
        nodes : int array of shape S (or a scalar)

        Returns
        -------
        int64[*S, D]
        """
        nodes = self._check_nodes(nodes, "nodes", ConfigError)
        return self._coords[nodes].astype(np.int64)

    def node_of(self, coords) -> np.ndarray:
        """Node ids of coordinates (inverse of :meth:`coords`).

        Parameters
        ----------
        coords : int array of shape (*S, D)

        Returns
        -------
        int64[*S]
        """
        c = np.asarray(coords)
        if not np.issubdtype(c.dtype, np.integer) or c.ndim < 1 or c.shape[-1] != self.ndim:
            raise ConfigError(f"coords: expected an integer array of shape (..., {self.ndim}) "
                              f"for {self.spec}, got dtype {c.dtype} shape {c.shape}")
        bad = (c < 0) | (c >= np.asarray(self.dims))
        if bad.any():
            raise ConfigError(f"coords: {c[bad.any(axis=-1)][0].tolist()} is outside "
                              f"{self.spec} (dims {list(self.dims)})")
        return (c.astype(np.int64) * self.strides).sum(axis=-1)

    def link_id(self, node, dim, direction) -> np.ndarray:
        """Id of the link leaving ``node`` in dimension ``dim``.

        Parameters
        ----------
        node, dim : int arrays (broadcast together)
        direction : int array of +1 or −1 (the sign of the coordinate step)

        Returns
        -------
        int64[broadcast shape]
            ``node · 2D + 2 · dim + (0 if direction == +1 else 1)``.
        """
        node = self._check_nodes(node, "node", ConfigError)
        dim = np.asarray(dim)
        direction = np.asarray(direction)
        if not np.issubdtype(dim.dtype, np.integer) or ((dim < 0) | (dim >= self.ndim)).any():
            raise ConfigError(f"dim: expected integers in 0..{self.ndim - 1} for {self.spec}")
        if (not np.issubdtype(direction.dtype, np.integer)
                or ((direction != 1) & (direction != -1)).any()):
            raise ConfigError("direction: expected +1 or -1 (the sign of the coordinate step)")
        return node * (2 * self.ndim) + 2 * dim.astype(np.int64) + (direction < 0)

    def distance(self, src, dst) -> np.ndarray:
        """Minimal hop count between nodes.

        Parameters
        ----------
        src, dst : int[F]

        Returns
        -------
        int64[F]
            Sum over dimensions of ``min(|o|, d − |o|)`` (torus) or ``|o|``
            (mesh) for the coordinate offset ``o``.
        """
        src, dst = self._check_flows(src, dst)
        o = np.abs(self._coords[dst].astype(np.int64) - self._coords[src])
        if self.wrap:
            o = np.minimum(o, np.asarray(self.dims, dtype=np.int64) - o)
        return o.sum(axis=-1)

    def describe(self) -> dict:
        """Plain-data description: family, dims, wrap, nodes, links (existing),
        and the locality groups' block shape when set."""
        out = {"family": "torus" if self.wrap else "mesh", "dims": list(self.dims),
               "wrap": self.wrap, "nodes": self.num_nodes,
               "links": int(np.count_nonzero(self.link_exists))}
        if self.groups:
            out["groups"] = list(self.groups)
        return out

    # ---------------------------------------------------------------- routing

    def route(self, src, dst, ecmp: str = "split", seed: int = 0) -> Routes:
        """Route flows ``src[i] -> dst[i]`` over minimal paths.

        Parameters
        ----------
        src, dst : int[F]
            Node ids in ``0..num_nodes-1``.
        ecmp : {"split", "dor", "hash"}
            ``"split"``: every minimal path, each node splitting the flow's
            mass evenly over its minimal next hops (a dimension exactly d/2
            away on a torus is travelled half each way); entries in
            topological order. ``"dor"``: one dimension-order path (dim 0
            first), ties taken the + way. ``"hash"``: one minimal path, each
            hop chosen among the minimal next hops by a hash of
            ``(seed, src, dst, hop)``. Single paths list entries in path order
            with ``frac`` 1.
        seed : int
            Hash seed (``ecmp="hash"`` only).

        Returns
        -------
        Routes
            ``flow_ptr`` int64[F+1], ``link`` int32[E], ``frac`` float64[E],
            ``hops`` int32[F] (minimal distance; 0 and no entries when
            ``src == dst``).
        """
        self.check_mode(ecmp)
        seed = check_seed(seed)
        src, dst = self._check_flows(src, dst)
        num_flows = len(src)
        dims = np.asarray(self.dims, dtype=np.int64)
        split = ecmp == "split"
        counts = np.empty(num_flows, dtype=np.int64)
        hops = np.empty(num_flows, dtype=np.int32)
        status, bad, max_states = torus_route_counts(src, dst, dims, self.strides, self._coords,
                                                     self.wrap, split, counts, hops)
        self._check_status(status, bad, src, dst)
        flow_ptr = np.zeros(num_flows + 1, dtype=np.int64)
        np.cumsum(counts, out=flow_ptr[1:])
        num_entries = int(flow_ptr[-1])
        link = np.empty(num_entries, dtype=np.int32)
        frac = np.empty(num_entries, dtype=np.float64)
        if split:
            mass = np.empty(max_states, dtype=np.float64)
            status, bad = torus_route_fill_split(src, dst, dims, self.strides, self._coords,
                                                 self.wrap, flow_ptr, link, frac, mass)
        else:
            status, bad = torus_route_fill_path(src, dst, dims, self.strides, self._coords,
                                                self.wrap, ecmp == "hash",
                                                np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF),
                                                flow_ptr, link, frac)
        self._check_status(status, bad, src, dst)
        return Routes(flow_ptr=flow_ptr, link=link, frac=frac, hops=hops)

    def max_route_entries(self, ecmp: str = "split") -> int:
        """Upper bound on one flow's route entries: the diameter for a single
        path; for split routes the links of the product DAG of the farthest
        offset in every dimension (a torus dimension of even size d has a
        tie at d/2: 2·(d/2) states and links each way)."""
        self.check_mode(ecmp)
        far = [d // 2 if self.wrap else d - 1 for d in self.dims]
        if ecmp != "split":
            return int(sum(far))
        states, edges = 1, 0
        for d, m in zip(self.dims, far, strict=True):
            tie = self.wrap and d % 2 == 0
            n_i, e_i = (2 * m, 2 * m) if tie else (m + 1, m)
            edges = edges * n_i + states * e_i
            states *= n_i
        return int(edges)

    def route_entries(self, src, dst, ecmp: str = "split") -> int:
        """Route entries :meth:`route` would return for these flows, from the
        routing kernel's counting pass (12 bytes of scratch per flow, no
        routes built)."""
        self.check_mode(ecmp)
        src, dst = self._check_flows(src, dst)
        counts = np.empty(len(src), dtype=np.int64)
        hops = np.empty(len(src), dtype=np.int32)
        status, bad, _ = torus_route_counts(src, dst, np.asarray(self.dims, dtype=np.int64),
                                            self.strides, self._coords, self.wrap,
                                            ecmp == "split", counts, hops)
        self._check_status(status, bad, src, dst)
        return int(counts.sum())

    def distance_grid(self):
        """The coordinate table, sizes and wrap (see :meth:`Topology.distance_grid`)."""
        return self._coords, np.asarray(self.dims, dtype=np.int64), self.wrap

    # --------------------------------------------------------------- symmetry

    def orbits(self, src, dst, share, ecmp: str, link_capacity: np.ndarray) -> Orbits | None:
        """The translations that map the step's flows onto themselves (torus
        only, ``split`` and ``dor`` routes: both commute with translations,
        a hashed path does not).

        :func:`~flowemu.kernels.symmetry.translation_period` finds the
        smallest invariant step ``P_i`` of each dimension (exact, flow by
        flow); the group of translations by multiples of ``P`` has
        ``Π d_i/P_i`` elements. Swing's and recursive doubling's steps on
        ``torus:128x128`` move even and odd coordinates differently
        (``P = (2, 2)``): 4,096 flows an orbit. A representative is a flow
        whose sender has every coordinate below ``P_i``. ``None`` when the
        step has no symmetry or the link capacities do not share it."""
        if not self.wrap or ecmp not in ("split", "dor"):
            return None
        src, dst, share = (np.ascontiguousarray(a) for a in (src, dst, share))
        if (len(src) == 0 or not len(share) == len(src) == len(dst) < 2**31
                or share.dtype != np.float64 or src.dtype != dst.dtype
                or src.dtype not in (np.int32, np.int64)):
            return None
        lo, hi = id_bounds(src, dst)
        if lo < 0 or hi >= self.num_nodes:
            self._check_flows(src, dst)   # raises, naming the first bad flow
        dims = np.asarray(self.dims, dtype=np.int64)
        period = np.empty(len(dims), dtype=np.int64)
        translation_period(src, dst, share.view(np.uint64), self._coords, dims, self.strides,
                           period)
        group = int(np.prod(dims // period))
        key = tuple(period.tolist())
        if group == 1 or not self._capacity_invariant(
                np.asarray(link_capacity, dtype=np.float64), key):
            return None
        reps = orbit_representatives(src, self._coords, period)
        entries = self.route_entries(src[reps], dst[reps], ecmp)
        if entries > ORBIT_MAX_ENTRIES:
            return None   # the engine's memory check counts the full routes first
        return Orbits(flows=reps, group_size=group, entries=entries, period=key)

    def orbit_problem(self, orbits: Orbits, src, dst, ecmp: str,
                      link_capacity: np.ndarray) -> OrbitProblem:
        """The step's problem on one flow per orbit of ``orbits`` (made by
        :meth:`orbits` for these flows, ``ecmp`` and capacities): a link's
        orbit is its direction and its starting node's coordinates modulo
        ``P``; each representative crosses it with the summed fraction of
        its bytes on the orbit's links."""
        reps = orbits.flows
        orbit = self._orbits(orbits.period)
        src, dst = np.asarray(src), np.asarray(dst)
        routes = self.route(src[reps], dst[reps], ecmp)
        ndir = 2 * self.ndim
        num_res = len(orbit["nodes"]) * ndir
        flow_ptr, res, coef, top = merge_orbit_entries(routes.flow_ptr, routes.link, routes.frac,
                                                       orbit["index"], ndir, num_res)
        rep_links = (orbit["nodes"][:, None] * ndir + np.arange(ndir)).reshape(-1)
        capacity = np.asarray(link_capacity, dtype=np.float64)[rep_links] / \
            np.where(top > 0, top, 1.0)
        frac = np.minimum(coef / top[res], 1.0)
        return OrbitProblem(flows=reps, routes=Routes(flow_ptr, res, frac, routes.hops),
                            capacity=capacity, dst=orbit["name"][dst[reps]],
                            node_orbit=orbit["name"])

    def _orbits(self, period: tuple) -> dict:
        """Node orbits of the translations by multiples of ``period``:
        ``index`` (each node's orbit, row-major over ``period``), ``nodes``
        (the orbit's node with coordinates below ``period``, by index) and
        ``name`` (that node, for every node). Kept per period."""
        memo = self.__dict__.setdefault("_orbit_memo", {})
        got = memo.get(period)
        if got is None:
            p = np.asarray(period, dtype=np.int64)
            c = self._coords % p
            pstrides = np.ones(len(p), dtype=np.int64)
            for i in range(len(p) - 2, -1, -1):
                pstrides[i] = pstrides[i + 1] * p[i + 1]
            index = c @ pstrides
            nodes = np.indices(period).reshape(len(p), -1).T @ self.strides
            got = {"index": index, "nodes": nodes, "name": nodes[index]}
            memo[period] = got
        return got

    def _capacity_invariant(self, cap: np.ndarray, period: tuple) -> bool:
        """Whether every link has its orbit's capacity (kept for the last
        capacity array seen with each period)."""
        memo = self.__dict__.setdefault("_capacity_memo", {})
        seen = memo.get(period)
        if seen is not None and seen[0] is cap:
            return seen[1]
        if len(cap) != self.num_links:
            ok = False
        else:
            grid = cap.reshape(*self.dims, 2 * self.ndim)
            ok = all(np.array_equal(grid, np.roll(grid, step, axis=i))
                     for i, (step, d) in enumerate(zip(period, self.dims, strict=True))
                     if step < d)
        memo[period] = (cap, ok)
        return ok

    # ------------------------------------------------------------- validation

    def _check_nodes(self, nodes, name: str, error) -> np.ndarray:
        a = np.asarray(nodes)
        if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
            raise ConfigError(f"{name}: expected integer node ids, got dtype {a.dtype}")
        a = a.astype(np.int64, copy=False)
        bad = np.flatnonzero((a < 0) | (a >= self.num_nodes))
        if len(bad):
            raise error(f"{name}: node {int(a.reshape(-1)[bad[0]])} is not a node of "
                        f"{self.spec} (ids 0..{self.num_nodes - 1})")
        return a

    def _check_status(self, status: int, bad: int, src: np.ndarray, dst: np.ndarray) -> None:
        if status != STATUS_OK:
            what = _STATUS_TEXT.get(int(status), f"internal routing error (status {status})")
            raise RoutingError(f"flow {bad} ({int(src[bad])} -> {int(dst[bad])}) on "
                               f"{self.spec}: {what}")
