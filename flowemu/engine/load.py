"""The engine's side of a run with background flows or slow ranks.

:class:`Background` (steady flows between endpoints, each with a rate cap)
and :class:`Slow` (per-rank compute and network speed fractions) are plain
data; :mod:`flowemu.whatif.background` and :mod:`flowemu.whatif.stragglers`
build them from specs and files.

This module also holds the engine's side of a run with background flows or
slow ranks (:func:`prepare_load`, :class:`RunLoad`): the background routed
once with the run's ECMP mode, the virtual rate caps of background flows and
of slow ranks' injection and ejection, and the combined problem each step
is solved on (:meth:`RunLoad.problem`).

Linearity: background rates do not depend on n and collective bytes scale
with n, so every event time of a step scales with n and the profile's one
solve per pattern stays exact. A step's background bytes are the bytes its
flows moved during the fluid phase (from 0 until the collective's last flow
finished: ∝ n) plus its uncontested rate (no collective flow running) times
the rest of the step (latencies and reduction). The second term is the
approximation: during a step's latency terms part of the collective's flows
may already be moving, and the background would see them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import budget
from ..core.errors import ConfigError
from ..kernels.completion import append_entries
from ..kernels.maxmin import Solution
from ..topology.base import Routes, concat_routes


@dataclass(frozen=True, eq=False)
class Background:
    """Steady flows between endpoints.

    Attributes
    ----------
    src, dst : int32[B]
        Endpoint ids of each flow (never equal).
    demand : float64[B]
        Rate cap of each flow, bytes/s (> 0).
    num_endpoints : int
        Endpoints of the topology the flows were made for.
    spec : str
        The spec as given.
    """

    src: np.ndarray
    dst: np.ndarray
    demand: np.ndarray
    num_endpoints: int
    spec: str = ""

    def __post_init__(self):
        src = np.array(self.src, dtype=np.int32)
        dst = np.array(self.dst, dtype=np.int32)
        demand = np.array(self.demand, dtype=np.float64)
        if not (src.shape == dst.shape == demand.shape and src.ndim == 1):
            raise ConfigError("background: src, dst and demand must be 1-D arrays of one length")
        for arr in (src, dst, demand):
            arr.setflags(write=False)
        object.__setattr__(self, "src", src)
        object.__setattr__(self, "dst", dst)
        object.__setattr__(self, "demand", demand)

    @property
    def num_flows(self) -> int:
        return len(self.src)

    @property
    def total_demand(self) -> float:
        """Sum of the demands, bytes/s."""
        return float(self.demand.sum())

    def __repr__(self) -> str:
        return f"Background({self.spec!r}, {self.num_flows} flows)"



def check_background(bg: Background, n_end: int) -> None:
    """Refuse (ConfigError) a background made for another topology's endpoints."""
    if bg.num_endpoints != n_end or (bg.num_flows and int(max(bg.src.max(), bg.dst.max()))
                                     >= n_end):
        raise ConfigError(f"background: {bg.spec!r} was made for {bg.num_endpoints} endpoints; "
                          f"this topology has {n_end}")


@dataclass(frozen=True, eq=False)
class Slow:
    """Speed fractions of the ranks of one run.

    Attributes
    ----------
    p : int
        Number of ranks the spec was parsed for.
    compute : float64[p]
        Compute speed of each rank (1 = nominal); a rank's reduction time is
        divided by it.
    network : float64[p]
        Network speed of each rank: its injection and ejection are capped at
        this fraction of its endpoint's out-link / in-link capacity sum.
    spec : str
        The spec as given (for results and messages).
    """

    p: int
    compute: np.ndarray
    network: np.ndarray
    spec: str = ""

    def __post_init__(self):
        for name in ("compute", "network"):
            arr = np.array(getattr(self, name), dtype=np.float64)
            if arr.shape != (self.p,) or not np.all((arr > 0) & (arr <= 1)):
                raise ConfigError(f"slow: {name} speeds must be {self.p} numbers in (0, 1]")
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def compute_speed(self) -> np.ndarray | None:
        """The compute speeds, or None when every rank runs at full speed
        (the reduction then takes the default path)."""
        return None if np.all(self.compute == 1.0) else self.compute

    @property
    def network_ranks(self) -> np.ndarray:
        """Ranks whose network is slowed, int64[K]."""
        return np.flatnonzero(self.network < 1.0)

    def __repr__(self) -> str:
        return f"Slow({self.spec!r}, p={self.p})"

