"""One checked algorithm run: every argument of an entry point checked
(:mod:`flowemu.core.checks`), cheap checks first, then the topology, then the
memory the schedule will need before it is built (:mod:`flowemu.core.budget`),
and the :class:`Run` that holds the result; the schedules a run's candidates
build. The entry points (:mod:`.simulation`, :mod:`.flows`,
:mod:`.linkloads`, :mod:`.schedules`, ...) start here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np

from ..algorithms import get_algorithm, parse_algorithm_spec
from ..algorithms.base import DEFAULT_AT, Schedule
from ..algorithms.collectives import get_collective
from ..algorithms.shapes import schedule_shape
from ..algorithms.usertraffic import traffic_ranks, traffic_schedule
from ..core import budget, checks
from ..core.errors import ConfigError
from ..core.network import Network
from ..core.placement import Placement, parse_placement
from ..core.version import __version__
from ..engine.dataflow import dataflow_run
from ..engine.profiles import default_threads, profile
from ..topology import Topology
from ..topology import checks as topology_checks
from ..whatif.conditions import HEALTHY, WhatIf, check_traffic_policy, unfaulted
from ..whatif.conditions import apply as apply_whatif
from ..whatif.faults import check_fail_policy
from ..whatif.stragglers import compute_only

__all__ = ["Run", "build_topology", "expand_algorithm", "placement_note", "prepare_run",
           "run_schedules"]


def build_topology(topology, lim: budget.Limit | None = None) -> Topology:
    """A Topology from a spec or itself; a spec whose link arrays would not
    fit in ``lim`` is refused before they are built."""
    if isinstance(topology, str) and lim is not None:
        dims = budget.spec_dims(topology)
        if dims is not None:
            budget.check(budget.topology_bytes(dims), lim, f"topology {topology.strip()}")
    with budget.topology_limit(lim):
        return topology_checks.topology(topology)


def _base_row(topo: Topology, p: int, net: Network, ecmp: str, seed: int,
              placement: Placement, whatif: dict | None = None) -> dict:
    return {**HEALTHY, **(whatif or {}),
        "topology": topo.spec, "nodes": topo.num_endpoints, "ranks": p, "ecmp": ecmp,
        "seed": seed, "placement": placement.text, "bandwidth_Bps": net.bandwidth, "link_latency_s": net.link_latency,
        "hop_latency_s": net.hop_latency, "alpha_s": net.alpha, "gamma_s_per_B": net.gamma,
        "delta_s_per_B": net.delta, "incast_threshold": net.incast_threshold,
        "incast_slope_s_per_B": net.incast_slope, "flowemu_version": __version__,
    }


def expand_algorithm(algorithm, collective: str = "allreduce") -> tuple:
    """``"NAME[:key=val,...]"`` -> ``(spec, candidates)``: the registered
    algorithm of ``collective`` and its parsed options, one dict per variant
    to run (every choice of the auto option when it is ``auto``, else just
    the one)."""
    name, raw = parse_algorithm_spec(checks.text("algorithm", algorithm, "recdoub:variant=auto"))
    spec = get_algorithm(name, collective)
    opts = spec.parse_options(raw)
    if spec.auto_param and opts.get(spec.auto_param) == "auto":
        return spec, [dict(opts, **{spec.auto_param: c}) for c in spec.auto_choices()]
    return spec, [opts]


@dataclass(frozen=True)
class Run:
    """The checked inputs of one algorithm run."""

    topology: Topology
    network: Network
    sizes: np.ndarray | None
    p: int
    spec: object
    candidates: list
    ecmp: str
    seed: int
    threads: int | None
    limit: budget.Limit
    placement: Placement
    mapping: np.ndarray | None
    whatif: object = None    #: :class:`flowemu.whatif.conditions.Applied`, or None (healthy)
    model: str = "flow"
    sync: str = "barrier"    #: "barrier" (steps end together) or "dataflow" (engine.dataflow)
    collective: str = "allreduce"   #: what the algorithm computes (algorithms.collectives)

    def breaks_bound_algorithm(self) -> bool:
        """Whether the strict failure policy must look at the schedule: links
        failed, policy strict, a topology-bound algorithm."""
        w = self.whatif
        return (w is not None and w.columns["failed_links"] > 0
                and w.columns["fail_policy"] == "strict"
                and bool(getattr(self.spec, "topology_bound", False)))

    def profile(self, sched: Schedule, **kwargs):
        """:func:`flowemu.engine.profiles.profile` of ``sched`` in this run (its
        what-ifs applied; a topology-bound schedule a failure breaks is
        refused under ``fail_policy="strict"``)."""
        w = self._checked(sched)
        return profile(sched, self.topology, self.network, ecmp=self.ecmp, seed=self.seed,
                       mapping=self.mapping, threads=self.threads, max_memory=self.limit,
                       background=None if w is None else w.background,
                       slow=None if w is None else w.slow, **kwargs)

    def _checked(self, sched: Schedule):
        """The run's what-ifs, a topology-bound schedule a failure breaks
        refused under ``fail_policy="strict"``."""
        w = self.whatif
        if w is not None:
            check_fail_policy(sched, self.topology, self.mapping, w.columns["fail_policy"],
                              self.spec)
        return w

    def dataflow(self, sched: Schedule):
        """:func:`flowemu.engine.dataflow.dataflow_run` of ``sched`` in this
        run (its what-ifs applied, as :meth:`profile`)."""
        w = self._checked(sched)
        return dataflow_run(sched, self.topology, self.network, ecmp=self.ecmp, seed=self.seed,
                            mapping=self.mapping, max_memory=self.limit,
                            background=None if w is None else w.background,
                            slow=None if w is None else w.slow)

    @property
    def row(self) -> dict:
        """The configuration columns of this run's result rows."""
        return {**_base_row(self.topology, self.p, self.network, self.ecmp, self.seed,
                            self.placement, None if self.whatif is None else self.whatif.columns),
                "sync": self.sync, "collective": self.collective}


