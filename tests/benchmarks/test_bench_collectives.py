"""All-to-all full profiles (issue 28): pairwise exchange (p − 1 distinct
steps of p flows), Bruck and Bine (log₂p steps of n/2) on a torus and a fat
tree, beside the 1 GiB copy timed in the same run (``copy_1gib_ms`` in
``extra_info``): at 1,024 ranks in ``make test``'s smoke run, and at the
issue's 16,384 ranks (``torus:128x128``, ``fattree:k=40``: 16,000) as slow
benchmarks (``make bench``)."""

from __future__ import annotations

import numpy as np
import pytest

from flowemu.algorithms import get_algorithm
from flowemu.core.network import Network
from flowemu.engine.profiles import profile
from flowemu.topology import parse_topology
from tests.benchmarks.yardstick import copy_1gib_ms

SIZES = 2.0 ** np.arange(5, 30)
PIPELINED = ["chain:segments=64", "dbtree:segments=64", "bintree:segments=64", "sparbit"]


@pytest.fixture(scope="module", autouse=True)
def warm_jit():
    topo = parse_topology("torus:4x4")
    for name in ("pairwise", "bruck", "bine"):
        sched = get_algorithm(name, "alltoall").build(16, topo, False)
        profile(sched, topo, Network(), threads=1).times(SIZES)
    import flowemu
    for algorithm in PIPELINED:
        flowemu.simulate("torus:4x4", algorithm, SIZES, threads=1,
                         collective="allgather" if algorithm == "sparbit" else "broadcast")


@pytest.mark.parametrize("spec", [
    "torus:32x32", "fattree:k=16",
    pytest.param("torus:128x128", marks=pytest.mark.slow),
    pytest.param("fattree:k=40", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", ["pairwise", "bruck", "bine"])
def test_bench_alltoall_full_profile(benchmark, spec, name):
    topo = parse_topology(spec)
    if name == "bine" and topo.num_endpoints & (topo.num_endpoints - 1):
        pytest.skip(f"bine needs p a power of two; {spec} has {topo.num_endpoints}")
    sched = get_algorithm(name, "alltoall").build(topo.num_endpoints, topo, False)
    net = Network()
    benchmark.pedantic(lambda: profile(sched, topo, net, threads=1).times(SIZES), rounds=1,
                       iterations=1)
    if getattr(benchmark, "stats", None) is not None:
        benchmark.extra_info.update(copy_1gib_ms=copy_1gib_ms(), ranks=topo.num_endpoints,
                                    steps=sched.num_steps,
                                    patterns=len(sched.steps.patterns))


@pytest.mark.parametrize("spec", [
    "torus:32x32",
    pytest.param("torus:128x128", marks=pytest.mark.slow)])
@pytest.mark.parametrize("algorithm", PIPELINED)
def test_bench_pipelined_full_profile(benchmark, spec, algorithm):
    """Pipelined broadcasts (chain: segments + p − 2 distinct steps) and
    Sparbit's allgather through ``flowemu.simulate`` (its memory check
    included: at 16,384 ranks the pipelined trees were refused before their
    shapes were known), full profile."""
    import flowemu
    collective = "allgather" if algorithm == "sparbit" else "broadcast"
    df = benchmark.pedantic(lambda: flowemu.simulate(spec, algorithm, SIZES,
                                                     collective=collective, threads=1),
                            rounds=1, iterations=1)
    assert len(df) == len(SIZES) and (df["time_s"] > 0).all()
    if getattr(benchmark, "stats", None) is not None:
        benchmark.extra_info.update(copy_1gib_ms=copy_1gib_ms())