@dataclass(frozen=True, eq=False)
class LoadSolution(Solution):
    """A step's :class:`Solution` restricted to the collective's flows, plus
    what the background did meanwhile."""

    #: bytes the background flows moved from 0 until the collective's last flow finished
    background_moved: float = 0.0
    #: the background's total rate at ``t = 0``, bytes/s
    background_rate: float = 0.0


class RunLoad:
    """Background flows and slow-rank caps of one run (made by
    :func:`prepare_load`; read-only afterwards, so steps solve in threads)."""

    def __init__(self, ctx, background: Background | None, slow, limit=None):
        topo = ctx.topology
        self.background = background
        nb = background.num_flows if background is not None else 0
        self.num_background = nb
        if nb:
            worst = topo.max_route_entries(ctx.ecmp)
            if worst is not None:
                budget.check(budget.solve_bytes(nb, nb * worst), budget.limit(limit),
                             f"routing background {background.spec!r} on {topo.spec}")
            self.routes = topo.route(background.src, background.dst, ecmp=ctx.ecmp,
                                     seed=ctx.seed)
        else:
            self.routes = Routes(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0),
                                 np.zeros(0, np.int32))
        self.bg_src = background.src if nb else np.zeros(0, np.int32)
        self.bg_dst = background.dst if nb else np.zeros(0, np.int32)
        self.demand = background.demand if nb else np.zeros(0)
        # slow ranks' injection / ejection caps, per endpoint (inf: none)
        n_end = topo.num_endpoints
        self.inject_cap = np.full(n_end, np.inf)
        self.eject_cap = np.full(n_end, np.inf)
        if slow is not None:
            ranks = slow.network_ranks
            ends = ctx.mapping[ranks]
            cap = ctx.link_capacity
            out_sum = np.bincount(topo.link_src, weights=cap, minlength=topo.num_nodes)
            in_sum = np.bincount(topo.link_dst, weights=cap, minlength=topo.num_nodes)
            self.inject_cap[ends] = slow.network[ranks] * out_sum[ends]
            self.eject_cap[ends] = slow.network[ranks] * in_sum[ends]
        self.slow_ends = np.flatnonzero(np.isfinite(self.inject_cap))
        self.rate = 0.0

    def check_memory(self, need: int, threads: int, lim, what: str) -> None:
        """Refuse (ConfigError) a run whose ``need`` bytes (the engine's
        estimate without background) plus the background's flows and
        entries in each of ``threads`` solves at once exceed ``lim``."""
        extra = budget.solve_bytes(self.num_background,
                                   self.routes.num_entries + 3 * self.num_background)
        budget.check(need + max(1, threads) * extra, lim, f"{what} with background")

    def residual_capacity(self, ctx) -> np.ndarray:
        """The link capacity the collective can count on: each link's less
        the background's demand routed over it (at least 1e-6 of the
        link's, so adaptive routing still sees every path), float64[L]."""
        cap = ctx.link_capacity
        if not self.num_background:
            return cap
        flow_of = np.repeat(np.arange(self.num_background), np.diff(self.routes.flow_ptr))
        used = np.bincount(self.routes.link, weights=self.routes.frac * self.demand[flow_of],
                           minlength=len(cap))
        return np.maximum(cap - used, 1e-6 * cap)

    def problem(self, ctx, routes: Routes, src, dst, flow_bytes, reduce: bool = True):
        """The combined problem of a step: its flows first, then the
        background's (persistent), on the links (through the family's
        :meth:`~flowemu.topology.Topology.solver_problem`) plus one virtual
        resource per background flow (its demand) and two per slow endpoint
        (injection, ejection); ``reduce=False`` (adaptive fractions) keeps
        the links as they are. Returns ``(routes, capacity, src, dst,
        flow_bytes, persistent)``."""
        nf = routes.num_flows
        nb = self.num_background
        joined = _concat(routes, self.routes)
        src = np.concatenate([np.asarray(src, np.int64), self.bg_src.astype(np.int64)])
        dst = np.concatenate([np.asarray(dst, np.int64), self.bg_dst.astype(np.int64)])
        joined, capacity = ctx.topology.solver_problem(joined, ctx.link_capacity, ctx.ecmp) \
            if reduce else (joined, ctx.link_capacity)
        n_res = len(capacity)
        extra = []
        caps = [capacity]
        if nb:
            cap_id = np.full(nf + nb, -1, dtype=np.int64)
            cap_id[nf:] = n_res + np.arange(nb)
            extra.append(cap_id)
            caps.append(self.demand)
            n_res += nb
        if len(self.slow_ends):
            k = len(self.slow_ends)
            slot = np.full(len(self.inject_cap), -1, dtype=np.int64)
            slot[self.slow_ends] = np.arange(k)
            moving = np.diff(joined.flow_ptr) > 0   # a flow to its own endpoint uses no port
            inj = np.where(moving & (slot[src] >= 0), n_res + slot[src], -1)
            ej = np.where(moving & (slot[dst] >= 0), n_res + k + slot[dst], -1)
            extra += [inj, ej]
            caps += [self.inject_cap[self.slow_ends], self.eject_cap[self.slow_ends]]
        persistent = np.zeros(nf + nb, dtype=np.bool_)
        persistent[nf:] = True
        flow_bytes = np.concatenate([np.asarray(flow_bytes, np.float64), np.zeros(nb)])
        return (_append(joined, extra), np.concatenate(caps), src, dst, flow_bytes,
                persistent)

    def split(self, sol: Solution, num_flows: int) -> LoadSolution:
        """The collective's part of a combined solution."""
        nf = num_flows
        moved = sol.moved[nf:] if sol.moved is not None else np.zeros(0)
        return LoadSolution(sol.rate0[:nf], sol.finish[:nf], sol.status, None,
                            float(moved.sum()), float(np.sum(sol.rate0[nf:])))