#: keyword arguments of the entry points (named when an unknown one is passed)
_KEYWORDS = {
    "simulate": ("sizes", "ecmp", "seed", "ranks", "placement", "network", "threads",
                 "max_memory", "model", "sync", "collective", "fail", "degrade", "fail_policy", "slow", "background"),
    "congestion": ("ecmp", "seed", "ranks", "placement", "network", "threads", "max_memory",
                   "collective", "fail", "degrade", "fail_policy", "slow", "background"),
    "link_loads": ("traffic", "steps", "ecmp", "seed", "ranks", "placement", "network",
                   "threads", "max_memory", "collective", "fail", "degrade", "fail_policy",
                   "slow", "background"),
    "time_traffic": ("ecmp", "seed", "placement", "network", "name", "threads", "max_memory",
                     "fail", "degrade", "fail_policy", "slow", "background", "sync",
                     "slowdown"),
    "flows": ("traffic", "size", "steps", "ecmp", "seed", "ranks", "placement", "network",
              "threads", "max_memory", "progress", "collective", "fail", "degrade", "fail_policy", "slow",
              "background"),
}


#: ``sizes`` of :func:`_prepare` for an entry point that takes none
_NO_SIZES = object()


def prepare_run(function: str, topology, algorithm, *, ecmp, seed, ranks, network, network_params,
             sizes=_NO_SIZES, threads=None, max_memory=None, placement=None,
             whatif: WhatIf | None = None, collective: str = "allreduce") -> Run:
    """Check every argument of an algorithm run (cheap checks first, then
    the topology, then the memory the schedule will need before it is built)."""
    lim = budget.limit(max_memory)
    whatif = whatif or WhatIf()
    net = checks.network(network, network_params, function, _KEYWORDS[function])
    (ecmp, seed), threads = topology_checks.routing(ecmp, seed), checks.threads(threads)
    n = None if sizes is _NO_SIZES else checks.sizes(sizes)
    place = parse_placement(placement)
    collective = get_collective(collective).name
    spec, candidates = expand_algorithm(algorithm, collective)
    concurrent = threads if threads is not None else default_threads()
    dims = budget.spec_dims(topology) if isinstance(topology, str) else None
    if dims is not None:
        # a torus/mesh spec: check the whole run before building anything
        shape = SimpleNamespace(dims=dims, num_endpoints=math.prod(dims),
                                spec=topology.strip())
        budget.check(budget.topology_bytes(dims), lim, f"topology {shape.spec}")
        _check_schedule_memory(spec, candidates, shape, checks.ranks(ranks, shape),
                               concurrent, lim)
    with budget.topology_limit(lim):   # a torus/mesh spec was checked just above
        topo = topology_checks.topology(topology)
    topo, whatif = unfaulted(topo, whatif)   # (a faulted topology: its faults as fail=)
    spec.check_family(topo.spec)
    p = checks.ranks(ranks, topo)
    if spec.check is not None:   # (what its build would refuse, without building)
        for cand in candidates:
            spec.check(p, cand)
    if dims is None:
        _check_schedule_memory(spec, candidates, topo, p, concurrent, lim)
    mapping = place.mapping(p, topo)
    applied = None if whatif.healthy else apply_whatif(whatif, topo, p, net, mapping)
    if applied is not None:
        topo = applied.topology
    return Run(topo, net, n, p, spec, candidates, ecmp, seed, threads, lim, place, mapping,
                applied, collective=collective)


