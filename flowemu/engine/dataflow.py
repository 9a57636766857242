"""Dataflow execution (``sync="dataflow"``): a rank starts its next step as
soon as its own part of the current one is done, not at a global barrier.

Under ``sync="barrier"`` (the default, :mod:`flowemu.engine.profiles`) a
step starts when every rank has finished the one before: step time =
slowest flow (α + hops·latency + fluid time) + slowest rank's reduction.

Under ``sync="dataflow"`` rank r's step k (a *stage*) starts when its step
k−1 has ended, and ends when

* every flow it sends or receives in step k has been delivered: its fluid
  transfer (max-min fair against every flow in the network at the time)
  has ended and its latency (α + hops·latency) has passed, and
* then its own reduction work of step k is done: Σ ((f+1)·δ + (f−1)·γ)·b
  over the blocks it combines (GenModel Table 2), divided by its compute
  speed (slow ranks).

A flow enters the max-min solve when its sender's stage starts (its bytes
are ready then) and leaves it when its transfer ends. So a slow rank, a
congested link or a failed cable delays only the ranks that depend on it,
and the delay travels along the schedule's dependencies: a ring with one
slow rank pays the delay once per lap, not once per step. These are the
dependencies the block-level verifier (:mod:`flowemu.algorithms.verify`)
follows: a block a rank sends in step k is what it held at the end of its
step k−1.

When every flow of a step ends its transfer at once and has the same
latency, and every rank's reduction takes as long (no what-if), every rank
starts each step at the same time and both modes give the same time.

Latencies do not scale with the size, so unlike a barrier profile (solved
once, evaluated for every size) a dataflow run is solved once per size,
all steps in one event-driven solve (:func:`flowemu.kernels.maxmin.solve_dataflow`).

Several jobs (:mod:`flowemu.engine.jobs`) share that solve: each its own
schedule, ranks, size and start time, and each at a barrier (one stage per
step: the step ends when all its flows are delivered, plus the slowest
rank's reduction) or in dataflow (one stage per rank and step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..algorithms.base import Schedule
from ..core import budget, progress
from ..core.errors import ConfigError, SolverError, show
from ..core.network import Network
from ..kernels.maxmin import solve_dataflow
from ..topology.base import Routes, Topology, concat_routes
from .context import Context, make_context
from .profiles import check_profile_args
from .steps import finishing, flow_latency, incast_inputs, incast_links, route_step

#: the synchronisations a run may use (``sync=``)
SYNCS = ("barrier", "dataflow")
#: one line on each (``flowemu list``)
SYNC_DOCS = {
    "barrier": "every step starts when every rank has ended the one before (default): step "
               "time = slowest flow + slowest rank's reduction",
    "dataflow": "a rank starts its next step when its own flows of this step are delivered "
                "and its reduction is done; flows enter and leave the max-min solve as they "
                "start and finish (one solve per size)",
}
#: bytes a dataflow solve holds per flow and per stage beyond the solve's
#: workspace (:func:`flowemu.core.budget.solve_bytes`): flow latency, stages,
#: start/finish, the timer heap; stage arrays, pending counts, ends
FLOW_EXTRA_BYTES = 96
STAGE_BYTES = 64


def check_sync(sync) -> str:
    """``"barrier"`` or ``"dataflow"``, else a ConfigError naming both."""
    if not isinstance(sync, str) or sync.strip().lower() not in SYNCS:
        raise ConfigError(f"sync: {show(sync)} is not allowed; expected one of "
                          f"{', '.join(SYNCS)}")
    return sync.strip().lower()


@dataclass(frozen=True)
class Part:
    """One job of a :class:`DataflowRun`: its schedule, the endpoint of each
    rank, its synchronisation, and its stages ``first .. first + count``
    (at a barrier one per step, in dataflow ``k·p + r`` for rank r's step k)."""

    schedule: Schedule
    mapping: np.ndarray
    sync: str
    first: int
    count: int


@dataclass(frozen=True)
class DataflowRun:
    """The flows of one or more jobs (:class:`Part`) laid out as stages,
    routed once and solved per size (:meth:`solve`, :meth:`times`)."""

    ctx: Context
    parts: tuple
    routes: Routes            # every job's flows, in step order, then the background's
    capacity: np.ndarray
    src: np.ndarray           # endpoints of every flow
    dst: np.ndarray
    share: np.ndarray         # bytes per byte of its job's size, per collective flow
    flow_part: np.ndarray     # the job of each collective flow
    latency: np.ndarray       # seconds, per flow (0 for the background's)
    src_stage: np.ndarray
    dst_stage: np.ndarray
    stage_ptr: np.ndarray
    stage_flows: np.ndarray
    stage_spb: np.ndarray     # seconds of reduction per byte of its job's size, per stage
    stage_next: np.ndarray
    stage_part: np.ndarray
    persistent: np.ndarray | None
    num_flows: int            # the collective flows (the background's follow)

    @property
    def num_stages(self) -> int:
        return len(self.stage_spb)

    def solve(self, sizes, starts=None):
        """The solution with job j moving ``sizes[j]`` bytes from ``starts[j]``
        seconds on (default: every job at 0)."""
        sizes = np.asarray(sizes, dtype=np.float64).reshape(-1)
        starts = np.zeros(len(self.parts)) if starts is None else \
            np.asarray(starts, dtype=np.float64).reshape(-1)
        flow_bytes = np.zeros(self.routes.num_flows)
        flow_bytes[:self.num_flows] = self.share * sizes[self.flow_part]
        release = np.full(self.num_stages, -1.0)
        for j, part in enumerate(self.parts):
            p = 1 if part.sync == "barrier" else part.schedule.p
            release[part.first:part.first + min(p, part.count)] = starts[j]
        w_t, eps, flow_class = incast_inputs(self.ctx, self.src, self.dst)
        with progress.counting(np.zeros(1, np.int64),
                               finishing(self.routes, self.persistent)) as counter:
            sol = solve_dataflow(
                self.routes, self.capacity, flow_bytes, self.latency, self.src_stage,
                self.dst_stage, self.stage_ptr, self.stage_flows,
                self.stage_spb * sizes[self.stage_part], self.stage_next, release,
                flow_dst=self.dst, ingress_capacity=self.ctx.ingress_capacity,
                incast_threshold=w_t, incast_slope=eps, flow_class=flow_class,
                persistent=self.persistent,
                link_incast=incast_links(self.ctx, len(self.capacity)), counter=counter)
        if sol.status != 0:
            what = ", ".join(p.schedule.algorithm for p in self.parts)
            raise SolverError(f"dataflow solver failed (status {sol.status}) on "
                              f"{self.ctx.topology.spec}, {what}, sizes "
                              f"{', '.join(f'{n:g}' for n in sizes)} B, {self.num_flows} flows")
        return sol

    def ends(self, sol) -> np.ndarray:
        """Time each job's last stage ended in ``sol`` (0 for a job without
        stages), float64[jobs]."""
        return np.array([float(sol.end[p.first:p.first + p.count].max()) if p.count else 0.0
                         for p in self.parts])

    def times(self, sizes) -> np.ndarray:
        """Time from the start until every rank has ended its last step, per
        size (float64[sizes]; one job)."""
        return self.times_and_background(sizes)[0]

    def times_and_background(self, sizes) -> tuple[np.ndarray, np.ndarray]:
        """``(times, background bytes/s over the run)`` per size (one job;
        NaN without background flows)."""
        got = [self._time(float(n)) for n in np.atleast_1d(sizes)]
        return np.array([t for t, _ in got]), np.array([b for _, b in got])

    def _time(self, n: float) -> tuple[float, float]:
        if self.num_stages == 0:
            return 0.0, float("nan")
        sol = self.solve([n])
        t = float(sol.end.max())
        if self.persistent is None:
            return t, float("nan")
        moved = float(sol.moved[self.num_flows:].sum())
        return t, (moved / t if t > 0 else float("nan"))


def dataflow_run(schedule: Schedule, topology: Topology, network: Network | None = None, *,
                 ecmp: str = "split", seed: int = 0, mapping=None, max_memory=None,
                 background=None, slow=None, sync: str = "dataflow") -> DataflowRun:
    """Route every step of ``schedule`` (each distinct pattern once) and lay
    out its stages (rank r's step k is stage ``k·p + r``; with
    ``sync="barrier"``, step k is stage k). ``background`` and ``slow`` are
    the engine's objects, as for :func:`flowemu.engine.profiles.profile`."""
    schedule, topology, network = check_profile_args(schedule, topology, network)
    lim = budget.limit(max_memory)
    ctx = make_context(topology, network, ecmp, seed, mapping, schedule.p, background, slow,
                       lim)
    return layout(ctx, [(schedule, ctx, sync)], lim)


def layout(ctx: Context, jobs, lim: budget.Limit) -> DataflowRun:
    """The :class:`DataflowRun` of ``jobs``: ``(schedule, its context (the
    mapping of its ranks), sync)`` each; ``ctx`` carries the background and
    slow ranks, which every job shares."""
    routed = []
    flows = entries = stages = 0
    for schedule, jctx, sync in jobs:
        steps = schedule.steps
        pats = {}
        reduce = ctx.load is None and not ctx.adaptive and ctx.link_incast is None
        for step in steps.patterns:
            tr = step.traffic
            if tr.aggregation is not None:
                raise ConfigError(f"{schedule.algorithm}: in-network aggregation streams are "
                                  "timed at a barrier, one job at a time (sync='barrier'); "
                                  "dataflow and several jobs do not lay them out yet")
            if id(tr) not in pats:
                pats[id(tr)] = _routed(jctx, tr, reduce) if tr.num_flows else None
                jctx.key_of[("dataflow", id(tr), reduce)] = (tr, pats[id(tr)])
        for step, count in zip(steps.patterns, steps.counts(), strict=True):
            got = pats[id(step.traffic)]
            if got is not None:
                flows += int(count) * got[0].num_flows
                entries += int(count) * got[0].num_entries
        stages += len(steps) * (1 if sync == "barrier" else schedule.p)
        routed.append(pats)
    names = ", ".join(schedule.algorithm for schedule, _, _ in jobs)
    budget.check(2 * budget.solve_bytes(flows, entries) + flows * FLOW_EXTRA_BYTES
                 + stages * STAGE_BYTES, lim, f"{ctx.topology.spec} {names} (dataflow solve)")

    cols: dict = {k: [] for k in ("routes", "src", "dst", "share", "part", "lat", "s_stage",
                                  "d_stage")}
    stage_spb, stage_next, stage_part, parts = [], [], [], []
    net = ctx.network
    first = 0
    for j, ((schedule, jctx, sync), pats) in enumerate(zip(jobs, routed, strict=True)):
        p, steps = schedule.p, schedule.steps
        width = 1 if sync == "barrier" else p
        count = len(steps) * width
        spb = np.zeros(count)
        for k, i in enumerate(steps.order.tolist()):
            step = steps.patterns[i]
            red = step.reduction
            if len(red.node) and (net.gamma or net.delta):
                per = ((red.fanin + 1) * net.delta + (red.fanin - 1) * net.gamma) * red.share
                tot = np.bincount(red.node, weights=per, minlength=p)
                if ctx.speed is not None:
                    tot = tot / ctx.speed
                spb[k * width:(k + 1) * width] = tot.max() if width == 1 else tot
            got = pats.get(id(step.traffic))
            if got is None:
                continue
            routes, s_end, d_end, latency, capacity = got
            tr = step.traffic
            cols["routes"].append(routes)
            cols["src"].append(s_end)
            cols["dst"].append(d_end)
            cols["share"].append(tr.share)
            cols["part"].append(np.full(tr.num_flows, j, np.int64))
            cols["lat"].append(latency)
            if width == 1:
                cols["s_stage"].append(np.full(tr.num_flows, first + k, np.int64))
                cols["d_stage"].append(np.full(tr.num_flows, first + k, np.int64))
            else:
                cols["s_stage"].append(first + k * p + tr.src.astype(np.int64))
                cols["d_stage"].append(first + k * p + tr.dst.astype(np.int64))
        nxt = np.arange(first + width, first + count + width, dtype=np.int64)
        nxt[nxt >= first + count] = -1
        stage_spb.append(spb)
        stage_next.append(nxt)
        stage_part.append(np.full(count, j, np.int64))
        parts.append(Part(schedule, jctx.mapping, sync, first, count))
        first += count


    routes = concat_routes(cols["routes"])
    nf = routes.num_flows
    src, dst = _joined(cols["src"], np.int64), _joined(cols["dst"], np.int64)
    lat = _joined(cols["lat"], np.float64)
    s_stage, d_stage = _joined(cols["s_stage"], np.int64), _joined(cols["d_stage"], np.int64)
    order = np.argsort(s_stage, kind="stable")
    stage_ptr = np.zeros(first + 1, dtype=np.int64)
    np.cumsum(np.bincount(s_stage, minlength=first), out=stage_ptr[1:])
    persistent = None
    capacity = ctx.link_capacity
    if ctx.load is not None:
        routes, capacity, src, dst, _, persistent = ctx.load.problem(
            ctx, routes, src, dst, np.zeros(nf),
            reduce=not ctx.adaptive and ctx.link_incast is None)
        nb = routes.num_flows - nf
        lat = np.concatenate([lat, np.zeros(nb)])
        s_stage = np.concatenate([s_stage, np.full(nb, -1, np.int64)])
        d_stage = np.concatenate([d_stage, np.full(nb, -1, np.int64)])
    else:   # each pattern's routes are already the family's reduced problem
        capacity = next((got[4] for pats in routed for got in pats.values()
                         if got is not None), capacity)

    return DataflowRun(ctx, tuple(parts), routes, capacity, src, dst,
                       _joined(cols["share"], np.float64), _joined(cols["part"], np.int64), lat, s_stage, d_stage, stage_ptr,
                       order.astype(np.int32), _joined(stage_spb, np.float64),
                       _joined(stage_next, np.int64), _joined(stage_part, np.int64), persistent,
                       nf)


def _joined(arrays, dtype) -> np.ndarray:
    """The arrays one after the other as ``dtype`` (empty when there are none)."""
    return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype)


def _routed(ctx: Context, traffic, reduce: bool) -> tuple:
    """``(routes, src endpoints, dst endpoints, latency, capacity)`` of one
    pattern; with ``reduce`` the routes are the family's reduced problem
    (:meth:`~flowemu.topology.Topology.solver_problem`, whose capacities
    depend on the links only) and ``capacity`` its capacities, else the
    routes themselves and the link capacities."""
    known = ctx.key_of.get(("dataflow", id(traffic), reduce))
    if known is not None and known[0] is traffic:   # a job routed alone, then with the others
        return known[1]
    routes, src, dst = route_step(ctx, traffic)
    latency = flow_latency(ctx, routes)
    capacity = ctx.link_capacity
    if reduce:
        routes, capacity = ctx.topology.solver_problem(routes, ctx.link_capacity, ctx.ecmp)
    return routes, np.asarray(src, np.int64), np.asarray(dst, np.int64), latency, capacity
