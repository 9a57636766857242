"""Failed and degraded links on any topology family.

:func:`apply_faults` wraps a topology in a :class:`FaultyTopology`: the same
endpoints, vertices and link ids, with the selected links failed (capacity
0, never routed over) or degraded (bandwidth scaled by ``F`` in (0, 1],
latency optionally by ``M >= 1``).

The selector grammar is in :mod:`flowemu.whatif.selectors`.

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

from dataclasses import dataclass

import numpy as np

from ..algorithms.registry import get_algorithm
from ..algorithms.usertraffic import traffic_ranks
from ..core.errors import ConfigError, show
from ..kernels.faultroute import flows_on_failed, reroute_in_dag, reroute_near, splice_rows
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
from ..topology import parse_topology
from ..topology.base import Routes, Topology
from ..topology.common import check_seed, readonly
from .selectors import DEGRADE, FAIL, Fabric, resolve_degrade, resolve_selector, split_selectors

__all__ = ["POLICIES", "FaultyTopology", "apply_faults", "check_connected",
           "check_fail_policy", "select_links"]

#: what ``check_fail_policy`` does with a topology-bound schedule a failure breaks
POLICIES = ("strict", "reroute")
#: modes that route each flow on one deterministic path
_SINGLE_PATH_MODES = ("dor", "dmodk")


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
        fab = Fabric(base)
        L = base.num_links
        failed = np.zeros(L, dtype=bool)
        parts = []
        for text in split_selectors(self.fail, FAIL):
            ids, canon = resolve_selector(fab, text, FAIL)
            failed[ids] = True
            if all(canon != c for c, _ in parts):   # a selector given twice is one
                parts.append((canon, ids))
        bw = np.ones(L)
        lat = np.ones(L)
        degraded = []
        for text in split_selectors(self.degrade, DEGRADE):
            ids, f, m, canon = resolve_degrade(fab, text)
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

    # the base's memory figures (the class attributes Topology declares would
    # hide them from __getattr__)
    @property
    def build_link_bytes(self) -> int:
        return self.base.build_link_bytes

    @property
    def held_link_bytes(self) -> int:
        return self.base.held_link_bytes

    # aggregation trees: the base's (the same vertices and link ids)
    @property
    def has_aggregation_trees(self) -> bool:
        return self.base.has_aggregation_trees

    def endpoint_groups(self):
        """The healthy topology's groups (failures do not move endpoints)."""
        return self.base.endpoint_groups()

    def aggregation_parent(self, vertex, tree: int = 0) -> tuple:
        return self.base.aggregation_parent(vertex, tree)

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

    def link_incast(self, network):
        return self.base.link_incast(network)

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
        rows = []   # (flows, ptr, link, frac, hops) of the re-routes found so far
        mode = self._mode(ecmp)
        if ecmp == "split" and mode == MODE_HOP and self.base.split_every_shortest:
            # most re-routes keep their length: found inside their own old routes
            found = reroute_in_dag(flows, routes.flow_ptr, routes.link, self.failed, src, dst,
                                   self._out_ptr, self._out_link, self.link_src,
                                   self.link_dst, self.num_nodes)
            flows = _keep_found(rows, flows, *found)
        grid = self.base.distance_grid()
        if len(flows) and grid is not None and mode in (MODE_HOP, MODE_HASH, MODE_FIRST):
            # detours: each searched for within the healthy grid's distance bound
            found = reroute_near(flows, src, dst, self._out_ptr, self._out_link, self._in_ptr,
                                 self._in_link, self.link_src, self.link_dst, *grid,
                                 self.num_nodes, mode,
                                 np.uint64(check_seed(seed) & 0xFFFFFFFFFFFFFFFF))
            flows = _keep_found(rows, flows, *found)
        if len(flows):   # the graph-wide search (or the error it raises)
            new = self._reroute(src[flows], dst[flows], ecmp, seed)
            rows.append((flows, new.flow_ptr, new.link, new.frac, new.hops))
        flows, ptr, link, frac, hops = _merge_rows(rows)
        return Routes(*splice_rows(routes.flow_ptr, routes.link, routes.frac, routes.hops, flows,
                                   ptr, link, frac, hops))

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
        exists = Fabric(self.base).exists
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


def _keep_found(rows: list, flows, ok, counts, hops, link, frac) -> np.ndarray:
    """Append the re-routes a kernel found (``ok``) to ``rows``; return the
    flows it left."""
    ptr = np.zeros(int(ok.sum()) + 1, dtype=np.int64)
    np.cumsum(counts[ok], out=ptr[1:])
    rows.append((flows[ok], ptr, link, frac, hops[ok]))
    return flows[~ok]


def _merge_rows(rows: list) -> tuple:
    """One CSR of re-routed rows, flows ascending, from several (each CSR
    ``(flows, ptr, link, frac, hops)``)."""
    flows = np.concatenate([r[0] for r in rows])
    counts = np.concatenate([np.diff(r[1]) for r in rows])
    base = np.cumsum([0] + [len(r[2]) for r in rows[:-1]])
    starts = np.concatenate([r[1][:-1] + b for r, b in zip(rows, base, strict=True)])
    order = np.argsort(flows, kind="stable")
    ptr = np.zeros(len(flows) + 1, dtype=np.int64)
    np.cumsum(counts[order], out=ptr[1:])
    at = np.repeat(starts[order] - ptr[:-1], counts[order]) + np.arange(ptr[-1])
    link = np.concatenate([r[2] for r in rows]).astype(np.int32)[at]
    frac = np.concatenate([r[3] for r in rows]).astype(np.float64)[at]
    hops = np.concatenate([r[4] for r in rows]).astype(np.int32)[order]
    return flows[order].astype(np.int64), ptr, link, frac, hops


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
    fail_sel = split_selectors(fail, FAIL)
    degrade_sel = split_selectors(degrade, DEGRADE)
    if not fail_sel and not degrade_sel:
        return topology
    if isinstance(topology, str):
        topology = parse_topology(topology)
    if isinstance(topology, FaultyTopology):
        fail_sel = split_selectors(topology.fail, FAIL) + fail_sel
        degrade_sel = split_selectors(topology.degrade, DEGRADE) + degrade_sel
        topology = topology.base
    return FaultyTopology(topology, ";".join(fail_sel), ";".join(degrade_sel))


def check_connected(topology: Topology, endpoints, ranks=None) -> None:
    """ConfigError unless the ``endpoints`` (int array; position ``r`` hosts
    rank ``r``, or rank ``ranks[r]`` when given) all reach each other over
    the surviving links of a :class:`FaultyTopology` (one search forward and
    one backward)."""
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
    named = (near, far) if ranks is None else (int(ranks[near]), int(ranks[far]))
    raise topology._cut_error(int(ends[near]), int(ends[far]), named)


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
    used = traffic_ranks(schedule)   # (a user's traffic need not use every rank)
    check_connected(topology, ends[used], used)
    if policy == "reroute":
        return
    if algorithm is None or isinstance(algorithm, str):
        try:
            algorithm = get_algorithm(algorithm or schedule.algorithm)
        except ConfigError:
            return
    if not getattr(algorithm, "topology_bound", False):
        return
    base = topology.base
    seen = set()
    for step in schedule.steps.patterns:
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
            "fail_policy='reroute' (--fail-policy reroute) to route around it")


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
        topology = parse_topology(topology)
    if isinstance(topology, FaultyTopology):
        topology = topology.base
    return resolve_selector(Fabric(topology), selector, option)[0]
