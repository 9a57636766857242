"""The memory check of a profile: the estimate of a run's peak from its
distinct steps' flows and route entries, refused before anything is routed
when it does not fit (:func:`check_memory`)."""

from __future__ import annotations

from ..algorithms.base import Schedule, Traffic
from ..core import budget
from .context import Context, check_ranks, endpoints, step_orbits


def distinct_steps(schedule: Schedule) -> list[Traffic]:
    """The distinct traffic objects of a schedule with flows, in first-use order."""
    seen: dict = {}
    for step in schedule.steps.patterns:
        seen.setdefault(id(step.traffic), step.traffic)
    return [t for t in seen.values() if t.num_flows]


def one_size(traffic: Traffic) -> bool:
    """Whether every flow of a step carries the same bytes (the solver then
    needs no events for it: :mod:`flowemu.kernels.completion`'s
    ``finish_in_rate_order``)."""
    share = traffic.share
    return bool(share.size) and bool((share == share[0]).all())


def check_memory(ctx: Context, schedule: Schedule, threads: int, lim,
                 exact: bool = False, reduced: bool = False) -> int:
    """Refuse (ConfigError) a schedule whose solve would not fit in ``lim``.

    When even the topology's worst case (every flow with
    :meth:`~flowemu.topology.Topology.max_route_entries` entries) fits, that
    is the estimate and nothing is counted (the usual case: the count costs
    ~15 ns a flow, a fifth of a small profile). Otherwise, or with
    ``exact``, the route entries of each distinct step are counted by the
    routing kernel's counting pass before anything is routed. With
    ``reduced`` (a profile without per-link reports), a family that routes
    straight into its reduced problem (:meth:`Topology.solver_routes`)
    counts those entries, and when the worst case does not fit, a step with
    a symmetry is charged for its representatives' routes
    (:meth:`Topology.orbits`, found here and kept for the solve). A step of
    flows of one size without background, which the solver ends at its
    ``t = 0`` solve, is charged without event state where that decides
    (:func:`one_size` reads every flow: only for an estimate that would
    refuse, and always with ``exact``). Returns the estimate."""
    steps = distinct_steps(schedule)
    for t in steps:
        check_ranks(ctx, t)
    flows = [t.num_flows for t in steps]
    what = f"{ctx.topology.spec} {schedule.algorithm}"
    solved = list(flows)
    entries = [0] * len(steps)
    rest = list(range(len(steps)))
    events = [True] * len(steps)   # (may a step be solved event by event)
    sharp = False   # (events read from the steps' sizes)

    def need_with(counts, last: bool = False) -> int:
        """The estimate with these entry counts; ``last``: it decides."""
        nonlocal sharp
        for k, c in zip(rest, counts, strict=True):
            entries[k] = c
        need = budget.run_bytes(ctx.topology, schedule.p, flows, entries, threads, solved,
                                events)
        if (exact or (last and need > lim.bytes)) and not sharp:
            # a step of flows of one size, without background, ends at its t = 0 solve
            sharp = True
            events[:] = [ctx.load is not None or not one_size(t) for t in steps]
            need = budget.run_bytes(ctx.topology, schedule.p, flows, entries, threads,
                                    solved, events)
        return need

    if reduced and ctx.uniform_latency is not None and not exact and not ctx.adaptive:
        small = [ctx.topology.solver_route_entries(*endpoints(ctx, t), ctx.ecmp)
                 for t in steps]
        if all(r is not None for r in small):   # routed straight in reduced form
            need = need_with(small, last=True)
            budget.check(need, lim, what)
            return need
    worst = ctx.topology.max_route_entries(ctx.ecmp)
    if worst is not None and not exact:
        need = need_with([f * worst for f in flows])
        if need <= lim.bytes:
            return need
    if reduced:
        # a step solved on one flow per orbit holds its representatives' routes only
        for k, t in enumerate(steps):
            orbits = step_orbits(ctx, t)
            if orbits is not None:
                solved[k], entries[k] = len(orbits.flows), orbits.entries
        rest = [k for k in rest if step_orbits(ctx, steps[k]) is None]
        if worst is not None and not exact:
            need = need_with([flows[k] * worst for k in rest])
            if need <= lim.bytes:
                return need
    need = need_with([ctx.topology.route_entries(*endpoints(ctx, steps[k]), ctx.ecmp)
                      for k in rest], last=True)
    budget.check(need, lim, what)
    return need