def prepare_load(ctx, background=None, slow=None, limit=None) -> RunLoad | None:
    """The run's :class:`RunLoad`, or None when it has neither background
    flows nor network-slowed ranks (the engine's default path). Also checks
    ``slow`` against the run's ranks."""
    if slow is not None and slow.p != len(ctx.mapping):
        raise ConfigError(f"slow: {slow.spec!r} was parsed for {slow.p} ranks; the run has "
                          f"{len(ctx.mapping)}")
    has_bg = background is not None and background.num_flows > 0
    if not has_bg and (slow is None or len(slow.network_ranks) == 0):
        return None
    return RunLoad(ctx, background if has_bg else None, slow, limit)


def uncontested_rate(ctx, solve) -> float:
    """The background's total rate with no collective flow running, bytes/s
    (``solve``: the engine's step solver)."""
    if ctx.load is None or ctx.load.num_background == 0:
        return 0.0
    empty = Routes(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0),
                   np.zeros(0, np.int32))
    none = np.zeros(0, np.int64)
    sol = solve(ctx, empty, none, np.zeros(0), "background alone", none)
    return sol.background_rate


def background_throughput(profile, sizes) -> np.ndarray:
    """Background bytes/s averaged over the whole run, float64[sizes]: the
    bytes of every step (see the module doc) over the run's time."""
    n = np.atleast_1d(np.asarray(sizes, dtype=np.float64))
    rate = float(profile.info.get("background_rate", 0.0))
    groups: dict = {}
    for s, count in profile.counted():
        key = (id(s.latency), id(s.spb), s.reduce_spb, s.background_bytes)
        if key in groups:
            groups[key][1] += count
        else:
            groups[key] = [s, count]
    moved = np.zeros(len(n))
    total = np.zeros(len(n))
    for s, count in groups.values():
        t = s.time_at(n)
        fluid = (float(s.spb.max()) if len(s.spb) else 0.0) * n
        moved += count * (s.background_bytes * n + rate * (t - fluid))
        total += count * t
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, moved / np.where(total > 0, total, 1.0), rate)


def _concat(a: Routes, b: Routes) -> Routes:
    return a if b.num_flows == 0 else concat_routes([a, b])


def _append(routes: Routes, extra: list[np.ndarray]) -> Routes:
    """``routes`` with each flow's extra resources (``extra[j][f]`` >= 0, -1
    for none) appended to its entries with fraction 1."""
    if not extra:
        return routes
    ptr, link, frac = append_entries(routes.flow_ptr, routes.link, routes.frac,
                                     np.stack(extra, axis=1).astype(np.int64, copy=False))
    return Routes(ptr, link, frac, routes.hops)
