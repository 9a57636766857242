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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..algorithms.base import Schedule
from ..core import budget
from ..core.errors import ConfigError, SolverError, show
from ..core.network import Network
from ..kernels.maxmin import solve_dataflow
from ..topology.base import Routes, Topology, concat_routes
from .context import Context, make_context
from .profiles import check_profile_args, flow_latency, incast_inputs, route_step

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
class DataflowRun:
    """A schedule's whole flow problem under dataflow execution, routed once
    and solved per size (:meth:`times`)."""

    ctx: Context
    schedule: Schedule
    routes: Routes            # every step's flows, in step order, then the background's
    capacity: np.ndarray
    src: np.ndarray           # endpoints of every flow
    dst: np.ndarray
    share: np.ndarray         # bytes per byte of n of the collective's flows
    latency: np.ndarray       # seconds, per flow (0 for the background's)
    src_stage: np.ndarray
    dst_stage: np.ndarray
    stage_ptr: np.ndarray
    stage_flows: np.ndarray
    reduce_spb: np.ndarray    # seconds of reduction per byte of n, per stage
    persistent: np.ndarray | None
    num_flows: int            # the collective's flows (the background's follow)

    @property
    def num_stages(self) -> int:
        return len(self.reduce_spb)

    def solve(self, n: float):
        """The dataflow solution at vector size ``n`` bytes."""
        p = self.schedule.p
        stages = self.num_stages
        nxt = np.arange(p, stages + p, dtype=np.int64)
        nxt[nxt >= stages] = -1
        flow_bytes = np.zeros(self.routes.num_flows)
        flow_bytes[:self.num_flows] = self.share * n
        w_t, eps, flow_class = incast_inputs(self.ctx, self.src, self.dst)
        sol = solve_dataflow(
            self.routes, self.capacity, flow_bytes, self.latency, self.src_stage,
            self.dst_stage, self.stage_ptr, self.stage_flows, self.reduce_spb * n, nxt,
            np.arange(stages) < p, flow_dst=self.dst, ingress_capacity=self.ctx.ingress_capacity,
            incast_threshold=w_t, incast_slope=eps, flow_class=flow_class,
            persistent=self.persistent)
        if sol.status != 0:
            raise SolverError(f"dataflow solver failed (status {sol.status}) on "
                              f"{self.ctx.topology.spec}, {self.schedule.algorithm}, "
                              f"size {n:g} B, {self.num_flows} flows")
        return sol

    def times(self, sizes) -> np.ndarray:
        """Time from the start until every rank has ended its last step, per
        size (float64[sizes])."""
        return np.array([self._time(float(n))[0] for n in np.atleast_1d(sizes)])

    def times_and_background(self, sizes) -> tuple[np.ndarray, np.ndarray]:
        """``(times, background bytes/s over the run)`` per size (NaN
        without background flows)."""
        got = [self._time(float(n)) for n in np.atleast_1d(sizes)]
        return np.array([t for t, _ in got]), np.array([b for _, b in got])

    def _time(self, n: float) -> tuple[float, float]:
        if self.num_stages == 0:
            return 0.0, float("nan")
        sol = self.solve(n)
        t = float(sol.end.max())
        if self.persistent is None:
            return t, float("nan")
        moved = float(sol.moved[self.num_flows:].sum())
        return t, (moved / t if t > 0 else float("nan"))


