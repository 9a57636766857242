"""Routes (CSR of fractional link usage) and the Topology protocol.

A topology is a directed graph of ``num_nodes`` vertices; the first
``num_endpoints`` vertices host ranks (on a torus every vertex is an endpoint,
on a fat tree the switches come after the endpoints). Link ``l`` goes from
``link_src[l]`` to ``link_dst[l]`` and carries ``link_capacity_scale[l]`` times
the network's link bandwidth.

Links carry their own bandwidth and latency. The network's ``bandwidth`` and
``link_latency`` are the defaults a topology scales from: a family may give
``link_latency_scale`` (a multiple of the network's link latency) and, for
links whose speed is part of the network's description (a preset's slow
cross-site link, a graph file), absolute values in ``link_bandwidth_abs``
(bytes/s) and ``link_latency_abs`` (s), NaN where the scaled default applies.
:meth:`Topology.link_capacity` and :meth:`Topology.link_latency` resolve them
for a :class:`~flowemu.core.network.Network`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import ConfigError, RoutingError, show, suggest
from .aggregation import tier_ancestors

ECMP_MODES = ("split", "dor", "hash", "valiant", "dmodk", "adaptive")

#: modes the engine implements on top of a family's ``split`` routes (not a
#: family's own: :meth:`Topology.route` refuses them, see
#: :meth:`Topology.check_mode`)
ENGINE_MODES = ("adaptive",)


@dataclass(frozen=True)
class Routes:
    """Fractional paths of F flows in CSR form.

    Attributes
    ----------
    flow_ptr : int64[F+1]
        Entries of flow ``f`` are ``flow_ptr[f]:flow_ptr[f+1]``.
    link : int32[E]
        Link id of each entry. A link appears at most once per flow.
    frac : float64[E]
        Fraction of the flow's bytes crossing that link (ECMP splits a flow
        over equal-cost paths; along one path the fractions sum to <= 1 per
        hop layer).
    hops : int32[F]
        Length of the flow's (minimal) path(s) in links; 0 for a flow whose
        source is its destination.
    """

    flow_ptr: np.ndarray
    link: np.ndarray
    frac: np.ndarray
    hops: np.ndarray

    @property
    def num_flows(self) -> int:
        return len(self.flow_ptr) - 1

    @property
    def num_entries(self) -> int:
        return len(self.link)

    def flow_links(self, f: int) -> tuple[np.ndarray, np.ndarray]:
        """Link ids and fractions of flow ``f`` (a view)."""
        a, b = self.flow_ptr[f], self.flow_ptr[f + 1]
        return self.link[a:b], self.frac[a:b]


def concat_routes(parts) -> Routes:
    """The flows of several :class:`Routes`, one after the other."""
    parts = list(parts)
    if not parts:
        return Routes(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0),
                      np.zeros(0, np.int32))
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [r.num_entries for r in parts[:-1]])
    ptr = np.concatenate([parts[0].flow_ptr[:1].astype(np.int64)]
                         + [r.flow_ptr[1:].astype(np.int64) + o
                            for r, o in zip(parts, offsets, strict=True)])
    return Routes(ptr, np.concatenate([r.link for r in parts], dtype=np.int32),
                  np.concatenate([r.frac for r in parts], dtype=np.float64),
                  np.concatenate([r.hops for r in parts], dtype=np.int32))


@dataclass(frozen=True)
class Orbits:
    """A group of the network's automorphisms that maps a step's flows onto
    themselves (:meth:`Topology.orbits`): its orbits' representatives and
    what building the reduced problem costs.

    Attributes
    ----------
    flows : int64[R]
        One representative flow per orbit (indices into the step's flows).
    group_size : int
        Flows per orbit.
    entries : int
        Route entries of the representatives' real routes (what building the
        problem holds at its peak, for the memory check).
    period : tuple
        The family's description of the group (a torus: the smallest
        invariant step of each dimension).
    """

    flows: np.ndarray
    group_size: int
    entries: int
    period: tuple


@dataclass(frozen=True)
class OrbitProblem:
    """A step's max-min problem reduced by a symmetry of the network and the
    flows (:meth:`Topology.orbit_problem`): one flow per orbit, one resource
    per orbit of links.

    When a group of the network's automorphisms maps the flows onto
    themselves (bytes and routes included), the max-min allocation is
    unique and so invariant too: the flows of an orbit get one rate and
    finish together, and the links of an orbit carry one load. Counting, for
    a representative ``r`` and a link orbit ``L``, the fraction of ``r``'s
    bytes on the links of ``L`` (``a_rL``, summed over them) gives the load
    of every link of ``L`` as ``Σ_r a_rL·x_r`` (the group acts freely on
    flows and links, so each link of ``L`` meets exactly one flow of ``r``'s
    orbit per entry of ``r`` in ``L``). Each resource's row is divided by
    its largest coefficient (capacity too), which leaves its constraint as
    it was and keeps the coefficients in ``(0, 1]``.

    Attributes
    ----------
    flows : int64[R]
        The representative flows (indices into the step's flows).
    routes : Routes
        Their routes over the resources (``link`` holds resource ids);
        ``hops`` are the real paths' lengths.
    capacity : float64[M]
        Each resource's capacity (divided by its row's largest coefficient).
    dst : int64[R]
        Each representative's receiver orbit, named by one node of it (the
        incast fan-in of a receiver is the number of representatives whose
        receivers share its orbit).
    node_orbit : int64[N]
        The naming node of every node's orbit (a per-node quantity such as
        the ingress capacity is invariant when it equals its value there).
    """

    flows: np.ndarray
    routes: Routes
    capacity: np.ndarray
    dst: np.ndarray
    node_orbit: np.ndarray


def check_ecmp(ecmp: str) -> str:
    if not isinstance(ecmp, str) or ecmp not in ECMP_MODES:
        hint = suggest(ecmp, ECMP_MODES) if isinstance(ecmp, str) else ""
        raise ConfigError(f"ecmp: unknown mode {show(ecmp)}{hint}; allowed: "
                          f"{', '.join(ECMP_MODES)}")
    return ecmp


class Topology:
    """Protocol every topology family implements.

    Subclasses are frozen dataclasses; they must provide the attributes below
    and :meth:`route`.

    Attributes
    ----------
    spec : str
        The canonical spec string, e.g. ``"torus:8x8"``.
    num_nodes : int
        Vertices (endpoints first, then switches).
    num_endpoints : int
        Vertices that can host a rank.
    link_src, link_dst : int32[L]
    link_capacity_scale : float64[L]
        Capacity of each link as a multiple of the network link bandwidth.
    """

    spec: str
    num_nodes: int
    num_endpoints: int

    #: The logical node grid that grid algorithms (Swing, bucket, multi-port
    #: rings) arrange ranks on, endpoint ids row-major, or None. A torus
    #: offers its dims, HyperX and HammingMesh their node grid; a mesh (no
    #: wrap-around) and the trees offer none, so those algorithms run on rank
    #: ids (1-D) there.
    grid: tuple[int, ...] | None = None

    #: the routing modes (``ecmp=``) this family implements
    ecmp_modes: tuple[str, ...] = ("split", "hash")

    #: bytes a link (its share of the node tables included) that building
    #: this family peaks at, measured on ~1-16M links with a 20 % margin: what
    #: the family's constructor reserves before it allocates
    #: (:func:`flowemu.core.budget.reserve_topology`)
    build_link_bytes: int = 32
    #: bytes a link (node tables included) a built topology of this family
    #: holds while a run uses it, measured likewise
    #: (:func:`flowemu.core.budget.run_bytes`)
    held_link_bytes: int = 32

    @property
    def engine_modes(self) -> tuple[str, ...]:
        """Every ``ecmp=`` a run on this topology accepts: the family's own
        routing modes, plus ``"adaptive"`` where it has ``"split"`` (the
        engine rebalances the split routes per step, :mod:`flowemu.engine.adaptive`)."""
        if "split" in self.ecmp_modes:
            return (*self.ecmp_modes, *ENGINE_MODES)
        return tuple(self.ecmp_modes)

    def check_mode(self, ecmp, *, engine: bool = False) -> str:
        """``ecmp`` if this family routes by it, else ConfigError naming the
        modes it has (a sweep checks every configuration this way before it
        runs any, with ``engine=True``).

        With ``engine=True`` the modes are :attr:`engine_modes`: a family
        with ``"split"`` accepts ``"adaptive"``. Without it (what
        :meth:`route` and its relatives call) ``"adaptive"`` is refused:
        adaptive fractions depend on the step's bytes and the link
        capacities, which a topology does not see; it routes ``"split"``,
        the candidate paths, and the engine rebalances them."""
        check_ecmp(ecmp)
        modes = self.engine_modes if engine else self.ecmp_modes
        if ecmp not in modes:
            if ecmp in ENGINE_MODES and "split" in self.ecmp_modes:
                raise ConfigError(f"ecmp: {ecmp!r} is chosen per step by the engine from the "
                                  f"traffic (flowemu.engine.adaptive.adaptive_routes over the 'split' "
                                  f"routes); {self.spec} routes by {', '.join(self.ecmp_modes)}")
            raise ConfigError(f"ecmp: {ecmp!r} does not apply to {self.spec}; allowed: "
                              f"{', '.join(modes)}")
        return ecmp

    #: what an endpoint is called in messages ("node" on a torus, "host" on a tree)
    id_word = "endpoint"

    @property
    def num_links(self) -> int:
        return len(self.link_src)

    def endpoint_groups(self) -> tuple[np.ndarray, str] | None:
        """``(group of each endpoint, what a group is)`` for the families
        whose endpoints come in groups a collective's locality is measured
        against (Dragonfly groups, fat-tree pods, leaf-spine leaves,
        HammingMesh boards); None for the others."""
        return None

    def _check_flows(self, src, dst) -> tuple[np.ndarray, np.ndarray]:
        """``(src, dst)`` as contiguous int64 endpoint ids of equal length;
        ConfigError for a wrong shape or dtype, RoutingError naming the first
        flow whose ids are not endpoints."""
        word = self.id_word
        src = np.asarray(src)
        dst = np.asarray(dst)
        for name, a in (("src", src), ("dst", dst)):
            if a.ndim != 1:
                raise ConfigError(f"{name}: expected a 1-D array of {word} ids, got shape "
                                  f"{a.shape}")
            if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
                raise ConfigError(f"{name}: expected integer {word} ids, got dtype {a.dtype}")
        if len(src) != len(dst):
            raise ConfigError(f"src and dst must have equal lengths, got {len(src)} and "
                              f"{len(dst)}")
        src = np.ascontiguousarray(src, dtype=np.int64)
        dst = np.ascontiguousarray(dst, dtype=np.int64)
        n = self.num_endpoints
        bad = np.flatnonzero((src < 0) | (src >= n) | (dst < 0) | (dst >= n))
        if len(bad):
            f = int(bad[0])
            raise RoutingError(f"flow {f} ({int(src[f])} -> {int(dst[f])}) on {self.spec}: "
                               f"{word} ids must lie in 0..{n - 1}")
        return src, dst

    def route(self, src: np.ndarray, dst: np.ndarray, ecmp: str = "split",
              seed: int = 0) -> Routes:  # pragma: no cover - interface
        """Route flows ``src[i] -> dst[i]`` (endpoint ids, int arrays of equal
        length); returns :class:`Routes` with one CSR row per flow."""
        raise NotImplementedError

    def route_entries(self, src: np.ndarray, dst: np.ndarray, ecmp: str = "split") -> int:
        """Route entries (CSR length) :meth:`route` would return for these
        flows, counted without building the routes, so that memory can be
        checked first. This default routes in chunks; families override it
        with a counting pass."""
        total = 0
        for a in range(0, len(src), 1 << 16):
            total += self.route(src[a:a + (1 << 16)], dst[a:a + (1 << 16)], ecmp).num_entries
        return total

    def max_route_entries(self, ecmp: str = "split") -> int | None:
        """An upper bound on the route entries of any one flow (None when the
        family gives none; then :meth:`route_entries` counts them)."""
        return None

    def solver_routes(self, src, dst, ecmp: str, link_capacity: np.ndarray):
        """``(routes, capacity)`` of the exact reduced problem of
        :meth:`solver_problem` built straight from the flows (``src``,
        ``dst``: endpoint ids), without the full routes; ``None`` (the
        default) when the family has none for ``ecmp``. The routes must
        carry the full routes' hops; the engine uses them only where every
        link has the same latency and no per-link report is asked for."""
        return

    def solver_route_entries(self, src, dst, ecmp: str) -> int | None:
        """Route entries of :meth:`solver_routes` (None: it has none)."""
        return None

    #: whether ``split`` routes hold every shortest path, split evenly at
    #: each vertex over its shortest next hops (then a failure's re-routes
    #: of the same length lie inside the old routes)
    split_every_shortest = False

    def distance_grid(self):
        """``(coords int32[N, D], dims int64[D], wrap)`` when the vertices
        form a torus (``wrap``) or mesh whose hop distance is the sum over
        dimensions of the (wrapped) coordinate differences; None otherwise.
        A faulted topology bounds its re-routes' searches with it."""
        return

    def orbits(self, src, dst, share, ecmp: str, link_capacity: np.ndarray) -> Orbits | None:
        """A symmetry of the network that maps the flows ``src[i] ->
        dst[i]`` (endpoint ids) carrying ``share[i]`` bytes onto themselves,
        with ``ecmp`` routes and these link capacities (:class:`Orbits`);
        ``None`` (the default) when the family knows none or the flows have
        none. The engine uses it only where every link has the same latency
        and no per-link report or background is asked for."""
        return None

    def orbit_problem(self, orbits: Orbits, src, dst, ecmp: str,
                      link_capacity: np.ndarray) -> OrbitProblem:  # pragma: no cover
        """The step's max-min problem on one flow per orbit of ``orbits``
        (which :meth:`orbits` made for the same arguments)."""
        raise NotImplementedError

    def solver_problem(self, routes: Routes, link_capacity: np.ndarray,
                       ecmp: str) -> tuple[Routes, np.ndarray]:
        """The max-min problem the solver gets for ``routes`` (made by
        :meth:`route` with ``ecmp``): ``(routes, capacity)`` over the same
        ``L`` resource ids. By default the routes and link capacities
        themselves. A family whose routes cross groups of links that carry
        the same flows with the same fractions may hand the solver one
        resource per group (same rates, fewer entries); the routes kept for
        latencies, congestion and flow dumps are the real ones."""
        return routes, link_capacity

    #: optional per-link arrays (float64[L]); None means "all defaults"
    link_latency_scale: np.ndarray | None = None
    link_bandwidth_abs: np.ndarray | None = None
    link_latency_abs: np.ndarray | None = None

    def link_capacity(self, network) -> np.ndarray:
        """Capacity of each link in bytes/s, float64[L]:
        ``link_capacity_scale · network.bandwidth`` unless the link has an
        absolute bandwidth."""
        cap = self.link_capacity_scale * network.bandwidth
        if self.link_bandwidth_abs is not None:
            cap = np.where(np.isnan(self.link_bandwidth_abs), cap, self.link_bandwidth_abs)
        return cap

    def link_latency(self, network) -> np.ndarray:
        """Latency of each link in seconds, float64[L]:
        ``link_latency_scale · network.link_latency`` (scale 1 by default)
        unless the link has an absolute latency."""
        lat = np.full(self.num_links, float(network.link_latency))
        if self.link_latency_scale is not None:
            lat = lat * self.link_latency_scale
        if self.link_latency_abs is not None:
            lat = np.where(np.isnan(self.link_latency_abs), lat, self.link_latency_abs)
        return lat

    def path_latency(self, routes: Routes, link_latency: np.ndarray) -> np.ndarray:
        """Sum of link latencies along each flow's path, float64[F] (the
        largest over its ECMP paths).

        When every link has the same latency this is ``hops · latency``.
        Otherwise the default is ``Σ frac · latency`` over the flow's entries:
        exact for a single path (``hash``, ``dor``) and for a split whose
        paths cross links of equal latency at each hop, as on every family
        whose equal-cost paths are symmetric. A family whose split paths may
        differ in latency overrides this with the maximum over its paths."""
        lat = np.asarray(link_latency, dtype=np.float64)
        if len(lat) == 0 or np.all(lat == lat[0]):
            value = float(lat[0]) if len(lat) else 0.0
            return routes.hops.astype(np.float64) * value
        counts = np.diff(routes.flow_ptr)
        flow = np.repeat(np.arange(routes.num_flows), counts)
        return np.bincount(flow, weights=routes.frac * lat[routes.link],
                           minlength=routes.num_flows)

    def ingress_capacity_scale(self) -> np.ndarray:
        """Total capacity (× link bandwidth) of the links entering each vertex,
        float64[num_nodes], ignoring absolute link bandwidths."""
        out = np.zeros(self.num_nodes, dtype=np.float64)
        np.add.at(out, self.link_dst, self.link_capacity_scale)
        return out

    def ingress_capacity(self, network) -> np.ndarray:
        """Total capacity (bytes/s) of the links entering each vertex,
        float64[num_nodes]; the incast model's per-receiver β is its inverse."""
        out = np.zeros(self.num_nodes, dtype=np.float64)
        np.add.at(out, self.link_dst, self.link_capacity(network))
        return out

    def incast_classes(self, network) -> tuple[np.ndarray, np.ndarray]:
        """GenModel incast terms of each incast class: ``(w_t, eps)``,
        float64[K] each, ``K >= 1`` (§3.2, eq. 7-10).

        Incast is charged at receivers, one ingress resource per class of
        the flows into a receiver (see :mod:`flowemu.kernels.maxmin`); a
        flow's class is the tier where it converges
        (:meth:`flow_incast_class`). A class's incast is off when its
        ``eps`` is 0 or its ``w_t`` inf. This default is one class with the
        network's ``incast_threshold`` and ``incast_slope`` (off unless the
        network turns incast on): every flow into a receiver counts towards
        one fan-in. Families with tiers (the tree) override both methods."""
        if network.incast_on:
            return (np.array([network.incast_threshold], dtype=np.float64),
                    np.array([network.incast_slope], dtype=np.float64))
        return np.array([np.inf]), np.zeros(1)

    def link_incast(self, network):
        """GenModel incast terms ``(w_t, eps)`` float64[L] of links that
        charge it themselves (where flows converge: a switch's egress port,
        ``w`` the flows crossing the link), or None (the default: incast is
        charged at receivers only). The tree's ``incast=switch`` sets them."""
        return

    def flow_incast_class(self, src, dst) -> np.ndarray:
        """Incast class of each flow ``src[i] -> dst[i]`` (endpoint ids),
        int64[F] in ``0..K-1`` of :meth:`incast_classes`: the tier where the
        flow converges. This default puts every flow in class 0."""
        src, dst = self._check_flows(src, dst)
        return np.zeros(len(src), dtype=np.int64)

    #: whether the family has aggregation trees (:meth:`aggregation_parent`)
    has_aggregation_trees = False

    def aggregation_parent(self, vertex, tree: int = 0) -> tuple:
        """In-network aggregation (:mod:`flowemu.topology.aggregation`):
        ``(parent, up, down)``, int64[K] each, of the vertices ``vertex`` in
        aggregation tree ``tree``: the parent (-1 at the top) and the link
        up to it and back down. The tree index chooses among parallel links
        and spines or cores. Families without such trees refuse."""
        raise ConfigError(f"in-network aggregation: {self.spec} has no aggregation trees "
                          "(they are the tree, leafspine and fattree families')")

    def aggregation_tiers(self) -> np.ndarray:
        """int64[N, T]: each endpoint's switch at every tier ``1..T`` of
        aggregation tree 0, -1 where it has none
        (:func:`flowemu.topology.aggregation.tier_ancestors`)."""
        return tier_ancestors(self)

    def describe(self) -> dict:  # pragma: no cover - interface
        """Plain-data description (family and shape parameters)."""
        raise NotImplementedError
