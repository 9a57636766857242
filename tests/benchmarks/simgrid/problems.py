"""The solver problems of issue 25's event-driven workloads, as the engine
builds them, written for SimGrid's LMM solver (``lmmrun.cpp``) and solved by
flowemu's, so both solve the same flows on the same links.

A problem is what :func:`flowemu.engine.steps.solve_step` hands to
:func:`flowemu.kernels.maxmin.solve_completion`: routes (fractions of a
flow's bytes per link: split routes cross many links with fractions below
1), link capacities, bytes per flow and the persistent (background) flows.
Incast is off in these workloads; a problem with incast is refused (SimGrid's
LMM has no incast model)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import numpy as np

from flowemu.algorithms import Reduction, swing
from flowemu.api.profiling import profile
from flowemu.core.network import Network
from flowemu.engine import steps
from flowemu.engine.profiles import make_context, step_profile
from flowemu.kernels.maxmin import solve_completion
from flowemu.topology import parse_topology
from tests.helpers.traffic import random_permutation


@dataclass
class Problem:
    """One step's max-min problem with finish events."""

    name: str
    flow_ptr: np.ndarray   # int64[F+1]
    link: np.ndarray       # int32[E]
    frac: np.ndarray       # float64[E]
    capacity: np.ndarray   # float64[L], bytes/s
    flow_bytes: np.ndarray  # float64[F]
    persistent: np.ndarray  # bool[F]

    @property
    def routes(self):
        return _Routes(self.flow_ptr, self.link, self.frac)

    def solve(self):
        """flowemu's solution (:class:`flowemu.kernels.maxmin.Solution`), as
        the engine solves the step (incast is off)."""
        return solve_completion(self.routes, self.capacity, self.flow_bytes,
                                persistent=self.persistent if self.persistent.any() else None)

    @property
    def finishing(self) -> np.ndarray:
        """bool[F]: the flows that finish (not persistent, with a path and
        bytes to move; flowemu ends the others at once)."""
        return ~self.persistent & (np.diff(self.flow_ptr) > 0) & (self.flow_bytes > 0)

    def write(self, path: Path) -> None:
        """The binary file ``lmmrun.cpp`` reads: int64 flows, links,
        entries; then flow_ptr (int64), link (int32), frac, capacity,
        bytes (float64) and the persistent flags (uint8)."""
        with open(path, "wb") as f:
            np.array([len(self.flow_bytes), len(self.capacity), self.flow_ptr[-1]],
                     np.int64).tofile(f)
            self.flow_ptr.astype(np.int64).tofile(f)
            self.link.astype(np.int32).tofile(f)
            self.frac.astype(np.float64).tofile(f)
            self.capacity.astype(np.float64).tofile(f)
            self.flow_bytes.astype(np.float64).tofile(f)
            self.persistent.astype(np.uint8).tofile(f)


@dataclass
class _Routes:
    flow_ptr: np.ndarray
    link: np.ndarray
    frac: np.ndarray


def recorded(run, name: str) -> list[Problem]:
    """The problems the engine solves while ``run()`` runs, in order."""
    got = []

    def record(routes, capacity, flow_bytes, **kw):
        if kw.get("link_incast") is not None or np.any(np.asarray(kw.get("incast_slope", 0)) > 0):
            raise ValueError(f"{name}: a step with incast; SimGrid's LMM has no incast model")
        n = routes.flow_ptr.shape[0] - 1
        keep = np.zeros(n, bool) if kw.get("persistent") is None else \
            np.asarray(kw["persistent"], bool)
        got.append(Problem(f"{name}#{len(got)}", np.asarray(routes.flow_ptr, np.int64),
                           np.asarray(routes.link, np.int32), np.asarray(routes.frac, np.float64),
                           np.asarray(capacity, np.float64), np.asarray(flow_bytes, np.float64),
                           keep))
        return real(routes, capacity, flow_bytes, **kw)

    real = steps.solve_completion
    with mock.patch.object(steps, "solve_completion", record):
        run()
    return got


def permutation_run(spec: str, ecmp: str):
    def run():
        topo = parse_topology(spec)
        step_profile(make_context(topo, Network(), ecmp=ecmp), random_permutation(topo),
                     Reduction.none(), "permutation")
    return run


def swing_background_run(spec: str):
    def run():
        topo = parse_topology(spec)
        sched = swing.build(topo.num_endpoints, topo, False, variant="bandwidth")
        profile(sched, topo, Network(), background="perm:0.5", threads=1)
    return run


#: issue 25's workloads whose steps have finish events (the collectives'
#: profiles without a background finish every flow of a step at once)
WORKLOADS = {
    "fattree-dmodk": ("random permutation, fattree:k=32, dmodk",
                      permutation_run("fattree:k=32", "dmodk")),
    "fattree-split": ("random permutation, fattree:k=32, split",
                      permutation_run("fattree:k=32", "split")),
    "taper2-dmodk": ("random permutation, fattree:k=32,taper=2, dmodk",
                     permutation_run("fattree:k=32,taper=2", "dmodk")),
    "taper2-split": ("random permutation, fattree:k=32,taper=2, split",
                     permutation_run("fattree:k=32,taper=2", "split")),
    "torus128-split": ("random permutation, torus:128x128, split",
                       permutation_run("torus:128x128", "split")),
    "swing64-background": ("Swing, torus:64x64, background=perm:0.5 (its distinct steps)",
                           swing_background_run("torus:64x64")),
}


def workload_problems(name: str) -> list[Problem]:
    """The problems of workload ``name`` that have flows which finish."""
    if name not in WORKLOADS:
        raise ValueError(f"workload: {name!r} is not one of {sorted(WORKLOADS)}")
    got = recorded(WORKLOADS[name][1], name)
    return [p for p in got if p.finishing.any()]


def warm() -> float:
    """Compile flowemu's kernels on small problems; returns the seconds it took."""
    t0 = time.perf_counter()
    permutation_run("fattree:k=4", "split")()
    swing_background_run("torus:4x4")()
    return time.perf_counter() - t0