def check_source(function: str, algorithm, traffic) -> None:
    """A call takes an algorithm or a user's traffic: exactly one of them."""
    if (algorithm is None) == (traffic is None):
        raise ConfigError(f"{function}: give exactly one of algorithm= and traffic=")


def prepare_traffic(function: str, topology, traffic, *, ecmp, seed, network, network_params,
                    threads=None, max_memory=None, placement=None,
                    whatif: WhatIf | None = None, name: str | None = None,
                    sync: str = "barrier", ranks=None, size=None,
                    collective: str = "allreduce") -> tuple[Run, Schedule]:
    """Check every argument of a run of a user's traffic (``traffic``: a
    file, a DataFrame or Traffic objects) and build its schedule: ``(run,
    schedule)``. The run has no algorithm; its ranks are the traffic's, and
    the what-ifs are applied to the ranks the traffic uses. ``ranks``,
    ``size`` and ``collective`` are an algorithm's: given, they are refused."""
    for arg, given, why in (("ranks", ranks is not None, "its ranks are the ones it uses"),
                            ("size", size is not None, "its flows carry absolute bytes"),
                            ("collective", collective != "allreduce", "it gives every flow")):
        if given:
            raise ConfigError(f"{arg}: applies to an algorithm, not to traffic ({why})")
    net = checks.network(network, network_params, function, _KEYWORDS[function])
    for arg in ("gamma", "delta"):   # (a preset's or a Network's are left as they are;
        # 0, as a loop over values may give, costs nothing either way)
        if network_params.get(arg) is not None and getattr(net, arg) != 0:
            raise ConfigError(f"{arg}: does not apply to traffic (it reduces nothing: gamma "
                              "and delta cost a reduction's bytes); drop it")
    whatif = whatif or WhatIf()
    compute = compute_only(whatif.slow)
    if compute:
        raise ConfigError(f"slow: {compute[0]!r} slows a rank's reduction, and traffic has "
                          "none; use :network (a rank's ports), or no kind")
    lim = budget.limit(max_memory)
    (ecmp, seed), threads = topology_checks.routing(ecmp, seed), checks.threads(threads)
    check_traffic_policy(whatif)
    place = parse_placement(placement)
    topo, whatif = unfaulted(build_topology(topology, lim), whatif)
    sched = traffic_schedule(topo, traffic, name, lim)
    mapping = place.mapping(sched.p, topo)
    applied = None if whatif.healthy else apply_whatif(whatif, topo, sched.p, net, mapping,
                                                       traffic_ranks(sched))
    run = Run(topo if applied is None else applied.topology, net, None, sched.p, None, [],
              ecmp, seed, threads, lim, place, mapping, applied, sync=sync,
              collective="")   # (a user's traffic is no collective)
    return run, sched


def _check_schedule_memory(spec, candidates, topology, p: int, concurrent: int,
                           lim: budget.Limit) -> None:
    """Refuse a run whose schedule and solve would not fit, before the
    schedule exists: its shape comes from the algorithm, with one route
    entry per flow (:func:`flowemu.engine.profiles.profile` counts the real entries
    before routing)."""
    for cand in candidates:
        flows, distinct = schedule_shape(spec.name, cand, p, topology, spec.collective)
        need = budget.run_bytes(topology, p, [flows] * distinct, [flows] * distinct, concurrent)
        budget.check(need, lim, f"{topology.spec} {spec.name}")


def run_schedules(run: Run, cand: dict, sizes) -> list:
    """``[(schedule, size indices it serves or None)]`` of one candidate: the
    builder's one schedule, or one per distinct plan of an algorithm whose
    schedule depends on the size and the network (``AlgorithmSpec.sized``)."""
    if run.spec.sized is None:
        return [(run.spec.build(run.p, run.topology, False, **cand), None)]
    if sizes is None:
        sizes = np.array([DEFAULT_AT])
    out = run.spec.sized(run.p, run.topology, run.network, sizes, cand)
    if run.placement.kind != "linear":
        note = placement_note(run)
        out = [(replace(s, note="; ".join(filter(None, (s.note, note)))), i) for s, i in out]
    return out


def placement_note(run: Run) -> str:
    """What a plan made for the hosts in order means under another placement
    (for the planners on trees only: a size-dependent choice such as
    butterfly's ``r`` does not depend on where the ranks run)."""
    if run.spec.families is None:
        return ""
    return (f"{run.spec.name} chose its plan for rank r on endpoint r (linear placement); "
            f"with placement {run.placement.text} the plan may not suit where the ranks run")