def dataflow_run(schedule: Schedule, topology: Topology, network: Network | None = None, *,
                 ecmp: str = "split", seed: int = 0, mapping=None, max_memory=None,
                 background=None, slow=None) -> DataflowRun:
    """Route every step of ``schedule`` (each distinct pattern once) and lay
    out its stages: rank r's step k is stage ``k·p + r``. ``background`` and
    ``slow`` are the engine's objects, as for
    :func:`flowemu.engine.profiles.profile`."""
    schedule, topology, network = check_profile_args(schedule, topology, network)
    ctx = make_context(topology, network, ecmp, seed, mapping, schedule.p, background, slow)
    p, steps = schedule.p, schedule.steps
    lim = budget.limit(max_memory)
    what = f"{topology.spec} {schedule.algorithm} (sync=dataflow)"
    routed: dict = {}
    flows = entries = 0
    for step in steps.patterns:
        tr = step.traffic
        if id(tr) not in routed:
            routed[id(tr)] = _routed(ctx, tr) if tr.num_flows else None
    counts = steps.counts()
    for step, count in zip(steps.patterns, counts, strict=True):
        got = routed[id(step.traffic)]
        if got is not None:
            flows += int(count) * got[0].num_flows
            entries += int(count) * got[0].num_entries
    stages = len(steps) * p
    need = 2 * budget.solve_bytes(flows, entries) + flows * FLOW_EXTRA_BYTES \
        + stages * STAGE_BYTES
    budget.check(need, lim, what)

    parts, src, dst, share, lat, src_stage, dst_stage = [], [], [], [], [], [], []
    reduce_spb = np.zeros(stages)
    net = ctx.network
    for k, i in enumerate(steps.order.tolist()):
        step = steps.patterns[i]
        red = step.reduction
        if len(red.node) and (net.gamma or net.delta):
            per = ((red.fanin + 1) * net.delta + (red.fanin - 1) * net.gamma) * red.share
            tot = np.bincount(red.node, weights=per, minlength=p)
            reduce_spb[k * p:(k + 1) * p] = tot if ctx.speed is None else tot / ctx.speed
        got = routed.get(id(step.traffic))
        if got is None:
            continue
        routes, s_end, d_end, latency = got
        tr = step.traffic
        parts.append(routes)
        src.append(s_end)
        dst.append(d_end)
        share.append(tr.share)
        lat.append(latency)
        src_stage.append(k * p + tr.src.astype(np.int64))
        dst_stage.append(k * p + tr.dst.astype(np.int64))
    routes = concat_routes(parts)
    nf = routes.num_flows
    src_a = np.concatenate(src) if src else np.zeros(0, np.int64)
    dst_a = np.concatenate(dst) if dst else np.zeros(0, np.int64)
    share_a = np.concatenate(share) if share else np.zeros(0)
    lat_a = np.concatenate(lat) if lat else np.zeros(0)
    s_stage = np.concatenate(src_stage) if src_stage else np.zeros(0, np.int64)
    d_stage = np.concatenate(dst_stage) if dst_stage else np.zeros(0, np.int64)
    order = np.argsort(s_stage, kind="stable")
    stage_ptr = np.zeros(stages + 1, dtype=np.int64)
    np.cumsum(np.bincount(s_stage, minlength=stages), out=stage_ptr[1:])
    persistent = None
    if ctx.load is not None:
        routes, capacity, src_a, dst_a, _, persistent = ctx.load.problem(
            ctx, routes, src_a, dst_a, np.zeros(nf), reduce=not ctx.adaptive)
        nb = routes.num_flows - nf
        lat_a = np.concatenate([lat_a, np.zeros(nb)])
        s_stage = np.concatenate([s_stage, np.full(nb, -1, np.int64)])
        d_stage = np.concatenate([d_stage, np.full(nb, -1, np.int64)])
    elif ctx.adaptive:
        capacity = ctx.link_capacity
    else:
        routes, capacity = topology.solver_problem(routes, ctx.link_capacity, ctx.ecmp)
    return DataflowRun(ctx, schedule, routes, capacity, src_a, dst_a, share_a, lat_a, s_stage,
                       d_stage, stage_ptr, order.astype(np.int32), reduce_spb, persistent, nf)


def _routed(ctx: Context, traffic) -> tuple:
    """``(routes, src endpoints, dst endpoints, latency)`` of one pattern."""
    routes, src, dst = route_step(ctx, traffic)
    return routes, np.asarray(src, np.int64), np.asarray(dst, np.int64), \
        flow_latency(ctx, routes)
