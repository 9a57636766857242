"""Background traffic: another job's steady flows sharing the fabric.

A :class:`Background` is a fixed set of flows between endpoints, each with a
demand in bytes/s, that never finish: they share links with every step of
the collective under max-min fairness for the whole run.
A demand is a rate cap, modelled as a private virtual resource per flow
(capacity = demand, crossed with fraction 1) appended to the solver's
problem, so max-min fairness gives each background flow
``min(demand, its fair share)``.

Specs (:func:`parse_background`):

* ``perm:LOAD[:SEED]`` — every endpoint sends to one other: the next one in
  a seeded random order (a random cyclic permutation, so no endpoint sends
  to itself);
* ``alltoall:LOAD`` — every ordered pair of distinct endpoints;
* ``hotspot:LOAD[:TARGET]`` — every endpoint but TARGET (default 0) sends
  to TARGET;
* a path to a traffic file (CSV or parquet, columns ``step,src,dst,bytes``
  as for ``--traffic``): src/dst are endpoint ids, ``bytes`` is read as the
  flow's demand in bytes/s, and the file must hold one step (any single step
  number: the background is one steady set of flows). Rows with demand 0
  are dropped.

LOAD in (0, 1] is the fraction of each sender's injection bandwidth (the
sum of its outgoing links' capacities) that it offers, split evenly over
its flows.

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
from pathlib import Path

import numpy as np

from ..core.errors import ConfigError, show
from ..kernels.maxmin import Solution
from ..topology.base import Routes
from ..algorithms.usertraffic import PARQUET_SUFFIXES

#: generator names
GENERATORS = ("perm", "alltoall", "hotspot")
#: most background flows a run takes (alltoall grows as N²)
MAX_FLOWS = 1 << 22

_ALLOWED = ("expected perm:LOAD[:SEED], alltoall:LOAD, hotspot:LOAD[:TARGET] (LOAD in (0, 1]) "
            "or a path to a traffic file (.csv or .parquet)")


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


def parse_background(spec, topology, network=None) -> Background:
    """Background flows from a generator spec or a traffic file.

    Parameters
    ----------
    spec : str or Path or Background
        See the module doc (a Background is returned as it is once its
        endpoints are checked against ``topology``).
    topology : Topology or str
    network : Network, optional
        Gives the link capacities generator loads are fractions of (default
        ``Network()``); use the run's.

    Raises
    ------
    ConfigError
        Naming ``background``, the value and what is allowed.
    """
    from ..core import checks
    from ..core.network import Network

    topology = checks.topology(topology)
    network = Network() if network is None else network
    n_end = topology.num_endpoints
    if isinstance(spec, Background):
        _check_endpoints(spec, n_end)
        return spec
    if isinstance(spec, Path):
        return _from_file(spec, n_end)
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"background: {show(spec)} is not allowed; {_ALLOWED}")
    text = spec.strip()
    name, _, rest = text.partition(":")
    if name.lower() not in GENERATORS:
        if _looks_like_file(text):
            return _from_file(Path(text), n_end)
        raise ConfigError(f"background: unknown generator {name!r} in {text!r}; {_ALLOWED}")
    name = name.lower()
    args = rest.split(":") if rest else []
    most = 1 if name == "alltoall" else 2
    if not 1 <= len(args) <= most:
        raise ConfigError(f"background: {text!r} is not allowed; {_ALLOWED}")
    load = _load(args[0], text)
    if n_end < 2:
        raise ConfigError(f"background: {text!r} needs at least 2 endpoints; "
                          f"{topology.spec} has {n_end}")
    injection = np.bincount(topology.link_src, weights=topology.link_capacity(network),
                            minlength=topology.num_nodes)[:n_end]
    if name == "perm":
        seed = _integer(args[1], "SEED", text, 0, 2**63 - 1) if len(args) > 1 else 0
        order = np.random.default_rng(seed).permutation(n_end)
        src = order
        dst = np.roll(order, -1)
        per_flow = 1
    elif name == "alltoall":
        if n_end * (n_end - 1) > MAX_FLOWS:
            raise ConfigError(f"background: {text!r} makes {n_end * (n_end - 1)} flows on "
                              f"{n_end} endpoints; at most {MAX_FLOWS} are allowed (use perm "
                              "or a file)")
        src = np.repeat(np.arange(n_end), n_end - 1)
        off = np.tile(np.arange(1, n_end), n_end)
        dst = (src + off) % n_end
        per_flow = n_end - 1
    else:
        target = _integer(args[1], "TARGET", text, 0, n_end - 1) if len(args) > 1 else 0
        src = np.delete(np.arange(n_end), target)
        dst = np.full(len(src), target)
        per_flow = 1
    demand = load * injection[src] / per_flow
    keep = demand > 0   # senders without working out-links offer nothing
    return Background(src[keep], dst[keep], demand[keep], n_end, text)


def _load(text: str, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise ConfigError(f"background: LOAD {text!r} in {spec!r} is not allowed; expected a "
                          "fraction of each sender's injection bandwidth in (0, 1]")
    return value


def _integer(text: str, what: str, spec: str, lo: int, hi: int) -> int:
    t = text.strip()
    if not (t.isascii() and t.isdigit()) or not lo <= int(t) <= hi:
        raise ConfigError(f"background: {what} {text!r} in {spec!r} is not allowed; expected "
                          f"an integer in {lo}..{hi}")
    return int(t)


def _looks_like_file(text: str) -> bool:
    path = Path(text)
    return (path.suffix.lower() in (".csv", ".txt", *PARQUET_SUFFIXES) or "/" in text
            or path.exists())


def _from_file(path: Path, n_end: int) -> Background:
    from ..algorithms.usertraffic import frame_steps, read_table

    where = f"background {str(path)!r}"
    df = read_table(path, "background", missing=f"; {_ALLOWED}")
    steps, traffic = frame_steps(df, where)
    if len(steps) != 1:
        shown = ", ".join(str(int(s)) for s in steps[:4]) + (", ..." if len(steps) > 4 else "")
        raise ConfigError(f"{where}: steps {shown}: expected a single step (the background is "
                          "one steady set of flows; bytes are read as bytes/s)")
    t = traffic[0]
    hi = int(max(t.src.max(), t.dst.max()))
    if hi >= n_end:
        raise ConfigError(f"{where}: endpoint {hi} is out of range; expected endpoints "
                          f"0..{n_end - 1}")
    if t.num_flows > MAX_FLOWS:
        raise ConfigError(f"{where}: {t.num_flows} flows; at most {MAX_FLOWS} are allowed")
    keep = t.share > 0
    return Background(t.src[keep], t.dst[keep], t.share[keep], n_end, str(path))


def _check_endpoints(bg: Background, n_end: int) -> None:
    if bg.num_endpoints != n_end or (bg.num_flows and int(max(bg.src.max(), bg.dst.max()))
                                     >= n_end):
        raise ConfigError(f"background: {bg.spec!r} was made for {bg.num_endpoints} endpoints; "
                          f"this topology has {n_end}")


# --------------------------------------------------------------------------- engine side


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

    def __init__(self, ctx, background: Background | None, slow):
        topo = ctx.topology
        self.background = background
        nb = background.num_flows if background is not None else 0
        self.num_background = nb
        if nb:
            from ..core import budget

            worst = topo.max_route_entries(ctx.ecmp)
            if worst is not None:
                budget.check(budget.solve_bytes(nb, nb * worst), budget.limit(None),
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
        from ..core import budget

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


def prepare_load(ctx, background=None, slow=None) -> RunLoad | None:
    """The run's :class:`RunLoad`, or None when it has neither background
    flows nor network-slowed ranks (the engine's default path). Also checks
    ``slow`` against the run's ranks."""
    if slow is not None and slow.p != len(ctx.mapping):
        raise ConfigError(f"slow: {slow.spec!r} was parsed for {slow.p} ranks; the run has "
                          f"{len(ctx.mapping)}")
    has_bg = background is not None and background.num_flows > 0
    if not has_bg and (slow is None or len(slow.network_ranks) == 0):
        return None
    return RunLoad(ctx, background if has_bg else None, slow)


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
    for s in profile.steps:
        key = (id(s.latency), id(s.spb), s.reduce_spb, s.background_bytes)
        if key in groups:
            groups[key][1] += 1
        else:
            groups[key] = [s, 1]
    moved = np.zeros(len(n))
    total = np.zeros(len(n))
    for s, count in groups.values():
        t = s.time(n)
        fluid = (float(s.spb.max()) if len(s.spb) else 0.0) * n
        moved += count * (s.background_bytes * n + rate * (t - fluid))
        total += count * t
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, moved / np.where(total > 0, total, 1.0), rate)


