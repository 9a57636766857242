"""Every link's load in each step of a schedule (``flowemu.link_loads``).

A flow of a step carries ``share·n`` bytes and puts ``frac`` of them on each
link of its route, so a link carries ``Σ share·frac`` bytes per byte of the
vector size n: linear in n, like the step's fluid time (the slowest flow's
``finish`` solved at bytes = share, in seconds per byte of n). Their ratio
over the link's capacity,

    utilisation = load / (capacity · fluid time),

does not depend on n either: 1.0 means the link was busy for the whole
fluid phase of the step (the solver's bottleneck of its slowest flow), 0.5
half of it. One solve per distinct traffic pattern serves every step that
repeats it (a ring's 2(p−1) steps share one).

Only the links a step uses are kept (load > 0): a pattern holds
``int32 link, float64 load, int32 flows`` for those, so memory grows with
the links used, never with the flows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..algorithms.base import Schedule, Traffic
from ..topology.base import Routes
from .context import Context
from .steps import route_step, solve_step, solve_streams
from .steptimes import link_totals


@dataclass(frozen=True)
class PatternLoad:
    """The links one traffic pattern uses, in ascending link id.

    Attributes
    ----------
    link : int32[K]
        Ids of the links carrying bytes.
    load : float64[K]
        Bytes each carries per byte of the vector size n (``Σ share·frac``).
    flows : int32[K]
        Flows crossing each (a flow split over several paths counts once on
        every link of any of its paths).
    fluid_spb : float
        The step's fluid time per byte of n: when its slowest flow finishes
        (without latencies), seconds per byte.
    """

    link: np.ndarray
    load: np.ndarray
    flows: np.ndarray
    fluid_spb: float

    @property
    def num_links(self) -> int:
        return len(self.link)


def routed_loads(routes: Routes, share: np.ndarray, num_links: int):
    """``(link int32[K], load float64[K], flows int32[K])`` of routed flows
    carrying ``share`` bytes each: the links with a positive load."""
    load, crossing, _ = link_totals(routes, share, num_links)
    used = np.flatnonzero(load > 0).astype(np.int32)
    return used, load[used], crossing[used].astype(np.int32)


def pattern_load(ctx: Context, traffic: Traffic, label: str = "") -> PatternLoad:
    """Route and solve one pattern at bytes = share (its full routes, as a
    per-link report needs; a background or slow ranks in ``ctx`` share the
    solve, but only the pattern's own flows are counted on the links)."""
    if traffic.num_flows == 0:
        empty = np.zeros(0, dtype=np.int32)
        return PatternLoad(empty, np.zeros(0), empty, 0.0)
    if traffic.aggregation is not None:   # streams: the links of their trees
        sol, streams = solve_streams(ctx, traffic, traffic.share, label)
        routes = streams.link_routes
    else:
        routes, src, dst = route_step(ctx, traffic)
        sol = solve_step(ctx, routes, dst, traffic.share, label, src)
    link, load, flows = routed_loads(routes, traffic.share, ctx.topology.num_links)
    return PatternLoad(link, load, flows, float(np.max(sol.finish)))


def schedule_loads(ctx: Context, schedule: Schedule, steps, threads: int = 1) -> list:
    """:class:`PatternLoad` of each step index in ``steps`` (one object per
    distinct traffic pattern, shared by the steps that repeat it), solved
    ``threads`` patterns at a time (the kernels release the GIL)."""
    todo: dict = {}
    for k in steps:
        step = schedule.steps[k]
        todo.setdefault(id(step.traffic), (step.traffic, step.label))
    items = list(todo.items())
    if threads <= 1 or len(items) <= 1:
        done = {key: pattern_load(ctx, tr, label) for key, (tr, label) in items}
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
            futures = {key: pool.submit(pattern_load, ctx, tr, label)
                       for key, (tr, label) in items}
            done = {key: f.result() for key, f in futures.items()}
    return [done[id(schedule.steps[k].traffic)] for k in steps]