def _concat(a: Routes, b: Routes) -> Routes:
    if b.num_flows == 0:
        return a
    return Routes(np.concatenate([a.flow_ptr, b.flow_ptr[1:] + a.flow_ptr[-1]]),
                  np.concatenate([a.link, b.link]).astype(np.int32),
                  np.concatenate([a.frac, b.frac]),
                  np.concatenate([a.hops, b.hops]).astype(np.int32))


def _append(routes: Routes, extra: list[np.ndarray]) -> Routes:
    """``routes`` with each flow's extra resources (``extra[j][f]`` >= 0, -1
    for none) appended to its entries with fraction 1."""
    if not extra:
        return routes
    nf = routes.num_flows
    ids = np.stack(extra, axis=1)                       # [F, J]
    has = ids >= 0
    add = has.sum(axis=1)
    old = np.diff(routes.flow_ptr)
    ptr = np.zeros(nf + 1, dtype=np.int64)
    np.cumsum(old + add, out=ptr[1:])
    link = np.empty(int(ptr[-1]), dtype=np.int32)
    frac = np.empty(int(ptr[-1]), dtype=np.float64)
    flow_of = np.repeat(np.arange(nf), old)
    pos = np.arange(routes.num_entries) - routes.flow_ptr[flow_of] + ptr[flow_of]
    link[pos] = routes.link
    frac[pos] = routes.frac
    rank = np.cumsum(has, axis=1) - 1                   # order among a flow's extras
    f_idx, j_idx = np.nonzero(has)
    at = ptr[f_idx] + old[f_idx] + rank[f_idx, j_idx]
    link[at] = ids[f_idx, j_idx]
    frac[at] = 1.0
    return Routes(ptr, link, frac, routes.hops)

